
/* rg_tool_bind.h: what a host table (rg_tool_module.h) serves, and how
 * one is filled. The registry (rg_module.h) keeps a table per module,
 * the runtime of the calls (rg_tools.h) one per module and engine, and
 * the host table's functions (rg_tools_host.c, rg_tool_host_io.c) read
 * it back: the types they share live here, in a header that includes
 * none of theirs, so that their includes run one way. */

#ifndef RG_TOOL_BIND_H
#define RG_TOOL_BIND_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_module.h>

typedef struct rg_module_s       rg_module_t;       /* rg_module.h */
typedef struct rg_tools_ctx_s    rg_tools_ctx_t;    /* rg_tools.h */
typedef struct rg_tool_io_ctx_s  rg_tool_io_ctx_t;  /* rg_tool_host_io.h */


/* What a host table serves: a module, and the engine whose tools part
 * runs its calls (rg_tools.h), or none while the configuration is read
 * (the table a module's create_conf, directives, init and exit get:
 * its log and its units work there, what waits on a reactor does not). */
typedef struct {
    rg_module_t        *module;
    rg_tools_ctx_t     *ctx;          /* NULL: the configuration's */
    rg_tool_io_ctx_t   *io;           /* ctx's reactor; NULL with ctx */
} rg_tool_bind_t;


/* fills a host table for module m in ctx (NULL: the configuration's);
 * rg_tools_host.c */
void rg_tools_host_init(rg_tool_host_t *host, rg_tool_bind_t *bind,
    rg_module_t *m, rg_tools_ctx_t *ctx);

#endif /* RG_TOOL_BIND_H */
