/* rg_mcp_server.c: one MCP server in an engine, above its transport:
 * JSON-RPC requests matched to their answers by id (never by order),
 * the lifecycle (server/discover for the stateless 2026-07-28 revision,
 * else initialize and notifications/initialized, the version checked),
 * tools/list with its pages and again on tools/list_changed, the tools
 * published to the tools part, and restarts with backoff when the
 * transport is lost or the handshake fails. Calls made while it starts
 * wait for it; calls in flight when it is lost fail with a reason. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_mcp.h>
#include <rg_mcp_tool.h>


#define RG_MCP_DISCOVER_WAIT    5000    /* ms a server may take to answer
                                           server/discover */
#define RG_MCP_RELIST_MAX       16      /* list_changed during lists */
#define RG_MCP_SKIP_LOGGED      3       /* garbage lines logged at once */
#define RG_MCP_GOOD_RUN         60000   /* ms up that resets the backoff */
#define RG_MCP_SETTLE_WAIT      2000    /* ms for its stream to open */

/* the versions initialize accepts, newest first; the first is offered */
static const char  *rg_mcp_versions[] = {
    "2025-11-25", "2025-06-18", "2025-03-26", NULL
};

static const char  *rg_mcp_states[] = {
    "down", "starting", "ready", "failed", "stopping"
};


static void rg_mcp_discover(rg_mcp_server_t *s);
static void rg_mcp_initialize(rg_mcp_server_t *s);
static void rg_mcp_list(rg_mcp_server_t *s, const char *cursor);
static void rg_mcp_listen(rg_mcp_server_t *s);
static void rg_mcp_settle(rg_mcp_server_t *s);
static void rg_mcp_down(rg_mcp_server_t *s, rg_uint_t retry,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));


const char *
rg_mcp_state_name(rg_mcp_state_e state)
{
    return (size_t) state < rg_nelems(rg_mcp_states) ? rg_mcp_states[state]
                                                     : "unknown";
}


/* requests in flight -------------------------------------------------- */

static rg_mcp_req_t **
rg_mcp_bucket(rg_mcp_server_t *s, int64_t id)
{
    return &s->buckets[(uint64_t) id % RG_MCP_BUCKETS];
}


static void
rg_mcp_req_link(rg_mcp_server_t *s, rg_mcp_req_t *r)
{
    rg_mcp_req_t  **b;

    b = rg_mcp_bucket(s, r->id);
    r->next = *b;
    *b = r;
    r->sent = 1;
    s->pending++;
}


static rg_uint_t
rg_mcp_req_unlink(rg_mcp_server_t *s, rg_mcp_req_t *r)
{
    rg_mcp_req_t  **pp;

    for (pp = rg_mcp_bucket(s, r->id); *pp; pp = &(*pp)->next) {
        if (*pp == r) {
            *pp = r->next;
            r->next = NULL;
            r->sent = 0;
            s->pending--;
            return 1;
        }
    }

    return 0;
}


static rg_mcp_req_t *
rg_mcp_req_find(rg_mcp_server_t *s, int64_t id)
{
    rg_mcp_req_t  *r;

    for (r = *rg_mcp_bucket(s, id); r; r = r->next) {
        if (r->id == id) {
            rg_mcp_req_unlink(s, r);
            return r;
        }
    }

    return NULL;
}


static void
rg_mcp_queue_remove(rg_mcp_server_t *s, rg_mcp_req_t *r)
{
    rg_mcp_req_t  **pp;

    for (pp = &s->queue; *pp; pp = &(*pp)->next) {
        if (*pp == r) {
            *pp = r->next;
            if (s->queue_tail == &r->next) {
                s->queue_tail = pp;
            }
            r->next = NULL;
            r->queued = 0;
            return;
        }
    }
}


void
rg_mcp_req_free(rg_mcp_req_t *r)
{
    if (r->params) {
        json_decref(r->params);
    }

    free(r);
}


rg_mcp_req_t *
rg_mcp_req_create(rg_mcp_server_t *s, const char *method, json_t *params,
    rg_mcp_req_pt handler, void *data)
{
    rg_mcp_req_t  *r;

    r = calloc(1, sizeof(rg_mcp_req_t));
    if (r == NULL) {
        if (params) {
            json_decref(params);
        }
        return NULL;
    }

    r->server = s;
    r->method = method;
    r->params = params;
    r->handler = handler;
    r->data = data;

    return r;
}


