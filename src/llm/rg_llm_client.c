/* rg_llm_client.c: sends Chat Completions requests through the worker's
 * curl multi. Owns the per-upstream concurrency cap (requests beyond it
 * wait in a FIFO queue, they are never failed), the retry policy
 * (exponential backoff with jitter, Retry-After honoured), the curl share
 * groups that keep connection reuse cheap, and the clocks of an attempt:
 * connect, total and idle timeouts are reactor timers of our own (curl's
 * per-handle timeouts cost CPU and its low-speed check counts whole
 * seconds), one timer per request, re-armed lazily. Bytes of responses are
 * counted against one budget for the engine (rg_llm_ctx_t). Knows the
 * wire format only through its codec's row (rg_llm.h): its path, its key
 * header, its reading of answers whole or streamed. Reads what the
 * headers say of waiting (retry-after, x-should-retry, the reset of an
 * exhausted limit) for the codec's classifier. Builds the llm part's runtime
 * in each engine: one upstream per llm block. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_client.h>
#include <rg_event.h>
#include <rg_json.h>
#include <rg_secret.h>
#include <rg_llm_shared.h>
#include <rg_llm_classify.h>
#include <rg_llm_hints.h>
#include <rg_store_conf.h>
#include <strings.h>
#include <math.h>


/* the metrics name the outcomes as rg_llm_status_name() (test_metrics) */
_Static_assert(RG_LLM_ERR_OVER_RATE + 1 == RG_METRICS_OUTCOMES,
               "the metrics' model call outcomes");


/* sessions per lane, at most: the driver's per_cache may be lower */
#define RG_LLM_LANE_SESSIONS   16


/* a new name's first letter goes into rg_llm_header_cb's filter too */
const char  *rg_llm_provider_id_headers[RG_LLM_PROVIDER_IDS] = {
    "x-request-id", "request-id", "cf-ray"
};


static void rg_llm_start(rg_llm_req_t *r);
static void rg_llm_done(rg_curl_xfer_t *x, CURLcode rc);
static void rg_llm_backoff_end(rg_llm_req_t *r);
static void rg_llm_replay(rg_llm_req_t *r);
static void rg_llm_timer_handler(evutil_socket_t fd, short what, void *arg);
static void rg_llm_complete(rg_llm_req_t *r, CURLcode rc, long status);


/* a piece of the streamed text, to the caller: what it builds of it
 * outlives the parse, so jansson's arena is closed meanwhile */
static void
rg_llm_delta_out(void *data, size_t offset, const char *text, size_t len)
{
    rg_uint_t      depth;
    rg_llm_req_t  *r;

    r = data;

    depth = rg_json_arena_pause();
    r->delta(r->data, offset, text, len);
    rg_json_arena_resume(depth);
}


/* the wait queue is doubly linked: a cancel takes O(1) */
static void
rg_llm_enqueue(rg_llm_req_t *r)
{
    r->queued = 1;
    r->qseq = ++r->up->qseq;
    r->next = NULL;
    r->pprev = r->up->queue_tail;
    *r->up->queue_tail = r;
    r->up->queue_tail = &r->next;
}


static void
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
static void
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


static void
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
static rg_int_t
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


/* refills the rate buckets; true when one more request may start now */
/* the limits this process holds itself: those not shared, or all of
 * them while the store cannot be asked (rg_llm_shared.c) */
static double
rg_llm_rpm(rg_llm_upstream_t *up)
{
    return (rg_llm_shared_local(up->shared) & RG_LLM_SHARED_RPM)
           ? up->conf->requests_per_minute : 0;
}


static double
rg_llm_tpm(rg_llm_upstream_t *up)
{
    return (rg_llm_shared_local(up->shared) & RG_LLM_SHARED_TPM)
           ? up->conf->tokens_per_minute : 0;
}


