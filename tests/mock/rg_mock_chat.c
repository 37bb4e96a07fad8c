/* rg_mock_chat.c: the OpenAI Chat Completions format of the mock model
 * (POST /v1/chat/completions). Validates a request as strictly as the
 * real API (the request is already in chat form, the form the shared
 * conversation logic reads), wraps the logic's assistant message in a
 * chat.completion, or streams it as chat.completion.chunk events (see
 * rg_mock_chat_stream() for the layout), and writes errors in OpenAI's
 * envelope. With --cache, usage reports prompt_tokens_details.
 * cached_tokens for the longest prefix of messages seen before. */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rg_mock.h"


typedef struct {
    json_t                   *calls;            /* tool_calls still open */
    size_t                    index;            /* their assistant message */
    unsigned char            *answered;
    unsigned char             buf[64];
} rg_mock_open_t;


static rg_int_t rg_mock_chat_stream(rg_mock_conv_t *c, json_t *completion,
    rg_mock_reply_t *r);


/* Content of a system, developer, user or tool message: a string or an
 * array of content parts. */

static rg_int_t
rg_mock_validate_content(json_t *m, size_t i, rg_mock_err_t *err)
{
    char     param[96];
    json_t  *c;

    c = json_object_get(m, "content");
    snprintf(param, sizeof(param), "messages[%zu].content", i);

    if (c == NULL) {
        return rg_mock_missing(err, param);
    }

    if (json_is_null(c)) {
        snprintf(param, sizeof(param), "messages.[%zu].content", i);
        return rg_mock_fail(err, param, "Invalid value for 'content': "
                            "expected a string, got null.");
    }

    if (!json_is_string(c) && !json_is_array(c)) {
        return rg_mock_bad_type(err, param,
                                "one of a string or array of objects", c);
    }

    return RG_OK;
}


static rg_int_t
rg_mock_validate_tool_call(json_t *tc, size_t i, size_t k,
    rg_mock_err_t *err)
{
    char     p[96], param[160];
    json_t  *v, *fn;

    snprintf(p, sizeof(p), "messages[%zu].tool_calls[%zu]", i, k);

    if (!json_is_object(tc)) {
        return rg_mock_bad_type(err, p, "an object", tc);
    }

    snprintf(param, sizeof(param), "%s.id", p);
    v = json_object_get(tc, "id");
    if (v == NULL) {
        return rg_mock_missing(err, param);
    }
    if (!json_is_string(v)) {
        return rg_mock_bad_type(err, param, "a string", v);
    }

    snprintf(param, sizeof(param), "%s.type", p);
    v = json_object_get(tc, "type");
    if (v == NULL) {
        return rg_mock_missing(err, param);
    }
    if (!json_is_string(v)) {
        return rg_mock_bad_type(err, param, "a string", v);
    }
    if (strcmp(json_string_value(v), "function") != 0) {
        return rg_mock_bad_value(err, param, json_string_value(v),
                                 "'function'");
    }

    snprintf(param, sizeof(param), "%s.function", p);
    fn = json_object_get(tc, "function");
    if (fn == NULL) {
        return rg_mock_missing(err, param);
    }
    if (!json_is_object(fn)) {
        return rg_mock_bad_type(err, param, "an object", fn);
    }

    snprintf(param, sizeof(param), "%s.function.name", p);
    v = json_object_get(fn, "name");
    if (v == NULL) {
        return rg_mock_missing(err, param);
    }
    if (!json_is_string(v)) {
        return rg_mock_bad_type(err, param, "a string", v);
    }

    snprintf(param, sizeof(param), "%s.function.arguments", p);
    v = json_object_get(fn, "arguments");
    if (v == NULL) {
        return rg_mock_missing(err, param);
    }
    if (!json_is_string(v)) {
        return rg_mock_bad_type(err, param, "a string", v);
    }

    return RG_OK;
}


/* An assistant message; sets *calls to its non-empty tool_calls or NULL. */

