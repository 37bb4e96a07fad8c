/* test_conf_cycle.c: the cycle (src/core/rg_cycle.c) built from text
 * through rg_test_cycle() ("test.conf"): the defaults of the main, llm and
 * agent directives, worker_processes auto against this process's CPUs,
 * every directive at once with its value (and the request prefix an agent
 * makes of them), the sizes and times of the examples through directives,
 * a tenant's token budget, default_agent, and an agent's tools against
 * the modules loaded. The errors are test_conf_errors.c's; queue { } is
 * test_conf_queue.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_module.h>
#include <rg_core_conf.h>
#include <rg_tools_conf.h>
#include <rg_test.h>
#include <rg_test_conf.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sched.h>
#include <cmocka.h>


#define RG_TEST_SECRET      "sk-test-SECRET"
#define RG_TEST_KEY_VAR     "RG_TEST_CONF_KEY"

/* one llm on line 1, one agent on the next line */
#define RG_TEST_LLM    "llm a { base_url http://127.0.0.1:1/v1; model m; }\n"
#define RG_TEST_AGENT  "agent x { }\n"


static void
rg_test_cycle_defaults(void **state)
{
    rg_cycle_t       *cycle;
    rg_llm_conf_t    *llm;
    rg_agent_conf_t  *agent;

    cycle = rg_test_conf_ok("llm a {\n"
                            "    base_url http://127.0.0.1:1/v1;\n"
                            "    model m;\n"
                            "}\n"
                            "agent first { }\n"
                            "agent second { }\n");

    assert_int_equal(rg_llm_main_conf(cycle)->llms.nelts, 1);
    assert_int_equal(rg_agent_main_conf(cycle)->agents.nelts, 2);
    assert_int_equal(rg_tools_conf(cycle)->modules.nelts, 0);
    assert_int_equal(rg_tools_conf(cycle)->tools.nelts, 0);
    assert_string_equal(cycle->conf_file, "test.conf");

    assert_int_equal(rg_core_conf(cycle)->concurrency, 64);
    assert_int_equal(rg_core_conf(cycle)->worker_processes, 1);
    assert_int_equal(rg_tools_conf(cycle)->tool_result_limit, 4000);
    assert_int_equal(rg_tools_conf(cycle)->pool_threads, 4);
    assert_int_equal(rg_tools_conf(cycle)->pool_max_queue, 65536);
    assert_int_equal(rg_agent_main_conf(cycle)->max_agent_depth, 3);
    assert_int_equal(rg_tools_conf(cycle)->isolated_helpers, 4);
    rg_test_str(&rg_agent_main_conf(cycle)->default_agent, "first");
    assert_ptr_equal(cycle->log, &cycle->new_log);
    assert_int_equal(cycle->new_log.fd, STDERR_FILENO);

    llm = rg_test_llm(cycle, 0);
    rg_test_str(&llm->name, "a");
    rg_test_str(&llm->base_url, "http://127.0.0.1:1/v1");
    rg_test_str(&llm->model, "m");
    assert_null(llm->api_key_env.data);
    assert_int_equal(llm->timeout, 120000);
    assert_int_equal(llm->connect_timeout, 10000);
    assert_int_equal(llm->idle_timeout, 60000);
    assert_int_equal(llm->max_connections, 1024);
    assert_int_equal(llm->max_retries, 4);
    assert_int_equal(llm->retry_base, 500);
    assert_int_equal(llm->retry_max, 30000);
    assert_true(llm->temperature == 0.0);
    assert_int_equal(llm->buffer_size, 4096);
    assert_null(llm->fallback_name.data);
    assert_null(llm->fallback);
    assert_int_equal(llm->requests_per_minute, 0);
    assert_int_equal(llm->tokens_per_minute, 0);
    assert_int_equal(llm->retry_budget, 120000);
    assert_int_equal(llm->stream, 0);
    assert_string_equal(llm->url, "http://127.0.0.1:1/v1/chat/completions");
    assert_null(llm->auth);
    assert_string_equal(llm->file, "test.conf");
    assert_int_equal(llm->line, 1);
    assert_ptr_equal(rg_llm_find(cycle, "a", 1), llm);
    assert_null(rg_llm_find(cycle, "b", 1));

    agent = rg_test_agent(cycle, 0);
    rg_test_str(&agent->name, "first");
    assert_null(agent->llm_name.data);
    assert_ptr_equal(agent->llm, llm);            /* the only llm */
    assert_null(agent->system_prompt.data);
    assert_null(agent->tool_names);
    assert_int_equal(agent->max_rounds, 8);
    assert_int_equal(agent->toolset.timeout, 30000);
    assert_null(agent->tool_timeout_names);
    assert_null(agent->toolset.timeouts);
    assert_null(agent->toolset.approve);
    assert_true(agent->temperature == 0.0);
    assert_int_equal(agent->max_tokens, 0);
    assert_int_equal(agent->deadline, 0);
    assert_int_equal(agent->tool_max_calls, 0);
    assert_null(agent->tool_cap_names);
    assert_int_equal(agent->repeat_window, 2);
    assert_int_equal(agent->repeat_limit, 3);
    assert_int_equal(agent->dedupe, RG_DEDUPE_SESSION);
    assert_int_equal(agent->dedupe_ttl, 600000);
    assert_int_equal(agent->context_limit, 0);
    assert_true(agent->context_threshold == 0.8);
    assert_int_equal(agent->keep_rounds, 2);
    assert_int_equal(agent->context_summarize, 0);
    assert_int_equal(agent->toolset.ntools, 0);
    assert_string_equal(agent->toolset.tool_list, "");
    assert_null(agent->system_msg);
    assert_string_equal(agent->prefix,
                        "{\"model\":\"m\",\"temperature\":0,"
                        "\"messages\":[");
    assert_int_equal(agent->prefix_len, strlen(agent->prefix));
    assert_string_equal(agent->file, "test.conf");
    assert_int_equal(agent->line, 5);

    assert_ptr_equal(rg_agent_find(cycle, "second", 6),
                     rg_test_agent(cycle, 1));
    assert_int_equal(rg_test_agent(cycle, 1)->line, 6);
    assert_null(rg_agent_find(cycle, "third", 5));
    assert_null(rg_agent_find(cycle, "firs", 4));

    rg_cycle_destroy(cycle);
}


