/* test_loop_calls.c: integration tests, through the agent loop against the
 * mock model, of what one answer's tool calls may do to a worker:
 *   - an answer with 100,000 tool calls (max_tool_calls_per_turn): the
 *     first 128 run, one more tool message tells the model about the
 *     rest, the conversation stays valid for the provider (every id
 *     answered, as the mock checks), the session ends done, and sessions
 *     running beside it on the same reactor end done too; the same with a
 *     streamed answer and a smaller cap;
 *   - a tool result holding a NUL byte is kept whole: in the next request
 *     (JSON \u0000, which the mock accepts as the real API does) and in
 *     the transcript, request included.
 * The others' slowest time beside the big answer, and the reactor's
 * longest wait between their events, are asserted against the same
 * sessions run alone just before on the same reactor: at most twice that,
 * 4 parses of the answer's calls (the reactor must parse the answer) and
 * 1 s (sanitizers, a loaded machine), where the stall this guards
 * against was 51 s; make bench measures the p99 finer. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>
#include <rg_test_session.h>
#include <rg_transcript.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <event2/event.h>
#include <event2/event_struct.h>


/* sessions beside the big answer */
#define RG_TEST_OTHERS       20
/* The reactor receives, parses and frees the big answer: for 100,000
 * calls 0.7 s of CPU, 2 s under ASan, twice that on a loaded 2-core
 * machine, and 2 to 2.6 times the parse of the calls alone that the test
 * measures (the answer is larger: its arguments are strings). The others
 * may wait that, 4 times over, beyond twice their time alone, and a
 * second more; the O(n^2) check of ids stalled them 51 s, and takes over
 * 15 minutes under ASan. */
#define RG_TEST_STALL_PARSES  4
#define RG_TEST_STALL_FLOOR   1000


typedef struct {
    rg_test_mock_t     *big;          /* answers with many calls */
    rg_test_mock_t     *small;        /* the generic mock */
    rg_cycle_t         *cycle;
    rg_engine_t        *engine;
    char               *script;
    char               *text;
    json_t             *json;
    char                err[512];
} rg_test_ctx_t;


static int
rg_test_setup(void **state)
{
    *state = calloc(1, sizeof(rg_test_ctx_t));

    return *state == NULL ? -1 : 0;
}


static int
rg_test_teardown(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    rg_engine_destroy(t->engine);
    rg_cycle_destroy(t->cycle);
    rg_test_mock_stop(t->big);
    rg_test_mock_stop(t->small);

    if (t->script) {
        unlink(t->script);
        free(t->script);
    }

    free(t->text);
    json_decref(t->json);
    free(t);

    return 0;
}


/* [{"message": {"tool_calls": [n calls of calc]}}, {"message": done}] */
static char *
rg_test_calls_script(rg_uint_t n)
{
    rg_buf_t   b;
    rg_uint_t  i;

    memset(&b, 0, sizeof(b));

    assert_int_equal(rg_buf_append_lit(&b,
                     "[{\"message\": {\"tool_calls\": ["), RG_OK);

    for (i = 0; i < n; i++) {
        assert_int_equal(rg_buf_printf(&b, "%s{\"id\": \"c%lu\", \"name\": "
                         "\"calc\", \"arguments\": {\"expression\": "
                         "\"%lu+1\"}}", i ? "," : "", (unsigned long) i,
                         (unsigned long) i), RG_OK);
    }

    assert_int_equal(rg_buf_append_lit(&b, "]}}, {\"message\": {\"content\": "
                     "\"all done\"}}]"), RG_OK);

    return b.data;
}


static int
rg_test_cmp_ms(const void *a, const void *b)
{
    rg_msec_t  x, y;

    x = *(const rg_msec_t *) a;
    y = *(const rg_msec_t *) b;

    return (x > y) - (x < y);
}


/* A 10 ms timer on the reactor stands for the next event of any other
 * session: how late it fires at most is how long the reactor kept them
 * all waiting (the others themselves may have ended before the big
 * answer came). */
typedef struct {
    struct event        ev;
    rg_msec_t           last;
    rg_msec_t           late;         /* at most */
} rg_test_ticker_t;

