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
