/* test_metrics.c: the metrics part (src/metrics/): the zone made with
 * the configuration, one slot per worker_processes; the text of
 * rg_metrics_render() checked by tests/lib/rg_prom_check.sh; counters of
 * two slots summed; histograms cumulative with +Inf equal to _count and
 * the sum in seconds; label values escaped; a full name table counting
 * the rest as "other"; a name appended twice (two workers at once)
 * shown once, summed; the gauges of a worker that is gone left out; the
 * HTTP counters; what a forked worker counts seen by another; the
 * engine writing its one slot, or none before serve attaches one; the
 * label values of states and outcomes the same as the
 * agent's and the llm client's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_metrics.h>
#include <rg_session.h>
#include <rg_llm_openai.h>
#include <rg_test.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


static rg_cycle_t   *rg_cycle;
static rg_metrics_t  rg_fake;        /* as an engine's: its slot */


static int
rg_setup(void **state)
{
    char  err[512];

    rg_cycle = rg_test_cycle(err, sizeof(err), "worker_processes 2;\n"
                             "llm a { base_url http://127.0.0.1:9/v1; "
                             "model m; }\nagent x { }\n");
    if (rg_cycle == NULL) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }

    return 0;
}


static int
rg_teardown(void **state)
{
    rg_metrics_here = NULL;
    rg_cycle_destroy(rg_cycle);
    return 0;
}


/* counting goes to slot i of the cycle's zone */
static rg_metrics_zone_t *
rg_use_slot(rg_uint_t i)
{
    rg_metrics_zone_t  *zone;

    zone = rg_metrics_conf(rg_cycle)->zone;
    rg_fake.zone = zone;
    rg_fake.slot = &zone->slots[i];
    atomic_store(&rg_fake.slot->pid, (int64_t) getpid());
    rg_metrics_here = &rg_fake;

    return zone;
}


/* the text, checked by the format checker; the caller frees it */
static char *
rg_render(void)
{
    int        rc;
    char       cmd[512], *path, *text;
    rg_buf_t   b = { NULL, 0, 0 };

    assert_int_equal(rg_metrics_render(rg_cycle, &b), RG_OK);
    assert_int_equal(rg_buf_append(&b, "", 1), RG_OK);

    path = rg_test_write_file("metrics.txt", b.data);
    assert_non_null(path);

    snprintf(cmd, sizeof(cmd), "sh tests/lib/rg_prom_check.sh %s", path);
    rc = system(cmd);
    if (rc != 0) {
        fprintf(stderr, "%s", b.data);
    }
    assert_int_equal(rc, 0);

    free(path);
    text = strdup(b.data);
    rg_buf_free(&b);

    return text;
}


/* the text has this line */
static void
rg_has(const char *text, const char *line)
{
    char        buf[512];
    const char *p;

    snprintf(buf, sizeof(buf), "\n%s\n", line);
    p = strstr(text, buf);

    if (p == NULL) {
        fprintf(stderr, "no line \"%s\" in:\n%s", line, text);
    }
    assert_non_null(p);
}


static void
test_zone(void **state)
{
    rg_metrics_zone_t  *zone;

    zone = rg_metrics_conf(rg_cycle)->zone;
    assert_non_null(zone);
    assert_int_equal(zone->nslots, 2);
    assert_true(zone->size >= sizeof(rg_metrics_zone_t)
                             + 2 * sizeof(rg_metrics_slot_t));

    (void) state;
}


static void
test_names_match(void **state)
{
    rg_uint_t  i;

    for (i = 0; i < RG_METRICS_STATES; i++) {
        assert_string_equal(rg_metrics_states[i],
                            rg_session_state_name((rg_session_state_e) i));
    }
    assert_string_equal(rg_metrics_states[RG_METRICS_FINAL], "done");

    for (i = 0; i < RG_METRICS_OUTCOMES; i++) {
        assert_string_equal(rg_metrics_outcomes[i],
                            rg_llm_status_name((rg_llm_status_e) i));
    }

    (void) state;
}


