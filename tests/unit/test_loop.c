/* test_loop.c: integration tests of the agent loop (src/agent/rg_session.c)
 * with the LLM client (src/llm/rg_llm_client.c) and tool dispatch
 * (src/tools/rg_tools.c) over real HTTP against the project's mock model
 * (tests/mock/rg_mock.c, one child process per test on a free port).
 * Covers answers, parallel tool rounds, tool errors, max_rounds, retries
 * (429 with Retry-After, 5xx, timeouts, malformed bodies, refused
 * connections), fatal provider errors, 1,000 sessions at once and the
 * concurrency cap, the request's shape and the API key, transcripts,
 * cancellation (waiting for the model, queued, in backoff, running tools),
 * tool timeouts (a cancellable tool, a thread-pool tool) and thread-pool
 * calls that outlive their turn, their engine and their cycle. Scripts for
 * the mock are in tests/integration/loop_*.json. Time is asserted only as
 * lower bounds on the mock's own recorded arrival times, never as speed. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_event.h>
#include <rg_test.h>
#include <rg_test_session.h>
#include <rg_transcript.h>
#include <rg_thread_pool.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <event2/event.h>
#include <event2/event_struct.h>


#define RG_TEST_SCRIPTS     "tests/integration/"
#define RG_TEST_KEY_ENV     "RG_TEST_LOOP_API_KEY"
#define RG_TEST_KEY         "sk-rgtest-9f8e7d6c5b4a39281706"


/* what a test holds; the teardown releases whatever is left */
typedef struct {
    rg_test_mock_t     *mock;
    rg_cycle_t         *cycle;
    rg_engine_t        *engine;
    rg_session_t       *s;
    rg_session_t       *s2;           /* a second one, when a test runs two */
    json_t             *msgs;         /* s->msgs, parsed */
    json_t             *stats;        /* the mock's /stats */
    char               *text;         /* any malloc'ed text */
    char                err[512];
} rg_test_ctx_t;


#define rg_test_prefix(s, prefix)                                            \
    do {                                                                     \
        assert_non_null(s);                                                  \
        if (strncmp((s), (prefix), strlen(prefix)) != 0) {                   \
            print_error("\"%s\"\n    does not start with \"%s\"\n",      \
                        (s), (prefix));                                      \
        }                                                                    \
        assert_int_equal(strncmp((s), (prefix), strlen(prefix)), 0);         \
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

    rg_session_destroy(t->s);
    rg_test_engine_end(t->s2, t->engine, t->cycle, t->mock);

    json_decref(t->msgs);
    json_decref(t->stats);
    free(t->text);
    free(t);

    unsetenv(RG_TEST_KEY_ENV);

    return 0;
}


/* A cycle and an engine: tool modules calc and time (plus `modules`, a
 * list of load_module lines), llm "mock" at port with `llm` added to its
 * block (retry_base is 50ms unless it says otherwise), agent "a" made of
 * `agent`. */
static void
rg_test_engine(rg_test_ctx_t *t, int port, const char *modules,
    const char *llm, const char *agent)
{
    const char  *b;

    b = rg_test_build_dir();

    t->cycle = rg_test_cycle(t->err, sizeof(t->err),
        "load_module %s/modules/calc.so;\n"
        "load_module %s/modules/time.so;\n"
        "%s\n"
        "llm mock {\n"
        "    base_url http://127.0.0.1:%d/v1;\n"
        "    model mock-1;\n"
        "    %s\n"
        "    %s\n"
        "}\n"
        "agent a {\n"
        "    system_prompt \"You are a test.\";\n"
        "    %s\n"
        "}\n",
        b, b, modules ? modules : "", port,
        llm && strstr(llm, "retry_base") ? "" : "retry_base 50ms;",
        llm ? llm : "", agent);

    t->engine = rg_test_engine_of(t->cycle, t->err);
}


static rg_llm_upstream_t *
rg_test_upstream(rg_test_ctx_t *t)
{
    rg_llm_conf_t  *llm;

    llm = rg_llm_find(t->cycle, "mock", 4);
    assert_non_null(llm);
    assert_non_null(rg_llm_upstream(t->engine, llm));

    return rg_llm_upstream(t->engine, llm);
}


/* parses the messages of t->s into t->msgs */
static void
rg_test_parse_msgs(rg_test_ctx_t *t)
{
    json_t        *m;
    rg_msg_t      *msg;
    json_error_t   jerr;

    json_decref(t->msgs);
    t->msgs = json_array();
    assert_non_null(t->msgs);

    for (msg = t->s->msgs.head; msg; msg = msg->next) {
        m = json_loadb(msg->json.data, msg->json.len, 0, &jerr);
        if (m == NULL) {
            print_error("message \"%.*s\": %s\n", (int) msg->json.len,
                        msg->json.data, jerr.text);
        }
        assert_non_null(m);
        json_array_append_new(t->msgs, m);
    }

    assert_int_equal(json_array_size(t->msgs), t->s->msgs.n);
}


/* runs one task on agent "a" with rg_test_run(); keeps the session in
 * t->s and its messages, parsed, in t->msgs */
static rg_session_t *
rg_test_session(rg_test_ctx_t *t, const char *input)
{
    rg_session_destroy(t->s);

    t->s = rg_test_run(t->engine, "a", input);
    assert_non_null(t->s);
    assert_true(rg_session_final(t->s));

    rg_test_parse_msgs(t);

    return t->s;
}


static void
rg_test_loop_done(rg_session_t *s)
{
    event_base_loopbreak(s->engine->base);
}


static void
rg_test_cancel_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_session_cancel(arg, "cancelled by the test");
}


/* Runs one task on agent "a" as rg_test_session() does, but recorded
 * (rg_transcript_start) when asked, and cancelled after cancel_ms when that
 * is not 0. */
static rg_session_t *
rg_test_session_ex(rg_test_ctx_t *t, const char *input, int record,
    long cancel_ms)
{
    struct event      ev;
    struct timeval    tv;
    rg_agent_conf_t  *a;

    rg_session_destroy(t->s);

    a = rg_agent_find(t->cycle, "a", 1);
    assert_non_null(a);

    t->s = rg_session_create(t->engine, a, "task-1", input, strlen(input),
                             rg_test_loop_done, NULL);
    assert_non_null(t->s);

    if (record) {
        assert_int_equal(rg_transcript_start(t->s), RG_OK);
    }

    assert_int_equal(rg_session_start(t->s), RG_OK);

    if (cancel_ms) {
        tv.tv_sec = cancel_ms / 1000;
        tv.tv_usec = (cancel_ms % 1000) * 1000;

        assert_int_equal(evtimer_assign(&ev, t->engine->base,
                                        rg_test_cancel_handler, t->s), 0);
        assert_int_equal(evtimer_add(&ev, &tv), 0);
    }

    if (!rg_session_final(t->s)) {
        event_base_dispatch(t->engine->base);
    }

    if (cancel_ms) {
        event_del(&ev);
    }

    assert_true(rg_session_final(t->s));
    rg_test_parse_msgs(t);

    return t->s;
}


