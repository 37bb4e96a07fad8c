/* test_string.c: the core's string helpers (src/core/rg_string.c) that
 * stand in for snprintf on the per-call path: rg_sprint_int gives
 * "%lld"'s digits for every edge and a sweep, rg_cpystrn cuts at
 * size - 1 and always ends with a NUL, rg_cpymem returns the end. */

#include <rg_config.h>
#include <rg_core.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


static void
rg_test_int(int64_t v)
{
    char    want[32], got[RG_INT64_LEN + 1];
    size_t  n;

    snprintf(want, sizeof(want), "%lld", (long long) v);
    memset(got, 'x', sizeof(got));
    n = rg_sprint_int(got, v);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(got, want, n);
    assert_int_equal(got[n], 'x');         /* no NUL, nothing past it */
}


static void
test_sprint_int(void **state)
{
    int64_t  v;

    for (v = -1000; v <= 1000; v++) {
        rg_test_int(v);
    }

    for (v = 1; v > 0 && v < INT64_MAX / 7; v *= 7) {
        rg_test_int(v);
        rg_test_int(-v);
        rg_test_int(v - 1);
    }

    rg_test_int(INT64_MAX);
    rg_test_int(INT64_MIN);
    rg_test_int(INT64_MIN + 1);

    (void) state;
}


static void
test_cpystrn(void **state)
{
    char   buf[8], *end;

    memset(buf, 'x', sizeof(buf));
    end = rg_cpystrn(buf, "abc", sizeof(buf));
    assert_string_equal(buf, "abc");
    assert_ptr_equal(end, buf + 3);
    assert_int_equal(buf[4], 'x');

    /* cut at size - 1, as snprintf("%s") cuts */
    end = rg_cpystrn(buf, "abcdefghijk", sizeof(buf));
    assert_string_equal(buf, "abcdefg");
    assert_ptr_equal(end, buf + 7);

    end = rg_cpystrn(buf, "", sizeof(buf));
    assert_string_equal(buf, "");
    assert_ptr_equal(end, buf);

    end = rg_cpystrn(buf, "abc", 1);
    assert_string_equal(buf, "");
    assert_ptr_equal(end, buf);

    end = rg_cpymem(rg_cpymem(buf, "ab", 2), "cd", 3);
    assert_string_equal(buf, "abcd");
    assert_ptr_equal(end, buf + 5);

    (void) state;
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sprint_int),
        cmocka_unit_test(test_cpystrn),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
