/* test_mcp_calls.c: calls of MCP tools through the agent loop, against
 * the mock model and the fake server over stdio (tests/lib/
 * rg_test_mcp.h): calls in parallel answered out of order, an error
 * result, an error text of 3 KB passed whole and one of 9 KB trimmed
 * visibly, a timeout that cancels the call (notifications/cancelled, with
 * its id), the mcp block's tool_timeout and the agent's per tool over it,
 * garbage on stdout and a message over max_message; what a tool's flags
 * do: a destructive tool waits for approval, a read-only one is
 * deduplicated, a ping from the server meanwhile is answered, and the
 * operator's tool_flags replace what the annotations say. Time is
 * asserted only as lower bounds. */

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

    rg_test_mcp_mock(t, script);

    rg_test_mcp_engine(t, "good", NULL, NULL);

    s = rg_test_mcp_server(t);
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

    rg_test_mcp_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    assert_string_equal(rg_test_mcp_tool_result(t, "c1"), "slow: first");
    assert_string_equal(rg_test_mcp_tool_result(t, "c2"), "echo: second");
    assert_string_equal(rg_test_mcp_tool_result(t, "c3"), "slow: third");
    assert_string_equal(rg_test_mcp_tool_result(t, "c4"),
                        "error: fk__fail failed: it failed on purpose");
    rg_test_contains(rg_test_mcp_tool_result(t, "c5"),
                     "error: unknown tool \"fk__nope\"; the tools you can "
                     "call are: fk__echo, fk__slow");
    /* coerced to the schema's string before the server saw it */
    assert_string_equal(rg_test_mcp_tool_result(t, "c6"), "echo: 42");

    /* the long name: cut, suffixed, and mapped back to the server's */
    assert_int_equal(strlen(lname), 64);
    r = rg_test_mcp_tool_result(t, "c7");
    assert_string_equal(r, "a.very/long tool name that no model would take "
                        "as it is, over sixty-four bytes: ");

    log = rg_test_mcp_fake_log(t);
    assert_int_equal(rg_test_mcp_count_lines(log, "\"tools/call\"", NULL), 6);
    assert_int_equal(rg_test_mcp_count_lines(log, "\"initialize\"", NULL), 1);
    assert_int_equal(rg_test_mcp_count_lines(log, "notifications/initialized",
                                         NULL), 1);
    /* auto: the stateless revision was asked about first */
    assert_int_equal(rg_test_mcp_count_lines(log, "server/discover",
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

    rg_test_mcp_mock(t, "[{\"message\": {\"tool_calls\": ["
        "{\"id\": \"c1\", \"name\": \"fk__fail\", \"arguments\": "
            "{\"text\": \"long:3000\"}},"
        "{\"id\": \"c2\", \"name\": \"fk__fail\", \"arguments\": "
            "{\"text\": \"long:9000\"}}"
        "]}}, {\"message\": {\"content\": \"done\"}}]");

    rg_test_mcp_engine(t, "good", NULL, NULL);

    rg_test_mcp_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);
    assert_int_equal(t->s->tool_errors, 2);

    /* whole: the prefix, then every byte the server sent */
    r = rg_test_mcp_tool_result(t, "c1");
    p = "error: fk__fail failed: BEGIN-";
    assert_int_equal(strncmp(r, p, strlen(p)), 0);
    assert_int_equal(strlen(r), strlen("error: fk__fail failed: ") + 3000);
    assert_string_equal(r + strlen(r) - 4, "-END");
    rg_test_lacks(r, "left out");

    /* over the limit: its head and its tail, and what was left out said */
    r = rg_test_mcp_tool_result(t, "c2");
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

    log = rg_test_mcp_fake_log(t);

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
    n = rg_test_mcp_count_lines(log, "notifications/cancelled", id);

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

    rg_test_mcp_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"h1\", \"name\": "
            "\"fk__hang\", \"arguments\": {}}]}},"
        "{\"message\": {\"tool_calls\": [{\"id\": \"e1\", \"name\": "
            "\"fk__echo\", \"arguments\": {\"text\": \"after\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    rg_test_mcp_engine(t, "good", NULL, "tool_timeout fk__hang 300ms;");

    rg_test_mcp_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    assert_string_equal(rg_test_mcp_tool_result(t, "h1"), "error: fk__hang timed "
                        "out after 0.3s; try a smaller request or another "
                        "approach");
    assert_string_equal(rg_test_mcp_tool_result(t, "e1"), "echo: after");

    /* the server was told, with the id of the call it got */
    log = rg_test_mcp_fake_log(t);
    p = strstr(log, "\"name\":\"hang\"");
    assert_non_null(p);
    while (p > log && p[-1] != '\n') {
        p--;
    }
    p = strstr(p, "\"id\":");
    assert_non_null(p);
    snprintf(id, sizeof(id), "\"requestId\":%d", atoi(p + 5));

    assert_int_equal(rg_test_mcp_count_lines(log, "notifications/cancelled", id),
                     1);
    rg_test_contains(log, "\"reason\":\"timed out\"");
    free(log);

    /* the session's end cancels a call still running too */
    assert_int_equal(rg_test_mcp_server(t)->pending, 0);
}


