/* test_mcp.c: the MCP client (src/mcp/). Its pieces: the event stream
 * reader (rg_mcp_sse.c), tool names, flags from annotations and
 * tool_flags, results as the model reads them (rg_mcp_tool.c), the mcp
 * blocks' errors and the agents' names and patterns of MCP tools. Then,
 * through the agent loop against the mock model, a server over stdio
 * that this test binary plays itself (`test_mcp --fake-mcp`, told what
 * to do by FAKE_MODE and writing what it was sent to FAKE_LOG): calls in
 * parallel answered out of order, an error result, a timeout that
 * cancels the call (notifications/cancelled, with its id), an error
 * text of 3 KB passed whole and one of 9 KB trimmed visibly, the mcp
 * block's tool_timeout and the agent's per tool over it, garbage on
 * stdout, a message over max_message, a crash and the restart after it
 * (its stderr in the log), restarts after waits that double up to
 * restart_backoff's longest, a list that changes, a server that speaks
 * another protocol version or never starts, silence to server/discover,
 * a server that never answers its handshake (bounded by start_timeout)
 * or closes its input, the environment it gets, a ping from the server,
 * approval of a destructive tool, dedupe of a read-only one, and the end
 * of a server that ignores the end of its input (SIGTERM) or even
 * SIGTERM (SIGKILL). The real servers from npm are
 * tests/cli/test_mcp_interop.sh's. Time is asserted only as lower bounds.
 */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>
#include <rg_mcp.h>
#include <rg_mcp_sse.h>
#include <rg_mcp_tool.h>
#include <rg_tools.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <event2/event.h>


#define RG_TEST_KEY_ENV   "RG_TEST_MCP_KEY"
#define RG_TEST_KEY       "sk-rgtest-mcp-5b4a3928170611"
#define RG_TEST_TOKEN     "tok-rgtest-mcp-secret-9911"


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
static int
rg_fake_main(void)
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


/* the tests' context --------------------------------------------------- */

typedef struct {
    rg_test_mock_t     *mock;
    rg_cycle_t         *cycle;
    rg_engine_t        *engine;
    rg_session_t       *s;
    json_t             *msgs;
    char                self[PATH_MAX];
    char                log[PATH_MAX];
    char                errlog[PATH_MAX];  /* reagent's, when logging */
    rg_uint_t           logging;
    char                err[512];
} rg_test_ctx_t;


static int
rg_test_setup(void **state)
{
    ssize_t         n;
    rg_test_ctx_t  *t;

    t = calloc(1, sizeof(rg_test_ctx_t));
    *state = t;

    if (t == NULL) {
        return -1;
    }

    n = readlink("/proc/self/exe", t->self, sizeof(t->self) - 1);
    if (n <= 0) {
        return -1;
    }
    t->self[n] = '\0';

    snprintf(t->log, sizeof(t->log), "%s/fake-%d.log", rg_test_tmpdir(),
             (int) getpid());
    unlink(t->log);

    snprintf(t->errlog, sizeof(t->errlog), "%s/reagent-%d.log",
             rg_test_tmpdir(), (int) getpid());
    unlink(t->errlog);

    return 0;
}


static int
rg_test_teardown(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    rg_session_destroy(t->s);
    rg_engine_destroy(t->engine);
    rg_cycle_destroy(t->cycle);
    rg_test_mock_stop(t->mock);
    json_decref(t->msgs);
    unlink(t->log);
    unlink(t->errlog);
    free(t);

    return 0;
}


/* the mock with this script (JSON text) */
static void
rg_test_mock(rg_test_ctx_t *t, const char *script)
{
    char  *path, name[64];

    snprintf(name, sizeof(name), "mcp-script-%d.json", (int) getpid());
    path = rg_test_write_file(name, script);
    assert_non_null(path);

    t->mock = rg_test_mock_start("--script", path, NULL);
    free(path);
    assert_non_null(t->mock);
}


/* llm at the mock, mcp "fk" the fake server in mode with `mcp` added,
 * agent "a" with `agent` (its tools fk__* unless it names its own);
 * with t->logging, reagent's log at info goes to t->errlog */
static void
rg_test_engine(rg_test_ctx_t *t, const char *mode, const char *mcp,
    const char *agent)
{
    char  errlog[PATH_MAX + 32];

    errlog[0] = '\0';
    if (t->logging) {
        snprintf(errlog, sizeof(errlog), "error_log %s info;", t->errlog);
    }

    t->cycle = rg_test_cycle(t->err, sizeof(t->err),
        "%s\n"
        "llm mock { base_url http://127.0.0.1:%d/v1; model mock-1;"
        "    max_retries 0; api_key_env " RG_TEST_KEY_ENV "; }\n"
        "mcp fk {\n"
        "    command %s --fake-mcp;\n"
        "    env FAKE_MODE %s;\n"
        "    env FAKE_LOG %s;\n"
        "    %s\n"
        "    %s\n"
        "}\n"
        "agent a { %s %s }\n",
        errlog, t->mock ? t->mock->port : 1, t->self, mode, t->log,
        mcp && strstr(mcp, "restart_backoff") ? ""
                                               : "restart_backoff 100ms 1s;",
        mcp ? mcp : "",
        agent && strstr(agent, "tools ") ? "" : "tools fk__*;",
        agent ? agent : "");

    if (t->cycle == NULL) {
        print_error("configuration: %s\n", t->err);
    }
    assert_non_null(t->cycle);

    t->engine = rg_engine_create(t->cycle, t->cycle->log);
    assert_non_null(t->engine);
}


static rg_mcp_server_t *
rg_test_server(rg_test_ctx_t *t)
{
    rg_mcp_ctx_t  *ctx;

    ctx = rg_mcp_ctx(t->engine);
    assert_int_equal(ctx->nservers, 1);

    return &ctx->servers[0];
}


static rg_session_t *
rg_test_session(rg_test_ctx_t *t, const char *agent, const char *input)
{
    json_t    *m;
    rg_msg_t  *msg;

    rg_session_destroy(t->s);

    t->s = rg_test_run(t->engine, agent, input);
    assert_non_null(t->s);
    assert_true(rg_session_final(t->s));

    json_decref(t->msgs);
    t->msgs = json_array();

    for (msg = t->s->msgs.head; msg; msg = msg->next) {
        m = json_loadb(msg->json.data, msg->json.len, 0, NULL);
        assert_non_null(m);
        json_array_append_new(t->msgs, m);
    }

    return t->s;
}


static const char *
rg_test_tool_result(rg_test_ctx_t *t, const char *id)
{
    size_t   i;
    json_t  *m;

    json_array_foreach(t->msgs, i, m) {
        if (json_is_string(json_object_get(m, "tool_call_id"))
            && strcmp(json_string_value(json_object_get(m, "tool_call_id")),
                      id) == 0)
        {
            return json_string_value(json_object_get(m, "content"));
        }
    }

    print_error("no tool message answers \"%s\"\n", id);
    fail();

    return NULL;
}


#define rg_test_contains(hay, needle)                                        \
    do {                                                                     \
        const char *h_ = (hay);                                              \
        if (h_ == NULL || strstr(h_, (needle)) == NULL) {                    \
            print_error("\"%s\"\n    does not contain \"%s\"\n",            \
                        h_ ? h_ : "(null)", (needle));                       \
            fail();                                                          \
        }                                                                    \
    } while (0)

