/* fuzz_tool_args.c: libFuzzer target for the argument hygiene of
 * src/tools/rg_tool_args.h: repair (rg_tool_args_parse), schema checks and
 * coercion (rg_tool_args_validate), canonical JSON, trimming and the
 * model's error objects. The input is a JSON Schema, a NUL byte, then the
 * arguments as a model sent them; a schema that does not parse is taken
 * from a few built in ones instead, picked by the input's first byte,
 * which also sets the trim limit. Besides the sanitizers, it checks what
 * the header promises: an object or an error, never both; every error one
 * line of valid UTF-8 without control characters, NUL-ended within its
 * buffer; canonical JSON that reads back as the same value and prints the
 * same bytes again; a trim that keeps UTF-8 valid, stays within its limit
 * and its marker, and says how much it left out. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_args.h>

#include <jansson.h>


#define rg_fuzz_check(cond)                                                  \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);       \
            abort();                                                         \
        }                                                                    \
    } while (0)

/* "\n[… N bytes left out …]\n" with N of up to 20 digits */
#define RG_FUZZ_MARKER_MAX  64


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static const char  *rg_fuzz_schemas[] = {
    "{\"type\":\"object\",\"properties\":{"
     "\"expression\":{\"type\":\"string\",\"minLength\":1,"
      "\"maxLength\":64}},\"required\":[\"expression\"]}",

    "{\"type\":\"object\",\"properties\":{"
     "\"count\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10},"
     "\"ratio\":{\"type\":\"number\",\"exclusiveMinimum\":0},"
     "\"flag\":{\"type\":\"boolean\"},"
     "\"unit\":{\"enum\":[\"c\",\"f\"]}},"
     "\"additionalProperties\":false}",

    "{\"type\":\"object\",\"properties\":{"
     "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
      "\"minItems\":1,\"maxItems\":3},"
     "\"filter\":{\"type\":\"object\",\"properties\":{"
      "\"limit\":{\"type\":[\"integer\",\"null\"]}},"
      "\"required\":[\"limit\"]}}}",

    "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}",

    "true"
};


/* one line for the model: valid UTF-8, no control characters */
static void
rg_fuzz_line(const char *s, size_t max)
{
    size_t   i, len;
    json_t  *j;

    len = strnlen(s, max);
    rg_fuzz_check(len < max);

    for (i = 0; i < len; i++) {
        rg_fuzz_check((unsigned char) s[i] >= 0x20 && s[i] != 0x7f);
    }

    j = json_stringn(s, len);            /* NULL unless valid UTF-8 */
    rg_fuzz_check(j != NULL);
    json_decref(j);
}


static int
rg_fuzz_utf8(const char *s, size_t len)
{
    json_t  *j;

    j = json_stringn(s, len);
    json_decref(j);

    return j != NULL;
}


static void
rg_fuzz_canonical(json_t *args)
{
    char          *c, *again;
    size_t         len, alen;
    json_t        *back;
    json_error_t   jerr;

    c = rg_tool_args_canonical(args, &len);
    rg_fuzz_check(c != NULL);
    rg_fuzz_check(c[len] == '\0' && strlen(c) == len);

    back = json_loadb(c, len, JSON_ALLOW_NUL, &jerr);
    rg_fuzz_check(back != NULL);
    rg_fuzz_check(json_equal(back, args));

    again = rg_tool_args_canonical(back, &alen);
    rg_fuzz_check(again != NULL);
    rg_fuzz_check(alen == len && memcmp(again, c, len) == 0);

    free(again);
    json_decref(back);
    free(c);
}


