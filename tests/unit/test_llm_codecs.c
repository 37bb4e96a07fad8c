/* test_llm_codecs.c: the request side of the codecs (src/llm/rg_llm_
 * anthropic.c, rg_llm_responses.c, the chat row of rg_llm_openai.c) and
 * what they share (rg_llm_codec.c, rg_llm_hints.c, rg_llm_classify.c):
 * how the session's messages become each format's body, that what a
 * provider sent to be sent back (thinking blocks, reasoning items) goes
 * back byte for byte, the table of formats, the waits read from headers
 * and words, and the order in which an error's structure and words are
 * weighed. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm.h>
#include <rg_llm_request.h>
#include <rg_llm_classify.h>
#include <rg_llm_hints.h>
#include <rg_test.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>


#define RG_TEST_CHAT       (&rg_llm_codecs[RG_LLM_CHAT])
#define RG_TEST_ANTHROPIC  (&rg_llm_codecs[RG_LLM_ANTHROPIC])
#define RG_TEST_RESPONSES  (&rg_llm_codecs[RG_LLM_RESPONSES])


/* an llm block as the configuration would leave it */
static void
rg_test_llm(rg_llm_conf_t *llm, rg_uint_t format)
{
    memset(llm, 0, sizeof(*llm));

    llm->codec = &rg_llm_codecs[format];
    llm->format = format;
    llm->prompt_cache = 1;
    llm->max_output_tokens = format == RG_LLM_ANTHROPIC ? 8192 : 0;
}


/* a message of the session, by role */
typedef struct {
    uint8_t             role;
    const char         *json;
} rg_test_msg_t;


/* the body a codec makes of prefix and messages, parsed */
static json_t *
rg_test_body(rg_pool_t *pool, const rg_llm_conf_t *llm,
    const rg_llm_prefix_t *p, const rg_test_msg_t *msgs, size_t n)
{
    size_t          i, more;
    json_t         *j;
    rg_buf_t        prefix, body;
    rg_str_t        msg, *wire;
    json_error_t    err;
    rg_llm_body_t   bd;

    memset(&prefix, 0, sizeof(prefix));
    memset(&body, 0, sizeof(body));

    assert_int_equal(rg_llm_prefix(llm->codec, &prefix, p), RG_OK);

    wire = calloc(n + 1, sizeof(rg_str_t));
    assert_non_null(wire);
    more = 0;

    for (i = 0; i < n; i++) {
        msg.data = (char *) msgs[i].json;
        msg.len = strlen(msgs[i].json);
        assert_int_equal(rg_llm_wire(llm->codec, pool, msgs[i].role, &msg,
                                     &wire[i]), RG_OK);
        more += wire[i].len + llm->codec->join;
    }

    assert_int_equal(rg_llm_body_start(&bd, llm->codec,
                                       (rg_uint_t) llm->prompt_cache, &body,
                                       prefix.data, prefix.len, more),
                     RG_OK);

    for (i = 0; i < n; i++) {
        assert_int_equal(rg_llm_body_add(&bd, msgs[i].role, wire[i].data,
                                         wire[i].len), RG_OK);
    }

    assert_int_equal(rg_llm_body_end(&bd), RG_OK);

    j = json_loadb(body.data, body.len, 0, &err);
    if (j == NULL) {
        print_error("not JSON (%s): %s\n", err.text, body.data);
        fail();
    }

    free(wire);
    rg_buf_free(&prefix);
    rg_buf_free(&body);

    return j;
}


static const rg_str_t *
rg_test_tools(rg_uint_t format, const char **defs, size_t n)
{
    size_t         i;
    rg_buf_t       b;
    rg_str_t      *t;
    rg_llm_tool_t  tool;

    t = calloc(n + 1, sizeof(rg_str_t));
    assert_non_null(t);

    for (i = 0; i < n; i++) {
        memset(&b, 0, sizeof(b));
        tool.name = defs[2 * i];
        tool.description = "a tool";
        tool.parameters = defs[2 * i + 1];

        assert_int_equal(rg_llm_tool_text(&rg_llm_codecs[format], &b, &tool),
                         RG_OK);
        t[i].data = b.data;
        t[i].len = b.len;
    }

    return t;
}