static rg_int_t
rg_mock_validate_assistant(json_t *m, size_t i, json_t **calls,
    rg_mock_err_t *err)
{
    char     param[96];
    size_t   k, n;
    json_t  *tc, *c, *refusal;

    *calls = NULL;

    tc = json_object_get(m, "tool_calls");
    if (tc != NULL && !json_is_null(tc)) {
        snprintf(param, sizeof(param), "messages[%zu].tool_calls", i);

        if (!json_is_array(tc)) {
            return rg_mock_bad_type(err, param, "an array of objects", tc);
        }

        n = json_array_size(tc);
        if (n == 0) {
            return rg_mock_fail(err, param, "Invalid '%s': empty array. "
                                "Expected an array with minimum length 1, "
                                "but got an empty array instead.", param);
        }

        for (k = 0; k < n; k++) {
            if (rg_mock_validate_tool_call(json_array_get(tc, k), i, k, err)
                != RG_OK)
            {
                return RG_ERROR;
            }
        }

        *calls = tc;
    }

    c = json_object_get(m, "content");
    refusal = json_object_get(m, "refusal");

    if (c == NULL || json_is_null(c)) {
        if (*calls == NULL && !json_is_string(refusal)
            && json_object_get(m, "function_call") == NULL)
        {
            snprintf(param, sizeof(param), "messages.[%zu].content", i);
            return rg_mock_fail(err, param, "Invalid value for 'content': "
                                "expected a string, got null.");
        }

        return RG_OK;
    }

    if (!json_is_string(c) && !json_is_array(c)) {
        snprintf(param, sizeof(param), "messages[%zu].content", i);
        return rg_mock_bad_type(err, param,
                                "one of a string or array of objects", c);
    }

    return RG_OK;
}


static rg_int_t
rg_mock_open_start(rg_mock_open_t *o, json_t *calls, size_t index)
{
    size_t  n;

    n = json_array_size(calls);

    if (n <= sizeof(o->buf)) {
        o->answered = o->buf;
        memset(o->buf, 0, sizeof(o->buf));

    } else {
        o->answered = calloc(n, 1);
        if (o->answered == NULL) {
            return RG_ERROR;
        }
    }

    o->calls = calls;
    o->index = index;

    return RG_OK;
}


static void
rg_mock_open_end(rg_mock_open_t *o)
{
    if (o->answered != NULL && o->answered != o->buf) {
        free(o->answered);
    }

    o->answered = NULL;
    o->calls = NULL;
}


/* Every tool call of the open assistant message must have been answered by
 * the tool messages that directly follow it. */

static rg_int_t
rg_mock_open_check(rg_mock_open_t *o, rg_mock_err_t *err)
{
    char         ids[1600], param[96];
    size_t       k, n, len, used;
    const char  *id;

    if (o->calls == NULL) {
        return RG_OK;
    }

    used = 0;
    ids[0] = '\0';
    n = json_array_size(o->calls);

    for (k = 0; k < n; k++) {
        if (o->answered[k]) {
            continue;
        }

        id = json_string_value(json_object_get(json_array_get(o->calls, k),
                                               "id"));
        len = rg_mock_utf8_cut(id, strlen(id), 100);

        if (used + len + 8 >= sizeof(ids)) {
            used += snprintf(ids + used, sizeof(ids) - used, ", ...");
            break;
        }

        used += snprintf(ids + used, sizeof(ids) - used, "%s%.*s",
                         used ? ", " : "", (int) len, id);
    }

    if (used == 0) {
        return RG_OK;
    }

    snprintf(param, sizeof(param), "messages.[%zu].role", o->index);

    return rg_mock_fail(err, param,
                        "An assistant message with 'tool_calls' must be "
                        "followed by tool messages responding to each "
                        "'tool_call_id'. The following tool_call_ids did "
                        "not have response messages: %s", ids);
}


