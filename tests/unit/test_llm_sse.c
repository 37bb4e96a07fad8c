/* test_llm_sse.c: tests of the streamed answer reader (src/llm/rg_llm_sse.c).
 * Every recorded provider stream of shared/fixtures/providers
 * (RG_FIXTURES_DIR) and every small stream of tests/fixtures is checked
 * against the interpretation INDEX.md (or the table below) gives, fed
 * four ways (whole, in pieces of 7 bytes, one byte at a time, in pieces
 * of 7 bytes each read in its own jansson arena) with the same result
 * each time. Then the cases no file shows: the limits, bodies
 * that are not streams, [DONE] before finish, errors without words. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json.h>
#include <rg_llm_openai.h>
#include <rg_llm_sse.h>
#include <rg_test.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <rg_test_fixtures.h>

#include <dirent.h>
#include <jansson.h>


#define RG_TEST_ID_PREFIX    "t"
#define RG_TEST_OWN_DIR      "tests/fixtures"

/* the ways a file is fed: whole, 7 bytes, 1 byte at a time, 7 bytes in
 * arenas (what jansson allocates in one call is gone after it) */
#define RG_TEST_FEEDS        4
#define RG_TEST_ARENA        3


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


typedef struct {
    const char           *id;
    const char           *name;
    const char           *arguments;  /* compared as JSON; NULL: by check */
} rg_test_call_t;

typedef struct rg_test_fixture_s  rg_test_fixture_t;

typedef void (*rg_test_check_pt)(rg_llm_sse_t *p, rg_llm_response_t *r);

/* Texts: `content` exact, or any of prefix, suffix and length in
 * characters; none of them means no content. The same for reasoning.
 * http_status 0 means 200. */
struct rg_test_fixture_s {
    const char           *file;
    unsigned              own;          /* in tests/fixtures */
    int                   http_status;
    rg_llm_status_e       status;
    unsigned              done;         /* [DONE] seen */
    const char           *content;
    const char           *content_prefix;
    const char           *content_suffix;
    size_t                content_chars;
    const char           *reasoning;
    const char           *reasoning_prefix;
    size_t                reasoning_chars;
    const char           *refusal;
    const char           *finish_reason;
    int64_t               usage[3];     /* prompt, completion, total */
    rg_uint_t             ncalls;
    rg_test_call_t        calls[3];
    const char           *error;
    const char           *error_prefix;
    const char           *error_type;
    const char           *error_code;
    const char           *error_param;
    rg_test_check_pt      check;        /* what the table cannot say */
};

typedef struct {
    const rg_test_fixture_t  *fixture;
    char                     *data;
    rg_pool_t                *pools[RG_TEST_FEEDS];
    rg_llm_sse_t             *parsers[RG_TEST_FEEDS];
} rg_test_state_t;


/* characters of UTF-8 text */
static size_t
rg_test_chars(const rg_str_t *s)
{
    size_t  i, n;

    for (i = 0, n = 0; i < s->len; i++) {
        if (((unsigned char) s->data[i] & 0xc0) != 0x80) {
            n++;
        }
    }

    return n;
}


static void
rg_test_text(const rg_str_t *s, const char *exact, const char *prefix,
    const char *suffix, size_t chars)
{
    size_t  n;

    assert_non_null(s->data);
    assert_int_equal(s->data[s->len], '\0');

    if (exact != NULL) {
        rg_test_str(s, exact);
    }

    if (prefix != NULL) {
        n = strlen(prefix);
        assert_true(s->len >= n);
        assert_memory_equal(s->data, prefix, n);
    }

    if (suffix != NULL) {
        n = strlen(suffix);
        assert_true(s->len >= n);
        assert_memory_equal(s->data + s->len - n, suffix, n);
    }

    if (chars != 0) {
        assert_int_equal(rg_test_chars(s), chars);
    }

    if (exact == NULL && prefix == NULL && suffix == NULL && chars == 0) {
        rg_test_str_empty(s);
    }
}


static void
rg_test_expect(const rg_test_fixture_t *f, rg_llm_sse_t *p,
    rg_llm_response_t *r)
{
    size_t  i;

    if (r->status != f->status) {
        fail_msg("%s: status %s, expected %s (error \"%s\")", f->file,
                 rg_llm_status_name(r->status), rg_llm_status_name(f->status),
                 r->error.data);
    }

    assert_int_equal(r->http_status, f->http_status ? f->http_status : 200);
    assert_int_equal(rg_llm_sse_done(p), f->done);

    rg_test_text(&r->content, f->content, f->content_prefix,
                 f->content_suffix, f->content_chars);
    assert_int_equal(r->has_content, r->content.len > 0);

    rg_test_text(&r->reasoning, f->reasoning, f->reasoning_prefix, NULL,
                 f->reasoning_chars);

    rg_test_str(&r->refusal, f->refusal ? f->refusal : "");
    rg_test_str(&r->finish_reason, f->finish_reason ? f->finish_reason : "");

    assert_int_equal(r->prompt_tokens, f->usage[0]);
    assert_int_equal(r->completion_tokens, f->usage[1]);
    assert_int_equal(r->total_tokens, f->usage[2]);

    assert_int_equal(r->ncalls, f->ncalls);

    for (i = 0; i < f->ncalls; i++) {
        rg_test_str(&r->calls[i].id, f->calls[i].id);
        rg_test_str(&r->calls[i].name, f->calls[i].name);

        if (f->calls[i].arguments != NULL) {
            rg_test_json(r->calls[i].arguments.data,
                         r->calls[i].arguments.len, f->calls[i].arguments);
        }
    }

    rg_test_text(&r->error, f->error, f->error_prefix, NULL, 0);
    rg_test_str(&r->error_type, f->error_type ? f->error_type : "");
    rg_test_str(&r->error_code, f->error_code ? f->error_code : "");
    rg_test_str(&r->error_param, f->error_param ? f->error_param : "");

    if (r->status == RG_LLM_OK) {
        rg_test_check_message(r);

    } else {
        rg_test_str_empty(&r->message);
        assert_int_equal(r->ncalls, 0);
    }

    if (f->check != NULL) {
        f->check(p, r);
    }
}


