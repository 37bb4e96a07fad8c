/* rg_http_server.c: the API in one worker. An evhttp server on the
 * worker's reactor accepts on the sockets the master opened (a second
 * one on metrics_listen answers /metrics and the probes only). Each
 * connection is counted (at most max_connections) and must send each
 * request whole within client_timeout. Each request is checked (a
 * Bearer token compared in constant time, the body's size), routed by
 * method and path, answered in JSON (errors as
 * {"error": {"message", "type", "code"}}) with its X-Request-ID, and
 * logged as one JSON line. A request whose answer comes later (a task
 * submitted to Redis, a chat completion) holds its rg_http_req_t; when
 * the client goes first, its gone() handler is told and it is freed. A
 * drain closes the sockets and answers what still comes 503. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_digest.h>
#include <rg_secret.h>
#include <rg_http.h>
#include <rg_metrics.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>
#include <fcntl.h>
#include <stdarg.h>


static int        rg_http_access_fd = -2;     /* -2: the error log's */
static uint64_t   rg_http_req_seq;


static void rg_http_request(struct evhttp_request *req, void *arg);
static void rg_http_timeouts(rg_http_t *h, struct evhttp_connection *evcon,
    rg_uint_t reading);
static void rg_http_release_when_sent(rg_http_req_t *r);
static void rg_http_metrics_request(struct evhttp_request *req, void *arg);


/* answering ------------------------------------------------------------ */

static void
rg_http_access(rg_http_req_t *r)
{
    int          fd;
    char        *line;
    json_t      *j;
    const char  *m;

    fd = rg_http_access_fd == -2 ? r->http->engine->log->fd
                                 : rg_http_access_fd;

    switch (evhttp_request_get_command(r->req)) {
    case EVHTTP_REQ_GET:     m = "GET"; break;
    case EVHTTP_REQ_POST:    m = "POST"; break;
    case EVHTTP_REQ_DELETE:  m = "DELETE"; break;
    case EVHTTP_REQ_PUT:     m = "PUT"; break;
    case EVHTTP_REQ_HEAD:    m = "HEAD"; break;
    case EVHTTP_REQ_PATCH:   m = "PATCH"; break;
    case EVHTTP_REQ_OPTIONS: m = "OPTIONS"; break;
    case EVHTTP_REQ_TRACE:   m = "TRACE"; break;
    case EVHTTP_REQ_CONNECT: m = "CONNECT"; break;
    default:                 m = "OTHER"; break;
    }

    j = json_pack("{s:I, s:s, s:s, s:s, s:s, s:i, s:I, s:I}",
                  "ts", (json_int_t) rg_wall_msec(),
                  "type", "access",
                  "request_id", r->id,
                  "method", m,
                  "path", r->path ? r->path : "",
                  "status", r->status,
                  "bytes", (json_int_t) r->bytes,
                  "ms", (json_int_t) (rg_monotonic_msec() - r->started));
    if (j == NULL) {
        return;
    }

    rg_metrics_http(r->http->engine, m, r->route ? r->route : "other",
                    (rg_uint_t) r->status,
                    (double) (rg_monotonic_msec() - r->started) / 1000);

    line = fd >= 0 ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);

    if (line) {
        size_t  len;

        len = strlen(line);
        line[len] = '\n';
        /* a log line is not worth an error */
        if (write(fd, line, len + 1) < 0) {
        }
        free(line);
    }
}


static void
rg_http_closed(rg_http_req_t *r)
{
    if (r->peer_ev) {
        event_free(r->peer_ev);
        r->peer_ev = NULL;
    }

    /* the client went before its answer: whoever waits lets go */
    r->status = 499;
    rg_http_access(r);

    if (r->gone) {
        r->gone(r);
    }

    rg_http_req_free(r);
}


void
rg_http_req_free(rg_http_req_t *r)
{
    if (r->held) {
        rg_engine_release(r->http->engine);
    }
    free(r->path_buf);
    free(r);
}


/* connections --------------------------------------------------------- */

/* A connection as the worker counts and times it; evhttp owns the
 * connection itself. evhttp_set_bevcb() shows each one as it is
 * accepted: it is counted at once, and bound (found, given its close
 * callback) before any of its bytes is read. libevent 2.1 restarts its
 * read timeout at every byte, so a client sending a byte now and then
 * would hold the connection for max_header × client_timeout: the
 * deadline here is whole, from the accept (or the last answer) to the
 * request read. */