/* the message's text: {"jsonrpc", "id"?, "method", "params"}; the
 * stateless revision puts who we are into every request's _meta */
static char *
rg_mcp_encode(rg_mcp_server_t *s, int64_t id, const char *method,
    json_t *params, json_t *idv)
{
    char    *text;
    json_t  *m, *p, *meta;

    m = json_object();
    if (m == NULL) {
        return NULL;
    }

    json_object_set_new(m, "jsonrpc", json_string("2.0"));

    if (idv) {
        json_object_set(m, "id", idv);
    } else if (id >= 0) {
        json_object_set_new(m, "id", json_integer(id));
    }

    if (method) {
        json_object_set_new(m, "method", json_string(method));

        p = params ? json_incref(params) : NULL;

        if (s->modern) {
            if (p == NULL) {
                p = json_object();
            }

            meta = json_pack("{s:s, s:{s:s, s:s}, s:{}}",
                             "io.modelcontextprotocol/protocolVersion",
                             RG_MCP_STATELESS,
                             "io.modelcontextprotocol/clientInfo",
                             "name", "reagent", "version", RG_VERSION,
                             "io.modelcontextprotocol/clientCapabilities");
            if (p && meta) {
                json_object_set_new(p, "_meta", meta);
            } else if (meta) {
                json_decref(meta);
            }
        }

        if (p) {
            json_object_set_new(m, "params", p);
        }

    } else if (params) {
        /* an answer: params is {"result": …} or {"error": …} */
        json_object_update(m, params);
    }

    text = json_dumps(m, JSON_COMPACT);
    json_decref(m);

    return text;
}


static void
rg_mcp_req_timer_handler(evutil_socket_t fd, short what, void *arg)
{
    RG_UNUSED(fd);
    RG_UNUSED(what);

    rg_mcp_req_fail(arg, -1, "no answer in time");
}


rg_int_t
rg_mcp_req_send(rg_mcp_req_t *r, rg_uint_t force)
{
    char             *text;
    rg_int_t          rc;
    rg_mcp_server_t  *s;

    s = r->server;

    if (!force && s->state != RG_MCP_READY) {
        if (s->state != RG_MCP_STARTING) {
            return RG_DECLINED;
        }

        /* it starts: the call goes when it is ready */
        r->queued = 1;
        r->next = NULL;
        *s->queue_tail = r;
        s->queue_tail = &r->next;
        return RG_OK;
    }

    r->id = ++s->next_id;

    text = rg_mcp_encode(s, r->id, r->method, r->params, NULL);
    if (text == NULL) {
        snprintf(s->why, sizeof(s->why), "out of memory");
        return RG_ERROR;
    }

    if (r->params) {
        json_decref(r->params);
        r->params = NULL;
    }

    rg_mcp_req_link(s, r);

    rc = s->tp->send(s, r, r->method, text, strlen(text));
    free(text);

    if (rc != RG_OK) {
        rg_mcp_req_unlink(s, r);
        return RG_ERROR;
    }

    return RG_OK;
}


static rg_int_t
rg_mcp_notify(rg_mcp_server_t *s, const char *method, json_t *params)
{
    char      *text;
    rg_int_t   rc;

    text = rg_mcp_encode(s, -1, method, params, NULL);

    if (params) {
        json_decref(params);
    }

    if (text == NULL) {
        return RG_ERROR;
    }

    rc = s->tp->send(s, NULL, method, text, strlen(text));
    free(text);

    return rc;
}


void
rg_mcp_req_drop(rg_mcp_req_t *r, const char *cancelled)
{
    rg_mcp_server_t  *s;

    s = r->server;

    if (r->queued) {
        rg_mcp_queue_remove(s, r);

    } else if (r->sent && rg_mcp_req_unlink(s, r)) {
        if (cancelled) {
            rg_mcp_notify(s, "notifications/cancelled",
                          json_pack("{s:I, s:s}", "requestId",
                                    (json_int_t) r->id, "reason",
                                    cancelled));
        }

        if (r->carrier) {
            s->tp->detach(s, r, 1);
        }
    }

    rg_mcp_req_free(r);
}


/* the end of a request, from its answer or its failure: out of the
 * server's tables, its carrier told, then its handler (which frees it) */
static void
rg_mcp_req_end(rg_mcp_req_t *r, json_t *result, json_t *error,
    const char *failure)
{
    rg_mcp_server_t  *s;

    s = r->server;

    if (r->carrier) {
        s->tp->detach(s, r, failure != NULL);
    }

    r->handler(r, result, error, failure);
}


