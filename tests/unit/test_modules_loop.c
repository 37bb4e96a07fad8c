/* test_modules_loop.c: the bundled modules driven by a model over real
 * HTTP, through the whole loop: http_get through the worker's curl multi
 * (allow-list, size cap; with RLIMIT_NOFILE at 128, 200 fetches at once
 * all succeed inside the descriptor budget), run_agent as a child session
 * on the same reactor (answer, depth limit, a child that ends inside its
 * own start), exec behind approval, fs in the thread pool, which slow
 * exec calls leave free, and streaming answers when the mock can
 * stream. Also the host
 * table's io in engines side by side on one cycle: each watches on its
 * own reactor, and one that goes leaves the others working. The model is the
 * project's mock, scripted per test; scripts are written at run time
 * because they name the mock's port. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_session.h>
#include <rg_tools.h>
#include <rg_llm_client.h>
#include <rg_test.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/wait.h>


/* the content of the n-th tool message of s, or NULL */
static char *
rg_test_tool_msg(rg_session_t *s, rg_uint_t n)
{
    char       *out;
    json_t     *j;
    rg_msg_t   *m;

    for (m = s->msgs.head; m; m = m->next) {
        if (m->role != 't' || n--) {
            continue;
        }

        j = json_loadb(m->json.data, m->json.len, 0, NULL);
        out = j ? strdup(json_string_value(json_object_get(j, "content")))
                : NULL;
        json_decref(j);
        return out;
    }

    return NULL;
}


static rg_session_t *
rg_test_scripted(const char *script, const char *modules, const char *agent,
    rg_test_mock_t **mockp, rg_engine_t **ep, rg_cycle_t **cp)
{
    char            err[512], *path;
    rg_cycle_t     *cycle;
    rg_engine_t    *e;
    rg_test_mock_t *mock;

    path = rg_test_write_file("script.json", script);
    assert_non_null(path);

    mock = rg_test_mock_start("--script", path, NULL);
    assert_non_null(mock);
    free(path);

    cycle = rg_test_cycle(err, sizeof(err),
                          "%s\n"
                          "llm m { base_url http://127.0.0.1:%d/v1; "
                          "model mock-1; max_retries 0; }\n"
                          "%s\n", modules, mock->port, agent);
    if (cycle == NULL) {
        fail_msg("configuration: %s", err);
    }

    e = rg_engine_create(cycle, cycle->log);
    assert_non_null(e);

    *mockp = mock;
    *ep = e;
    *cp = cycle;

    return rg_test_run(e, "a", "the task");
}


static void
rg_test_teardown(rg_session_t *s, rg_test_mock_t *mock, rg_engine_t *e,
    rg_cycle_t *cycle)
{
    rg_session_destroy(s);
    rg_engine_destroy(e);
    rg_cycle_destroy(cycle);
    rg_test_mock_stop(mock);
}


static void
rg_test_http_get(void **state)
{
    char                     script[2048], mods[512], *t;
    rg_cycle_t              *cycle;
    rg_engine_t             *e;
    rg_session_t            *s;
    rg_tools_ctx_t          *tc;
    rg_test_mock_t          *mock, *target;
    rg_llm_upstream_t       *up;
    const rg_curl_limits_t  *l;

    (void) state;

    /* a second mock is the web page: its /stats is JSON */
    target = rg_test_mock_start(NULL);
    assert_non_null(target);

    snprintf(script, sizeof(script),
             "[{\"message\":{\"tool_calls\":["
             "{\"name\":\"http_get\",\"arguments\":{\"url\":"
             "\"http://127.0.0.1:%d/stats\"}},"
             "{\"name\":\"http_get\",\"arguments\":{\"url\":"
             "\"http://example.com/\"}},"
             "{\"name\":\"http_get\",\"arguments\":{\"url\":"
             "\"ftp://127.0.0.1/x\"}}]}},"
             "{\"message\":{\"content\":\"ok\"}}]", target->port);

    snprintf(mods, sizeof(mods),
             "load_module %s/modules/http.so;\n"
             "module http { allow_hosts 127.0.0.1; max_bytes 40; "
             "timeout 2s; allow_private on; }", rg_test_build_dir());

    s = rg_test_scripted(script, mods, "agent a { tools http_get; }",
                         &mock, &e, &cycle);
    assert_non_null(s);
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_calls, 3);

    /* fetched through the reactor's curl multi, cut at max_bytes */
    t = rg_test_tool_msg(s, 0);
    assert_non_null(t);
    assert_non_null(strstr(t, "status: 200"));
    assert_non_null(strstr(t, "application/json"));
    assert_non_null(strstr(t, "{\"requests\":"));
    assert_non_null(strstr(t, "truncated"));
    free(t);

    t = rg_test_tool_msg(s, 1);
    assert_non_null(t);
    assert_non_null(strstr(t, "example.com"));
    assert_non_null(strstr(t, "allow-list"));
    free(t);

    t = rg_test_tool_msg(s, 2);
    assert_non_null(t);
    assert_non_null(strstr(t, "http_get failed"));
    free(t);

    /* the tool's connection cache counts in the descriptor budget, with
     * the model calls' lanes, and running transfers leave room for it */
    tc = rg_tools_ctx(e);
    up = rg_llm_upstream(e, s->llm);
    assert_ptr_equal(up->curl, tc->curl);
    assert_non_null(tc->http_shares[1]);
    assert_null(tc->http_shares[0]);
    l = rg_curl_limits(tc->curl);
    assert_int_equal(l->caches, up->nlanes + 1);
    assert_true(l->max_running
                + (rg_max(l->caches, l->max_caches) + 1) * l->per_cache
                <= l->budget);

    rg_test_teardown(s, mock, e, cycle);
    rg_test_mock_stop(target);
}