struct rg_http_conn_s {
    rg_http_link_t      link;         /* first: in h->conns */
    rg_http_t          *http;
    struct bufferevent *bev;          /* referenced until bound */
    struct evhttp_connection *evcon;  /* NULL until bound */
    struct event       *ev;           /* binds it, then its deadline */
    rg_http_req_t      *req;          /* watched: told when it closes */
    int                 fd;
    unsigned            bound:1;
    unsigned            held:1;       /* a drain waits for the answer */
    unsigned            close:1;      /* closed once its answer is out */
};


static void
rg_http_conn_free(rg_http_conn_t *c)
{
    rg_http_t  *h;

    h = c->http;

    c->link.prev->next = c->link.next;
    c->link.next->prev = c->link.prev;
    h->nconns--;

    if (c->fd >= 0 && (rg_uint_t) c->fd < h->nbyfd && h->byfd[c->fd] == c) {
        h->byfd[c->fd] = NULL;
    }

    if (c->held) {
        rg_engine_release(h->engine);
    }

    if (c->bev) {
        bufferevent_decref(c->bev);
    }

    event_free(c->ev);
    free(c);
}


/* evhttp frees the connection (the client left, an answer with
 * Connection: close was sent, a timeout, the server freed) */
static void
rg_http_conn_closed(struct evhttp_connection *evcon, void *arg)
{
    rg_http_conn_t  *c;

    c = arg;

    if (c->req) {
        rg_http_closed(c->req);
    }

    rg_http_conn_free(c);
}


/* c among the bound ones, by its descriptor (unique while it is open:
 * it leaves the table in its close callback, before evhttp closes it) */
static rg_int_t
rg_http_conn_index(rg_http_conn_t *c)
{
    size_t            n;
    rg_http_t        *h;
    rg_http_conn_t  **t;

    h = c->http;

    if ((rg_uint_t) c->fd >= h->nbyfd) {
        n = rg_max((size_t) c->fd + 1, 2 * (size_t) h->nbyfd);
        n = rg_max(n, 64);
        t = realloc(h->byfd, n * sizeof(rg_http_conn_t *));
        if (t == NULL) {
            return RG_ERROR;
        }
        memset(t + h->nbyfd, 0, (n - h->nbyfd) * sizeof(rg_http_conn_t *));
        h->byfd = t;
        h->nbyfd = (rg_uint_t) n;
    }

    h->byfd[c->fd] = c;

    return RG_OK;
}


/* from now: libevent counts from the time it read when this turn of
 * the loop began, which a long callback before (an 8 MB answer made)
 * leaves behind */
static void
rg_http_conn_deadline(rg_http_conn_t *c, rg_msec_t ms)
{
    struct timeval  tv;

    tv.tv_sec = (time_t) (ms / 1000);
    tv.tv_usec = (suseconds_t) ((ms % 1000) * 1000);

    event_base_update_cache_time(c->http->engine->base);
    evtimer_add(c->ev, &tv);
}


/* right after the accept, before any byte of it is read */
static void
rg_http_conn_bind(rg_http_conn_t *c)
{
    int                    fd;
    void                  *arg;
    rg_uint_t              over;
    rg_msec_t              now;
    rg_http_t             *h;
    bufferevent_event_cb   ecb;

    h = c->http;

    /* evhttp built its connection around the bufferevent
     * rg_http_conn_new() made, and gives the connection to the
     * bufferevent's callbacks as their argument (http.c, libevent 2.0
     * to 2.2): that is how it is found. One evhttp already freed (its
     * setup failed) has no callbacks left. */
    ecb = NULL;
    arg = NULL;
    bufferevent_getcb(c->bev, NULL, NULL, &ecb, &arg);
    fd = bufferevent_getfd(c->bev);

    if (ecb == NULL || arg == NULL || fd < 0) {
        rg_http_conn_free(c);
        return;
    }

    c->evcon = arg;
    c->fd = fd;
    c->bound = 1;
    bufferevent_decref(c->bev);
    c->bev = NULL;

    over = h->nconns > (rg_uint_t) h->conf->max_connections;

    if (over || rg_http_conn_index(c) != RG_OK) {
        now = rg_monotonic_msec();
        if (!over) {
            rg_log_error(RG_LOG_ALERT, h->engine->log, 0, "http: out of "
                         "memory: a new connection is closed");

        } else if (now - h->refused_said >= 1000 || h->refused_said == 0) {
            h->refused_said = now;
            rg_log_error(RG_LOG_WARN, h->engine->log, 0, "http: this worker "
                         "has max_connections (%ld) open: new ones are "
                         "closed", (long) h->conf->max_connections);
        }

        evhttp_connection_set_closecb(c->evcon, rg_http_conn_closed, c);
        evhttp_connection_free(c->evcon);
        return;
    }

    evhttp_connection_set_closecb(c->evcon, rg_http_conn_closed, c);
    rg_http_conn_deadline(c, h->conf->client_timeout);
}


