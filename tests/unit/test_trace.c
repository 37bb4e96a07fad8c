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

#include <jansson.h>

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


static const char *
rg_test_attr(json_t *span, const char *key)
{
    size_t   i;
    json_t  *a, *v;

    a = json_object_get(span, "attributes");

    for (i = 0; i < json_array_size(a); i++) {
        if (strcmp(json_string_value(json_object_get(json_array_get(a, i),
                                                     "key")), key) == 0)
        {
            v = json_object_get(json_array_get(a, i), "value");
            return json_string_value(json_object_get(v, "stringValue"))
                   ? json_string_value(json_object_get(v, "stringValue"))
                   : json_string_value(json_object_get(v, "intValue"));
        }
    }

    return NULL;
}


static void
test_span_json(void **state)
{
    char              long_msg[700];
    json_t           *j;
    rg_buf_t          b;
    json_error_t      err;
    rg_trace_end_t    end;
    rg_trace_span_t   sp;
    rg_trace_attr_t   a[3];

    memset(&sp, 0, sizeof(sp));
    memset(a, 0, sizeof(a));              /* real and dnum unset */
    assert_int_equal(rg_trace_span_start(&sp, "4bf92f3577b34da6a3ce929d0e0e4736",
                                         "00f067aa0ba902b7"), RG_OK);

    a[0].key = "gen_ai.tool.name";
    a[0].str = "say \"hi\"\n\xc3\xa9";      /* quotes, a newline, é */
    a[0].len = strlen(a[0].str);
    a[1].key = "gen_ai.usage.input_tokens";
    a[1].str = NULL;
    a[1].num = 9000000000LL;
    a[2].key = "bad";
    a[2].str = "\xff\xfe";                 /* not UTF-8: sent as "" */
    a[2].len = 2;

    /* a status message past 512 bytes is cut on a character */
    memset(long_msg, 'x', sizeof(long_msg));
    memcpy(long_msg + 511, "\xc3\xa9", 2);   /* across byte 512 */
    long_msg[sizeof(long_msg) - 1] = '\0';

    memset(&end, 0, sizeof(end));
    end.name = "execute_tool \"x\"";
    end.kind = RG_TRACE_INTERNAL;
    end.attrs = a;
    end.nattrs = 3;
    end.error = "tool_error";
    end.message = long_msg;
    end.link = "1111111111111111";

    memset(&b, 0, sizeof(b));
    assert_int_equal(rg_trace_span_json(&b, &sp, &end, sp.start + 5), RG_OK);

    j = json_loadb(b.data, b.len, 0, &err);
    if (j == NULL) {
        print_error("not JSON: %s: %.*s\n", err.text, (int) b.len, b.data);
        fail();
    }

    assert_string_equal(json_string_value(json_object_get(j, "traceId")),
                        "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_string_equal(json_string_value(json_object_get(j, "spanId")),
                        sp.span_id);
    assert_string_equal(json_string_value(json_object_get(j, "parentSpanId")),
                        "00f067aa0ba902b7");
    assert_string_equal(json_string_value(json_object_get(j, "name")),
                        "execute_tool \"x\"");
    assert_int_equal(json_integer_value(json_object_get(j, "kind")), 1);
    assert_true(json_is_string(json_object_get(j, "startTimeUnixNano")));
    assert_int_equal(strtoull(json_string_value(json_object_get(j,
                         "endTimeUnixNano")), NULL, 10)
                     - strtoull(json_string_value(json_object_get(j,
                         "startTimeUnixNano")), NULL, 10), 5);

    assert_string_equal(rg_test_attr(j, "gen_ai.tool.name"),
                        "say \"hi\"\n\xc3\xa9");
    assert_string_equal(rg_test_attr(j, "gen_ai.usage.input_tokens"),
                        "9000000000");
    assert_string_equal(rg_test_attr(j, "bad"), "");
    assert_string_equal(rg_test_attr(j, "error.type"), "tool_error");

    assert_int_equal(json_integer_value(json_object_get(json_object_get(j,
                         "status"), "code")), 2);
    assert_int_equal(json_string_length(json_object_get(json_object_get(j,
                         "status"), "message")), 511);
    assert_string_equal(json_string_value(json_object_get(json_array_get(
                            json_object_get(j, "links"), 0), "spanId")),
                        "1111111111111111");

    json_decref(j);
    rg_buf_free(&b);

    /* a root span that ended well: no parent, no status */
    memset(&sp, 0, sizeof(sp));
    assert_int_equal(rg_trace_span_start(&sp, NULL, NULL), RG_OK);
    memset(&end, 0, sizeof(end));
    end.name = "invoke_agent a";
    end.kind = RG_TRACE_INTERNAL;

    memset(&b, 0, sizeof(b));
    assert_int_equal(rg_trace_span_json(&b, &sp, &end, sp.start), RG_OK);
    j = json_loadb(b.data, b.len, 0, &err);
    assert_non_null(j);
    assert_null(json_object_get(j, "parentSpanId"));
    assert_null(json_object_get(j, "status"));
    assert_int_equal(json_array_size(json_object_get(j, "attributes")), 0);
    json_decref(j);
    rg_buf_free(&b);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_parse_valid),
        cmocka_unit_test(test_parse_invalid),
        cmocka_unit_test(test_format_and_ids),
        cmocka_unit_test(test_task_traceparent),
        cmocka_unit_test(test_span_json),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
