/* test_llm_fixtures.c: every recorded provider answer of the project's
 * own fixtures (tests/fixtures/providers: Anthropic Messages, OpenAI
 * Responses, and error bodies of many providers) read by its format's
 * codec and checked against expected.json: the class, the wait, the
 * text, the calls, the finish reason, the blocks kept to go back and the
 * usage. A stream is fed whole, a byte at a time and in 7-byte pieces,
 * and each way must read the same. Headers (of a .http file, or the
 * "headers" of its entry) go through the same reader as the client's
 * (rg_llm_hints.c), with the response's Date as the clock. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm.h>
#include <rg_llm_hints.h>
#include <rg_llm_classify.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <rg_test_fixtures.h>

#include <ctype.h>
#include <strings.h>
#include <curl/curl.h>
#include <jansson.h>


#define RG_TEST_ID_PREFIX  "t"


/* what did not read as expected, all of it said before the test fails */
static rg_uint_t  rg_test_bad;

#define rg_test_fail()  rg_test_bad++


/* $RG_OWN_FIXTURES_DIR, or tests/fixtures/providers */
static const char *
rg_test_dir(void)
{
    const char  *dir;

    dir = getenv("RG_OWN_FIXTURES_DIR");

    return (dir != NULL && *dir != '\0') ? dir : "tests/fixtures/providers";
}


typedef struct {
    int                 status;
    const char         *body;
    size_t              len;
    rg_llm_hints_t      hints;
} rg_test_answer_t;


/* a .http file: its status line, its headers into hints, its body */
static void
rg_test_http(char *text, size_t len, rg_test_answer_t *a)
{
    char    *p, *end, *eol, *date;
    time_t   now;

    end = text + len;
    p = text;
    now = 0;
    date = NULL;

    assert_true(len > 12 && memcmp(p, "HTTP/", 5) == 0);
    a->status = atoi(strchr(p, ' ') + 1);

    /* the Date first: the clock of the reset times */
    for (p = strstr(text, "\r\n") + 2; p < end; p = eol + 2) {
        eol = strstr(p, "\r\n");
        assert_non_null(eol);

        if (eol == p) {
            break;
        }

        if (strncasecmp(p, "date:", 5) == 0) {
            date = p + 5;
            *eol = '\0';
            now = curl_getdate(date, NULL);
            *eol = '\r';
        }
    }

    if (now <= 0) {
        now = time(NULL);
    }

    rg_llm_hints_init(&a->hints);

    for (p = strstr(text, "\r\n") + 2; p < end; p = eol + 2) {
        eol = strstr(p, "\r\n");

        if (eol == p) {
            a->body = eol + 2;
            a->len = (size_t) (end - (eol + 2));
            break;
        }

        rg_llm_hints_header(&a->hints, p, (size_t) (eol - p), now);
    }

    rg_llm_hints_end(&a->hints);
}


/* the "headers" of an entry, for a body recorded without them */
static void
rg_test_headers(json_t *headers, rg_test_answer_t *a)
{
    char         line[512];
    const char  *key;
    json_t      *v;

    rg_llm_hints_init(&a->hints);

    json_object_foreach(headers, key, v) {
        snprintf(line, sizeof(line), "%s: %s", key, json_string_value(v));
        rg_llm_hints_header(&a->hints, line, strlen(line), time(NULL));
    }

    rg_llm_hints_end(&a->hints);
}


static void
rg_test_str_is(const char *name, const char *what, const rg_str_t *got,
    json_t *want)
{
    if (want == NULL) {
        return;
    }

    if (got->len != json_string_length(want)
        || memcmp(got->data, json_string_value(want), got->len) != 0)
    {
        print_error("%s: %s is \"%.*s\", not \"%s\"\n", name, what,
                    (int) rg_min(got->len, 300), got->data,
                    json_string_value(want));
        rg_test_fail();
    }
}


static void
rg_test_prefix_is(const char *name, const char *what, const rg_str_t *got,
    json_t *want)
{
    if (want == NULL) {
        return;
    }

    if (got->len < json_string_length(want)
        || memcmp(got->data, json_string_value(want),
                  json_string_length(want)) != 0)
    {
        print_error("%s: %s starts \"%.*s\", not \"%s\"\n", name, what,
                    (int) rg_min(got->len, 120), got->data,
                    json_string_value(want));
        rg_test_fail();
    }
}


