/* rg_llm_client_int.h: what the pieces of the llm client share
 * (rg_llm_client.c: a request's life; rg_llm_upstream.c: upstreams,
 * lanes, queues, limits, the byte budget; rg_llm_transfer.c: an
 * attempt's transfer); not for callers, who use rg_llm_client.h. */

#ifndef RG_LLM_CLIENT_INT_H
#define RG_LLM_CLIENT_INT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_client.h>


/* rg_llm_client.c: requests */
void rg_llm_next(rg_llm_upstream_t *up);
void rg_llm_backoff_end(rg_llm_req_t *r);
void rg_llm_replay(rg_llm_req_t *r);
void rg_llm_complete(rg_llm_req_t *r, CURLcode code, long status);

/* rg_llm_upstream.c: upstreams and the engine's budget */
void rg_llm_enqueue(rg_llm_req_t *r);
void rg_llm_dequeue(rg_llm_req_t *r);
void rg_llm_mem_take(rg_llm_req_t *r, size_t n);
void rg_llm_mem_release(rg_llm_req_t *r);
rg_int_t rg_llm_mem_room(rg_llm_req_t *r, size_t n);
double rg_llm_rpm(rg_llm_upstream_t *up);
double rg_llm_tpm(rg_llm_upstream_t *up);
rg_uint_t rg_llm_rate_ok(rg_llm_upstream_t *up);
void rg_llm_rate_wait(rg_llm_upstream_t *up);
rg_uint_t rg_llm_lane_size(rg_llm_upstream_t *up);

/* rg_llm_transfer.c: an attempt on the wire */
rg_int_t rg_llm_easy(rg_llm_req_t *r);
void rg_llm_started(rg_curl_xfer_t *x);
void rg_llm_timer_stop(rg_llm_req_t *r);
void rg_llm_timer_handler(evutil_socket_t fd, short what, void *arg);
void rg_llm_transport_error(rg_llm_req_t *r, CURLcode rc,
    rg_llm_response_t *resp);


#endif /* RG_LLM_CLIENT_INT_H */
