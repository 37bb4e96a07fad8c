/* rg_mock_responses_reply.c: the translation of the OpenAI Responses
 * format of the mock model to and from chat form. Turns the input items of
 * a validated request (rg_mock_responses.c) into chat messages, one
 * assistant message per turn, and the assistant message the shared logic
 * made back into a response object: a reasoning item first when the request
 * has "reasoning" (its summary when reasoning.summary asks for one, its
 * encrypted_content, sealed by rg_mock_sign.c, when include asks for
 * it), a message item, function_call items; usage with cached_tokens for
 * the longest prefix of input items seen before (automatic, as OpenAI
 * caches). Streams it as the API's events, each with its sequence_number,
 * and writes errors in OpenAI's envelope with the rate-limit headers. */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rg_mock.h"


/* chat form */

static const char *
rg_mock_r_kind(json_t *item)
{
    const char  *t;

    t = json_string_value(json_object_get(item, "type"));

    return t ? t : "message";
}


/* The assistant message of the turn being read, made on its first item. */

static json_t *
rg_mock_r_turn(json_t *messages, json_t **turn)
{
    if (*turn == NULL) {
        *turn = json_pack("{s:s, s:n}", "role", "assistant", "content");
        json_array_append_new(messages, *turn);
    }

    return *turn;
}


/* The input items as chat messages: a run of output items (reasoning,
 * assistant messages, function calls) is one assistant message, the turn
 * that made them; a function_call_output is a tool message. */

json_t *
rg_mock_responses_chat(json_t *req)
{
    size_t       i;
    json_t      *root, *messages, *tools, *input, *item, *turn, *calls, *t;
    json_t      *tc;
    const char  *type, *role, *mode, *only;

    messages = json_array();
    tools = json_array();

    root = json_pack("{s:O, s:b, s:o, s:o}",
                     "model", json_object_get(req, "model"),
                     "stream", json_is_true(json_object_get(req, "stream")),
                     "messages", messages, "tools", tools);
    if (root == NULL) {
        return NULL;
    }

    input = json_object_get(req, "input");

    if (json_is_string(input)) {
        json_array_append_new(messages, json_pack("{s:s, s:O}", "role",
                              "user", "content", input));
    }

    turn = NULL;

    json_array_foreach(input, i, item) {
        type = rg_mock_r_kind(item);
        role = json_string_value(json_object_get(item, "role"));

        if (strcmp(type, "message") == 0 && strcmp(role, "assistant") != 0) {
            turn = NULL;
            json_array_append_new(messages, json_pack("{s:s, s:O}", "role",
                role, "content", json_object_get(item, "content")));

        } else if (strcmp(type, "message") == 0) {
            rg_mock_r_turn(messages, &turn);
            if (json_is_null(json_object_get(turn, "content"))) {
                json_object_set(turn, "content",
                                json_object_get(item, "content"));
            }

        } else if (strcmp(type, "reasoning") == 0) {
            rg_mock_r_turn(messages, &turn);

        } else if (strcmp(type, "function_call") == 0) {
            rg_mock_r_turn(messages, &turn);
            calls = json_object_get(turn, "tool_calls");

            if (calls == NULL) {
                calls = json_array();
                json_object_set_new(turn, "tool_calls", calls);
            }

            json_array_append_new(calls, json_pack("{s:O, s:s, s:{s:O, s:O}}",
                "id", json_object_get(item, "call_id"), "type", "function",
                "function",
                    "name", json_object_get(item, "name"),
                    "arguments", json_object_get(item, "arguments")));

        } else {
            turn = NULL;
            json_array_append_new(messages, json_pack("{s:s, s:O, s:O}",
                "role", "tool", "tool_call_id", json_object_get(item,
                "call_id"), "content", json_object_get(item, "output")));
        }
    }

    tc = json_object_get(req, "tool_choice");
    mode = json_is_string(tc) ? json_string_value(tc)
                              : json_string_value(json_object_get(tc, "type"));
    only = json_is_object(tc) && mode != NULL && strcmp(mode, "function") == 0
           ? json_string_value(json_object_get(tc, "name")) : NULL;

    json_array_foreach(json_object_get(req, "tools"), i, t) {
        /* what the model may call: nothing, or only the function forced */
        if ((mode != NULL && strcmp(mode, "none") == 0)
            || (only != NULL
                && strcmp(json_string_value(json_object_get(t, "name")),
                          only) != 0))
        {
            continue;
        }

        json_array_append_new(tools, json_pack("{s:s, s:{s:O, s:O?}}",
            "type", "function",
            "function",
                "name", json_object_get(t, "name"),
                "parameters", json_object_get(t, "parameters")));
    }

    return root;
}