#define rg_test_lacks(hay, needle)                                           \
    do {                                                                     \
        const char *h_ = (hay);                                              \
        if (h_ && strstr(h_, (needle)) != NULL) {                            \
            print_error("\"%s\"\n    contains \"%s\"\n", h_, (needle));      \
            fail();                                                          \
        }                                                                    \
    } while (0)


/* a file's text, "" when there is none */
static char *
rg_test_read(const char *path)
{
    FILE    *f;
    char    *s;
    long     n;

    f = fopen(path, "r");
    if (f == NULL) {
        return strdup("");
    }

    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);

    s = calloc(1, n + 1);
    if (s && fread(s, 1, n, f) != (size_t) n) {
        s[0] = '\0';
    }

    fclose(f);

    return s;
}


/* what the fake server was sent, and wrote (its pid) */
static char *
rg_test_fake_log(rg_test_ctx_t *t)
{
    return rg_test_read(t->log);
}


/* what reagent logged (t->logging) */
static char *
rg_test_errlog(rg_test_ctx_t *t)
{
    return rg_test_read(t->errlog);
}


/* how many lines of the log hold all of a and b */
static int
rg_test_count_lines(const char *log, const char *a, const char *b)
{
    int          n;
    const char  *p, *nl;
    char         line[8192];

    n = 0;

    for (p = log; *p; p = nl ? nl + 1 : p + strlen(p)) {
        nl = strchr(p, '\n');
        snprintf(line, sizeof(line), "%.*s",
                 (int) (nl ? nl - p : (long) strlen(p)), p);

        if (strstr(line, a) && (b == NULL || strstr(line, b))) {
            n++;
        }
    }

    return n;
}


/* unit: the event stream reader ---------------------------------------- */

typedef struct {
    char                got[8][256];
    char                types[8][32];
    int                 n;
} rg_test_events_t;


static void
rg_test_event(void *data, const char *event, const char *text, size_t len)
{
    rg_test_events_t  *ev;

    ev = data;

    if (ev->n < 8) {
        snprintf(ev->got[ev->n], sizeof(ev->got[0]), "%.*s", (int) len, text);
        snprintf(ev->types[ev->n], sizeof(ev->types[0]), "%s", event);
        ev->n++;
    }
}


static void
rg_test_sse_feed(const char *stream, size_t step, rg_test_events_t *ev,
    rg_mcp_sse_t *p)
{
    size_t  i, n;

    memset(ev, 0, sizeof(*ev));
    rg_mcp_sse_init(p, 1024);

    n = strlen(stream);

    for (i = 0; i < n; i += step) {
        assert_int_equal(rg_mcp_sse_feed(p, stream + i, rg_min(step, n - i),
                                         rg_test_event, ev), RG_OK);
    }
}


static void
rg_test_sse(void **state)
{
    size_t             step;
    rg_mcp_sse_t       p;
    rg_test_events_t   ev;
    const char        *stream;
    char               big[2048];

    /* the priming event of server-everything, a comment, two messages,
     * the second of two data lines, split anywhere */
    stream = "id: 62973109\ndata: \n\n"
             ": keepalive\n\n"
             "event: message\nid: c284\ndata: {\"id\":1}\n\n"
             "retry: 500\ndata: {\"a\":\ndata: 2}\n\n";

    for (step = 1; step <= strlen(stream); step++) {
        rg_test_sse_feed(stream, step, &ev, &p);
        assert_int_equal(ev.n, 2);
        assert_string_equal(ev.got[0], "{\"id\":1}");
        assert_string_equal(ev.types[0], "message");
        assert_string_equal(ev.got[1], "{\"a\":\n2}");
        assert_string_equal(p.last_id, "c284");
        assert_int_equal(p.retry, 500);
        rg_mcp_sse_end(&p);
    }

    /* CRLF and CR alone end lines too; a BOM opens it; "data" without a
     * colon is an empty line of data; another event type is told */
    rg_test_sse_feed("\xef\xbb\xbf" "data:x\r\n\r\nevent: ping\rdata: y\r\r"
                     "data\ndata: z\n\n", 1, &ev, &p);
    assert_int_equal(ev.n, 3);
    assert_string_equal(ev.got[0], "x");
    assert_string_equal(ev.types[1], "ping");
    assert_string_equal(ev.got[1], "y");
    assert_string_equal(ev.got[2], "\nz");
    rg_mcp_sse_end(&p);

    /* an event not ended by a blank line is not dispatched; a bad retry
     * is ignored */
    rg_test_sse_feed("retry: 5x\ndata: cut", 3, &ev, &p);
    assert_int_equal(ev.n, 0);
    assert_int_equal(p.retry, -1);
    rg_mcp_sse_end(&p);

    /* data past the bound fails, and keeps failing */
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memset(&ev, 0, sizeof(ev));
    rg_mcp_sse_init(&p, 1024);
    assert_int_equal(rg_mcp_sse_feed(&p, "data: ", 6, rg_test_event, &ev),
                     RG_OK);
    assert_int_equal(rg_mcp_sse_feed(&p, big, strlen(big), rg_test_event,
                                     &ev), RG_ERROR);
    assert_int_equal(rg_mcp_sse_feed(&p, "\n\n", 2, rg_test_event, &ev),
                     RG_ERROR);
    assert_int_equal(ev.n, 0);
    rg_mcp_sse_end(&p);
}


/* unit: names, flags, results ------------------------------------------ */

static void
rg_test_names(void **state)
{
    char      a[RG_MCP_TOOL_NAME_MAX + 1], b[RG_MCP_TOOL_NAME_MAX + 1];
    size_t    i;
    rg_str_t  prefix = rg_string("fs__");

    rg_mcp_tool_name(&prefix, "read_text_file", 0, a);
    assert_string_equal(a, "fs__read_text_file");

    rg_mcp_tool_name(&prefix, "get-sum", 0, a);
    assert_string_equal(a, "fs__get-sum");

    /* what a provider refuses becomes "_" */
    rg_mcp_tool_name(&prefix, "a.b/c d\xc3\xa9", 0, a);
    assert_string_equal(a, "fs__a_b_c_d__");

    /* too long: 64 bytes, a suffix from the whole name, the same each
     * time and another for another name */
    rg_mcp_tool_name(&prefix, "a_tool_name_that_is_far_too_long_for_any_"
                     "provider_to_take_as_it_is_1", 0, a);
    rg_mcp_tool_name(&prefix, "a_tool_name_that_is_far_too_long_for_any_"
                     "provider_to_take_as_it_is_2", 0, b);
    assert_int_equal(strlen(a), 64);
    assert_int_equal(strlen(b), 64);
    assert_string_not_equal(a, b);
    assert_int_equal(memcmp(a, b, 57), 0);
    assert_int_equal(a[57], '_');

    for (i = 0; a[i]; i++) {
        assert_true(strchr("abcdefghijklmnopqrstuvwxyz0123456789_-", a[i])
                    != NULL);
    }

    rg_mcp_tool_name(&prefix, "a_tool_name_that_is_far_too_long_for_any_"
                     "provider_to_take_as_it_is_1", 0, b);
    assert_string_equal(a, b);

    /* a collision is made unique the same way */
    rg_mcp_tool_name(&prefix, "get.sum", 1, a);
    rg_mcp_tool_name(&prefix, "get_sum", 1, b);
    assert_string_not_equal(a, b);
    assert_int_equal(strncmp(a, "fs__get_sum_", 12), 0);
}