#define RG_TEST_TICK  10


static void
rg_test_tick(evutil_socket_t fd, short what, void *arg)
{
    rg_msec_t          now;
    rg_test_ticker_t  *tk;

    tk = arg;
    now = rg_monotonic_msec();

    if (now > tk->last + RG_TEST_TICK
        && now - tk->last - RG_TEST_TICK > tk->late)
    {
        tk->late = now - tk->last - RG_TEST_TICK;
    }

    tk->last = now;
}


/* Runs `n` sessions of agent `as` to their end, beside `big` when it is
 * given (started after them, so that its answer comes while they run);
 * fills times[] with how long each took, sorted, and *late with the
 * reactor's longest wait past a tick until all, big too, ended. */
static void
rg_test_others(rg_test_ctx_t *t, rg_agent_conf_t *as, rg_uint_t n,
    rg_session_t *big, rg_msec_t *times, rg_msec_t *late)
{
    rg_uint_t          k, left;
    rg_session_t      *small[RG_TEST_OTHERS];
    struct timeval     tv;
    rg_test_ticker_t   tk;

    left = n + (big != NULL);

    tv.tv_sec = 0;
    tv.tv_usec = RG_TEST_TICK * 1000;
    tk.last = rg_monotonic_msec();
    tk.late = 0;
    assert_int_equal(event_assign(&tk.ev, t->engine->base, -1, EV_PERSIST,
                                  rg_test_tick, &tk), 0);
    assert_int_equal(event_add(&tk.ev, &tv), 0);

    for (k = 0; k < n; k++) {
        small[k] = rg_session_create(t->engine, as, NULL, "few", 3,
                                     rg_test_countdown, &left);
        assert_non_null(small[k]);
        rg_session_start(small[k]);
    }

    if (big) {
        big->data = &left;
        rg_session_start(big);
    }

    event_base_dispatch(t->engine->base);
    event_del(&tk.ev);
    *late = tk.late;

    /* the others were not starved to death */
    for (k = 0; k < n; k++) {
        assert_int_equal(small[k]->state, RG_SESSION_DONE);
        times[k] = small[k]->ended - small[k]->started;
        rg_session_destroy(small[k]);
    }

    qsort(times, n, sizeof(rg_msec_t), rg_test_cmp_ms);
}


/* One session's answer carries `ncalls` calls, with the agent's cap (0:
 * the default); `others` sessions of another agent run beside it. They
 * take at most twice as long as the same sessions alone on the same
 * reactor just before, and 4 times as long as one parse of the answer's
 * calls by jansson measured here, and RG_TEST_STALL_FLOOR; so does the
 * reactor's longest wait between two events of theirs. */