void
rg_mcp_req_fail(rg_mcp_req_t *r, long status, const char *why)
{
    rg_mcp_server_t  *s;

    s = r->server;

    if (r->queued) {
        rg_mcp_queue_remove(s, r);
    } else if (!rg_mcp_req_unlink(s, r)) {
        return;                        /* already ended */
    }

    r->status = status;
    rg_mcp_req_end(r, NULL, NULL, why);
}


/* every request fails: those sent, and those waiting to be */
static void
rg_mcp_fail_all(rg_mcp_server_t *s, const char *sent, const char *waiting)
{
    rg_uint_t      i;
    rg_mcp_req_t  *r;

    for (i = 0; i < RG_MCP_BUCKETS; i++) {
        while ((r = s->buckets[i]) != NULL) {
            rg_mcp_req_unlink(s, r);
            rg_mcp_req_end(r, NULL, NULL, sent);
        }
    }

    while ((r = s->queue) != NULL) {
        rg_mcp_queue_remove(s, r);
        rg_mcp_req_end(r, NULL, NULL, waiting);
    }
}


/* a timer on an internal request (the handshake's first step) */
static rg_int_t
rg_mcp_req_send_timed(rg_mcp_req_t *r, rg_msec_t ms, struct event *ev)
{
    if (rg_mcp_req_send(r, 1) != RG_OK) {
        return RG_ERROR;
    }

    evtimer_assign(ev, r->server->ctx->base, rg_mcp_req_timer_handler, r);
    rg_timer_add(ev, ms);

    return RG_OK;
}


/* what the server sends ----------------------------------------------- */

static void
rg_mcp_skip(rg_mcp_server_t *s, const char *what, const char *text,
    size_t len)
{
    s->skipped++;

    /* a server that sends nothing else must not flood the log */
    if (s->skipped <= RG_MCP_SKIP_LOGGED || s->skipped % 1000 == 0) {
        rg_log_error(RG_LOG_WARN, s->log, 0, "mcp \"%.*s\": skipped %s "
                     "(%lu so far): \"%.*s\"",
                     (int) s->conf->name.len, s->conf->name.data, what,
                     (unsigned long) s->skipped, (int) rg_min(len, 120),
                     text);
    }
}


/* the server's own request: ping is answered, the rest refused (reagent
 * declares no client capability) */
static void
rg_mcp_answer_request(rg_mcp_server_t *s, const char *method, json_t *id)
{
    char    *text;
    json_t  *body;

    if (strcmp(method, "ping") == 0) {
        body = json_pack("{s:{}}", "result");
    } else {
        body = json_pack("{s:{s:i, s:s}}", "error", "code", -32601,
                         "message", "reagent does not offer this method");
    }

    if (body == NULL) {
        return;
    }

    text = rg_mcp_encode(s, -1, NULL, body, id);
    json_decref(body);

    if (text) {
        (void) s->tp->send(s, NULL, NULL, text, strlen(text));
        free(text);
    }
}


static void
rg_mcp_notification(rg_mcp_server_t *s, const char *method, json_t *params)
{
    char         *data;
    rg_uint_t     level;
    const char   *l;

    if (strcmp(method, "notifications/tools/list_changed") == 0) {
        rg_log_debug(s->log, "mcp \"%.*s\": its tools changed",
                     (int) s->conf->name.len, s->conf->name.data);

        if (s->listing) {
            s->relist = 1;            /* the list under way may be stale */
        } else if (s->state == RG_MCP_READY) {
            rg_mcp_list(s, NULL);
        }
        return;
    }

    if (strcmp(method, "notifications/message") == 0) {
        l = json_string_value(json_object_get(params, "level"));
        level = l && (strcmp(l, "error") == 0 || strcmp(l, "critical") == 0
                      || strcmp(l, "alert") == 0
                      || strcmp(l, "emergency") == 0)
                ? RG_LOG_WARN : RG_LOG_INFO;

        if (!rg_log_enabled(s->log, level)) {
            return;
        }

        data = json_dumps(json_object_get(params, "data"),
                          JSON_COMPACT | JSON_ENCODE_ANY);

        rg_log_error(level, s->log, 0, "mcp \"%.*s\" says (%s): %.400s",
                     (int) s->conf->name.len, s->conf->name.data,
                     l ? l : "info", data ? data : "");
        free(data);
        return;
    }

    /* progress, cancelled, resources: nothing reagent waits for */
}


