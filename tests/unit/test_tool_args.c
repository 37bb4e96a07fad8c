/* test_tool_args.c: tests of the tool-argument hygiene layer
 * (src/tools/rg_tool_args.h): every repair of rg_tool_args_parse() and its
 * bit, the exact messages of what cannot be repaired, every check and
 * coercion of rg_tool_args_validate() (and what is not coerced), nested
 * paths, rg_tool_trim() at its cut points with 1- to 4-byte characters and
 * invalid UTF-8, canonical JSON and error objects. Each case asserts the
 * exact bytes produced. Inputs to the trimmer are heap copies of their
 * exact length, so that a sanitizer build catches any over-read. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_args.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>


#define RG_TEST_BLANKS  RG_TOOL_ARGS_REPAIR_BLANKS
#define RG_TEST_FENCE   RG_TOOL_ARGS_REPAIR_FENCE
#define RG_TEST_STRING  RG_TOOL_ARGS_REPAIR_STRING
#define RG_TEST_ARRAY   RG_TOOL_ARGS_REPAIR_ARRAY
#define RG_TEST_EMPTY   RG_TOOL_ARGS_REPAIR_EMPTY


/* a string literal, NULs and all */
#define rg_test_parse_ok(text, expect, mask)                                 \
    rg_test_parse_ok_at(text, sizeof(text) - 1, expect, mask,                \
                        __FILE__, __LINE__)

#define rg_test_parse_err(text, expect)                                      \
    rg_test_parse_err_at(text, sizeof(text) - 1, expect, __FILE__, __LINE__)

#define rg_test_valid(args, schema, expect)                                  \
    rg_test_validate_at(args, schema, RG_OK, expect, __FILE__, __LINE__)

#define rg_test_invalid(args, schema, expect)                                \
    rg_test_validate_at(args, schema, RG_ERROR, expect, __FILE__, __LINE__)

#define rg_test_trim(in, len, limit, h, t)                                   \
    rg_test_trim_at(in, len, limit, h, t, __FILE__, __LINE__)


/* helpers ------------------------------------------------------------- */

static json_t *
rg_test_json(const char *text)
{
    json_t        *v;
    json_error_t   err;

    v = json_loads(text, JSON_DECODE_ANY, &err);
    if (v == NULL) {
        print_error("bad test JSON %s: %s\n", text, err.text);
        fail();
    }

    return v;
}


static void
rg_test_canonical_at(json_t *v, const char *expect, const char *file,
    int line)
{
    char    *s;
    size_t   len;

    s = rg_tool_args_canonical(v, &len);
    _assert_true(s != NULL, "canonical", file, line);
    _assert_string_equal(s, expect, file, line);
    _assert_int_equal(len, strlen(expect), file, line);
    free(s);
}


static void
rg_test_parse_ok_at(const char *text, size_t len, const char *expect,
    rg_uint_t mask, const char *file, int line)
{
    char       err[256];
    json_t    *v;
    rg_uint_t  fixed;

    fixed = 0xff;
    strcpy(err, "untouched");

    v = rg_tool_args_parse("calc", text, len, &fixed, err, sizeof(err));

    if (v == NULL) {
        print_error("%s:%d: unexpected error: %s\n", file, line, err);
        _fail(file, line);
    }

    _assert_true(json_is_object(v), "an object", file, line);
    rg_test_canonical_at(v, expect, file, line);
    _assert_int_equal(fixed, mask, file, line);
    _assert_string_equal(err, "", file, line);

    json_decref(v);
}


static void
rg_test_parse_err_at(const char *text, size_t len, const char *expect,
    const char *file, int line)
{
    char       err[256];
    json_t    *v;
    rg_uint_t  fixed;

    fixed = 0xff;

    v = rg_tool_args_parse("calc", text, len, &fixed, err, sizeof(err));

    _assert_true(v == NULL, "NULL", file, line);
    _assert_string_equal(err, expect, file, line);
    _assert_int_equal(fixed, 0, file, line);
}


/* validates args (JSON text) and checks the result, and then either the
 * message or the arguments as they are after coercion */
static void
rg_test_validate_at(const char *args, const char *schema, rg_int_t rc,
    const char *expect, const char *file, int line)
{
    char       err[512];
    json_t    *a, *s;
    rg_int_t   r;

    a = rg_test_json(args);
    s = rg_test_json(schema);
    strcpy(err, "untouched");

    r = rg_tool_args_validate("calc", a, s, err, sizeof(err));

    if (r != rc) {
        print_error("%s:%d: rc %d, err: %s\n", file, line, (int) r, err);
    }

    _assert_int_equal(r, rc, file, line);

    if (rc == RG_OK) {
        _assert_string_equal(err, "", file, line);
        rg_test_canonical_at(a, expect, file, line);

    } else {
        _assert_string_equal(err, expect, file, line);
    }

    json_decref(a);
    json_decref(s);
}


/* a heap copy of exactly len bytes, no NUL after it */
static char *
rg_test_exact(const char *s, size_t len)
{
    char  *p;

    p = malloc(len ? len : 1);
    assert_non_null(p);
    memcpy(p, s, len);

    return p;
}


/* trims in (len bytes) at limit; expects in[0..h) + marker + in[t..len) */
static void
rg_test_trim_at(const char *in, size_t len, size_t limit, size_t h, size_t t,
    const char *file, int line)
{
    char      *p, marker[64];
    size_t     left, mlen;
    rg_buf_t   out, expect;

    memset(&out, 0, sizeof(rg_buf_t));
    memset(&expect, 0, sizeof(rg_buf_t));

    p = rg_test_exact(in, len);
    left = rg_tool_trim(p, len, limit, &out);

    if (h == len && t == len) {
        mlen = 0;                       /* a copy, no marker */
        marker[0] = '\0';

    } else {
        mlen = snprintf(marker, sizeof(marker),
                        "\n[… %zu bytes left out …]\n", t - h);
    }

    _assert_true(rg_buf_append(&expect, in, h) == RG_OK, "append", file,
                 line);
    _assert_true(rg_buf_append(&expect, marker, mlen) == RG_OK, "append",
                 file, line);
    _assert_true(rg_buf_append(&expect, in + t, len - t) == RG_OK, "append",
                 file, line);

    _assert_int_equal(left, t - h, file, line);
    _assert_int_equal(out.len, expect.len, file, line);
    _assert_memory_equal(out.data, expect.data, expect.len, file, line);
    _assert_true(out.len <= limit + mlen, "out.len <= limit + marker", file,
                 line);

    free(p);
    rg_buf_free(&out);
    rg_buf_free(&expect);
}


/* len bytes of '0'..'9' repeated, then s put at offset at */
static char *
rg_test_text(size_t len, const char *s, size_t at)
{
    char    *p;
    size_t   i;

    p = malloc(len + 1);
    assert_non_null(p);

    for (i = 0; i < len; i++) {
        p[i] = (char) ('0' + i % 10);
    }

    p[len] = '\0';

    if (s) {
        memcpy(p + at, s, strlen(s));
    }

    return p;
}


/* parse: repairs ------------------------------------------------------- */

static void
rg_test_parse_plain(void **state)
{
    rg_test_parse_ok("{\"a\":1}", "{\"a\":1}", 0);
    rg_test_parse_ok("{}", "{}", 0);
    rg_test_parse_ok("{ \"b\" : [1, 2] , \"a\" : { } }",
                     "{\"a\":{},\"b\":[1,2]}", 0);
    rg_test_parse_ok("{\"s\":\"```json\\n{}\\n```\"}",
                     "{\"s\":\"```json\\n{}\\n```\"}", 0);
}


static void
rg_test_parse_blanks(void **state)
{
    rg_test_parse_ok(" {\"a\":1}", "{\"a\":1}", RG_TEST_BLANKS);
    rg_test_parse_ok("{\"a\":1}\n", "{\"a\":1}", RG_TEST_BLANKS);
    rg_test_parse_ok("\r\n\t {\"a\":1} \t\r\n", "{\"a\":1}", RG_TEST_BLANKS);
}


static void
rg_test_parse_fence(void **state)
{
    rg_test_parse_ok("```json\n{\"a\":1}\n```", "{\"a\":1}", RG_TEST_FENCE);
    rg_test_parse_ok("```\n{\"a\":1}\n```", "{\"a\":1}", RG_TEST_FENCE);
    rg_test_parse_ok("```JSON {\"a\":1} ```", "{\"a\":1}", RG_TEST_FENCE);
    rg_test_parse_ok("```Json\r\n{\"a\":1}\r\n```", "{\"a\":1}",
                     RG_TEST_FENCE);
    rg_test_parse_ok("```{\"a\":1}```", "{\"a\":1}", RG_TEST_FENCE);
    rg_test_parse_ok("```json{\"a\":1}```", "{\"a\":1}", RG_TEST_FENCE);
    rg_test_parse_ok("\n  ```json\n{\"a\":1}\n```\n\n", "{\"a\":1}",
                     RG_TEST_BLANKS | RG_TEST_FENCE);
    /* a fence inside a string of the object does not end it */
    rg_test_parse_ok("```json\n{\"a\":\"```\"}\n```", "{\"a\":\"```\"}",
                     RG_TEST_FENCE);
}


