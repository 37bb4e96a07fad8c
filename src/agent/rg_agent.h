/* rg_agent.h: the agent part in an engine (rg_agent.c): the counters
 * every session adds to, the sessions alive, the numbers of their ids,
 * the engine's views of agents whose tools providers (MCP servers)
 * bring; it hands the tools part the runner of child sessions
 * (run_agent). */

#ifndef RG_AGENT_H
#define RG_AGENT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_agent_conf.h>

typedef struct {
    uint64_t            sessions;
    uint64_t            model_calls;
    uint64_t            tool_calls;
    uint64_t            tool_errors;
    uint64_t            dedupe_hits;
    uint64_t            repeats;
    uint64_t            prompt_tokens;
    uint64_t            completion_tokens;
    uint64_t            cached_tokens;
    uint64_t            cache_write_tokens;
    double              cost;         /* dollars */
} rg_agent_stats_t;


typedef struct rg_agent_view_s      rg_agent_view_t;

typedef struct {
    rg_agent_stats_t    stats;
    rg_uint_t           live;         /* sessions not yet destroyed */
    uint64_t            seq;          /* the last session's number */
    char                worker[128];  /* "host:pid", for the store */
    uint64_t            checkpoints;
    uint64_t            checkpoint_retries;
    uint64_t            recovered;    /* sessions written back into a
                                         store that lost them */
    rg_uint_t           recovering;   /* being written back now */
    rg_uint_t           rec_batch;    /* written back since none was */
    rg_msec_t           rec_first;    /* when the first of them began */
    rg_uint_t           cp_waiting;   /* sessions waiting for the store */
    rg_uint_t           cp_waited;    /* of this outage, written since */
    rg_msec_t           cp_wait_max;  /* the longest wait of the outage */
    uint64_t            tenant_said[2];  /* the outage each fallback of
                                            tenant budgets (local, wait)
                                            spoke of (rg_store_down) */
    uint64_t            events_said;  /* and that of events */
    uint64_t            load_said;    /* and that of sessions' reads */
    uint64_t            resumed;
    struct _GHashTable *flights;      /* dedupe keys of calls in flight:
                                         key -> rg_dedupe.c's flight */
    rg_agent_view_t   **views;        /* by agent index, NULL: none yet */
    rg_uint_t           nviews;
} rg_agent_ctx_t;


#define rg_agent_ctx(e)                                                      \
    ((rg_agent_ctx_t *) rg_engine_ctx(e, &rg_agent_part))

/* The agent as a session of this engine sees it: itself, or, when
 * providers bring some of its tools, a copy with the tools they offer
 * now (its toolset, caps, tool texts and prefix its own). The copy is
 * kept while pool (the session's) lives, so a session keeps the tools it
 * started with when a provider's change; NULL when memory ran out. */
rg_agent_conf_t *rg_agent_runtime(rg_engine_t *e, rg_agent_conf_t *agent,
    rg_pool_t *pool);

/* for a summary: the engine's counters, and the retries of its model
 * calls as its upstreams counted them */
void rg_agent_stats(rg_engine_t *e, rg_agent_stats_t *stats,
    uint64_t *retries);

#endif /* RG_AGENT_H */