static void
rg_test_flags(void **state)
{
    json_t               *an;
    rg_array_t           *ov;
    rg_pool_t            *pool;
    rg_mcp_tool_flags_t  *o;

    /* none: the protocol's defaults, a destructive tool with effects */
    assert_int_equal(rg_mcp_tool_flags(NULL, "x", NULL),
                     RG_TOOL_DANGEROUS | RG_TOOL_SIDE_EFFECT);

    an = json_pack("{s:b}", "readOnlyHint", 1);
    assert_int_equal(rg_mcp_tool_flags(an, "x", NULL),
                     RG_TOOL_READ_ONLY | RG_TOOL_IDEMPOTENT);
    json_decref(an);

    /* read-only wins over destructive */
    an = json_pack("{s:b, s:b}", "readOnlyHint", 1, "destructiveHint", 1);
    assert_int_equal(rg_mcp_tool_flags(an, "x", NULL),
                     RG_TOOL_READ_ONLY | RG_TOOL_IDEMPOTENT);
    json_decref(an);

    /* write_file of server-filesystem */
    an = json_pack("{s:b, s:b, s:b}", "readOnlyHint", 0, "idempotentHint", 1,
                   "destructiveHint", 1);
    assert_int_equal(rg_mcp_tool_flags(an, "x", NULL),
                     RG_TOOL_DANGEROUS | RG_TOOL_IDEMPOTENT);
    json_decref(an);

    an = json_pack("{s:b}", "destructiveHint", 0);
    assert_int_equal(rg_mcp_tool_flags(an, "x", NULL), RG_TOOL_SIDE_EFFECT);

    /* the operator's word, the last that matches */
    pool = rg_pool_create(1024);
    ov = rg_array_create(pool, 2, sizeof(rg_mcp_tool_flags_t));
    o = rg_array_push(ov);
    o->pattern.data = "*";
    o->pattern.len = 1;
    o->flags = RG_TOOL_DANGEROUS;
    o = rg_array_push(ov);
    o->pattern.data = "x*";
    o->pattern.len = 2;
    o->flags = RG_MCP_FLAGS_NONE;

    assert_int_equal(rg_mcp_tool_flags(an, "xy", ov), 0);
    assert_int_equal(rg_mcp_tool_flags(an, "yx", ov), RG_TOOL_DANGEROUS);

    json_decref(an);
    rg_pool_destroy(pool);
}


static char *
rg_test_result(const char *json, rg_uint_t *failed)
{
    char      *s;
    json_t    *r;
    rg_buf_t   b;

    memset(&b, 0, sizeof(b));
    r = json_loads(json, 0, NULL);
    assert_non_null(r);
    assert_int_equal(rg_mcp_result_text(r, &b, failed), RG_OK);
    json_decref(r);

    s = strdup(b.data);
    rg_buf_free(&b);

    return s;
}


