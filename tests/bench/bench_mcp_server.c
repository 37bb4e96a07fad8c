/* bench_mcp_server.c: the MCP server of `make bench`'s MCP figure, over
 * stdio: one tool, "echo", that answers its "message" at once, so that
 * what is measured is reagent's side of a call (the server's own CPU is
 * its process's, not reagent's). It answers initialize, tools/list and
 * tools/call, ignores notifications and answers other requests -32601.
 * Blocking reads and a flush per answer: it is a process of its own. */

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void
rg_bench_answer(json_t *id, json_t *result)
{
    char    *text;
    json_t  *m;

    m = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id,
                  "result", result);
    text = m ? json_dumps(m, JSON_COMPACT) : NULL;

    if (text) {
        fputs(text, stdout);
        fputc('\n', stdout);
        fflush(stdout);
    }

    free(text);
    json_decref(m);
}


static void
rg_bench_error(json_t *id, int code, const char *message)
{
    char    *text;
    json_t  *m;

    m = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id,
                  "error", "code", code, "message", message);
    text = m ? json_dumps(m, JSON_COMPACT) : NULL;

    if (text) {
        fputs(text, stdout);
        fputc('\n', stdout);
        fflush(stdout);
    }

    free(text);
    json_decref(m);
}


static void
rg_bench_request(json_t *msg)
{
    json_t      *id, *params;
    const char  *method, *text;

    id = json_object_get(msg, "id");
    method = json_string_value(json_object_get(msg, "method"));
    params = json_object_get(msg, "params");

    if (id == NULL || method == NULL) {
        return;                        /* a notification or an answer */
    }

    if (strcmp(method, "initialize") == 0) {
        rg_bench_answer(id, json_pack("{s:s, s:{s:{}}, s:{s:s, s:s}}",
            "protocolVersion", "2025-11-25", "capabilities", "tools",
            "serverInfo", "name", "bench", "version", "1"));

    } else if (strcmp(method, "tools/list") == 0) {
        rg_bench_answer(id, json_pack("{s:[{s:s, s:s, s:{s:s, s:{s:{s:s}},"
            " s:[s]}, s:{s:b, s:b}}]}", "tools", "name", "echo",
            "description", "Echoes back the message", "inputSchema",
            "type", "object", "properties", "message", "type", "string",
            "required", "message", "annotations", "readOnlyHint", 0,
            "destructiveHint", 0));

    } else if (strcmp(method, "tools/call") == 0) {
        text = json_string_value(json_object_get(json_object_get(params,
                                                 "arguments"), "message"));
        rg_bench_answer(id, json_pack("{s:[{s:s, s:s}]}", "content", "type",
                                      "text", "text", text ? text : ""));

    } else {
        rg_bench_error(id, -32601, "Method not found");
    }
}


int
main(void)
{
    char     *line;
    size_t    size;
    ssize_t   n;
    json_t   *msg;

    line = NULL;
    size = 0;

    while ((n = getline(&line, &size, stdin)) > 0) {
        msg = json_loadb(line, (size_t) n, 0, NULL);
        if (msg) {
            rg_bench_request(msg);
            json_decref(msg);
        }
    }

    free(line);

    return 0;
}
