/* test_module_agent.c: the bundled module agent (modules/agent.c):
 * run_agent, through the fake host of tests/lib/rg_test_host.c, whose
 * agent_run() records the agent and input it was asked for and whose
 * callback the test calls by hand: its ABI fields and directives (also
 * through a host from before parse_size()), the host's refusal passed on
 * as it is, the child's answer, any other end (failed, with the reason on
 * one line), cancellation, and bad arguments that never reach the
 * host. */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rg_tool_module.h>
#include <rg_test_host.h>


static void
rg_test_agent_module(void **state)
{
    void                    *conf;
    rg_tool_host_t           old;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_mod_agent.module;

    rg_test_module_valid(m, "agent", 1);
    assert_int_equal(rg_test_tool(m, "run_agent")->flags, 0);
    assert_non_null(rg_test_tool(m, "run_agent")->cancel);

    conf = m->create_conf(&rg_test_host);
    m->exit(&rg_test_host, conf);

    conf = m->create_conf(&rg_test_host);
    assert_string_equal(rg_test_set(m, conf, "max_input", "0", NULL),
                        "must be a size from 1 to 16m, such as 16384 or 16k");
    assert_string_equal(rg_test_set(m, conf, "max_input", "17m", NULL),
                        "must be a size from 1 to 16m, such as 16384 or 16k");
    assert_string_equal(rg_test_set(m, conf, "max_input", "k", NULL),
                        "must be a size from 1 to 16m, such as 16384 or 16k");
    assert_string_equal(rg_test_set(m, conf, "max_input", "1g", NULL),
                        "must be a size from 1 to 16m, such as 16384 or 16k");
    assert_null(rg_test_set(m, conf, "max_input", "16k", NULL));
    assert_string_equal(rg_test_set(m, conf, "max_input", "1k", NULL),
                        "is duplicate");
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);
    m->exit(&rg_test_host, conf);

    old = rg_test_host;
    old.size = offsetof(rg_tool_host_t, agent_run);

    conf = m->create_conf(&old);
    assert_int_equal(m->init(&old, conf), RG_TOOL_ERROR);
    assert_string_equal(rg_test_log_text, "agent: this reagent has no "
                        "agent_run() for modules; upgrade reagent");
    m->exit(&old, conf);

    /* a host with agent_run() but from before parse_size() */

    old = rg_test_host;
    old.size = offsetof(rg_tool_host_t, parse_size);

    conf = m->create_conf(&old);
    assert_string_equal(rg_test_set_with(&old, m, conf, "max_input", "16k",
                                         NULL),
                        "needs a newer reagent (no parse_size in the host "
                        "table)");
    assert_int_equal(m->init(&old, conf), RG_TOOL_OK);
    m->exit(&old, conf);
}


static void
rg_test_agent_run(void **state)
{
    void                    *conf;
    rg_test_call_t           tc;
    const rg_tool_t         *run;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_mod_agent.module;
    run = rg_test_tool(m, "run_agent");

    conf = m->create_conf(&rg_test_host);
    assert_null(rg_test_set(m, conf, "max_input", "20", NULL));
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);

    /* the host refuses: its reason, as it is */

    rg_test_async.refuse = 1;
    rg_test_async.error = "unknown agent \"nope\"; the agents are: helper";

    rg_test_err(run, conf, "{\"agent\":\"nope\",\"input\":\"x\"}",
                "unknown agent \"nope\"; the agents are: helper");
    assert_string_equal(rg_test_async.agent, "nope");

    rg_test_async.error = NULL;
    rg_test_err(run, conf, "{\"agent\":\"nope\",\"input\":\"x\"}",
                "cannot run agent \"nope\"");

    rg_test_async.refuse = 0;

    /* done */

    assert_int_equal(rg_test_call_run(&tc, run, conf,
                                      "{\"agent\":\"helper\",\"input\":"
                                      "\"sum 2+2\"}"),
                     RG_TOOL_AGAIN);
    assert_int_equal(tc.answers, 0);
    assert_string_equal(rg_test_async.agent, "helper");
    assert_string_equal(rg_test_async.input, "sum 2+2");
    assert_int_equal(rg_test_async.input_len, 7);

    rg_test_async.agent_cb(&tc.call, "done", "4, as asked", 1, NULL);

    assert_int_equal(tc.answers, 1);
    assert_false(tc.failed);
    assert_string_equal(tc.result, "4");
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, run, conf,
                                      "{\"agent\":\"helper\",\"input\":"
                                      "\"x\"}"),
                     RG_TOOL_AGAIN);
    rg_test_async.agent_cb(&tc.call, "done", "", 0, NULL);
    assert_false(tc.failed);
    assert_string_equal(tc.result, "(the agent gave an empty answer)");
    rg_test_call_free(&tc);

    /* any other end fails, with the reason on one line */

    assert_int_equal(rg_test_call_run(&tc, run, conf,
                                      "{\"agent\":\"helper\",\"input\":"
                                      "\"x\"}"),
                     RG_TOOL_AGAIN);
    rg_test_async.agent_cb(&tc.call, "max_rounds", "ran out\nof rounds", 17,
                           NULL);
    assert_int_equal(tc.answers, 1);
    assert_true(tc.failed);
    assert_string_equal(tc.result, "agent \"helper\" ended with max_rounds: "
                        "ran out of rounds");
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, run, conf,
                                      "{\"agent\":\"helper\",\"input\":"
                                      "\"x\"}"),
                     RG_TOOL_AGAIN);
    rg_test_async.agent_cb(&tc.call, "failed", NULL, 0, NULL);
    assert_true(tc.failed);
    assert_string_equal(tc.result, "agent \"helper\" ended with failed: no "
                        "answer");
    rg_test_call_free(&tc);

    /* cancelled */

    rg_test_async.cancelled = 0;
    assert_int_equal(rg_test_call_run(&tc, run, conf,
                                      "{\"agent\":\"helper\",\"input\":"
                                      "\"x\"}"),
                     RG_TOOL_AGAIN);
    run->cancel(&tc.call);
    assert_int_equal(rg_test_async.cancelled, 1);
    assert_int_equal(tc.answers, 0);
    rg_test_call_free(&tc);

    /* bad arguments never reach the host */

    rg_test_async.calls = 0;

    rg_test_err(run, conf, "{\"input\":\"x\"}",
                "missing argument 'agent' (the name of a configured agent, "
                "such as \"helper\")");
    rg_test_err(run, conf, "{\"agent\":\"helper\"}",
                "missing argument 'input' (the subtask for the agent, as "
                "text)");
    rg_test_err(run, conf, "{\"agent\":\"helper\",\"input\":\"\"}",
                "missing argument 'input' (the subtask for the agent, as "
                "text)");
    rg_test_err(run, conf, "{\"agent\":\"helper\",\"input\":"
                           "\"123456789012345678901\"}",
                "argument 'input' is 21 bytes, more than the 20 allowed; "
                "shorten the subtask");
    rg_test_err(run, conf, "{\"agent\":\"help\\u0000er\",\"input\":\"x\"}",
                "agent \"help er\" is not a valid name; use the name of a "
                "configured agent, such as \"helper\"");
    rg_test_err(run, conf, "{\"agent\":\"helper\",\"input\":\"a\\u0000\"}",
                "argument 'input' contains a NUL byte; send plain text");

    assert_int_equal(rg_test_async.calls, 0);

    m->exit(&rg_test_host, conf);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup(rg_test_agent_module, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_agent_run, rg_test_host_reset),
    };

    return rg_test_host_run(tests) != 0;
}