static void
rg_test_tools_free(const rg_str_t *t, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        free(t[i].data);
    }

    free((void *) t);
}


#define rg_test_get(j, path)  rg_test_path(j, path, __LINE__)

/* a value by a path of keys and indexes: "messages.1.content.0.type" */
static json_t *
rg_test_path(json_t *j, const char *path, int line)
{
    char   key[64], *end;
    long   i;
    size_t n;

    while (*path) {
        n = strcspn(path, ".");
        assert_true(n < sizeof(key));
        memcpy(key, path, n);
        key[n] = '\0';

        i = strtol(key, &end, 10);
        j = (*end == '\0' && end != key) ? json_array_get(j, (size_t) i)
                                         : json_object_get(j, key);
        if (j == NULL) {
            print_error("line %d: no %s\n", line, path);
            fail();
        }

        path += n + (path[n] == '.');
    }

    return j;
}


#define rg_test_is(j, path, s)                                               \
    assert_string_equal(json_string_value(rg_test_get(j, path)), s)


/* the session's messages of a conversation with two rounds */
static const rg_test_msg_t  rg_test_conv[] = {
    { 's', "{\"role\":\"system\",\"content\":\"Be brief.\"}" },
    { 'u', "{\"role\":\"user\",\"content\":\"Weather in Paris and Rome?\"}" },
    { 'a', "{\"role\":\"assistant\",\"content\":\"Looking.\","
           "\"tool_calls\":[{\"id\":\"call.1/x\",\"type\":\"function\","
           "\"function\":{\"name\":\"weather\","
           "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}},"
           "{\"id\":\"call_2\",\"type\":\"function\",\"function\":{"
           "\"name\":\"weather\",\"arguments\":\"{\\\"city\\\":"
           "\\\"Rome\\\"}\"}}]}" },
    { 't', "{\"role\":\"tool\",\"tool_call_id\":\"call.1/x\","
           "\"content\":\"18C\"}" },
    { 't', "{\"role\":\"tool\",\"tool_call_id\":\"call_2\","
           "\"content\":\"no such city\",\"x_reagent\":{\"is_error\":true}}" }
};