static void
test_two_slots_summed(void **state)
{
    char       *text;
    rg_uint_t   up;

    rg_use_slot(0);
    up = rg_metrics_upstream("main", 4);
    rg_metrics_model_call(up, 0, 20000, 100, 7);
    rg_metrics_model_retry(up);
    rg_metrics_tool_call("calc", RG_METRICS_TOOL_OK, 1000);
    rg_metrics_tool_call("calc", RG_METRICS_TOOL_TIMEOUT, 1000);
    rg_metrics_dedupe_hit();
    rg_metrics_session_state(-1, 0);
    rg_metrics_session_state(0, 1);

    rg_use_slot(1);
    assert_int_equal(rg_metrics_upstream("main", 4), up);
    rg_metrics_model_call(up, 1, 20000, 50, 3);
    rg_metrics_tool_call("calc", RG_METRICS_TOOL_OK, 1000);
    rg_metrics_tool_call("calc", RG_METRICS_TOOL_OK, 1000);
    rg_metrics_session_state(-1, 0);
    rg_metrics_session_state(0, 1);
    rg_metrics_session_state(1, RG_METRICS_FINAL);
    rg_metrics_redis_command(300);
    rg_metrics_redis_error(RG_METRICS_REDIS_TIMEOUT);
    rg_metrics_task(RG_METRICS_TASK_RECLAIMED, 4);

    text = rg_render();

    rg_has(text, "reagent_tool_calls_total{tool=\"calc\",outcome=\"ok\"} 3");
    rg_has(text, "reagent_tool_calls_total{tool=\"calc\",outcome=\"timeout\"}"
                 " 1");
    rg_has(text, "reagent_tool_call_duration_seconds_count{tool=\"calc\"} 4");
    rg_has(text, "reagent_model_calls_total{upstream=\"main\",outcome=\"ok\"}"
                 " 1");
    rg_has(text, "reagent_model_calls_total{upstream=\"main\",outcome="
                 "\"rate_limited\"} 1");
    rg_has(text, "reagent_model_tokens_total{upstream=\"main\",kind="
                 "\"prompt\"} 150");
    rg_has(text, "reagent_model_tokens_total{upstream=\"main\",kind="
                 "\"completion\"} 10");
    rg_has(text, "reagent_model_retries_total{upstream=\"main\"} 1");
    rg_has(text, "reagent_dedupe_hits_total 1");
    /* one waits for the model in slot 0, the other ended in slot 1 */
    rg_has(text, "reagent_sessions{state=\"model_wait\"} 1");
    rg_has(text, "reagent_sessions{state=\"queued\"} 0");
    rg_has(text, "reagent_sessions_finished_total{status=\"done\"} 1");
    rg_has(text, "reagent_redis_command_duration_seconds_bucket{le="
                 "\"0.0005\"} 1");
    rg_has(text, "reagent_redis_errors_total{kind=\"timeout\"} 1");
    rg_has(text, "reagent_queue_tasks_total{outcome=\"reclaimed\"} 4");
    rg_has(text, "reagent_workers 2");

    /* no queue was read: no queue gauges */
    assert_null(strstr(text, "reagent_queue_depth"));

    free(text);
    (void) state;
}


