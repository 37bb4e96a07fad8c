/* test_mcp_conf.c: the mcp blocks (src/mcp/rg_mcp_conf.c) and the agents'
 * names and patterns of MCP tools: every mistake refused with its
 * file:line; and a configuration read by `reagent -t` or a master starts
 * no server (an engine does). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>
#include <rg_mcp_tool.h>
#include <rg_tools.h>
#include <rg_test_mcp.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sys/stat.h>


/* the configuration ---------------------------------------------------- */

static void
rg_test_conf_error(const char *conf, const char *expect)
{
    char         err[512];
    rg_cycle_t  *cycle;

    cycle = rg_test_cycle(err, sizeof(err),
                          "llm m { base_url http://127.0.0.1:1/v1; model x; }"
                          "\n%s\n", conf);
    if (cycle) {
        print_error("accepted: %s\n", conf);
        rg_cycle_destroy(cycle);
        fail();
    }

    if (strstr(err, expect) == NULL) {
        print_error("configuration: %s\n  error: \"%s\"\n  expected: \"%s\"\n",
                    conf, err, expect);
        fail();
    }
}


static void
rg_test_conf(void **state)
{
    char         err[512];
    rg_cycle_t  *cycle;

    unsetenv("RG_TEST_MCP_UNSET");

    rg_test_conf_error("mcp fs { } agent a { }",
                       "\"mcp\" directive needs either \"command\" (a program "
                       "over stdio) or \"url\" (Streamable HTTP), not both in "
                       "test.conf:2");
    rg_test_conf_error("mcp fs { command x; url http://h/; } agent a { }",
                       "needs either \"command\"");
    rg_test_conf_error("mcp f__s { command x; } agent a { }",
                       "expects a name without \"__\"");
    rg_test_conf_error("mcp fs_ { command x; } agent a { }",
                       "not ending in \"_\"");
    rg_test_conf_error("mcp f.s { command x; } agent a { }",
                       "expects a name of letters, digits");
    rg_test_conf_error("mcp a234567890123456789012345678901234 { command x; }"
                       " agent a { }", "at most 32 long");
    rg_test_conf_error("mcp fs { command x; } mcp fs { command y; } "
                       "agent a { }", "an mcp server of that name exists");
    rg_test_conf_error("mcp fs { url ftp://h/; } agent a { }",
                       "neither http:// nor https://");
    rg_test_conf_error("mcp fs { url http://h/; env HOME; } agent a { }",
                       "only a \"command\" gets");
    rg_test_conf_error("mcp fs { command x; header A b; } agent a { }",
                       "only a \"url\" gets");
    rg_test_conf_error("mcp fs { url http://h/; header A \"$RG_TEST_MCP_UNSET\";"
                       " } agent a { }", "\"RG_TEST_MCP_UNSET\", which is not "
                       "set");
    rg_test_conf_error("mcp fs { url http://h/; header \"A:B\" x; } agent a { }",
                       "without blanks or \":\"");
    rg_test_conf_error("mcp fs { url http://h/; header Mcp-Session-Id x; } "
                       "agent a { }", "the protocol's own headers");
    rg_test_conf_error("mcp fs { url http://h/; header A \"${RG_TEST_MCP_UNSET\";"
                       " } agent a { }", "without its \"}\"");
    rg_test_conf_error("mcp fs { url http://h/; header A \"a\\nb\"; } "
                       "agent a { }", "control character");
    rg_test_conf_error("mcp fs { command x; secret_env RG_TEST_MCP_UNSET; } "
                       "agent a { }", "\"RG_TEST_MCP_UNSET\", which is not set");
    rg_test_conf_error("mcp fs { command x; env 1X; } agent a { }",
                       "expects the name of an environment variable");
    rg_test_conf_error("mcp fs { command x; env A 1; env A 2; } agent a { }",
                       "names a variable twice");
    rg_test_conf_error("mcp fs { command x; tool_flags w read_only maybe; } "
                       "agent a { }", "expects flags among");
    rg_test_conf_error("mcp fs { command x; tool_flags w none dangerous; } "
                       "agent a { }", "takes \"none\" alone");
    rg_test_conf_error("mcp fs { command x; tool_flags w read_only "
                       "side_effect; } agent a { }", "both read_only and "
                       "side_effect");
    rg_test_conf_error("mcp fs { command x; protocol 2024; } agent a { }",
                       "\"protocol\" directive");
    rg_test_conf_error("mcp fs { command x; max_message 100; } agent a { }",
                       "\"max_message\" must be 1k or more");
    rg_test_conf_error("mcp fs { command x; restart_backoff 5s 1s; } "
                       "agent a { }", "a longest wait no shorter");
    rg_test_conf_error("mcp fs { command x; bogus 1; } agent a { }",
                       "unknown directive \"bogus\"");

    /* agents: a prefix with no mcp block is an unknown tool; a name of
     * an mcp block's must be one a model takes */
    rg_test_conf_error("agent a { tools gh__read; }",
                       "agent \"a\" names an unknown tool \"gh__read\"");
    rg_test_conf_error("mcp fs { command x; } agent a { tools fs__a.b; }",
                       "\"fs__a.b\" is not a tool name a model accepts");
    rg_test_conf_error("mcp fs { command x; } agent a { tools fs__*; "
                       "approve gh__x; }", "\"approve\" names \"gh__x\", "
                       "which is not in its \"tools\"");
    rg_test_conf_error("mcp fs { command x; } agent a { tools fs__read; "
                       "tool_timeout fs__write 1s; }", "\"tool_timeout\" names "
                       "\"fs__write\"");
    rg_test_conf_error("mcp fs { command x; } agent a { tools fs__read "
                       "fs__read; }", "lists tool \"fs__read\" twice");

    /* what is accepted: patterns, names, and per-tool directives on
     * tools a pattern takes */
    cycle = rg_test_cycle(err, sizeof(err),
                          "llm m { base_url http://127.0.0.1:1/v1; model x; }\n"
                          "mcp fs { command /bin/true; tool_timeout 5s; "
                          "tool_flags write_* dangerous; protocol session; }\n"
                          "mcp web { url https://example.com/mcp; header "
                          "Authorization \"Bearer ${" RG_TEST_KEY_ENV "}\"; }\n"
                          "agent a { tools fs__* web__search; approve "
                          "fs__write_file; tool_timeout fs__read_file 2s; "
                          "tool_max_calls web__search 3; }\n");
    if (cycle == NULL) {
        print_error("%s\n", err);
    }
    assert_non_null(cycle);
    rg_cycle_destroy(cycle);
}


