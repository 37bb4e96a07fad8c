/* rg_tools_conf.h: the tools part's configuration (rg_tools_conf.c):
 * the modules loaded, the tools they bring, the thread pool, the helpers
 * of isolated modules, the cap on results; and the part's hooks, defined
 * where they work (rg_module.c: the modules; rg_tools.c: the runtime),
 * so that the part's table includes neither of theirs. */

#ifndef RG_TOOLS_CONF_H
#define RG_TOOLS_CONF_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>

typedef struct {
    rg_array_t          modules;          /* rg_module_t *, in order */
    rg_array_t          tools;            /* rg_tool_entry_t */
    rg_int_t            pool_threads;
    rg_int_t            pool_max_queue;
    rg_int_t            isolated_helpers;
    size_t              tool_result_limit;
} rg_tools_conf_t;

extern rg_part_t  rg_tools_part;

#define rg_tools_conf(cycle)                                                 \
    ((rg_tools_conf_t *) rg_cycle_conf(cycle, &rg_tools_part))


/* rg_module.c: the registry's arrays in a new conf, and the modules
 * unloaded with the pool */
rg_int_t rg_module_conf_init(rg_tools_conf_t *tcf, rg_pool_t *pool);
/* load_module and module NAME { } */
char *rg_module_load_directive(rg_conf_t *cf, rg_command_t *cmd, void *conf);
char *rg_module_block_directive(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
/* once the whole file is read: each module's init() */
rg_int_t rg_module_init_all(rg_cycle_t *cycle);

/* rg_tools.c: the part's runtime: helpers for isolated modules (before
 * any thread), the thread pool, a host table per module */
rg_int_t rg_tools_init_worker(rg_engine_t *e);
void rg_tools_exit_worker(rg_engine_t *e);

#endif /* RG_TOOLS_CONF_H */