static void
rg_test_same_str(const rg_str_t *a, const rg_str_t *b)
{
    assert_int_equal(a->len, b->len);

    if (a->len) {
        assert_memory_equal(a->data, b->data, a->len);
    }
}


/* two readings of one stream are the same */
static void
rg_test_same(rg_llm_response_t *a, rg_llm_response_t *b)
{
    rg_uint_t  i;

    assert_int_equal(a->status, b->status);
    assert_int_equal(a->http_status, b->http_status);
    assert_int_equal(a->has_content, b->has_content);
    rg_test_same_str(&a->content, &b->content);
    rg_test_same_str(&a->reasoning, &b->reasoning);
    rg_test_same_str(&a->refusal, &b->refusal);
    rg_test_same_str(&a->finish_reason, &b->finish_reason);
    rg_test_same_str(&a->message, &b->message);
    rg_test_same_str(&a->error, &b->error);
    rg_test_same_str(&a->error_type, &b->error_type);
    rg_test_same_str(&a->error_code, &b->error_code);
    rg_test_same_str(&a->error_param, &b->error_param);
    assert_int_equal(a->prompt_tokens, b->prompt_tokens);
    assert_int_equal(a->completion_tokens, b->completion_tokens);
    assert_int_equal(a->total_tokens, b->total_tokens);
    assert_int_equal(a->ncalls, b->ncalls);

    for (i = 0; i < a->ncalls; i++) {
        rg_test_same_str(&a->calls[i].id, &b->calls[i].id);
        rg_test_same_str(&a->calls[i].name, &b->calls[i].name);
        rg_test_same_str(&a->calls[i].arguments, &b->calls[i].arguments);
    }
}


/* checks of what the table cannot say */

static void
rg_test_check_n3(rg_llm_sse_t *p, rg_llm_response_t *r)
{
    size_t       i;
    char         text[64];
    rg_str_t     content, finish;
    const int    temperature[] = { 65, 61, 59 };

    RG_UNUSED(r);

    for (i = 0; i < 3; i++) {
        snprintf(text, sizeof(text), "{\"city\":\"San Francisco\","
                 "\"temperature\":%d,\"units\":\"f\"}", temperature[i]);

        assert_int_equal(rg_llm_sse_choice(p, i, &content, &finish), RG_OK);
        rg_test_same_str(&content, &(rg_str_t) { strlen(text), text });
        rg_test_same_str(&finish, &(rg_str_t) { 4, (char *) "stop" });
    }

    assert_int_equal(rg_llm_sse_choice(p, 3, &content, &finish),
                     RG_DECLINED);
}


static void
rg_test_check_huge_args(rg_llm_sse_t *p, rg_llm_response_t *r)
{
    json_t        *args, *text, *n;
    rg_str_t       s;
    json_error_t   err;

    RG_UNUSED(p);

    args = json_loadb(r->calls[0].arguments.data, r->calls[0].arguments.len,
                      0, &err);
    assert_non_null(args);

    text = json_object_get(args, "text");
    assert_true(json_is_string(text));

    s.data = (char *) json_string_value(text);
    s.len = json_string_length(text);
    assert_int_equal(rg_test_chars(&s), 1000);
    assert_memory_equal(s.data,
                        "reagent \xc3\xa9 \xf0\x9f\x98\x8a \"quoted\"\n", 25);

    n = json_object_get(args, "n");
    assert_int_equal(json_array_size(n), 3);
    assert_int_equal(json_integer_value(json_array_get(n, 0)), 1);
    assert_int_equal(json_integer_value(json_array_get(n, 2)), 3);
    assert_int_equal(rg_test_chars(&r->calls[0].arguments), 1170);

    json_decref(args);
}


