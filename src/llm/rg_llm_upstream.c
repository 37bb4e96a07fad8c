/* rg_llm_upstream.c: the llm part's runtime in each engine, for the
 * requests of rg_llm_client.c: one upstream per llm block, with its
 * headers, its lanes (curl share groups, a few sessions each), its
 * concurrency cap and the FIFO queue of the requests beyond it, its rate
 * limits (kept here, or shared through the store); and the engine's one
 * budget of response bytes. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_client.h>
#include <rg_llm_client_int.h>
#include <rg_event.h>
#include <rg_secret.h>
#include <rg_llm_shared.h>
#include <rg_store_conf.h>


/* sessions per lane, at most: the driver's per_cache may be lower */
#define RG_LLM_LANE_SESSIONS   16


/* the wait queue is doubly linked: a cancel takes O(1) */
void
rg_llm_enqueue(rg_llm_req_t *r)
{
    r->queued = 1;
    r->qseq = ++r->up->qseq;
    r->next = NULL;
    r->pprev = r->up->queue_tail;
    *r->up->queue_tail = r;
    r->up->queue_tail = &r->next;
}


void
rg_llm_dequeue(rg_llm_req_t *r)
{
    if (r->next) {
        r->next->pprev = r->pprev;
    } else {
        r->up->queue_tail = r->pprev;
    }

    *r->pprev = r->next;
    r->next = NULL;
    r->pprev = NULL;
    r->queued = 0;
}


void
rg_llm_memory_limit(rg_llm_ctx_t *ctx, size_t limit)
{
    ctx->mem.limit = limit ? limit : RG_LLM_MEMORY_DEFAULT;
    ctx->mem.peak = ctx->mem.used;
    ctx->mem.stopped = 0;
}


const rg_llm_memory_t *
rg_llm_memory(rg_llm_ctx_t *ctx)
{
    return &ctx->mem;
}


/* gives back what this attempt counted */
void
rg_llm_mem_release(rg_llm_req_t *r)
{
    if (r->held == 0) {
        return;
    }

    r->up->ctx->mem.used -= r->held;
    r->held = 0;

    if (r->mem_next) {
        r->mem_next->mem_pprev = r->mem_pprev;
    }
    *r->mem_pprev = r->mem_next;
    r->mem_next = NULL;
    r->mem_pprev = NULL;
}


void
rg_llm_mem_take(rg_llm_req_t *r, size_t n)
{
    rg_llm_ctx_t  *ctx;

    ctx = r->up->ctx;

    if (r->held == 0) {
        r->mem_next = ctx->holders;
        r->mem_pprev = &ctx->holders;
        if (ctx->holders) {
            ctx->holders->mem_pprev = &r->mem_next;
        }
        ctx->holders = r;
    }

    r->held += n;
    ctx->mem.used += n;

    if (ctx->mem.used > ctx->mem.peak) {
        ctx->mem.peak = ctx->mem.used;
    }
}


/* Makes room for n more bytes of r. Over the budget, the attempt that
 * holds the most (r included, with what it would hold) is stopped: when
 * that is r, RG_ERROR; another one is stopped from the loop (never from
 * inside curl's callback) and its bytes are given back now. */
rg_int_t
rg_llm_mem_room(rg_llm_req_t *r, size_t n)
{
    rg_llm_ctx_t  *ctx;
    rg_llm_req_t  *v, *big;

    ctx = r->up->ctx;

    while (ctx->mem.used + n > ctx->mem.limit) {
        big = r;

        for (v = ctx->holders; v; v = v->mem_next) {
            if (v != r && v->held > big->held + (big == r ? n : 0)) {
                big = v;
            }
        }

        ctx->mem.stopped++;

        if (big == r) {
            r->over_memory = 1;
            return RG_ERROR;
        }

        big->over_memory = 1;
        rg_buf_free(&big->resp);
        if (big->stream) {
            big->up->conf->codec->stream_destroy(big->stream);
            big->stream = NULL;
        }
        rg_llm_mem_release(big);

        event_active(&big->timer, EV_TIMEOUT, 1);
    }

    return RG_OK;
}


