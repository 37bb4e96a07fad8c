/* rg_lease.c: one writer per session. A durable session runs only while
 * its worker holds the session's lease ("{ID}:lease": a fencing token
 * from INCR and the holder, expiring after lease_ttl); a heartbeat renews
 * it every third of that. Every checkpoint and side-effect claim carries
 * the token, and the store refuses those of a token that is no longer
 * the lease's ("fenced"). A worker whose renewal comes back "lost"
 * (paused, partitioned, too slow: another worker took the session over)
 * writes nothing more for it, drops it and says so; the other worker
 * finishes it. A lease that expired while the store was away and that
 * nobody took meanwhile is still its holder's (the fence still holds its
 * token): the session goes on when the store is back. Without a durable
 * store there is nothing to lease. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_lease.h>
#include <rg_store_conf.h>


static void rg_lease_taken(void *data, const rg_store_res_t *res);
static void rg_lease_renewed(void *data, const rg_store_res_t *res);


static rg_str_t
rg_lease_holder(rg_session_t *s)
{
    rg_str_t  h;

    h.data = rg_agent_ctx(s->engine)->worker;
    h.len = strlen(h.data);

    return h;
}


static void
rg_lease_arm(rg_session_t *s, rg_msec_t ms)
{
    struct timeval  tv;

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;

    if (evtimer_add(&s->dur->lease_ev, &tv) == 0) {
        s->lease_set = 1;
    }
}


static void
rg_lease_ask(rg_session_t *s)
{
    rg_str_t     id, h;
    rg_store_t  *st;

    st = rg_store_ctx(s->engine);
    id.data = s->id;
    id.len = strlen(s->id);
    h = rg_lease_holder(s);

    s->dur->lease_op = st->lease(st, &id, &h, s->lease,
                            rg_store_lease_ttl(s->engine),
                            s->lease ? rg_lease_renewed : rg_lease_taken, s);
}


static void
rg_lease_timer(evutil_socket_t fd, short what, void *arg)
{
    rg_session_t  *s;

    s = arg;
    s->lease_set = 0;

    if (s->dur->lease_op == NULL) {
        rg_lease_ask(s);
    }
}


void
rg_lease_take(rg_session_t *s, rg_lease_pt next)
{
    if (rg_session_durable(s) != RG_OK) {
        next(s, RG_ERROR, "out of memory");
        return;
    }

    s->dur->lease_next = next;
    s->lease = 0;
    s->dur->lease_since = rg_monotonic_msec();

    evtimer_assign(&s->dur->lease_ev, s->engine->base, rg_lease_timer, s);

    rg_lease_ask(s);

    if (s->dur->lease_op == NULL) {
        s->dur->lease_next = NULL;
        next(s, RG_ERROR, "out of memory");
    }
}


static void
rg_lease_taken(void *data, const rg_store_res_t *res)
{
    char          why[160];
    rg_msec_t     ttl;
    rg_lease_pt   next;
    rg_session_t *s;

    s = data;
    s->dur->lease_op = NULL;
    next = s->dur->lease_next;
    ttl = rg_store_lease_ttl(s->engine);

    if (res->rc == RG_OK) {
        s->lease = res->num;
        s->dur->lease_next = NULL;
        rg_lease_arm(s, ttl / 3);

        if (s->recovered && !s->taken_over
            && rg_store_ctx(s->engine)->epoch.losses != s->taken_losses)
        {
            /* its task was read from the store that was lost: its entry
             * is gone; queued again, so that if this worker stops,
             * another takes it up (the lease held here keeps it single) */
            s->recovered(s);
        }

        next(s, RG_OK, NULL);
        return;
    }

    if (rg_store_gone(res)) {
        /* the store lost its memory since this process last looked:
         * asked again once it knows (the store reads its epoch now),
         * within store_timeout; not "held" by anyone */
        if (rg_monotonic_msec() - s->dur->lease_since
            < rg_store_timeout(s->engine))
        {
            rg_lease_arm(s, 200);
            return;
        }

        s->dur->lease_next = NULL;
        next(s, RG_ERROR, res->err);
        return;
    }

    if (res->rc == RG_DECLINED) {
        snprintf(why, sizeof(why), "held by %.*s",
                 (int) rg_min(res->value.len, 120),
                 res->value.len ? res->value.data : "another worker");

        /* a holder that died lets it expire: wait for that, once */
        if (rg_monotonic_msec() - s->dur->lease_since < ttl + 1000) {
            if (!s->lease_waited) {
                rg_log_error(RG_LOG_NOTICE, &s->log, 0, "the session's "
                             "lease is %s: waiting up to %.3gs (lease_ttl) "
                             "for it to expire", why, (double) ttl / 1000);
                s->lease_waited = 1;
            }

            rg_lease_arm(s, rg_max(ttl / 8, 100));
            return;
        }

        s->dur->lease_next = NULL;
        next(s, RG_DECLINED, why);
        return;
    }

    /* the store is away: ask again, within store_timeout */
    if (rg_monotonic_msec() - s->dur->lease_since
        >= rg_store_timeout(s->engine))
    {
        s->dur->lease_next = NULL;
        next(s, RG_ERROR, res->err ? res->err : "no answer");
        return;
    }

    rg_lease_arm(s, 500);
}