static const rg_test_fixture_t  rg_test_fixtures[] = {

    /* shared/fixtures/providers: 2. OpenAI reference behaviour */

    { .file = "stream_openai_plain_text.sse", .done = 1,
      .content = "I'm unable to provide real-time weather updates. To get "
                 "the current weather in San Francisco, I recommend checking "
                 "a reliable weather website or a weather app.",
      .finish_reason = "stop", .usage = { 14, 30, 44 } },

    { .file = "stream_openai_single_tool_nonstrict.sse", .done = 1,
      .finish_reason = "tool_calls", .usage = { 44, 16, 60 },
      .ncalls = 1,
      .calls = { { "call_4XzlGBLtUe9dy3GVNV4jhq7h", "get_weather",
                   "{\"city\":\"New York City\"}" } } },

    { .file = "stream_openai_single_tool_strict.sse", .done = 1,
      .finish_reason = "tool_calls", .usage = { 48, 19, 67 },
      .ncalls = 1,
      .calls = { { "call_CTf1nWJLqSeRgDqaCG27xZ74", "get_weather",
                   "{\"city\":\"San Francisco\",\"state\":\"CA\"}" } } },

    { .file = "stream_openai_parallel_tools.sse", .done = 1,
      .finish_reason = "tool_calls", .usage = { 149, 60, 209 },
      .ncalls = 2,
      .calls = { { "call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs",
                   "{\"city\": \"Edinburgh\", \"country\": \"GB\", "
                   "\"units\": \"c\"}" },
                 { "call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price",
                   "{\"ticker\": \"AAPL\", \"exchange\": \"NASDAQ\"}" } } },

    { .file = "stream_openai_refusal.sse", .done = 1,
      .refusal = "I'm sorry, I can't assist with that request.",
      .finish_reason = "stop", .usage = { 79, 11, 90 } },

    { .file = "stream_openai_finish_length.sse", .done = 1,
      .content = "{\"", .finish_reason = "length", .usage = { 79, 1, 80 } },

    { .file = "stream_openai_n3_choices_interleaved.sse", .done = 1,
      .content = "{\"city\":\"San Francisco\",\"temperature\":65,"
                 "\"units\":\"f\"}",
      .finish_reason = "stop", .usage = { 79, 42, 121 },
      .check = rg_test_check_n3 },

    { .file = "stream_openai_content_then_tool_obfuscation.sse", .done = 1,
      .content = "I am about to call the appropriate tool to list all "
                 "workspaces for the user admin and display their IDs.\n\n",
      .finish_reason = "tool_calls", .usage = { 4862, 45, 4907 },
      .ncalls = 1,
      .calls = { { "call_0TxntkwDB66KH8z4RwNqeWrZ",
                   "bmcp_coder_coder_list_workspaces",
                   "{\"owner\":\"admin\"}" } } },

    { .file = "stream_openai_midstream_error.sse",
      .status = RG_LLM_ERR_SERVER,
      .content = "The question \"",
      .error = "The server had an error while processing your request. "
               "Sorry about that!",
      .error_type = "server_error" },

    /* 3. provider deviations, streaming */

    { .file = "stream_copilot_claude_tool_index1_empty_args.sse", .done = 1,
      .content = "Now listing your Coder workspaces:",
      .finish_reason = "tool_calls", .usage = { 25939, 58, 25997 },
      .ncalls = 1,
      .calls = { { "toolu_vrtx_01DbFqUgk6aAtJ4nDBqzFWDF",
                   "bmcp_coder_coder_list_workspaces", "{}" } } },

    { .file = "stream_copilot_claude_tool_no_role.sse", .done = 1,
      .finish_reason = "tool_calls", .usage = { 25716, 65, 25781 },
      .ncalls = 1,
      .calls = { { "toolu_vrtx_01CvBi1d4qpKTG2PCuc9wDbZ",
                   "bmcp_coder_coder_list_workspaces",
                   "{\"owner\": \"me\"}" } } },

    { .file = "stream_anthropic_compat_tool_index1_no_trailing_newline.sse",
      .done = 1,
      .content = "Reading it.", .finish_reason = "tool_calls",
      .ncalls = 1,
      .calls = { { "toolu_sanitized", "read_file",
                   "{\"path\": \"a.txt\"}" } } },

    { .file = "stream_mistral_tool_call_no_index_no_type.sse", .done = 1,
      .finish_reason = "tool_calls", .usage = { 124, 22, 146 },
      .ncalls = 1,
      .calls = { { "gSIMJiOkT", "weather",
                   "{\"location\": \"San Francisco\"}" } } },

    { .file = "stream_mistral_api_glm_empty_name_continuation.sse",
      .done = 1,
      .finish_reason = "tool_calls", .usage = { 171, 14, 185 },
      .ncalls = 1,
      .calls = { { "chatcmpl-tool-9f149c74c42f265b", "webSearchTool",
                   "{\"query\": \"current Berlin weather\"}" } } },

    { .file = "stream_mistral_magistral_content_array.sse", .done = 1,
      .content_prefix = "To cross the street safely, follow these steps:",
      .content_suffix = "By following these steps, you can ensure a safe "
                        "crossing.",
      .content_chars = 607,
      .reasoning_prefix = "Okay, the user is asking how to cross the street.",
      .reasoning_chars = 421,
      .finish_reason = "stop", .usage = { 10, 232, 242 } },

    { .file = "stream_alibaba_qwen_empty_id_continuation.sse", .done = 1,
      .finish_reason = "tool_calls", .usage = { 295, 22, 317 },
      .ncalls = 1,
      .calls = { { "call_eee11723464a4b9eb8cee71d", "weather",
                   "{\"location\": \"San Francisco\"}" } } },

    { .file = "stream_deepseek_reasoning_content.sse", .done = 1,
      .content = "Hello there! \xf0\x9f\x98\x8a How can I help you today?",
      .reasoning_prefix = "Hmm, the user just said \"Hello\".",
      .reasoning_chars = 882,
      .finish_reason = "stop", .usage = { 6, 212, 218 } },

    { .file = "stream_deepseek_reasoner_tool_call.sse", .done = 1,
      .reasoning_prefix = "The user is asking for the weather in San "
                          "Francisco.",
      .finish_reason = "tool_calls", .usage = { 339, 83, 422 },
      .ncalls = 1,
      .calls = { { "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather",
                   "{\"location\": \"San Francisco\"}" } } },

    { .file = "stream_groq_tool_call_single_chunk_x_groq.sse", .done = 1,
      .reasoning = "We need to call the function with correct parameter "
                   "\"name\". Provide a name, e.g., \"example\".",
      .finish_reason = "tool_calls", .usage = { 304, 49, 353 },
      .ncalls = 1,
      .calls = { { "fc_bfb39741-3748-4def-9886-a93fc9c64a90",
                   "get_something_by_name", "{\"name\":\"example\"}" } } },

    { .file = "stream_groq_event_error_tool_use_failed.sse",
      .status = RG_LLM_ERR_FATAL,
      .reasoning_prefix = "We need to call the tool",
      .error_prefix = "Tool call validation failed",
      .error_type = "invalid_request_error",
      .error_code = "tool_use_failed" },

    { .file = "stream_xai_duplicate_finish_chunk.sse", .done = 1,
      .reasoning = "First, the user is",
      .finish_reason = "tool_calls", .usage = { 291, 26, 513 },
      .ncalls = 1,
      .calls = { { "call_55117580", "weather",
                   "{\"location\":\"San Francisco\"}" } } },

    { .file = "stream_zai_glm_reasoning_content.sse", .done = 1,
      .content = "4",
      .reasoning_prefix = "\n1.  **Analyze the User's Request:**",
      .finish_reason = "stop", .usage = { 13, 564, 577 } },

    { .file = "stream_openrouter_processing_comments_reasoning_error.sse",
      .done = 1, .status = RG_LLM_ERR_FATAL,
      .reasoning = "We need to respond to a greeting. The user",
      .finish_reason = "length", .usage = { 43, 10, 53 },
      .error = "Token limit reached", .error_code = "400" },

    { .file = "stream_openrouter_reasoning_details_interleaved_comments.sse",
      .done = 1,
      .content = "2 + 2 = 4",
      .reasoning = "This is a simple arithmetic question. 2+2 equals 4.",
      .finish_reason = "stop", .usage = { 43, 36, 79 } },

    { .file = "stream_together_hf_text_field_role_every_chunk_trimmed.sse",
      .done = 1,
      .content = "<think>\nOkay, the user \xf0\x9f\x8c\x9f",
      .finish_reason = "stop", .usage = { 10, 955, 965 } },

    /* tests/fixtures: framing */

    { .file = "sse_crlf.sse", .own = 1, .done = 1,
      .content = "Line one, then\r\nline two.",
      .finish_reason = "tool_calls", .usage = { 12, 8, 20 },
      .ncalls = 1,
      .calls = { { "call_crlf", "echo", "{\"text\":\"hi\"}" } } },

    { .file = "sse_cr_only.sse", .own = 1, .done = 1,
      .content = "Old Mac line ends.",
      .finish_reason = "stop", .usage = { 5, 3, 8 } },

    { .file = "sse_comments_everywhere.sse", .own = 1, .done = 1,
      .content = "Done here.", .reasoning = "Thinking.",
      .finish_reason = "stop", .usage = { 7, 4, 11 } },

    { .file = "sse_data_no_space.sse", .own = 1, .done = 1,
      .content = "No space.", .finish_reason = "stop", .usage = { 3, 2, 5 } },

    { .file = "sse_multiline_data.sse", .own = 1, .done = 1,
      .content = "Multi-line data.",
      .finish_reason = "stop", .usage = { 4, 4, 8 } },

    { .file = "sse_done_at_eof.sse", .own = 1, .done = 1,
      .content = "The end", .finish_reason = "stop", .usage = { 2, 2, 4 } },

    { .file = "sse_last_event_no_blank.sse", .own = 1,
      .content = "Ends abruptly.",
      .finish_reason = "stop", .usage = { 2, 3, 5 } },

    { .file = "sse_after_done_ignored.sse", .own = 1, .done = 1,
      .content = "Before", .finish_reason = "stop" },

    { .file = "sse_done_without_finish.sse", .own = 1, .done = 1,
      .content = "No finish reason" },

    { .file = "sse_body_not_a_stream.sse", .own = 1,
      .content = "Whole body.", .finish_reason = "stop",
      .usage = { 9, 3, 12 } },

    /* tests/fixtures: tool calls */

    { .file = "sse_interleaved_tools.sse", .own = 1, .done = 1,
      .finish_reason = "tool_calls", .usage = { 30, 20, 50 },
      .ncalls = 3,
      .calls = { { "call_a", "one", "{\"n\":1}" },
                 { "call_b", "two", "{\"n\":2}" },
                 { "call_c", "three", "{}" } } },

    { .file = "sse_same_index_two_calls.sse", .own = 1, .done = 1,
      .finish_reason = "tool_calls",
      .ncalls = 2,
      .calls = { { "call_x", "first", "{\"a\":1}" },
                 { "call_y", "second", "{\"b\":2}" } } },

    { .file = "sse_huge_args_1byte.sse", .own = 1, .done = 1,
      .finish_reason = "tool_calls", .usage = { 100, 1170, 1270 },
      .ncalls = 1,
      .calls = { { "call_big", "write", NULL } },
      .check = rg_test_check_huge_args },

    { .file = "sse_legacy_function_call_parts.sse", .own = 1, .done = 1,
      .content = "Parts ", .reasoning = "hmm",
      .finish_reason = "function_call",
      .ncalls = 1,
      .calls = { { RG_TEST_ID_PREFIX "_0", "legacy", "{\"x\":true}" } } },

    /* tests/fixtures: streams that fail */

    { .file = "sse_cut_midway.sse", .own = 1,
      .status = RG_LLM_ERR_BAD_RESPONSE,
      .content = "Half an answ",
      .error = "the stream ended before the answer was complete" },

    { .file = "sse_cut_mid_line.sse", .own = 1,
      .status = RG_LLM_ERR_BAD_RESPONSE,
      .error = "the stream ended before the answer was complete" },

    { .file = "sse_malformed_chunk.sse", .own = 1, .done = 1,
      .status = RG_LLM_ERR_BAD_RESPONSE,
      .content = "AC", .finish_reason = "stop",
      .error_prefix = "malformed chunk in the stream: " },

    { .file = "sse_error_event_text.sse", .own = 1,
      .status = RG_LLM_ERR_SERVER,
      .content = "Partial", .error = "upstream connection reset" },

    { .file = "sse_error_rate_limit.sse", .own = 1,
      .status = RG_LLM_ERR_RATE,
      .content = "Wait", .error = "Rate limit reached for requests",
      .error_type = "requests", .error_code = "rate_limit_exceeded" },

    { .file = "sse_error_field_llamacpp.sse", .own = 1,
      .status = RG_LLM_ERR_SERVER,
      .error = "the KV cache is full", .error_type = "server_error",
      .error_code = "500" },
};