/* worker_processes auto: one per CPU this process may run on (a
 * container's cpuset), here one once the test keeps itself to one */
static void
rg_test_worker_processes_auto(void **state)
{
    cpu_set_t     all, one;
    rg_cycle_t   *cycle;

    assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);

    cycle = rg_test_conf_ok("worker_processes auto;\n"
                            "llm a { base_url http://127.0.0.1:1/v1; "
                            "model m; }\n"
                            "agent a { }\n");
    assert_int_equal(rg_core_conf(cycle)->worker_processes, CPU_COUNT(&all));
    rg_cycle_destroy(cycle);

    CPU_ZERO(&one);
    for (int i = 0; i < CPU_SETSIZE; i++) {
        if (CPU_ISSET(i, &all)) {
            CPU_SET(i, &one);
            break;
        }
    }
    assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);

    cycle = rg_test_conf_ok("worker_processes auto;\n"
                            "llm a { base_url http://127.0.0.1:1/v1; "
                            "model m; }\n"
                            "agent a { }\n");
    assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
    assert_int_equal(rg_core_conf(cycle)->worker_processes, 1);
    rg_cycle_destroy(cycle);
}


/* an agent's request prefix starts with start and ends where the
 * messages begin: after the tools, or after the stream options */
static void
rg_test_prefix_end(const char *prefix, size_t len, const char *start,
    const char *end);

static void
rg_test_prefix(const char *prefix, size_t len, const char *start)
{
    rg_test_prefix_end(prefix, len, start, "}],\"messages\":[");
}


