/* rg_module.h: loads tool modules (.so) with dlopen, checks their ABI,
 * hands them the host table, and keeps the registry of the tools they
 * bring. */

#ifndef RG_MODULE_H
#define RG_MODULE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>

char *rg_module_load_directive(rg_conf_t *cf, rg_command_t *cmd, void *conf);
char *rg_module_block_directive(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
rg_int_t rg_module_init_all(rg_cycle_t *cycle);
void rg_module_unload_all(void *cycle);
rg_tool_entry_t *rg_module_find_tool(rg_cycle_t *cycle, const char *name,
    size_t len);
const char *rg_module_tool_list(rg_cycle_t *cycle);
/* the index of the tool name[0..len) in ts, or -1 */
rg_int_t rg_toolset_find(const rg_toolset_t *ts, const char *name,
    size_t len);
char *rg_module_tool_names(rg_cycle_t *cycle, rg_tool_entry_t **tools,
    rg_uint_t n);

#endif /* RG_MODULE_H */
