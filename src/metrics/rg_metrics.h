/* rg_metrics.h: the metrics part (rg_metrics.c, rg_metrics_render.c):
 * the counters behind GET /metrics. As nginx's stub_status, they live in
 * a shared memory zone made with the configuration (before serve forks
 * its workers): one slot per worker, each written by its worker alone
 * (relaxed atomic stores, one writer), summed by whoever renders. Labels
 * known only at run time (upstreams, tools, routes) are names in tables
 * of the zone that every worker appends to; a full table counts the rest
 * under "other". The counting functions below cost a load and a store
 * and do nothing where there are no metrics (before the part started, in
 * a process that has no engine). A reload makes a new cycle and so a new
 * zone: the counters start again from zero. */

#ifndef RG_METRICS_H
#define RG_METRICS_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <stdatomic.h>

#define RG_METRICS_NAME_LEN    64      /* a label value, NUL included */
#define RG_METRICS_UPSTREAMS   32      /* names per table, "other" too */
#define RG_METRICS_TOOLS       128
#define RG_METRICS_ROUTES      32
#define RG_METRICS_SHARDS      64      /* queue shards shown */
#define RG_METRICS_BUCKETS     16      /* bounds of a histogram, +Inf too */

/* the label values of the sessions' states and of the model calls'
 * outcomes, in the order of rg_session_state_e and rg_llm_status_e
 * (their files check the counts; test_metrics the names) */
#define RG_METRICS_STATES      13
#define RG_METRICS_FINAL       4       /* "done": the final states follow */
#define RG_METRICS_OUTCOMES    10
extern const char  *rg_metrics_states[RG_METRICS_STATES];
extern const char  *rg_metrics_outcomes[RG_METRICS_OUTCOMES];

typedef enum {
    RG_METRICS_UPSTREAM = 0,
    RG_METRICS_TOOL,
    RG_METRICS_ROUTE,
    RG_METRICS_NTABLES
} rg_metrics_table_e;

typedef enum {
    RG_METRICS_TOOL_OK = 0,
    RG_METRICS_TOOL_ERROR,
    RG_METRICS_TOOL_TIMEOUT,
    RG_METRICS_TOOL_DENIED,
    RG_METRICS_TOOL_OUTCOMES
} rg_metrics_tool_e;

typedef enum {
    RG_METRICS_TASK_DONE = 0,
    RG_METRICS_TASK_LOST,
    RG_METRICS_TASK_RECLAIMED,
    RG_METRICS_TASK_DEAD,
    RG_METRICS_TASK_REQUEUED,          /* written back after the store
                                          lost it, and queued again */
    RG_METRICS_TASK_FORGOTTEN,         /* the store lost it: named lost */
    RG_METRICS_TASK_OUTCOMES
} rg_metrics_task_e;

typedef enum {
    RG_METRICS_REDIS_REPLY = 0,        /* an error reply */
    RG_METRICS_REDIS_TIMEOUT,
    RG_METRICS_REDIS_CONNECTION,       /* the connection was lost */
    RG_METRICS_REDIS_REJECTED,         /* queue full, shutting down */
    RG_METRICS_REDIS_KINDS
} rg_metrics_redis_e;

typedef enum {
    RG_METRICS_H_MODEL = 0,
    RG_METRICS_H_TOOL,
    RG_METRICS_H_REDIS,
    RG_METRICS_H_HTTP,
    RG_METRICS_NHISTS
} rg_metrics_hist_e;

#define RG_METRICS_METHODS     8       /* GET POST … other */
#define RG_METRICS_CODES       21      /* the usual codes, then 1xx…5xx */


typedef _Atomic uint64_t  rg_metrics_u64_t;

/* counts per bucket (not cumulative: the render adds them up), the last
 * is +Inf; the sum in microseconds */
typedef struct {
    rg_metrics_u64_t    bucket[RG_METRICS_BUCKETS];
    rg_metrics_u64_t    sum_us;
} rg_metrics_hist_t;


