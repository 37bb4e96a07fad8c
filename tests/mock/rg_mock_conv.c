/* rg_mock_conv.c: the conversation logic of the mock model, the same for
 * every wire format. Reads a request in chat form (the format turned it
 * into one) and decides the answer: generic mode (--rounds, --calls: the
 * position in a conversation is derived from its messages, so concurrent
 * conversations never disturb each other), scripted mode (--script: the
 * n-th assistant turn takes entry n) and the fault injector (--fault).
 * The answer is an assistant message in chat form, which the format then
 * writes in its own shape. Owns the loaded script. */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rg_mock.h"


const char  *rg_mock_fault_names[] = {
    "", "429", "500", "hang", "malformed", "400", "401", "404", "close",
    "overloaded", "too_long"
};


/* Counts the turns of c->root: assistant messages, those with tool calls
 * (rounds), the last tool and user contents. */

void
rg_mock_conv_init(rg_mock_conv_t *c)
{
    size_t       i, n;
    json_t      *messages, *m;
    const char  *role;

    c->model = json_string_value(json_object_get(c->root, "model"));
    c->n = ++rg_mock.seq;
    c->stream = json_is_true(json_object_get(c->root, "stream"));
    c->include_usage = json_is_true(json_object_get(
                           json_object_get(c->root, "stream_options"),
                           "include_usage"));

    if (c->call_prefix == NULL) {
        c->call_prefix = "call_";
    }

    if (c->call_suffix == NULL) {
        c->call_suffix = "";
    }

    messages = json_object_get(c->root, "messages");
    n = json_array_size(messages);

    for (i = 0; i < n; i++) {
        m = json_array_get(messages, i);
        role = json_string_value(json_object_get(m, "role"));

        if (role == NULL) {
            continue;
        }

        if (strcmp(role, "assistant") == 0) {
            c->assistants++;
            if (json_array_size(json_object_get(m, "tool_calls")) > 0) {
                c->rounds++;
            }

        } else if (strcmp(role, "tool") == 0) {
            c->last_tool = json_object_get(m, "content");

        } else if (strcmp(role, "user") == 0) {
            c->last_user = json_object_get(m, "content");
        }
    }
}


/* A value that satisfies a JSON Schema well enough for a test tool. The
 * n-th call of a conversation takes examples[n % count], so successive
 * rounds differ the way a real model's calls do. A string is "x", or with
 * ascii "x é", which the arguments carry as an escape (\u00e9) that a
 * stream may split. */

static json_t *
rg_mock_schema_value(json_t *schema, size_t n, int ascii)
{
    size_t       i;
    json_t      *v, *type;
    const char  *t;

    v = json_object_get(schema, "examples");
    if (json_array_size(v) > 0) {
        return json_incref(json_array_get(v, n % json_array_size(v)));
    }

    v = json_object_get(schema, "enum");
    if (json_array_size(v) > 0) {
        return json_incref(json_array_get(v, 0));
    }

    v = json_object_get(schema, "const");
    if (v != NULL) {
        return json_incref(v);
    }

    type = json_object_get(schema, "type");
    t = json_string_value(type);

    if (json_is_array(type)) {
        for (i = 0; i < json_array_size(type); i++) {
            t = json_string_value(json_array_get(type, i));
            if (t != NULL && strcmp(t, "null") != 0) {
                break;
            }
        }
    }

    if (t == NULL || strcmp(t, "string") == 0) {
        return json_string(ascii ? "x \xc3\xa9" : "x");
    }

    if (strcmp(t, "number") == 0 || strcmp(t, "integer") == 0) {
        return json_integer(1);
    }

    if (strcmp(t, "boolean") == 0) {
        return json_true();
    }

    if (strcmp(t, "array") == 0) {
        return json_array();
    }

    if (strcmp(t, "object") == 0) {
        return json_object();
    }

    if (strcmp(t, "null") == 0) {
        return json_null();
    }

    return json_string(ascii ? "x \xc3\xa9" : "x");
}


/* The arguments string of a generated tool call: the required properties
 * of the tool's parameters, or all of them when none is required. */