static void
rg_test_parse_string(void **state)
{
    rg_test_parse_ok("\"{\\\"a\\\":1}\"", "{\"a\":1}", RG_TEST_STRING);
    rg_test_parse_ok("\" {\\\"a\\\": [1, {\\\"b\\\": null}]} \"",
                     "{\"a\":[1,{\"b\":null}]}", RG_TEST_STRING);
    rg_test_parse_ok("  \"{}\"  ", "{}", RG_TEST_BLANKS | RG_TEST_STRING);
    rg_test_parse_ok("```json\n\"{\\\"a\\\":1}\"\n```", "{\"a\":1}",
                     RG_TEST_FENCE | RG_TEST_STRING);
}


static void
rg_test_parse_array(void **state)
{
    rg_test_parse_ok("[{\"a\":1}]", "{\"a\":1}", RG_TEST_ARRAY);
    rg_test_parse_ok("[ {} ]", "{}", RG_TEST_ARRAY);
    rg_test_parse_ok(" ```\n[{\"a\":{\"b\":2}}]\n``` ", "{\"a\":{\"b\":2}}",
                     RG_TEST_BLANKS | RG_TEST_FENCE | RG_TEST_ARRAY);
}


static void
rg_test_parse_empty(void **state)
{
    char       err[64];
    json_t    *v;
    rg_uint_t  fixed;

    rg_test_parse_ok("", "{}", RG_TEST_EMPTY);
    rg_test_parse_ok(" ", "{}", RG_TEST_BLANKS | RG_TEST_EMPTY);
    rg_test_parse_ok("\n\t\r\n ", "{}", RG_TEST_BLANKS | RG_TEST_EMPTY);
    rg_test_parse_ok("\"\"", "{}", RG_TEST_STRING | RG_TEST_EMPTY);
    rg_test_parse_ok("\" \\n \"", "{}", RG_TEST_STRING | RG_TEST_EMPTY);
    rg_test_parse_ok("```json\n```", "{}", RG_TEST_FENCE | RG_TEST_EMPTY);
    rg_test_parse_ok("``````", "{}", RG_TEST_FENCE | RG_TEST_EMPTY);
    rg_test_parse_ok("``` \n ```", "{}", RG_TEST_FENCE | RG_TEST_EMPTY);

    /* no text at all; no repaired, no err */
    fixed = 0xff;
    v = rg_tool_args_parse("calc", NULL, 0, &fixed, err, sizeof(err));
    assert_non_null(v);
    assert_int_equal(json_object_size(v), 0);
    assert_int_equal(fixed, RG_TEST_EMPTY);
    json_decref(v);

    v = rg_tool_args_parse("calc", "{\"a\":1}", 7, NULL, NULL, 0);
    assert_non_null(v);
    json_decref(v);
}


static void
rg_test_parse_repair_names(void **state)
{
    char  buf[64];

    assert_string_equal(rg_tool_args_repairs(0, buf, sizeof(buf)), "");
    assert_string_equal(rg_tool_args_repairs(RG_TEST_FENCE, buf,
                                             sizeof(buf)), "fence");
    assert_string_equal(rg_tool_args_repairs(0x1f, buf, sizeof(buf)),
                        "blanks,fence,string,array,empty");
    assert_string_equal(rg_tool_args_repairs(0x1f, buf, 10), "blanks,fe");
}


/* parse: what is not repaired ------------------------------------------ */

static void
rg_test_parse_invalid(void **state)
{
    rg_test_parse_err("{\"a\":1,}",
        "arguments for calc are not valid JSON: string or '}' expected near "
        "'}' (line 1, column 8); send one JSON object");
    rg_test_parse_err("{'a':1}",
        "arguments for calc are not valid JSON: string or '}' expected near "
        "''' (line 1, column 2); send one JSON object");
    rg_test_parse_err("{\"a\":1",
        "arguments for calc are not valid JSON: '}' expected near end of "
        "file (line 1, column 6); send one JSON object");
    rg_test_parse_err("{a:1}",
        "arguments for calc are not valid JSON: string or '}' expected near "
        "'a' (line 1, column 2); send one JSON object");
    rg_test_parse_err("{\"a\":1}{\"b\":2}",
        "arguments for calc are not valid JSON: end of file expected near "
        "'{' (line 1, column 8); send one JSON object");
    rg_test_parse_err("{\"a\":1,\"a\":2}",
        "arguments for calc are not valid JSON: duplicate object key near "
        "'\"a\"' (line 1, column 10); send one JSON object");
    rg_test_parse_err("{\"expression\": 2+2}",
        "arguments for calc are not valid JSON: '}' expected near '+' "
        "(line 1, column 17); send one JSON object");
    rg_test_parse_err("abc",
        "arguments for calc are not valid JSON: invalid token near 'abc' "
        "(line 1, column 3); send one JSON object");
}


static void
rg_test_parse_positions(void **state)
{
    /* lines and columns are those of the text as the model sent it */
    rg_test_parse_err("{\"a\": x}",
        "arguments for calc are not valid JSON: invalid token near 'x' "
        "(line 1, column 7); send one JSON object");
    rg_test_parse_err("\n\n  {\"a\": x}",
        "arguments for calc are not valid JSON: invalid token near 'x' "
        "(line 3, column 9); send one JSON object");
    rg_test_parse_err("   {\"a\": x}",
        "arguments for calc are not valid JSON: invalid token near 'x' "
        "(line 1, column 10); send one JSON object");
    rg_test_parse_err("```json\n{\"a\": x}\n```",
        "arguments for calc are not valid JSON: invalid token near 'x' "
        "(line 2, column 7); send one JSON object");
    rg_test_parse_err("```json {\"a\": x}```",
        "arguments for calc are not valid JSON: invalid token near 'x' "
        "(line 1, column 15); send one JSON object");
    rg_test_parse_err("\n{\n\"a\": x}",
        "arguments for calc are not valid JSON: invalid token near 'x' "
        "(line 3, column 6); send one JSON object");
    /* columns count characters */
    rg_test_parse_err("{\"\xc3\xa9\": x}",
        "arguments for calc are not valid JSON: invalid token near 'x' "
        "(line 1, column 7); send one JSON object");
}


static void
rg_test_parse_no_prose(void **state)
{
    /* a fence with prose around it, or in another language: not repaired */
    rg_test_parse_err("Here you go: ```json\n{\"a\":1}\n```",
        "arguments for calc are not valid JSON: invalid token near 'Here' "
        "(line 1, column 4); send one JSON object");
    rg_test_parse_err("```json\n{\"a\":1}\n```\nDone.",
        "arguments for calc are not valid JSON: invalid token near '`' "
        "(line 1, column 1); send one JSON object");
    rg_test_parse_err("```python\n{\"a\":1}\n```",
        "arguments for calc are not valid JSON: invalid token near '`' "
        "(line 1, column 1); send one JSON object");
    rg_test_parse_err("```jsonc\n{}\n```",
        "arguments for calc are not valid JSON: invalid token near '`' "
        "(line 1, column 1); send one JSON object");
    rg_test_parse_err("```",
        "arguments for calc are not valid JSON: invalid token near '`' "
        "(line 1, column 1); send one JSON object");
    rg_test_parse_err("`````",
        "arguments for calc are not valid JSON: invalid token near '`' "
        "(line 1, column 1); send one JSON object");
    rg_test_parse_err("```json\n{\"a\":1}\n",
        "arguments for calc are not valid JSON: invalid token near '`' "
        "(line 1, column 1); send one JSON object");
}


static void
rg_test_parse_not_object(void **state)
{
    rg_test_parse_err("[{\"a\":1},{\"b\":2}]",
        "arguments for calc must be one JSON object, not an array; send one "
        "JSON object");
    rg_test_parse_err("[]",
        "arguments for calc must be one JSON object, not an array; send one "
        "JSON object");
    rg_test_parse_err("[1]",
        "arguments for calc must be one JSON object, not an array; send one "
        "JSON object");
    rg_test_parse_err("[[{\"a\":1}]]",
        "arguments for calc must be one JSON object, not an array; send one "
        "JSON object");
    rg_test_parse_err("\"abc\"",
        "arguments for calc must be one JSON object, not a string; send one "
        "JSON object");
    /* one repair of a kind: no string inside a string, no array in one */
    rg_test_parse_err("\"[{\\\"a\\\":1}]\"",
        "arguments for calc must be one JSON object, not a string; send one "
        "JSON object");
    rg_test_parse_err("\"\\\"{}\\\"\"",
        "arguments for calc must be one JSON object, not a string; send one "
        "JSON object");
    rg_test_parse_err("[\"{}\"]",
        "arguments for calc must be one JSON object, not an array; send one "
        "JSON object");
    rg_test_parse_err("\"{\\\"a\\\":}\"",
        "arguments for calc must be one JSON object, not a string; send one "
        "JSON object");
    rg_test_parse_err("3",
        "arguments for calc must be one JSON object, not a number; send one "
        "JSON object");
    rg_test_parse_err("-2.5e3",
        "arguments for calc must be one JSON object, not a number; send one "
        "JSON object");
    rg_test_parse_err("true",
        "arguments for calc must be one JSON object, not a boolean; send one "
        "JSON object");
    rg_test_parse_err("false",
        "arguments for calc must be one JSON object, not a boolean; send one "
        "JSON object");
    rg_test_parse_err("null",
        "arguments for calc must be one JSON object, not null; send one "
        "JSON object");
    rg_test_parse_err(" ```\n42\n``` ",
        "arguments for calc must be one JSON object, not a number; send one "
        "JSON object");
}