static void
rg_test_int_is(const char *name, const char *what, int64_t got, json_t *want,
    int64_t slack)
{
    int64_t  w;

    if (want == NULL) {
        return;
    }

    w = (int64_t) json_integer_value(want);

    if (got < w - slack || got > w + slack) {
        print_error("%s: %s is %lld, not %lld\n", name, what,
                    (long long) got, (long long) w);
        rg_test_fail();
    }
}


/* what the answer must say */
static void
rg_test_expect(const char *name, json_t *e, rg_llm_response_t *r)
{
    size_t       i;
    json_t      *calls, *c, *args, *u, *got;
    const char  *status;

    status = json_string_value(json_object_get(e, "status"));

    if (status != NULL && strcmp(status, rg_llm_status_name(r->status)) != 0) {
        print_error("%s: the class is %s, not %s (%.*s)\n", name,
                    rg_llm_status_name(r->status), status,
                    (int) rg_min(r->error.len, 300), r->error.data);
        rg_test_fail();
    }

    rg_test_int_is(name, "the wait", (int64_t) r->retry_after,
                   json_object_get(e, "retry_after_ms"), 1);

    if (json_is_string(json_object_get(e, "error_contains"))) {
        const char  *w;
        char        *low;
        size_t       k;

        w = json_string_value(json_object_get(e, "error_contains"));
        low = strdup(w);
        assert_non_null(low);

        for (k = 0; low[k]; k++) {
            low[k] = (char) tolower((unsigned char) low[k]);
        }

        if (!rg_llm_contains(r->error.data, r->error.len, low)) {
            print_error("%s: the error \"%.*s\" does not say \"%s\"\n", name,
                        (int) rg_min(r->error.len, 300), r->error.data, w);
            free(low);
            rg_test_fail();
        }

        free(low);
    }

    if (r->status != RG_LLM_OK) {
        return;
    }

    rg_test_str_is(name, "the content", &r->content,
                   json_object_get(e, "content"));
    rg_test_prefix_is(name, "the content", &r->content,
                      json_object_get(e, "content_prefix"));
    rg_test_int_is(name, "the content's length", (int64_t) r->content.len,
                   json_object_get(e, "content_len"), 0);
    rg_test_prefix_is(name, "the reasoning", &r->reasoning,
                      json_object_get(e, "reasoning_prefix"));
    rg_test_str_is(name, "the refusal", &r->refusal,
                   json_object_get(e, "refusal"));
    rg_test_str_is(name, "the finish reason", &r->finish_reason,
                   json_object_get(e, "finish_reason"));
    rg_test_int_is(name, "the blocks kept", (int64_t) r->nopaque,
                   json_object_get(e, "opaque"), 0);

    u = json_object_get(e, "usage");
    rg_test_int_is(name, "the input tokens", r->prompt_tokens,
                   json_object_get(u, "input"), 0);
    rg_test_int_is(name, "the output tokens", r->completion_tokens,
                   json_object_get(u, "output"), 0);
    rg_test_int_is(name, "the cached tokens", r->cached_tokens,
                   json_object_get(u, "cached"), 0);
    rg_test_int_is(name, "the cache writes", r->cache_write_tokens,
                   json_object_get(u, "cache_write"), 0);

    calls = json_object_get(e, "calls");
    if (calls == NULL) {
        return;
    }

    if (json_array_size(calls) != r->ncalls) {
        print_error("%s: %lu calls, not %lu\n", name,
                    (unsigned long) r->ncalls,
                    (unsigned long) json_array_size(calls));
        rg_test_fail();
        return;
    }

    json_array_foreach(calls, i, c) {
        rg_test_str_is(name, "a call's id", &r->calls[i].id,
                       json_object_get(c, "id"));
        rg_test_str_is(name, "a call's name", &r->calls[i].name,
                       json_object_get(c, "name"));

        args = json_object_get(c, "arguments");
        got = json_loadb(r->calls[i].arguments.data,
                         r->calls[i].arguments.len, JSON_DECODE_ANY, NULL);

        if (args != NULL && !json_equal(args, got)) {
            print_error("%s: call %lu's arguments are %.*s\n", name,
                        (unsigned long) i,
                        (int) rg_min(r->calls[i].arguments.len, 300),
                        r->calls[i].arguments.data);
            rg_test_fail();
        }

        json_decref(got);
    }

    /* what goes back to the model says the same */
    assert_true(r->message.len > 0);
    got = json_loadb(r->message.data, r->message.len, 0, NULL);
    assert_non_null(got);
    assert_int_equal(json_array_size(json_object_get(got, "tool_calls")),
                     r->ncalls);

    if (r->nopaque) {
        assert_non_null(json_object_get(json_object_get(got, RG_LLM_EXT),
                                        json_string_value(
                                            json_object_get(e, "format"))));
    }

    json_decref(got);
}


