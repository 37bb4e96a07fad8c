/* rg_test_mcp_fake.c: the MCP server over stdio that the MCP tests'
 * binaries play themselves (`test_mcp_* --fake-mcp`, rg_test_mcp_fake_main()):
 * told what to do by FAKE_MODE, writing every line it was sent, and the
 * pid and time of each start, to FAKE_LOG. See rg_test_mcp.h for its
 * tools and modes. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test_mcp.h>

#include <jansson.h>
#include <poll.h>
#include <signal.h>


/* the fake server ------------------------------------------------------ */

typedef struct {
    rg_msec_t           due;
    char               *text;
} rg_fake_later_t;


static const char  *rg_fake_mode;
static FILE        *rg_fake_log;
static int          rg_fake_extra;
static json_t      *rg_fake_ping_id;      /* the call waiting for a pong */
static rg_fake_later_t  rg_fake_later[64];
static int          rg_fake_nlater;


static void
rg_fake_send(json_t *m)
{
    char  *s;

    s = json_dumps(m, JSON_COMPACT);
    json_decref(m);

    if (s) {
        printf("%s\n", s);
        fflush(stdout);
        free(s);
    }
}


static void
rg_fake_result(json_t *id, json_t *result)
{
    rg_fake_send(json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id,
                           "result", result));
}


static json_t *
rg_fake_text(const char *text, int error)
{
    return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text",
                     "text", text, "isError", error);
}


/* the tools it offers: name, annotations ("ro" read-only, "rw" neither
 * read-only nor destructive, "" none given) */
static json_t *
rg_fake_tools(void)
{
    size_t   i;
    json_t  *tools, *t, *an;

    static const char  *list[][2] = {
        { "echo", "ro" }, { "slow", "ro" }, { "fail", "ro" },
        { "crash", "rw" }, { "garbage", "ro" }, { "big", "ro" },
        { "hang", "ro" }, { "addtool", "rw" }, { "env", "ro" },
        { "ping", "ro" }, { "destroy", "" }, { "touch", "rw" },
        { "a.very/long tool name that no model would take as it is, over "
          "sixty-four bytes", "ro" },
        { "extra", "ro" }
    };

    tools = json_array();

    for (i = 0; i < rg_nelems(list); i++) {
        if (strcmp(list[i][0], "extra") == 0 && !rg_fake_extra) {
            continue;
        }

        if (strcmp(list[i][1], "ro") == 0) {
            an = json_pack("{s:b}", "readOnlyHint", 1);
        } else if (strcmp(list[i][1], "rw") == 0) {
            an = json_pack("{s:b, s:b, s:b}", "readOnlyHint", 0,
                           "destructiveHint", 0, "idempotentHint", 0);
        } else {
            an = json_pack("{s:b}", "readOnlyHint", 0);
        }

        t = json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s}, s:{s:s}}}, s:o}",
                      "name", list[i][0], "description", "a test tool",
                      "inputSchema", "type", "object", "properties",
                      "text", "type", "string", "ms", "type", "integer",
                      "annotations", an);
        json_array_append_new(tools, t);
    }

    return tools;
}


