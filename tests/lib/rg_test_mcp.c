/* rg_test_mcp.c: the context of the MCP client's tests (see
 * rg_test_mcp.h). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <rg_test_mcp.h>
#include <rg_test_session.h>

#include <signal.h>


int
rg_test_mcp_setup(void **state)
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


int
rg_test_mcp_teardown(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_engine_end(t->s, t->engine, t->cycle, t->mock);
    json_decref(t->msgs);
    unlink(t->log);
    unlink(t->errlog);
    free(t);

    return 0;
}


/* the mock with this script (JSON text) */
void
rg_test_mcp_mock(rg_test_ctx_t *t, const char *script)
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
void
rg_test_mcp_engine(rg_test_ctx_t *t, const char *mode, const char *mcp,
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

    t->engine = rg_test_engine_of(t->cycle, t->err);
}


rg_mcp_server_t *
rg_test_mcp_server(rg_test_ctx_t *t)
{
    rg_mcp_ctx_t  *ctx;

    ctx = rg_mcp_ctx(t->engine);
    assert_int_equal(ctx->nservers, 1);

    return &ctx->servers[0];
}


rg_session_t *
rg_test_mcp_session(rg_test_ctx_t *t, const char *agent, const char *input)
{
    rg_session_destroy(t->s);

    t->s = rg_test_run(t->engine, agent, input);
    assert_non_null(t->s);
    assert_true(rg_session_final(t->s));

    json_decref(t->msgs);
    t->msgs = rg_test_session_msgs(t->s);

    return t->s;
}


const char *
rg_test_mcp_tool_result(rg_test_ctx_t *t, const char *id)
{
    return rg_test_tool_answer(t->msgs, id);
}


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
char *
rg_test_mcp_fake_log(rg_test_ctx_t *t)
{
    return rg_test_read(t->log);
}


/* what reagent logged (t->logging) */
char *
rg_test_mcp_errlog(rg_test_ctx_t *t)
{
    return rg_test_read(t->errlog);
}


/* how many lines of the log hold all of a and b */
int
rg_test_mcp_count_lines(const char *log, const char *a, const char *b)
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


int
rg_test_mcp_main(int argc, char **argv, const char *name,
    const struct CMUnitTest *tests, size_t n)
{
    if (argc > 1 && strcmp(argv[1], "--fake-mcp") == 0) {
        return rg_test_mcp_fake_main();
    }

    setenv(RG_TEST_KEY_ENV, RG_TEST_KEY, 1);

    signal(SIGPIPE, SIG_IGN);

    return _cmocka_run_group_tests(name, tests, n, NULL, NULL);
}
