/* rg_session.c: a session's data, what every phase shares: its
 * messages (each serialized once when appended, and once per wire
 * format), its state's names, the calls of the round in flight and their
 * pool, the request's prefix, the money the next call will cost, its
 * llm, its deadline, and the face's accessors (rg_session.h). Knows no
 * phase and no service: the driver, the phases and the end are
 * rg_session_phase.c's, the rg_phase_*.c files' and rg_session_end.c's;
 * a session is made by rg_session_open.c. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_llm_request.h>
#include <rg_store_conf.h>
#include <rg_tool_args.h>
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


rg_int_t
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


rg_pool_t *
rg_session_round_pool(rg_session_t *s)
{
    if (s->round_pool == NULL) {
        /* its first block comes with the answer, not while it is awaited */
        s->round_pool = rg_pool_create(2048);
    }

    return s->round_pool;
}


/* A call's key among its session's calls, "<round>:<id>": the provider's
 * ids are unique within an answer (the parser sees to it) but not always
 * across rounds (some send call_0 every time), and a side effect's claim
 * and idempotency key must not be an earlier round's. Empty without
 * memory (the id serves then). */
static rg_str_t
rg_session_call_key(rg_session_t *s, rg_pool_t *pool, const rg_str_t *id)
{
    char      *p;
    rg_str_t   key;

    key.len = 0;
    key.data = rg_palloc(pool, RG_INT64_LEN + 1 + id->len + 1);

    if (key.data != NULL) {
        p = key.data + rg_sprint_int(key.data, (int64_t) s->round);
        *p++ = ':';
        if (id->len) {
            p = rg_cpymem(p, id->data, id->len);
        }
        *p = '\0';
        key.len = (size_t) (p - key.data);
    }

    return key;
}


rg_int_t
rg_session_take_calls(rg_session_t *s, rg_llm_response_t *resp)
{
    rg_uint_t           i;
    rg_pool_t          *pool;
    rg_tool_request_t  *c;

    /* the turn's scratch lives as long as the answer (the round pool) */
    pool = rg_session_round_pool(s);
    if (pool == NULL) {
        return RG_ERROR;
    }

    s->calls = rg_pcalloc(pool, resp->ncalls * sizeof(rg_tool_request_t));
    s->extra = rg_pcalloc(pool, resp->ncalls * sizeof(rg_session_call_t));
    if (s->calls == NULL || s->extra == NULL) {
        return RG_ERROR;
    }

    s->ncalls = resp->ncalls;
    s->calls_over = resp->calls_over;

    for (i = 0; i < resp->ncalls; i++) {
        c = &s->calls[i];
        c->id = resp->calls[i].id;
        c->key = rg_session_call_key(s, pool, &c->id);
        c->name = resp->calls[i].name;
        c->arguments = resp->calls[i].arguments;

        s->extra[i].tool = -1;
        s->extra[i].twin = -1;
    }

    return RG_OK;
}


void
rg_session_seen(rg_tool_run_t *run, size_t limit, rg_buf_t *b,
    const char **text, size_t *len)
{
    *text = run->result ? run->result : "";
    *len = run->result ? run->result_len : 0;

    rg_buf_reset(b);

    if (*len > limit) {
        rg_tool_trim(*text, *len, limit, b);
        *text = b->data ? b->data : "";
        *len = b->data ? b->len : 0;
    }
}


rg_uint_t
rg_session_asked(rg_llm_response_t *resp)
{
    return resp->calls_over ? resp->ncalls - 1 + resp->calls_over
                            : resp->ncalls;
}


rg_int_t
rg_session_preset(rg_session_t *s, rg_tool_request_t *c, rg_uint_t failed,
    const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    c->preset.data = rg_pvsprintf(s->pool, &c->preset.len, fmt, args);
    va_end(args);

    if (c->preset.data == NULL) {
        return RG_ERROR;
    }

    c->has_preset = 1;
    c->preset_failed = failed;

    return RG_OK;
}


void
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


/* the request of its model calls: its handler is the ask phase's, set
 * with each call */
void
rg_session_use_llm(rg_session_t *s, rg_llm_conf_t *llm)
{
    if (s->llm) {
        rg_llm_req_free(&s->req);
        rg_llm_lane_release(s->req.up, s->req.lane);
    }

    s->llm = llm;

    rg_llm_req_init(&s->req, rg_llm_upstream(s->engine, llm), -1, NULL, s,
                    &s->log);
    s->req.lane = rg_llm_lane_acquire(s->req.up);
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


void
rg_session_store_cancel(rg_session_t *s, rg_store_op_t **op)
{
    rg_store_t  *st;

    if (*op) {
        st = rg_store_ctx(s->engine);
        st->cancel(st, *op);
        *op = NULL;
    }
}


rg_int_t
rg_session_durable(rg_session_t *s)
{
    if (s->dur == NULL) {
        s->dur = rg_pcalloc(s->pool, sizeof(rg_session_durable_t));
    }

    return s->dur ? RG_OK : RG_ERROR;
}


/* the face ------------------------------------------------------------ */

const char *
rg_session_id(rg_session_t *s)
{
    return s->id;
}


void *
rg_session_data(rg_session_t *s)
{
    return s->data;
}


rg_session_state_e
rg_session_state(rg_session_t *s)
{
    return s->state;
}


rg_uint_t
rg_session_parked(rg_session_t *s)
{
    return s->parked;
}


rg_uint_t
rg_session_fenced(rg_session_t *s)
{
    return s->fenced;
}


void
rg_session_outcome(rg_session_t *s, rg_session_outcome_t *o)
{
    *o = (rg_session_outcome_t) {
        .state = s->state,
        .status = rg_session_state_name(s->state),
        .reason = s->reason,
        .answer = s->answer,
        .finish_reason = s->finish_reason,
        .rounds = s->round,
        .answers = s->answers,
        .ms = s->elapsed + s->ended - s->started,
        .model_calls = s->model_calls,
        .tool_calls = s->tool_calls,
        .tool_errors = s->tool_errors,
        .prompt_tokens = s->prompt_tokens,
        .completion_tokens = s->completion_tokens,
        .run_ms = s->ended - s->started,
        .cost = s->cost,
        .cached_tokens = s->cached_tokens,
        .cache_write_tokens = s->cache_write_tokens,
        .park_deadline = s->park_deadline,
        .durable = s->durable,
        .priced = s->llm->priced ? 1 : 0,
        .parked = s->parked,
        .resumed = s->resumed,
        .fenced = s->fenced,
        .taken_unknown = s->taken_unknown
    };
}


void
rg_session_set_park(rg_session_t *s, const char *line, size_t len)
{
    s->park = 1;
    s->park_task.data = rg_pstrdup(s->pool, line, len);
    s->park_task.len = s->park_task.data ? len : 0;
}


void
rg_session_on_recovered(rg_session_t *s, rg_session_handler_pt h)
{
    s->recovered = h;
}


void
rg_session_set_read(rg_session_t *s, uint64_t losses, rg_uint_t taken_over)
{
    s->taken_over = taken_over ? 1 : 0;
    s->taken_losses = losses;
}


void
rg_session_on_event(rg_session_t *s, rg_session_event_pt h, void *data)
{
    s->on_event = h;
    s->on_event_data = data;
}


void
rg_session_set_slot(rg_session_t *s, rg_uint_t slot)
{
    s->slot = slot;
}


rg_uint_t
rg_session_slot(rg_session_t *s)
{
    return s->slot;
}
