/* rg_tools_conf.h: the tools part's configuration (rg_tools_conf.c):
 * the modules loaded, the tools they bring, the thread pool, the helpers
 * of isolated modules, the cap on results. */

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

#endif /* RG_TOOLS_CONF_H */
