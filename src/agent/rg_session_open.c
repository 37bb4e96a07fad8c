/* rg_session_open.c: a session made. rg_session_open() gives a new one
 * (the agent's system message, then the task or its conversation), or,
 * opened `stored`, reads it from the store first: a session the store
 * holds is rebuilt from what its checkpoints wrote (rg_durable.c reads
 * them) and goes on where it stopped, from the table's first phase (its
 * lease: rg_session_phase.c); one the store does not hold starts afresh;
 * one that had ended is handed to its owner as it was. Also what an
 * owner sets before the start (rg_session_set_task). Runs no phase
 * itself. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_durable.h>
#include <rg_lease.h>
#include <rg_session_trace.h>
#include <rg_store_conf.h>
#include <rg_digest.h>
#include <rg_secret.h>


typedef struct {
    uint8_t             role;
    char               *text;
    size_t              len;
} rg_session_msg_in_t;


/* a session opened `stored`, while the store is read */
typedef struct {
    rg_session_t         *s;
    char                 *input;
    size_t                len;
    rg_session_msg_in_t  *msgs;     /* a task's conversation, or NULL */
    size_t                nmsgs;
    rg_store_op_t        *op;
    struct event          retry;    /* the read, asked again */
    unsigned              retry_set:1;
    unsigned              checked:1;  /* read again after the epoch */
    unsigned              check_set:1;
    struct event          check;    /* the epoch's read awaited */
    uint64_t              epoch_read; /* the epoch read that tells */
} rg_session_load_t;


static void rg_session_load(evutil_socket_t fd, short what, void *arg);
static void rg_session_checked(evutil_socket_t fd, short what, void *arg);


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