/* the limits this process holds itself: those not shared, or all of
 * them while the store cannot be asked (rg_llm_shared.c) */
double
rg_llm_rpm(rg_llm_upstream_t *up)
{
    return (rg_llm_shared_local(up->shared) & RG_LLM_SHARED_RPM)
           ? up->conf->requests_per_minute : 0;
}


double
rg_llm_tpm(rg_llm_upstream_t *up)
{
    return (rg_llm_shared_local(up->shared) & RG_LLM_SHARED_TPM)
           ? up->conf->tokens_per_minute : 0;
}


/* refills the rate buckets; true when one more request may start now */
rg_uint_t
rg_llm_rate_ok(rg_llm_upstream_t *up)
{
    double          elapsed, rpm, tpm;
    rg_msec_t       now;

    rpm = rg_llm_rpm(up);
    tpm = rg_llm_tpm(up);

    if (rpm == 0 && tpm == 0) {
        return 1;
    }

    now = rg_monotonic_msec();
    elapsed = (double) (now - up->rate_at);
    up->rate_at = now;

    if (rpm) {
        up->rpm_left = rg_min(up->rpm_left + elapsed * rpm / 60000.0, 1.0);
    }

    if (tpm) {
        up->tpm_left = rg_min(up->tpm_left + elapsed * tpm / 60000.0,
                              rg_max(tpm / 60.0, 1));
    }

    return (rpm == 0 || up->rpm_left >= 1) && (tpm == 0 || up->tpm_left > 0);
}


static void
rg_llm_rate_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_llm_upstream_t  *up;

    up = arg;
    up->rate_timer_set = 0;

    rg_llm_next(up);
}


/* how long until the buckets allow the next request */
void
rg_llm_rate_wait(rg_llm_upstream_t *up)
{
    double           ms, t, rpm, tpm;
    struct timeval   tv;

    if (up->rate_timer_set) {
        return;
    }

    rpm = rg_llm_rpm(up);
    tpm = rg_llm_tpm(up);
    ms = 1;

    if (rpm && up->rpm_left < 1) {
        t = (1 - up->rpm_left) * 60000.0 / rpm;
        ms = rg_max(ms, t);
    }

    if (tpm && up->tpm_left <= 0) {
        t = (1 - up->tpm_left) * 60000.0 / tpm;
        ms = rg_max(ms, t);
    }

    tv.tv_sec = (long) ms / 1000;
    tv.tv_usec = ((long) ms % 1000) * 1000 + 1000;

    evtimer_assign(&up->rate_timer, up->base, rg_llm_rate_handler, up);
    evtimer_add(&up->rate_timer, &tv);
    up->rate_timer_set = 1;
}


/* curl's copy of the key header is zeroed before it is freed */
static void
rg_llm_headers_free(struct curl_slist *h)
{
    struct curl_slist  *l;

    for (l = h; l; l = l->next) {
        rg_secret_wipe(l->data, strlen(l->data));
    }

    curl_slist_free_all(h);
}


/* the headers every request of up carries; the key's unless no_key */
static struct curl_slist *
rg_llm_headers(rg_llm_conf_t *conf, rg_uint_t no_key)
{
    char              **extra;
    rg_uint_t           i;
    struct curl_slist  *h, *n;
    const char        **p;
    const char         *fixed[] = {
        "Content-Type: application/json",
        /* what the answer can be: a stream only where one is asked for
         * (curl writes every byte of a header one by one) */
        conf->stream ? "Accept: application/json, text/event-stream"
                     : "Accept: application/json",
        "Expect:",                       /* no 100-continue round trip */
        "User-Agent: reagent/" RG_VERSION,
        NULL
    };

    h = NULL;

    for (p = fixed; *p; p++) {
        n = curl_slist_append(h, *p);
        if (n == NULL) {
            rg_llm_headers_free(h);
            return NULL;
        }
        h = n;
    }

    /* the format's own (anthropic-version), then the llm block's */
    for (p = conf->codec->headers; p && *p; p++) {
        n = curl_slist_append(h, *p);
        if (n == NULL) {
            rg_llm_headers_free(h);
            return NULL;
        }
        h = n;
    }

    extra = conf->headers ? conf->headers->elts : NULL;

    for (i = 0; extra && i < conf->headers->nelts; i++) {
        n = curl_slist_append(h, extra[i]);
        if (n == NULL) {
            rg_llm_headers_free(h);
            return NULL;
        }
        h = n;
    }

    if (conf->auth && !no_key) {
        n = curl_slist_append(h, conf->auth);
        if (n == NULL) {
            rg_llm_headers_free(h);
            return NULL;
        }
        h = n;
    }

    return h;
}


