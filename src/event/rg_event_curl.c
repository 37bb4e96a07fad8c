/* rg_event_curl.c: drives libcurl's multi interface from the libevent loop.
 * Owns the CURLM handle, its timer and per-socket events. Knows nothing
 * about LLMs. The pattern is curl's docs/examples/hiperfifo.c: curl tells
 * us which sockets to watch and when to wake it; we tell curl what
 * happened with curl_multi_socket_action() and then drain finished
 * transfers. Handles are never added or removed inside a curl callback.
 *
 * Two promises on top of curl's:
 *   - the connections the process holds, busy and idle, stay within a
 *     budget derived from RLIMIT_NOFILE. curl keeps a connection cache at
 *     max(per_cache, connections in use) (CURLMOPT_MAXCONNECTS, applied to
 *     each cache, a share's too). A cache whose users are at most
 *     per_cache (a lane of the LLM client; its transfers are `bounded`)
 *     thus never holds more than per_cache; the others (the multi's own
 *     cache, an over-full lane) add at most one connection per transfer
 *     in curl. So at most max_running unbounded transfers run at once,
 *     the rest wait here, first come first served, and
 *     (caches + 1) * per_cache + max_running never passes the budget;
 *   - a multi handle that failed (curl_multi_socket_action() returned an
 *     error, after which it is unusable) fails every transfer it held with
 *     a reason and is replaced by a new one; waiting transfers go on. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_event_curl.h>
#include <sys/resource.h>


/* descriptors kept for everything but connections: files, pipes, the
 * event base, helpers; a quarter of the limit, from 32 to 1024 */
#define RG_CURL_RESERVE_MIN    32
#define RG_CURL_RESERVE_MAX    1024
#define RG_CURL_NOFILE_MAX     (1024 * 1024)
/* connections one cache keeps at most: one per session of a lane */
#define RG_CURL_PER_CACHE      16


typedef struct rg_curl_sock_s  rg_curl_sock_t;

struct rg_curl_sock_s {
    struct event        ev;
    rg_curl_t          *curl;
    curl_socket_t       fd;
    rg_curl_sock_t     *next;
    rg_curl_sock_t    **pprev;
    short               kind;         /* what ev waits for, when added */
    unsigned            added:1;
};


struct rg_curl_s {
    CURLM              *multi;        /* NULL: broken and not rebuilt */
    struct event_base  *base;
    struct event       *timer;
    rg_log_t           *log;
    int                 running;      /* curl's own count */

    rg_curl_xfer_t     *held;         /* in curl */
    rg_curl_xfer_t     *wait_head;    /* for a slot, in order */
    rg_curl_xfer_t    **wait_tail;
    rg_curl_xfer_t     *failed;       /* out of curl, done() due */
    rg_curl_sock_t     *socks;

    rg_curl_limits_t    limits;
    char                reason[256];

    unsigned            draining:1;
    unsigned            kick:1;       /* a handle was added while draining */
    unsigned            kick_posted:1;
    unsigned            test_break:1;
    struct event        kick_ev;
};


static CURLMcode rg_curl_drain(rg_curl_t *c);
static void rg_curl_broken(rg_curl_t *c, CURLMcode rc);
static void rg_curl_promote(rg_curl_t *c);


static void
rg_curl_link(rg_curl_xfer_t **head, rg_curl_xfer_t *x)
{
    x->next = *head;
    x->pprev = head;

    if (*head) {
        (*head)->pprev = &x->next;
    }

    *head = x;
}


static void
rg_curl_unlink(rg_curl_t *c, rg_curl_xfer_t *x)
{
    if (x->next) {
        x->next->pprev = x->pprev;

    } else if (x->waiting) {
        c->wait_tail = x->pprev;
    }

    *x->pprev = x->next;
    x->next = NULL;
    x->pprev = NULL;
}