/* one worker's counters; gauges are counters that also go down */
typedef struct {
    _Atomic int64_t     pid;               /* its worker, 0: none yet */

    rg_metrics_u64_t    sessions[RG_METRICS_STATES];       /* gauge */
    rg_metrics_u64_t    finished[RG_METRICS_STATES];

    rg_metrics_u64_t    model_calls[RG_METRICS_UPSTREAMS]
                                   [RG_METRICS_OUTCOMES];
    rg_metrics_hist_t   model_seconds[RG_METRICS_UPSTREAMS];
    rg_metrics_u64_t    model_tokens[RG_METRICS_UPSTREAMS][2];
    rg_metrics_u64_t    model_cache[RG_METRICS_UPSTREAMS][2]; /* read,
                                                                 written */
    rg_metrics_u64_t    model_cost[RG_METRICS_UPSTREAMS];    /* micro-$ */
    rg_metrics_u64_t    model_retries[RG_METRICS_UPSTREAMS];

    rg_metrics_u64_t    tool_calls[RG_METRICS_TOOLS]
                                  [RG_METRICS_TOOL_OUTCOMES];
    rg_metrics_hist_t   tool_seconds[RG_METRICS_TOOLS];

    rg_metrics_u64_t    dedupe_hits;
    rg_metrics_u64_t    tasks[RG_METRICS_TASK_OUTCOMES];
    rg_metrics_u64_t    store_losses;      /* the store lost its memory */

    /* the queue as this worker last read it: the render shows the
     * freshest slot's */
    rg_metrics_u64_t    queue_at;          /* wall ms, 0: never */
    rg_metrics_u64_t    queue_shards;
    rg_metrics_u64_t    queue_depth[RG_METRICS_SHARDS];
    rg_metrics_u64_t    queue_pending[RG_METRICS_SHARDS];
    rg_metrics_u64_t    queue_dead[RG_METRICS_SHARDS];
    rg_metrics_u64_t    queue_parked;      /* its list of parked tasks */

    rg_metrics_hist_t   redis_seconds;
    rg_metrics_u64_t    redis_errors[RG_METRICS_REDIS_KINDS];

    rg_metrics_u64_t    trace_spans[2];    /* exported, dropped */

    rg_metrics_u64_t    open_fds;          /* gauges of the process */
    rg_metrics_u64_t    resident_bytes;

    rg_metrics_u64_t    http_requests[RG_METRICS_ROUTES]
                                     [RG_METRICS_METHODS][RG_METRICS_CODES];
    rg_metrics_hist_t   http_seconds[RG_METRICS_ROUTES];
} rg_metrics_slot_t;


/* a label value of a table: ready once its name is written */
typedef struct {
    _Atomic uint32_t    ready;
    char                name[RG_METRICS_NAME_LEN];
} rg_metrics_name_t;


/* the zone: its tables, then nslots slots */
typedef struct {
    uint64_t            size;              /* bytes mapped */
    uint64_t            nslots;
    _Atomic uint32_t    used[RG_METRICS_NTABLES];
    rg_metrics_name_t   upstreams[RG_METRICS_UPSTREAMS];
    rg_metrics_name_t   tools[RG_METRICS_TOOLS];
    rg_metrics_name_t   routes[RG_METRICS_ROUTES];
    rg_metrics_slot_t   slots[];
} rg_metrics_zone_t;


/* the part's configuration: the zone of the cycle */
typedef struct {
    rg_metrics_zone_t  *zone;
} rg_metrics_conf_t;


/* the part in an engine: its zone and the slot it writes (NULL before a
 * worker of serve attached it) */
typedef struct {
    rg_metrics_zone_t  *zone;
    rg_metrics_slot_t  *slot;
    rg_engine_t        *engine;
    struct event       *refresh_ev;
} rg_metrics_t;


extern rg_part_t      rg_metrics_part;

/* the metrics of this process's engine (the first one started), for
 * code that has no engine at hand (the Redis client, the llm client);
 * NULL: none */
extern rg_metrics_t  *rg_metrics_here;

#define rg_metrics_conf(cycle)                                               \
    ((rg_metrics_conf_t *) rg_cycle_conf(cycle, &rg_metrics_part))
#define rg_metrics_ctx(e)                                                    \
    ((rg_metrics_t *) rg_engine_ctx(e, &rg_metrics_part))


/* A worker of serve writes slot `slot` of the zone from now on (its
 * gauges start at zero: a worker that died there left its own), and its
 * process figures (descriptors, memory) are refreshed every second.
 * Before, with more than one slot, nothing is counted. */
rg_int_t rg_metrics_attach(rg_engine_t *e, rg_uint_t slot);