static void
rg_test_run_agent(void **state)
{
    char            err[512], mods[256], *path, *t;
    rg_cycle_t     *cycle;
    rg_engine_t    *e;
    rg_session_t   *s;
    rg_test_mock_t *parent, *child;

    (void) state;

    /* the parent model delegates; the child model answers at once */
    path = rg_test_write_file("agent.json",
        "[{\"message\":{\"tool_calls\":["
        "{\"name\":\"run_agent\",\"arguments\":{\"agent\":\"helper\","
        "\"input\":\"the subtask\"}},"
        "{\"name\":\"run_agent\",\"arguments\":{\"agent\":\"nobody\","
        "\"input\":\"x\"}}]}},"
        "{\"message\":{\"content\":\"parent done\"}}]");
    parent = rg_test_mock_start("--script", path, NULL);
    child = rg_test_mock_start("--rounds", "0", NULL);
    assert_non_null(parent);
    assert_non_null(child);
    free(path);

    snprintf(mods, sizeof(mods), "load_module %s/modules/agent.so;",
             rg_test_build_dir());

    cycle = rg_test_cycle(err, sizeof(err),
                          "%s\n"
                          "llm p { base_url http://127.0.0.1:%d/v1; "
                          "model mock-1; }\n"
                          "llm c { base_url http://127.0.0.1:%d/v1; "
                          "model mock-1; }\n"
                          "agent a { llm p; tools run_agent; agents helper; }\n"
                          "agent helper { llm c; }\n",
                          mods, parent->port, child->port);
    if (cycle == NULL) {
        fail_msg("configuration: %s", err);
    }

    e = rg_engine_create(cycle, cycle->log);
    assert_non_null(e);

    s = rg_test_run(e, "a", "the task");
    assert_non_null(s);
    assert_int_equal(s->state, RG_SESSION_DONE);

    /* the child session ran on the same reactor and answered */
    t = rg_test_tool_msg(s, 0);
    assert_non_null(t);
    assert_string_equal(t, "Final answer: the subtask");
    free(t);

    t = rg_test_tool_msg(s, 1);
    assert_non_null(t);
    assert_non_null(strstr(t, "agent \"nobody\" is not one that agent "
                              "\"a\" may call; it may call: helper"));
    free(t);

    assert_int_equal(rg_test_mock_stat(child, "requests"), 1);
    assert_int_equal(rg_agent_ctx(e)->live, 1);      /* the child is gone */

    /* the child's call and tokens are the task's: the parent's result
     * counts them, as the engine does */
    assert_int_equal(s->model_calls, 3);
    assert_int_equal(s->child_model_calls, 1);
    assert_int_equal(s->model_calls, rg_agent_ctx(e)->stats.model_calls);
    assert_true(s->child_tokens > 0);
    assert_int_equal(s->prompt_tokens + s->completion_tokens,
                     rg_agent_ctx(e)->stats.prompt_tokens
                     + rg_agent_ctx(e)->stats.completion_tokens);

    rg_session_destroy(s);
    rg_engine_destroy(e);
    rg_cycle_destroy(cycle);

    /* depth 0: no delegation at all */
    cycle = rg_test_cycle(err, sizeof(err),
                          "%s\nmax_agent_depth 0;\n"
                          "llm p { base_url http://127.0.0.1:%d/v1; "
                          "model mock-1; }\n"
                          "agent a { llm p; tools run_agent; agents helper; }\n"
                          "agent helper { llm p; }\n", mods, parent->port);
    assert_non_null(cycle);
    e = rg_engine_create(cycle, cycle->log);
    assert_non_null(e);

    s = rg_test_run(e, "a", "the task");
    assert_non_null(s);
    assert_int_equal(s->state, RG_SESSION_DONE);

    t = rg_test_tool_msg(s, 0);
    assert_non_null(t);
    assert_non_null(strstr(t, "max_agent_depth"));
    free(t);

    rg_session_destroy(s);
    rg_engine_destroy(e);
    rg_cycle_destroy(cycle);

    rg_test_mock_stop(parent);
    rg_test_mock_stop(child);
}