/* bound, or its deadline passed: the request was not read whole within
 * client_timeout (or none came on a kept-alive connection), or its
 * answer said it closes */
static void
rg_http_conn_timer(evutil_socket_t fd, short what, void *arg)
{
    rg_http_conn_t      *c;
    struct bufferevent  *bev;

    c = arg;

    if (!c->bound) {
        rg_http_conn_bind(c);
        return;
    }

    bev = evhttp_connection_get_bufferevent(c->evcon);

    /* a kept-alive connection with nothing of a request goes quietly */
    if (!c->close && bev
        && evbuffer_get_length(bufferevent_get_input(bev)) > 0)
    {
        rg_log_error(RG_LOG_INFO, c->http->engine->log, 0, "http: a "
                     "client did not send its request whole within "
                     "client_timeout (%llums): its connection is closed",
                     (unsigned long long) c->http->conf->client_timeout);
    }

    evhttp_connection_free(c->evcon);      /* frees c */
}


/* evhttp_set_bevcb(): a connection was accepted */
static struct bufferevent *
rg_http_conn_new(struct event_base *base, void *arg)
{
    rg_http_t           *h;
    rg_http_conn_t      *c;
    struct bufferevent  *bev;

    h = arg;

    bev = bufferevent_socket_new(base, -1, 0);
    if (bev == NULL) {
        return NULL;
    }

    c = calloc(1, sizeof(rg_http_conn_t));
    if (c) {
        c->ev = evtimer_new(base, rg_http_conn_timer, c);
    }

    if (c == NULL || c->ev == NULL) {
        /* not counted: its requests are refused (rg_http_dispatch) */
        free(c);
        return bev;
    }

    c->http = h;
    c->bev = bev;
    c->fd = -1;
    bufferevent_incref(bev);

    c->link.next = &h->conns;
    c->link.prev = h->conns.prev;
    h->conns.prev->next = &c->link;
    h->conns.prev = &c->link;
    h->nconns++;

    /* in this turn of the loop, after evhttp finished setting it up */
    event_active(c->ev, EV_TIMEOUT, 1);

    return bev;
}


/* the connection a request came on, NULL when it was not counted */
static rg_http_conn_t *
rg_http_conn_of(rg_http_t *h, struct evhttp_request *req)
{
    int                        fd;
    rg_http_conn_t            *c;
    struct bufferevent        *bev;
    struct evhttp_connection  *evcon;

    evcon = evhttp_request_get_connection(req);
    bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    fd = bev ? bufferevent_getfd(bev) : -1;

    if (fd < 0 || (rg_uint_t) fd >= h->nbyfd) {
        return NULL;
    }

    c = h->byfd[fd];

    return c && c->evcon == evcon ? c : NULL;
}


/* an answer is out (evhttp_send_done): the hold a drain waited for is
 * given back, and the next request is read under client_timeout, whole
 * (or none: the connection closes) */
static void
rg_http_conn_sent(struct evhttp_request *req, void *arg)
{
    rg_http_conn_t  *c;

    c = arg;

    rg_http_timeouts(c->http, c->evcon, 1);
    rg_http_conn_deadline(c, c->close ? 0 : c->http->conf->client_timeout);

    if (c->held) {
        c->held = 0;
        rg_engine_release(c->http->engine);       /* may end the loop */
    }
}


/* evhttp reads nothing while a request is answered, so a client that
 * left is seen only when its answer is written: its socket is watched
 * meanwhile (a peek that reads 0 bytes: it closed) */
static void
rg_http_peer(evutil_socket_t fd, short what, void *arg)
{
    char                       c;
    ssize_t                    n;
    rg_http_req_t             *r;
    struct evhttp_connection  *evcon;

    r = arg;

    n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

    if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR))) {
        /* it sends more (a pipelined request): alive; evhttp reads it
         * after this answer */
        event_del(r->peer_ev);
        return;
    }

    /* closed: freeing the connection calls rg_http_closed() (through
     * rg_http_conn_closed) */
    evcon = evhttp_request_get_connection(r->req);
    if (evcon) {
        evhttp_connection_free(evcon);
    }
}


