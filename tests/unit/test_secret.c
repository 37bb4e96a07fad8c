/* test_secret.c: unit tests of the secret table (src/core/rg_secret.c):
 * scrubbing ("sk-…last4", JSON-escaped forms, every occurrence, in place),
 * taking a key out of the environment and keeping it for the next
 * configuration, the log writer's scrubbing, and PR_SET_DUMPABLE. That
 * the key leaves /proc/PID/environ is tested on the real binary in
 * tests/security/. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_secret.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sys/prctl.h>


#define RG_TEST_KEY   "sk-proj-0123456789abcdefWXYZ"
#define RG_TEST_MASK  "sk-\xe2\x80\xa6WXYZ"


static int
rg_test_teardown(void **state)
{
    rg_secret_reset();
    unsetenv("RG_TEST_SECRET_VAR");

    return 0;
}


static void
rg_test_scrub_is(const char *in, const char *expect)
{
    char    buf[512];
    size_t  n;

    snprintf(buf, sizeof(buf), "%s", in);
    n = rg_secret_scrub(buf, strlen(buf));
    buf[n] = '\0';

    assert_string_equal(buf, expect);
}


static void
rg_test_scrub(void **state)
{
    char  mask[32];

    /* nothing registered: nothing changes */
    rg_test_scrub_is("key " RG_TEST_KEY, "key " RG_TEST_KEY);

    assert_int_equal(rg_secret_add(RG_TEST_KEY, strlen(RG_TEST_KEY)), RG_OK);

    rg_secret_mask(RG_TEST_KEY, strlen(RG_TEST_KEY), mask, sizeof(mask));
    assert_string_equal(mask, RG_TEST_MASK);

    rg_test_scrub_is("Incorrect API key provided: " RG_TEST_KEY ".",
                     "Incorrect API key provided: " RG_TEST_MASK ".");
    rg_test_scrub_is(RG_TEST_KEY RG_TEST_KEY "x" RG_TEST_KEY,
                     RG_TEST_MASK RG_TEST_MASK "x" RG_TEST_MASK);
    rg_test_scrub_is("Bearer " RG_TEST_KEY, "Bearer " RG_TEST_MASK);

    /* a part of the key inside a text is not the key */
    rg_test_scrub_is("sk-proj-0123456789abcdef and more",
                     "sk-proj-0123456789abcdef and more");
    rg_test_scrub_is("", "");

    /* but a text cut to a size inside the key (a reason, a log line, the
     * start of a body) hides what is left of it, from 12 bytes on */
    rg_test_scrub_is("key: sk-proj-0123456789abcdef",
                     "key: " RG_TEST_MASK);
    rg_test_scrub_is("key: sk-proj-0123", "key: " RG_TEST_MASK);
    rg_test_scrub_is("key: " RG_TEST_KEY " and sk-proj-012345",
                     "key: " RG_TEST_MASK " and " RG_TEST_MASK);
    rg_test_scrub_is("key: sk-proj-012", "key: sk-proj-012");
    rg_test_scrub_is("sk-proj-0123456789abcdeX", "sk-proj-0123456789abcdeX");

    /* registering twice is harmless */
    assert_int_equal(rg_secret_add(RG_TEST_KEY, strlen(RG_TEST_KEY)), RG_OK);
    rg_test_scrub_is(RG_TEST_KEY, RG_TEST_MASK);

    /* too short to be told from text: refused */
    assert_int_equal(rg_secret_add("abc", 3), RG_ERROR);

    /* a short key shows nothing of itself */
    assert_int_equal(rg_secret_add("tiny-key", 8), RG_OK);
    rg_test_scrub_is("[tiny-key]", "[\xe2\x80\xa6]");
}


static void
rg_test_scrub_json(void **state)
{
    /* a key with a quote and a backslash, as JSON text shows it */
    assert_int_equal(rg_secret_add("sk-a\"b\\c-0123456789-LAST", 24), RG_OK);

    rg_test_scrub_is("{\"error\":\"sk-a\\\"b\\\\c-0123456789-LAST\"}",
                     "{\"error\":\"sk-\xe2\x80\xa6LAST\"}");
    rg_test_scrub_is("raw sk-a\"b\\c-0123456789-LAST",
                     "raw sk-\xe2\x80\xa6LAST");
}


static void
rg_test_env(void **state)
{
    const char  *v, *again;

    assert_int_equal(setenv("RG_TEST_SECRET_VAR", RG_TEST_KEY, 1), 0);

    v = rg_secret_env("RG_TEST_SECRET_VAR");
    assert_non_null(v);
    assert_string_equal(v, RG_TEST_KEY);

    /* gone from the environment, kept here, and registered */
    assert_null(getenv("RG_TEST_SECRET_VAR"));

    again = rg_secret_env("RG_TEST_SECRET_VAR");
    assert_ptr_equal(again, v);

    rg_test_scrub_is(RG_TEST_KEY, RG_TEST_MASK);

    /* a new value replaces the kept one */
    assert_int_equal(setenv("RG_TEST_SECRET_VAR", "sk-second-key-0000000001",
                            1), 0);
    v = rg_secret_env("RG_TEST_SECRET_VAR");
    assert_string_equal(v, "sk-second-key-0000000001");
    assert_null(getenv("RG_TEST_SECRET_VAR"));

    /* never set, or set empty: nothing */
    assert_null(rg_secret_env("RG_TEST_NEVER_SET_VAR"));
    assert_int_equal(setenv("RG_TEST_EMPTY_SECRET", "", 1), 0);
    assert_null(rg_secret_env("RG_TEST_EMPTY_SECRET"));
    unsetenv("RG_TEST_EMPTY_SECRET");
}


static void
rg_test_log(void **state)
{
    int        fds[2];
    char       buf[RG_LOG_MAX_LINE + 16];
    ssize_t    n;
    rg_log_t   log;

    assert_int_equal(rg_secret_add(RG_TEST_KEY, strlen(RG_TEST_KEY)), RG_OK);
    assert_int_equal(pipe(fds), 0);

    memset(&log, 0, sizeof(log));
    log.log_level = RG_LOG_DEBUG;
    log.fd = fds[1];

    rg_log_error(RG_LOG_ERR, &log, 0, "provider said: %s (HTTP 401)",
                 "Incorrect API key provided: " RG_TEST_KEY);

    n = read(fds[0], buf, sizeof(buf) - 1);
    assert_true(n > 0);
    buf[n] = '\0';

    assert_null(strstr(buf, RG_TEST_KEY));
    assert_non_null(strstr(buf, "Incorrect API key provided: " RG_TEST_MASK
                                " (HTTP 401)\n"));

    close(fds[0]);
    close(fds[1]);
}


static void
rg_test_protect(void **state)
{
    assert_int_equal(rg_secret_protect(), RG_OK);
    assert_int_equal(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
    assert_int_equal(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), 0);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_teardown(rg_test_scrub, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_scrub_json, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_env, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_log, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_protect, rg_test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