static void
rg_curl_action(rg_curl_t *c, curl_socket_t fd, int mask)
{
    CURLMcode  rc;

    if (c->multi == NULL) {
        return;
    }

    if (c->test_break) {
        c->test_break = 0;
        rc = CURLM_INTERNAL_ERROR;

    } else {
        rc = curl_multi_socket_action(c->multi, fd, mask, &c->running);
    }

    if (rc == CURLM_OK) {
        rc = rg_curl_drain(c);
    }

    if (rc != CURLM_OK) {
        rg_curl_broken(c, rc);
    }
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


/* the transfers taken out of curl get their done(), from the loop */
static void
rg_curl_deliver(rg_curl_t *c)
{
    rg_curl_xfer_t  *x;

    /* a done() may remove others of the list: take one at a time */
    while ((x = c->failed) != NULL) {
        rg_curl_unlink(c, x);
        x->failed = 0;
        x->active = 0;
        x->reason = c->reason;
        x->done(x, CURLE_RECV_ERROR);
    }
}


static void
rg_curl_kick_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_curl_t  *c;

    c = arg;
    c->kick_posted = 0;

    rg_curl_deliver(c);
    rg_curl_action(c, CURL_SOCKET_TIMEOUT, 0);
}


static void
rg_curl_post_kick(rg_curl_t *c)
{
    if (c->draining) {
        c->kick = 1;                 /* the drain loop starts it */

    } else if (!c->kick_posted) {
        /* soon, but never inside the caller's own stack */
        c->kick_posted = 1;
        event_active(&c->kick_ev, EV_TIMEOUT, 1);
    }
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
                c->limits.event_changes++;
            }

            if (s->next) {
                s->next->pprev = s->pprev;
            }
            *s->pprev = s->next;

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

        s->next = c->socks;
        s->pprev = &c->socks;
        if (c->socks) {
            c->socks->pprev = &s->next;
        }
        c->socks = s;
    }

    kind = EV_PERSIST;
    if (what & CURL_POLL_IN) {
        kind |= EV_READ;
    }
    if (what & CURL_POLL_OUT) {
        kind |= EV_WRITE;
    }

    /* curl says again what it already waits for (at every transfer on a
     * kept connection): the event stays, no epoll_ctl */
    if (s->added) {
        if (s->kind == kind) {
            return 0;
        }

        event_del(&s->ev);
        s->added = 0;
        c->limits.event_changes++;
    }

    if (event_assign(&s->ev, c->base, fd, kind, rg_curl_event_handler, s)
        != 0
        || event_add(&s->ev, NULL) != 0)
    {
        return -1;
    }

    c->limits.event_changes++;
    s->kind = kind;
    s->added = 1;

    return 0;
}


static int
rg_curl_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    rg_curl_t  *c;

    c = userp;

    if (timeout_ms < 0) {
        evtimer_del(c->timer);
        return 0;
    }

    /* curl is never called from here: the loop runs the timer */

    return rg_timer_add(c->timer, timeout_ms) == 0 ? 0 : -1;
}


static CURLMcode
rg_curl_drain(rg_curl_t *c)
{
    CURL            *easy;
    CURLMsg         *msg;
    CURLcode         result;
    CURLMcode        rc;
    rg_curl_xfer_t  *x;
    int              left;

    c->draining = 1;
    rc = CURLM_OK;

    for ( ;; ) {
        msg = curl_multi_info_read(c->multi, &left);

        if (msg == NULL) {
            if (!c->kick) {
                break;
            }

            /* start what the callbacks added now, not after every other
             * event of this loop turn: the next request leaves at once */
            c->kick = 0;
            rc = curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0,
                                          &c->running);
            if (rc != CURLM_OK) {
                break;
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
            rg_curl_unlink(c, x);
            x->active = 0;

            if (x->bounded) {
                c->limits.bounded--;

            } else {
                /* the freed slot goes to the oldest waiting transfer */
                c->limits.running--;
                rg_curl_promote(c);
            }

            x->done(x, result);
        }
    }

    c->draining = 0;

    return rc;
}