/* the answer is about to go: nobody waits for the close any more */
static void
rg_http_unwatch(rg_http_req_t *r)
{
    if (r->peer_ev) {
        event_free(r->peer_ev);
        r->peer_ev = NULL;
    }

    if (r->watched) {
        /* the answer goes out now, under send_timeout only */
        rg_http_release_when_sent(r);
        r->conn->req = NULL;
        r->watched = 0;
    }
}


void
rg_http_watch(rg_http_req_t *r, void (*gone)(rg_http_req_t *r), void *data)
{
    struct evhttp_connection  *evcon;

    r->gone = gone;
    r->data = data;

    if (!r->held) {
        r->held = 1;
        rg_engine_hold(r->http->engine);
    }

    evcon = evhttp_request_get_connection(r->req);
    if (evcon && r->conn && !r->watched) {
        struct bufferevent  *bev;

        r->conn->req = r;
        r->watched = 1;
        rg_http_timeouts(r->http, evcon, 0);

        bev = evhttp_connection_get_bufferevent(evcon);
        if (bev && bufferevent_getfd(bev) != -1) {
            r->peer_ev = event_new(r->http->engine->base,
                                   bufferevent_getfd(bev),
                                   EV_READ | EV_PERSIST, rg_http_peer, r);
            if (r->peer_ev) {
                event_add(r->peer_ev, NULL);
            }
        }
    }
}


/* a connection's timeouts: reading a request and writing an answer, or
 * (while an answer is awaited or streamed: reading nothing is normal
 * then, a client that left is seen by rg_http_peer) writing only */
static void
rg_http_timeouts(rg_http_t *h, struct evhttp_connection *evcon,
    rg_uint_t reading)
{
    struct timeval       rtv, wtv;
    struct bufferevent  *bev;

    bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    if (bev == NULL) {
        return;
    }

    rtv.tv_sec = h->conf->client_timeout / 1000;
    rtv.tv_usec = (h->conf->client_timeout % 1000) * 1000;
    wtv.tv_sec = h->conf->send_timeout / 1000;
    wtv.tv_usec = (h->conf->send_timeout % 1000) * 1000;

    bufferevent_set_timeouts(bev, reading ? &rtv : NULL, &wtv);
}


/* the hold of r is given back once its answer is written, not queued
 * (rg_http_conn_sent) */
static void
rg_http_release_when_sent(rg_http_req_t *r)
{
    if (r->held && r->conn) {
        r->conn->held = 1;
        r->held = 0;
    }
}


static void
rg_http_headers(rg_http_req_t *r, const char *type)
{
    struct evkeyvalq  *h;

    h = evhttp_request_get_output_headers(r->req);
    evhttp_add_header(h, "Content-Type", type);
    evhttp_add_header(h, "X-Request-ID", r->id);
    evhttp_add_header(h, "Cache-Control", "no-store");

    if (r->http->draining) {
        evhttp_add_header(h, "Connection", "close");
    }
}


void
rg_http_send(rg_http_req_t *r, int status, const char *type,
    const char *body, size_t len)
{
    struct evbuffer  *b;

    rg_http_unwatch(r);
    rg_http_headers(r, type);

    b = evbuffer_new();
    if (b && len) {
        evbuffer_add(b, body, len);
    }

    r->status = status;
    r->bytes = len;

    rg_http_release_when_sent(r);
    /* send_timeout from now: libevent's clock is the one read when this
     * turn of the loop began, before the answer was made (an 8 MB one
     * takes seconds) */
    event_base_update_cache_time(r->http->engine->base);
    evhttp_send_reply(r->req, status, NULL, b);

    if (b) {
        evbuffer_free(b);
    }

    rg_http_access(r);
    rg_http_req_free(r);
}


void
rg_http_json(rg_http_req_t *r, int status, json_t *body)
{
    char    *text;
    size_t   len;

    text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);

    if (text == NULL) {
        static const char  oom[] = "{\"error\":{\"message\":\"out of memory\","
                                   "\"type\":\"server_error\",\"code\":"
                                   "\"out_of_memory\"}}";

        rg_http_send(r, 500, "application/json", oom, sizeof(oom) - 1);
        return;
    }

    /* no secret leaves in an answer, whatever a model or a tool said */
    len = rg_secret_scrub(text, strlen(text));

    rg_http_send(r, status, "application/json", text, len);
    free(text);
}


/* text jansson takes: UTF-8, as it checks it when an answer is packed */
static rg_uint_t
rg_http_utf8(const char *text, size_t len)
{
    json_t  *v;

    v = json_stringn(text, len);
    json_decref(v);

    return v != NULL;
}