static void
rg_mcp_dispatch(rg_mcp_server_t *s, json_t *m, const char *text, size_t len)
{
    json_t        *id, *result, *error, *method;
    rg_mcp_req_t  *r;

    if (!json_is_object(m)) {
        rg_mcp_skip(s, "a message that is not a JSON-RPC object", text,
                    len);
        return;
    }

    id = json_object_get(m, "id");
    method = json_object_get(m, "method");

    if (json_is_string(method)) {
        if (id && !json_is_null(id)) {
            rg_mcp_answer_request(s, json_string_value(method), id);
        } else {
            rg_mcp_notification(s, json_string_value(method),
                                json_object_get(m, "params"));
        }
        return;
    }

    result = json_object_get(m, "result");
    error = json_object_get(m, "error");

    if ((result == NULL && error == NULL) || !json_is_integer(id)) {
        rg_mcp_skip(s, "a message that is neither a request, a "
                    "notification nor an answer to one of reagent's", text,
                    len);
        return;
    }

    r = rg_mcp_req_find(s, json_integer_value(id));
    if (r == NULL) {
        /* cancelled or timed out: its late answer goes */
        rg_log_debug(s->log, "mcp \"%.*s\": dropped the late answer to "
                     "request %lld", (int) s->conf->name.len,
                     s->conf->name.data,
                     (long long) json_integer_value(id));
        return;
    }

    rg_mcp_req_end(r, error ? NULL : result, error, NULL);
}


void
rg_mcp_server_receive(rg_mcp_server_t *s, const char *text, size_t len)
{
    size_t        i;
    json_t       *m;
    json_error_t  err;

    m = json_loadb(text, len, 0, &err);

    if (m == NULL) {
        rg_mcp_skip(s, "a line that is not JSON", text, len);
        return;
    }

    if (json_is_array(m)) {
        for (i = 0; i < json_array_size(m); i++) {
            rg_mcp_dispatch(s, json_array_get(m, i), text, len);
        }
    } else {
        rg_mcp_dispatch(s, m, text, len);
    }

    json_decref(m);
}


/* lifecycle ----------------------------------------------------------- */

static void
rg_mcp_first_done(rg_mcp_server_t *s)
{
    if (s->first) {
        s->first = 0;
        s->ctx->starting--;
    }
}


static void
rg_mcp_restart_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_mcp_server_t  *s;

    RG_UNUSED(fd);
    RG_UNUSED(what);

    s = arg;
    s->restart_set = 0;

    rg_mcp_server_start(s);
}


static void
rg_mcp_down(rg_mcp_server_t *s, rg_uint_t retry, const char *fmt, ...)
{
    char            sent[512], waiting[512], why[sizeof(s->why)];
    va_list         args;
    rg_msec_t       now, wait;

    if (s->state != RG_MCP_STARTING && s->state != RG_MCP_READY) {
        return;                        /* down already, or stopping */
    }

    /* from here on the handlers of the requests it fails see it down */
    s->state = retry ? RG_MCP_DOWN : RG_MCP_FAILED;

    /* through a copy: callers pass s->why itself as an argument */
    va_start(args, fmt);
    vsnprintf(why, sizeof(why), fmt, args);
    va_end(args);
    memcpy(s->why, why, sizeof(why));

    now = rg_monotonic_msec();
    wait = 0;

    if (retry) {
        /* a server that ran a good while starts again at once-ish */
        if (s->ready_at && now - s->ready_at >= RG_MCP_GOOD_RUN) {
            s->backoff = 0;
        }

        wait = s->backoff ? s->backoff : s->conf->restart_min;
        s->backoff = rg_min(wait * 2, s->conf->restart_max);
        s->restart_at = now + wait;
    }

    if (retry) {
        rg_log_error(RG_LOG_WARN, s->log, 0, "mcp \"%.*s\": %s; starting "
                     "it again in %.3gs", (int) s->conf->name.len,
                     s->conf->name.data, s->why, (double) wait / 1000);
    } else {
        rg_log_error(RG_LOG_ERR, s->log, 0, "mcp \"%.*s\": %s; its tools "
                     "are not offered", (int) s->conf->name.len,
                     s->conf->name.data, s->why);
    }

    if (s->start_set) {
        event_del(&s->start_ev);
        s->start_set = 0;
    }

    if (s->listen_set) {
        event_del(&s->listen_ev);
        s->listen_set = 0;
    }

    s->listing = 0;
    s->relist = 0;
    s->relists = 0;
    s->modern = 0;
    s->listen_cap = 0;

    if (s->settling) {
        event_del(&s->settle_ev);
        s->settling = 0;
    }
    s->version[0] = '\0';
    s->ready_at = 0;

    if (s->paging) {
        json_decref(s->paging);
        s->paging = NULL;
    }

    s->tp->close(s);

    snprintf(sent, sizeof(sent), "the MCP server \"%.*s\" failed before it "
             "answered (%s); whether the call took effect is unknown",
             (int) s->conf->name.len, s->conf->name.data, s->why);
    snprintf(waiting, sizeof(waiting), "the MCP server \"%.*s\" could not "
             "start (%s)", (int) s->conf->name.len, s->conf->name.data,
             s->why);

    rg_mcp_fail_all(s, sent, waiting);

    if (retry) {
        evtimer_assign(&s->restart_ev, s->ctx->base, rg_mcp_restart_handler,
                       s);
        rg_timer_add(&s->restart_ev, wait);
        s->restart_set = 1;
    }

    rg_mcp_first_done(s);
}