/* prompt caching */

/* The tokens of the input, and of its longest prefix of items (with the
 * tools and instructions) seen before; every prefix is remembered. */

static size_t
rg_mock_r_cached(rg_mock_conv_t *c, size_t *input)
{
    size_t     i, bytes, cached;
    json_t    *in, *item;
    uint64_t   h;
    int        wrote;

    bytes = 0;
    cached = 0;
    wrote = 0;

    h = rg_mock_hash(RG_MOCK_HASH_INIT, c->model, strlen(c->model));
    h = rg_mock_hash_json(h, json_object_get(c->req, "tools"), NULL, &bytes);
    h = rg_mock_hash_json(h, json_object_get(c->req, "instructions"), NULL,
                          &bytes);

    in = json_object_get(c->req, "input");

    for (i = 0; i < (json_is_array(in) ? json_array_size(in) : 1); i++) {
        item = json_is_array(in) ? json_array_get(in, i) : in;
        h = rg_mock_hash_json(h, item, NULL, &bytes);

        if (rg_mock_cache_has(h)) {
            cached = rg_mock_tokens_of(bytes);

        } else {
            rg_mock_cache_add(h);
            wrote = 1;
        }
    }

    *input = rg_mock_tokens_of(bytes);
    cached = cached < *input ? cached : *input;

    rg_mock_cache_count(cached, wrote ? *input - cached : 0);

    return cached;
}


/* the response */

static json_t *
rg_mock_r_reasoning_item(rg_mock_conv_t *c, json_t *message, size_t *tokens)
{
    char        id[48], label[64], *sealed;
    json_t     *item, *text, *summary;
    const char  *want;

    text = rg_mock_thinking(c, message);
    if (text == NULL) {
        return NULL;
    }

    *tokens = rg_mock_tokens_of(json_string_length(text));

    snprintf(id, sizeof(id), "rs_mock_%" PRIu64, c->n);

    /* a summary only when the request asks for one, as the API does */
    want = json_string_value(json_object_get(json_object_get(c->req,
                             "reasoning"), "summary"));

    summary = want != NULL
              ? json_pack("[{s:s, s:O}]", "type", "summary_text", "text",
                          text)
              : json_array();

    item = json_pack("{s:s, s:s}", "id", id, "type", "reasoning");

    if (item != NULL && c->encrypted) {
        snprintf(label, sizeof(label), "reasoning:%s", id);
        sealed = rg_mock_seal(label, json_string_value(text),
                              json_string_length(text));

        if (sealed == NULL
            || json_object_set_new(item, "encrypted_content",
                                   json_string(sealed)) != 0)
        {
            json_decref(item);
            item = NULL;
        }

        free(sealed);
    }

    json_decref(text);

    if (item == NULL || json_object_set_new(item, "summary", summary) != 0) {
        json_decref(item);
        return NULL;
    }

    return item;
}


/* The output items of an assistant message in chat form. */

