/* test_conf_llm.c: the directives of an llm block that a wire format
 * brings (src/llm/rg_llm_conf.c: format, max_output_tokens, thinking,
 * reasoning_effort, prompt_cache, price, header) and the budgets of money
 * (max_cost, tenant_max_cost in src/agent/rg_agent_conf.c): what each
 * makes of the block, and each mistake refused with its file:line. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_llm.h>
#include <rg_llm_conf.h>
#include <rg_agent_conf.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <rg_test.h>

#include <math.h>


#define RG_TEST_KEY_VAR  "RG_TEST_LLM_KEY"
#define RG_TEST_SECRET   "sk-ant-test-0123456789abcdef"


static rg_cycle_t *
rg_test_ok_at(const char *text, const char *file, int line)
{
    char         err[512];
    rg_cycle_t  *cycle;

    cycle = rg_test_cycle(err, sizeof(err), "%s", text);

    if (cycle == NULL) {
        print_error("configuration\n%s\nfailed: %s\n", text, err);
        _fail(file, line);
    }

    return cycle;
}


static void
rg_test_error_at(const char *text, const char *expect, const char *file,
    int line)
{
    char         err[512];
    rg_cycle_t  *cycle;

    cycle = rg_test_cycle(err, sizeof(err), "%s", text);

    if (cycle == NULL && strcmp(err, expect) == 0) {
        return;
    }

    print_error("configuration\n%s\nexpected error: %s\ngot: %s\n\n", text,
                expect, cycle ? "(accepted)" : err);
    rg_cycle_destroy(cycle);
    _fail(file, line);
}


#define rg_test_ok(text)  rg_test_ok_at(text, __FILE__, __LINE__)
#define rg_test_error(text, expect)                                          \
    rg_test_error_at(text, expect, __FILE__, __LINE__)


static rg_llm_conf_t *
rg_test_llm(rg_cycle_t *cycle, rg_uint_t i)
{
    return ((rg_llm_conf_t **) rg_llm_main_conf(cycle)->llms.elts)[i];
}


/* each format: its path, its key's header, its defaults */
static void
rg_test_formats(void **state)
{
    rg_cycle_t     *cycle;
    rg_llm_conf_t  *llm;

    RG_UNUSED(state);

    setenv(RG_TEST_KEY_VAR, RG_TEST_SECRET, 1);

    cycle = rg_test_ok("llm c { base_url http://127.0.0.1:1/v1/; model m;\n"
                       "    api_key_env " RG_TEST_KEY_VAR "; }\n"
                       "llm a { base_url http://127.0.0.1:1/v1; model m;\n"
                       "    format anthropic; api_key_env " RG_TEST_KEY_VAR
                       ";\n    thinking 2048; }\n"
                       "llm r { base_url http://127.0.0.1:1/v1; model m;\n"
                       "    format responses; reasoning_effort high;\n"
                       "    max_output_tokens 4000; prompt_cache off;\n"
                       "    header OpenAI-Beta x; }\n"
                       "agent x { llm c; }\n");

    llm = rg_test_llm(cycle, 0);
    assert_int_equal(llm->format, RG_LLM_CHAT);
    assert_string_equal(llm->url, "http://127.0.0.1:1/v1/chat/completions");
    assert_string_equal(llm->auth, "Authorization: Bearer " RG_TEST_SECRET);
    assert_int_equal(llm->max_output_tokens, 0);
    assert_int_equal(llm->prompt_cache, 1);
    assert_false(llm->priced);

    llm = rg_test_llm(cycle, 1);
    assert_int_equal(llm->format, RG_LLM_ANTHROPIC);
    assert_ptr_equal(llm->codec, &rg_llm_codecs[RG_LLM_ANTHROPIC]);
    assert_string_equal(llm->url, "http://127.0.0.1:1/v1/messages");
    assert_string_equal(llm->auth, "x-api-key: " RG_TEST_SECRET);
    assert_int_equal(llm->thinking, 2048);
    /* room for the answer beside the thinking budget */
    assert_int_equal(llm->max_output_tokens, 8192 + 2048);

    llm = rg_test_llm(cycle, 2);
    assert_string_equal(llm->url, "http://127.0.0.1:1/v1/responses");
    assert_string_equal(llm->reasoning_effort.data, "high");
    assert_int_equal(llm->max_output_tokens, 4000);
    assert_int_equal(llm->prompt_cache, 0);
    assert_int_equal(llm->headers->nelts, 1);
    assert_string_equal(((char **) llm->headers->elts)[0], "OpenAI-Beta: x");

    rg_cycle_destroy(cycle);
}


