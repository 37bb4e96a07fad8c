/* rg_engine.h: the runtime of one process built on one cycle: the event
 * base, the curl multi driver, one upstream per llm block, and the counters
 * every session adds to. `reagent run`, `batch` and each worker of `serve`
 * own exactly one. */

#ifndef RG_ENGINE_H
#define RG_ENGINE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_event_curl.h>
#include <rg_llm.h>

typedef struct {
    uint64_t            sessions;
    uint64_t            model_calls;
    uint64_t            tool_calls;
    uint64_t            tool_errors;
    uint64_t            dedupe_hits;
    uint64_t            repeats;
    uint64_t            prompt_tokens;
    uint64_t            completion_tokens;
} rg_engine_stats_t;

struct rg_engine_s {
    struct event_base  *base;
    rg_curl_t          *curl;
    void               *pool;          /* rg_thread_pool_t * */
    void               *store;         /* rg_store_t *: dedupe, state */
    rg_cycle_t         *cycle;
    rg_log_t           *log;
    rg_uint_t           live;          /* sessions not yet destroyed */
    uint64_t            seq;
    char                tag[8];        /* makes session ids unique */
    rg_engine_stats_t   stats;
};

rg_engine_t *rg_engine_create(rg_cycle_t *cycle, rg_log_t *log);
void rg_engine_destroy(rg_engine_t *e);
rg_llm_upstream_t *rg_engine_upstream(rg_engine_t *e, rg_llm_conf_t *llm);
uint64_t rg_engine_llm_retries(rg_engine_t *e);

#endif /* RG_ENGINE_H */