static void
rg_test_many_calls(rg_test_ctx_t *t, rg_uint_t ncalls, const char *cap,
    const char *stream, rg_uint_t expect_run)
{
    char              *text, expect[256];
    size_t             i;
    json_t            *msgs, *m, *calls;
    rg_uint_t          others;
    json_t            *j;
    rg_msec_t          quiet[RG_TEST_OTHERS], times[RG_TEST_OTHERS], bound,
                       quiet_late, late, parse;
    rg_session_t      *big;
    rg_agent_conf_t   *ab, *as;
    const char        *b;

    others = RG_TEST_OTHERS;
    b = rg_test_build_dir();

    text = rg_test_calls_script(ncalls);

    /* what one parse of it costs on this machine, now, its freeing
     * included (most of it under ASan, whose allocator is slow) */
    parse = rg_monotonic_msec();
    j = json_loads(text, 0, NULL);
    assert_non_null(j);
    json_decref(j);
    parse = rg_monotonic_msec() - parse;

    t->script = rg_test_write_file("calls.json", text);
    free(text);
    assert_non_null(t->script);

    t->big = rg_test_mock_start("--script", t->script, "--stream-chunk",
                                "4096", NULL);
    t->small = rg_test_mock_start("--rounds", "40", "--latency", "10", NULL);
    assert_non_null(t->big);
    assert_non_null(t->small);

    t->cycle = rg_test_cycle(t->err, sizeof(t->err),
        "load_module %s/modules/calc.so;\n"
        "llm big { base_url http://127.0.0.1:%d/v1; model mock-1; %s }\n"
        "llm small { base_url http://127.0.0.1:%d/v1; model mock-1; }\n"
        "agent big { llm big; tools calc; %s }\n"
        "agent small { llm small; tools calc; max_rounds 50; }\n",
        b, t->big->port, stream, t->small->port, cap);
    t->engine = rg_test_engine_of(t->cycle, t->err);

    ab = rg_agent_find(t->cycle, "big", 3);
    as = rg_agent_find(t->cycle, "small", 5);

    /* the others alone, then beside the big answer */
    rg_test_others(t, as, others, NULL, quiet, &quiet_late);

    big = rg_session_create(t->engine, ab, NULL, "many", 4, rg_test_countdown,
                            NULL);
    assert_non_null(big);

    rg_test_others(t, as, others, big, times, &late);

    print_message("%lu calls in one answer (parsed in %llu ms here): the "
                  "other sessions took %llu ms at most (median %llu ms), "
                  "alone %llu ms (median %llu ms); the reactor kept them "
                  "waiting %llu ms at most, alone %llu ms\n",
                  (unsigned long) ncalls, (unsigned long long) parse,
                  (unsigned long long) times[others - 1],
                  (unsigned long long) times[others / 2],
                  (unsigned long long) quiet[others - 1],
                  (unsigned long long) quiet[others / 2],
                  (unsigned long long) late,
                  (unsigned long long) quiet_late);

    bound = 2 * quiet[others - 1] + RG_TEST_STALL_PARSES * parse
            + RG_TEST_STALL_FLOOR;
    assert_true(times[others - 1] <= bound);

    bound = 2 * quiet_late + RG_TEST_STALL_PARSES * parse
            + RG_TEST_STALL_FLOOR;
    assert_true(late <= bound);

    if (big->state != RG_SESSION_DONE) {
        print_error("big: %s\n", big->reason);
    }
    assert_int_equal(big->state, RG_SESSION_DONE);
    assert_string_equal(big->answer.data, "all done");

    /* the cap's calls ran, one more told the model about the rest */
    assert_int_equal(big->tool_calls, expect_run + 1);
    assert_int_equal(big->round, 2);

    msgs = rg_test_session_msgs(big);
    t->json = msgs;

    /* system? no: user, assistant, expect_run + 1 tool messages, answer */
    assert_int_equal(json_array_size(msgs), 1 + 1 + expect_run + 1 + 1);

    m = json_array_get(msgs, 1);
    calls = json_object_get(m, "tool_calls");
    assert_int_equal(json_array_size(calls), expect_run + 1);

    for (i = 0; i <= expect_run; i++) {
        m = json_array_get(msgs, 2 + i);
        assert_string_equal(json_string_value(json_object_get(m, "role")),
                            "tool");
        assert_string_equal(
            json_string_value(json_object_get(m, "tool_call_id")),
            json_string_value(json_object_get(json_array_get(calls, i),
                                              "id")));

        if (i < expect_run) {
            snprintf(expect, sizeof(expect), "%lu", (unsigned long) i + 1);
            rg_test_contains(json_string_value(json_object_get(m,
                                                               "content")),
                             expect);
        }
    }

    m = json_array_get(msgs, 2 + expect_run);
    snprintf(expect, sizeof(expect), "asked for %lu tool calls and at most "
             "%lu run per answer (max_tool_calls_per_turn)",
             (unsigned long) ncalls, (unsigned long) expect_run);
    rg_test_contains(json_string_value(json_object_get(m, "content")),
                     expect);
    snprintf(expect, sizeof(expect), "this call and the %lu after it did "
             "not", (unsigned long) (ncalls - expect_run - 1));
    rg_test_contains(json_string_value(json_object_get(m, "content")),
                     expect);

    /* the mock checked the next request: every call answered, in order */
    assert_int_equal(rg_test_mock_stat(t->big, "rejected"), 0);
    assert_int_equal(rg_test_mock_stat(t->big, "completions"), 2);

    rg_session_destroy(big);
}