static void
rg_test_prefix_end(const char *prefix, size_t len, const char *start,
    const char *end)
{
    assert_int_equal(strlen(prefix), len);
    assert_true(len > strlen(start) + strlen(end));

    if (strncmp(prefix, start, strlen(start)) != 0
        || strcmp(prefix + len - strlen(end), end) != 0)
    {
        print_error("prefix %s\nshould start with %s\nand end with %s\n",
                    prefix, start, end);
        fail();
    }
}


static void
rg_test_cycle_all_directives(void **state)
{
    char              err[512], path[256];
    rg_str_t         *names;
    rg_cycle_t       *cycle;
    rg_llm_conf_t    *llm_main, *llm_other;
    rg_agent_conf_t  *first, *second;

    setenv(RG_TEST_KEY_VAR, RG_TEST_SECRET, 1);

    snprintf(path, sizeof(path), "%s/all-directives.log", rg_test_tmpdir());
    unlink(path);

    cycle = rg_test_cycle(err, sizeof(err),
        "error_log %s info;\n"                          /* 1 */
        "concurrency 16;\n"
        "worker_processes 3;\n"
        "tool_result_limit 2k;\n"
        "default_agent second;\n"                       /* 5 */
        "load_module %s/modules/calc.so;\n"
        "load_module %s/modules/time.so;\n"
        "thread_pool default threads=8 max_queue=100; isolated_helpers 2; "
            "max_agent_depth 0;\n"
        "llm main {\n"                                  /* 9 */
        "    base_url https://api.example.com/v1//;\n"
        "    api_key_env " RG_TEST_KEY_VAR ";\n"
        "    model gpt-test; fallback other; stream on;\n"
        "    timeout 90s;\n"
        "    connect_timeout 1500ms;\n"
        "    idle_timeout 1m30s;\n"
        "    max_connections 32;\n"
        "    max_retries 0; requests_per_minute 600;\n"
        "    retry_base 250ms; tokens_per_minute 90000;\n"
        "    retry_max 1m; retry_budget 3m;\n"
        "    temperature 0.5;\n"
        "    buffer_size 16k;\n"
        "}\n"
        "\n"
        "llm other {\n"                                 /* 24 */
        "    base_url HTTP://127.0.0.1:9;\n"
        "    model small;\n"
        "    temperature 1.5;\n"
        "}\n"
        "\n"
        "agent first {\n"                               /* 30 */
        "    llm main; max_tokens 5000; deadline 90s;\n"
        "    system_prompt \"Be \\\"brief\\\".\";\n"
        "    tools calc; tool_max_calls 4; tool_max_calls calc 2;\n"
        "    tools time_now; repeat_window 5; repeat_limit 6;\n"
        "    max_rounds 3; approve time_now;\n"
        "    tool_timeout 2s; tool_timeout calc 500ms;\n"
        "    temperature 0.25; dedupe global; dedupe_ttl 1h;\n"
        "    context_limit 32000; context_threshold 0.5; keep_rounds 4; "
            "context_summarize on;\n"
        "}\n"
        "\n"
        "agent second {\n"                              /* 41 */
        "    llm other; dedupe off;\n"
        "    system_prompt one   two\tthree;\n"
        "    tools time_now;\n"
        "}\n",
        path, rg_test_build_dir(), rg_test_build_dir());

    if (cycle == NULL) {
        print_error("%s\n", err);
        fail();
    }

    assert_int_equal(rg_core_conf(cycle)->concurrency, 16);
    assert_int_equal(rg_core_conf(cycle)->worker_processes, 3);
    assert_int_equal(rg_tools_conf(cycle)->tool_result_limit, 2048);
    assert_int_equal(rg_tools_conf(cycle)->pool_threads, 8);
    assert_int_equal(rg_tools_conf(cycle)->pool_max_queue, 100);
    assert_int_equal(rg_tools_conf(cycle)->isolated_helpers, 2);
    assert_int_equal(rg_agent_main_conf(cycle)->max_agent_depth, 0);
    rg_test_str(&rg_agent_main_conf(cycle)->default_agent, "second");
    assert_int_equal(rg_tools_conf(cycle)->modules.nelts, 2);
    assert_int_equal(rg_tools_conf(cycle)->tools.nelts, 2);

    /* error_log: the file, at level info, is the cycle's log */
    assert_ptr_equal(cycle->log, &cycle->new_log);
    assert_int_not_equal(cycle->new_log.fd, STDERR_FILENO);
    assert_true(cycle->new_log.fd >= 0);
    assert_int_equal(cycle->new_log.log_level, RG_LOG_INFO);
    assert_int_equal(access(path, F_OK), 0);

    assert_int_equal(rg_llm_main_conf(cycle)->llms.nelts, 2);
    llm_main = rg_test_llm(cycle, 0);
    llm_other = rg_test_llm(cycle, 1);

    rg_test_str(&llm_main->name, "main");
    rg_test_str(&llm_main->base_url, "https://api.example.com/v1//");
    rg_test_str(&llm_main->api_key_env, RG_TEST_KEY_VAR);
    rg_test_str(&llm_main->model, "gpt-test");
    assert_int_equal(llm_main->timeout, 90000);
    assert_int_equal(llm_main->connect_timeout, 1500);
    assert_int_equal(llm_main->idle_timeout, 90000);
    assert_int_equal(llm_main->max_connections, 32);
    assert_int_equal(llm_main->max_retries, 0);
    assert_int_equal(llm_main->retry_base, 250);
    assert_int_equal(llm_main->retry_max, 60000);
    assert_true(llm_main->temperature == 0.5);
    assert_int_equal(llm_main->buffer_size, 16384);
    rg_test_str(&llm_main->fallback_name, "other");
    assert_int_equal(llm_main->requests_per_minute, 600);
    assert_int_equal(llm_main->tokens_per_minute, 90000);
    assert_int_equal(llm_main->retry_budget, 180000);
    assert_int_equal(llm_main->stream, 1);
    assert_string_equal(llm_main->url,
                        "https://api.example.com/v1/chat/completions");
    assert_string_equal(llm_main->auth,
                        "Authorization: Bearer " RG_TEST_SECRET);

    assert_ptr_equal(llm_main->fallback, llm_other);

    rg_test_str(&llm_other->name, "other");
    assert_null(llm_other->fallback);
    assert_int_equal(llm_other->stream, 0);
    assert_int_equal(llm_other->retry_budget, 120000);
    assert_string_equal(llm_other->url, "HTTP://127.0.0.1:9/chat/completions");
    assert_null(llm_other->auth);
    assert_true(llm_other->temperature == 1.5);
    assert_int_equal(llm_other->timeout, 120000);
    assert_int_equal(llm_other->max_retries, 4);
    assert_int_equal(llm_other->buffer_size, 4096);
    assert_int_equal(llm_other->line, 24);

    assert_int_equal(rg_agent_main_conf(cycle)->agents.nelts, 2);
    first = rg_test_agent(cycle, 0);
    second = rg_test_agent(cycle, 1);

    rg_test_str(&first->name, "first");
    rg_test_str(&first->llm_name, "main");
    assert_ptr_equal(first->llm, llm_main);
    rg_test_str(&first->system_prompt, "Be \"brief\".");
    assert_int_equal(first->tool_names->nelts, 2);
    names = first->tool_names->elts;
    rg_test_str(&names[0], "calc");
    rg_test_str(&names[1], "time_now");
    assert_int_equal(first->max_rounds, 3);
    assert_int_equal(first->toolset.timeout, 2000);
    assert_true(first->temperature == 0.25);
    assert_int_equal(first->max_tokens, 5000);
    assert_int_equal(first->deadline, 90000);
    assert_int_equal(first->tool_max_calls, 4);
    assert_int_equal(first->tool_caps[0], 2);           /* calc */
    assert_int_equal(first->tool_caps[1], 4);           /* the agent's */
    assert_int_equal(first->repeat_window, 5);
    assert_int_equal(first->repeat_limit, 6);
    assert_int_equal(first->dedupe, RG_DEDUPE_GLOBAL);
    assert_int_equal(first->dedupe_ttl, 3600000);
    assert_int_equal(first->context_limit, 32000);
    assert_true(first->context_threshold == 0.5);
    assert_int_equal(first->keep_rounds, 4);
    assert_int_equal(first->context_summarize, 1);
    assert_int_equal(first->toolset.ntools, 2);
    assert_ptr_equal(first->toolset.tools[0],
                     rg_module_find_tool(cycle, "calc", 4));
    assert_ptr_equal(first->toolset.tools[1],
                     rg_module_find_tool(cycle, "time_now", 8));
    assert_string_equal(first->toolset.tool_list, "calc, time_now");
    assert_non_null(first->toolset.timeouts);
    assert_int_equal(first->toolset.timeouts[0], 500);     /* calc */
    assert_int_equal(first->toolset.timeouts[1], 0);       /* the agent's */
    assert_int_equal(first->toolset.approve->nelts, 1);
    rg_test_str((rg_str_t *) first->toolset.approve->elts, "time_now");
    assert_string_equal(first->system_msg,
                        "{\"role\":\"system\",\"content\":"
                        "\"Be \\\"brief\\\".\"}");
    assert_int_equal(first->system_msg_len, strlen(first->system_msg));
    /* its llm streams: the stream options close the prefix */
    rg_test_prefix_end(first->prefix, first->prefix_len,
                       "{\"model\":\"gpt-test\",\"temperature\":0.25,"
                       "\"tool_choice\":\"auto\",\"tools\":[{\"type\":"
                       "\"function\",\"function\":{\"name\":\"calc\",",
                       "}}],\"stream\":true,\"stream_options\":"
                       "{\"include_usage\":true},\"messages\":[");
    assert_non_null(strstr(first->prefix, "},{\"type\":\"function\","
                                          "\"function\":{\"name\":"
                                          "\"time_now\","));
    assert_int_equal(first->line, 30);
    assert_int_equal(llm_main->line, 9);

    rg_test_str(&second->name, "second");
    assert_ptr_equal(second->llm, llm_other);
    rg_test_str(&second->system_prompt, "one two three");
    assert_int_equal(second->max_rounds, 8);
    assert_int_equal(second->toolset.timeout, 30000);
    assert_null(second->toolset.timeouts);
    assert_null(second->toolset.approve);
    assert_int_equal(second->dedupe, RG_DEDUPE_OFF);
    assert_int_equal(second->tool_max_calls, 0);
    assert_int_equal(second->tool_caps[0], 0);
    assert_int_equal(second->repeat_limit, 3);
    assert_true(second->temperature == 1.5);      /* the llm's */
    assert_int_equal(second->toolset.ntools, 1);
    assert_string_equal(second->toolset.tool_list, "time_now");
    assert_string_equal(second->system_msg,
                        "{\"role\":\"system\",\"content\":"
                        "\"one two three\"}");
    rg_test_prefix(second->prefix, second->prefix_len,
                   "{\"model\":\"small\",\"temperature\":1.5,"
                   "\"tool_choice\":\"auto\",\"tools\":[{\"type\":"
                   "\"function\",\"function\":{\"name\":\"time_now\",");
    assert_int_equal(second->line, 41);

    rg_cycle_destroy(cycle);
    unlink(path);
}


