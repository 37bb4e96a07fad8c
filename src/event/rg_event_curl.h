/* rg_event_curl.h: drives libcurl's multi interface from the libevent loop
 * (socket and timer callbacks, no polling). Owns the CURLM handle, its
 * timer and per-socket events. Knows nothing about LLMs. */

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

/* embedded in whatever owns a transfer */
struct rg_curl_xfer_s {
    CURL               *easy;
    rg_curl_done_pt     done;     /* called from the loop, never from curl */
    void               *data;
    unsigned            active:1;
};

rg_curl_t *rg_curl_create(struct event_base *base, rg_log_t *log);
void rg_curl_destroy(rg_curl_t *c);
rg_int_t rg_curl_add(rg_curl_t *c, rg_curl_xfer_t *x);
void rg_curl_remove(rg_curl_t *c, rg_curl_xfer_t *x);
rg_uint_t rg_curl_running(rg_curl_t *c);
CURLM *rg_curl_multi(rg_curl_t *c);

#endif /* RG_EVENT_CURL_H */