/* a session with no message yet, of the given id (NULL: a new one) */
static rg_session_t *
rg_session_alloc(rg_engine_t *e, rg_agent_conf_t *agent, const char *id,
    const char *task_id, rg_session_handler_pt handler, void *data)
{
    size_t         idlen;
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

    /* the pool is zeroed: the state is queued */
    s->engine = e;
    s->agent = agent;
    s->pool = pool;
    s->handler = handler;
    s->data = data;
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

    if (s->durable && rg_session_durable(s) != RG_OK) {
        rg_pool_destroy(pool);
        return NULL;
    }

    rg_msgs_init(&s->msgs);

    if (id) {
        idlen = strlen(id);
        if (idlen == 0 || idlen >= sizeof(s->id)) {
            rg_pool_destroy(pool);
            return NULL;
        }
        memcpy(s->id, id, idlen + 1);

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

    rg_session_use_llm(s, agent->llm);

    rg_agent_ctx(e)->live++;
    rg_agent_ctx(e)->stats.sessions++;
    rg_metrics_session_state(-1, RG_SESSION_QUEUED);

    return s;
}


/* a new one: the agent's system message, then input unless NULL */
static rg_session_t *
rg_session_new(rg_engine_t *e, rg_agent_conf_t *agent, const char *id,
    const char *task_id, const char *input, size_t len,
    rg_session_handler_pt handler, void *data)
{
    rg_session_t  *s;

    s = rg_session_alloc(e, agent, id, task_id, handler, data);
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


rg_session_t *
rg_session_create(rg_engine_t *e, rg_agent_conf_t *agent,
    const char *task_id, const char *input, size_t len,
    rg_session_handler_pt handler, void *data)
{
    return rg_session_new(e, agent, NULL, task_id, input, len, handler,
                          data);
}


/* a task's messages, in order: each {"role", "content": a string} */
static rg_int_t
rg_session_msgs_in(rg_pool_t *pool, json_t *messages,
    rg_session_msg_in_t **out, size_t *n)
{
    size_t                i;
    json_t               *m, *content;
    const char           *role;
    rg_session_msg_in_t  *in;

    *out = rg_pcalloc(pool, (json_array_size(messages) + 1)
                            * sizeof(rg_session_msg_in_t));
    if (*out == NULL) {
        return RG_ERROR;
    }

    *n = 0;

    json_array_foreach(messages, i, m) {
        role = json_string_value(json_object_get(m, "role"));
        content = json_object_get(m, "content");

        if (role == NULL || !json_is_string(content)) {
            return RG_ERROR;           /* rg_task_parse let none through */
        }

        in = &(*out)[*n];
        in->role = rg_session_role(role);
        in->len = json_string_length(content);
        in->text = (char *) json_string_value(content);
        (*n)++;
    }

    return RG_OK;
}


/* the store answered -------------------------------------------------- */

/* the store does not hold it: a new one, started now */
static rg_int_t
rg_session_fresh(rg_session_load_t *o)
{
    size_t         i;
    rg_session_t  *s;

    s = o->s;

    if (s->agent->system_msg
        && rg_msgs_append(&s->msgs, s->pool, 's', s->agent->system_msg,
                          s->agent->system_msg_len, 0) != RG_OK)
    {
        return RG_ERROR;
    }

    /* the task's conversation, or its one user message */
    for (i = 0; i < o->nmsgs; i++) {
        if (rg_session_append_text(s, o->msgs[i].role, NULL,
                                   o->msgs[i].text, o->msgs[i].len)
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    if (o->nmsgs == 0
        && rg_session_append_text(s, 'u', NULL, o->input, o->len) != RG_OK)
    {
        return RG_ERROR;
    }

    rg_session_start(s);

    return RG_OK;
}


static void
rg_session_loaded(void *data, const rg_store_res_t *res)
{
    char                err[256];
    rg_session_t       *s;
    rg_llm_conf_t      *llm;
    const rg_str_t     *v;
    rg_session_load_t  *o;
    rg_session_state_e  final;

    o = data;
    s = o->s;
    o->op = NULL;

    if (res->rc == RG_ERROR) {
        /* the store is away: a read is safe to ask again, up to
         * store_timeout, as a checkpoint is */
        if (rg_monotonic_msec() - s->started < rg_store_timeout(s->engine)) {
            struct timeval  tv = { 0, 500 * 1000 };

            rg_store_down(rg_store_ctx(s->engine), s->engine->log,
                          &rg_agent_ctx(s->engine)->load_said, "sessions "
                          "cannot be read from the store (%s): they wait "
                          "for it, up to store_timeout", res->err);

            if (evtimer_add(&o->retry, &tv) == 0) {
                o->retry_set = 1;
                return;
            }
        }

        s->fenced = 1;
        rg_session_finish(s, RG_SESSION_FAILED, "cannot read the session "
                          "from the store within store_timeout: %s",
                          res->err);
        return;
    }

    rg_store_up(rg_store_ctx(s->engine), s->engine->log, res);

    if (res->rc == RG_DECLINED) {
        if (o->input == NULL) {
            s->fenced = 1;
            rg_session_finish(s, RG_SESSION_FAILED, "no session \"%s\" in "
                              "the store (never there, or expired after "
                              "session_ttl)", s->id);
            return;
        }

        if (s->taken_over && !o->checked) {
            /* the epoch is read first, then the session again once that
             * read answered (it may take another connection, or wait
             * behind one under way), so a store that forgot it is known
             * before the second answer; the lease's take, refused
             * "gone", tells too (rg_phase_lease.c) */
            o->checked = 1;
            if (rg_store_ctx(s->engine)->check) {
                o->epoch_read = rg_store_ctx(s->engine)->check(
                                                rg_store_ctx(s->engine));
            }
            rg_session_checked(-1, EV_TIMEOUT, o);
            return;
        }

        if (s->taken_over
            && rg_store_ctx(s->engine)->epoch.losses != s->taken_losses)
        {
            rg_session_taken_unknown(s);
            return;
        }

        if (rg_session_fresh(o) != RG_OK) {
            goto nomem;
        }

        return;
    }

    v = rg_durable_meta_get(res, "agent");
    if (v == NULL || v->len != s->agent->name.len
        || memcmp(v->data, s->agent->name.data, v->len) != 0)
    {
        s->fenced = 1;
        rg_session_finish(s, RG_SESSION_FAILED, "the stored session is of "
                          "agent \"%.*s\", not \"%.*s\"",
                          v ? (int) v->len : 0, v ? v->data : "",
                          (int) s->agent->name.len, s->agent->name.data);
        return;
    }

    if (rg_durable_restore(s, res, err, sizeof(err)) != RG_OK) {
        s->fenced = 1;
        rg_session_finish(s, RG_SESSION_FAILED, "cannot resume: %s", err);
        return;
    }

    s->resumed = 1;
    rg_agent_ctx(s->engine)->resumed++;

    /* it had ended: that is its answer */
    v = rg_durable_meta_get(res, "status");
    final = v ? rg_session_final_state(v->data, v->len) : RG_SESSION_QUEUED;

    if (final != RG_SESSION_QUEUED) {
        rg_session_set_state(s, final);
        /* given again as it was kept: scrubbed, unless a reagent that
         * did not scrub kept it */
        v = rg_durable_meta_get(res, "reason");
        s->reason = v && v->len ? rg_pstrdup(s->pool, v->data, v->len)
                                : NULL;
        s->reason = rg_secret_scrub_str(s->reason);
        v = rg_durable_meta_get(res, "answer");
        if (v && v->len) {
            s->answer.data = rg_pstrdup(s->pool, v->data, v->len);
            if (s->answer.data) {
                s->answer.len = rg_secret_scrub(s->answer.data, v->len);
                s->answer.data[s->answer.len] = '\0';
            }
        }
        s->ended = rg_monotonic_msec();
        rg_session_handler(s);
        return;
    }

    /* a fallback it had turned to, and tools that reached their caps */
    v = rg_durable_meta_get(res, "llm");
    if (v && (v->len != s->llm->name.len
              || memcmp(v->data, s->llm->name.data, v->len) != 0))
    {
        llm = s->llm->fallback;
        if (llm && llm->name.len == v->len
            && memcmp(llm->name.data, v->data, v->len) == 0)
        {
            rg_session_use_llm(s, llm);
            s->fallback_used = 1;
        }
    }

    if (rg_session_build_prefix(s) != RG_OK) {
        goto nomem;
    }

    /* from the table's first phase: its lease, then where it stood */
    rg_session_set_state(s, RG_SESSION_MODEL_WAIT);
    rg_session_run_phases(s);
    return;

nomem:

    rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
}


static void
rg_session_load_cleanup(void *data)
{
    rg_session_load_t  *o;

    o = data;

    if (o->op) {
        rg_store_ctx(o->s->engine)->cancel(rg_store_ctx(o->s->engine),
                                           o->op);
        o->op = NULL;
    }

    if (o->retry_set) {
        evtimer_del(&o->retry);
        o->retry_set = 0;
    }

    if (o->check_set) {
        evtimer_del(&o->check);
        o->check_set = 0;
    }
}


/* the epoch read asked for a taken-over session answered: its record is
 * read again (asked again every 20 ms, up to store_timeout) */
static void
rg_session_checked(evutil_socket_t fd, short what, void *arg)
{
    rg_session_load_t  *o;
    struct timeval      tv = { 0, 20 * 1000 };

    o = arg;
    o->check_set = 0;

    if (rg_store_ctx(o->s->engine)->epoch.answered < o->epoch_read
        && rg_monotonic_msec() - o->s->started
           < rg_store_timeout(o->s->engine)
        && evtimer_add(&o->check, &tv) == 0)
    {
        o->check_set = 1;
        return;
    }

    rg_session_load(-1, EV_TIMEOUT, o);
}


/* the store is asked for the session: at its opening (what 0), and
 * again by the retry timer while it is away */
static void
rg_session_load(evutil_socket_t fd, short what, void *arg)
{
    rg_str_t            sid;
    rg_store_t         *st;
    rg_session_load_t  *o;

    o = arg;
    o->retry_set = 0;

    st = rg_store_ctx(o->s->engine);
    sid.data = o->s->id;
    sid.len = strlen(o->s->id);

    o->op = st->load(st, &sid, rg_session_loaded, o);

    if (o->op == NULL && what) {
        rg_session_finish(o->s, RG_SESSION_FAILED, "out of memory");
    }
}


/* the session opened `stored`: the store is read first */
static rg_session_t *
rg_session_open_stored(rg_engine_t *e, const rg_session_args_t *a)
{
    size_t              i;
    rg_session_t       *s;
    rg_session_load_t  *o;

    s = rg_session_alloc(e, a->agent, a->id, a->task_id, a->handler,
                         a->data);
    if (s == NULL) {
        return NULL;
    }

    o = rg_pcalloc(s->pool, sizeof(rg_session_load_t));
    if (o == NULL) {
        rg_session_destroy(s);
        return NULL;
    }

    o->s = s;
    evtimer_assign(&o->retry, e->base, rg_session_load, o);
    evtimer_assign(&o->check, e->base, rg_session_checked, o);

    /* a task's messages, copied: the task is gone when the store answers */
    if (a->input) {
        o->input = rg_pstrdup(s->pool, a->input, a->len);
        o->len = a->len;
        if (o->input == NULL
            || (a->messages
                && rg_session_msgs_in(s->pool, a->messages, &o->msgs,
                                      &o->nmsgs) != RG_OK))
        {
            rg_session_destroy(s);
            return NULL;
        }

        for (i = 0; i < o->nmsgs; i++) {
            o->msgs[i].text = rg_pstrdup(s->pool, o->msgs[i].text,
                                         o->msgs[i].len);
            if (o->msgs[i].text == NULL) {
                rg_session_destroy(s);
                return NULL;
            }
        }
    }

    /* the load is cancelled when the session goes before its answer */
    if (rg_pool_cleanup_add(s->pool, rg_session_load_cleanup, o) == NULL) {
        rg_session_destroy(s);
        return NULL;
    }

    s->started = rg_monotonic_msec();

    rg_session_load(-1, 0, o);
    if (o->op == NULL) {
        rg_session_destroy(s);
        return NULL;
    }

    return s;
}


rg_session_t *
rg_session_open(rg_engine_t *e, const rg_session_args_t *a)
{
    size_t                i, n;
    rg_session_t         *s;
    rg_session_msg_in_t  *in;

    if (a->stored) {
        return rg_session_open_stored(e, a);
    }

    s = rg_session_new(e, a->agent, a->id, a->task_id,
                       a->messages ? NULL : a->input, a->len, a->handler,
                       a->data);

    if (s == NULL || a->messages == NULL) {
        return s;
    }

    if (rg_session_msgs_in(s->pool, a->messages, &in, &n) != RG_OK) {
        rg_session_destroy(s);
        return NULL;
    }

    for (i = 0; i < n; i++) {
        if (rg_session_append_text(s, in[i].role, NULL, in[i].text,
                                   in[i].len)
            != RG_OK)
        {
            rg_session_destroy(s);
            return NULL;
        }
    }

    return s;
}


/* taken over, read as not in the store, and the store lost its memory
 * since its entry was read: its record and claims may be what it lost.
 * Nothing of it is written but its owner's result (a lease just taken
 * is let expire) */
void
rg_session_taken_unknown(rg_session_t *s)
{
    rg_lease_stop(s);

    s->fenced = 1;
    s->taken_unknown = 1;
    rg_session_finish(s, RG_SESSION_FAILED, "outcome unknown: the store "
                      "lost its memory after this task was taken over from "
                      "a worker that ran it; its session and claims are "
                      "gone, so whether its side effects ran is unknown: it "
                      "is not run again");
}


void
rg_session_set_task(rg_session_t *s, const rg_session_task_t *t)
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
