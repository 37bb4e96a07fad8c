/* rg_tool_host_args.h: the host table's argument readers and unit
 * parsers, shared by the worker's host table (rg_tools.c) and an isolated
 * helper's (rg_isolate.c). */

#ifndef RG_TOOL_HOST_ARGS_H
#define RG_TOOL_HOST_ARGS_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_module.h>

/* fills the arg_* and parse_* members of a host table */
void rg_tool_host_args_set(rg_tool_host_t *host);

#endif /* RG_TOOL_HOST_ARGS_H */