/* The parent's max_tokens bounds its children: a child that would go on
 * calling tools (the child's model never stops) ends when the task's
 * tokens reach the parent's budget, and says whose budget it was; the
 * parent then ends budget_exceeded, its children's tokens counted. */
static void
rg_test_run_agent_budget(void **state)
{
    char            err[1024], mods[512], *path, *t;
    rg_cycle_t     *cycle;
    rg_engine_t    *e;
    rg_session_t   *s;
    rg_test_mock_t *parent, *child;

    (void) state;

    path = rg_test_write_file("agent_budget.json",
        "[{\"message\":{\"tool_calls\":["
        "{\"name\":\"run_agent\",\"arguments\":{\"agent\":\"helper\","
        "\"input\":\"the subtask\"}}]}},"
        "{\"message\":{\"content\":\"parent done\"}}]");
    parent = rg_test_mock_start("--script", path, NULL);
    child = rg_test_mock_start("--rounds", "40", NULL);
    assert_non_null(parent);
    assert_non_null(child);
    free(path);

    snprintf(mods, sizeof(mods), "load_module %s/modules/agent.so;\n"
             "load_module %s/modules/calc.so;", rg_test_build_dir(),
             rg_test_build_dir());

    cycle = rg_test_cycle(err, sizeof(err),
                          "%s\n"
                          "llm p { base_url http://127.0.0.1:%d/v1; "
                          "model mock-1; }\n"
                          "llm c { base_url http://127.0.0.1:%d/v1; "
                          "model mock-1; }\n"
                          "agent a { llm p; tools run_agent; agents helper; "
                          "max_tokens 2000; }\n"
                          "agent helper { llm c; tools calc; max_rounds 40; "
                          "repeat_limit 100; }\n",
                          mods, parent->port, child->port);
    if (cycle == NULL) {
        fail_msg("configuration: %s", err);
    }

    e = rg_engine_create(cycle, cycle->log);
    assert_non_null(e);

    s = rg_test_run(e, "a", "the task");
    assert_non_null(s);

    t = rg_test_tool_msg(s, 0);
    assert_non_null(t);
    if (strstr(t, "the task's budget is spent") == NULL) {
        fail_msg("the child's answer: %s", t);
    }
    assert_non_null(strstr(t, "agent \"a\""));
    assert_non_null(strstr(t, "of its 2000 tokens"));
    free(t);

    /* stopped long before its 40 rounds */
    assert_true(rg_test_mock_stat(child, "requests") < 20);

    assert_int_equal(s->state, RG_SESSION_BUDGET_EXCEEDED);
    assert_non_null(strstr(s->reason, "its child agents' included"));
    assert_int_equal(rg_test_mock_stat(parent, "requests"), 1);
    assert_true(s->prompt_tokens + s->completion_tokens >= 2000);
    assert_int_equal(s->prompt_tokens + s->completion_tokens,
                     rg_agent_ctx(e)->stats.prompt_tokens
                     + rg_agent_ctx(e)->stats.completion_tokens);
    assert_int_equal(s->model_calls, rg_agent_ctx(e)->stats.model_calls);

    rg_session_destroy(s);
    rg_engine_destroy(e);
    rg_cycle_destroy(cycle);
    rg_test_mock_stop(parent);
    rg_test_mock_stop(child);
}


/* a child session that ends inside its own start, as one does that
 * cannot even start its model call: it answers before agent_run returns */
static rg_int_t
rg_test_child_ends_at_once(rg_tool_run_t *run, const char *agent,
    const char *input, size_t len)
{
    static const char  reason[] = "could not start the model call";

    rg_tools_agent_done(run, "failed", reason, sizeof(reason) - 1);

    return RG_OK;
}


static void
rg_test_child_stop(rg_tool_run_t *run)
{
    fail_msg("no child is running");
}


/* The parent gets the answer of a child that ended at once, then and
 * there: not the tool timeout's error, later. */
