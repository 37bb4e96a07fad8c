/* rg_recover.c: a session written back into a store that lost its memory
 * (Redis restarted without its data, or was emptied). The session in
 * this process is whole: its messages, its repeat guard, its counters,
 * the calls of the turn in flight. The store is told all of it again, as
 * if nothing had been stored: a new lease (the fencing counter starts
 * again from the server's clock, above every token handed out before,
 * so a paused worker's old token stays refused), the claims and results
 * of the turn's side effects, then one checkpoint of every record and
 * every meta field from the first message. Its owner is told once the
 * store holds it (serve queues the task again: the queue forgot it too).
 *
 * What starts it: a fenced write answered "lost" (the store holds
 * neither the lease nor the fencing counter: nobody took the session
 * over, it was forgotten) or a renewal answered "gone" (serve renews
 * every lease at once when the store's epoch changed: rg_serve_lost.c),
 * which rg_durable.c, rg_lease.c and the phase claim hand on through
 * rg_session_lost() (rg_session_end.c). Only the store's own answer
 * about this session starts it: an epoch read wrong cannot make a
 * session write itself twice. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_recover.h>
#include <rg_durable.h>
#include <rg_lease.h>
#include <rg_claim.h>
#include <rg_store_conf.h>


static void rg_recover_ask(rg_session_t *s);


static void
rg_recover_timer(evutil_socket_t fd, short what, void *arg)
{
    rg_session_t  *s;

    s = arg;
    s->dur->rec_set = 0;

    rg_recover_ask(s);
}


/* the store holds the session again (rg_durable.c, once the rewrite is
 * answered) */
/* one session fewer being written back; the last of a wave says, for
 * all of them, how many and how long: one line, not one per session */
static void
rg_recover_ended(rg_session_t *s, rg_uint_t written)
{
    rg_agent_ctx_t  *ctx;

    ctx = rg_agent_ctx(s->engine);

    if (ctx->recovering) {
        ctx->recovering--;
    }

    if (written) {
        ctx->recovered++;
        ctx->rec_batch++;
    }

    if (ctx->recovering || ctx->rec_batch == 0) {
        return;
    }

    rg_log_error(RG_LOG_NOTICE, s->engine->log, 0, "%lu session%s the store "
                 "had lost %s written back into it from this process's "
                 "memory, in %.3gs", (unsigned long) ctx->rec_batch,
                 ctx->rec_batch == 1 ? "" : "s",
                 ctx->rec_batch == 1 ? "was" : "were",
                 (double) (rg_monotonic_msec() - ctx->rec_first) / 1000);

    ctx->rec_batch = 0;
}


static void
rg_recover_written(rg_session_t *s)
{
    rg_durable_next_pt  next;

    rg_recover_ended(s, 1);

    rg_log_error(RG_LOG_INFO, &s->log, 0, "the session was written back "
                 "into the store (%lu messages, after %.3gs) under a new "
                 "lease", (unsigned long) s->msgs.n,
                 (double) (rg_monotonic_msec() - s->dur->rec_since) / 1000);

    if (s->recovered && !rg_session_final(s)) {
        s->recovered(s);
    }

    /* a checkpoint asked for meanwhile goes now */
    next = s->dur->cp_after;
    if (next) {
        s->dur->cp_after = NULL;
        rg_durable_checkpoint(s, next);
    }
}


