/* test_codec.c: the store's msgpack records (src/store/rg_codec.c): what
 * is written reads back, strings are binary safe, a key that is absent or
 * of another type is reported as such, and a buffer that is not exactly
 * one map (every truncation of a record, trailing bytes, another type,
 * garbage, counts larger than the buffer) is refused before anything is
 * read. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_codec.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


static char *
rg_test_record(size_t *len)
{
    rg_codec_writer_t  w;

    rg_codec_begin(&w, 5);
    rg_codec_str(&w, "r", "t", 1);
    rg_codec_str(&w, "j", "{\"a\":\"x\\u0000y\"}\0z", 18);
    rg_codec_int(&w, "n", 3);
    rg_codec_int(&w, "neg", -42);
    rg_codec_double(&w, "bpt", 3.75);

    return rg_codec_end(&w, len);
}


static void
test_roundtrip(void **state)
{
    char               *p;
    size_t              len;
    double              d;
    int64_t             v;
    rg_str_t            s;
    rg_codec_reader_t   r;

    p = rg_test_record(&len);
    assert_non_null(p);

    assert_int_equal(rg_codec_read(&r, p, len), RG_OK);

    assert_int_equal(rg_codec_get_str(&r, "r", &s), RG_OK);
    assert_int_equal(s.len, 1);
    assert_memory_equal(s.data, "t", 1);

    assert_int_equal(rg_codec_get_str(&r, "j", &s), RG_OK);
    assert_int_equal(s.len, 18);
    assert_memory_equal(s.data, "{\"a\":\"x\\u0000y\"}\0z", 18);

    assert_int_equal(rg_codec_get_int(&r, "n", &v), RG_OK);
    assert_int_equal(v, 3);
    assert_int_equal(rg_codec_get_int(&r, "neg", &v), RG_OK);
    assert_int_equal(v, -42);
    assert_int_equal(rg_codec_get_double(&r, "bpt", &d), RG_OK);
    assert_true(d == 3.75);

    /* absent, and of another type */
    assert_int_equal(rg_codec_get_str(&r, "missing", &s), RG_DECLINED);
    assert_int_equal(rg_codec_get_int(&r, "r", &v), RG_DECLINED);
    assert_int_equal(rg_codec_get_str(&r, "n", &s), RG_DECLINED);

    rg_codec_done(&r);
    free(p);

    (void) state;
}


static void
test_refused(void **state)
{
    char               *p, *q;
    size_t              len, i;
    rg_codec_reader_t   r;
    msgpack_sbuffer     sb;
    msgpack_packer      pk;

    p = rg_test_record(&len);
    assert_non_null(p);

    /* every truncation */
    for (i = 0; i < len; i++) {
        assert_int_equal(rg_codec_read(&r, p, i), RG_ERROR);
        rg_codec_done(&r);
    }

    /* a byte after it */
    q = malloc(len + 1);
    memcpy(q, p, len);
    q[len] = '\0';
    assert_int_equal(rg_codec_read(&r, q, len + 1), RG_ERROR);
    rg_codec_done(&r);
    free(q);

    /* an array, not a map */
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int(&pk, 1);
    assert_int_equal(rg_codec_read(&r, sb.data, sb.size), RG_ERROR);
    rg_codec_done(&r);
    msgpack_sbuffer_destroy(&sb);

    assert_int_equal(rg_codec_read(&r, "\xc1garbage", 8), RG_ERROR);
    rg_codec_done(&r);

    /* counts that claim more than the buffer holds are refused before
     * msgpack-c sizes its memory by them: a map of four billion pairs, a
     * string of four gigabytes, a nested array */
    assert_int_equal(rg_codec_read(&r, "\xdf\xff\xff\xff\xff", 5),
                     RG_ERROR);
    rg_codec_done(&r);
    assert_int_equal(rg_codec_read(&r, "\x81\xa1k\xdb\xff\xff\xff\xff", 8),
                     RG_ERROR);
    rg_codec_done(&r);
    assert_int_equal(rg_codec_read(&r, "\x81\xa1k\xdd\xff\xff\xff\xff", 8),
                     RG_ERROR);
    rg_codec_done(&r);

    /* a writer that promised more pairs than it wrote fails */
    {
        rg_codec_writer_t  w;

        rg_codec_begin(&w, 2);
        rg_codec_int(&w, "a", 1);
        assert_null(rg_codec_end(&w, &len));
    }

    free(p);

    (void) state;
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