/* the roles of the messages, one letter each: "suat" */
static const char *
rg_test_roles(rg_test_ctx_t *t)
{
    static char   roles[256];
    size_t        n;
    rg_msg_t     *msg;

    n = 0;
    for (msg = t->s->msgs.head; msg && n < sizeof(roles) - 1;
         msg = msg->next)
    {
        roles[n++] = msg->role;
    }
    roles[n] = '\0';

    return roles;
}


static const char *
rg_test_msg_str(rg_test_ctx_t *t, size_t i, const char *key)
{
    json_t  *v;

    v = json_object_get(json_array_get(t->msgs, i), key);
    if (!json_is_string(v)) {
        print_error("message %zu has no string \"%s\"\n", i, key);
    }
    assert_true(json_is_string(v));

    return json_string_value(v);
}


/* the content of the tool message that answers tool_call_id */
static const char *
rg_test_tool_result(rg_test_ctx_t *t, const char *id)
{
    return rg_test_tool_answer(t->msgs, id);
}


/* Every assistant message with tool calls is followed by exactly one tool
 * message per call, in the order of the calls, carrying its id. Returns
 * the number of calls seen. */
static size_t
rg_test_check_ids(rg_test_ctx_t *t)
{
    size_t       i, k, n, ncalls, total;
    json_t      *m, *calls;
    const char  *role, *id;

    total = 0;
    n = json_array_size(t->msgs);

    for (i = 0; i < n; i++) {
        m = json_array_get(t->msgs, i);
        role = json_string_value(json_object_get(m, "role"));
        assert_non_null(role);

        if (strcmp(role, "tool") == 0) {
            print_error("tool message %zu answers no assistant message\n", i);
            fail();
        }

        if (strcmp(role, "assistant") != 0) {
            continue;
        }

        calls = json_object_get(m, "tool_calls");
        ncalls = json_array_size(calls);

        for (k = 0; k < ncalls; k++) {
            id = json_string_value(json_object_get(json_array_get(calls, k),
                                                   "id"));
            assert_non_null(id);
            assert_true(i + 1 + k < n);

            assert_string_equal(rg_test_msg_str(t, i + 1 + k, "role"),
                                "tool");
            assert_string_equal(rg_test_msg_str(t, i + 1 + k,
                                                "tool_call_id"), id);
        }

        total += ncalls;
        i += ncalls;
    }

    return total;
}


/* the mock's /stats, kept in t->stats */
static json_t *
rg_test_stats(rg_test_ctx_t *t)
{
    char  *body;

    body = rg_test_mock_get(t->mock, "/stats");
    assert_non_null(body);

    json_decref(t->stats);
    t->stats = json_loads(body, 0, NULL);
    free(body);

    assert_non_null(t->stats);

    return t->stats;
}


static long
rg_test_stat(rg_test_ctx_t *t, const char *field)
{
    json_t  *v;

    v = json_object_get(rg_test_stats(t), field);
    assert_true(json_is_integer(v));

    return (long) json_integer_value(v);
}


/* the gap between the mock's arrival times of requests i and i + 1 */
static long
rg_test_gap(rg_test_ctx_t *t, size_t i)
{
    json_t  *times;

    times = json_object_get(rg_test_stats(t), "times_ms");
    assert_true(json_array_size(times) > i + 1);

    return (long) (json_integer_value(json_array_get(times, i + 1))
                   - json_integer_value(json_array_get(times, i)));
}


/* a loopback port where nothing listens */
static int
rg_test_closed_port(void)
{
    int                 fd, port;
    socklen_t           len;
    struct sockaddr_in  sin;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = 0;

    assert_int_equal(bind(fd, (struct sockaddr *) &sin, sizeof(sin)), 0);

    len = sizeof(sin);
    assert_int_equal(getsockname(fd, (struct sockaddr *) &sin, &len), 0);
    port = ntohs(sin.sin_port);

    close(fd);             /* bound, never listened: refused from now on */

    return port;
}


typedef struct {
    void               *curl;
    int                 n;
} rg_test_timers_t;


static int
rg_test_count_timer(const struct event_base *base, const struct event *ev,
    void *arg)
{
    rg_test_timers_t  *tm;

    tm = arg;

    /* curl's own timer may stay armed with no transfer (connection
     * upkeep); it is the multi driver's, not a session's */
    if (event_pending(ev, EV_TIMEOUT, NULL)
        && event_get_callback_arg(ev) != tm->curl)
    {
        tm->n++;
    }

    return 0;
}


/* timers still armed on the reactor besides curl's: a tool's, a
 * backoff's, a deadline's */
static int
rg_test_pending_timers(rg_test_ctx_t *t)
{
    rg_test_timers_t  tm;

    tm.curl = rg_event_ctx(t->engine);
    tm.n = 0;

    assert_int_equal(event_base_foreach_event(t->engine->base,
                                              rg_test_count_timer, &tm), 0);

    return tm.n;
}


/* 1. answers ---------------------------------------------------------- */

static void
rg_test_answer_no_tools(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--rounds", "3");
    rg_test_engine(t, t->mock->port, NULL, NULL, "");

    s = rg_test_session(t, "say hello");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_null(s->reason);
    assert_int_equal(s->round, 1);
    assert_int_equal(s->tool_calls, 0);
    assert_string_equal(rg_test_roles(t), "sua");

    assert_string_equal(rg_test_msg_str(t, 0, "role"), "system");
    assert_string_equal(rg_test_msg_str(t, 0, "content"), "You are a test.");
    assert_string_equal(rg_test_msg_str(t, 1, "role"), "user");
    assert_string_equal(rg_test_msg_str(t, 1, "content"), "say hello");
    assert_string_equal(rg_test_msg_str(t, 2, "role"), "assistant");
    assert_string_equal(rg_test_msg_str(t, 2, "content"),
                        "Final answer: say hello");

    assert_int_equal(s->answer.len, strlen("Final answer: say hello"));
    assert_memory_equal(s->answer.data, "Final answer: say hello",
                        s->answer.len);

    assert_true(s->prompt_tokens > 0);
    assert_true(s->completion_tokens > 0);
    assert_int_equal(rg_test_stat(t, "requests"), 1);
    assert_int_equal(rg_test_stat(t, "rejected"), 0);
}


static void
rg_test_answer_rounds_zero(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    /* tools offered, but the model answers at once */
    rg_test_mock(t, "--rounds", "0");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc time_now;");

    s = rg_test_session(t, "no tools needed");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 1);
    assert_int_equal(s->tool_calls, 0);
    assert_string_equal(rg_test_roles(t), "sua");
    assert_string_equal(rg_test_msg_str(t, 2, "content"),
                        "Final answer: no tools needed");
    assert_int_equal(rg_test_stat(t, "requests"), 1);
}


/* 2. parallel rounds -------------------------------------------------- */

