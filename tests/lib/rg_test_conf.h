/* rg_test_conf.h: what the tests of the configuration share
 * (tests/unit/test_conf_*.c): a cycle from text that must build, or must
 * fail with exactly one error (" in FILE:LINE" included); the n-th llm
 * and agent of a cycle; cycles read from files written to
 * rg_test_tmpdir() (include, -c) or logging to a descriptor of the
 * test's; the removal of that folder at the end. The configuration text
 * and the error expected stay in each case. */

#ifndef RG_TEST_CONF_H
#define RG_TEST_CONF_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_llm_conf.h>
#include <rg_agent_conf.h>


/* an rg_str_t equals a C string */
#define rg_test_str(s, expect)                                               \
    do {                                                                     \
        assert_non_null((s)->data);                                          \
        assert_int_equal((s)->len, strlen(expect));                          \
        assert_memory_equal((s)->data, (expect), strlen(expect));            \
    } while (0)

/* a cycle from text ("test.conf") that must build; the caller destroys it */
#define rg_test_conf_ok(text)                                                \
    rg_test_conf_ok_at(text, __FILE__, __LINE__)

/* text must fail with exactly the error expect */
#define rg_test_conf_error(text, expect)                                     \
    rg_test_conf_error_at(text, expect, __FILE__, __LINE__)

rg_cycle_t *rg_test_conf_ok_at(const char *text, const char *file, int line);
void rg_test_conf_error_at(const char *text, const char *expect,
    const char *file, int line);
/* 0 when text fails with exactly expect; 1, saying why, otherwise (for
 * tables of cases: every mismatch is printed before the test fails) */
int rg_test_conf_mismatch(const char *text, const char *expect);

/* the i-th llm and agent blocks of a cycle, in the order of the file */
rg_llm_conf_t *rg_test_llm(rg_cycle_t *cycle, rg_uint_t i);
rg_agent_conf_t *rg_test_agent(rg_cycle_t *cycle, rg_uint_t i);

/* a cycle read from the file path (-c path), logging to rg_test_file_log
 * (stderr, at crit; at debug with RG_TEST_LOG set) */
extern rg_log_t  rg_test_file_log;
rg_cycle_t *rg_test_file_cycle(const char *path, char *err, size_t len);
/* writes the text of fmt to name in rg_test_tmpdir(); its path, malloc'ed */
char *rg_test_file(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* the file path must fail with exactly the error of fmt */
void rg_test_file_error(const char *path, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* a cycle from text that logs at debug to the file path, through a
 * descriptor of the test's own; rg_test_logged_destroy() closes it */
rg_cycle_t *rg_test_logged_cycle(const char *path, const char *text,
    char *err, size_t len);
void rg_test_logged_destroy(rg_cycle_t *cycle);

/* a group teardown: removes rg_test_tmpdir() and all in it */
int rg_test_tmpdir_cleanup(void **state);

#endif /* RG_TEST_CONF_H */
