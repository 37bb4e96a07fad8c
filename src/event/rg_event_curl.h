/* rg_event_curl.h: drives libcurl's multi interface from the libevent loop
 * (socket and timer callbacks, no polling). Owns the CURLM handle, its
 * timer and per-socket events, and the process's budget of connections:
 * transfers beyond it wait here, in order, until a slot frees. Knows
 * nothing about LLMs. */

#ifndef RG_EVENT_CURL_H
#define RG_EVENT_CURL_H

#include <rg_config.h>
#include <rg_core.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <curl/curl.h>

typedef struct rg_curl_s       rg_curl_t;
typedef struct rg_curl_xfer_s  rg_curl_xfer_t;

typedef void (*rg_curl_done_pt)(rg_curl_xfer_t *x, CURLcode rc);
typedef void (*rg_curl_start_pt)(rg_curl_xfer_t *x);

/* embedded in whatever owns a transfer; zeroed before first use */
struct rg_curl_xfer_s {
    CURL               *easy;
    rg_curl_done_pt     done;     /* called from the loop, never from curl */
    rg_curl_start_pt    start;    /* NULL, or told when curl takes it */
    void               *data;
    const char         *reason;   /* set when the driver failed it: why */

    rg_curl_xfer_t     *next;     /* the driver's: waiting or running */
    rg_curl_xfer_t    **pprev;

    unsigned            active:1; /* the driver holds it: remove it */
    unsigned            waiting:1;  /* for a connection slot */
    unsigned            failed:1;   /* out of curl, its done() is due */
    unsigned            bounded:1;  /* set by the owner: its share serves
                                       at most per_cache users, so its
                                       connection is counted there */
};


/* how the file descriptor limit is shared out (rg_curl_limits()) */
typedef struct {
    rg_uint_t           nofile;       /* RLIMIT_NOFILE when created */
    rg_uint_t           budget;       /* connections, busy and idle */
    rg_uint_t           per_cache;    /* idle ones a cache may keep */
    rg_uint_t           max_caches;   /* connection caches to make */
    rg_uint_t           caches;       /* made so far */
    rg_uint_t           max_running;  /* other transfers in curl at once */
    rg_uint_t           running;      /* those, in curl */
    rg_uint_t           bounded;      /* bounded ones in curl */
    rg_uint_t           waiting;
    rg_uint_t           peak_running;
    uint64_t            waited;       /* transfers that had to wait */
    uint64_t            rebuilt;      /* broken multi handles replaced */
    uint64_t            event_changes;  /* sockets' events added or
                                           deleted: each an epoll_ctl */
} rg_curl_limits_t;


rg_curl_t *rg_curl_create(struct event_base *base, rg_log_t *log);
void rg_curl_destroy(rg_curl_t *c);

/* Hands a transfer to curl, or queues it when the connection budget is
 * spent; either way x->done is called once, from the loop. A bounded
 * transfer never waits: its share's own cap bounds its connection. */
rg_int_t rg_curl_add(rg_curl_t *c, rg_curl_xfer_t *x);
/* takes back a transfer that has not finished (waiting or in curl) */
void rg_curl_remove(rg_curl_t *c, rg_curl_xfer_t *x);
rg_uint_t rg_curl_running(rg_curl_t *c);
CURLM *rg_curl_multi(rg_curl_t *c);

/* One more connection cache (a CURLSH sharing connections) counts
 * against the budget: RG_OK when it may be made, RG_DECLINED when the
 * caller should share an existing one. `force` makes it anyway (the
 * first one of a user). */
rg_int_t rg_curl_cache_add(rg_curl_t *c, rg_uint_t force);
const rg_curl_limits_t *rg_curl_limits(rg_curl_t *c);

/* For tests: the next curl_multi_socket_action() counts as failed, as
 * when curl's state is broken; the loop notices on its next turn. */
void rg_curl_test_break(rg_curl_t *c);

#endif /* RG_EVENT_CURL_H */