/* what calc answers for the examples of its schema */
static const char *
rg_test_calc_value(const char *expr)
{
    size_t  i;

    static const char  *values[][2] = {
        { "2*(3+4)", "14" },
        { "17*23+4", "395" },
        { "sqrt(144)/3", "4" },
        { "2^10-1", "1023" },
        { "(1+2)*(3+4)", "21" },
        { "100/8", "12.5" },
        { "max(3,9,4)", "9" },
        { "round(pi*1000)", "3142" },
    };

    assert_non_null(expr);

    for (i = 0; i < rg_nelems(values); i++) {
        if (strcmp(values[i][0], expr) == 0) {
            return values[i][1];
        }
    }

    print_error("no known value for the expression \"%s\"\n", expr);
    fail();

    return NULL;
}


static void
rg_test_parallel_rounds(void **state)
{
    rg_test_ctx_t  *t = *state;
    char            answer[256];
    size_t          i, k;
    json_t         *calls, *fn, *args;
    rg_session_t   *s;
    const char     *expr;

    rg_test_mock(t, "--rounds", "3", "--calls", "2");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc time_now;");

    s = rg_test_session(t, "compute");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_null(s->reason);
    assert_int_equal(s->round, 4);
    assert_int_equal(s->tool_calls, 6);
    assert_int_equal(s->tool_errors, 0);
    assert_string_equal(rg_test_roles(t), "suattattatta");

    assert_int_equal(rg_test_check_ids(t), 6);

    /* each tool message holds the value of its own call's expression
     * (the mock takes them from calc's schema examples) */
    for (i = 0; i < json_array_size(t->msgs); i++) {
        if (strcmp(rg_test_msg_str(t, i, "role"), "assistant") != 0) {
            continue;
        }

        calls = json_object_get(json_array_get(t->msgs, i), "tool_calls");

        for (k = 0; k < json_array_size(calls); k++) {
            fn = json_object_get(json_array_get(calls, k), "function");
            assert_string_equal(json_string_value(json_object_get(fn,
                                                                  "name")),
                                "calc");

            args = json_loads(json_string_value(json_object_get(fn,
                                                                "arguments")),
                              0, NULL);
            assert_non_null(args);

            expr = json_string_value(json_object_get(args, "expression"));
            assert_string_equal(rg_test_msg_str(t, i + 1 + k, "content"),
                                rg_test_calc_value(expr));
            json_decref(args);
        }
    }

    /* the mock's final answer echoes the last tool result */
    snprintf(answer, sizeof(answer), "Final answer after 3 rounds: %s",
             rg_test_msg_str(t, 10, "content"));
    assert_string_equal(rg_test_msg_str(t, 11, "content"), answer);
    assert_int_equal(s->answer.len, strlen(answer));
    assert_memory_equal(s->answer.data, answer, s->answer.len);

    assert_int_equal(rg_test_stat(t, "requests"), 4);
    assert_int_equal(rg_test_stat(t, "completions"), 4);
    assert_int_equal(rg_test_stat(t, "rejected"), 0);
}


/* 3. unknown tool ----------------------------------------------------- */

static void
rg_test_unknown_tool(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "loop_unknown_tool.json");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc time_now;");

    s = rg_test_session(t, "call something odd");

    /* the mock rejects a tool message whose id answers no call: done
     * means the id matched */
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 2);
    assert_int_equal(s->tool_calls, 1);
    assert_int_equal(s->tool_errors, 1);
    assert_string_equal(rg_test_roles(t), "suata");
    assert_int_equal(rg_test_check_ids(t), 1);

    assert_string_equal(rg_test_tool_result(t, "call_unknown_1"),
                        "error: unknown tool \"no_such_tool\"; the tools "
                        "you can call are: calc, time_now");
    assert_string_equal(rg_test_msg_str(t, 4, "content"),
                        "there is no such tool");

    assert_int_equal(rg_test_stat(t, "rejected"), 0);
    assert_int_equal(rg_test_stat(t, "requests"), 2);
}


/* 4. invalid arguments and failing handlers --------------------------- */

static void
rg_test_bad_arguments(void **state)
{
    rg_test_ctx_t  *t = *state;
    char            modules[512];
    const char     *r;
    rg_session_t   *s;

    snprintf(modules, sizeof(modules),
             "load_module %s/tests/plugins/fail.so;", rg_test_build_dir());

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "loop_bad_args.json");
    rg_test_engine(t, t->mock->port, modules, NULL,
                   "tools calc time_now always_fail error_noanswer;");

    s = rg_test_session(t, "try everything");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_null(s->reason);
    assert_int_equal(s->round, 2);
    assert_int_equal(s->tool_calls, 6);
    assert_int_equal(s->tool_errors, 4);
    assert_string_equal(rg_test_roles(t), "suatttttta");
    assert_int_equal(rg_test_check_ids(t), 6);

    r = rg_test_tool_result(t, "call_notjson");
    rg_test_prefix(r, "error: arguments for calc are not valid JSON");
    rg_test_contains(r, "send one JSON object");

    /* an object instead of a string: accepted, and the tool ran on it */
    assert_string_equal(rg_test_tool_result(t, "call_object"), "42");

    /* "" means {}: valid JSON, but calc's "expression" is missing */
    r = rg_test_tool_result(t, "call_empty_calc");
    rg_test_prefix(r, "error: calc");
    rg_test_contains(r, "expression");
    rg_test_lacks(r, "JSON");

    /* "" for a tool with no required argument: it runs, in UTC */
    r = rg_test_tool_result(t, "call_empty_time");
    assert_true(strlen(r) > 25 && r[4] == '-' && r[10] == 'T');
    rg_test_contains(r, "+00:00 (UTC, ");

    assert_string_equal(rg_test_tool_result(t, "call_fail"),
                        "error: always_fail failed: backend unavailable: "
                        "connection refused");
    assert_string_equal(rg_test_tool_result(t, "call_noanswer"),
                        "error: error_noanswer failed without saying why");

    /* the assistant message went back with string arguments (the mock
     * rejects anything else) */
    assert_int_equal(rg_test_stat(t, "rejected"), 0);
    assert_int_equal(rg_test_stat(t, "requests"), 2);

    assert_string_equal(rg_test_msg_str(t, 9, "content"),
                        "handled every error");
}


/* A round's answer and its turn's scratch (the parsed calls, the turn's
 * arrays) go with the next model call: past the first rounds, the
 * session's pool grows by the messages it keeps and little more. Run 2
 * rounds and then 8: the difference is bounded by the messages' bytes,
 * their headers and one block (the pool grows by 6 KiB blocks). */
static size_t
rg_test_rounds_pool(rg_test_ctx_t *t, const char *rounds, size_t *bytes,
    size_t *nmsgs)
{
    rg_session_t  *s;

    /* a fresh mock and engine for each run */
    rg_session_destroy(t->s);
    t->s = NULL;
    rg_engine_destroy(t->engine);
    t->engine = NULL;
    rg_cycle_destroy(t->cycle);
    t->cycle = NULL;
    rg_test_mock_stop(t->mock);
    t->mock = NULL;

    rg_test_mock(t, "--rounds", rounds, "--calls", "2");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc; "
                   "max_rounds 20;");

    s = rg_test_session(t, "compute");
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, (rg_uint_t) atoi(rounds) + 1);
    assert_non_null(s->answer.data);
    assert_true(s->answer.len > 0);
    /* no turn is left: the arrays went with the last round's pool */
    assert_null(s->calls);

    *bytes = s->msgs.bytes;
    *nmsgs = s->msgs.n;

    return s->pool->total;
}


