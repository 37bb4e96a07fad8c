/* rg_session_trace.c: a session's trace, after the OpenTelemetry GenAI
 * conventions. The session is an invoke_agent span (from its start to
 * its end; a resumed session is a new span of the same trace, linked to
 * the one it follows), each model call a chat span under it (one per
 * call, its retries included) whose traceparent the request carries,
 * each tool call an execute_tool span under it whose traceparent the
 * tool's HTTP requests carry; a child agent's session is a span under
 * the call that started it. The ids are made whether or not spans are
 * exported, so that callees always see the trace; attributes are built
 * only when they are. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_session_trace.h>
#include <rg_trace.h>


#define RG_SESSION_TRACE_ATTRS  16


static void
rg_session_trace_name(char *buf, size_t size, const char *op,
    const char *name, size_t len)
{
    snprintf(buf, size, "%s %.*s", op, (int) rg_min(len, 200), name);
}


void
rg_session_trace_init(rg_session_t *s)
{
    /* a new trace until a caller gives one; no random bytes: no trace,
     * which costs nothing else */
    (void) rg_trace_span_start(&s->span, NULL, NULL);
}


rg_int_t
rg_session_trace(rg_session_t *s, const char *traceparent, size_t len)
{
    rg_traceparent_t  tp;

    if (traceparent == NULL
        || rg_traceparent_parse(&tp, traceparent, len) != RG_OK)
    {
        return RG_DECLINED;
    }

    memcpy(s->span.trace_id, tp.trace_id, sizeof(s->span.trace_id));
    memcpy(s->span.parent_id, tp.parent_id, sizeof(s->span.parent_id));

    return RG_OK;
}


void
rg_session_trace_child(rg_session_t *child, rg_tool_run_t *run)
{
    if (run->span.trace_id[0] == '\0' || run->span.span_id[0] == '\0') {
        return;
    }

    memcpy(child->span.trace_id, run->span.trace_id,
           sizeof(child->span.trace_id));
    memcpy(child->span.parent_id, run->span.span_id,
           sizeof(child->span.parent_id));
}


size_t
rg_session_trace_meta(rg_session_t *s, char *buf, size_t size)
{
    char    *p;
    size_t   t, r, n;

    if (s->span.trace_id[0] == '\0') {
        return 0;
    }

    /* "%s-%s-%s" */
    t = strlen(s->span.trace_id);
    r = strlen(s->span.parent_id);
    n = strlen(s->span.span_id);

    if (t + r + n + 3 > size) {
        return 0;
    }

    p = rg_cpymem(buf, s->span.trace_id, t);
    *p++ = '-';
    p = rg_cpymem(p, s->span.parent_id, r);
    *p++ = '-';
    p = rg_cpymem(p, s->span.span_id, n);
    *p = '\0';

    return (size_t) (p - buf);
}


static rg_uint_t
rg_session_trace_hex(const char *p, size_t n)
{
    return strspn(p, "0123456789abcdef") >= n;
}


void
rg_session_trace_resume(rg_session_t *s, const char *v, size_t len)
{
    size_t  plen;
    char    buf[RG_SESSION_TRACE_META + 1];

    /* trace "-" parent (none or 16) "-" span */
    if (v == NULL || len >= sizeof(buf)
        || len < RG_TRACE_ID_LEN + RG_TRACE_SPAN_LEN + 2)
    {
        return;
    }

    memcpy(buf, v, len);
    buf[len] = '\0';

    plen = len - RG_TRACE_ID_LEN - RG_TRACE_SPAN_LEN - 2;

    if ((plen != 0 && plen != RG_TRACE_SPAN_LEN)
        || buf[RG_TRACE_ID_LEN] != '-'
        || buf[RG_TRACE_ID_LEN + 1 + plen] != '-'
        || !rg_session_trace_hex(buf, RG_TRACE_ID_LEN)
        || !rg_session_trace_hex(buf + RG_TRACE_ID_LEN + 1, plen)
        || !rg_session_trace_hex(buf + len - RG_TRACE_SPAN_LEN,
                                 RG_TRACE_SPAN_LEN))
    {
        return;
    }

    memcpy(s->span.trace_id, buf, RG_TRACE_ID_LEN);
    s->span.trace_id[RG_TRACE_ID_LEN] = '\0';
    memcpy(s->span.parent_id, buf + RG_TRACE_ID_LEN + 1, plen);
    s->span.parent_id[plen] = '\0';
    memcpy(s->trace_link, buf + len - RG_TRACE_SPAN_LEN, RG_TRACE_SPAN_LEN);
    s->trace_link[RG_TRACE_SPAN_LEN] = '\0';
}