static rg_uint_t
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
static void
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

        if (rg_llm_shared_upstream(up->shared) != RG_OK) {
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


static rg_uint_t
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


static void rg_llm_started(rg_curl_xfer_t *x);


void
rg_llm_req_init(rg_llm_req_t *r, rg_llm_upstream_t *up, rg_int_t lane,
    rg_llm_handler_pt handler, void *data, rg_log_t *log)
{
    memset(r, 0, sizeof(rg_llm_req_t));

    r->up = up;
    r->lane = lane;
    r->handler = handler;
    r->data = data;
    r->log = log;
    r->xfer.done = rg_llm_done;
    r->xfer.start = rg_llm_started;
    r->xfer.data = r;

    evtimer_assign(&r->timer, up->base, rg_llm_timer_handler, r);
}


/* (re)arms the attempt's timer for the first clock that may run out */
static void
rg_llm_timer_arm(rg_llm_req_t *r, rg_msec_t now)
{
    rg_msec_t       due;
    struct timeval  tv;
    rg_llm_conf_t  *c;

    c = r->up->conf;
    due = r->due;

    if (!r->connected && r->connect_due) {
        due = rg_min(due, r->connect_due);
    }

    if (r->idle_on) {
        due = rg_min(due, r->last_byte + c->idle_timeout);
    }

    if (due == (rg_msec_t) -1) {
        return;                        /* no clock runs */
    }

    due = rg_max(due, now);

    tv.tv_sec = (due - now) / 1000;
    tv.tv_usec = ((due - now) % 1000) * 1000;

    evtimer_add(&r->timer, &tv);
    r->timer_set = 1;
    r->armed = due;
}


static void
rg_llm_timer_stop(rg_llm_req_t *r)
{
    /* also takes back an activation that is due (rg_llm_mem_room) */
    event_del(&r->timer);
    r->timer_set = 0;
}


/* the idle clock runs from now: a sooner deadline re-arms the timer */
static void
rg_llm_idle_start(rg_llm_req_t *r, rg_msec_t now)
{
    r->idle_on = 1;
    r->last_byte = now;

    if (!r->timer_set || now + r->up->conf->idle_timeout < r->armed) {
        rg_llm_timer_arm(r, now);
    }
}


/* curl took the transfer (it may have waited for a connection slot) */
static void
rg_llm_started(rg_curl_xfer_t *x)
{
    rg_msec_t       now;
    rg_llm_req_t   *r;
    rg_llm_conf_t  *c;

    r = x->data;
    c = r->up->conf;
    now = rg_monotonic_msec();

    r->attempt_started = now;
    r->due = c->timeout ? now + c->timeout : (rg_msec_t) -1;
    r->connect_due = c->connect_timeout ? now + c->connect_timeout : 0;

    rg_llm_timer_arm(r, now);
}


/* CURLOPT_PREREQFUNCTION: connected (or reused), the request leaves */
static int
rg_llm_prereq_cb(void *data, char *ip, char *local_ip, int port,
    int local_port)
{
    rg_llm_req_t  *r;

    r = data;
    r->connected = 1;

    /* a stream starts at once, its idle clock with the connection; a
     * whole answer may take long to start: its clock starts with its
     * first byte */
    if (r->up->conf->stream && !r->idle_on) {
        rg_llm_idle_start(r, rg_monotonic_msec());
    }

    return CURL_PREREQFUNC_OK;
}


/* a byte came: the idle clock restarts (lazily: the timer looks at
 * last_byte when it fires) */
static void
rg_llm_byte(rg_llm_req_t *r)
{
    rg_msec_t  now;

    now = rg_monotonic_msec();

    if (!r->idle_on) {
        rg_llm_idle_start(r, now);
        return;
    }

    r->last_byte = now;
}


static size_t
rg_llm_write_cb(char *p, size_t size, size_t n, void *data)
{
    rg_int_t       rc;
    rg_llm_req_t  *r;

    r = data;
    n *= size;

    if (r->over_memory) {
        return 0;               /* stopped to keep response_memory */
    }

    rg_llm_byte(r);

    if (n > RG_LLM_MAX_RESPONSE - r->got) {
        r->too_large = 1;
        return 0;               /* curl fails the transfer */
    }

    if (rg_llm_mem_room(r, n) != RG_OK) {
        return 0;
    }

    /* a stream's raw body is kept only for a transcript */
    if ((r->stream == NULL || r->keep_body)
        && rg_buf_append(&r->resp, p, n) != RG_OK)
    {
        r->nomem = 1;
        return 0;
    }

    r->got += n;
    rg_llm_mem_take(r, n);

    /* a stream is read as it arrives; no JSON value outlives a feed */
    if (r->stream) {
        rg_json_arena_begin();
        rc = r->up->conf->codec->stream_feed(r->stream, p, n);
        rg_json_arena_end();

        if (rc != RG_OK) {
            r->nomem = 1;
            return 0;
        }
    }

    return n;
}


/* a header with the provider's id of the response: its value, made
 * printable and cut at 95 bytes, goes to r->provider_id, in the pool of
 * the response */
static rg_uint_t
rg_llm_provider_id(rg_llm_req_t *r, const char *p, size_t len)
{
    char        *dst;
    size_t       i, k, n;
    const char  *name;

    for (k = 0; k < RG_LLM_PROVIDER_IDS; k++) {
        name = rg_llm_provider_id_headers[k];
        n = strlen(name);

        if (len > n && p[n] == ':' && rg_str_casecmp_prefix(p, len, name) == 0)
        {
            break;
        }
    }

    if (k == RG_LLM_PROVIDER_IDS) {
        return 0;
    }

    p += n + 1;
    len -= n + 1;

    while (len && (*p == ' ' || *p == '\t')) {
        p++;
        len--;
    }

    while (len && (p[len - 1] == '\r' || p[len - 1] == '\n'
                   || p[len - 1] == ' '))
    {
        len--;
    }

    len = rg_min(len, RG_LLM_PROVIDER_ID_LEN);

    /* kept only for the transcript: none of an empty value */
    dst = (len && r->pool) ? rg_palloc(r->pool, len + 1) : NULL;
    if (dst == NULL) {
        return 1;
    }

    r->provider_id[k] = dst;

    for (i = 0; i < len; i++) {
        dst[i] = (p[i] > ' ' && p[i] < 0x7f) ? p[i] : '_';
    }

    dst[len] = '\0';

    return 1;
}


static size_t
rg_llm_header_cb(char *p, size_t size, size_t n, void *data)
{
    char                *end, val[32];
    size_t               len, vlen;
    rg_llm_req_t        *r;
    unsigned long long   cl;

    r = data;
    len = size * n;

    rg_llm_byte(r);

    /* retry-after*, request-id, x-request-id, x-should-retry,
     * x-ratelimit-*, anthropic-ratelimit-*, cf-ray, content-length: the
     * others (most of them) end at their first letter */
    if (len == 0 || ((p[0] | 0x20) != 'r' && (p[0] | 0x20) != 'c'
                     && (p[0] | 0x20) != 'x' && (p[0] | 0x20) != 'a'))
    {
        return len;
    }

    while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == '\n')) {
        len--;
    }

    if (rg_llm_hints_header(&r->hints, p, len, time(NULL))) {
        /* what it says of waiting, for the classifier */
    } else if (rg_llm_provider_id(r, p, len)) {
        /* kept for the transcript */

    } else if (rg_str_casecmp_prefix(p, len, "content-length:") == 0) {
        /* a body over the cap is refused before it is downloaded */
        vlen = rg_min(len - 15, sizeof(val) - 1);
        memcpy(val, p + 15, vlen);
        val[vlen] = '\0';

        errno = 0;
        cl = strtoull(val, &end, 10);

        if (end != val && (errno == ERANGE || cl > RG_LLM_MAX_RESPONSE)) {
            r->too_large = 1;
            return 0;
        }
    }

    return size * n;
}


