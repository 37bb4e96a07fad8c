/* test_mcp_stdio.c: the life of an MCP server over stdio, against the
 * mock model and the fake server (tests/lib/rg_test_mcp.h): a crash and
 * the restart after it (its stderr in the log), restarts after waits that
 * double up to restart_backoff's longest, a list of tools that changes; a
 * server that speaks another protocol version, is silent to
 * server/discover, never answers its handshake (bounded by start_timeout)
 * or closes its input; `protocol session` and `protocol stateless`; the
 * environment it gets (PATH, what its env and secret_env give, the secret
 * scrubbed for the model, nothing else of reagent's: not the llm's key,
 * not HOME); and the end of a server that ignores the end of its input
 * (SIGTERM) or even SIGTERM (SIGKILL). Time is asserted only as lower
 * bounds. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>
#include <rg_mcp_tool.h>
#include <rg_tools.h>
#include <rg_test_mcp.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <event2/event.h>


static void
rg_test_crash(void **state)
{
    char           *log;
    const char     *r;
    rg_test_ctx_t  *t;

    t = *state;

    /* it dies in turn 1; turn 2 comes while it is down; turn 3 after it
     * is back */
    rg_test_mcp_mock(t, "["
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
    rg_test_mcp_engine(t, "good", "restart_backoff 1s 2s;", NULL);

    rg_test_mcp_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    r = rg_test_mcp_tool_result(t, "x1");
    rg_test_contains(r, "error: fk__crash failed: the MCP server \"fk\" "
                     "failed before it answered (its process exited (exit "
                     "status 3)); whether the call took effect is unknown");
    /* the other call of that turn: in flight when it died, or written
     * after it had gone (EPIPE), as the two processes ran */
    r = rg_test_mcp_tool_result(t, "s1");
    rg_test_contains(r, "error: fk__slow failed: the MCP server \"fk\" ");
    if (strstr(r, "exit status 3") == NULL) {
        rg_test_contains(r, "is not available (it closed its input)");
    }

    rg_test_contains(rg_test_mcp_tool_result(t, "e1"), "error: fk__echo failed: "
                     "the MCP server \"fk\" is not running (its process "
                     "exited (exit status 3)); it is started again in");

    assert_string_equal(rg_test_mcp_tool_result(t, "e2"), "echo: back");

    log = rg_test_mcp_fake_log(t);
    assert_int_equal(rg_test_mcp_count_lines(log, "pid ", NULL), 2);
    assert_int_equal(rg_test_mcp_count_lines(log, "\"initialize\"", NULL), 2);
    free(log);

    /* its stderr reached the log as it came, and again when it died */
    log = rg_test_mcp_errlog(t);
    assert_int_equal(rg_test_mcp_count_lines(log, "[info]", "mcp \"fk\" stderr: "
                                         "crashing now, as asked"), 1);
    assert_int_equal(rg_test_mcp_count_lines(log, "[warn]", "mcp \"fk\": its "
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
    rg_test_mcp_engine(t, "exit", "restart_backoff 100ms 400ms;", NULL);

    /* five starts: the first and four after a wait (within a minute, as
     * a loaded machine may take its time) */
    for (i = 0; i < 600; i++) {
        log = rg_test_mcp_fake_log(t);
        n = rg_test_mcp_count_lines(log, "pid ", NULL);
        free(log);

        if (n >= 5) {
            break;
        }

        rg_test_spin(t, 100);
    }

    assert_true(n >= 5);

    /* what the log says it waits */
    log = rg_test_mcp_errlog(t);
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
    log = rg_test_mcp_fake_log(t);
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
    log = rg_test_mcp_errlog(t);
    assert_true(rg_test_mcp_count_lines(log, "mcp \"fk\" stderr: exiting at "
                                    "once, as asked", NULL) >= 4);
    free(log);
}


static void
rg_test_list_changed(void **state)
{
    char            *req;
    rg_test_ctx_t   *t;

    t = *state;

    rg_test_mcp_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"a1\", \"name\": "
            "\"fk__addtool\", \"arguments\": {}}]}},"
        "{\"delay_ms\": 300, \"message\": {\"content\": \"done\"}}]");

    rg_test_mcp_engine(t, "good", NULL, "approve fk__addtool;");
    assert_int_equal(rg_test_mcp_server(t)->list->n, 13);

    rg_test_mcp_session(t, "a", "one");
    assert_int_equal(t->s->state, RG_SESSION_DONE);
    assert_string_equal(rg_test_mcp_tool_result(t, "a1"), "added");

    /* the session kept the tools it started with */
    req = rg_test_mock_get(t->mock, "/last_request");
    rg_test_lacks(req, "\"fk__extra\"");
    free(req);

    assert_int_equal(rg_test_mcp_server(t)->list->n, 14);

    /* the next one gets the new one */
    rg_test_mcp_session(t, "a", "two");
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

    rg_test_mcp_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"e1\", \"name\": "
            "\"fk__echo\", \"arguments\": {\"text\": \"x\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    rg_test_mcp_engine(t, "badversion", NULL, "tools fk__echo;");

    s = rg_test_mcp_server(t);
    assert_int_equal(s->state, RG_MCP_FAILED);
    assert_string_equal(s->why, "it speaks MCP protocol version "
                        "\"1999-01-01\" and reagent speaks " RG_MCP_VERSIONS_TEXT);
    assert_null(s->list);
    assert_false(s->restart_set);

    /* its tools are not offered: the model is told */
    rg_test_mcp_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);
    assert_string_equal(rg_test_mcp_tool_result(t, "e1"), "error: unknown tool "
                        "\"fk__echo\"; the tools you can call are: none");
}


