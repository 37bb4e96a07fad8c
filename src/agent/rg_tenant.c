/* rg_tenant.c: budgets per tenant. A task may name its tenant; with
 * `tenant_max_tokens 1m per 1d;` the tokens of every session of a
 * tenant add up in one counter of the store per window
 * ("tn:{<tenant>}:<window number>", expiring with its window), shared by
 * every process on the Redis. Before each model call the counter is read
 * (INCRBY 0, one round trip); a tenant at its budget ends the session
 * budget_exceeded, naming the tenant and when the window ends. The
 * tokens of an answer are added when it comes. Without Redis the
 * counter is the memory store's: the budget holds in this process.
 * `tenant_max_cost 25 per 1d;` is the same in micro-dollars
 * ("tc:{<tenant>}:<window number>"), read after the tokens' counter; a
 * call stops when what it would add (rg_session_next_cost) passes it.
 *
 * While the store cannot be read, the session's llm's
 * shared_limits_fallback decides, as for its shared limits: `local` lets
 * the call go (the tokens of answers that come meanwhile are not
 * counted), `wait` asks again with backoff and holds the call, up to
 * store_timeout, then ends the session failed. Either is said once per
 * outage, not once per call (rg_store_down). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_tenant.h>
#include <rg_store_conf.h>


#define RG_TENANT_BACKOFF  200        /* ms, the first retry */
#define RG_TENANT_BACKOFF_MAX  5000


/* the counter of this window: of tokens, or of micro-dollars (cost) */
static rg_str_t
rg_tenant_key(rg_session_t *s, rg_uint_t cost, char *buf, size_t size)
{
    rg_str_t               k;
    rg_agent_main_conf_t  *amcf;

    amcf = rg_agent_main_conf(s->engine->cycle);

    k.len = snprintf(buf, size, "%s:{%s}:%llu", cost ? "tc" : "tn",
                     s->tenant,
                     (unsigned long long) (rg_wall_msec()
                                           / (cost ? amcf->tenant_cost_window
                                                   : amcf->tenant_window)));
    k.data = buf;

    return k;
}


static void rg_tenant_handler(void *data, const rg_store_res_t *res);
static rg_int_t rg_tenant_unread(rg_session_t *s, const char *err);


/* a counter of the tenant's, its tokens' or (cost) its cost's, is
 * asked: RG_AGAIN, or RG_ERROR (out of memory) */
static rg_int_t
rg_tenant_ask(rg_session_t *s, rg_uint_t cost)
{
    char                   buf[320];
    rg_str_t               k;
    rg_store_t            *st;
    rg_agent_main_conf_t  *amcf;

    amcf = rg_agent_main_conf(s->engine->cycle);
    st = rg_store_ctx(s->engine);
    k = rg_tenant_key(s, cost, buf, sizeof(buf));

    s->tenant_cost = cost ? 1 : 0;
    s->tenant_op = st->incr(st, &k, 0, (cost ? amcf->tenant_cost_window
                                             : amcf->tenant_window) + 60000,
                            rg_tenant_handler, s);

    return s->tenant_op ? RG_AGAIN : RG_ERROR;
}


/* a counter answered: RG_OK, it was read (res->num); RG_DECLINED, it
 * could not be and the call goes without it; RG_AGAIN, it is asked again
 * later, or the session ended */
static rg_int_t
rg_tenant_answered(rg_session_t *s, const rg_store_res_t *res)
{
    s->tenant_op = NULL;

    if (res->rc != RG_OK) {
        return rg_tenant_unread(s, res->err) == RG_OK ? RG_DECLINED
                                                      : RG_AGAIN;
    }

    s->tenant_failing = 0;
    rg_store_up(rg_store_ctx(s->engine), s->engine->log, res);

    return RG_OK;
}


static void
rg_tenant_retry(evutil_socket_t fd, short what, void *arg)
{
    rg_session_t  *s;

    s = arg;
    s->tenant_set = 0;

    rg_session_run_phases(s);    /* the budget is asked again */
}


/* the budget could not be read: the fallback of the llm about to be
 * called decides; RG_OK: the call goes, RG_AGAIN: asked again later,
 * RG_DONE: the session ended */
static rg_int_t
rg_tenant_unread(rg_session_t *s, const char *err)
{
    rg_msec_t        now, timeout, wait;
    rg_uint_t        w;
    rg_store_t      *st;
    struct timeval   tv;
    rg_agent_ctx_t  *ctx;

    st = rg_store_ctx(s->engine);
    ctx = rg_agent_ctx(s->engine);
    w = s->llm->shared_fallback == RG_LLM_FALLBACK_WAIT;

    rg_store_down(st, s->engine->log, &ctx->tenant_said[w], "tenant "
                  "budgets cannot be read from the store (%s): %s "
                  "(shared_limits_fallback %s)", err ? err : "failed",
                  w ? "the model calls of tenants' sessions wait for it, "
                      "up to store_timeout"
                    : "the model calls of tenants' sessions go, and the "
                      "tokens of their answers are not counted meanwhile",
                  w ? "wait" : "local");

    if (!w) {
        return RG_OK;
    }

    now = rg_monotonic_msec();
    timeout = rg_store_timeout(s->engine);

    if (s->tenant_failing == 0) {
        s->tenant_failing = now;
        s->tenant_tries = 0;
    }

    if (now - s->tenant_failing >= timeout) {
        rg_session_finish(s, RG_SESSION_FAILED, "tenant \"%s\": its budget "
                          "could not be read from the store for %.3gs "
                          "(store_timeout): %s", s->tenant,
                          (double) timeout / 1000, err ? err : "failed");
        return RG_DONE;
    }

    if (s->tenant_ev == NULL) {
        s->tenant_ev = rg_palloc(s->pool, sizeof(struct event));
        if (s->tenant_ev == NULL) {
            rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
            return RG_DONE;
        }

        evtimer_assign(s->tenant_ev, s->engine->base, rg_tenant_retry, s);
    }

    wait = RG_TENANT_BACKOFF;
    while (wait < RG_TENANT_BACKOFF_MAX
           && wait < ((rg_msec_t) 1 << rg_min(s->tenant_tries, 20))
                     * RG_TENANT_BACKOFF)
    {
        wait *= 2;
    }
    wait = rg_min(rg_min(wait, RG_TENANT_BACKOFF_MAX),
                  timeout - (now - s->tenant_failing));
    s->tenant_tries++;

    tv.tv_sec = wait / 1000;
    tv.tv_usec = (wait % 1000) * 1000;

    if (evtimer_add(s->tenant_ev, &tv) != 0) {
        rg_session_finish(s, RG_SESSION_FAILED, "cannot arm a timer");
        return RG_DONE;
    }

    s->tenant_set = 1;

    return RG_AGAIN;
}


