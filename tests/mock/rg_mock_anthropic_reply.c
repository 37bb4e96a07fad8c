/* rg_mock_anthropic_reply.c: the translation of the Anthropic Messages
 * format of the mock model to and from chat form. Turns a validated
 * request (rg_mock_anthropic.c) into the chat messages and tools the
 * shared logic reads, and the assistant message that logic made back into
 * a Messages API message: a thinking block first when the request enables
 * thinking (text the mock derives from what it will answer, signed by
 * rg_mock_sign.c), an optional redacted_thinking block, text and tool_use
 * blocks, stop_reason, and usage with simulated prompt caching (a hash of
 * the prefix up to each cache_control breakpoint is remembered by
 * rg_mock_cache.c). Streams it as the API's events, and writes errors in
 * its shape: {"type": "error", "error": {...}, "request_id": ...}. */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rg_mock.h"


#define RG_MOCK_A_BREAKPOINTS  8


typedef struct {
    size_t                    input;            /* after the last breakpoint */
    size_t                    read;
    size_t                    created;
    int                       hour;             /* the created live 1 h */
} rg_mock_a_usage_t;


/* chat form */

static const char *
rg_mock_a_kind(json_t *b)
{
    const char  *t;

    t = json_string_value(json_object_get(b, "type"));

    return t ? t : "";
}


/* One message in chat form: a user's tool_result blocks become tool
 * messages, its other blocks a user message; an assistant's tool_use
 * blocks become tool_calls and its first text the content. */

static rg_int_t
rg_mock_a_convert_message(json_t *out, json_t *m)
{
    char        *args;
    size_t       k;
    json_t      *content, *b, *rest, *calls, *text, *v;
    const char  *t;

    content = json_object_get(m, "content");

    if (strcmp(json_string_value(json_object_get(m, "role")), "user") == 0) {
        if (json_is_string(content)) {
            return json_array_append_new(out, json_pack("{s:s, s:O}",
                       "role", "user", "content", content));
        }

        rest = json_array();

        json_array_foreach(content, k, b) {
            if (strcmp(rg_mock_a_kind(b), "tool_result") != 0) {
                json_array_append(rest, b);
                continue;
            }

            v = json_object_get(b, "content");

            json_array_append_new(out, v != NULL
                ? json_pack("{s:s, s:O, s:O}", "role", "tool",
                            "tool_call_id", json_object_get(b, "tool_use_id"),
                            "content", v)
                : json_pack("{s:s, s:O, s:s}", "role", "tool",
                            "tool_call_id", json_object_get(b, "tool_use_id"),
                            "content", ""));
        }

        if (json_array_size(rest) > 0) {
            return json_array_append_new(out, json_pack("{s:s, s:o}",
                       "role", "user", "content", rest));
        }

        json_decref(rest);
        return RG_OK;
    }

    if (json_is_string(content)) {
        return json_array_append_new(out, json_pack("{s:s, s:O}",
                   "role", "assistant", "content", content));
    }

    calls = json_array();
    text = NULL;

    json_array_foreach(content, k, b) {
        t = rg_mock_a_kind(b);

        if (strcmp(t, "text") == 0 && text == NULL) {
            text = json_object_get(b, "text");

        } else if (strcmp(t, "tool_use") == 0) {
            args = json_dumps(json_object_get(b, "input"), JSON_COMPACT);

            json_array_append_new(calls, json_pack("{s:O, s:s, s:{s:O, s:s}}",
                "id", json_object_get(b, "id"), "type", "function",
                "function",
                    "name", json_object_get(b, "name"),
                    "arguments", args ? args : "{}"));
            free(args);
        }
    }

    if (json_array_size(calls) == 0) {
        json_decref(calls);
        return json_array_append_new(out, json_pack("{s:s, s:O?}",
                   "role", "assistant", "content", text));
    }

    return json_array_append_new(out, json_pack("{s:s, s:O?, s:o}",
               "role", "assistant", "content", text, "tool_calls", calls));
}


/* The request in chat form: its messages, and the tools the model may
 * call (none with tool_choice none, the one tool_choice forces). */