static void
rg_test_parse_bytes(void **state)
{
    char       err[128];
    json_t    *v;
    rg_uint_t  fixed;

    /* invalid UTF-8, a raw newline and a NUL: one clean line each */
    rg_test_parse_err("{\"a\":\"\xff\"}",
        "arguments for calc are not valid JSON: unable to decode byte 0xff "
        "near '\"' (line 1, column 6); send one JSON object");
    rg_test_parse_err("{\"a\":\"b\nc\"}",
        "arguments for calc are not valid JSON: unexpected newline near "
        "'\"b' (line 1, column 7); send one JSON object");
    rg_test_parse_err("{\"a\":1}\0",
        "arguments for calc are not valid JSON: end of file expected near "
        "end of file (line 1, column 8); send one JSON object");
    rg_test_parse_err("{\"a\":\"\\u0000\"}",
        "arguments for calc are not valid JSON: \\u0000 is not allowed "
        "without JSON_ALLOW_NUL near '\"\\u0000\"' (line 1, column 13); "
        "send one JSON object");

    /* the tool's name is made one clean line too */
    v = rg_tool_args_parse("c\xff" "a\nlc", "[]", 2, &fixed, err,
                           sizeof(err));
    assert_null(v);
    assert_string_equal(err, "arguments for c?a lc must be one JSON object, "
                        "not an array; send one JSON object");

    v = rg_tool_args_parse(NULL, "1", 1, NULL, err, sizeof(err));
    assert_null(v);
    assert_string_equal(err, "arguments for the tool must be one JSON object"
                        ", not a number; send one JSON object");
}


static void
rg_test_parse_err_cut(void **state)
{
    char     err[32];
    json_t  *v;

    /* "arguments for " is 14 bytes; the 3-byte € would end at 32 */
    v = rg_tool_args_parse("calcul\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
                           "\xe2\x82\xac\xe2\x82\xac", "1", 1, NULL, err,
                           sizeof(err));
    assert_null(v);
    assert_string_equal(err, "arguments for calcul\xe2\x82\xac\xe2\x82\xac"
                        "\xe2\x82\xac");

    /* room for nothing, and no room at all */
    v = rg_tool_args_parse("calc", "1", 1, NULL, err, 1);
    assert_null(v);
    assert_string_equal(err, "");

    v = rg_tool_args_parse("calc", "1", 1, NULL, NULL, 0);
    assert_null(v);
}


/* validate: objects ---------------------------------------------------- */

#define RG_TEST_CALC                                                         \
    "{\"type\":\"object\",\"properties\":{"                                  \
    "\"expression\":{\"type\":\"string\",\"maxLength\":64},"                 \
    "\"count\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10},"         \
    "\"unit\":{\"type\":\"string\",\"enum\":[\"c\",\"f\"]}},"                \
    "\"required\":[\"expression\"],\"additionalProperties\":false}"


static void
rg_test_validate_object(void **state)
{
    rg_test_valid("{\"expression\":\"2+2\"}", RG_TEST_CALC,
                  "{\"expression\":\"2+2\"}");
    rg_test_valid("{\"expression\":\"2+2\",\"count\":3,\"unit\":\"f\"}",
                  RG_TEST_CALC,
                  "{\"count\":3,\"expression\":\"2+2\",\"unit\":\"f\"}");

    rg_test_invalid("{}", RG_TEST_CALC,
                    "calc: parameter \"expression\" is required");
    rg_test_invalid("{\"count\":3}", RG_TEST_CALC,
                    "calc: parameter \"expression\" is required");
    rg_test_invalid("{\"expression\":\"1\",\"foo\":1}", RG_TEST_CALC,
                    "calc: unknown parameter \"foo\"; the parameters are: "
                    "expression, count, unit");
    /* an unknown name is reported before a missing one */
    rg_test_invalid("{\"expresion\":\"1\"}", RG_TEST_CALC,
                    "calc: unknown parameter \"expresion\"; the parameters "
                    "are: expression, count, unit");

    rg_test_invalid("{\"x\":1}",
                    "{\"type\":\"object\",\"additionalProperties\":false}",
                    "calc: unknown parameter \"x\"; this tool takes no "
                    "parameters");
    rg_test_invalid("{\"x\":1}",
                    "{\"type\":\"object\",\"properties\":{},"
                    "\"additionalProperties\":false}",
                    "calc: unknown parameter \"x\"; this tool takes no "
                    "parameters");

    /* extra names are fine unless additionalProperties says otherwise */
    rg_test_valid("{\"expression\":\"1\",\"foo\":1}",
                  "{\"properties\":{\"expression\":{\"type\":\"string\"}}}",
                  "{\"expression\":\"1\",\"foo\":1}");
    rg_test_valid("{\"expression\":\"1\",\"foo\":1}",
                  "{\"properties\":{},\"additionalProperties\":true}",
                  "{\"expression\":\"1\",\"foo\":1}");
}


static void
rg_test_validate_unknown_long(void **state)
{
    rg_test_invalid("{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":1}",
                    "{\"properties\":{\"a\":{}},"
                    "\"additionalProperties\":false}",
                    "calc: unknown parameter \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…\"; "
                    "the parameters are: a");
    /* cut before a character, not inside it: 63 bytes, then "é" */
    rg_test_invalid("{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                    "aaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9zz\":1}",
                    "{\"properties\":{\"a\":{}},"
                    "\"additionalProperties\":false}",
                    "calc: unknown parameter \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…\"; "
                    "the parameters are: a");
}


static void
rg_test_validate_schema_none(void **state)
{
    char     err[64];
    json_t  *a, *s;

    a = rg_test_json("{\"x\":\"3\"}");

    /* a schema that is not an object accepts anything and changes nothing */
    strcpy(err, "untouched");
    assert_int_equal(rg_tool_args_validate("calc", a, NULL, err, sizeof(err)),
                     RG_OK);
    assert_string_equal(err, "");

    s = json_true();
    assert_int_equal(rg_tool_args_validate("calc", a, s, err, sizeof(err)),
                     RG_OK);

    s = json_string("object");
    assert_int_equal(rg_tool_args_validate("calc", a, s, err, sizeof(err)),
                     RG_OK);
    json_decref(s);
    rg_test_canonical_at(a, "{\"x\":\"3\"}", __FILE__, __LINE__);

    /* keywords it does not know, and types it does not know */
    rg_test_valid("{\"x\":\"3\"}",
                  "{\"properties\":{\"x\":{\"pattern\":\"^[a-z]+$\","
                  "\"format\":\"email\",\"type\":\"float\"}}}",
                  "{\"x\":\"3\"}");
    rg_test_valid("{\"x\":\"3\"}", "{\"properties\":{\"x\":true}}",
                  "{\"x\":\"3\"}");

    json_decref(a);
}


static void
rg_test_validate_not_object(void **state)
{
    char     err[128];
    json_t  *a, *s;

    s = rg_test_json(RG_TEST_CALC);

    a = rg_test_json("[1]");
    assert_int_equal(rg_tool_args_validate("calc", a, s, err, sizeof(err)),
                     RG_ERROR);
    assert_string_equal(err, "calc: the arguments must be one JSON object, "
                        "got an array");
    json_decref(a);

    a = rg_test_json("\"{}\"");
    assert_int_equal(rg_tool_args_validate("calc", a, s, err, sizeof(err)),
                     RG_ERROR);
    assert_string_equal(err, "calc: the arguments must be one JSON object, "
                        "got \"{}\"");
    json_decref(a);

    assert_int_equal(rg_tool_args_validate(NULL, NULL, s, err, sizeof(err)),
                     RG_ERROR);
    assert_string_equal(err, "the tool: the arguments must be one JSON "
                        "object, got nothing");

    json_decref(s);
}


/* validate: coercions -------------------------------------------------- */

#define RG_TEST_ONE(type)                                                    \
    "{\"properties\":{\"n\":{\"type\":" type "}}}"


static void
rg_test_coerce_integer(void **state)
{
    rg_test_valid("{\"n\":3}", RG_TEST_ONE("\"integer\""), "{\"n\":3}");
    rg_test_valid("{\"n\":\"3\"}", RG_TEST_ONE("\"integer\""), "{\"n\":3}");
    rg_test_valid("{\"n\":\"-12\"}", RG_TEST_ONE("\"integer\""),
                  "{\"n\":-12}");
    rg_test_valid("{\"n\":\" 7 \"}", RG_TEST_ONE("\"integer\""),
                  "{\"n\":7}");
    rg_test_valid("{\"n\":3.0}", RG_TEST_ONE("\"integer\""), "{\"n\":3}");
    rg_test_valid("{\"n\":-0.0}", RG_TEST_ONE("\"integer\""), "{\"n\":0}");
    rg_test_valid("{\"n\":\"3.0\"}", RG_TEST_ONE("\"integer\""),
                  "{\"n\":3}");
    rg_test_valid("{\"n\":\"1e2\"}", RG_TEST_ONE("\"integer\""),
                  "{\"n\":100}");
    rg_test_valid("{\"n\":1e15}", RG_TEST_ONE("\"integer\""),
                  "{\"n\":1000000000000000}");
    rg_test_valid("{\"n\":\"9223372036854775807\"}",
                  RG_TEST_ONE("\"integer\""),
                  "{\"n\":9223372036854775807}");

    rg_test_invalid("{\"n\":\"3.5\"}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got \"3.5\"");
    rg_test_invalid("{\"n\":3.5}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got 3.5");
    rg_test_invalid("{\"n\":\"abc\"}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got \"abc\"");
    rg_test_invalid("{\"n\":\"\"}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got \"\"");
    rg_test_invalid("{\"n\":\"3 apples\"}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got "
                    "\"3 apples\"");
    rg_test_invalid("{\"n\":\"0x10\"}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got \"0x10\"");
    rg_test_invalid("{\"n\":\"+3\"}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got \"+3\"");
    rg_test_invalid("{\"n\":\"[3]\"}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got \"[3]\"");
    rg_test_invalid("{\"n\":\"99999999999999999999\"}",
                    RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got "
                    "\"99999999999999999999\"");
    rg_test_invalid("{\"n\":1e300}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got 1e+300");
    rg_test_invalid("{\"n\":true}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got true");
    rg_test_invalid("{\"n\":null}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got null");
    rg_test_invalid("{\"n\":[3]}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got an array");
    rg_test_invalid("{\"n\":{\"v\":3}}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got an "
                    "object");
}


