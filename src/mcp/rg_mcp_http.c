/* rg_mcp_http.c: the Streamable HTTP transport of MCP, through the
 * engine's curl multi. Each message is one POST (Accept: application/json,
 * text/event-stream); its answer comes as a JSON body or as an event
 * stream (rg_mcp_sse.c). The session id the server gives is kept and
 * sent, MCP-Protocol-Version after initialize (and the stateless
 * revision's Mcp-Method and Mcp-Name), the `header` lines on every
 * request. A stream that ends before its answer came is resumed with a
 * GET and Last-Event-ID after the retry the server asked for; a GET
 * stream carries the server's own messages (list_changed); DELETE ends
 * the session at the engine's end. Messages read inside curl's callbacks
 * are handed to the server from the loop, never from there. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_mcp.h>
#include <rg_mcp_sse.h>


#define RG_MCP_CONNECT_TIMEOUT  10000   /* ms */
#define RG_MCP_ERROR_BODY       4096    /* bytes of an error kept */
#define RG_MCP_RESUMES          3       /* of one request's stream */
#define RG_MCP_RETRY            1000    /* ms, when the server says none */
#define RG_MCP_STREAM_MAX       30000   /* ms between stream attempts */

#define RG_MCP_POST     0
#define RG_MCP_RESUME   1               /* GET: a request's stream again */
#define RG_MCP_STREAM   2               /* GET: the server's own messages */
#define RG_MCP_DELETE   3


typedef struct rg_mcp_xfer_s  rg_mcp_xfer_t;
typedef struct rg_mcp_msg_s   rg_mcp_msg_t;


struct rg_mcp_msg_s {
    rg_mcp_msg_t       *next;
    size_t              len;
    char                text[];
};


typedef struct {
    rg_mcp_server_t    *server;
    char               *session;      /* Mcp-Session-Id */
    rg_mcp_xfer_t      *xfers;        /* everything in flight */
    rg_mcp_xfer_t      *stream;       /* the GET of the server's messages */
    rg_mcp_msg_t       *mhead;        /* read, not yet handed over */
    rg_mcp_msg_t      **mtail;
    struct event        deliver_ev;
    struct event        opened_ev;
    struct event        stream_ev;    /* the next stream attempt */
    struct event        settled_ev;   /* its headers came */
    char                stream_id[RG_MCP_SSE_ID_MAX];
    int64_t             stream_retry;
    rg_uint_t           stream_fails;
    rg_uint_t           gen;          /* changes when it is closed */
    unsigned            deliver_set:1;
    unsigned            opened_set:1;
    unsigned            stream_set:1;
    unsigned            settled_set:1;
    unsigned            settled:1;    /* the stream is open, or absent */
    unsigned            ready:1;
} rg_mcp_http_t;


struct rg_mcp_xfer_s {
    rg_curl_xfer_t      xfer;         /* first */
    rg_mcp_http_t      *h;
    rg_mcp_req_t       *req;          /* what it carries, until answered */
    rg_mcp_xfer_t      *next;
    rg_mcp_xfer_t     **prev;
    struct curl_slist  *headers;
    rg_buf_t            body;         /* a JSON answer, or an error's */
    rg_mcp_sse_t        sse;
    struct event        wait_ev;      /* a resume waits for its retry */
    long                status;
    rg_uint_t           kind;
    rg_uint_t           resumes;
    unsigned            first:1;      /* its first byte came */
    unsigned            events:1;     /* an event stream */
    unsigned            too_large:1;
    unsigned            in_done:1;
    unsigned            waiting:1;
    char                errbuf[CURL_ERROR_SIZE];
};


static void rg_mcp_http_close(rg_mcp_server_t *s);
static void rg_mcp_http_stream(rg_mcp_http_t *h);


static void
rg_mcp_http_xfer_free(rg_mcp_xfer_t *x)
{
    rg_mcp_http_t  *h;

    h = x->h;

    if (x->xfer.active) {
        rg_curl_remove(h->server->ctx->curl, &x->xfer);
    }

    if (x->xfer.easy) {
        curl_easy_cleanup(x->xfer.easy);
    }

    if (x->waiting) {
        event_del(&x->wait_ev);
    }

    if (x->prev) {
        *x->prev = x->next;
        if (x->next) {
            x->next->prev = x->prev;
        }
    }

    if (h->stream == x) {
        h->stream = NULL;
    }

    if (x->req && x->req->carrier == x) {
        x->req->carrier = NULL;
    }

    curl_slist_free_all(x->headers);
    rg_buf_free(&x->body);
    rg_mcp_sse_end(&x->sse);
    free(x);
}


