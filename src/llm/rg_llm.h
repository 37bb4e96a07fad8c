/* rg_llm.h: the LLM client. One upstream per `llm` block: its curl share
 * groups, its concurrency cap and wait queue, its retry policy. A request
 * is embedded in whoever makes it (a session); its body stays owned by the
 * caller until the handler runs. */

#ifndef RG_LLM_H
#define RG_LLM_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_event_curl.h>
#include <rg_llm_openai.h>
#include <rg_llm_sse.h>

typedef struct rg_llm_upstream_s  rg_llm_upstream_t;
typedef struct rg_llm_req_s       rg_llm_req_t;

typedef void (*rg_llm_handler_pt)(rg_llm_req_t *r, rg_llm_response_t *resp);

/* a response recorded in a transcript, for `reagent replay` */
typedef struct {
    long                status;       /* 0: the call failed in transport */
    char               *body;         /* or the error text */
    size_t              len;
} rg_llm_recorded_t;


typedef struct {
    uint64_t            requests;     /* attempts sent */
    uint64_t            calls;        /* logical calls completed */
    uint64_t            retries;
    uint64_t            failures;
    uint64_t            queued;       /* waited for a slot or the rate */
    rg_uint_t           active;
    rg_uint_t           max_active;
} rg_llm_stats_t;


struct rg_llm_req_s {
    rg_curl_xfer_t      xfer;         /* first */
    rg_llm_upstream_t  *up;
    rg_llm_req_t       *next;         /* in the wait queue */

    const char         *body;
    size_t              body_len;
    rg_pool_t          *pool;         /* where the response is parsed */
    const char         *id_prefix;    /* for generated tool_call ids */

    rg_llm_handler_pt   handler;
    void               *data;
    rg_log_t           *log;

    rg_buf_t            resp;         /* the body as it came */
    rg_llm_sse_t       *sse;          /* read as it comes, when streaming */
    long                http_status;
    rg_msec_t           retry_after;
    rg_msec_t           started;      /* the first attempt */
    rg_msec_t           attempt_started;
    rg_uint_t           attempt;
    rg_int_t            lane;

    struct event        backoff;
    struct curl_slist   rid;          /* X-Request-ID, chained to shared */
    char                rid_header[96];
    char                errbuf[256];  /* CURL_ERROR_SIZE */

    size_t              estimate;     /* tokens, for tokens_per_minute */
    unsigned            budget_spent:1; /* gave up: retry_budget */
    unsigned            queued:1;
    unsigned            waiting:1;    /* in backoff */
    unsigned            busy:1;       /* between send and handler */
};


struct rg_llm_upstream_s {
    rg_llm_conf_t      *conf;
    rg_curl_t          *curl;
    struct event_base  *base;
    rg_log_t           *log;

    struct curl_slist  *headers;      /* shared by every request */

    rg_llm_req_t       *queue_head;
    rg_llm_req_t      **queue_tail;

    void              **shares;       /* CURLSH *, one per lane */
    rg_uint_t          *lane_users;
    rg_uint_t           nlanes;

    /* requests_per_minute and tokens_per_minute: token buckets */
    double              rpm_left;
    double              tpm_left;
    rg_msec_t           rate_at;      /* when they were last refilled */
    struct event        rate_timer;
    unsigned            rate_timer_set:1;

    rg_llm_recorded_t  *replay;       /* answers come from here */
    rg_uint_t           nreplay;
    rg_uint_t           replayed;

    rg_llm_stats_t      stats;
};


rg_llm_upstream_t *rg_llm_upstream_create(rg_llm_conf_t *conf,
    rg_curl_t *curl, struct event_base *base, rg_log_t *log);
void rg_llm_upstream_destroy(rg_llm_upstream_t *up);

/* a group of sessions shares one connection cache (see STYLE.md) */
rg_int_t rg_llm_lane_acquire(rg_llm_upstream_t *up);
void rg_llm_lane_release(rg_llm_upstream_t *up, rg_int_t lane);

void rg_llm_req_init(rg_llm_req_t *r, rg_llm_upstream_t *up, rg_int_t lane,
    rg_llm_handler_pt handler, void *data, rg_log_t *log);
rg_int_t rg_llm_send(rg_llm_req_t *r, const char *body, size_t len,
    const char *request_id, rg_pool_t *pool, const char *id_prefix);
void rg_llm_cancel(rg_llm_req_t *r);
void rg_llm_req_free(rg_llm_req_t *r);
/* answer every request from recorded responses instead of the network */
void rg_llm_upstream_replay(rg_llm_upstream_t *up, rg_llm_recorded_t *recs,
    rg_uint_t n);

#endif /* RG_LLM_H */