static void
rg_test_rounds_memory(void **state)
{
    rg_test_ctx_t  *t = *state;
    size_t          few, many, fbytes, mbytes, fn, mn, bound;

    few = rg_test_rounds_pool(t, "2", &fbytes, &fn);
    many = rg_test_rounds_pool(t, "8", &mbytes, &mn);

    bound = (mbytes - fbytes) + (mn - fn) * (sizeof(rg_msg_t) + 32)
            + RG_SESSION_POOL_SIZE;

    if (many - few > bound) {
        print_error("the pool grew by %zu bytes over 6 more rounds, more "
                    "than the %zu bytes of the messages kept (bound %zu)\n",
                    many - few, mbytes - fbytes, bound);
    }
    assert_true(many - few <= bound);
}


/* A session, its pool and what a short task keeps share one block: one
 * malloc of a size the allocator has a class for. The bench's task (3
 * rounds of 2 calls, 4 answers) fits in the 5 KiB class: a session of
 * the memory store carries no durable state, and one without a deadline
 * no deadline event; the provider's ids are in the round's pool. */
static void
rg_test_session_block(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;
    char           *p, *b;

    rg_test_mock(t, "--rounds", "3", "--calls", "2");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc;");

    s = rg_test_session(t, "compute");
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 4);
    assert_int_equal(s->tool_calls, 6);

    /* the pool and the session inside the one block it took */
    assert_true(s->pool->inner);
    if (s->pool->total != 5120) {
        print_error("the session's pool took %zu bytes, not one block of "
                    "5 KiB (the session is %zu bytes)\n", s->pool->total,
                    sizeof(rg_session_t));
    }
    assert_int_equal(RG_SESSION_POOL_SIZE, 5120);
    assert_int_equal(s->pool->total, RG_SESSION_POOL_SIZE);
    b = (char *) s->pool;
    p = (char *) s;
    assert_true(p > b && p + sizeof(rg_session_t) <= b + RG_SESSION_POOL_SIZE);
    assert_true(sizeof(rg_session_t) < RG_SESSION_POOL_SIZE / 2);

    assert_null(s->dur);
    assert_null(s->deadline_ev);
}


/* 5. max_rounds ------------------------------------------------------- */

static void
rg_test_max_rounds(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--rounds", "5");
    rg_test_engine(t, t->mock->port, NULL, NULL,
                   "tools calc; max_rounds 2;");

    s = rg_test_session(t, "loop forever");

    assert_int_equal(s->state, RG_SESSION_MAX_ROUNDS);
    assert_string_equal(rg_session_state_name(s->state), "max_rounds");
    assert_non_null(s->reason);
    rg_test_contains(s->reason, "max_rounds");
    rg_test_contains(s->reason, "2 rounds");
    assert_int_equal(s->round, 2);
    assert_int_equal(s->tool_calls, 1);
    assert_int_equal(s->answer.len, 0);
    assert_int_equal(rg_test_stat(t, "requests"), 2);
}


/* 6. 429 with Retry-After --------------------------------------------- */

static void
rg_test_429_retry_after(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--fault", "429", "--fault-count", "1",
                 "--retry-after", "1");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc;");

    s = rg_test_session(t, "rate limited once");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 2);
    assert_int_equal(rg_test_upstream(t)->stats.retries, 1);

    assert_int_equal(rg_test_stat(t, "requests"), 3);
    assert_int_equal(rg_test_stat(t, "faults"), 1);
    assert_int_equal(rg_test_stat(t, "completions"), 2);

    /* the backoff would be 25..50 ms; Retry-After: 1 says 1000 */
    assert_true(rg_test_gap(t, 0) >= 1000 - RG_TEST_CLOCK_SLACK);
}


static void
rg_test_429_retry_after_ms(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--fault", "429", "--fault-count", "1",
                 "--retry-after-ms", "300");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc;");

    s = rg_test_session(t, "rate limited once");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(rg_test_stat(t, "requests"), 3);
    assert_int_equal(rg_test_stat(t, "faults"), 1);
    assert_true(rg_test_gap(t, 0) >= 300 - RG_TEST_CLOCK_SLACK);
}


/* 7. 5xx retried ------------------------------------------------------ */

static void
rg_test_500_retried(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--fault", "500", "--fault-count", "2");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc;");

    s = rg_test_session(t, "server trouble");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 2);
    assert_int_equal(s->tool_calls, 1);

    /* 2 faults, then the 2 calls of a one-round session */
    assert_int_equal(rg_test_stat(t, "requests"), 4);
    assert_int_equal(rg_test_stat(t, "faults"), 2);
    assert_int_equal(rg_test_stat(t, "completions"), 2);
    assert_int_equal(rg_test_upstream(t)->stats.retries, 2);

    /* exponential backoff from retry_base 50ms: 25..50, then 50..100 */
    assert_true(rg_test_gap(t, 0) >= 25 - RG_TEST_CLOCK_SLACK);
    assert_true(rg_test_gap(t, 1) >= 50 - RG_TEST_CLOCK_SLACK);
}


/* 8. fatal statuses --------------------------------------------------- */

static void
rg_test_fatal(rg_test_ctx_t *t, const char *fault, const char *status,
    const char *message)
{
    rg_session_t  *s;

    rg_test_mock(t, "--fault", fault, "--fault-count", "0");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc;");

    s = rg_test_session(t, "fatal");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    assert_non_null(s->reason);
    rg_test_contains(s->reason, message);
    rg_test_contains(s->reason, status);
    assert_int_equal(s->round, 1);
    assert_int_equal(s->tool_calls, 0);
    assert_string_equal(rg_test_roles(t), "su");

    assert_int_equal(rg_test_stat(t, "requests"), 1);
    assert_int_equal(rg_test_upstream(t)->stats.retries, 0);
}


static void
rg_test_400_fatal(void **state)
{
    rg_test_fatal(*state, "400", "HTTP 400",
                  "Invalid request (injected fault).");
}


static void
rg_test_401_fatal(void **state)
{
    rg_test_fatal(*state, "401", "HTTP 401", "Incorrect API key provided.");
}


static void
rg_test_404_fatal(void **state)
{
    rg_test_fatal(*state, "404", "HTTP 404",
                  "The model `mock-1` does not exist");
}


/* 9. timeouts --------------------------------------------------------- */

static void
rg_test_hang_timeout(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--fault", "hang", "--fault-count", "0");
    rg_test_engine(t, t->mock->port, NULL, "timeout 1s; max_retries 1;",
                   "tools calc;");

    s = rg_test_session(t, "wait");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_contains(s->reason, "the model did not answer in time");
    rg_test_contains(s->reason, "after 1 retry ");
    assert_int_equal(rg_test_upstream(t)->stats.retries, 1);
    assert_int_equal(rg_test_stat(t, "requests"), 2);
    assert_true(rg_test_gap(t, 0) >= 1000 - RG_TEST_CLOCK_SLACK);
}