static void
rg_test_results(void **state)
{
    char       *s;
    json_t     *r;
    rg_buf_t    b;
    rg_uint_t   failed;

    s = rg_test_result("{\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                       "{\"type\":\"image\",\"data\":\"" 
                       "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                       "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                       "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                       "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                       "\",\"mimeType\":\"image/png\"},"
                       "{\"type\":\"audio\",\"data\":\"\",\"mimeType\":"
                       "\"audio/wav\"},"
                       "{\"type\":\"resource_link\",\"uri\":\"demo://r/1\","
                       "\"name\":\"R 1\"},"
                       "{\"type\":\"resource\",\"resource\":{\"uri\":\"f:///a\","
                       "\"mimeType\":\"text/plain\",\"text\":\"inside\"}},"
                       "{\"type\":\"resource\",\"resource\":{\"uri\":\"f:///b\","
                       "\"blob\":\"AAAA\"}},"
                       "{\"type\":\"hologram\"}],"
                       "\"structuredContent\":{\"a\":1}}", &failed);
    assert_int_equal(failed, 0);
    assert_string_equal(s, "a\n[image image/png, 156 bytes]\n"
                        "[audio audio/wav, 0 bytes]\n"
                        "[resource link demo://r/1 \"R 1\"]\n"
                        "[resource f:///a, text/plain]\ninside\n"
                        "[resource f:///b, of unknown type, 3 bytes]\n"
                        "[hologram content]");
    free(s);

    /* without text, the structure itself */
    s = rg_test_result("{\"content\":[],\"structuredContent\":"
                       "{\"temperature\":36}}", &failed);
    assert_string_equal(s, "{\"temperature\":36}");
    free(s);

    s = rg_test_result("{\"content\":[{\"type\":\"text\",\"text\":\"no\"}],"
                       "\"isError\":true}", &failed);
    assert_int_equal(failed, 1);
    assert_string_equal(s, "no");
    free(s);

    s = rg_test_result("{}", &failed);
    assert_string_equal(s, "(the tool returned no content)");
    free(s);

    memset(&b, 0, sizeof(b));
    r = json_string("not a result");
    assert_int_equal(rg_mcp_result_text(r, &b, &failed), RG_ERROR);
    json_decref(r);
    rg_buf_free(&b);
}


/* the configuration ---------------------------------------------------- */

static void
rg_test_conf_error(const char *conf, const char *expect)
{
    char         err[512];
    rg_cycle_t  *cycle;

    cycle = rg_test_cycle(err, sizeof(err),
                          "llm m { base_url http://127.0.0.1:1/v1; model x; }"
                          "\n%s\n", conf);
    if (cycle) {
        print_error("accepted: %s\n", conf);
        rg_cycle_destroy(cycle);
        fail();
    }

    if (strstr(err, expect) == NULL) {
        print_error("configuration: %s\n  error: \"%s\"\n  expected: \"%s\"\n",
                    conf, err, expect);
        fail();
    }
}


static void
rg_test_conf(void **state)
{
    char         err[512];
    rg_cycle_t  *cycle;

    unsetenv("RG_TEST_MCP_UNSET");

    rg_test_conf_error("mcp fs { } agent a { }",
                       "\"mcp\" directive needs either \"command\" (a program "
                       "over stdio) or \"url\" (Streamable HTTP), not both in "
                       "test.conf:2");
    rg_test_conf_error("mcp fs { command x; url http://h/; } agent a { }",
                       "needs either \"command\"");
    rg_test_conf_error("mcp f__s { command x; } agent a { }",
                       "expects a name without \"__\"");
    rg_test_conf_error("mcp fs_ { command x; } agent a { }",
                       "not ending in \"_\"");
    rg_test_conf_error("mcp f.s { command x; } agent a { }",
                       "expects a name of letters, digits");
    rg_test_conf_error("mcp a234567890123456789012345678901234 { command x; }"
                       " agent a { }", "at most 32 long");
    rg_test_conf_error("mcp fs { command x; } mcp fs { command y; } "
                       "agent a { }", "an mcp server of that name exists");
    rg_test_conf_error("mcp fs { url ftp://h/; } agent a { }",
                       "neither http:// nor https://");
    rg_test_conf_error("mcp fs { url http://h/; env HOME; } agent a { }",
                       "only a \"command\" gets");
    rg_test_conf_error("mcp fs { command x; header A b; } agent a { }",
                       "only a \"url\" gets");
    rg_test_conf_error("mcp fs { url http://h/; header A \"$RG_TEST_MCP_UNSET\";"
                       " } agent a { }", "\"RG_TEST_MCP_UNSET\", which is not "
                       "set");
    rg_test_conf_error("mcp fs { url http://h/; header \"A:B\" x; } agent a { }",
                       "without blanks or \":\"");
    rg_test_conf_error("mcp fs { url http://h/; header Mcp-Session-Id x; } "
                       "agent a { }", "the protocol's own headers");
    rg_test_conf_error("mcp fs { url http://h/; header A \"${RG_TEST_MCP_UNSET\";"
                       " } agent a { }", "without its \"}\"");
    rg_test_conf_error("mcp fs { url http://h/; header A \"a\\nb\"; } "
                       "agent a { }", "control character");
    rg_test_conf_error("mcp fs { command x; secret_env RG_TEST_MCP_UNSET; } "
                       "agent a { }", "\"RG_TEST_MCP_UNSET\", which is not set");
    rg_test_conf_error("mcp fs { command x; env 1X; } agent a { }",
                       "expects the name of an environment variable");
    rg_test_conf_error("mcp fs { command x; env A 1; env A 2; } agent a { }",
                       "names a variable twice");
    rg_test_conf_error("mcp fs { command x; tool_flags w read_only maybe; } "
                       "agent a { }", "expects flags among");
    rg_test_conf_error("mcp fs { command x; tool_flags w none dangerous; } "
                       "agent a { }", "takes \"none\" alone");
    rg_test_conf_error("mcp fs { command x; tool_flags w read_only "
                       "side_effect; } agent a { }", "both read_only and "
                       "side_effect");
    rg_test_conf_error("mcp fs { command x; protocol 2024; } agent a { }",
                       "\"protocol\" directive");
    rg_test_conf_error("mcp fs { command x; max_message 100; } agent a { }",
                       "\"max_message\" must be 1k or more");
    rg_test_conf_error("mcp fs { command x; restart_backoff 5s 1s; } "
                       "agent a { }", "a longest wait no shorter");
    rg_test_conf_error("mcp fs { command x; bogus 1; } agent a { }",
                       "unknown directive \"bogus\"");

    /* agents: a prefix with no mcp block is an unknown tool; a name of
     * an mcp block's must be one a model takes */
    rg_test_conf_error("agent a { tools gh__read; }",
                       "agent \"a\" names an unknown tool \"gh__read\"");
    rg_test_conf_error("mcp fs { command x; } agent a { tools fs__a.b; }",
                       "\"fs__a.b\" is not a tool name a model accepts");
    rg_test_conf_error("mcp fs { command x; } agent a { tools fs__*; "
                       "approve gh__x; }", "\"approve\" names \"gh__x\", "
                       "which is not in its \"tools\"");
    rg_test_conf_error("mcp fs { command x; } agent a { tools fs__read; "
                       "tool_timeout fs__write 1s; }", "\"tool_timeout\" names "
                       "\"fs__write\"");
    rg_test_conf_error("mcp fs { command x; } agent a { tools fs__read "
                       "fs__read; }", "lists tool \"fs__read\" twice");

    /* what is accepted: patterns, names, and per-tool directives on
     * tools a pattern takes */
    cycle = rg_test_cycle(err, sizeof(err),
                          "llm m { base_url http://127.0.0.1:1/v1; model x; }\n"
                          "mcp fs { command /bin/true; tool_timeout 5s; "
                          "tool_flags write_* dangerous; protocol session; }\n"
                          "mcp web { url https://example.com/mcp; header "
                          "Authorization \"Bearer ${" RG_TEST_KEY_ENV "}\"; }\n"
                          "agent a { tools fs__* web__search; approve "
                          "fs__write_file; tool_timeout fs__read_file 2s; "
                          "tool_max_calls web__search 3; }\n");
    if (cycle == NULL) {
        print_error("%s\n", err);
    }
    assert_non_null(cycle);
    rg_cycle_destroy(cycle);
}


/* `reagent -t` and a master read the configuration: nothing starts then */
static void
rg_test_no_start(void **state)
{
    char             err[512], path[PATH_MAX];
    rg_cycle_t      *cycle;
    rg_engine_t     *e;
    struct stat      st;
    rg_test_ctx_t   *t;

    t = *state;

    snprintf(path, sizeof(path), "%s/started-%d", rg_test_tmpdir(),
             (int) getpid());
    unlink(path);

    cycle = rg_test_cycle(err, sizeof(err),
                          "llm m { base_url http://127.0.0.1:1/v1; model x; }\n"
                          "mcp x { command /bin/sh -c \"touch %s; exit 1\"; "
                          "start_timeout 2s; }\n"
                          "agent a { tools x__*; }\n", path);
    assert_non_null(cycle);
    assert_int_equal(stat(path, &st), -1);

    /* an engine starts it (it exits: the engine starts anyway) */
    e = rg_engine_create(cycle, cycle->log);
    assert_non_null(e);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(rg_mcp_ctx(e)->servers[0].state, RG_MCP_DOWN);
    /* its exit seen, or (on a loaded machine) the first write to it
     * finding it gone */
    if (strstr(rg_mcp_ctx(e)->servers[0].why, "it closed its input")
        == NULL)
    {
        rg_test_contains(rg_mcp_ctx(e)->servers[0].why, "exit status 1");
    }

    rg_engine_destroy(e);
    rg_cycle_destroy(cycle);
    unlink(path);

    RG_UNUSED(t);
}


/* through the loop ------------------------------------------------------ */

static void
rg_test_parallel(void **state)
{
    char             *log, script[2048], lname[RG_MCP_TOOL_NAME_MAX + 1];
    const char       *r;
    rg_str_t          prefix = rg_string("fk__");
    rg_test_ctx_t    *t;
    rg_mcp_server_t  *s;

    t = *state;

    rg_mcp_tool_name(&prefix, "a.very/long tool name that no model would "
                     "take as it is, over sixty-four bytes", 0, lname);

    /* calls in one answer: the slow ones answer last, out of order */
    snprintf(script, sizeof(script), "[{\"message\": {\"tool_calls\": ["
        "{\"id\": \"c1\", \"name\": \"fk__slow\", \"arguments\": "
            "{\"ms\": 400, \"text\": \"first\"}},"
        "{\"id\": \"c2\", \"name\": \"fk__echo\", \"arguments\": "
            "{\"text\": \"second\"}},"
        "{\"id\": \"c3\", \"name\": \"fk__slow\", \"arguments\": "
            "{\"ms\": 150, \"text\": \"third\"}},"
        "{\"id\": \"c4\", \"name\": \"fk__fail\", \"arguments\": {}},"
        "{\"id\": \"c5\", \"name\": \"fk__nope\", \"arguments\": {}},"
        "{\"id\": \"c6\", \"name\": \"fk__echo\", \"arguments\": "
            "{\"text\": 42}},"
        "{\"id\": \"c7\", \"name\": \"%s\", \"arguments\": {}}"
        "]}}, {\"message\": {\"content\": \"done\"}}]", lname);

    rg_test_mock(t, script);

    rg_test_engine(t, "good", NULL, NULL);

    s = rg_test_server(t);
    assert_int_equal(s->state, RG_MCP_READY);
    assert_string_equal(s->version, "2025-11-25");
    assert_int_equal(s->list->n, 13);
    assert_non_null(rg_mcp_find_tool(rg_mcp_ctx(t->engine), lname));
    assert_ptr_equal(rg_mcp_find_tool(rg_mcp_ctx(t->engine), "fk__echo"),
                     rg_tool_list_find(s->list, "fk__echo", 8));
    assert_string_equal(rg_tool_list_find(s->list, "fk__echo", 8)->tool->name,
                        "fk__echo");
    /* unknown, a prefix of a name, a name with more after it */
    assert_null(rg_mcp_find_tool(rg_mcp_ctx(t->engine), "fk__nope"));
    assert_null(rg_mcp_find_tool(rg_mcp_ctx(t->engine), "fk__ech"));
    assert_null(rg_mcp_find_tool(rg_mcp_ctx(t->engine), "fk__echoes"));
    assert_null(rg_tool_list_find(s->list, "fk__echoes", 7));
    assert_null(rg_tool_list_find(NULL, "fk__echo", 8));

    rg_test_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    assert_string_equal(rg_test_tool_result(t, "c1"), "slow: first");
    assert_string_equal(rg_test_tool_result(t, "c2"), "echo: second");
    assert_string_equal(rg_test_tool_result(t, "c3"), "slow: third");
    assert_string_equal(rg_test_tool_result(t, "c4"),
                        "error: fk__fail failed: it failed on purpose");
    rg_test_contains(rg_test_tool_result(t, "c5"),
                     "error: unknown tool \"fk__nope\"; the tools you can "
                     "call are: fk__echo, fk__slow");
    /* coerced to the schema's string before the server saw it */
    assert_string_equal(rg_test_tool_result(t, "c6"), "echo: 42");

    /* the long name: cut, suffixed, and mapped back to the server's */
    assert_int_equal(strlen(lname), 64);
    r = rg_test_tool_result(t, "c7");
    assert_string_equal(r, "a.very/long tool name that no model would take "
                        "as it is, over sixty-four bytes: ");

    log = rg_test_fake_log(t);
    assert_int_equal(rg_test_count_lines(log, "\"tools/call\"", NULL), 6);
    assert_int_equal(rg_test_count_lines(log, "\"initialize\"", NULL), 1);
    assert_int_equal(rg_test_count_lines(log, "notifications/initialized",
                                         NULL), 1);
    /* auto: the stateless revision was asked about first */
    assert_int_equal(rg_test_count_lines(log, "server/discover",
                                         "io.modelcontextprotocol/"
                                         "protocolVersion"), 1);
    rg_test_contains(log, "\"name\":\"a.very/long tool name that no model "
                     "would take as it is, over sixty-four bytes\"");
    free(log);
}


/* An isError text is the model's only clue: 3,000 bytes reach it whole
 * (they were cut at 900, silently); 9,000 are trimmed as any result is
 * (tool_result_limit, 4000 by default: head and tail, the cut said). */
static void
rg_test_long_error(void **state)
{
    const char     *r, *p;
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_mock(t, "[{\"message\": {\"tool_calls\": ["
        "{\"id\": \"c1\", \"name\": \"fk__fail\", \"arguments\": "
            "{\"text\": \"long:3000\"}},"
        "{\"id\": \"c2\", \"name\": \"fk__fail\", \"arguments\": "
            "{\"text\": \"long:9000\"}}"
        "]}}, {\"message\": {\"content\": \"done\"}}]");

    rg_test_engine(t, "good", NULL, NULL);

    rg_test_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);
    assert_int_equal(t->s->tool_errors, 2);

    /* whole: the prefix, then every byte the server sent */
    r = rg_test_tool_result(t, "c1");
    p = "error: fk__fail failed: BEGIN-";
    assert_int_equal(strncmp(r, p, strlen(p)), 0);
    assert_int_equal(strlen(r), strlen("error: fk__fail failed: ") + 3000);
    assert_string_equal(r + strlen(r) - 4, "-END");
    rg_test_lacks(r, "left out");

    /* over the limit: its head and its tail, and what was left out said */
    r = rg_test_tool_result(t, "c2");
    assert_int_equal(strncmp(r, p, strlen(p)), 0);
    assert_string_equal(r + strlen(r) - 4, "-END");
    rg_test_contains(r, " bytes left out …]");
    assert_true(strlen(r) < 4000 + 64);
}