static rg_int_t
rg_llm_easy(rg_llm_req_t *r)
{
    CURL           *e;
    rg_llm_conf_t  *c;

    e = curl_easy_init();
    if (e == NULL) {
        return RG_ERROR;
    }

    c = r->up->conf;

    /* no CURLOPT_TIMEOUT_MS, CONNECTTIMEOUT_MS or LOW_SPEED_*: the
     * request's own timer keeps those clocks (rg_llm_timer_arm) */
    curl_easy_setopt(e, CURLOPT_URL, r->up->url ? r->up->url : c->url);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, &r->rid);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, rg_llm_write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, rg_llm_header_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, rg_llm_prereq_cb);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    /* curl allocates a byte more than its buffer size: buffer_size is the
     * whole allocation, one of malloc's size classes (4 KiB, not 5) */
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, (long) c->buffer_size - 1);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");

    /* every encoding curl decodes; not for a server on this machine */
    if (c->gzip) {
        curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    }

    if (r->lane >= 0 && (rg_uint_t) r->lane < r->up->nlanes) {
        curl_easy_setopt(e, CURLOPT_SHARE, r->up->shares[r->lane]);
    }

    r->xfer.easy = e;

    return RG_OK;
}


void
rg_llm_traceparent(rg_llm_req_t *r, const char *value)
{
    if (value == NULL || value[0] == '\0') {
        r->tp_header[0] = '\0';
        return;
    }

    rg_cpystrn(rg_cpymem(r->tp_header, "traceparent: ", 13), value,
               sizeof(r->tp_header) - 13);
}


