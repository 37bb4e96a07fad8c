/* rg_session_context.h: a session kept inside its context window
 * (rg_session_context.c). */

#ifndef RG_SESSION_CONTEXT_H
#define RG_SESSION_CONTEXT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* compacts the conversation to about target bytes; a summary call is
 * made ready (s->summarizing) when rounds were dropped */
void rg_session_context_compact(rg_session_t *s, size_t target);
/* the summary call answered: its text goes after the task (the call it
 * was made for is asked again by the caller) */
void rg_session_context_summary(rg_session_t *s, rg_llm_response_t *resp);

#endif /* RG_SESSION_CONTEXT_H */