static void
rg_fake_call(json_t *id, json_t *params)
{
    int          i;
    char        *big, buf[4096];
    size_t       n;
    const char  *name, *text;
    extern char **environ;

    name = json_string_value(json_object_get(params, "name"));
    text = json_string_value(json_object_get(json_object_get(params,
                                                    "arguments"), "text"));
    name = name ? name : "";

    if (strcmp(name, "echo") == 0 || strncmp(name, "a.very", 6) == 0
        || strcmp(name, "extra") == 0 || strcmp(name, "destroy") == 0
        || strcmp(name, "touch") == 0)
    {
        snprintf(buf, sizeof(buf), "%s: %s", name, text ? text : "");
        rg_fake_result(id, rg_fake_text(buf, 0));

    } else if (strcmp(name, "slow") == 0) {
        if (rg_fake_nlater < 64) {
            snprintf(buf, sizeof(buf), "slow: %s", text ? text : "");
            rg_fake_later[rg_fake_nlater].due = rg_monotonic_msec()
                + json_integer_value(json_object_get(json_object_get(params,
                                                     "arguments"), "ms"));
            rg_fake_later[rg_fake_nlater].text = json_dumps(
                json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id,
                          "result", rg_fake_text(buf, 0)), JSON_COMPACT);
            rg_fake_nlater++;
        }

    } else if (strcmp(name, "fail") == 0) {
        /* "long:N": an error text of N bytes, its ends marked */
        n = text && strncmp(text, "long:", 5) == 0
            ? (size_t) strtoul(text + 5, NULL, 10) : 0;
        big = n >= 16 ? malloc(n + 1) : NULL;

        if (big) {
            for (i = 0; (size_t) i < n; i++) {
                big[i] = (char) ('a' + i % 26);
            }
            memcpy(big, "BEGIN-", 6);
            memcpy(big + n - 4, "-END", 4);
            big[n] = '\0';
            rg_fake_result(id, rg_fake_text(big, 1));
            free(big);

        } else {
            rg_fake_result(id, rg_fake_text("it failed on purpose", 1));
        }

    } else if (strcmp(name, "crash") == 0) {
        fprintf(stderr, "crashing now, as asked\n");
        _exit(3);

    } else if (strcmp(name, "garbage") == 0) {
        printf("this is not JSON\n{\"jsonrpc\":\"2.0\"}\n\n   \n[1, 2]\n");
        fflush(stdout);
        rg_fake_result(id, rg_fake_text("answered after garbage", 0));

    } else if (strcmp(name, "big") == 0) {
        n = 200 * 1024;
        big = malloc(n + 1);
        if (big) {
            memset(big, 'x', n);
            big[n] = '\0';
            printf("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"content\":"
                   "[{\"type\":\"text\",\"text\":\"%s\"}]}}\n",
                   (long long) json_integer_value(id), big);
            fflush(stdout);
            free(big);
        }

    } else if (strcmp(name, "hang") == 0) {
        /* never answers */

    } else if (strcmp(name, "addtool") == 0) {
        rg_fake_extra = 1;
        rg_fake_send(json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method",
                               "notifications/tools/list_changed"));
        rg_fake_result(id, rg_fake_text("added", 0));

    } else if (strcmp(name, "env") == 0) {
        buf[0] = '\0';
        for (i = 0; environ[i]; i++) {
            strncat(buf, environ[i], sizeof(buf) - strlen(buf) - 2);
            strncat(buf, "\n", sizeof(buf) - strlen(buf) - 1);
        }
        rg_fake_result(id, rg_fake_text(buf, 0));

    } else if (strcmp(name, "ping") == 0) {
        rg_fake_ping_id = json_incref(id);
        rg_fake_send(json_pack("{s:s, s:s, s:s}", "jsonrpc", "2.0", "id",
                               "srv-ping", "method", "ping"));

    } else {
        rg_fake_send(json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0",
                               "id", id, "error", "code", -32602, "message",
                               "no such tool"));
    }
}


