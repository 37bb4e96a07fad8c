/* rg_isolate.c: helper processes for modules loaded `isolated`.
 * Placeholder until the helper-process implementation lands: calls run
 * in this process. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_isolate.h>

struct rg_isolate_s {
    rg_module_t  *module;
};


rg_isolate_t *
rg_isolate_create(rg_module_t *m, struct event_base *base, rg_uint_t helpers,
    rg_log_t *log)
{
    return NULL;
}


void
rg_isolate_destroy(rg_isolate_t *iso)
{
}


void
rg_isolate_call(rg_isolate_t *iso, rg_tool_run_t *run)
{
}


void
rg_isolate_abort(rg_isolate_t *iso, rg_tool_run_t *run)
{
}