/* how many notifications/cancelled, for the reason, the fake server got
 * with the id of the (first) call of its tool name */
static int
rg_test_cancelled(rg_test_ctx_t *t, const char *name, const char *reason)
{
    int          n;
    char        *log, call[128], id[256];
    const char  *p;

    log = rg_test_fake_log(t);

    snprintf(call, sizeof(call), "\"name\":\"%s\"", name);
    p = strstr(log, call);
    if (p == NULL) {
        free(log);
        return 0;
    }
    while (p > log && p[-1] != '\n') {
        p--;
    }
    p = strstr(p, "\"id\":");
    if (p == NULL) {
        free(log);
        return 0;
    }

    /* as reagent writes it: the id, then the reason */
    snprintf(id, sizeof(id), "\"requestId\":%d,\"reason\":\"%s\"",
             atoi(p + 5), reason);
    n = rg_test_count_lines(log, "notifications/cancelled", id);

    free(log);

    return n;
}


static void
rg_test_timeout_cancel(void **state)
{
    char            *log, id[64];
    const char      *p;
    rg_test_ctx_t   *t;

    t = *state;

    rg_test_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"h1\", \"name\": "
            "\"fk__hang\", \"arguments\": {}}]}},"
        "{\"message\": {\"tool_calls\": [{\"id\": \"e1\", \"name\": "
            "\"fk__echo\", \"arguments\": {\"text\": \"after\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    rg_test_engine(t, "good", NULL, "tool_timeout fk__hang 300ms;");

    rg_test_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    assert_string_equal(rg_test_tool_result(t, "h1"), "error: fk__hang timed "
                        "out after 0.3s; try a smaller request or another "
                        "approach");
    assert_string_equal(rg_test_tool_result(t, "e1"), "echo: after");

    /* the server was told, with the id of the call it got */
    log = rg_test_fake_log(t);
    p = strstr(log, "\"name\":\"hang\"");
    assert_non_null(p);
    while (p > log && p[-1] != '\n') {
        p--;
    }
    p = strstr(p, "\"id\":");
    assert_non_null(p);
    snprintf(id, sizeof(id), "\"requestId\":%d", atoi(p + 5));

    assert_int_equal(rg_test_count_lines(log, "notifications/cancelled", id),
                     1);
    rg_test_contains(log, "\"reason\":\"timed out\"");
    free(log);

    /* the session's end cancels a call still running too */
    assert_int_equal(rg_test_server(t)->pending, 0);
}


/* the mcp block's tool_timeout, with no timeout in the agent */
static void
rg_test_block_timeout(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"h1\", \"name\": "
            "\"fk__hang\", \"arguments\": {}}]}},"
        "{\"message\": {\"tool_calls\": [{\"id\": \"e1\", \"name\": "
            "\"fk__echo\", \"arguments\": {\"text\": \"after\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    rg_test_engine(t, "good", "tool_timeout 300ms;", NULL);

    rg_test_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    assert_string_equal(rg_test_tool_result(t, "h1"), "error: fk__hang timed "
                        "out after 0.3s; try a smaller request or another "
                        "approach");
    assert_int_equal(rg_test_cancelled(t, "hang", "timed out"), 1);
    assert_string_equal(rg_test_tool_result(t, "e1"), "echo: after");
}


/* the agent's tool_timeout for one tool wins over the block's, and the
 * block's over the agent's for all its tools */
