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
#include <rg_module.h>
#include <event2/event.h>

typedef struct rg_isolate_s       rg_isolate_t;
typedef struct rg_isolate_call_s  rg_isolate_call_t;

typedef void (*rg_isolate_done_pt)(rg_isolate_call_t *c, int failed,
    const char *text, size_t len);


/* One call for a helper, embedded in whoever makes it; the strings stay
 * the caller's and must live until done() or rg_isolate_abort(). */
struct rg_isolate_call_s {
    const char         *tool;       /* a tool of the module */
    const char         *id;         /* tool_call_id */
    const char         *session;
    const char         *args;       /* a JSON object */
    size_t              args_len;
    rg_isolate_done_pt  done;       /* the answer, once, on the reactor */

    /* the isolate's */
    rg_isolate_call_t  *next;       /* waiting for a helper, or to fail */
    char                error[256]; /* why it could not be sent */
};


/* forks the module's zygote and has it start `helpers` processes for
 * module m (copies of this process: the module is already loaded and
 * configured). Call it before the process starts any thread: no lock may
 * be held when the zygote is forked. */
rg_isolate_t *rg_isolate_create(rg_module_t *m, struct event_base *base,
    rg_uint_t helpers, rg_log_t *log);
void rg_isolate_destroy(rg_isolate_t *iso);

/* starts c in a helper, or queues it until one is free; the answer comes
 * through c->done(), never inside this call */
void rg_isolate_call(rg_isolate_t *iso, rg_isolate_call_t *c);

/* forgets the call (timed out, or its session went away): a queued call
 * leaves the queue, a running one has its helper killed and respawned;
 * no answer follows */
void rg_isolate_abort(rg_isolate_t *iso, rg_isolate_call_t *c);

#endif /* RG_ISOLATE_H */