static void
rg_test_idle_timeout(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    /* the whole-request timeout is far; a stream that sends nothing ends
     * at the idle timeout (a whole answer's idle clock starts later, at
     * its first byte: tests/unit/test_llm_client.c) */
    rg_test_mock(t, "--fault", "hang", "--fault-count", "0");
    rg_test_engine(t, t->mock->port, NULL,
                   "timeout 60s; idle_timeout 1s; max_retries 0; stream on;",
                   "tools calc;");

    s = rg_test_session(t, "wait");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_contains(s->reason, "the model did not answer in time");
    rg_test_contains(s->reason, "no byte for 1s (idle_timeout)");
    assert_int_equal(rg_test_stat(t, "requests"), 1);
}


/* 10. malformed bodies ------------------------------------------------ */

static void
rg_test_malformed_retried(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--fault", "malformed", "--fault-count", "1");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc;");

    s = rg_test_session(t, "bad body once");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 2);
    assert_int_equal(rg_test_upstream(t)->stats.retries, 1);
    assert_int_equal(rg_test_stat(t, "requests"), 3);
    assert_int_equal(rg_test_stat(t, "faults"), 1);
}


static void
rg_test_malformed_fatal(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--fault", "malformed", "--fault-count", "0");
    rg_test_engine(t, t->mock->port, NULL, "max_retries 1;", "tools calc;");

    s = rg_test_session(t, "bad body always");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_contains(s->reason, "malformed");
    rg_test_contains(s->reason, "after 1 retry ");
    assert_string_equal(rg_test_roles(t), "su");
    assert_int_equal(rg_test_stat(t, "requests"), 2);
}


/* 11. connection refused ---------------------------------------------- */

static void
rg_test_refused(void **state)
{
    rg_test_ctx_t      *t = *state;
    rg_session_t       *s;
    rg_llm_upstream_t  *up;

    rg_test_engine(t, rg_test_closed_port(), NULL, "max_retries 2;",
                   "tools calc;");

    s = rg_test_session(t, "nobody home");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_contains(s->reason, "cannot reach the model");
    rg_test_contains(s->reason, "after 2 retries");
    rg_test_contains(s->reason, "llm \"mock\"");

    up = rg_test_upstream(t);
    assert_int_equal(up->stats.requests, 3);
    assert_int_equal(up->stats.retries, 2);
    assert_int_equal(up->stats.failures, 1);
    assert_int_equal(up->stats.active, 0);
}


/* 12. many sessions, and the concurrency cap -------------------------- */

static void
rg_test_thousand_sessions(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_uint_t       i, n, *states;

    n = 1000;

    rg_test_mock(t, "--rounds", "1", "--calls", "2");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc;");

    states = calloc(n, sizeof(rg_uint_t));
    assert_non_null(states);
    t->text = (char *) states;

    assert_int_equal(rg_test_run_many(t->engine, "a", n, states), n);

    for (i = 0; i < n; i++) {
        assert_int_equal(states[i], RG_SESSION_DONE);
    }

    assert_int_equal(rg_agent_ctx(t->engine)->live, 0);
    assert_int_equal(rg_agent_ctx(t->engine)->stats.sessions, n);
    assert_int_equal(rg_agent_ctx(t->engine)->stats.model_calls, 2 * n);
    assert_int_equal(rg_agent_ctx(t->engine)->stats.tool_calls, 2 * n);
    assert_int_equal(rg_agent_ctx(t->engine)->stats.tool_errors, 0);

    assert_int_equal(rg_test_stat(t, "requests"), 2 * n);
    assert_int_equal(rg_test_stat(t, "completions"), 2 * n);
    assert_int_equal(rg_test_stat(t, "rejected"), 0);
}


static void
rg_test_concurrency_cap(void **state)
{
    rg_test_ctx_t      *t = *state;
    rg_uint_t           i, n, *states;
    rg_llm_upstream_t  *up;

    n = 200;

    /* a little latency so that requests pile up behind the cap */
    rg_test_mock(t, "--rounds", "1", "--calls", "2", "--latency", "20");
    rg_test_engine(t, t->mock->port, NULL, "max_connections 8;",
                   "tools calc;");

    states = calloc(n, sizeof(rg_uint_t));
    assert_non_null(states);
    t->text = (char *) states;

    assert_int_equal(rg_test_run_many(t->engine, "a", n, states), n);

    for (i = 0; i < n; i++) {
        assert_int_equal(states[i], RG_SESSION_DONE);
    }

    up = rg_test_upstream(t);
    assert_int_equal(up->stats.max_active, 8);
    assert_true(up->stats.queued > 0);
    assert_int_equal(up->stats.active, 0);
    assert_null(up->queue_head);

    assert_int_equal(rg_test_stat(t, "requests"), 2 * n);
    assert_true(rg_test_stat(t, "max_inflight") <= 8);
    assert_true(rg_test_stat(t, "max_inflight") >= 2);
}


/* 13. the request ----------------------------------------------------- */

static json_t *
rg_test_last_request(rg_test_ctx_t *t)
{
    char    *body;
    json_t  *j;

    body = rg_test_mock_get(t->mock, "/last_request");
    assert_non_null(body);

    j = json_loads(body, 0, NULL);
    free(body);
    assert_non_null(j);

    return j;
}


static void
rg_test_request_shape(void **state)
{
    rg_test_ctx_t    *t = *state;
    char              rid[64];
    json_t           *last, *h, *b, *tool, *fn, *schema, *msgs;
    rg_session_t     *s;
    rg_agent_conf_t  *a;
    const char       *v;

    rg_test_mock(t, "--rounds", "1");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc time_now;");

    s = rg_test_session(t, "shape");
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 2);

    last = rg_test_last_request(t);
    h = json_object_get(last, "headers");
    b = json_object_get(last, "body");

    /* X-Request-ID: the session id and the round it asks for */
    assert_int_equal(strncmp(s->id, "s-", 2), 0);
    snprintf(rid, sizeof(rid), "%s-2", s->id);
    v = json_string_value(json_object_get(h, "x-request-id"));
    assert_non_null(v);
    assert_string_equal(v, rid);

    assert_null(json_object_get(h, "authorization"));
    assert_string_equal(json_string_value(json_object_get(h,
                                                          "content-type")),
                        "application/json");

    assert_string_equal(json_string_value(json_object_get(b, "model")),
                        "mock-1");
    assert_true(json_is_number(json_object_get(b, "temperature")));
    assert_true(json_number_value(json_object_get(b, "temperature")) == 0);
    assert_string_equal(json_string_value(json_object_get(b, "tool_choice")),
                        "auto");
    assert_null(json_object_get(b, "stream"));

    /* tools: calc's own definition, then time_now */
    a = rg_agent_find(t->cycle, "a", 1);
    assert_non_null(a);
    assert_int_equal(json_array_size(json_object_get(b, "tools")), 2);

    tool = json_array_get(json_object_get(b, "tools"), 0);
    assert_string_equal(json_string_value(json_object_get(tool, "type")),
                        "function");
    fn = json_object_get(tool, "function");
    assert_string_equal(json_string_value(json_object_get(fn, "name")),
                        "calc");
    assert_string_equal(json_string_value(json_object_get(fn,
                                                          "description")),
                        a->toolset.tools[0]->tool->description);

    schema = json_loads(a->toolset.tools[0]->tool->parameters, 0, NULL);
    assert_non_null(schema);
    assert_true(json_equal(schema, json_object_get(fn, "parameters")));
    json_decref(schema);

    fn = json_object_get(json_array_get(json_object_get(b, "tools"), 1),
                         "function");
    assert_string_equal(json_string_value(json_object_get(fn, "name")),
                        "time_now");

    /* the second request carries the whole conversation so far */
    msgs = json_object_get(b, "messages");
    assert_int_equal(json_array_size(msgs), 4);
    assert_true(json_equal(json_array_get(msgs, 3),
                           json_array_get(t->msgs, 3)));

    json_decref(last);
}


