/* test_conf_errors.c: every error the cycle (src/core/rg_cycle.c and the
 * parts' directives) reports for a configuration it refuses, compared
 * whole, " in test.conf:LINE" included; and the directives of another
 * context, which are known directives in the wrong place ("it belongs
 * inside llm NAME { }"), not unknown ones. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_test.h>
#include <rg_test_conf.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


#define RG_TEST_SECRET      "sk-test-SECRET"
#define RG_TEST_KEY_VAR     "RG_TEST_CONF_KEY"
#define RG_TEST_UNSET_VAR   "RG_TEST_CONF_UNSET"
#define RG_TEST_EMPTY_VAR   "RG_TEST_CONF_EMPTY"

/* one llm on line 1, one agent on the next line */
#define RG_TEST_LLM    "llm a { base_url http://127.0.0.1:1/v1; model m; }\n"
#define RG_TEST_AGENT  "agent x { }\n"


typedef struct {
    const char             *text;
    const char             *error;
} rg_test_case_t;


/* every error the cycle reports, whole */
static void
rg_test_cycle_errors(void **state)
{
    rg_uint_t  i, failed;

    static const rg_test_case_t  cases[] = {

        /* structure */
        { "bogus 1;\n", "unknown directive \"bogus\" in test.conf:1" },
        { RG_TEST_LLM "agent x {\n    bogus;\n}\n",
          "unknown directive \"bogus\" in test.conf:3" },
        { RG_TEST_LLM RG_TEST_AGENT "concurrency 1 2;\n",
          "invalid number of arguments in \"concurrency\" directive "
          "in test.conf:3" },
        { RG_TEST_LLM RG_TEST_AGENT "llm { }\n",
          "invalid number of arguments in \"llm\" directive in test.conf:3" },
        { RG_TEST_LLM RG_TEST_AGENT "agent y z { }\n",
          "invalid number of arguments in \"agent\" directive "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    system_prompt;\n}\n",
          "invalid number of arguments in \"system_prompt\" directive "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    tools;\n}\n",
          "invalid number of arguments in \"tools\" directive "
          "in test.conf:3" },
        { "error_log;\n", "invalid number of arguments in \"error_log\" "
                          "directive in test.conf:1" },
        { "error_log stderr info x;\n", "invalid number of arguments in "
                                        "\"error_log\" directive "
                                        "in test.conf:1" },
        { RG_TEST_LLM RG_TEST_AGENT "default_agent x",
          "unexpected end of file, expecting \";\" or \"}\" "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    llm a {\n    }\n}\n",
          "directive \"llm\" is not terminated by \";\" in test.conf:3" },
        { RG_TEST_LLM "agent x;\n",
          "directive \"agent\" has no opening \"{\" in test.conf:2" },
        { "llm a base_url http://h;\n",
          "directive \"llm\" has no opening \"{\" in test.conf:1" },
        { RG_TEST_LLM RG_TEST_AGENT "}\n",
          "unexpected \"}\" in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_rounds 2;",
          "unexpected end of file, expecting \"}\" in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_rounds 2 }\n",
          "missing \";\" after \"max_rounds 2\" before \"}\" "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_rounds 2\n}\n",
          "missing \";\" after \"max_rounds 2\" before \"}\" "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_rounds 2\n    deadline 5s\n}\n",
          "missing \";\" after \"max_rounds 2\": line 4 starts with the "
          "directive \"deadline\" (quote it if it is an argument) "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_rounds 2;\n    max_rond 3;\n}\n",
          "unknown directive \"max_rond\" (did you mean \"max_rounds\"?) "
          "in test.conf:4" },
        { RG_TEST_LLM RG_TEST_AGENT ";\n",
          "unexpected \";\" in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    system_prompt \"abc;\n}\n",
          "unexpected end of file in a quoted string, expecting '\"' "
          "in test.conf:5" },
        { RG_TEST_LLM "agent x {\n    system_prompt \"a\"b;\n}\n",
          "unexpected \"b\" in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    system_prompt a\"b\";\n}\n",
          "unexpected quote inside a word in test.conf:3" },

        /* duplicates */
        { RG_TEST_LLM "agent x {\n    max_rounds 2;\n    max_rounds 3;\n}\n",
          "\"max_rounds\" directive is duplicate in test.conf:4" },
        { "llm a {\n    base_url http://h;\n    base_url http://h;\n}\n",
          "\"base_url\" directive is duplicate in test.conf:3" },
        { "llm a {\n    model m;\n    model m;\n}\n",
          "\"model\" directive is duplicate in test.conf:3" },
        { "llm a {\n    api_key_env A;\n    api_key_env B;\n}\n",
          "\"api_key_env\" directive is duplicate in test.conf:3" },
        { "llm a {\n    timeout 1s;\n    timeout 1s;\n}\n",
          "\"timeout\" directive is duplicate in test.conf:3" },
        { "llm a {\n    connect_timeout 1s;\n    connect_timeout 2s;\n}\n",
          "\"connect_timeout\" directive is duplicate in test.conf:3" },
        { "llm a {\n    idle_timeout 1s;\n    idle_timeout 2s;\n}\n",
          "\"idle_timeout\" directive is duplicate in test.conf:3" },
        { "llm a {\n    max_connections 1;\n    max_connections 1;\n}\n",
          "\"max_connections\" directive is duplicate in test.conf:3" },
        { "llm a {\n    max_retries 1;\n    max_retries 1;\n}\n",
          "\"max_retries\" directive is duplicate in test.conf:3" },
        { "llm a {\n    retry_base 1s;\n    retry_base 1s;\n}\n",
          "\"retry_base\" directive is duplicate in test.conf:3" },
        { "llm a {\n    retry_max 1s;\n    retry_max 1s;\n}\n",
          "\"retry_max\" directive is duplicate in test.conf:3" },
        { "llm a {\n    temperature 0;\n    temperature 0;\n}\n",
          "\"temperature\" directive is duplicate in test.conf:3" },
        { "llm a {\n    buffer_size 8k;\n    buffer_size 8k;\n}\n",
          "\"buffer_size\" directive is duplicate in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    llm a;\n    llm a;\n}\n",
          "\"llm\" directive is duplicate in test.conf:4" },
        { RG_TEST_LLM "agent x {\n    system_prompt a;\n"
          "    system_prompt b;\n}\n",
          "\"system_prompt\" directive is duplicate in test.conf:4" },
        { RG_TEST_LLM "agent x {\n    tool_timeout 1s;\n"
          "    tool_timeout 1s;\n}\n",
          "\"tool_timeout\" directive is duplicate in test.conf:4" },
        { RG_TEST_LLM "agent x {\n    temperature 1;\n"
          "    temperature 1;\n}\n",
          "\"temperature\" directive is duplicate in test.conf:4" },
        { "concurrency 1;\nconcurrency 2;\n",
          "\"concurrency\" directive is duplicate in test.conf:2" },
        { "worker_processes 1;\nworker_processes 2;\n",
          "\"worker_processes\" directive is duplicate in test.conf:2" },
        { "tool_result_limit 1k;\ntool_result_limit 2k;\n",
          "\"tool_result_limit\" directive is duplicate in test.conf:2" },
        { "default_agent x;\ndefault_agent x;\n",
          "\"default_agent\" directive is duplicate in test.conf:2" },
        { RG_TEST_LLM "llm a { base_url http://h; model m; }\n",
          "\"llm\" directive is duplicate: an llm of that name exists "
          "in test.conf:2" },
        { RG_TEST_LLM RG_TEST_AGENT "agent x {\n}\n",
          "\"agent\" directive is duplicate: an agent of that name exists "
          "in test.conf:3" },

        /* bounds and values */
        { RG_TEST_LLM "agent x {\n    max_rounds 0;\n}\n",
          "\"max_rounds\" directive expects a number from 1 to 10000 "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_rounds 10001;\n}\n",
          "\"max_rounds\" directive expects a number from 1 to 10000 "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_rounds -1;\n}\n",
          "\"max_rounds\" directive expects a non-negative integer "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_rounds many;\n}\n",
          "\"max_rounds\" directive expects a non-negative integer "
          "in test.conf:3" },
        { "llm a {\n    temperature 3;\n}\n",
          "\"temperature\" directive expects a number from 0 to 2 "
          "in test.conf:2" },
        { "llm a {\n    temperature 2.01;\n}\n",
          "\"temperature\" directive expects a number from 0 to 2 "
          "in test.conf:2" },
        { "llm a {\n    temperature -1;\n}\n",
          "\"temperature\" directive expects a number from 0 to 2 "
          "in test.conf:2" },
        { "llm a {\n    temperature hot;\n}\n",
          "\"temperature\" directive expects a number such as 0.7 "
          "in test.conf:2" },
        { RG_TEST_LLM "agent x {\n    temperature 3;\n}\n",
          "\"temperature\" directive expects a number from 0 to 2 "
          "in test.conf:3" },
        { "llm a {\n    max_retries 101;\n}\n",
          "\"max_retries\" directive expects a number from 0 to 100 "
          "in test.conf:2" },
        { "llm a {\n    max_connections 0;\n}\n",
          "\"max_connections\" directive expects a number from 1 to 1000000 "
          "in test.conf:2" },
        { "concurrency 0;\n",
          "\"concurrency\" directive expects a number from 1 to 1000000 "
          "in test.conf:1" },
        { "concurrency 1000001;\n",
          "\"concurrency\" directive expects a number from 1 to 1000000 "
          "in test.conf:1" },
        { "worker_processes 0;\n",
          "\"worker_processes\" directive expects a number from 1 to 1024 "
          "in test.conf:1" },
        { "max_agent_depth 17;\n",
          "\"max_agent_depth\" directive expects a number from 0 to 16 "
          "in test.conf:1" },
        { "isolated_helpers 0;\n",
          "\"isolated_helpers\" directive expects a number from 1 to 256 "
          "in test.conf:1" },
        { "isolated_helpers 1;\nisolated_helpers 1;\n",
          "\"isolated_helpers\" directive is duplicate in test.conf:2" },
        { "max_agent_depth 1;\nmax_agent_depth 1;\n",
          "\"max_agent_depth\" directive is duplicate in test.conf:2" },
        { "thread_pool other threads=4;\n",
          "\"thread_pool\" directive names a pool other than \"default\": "
          "tools run in the pool \"default\" in test.conf:1" },
        { "thread_pool default threads=0;\n",
          "\"thread_pool\" directive expects threads=N with N from 1 to 512 "
          "in test.conf:1" },
        { "thread_pool default threads=513;\n",
          "\"thread_pool\" directive expects threads=N with N from 1 to 512 "
          "in test.conf:1" },
        { "thread_pool default threads=many;\n",
          "\"thread_pool\" directive expects threads=N with N from 1 to 512 "
          "in test.conf:1" },
        { "thread_pool default max_queue=0;\n",
          "\"thread_pool\" directive expects max_queue=N with N of 1 or "
          "more in test.conf:1" },
        { "thread_pool default size=3;\n",
          "\"thread_pool\" directive expects threads=N or max_queue=N "
          "in test.conf:1" },
        { "thread_pool default threads=;\n",
          "\"thread_pool\" directive expects threads=N or max_queue=N "
          "in test.conf:1" },
        { "thread_pool default;\nthread_pool default threads=2;\n",
          "\"thread_pool\" directive is duplicate in test.conf:2" },
        { "thread_pool;\n",
          "invalid number of arguments in \"thread_pool\" directive "
          "in test.conf:1" },
        { "thread_pool default threads=1 max_queue=1 x;\n",
          "invalid number of arguments in \"thread_pool\" directive "
          "in test.conf:1" },
        { RG_TEST_LLM "agent x {\n    tool_timeout calc soon;\n}\n",
          "\"tool_timeout\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    tool_timeout calc 1s 2s;\n}\n",
          "invalid number of arguments in \"tool_timeout\" directive "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    tool_timeout calc 1s;\n}\n",
          "agent \"x\": \"tool_timeout\" names \"calc\", which is not in "
          "its \"tools\" in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    approve calc;\n}\n",
          "agent \"x\": \"approve\" names \"calc\", which is not in its "
          "\"tools\" in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    approve;\n}\n",
          "invalid number of arguments in \"approve\" directive "
          "in test.conf:3" },
        { "llm a {\n    base_url http://h;\n    model m;\n"
          "    fallback zz;\n}\n" RG_TEST_AGENT,
          "llm \"a\": \"fallback\" names an unknown llm \"zz\" "
          "in test.conf:4" },
        { RG_TEST_LLM "llm b {\n    base_url http://h;\n    model m;\n"
          "    fallback b;\n}\n" RG_TEST_AGENT,
          "llm \"b\": \"fallback\" names itself: \"b\" in test.conf:5" },
        { "llm a {\n    fallback b;\n    fallback c;\n}\n",
          "\"fallback\" directive is duplicate in test.conf:3" },
        { "llm a {\n    requests_per_minute 0;\n}\n",
          "\"requests_per_minute\" directive expects a number from 1 to "
          "100000000 in test.conf:2" },
        { "llm a {\n    tokens_per_minute 100000001;\n}\n",
          "\"tokens_per_minute\" directive expects a number from 1 to "
          "100000000 in test.conf:2" },
        { "llm a {\n    retry_budget 1x;\n}\n",
          "\"retry_budget\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:2" },
        { "llm a {\n    stream yes;\n}\n",
          "\"stream\" directive expects \"on\" or \"off\" in test.conf:2" },
        { "llm a {\n    stream on;\n    stream off;\n}\n",
          "\"stream\" directive is duplicate in test.conf:3" },
        { "llm a {\n    stream;\n}\n",
          "invalid number of arguments in \"stream\" directive "
          "in test.conf:2" },
        { RG_TEST_LLM "agent x {\n    max_tokens -1;\n}\n",
          "\"max_tokens\" directive expects a non-negative integer "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_tokens 1;\n    max_tokens 2;\n}\n",
          "\"max_tokens\" directive is duplicate in test.conf:4" },
        { RG_TEST_LLM "agent x {\n    deadline 5y;\n}\n",
          "\"deadline\" directive expects a time such as 500ms, 30s, 5m or 1h "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    tool_max_calls 0;\n}\n",
          "\"tool_max_calls\" directive expects a number of calls of 1 or "
          "more in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    tool_max_calls calc many;\n}\n",
          "\"tool_max_calls\" directive expects a number of calls of 1 or "
          "more in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    tool_max_calls 2;\n"
          "    tool_max_calls 3;\n}\n",
          "\"tool_max_calls\" directive is duplicate in test.conf:4" },
        { RG_TEST_LLM "agent x {\n    tool_max_calls calc 2;\n}\n",
          "agent \"x\": \"tool_max_calls\" names \"calc\", which is not in "
          "its \"tools\" in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    repeat_window 1001;\n}\n",
          "\"repeat_window\" directive expects a number from 0 to 1000 "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    repeat_limit 1001;\n}\n",
          "\"repeat_limit\" directive expects a number from 0 to 1000 "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    keep_rounds 1001;\n}\n",
          "\"keep_rounds\" directive expects a number from 0 to 1000 "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    dedupe always;\n}\n",
          "\"dedupe\" directive expects one of: \"off\" \"session\" "
          "\"agent\" \"global\" in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    dedupe off;\n    dedupe agent;\n}\n",
          "\"dedupe\" directive is duplicate in test.conf:4" },
        { RG_TEST_LLM "agent x {\n    dedupe_ttl forever;\n}\n",
          "\"dedupe_ttl\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    dedupe_ttl 0;\n}\n",
          "\"dedupe_ttl\" directive must be more than 0 in test.conf:3" },
        { "tenant_max_tokens 0 per 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens -5 per 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1g per 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1mm per 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens m per 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1m each 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1m per 500ms;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1m per forever;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1e16 per 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1m per;\n",
          "invalid number of arguments in \"tenant_max_tokens\" directive "
          "in test.conf:1" },
        { "tenant_max_tokens 1m per 1d;\ntenant_max_tokens 2m per 1d;\n",
          "\"tenant_max_tokens\" directive is duplicate in test.conf:2" },
        { RG_TEST_LLM "agent x {\n    tenant_max_tokens 1m per 1d;\n}\n",
          "\"tenant_max_tokens\" directive is not allowed here; it belongs "
          "at the top level in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    context_limit lots;\n}\n",
          "\"context_limit\" directive expects a non-negative integer "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    context_threshold 1.5;\n}\n",
          "\"context_threshold\" directive expects a number from 0 to 1 "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    context_summarize maybe;\n}\n",
          "\"context_summarize\" directive expects \"on\" or \"off\" "
          "in test.conf:3" },
        { "worker_processes 1025;\n",
          "\"worker_processes\" directive expects a number from 1 to 1024 "
          "in test.conf:1" },
        { "llm a {\n    buffer_size 12x;\n}\n",
          "\"buffer_size\" directive expects a size such as 512, 64k or 1m "
          "in test.conf:2" },
        { "tool_result_limit 1.5k;\n",
          "\"tool_result_limit\" directive expects a size such as 512, 64k "
          "or 1m in test.conf:1" },
        { "llm a {\n    timeout 5y;\n}\n",
          "\"timeout\" directive expects a time such as 500ms, 30s, 5m or 1h "
          "in test.conf:2" },
        { "llm a {\n    connect_timeout 1.5s;\n}\n",
          "\"connect_timeout\" directive expects a time such as 500ms, 30s, "
          "5m or 1h in test.conf:2" },
        { "llm a {\n    idle_timeout -1;\n}\n",
          "\"idle_timeout\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:2" },
        { "llm a {\n    retry_base ms;\n}\n",
          "\"retry_base\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:2" },
        { "llm a {\n    retry_max 1w;\n}\n",
          "\"retry_max\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:2" },
        { RG_TEST_LLM "agent x {\n    tool_timeout soon;\n}\n",
          "\"tool_timeout\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:3" },
        { "error_log stderr loud;\n",
          "\"error_log\" directive expects a level: emerg, alert, crit, "
          "error, warn, notice, info or debug in test.conf:1" },
        { "\n\nerror_log stderr INFO;\n",
          "\"error_log\" directive expects a level: emerg, alert, crit, "
          "error, warn, notice, info or debug in test.conf:3" },
        { "error_log /nonexistent-rg-test-dir/error.log;\n",
          "cannot open error log \"/nonexistent-rg-test-dir/error.log\" "
          "(2: No such file or directory) in test.conf:1" },

        /* the whole-file checks */
        { "llm a {\n    model m;\n}\n" RG_TEST_AGENT,
          "llm \"a\" has no \"base_url\" in test.conf:1" },
        { "\nllm a {\n    base_url http://h;\n}\n" RG_TEST_AGENT,
          "llm \"a\" has no \"model\" in test.conf:2" },
        { "llm a {\n    base_url ftp://h;\n    model m;\n}\n" RG_TEST_AGENT,
          "llm \"a\": \"base_url\" must start with http:// or https:// "
          "in test.conf:2" },
        { "llm a {\n    base_url 127.0.0.1:8080;\n    model m;\n}\n"
          RG_TEST_AGENT,
          "llm \"a\": \"base_url\" must start with http:// or https:// "
          "in test.conf:2" },
        { "llm a {\n    base_url http:/h;\n    model m;\n}\n" RG_TEST_AGENT,
          "llm \"a\": \"base_url\" must start with http:// or https:// "
          "in test.conf:2" },
        { "llm a {\n    base_url http://h;\n    model m;\n"
          "    buffer_size 1023;\n}\n" RG_TEST_AGENT,
          "llm \"a\": \"buffer_size\" must be from 1k to 512k "
          "in test.conf:4" },
        { "llm a {\n    base_url http://h;\n    model m;\n"
          "    buffer_size 513k;\n}\n" RG_TEST_AGENT,
          "llm \"a\": \"buffer_size\" must be from 1k to 512k "
          "in test.conf:4" },
        { "llm a {\n    base_url http://h;\n    model m;\n"
          "    api_key_env " RG_TEST_UNSET_VAR ";\n}\n" RG_TEST_AGENT,
          "llm \"a\": the environment variable \"" RG_TEST_UNSET_VAR "\" "
          "named by \"api_key_env\" is not set in test.conf:4" },
        { "llm a {\n    base_url http://h;\n    model m;\n"
          "    api_key_env " RG_TEST_EMPTY_VAR ";\n}\n" RG_TEST_AGENT,
          "llm \"a\": the environment variable \"" RG_TEST_EMPTY_VAR "\" "
          "named by \"api_key_env\" is not set in test.conf:4" },
        { "llm a {\n    base_url http://h;\n    model m;\n"
          "    api_key_env RG_TEST_CONF_CTL;\n}\n" RG_TEST_AGENT,
          "llm \"a\": the environment variable \"RG_TEST_CONF_CTL\" "
          "named by \"api_key_env\" holds a control character "
          "in test.conf:4" },
        { RG_TEST_LLM "agent x {\n    llm zz;\n}\n",
          "agent \"x\" names an unknown llm \"zz\" in test.conf:3" },
        { RG_TEST_LLM "llm b { base_url http://h; model m; }\n"
          "agent x { llm b; }\nagent y { }\n",
          "agent \"y\" has no \"llm\" (there are 2 llm blocks to choose from) "
          "in test.conf:4" },
        { "agent x { }\n",
          "agent \"x\" has no \"llm\" (there are 0 llm blocks to choose from) "
          "in test.conf:1" },
        { RG_TEST_LLM "agent x {\n    tools nope;\n}\n",
          "agent \"x\" names an unknown tool \"nope\" (loaded tools: none) "
          "in test.conf:3" },
        { RG_TEST_LLM, "no \"agent\" block: at least one agent is needed "
                       "in test.conf" },
        { "", "no \"agent\" block: at least one agent is needed "
              "in test.conf" },
        { "include a b;\n", "invalid number of arguments in \"include\" "
                            "directive, expecting one file name or mask "
                            "in test.conf:1" },
        { "include a {\n}\n", "directive \"include\" is not terminated by "
                              "\";\" in test.conf:1" },
    };

    unsetenv(RG_TEST_UNSET_VAR);
    setenv(RG_TEST_EMPTY_VAR, "", 1);
    setenv("RG_TEST_CONF_CTL", "sk-1\r\nX-Injected: 1", 1);

    failed = 0;

    for (i = 0; i < rg_nelems(cases); i++) {
        failed += rg_test_conf_mismatch(cases[i].text, cases[i].error);
    }

    assert_int_equal(failed, 0);
}


