/* rg_http_events.c: GET /v1/tasks/{id}/events, what a task's session
 * does as Server-Sent Events (model calls started and ended with their
 * tokens, tool calls started and ended, approval needed, final), read
 * from the session's stream in the store: Redis with a queue, so any
 * worker follows a session whichever worker runs it; this worker's
 * memory store without one. Each event is "id: ms-seq", "event: TYPE",
 * "data: JSON"; a client that comes back with Last-Event-ID (or
 * ?after=ID) gets what followed it. The stream ends after "final". New
 * events are polled every 200 ms; a comment every 15 s keeps proxies
 * from closing a quiet stream. At most max_event_streams per worker; a
 * drain ends them (their clients resume elsewhere with Last-Event-ID). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_store.h>
#include <rg_redis.h>
#include <rg_events.h>
#include <rg_stream.h>
#include <rg_http.h>
#include <rg_http_tasks.h>
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>


#define RG_HTTP_EVENTS_POLL    200
#define RG_HTTP_EVENTS_PING    15000
#define RG_HTTP_EVENTS_BATCH   200


struct rg_http_follow_s {
    rg_http_link_t      link;             /* in the worker's ring: first */
    rg_http_req_t      *r;
    rg_http_t          *http;
    char               *id;               /* the task's */
    char                sid[48];          /* its session's */
    char                after[48];        /* the last id sent */
    rg_events_read_t   *reading;
    rg_redis_cmd_t     *cmd;              /* the task's existence */
    rg_store_op_t      *op;
    struct event       *poll_ev;
    rg_msec_t           pinged;
    rg_uint_t           started:1;        /* its headers went out */
    rg_uint_t           counted:1;        /* in h->streams, the ring */
};


static void rg_http_follow_read(rg_http_follow_t *f);


static void
rg_http_follow_free(rg_http_follow_t *f)
{
    if (f->reading) {
        rg_events_cancel(f->reading);
    }
    if (f->cmd) {
        rg_redis_cancel(f->cmd);
    }
    if (f->op) {
        f->http->tasks->store->cancel(f->http->tasks->store, f->op);
    }
    if (f->poll_ev) {
        event_free(f->poll_ev);
    }
    if (f->counted) {
        f->http->streams--;
        f->link.prev->next = f->link.next;
        f->link.next->prev = f->link.prev;
    }
    free(f->id);
    free(f);
}


static void
rg_http_follow_gone(rg_http_req_t *r)
{
    rg_http_follow_t  *f;

    f = r->data;
    f->r = NULL;
    rg_http_follow_free(f);
}


static void
rg_http_follow_end(rg_http_follow_t *f)
{
    rg_http_req_t  *r;

    r = f->r;
    f->r = NULL;
    rg_http_stream_end(r);
    rg_http_follow_free(f);
}


static void
rg_http_follow_start(rg_http_follow_t *f)
{
    struct evkeyvalq  *h;

    h = evhttp_request_get_output_headers(f->r->req);
    evhttp_add_header(h, "Content-Type", "text/event-stream");
    evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_add_header(h, "X-Request-ID", f->r->id);
    evhttp_add_header(h, "X-Accel-Buffering", "no");
    evhttp_send_reply_start(f->r->req, 200, "OK");
    f->r->status = 200;
    f->started = 1;
    f->pinged = rg_monotonic_msec();
}


static void
rg_http_follow_later(rg_http_follow_t *f)
{
    struct timeval  tv = { 0, RG_HTTP_EVENTS_POLL * 1000 };

    evtimer_add(f->poll_ev, &tv);
}