static void
test_histogram(void **state)
{
    char       *text;
    rg_uint_t   up;

    rg_use_slot(0);
    up = rg_metrics_upstream("hist", 4);

    rg_metrics_model_call(up, 0, 30000, 0, 0);        /* 0.03 s */
    rg_metrics_model_call(up, 0, 50000, 0, 0);        /* 0.05: its bound */
    rg_metrics_model_call(up, 0, 200000, 0, 0);       /* 0.2 */
    rg_metrics_model_call(up, 0, 100000000, 0, 0);    /* 100: +Inf */

    text = rg_render();

    rg_has(text, "reagent_model_call_duration_seconds_bucket{upstream="
                 "\"hist\",le=\"0.05\"} 2");
    rg_has(text, "reagent_model_call_duration_seconds_bucket{upstream="
                 "\"hist\",le=\"0.1\"} 2");
    rg_has(text, "reagent_model_call_duration_seconds_bucket{upstream="
                 "\"hist\",le=\"0.25\"} 3");
    rg_has(text, "reagent_model_call_duration_seconds_bucket{upstream="
                 "\"hist\",le=\"60\"} 3");
    rg_has(text, "reagent_model_call_duration_seconds_bucket{upstream="
                 "\"hist\",le=\"+Inf\"} 4");
    rg_has(text, "reagent_model_call_duration_seconds_count{upstream="
                 "\"hist\"} 4");
    rg_has(text, "reagent_model_call_duration_seconds_sum{upstream="
                 "\"hist\"} 100.280000");

    free(text);
    (void) state;
}


static void
test_escaping(void **state)
{
    char  *text;

    rg_use_slot(0);
    rg_metrics_tool_call("we\"ird\\na\nme", RG_METRICS_TOOL_ERROR, 10);

    text = rg_render();

    rg_has(text, "reagent_tool_calls_total{tool=\"we\\\"ird\\\\na\\nme\","
                 "outcome=\"error\"} 1");

    free(text);
    (void) state;
}


static void
test_table_full(void **state)
{
    char                name[32], line[128], *text;
    rg_uint_t           i, idx;
    rg_metrics_zone_t  *zone;

    zone = rg_use_slot(0);

    /* 300 tools: those past the table's last name are "other" */
    for (i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "tool_%lu", (unsigned long) i);
        rg_metrics_tool_call(name, RG_METRICS_TOOL_OK, 10);
    }

    assert_int_equal(atomic_load(&zone->used[RG_METRICS_TOOL]),
                     RG_METRICS_TOOLS - 1);
    idx = rg_metrics_name(zone, RG_METRICS_TOOL, "tool_299", 8);
    assert_int_equal(idx, RG_METRICS_TOOLS - 1);
    /* a name known before the table was full keeps its own */
    idx = rg_metrics_name(zone, RG_METRICS_TOOL, "tool_0", 6);
    assert_true(idx < RG_METRICS_TOOLS - 1);

    text = rg_render();

    /* this test's first names came after earlier tests' ones */
    i = atomic_load(&zone->used[RG_METRICS_TOOL]);
    assert_non_null(strstr(text, "{tool=\"tool_0\",outcome=\"ok\"} 1\n"));
    assert_null(strstr(text, "{tool=\"tool_299\""));
    snprintf(line, sizeof(line), "reagent_tool_calls_total{tool=\"other\","
             "outcome=\"ok\"} %lu", (unsigned long) (300 - (i - 2)));
    rg_has(text, line);

    free(text);
    (void) state;
}


static void
test_same_name_twice(void **state)
{
    char                *text;
    rg_uint_t            a, b;
    rg_metrics_zone_t   *zone;

    zone = rg_use_slot(0);

    /* two workers that appended "up2" at once: two entries */
    a = rg_metrics_upstream("up2", 3);
    b = atomic_fetch_add(&zone->used[RG_METRICS_UPSTREAM], 1);
    memcpy(zone->upstreams[b].name, "up2", 4);
    atomic_store(&zone->upstreams[b].ready, 1);
    assert_int_not_equal(a, b);

    rg_metrics_model_retry(a);
    rg_use_slot(1);
    rg_metrics_model_retry(b);
    rg_metrics_model_retry(b);

    text = rg_render();

    rg_has(text, "reagent_model_retries_total{upstream=\"up2\"} 3");
    /* once: the checker refuses a series twice */

    free(text);
    (void) state;
}


