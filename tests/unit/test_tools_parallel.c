/* test_tools_parallel.c: the tool calls of one turn, through the agent loop
 * (src/tools/rg_tools.c, src/tools/rg_thread_pool.c, src/tools/
 * rg_tool_args.h as src/agent/rg_phase_run.c drives them) against the mock
 * model (tests/mock/rg_mock.c).
 *
 * Every call of a turn starts at once: asynchronous ones on the reactor and
 * RG_TOOL_BLOCKING ones in the thread pool, which the test plugin barrier
 * (tests/plugins/barrier.c) proves by holding each call until all of them
 * wait. Results come back in the order of the calls with their ids; a call
 * that runs past its tool_timeout is answered with an error, and its late
 * answer, from the reactor or from a pool thread, is dropped without
 * touching freed memory (run this under --with-sanitizers); a saturated
 * pool still answers everything. The model's arguments are repaired,
 * coerced or refused with the exact texts of rg_tool_args.h; long results
 * are trimmed on character boundaries; dangerous tools need approval.
 * A pool thread writes only what its task owns, also the reason a host
 * function it may not call gives.
 * Scripts: tests/integration/tools_*.json. No assertion is about speed:
 * parallelism is shown by the barriers, never by a clock. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>
#include <rg_test_session.h>
#include <rg_thread_pool.h>
#include <rg_tools.h>
#include <rg_agent_conf.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <signal.h>
#include <event2/event.h>


#define RG_TEST_SCRIPTS     "tests/integration/"


typedef struct {
    rg_test_mock_t     *mock;
    rg_cycle_t         *cycle;
    rg_engine_t        *engine;
    rg_session_t       *s;
    json_t             *msgs;         /* s->msgs, parsed */
    json_t             *json;         /* any other parsed answer */
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

    rg_test_engine_end(t->s, t->engine, t->cycle, t->mock);

    json_decref(t->msgs);
    json_decref(t->json);
    free(t);

    return 0;
}


/* A cycle and an engine: calc and the test plugins barrier, slow and good
 * loaded, `main` added at the top level, llm "mock" at the mock's port,
 * agent "a" made of `agent`. */
static void
rg_test_engine(rg_test_ctx_t *t, const char *main, const char *agent)
{
    const char  *b;

    b = rg_test_build_dir();

    t->cycle = rg_test_cycle(t->err, sizeof(t->err),
        "load_module %s/modules/calc.so;\n"
        "load_module %s/tests/plugins/barrier.so;\n"
        "load_module %s/tests/plugins/slow.so;\n"
        "load_module %s/tests/plugins/good.so;\n"
        "%s\n"
        "llm mock {\n"
        "    base_url http://127.0.0.1:%d/v1;\n"
        "    model mock-1;\n"
        "    retry_base 20ms;\n"
        "}\n"
        "agent a {\n"
        "    system_prompt \"You are a test.\";\n"
        "    %s\n"
        "}\n",
        b, b, b, b, main ? main : "", t->mock->port, agent);

    t->engine = rg_test_engine_of(t->cycle, t->err);
}


/* runs one task on agent "a" to its end; parses its messages */
static rg_session_t *
rg_test_session(rg_test_ctx_t *t, const char *input)
{
    json_t    *m;
    rg_msg_t  *msg;

    rg_session_destroy(t->s);

    t->s = rg_test_run(t->engine, "a", input);
    assert_non_null(t->s);
    assert_true(rg_session_final(t->s));

    json_decref(t->msgs);
    t->msgs = json_array();
    assert_non_null(t->msgs);

    for (msg = t->s->msgs.head; msg; msg = msg->next) {
        m = json_loadb(msg->json.data, msg->json.len, 0, NULL);
        if (m == NULL) {
            print_error("message \"%.*s\" is not JSON\n",
                        (int) msg->json.len, msg->json.data);
        }
        assert_non_null(m);
        json_array_append_new(t->msgs, m);
    }

    return t->s;
}


static const char *
rg_test_str(json_t *m, const char *key)
{
    json_t  *v;

    v = json_object_get(m, key);
    if (!json_is_string(v)) {
        print_error("no string \"%s\" in %s\n", key,
                    json_dumps(m, JSON_COMPACT));
    }
    assert_true(json_is_string(v));

    return json_string_value(v);
}