/* what comes in --------------------------------------------------------- */

static void
rg_mcp_http_push(rg_mcp_http_t *h, const char *text, size_t len)
{
    rg_mcp_msg_t  *m;

    m = malloc(sizeof(rg_mcp_msg_t) + len + 1);
    if (m == NULL) {
        return;                        /* its request times out */
    }

    m->next = NULL;
    m->len = len;
    memcpy(m->text, text, len);
    m->text[len] = '\0';

    *h->mtail = m;
    h->mtail = &m->next;

    if (!h->deliver_set) {
        event_active(&h->deliver_ev, EV_TIMEOUT, 1);
        h->deliver_set = 1;
    }
}


/* the messages read, to the server; 0 when it closed the transport
 * meanwhile */
static rg_uint_t
rg_mcp_http_flush(rg_mcp_http_t *h)
{
    rg_uint_t      gen;
    rg_mcp_msg_t  *m;

    gen = h->gen;

    while ((m = h->mhead) != NULL) {
        h->mhead = m->next;
        if (h->mhead == NULL) {
            h->mtail = &h->mhead;
        }

        rg_mcp_server_receive(h->server, m->text, m->len);
        free(m);

        if (h->gen != gen) {
            return 0;
        }
    }

    return 1;
}


static void
rg_mcp_http_deliver_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_mcp_http_t  *h;

    RG_UNUSED(fd);
    RG_UNUSED(what);

    h = arg;
    h->deliver_set = 0;

    (void) rg_mcp_http_flush(h);
}


static void
rg_mcp_http_event(void *data, const char *event, const char *text,
    size_t len)
{
    rg_mcp_xfer_t  *x;

    x = data;

    if (strcmp(event, "message") == 0) {
        rg_mcp_http_push(x->h, text, len);
        if (x->kind == RG_MCP_STREAM) {
            x->h->stream_fails = 0;
        }
    }
}


static size_t
rg_mcp_http_write(char *p, size_t size, size_t n, void *data)
{
    char            *ct;
    size_t           len, max;
    rg_mcp_xfer_t   *x;

    x = data;
    len = size * n;
    max = x->h->server->conf->max_message;

    if (!x->first) {
        x->first = 1;
        ct = NULL;
        curl_easy_getinfo(x->xfer.easy, CURLINFO_RESPONSE_CODE, &x->status);
        curl_easy_getinfo(x->xfer.easy, CURLINFO_CONTENT_TYPE, &ct);
        x->events = x->status == 200 && ct
                    && rg_str_casecmp_prefix(ct, strlen(ct),
                                             "text/event-stream") == 0;
    }

    if (x->events) {
        if (rg_mcp_sse_feed(&x->sse, p, len, rg_mcp_http_event, x)
            != RG_OK)
        {
            x->too_large = 1;
            return 0;
        }
        return len;
    }

    if (x->status != 200) {
        /* enough of an error to say what it was */
        if (x->body.len < RG_MCP_ERROR_BODY) {
            rg_buf_append(&x->body, p,
                          rg_min(len, RG_MCP_ERROR_BODY - x->body.len));
        }
        return len;
    }

    if (x->body.len + len > max) {
        x->too_large = 1;
        return 0;
    }

    return rg_buf_append(&x->body, p, len) == RG_OK ? len : 0;
}