static void
rg_test_run_agent_at_once(void **state)
{
    char            err[512], mods[256], *path, *t;
    rg_cycle_t     *cycle;
    rg_engine_t    *e;
    rg_session_t   *s;
    rg_test_mock_t *mock;

    (void) state;

    snprintf(mods, sizeof(mods), "load_module %s/modules/agent.so;",
             rg_test_build_dir());

    path = rg_test_write_file("agent_at_once.json",
        "[{\"message\":{\"tool_calls\":["
        "{\"name\":\"run_agent\",\"arguments\":{\"agent\":\"helper\","
        "\"input\":\"the subtask\"}}]}},"
        "{\"message\":{\"content\":\"parent done\"}}]");
    assert_non_null(path);
    mock = rg_test_mock_start("--script", path, NULL);
    assert_non_null(mock);
    free(path);

    cycle = rg_test_cycle(err, sizeof(err),
                          "%s\n"
                          "llm p { base_url http://127.0.0.1:%d/v1; "
                          "model mock-1; }\n"
                          "agent a { llm p; tools run_agent; agents helper; "
                          "tool_timeout 3s; }\n"
                          "agent helper { llm p; }\n",
                          mods, mock->port);
    if (cycle == NULL) {
        fail_msg("configuration: %s", err);
    }

    e = rg_engine_create(cycle, cycle->log);
    assert_non_null(e);

    /* the engine set the session layer's runner: this one instead */
    rg_tools_set_agent_runner(rg_tools_ctx(e), rg_test_child_ends_at_once,
                              rg_test_child_stop);

    s = rg_test_run(e, "a", "the task");
    assert_non_null(s);
    assert_int_equal(s->state, RG_SESSION_DONE);

    t = rg_test_tool_msg(s, 0);
    assert_non_null(t);
    if (strstr(t, "timed out") != NULL) {
        print_error("\"%s\"\n", t);
    }
    assert_string_equal(t, "error: run_agent failed: agent \"helper\" "
                           "ended with failed: could not start the model "
                           "call");
    free(t);

    assert_int_equal(s->tool_errors, 1);
    assert_int_equal(rg_test_mock_stat(mock, "requests"), 2);

    rg_test_teardown(s, mock, e, cycle);
}


static void
rg_test_exec_approval(void **state)
{
    char            mods[512], *t;
    rg_cycle_t     *cycle;
    rg_engine_t    *e;
    rg_session_t   *s;
    rg_test_mock_t *mock;
    const char     *script;

    (void) state;

    script = "[{\"message\":{\"tool_calls\":[{\"name\":\"exec\","
             "\"arguments\":{\"argv\":[\"echo\",\"hello from exec\"]}}]}},"
             "{\"message\":{\"content\":\"ok\"}}]";

    snprintf(mods, sizeof(mods),
             "load_module %s/modules/exec.so;\n"
             "module exec { root %s; timeout 5s; }",
             rg_test_build_dir(), rg_test_tmpdir());

    /* refused without approval: an engine starts so */

    s = rg_test_scripted(script, mods, "agent a { tools exec; }", &mock, &e,
                         &cycle);
    assert_non_null(s);
    assert_int_equal(s->state, RG_SESSION_DONE);
    t = rg_test_tool_msg(s, 0);
    assert_non_null(t);
    assert_non_null(strstr(t, "exec is a dangerous tool and was not "
                              "approved"));
    free(t);
    rg_test_teardown(s, mock, e, cycle);

    /* allowed by the agent: runs, watched from the reactor */
    s = rg_test_scripted(script, mods,
                         "agent a { tools exec; approve exec; }", &mock, &e,
                         &cycle);
    assert_non_null(s);
    assert_int_equal(s->state, RG_SESSION_DONE);
    t = rg_test_tool_msg(s, 0);
    assert_non_null(t);
    assert_non_null(strstr(t, "exit status 0"));
    assert_non_null(strstr(t, "hello from exec"));
    free(t);
    rg_test_teardown(s, mock, e, cycle);
}


static void
rg_test_fs_pool(void **state)
{
    char            mods[512], *t, *path;
    rg_cycle_t     *cycle;
    rg_engine_t    *e;
    rg_session_t   *s;
    rg_test_mock_t *mock;

    (void) state;

    path = rg_test_write_file("notes.txt", "line one\nthe answer is 42\n");
    assert_non_null(path);
    free(path);

    snprintf(mods, sizeof(mods),
             "load_module %s/modules/fs.so;\nmodule fs { root %s; }",
             rg_test_build_dir(), rg_test_tmpdir());

    s = rg_test_scripted(
        "[{\"message\":{\"tool_calls\":["
        "{\"name\":\"read_file\",\"arguments\":{\"path\":\"notes.txt\"}},"
        "{\"name\":\"grep\",\"arguments\":{\"pattern\":\"answer\"}},"
        "{\"name\":\"read_file\",\"arguments\":{\"path\":\"../etc/passwd\"}}"
        "]}},{\"message\":{\"content\":\"ok\"}}]",
        mods, "agent a { tools read_file grep; }", &mock, &e, &cycle);

    assert_non_null(s);
    assert_int_equal(s->state, RG_SESSION_DONE);

    t = rg_test_tool_msg(s, 0);
    assert_non_null(t);
    assert_non_null(strstr(t, "the answer is 42"));
    free(t);

    t = rg_test_tool_msg(s, 1);
    assert_non_null(t);
    assert_non_null(strstr(t, "notes.txt:2:"));
    free(t);

    t = rg_test_tool_msg(s, 2);
    assert_non_null(t);
    assert_non_null(strstr(t, "read_file failed"));
    free(t);

    rg_test_teardown(s, mock, e, cycle);
}


/* Slow exec calls leave the thread pool free: exec watches its program
 * from the reactor (pipes, child_watch), not from a pool thread. With two
 * pool threads, four `sleep 3` calls in one session, and once they run a
 * read_file (a blocking tool: the pool) in another, the read answers at
 * once while the sleeps go on. Were exec in the pool, the read would wait
 * for two rounds of sleeps: 6 s. */
