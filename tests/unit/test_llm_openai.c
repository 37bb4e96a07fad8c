/* test_llm_openai.c: tests of the Chat Completions codec
 * (src/llm/rg_llm_openai.c). Small bodies written for one case each, the
 * exact bytes of the request builders, and every recorded non-streaming
 * provider response of shared/fixtures/providers (RG_FIXTURES_DIR) checked
 * against the interpretation its INDEX.md gives. Streams (*.sse) are not
 * read here. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_openai.h>
#include <rg_llm_request.h>
#include <rg_test.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <rg_test_fixtures.h>

#include <ctype.h>
#include <dirent.h>
#include <jansson.h>


#define RG_TEST_ID_PREFIX  "t"


/* an rg_str_t equals a C string, and is NUL-ended */
#define rg_test_str(s, expect)                                               \
    do {                                                                     \
        assert_non_null((s)->data);                                          \
        assert_string_equal((s)->data, (expect));                            \
        assert_int_equal((s)->len, strlen(expect));                          \
    } while (0)

#define rg_test_str_empty(s)   rg_test_str(s, "")

/* two JSON texts mean the same */
#define rg_test_json(text, len, expect)                                      \
    rg_test_json_equal(text, len, expect, __FILE__, __LINE__)

#define rg_test_parse(pool, status, body, r)                                 \
    assert_int_equal(rg_llm_openai_parse(pool, status, body, strlen(body),   \
                                         RG_TEST_ID_PREFIX, 0, r), RG_OK)


/* responses */

