/* rg_llm_shared.h: the limits of an upstream held across every process
 * on the store (rg_llm_shared.c). */

#ifndef RG_LLM_SHARED_H
#define RG_LLM_SHARED_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>
#include <rg_llm_conf.h>

typedef struct rg_llm_shared_s  rg_llm_shared_t;

/* what the limits know of the upstream whose they are (the client's):
 * its llm block, its loop and log, and how to wake its wait queue
 * (rg_llm_next()) when the store answers or a wait ends */
typedef struct {
    rg_llm_conf_t      *conf;
    struct event_base  *base;
    rg_log_t           *log;
    void              (*wake)(void *data);
    void               *data;
} rg_llm_shared_owner_t;

/* NULL when nothing is shared: the llm declares no shared limit and the
 * store is not durable (or without memory); url: the one it is
 * redirected to, NULL: the conf's */
rg_llm_shared_t *rg_llm_shared_create(const rg_llm_shared_owner_t *owner,
    const char *url, rg_store_t *st, rg_uint_t durable);
void rg_llm_shared_destroy(rg_llm_shared_t *sh);
/* the upstream's URL changed (rg_llm_redirect) to url: the cool-down
 * follows */
rg_int_t rg_llm_shared_upstream(rg_llm_shared_t *sh, const char *url);

/* May the oldest waiting request (seq, its place in the upstream's
 * queue; newest, the last one queued) start now (RG_OK), or was the
 * store asked (RG_AGAIN: the owner is woken when it answers)? cost is
 * its estimate of tokens. */
rg_int_t rg_llm_shared_admit(rg_llm_shared_t *sh, size_t cost, uint64_t seq,
    uint64_t newest, size_t *taken, uint64_t *slot);
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