static void
rg_test_timeout_override(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_mock(t, "["
        "{\"message\": {\"tool_calls\": ["
            "{\"id\": \"h1\", \"name\": \"fk__hang\", \"arguments\": {}},"
            "{\"id\": \"s1\", \"name\": \"fk__slow\", \"arguments\": "
            "{\"ms\": 4000, \"text\": \"late\"}}]}},"
        "{\"message\": {\"tool_calls\": [{\"id\": \"e1\", \"name\": "
            "\"fk__echo\", \"arguments\": {\"text\": \"after\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    rg_test_engine(t, "good", "tool_timeout 300ms;",
                   "tool_timeout 5s; tool_timeout fk__hang 600ms;");

    rg_test_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    assert_string_equal(rg_test_tool_result(t, "h1"), "error: fk__hang timed "
                        "out after 0.6s; try a smaller request or another "
                        "approach");
    assert_string_equal(rg_test_tool_result(t, "s1"), "error: fk__slow timed "
                        "out after 0.3s; try a smaller request or another "
                        "approach");
    /* answered after the server read the cancellations before it */
    assert_string_equal(rg_test_tool_result(t, "e1"), "echo: after");
    assert_int_equal(rg_test_cancelled(t, "hang", "timed out"), 1);
    assert_int_equal(rg_test_cancelled(t, "slow", "timed out"), 1);
}


static void
rg_test_garbage(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"g1\", \"name\": "
            "\"fk__garbage\", \"arguments\": {}}]}},"
        "{\"message\": {\"tool_calls\": [{\"id\": \"b1\", \"name\": "
            "\"fk__big\", \"arguments\": {}}]}},"
        "{\"message\": {\"tool_calls\": [{\"id\": \"e1\", \"name\": "
            "\"fk__echo\", \"arguments\": {\"text\": \"still here\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    rg_test_engine(t, "good", "max_message 64k;", "tool_timeout fk__big 500ms;");

    rg_test_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    /* garbage is skipped, the answer after it read */
    assert_string_equal(rg_test_tool_result(t, "g1"),
                        "answered after garbage");
    /* a line, an object that is no message, and the two items of an
     * array; blank lines are no messages */
    assert_int_equal(rg_test_server(t)->skipped, 4);

    /* a message over max_message is dropped: that call times out */
    rg_test_contains(rg_test_tool_result(t, "b1"), "timed out");

    /* and the server is the same process, still serving */
    assert_string_equal(rg_test_tool_result(t, "e1"), "echo: still here");
    assert_int_equal(rg_test_server(t)->state, RG_MCP_READY);
}


static void
rg_test_crash(void **state)
{
    char           *log;
    const char     *r;
    rg_test_ctx_t  *t;

    t = *state;

    /* it dies in turn 1; turn 2 comes while it is down; turn 3 after it
     * is back */
    rg_test_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"x1\", \"name\": "
            "\"fk__crash\", \"arguments\": {}},"
            "{\"id\": \"s1\", \"name\": \"fk__slow\", \"arguments\": "
            "{\"ms\": 5000, \"text\": \"lost\"}}]}},"
        "{\"message\": {\"tool_calls\": [{\"id\": \"e1\", \"name\": "
            "\"fk__echo\", \"arguments\": {\"text\": \"too soon\"}}]}},"
        "{\"delay_ms\": 1500, \"message\": {\"tool_calls\": [{\"id\": \"e2\","
            " \"name\": \"fk__echo\", \"arguments\": {\"text\": \"back\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    t->logging = 1;
    rg_test_engine(t, "good", "restart_backoff 1s 2s;", NULL);

    rg_test_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    r = rg_test_tool_result(t, "x1");
    rg_test_contains(r, "error: fk__crash failed: the MCP server \"fk\" "
                     "failed before it answered (its process exited (exit "
                     "status 3)); whether the call took effect is unknown");
    /* the other call of that turn: in flight when it died, or written
     * after it had gone (EPIPE), as the two processes ran */
    r = rg_test_tool_result(t, "s1");
    rg_test_contains(r, "error: fk__slow failed: the MCP server \"fk\" ");
    if (strstr(r, "exit status 3") == NULL) {
        rg_test_contains(r, "is not available (it closed its input)");
    }

    rg_test_contains(rg_test_tool_result(t, "e1"), "error: fk__echo failed: "
                     "the MCP server \"fk\" is not running (its process "
                     "exited (exit status 3)); it is started again in");

    assert_string_equal(rg_test_tool_result(t, "e2"), "echo: back");

    log = rg_test_fake_log(t);
    assert_int_equal(rg_test_count_lines(log, "pid ", NULL), 2);
    assert_int_equal(rg_test_count_lines(log, "\"initialize\"", NULL), 2);
    free(log);

    /* its stderr reached the log as it came, and again when it died */
    log = rg_test_errlog(t);
    assert_int_equal(rg_test_count_lines(log, "[info]", "mcp \"fk\" stderr: "
                                         "crashing now, as asked"), 1);
    assert_int_equal(rg_test_count_lines(log, "[warn]", "mcp \"fk\": its "
                                         "process exited (exit status 3); "
                                         "its stderr said: crashing now, as "
                                         "asked"), 1);
    free(log);
}


/* the engine's reactor runs for ms */
static void
rg_test_spin(rg_test_ctx_t *t, rg_msec_t ms)
{
    struct timeval  tv;

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;

    event_base_loopexit(t->engine->base, &tv);
    event_base_dispatch(t->engine->base);
}


/* a server that exits as soon as it starts: the waits before each start
 * double from restart_backoff's first up to its longest */
static void
rg_test_backoff(void **state)
{
    int             i, n;
    char           *log, *p, got[8][16];
    long long       at[8];
    rg_test_ctx_t  *t;

    static const char  *want[] = { "0.1s", "0.2s", "0.4s", "0.4s" };
    static const int    least[] = { 100, 200, 400, 400 };

    t = *state;

    t->logging = 1;
    rg_test_engine(t, "exit", "restart_backoff 100ms 400ms;", NULL);

    /* five starts: the first and four after a wait (within a minute, as
     * a loaded machine may take its time) */
    for (i = 0; i < 600; i++) {
        log = rg_test_fake_log(t);
        n = rg_test_count_lines(log, "pid ", NULL);
        free(log);

        if (n >= 5) {
            break;
        }

        rg_test_spin(t, 100);
    }

    assert_true(n >= 5);

    /* what the log says it waits */
    log = rg_test_errlog(t);
    n = 0;
    for (p = log; n < 8 && (p = strstr(p, "; starting it again in ")); n++) {
        p += strlen("; starting it again in ");
        sscanf(p, "%15s", got[n]);
    }
    free(log);

    assert_true(n >= 4);
    for (i = 0; i < 4; i++) {
        assert_string_equal(got[i], want[i]);
    }

    /* and at least that long passed between a start and the next */
    log = rg_test_fake_log(t);
    n = 0;
    for (p = log; n < 8 && (p = strstr(p, "pid ")); n++, p++) {
        p = strstr(p, " at ");
        assert_non_null(p);
        at[n] = atoll(p + 4);
    }
    free(log);

    assert_true(n >= 5);
    for (i = 0; i < 4; i++) {
        if (at[i + 1] - at[i] < least[i]) {
            print_error("start %d came %lld ms after the one before it\n",
                        i + 2, at[i + 1] - at[i]);
            fail();
        }
    }

    /* what it said on stderr before each of the four ends */
    log = rg_test_errlog(t);
    assert_true(rg_test_count_lines(log, "mcp \"fk\" stderr: exiting at "
                                    "once, as asked", NULL) >= 4);
    free(log);
}


