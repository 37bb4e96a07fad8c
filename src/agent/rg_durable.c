/* rg_durable.c: a session's life in a store that outlives the process.
 *
 * The store holds, for session ID, a list of records ("{ID}:msgs",
 * append-only: nothing stored is ever rewritten) and a hash of meta
 * fields ("{ID}:meta": status, round, tokens, limits, timings…), written
 * together in one atomic step by each checkpoint: when it starts, after
 * each turn (the assistant message and all its tool results) before the
 * next model call, and when it ends. A record is a msgpack map (rg_codec):
 *
 *   m  a message        {k, r: role, j: its JSON, n: tool calls}
 *   i  a summary        {k, r, j}: inserted after the task
 *   s  a shortening     {k, q: the message's place, j: its new JSON}
 *   d  a drop           {k, q}: compaction removed that message
 *   g  a repeat guard   {k, g: name NUL arguments, q: round, t: result}
 *   w  its slide        {k, q: the guard's number, n: its new round}
 *
 * so that replaying the list gives the conversation as it stood, with
 * compaction's work, and resume sends the request an uninterrupted run
 * would have sent. A model call in flight when a process died is simply
 * sent again. The memory store is not durable: sessions on it write
 * nothing (as before). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session.h>
#include <rg_durable.h>
#include <rg_lease.h>
#include <rg_recover.h>
#include <rg_turn.h>
#include <rg_session_trace.h>
#include <rg_agent.h>
#include <rg_codec.h>
#include <rg_store.h>
#include <rg_store_conf.h>
#include <rg_llm_request.h>
#include <rg_secret.h>


#define RG_DURABLE_FIELDS   48        /* meta pairs at most */
#define RG_DURABLE_BACKOFF  200       /* ms, the first retry */


typedef struct {
    rg_str_t           *items;
    rg_uint_t           n;
    rg_uint_t           cap;
    rg_str_t            fields[2 * RG_DURABLE_FIELDS];
    rg_uint_t           nfields;
    char                nums[RG_DURABLE_FIELDS][32];
    rg_uint_t           nnums;
    char               *counts;       /* tool_counts as text */
    char                trace[RG_SESSION_TRACE_META + 1];
} rg_durable_batch_t;


static void rg_durable_done(void *data, const rg_store_res_t *res);
static void rg_durable_retry(evutil_socket_t fd, short what, void *arg);
static void rg_durable_fail(rg_session_t *s, const char *why);
static void rg_durable_waited(rg_session_t *s, rg_uint_t written);
static void rg_durable_final_done(rg_session_t *s);


static rg_int_t
rg_durable_push(rg_durable_batch_t *b, char *item, size_t len)
{
    rg_uint_t   cap;
    rg_str_t   *items;

    if (item == NULL) {
        return RG_ERROR;
    }

    if (b->n == b->cap) {
        cap = b->cap ? 2 * b->cap : 8;
        items = realloc(b->items, cap * sizeof(rg_str_t));
        if (items == NULL) {
            free(item);
            return RG_ERROR;
        }
        b->items = items;
        b->cap = cap;
    }

    b->items[b->n].data = item;
    b->items[b->n].len = len;
    b->n++;

    return RG_OK;
}


static void
rg_durable_batch_free(rg_durable_batch_t *b)
{
    rg_uint_t  i;

    for (i = 0; i < b->n; i++) {
        free(b->items[i].data);
    }

    free(b->items);
    free(b->counts);
}


static void
rg_durable_field(rg_durable_batch_t *b, const char *name, const char *v,
    size_t len)
{
    if (b->nfields == RG_DURABLE_FIELDS) {
        return;
    }

    b->fields[2 * b->nfields].data = (char *) name;
    b->fields[2 * b->nfields].len = strlen(name);
    b->fields[2 * b->nfields + 1].data = (char *) (v ? v : "");
    b->fields[2 * b->nfields + 1].len = v ? len : 0;
    b->nfields++;
}


static void
rg_durable_num(rg_durable_batch_t *b, const char *name, int64_t v)
{
    char  *p;

    if (b->nnums == RG_DURABLE_FIELDS) {
        return;
    }

    p = b->nums[b->nnums++];
    rg_durable_field(b, name, p, rg_sprint_int(p, v));
}


static rg_msec_t
rg_durable_elapsed(rg_session_t *s)
{
    return s->elapsed + (rg_monotonic_msec() - s->started);
}


/* the meta fields; a turn about to run its tools writes only what its
 * model answer changed, so that running the turn again after a resume
 * counts nothing twice */