/* the mcp block's tool_timeout, with no timeout in the agent */
static void
rg_test_block_timeout(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_mcp_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"h1\", \"name\": "
            "\"fk__hang\", \"arguments\": {}}]}},"
        "{\"message\": {\"tool_calls\": [{\"id\": \"e1\", \"name\": "
            "\"fk__echo\", \"arguments\": {\"text\": \"after\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    rg_test_mcp_engine(t, "good", "tool_timeout 300ms;", NULL);

    rg_test_mcp_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    assert_string_equal(rg_test_mcp_tool_result(t, "h1"), "error: fk__hang timed "
                        "out after 0.3s; try a smaller request or another "
                        "approach");
    assert_int_equal(rg_test_cancelled(t, "hang", "timed out"), 1);
    assert_string_equal(rg_test_mcp_tool_result(t, "e1"), "echo: after");
}


/* the agent's tool_timeout for one tool wins over the block's, and the
 * block's over the agent's for all its tools */
static void
rg_test_timeout_override(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_mcp_mock(t, "["
        "{\"message\": {\"tool_calls\": ["
            "{\"id\": \"h1\", \"name\": \"fk__hang\", \"arguments\": {}},"
            "{\"id\": \"s1\", \"name\": \"fk__slow\", \"arguments\": "
            "{\"ms\": 4000, \"text\": \"late\"}}]}},"
        "{\"message\": {\"tool_calls\": [{\"id\": \"e1\", \"name\": "
            "\"fk__echo\", \"arguments\": {\"text\": \"after\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    rg_test_mcp_engine(t, "good", "tool_timeout 300ms;",
                   "tool_timeout 5s; tool_timeout fk__hang 600ms;");

    rg_test_mcp_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    assert_string_equal(rg_test_mcp_tool_result(t, "h1"), "error: fk__hang timed "
                        "out after 0.6s; try a smaller request or another "
                        "approach");
    assert_string_equal(rg_test_mcp_tool_result(t, "s1"), "error: fk__slow timed "
                        "out after 0.3s; try a smaller request or another "
                        "approach");
    /* answered after the server read the cancellations before it */
    assert_string_equal(rg_test_mcp_tool_result(t, "e1"), "echo: after");
    assert_int_equal(rg_test_cancelled(t, "hang", "timed out"), 1);
    assert_int_equal(rg_test_cancelled(t, "slow", "timed out"), 1);
}