static void
rg_session_trace_str(rg_trace_attr_t *a, rg_uint_t *n, const char *key,
    const char *str, size_t len)
{
    a[*n].key = key;
    a[*n].str = str ? str : "";
    a[*n].len = str ? len : 0;
    a[*n].num = 0;
    a[*n].real = 0;
    (*n)++;
}


static void
rg_session_trace_int(rg_trace_attr_t *a, rg_uint_t *n, const char *key,
    int64_t num)
{
    a[*n].key = key;
    a[*n].str = NULL;
    a[*n].len = 0;
    a[*n].num = num;
    a[*n].real = 0;
    (*n)++;
}


/* what a call used: its model, its tokens, the prompt cache's (the
 * GenAI conventions' names) and the cost, where there are some */
static void
rg_session_trace_usage(rg_trace_attr_t *a, rg_uint_t *n, rg_session_t *s,
    int64_t in, int64_t out, int64_t cached, int64_t written,
    rg_uint_t priced, double cost)
{
    rg_session_trace_str(a, n, "gen_ai.request.model", s->llm->model.data,
                         s->llm->model.len);
    rg_session_trace_int(a, n, "gen_ai.usage.input_tokens", in);
    rg_session_trace_int(a, n, "gen_ai.usage.output_tokens", out);

    if (cached) {
        rg_session_trace_int(a, n, "gen_ai.usage.cache_read.input_tokens",
                             cached);
    }

    if (written) {
        rg_session_trace_int(a, n,
                             "gen_ai.usage.cache_creation.input_tokens",
                             written);
    }

    if (priced) {
        a[*n].key = "reagent.cost";
        a[*n].str = NULL;
        a[*n].len = 0;
        a[*n].num = 0;
        a[*n].dnum = cost;
        a[*n].real = 1;
        (*n)++;
    }
}


void
rg_session_trace_chat(rg_session_t *s)
{
    char  tp[RG_TRACEPARENT_SIZE];

    if (s->span.trace_id[0] == '\0'
        || rg_trace_span_start(&s->chat, s->span.trace_id, s->span.span_id)
           != RG_OK)
    {
        rg_llm_traceparent(&s->req, NULL);
        return;
    }

    rg_trace_span_header(&s->chat, tp);
    rg_llm_traceparent(&s->req, tp);
}


/* span was started and spans are exported: it ends with its attributes
 * (else it is forgotten) */
static rg_uint_t
rg_session_trace_open(rg_session_t *s, rg_trace_span_t *span)
{
    if (span->start == 0) {
        return 0;
    }

    if (!rg_trace_enabled(s->engine)) {
        span->start = 0;
        return 0;
    }

    return 1;
}


void
rg_session_trace_chat_end(rg_session_t *s, rg_llm_req_t *r,
    rg_llm_response_t *resp)
{
    char              name[256];
    rg_uint_t         n;
    rg_trace_end_t    end;
    rg_trace_attr_t   a[RG_SESSION_TRACE_ATTRS];

    if (!rg_session_trace_open(s, &s->chat)) {
        return;
    }

    n = 0;
    rg_session_trace_str(a, &n, "gen_ai.operation.name", "chat", 4);
    rg_session_trace_usage(a, &n, s, resp->prompt_tokens,
                           resp->completion_tokens, resp->cached_tokens,
                           resp->cache_write_tokens, s->llm->priced,
                           resp->cost);
    rg_session_trace_str(a, &n, "gen_ai.conversation.id", s->id,
                         strlen(s->id));

    if (resp->finish_reason.len) {
        rg_session_trace_str(a, &n, "reagent.finish_reason",
                             resp->finish_reason.data,
                             rg_min(resp->finish_reason.len, 64));
    }
    if (r->http_status) {
        rg_session_trace_int(a, &n, "http.response.status_code",
                             r->http_status);
    }
    if (r->attempt) {
        rg_session_trace_int(a, &n, "reagent.retries", (int64_t) r->attempt);
    }

    rg_session_trace_name(name, sizeof(name), "chat", s->llm->model.data,
                          s->llm->model.len);

    memset(&end, 0, sizeof(end));
    end.name = name;
    end.kind = RG_TRACE_CLIENT;
    end.attrs = a;
    end.nattrs = n;

    if (resp->status != RG_LLM_OK) {
        end.error = rg_llm_status_name(resp->status);
    }

    rg_trace_span_end(s->engine, &s->chat, &end);
}


void
rg_session_trace_tools(rg_session_t *s, rg_tool_turn_t *turn)
{
    rg_uint_t  i;

    if (s->span.trace_id[0] == '\0') {
        return;
    }

    for (i = 0; i < turn->n; i++) {
        (void) rg_trace_span_start(&turn->runs[i]->span, s->span.trace_id,
                                   s->span.span_id);
    }
}