static void
rg_test_list_changed(void **state)
{
    char            *req;
    rg_test_ctx_t   *t;

    t = *state;

    rg_test_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"a1\", \"name\": "
            "\"fk__addtool\", \"arguments\": {}}]}},"
        "{\"delay_ms\": 300, \"message\": {\"content\": \"done\"}}]");

    rg_test_engine(t, "good", NULL, "approve fk__addtool;");
    assert_int_equal(rg_test_server(t)->list->n, 13);

    rg_test_session(t, "a", "one");
    assert_int_equal(t->s->state, RG_SESSION_DONE);
    assert_string_equal(rg_test_tool_result(t, "a1"), "added");

    /* the session kept the tools it started with */
    req = rg_test_mock_get(t->mock, "/last_request");
    rg_test_lacks(req, "\"fk__extra\"");
    free(req);

    assert_int_equal(rg_test_server(t)->list->n, 14);

    /* the next one gets the new one */
    rg_test_session(t, "a", "two");
    req = rg_test_mock_get(t->mock, "/last_request");
    rg_test_contains(req, "\"fk__extra\"");
    free(req);
}


static void
rg_test_bad_version(void **state)
{
    rg_test_ctx_t    *t;
    rg_mcp_server_t  *s;

    t = *state;

    rg_test_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"e1\", \"name\": "
            "\"fk__echo\", \"arguments\": {\"text\": \"x\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    rg_test_engine(t, "badversion", NULL, "tools fk__echo;");

    s = rg_test_server(t);
    assert_int_equal(s->state, RG_MCP_FAILED);
    assert_string_equal(s->why, "it speaks MCP protocol version "
                        "\"1999-01-01\" and reagent speaks " RG_MCP_VERSIONS_TEXT);
    assert_null(s->list);
    assert_false(s->restart_set);

    /* its tools are not offered: the model is told */
    rg_test_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);
    assert_string_equal(rg_test_tool_result(t, "e1"), "error: unknown tool "
                        "\"fk__echo\"; the tools you can call are: none");
}


static void
rg_test_silent_discover(void **state)
{
    char           *log;
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_engine(t, "silent", "start_timeout 2s;", NULL);

    assert_int_equal(rg_test_server(t)->state, RG_MCP_READY);
    assert_string_equal(rg_test_server(t)->version, "2025-11-25");

    log = rg_test_fake_log(t);
    assert_int_equal(rg_test_count_lines(log, "server/discover", NULL), 1);
    assert_int_equal(rg_test_count_lines(log, "\"initialize\"", NULL), 1);
    free(log);
}


/* a server that never answers its handshake: the engine waits for it
 * no longer than its start_timeout and starts without its tools; it is
 * tried again, and a call of its tool is told so */
static void
rg_test_mute(void **state)
{
    char             *log;
    rg_msec_t         start, took;
    rg_test_ctx_t    *t;
    rg_mcp_server_t  *s;

    t = *state;

    rg_test_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"e1\", \"name\": "
            "\"fk__echo\", \"arguments\": {\"text\": \"x\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    t->logging = 1;
    start = rg_monotonic_msec();
    rg_test_engine(t, "mute", "start_timeout 1s;", NULL);
    took = rg_monotonic_msec() - start;

    /* its start_timeout ended the wait, not the engine's own bound on it
     * (start_timeout + 0.5s, after which it would still be starting) */
    s = rg_test_server(t);
    assert_int_equal(s->state, RG_MCP_DOWN);
    assert_string_equal(s->why, "it did not finish starting within 1s "
                        "(start_timeout)");
    assert_true(s->restart_set);
    assert_null(s->list);
    assert_true(took >= 1000 - RG_TEST_CLOCK_SLACK);

    /* it was sent the handshake, and never got further */
    log = rg_test_fake_log(t);
    assert_int_equal(rg_test_count_lines(log, "\"initialize\"", NULL), 1);
    assert_int_equal(rg_test_count_lines(log, "tools/list", NULL), 0);
    free(log);

    log = rg_test_errlog(t);
    rg_test_contains(log, "mcp \"fk\": it did not finish starting within "
                     "1s (start_timeout); starting it again in 0.1s");
    rg_test_lacks(log, "still starting");
    free(log);

    /* the engine runs sessions; its tool is not there, and the model is
     * told which are */
    rg_test_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);
    assert_string_equal(rg_test_tool_result(t, "e1"), "error: unknown tool "
                        "\"fk__echo\"; the tools you can call are: none");
    assert_int_not_equal(rg_test_server(t)->state, RG_MCP_READY);
}


/* a server that closes its input (and lives on): the write that finds
 * out says so, in the log and in why */
static void
rg_test_closed_input(void **state)
{
    char             *log;
    rg_test_ctx_t    *t;
    rg_mcp_server_t  *s;

    t = *state;

    t->logging = 1;
    rg_test_engine(t, "ignore-input", NULL, NULL);

    s = rg_test_server(t);
    assert_int_equal(s->state, RG_MCP_DOWN);
    assert_string_equal(s->why, "it closed its input");

    log = rg_test_errlog(t);
    rg_test_contains(log, "mcp \"fk\": it closed its input; starting it "
                     "again in 0.1s");
    free(log);
}


static void
rg_test_session_protocol(void **state)
{
    char           *log;
    rg_test_ctx_t  *t;

    t = *state;

    /* protocol session: straight to initialize */
    rg_test_engine(t, "good", "protocol session;", NULL);
    assert_int_equal(rg_test_server(t)->state, RG_MCP_READY);

    log = rg_test_fake_log(t);
    assert_int_equal(rg_test_count_lines(log, "server/discover", NULL), 0);
    free(log);

    rg_engine_destroy(t->engine);
    rg_cycle_destroy(t->cycle);
    t->engine = NULL;

    /* protocol stateless, and it speaks only the session-based one */
    rg_test_engine(t, "good", "protocol stateless;", NULL);
    assert_int_equal(rg_test_server(t)->state, RG_MCP_FAILED);
    rg_test_contains(rg_test_server(t)->why, "it does not speak the "
                     "stateless protocol revision 2026-07-28");
}


static void
rg_test_env(void **state)
{
    const char     *r;
    rg_test_ctx_t  *t;

    t = *state;

    setenv("RG_TEST_MCP_TOKEN", RG_TEST_TOKEN, 1);
    setenv("RG_TEST_MCP_PASSED", "passed-through", 1);
    setenv("RG_TEST_MCP_OTHER", "not-passed", 1);

    rg_test_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"v1\", \"name\": "
            "\"fk__env\", \"arguments\": {}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    rg_test_engine(t, "good", "env RG_TEST_MCP_PASSED; env RG_FAKE_SET yes;"
                   " secret_env RG_TEST_MCP_TOKEN;", NULL);

    /* taken out of reagent's own environment */
    assert_null(getenv("RG_TEST_MCP_TOKEN"));

    rg_test_session(t, "a", "go");

    r = rg_test_tool_result(t, "v1");
    rg_test_contains(r, "PATH=");
    rg_test_contains(r, "RG_TEST_MCP_PASSED=passed-through");
    rg_test_contains(r, "RG_FAKE_SET=yes");
    rg_test_contains(r, "FAKE_MODE=good");
    /* the secret reached it, and the model sees it scrubbed */
    rg_test_contains(r, "RG_TEST_MCP_TOKEN=");
    rg_test_lacks(r, RG_TEST_TOKEN);
    /* nothing else of reagent's: the llm's key, HOME, the rest */
    rg_test_lacks(r, "RG_TEST_MCP_OTHER");
    rg_test_lacks(r, RG_TEST_KEY);
    rg_test_lacks(r, RG_TEST_KEY_ENV);
    rg_test_lacks(r, "HOME=");

    unsetenv("RG_TEST_MCP_PASSED");
    unsetenv("RG_TEST_MCP_OTHER");
}


