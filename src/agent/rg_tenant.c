/* rg_tenant.c: budgets per tenant. A task may name its tenant; with
 * `tenant_max_tokens 1m per 1d;` the tokens of every session of a
 * tenant add up in one counter of the store per window
 * ("tn:{<tenant>}:<window number>", expiring with its window), shared by
 * every process on the Redis. Before each model call the counter is read
 * (INCRBY 0, one round trip); a tenant at its budget ends the session
 * budget_exceeded, naming the tenant and when the window ends. The
 * tokens of an answer are added when it comes. Without Redis the
 * counter is the memory store's: the budget holds in this process. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tenant.h>
#include <rg_session.h>
#include <rg_store_conf.h>
#include <rg_agent_conf.h>


static rg_str_t
rg_tenant_key(rg_session_t *s, char *buf, size_t size)
{
    rg_str_t               k;
    rg_agent_main_conf_t  *amcf;

    amcf = rg_agent_main_conf(s->engine->cycle);

    k.len = snprintf(buf, size, "tn:{%s}:%llu", s->tenant,
                     (unsigned long long) (rg_wall_msec()
                                           / amcf->tenant_window));
    k.data = buf;

    return k;
}


static void
rg_tenant_handler(void *data, const rg_store_res_t *res)
{
    rg_msec_t              left;
    rg_session_t          *s;
    rg_agent_main_conf_t  *amcf;

    s = data;
    s->tenant_op = NULL;
    amcf = rg_agent_main_conf(s->engine->cycle);

    if (res->rc == RG_OK && res->num >= amcf->tenant_max_tokens) {
        left = amcf->tenant_window - rg_wall_msec() % amcf->tenant_window;
        rg_session_finish(s, RG_SESSION_BUDGET_EXCEEDED, "tenant \"%s\" has "
                          "used %lld of its %lld tokens in this window "
                          "(tenant_max_tokens ... per %llus); the next "
                          "window starts in %llus", s->tenant,
                          (long long) res->num,
                          (long long) amcf->tenant_max_tokens,
                          (unsigned long long) amcf->tenant_window / 1000,
                          (unsigned long long) (left + 999) / 1000);
        return;
    }

    if (res->rc != RG_OK) {
        /* the store's trouble is not the tenant's: the call goes, and the
         * next one asks again */
        rg_log_error(RG_LOG_WARN, &s->log, 0, "tenant \"%s\": its budget "
                     "could not be read (%s); this model call goes",
                     s->tenant, res->err ? res->err : "failed");
    }

    s->tenant_ok = 1;

    if (rg_session_ask(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
    }
}


rg_int_t
rg_tenant_check(rg_session_t *s)
{
    char                   buf[320];
    rg_str_t               k;
    rg_store_t            *st;
    rg_agent_main_conf_t  *amcf;

    amcf = rg_agent_main_conf(s->engine->cycle);

    if (s->tenant == NULL || amcf->tenant_max_tokens == 0) {
        return RG_OK;
    }

    if (s->tenant_ok) {
        s->tenant_ok = 0;              /* asked for this call */
        return RG_OK;
    }

    st = rg_store_ctx(s->engine);
    k = rg_tenant_key(s, buf, sizeof(buf));

    s->tenant_op = st->incr(st, &k, 0, amcf->tenant_window + 60000,
                            rg_tenant_handler, s);

    return s->tenant_op ? RG_AGAIN : RG_OK;
}


void
rg_tenant_charge(rg_session_t *s, int64_t tokens)
{
    char                   buf[320];
    rg_str_t               k;
    rg_store_t            *st;
    rg_agent_main_conf_t  *amcf;

    amcf = rg_agent_main_conf(s->engine->cycle);

    if (s->tenant == NULL || amcf->tenant_max_tokens == 0 || tokens <= 0) {
        return;
    }

    st = rg_store_ctx(s->engine);
    k = rg_tenant_key(s, buf, sizeof(buf));

    st->incr(st, &k, tokens, amcf->tenant_window + 60000, NULL, NULL);
}


void
rg_tenant_cancel(rg_session_t *s)
{
    rg_store_t  *st;

    if (s->tenant_op) {
        st = rg_store_ctx(s->engine);
        st->cancel(st, s->tenant_op);
        s->tenant_op = NULL;
    }
}