static char *
rg_mock_schema_args(json_t *params, size_t n, int ascii)
{
    char        *s;
    size_t       i;
    json_t      *args, *props, *required, *name, *schema;
    const char  *key;

    args = json_object();
    if (args == NULL) {
        return NULL;
    }

    props = json_object_get(params, "properties");
    required = json_object_get(params, "required");

    if (json_is_array(required)) {
        json_array_foreach(required, i, name) {
            key = json_string_value(name);
            if (key != NULL) {
                json_object_set_new(args, key, rg_mock_schema_value(
                                    json_object_get(props, key), n, ascii));
            }
        }

    } else if (json_is_object(props)) {
        json_object_foreach(props, key, schema) {
            json_object_set_new(args, key,
                                rg_mock_schema_value(schema, n, ascii));
        }
    }

    s = json_dumps(args, JSON_COMPACT | (ascii ? JSON_ENSURE_ASCII : 0));
    json_decref(args);

    return s;
}


/* The tokens of an answer: 10 per tool call, or a quarter of the text. */

size_t
rg_mock_output_tokens(json_t *message)
{
    size_t  ncalls, len;

    ncalls = json_array_size(json_object_get(message, "tool_calls"));

    if (ncalls > 0) {
        return 10 * ncalls;
    }

    (void) rg_mock_content_text(json_object_get(message, "content"), &len);

    return len / 4 + 1;
}


/* The usage the mock reports for a chat answer: a quarter of the
 * request's bytes as prompt tokens, and the answer's tokens. */

json_t *
rg_mock_tokens(rg_mock_conv_t *c, json_t *message)
{
    size_t  prompt, completion;

    prompt = c->body_len / 4;
    completion = rg_mock_output_tokens(message);

    return json_pack("{s:I, s:I, s:I}",
                     "prompt_tokens", (json_int_t) prompt,
                     "completion_tokens", (json_int_t) completion,
                     "total_tokens", (json_int_t) (prompt + completion));
}


/* What the mock "thinks" before an answer, deterministic because the
 * answer is known: "Round 2: I will call echo twice.", or the message's
 * own "thinking" (a script's). A new string. */

json_t *
rg_mock_thinking(rg_mock_conv_t *c, json_t *message)
{
    char         text[256], times[32];
    size_t       ncalls;
    json_t      *v, *calls;
    const char  *name;

    v = json_object_get(message, "thinking");
    if (json_is_string(v)) {
        return json_incref(v);
    }

    calls = json_object_get(message, "tool_calls");
    ncalls = json_array_size(calls);

    if (ncalls == 0) {
        snprintf(text, sizeof(text), "Round %zu: I will answer now.",
                 c->rounds + 1);
        return json_string(text);
    }

    name = json_string_value(json_object_get(json_object_get(
               json_array_get(calls, 0), "function"), "name"));

    if (ncalls == 1) {
        snprintf(times, sizeof(times), "once");

    } else if (ncalls == 2) {
        snprintf(times, sizeof(times), "twice");

    } else {
        snprintf(times, sizeof(times), "%zu times", ncalls);
    }

    snprintf(text, sizeof(text), "Round %zu: I will call %.64s %s.",
             c->rounds + 1, name ? name : "a tool", times);

    return json_string(text);
}


/* Answers with an assistant message in chat form (stolen), in the
 * request's format. */

rg_int_t
rg_mock_answer(rg_mock_conv_t *c, json_t *message, struct evbuffer *out,
    rg_mock_reply_t *r)
{
    size_t  ncalls;

    if (message == NULL) {
        return RG_ERROR;
    }

    ncalls = json_array_size(json_object_get(message, "tool_calls"));

    if (ncalls > 0) {
        snprintf(r->note, sizeof(r->note), "%zu tool call%s", ncalls,
                 ncalls == 1 ? "" : "s");

    } else {
        snprintf(r->note, sizeof(r->note), "final answer");
    }

    return c->format->answer(c, message, out, r);
}


