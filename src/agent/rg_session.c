/* rg_session.c: one agent loop on the reactor. Each transition is one
 * callback: the model answered (rg_session_model_handler), the tools of a
 * turn finished (rg_session_tools_handler). The request body is the
 * agent's fixed prefix followed by the messages, each serialized once when
 * it was appended. A session ends exactly once, through
 * rg_session_finish(), which calls its owner's handler last. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session.h>
#include <jansson.h>


static const char  *rg_session_states[] = {
    "queued", "model_wait", "tools_running", "awaiting_approval", "done", "failed", "max_rounds",
    "cancelled"
};


static void rg_session_model_handler(rg_llm_req_t *r,
    rg_llm_response_t *resp);
static void rg_session_tools_handler(rg_tool_turn_t *turn);
static void rg_session_approval_handler(rg_tool_turn_t *turn);


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
rg_session_append(rg_session_t *s, uint8_t role, const char *json,
    size_t len, rg_uint_t copy)
{
    rg_msg_t  *m;

    m = rg_palloc(s->pool, sizeof(rg_msg_t));
    if (m == NULL) {
        return RG_ERROR;
    }

    m->next = NULL;
    m->role = role;
    m->ncalls = 0;
    m->json.len = len;
    m->json.data = copy ? rg_pstrdup(s->pool, json, len) : (char *) json;

    if (m->json.data == NULL) {
        return RG_ERROR;
    }

    *s->last = m;
    s->last = &m->next;
    s->nmsgs++;
    s->msgs_bytes += len;

    return RG_OK;
}


static rg_int_t
rg_session_append_text(rg_session_t *s, uint8_t role, const char *tool_id,
    const char *text, size_t len)
{
    rg_int_t   rc;
    rg_buf_t   b;

    memset(&b, 0, sizeof(b));

    if (role == 't') {
        rc = rg_llm_openai_tool_msg(&b, tool_id, text, len);
    } else {
        rc = rg_llm_openai_msg(&b, role == 'u' ? "user" : "system", text, len);
    }

    if (rc == RG_OK) {
        rc = rg_session_append(s, role, b.data, b.len, 1);
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
        s->reason = rg_pstrdup(s->pool, buf, strlen(buf));
    }

    rg_llm_cancel(&s->req);

    if (s->turn) {
        rg_tools_turn_destroy(s->turn);
        s->turn = NULL;
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
    s->pool = pool;
    s->handler = handler;
    s->data = data;
    s->last = &s->msgs;
    s->state = RG_SESSION_QUEUED;

    snprintf(s->id, sizeof(s->id), "s-%s-%llu", e->tag,
             (unsigned long long) ++e->seq);

    if (task_id) {
        s->task_id = rg_pstrdup(pool, task_id, strlen(task_id));
    }

    s->log = *e->log;
    s->log.handler = rg_session_log_handler;
    s->log.data = s;

    /* the system message is the agent's, shared by all its sessions */
    if (agent->system_msg
        && rg_session_append(s, 's', agent->system_msg,
                             agent->system_msg_len, 0) != RG_OK)
    {
        goto failed;
    }

    if (rg_session_append_text(s, 'u', NULL, input, len) != RG_OK) {
        goto failed;
    }

    rg_llm_req_init(&s->req, rg_engine_upstream(e, agent->llm), -1,
                    rg_session_model_handler, s, &s->log);

    s->req.lane = rg_llm_lane_acquire(s->req.up);

    e->live++;
    e->stats.sessions++;

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

    rg_llm_req_free(&s->req);
    rg_llm_lane_release(s->req.up, s->req.lane);
    rg_buf_free(&s->body);

    if (s->transcript) {
        json_decref(s->transcript);
    }

    s->engine->live--;

    rg_pool_destroy(s->pool);
}


static rg_int_t
rg_session_ask(rg_session_t *s)
{
    char      rid[64], *prefix;
    rg_msg_t *m;

    rg_buf_reset(&s->body);

    if (rg_buf_reserve(&s->body, s->agent->prefix_len + s->msgs_bytes
                                 + s->nmsgs + 2) != RG_OK
        || rg_buf_append(&s->body, s->agent->prefix, s->agent->prefix_len)
           != RG_OK)
    {
        return RG_ERROR;
    }

    for (m = s->msgs; m; m = m->next) {
        if ((m != s->msgs && rg_buf_append_lit(&s->body, ",") != RG_OK)
            || rg_buf_append(&s->body, m->json.data, m->json.len) != RG_OK)
        {
            return RG_ERROR;
        }
    }

    if (rg_buf_append_lit(&s->body, "]}") != RG_OK) {
        return RG_ERROR;
    }

    snprintf(rid, sizeof(rid), "%s-%lu", s->id, (unsigned long) s->round + 1);

    prefix = rg_palloc(s->pool, strlen(rid) + 8);
    if (prefix == NULL) {
        return RG_ERROR;
    }
    snprintf(prefix, strlen(rid) + 8, "call_%s", rid);

    s->state = RG_SESSION_MODEL_WAIT;
    s->call_started = rg_monotonic_msec();

    return rg_llm_send(&s->req, s->body.data, s->body.len, rid, s->pool,
                       prefix);
}