json_t *
rg_mock_anthropic_chat(json_t *req)
{
    size_t       i;
    json_t      *root, *messages, *tools, *t, *m, *tc;
    const char  *mode, *only;

    messages = json_array();
    tools = json_array();

    root = json_pack("{s:O, s:b, s:o, s:o}",
                     "model", json_object_get(req, "model"),
                     "stream", json_is_true(json_object_get(req, "stream")),
                     "messages", messages, "tools", tools);
    if (root == NULL) {
        return NULL;
    }

    json_array_foreach(json_object_get(req, "messages"), i, m) {
        if (rg_mock_a_convert_message(messages, m) != RG_OK) {
            json_decref(root);
            return NULL;
        }
    }

    tc = json_object_get(req, "tool_choice");
    mode = json_string_value(json_object_get(tc, "type"));
    only = mode != NULL && strcmp(mode, "tool") == 0
           ? json_string_value(json_object_get(tc, "name")) : NULL;

    json_array_foreach(json_object_get(req, "tools"), i, t) {
        /* what the model may call: nothing, or only the tool forced */
        if ((mode != NULL && strcmp(mode, "none") == 0)
            || (only != NULL
                && strcmp(json_string_value(json_object_get(t, "name")),
                          only) != 0))
        {
            continue;
        }

        if (json_array_append_new(tools, json_pack("{s:s, s:{s:O, s:O}}",
                "type", "function",
                "function",
                    "name", json_object_get(t, "name"),
                    "parameters", json_object_get(t, "input_schema")))
            != 0)
        {
            json_decref(root);
            return NULL;
        }
    }

    return root;
}


/* prompt caching */

/* Hashes the prefix up to each cache_control breakpoint, in the API's
 * order (tools, system, messages); the longest known one is read, the
 * rest up to the last breakpoint is written. */

static void
rg_mock_a_cache(rg_mock_conv_t *c, rg_mock_a_usage_t *u)
{
    int          hour[RG_MOCK_A_BREAKPOINTS];
    long         known;
    size_t       i, k, n, bytes, at[RG_MOCK_A_BREAKPOINTS], last;
    json_t      *v, *b, *m, *content, *cc;
    uint64_t     h, key[RG_MOCK_A_BREAKPOINTS];
    const char  *s;

    n = 0;
    bytes = 0;
    h = rg_mock_hash(RG_MOCK_HASH_INIT, c->model, strlen(c->model));

#define rg_mock_a_point(block)                                              \
    cc = json_object_get(block, "cache_control");                           \
    if (json_is_object(cc) && n < RG_MOCK_A_BREAKPOINTS) {                  \
        s = json_string_value(json_object_get(cc, "ttl"));                  \
        key[n] = h;                                                         \
        at[n] = bytes;                                                      \
        hour[n++] = s != NULL && strcmp(s, "1h") == 0;                      \
    }

    json_array_foreach(json_object_get(c->req, "tools"), i, b) {
        h = rg_mock_hash_json(h, b, "cache_control", &bytes);
        rg_mock_a_point(b);
    }

    v = json_object_get(c->req, "system");

    if (json_is_array(v)) {
        json_array_foreach(v, i, b) {
            h = rg_mock_hash_json(h, b, "cache_control", &bytes);
            rg_mock_a_point(b);
        }

    } else {
        h = rg_mock_hash_json(h, v, NULL, &bytes);
    }

    json_array_foreach(json_object_get(c->req, "messages"), i, m) {
        h = rg_mock_hash_json(h, json_object_get(m, "role"), NULL, &bytes);
        content = json_object_get(m, "content");

        if (!json_is_array(content)) {
            h = rg_mock_hash_json(h, content, NULL, &bytes);
            continue;
        }

        json_array_foreach(content, k, b) {
            h = rg_mock_hash_json(h, b, "cache_control", &bytes);
            rg_mock_a_point(b);
        }
    }

#undef rg_mock_a_point

    memset(u, 0, sizeof(rg_mock_a_usage_t));

    if (n == 0) {
        u->input = rg_mock_tokens_of(bytes);
        return;
    }

    last = n - 1;

    for (known = (long) last; known >= 0; known--) {
        if (rg_mock_cache_has(key[known])) {
            break;
        }
    }

    u->read = known >= 0 ? rg_mock_tokens_of(at[known]) : 0;
    u->created = rg_mock_tokens_of(at[last]) - u->read;
    u->hour = hour[last];
    u->input = rg_mock_tokens_of(bytes) - rg_mock_tokens_of(at[last]);

    for (i = (size_t) (known + 1); i <= last; i++) {
        rg_mock_cache_add(key[i]);
    }

    rg_mock_cache_count(u->read, u->created);
}