static void
rg_durable_meta(rg_session_t *s, rg_durable_batch_t *b, rg_uint_t turn)
{
    char          *p;
    size_t         n;
    rg_uint_t      i;
    static double  bpt_value;
    static size_t  bpt_len;
    static char    bpt[32];

    rg_durable_field(b, "status", rg_session_state_name(s->state),
                     strlen(rg_session_state_name(s->state)));
    rg_durable_num(b, "round", (int64_t) s->round);
    rg_durable_num(b, "model_calls", (int64_t) s->model_calls);
    rg_durable_num(b, "prompt_tokens", s->prompt_tokens);
    rg_durable_num(b, "completion_tokens", s->completion_tokens);

    /* cache use and money, only once there is some */
    if (s->cached_tokens || s->cache_write_tokens || s->cost > 0) {
        rg_durable_num(b, "cached_tokens", s->cached_tokens);
        rg_durable_num(b, "cache_write_tokens", s->cache_write_tokens);
        rg_durable_num(b, "cost_micro", (int64_t) (s->cost * 1e6 + 0.5));
    }

    rg_durable_num(b, "updated", (int64_t) rg_wall_msec());
    rg_durable_num(b, "elapsed", (int64_t) rg_durable_elapsed(s));
    rg_durable_field(b, "worker", rg_agent_ctx(s->engine)->worker,
                     strlen(rg_agent_ctx(s->engine)->worker));

    /* "%.17g" costs thousands of instructions; most sessions write the
     * same estimate as the one before */
    if (bpt_len == 0 || s->bytes_per_token != bpt_value) {
        snprintf(bpt, sizeof(bpt), "%.17g", s->bytes_per_token);
        bpt_value = s->bytes_per_token;
        bpt_len = strlen(bpt);
    }
    rg_durable_field(b, "bpt", bpt, bpt_len);

    if (turn) {
        return;
    }

    rg_durable_field(b, "agent", s->agent->name.data, s->agent->name.len);
    rg_durable_field(b, "task", s->task_id, s->task_id ? strlen(s->task_id)
                                                       : 0);
    rg_durable_field(b, "llm", s->llm->name.data, s->llm->name.len);
    rg_durable_field(b, "tenant", s->tenant, s->tenant ? strlen(s->tenant)
                                                       : 0);
    rg_durable_num(b, "fallback", s->fallback_used);
    rg_durable_num(b, "tool_calls", (int64_t) s->tool_calls);
    rg_durable_num(b, "tool_errors", (int64_t) s->tool_errors);
    rg_durable_num(b, "dedupe_hits", (int64_t) s->dedupe_hits);
    rg_durable_num(b, "repeats", (int64_t) s->repeats);
    rg_durable_num(b, "summaries", (int64_t) s->summaries);
    rg_durable_num(b, "summary_round", (int64_t) s->summary_round);
    rg_durable_num(b, "max_rounds", (int64_t) s->max_rounds);
    rg_durable_num(b, "max_tokens", s->max_tokens);

    if (s->max_cost > 0) {
        rg_durable_num(b, "max_cost_micro", (int64_t) (s->max_cost * 1e6));
    }
    rg_durable_num(b, "deadline", (int64_t) s->deadline);
    rg_durable_num(b, "depth", (int64_t) s->depth);
    rg_durable_num(b, "created", (int64_t) s->created);

    /* a resume goes on with the same trace */
    n = rg_session_trace_meta(s, b->trace, sizeof(b->trace));
    if (n) {
        rg_durable_field(b, "trace", b->trace, n);
    }

    /* the calls of each tool so far, for tool_max_calls */
    n = s->agent->toolset.ntools;
    b->counts = malloc(n * 21 + 1);
    if (b->counts) {
        p = b->counts;
        for (i = 0; i < n; i++) {
            if (i) {
                *p++ = ',';
            }
            p += rg_sprint_int(p, (int64_t) s->tool_counts[i]);
        }
        *p = '\0';
        rg_durable_field(b, "tool_counts", b->counts, p - b->counts);
    }

    if (rg_session_final(s)) {
        rg_durable_field(b, "reason", s->reason,
                         s->reason ? strlen(s->reason) : 0);
        rg_durable_field(b, "answer", s->answer.data, s->answer.len);
        rg_durable_field(b, "finish_reason", s->finish_reason.data,
                         s->finish_reason.len);
    }
}


static char *
rg_durable_msg_record(rg_msg_t *m, size_t *len)
{
    rg_codec_writer_t  w;

    rg_codec_begin(&w, 4);
    rg_codec_str(&w, "k", m->inserted ? "i" : "m", 1);
    rg_codec_str(&w, "r", (const char *) &m->role, 1);
    rg_codec_str(&w, "j", m->json.data, m->json.len);
    rg_codec_int(&w, "n", m->ncalls);

    return rg_codec_end(&w, len);
}


/* what changed since the last checkpoint, as records, in order */
static rg_int_t
rg_durable_records(rg_session_t *s, rg_durable_batch_t *b,
    uint32_t *next_seq)
{
    char               *rec;
    size_t              len;
    uint32_t            seq;
    rg_uint_t           i;
    rg_msg_t           *m;
    rg_codec_writer_t   w;

    seq = (uint32_t) s->dur->stored;

    for (i = 0; i < s->dur->ndropped; i++) {
        rg_codec_begin(&w, 2);
        rg_codec_str(&w, "k", "d", 1);
        rg_codec_int(&w, "q", s->dur->dropped[i]);
        rec = rg_codec_end(&w, &len);
        if (rg_durable_push(b, rec, len) != RG_OK) {
            return RG_ERROR;
        }
        seq++;
    }

    for (m = s->msgs.head; m; m = m->next) {
        if (m->seq == 0) {
            rec = rg_durable_msg_record(m, &len);
            if (rg_durable_push(b, rec, len) != RG_OK) {
                return RG_ERROR;
            }
            seq++;
            continue;
        }

        if (m->shortened && !m->short_stored) {
            rg_codec_begin(&w, 3);
            rg_codec_str(&w, "k", "s", 1);
            rg_codec_int(&w, "q", m->seq);
            rg_codec_str(&w, "j", m->json.data, m->json.len);
            rec = rg_codec_end(&w, &len);
            if (rg_durable_push(b, rec, len) != RG_OK) {
                return RG_ERROR;
            }
            seq++;
        }
    }

    for (i = 0; i < s->nsigs; i++) {
        if (s->sigs[i].stored_round == 0) {
            rg_codec_begin(&w, 4);
            rg_codec_str(&w, "k", "g", 1);
            rg_codec_str(&w, "g", s->sigs[i].sig, s->sigs[i].len);
            rg_codec_int(&w, "q", (int64_t) s->sigs[i].round);
            rg_codec_str(&w, "t", s->sigs[i].result.data,
                         s->sigs[i].result.len);

        } else if (s->sigs[i].stored_round != s->sigs[i].round) {
            rg_codec_begin(&w, 3);
            rg_codec_str(&w, "k", "w", 1);
            rg_codec_int(&w, "q", (int64_t) i + 1);
            rg_codec_int(&w, "n", (int64_t) s->sigs[i].round);

        } else {
            continue;
        }

        rec = rg_codec_end(&w, &len);
        if (rg_durable_push(b, rec, len) != RG_OK) {
            return RG_ERROR;
        }
        seq++;
    }

    *next_seq = seq;

    return RG_OK;
}