static void
rg_test_coerce_number(void **state)
{
    rg_test_valid("{\"n\":2.5}", RG_TEST_ONE("\"number\""), "{\"n\":2.5}");
    rg_test_valid("{\"n\":3}", RG_TEST_ONE("\"number\""), "{\"n\":3}");
    rg_test_valid("{\"n\":\"2.5\"}", RG_TEST_ONE("\"number\""),
                  "{\"n\":2.5}");
    rg_test_valid("{\"n\":\"3\"}", RG_TEST_ONE("\"number\""), "{\"n\":3}");
    rg_test_valid("{\"n\":\"-1e-3\"}", RG_TEST_ONE("\"number\""),
                  "{\"n\":-0.001}");

    rg_test_invalid("{\"n\":\"abc\"}", RG_TEST_ONE("\"number\""),
                    "calc: parameter \"n\" must be a number, got \"abc\"");
    rg_test_invalid("{\"n\":\"NaN\"}", RG_TEST_ONE("\"number\""),
                    "calc: parameter \"n\" must be a number, got \"NaN\"");
    rg_test_invalid("{\"n\":\"1e400\"}", RG_TEST_ONE("\"number\""),
                    "calc: parameter \"n\" must be a number, got \"1e400\"");
    rg_test_invalid("{\"n\":\"2,5\"}", RG_TEST_ONE("\"number\""),
                    "calc: parameter \"n\" must be a number, got \"2,5\"");
    rg_test_invalid("{\"n\":false}", RG_TEST_ONE("\"number\""),
                    "calc: parameter \"n\" must be a number, got false");
}


static void
rg_test_coerce_boolean(void **state)
{
    rg_test_valid("{\"n\":true}", RG_TEST_ONE("\"boolean\""),
                  "{\"n\":true}");
    rg_test_valid("{\"n\":\"true\"}", RG_TEST_ONE("\"boolean\""),
                  "{\"n\":true}");
    rg_test_valid("{\"n\":\"false\"}", RG_TEST_ONE("\"boolean\""),
                  "{\"n\":false}");

    rg_test_invalid("{\"n\":\"True\"}", RG_TEST_ONE("\"boolean\""),
                    "calc: parameter \"n\" must be a boolean, got \"True\"");
    rg_test_invalid("{\"n\":\"yes\"}", RG_TEST_ONE("\"boolean\""),
                    "calc: parameter \"n\" must be a boolean, got \"yes\"");
    rg_test_invalid("{\"n\":1}", RG_TEST_ONE("\"boolean\""),
                    "calc: parameter \"n\" must be a boolean, got 1");
    rg_test_invalid("{\"n\":\"1\"}", RG_TEST_ONE("\"boolean\""),
                    "calc: parameter \"n\" must be a boolean, got \"1\"");
}


static void
rg_test_coerce_string(void **state)
{
    rg_test_valid("{\"n\":\"x\"}", RG_TEST_ONE("\"string\""),
                  "{\"n\":\"x\"}");
    rg_test_valid("{\"n\":42}", RG_TEST_ONE("\"string\""),
                  "{\"n\":\"42\"}");
    rg_test_valid("{\"n\":-7}", RG_TEST_ONE("\"string\""),
                  "{\"n\":\"-7\"}");
    rg_test_valid("{\"n\":2.5}", RG_TEST_ONE("\"string\""),
                  "{\"n\":\"2.5\"}");
    rg_test_valid("{\"n\":0.1}", RG_TEST_ONE("\"string\""),
                  "{\"n\":\"0.1\"}");
    rg_test_valid("{\"n\":3.0}", RG_TEST_ONE("\"string\""),
                  "{\"n\":\"3.0\"}");
    rg_test_valid("{\"n\":1e20}", RG_TEST_ONE("\"string\""),
                  "{\"n\":\"1e+20\"}");
    rg_test_valid("{\"n\":0.30000000000000004}", RG_TEST_ONE("\"string\""),
                  "{\"n\":\"0.30000000000000004\"}");

    rg_test_invalid("{\"n\":true}", RG_TEST_ONE("\"string\""),
                    "calc: parameter \"n\" must be a string, got true");
    rg_test_invalid("{\"n\":null}", RG_TEST_ONE("\"string\""),
                    "calc: parameter \"n\" must be a string, got null");
    rg_test_invalid("{\"n\":[\"x\"]}", RG_TEST_ONE("\"string\""),
                    "calc: parameter \"n\" must be a string, got an array");
    rg_test_invalid("{\"n\":{}}", RG_TEST_ONE("\"string\""),
                    "calc: parameter \"n\" must be a string, got an object");
}


static void
rg_test_coerce_containers(void **state)
{
    /* a double-encoded object or array where one is expected */
    rg_test_valid("{\"n\":\"{\\\"a\\\":1}\"}", RG_TEST_ONE("\"object\""),
                  "{\"n\":{\"a\":1}}");
    rg_test_valid("{\"n\":\"[1,2]\"}", RG_TEST_ONE("\"array\""),
                  "{\"n\":[1,2]}");

    /* never a value wrapped into an array, nor the wrong container */
    rg_test_invalid("{\"n\":\"x\"}", RG_TEST_ONE("\"array\""),
                    "calc: parameter \"n\" must be an array, got \"x\"");
    rg_test_invalid("{\"n\":3}", RG_TEST_ONE("\"array\""),
                    "calc: parameter \"n\" must be an array, got 3");
    rg_test_invalid("{\"n\":\"{}\"}", RG_TEST_ONE("\"array\""),
                    "calc: parameter \"n\" must be an array, got \"{}\"");
    rg_test_invalid("{\"n\":\"[1]\"}", RG_TEST_ONE("\"object\""),
                    "calc: parameter \"n\" must be an object, got \"[1]\"");
    rg_test_invalid("{\"n\":\"{\\\"a\\\":1,\\\"a\\\":2}\"}",
                    RG_TEST_ONE("\"object\""),
                    "calc: parameter \"n\" must be an object, got "
                    "\"{\\\"a\\\":1,\\\"a\\\":2}\"");
    rg_test_invalid("{\"n\":\"\"}", RG_TEST_ONE("\"object\""),
                    "calc: parameter \"n\" must be an object, got \"\"");
    rg_test_invalid("{\"n\":null}", RG_TEST_ONE("\"object\""),
                    "calc: parameter \"n\" must be an object, got null");
}


static void
rg_test_coerce_types(void **state)
{
    /* a value that fits one of the types is kept as it is */
    rg_test_valid("{\"n\":null}", RG_TEST_ONE("[\"integer\",\"null\"]"),
                  "{\"n\":null}");
    rg_test_valid("{\"n\":\"5\"}", RG_TEST_ONE("[\"integer\",\"null\"]"),
                  "{\"n\":5}");
    rg_test_valid("{\"n\":5}", RG_TEST_ONE("[\"string\",\"integer\"]"),
                  "{\"n\":5}");
    rg_test_valid("{\"n\":\"5\"}", RG_TEST_ONE("[\"string\",\"integer\"]"),
                  "{\"n\":\"5\"}");
    rg_test_valid("{\"n\":\"true\"}", RG_TEST_ONE("[\"integer\",\"boolean\"]"),
                  "{\"n\":true}");
    /* otherwise the first that works: integer, number, boolean, …, string */
    rg_test_valid("{\"n\":3.0}", RG_TEST_ONE("[\"string\",\"integer\"]"),
                  "{\"n\":3}");
    rg_test_valid("{\"n\":2.5}", RG_TEST_ONE("[\"string\",\"integer\"]"),
                  "{\"n\":\"2.5\"}");
    rg_test_valid("{\"n\":\"2.5\"}", RG_TEST_ONE("[\"integer\",\"number\"]"),
                  "{\"n\":2.5}");
    rg_test_valid("{\"n\":true}", RG_TEST_ONE("[\"boolean\",\"string\"]"),
                  "{\"n\":true}");
    /* a type it does not know is left out of the list */
    rg_test_valid("{\"n\":\"4\"}", RG_TEST_ONE("[\"int\",\"integer\"]"),
                  "{\"n\":4}");

    rg_test_invalid("{\"n\":\"x\"}", RG_TEST_ONE("[\"integer\",\"null\"]"),
                    "calc: parameter \"n\" must be an integer or null, got "
                    "\"x\"");
    rg_test_invalid("{\"n\":true}",
                    RG_TEST_ONE("[\"null\",\"string\",\"number\"]"),
                    "calc: parameter \"n\" must be a number, a string or "
                    "null, got true");
    rg_test_invalid("{\"n\":\"x\"}", RG_TEST_ONE("[\"integer\",\"number\"]"),
                    "calc: parameter \"n\" must be a number, got \"x\"");
    rg_test_invalid("{\"n\":{}}",
                    RG_TEST_ONE("[\"array\",\"boolean\"]"),
                    "calc: parameter \"n\" must be a boolean or an array, "
                    "got an object");
}