/* the content of the tool message that answers id */
static const char *
rg_test_result(rg_test_ctx_t *t, const char *id)
{
    size_t   i;
    json_t  *m;

    json_array_foreach(t->msgs, i, m) {
        if (json_is_string(json_object_get(m, "tool_call_id"))
            && strcmp(rg_test_str(m, "tool_call_id"), id) == 0)
        {
            return rg_test_str(m, "content");
        }
    }

    print_error("no tool message answers \"%s\"\n", id);
    fail();

    return NULL;
}


/* Every assistant message with calls is followed by one tool message per
 * call, in the order of the calls, carrying its id. Returns the calls. */
static size_t
rg_test_check_ids(rg_test_ctx_t *t)
{
    size_t       i, k, n, ncalls, total;
    json_t      *m, *calls;
    const char  *role;

    total = 0;
    n = json_array_size(t->msgs);

    for (i = 0; i < n; i++) {
        m = json_array_get(t->msgs, i);
        role = rg_test_str(m, "role");

        assert_string_not_equal(role, "tool");

        if (strcmp(role, "assistant") != 0) {
            continue;
        }

        calls = json_object_get(m, "tool_calls");
        ncalls = json_array_size(calls);

        for (k = 0; k < ncalls; k++) {
            assert_true(i + 1 + k < n);
            m = json_array_get(t->msgs, i + 1 + k);
            assert_string_equal(rg_test_str(m, "role"), "tool");
            assert_string_equal(rg_test_str(m, "tool_call_id"),
                                json_string_value(json_object_get(
                                    json_array_get(calls, k), "id")));
        }

        total += ncalls;
        i += ncalls;
    }

    return total;
}


static long
rg_test_stat(rg_test_ctx_t *t, const char *field)
{
    long  v;

    v = rg_test_mock_stat(t->mock, field);
    assert_true(v >= 0);

    return v;
}


/* valid UTF-8, with no replacement character in it */
static int
rg_test_utf8_ok(const char *s, size_t len)
{
    size_t          i, n, k;
    unsigned char   c;
    uint32_t        cp;

    for (i = 0; i < len; i += n) {
        c = (unsigned char) s[i];

        if (c < 0x80) {
            n = 1;
            continue;
        }

        if (c >= 0xc2 && c <= 0xdf) {
            n = 2;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 3;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 4;
            cp = c & 0x07;
        } else {
            return 0;
        }

        if (i + n > len) {
            return 0;
        }

        for (k = 1; k < n; k++) {
            if (((unsigned char) s[i + k] & 0xc0) != 0x80) {
                return 0;
            }
            cp = (cp << 6) | ((unsigned char) s[i + k] & 0x3f);
        }

        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)
            || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)
            || cp == 0xfffd)
        {
            return 0;
        }
    }

    return 1;
}


/* 1. all calls of a turn at once ------------------------------------- */

static void
rg_test_barrier_async(void **state)
{
    rg_test_ctx_t  *t = *state;
    size_t          i;
    json_t         *m;
    rg_session_t   *s;

    /* 8 calls of barrier_async {"n": 8}: one after the other, the first
     * would wait for the rest until its timeout */
    rg_test_mock(t, "--rounds", "1", "--calls", "8");
    rg_test_engine(t, NULL, "tools barrier_async; tool_timeout 3s;");

    s = rg_test_session(t, "meet at the barrier");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 2);
    assert_int_equal(s->tool_calls, 8);
    assert_int_equal(s->tool_errors, 0);
    assert_int_equal(rg_test_check_ids(t), 8);

    for (i = 3; i < 11; i++) {
        m = json_array_get(t->msgs, i);
        assert_string_equal(rg_test_str(m, "role"), "tool");
        assert_string_equal(rg_test_str(m, "content"), "released with 8");
    }

    assert_int_equal(rg_test_stat(t, "rejected"), 0);
}


static void
rg_test_barrier_pool(void **state)
{
    rg_test_ctx_t                 *t = *state;
    size_t                         i;
    json_t                        *m;
    rg_session_t                  *s;
    const rg_thread_pool_stats_t  *st;

    /* the same in 8 pool threads: each call waits in its own thread */
    rg_test_mock(t, "--rounds", "1", "--calls", "8");
    rg_test_engine(t, "thread_pool default threads=8;",
                   "tools barrier_pool; tool_timeout 10s;");

    s = rg_test_session(t, "meet at the barrier, blocking");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_calls, 8);
    assert_int_equal(s->tool_errors, 0);
    assert_int_equal(rg_test_check_ids(t), 8);

    for (i = 3; i < 11; i++) {
        m = json_array_get(t->msgs, i);
        assert_string_equal(rg_test_str(m, "content"), "released with 8");
    }

    st = rg_thread_pool_stats(rg_tools_ctx(t->engine)->pool);
    assert_int_equal(st->posted, 8);
    assert_int_equal(st->completed, 8);
    assert_int_equal(st->busy_max, 8);
}


