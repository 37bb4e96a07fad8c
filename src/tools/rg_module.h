/* rg_module.h: loads tool modules (.so) with dlopen, checks their ABI,
 * hands them the host table, and keeps the registry of the tools they
 * bring; the toolset of an agent is a choice among them. A part may add
 * a provider: a module without a file whose tools are found at run time,
 * in each engine (rg_tools_provide()), all named with its prefix. */

#ifndef RG_MODULE_H
#define RG_MODULE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_tool_module.h>
#include <rg_tool_bind.h>
#include <jansson.h>

/* directives inside module NAME { } (the module's own) */
#define RG_MODULE_CONF      0x0008

typedef struct rg_tool_entry_s  rg_tool_entry_t;


struct rg_module_s {
    char              *path;
    void              *handle;
    rg_tool_module_t  *mod;
    void              *conf;
    rg_tool_host_t     host;             /* its configuration's */
    rg_tool_bind_t     bind;             /* host.data */
    rg_log_t          *log;              /* the cycle's */
    rg_cycle_t        *cycle;            /* which it was loaded for */
    const char        *file;             /* its load_module, for errors */
    rg_uint_t          line;
    rg_uint_t          index;            /* in the tools conf's modules */
    rg_str_t           prefix;           /* a provider's: its tools' names
                                            begin with it */
    unsigned           isolated:1;
    unsigned           initialized:1;
    unsigned           provider:1;       /* no file: a part's tools */
};


struct rg_tool_entry_s {
    const rg_tool_t  *tool;
    json_t           *schema;           /* its parameters */
    rg_module_t      *module;
};


/* What a turn may call, and how: an agent's tools as the tools layer
 * sees them, built from its tools, tool_timeout, approve and agents. */
typedef struct {
    rg_str_t           owner;            /* the agent's name, for messages */
    rg_tool_entry_t  **tools;
    rg_uint_t          ntools;
    char              *tool_list;        /* "calc, time_now" for errors */
    rg_msec_t          timeout;          /* tool_timeout */
    rg_msec_t         *timeouts;         /* per tool, 0: the default */
    rg_array_t        *approve;          /* rg_str_t: dangerous, allowed */
    rg_array_t        *agents;           /* rg_str_t: run_agent may call */
} rg_toolset_t;


/* te is the tool named name[0..len): the one comparison of a tool lookup
 * (the registry, a toolset, a provider's list) */
rg_uint_t rg_tool_entry_is(const rg_tool_entry_t *te, const char *name,
    size_t len);
rg_tool_entry_t *rg_module_find_tool(rg_cycle_t *cycle, const char *name,
    size_t len);
const char *rg_module_tool_list(rg_cycle_t *cycle);
/* the index of the tool name[0..len) in ts, or -1 */
rg_int_t rg_toolset_find(const rg_toolset_t *ts, const char *name,
    size_t len);
/* "calc, time_now", in pool */
char *rg_module_tool_names(rg_pool_t *pool, rg_tool_entry_t **tools,
    rg_uint_t n);

/* A provider named name (for logs) whose tools, found at run time, are
 * named prefix…; NULL when memory ran out. */
rg_module_t *rg_module_provider_add(rg_cycle_t *cycle, const char *name,
    const rg_str_t *prefix);
/* the provider whose tools the name (or pattern) name[0..len) would be
 * one of, or NULL */
rg_module_t *rg_module_provider_find(rg_cycle_t *cycle, const char *name,
    size_t len);
/* name[0..len) is a tool name providers accept: ^[a-zA-Z0-9_-]{1,64}$,
 * and `*` too when patterns is set */
rg_uint_t rg_module_name_valid(const char *name, size_t len,
    rg_uint_t patterns);

#endif /* RG_MODULE_H */