void
rg_mcp_server_lost(rg_mcp_server_t *s, const char *why)
{
    rg_mcp_down(s, 1, "%s", why);
}


static void
rg_mcp_start_timeout_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_mcp_server_t  *s;

    RG_UNUSED(fd);
    RG_UNUSED(what);

    s = arg;
    s->start_set = 0;

    rg_mcp_down(s, 1, "it did not finish starting within %.3gs "
                "(start_timeout)", (double) s->conf->start_timeout / 1000);
}


void
rg_mcp_server_start(rg_mcp_server_t *s)
{
    s->state = RG_MCP_STARTING;
    s->why[0] = '\0';

    if (s->tp->open(s) != RG_OK) {
        rg_mcp_down(s, 1, "%s", s->why[0] ? s->why : "it cannot start");
    }
}


void
rg_mcp_server_opened(rg_mcp_server_t *s)
{
    if (s->state != RG_MCP_STARTING) {
        return;
    }

    evtimer_assign(&s->start_ev, s->ctx->base, rg_mcp_start_timeout_handler,
                   s);
    rg_timer_add(&s->start_ev, s->conf->start_timeout);
    s->start_set = 1;

    if (s->conf->protocol == RG_MCP_PROTO_SESSION) {
        rg_mcp_initialize(s);
    } else {
        rg_mcp_discover(s);
    }
}


static void
rg_mcp_ready(rg_mcp_server_t *s)
{
    rg_mcp_req_t  *q, *r;

    if (s->start_set) {
        event_del(&s->start_ev);
        s->start_set = 0;
    }

    s->state = RG_MCP_READY;
    s->ready_at = rg_monotonic_msec();

    rg_log_error(s->first ? RG_LOG_NOTICE : RG_LOG_INFO, s->log, 0,
                 "mcp \"%.*s\": ready (%s, protocol %s), %lu tools",
                 (int) s->conf->name.len, s->conf->name.data, s->tp->name,
                 s->version, (unsigned long) (s->list ? s->list->n : 0));

    rg_mcp_first_done(s);

    /* the stateless revision tells of changes on a stream asked for */
    if (s->modern && s->listen_cap) {
        s->listen_wait = 0;
        rg_mcp_listen(s);
    }

    /* the calls that waited */
    q = s->queue;
    s->queue = NULL;
    s->queue_tail = &s->queue;

    while (q) {
        r = q;
        q = q->next;
        r->queued = 0;
        r->next = NULL;

        if (rg_mcp_req_send(r, 0) != RG_OK) {
            r->handler(r, NULL, NULL, s->why);
        }
    }
}


static void
rg_mcp_settle_handler(evutil_socket_t fd, short what, void *arg)
{
    RG_UNUSED(fd);
    RG_UNUSED(what);

    rg_mcp_server_settled(arg);
}


static void
rg_mcp_settle(rg_mcp_server_t *s)
{
    rg_msec_t  ms;

    ms = rg_min(RG_MCP_SETTLE_WAIT, s->conf->start_timeout / 4 + 1);

    evtimer_assign(&s->settle_ev, s->ctx->base, rg_mcp_settle_handler, s);
    rg_timer_add(&s->settle_ev, ms);
    s->settling = 1;
}