static void
rg_http_follow_events(void *data, rg_int_t rc, const rg_store_entry_t *ev,
    rg_uint_t n, const char *err)
{
    rg_uint_t          i, final;
    struct evbuffer   *b;
    rg_http_follow_t  *f;

    f = data;
    f->reading = NULL;

    if (rc != RG_OK) {
        /* the store away: the stream waits for it, as the session does */
        rg_http_follow_later(f);
        return;
    }

    final = 0;
    b = n ? evbuffer_new() : NULL;

    for (i = 0; b && i < n; i++) {
        evbuffer_add_printf(b, "id: %.*s\nevent: %.*s\ndata: %.*s\n\n",
                            (int) ev[i].id.len, ev[i].id.data,
                            (int) ev[i].type.len, ev[i].type.data,
                            (int) ev[i].data.len, ev[i].data.data);
        snprintf(f->after, sizeof(f->after), "%.*s",
                 (int) rg_min(ev[i].id.len, sizeof(f->after) - 1),
                 ev[i].id.data);
        final |= ev[i].type.len == 5
                 && memcmp(ev[i].type.data, "final", 5) == 0;
    }

    if (b == NULL && rg_monotonic_msec() - f->pinged >= RG_HTTP_EVENTS_PING)
    {
        b = evbuffer_new();
        if (b) {
            evbuffer_add_printf(b, ": ping\n\n");
        }
    }

    if (b) {
        f->r->bytes += evbuffer_get_length(b);
        /* send_timeout from now, not from the start of the loop's turn */
        event_base_update_cache_time(f->r->http->engine->base);
        evhttp_send_reply_chunk(f->r->req, b);
        evbuffer_free(b);
        f->pinged = rg_monotonic_msec();
    }

    if (final) {
        rg_http_follow_end(f);
        return;
    }

    /* a full page: the next at once; else a little later */
    if (n == RG_HTTP_EVENTS_BATCH) {
        rg_http_follow_read(f);
    } else {
        rg_http_follow_later(f);
    }
}


static void
rg_http_follow_read(rg_http_follow_t *f)
{
    f->reading = rg_events_read(f->http->engine, f->sid, f->after,
                                RG_HTTP_EVENTS_BATCH, rg_http_follow_events,
                                f);
    if (f->reading == NULL) {
        rg_http_follow_later(f);
    }
}


static void
rg_http_follow_poll(evutil_socket_t fd, short what, void *arg)
{
    rg_http_follow_read(arg);
}


/* the task is known: the stream starts */
static void
rg_http_follow_known(rg_http_follow_t *f, rg_uint_t known)
{
    if (!known) {
        rg_http_req_t  *r;

        r = f->r;
        f->r = NULL;
        rg_http_follow_free(f);
        rg_http_error(r, 404, "invalid_request_error", "task_not_found",
                      "no task %.200s (or it ended longer ago than the "
                      "session ttl)", r->rest);
        return;
    }

    rg_http_follow_start(f);
    rg_http_follow_read(f);
}


static void
rg_http_follow_exists(void *data, redisReply *reply, const char *err)
{
    rg_http_follow_t  *f;

    f = data;
    f->cmd = NULL;

    if (err) {
        rg_http_req_t  *r;

        r = f->r;
        f->r = NULL;
        rg_http_follow_free(f);
        rg_http_error(r, 503, "server_error", "store_unavailable",
                      "the task cannot be looked up: %s", err);
        return;
    }

    rg_http_follow_known(f, reply->type == REDIS_REPLY_INTEGER
                            && reply->integer > 0);
}


static void
rg_http_follow_result(void *data, const rg_store_res_t *res)
{
    rg_http_follow_t  *f;

    f = data;
    f->op = NULL;

    rg_http_follow_known(f, res->rc == RG_OK);
}


void
rg_http_events_init(rg_http_t *h)
{
    h->follows.next = h->follows.prev = &h->follows;
}


