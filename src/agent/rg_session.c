/* rg_session.c: one agent loop on the reactor. Each transition is one
 * callback: the model answered (rg_session_model_handler), the dedupe
 * lookups of a turn came back (rg_session_lookup_handler), the tools of a
 * turn finished (rg_session_tools_handler), the deadline passed. Guards
 * are checked at those points: rounds, the token budget, the deadline,
 * per-tool caps and repeated calls. The request body is the fixed prefix
 * followed by the messages, each serialized once when it was appended. A
 * session ends exactly once, through rg_session_finish(), which calls its
 * owner's handler last. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session.h>
#include <rg_module.h>
#include <rg_tools_conf.h>
#include <rg_store_conf.h>
#include <rg_agent.h>
#include <rg_llm_request.h>
#include <rg_tool_args.h>
#include <rg_json.h>
#include <rg_secret.h>
#include <jansson.h>


static const char  *rg_session_states[] = {
    "queued", "model_wait", "tools_running", "awaiting_approval", "done",
    "failed", "max_rounds", "budget_exceeded", "deadline_exceeded",
    "loop_detected", "cancelled"
};


static const char  rg_session_summarize[] =
    "Summarize the tool calls and results below in a few sentences. Keep "
    "every fact, number and name needed to finish the task; leave out the "
    "rest.";


static rg_int_t rg_session_ask(rg_session_t *s);
static void rg_session_model_handler(rg_llm_req_t *r,
    rg_llm_response_t *resp);
static void rg_session_tools_handler(rg_tool_turn_t *turn);
static void rg_session_approval_handler(rg_tool_turn_t *turn);
static void rg_session_run_turn(rg_session_t *s);
static void rg_session_drop_args(rg_session_t *s);
static void rg_session_cancel_lookups(rg_session_t *s);


const char *
rg_session_state_name(rg_session_state_e state)
{
    return (size_t) state < rg_nelems(rg_session_states)
           ? rg_session_states[state] : "unknown";
}


static size_t
rg_session_log_handler(rg_log_t *log, char *buf, size_t len)
{
    int            n;
    rg_session_t  *s;

    s = log->data;

    if (s->task_id) {
        n = snprintf(buf, len, ", agent: \"%.*s\", task: \"%.64s\", "
                     "session: \"%s\"", (int) s->agent->name.len,
                     s->agent->name.data, s->task_id, s->id);
    } else {
        n = snprintf(buf, len, ", agent: \"%.*s\", session: \"%s\"",
                     (int) s->agent->name.len, s->agent->name.data, s->id);
    }

    return n < 0 ? 0 : rg_min((size_t) n, len - 1);
}


static rg_int_t
rg_session_append_text(rg_session_t *s, uint8_t role, const char *tool_id,
    const char *text, size_t len)
{
    rg_int_t   rc;
    rg_buf_t   b;

    memset(&b, 0, sizeof(b));

    /* the JSON values live only while the message is written */
    rg_json_arena_begin();

    if (role == 't') {
        rc = rg_llm_tool_result(&b, tool_id, text, len);
    } else {
        rc = rg_llm_message(&b, role == 'u' ? RG_LLM_USER : RG_LLM_SYSTEM,
                            text, len);
    }

    rg_json_arena_end();

    if (rc == RG_OK) {
        rc = rg_msgs_append(&s->msgs, s->pool, role, b.data, b.len, 1);
    }

    rg_buf_free(&b);

    return rc;
}


static void
rg_session_finish(rg_session_t *s, rg_session_state_e state,
    const char *fmt, ...)
{
    char     buf[1024];
    va_list  args;

    if (rg_session_final(s)) {
        return;
    }

    s->state = state;
    s->ended = rg_monotonic_msec();

    if (fmt) {
        va_start(args, fmt);
        vsnprintf(buf, sizeof(buf), fmt, args);
        va_end(args);
        rg_secret_scrub_str(buf);      /* a provider may quote the key */
        s->reason = rg_pstrdup(s->pool, buf, strlen(buf));
    }

    rg_llm_cancel(&s->req);

    if (s->turn) {
        rg_tools_turn_destroy(s->turn);
        s->turn = NULL;
    }

    rg_session_cancel_lookups(s);

    rg_session_drop_args(s);

    if (s->deadline_set) {
        event_del(&s->deadline_ev);
        s->deadline_set = 0;
    }

    /* the body is not needed any more; give its memory back now */
    rg_buf_free(&s->body);

    rg_log_error(state == RG_SESSION_DONE ? RG_LOG_INFO : RG_LOG_NOTICE,
                 &s->log, 0, "session %s after %lu rounds, %lu tool calls, "
                 "%llums%s%s", rg_session_state_name(state),
                 (unsigned long) s->round, (unsigned long) s->tool_calls,
                 (unsigned long long) (s->ended - s->started),
                 s->reason ? ": " : "", s->reason ? s->reason : "");

    if (s->handler && !s->handler_called) {
        s->handler_called = 1;
        s->handler(s);           /* may destroy s: nothing after this */
    }
}


