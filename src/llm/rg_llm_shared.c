/* rg_llm_shared.c: what the processes on a durable store share of an
 * upstream: the cool-down a 429 sets (from Retry-After), for every llm,
 * and the limits an llm declares `shared` (`requests_per_minute 600
 * shared;`): token buckets in the store (one script: all or nothing,
 * with the cool-down), asked for the oldest waiting request of the
 * upstream, one question at a time; tokens are reserved from the
 * request's estimate and corrected from the provider's usage. A
 * connection slot of `max_connections N shared` is a member of a set in
 * the store that expires with the request's timeout, so that a process
 * that died frees its slots.
 *
 * The cool-down is the upstream's, not the llm block's: it is named
 * after what the provider's 429 is about, the URL, the model and the
 * credential sent ("up:" and 128 bits of their SHA-256: the key itself
 * is never written), so that processes, and llm blocks of any name,
 * calling one model of one account share it, and other accounts of one
 * provider do not. The buckets and slots stay the llm block's (its
 * name), under the same hash tag. An llm without shared limits asks
 * the cool-down alone: one question answers every request queued
 * before it was asked, and an answer of none holds for a second; while
 * the store cannot be asked its requests go without it.
 *
 * Without a durable store, or while it cannot be reached, the fallback
 * decides: `local` holds each limit in each process alone, `wait` holds
 * the requests until the store answers again; either is said once per
 * outage, and its end once (rg_store_down). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_shared.h>
#include <rg_digest.h>
#include <unistd.h>
#include <event2/event.h>
#include <event2/event_struct.h>


#define RG_LLM_SHARED_RETRY  5000     /* ms before the store is asked again
                                         after it failed */
#define RG_LLM_SHARED_FRESH  1000     /* ms an answer of no cool-down holds
                                         for an llm without shared limits */

struct rg_llm_shared_s {
    rg_llm_shared_owner_t  up;        /* the upstream whose they are */
    rg_store_t         *st;
    char                name[160];    /* "llm:NAME" */
    rg_str_t            key;
    char                cool_name[40];  /* "up:" and 32 hex digits */
    rg_str_t            cool;
    uint64_t            ask_seq;      /* the newest request when asked */
    uint64_t            clear_seq;    /* those up to it may go */
    rg_store_bucket_t   b[2];
    rg_uint_t           nb;
    rg_int_t            tpm;          /* its bucket, -1: none */
    rg_store_op_t      *op;           /* the question asked */
    struct event        timer;
    size_t              cost;         /* of the question */
    size_t              granted;      /* an answer not yet used: its cost */
    rg_msec_t           retry_at;     /* down: when to ask the store again */
    rg_msec_t           fresh_until;  /* no cool-down known until then */
    uint64_t            said;         /* the outage it spoke of */
    char                worker[96];   /* "host:pid", for slot holders */
    uint64_t            seq;          /* the last slot asked for */
    uint64_t            slot;         /* held for the next request */
    uint64_t            grant_slot;   /* the slot of the grant */
    unsigned            timer_set:1;
    unsigned            has_grant:1;
    unsigned            down:1;       /* the store failed: the fallback */
    unsigned            durable:1;
    unsigned            cool_only:1;  /* no shared limit: the cool-down */
};


static void rg_llm_shared_handler(void *data, const rg_store_res_t *res);
static void rg_llm_shared_slot_handler(void *data,
    const rg_store_res_t *res);