static void
rg_test_anthropic_body(void **state)
{
    json_t           *j;
    rg_llm_conf_t     llm;
    rg_llm_prefix_t   p;
    const rg_str_t   *tools;
    const char       *defs[] = {
        "weather", "{\"type\":\"object\",\"properties\":{\"city\":"
                   "{\"type\":\"string\"}}}",
        "time", NULL
    };

    rg_test_llm(&llm, RG_LLM_ANTHROPIC);
    tools = rg_test_tools(RG_LLM_ANTHROPIC, defs, 2);

    memset(&p, 0, sizeof(p));
    p.model = "claude-x";
    p.temperature = 0.5;
    p.tools = tools;
    p.ntools = 2;
    p.llm = &llm;

    j = rg_test_body(*state, &llm, &p, rg_test_conv, rg_nelems(rg_test_conv));

    rg_test_is(j, "model", "claude-x");
    assert_int_equal(json_integer_value(rg_test_get(j, "max_tokens")), 8192);
    assert_true(json_real_value(rg_test_get(j, "temperature")) == 0.5);
    assert_null(json_object_get(j, "thinking"));

    /* tools in Anthropic's shape, a breakpoint on the last */
    rg_test_is(j, "tools.0.name", "weather");
    rg_test_is(j, "tools.0.input_schema.type", "object");
    assert_null(json_object_get(rg_test_get(j, "tools.0"), "cache_control"));
    rg_test_is(j, "tools.1.input_schema.type", "object");
    rg_test_is(j, "tools.1.cache_control.type", "ephemeral");

    /* the system prompt outside the messages, with its breakpoint */
    rg_test_is(j, "system.0.text", "Be brief.");
    rg_test_is(j, "system.0.cache_control.type", "ephemeral");

    /* user, assistant, one user message with both tool results */
    assert_int_equal(json_array_size(rg_test_get(j, "messages")), 3);
    rg_test_is(j, "messages.0.role", "user");
    rg_test_is(j, "messages.0.content.0.text", "Weather in Paris and Rome?");
    assert_null(json_object_get(rg_test_get(j, "messages.0.content.0"),
                                "cache_control"));

    rg_test_is(j, "messages.1.role", "assistant");
    rg_test_is(j, "messages.1.content.0.text", "Looking.");
    rg_test_is(j, "messages.1.content.1.type", "tool_use");
    rg_test_is(j, "messages.1.content.1.id", "call_1_x");
    rg_test_is(j, "messages.1.content.1.input.city", "Paris");
    rg_test_is(j, "messages.1.content.2.id", "call_2");

    rg_test_is(j, "messages.2.role", "user");
    assert_int_equal(json_array_size(rg_test_get(j, "messages.2.content")), 2);
    rg_test_is(j, "messages.2.content.0.type", "tool_result");
    rg_test_is(j, "messages.2.content.0.tool_use_id", "call_1_x");
    rg_test_is(j, "messages.2.content.0.content", "18C");
    assert_null(json_object_get(rg_test_get(j, "messages.2.content.0"),
                                "is_error"));
    rg_test_is(j, "messages.2.content.1.tool_use_id", "call_2");
    assert_true(json_is_true(rg_test_get(j, "messages.2.content.1.is_error")));

    /* the last user block is the conversation's breakpoint */
    rg_test_is(j, "messages.2.content.1.cache_control.type", "ephemeral");
    assert_null(json_object_get(rg_test_get(j, "messages.2.content.0"),
                                "cache_control"));

    json_decref(j);

    /* prompt_cache off: no breakpoint anywhere; thinking: no temperature */
    llm.prompt_cache = 0;
    llm.thinking = 2048;
    j = rg_test_body(*state, &llm, &p, rg_test_conv, rg_nelems(rg_test_conv));

    assert_null(json_object_get(rg_test_get(j, "tools.1"), "cache_control"));
    assert_null(json_object_get(rg_test_get(j, "system.0"), "cache_control"));
    assert_null(json_object_get(rg_test_get(j, "messages.2.content.1"),
                                "cache_control"));
    assert_null(json_object_get(j, "temperature"));
    rg_test_is(j, "thinking.type", "enabled");
    assert_int_equal(json_integer_value(rg_test_get(j,
                                        "thinking.budget_tokens")), 2048);
    json_decref(j);

    /* a summary call thinks not */
    p.summary = 1;
    j = rg_test_body(*state, &llm, &p, rg_test_conv, 2);
    assert_null(json_object_get(j, "thinking"));
    json_decref(j);

    rg_test_tools_free(tools, 2);
}