/* the store took them: the session now knows what it holds */
static void
rg_durable_commit(rg_session_t *s)
{
    uint32_t    seq;
    rg_uint_t   i;
    rg_msg_t   *m;

    seq = (uint32_t) s->dur->stored + (uint32_t) s->dur->ndropped;
    s->dur->ndropped = 0;

    for (m = s->msgs.head; m; m = m->next) {
        if (m->seq == 0) {
            m->seq = ++seq;
            m->short_stored = m->shortened;
            continue;
        }

        if (m->shortened && !m->short_stored) {
            m->short_stored = 1;
            seq++;
        }
    }

    for (i = 0; i < s->nsigs; i++) {
        if (s->sigs[i].stored_round != s->sigs[i].round) {
            s->sigs[i].stored_round = s->sigs[i].round;
            seq++;
        }
    }

    s->dur->stored = seq;
    s->dur->rec_full = 0;
}


/* one attempt: the records and fields of now */
static void
rg_durable_send(rg_session_t *s)
{
    uint32_t                seq;
    rg_store_t             *st;
    rg_durable_batch_t      b;
    rg_store_checkpoint_t   cp;

    st = rg_store_ctx(s->engine);
    memset(&b, 0, sizeof(b));

    if (rg_durable_records(s, &b, &seq) != RG_OK) {
        rg_durable_batch_free(&b);
        goto failed;
    }

    rg_durable_meta(s, &b, s->cp_partial && !s->dur->rec_full);

    memset(&cp, 0, sizeof(cp));
    cp.id.data = s->id;
    cp.id.len = strlen(s->id);
    cp.lease = s->lease;
    cp.base = s->dur->stored;
    cp.msgs = b.items;
    cp.nmsgs = b.n;
    cp.fields = b.fields;
    cp.nfields = b.nfields;
    cp.ttl = rg_store_session_ttl(s->engine);
    /* the final status lets the lease go in the same step */
    cp.release = s->dur->cp_next == rg_durable_final_done;

    rg_agent_ctx(s->engine)->checkpoints++;

    /* the store copies what it sends */
    s->dur->cp_op = st->checkpoint(st, &cp, rg_durable_done, s);
    rg_durable_batch_free(&b);

    if (s->dur->cp_op) {
        return;
    }

failed:

    rg_durable_fail(s, "out of memory writing the session's checkpoint");
}


/* the checkpoint cannot be written: a live session ends failed; one
 * that had ended (this was its final status) tells its owner all the
 * same, with the status it has, for nothing else will */
static void
rg_durable_fail(rg_session_t *s, const char *why)
{
    if (!rg_session_final(s)) {
        rg_session_finish(s, RG_SESSION_FAILED, "%s", why);
        return;
    }

    rg_log_error(RG_LOG_ERR, &s->log, 0, "the session %s, but its final "
                 "status was not written to the store: %s",
                 rg_session_state_name(s->state), why);
    rg_session_drop(s, why);     /* may destroy s */
}