rg_int_t
rg_mock_generic(rg_mock_conv_t *c, struct evbuffer *out, rg_mock_reply_t *r)
{
    char         buf[RG_MOCK_ECHO_MAX + 128], id[128], *args;
    size_t       i, len, n, ncalls;
    json_t      *tools, *fn, *message, *calls;
    const char  *text;

    tools = json_object_get(c->root, "tools");

    if (json_array_size(tools) > 0 && c->rounds < (size_t) rg_mock.conf.rounds)
    {
        fn = json_object_get(json_array_get(tools, 0), "function");
        calls = json_array();
        ncalls = c->one_call ? 1 : (size_t) rg_mock.conf.calls;

        for (i = 0; i < ncalls; i++) {
            args = rg_mock_schema_args(json_object_get(fn, "parameters"),
                                       c->rounds * rg_mock.conf.calls + i,
                                       c->ascii_args);
            if (args == NULL) {
                json_decref(calls);
                return RG_ERROR;
            }

            snprintf(id, sizeof(id), "%s%zu_%zu_%" PRIu64 "%s",
                     c->call_prefix, c->rounds, i, c->n, c->call_suffix);

            json_array_append_new(calls,
                json_pack("{s:s, s:s, s:{s:O, s:s}}",
                          "id", id, "type", "function",
                          "function",
                              "name", json_object_get(fn, "name"),
                              "arguments", args));
            free(args);
        }

        message = json_pack("{s:s, s:n, s:o, s:n}", "role", "assistant",
                            "content", "tool_calls", calls, "refusal");

        return rg_mock_answer(c, message, out, r);
    }

    if (c->last_tool != NULL) {
        n = snprintf(buf, sizeof(buf), "Final answer after %zu rounds: ",
                     c->rounds);
        text = rg_mock_content_text(c->last_tool, &len);

    } else {
        n = snprintf(buf, sizeof(buf), "Final answer: ");
        text = rg_mock_content_text(c->last_user, &len);
    }

    len = rg_mock_utf8_cut(text, len, RG_MOCK_ECHO_MAX);
    memcpy(buf + n, text, len);
    n += len;

    message = json_pack("{s:s, s:s%, s:n}", "role", "assistant",
                        "content", buf, n, "refusal");

    return rg_mock_answer(c, message, out, r);
}


/* faults */

int
rg_mock_fault_pick(void)
{
    uint64_t  n;

    n = ++rg_mock.stats.fault_seq;

    if (rg_mock.conf.fault == RG_MOCK_FAULT_NONE) {
        return RG_MOCK_FAULT_NONE;
    }

    if (rg_mock.conf.fault_every > 0) {
        return n % (uint64_t) rg_mock.conf.fault_every == 0
               ? rg_mock.conf.fault : RG_MOCK_FAULT_NONE;
    }

    if (rg_mock.conf.fault_count == 0
        || n <= (uint64_t) rg_mock.conf.fault_count)
    {
        return rg_mock.conf.fault;
    }

    return RG_MOCK_FAULT_NONE;
}


void
rg_mock_fault(struct evhttp_request *req, int fault, rg_mock_conv_t *c,
    rg_mock_reply_t *r)
{
    char               value[32];
    struct evbuffer   *out;
    struct evkeyvalq  *headers;

    out = evhttp_request_get_output_buffer(req);
    headers = evhttp_request_get_output_headers(req);

    r->kind = RG_MOCK_FAULT;
    snprintf(r->note, sizeof(r->note), "fault %s", rg_mock_fault_names[fault]);

    switch (fault) {

    case RG_MOCK_FAULT_429:
        r->status = 429;
        c->format->status(c, 429, fault, out, headers);

        if (rg_mock.conf.retry_after_ms >= 0) {
            snprintf(value, sizeof(value), "%ld", rg_mock.conf.retry_after_ms);
            evhttp_add_header(headers, "retry-after-ms", value);

        } else if (rg_mock.conf.retry_after >= 0) {
            snprintf(value, sizeof(value), "%ld", rg_mock.conf.retry_after);
            evhttp_add_header(headers, "Retry-After", value);
        }
        break;

    case RG_MOCK_FAULT_500:
    case RG_MOCK_FAULT_400:
    case RG_MOCK_FAULT_401:
    case RG_MOCK_FAULT_404:
        r->status = fault == RG_MOCK_FAULT_500 ? 500
                    : fault == RG_MOCK_FAULT_400 ? 400
                    : fault == RG_MOCK_FAULT_401 ? 401 : 404;
        c->format->status(c, r->status, fault, out, headers);
        break;

    case RG_MOCK_FAULT_OVERLOAD:
        r->status = c->format->overloaded;
        c->format->status(c, r->status, fault, out, headers);
        break;

    case RG_MOCK_FAULT_TOO_LONG:
        r->status = 400;
        c->format->status(c, 400, fault, out, headers);
        break;

    case RG_MOCK_FAULT_BAD:
        r->status = 200;
        evbuffer_add(out, c->format->malformed,
                     strlen(c->format->malformed));
        break;

    case RG_MOCK_FAULT_HANG:
        r->action = RG_MOCK_HANG;
        break;

    default: /* RG_MOCK_FAULT_CLOSE */
        r->action = RG_MOCK_CLOSE;
        break;
    }
}


