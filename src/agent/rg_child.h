/* rg_child.h: child sessions for run_agent (rg_child.c): the runner the
 * agent part gives the tools part. */

#ifndef RG_CHILD_H
#define RG_CHILD_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tools.h>

/* a child of run's session on agent name with input; RG_ERROR with the
 * reason in run->error */
rg_int_t rg_child_start(rg_tool_run_t *run, const char *name,
    const char *input, size_t len);
/* the child is not waited for any more */
void rg_child_stop(rg_tool_run_t *run);

#endif /* RG_CHILD_H */