/* the sizes and times of the examples, through directives */
static void
rg_test_cycle_units(void **state)
{
    rg_uint_t        i;
    rg_cycle_t      *cycle;
    rg_llm_conf_t   *llm;
    char             text[512];

    static const struct {
        const char  *text;
        rg_msec_t    msec;
    } times[] = {
        { "500ms", 500 }, { "30s", 30000 }, { "5m", 300000 },
        { "1h", 3600000 }, { "1d", 86400000 }, { "1m30s", 90000 },
        { "45", 45000 }, { "'2s'", 2000 }, { "\"1s500ms\"", 1500 }
    };

    static const struct {
        const char  *text;
        size_t       size;
    } sizes[] = {
        { "1024", 1024 }, { "1k", 1024 }, { "64k", 65536 },
        { "512k", 524288 }, { "\"8k\"", 8192 }
    };

    for (i = 0; i < rg_nelems(times); i++) {
        snprintf(text, sizeof(text),
                 "llm a {\n"
                 "    base_url http://h;\n"
                 "    model m;\n"
                 "    timeout %s;\n"
                 "    connect_timeout %s;\n"
                 "    idle_timeout %s;\n"
                 "    retry_base %s;\n"
                 "    retry_max %s;\n"
                 "}\n"
                 "agent x {\n"
                 "    tool_timeout %s;\n"
                 "}\n",
                 times[i].text, times[i].text, times[i].text, times[i].text,
                 times[i].text, times[i].text);

        cycle = rg_test_conf_ok(text);
        llm = rg_test_llm(cycle, 0);
        assert_int_equal(llm->timeout, times[i].msec);
        assert_int_equal(llm->connect_timeout, times[i].msec);
        assert_int_equal(llm->idle_timeout, times[i].msec);
        assert_int_equal(llm->retry_base, times[i].msec);
        assert_int_equal(llm->retry_max, times[i].msec);
        assert_int_equal(rg_test_agent(cycle, 0)->toolset.timeout,
                         times[i].msec);
        rg_cycle_destroy(cycle);
    }

    for (i = 0; i < rg_nelems(sizes); i++) {
        snprintf(text, sizeof(text),
                 "tool_result_limit %s;\n"
                 "llm a { base_url http://h; model m; buffer_size %s; }\n"
                 "agent x { }\n", sizes[i].text, sizes[i].text);

        cycle = rg_test_conf_ok(text);
        assert_int_equal(rg_tools_conf(cycle)->tool_result_limit,
                         sizes[i].size);
        assert_int_equal(rg_test_llm(cycle, 0)->buffer_size, sizes[i].size);
        rg_cycle_destroy(cycle);
    }
}


