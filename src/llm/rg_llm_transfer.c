/* rg_llm_transfer.c: an attempt of a request (rg_llm_client.c) on the
 * wire: its curl easy handle, its clocks (connect, total and idle: one
 * reactor timer, re-armed lazily), its bytes and headers as they come
 * (counted against the engine's budget; the provider's id of the
 * response kept), and what a transport failure says. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_client.h>
#include <rg_llm_client_int.h>
#include <rg_json.h>


/* a new name's first letter goes into rg_llm_header_cb's filter too */
const char  *rg_llm_provider_id_headers[RG_LLM_PROVIDER_IDS] = {
    "x-request-id", "request-id", "cf-ray"
};


/* (re)arms the attempt's timer for the first clock that may run out */
static void
rg_llm_timer_arm(rg_llm_req_t *r, rg_msec_t now)
{
    rg_msec_t       due;
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

    rg_timer_add(&r->timer, due - now);
    r->timer_set = 1;
    r->armed = due;
}


void
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
void
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


rg_int_t
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


void
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


/* one of the attempt's clocks may have run out */
void
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