static void
rg_test_coerce_in_place(void **state)
{
    char     err[128];
    json_t  *a, *s, *n;

    a = rg_test_json("{\"n\":\"3\",\"m\":\"x\"}");
    s = rg_test_json("{\"properties\":{\"n\":{\"type\":\"integer\"}}}");
    n = json_object_get(a, "m");

    assert_int_equal(rg_tool_args_validate("calc", a, s, err, sizeof(err)),
                     RG_OK);
    assert_true(json_is_integer(json_object_get(a, "n")));
    assert_int_equal(json_integer_value(json_object_get(a, "n")), 3);
    assert_ptr_equal(json_object_get(a, "m"), n);   /* untouched */

    /* coerced, then out of range: the message shows the number read */
    rg_test_invalid("{\"count\":\"11\",\"expression\":\"x\"}", RG_TEST_CALC,
                    "calc: parameter \"count\" must be an integer from 1 to "
                    "10, got 11");

    /* canonical arguments agree once coerced */
    rg_test_valid("{\"count\":\"3\",\"expression\":2}", RG_TEST_CALC,
                  "{\"count\":3,\"expression\":\"2\"}");

    json_decref(a);
    json_decref(s);
}


/* validate: numbers, strings, enums, arrays ---------------------------- */

static void
rg_test_validate_range(void **state)
{
    rg_test_valid("{\"expression\":\"x\",\"count\":1}", RG_TEST_CALC,
                  "{\"count\":1,\"expression\":\"x\"}");
    rg_test_valid("{\"expression\":\"x\",\"count\":10}", RG_TEST_CALC,
                  "{\"count\":10,\"expression\":\"x\"}");
    rg_test_valid("{\"expression\":\"x\",\"count\":10.0}", RG_TEST_CALC,
                  "{\"count\":10,\"expression\":\"x\"}");

    rg_test_invalid("{\"expression\":\"x\",\"count\":\"abc\"}", RG_TEST_CALC,
                    "calc: parameter \"count\" must be an integer from 1 to "
                    "10, got \"abc\"");
    rg_test_invalid("{\"expression\":\"x\",\"count\":0}", RG_TEST_CALC,
                    "calc: parameter \"count\" must be an integer from 1 to "
                    "10, got 0");
    rg_test_invalid("{\"expression\":\"x\",\"count\":11}", RG_TEST_CALC,
                    "calc: parameter \"count\" must be an integer from 1 to "
                    "10, got 11");
    rg_test_invalid("{\"expression\":\"x\",\"count\":5.5}", RG_TEST_CALC,
                    "calc: parameter \"count\" must be an integer from 1 to "
                    "10, got 5.5");

    rg_test_invalid("{\"n\":0}",
                    RG_TEST_ONE("\"integer\",\"minimum\":1"),
                    "calc: parameter \"n\" must be an integer of at least 1, "
                    "got 0");
    rg_test_invalid("{\"n\":11}",
                    RG_TEST_ONE("\"integer\",\"maximum\":10"),
                    "calc: parameter \"n\" must be an integer of at most 10, "
                    "got 11");
    rg_test_invalid("{\"n\":0}",
                    RG_TEST_ONE("\"number\",\"exclusiveMinimum\":0"),
                    "calc: parameter \"n\" must be a number greater than 0, "
                    "got 0");
    rg_test_valid("{\"n\":0.001}",
                  RG_TEST_ONE("\"number\",\"exclusiveMinimum\":0"),
                  "{\"n\":0.001}");
    rg_test_invalid("{\"n\":1}",
                    RG_TEST_ONE("\"number\",\"exclusiveMaximum\":1"),
                    "calc: parameter \"n\" must be a number less than 1, "
                    "got 1");
    rg_test_invalid("{\"n\":1}",
                    RG_TEST_ONE("\"number\",\"minimum\":0,"
                                "\"exclusiveMaximum\":1"),
                    "calc: parameter \"n\" must be a number of at least 0 "
                    "and less than 1, got 1");
    rg_test_invalid("{\"n\":1.5}",
                    RG_TEST_ONE("\"number\",\"exclusiveMinimum\":0,"
                                "\"maximum\":1"),
                    "calc: parameter \"n\" must be a number greater than 0 "
                    "and at most 1, got 1.5");
    rg_test_invalid("{\"n\":-1}",
                    RG_TEST_ONE("\"number\",\"exclusiveMinimum\":-1,"
                                "\"exclusiveMaximum\":1"),
                    "calc: parameter \"n\" must be a number greater than -1 "
                    "and less than 1, got -1");
    rg_test_invalid("{\"n\":0.25}",
                    RG_TEST_ONE("\"number\",\"minimum\":0.5,\"maximum\":2.0"),
                    "calc: parameter \"n\" must be a number from 0.5 to 2.0, "
                    "got 0.25");
    /* draft 4: booleans that make minimum and maximum exclusive */
    rg_test_invalid("{\"n\":0}",
                    RG_TEST_ONE("\"number\",\"minimum\":0,"
                                "\"exclusiveMinimum\":true"),
                    "calc: parameter \"n\" must be a number greater than 0, "
                    "got 0");
    rg_test_invalid("{\"n\":5}",
                    RG_TEST_ONE("\"number\",\"maximum\":5,"
                                "\"exclusiveMaximum\":true"),
                    "calc: parameter \"n\" must be a number less than 5, "
                    "got 5");
    rg_test_valid("{\"n\":0}",
                  RG_TEST_ONE("\"number\",\"minimum\":0,"
                              "\"exclusiveMinimum\":false"),
                  "{\"n\":0}");
    /* both forms: the stricter one counts */
    rg_test_invalid("{\"n\":2}",
                    RG_TEST_ONE("\"number\",\"minimum\":1,"
                                "\"exclusiveMinimum\":2"),
                    "calc: parameter \"n\" must be a number greater than 2, "
                    "got 2");
    rg_test_invalid("{\"n\":3.5}",
                    RG_TEST_ONE("\"number\",\"maximum\":3,"
                                "\"exclusiveMaximum\":4"),
                    "calc: parameter \"n\" must be a number of at most 3, "
                    "got 3.5");
}


static void
rg_test_validate_range_untyped(void **state)
{
    /* no type: a number is held to the range, anything else is not */
    rg_test_invalid("{\"n\":0}", "{\"properties\":{\"n\":{\"minimum\":1}}}",
                    "calc: parameter \"n\" must be a number of at least 1, "
                    "got 0");
    rg_test_valid("{\"n\":\"0\"}", "{\"properties\":{\"n\":{\"minimum\":1}}}",
                  "{\"n\":\"0\"}");
    /* and with types that are not numbers, it says a number */
    rg_test_invalid("{\"n\":0}",
                    "{\"properties\":{\"n\":{\"type\":[\"string\",\"integer\"],"
                    "\"minimum\":1}}}",
                    "calc: parameter \"n\" must be an integer of at least 1 "
                    "or a string, got 0");
    rg_test_invalid("{\"n\":\"x\"}",
                    "{\"properties\":{\"n\":{\"type\":[\"integer\",\"null\"],"
                    "\"minimum\":1,\"maximum\":10}}}",
                    "calc: parameter \"n\" must be an integer from 1 to 10 "
                    "or null, got \"x\"");
}


static void
rg_test_validate_enum(void **state)
{
    rg_test_valid("{\"expression\":\"x\",\"unit\":\"c\"}", RG_TEST_CALC,
                  "{\"expression\":\"x\",\"unit\":\"c\"}");
    rg_test_invalid("{\"expression\":\"x\",\"unit\":\"k\"}", RG_TEST_CALC,
                    "calc: parameter \"unit\" must be one of \"c\", \"f\"; "
                    "got \"k\"");
    rg_test_invalid("{\"expression\":\"x\",\"unit\":\"C\"}", RG_TEST_CALC,
                    "calc: parameter \"unit\" must be one of \"c\", \"f\"; "
                    "got \"C\"");
    rg_test_invalid("{\"n\":\"b\"}",
                    RG_TEST_ONE("\"string\",\"enum\":[\"a\"]"),
                    "calc: parameter \"n\" must be \"a\", got \"b\"");
    /* numbers compare as numbers */
    rg_test_valid("{\"n\":2.0}", "{\"properties\":{\"n\":{\"enum\":[1,2,3]}}}",
                  "{\"n\":2.0}");
    rg_test_invalid("{\"n\":4}",
                    "{\"properties\":{\"n\":{\"enum\":[1,2.5,\"x\",null,"
                    "true]}}}",
                    "calc: parameter \"n\" must be one of 1, 2.5, \"x\", "
                    "null, true; got 4");
    rg_test_invalid("{\"n\":\"2\"}",
                    "{\"properties\":{\"n\":{\"enum\":[1,2]}}}",
                    "calc: parameter \"n\" must be one of 1, 2; got \"2\"");
    /* coerced first, then held to the list */
    rg_test_valid("{\"n\":2}",
                  RG_TEST_ONE("\"string\",\"enum\":[\"1\",\"2\"]"),
                  "{\"n\":\"2\"}");
    rg_test_valid("{\"n\":\"2\"}",
                  RG_TEST_ONE("\"integer\",\"enum\":[1,2]"),
                  "{\"n\":2}");
    /* a long list is cut after 20 */
    rg_test_invalid("{\"n\":0}",
                    "{\"properties\":{\"n\":{\"enum\":[1,2,3,4,5,6,7,8,9,10,"
                    "11,12,13,14,15,16,17,18,19,20,21,22]}}}",
                    "calc: parameter \"n\" must be one of 1, 2, 3, 4, 5, 6, "
                    "7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, …; "
                    "got 0");
}