void
rg_http_events_handler(rg_http_req_t *r, const char *id)
{
    char               key[3][128];
    size_t             lens[4];
    rg_str_t           tag, k;
    const char        *after, *argv[4];
    rg_http_tasks_t   *ts;
    rg_http_follow_t  *f;

    ts = r->http->tasks;

    if (r->http->streams >= (rg_uint_t) r->http->conf->max_event_streams) {
        rg_http_error(r, 503, "unavailable", "too_many_streams",
                      "this worker follows max_event_streams (%ld) event "
                      "streams already: ask again later",
                      (long) r->http->conf->max_event_streams);
        return;
    }

    after = rg_http_header(r, "Last-Event-ID");
    if (after == NULL && r->query && strncmp(r->query, "after=", 6) == 0) {
        after = r->query + 6;
    }

    if (after && after[0] && !rg_events_id_valid(after)) {
        rg_http_error(r, 400, "invalid_request_error", "bad_event_id",
                      "Last-Event-ID must be an event id (\"ms-seq\")");
        return;
    }

    f = calloc(1, sizeof(rg_http_follow_t));
    if (f) {
        f->id = strdup(id);
        f->poll_ev = evtimer_new(r->http->engine->base, rg_http_follow_poll,
                                 f);
    }
    if (f == NULL || f->id == NULL || f->poll_ev == NULL) {
        if (f) {
            f->http = r->http;
            rg_http_follow_free(f);
        }
        rg_http_nomem(r);
        return;
    }

    f->r = r;
    f->http = r->http;
    f->counted = 1;
    r->http->streams++;
    f->link.next = &r->http->follows;
    f->link.prev = r->http->follows.prev;
    r->http->follows.prev->next = &f->link;
    r->http->follows.prev = &f->link;
    snprintf(f->after, sizeof(f->after), "%s", after ? after : "");
    rg_stream_session_id(id, f->sid, sizeof(f->sid));

    rg_http_watch(r, rg_http_follow_gone, f);

    if (ts->queue) {
        /* submitted (its mark), running (its meta) or ended (its result) */
        snprintf(key[0], sizeof(key[0]), "%s{%s}:task", ts->prefix, f->sid);
        snprintf(key[1], sizeof(key[1]), "%s{%s}:meta", ts->prefix, f->sid);
        snprintf(key[2], sizeof(key[2]), "%s{%s}:result", ts->prefix,
                 f->sid);
        argv[0] = "EXISTS";
        argv[1] = key[0];
        argv[2] = key[1];
        argv[3] = key[2];
        lens[0] = 6;
        lens[1] = strlen(key[0]);
        lens[2] = strlen(key[1]);
        lens[3] = strlen(key[2]);
        tag.data = f->sid;
        tag.len = strlen(f->sid);

        f->cmd = rg_redis_command(ts->redis, &tag, 0, rg_http_follow_exists,
                                  f, 4, argv, lens);
        if (f->cmd == NULL) {
            f->r = NULL;
            rg_http_follow_free(f);
            rg_http_nomem(r);
        }
        return;
    }

    /* here: a task of this worker, or its kept result */
    if (rg_http_task_find(ts, id)) {
        rg_http_follow_known(f, 1);
        return;
    }

    snprintf(key[0], sizeof(key[0]), "{%s}:result", f->sid);
    k.data = key[0];
    k.len = strlen(key[0]);
    f->op = ts->store->get(ts->store, &k, rg_http_follow_result, f);
    if (f->op == NULL) {
        f->r = NULL;
        rg_http_follow_free(f);
        rg_http_nomem(r);
    }
}


/* a drain ends the streams: their clients come back with Last-Event-ID
 * to a worker that stays, and this one goes without waiting for them */
void
rg_http_events_drain(rg_http_t *h)
{
    rg_http_link_t    *l, *next;
    rg_http_follow_t  *f;

    for (l = h->follows.next; l != &h->follows; l = next) {
        next = l->next;
        f = (rg_http_follow_t *) l;

        if (f->r == NULL) {
            continue;
        }

        if (f->started) {
            rg_http_follow_end(f);

        } else {
            rg_http_req_t  *r;

            r = f->r;
            f->r = NULL;
            rg_http_follow_free(f);
            rg_http_error(r, 503, "unavailable", "draining", "this worker is "
                          "shutting down: ask again (another one answers)");
        }
    }
}