static void
rg_test_result_order(void **state)
{
    size_t              i;
    json_t             *m;
    rg_test_ctx_t      *t = *state;
    rg_session_t       *s;
    static const char  *ids[] = { "call_300", "call_50", "call_150" };
    static const char  *texts[] = { "waited 300 ms", "waited 50 ms",
                                    "waited 150 ms" };

    /* they finish 50, 150, 300; they are answered 300, 50, 150 */
    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "tools_order.json");
    rg_test_engine(t, NULL, "tools slow_async;");

    s = rg_test_session(t, "three waits");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(rg_test_check_ids(t), 3);

    for (i = 0; i < 3; i++) {
        m = json_array_get(t->msgs, 3 + i);
        assert_string_equal(rg_test_str(m, "role"), "tool");
        assert_string_equal(rg_test_str(m, "tool_call_id"), ids[i]);
        assert_string_equal(rg_test_str(m, "content"), texts[i]);
    }

    assert_string_equal(rg_test_str(json_array_get(t->msgs, 6), "content"),
                        "all three answered");
}


/* 2. timeouts and late answers --------------------------------------- */

static void
rg_test_timeout_async(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "tools_timeout_async.json");
    rg_test_engine(t, NULL, "tools slow_async; tool_timeout 200ms;");

    s = rg_test_session(t, "wait too long");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_errors, 1);
    assert_string_equal(rg_test_result(t, "call_slow"),
                        "error: slow_async timed out after 0.2s; try a "
                        "smaller request or another approach");
    assert_string_equal(rg_test_str(json_array_get(t->msgs, 4), "content"),
                        "gave up on the slow one");
}


static void
rg_test_timeout_blocking(void **state)
{
    rg_test_ctx_t                 *t = *state;
    rg_session_t                  *s;
    const rg_thread_pool_stats_t  *st;

    /* round 1 sleeps 1.5 s in a pool thread with 200 ms allowed; round 2
     * waits 1.6 s on the reactor, so the late answer of round 1 comes
     * back while the session lives on, and must be dropped */
    rg_test_mock(t, "--script",
                 RG_TEST_SCRIPTS "tools_timeout_blocking.json");
    rg_test_engine(t, NULL, "tools slow_blocking slow_async;"
                            "tool_timeout 200ms;"
                            "tool_timeout slow_async 5s;");

    s = rg_test_session(t, "sleep too long");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 3);
    assert_int_equal(rg_test_check_ids(t), 2);
    assert_string_equal(rg_test_result(t, "call_sleep"),
                        "error: slow_blocking timed out after 0.2s; try a "
                        "smaller request or another approach");
    assert_string_equal(rg_test_result(t, "call_wait"), "waited 1600 ms");

    /* the pool's answer came back to the reactor and was dropped */
    st = rg_thread_pool_stats(rg_tools_ctx(t->engine)->pool);
    assert_int_equal(st->posted, 1);
    assert_int_equal(st->completed, 1);

    assert_int_equal(s->tool_errors, 1);
    assert_int_equal(rg_test_stat(t, "requests"), 3);
}


static void
rg_test_timeout_blocking_same_turn(void **state)
{
    rg_test_ctx_t                 *t = *state;
    rg_session_t                  *s;
    const rg_thread_pool_stats_t  *st;

    /* the pool call times out at 100 ms and its thread answers at 300 ms,
     * while the turn still waits for the other call (800 ms): the late
     * answer reaches a run whose turn is alive. The run must be freed
     * all the same (LeakSanitizer checks it in a sanitizer build). */
    rg_test_mock(t, "--script",
                 RG_TEST_SCRIPTS "tools_timeout_blocking_turn.json");
    rg_test_engine(t, NULL, "tools slow_blocking slow_async;"
                            "tool_timeout 5s;"
                            "tool_timeout slow_blocking 100ms;");

    s = rg_test_session(t, "one sleeps too long");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(rg_test_check_ids(t), 2);
    assert_string_equal(rg_test_result(t, "call_sleep"),
                        "error: slow_blocking timed out after 0.1s; try a "
                        "smaller request or another approach");
    assert_string_equal(rg_test_result(t, "call_wait"), "waited 800 ms");

    st = rg_thread_pool_stats(rg_tools_ctx(t->engine)->pool);
    assert_int_equal(st->posted, 1);
    assert_int_equal(st->completed, 1);
}