static rg_int_t
rg_curl_multi_init(rg_curl_t *c)
{
    c->multi = curl_multi_init();
    if (c->multi == NULL) {
        return RG_ERROR;
    }

    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, rg_curl_socket_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, rg_curl_timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    /* curl applies it to every connection cache, a share's as well */
    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS,
                      (long) c->limits.per_cache);

    return RG_OK;
}


/* what the descriptor limit leaves for connections (see the top) */
static void
rg_curl_budget(rg_curl_t *c)
{
    rg_uint_t          nofile, reserve;
    struct rlimit      rl;
    rg_curl_limits_t  *l;

    l = &c->limits;
    nofile = RG_CURL_NOFILE_MAX;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
        && rl.rlim_cur < RG_CURL_NOFILE_MAX)
    {
        nofile = (rg_uint_t) rl.rlim_cur;
    }

    reserve = rg_min(rg_max(nofile / 4, RG_CURL_RESERVE_MIN),
                     RG_CURL_RESERVE_MAX);

    l->nofile = nofile;
    l->budget = nofile > reserve + 8 ? nofile - reserve : 8;
    l->per_cache = rg_min(rg_max(l->budget / 16, 1), RG_CURL_PER_CACHE);

    /* full caches may take two thirds; the rest is for the others */
    l->max_caches = rg_max(2 * l->budget / (3 * l->per_cache), 1);
}


/* the multi's own cache counts too: one more than the shares */
static void
rg_curl_max_running(rg_curl_t *c)
{
    rg_uint_t          idle;
    rg_curl_limits_t  *l;

    l = &c->limits;
    idle = (rg_max(l->caches, l->max_caches) + 1) * l->per_cache;

    l->max_running = l->budget > idle ? l->budget - idle : 1;
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
    c->wait_tail = &c->wait_head;

    rg_curl_budget(c);
    rg_curl_max_running(c);

    c->timer = evtimer_new(base, rg_curl_timer_handler, c);

    if (c->timer == NULL || rg_curl_multi_init(c) != RG_OK) {
        rg_curl_destroy(c);
        return NULL;
    }

    event_assign(&c->kick_ev, base, -1, 0, rg_curl_kick_handler, c);

    return c;
}


static void
rg_curl_free_socks(rg_curl_t *c)
{
    rg_curl_sock_t  *s;

    while ((s = c->socks) != NULL) {
        c->socks = s->next;

        if (s->added) {
            event_del(&s->ev);
        }

        free(s);
    }
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

    rg_curl_free_socks(c);

    if (c->timer) {
        event_free(c->timer);
    }

    if (c->kick_posted) {
        event_del(&c->kick_ev);
    }

    free(c);
}


/* The multi handle failed: it is unusable, so every transfer in it fails
 * with a reason and a new one takes its place. Waiting transfers stay. */
static void
rg_curl_broken(rg_curl_t *c, CURLMcode rc)
{
    CURLM           *old;
    rg_uint_t        n;
    rg_curl_xfer_t  *x;

    n = 0;
    old = c->multi;
    c->multi = NULL;

    while ((x = c->held) != NULL) {
        curl_multi_remove_handle(old, x->easy);
        rg_curl_unlink(c, x);
        x->failed = 1;
        rg_curl_link(&c->failed, x);
        n++;
    }

    evtimer_del(c->timer);
    curl_multi_cleanup(old);

    /* what the broken handle did not take back itself */
    rg_curl_free_socks(c);

    c->running = 0;
    c->limits.running = 0;
    c->limits.bounded = 0;
    c->limits.rebuilt++;

    snprintf(c->reason, sizeof(c->reason), "the HTTP client failed (%s) "
             "and was restarted", curl_multi_strerror(rc));

    if (rg_curl_multi_init(c) != RG_OK) {
        rg_log_error(RG_LOG_ALERT, c->log, 0, "curl_multi_socket_action() "
                     "failed: %s; %lu transfers failed, and no new multi "
                     "handle could be made", curl_multi_strerror(rc),
                     (unsigned long) n);

    } else {
        rg_log_error(RG_LOG_ALERT, c->log, 0, "curl_multi_socket_action() "
                     "failed: %s; %lu transfers failed, a new multi handle "
                     "takes their place", curl_multi_strerror(rc),
                     (unsigned long) n);
    }

    rg_curl_deliver(c);
    rg_curl_promote(c);
}


