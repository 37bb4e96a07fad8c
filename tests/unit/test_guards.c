/* test_guards.c: what keeps an agent loop bounded and cheap, through the
 * loop (src/agent/rg_session.c) and the LLM client (src/llm/
 * rg_llm_client.c) against the mock model (tests/mock/rg_mock.c).
 *
 * Guards: max_tokens, deadline, tool_max_calls (the capped tool is no
 * longer offered; counts past 65535 neither wrap nor miss the cap),
 * repeated identical calls (a nudge first, then loop_detected past
 * repeat_limit). Dedupe of RG_TOOL_READ_ONLY tools:
 * scope session from the session's own calls, scopes agent and global
 * through the store, dedupe_ttl; a hit is shown not to run by a file that
 * changes between the calls (fs read_file). Retries: Retry-After,
 * retry_budget, the fallback llm, the concurrency cap (max_connections)
 * and requests_per_minute, checked on the mock's own arrival times and
 * counters, never on the test's clock. Scripts: tests/integration/
 * guards_*.json. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tools_conf.h>
#include <rg_store_conf.h>
#include <rg_test.h>
#include <rg_test_session.h>
#include <rg_transcript.h>
#include <rg_store.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <event2/event.h>


#define RG_TEST_SCRIPTS     "tests/integration/"


typedef struct {
    rg_test_mock_t     *mock;
    rg_test_mock_t     *mock2;
    rg_cycle_t         *cycle;
    rg_engine_t        *engine;
    rg_session_t       *s;
    json_t             *msgs;         /* s->msgs, parsed */
    json_t             *json;         /* any other parsed answer */
    char                dir[64];      /* the fs root, when there is one */
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
    char            path[128];
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_engine_end(t->s, t->engine, t->cycle, t->mock);
    rg_test_mock_stop(t->mock2);

    if (t->dir[0]) {
        snprintf(path, sizeof(path), "%s/notes.txt", t->dir);
        unlink(path);
        rmdir(t->dir);
    }

    json_decref(t->msgs);
    json_decref(t->json);
    free(t);

    return 0;
}


/* a cycle and an engine from configuration text, with calc, time and fs
 * (rooted at t->dir, or /tmp) loaded in front of it */
static void
rg_test_conf(rg_test_ctx_t *t, const char *fmt, ...)
{
    char         *text;
    va_list       args;
    const char   *b;

    va_start(args, fmt);
    assert_true(vasprintf(&text, fmt, args) >= 0);
    va_end(args);

    b = rg_test_build_dir();

    t->cycle = rg_test_cycle(t->err, sizeof(t->err),
        "load_module %s/modules/calc.so;\n"
        "load_module %s/modules/time.so;\n"
        "load_module %s/modules/fs.so;\n"
        "module fs { root %s; }\n"
        "%s\n",
        b, b, b, t->dir[0] ? t->dir : "/tmp", text);

    free(text);

    t->engine = rg_test_engine_of(t->cycle, t->err);
}


/* llm "mock" at the mock's port with `llm` added, agent "a" of `agent` */
static void
rg_test_engine(rg_test_ctx_t *t, const char *llm, const char *agent)
{
    rg_test_conf(t,
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
        t->mock->port,
        llm && strstr(llm, "retry_base") ? "" : "retry_base 20ms;",
        llm ? llm : "", agent);
}


/* one task on `agent`, created, not started: t->s */
static rg_session_t *
rg_test_session_new(rg_test_ctx_t *t, const char *agent, const char *input)
{
    rg_agent_conf_t  *a;

    rg_session_destroy(t->s);

    a = rg_agent_find(t->cycle, agent, strlen(agent));
    assert_non_null(a);

    t->s = rg_session_create(t->engine, a, NULL, input, strlen(input),
                             NULL, NULL);
    assert_non_null(t->s);

    return t->s;
}


/* starts t->s and runs it to its end; parses its messages into t->msgs */
static rg_session_t *
rg_test_session_run(rg_test_ctx_t *t)
{
    json_t    *m;
    rg_msg_t  *msg;

    rg_session_start(t->s);

    while (!rg_session_final(t->s)) {
        assert_int_equal(event_base_loop(t->engine->base, EVLOOP_ONCE), 0);
    }

    json_decref(t->msgs);
    t->msgs = json_array();
    assert_non_null(t->msgs);

    for (msg = t->s->msgs.head; msg; msg = msg->next) {
        m = json_loadb(msg->json.data, msg->json.len, 0, NULL);
        assert_non_null(m);
        json_array_append_new(t->msgs, m);
    }

    return t->s;
}