void
rg_mcp_server_settled(rg_mcp_server_t *s)
{
    if (!s->settling || s->state != RG_MCP_STARTING) {
        return;
    }

    s->settling = 0;
    event_del(&s->settle_ev);

    rg_mcp_ready(s);
}


/* server/discover: a server of the stateless revision says so; any
 * other answer (an error, a status, silence) means the session-based
 * one, unless only the stateless one was asked for */
static void
rg_mcp_discover_handler(rg_mcp_req_t *r, json_t *result, json_t *error,
    const char *failure)
{
    size_t            i;
    json_t           *versions;
    rg_uint_t         modern;
    rg_mcp_server_t  *s;
    struct event     *ev;

    s = r->server;
    ev = r->data;
    event_del(ev);
    free(ev);

    if (s->state != RG_MCP_STARTING) {
        rg_mcp_req_free(r);            /* it went down meanwhile */
        return;
    }

    modern = 0;
    versions = json_object_get(result, "supportedVersions");

    for (i = 0; i < json_array_size(versions); i++) {
        if (json_is_string(json_array_get(versions, i))
            && strcmp(json_string_value(json_array_get(versions, i)),
                      RG_MCP_STATELESS) == 0)
        {
            modern = 1;
        }
    }

    /* a transport failure is not an answer: the server is not there */
    if (failure && r->status == 0) {
        rg_mcp_req_free(r);
        rg_mcp_down(s, 1, "%s", failure);
        return;
    }

    rg_mcp_req_free(r);

    if (modern) {
        s->modern = 1;
        s->listen_cap = json_is_true(json_object_get(json_object_get(
                            json_object_get(result, "capabilities"), "tools"),
                            "listChanged"));
        snprintf(s->version, sizeof(s->version), "%s", RG_MCP_STATELESS);
        s->tp->ready(s);
        rg_mcp_list(s, NULL);
        return;
    }

    if (s->conf->protocol == RG_MCP_PROTO_STATELESS) {
        rg_mcp_down(s, 0, "it does not speak the stateless protocol "
                    "revision %s (server/discover: %s)", RG_MCP_STATELESS,
                    failure ? failure : error ? "an error" : "no such version");
        return;
    }

    rg_mcp_initialize(s);
}


static void
rg_mcp_discover(rg_mcp_server_t *s)
{
    struct event  *ev;
    rg_mcp_req_t  *r;

    ev = calloc(1, sizeof(struct event));

    /* the envelope is the stateless revision's: set while it is sent */
    s->modern = 1;
    r = ev ? rg_mcp_req_create(s, "server/discover", NULL,
                               rg_mcp_discover_handler, ev)
           : NULL;

    if (r == NULL
        || rg_mcp_req_send_timed(r, rg_min(RG_MCP_DISCOVER_WAIT,
                                           s->conf->start_timeout / 4 + 1),
                                 ev)
           != RG_OK)
    {
        s->modern = 0;
        free(ev);
        if (r) {
            rg_mcp_req_free(r);
        }
        rg_mcp_down(s, 1, "%s", s->why[0] ? s->why : "out of memory");
        return;
    }

    s->modern = 0;
}


static void
rg_mcp_initialize_handler(rg_mcp_req_t *r, json_t *result, json_t *error,
    const char *failure)
{
    rg_uint_t         i;
    const char       *v;
    rg_mcp_server_t  *s;

    s = r->server;
    rg_mcp_req_free(r);

    if (s->state != RG_MCP_STARTING) {
        return;
    }

    if (failure) {
        rg_mcp_down(s, 1, "initialize failed: %s", failure);
        return;
    }

    if (error) {
        rg_mcp_down(s, 1, "initialize was refused: %.200s",
                    json_string_value(json_object_get(error, "message"))
                    ? json_string_value(json_object_get(error, "message"))
                    : "(no message)");
        return;
    }

    v = json_string_value(json_object_get(result, "protocolVersion"));

    for (i = 0; v && rg_mcp_versions[i]; i++) {
        if (strcmp(v, rg_mcp_versions[i]) == 0) {
            break;
        }
    }

    if (v == NULL || rg_mcp_versions[i] == NULL) {
        rg_mcp_down(s, 0, "it speaks MCP protocol version \"%.40s\" and "
                    "reagent speaks %s", v ? v : "(none)",
                    RG_MCP_VERSIONS_TEXT);
        return;
    }

    snprintf(s->version, sizeof(s->version), "%s", v);

    if (rg_mcp_notify(s, "notifications/initialized", NULL) != RG_OK) {
        rg_mcp_down(s, 1, "%s", s->why);
        return;
    }

    s->tp->ready(s);
    rg_mcp_list(s, NULL);
}


