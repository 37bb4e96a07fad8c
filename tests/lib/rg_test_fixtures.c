/* rg_test_fixtures.c: helpers for the tests that read the shared provider
 * fixtures (see rg_test_fixtures.h). */

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_openai.h>
#include <rg_test_fixtures.h>


const char *
rg_test_fixtures_dir(void)
{
    const char  *dir;

    dir = getenv("RG_FIXTURES_DIR");

    return (dir != NULL && *dir != '\0') ? dir : "../shared/fixtures/providers";
}


void
rg_test_fixtures_present(void)
{
    DIR         *d;
    const char  *dir;

    dir = rg_test_fixtures_dir();

    d = opendir(dir);
    if (d == NULL) {
        print_message("fixtures not found at %s: skipped\n", dir);
        skip();
    }

    closedir(d);
}


char *
rg_test_read(const char *path, size_t *len)
{
    long   n;
    char  *p;
    FILE  *f;

    f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }

    p = NULL;

    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0
        && fseek(f, 0, SEEK_SET) == 0)
    {
        p = malloc((size_t) n);

        if (p != NULL && fread(p, 1, (size_t) n, f) != (size_t) n) {
            free(p);
            p = NULL;
        }

        *len = (size_t) n;
    }

    fclose(f);

    return p;
}


int
rg_test_suffix(const char *name, const char *suffix)
{
    size_t  n, s;

    n = strlen(name);
    s = strlen(suffix);

    return n > s && strcmp(name + n - s, suffix) == 0;
}


void
rg_test_json_equal(const char *text, size_t len, const char *expect,
    const char *file, int line)
{
    int            eq;
    json_t        *a, *b;
    json_error_t   err;

    a = json_loadb(text, len, JSON_DECODE_ANY, &err);
    if (a == NULL) {
        print_error("%.*s: %s\n", (int) len, text, err.text);
    }

    b = json_loads(expect, JSON_DECODE_ANY, &err);
    if (b == NULL) {
        print_error("%s: %s\n", expect, err.text);
    }

    eq = (a != NULL && b != NULL && json_equal(a, b));
    if (!eq) {
        print_error("%.*s\n    is not the same JSON as\n%s\n",
                    (int) len, text, expect);
    }

    json_decref(a);
    json_decref(b);

    _assert_true(eq, "json_equal", file, line);
}


/* r->message is what goes back to the model: the same calls, content
 * null only beside calls */
void
rg_test_check_message(void *resp)
{
    size_t              i;
    json_t             *msg, *content, *calls, *call, *fn;
    json_error_t        err;
    rg_llm_response_t  *r;

    r = resp;

    msg = json_loadb(r->message.data, r->message.len, 0, &err);
    assert_non_null(msg);

    assert_string_equal(json_string_value(json_object_get(msg, "role")),
                        "assistant");

    content = json_object_get(msg, "content");

    if (r->has_content) {
        assert_true(json_is_string(content));
        assert_int_equal(json_string_length(content), r->content.len);
        assert_memory_equal(json_string_value(content), r->content.data,
                            r->content.len);

    } else if (r->ncalls) {
        assert_true(json_is_null(content));

    } else {
        assert_string_equal(json_string_value(content), "");
    }

    calls = json_object_get(msg, "tool_calls");

    if (r->ncalls == 0) {
        assert_null(calls);
        assert_int_equal(json_object_size(msg), 2);
        json_decref(msg);
        return;
    }

    assert_int_equal(json_object_size(msg), 3);
    assert_int_equal(json_array_size(calls), r->ncalls);

    json_array_foreach(calls, i, call) {
        fn = json_object_get(call, "function");

        assert_int_equal(json_object_size(call), 3);
        assert_string_equal(json_string_value(json_object_get(call, "id")),
                            r->calls[i].id.data);
        assert_string_equal(json_string_value(json_object_get(call, "type")),
                            "function");
        assert_int_equal(json_object_size(fn), 2);
        assert_string_equal(json_string_value(json_object_get(fn, "name")),
                            r->calls[i].name.data);
        assert_string_equal(json_string_value(json_object_get(fn,
                                                              "arguments")),
                            r->calls[i].arguments.data);
    }

    json_decref(msg);
}