static void
rg_test_timeout_blocking_destroy(void **state)
{
    rg_test_ctx_t                 *t = *state;
    rg_session_t                  *s;
    const rg_thread_pool_stats_t  *st;

    /* the session ends while the pool thread still sleeps: the engine's
     * destruction waits for it and frees the orphaned call */
    rg_test_mock(t, "--script",
                 RG_TEST_SCRIPTS "tools_timeout_blocking_end.json");
    rg_test_engine(t, NULL, "tools slow_blocking; tool_timeout 200ms;");

    s = rg_test_session(t, "sleep and leave");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_string_equal(rg_test_result(t, "call_sleep"),
                        "error: slow_blocking timed out after 0.2s; try a "
                        "smaller request or another approach");

    /* (the thread is most likely still asleep now) */
    st = rg_thread_pool_stats(rg_tools_ctx(t->engine)->pool);
    assert_int_equal(st->posted, 1);

    rg_session_destroy(t->s);
    t->s = NULL;
    rg_engine_destroy(t->engine);
    t->engine = NULL;
}


static void
rg_test_pool_saturated(void **state)
{
    rg_test_ctx_t                 *t = *state;
    char                           id[16];
    size_t                         i;
    rg_session_t                  *s;
    const rg_thread_pool_stats_t  *st;

    /* 12 calls for 2 threads and a queue of 2: 8 wait on the reactor */
    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "tools_saturation.json");
    rg_test_engine(t, "thread_pool default threads=2 max_queue=2;",
                   "tools slow_blocking; tool_timeout 10s;");

    s = rg_test_session(t, "twelve naps");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_calls, 12);
    assert_int_equal(s->tool_errors, 0);
    assert_int_equal(rg_test_check_ids(t), 12);

    for (i = 0; i < 12; i++) {
        snprintf(id, sizeof(id), "call_%02zu", i);
        assert_string_equal(rg_test_result(t, id), "slept 20 ms");
    }

    st = rg_thread_pool_stats(rg_tools_ctx(t->engine)->pool);
    assert_int_equal(st->posted, 12);
    assert_int_equal(st->completed, 12);
    assert_true(st->overflowed >= 8);
    assert_true(st->busy_max <= 2);
}


/* 3. the model's arguments ------------------------------------------- */

static void
rg_test_arguments(void **state)
{
    rg_test_ctx_t  *t = *state;
    size_t          len;
    rg_session_t   *s;
    const char     *r;
    static const char  head[] = "error: arguments for calc are not valid "
                                "JSON: ";
    static const char  tail[] = "; send one JSON object";

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "tools_args.json");
    rg_test_engine(t, NULL, "tools calc echo;");

    s = rg_test_session(t, "messy arguments");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(rg_test_check_ids(t), 9);
    assert_int_equal(rg_test_stat(t, "rejected"), 0);

    /* repaired where that is safe */
    assert_string_equal(rg_test_result(t, "call_fence"), "3");
    assert_string_equal(rg_test_result(t, "call_blanks"), "6");
    assert_string_equal(rg_test_result(t, "call_array"), "8");
    assert_string_equal(rg_test_result(t, "call_double"), "3");
    assert_string_equal(rg_test_result(t, "call_empty"), "{}");

    /* coerced to the schema: the module sees the coerced value */
    assert_string_equal(rg_test_result(t, "call_number"), "42");
    assert_string_equal(rg_test_result(t, "call_coerced"), "{\"text\":\"5\"}");

    /* refused, with what to do about it */
    assert_string_equal(rg_test_result(t, "call_missing"),
                        "error: calc: parameter \"expression\" is required");

    r = rg_test_result(t, "call_garbage");
    len = strlen(r);

    if (strncmp(r, head, sizeof(head) - 1) != 0 || len < sizeof(tail) - 1
        || strcmp(r + len - (sizeof(tail) - 1), tail) != 0)
    {
        print_error("the error for \"{not json\": %s\n", r);
        fail();
    }

    assert_non_null(strstr(r, "(line 1, column "));

    assert_int_equal(s->tool_errors, 2);
}