static void
rg_mcp_initialize(rg_mcp_server_t *s)
{
    json_t        *params;
    rg_mcp_req_t  *r;

    s->modern = 0;

    params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion",
                       rg_mcp_versions[0], "capabilities", "clientInfo",
                       "name", "reagent", "version", RG_VERSION);

    r = rg_mcp_req_create(s, "initialize", params, rg_mcp_initialize_handler,
                          NULL);

    if (r == NULL || rg_mcp_req_send(r, 1) != RG_OK) {
        if (r) {
            rg_mcp_req_free(r);
        }
        rg_mcp_down(s, 1, "%s", s->why[0] ? s->why : "out of memory");
    }
}


/* tools/list, page by page, then the tools published */
static void
rg_mcp_list_handler(rg_mcp_req_t *r, json_t *result, json_t *error,
    const char *failure)
{
    size_t            i;
    json_t           *tools;
    rg_uint_t         starting;
    const char       *cursor;
    rg_tool_list_t   *list;
    rg_mcp_server_t  *s;

    s = r->server;
    rg_mcp_req_free(r);

    if (s->state != RG_MCP_STARTING && s->state != RG_MCP_READY) {
        return;                        /* it went down meanwhile */
    }

    starting = s->state == RG_MCP_STARTING;

    if (failure || (error && json_integer_value(json_object_get(error,
                                                               "code"))
                             != -32601))
    {
        if (starting) {
            rg_mcp_down(s, 1, "tools/list failed: %.200s",
                        failure ? failure
                        : json_string_value(json_object_get(error, "message"))
                          ? json_string_value(json_object_get(error,
                                                              "message"))
                          : "an error");
            return;
        }

        /* it keeps the tools it had */
        rg_log_error(RG_LOG_WARN, s->log, 0, "mcp \"%.*s\": tools/list "
                     "failed: %.200s", (int) s->conf->name.len,
                     s->conf->name.data, failure ? failure : "an error");
        s->listing = 0;
        json_decref(s->paging);
        s->paging = NULL;
        return;
    }

    /* -32601: a server without tools */
    tools = json_object_get(result, "tools");

    for (i = 0; i < json_array_size(tools)
                && json_array_size(s->paging) < RG_MCP_MAX_TOOLS; i++)
    {
        json_array_append(s->paging, json_array_get(tools, i));
    }

    cursor = json_string_value(json_object_get(result, "nextCursor"));

    if (cursor && *cursor && ++s->pages < RG_MCP_MAX_PAGES
        && json_array_size(s->paging) < RG_MCP_MAX_TOOLS)
    {
        rg_mcp_list(s, cursor);
        return;
    }

    s->listing = 0;

    if (s->relist && ++s->relists <= RG_MCP_RELIST_MAX) {
        /* it changed while it was read: read it again */
        s->relist = 0;
        rg_mcp_list(s, NULL);
        return;
    }

    s->relist = 0;
    s->relists = 0;

    list = rg_mcp_tools_build(s, s->paging);
    json_decref(s->paging);
    s->paging = NULL;

    if (list == NULL) {
        if (starting) {
            rg_mcp_down(s, 1, "out of memory");
        }
        return;
    }

    if (s->list && rg_mcp_tools_same(s->list, list)) {
        rg_tool_list_unref(list);

    } else {
        rg_tools_provide(s->ctx->tools, s->conf->provider, list);
        rg_tool_list_unref(s->list);
        s->list = list;

        if (!starting) {
            rg_log_error(RG_LOG_NOTICE, s->log, 0, "mcp \"%.*s\": %lu "
                         "tools now; sessions that start from now on get "
                         "them", (int) s->conf->name.len, s->conf->name.data,
                         (unsigned long) list->n);
        }
    }

    if (starting) {
        /* what the server says on its own stream (list_changed) must not
         * be missed: ready once that stream is open, or a while passed */
        if (!s->tp->settled(s)) {
            rg_mcp_settle(s);
            return;
        }

        rg_mcp_ready(s);
    }
}