/* a message that jansson takes: a character cut by a %.Ns goes, and any
 * other byte that is not UTF-8 becomes '?' (else the answer would be a
 * 500 "out of memory") */
static void
rg_http_utf8_fix(char *msg)
{
    size_t          len, i;
    unsigned char  *p;

    len = strlen(msg);
    p = (unsigned char *) msg;

    if (rg_http_utf8(msg, len)) {
        return;
    }

    /* back over the continuation bytes of the last character */
    i = 1;
    while (i <= 3 && i <= len && (p[len - i] & 0xc0) == 0x80) {
        i++;
    }

    if (i <= len && p[len - i] >= 0xc0 && !rg_http_utf8(msg + len - i, i)) {
        len -= i;
        msg[len] = '\0';
    }

    if (rg_http_utf8(msg, len)) {
        return;
    }

    for (i = 0; i < len; i++) {
        if (p[i] >= 0x80) {
            p[i] = '?';
        }
    }
}


void
rg_http_error(rg_http_req_t *r, int status, const char *type,
    const char *code, const char *fmt, ...)
{
    char     msg[512];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    rg_http_utf8_fix(msg);

    rg_http_json(r, status, json_pack("{s:{s:s, s:s, s:s}}", "error",
                                      "message", msg, "type", type,
                                      "code", code));
}


void
rg_http_not_allowed(rg_http_req_t *r, const char *allow, const char *fmt,
    ...)
{
    char     msg[512];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    evhttp_add_header(evhttp_request_get_output_headers(r->req), "Allow",
                      allow);
    rg_http_error(r, 405, "invalid_request_error", "method_not_allowed",
                  "%s", msg);
}


char *
rg_http_body(rg_http_req_t *r, size_t *len)
{
    char             *buf;
    size_t            n;
    struct evbuffer  *in;

    in = evhttp_request_get_input_buffer(r->req);
    n = evbuffer_get_length(in);

    if (n > r->http->conf->max_body) {
        rg_http_error(r, 413, "invalid_request_error", "body_too_large",
                      "the body is %zu bytes, more than max_body %zu", n,
                      r->http->conf->max_body);
        return NULL;
    }

    buf = malloc(n + 1);
    if (buf == NULL) {
        rg_http_nomem(r);
        return NULL;
    }

    evbuffer_remove(in, buf, n);
    buf[n] = '\0';
    *len = n;

    return buf;
}


const char *
rg_http_header(rg_http_req_t *r, const char *name)
{
    return evhttp_find_header(evhttp_request_get_input_headers(r->req),
                              name);
}


/* checking and routing ----------------------------------------------- */

/* "Bearer TOKEN", compared in constant time through their digests (so
 * the length tells nothing either) */
static rg_uint_t
rg_http_authorized(rg_http_req_t *r)
{
    char         want[RG_SHA256_HEX], got[RG_SHA256_HEX];
    size_t       n;
    const char  *h;

    if (r->http->conf->token == NULL) {
        return 1;
    }

    h = rg_http_header(r, "Authorization");
    if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0) {
        return 0;
    }

    h += 7;
    n = strlen(h);

    if (rg_sha256_hex(got, "api", 3, h, n) != RG_OK
        || rg_sha256_hex(want, "api", 3, r->http->conf->token,
                         r->http->conf->token_len) != RG_OK)
    {
        return 0;
    }

    return CRYPTO_memcmp(got, want, RG_SHA256_HEX) == 0;
}


/* a client's X-Request-ID when it is a plain token, else ours */
static void
rg_http_request_id(rg_http_req_t *r)
{
    size_t       n;
    const char  *h;

    h = rg_http_header(r, "X-Request-ID");

    if (h) {
        n = strlen(h);
        if (n > 0 && n < sizeof(r->id)
            && strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
                         "XYZ0123456789._-") == n)
        {
            memcpy(r->id, h, n + 1);
            return;
        }
    }

    snprintf(r->id, sizeof(r->id), "r-%s-%llu", r->http->engine->tag,
             (unsigned long long) ++rg_http_req_seq);
}


typedef struct {
    const char         *path;             /* exact, or a prefix with '*' */
    const char         *route;            /* its name in the metrics */
    int                 methods;
    void              (*handler)(rg_http_req_t *r);
    rg_uint_t           open;             /* no token asked */
    rg_uint_t           metrics;          /* also on metrics_listen */
} rg_http_route_t;