static void
test_dead_worker(void **state)
{
    char               *text;
    pid_t               pid;
    rg_metrics_zone_t  *zone;

    zone = rg_use_slot(1);
    rg_metrics_session_state(-1, 2);            /* tools_running */

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        _exit(0);
    }
    assert_int_equal(waitpid(pid, NULL, 0), pid);

    /* slot 1's worker is gone: its gauges go, its counters stay */
    atomic_store(&zone->slots[1].pid, (int64_t) pid);

    text = rg_render();

    /* what /readyz asks: one of two workers is up */
    {
        rg_uint_t  alive, slots;

        assert_int_equal(rg_metrics_workers(rg_cycle, &alive, &slots),
                         RG_OK);
        assert_int_equal(alive, 1);
        assert_int_equal(slots, 2);
    }

    rg_has(text, "reagent_workers 1");
    rg_has(text, "reagent_sessions{state=\"tools_running\"} 0");
    rg_has(text, "reagent_sessions_finished_total{status=\"done\"} 1");
    assert_null(strstr(text, "reagent_open_fds{worker=\"1\"}"));

    free(text);

    /* attached again (a new worker): gauges from zero, alive */
    rg_use_slot(1);
    text = rg_render();
    rg_has(text, "reagent_workers 2");
    {
        rg_uint_t  alive, slots;

        assert_int_equal(rg_metrics_workers(rg_cycle, &alive, &slots),
                         RG_OK);
        assert_int_equal(alive, 2);
    }
    rg_has(text, "reagent_sessions{state=\"tools_running\"} 1");
    free(text);
    rg_metrics_session_state(2, -1);

    (void) state;
}


static void
test_http(void **state)
{
    char          *text;
    void          *ctx[64];
    rg_engine_t    e;

    assert_true(rg_parts_count() <= 64);
    memset(&e, 0, sizeof(e));
    memset(ctx, 0, sizeof(ctx));
    e.ctx = ctx;
    ctx[rg_metrics_part.index] = &rg_fake;

    rg_use_slot(0);

    rg_metrics_http(&e, "GET", "/metrics", 200, 0.002);
    rg_metrics_http(&e, "POST", "/v1/tasks", 202, 0.02);
    rg_metrics_http(&e, "POST", "/v1/tasks", 202, 0.03);
    rg_metrics_http(&e, "POST", "/v1/tasks", 418, 0.001);
    rg_metrics_http(&e, "BREW", "/v1/tasks", 999, 0.001);
    rg_metrics_http(NULL, "GET", "/metrics", 200, 0.002);   /* nothing */

    text = rg_render();

    rg_has(text, "reagent_http_requests_total{method=\"GET\",route="
                 "\"/metrics\",code=\"200\"} 1");
    rg_has(text, "reagent_http_requests_total{method=\"POST\",route="
                 "\"/v1/tasks\",code=\"202\"} 2");
    rg_has(text, "reagent_http_requests_total{method=\"POST\",route="
                 "\"/v1/tasks\",code=\"4xx\"} 1");
    rg_has(text, "reagent_http_requests_total{method=\"other\",route="
                 "\"/v1/tasks\",code=\"5xx\"} 1");
    rg_has(text, "reagent_http_request_duration_seconds_bucket{route="
                 "\"/v1/tasks\",le=\"0.025\"} 3");
    rg_has(text, "reagent_http_request_duration_seconds_count{route="
                 "\"/v1/tasks\"} 4");

    free(text);
    (void) state;
}


static void
test_queue_gauges(void **state)
{
    char  *text;

    rg_use_slot(1);
    rg_metrics_queue(&rg_fake, 0, 5, 2, 0);
    rg_metrics_queue(&rg_fake, 1, 7, 0, 1);
    rg_metrics_queue(&rg_fake, RG_METRICS_SHARDS, 1, 1, 1);   /* ignored */

    text = rg_render();

    rg_has(text, "reagent_queue_depth{shard=\"0\"} 5");
    rg_has(text, "reagent_queue_depth{shard=\"1\"} 7");
    rg_has(text, "reagent_queue_pending{shard=\"0\"} 2");
    rg_has(text, "reagent_queue_dead_letters{shard=\"1\"} 1");
    rg_has(text, "reagent_tasks_parked 0");
    free(text);

    rg_metrics_parked(&rg_fake, 3);
    text = rg_render();
    rg_has(text, "# TYPE reagent_tasks_parked gauge");
    rg_has(text, "reagent_tasks_parked 3");

    free(text);
    (void) state;
}


