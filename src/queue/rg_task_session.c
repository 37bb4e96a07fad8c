/* rg_task_session.c: what a task says of the session that runs it, the
 * same for batch, serve and the HTTP API (apart from rg_task.c, the
 * parser, which the fuzzer builds alone). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_task.h>
#include <rg_session.h>
#include <rg_session_trace.h>


void
rg_task_apply(const rg_task_t *t, rg_session_t *s)
{
    if (t->max_rounds) {
        s->max_rounds = t->max_rounds;
    }
    if (t->max_tokens >= 0) {
        s->max_tokens = t->max_tokens;
    }
    if (t->max_cost >= 0) {
        s->max_cost = t->max_cost;
    }
    if (t->deadline != RG_CONF_UNSET_MSEC) {
        s->deadline = t->deadline;
    }
    if (t->tenant) {
        s->tenant = rg_pstrdup(s->pool, t->tenant, strlen(t->tenant));
    }
    if (t->traceparent) {
        rg_session_trace(s, t->traceparent, t->traceparent_len);
    } else if (t->traceparent_invalid) {
        rg_log_error(RG_LOG_INFO, &s->log, 0, "the task's \"traceparent\" "
                     "is not valid W3C Trace Context: a new trace");
    }
    s->events = t->events ? 1 : 0;
    s->after_loss = t->after_loss ? 1 : 0;
}
