/* rg_isolate.h: runs the tools of a module loaded `isolated` in helper
 * processes that the worker spawns and talks to over a socketpair in
 * msgpack frames. A tool that crashes or hangs there costs one call an
 * error string, and the helper is respawned; the sessions sharing the
 * worker carry on. */

#ifndef RG_ISOLATE_H
#define RG_ISOLATE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_tools.h>

typedef struct rg_isolate_s  rg_isolate_t;

/* forks the module's zygote and has it start `helpers` processes for
 * module m (copies of this process: the module is already loaded and
 * configured). Call it before the process starts any thread: no lock may
 * be held when the zygote is forked. */
rg_isolate_t *rg_isolate_create(rg_module_t *m, struct event_base *base,
    rg_uint_t helpers, rg_log_t *log);
void rg_isolate_destroy(rg_isolate_t *iso);

/* starts run->call in a helper, or queues it until one is free; the
 * answer comes through rg_tools_isolated_done() */
void rg_isolate_call(rg_isolate_t *iso, rg_tool_run_t *run);

/* forgets the call (timed out, or its session went away): a queued call
 * leaves the queue, a running one has its helper killed and respawned;
 * no answer follows */
void rg_isolate_abort(rg_isolate_t *iso, rg_tool_run_t *run);

#endif /* RG_ISOLATE_H */
