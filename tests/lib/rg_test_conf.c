/* rg_test_conf.c: helpers of the configuration tests (see rg_test_conf.h). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_llm_conf.h>
#include <rg_agent_conf.h>
#include <rg_test.h>
#include <rg_test_conf.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <ftw.h>


/* the cycle's directives, through rg_test_cycle() ("test.conf") */

rg_cycle_t *
rg_test_conf_ok_at(const char *text, const char *file, int line)
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


int
rg_test_conf_mismatch(const char *text, const char *expect)
{
    char         err[512];
    rg_cycle_t  *cycle;

    cycle = rg_test_cycle(err, sizeof(err), "%s", text);

    if (cycle == NULL && strcmp(err, expect) == 0) {
        return 0;
    }

    print_error("configuration\n%s\nexpected error: %s\ngot: %s\n\n", text,
                expect, cycle ? "(accepted)" : err);
    rg_cycle_destroy(cycle);

    return 1;
}


void
rg_test_conf_error_at(const char *text, const char *expect, const char *file,
    int line)
{
    if (rg_test_conf_mismatch(text, expect)) {
        _fail(file, line);
    }
}


rg_llm_conf_t *
rg_test_llm(rg_cycle_t *cycle, rg_uint_t i)
{
    assert_true(i < rg_llm_main_conf(cycle)->llms.nelts);

    return ((rg_llm_conf_t **) rg_llm_main_conf(cycle)->llms.elts)[i];
}


rg_agent_conf_t *
rg_test_agent(rg_cycle_t *cycle, rg_uint_t i)
{
    assert_true(i < rg_agent_main_conf(cycle)->agents.nelts);

    return ((rg_agent_conf_t **) rg_agent_main_conf(cycle)->agents.elts)[i];
}


/* cycles read from files: includes, -c */

rg_log_t  rg_test_file_log;


rg_cycle_t *
rg_test_file_cycle(const char *path, char *err, size_t len)
{
    rg_test_file_log = *rg_log_stderr();
    rg_test_file_log.log_level = getenv("RG_TEST_LOG") ? RG_LOG_DEBUG
                                                       : RG_LOG_CRIT;
    err[0] = '\0';

    return rg_cycle_create(path, NULL, &rg_test_file_log, err, len);
}


char *
rg_test_file(const char *name, const char *fmt, ...)
{
    char     *text, *path;
    va_list   args;

    va_start(args, fmt);
    if (vasprintf(&text, fmt, args) < 0) {
        va_end(args);
        fail();
    }
    va_end(args);

    path = rg_test_write_file(name, text);
    free(text);
    assert_non_null(path);

    return path;
}


void
rg_test_file_error(const char *path, const char *fmt, ...)
{
    char         err[512], expect[512];
    va_list      args;
    rg_cycle_t  *cycle;

    va_start(args, fmt);
    vsnprintf(expect, sizeof(expect), fmt, args);
    va_end(args);

    cycle = rg_test_file_cycle(path, err, sizeof(err));
    if (cycle != NULL) {
        rg_cycle_destroy(cycle);
        print_error("%s: accepted, expected: %s\n", path, expect);
        fail();
    }

    assert_string_equal(err, expect);
}


/* Cycles logging to a file, through a descriptor of their own: a cycle
 * closes its log when it is destroyed, see rg_test_cycle_caller_log. */

static rg_log_t  rg_test_logged_log;
static int       rg_test_logged_fd = -1;


rg_cycle_t *
rg_test_logged_cycle(const char *path, const char *text, char *err,
    size_t len)
{
    rg_cycle_t  *cycle;

    rg_test_logged_fd = open(path, O_WRONLY | O_APPEND);
    assert_true(rg_test_logged_fd >= 0);

    rg_test_logged_log = *rg_log_stderr();
    rg_test_logged_log.fd = rg_test_logged_fd;
    rg_test_logged_log.log_level = RG_LOG_DEBUG;

    err[0] = '\0';
    cycle = rg_cycle_create("test.conf", text, &rg_test_logged_log, err,
                            len);

    if (cycle == NULL) {
        close(rg_test_logged_fd);         /* if the cycle did not */
        rg_test_logged_fd = -1;
    }

    return cycle;
}


void
rg_test_logged_destroy(rg_cycle_t *cycle)
{
    rg_cycle_destroy(cycle);
    close(rg_test_logged_fd);             /* if the cycle did not */
    rg_test_logged_fd = -1;
}


static int
rg_test_conf_rm(const char *path, const struct stat *st, int flag,
    struct FTW *f)
{
    return remove(path);
}


int
rg_test_tmpdir_cleanup(void **state)
{
    nftw(rg_test_tmpdir(), rg_test_conf_rm, 16, FTW_DEPTH | FTW_PHYS);

    return 0;
}