static json_t *
rg_mock_r_output(rg_mock_conv_t *c, json_t *message, int incomplete,
    size_t *reasoning)
{
    char         id[64];
    size_t       i, len;
    json_t      *output, *parts, *tc, *fn, *v;
    const char  *text;

    output = json_array();
    if (output == NULL) {
        return NULL;
    }

    *reasoning = 0;

    if (c->think || json_is_true(json_object_get(message, "only_reasoning"))) {
        v = rg_mock_r_reasoning_item(c, message, reasoning);
        if (v == NULL || json_array_append_new(output, v) != 0) {
            json_decref(output);
            return NULL;
        }
    }

    if (json_is_true(json_object_get(message, "only_reasoning"))) {
        return output;
    }

    parts = json_array();
    text = rg_mock_content_text(json_object_get(message, "content"), &len);

    if (len > 0) {
        json_array_append_new(parts, json_pack("{s:s, s:[], s:[], s:s%}",
                              "type", "output_text", "annotations",
                              "logprobs", "text", text, len));
    }

    v = json_object_get(message, "refusal");

    if (json_is_string(v)) {
        json_array_append_new(parts, json_pack("{s:s, s:O}", "type",
                              "refusal", "refusal", v));
    }

    if (json_array_size(parts) > 0) {
        snprintf(id, sizeof(id), "msg_mock_%" PRIu64, c->n);

        json_array_append_new(output, json_pack("{s:s, s:s, s:s, s:o, s:s}",
                              "id", id, "type", "message",
                              "status", incomplete ? "incomplete"
                                                   : "completed",
                              "content", parts, "role", "assistant"));

    } else {
        json_decref(parts);
    }

    json_array_foreach(json_object_get(message, "tool_calls"), i, tc) {
        fn = json_object_get(tc, "function");
        snprintf(id, sizeof(id), "fc_mock_%" PRIu64 "_%zu", c->n, i);

        json_array_append_new(output, json_pack(
            "{s:s, s:s, s:s, s:O, s:O, s:O}",
            "id", id, "type", "function_call", "status", "completed",
            "arguments", json_object_get(fn, "arguments"),
            "call_id", json_object_get(tc, "id"),
            "name", json_object_get(fn, "name")));
    }

    return output;
}


/* A request field, or its default when the request has none. */

static json_t *
rg_mock_r_field(rg_mock_conv_t *c, const char *key, json_t *dflt)
{
    json_t  *v;

    v = json_object_get(c->req, key);

    if (v == NULL || json_is_null(v)) {
        return dflt;
    }

    json_decref(dflt);

    return json_incref(v);
}


/* The response object: what the API sends back of the request, the
 * output, usage (NULL: null). */

static json_t *
rg_mock_r_response(rg_mock_conv_t *c, const char *status, json_t *reason,
    json_t *output, json_t *usage)
{
    char     id[48];
    json_t  *reasoning, *r;

    snprintf(id, sizeof(id), "resp_mock_%" PRIu64, c->n);

    reasoning = json_object_get(c->req, "reasoning");

    r = json_pack("{s:s, s:s, s:I, s:s, s:b, s:n, s:o, s:o, s:o, s:o,"
                  " s:s, s:o, s:o, s:n, s:o, s:{s:O?, s:O?}, s:n, s:s,"
                  " s:o, s:o, s:o, s:o, s:o, s:i, s:o, s:s, s:o, s:o, s:o}",
                  "id", id,
                  "object", "response",
                  "created_at", (json_int_t) time(NULL),
                  "status", status,
                  "background", 0,
                  "error",
                  "incomplete_details", reason
                      ? json_pack("{s:O}", "reason", reason) : json_null(),
                  "instructions", rg_mock_r_field(c, "instructions",
                                                  json_null()),
                  "max_output_tokens", rg_mock_r_field(c, "max_output_tokens",
                                                       json_null()),
                  "max_tool_calls", rg_mock_r_field(c, "max_tool_calls",
                                                    json_null()),
                  "model", c->model,
                  "output", output,
                  "parallel_tool_calls", rg_mock_r_field(c,
                      "parallel_tool_calls", json_true()),
                  "previous_response_id",
                  "prompt_cache_key", rg_mock_r_field(c, "prompt_cache_key",
                                                      json_null()),
                  "reasoning",
                      "effort", json_object_get(reasoning, "effort"),
                      "summary", json_object_get(reasoning, "summary"),
                  "safety_identifier",
                  "service_tier", "default",
                  "store", rg_mock_r_field(c, "store", json_true()),
                  "temperature", rg_mock_r_field(c, "temperature",
                                                 json_integer(1)),
                  "text", rg_mock_r_field(c, "text",
                      json_pack("{s:{s:s}, s:s}", "format", "type", "text",
                                "verbosity", "medium")),
                  "tool_choice", rg_mock_r_field(c, "tool_choice",
                                                 json_string("auto")),
                  "tools", rg_mock_r_field(c, "tools", json_array()),
                  "top_logprobs", 0,
                  "top_p", rg_mock_r_field(c, "top_p", json_integer(1)),
                  "truncation", "disabled",
                  "usage", usage ? usage : json_null(),
                  "user", rg_mock_r_field(c, "user", json_null()),
                  "metadata", rg_mock_r_field(c, "metadata", json_object()));

    return r;
}