/* runs one task on `agent` to its end, recorded when asked; parses its
 * messages into t->msgs */
static rg_session_t *
rg_test_session_on(rg_test_ctx_t *t, const char *agent, const char *input,
    int record)
{
    rg_test_session_new(t, agent, input);

    if (record) {
        assert_int_equal(rg_transcript_start(t->s), RG_OK);
    }

    return rg_test_session_run(t);
}


static rg_session_t *
rg_test_session(rg_test_ctx_t *t, const char *input)
{
    return rg_test_session_on(t, "a", input, 0);
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


/* the content of the n-th tool message (from 0) */
static const char *
rg_test_tool_msg(rg_test_ctx_t *t, size_t n)
{
    size_t   i;
    json_t  *m;

    json_array_foreach(t->msgs, i, m) {
        if (strcmp(rg_test_str(m, "role"), "tool") == 0 && n-- == 0) {
            return rg_test_str(m, "content");
        }
    }

    print_error("fewer tool messages than asked for\n");
    fail();

    return NULL;
}


static size_t
rg_test_count_tool_msgs(rg_test_ctx_t *t)
{
    size_t   i, n;
    json_t  *m;

    n = 0;
    json_array_foreach(t->msgs, i, m) {
        n += strcmp(rg_test_str(m, "role"), "tool") == 0;
    }

    return n;
}


/* the tool messages are these contents, in order, and no more */
static void
rg_test_tool_msgs(rg_test_ctx_t *t, const char *const *want)
{
    size_t  i;

    for (i = 0; want[i]; i++) {
        assert_string_equal(rg_test_tool_msg(t, i), want[i]);
    }

    assert_int_equal(rg_test_count_tool_msgs(t), i);
}


static json_t *
rg_test_get(rg_test_ctx_t *t, rg_test_mock_t *mock, const char *path)
{
    char  *body;

    body = rg_test_mock_get(mock, path);
    assert_non_null(body);

    json_decref(t->json);
    t->json = json_loads(body, 0, NULL);
    free(body);

    assert_non_null(t->json);

    return t->json;
}


static long
rg_test_stat(rg_test_ctx_t *t, rg_test_mock_t *mock, const char *field)
{
    json_t  *v;

    v = json_object_get(rg_test_get(t, mock, "/stats"), field);
    assert_true(json_is_integer(v));

    return (long) json_integer_value(v);
}


/* the mock's arrival time of request i, in ms */
static long
rg_test_time(rg_test_ctx_t *t, size_t i)
{
    json_t  *times;

    times = json_object_get(rg_test_get(t, t->mock, "/stats"), "times_ms");
    assert_true(json_array_size(times) > i);

    return (long) json_integer_value(json_array_get(times, i));
}


/* does the request body offer the tool? */
static int
rg_test_offers(json_t *body, const char *tool)
{
    size_t   i;
    json_t  *tl;

    json_array_foreach(json_object_get(body, "tools"), i, tl) {
        if (strcmp(json_string_value(json_object_get(
                       json_object_get(tl, "function"), "name")), tool) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* an fs root holding notes.txt */
static void
rg_test_fs_root(rg_test_ctx_t *t)
{
    snprintf(t->dir, sizeof(t->dir), "/tmp/rg-guards-XXXXXX");
    assert_non_null(mkdtemp(t->dir));
}


static void
rg_test_notes(rg_test_ctx_t *t, const char *text)
{
    char   path[128];
    FILE  *f;

    snprintf(path, sizeof(path), "%s/notes.txt", t->dir);

    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}


static void
rg_test_sleep_ms(long ms)
{
    struct timespec  ts;

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;

    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
        /* void */
    }
}


/* 1. guards ------------------------------------------------------------ */

static void
rg_test_max_tokens(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    /* the mock counts a quarter of the body as prompt tokens: the first
     * answer alone is over 10 */
    rg_test_mock(t, "--rounds", "3");
    rg_test_engine(t, NULL, "tools calc; max_tokens 10;");

    s = rg_test_session(t, "spend tokens");

    assert_int_equal(s->state, RG_SESSION_BUDGET_EXCEEDED);
    assert_non_null(s->reason);
    assert_non_null(strstr(s->reason, "max_tokens"));
    assert_non_null(strstr(s->reason, "of its 10 tokens"));
    assert_int_equal(s->round, 1);
    assert_int_equal(s->tool_calls, 0);
    assert_true(s->prompt_tokens + s->completion_tokens >= 10);
    assert_int_equal(rg_test_stat(t, t->mock, "requests"), 1);
}


static void
rg_test_deadline(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--rounds", "1", "--latency", "1000");
    rg_test_engine(t, NULL, "tools calc; deadline 300ms;");

    s = rg_test_session(t, "too slow");

    assert_int_equal(s->state, RG_SESSION_DEADLINE_EXCEEDED);
    assert_non_null(s->reason);
    assert_non_null(strstr(s->reason, "deadline of 0.3s"));
    assert_non_null(strstr(s->reason, "model_wait"));
    assert_int_equal(s->round, 0);

    /* no request of the session is left in the client */
    assert_int_equal(rg_llm_upstream(s->engine, s->llm)->stats.active, 0);
}


/* A session's count of calls to a tool never wraps below its cap: it is
 * unsigned and holds any tool_max_calls (an rg_int_t), so a narrower type
 * (the uint16_t it once was) does not build. */
_Static_assert(_Generic(((rg_session_t *) 0)->tool_counts[0],
                        rg_uint_t: 1, default: 0),
               "tool_counts are rg_uint_t");
_Static_assert(sizeof(((rg_session_t *) 0)->tool_counts[0])
               >= sizeof(((rg_agent_conf_t *) 0)->tool_max_calls),
               "tool_counts hold any tool_max_calls");
_Static_assert(sizeof(((rg_session_t *) 0)->tool_counts[0])
               >= sizeof(((rg_agent_conf_t *) 0)->tool_caps[0]),
               "tool_counts hold any tool_max_calls NAME N");


static void
rg_test_tool_max_calls(void **state)
{
    rg_test_ctx_t  *t = *state;
    size_t          i, n;
    json_t         *tr, *ev, *body;
    rg_session_t   *s;
    char           *text;

    /* the mock calls the first tool offered: calc, then time_now */
    rg_test_mock(t, "--rounds", "3");
    rg_test_engine(t, NULL, "tools calc time_now; tool_max_calls calc 1;");

    s = rg_test_session_on(t, "a", "one calc only", 1);

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 4);
    assert_int_equal(s->tool_calls, 3);
    assert_int_equal(rg_test_count_tool_msgs(t), 3);

    assert_string_equal(rg_test_tool_msg(t, 0), "14\n(note: that was the "
                        "last calc call allowed in this task; it is no "
                        "longer available)");

    /* the later calls went to time_now */
    n = 0;
    json_array_foreach(t->msgs, i, ev) {
        ev = json_array_get(json_object_get(ev, "tool_calls"), 0);
        if (ev) {
            assert_string_equal(rg_test_str(json_object_get(ev, "function"),
                                            "name"),
                                n++ ? "time_now" : "calc");
        }
    }
    assert_int_equal(n, 3);

    /* the first request offered calc, none after it did */
    text = rg_transcript_text(s);
    assert_non_null(text);
    tr = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(tr);

    i = 0;
    json_array_foreach(json_object_get(tr, "events"), i, ev) {
        if (strcmp(rg_test_str(ev, "type"), "model_call") != 0) {
            continue;
        }

        body = json_object_get(ev, "request");
        assert_non_null(body);

        assert_true(rg_test_offers(body, "time_now"));
        /* rounds count from 1: the first model call is round 1 */
        assert_int_equal(rg_test_offers(body, "calc"),
                         json_integer_value(json_object_get(ev, "round"))
                         == 1);
    }

    json_decref(tr);

    body = json_object_get(rg_test_get(t, t->mock, "/last_request"), "body");
    assert_false(rg_test_offers(body, "calc"));
    assert_true(rg_test_offers(body, "time_now"));
}


/* Counters past 16 bits: tool_max_calls 70000 is taken, and counts
 * preset to 65535 (where a 16-bit counter wraps to 0) and 69999 go on
 * to 65537 and 70000, reach their caps there and refuse the next call. */
static void
rg_test_tool_max_calls_wide(void **state)
{
    rg_test_ctx_t     *t = *state;
    rg_int_t           calc, tnow;
    rg_session_t      *s;
    rg_agent_conf_t   *a;

    /* the mock calls the first tool offered: calc, then time_now */
    rg_test_mock(t, "--rounds", "4");
    rg_test_engine(t, NULL, "tools calc time_now; tool_max_calls 70000; "
                   "tool_max_calls calc 65537;");

    a = rg_agent_find(t->cycle, "a", 1);
    assert_non_null(a);
    calc = rg_toolset_find(&a->toolset, "calc", 4);
    tnow = rg_toolset_find(&a->toolset, "time_now", 8);
    assert_true(calc >= 0 && tnow >= 0);
    assert_int_equal(a->tool_max_calls, 70000);
    assert_int_equal(a->tool_caps[calc], 65537);
    assert_int_equal(a->tool_caps[tnow], 70000);

    s = rg_test_session_new(t, "a", "many calls before");
    s->tool_counts[calc] = 65535;
    s->tool_counts[tnow] = 69999;
    s->tool_calls = 65535;
    rg_test_session_run(t);

    if (s->state != RG_SESSION_DONE) {
        print_error("%s\n", s->reason ? s->reason : "");
    }
    assert_int_equal(s->state, RG_SESSION_DONE);

    /* calc twice (the second its last), time_now once (its last), then
     * no tool was left to offer: the fourth round answered */
    assert_int_equal(s->tool_counts[calc], 65537);
    assert_int_equal(s->tool_counts[tnow], 70000);
    assert_int_equal(s->tool_calls, 65535 + 3);
    assert_int_equal(rg_test_count_tool_msgs(t), 3);
    assert_null(strstr(rg_test_tool_msg(t, 0), "error"));
    assert_null(strstr(rg_test_tool_msg(t, 0), "(note:"));
    assert_non_null(strstr(rg_test_tool_msg(t, 1), "(note: that was the "
                           "last calc call allowed in this task"));
    assert_non_null(strstr(rg_test_tool_msg(t, 2), "(note: that was the "
                           "last time_now call allowed in this task"));

    /* and the last request offered neither */
    assert_false(rg_test_offers(json_object_get(rg_test_get(t, t->mock,
                                    "/last_request"), "body"), "calc"));
    assert_false(rg_test_offers(json_object_get(t->json, "body"),
                                "time_now"));
}


/* the same call every round, as a stuck model makes it */
static void
rg_test_repeat(rg_test_ctx_t *t, const char *agent)
{
    size_t              i;
    rg_session_t       *s;
    const char         *r;
    static const char   nudge[] = "2\n(you already called calc with these "
                                  "arguments in round ";

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "guards_repeat.json");
    rg_test_engine(t, NULL, agent);

    s = rg_test_session(t, "add one and one, forever");

    if (s->state != RG_SESSION_LOOP_DETECTED) {
        print_error("ended %s after %lu rounds, %lu repeats: %s\n",
                    rg_session_state_name(s->state),
                    (unsigned long) s->round, (unsigned long) s->repeats,
                    s->reason ? s->reason : "");
        for (i = 0; i < rg_test_count_tool_msgs(t); i++) {
            print_error("round %zu: %s\n", i + 1, rg_test_tool_msg(t, i));
        }
    }

    /* rounds 2, 3 and 4 repeat round 1 and are nudged; the 4th repeat,
     * in round 5, is past repeat_limit 3 */
    assert_int_equal(s->state, RG_SESSION_LOOP_DETECTED);
    assert_int_equal(s->round, 5);
    assert_int_equal(s->repeats, 4);
    assert_non_null(strstr(s->reason, "repeated identical tool calls 4 "
                                      "times"));
    assert_non_null(strstr(s->reason, "calc"));

    /* the nudges came first: each an answer, and what to do instead */
    assert_int_equal(rg_test_count_tool_msgs(t), 4);
    assert_string_equal(rg_test_tool_msg(t, 0), "2");

    for (i = 1; i < 4; i++) {
        r = rg_test_tool_msg(t, i);
        assert_memory_equal(r, nudge, sizeof(nudge) - 1);
        assert_non_null(strstr(r, "; answer from this result or change "
                                  "approach)"));
    }

    assert_string_equal(rg_test_tool_msg(t, 1), "2\n(you already called "
                        "calc with these arguments in round 1; answer from "
                        "this result or change approach)");
}


static void
rg_test_repeat_wide_window(void **state)
{
    /* every repeat is within the window of round 1 */
    rg_test_repeat(*state, "tools calc; max_rounds 10; repeat_window 10;");
}


static void
rg_test_repeat_default_window(void **state)
{
    /* the defaults: repeat_window 2, repeat_limit 3, dedupe session. A
     * call repeated every round is a loop whatever the window: each
     * repeat is within 2 rounds of the one before it. */
    rg_test_repeat(*state, "tools calc; max_rounds 10;");
}


/* the arguments a tool reads: canonical when a guard compares the calls
 * (repeats, dedupe), else compact in the model's order; checked by the
 * schema either way (good.so's echo answers with the text it got) */
static void
rg_test_args_text(rg_test_ctx_t *t, const char *agent, const char *first)
{
    rg_session_t  *s;

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "guards_args_text.json");
    rg_test_conf(t,
        "load_module %s/tests/plugins/good.so;\n"
        "llm mock { base_url http://127.0.0.1:%d/v1; model mock-1; }\n"
        "agent a { tools echo; %s }\n",
        rg_test_build_dir(), t->mock->port, agent);

    s = rg_test_session(t, "echo three times");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(rg_test_count_tool_msgs(t), 3);
    assert_string_equal(rg_test_tool_msg(t, 0), first);

    /* a number where the schema wants a string, and no JSON at all */
    assert_string_equal(rg_test_tool_msg(t, 1), "{\"text\":\"5\"}");
    assert_memory_equal(rg_test_tool_msg(t, 2), "error: ", 7);
    assert_non_null(strstr(rg_test_tool_msg(t, 2), "echo"));
}