rg_session_t *
rg_session_create(rg_engine_t *e, rg_agent_conf_t *agent,
    const char *task_id, const char *input, size_t len,
    rg_session_handler_pt handler, void *data)
{
    rg_pool_t     *pool;
    rg_session_t  *s;

    pool = rg_pool_create(4096);
    if (pool == NULL) {
        return NULL;
    }

    s = rg_pcalloc(pool, sizeof(rg_session_t));
    if (s == NULL) {
        rg_pool_destroy(pool);
        return NULL;
    }

    s->engine = e;
    s->agent = agent;
    s->llm = agent->llm;
    s->pool = pool;
    s->handler = handler;
    s->data = data;
    s->state = RG_SESSION_QUEUED;
    s->prefix = agent->prefix;
    s->prefix_len = agent->prefix_len;
    s->max_rounds = agent->max_rounds;
    s->max_tokens = agent->max_tokens;
    s->deadline = agent->deadline;
    s->bytes_per_token = 4.0;

    rg_msgs_init(&s->msgs);

    snprintf(s->id, sizeof(s->id), "s-%s-%llu", e->tag,
             (unsigned long long) ++rg_agent_ctx(e)->seq);

    if (task_id) {
        s->task_id = rg_pstrdup(pool, task_id, strlen(task_id));
    }

    s->log = *e->log;
    s->log.handler = rg_session_log_handler;
    s->log.data = s;

    /* the system message is the agent's, shared by all its sessions */
    if (agent->system_msg
        && rg_msgs_append(&s->msgs, pool, 's', agent->system_msg,
                          agent->system_msg_len, 0) != RG_OK)
    {
        goto failed;
    }

    if (rg_session_append_text(s, 'u', NULL, input, len) != RG_OK) {
        goto failed;
    }

    if (agent->toolset.ntools) {
        s->tool_counts = rg_pcalloc(pool, agent->toolset.ntools
                                          * sizeof(rg_uint_t));
        if (s->tool_counts == NULL) {
            goto failed;
        }
    }

    rg_llm_req_init(&s->req, rg_llm_upstream(e, s->llm), -1,
                    rg_session_model_handler, s, &s->log);

    s->req.lane = rg_llm_lane_acquire(s->req.up);

    rg_agent_ctx(e)->live++;
    rg_agent_ctx(e)->stats.sessions++;

    return s;

failed:

    rg_pool_destroy(pool);
    return NULL;
}


void
rg_session_destroy(rg_session_t *s)
{
    if (s == NULL) {
        return;
    }

    rg_llm_cancel(&s->req);

    if (s->turn) {
        rg_tools_turn_destroy(s->turn);
    }

    rg_session_cancel_lookups(s);

    rg_session_drop_args(s);

    if (s->deadline_set) {
        event_del(&s->deadline_ev);
    }

    rg_llm_req_free(&s->req);
    rg_llm_lane_release(s->req.up, s->req.lane);
    rg_buf_free(&s->body);

    if (s->transcript) {
        json_decref(s->transcript);
    }

    rg_agent_ctx(s->engine)->live--;

    rg_pool_destroy(s->pool);
}


static void
rg_session_deadline_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_session_t  *s;

    s = arg;
    s->deadline_set = 0;

    rg_session_finish(s, RG_SESSION_DEADLINE_EXCEEDED, "the task ran past "
                      "its deadline of %.3gs (while %s, after %lu rounds)",
                      (double) s->deadline / 1000,
                      rg_session_state_name(s->state),
                      (unsigned long) s->round);
}


rg_int_t
rg_session_start(rg_session_t *s)
{
    struct timeval  tv;

    s->started = rg_monotonic_msec();

    rg_log_debug(&s->log, "session started");

    if (s->deadline) {
        tv.tv_sec = s->deadline / 1000;
        tv.tv_usec = (s->deadline % 1000) * 1000;
        evtimer_assign(&s->deadline_ev, s->engine->base,
                       rg_session_deadline_handler, s);
        evtimer_add(&s->deadline_ev, &tv);
        s->deadline_set = 1;
    }

    if (rg_session_ask(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED,
                          "could not start the model call (out of memory)");
        return RG_ERROR;
    }

    return RG_OK;
}


void
rg_session_cancel(rg_session_t *s, const char *reason)
{
    rg_session_finish(s, RG_SESSION_CANCELLED, "%s",
                      reason ? reason : "cancelled");
}


/* the prefix when the session differs from its agent: a fallback model,
 * or tools that reached their cap and are no longer offered */
static rg_int_t
rg_session_build_prefix(rg_session_t *s)
{
    rg_int_t          rc;
    rg_buf_t          p;
    rg_str_t         *tools;
    rg_uint_t         i, n;
    rg_agent_conf_t  *a;
    rg_llm_prefix_t   prefix;

    a = s->agent;

    tools = rg_palloc(s->pool, (a->toolset.ntools + 1) * sizeof(rg_str_t));
    if (tools == NULL) {
        return RG_ERROR;
    }

    for (i = 0, n = 0; i < a->toolset.ntools; i++) {
        if (a->tool_caps[i]
            && s->tool_counts[i] >= (rg_uint_t) a->tool_caps[i])
        {
            continue;
        }

        tools[n++] = a->tool_texts[i];
    }

    prefix.model = s->llm->model.data;
    prefix.temperature = a->temperature;
    prefix.stream = (rg_uint_t) s->llm->stream;
    prefix.tools = tools;
    prefix.ntools = n;

    memset(&p, 0, sizeof(p));

    rc = rg_llm_prefix(&p, &prefix);

    if (rc == RG_OK) {
        s->prefix = rg_pstrdup(s->pool, p.data, p.len);
        s->prefix_len = p.len;
        rc = s->prefix ? RG_OK : RG_ERROR;
    }

    rg_buf_free(&p);

    return rc;
}


/* context: compaction before a call -------------------------------- */