static void
rg_durable_done(void *data, const rg_store_res_t *res)
{
    char            why[512];
    rg_msec_t       wait, timeout;
    rg_session_t   *s;
    struct timeval  tv;
    void          (*next)(rg_session_t *s);
    void          (*written)(rg_session_t *s);

    s = data;
    s->dur->cp_op = NULL;

    if (res->rc == RG_OK) {
        if (s->dur->cp_failing) {
            rg_log_error(RG_LOG_INFO, &s->log, 0, "checkpoint written "
                         "after %lu attempts",
                         (unsigned long) s->dur->cp_attempts + 1);
        }

        rg_durable_waited(s, 1);
        s->dur->cp_attempts = 0;
        rg_durable_commit(s);

        next = s->dur->cp_next;
        s->dur->cp_next = NULL;
        written = s->dur->rec_done;

        if (written) {
            /* the session is back in a store that lost it */
            s->dur->rec_done = NULL;
            s->dur->recovering = 0;
            written(s);
        }

        next(s);
        return;
    }

    if (res->rc == RG_DECLINED && res->err
        && strncmp(res->err, "lost", 4) == 0 && s->lease)
    {
        /* nobody took it over: the store forgot it; written back, then
         * this checkpoint goes on (cp_next is kept) */
        rg_durable_waited(s, 0);
        rg_recover_session(s);
        if (s->dur->recovering) {
            return;
        }
    }

    if (res->rc == RG_DECLINED) {
        /* another worker has it now ("fenced"), or wrote it behind our
         * back ("diverged"): this one writes nothing more and lets go */
        snprintf(why, sizeof(why), "%s", res->err ? res->err : "refused");
        rg_log_error(RG_LOG_WARN, &s->log, 0, "the store refused the "
                     "session's checkpoint (%s): dropping it here", why);
        rg_durable_waited(s, 0);
        rg_session_drop(s, why);
        return;
    }

    /* the store is away: wait for it, up to store_timeout */
    if (s->dur->cp_failing == 0) {
        s->dur->cp_failing = rg_monotonic_msec();
        rg_agent_ctx(s->engine)->cp_waiting++;
    }

    timeout = rg_store_timeout(s->engine);

    if (rg_monotonic_msec() - s->dur->cp_failing >= timeout) {
        snprintf(why, sizeof(why), "the store did not take the session's "
                 "checkpoint for %.3gs (store_timeout): %s",
                 (double) timeout / 1000, res->err ? res->err : "no answer");
        s->fenced = 1;        /* the final status cannot be written either */
        rg_durable_waited(s, 0);
        rg_durable_fail(s, why);
        return;
    }

    s->dur->cp_attempts++;
    rg_agent_ctx(s->engine)->checkpoint_retries++;

    wait = RG_DURABLE_BACKOFF;
    while (wait < 5000
           && wait < ((rg_msec_t) 1 << rg_min(s->dur->cp_attempts, 20))
                                 * RG_DURABLE_BACKOFF)
    {
        wait *= 2;
    }
    wait = rg_min(wait, 5000);

    if (s->dur->cp_attempts == 1) {
        rg_log_error(RG_LOG_INFO, &s->log, 0, "checkpoint not written (%s); "
                     "waiting for the store", res->err ? res->err : "");
    }

    tv.tv_sec = wait / 1000;
    tv.tv_usec = (wait % 1000) * 1000;
    evtimer_assign(&s->dur->cp_retry, s->engine->base, rg_durable_retry, s);
    evtimer_add(&s->dur->cp_retry, &tv);
    s->cp_retry_set = 1;
}


/* the session waits for the store no more; the last of an outage to
 * stop waiting says, for all of them, that it is over: one line per
 * outage, not one per session */
static void
rg_durable_waited(rg_session_t *s, rg_uint_t written)
{
    rg_msec_t        wait;
    rg_agent_ctx_t  *ctx;

    if (s->dur->cp_failing == 0) {
        return;
    }

    ctx = rg_agent_ctx(s->engine);
    wait = rg_monotonic_msec() - s->dur->cp_failing;
    s->dur->cp_failing = 0;

    ctx->cp_waiting--;

    if (written) {
        ctx->cp_waited++;
        ctx->cp_wait_max = rg_max(ctx->cp_wait_max, wait);
    }

    if (ctx->cp_waiting || ctx->cp_waited == 0) {
        return;
    }

    rg_log_error(RG_LOG_NOTICE, s->engine->log, 0, "the store took the "
                 "checkpoints again: %lu session%s waited for it, up to "
                 "%.3gs", (unsigned long) ctx->cp_waited,
                 ctx->cp_waited == 1 ? "" : "s",
                 (double) ctx->cp_wait_max / 1000);

    ctx->cp_waited = 0;
    ctx->cp_wait_max = 0;
}


static void
rg_durable_retry(evutil_socket_t fd, short what, void *arg)
{
    rg_session_t  *s;

    s = arg;
    s->cp_retry_set = 0;

    /* the same base: a checkpoint whose answer was lost but that was
     * applied is recognised by the store and not appended twice */
    rg_durable_send(s);
}


rg_int_t
rg_durable_init(rg_session_t *s)
{
    if (s->dur == NULL) {
        s->dur = rg_pcalloc(s->pool, sizeof(rg_session_durable_t));
    }

    return s->dur ? RG_OK : RG_ERROR;
}


void
rg_durable_checkpoint(rg_session_t *s, rg_durable_next_pt next)
{
    if (rg_durable_init(s) != RG_OK) {
        rg_durable_fail(s, "out of memory writing the session's checkpoint");
        return;
    }

    if (s->dur->recovering) {
        s->dur->cp_after = next;     /* once the session is written back */
        return;
    }

    s->dur->cp_next = next;
    rg_durable_waited(s, 0);
    s->dur->cp_attempts = 0;

    rg_durable_send(s);
}


static void
rg_durable_nothing(rg_session_t *s)
{
}


void
rg_durable_rewrite(rg_session_t *s, rg_durable_next_pt written)
{
    rg_store_t  *st;

    s->dur->rec_done = written;

    /* a checkpoint in flight or waiting to be asked again is written by
     * this one, which holds everything: one operation in flight at a
     * time, the one a session's end cancels */
    if (s->dur->cp_op) {
        st = rg_store_ctx(s->engine);
        st->cancel(st, s->dur->cp_op);
        s->dur->cp_op = NULL;
    }

    if (s->cp_retry_set) {
        event_del(&s->dur->cp_retry);
        s->cp_retry_set = 0;
    }

    if (s->dur->cp_next == NULL) {
        s->dur->cp_next = rg_durable_nothing;
    }

    s->dur->cp_attempts = 0;
    rg_durable_send(s);
}