/* a tenant's budget: tokens with k or m, "per" and a window */
static void
rg_test_cycle_tenant_budget(void **state)
{
    rg_uint_t              i;
    rg_cycle_t            *cycle;
    rg_agent_main_conf_t  *amcf;
    char                   text[512];

    static const struct {
        const char  *text;
        rg_int_t     tokens;
        rg_msec_t    window;
    } budgets[] = {
        { "1m per 1d", 1000000, 86400000 },
        { "500k per 1h", 500000, 3600000 },
        { "1.5M per 12h", 1500000, 43200000 },
        { "2K per 30m", 2000, 1800000 },
        { "2500 per 1s", 2500, 1000 }
    };

    cycle = rg_test_conf_ok(RG_TEST_LLM "agent x { }\n");
    assert_int_equal(rg_agent_main_conf(cycle)->tenant_max_tokens, 0);
    rg_cycle_destroy(cycle);

    for (i = 0; i < rg_nelems(budgets); i++) {
        snprintf(text, sizeof(text), "tenant_max_tokens %s;\n"
                 RG_TEST_LLM "agent x { }\n", budgets[i].text);

        cycle = rg_test_conf_ok(text);
        amcf = rg_agent_main_conf(cycle);
        assert_int_equal(amcf->tenant_max_tokens, budgets[i].tokens);
        assert_int_equal(amcf->tenant_window, budgets[i].window);
        rg_cycle_destroy(cycle);
    }
}