static const rg_http_route_t  rg_http_routes[] = {
    { "/healthz", "/healthz", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD,
      rg_http_healthz_handler, 1, 1 },
    { "/readyz", "/readyz", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD,
      rg_http_readyz_handler, 1, 1 },
    { "/metrics", "/metrics", EVHTTP_REQ_GET, rg_http_metrics_handler, 0, 1 },
    { "/v1/tasks", "/v1/tasks", EVHTTP_REQ_POST, rg_http_tasks_handler, 0,
      0 },
    { "/v1/tasks/*", "/v1/tasks/{id}",
      EVHTTP_REQ_GET | EVHTTP_REQ_DELETE | EVHTTP_REQ_POST,
      rg_http_tasks_handler, 0, 0 },
    { "/v1/agents", "/v1/agents", EVHTTP_REQ_GET, rg_http_agents_handler, 0,
      0 },
    { "/v1/models", "/v1/models", EVHTTP_REQ_GET, rg_http_models_handler, 0,
      0 },
    { "/v1/chat/completions", "/v1/chat/completions", EVHTTP_REQ_POST,
      rg_http_chat_handler, 0, 0 },
    { NULL, NULL, 0, NULL, 0, 0 }
};


static void
rg_http_dispatch(struct evhttp_request *req, rg_http_t *h,
    rg_uint_t metrics_only)
{
    char                     *path;
    size_t                    n;
    rg_http_req_t            *r;
    const char               *p;
    const struct evhttp_uri  *uri;
    const rg_http_route_t    *rt, *found;

    r = calloc(1, sizeof(rg_http_req_t));
    if (r == NULL) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }

    /* evhttp of libevent 2.1 has one timeout for both ways: the answer
     * goes under send_timeout (the next request under client_timeout) */
    rg_http_timeouts(h, evhttp_request_get_connection(req), 1);

    r->http = h;
    r->req = req;
    r->started = rg_monotonic_msec();
    r->metrics_only = metrics_only;
    h->requests++;
    rg_http_request_id(r);

    /* read whole: its deadline is done with; the next one starts once
     * the answer is out */
    r->conn = rg_http_conn_of(h, req);
    if (r->conn) {
        evtimer_del(r->conn->ev);
        evhttp_request_set_on_complete_cb(req, rg_http_conn_sent, r->conn);
    }

    uri = evhttp_request_get_evhttp_uri(req);
    p = uri ? evhttp_uri_get_path(uri) : NULL;
    path = p ? evhttp_uridecode(p, 0, &n) : NULL;

    if (r->conn == NULL) {
        free(path);
        r->path = "";
        evhttp_add_header(evhttp_request_get_output_headers(req),
                          "Connection", "close");
        rg_http_error(r, 503, "server_error", "out_of_memory",
                      "this worker is out of memory: ask again");
        return;
    }

    if (path == NULL || memchr(path, 0, n) != NULL) {
        free(path);
        r->path = "";
        rg_http_error(r, 400, "invalid_request_error", "bad_path",
                      "the request's path cannot be read");
        return;
    }

    /* a name in the path goes into answers and logs, which are JSON:
     * the path, percent-decoded or raw, is UTF-8 or is refused */
    if (!rg_http_utf8(path, n)) {
        free(path);
        r->path = "";
        rg_http_error(r, 400, "invalid_request_error", "bad_path",
                      "the request's path is not UTF-8 (once "
                      "percent-decoded)");
        return;
    }

    r->path_buf = path;
    r->path = path;
    r->query = uri ? evhttp_uri_get_query(uri) : NULL;

    /* evhttp keeps a connection open after any answer to CONNECT (a
     * tunnel would follow) and says no Content-Length: ours ends it */
    if (evhttp_request_get_command(req) == EVHTTP_REQ_CONNECT) {
        r->conn->close = 1;

        if (path[0] != '/') {     /* a host, not one of the paths */
            rg_http_not_allowed(r, "", "CONNECT: this server is no proxy");
            return;
        }
    }

    if (h->draining && strcmp(path, "/healthz") != 0) {
        rg_http_error(r, 503, "unavailable", "draining", "this worker is "
                      "shutting down: ask again (another one answers)");
        return;
    }

    found = NULL;

    for (rt = rg_http_routes; rt->path; rt++) {
        n = strlen(rt->path);

        if (rt->path[n - 1] == '*') {
            if (strncmp(path, rt->path, n - 1) == 0 && path[n - 1] != '\0') {
                found = rt;
                r->rest = path + n - 1;
                break;
            }

        } else if (strcmp(path, rt->path) == 0) {
            found = rt;
            r->rest = "";
            break;
        }
    }

    if (found) {
        r->route = found->route;
    }

    if (found == NULL || (metrics_only && !found->metrics)) {
        rg_http_error(r, 404, "invalid_request_error", "not_found",
                      "no such endpoint: %.200s", path);
        return;
    }

    if (!(evhttp_request_get_command(req) & found->methods)) {
        char  allow[64];

        allow[0] = '\0';
        if (found->methods & EVHTTP_REQ_GET) {
            strcat(allow, "GET, ");
        }
        if (found->methods & EVHTTP_REQ_HEAD) {
            strcat(allow, "HEAD, ");
        }
        if (found->methods & EVHTTP_REQ_POST) {
            strcat(allow, "POST, ");
        }
        if (found->methods & EVHTTP_REQ_DELETE) {
            strcat(allow, "DELETE, ");
        }
        allow[strlen(allow) - 2] = '\0';

        rg_http_not_allowed(r, allow, "%s takes %s", found->path, allow);
        return;
    }

    if (!found->open && !(metrics_only && found->metrics)
        && !rg_http_authorized(r))
    {
        evhttp_add_header(evhttp_request_get_output_headers(req),
                          "WWW-Authenticate", "Bearer");
        rg_http_error(r, 401, "authentication_error", "unauthorized",
                      "a valid \"Authorization: Bearer TOKEN\" is needed");
        return;
    }

    found->handler(r);
}


