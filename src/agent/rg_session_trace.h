/* rg_session_trace.h: a session's trace (rg_session_trace.c): its
 * invoke_agent span, a chat span per model call and an execute_tool span
 * per tool call, and the traceparent its requests carry. */

#ifndef RG_SESSION_TRACE_H
#define RG_SESSION_TRACE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* "<trace id>-<parent id or nothing>-<span id>": what the meta keeps */
#define RG_SESSION_TRACE_META  (RG_TRACE_ID_LEN + 2 * RG_TRACE_SPAN_LEN + 3)

/* For whoever opens a session (a task's "traceparent", the HTTP API's
 * header, through rg_session_set_task): the session joins that trace,
 * its invoke_agent span a child of the caller's span, before it starts.
 * RG_OK: taken;
 * RG_DECLINED: absent or invalid (W3C Trace Context), the session keeps
 * the new trace it was given. A session resumed from the store goes on
 * with the trace it had. */
rg_int_t rg_session_trace(rg_session_t *s, const char *traceparent,
    size_t len);

/* within the agent part */
void rg_session_trace_init(rg_session_t *s);
void rg_session_trace_child(rg_session_t *child, rg_tool_run_t *run);
/* the meta field, and a resume from it */
size_t rg_session_trace_meta(rg_session_t *s, char *buf, size_t size);
void rg_session_trace_resume(rg_session_t *s, const char *v, size_t len);
void rg_session_trace_chat(rg_session_t *s);
void rg_session_trace_chat_end(rg_session_t *s, rg_llm_req_t *r,
    rg_llm_response_t *resp);
void rg_session_trace_tools(rg_session_t *s, rg_tool_turn_t *turn);
void rg_session_trace_tool_end(rg_session_t *s, rg_tool_run_t *run);
/* at its end: what is still open ends cancelled, then invoke_agent */
void rg_session_trace_end(rg_session_t *s);

#endif /* RG_SESSION_TRACE_H */
