/* rg_trace_export.c: an engine's span exporter. Ended spans (each one
 * OTLP JSON object) wait in a bounded ring; a batch of otlp_batch goes
 * as soon as that many wait, else otlp_flush after the first one came,
 * POSTed as one ExportTraceServiceRequest (resourceSpans → scopeSpans →
 * spans) through the engine's curl multi, one request at a time. The
 * reactor never waits for the collector: past otlp_max_queue a span is
 * dropped, and a batch the collector did not take (no connection, a
 * timeout, a status other than 2xx) is dropped, both counted; the log
 * says so once when the collector goes away and once when it is back,
 * not per batch; /metrics counts them too. Knows nothing of sessions. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_event.h>
#include <rg_trace.h>
#include <rg_metrics.h>
#include <jansson.h>


/* the last flush, when the engine goes, waits at most this long */
#define RG_TRACE_EXIT_WAIT  1000


typedef struct {
    rg_curl_xfer_t      xfer;         /* first */
    rg_trace_t         *trace;
    rg_buf_t            body;
    struct curl_slist  *headers;
    rg_uint_t           n;            /* spans in it */
    char                errbuf[CURL_ERROR_SIZE];
} rg_trace_post_t;


struct rg_trace_s {
    rg_engine_t        *engine;
    rg_trace_conf_t    *conf;
    rg_curl_t          *curl;
    rg_log_t           *log;

    rg_str_t           *ring;         /* spans waiting, oldest at head */
    rg_uint_t           head;
    rg_uint_t           count;
    rg_uint_t           cap;

    struct event       *flush_ev;
    rg_trace_post_t    *post;         /* in flight */
    char               *prefix;       /* the request up to its spans */
    size_t              prefix_len;

    rg_trace_stats_t    stats;
    uint64_t            down_dropped; /* since the collector went away */

    unsigned            flush_set:1;
    unsigned            down:1;
    unsigned            full:1;       /* the ring overflowed, said once */
    unsigned            exiting:1;
};


static void rg_trace_flush_handler(evutil_socket_t fd, short what,
    void *arg);
static void rg_trace_done(rg_curl_xfer_t *x, CURLcode rc);


/* the collector's answer says nothing we act on but its status; without
 * a write function curl would print it on stdout */
static size_t
rg_trace_discard(char *p, size_t size, size_t n, void *data)
{
    return size * n;
}


/* {"resourceSpans":[{"resource":{…},"scopeSpans":[{"scope":{…},
 * "spans":[  — the spans then "]}]}]}" */
static rg_int_t
rg_trace_prefix(rg_trace_t *t)
{
    char    *text, *p;
    json_t  *j;

    j = json_pack("{s:[{s:{s:[{s:s, s:{s:s%}}, {s:s, s:{s:s}}, "
                  "{s:s, s:{s:s}}]}, s:[{s:{s:s, s:s}, s:[]}]}]}",
                  "resourceSpans",
                  "resource", "attributes",
                  "key", "service.name", "value", "stringValue",
                  t->conf->service_name.data, t->conf->service_name.len,
                  "key", "service.version", "value", "stringValue",
                  RG_VERSION,
                  "key", "telemetry.sdk.name", "value", "stringValue",
                  "reagent",
                  "scopeSpans", "scope", "name", "reagent", "version",
                  RG_VERSION, "spans");
    if (j == NULL) {
        return RG_ERROR;
    }

    text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);

    /* cut at the empty list of spans: what follows it is the suffix */
    p = text ? strstr(text, "\"spans\":[]") : NULL;
    if (p == NULL) {
        free(text);
        return RG_ERROR;
    }

    t->prefix_len = (size_t) (p - text) + sizeof("\"spans\":[") - 1;
    t->prefix = text;

    return RG_OK;
}


#define RG_TRACE_SUFFIX  "]}]}]}"


rg_trace_t *
rg_trace_create(rg_engine_t *e, rg_trace_conf_t *conf)
{
    rg_trace_t  *t;

    t = calloc(1, sizeof(rg_trace_t));
    if (t == NULL) {
        return NULL;
    }

    t->engine = e;
    t->conf = conf;
    t->curl = rg_event_ctx(e);
    t->log = e->log;
    t->cap = (rg_uint_t) conf->max_queue;
    t->ring = calloc(t->cap, sizeof(rg_str_t));
    t->flush_ev = evtimer_new(e->base, rg_trace_flush_handler, t);

    if (t->ring == NULL || t->flush_ev == NULL || t->curl == NULL
        || rg_trace_prefix(t) != RG_OK)
    {
        if (t->flush_ev) {
            event_free(t->flush_ev);
        }
        free(t->ring);
        free(t->prefix);
        free(t);
        return NULL;
    }

    return t;
}