static void
rg_test_args_canonical(void **state)
{
    /* the defaults: repeat_window 2, dedupe session */
    rg_test_args_text(*state, "", "{\"b\":1,\"text\":\"hi\"}");
}


static void
rg_test_args_canonical_dedupe(void **state)
{
    rg_test_args_text(*state, "repeat_window 0;",
                      "{\"b\":1,\"text\":\"hi\"}");
}


static void
rg_test_args_canonical_repeat(void **state)
{
    rg_test_args_text(*state, "dedupe off;", "{\"b\":1,\"text\":\"hi\"}");
}


static void
rg_test_args_unguarded(void **state)
{
    rg_test_args_text(*state, "repeat_window 0; dedupe off;",
                      "{\"text\":\"hi\",\"b\":1}");
}


/* 2. dedupe ------------------------------------------------------------ */

/* the transcript's tool calls: each is cached exactly when its id is one
 * of the space-separated ids; how many there are */
static size_t
rg_test_cached_ids(rg_session_t *s, const char *ids)
{
    char        *text;
    size_t       i, n, len;
    json_t      *tr, *ev;
    const char  *id, *p;
    rg_uint_t    listed;

    text = rg_transcript_text(s);
    assert_non_null(text);
    tr = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(tr);

    n = 0;
    json_array_foreach(json_object_get(tr, "events"), i, ev) {
        if (strcmp(rg_test_str(ev, "type"), "tool_call") != 0) {
            continue;
        }

        id = rg_test_str(ev, "tool_call_id");
        len = strlen(id);
        listed = 0;

        for (p = strstr(ids, id); p; p = strstr(p + 1, id)) {
            if ((p == ids || p[-1] == ' ') && (p[len] == ' ' || !p[len])) {
                listed = 1;
                break;
            }
        }

        assert_int_equal(json_is_true(json_object_get(ev, "cached")), listed);
        n++;
    }

    json_decref(tr);

    return n;
}