static rg_int_t
rg_mock_validate_tool_msg(json_t *m, size_t i, rg_mock_open_t *o,
    rg_mock_err_t *err)
{
    char         param[96];
    size_t       k, n;
    json_t      *id;
    const char  *s, *cid;

    snprintf(param, sizeof(param), "messages[%zu].tool_call_id", i);

    id = json_object_get(m, "tool_call_id");
    if (id == NULL) {
        return rg_mock_missing(err, param);
    }
    if (!json_is_string(id)) {
        return rg_mock_bad_type(err, param, "a string", id);
    }

    if (rg_mock_validate_content(m, i, err) != RG_OK) {
        return RG_ERROR;
    }

    if (o->calls != NULL) {
        s = json_string_value(id);
        n = json_array_size(o->calls);

        for (k = 0; k < n; k++) {
            cid = json_string_value(json_object_get(
                                    json_array_get(o->calls, k), "id"));
            if (!o->answered[k] && strcmp(cid, s) == 0) {
                o->answered[k] = 1;
                return RG_OK;
            }
        }
    }

    snprintf(param, sizeof(param), "messages.[%zu].role", i);

    return rg_mock_fail(err, param, "Invalid parameter: messages with role "
                        "'tool' must be a response to a preceeding message "
                        "with 'tool_calls'.");
}


static rg_int_t
rg_mock_validate_messages(json_t *messages, rg_mock_err_t *err)
{
    char             param[96];
    size_t           i, n;
    json_t          *m, *role, *calls;
    rg_int_t         rc;
    const char      *r;
    rg_mock_open_t   o;

    memset(&o, 0, sizeof(o));
    rc = RG_ERROR;
    n = json_array_size(messages);

    for (i = 0; i < n; i++) {
        m = json_array_get(messages, i);

        if (!json_is_object(m)) {
            snprintf(param, sizeof(param), "messages[%zu]", i);
            rg_mock_bad_type(err, param, "an object", m);
            goto done;
        }

        snprintf(param, sizeof(param), "messages[%zu].role", i);
        role = json_object_get(m, "role");

        if (role == NULL) {
            rg_mock_missing(err, param);
            goto done;
        }

        if (!json_is_string(role)) {
            rg_mock_bad_type(err, param, "a string", role);
            goto done;
        }

        r = json_string_value(role);

        if (strcmp(r, "tool") == 0) {
            if (rg_mock_validate_tool_msg(m, i, &o, err) != RG_OK) {
                goto done;
            }
            continue;
        }

        /* any other message ends the tool answers of the open calls */

        if (rg_mock_open_check(&o, err) != RG_OK) {
            goto done;
        }
        rg_mock_open_end(&o);

        if (strcmp(r, "user") == 0 || strcmp(r, "system") == 0
            || strcmp(r, "developer") == 0)
        {
            if (rg_mock_validate_content(m, i, err) != RG_OK) {
                goto done;
            }

        } else if (strcmp(r, "assistant") == 0) {
            if (rg_mock_validate_assistant(m, i, &calls, err) != RG_OK) {
                goto done;
            }

            if (calls != NULL && rg_mock_open_start(&o, calls, i) != RG_OK) {
                rg_mock_fail(err, NULL, "rg_mock: out of memory");
                goto done;
            }

        } else {
            rg_mock_bad_value(err, param, r, "'system', 'developer', "
                              "'user', 'assistant', and 'tool'");
            goto done;
        }
    }

    if (rg_mock_open_check(&o, err) != RG_OK) {
        goto done;
    }

    rc = RG_OK;

done:

    rg_mock_open_end(&o);

    return rc;
}


