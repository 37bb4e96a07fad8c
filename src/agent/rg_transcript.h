/* rg_transcript.h: a session's transcript (rg_transcript.c). */

#ifndef RG_TRANSCRIPT_H
#define RG_TRANSCRIPT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session.h>

/* records the session from now on */
rg_int_t rg_transcript_start(rg_session_t *s);
/* a model call that answered, or failed, with its request and response */
void rg_transcript_model_call(rg_session_t *s, rg_llm_response_t *resp);
/* a turn and each of its tool calls */
void rg_transcript_turn(rg_session_t *s, rg_tool_turn_t *turn);
/* the whole conversation as JSON text (malloc'ed), for --transcript */
char *rg_transcript_text(rg_session_t *s);

#endif /* RG_TRANSCRIPT_H */