/* what an answer kept goes back as it came: parse, keep, send again */
static void
rg_test_anthropic_thinking_round_trip(void **state)
{
    char               *m;
    json_t             *j, *sent;
    rg_llm_conf_t       llm;
    rg_llm_prefix_t     p;
    rg_llm_answer_t     a;
    rg_test_msg_t       msgs[3];
    rg_llm_response_t   r;
    const char         *body, *thinking, *redacted;

    thinking = "{\"type\":\"thinking\",\"thinking\":\"I should call the "
               "tool. \\u00e9 \\\"q\\\"\",\"signature\":\"EqQBCkYIARgCKkBf"
               "/+x==\"}";
    redacted = "{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va3p"
               "==\"}";

    body = "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\","
           "\"model\":\"claude-x\",\"content\":[%s,%s,{\"type\":\"tool_use\","
           "\"id\":\"toolu_01\",\"name\":\"weather\",\"input\":{\"city\":"
           "\"Paris\"}}],\"stop_reason\":\"tool_use\",\"usage\":{"
           "\"input_tokens\":10,\"output_tokens\":5,"
           "\"cache_read_input_tokens\":100,"
           "\"cache_creation_input_tokens\":20}}";

    m = malloc(strlen(body) + strlen(thinking) + strlen(redacted));
    assert_non_null(m);
    sprintf(m, body, thinking, redacted);

    memset(&a, 0, sizeof(a));
    a.http_status = 200;
    a.body = m;
    a.len = strlen(m);

    memset(&r, 0, sizeof(r));
    assert_int_equal(rg_llm_codecs[RG_LLM_ANTHROPIC].parse(*state, &a, &r),
                     RG_OK);
    assert_int_equal(r.status, RG_LLM_OK);
    assert_int_equal(r.ncalls, 1);
    assert_int_equal(r.nopaque, 2);
    assert_int_equal(r.prompt_tokens, 130);
    assert_int_equal(r.cached_tokens, 100);
    assert_int_equal(r.cache_write_tokens, 20);
    assert_non_null(strstr(r.reasoning.data, "I should call the tool."));

    /* the message keeps each block's text, under x_reagent.anthropic */
    j = json_loadb(r.message.data, r.message.len, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_array_size(rg_test_get(j,
                                     "x_reagent.anthropic")), 3);
    json_decref(j);

    /* sent back: the thinking blocks as they came, first; the tool_use
     * made from the call */
    msgs[0].role = 'u';
    msgs[0].json = "{\"role\":\"user\",\"content\":\"Paris?\"}";
    msgs[1].role = 'a';
    msgs[1].json = r.message.data;
    msgs[2].role = 't';
    msgs[2].json = "{\"role\":\"tool\",\"tool_call_id\":\"toolu_01\","
                   "\"content\":\"18C\"}";

    rg_test_llm(&llm, RG_LLM_ANTHROPIC);
    memset(&p, 0, sizeof(p));
    p.model = "claude-x";
    p.llm = &llm;

    j = rg_test_body(*state, &llm, &p, msgs, 3);

    sent = json_loads(thinking, 0, NULL);
    assert_non_null(sent);
    assert_true(json_equal(rg_test_get(j, "messages.1.content.0"), sent));
    json_decref(sent);
    rg_test_is(j, "messages.1.content.0.signature", "EqQBCkYIARgCKkBf/+x==");
    rg_test_is(j, "messages.1.content.1.data", "EmwKAhgBEgy3va3p==");
    rg_test_is(j, "messages.1.content.2.type", "tool_use");
    rg_test_is(j, "messages.1.content.2.id", "toolu_01");
    json_decref(j);

    /* byte for byte: the text of the block is in the body as kept */
    {
        rg_str_t  msg, wire;

        msg.data = r.message.data;
        msg.len = r.message.len;
        assert_int_equal(rg_llm_wire(&rg_llm_codecs[RG_LLM_ANTHROPIC],
                                     *state, 'a', &msg, &wire), RG_OK);

        j = json_loadb(r.message.data, r.message.len, 0, NULL);
        assert_non_null(strstr(wire.data, json_string_value(
                                   rg_test_get(j, "x_reagent.anthropic.0"))));
        assert_non_null(strstr(wire.data, json_string_value(
                                   rg_test_get(j, "x_reagent.anthropic.1"))));
        json_decref(j);

        /* and Chat Completions never sees x_reagent */
        assert_int_equal(rg_llm_wire(&rg_llm_codecs[RG_LLM_CHAT], *state,
                                     'a', &msg, &wire), RG_OK);
        assert_null(strstr(wire.data, "x_reagent"));
        assert_null(strstr(wire.data, "signature"));
        assert_non_null(strstr(wire.data, "toolu_01"));
    }

    free(m);
}