static size_t
rg_mcp_http_header(char *p, size_t size, size_t n, void *data)
{
    size_t          len, k;
    rg_mcp_xfer_t  *x;
    rg_mcp_http_t  *h;

    x = data;
    h = x->h;
    len = size * n;

    /* the end of the stream's headers: it is open */
    if (x->kind == RG_MCP_STREAM && !h->settled
        && (len == 2 || len == 1) && (p[0] == '\r' || p[0] == '\n'))
    {
        h->settled = 1;
        if (!h->settled_set) {
            event_active(&h->settled_ev, EV_TIMEOUT, 1);
            h->settled_set = 1;
        }
    }

    if (h->session == NULL && len > 15
        && rg_str_casecmp_prefix(p, len, "mcp-session-id:") == 0)
    {
        p += 15;
        len -= 15;

        while (len && (*p == ' ' || *p == '\t')) {
            p++;
            len--;
        }

        for (k = 0; k < len && (unsigned char) p[k] > 0x20
                    && p[k] != 0x7f; k++)
        {
            /* void: visible ASCII only, as the protocol says */
        }

        if (k && k <= 512) {
            h->session = rg_strdup_len(p, k);
        }
    }

    return size * n;
}


/* what goes out -------------------------------------------------------- */

static rg_mcp_xfer_t *
rg_mcp_http_xfer(rg_mcp_http_t *h, rg_uint_t kind, const char *method,
    const char *name, const char *last_id)
{
    char             line[600];
    CURL            *e;
    rg_uint_t        i;
    rg_mcp_xfer_t   *x;
    rg_mcp_server_t *s;
    char           **hp;

    s = h->server;

    x = calloc(1, sizeof(rg_mcp_xfer_t));
    e = curl_easy_init();
    if (x == NULL || e == NULL) {
        free(x);
        if (e) {
            curl_easy_cleanup(e);
        }
        return NULL;
    }

    x->h = h;
    x->kind = kind;
    x->xfer.easy = e;
    x->xfer.data = x;
    rg_mcp_sse_init(&x->sse, s->conf->max_message);

    curl_easy_setopt(e, CURLOPT_URL, s->conf->url.data);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     (long) RG_MCP_CONNECT_TIMEOUT);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, rg_mcp_http_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, rg_mcp_http_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "reagent/" RG_VERSION);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");

    if (kind == RG_MCP_POST) {
        x->headers = curl_slist_append(x->headers,
                                       "Content-Type: application/json");
        x->headers = curl_slist_append(x->headers, "Accept: application/"
                                       "json, text/event-stream");
    } else if (kind != RG_MCP_DELETE) {
        x->headers = curl_slist_append(x->headers,
                                       "Accept: text/event-stream");
    }

    if (h->session) {
        snprintf(line, sizeof(line), "Mcp-Session-Id: %s", h->session);
        x->headers = curl_slist_append(x->headers, line);
    }

    if (s->modern) {
        x->headers = curl_slist_append(x->headers, "MCP-Protocol-Version: "
                                       RG_MCP_STATELESS);
        if (method) {
            snprintf(line, sizeof(line), "Mcp-Method: %.500s", method);
            x->headers = curl_slist_append(x->headers, line);
        }
        if (name) {
            snprintf(line, sizeof(line), "Mcp-Name: %.500s", name);
            x->headers = curl_slist_append(x->headers, line);
        }

    } else if (s->version[0]) {
        snprintf(line, sizeof(line), "MCP-Protocol-Version: %s", s->version);
        x->headers = curl_slist_append(x->headers, line);
    }

    if (last_id && *last_id) {
        snprintf(line, sizeof(line), "Last-Event-ID: %s", last_id);
        x->headers = curl_slist_append(x->headers, line);
    }

    hp = s->conf->headers ? s->conf->headers->elts : NULL;

    for (i = 0; hp && i < s->conf->headers->nelts; i++) {
        x->headers = curl_slist_append(x->headers, hp[i]);
    }

    if (x->headers == NULL) {
        curl_easy_cleanup(e);
        free(x);
        return NULL;
    }

    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);

    if (kind == RG_MCP_DELETE) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 2000L);
    }

    /* linked at once: closing the transport frees it, whatever it does */
    x->next = h->xfers;
    x->prev = &h->xfers;
    if (x->next) {
        x->next->prev = &x->next;
    }
    h->xfers = x;

    return x;
}


static void rg_mcp_http_done(rg_curl_xfer_t *cx, CURLcode rc);


static rg_int_t
rg_mcp_http_start(rg_mcp_xfer_t *x)
{
    x->xfer.done = rg_mcp_http_done;

    if (rg_curl_add(x->h->server->ctx->curl, &x->xfer) != RG_OK) {
        return RG_ERROR;
    }

    return RG_OK;
}


