/* rg_session.c: one agent loop on the reactor, its state machine. Each
 * transition is one callback: the model answered (the model handler),
 * the tools of a turn finished (rg_turn.c), the deadline passed. Guards
 * are checked at those points: rounds, the token budget, the deadline; a
 * failed call is retried on the fallback llm or after compaction. The
 * request body is the prefix followed by the messages, each serialized
 * once when it was appended. A session ends exactly once, through
 * rg_session_finish(), which calls its owner's handler last. What a turn
 * does before its tools run and after they end is rg_turn.c's; the
 * transcript rg_transcript.c's; compaction and the summary call
 * rg_session_context.c's; child sessions rg_child.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session.h>
#include <rg_digest.h>
#include <rg_durable.h>
#include <rg_turn.h>
#include <rg_dedupe.h>
#include <rg_tenant.h>
#include <rg_lease.h>
#include <rg_transcript.h>
#include <rg_events.h>
#include <rg_session_context.h>
#include <rg_session_trace.h>
#include <rg_replay.h>
#include <rg_module.h>
#include <rg_store_conf.h>
#include <rg_llm_request.h>
#include <rg_json.h>
#include <rg_secret.h>
#include <jansson.h>


/* the metrics name the states as these do (test_metrics) */
_Static_assert(RG_SESSION_NSTATES == RG_METRICS_STATES
               && RG_SESSION_DONE == RG_METRICS_FINAL,
               "the metrics' session states");


static const char  *rg_session_states[] = {
    "queued", "model_wait", "tools_running", "awaiting_approval", "done",
    "failed", "max_rounds", "budget_exceeded", "deadline_exceeded",
    "loop_detected", "cancelled", "filtered", "approval_timed_out"
};


/* finish reasons of an answer that ended as it should */
static const char  *rg_session_finish_ok[] = {
    "stop", "tool_calls", "function_call", "eos", "end_turn",
    "stop_sequence", "tool_use"
};


/* finish reasons of an answer a content or safety filter stopped (or
 * that the model refused, as Anthropic says it) */
static const char  *rg_session_finish_filtered[] = {
    "content_filter", "safety", "recitation", "prohibited_content",
    "blocklist", "spii", "image_safety", "refusal"
};


/* finish reasons of an answer cut at the output token limit */
static const char  *rg_session_finish_cut[] = {
    "length", "max_tokens", "max_output_tokens"
};


static void rg_session_deadline_handler(evutil_socket_t fd, short what,
    void *arg);
static void rg_session_model_handler(rg_llm_req_t *r,
    rg_llm_response_t *resp);


const char *
rg_session_state_name(rg_session_state_e state)
{
    return (size_t) state < rg_nelems(rg_session_states)
           ? rg_session_states[state] : "unknown";
}