static json_t *
rg_mock_a_usage(rg_mock_a_usage_t *u, size_t output)
{
    return json_pack("{s:I, s:I, s:I, s:{s:I, s:I}, s:I, s:s}",
                     "input_tokens", (json_int_t) u->input,
                     "cache_creation_input_tokens", (json_int_t) u->created,
                     "cache_read_input_tokens", (json_int_t) u->read,
                     "cache_creation",
                         "ephemeral_5m_input_tokens",
                             (json_int_t) (u->hour ? 0 : u->created),
                         "ephemeral_1h_input_tokens",
                             (json_int_t) (u->hour ? u->created : 0),
                     "output_tokens", (json_int_t) output,
                     "service_tier", "standard");
}


/* the message */

/* The thinking block (and a redacted_thinking block when the message asks
 * for one) of an answer; adds the thinking's tokens to *output. */

static rg_int_t
rg_mock_a_think(rg_mock_conv_t *c, json_t *message, json_t *content,
    size_t *output)
{
    char     sig[32], what[96], *data;
    json_t  *text;

    text = rg_mock_thinking(c, message);
    if (text == NULL) {
        return RG_ERROR;
    }

    rg_mock_sign("thinking", json_string_value(text),
                 json_string_length(text), sig, sizeof(sig));

    *output += rg_mock_tokens_of(json_string_length(text));

    if (json_array_append_new(content, json_pack("{s:s, s:o, s:s}",
            "type", "thinking", "thinking", text, "signature", sig)) != 0)
    {
        return RG_ERROR;
    }

    if (!json_is_true(json_object_get(message, "redacted_thinking"))) {
        return RG_OK;
    }

    snprintf(what, sizeof(what), "rg_mock: redacted thinking of round %zu",
             c->rounds + 1);

    data = rg_mock_seal("redacted_thinking", what, strlen(what));
    if (data == NULL) {
        return RG_ERROR;
    }

    if (json_array_append_new(content, json_pack("{s:s, s:s}",
            "type", "redacted_thinking", "data", data)) != 0)
    {
        free(data);
        return RG_ERROR;
    }

    free(data);

    return RG_OK;
}


/* The Messages API message of an assistant message in chat form. When it
 * stops at max_tokens in a tool call, that last tool_use is cut: its
 * index and whole arguments go to *cut and *cut_args (the body shows an
 * empty input), for the stream to stop midway. */