/* a stream fed in pieces of `step` bytes (0: whole) */
static void
rg_test_stream(const rg_llm_codec_t *codec, rg_pool_t *pool,
    rg_test_answer_t *t, size_t step, rg_llm_response_t *r)
{
    size_t            off, n;
    rg_llm_answer_t   a;
    rg_llm_stream_t  *s;

    s = codec->stream_create(0, NULL, NULL);
    assert_non_null(s);

    for (off = 0; off < t->len; off += n) {
        n = step ? rg_min(step, t->len - off) : t->len;
        assert_int_equal(codec->stream_feed(s, t->body + off, n), RG_OK);
    }

    memset(&a, 0, sizeof(a));
    a.http_status = t->status;
    a.hints = &t->hints;
    a.id_prefix = RG_TEST_ID_PREFIX;

    memset(r, 0, sizeof(*r));
    assert_int_equal(codec->stream_finish(s, pool, &a, r), RG_OK);

    codec->stream_destroy(s);
}


static void
rg_test_one(const char *name, json_t *e)
{
    char                  path[1024], *text, *head;
    size_t                len, k;
    rg_pool_t            *pool;
    const char           *format;
    rg_llm_answer_t       a;
    rg_test_answer_t      t;
    rg_llm_response_t     r, r2;
    const rg_llm_codec_t  *codec;
    static const size_t   steps[] = { 1, 7 };

    format = json_string_value(json_object_get(e, "format"));
    assert_non_null(format);

    codec = rg_llm_codec_find(format, strlen(format));
    assert_non_null(codec);

    snprintf(path, sizeof(path), "%s/%s", rg_test_dir(), name);
    text = rg_test_read(path, &len);
    if (text == NULL) {
        print_error("cannot read %s\n", path);
        fail();
    }

    memset(&t, 0, sizeof(t));

    if (rg_test_suffix(name, ".http")) {
        /* the head is read as text (a NUL-ended copy); the body stays in
         * a buffer of its exact size, where a read past it is caught */
        head = malloc(len + 1);
        assert_non_null(head);
        memcpy(head, text, len);
        head[len] = '\0';
        rg_test_http(head, len, &t);
        t.body = text + (t.body - head);
        free(head);

    } else {
        t.status = (int) json_integer_value(json_object_get(e,
                                                            "http_status"));
        t.body = text;
        t.len = len;
        rg_test_headers(json_object_get(e, "headers"), &t);
    }

    pool = rg_pool_create(4096);
    assert_non_null(pool);

    if (rg_test_suffix(name, ".sse")) {
        rg_test_stream(codec, pool, &t, 0, &r);
        rg_test_expect(name, e, &r);

        /* split anywhere, it reads the same */
        for (k = 0; k < rg_nelems(steps); k++) {
            rg_test_stream(codec, pool, &t, steps[k], &r2);
            assert_int_equal(r2.status, r.status);
            assert_int_equal(r2.ncalls, r.ncalls);
            assert_int_equal(r2.content.len, r.content.len);
            assert_memory_equal(r2.content.data, r.content.data,
                                r.content.len);
            assert_int_equal(r2.message.len, r.message.len);
            assert_memory_equal(r2.message.data, r.message.data,
                                r.message.len);
        }

    } else {
        memset(&a, 0, sizeof(a));
        a.http_status = t.status;
        a.body = t.body;
        a.len = t.len;
        a.hints = &t.hints;
        a.id_prefix = RG_TEST_ID_PREFIX;

        memset(&r, 0, sizeof(r));
        assert_int_equal(codec->parse(pool, &a, &r), RG_OK);
        rg_test_expect(name, e, &r);
    }

    rg_pool_destroy(pool);
    free(text);
}


static void
rg_test_all(void **state)
{
    char          path[1024];
    size_t        n;
    json_t       *index, *e;
    const char   *name;
    json_error_t  err;

    RG_UNUSED(state);

    snprintf(path, sizeof(path), "%s/expected.json", rg_test_dir());

    index = json_load_file(path, 0, &err);
    if (index == NULL) {
        print_error("cannot read %s: %s\n", path, err.text);
        fail();
    }

    n = 0;

    json_object_foreach(index, name, e) {
        rg_test_one(name, e);
        n++;
    }

    print_message("%lu recorded answers read, %lu things not as expected\n",
                  (unsigned long) n, (unsigned long) rg_test_bad);
    assert_true(n > 0);
    assert_int_equal(rg_test_bad, 0);

    json_decref(index);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_all)
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