rg_llm_upstream_t *
rg_llm_upstream_create(rg_llm_ctx_t *ctx, rg_llm_conf_t *conf,
    rg_curl_t *curl, struct event_base *base, rg_log_t *log)
{
    rg_llm_upstream_t  *up;

    up = calloc(1, sizeof(rg_llm_upstream_t));
    if (up == NULL) {
        return NULL;
    }

    up->ctx = ctx;
    up->conf = conf;
    up->metrics = rg_metrics_upstream(conf->name.data, conf->name.len);
    up->curl = curl;
    up->base = base;
    up->log = log;
    up->queue_tail = &up->queue_head;

    up->headers = rg_llm_headers(conf, 0);
    if (up->headers == NULL) {
        free(up);
        return NULL;
    }

    /* paced, not bursty: one request, or a second's tokens, at a time */
    up->rpm_left = conf->requests_per_minute ? 1 : 0;
    up->tpm_left = rg_max(conf->tokens_per_minute / 60.0, 1);
    up->rate_at = rg_monotonic_msec();

    return up;
}


rg_int_t
rg_llm_redirect(rg_engine_t *e, const char *base_url)
{
    size_t              n;
    const char         *path;
    rg_uint_t           i;
    rg_llm_ctx_t       *ctx;
    rg_llm_upstream_t  *up;
    struct curl_slist  *h;

    ctx = rg_llm_ctx(e);

    for (i = 0; i < ctx->n; i++) {
        up = ctx->upstreams[i];

        h = rg_llm_headers(up->conf, 1);
        if (h == NULL) {
            return RG_ERROR;
        }

        n = strlen(base_url);
        path = up->conf->codec->path;
        free(up->url);
        up->url = malloc(n + strlen(path) + 1);
        if (up->url == NULL) {
            rg_llm_headers_free(h);
            return RG_ERROR;
        }

        memcpy(up->url, base_url, n);
        memcpy(up->url + n, path, strlen(path) + 1);

        rg_llm_headers_free(up->headers);
        up->headers = h;

        if (rg_llm_shared_upstream(up->shared, up->url) != RG_OK) {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


void
rg_llm_upstream_destroy(rg_llm_upstream_t *up)
{
    rg_uint_t  i;

    if (up == NULL) {
        return;
    }

    if (up->rate_timer_set) {
        event_del(&up->rate_timer);
    }

    rg_llm_shared_destroy(up->shared);

    for (i = 0; i < up->nlanes; i++) {
        curl_share_cleanup(up->shares[i]);
    }

    free(up->shares);
    free(up->lane_users);
    rg_llm_headers_free(up->headers);
    free(up->url);
    free(up);
}


rg_uint_t
rg_llm_lane_size(rg_llm_upstream_t *up)
{
    return rg_min(RG_LLM_LANE_SESSIONS, rg_curl_limits(up->curl)->per_cache);
}


rg_int_t
rg_llm_lane_acquire(rg_llm_upstream_t *up)
{
    CURLSH     *sh;
    rg_uint_t   i, best, size, *users;
    CURLSH    **shares;

    size = rg_llm_lane_size(up);

    for (i = 0; i < up->nlanes; i++) {
        if (up->lane_users[i] < size) {
            up->lane_users[i]++;
            return i;
        }
    }

    /* every connection cache costs descriptors: past the budget's count
     * of caches, lanes take more sessions each */
    if (rg_curl_cache_add(up->curl, up->nlanes == 0) != RG_OK) {
        best = 0;

        for (i = 1; i < up->nlanes; i++) {
            if (up->lane_users[i] < up->lane_users[best]) {
                best = i;
            }
        }

        up->lane_users[best]++;
        return best;
    }

    sh = curl_share_init();
    if (sh == NULL) {
        return RG_ERROR;
    }

    curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);

    shares = realloc(up->shares, (up->nlanes + 1) * sizeof(CURLSH *));
    if (shares == NULL) {
        curl_share_cleanup(sh);
        return RG_ERROR;
    }
    up->shares = shares;

    users = realloc(up->lane_users, (up->nlanes + 1) * sizeof(rg_uint_t));
    if (users == NULL) {
        curl_share_cleanup(sh);
        return RG_ERROR;
    }
    up->lane_users = users;

    up->shares[up->nlanes] = sh;
    up->lane_users[up->nlanes] = 1;

    return up->nlanes++;
}


void
rg_llm_lane_release(rg_llm_upstream_t *up, rg_int_t lane)
{
    if (lane >= 0 && (rg_uint_t) lane < up->nlanes && up->lane_users[lane]) {
        up->lane_users[lane]--;
    }
}


/* the shared limits answered, or their wait ended */
static void
rg_llm_upstream_wake(void *data)
{
    rg_llm_next(data);
}


rg_int_t
rg_llm_init_worker(rg_engine_t *e)
{
    rg_uint_t               i;
    rg_store_t             *st;
    rg_llm_ctx_t           *ctx;
    rg_llm_conf_t         **llms;
    rg_llm_upstream_t      *up;
    rg_llm_main_conf_t     *lmcf;
    rg_llm_shared_owner_t   owner;

    lmcf = rg_llm_main_conf(e->cycle);

    ctx = calloc(1, sizeof(rg_llm_ctx_t)
                    + lmcf->llms.nelts * sizeof(rg_llm_upstream_t *));
    if (ctx == NULL) {
        return RG_ERROR;
    }

    ctx->upstreams = (rg_llm_upstream_t **) (ctx + 1);
    rg_engine_ctx(e, &rg_llm_part) = ctx;

    rg_llm_memory_limit(ctx, lmcf->response_memory);

    llms = lmcf->llms.elts;

    for (i = 0; i < lmcf->llms.nelts; i++) {
        ctx->upstreams[i] = rg_llm_upstream_create(ctx, llms[i],
                                                   rg_event_ctx(e), e->base,
                                                   e->log);
        if (ctx->upstreams[i] == NULL) {
            return RG_ERROR;
        }

        ctx->n++;

        /* with a durable store every llm shares the cool-down of its
         * upstream; its shared limits, if any, too */
        st = rg_store_get(e);

        if (llms[i]->shared == 0 && !st->durable) {
            continue;
        }

        up = ctx->upstreams[i];
        owner.conf = up->conf;
        owner.base = up->base;
        owner.log = up->log;
        owner.wake = rg_llm_upstream_wake;
        owner.data = up;

        up->shared = rg_llm_shared_create(&owner, up->url, st, st->durable);
        if (ctx->upstreams[i]->shared == NULL) {
            return RG_ERROR;
        }

        if (!st->durable) {
            rg_log_error(RG_LOG_NOTICE, e->log, 0, "llm \"%.*s\": its "
                         "shared limits are held by this process alone: "
                         "there is no store redis to share them",
                         (int) llms[i]->name.len, llms[i]->name.data);
        }
    }

    return RG_OK;
}


void
rg_llm_exit_worker(rg_engine_t *e)
{
    rg_uint_t      i;
    rg_llm_ctx_t  *ctx;

    ctx = rg_llm_ctx(e);
    if (ctx == NULL) {
        return;
    }

    for (i = 0; i < ctx->n; i++) {
        rg_llm_upstream_destroy(ctx->upstreams[i]);
    }

    free(ctx);
    rg_engine_ctx(e, &rg_llm_part) = NULL;
}


uint64_t
rg_llm_retries(rg_engine_t *e)
{
    uint64_t       n;
    rg_uint_t      i;
    rg_llm_ctx_t  *ctx;

    n = 0;
    ctx = rg_llm_ctx(e);

    for (i = 0; i < ctx->n; i++) {
        n += ctx->upstreams[i]->stats.retries;
    }

    return n;
}
