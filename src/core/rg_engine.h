/* rg_engine.h: the runtime of one process built on one cycle: its event
 * base, its log, its identity, and each part's runtime by the part's
 * index (upstreams, the store, the curl multi, the thread pool, helper
 * processes…), built by the parts' init_worker when it starts and taken
 * down by their exit_worker in reverse order. `reagent run`, `batch` and
 * each worker of `serve` own exactly one. Knows no part by name. */

#ifndef RG_ENGINE_H
#define RG_ENGINE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <event2/event.h>


struct rg_engine_s {
    struct event_base  *base;
    rg_cycle_t         *cycle;
    rg_log_t           *log;
    void              **ctx;           /* each part's runtime, by index */
    rg_uint_t           started;       /* parts whose init_worker ran */
    rg_uint_t           worker;        /* its number among the workers */
    char                tag[8];        /* makes its session ids unique */

    /* work a drain waits for beyond the queue's (requests of the API):
     * when it falls to 0 while draining, released is called */
    rg_uint_t           holds;
    void              (*released)(rg_engine_t *e);
    void               *released_data;
    unsigned            draining:1;
};


#define rg_engine_ctx(e, part)  ((e)->ctx[(part)->index])


/* builds the engine: an event base, then every part's runtime in the
 * order of the parts; NULL (and what was built taken down) on failure */
rg_engine_t *rg_engine_create(rg_cycle_t *cycle, rg_log_t *log);
/* every part's runtime in reverse order, then the event base */
void rg_engine_destroy(rg_engine_t *e);

/* the worker takes no new work: each part's drain_worker, in order */
void rg_engine_drain(rg_engine_t *e);
/* USR1: each part's reopen_worker, in order */
void rg_engine_reopen(rg_engine_t *e);
/* a part's work that a drain waits for: taken, and given back */
void rg_engine_hold(rg_engine_t *e);
void rg_engine_release(rg_engine_t *e);

#endif /* RG_ENGINE_H */