static void
rg_test_responses_body(void **state)
{
    json_t           *j;
    rg_llm_conf_t     llm;
    rg_llm_prefix_t   p;
    const rg_str_t   *tools;
    rg_test_msg_t     msgs[6];
    const char       *defs[] = {
        "weather", "{\"type\":\"object\",\"properties\":{}}"
    };

    rg_test_llm(&llm, RG_LLM_RESPONSES);
    tools = rg_test_tools(RG_LLM_RESPONSES, defs, 1);

    memset(&p, 0, sizeof(p));
    p.model = "gpt-x";
    p.temperature = 0.2;
    p.stream = 1;
    p.tools = tools;
    p.ntools = 1;
    p.llm = &llm;

    memcpy(msgs, rg_test_conv, sizeof(rg_test_conv));
    j = rg_test_body(*state, &llm, &p, msgs, rg_nelems(rg_test_conv));

    rg_test_is(j, "model", "gpt-x");
    assert_true(json_is_false(rg_test_get(j, "store")));
    assert_true(json_is_true(rg_test_get(j, "stream")));
    assert_null(json_object_get(j, "temperature"));      /* not set */
    assert_null(json_object_get(j, "include"));
    rg_test_is(j, "tools.0.type", "function");
    rg_test_is(j, "tools.0.name", "weather");
    assert_null(json_object_get(rg_test_get(j, "tools.0"), "function"));

    rg_test_is(j, "input.0.role", "system");
    rg_test_is(j, "input.1.role", "user");
    rg_test_is(j, "input.2.type", "message");
    rg_test_is(j, "input.2.role", "assistant");
    rg_test_is(j, "input.2.content", "Looking.");
    rg_test_is(j, "input.3.type", "function_call");
    rg_test_is(j, "input.3.call_id", "call.1/x");
    rg_test_is(j, "input.3.arguments", "{\"city\":\"Paris\"}");
    rg_test_is(j, "input.4.call_id", "call_2");
    rg_test_is(j, "input.5.type", "function_call_output");
    rg_test_is(j, "input.5.call_id", "call.1/x");
    rg_test_is(j, "input.5.output", "18C");
    rg_test_is(j, "input.6.output", "no such city");
    assert_int_equal(json_array_size(rg_test_get(j, "input")), 7);
    json_decref(j);

    /* a reasoning model: reasoning asked for, its items to come back */
    llm.reasoning_effort.data = (char *) "high";
    llm.reasoning_effort.len = 4;
    p.temperature_set = 1;
    j = rg_test_body(*state, &llm, &p, msgs, 2);
    rg_test_is(j, "reasoning.effort", "high");
    rg_test_is(j, "include.0", "reasoning.encrypted_content");
    assert_null(json_object_get(j, "temperature"));
    json_decref(j);

    llm.reasoning_effort.len = 0;
    j = rg_test_body(*state, &llm, &p, msgs, 2);
    assert_true(json_real_value(rg_test_get(j, "temperature")) == 0.2);
    json_decref(j);

    rg_test_tools_free(tools, 1);
}


static void
rg_test_responses_reasoning_round_trip(void **state)
{
    json_t             *j;
    rg_llm_conf_t       llm;
    rg_llm_prefix_t     p;
    rg_llm_answer_t     a;
    rg_test_msg_t       msgs[3];
    rg_llm_response_t   r;
    const char         *body;

    body = "{\"id\":\"resp_1\",\"object\":\"response\",\"status\":"
           "\"completed\",\"output\":["
           "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[{\"type\":"
           "\"summary_text\",\"text\":\"Need weather.\"}],"
           "\"encrypted_content\":\"gAAAAB+/=\"},"
           "{\"type\":\"reasoning\",\"id\":\"rs_2\",\"summary\":[]},"
           "{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_9\","
           "\"name\":\"weather\",\"arguments\":\"{\\\"city\\\":\\\"Rome\\\"}\","
           "\"status\":\"completed\"}],"
           "\"usage\":{\"input_tokens\":50,\"input_tokens_details\":{"
           "\"cached_tokens\":32},\"output_tokens\":9,"
           "\"output_tokens_details\":{\"reasoning_tokens\":6},"
           "\"total_tokens\":59}}";

    memset(&a, 0, sizeof(a));
    a.http_status = 200;
    a.body = body;
    a.len = strlen(body);

    memset(&r, 0, sizeof(r));
    assert_int_equal(rg_llm_codecs[RG_LLM_RESPONSES].parse(*state, &a, &r),
                     RG_OK);
    assert_int_equal(r.status, RG_LLM_OK);
    assert_int_equal(r.ncalls, 1);
    assert_string_equal(r.calls[0].id.data, "call_9");
    assert_string_equal(r.finish_reason.data, "tool_calls");
    assert_int_equal(r.nopaque, 1);
    assert_int_equal(r.cached_tokens, 32);
    assert_int_equal(r.reasoning_tokens, 6);
    assert_string_equal(r.reasoning.data, "Need weather.");

    msgs[0].role = 'u';
    msgs[0].json = "{\"role\":\"user\",\"content\":\"Rome?\"}";
    msgs[1].role = 'a';
    msgs[1].json = r.message.data;
    msgs[2].role = 't';
    msgs[2].json = "{\"role\":\"tool\",\"tool_call_id\":\"call_9\","
                   "\"content\":\"20C\"}";

    rg_test_llm(&llm, RG_LLM_RESPONSES);
    memset(&p, 0, sizeof(p));
    p.model = "gpt-x";
    p.llm = &llm;

    j = rg_test_body(*state, &llm, &p, msgs, 3);

    /* the item with encrypted content as it came; the one without is
     * left out (it cannot go back without a store) */
    rg_test_is(j, "input.1.type", "reasoning");
    rg_test_is(j, "input.1.id", "rs_1");
    rg_test_is(j, "input.1.encrypted_content", "gAAAAB+/=");
    rg_test_is(j, "input.2.type", "function_call");
    rg_test_is(j, "input.2.call_id", "call_9");
    rg_test_is(j, "input.3.type", "function_call_output");
    assert_int_equal(json_array_size(rg_test_get(j, "input")), 4);
    json_decref(j);
}