static void
rg_fake_line(const char *line)
{
    json_t      *m, *id, *params;
    const char  *method;

    if (rg_fake_log) {
        fprintf(rg_fake_log, "%s\n", line);
        fflush(rg_fake_log);
    }

    m = json_loads(line, 0, NULL);
    if (m == NULL) {
        return;
    }

    if (strcmp(rg_fake_mode, "mute") == 0) {
        json_decref(m);                  /* reads all, answers nothing */
        return;
    }

    id = json_object_get(m, "id");
    params = json_object_get(m, "params");
    method = json_string_value(json_object_get(m, "method"));

    if (method == NULL) {
        /* the answer to the server's ping */
        if (rg_fake_ping_id && json_is_string(id)
            && strcmp(json_string_value(id), "srv-ping") == 0)
        {
            rg_fake_result(rg_fake_ping_id,
                           rg_fake_text(json_object_get(m, "result")
                                        ? "pong received" : "no pong", 0));
            json_decref(rg_fake_ping_id);
            rg_fake_ping_id = NULL;
        }

    } else if (strcmp(method, "server/discover") == 0) {
        if (strcmp(rg_fake_mode, "ignore-input") == 0) {
            close(STDIN_FILENO);         /* what comes next is EPIPE */
        }

        if (strcmp(rg_fake_mode, "silent") != 0) {
            rg_fake_send(json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc",
                                   "2.0", "id", id, "error", "code", -32601,
                                   "message", "Method not found"));
        }

    } else if (strcmp(method, "initialize") == 0) {
        rg_fake_result(id, json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s}}",
                        "protocolVersion",
                        strcmp(rg_fake_mode, "badversion") == 0
                        ? "1999-01-01"
                        : json_string_value(json_object_get(params,
                                                 "protocolVersion")),
                        "capabilities", "tools", "listChanged", 1,
                        "serverInfo", "name", "fake", "version", "1"));

    } else if (strcmp(method, "tools/list") == 0) {
        rg_fake_result(id, json_pack("{s:o}", "tools", rg_fake_tools()));

    } else if (strcmp(method, "tools/call") == 0) {
        rg_fake_call(id, params);

    } else if (id) {
        rg_fake_send(json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0",
                               "id", id, "error", "code", -32601, "message",
                               "Method not found"));
    }

    json_decref(m);
}


/* the fake server's loop: lines in, answers out, the slow ones later */
int
rg_test_mcp_fake_main(void)
{
    int            i, timeout;
    char           buf[65536];
    ssize_t        n;
    rg_buf_t       line;
    rg_msec_t      now;
    struct pollfd  p;
    const char    *log;

    rg_fake_mode = getenv("FAKE_MODE") ? getenv("FAKE_MODE") : "good";
    log = getenv("FAKE_LOG");
    rg_fake_log = log ? fopen(log, "a") : NULL;
    memset(&line, 0, sizeof(line));

    /* when each start began: the restarts' waits are measured by it */
    if (rg_fake_log) {
        fprintf(rg_fake_log, "pid %d at %lld\n", (int) getpid(),
                (long long) rg_monotonic_msec());
        fflush(rg_fake_log);
    }

    if (strcmp(rg_fake_mode, "exit") == 0) {
        fprintf(stderr, "exiting at once, as asked\n");
        _exit(1);
    }

    if (strcmp(rg_fake_mode, "ignore-term") == 0) {
        signal(SIGTERM, SIG_IGN);
    }

    for ( ;; ) {
        now = rg_monotonic_msec();
        timeout = -1;

        for (i = 0; i < rg_fake_nlater; i++) {
            if (rg_fake_later[i].due <= now) {
                printf("%s\n", rg_fake_later[i].text);
                fflush(stdout);
                free(rg_fake_later[i].text);
                rg_fake_later[i--] = rg_fake_later[--rg_fake_nlater];
                continue;
            }
            if (timeout < 0 || (int) (rg_fake_later[i].due - now) < timeout) {
                timeout = (int) (rg_fake_later[i].due - now);
            }
        }

        p.fd = STDIN_FILENO;
        p.events = POLLIN;

        if (poll(&p, 1, timeout) <= 0) {
            continue;
        }

        n = read(STDIN_FILENO, buf, sizeof(buf));

        if (n <= 0) {
            if (strncmp(rg_fake_mode, "ignore-", 7) == 0) {
                pause();                 /* until a signal ends it */
                continue;
            }
            _exit(0);
        }

        for (i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                rg_fake_line(line.data ? line.data : "");
                rg_buf_reset(&line);
                if (line.data) {
                    line.data[0] = '\0';
                }
            } else {
                rg_buf_append(&line, &buf[i], 1);
            }
        }
    }
}