static void
rg_test_request_key(void **state)
{
    rg_test_ctx_t  *t = *state;
    json_t         *last, *h;
    rg_session_t   *s;

    assert_int_equal(setenv(RG_TEST_KEY_ENV, RG_TEST_KEY, 1), 0);

    /* requests 1 and 2 are refused, then all goes well */
    rg_test_mock(t, "--fault", "401", "--fault-count", "2");
    rg_test_engine(t, t->mock->port, NULL,
                   "api_key_env " RG_TEST_KEY_ENV ";", "tools calc;");

    /* the reason of a refused call quotes the provider, never the key */
    s = rg_test_session_ex(t, "first", 1, 0);

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_contains(s->reason, "Incorrect API key provided.");
    rg_test_contains(s->reason, "HTTP 401");
    rg_test_lacks(s->reason, RG_TEST_KEY);
    rg_test_lacks(s->reason, "Bearer");

    last = rg_test_last_request(t);
    h = json_object_get(last, "headers");
    assert_string_equal(json_string_value(json_object_get(h,
                                                          "authorization")),
                        "present");
    json_decref(last);

    t->text = rg_transcript_text(s);
    assert_non_null(t->text);
    rg_test_contains(t->text, "Incorrect API key provided.");
    rg_test_lacks(t->text, RG_TEST_KEY);
    rg_test_lacks(t->text, "Bearer");
    free(t->text);
    t->text = NULL;

    /* the plain runner: refused again */
    s = rg_test_session(t, "second");
    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_lacks(s->reason, RG_TEST_KEY);

    /* a recorded session that succeeds */
    s = rg_test_session_ex(t, "third", 1, 0);
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 2);

    t->text = rg_transcript_text(s);
    assert_non_null(t->text);
    rg_test_lacks(t->text, RG_TEST_KEY);
    rg_test_lacks(t->text, "Bearer");

    last = rg_test_last_request(t);
    h = json_object_get(last, "headers");
    assert_string_equal(json_string_value(json_object_get(h,
                                                          "authorization")),
                        "present");
    json_decref(last);

    assert_int_equal(rg_test_stat(t, "requests"), 4);
}


/* the transcript of a recorded session names each model call by the
 * X-Request-ID it was sent with */
static void
rg_test_transcript(void **state)
{
    rg_test_ctx_t  *t = *state;
    char            rid[64];
    size_t          i, models, tools;
    json_t         *tr, *last, *ev;
    rg_session_t   *s;
    const char     *type;

    rg_test_mock(t, "--rounds", "1");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc;");

    s = rg_test_session_ex(t, "record me", 1, 0);
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 2);

    t->text = rg_transcript_text(s);
    assert_non_null(t->text);

    tr = json_loads(t->text, 0, NULL);
    assert_non_null(tr);
    json_decref(t->stats);
    t->stats = tr;

    assert_string_equal(json_string_value(json_object_get(tr, "status")),
                        "done");
    assert_string_equal(json_string_value(json_object_get(tr, "session")),
                        s->id);
    assert_int_equal(json_integer_value(json_object_get(tr, "rounds")), 2);
    assert_int_equal(json_array_size(json_object_get(tr, "messages")),
                     s->msgs.n);
    assert_true(json_equal(json_object_get(tr, "messages"), t->msgs));

    /* the mock saw the second call as "<session>-2" */
    last = rg_test_last_request(t);
    snprintf(rid, sizeof(rid), "%s-2", s->id);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(last, "headers"),
                            "x-request-id")),
                        rid);
    json_decref(last);

    /* events: two model calls, each with its request id, and one call
     * of calc with the id the model gave it */
    models = 0;
    tools = 0;

    json_array_foreach(json_object_get(tr, "events"), i, ev) {
        type = json_string_value(json_object_get(ev, "type"));
        assert_non_null(type);

        if (strcmp(type, "model_call") == 0) {
            models++;
            snprintf(rid, sizeof(rid), "%s-%zu", s->id, models);
            assert_string_equal(json_string_value(json_object_get(ev,
                                                        "request_id")),
                                rid);
            assert_int_equal(json_integer_value(json_object_get(ev,
                                                        "round")),
                             models);

        } else if (strcmp(type, "tool_call") == 0) {
            tools++;
            assert_string_equal(json_string_value(json_object_get(ev,
                                                              "name")),
                                "calc");
            assert_string_equal(json_string_value(json_object_get(ev,
                                                      "tool_call_id")),
                                rg_test_msg_str(t, 3, "tool_call_id"));
            assert_int_equal(json_integer_value(json_object_get(ev,
                                                               "round")),
                             1);
            assert_true(json_is_true(json_object_get(ev, "ok")));
        }
    }

    assert_int_equal(models, 2);
    assert_int_equal(tools, 1);

}


/* 14. cancellation ---------------------------------------------------- */

/* the mock notices the client leave: its pending reply goes away */
static void
rg_test_wait_inflight_zero(rg_test_ctx_t *t)
{
    int              i;
    struct timespec  ts;

    ts.tv_sec = 0;
    ts.tv_nsec = 10 * 1000 * 1000;

    for (i = 0; i < 300; i++) {
        if (rg_test_stat(t, "inflight") == 0) {
            return;
        }
        nanosleep(&ts, NULL);
    }

    assert_int_equal(rg_test_stat(t, "inflight"), 0);
}


static void
rg_test_cancel_model_wait(void **state)
{
    rg_test_ctx_t      *t = *state;
    rg_session_t       *s;
    rg_llm_upstream_t  *up;

    rg_test_mock(t, "--latency", "5000");
    rg_test_engine(t, t->mock->port, NULL, NULL, "tools calc;");

    s = rg_test_session_ex(t, "slow model", 0, 100);

    assert_int_equal(s->state, RG_SESSION_CANCELLED);
    assert_string_equal(s->reason, "cancelled by the test");
    assert_int_equal(s->round, 0);
    assert_true(s->handler_called);

    up = rg_test_upstream(t);
    assert_int_equal(up->stats.active, 0);
    assert_int_equal(up->stats.requests, 1);

    assert_int_equal(rg_test_stat(t, "requests"), 1);
    assert_int_equal(rg_test_stat(t, "completions"), 0);
    rg_test_wait_inflight_zero(t);

    assert_int_equal(rg_agent_ctx(t->engine)->live, 1);
    rg_session_destroy(t->s);
    t->s = NULL;
    assert_int_equal(rg_agent_ctx(t->engine)->live, 0);
}