const rg_trace_stats_t *
rg_trace_stats(rg_engine_t *e)
{
    rg_trace_t  *t;

    t = e ? rg_trace_ctx(e) : NULL;
    if (t == NULL) {
        return NULL;
    }

    t->stats.queued = t->count;

    return &t->stats;
}


static void
rg_trace_drop(rg_trace_t *t, uint64_t n)
{
    t->stats.dropped += n;
    rg_metrics_trace_spans(0, n);

    if (t->down) {
        t->down_dropped += n;
    }
}


static void
rg_trace_arm(rg_trace_t *t, rg_msec_t ms)
{
    /* a re-arm replaces the pending one */
    rg_timer_add(t->flush_ev, ms);
    t->flush_set = 1;
}


void
rg_trace_push(rg_trace_t *t, char *json, size_t len)
{
    rg_uint_t  i;

    if (json == NULL) {
        rg_trace_drop(t, 1);           /* out of memory making it */
        return;
    }

    if (t->count == t->cap) {
        free(json);
        rg_trace_drop(t, 1);

        if (!t->full) {
            t->full = 1;
            rg_log_error(RG_LOG_WARN, t->log, 0, "%lu spans wait for the "
                         "collector (otlp_max_queue): new ones are dropped "
                         "until it takes them", (unsigned long) t->cap);
        }
        return;
    }

    i = (t->head + t->count) % t->cap;
    t->ring[i].data = json;
    t->ring[i].len = len;
    t->count++;
    t->stats.spans++;

    if (t->exiting || t->post) {
        return;                        /* its end sends the next batch */
    }

    /* never a transfer from the caller's stack: from the loop, soon */
    if (t->count >= (rg_uint_t) t->conf->batch) {
        rg_trace_arm(t, 0);

    } else if (!t->flush_set) {
        rg_trace_arm(t, t->conf->flush);
    }
}


/* the n oldest spans leave the ring */
static void
rg_trace_shift(rg_trace_t *t, rg_uint_t n)
{
    rg_str_t   *sp;
    rg_uint_t   i;

    for (i = 0; i < n; i++) {
        sp = &t->ring[t->head];
        free(sp->data);
        sp->data = NULL;
        t->head = (t->head + 1) % t->cap;
    }

    t->count -= n;
}


/* the oldest spans, at most otlp_batch of them, as one request */
static void
rg_trace_send(rg_trace_t *t)
{
    CURL             *e;
    rg_str_t         *sp;
    rg_uint_t         i, n;
    rg_trace_post_t  *p;

    n = rg_min(t->count, (rg_uint_t) t->conf->batch);
    if (n == 0 || t->post) {
        return;
    }

    p = calloc(1, sizeof(rg_trace_post_t));
    e = curl_easy_init();

    if (p == NULL || e == NULL) {
        goto failed;
    }

    p->trace = t;
    p->n = n;

    if (rg_buf_append(&p->body, t->prefix, t->prefix_len) != RG_OK) {
        goto failed;
    }

    for (i = 0; i < n; i++) {
        sp = &t->ring[(t->head + i) % t->cap];

        if ((i && rg_buf_append(&p->body, ",", 1) != RG_OK)
            || rg_buf_append(&p->body, sp->data, sp->len) != RG_OK)
        {
            goto failed;
        }
    }

    if (rg_buf_append(&p->body, RG_TRACE_SUFFIX, sizeof(RG_TRACE_SUFFIX) - 1)
        != RG_OK)
    {
        goto failed;
    }

    p->headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (p->headers == NULL) {
        goto failed;
    }

    curl_easy_setopt(e, CURLOPT_URL, t->conf->endpoint.data);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, p->body.data);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                     (curl_off_t) p->body.len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, p->headers);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long) t->conf->timeout);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, p->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, rg_trace_discard);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "reagent/" RG_VERSION);
    curl_easy_setopt(e, CURLOPT_PROXY, "");

    p->xfer.easy = e;
    p->xfer.done = rg_trace_done;
    p->xfer.data = p;

    if (rg_curl_add(t->curl, &p->xfer) != RG_OK) {
        goto failed;
    }

    /* the request holds its own copy: the ring's go now */
    rg_trace_shift(t, n);
    t->full = 0;
    t->post = p;
    t->stats.batches++;

    return;