/* The text exposition format 0.0.4 of every slot of the cycle's zone,
 * summed (gauges of a process: one sample per worker), appended to out.
 * RG_ERROR only when memory ran out. It reads the zone only: nothing is
 * done for metrics while nobody asks. */
rg_int_t rg_metrics_render(rg_cycle_t *cycle, rg_buf_t *out);
/* the workers of the cycle's zone, and how many of them are alive now
 * (their pid exists); RG_ERROR without a zone */
rg_int_t rg_metrics_workers(rg_cycle_t *cycle, rg_uint_t *alive,
    rg_uint_t *slots);

/* the index of a label value in a table of the zone (appended when new;
 * the last index, "other", when the table is full) */
rg_uint_t rg_metrics_name(rg_metrics_zone_t *zone, rg_metrics_table_e t,
    const char *name, size_t len);

/* one request of the HTTP API: reagent_http_requests_total{method,
 * route,code} and reagent_http_request_duration_seconds{route}; route is
 * the pattern ("/v1/tasks/{id}"), not the path */
void rg_metrics_http(rg_engine_t *e, const char *method, const char *route,
    rg_uint_t status, double seconds);

/* the queue as a worker read it (XLEN, XPENDING, the dead letters) */
void rg_metrics_queue(rg_metrics_t *m, rg_uint_t shard, int64_t depth,
    int64_t pending, int64_t dead);

/* the tasks on the queue's list of parked ones (ZCARD), read with the
 * queue's sizes */
void rg_metrics_parked(rg_metrics_t *m, int64_t parked);

/* a histogram's bucket of a duration, and the upper bounds of each
 * histogram's buckets in microseconds, 0-ended (+Inf follows) */
rg_uint_t rg_metrics_bucket(rg_metrics_hist_e h, uint64_t usec);
extern const uint64_t  rg_metrics_bounds[RG_METRICS_NHISTS]
                                        [RG_METRICS_BUCKETS];

/* the label values of the HTTP counters' indices */
const char *rg_metrics_method(rg_uint_t i);
void rg_metrics_code(rg_uint_t i, char *buf, size_t size);

/* the process's open descriptors and resident memory, into its slot */
void rg_metrics_refresh(rg_metrics_t *m);


/* counting ------------------------------------------------------------- */

static inline void
rg_metrics_add(rg_metrics_u64_t *p, uint64_t v)
{
    /* one writer per slot: a load and a store, no locked instruction */
    atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed)
                             + v, memory_order_relaxed);
}


static inline rg_metrics_slot_t *
rg_metrics_slot(void)
{
    return rg_metrics_here ? rg_metrics_here->slot : NULL;
}


static inline void
rg_metrics_observe(rg_metrics_hist_t *h, rg_metrics_hist_e kind,
    uint64_t usec)
{
    rg_metrics_add(&h->bucket[rg_metrics_bucket(kind, usec)], 1);
    rg_metrics_add(&h->sum_us, usec);
}


/* a session went from state `from` to `to` (-1: none, as when it is
 * made or destroyed); the gauge shows the states that are not final,
 * a final one counts the session finished */
static inline void
rg_metrics_session_state(int from, int to)
{
    rg_metrics_slot_t  *s;

    s = rg_metrics_slot();
    if (s == NULL || from == to) {
        return;
    }

    if (from >= 0 && from < RG_METRICS_FINAL) {
        rg_metrics_add(&s->sessions[from], (uint64_t) -1);
    }

    if (to >= 0 && to < RG_METRICS_STATES) {
        if (to < RG_METRICS_FINAL) {
            rg_metrics_add(&s->sessions[to], 1);
        } else {
            rg_metrics_add(&s->finished[to], 1);
        }
    }
}


/* a model call ended (retries included) after usec */
static inline void
rg_metrics_model_call(rg_uint_t up, rg_uint_t outcome, uint64_t usec,
    int64_t prompt, int64_t completion)
{
    rg_metrics_slot_t  *s;

    s = rg_metrics_slot();
    if (s == NULL || up >= RG_METRICS_UPSTREAMS) {
        return;
    }

    if (outcome >= RG_METRICS_OUTCOMES) {
        outcome = RG_METRICS_OUTCOMES - 1;
    }

    rg_metrics_add(&s->model_calls[up][outcome], 1);
    rg_metrics_observe(&s->model_seconds[up], RG_METRICS_H_MODEL, usec);

    if (prompt > 0) {
        rg_metrics_add(&s->model_tokens[up][0], (uint64_t) prompt);
    }
    if (completion > 0) {
        rg_metrics_add(&s->model_tokens[up][1], (uint64_t) completion);
    }
}