rg_llm_shared_t *
rg_llm_shared_create(const rg_llm_shared_owner_t *owner, const char *url,
    rg_store_t *st, rg_uint_t durable)
{
    rg_llm_conf_t    *c;
    rg_llm_shared_t  *sh;

    c = owner->conf;

    if (st == NULL || (c->shared == 0 && !durable)) {
        return NULL;
    }

    sh = calloc(1, sizeof(rg_llm_shared_t));
    if (sh == NULL) {
        return NULL;
    }

    sh->up = *owner;
    sh->st = st;
    sh->durable = durable != 0;
    sh->cool_only = c->shared == 0;
    sh->key.len = snprintf(sh->name, sizeof(sh->name), "llm:%.*s",
                           (int) rg_min(c->name.len, 120), c->name.data);
    sh->key.data = sh->name;

    if (rg_llm_shared_upstream(sh, url) != RG_OK) {
        free(sh);
        return NULL;
    }

    /* the same order in every process: a bucket's key is its place */
    if (c->shared & RG_LLM_SHARED_RPM) {
        sh->b[sh->nb].name = sh->key;
        sh->b[sh->nb].rate = c->requests_per_minute;
        sh->b[sh->nb].capacity = 1;          /* paced, as in one process */
        sh->nb++;
    }

    sh->tpm = -1;

    if (c->shared & RG_LLM_SHARED_TPM) {
        sh->tpm = sh->nb;
        sh->b[sh->nb].name = sh->key;
        sh->b[sh->nb].rate = c->tokens_per_minute;
        sh->b[sh->nb].capacity = rg_max(c->tokens_per_minute / 60.0, 1);
        sh->nb++;
    }

    if (gethostname(sh->worker, sizeof(sh->worker) - 24) != 0) {
        strcpy(sh->worker, "localhost");
    }
    sh->worker[sizeof(sh->worker) - 24] = '\0';
    snprintf(sh->worker + strlen(sh->worker), 24, ":%d", (int) getpid());

    evtimer_assign(&sh->timer, owner->base, NULL, NULL);

    if (!sh->durable) {
        sh->down = 1;
        sh->retry_at = (rg_msec_t) -1;      /* never: there is no Redis */
    }

    return sh;
}


rg_int_t
rg_llm_shared_upstream(rg_llm_shared_t *sh, const char *url)
{
    char            hex[RG_SHA256_HEX], *id, *p;
    size_t          ul, ml, al;
    rg_int_t        rc;
    const char     *auth;
    rg_llm_conf_t  *c;

    if (sh == NULL) {
        return RG_OK;
    }

    /* redirected (run --mock): another URL, and no key */
    c = sh->up.conf;
    auth = url ? NULL : c->auth;
    url = url ? url : c->url;

    ul = strlen(url);
    ml = c->model.len;
    al = auth ? strlen(auth) : 0;

    id = malloc(ul + ml + 2);
    if (id == NULL) {
        return RG_ERROR;
    }

    p = id;
    memcpy(p, url, ul + 1);
    p += ul + 1;
    memcpy(p, c->model.data, ml);
    p[ml] = '\0';

    rc = rg_sha256_hex(hex, id, ul + ml + 2, auth ? auth : "", al);
    free(id);

    if (rc != RG_OK) {
        return RG_ERROR;
    }

    sh->cool.len = snprintf(sh->cool_name, sizeof(sh->cool_name), "up:%.32s",
                            hex);
    sh->cool.data = sh->cool_name;

    return RG_OK;
}


void
rg_llm_shared_destroy(rg_llm_shared_t *sh)
{
    if (sh == NULL) {
        return;
    }

    if (sh->op) {
        sh->st->cancel(sh->st, sh->op);
    }

    if (sh->timer_set) {
        event_del(&sh->timer);
    }

    rg_llm_shared_release(sh, sh->slot);

    free(sh);
}


rg_uint_t
rg_llm_shared_local(rg_llm_shared_t *sh)
{
    if (sh == NULL) {
        return RG_LLM_SHARED_RPM | RG_LLM_SHARED_TPM | RG_LLM_SHARED_CONNS;
    }

    if (sh->down && sh->up.conf->shared_fallback == RG_LLM_FALLBACK_LOCAL) {
        return RG_LLM_SHARED_RPM | RG_LLM_SHARED_TPM | RG_LLM_SHARED_CONNS;
    }

    return ~sh->up.conf->shared & (RG_LLM_SHARED_RPM | RG_LLM_SHARED_TPM
                                    | RG_LLM_SHARED_CONNS);
}


static void
rg_llm_shared_timer_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_llm_shared_t  *sh;

    sh = arg;
    sh->timer_set = 0;

    sh->up.wake(sh->up.data);
}


static void
rg_llm_shared_later(rg_llm_shared_t *sh, rg_msec_t ms)
{
    if (sh->timer_set) {
        return;
    }

    evtimer_assign(&sh->timer, sh->up.base, rg_llm_shared_timer_handler, sh);
    if (rg_timer_add(&sh->timer, ms) == 0) {
        sh->timer_set = 1;
    }
}