static void
rg_test_dedupe_session(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    /* calc 1+1 in round 1 and again in round 4, beyond repeat_window 2,
     * written differently: a cache hit, not a repeat */
    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "guards_dedupe_session.json");
    rg_test_engine(t, NULL, "tools calc;");

    s = rg_test_session_on(t, "a", "the same sum twice", 1);

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 5);
    assert_int_equal(s->tool_calls, 4);
    assert_int_equal(s->repeats, 0);
    assert_int_equal(s->dedupe_hits, 1);
    assert_int_equal(rg_agent_ctx(t->engine)->stats.dedupe_hits, 1);

    /* answered as round 1 was, without a note */
    rg_test_tool_msgs(t, (const char *[]) { "2", "4", "6", "2", NULL });

    /* and not run: the transcript says where each answer came from */
    assert_int_equal(rg_test_cached_ids(s, "call_r4"), 4);
}


/* identical calls of one turn (written differently, two of one, three of
 * another) run once each; the others take their result */
static void
rg_test_dedupe_twins(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "guards_dedupe_twins.json");
    rg_test_engine(t, NULL, "tools calc;");

    s = rg_test_session_on(t, "a", "twins", 1);

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_calls, 5);
    assert_int_equal(s->dedupe_hits, 3);
    assert_int_equal(rg_agent_ctx(t->engine)->stats.dedupe_hits, 3);

    /* every call answered, in the model's order */
    rg_test_tool_msgs(t, (const char *[]) { "2", "5", "2", "5", "2", NULL });

    /* the first of each ran, the later ones were taken from it */
    assert_int_equal(rg_test_cached_ids(s, "call_c call_d call_e"), 5);
}