static void
rg_test_ping_approval_dedupe(void **state)
{
    char           *log;
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_mock(t, "["
        "{\"message\": {\"tool_calls\": ["
            "{\"id\": \"p1\", \"name\": \"fk__ping\", \"arguments\": {}},"
            "{\"id\": \"d1\", \"name\": \"fk__destroy\", \"arguments\": {}},"
            "{\"id\": \"t1\", \"name\": \"fk__touch\", \"arguments\": {}},"
            "{\"id\": \"e1\", \"name\": \"fk__echo\", \"arguments\": "
            "{\"text\": \"once\"}}]}},"
        "{\"message\": {\"tool_calls\": ["
            "{\"id\": \"t2\", \"name\": \"fk__touch\", \"arguments\": {}},"
            "{\"id\": \"e2\", \"name\": \"fk__echo\", \"arguments\": "
            "{\"text\": \"once\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    /* a repeat window of 0 leaves the repeat to the dedupe cache */
    rg_test_engine(t, "good", NULL, "repeat_window 0; dedupe session;");

    rg_test_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    /* the server's own request was answered */
    assert_string_equal(rg_test_tool_result(t, "p1"), "pong received");

    /* destructive (destructiveHint left out: true): not approved */
    assert_string_equal(rg_test_tool_result(t, "d1"), "error: fk__destroy is "
                        "a dangerous tool and was not approved; do without "
                        "it or ask the user");

    /* read-only: the second call answered from the first; the other one
     * ran twice */
    assert_string_equal(rg_test_tool_result(t, "e2"), "echo: once");
    assert_string_equal(rg_test_tool_result(t, "t2"), "touch: ");
    assert_int_equal(t->s->dedupe_hits, 1);

    log = rg_test_fake_log(t);
    assert_int_equal(rg_test_count_lines(log, "\"name\":\"echo\"", NULL), 1);
    assert_int_equal(rg_test_count_lines(log, "\"name\":\"touch\"", NULL), 2);
    assert_int_equal(rg_test_count_lines(log, "\"name\":\"destroy\"", NULL),
                     0);
    assert_int_equal(rg_test_count_lines(log, "\"id\":\"srv-ping\"",
                                         "\"result\":{}"), 1);
    free(log);
}


/* the operator's tool_flags replace what the annotations say */
static void
rg_test_flags_override(void **state)
{
    char           *log;
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_mock(t, "["
        "{\"message\": {\"tool_calls\": ["
            "{\"id\": \"d1\", \"name\": \"fk__destroy\", \"arguments\": {}},"
            "{\"id\": \"t1\", \"name\": \"fk__touch\", \"arguments\": {}},"
            "{\"id\": \"e1\", \"name\": \"fk__echo\", \"arguments\": "
            "{\"text\": \"twice\"}}]}},"
        "{\"message\": {\"tool_calls\": ["
            "{\"id\": \"t2\", \"name\": \"fk__touch\", \"arguments\": {}},"
            "{\"id\": \"e2\", \"name\": \"fk__echo\", \"arguments\": "
            "{\"text\": \"twice\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    /* destroy (no destructiveHint: dangerous) is not; echo (read-only)
     * has effects; touch (neither) is read-only */
    rg_test_engine(t, "good",
                   "tool_flags destroy idempotent; tool_flags echo "
                   "side_effect; tool_flags to* read_only;",
                   "repeat_window 0; dedupe session;");

    rg_test_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    assert_string_equal(rg_test_tool_result(t, "d1"), "destroy: ");
    assert_string_equal(rg_test_tool_result(t, "e2"), "echo: twice");
    assert_string_equal(rg_test_tool_result(t, "t2"), "touch: ");
    assert_int_equal(t->s->dedupe_hits, 1);

    log = rg_test_fake_log(t);
    assert_int_equal(rg_test_count_lines(log, "\"name\":\"destroy\"", NULL),
                     1);
    assert_int_equal(rg_test_count_lines(log, "\"name\":\"echo\"", NULL), 2);
    assert_int_equal(rg_test_count_lines(log, "\"name\":\"touch\"", NULL), 1);
    free(log);
}


/* pid has ended (within 10 s): reaped, or a zombie */
static rg_uint_t
rg_test_gone(int pid)
{
    int    i;
    char   path[64], buf[256];
    FILE  *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);

    for (i = 0; i < 1000; i++) {
        if (kill(pid, 0) != 0) {
            return 1;
        }

        f = fopen(path, "r");
        if (f == NULL) {
            return 1;
        }

        buf[0] = '\0';
        if (fgets(buf, sizeof(buf), f) == NULL) {
            buf[0] = '\0';
        }
        fclose(f);

        if (strstr(buf, ") Z") != NULL) {
            return 1;
        }

        usleep(10000);
    }

    return 0;
}


/* the end of a server that does not go when its input ends */
static void
rg_test_stop(void **state)
{
    int             pid;
    char           *log;
    const char     *mode[] = { "good", "ignore-eof", "ignore-term" };
    rg_uint_t       i;
    rg_msec_t       start, took;
    rg_test_ctx_t  *t;

    t = *state;

    for (i = 0; i < 3; i++) {
        unlink(t->log);
        rg_test_engine(t, mode[i], NULL, NULL);
        assert_int_equal(rg_test_server(t)->state, RG_MCP_READY);

        log = rg_test_fake_log(t);
        assert_non_null(strstr(log, "pid "));
        pid = atoi(strstr(log, "pid ") + 4);
        free(log);
        assert_true(pid > 0);

        start = rg_monotonic_msec();
        rg_engine_destroy(t->engine);
        took = rg_monotonic_msec() - start;
        t->engine = NULL;

        rg_cycle_destroy(t->cycle);
        t->cycle = NULL;

        /* gone: reaped, or a zombie for the next reactor to reap; a
         * SIGKILL just sent takes effect when the kernel next runs it,
         * which on a loaded machine may be a while */
        assert_true(rg_test_gone(pid));

        /* the end of its input, then SIGTERM after a second, then
         * SIGKILL after another */
        if (i >= 1) {
            assert_true(took >= 1000 * i - RG_TEST_CLOCK_SLACK);
        }
    }
}


int
main(int argc, char **argv)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_sse),
        cmocka_unit_test(rg_test_names),
        cmocka_unit_test(rg_test_flags),
        cmocka_unit_test(rg_test_results),
        cmocka_unit_test(rg_test_conf),
        cmocka_unit_test_setup_teardown(rg_test_no_start, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_parallel, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_long_error, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_timeout_cancel, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_block_timeout, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_timeout_override,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_garbage, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_crash, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_backoff, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_list_changed, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_bad_version, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_silent_discover,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_mute, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_closed_input, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_session_protocol,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_env, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_ping_approval_dedupe,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_flags_override,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_stop, rg_test_setup,
                                        rg_test_teardown),
    };

    if (argc > 1 && strcmp(argv[1], "--fake-mcp") == 0) {
        return rg_fake_main();
    }

    setenv(RG_TEST_KEY_ENV, RG_TEST_KEY, 1);

    /* as reagent's main does: a server that died may still be written to
     * (EPIPE then, not the signal) */
    signal(SIGPIPE, SIG_IGN);

    return cmocka_run_group_tests_name("mcp", tests, NULL, NULL);
}
