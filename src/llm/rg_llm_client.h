/* rg_llm_client.h: the LLM client, the llm part's runtime in an engine. One
 * upstream per `llm` block: its curl share groups, its concurrency cap
 * and wait queue, its retry policy, and each request's connect, total and
 * idle timers. A request is embedded in whoever makes it (a session); its
 * body stays owned by the caller until the handler runs. The bytes of the
 * responses being read are counted against one budget for the engine
 * (response_memory). */

#ifndef RG_LLM_CLIENT_H
#define RG_LLM_CLIENT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_llm.h>
#include <rg_llm_hints.h>
#include <rg_llm_conf.h>
#include <rg_event_curl.h>
#include <rg_metrics.h>

#define RG_LLM_MAX_RESPONSE     (16 * 1024 * 1024)

typedef struct rg_llm_upstream_s  rg_llm_upstream_t;
typedef struct rg_llm_req_s       rg_llm_req_t;

typedef void (*rg_llm_handler_pt)(rg_llm_req_t *r, rg_llm_response_t *resp);

/* the response headers that carry a provider's own request id */
#define RG_LLM_PROVIDER_IDS  3
#define RG_LLM_PROVIDER_ID_LEN  95    /* bytes of one kept, at most */
extern const char  *rg_llm_provider_id_headers[RG_LLM_PROVIDER_IDS];

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


/* the responses being read, in the engine */
typedef struct {
    size_t              limit;        /* response_memory */
    size_t              used;         /* bytes held by running attempts */
    size_t              peak;
    uint64_t            stopped;      /* attempts stopped to stay under */
} rg_llm_memory_t;


struct rg_llm_req_s {
    rg_curl_xfer_t      xfer;         /* first */
    rg_llm_upstream_t  *up;
    rg_llm_req_t       *next;         /* in the wait queue */
    rg_llm_req_t      **pprev;

    const char         *body;
    size_t              body_len;
    rg_pool_t          *pool;         /* where the response is parsed */
    const char         *id_prefix;    /* for generated tool_call ids */

    rg_llm_handler_pt   handler;
    void               *data;
    rg_log_t           *log;

    rg_buf_t            resp;         /* the body as it came */
    rg_llm_stream_t    *stream;       /* read as it comes, when streaming */
    long                http_status;
    rg_llm_hints_t      hints;        /* what the headers said of waits */

    /* the answer's text as it streams in, given data; NULL: not wanted */
    rg_llm_delta_pt     delta;
    rg_msec_t           started;      /* the first attempt */
    uint64_t            started_us;   /* the same, for the metrics */
    rg_msec_t           attempt_started;
    rg_uint_t           attempt;
    rg_int_t            lane;
    rg_uint_t           max_calls;    /* tool calls per answer, 0: most */

    /* this attempt's clocks: connect, total, idle (no byte for so long);
     * between attempts (waiting) the backoff, or a recorded answer */
    struct event        timer;
    rg_msec_t           due;          /* the whole attempt */
    rg_msec_t           connect_due;
    rg_msec_t           last_byte;
    rg_msec_t           armed;        /* when the timer fires */

    /* bytes of this attempt, and the part counted in rg_llm_memory_t */
    size_t              got;
    size_t              held;
    rg_llm_req_t       *mem_next;
    rg_llm_req_t      **mem_pprev;

    struct curl_slist   rid;          /* X-Request-ID, chained to shared */
    char                rid_header[96];
    struct curl_slist   tp;           /* traceparent, after it; "": none */
    char                tp_header[72];
    char                errbuf[256];  /* CURL_ERROR_SIZE */

    /* the answer to this call, recorded (reagent replay): it is given
     * instead of asking the network; set by the caller before each send */
    rg_llm_recorded_t  *recorded;

    /* the provider's own id of the last response, from its x-request-id,
     * request-id or cf-ray header, in the response's pool (NULL where
     * absent) */
    char               *provider_id[RG_LLM_PROVIDER_IDS];