static void
rg_test_validate_string(void **state)
{
    char   args[256];
    char  *s;

    /* 64 characters fit, 65 do not */
    s = rg_test_text(64, NULL, 0);
    snprintf(args, sizeof(args), "{\"expression\":\"%s\"}", s);
    rg_test_valid(args, RG_TEST_CALC, args);
    free(s);

    s = rg_test_text(65, NULL, 0);
    snprintf(args, sizeof(args), "{\"expression\":\"%s\"}", s);
    rg_test_invalid(args, RG_TEST_CALC,
                    "calc: parameter \"expression\" is longer than 64 "
                    "characters");
    free(s);

    /* characters, not bytes: 3 × "é" is 6 bytes and 3 characters */
    rg_test_valid("{\"n\":\"\xc3\xa9\xc3\xa9\xc3\xa9\"}",
                  RG_TEST_ONE("\"string\",\"maxLength\":3"),
                  "{\"n\":\"\xc3\xa9\xc3\xa9\xc3\xa9\"}");
    rg_test_invalid("{\"n\":\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\"}",
                    RG_TEST_ONE("\"string\",\"maxLength\":1"),
                    "calc: parameter \"n\" is longer than 1 character");
    rg_test_invalid("{\"n\":\"\"}",
                    RG_TEST_ONE("\"string\",\"minLength\":1"),
                    "calc: parameter \"n\" must not be empty");
    rg_test_invalid("{\"n\":\"ab\"}",
                    RG_TEST_ONE("\"string\",\"minLength\":3"),
                    "calc: parameter \"n\" is shorter than 3 characters");
    rg_test_valid("{\"n\":\"\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\"}",
                  RG_TEST_ONE("\"string\",\"minLength\":3"),
                  "{\"n\":\"\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\"}");
    /* the length of a coerced number is its text's */
    rg_test_invalid("{\"n\":12345}",
                    RG_TEST_ONE("\"string\",\"maxLength\":4"),
                    "calc: parameter \"n\" is longer than 4 characters");
}


static void
rg_test_validate_got(void **state)
{
    /* long strings are cut in messages, at a character boundary */
    rg_test_invalid("{\"n\":\"aaaaaaaaaaaaaaaaaaaaaaaa"
                    "aaaaaaaaaaaaaaaaaaaaaaaa\"}",
                    RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got "
                    "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…\"");
    rg_test_invalid("{\"n\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                    "\xe2\x82\xac" "bbbb\"}",
                    RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got "
                    "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…\"");
    /* exactly 40 bytes: not cut */
    rg_test_invalid("{\"n\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
                    RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got "
                    "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"");
    /* quotes, backslashes and newlines are shown escaped: one line */
    rg_test_invalid("{\"n\":\"a\\\"b\\\\c\\nd\"}", RG_TEST_ONE("\"integer\""),
                    "calc: parameter \"n\" must be an integer, got "
                    "\"a\\\"b\\\\c\\nd\"");
}


static void
rg_test_validate_array(void **state)
{
    const char  *schema;

    schema = "{\"properties\":{\"tags\":{\"type\":\"array\",\"minItems\":1,"
             "\"maxItems\":3,\"items\":{\"type\":\"string\"}}}}";

    rg_test_valid("{\"tags\":[\"a\"]}", schema, "{\"tags\":[\"a\"]}");
    rg_test_valid("{\"tags\":[1,\"b\",2.5]}", schema,
                  "{\"tags\":[\"1\",\"b\",\"2.5\"]}");
    rg_test_valid("{\"tags\":\"[1]\"}", schema, "{\"tags\":[\"1\"]}");

    rg_test_invalid("{\"tags\":[]}", schema,
                    "calc: parameter \"tags\" must have at least 1 item");
    rg_test_invalid("{\"tags\":[\"a\",\"b\",\"c\",\"d\"]}", schema,
                    "calc: parameter \"tags\" must have at most 3 items");
    rg_test_invalid("{\"tags\":[\"a\",true]}", schema,
                    "calc: parameter \"tags[1]\" must be a string, got "
                    "true");
    rg_test_invalid("{\"tags\":\"a\"}", schema,
                    "calc: parameter \"tags\" must be an array, got \"a\"");

    rg_test_invalid("{\"ids\":[\"1\",\"x\"]}",
                    "{\"properties\":{\"ids\":{\"items\":{\"type\":"
                    "\"integer\"},\"minItems\":2}}}",
                    "calc: parameter \"ids[1]\" must be an integer, got "
                    "\"x\"");
    rg_test_invalid("{\"ids\":[]}",
                    "{\"properties\":{\"ids\":{\"minItems\":2}}}",
                    "calc: parameter \"ids\" must have at least 2 items");
    rg_test_invalid("{\"ids\":[1,2]}",
                    "{\"properties\":{\"ids\":{\"maxItems\":1}}}",
                    "calc: parameter \"ids\" must have at most 1 item");
}


/* validate: nesting ---------------------------------------------------- */

#define RG_TEST_NESTED                                                       \
    "{\"type\":\"object\",\"properties\":{"                                  \
    "\"filter\":{\"type\":\"object\",\"properties\":{"                       \
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100},"        \
    "\"offset\":{\"type\":\"integer\"}},"                                    \
    "\"required\":[\"limit\"],\"additionalProperties\":false},"              \
    "\"rows\":{\"type\":\"array\",\"items\":{\"type\":\"object\","           \
    "\"properties\":{\"id\":{\"type\":\"integer\"},"                         \
    "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"y\"]}}},"     \
    "\"required\":[\"id\"]}}},"                                              \
    "\"required\":[\"filter\"]}"


static void
rg_test_validate_nested(void **state)
{
    rg_test_valid("{\"filter\":{\"limit\":\"5\",\"offset\":2.0},"
                  "\"rows\":[{\"id\":\"1\"},{\"id\":2,\"tags\":[\"y\"]}]}",
                  RG_TEST_NESTED,
                  "{\"filter\":{\"limit\":5,\"offset\":2},"
                  "\"rows\":[{\"id\":1},{\"id\":2,\"tags\":[\"y\"]}]}");
    /* a double-encoded nested object, coerced inside too */
    rg_test_valid("{\"filter\":\"{\\\"limit\\\":\\\"7\\\"}\"}",
                  RG_TEST_NESTED, "{\"filter\":{\"limit\":7}}");

    rg_test_invalid("{\"filter\":{\"limit\":\"many\"}}", RG_TEST_NESTED,
                    "calc: parameter \"filter.limit\" must be an integer "
                    "from 1 to 100, got \"many\"");
    rg_test_invalid("{\"filter\":{}}", RG_TEST_NESTED,
                    "calc: parameter \"filter.limit\" is required");
    rg_test_invalid("{\"filter\":{\"limit\":1,\"foo\":2}}", RG_TEST_NESTED,
                    "calc: unknown parameter \"filter.foo\"; the parameters "
                    "are: limit, offset");
    rg_test_invalid("{\"filter\":3}", RG_TEST_NESTED,
                    "calc: parameter \"filter\" must be an object, got 3");
    rg_test_invalid("{\"filter\":{\"limit\":1},\"rows\":[{\"id\":1},{}]}",
                    RG_TEST_NESTED,
                    "calc: parameter \"rows[1].id\" is required");
    rg_test_invalid("{\"filter\":{\"limit\":1},"
                    "\"rows\":[{\"id\":1,\"tags\":[\"x\",\"z\"]}]}",
                    RG_TEST_NESTED,
                    "calc: parameter \"rows[0].tags[1]\" must be one of "
                    "\"x\", \"y\"; got \"z\"");
    rg_test_invalid("{\"rows\":[]}", RG_TEST_NESTED,
                    "calc: parameter \"filter\" is required");

    rg_test_invalid("{\"o\":{\"x\":1}}",
                    "{\"properties\":{\"o\":{\"type\":\"object\","
                    "\"additionalProperties\":false}}}",
                    "calc: unknown parameter \"o.x\"; \"o\" takes no "
                    "parameters");
}


static void
rg_test_validate_additional(void **state)
{
    const char  *schema;

    schema = "{\"properties\":{\"a\":{\"type\":\"string\"}},"
             "\"additionalProperties\":{\"type\":\"integer\"}}";

    rg_test_valid("{\"a\":1,\"x\":\"5\",\"y\":6}", schema,
                  "{\"a\":\"1\",\"x\":5,\"y\":6}");
    rg_test_invalid("{\"a\":\"s\",\"x\":\"5\",\"y\":\"z\"}", schema,
                    "calc: parameter \"y\" must be an integer, got \"z\"");
}


