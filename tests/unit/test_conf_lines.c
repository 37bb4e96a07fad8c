/* test_conf_lines.c: the line a configuration error names is the line of
 * the directive it is about (src/core/rg_conf_file.c, rg_conf_error.c),
 * not the line of its block nor of its ";": for what a setter refuses
 * (a directive over several lines), for what a part finds once the whole
 * file was read (an unknown tool, a bad value of a block or of the top
 * level), for what a block's setter says after its "}". A ";" forgotten
 * before a line that starts with a directive is said as such, and a
 * misspelled directive gets a "did you mean". Each case is compared
 * whole, " in test.conf:LINE" included. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_test.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


/* one llm and one agent, on lines 1 and 2 */
#define RG_TEST_LLM    "llm a { base_url http://127.0.0.1:1/v1; model m; }\n"


typedef struct {
    const char         *text;
    const char         *error;
} rg_test_case_t;


/* 0 when text fails with exactly error; 1, saying why, otherwise */
static int
rg_test_mismatch(const rg_test_case_t *c)
{
    char         err[512];
    rg_cycle_t  *cycle;

    err[0] = '\0';
    cycle = rg_test_cycle(err, sizeof(err), "%s", c->text);

    if (cycle == NULL && strcmp(err, c->error) == 0) {
        return 0;
    }

    print_error("configuration\n%s\nexpected: %s\ngot:      %s\n\n", c->text,
                c->error, cycle ? "(accepted)" : err);
    rg_cycle_destroy(cycle);

    return 1;
}


static void
rg_test_cases(const rg_test_case_t *cases, size_t n)
{
    size_t     i;
    rg_uint_t  failed;

    failed = 0;

    for (i = 0; i < n; i++) {
        failed += rg_test_mismatch(&cases[i]);
    }

    assert_int_equal(failed, 0);
}


/* what a part finds once the whole file was read: at the directive (or
 * the word of it) it is about, not at its block */
static void
rg_test_after_the_file(void **state)
{
    static const rg_test_case_t  cases[] = {

        { "llm a {\n"
          "    base_url http://127.0.0.1:1/v1;\n"
          "    model m;\n"
          "    buffer_size 100;\n"
          "}\n"
          "agent x { }\n",
          "llm \"a\": \"buffer_size\" must be from 1k to 512k "
          "in test.conf:4" },

        { "llm a {\n"
          "    base_url 127.0.0.1:1/v1;\n"
          "    model m;\n"
          "}\n"
          "agent x { }\n",
          "llm \"a\": \"base_url\" must start with http:// or https:// "
          "in test.conf:2" },

        { "llm a {\n"
          "    base_url http://127.0.0.1:1/v1;\n"
          "    model m;\n"
          "    fallback zz;\n"
          "}\n"
          "agent x { }\n",
          "llm \"a\": \"fallback\" names an unknown llm \"zz\" "
          "in test.conf:4" },

        /* the word's own line, in a directive over several */
        { RG_TEST_LLM
          "agent x {\n"
          "    tools\n"
          "        nope;\n"
          "}\n",
          "agent \"x\" names an unknown tool \"nope\" (loaded tools: none) "
          "in test.conf:4" },

        { RG_TEST_LLM
          "agent x {\n"
          "    max_rounds 3;\n"
          "    llm zz;\n"
          "}\n",
          "agent \"x\" names an unknown llm \"zz\" in test.conf:4" },

        { RG_TEST_LLM
          "agent x {\n"
          "    tool_timeout 5s;\n"
          "    tool_timeout calc 5s;\n"
          "}\n",
          "agent \"x\": \"tool_timeout\" names \"calc\", which is not in its "
          "\"tools\" in test.conf:4" },

        { RG_TEST_LLM
          "agent x {\n"
          "    agents y\n"
          "           nobody;\n"
          "}\n"
          "agent y { }\n",
          "agent \"x\": \"agents\" names an unknown agent \"nobody\" "
          "in test.conf:4" },

        /* of the top level, which named no line at all */
        { RG_TEST_LLM
          "agent x { }\n"
          "lease_ttl 100ms;\n",
          "\"lease_ttl\" must be at least 300ms: its heartbeat comes every "
          "third in test.conf:3" },

        { "response_memory 1k;\n"
          RG_TEST_LLM
          "agent x { }\n",
          "\"response_memory\" must be 1m or more in test.conf:1" },

        { RG_TEST_LLM
          "agent x { }\n"
          "otlp_flush 1s;\n"
          "otlp_timeout 0;\n",
          "\"otlp_flush\" and \"otlp_timeout\" must be more than 0 "
          "in test.conf:4" },

        { "store redis {\n"
          "    server 127.0.0.1:1;\n"
          "    prefix \"a{b\";\n"
          "}\n"
          RG_TEST_LLM
          "agent x { }\n",
          "\"prefix\" \"a{b\" may not hold \"{\" or \"}\": those mark a "
          "session's hash tag in test.conf:3" },

        { "store redis {\n"
          "    server 127.0.0.1:1;\n"
          "}\n"
          "queue {\n"
          "    block 2s;\n"
          "    claim_idle 500ms;\n"
          "}\n"
          RG_TEST_LLM
          "agent x { }\n",
          "queue: \"claim_idle\" must be at least 1s and longer than "
          "\"block\" in test.conf:6" },

        /* what is missing from a block is said at the block */
        { "llm a {\n"
          "    base_url http://127.0.0.1:1/v1;\n"
          "}\n"
          "agent x { }\n",
          "llm \"a\" has no \"model\" in test.conf:1" },
    };

    rg_test_cases(cases, rg_nelems(cases));
}