static void
rg_test_cancel_tools_running(void **state)
{
    rg_test_ctx_t  *t = *state;
    char            modules[512];
    rg_session_t   *s;

    snprintf(modules, sizeof(modules),
             "load_module %s/tests/plugins/slow.so;", rg_test_build_dir());

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "loop_slow_tool.json");
    rg_test_engine(t, t->mock->port, modules, NULL, "tools slow_async;");

    s = rg_test_session_ex(t, "slow tool", 0, 300);

    assert_int_equal(s->state, RG_SESSION_CANCELLED);
    assert_string_equal(s->reason, "cancelled by the test");
    assert_int_equal(s->round, 1);
    assert_null(s->turn);
    assert_int_equal(rg_test_stat(t, "requests"), 1);

    /* the tool's timer was cancelled with the turn: nothing fires later */
    rg_session_destroy(t->s);
    t->s = NULL;
    assert_int_equal(rg_test_pending_timers(t), 0);
}


/* the owners of two sessions: counts them down, and keeps what the
 * second one ended with when its handler destroys it */
typedef struct {
    rg_test_ctx_t      *t;
    rg_uint_t           left;
    rg_session_state_e  state;
    char                reason[256];
    unsigned            destroy:1;
} rg_test_owner_t;


static void
rg_test_owner_done(rg_session_t *s)
{
    rg_test_owner_t  *o;

    o = s->data;

    if (o->destroy) {
        /* a handler may destroy its session (rg_session.h) */
        o->state = s->state;
        snprintf(o->reason, sizeof(o->reason), "%s",
                 s->reason ? s->reason : "");

        if (o->t->s == s) {
            o->t->s = NULL;
        }
        rg_session_destroy(s);
    }

    if (--o->left == 0) {
        event_base_loopbreak(o->t->engine->base);
    }
}


static void
rg_test_cancel_queued(void **state)
{
    rg_test_ctx_t      *t = *state;
    struct event        ev;
    struct timeval      tv;
    rg_agent_conf_t    *conf;
    rg_test_owner_t     o;
    rg_llm_upstream_t  *up;

    /* one connection: the second session waits in the queue */
    rg_test_mock(t, "--latency", "500");
    rg_test_engine(t, t->mock->port, NULL, "max_connections 1;",
                   "tools calc;");

    memset(&o, 0, sizeof(o));
    o.t = t;
    o.left = 2;

    conf = rg_agent_find(t->cycle, "a", 1);
    assert_non_null(conf);

    t->s2 = rg_session_create(t->engine, conf, NULL, "first", 5,
                              rg_test_owner_done, &o);
    assert_non_null(t->s2);
    t->s = rg_session_create(t->engine, conf, NULL, "second", 6,
                             rg_test_owner_done, &o);
    assert_non_null(t->s);

    assert_int_equal(rg_session_start(t->s2), RG_OK);
    assert_int_equal(rg_session_start(t->s), RG_OK);

    up = rg_test_upstream(t);
    assert_int_equal(up->stats.active, 1);
    assert_true(t->s->req.queued);

    tv.tv_sec = 0;
    tv.tv_usec = 100 * 1000;
    assert_int_equal(evtimer_assign(&ev, t->engine->base,
                                    rg_test_cancel_handler, t->s), 0);
    assert_int_equal(evtimer_add(&ev, &tv), 0);

    event_base_dispatch(t->engine->base);
    event_del(&ev);

    assert_int_equal(o.left, 0);
    assert_int_equal(t->s->state, RG_SESSION_CANCELLED);
    assert_int_equal(t->s->round, 0);
    assert_false(t->s->req.queued);
    assert_null(up->queue_head);

    assert_int_equal(t->s2->state, RG_SESSION_DONE);
    assert_int_equal(t->s2->round, 2);

    /* only the first session's two calls were ever sent */
    assert_int_equal(up->stats.requests, 2);
    assert_int_equal(up->stats.queued, 1);
    assert_int_equal(rg_test_stat(t, "requests"), 2);
    assert_int_equal(rg_test_stat(t, "max_inflight"), 1);
}


static void
rg_test_cancel_backoff(void **state)
{
    rg_test_ctx_t      *t = *state;
    struct event        ev;
    struct timeval      tv;
    rg_agent_conf_t    *conf;
    rg_test_owner_t     o;
    rg_llm_upstream_t  *up;

    /* every call fails, and the first retry waits 2.5..5 s */
    rg_test_mock(t, "--fault", "500", "--fault-count", "0");
    rg_test_engine(t, t->mock->port, NULL, "retry_base 5s;", "tools calc;");

    memset(&o, 0, sizeof(o));
    o.t = t;
    o.left = 1;
    o.destroy = 1;

    conf = rg_agent_find(t->cycle, "a", 1);
    assert_non_null(conf);

    t->s = rg_session_create(t->engine, conf, NULL, "retry later", 11,
                             rg_test_owner_done, &o);
    assert_non_null(t->s);
    assert_int_equal(rg_session_start(t->s), RG_OK);

    tv.tv_sec = 0;
    tv.tv_usec = 300 * 1000;
    assert_int_equal(evtimer_assign(&ev, t->engine->base,
                                    rg_test_cancel_handler, t->s), 0);
    assert_int_equal(evtimer_add(&ev, &tv), 0);

    event_base_dispatch(t->engine->base);
    event_del(&ev);

    /* the handler destroyed the session */
    assert_int_equal(o.left, 0);
    assert_null(t->s);
    assert_int_equal(rg_agent_ctx(t->engine)->live, 0);
    assert_int_equal(o.state, RG_SESSION_CANCELLED);
    assert_string_equal(o.reason, "cancelled by the test");

    up = rg_test_upstream(t);
    assert_int_equal(up->stats.retries, 1);
    assert_int_equal(up->stats.requests, 1);
    assert_int_equal(up->stats.active, 0);
    assert_int_equal(rg_test_stat(t, "requests"), 1);

    /* the backoff timer went with the session */
    assert_int_equal(rg_test_pending_timers(t), 0);
}


/* 15. tool timeout ---------------------------------------------------- */