failed:

    /* out of memory: this batch cannot go */
    rg_trace_shift(t, n);
    t->stats.failed++;
    rg_trace_drop(t, n);

    if (p) {
        curl_slist_free_all(p->headers);
        rg_buf_free(&p->body);
        free(p);
    }
    if (e) {
        curl_easy_cleanup(e);
    }
}


static void
rg_trace_post_free(rg_trace_post_t *p)
{
    if (p->xfer.easy) {
        curl_easy_cleanup(p->xfer.easy);
    }

    curl_slist_free_all(p->headers);
    rg_buf_free(&p->body);
    free(p);
}


static void
rg_trace_next(rg_trace_t *t)
{
    if (t->exiting || t->post || t->count == 0) {
        return;
    }

    if (t->count >= (rg_uint_t) t->conf->batch) {
        rg_trace_send(t);

    } else if (!t->flush_set) {
        rg_trace_arm(t, t->conf->flush);
    }
}


static void
rg_trace_flush_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_trace_t  *t;

    t = arg;
    t->flush_set = 0;

    if (t->post == NULL) {
        rg_trace_send(t);
    }

    rg_trace_next(t);
}


static void
rg_trace_done(rg_curl_xfer_t *x, CURLcode rc)
{
    long              status;
    rg_trace_t       *t;
    rg_trace_post_t  *p;
    char              why[CURL_ERROR_SIZE + 64];

    p = x->data;
    t = p->trace;
    t->post = NULL;

    status = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);

    if (rc == CURLE_OK && status >= 200 && status < 300) {
        t->stats.exported += p->n;
        rg_metrics_trace_spans(p->n, 0);

        if (t->down) {
            rg_log_error(RG_LOG_NOTICE, t->log, 0, "the collector \"%s\" "
                         "takes spans again; %llu were dropped while it did "
                         "not", t->conf->endpoint.data,
                         (unsigned long long) t->down_dropped);
            t->down = 0;
            t->down_dropped = 0;
        }

    } else {
        t->stats.failed++;

        if (!t->down) {
            if (rc != CURLE_OK) {
                snprintf(why, sizeof(why), "%s", x->reason ? x->reason
                         : p->errbuf[0] ? p->errbuf
                                        : curl_easy_strerror(rc));
            } else {
                snprintf(why, sizeof(why), "HTTP %ld", status);
            }

            rg_log_error(RG_LOG_WARN, t->log, 0, "cannot export spans to "
                         "\"%s\": %s; spans are dropped (and counted) until "
                         "it takes them", t->conf->endpoint.data, why);
            t->down = 1;
        }

        rg_trace_drop(t, p->n);
    }

    rg_trace_post_free(p);
    rg_trace_next(t);
}


static void
rg_trace_tick(evutil_socket_t fd, short what, void *arg)
{
    /* only wakes the loop of rg_trace_destroy() to look at the clock */
}


void
rg_trace_destroy(rg_trace_t *t)
{
    rg_uint_t        i;
    rg_msec_t        until;
    struct event    *tick;
    struct timeval   tv = { 0, 20 * 1000 };

    if (t == NULL) {
        return;
    }

    if (t->flush_set) {
        event_del(t->flush_ev);
        t->flush_set = 0;
    }

    t->exiting = 1;

    /* one last flush, bounded; a collector already away is not waited
     * for again */
    until = rg_monotonic_msec() + rg_min(t->conf->timeout,
                                         RG_TRACE_EXIT_WAIT);
    tick = event_new(t->engine->base, -1, EV_PERSIST, rg_trace_tick, NULL);

    if (tick && event_add(tick, &tv) == 0) {
        while ((t->count || t->post) && rg_monotonic_msec() < until) {
            if (t->post == NULL) {
                if (t->down) {
                    break;
                }
                rg_trace_send(t);
                continue;
            }

            event_base_loop(t->engine->base, EVLOOP_ONCE);
        }
    }

    if (tick) {
        event_free(tick);
    }

    if (t->post) {
        rg_curl_remove(t->curl, &t->post->xfer);
        t->stats.failed++;
        rg_trace_drop(t, t->post->n);
        rg_trace_post_free(t->post);
        t->post = NULL;
    }

    rg_trace_drop(t, t->count);

    for (i = 0; i < t->count; i++) {
        free(t->ring[(t->head + i) % t->cap].data);
    }

    if (t->stats.dropped) {
        rg_log_error(RG_LOG_NOTICE, t->log, 0, "spans: %llu exported, %llu "
                     "dropped", (unsigned long long) t->stats.exported,
                     (unsigned long long) t->stats.dropped);
    }

    event_free(t->flush_ev);
    free(t->ring);
    free(t->prefix);
    free(t);
}