static rg_int_t
rg_curl_start(rg_curl_t *c, rg_curl_xfer_t *x)
{
    CURLMcode  rc;

    rc = curl_multi_add_handle(c->multi, x->easy);
    if (rc != CURLM_OK) {
        rg_log_error(RG_LOG_ALERT, c->log, 0,
                     "curl_multi_add_handle() failed: %s",
                     curl_multi_strerror(rc));
        return RG_ERROR;
    }

    rg_curl_link(&c->held, x);

    if (x->bounded) {
        c->limits.bounded++;

    } else {
        c->limits.running++;
        if (c->limits.running > c->limits.peak_running) {
            c->limits.peak_running = c->limits.running;
        }
    }

    rg_curl_post_kick(c);

    if (x->start) {
        x->start(x);
    }

    return RG_OK;
}


/* as many waiting transfers as the budget allows go to curl */
static void
rg_curl_promote(rg_curl_t *c)
{
    rg_curl_xfer_t  *x;

    while (c->wait_head != NULL && c->multi != NULL
           && c->limits.running < c->limits.max_running)
    {
        x = c->wait_head;
        rg_curl_unlink(c, x);
        x->waiting = 0;
        c->limits.waiting--;

        if (rg_curl_start(c, x) != RG_OK) {
            snprintf(c->reason, sizeof(c->reason),
                     "the HTTP client could not take the transfer");
            x->failed = 1;
            rg_curl_link(&c->failed, x);
            rg_curl_post_kick(c);
        }
    }
}


rg_int_t
rg_curl_add(rg_curl_t *c, rg_curl_xfer_t *x)
{
    if (c->multi == NULL && rg_curl_multi_init(c) != RG_OK) {
        return RG_ERROR;
    }

    curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);

    x->reason = NULL;
    x->failed = 0;

    if (!x->bounded
        && (c->wait_head != NULL
            || c->limits.running >= c->limits.max_running))
    {
        /* past the budget: wait for a slot, in order */
        x->waiting = 1;
        x->next = NULL;
        x->pprev = c->wait_tail;
        *c->wait_tail = x;
        c->wait_tail = &x->next;

        x->active = 1;
        c->limits.waiting++;
        c->limits.waited++;

        return RG_OK;
    }

    x->waiting = 0;
    x->active = 1;

    if (rg_curl_start(c, x) != RG_OK) {
        x->active = 0;
        return RG_ERROR;
    }

    return RG_OK;
}


void
rg_curl_remove(rg_curl_t *c, rg_curl_xfer_t *x)
{
    if (!x->active) {
        return;
    }

    if (x->waiting) {
        rg_curl_unlink(c, x);
        x->waiting = 0;
        c->limits.waiting--;

    } else if (x->failed) {
        rg_curl_unlink(c, x);
        x->failed = 0;

    } else {
        curl_multi_remove_handle(c->multi, x->easy);
        rg_curl_unlink(c, x);

        if (x->bounded) {
            c->limits.bounded--;

        } else {
            c->limits.running--;
            rg_curl_promote(c);
        }
    }

    x->active = 0;
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


rg_int_t
rg_curl_cache_add(rg_curl_t *c, rg_uint_t force)
{
    if (c->limits.caches >= c->limits.max_caches && !force) {
        return RG_DECLINED;
    }

    c->limits.caches++;
    rg_curl_max_running(c);

    return RG_OK;
}


const rg_curl_limits_t *
rg_curl_limits(rg_curl_t *c)
{
    return &c->limits;
}


void
rg_curl_test_break(rg_curl_t *c)
{
    c->test_break = 1;
    event_active(c->timer, EV_TIMEOUT, 1);
}