static void
rg_test_garbage(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_mcp_mock(t, "["
        "{\"message\": {\"tool_calls\": [{\"id\": \"g1\", \"name\": "
            "\"fk__garbage\", \"arguments\": {}}]}},"
        "{\"message\": {\"tool_calls\": [{\"id\": \"b1\", \"name\": "
            "\"fk__big\", \"arguments\": {}}]}},"
        "{\"message\": {\"tool_calls\": [{\"id\": \"e1\", \"name\": "
            "\"fk__echo\", \"arguments\": {\"text\": \"still here\"}}]}},"
        "{\"message\": {\"content\": \"done\"}}]");

    rg_test_mcp_engine(t, "good", "max_message 64k;", "tool_timeout fk__big 500ms;");

    rg_test_mcp_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    /* garbage is skipped, the answer after it read */
    assert_string_equal(rg_test_mcp_tool_result(t, "g1"),
                        "answered after garbage");
    /* a line, an object that is no message, and the two items of an
     * array; blank lines are no messages */
    assert_int_equal(rg_test_mcp_server(t)->skipped, 4);

    /* a message over max_message is dropped: that call times out */
    rg_test_contains(rg_test_mcp_tool_result(t, "b1"), "timed out");

    /* and the server is the same process, still serving */
    assert_string_equal(rg_test_mcp_tool_result(t, "e1"), "echo: still here");
    assert_int_equal(rg_test_mcp_server(t)->state, RG_MCP_READY);
}


static void
rg_test_ping_approval_dedupe(void **state)
{
    char           *log;
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_mcp_mock(t, "["
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
    rg_test_mcp_engine(t, "good", NULL, "repeat_window 0; dedupe session;");

    rg_test_mcp_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    /* the server's own request was answered */
    assert_string_equal(rg_test_mcp_tool_result(t, "p1"), "pong received");

    /* destructive (destructiveHint left out: true): not approved */
    assert_string_equal(rg_test_mcp_tool_result(t, "d1"), "error: fk__destroy is "
                        "a dangerous tool and was not approved; do without "
                        "it or ask the user");

    /* read-only: the second call answered from the first; the other one
     * ran twice */
    assert_string_equal(rg_test_mcp_tool_result(t, "e2"), "echo: once");
    assert_string_equal(rg_test_mcp_tool_result(t, "t2"), "touch: ");
    assert_int_equal(t->s->dedupe_hits, 1);

    log = rg_test_mcp_fake_log(t);
    assert_int_equal(rg_test_mcp_count_lines(log, "\"name\":\"echo\"", NULL), 1);
    assert_int_equal(rg_test_mcp_count_lines(log, "\"name\":\"touch\"", NULL), 2);
    assert_int_equal(rg_test_mcp_count_lines(log, "\"name\":\"destroy\"", NULL),
                     0);
    assert_int_equal(rg_test_mcp_count_lines(log, "\"id\":\"srv-ping\"",
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

    rg_test_mcp_mock(t, "["
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
    rg_test_mcp_engine(t, "good",
                   "tool_flags destroy idempotent; tool_flags echo "
                   "side_effect; tool_flags to* read_only;",
                   "repeat_window 0; dedupe session;");

    rg_test_mcp_session(t, "a", "go");
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    assert_string_equal(rg_test_mcp_tool_result(t, "d1"), "destroy: ");
    assert_string_equal(rg_test_mcp_tool_result(t, "e2"), "echo: twice");
    assert_string_equal(rg_test_mcp_tool_result(t, "t2"), "touch: ");
    assert_int_equal(t->s->dedupe_hits, 1);

    log = rg_test_mcp_fake_log(t);
    assert_int_equal(rg_test_mcp_count_lines(log, "\"name\":\"destroy\"", NULL),
                     1);
    assert_int_equal(rg_test_mcp_count_lines(log, "\"name\":\"echo\"", NULL), 2);
    assert_int_equal(rg_test_mcp_count_lines(log, "\"name\":\"touch\"", NULL), 1);
    free(log);
}


int
main(int argc, char **argv)
{
    const struct CMUnitTest  tests[] = {
        rg_test_mcp_case(rg_test_parallel),
        rg_test_mcp_case(rg_test_long_error),
        rg_test_mcp_case(rg_test_timeout_cancel),
        rg_test_mcp_case(rg_test_block_timeout),
        rg_test_mcp_case(rg_test_timeout_override),
        rg_test_mcp_case(rg_test_garbage),
        rg_test_mcp_case(rg_test_ping_approval_dedupe),
        rg_test_mcp_case(rg_test_flags_override),
    };

    return rg_test_mcp_run(argc, argv, tests);
}