static void
rg_lease_renewed(void *data, const rg_store_res_t *res)
{
    rg_session_t  *s;

    s = data;
    s->dur->lease_op = NULL;

    if (res->rc == RG_OK) {
        rg_lease_arm(s, rg_store_lease_ttl(s->engine) / 3);
        return;
    }

    if (rg_store_gone(res)) {
        /* nobody took it over: the store forgot it (rg_recover.c) */
        rg_session_lost(s);
        return;
    }

    if (res->rc == RG_DECLINED) {
        /* another worker took it over: nothing more is written here */
        rg_log_error(RG_LOG_WARN, &s->log, 0, "the session's lease was "
                     "lost (%s): another worker runs it now, so this one "
                     "writes nothing more for it and drops it",
                     res->err ? res->err : "refused");
        rg_session_drop(s, "its lease passed to another worker");
        return;
    }

    /* the store is away: the lease holds until its expiry; ask again
     * sooner */
    rg_lease_arm(s, rg_store_lease_ttl(s->engine) / 6 + 1);
}


void
rg_lease_check(rg_session_t *s)
{
    if (!s->durable || s->dur == NULL || s->lease == 0 || s->dur->lease_op
        || s->dur->lease_next || s->dur->recovering || s->fenced)
    {
        return;                  /* an answer to come says it */
    }

    if (s->lease_set) {
        event_del(&s->dur->lease_ev);
        s->lease_set = 0;
    }

    rg_lease_ask(s);
}


void
rg_session_renew(rg_session_t *s)
{
    rg_lease_check(s);
}


void
rg_lease_resume(rg_session_t *s)
{
    evtimer_assign(&s->dur->lease_ev, s->engine->base, rg_lease_timer, s);
    rg_lease_arm(s, rg_store_lease_ttl(s->engine) / 3);
}


void
rg_lease_stop(rg_session_t *s)
{
    if (s->dur == NULL) {
        return;                  /* never leased */
    }

    if (s->lease_set) {
        event_del(&s->dur->lease_ev);
        s->lease_set = 0;
    }

    rg_session_store_cancel(s, &s->dur->lease_op);

    s->dur->lease_next = NULL;
}


void
rg_lease_release(rg_session_t *s)
{
    rg_str_t     id;
    rg_store_t  *st;

    rg_lease_stop(s);

    if (s->lease == 0 || s->fenced) {
        return;
    }

    st = rg_store_ctx(s->engine);
    id.data = s->id;
    id.len = strlen(s->id);

    st->release(st, &id, s->lease, NULL, NULL);
}