static rg_int_t
rg_mock_validate_tools(json_t *tools, rg_mock_err_t *err)
{
    char         p[64], param[128];
    size_t       k, n, len, j;
    json_t      *t, *v, *fn;
    const char  *s;

    if (!json_is_array(tools)) {
        return rg_mock_bad_type(err, "tools", "an array of objects", tools);
    }

    n = json_array_size(tools);

    if (n == 0) {
        return rg_mock_fail(err, "tools", "Invalid 'tools': empty array. "
                            "Expected an array with minimum length 1, but "
                            "got an empty array instead.");
    }

    if (n > RG_MOCK_MAX_TOOLS) {
        return rg_mock_fail(err, "tools", "Invalid 'tools': array too long. "
                            "Expected an array with maximum length %d, but "
                            "got an array with length %zu instead.",
                            RG_MOCK_MAX_TOOLS, n);
    }

    for (k = 0; k < n; k++) {
        t = json_array_get(tools, k);
        snprintf(p, sizeof(p), "tools[%zu]", k);

        if (!json_is_object(t)) {
            return rg_mock_bad_type(err, p, "an object", t);
        }

        snprintf(param, sizeof(param), "%s.type", p);
        v = json_object_get(t, "type");
        if (v == NULL) {
            return rg_mock_missing(err, param);
        }
        if (!json_is_string(v)) {
            return rg_mock_bad_type(err, param, "a string", v);
        }
        if (strcmp(json_string_value(v), "function") != 0) {
            return rg_mock_bad_value(err, param, json_string_value(v),
                                     "'function'");
        }

        snprintf(param, sizeof(param), "%s.function", p);
        fn = json_object_get(t, "function");
        if (fn == NULL) {
            return rg_mock_missing(err, param);
        }
        if (!json_is_object(fn)) {
            return rg_mock_bad_type(err, param, "an object", fn);
        }

        snprintf(param, sizeof(param), "%s.function.name", p);
        v = json_object_get(fn, "name");
        if (v == NULL) {
            return rg_mock_missing(err, param);
        }
        if (!json_is_string(v)) {
            return rg_mock_bad_type(err, param, "a string", v);
        }

        s = json_string_value(v);
        len = json_string_length(v);

        if (len > RG_MOCK_NAME_MAX) {
            return rg_mock_fail(err, param, "Invalid '%s': string too long. "
                                "Expected a string with maximum length %d, "
                                "but got a string with length %zu instead.",
                                param, RG_MOCK_NAME_MAX, len);
        }

        for (j = 0; j < len; j++) {
            if (!((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z')
                  || (s[j] >= '0' && s[j] <= '9') || s[j] == '_'
                  || s[j] == '-'))
            {
                break;
            }
        }

        if (len == 0 || j < len) {
            return rg_mock_fail(err, param, "Invalid '%s': string does not "
                                "match pattern. Expected a string that "
                                "matches the pattern '^[a-zA-Z0-9_-]+$'.",
                                param);
        }

        snprintf(param, sizeof(param), "%s.function.parameters", p);
        v = json_object_get(fn, "parameters");
        if (v != NULL && !json_is_object(v)) {
            return rg_mock_bad_type(err, param, "an object", v);
        }
    }

    return RG_OK;
}


static rg_int_t
rg_mock_chat_validate(json_t *root, rg_mock_err_t *err)
{
    json_t  *model, *messages, *tools, *stream, *options, *v;

    if (root == NULL) {
        return rg_mock_fail(err, NULL,
                            "We could not parse the JSON body of your "
                            "request.");
    }

    if (!json_is_object(root)) {
        return rg_mock_fail(err, NULL, "Invalid type for request body: "
                            "expected an object, but got %s instead.",
                            rg_mock_type_name(root));
    }

    model = json_object_get(root, "model");
    if (model == NULL || json_is_null(model)) {
        return rg_mock_fail(err, NULL, "you must provide a model parameter");
    }
    if (!json_is_string(model)) {
        return rg_mock_bad_type(err, "model", "a string", model);
    }
    if (json_string_length(model) == 0) {
        return rg_mock_fail(err, NULL, "you must provide a model parameter");
    }

    messages = json_object_get(root, "messages");
    if (messages == NULL) {
        return rg_mock_missing(err, "messages");
    }
    if (!json_is_array(messages)) {
        return rg_mock_bad_type(err, "messages", "an array of objects",
                                messages);
    }
    if (json_array_size(messages) == 0) {
        return rg_mock_fail(err, "messages", "Invalid 'messages': empty "
                            "array. Expected an array with minimum length 1, "
                            "but got an empty array instead.");
    }

    if (rg_mock_validate_messages(messages, err) != RG_OK) {
        return RG_ERROR;
    }

    tools = json_object_get(root, "tools");
    if (tools != NULL && !json_is_null(tools)
        && rg_mock_validate_tools(tools, err) != RG_OK)
    {
        return RG_ERROR;
    }

    stream = json_object_get(root, "stream");
    if (stream != NULL && !json_is_null(stream) && !json_is_boolean(stream)) {
        return rg_mock_bad_type(err, "stream", "a boolean", stream);
    }

    options = json_object_get(root, "stream_options");
    if (options != NULL && !json_is_null(options)) {
        if (!json_is_object(options)) {
            return rg_mock_bad_type(err, "stream_options", "an object",
                                    options);
        }

        v = json_object_get(options, "include_usage");
        if (v != NULL && !json_is_null(v) && !json_is_boolean(v)) {
            return rg_mock_bad_type(err, "stream_options.include_usage",
                                    "a boolean", v);
        }

        if (!json_is_true(stream)) {
            return rg_mock_fail(err, "stream_options", "The "
                                "'stream_options' parameter is only allowed "
                                "when 'stream' is enabled.");
        }
    }

    return RG_OK;
}


/* With --cache: the tokens of the longest prefix of the messages (with
 * the tools) seen before; every prefix is remembered. */

static size_t
rg_mock_chat_cached(rg_mock_conv_t *c)
{
    size_t     i, bytes, cached, prompt;
    json_t    *m;
    uint64_t   h;

    h = rg_mock_hash(RG_MOCK_HASH_INIT, c->model, strlen(c->model));
    bytes = 0;
    h = rg_mock_hash_json(h, json_object_get(c->req, "tools"), NULL, &bytes);
    cached = 0;

    json_array_foreach(json_object_get(c->req, "messages"), i, m) {
        h = rg_mock_hash_json(h, m, NULL, &bytes);

        if (rg_mock_cache_has(h)) {
            cached = rg_mock_tokens_of(bytes);

        } else {
            rg_mock_cache_add(h);
        }
    }

    prompt = c->body_len / 4;
    cached = cached < prompt ? cached : prompt;

    rg_mock_cache_count(cached, prompt - cached);

    return cached;
}


/* Wraps an assistant message (stolen) in a chat.completion object and
 * writes it to out, or makes it the events of r when c streams. */

static rg_int_t
rg_mock_chat_answer(rg_mock_conv_t *c, json_t *message, struct evbuffer *out,
    rg_mock_reply_t *r)
{
    char         id[48];
    size_t       ncalls;
    json_t      *root, *usage;
    rg_int_t     rc;

    ncalls = json_array_size(json_object_get(message, "tool_calls"));
    usage = rg_mock_tokens(c, message);

    if (usage != NULL && rg_mock.conf.cache) {
        json_object_set_new(usage, "prompt_tokens_details",
                            json_pack("{s:I}", "cached_tokens",
                                      (json_int_t) rg_mock_chat_cached(c)));
    }

    snprintf(id, sizeof(id), "chatcmpl-%" PRIu64, c->n);

    root = json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:n, s:s}], s:o}",
                     "id", id,
                     "object", "chat.completion",
                     "created", (json_int_t) time(NULL),
                     "model", c->model,
                     "choices",
                         "index", 0,
                         "message", message,
                         "logprobs",
                         "finish_reason", ncalls ? "tool_calls" : "stop",
                     "usage", usage);

    if (root == NULL) {
        return RG_ERROR;
    }

    rc = c->stream ? rg_mock_chat_stream(c, root, r)
                   : rg_mock_dump(out, root);
    json_decref(root);

    return rc;
}