static void
rg_fuzz_trim(const char *text, size_t len, size_t limit)
{
    size_t    out_len, left;
    rg_buf_t  out;

    memset(&out, 0, sizeof(out));

    left = rg_tool_trim(text, len, limit, &out);
    rg_fuzz_check(left != RG_TOOL_TRIM_ERROR);

    out_len = out.len;

    if (len <= limit) {
        rg_fuzz_check(left == 0);
        rg_fuzz_check(out_len == len);
        rg_fuzz_check(len == 0 || memcmp(out.data, text, len) == 0);

    } else {
        rg_fuzz_check(left > 0 && left <= len);
        rg_fuzz_check(out_len <= limit + RG_FUZZ_MARKER_MAX);
        rg_fuzz_check(out_len - (len - left) < RG_FUZZ_MARKER_MAX);
        rg_fuzz_check(memmem(out.data, out_len, "bytes left out", 14)
                      != NULL);

        if (rg_fuzz_utf8(text, len)) {
            rg_fuzz_check(rg_fuzz_utf8(out.data, out_len));
        }
    }

    rg_buf_free(&out);
}


static void
rg_fuzz_error_json(const char *text, size_t len)
{
    char        *s, *t;
    size_t       n;
    json_t      *j, *e;

    t = malloc(len + 1);
    rg_fuzz_check(t != NULL);
    memcpy(t, text, len);
    t[len] = '\0';                       /* cut at the first NUL, if any */

    s = rg_tool_error_json(t, len % 2 ? t : NULL, &n);
    rg_fuzz_check(s != NULL);
    rg_fuzz_check(s[n] == '\0');

    j = json_loadb(s, n, 0, NULL);
    rg_fuzz_check(json_is_object(j));

    e = json_object_get(j, "error");
    rg_fuzz_check(json_is_string(e));
    rg_fuzz_check(json_string_length(e) <= RG_TOOL_ERROR_MAX + 3);
    rg_fuzz_check((json_object_get(j, "hint") != NULL) == (len % 2 == 1));

    json_decref(j);
    free(s);
    free(t);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char            err[256], names[64];
    const char     *text, *nul;
    size_t          len, limit;
    json_t         *schema, *args;
    rg_int_t        rc;
    rg_uint_t       repaired;
    json_error_t    jerr;

    if (size == 0) {
        return 0;
    }

    limit = 1 + (size_t) data[0] * 4;

    /* SCHEMA \0 ARGUMENTS, or only ARGUMENTS with a built-in schema */
    nul = memchr(data, '\0', size);
    schema = NULL;

    if (nul != NULL) {
        schema = json_loadb((const char *) data, nul - (const char *) data,
                            JSON_DECODE_ANY, &jerr);
        text = nul + 1;
        len = size - (size_t) (nul - (const char *) data) - 1;

    } else {
        text = (const char *) data + 1;
        len = size - 1;
    }

    if (schema == NULL) {
        schema = json_loads(rg_fuzz_schemas[data[0]
                                            % rg_nelems(rg_fuzz_schemas)],
                            JSON_DECODE_ANY, &jerr);
        rg_fuzz_check(schema != NULL);
    }

    memset(err, 'x', sizeof(err));
    repaired = 12345;

    args = rg_tool_args_parse("t", text, len, &repaired, err, sizeof(err));

    rg_fuzz_check(repaired < 0x20);
    rg_fuzz_check(rg_tool_args_repairs(repaired, names, sizeof(names))
                  == names);
    rg_fuzz_check(strnlen(names, sizeof(names)) < sizeof(names));

    if (args == NULL) {
        rg_fuzz_line(err, sizeof(err));
        rg_fuzz_check(err[0] != '\0');

    } else {
        rg_fuzz_check(json_is_object(args));

        memset(err, 'x', sizeof(err));
        rc = rg_tool_args_validate("t", args, schema, err, sizeof(err));
        rg_fuzz_check(rc == RG_OK || rc == RG_ERROR);

        if (rc == RG_ERROR) {
            rg_fuzz_line(err, sizeof(err));
            rg_fuzz_check(err[0] != '\0');
        }

        /* checked and coerced, or not: still an object */
        rg_fuzz_check(json_is_object(args));
        rg_fuzz_canonical(args);

        json_decref(args);
    }

    json_decref(schema);

    rg_fuzz_trim(text, len, limit);
    rg_fuzz_error_json(text, len);

    return 0;
}