static void
rg_recover_leased(void *data, const rg_store_res_t *res)
{
    char           why[200];
    rg_msec_t      timeout;
    rg_session_t  *s;
    struct timeval tv;

    s = data;
    s->dur->rec_op = NULL;

    if (res->rc == RG_OK) {
        s->lease = res->num;
        rg_lease_resume(s);

        /* before anything else is written under the new token */
        rg_claim_again(s);

        rg_durable_rewrite(s, rg_recover_written);
        return;
    }

    if (res->rc == RG_DECLINED && !rg_store_gone(res)) {
        /* another worker took it up meanwhile (its task was queued
         * again): it runs it now */
        snprintf(why, sizeof(why), "the store lost the session and another "
                 "worker took it up before this one wrote it back (%s %.*s)",
                 res->err ? res->err : "held by",
                 (int) rg_min(res->value.len, 120),
                 res->value.len ? res->value.data : "");
        s->dur->recovering = 0;
        rg_recover_ended(s, 0);
        rg_log_error(RG_LOG_WARN, &s->log, 0, "%s: dropping it here", why);
        rg_session_drop(s, why);
        return;
    }

    timeout = rg_store_timeout(s->engine);

    if (rg_monotonic_msec() - s->dur->rec_since >= timeout) {
        snprintf(why, sizeof(why), "lost: the store lost the session and "
                 "did not take it back within %.3gs (store_timeout): %s",
                 (double) timeout / 1000, res->err ? res->err : "no answer");
        s->dur->recovering = 0;
        rg_recover_ended(s, 0);
        s->fenced = 1;           /* nothing can be written for it */
        rg_session_finish(s, RG_SESSION_FAILED, "%s", why);
        return;
    }

    tv.tv_sec = 0;
    tv.tv_usec = 500 * 1000;
    evtimer_assign(&s->dur->rec_ev, s->engine->base, rg_recover_timer, s);
    if (evtimer_add(&s->dur->rec_ev, &tv) == 0) {
        s->dur->rec_set = 1;
    }
}


static void
rg_recover_ask(rg_session_t *s)
{
    rg_str_t     id, holder;
    rg_store_t  *st;
    const char  *w;

    st = rg_store_ctx(s->engine);
    w = rg_agent_ctx(s->engine)->worker;

    id.data = s->id;
    id.len = strlen(s->id);
    holder.data = (char *) w;
    holder.len = strlen(w);

    s->dur->rec_op = st->lease(st, &id, &holder, 0,
                               rg_store_lease_ttl(s->engine),
                               rg_recover_leased, s);
    if (s->dur->rec_op == NULL) {
        s->dur->recovering = 0;
        rg_recover_ended(s, 0);
        s->fenced = 1;
        rg_session_finish(s, RG_SESSION_FAILED, "lost: the store lost the "
                          "session, and it could not be written back: out "
                          "of memory");
    }
}


void
rg_recover_session(rg_session_t *s)
{
    rg_uint_t        i;
    rg_msg_t        *m;
    rg_agent_ctx_t  *ctx;

    /* nothing stored yet (its lease is being taken), or not ours */
    if (!s->durable || s->dur == NULL || s->lease == 0 || s->fenced
        || s->handler_called || s->dur->recovering)
    {
        return;
    }

    /* its answer says "lost" and leads back here */
    if (s->dur->cp_op) {
        return;
    }

    s->dur->recovering = 1;
    s->dur->rec_since = rg_monotonic_msec();

    ctx = rg_agent_ctx(s->engine);
    if (ctx->recovering++ == 0 && ctx->rec_batch == 0) {
        ctx->rec_first = s->dur->rec_since;
    }

    rg_log_error(RG_LOG_INFO, &s->log, 0, "the store lost the session (its "
                 "lease and fencing counter are gone): writing it back "
                 "from this process's memory");

    /* no heartbeat of the old token; the new one renews itself */
    rg_lease_stop(s);

    /* as if nothing had been stored: every record is written again */
    for (m = s->msgs.head; m; m = m->next) {
        m->seq = 0;
        m->short_stored = 0;
    }

    for (i = 0; i < s->nsigs; i++) {
        s->sigs[i].stored_round = 0;
    }

    s->dur->stored = 0;
    s->dur->ndropped = 0;
    s->dur->rec_full = 1;

    rg_recover_ask(s);
}


void
rg_recover_stop(rg_session_t *s)
{
    if (s->dur == NULL) {
        return;
    }

    if (s->dur->recovering) {
        rg_recover_ended(s, 0);
    }

    rg_session_store_cancel(s, &s->dur->rec_op);

    if (s->dur->rec_set) {
        event_del(&s->dur->rec_ev);
        s->dur->rec_set = 0;
    }

    s->dur->recovering = 0;
    s->dur->cp_after = NULL;
}