static void
rg_session_trace_tool(rg_session_t *s, rg_tool_run_t *run,
    const char *error)
{
    char              name[256];
    size_t            len;
    rg_uint_t         n;
    rg_trace_end_t    end;
    rg_trace_attr_t   a[RG_SESSION_TRACE_ATTRS];

    if (!rg_session_trace_open(s, &run->span)) {
        return;
    }

    len = strlen(run->name);

    n = 0;
    rg_session_trace_str(a, &n, "gen_ai.operation.name", "execute_tool", 12);
    rg_session_trace_str(a, &n, "gen_ai.tool.name", run->name, len);
    rg_session_trace_str(a, &n, "gen_ai.tool.call.id", run->call.id,
                         strlen(run->call.id));
    rg_session_trace_str(a, &n, "gen_ai.tool.type", "function", 8);
    rg_session_trace_str(a, &n, "gen_ai.conversation.id", s->id,
                         strlen(s->id));

    rg_session_trace_name(name, sizeof(name), "execute_tool", run->name, len);

    memset(&end, 0, sizeof(end));
    end.name = name;
    end.kind = RG_TRACE_INTERNAL;
    end.attrs = a;
    end.nattrs = n;
    end.error = error;

    rg_trace_span_end(s->engine, &run->span, &end);
}


void
rg_session_trace_tool_end(rg_session_t *s, rg_tool_run_t *run)
{
    rg_session_trace_tool(s, run, run->timed_out ? "timeout"
                                  : run->denied ? "denied"
                                  : run->failed ? "tool_error" : NULL);
}


void
rg_session_trace_end(rg_session_t *s)
{
    char              name[256];
    rg_uint_t         i, n;
    rg_trace_end_t    end;
    rg_trace_attr_t   a[RG_SESSION_TRACE_ATTRS];
    const char       *state;

    if (!rg_trace_enabled(s->engine)) {
        s->span.start = 0;
        s->chat.start = 0;
        return;
    }

    /* what the end cut short */
    if (s->chat.start) {
        memset(&end, 0, sizeof(end));
        rg_session_trace_name(name, sizeof(name), "chat", s->llm->model.data,
                              s->llm->model.len);
        n = 0;
        rg_session_trace_str(a, &n, "gen_ai.operation.name", "chat", 4);
        rg_session_trace_str(a, &n, "gen_ai.request.model",
                             s->llm->model.data, s->llm->model.len);
        end.name = name;
        end.kind = RG_TRACE_CLIENT;
        end.attrs = a;
        end.nattrs = n;
        end.error = "cancelled";
        rg_trace_span_end(s->engine, &s->chat, &end);
    }

    for (i = 0; s->turn && i < s->turn->n; i++) {
        rg_session_trace_tool(s, s->turn->runs[i], "cancelled");
    }

    if (s->span.start == 0) {
        return;
    }

    state = rg_session_state_name(s->state);

    n = 0;
    rg_session_trace_str(a, &n, "gen_ai.operation.name", "invoke_agent", 12);
    rg_session_trace_str(a, &n, "gen_ai.agent.name", s->agent->name.data,
                         s->agent->name.len);
    rg_session_trace_str(a, &n, "gen_ai.conversation.id", s->id,
                         strlen(s->id));
    rg_session_trace_usage(a, &n, s, s->prompt_tokens, s->completion_tokens,
                           s->cached_tokens, s->cache_write_tokens,
                           s->llm->priced || s->cost > 0, s->cost);
    rg_session_trace_str(a, &n, "reagent.status", state, strlen(state));
    rg_session_trace_int(a, &n, "reagent.rounds", (int64_t) s->round);
    rg_session_trace_int(a, &n, "reagent.tool_calls",
                         (int64_t) s->tool_calls);

    if (s->task_id) {
        rg_session_trace_str(a, &n, "reagent.task.id", s->task_id,
                             strlen(s->task_id));
    }
    if (s->resumed) {
        rg_session_trace_int(a, &n, "reagent.resumed", 1);
    }

    rg_session_trace_name(name, sizeof(name), "invoke_agent",
                          s->agent->name.data, s->agent->name.len);

    memset(&end, 0, sizeof(end));
    end.name = name;
    end.kind = RG_TRACE_INTERNAL;
    end.attrs = a;
    end.nattrs = n;
    end.link = s->trace_link[0] ? s->trace_link : NULL;

    if (s->state != RG_SESSION_DONE) {
        end.error = state;
        end.message = s->reason;
    }

    rg_trace_span_end(s->engine, &s->span, &end);
}