/* scripted mode */

static json_t *
rg_mock_script_message(json_t *tmpl, rg_mock_conv_t *c)
{
    char         id[128];
    size_t       i;
    json_t      *msg, *calls, *tc, *out, *v;
    const char  *key;

    msg = json_object();
    calls = json_object_get(tmpl, "tool_calls");

    v = json_object_get(tmpl, "content");
    json_object_set_new(msg, "role", json_string("assistant"));
    json_object_set(msg, "content", v ? v : json_null());

    if (json_array_size(calls) > 0) {
        out = json_array();

        json_array_foreach(calls, i, tc) {
            v = json_object_get(tc, "id");

            if (v == NULL) {
                snprintf(id, sizeof(id), "%s%zu_%zu_%" PRIu64 "%s",
                         c->call_prefix, c->assistants, i, c->n,
                         c->call_suffix);
            }

            json_array_append_new(out,
                json_pack("{s:s, s:O, s:O}",
                          "id", v ? json_string_value(v) : id,
                          "type", json_object_get(tc, "type"),
                          "function", json_object_get(tc, "function")));
        }

        json_object_set_new(msg, "tool_calls", out);
    }

    v = json_object_get(tmpl, "refusal");
    json_object_set(msg, "refusal", v ? v : json_null());

    json_object_foreach(tmpl, key, v) {
        if (json_object_get(msg, key) == NULL
            && strcmp(key, "tool_calls") != 0)
        {
            json_object_set(msg, key, v);
        }
    }

    return msg;
}


rg_int_t
rg_mock_script(struct evhttp_request *req, rg_mock_conv_t *c,
    rg_mock_reply_t *r)
{
    size_t             n;
    json_t            *entry, *v;
    rg_int_t           rc;
    const char        *key;
    struct evbuffer   *out;
    struct evkeyvalq  *headers;

    n = json_array_size(rg_mock.script);
    entry = json_array_get(rg_mock.script, c->assistants < n
                                           ? c->assistants : n - 1);

    out = evhttp_request_get_output_buffer(req);
    headers = evhttp_request_get_output_headers(req);

    v = json_object_get(entry, "status");
    r->status = v ? (int) json_integer_value(v) : 200;
    r->kind = r->status / 100 == 2 ? RG_MOCK_COMPLETION : RG_MOCK_FAULT;
    r->delay += (long) json_integer_value(json_object_get(entry, "delay_ms"));

    snprintf(r->note, sizeof(r->note), "script entry %zu",
             c->assistants < n ? c->assistants : n - 1);

    if (json_is_true(json_object_get(entry, "hang"))) {
        r->action = RG_MOCK_HANG;
        r->kind = RG_MOCK_FAULT;
        return RG_OK;
    }

    if (json_is_true(json_object_get(entry, "close"))) {
        r->action = RG_MOCK_CLOSE;
        r->kind = RG_MOCK_FAULT;
        return RG_OK;
    }

    json_object_foreach(json_object_get(entry, "headers"), key, v) {
        evhttp_remove_header(headers, key);
        evhttp_add_header(headers, key, json_string_value(v));
    }

    if ((v = json_object_get(entry, "raw")) != NULL) {
        return evbuffer_add(out, json_string_value(v),
                            json_string_length(v)) == 0 ? RG_OK : RG_ERROR;
    }

    /* an error in the middle of a stream; a 500 when not streaming */

    v = json_object_get(entry, "stream_error");

    if (v != NULL && r->status < 400) {
        if (!c->stream) {
            r->status = 500;
            r->kind = RG_MOCK_FAULT;
            return c->format->error(c, json_string_value(v), out);
        }

        c->stream_error = json_string_value(v);
        c->stream_error_type = json_string_value(json_object_get(entry,
                                   "stream_error_type"));
        c->stream_error_failed = json_is_true(json_object_get(entry,
                                     "stream_error_failed"));
    }

    if ((v = json_object_get(entry, "body")) != NULL) {
        if (c->stream && r->status / 100 == 2
            && c->format->stream_body != NULL)
        {
            rc = c->format->stream_body(c, v, r);
            if (rc != RG_DECLINED) {
                return rc;
            }
        }

        return rg_mock_dump(out, v);
    }

    if ((v = json_object_get(entry, "message")) != NULL) {
        return rg_mock_answer(c, rg_mock_script_message(v, c), out, r);
    }

    if (r->status >= 400) {
        return c->format->status(c, r->status, RG_MOCK_FAULT_NONE, out,
                                 headers);
    }

    return rg_mock_generic(c, out, r);
}