rg_int_t
rg_llm_send(rg_llm_req_t *r, const char *body, size_t len,
    const char *request_id, rg_pool_t *pool, const char *id_prefix)
{
    assert(!r->busy);

    r->body = body;
    r->body_len = len;
    r->pool = pool;
    r->id_prefix = id_prefix;
    r->attempt = 0;
    r->budget_spent = 0;
    r->started = rg_monotonic_msec();
    r->started_us = rg_monotonic_usec();

    /* the last answer's buffer is not held while this one is awaited: a
     * new one comes with its first byte */
    rg_buf_free(&r->resp);
    memset(r->provider_id, 0, sizeof(r->provider_id));

    rg_cpystrn(rg_cpymem(r->rid_header, "X-Request-ID: ", 14), request_id,
               sizeof(r->rid_header) - 14);

    /* the request's own headers, chained in front of the shared ones */
    r->rid.data = r->rid_header;
    r->rid.next = r->up->headers;

    if (r->tp_header[0]) {
        r->tp.data = r->tp_header;
        r->tp.next = r->up->headers;
        r->rid.next = &r->tp;
    }

    if (r->xfer.easy == NULL && rg_llm_easy(r) != RG_OK) {
        return RG_ERROR;
    }

    r->busy = 1;
    r->estimate = len / 4 + 1;

    if (r->up->queue_head || r->up->shared
        || r->up->stats.active >= (rg_uint_t) r->up->conf->max_connections
        || !rg_llm_rate_ok(r->up))
    {
        rg_llm_enqueue(r);
        r->up->stats.queued++;
        rg_llm_next(r->up);
        return RG_OK;
    }

    rg_llm_start(r);

    return RG_OK;
}


static void
rg_llm_fail_now(rg_llm_req_t *r, rg_llm_status_e status, const char *msg)
{
    rg_llm_response_t  resp;

    memset(&resp, 0, sizeof(resp));
    resp.status = status;
    resp.error.data = (char *) msg;
    resp.error.len = strlen(msg);

    r->busy = 0;
    r->up->stats.failures++;
    r->up->stats.calls++;
    rg_metrics_model_call(r->up->metrics, status,
                          rg_monotonic_usec() - r->started_us, 0, 0);
    r->handler(r, &resp);
}


