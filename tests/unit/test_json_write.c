/* test_json_write.c: rg_json_write (src/core/rg_json_write.c) gives the
 * same bytes as json_dumps(JSON_COMPACT | JSON_ENCODE_ANY), with and
 * without JSON_SORT_KEYS: for every byte as a string and as a key, UTF-8
 * beyond ASCII, an embedded NUL, the integer and real edges, nested and
 * empty containers, many keys (the sort's heap path), an object whose
 * insertion order is not its sorted order, and every provider fixture's
 * JSON (RG_FIXTURES_DIR). rg_json_write_str refuses what is not UTF-8,
 * and a value nested past the bound is an error, not a crash. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json_write.h>

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


static rg_uint_t  rg_compared;


static void
rg_same(json_t *v)
{
    char    *a, *b;
    size_t   len;
    int      sorted;

    assert_non_null(v);

    for (sorted = 0; sorted < 2; sorted++) {
        a = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY
                          | (sorted ? JSON_SORT_KEYS : 0));
        b = rg_json_dumps(v, sorted ? RG_JSON_SORT_KEYS : 0, &len);
        assert_non_null(a);
        assert_non_null(b);
        assert_string_equal(b, a);
        assert_int_equal(len, strlen(a));
        free(a);
        free(b);
        rg_compared++;
    }
}


static void
test_scalars(void **state)
{
    json_t      *v;
    size_t       i;
    char         s[2];
    const double reals[] = { 0.0, -0.0, 1.0, 0.1, 100.0, 1e300, -2.5e-10,
                             123456789012345678.0, 1e22, 5e-324 };

    for (i = 1; i < 256; i++) {
        s[0] = (char) i;
        s[1] = '\0';
        v = json_string(s);
        if (i >= 0x80) {
            assert_null(v);       /* a lone byte is not UTF-8 */
            continue;
        }
        rg_same(v);
        json_decref(v);

        /* as a key too */
        v = json_object();
        json_object_set_new(v, s, json_integer((json_int_t) i));
        rg_same(v);
        json_decref(v);
    }

    v = json_stringn("a\0b", 3);
    rg_same(v);
    json_decref(v);

    v = json_string("caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x80\xa8 \x7f end\n");
    rg_same(v);
    json_decref(v);

    v = json_string("");
    rg_same(v);
    json_decref(v);

    for (i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
        v = json_real(reals[i]);
        rg_same(v);
        json_decref(v);
    }

    v = json_pack("[I,I,I,I,I,b,b,n]", (json_int_t) 0, (json_int_t) -1,
                  (json_int_t) 1234567890123LL, (json_int_t) LLONG_MIN,
                  (json_int_t) LLONG_MAX, 1, 0);
    rg_same(v);
    json_decref(v);

    (void) state;
}


static void
test_containers(void **state)
{
    json_t  *v, *o;
    char     key[16];
    int      i;

    v = json_pack("{s:{}, s:[], s:[[],{}], s:{s:{s:[i,{s:n}]}}}",
                  "empty", "list", "both", "deep", "a", "b", 1, "c");
    rg_same(v);
    json_decref(v);

    /* inserted out of order, one removed and set again */
    v = json_object();
    json_object_set_new(v, "zeta", json_true());
    json_object_set_new(v, "b", json_string("x"));
    json_object_set_new(v, "ab", json_string("y"));
    json_object_set_new(v, "a", json_string("z"));
    json_object_set_new(v, "B", json_null());
    json_object_set_new(v, "", json_integer(1));
    json_object_del(v, "b");
    json_object_set_new(v, "b", json_string("again"));
    json_object_setn_new(v, "a\0z", 3, json_integer(2));
    rg_same(v);
    json_decref(v);

    /* more keys than the sort keeps on the stack */
    v = json_object();
    for (i = 40; i > 0; i--) {
        snprintf(key, sizeof(key), "k%03d", (i * 7) % 41);
        o = json_pack("{s:i, s:s}", "n", i, "w\"q", key);
        json_object_set_new(v, key, o);
    }
    rg_same(v);
    json_decref(v);

    (void) state;
}


static void
test_fixtures(void **state)
{
    DIR            *d;
    json_t         *v;
    size_t          n;
    const char     *dir;
    char            path[4096];
    struct dirent  *de;
    json_error_t    err;

    dir = getenv("RG_FIXTURES_DIR");
    d = dir ? opendir(dir) : NULL;
    if (d == NULL) {
        skip();
    }

    n = 0;

    while ((de = readdir(d)) != NULL) {
        if (strstr(de->d_name, ".json") == NULL) {
            continue;
        }

        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        v = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
        if (v == NULL) {
            continue;             /* some are bodies cut on purpose */
        }

        rg_same(v);
        json_decref(v);
        n++;
    }

    closedir(d);
    assert_true(n > 10);

    (void) state;
}


static void
test_errors(void **state)
{
    rg_buf_t   b;
    json_t    *v, *inner;
    int        i;
    char      *s;

    memset(&b, 0, sizeof(rg_buf_t));

    /* raw text: ASCII written here, the rest checked by jansson */
    assert_int_equal(rg_json_write_str(&b, "say \"hi\"\n\\", 10), RG_OK);
    assert_string_equal(b.data, "\"say \\\"hi\\\"\\n\\\\\"");
    rg_buf_reset(&b);

    assert_int_equal(rg_json_write_str(&b, "caf\xc3\xa9", 5), RG_OK);
    assert_string_equal(b.data, "\"caf\xc3\xa9\"");
    rg_buf_reset(&b);

    assert_int_equal(rg_json_write_str(&b, "bad \xc3(", 6), RG_ERROR);
    assert_int_equal(rg_json_write_str(&b, "\xed\xa0\x80", 3), RG_ERROR);
    assert_int_equal(b.len, 0);

    assert_int_equal(rg_json_write_str(&b, NULL, 0), RG_OK);
    assert_string_equal(b.data, "\"\"");
    rg_buf_reset(&b);

    /* nested past the bound: an error, and the buffer as it was */
    assert_int_equal(rg_buf_append_lit(&b, "kept"), RG_OK);
    v = json_array();
    inner = v;
    for (i = 0; i < 600; i++) {
        json_t *a = json_array();
        json_array_append_new(inner, a);
        inner = a;
    }
    assert_int_equal(rg_json_write(&b, v, 0), RG_ERROR);
    assert_string_equal(b.data, "kept");
    assert_int_equal(b.len, 4);
    json_decref(v);

    s = rg_json_dumps(NULL, 0, NULL);
    assert_null(s);

    rg_buf_free(&b);

    (void) state;
}


int
main(void)
{
    int  rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_containers),
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_errors),
    };

    rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0 && rg_compared < 500) {
        return 1;
    }

    return rc;
}