/* Appends the choice of one chunk; steals delta. */

static rg_int_t
rg_mock_chat_add(json_t *items, json_int_t index, json_t *delta,
    const char *finish)
{
    json_t  *choice;

    if (delta == NULL) {
        return RG_ERROR;
    }

    choice = json_pack("{s:I, s:o, s:n, s:s?}", "index", index,
                       "delta", delta, "logprobs", "finish_reason", finish);

    return json_array_append_new(items, choice) == 0 ? RG_OK : RG_ERROR;
}


/* A text (content, refusal) in pieces of --stream-chunk bytes. */

static rg_int_t
rg_mock_chat_text(json_t *items, json_int_t index, const char *key,
    json_t *text)
{
    size_t       off, len, n;
    const char  *s;

    s = json_string_value(text);
    len = json_string_length(text);

    for (off = 0; off < len; off += n) {
        n = rg_mock_piece(s + off, len - off,
                          (size_t) rg_mock.conf.stream_chunk);

        if (rg_mock_chat_add(items, index,
                               json_pack("{s:s%}", key, s + off, n), NULL)
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* The first delta of tool call k: its id, type and name, no arguments. */

static rg_int_t
rg_mock_chat_call_head(json_t *items, json_int_t index, size_t k,
    json_t *tc)
{
    json_t      *fn;
    const char  *type;

    fn = json_object_get(tc, "function");
    type = json_string_value(json_object_get(tc, "type"));

    return rg_mock_chat_add(items, index,
        json_pack("{s:[{s:I, s:s?, s:s, s:{s:s?, s:s}}]}",
                  "tool_calls",
                      "index", (json_int_t) k,
                      "id", json_string_value(json_object_get(tc, "id")),
                      "type", type ? type : "function",
                      "function",
                          "name", json_string_value(
                                      json_object_get(fn, "name")),
                          "arguments", ""),
        NULL);
}


/* The fragment of the arguments of tool call k that starts at *off;
 * returns 1 after adding one, 0 when none is left, RG_ERROR. */

static rg_int_t
rg_mock_chat_call_args(json_t *items, json_int_t index, size_t k,
    json_t *tc, size_t *off)
{
    size_t       len, n;
    json_t      *args;
    const char  *s;

    args = json_object_get(json_object_get(tc, "function"), "arguments");
    s = json_string_value(args);
    len = json_string_length(args);

    if (s == NULL || *off >= len) {
        return 0;
    }

    n = rg_mock_piece(s + *off, len - *off,
                      (size_t) rg_mock.conf.stream_chunk);

    if (rg_mock_chat_add(items, index,
            json_pack("{s:[{s:I, s:{s:s%}}]}",
                      "tool_calls",
                          "index", (json_int_t) k,
                          "function",
                              "arguments", s + *off, n),
            NULL)
        != RG_OK)
    {
        return RG_ERROR;
    }

    *off += n;

    return 1;
}


/* Tool calls one after another, or with --stream-interleave all heads
 * first and then one fragment of each call in turn. */

static rg_int_t
rg_mock_chat_calls(json_t *items, json_int_t index, json_t *calls)
{
    size_t    k, n, *off, pos;
    rg_int_t  rc, more;

    n = json_array_size(calls);

    if (!rg_mock.conf.stream_interleave) {
        for (k = 0; k < n; k++) {
            if (rg_mock_chat_call_head(items, index, k,
                                         json_array_get(calls, k))
                != RG_OK)
            {
                return RG_ERROR;
            }

            pos = 0;

            do {
                rc = rg_mock_chat_call_args(items, index, k,
                                              json_array_get(calls, k), &pos);
            } while (rc == 1);

            if (rc != 0) {
                return RG_ERROR;
            }
        }

        return RG_OK;
    }

    for (k = 0; k < n; k++) {
        if (rg_mock_chat_call_head(items, index, k,
                                     json_array_get(calls, k))
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    off = calloc(n, sizeof(size_t));
    if (off == NULL) {
        return RG_ERROR;
    }

    do {
        more = 0;

        for (k = 0; k < n; k++) {
            rc = rg_mock_chat_call_args(items, index, k,
                                          json_array_get(calls, k), &off[k]);
            if (rc == RG_ERROR) {
                free(off);
                return RG_ERROR;
            }

            more |= rc;
        }

    } while (more);

    free(off);

    return RG_OK;
}


/* The choices of the chunks of one choice of the completion: the role,
 * the content, the refusal, the tool calls, the finish_reason. */

static rg_int_t
rg_mock_chat_choice(json_t *items, json_t *choice, size_t i)
{
    json_t      *msg, *v, *calls, *content, *delta;
    json_int_t   index;
    const char  *role, *finish;

    v = json_object_get(choice, "index");
    index = json_is_integer(v) ? json_integer_value(v) : (json_int_t) i;

    msg = json_object_get(choice, "message");
    calls = json_object_get(msg, "tool_calls");
    content = json_object_get(msg, "content");
    role = json_string_value(json_object_get(msg, "role"));
    role = role ? role : "assistant";

    if (json_array_size(calls) > 0 || !json_is_string(content)) {
        delta = json_pack("{s:s, s:n}", "role", role, "content");

    } else {
        delta = json_pack("{s:s, s:s, s:n}", "role", role, "content", "",
                          "refusal");
    }

    if (rg_mock_chat_add(items, index, delta, NULL) != RG_OK) {
        return RG_ERROR;
    }

    if (json_is_string(content)) {
        if (rg_mock_chat_text(items, index, "content", content) != RG_OK) {
            return RG_ERROR;
        }

    } else if (content != NULL && !json_is_null(content)
               && rg_mock_chat_add(items, index,
                                     json_pack("{s:O}", "content", content),
                                     NULL)
                  != RG_OK)
    {
        return RG_ERROR;
    }

    v = json_object_get(msg, "refusal");
    if (json_is_string(v)
        && rg_mock_chat_text(items, index, "refusal", v) != RG_OK)
    {
        return RG_ERROR;
    }

    if (rg_mock_chat_calls(items, index, calls) != RG_OK) {
        return RG_ERROR;
    }

    finish = json_string_value(json_object_get(choice, "finish_reason"));
    if (finish == NULL) {
        finish = json_array_size(calls) > 0 ? "tool_calls" : "stop";
    }

    return rg_mock_chat_add(items, index, json_object(), finish);
}


/* Turns a chat.completion into the events of r->stream. Each event is
 * "data: " JSON EOL EOL (EOL "\r\n" with --stream-crlf; a ": keep-alive"
 * EOL EOL comment before every event but the first with
 * --stream-comments). The events: per choice, a role delta, the content
 * and refusal in --stream-chunk pieces, per tool call a head and argument
 * fragments, an empty delta with the finish_reason; with include_usage a
 * chunk with "choices": [] and the usage (and "usage": null on the
 * others); data: [DONE] unless --stream-no-done. A scripted stream_error
 * keeps the first event and half of those before the first finish, then
 * sends {"error": ...} and nothing more. */

static rg_int_t
rg_mock_chat_stream(rg_mock_conv_t *c, json_t *completion,
    rg_mock_reply_t *r)
{
    char               id[48];
    size_t             i, n, keep, first_finish;
    json_t            *items, *chunk, *v, *usage, *err;
    rg_int_t           rc;
    const char        *s, *model;
    rg_mock_stream_t  *st;

    rc = RG_ERROR;
    chunk = NULL;
    items = json_array();

    st = rg_mock_stream_new();
    if (items == NULL || st == NULL) {
        goto done;
    }

    first_finish = 0;

    json_array_foreach(json_object_get(completion, "choices"), i, v) {
        if (rg_mock_chat_choice(items, v, i) != RG_OK) {
            goto done;
        }

        if (i == 0) {
            first_finish = json_array_size(items) - 1;
        }
    }

    /* what every chunk carries; "choices" and "usage" change */

    snprintf(id, sizeof(id), "chatcmpl-%" PRIu64, c->n);
    s = json_string_value(json_object_get(completion, "id"));
    model = json_string_value(json_object_get(completion, "model"));
    v = json_object_get(completion, "created");

    chunk = json_pack("{s:s, s:s, s:I, s:s}",
                      "id", s ? s : id,
                      "object", "chat.completion.chunk",
                      "created", json_is_integer(v) ? json_integer_value(v)
                                                    : (json_int_t) time(NULL),
                      "model", model ? model : c->model);
    if (chunk == NULL) {
        goto done;
    }

    v = json_object_get(completion, "system_fingerprint");
    if (v != NULL && json_object_set(chunk, "system_fingerprint", v) != 0) {
        goto done;
    }

    n = json_array_size(items);
    keep = c->stream_error ? 1 + first_finish / 2 : n;
    keep = keep < n ? keep : n;

    for (i = 0; i < keep; i++) {
        if (json_object_set_new(chunk, "choices",
                                json_pack("[O]", json_array_get(items, i)))
            != 0
            || (c->include_usage
                && json_object_set_new(chunk, "usage", json_null()) != 0)
            || rg_mock_stream_event(st, NULL, chunk) != RG_OK)
        {
            goto done;
        }
    }

    if (c->stream_error != NULL) {
        err = json_pack("{s:{s:s, s:s}}", "error",
                        "message", c->stream_error,
                        "type", c->stream_error_type ? c->stream_error_type
                                                     : "server_error");
        if (err == NULL || rg_mock_stream_event(st, NULL, err) != RG_OK) {
            json_decref(err);
            goto done;
        }

        json_decref(err);

    } else {
        if (c->include_usage) {
            usage = json_object_get(completion, "usage");
            usage = usage ? json_incref(usage)
                          : rg_mock_tokens(c, json_object_get(json_array_get(
                                json_object_get(completion, "choices"), 0),
                                "message"));

            if (json_object_set_new(chunk, "choices", json_array()) != 0
                || json_object_set_new(chunk, "usage", usage) != 0
                || rg_mock_stream_event(st, NULL, chunk) != RG_OK)
            {
                goto done;
            }
        }

        if (!rg_mock.conf.stream_no_done
            && rg_mock_stream_event(st, NULL, NULL) != RG_OK)
        {
            goto done;
        }
    }

    rc = rg_mock_stream_done(st, c, r);
    st = NULL;

done:

    rg_mock_stream_free(st);
    json_decref(chunk);
    json_decref(items);

    return rc;
}


/* A scripted "body" streams when it is a chat.completion: a non-empty
 * "choices" array of objects with a "message" object. */

static rg_int_t
rg_mock_chat_stream_body(rg_mock_conv_t *c, json_t *body, rg_mock_reply_t *r)
{
    size_t   i;
    json_t  *choices, *choice;

    choices = json_object_get(body, "choices");
    if (json_array_size(choices) == 0) {
        return RG_DECLINED;
    }

    json_array_foreach(choices, i, choice) {
        if (!json_is_object(json_object_get(choice, "message"))) {
            return RG_DECLINED;
        }
    }

    return rg_mock_chat_stream(c, body, r);
}


/* The OpenAI-style error body of an injected (or scripted) status. */

static rg_int_t
rg_mock_chat_status(rg_mock_conv_t *c, int status, int fault,
    struct evbuffer *out, struct evkeyvalq *headers)
{
    char    message[320];
    size_t  len;

    (void) headers;

    if (fault == RG_MOCK_FAULT_OVERLOAD) {
        return rg_mock_error_body(out, "The server is overloaded or not "
                                  "ready yet.", "server_error", NULL, NULL);
    }

    if (fault == RG_MOCK_FAULT_TOO_LONG) {
        return rg_mock_error_body(out, "This model's maximum context length "
                                  "is 128000 tokens. However, your messages "
                                  "resulted in 210000 tokens. Please reduce "
                                  "the length of the messages.",
                                  "invalid_request_error", "messages",
                                  "context_length_exceeded");
    }

    switch (status) {

    case 429:
        return rg_mock_error_body(out, "Rate limit reached for requests",
                                  "requests", NULL, "rate_limit_exceeded");

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
rg_mock_chat_error(rg_mock_conv_t *c, const char *message,
    struct evbuffer *out)
{
    (void) c;

    return rg_mock_error_body(out, message, "server_error", NULL, NULL);
}


static rg_int_t
rg_mock_chat_parse(rg_mock_conv_t *c, rg_mock_err_t *err)
{
    if (rg_mock_chat_validate(c->req, err) != RG_OK) {
        return RG_ERROR;
    }

    c->root = json_incref(c->req);

    return RG_OK;
}


static rg_int_t
rg_mock_chat_reject(rg_mock_conv_t *c, rg_mock_err_t *err,
    struct evbuffer *out)
{
    (void) c;

    return rg_mock_error_body(out, err->message, "invalid_request_error",
                              err->param[0] ? err->param : NULL, NULL);
}


const rg_mock_format_t  rg_mock_chat_format = {
    "chat",
    RG_MOCK_FORMAT_CHAT,
    503,
    NULL,
    "{\"id\":\"chatcmpl-bad\",\"choices\":[{\"message\":",
    rg_mock_chat_parse,
    rg_mock_chat_reject,
    rg_mock_chat_answer,
    rg_mock_chat_stream_body,
    rg_mock_chat_status,
    rg_mock_chat_error
};