static rg_int_t
rg_mcp_http_send(rg_mcp_server_t *s, rg_mcp_req_t *r, const char *method,
    const char *text, size_t len)
{
    rg_mcp_xfer_t  *x;
    rg_mcp_http_t  *h;

    h = s->tpd;

    x = rg_mcp_http_xfer(h, RG_MCP_POST, method, r ? r->name : NULL, NULL);
    if (x == NULL) {
        snprintf(s->why, sizeof(s->why), "out of memory");
        return RG_ERROR;
    }

    curl_easy_setopt(x->xfer.easy, CURLOPT_POSTFIELDSIZE, (long) len);
    curl_easy_setopt(x->xfer.easy, CURLOPT_COPYPOSTFIELDS, text);

    if (rg_mcp_http_start(x) != RG_OK) {
        rg_mcp_http_xfer_free(x);
        snprintf(s->why, sizeof(s->why), "cannot start the request");
        return RG_ERROR;
    }

    if (r) {
        x->req = r;
        r->carrier = x;
    }

    return RG_OK;
}


static void
rg_mcp_http_detach(rg_mcp_server_t *s, rg_mcp_req_t *r, rg_uint_t abandon)
{
    rg_mcp_xfer_t  *x;

    RG_UNUSED(s);
    RG_UNUSED(abandon);

    x = r->carrier;
    r->carrier = NULL;

    if (x == NULL) {
        return;
    }

    x->req = NULL;

    /* nothing else is awaited on a request's stream once it answered or
     * was given up: a server that keeps it open must not keep it */
    if (!x->in_done) {
        rg_mcp_http_xfer_free(x);
    }
}


/* a request's stream again, after the retry the server asked for */
static void
rg_mcp_http_wait_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_mcp_req_t   *r;
    rg_mcp_xfer_t  *x;

    RG_UNUSED(fd);
    RG_UNUSED(what);

    x = arg;
    x->waiting = 0;

    if (rg_mcp_http_start(x) != RG_OK) {
        r = x->req;
        rg_mcp_http_xfer_free(x);
        if (r) {
            rg_mcp_req_fail(r, 0, "cannot resume the answer's stream");
        }
    }
}


static rg_int_t
rg_mcp_http_resume(rg_mcp_xfer_t *x, rg_mcp_req_t *r)
{
    int64_t         ms;
    rg_mcp_xfer_t  *y;

    y = rg_mcp_http_xfer(x->h, RG_MCP_RESUME, NULL, NULL, x->sse.last_id);
    if (y == NULL) {
        return RG_ERROR;
    }

    curl_easy_setopt(y->xfer.easy, CURLOPT_HTTPGET, 1L);

    y->req = r;
    y->resumes = x->resumes + 1;
    r->carrier = y;
    x->req = NULL;

    ms = x->sse.retry >= 0 ? x->sse.retry : RG_MCP_RETRY;

    evtimer_assign(&y->wait_ev, x->h->server->ctx->base,
                   rg_mcp_http_wait_handler, y);
    rg_timer_add(&y->wait_ev, ms);
    y->waiting = 1;

    rg_log_debug(x->h->server->log, "mcp \"%.*s\": resuming the stream of "
                 "request %lld after event \"%s\" in %lldms",
                 (int) x->h->server->conf->name.len,
                 x->h->server->conf->name.data, (long long) r->id,
                 x->sse.last_id, (long long) ms);

    return RG_OK;
}


/* "HTTP 500: <the server's message>" */
static void
rg_mcp_http_status_text(rg_mcp_xfer_t *x, char *buf, size_t size)
{
    size_t        n;
    json_t       *j, *m;
    const char   *msg;

    msg = NULL;
    j = x->body.len ? json_loadb(x->body.data, x->body.len, 0, NULL) : NULL;

    m = json_object_get(json_object_get(j, "error"), "message");
    if (json_is_string(m)) {
        msg = json_string_value(m);
    }

    if (msg) {
        snprintf(buf, size, "HTTP %ld: %.300s", x->status, msg);

    } else if (x->body.len) {
        n = rg_min(x->body.len, 200);
        snprintf(buf, size, "HTTP %ld: %.*s", x->status, (int) n,
                 x->body.data);
        /* one line */
        for (n = 0; buf[n]; n++) {
            if ((unsigned char) buf[n] < 0x20) {
                buf[n] = ' ';
            }
        }

    } else {
        snprintf(buf, size, "HTTP %ld", x->status);
    }

    json_decref(j);
}