static void
rg_llm_start(rg_llm_req_t *r)
{
    rg_llm_upstream_t  *up;

    up = r->up;

    rg_buf_reset(&r->resp);
    rg_llm_mem_release(r);
    r->http_status = 0;
    rg_llm_hints_init(&r->hints);
    r->got = 0;
    r->too_large = 0;
    r->over_memory = 0;
    r->nomem = 0;
    r->connected = 0;
    r->idle_on = 0;
    memset(r->provider_id, 0, sizeof(r->provider_id));

    if (up->conf->stream && !r->recorded) {
        if (r->stream) {
            up->conf->codec->stream_destroy(r->stream);
        }

        r->stream = up->conf->codec->stream_create(r->max_calls,
                                                   r->delta ? rg_llm_delta_out
                                                            : NULL, r);
        if (r->stream == NULL) {
            rg_llm_fail_now(r, RG_LLM_ERR_FATAL, "out of memory");
            return;
        }
    }
    r->errbuf[0] = '\0';
    r->attempt_started = rg_monotonic_msec();

    if (r->recorded) {
        /* answered from the loop, like a real response */
        r->waiting = 1;
        event_active(&r->timer, EV_TIMEOUT, 1);
        up->stats.active++;
        return;
    }

    curl_easy_setopt(r->xfer.easy, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(r->xfer.easy, CURLOPT_POSTFIELDSIZE, (long) r->body_len);

    /* a lane of at most per_cache sessions bounds its own connections */
    r->xfer.bounded = r->lane >= 0 && (rg_uint_t) r->lane < up->nlanes
                      && up->lane_users[r->lane] <= rg_llm_lane_size(up);

    if (rg_curl_add(up->curl, &r->xfer) != RG_OK) {
        rg_llm_fail_now(r, RG_LLM_ERR_CONNECT,
                        "cannot start a request to the model");
        return;
    }

    if (rg_llm_rpm(up)) {
        up->rpm_left -= 1;
    }

    if (rg_llm_tpm(up)) {
        up->tpm_left -= (double) r->estimate;
    }

    up->stats.requests++;
    up->stats.active++;
    if (up->stats.active > up->stats.max_active) {
        up->stats.max_active = up->stats.active;
    }
}


/* a slot was freed: the oldest waiting request takes it */
void
rg_llm_next(rg_llm_upstream_t *up)
{
    size_t         taken;
    uint64_t       slot;
    rg_llm_req_t  *r;

    while (up->queue_head
           && up->stats.active < (rg_uint_t) up->conf->max_connections)
    {
        if (!rg_llm_rate_ok(up)) {
            rg_llm_rate_wait(up);
            return;
        }

        taken = 0;
        slot = 0;

        if (up->shared
            && rg_llm_shared_admit(up->shared, up->queue_head->estimate,
                                   up->queue_head->qseq, &taken, &slot)
               != RG_OK)
        {
            return;                    /* the store answers later */
        }

        r = up->queue_head;
        rg_llm_dequeue(r);
        r->shared_taken = taken;
        r->shared_slot = slot;
        rg_llm_start(r);
    }
}


static void
rg_llm_backoff_end(rg_llm_req_t *r)
{
    r->waiting = 0;

    if (r->up->queue_head || r->up->shared
        || r->up->stats.active >= (rg_uint_t) r->up->conf->max_connections
        || !rg_llm_rate_ok(r->up))
    {
        rg_llm_enqueue(r);
        rg_llm_next(r->up);
        return;
    }

    rg_llm_start(r);
}


static rg_msec_t
rg_llm_backoff(rg_llm_req_t *r, rg_llm_response_t *resp)
{
    rg_msec_t       d;
    rg_llm_conf_t  *c;

    c = r->up->conf;

    /* the wait the answer asked for */
    if (resp->retry_after) {
        return resp->retry_after;
    }

    d = c->retry_base;
    d <<= rg_min(r->attempt, 20);
    d = rg_min(d, c->retry_max);

    /* jitter: somewhere in the upper half, so a burst spreads out */
    return d / 2 + (rg_msec_t) (random() % (long) (d / 2 + 1));
}


/* "16m", "1.5m", "800k": a size as the configuration writes it */
static void
rg_llm_size_text(char *buf, size_t len, size_t n)
{
    if (n >= 1024 * 1024) {
        snprintf(buf, len, "%.3gm", (double) n / (1024 * 1024));

    } else if (n >= 1024) {
        snprintf(buf, len, "%.3gk", (double) n / 1024);

    } else {
        snprintf(buf, len, "%lu bytes", (unsigned long) n);
    }
}


static void
rg_llm_transport_error(rg_llm_req_t *r, CURLcode rc, rg_llm_response_t *resp)
{
    int             n;
    char           *msg, a[32], b[32];
    size_t          size;
    rg_llm_conf_t  *c;

    c = r->up->conf;
    size = 320;

    msg = rg_palloc(r->pool, size);
    if (msg == NULL) {
        return;
    }

    if (r->too_large) {
        /* the same request would bring the same body: not asked again */
        resp->status = RG_LLM_ERR_TOO_LARGE;
        n = snprintf(msg, size, "the model's response is larger than 16m "
                     "(llm \"%.*s\"); not retried", (int) c->name.len,
                     c->name.data);

    } else if (r->over_memory) {
        rg_llm_size_text(a, sizeof(a), r->up->ctx->mem.limit);
        rg_llm_size_text(b, sizeof(b), r->got);
        resp->status = RG_LLM_ERR_BAD_RESPONSE;
        n = snprintf(msg, size, "the responses being read passed "
                     "response_memory %s; this one held the most (%s) and "
                     "was stopped (llm \"%.*s\")", a, b, (int) c->name.len,
                     c->name.data);

    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        resp->status = RG_LLM_ERR_TIMEOUT;
        n = snprintf(msg, size, "the model did not answer in time "
                     "(llm \"%.*s\": %s)", (int) c->name.len, c->name.data,
                     r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc));

    } else if (rc == CURLE_WRITE_ERROR) {
        resp->status = RG_LLM_ERR_BAD_RESPONSE;
        n = snprintf(msg, size, "out of memory reading the model's response "
                     "(llm \"%.*s\")", (int) c->name.len, c->name.data);

    } else {
        resp->status = RG_LLM_ERR_CONNECT;
        n = snprintf(msg, size, "cannot reach the model (llm \"%.*s\": %s)",
                     (int) c->name.len, c->name.data,
                     r->xfer.reason ? r->xfer.reason
                     : r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc));
    }

    resp->error.data = msg;
    resp->error.len = n < 0 ? 0 : rg_min((size_t) n, size - 1);
}