static json_t *
rg_mock_r_answer_object(rg_mock_conv_t *c, json_t *message)
{
    size_t       input, cached, out, reasoning;
    json_t      *output, *usage;
    const char  *status;
    int          incomplete;

    status = json_string_value(json_object_get(message, "status"));
    incomplete = json_is_true(json_object_get(message, "only_reasoning"))
                 || (status != NULL && strcmp(status, "incomplete") == 0);

    if (incomplete && json_object_get(message, "reason") == NULL) {
        json_object_set_new(message, "reason",
                            json_string("max_output_tokens"));
    }

    output = rg_mock_r_output(c, message, incomplete, &reasoning);
    if (output == NULL) {
        return NULL;
    }

    out = reasoning + (json_is_true(json_object_get(message,
                                                    "only_reasoning"))
                       ? 0 : rg_mock_output_tokens(message));
    cached = rg_mock_r_cached(c, &input);

    usage = json_pack("{s:I, s:{s:I}, s:I, s:{s:I}, s:I}",
                      "input_tokens", (json_int_t) input,
                      "input_tokens_details",
                          "cached_tokens", (json_int_t) cached,
                      "output_tokens", (json_int_t) out,
                      "output_tokens_details",
                          "reasoning_tokens", (json_int_t) reasoning,
                      "total_tokens", (json_int_t) (input + out));

    return rg_mock_r_response(c, incomplete ? "incomplete" : "completed",
                              incomplete ? json_object_get(message, "reason")
                                         : NULL,
                              output, usage);
}


/* the stream */

/* Appends the event [type, data] to items; data gets its "type" and a
 * "sequence_number" (set when it is sent) first. Steals data. */

static rg_int_t
rg_mock_r_item(json_t *items, const char *type, json_t *data)
{
    json_t  *ev;

    if (data == NULL) {
        return RG_ERROR;
    }

    ev = json_pack("{s:s, s:i}", "type", type, "sequence_number", 0);

    if (ev == NULL || json_object_update(ev, data) != 0) {
        json_decref(ev);
        json_decref(data);
        return RG_ERROR;
    }

    json_decref(data);

    return json_array_append_new(items, ev) == 0 ? RG_OK : RG_ERROR;
}


/* The delta events of a text in --stream-chunk pieces. */