static void
rg_http_request(struct evhttp_request *req, void *arg)
{
    rg_http_dispatch(req, arg, 0);
}


static void
rg_http_metrics_request(struct evhttp_request *req, void *arg)
{
    rg_http_dispatch(req, arg, 1);
}


/* the worker's server -------------------------------------------------- */

static struct evhttp *
rg_http_server(rg_http_t *h, void (*cb)(struct evhttp_request *, void *))
{
    struct evhttp   *eh;
    struct timeval   tv;
    rg_http_conf_t  *hcf;

    hcf = h->conf;

    eh = evhttp_new(h->engine->base);
    if (eh == NULL) {
        return NULL;
    }

    /* libevent's own limit only guards memory (its 413 is not JSON):
     * past max_body the answer is ours, rg_http_body() */
    evhttp_set_max_body_size(eh, (ev_ssize_t) (2 * hcf->max_body + 65536));
    /* past it libevent answers 400 itself, an HTML page: no gencb */
    evhttp_set_max_headers_size(eh, (ev_ssize_t) hcf->max_header);
    tv.tv_sec = hcf->client_timeout / 1000;
    tv.tv_usec = (hcf->client_timeout % 1000) * 1000;
    evhttp_set_timeout_tv(eh, &tv);
    /* every method reaches the router, which answers a JSON 405: those
     * libevent knows (TRACE, CONNECT…) and those it does not (typed
     * 1 << 15); else libevent answers 501 itself, an HTML page */
    evhttp_set_allowed_methods(eh, 0xffff);
    evhttp_set_gencb(eh, cb, h);
    /* each connection counted and timed as it comes (rg_http_conn_new) */
    evhttp_set_bevcb(eh, rg_http_conn_new, h);

    return eh;
}


/* access_log FILE, opened at the start and again at USR1: lines go to
 * the new file from then on. A file that cannot be opened leaves the log
 * as it was (none at the start). Without the directive the lines go to
 * the error log, reopened by the worker itself. */
static void
rg_http_access_open(rg_http_t *h)
{
    int              fd;
    rg_http_conf_t  *hcf;

    hcf = h->conf;

    if (hcf->access_log.len == 0) {
        return;
    }

    if (strcmp(hcf->access_log.data, "off") == 0) {
        rg_http_access_fd = -1;
        return;
    }

    fd = open(hcf->access_log.data, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
              0644);
    if (fd == -1) {
        rg_log_error(RG_LOG_ALERT, h->engine->log, errno, "http: cannot "
                     "open the access log \"%s\"", hcf->access_log.data);
        if (rg_http_access_fd == -2) {
            rg_http_access_fd = -1;
        }
        return;
    }

    if (rg_http_access_fd >= 0) {
        close(rg_http_access_fd);
    }

    rg_http_access_fd = fd;
}