/* a turn too large to compare its keys call by call (20 calls, each of
 * 10 sums twice): the same answers through the table */
static void
rg_test_dedupe_twins_many(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--script",
                 RG_TEST_SCRIPTS "guards_dedupe_twins_many.json");
    rg_test_engine(t, NULL, "tools calc; max_tool_calls_per_turn 20;");

    s = rg_test_session_on(t, "a", "many twins", 1);

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_calls, 20);
    assert_int_equal(s->dedupe_hits, 10);

    rg_test_tool_msgs(t, (const char *[]) {
        "1", "2", "3", "4", "5", "6", "7", "8", "9", "10",
        "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", NULL });
    assert_int_equal(rg_test_cached_ids(s, "call_10 call_11 call_12 "
                     "call_13 call_14 call_15 call_16 call_17 call_18 "
                     "call_19"), 20);
}


/* how many of the session's tool calls the transcript says were cached */
static size_t
rg_test_cached(rg_session_t *s)
{
    char    *text;
    size_t   i, n;
    json_t  *tr, *ev;

    text = rg_transcript_text(s);
    assert_non_null(text);
    tr = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(tr);

    n = 0;
    json_array_foreach(json_object_get(tr, "events"), i, ev) {
        n += json_is_true(json_object_get(ev, "cached"));
    }

    json_decref(tr);

    return n;
}