/* an answer cut at its limit runs none of its calls */
static void
rg_test_cut_calls(void **state)
{
    rg_llm_answer_t     a;
    rg_llm_response_t   r;
    const char         *body;

    body = "{\"content\":[{\"type\":\"text\",\"text\":\"I'll write it\"},"
           "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"write\","
           "\"input\":{\"path\":\"a\"}}],\"stop_reason\":\"max_tokens\","
           "\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}";

    memset(&a, 0, sizeof(a));
    a.http_status = 200;
    a.body = body;
    a.len = strlen(body);

    memset(&r, 0, sizeof(r));
    assert_int_equal(rg_llm_codecs[RG_LLM_ANTHROPIC].parse(*state, &a, &r),
                     RG_OK);
    assert_int_equal(r.status, RG_LLM_OK);
    assert_int_equal(r.ncalls, 0);
    assert_int_equal(r.calls_cut, 1);
    assert_null(strstr(r.message.data, "tool_calls"));
    assert_string_equal(r.content.data, "I'll write it");
}


static void
rg_test_codec_table(void **state)
{
    rg_uint_t  i;

    RG_UNUSED(state);

    for (i = 0; i < RG_LLM_NCODECS; i++) {
        assert_ptr_equal(rg_llm_codec_find(rg_llm_codecs[i].name.data,
                                           rg_llm_codecs[i].name.len),
                         &rg_llm_codecs[i]);
        assert_non_null(strstr(rg_llm_codec_names(),
                               rg_llm_codecs[i].name.data));
        assert_non_null(rg_llm_codecs[i].parse);
        assert_non_null(rg_llm_codecs[i].stream_finish);
    }

    assert_null(rg_llm_codec_find("gemini", 6));
    assert_null(rg_llm_codec_find("cha", 3));
    assert_string_equal(rg_llm_codecs[RG_LLM_ANTHROPIC].path, "/messages");
    assert_string_equal(rg_llm_codecs[RG_LLM_RESPONSES].path, "/responses");
    assert_string_equal(rg_llm_codecs[RG_LLM_ANTHROPIC].key_header,
                        "x-api-key: ");
}


static void
rg_test_durations(void **state)
{
    size_t  used;
    time_t  now;

    RG_UNUSED(state);

    assert_int_equal(rg_llm_duration("1.4s", 4, NULL), 1400);
    assert_int_equal(rg_llm_duration("120ms", 5, NULL), 120);
    assert_int_equal(rg_llm_duration("7m12s", 5, NULL), 432000);
    assert_int_equal(rg_llm_duration("6m0s", 4, NULL), 360000);
    assert_int_equal(rg_llm_duration("1h2m", 4, NULL),
                     RG_LLM_MAX_RETRY_AFTER);
    assert_int_equal(rg_llm_duration(" 20 seconds", 11, NULL), 20000);
    assert_int_equal(rg_llm_duration("2 minutes", 9, NULL), 120000);
    assert_int_equal(rg_llm_duration("11.102306822s", 13, NULL), 11103);
    assert_int_equal(rg_llm_duration("5", 1, NULL), 5000);
    assert_int_equal(rg_llm_duration("a few", 5, NULL), 0);
    assert_int_equal(rg_llm_duration("1.4s. Visit", 11, &used), 1400);
    assert_int_equal(used, 4);

    now = 1711483199;                  /* 2024-03-26T19:59:59Z */
    assert_int_equal(rg_llm_reset_time("2024-03-26T20:00:00Z", 20, now),
                     1001);
    assert_int_equal(rg_llm_reset_time("2024-03-26T21:00:00+01:00", 25,
                                       now), 1001);
    assert_int_equal(rg_llm_reset_time("2024-03-26T19:00:00Z", 20, now), 0);
    assert_int_equal(rg_llm_reset_time("tomorrow", 8, now), 0);
}