rg_session_state_e
rg_session_final_state(const char *name, size_t len)
{
    rg_uint_t  i;

    for (i = RG_SESSION_DONE; name && i < RG_SESSION_NSTATES; i++) {
        if (strlen(rg_session_states[i]) == len
            && memcmp(rg_session_states[i], name, len) == 0)
        {
            return (rg_session_state_e) i;
        }
    }

    return RG_SESSION_QUEUED;      /* not a final one */
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


static rg_int_t rg_session_wire(rg_session_t *s, rg_msg_t *m,
    const char *p, size_t len);


rg_int_t
rg_session_append_text(rg_session_t *s, uint8_t role, const char *tool_id,
    const char *text, size_t len)
{
    return rg_session_append_msg(s, role, tool_id, text, len, 0);
}


rg_int_t
rg_session_append_msg(rg_session_t *s, uint8_t role, const char *tool_id,
    const char *text, size_t len, rg_uint_t failed)
{
    rg_int_t   rc;
    rg_buf_t   b;

    memset(&b, 0, sizeof(b));

    /* the JSON values live only while the message is written */
    rg_json_arena_begin();

    if (role == 't') {
        rc = rg_llm_tool_result(&b, tool_id, text, len, failed);
    } else {
        rc = rg_llm_message(&b, role == 'u' ? RG_LLM_USER
                                : role == 'a' ? RG_LLM_ASSISTANT
                                : RG_LLM_SYSTEM, text, len);
    }

    rg_json_arena_end();

    if (rc == RG_OK) {
        rc = rg_msgs_append(&s->msgs, s->pool, role, b.data, b.len, 1);
    }

    /* its piece in the llm's format, while its text is at hand */
    if (rc == RG_OK) {
        rg_buf_reset(&b);

        switch (rg_llm_wire_text(s->llm->codec, &b, role, tool_id, text,
                                 len, failed))
        {
        case RG_OK:
            rc = rg_session_wire(s, rg_msgs_last(&s->msgs), b.data, b.len);
            break;
        case RG_DECLINED:
            break;
        default:
            rc = RG_ERROR;
        }
    }

    rg_buf_free(&b);

    return rc;
}


/* m's piece of a request in the llm's format, copied and scrubbed as its
 * message is */
static rg_int_t
rg_session_wire(rg_session_t *s, rg_msg_t *m, const char *p, size_t len)
{
    m->wire = rg_pstrdup(s->pool, p ? p : "", len);
    if (m->wire == NULL) {
        return RG_ERROR;
    }

    m->wire_len = (uint32_t) rg_secret_scrub(m->wire, len);
    m->wire[m->wire_len] = '\0';
    m->wire_fmt = (uint8_t) (s->llm->format + 1);

    return RG_OK;
}


void
rg_session_finish(rg_session_t *s, rg_session_state_e state,
    const char *fmt, ...)
{
    char     buf[1024];
    va_list  args;

    if (rg_session_final(s)) {
        return;
    }

    rg_session_set_state(s, state);
    s->ended = rg_monotonic_msec();

    if (fmt) {
        va_start(args, fmt);
        vsnprintf(buf, sizeof(buf), fmt, args);
        va_end(args);
        rg_secret_scrub_str(buf);      /* a provider may quote the key */
        s->reason = rg_pstrdup(s->pool, buf, strlen(buf));
    }

    rg_session_trace_end(s);

    rg_llm_cancel(&s->req);

    if (s->turn) {
        rg_tools_turn_destroy(s->turn);
        s->turn = NULL;
    }

    rg_turn_cancel_lookups(s);
    rg_tenant_cancel(s);

    rg_turn_drop_args(s);

    if (s->deadline_set) {
        event_del(s->deadline_ev);
        s->deadline_set = 0;
    }

    /* the body is not needed any more; give its memory back now */
    rg_buf_free(&s->body);

    if (s->answers == 0) {
        rg_log_error(state == RG_SESSION_DONE ? RG_LOG_INFO : RG_LOG_NOTICE,
                     &s->log, 0, "session %s before any answer from the "
                     "model, %llums%s%s", rg_session_state_name(state),
                     (unsigned long long) (s->ended - s->started),
                     s->reason ? ": " : "", s->reason ? s->reason : "");
    } else {
        rg_log_error(state == RG_SESSION_DONE ? RG_LOG_INFO : RG_LOG_NOTICE,
                     &s->log, 0, "session %s after %lu round%s, %lu tool "
                     "call%s, %llums%s%s", rg_session_state_name(state),
                     (unsigned long) s->round, s->round == 1 ? "" : "s",
                     (unsigned long) s->tool_calls,
                     s->tool_calls == 1 ? "" : "s",
                     (unsigned long long) (s->ended - s->started),
                     s->reason ? ": " : "", s->reason ? s->reason : "");
    }

    /* the final status goes to the store first; the owner hears of the
     * end once it is there */
    if (s->durable && !s->fenced) {
        rg_durable_final(s);     /* may destroy s: nothing after this */
        return;
    }

    rg_session_handler(s);       /* may destroy s: nothing after this */
}


void
rg_session_handler(rg_session_t *s)
{
    /* its end, once the store holds it */
    if (!s->handler_called) {
        rg_events_final(s);
    }

    if (s->handler && !s->handler_called) {
        s->handler_called = 1;
        s->handler(s);           /* may destroy s: nothing after this */
    }
}


rg_session_t *
rg_session_alloc(rg_engine_t *e, rg_agent_conf_t *agent, const char *id,
    size_t idlen, const char *task_id, rg_session_handler_pt handler,
    void *data)
{
    rg_pool_t     *pool;
    void          *obj;
    rg_store_t    *st;
    rg_session_t  *s;

    /* the session, its pool and what a few rounds keep (messages, ids,
     * counters: ~3 KiB) in one block of a size malloc has a class for */
    pool = rg_pool_create_with(RG_SESSION_POOL_SIZE, sizeof(rg_session_t),
                               &obj);
    if (pool == NULL) {
        return NULL;
    }

    s = obj;

    /* the agent with the tools this engine's providers offer now */
    agent = rg_agent_runtime(e, agent, pool);
    if (agent == NULL) {
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
    s->max_cost = agent->max_cost;
    s->deadline = agent->deadline;
    s->bytes_per_token = 4.0;
    s->created = rg_wall_msec();

    st = rg_store_ctx(e);
    s->durable = st && st->durable;

    if (s->durable && rg_durable_init(s) != RG_OK) {
        rg_pool_destroy(pool);
        return NULL;
    }

    rg_msgs_init(&s->msgs);

    if (id) {
        if (idlen == 0 || idlen >= sizeof(s->id)) {
            rg_pool_destroy(pool);
            return NULL;
        }
        memcpy(s->id, id, idlen);
        s->id[idlen] = '\0';

    } else {
        /* 128 random bits: ids of many processes on many machines, which
         * share one store, never collide */
        s->id[0] = 's';
        s->id[1] = '-';
        if (rg_random_hex(s->id + 2, 16) != RG_OK) {
            rg_pool_destroy(pool);
            return NULL;
        }
    }

    rg_agent_ctx(e)->seq++;

    rg_session_trace_init(s);

    if (task_id) {
        s->task_id = rg_pstrdup(pool, task_id, strlen(task_id));
    }

    s->log = *e->log;
    s->log.handler = rg_session_log_handler;
    s->log.data = s;

    if (agent->toolset.ntools) {
        s->tool_counts = rg_pcalloc(pool, agent->toolset.ntools
                                          * sizeof(rg_uint_t));
        if (s->tool_counts == NULL) {
            rg_pool_destroy(pool);
            return NULL;
        }
    }

    rg_llm_req_init(&s->req, rg_llm_upstream(e, s->llm), -1,
                    rg_session_model_handler, s, &s->log);

    s->req.lane = rg_llm_lane_acquire(s->req.up);

    rg_agent_ctx(e)->live++;
    rg_agent_ctx(e)->stats.sessions++;
    rg_metrics_session_state(-1, RG_SESSION_QUEUED);

    return s;
}


rg_session_t *
rg_session_create(rg_engine_t *e, rg_agent_conf_t *agent,
    const char *task_id, const char *input, size_t len,
    rg_session_handler_pt handler, void *data)
{
    return rg_session_create_id(e, agent, NULL, 0, task_id, input, len,
                                handler, data);
}


rg_session_t *
rg_session_create_id(rg_engine_t *e, rg_agent_conf_t *agent, const char *id,
    size_t idlen, const char *task_id, const char *input, size_t len,
    rg_session_handler_pt handler, void *data)
{
    rg_session_t  *s;

    s = rg_session_alloc(e, agent, id, idlen, task_id, handler, data);
    if (s == NULL) {
        return NULL;
    }

    /* the system message is the agent's, shared by all its sessions */
    if (agent->system_msg
        && rg_msgs_append(&s->msgs, s->pool, 's', agent->system_msg,
                          agent->system_msg_len, 0) != RG_OK)
    {
        rg_session_destroy(s);
        return NULL;
    }

    /* no input: the caller appends a conversation */
    if (input && rg_session_append_text(s, 'u', NULL, input, len) != RG_OK) {
        rg_session_destroy(s);
        return NULL;
    }

    return s;
}


void
rg_session_destroy(rg_session_t *s)
{
    if (s == NULL) {
        return;
    }

    rg_metrics_session_state((int) s->state, -1);
    rg_llm_cancel(&s->req);

    if (s->turn) {
        rg_tools_turn_destroy(s->turn);
    }

    rg_turn_cancel_lookups(s);
    rg_tenant_cancel(s);

    rg_turn_drop_args(s);
    rg_durable_stop(s);
    rg_lease_stop(s);

    if (s->deadline_set) {
        event_del(s->deadline_ev);
    }

    rg_llm_req_free(&s->req);
    rg_llm_lane_release(s->req.up, s->req.lane);
    rg_buf_free(&s->body);

    if (s->transcript) {
        json_decref(s->transcript);
    }

    rg_events_stop(s);

    rg_agent_ctx(s->engine)->live--;

    rg_pool_destroy(s->round_pool);
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


static void
rg_session_ask_next(rg_session_t *s)
{
    if (rg_session_ask(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED,
                          "could not start the model call (out of memory)");
    }
}


void
rg_session_continue(rg_session_t *s)
{
    rg_session_set_state(s, RG_SESSION_MODEL_WAIT);

    if (s->durable) {
        s->cp_partial = 0;
        rg_durable_checkpoint(s, rg_session_ask_next);
        return;
    }

    rg_session_ask_next(s);
}


rg_int_t
rg_session_arm_deadline(rg_session_t *s, rg_msec_t ms)
{
    struct timeval  tv;

    /* only a session with a deadline carries its event */
    if (s->deadline_ev == NULL) {
        s->deadline_ev = rg_palloc(s->pool, sizeof(struct event));
        if (s->deadline_ev == NULL) {
            return RG_ERROR;
        }

        evtimer_assign(s->deadline_ev, s->engine->base,
                       rg_session_deadline_handler, s);
    }

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    evtimer_add(s->deadline_ev, &tv);
    s->deadline_set = 1;

    return RG_OK;
}


static void
rg_session_leased(rg_session_t *s, rg_int_t rc, const char *why)
{
    if (rc == RG_OK) {
        s->cp_partial = 0;
        rg_durable_checkpoint(s, rg_session_ask_next);
        return;
    }

    /* another worker runs it: nothing is written here */
    s->fenced = (rc == RG_DECLINED);

    rg_session_finish(s, rc == RG_DECLINED ? RG_SESSION_CANCELLED
                                           : RG_SESSION_FAILED,
                      rc == RG_DECLINED ? "not run here: its lease is %s"
                                        : "its lease could not be taken "
                                          "within store_timeout: %s", why);
}


rg_int_t
rg_session_start(rg_session_t *s)
{
    s->started = rg_monotonic_msec();

    rg_log_debug(&s->log, "session started");

    if (s->deadline && rg_session_arm_deadline(s, s->deadline) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED,
                          "could not arm the deadline (out of memory)");
        return RG_ERROR;
    }

    /* this worker its one writer, and the store holds the task, before
     * the first model call */
    if (s->durable) {
        rg_lease_take(s, rg_session_leased);
        return RG_OK;
    }

    if (rg_session_ask(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED,
                          "could not start the model call (out of memory)");
        return RG_ERROR;
    }

    return RG_OK;
}


/* Another worker owns the session now: nothing more is written for it
 * here. One still running ends cancelled; one that had ended and waited
 * for its last checkpoint is handed to its handler as it is. */
void
rg_session_drop(rg_session_t *s, const char *why)
{
    s->fenced = 1;

    if (!rg_session_final(s)) {
        rg_session_finish(s, RG_SESSION_CANCELLED, "dropped by this worker: "
                          "%s", why);
        return;
    }

    rg_durable_stop(s);
    rg_lease_stop(s);
    rg_session_handler(s);
}


void
rg_session_cancel(rg_session_t *s, const char *reason)
{
    rg_session_finish(s, RG_SESSION_CANCELLED, "%s",
                      reason ? reason : "cancelled");
}


/* the prefix when the session differs from its agent: a fallback model,
 * or tools that reached their cap and are no longer offered */
rg_int_t
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

        tools[n++] = a->tool_texts[s->llm->format][i];
    }

    memset(&prefix, 0, sizeof(prefix));
    prefix.model = s->llm->model.data;
    prefix.temperature = a->temperature;
    prefix.temperature_set = a->temperature_set;
    prefix.stream = s->llm->stream ? 1 : 0;
    prefix.tools = tools;
    prefix.ntools = n;
    prefix.llm = s->llm;

    memset(&p, 0, sizeof(p));

    rc = rg_llm_prefix(s->llm->codec, &p, &prefix);

    if (rc == RG_OK) {
        s->prefix = rg_pstrdup(s->pool, p.data, p.len);
        s->prefix_len = p.len;
        rc = s->prefix ? RG_OK : RG_ERROR;
    }

    rg_buf_free(&p);

    return rc;
}