/* the store failed: the fallback, said once per outage */
static void
rg_llm_shared_fail(rg_llm_shared_t *sh, const char *err)
{
    rg_llm_conf_t  *c;

    c = sh->up.conf;
    sh->down = 1;
    sh->retry_at = rg_monotonic_msec() + RG_LLM_SHARED_RETRY;

    if (sh->cool_only) {
        rg_store_down(sh->st, sh->up.log, &sh->said, "llm \"%.*s\": the "
                      "shared cool-down cannot be read from the store (%s): "
                      "its requests go without it until it answers again",
                      (int) c->name.len, c->name.data,
                      err ? err : "failed");
        return;
    }

    rg_store_down(sh->st, sh->up.log, &sh->said, "llm \"%.*s\": its "
                  "shared limits cannot be asked of the store (%s): %s until "
                  "it answers again (shared_limits_fallback %s)",
                  (int) c->name.len, c->name.data, err ? err : "failed",
                  c->shared_fallback == RG_LLM_FALLBACK_LOCAL
                  ? "this process holds them alone"
                  : "its requests wait",
                  c->shared_fallback == RG_LLM_FALLBACK_LOCAL
                  ? "local" : "wait");
}


static rg_str_t
rg_llm_shared_holder(rg_llm_shared_t *sh, uint64_t seq, char *buf,
    size_t size)
{
    rg_str_t  h;

    h.len = snprintf(buf, size, "%s:%llu", sh->worker,
                     (unsigned long long) seq);
    h.data = buf;

    return h;
}


/* an llm without shared limits: may request seq go past the cool-down? */
static rg_int_t
rg_llm_shared_cool(rg_llm_shared_t *sh, uint64_t seq, uint64_t newest)
{
    if (seq <= sh->clear_seq) {
        return RG_OK;
    }

    if (sh->op || sh->timer_set) {
        return RG_AGAIN;
    }

    /* asked less than a second ago: not a round trip per model call; a
     * 429 that another process got is honoured within that second */
    if (rg_monotonic_msec() < sh->fresh_until) {
        return RG_OK;
    }

    if (sh->down && rg_monotonic_msec() < sh->retry_at) {
        return RG_OK;                  /* without it */
    }

    sh->ask_seq = newest;
    sh->op = sh->st->take(sh->st, &sh->cool, NULL, 0, rg_llm_shared_handler,
                          sh);
    if (sh->op == NULL) {
        rg_llm_shared_fail(sh, "out of memory");
        return RG_OK;
    }

    return RG_AGAIN;
}


rg_int_t
rg_llm_shared_admit(rg_llm_shared_t *sh, size_t cost, uint64_t seq,
    uint64_t newest, size_t *taken, uint64_t *slot)
{
    char       buf[160];
    rg_str_t   h;
    rg_uint_t  i;
    double     c;

    *taken = 0;
    *slot = 0;

    if (sh->cool_only) {
        return rg_llm_shared_cool(sh, seq, newest);
    }

    if (sh->has_grant) {
        sh->has_grant = 0;
        *taken = sh->granted;
        *slot = sh->grant_slot;
        sh->grant_slot = 0;
        return RG_OK;
    }

    if (sh->op || sh->timer_set) {
        return RG_AGAIN;
    }

    if (sh->down && rg_monotonic_msec() < sh->retry_at) {
        if (sh->up.conf->shared_fallback == RG_LLM_FALLBACK_LOCAL) {
            return RG_OK;              /* the local limits hold */
        }

        rg_llm_shared_later(sh, sh->retry_at - rg_monotonic_msec());
        return RG_AGAIN;
    }

    /* a connection slot first, then the buckets */
    if ((sh->up.conf->shared & RG_LLM_SHARED_CONNS) && sh->slot == 0) {
        h = rg_llm_shared_holder(sh, ++sh->seq, buf, sizeof(buf));
        sh->op = sh->st->slot(sh->st, &sh->cool, &sh->key, &h,
                              (rg_uint_t) sh->up.conf->max_connections,
                              sh->up.conf->timeout + 5000,
                              rg_llm_shared_slot_handler, sh);
        if (sh->op == NULL) {
            rg_llm_shared_fail(sh, "out of memory");
            return rg_llm_shared_admit(sh, cost, seq, newest, taken, slot);
        }

        return RG_AGAIN;
    }

    /* a request larger than a bucket's capacity takes what it holds;
     * the rest is charged when the usage is known */
    for (i = 0; i < sh->nb; i++) {
        sh->b[i].cost = 1;
        sh->b[i].force = 0;
    }

    sh->cost = 0;

    if (sh->tpm >= 0) {
        c = rg_min((double) cost, sh->b[sh->tpm].capacity);
        sh->b[sh->tpm].cost = c;
        sh->cost = (size_t) c;
    }

    if (sh->nb == 0) {
        *slot = sh->slot;
        sh->slot = 0;
        return RG_OK;
    }

    sh->op = sh->st->take(sh->st, &sh->cool, sh->b, sh->nb,
                          rg_llm_shared_handler, sh);
    if (sh->op == NULL) {
        rg_llm_shared_fail(sh, "out of memory");
        return rg_llm_shared_admit(sh, cost, seq, newest, taken, slot);
    }

    return RG_AGAIN;
}