static void
rg_test_content_null_with_tool_calls(void **state)
{
    rg_llm_response_t  r;

    memset(&r, 0, sizeof(r));

    rg_test_parse(*state, 200,
        "{\"id\":\"c1\",\"choices\":[{\"index\":0,\"message\":{"
        "\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{"
        "\"id\":\"call_1\",\"type\":\"function\",\"function\":{"
        "\"name\":\"ls\",\"arguments\":\"{\\\"dir\\\":\\\"/\\\"}\"}}]},"
        "\"finish_reason\":\"tool_calls\"}],"
        "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7,"
        "\"total_tokens\":12}}", &r);

    assert_int_equal(r.status, RG_LLM_OK);
    assert_int_equal(r.http_status, 200);
    assert_false(r.has_content);
    rg_test_str_empty(&r.content);
    rg_test_str(&r.finish_reason, "tool_calls");
    assert_int_equal(r.ncalls, 1);
    rg_test_str(&r.calls[0].id, "call_1");
    rg_test_str(&r.calls[0].name, "ls");
    rg_test_str(&r.calls[0].arguments, "{\"dir\":\"/\"}");
    assert_int_equal(r.prompt_tokens, 5);
    assert_int_equal(r.completion_tokens, 7);
    assert_int_equal(r.total_tokens, 12);
    rg_test_str_empty(&r.error);

    rg_test_str(&r.message,
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{"
        "\"id\":\"call_1\",\"type\":\"function\",\"function\":{"
        "\"name\":\"ls\",\"arguments\":\"{\\\"dir\\\":\\\"/\\\"}\"}}]}");
}


static void
rg_test_tool_calls_in_order(void **state)
{
    rg_llm_response_t  r;

    memset(&r, 0, sizeof(r));

    rg_test_parse(*state, 200,
        "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
        "\"content\":\"Three at once.\",\"tool_calls\":["
        "{\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"one\","
        "\"arguments\":\"{}\"}},"
        "{\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"two\","
        "\"arguments\":\"{\\\"n\\\":2}\"}},"
        "{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"three\","
        "\"arguments\":\"{\\\"n\\\":3}\"}}]},"
        "\"finish_reason\":\"tool_calls\"}]}", &r);

    assert_int_equal(r.status, RG_LLM_OK);
    assert_true(r.has_content);
    rg_test_str(&r.content, "Three at once.");
    assert_int_equal(r.ncalls, 3);
    rg_test_str(&r.calls[0].id, "a");
    rg_test_str(&r.calls[0].name, "one");
    rg_test_str(&r.calls[0].arguments, "{}");
    rg_test_str(&r.calls[1].id, "b");
    rg_test_str(&r.calls[1].name, "two");
    rg_test_str(&r.calls[1].arguments, "{\"n\":2}");
    rg_test_str(&r.calls[2].id, "c");
    rg_test_str(&r.calls[2].name, "three");
    rg_test_str(&r.calls[2].arguments, "{\"n\":3}");

    rg_test_str(&r.message,
        "{\"role\":\"assistant\",\"content\":\"Three at once.\","
        "\"tool_calls\":["
        "{\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"one\","
        "\"arguments\":\"{}\"}},"
        "{\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"two\","
        "\"arguments\":\"{\\\"n\\\":2}\"}},"
        "{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"three\","
        "\"arguments\":\"{\\\"n\\\":3}\"}}]}");
}


static void
rg_test_arguments_not_a_string(void **state)
{
    rg_llm_response_t  r;

    memset(&r, 0, sizeof(r));

    rg_test_parse(*state, 200,
        "{\"choices\":[{\"message\":{\"tool_calls\":["
        "{\"id\":\"o\",\"function\":{\"name\":\"obj\",\"arguments\":"
        "{ \"path\" : \"a.txt\", \"n\": [1, 2.5, true, null],"
        " \"u\": \"\\u00e9\" }}},"
        "{\"id\":\"a\",\"function\":{\"name\":\"arr\",\"arguments\":[1, 2]}},"
        "{\"id\":\"n\",\"function\":{\"name\":\"null\",\"arguments\":null}},"
        "{\"id\":\"e\",\"function\":{\"name\":\"empty\",\"arguments\":\"\"}},"
        "{\"id\":\"w\",\"function\":{\"name\":\"blank\","
        "\"arguments\":\" \\n\"}},"
        "{\"id\":\"x\",\"function\":{\"name\":\"absent\"}},"
        "{\"id\":\"s\",\"function\":{\"name\":\"bad\",\"arguments\":\"{oops\"}}"
        "]},\"finish_reason\":\"tool_calls\"}]}", &r);

    assert_int_equal(r.status, RG_LLM_OK);
    assert_int_equal(r.ncalls, 7);
    rg_test_str(&r.calls[0].arguments,
        "{\"path\":\"a.txt\",\"n\":[1,2.5,true,null],\"u\":\"\xc3\xa9\"}");
    rg_test_str(&r.calls[1].arguments, "[1,2]");
    rg_test_str(&r.calls[2].arguments, "{}");
    rg_test_str(&r.calls[3].arguments, "{}");
    rg_test_str(&r.calls[4].arguments, "{}");
    rg_test_str(&r.calls[5].arguments, "{}");

    /* a string is kept as it is, even broken: the tool says so */
    rg_test_str(&r.calls[6].arguments, "{oops");

    rg_test_json(r.message.data, r.message.len,
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
        "{\"id\":\"o\",\"type\":\"function\",\"function\":{\"name\":\"obj\","
        "\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\",\\\"n\\\":[1,2.5,true,"
        "null],\\\"u\\\":\\\"\xc3\xa9\\\"}\"}},"
        "{\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"arr\","
        "\"arguments\":\"[1,2]\"}},"
        "{\"id\":\"n\",\"type\":\"function\",\"function\":{\"name\":\"null\","
        "\"arguments\":\"{}\"}},"
        "{\"id\":\"e\",\"type\":\"function\",\"function\":{\"name\":\"empty\","
        "\"arguments\":\"{}\"}},"
        "{\"id\":\"w\",\"type\":\"function\",\"function\":{\"name\":\"blank\","
        "\"arguments\":\"{}\"}},"
        "{\"id\":\"x\",\"type\":\"function\",\"function\":{\"name\":\"absent\","
        "\"arguments\":\"{}\"}},"
        "{\"id\":\"s\",\"type\":\"function\",\"function\":{\"name\":\"bad\","
        "\"arguments\":\"{oops\"}}]}");
}


/* a made id never repeats one the provider sent: "t_1" was taken */
static void
rg_test_made_ids_unique(void **state)
{
    rg_llm_response_t  r;

    memset(&r, 0, sizeof(r));

    rg_test_parse(*state, 200,
        "{\"choices\":[{\"message\":{\"tool_calls\":["
        "{\"id\":\"t_1\",\"function\":{\"name\":\"a\"}},"
        "{\"function\":{\"name\":\"b\"}},"
        "{\"id\":\"t_1\",\"function\":{\"name\":\"c\"}},"
        "{\"id\":\"t_2_1\",\"function\":{\"name\":\"d\"}}"
        "]}}]}", &r);

    assert_int_equal(r.ncalls, 4);
    rg_test_str(&r.calls[0].id, "t_1");
    rg_test_str(&r.calls[1].id, "t_1_1");
    rg_test_str(&r.calls[2].id, "t_2");
    rg_test_str(&r.calls[3].id, "t_2_1");
}


static void
rg_test_build_calls(rg_buf_t *b, rg_uint_t n, const char *id_fmt)
{
    rg_uint_t  i;

    assert_int_equal(rg_buf_append_lit(b,
        "{\"choices\":[{\"message\":{\"content\":null,\"tool_calls\":["),
        RG_OK);

    for (i = 0; i < n; i++) {
        assert_int_equal(rg_buf_printf(b, "%s{\"id\":\"", i ? "," : ""),
                         RG_OK);
        assert_int_equal(rg_buf_printf(b, id_fmt, (unsigned long) i), RG_OK);
        assert_int_equal(rg_buf_printf(b, "\",\"type\":\"function\","
                                       "\"function\":{\"name\":\"f\","
                                       "\"arguments\":\"{\\\"i\\\":%lu}\"}}",
                                       (unsigned long) i), RG_OK);
    }

    assert_int_equal(rg_buf_append_lit(b, "]},\"finish_reason\":"
                                       "\"tool_calls\"}]}"), RG_OK);
}


/* 100,000 calls in one answer: the first max_calls are kept and one more
 * that stands for the rest; calls_over says how many do not run; the
 * message holds exactly the calls kept */
static void
rg_test_calls_capped(void **state)
{
    json_t             *msg;
    rg_buf_t            b;
    rg_llm_response_t   r;

    memset(&b, 0, sizeof(b));
    memset(&r, 0, sizeof(r));

    rg_test_build_calls(&b, 100000, "c%lu");

    assert_int_equal(rg_llm_openai_parse(*state, 200, b.data, b.len,
                                         RG_TEST_ID_PREFIX, 128, &r), RG_OK);

    assert_int_equal(r.status, RG_LLM_OK);
    assert_int_equal(r.ncalls, 129);
    assert_int_equal(r.calls_over, 100000 - 128);
    rg_test_str(&r.calls[0].id, "c0");
    rg_test_str(&r.calls[128].id, "c128");
    rg_test_str(&r.calls[128].arguments, "{\"i\":128}");

    msg = json_loadb(r.message.data, r.message.len, 0, NULL);
    assert_non_null(msg);
    assert_int_equal(json_array_size(json_object_get(msg, "tool_calls")),
                     129);
    json_decref(msg);

    /* at the cap exactly, nothing is over */
    memset(&r, 0, sizeof(r));
    assert_int_equal(rg_llm_openai_parse(*state, 200, b.data, b.len,
                                         RG_TEST_ID_PREFIX, 100000, &r),
                     RG_OK);
    assert_int_equal(r.ncalls, RG_LLM_MAX_CALLS + 1);
    assert_int_equal(r.calls_over, 100000 - RG_LLM_MAX_CALLS);

    rg_buf_reset(&b);
    rg_test_build_calls(&b, 5, "c%lu");
    memset(&r, 0, sizeof(r));
    assert_int_equal(rg_llm_openai_parse(*state, 200, b.data, b.len,
                                         RG_TEST_ID_PREFIX, 5, &r), RG_OK);
    assert_int_equal(r.ncalls, 5);
    assert_int_equal(r.calls_over, 0);

    rg_buf_free(&b);
}


/* the same id on every call of a long answer: one keeps it, each other
 * one gets its own, and every id is different (checked in O(n)) */
static void
rg_test_calls_same_id(void **state)
{
    json_t             *seen;
    rg_buf_t            b;
    rg_uint_t           i;
    rg_llm_response_t   r;

    memset(&b, 0, sizeof(b));
    memset(&r, 0, sizeof(r));

    rg_test_build_calls(&b, RG_LLM_MAX_CALLS, "same");

    assert_int_equal(rg_llm_openai_parse(*state, 200, b.data, b.len,
                                         RG_TEST_ID_PREFIX, 0, &r), RG_OK);
    assert_int_equal(r.ncalls, RG_LLM_MAX_CALLS);
    assert_int_equal(r.calls_over, 0);
    rg_test_str(&r.calls[0].id, "same");
    rg_test_str(&r.calls[1].id, "t_1");

    seen = json_object();
    for (i = 0; i < r.ncalls; i++) {
        assert_null(json_object_getn(seen, r.calls[i].id.data,
                                     r.calls[i].id.len));
        json_object_setn(seen, r.calls[i].id.data, r.calls[i].id.len,
                         json_true());
    }
    json_decref(seen);

    rg_buf_free(&b);
}


static void
rg_test_missing_fields(void **state)
{
    rg_llm_response_t  r;

    memset(&r, 0, sizeof(r));

    /* no id, no type, no content key, no usage, no finish_reason, no
     * index; then an empty id, a null id, no name, a duplicate id */
    rg_test_parse(*state, 200,
        "{\"choices\":[{\"message\":{\"tool_calls\":["
        "{\"function\":{\"name\":\"first\",\"arguments\":\"{}\"}},"
        "{\"id\":\"\",\"function\":{\"name\":\"second\",\"arguments\":\"{}\"}},"
        "{\"id\":null,\"type\":\"function\",\"function\":{\"name\":\"third\"}},"
        "{\"id\":\"k\",\"function\":{\"arguments\":\"{}\"}},"
        "{\"id\":\"k\",\"function\":{\"name\":\"fifth\",\"arguments\":\"{}\"}},"
        "42"
        "]}}]}", &r);

    assert_int_equal(r.status, RG_LLM_OK);
    assert_false(r.has_content);
    rg_test_str_empty(&r.content);
    rg_test_str_empty(&r.finish_reason);
    rg_test_str_empty(&r.reasoning);
    rg_test_str_empty(&r.refusal);
    assert_int_equal(r.prompt_tokens, 0);
    assert_int_equal(r.completion_tokens, 0);
    assert_int_equal(r.total_tokens, 0);

    assert_int_equal(r.ncalls, 5);
    rg_test_str(&r.calls[0].id, "t_0");
    rg_test_str(&r.calls[0].name, "first");
    rg_test_str(&r.calls[1].id, "t_1");
    rg_test_str(&r.calls[1].name, "second");
    rg_test_str(&r.calls[2].id, "t_2");
    rg_test_str(&r.calls[2].name, "third");
    rg_test_str(&r.calls[2].arguments, "{}");
    rg_test_str(&r.calls[3].id, "k");
    rg_test_str_empty(&r.calls[3].name);
    rg_test_str(&r.calls[4].id, "t_4");
    rg_test_str(&r.calls[4].name, "fifth");

    rg_test_str(&r.message,
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
        "{\"id\":\"t_0\",\"type\":\"function\",\"function\":{"
        "\"name\":\"first\",\"arguments\":\"{}\"}},"
        "{\"id\":\"t_1\",\"type\":\"function\",\"function\":{"
        "\"name\":\"second\",\"arguments\":\"{}\"}},"
        "{\"id\":\"t_2\",\"type\":\"function\",\"function\":{"
        "\"name\":\"third\",\"arguments\":\"{}\"}},"
        "{\"id\":\"k\",\"type\":\"function\",\"function\":{"
        "\"name\":\"\",\"arguments\":\"{}\"}},"
        "{\"id\":\"t_4\",\"type\":\"function\",\"function\":{"
        "\"name\":\"fifth\",\"arguments\":\"{}\"}}]}");

    /* no content and no calls: the message still needs a content */
    rg_test_parse(*state, 200, "{\"choices\":[{\"message\":{}}]}", &r);

    assert_int_equal(r.status, RG_LLM_OK);
    assert_false(r.has_content);
    assert_int_equal(r.ncalls, 0);
    assert_null(r.calls);
    rg_test_str(&r.message, "{\"role\":\"assistant\",\"content\":\"\"}");

    /* an empty content string is no content */
    rg_test_parse(*state, 200,
        "{\"choices\":[{\"message\":{\"content\":\"\"},"
        "\"finish_reason\":null}],\"usage\":null,"
        "\"x_groq\":{\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}}",
        &r);

    assert_int_equal(r.status, RG_LLM_OK);
    assert_false(r.has_content);
    rg_test_str_empty(&r.finish_reason);
    assert_int_equal(r.prompt_tokens, 3);
    assert_int_equal(r.completion_tokens, 4);
    assert_int_equal(r.total_tokens, 7);
}


static void
rg_test_content_array(void **state)
{
    rg_llm_response_t  r;

    memset(&r, 0, sizeof(r));

    rg_test_parse(*state, 200,
        "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
        "\"reasoning_content\":\"First. \",\"content\":["
        "{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\","
        "\"text\":\"Then \"},{\"type\":\"text\",\"text\":\"more.\"}]},"
        "{\"type\":\"text\",\"text\":\"Hello, \"},"
        "{\"type\":\"image_url\",\"image_url\":{\"url\":\"x\"}},"
        "{\"text\":\"wor\"},"
        "\"ld\","
        "{\"type\":\"text\",\"text\":null},"
        "7]},"
        "\"finish_reason\":\"stop\"}],"
        "\"usage\":{\"prompt_tokens\":10.0,\"completion_tokens\":232,"
        "\"total_tokens\":242}}", &r);

    assert_int_equal(r.status, RG_LLM_OK);
    assert_true(r.has_content);
    rg_test_str(&r.content, "Hello, world");
    rg_test_str(&r.reasoning, "First. Then more.");
    rg_test_str(&r.finish_reason, "stop");
    assert_int_equal(r.prompt_tokens, 10);
    assert_int_equal(r.total_tokens, 242);
    rg_test_str(&r.message,
                "{\"role\":\"assistant\",\"content\":\"Hello, world\"}");

    /* only images: no content */
    rg_test_parse(*state, 200,
        "{\"choices\":[{\"message\":{\"content\":["
        "{\"type\":\"image_url\"}]}}]}",
        &r);

    assert_int_equal(r.status, RG_LLM_OK);
    assert_false(r.has_content);
}


static void
rg_test_reasoning_refusal_legacy(void **state)
{
    rg_llm_response_t  r;

    memset(&r, 0, sizeof(r));

    rg_test_parse(*state, 200,
        "{\"choices\":[{\"index\":1,\"message\":{\"content\":\"wrong\"}},"
        "{\"index\":0,\"message\":{\"content\":null,"
        "\"reasoning\":\"thinking\",\"refusal\":\"No.\"},"
        "\"finish_reason\":\"stop\"}]}", &r);

    assert_int_equal(r.status, RG_LLM_OK);
    assert_false(r.has_content);
    rg_test_str(&r.reasoning, "thinking");
    rg_test_str(&r.refusal, "No.");
    rg_test_str(&r.message, "{\"role\":\"assistant\",\"content\":\"\"}");

    /* the legacy function_call is one tool call */
    rg_test_parse(*state, 200,
        "{\"choices\":[{\"message\":{\"content\":null,\"function_call\":"
        "{\"name\":\"get\",\"arguments\":\"{\\\"a\\\":1}\"}},"
        "\"finish_reason\":\"function_call\"}]}", &r);

    assert_int_equal(r.status, RG_LLM_OK);
    assert_int_equal(r.ncalls, 1);
    rg_test_str(&r.calls[0].id, "t_0");
    rg_test_str(&r.calls[0].name, "get");
    rg_test_str(&r.calls[0].arguments, "{\"a\":1}");
    rg_test_str(&r.finish_reason, "function_call");
    rg_test_str(&r.message,
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{"
        "\"id\":\"t_0\",\"type\":\"function\",\"function\":{"
        "\"name\":\"get\",\"arguments\":\"{\\\"a\\\":1}\"}}]}");
}


static void
rg_test_huge_integers_and_nul(void **state)
{
    const char         body[] =
        "{\"choices\":[{\"index\":0,\"seed\":18446744073709551616,"
        "\"message\":{\"content\":\"a\\u0000b\",\"tool_calls\":[{\"id\":\"i\","
        "\"function\":{\"name\":\"f\",\"arguments\":{\"k\":\"v\"}}}]},"
        "\"finish_reason\":\"tool_calls\"}],"
        "\"usage\":{\"prompt_tokens\":19,\"completion_tokens\":29,"
        "\"total_tokens\":48,\"big\":99999999999999999999999}}";
    rg_llm_response_t  r;

    memset(&r, 0, sizeof(r));

    rg_test_parse(*state, 200, body, &r);

    assert_int_equal(r.status, RG_LLM_OK);
    assert_true(r.has_content);
    assert_int_equal(r.content.len, 3);
    assert_memory_equal(r.content.data, "a\0b", 3);
    rg_test_str(&r.calls[0].arguments, "{\"k\":\"v\"}");
    assert_int_equal(r.prompt_tokens, 19);
    assert_int_equal(r.completion_tokens, 29);
    assert_int_equal(r.total_tokens, 48);
    rg_test_str(&r.message,
        "{\"role\":\"assistant\",\"content\":\"a\\u0000b\",\"tool_calls\":[{"
        "\"id\":\"i\",\"type\":\"function\",\"function\":{"
        "\"name\":\"f\",\"arguments\":\"{\\\"k\\\":\\\"v\\\"}\"}}]}");
}


static void
rg_test_not_json_200(void **state)
{
    rg_llm_response_t  r;

    memset(&r, 0, sizeof(r));

    rg_test_parse(*state, 200, "<html>oops</html>", &r);

    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_test_str(&r.error,
        "malformed response from the model: '[' or '{' expected near '<'");
    assert_int_equal(r.ncalls, 0);
    rg_test_str_empty(&r.message);

    /* cut short */
    rg_test_parse(*state, 200, "{\"choices\":[{\"message\":{\"content\":\"He",
                  &r);

    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    assert_int_equal(rg_str_casecmp_prefix(r.error.data, r.error.len,
                         "malformed response from the model: "), 0);

    assert_int_equal(rg_llm_openai_parse(*state, 200, NULL, 0, NULL, 0, &r),
                     RG_OK);
    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_test_str(&r.error, "malformed response from the model: "
                          "'[' or '{' expected near end of file");
}


static void
rg_test_no_choices(void **state)
{
    rg_llm_response_t  r;

    memset(&r, 0, sizeof(r));

    rg_test_parse(*state, 200,
        "{\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":1}}", &r);

    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_test_str(&r.error, "response has no choices");

    rg_test_parse(*state, 200, "{\"id\":\"c\"}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_test_str(&r.error, "response has no choices");

    rg_test_parse(*state, 200, "{\"choices\":{\"message\":{}}}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_test_str(&r.error, "response has no choices");

    rg_test_parse(*state, 200, "[1]", &r);
    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_test_str(&r.error, "response has no choices");

    rg_test_parse(*state, 200, "{\"choices\":[{\"text\":\"hi\"}]}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_test_str(&r.error, "response has no message");

    rg_test_parse(*state, 200, "{\"choices\":[3]}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_test_str(&r.error, "response has no message");
}


static void
rg_test_error_numeric_code(void **state)
{
    rg_llm_response_t  r;

    memset(&r, 0, sizeof(r));
    r.retry_after = 1500;

    rg_test_parse(*state, 503,
        "{\"error\":{\"message\":\"Service unavailable\",\"code\":503,"
        "\"type\":null,\"param\":null}}", &r);

    assert_int_equal(r.status, RG_LLM_ERR_SERVER);
    assert_int_equal(r.http_status, 503);
    assert_int_equal(r.retry_after, 1500);
    rg_test_str(&r.error, "Service unavailable");
    rg_test_str(&r.error_code, "503");
    rg_test_str_empty(&r.error_type);
    rg_test_str_empty(&r.error_param);
    rg_test_str_empty(&r.message);
    assert_int_equal(r.ncalls, 0);

    rg_test_parse(*state, 400,
        "{\"object\":\"error\",\"message\":\"bad request\","
        "\"type\":\"BadRequestError\",\"param\":\"tools\",\"code\":400.0}", &r);

    assert_int_equal(r.status, RG_LLM_ERR_FATAL);
    rg_test_str(&r.error, "bad request");
    rg_test_str(&r.error_code, "400");
    rg_test_str(&r.error_type, "BadRequestError");
    rg_test_str(&r.error_param, "tools");

    rg_test_parse(*state, 401, "{\"error\":\"invalid api key\"}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_FATAL);
    rg_test_str(&r.error, "invalid api key");

    rg_test_parse(*state, 422,
        "{\"detail\":[{\"loc\":[\"body\",\"model\"],"
        "\"msg\":\"missing\"}]}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_FATAL);
    rg_test_str(&r.error,
                "[{\"loc\":[\"body\",\"model\"],\"msg\":\"missing\"}]");

    /* Gemini wraps its error in an array */
    rg_test_parse(*state, 400,
        "[{\"error\":{\"code\":400,\"message\":\"The input token count "
        "exceeds the maximum context window\",\"status\":"
        "\"INVALID_ARGUMENT\"}}]", &r);
    assert_int_equal(r.status, RG_LLM_ERR_CONTEXT);
    rg_test_str(&r.error_code, "400");
    rg_test_str(&r.error_type, "INVALID_ARGUMENT");

    rg_test_parse(*state, 429,
        "{\"error\":{\"message\":\"You exceeded your current quota\","
        "\"type\":\"insufficient_quota\","
        "\"code\":\"insufficient_quota\"}}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_FATAL);
}


static void
rg_test_error_not_json(void **state)
{
    char               body[400];
    rg_llm_response_t  r;

    memset(&r, 0, sizeof(r));

    rg_test_parse(*state, 502,
        "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n"
        "<body>\t\x01</body>\r\n</html>\r\n", &r);

    assert_int_equal(r.status, RG_LLM_ERR_SERVER);
    assert_int_equal(r.http_status, 502);
    rg_test_str(&r.error,
        "HTTP 502: <html>  <head><title>502 Bad Gateway</title></head>  "
        "<body>  </body>  </html>");
    rg_test_str_empty(&r.error_code);
    rg_test_str_empty(&r.message);

    rg_test_parse(*state, 503, "", &r);
    assert_int_equal(r.status, RG_LLM_ERR_SERVER);
    rg_test_str(&r.error, "HTTP 503");

    /* at most 200 bytes, never half a character, never invalid UTF-8 */
    memset(body, 'x', sizeof(body));
    body[sizeof(body) - 1] = '\0';
    body[150] = '\xff';
    memcpy(body + 198, "\xc3\xa9", 2);

    rg_test_parse(*state, 404, body, &r);
    assert_int_equal(r.status, RG_LLM_ERR_FATAL);
    assert_int_equal(r.error.len, sizeof("HTTP 404: ") - 1 + 200 + 2);
    assert_memory_equal(r.error.data, "HTTP 404: xxx", 13);
    assert_memory_equal(r.error.data + 10 + 150, "\xef\xbf\xbdx", 4);
    assert_memory_equal(r.error.data + r.error.len - 3, "x\xc3\xa9", 3);

    memset(body, 'x', sizeof(body) - 1);
    memcpy(body + 199, "\xc3\xa9", 2);

    rg_test_parse(*state, 404, body, &r);
    assert_int_equal(r.error.len, sizeof("HTTP 404: ") - 1 + 199);
    assert_int_equal(r.error.data[r.error.len - 1], 'x');

    /* JSON, but not an error we know: the body itself */
    rg_test_parse(*state, 500, "{\"oops\":true}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_SERVER);
    rg_test_str(&r.error, "HTTP 500: {\"oops\":true}");
}


static void
rg_test_error_inside_200(void **state)
{
    rg_llm_response_t  r;

    memset(&r, 0, sizeof(r));

    rg_test_parse(*state, 200,
        "{\"error\": {\"message\": \"The server had an error while processing "
        "your request. Sorry about that!\", \"type\": \"server_error\"}}", &r);

    assert_int_equal(r.status, RG_LLM_ERR_SERVER);
    rg_test_str(&r.error_type, "server_error");
    rg_test_str(&r.error, "The server had an error while processing your "
                          "request. Sorry about that!");

    /* OpenRouter: choices and an error together; the error wins */
    rg_test_parse(*state, 200,
        "{\"error\":{\"code\":400,\"message\":\"Token limit reached\"},"
        "\"choices\":[{\"index\":0,\"message\":{\"content\":\"\"}}],"
        "\"usage\":{\"prompt_tokens\":43,\"completion_tokens\":10,"
        "\"total_tokens\":53}}", &r);

    assert_int_equal(r.status, RG_LLM_ERR_FATAL);
    rg_test_str(&r.error_code, "400");
    assert_int_equal(r.total_tokens, 53);
    rg_test_str_empty(&r.message);

    rg_test_parse(*state, 200,
        "{\"error\":{\"code\":429,\"message\":\"slow down\"}}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_RATE);

    rg_test_parse(*state, 200,
        "{\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"x\"}}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_RATE);

    /* Groq, streamed: status_code beside a string code */
    rg_test_parse(*state, 200,
        "{\"error\":{\"message\":\"Tool call validation failed\","
        "\"type\":\"invalid_request_error\",\"code\":\"tool_use_failed\","
        "\"status_code\":400}}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_FATAL);
    rg_test_str(&r.error_code, "tool_use_failed");

    rg_test_parse(*state, 200,
        "{\"error\":{\"message\":\"This model's maximum context length is "
        "8192 tokens\",\"type\":\"invalid_request_error\"}}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_CONTEXT);

    /* a refused key is refused again: fatal, like a 401 */
    rg_test_parse(*state, 200,
        "{\"error\":{\"message\":\"Incorrect API key provided\","
        "\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}",
        &r);
    assert_int_equal(r.status, RG_LLM_ERR_FATAL);

    rg_test_parse(*state, 200,
        "{\"type\":\"error\",\"error\":{\"type\":"
        "\"authentication_error\",\"message\":\"invalid x-api-key\"}}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_FATAL);

    /* over the tokens-per-minute limit: the numbers are read */
    rg_test_parse(*state, 429,
        "{\"error\":{\"message\":\"Request too large for gpt-4o on tokens "
        "per min (TPM): Limit 30000, Requested 45210.\",\"type\":\"tokens\","
        "\"code\":\"rate_limit_exceeded\"}}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_OVER_RATE);
    assert_int_equal(r.rate_limit, 30000);
    assert_int_equal(r.rate_requested, 45210);

    rg_test_parse(*state, 200, "{\"error\":\"overloaded\"}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_SERVER);
    rg_test_str(&r.error, "overloaded");

    /* an empty or null error is no error */
    rg_test_parse(*state, 200,
        "{\"error\":null,\"choices\":[{\"message\":{"
        "\"content\":\"ok\"}}]}", &r);
    assert_int_equal(r.status, RG_LLM_OK);
    rg_test_str(&r.content, "ok");
}


static void
rg_test_classify(void **state)
{
    rg_str_t  none = rg_null_string;
    rg_str_t  ctx = rg_string("context_length_exceeded");
    rg_str_t  other = rg_string("invalid_value");
    rg_str_t  quota = rg_string("insufficient_quota");
    rg_str_t  m1 = rg_string("This model's maximum context length is 8192");
    rg_str_t  m2 = rg_string("prompt is too long: Too Many Tokens");
    rg_str_t  m3 = rg_string("exceeds the CONTEXT WINDOW");
    rg_str_t  m4 = rg_string("Context length exceeded");
    rg_str_t  m5 = rg_string("bad value");
    rg_str_t  cpp = rg_string("exceed_context_size_error");
    rg_str_t  cppm = rg_string("the request exceeds the available context "
                               "size, try increasing it");
    rg_str_t  vllm = rg_string("This model's maximum context length is "
                               "4096 tokens. However, you requested 4410");
    rg_str_t  ollama = rg_string("input exceeds context length");
    rg_str_t  anth = rg_string("prompt is too long: 215021 tokens > 200000");
    rg_str_t  rate = rg_string("rate_limit_exceeded");
    rg_str_t  tpm = rg_string("Request too large for gpt-4o on tokens per "
                              "min (TPM): Limit 30000, Requested 45210.");
    rg_str_t  rpm = rg_string("Rate limit reached for gpt-4o on requests "
                              "per min (RPM): Limit 500, Used 500");
    rg_str_t  nomoney = rg_string("Insufficient Balance");
    rg_str_t  billing = rg_string("You exceeded your current quota, please "
                                  "check your plan and billing details.");

    RG_UNUSED(state);

    assert_int_equal(rg_llm_openai_classify(429, &other, &m5),
                     RG_LLM_ERR_RATE);
    assert_int_equal(rg_llm_openai_classify(429, NULL, NULL), RG_LLM_ERR_RATE);
    assert_int_equal(rg_llm_openai_classify(429, &quota, &m5),
                     RG_LLM_ERR_FATAL);
    assert_int_equal(rg_llm_openai_classify(408, NULL, NULL),
                     RG_LLM_ERR_SERVER);
    assert_int_equal(rg_llm_openai_classify(409, NULL, NULL),
                     RG_LLM_ERR_SERVER);
    assert_int_equal(rg_llm_openai_classify(425, NULL, NULL),
                     RG_LLM_ERR_SERVER);
    assert_int_equal(rg_llm_openai_classify(500, &none, &none),
                     RG_LLM_ERR_SERVER);
    assert_int_equal(rg_llm_openai_classify(529, NULL, NULL),
                     RG_LLM_ERR_SERVER);
    assert_int_equal(rg_llm_openai_classify(599, NULL, NULL),
                     RG_LLM_ERR_SERVER);
    assert_int_equal(rg_llm_openai_classify(400, &ctx, &m5),
                     RG_LLM_ERR_CONTEXT);
    assert_int_equal(rg_llm_openai_classify(400, &other, &m1),
                     RG_LLM_ERR_CONTEXT);
    assert_int_equal(rg_llm_openai_classify(400, NULL, &m2),
                     RG_LLM_ERR_CONTEXT);
    assert_int_equal(rg_llm_openai_classify(400, NULL, &m3),
                     RG_LLM_ERR_CONTEXT);
    assert_int_equal(rg_llm_openai_classify(400, NULL, &m4),
                     RG_LLM_ERR_CONTEXT);
    assert_int_equal(rg_llm_openai_classify(400, &other, &m5),
                     RG_LLM_ERR_FATAL);
    assert_int_equal(rg_llm_openai_classify(400, &none, &none),
                     RG_LLM_ERR_FATAL);
    /* a body too large for the server is one compaction can cure */
    assert_int_equal(rg_llm_openai_classify(413, &ctx, &m1),
                     RG_LLM_ERR_CONTEXT);
    assert_int_equal(rg_llm_openai_classify(413, &other, &m5),
                     RG_LLM_ERR_FATAL);
    assert_int_equal(rg_llm_openai_classify(400, &cpp, &cppm),
                     RG_LLM_ERR_CONTEXT);
    assert_int_equal(rg_llm_openai_classify(400, NULL, &cppm),
                     RG_LLM_ERR_CONTEXT);
    assert_int_equal(rg_llm_openai_classify(400, NULL, &vllm),
                     RG_LLM_ERR_CONTEXT);
    assert_int_equal(rg_llm_openai_classify(500, NULL, &ollama),
                     RG_LLM_ERR_CONTEXT);
    assert_int_equal(rg_llm_openai_classify(400, NULL, &anth),
                     RG_LLM_ERR_CONTEXT);
    assert_int_equal(rg_llm_openai_classify(502, NULL, &m5),
                     RG_LLM_ERR_SERVER);

    /* 429s that waiting cannot cure */
    assert_int_equal(rg_llm_openai_classify(429, &rate, &tpm),
                     RG_LLM_ERR_OVER_RATE);
    assert_int_equal(rg_llm_openai_classify(429, &rate, &rpm),
                     RG_LLM_ERR_RATE);
    assert_int_equal(rg_llm_openai_classify(429, &other, &nomoney),
                     RG_LLM_ERR_FATAL);
    assert_int_equal(rg_llm_openai_classify(429, &rate, &billing),
                     RG_LLM_ERR_FATAL);
    assert_int_equal(rg_llm_openai_classify(401, NULL, NULL),
                     RG_LLM_ERR_FATAL);
    assert_int_equal(rg_llm_openai_classify(403, NULL, NULL),
                     RG_LLM_ERR_FATAL);
    assert_int_equal(rg_llm_openai_classify(404, NULL, NULL),
                     RG_LLM_ERR_FATAL);
    assert_int_equal(rg_llm_openai_classify(600, NULL, NULL),
                     RG_LLM_ERR_FATAL);
    assert_int_equal(rg_llm_openai_classify(302, NULL, NULL),
                     RG_LLM_ERR_FATAL);
    assert_int_equal(rg_llm_openai_classify(200, NULL, NULL), RG_LLM_OK);
    assert_int_equal(rg_llm_openai_classify(0, NULL, NULL),
                     RG_LLM_ERR_CONNECT);
}


static void
rg_test_status_names(void **state)
{
    RG_UNUSED(state);

    assert_string_equal(rg_llm_status_name(RG_LLM_OK), "ok");
    assert_string_equal(rg_llm_status_name(RG_LLM_ERR_RATE), "rate_limited");
    assert_string_equal(rg_llm_status_name(RG_LLM_ERR_SERVER), "server_error");
    assert_string_equal(rg_llm_status_name(RG_LLM_ERR_TIMEOUT), "timeout");
    assert_string_equal(rg_llm_status_name(RG_LLM_ERR_CONNECT),
                        "connect_error");
    assert_string_equal(rg_llm_status_name(RG_LLM_ERR_BAD_RESPONSE),
                        "bad_response");
    assert_string_equal(rg_llm_status_name(RG_LLM_ERR_CONTEXT),
                        "context_length_exceeded");
    assert_string_equal(rg_llm_status_name(RG_LLM_ERR_FATAL), "fatal");
    assert_string_equal(rg_llm_status_name((rg_llm_status_e) 99), "unknown");
}


/* request builders */

#define rg_test_buf(b, expect)                                               \
    do {                                                                     \
        assert_non_null((b)->data);                                          \
        assert_string_equal((b)->data, (expect));                            \
        assert_int_equal((b)->len, strlen(expect));                          \
    } while (0)


static void
rg_test_prefix(void **state)
{
    const char  tools[] = "[{\"type\":\"function\",\"function\":{\"name\":"
                          "\"ls\",\"parameters\":{\"type\" : \"object\"}}}]";
    rg_buf_t    b;

    RG_UNUSED(state);

    memset(&b, 0, sizeof(b));

    assert_int_equal(rg_llm_openai_prefix(&b, "gpt-4o", 0, NULL, 0), RG_OK);
    rg_test_buf(&b, "{\"model\":\"gpt-4o\",\"temperature\":0,\"messages\":[");

    rg_buf_reset(&b);
    assert_int_equal(rg_llm_openai_prefix(&b, "m", 0.7, "[]", 2), RG_OK);
    rg_test_buf(&b, "{\"model\":\"m\",\"temperature\":0.7,\"messages\":[");

    rg_buf_reset(&b);
    assert_int_equal(rg_llm_openai_prefix(&b, "m", 1, tools,
                                          sizeof(tools) - 1), RG_OK);
    rg_test_buf(&b,
        "{\"model\":\"m\",\"temperature\":1,\"tool_choice\":\"auto\","
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"ls\","
        "\"parameters\":{\"type\":\"object\"}}}],\"messages\":[");

    /* appended after what is there; refused tools leave it as it was */
    assert_int_equal(rg_llm_openai_prefix(&b, "m", 0.25, "{}", 2), RG_ERROR);
    assert_int_equal(rg_llm_openai_prefix(&b, "m", 0.25, "[", 1), RG_ERROR);
    rg_test_buf(&b,
        "{\"model\":\"m\",\"temperature\":1,\"tool_choice\":\"auto\","
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"ls\","
        "\"parameters\":{\"type\":\"object\"}}}],\"messages\":[");

    rg_buf_reset(&b);
    assert_int_equal(rg_llm_openai_prefix(&b, "m", 0.1, NULL, 0), RG_OK);
    rg_test_buf(&b, "{\"model\":\"m\",\"temperature\":0.1,\"messages\":[");

    rg_buf_free(&b);
}


static void
rg_test_messages(void **state)
{
    const char    text[] = "say \"hi\"\n\t\\ caf\xc3\xa9 \xf0\x9f\x98\x8a "
                           "\x01 </script>";
    json_t       *req;
    rg_buf_t      b;
    json_error_t  err;

    RG_UNUSED(state);

    memset(&b, 0, sizeof(b));

    assert_int_equal(rg_llm_openai_msg(&b, "user", text, sizeof(text) - 1),
                     RG_OK);
    rg_test_buf(&b,
        "{\"role\":\"user\",\"content\":\"say \\\"hi\\\"\\n\\t\\\\ "
        "caf\xc3\xa9 \xf0\x9f\x98\x8a \\u0001 </script>\"}");

    rg_buf_reset(&b);
    assert_int_equal(rg_llm_openai_tool_msg(&b, "call_1", "ok", 2), RG_OK);
    rg_test_buf(&b,
        "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"ok\"}");

    /* a tool's output is bytes: broken UTF-8 becomes U+FFFD, a length
     * counts, NULs are kept */
    rg_buf_reset(&b);
    assert_int_equal(rg_llm_openai_tool_msg(&b, "c", "a\xff\xc3" "b\0cZZ", 6),
                     RG_OK);
    rg_test_buf(&b,
        "{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":"
        "\"a\xef\xbf\xbd\xef\xbf\xbd" "b\\u0000c\"}");

    rg_buf_reset(&b);
    assert_int_equal(rg_llm_openai_msg(&b, "assistant", NULL, 0), RG_OK);
    rg_test_buf(&b, "{\"role\":\"assistant\",\"content\":null}");

    rg_buf_reset(&b);
    assert_int_equal(rg_llm_openai_msg(&b, "system", "", 0), RG_OK);
    rg_test_buf(&b, "{\"role\":\"system\",\"content\":\"\"}");

    /* a whole request, as the agent assembles it, is one JSON object */
    rg_buf_reset(&b);
    assert_int_equal(rg_llm_openai_prefix(&b, "m", 0, NULL, 0), RG_OK);
    assert_int_equal(rg_llm_openai_msg(&b, "user", text, sizeof(text) - 1),
                     RG_OK);
    assert_int_equal(rg_buf_append_lit(&b, ","), RG_OK);
    assert_int_equal(rg_llm_openai_tool_msg(&b, "x", "y", 1), RG_OK);
    assert_int_equal(rg_buf_append_lit(&b, "]}"), RG_OK);

    req = json_loadb(b.data, b.len, 0, &err);
    assert_non_null(req);
    assert_int_equal(json_array_size(json_object_get(req, "messages")), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(req, "messages"), 0),
                            "content")),
                        text);
    json_decref(req);

    rg_buf_free(&b);
}


static void
rg_test_tool_def(void **state)
{
    rg_buf_t  b;

    RG_UNUSED(state);

    memset(&b, 0, sizeof(b));

    assert_int_equal(rg_llm_openai_tool_def(&b, "read_file",
        "Reads a \"file\".",
        "{\"type\": \"object\", \"properties\": {\"path\": {\"type\": "
        "\"string\"}, \"max\": {\"type\": \"number\", \"maximum\": 0.7}}, "
        "\"required\": [\"path\"]}"), RG_OK);
    rg_test_buf(&b,
        "{\"type\":\"function\",\"function\":{\"name\":\"read_file\","
        "\"description\":\"Reads a \\\"file\\\".\",\"parameters\":{"
        "\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
        "\"max\":{\"type\":\"number\",\"maximum\":0.7}},"
        "\"required\":[\"path\"]}}}");

    rg_buf_reset(&b);
    assert_int_equal(rg_llm_openai_tool_def(&b, "now", NULL, NULL), RG_OK);
    rg_test_buf(&b, "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}");

    rg_buf_free(&b);
}


static void
rg_test_tool_def_rejects(void **state)
{
    size_t       i;
    rg_buf_t     b;
    const char  *bad[] = {
        "[{\"type\":\"object\"}]", "\"object\"", "42", "null", "true", "",
        "{\"type\":", "{\"type\":\"object\"} {}", "{'type':'object'}"
    };

    RG_UNUSED(state);

    memset(&b, 0, sizeof(b));

    assert_int_equal(rg_buf_append_lit(&b, "[before,"), RG_OK);

    for (i = 0; i < rg_nelems(bad); i++) {
        if (rg_llm_openai_tool_def(&b, "t", "d", bad[i]) != RG_ERROR) {
            fail_msg("accepted parameters %s", bad[i]);
        }

        rg_test_buf(&b, "[before,");
    }

    rg_buf_free(&b);
}


/* the recorded provider responses */

typedef struct {
    const char           *id;
    const char           *name;
    const char           *arguments;  /* compared as JSON; NULL: by check */
} rg_test_call_t;

typedef struct rg_test_fixture_s  rg_test_fixture_t;

typedef void (*rg_test_check_pt)(rg_llm_response_t *r);

struct rg_test_fixture_s {
    const char           *file;
    int                   http_status; /* fed with a .json; a .http says */
    rg_llm_status_e       status;
    const char           *content;     /* NULL: no content */
    const char           *reasoning;   /* a prefix; NULL: none */
    const char           *refusal;     /* NULL: none */
    const char           *finish_reason;
    int64_t               usage[3];    /* prompt, completion, total */
    rg_uint_t             ncalls;
    rg_test_call_t        calls[2];
    const char           *error;
    const char           *error_type;
    const char           *error_code;
    const char           *error_param;
    rg_test_check_pt      check;       /* what the table cannot say */
};

typedef struct {
    const rg_test_fixture_t  *fixture;
    rg_pool_t                *pool;
    char                     *data;
} rg_test_state_t;


static void
rg_test_check_complex_args(rg_llm_response_t *r)
{
    json_t        *args, *conds, *last;
    json_error_t   err;

    args = json_loadb(r->calls[0].arguments.data, r->calls[0].arguments.len,
                      0, &err);
    assert_non_null(args);

    conds = json_object_get(args, "conditions");
    assert_int_equal(json_array_size(conds), 4);

    last = json_object_get(json_array_get(conds, 3), "value");
    assert_true(json_is_object(last));
    assert_int_equal(json_object_size(last), 1);
    assert_string_equal(json_string_value(json_object_get(last,
                                                          "column_name")),
                        "expected_delivery_date");

    json_decref(args);
}


static void
rg_test_check_raw_newlines(rg_llm_response_t *r)
{
    /* the text is kept as sent, raw newlines and all */
    rg_test_str(&r->calls[0].arguments, "{\n\"location\": \"Boston, MA\"\n}");
}


static const rg_test_fixture_t  rg_test_fixtures[] = {

    /* 1. OpenAI reference behaviour */

    { .file = "openai_plain_text.json", .http_status = 200,
      .content = "I'm unable to provide real-time weather updates. To get the "
                 "current weather in San Francisco, I recommend checking a "
                 "reliable weather website or app like the Weather Channel "
                 "or a local news station.",
      .finish_reason = "stop", .usage = { 14, 37, 51 } },

    { .file = "openai_single_tool_call.json", .http_status = 200,
      .finish_reason = "tool_calls", .usage = { 48, 19, 67 },
      .ncalls = 1,
      .calls = { { "call_CUdUoJpsWWVdxXntucvnol1M", "get_weather",
                   "{\"city\":\"San Francisco\",\"state\":\"CA\"}" } } },

    { .file = "openai_parallel_tool_calls.json", .http_status = 200,
      .finish_reason = "tool_calls", .usage = { 149, 60, 209 },
      .ncalls = 2,
      .calls = { { "call_fdNz3vOBKYgOIpMdWotB9MjY", "GetWeatherArgs",
                   "{\"city\": \"Edinburgh\", \"country\": \"GB\", "
                   "\"units\": \"c\"}" },
                 { "call_h1DWI1POMJLb0KwIyQHWXD4p", "get_stock_price",
                   "{\"ticker\": \"AAPL\", \"exchange\": \"NASDAQ\"}" } } },

    { .file = "openai_tool_call_complex_args.json", .http_status = 200,
      .finish_reason = "tool_calls", .usage = { 512, 132, 644 },
      .ncalls = 1,
      .calls = { { "call_NKpApJybW1MzOjZO2FzwYw0d", "Query", NULL } },
      .check = rg_test_check_complex_args },

    { .file = "openai_refusal_null_content.json", .http_status = 200,
      .refusal = "I'm very sorry, but I can't assist with that.",
      .finish_reason = "stop", .usage = { 79, 12, 91 } },

    { .file = "openai_finish_length.json", .http_status = 200,
      .content = "{\"", .finish_reason = "length", .usage = { 79, 1, 80 } },

    { .file = "openai_usage_details_full.json", .http_status = 200,
      .content = "Hello! How can I assist you today?",
      .finish_reason = "stop", .usage = { 19, 10, 29 } },

    { .file = "openai_tool_call_args_newlines.json", .http_status = 200,
      .finish_reason = "tool_calls", .usage = { 82, 17, 99 },
      .ncalls = 1,
      .calls = { { "call_abc123", "get_current_weather",
                   "{\"location\":\"Boston, MA\"}" } },
      .check = rg_test_check_raw_newlines },

    { .file = "openai_content_with_tool_calls.json", .http_status = 200,
      .content = "I am about to call the relevant function to list all "
                 "workspaces for the user admin and provide their workspace "
                 "IDs.\n\nExecuting the function call now.",
      .finish_reason = "tool_calls", .usage = { 4862, 45, 4914 },
      .ncalls = 1,
      .calls = { { "call_aEuQAWKQYInC6fQ4z0iatdVP",
                   "bmcp_coder_coder_list_workspaces",
                   "{\"owner\":\"admin\"}" } } },

    /* 4. provider deviations, non-streaming */

    { .file = "gemini_openai_compat_empty_tool_call_id.json",
      .http_status = 200,
      .finish_reason = "tool_calls", .usage = { 35, 12, 109 },
      .ncalls = 1,
      .calls = { { RG_TEST_ID_PREFIX "_0", "get_current_time", "{}" } } },

    { .file = "mistral_tool_call_no_type_9char_id.json", .http_status = 200,
      .finish_reason = "tool_calls", .usage = { 65, 16, 81 },
      .ncalls = 1,
      .calls = { { "FI5qQGzDE", "get_image", "{}" } } },

    { .file = "mistral_tool_call_no_type_no_content.json", .http_status = 200,
      .finish_reason = "tool_calls", .usage = { 124, 22, 146 },
      .ncalls = 1,
      .calls = { { "gSIMJiOkT", "weather",
                   "{\"location\": \"San Francisco\"}" } } },

    { .file = "cerebras_tool_call_no_content_field.json", .http_status = 200,
      .finish_reason = "tool_calls", .usage = { 364, 33, 397 },
      .ncalls = 1,
      .calls = { { "b8847f144", "final_result",
                   "{\"city\": \"Paris\", \"country\": \"France\"}" } } },

    { .file = "groq_tool_call_no_content_x_groq.json", .http_status = 200,
      .finish_reason = "tool_calls", .usage = { 712, 20, 732 },
      .ncalls = 1,
      .calls = { { "911ra51k8", "get_image", "{}" } } },

    { .file = "ollama_tool_call_reasoning_empty_content.json",
      .http_status = 200,
      .reasoning = "The conversation: user asked \"What is the capital of "
                   "France?\"",
      .finish_reason = "tool_calls", .usage = { 206, 194, 400 },
      .ncalls = 1,
      .calls = { { "call_o2vnpxrw", "final_result",
                   "{\"city\":\"Paris\",\"country\":\"France\"}" } } },

    { .file = "deepseek_parallel_tools_content_reasoning.json",
      .http_status = 200,
      .content = "Let me get your name and roll the die!",
      .reasoning = "Great, now I have access to the dice roll tool. Let me "
                   "first get the player's name and then roll the die.",
      .finish_reason = "tool_calls", .usage = { 875, 79, 954 },
      .ncalls = 2,
      .calls = { { "call_00_6edlnw3Z1MgeMfey687g8451", "get_player_name",
                   "{}" },
                 { "call_01_km02sac7sHxNDPATKLZy7705", "roll_dice", "{}" } } },

    { .file = "together_hf_tool_call_seed_prompt.json", .http_status = 200,
      .finish_reason = "tool_calls", .usage = { 19, 29, 48 },
      .ncalls = 1,
      .calls = { { "call_7qxjvbuxpm6017n3jcq1uqwt", "final_result",
                   "{\"response\":[2,3,5]}" } } },

    { .file = "azure_content_filter_results.json", .http_status = 200,
      .content = "The capital of France is **Paris**.",
      .finish_reason = "stop", .usage = { 14, 9, 23 } },

    { .file = "openrouter_tool_call_native_finish_reason.json",
      .http_status = 200,
      .finish_reason = "tool_calls", .usage = { 134, 43, 177 },
      .ncalls = 1,
      .calls = { { "3sniiMddS", "divide",
                   "{\"numerator\": 123, \"denominator\": 456, "
                   "\"on_inf\": \"infinity\"}" } } },

    /* 5. error responses */

    { .file = "error_400_context_length_exceeded.http", .http_status = 400,
      .status = RG_LLM_ERR_CONTEXT,
      .error = "Input tokens exceed the configured limit of 272000 tokens. "
               "Your messages resulted in 3148588 tokens. Please reduce the "
               "length of the messages.",
      .error_type = "invalid_request_error",
      .error_code = "context_length_exceeded", .error_param = "messages" },

    { .file = "error_400_openai_unsupported_parameter.json",
      .http_status = 400, .status = RG_LLM_ERR_FATAL,
      .error = "Unsupported parameter: 'max_tokens' is not supported with "
               "this model. Use 'max_completion_tokens' instead.",
      .error_type = "invalid_request_error",
      .error_code = "unsupported_parameter", .error_param = "max_tokens" },

    { .file = "error_400_openai_unsupported_value.json",
      .http_status = 400, .status = RG_LLM_ERR_FATAL,
      .error = "Unsupported value: 'messages[0].role' does not support "
               "'system' with this model.",
      .error_type = "invalid_request_error",
      .error_code = "unsupported_value", .error_param = "messages[0].role" },

    { .file = "error_404_groq_model_not_found.json",
      .http_status = 404, .status = RG_LLM_ERR_FATAL,
      .error = "The model `non-existent` does not exist or you do not have "
               "access to it.",
      .error_type = "invalid_request_error",
      .error_code = "model_not_found" },

    { .file = "error_429_openrouter_provider_metadata.json",
      .http_status = 429, .status = RG_LLM_ERR_RATE,
      .error = "Provider returned error", .error_code = "429" },

    { .file = "error_400_groq_tool_use_failed.json",
      .http_status = 400, .status = RG_LLM_ERR_FATAL,
      .error = "Tool call validation failed: tool call validation failed: "
               "parameters for tool get_something_by_name did not match "
               "schema: errors: [missing properties: 'name', "
               "additionalProperties 'foo' not allowed]",
      .error_type = "invalid_request_error",
      .error_code = "tool_use_failed" },
};


/* the header line starts with name (lowercase); the buffer has no NUL */
static int
rg_test_header(const char *line, const char *eol, const char *name)
{
    size_t  i, n;

    n = strlen(name);

    if ((size_t) (eol - line) < n) {
        return 0;
    }

    for (i = 0; i < n; i++) {
        if (tolower((unsigned char) line[i]) != name[i]) {
            return 0;
        }
    }

    return 1;
}


/* "HTTP/2.0 400 Bad Request\r\n" headers "\r\n\r\n" body */
static void
rg_test_split_http(const char *data, size_t len, int *status,
    const char **body, size_t *body_len)
{
    size_t       clen;
    const char  *p, *end, *eol, *line;

    end = data + len;

    eol = memmem(data, len, "\r\n", 2);
    assert_non_null(eol);
    assert_true(len > 5 && memcmp(data, "HTTP/", 5) == 0);

    p = memchr(data, ' ', (size_t) (eol - data));
    assert_non_null(p);
    assert_true(eol - p >= 4);
    *status = (int) rg_atoi(p + 1, 3);
    assert_in_range(*status, 100, 599);

    clen = (size_t) -1;

    for (line = eol + 2; ; line = eol + 2) {
        eol = memmem(line, (size_t) (end - line), "\r\n", 2);
        assert_non_null(eol);

        if (eol == line) {
            break;
        }

        if (rg_test_header(line, eol, "content-length:")) {
            for (p = line + 15; *p == ' '; p++) { /* void */ }
            clen = (size_t) rg_atoi(p, (size_t) (eol - p));
        }
    }

    *body = eol + 2;
    *body_len = (size_t) (end - *body);

    if (clen != (size_t) -1) {
        assert_int_equal(clen, *body_len);
    }
}


static int
rg_test_fixture_setup(void **state)
{
    rg_test_state_t  *st;

    st = calloc(1, sizeof(rg_test_state_t));
    if (st == NULL) {
        return -1;
    }

    st->fixture = *state;
    st->pool = rg_pool_create(4096);
    if (st->pool == NULL) {
        free(st);
        return -1;
    }

    *state = st;

    return 0;
}


static int
rg_test_fixture_teardown(void **state)
{
    rg_test_state_t  *st;

    st = *state;

    rg_pool_destroy(st->pool);
    free(st->data);
    free(st);

    return 0;
}


static void
rg_test_fixture(void **state)
{
    int                       status;
    char                      path[4096];
    size_t                    len, body_len, i;
    const char               *body;
    rg_test_state_t          *st;
    rg_llm_response_t         r;
    const rg_test_fixture_t  *f;

    st = *state;
    len = 0;
    f = st->fixture;

    rg_test_fixtures_present();

    snprintf(path, sizeof(path), "%s/%s", rg_test_fixtures_dir(), f->file);

    st->data = rg_test_read(path, &len);
    if (st->data == NULL) {
        fail_msg("cannot read %s", path);
    }

    body = st->data;
    body_len = len;
    status = f->http_status;

    if (rg_test_suffix(f->file, ".http")) {
        rg_test_split_http(st->data, len, &status, &body, &body_len);
        assert_int_equal(status, f->http_status);
    }

    memset(&r, 0, sizeof(r));

    assert_int_equal(rg_llm_openai_parse(st->pool, status, body, body_len,
                                         RG_TEST_ID_PREFIX, 0, &r), RG_OK);

    if (r.status != f->status) {
        fail_msg("status %s, expected %s (error \"%s\")",
                 rg_llm_status_name(r.status), rg_llm_status_name(f->status),
                 r.error.data);
    }

    assert_int_equal(r.http_status, status);

    if (f->content != NULL) {
        assert_true(r.has_content);
        rg_test_str(&r.content, f->content);

    } else {
        assert_false(r.has_content);
        rg_test_str_empty(&r.content);
    }

    if (f->reasoning != NULL) {
        assert_true(r.reasoning.len >= strlen(f->reasoning));
        assert_memory_equal(r.reasoning.data, f->reasoning,
                            strlen(f->reasoning));

    } else {
        rg_test_str_empty(&r.reasoning);
    }

    rg_test_str(&r.refusal, f->refusal ? f->refusal : "");
    rg_test_str(&r.finish_reason, f->finish_reason ? f->finish_reason : "");

    assert_int_equal(r.prompt_tokens, f->usage[0]);
    assert_int_equal(r.completion_tokens, f->usage[1]);
    assert_int_equal(r.total_tokens, f->usage[2]);

    assert_int_equal(r.ncalls, f->ncalls);

    for (i = 0; i < f->ncalls; i++) {
        rg_test_str(&r.calls[i].id, f->calls[i].id);
        rg_test_str(&r.calls[i].name, f->calls[i].name);

        if (f->calls[i].arguments != NULL) {
            rg_test_json(r.calls[i].arguments.data, r.calls[i].arguments.len,
                         f->calls[i].arguments);
        }
    }

    rg_test_str(&r.error, f->error ? f->error : "");
    rg_test_str(&r.error_type, f->error_type ? f->error_type : "");
    rg_test_str(&r.error_code, f->error_code ? f->error_code : "");
    rg_test_str(&r.error_param, f->error_param ? f->error_param : "");

    if (r.status == RG_LLM_OK) {
        rg_test_check_message(&r);

    } else {
        rg_test_str_empty(&r.message);
    }

    if (f->check != NULL) {
        f->check(&r);
    }
}


/* every .json and .http of the folder has its row above */
static void
rg_test_fixtures_covered(void **state)
{
    DIR            *d;
    size_t          i;
    rg_uint_t       missing;
    struct dirent  *de;

    RG_UNUSED(state);

    rg_test_fixtures_present();

    d = opendir(rg_test_fixtures_dir());
    assert_non_null(d);

    missing = 0;

    while ((de = readdir(d)) != NULL) {
        if (!rg_test_suffix(de->d_name, ".json")
            && !rg_test_suffix(de->d_name, ".http"))
        {
            continue;
        }

        for (i = 0; i < rg_nelems(rg_test_fixtures); i++) {
            if (strcmp(rg_test_fixtures[i].file, de->d_name) == 0) {
                break;
            }
        }

        if (i == rg_nelems(rg_test_fixtures)) {
            print_error("fixture %s has no expectation in %s\n",
                        de->d_name, __FILE__);
            missing++;
        }
    }

    closedir(d);

    assert_int_equal(missing, 0);
}


/* the messages written without building an object are byte for byte
 * what jansson's json_dumps(JSON_COMPACT) gives for one, for strings that
 * take the plain path and strings that need escaping */
static void
rg_test_written_as_jansson(void **state)
{
    char         *want;
    size_t        i;
    json_t       *o;
    rg_buf_t      b;
    const char   *strs[] = {
        "call_0_1_2", "", "a\"b", "back\\slash", "tab\there", "nl\n",
        "\x01\x1f", "del\x7f", "sl/ash", "caf\xc3\xa9", "\xe2\x80\xa8",
        "</script>", "{\"expression\":\"2*(3+4)\"}", " ~!", NULL
    };

    (void) state;

    for (i = 0; strs[i]; i++) {
        memset(&b, 0, sizeof(rg_buf_t));
        assert_int_equal(rg_llm_openai_tool_msg(&b, strs[i], strs[i],
                                                strlen(strs[i])), RG_OK);

        o = json_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id",
                      strs[i], "content", strs[i]);
        assert_non_null(o);
        want = json_dumps(o, JSON_COMPACT);
        assert_non_null(want);

        if (strcmp(b.data, want) != 0) {
            print_error("%s\n    is not\n%s\n", b.data, want);
            fail();
        }

        free(want);
        json_decref(o);
        rg_buf_free(&b);
    }
}


/* a request body is held while the model answers: it takes the room its
 * messages need and no more, from one round to the next larger one */
static void
rg_test_body_exact(void **state)
{
    rg_buf_t       b;
    rg_llm_body_t  bd;
    const char    *msgs[] = { "{\"role\":\"user\",\"content\":\"hi\"}",
                            "{\"role\":\"assistant\",\"content\":\"x\"}" };
    size_t       i, n, more;

    memset(&b, 0, sizeof(b));

    for (n = 1; n <= 2; n++) {
        more = 0;
        for (i = 0; i < n; i++) {
            more += strlen(msgs[i]) + 1;
        }

        rg_buf_reset(&b);
        assert_int_equal(rg_llm_body_start(&bd, &rg_llm_codecs[RG_LLM_CHAT],
                                           0, &b, "{\"messages\":[", 13,
                                           more), RG_OK);
        for (i = 0; i < n; i++) {
            assert_int_equal(rg_llm_body_add(&bd, i ? 'a' : 'u', msgs[i],
                                             strlen(msgs[i])), RG_OK);
        }
        assert_int_equal(rg_llm_body_end(&bd), RG_OK);

        /* the comma before the first message is not written: one spare */
        assert_true(b.cap - b.len <= 2);
        assert_int_equal(b.data[b.len], '\0');
        assert_non_null(strstr(b.data, msgs[n - 1]));
    }

    rg_buf_free(&b);
}

int
main(void)
{
    int                rc;
    size_t             i;
    struct CMUnitTest  fixtures[rg_nelems(rg_test_fixtures) + 1];

    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup_teardown(rg_test_content_null_with_tool_calls,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_tool_calls_in_order,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_arguments_not_a_string,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_made_ids_unique,
                                        rg_test_pool_setup,
                                        rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_calls_capped,
                                        rg_test_pool_setup,
                                        rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_calls_same_id,
                                        rg_test_pool_setup,
                                        rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_missing_fields,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_content_array,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_reasoning_refusal_legacy,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_huge_integers_and_nul,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_not_json_200,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_no_choices,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_error_numeric_code,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_error_not_json,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_error_inside_200,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test(rg_test_classify),
        cmocka_unit_test(rg_test_status_names),
        cmocka_unit_test(rg_test_prefix),
        cmocka_unit_test(rg_test_body_exact),
        cmocka_unit_test(rg_test_messages),
        cmocka_unit_test(rg_test_tool_def),
        cmocka_unit_test(rg_test_tool_def_rejects),
        cmocka_unit_test(rg_test_written_as_jansson),
    };

    for (i = 0; i < rg_nelems(rg_test_fixtures); i++) {
        fixtures[i].name = rg_test_fixtures[i].file;
        fixtures[i].test_func = rg_test_fixture;
        fixtures[i].setup_func = rg_test_fixture_setup;
        fixtures[i].teardown_func = rg_test_fixture_teardown;
        fixtures[i].initial_state = (void *) &rg_test_fixtures[i];
    }

    fixtures[i].name = "fixtures_covered";
    fixtures[i].test_func = rg_test_fixtures_covered;
    fixtures[i].setup_func = NULL;
    fixtures[i].teardown_func = NULL;
    fixtures[i].initial_state = NULL;

    rc = cmocka_run_group_tests_name("llm_openai", tests, NULL, NULL);
    rc += cmocka_run_group_tests_name("llm_openai_fixtures", fixtures, NULL,
                                      NULL);

    return rc;
}