#define RG_TEST_READ_MAX  1500         /* ms */

static void
rg_test_exec_leaves_pool(void **state)
{
    char             err[512], *path, *t;
    rg_uint_t        i;
    rg_msec_t        start, took;
    rg_cycle_t      *cycle;
    rg_engine_t     *e;
    rg_session_t    *sx, *sr;
    rg_test_mock_t  *mx, *mr;
    struct timeval   tv;
    const char      *b;

    (void) state;

    b = rg_test_build_dir();

    path = rg_test_write_file("pool.txt", "the answer is 42\n");
    assert_non_null(path);
    free(path);

    path = rg_test_write_file("sleeps.json",
        "[{\"message\":{\"tool_calls\":["
        "{\"name\":\"exec\",\"arguments\":{\"argv\":[\"sleep\",\"3\"]}},"
        "{\"name\":\"exec\",\"arguments\":{\"argv\":[\"sleep\",\"3\"]}},"
        "{\"name\":\"exec\",\"arguments\":{\"argv\":[\"sleep\",\"3\"]}},"
        "{\"name\":\"exec\",\"arguments\":{\"argv\":[\"sleep\",\"3\"]}}"
        "]}},{\"message\":{\"content\":\"slept\"}}]");
    assert_non_null(path);
    mx = rg_test_mock_start("--script", path, NULL);
    assert_non_null(mx);
    free(path);

    path = rg_test_write_file("read.json",
        "[{\"message\":{\"tool_calls\":[{\"name\":\"read_file\","
        "\"arguments\":{\"path\":\"pool.txt\"}}]}},"
        "{\"message\":{\"content\":\"read\"}}]");
    assert_non_null(path);
    mr = rg_test_mock_start("--script", path, NULL);
    assert_non_null(mr);
    free(path);

    cycle = rg_test_cycle(err, sizeof(err),
        "thread_pool default threads=2;\n"
        "load_module %s/modules/exec.so;\n"
        "module exec { root %s; timeout 20s; }\n"
        "load_module %s/modules/fs.so;\n"
        "module fs { root %s; }\n"
        "llm x { base_url http://127.0.0.1:%d/v1; model mock-1; "
        "max_retries 0; }\n"
        "llm r { base_url http://127.0.0.1:%d/v1; model mock-1; "
        "max_retries 0; }\n"
        "agent x { llm x; tools exec; approve exec; tool_timeout 20s; }\n"
        "agent r { llm r; tools read_file; }\n",
        b, rg_test_tmpdir(), b, rg_test_tmpdir(), mx->port, mr->port);
    if (cycle == NULL) {
        fail_msg("configuration: %s", err);
    }

    e = rg_engine_create(cycle, cycle->log);
    assert_non_null(e);

    sx = rg_session_create(e, rg_agent_find(cycle, "x", 1), NULL, "sleep",
                           5, NULL, NULL);
    sr = rg_session_create(e, rg_agent_find(cycle, "r", 1), NULL, "read",
                           4, NULL, NULL);
    assert_non_null(sx);
    assert_non_null(sr);

    /* the sleeps start, and run a little */
    rg_session_start(sx);
    while (sx->state != RG_SESSION_TOOLS_RUNNING && !rg_session_final(sx)) {
        assert_int_equal(event_base_loop(e->base, EVLOOP_ONCE), 0);
    }
    assert_int_equal(sx->state, RG_SESSION_TOOLS_RUNNING);

    tv.tv_sec = 0;
    tv.tv_usec = 200 * 1000;
    event_base_loopexit(e->base, &tv);
    event_base_dispatch(e->base);
    assert_int_equal(sx->state, RG_SESSION_TOOLS_RUNNING);

    /* the read: two model calls and a turn in the pool */
    start = rg_monotonic_msec();
    rg_session_start(sr);
    while (!rg_session_final(sr)) {
        assert_int_equal(event_base_loop(e->base, EVLOOP_ONCE), 0);
    }
    took = rg_monotonic_msec() - start;

    print_message("read_file beside four sleeping exec calls, two pool "
                  "threads: %llu ms\n", (unsigned long long) took);

    assert_int_equal(sr->state, RG_SESSION_DONE);
    t = rg_test_tool_msg(sr, 0);
    assert_non_null(t);
    assert_non_null(strstr(t, "the answer is 42"));
    free(t);

    /* it answered while the sleeps still ran */
    assert_int_equal(sx->state, RG_SESSION_TOOLS_RUNNING);
    assert_true(took < RG_TEST_READ_MAX);

    while (!rg_session_final(sx)) {
        assert_int_equal(event_base_loop(e->base, EVLOOP_ONCE), 0);
    }

    assert_int_equal(sx->state, RG_SESSION_DONE);
    for (i = 0; i < 4; i++) {
        t = rg_test_tool_msg(sx, i);
        assert_non_null(t);
        assert_non_null(strstr(t, "exit status 0"));
        free(t);
    }

    /* they slept, side by side */
    assert_true(sx->ended - sx->started >= 3000 - RG_TEST_CLOCK_SLACK);

    rg_session_destroy(sr);
    rg_session_destroy(sx);
    rg_engine_destroy(e);
    rg_cycle_destroy(cycle);
    rg_test_mock_stop(mx);
    rg_test_mock_stop(mr);
}