/* the server does not know the session any more: 404, as the protocol
 * says, or a 400 that says so (the SDK's example servers, among them
 * server-everything, answer an unknown Mcp-Session-Id that way, as
 * after they were restarted) */
static rg_uint_t
rg_mcp_http_session_gone(rg_mcp_xfer_t *x, char *why, size_t size)
{
    if (x->h->session == NULL || (x->status != 404 && x->status != 400)) {
        return 0;
    }

    rg_mcp_http_status_text(x, why, size);

    return x->status == 404 || strcasestr(why, "session") != NULL;
}


static void
rg_mcp_http_done(rg_curl_xfer_t *cx, CURLcode rc)
{
    char              why[512];
    long              status;
    rg_uint_t         gen;
    rg_mcp_req_t     *r;
    rg_mcp_xfer_t    *x;
    rg_mcp_http_t    *h;
    rg_mcp_server_t  *s;

    x = cx->data;
    h = x->h;
    s = h->server;
    gen = h->gen;

    x->in_done = 1;

    status = 0;
    curl_easy_getinfo(x->xfer.easy, CURLINFO_RESPONSE_CODE, &status);
    x->status = status;

    if (x->kind == RG_MCP_POST && !x->events && status == 200
        && rc == CURLE_OK && x->body.len)
    {
        rg_mcp_http_push(h, x->body.data, x->body.len);
    }

    /* what came on it first: the answer may be there */
    if (!rg_mcp_http_flush(h) || h->gen != gen) {
        return;                        /* closed: x went with it */
    }

    if (x->kind == RG_MCP_DELETE) {
        rg_mcp_http_xfer_free(x);
        return;
    }

    if (x->kind == RG_MCP_STREAM) {
        if (!h->settled) {
            h->settled = 1;
            rg_mcp_server_settled(s);
            if (h->gen != gen) {
                return;
            }
        }

        /* where to pick it up again */
        snprintf(h->stream_id, sizeof(h->stream_id), "%s", x->sse.last_id);
        if (x->sse.retry >= 0) {
            h->stream_retry = x->sse.retry;
        }

        /* a server that went away is started again: a new session */
        if (status == 0 && rc == CURLE_COULDNT_CONNECT) {
            snprintf(why, sizeof(why), "cannot reach %.200s: %s",
                     s->conf->url.data,
                     x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc));
            rg_mcp_http_xfer_free(x);
            rg_mcp_server_lost(s, why);
            return;
        }

        if (rg_mcp_http_session_gone(x, why, sizeof(why))) {
            rg_mcp_http_xfer_free(x);
            rg_mcp_server_lost(s, "the server no longer knows the session");
            return;
        }

        rg_mcp_http_xfer_free(x);

        if (status == 200 || status == 0) {
            rg_mcp_http_stream(h);     /* again, after a while */

        } else {
            rg_log_debug(s->log, "mcp \"%.*s\": no stream of its own "
                         "messages (HTTP %ld)", (int) s->conf->name.len,
                         s->conf->name.data, status);
        }
        return;
    }

    r = x->req;

    if (r == NULL) {
        rg_mcp_http_xfer_free(x);      /* answered, or a notification */
        return;
    }

    x->req = NULL;
    r->carrier = NULL;

    if (x->kind == RG_MCP_POST && rg_mcp_http_session_gone(x, why,
                                                             sizeof(why)))
    {
        rg_mcp_http_xfer_free(x);
        snprintf(why, sizeof(why), "the server no longer knows the session "
                 "(HTTP %ld); reagent starts a new one: try again", status);
        rg_mcp_req_fail(r, status, why);
        rg_mcp_server_lost(s, "the server no longer knows the session");
        return;
    }

    /* it went away: its session with it */
    if (rc == CURLE_COULDNT_CONNECT && status == 0
        && s->state == RG_MCP_READY)
    {
        snprintf(why, sizeof(why), "cannot reach %.200s: %s",
                 s->conf->url.data,
                 x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc));
        rg_mcp_http_xfer_free(x);
        rg_mcp_req_fail(r, 0, why);
        rg_mcp_server_lost(s, why);
        return;
    }

    if (x->too_large) {
        snprintf(why, sizeof(why), "its answer is larger than max_message "
                 "(%lu bytes)", (unsigned long) s->conf->max_message);
        status = 0;

    } else if (status == 200 && x->events) {
        /* the stream ended, cut or closed, before the answer */
        if (x->sse.last_id[0] && x->resumes < RG_MCP_RESUMES
            && rg_mcp_http_resume(x, r) == RG_OK)
        {
            rg_mcp_http_xfer_free(x);
            return;
        }

        if (rc != CURLE_OK) {
            snprintf(why, sizeof(why), "the server's stream broke before it "
                     "answered (%s)",
                     x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc));
        } else {
            snprintf(why, sizeof(why), "the server ended its stream before "
                     "it answered");
        }
        status = 0;

    } else if (rc != CURLE_OK && status == 0) {
        snprintf(why, sizeof(why), "cannot reach %.200s: %s",
                 s->conf->url.data,
                 x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc));

    } else if (status == 202) {
        snprintf(why, sizeof(why), "the server accepted the request without "
                 "answering it (HTTP 202)");

    } else if (status != 200) {
        rg_mcp_http_status_text(x, why, sizeof(why));

    } else if (rc != CURLE_OK) {
        snprintf(why, sizeof(why), "the connection broke before the answer "
                 "(%s)", x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc));
        status = 0;

    } else {
        snprintf(why, sizeof(why), "the server's answer did not answer the "
                 "request");
    }

    rg_mcp_http_xfer_free(x);
    rg_mcp_req_fail(r, status, why);
}