/* "10s", "1.5s", "250ms" */
static void
rg_llm_msec_text(char *buf, size_t len, rg_msec_t ms)
{
    if (ms % 1000 == 0) {
        snprintf(buf, len, "%llus", (unsigned long long) ms / 1000);

    } else if (ms > 1000) {
        snprintf(buf, len, "%.3gs", (double) ms / 1000);

    } else {
        snprintf(buf, len, "%llums", (unsigned long long) ms);
    }
}


/* one of the attempt's clocks may have run out */
static void
rg_llm_timer_handler(evutil_socket_t fd, short what, void *arg)
{
    char            t[32];
    rg_msec_t       now;
    rg_llm_req_t   *r;
    rg_llm_conf_t  *c;

    r = arg;
    c = r->up->conf;
    r->timer_set = 0;

    /* between attempts the same event ends a backoff or gives a
     * recorded answer (a replayed call is never retried) */
    if (r->waiting) {
        if (r->recorded) {
            rg_llm_replay(r);
        } else {
            rg_llm_backoff_end(r);
        }
        return;
    }

    if (!r->xfer.active) {
        return;
    }

    now = rg_monotonic_msec();

    if (r->over_memory) {
        /* rg_llm_mem_room() picked it */

    } else if (now >= r->due) {
        rg_llm_msec_text(t, sizeof(t), c->timeout);
        snprintf(r->errbuf, sizeof(r->errbuf), "no complete answer within "
                 "%s (timeout)", t);

    } else if (!r->connected && r->connect_due && now >= r->connect_due) {
        rg_llm_msec_text(t, sizeof(t), c->connect_timeout);
        snprintf(r->errbuf, sizeof(r->errbuf), "no connection within %s "
                 "(connect_timeout)", t);

    } else if (r->idle_on && now >= r->last_byte + c->idle_timeout) {
        rg_llm_msec_text(t, sizeof(t), c->idle_timeout);
        snprintf(r->errbuf, sizeof(r->errbuf), "no byte for %s "
                 "(idle_timeout)", t);

    } else {
        rg_llm_timer_arm(r, now);      /* bytes came since: later */
        return;
    }

    rg_curl_remove(r->up->curl, &r->xfer);
    rg_llm_complete(r, r->over_memory ? CURLE_WRITE_ERROR
                                      : CURLE_OPERATION_TIMEDOUT, 0);
}


static rg_uint_t
rg_llm_retryable(rg_llm_status_e s)
{
    switch (s) {
    case RG_LLM_ERR_RATE:
    case RG_LLM_ERR_SERVER:
    case RG_LLM_ERR_TIMEOUT:
    case RG_LLM_ERR_CONNECT:
    case RG_LLM_ERR_BAD_RESPONSE:
        return 1;
    default:
        return 0;
    }
}


