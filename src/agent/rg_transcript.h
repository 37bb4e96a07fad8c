/* rg_transcript.h: a session's transcript (rg_transcript.c). */

#ifndef RG_TRANSCRIPT_H
#define RG_TRANSCRIPT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <jansson.h>

/* records the session from now on */
rg_int_t rg_transcript_start(rg_session_t *s);
/* a model call that answered, or failed, with its request and response */
void rg_transcript_model_call(rg_session_t *s, rg_llm_response_t *resp);
/* a turn and each of its tool calls */
void rg_transcript_turn(rg_session_t *s, rg_tool_turn_t *turn);
/* a child session of parent, recorded, ended: its transcript nested as
 * an event of the parent's, naming the run_agent call that started it */
void rg_transcript_child(rg_session_t *parent, rg_session_t *child,
    const char *tool_call_id);
/* the whole conversation as JSON (a new reference) */
json_t *rg_transcript_json(rg_session_t *s);
/* the same as text (malloc'ed, secrets scrubbed), for --transcript */
char *rg_transcript_text(rg_session_t *s);

#endif /* RG_TRANSCRIPT_H */
