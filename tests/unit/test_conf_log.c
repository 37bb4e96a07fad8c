/* test_conf_log.c: error_log through the cycle (src/core/rg_cycle.c,
 * rg_log.c): each level, the default one, a file opened while parsing and
 * closed with the cycle (the last error_log wins, the one before is
 * closed at once), no descriptor leaked by a cycle that fails; and the
 * log a cycle is handed (the caller's, or on a reload the running
 * cycle's), whose descriptor a cycle never closes. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_test.h>
#include <rg_test_conf.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>


/* one llm on line 1, one agent on the next line */
#define RG_TEST_LLM    "llm a { base_url http://127.0.0.1:1/v1; model m; }\n"
#define RG_TEST_AGENT  "agent x { }\n"


static void
rg_test_cycle_error_log(void **state)
{
    int          fd, before;
    char         err[512], path[256], text[512];
    rg_uint_t    i;
    rg_cycle_t  *cycle;

    static const struct {
        const char  *name;
        rg_uint_t    level;
    } levels[] = {
        { "emerg", RG_LOG_EMERG }, { "alert", RG_LOG_ALERT },
        { "crit", RG_LOG_CRIT }, { "error", RG_LOG_ERR },
        { "warn", RG_LOG_WARN }, { "notice", RG_LOG_NOTICE },
        { "info", RG_LOG_INFO }, { "debug", RG_LOG_DEBUG }
    };

    for (i = 0; i < rg_nelems(levels); i++) {
        snprintf(text, sizeof(text), "error_log stderr %s;\n" RG_TEST_LLM
                 RG_TEST_AGENT, levels[i].name);
        cycle = rg_test_conf_ok(text);
        assert_int_equal(cycle->log->fd, STDERR_FILENO);
        assert_int_equal(cycle->log->log_level, levels[i].level);
        rg_cycle_destroy(cycle);
    }

    /* without a level: notice */
    cycle = rg_test_conf_ok("error_log stderr;\n" RG_TEST_LLM RG_TEST_AGENT);
    assert_int_equal(cycle->log->log_level, RG_LOG_NOTICE);
    rg_cycle_destroy(cycle);

    /* a file: opened while parsing, closed with the cycle; the last
     * error_log wins and the one before is closed at once */
    snprintf(path, sizeof(path), "%s/error.log", rg_test_tmpdir());
    unlink(path);

    before = open("/dev/null", O_RDONLY);
    assert_true(before >= 0);
    close(before);

    cycle = rg_test_cycle(err, sizeof(err),
                          "error_log %s debug;\n"
                          "error_log %s warn;\n" RG_TEST_LLM RG_TEST_AGENT,
                          path, path);
    assert_non_null(cycle);
    assert_int_equal(access(path, F_OK), 0);
    fd = cycle->log->fd;
    assert_int_not_equal(fd, STDERR_FILENO);
    assert_int_equal(cycle->log->log_level, RG_LOG_WARN);
    assert_int_equal(fcntl(before, F_GETFD), -1);  /* the first one */
    assert_true(fcntl(fd, F_GETFD) != -1);

    rg_log_error(RG_LOG_WARN, cycle->log, 0, "a line for the file");
    rg_cycle_destroy(cycle);

    assert_int_equal(fcntl(fd, F_GETFD), -1);
    assert_int_equal(errno, EBADF);

    /* a cycle that fails after error_log leaks no descriptor */
    rg_test_conf_error("error_log /dev/null;\nbogus;",
                       "unknown directive \"bogus\" in test.conf:2");
    rg_test_conf_error("error_log /dev/null;\nllm a { model m; }\n"
                       RG_TEST_AGENT,
                       "llm \"a\" has no \"base_url\" in test.conf:2");

    fd = open("/dev/null", O_RDONLY);
    assert_int_equal(fd, before);
    close(fd);

    text[0] = '\0';
    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_true(read(fd, text, sizeof(text) - 1) > 0);
    close(fd);
    assert_non_null(strstr(text, "[warn] "));
    assert_non_null(strstr(text, "a line for the file\n"));

    unlink(path);
}


/* A cycle is handed the log to report its errors to (the caller's, or on a
 * reload the running cycle's). That log's descriptor belongs to the
 * caller: building, failing or destroying a cycle must leave it open. Only
 * a file the cycle's own error_log opened is the cycle's to close. */
static void
rg_test_cycle_caller_log(void **state)
{
    int          fd;
    char         err[512], path[256];
    rg_uint_t    i;
    rg_log_t     log;
    rg_cycle_t  *cycle;

    static const char  *texts[] = {
        /* a good configuration, destroyed */
        RG_TEST_LLM RG_TEST_AGENT,
        /* one that fails while parsing, and one that fails after */
        RG_TEST_LLM RG_TEST_AGENT "bogus;\n",
        RG_TEST_LLM "agent x { llm b; }\n",
        /* one with its own error_log */
        "error_log stderr;\n" RG_TEST_LLM RG_TEST_AGENT,
        "error_log /dev/null info;\n" RG_TEST_LLM RG_TEST_AGENT,
        "error_log /dev/null;\n" RG_TEST_LLM RG_TEST_AGENT "bogus;\n",
    };

    snprintf(path, sizeof(path), "%s/caller.log", rg_test_tmpdir());
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);

    log = *rg_log_stderr();
    log.fd = fd;
    log.log_level = RG_LOG_CRIT;

    for (i = 0; i < rg_nelems(texts); i++) {
        cycle = rg_cycle_create("test.conf", texts[i], &log, err,
                                sizeof(err));
        rg_cycle_destroy(cycle);

        if (fcntl(fd, F_GETFD) == -1) {
            print_error("the caller's log descriptor was closed by the "
                        "cycle of:\n%s\n", texts[i]);
            fail();
        }
    }

    close(fd);
    unlink(path);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_cycle_error_log),
        cmocka_unit_test(rg_test_cycle_caller_log),
    };

    return cmocka_run_group_tests(tests, NULL, rg_test_tmpdir_cleanup);
}