static void
rg_test_dedupe_not_applied(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    /* time_now is not RG_TOOL_READ_ONLY: run each time */
    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "guards_dedupe_side.json");
    rg_test_engine(t, NULL, "tools calc time_now;");

    s = rg_test_session_on(t, "a", "what time is it, twice", 1);

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_calls, 4);
    assert_int_equal(s->dedupe_hits, 0);
    assert_int_equal(rg_test_cached(s), 0);
    assert_non_null(strstr(rg_test_tool_msg(t, 3), "UTC"));

    rg_session_destroy(t->s);
    t->s = NULL;
    rg_engine_destroy(t->engine);
    t->engine = NULL;
    rg_cycle_destroy(t->cycle);
    t->cycle = NULL;
    rg_test_mock_stop(t->mock);

    /* dedupe off: calc runs again too */
    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "guards_dedupe_session.json");
    rg_test_engine(t, NULL, "tools calc; dedupe off;");

    s = rg_test_session_on(t, "a", "the same sum twice", 1);

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_calls, 4);
    assert_int_equal(s->dedupe_hits, 0);
    assert_int_equal(rg_test_cached(s), 0);
    assert_int_equal(rg_agent_ctx(t->engine)->stats.dedupe_hits, 0);
}


static void
rg_test_dedupe_global(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_fs_root(t);
    rg_test_notes(t, "version 1");

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "guards_dedupe_read.json");
    rg_test_engine(t, NULL, "tools read_file; dedupe global;");

    s = rg_test_session(t, "read the notes");
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_string_equal(rg_test_tool_msg(t, 0), "version 1");
    assert_int_equal(s->dedupe_hits, 0);

    /* the file changes; the second session is answered from the cache,
     * so read_file did not run */
    rg_test_notes(t, "version 2");

    s = rg_test_session(t, "read the notes again");
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_string_equal(rg_test_tool_msg(t, 0), "version 1");
    assert_int_equal(s->dedupe_hits, 1);
    assert_int_equal(rg_agent_ctx(t->engine)->stats.dedupe_hits, 1);
}


static void
rg_test_dedupe_agent(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_fs_root(t);
    rg_test_notes(t, "version 1");

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "guards_dedupe_read.json");
    rg_test_conf(t,
        "llm mock { base_url http://127.0.0.1:%d/v1; model mock-1; }\n"
        "agent a { tools read_file; dedupe agent; }\n"
        "agent b { tools read_file; dedupe agent; }\n",
        t->mock->port);

    s = rg_test_session_on(t, "a", "read", 0);
    assert_string_equal(rg_test_tool_msg(t, 0), "version 1");

    rg_test_notes(t, "version 2");

    /* another agent has its own cache */
    s = rg_test_session_on(t, "b", "read", 0);
    assert_string_equal(rg_test_tool_msg(t, 0), "version 2");
    assert_int_equal(s->dedupe_hits, 0);

    /* the first one remembers */
    s = rg_test_session_on(t, "a", "read", 0);
    assert_string_equal(rg_test_tool_msg(t, 0), "version 1");
    assert_int_equal(s->dedupe_hits, 1);
    assert_int_equal(rg_agent_ctx(t->engine)->stats.dedupe_hits, 1);
}


