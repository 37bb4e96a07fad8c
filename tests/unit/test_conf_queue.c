/* test_conf_queue.c: queue { } (src/queue/rg_queue_conf.c) through the
 * cycle: its defaults with and without the block, every directive at the
 * edges of what it takes, and each mistake refused, at the block's line
 * (the rules between directives) or at the directive's (its own
 * bounds). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_queue_conf.h>
#include <rg_test.h>
#include <rg_test_conf.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


/* one llm on line 1, one agent on the next line */
#define RG_TEST_LLM    "llm a { base_url http://127.0.0.1:1/v1; model m; }\n"
#define RG_TEST_AGENT  "agent x { }\n"


/* queue { }: its defaults, each directive, and what it refuses, each
 * error at the block's line (the rules between directives) or at the
 * directive's (its own bounds) */
static void
rg_test_cycle_queue(void **state)
{
    rg_uint_t         i, failed;
    rg_cycle_t       *cycle;
    rg_queue_conf_t  *qcf;

/* an llm, an agent (lines 1 and 2), the store (line 3) */
#define RG_TEST_REDIS  RG_TEST_LLM RG_TEST_AGENT                              \
                       "store redis { server 127.0.0.1:1; }\n"

    static const struct {
        const char  *text;
        const char  *error;
    } cases[] = {
        { RG_TEST_REDIS "queue {\n    claim_idle 2s;\n    block 2s;\n}\n",
          "queue: \"claim_idle\" must be at least 1s and longer than "
          "\"block\" in test.conf:5" },
        { RG_TEST_REDIS "queue {\n    claim_idle 1s;\n}\n",
          "queue: \"claim_idle\" must be at least 1s and longer than "
          "\"block\" in test.conf:5" },
        { RG_TEST_REDIS "lease_ttl 300ms;\n"
          "queue { claim_idle 999ms; block 10ms; }\n",
          "queue: \"claim_idle\" must be at least 1s and longer than "
          "\"block\" in test.conf:5" },
        { RG_TEST_REDIS "queue { block 9ms; }\n",
          "queue: \"claim_idle\" must be at least 1s and longer than "
          "\"block\" in test.conf:4" },
        { RG_TEST_REDIS "queue { claim_idle 15s; }\n",
          "queue: \"claim_idle\" (15s) must be longer than \"lease_ttl\" "
          "(15s): a task is taken over only once its worker's lease on it "
          "has expired in test.conf:4" },
        { RG_TEST_LLM RG_TEST_AGENT "queue { }\n",
          "\"queue { }\" needs \"store redis { }\": the queue is a Redis "
          "Stream in test.conf:3" },
        { RG_TEST_REDIS "queue { stream a:b; }\n",
          "queue: \"stream\" and \"group\" must be names of 1 to 64 "
          "letters, digits and ._- in test.conf:4" },
        { RG_TEST_REDIS "queue { group \"\"; }\n",
          "queue: \"stream\" and \"group\" must be names of 1 to 64 "
          "letters, digits and ._- in test.conf:4" },
        { RG_TEST_REDIS "queue {\n    shards 0;\n}\n",
          "\"shards\" directive expects a number from 1 to 1024 "
          "in test.conf:5" },
        { RG_TEST_REDIS "queue {\n    shards 1025;\n}\n",
          "\"shards\" directive expects a number from 1 to 1024 "
          "in test.conf:5" },
        { RG_TEST_REDIS "queue {\n    max_deliveries 0;\n}\n",
          "\"max_deliveries\" directive expects a number from 1 to 1000 "
          "in test.conf:5" },
        { RG_TEST_REDIS "queue {\n    results_max 99;\n}\n",
          "\"results_max\" directive expects a number from 100 to "
          "100000000 in test.conf:5" },
        { RG_TEST_REDIS "queue {\n    claim_idle soon;\n}\n",
          "\"claim_idle\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:5" },
        { RG_TEST_REDIS "queue { }\nqueue { }\n",
          "\"queue\" directive is duplicate in test.conf:5" },
        { RG_TEST_REDIS "queue { shards 2; shards 3; }\n",
          "\"shards\" directive is duplicate in test.conf:4" },
        { RG_TEST_REDIS "shards 2;\n",
          "\"shards\" directive is not allowed here in test.conf:4" },
    };

    /* no block: no queue, and the defaults (what submit would use) */
    cycle = rg_test_conf_ok(RG_TEST_LLM RG_TEST_AGENT);
    qcf = rg_queue_conf(cycle);
    assert_int_equal(qcf->declared, 0);
    rg_test_str(&qcf->stream, "tasks");
    rg_test_str(&qcf->group, "workers");
    assert_int_equal(qcf->shards, 1);
    assert_int_equal(qcf->claim_idle, 30000);
    assert_int_equal(qcf->max_deliveries, 5);
    assert_int_equal(qcf->block, 2000);
    assert_int_equal(qcf->results_max, 100000);
    rg_cycle_destroy(cycle);

    /* an empty block: a queue with the same defaults */
    cycle = rg_test_conf_ok(RG_TEST_REDIS "queue { }\n");
    qcf = rg_queue_conf(cycle);
    assert_int_equal(qcf->declared, 1);
    assert_int_equal(qcf->line, 4);
    rg_test_str(&qcf->stream, "tasks");
    rg_test_str(&qcf->group, "workers");
    assert_int_equal(qcf->shards, 1);
    assert_int_equal(qcf->claim_idle, 30000);
    assert_int_equal(qcf->max_deliveries, 5);
    assert_int_equal(qcf->block, 2000);
    assert_int_equal(qcf->results_max, 100000);
    rg_cycle_destroy(cycle);

    /* every directive, at the edges of what is taken */
    cycle = rg_test_conf_ok(RG_TEST_REDIS
                            "lease_ttl 300ms;\n"
                            "queue {\n"
                            "    stream jobs.v-2_x;\n"
                            "    group fleet;\n"
                            "    shards 1024;\n"
                            "    claim_idle 1s;\n"
                            "    max_deliveries 1000;\n"
                            "    block 999ms;\n"
                            "    results_max 100;\n"
                            "}\n");
    qcf = rg_queue_conf(cycle);
    assert_int_equal(qcf->declared, 1);
    rg_test_str(&qcf->stream, "jobs.v-2_x");
    rg_test_str(&qcf->group, "fleet");
    assert_int_equal(qcf->shards, 1024);
    assert_int_equal(qcf->claim_idle, 1000);
    assert_int_equal(qcf->max_deliveries, 1000);
    assert_int_equal(qcf->block, 999);
    assert_int_equal(qcf->results_max, 100);
    rg_cycle_destroy(cycle);

    failed = 0;

    for (i = 0; i < rg_nelems(cases); i++) {
        failed += rg_test_conf_mismatch(cases[i].text, cases[i].error);
    }

    assert_int_equal(failed, 0);

#undef RG_TEST_REDIS
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_cycle_queue),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