static void
rg_test_validate_deep(void **state)
{
    int      i;
    char     err[128];
    json_t  *a, *s, *inner, *sub;

    /* 40 levels of {"d": …}: checked down to 32, not below */

    s = rg_test_json("{\"type\":\"integer\"}");
    a = json_string("x");

    for (i = 0; i < 40; i++) {
        sub = json_object();
        json_object_set_new(sub, "properties", json_pack("{s:o}", "d", s));
        json_object_set_new(sub, "required", json_pack("[s]", "d"));
        s = sub;

        inner = json_object();
        json_object_set_new(inner, "d", a);
        a = inner;
    }

    assert_int_equal(rg_tool_args_validate("calc", a, s, err, sizeof(err)),
                     RG_OK);
    json_decref(a);

    /* an empty one at level 3 is reported with its whole path */
    a = rg_test_json("{\"d\":{\"d\":{}}}");
    assert_int_equal(rg_tool_args_validate("calc", a, s, err, sizeof(err)),
                     RG_ERROR);
    assert_string_equal(err, "calc: parameter \"d.d.d\" is required");
    json_decref(a);

    json_decref(s);
}


static void
rg_test_validate_err_cut(void **state)
{
    char     err[24];
    json_t  *a, *s;

    a = rg_test_json("{}");
    s = rg_test_json(RG_TEST_CALC);

    assert_int_equal(rg_tool_args_validate("calc", a, s, err, sizeof(err)),
                     RG_ERROR);
    assert_string_equal(err, "calc: parameter \"expres");

    assert_int_equal(rg_tool_args_validate("calc", a, s, NULL, 0), RG_ERROR);

    json_decref(a);
    json_decref(s);
}


/* trim ----------------------------------------------------------------- */

static void
rg_test_trim_ascii(void **state)
{
    char      *s;
    size_t     left;
    rg_buf_t   out;

    s = rg_test_text(1000, NULL, 0);

    /* up to the limit: a copy */
    rg_test_trim(s, 0, 100, 0, 0);
    rg_test_trim(s, 99, 100, 99, 99);
    rg_test_trim(s, 100, 100, 100, 100);

    /* one over: 70 from the head, 20 from the tail, 11 left out */
    rg_test_trim(s, 101, 100, 70, 81);
    rg_test_trim(s, 1000, 100, 70, 980);
    rg_test_trim(s, 1000, 101, 70, 980);
    rg_test_trim(s, 1000, 109, 76, 979);
    rg_test_trim(s, 1000, 110, 77, 978);

    /* the whole output, once, in full */
    memset(&out, 0, sizeof(rg_buf_t));
    left = rg_tool_trim("abcdefghijklmnopqrstuvwxyz", 26, 10, &out);
    assert_int_equal(left, 17);
    assert_string_equal(out.data, "abcdefg\n[… 17 bytes left out …]\nyz");
    assert_int_equal(out.len, 7 + 29 + 2);

    /* appends to what is there */
    rg_buf_reset(&out);
    rg_buf_append_lit(&out, "X:");
    left = rg_tool_trim("abc", 3, 10, &out);
    assert_int_equal(left, 0);
    assert_string_equal(out.data, "X:abc");
    assert_int_equal(out.len, 5);

    left = rg_tool_trim(s, 5, (size_t) -1, &out);
    assert_int_equal(left, 0);
    assert_string_equal(out.data, "X:abc01234");

    rg_buf_free(&out);
    free(s);
}


static void
rg_test_trim_tiny(void **state)
{
    size_t     left;
    rg_buf_t   out;

    memset(&out, 0, sizeof(rg_buf_t));

    /* limit 0 and 1: nothing kept but the marker */
    rg_test_trim("abcde", 5, 0, 0, 5);
    rg_test_trim("abcde", 5, 1, 0, 5);
    rg_test_trim("a", 1, 1, 1, 1);
    rg_test_trim("", 0, 0, 0, 0);

    left = rg_tool_trim("abcde", 5, 0, &out);
    assert_int_equal(left, 5);
    assert_string_equal(out.data, "\n[… 5 bytes left out …]\n");

    /* limit 5: 3 from the head, 1 from the tail */
    rg_test_trim("abcdefgh", 8, 5, 3, 7);
    rg_test_trim("abcdef", 6, 5, 3, 5);
    rg_test_trim("abcde", 5, 5, 5, 5);

    rg_buf_reset(&out);
    left = rg_tool_trim("abcdefgh", 8, 5, &out);
    assert_int_equal(left, 4);
    assert_string_equal(out.data, "abc\n[… 4 bytes left out …]\nh");

    /* a 3-byte character fits the head; the tail cut lands in one */
    rg_test_trim("\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", 9, 5, 3, 9);
    /* a 4-byte character does not fit a head of 3 */
    rg_test_trim("\xf0\x9f\x98\x80" "abcd", 8, 5, 0, 7);
    rg_test_trim("ab\xc3\xa9" "cdef", 8, 5, 2, 7);

    rg_buf_free(&out);
}


static void
rg_test_trim_utf8_head(void **state)
{
    char    *s;
    size_t   i;

    /* limit 100: the head cut is at 70 */

    /* 2 bytes: at 68..69 it fits; at 69..70 it is left out */
    s = rg_test_text(200, "\xc3\xa9", 68);
    rg_test_trim(s, 200, 100, 70, 180);
    free(s);
    s = rg_test_text(200, "\xc3\xa9", 69);
    rg_test_trim(s, 200, 100, 69, 180);
    free(s);
    s = rg_test_text(200, "\xc3\xa9", 70);
    rg_test_trim(s, 200, 100, 70, 180);
    free(s);

    /* 3 bytes */
    s = rg_test_text(200, "\xe2\x82\xac", 67);
    rg_test_trim(s, 200, 100, 70, 180);
    free(s);
    s = rg_test_text(200, "\xe2\x82\xac", 68);
    rg_test_trim(s, 200, 100, 68, 180);
    free(s);
    s = rg_test_text(200, "\xe2\x82\xac", 69);
    rg_test_trim(s, 200, 100, 69, 180);
    free(s);

    /* 4 bytes */
    s = rg_test_text(200, "\xf0\x9f\x98\x80", 66);
    rg_test_trim(s, 200, 100, 70, 180);
    free(s);
    s = rg_test_text(200, "\xf0\x9f\x98\x80", 67);
    rg_test_trim(s, 200, 100, 67, 180);
    free(s);
    s = rg_test_text(200, "\xf0\x9f\x98\x80", 68);
    rg_test_trim(s, 200, 100, 68, 180);
    free(s);
    s = rg_test_text(200, "\xf0\x9f\x98\x80", 69);
    rg_test_trim(s, 200, 100, 69, 180);
    free(s);

    /* all multi-byte: "€" × 100; 70 → 69 (23 whole characters) */
    s = malloc(300);
    assert_non_null(s);
    for (i = 0; i < 100; i++) {
        memcpy(s + 3 * i, "\xe2\x82\xac", 3);
    }
    /* tail: 300 - 20 = 280 = 3 × 93 + 1: forward to 282 */
    rg_test_trim(s, 300, 100, 69, 282);
    free(s);
}


static void
rg_test_trim_utf8_tail(void **state)
{
    char  *s;

    /* limit 100, length 200: the tail cut is at 180 */

    /* 2 bytes: at 179..180 it is left out; at 180..181 it is kept */
    s = rg_test_text(200, "\xc3\xa9", 179);
    rg_test_trim(s, 200, 100, 70, 181);
    free(s);
    s = rg_test_text(200, "\xc3\xa9", 180);
    rg_test_trim(s, 200, 100, 70, 180);
    free(s);

    /* 3 bytes */
    s = rg_test_text(200, "\xe2\x82\xac", 178);
    rg_test_trim(s, 200, 100, 70, 181);
    free(s);
    s = rg_test_text(200, "\xe2\x82\xac", 179);
    rg_test_trim(s, 200, 100, 70, 182);
    free(s);
    s = rg_test_text(200, "\xe2\x82\xac", 180);
    rg_test_trim(s, 200, 100, 70, 180);
    free(s);

    /* 4 bytes */
    s = rg_test_text(200, "\xf0\x9f\x98\x80", 177);
    rg_test_trim(s, 200, 100, 70, 181);
    free(s);
    s = rg_test_text(200, "\xf0\x9f\x98\x80", 178);
    rg_test_trim(s, 200, 100, 70, 182);
    free(s);
    s = rg_test_text(200, "\xf0\x9f\x98\x80", 179);
    rg_test_trim(s, 200, 100, 70, 183);
    free(s);
    s = rg_test_text(200, "\xf0\x9f\x98\x80", 180);
    rg_test_trim(s, 200, 100, 70, 180);
    free(s);

    /* the last character of the text cut: the tail is empty */
    s = rg_test_text(104, "\xf0\x9f\x98\x80", 100);
    rg_test_trim(s, 104, 10, 7, 104);
    free(s);
}