static int
rg_test_fixture_setup(void **state)
{
    rg_test_state_t  *st;

    st = calloc(1, sizeof(rg_test_state_t));
    if (st == NULL) {
        return -1;
    }

    st->fixture = *state;
    *state = st;

    return 0;
}


static int
rg_test_fixture_teardown(void **state)
{
    size_t            i;
    rg_test_state_t  *st;

    st = *state;

    for (i = 0; i < RG_TEST_FEEDS; i++) {
        rg_llm_sse_destroy(st->parsers[i]);

        if (st->pools[i] != NULL) {
            rg_pool_destroy(st->pools[i]);
        }
    }

    free(st->data);
    free(st);

    return 0;
}


/* feeds data in pieces of `step` bytes (0: whole), each in its own
 * jansson arena when asked */
static void
rg_test_feed_arena(rg_llm_sse_t *p, const char *data, size_t len,
    size_t step, int arena)
{
    size_t    off, n;
    rg_int_t  rc;

    if (step == 0) {
        step = len;
    }

    for (off = 0; off < len; off += n) {
        n = rg_min(step, len - off);

        if (arena) {
            rg_json_arena_begin();
        }

        rc = rg_llm_sse_feed(p, data + off, n);

        if (arena) {
            rg_json_arena_end();
        }

        assert_int_equal(rc, RG_OK);
    }
}