rg_int_t
rg_http_init_worker(rg_engine_t *e)
{
    int                fd;
    rg_uint_t          i, any;
    rg_http_t         *h;
    struct evhttp     *eh;
    rg_http_conf_t    *hcf;
    rg_http_listen_t  *l;

    hcf = rg_http_conf(e->cycle);

    if (!hcf->declared) {
        return RG_OK;
    }

    /* the sockets are the master's: a run or a batch has none */
    l = hcf->listens->elts;
    any = 0;
    for (i = 0; i < hcf->listens->nelts; i++) {
        any |= l[i].fd != -1;
    }
    if (!any) {
        return RG_OK;
    }

    h = calloc(1, sizeof(rg_http_t));
    if (h == NULL) {
        return RG_ERROR;
    }

    rg_engine_ctx(e, &rg_http_part) = h;
    h->engine = e;
    h->conf = hcf;
    h->conns.next = h->conns.prev = &h->conns;
    h->bound = calloc(hcf->listens->nelts, sizeof(*h->bound));
    h->servers = calloc(hcf->listens->nelts, sizeof(*h->servers));

    if (h->bound == NULL || h->servers == NULL) {
        return RG_ERROR;
    }

    rg_http_access_open(h);

    rg_http_events_init(h);

    if (rg_http_tasks_init(h) != RG_OK) {
        return RG_ERROR;
    }

    for (i = 0; i < hcf->listens->nelts; i++) {
        if (l[i].fd == -1) {
            continue;
        }

        eh = rg_http_server(h, l[i].metrics ? rg_http_metrics_request
                                            : rg_http_request);
        if (eh == NULL) {
            return RG_ERROR;
        }
        h->servers[h->nbound] = eh;

        /* the worker's own copy: evhttp closes it when done with it */
        fd = fcntl(l[i].fd, F_DUPFD_CLOEXEC, 0);
        h->bound[h->nbound] = fd == -1 ? NULL
                              : evhttp_accept_socket_with_handle(eh, fd);
        h->nbound++;

        if (h->bound[h->nbound - 1] == NULL) {
            rg_log_error(RG_LOG_EMERG, e->log, errno, "http: cannot accept "
                         "on %s", l[i].text.data);
            if (fd != -1) {
                close(fd);
            }
            return RG_ERROR;
        }
    }

    rg_http_sockets_inherited_close();

    rg_log_error(RG_LOG_NOTICE, e->log, 0, "http: worker %d answers on %s%s",
                 (int) getpid(), l[0].text.data,
                 hcf->listens->nelts > 1 ? " and more" : "");

    return RG_OK;
}


/* USR1: logrotate moved the access log's file */
void
rg_http_reopen_worker(rg_engine_t *e)
{
    rg_http_t  *h;

    h = rg_engine_ctx(e, &rg_http_part);
    if (h) {
        rg_http_access_open(h);
    }
}


void
rg_http_drain_worker(rg_engine_t *e)
{
    rg_uint_t   i;
    rg_http_t  *h;

    h = rg_engine_ctx(e, &rg_http_part);
    if (h == NULL || h->draining) {
        return;
    }

    h->draining = 1;

    /* no new connection: the next workers take them */
    for (i = 0; i < h->nbound; i++) {
        if (h->bound[i]) {
            evhttp_del_accept_socket(h->servers[i], h->bound[i]);
            h->bound[i] = NULL;
        }
    }

    /* the event streams resume elsewhere: nothing to wait for */
    rg_http_events_drain(h);
}


void
rg_http_exit_worker(rg_engine_t *e)
{
    rg_uint_t   i;
    rg_http_t  *h;

    h = rg_engine_ctx(e, &rg_http_part);
    if (h == NULL) {
        return;
    }

    rg_http_tasks_exit(h);

    /* the connections left are closed: their gone() handlers run */
    for (i = 0; h->servers && i < h->nbound; i++) {
        if (h->servers[i]) {
            evhttp_free(h->servers[i]);
        }
    }

    /* and those accepted in the last turn, not yet bound */
    while (h->conns.next != &h->conns) {
        rg_http_conn_free((rg_http_conn_t *) h->conns.next);
    }

    free(h->byfd);

    if (rg_http_access_fd >= 0) {
        close(rg_http_access_fd);
    }
    rg_http_access_fd = -2;

    free(h->bound);
    free(h->servers);
    free(h);
    rg_engine_ctx(e, &rg_http_part) = NULL;
}


/* a streamed answer (evhttp_send_reply_start by the handler) ends */
void
rg_http_stream_end(rg_http_req_t *r)
{
    rg_http_unwatch(r);
    rg_http_release_when_sent(r);
    evhttp_send_reply_end(r->req);
    rg_http_access(r);
    rg_http_req_free(r);
}