/* what the two answers of the store share: a failure, or a wait the
 * store says, handled here (RG_DONE); RG_OK: the answer is to be read */
static rg_int_t
rg_llm_shared_answered(rg_llm_shared_t *sh, const rg_store_res_t *res)
{
    sh->op = NULL;

    if (res->rc != RG_OK) {
        rg_llm_shared_fail(sh, res->err);
        sh->up.wake(sh->up.data);
        return RG_DONE;
    }

    sh->down = 0;
    rg_store_up(sh->st, sh->up.log, res);

    if (res->num > 0) {
        rg_llm_shared_later(sh, (rg_msec_t) res->num);
        return RG_DONE;
    }

    return RG_OK;
}


static void
rg_llm_shared_handler(void *data, const rg_store_res_t *res)
{
    rg_llm_shared_t  *sh;

    sh = data;

    if (rg_llm_shared_answered(sh, res) != RG_OK) {
        return;
    }

    if (sh->cool_only) {
        sh->clear_seq = sh->ask_seq;
        sh->fresh_until = rg_monotonic_msec() + RG_LLM_SHARED_FRESH;
        sh->up.wake(sh->up.data);
        return;
    }

    sh->has_grant = 1;
    sh->granted = sh->cost;
    sh->grant_slot = sh->slot;
    sh->slot = 0;

    sh->up.wake(sh->up.data);
}


static void
rg_llm_shared_slot_handler(void *data, const rg_store_res_t *res)
{
    rg_llm_shared_t  *sh;

    sh = data;

    if (rg_llm_shared_answered(sh, res) != RG_OK) {
        return;
    }

    sh->slot = sh->seq;
    sh->up.wake(sh->up.data);
}


void
rg_llm_shared_usage(rg_llm_shared_t *sh, size_t taken, int64_t tokens)
{
    rg_uint_t  i;

    if (sh == NULL || sh->tpm < 0 || tokens <= 0 || sh->down
        || (int64_t) taken == tokens)
    {
        return;
    }

    /* the same buckets in the same places; only the tokens change */
    for (i = 0; i < sh->nb; i++) {
        sh->b[i].cost = 0;
        sh->b[i].force = 1;
    }

    sh->b[sh->tpm].cost = (double) tokens - (double) taken;

    sh->st->take(sh->st, &sh->cool, sh->b, sh->nb, NULL, NULL);
}


void
rg_llm_shared_cooldown(rg_llm_shared_t *sh, rg_msec_t ms)
{
    if (sh == NULL || sh->down || ms == 0) {
        return;
    }

    sh->fresh_until = 0;               /* its next request learns of it */
    sh->st->cooldown(sh->st, &sh->cool, ms, NULL, NULL);
}


void
rg_llm_shared_release(rg_llm_shared_t *sh, uint64_t slot)
{
    char      buf[160];
    rg_str_t  h;

    if (sh == NULL || slot == 0) {
        return;
    }

    h = rg_llm_shared_holder(sh, slot, buf, sizeof(buf));
    sh->st->slot(sh->st, &sh->cool, &sh->key, &h, 0, 0, NULL, NULL);
}