#define rg_test_feed(p, data, len, step)                                     \
    rg_test_feed_arena(p, data, len, step, 0)


static void
rg_test_fixture(void **state)
{
    char                      path[4096];
    size_t                    len, i;
    rg_int_t                  rc;
    rg_test_state_t          *st;
    rg_llm_response_t         r[RG_TEST_FEEDS];
    const rg_test_fixture_t  *f;
    static const size_t       steps[RG_TEST_FEEDS] = { 0, 7, 1, 7 };

    st = *state;
    f = st->fixture;

    if (f->own) {
        snprintf(path, sizeof(path), "%s/%s", RG_TEST_OWN_DIR, f->file);

    } else {
        rg_test_fixtures_present();
        snprintf(path, sizeof(path), "%s/%s", rg_test_fixtures_dir(),
                 f->file);
    }

    len = 0;

    st->data = rg_test_read(path, &len);
    if (st->data == NULL) {
        fail_msg("cannot read %s", path);
    }

    for (i = 0; i < RG_TEST_FEEDS; i++) {
        st->pools[i] = rg_pool_create(4096);
        assert_non_null(st->pools[i]);

        st->parsers[i] = rg_llm_sse_create(0);
        assert_non_null(st->parsers[i]);

        rg_test_feed_arena(st->parsers[i], st->data, len, steps[i],
                           i == RG_TEST_ARENA);

        memset(&r[i], 0, sizeof(rg_llm_response_t));

        if (i == RG_TEST_ARENA) {
            rg_json_arena_begin();
        }

        rc = rg_llm_sse_finish(st->parsers[i], st->pools[i],
                               f->http_status ? f->http_status : 200,
                               RG_TEST_ID_PREFIX, &r[i]);

        if (i == RG_TEST_ARENA) {
            rg_json_arena_end();
        }

        assert_int_equal(rc, RG_OK);

        rg_test_expect(f, st->parsers[i], &r[i]);

        if (i > 0) {
            rg_test_same(&r[0], &r[i]);
        }
    }
}


/* every .sse of a folder has its row above */
static void
rg_test_covered(const char *dir, unsigned own)
{
    DIR            *d;
    size_t          i;
    rg_uint_t       missing, found;
    struct dirent  *de;

    d = opendir(dir);
    assert_non_null(d);

    missing = 0;
    found = 0;

    while ((de = readdir(d)) != NULL) {
        if (!rg_test_suffix(de->d_name, ".sse")) {
            continue;
        }

        found++;

        for (i = 0; i < rg_nelems(rg_test_fixtures); i++) {
            if (rg_test_fixtures[i].own == own
                && strcmp(rg_test_fixtures[i].file, de->d_name) == 0)
            {
                break;
            }
        }

        if (i == rg_nelems(rg_test_fixtures)) {
            print_error("fixture %s/%s has no expectation in %s\n",
                        dir, de->d_name, __FILE__);
            missing++;
        }
    }

    closedir(d);

    assert_int_equal(missing, 0);
    assert_true(found > 0);
}


static void
rg_test_fixtures_covered(void **state)
{
    RG_UNUSED(state);

    rg_test_fixtures_present();
    rg_test_covered(rg_test_fixtures_dir(), 0);
}


static void
rg_test_own_fixtures_covered(void **state)
{
    RG_UNUSED(state);

    rg_test_covered(RG_TEST_OWN_DIR, 1);
}


/* cases no file shows */

#define RG_TEST_CHUNK(content, finish)                                       \
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" content     \
    "\"},\"finish_reason\":" finish "}]}\n\n"


static void
rg_test_feed_str(rg_llm_sse_t *p, const char *s)
{
    assert_int_equal(rg_llm_sse_feed(p, s, strlen(s)), RG_OK);
}


/* reads a stream given as one string; the parser is left to the caller */
static rg_llm_sse_t *
rg_test_stream(rg_pool_t *pool, int http_status, const char *text,
    rg_llm_response_t *r)
{
    rg_llm_sse_t  *p;

    p = rg_llm_sse_create(0);
    assert_non_null(p);

    assert_int_equal(rg_llm_sse_feed(p, text, strlen(text)), RG_OK);

    memset(r, 0, sizeof(rg_llm_response_t));
    assert_int_equal(rg_llm_sse_finish(p, pool, http_status,
                                       RG_TEST_ID_PREFIX, r), RG_OK);

    return p;
}