static void
rg_test_price(void **state)
{
    rg_cycle_t       *cycle;
    rg_llm_conf_t    *llm;
    rg_agent_conf_t  *agent;

    RG_UNUSED(state);

    cycle = rg_test_ok("llm a { base_url http://127.0.0.1:1/v1; model m;\n"
                       "    price input=3 output=15 cache_write=3.75; }\n"
                       "agent x { max_cost 0.5; }\n"
                       "tenant_max_cost 25 per 1d;\n");

    llm = rg_test_llm(cycle, 0);
    assert_true(llm->priced);
    assert_true(llm->price[RG_LLM_PRICE_INPUT] == 3);
    assert_true(llm->price[RG_LLM_PRICE_OUTPUT] == 15);
    assert_true(llm->price[RG_LLM_PRICE_WRITE] == 3.75);
    /* no word of cached input: it costs what input costs */
    assert_true(llm->price[RG_LLM_PRICE_CACHED] == 3);

    agent = ((rg_agent_conf_t **) rg_agent_main_conf(cycle)->agents.elts)[0];
    assert_true(agent->max_cost == 0.5);
    assert_true(rg_agent_main_conf(cycle)->tenant_max_cost == 25);
    assert_int_equal(rg_agent_main_conf(cycle)->tenant_cost_window,
                     86400000);

    rg_cycle_destroy(cycle);
}


static void
rg_test_errors(void **state)
{
    RG_UNUSED(state);

    rg_test_error("llm a {\n    format gemini;\n}\n",
                  "\"format\" directive has an unknown format \"gemini\": "
                  "the formats are chat, anthropic, responses in "
                  "test.conf:2");
    rg_test_error("llm a {\n    format chat;\n    format responses;\n}\n",
                  "\"format\" directive is duplicate in test.conf:3");
    rg_test_error("llm a {\n    thinking 512;\n}\n",
                  "\"thinking\" directive takes \"off\" or a budget of tokens "
                  "for thinking, 1024 or more in test.conf:2");
    rg_test_error("llm a { base_url http://127.0.0.1:1/v1; model m;\n"
                  "    thinking 2048; }\n",
                  "llm \"a\": \"thinking\" is a budget of format anthropic; "
                  "format chat takes \"reasoning_effort\" in test.conf:2");
    rg_test_error("llm a { base_url http://127.0.0.1:1/v1; model m;\n"
                  "    format anthropic; reasoning_effort low; }\n",
                  "llm \"a\": \"reasoning_effort\" is not of format "
                  "anthropic, which takes \"thinking BUDGET\" in "
                  "test.conf:2");
    rg_test_error("llm a { base_url http://127.0.0.1:1/v1; model m;\n"
                  "    reasoning_effort extreme; }\n",
                  "llm \"a\": \"reasoning_effort\" is none, minimal, low, "
                  "medium or high, not \"extreme\" in test.conf:2");
    rg_test_error("llm a { base_url http://127.0.0.1:1/v1; model m;\n"
                  "    format anthropic; thinking 4096;\n"
                  "    max_output_tokens 4096; }\n",
                  "llm \"a\": \"max_output_tokens\" 4096 must be more than "
                  "the \"thinking\" budget 4096, which it includes in "
                  "test.conf:3");
    rg_test_error("llm a {\n    max_output_tokens 0;\n}\n",
                  "\"max_output_tokens\" directive expects a number from 1 "
                  "to 10000000 in test.conf:2");
    rg_test_error("llm a {\n    price input=3;\n}\n",
                  "\"price\" directive needs input=N and output=N (dollars "
                  "per million tokens) in test.conf:2");
    rg_test_error("llm a {\n    price input=3 output=x;\n}\n",
                  "\"price\" directive takes prices in dollars per million "
                  "tokens, such as input=2.5 in test.conf:2");
    rg_test_error("llm a {\n    price input=3 outptu=4;\n}\n",
                  "\"price\" directive takes input=N output=N and, "
                  "optionally, cached=N and cache_write=N: dollars per "
                  "million tokens in test.conf:2");
    rg_test_error("llm a {\n    price input=3 input=4 output=1;\n}\n",
                  "\"price\" directive names a price twice in test.conf:2");
    rg_test_error("llm a {\n    header Authorization secret;\n}\n",
                  "\"header\" directive cannot set the key's header: name "
                  "the key's variable with \"api_key_env\" in test.conf:2");
    rg_test_error("llm a {\n    header \"a b\" c;\n}\n",
                  "\"header\" directive takes a header name of letters, "
                  "digits and '-', then its value in test.conf:2");
    rg_test_error("llm a { base_url http://127.0.0.1:1/v1; model m; }\n"
                  "agent x { max_cost 1; }\n",
                  "agent \"x\": \"max_cost\" needs a \"price\" in llm \"a\", "
                  "which has none in test.conf:2");
    rg_test_error("tenant_max_cost 25 each 1d;\n",
                  "\"tenant_max_cost\" directive expects dollars, \"per\" "
                  "and a window of at least 1s, such as \"tenant_max_cost "
                  "25 per 1d;\" in test.conf:1");
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_formats),
        cmocka_unit_test(rg_test_price),
        cmocka_unit_test(rg_test_errors)
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