/* the session, s or one that delegated to it, whose max_tokens its
 * tokens (its children's included) have reached; NULL: none */
static rg_session_t *
rg_session_spent(rg_session_t *s)
{
    rg_session_t  *p;

    for (p = s; p; p = p->parent) {
        if (p->max_tokens
            && p->prompt_tokens + p->completion_tokens >= p->max_tokens)
        {
            return p;
        }
    }

    return NULL;
}


json_t *
rg_session_dollars(double cost)
{
    char  buf[48];

    snprintf(buf, sizeof(buf), "%.6f", cost > 0 ? cost : 0);

    return json_real(strtod(buf, NULL));
}


double
rg_session_next_cost(rg_session_t *s)
{
    double          in, out;
    rg_llm_conf_t  *llm;

    llm = s->llm;

    if (!llm->priced) {
        return 0;
    }

    in = (double) (s->prefix_len + s->msgs.bytes)
         / (s->bytes_per_token > 0 ? s->bytes_per_token : 4);
    out = s->model_calls ? (double) s->completion_tokens / s->model_calls
                         : 0;

    return (in * llm->price[RG_LLM_PRICE_INPUT]
            + out * llm->price[RG_LLM_PRICE_OUTPUT]) / 1e6;
}


/* the session, s or one that delegated to it, whose max_cost the next
 * call (about `next` dollars) would pass; NULL: none */