static void
rg_test_done_before_finish(void **state)
{
    rg_llm_sse_t       *p;
    rg_llm_response_t   r;

    p = rg_llm_sse_create(0);
    assert_non_null(p);

    assert_int_equal(rg_llm_sse_feed(p, RG_TEST_CHUNK("Hi", "\"stop\""),
                                     sizeof(RG_TEST_CHUNK("Hi", "\"stop\""))
                                     - 1), RG_OK);
    assert_int_equal(rg_llm_sse_done(p), 0);

    /* the line is complete: no blank line needed; spaces forgiven */
    rg_test_feed_str(p, "data: [DONE] \t\n");
    assert_int_equal(rg_llm_sse_done(p), 1);

    /* what follows is ignored */
    assert_int_equal(rg_llm_sse_feed(p, RG_TEST_CHUNK("!", "null"),
                                     sizeof(RG_TEST_CHUNK("!", "null")) - 1),
                     RG_OK);

    memset(&r, 0, sizeof(r));
    r.retry_after = 1234;

    assert_int_equal(rg_llm_sse_finish(p, *state, 200, RG_TEST_ID_PREFIX, &r),
                     RG_OK);
    assert_int_equal(r.status, RG_LLM_OK);
    rg_test_str(&r.content, "Hi");
    assert_int_equal(r.retry_after, 1234);

    /* a second finish says the same */
    memset(&r, 0, sizeof(r));
    assert_int_equal(rg_llm_sse_finish(p, *state, 200, RG_TEST_ID_PREFIX, &r),
                     RG_OK);
    assert_int_equal(r.status, RG_LLM_OK);
    rg_test_str(&r.content, "Hi");

    rg_llm_sse_destroy(p);
    rg_llm_sse_destroy(NULL);
}


/* a CR ending one feed and the LF starting the next are one line end:
 * were the LF a blank line, half a chunk would be dispatched */
static void
rg_test_crlf_split(void **state)
{
    rg_str_t            content, finish;
    rg_llm_sse_t       *p;
    rg_llm_response_t   r;

    p = rg_llm_sse_create(0);
    assert_non_null(p);

    rg_test_feed_str(p, "data: {\"choices\":[{\"delta\":{\"content\":"
                     "\"a\"}}]\r");
    rg_test_feed_str(p, "\ndata: ,\"x\":1}\r");
    assert_int_equal(rg_llm_sse_choice(p, 0, &content, &finish),
                     RG_DECLINED);
    rg_test_feed_str(p, "\n\r");
    assert_int_equal(rg_llm_sse_choice(p, 0, &content, &finish), RG_OK);
    rg_test_same_str(&content, &(rg_str_t) { 1, (char *) "a" });
    rg_test_feed_str(p, "\n");

    memset(&r, 0, sizeof(r));
    assert_int_equal(rg_llm_sse_finish(p, *state, 200, RG_TEST_ID_PREFIX, &r),
                     RG_OK);

    /* neither [DONE] nor a finish_reason */
    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_test_str(&r.content, "a");

    rg_llm_sse_destroy(p);
}


static void
rg_test_too_large(void **state)
{
    char               *block;
    size_t              i, n;
    rg_llm_sse_t       *p;
    rg_llm_response_t   r;

    n = 1024 * 1024;

    block = malloc(n);
    assert_non_null(block);

    /* comment lines: cheap to read */
    for (i = 0; i < n; i++) {
        block[i] = (i % 64 == 63) ? '\n' : (i % 64 == 0) ? ':' : 'x';
    }

    p = rg_llm_sse_create(0);
    assert_non_null(p);

    for (i = 0; i < RG_LLM_SSE_MAX / n; i++) {
        assert_int_equal(rg_llm_sse_feed(p, block, n), RG_OK);
    }

    assert_int_equal(rg_llm_sse_feed(p, "\n", 1), RG_ERROR);
    assert_int_equal(rg_llm_sse_feed(p, "", 0), RG_ERROR);

    memset(&r, 0, sizeof(r));
    assert_int_equal(rg_llm_sse_finish(p, *state, 200, RG_TEST_ID_PREFIX, &r),
                     RG_OK);
    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_test_str(&r.error, "the stream is larger than 16 MiB");
    rg_test_str_empty(&r.message);

    rg_llm_sse_destroy(p);
    free(block);
}


/* arguments of 64 KiB, one byte a chunk */
static void
rg_test_huge_arguments(void **state)
{
    char               *expect;
    size_t              i, n;
    rg_buf_t            b;
    rg_llm_sse_t       *p;
    rg_llm_response_t   r;

    n = 64 * 1024;

    expect = malloc(n + 1);
    assert_non_null(expect);

    memset(&b, 0, sizeof(b));
    assert_int_equal(rg_buf_append_lit(&b,
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,"
        "\"id\":\"call_h\",\"function\":{\"name\":\"big\"}}]}}]}\n\n"), RG_OK);

    for (i = 0; i < n; i++) {
        expect[i] = (i == 0) ? '"' : (i == n - 1) ? '"' : 'a' + i % 26;

        assert_int_equal(rg_buf_printf(&b,
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,"
            "\"function\":{\"arguments\":\"%s%c\"}}]}}]}\n\n",
            expect[i] == '"' ? "\\" : "", expect[i]), RG_OK);
    }

    expect[n] = '\0';

    assert_int_equal(rg_buf_append_lit(&b,
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}"
        "\n\ndata: [DONE]\n\n"), RG_OK);

    p = rg_llm_sse_create(0);
    assert_non_null(p);

    rg_test_feed(p, b.data, b.len, 4096);

    memset(&r, 0, sizeof(r));
    assert_int_equal(rg_llm_sse_finish(p, *state, 200, RG_TEST_ID_PREFIX, &r),
                     RG_OK);
    assert_int_equal(r.status, RG_LLM_OK);
    assert_int_equal(r.ncalls, 1);
    rg_test_str(&r.calls[0].id, "call_h");
    rg_test_str(&r.calls[0].arguments, expect);

    rg_llm_sse_destroy(p);
    rg_buf_free(&b);
    free(expect);
}


