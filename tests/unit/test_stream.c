/* test_stream.c: the agent loop with `stream on;` against the mock model
 * streaming over real HTTP: tool calls split into many small fragments,
 * parallel calls interleaved, CRLF line ends, comment lines, usage from
 * the last chunk, and an error in the middle of a 200 stream (retried). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_session.h>
#include <rg_test.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


static rg_session_t *
rg_test_stream_run(rg_test_mock_t *mock, const char *extra, rg_engine_t **ep,
    rg_cycle_t **cp)
{
    char          err[512];
    rg_cycle_t   *cycle;
    rg_engine_t  *e;

    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/calc.so;\n"
                          "llm m { base_url http://127.0.0.1:%d/v1; "
                          "model mock-1; stream on; retry_base 10ms; %s }\n"
                          "agent a { tools calc; }\n",
                          rg_test_build_dir(), mock->port, extra);
    if (cycle == NULL) {
        fail_msg("configuration: %s", err);
    }

    e = rg_engine_create(cycle, cycle->log);
    assert_non_null(e);

    *ep = e;
    *cp = cycle;

    return rg_test_run(e, "a", "stream it");
}


static void
rg_test_stream_check(const char *arg, ...)
{
    const char      *args[16];
    rg_uint_t        n;
    va_list          ap;
    rg_cycle_t      *cycle;
    rg_engine_t     *e;
    rg_session_t    *s;
    rg_test_mock_t  *mock;

    n = 0;
    va_start(ap, arg);
    for (; arg && n < 15; arg = va_arg(ap, const char *)) {
        args[n++] = arg;
    }
    va_end(ap);
    args[n] = NULL;

    mock = rg_test_mock_start("--rounds", "2", "--calls", "3",
                              n > 0 ? args[0] : NULL,
                              n > 1 ? args[1] : NULL,
                              n > 2 ? args[2] : NULL,
                              n > 3 ? args[3] : NULL,
                              n > 4 ? args[4] : NULL, NULL);
    assert_non_null(mock);

    s = rg_test_stream_run(mock, "", &e, &cycle);
    assert_non_null(s);

    if (s->state != RG_SESSION_DONE) {
        fail_msg("state %s: %s", rg_session_state_name(s->state),
                 s->reason ? s->reason : "");
    }

    /* 2 rounds of 3 parallel calls, assembled from fragments, then the
     * answer echoing the last result */
    assert_int_equal(s->round, 3);
    assert_int_equal(s->tool_calls, 6);
    assert_int_equal(s->tool_errors, 0);
    assert_non_null(s->answer.data);
    assert_true(s->answer.len > 0);
    assert_true(s->prompt_tokens > 0);          /* usage came last */
    assert_int_equal(rg_test_mock_stat(mock, "rejected"), 0);

    rg_session_destroy(s);
    rg_engine_destroy(e);
    rg_cycle_destroy(cycle);
    rg_test_mock_stop(mock);
}


static void
rg_test_stream_small_chunks(void **state)
{
    (void) state;

    rg_test_stream_check("--stream-chunk", "1", NULL);
}


static void
rg_test_stream_interleaved_crlf(void **state)
{
    (void) state;

    rg_test_stream_check("--stream-chunk", "3", "--stream-interleave",
                         "--stream-crlf", "--stream-comments", NULL);
}


static void
rg_test_stream_delayed(void **state)
{
    (void) state;

    rg_test_stream_check("--stream-chunk", "16", "--stream-delay", "2",
                         NULL);
}


static void
rg_test_stream_midstream_error(void **state)
{
    char            *path;
    rg_cycle_t      *cycle;
    rg_engine_t     *e;
    rg_session_t    *s;
    rg_test_mock_t  *mock;

    (void) state;

    /* every answer breaks off with a server error: retried, then failed
     * with the provider's words */
    path = rg_test_write_file("stream_error.json",
        "[{\"message\":{\"content\":\"partial answer that breaks\"},"
        "\"stream_error\":\"The server had an error while processing "
        "your request.\"}]");
    assert_non_null(path);

    mock = rg_test_mock_start("--script", path, NULL);
    assert_non_null(mock);
    free(path);

    s = rg_test_stream_run(mock, "max_retries 2;", &e, &cycle);
    assert_non_null(s);
    assert_int_equal(s->state, RG_SESSION_FAILED);
    assert_non_null(s->reason);
    assert_non_null(strstr(s->reason, "after 2 retries"));
    assert_non_null(strstr(s->reason, "server_error"));
    assert_non_null(strstr(s->reason, "The server had an error"));
    assert_int_equal(rg_test_mock_stat(mock, "requests"), 3);

    rg_session_destroy(s);
    rg_engine_destroy(e);
    rg_cycle_destroy(cycle);
    rg_test_mock_stop(mock);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rg_test_stream_small_chunks),
        cmocka_unit_test(rg_test_stream_interleaved_crlf),
        cmocka_unit_test(rg_test_stream_delayed),
        cmocka_unit_test(rg_test_stream_midstream_error),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