/* spans exported and dropped, summed over the workers */
static void
test_trace_spans(void **state)
{
    char  *text;

    rg_use_slot(0);
    rg_metrics_trace_spans(5, 0);
    rg_use_slot(1);
    rg_metrics_trace_spans(2, 0);
    rg_metrics_trace_spans(0, 4);

    text = rg_render();

    rg_has(text, "# TYPE reagent_trace_spans_exported_total counter");
    rg_has(text, "reagent_trace_spans_exported_total 7");
    rg_has(text, "# TYPE reagent_trace_spans_dropped_total counter");
    rg_has(text, "reagent_trace_spans_dropped_total 4");

    free(text);
    (void) state;
}


/* a worker forked from the master writes its slot; another sees it */
static void
test_fork_shared(void **state)
{
    char   *text;
    int     status;
    pid_t   pid;

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        rg_use_slot(1);
        rg_metrics_model_retry(rg_metrics_upstream("forked", 6));
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(status, 0);

    text = rg_render();
    rg_has(text, "reagent_model_retries_total{upstream=\"forked\"} 1");
    free(text);

    rg_use_slot(1);                    /* the child left its pid there */
    (void) state;
}


static void
test_engine(void **state)
{
    char                err[512];
    rg_cycle_t         *cycle;
    rg_engine_t        *e;
    rg_metrics_t       *m;

    rg_metrics_here = NULL;

    /* one worker: the engine writes the only slot from its start */
    cycle = rg_test_cycle(err, sizeof(err), "llm a { base_url "
                          "http://127.0.0.1:9/v1; model m; }\n"
                          "agent x { }\n");
    assert_non_null(cycle);
    e = rg_engine_create(cycle, cycle->log);
    assert_non_null(e);
    m = rg_metrics_ctx(e);
    assert_non_null(m);
    assert_ptr_equal(rg_metrics_here, m);
    assert_ptr_equal(m->slot, &rg_metrics_conf(cycle)->zone->slots[0]);
    assert_int_equal(atomic_load(&m->slot->pid), getpid());
    rg_engine_destroy(e);
    assert_null(rg_metrics_here);
    rg_cycle_destroy(cycle);

    /* more: nothing is counted before a worker attaches its slot */
    e = rg_engine_create(rg_cycle, rg_cycle->log);
    assert_non_null(e);
    m = rg_metrics_ctx(e);
    assert_null(m->slot);
    assert_null(rg_metrics_slot());
    rg_metrics_dedupe_hit();                      /* nothing, no crash */
    assert_int_equal(rg_metrics_attach(e, 2), RG_ERROR);
    assert_int_equal(rg_metrics_attach(e, 1), RG_OK);
    assert_ptr_equal(m->slot, &rg_metrics_conf(rg_cycle)->zone->slots[1]);
    assert_true(atomic_load(&m->slot->open_fds) > 0);
    assert_true(atomic_load(&m->slot->resident_bytes) > 0);
    rg_engine_destroy(e);

    (void) state;
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zone),
        cmocka_unit_test(test_names_match),
        cmocka_unit_test(test_two_slots_summed),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_table_full),
        cmocka_unit_test(test_same_name_twice),
        cmocka_unit_test(test_dead_worker),
        cmocka_unit_test(test_http),
        cmocka_unit_test(test_queue_gauges),
        cmocka_unit_test(test_trace_spans),
        cmocka_unit_test(test_fork_shared),
        cmocka_unit_test(test_engine),
    };

    return cmocka_run_group_tests(tests, rg_setup, rg_teardown);
}