/* Directives of another context are known directives in the wrong place,
 * as in nginx ("proxy_pass" in the main context): the error must say so,
 * not call them unknown. */
static void
rg_test_cycle_not_allowed_here(void **state)
{
    rg_uint_t  i, failed;

    static const rg_test_case_t  cases[] = {
        { "model m;\n",
          "\"model\" directive is not allowed here; it belongs inside "
          "llm NAME { } in test.conf:1" },
        { RG_TEST_LLM "agent x {\n    base_url http://h;\n}\n",
          "\"base_url\" directive is not allowed here; it belongs inside "
          "llm NAME { } in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    concurrency 2;\n}\n",
          "\"concurrency\" directive is not allowed here; it belongs at the "
          "top level in test.conf:3" },
        { "llm a {\n    max_rounds 2;\n}\n",
          "\"max_rounds\" directive is not allowed here; it belongs inside "
          "agent NAME { } in test.conf:2" },
        { "llm a {\n    agent x { }\n}\n",
          "\"agent\" directive is not allowed here; it belongs at the top "
          "level in test.conf:2" },
        /* each block its own context bit: an mcp block's directive in
         * store redis { } was taken, and wrote into the wrong struct */
        { "store redis {\n    server 127.0.0.1:1;\n    command npx;\n}\n",
          "\"command\" directive is not allowed here; it belongs inside "
          "mcp NAME { } in test.conf:3" },
        { "mcp fs {\n    command npx;\n    server 127.0.0.1:1;\n}\n",
          "\"server\" directive is not allowed here; it belongs inside "
          "store redis { } in test.conf:3" },
    };

    failed = 0;

    for (i = 0; i < rg_nelems(cases); i++) {
        failed += rg_test_conf_mismatch(cases[i].text, cases[i].error);
    }

    assert_int_equal(failed, 0);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_cycle_errors),
        cmocka_unit_test(rg_test_cycle_not_allowed_here),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