static void
rg_test_trim(void **state)
{
    rg_test_ctx_t  *t = *state;
    char            full[512], want[512];
    size_t          len, i, h, tl;
    rg_session_t   *s;
    const char     *r;

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "tools_trim.json");
    rg_test_engine(t, "tool_result_limit 100;", "tools echo;");

    s = rg_test_session(t, "a long echo");

    assert_int_equal(s->state, RG_SESSION_DONE);

    /* what echo answered: its arguments, 411 bytes of 1- to 4-byte
     * characters */
    len = (size_t) snprintf(full, sizeof(full), "{\"text\":\"");
    for (i = 0; i < 40; i++) {
        len += (size_t) snprintf(full + len, sizeof(full) - len,
                                 "\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e" "a");
    }
    len += (size_t) snprintf(full + len, sizeof(full) - len, "\"}");
    assert_int_equal(len, 411);

    /* 70% of the limit from the head, backing off to the start of a
     * character; 20% from the tail, moving forward past one */
    for (h = 70; ((unsigned char) full[h] & 0xc0) == 0x80; h--) {
        /* void */
    }

    for (tl = len - 20; ((unsigned char) full[tl] & 0xc0) == 0x80; tl++) {
        /* void */
    }

    snprintf(want, sizeof(want), "%.*s\n[\xe2\x80\xa6 %zu bytes left out "
             "\xe2\x80\xa6]\n%s", (int) h, full, tl - h, full + tl);

    r = rg_test_result(t, "call_long");

    if (!rg_test_utf8_ok(r, strlen(r))) {
        print_error("not clean UTF-8: %s\n", r);
        fail();
    }

    assert_string_equal(r, want);
    assert_true(strlen(r) <= 100 + strlen("\n[\xe2\x80\xa6 322 bytes left out "
                                          "\xe2\x80\xa6]\n"));
}


/* 4. approval -------------------------------------------------------- */

static void
rg_test_approval_denied(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--rounds", "1");
    rg_test_engine(t, NULL, "tools danger;");

    rg_tools_set_approval(rg_tools_ctx(t->engine), RG_APPROVE_DENY);

    s = rg_test_session(t, "do something dangerous");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_errors, 1);
    assert_string_equal(rg_test_str(json_array_get(t->msgs, 3), "content"),
                        "error: danger is a dangerous tool and was not "
                        "approved; do without it or ask the user");
}


static void
rg_test_approval_agent(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--rounds", "1");
    rg_test_engine(t, NULL, "tools danger calc; approve danger;");

    rg_tools_set_approval(rg_tools_ctx(t->engine), RG_APPROVE_DENY);

    s = rg_test_session(t, "do something dangerous");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_errors, 0);
    assert_string_equal(rg_test_str(json_array_get(t->msgs, 3), "content"),
                        "ran");
}


static void
rg_test_approval_all(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--rounds", "1");
    rg_test_engine(t, NULL, "tools danger;");

    rg_tools_set_approval(rg_tools_ctx(t->engine), RG_APPROVE_ALL);

    s = rg_test_session(t, "do something dangerous");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_errors, 0);
    assert_string_equal(rg_test_str(json_array_get(t->msgs, 3), "content"),
                        "ran");
}


/* the pool's threads, as a task sees its own: the signal mask */
typedef struct {
    rg_thread_task_t    task;
    struct event_base  *base;
    sigset_t            mask;
    int                 rc;
} rg_test_mask_task_t;


static void
rg_test_mask_handler(rg_thread_task_t *task)
{
    rg_test_mask_task_t  *mt;

    mt = task->data;
    mt->rc = pthread_sigmask(SIG_SETMASK, NULL, &mt->mask);
}


static void
rg_test_mask_done(rg_thread_task_t *task)
{
    rg_test_mask_task_t  *mt;

    mt = task->data;
    event_base_loopbreak(mt->base);
}


/* Pool threads take no asynchronous signal (they are the reactor's):
 * every signal is blocked there but the faults a thread's own code
 * raises; the reactor's own mask is left as it was. */