/* The keys a script's message may carry for the other formats: a string
 * from a set, a string, or a boolean. */

static rg_int_t
rg_mock_script_extra_load(json_t *msg)
{
    size_t       i;
    json_t      *v;
    const char  *s;

    static const char  *stops[] = {
        "end_turn", "max_tokens", "pause_turn", "refusal", "stop_sequence",
        "tool_use", NULL
    };
    static const char  *reasons[] = {
        "max_output_tokens", "content_filter", NULL
    };

    v = json_object_get(msg, "stop_reason");
    if (v != NULL) {
        s = json_string_value(v);
        for (i = 0; s != NULL && stops[i] != NULL; i++) {
            if (strcmp(s, stops[i]) == 0) {
                break;
            }
        }
        if (s == NULL || stops[i] == NULL) {
            fprintf(stderr, "rg_mock: script message: \"stop_reason\" must "
                    "be end_turn, max_tokens, pause_turn, refusal, "
                    "stop_sequence or tool_use\n");
            return RG_ERROR;
        }
    }

    v = json_object_get(msg, "status");
    s = json_string_value(v);
    if (v != NULL && (s == NULL || (strcmp(s, "completed") != 0
                                    && strcmp(s, "incomplete") != 0)))
    {
        fprintf(stderr, "rg_mock: script message: \"status\" must be "
                "completed or incomplete\n");
        return RG_ERROR;
    }

    v = json_object_get(msg, "reason");
    if (v != NULL) {
        s = json_string_value(v);
        for (i = 0; s != NULL && reasons[i] != NULL; i++) {
            if (strcmp(s, reasons[i]) == 0) {
                break;
            }
        }
        if (s == NULL || reasons[i] == NULL) {
            fprintf(stderr, "rg_mock: script message: \"reason\" must be "
                    "max_output_tokens or content_filter\n");
            return RG_ERROR;
        }
    }

    if (((v = json_object_get(msg, "only_reasoning")) != NULL
         && !json_is_boolean(v))
        || ((v = json_object_get(msg, "redacted_thinking")) != NULL
            && !json_is_boolean(v))
        || ((v = json_object_get(msg, "thinking")) != NULL
            && !json_is_string(v))
        || ((v = json_object_get(msg, "refusal")) != NULL
            && !json_is_string(v) && !json_is_null(v)))
    {
        fprintf(stderr, "rg_mock: script message: \"only_reasoning\" and "
                "\"redacted_thinking\" must be booleans, \"thinking\" and "
                "\"refusal\" strings\n");
        return RG_ERROR;
    }

    return RG_OK;
}


/* Checks a script entry's message and turns its tool calls into the wire
 * form: {"id"?, "type", "function": {"name", "arguments": "<string>"}}. */

static rg_int_t
rg_mock_script_message_load(json_t *msg, size_t e)
{
    char    *s;
    size_t   i;
    json_t  *calls, *tc, *fn, *v;

    if (!json_is_object(msg)) {
        fprintf(stderr, "rg_mock: script entry %zu: \"message\" must be an "
                "object\n", e);
        return RG_ERROR;
    }

    if (rg_mock_script_extra_load(msg) != RG_OK) {
        fprintf(stderr, "rg_mock: in script entry %zu\n", e);
        return RG_ERROR;
    }

    calls = json_object_get(msg, "tool_calls");
    if (calls == NULL || json_is_null(calls)) {
        return RG_OK;
    }

    if (!json_is_array(calls)) {
        fprintf(stderr, "rg_mock: script entry %zu: \"tool_calls\" must be "
                "an array\n", e);
        return RG_ERROR;
    }

    json_array_foreach(calls, i, tc) {
        if (!json_is_object(tc)) {
            goto invalid;
        }

        fn = json_object_get(tc, "function");

        if (fn == NULL) {
            fn = json_object();
            if (fn == NULL) {
                return RG_ERROR;
            }

            if ((v = json_object_get(tc, "name")) != NULL) {
                json_object_set(fn, "name", v);
            }
            if ((v = json_object_get(tc, "arguments")) != NULL) {
                json_object_set(fn, "arguments", v);
            }

            json_object_del(tc, "name");
            json_object_del(tc, "arguments");
            json_object_set_new(tc, "function", fn);
        }

        if (!json_is_object(fn) || !json_is_string(json_object_get(fn, "name")))
        {
            goto invalid;
        }

        v = json_object_get(fn, "arguments");

        if (v == NULL) {
            json_object_set_new(fn, "arguments", json_string("{}"));

        } else if (!json_is_string(v)) {
            s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            if (s == NULL) {
                return RG_ERROR;
            }
            json_object_set_new(fn, "arguments", json_string(s));
            free(s);
        }

        v = json_object_get(tc, "type");
        if (v == NULL) {
            json_object_set_new(tc, "type", json_string("function"));

        } else if (!json_is_string(v)) {
            goto invalid;
        }

        v = json_object_get(tc, "id");
        if (v != NULL && !json_is_string(v)) {
            goto invalid;
        }
    }

    return RG_OK;

invalid:

    fprintf(stderr, "rg_mock: script entry %zu: tool call %zu must be "
            "{\"id\"?, \"type\"?, \"function\": {\"name\": STRING, "
            "\"arguments\"?}} or {\"name\": STRING, \"arguments\"?}\n", e, i);

    return RG_ERROR;
}