static void
rg_llm_replay(rg_llm_req_t *r)
{
    rg_llm_recorded_t  *rec;

    r->waiting = 0;
    rec = r->recorded;

    if (rec->status == 0) {
        snprintf(r->errbuf, sizeof(r->errbuf), "%.*s",
                 (int) rg_min(rec->len, sizeof(r->errbuf) - 1), rec->body);
        rg_llm_complete(r, CURLE_COULDNT_CONNECT, 0);
        return;
    }

    rg_buf_reset(&r->resp);
    rg_buf_append(&r->resp, rec->body, rec->len);
    rg_llm_complete(r, CURLE_OK, rec->status);
}


static void
rg_llm_done(rg_curl_xfer_t *x, CURLcode rc)
{
    long           status;
    rg_llm_req_t  *r;

    r = x->data;
    status = 0;

    if (rc == CURLE_OK) {
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    }

    rg_llm_complete(r, rc, status);
}


/* what an answer cost, by the llm's price: cache reads and writes are
 * part of the prompt's tokens, at their own prices */
static void
rg_llm_price(rg_llm_conf_t *c, rg_llm_response_t *resp)
{
    double  plain, cost;

    if (!c->priced || resp->status != RG_LLM_OK) {
        return;
    }

    plain = (double) resp->prompt_tokens - (double) resp->cached_tokens
            - (double) resp->cache_write_tokens;

    cost = rg_max(plain, 0) * c->price[RG_LLM_PRICE_INPUT]
           + (double) resp->cached_tokens * c->price[RG_LLM_PRICE_CACHED]
           + (double) resp->cache_write_tokens * c->price[RG_LLM_PRICE_WRITE]
           + (double) resp->completion_tokens * c->price[RG_LLM_PRICE_OUTPUT];

    resp->cost = cost / 1e6;
}