static void
rg_session_compact(rg_session_t *s, size_t target)
{
    rg_context_result_t  res;

    if (rg_context_compact(&s->msgs, s->pool, target,
                           (rg_uint_t) s->agent->keep_rounds, &res)
        != RG_OK)
    {
        return;
    }

    if (res.shortened || res.dropped_rounds) {
        rg_log_error(RG_LOG_INFO, &s->log, 0, "context compacted: %lu tool "
                     "results shortened, %lu rounds dropped, %lu bytes saved",
                     (unsigned long) res.shortened,
                     (unsigned long) res.dropped_rounds,
                     (unsigned long) res.saved);
    }

    /* one summary per model answer at most: a summary that itself had
     * to go is not summarized again */
    if (res.dropped_rounds && s->agent->context_summarize
        && (s->summaries == 0 || s->summary_round != s->round))
    {
        s->summaries++;
        s->summary_round = s->round;
        rg_buf_t   b;
        rg_msg_t  *m;

        /* the dropped rounds become the input of a summary call */
        memset(&b, 0, sizeof(b));

        for (m = res.dropped; m; m = m->next) {
            if (rg_buf_append(&b, m->json.data, m->json.len) != RG_OK
                || rg_buf_append_lit(&b, "\n") != RG_OK)
            {
                break;
            }
        }

        s->summarizing = 1;
        s->body.len = 0;

        if (b.data) {
            rg_buf_t         msg;
            rg_llm_prefix_t  prefix;

            memset(&msg, 0, sizeof(msg));
            memset(&prefix, 0, sizeof(prefix));
            prefix.model = s->llm->model.data;
            prefix.stream = (rg_uint_t) s->llm->stream;

            if (rg_llm_prefix(&s->body, &prefix) == RG_OK
                && rg_llm_message(&msg, RG_LLM_SYSTEM, rg_session_summarize,
                                  sizeof(rg_session_summarize) - 1) == RG_OK
                && rg_llm_body_add(&s->body, msg.data, msg.len, 1) == RG_OK)
            {
                msg.len = 0;
                if (rg_llm_message(&msg, RG_LLM_USER, b.data, b.len)
                    == RG_OK)
                {
                    rg_llm_body_add(&s->body, msg.data, msg.len, 0);
                }
            }

            rg_buf_free(&msg);
        }

        rg_buf_free(&b);
    }
}


static rg_int_t
rg_session_ask(rg_session_t *s)
{
    char       rid[64], *prefix;
    size_t     budget, estimate;
    rg_msg_t  *m;

    if (s->max_tokens
        && s->prompt_tokens + s->completion_tokens >= s->max_tokens)
    {
        rg_session_finish(s, RG_SESSION_BUDGET_EXCEEDED, "used %lld of its "
                          "%lld tokens (max_tokens) after %lu rounds",
                          (long long) (s->prompt_tokens
                                       + s->completion_tokens),
                          (long long) s->max_tokens,
                          (unsigned long) s->round);
        return RG_OK;
    }

    rg_buf_reset(&s->body);

    /* would the next request overflow the context window? */
    if (s->agent->context_limit) {
        budget = (size_t) (s->agent->context_limit
                           * s->agent->context_threshold
                           * s->bytes_per_token);
        estimate = s->prefix_len + s->msgs.bytes;

        if (estimate > budget) {
            rg_session_compact(s, budget > s->prefix_len
                                  ? (budget - s->prefix_len) * 9 / 10 : 0);
        }
    }

    if (s->summarizing && s->body.len) {
        if (rg_llm_body_end(&s->body) != RG_OK) {
            return RG_ERROR;
        }

        snprintf(rid, sizeof(rid), "%s-summary-%lu", s->id,
                 (unsigned long) s->round);
        goto send;
    }

    s->summarizing = 0;

    if (rg_llm_body_start(&s->body, s->prefix, s->prefix_len,
                          s->msgs.bytes + s->msgs.n) != RG_OK)
    {
        return RG_ERROR;
    }

    for (m = s->msgs.head; m; m = m->next) {
        if (rg_llm_body_add(&s->body, m->json.data, m->json.len,
                            m == s->msgs.head) != RG_OK)
        {
            return RG_ERROR;
        }
    }

    if (rg_llm_body_end(&s->body) != RG_OK) {
        return RG_ERROR;
    }

    snprintf(rid, sizeof(rid), "%s-%lu", s->id, (unsigned long) s->round + 1);

send:

    prefix = rg_palloc(s->pool, strlen(rid) + 8);
    if (prefix == NULL) {
        return RG_ERROR;
    }
    snprintf(prefix, strlen(rid) + 8, "call_%s", rid);

    s->state = RG_SESSION_MODEL_WAIT;
    s->call_started = rg_monotonic_msec();
    s->req.max_calls = (rg_uint_t) s->agent->max_tool_calls;
    s->req.keep_body = s->transcript != NULL;

    return rg_llm_send(&s->req, s->body.data, s->body.len, rid, s->pool,
                       prefix);
}


static void
rg_session_record_call(rg_session_t *s, rg_llm_response_t *resp)
{
    char     rid[64];
    json_t  *ev, *raw;

    if (s->transcript == NULL) {
        return;
    }

    /* the request id the call carried (rounds count after this) */
    if (s->summarizing) {
        snprintf(rid, sizeof(rid), "%s-summary-%lu", s->id,
                 (unsigned long) s->round);
    } else {
        snprintf(rid, sizeof(rid), "%s-%lu", s->id,
                 (unsigned long) s->round + 1);
    }

    ev = json_pack("{s:s, s:I, s:s, s:I, s:I, s:s, s:I, s:I, s:I, s:s#, "
                   "s:b}",
                   "type", "model_call",
                   "round", (json_int_t) s->round + !s->summarizing,
                   "request_id", rid,
                   "attempts", (json_int_t) s->req.attempt + 1,
                   "ms", (json_int_t) (rg_monotonic_msec() - s->call_started),
                   "status", rg_llm_status_name(resp->status),
                   "http_status", (json_int_t) s->req.http_status,
                   "prompt_tokens", (json_int_t) resp->prompt_tokens,
                   "completion_tokens", (json_int_t) resp->completion_tokens,
                   "finish_reason",
                   resp->finish_reason.data ? resp->finish_reason.data : "",
                   (int) resp->finish_reason.len,
                   "summary", s->summarizing);
    if (ev == NULL) {
        return;
    }

    /* the exact request and response, so `reagent replay` can re-run it */
    if (s->body.data) {
        json_object_set_new(ev, "request",
                            json_loadb(s->body.data, s->body.len,
                                       JSON_ALLOW_NUL, NULL));
    }

    if (s->req.http_status == 0 && resp->error.len) {
        json_object_set_new(ev, "error", json_stringn(resp->error.data,
                                                      resp->error.len));

    } else if (s->req.resp.data && s->req.resp.len) {
        raw = json_loadb(s->req.resp.data, s->req.resp.len, JSON_ALLOW_NUL,
                         NULL);
        json_object_set_new(ev, "response",
                            raw ? raw : json_stringn(s->req.resp.data,
                                                     s->req.resp.len));
    }

    json_array_append_new(json_object_get(s->transcript, "events"), ev);
}