/* `reagent -t` and a master read the configuration: nothing starts then */
static void
rg_test_no_start(void **state)
{
    char             err[512], path[PATH_MAX];
    rg_cycle_t      *cycle;
    rg_engine_t     *e;
    struct stat      st;
    rg_test_ctx_t   *t;

    t = *state;

    snprintf(path, sizeof(path), "%s/started-%d", rg_test_tmpdir(),
             (int) getpid());
    unlink(path);

    cycle = rg_test_cycle(err, sizeof(err),
                          "llm m { base_url http://127.0.0.1:1/v1; model x; }\n"
                          "mcp x { command /bin/sh -c \"touch %s; exit 1\"; "
                          "start_timeout 2s; }\n"
                          "agent a { tools x__*; }\n", path);
    assert_non_null(cycle);
    assert_int_equal(stat(path, &st), -1);

    /* an engine starts it (it exits: the engine starts anyway) */
    e = rg_engine_create(cycle, cycle->log);
    assert_non_null(e);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(rg_mcp_ctx(e)->servers[0].state, RG_MCP_DOWN);
    /* its exit seen, or (on a loaded machine) the first write to it
     * finding it gone */
    if (strstr(rg_mcp_ctx(e)->servers[0].why, "it closed its input")
        == NULL)
    {
        rg_test_contains(rg_mcp_ctx(e)->servers[0].why, "exit status 1");
    }

    rg_engine_destroy(e);
    rg_cycle_destroy(cycle);
    unlink(path);

    RG_UNUSED(t);
}


int
main(int argc, char **argv)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_conf),
        rg_test_mcp_case(rg_test_no_start),
    };

    return rg_test_mcp_run(argc, argv, tests);
}