/* The http tool's connections count in the descriptor budget. A child
 * process (this binary, --http-budget) runs with RLIMIT_NOFILE at 128,
 * soft and hard (the engine raises the soft one to the hard one): 32 for
 * files and the like, 96 for connections. 200 sessions each fetch a page
 * that takes 300 ms, all at once; they all get it, the tool's transfers
 * ran at most max_running at a time and the rest waited, its connection
 * cache is one of the budget's. Uncounted, 200 connections to the page
 * and the model's pass 128 descriptors and fail. */
#define RG_TEST_BUDGET_NOFILE    128
#define RG_TEST_BUDGET_SESSIONS  200

typedef struct {
    unsigned long   sessions, done, pages, nofile, budget, per_cache,
                    max_caches, max_running, peak_running, waited, caches,
                    lanes;
} rg_test_budget_t;


static void
rg_test_budget_done(rg_session_t *s)
{
    rg_uint_t  *left;

    left = s->data;

    if (--*left == 0) {
        event_base_loopbreak(s->engine->base);
    }
}


/* the child: prints what it saw on one line; 0, or where it failed */
static int
rg_test_http_budget_child(int model)
{
    char                     err[512], *t;
    rg_uint_t                i, n, left, shown;
    rg_cycle_t              *cycle;
    rg_engine_t             *e;
    rg_session_t           **ss;
    struct rlimit            rl;
    rg_test_budget_t         r;
    rg_llm_upstream_t       *up;
    const rg_curl_limits_t  *l;

    n = RG_TEST_BUDGET_SESSIONS;
    memset(&r, 0, sizeof(r));

    rl.rlim_cur = RG_TEST_BUDGET_NOFILE;
    rl.rlim_max = RG_TEST_BUDGET_NOFILE;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        return 2;
    }

    cycle = rg_test_cycle(err, sizeof(err),
        "load_module %s/modules/http.so;\n"
        "module http { allow_hosts 127.0.0.1; timeout 30s; "
        "allow_private on; }\n"
        "llm m { base_url http://127.0.0.1:%d/v1; model mock-1; "
        "max_retries 0; }\n"
        "agent a { tools http_get; tool_timeout 60s; }\n",
        rg_test_build_dir(), model);
    if (cycle == NULL) {
        fprintf(stderr, "configuration: %s\n", err);
        return 3;
    }

    e = rg_engine_create(cycle, cycle->log);
    ss = calloc(n, sizeof(rg_session_t *));
    if (e == NULL || ss == NULL) {
        return 4;
    }

    left = n;

    for (i = 0; i < n; i++) {
        ss[i] = rg_session_create(e, rg_agent_find(cycle, "a", 1), NULL,
                                  "fetch", 5, rg_test_budget_done, &left);
        if (ss[i] == NULL) {
            return 5;
        }
    }

    for (i = 0; i < n; i++) {
        rg_session_start(ss[i]);
    }

    if (left) {
        event_base_dispatch(e->base);
    }

    shown = 0;

    for (i = 0; i < n; i++) {
        r.done += ss[i]->state == RG_SESSION_DONE;

        t = rg_test_tool_msg(ss[i], 0);
        if (t && strstr(t, "status: 200") && strstr(t, "a page of the mock")) {
            r.pages++;
        } else if (shown++ == 0) {
            fprintf(stderr, "session %lu: %.300s\n", (unsigned long) i,
                    t ? t : "(no tool message)");
        }
        free(t);
    }

    up = rg_llm_upstream(e, ss[0]->llm);
    l = rg_curl_limits(rg_tools_ctx(e)->curl);

    r.sessions = n;
    r.nofile = l->nofile;
    r.budget = l->budget;
    r.per_cache = l->per_cache;
    r.max_caches = l->max_caches;
    r.max_running = l->max_running;
    r.peak_running = l->peak_running;
    r.waited = (unsigned long) l->waited;
    r.caches = l->caches;
    r.lanes = up->nlanes;

    printf("sessions %lu done %lu pages %lu nofile %lu budget %lu "
           "per_cache %lu max_caches %lu max_running %lu peak_running %lu "
           "waited %lu caches %lu lanes %lu\n", r.sessions, r.done, r.pages,
           r.nofile, r.budget, r.per_cache, r.max_caches, r.max_running,
           r.peak_running, r.waited, r.caches, r.lanes);
    fflush(stdout);

    for (i = 0; i < n; i++) {
        rg_session_destroy(ss[i]);
    }
    free(ss);

    rg_engine_destroy(e);
    rg_cycle_destroy(cycle);

    return 0;
}


