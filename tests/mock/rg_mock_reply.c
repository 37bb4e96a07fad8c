/* rg_mock_reply.c: the replies of the mock model on their way out. Owns
 * the list of pending replies (delayed by --latency or a script's
 * delay_ms, hanging, or streaming), their timers, the watch that notices
 * a client that left, and the pacing of streamed events (--stream-delay).
 * Knows nothing about wire formats: a reply is a status and a body, or a
 * list of events built by rg_mock_sse.c. */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>

#include "rg_mock.h"


static void
rg_mock_account(rg_mock_reply_t *r)
{
    switch (r->kind) {
    case RG_MOCK_COMPLETION:
        rg_mock.stats.completions++;
        break;
    case RG_MOCK_FAULT:
        rg_mock.stats.faults++;
        break;
    case RG_MOCK_PAGE:
        break;
    default:
        rg_mock.stats.rejected++;
        break;
    }

    if (rg_mock.conf.quiet) {
        return;
    }

    switch (r->action) {
    case RG_MOCK_HANG:
        rg_mock_log("request %" PRIu64 ": hang (%s)", r->number, r->note);
        break;
    case RG_MOCK_CLOSE:
        rg_mock_log("request %" PRIu64 ": close (%s)", r->number, r->note);
        break;
    default:
        rg_mock_log("request %" PRIu64 ": %d (%s)", r->number, r->status,
                    r->note);
        break;
    }
}


void
rg_mock_pending_free(rg_mock_pending_t *p)
{
    if (p->timer != NULL) {
        event_free(p->timer);
    }

    if (p->watch != NULL) {
        event_free(p->watch);
    }

    if (p->prev != NULL) {
        p->prev->next = p->next;

    } else {
        rg_mock.pending = p->next;
    }

    if (p->next != NULL) {
        p->next->prev = p->prev;
    }

    rg_mock.stats.inflight--;

    rg_mock_stream_free(p->reply.stream);
    free(p);
}


/* The connection of a pending request is going away (client gone, close
 * fault, shutdown). evhttp frees the request itself unless it detached it
 * from the connection first; then the request is ours. */

static void
rg_mock_close_handler(struct evhttp_connection *evcon, void *arg)
{
    rg_mock_pending_t  *p = arg;

    evhttp_connection_set_closecb(evcon, NULL, NULL);

    if (evhttp_request_get_connection(p->req) == NULL) {
        evhttp_request_free(p->req);
    }

    if (p->reply.action != RG_MOCK_CLOSE) {
        rg_mock_log("request %" PRIu64 ": client went away", p->reply.number);
    }

    rg_mock_pending_free(p);
}


/* evhttp stops reading while a request waits for its reply, so it would
 * not notice the client leaving; peek at the socket instead. */

static void
rg_mock_watch_handler(evutil_socket_t fd, short events, void *arg)
{
    char                c;
    ssize_t             rc;
    rg_mock_pending_t  *p = arg;

    (void) events;

    rc = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

    if (rc > 0) {
        /* a pipelined request: evhttp reads it after this reply */
        return;
    }

    if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    {
        event_add(p->watch, NULL);
        return;
    }

    /* runs rg_mock_close_handler(), which frees p */
    evhttp_connection_free(p->evcon);
}


/* Starts a streamed reply: the status line and headers go out now, the
 * events follow as chunks. */

static void
rg_mock_stream_start(rg_mock_pending_t *p)
{
    int                  on;
    evutil_socket_t      fd;
    struct bufferevent  *bev;

    /* while evhttp writes a reply it reads too, and notices a client that
     * leaves mid-stream; the watch would only race with it */

    if (p->watch != NULL) {
        event_free(p->watch);
        p->watch = NULL;
    }

    /* small events must not wait for the client's delayed ACKs */

    bev = evhttp_connection_get_bufferevent(p->evcon);
    fd = bev ? bufferevent_getfd(bev) : -1;

    if (fd >= 0) {
        on = 1;
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    }

    evhttp_send_reply_start(p->req, p->reply.status,
                            rg_mock_reason(p->reply.status));
}


static void rg_mock_stream_send(rg_mock_pending_t *p);


static void
rg_mock_stream_drained(struct evhttp_connection *evcon, void *arg)
{
    (void) evcon;

    rg_mock_stream_send(arg);
}


/* Sends the next chunk of a stream: the first event alone, then with
 * --stream-delay one event per chunk and the delay between them, without
 * it the rest in one chunk as soon as the first is written. After the
 * last chunk the reply ends and p is gone. */