static void
rg_test_hundred_thousand_calls(void **state)
{
    rg_test_many_calls(*state, 100000, "", "", 128);
}


static void
rg_test_many_calls_streamed(void **state)
{
    rg_test_many_calls(*state, 3000, "max_tool_calls_per_turn 10;",
                       "stream on;", 10);
}


/* one over the cap: it alone is refused */
static void
rg_test_one_over(void **state)
{
    rg_test_many_calls(*state, 6, "max_tool_calls_per_turn 5;", "", 5);
}


/* a result holding a NUL byte ------------------------------------------- */

static void
rg_test_nul_result(void **state)
{
    rg_test_ctx_t  *t = *state;
    size_t          i;
    json_t         *tr, *msgs, *m, *ev, *req, *rm, *v;
    rg_uint_t       found;
    rg_session_t   *s;
    const char     *b;

    b = rg_test_build_dir();

    t->script = rg_test_write_file("nul.json",
        "[{\"message\": {\"tool_calls\": [{\"id\": \"n1\", \"name\": "
        "\"nul_bytes\", \"arguments\": {}}]}},"
        " {\"message\": {\"content\": \"read it\"}}]");
    assert_non_null(t->script);

    t->big = rg_test_mock_start("--script", t->script, NULL);
    assert_non_null(t->big);

    t->cycle = rg_test_cycle(t->err, sizeof(t->err),
        "load_module %s/tests/plugins/nul.so;\n"
        "llm m { base_url http://127.0.0.1:%d/v1; model mock-1; }\n"
        "agent a { tools nul_bytes; }\n", b, t->big->port);
    assert_non_null(t->cycle);

    t->engine = rg_engine_create(t->cycle, t->cycle->log);
    assert_non_null(t->engine);

    s = rg_session_create(t->engine, rg_agent_find(t->cycle, "a", 1), NULL,
                          "nul", 3, NULL, NULL);
    assert_non_null(s);
    assert_int_equal(rg_transcript_start(s), RG_OK);
    s->handler = NULL;

    /* run it to its end */
    {
        rg_uint_t  left = 1;

        s->handler = rg_test_countdown;
        s->data = &left;
        rg_session_start(s);
        if (left) {
            event_base_dispatch(t->engine->base);
        }
    }

    /* the next request carried it: the mock read it and answered */
    if (s->state != RG_SESSION_DONE) {
        print_error("%s\n", s->reason);
    }
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(rg_test_mock_stat(t->big, "completions"), 2);

    t->text = rg_test_mock_get(t->big, "/last_request");
    assert_non_null(t->text);
    rg_test_contains(t->text, "a\\u0000b");

    /* and the transcript has it, in the messages and in that request */
    free(t->text);
    t->text = rg_transcript_text(s);
    assert_non_null(t->text);

    tr = json_loads(t->text, JSON_ALLOW_NUL, NULL);
    assert_non_null(tr);
    t->json = tr;

    msgs = json_object_get(tr, "messages");
    found = 0;

    json_array_foreach(msgs, i, m) {
        v = json_object_get(m, "content");
        if (json_is_string(v) && json_string_length(v) == 3
            && memcmp(json_string_value(v), "a\0b", 3) == 0)
        {
            assert_string_equal(json_string_value(json_object_get(m,
                                "tool_call_id")), "n1");
            found++;
        }
    }

    assert_int_equal(found, 1);
    assert_int_equal(json_array_size(msgs), 4);

    found = 0;

    json_array_foreach(json_object_get(tr, "events"), i, ev) {
        req = json_object_get(ev, "request");
        if (req == NULL || json_integer_value(json_object_get(ev, "round"))
                           != 2)
        {
            continue;
        }

        rm = json_array_get(json_object_get(req, "messages"), 2);
        v = json_object_get(rm, "content");
        assert_true(json_is_string(v));
        assert_int_equal(json_string_length(v), 3);
        assert_memory_equal(json_string_value(v), "a\0b", 3);
        found++;
    }

    assert_int_equal(found, 1);

    rg_session_destroy(s);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup_teardown(rg_test_hundred_thousand_calls,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_many_calls_streamed,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_one_over,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_nul_result,
                                        rg_test_setup, rg_test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