/* the file-level checks name the line of the directive when there is one */
static void
rg_test_cycle_default_agent_line(void **state)
{
    rg_test_conf_error(RG_TEST_LLM RG_TEST_AGENT "default_agent zz;\n",
                       "\"default_agent\" names an unknown agent \"zz\" "
                       "in test.conf:3");
}


static void
rg_test_cycle_default_agent(void **state)
{
    rg_cycle_t  *cycle;

    cycle = rg_test_conf_ok("default_agent y;\n" RG_TEST_LLM
                            "agent x { }\nagent y { }\n");
    rg_test_str(&rg_agent_main_conf(cycle)->default_agent, "y");
    rg_cycle_destroy(cycle);

    /* the first agent, in the order of the file */
    cycle = rg_test_conf_ok(RG_TEST_LLM "agent zeta { }\nagent alpha { }\n");
    rg_test_str(&rg_agent_main_conf(cycle)->default_agent, "zeta");
    assert_int_equal(rg_agent_main_conf(cycle)->default_agent.data[4], '\0');
    rg_cycle_destroy(cycle);
}


/* tools: the allow-list against the loaded modules */
static void
rg_test_cycle_tools(void **state)
{
    char         err[512];
    rg_cycle_t  *cycle;

    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/calc.so;\n"
                          "load_module %s/modules/time.so;\n"
                          RG_TEST_LLM
                          "agent x {\n"
                          "    tools calc nope;\n"
                          "}\n", rg_test_build_dir(), rg_test_build_dir());
    assert_null(cycle);
    assert_string_equal(err, "agent \"x\" names an unknown tool \"nope\" "
                             "(loaded tools: calc, time_now) in test.conf:5");

    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/calc.so;\n"
                          RG_TEST_LLM
                          "agent x {\n"
                          "    tools calc;\n"
                          "}\n"
                          "agent y {\n"
                          "    tools calc;\n"
                          "    tools calc;\n"
                          "}\n", rg_test_build_dir());
    assert_null(cycle);
    assert_string_equal(err, "agent \"y\" lists tool \"calc\" twice "
                             "in test.conf:8");

    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/time.so;\n"
                          RG_TEST_LLM
                          "agent x {\n"
                          "    tools time_now time_now;\n"
                          "}\n", rg_test_build_dir());
    assert_null(cycle);
    assert_string_equal(err, "agent \"x\" lists tool \"time_now\" twice "
                             "in test.conf:4");

    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/calc.so;\n"
                          "load_module %s/modules/time.so;\n"
                          RG_TEST_LLM
                          "agent x {\n"
                          "    tools calc;\n"
                          "    tool_timeout time_now 1s;\n"
                          "}\n", rg_test_build_dir(), rg_test_build_dir());
    assert_null(cycle);
    assert_string_equal(err, "agent \"x\": \"tool_timeout\" names "
                             "\"time_now\", which is not in its \"tools\" "
                             "in test.conf:6");

    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/calc.so;\n"
                          "load_module %s/modules/time.so;\n"
                          RG_TEST_LLM
                          "agent x {\n"
                          "    tools time_now;\n"
                          "    approve time_now calc;\n"
                          "}\n", rg_test_build_dir(), rg_test_build_dir());
    assert_null(cycle);
    assert_string_equal(err, "agent \"x\": \"approve\" names \"calc\", "
                             "which is not in its \"tools\" in test.conf:6");

    /* an agent may use a subset; one without tools gets none */
    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/calc.so;\n"
                          "load_module %s/modules/time.so;\n"
                          RG_TEST_LLM
                          "agent x {\n"
                          "    tools time_now;\n"
                          "}\n"
                          "agent y { }\n",
                          rg_test_build_dir(), rg_test_build_dir());
    assert_non_null(cycle);
    assert_int_equal(rg_test_agent(cycle, 0)->toolset.ntools, 1);
    assert_string_equal(rg_test_agent(cycle, 0)->toolset.tool_list, "time_now");
    assert_null(strstr(rg_test_agent(cycle, 0)->prefix, "\"calc\""));
    assert_int_equal(rg_test_agent(cycle, 1)->toolset.ntools, 0);
    assert_null(strstr(rg_test_agent(cycle, 1)->prefix, "\"tools\""));
    rg_cycle_destroy(cycle);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_cycle_defaults),
        cmocka_unit_test(rg_test_worker_processes_auto),
        cmocka_unit_test(rg_test_cycle_all_directives),
        cmocka_unit_test(rg_test_cycle_units),
        cmocka_unit_test(rg_test_cycle_tenant_budget),
        cmocka_unit_test(rg_test_cycle_default_agent_line),
        cmocka_unit_test(rg_test_cycle_default_agent),
        cmocka_unit_test(rg_test_cycle_tools),
    };

    return cmocka_run_group_tests(tests, NULL, rg_test_tmpdir_cleanup);
}