/* past the cap a stream's calls are only counted: 20 calls, sent with
 * their indices backwards, and a cap of 8 keep the 9 that came first */
static void
rg_test_too_many_calls(void **state)
{
    size_t              i;
    rg_buf_t            b;
    rg_llm_sse_t       *p;
    rg_llm_response_t   r;

    memset(&b, 0, sizeof(b));

    for (i = 20; i > 0; i--) {
        assert_int_equal(rg_buf_printf(&b,
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":%zu,"
            "\"id\":\"c%zu\",\"function\":{\"name\":\"f\","
            "\"arguments\":\"\"}}]}}]}\n\n"
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":%zu,"
            "\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n",
            i, i, i), RG_OK);
    }

    assert_int_equal(rg_buf_append_lit(&b,
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}"
        "\n\ndata: [DONE]\n\n"), RG_OK);

    p = rg_llm_sse_create(8);
    assert_non_null(p);

    rg_test_feed(p, b.data, b.len, 0);

    memset(&r, 0, sizeof(r));
    assert_int_equal(rg_llm_sse_finish(p, *state, 200, RG_TEST_ID_PREFIX, &r),
                     RG_OK);
    assert_int_equal(r.status, RG_LLM_OK);
    assert_int_equal(r.ncalls, 9);
    assert_int_equal(r.calls_over, 12);

    for (i = 0; i < 9; i++) {
        assert_int_equal(atoi(r.calls[i].id.data + 1), (int) (12 + i));
        rg_test_str(&r.calls[i].arguments, "{}");
    }

    rg_llm_sse_destroy(p);
    rg_buf_free(&b);
}


/* a stream without a choice 0: the lowest index is the answer; an index
 * that is not a number is the place in the array */
static void
rg_test_choice_indexes(void **state)
{
    rg_str_t            content, finish;
    rg_llm_sse_t       *p;
    rg_llm_response_t   r;

    p = rg_test_stream(*state, 200,
        "data: {\"choices\":[{\"index\":5,\"delta\":{\"content\":\"five\"}},"
        "{\"index\":2,\"delta\":{\"content\":\"two\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":\"x\",\"delta\":{\"content\":\"A\"}},"
        "{\"index\":-1,\"delta\":{\"content\":\"B\"}},"
        "{\"index\":2.0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
        "data: [DONE]\n\n", &r);

    assert_int_equal(r.status, RG_LLM_OK);
    rg_test_str(&r.content, "A");

    assert_int_equal(rg_llm_sse_choice(p, 1, &content, &finish), RG_OK);
    rg_test_same_str(&content, &(rg_str_t) { 1, (char *) "B" });
    assert_int_equal(rg_llm_sse_choice(p, 2, &content, &finish), RG_OK);
    rg_test_same_str(&content, &(rg_str_t) { 3, (char *) "two" });
    rg_test_same_str(&finish, &(rg_str_t) { 4, (char *) "stop" });
    assert_int_equal(rg_llm_sse_choice(p, 5, &content, &finish), RG_OK);
    rg_test_same_str(&content, &(rg_str_t) { 4, (char *) "five" });
    rg_test_same_str(&finish, &(rg_str_t) { 0, (char *) "" });

    rg_llm_sse_destroy(p);
}


static void
rg_test_errors(void **state)
{
    rg_llm_sse_t       *p;
    rg_llm_response_t   r;

    /* an error event without words: its text is the message */
    p = rg_test_stream(*state, 200,
        RG_TEST_CHUNK("x", "null") "event: error\ndata: {\"code\":503}\n\n"
        "event: error\ndata: the second\n\n", &r);
    assert_int_equal(r.status, RG_LLM_ERR_SERVER);
    rg_test_str(&r.error, "{\"code\":503}");
    rg_test_str(&r.error_code, "503");
    rg_test_str(&r.content, "x");
    rg_llm_sse_destroy(p);

    /* nothing at all */
    p = rg_test_stream(*state, 200, "event: error\ndata:\n\n", &r);
    assert_int_equal(r.status, RG_LLM_ERR_SERVER);
    rg_test_str(&r.error, "the stream sent an error");
    rg_llm_sse_destroy(p);

    /* an empty "error" is no error; event names other than error are
     * chunks as any */
    p = rg_test_stream(*state, 200,
        "event: message\ndata: {\"error\":{},\"choices\":[{\"delta\":"
        "{\"content\":\"fine\"},\"finish_reason\":\"stop\"}]}\n\n"
        "data: {\"error\":null}\n\n", &r);
    assert_int_equal(r.status, RG_LLM_OK);
    rg_test_str(&r.content, "fine");
    rg_llm_sse_destroy(p);

    /* an error wins over a finish and a [DONE]; a string error too */
    p = rg_test_stream(*state, 200,
        RG_TEST_CHUNK("y", "\"stop\"")
        "data: {\"error\":\"overloaded\"}\n\ndata: [DONE]\n\n", &r);
    assert_int_equal(r.status, RG_LLM_ERR_SERVER);
    rg_test_str(&r.error, "overloaded");
    rg_test_str(&r.finish_reason, "stop");
    rg_llm_sse_destroy(p);

    /* the context is full: compaction, not a retry */
    p = rg_test_stream(*state, 200,
        "data: {\"error\":{\"message\":\"too long\",\"type\":"
        "\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}"
        "\n\n", &r);
    assert_int_equal(r.status, RG_LLM_ERR_CONTEXT);
    rg_llm_sse_destroy(p);

    /* tool_use_failed without any status */
    p = rg_test_stream(*state, 200,
        "event: error\ndata: {\"error\":{\"message\":\"bad call\","
        "\"code\":\"tool_use_failed\"}}\n\n", &r);
    assert_int_equal(r.status, RG_LLM_ERR_FATAL);
    rg_test_str(&r.error_code, "tool_use_failed");
    rg_llm_sse_destroy(p);

    /* an error event in a 4xx stream: the status classifies it */
    p = rg_test_stream(*state, 401,
        "event: error\ndata: {\"error\":{\"message\":\"bad key\"}}\n\n", &r);
    assert_int_equal(r.status, RG_LLM_ERR_FATAL);
    assert_int_equal(r.http_status, 401);
    rg_test_str(&r.error, "bad key");
    rg_llm_sse_destroy(p);
}