/* what a setter refuses, and what a block's setter says after its "}" */
static void
rg_test_while_reading(void **state)
{
    static const rg_test_case_t  cases[] = {

        /* the first line of a directive over several, not its ";" */
        { RG_TEST_LLM
          "agent x {\n"
          "    max_rounds\n"
          "        0;\n"
          "}\n",
          "\"max_rounds\" directive expects a number from 1 to 10000 "
          "in test.conf:3" },

        { "llm a {\n"
          "    base_url http://127.0.0.1:1/v1;\n"
          "    model m;\n"
          "    max_retries 500;\n"
          "}\n",
          "\"max_retries\" directive expects a number from 0 to 100 "
          "in test.conf:4" },

        /* the block's own directive and line, not the last one in it */
        { RG_TEST_LLM
          "agent x { }\n"
          "mcp fs {\n"
          "    start_timeout 5s;\n"
          "}\n",
          "\"mcp\" directive needs either \"command\" (a program over "
          "stdio) or \"url\" (Streamable HTTP), not both in test.conf:3" },
    };

    rg_test_cases(cases, rg_nelems(cases));
}


/* a ";" forgotten: the words of the next line are not taken for the
 * directive's own */
static void
rg_test_missing_semicolon(void **state)
{
    char         err[512];
    rg_cycle_t  *cycle;

    static const rg_test_case_t  cases[] = {

        { RG_TEST_LLM
          "agent x {\n"
          "    tools calc\n"
          "    dedupe global;\n"
          "}\n",
          "missing \";\" after \"tools calc\": line 4 starts with the "
          "directive \"dedupe\" (quote it if it is an argument) "
          "in test.conf:3" },

        { "llm a {\n"
          "    base_url http://127.0.0.1:1/v1;\n"
          "    model m\n"
          "    timeout 5s;\n"
          "}\n",
          "missing \";\" after \"model m\": line 4 starts with the "
          "directive \"timeout\" (quote it if it is an argument) "
          "in test.conf:3" },

        { "worker_processes 2\n"
          "include other.conf;\n",
          "missing \";\" after \"worker_processes 2\": line 2 starts with "
          "the directive \"include\" (quote it if it is an argument) "
          "in test.conf:1" },
    };

    rg_test_cases(cases, rg_nelems(cases));

    /* a word that is no directive, or one quoted, goes on the line */
    cycle = rg_test_cycle(err, sizeof(err), "%s",
                          RG_TEST_LLM
                          "agent x {\n"
                          "    system_prompt You are\n"
                          "        helpful;\n"
                          "    max_rounds 3;\n"
                          "}\n"
                          "agent y {\n"
                          "    system_prompt \"Name the\"\n"
                          "        \"model\";\n"
                          "}\n");
    if (cycle == NULL) {
        print_error("refused: %s\n", err);
    }
    assert_non_null(cycle);
    rg_cycle_destroy(cycle);
}


static void
rg_test_did_you_mean(void **state)
{
    static const rg_test_case_t  cases[] = {

        /* two letters swapped; a directive of the block first */
        { "llm a {\n"
          "    base_url http://127.0.0.1:1/v1;\n"
          "    modle m;\n"
          "}\n",
          "unknown directive \"modle\" (did you mean \"model\"?) "
          "in test.conf:3" },

        { RG_TEST_LLM
          "agent x {\n"
          "    max_roundz 3;\n"
          "}\n",
          "unknown directive \"max_roundz\" (did you mean \"max_rounds\"?) "
          "in test.conf:3" },

        { "concurency 5;\n",
          "unknown directive \"concurency\" (did you mean "
          "\"concurrency\"?) in test.conf:1" },

        /* nothing near */
        { "frobnicate 5;\n",
          "unknown directive \"frobnicate\" in test.conf:1" },
    };

    rg_test_cases(cases, rg_nelems(cases));

    assert_int_equal(rg_conf_distance("model", 5, "model", 5), 0);
    assert_int_equal(rg_conf_distance("modle", 5, "model", 5), 1);
    assert_int_equal(rg_conf_distance("mdel", 4, "model", 5), 1);
    assert_int_equal(rg_conf_distance("agnet", 5, "agent", 5), 1);
    assert_int_equal(rg_conf_distance("tools", 5, "tool", 4), 1);
    assert_int_equal(rg_conf_distance("abc", 3, "xyz", 3), 3);
    assert_int_equal(rg_conf_distance("a", 1, "abcd", 4), 3);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_after_the_file),
        cmocka_unit_test(rg_test_while_reading),
        cmocka_unit_test(rg_test_missing_semicolon),
        cmocka_unit_test(rg_test_did_you_mean),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