    uint64_t            qseq;         /* its place in the wait queue */
    size_t              estimate;     /* tokens, for tokens_per_minute */
    size_t              shared_taken; /* of them, from the shared bucket */
    uint64_t            shared_slot;  /* its max_connections shared slot */
    unsigned            budget_spent:1; /* gave up: retry_budget */
    unsigned            queued:1;
    unsigned            waiting:1;    /* in backoff */
    unsigned            busy:1;       /* between send and handler */
    unsigned            keep_body:1;  /* a stream's raw body too (replay) */
    unsigned            timer_set:1;
    unsigned            connected:1;
    unsigned            idle_on:1;    /* the idle clock runs */
    unsigned            too_large:1;  /* over RG_LLM_MAX_RESPONSE */
    unsigned            over_memory:1;  /* stopped for response_memory */
    unsigned            nomem:1;
};


/* the llm part in an engine */
typedef struct {
    rg_llm_upstream_t **upstreams;    /* by the llm block's index */
    rg_uint_t           n;
    rg_llm_memory_t     mem;
    rg_llm_req_t       *holders;      /* requests with held > 0 */
} rg_llm_ctx_t;


struct rg_llm_upstream_s {
    rg_llm_ctx_t       *ctx;
    rg_llm_conf_t      *conf;
    rg_curl_t          *curl;
    struct event_base  *base;
    rg_log_t           *log;

    struct curl_slist  *headers;      /* shared by every request */
    char               *url;          /* NULL: the conf's; see redirect */

    rg_llm_req_t       *queue_head;
    rg_llm_req_t      **queue_tail;
    uint64_t            qseq;         /* the last request queued */

    CURLSH            **shares;       /* one per lane */
    rg_uint_t          *lane_users;
    rg_uint_t           nlanes;

    /* requests_per_minute and tokens_per_minute: token buckets */
    double              rpm_left;
    double              tpm_left;
    rg_msec_t           rate_at;      /* when they were last refilled */
    struct event        rate_timer;
    unsigned            rate_timer_set:1;

    struct rg_llm_shared_s *shared;   /* the cool-down and the limits
                                         held with other processes,
                                         NULL: none */

    rg_llm_stats_t      stats;
    rg_uint_t           metrics;      /* its name's in the metrics */
};


#define rg_llm_ctx(e)                                                        \
    ((rg_llm_ctx_t *) rg_engine_ctx(e, &rg_llm_part))

/* the engine's upstream of an llm block */
#define rg_llm_upstream(e, llm)  (rg_llm_ctx(e)->upstreams[(llm)->index])

/* retries of every upstream of the engine (the part's worker hooks, an
 * upstream per llm block, are declared in rg_llm_conf.h for its table) */
uint64_t rg_llm_retries(rg_engine_t *e);

rg_llm_upstream_t *rg_llm_upstream_create(rg_llm_ctx_t *ctx,
    rg_llm_conf_t *conf, rg_curl_t *curl, struct event_base *base,
    rg_log_t *log);
void rg_llm_upstream_destroy(rg_llm_upstream_t *up);
/* a slot or a rate allows it: the oldest waiting requests start */
void rg_llm_next(rg_llm_upstream_t *up);

/* Every upstream of the engine sends to base_url (…/v1) from now on,
 * without its key: `run --mock` points them at the bundled mock model.
 * Before the first request; RG_ERROR when memory ran out. */
rg_int_t rg_llm_redirect(rg_engine_t *e, const char *base_url);

/* a group of sessions shares one connection cache (see STYLE.md) */
rg_int_t rg_llm_lane_acquire(rg_llm_upstream_t *up);
void rg_llm_lane_release(rg_llm_upstream_t *up, rg_int_t lane);

void rg_llm_req_init(rg_llm_req_t *r, rg_llm_upstream_t *up, rg_int_t lane,
    rg_llm_handler_pt handler, void *data, rg_log_t *log);
rg_int_t rg_llm_send(rg_llm_req_t *r, const char *body, size_t len,
    const char *request_id, rg_pool_t *pool, const char *id_prefix);
void rg_llm_cancel(rg_llm_req_t *r);
/* the W3C traceparent the next sends carry (NULL: none) */
void rg_llm_traceparent(rg_llm_req_t *r, const char *value);
void rg_llm_req_free(rg_llm_req_t *r);

/* The budget of response bytes for the engine (0: the default,
 * RG_LLM_MEMORY_DEFAULT); peak and stopped start again. When a byte would
 * pass it, the attempt holding the most is stopped (a retryable bad
 * response); see README. */
void rg_llm_memory_limit(rg_llm_ctx_t *ctx, size_t limit);
const rg_llm_memory_t *rg_llm_memory(rg_llm_ctx_t *ctx);

#endif /* RG_LLM_CLIENT_H */