void
rg_durable_stop(rg_session_t *s)
{
    rg_store_t  *st;

    if (s->dur == NULL) {
        return;
    }

    rg_recover_stop(s);
    s->dur->rec_done = NULL;

    if (s->dur->cp_op) {
        st = rg_store_ctx(s->engine);
        st->cancel(st, s->dur->cp_op);
        s->dur->cp_op = NULL;
    }

    if (s->cp_retry_set) {
        event_del(&s->dur->cp_retry);
        s->cp_retry_set = 0;
    }

    rg_durable_waited(s, 0);
    s->dur->cp_next = NULL;
}


/* the checkpoint let the lease go (cp.release): only the heartbeat
 * stops here */
static void
rg_durable_final_done(rg_session_t *s)
{
    rg_lease_stop(s);
    rg_session_handler(s);       /* may destroy s */
}


void
rg_durable_final(rg_session_t *s)
{
    rg_durable_stop(s);

    if (s->dur && s->dur->lease_next) {
        rg_lease_stop(s);        /* it ended before it was leased */
    }

    if (s->fenced) {
        rg_lease_stop(s);
        rg_session_handler(s);
        return;
    }

    s->cp_partial = 0;
    rg_durable_checkpoint(s, rg_durable_final_done);
}


void
rg_durable_dropped(rg_session_t *s, uint32_t seq)
{
    rg_uint_t   cap;
    uint32_t   *d;

    if (!s->durable) {
        return;
    }

    if (s->dur->ndropped == s->dur->dropped_cap) {
        cap = s->dur->dropped_cap ? 2 * s->dur->dropped_cap : 16;
        d = rg_palloc(s->pool, cap * sizeof(uint32_t));
        if (d == NULL) {
            return;
        }
        if (s->dur->ndropped) {
            memcpy(d, s->dur->dropped, s->dur->ndropped * sizeof(uint32_t));
        }
        s->dur->dropped = d;
        s->dur->dropped_cap = cap;
    }

    s->dur->dropped[s->dur->ndropped++] = seq;
}


/* resume ------------------------------------------------------------ */

typedef struct {
    uint8_t             role;
    char               *text;
    size_t              len;
} rg_durable_msg_in_t;


typedef struct {
    rg_session_t         *s;
    char                 *input;
    size_t                len;
    rg_durable_msg_in_t  *msgs;     /* a task's conversation, or NULL */
    size_t                nmsgs;
    rg_store_op_t        *op;
    struct event          retry;    /* the read, asked again */
    unsigned              retry_set:1;
    unsigned              checked:1;  /* read again after the epoch */
    uint64_t              epoch_read; /* the epoch read that tells */
} rg_durable_open_t;


static void rg_durable_load(rg_durable_open_t *o);
static void rg_durable_checked(evutil_socket_t fd, short what, void *arg);
static void rg_durable_reload(evutil_socket_t fd, short what, void *arg);


static const rg_str_t *
rg_durable_meta_get(const rg_store_res_t *res, const char *name)
{
    size_t     len;
    rg_uint_t  i;

    len = strlen(name);

    for (i = 0; i < res->nfields; i++) {
        if (res->fields[2 * i].len == len
            && memcmp(res->fields[2 * i].data, name, len) == 0)
        {
            return &res->fields[2 * i + 1];
        }
    }

    return NULL;
}


static int64_t
rg_durable_meta_int(const rg_store_res_t *res, const char *name)
{
    char             buf[32];
    const rg_str_t  *v;

    v = rg_durable_meta_get(res, name);
    if (v == NULL || v->len == 0 || v->len >= sizeof(buf)) {
        return 0;
    }

    memcpy(buf, v->data, v->len);
    buf[v->len] = '\0';

    return strtoll(buf, NULL, 10);
}


static char *
rg_durable_meta_str(rg_session_t *s, const rg_store_res_t *res,
    const char *name)
{
    const rg_str_t  *v;

    v = rg_durable_meta_get(res, name);

    return v && v->len ? rg_pstrdup(s->pool, v->data, v->len) : NULL;
}