/* of a call's prompt, what a prompt cache gave and took; its cost */
static inline void
rg_metrics_model_usage(rg_uint_t up, int64_t cached, int64_t written,
    double cost)
{
    rg_metrics_slot_t  *s;

    s = rg_metrics_slot();
    if (s == NULL || up >= RG_METRICS_UPSTREAMS) {
        return;
    }

    if (cached > 0) {
        rg_metrics_add(&s->model_cache[up][0], (uint64_t) cached);
    }
    if (written > 0) {
        rg_metrics_add(&s->model_cache[up][1], (uint64_t) written);
    }
    if (cost > 0) {
        rg_metrics_add(&s->model_cost[up], (uint64_t) (cost * 1e6 + 0.5));
    }
}


static inline void
rg_metrics_model_retry(rg_uint_t up)
{
    rg_metrics_slot_t  *s;

    s = rg_metrics_slot();
    if (s && up < RG_METRICS_UPSTREAMS) {
        rg_metrics_add(&s->model_retries[up], 1);
    }
}


/* the index of an upstream's name, once, where it is made */
static inline rg_uint_t
rg_metrics_upstream(const char *name, size_t len)
{
    return rg_metrics_here ? rg_metrics_name(rg_metrics_here->zone,
                                             RG_METRICS_UPSTREAM, name, len)
                           : RG_METRICS_UPSTREAMS;
}


/* a tool call ended */
static inline void
rg_metrics_tool_call(const char *name, rg_metrics_tool_e outcome,
    uint64_t usec)
{
    rg_uint_t           i;
    rg_metrics_slot_t  *s;

    s = rg_metrics_slot();
    if (s == NULL || name == NULL) {
        return;
    }

    i = rg_metrics_name(rg_metrics_here->zone, RG_METRICS_TOOL, name,
                        strlen(name));

    rg_metrics_add(&s->tool_calls[i][outcome], 1);
    rg_metrics_observe(&s->tool_seconds[i], RG_METRICS_H_TOOL, usec);
}


/* the counter at offset in this process's slot (none: not counted) */
static inline void
rg_metrics_count(size_t offset, uint64_t n)
{
    rg_metrics_slot_t  *s;

    s = rg_metrics_slot();
    if (s) {
        rg_metrics_add((rg_metrics_u64_t *) ((char *) s + offset), n);
    }
}


static inline void
rg_metrics_dedupe_hit(void)
{
    rg_metrics_count(offsetof(rg_metrics_slot_t, dedupe_hits), 1);
}


static inline void
rg_metrics_store_loss(void)
{
    rg_metrics_count(offsetof(rg_metrics_slot_t, store_losses), 1);
}


static inline void
rg_metrics_task(rg_metrics_task_e outcome, uint64_t n)
{
    rg_metrics_count(offsetof(rg_metrics_slot_t, tasks)
                     + outcome * sizeof(rg_metrics_u64_t), n);
}


/* a Redis command answered or failed after usec */
static inline void
rg_metrics_redis_command(uint64_t usec)
{
    rg_metrics_slot_t  *s;

    s = rg_metrics_slot();
    if (s) {
        rg_metrics_observe(&s->redis_seconds, RG_METRICS_H_REDIS, usec);
    }
}


static inline void
rg_metrics_redis_error(rg_metrics_redis_e kind)
{
    rg_metrics_count(offsetof(rg_metrics_slot_t, redis_errors)
                     + kind * sizeof(rg_metrics_u64_t), 1);
}


/* spans the exporter sent to the collector, and those it dropped (its
 * queue full, or a batch the collector did not take) */
static inline void
rg_metrics_trace_spans(uint64_t exported, uint64_t dropped)
{
    rg_metrics_count(offsetof(rg_metrics_slot_t, trace_spans), exported);
    rg_metrics_count(offsetof(rg_metrics_slot_t, trace_spans)
                     + sizeof(rg_metrics_u64_t), dropped);
}

#endif /* RG_METRICS_H */