static rg_session_t *
rg_session_costly(rg_session_t *s, double next)
{
    rg_session_t  *p;

    for (p = s; p; p = p->parent) {
        if (p->max_cost > 0 && p->cost + next > p->max_cost) {
            return p;
        }
    }

    return NULL;
}


/* ends s at the budget of p (s or an ancestor); still: what it was
 * about to do */
static void
rg_session_budget_end(rg_session_t *s, rg_session_t *p, const char *still)
{
    if (p == s) {
        rg_session_finish(s, RG_SESSION_BUDGET_EXCEEDED, "used %lld of its "
                          "%lld tokens (max_tokens) after %lu rounds%s%s",
                          (long long) (s->prompt_tokens
                                       + s->completion_tokens),
                          (long long) s->max_tokens,
                          (unsigned long) s->round,
                          s->child_tokens ? ", its child agents' included"
                                          : "", still);
        return;
    }

    rg_session_finish(s, RG_SESSION_BUDGET_EXCEEDED, "the task's budget is "
                      "spent: agent \"%.*s\", which delegated to this one, "
                      "used %lld of its %lld tokens (max_tokens), this "
                      "agent's included, after %lu rounds here%s",
                      (int) p->agent->name.len, p->agent->name.data,
                      (long long) (p->prompt_tokens + p->completion_tokens),
                      (long long) p->max_tokens, (unsigned long) s->round,
                      still);
}