/* the conversation from the records, as it stood at the last checkpoint */
static rg_int_t
rg_durable_replay(rg_session_t *s, const rg_store_res_t *res, char *err,
    size_t errlen)
{
    int64_t             q, n;
    rg_str_t            k, r, j, g, t;
    rg_uint_t           i;
    rg_msg_t          **map, *m, **pp;
    rg_codec_reader_t   rd;
    rg_session_sig_t   *sig;

    map = rg_pcalloc(s->pool, (res->nitems + 1) * sizeof(rg_msg_t *));
    if (map == NULL && res->nitems) {
        return RG_ERROR;
    }

    for (i = 0; i < res->nitems; i++) {
        if (rg_codec_read(&rd, res->items[i].data, res->items[i].len)
                != RG_OK
            || rg_codec_get_str(&rd, "k", &k) != RG_OK || k.len != 1)
        {
            rg_codec_done(&rd);
            snprintf(err, errlen, "record %lu of the session is not one "
                     "reagent wrote", (unsigned long) i + 1);
            return RG_ERROR;
        }

        switch (k.data[0]) {

        case 'm':
        case 'i':
            if (rg_codec_get_str(&rd, "r", &r) != RG_OK || r.len != 1
                || rg_codec_get_str(&rd, "j", &j) != RG_OK)
            {
                goto bad;
            }

            m = rg_pcalloc(s->pool, sizeof(rg_msg_t));
            if (m == NULL) {
                goto nomem;
            }

            m->role = (uint8_t) r.data[0];
            m->json.data = rg_pstrdup(s->pool, j.data, j.len);
            m->json.len = j.len;
            m->seq = (uint32_t) i + 1;
            if (rg_codec_get_int(&rd, "n", &n) == RG_OK && n > 0) {
                m->ncalls = (uint32_t) n;
            }

            if (m->json.data == NULL) {
                goto nomem;
            }

            if (k.data[0] == 'i') {
                m->inserted = 1;
                rg_context_insert_after_task(&s->msgs, m);
            } else {
                *s->msgs.last = m;
                s->msgs.last = &m->next;
                s->msgs.n++;
                s->msgs.bytes += m->json.len;
            }

            map[i + 1] = m;
            break;

        case 's':
            if (rg_codec_get_int(&rd, "q", &q) != RG_OK || q < 1
                || (size_t) q > i || map[q] == NULL
                || rg_codec_get_str(&rd, "j", &j) != RG_OK)
            {
                goto bad;
            }

            m = map[q];
            s->msgs.bytes -= m->json.len;
            m->json.data = rg_pstrdup(s->pool, j.data, j.len);
            m->json.len = j.len;
            m->wire_fmt = 0;
            m->shortened = 1;
            m->short_stored = 1;
            s->msgs.bytes += m->json.len;

            if (m->json.data == NULL) {
                goto nomem;
            }
            break;

        case 'd':
            if (rg_codec_get_int(&rd, "q", &q) != RG_OK || q < 1
                || (size_t) q > i || map[q] == NULL)
            {
                goto bad;
            }

            for (pp = &s->msgs.head; *pp; pp = &(*pp)->next) {
                if (*pp == map[q]) {
                    *pp = map[q]->next;
                    if (s->msgs.last == &map[q]->next) {
                        s->msgs.last = pp;
                    }
                    s->msgs.n--;
                    s->msgs.bytes -= map[q]->json.len;
                    break;
                }
            }

            map[q] = NULL;
            break;

        case 'g':
            if (rg_codec_get_str(&rd, "g", &g) != RG_OK
                || rg_codec_get_int(&rd, "q", &q) != RG_OK
                || rg_codec_get_str(&rd, "t", &t) != RG_OK)
            {
                goto bad;
            }

            if (s->nsigs == s->sigs_cap) {
                rg_session_sig_t  *a;

                s->sigs_cap = s->sigs_cap ? 2 * s->sigs_cap : 8;
                a = rg_palloc(s->pool, s->sigs_cap * sizeof(*a));
                if (a == NULL) {
                    goto nomem;
                }
                if (s->nsigs) {
                    memcpy(a, s->sigs, s->nsigs * sizeof(*a));
                }
                s->sigs = a;
            }

            sig = &s->sigs[s->nsigs];
            sig->sig = rg_pstrdup(s->pool, g.data, g.len);
            sig->len = g.len;
            sig->round = (rg_uint_t) q;
            sig->stored_round = (rg_uint_t) q;
            sig->result.data = rg_pstrdup(s->pool, t.data, t.len);
            sig->result.len = t.len;

            if (sig->sig == NULL || sig->result.data == NULL) {
                goto nomem;
            }

            s->nsigs++;
            break;

        case 'w':
            if (rg_codec_get_int(&rd, "q", &q) != RG_OK || q < 1
                || (rg_uint_t) q > s->nsigs
                || rg_codec_get_int(&rd, "n", &n) != RG_OK)
            {
                goto bad;
            }

            s->sigs[q - 1].round = (rg_uint_t) n;
            s->sigs[q - 1].stored_round = (rg_uint_t) n;
            break;

        default:
            goto bad;
        }

        rg_codec_done(&rd);
    }

    if (rg_durable_init(s) != RG_OK) {
        goto nomem;
    }

    s->dur->stored = res->nitems;

    return RG_OK;

bad:

    rg_codec_done(&rd);
    snprintf(err, errlen, "record %lu of the session (\"%.*s\") is not one "
             "reagent can read", (unsigned long) i + 1, (int) k.len,
             k.data);
    return RG_ERROR;

nomem:

    rg_codec_done(&rd);
    snprintf(err, errlen, "out of memory");
    return RG_ERROR;
}