/* bodies that are not streams are read whole */
static void
rg_test_not_a_stream(void **state)
{
    rg_llm_sse_t       *p;
    rg_llm_response_t   r;

    p = rg_test_stream(*state, 429,
        "{\"error\":{\"message\":\"slow down\",\"type\":\"requests\","
        "\"code\":\"rate_limit_exceeded\"}}", &r);
    assert_int_equal(r.status, RG_LLM_ERR_RATE);
    rg_test_str(&r.error, "slow down");
    rg_llm_sse_destroy(p);

    p = rg_test_stream(*state, 502, "<html>Bad Gateway</html>", &r);
    assert_int_equal(r.status, RG_LLM_ERR_SERVER);
    rg_test_str(&r.error, "HTTP 502: <html>Bad Gateway</html>");
    rg_llm_sse_destroy(p);

    /* an SSE body with a 503 but no error in it */
    p = rg_test_stream(*state, 503, ": busy\n\n", &r);
    assert_int_equal(r.status, RG_LLM_ERR_SERVER);
    rg_llm_sse_destroy(p);

    p = rg_test_stream(*state, 0, "", &r);
    assert_int_equal(r.status, RG_LLM_ERR_CONNECT);
    rg_llm_sse_destroy(p);

    p = rg_test_stream(*state, 200, "", &r);
    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_llm_sse_destroy(p);

    p = rg_test_stream(*state, 200, " \r\n\n", &r);
    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_llm_sse_destroy(p);

    p = rg_test_stream(*state, 200, "Service Unavailable", &r);
    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_llm_sse_destroy(p);

    /* comments only, then the end: cut short */
    p = rg_test_stream(*state, 200, ": OPENROUTER PROCESSING\n\n", &r);
    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_test_str(&r.error, "the stream ended before the answer was complete");
    rg_llm_sse_destroy(p);

    /* [DONE] alone: a complete stream that said nothing */
    p = rg_test_stream(*state, 200, "data: [DONE]\n\n", &r);
    assert_int_equal(r.status, RG_LLM_ERR_BAD_RESPONSE);
    rg_test_str(&r.error, "response has no choices");
    rg_llm_sse_destroy(p);
}


/* ids, names and types: absent, null or "" never overwrite */
static void
rg_test_tool_call_merging(void **state)
{
    rg_llm_sse_t       *p;
    rg_llm_response_t   r;

    p = rg_test_stream(*state, 200,
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3,"
        "\"id\":\"c3\",\"type\":\"function\",\"function\":{\"name\":\"n3\","
        "\"arguments\":null}}]}}]}\n\n"
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3,"
        "\"id\":null,\"type\":\"\",\"function\":{\"name\":null,"
        "\"arguments\":\"{\\\"k\\\"\"}},{\"index\":1,\"id\":\"\","
        "\"function\":{\"name\":\"\",\"arguments\":{\"obj\":true}}}]}}]}\n\n"
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3,"
        "\"id\":\"c3\",\"function\":{\"name\":\"\",\"arguments\":\":0}\"}}]},"
        "\"finish_reason\":\"tool_calls\"}]}\n\n", &r);

    assert_int_equal(r.status, RG_LLM_OK);
    assert_int_equal(r.ncalls, 2);
    rg_test_str(&r.calls[0].id, RG_TEST_ID_PREFIX "_0");
    rg_test_str(&r.calls[0].name, "");
    rg_test_str(&r.calls[0].arguments, "{\"obj\":true}");
    rg_test_str(&r.calls[1].id, "c3");
    rg_test_str(&r.calls[1].name, "n3");
    rg_test_str(&r.calls[1].arguments, "{\"k\":0}");

    rg_llm_sse_destroy(p);
}


int
main(void)
{
    int                rc;
    size_t             i;
    struct CMUnitTest  fixtures[rg_nelems(rg_test_fixtures) + 2];

    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup_teardown(rg_test_done_before_finish,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_crlf_split,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_too_large,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_huge_arguments,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_too_many_calls,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_choice_indexes,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_errors,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_not_a_stream,
            rg_test_pool_setup, rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_tool_call_merging,
            rg_test_pool_setup, rg_test_pool_teardown),
    };

    /* jansson's allocator as reagent sets it */
    rg_json_init();

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

    i++;
    fixtures[i].name = "own_fixtures_covered";
    fixtures[i].test_func = rg_test_own_fixtures_covered;
    fixtures[i].setup_func = NULL;
    fixtures[i].teardown_func = NULL;
    fixtures[i].initial_state = NULL;

    rc = cmocka_run_group_tests_name("llm_sse", tests, NULL, NULL);
    rc += cmocka_run_group_tests_name("llm_sse_fixtures", fixtures, NULL,
                                      NULL);

    return rc;
}