static void
rg_test_hints(void **state)
{
    rg_llm_hints_t  h;
    time_t          now;

    RG_UNUSED(state);

    now = 1711483199;

    /* the exhausted limit's reset, not the one with room */
    rg_llm_hints_init(&h);
    assert_true(rg_llm_hints_header(&h, "x-ratelimit-remaining-requests: 99"
                                    "\r\n", 36, now));
    rg_llm_hints_header(&h, "x-ratelimit-reset-requests: 120ms", 33, now);
    rg_llm_hints_header(&h, "x-ratelimit-remaining-tokens: 0", 31, now);
    rg_llm_hints_header(&h, "x-ratelimit-reset-tokens: 6m0s", 30, now);
    assert_false(rg_llm_hints_header(&h, "x-request-id: 1", 15, now));
    rg_llm_hints_end(&h);
    assert_int_equal(h.reset, 360000);
    assert_int_equal(h.exhausted, 1);
    assert_int_equal(h.should_retry, -1);

    /* nothing said exhausted: the soonest */
    rg_llm_hints_init(&h);
    rg_llm_hints_header(&h, "anthropic-ratelimit-tokens-reset: "
                        "2024-03-26T20:00:09Z", 54, now);
    rg_llm_hints_header(&h, "anthropic-ratelimit-requests-reset: "
                        "2024-03-26T20:00:01Z", 56, now);
    rg_llm_hints_header(&h, "x-should-retry: false", 21, now);
    rg_llm_hints_end(&h);
    assert_int_equal(h.reset, 2001);
    assert_int_equal(h.should_retry, 0);

    /* retry-after-ms wins over Retry-After, whichever came first */
    rg_llm_hints_init(&h);
    rg_llm_hints_header(&h, "retry-after-ms: 250", 19, now);
    rg_llm_hints_header(&h, "Retry-After: 3", 14, now);
    assert_int_equal(h.retry_after, 250);
}


