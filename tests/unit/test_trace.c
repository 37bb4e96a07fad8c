/* test_trace.c: the W3C traceparent reader and writer
 * (src/trace/rg_traceparent.c) against the spec's rules, the ids of
 * traces and spans (src/trace/rg_trace_span.c), and a task's
 * "traceparent" (src/queue/rg_task.c): a valid one is kept, an invalid
 * one ignored without making the task invalid. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_traceparent.h>
#include <rg_trace.h>
#include <rg_task.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


#define RG_TEST_TP  "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


static rg_int_t
rg_test_parse(const char *s, rg_traceparent_t *tp)
{
    return rg_traceparent_parse(tp, s, strlen(s));
}


static void
test_parse_valid(void **state)
{
    rg_traceparent_t  tp;

    assert_int_equal(rg_test_parse(RG_TEST_TP, &tp), RG_OK);
    assert_string_equal(tp.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_string_equal(tp.parent_id, "00f067aa0ba902b7");
    assert_int_equal(tp.flags, 1);

    /* not sampled is a valid context too */
    assert_int_equal(rg_test_parse("00-4bf92f3577b34da6a3ce929d0e0e4736-"
                                   "00f067aa0ba902b7-00", &tp), RG_OK);
    assert_int_equal(tp.flags, 0);

    /* optional whitespace around a header value */
    assert_int_equal(rg_test_parse(" \t" RG_TEST_TP " ", &tp), RG_OK);
    assert_string_equal(tp.parent_id, "00f067aa0ba902b7");

    /* a later version is read by the fields this one knows */
    assert_int_equal(rg_test_parse("01-4bf92f3577b34da6a3ce929d0e0e4736-"
                                   "00f067aa0ba902b7-09-whatever", &tp),
                     RG_OK);
    assert_int_equal(tp.flags, 9);
    assert_int_equal(rg_test_parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-"
                                   "00f067aa0ba902b7-01", &tp), RG_OK);
}


static void
test_parse_invalid(void **state)
{
    rg_uint_t         i;
    rg_traceparent_t  tp;

    static const char  *bad[] = {
        "",
        "00",
        "garbage",
        /* all-zero trace id, all-zero parent id */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        /* uppercase hex is not the spec's */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
        /* version ff is forbidden, a version is two hex digits */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        /* version 00 has exactly four fields */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        /* a later one's extra fields start with a dash */
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        /* short or long fields, wrong separators, not hex */
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e47366-00f067aa0ba902b7-1",
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902g7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n",
    };

    for (i = 0; i < rg_nelems(bad); i++) {
        if (rg_test_parse(bad[i], &tp) != RG_DECLINED) {
            print_error("taken: \"%s\"\n", bad[i]);
            fail();
        }
        assert_string_equal(tp.trace_id, "");
    }

    assert_int_equal(rg_traceparent_parse(&tp, NULL, 0), RG_DECLINED);

    /* the length given, not the NUL, bounds it */
    assert_int_equal(rg_traceparent_parse(&tp, RG_TEST_TP, 54), RG_DECLINED);
}


static void
test_format_and_ids(void **state)
{
    size_t            i;
    char              out[RG_TRACEPARENT_SIZE];
    char              a[RG_TRACE_ID_LEN + 1], b[RG_TRACE_ID_LEN + 1];
    rg_trace_span_t   sp, child;
    rg_traceparent_t  tp;

    rg_traceparent_format(out, "4bf92f3577b34da6a3ce929d0e0e4736",
                          "00f067aa0ba902b7");
    assert_string_equal(out, RG_TEST_TP);

    assert_int_equal(rg_trace_id_new(a, 16), RG_OK);
    assert_int_equal(rg_trace_id_new(b, 16), RG_OK);
    assert_int_equal(strlen(a), 32);
    assert_int_equal(strspn(a, "0123456789abcdef"), 32);
    assert_string_not_equal(a, b);

    /* a span of a new trace: what it writes reads back */
    memset(&sp, 0, sizeof(sp));
    assert_int_equal(rg_trace_span_start(&sp, NULL, NULL), RG_OK);
    assert_int_equal(strlen(sp.trace_id), 32);
    assert_int_equal(strlen(sp.span_id), 16);
    assert_string_equal(sp.parent_id, "");
    assert_true(sp.start > 1600000000ull * 1000000000ull);

    rg_trace_span_header(&sp, out);
    assert_int_equal(rg_test_parse(out, &tp), RG_OK);
    assert_string_equal(tp.trace_id, sp.trace_id);
    assert_string_equal(tp.parent_id, sp.span_id);

    /* a child: the same trace, its parent's span as parent */
    memset(&child, 0, sizeof(child));
    assert_int_equal(rg_trace_span_start(&child, sp.trace_id, sp.span_id),
                     RG_OK);
    assert_string_equal(child.trace_id, sp.trace_id);
    assert_string_equal(child.parent_id, sp.span_id);
    assert_string_not_equal(child.span_id, sp.span_id);

    /* without an exporter, ending it only forgets it */
    rg_trace_span_end(NULL, &child, NULL);
    assert_int_equal(child.start, 0);

    /* a span with no ids writes no header */
    memset(&sp, 0, sizeof(sp));
    rg_trace_span_header(&sp, out);
    assert_string_equal(out, "");

    for (i = 0; i < 64; i++) {
        assert_int_equal(rg_trace_id_new(a, 8), RG_OK);
        assert_int_not_equal(strspn(a, "0"), 16);
    }
}


static void
test_task_traceparent(void **state)
{
    rg_task_t    t;
    const char  *line;

    line = "{\"id\":\"t1\",\"input\":\"hi\",\"traceparent\":\"" RG_TEST_TP "\"}";
    assert_int_equal(rg_task_parse(&t, line, strlen(line), 1), RG_OK);
    assert_non_null(t.traceparent);
    assert_int_equal(t.traceparent_len, strlen(RG_TEST_TP));
    assert_memory_equal(t.traceparent, RG_TEST_TP, t.traceparent_len);
    assert_int_equal(t.traceparent_invalid, 0);
    rg_task_free(&t);

    /* invalid: ignored (a new trace), the task runs */
    line = "{\"id\":\"t2\",\"input\":\"hi\",\"traceparent\":\"00-00000000000000"
           "000000000000000000-00f067aa0ba902b7-01\"}";
    assert_int_equal(rg_task_parse(&t, line, strlen(line), 2), RG_OK);
    assert_null(t.traceparent);
    assert_int_equal(t.traceparent_invalid, 1);
    rg_task_free(&t);

    line = "{\"id\":\"t3\",\"input\":\"hi\",\"traceparent\":42}";
    assert_int_equal(rg_task_parse(&t, line, strlen(line), 3), RG_OK);
    assert_null(t.traceparent);
    assert_int_equal(t.traceparent_invalid, 1);
    rg_task_free(&t);

    /* none, or null: nothing to say */
    line = "{\"id\":\"t4\",\"input\":\"hi\",\"traceparent\":null}";
    assert_int_equal(rg_task_parse(&t, line, strlen(line), 4), RG_OK);
    assert_null(t.traceparent);
    assert_int_equal(t.traceparent_invalid, 0);
    rg_task_free(&t);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_parse_valid),
        cmocka_unit_test(test_parse_invalid),
        cmocka_unit_test(test_format_and_ids),
        cmocka_unit_test(test_task_traceparent),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