static void
rg_test_dedupe_ttl(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_fs_root(t);
    rg_test_notes(t, "version 1");

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "guards_dedupe_read.json");
    rg_test_engine(t, NULL, "tools read_file; dedupe global;"
                            "dedupe_ttl 100ms;");

    s = rg_test_session(t, "read the notes");
    assert_string_equal(rg_test_tool_msg(t, 0), "version 1");

    rg_test_notes(t, "version 2");
    rg_test_sleep_ms(250);

    /* the entry expired: read_file runs again */
    s = rg_test_session(t, "read the notes later");
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_string_equal(rg_test_tool_msg(t, 0), "version 2");
    assert_int_equal(s->dedupe_hits, 0);
    assert_int_equal(rg_agent_ctx(t->engine)->stats.dedupe_hits, 0);
}


/* What the guards keep of a result is what the model saw, trimmed to
 * tool_result_limit: the session's memory of its calls (repeats and the
 * session cache) and the dedupe cache in the store hold that, not the
 * raw result (up to 16 MB each). */
static void
rg_test_dedupe_trimmed(void **state)
{
    rg_test_ctx_t  *t = *state;
    char           *big, *shown;
    size_t          i, len;
    rg_store_t     *st;
    rg_session_t   *s;

    rg_test_fs_root(t);

    big = malloc(60001);
    assert_non_null(big);
    for (i = 0; i < 60000; i++) {
        big[i] = (i % 64 == 63) ? '\n' : 'a' + i / 64 % 26;
    }
    big[60000] = '\0';
    rg_test_notes(t, big);
    free(big);

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "guards_dedupe_read.json");
    rg_test_engine(t, NULL, "tools read_file; dedupe global;");

    st = rg_store_ctx(t->engine);

    s = rg_test_session(t, "read the notes");
    assert_int_equal(s->state, RG_SESSION_DONE);

    shown = strdup(rg_test_tool_msg(t, 0));
    assert_non_null(shown);
    len = strlen(shown);
    assert_true(len <= rg_tools_conf(t->cycle)->tool_result_limit);
    assert_non_null(strstr(shown, "bytes"));          /* the trim's note */

    assert_int_equal(s->nsigs, 1);
    assert_int_equal(s->sigs[0].result.len, len);
    assert_memory_equal(s->sigs[0].result.data, shown, len);

    assert_int_equal(st->stats.keys, 1);
    assert_true(st->stats.bytes >= len);
    assert_true(st->stats.bytes < len + 256);         /* and the key */

    /* the next session is answered from the cache, as the first saw it */
    rg_test_notes(t, "version 2");

    s = rg_test_session(t, "read the notes again");
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->dedupe_hits, 1);
    assert_string_equal(rg_test_tool_msg(t, 0), shown);

    free(shown);
}


/* 3. retries, fallback, caps ------------------------------------------- */

static void
rg_test_retry_after(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--rounds", "0", "--fault", "429", "--fault-count", "2",
                 "--retry-after-ms", "200");
    rg_test_engine(t, "retry_base 10ms;", "");

    s = rg_test_session(t, "be patient");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(rg_test_stat(t, t->mock, "requests"), 3);
    assert_int_equal(rg_test_stat(t, t->mock, "faults"), 2);
    assert_int_equal(rg_llm_retries(t->engine), 2);

    /* each retry waited what the provider asked, not retry_base */
    assert_true(rg_test_time(t, 1) - rg_test_time(t, 0)
                >= 200 - RG_TEST_CLOCK_SLACK);
    assert_true(rg_test_time(t, 2) - rg_test_time(t, 1)
                >= 200 - RG_TEST_CLOCK_SLACK);
}


static void
rg_test_retry_budget(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    /* backoff 100-200 ms, then 200-400 ms: the second retry would end
     * past the 300 ms budget */
    rg_test_mock(t, "--rounds", "0", "--fault", "500", "--fault-count", "0");
    rg_test_engine(t, "retry_base 200ms; retry_budget 300ms;", "");

    s = rg_test_session(t, "never answered");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    assert_non_null(s->reason);

    if (strstr(s->reason, "retry_budget spent") == NULL) {
        print_error("reason: %s\n", s->reason);
        fail();
    }

    assert_non_null(strstr(s->reason, "server_error"));
    assert_true(rg_test_stat(t, t->mock, "requests") <= 3);
}