static void
rg_test_http_budget(void **state)
{
    int               fds[2], status;
    long              pages;
    unsigned long     most;
    char              self[PATH_MAX], script[512], mport[16], out[1024],
                      *path;
    pid_t             pid;
    size_t            got;
    ssize_t           k;
    rg_test_mock_t   *model, *target;
    rg_test_budget_t  r;

    (void) state;

    target = rg_test_mock_start("--page-delay", "300", NULL);
    assert_non_null(target);

    snprintf(script, sizeof(script),
             "[{\"message\":{\"tool_calls\":[{\"name\":\"http_get\","
             "\"arguments\":{\"url\":\"http://127.0.0.1:%d/page\"}}]}},"
             "{\"message\":{\"content\":\"ok\"}}]", target->port);
    path = rg_test_write_file("budget.json", script);
    assert_non_null(path);
    model = rg_test_mock_start("--script", path, NULL);
    assert_non_null(model);
    free(path);

    k = readlink("/proc/self/exe", self, sizeof(self) - 1);
    assert_true(k > 0);
    self[k] = '\0';
    snprintf(mport, sizeof(mport), "%d", model->port);

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);

    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl(self, self, "--http-budget", mport, (char *) NULL);
        _exit(127);
    }

    close(fds[1]);
    got = 0;
    while (got < sizeof(out) - 1
           && (k = read(fds[0], out + got, sizeof(out) - 1 - got)) > 0)
    {
        got += (size_t) k;
    }
    out[got] = '\0';
    close(fds[0]);

    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fail_msg("the child ended with status %d: %s", status, out);
    }

    print_message("%s", out);

    memset(&r, 0, sizeof(r));
    assert_int_equal(sscanf(out, "sessions %lu done %lu pages %lu nofile %lu "
                            "budget %lu per_cache %lu max_caches %lu "
                            "max_running %lu peak_running %lu waited %lu "
                            "caches %lu lanes %lu",
                            &r.sessions, &r.done, &r.pages, &r.nofile,
                            &r.budget, &r.per_cache, &r.max_caches,
                            &r.max_running, &r.peak_running, &r.waited,
                            &r.caches, &r.lanes), 12);

    /* every session got its page: none failed for want of descriptors */
    assert_int_equal(r.sessions, RG_TEST_BUDGET_SESSIONS);
    assert_int_equal(r.done, r.sessions);
    assert_int_equal(r.pages, r.sessions);

    /* the budget is the limit's: what it lets run at once (max_running
     * is that, less the idle connections each cache may keep; it shrinks
     * as caches are made past max_caches) was never passed, and the
     * others waited */
    assert_int_equal(r.nofile, RG_TEST_BUDGET_NOFILE);
    assert_true(r.budget < RG_TEST_BUDGET_NOFILE);
    most = r.budget - (r.max_caches + 1) * r.per_cache;
    assert_true(most < RG_TEST_BUDGET_SESSIONS);
    assert_true(r.max_running <= most);
    assert_true(r.peak_running <= most);
    assert_true(r.waited > 0);

    /* the tool's connection cache is one of the budget's */
    assert_int_equal(r.caches, r.lanes + 1);

    /* and its transfers were among those counted: the page's server saw
     * no more at once, out of 200 wanted */
    pages = rg_test_mock_stat(target, "max_inflight");
    print_message("pages served at once: %ld at most\n", pages);
    assert_true(pages > 1);
    assert_true((unsigned long) pages <= most);
    assert_int_equal(rg_test_mock_stat(model, "rejected"), 0);

    rg_test_mock_stop(model);
    rg_test_mock_stop(target);
}


/* the host table's io of engines side by side: what a callback saw */
typedef struct {
    int     fd;
    int     events;
    int     pid;
    int     status;
    int     calls;
} rg_test_io_seen_t;


static void
rg_test_io_cb(int fd, int events, void *data)
{
    char                b;
    rg_test_io_seen_t  *seen;

    seen = data;
    seen->fd = fd;
    seen->events = events;
    seen->calls++;
    assert_int_equal(read(fd, &b, 1), 1);
}


static void
rg_test_child_cb(int pid, int status, void *data)
{
    rg_test_io_seen_t  *seen;

    seen = data;
    seen->pid = pid;
    seen->status = status;
    seen->calls++;
}


/* turns e's reactor until seen was called (a bound on the rounds, not
 * on time: a loaded machine only takes longer) */
static void
rg_test_io_turn(rg_engine_t *e, rg_test_io_seen_t *seen)
{
    int             i;
    struct timeval  tv;

    for (i = 0; i < 3000 && seen->calls == 0; i++) {
        tv.tv_sec = 0;
        tv.tv_usec = 10000;
        event_base_loopexit(e->base, &tv);
        event_base_loop(e->base, EVLOOP_ONCE);
    }
}