static rg_int_t
rg_mock_r_deltas(json_t *items, const char *type, json_t *where,
    json_t *text, int logprobs)
{
    size_t       off, n, len;
    json_t      *ev;
    const char  *s;

    s = json_string_value(text);
    len = json_string_length(text);

    for (off = 0; off < len; off += n) {
        n = rg_mock_piece(s + off, len - off,
                          (size_t) rg_mock.conf.stream_chunk);

        ev = json_deep_copy(where);
        if (ev == NULL
            || json_object_set_new(ev, "delta", json_stringn(s + off, n)) != 0
            || (logprobs && json_object_set_new(ev, "logprobs", json_array())
                            != 0)
            || rg_mock_r_item(items, type, ev) != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* where an event is: {"item_id", "output_index"[, key: index]} */

static json_t *
rg_mock_r_where(json_t *item, size_t index, const char *key, size_t k)
{
    json_t  *w;

    w = json_pack("{s:O, s:I}", "item_id", json_object_get(item, "id"),
                  "output_index", (json_int_t) index);

    if (w != NULL && key != NULL
        && json_object_set_new(w, key, json_integer((json_int_t) k)) != 0)
    {
        json_decref(w);
        return NULL;
    }

    return w;
}


static rg_int_t
rg_mock_r_reasoning_events(json_t *items, json_t *item, size_t index)
{
    size_t   k;
    json_t  *part, *w, *text;

    json_array_foreach(json_object_get(item, "summary"), k, part) {
        text = json_object_get(part, "text");
        w = rg_mock_r_where(item, index, "summary_index", k);

        if (w == NULL
            || rg_mock_r_item(items, "response.reasoning_summary_part.added",
                   json_pack("{s:O, s:O, s:O, s:{s:s, s:s}}",
                       "item_id", json_object_get(w, "item_id"),
                       "output_index", json_object_get(w, "output_index"),
                       "summary_index", json_object_get(w, "summary_index"),
                       "part", "type", "summary_text", "text", ""))
               != RG_OK
            || rg_mock_r_deltas(items, "response.reasoning_summary_text.delta",
                                w, text, 0) != RG_OK
            || json_object_set(w, "text", text) != 0
            || rg_mock_r_item(items, "response.reasoning_summary_text.done",
                              json_deep_copy(w)) != RG_OK)
        {
            json_decref(w);
            return RG_ERROR;
        }

        json_object_del(w, "text");
        json_object_set(w, "part", part);

        if (rg_mock_r_item(items, "response.reasoning_summary_part.done", w)
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


static rg_int_t
rg_mock_r_message_events(json_t *items, json_t *item, size_t index)
{
    size_t       k;
    json_t      *part, *w, *text, *shell;
    const char  *t, *key;
    int          refusal;

    json_array_foreach(json_object_get(item, "content"), k, part) {
        t = json_string_value(json_object_get(part, "type"));
        refusal = t != NULL && strcmp(t, "refusal") == 0;
        key = refusal ? "refusal" : "text";
        text = json_object_get(part, key);

        shell = json_deep_copy(part);
        json_object_set_new(shell, key, json_string(""));

        w = rg_mock_r_where(item, index, "content_index", k);

        if (w == NULL || shell == NULL
            || rg_mock_r_item(items, "response.content_part.added",
                   json_pack("{s:O, s:O, s:O, s:o}",
                       "item_id", json_object_get(w, "item_id"),
                       "output_index", json_object_get(w, "output_index"),
                       "content_index", json_object_get(w, "content_index"),
                       "part", shell)) != RG_OK)
        {
            json_decref(w);
            return RG_ERROR;
        }

        shell = NULL;

        if (rg_mock_r_deltas(items, refusal ? "response.refusal.delta"
                                            : "response.output_text.delta",
                             w, text, !refusal) != RG_OK)
        {
            json_decref(w);
            return RG_ERROR;
        }

        json_object_set(w, key, text);
        if (!refusal) {
            json_object_set_new(w, "logprobs", json_array());
        }

        if (rg_mock_r_item(items, refusal ? "response.refusal.done"
                                          : "response.output_text.done",
                           json_deep_copy(w)) != RG_OK)
        {
            json_decref(w);
            return RG_ERROR;
        }

        json_object_del(w, key);
        json_object_del(w, "logprobs");
        json_object_set(w, "part", part);

        if (rg_mock_r_item(items, "response.content_part.done", w) != RG_OK) {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* The events of output item index: added (in progress, empty), its
 * parts and deltas, done. */

static rg_int_t
rg_mock_r_item_events(json_t *items, json_t *item, size_t index)
{
    json_t      *shell, *w;
    rg_int_t     rc;
    const char  *t;

    t = json_string_value(json_object_get(item, "type"));
    t = t ? t : "";

    shell = json_deep_copy(item);
    if (shell == NULL) {
        return RG_ERROR;
    }

    if (strcmp(t, "reasoning") == 0) {
        json_object_set_new(shell, "summary", json_array());

    } else if (strcmp(t, "message") == 0) {
        json_object_set_new(shell, "status", json_string("in_progress"));
        json_object_set_new(shell, "content", json_array());

    } else if (strcmp(t, "function_call") == 0) {
        json_object_set_new(shell, "status", json_string("in_progress"));
        json_object_set_new(shell, "arguments", json_string(""));
    }

    if (rg_mock_r_item(items, "response.output_item.added",
            json_pack("{s:I, s:o}", "output_index", (json_int_t) index,
                      "item", shell)) != RG_OK)
    {
        return RG_ERROR;
    }

    rc = RG_OK;

    if (strcmp(t, "reasoning") == 0) {
        rc = rg_mock_r_reasoning_events(items, item, index);

    } else if (strcmp(t, "message") == 0) {
        rc = rg_mock_r_message_events(items, item, index);

    } else if (strcmp(t, "function_call") == 0) {
        w = rg_mock_r_where(item, index, NULL, 0);

        rc = w == NULL
             || rg_mock_r_deltas(items, "response.function_call_arguments."
                                 "delta", w, json_object_get(item,
                                 "arguments"), 0) != RG_OK
             || json_object_set(w, "arguments",
                                json_object_get(item, "arguments")) != 0
             ? RG_ERROR
             : rg_mock_r_item(items, "response.function_call_arguments.done",
                              json_incref(w));

        json_decref(w);
    }

    if (rc != RG_OK) {
        return RG_ERROR;
    }

    return rg_mock_r_item(items, "response.output_item.done",
                          json_pack("{s:I, s:O}", "output_index",
                                    (json_int_t) index, "item", item));
}


/* Turns a response into the events of r->stream, each "event: TYPE" and
 * "data: {"type", "sequence_number", ...}": response.created and
 * response.in_progress (no output, usage null), per output item
 * output_item.added, its parts with their deltas in --stream-chunk pieces
 * (reasoning_summary_part.added, reasoning_summary_text.delta/.done,
 * reasoning_summary_part.done; content_part.added, output_text.delta/
 * .done or refusal.delta/.done, content_part.done;
 * function_call_arguments.delta/.done), output_item.done; then
 * response.completed or response.incomplete with the whole response,
 * unless --stream-no-done. A scripted stream_error keeps the first event
 * and half of those before the last, then sends an error event (or with
 * stream_error_failed, response.failed) and nothing more. */

static rg_int_t
rg_mock_r_stream(rg_mock_conv_t *c, json_t *resp, rg_mock_reply_t *r)
{
    size_t             i, n, keep, mark;
    json_t            *items, *shell, *item, *ev, *failed;
    const char        *status, *code;
    rg_mock_stream_t  *st;

    items = json_array();
    shell = json_copy(resp);
    st = rg_mock_stream_new();

    if (items == NULL || shell == NULL || st == NULL) {
        goto failed;
    }

    json_object_set_new(shell, "status", json_string("in_progress"));
    json_object_set_new(shell, "incomplete_details", json_null());
    json_object_set_new(shell, "output", json_array());
    json_object_set_new(shell, "usage", json_null());

    if (rg_mock_r_item(items, "response.created",
                       json_pack("{s:O}", "response", shell)) != RG_OK
        || rg_mock_r_item(items, "response.in_progress",
                          json_pack("{s:O}", "response", shell)) != RG_OK)
    {
        goto failed;
    }

    json_array_foreach(json_object_get(resp, "output"), i, item) {
        if (rg_mock_r_item_events(items, item, i) != RG_OK) {
            goto failed;
        }
    }

    mark = json_array_size(items);
    status = json_string_value(json_object_get(resp, "status"));

    if (!rg_mock.conf.stream_no_done
        && rg_mock_r_item(items, status != NULL
                                 && strcmp(status, "incomplete") == 0
                                 ? "response.incomplete"
                                 : "response.completed",
                          json_pack("{s:O}", "response", resp)) != RG_OK)
    {
        goto failed;
    }

    n = json_array_size(items);
    keep = c->stream_error ? 1 + mark / 2 : n;
    keep = keep < n ? keep : n;

    for (i = 0; i < keep; i++) {
        ev = json_array_get(items, i);
        json_object_set_new(ev, "sequence_number",
                            json_integer((json_int_t) i));

        if (rg_mock_stream_event(st, json_string_value(json_object_get(ev,
                                 "type")), ev) != RG_OK)
        {
            goto failed;
        }
    }

    if (c->stream_error != NULL) {
        code = c->stream_error_type ? c->stream_error_type : "server_error";

        if (c->stream_error_failed) {
            json_object_set_new(shell, "status", json_string("failed"));
            json_object_set_new(shell, "error", json_pack("{s:s, s:s}",
                                "code", code, "message", c->stream_error));

            failed = json_pack("{s:s, s:I, s:O}", "type", "response.failed",
                               "sequence_number", (json_int_t) keep,
                               "response", shell);

        } else {
            failed = json_pack("{s:s, s:s, s:s, s:n, s:I}", "type", "error",
                               "code", code, "message", c->stream_error,
                               "param", "sequence_number", (json_int_t) keep);
        }

        if (failed == NULL
            || rg_mock_stream_event(st, json_string_value(json_object_get(
                                    failed, "type")), failed) != RG_OK)
        {
            json_decref(failed);
            goto failed;
        }

        json_decref(failed);
    }

    json_decref(shell);
    json_decref(items);

    return rg_mock_stream_done(st, c, r);

failed:

    rg_mock_stream_free(st);
    json_decref(shell);
    json_decref(items);

    return RG_ERROR;
}


static rg_int_t
rg_mock_responses_answer(rg_mock_conv_t *c, json_t *message,
    struct evbuffer *out, rg_mock_reply_t *r)
{
    json_t    *resp;
    rg_int_t   rc;

    resp = rg_mock_r_answer_object(c, message);
    json_decref(message);

    if (resp == NULL) {
        return RG_ERROR;
    }

    rc = c->stream ? rg_mock_r_stream(c, resp, r) : rg_mock_dump(out, resp);
    json_decref(resp);

    return rc;
}


/* A scripted "body" streams when it is a response: "object": "response"
 * and an "output" array. */

static rg_int_t
rg_mock_responses_stream_body(rg_mock_conv_t *c, json_t *body,
    rg_mock_reply_t *r)
{
    const char  *o;

    o = json_string_value(json_object_get(body, "object"));

    if (o == NULL || strcmp(o, "response") != 0
        || !json_is_array(json_object_get(body, "output")))
    {
        return RG_DECLINED;
    }

    return rg_mock_r_stream(c, body, r);
}


/* errors */

/* The rate limit of a 429 as the API words and counts it. */

static rg_int_t
rg_mock_r_rate_limited(rg_mock_conv_t *c, struct evbuffer *out,
    struct evkeyvalq *headers)
{
    char    message[512], in[32];
    size_t  len;

    rg_mock_retry_in(in, sizeof(in));

    evhttp_add_header(headers, "x-ratelimit-limit-requests", "500");
    evhttp_add_header(headers, "x-ratelimit-limit-tokens", "200000");
    evhttp_add_header(headers, "x-ratelimit-remaining-requests", "499");
    evhttp_add_header(headers, "x-ratelimit-remaining-tokens", "0");
    evhttp_add_header(headers, "x-ratelimit-reset-requests", "120ms");
    evhttp_add_header(headers, "x-ratelimit-reset-tokens", in);

    len = rg_mock_utf8_cut(c->model, strlen(c->model), 128);
    snprintf(message, sizeof(message), "Rate limit reached for %.*s in "
             "organization org-mock on tokens per min (TPM): Limit 200000, "
             "Used 199100, Requested 2400. Please try again in %s. Visit "
             "https://platform.openai.com/account/rate-limits to learn "
             "more.", (int) len, c->model, in);

    return rg_mock_error_body(out, message, "tokens", NULL,
                              "rate_limit_exceeded");
}


static rg_int_t
rg_mock_responses_status(rg_mock_conv_t *c, int status, int fault,
    struct evbuffer *out, struct evkeyvalq *headers)
{
    char    message[320];
    size_t  len;

    if (fault == RG_MOCK_FAULT_OVERLOAD) {
        return rg_mock_error_body(out, "The server is overloaded or not "
                                  "ready yet.", "server_error", NULL, NULL);
    }

    if (fault == RG_MOCK_FAULT_TOO_LONG) {
        return rg_mock_error_body(out, "Your input exceeds the context "
                                  "window of this model. Please adjust your "
                                  "input and try again.",
                                  "invalid_request_error", "input",
                                  "context_length_exceeded");
    }

    switch (status) {

    case 429:
        return rg_mock_r_rate_limited(c, out, headers);

    case 500:
        return rg_mock_error_body(out, "The server had an error while "
                                  "processing your request.", "server_error",
                                  NULL, NULL);

    case 400:
        return rg_mock_error_body(out, "Invalid request (injected fault).",
                                  "invalid_request_error", NULL, NULL);

    case 401:
        return rg_mock_error_body(out, "Incorrect API key provided.",
                                  "invalid_request_error", NULL,
                                  "invalid_api_key");

    case 404:
        len = rg_mock_utf8_cut(c->model, strlen(c->model), 256);
        snprintf(message, sizeof(message), "The model `%.*s` does not exist "
                 "or you do not have access to it.", (int) len, c->model);
        return rg_mock_error_body(out, message, "invalid_request_error",
                                  NULL, "model_not_found");

    default:
        snprintf(message, sizeof(message), "rg_mock: scripted status %d",
                 status);
        return rg_mock_error_body(out, message, status < 500
                                  ? "invalid_request_error" : "server_error",
                                  NULL, NULL);
    }
}


static rg_int_t
rg_mock_responses_error(rg_mock_conv_t *c, const char *message,
    struct evbuffer *out)
{
    (void) c;

    return rg_mock_error_body(out, message, "server_error", NULL, NULL);
}


static rg_int_t
rg_mock_responses_reject(rg_mock_conv_t *c, rg_mock_err_t *err,
    struct evbuffer *out)
{
    (void) c;

    return rg_mock_error_body(out, err->message, "invalid_request_error",
                              err->param[0] ? err->param : NULL,
                              err->code[0] ? err->code : NULL);
}


const rg_mock_format_t  rg_mock_responses_format = {
    "responses",
    RG_MOCK_FORMAT_RESPONSES,
    503,
    NULL,
    "{\"id\":\"resp_bad\",\"object\":\"response\",\"status\":\"completed\","
    "\"output\":[{\"type\":\"message\",\"content\":[",
    rg_mock_responses_parse,
    rg_mock_responses_reject,
    rg_mock_responses_answer,
    rg_mock_responses_stream_body,
    rg_mock_responses_status,
    rg_mock_responses_error
};