rg_int_t
rg_session_start(rg_session_t *s)
{
    s->started = rg_monotonic_msec();

    rg_log_debug(&s->log, "session started");

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


static void
rg_session_record_call(rg_session_t *s, rg_llm_response_t *resp)
{
    char     rid[64];
    json_t  *ev;

    if (s->transcript == NULL) {
        return;
    }

    snprintf(rid, sizeof(rid), "%s-%lu", s->id, (unsigned long) s->round);

    ev = json_pack("{s:s, s:I, s:s, s:I, s:I, s:s, s:I, s:I, s:I, s:s#}",
                   "type", "model_call",
                   "round", (json_int_t) s->round,
                   "request_id", rid,
                   "attempts", (json_int_t) s->req.attempt + 1,
                   "ms", (json_int_t) (rg_monotonic_msec() - s->call_started),
                   "status", rg_llm_status_name(resp->status),
                   "http_status", (json_int_t) s->req.http_status,
                   "prompt_tokens", (json_int_t) resp->prompt_tokens,
                   "completion_tokens", (json_int_t) resp->completion_tokens,
                   "finish_reason",
                   resp->finish_reason.data ? resp->finish_reason.data : "",
                   (int) resp->finish_reason.len);

    if (ev) {
        json_array_append_new(json_object_get(s->transcript, "events"), ev);
    }
}


static void
rg_session_model_handler(rg_llm_req_t *r, rg_llm_response_t *resp)
{
    char           st[32];
    rg_uint_t      i;
    rg_session_t  *s;
    rg_msg_t      *m;

    s = r->data;

    s->round++;
    s->engine->stats.model_calls++;
    s->prompt_tokens += resp->prompt_tokens;
    s->completion_tokens += resp->completion_tokens;
    s->engine->stats.prompt_tokens += resp->prompt_tokens;
    s->engine->stats.completion_tokens += resp->completion_tokens;

    rg_session_record_call(s, resp);

    if (resp->status != RG_LLM_OK) {
        st[0] = '\0';
        if (r->http_status) {
            snprintf(st, sizeof(st), ", HTTP %ld", r->http_status);
        }

        if (s->req.attempt) {
            rg_session_finish(s, RG_SESSION_FAILED,
                              "model call failed after %lu retries (%s): %.*s",
                              (unsigned long) s->req.attempt,
                              rg_llm_status_name(resp->status),
                              (int) rg_min(resp->error.len, 600),
                              resp->error.data ? resp->error.data : "");
        } else {
            rg_session_finish(s, RG_SESSION_FAILED,
                              "model call failed (%s%s): %.*s",
                              rg_llm_status_name(resp->status), st,
                              (int) rg_min(resp->error.len, 600),
                              resp->error.data ? resp->error.data : "");
        }
        return;
    }

    s->finish_reason = resp->finish_reason;

    if (rg_session_append(s, 'a', resp->message.data, resp->message.len, 0)
        != RG_OK)
    {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    m = (rg_msg_t *) ((char *) s->last - offsetof(rg_msg_t, next));
    m->ncalls = (uint16_t) rg_min(resp->ncalls, UINT16_MAX);

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

    if (s->round >= (rg_uint_t) s->agent->max_rounds) {
        rg_session_finish(s, RG_SESSION_MAX_ROUNDS,
                          "stopped after %lu rounds (max_rounds): the model "
                          "still asked for %lu tool call%s, the first to "
                          "\"%.*s\"", (unsigned long) s->round,
                          (unsigned long) resp->ncalls,
                          resp->ncalls == 1 ? "" : "s",
                          (int) rg_min(resp->calls[0].name.len, 64),
                          resp->calls[0].name.data);
        return;
    }

    /* the calls of this turn, in order; their strings live in the pool */
    s->calls = rg_palloc(s->pool, resp->ncalls * sizeof(rg_tool_request_t));
    if (s->calls == NULL) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    for (i = 0; i < resp->ncalls; i++) {
        s->calls[i].id = resp->calls[i].id;
        s->calls[i].name = resp->calls[i].name;
        s->calls[i].arguments = resp->calls[i].arguments;
    }

    s->ncalls = resp->ncalls;

    s->turn = rg_tools_turn_create(s->agent, s->id, s->calls, s->ncalls,
                                   rg_session_tools_handler, s, &s->log);
    if (s->turn == NULL) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    s->turn->approval = rg_session_approval_handler;
    s->turn->depth = s->depth;
    s->state = RG_SESSION_TOOLS_RUNNING;

    rg_tools_turn_start(s->turn);

    if (s->turn && s->turn->awaiting) {
        s->state = RG_SESSION_AWAITING_APPROVAL;
    }
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


static rg_int_t
rg_session_agent_start(rg_tool_run_t *run, const char *name,
    const char *input, size_t len)
{
    rg_session_t     *parent, *child;
    rg_agent_conf_t  *agent;
    rg_cycle_t       *cycle;

    parent = run->turn->data;
    cycle = parent->engine->cycle;

    if (parent->depth >= (rg_uint_t) cycle->max_agent_depth) {
        snprintf(run->error, sizeof(run->error), "delegation is %lu levels "
                 "deep already (max_agent_depth); answer without delegating",
                 (unsigned long) parent->depth);
        return RG_ERROR;
    }

    agent = rg_cycle_agent(cycle, name, strlen(name));
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
    run->child = child;

    rg_log_error(RG_LOG_INFO, &parent->log, 0, "delegating to agent \"%s\" "
                 "as session \"%s\"", name, child->id);

    rg_session_start(child);

    return RG_OK;
}


static void
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


void
rg_session_init_runner(void)
{
    rg_tools_set_agent_runner(rg_session_agent_start, rg_session_agent_stop);
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

    for (i = 0; i < turn->n; i++) {
        run = turn->runs[i];

        ev = json_pack("{s:s, s:i, s:s, s:s, s:I, s:b}",
                       "type", "tool_call",
                       "round", (json_int_t) s->round,
                       "tool_call_id", run->call.id ? run->call.id : "",
                       "name", run->name,
                       "ms", (json_int_t) run->ms,
                       "ok", !run->failed);
        if (ev) {
            json_array_append_new(json_object_get(s->transcript, "events"),
                                  ev);
        }
    }
}


static void
rg_session_tools_handler(rg_tool_turn_t *turn)
{
    size_t          limit, len;
    rg_uint_t       i;
    rg_session_t   *s;
    rg_tool_run_t  *run;
    const char     *text;
    char            id[64];

    s = turn->data;

    rg_session_record_tools(s, turn);

    limit = s->engine->cycle->tool_result_limit;

    for (i = 0; i < turn->n; i++) {
        run = turn->runs[i];

        text = run->result ? run->result : "";
        len = run->result ? run->result_len : 0;

        if (len > limit) {
            len = limit;     /* trimmed properly by the tools layer later */
        }

        if (s->calls[i].id.len == 0) {
            snprintf(id, sizeof(id), "call_%lu", (unsigned long) i);
        }

        if (rg_session_append_text(s, 't', s->calls[i].id.len
                                           ? s->calls[i].id.data : id,
                                   text, len) != RG_OK)
        {
            rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
            return;
        }

        s->tool_calls++;
        s->engine->stats.tool_calls++;

        if (run->failed) {
            s->tool_errors++;
            s->engine->stats.tool_errors++;
        }
    }

    rg_tools_turn_destroy(turn);
    s->turn = NULL;

    if (rg_session_ask(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED,
                          "could not start the model call (out of memory)");
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

    for (msg = s->msgs; msg; msg = msg->next) {
        m = json_loadb(msg->json.data, msg->json.len, 0, NULL);
        if (m) {
            json_array_append_new(msgs, m);
        }
    }

    t = json_pack("{s:s, s:s%, s:s%, s:s, s:s?, s:I, s:{s:I, s:I, s:I}, "
                  "s:I, s:o, s:O?}",
                  "session", s->id,
                  "agent", s->agent->name.data, s->agent->name.len,
                  "model", s->agent->llm->model.data,
                  s->agent->llm->model.len,
                  "status", rg_session_state_name(s->state),
                  "reason", s->reason,
                  "rounds", (json_int_t) s->round,
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

    return out;
}