/* the server's own messages ------------------------------------------- */

static void
rg_mcp_http_stream_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_mcp_xfer_t  *x;
    rg_mcp_http_t  *h;

    RG_UNUSED(fd);
    RG_UNUSED(what);

    h = arg;
    h->stream_set = 0;

    if (!h->ready || h->stream) {
        return;
    }

    x = rg_mcp_http_xfer(h, RG_MCP_STREAM, NULL, NULL, h->stream_id);
    if (x == NULL) {
        return;
    }

    curl_easy_setopt(x->xfer.easy, CURLOPT_HTTPGET, 1L);

    if (rg_mcp_http_start(x) != RG_OK) {
        rg_mcp_http_xfer_free(x);
        return;
    }

    h->stream = x;
    h->stream_fails++;
}


/* the next attempt: at once the first time, then after the retry the
 * server asked for, or a backoff while it fails */
static void
rg_mcp_http_stream(rg_mcp_http_t *h)
{
    rg_msec_t  ms;

    if (h->stream_set || h->stream || !h->ready) {
        return;
    }

    if (h->stream_fails == 0) {
        ms = 0;
    } else if (h->stream_retry >= 0 && h->stream_fails < 4) {
        ms = (rg_msec_t) h->stream_retry;
    } else {
        ms = rg_min((rg_msec_t) RG_MCP_RETRY << rg_min(h->stream_fails, 5),
                    RG_MCP_STREAM_MAX);
    }

    evtimer_assign(&h->stream_ev, h->server->ctx->base,
                   rg_mcp_http_stream_handler, h);
    rg_timer_add(&h->stream_ev, ms);
    h->stream_set = 1;
}


static void
rg_mcp_http_ready(rg_mcp_server_t *s)
{
    rg_mcp_http_t  *h;

    h = s->tpd;
    h->ready = 1;

    /* the stateless revision has no such stream */
    h->settled = s->modern;

    if (!s->modern) {
        h->stream_fails = 0;
        h->stream_id[0] = '\0';
        h->stream_retry = -1;
        rg_mcp_http_stream(h);
    }
}


static rg_uint_t
rg_mcp_http_settled(rg_mcp_server_t *s)
{
    rg_mcp_http_t  *h;

    h = s->tpd;

    return h == NULL || h->settled;
}