rg_pool_t *
rg_session_round_pool(rg_session_t *s)
{
    if (s->round_pool == NULL) {
        /* its first block comes with the answer, not while it is awaited */
        s->round_pool = rg_pool_create(2048);
    }

    return s->round_pool;
}


/* the last round's answer and calls go: a waiting session holds none */
static void
rg_session_round_free(rg_session_t *s)
{
    rg_dedupe_cancel(s);
    rg_turn_drop_args(s);

    s->calls = NULL;
    s->extra = NULL;
    s->ncalls = 0;

    rg_pool_destroy(s->round_pool);
    s->round_pool = NULL;
}


/* The request body: the prefix, then each message's piece in the
 * llm's format, made once per message and format (a message's own JSON
 * for Chat Completions) */
static rg_int_t
rg_session_body(rg_session_t *s)
{
    size_t                 more;
    rg_str_t               wire;
    rg_msg_t              *m;
    rg_llm_body_t          bd;
    rg_llm_conf_t         *llm;
    const rg_llm_codec_t  *codec;

    llm = s->llm;
    codec = llm->codec;
    more = 0;

    for (m = s->msgs.head; m; m = m->next) {
        if (m->wire_fmt != llm->format + 1) {
            if (rg_llm_wire(codec, s->pool, m->role, &m->json, &wire)
                != RG_OK)
            {
                return RG_ERROR;
            }

            m->wire = wire.data;
            m->wire_len = (uint32_t) wire.len;
            m->wire_fmt = (uint8_t) (llm->format + 1);
        }

        more += m->wire_len + codec->join;
    }

    if (rg_llm_body_start(&bd, codec, (rg_uint_t) llm->prompt_cache,
                          &s->body, s->prefix, s->prefix_len, more)
        != RG_OK)
    {
        return RG_ERROR;
    }

    for (m = s->msgs.head; m; m = m->next) {
        if (rg_llm_body_add(&bd, m->role, m->wire, m->wire_len)
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return rg_llm_body_end(&bd);
}


/* a piece of the model's text as it comes: an event "delta" for the
 * session's watcher, {"offset", "text"} (offset within this attempt:
 * a retry starts at 0 again) */
static void
rg_session_delta(void *data, size_t offset, const char *text, size_t len)
{
    json_t        *j;
    rg_session_t  *s;

    s = data;

    if (s->on_event == NULL) {
        return;
    }

    j = json_pack("{s:I, s:s#}", "offset", (json_int_t) offset, "text", text,
                  (int) len);
    if (j == NULL) {
        return;
    }

    s->on_event(s, "delta", j, s->on_event_data);
    json_decref(j);
}


rg_int_t
rg_session_ask(rg_session_t *s)
{
    char          *p;
    char           rid[sizeof(s->id) + RG_INT64_LEN + 16];
    size_t         budget, estimate;
    double         next;
    rg_pool_t     *pool;
    rg_session_t  *spent;

    spent = rg_session_spent(s);
    if (spent) {
        rg_session_budget_end(s, spent, "");
        return RG_OK;
    }

    /* money is stopped before it is spent: the call that would pass
     * max_cost is not made */
    if (s->max_cost > 0 || s->parent) {
        next = rg_session_next_cost(s);
        spent = rg_session_costly(s, next);

        if (spent) {
            rg_session_finish(s, RG_SESSION_BUDGET_EXCEEDED, "%s spent "
                              "$%.4f of its $%.4f (max_cost) after %lu "
                              "rounds, and the next model call (about "
                              "$%.4f) would pass it",
                              spent == s ? "the task" : "the agent that "
                              "delegated to this one", spent->cost,
                              spent->max_cost, (unsigned long) s->round,
                              next);
            return RG_OK;
        }
    }

    switch (rg_tenant_check(s)) {
    case RG_OK:
        break;
    case RG_AGAIN:
        rg_session_set_state(s, RG_SESSION_MODEL_WAIT);
        return RG_OK;                  /* asked again with the answer */
    default:
        return RG_ERROR;
    }

    /* a compaction after the provider refused the last request (its
     * context, its tokens-per-minute) may have made a summary call
     * ready: it goes first, and this is asked again with its answer */
    if (!(s->summarizing && s->body.len)) {
        rg_buf_reset(&s->body);

        /* would the next request overflow the context window? */
        if (s->agent->context_limit) {
            budget = (size_t) (s->agent->context_limit
                               * s->agent->context_threshold
                               * s->bytes_per_token);
            estimate = s->prefix_len + s->msgs.bytes;

            if (estimate > budget) {
                rg_session_context_compact(s, budget > s->prefix_len
                                              ? (budget - s->prefix_len)
                                                * 9 / 10
                                              : 0);
            }
        }
    }

    /* the summary's body is whole already (rg_session_context.c) */
    if (s->summarizing && s->body.len) {
        snprintf(rid, sizeof(rid), "%s-summary-%lu", s->id,
                 (unsigned long) s->round);
        goto send;
    }

    s->summarizing = 0;

    if (rg_session_body(s) != RG_OK) {
        return RG_ERROR;
    }

    /* "%s-%lu" */
    p = rg_cpystrn(rid, s->id, sizeof(s->id));
    *p++ = '-';
    p[rg_sprint_int(p, (int64_t) s->round + 1)] = '\0';

send:

    /* one buffer for every round: "call_" and the request id */
    if (s->call_prefix == NULL) {
        s->call_prefix = rg_palloc(s->pool, sizeof(rid) + 5);
        if (s->call_prefix == NULL) {
            return RG_ERROR;
        }
    }
    rg_cpystrn(rg_cpymem(s->call_prefix, "call_", 5), rid, sizeof(rid));

    rg_session_round_free(s);

    pool = rg_session_round_pool(s);
    if (pool == NULL) {
        return RG_ERROR;
    }

    rg_session_set_state(s, RG_SESSION_MODEL_WAIT);
    s->call_started = rg_monotonic_msec();
    s->req.max_calls = (rg_uint_t) s->agent->max_tool_calls;
    s->req.keep_body = s->transcript != NULL;

    rg_session_trace_chat(s);

    /* replayed: the request is checked, the recorded answer given */
    if (s->replay) {
        switch (rg_replay_ask(s)) {
        case RG_OK:
            break;
        case RG_DECLINED:
            return RG_OK;          /* s ended, and may be gone */
        default:
            return RG_ERROR;
        }
    }

    rg_events_model_started(s);

    /* the answer's text as it streams, for whoever watches (the
     * OpenAI-compatible face); a summary's is nobody's */
    s->req.delta = (s->on_event && !s->summarizing) ? rg_session_delta
                                                    : NULL;

    return rg_llm_send(&s->req, s->body.data, s->body.len, rid, pool,
                       s->call_prefix);
}


static rg_uint_t
rg_session_retryable(rg_llm_status_e st)
{
    return st == RG_LLM_ERR_RATE || st == RG_LLM_ERR_SERVER
           || st == RG_LLM_ERR_TIMEOUT || st == RG_LLM_ERR_CONNECT
           || st == RG_LLM_ERR_BAD_RESPONSE;
}


void
rg_session_use_llm(rg_session_t *s, rg_llm_conf_t *llm)
{
    rg_llm_req_free(&s->req);
    rg_llm_lane_release(s->req.up, s->req.lane);

    s->llm = llm;

    rg_llm_req_init(&s->req, rg_llm_upstream(s->engine, llm), -1,
                    rg_session_model_handler, s, &s->log);
    s->req.lane = rg_llm_lane_acquire(s->req.up);
}


static void
rg_session_use_fallback(rg_session_t *s)
{
    rg_llm_conf_t  *fb;

    fb = s->llm->fallback;

    rg_log_error(RG_LOG_WARN, &s->log, 0, "llm \"%.*s\" gave up; falling "
                 "back to llm \"%.*s\"", (int) s->llm->name.len,
                 s->llm->name.data, (int) fb->name.len, fb->name.data);

    rg_session_use_llm(s, fb);
    s->fallback_used = 1;

    if (rg_session_build_prefix(s) != RG_OK || rg_session_ask(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
    }
}


/* A 429 for a request larger than the provider's tokens-per-minute
 * limit: the same body can never pass, so it is not sent again. With
 * context management on (context_limit) it is compacted once first,
 * when that brings the estimate under the limit; with context_summarize
 * the summary of the rounds dropped is asked for before the retry, as
 * after a context overflow. */
static void
rg_session_over_rate(rg_session_t *s, rg_llm_response_t *resp,
    const char *st)
{
    size_t       target, before;
    const char  *why;

    if (!s->agent->context_limit) {
        why = " (context_limit lets reagent compact it first)";

    } else if (resp->rate_limit <= 0) {
        why = " (the provider did not say its limit, so it was not "
              "compacted to fit)";

    } else {
        why = " (compacting could not bring it under)";
    }

    if (s->agent->context_limit && resp->rate_limit > 0
        && !s->context_retried)
    {
        s->context_retried = 1;
        before = s->msgs.bytes;
        target = (size_t) ((double) resp->rate_limit * 0.9
                           * s->bytes_per_token);
        target = target > s->prefix_len ? target - s->prefix_len : 0;

        if (target > 0 && target < before) {
            rg_session_context_compact(s, target);
        }

        if (target > 0 && s->msgs.bytes <= target && s->msgs.bytes < before) {
            rg_log_error(RG_LOG_NOTICE, &s->log, 0, "the request is over "
                         "the provider's tokens-per-minute limit of %lld: "
                         "compacted from %lu to %lu bytes, retrying once%s",
                         (long long) resp->rate_limit,
                         (unsigned long) before,
                         (unsigned long) s->msgs.bytes,
                         s->summarizing ? " after the summary of the "
                                          "rounds dropped" : "");
            s->round--;
            if (rg_session_ask(s) != RG_OK) {
                rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
            }
            return;
        }

        /* the session ends: no summary of what it dropped is asked for */
        s->summarizing = 0;
        s->body.len = 0;
    }

    rg_session_finish(s, RG_SESSION_FAILED, "the request is larger than "
                      "the provider's tokens-per-minute limit, so it cannot "
                      "pass however long it waits; not retried%s (%s%s): "
                      "%.*s", why, rg_llm_status_name(resp->status), st,
                      (int) rg_min(resp->error.len, 600),
                      resp->error.data ? resp->error.data : "");
}


static void
rg_session_failed(rg_session_t *s, rg_llm_req_t *r, rg_llm_response_t *resp)
{
    char       st[32];
    rg_uint_t  again;

    again = s->context_retried;
    st[0] = '\0';
    if (r->http_status) {
        snprintf(st, sizeof(st), ", HTTP %ld", r->http_status);
    }

    if (resp->status == RG_LLM_ERR_CONTEXT && !s->context_retried) {
        size_t  before;

        /* compact hard and try once more */
        s->context_retried = 1;
        before = s->msgs.bytes;
        rg_session_context_compact(s, s->msgs.bytes / 2);

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

    if (resp->status == RG_LLM_ERR_OVER_RATE) {
        rg_session_over_rate(s, resp, st);
        return;
    }

    /* nothing more can go: say which knobs decide what stays */
    if (resp->status == RG_LLM_ERR_CONTEXT) {
        rg_session_finish(s, RG_SESSION_FAILED, "the conversation does not "
                          "fit the model's context window%s: the system "
                          "prompt, the task and the last %ld rounds "
                          "(keep_rounds) always stay; lower keep_rounds, or "
                          "set context_limit to the model's window so that "
                          "compaction starts before the provider refuses "
                          "(%s%s): %.*s",
                          again ? ", even after compacting once"
                                : ", and nothing more can be dropped",
                          (long) s->agent->keep_rounds,
                          rg_llm_status_name(resp->status), st,
                          (int) rg_min(resp->error.len, 600),
                          resp->error.data ? resp->error.data : "");
        return;
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


/* An answer that ended for a reason other than a plain stop, tool calls
 * or its length is no plain done: a filter's is "filtered", any other
 * one "failed"; both say the finish reason. True when it ended s. */
static rg_uint_t
rg_session_finish_in(const rg_str_t *f, const char **names, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (f->len == strlen(names[i])
            && memcmp(f->data, names[i], f->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


static rg_uint_t
rg_session_finish_unusual(rg_session_t *s, rg_llm_response_t *resp)
{
    rg_str_t  *f;

    f = &resp->finish_reason;

    if (f->len == 0
        || rg_session_finish_in(f, rg_session_finish_cut,
                                rg_nelems(rg_session_finish_cut)))
    {
        return 0;
    }

    if (rg_session_finish_in(f, rg_session_finish_ok,
                             rg_nelems(rg_session_finish_ok)))
    {
        return 0;
    }

    if (rg_session_finish_in(f, rg_session_finish_filtered,
                             rg_nelems(rg_session_finish_filtered)))
    {
        rg_session_finish(s, RG_SESSION_FILTERED, "the provider's content "
                          "filter stopped the answer (finish_reason "
                          "\"%.*s\")%s", (int) f->len, f->data,
                          resp->has_content
                          ? "; what came before it is the answer"
                          : "; no answer came");
        return 1;
    }

    rg_session_finish(s, RG_SESSION_FAILED, "the model's answer ended "
                      "with finish_reason \"%.*s\", not a plain stop%s",
                      (int) rg_min(f->len, 64), f->data,
                      resp->has_content ? "; what came is the answer"
                                        : "; no answer came");
    return 1;
}


static void
rg_session_model_handler(rg_llm_req_t *r, rg_llm_response_t *resp)
{
    rg_session_t  *s, *p, *spent;
    rg_msg_t      *m;

    s = r->data;

    rg_session_trace_chat_end(s, r, resp);

    s->model_calls++;
    rg_agent_ctx(s->engine)->stats.model_calls++;
    s->prompt_tokens += resp->prompt_tokens;
    s->completion_tokens += resp->completion_tokens;
    s->cached_tokens += resp->cached_tokens;
    s->cache_write_tokens += resp->cache_write_tokens;
    s->cost += resp->cost;
    rg_tenant_charge(s, resp->prompt_tokens + resp->completion_tokens,
                     resp->cost);

    /* the task's: every session that delegated to this one counts them */
    for (p = s->parent; p; p = p->parent) {
        p->model_calls++;
        p->child_model_calls++;
        p->prompt_tokens += resp->prompt_tokens;
        p->completion_tokens += resp->completion_tokens;
        p->cached_tokens += resp->cached_tokens;
        p->cache_write_tokens += resp->cache_write_tokens;
        p->cost += resp->cost;
        p->child_tokens += resp->prompt_tokens + resp->completion_tokens;
    }

    rg_agent_ctx(s->engine)->stats.prompt_tokens += resp->prompt_tokens;
    rg_agent_ctx(s->engine)->stats.completion_tokens += resp->completion_tokens;
    rg_agent_ctx(s->engine)->stats.cached_tokens += resp->cached_tokens;
    rg_agent_ctx(s->engine)->stats.cache_write_tokens +=
        resp->cache_write_tokens;
    rg_agent_ctx(s->engine)->stats.cost += resp->cost;

    rg_transcript_model_call(s, resp);
    rg_events_model_ended(s, resp);

    if (s->summarizing) {
        rg_session_context_summary(s, resp);
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

    /* the answer's pool goes with the next model call: what the session
     * keeps is copied (finish_reason only when it changes) */
    if (s->finish_reason.len != resp->finish_reason.len
        || (s->finish_reason.len
            && memcmp(s->finish_reason.data, resp->finish_reason.data,
                      s->finish_reason.len) != 0))
    {
        s->finish_reason.data = rg_pstrdup(s->pool,
                                           resp->finish_reason.data
                                           ? resp->finish_reason.data : "",
                                           resp->finish_reason.len);
        s->finish_reason.len = 0;
        if (s->finish_reason.data) {
            s->finish_reason.len = rg_secret_scrub(s->finish_reason.data,
                                                   resp->finish_reason.len);
            s->finish_reason.data[s->finish_reason.len] = '\0';
        }
    }

    if (rg_msgs_append(&s->msgs, s->pool, 'a', resp->message.data,
                       resp->message.len, 1) != RG_OK)
    {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    m = rg_msgs_last(&s->msgs);
    m->ncalls = (uint32_t) resp->ncalls;     /* at most RG_LLM_MAX_CALLS + 1 */

    /* the codec made its piece while it had the answer */
    if (resp->has_wire
        && rg_session_wire(s, m, resp->wire.data, resp->wire.len) != RG_OK)
    {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }
    s->answers++;

    /* a long turn the provider paused (Anthropic's pause_turn): sent
     * back as it is, the model goes on where it stopped */
    if (resp->ncalls == 0 && rg_str_eq(&resp->finish_reason, "pause_turn")) {
        if (s->round >= s->max_rounds) {
            rg_session_finish(s, RG_SESSION_MAX_ROUNDS, "stopped after %lu "
                              "rounds (max_rounds): the model paused its "
                              "turn (pause_turn) and had not finished",
                              (unsigned long) s->round);
            return;
        }

        rg_session_continue(s);
        return;
    }

    if (resp->ncalls == 0) {
        if (resp->has_content) {
            s->answer = resp->content;
        } else if (resp->refusal.len) {
            s->answer = resp->refusal;
        }

        /* scrubbed once here: results, the store, events and the API
         * all write this copy */
        if (s->answer.data) {
            s->answer.data = rg_pstrdup(s->pool, s->answer.data,
                                        s->answer.len);
            if (s->answer.data) {
                s->answer.len = rg_secret_scrub(s->answer.data,
                                                s->answer.len);
                s->answer.data[s->answer.len] = '\0';
            } else {
                s->answer.len = 0;
            }
        }

        if (rg_session_finish_unusual(s, resp)) {
            return;
        }

        if (rg_session_finish_in(&resp->finish_reason, rg_session_finish_cut,
                                 rg_nelems(rg_session_finish_cut)))
        {
            rg_session_finish(s, RG_SESSION_DONE, "the answer was cut off: "
                              "the model reached its output token limit "
                              "(finish_reason \"%.*s\")%s%s",
                              (int) resp->finish_reason.len,
                              resp->finish_reason.data,
                              resp->calls_cut
                              ? "; the tool calls it was writing were cut "
                                "too and were not run"
                              : "",
                              !resp->has_content
                              && (resp->reasoning.len || resp->nopaque)
                              ? "; it spent them on reasoning and gave no "
                                "answer (raise max_output_tokens)"
                              : "");
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
                          (unsigned long) rg_turn_asked(resp),
                          rg_turn_asked(resp) == 1 ? "" : "s",
                          (int) rg_min(resp->calls[0].name.len, 64),
                          resp->calls[0].name.data);
        return;
    }

    spent = rg_session_spent(s);
    if (spent) {
        rg_session_budget_end(s, spent, "; the model still asked for tools");
        return;
    }

    rg_turn_prepare(s, resp);
}