static void
rg_test_silent_discover(void **state)
{
    char           *log;
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_mcp_engine(t, "silent", "start_timeout 2s;", NULL);

    assert_int_equal(rg_test_mcp_server(t)->state, RG_MCP_READY);
    assert_string_equal(rg_test_mcp_server(t)->version, "2025-11-25");

    log = rg_test_mcp_fake_log(t);
    assert_int_equal(rg_test_mcp_count_lines(log, "server/discover", NULL), 1);
    assert_int_equal(rg_test_mcp_count_lines(log, "\"initialize\"", NULL), 1);
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

    rg_test_mcp_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"e1\", \"name\": "
            "\"fk__echo\", \"arguments\": {\"text\": \"x\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    t->logging = 1;
    start = rg_monotonic_msec();
    rg_test_mcp_engine(t, "mute", "start_timeout 1s;", NULL);
    took = rg_monotonic_msec() - start;

    /* its start_timeout ended the wait, not the engine's own bound on it
     * (start_timeout + 0.5s, after which it would still be starting) */
    s = rg_test_mcp_server(t);
    assert_int_equal(s->state, RG_MCP_DOWN);
    assert_string_equal(s->why, "it did not finish starting within 1s "
                        "(start_timeout)");
    assert_true(s->restart_set);
    assert_null(s->list);
    assert_true(took >= 1000 - RG_TEST_CLOCK_SLACK);

    /* it was sent the handshake, and never got further */
    log = rg_test_mcp_fake_log(t);
    assert_int_equal(rg_test_mcp_count_lines(log, "\"initialize\"", NULL), 1);
    assert_int_equal(rg_test_mcp_count_lines(log, "tools/list", NULL), 0);
    free(log);

    log = rg_test_mcp_errlog(t);
    rg_test_contains(log, "mcp \"fk\": it did not finish starting within "
                     "1s (start_timeout); starting it again in 0.1s");
    rg_test_lacks(log, "still starting");
    free(log);

    /* the engine runs sessions; its tool is not there, and the model is
     * told which are */
    rg_test_mcp_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);
    assert_string_equal(rg_test_mcp_tool_result(t, "e1"), "error: unknown tool "
                        "\"fk__echo\"; the tools you can call are: none");
    assert_int_not_equal(rg_test_mcp_server(t)->state, RG_MCP_READY);
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
    rg_test_mcp_engine(t, "ignore-input", NULL, NULL);

    s = rg_test_mcp_server(t);
    assert_int_equal(s->state, RG_MCP_DOWN);
    assert_string_equal(s->why, "it closed its input");

    log = rg_test_mcp_errlog(t);
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
    rg_test_mcp_engine(t, "good", "protocol session;", NULL);
    assert_int_equal(rg_test_mcp_server(t)->state, RG_MCP_READY);

    log = rg_test_mcp_fake_log(t);
    assert_int_equal(rg_test_mcp_count_lines(log, "server/discover", NULL), 0);
    free(log);

    rg_engine_destroy(t->engine);
    rg_cycle_destroy(t->cycle);
    t->engine = NULL;

    /* protocol stateless, and it speaks only the session-based one */
    rg_test_mcp_engine(t, "good", "protocol stateless;", NULL);
    assert_int_equal(rg_test_mcp_server(t)->state, RG_MCP_FAILED);
    rg_test_contains(rg_test_mcp_server(t)->why, "it does not speak the "
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

    rg_test_mcp_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"v1\", \"name\": "
            "\"fk__env\", \"arguments\": {}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    rg_test_mcp_engine(t, "good", "env RG_TEST_MCP_PASSED; env RG_FAKE_SET yes;"
                   " secret_env RG_TEST_MCP_TOKEN;", NULL);

    /* taken out of reagent's own environment */
    assert_null(getenv("RG_TEST_MCP_TOKEN"));

    rg_test_mcp_session(t, "a", "go");

    r = rg_test_mcp_tool_result(t, "v1");
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
        rg_test_mcp_engine(t, mode[i], NULL, NULL);
        assert_int_equal(rg_test_mcp_server(t)->state, RG_MCP_READY);

        log = rg_test_mcp_fake_log(t);
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
        rg_test_mcp_case(rg_test_crash),
        rg_test_mcp_case(rg_test_backoff),
        rg_test_mcp_case(rg_test_list_changed),
        rg_test_mcp_case(rg_test_bad_version),
        rg_test_mcp_case(rg_test_silent_discover),
        rg_test_mcp_case(rg_test_mute),
        rg_test_mcp_case(rg_test_closed_input),
        rg_test_mcp_case(rg_test_session_protocol),
        rg_test_mcp_case(rg_test_env),
        rg_test_mcp_case(rg_test_stop),
    };

    return rg_test_mcp_run(argc, argv, tests);
}