static void
rg_mcp_http_settled_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_mcp_http_t  *h;

    RG_UNUSED(fd);
    RG_UNUSED(what);

    h = arg;
    h->settled_set = 0;

    rg_mcp_server_settled(h->server);
}


/* the transport --------------------------------------------------------- */

static void
rg_mcp_http_opened_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_mcp_http_t  *h;

    RG_UNUSED(fd);
    RG_UNUSED(what);

    h = arg;
    h->opened_set = 0;

    rg_mcp_server_opened(h->server);
}


static rg_int_t
rg_mcp_http_open(rg_mcp_server_t *s)
{
    rg_mcp_http_t  *h;

    h = s->tpd;

    if (h == NULL) {
        h = calloc(1, sizeof(rg_mcp_http_t));
        if (h == NULL) {
            snprintf(s->why, sizeof(s->why), "out of memory");
            return RG_ERROR;
        }

        h->server = s;
        h->mtail = &h->mhead;
        event_assign(&h->deliver_ev, s->ctx->base, -1, 0,
                     rg_mcp_http_deliver_handler, h);
        event_assign(&h->opened_ev, s->ctx->base, -1, 0,
                     rg_mcp_http_opened_handler, h);
        event_assign(&h->settled_ev, s->ctx->base, -1, 0,
                     rg_mcp_http_settled_handler, h);
        s->tpd = h;
    }

    h->stream_retry = -1;

    /* nothing to connect first: the handshake's requests do */
    event_active(&h->opened_ev, EV_TIMEOUT, 1);
    h->opened_set = 1;

    return RG_OK;
}


static void
rg_mcp_http_close(rg_mcp_server_t *s)
{
    rg_mcp_msg_t   *m;
    rg_mcp_http_t  *h;

    h = s->tpd;

    if (h == NULL) {
        return;
    }

    h->gen++;
    h->ready = 0;

    while (h->xfers) {
        rg_mcp_http_xfer_free(h->xfers);
    }

    while ((m = h->mhead) != NULL) {
        h->mhead = m->next;
        free(m);
    }
    h->mtail = &h->mhead;

    if (h->deliver_set) {
        event_del(&h->deliver_ev);
        h->deliver_set = 0;
    }

    if (h->opened_set) {
        event_del(&h->opened_ev);
        h->opened_set = 0;
    }

    if (h->stream_set) {
        event_del(&h->stream_ev);
        h->stream_set = 0;
    }

    if (h->settled_set) {
        event_del(&h->settled_ev);
        h->settled_set = 0;
    }

    h->settled = 0;

    free(h->session);
    h->session = NULL;
}


/* at the end: what is in flight goes, and the session is ended */
static void
rg_mcp_http_stop(rg_mcp_server_t *s)
{
    char           *session;
    rg_mcp_xfer_t  *x;
    rg_mcp_http_t  *h;

    h = s->tpd;

    if (h == NULL) {
        return;
    }

    session = h->session;
    h->session = NULL;
    rg_mcp_http_close(s);
    h->session = session;

    if (session == NULL) {
        return;
    }

    x = rg_mcp_http_xfer(h, RG_MCP_DELETE, NULL, NULL, NULL);
    if (x && rg_mcp_http_start(x) != RG_OK) {
        rg_mcp_http_xfer_free(x);
    }
}


static rg_uint_t
rg_mcp_http_stopped(rg_mcp_server_t *s)
{
    rg_mcp_http_t  *h;

    h = s->tpd;

    return h == NULL || h->xfers == NULL;
}


static void
rg_mcp_http_terminate(rg_mcp_server_t *s)
{
    RG_UNUSED(s);
}


static void
rg_mcp_http_free(rg_mcp_server_t *s)
{
    rg_mcp_http_close(s);
}


const rg_mcp_transport_t  rg_mcp_http_transport = {
    "Streamable HTTP",
    rg_mcp_http_open,
    rg_mcp_http_send,
    rg_mcp_http_detach,
    rg_mcp_http_ready,
    rg_mcp_http_settled,
    rg_mcp_http_stop,
    rg_mcp_http_stopped,
    rg_mcp_http_terminate,
    rg_mcp_http_close,
    rg_mcp_http_free
};
