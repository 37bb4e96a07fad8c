/* rg_task_session.c: what a task says of the session that runs it, the
 * same for batch, serve and the HTTP API (apart from rg_task.c, the
 * parser, which the fuzzer builds alone). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_task.h>
#include <rg_session.h>


void
rg_task_apply(const rg_task_t *t, rg_session_t *s)
{
    rg_session_task_t  st;

    memset(&st, 0, sizeof(st));
    st.max_rounds = t->max_rounds;
    st.max_tokens = t->max_tokens;
    st.max_cost = t->max_cost;
    st.deadline = t->deadline;
    st.tenant = t->tenant;
    st.traceparent = t->traceparent;
    st.traceparent_len = t->traceparent_len;
    st.traceparent_invalid = t->traceparent_invalid ? 1 : 0;
    st.events = t->events ? 1 : 0;
    st.after_loss = t->after_loss ? 1 : 0;

    rg_session_set_task(s, &st);
}