/* the summary of dropped rounds came back */
static void
rg_session_summary_done(rg_session_t *s, rg_llm_response_t *resp)
{
    rg_buf_t   b;
    rg_msg_t  *m;

    s->summarizing = 0;

    if (resp->status == RG_LLM_OK && resp->has_content) {
        memset(&b, 0, sizeof(b));

        if (rg_buf_append_lit(&b, "Summary of earlier rounds, removed to "
                              "save context: ") == RG_OK
            && rg_buf_append(&b, resp->content.data, resp->content.len)
               == RG_OK)
        {
            m = rg_pcalloc(s->pool, sizeof(rg_msg_t));
            if (m) {
                rg_buf_t  j;

                memset(&j, 0, sizeof(j));
                if (rg_llm_message(&j, RG_LLM_USER, b.data, b.len)
                    == RG_OK)
                {
                    m->role = 'u';
                    m->json.data = rg_pstrdup(s->pool, j.data, j.len);
                    m->json.len = j.len;
                    if (m->json.data) {
                        rg_context_insert_after_task(&s->msgs, m);
                    }
                }
                rg_buf_free(&j);
            }
        }

        rg_buf_free(&b);

    } else {
        rg_log_error(RG_LOG_WARN, &s->log, 0, "the context summary failed "
                     "(%s); going on without it",
                     rg_llm_status_name(resp->status));
    }

    if (rg_session_ask(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
    }
}


static rg_uint_t
rg_session_retryable(rg_llm_status_e st)
{
    return st == RG_LLM_ERR_RATE || st == RG_LLM_ERR_SERVER
           || st == RG_LLM_ERR_TIMEOUT || st == RG_LLM_ERR_CONNECT
           || st == RG_LLM_ERR_BAD_RESPONSE;
}


static void
rg_session_use_fallback(rg_session_t *s)
{
    rg_llm_conf_t  *fb;

    fb = s->llm->fallback;

    rg_log_error(RG_LOG_WARN, &s->log, 0, "llm \"%.*s\" gave up; falling "
                 "back to llm \"%.*s\"", (int) s->llm->name.len,
                 s->llm->name.data, (int) fb->name.len, fb->name.data);

    rg_llm_req_free(&s->req);
    rg_llm_lane_release(s->req.up, s->req.lane);

    s->llm = fb;
    s->fallback_used = 1;

    rg_llm_req_init(&s->req, rg_llm_upstream(s->engine, fb), -1,
                    rg_session_model_handler, s, &s->log);
    s->req.lane = rg_llm_lane_acquire(s->req.up);

    if (rg_session_build_prefix(s) != RG_OK || rg_session_ask(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
    }
}


static void
rg_session_failed(rg_session_t *s, rg_llm_req_t *r, rg_llm_response_t *resp)
{
    char  st[32];

    st[0] = '\0';
    if (r->http_status) {
        snprintf(st, sizeof(st), ", HTTP %ld", r->http_status);
    }

    if (resp->status == RG_LLM_ERR_CONTEXT && !s->context_retried) {
        size_t  before;

        /* compact hard and try once more */
        s->context_retried = 1;
        before = s->msgs.bytes;
        rg_session_compact(s, s->msgs.bytes / 2);

        if (s->msgs.bytes < before || s->summarizing) {
            rg_log_error(RG_LOG_NOTICE, &s->log, 0, "context_length_exceeded:"
                         " compacted from %lu to %lu bytes, retrying once",
                         (unsigned long) before,
                         (unsigned long) s->msgs.bytes);
            s->round--;
            if (rg_session_ask(s) != RG_OK) {
                rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
            }
            return;
        }
    }

    if (rg_session_retryable(resp->status) && s->llm->fallback
        && !s->fallback_used)
    {
        s->round--;
        rg_session_use_fallback(s);
        return;
    }

    if (r->attempt) {
        rg_session_finish(s, RG_SESSION_FAILED, "model call failed after %lu "
                          "%s over %.1fs%s (%s%s): %.*s",
                          (unsigned long) r->attempt,
                          r->attempt == 1 ? "retry" : "retries",
                          (double) (rg_monotonic_msec() - r->started) / 1000,
                          r->budget_spent ? ", retry_budget spent" : "",
                          rg_llm_status_name(resp->status), st,
                          (int) rg_min(resp->error.len, 600),
                          resp->error.data ? resp->error.data : "");
        return;
    }

    rg_session_finish(s, RG_SESSION_FAILED, "model call failed (%s%s%s): "
                      "%.*s", rg_llm_status_name(resp->status), st,
                      r->budget_spent ? ", the wait asked for passes "
                      "retry_budget" : "",
                      (int) rg_min(resp->error.len, 600),
                      resp->error.data ? resp->error.data : "");
}


/* a call's signature: its name and its arguments, checked and coerced,
 * in canonical JSON; NULL with c's preset error when they are unusable */
static char *
rg_session_signature(rg_session_t *s, rg_tool_request_t *c,
    rg_tool_entry_t *te, size_t *len)
{
    char      *canon, *sig, err[768];
    size_t     clen;
    json_t    *args;

    args = rg_tools_args(te, c->arguments.data, c->arguments.len, err,
                         sizeof(err));
    if (args == NULL) {
        c->preset.data = rg_pstrdup(s->pool, err, strlen(err));
        c->preset.len = strlen(err);
        c->has_preset = c->preset.data != NULL;
        c->preset_failed = 1;
        return NULL;
    }

    canon = rg_tool_args_canonical(args, &clen);

    if (canon == NULL) {
        json_decref(args);
        return NULL;
    }

    *len = c->name.len + 1 + clen;
    sig = rg_palloc(s->pool, *len + 1);

    if (sig) {
        memcpy(sig, c->name.data, c->name.len);
        sig[c->name.len] = '\0';
        memcpy(sig + c->name.len + 1, canon, clen);
        sig[*len] = '\0';

        /* the tools layer takes the checked arguments as they are, and
         * the canonical text is what the module reads */
        c->args = args;
        c->args_text.data = sig + c->name.len + 1;
        c->args_text.len = clen;

    } else {
        json_decref(args);
    }

    free(canon);

    return sig;
}


static rg_session_sig_t *
rg_session_seen(rg_session_t *s, const char *sig, size_t len,
    rg_uint_t window)
{
    rg_uint_t  i;

    for (i = s->nsigs; i-- > 0; ) {
        if (s->sigs[i].round + window < s->round) {
            break;                     /* older than the window */
        }

        if (s->sigs[i].len == len && memcmp(s->sigs[i].sig, sig, len) == 0) {
            return &s->sigs[i];
        }
    }

    return NULL;
}


static rg_int_t
rg_session_preset(rg_session_t *s, rg_tool_request_t *c, rg_uint_t failed,
    const char *fmt, ...)
{
    int      n;
    char    *p;
    va_list  args;

    va_start(args, fmt);
    n = vasprintf(&p, fmt, args);
    va_end(args);

    if (n < 0) {
        return RG_ERROR;
    }

    c->preset.data = rg_pstrdup(s->pool, p, n);
    c->preset.len = n;
    c->has_preset = 1;
    c->preset_failed = failed;
    free(p);

    return c->preset.data ? RG_OK : RG_ERROR;
}


/* a dedupe lookup answered: each carries its own call */
static void
rg_session_lookup_handler(void *data, const rg_store_res_t *res)
{
    rg_uint_t           i;
    rg_session_t       *s;
    rg_session_call_t  *x;

    x = data;
    s = x->session;
    i = x - s->extra;
    x->lookup = NULL;

    if (res->rc == RG_OK) {
        s->calls[i].preset.data = rg_pstrdup(s->pool, res->value.data,
                                             res->value.len);
        s->calls[i].preset.len = res->value.len;
        s->calls[i].has_preset = s->calls[i].preset.data != NULL;
        x->key = NULL;                  /* a hit is not stored again */
        s->dedupe_hits++;
        rg_agent_ctx(s->engine)->stats.dedupe_hits++;
    }

    /* a miss or a store error: the tool runs */

    if (--s->lookups == 0) {
        rg_session_run_turn(s);
    }
}


static void
rg_session_cancel_lookups(rg_session_t *s)
{
    rg_uint_t    i;
    rg_store_t  *st;

    st = rg_store_ctx(s->engine);

    for (i = 0; s->lookups && s->extra && i < s->ncalls; i++) {
        if (s->extra[i].lookup) {
            st->cancel(st, s->extra[i].lookup);
            s->extra[i].lookup = NULL;
            s->lookups--;
        }
    }

    s->lookups = 0;
}


static rg_uint_t
rg_session_dedupable(rg_session_t *s, rg_int_t tool)
{
    return tool >= 0 && s->agent->dedupe != RG_DEDUPE_OFF
           && (s->agent->toolset.tools[tool]->tool->flags
               & RG_TOOL_READ_ONLY);
}


/* the calls the answer asked for, those past the cap included */
static rg_uint_t
rg_session_asked(rg_llm_response_t *resp)
{
    return resp->calls_over ? resp->ncalls - 1 + resp->calls_over
                            : resp->ncalls;
}


/* Past max_tool_calls_per_turn the calls do not run: the last call kept
 * stands for them all and its tool message says so. The other ones were
 * left out of the assistant message, so every id in it is answered. */
static rg_int_t
rg_session_over_cap(rg_session_t *s, rg_llm_response_t *resp)
{
    rg_uint_t           max;
    rg_tool_request_t  *c;

    max = resp->ncalls - 1;
    c = &s->calls[max];

    rg_log_error(RG_LOG_WARN, &s->log, 0, "the model asked for %lu tool "
                 "calls in one answer: %lu run, the other %lu are refused "
                 "(max_tool_calls_per_turn)",
                 (unsigned long) rg_session_asked(resp), (unsigned long) max,
                 (unsigned long) resp->calls_over);

    return rg_session_preset(s, c, 1, "error: not run. The answer asked for "
                             "%lu tool calls and at most %lu run per answer "
                             "(max_tool_calls_per_turn): the first %lu ran; "
                             "this call and the %lu after it did not. Ask "
                             "for those again, at most %lu at a time.",
                             (unsigned long) rg_session_asked(resp),
                             (unsigned long) max, (unsigned long) max,
                             (unsigned long) (resp->calls_over - 1),
                             (unsigned long) max);
}


/* guards and caches in front of a turn */
static void
rg_session_prepare_turn(rg_session_t *s, rg_llm_response_t *resp)
{
    char               *sig, *key;
    size_t              slen, klen;
    rg_int_t            j, cap;
    rg_uint_t           i, k, rebuild;
    rg_store_t         *st;
    rg_agent_conf_t    *a;
    rg_tool_request_t  *c;
    rg_session_sig_t   *seen;

    a = s->agent;
    st = rg_store_ctx(s->engine);
    rebuild = 0;

    s->calls = rg_pcalloc(s->pool, resp->ncalls * sizeof(rg_tool_request_t));
    s->extra = rg_pcalloc(s->pool, resp->ncalls * sizeof(rg_session_call_t));
    if (s->calls == NULL || s->extra == NULL) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    s->ncalls = resp->ncalls;

    for (i = 0; i < resp->ncalls; i++) {
        c = &s->calls[i];
        c->id = resp->calls[i].id;
        c->name = resp->calls[i].name;
        c->arguments = resp->calls[i].arguments;

        s->extra[i].tool = -1;

        if (resp->calls_over && i == resp->ncalls - 1) {
            if (rg_session_over_cap(s, resp) != RG_OK) {
                rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
                return;
            }
            continue;
        }

        j = rg_toolset_find(&a->toolset, c->name.data, c->name.len);
        s->extra[i].tool = j;
        if (j < 0) {
            continue;                  /* the tools layer explains */
        }

        /* per-tool cap */
        cap = a->tool_caps[j];
        if (cap && s->tool_counts[j] >= (rg_uint_t) cap) {
            rg_session_preset(s, c, 1, "error: %s has reached its limit of "
                              "%ld calls in this task and is no longer "
                              "available; answer with what you have",
                              a->toolset.tools[j]->tool->name, (long) cap);
            continue;
        }

        s->tool_counts[j]++;

        if (cap && s->tool_counts[j] == (rg_uint_t) cap) {
            s->extra[i].capped = 1;
            rebuild = 1;
        }

        /* repeated calls */
        sig = rg_session_signature(s, c, a->toolset.tools[j], &slen);
        if (sig == NULL) {
            continue;
        }

        s->extra[i].sig = sig;
        s->extra[i].sig_len = slen;

        seen = rg_session_seen(s, sig, slen, (rg_uint_t) a->repeat_window);
        if (seen) {
            s->repeats++;
            rg_agent_ctx(s->engine)->stats.repeats++;

            if (s->repeats > (rg_uint_t) a->repeat_limit) {
                rg_session_finish(s, RG_SESSION_LOOP_DETECTED, "the model "
                                  "repeated identical tool calls %lu times "
                                  "(the last: %s with %.200s)",
                                  (unsigned long) s->repeats,
                                  a->toolset.tools[j]->tool->name,
                                  sig + c->name.len + 1);
                return;
            }

            rg_session_preset(s, c, 0, "%.*s\n(you already called %s with "
                              "these arguments in round %lu; answer from "
                              "this result or change approach)",
                              (int) seen->result.len, seen->result.data,
                              a->toolset.tools[j]->tool->name,
                              (unsigned long) seen->round);

            /* the window slides: the next repeat counts from this one */
            seen->round = s->round;
            s->extra[i].sig = NULL;
            continue;
        }

        /* the dedupe cache, for idempotent tools: a session's own calls
         * are its cache; wider scopes live in the store */
        if (rg_session_dedupable(s, j) && a->dedupe == RG_DEDUPE_SESSION) {
            seen = rg_session_seen(s, sig, slen, (rg_uint_t) -1 / 2);
            if (seen) {
                c->preset = seen->result;
                c->has_preset = 1;
                s->extra[i].sig = NULL;
                s->dedupe_hits++;
                rg_agent_ctx(s->engine)->stats.dedupe_hits++;
            }
            continue;
        }

        if (rg_session_dedupable(s, j)) {
            klen = slen + 64 + a->name.len;
            key = rg_palloc(s->pool, klen);
            if (key == NULL) {
                continue;
            }

            /* the signature holds a NUL between name and arguments */
            k = snprintf(key, klen, "dd:%s:%s:",
                         a->dedupe == RG_DEDUPE_AGENT ? "a" : "g",
                         a->dedupe == RG_DEDUPE_AGENT ? a->name.data : "");
            memcpy(key + k, sig, slen);
            key[k + c->name.len] = ':';
            key[k + slen] = '\0';

            s->extra[i].key = key;
            s->extra[i].klen = k + slen;
        }
    }

    if (rebuild && rg_session_build_prefix(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    s->state = RG_SESSION_TOOLS_RUNNING;
    s->lookups = 0;

    for (i = 0; i < s->ncalls; i++) {
        s->extra[i].session = s;
    }

    for (i = 0; i < s->ncalls; i++) {
        if (s->extra[i].key && !s->calls[i].has_preset) {
            rg_str_t  dk = { s->extra[i].klen, s->extra[i].key };

            s->extra[i].lookup = st->get(st, &dk, rg_session_lookup_handler,
                                         &s->extra[i]);
            if (s->extra[i].lookup) {
                s->lookups++;
            } else {
                s->extra[i].key = NULL;
            }
        }
    }

    if (s->lookups == 0) {
        rg_session_run_turn(s);
    }
}


/* checked arguments that no turn took over */
static void
rg_session_drop_args(rg_session_t *s)
{
    rg_uint_t  i;

    for (i = 0; s->calls && i < s->ncalls; i++) {
        if (s->calls[i].args) {
            json_decref(s->calls[i].args);
            s->calls[i].args = NULL;
        }
    }
}


static void
rg_session_run_turn(rg_session_t *s)
{
    s->turn = rg_tools_turn_create(rg_tools_ctx(s->engine),
                                   &s->agent->toolset, s->id, s->calls,
                                   s->ncalls, rg_session_tools_handler, s,
                                   &s->log);
    rg_session_drop_args(s);

    if (s->turn == NULL) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    s->turn->approval = rg_session_approval_handler;
    s->turn->parent = s->parent_run;   /* its approval caps this one's */
    s->state = RG_SESSION_TOOLS_RUNNING;

    rg_tools_turn_start(s->turn);

    if (s->turn && s->turn->awaiting) {
        s->state = RG_SESSION_AWAITING_APPROVAL;
    }
}


static void
rg_session_model_handler(rg_llm_req_t *r, rg_llm_response_t *resp)
{
    rg_session_t  *s;
    rg_msg_t      *m;

    s = r->data;

    s->model_calls++;
    rg_agent_ctx(s->engine)->stats.model_calls++;
    s->prompt_tokens += resp->prompt_tokens;
    s->completion_tokens += resp->completion_tokens;
    rg_agent_ctx(s->engine)->stats.prompt_tokens += resp->prompt_tokens;
    rg_agent_ctx(s->engine)->stats.completion_tokens += resp->completion_tokens;

    rg_session_record_call(s, resp);

    if (s->summarizing) {
        rg_session_summary_done(s, resp);
        return;
    }

    s->round++;

    if (resp->status != RG_LLM_OK) {
        rg_session_failed(s, r, resp);
        return;
    }

    /* a later overflow may compact and retry again */
    s->context_retried = 0;

    /* calibrate the size estimate from what the provider counted */
    if (resp->prompt_tokens > 0 && s->body.len > 0) {
        s->bytes_per_token = (double) s->body.len / resp->prompt_tokens;
    }

    s->finish_reason = resp->finish_reason;

    if (rg_msgs_append(&s->msgs, s->pool, 'a', resp->message.data,
                       resp->message.len, 0) != RG_OK)
    {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    m = rg_msgs_last(&s->msgs);
    m->ncalls = (uint32_t) resp->ncalls;     /* at most RG_LLM_MAX_CALLS + 1 */

    if (resp->ncalls == 0) {
        if (resp->has_content) {
            s->answer = resp->content;
        } else if (resp->refusal.len) {
            s->answer = resp->refusal;
        }

        if (rg_str_eq(&resp->finish_reason, "length")) {
            rg_session_finish(s, RG_SESSION_DONE, "the answer was cut off: "
                              "the model reached its output token limit "
                              "(finish_reason \"length\")");
            return;
        }

        if (!resp->has_content && resp->refusal.len) {
            rg_session_finish(s, RG_SESSION_DONE, "the model refused");
            return;
        }

        rg_session_finish(s, RG_SESSION_DONE, NULL);
        return;
    }

    if (s->round >= s->max_rounds) {
        rg_session_finish(s, RG_SESSION_MAX_ROUNDS,
                          "stopped after %lu rounds (max_rounds): the model "
                          "still asked for %lu tool call%s, the first to "
                          "\"%.*s\"", (unsigned long) s->round,
                          (unsigned long) rg_session_asked(resp),
                          rg_session_asked(resp) == 1 ? "" : "s",
                          (int) rg_min(resp->calls[0].name.len, 64),
                          resp->calls[0].name.data);
        return;
    }

    if (s->max_tokens
        && s->prompt_tokens + s->completion_tokens >= s->max_tokens)
    {
        rg_session_finish(s, RG_SESSION_BUDGET_EXCEEDED, "used %lld of its "
                          "%lld tokens (max_tokens) after %lu rounds; the "
                          "model still asked for tools",
                          (long long) (s->prompt_tokens
                                       + s->completion_tokens),
                          (long long) s->max_tokens,
                          (unsigned long) s->round);
        return;
    }

    rg_session_prepare_turn(s, resp);
}


static void
rg_session_approval_handler(rg_tool_turn_t *turn)
{
    rg_session_t  *s;

    s = turn->data;

    if (!rg_session_final(s)) {
        s->state = turn->awaiting ? RG_SESSION_AWAITING_APPROVAL
                                  : RG_SESSION_TOOLS_RUNNING;
    }
}


static void
rg_session_record_tools(rg_session_t *s, rg_tool_turn_t *turn)
{
    json_t         *ev;
    rg_uint_t       i;
    rg_tool_run_t  *run;

    if (s->transcript == NULL) {
        return;
    }

    /* the turn as a whole: as long as its slowest call, if all ran at once */
    ev = json_pack("{s:s, s:I, s:I, s:I}", "type", "turn",
                   "round", (json_int_t) s->round,
                   "calls", (json_int_t) turn->n,
                   "ms", (json_int_t) (rg_monotonic_msec() - turn->started));
    if (ev) {
        json_array_append_new(json_object_get(s->transcript, "events"), ev);
    }

    for (i = 0; i < turn->n; i++) {
        run = turn->runs[i];

        ev = json_pack("{s:s, s:I, s:s, s:s, s:I, s:b, s:b}",
                       "type", "tool_call",
                       "round", (json_int_t) s->round,
                       "tool_call_id", run->call.id ? run->call.id : "",
                       "name", run->name,
                       "ms", (json_int_t) run->ms,
                       "ok", !run->failed,
                       "cached", s->calls[i].has_preset);
        if (ev) {
            json_array_append_new(json_object_get(s->transcript, "events"),
                                  ev);
        }
    }
}


static void
rg_session_remember(rg_session_t *s, rg_uint_t i, const char *text,
    size_t len)
{
    rg_session_sig_t  *sigs;

    if (s->extra[i].sig == NULL) {
        return;
    }

    if (s->nsigs == s->sigs_cap) {
        s->sigs_cap = s->sigs_cap ? s->sigs_cap * 2 : 8;
        sigs = rg_palloc(s->pool, s->sigs_cap * sizeof(rg_session_sig_t));
        if (sigs == NULL) {
            return;
        }
        if (s->nsigs) {
            memcpy(sigs, s->sigs, s->nsigs * sizeof(rg_session_sig_t));
        }
        s->sigs = sigs;
    }

    s->sigs[s->nsigs].sig = s->extra[i].sig;
    s->sigs[s->nsigs].len = s->extra[i].sig_len;
    s->sigs[s->nsigs].round = s->round;
    s->sigs[s->nsigs].result.data = rg_pstrdup(s->pool, text, len);
    s->sigs[s->nsigs].result.len = len;

    if (s->sigs[s->nsigs].result.data) {
        s->nsigs++;
    }
}


static void
rg_session_tools_handler(rg_tool_turn_t *turn)
{
    size_t          limit;
    rg_uint_t       i;
    rg_buf_t        b;
    rg_store_t     *st;
    rg_session_t   *s;
    rg_tool_run_t  *run;
    const char     *text;
    size_t          len;
    char            id[64];

    s = turn->data;
    st = rg_store_ctx(s->engine);

    rg_session_record_tools(s, turn);

    limit = rg_tools_conf(s->engine->cycle)->tool_result_limit;
    memset(&b, 0, sizeof(b));

    for (i = 0; i < turn->n; i++) {
        run = turn->runs[i];

        text = run->result ? run->result : "";
        len = run->result ? run->result_len : 0;

        rg_buf_reset(&b);

        if (len > limit) {
            rg_tool_trim(text, len, limit, &b);
            text = b.data ? b.data : "";
            len = b.data ? b.len : 0;
        }

        /* what is kept is what the model saw, trimmed: a fresh,
         * successful result of an idempotent tool is cached */
        if (s->extra[i].key && !s->calls[i].has_preset && !run->failed) {
            rg_str_t  k = { s->extra[i].klen, s->extra[i].key };
            rg_str_t  v = { len, (char *) text };

            st->set(st, &k, &v, s->agent->dedupe_ttl, 0, NULL, NULL);
        }

        rg_session_remember(s, i, text, len);

        if (s->extra[i].capped) {
            if (text != b.data) {
                rg_buf_append(&b, text, len);
            }
            rg_buf_printf(&b, "\n(note: that was the last %s call allowed "
                          "in this task; it is no longer available)",
                          s->agent->toolset.tools[s->extra[i].tool]
                          ->tool->name);
            text = b.data;
            len = b.len;
        }

        if (s->calls[i].id.len == 0) {
            snprintf(id, sizeof(id), "call_%lu", (unsigned long) i);
        }

        if (rg_session_append_text(s, 't', s->calls[i].id.len
                                           ? s->calls[i].id.data : id,
                                   text ? text : "", len) != RG_OK)
        {
            rg_buf_free(&b);
            rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
            return;
        }

        s->tool_calls++;
        rg_agent_ctx(s->engine)->stats.tool_calls++;

        if (run->failed) {
            s->tool_errors++;
            rg_agent_ctx(s->engine)->stats.tool_errors++;
        }
    }

    rg_buf_free(&b);

    rg_tools_turn_destroy(turn);
    s->turn = NULL;

    if (rg_session_ask(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED,
                          "could not start the model call (out of memory)");
    }
}


/* child sessions: the agent module's run_agent ---------------------- */

static void
rg_session_child_done(rg_session_t *child)
{
    rg_tool_run_t  *run;
    const char     *text;
    size_t          len;

    run = child->data;

    if (child->state == RG_SESSION_DONE && child->answer.data) {
        text = child->answer.data;
        len = child->answer.len;
    } else {
        text = child->reason ? child->reason : "";
        len = strlen(text);
    }

    rg_tools_agent_done(run, rg_session_state_name(child->state), text, len);
    rg_session_destroy(child);
}


rg_int_t
rg_session_agent_start(rg_tool_run_t *run, const char *name,
    const char *input, size_t len)
{
    rg_session_t     *parent, *child;
    rg_agent_conf_t  *agent;
    rg_cycle_t       *cycle;

    parent = run->turn->data;
    cycle = parent->engine->cycle;

    if (parent->depth
        >= (rg_uint_t) rg_agent_main_conf(cycle)->max_agent_depth)
    {
        snprintf(run->error, sizeof(run->error), "delegation is %lu levels "
                 "deep already (max_agent_depth); answer without delegating",
                 (unsigned long) parent->depth);
        return RG_ERROR;
    }

    agent = rg_agent_find(cycle, name, strlen(name));
    if (agent == NULL) {
        snprintf(run->error, sizeof(run->error), "unknown agent \"%.64s\"",
                 name);
        return RG_ERROR;
    }

    child = rg_session_create(parent->engine, agent, parent->task_id, input,
                              len, rg_session_child_done, run);
    if (child == NULL) {
        snprintf(run->error, sizeof(run->error), "out of memory");
        return RG_ERROR;
    }

    child->depth = parent->depth + 1;
    child->parent_run = run;
    run->child = child;

    rg_log_error(RG_LOG_INFO, &parent->log, 0, "delegating to agent \"%s\" "
                 "as session \"%s\"", name, child->id);

    rg_session_start(child);

    return RG_OK;
}


void
rg_session_agent_stop(rg_tool_run_t *run)
{
    rg_session_t  *child;

    child = run->child;
    run->child = NULL;

    if (child) {
        child->handler = NULL;     /* nobody to tell */
        rg_session_destroy(child);
    }
}


rg_int_t
rg_session_record(rg_session_t *s)
{
    s->transcript = json_pack("{s:[]}", "events");

    return s->transcript ? RG_OK : RG_ERROR;
}


char *
rg_session_transcript(rg_session_t *s)
{
    char      *out;
    json_t    *t, *msgs, *m;
    rg_msg_t  *msg;

    msgs = json_array();
    if (msgs == NULL) {
        return NULL;
    }

    for (msg = s->msgs.head; msg; msg = msg->next) {
        /* a tool's result may hold NUL bytes: JSON writes \u0000 */
        m = json_loadb(msg->json.data, msg->json.len, JSON_ALLOW_NUL, NULL);
        if (m) {
            json_array_append_new(msgs, m);
        }
    }

    t = json_pack("{s:s, s:s%, s:s%, s:s, s:s?, s:I, s:I, s:I, "
                  "s:{s:I, s:I, s:I}, s:I, s:o, s:O?}",
                  "session", s->id,
                  "agent", s->agent->name.data, s->agent->name.len,
                  "model", s->llm->model.data, s->llm->model.len,
                  "status", rg_session_state_name(s->state),
                  "reason", s->reason,
                  "rounds", (json_int_t) s->round,
                  "tool_calls", (json_int_t) s->tool_calls,
                  "dedupe_hits", (json_int_t) s->dedupe_hits,
                  "tokens",
                  "prompt", (json_int_t) s->prompt_tokens,
                  "completion", (json_int_t) s->completion_tokens,
                  "total", (json_int_t) (s->prompt_tokens
                                         + s->completion_tokens),
                  "ms", (json_int_t) ((s->ended ? s->ended
                                               : rg_monotonic_msec())
                                      - s->started),
                  "messages", msgs,
                  "events", s->transcript
                            ? json_object_get(s->transcript, "events")
                            : NULL);
    if (t == NULL) {
        return NULL;
    }

    out = json_dumps(t, JSON_INDENT(2));
    json_decref(t);

    return rg_secret_scrub_str(out);
}
