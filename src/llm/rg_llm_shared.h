/* rg_llm_shared.h: the limits of an upstream held across every process
 * on the store (rg_llm_shared.c). */

#ifndef RG_LLM_SHARED_H
#define RG_LLM_SHARED_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>

typedef struct rg_llm_shared_s  rg_llm_shared_t;

struct rg_llm_upstream_s;

/* NULL when nothing is shared: the llm declares no shared limit and the
 * store is not durable (or without memory) */
rg_llm_shared_t *rg_llm_shared_create(struct rg_llm_upstream_s *up,
    rg_store_t *st, rg_uint_t durable);
void rg_llm_shared_destroy(rg_llm_shared_t *sh);
/* the upstream's URL changed (rg_llm_redirect): the cool-down follows */
rg_int_t rg_llm_shared_upstream(rg_llm_shared_t *sh);

/* May the oldest waiting request (seq, its place in the upstream's
 * queue) start now (RG_OK), or was the store asked (RG_AGAIN:
 * rg_llm_next() runs again when it answers)? cost is its estimate of
 * tokens. */
rg_int_t rg_llm_shared_admit(rg_llm_shared_t *sh, size_t cost, uint64_t seq,
    size_t *taken, uint64_t *slot);
/* the provider counted tokens; taken was reserved for them */
void rg_llm_shared_usage(rg_llm_shared_t *sh, size_t taken, int64_t tokens);
/* a 429: every process waits ms before its next call to the upstream */
void rg_llm_shared_cooldown(rg_llm_shared_t *sh, rg_msec_t ms);
/* a request ends: its slot (0: none) is free for any process */
void rg_llm_shared_release(rg_llm_shared_t *sh, uint64_t slot);
/* the limits this process applies itself now: all of them while the
 * store cannot be reached and the fallback is local, else those not
 * shared */
rg_uint_t rg_llm_shared_local(rg_llm_shared_t *sh);

#endif /* RG_LLM_SHARED_H */