static void
rg_test_tool_timeout(void **state)
{
    rg_test_ctx_t  *t = *state;
    char            modules[512];
    const char     *r;
    rg_session_t   *s;

    snprintf(modules, sizeof(modules),
             "load_module %s/tests/plugins/slow.so;", rg_test_build_dir());

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "loop_tool_timeout.json");
    rg_test_engine(t, t->mock->port, modules, NULL,
                   "tools slow_async; tool_timeout 200ms;");

    s = rg_test_session(t, "slow tools");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 2);
    assert_int_equal(s->tool_calls, 2);
    assert_int_equal(s->tool_errors, 1);
    assert_string_equal(rg_test_roles(t), "suatta");
    assert_int_equal(rg_test_check_ids(t), 2);

    r = rg_test_tool_result(t, "call_slow");
    assert_string_equal(r, "error: slow_async timed out after 0.2s; try a "
                           "smaller request or another approach");
    assert_string_equal(rg_test_tool_result(t, "call_quick"),
                        "waited 50 ms");
    assert_string_equal(rg_test_msg_str(t, 5, "content"),
                        "gave up on the slow one");

    assert_int_equal(rg_test_stat(t, "requests"), 2);
    assert_int_equal(rg_test_stat(t, "rejected"), 0);

    /* the late answer was cancelled: no timer is left on the reactor */
    assert_int_equal(rg_test_pending_timers(t), 0);
}


static void
rg_test_tool_timeout_pool(void **state)
{
    rg_test_ctx_t                 *t = *state;
    int                            i;
    char                           modules[512];
    rg_session_t                  *s;
    struct timeval                 tv;
    const rg_thread_pool_stats_t  *st;

    snprintf(modules, sizeof(modules),
             "load_module %s/tests/plugins/slow.so;", rg_test_build_dir());

    /* slow_blocking runs in the thread pool, which cannot stop it: its
     * answer comes after its session is gone */
    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "loop_blocking_timeout.json");
    rg_test_engine(t, t->mock->port, modules, NULL,
                   "tools slow_blocking; tool_timeout 200ms;");

    s = rg_test_session(t, "blocking tool");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 2);
    assert_int_equal(s->tool_errors, 1);
    assert_string_equal(rg_test_roles(t), "suata");
    assert_string_equal(rg_test_tool_result(t, "call_blocking"),
                        "error: slow_blocking timed out after 0.2s; try a "
                        "smaller request or another approach");
    assert_string_equal(rg_test_msg_str(t, 4, "content"),
                        "moved on without it");

    rg_session_destroy(t->s);
    t->s = NULL;

    st = rg_thread_pool_stats(rg_tools_ctx(t->engine)->pool);
    assert_int_equal(st->posted, 1);

    /* let the late answer arrive: it must free the orphaned call and
     * touch nothing of the session (ASan watches) */
    for (i = 0; i < 150 && st->completed < st->posted; i++) {
        tv.tv_sec = 0;
        tv.tv_usec = 20 * 1000;
        event_base_loopexit(t->engine->base, &tv);
        event_base_dispatch(t->engine->base);
    }

    assert_int_equal(st->completed, 1);
    assert_int_equal(rg_test_pending_timers(t), 0);
    assert_int_equal(rg_agent_ctx(t->engine)->live, 0);
}


/* A blocking call outlives its turn: the deadline ends both sessions of a
 * batch while their calls sleep in the pool, and the calls' own timeouts
 * fall after that and before the calls return. The orphaned calls' timers
 * must be gone with their turns (a timer that fired read the freed turn
 * and crashed the worker); each late answer frees its call. */
static void
rg_test_tool_outlives_turn(void **state)
{
    rg_test_ctx_t                 *t = *state;
    int                            i;
    char                           modules[512];
    rg_uint_t                      states[2];
    struct timeval                 tv;
    const rg_thread_pool_stats_t  *st;

    snprintf(modules, sizeof(modules),
             "load_module %s/tests/plugins/slow.so;", rg_test_build_dir());

    rg_test_mock(t, "--script",
                 RG_TEST_SCRIPTS "loop_blocking_deadline.json");
    rg_test_engine(t, t->mock->port, modules, NULL,
                   "tools slow_blocking; tool_timeout 600ms; "
                   "deadline 300ms;");

    assert_int_equal(rg_test_run_many(t->engine, "a", 2, states), 0);
    assert_int_equal(states[0], RG_SESSION_DEADLINE_EXCEEDED);
    assert_int_equal(states[1], RG_SESSION_DEADLINE_EXCEEDED);
    assert_int_equal(rg_agent_ctx(t->engine)->live, 0);

    st = rg_thread_pool_stats(rg_tools_ctx(t->engine)->pool);
    assert_int_equal(st->posted, 2);

    /* past the calls' timeouts, until both calls have returned */
    for (i = 0; i < 250 && st->completed < st->posted; i++) {
        tv.tv_sec = 0;
        tv.tv_usec = 20 * 1000;
        event_base_loopexit(t->engine->base, &tv);
        event_base_dispatch(t->engine->base);
    }

    assert_int_equal(st->completed, 2);
    assert_int_equal(rg_test_pending_timers(t), 0);
}


/* A blocking call still runs when its engine and then its cycle are
 * destroyed (longer than the pool waits at exit). The cycle, its module
 * loaded and configured, is kept until the call returns: the plugin's
 * exit() aborts if it is called while a call runs, and the late answer
 * reaches a host table that is still there (ASan watches). */
static void
rg_test_tool_outlives_cycle(void **state)
{
    rg_test_ctx_t  *t = *state;
    int             i;
    char            modules[512];
    rg_uint_t       kept;
    rg_session_t   *s;

    snprintf(modules, sizeof(modules),
             "load_module %s/tests/plugins/slow.so;", rg_test_build_dir());

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "loop_blocking_exit.json");
    rg_test_engine(t, t->mock->port, modules, NULL,
                   "tools slow_blocking; tool_timeout 200ms;");

    s = rg_test_session(t, "blocking tool");
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_string_equal(rg_test_tool_result(t, "call_sleep"),
                        "error: slow_blocking timed out after 0.2s; try a "
                        "smaller request or another approach");

    rg_session_destroy(t->s);
    t->s = NULL;

    /* the pool waits for its threads, then leaves the busy one */
    rg_engine_destroy(t->engine);
    t->engine = NULL;

    kept = rg_cycle_kept();
    rg_cycle_destroy(t->cycle);
    t->cycle = NULL;
    assert_int_equal(rg_cycle_kept(), kept + 1);

    /* once the call has returned, the next destroy frees it */
    for (i = 0; i < 500 && rg_cycle_kept() > kept; i++) {
        usleep(20 * 1000);
        rg_cycle_destroy(NULL);
    }

    assert_int_equal(rg_cycle_kept(), kept);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup_teardown(rg_test_answer_no_tools,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_answer_rounds_zero,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_parallel_rounds,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_rounds_memory,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_session_block,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_unknown_tool,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_bad_arguments,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_max_rounds,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_429_retry_after,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_429_retry_after_ms,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_500_retried,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_400_fatal,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_401_fatal,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_404_fatal,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_hang_timeout,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_idle_timeout,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_malformed_retried,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_malformed_fatal,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_refused,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_thousand_sessions,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_concurrency_cap,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_request_shape,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_request_key,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_transcript,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_cancel_model_wait,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_cancel_tools_running,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_cancel_queued,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_cancel_backoff,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_tool_timeout,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_tool_timeout_pool,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_tool_outlives_turn,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_tool_outlives_cycle,
                                        rg_test_setup, rg_test_teardown),
    };

    return cmocka_run_group_tests_name("loop", tests, NULL, NULL);
}