static void
rg_llm_complete(rg_llm_req_t *r, CURLcode code, long status)
{
    rg_int_t               rc;
    rg_llm_answer_t        answer;
    const rg_llm_codec_t  *codec;
    rg_msec_t           delay;
    struct timeval      tv;
    rg_llm_upstream_t  *up;
    rg_llm_response_t   resp;

    up = r->up;
    codec = up->conf->codec;

    up->stats.active--;
    rg_llm_shared_release(up->shared, r->shared_slot);
    r->shared_slot = 0;
    rg_llm_timer_stop(r);

    memset(&resp, 0, sizeof(resp));

    /* stopped for response_memory even if its last bytes had come */
    if (code != CURLE_OK || r->over_memory) {
        rg_llm_transport_error(r, code, &resp);

    } else {
        r->http_status = status;

        /* nothing jansson allocates here outlives the parse */
        rg_json_arena_begin();

        rg_llm_hints_end(&r->hints);

        answer.http_status = (int) status;
        answer.body = r->resp.data ? r->resp.data : "";
        answer.len = r->resp.len;
        answer.hints = &r->hints;
        answer.id_prefix = r->id_prefix;
        answer.max_calls = r->max_calls;

        if (up->conf->stream && r->stream == NULL) {
            /* a replayed stream: read the recorded body in one go */
            r->stream = codec->stream_create(r->max_calls, NULL, NULL);
            if (r->stream) {
                codec->stream_feed(r->stream, answer.body, answer.len);
            }
        }

        if (r->stream) {
            rc = codec->stream_finish(r->stream, r->pool, &answer, &resp);
            codec->stream_destroy(r->stream);
            r->stream = NULL;

        } else {
            rc = codec->parse(r->pool, &answer, &resp);
        }

        rg_json_arena_end();

        if (rc != RG_OK) {
            resp.status = RG_LLM_ERR_FATAL;
            rg_str_set(&resp.error, "out of memory reading the response");
        }

        rg_llm_price(up->conf, &resp);
    }

    /* the bytes are read: they no longer count against response_memory */
    rg_llm_mem_release(r);

    /* the provider counted the tokens: correct the estimate */
    if (rg_llm_tpm(up) && resp.total_tokens > 0) {
        up->tpm_left -= (double) resp.total_tokens - (double) r->estimate;
    }

    rg_llm_shared_usage(up->shared, r->shared_taken, resp.total_tokens);
    r->shared_taken = 0;

    /* the freed slot goes to the oldest waiting request first */
    rg_llm_next(up);

    delay = rg_llm_retryable(resp.status) ? rg_llm_backoff(r, &resp) : 0;

    /* every process waits, not only this request */
    if (resp.status == RG_LLM_ERR_RATE) {
        rg_llm_shared_cooldown(up->shared, delay);
    }

    if (rg_llm_retryable(resp.status)
        && r->attempt < (rg_uint_t) up->conf->max_retries
        && rg_monotonic_msec() + delay - r->started > up->conf->retry_budget)
    {
        r->budget_spent = 1;
        rg_log_error(RG_LOG_WARN, r->log, 0, "giving up on the model call: "
                     "the next retry would pass retry_budget %.3gs",
                     (double) up->conf->retry_budget / 1000);
    }

    if (rg_llm_retryable(resp.status) && !r->budget_spent && !r->recorded
        && r->attempt < (rg_uint_t) up->conf->max_retries)
    {
        r->attempt++;
        up->stats.retries++;
        rg_metrics_model_retry(up->metrics);

        rg_log_error(RG_LOG_WARN, r->log, 0,
                     "model call failed (%s: %.*s), retry %lu of %ld in %llums",
                     rg_llm_status_name(resp.status), (int) resp.error.len,
                     resp.error.data ? resp.error.data : "",
                     (unsigned long) r->attempt,
                     (long) up->conf->max_retries,
                     (unsigned long long) delay);

        tv.tv_sec = delay / 1000;
        tv.tv_usec = (delay % 1000) * 1000;

        /* the attempt's timer, stopped above, waits out the backoff */
        evtimer_add(&r->timer, &tv);
        r->waiting = 1;

        /* the response buffer is not needed while we wait */
        rg_buf_free(&r->resp);
        return;
    }

    if (resp.status != RG_LLM_OK) {
        up->stats.failures++;
    }

    up->stats.calls++;
    r->busy = 0;
    rg_metrics_model_usage(up->metrics, resp.cached_tokens,
                           resp.cache_write_tokens, resp.cost);
    rg_metrics_model_call(up->metrics, resp.status,
                          rg_monotonic_usec() - r->started_us,
                          resp.prompt_tokens, resp.completion_tokens);

    /* a large body is not kept while the session runs its tools, unless
     * a transcript still reads it in the handler */
    if (!r->keep_body && r->resp.cap > 16384) {
        rg_buf_free(&r->resp);
    }

    r->handler(r, &resp);
}


void
rg_llm_cancel(rg_llm_req_t *r)
{
    if (!r->busy) {
        return;
    }

    if (r->queued) {
        rg_llm_dequeue(r);
    }

    if (r->waiting) {
        event_del(&r->timer);
        r->waiting = 0;

        if (r->recorded) {
            r->up->stats.active--;       /* a replayed answer was due */
        }
    }

    rg_llm_timer_stop(r);
    rg_llm_mem_release(r);

    if (r->xfer.active) {
        rg_curl_remove(r->up->curl, &r->xfer);
        r->up->stats.active--;
        rg_llm_shared_release(r->up->shared, r->shared_slot);
        r->shared_slot = 0;
        rg_llm_next(r->up);
    }

    r->busy = 0;
}


void
rg_llm_req_free(rg_llm_req_t *r)
{
    rg_llm_cancel(r);
    rg_llm_timer_stop(r);
    rg_llm_mem_release(r);

    if (r->xfer.easy) {
        curl_easy_cleanup(r->xfer.easy);
        r->xfer.easy = NULL;
    }

    if (r->stream) {
        r->up->conf->codec->stream_destroy(r->stream);
        r->stream = NULL;
    }

    rg_buf_free(&r->resp);
}


rg_int_t
rg_llm_init_worker(rg_engine_t *e)
{
    rg_uint_t            i;
    rg_store_t          *st;
    rg_llm_ctx_t        *ctx;
    rg_llm_conf_t      **llms;
    rg_llm_main_conf_t  *lmcf;

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

        ctx->upstreams[i]->shared = rg_llm_shared_create(ctx->upstreams[i],
                                                         st, st->durable);
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
