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
 * The time other sessions' turns took is printed, not asserted (make
 * bench measures it). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>
#include <rg_transcript.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <event2/event.h>


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


#define rg_test_contains(hay, needle)                                        \
    do {                                                                     \
        const char *h_ = (hay);                                              \
        if (h_ == NULL || strstr(h_, needle) == NULL) {                      \
            print_error("\"%.300s\"\n    does not contain \"%s\"\n",         \
                        h_ ? h_ : "(null)", needle);                         \
            fail();                                                          \
        }                                                                    \
    } while (0)


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


static void
rg_test_done(rg_session_t *s)
{
    rg_uint_t  *left;

    left = s->data;

    if (--*left == 0) {
        event_base_loopbreak(s->engine->base);
    }
}


/* the tool messages of s, parsed, in order */
static json_t *
rg_test_messages(rg_session_t *s)
{
    json_t    *msgs, *m;
    rg_msg_t  *msg;

    msgs = json_array();
    assert_non_null(msgs);

    for (msg = s->msgs.head; msg; msg = msg->next) {
        m = json_loadb(msg->json.data, msg->json.len, JSON_ALLOW_NUL, NULL);
        assert_non_null(m);
        json_array_append_new(msgs, m);
    }

    return msgs;
}


static int
rg_test_cmp_ms(const void *a, const void *b)
{
    rg_msec_t  x, y;

    x = *(const rg_msec_t *) a;
    y = *(const rg_msec_t *) b;

    return (x > y) - (x < y);
}


/* One session's answer carries `ncalls` calls, with the agent's cap (0:
 * the default); `others` sessions of another agent run beside it. */
static void
rg_test_many_calls(rg_test_ctx_t *t, rg_uint_t ncalls, const char *cap,
    const char *stream, rg_uint_t expect_run)
{
    char              *text, expect[256];
    size_t             i;
    json_t            *msgs, *m, *calls;
    rg_uint_t          k, left, others;
    rg_msec_t          times[32];
    rg_session_t      *big, *small[32];
    rg_agent_conf_t   *ab, *as;
    const char        *b;

    others = 20;
    b = rg_test_build_dir();

    text = rg_test_calls_script(ncalls);
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
    if (t->cycle == NULL) {
        print_error("configuration: %s\n", t->err);
    }
    assert_non_null(t->cycle);

    t->engine = rg_engine_create(t->cycle, t->cycle->log);
    assert_non_null(t->engine);

    ab = rg_agent_find(t->cycle, "big", 3);
    as = rg_agent_find(t->cycle, "small", 5);

    left = 1 + others;

    big = rg_session_create(t->engine, ab, NULL, "many", 4, rg_test_done,
                            &left);
    assert_non_null(big);

    for (k = 0; k < others; k++) {
        small[k] = rg_session_create(t->engine, as, NULL, "few", 3,
                                     rg_test_done, &left);
        assert_non_null(small[k]);
        rg_session_start(small[k]);
    }

    rg_session_start(big);
    event_base_dispatch(t->engine->base);

    /* the others were not starved to death, and the big one ended */
    for (k = 0; k < others; k++) {
        assert_int_equal(small[k]->state, RG_SESSION_DONE);
        times[k] = small[k]->ended - small[k]->started;
    }

    qsort(times, others, sizeof(rg_msec_t), rg_test_cmp_ms);
    print_message("%lu calls in one answer: the other sessions took "
                  "%llu ms at most (median %llu ms)\n",
                  (unsigned long) ncalls,
                  (unsigned long long) times[others - 1],
                  (unsigned long long) times[others / 2]);

    if (big->state != RG_SESSION_DONE) {
        print_error("big: %s\n", big->reason);
    }
    assert_int_equal(big->state, RG_SESSION_DONE);
    assert_string_equal(big->answer.data, "all done");

    /* the cap's calls ran, one more told the model about the rest */
    assert_int_equal(big->tool_calls, expect_run + 1);
    assert_int_equal(big->round, 2);

    msgs = rg_test_messages(big);
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
    for (k = 0; k < others; k++) {
        rg_session_destroy(small[k]);
    }
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

        s->handler = rg_test_done;
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