static json_t *
rg_mock_a_message(rg_mock_conv_t *c, json_t *message, long *cut,
    char **cut_args)
{
    char               id[48];
    size_t             i, len, output;
    json_t            *content, *calls, *tc, *fn, *input, *v, *stop_seq;
    const char        *text, *stop, *args;
    json_error_t       jerr;
    rg_mock_a_usage_t  u;

    content = json_array();
    if (content == NULL) {
        return NULL;
    }

    output = rg_mock_output_tokens(message);

    if (c->think && rg_mock_a_think(c, message, content, &output) != RG_OK) {
        json_decref(content);
        return NULL;
    }

    text = rg_mock_content_text(json_object_get(message, "content"), &len);

    if (len > 0) {
        json_array_append_new(content, json_pack("{s:s, s:s%}",
                              "type", "text", "text", text, len));
    }

    v = json_object_get(message, "refusal");

    if (json_is_string(v) && json_string_length(v) > 0) {
        json_array_append_new(content, json_pack("{s:s, s:O}",
                              "type", "text", "text", v));
    }

    calls = json_object_get(message, "tool_calls");

    json_array_foreach(calls, i, tc) {
        fn = json_object_get(tc, "function");
        args = json_string_value(json_object_get(fn, "arguments"));
        input = args ? json_loads(args, 0, &jerr) : NULL;

        if (!json_is_object(input)) {
            json_decref(input);
            input = json_object();
        }

        json_array_append_new(content, json_pack("{s:s, s:O, s:O, s:o}",
            "type", "tool_use", "id", json_object_get(tc, "id"),
            "name", json_object_get(fn, "name"), "input", input));
    }

    stop = json_string_value(json_object_get(message, "stop_reason"));

    if (stop == NULL) {
        stop = json_array_size(calls) > 0 ? "tool_use"
               : json_is_string(v) ? "refusal" : "end_turn";
    }

    if (strcmp(stop, "max_tokens") == 0 && json_array_size(calls) > 0) {
        *cut = (long) json_array_size(content) - 1;
        args = json_string_value(json_object_get(json_object_get(
                   json_array_get(calls, json_array_size(calls) - 1),
                   "function"), "arguments"));
        *cut_args = strdup(args ? args : "{}");

        json_object_set_new(json_array_get(content, (size_t) *cut), "input",
                            json_object());
    }

    stop_seq = NULL;

    if (strcmp(stop, "stop_sequence") == 0) {
        stop_seq = json_object_get(message, "stop_sequence");
        if (!json_is_string(stop_seq)) {
            stop_seq = json_array_get(json_object_get(c->req,
                                      "stop_sequences"), 0);
        }
    }

    rg_mock_a_cache(c, &u);

    snprintf(id, sizeof(id), "msg_mock_%" PRIu64, c->n);

    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:O?, s:o}",
                     "id", id,
                     "type", "message",
                     "role", "assistant",
                     "model", c->model,
                     "content", content,
                     "stop_reason", stop,
                     "stop_sequence", stop_seq,
                     "usage", rg_mock_a_usage(&u, output));
}


/* the stream */

/* Appends the event [name, data] to items; steals data. */

static rg_int_t
rg_mock_a_item(json_t *items, const char *name, json_t *data)
{
    if (data == NULL) {
        return RG_ERROR;
    }

    return json_array_append_new(items, json_pack("[s, o]", name, data)) == 0
           ? RG_OK : RG_ERROR;
}


/* The deltas of a text in --stream-chunk pieces: {"type": delta, key:
 * piece}; with half, only those of its first half. */