static void
rg_test_fallback(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;
    rg_llm_conf_t  *b;

    rg_test_mock(t, "--rounds", "1", "--fault", "500", "--fault-count", "0");
    t->mock2 = rg_test_mock_start("--rounds", "1", NULL);
    assert_non_null(t->mock2);

    rg_test_conf(t,
        "llm a {\n"
        "    base_url http://127.0.0.1:%d/v1;\n"
        "    model model-a;\n"
        "    max_retries 1;\n"
        "    retry_base 10ms;\n"
        "    fallback b;\n"
        "}\n"
        "llm b {\n"
        "    base_url http://127.0.0.1:%d/v1;\n"
        "    model model-b;\n"
        "}\n"
        "agent a { llm a; tools calc; }\n",
        t->mock->port, t->mock2->port);

    s = rg_test_session(t, "the first llm is down");

    if (s->state != RG_SESSION_DONE) {
        print_error("ended %s: %s\n", rg_session_state_name(s->state),
                    s->reason ? s->reason : "");
    }

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 2);
    assert_int_equal(s->tool_calls, 1);

    b = rg_llm_find(t->cycle, "b", 1);
    assert_ptr_equal(s->llm, b);

    /* a: the call and its one retry; b: the rest, with its own model */
    assert_int_equal(rg_test_stat(t, t->mock, "requests"), 2);
    assert_int_equal(rg_test_stat(t, t->mock2, "requests"), 2);
    assert_int_equal(rg_test_stat(t, t->mock2, "rejected"), 0);

    assert_string_equal(rg_test_str(json_object_get(
                            rg_test_get(t, t->mock2, "/last_request"),
                            "body"), "model"), "model-b");
}


static void
rg_test_concurrency_cap(void **state)
{
    rg_test_ctx_t      *t = *state;
    rg_uint_t          *states, ok, i;
    rg_llm_upstream_t  *up;

    rg_test_mock(t, "--rounds", "0", "--latency", "20");
    rg_test_engine(t, "max_connections 64;", "");

    states = calloc(2000, sizeof(rg_uint_t));
    assert_non_null(states);

    ok = rg_test_run_many(t->engine, "a", 2000, states);

    for (i = 0; i < 2000 && ok != 2000; i++) {
        if (states[i] != RG_SESSION_DONE) {
            print_error("session %lu ended %s\n", (unsigned long) i,
                        rg_session_state_name(states[i]));
            break;
        }
    }

    free(states);

    assert_int_equal(ok, 2000);
    assert_int_equal(rg_test_stat(t, t->mock, "requests"), 2000);
    assert_int_equal(rg_test_stat(t, t->mock, "rejected"), 0);
    assert_true(rg_test_stat(t, t->mock, "max_inflight") <= 64);

    up = rg_llm_upstream(t->engine, rg_llm_find(t->cycle, "mock", 4));
    assert_true(up->stats.max_active <= 64);
    assert_true(up->stats.queued > 0);
    assert_int_equal(up->stats.active, 0);
}


static void
rg_test_requests_per_minute(void **state)
{
    rg_test_ctx_t  *t = *state;
    long            first, eleventh;
    rg_uint_t      *states, ok;

    /* 600 a minute is 10 a second: 20 requests cannot all go at once,
     * and the 11th cannot leave before about a second has passed */
    rg_test_mock(t, "--rounds", "0");
    rg_test_engine(t, "requests_per_minute 600;", "");

    states = calloc(20, sizeof(rg_uint_t));
    assert_non_null(states);

    ok = rg_test_run_many(t->engine, "a", 20, states);
    free(states);

    assert_int_equal(ok, 20);
    assert_int_equal(rg_test_stat(t, t->mock, "requests"), 20);

    first = rg_test_time(t, 0);
    eleventh = rg_test_time(t, 10);

    if (eleventh - first < 900) {
        print_error("the 11th request came %ld ms after the first\n",
                    eleventh - first);
    }

    assert_true(eleventh - first >= 900);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup_teardown(rg_test_max_tokens,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_deadline,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_tool_max_calls,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_tool_max_calls_wide,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_repeat_wide_window,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_repeat_default_window,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_args_canonical,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_args_canonical_dedupe,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_args_canonical_repeat,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_args_unguarded,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_dedupe_session,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_dedupe_twins,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_dedupe_twins_many,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_dedupe_not_applied,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_dedupe_global,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_dedupe_agent,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_dedupe_ttl,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_dedupe_trimmed,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_retry_after,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_retry_budget,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_fallback,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_concurrency_cap,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_requests_per_minute,
                                        rg_test_setup, rg_test_teardown),
    };

    return cmocka_run_group_tests_name("guards", tests, NULL, NULL);
}