/* the counter read is past its budget: the session ended */
static rg_uint_t
rg_tenant_spent(rg_session_t *s, int64_t num)
{
    double                 used, next;
    rg_msec_t              left;
    rg_agent_main_conf_t  *amcf;

    amcf = rg_agent_main_conf(s->engine->cycle);

    if (s->tenant_cost) {
        used = (double) num / 1e6;
        next = rg_session_next_cost(s);

        if (used + next <= amcf->tenant_max_cost) {
            return 0;
        }

        left = amcf->tenant_cost_window
               - rg_wall_msec() % amcf->tenant_cost_window;
        rg_session_finish(s, RG_SESSION_BUDGET_EXCEEDED, "tenant \"%s\" "
                          "has spent $%.4f of its $%.4f in this window "
                          "(tenant_max_cost ... per %llus), and the next "
                          "model call (about $%.4f) would pass it; the "
                          "next window starts in %llus", s->tenant, used,
                          amcf->tenant_max_cost,
                          (unsigned long long)
                          amcf->tenant_cost_window / 1000, next,
                          (unsigned long long) (left + 999) / 1000);
        return 1;
    }

    if (num < amcf->tenant_max_tokens) {
        return 0;
    }

    left = amcf->tenant_window - rg_wall_msec() % amcf->tenant_window;
    rg_session_finish(s, RG_SESSION_BUDGET_EXCEEDED, "tenant \"%s\" has "
                      "used %lld of its %lld tokens in this window "
                      "(tenant_max_tokens ... per %llus); the next "
                      "window starts in %llus", s->tenant,
                      (long long) num, (long long) amcf->tenant_max_tokens,
                      (unsigned long long) amcf->tenant_window / 1000,
                      (unsigned long long) (left + 999) / 1000);
    return 1;
}


/* a counter answered (the tokens', then the cost's): the call goes, or
 * waits, or the session ends at the tenant's budget */
static void
rg_tenant_handler(void *data, const rg_store_res_t *res)
{
    rg_int_t               rc;
    rg_session_t          *s;
    rg_agent_main_conf_t  *amcf;

    s = data;
    amcf = rg_agent_main_conf(s->engine->cycle);
    rc = rg_tenant_answered(s, res);

    if (rc == RG_AGAIN || (rc == RG_OK && rg_tenant_spent(s, res->num))) {
        return;                        /* asked again later, or ended */
    }

    /* the tokens allow it: then the money, if it is counted */
    if (!s->tenant_cost && amcf->tenant_max_cost > 0) {
        if (rg_tenant_ask(s, 1) != RG_AGAIN) {
            rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        }
        return;
    }

    /* the call it held goes (rg_phase_ask.c) */
    s->tenant_ok = 1;
    rg_session_run_phases(s);
}


rg_int_t
rg_tenant_check(rg_session_t *s)
{
    rg_agent_main_conf_t  *amcf;

    amcf = rg_agent_main_conf(s->engine->cycle);

    if (s->tenant == NULL
        || (amcf->tenant_max_tokens == 0 && amcf->tenant_max_cost == 0))
    {
        return RG_OK;
    }

    if (s->tenant_ok) {
        s->tenant_ok = 0;              /* asked for this call */
        return RG_OK;
    }

    return rg_tenant_ask(s, amcf->tenant_max_tokens == 0);
}


void
rg_tenant_charge(rg_session_t *s, int64_t tokens, double cost)
{
    char                   buf[320];
    int64_t                micro;
    rg_str_t               k;
    rg_store_t            *st;
    rg_agent_main_conf_t  *amcf;

    amcf = rg_agent_main_conf(s->engine->cycle);

    if (s->tenant == NULL) {
        return;
    }

    st = rg_store_ctx(s->engine);

    if (amcf->tenant_max_tokens && tokens > 0) {
        k = rg_tenant_key(s, 0, buf, sizeof(buf));
        st->incr(st, &k, tokens, amcf->tenant_window + 60000, NULL, NULL);
    }

    /* micro-dollars: a call that cost anything costs at least one */
    if (amcf->tenant_max_cost > 0 && cost > 0) {
        micro = (int64_t) (cost * 1e6 + 0.5);
        k = rg_tenant_key(s, 1, buf, sizeof(buf));
        st->incr(st, &k, micro ? micro : 1,
                 amcf->tenant_cost_window + 60000, NULL, NULL);
    }
}


void
rg_tenant_cancel(rg_session_t *s)
{
    rg_session_store_cancel(s, &s->tenant_op);

    if (s->tenant_set) {
        event_del(s->tenant_ev);
        s->tenant_set = 0;
    }
}