static void
rg_durable_counts(rg_session_t *s, const rg_str_t *v)
{
    char       *p, *end, buf[4096];
    rg_uint_t   i;

    if (v == NULL || v->len == 0 || v->len >= sizeof(buf)) {
        return;
    }

    memcpy(buf, v->data, v->len);
    buf[v->len] = '\0';
    p = buf;

    for (i = 0; i < s->agent->toolset.ntools && *p; i++) {
        s->tool_counts[i] = strtoul(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
}


/* the session is rebuilt: it goes on from where it stood */
static void
rg_durable_go_on(rg_session_t *s)
{
    rg_msg_t           *last;
    rg_llm_response_t   resp;

    if (s->deadline) {
        if (s->elapsed >= s->deadline) {
            rg_session_finish(s, RG_SESSION_DEADLINE_EXCEEDED, "the task ran "
                              "past its deadline of %.3gs before it was "
                              "resumed", (double) s->deadline / 1000);
            return;
        }

        if (rg_session_arm_deadline(s, s->deadline - s->elapsed) != RG_OK) {
            rg_session_finish(s, RG_SESSION_FAILED, "could not arm the "
                              "deadline (out of memory)");
            return;
        }
    }

    for (last = s->msgs.head; last && last->next; last = last->next) {
        /* the last message */
    }

    /* an answer whose calls had not all come back: the turn runs again
     * (side effects answer from their claims, never twice) */
    if (last && last->role == 'a' && last->ncalls) {
        memset(&resp, 0, sizeof(resp));

        if (rg_llm_message_calls(s->pool, last->json.data, last->json.len,
                                 (rg_uint_t) s->agent->max_tool_calls,
                                 &resp) != RG_OK)
        {
            rg_session_finish(s, RG_SESSION_FAILED, "the stored answer's "
                              "tool calls cannot be read again");
            return;
        }

        rg_log_error(RG_LOG_NOTICE, &s->log, 0, "resumed in round %lu: its "
                     "%lu tool calls run again", (unsigned long) s->round,
                     (unsigned long) resp.ncalls);

        rg_turn_prepare(s, &resp);
        return;
    }

    rg_log_error(RG_LOG_NOTICE, &s->log, 0, "resumed after round %lu",
                 (unsigned long) s->round);

    if (rg_session_ask(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED,
                          "could not start the model call (out of memory)");
    }
}


/* a resumed session goes on once this worker is its one writer */
static void
rg_durable_leased(rg_session_t *s, rg_int_t rc, const char *why)
{
    if (rc == RG_OK) {
        rg_durable_go_on(s);
        return;
    }

    s->fenced = (rc == RG_DECLINED);

    rg_session_finish(s, rc == RG_DECLINED ? RG_SESSION_CANCELLED
                                           : RG_SESSION_FAILED,
                      rc == RG_DECLINED ? "not resumed here: its lease is %s"
                                        : "its lease could not be taken "
                                          "within store_timeout: %s", why);
}


static void
rg_durable_loaded(void *data, const rg_store_res_t *res)
{
    char                err[256];
    size_t              i;
    rg_session_t       *s;
    rg_llm_conf_t      *llm;
    const rg_str_t     *v;
    rg_durable_open_t  *o;
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

            evtimer_assign(&o->retry, s->engine->base, rg_durable_reload, o);
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
             * read answered (it may go on another connection, or after
             * one under way), so a store that forgot it is known before
             * the second answer */
            o->checked = 1;
            if (rg_store_ctx(s->engine)->check) {
                o->epoch_read = rg_store_ctx(s->engine)->check(
                                                rg_store_ctx(s->engine));
            }
            rg_durable_checked(0, 0, o);
            return;
        }

        if (s->taken_over
            && rg_store_ctx(s->engine)->epoch.losses != s->taken_losses)
        {
            /* no lease of it is held: nothing of it is written but its
             * owner's result */
            s->fenced = 1;
            s->taken_unknown = 1;
            rg_session_finish(s, RG_SESSION_FAILED, "outcome unknown: the "
                              "store lost its memory after this task was "
                              "taken over from a worker that ran it; its "
                              "session and claims are gone, so whether its "
                              "side effects ran is unknown: it is not run "
                              "again");
            return;
        }

        /* a new one */
        if (s->agent->system_msg
            && rg_msgs_append(&s->msgs, s->pool, 's', s->agent->system_msg,
                              s->agent->system_msg_len, 0) != RG_OK)
        {
            goto nomem;
        }

        /* the task's conversation, or its one user message */
        for (i = 0; i < o->nmsgs; i++) {
            if (rg_session_append_text(s, o->msgs[i].role, NULL,
                                       o->msgs[i].text, o->msgs[i].len)
                != RG_OK)
            {
                goto nomem;
            }
        }

        if (o->nmsgs == 0
            && rg_session_append_text(s, 'u', NULL, o->input, o->len)
               != RG_OK)
        {
            goto nomem;
        }

        rg_session_start(s);
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

    if (rg_durable_replay(s, res, err, sizeof(err)) != RG_OK) {
        s->fenced = 1;
        rg_session_finish(s, RG_SESSION_FAILED, "cannot resume: %s", err);
        return;
    }

    s->round = (rg_uint_t) rg_durable_meta_int(res, "round");
    s->model_calls = (rg_uint_t) rg_durable_meta_int(res, "model_calls");
    s->tool_calls = (rg_uint_t) rg_durable_meta_int(res, "tool_calls");
    s->tool_errors = (rg_uint_t) rg_durable_meta_int(res, "tool_errors");
    s->dedupe_hits = (rg_uint_t) rg_durable_meta_int(res, "dedupe_hits");
    s->repeats = (rg_uint_t) rg_durable_meta_int(res, "repeats");
    s->summaries = (rg_uint_t) rg_durable_meta_int(res, "summaries");
    s->summary_round = (rg_uint_t) rg_durable_meta_int(res, "summary_round");
    s->prompt_tokens = rg_durable_meta_int(res, "prompt_tokens");
    s->completion_tokens = rg_durable_meta_int(res, "completion_tokens");
    s->cached_tokens = rg_durable_meta_int(res, "cached_tokens");
    s->cache_write_tokens = rg_durable_meta_int(res, "cache_write_tokens");
    s->cost = (double) rg_durable_meta_int(res, "cost_micro") / 1e6;
    s->max_cost = (double) rg_durable_meta_int(res, "max_cost_micro") / 1e6;
    s->max_rounds = (rg_uint_t) rg_durable_meta_int(res, "max_rounds");
    s->max_tokens = rg_durable_meta_int(res, "max_tokens");
    s->deadline = (rg_msec_t) rg_durable_meta_int(res, "deadline");
    s->depth = (rg_uint_t) rg_durable_meta_int(res, "depth");
    s->created = (rg_msec_t) rg_durable_meta_int(res, "created");
    s->elapsed = (rg_msec_t) rg_durable_meta_int(res, "elapsed");
    s->task_id = rg_durable_meta_str(s, res, "task");
    s->tenant = rg_durable_meta_str(s, res, "tenant");
    rg_durable_counts(s, rg_durable_meta_get(res, "tool_counts"));

    v = rg_durable_meta_get(res, "trace");
    if (v) {
        rg_session_trace_resume(s, v->data, v->len);
    }

    v = rg_durable_meta_get(res, "bpt");
    if (v && v->len && v->len < 32) {
        char  buf[32];

        memcpy(buf, v->data, v->len);
        buf[v->len] = '\0';
        s->bytes_per_token = strtod(buf, NULL);
        if (!(s->bytes_per_token > 0)) {
            s->bytes_per_token = 4.0;
        }
    }

    if (s->max_rounds == 0) {
        s->max_rounds = (rg_uint_t) s->agent->max_rounds;
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
        s->reason = rg_secret_scrub_str(rg_durable_meta_str(s, res,
                                                            "reason"));
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

    rg_session_set_state(s, RG_SESSION_MODEL_WAIT);
    rg_lease_take(s, rg_durable_leased);
    return;

nomem:

    rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
}


static void
rg_durable_open_cleanup(void *data)
{
    rg_durable_open_t  *o;

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
}


static void
rg_durable_reload(evutil_socket_t fd, short what, void *arg)
{
    rg_durable_open_t  *o;

    o = arg;
    o->retry_set = 0;

    rg_durable_load(o);
}


/* the epoch read asked for a taken-over session answered: its record
 * is read again (asked again every 20 ms, up to store_timeout) */
static void
rg_durable_checked(evutil_socket_t fd, short what, void *arg)
{
    rg_durable_open_t  *o;
    struct timeval      tv = { 0, 20 * 1000 };

    o = arg;
    o->retry_set = 0;

    if (rg_store_ctx(o->s->engine)->epoch.answered < o->epoch_read
        && rg_monotonic_msec() - o->s->started
           < rg_store_timeout(o->s->engine))
    {
        evtimer_assign(&o->retry, o->s->engine->base, rg_durable_checked, o);
        if (evtimer_add(&o->retry, &tv) == 0) {
            o->retry_set = 1;
            return;
        }
    }

    rg_durable_load(o);
}


static void
rg_durable_load(rg_durable_open_t *o)
{
    rg_str_t     sid;
    rg_store_t  *st;

    st = rg_store_ctx(o->s->engine);

    sid.data = o->s->id;
    sid.len = strlen(o->s->id);

    o->op = st->load(st, &sid, rg_durable_loaded, o);
    if (o->op == NULL) {
        rg_session_finish(o->s, RG_SESSION_FAILED, "out of memory");
    }
}


/* a task's messages, copied: the task is gone when the store answers */
static rg_int_t
rg_durable_open_msgs(rg_durable_open_t *o, json_t *messages)
{
    size_t                i;
    json_t               *m, *content;
    const char           *role;
    rg_durable_msg_in_t  *in;

    o->msgs = rg_pcalloc(o->s->pool, (json_array_size(messages) + 1)
                                     * sizeof(rg_durable_msg_in_t));
    if (o->msgs == NULL) {
        return RG_ERROR;
    }

    json_array_foreach(messages, i, m) {
        role = json_string_value(json_object_get(m, "role"));
        content = json_object_get(m, "content");

        if (role == NULL || !json_is_string(content)) {
            return RG_ERROR;           /* rg_task_parse let none through */
        }

        in = &o->msgs[o->nmsgs];
        in->role = rg_session_role(role);
        in->len = json_string_length(content);
        in->text = rg_pstrdup(o->s->pool, json_string_value(content),
                              in->len);
        if (in->text == NULL) {
            return RG_ERROR;
        }

        o->nmsgs++;
    }

    return RG_OK;
}


rg_session_t *
rg_session_open(rg_engine_t *e, rg_agent_conf_t *agent, const char *id,
    size_t idlen, const char *task_id, const char *input, size_t len,
    json_t *messages, rg_session_handler_pt handler, void *data)
{
    rg_str_t            sid;
    rg_store_t         *st;
    rg_session_t       *s;
    rg_durable_open_t  *o;

    s = rg_session_alloc(e, agent, id, idlen, task_id, handler, data);
    if (s == NULL) {
        return NULL;
    }

    st = rg_store_ctx(e);

    o = rg_pcalloc(s->pool, sizeof(rg_durable_open_t));
    if (o == NULL) {
        rg_session_destroy(s);
        return NULL;
    }

    o->s = s;

    if (input) {
        o->input = rg_pstrdup(s->pool, input, len);
        o->len = len;
        if (o->input == NULL
            || (messages && rg_durable_open_msgs(o, messages) != RG_OK))
        {
            rg_session_destroy(s);
            return NULL;
        }
    }

    /* the load is cancelled when the session goes before its answer */
    if (rg_pool_cleanup_add(s->pool, rg_durable_open_cleanup, o) == NULL) {
        rg_session_destroy(s);
        return NULL;
    }

    s->started = rg_monotonic_msec();

    sid.data = s->id;
    sid.len = strlen(s->id);

    o->op = st->load(st, &sid, rg_durable_loaded, o);
    if (o->op == NULL) {
        rg_session_destroy(s);
        return NULL;
    }

    return s;
}
