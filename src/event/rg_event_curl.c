/* rg_event_curl.c: drives libcurl's multi interface from the libevent loop.
 * Owns the CURLM handle, its timer and per-socket events. Knows nothing
 * about LLMs. The pattern is curl's docs/examples/hiperfifo.c: curl tells
 * us which sockets to watch and when to wake it; we tell curl what
 * happened with curl_multi_socket_action() and then drain finished
 * transfers. Handles are never added or removed inside a curl callback. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_event_curl.h>


typedef struct {
    struct event        ev;
    rg_curl_t          *curl;
    curl_socket_t       fd;
    unsigned            added:1;
} rg_curl_sock_t;


struct rg_curl_s {
    CURLM              *multi;
    struct event_base  *base;
    struct event       *timer;
    rg_log_t           *log;
    int                 running;
    unsigned            broken:1;
    unsigned            draining:1;
    unsigned            kick:1;     /* a handle was added while draining */
    unsigned            kick_posted:1;
    struct event        kick_ev;
};


static void rg_curl_drain(rg_curl_t *c);


static void
rg_curl_action(rg_curl_t *c, curl_socket_t fd, int mask)
{
    CURLMcode  rc;

    if (c->broken) {
        return;
    }

    rc = curl_multi_socket_action(c->multi, fd, mask, &c->running);

    if (rc != CURLM_OK) {
        /* the multi handle is unusable after this: fail what it holds */
        rg_log_error(RG_LOG_ALERT, c->log, 0,
                     "curl_multi_socket_action() failed: %s",
                     curl_multi_strerror(rc));
        c->broken = 1;
    }

    rg_curl_drain(c);
}


static void
rg_curl_event_handler(evutil_socket_t fd, short what, void *arg)
{
    int              mask;
    rg_curl_sock_t  *s;

    s = arg;
    mask = 0;

    if (what & EV_READ) {
        mask |= CURL_CSELECT_IN;
    }

    if (what & EV_WRITE) {
        mask |= CURL_CSELECT_OUT;
    }

    rg_curl_action(s->curl, fd, mask);
}


static void
rg_curl_timer_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_curl_action(arg, CURL_SOCKET_TIMEOUT, 0);
}


static void
rg_curl_kick_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_curl_t  *c;

    c = arg;
    c->kick_posted = 0;

    rg_curl_action(c, CURL_SOCKET_TIMEOUT, 0);
}


static int
rg_curl_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp,
    void *socketp)
{
    short            kind;
    rg_curl_t       *c;
    rg_curl_sock_t  *s;

    c = userp;
    s = socketp;

    if (what == CURL_POLL_REMOVE) {
        if (s) {
            if (s->added) {
                event_del(&s->ev);
            }
            free(s);
        }
        return 0;
    }

    if (s == NULL) {
        s = calloc(1, sizeof(rg_curl_sock_t));
        if (s == NULL) {
            return -1;
        }

        s->curl = c;
        s->fd = fd;

        if (curl_multi_assign(c->multi, fd, s) != CURLM_OK) {
            free(s);
            return -1;
        }
    }

    if (s->added) {
        event_del(&s->ev);
        s->added = 0;
    }

    kind = EV_PERSIST;
    if (what & CURL_POLL_IN) {
        kind |= EV_READ;
    }
    if (what & CURL_POLL_OUT) {
        kind |= EV_WRITE;
    }

    if (event_assign(&s->ev, c->base, fd, kind, rg_curl_event_handler, s)
        != 0
        || event_add(&s->ev, NULL) != 0)
    {
        return -1;
    }

    s->added = 1;

    return 0;
}


static int
rg_curl_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    rg_curl_t       *c;
    struct timeval   tv;

    c = userp;

    if (timeout_ms < 0) {
        evtimer_del(c->timer);
        return 0;
    }

    /* curl is never called from here: the loop runs the timer */
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;

    return evtimer_add(c->timer, &tv) == 0 ? 0 : -1;
}


static void
rg_curl_drain(rg_curl_t *c)
{
    CURL            *easy;
    CURLMsg         *msg;
    CURLcode         result;
    rg_curl_xfer_t  *x;
    int              left;

    c->draining = 1;

    for ( ;; ) {
        msg = curl_multi_info_read(c->multi, &left);

        if (msg == NULL) {
            if (!c->kick || c->broken) {
                break;
            }

            /* start what the callbacks added now, not after every other
             * event of this loop turn: the next request leaves at once */
            c->kick = 0;
            if (curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0,
                                         &c->running) != CURLM_OK)
            {
                c->broken = 1;
            }
            continue;
        }

        if (msg->msg != CURLMSG_DONE) {
            continue;
        }

        /* the message is gone once the handle is removed: copy first */
        easy = msg->easy_handle;
        result = msg->data.result;
        x = NULL;

        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **) &x);
        curl_multi_remove_handle(c->multi, easy);

        if (x) {
            x->active = 0;
            x->done(x, result);
        }
    }

    c->draining = 0;
}


rg_curl_t *
rg_curl_create(struct event_base *base, rg_log_t *log)
{
    rg_curl_t  *c;

    c = calloc(1, sizeof(rg_curl_t));
    if (c == NULL) {
        return NULL;
    }

    c->base = base;
    c->log = log;

    c->multi = curl_multi_init();
    c->timer = evtimer_new(base, rg_curl_timer_handler, c);

    if (c->multi == NULL || c->timer == NULL) {
        rg_curl_destroy(c);
        return NULL;
    }

    event_assign(&c->kick_ev, base, -1, 0, rg_curl_kick_handler, c);

    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, rg_curl_socket_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, rg_curl_timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);

    return c;
}


void
rg_curl_destroy(rg_curl_t *c)
{
    if (c == NULL) {
        return;
    }

    /* before the event base goes: cleanup still calls the socket cb */
    if (c->multi) {
        curl_multi_cleanup(c->multi);
    }

    if (c->timer) {
        event_free(c->timer);
    }

    if (c->kick_posted) {
        event_del(&c->kick_ev);
    }

    free(c);
}


rg_int_t
rg_curl_add(rg_curl_t *c, rg_curl_xfer_t *x)
{
    CURLMcode  rc;

    if (c->broken) {
        return RG_ERROR;
    }

    curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);

    rc = curl_multi_add_handle(c->multi, x->easy);
    if (rc != CURLM_OK) {
        rg_log_error(RG_LOG_ALERT, c->log, 0,
                     "curl_multi_add_handle() failed: %s",
                     curl_multi_strerror(rc));
        return RG_ERROR;
    }

    x->active = 1;

    if (c->draining) {
        c->kick = 1;                 /* the drain loop starts it */

    } else if (!c->kick_posted) {
        /* soon, but never inside the caller's own stack */
        c->kick_posted = 1;
        event_active(&c->kick_ev, EV_TIMEOUT, 1);
    }

    return RG_OK;
}


void
rg_curl_remove(rg_curl_t *c, rg_curl_xfer_t *x)
{
    if (x->active) {
        curl_multi_remove_handle(c->multi, x->easy);
        x->active = 0;
    }
}


rg_uint_t
rg_curl_running(rg_curl_t *c)
{
    return c->running > 0 ? (rg_uint_t) c->running : 0;
}


CURLM *
rg_curl_multi(rg_curl_t *c)
{
    return c->multi;
}
