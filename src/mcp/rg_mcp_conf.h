/* rg_mcp_conf.h: the mcp part's configuration (rg_mcp_conf.c): one
 * rg_mcp_conf_t per `mcp NAME { }` block, a server whose tools become
 * reagent tools named NAME__tool, over stdio (a program the worker
 * starts) or Streamable HTTP (a URL). */

#ifndef RG_MCP_CONF_H
#define RG_MCP_CONF_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_module.h>

/* directives inside mcp NAME { } */
#define RG_MCP_CONF         0x0040

/* the longest server name: its tools' names keep room for their own */
#define RG_MCP_NAME_MAX     32

/* protocol */
#define RG_MCP_PROTO_AUTO       0   /* server/discover, else initialize */
#define RG_MCP_PROTO_SESSION    1   /* initialize only (2025-era) */
#define RG_MCP_PROTO_STATELESS  2   /* 2026-07-28 only */

/* what tool_flags sets beyond the tool module ABI's flags */
#define RG_MCP_FLAGS_NONE       0x80000000u


/* env NAME [VALUE]; secret_env NAME; */
typedef struct {
    rg_str_t            name;
    char               *value;        /* NULL: not set, not passed */
    unsigned            secret:1;
} rg_mcp_env_t;


/* tool_flags TOOL FLAG…; the flags replace what the server's
 * annotations say, for the tools TOOL (a pattern) names */
typedef struct {
    rg_str_t            pattern;      /* the server's own tool name */
    uint32_t            flags;        /* RG_TOOL_*; RG_MCP_FLAGS_NONE */
} rg_mcp_tool_flags_t;


typedef struct {
    rg_str_t            name;
    rg_str_t            prefix;       /* "NAME__" */
    rg_uint_t           index;        /* among the servers */

    rg_array_t         *command;      /* rg_str_t: argv, for stdio */
    char              **argv;         /* the same, NULL-ended */
    rg_array_t         *env;          /* rg_mcp_env_t */
    rg_str_t            url;          /* for Streamable HTTP */
    rg_array_t         *headers;      /* char *: "Name: value" */

    rg_uint_t           protocol;     /* RG_MCP_PROTO_* */
    rg_msec_t           tool_timeout; /* 0: the agents' */
    rg_msec_t           start_timeout;
    rg_msec_t           restart_min;
    rg_msec_t           restart_max;
    size_t              max_message;
    rg_array_t         *tool_flags;   /* rg_mcp_tool_flags_t */

    rg_module_t        *provider;     /* its tools' module */
    const char         *file;
    rg_uint_t           line;
} rg_mcp_conf_t;


typedef struct {
    rg_array_t          servers;      /* rg_mcp_conf_t *, in order */
} rg_mcp_main_conf_t;


/* the revisions the client speaks: the stateless one, and those of the
 * initialize handshake, newest first (initialize offers the first) */
#define RG_MCP_STATELESS        "2026-07-28"
#define RG_MCP_VERSIONS_TEXT    "2026-07-28 (stateless), 2025-11-25, " \
                                "2025-06-18, 2025-03-26"


extern rg_part_t  rg_mcp_part;

#define rg_mcp_main_conf(cycle)                                              \
    ((rg_mcp_main_conf_t *) rg_cycle_conf(cycle, &rg_mcp_part))

/* the server called name[0..len), or NULL */
rg_mcp_conf_t *rg_mcp_find(rg_cycle_t *cycle, const char *name, size_t len);

/* what the part's table names: the worker hooks (rg_mcp.c), the command
 * (rg_mcp_cli.c) */
rg_int_t rg_mcp_init_worker(rg_engine_t *e);
void rg_mcp_exit_worker(rg_engine_t *e);
extern const rg_cli_t  rg_mcp_cli_cmd;

#endif /* RG_MCP_CONF_H */