/* structure first: the same words weigh differently by what is around */
static void
rg_test_classify_order(void **state)
{
    rg_str_t           type, code, msg;
    rg_llm_error_t     e;
    rg_llm_hints_t     h;
    rg_llm_response_t  r;

    RG_UNUSED(state);

    memset(&e, 0, sizeof(e));
    memset(&r, 0, sizeof(r));
    e.type = &type;
    e.code = &code;
    e.message = &msg;

    /* a TPM 429 that only finds the window full waits, as its text says */
    e.http_status = 429;
    rg_str_set(&type, "tokens");
    rg_str_set(&code, "rate_limit_exceeded");
    rg_str_set(&msg, "Rate limit reached for gpt-4o on tokens per min (TPM): "
                     "Limit 200000, Used 199100, Requested 2400. Please try "
                     "again in 1.4s. Visit https://platform.openai.com/account"
                     "/rate-limits to learn more.");
    assert_int_equal(rg_llm_classify(&e, &r), RG_LLM_ERR_RATE);
    assert_int_equal(r.retry_after, 1400);

    /* the same wording with Requested > Limit never passes */
    rg_str_set(&msg, "Request too large for gpt-4o on tokens per min (TPM): "
                     "Limit 30000, Requested 45000.");
    assert_int_equal(rg_llm_classify(&e, &r), RG_LLM_ERR_OVER_RATE);
    assert_int_equal(r.rate_limit, 30000);
    assert_int_equal(r.rate_requested, 45000);

    /* a billing link is no quota: its words are in a URL */
    rg_str_set(&code, "");
    rg_str_set(&type, "");
    rg_str_set(&msg, "Rate limit reached on tokens per minute (TPM): Limit "
                     "6000, Used 5903, Requested 1248. Please try again in "
                     "11.51s. Upgrade at https://console.groq.com/settings/"
                     "billing");
    assert_int_equal(rg_llm_classify(&e, &r), RG_LLM_ERR_RATE);

    /* a day's cap ends the task, whatever wait it names */
    rg_str_set(&msg, "Rate limit reached on tokens per day (TPD): Limit "
                     "100000, Used 99000, Requested 2000. Please try again "
                     "in 14m24s.");
    assert_int_equal(rg_llm_classify(&e, &r), RG_LLM_ERR_FATAL);

    /* the code says quota: so it is, whatever the headers say */
    rg_llm_hints_init(&h);
    h.retry_after = 5000;
    e.hints = &h;
    rg_str_set(&code, "insufficient_quota");
    rg_str_set(&msg, "You exceeded your current quota.");
    assert_int_equal(rg_llm_classify(&e, &r), RG_LLM_ERR_FATAL);

    /* the words say quota, but the limit is a minute's and the wait is
     * named: it waits */
    rg_str_set(&code, "");
    rg_str_set(&msg, "You exceeded your current quota, please check your "
                     "plan and billing details. Please retry in 38.5s.");
    h.retry_after = 0;
    assert_int_equal(rg_llm_classify(&e, &r), RG_LLM_ERR_RATE);
    assert_int_equal(r.retry_after, 38500);
    rg_str_set(&msg, "You exceeded your current quota, please check your "
                     "plan and billing details.");
    assert_int_equal(rg_llm_classify(&e, &r), RG_LLM_ERR_FATAL);

    /* a context overflow inside a 200 stream, in LM Studio's words */
    e.http_status = 200;
    e.hints = NULL;
    rg_str_set(&msg, "Trying to keep the first 5000 tokens when context the "
                     "overflows. However, the model is loaded with context "
                     "length of only 4096 tokens, which is not enough.");
    assert_int_equal(rg_llm_classify(&e, &r), RG_LLM_ERR_CONTEXT);

    /* an overloaded error inside a 200 stream is retried */
    rg_str_set(&type, "overloaded_error");
    rg_str_set(&msg, "Overloaded");
    assert_int_equal(rg_llm_classify(&e, &r), RG_LLM_ERR_SERVER);

    /* x-should-retry overrides the status, both ways */
    rg_str_set(&type, "");
    rg_str_set(&msg, "conflict");
    rg_llm_hints_init(&h);
    h.should_retry = 0;
    e.hints = &h;
    e.http_status = 503;
    assert_int_equal(rg_llm_classify(&e, &r), RG_LLM_ERR_FATAL);
    h.should_retry = 1;
    e.http_status = 400;
    assert_int_equal(rg_llm_classify(&e, &r), RG_LLM_ERR_SERVER);
    e.http_status = 401;
    assert_int_equal(rg_llm_classify(&e, &r), RG_LLM_ERR_FATAL);

    /* a 400 about max_tokens is no overflow though it speaks of tokens */
    h.should_retry = -1;
    e.http_status = 400;
    rg_str_set(&msg, "max_tokens: 100000 > 64000, which is the maximum "
                     "allowed number of output tokens for claude-x");
    assert_int_equal(rg_llm_classify(&e, &r), RG_LLM_ERR_FATAL);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup_teardown(rg_test_anthropic_body,
                                        rg_test_pool_setup,
                                        rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_anthropic_thinking_round_trip,
                                        rg_test_pool_setup,
                                        rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_responses_body,
                                        rg_test_pool_setup,
                                        rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(
            rg_test_responses_reasoning_round_trip, rg_test_pool_setup,
            rg_test_pool_teardown),
        cmocka_unit_test_setup_teardown(rg_test_cut_calls,
                                        rg_test_pool_setup,
                                        rg_test_pool_teardown),
        cmocka_unit_test(rg_test_codec_table),
        cmocka_unit_test(rg_test_durations),
        cmocka_unit_test(rg_test_hints),
        cmocka_unit_test(rg_test_classify_order)
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