static void
rg_test_trim_invalid(void **state)
{
    char  *s;

    /* continuation bytes only: at most 3 bytes of back-off either way */
    s = malloc(200);
    assert_non_null(s);
    memset(s, 0x80, 200);
    rg_test_trim(s, 200, 100, 70, 183);
    free(s);

    /* a lone lead byte before the head cut is left out with its bytes */
    s = rg_test_text(200, "\xf0", 69);
    rg_test_trim(s, 200, 100, 69, 180);
    free(s);
    s = rg_test_text(200, "\xff", 69);
    rg_test_trim(s, 200, 100, 69, 180);
    free(s);
    /* a stray continuation at the cuts, after ASCII: cut as it is */
    s = rg_test_text(200, "\x80", 69);
    rg_test_trim(s, 200, 100, 70, 180);
    free(s);
    s = rg_test_text(200, "\x80\x80", 180);
    rg_test_trim(s, 200, 100, 70, 182);
    free(s);
    /* a truncated character at the very end of the input */
    s = rg_test_text(200, "\xe2\x82", 198);
    rg_test_trim(s, 200, 100, 70, 180);
    free(s);
    s = rg_test_text(101, "\xe2\x82", 99);
    rg_test_trim(s, 101, 100, 70, 81);
    free(s);
    /* lead bytes at the tail cut */
    s = malloc(200);
    assert_non_null(s);
    memset(s, 0xf0, 200);
    rg_test_trim(s, 200, 100, 69, 180);
    free(s);
}


/* canonical JSON ------------------------------------------------------- */

static void
rg_test_canonical(void **state)
{
    char     *s;
    json_t   *a, *b;
    size_t    len;

    a = rg_test_json("{\"b\":1,\"a\":{\"d\":[3,{\"z\":1,\"y\":2}],\"c\":\"x\"},"
                     "\"A\":null,\"_\":true}");
    b = rg_test_json("{\"_\":true,\"a\":{\"c\":\"x\",\"d\":[3,{\"y\":2,"
                     "\"z\":1}]},\"A\":null, \"b\" : 1}");

    rg_test_canonical_at(a, "{\"A\":null,\"_\":true,\"a\":{\"c\":\"x\","
                         "\"d\":[3,{\"y\":2,\"z\":1}]},\"b\":1}",
                         __FILE__, __LINE__);
    rg_test_canonical_at(b, "{\"A\":null,\"_\":true,\"a\":{\"c\":\"x\","
                         "\"d\":[3,{\"y\":2,\"z\":1}]},\"b\":1}",
                         __FILE__, __LINE__);
    json_decref(a);
    json_decref(b);

    /* arrays keep their order; strings as JSON writes them */
    a = rg_test_json("{\"k\":[\"b\",\"a\"],\"s\":\"q\\\"\\\\\\n\\u0001/\","
                     "\"\xc3\xa9\":\"\xe2\x82\xac\",\"r\":2.5,\"i\":-3}");
    rg_test_canonical_at(a, "{\"i\":-3,\"k\":[\"b\",\"a\"],\"r\":2.5,"
                         "\"s\":\"q\\\"\\\\\\n\\u0001/\","
                         "\"\xc3\xa9\":\"\xe2\x82\xac\"}",
                         __FILE__, __LINE__);
    json_decref(a);

    a = json_object();
    rg_test_canonical_at(a, "{}", __FILE__, __LINE__);
    json_decref(a);

    len = 99;
    s = rg_tool_args_canonical(NULL, &len);
    assert_null(s);
    assert_int_equal(len, 0);

    /* the dedupe key of "3" and 3 is the same once validated */
    rg_test_valid("{\"n\":\"3\"}", RG_TEST_ONE("\"integer\""), "{\"n\":3}");
    rg_test_valid("{\"n\":3}", RG_TEST_ONE("\"integer\""), "{\"n\":3}");
}


/* error objects -------------------------------------------------------- */

static void
rg_test_error_json_at(const char *error, const char *hint,
    const char *expect, const char *file, int line)
{
    char    *s;
    size_t   len;

    len = 99;
    s = rg_tool_error_json(error, hint, &len);

    _assert_true(s != NULL, "error json", file, line);
    _assert_string_equal(s, expect, file, line);
    _assert_int_equal(len, strlen(expect), file, line);

    free(s);
}

#define rg_test_error_json(error, hint, expect)                              \
    rg_test_error_json_at(error, hint, expect, __FILE__, __LINE__)


static void
rg_test_error_object(void **state)
{
    char    *s, *long_s, *expect;
    size_t   i;

    rg_test_error_json("boom", NULL, "{\"error\":\"boom\"}");
    rg_test_error_json("boom", "try a smaller file",
                       "{\"error\":\"boom\",\"hint\":\"try a smaller file\"}");
    rg_test_error_json(NULL, NULL, "{\"error\":\"\"}");
    rg_test_error_json("", "", "{\"error\":\"\",\"hint\":\"\"}");

    /* escaping: quotes, backslashes, control characters; UTF-8 kept */
    rg_test_error_json("say \"hi\" \\ then\nnew\ttab\x01\x1f end",
                       "\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80 / </script>",
                       "{\"error\":\"say \\\"hi\\\" \\\\ then\\nnew\\ttab"
                       "\\u0001\\u001F end\",\"hint\":\"\xc3\xbc\xe2\x82\xac"
                       "\xf0\x9f\x98\x80 / </script>\"}");

    /* invalid UTF-8 becomes U+FFFD */
    rg_test_error_json("a\xff" "b\xc3(c\xe2\x82", NULL,
                       "{\"error\":\"a\xef\xbf\xbd" "b\xef\xbf\xbd(c"
                       "\xef\xbf\xbd\xef\xbf\xbd\"}");

    s = rg_tool_error_json("x", NULL, NULL);
    assert_string_equal(s, "{\"error\":\"x\"}");
    free(s);

    /* 500 bytes are kept whole; 501 are cut to 497 and "…" */
    long_s = malloc(1000);
    expect = malloc(1100);
    assert_non_null(long_s);
    assert_non_null(expect);

    memset(long_s, 'a', 500);
    long_s[500] = '\0';
    snprintf(expect, 1100, "{\"error\":\"%s\"}", long_s);
    rg_test_error_json(long_s, NULL, expect);

    memset(long_s, 'a', 501);
    long_s[501] = '\0';
    snprintf(expect, 1100, "{\"error\":\"%.497s…\"}", long_s);
    rg_test_error_json(long_s, NULL, expect);
    assert_int_equal(strlen(expect), 10 + 500 + 2);

    /* the hint is cut the same way */
    snprintf(expect, 1100, "{\"error\":\"e\",\"hint\":\"%.497s…\"}", long_s);
    rg_test_error_json("e", long_s, expect);

    /* a character across the cut is left out whole: 496 + "€" > 497 */
    memset(long_s, 'a', 496);
    strcpy(long_s + 496, "\xe2\x82\xac" "zz");
    snprintf(expect, 1100, "{\"error\":\"%.496s…\"}", long_s);
    rg_test_error_json(long_s, NULL, expect);

    /* 497 + "€" = 500: whole */
    memset(long_s, 'a', 497);
    strcpy(long_s + 497, "\xe2\x82\xac");
    snprintf(expect, 1100, "{\"error\":\"%s\"}", long_s);
    rg_test_error_json(long_s, NULL, expect);

    /* a long run of escapes is counted before escaping */
    for (i = 0; i < 600; i++) {
        long_s[i] = '"';
    }
    long_s[600] = '\0';
    s = rg_tool_error_json(long_s, NULL, NULL);
    assert_non_null(s);
    assert_int_equal(strlen(s), 10 + 497 * 2 + 3 + 2);
    free(s);

    free(long_s);
    free(expect);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rg_test_parse_plain),
        cmocka_unit_test(rg_test_parse_blanks),
        cmocka_unit_test(rg_test_parse_fence),
        cmocka_unit_test(rg_test_parse_string),
        cmocka_unit_test(rg_test_parse_array),
        cmocka_unit_test(rg_test_parse_empty),
        cmocka_unit_test(rg_test_parse_repair_names),
        cmocka_unit_test(rg_test_parse_invalid),
        cmocka_unit_test(rg_test_parse_positions),
        cmocka_unit_test(rg_test_parse_no_prose),
        cmocka_unit_test(rg_test_parse_not_object),
        cmocka_unit_test(rg_test_parse_bytes),
        cmocka_unit_test(rg_test_parse_err_cut),
        cmocka_unit_test(rg_test_validate_object),
        cmocka_unit_test(rg_test_validate_unknown_long),
        cmocka_unit_test(rg_test_validate_schema_none),
        cmocka_unit_test(rg_test_validate_not_object),
        cmocka_unit_test(rg_test_coerce_integer),
        cmocka_unit_test(rg_test_coerce_number),
        cmocka_unit_test(rg_test_coerce_boolean),
        cmocka_unit_test(rg_test_coerce_string),
        cmocka_unit_test(rg_test_coerce_containers),
        cmocka_unit_test(rg_test_coerce_types),
        cmocka_unit_test(rg_test_coerce_in_place),
        cmocka_unit_test(rg_test_validate_range),
        cmocka_unit_test(rg_test_validate_range_untyped),
        cmocka_unit_test(rg_test_validate_enum),
        cmocka_unit_test(rg_test_validate_string),
        cmocka_unit_test(rg_test_validate_got),
        cmocka_unit_test(rg_test_validate_array),
        cmocka_unit_test(rg_test_validate_nested),
        cmocka_unit_test(rg_test_validate_additional),
        cmocka_unit_test(rg_test_validate_deep),
        cmocka_unit_test(rg_test_validate_err_cut),
        cmocka_unit_test(rg_test_trim_ascii),
        cmocka_unit_test(rg_test_trim_tiny),
        cmocka_unit_test(rg_test_trim_utf8_head),
        cmocka_unit_test(rg_test_trim_utf8_tail),
        cmocka_unit_test(rg_test_trim_invalid),
        cmocka_unit_test(rg_test_canonical),
        cmocka_unit_test(rg_test_error_object),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