rg_int_t
rg_mock_script_load(const char *file)
{
    size_t         e, bodies;
    json_t        *script, *entry, *v, *h;
    const char    *key, *hkey;
    json_error_t   jerr;

    script = json_load_file(file, 0, &jerr);
    if (script == NULL) {
        if (jerr.line > 0) {
            fprintf(stderr, "rg_mock: cannot load script \"%s\": %s in "
                    "%s:%d\n", file, jerr.text, file, jerr.line);

        } else {
            fprintf(stderr, "rg_mock: cannot load script \"%s\": %s\n",
                    file, jerr.text);
        }

        return RG_ERROR;
    }

    rg_mock.script = script;

    if (!json_is_array(script) || json_array_size(script) == 0) {
        fprintf(stderr, "rg_mock: script \"%s\" must be a non-empty JSON "
                "array\n", file);
        return RG_ERROR;
    }

    json_array_foreach(script, e, entry) {
        if (!json_is_object(entry)) {
            fprintf(stderr, "rg_mock: script entry %zu must be an object\n",
                    e);
            return RG_ERROR;
        }

        bodies = 0;

        json_object_foreach(entry, key, v) {
            if (strcmp(key, "status") == 0) {
                if (!json_is_integer(v) || json_integer_value(v) < 100
                    || json_integer_value(v) > 599)
                {
                    goto invalid;
                }

            } else if (strcmp(key, "headers") == 0) {
                if (!json_is_object(v)) {
                    goto invalid;
                }

                json_object_foreach(v, hkey, h) {
                    if (!json_is_string(h) || strpbrk(hkey, "\r\n: ")
                        || strpbrk(json_string_value(h), "\r\n"))
                    {
                        goto invalid;
                    }
                }

            } else if (strcmp(key, "body") == 0) {
                bodies++;

            } else if (strcmp(key, "raw") == 0) {
                bodies++;
                if (!json_is_string(v)) {
                    goto invalid;
                }

            } else if (strcmp(key, "message") == 0) {
                bodies++;
                if (rg_mock_script_message_load(v, e) != RG_OK) {
                    return RG_ERROR;
                }

            } else if (strcmp(key, "delay_ms") == 0) {
                if (!json_is_integer(v) || json_integer_value(v) < 0
                    || json_integer_value(v) > 86400000)
                {
                    goto invalid;
                }

            } else if (strcmp(key, "hang") == 0
                       || strcmp(key, "close") == 0
                       || strcmp(key, "stream_error_failed") == 0)
            {
                if (!json_is_boolean(v)) {
                    goto invalid;
                }

            } else if (strcmp(key, "stream_error") == 0
                       || strcmp(key, "stream_error_type") == 0)
            {
                if (!json_is_string(v)) {
                    goto invalid;
                }

            } else {
                fprintf(stderr, "rg_mock: script entry %zu: unknown key "
                        "\"%s\"\n", e, key);
                return RG_ERROR;
            }
        }

        if (bodies > 1) {
            fprintf(stderr, "rg_mock: script entry %zu: use only one of "
                    "\"body\", \"raw\" and \"message\"\n", e);
            return RG_ERROR;
        }
    }

    return RG_OK;

invalid:

    fprintf(stderr, "rg_mock: script entry %zu: invalid \"%s\"\n", e, key);

    return RG_ERROR;
}