static void
rg_test_pool_signals(void **state)
{
    rg_uint_t             i;
    sigset_t              before, after;
    rg_thread_pool_t     *tp;
    rg_test_mask_task_t   mt;

    static const int  blocked[] = { SIGINT, SIGTERM, SIGQUIT, SIGHUP,
                                    SIGCHLD, SIGPIPE, SIGUSR1, SIGUSR2,
                                    SIGALRM, SIGWINCH };
    static const int  faults[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL,
                                   SIGTRAP, SIGSYS };

    memset(&mt, 0, sizeof(mt));
    mt.rc = -1;
    mt.base = event_base_new();
    assert_non_null(mt.base);

    assert_int_equal(pthread_sigmask(SIG_SETMASK, NULL, &before), 0);

    tp = rg_thread_pool_create(mt.base, 2, 4, rg_log_stderr());
    assert_non_null(tp);

    assert_int_equal(pthread_sigmask(SIG_SETMASK, NULL, &after), 0);
    for (i = 1; i < 32; i++) {
        assert_int_equal(sigismember(&after, i), sigismember(&before, i));
    }

    mt.task.handler = rg_test_mask_handler;
    mt.task.done = rg_test_mask_done;
    mt.task.data = &mt;
    rg_thread_pool_post(tp, &mt.task);

    assert_int_equal(event_base_dispatch(mt.base), 0);
    assert_int_equal(mt.rc, 0);

    for (i = 0; i < rg_nelems(blocked); i++) {
        if (!sigismember(&mt.mask, blocked[i])) {
            print_error("signal %d (%s) reaches a pool thread\n",
                        blocked[i], strsignal(blocked[i]));
        }
        assert_true(sigismember(&mt.mask, blocked[i]));
    }

    for (i = 0; i < rg_nelems(faults); i++) {
        if (sigismember(&mt.mask, faults[i])) {
            print_error("signal %d (%s) is blocked in a pool thread\n",
                        faults[i], strsignal(faults[i]));
        }
        assert_false(sigismember(&mt.mask, faults[i]));
    }

    rg_thread_pool_destroy(tp);
    event_base_free(mt.base);
}


static void
rg_test_host_calls_done(rg_tool_turn_t *turn)
{
    event_base_loopbreak(turn->data);
}


/* http_get and agent_run asked from a pool thread are refused, and the
 * reasons host->error() gives there are the task's own: the run's
 * reactor-side buffer stays untouched */
static void
rg_test_thread_error(void **state)
{
    rg_test_ctx_t      *t = *state;
    rg_tool_run_t      *run;
    rg_tool_turn_t     *turn;
    rg_agent_conf_t    *agent;
    rg_tool_request_t   req;

    rg_test_mock(t, NULL);                  /* no model call is made */
    rg_test_engine(t, NULL, "tools slow_host_calls;");

    agent = rg_agent_find(t->cycle, "a", 1);
    assert_non_null(agent);

    memset(&req, 0, sizeof(req));
    req.id.data = (char *) "c1";
    req.id.len = 2;
    req.name.data = (char *) "slow_host_calls";
    req.name.len = strlen(req.name.data);
    req.arguments.data = (char *) "{}";
    req.arguments.len = 2;

    turn = rg_tools_turn_create(rg_tools_ctx(t->engine), &agent->toolset,
                                "s-thread", &req, 1, rg_test_host_calls_done,
                                t->engine->base, rg_log_stderr());
    assert_non_null(turn);

    rg_tools_turn_start(turn);
    if (turn->pending) {
        event_base_dispatch(t->engine->base);
    }
    assert_int_equal(turn->pending, 0);

    run = turn->runs[0];
    assert_true(run->pool.ran);
    assert_false(run->failed);
    assert_string_equal(run->result, "http_get: one http_get at a time, "
                        "from the reactor thread; agent_run: agent_run is "
                        "not available here");
    assert_string_equal(run->pool.error, "agent_run is not available here");
    assert_string_equal(run->error, "");

    rg_tools_turn_destroy(turn);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_pool_signals),
        cmocka_unit_test_setup_teardown(rg_test_thread_error,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_barrier_async,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_barrier_pool,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_result_order,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_timeout_async,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_timeout_blocking,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_timeout_blocking_same_turn,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_timeout_blocking_destroy,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_pool_saturated,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_arguments,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_trim,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_approval_denied,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_approval_agent,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_approval_all,
                                        rg_test_setup, rg_test_teardown),
    };

    return cmocka_run_group_tests_name("tools_parallel", tests, NULL, NULL);
}