/* a child that ends with status code once a byte comes on fd */
static int
rg_test_io_child(int fd, int code)
{
    char  b;
    int   pid;

    pid = fork();
    assert_true(pid >= 0);

    if (pid == 0) {
        if (read(fd, &b, 1) < 0) {
            _exit(1);
        }
        _exit(code);
    }

    return pid;
}


/* the host table that engine e gives module 0 */
static rg_tool_host_t *
rg_test_io_host(rg_engine_t *e)
{
    return &rg_tools_ctx(e)->mods[0].host;
}


/* io_add and child_watch through e's host table, on e's reactor */
static void
rg_test_io_works(rg_engine_t *e, int code)
{
    int                 p[2], go[2], pid;
    rg_tool_io_t       *io;
    rg_tool_host_t     *host;
    rg_tool_child_t    *c;
    rg_test_io_seen_t   seen;

    host = rg_test_io_host(e);

    assert_int_equal(pipe(p), 0);
    memset(&seen, 0, sizeof(seen));

    io = host->io_add(host, p[0], RG_TOOL_IO_READ, rg_test_io_cb, &seen);
    assert_non_null(io);
    assert_int_equal(write(p[1], "x", 1), 1);
    rg_test_io_turn(e, &seen);
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.fd, p[0]);
    assert_int_equal(seen.events, RG_TOOL_IO_READ);
    host->io_del(io);

    assert_int_equal(pipe(go), 0);
    pid = rg_test_io_child(go[0], code);
    memset(&seen, 0, sizeof(seen));

    c = host->child_watch(host, pid, rg_test_child_cb, &seen);
    assert_non_null(c);
    assert_int_equal(write(go[1], "x", 1), 1);
    rg_test_io_turn(e, &seen);
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.pid, pid);
    assert_true(WIFEXITED(seen.status));
    assert_int_equal(WEXITSTATUS(seen.status), code);

    close(p[0]);
    close(p[1]);
    close(go[0]);
    close(go[1]);
}


static void
rg_test_io_engines(void **state)
{
    int                 go[2], pid, i;
    char                err[512];
    struct timeval      tv;
    rg_cycle_t         *cycle;
    rg_engine_t        *a, *b, *c;
    rg_tool_host_t     *host;
    rg_tool_child_t    *child;
    rg_test_io_seen_t   seen;

    (void) state;

    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/time.so;\n"
                          "llm m { base_url http://127.0.0.1:1/v1; "
                          "model mock-1; }\n"
                          "agent a { tools time_now; }\n",
                          rg_test_build_dir());
    if (cycle == NULL) {
        fail_msg("configuration: %s", err);
    }

    a = rg_engine_create(cycle, cycle->log);
    assert_non_null(a);
    b = rg_engine_create(cycle, cycle->log);
    assert_non_null(b);

    /* each on its own reactor, while both run */
    rg_test_io_works(a, 3);
    rg_test_io_works(b, 4);

    /* a child A watches, and A goes before it ends: B reaps it */
    host = rg_test_io_host(a);
    assert_int_equal(pipe(go), 0);
    pid = rg_test_io_child(go[0], 5);
    memset(&seen, 0, sizeof(seen));
    child = host->child_watch(host, pid, rg_test_child_cb, &seen);
    assert_non_null(child);
    host->child_unwatch(child);

    rg_engine_destroy(a);

    /* B's io still works once A is gone */
    rg_test_io_works(b, 6);

    assert_int_equal(write(go[1], "x", 1), 1);
    close(go[0]);
    close(go[1]);

    /* a zombie until a reactor reaps it (the test must not: waitpid
     * here would reap it itself) */
    for (i = 0; i < 3000 && kill(pid, 0) == 0; i++) {
        tv.tv_sec = 0;
        tv.tv_usec = 10000;
        event_base_loopexit(b->base, &tv);
        event_base_loop(b->base, EVLOOP_ONCE);
    }
    assert_int_equal(kill(pid, 0), -1);
    assert_int_equal(errno, ESRCH);         /* reaped by B's reactor */
    assert_int_equal(seen.calls, 0);        /* unwatched: no callback */

    /* and on an engine made after */
    c = rg_engine_create(cycle, cycle->log);
    assert_non_null(c);
    rg_test_io_works(c, 7);

    rg_engine_destroy(c);
    rg_engine_destroy(b);
    rg_cycle_destroy(cycle);
}


int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rg_test_http_get),
        cmocka_unit_test(rg_test_run_agent),
        cmocka_unit_test(rg_test_run_agent_at_once),
        cmocka_unit_test(rg_test_run_agent_budget),
        cmocka_unit_test(rg_test_exec_approval),
        cmocka_unit_test(rg_test_fs_pool),
        cmocka_unit_test(rg_test_exec_leaves_pool),
        cmocka_unit_test(rg_test_http_budget),
        cmocka_unit_test(rg_test_io_engines),
    };

    if (argc == 3 && strcmp(argv[1], "--http-budget") == 0) {
        return rg_test_http_budget_child(atoi(argv[2]));
    }

    return cmocka_run_group_tests(tests, NULL, NULL);
}