static rg_int_t
rg_mock_a_deltas(json_t *items, size_t index, const char *delta,
    const char *key, const char *s, size_t len, int half)
{
    size_t  off, n;

    if (half) {
        len = rg_mock_utf8_cut(s, len, len / 2);
    }

    for (off = 0; off < len; off += n) {
        n = rg_mock_piece(s + off, len - off,
                          (size_t) rg_mock.conf.stream_chunk);

        if (rg_mock_a_item(items, "content_block_delta",
                json_pack("{s:s, s:I, s:{s:s, s:s%}}",
                          "type", "content_block_delta",
                          "index", (json_int_t) index,
                          "delta", "type", delta, key, s + off, n))
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* The events of content block index: start, deltas, stop (none when the
 * block is cut, its arguments given). */

static rg_int_t
rg_mock_a_block_events(json_t *items, json_t *b, size_t index,
    const char *cut_args)
{
    char        *args;
    json_t      *shell, *v;
    rg_int_t     rc;
    const char  *t;

    t = json_string_value(json_object_get(b, "type"));
    t = t ? t : "";

    if (strcmp(t, "thinking") == 0) {
        shell = json_pack("{s:s, s:s, s:s}", "type", "thinking",
                          "thinking", "", "signature", "");

    } else if (strcmp(t, "text") == 0) {
        shell = json_pack("{s:s, s:s}", "type", "text", "text", "");

    } else if (strcmp(t, "tool_use") == 0) {
        shell = json_pack("{s:s, s:O, s:O, s:{}}", "type", "tool_use",
                          "id", json_object_get(b, "id"),
                          "name", json_object_get(b, "name"), "input");

    } else {
        shell = json_incref(b);
    }

    if (rg_mock_a_item(items, "content_block_start",
            json_pack("{s:s, s:I, s:o}", "type", "content_block_start",
                      "index", (json_int_t) index, "content_block", shell))
        != RG_OK)
    {
        return RG_ERROR;
    }

    if (index == 0
        && rg_mock_a_item(items, "ping", json_pack("{s:s}", "type", "ping"))
           != RG_OK)
    {
        return RG_ERROR;
    }

    rc = RG_OK;

    if (strcmp(t, "thinking") == 0) {
        v = json_object_get(b, "thinking");
        rc = rg_mock_a_deltas(items, index, "thinking_delta", "thinking",
                              json_string_value(v), json_string_length(v), 0);

        if (rc == RG_OK) {
            rc = rg_mock_a_item(items, "content_block_delta",
                     json_pack("{s:s, s:I, s:{s:s, s:O}}",
                               "type", "content_block_delta",
                               "index", (json_int_t) index,
                               "delta", "type", "signature_delta",
                               "signature", json_object_get(b, "signature")));
        }

    } else if (strcmp(t, "text") == 0) {
        v = json_object_get(b, "text");
        rc = rg_mock_a_deltas(items, index, "text_delta", "text",
                              json_string_value(v), json_string_length(v), 0);

    } else if (strcmp(t, "tool_use") == 0) {
        args = cut_args ? NULL
                        : json_dumps(json_object_get(b, "input"),
                                     JSON_COMPACT | JSON_ENSURE_ASCII);

        /* the API's first fragment of a tool's input is empty */
        if (rg_mock_a_item(items, "content_block_delta",
                   json_pack("{s:s, s:I, s:{s:s, s:s}}",
                             "type", "content_block_delta",
                             "index", (json_int_t) index, "delta",
                             "type", "input_json_delta", "partial_json", ""))
               != RG_OK)
        {
            rc = RG_ERROR;
        }

        if (rc == RG_OK) {
            rc = rg_mock_a_deltas(items, index, "input_json_delta",
                                  "partial_json",
                                  cut_args ? cut_args : args ? args : "{}",
                                  strlen(cut_args ? cut_args
                                         : args ? args : "{}"),
                                  cut_args != NULL);
        }

        free(args);
    }

    if (rc != RG_OK || cut_args != NULL) {
        return rc;
    }

    return rg_mock_a_item(items, "content_block_stop",
                          json_pack("{s:s, s:I}", "type", "content_block_stop",
                                    "index", (json_int_t) index));
}


/* Turns a message into the events of r->stream: message_start (no
 * content, output_tokens 1), per block content_block_start, a ping after
 * the first, its deltas in --stream-chunk pieces (text_delta,
 * thinking_delta then signature_delta, input_json_delta: an empty one,
 * then the arguments split anywhere), content_block_stop; message_delta
 * with stop_reason and usage; message_stop unless --stream-no-done. A
 * block cut at max_tokens stops midway, without content_block_stop. A
 * scripted stream_error keeps the first event and half of those before
 * message_delta, then sends an error event and nothing more. */

static rg_int_t
rg_mock_a_stream(rg_mock_conv_t *c, json_t *msg, long cut,
    const char *cut_args, rg_mock_reply_t *r)
{
    size_t             i, n, keep, mark;
    json_t            *items, *start, *usage, *b, *item;
    rg_mock_stream_t  *st;

    items = json_array();
    start = json_copy(msg);
    usage = json_copy(json_object_get(msg, "usage"));
    st = rg_mock_stream_new();

    if (items == NULL || start == NULL || st == NULL) {
        goto failed;
    }

    if (usage == NULL) {
        usage = json_pack("{s:I, s:I}", "input_tokens", (json_int_t) 0,
                          "output_tokens", (json_int_t) 0);
    }

    json_object_set_new(start, "content", json_array());
    json_object_set_new(start, "stop_reason", json_null());
    json_object_set_new(start, "stop_sequence", json_null());
    json_object_set_new(start, "usage", json_copy(usage));
    json_object_set_new(json_object_get(start, "usage"), "output_tokens",
                        json_integer(1));

    if (rg_mock_a_item(items, "message_start",
            json_pack("{s:s, s:O}", "type", "message_start",
                      "message", start)) != RG_OK)
    {
        goto failed;
    }

    json_decref(start);
    start = NULL;

    n = json_array_size(json_object_get(msg, "content"));

    if (n == 0
        && rg_mock_a_item(items, "ping", json_pack("{s:s}", "type", "ping"))
           != RG_OK)
    {
        goto failed;
    }

    json_array_foreach(json_object_get(msg, "content"), i, b) {
        if (rg_mock_a_block_events(items, b, i, (long) i == cut ? cut_args
                                                               : NULL)
            != RG_OK)
        {
            goto failed;
        }
    }

    mark = json_array_size(items);

    json_object_del(usage, "cache_creation");
    json_object_del(usage, "service_tier");

    if (rg_mock_a_item(items, "message_delta",
            json_pack("{s:s, s:{s:O?, s:O?}, s:O}", "type", "message_delta",
                      "delta",
                          "stop_reason", json_object_get(msg, "stop_reason"),
                          "stop_sequence",
                              json_object_get(msg, "stop_sequence"),
                      "usage", usage)) != RG_OK
        || (!rg_mock.conf.stream_no_done
            && rg_mock_a_item(items, "message_stop",
                   json_pack("{s:s}", "type", "message_stop")) != RG_OK))
    {
        goto failed;
    }

    json_decref(usage);
    usage = NULL;

    n = json_array_size(items);
    keep = c->stream_error ? 1 + mark / 2 : n;
    keep = keep < n ? keep : n;

    for (i = 0; i < keep; i++) {
        item = json_array_get(items, i);

        if (rg_mock_stream_event(st,
                json_string_value(json_array_get(item, 0)),
                json_array_get(item, 1)) != RG_OK)
        {
            goto failed;
        }
    }

    if (c->stream_error != NULL) {
        item = json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error",
                         "type", c->stream_error_type ? c->stream_error_type
                                                      : "overloaded_error",
                         "message", c->stream_error);

        if (item == NULL || rg_mock_stream_event(st, "error", item) != RG_OK) {
            json_decref(item);
            goto failed;
        }

        json_decref(item);
    }

    json_decref(items);

    return rg_mock_stream_done(st, c, r);

failed:

    rg_mock_stream_free(st);
    json_decref(items);
    json_decref(start);
    json_decref(usage);

    return RG_ERROR;
}


static rg_int_t
rg_mock_anthropic_answer(rg_mock_conv_t *c, json_t *message,
    struct evbuffer *out, rg_mock_reply_t *r)
{
    long       cut;
    char      *cut_args;
    json_t    *msg;
    rg_int_t   rc;

    cut = -1;
    cut_args = NULL;

    msg = rg_mock_a_message(c, message, &cut, &cut_args);
    json_decref(message);

    if (msg == NULL) {
        free(cut_args);
        return RG_ERROR;
    }

    rc = c->stream ? rg_mock_a_stream(c, msg, cut, cut_args, r)
                   : rg_mock_dump(out, msg);

    free(cut_args);
    json_decref(msg);

    return rc;
}


/* A scripted "body" streams when it is a message: "type": "message" and a
 * "content" array. */

static rg_int_t
rg_mock_anthropic_stream_body(rg_mock_conv_t *c, json_t *body,
    rg_mock_reply_t *r)
{
    const char  *t;

    t = json_string_value(json_object_get(body, "type"));

    if (t == NULL || strcmp(t, "message") != 0
        || !json_is_array(json_object_get(body, "content")))
    {
        return RG_DECLINED;
    }

    return rg_mock_a_stream(c, body, -1, NULL, r);
}


/* errors */

static rg_int_t
rg_mock_a_error(rg_mock_conv_t *c, struct evbuffer *out, const char *type,
    const char *message)
{
    char      rid[48];
    json_t   *e;
    rg_int_t  rc;

    snprintf(rid, sizeof(rid), "req_mock_%" PRIu64, c->number);

    e = json_pack("{s:s, s:{s:s, s:s}, s:s}", "type", "error",
                  "error", "type", type, "message", message,
                  "request_id", rid);

    rc = rg_mock_dump(out, e);
    json_decref(e);

    if (rc != RG_OK) {
        evbuffer_add_printf(out, "{\"type\":\"error\",\"error\":{\"type\":"
                            "\"api_error\",\"message\":\"rg_mock: cannot "
                            "build the error body\"}}");
    }

    return rc;
}


/* The rate limit headers of a 429: none left, and when they come back. */

static void
rg_mock_a_limits(struct evkeyvalq *headers)
{
    char        reset[40];
    long        secs;
    time_t      at;
    struct tm   tm;

    secs = rg_mock.conf.retry_after_ms >= 0
           ? (rg_mock.conf.retry_after_ms + 999) / 1000
           : rg_mock.conf.retry_after >= 0 ? rg_mock.conf.retry_after : 1;

    at = time(NULL) + secs;
    gmtime_r(&at, &tm);
    strftime(reset, sizeof(reset), "%Y-%m-%dT%H:%M:%SZ", &tm);

    evhttp_add_header(headers, "anthropic-ratelimit-requests-limit", "50");
    evhttp_add_header(headers, "anthropic-ratelimit-requests-remaining", "0");
    evhttp_add_header(headers, "anthropic-ratelimit-requests-reset", reset);
}


static rg_int_t
rg_mock_anthropic_status(rg_mock_conv_t *c, int status, int fault,
    struct evbuffer *out, struct evkeyvalq *headers)
{
    char    message[320];
    size_t  len;

    switch (status) {

    case 400:
        return rg_mock_a_error(c, out, "invalid_request_error",
                               fault == RG_MOCK_FAULT_TOO_LONG
                               ? "prompt is too long: 210000 tokens > "
                                 "200000 maximum"
                               : "Invalid request (injected fault).");

    case 401:
        return rg_mock_a_error(c, out, "authentication_error",
                               "invalid x-api-key");

    case 403:
        return rg_mock_a_error(c, out, "permission_error", "Your API key "
                               "does not have permission to use the "
                               "specified resource.");

    case 404:
        len = rg_mock_utf8_cut(c->model, strlen(c->model), 256);
        snprintf(message, sizeof(message), "model: %.*s", (int) len,
                 c->model);
        return rg_mock_a_error(c, out, "not_found_error", message);

    case 413:
        return rg_mock_a_error(c, out, "request_too_large", "Request exceeds "
                               "the maximum allowed number of bytes.");

    case 429:
        rg_mock_a_limits(headers);
        return rg_mock_a_error(c, out, "rate_limit_error", "This request "
                               "would exceed the rate limit for your "
                               "organization (org-mock) of 50 requests per "
                               "minute. For details, refer to: https://docs."
                               "claude.com/en/api/rate-limits. You can see "
                               "the response headers for current usage. "
                               "Please reduce the prompt length or the "
                               "maximum tokens requested, or try again "
                               "later.");

    case 500:
        return rg_mock_a_error(c, out, "api_error", "Internal server error");

    case 529:
        return rg_mock_a_error(c, out, "overloaded_error", "Overloaded");

    default:
        snprintf(message, sizeof(message), "rg_mock: scripted status %d",
                 status);
        return rg_mock_a_error(c, out, status < 500 ? "invalid_request_error"
                                                    : "api_error", message);
    }
}


static rg_int_t
rg_mock_anthropic_error(rg_mock_conv_t *c, const char *message,
    struct evbuffer *out)
{
    return rg_mock_a_error(c, out, "api_error", message);
}


static rg_int_t
rg_mock_anthropic_reject(rg_mock_conv_t *c, rg_mock_err_t *err,
    struct evbuffer *out)
{
    return rg_mock_a_error(c, out, "invalid_request_error", err->message);
}


const rg_mock_format_t  rg_mock_anthropic_format = {
    "anthropic",
    RG_MOCK_FORMAT_ANTHROPIC,
    529,
    "request-id",
    "{\"id\":\"msg_bad\",\"type\":\"message\",\"role\":\"assistant\","
    "\"content\":[{\"type\":\"text\",\"text\":",
    rg_mock_anthropic_parse,
    rg_mock_anthropic_reject,
    rg_mock_anthropic_answer,
    rg_mock_anthropic_stream_body,
    rg_mock_anthropic_status,
    rg_mock_anthropic_error
};
