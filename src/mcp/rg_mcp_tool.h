/* rg_mcp_tool.h: an MCP server's tools as reagent tools (rg_mcp_tool.c):
 * their names (NAME__tool, within what providers accept), their flags
 * (from the server's annotations and the operator's tool_flags), the
 * list published to the tools part, a call (tools/call, cancelled on
 * the tool timeout) and its result as the model reads it. */

#ifndef RG_MCP_TOOL_H
#define RG_MCP_TOOL_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_mcp.h>
#include <jansson.h>

#define RG_MCP_TOOL_NAME_MAX    64      /* OpenAI's limit */
#define RG_MCP_DESCRIPTION_MAX  4096    /* bytes told to the model */
#define RG_MCP_SCHEMA_MAX       65536   /* bytes of a tool's inputSchema */


typedef struct {
    rg_tool_t           tool;         /* first: what the tools part holds */
    rg_mcp_server_t    *server;
    char               *remote;       /* the server's own name for it */
} rg_mcp_tool_t;


/* The reagent name of the server's tool `remote`: prefix and remote,
 * each byte outside [a-zA-Z0-9_-] made "_"; when that is longer than 64,
 * or when salt is not 0 (it collided), cut and ended with "_" and 6 hex
 * digits of a hash of remote (and salt). out holds 65 bytes. */
void rg_mcp_tool_name(const rg_str_t *prefix, const char *remote,
    rg_uint_t salt, char *out);

/* RG_TOOL_* flags from a tool's annotations, with the protocol's
 * defaults for those it lacks (readOnlyHint false, destructiveHint
 * true, idempotentHint false): read-only may be deduplicated; not
 * read-only and destructive is dangerous; not read-only and not
 * idempotent has a side effect. The last of overrides (rg_mcp_tool_flags_t)
 * whose pattern matches remote replaces them. */
uint32_t rg_mcp_tool_flags(json_t *annotations, const char *remote,
    rg_array_t *overrides);

/* A tools/call result as the model reads it, appended to out: the text
 * content, one line for each other kind ("[image image/png, 1.2 KB]"),
 * the text of an embedded text resource under its line; when there is no
 * text, structuredContent as JSON. *failed is set when isError is.
 * RG_ERROR when result is not a result or memory ran out. */
rg_int_t rg_mcp_result_text(json_t *result, rg_buf_t *out,
    rg_uint_t *failed);

/* The tools of a tools/list (the pages' tools, one array) as a list for
 * the tools part, one reference held; NULL when memory ran out. */
rg_tool_list_t *rg_mcp_tools_build(rg_mcp_server_t *s, json_t *tools);
/* a and b were built from the same tools */
rg_uint_t rg_mcp_tools_same(rg_tool_list_t *a, rg_tool_list_t *b);

#endif /* RG_MCP_TOOL_H */