static void
rg_mock_stream_send(rg_mock_pending_t *p)
{
    size_t                  n;
    struct evbuffer        *buf;
    rg_mock_stream_t       *s;
    struct evhttp_request  *req;

    s = p->reply.stream;

    if (s->next == 0) {
        rg_mock_stream_start(p);
    }

    buf = evbuffer_new();
    if (buf == NULL) {
        goto failed;
    }

    if (s->next == 0 || rg_mock.conf.stream_delay > 0) {
        n = s->sizes[s->next++];

    } else {
        n = evbuffer_get_length(s->events);
        s->next = s->nsizes;
    }

    if (evbuffer_remove_buffer(s->events, buf, n) != (int) n) {
        goto failed;
    }

    if (s->next == s->nsizes) {
        req = p->req;

        evhttp_connection_set_closecb(p->evcon, NULL, NULL);
        rg_mock_pending_free(p);

        evhttp_send_reply_chunk(req, buf);
        evhttp_send_reply_end(req);
        evbuffer_free(buf);
        return;
    }

    if (rg_mock.conf.stream_delay == 0) {
        evhttp_send_reply_chunk_with_cb(p->req, buf, rg_mock_stream_drained,
                                        p);
        evbuffer_free(buf);
        return;
    }

    evhttp_send_reply_chunk(p->req, buf);
    evbuffer_free(buf);

    if (evtimer_add(p->timer, rg_mock.stream_tv) == 0) {
        return;
    }

    buf = NULL;

failed:

    /* no memory to go on: end the stream the way a crashed server does */

    fprintf(stderr, "rg_mock: request %" PRIu64 ": cannot stream, out of "
            "memory\n", p->reply.number);

    if (buf != NULL) {
        evbuffer_free(buf);
    }

    /* runs rg_mock_close_handler(), which frees p */
    evhttp_connection_free(p->evcon);
}


static void
rg_mock_timer_handler(evutil_socket_t fd, short events, void *arg)
{
    int                        status;
    rg_mock_pending_t         *p = arg;
    struct evhttp_request     *req;
    struct evhttp_connection  *evcon;

    (void) fd;
    (void) events;

    if (p->reply.stream != NULL && p->reply.stream->next > 0) {
        rg_mock_stream_send(p);
        return;
    }

    rg_mock_account(&p->reply);

    switch (p->reply.action) {

    case RG_MOCK_SEND:
        if (p->reply.stream != NULL) {
            rg_mock_stream_send(p);
            return;
        }

        req = p->req;
        evcon = p->evcon;
        status = p->reply.status;

        evhttp_connection_set_closecb(evcon, NULL, NULL);
        rg_mock_pending_free(p);
        evhttp_send_reply(req, status, rg_mock_reason(status), NULL);
        return;

    case RG_MOCK_CLOSE:
        /* runs rg_mock_close_handler(), which frees p */
        evhttp_connection_free(p->evcon);
        return;

    default: /* RG_MOCK_HANG: wait for the client to leave */
        event_free(p->timer);
        p->timer = NULL;
        return;
    }
}


void
rg_mock_dispatch(struct evhttp_request *req, rg_mock_reply_t *r)
{
    struct timeval       tv;
    evutil_socket_t      fd;
    rg_mock_pending_t   *p;
    struct bufferevent  *bev;

    if (r->delay == 0 && r->action == RG_MOCK_SEND && r->stream == NULL) {
        rg_mock_account(r);
        rg_mock.stats.inflight--;
        evhttp_send_reply(req, r->status, rg_mock_reason(r->status), NULL);
        return;
    }

    p = calloc(1, sizeof(rg_mock_pending_t));
    if (p == NULL) {
        goto failed;
    }

    p->req = req;
    p->evcon = evhttp_request_get_connection(req);
    p->reply = *r;

    p->next = rg_mock.pending;
    if (p->next != NULL) {
        p->next->prev = p;
    }
    rg_mock.pending = p;

    evhttp_connection_set_closecb(p->evcon, rg_mock_close_handler, p);

    bev = evhttp_connection_get_bufferevent(p->evcon);
    fd = bev ? bufferevent_getfd(bev) : -1;

    if (fd >= 0) {
        p->watch = event_new(rg_mock.base, fd, EV_READ, rg_mock_watch_handler,
                             p);
        if (p->watch == NULL || event_add(p->watch, NULL) != 0) {
            goto failed;
        }
    }

    if (r->delay == 0 && r->action == RG_MOCK_HANG) {
        rg_mock_account(r);
        return;
    }

    p->timer = evtimer_new(rg_mock.base, rg_mock_timer_handler, p);
    if (p->timer == NULL) {
        goto failed;
    }

    if (r->delay == rg_mock.conf.latency && rg_mock.latency_tv != NULL) {
        if (evtimer_add(p->timer, rg_mock.latency_tv) != 0) {
            goto failed;
        }

    } else {
        tv.tv_sec = r->delay / 1000;
        tv.tv_usec = (r->delay % 1000) * 1000;

        if (evtimer_add(p->timer, &tv) != 0) {
            goto failed;
        }
    }

    return;

failed:

    fprintf(stderr, "rg_mock: cannot delay a reply, out of memory\n");

    if (p != NULL) {
        evhttp_connection_set_closecb(p->evcon, NULL, NULL);
        rg_mock_pending_free(p);

    } else {
        rg_mock_stream_free(r->stream);
        rg_mock.stats.inflight--;
    }

    r->stream = NULL;

    evbuffer_drain(evhttp_request_get_output_buffer(req),
                   evbuffer_get_length(evhttp_request_get_output_buffer(req)));
    evhttp_remove_header(evhttp_request_get_output_headers(req),
                         "Content-Type");
    rg_mock_send_error(req, 500, "rg_mock: out of memory", "server_error");
}