static void
rg_mcp_list(rg_mcp_server_t *s, const char *cursor)
{
    json_t        *params;
    rg_mcp_req_t  *r;

    if (cursor == NULL) {
        if (s->paging == NULL) {
            s->paging = json_array();
        } else {
            json_array_clear(s->paging);
        }
        s->pages = 0;
    }

    s->listing = 1;

    params = cursor ? json_pack("{s:s}", "cursor", cursor) : NULL;

    r = s->paging ? rg_mcp_req_create(s, "tools/list", params,
                                      rg_mcp_list_handler, NULL)
                  : NULL;

    if (r == NULL || rg_mcp_req_send(r, 1) != RG_OK) {
        if (r) {
            rg_mcp_req_free(r);
        }

        s->listing = 0;

        if (s->state == RG_MCP_STARTING) {
            rg_mcp_down(s, 1, "%s", s->why[0] ? s->why : "out of memory");
        }
    }
}


/* subscriptions/listen: a request of the stateless revision that stays
 * open, its stream carrying list_changed; asked for again when it ends */
static void
rg_mcp_listen_handler_timer(evutil_socket_t fd, short what, void *arg)
{
    rg_mcp_server_t  *s;

    RG_UNUSED(fd);
    RG_UNUSED(what);

    s = arg;
    s->listen_set = 0;

    if (s->state == RG_MCP_READY) {
        rg_mcp_listen(s);
    }
}


static void
rg_mcp_listen_handler(rg_mcp_req_t *r, json_t *result, json_t *error,
    const char *failure)
{
    rg_mcp_server_t  *s;

    s = r->server;
    rg_mcp_req_free(r);

    if (s->state != RG_MCP_READY
        || (error && json_integer_value(json_object_get(error, "code"))
                     == -32601))
    {
        return;
    }

    rg_log_debug(s->log, "mcp \"%.*s\": its subscription ended (%s)",
                 (int) s->conf->name.len, s->conf->name.data,
                 failure ? failure : error ? "an error" : "by the server");

    s->listen_wait = s->listen_wait ? rg_min(s->listen_wait * 2, 30000)
                                    : 1000;

    evtimer_assign(&s->listen_ev, s->ctx->base, rg_mcp_listen_handler_timer,
                   s);
    rg_timer_add(&s->listen_ev, s->listen_wait);
    s->listen_set = 1;
}


static void
rg_mcp_listen(rg_mcp_server_t *s)
{
    json_t        *params;
    rg_mcp_req_t  *r;

    params = json_pack("{s:{s:b}}", "notifications", "toolsListChanged", 1);
    r = rg_mcp_req_create(s, "subscriptions/listen", params,
                          rg_mcp_listen_handler, NULL);

    if (r && rg_mcp_req_send(r, 0) != RG_OK) {
        rg_mcp_req_free(r);
    }
}


/* the engine's side ---------------------------------------------------- */

void
rg_mcp_server_init(rg_mcp_server_t *s, rg_mcp_ctx_t *ctx,
    rg_mcp_conf_t *conf)
{
    memset(s, 0, sizeof(rg_mcp_server_t));

    s->conf = conf;
    s->ctx = ctx;
    s->log = ctx->log;
    s->tp = conf->command ? &rg_mcp_stdio_transport : &rg_mcp_http_transport;
    s->queue_tail = &s->queue;
    s->first = 1;
    ctx->starting++;
}


void
rg_mcp_server_stop(rg_mcp_server_t *s)
{
    char  why[128];

    if (s->restart_set) {
        event_del(&s->restart_ev);
        s->restart_set = 0;
    }

    if (s->start_set) {
        event_del(&s->start_ev);
        s->start_set = 0;
    }

    if (s->listen_set) {
        event_del(&s->listen_ev);
        s->listen_set = 0;
    }

    s->state = RG_MCP_STOPPING;
    s->listing = 0;

    if (s->settling) {
        event_del(&s->settle_ev);
        s->settling = 0;
    }

    snprintf(why, sizeof(why), "the MCP server \"%.*s\" is being stopped",
             (int) s->conf->name.len, s->conf->name.data);

    rg_mcp_fail_all(s, why, why);

    rg_tools_provide(s->ctx->tools, s->conf->provider, NULL);

    rg_mcp_first_done(s);

    s->tp->stop(s);
}


void
rg_mcp_server_free(rg_mcp_server_t *s)
{
    s->tp->free(s);
    free(s->tpd);
    s->tpd = NULL;

    if (s->paging) {
        json_decref(s->paging);
        s->paging = NULL;
    }

    rg_tool_list_unref(s->list);
    s->list = NULL;
}
