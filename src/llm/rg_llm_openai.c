/* rg_llm_openai.c: the OpenAI Chat Completions wire format. Reads one
 * response body (a completion or an error) into an rg_llm_response_t,
 * accepting the variants real providers send (shared/fixtures/providers/
 * INDEX.md), classifies errors, and builds the pieces of a request body.
 * All JSON goes through jansson; nothing of jansson outlives a call, what
 * is returned is copied into the caller's pool. No I/O, no headers, no
 * retries: the transport and the agent own those. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json_write.h>
#include <rg_llm_conf.h>
#include <rg_llm_openai.h>
#include <rg_llm_json.h>
#include <rg_llm_classify.h>
#include <rg_json.h>
#include <rg_secret.h>

#include <ctype.h>
#include <strings.h>
#include <jansson.h>


static rg_int_t rg_llm_openai_prefix_llm(rg_buf_t *out, const char *model,
    double temperature, const char *tools_json, size_t tools_len,
    rg_uint_t stream, const rg_llm_conf_t *llm);


/* Reads the provider's words from an error body: {"error":{...}},
 * {"error":"..."}, {"message":...} or {"detail":...}, Gemini's
 * [{"error":{...}}] and its details, and classifies it (rg_llm_classify).
 * A 2xx http_status: an error sent after it, whose own numeric code or
 * status_code, if any, is its status. */
rg_int_t
rg_llm_openai_error(rg_pool_t *pool, json_t *root, int http_status,
    const char *body, size_t len, const rg_llm_hints_t *hints,
    rg_llm_response_t *r)
{
    json_t          *e, *v, *where;
    rg_llm_error_t   err;

    memset(&err, 0, sizeof(err));

    if (json_is_array(root)) {
        root = json_array_get(root, 0);
    }

    e = json_object_get(root, "error");
    where = json_is_object(e) ? e : root;

    if (json_is_string(e)) {
        if (rg_llm_json_get(pool, &r->error, e) != RG_OK) {
            return RG_ERROR;
        }
    }

    if (r->error.len == 0) {
        v = json_object_get(where, "message");
        if (v == NULL || json_is_null(v)) {
            v = json_object_get(where, "detail");
        }

        if (rg_llm_json_text(pool, &r->error, v) != RG_OK) {
            return RG_ERROR;
        }
    }

    if (r->error.len == 0 && where != root) {
        v = json_object_get(root, "message");
        if (v == NULL || json_is_null(v)) {
            v = json_object_get(root, "detail");
        }

        if (rg_llm_json_text(pool, &r->error, v) != RG_OK) {
            return RG_ERROR;
        }
    }

    v = json_object_get(where, "code");
    if (json_is_integer(v)) {
        err.embedded = json_integer_value(v);
    }

    if (err.embedded == 0) {
        v = json_object_get(where, "status_code");    /* Groq, streamed */
        if (json_is_integer(v)) {
            err.embedded = json_integer_value(v);
        }
    }

    if (rg_llm_json_get(pool, &r->error_type,
                        json_object_get(where, "type")) != RG_OK
        || rg_llm_json_code(pool, &r->error_code,
                            json_object_get(where, "code")) != RG_OK
        || rg_llm_json_get(pool, &r->error_param,
                           json_object_get(where, "param")) != RG_OK)
    {
        return RG_ERROR;
    }

    if (r->error_type.len == 0) {
        v = json_object_get(where, "status");    /* Gemini: "NOT_FOUND" */

        if (rg_llm_json_get(pool, &r->error_type, v) != RG_OK) {
            return RG_ERROR;
        }
    }

    rg_llm_json_details(json_object_get(where, "details"), &err);

    if (r->error.len == 0
        && rg_llm_json_raw_error(pool, http_status, body, len, r) != RG_OK)
    {
        return RG_ERROR;
    }

    err.http_status = http_status;
    err.hints = hints;
    err.type = &r->error_type;
    err.code = &r->error_code;
    err.message = &r->error;

    r->status = rg_llm_classify(&err, r);

    return RG_OK;
}


/* choices[i] whose "index" is 0, else the first one */
static json_t *
rg_llm_openai_choice(json_t *choices)
{
    size_t   i;
    json_t  *c, *index;

    json_array_foreach(choices, i, c) {
        index = json_object_get(c, "index");

        if (json_is_integer(index) && json_integer_value(index) == 0) {
            return c;
        }
    }

    return json_array_get(choices, 0);
}




/* a "thinking" part: a string, or parts with a "text" (Magistral) */
static rg_int_t
rg_llm_openai_thinking(rg_buf_t *b, json_t *v)
{
    size_t   i;
    json_t  *part;

    if (!json_is_array(v)) {
        return rg_llm_json_append(b, v);
    }

    json_array_foreach(v, i, part) {
        if (json_is_string(part)) {
            if (rg_llm_json_append(b, part) != RG_OK) {
                return RG_ERROR;
            }

            continue;
        }

        if (rg_llm_json_append(b, json_object_get(part, "text")) != RG_OK) {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* content given as an array of parts: text parts are joined, thinking
 * parts go to the reasoning, other parts (images, audio) are dropped */
static rg_int_t
rg_llm_openai_parts(json_t *parts, rg_buf_t *text, rg_buf_t *reasoning)
{
    size_t       i;
    json_t      *part;
    const char  *type;

    json_array_foreach(parts, i, part) {
        if (json_is_string(part)) {
            if (rg_llm_json_append(text, part) != RG_OK) {
                return RG_ERROR;
            }

            continue;
        }

        type = json_string_value(json_object_get(part, "type"));

        if (type != NULL
            && (strcmp(type, "thinking") == 0
                || strcmp(type, "reasoning") == 0))
        {
            if (rg_llm_openai_thinking(reasoning,
                                       json_object_get(part, type)) != RG_OK
                || rg_llm_json_append(reasoning,
                                        json_object_get(part, "text"))
                   != RG_OK)
            {
                return RG_ERROR;
            }

            continue;
        }

        if (rg_llm_json_append(text, json_object_get(part, "text"))
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* content, reasoning and refusal of the message */
static rg_int_t
rg_llm_openai_texts(rg_pool_t *pool, json_t *msg, rg_llm_response_t *r)
{
    json_t    *content, *v;
    rg_int_t   rc;
    rg_buf_t   text, reasoning;

    memset(&text, 0, sizeof(rg_buf_t));
    memset(&reasoning, 0, sizeof(rg_buf_t));

    rc = RG_ERROR;

    v = json_object_get(msg, "reasoning_content");
    if (!json_is_string(v)) {
        v = json_object_get(msg, "reasoning");
    }

    if (rg_llm_json_append(&reasoning, v) != RG_OK) {
        goto done;
    }

    content = json_object_get(msg, "content");

    if (json_is_array(content)) {
        if (rg_llm_openai_parts(content, &text, &reasoning) != RG_OK) {
            goto done;
        }

    } else if (rg_llm_json_append(&text, content) != RG_OK) {
        goto done;
    }

    if (rg_llm_json_set(pool, &r->content, text.data, text.len)
        != RG_OK
        || rg_llm_json_set(pool, &r->reasoning, reasoning.data,
                                 reasoning.len) != RG_OK
        || rg_llm_json_get(pool, &r->refusal,
                                 json_object_get(msg, "refusal")) != RG_OK)
    {
        goto done;
    }

    r->has_content = (r->content.len > 0);
    rc = RG_OK;

done:

    rg_buf_free(&text);
    rg_buf_free(&reasoning);

    return rc;
}




/* one call; fn is the "function" object (or the legacy function_call) */
static rg_int_t
rg_llm_openai_call(rg_pool_t *pool, json_t *id, json_t *fn,
    rg_llm_response_t *r)
{
    rg_llm_tool_call_t  *call;

    call = &r->calls[r->ncalls];

    rg_llm_json_empty(&call->id);
    rg_llm_json_empty(&call->name);

    if (rg_llm_json_get(pool, &call->id, id) != RG_OK
        || rg_llm_json_get(pool, &call->name,
                                 json_object_get(fn, "name")) != RG_OK
        || rg_llm_json_arguments(pool, &call->arguments,
                                   json_object_get(fn, "arguments")) != RG_OK)
    {
        return RG_ERROR;
    }

    r->ncalls++;

    return RG_OK;
}




static rg_int_t
rg_llm_openai_calls(rg_pool_t *pool, json_t *msg, const char *id_prefix,
    rg_uint_t max_calls, rg_llm_response_t *r)
{
    size_t   i, n, total, keep;
    json_t  *calls, *call, *fn;

    if (id_prefix == NULL) {
        id_prefix = "call";
    }

    calls = json_object_get(msg, "tool_calls");
    n = json_array_size(calls);

    if (n == 0) {
        /* the legacy form: one "function_call" */
        fn = json_object_get(msg, "function_call");
        if (!json_is_object(fn)) {
            return RG_OK;
        }

        r->calls = rg_pcalloc(pool, sizeof(rg_llm_tool_call_t));
        if (r->calls == NULL) {
            return RG_ERROR;
        }

        if (rg_llm_openai_call(pool, NULL, fn, r) != RG_OK) {
            return RG_ERROR;
        }

        return rg_llm_json_ids(pool, id_prefix, r);
    }

    total = 0;

    json_array_foreach(calls, i, call) {
        total += json_is_object(call);
    }

    if (rg_llm_json_calls(pool, total, max_calls, &keep, r) != RG_OK) {
        return RG_ERROR;
    }

    if (keep == 0) {
        return RG_OK;
    }

    json_array_foreach(calls, i, call) {
        if (r->ncalls == keep) {
            break;
        }

        if (!json_is_object(call)) {
            continue;
        }

        fn = json_object_get(call, "function");
        if (!json_is_object(fn)) {
            fn = call;      /* name and arguments beside the id */
        }

        if (rg_llm_openai_call(pool, json_object_get(call, "id"), fn, r)
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return rg_llm_json_ids(pool, id_prefix, r);
}


/* usage, wherever the provider put it, cached prompt tokens included
 * (OpenAI's prompt_tokens_details, DeepSeek's prompt_cache_hit_tokens,
 * a top-level cached_tokens) */
void
rg_llm_openai_usage(json_t *root, rg_llm_response_t *r)
{
    int      found;
    json_t  *usage, *d;

    usage = json_object_get(root, "usage");
    if (!json_is_object(usage)) {
        usage = json_object_get(json_object_get(root, "x_groq"), "usage");
    }

    if (!json_is_object(usage)) {
        return;
    }

    r->prompt_tokens = rg_llm_json_int(json_object_get(usage,
                                                       "prompt_tokens"),
                                       &found);
    r->completion_tokens =
        rg_llm_json_int(json_object_get(usage, "completion_tokens"), &found);
    r->total_tokens = rg_llm_json_int(json_object_get(usage, "total_tokens"),
                                      &found);

    if (!found) {
        r->total_tokens = r->prompt_tokens + r->completion_tokens;
    }

    d = json_object_get(usage, "prompt_tokens_details");
    r->cached_tokens = rg_llm_json_int(json_object_get(d, "cached_tokens"),
                                       &found);

    if (!found) {
        r->cached_tokens =
            rg_llm_json_int(json_object_get(usage, "prompt_cache_hit_tokens"),
                            &found);
    }

    if (!found) {
        r->cached_tokens = rg_llm_json_int(json_object_get(usage,
                                                           "cached_tokens"),
                                           &found);
    }

    d = json_object_get(usage, "completion_tokens_details");
    r->reasoning_tokens =
        rg_llm_json_int(json_object_get(d, "reasoning_tokens"), &found);

    if (r->cached_tokens < 0 || r->cached_tokens > r->prompt_tokens) {
        r->cached_tokens = 0;
    }
}


/* The assistant message as it goes back into the conversation, in the
 * session's form: the text json_dumps(JSON_COMPACT) gives for {role,
 * content, tool_calls: [{id, type, function: {name, arguments}}]}, and,
 * when the provider sent what must go back byte for byte, x_reagent:
 * {FORMAT: ["<an item's JSON text>", …]} last. Written without building the object
 * (jansson's dump of a container costs its loop check). */
rg_int_t
rg_llm_message_build(rg_pool_t *pool, const char *format,
    rg_llm_response_t *r)
{
    rg_int_t             rc;
    rg_buf_t             b;
    rg_uint_t            i;
    rg_llm_tool_call_t  *c;

    memset(&b, 0, sizeof(rg_buf_t));

    rc = rg_llm_json_lit(&b, "{\"role\":\"assistant\",\"content\":");

    if (r->has_content) {
        rc |= rg_llm_json_put(&b, r->content.data, r->content.len);

    } else {
        /* null beside tool calls; "" alone, as a message needs one */
        if (r->ncalls) {
            rc |= rg_llm_json_lit(&b, "null");
        } else {
            rc |= rg_llm_json_lit(&b, "\"\"");
        }
    }

    if (r->ncalls) {
        rc |= rg_llm_json_lit(&b, ",\"tool_calls\":[");

        for (i = 0; rc == RG_OK && i < r->ncalls; i++) {
            c = &r->calls[i];

            if (i) {
                rc |= rg_llm_json_lit(&b, ",");
            }

            rc |= rg_llm_json_lit(&b, "{\"id\":");
            rc |= rg_llm_json_put(&b, c->id.data, c->id.len);
            rc |= rg_llm_json_lit(&b, ",\"type\":\"function\","
                                      "\"function\":{\"name\":");
            rc |= rg_llm_json_put(&b, c->name.data, c->name.len);
            rc |= rg_llm_json_lit(&b, ",\"arguments\":");
            rc |= rg_llm_json_put(&b, c->arguments.data, c->arguments.len);
            rc |= rg_llm_json_lit(&b, "}}");
        }

        rc |= rg_llm_json_lit(&b, "]");
    }

    /* opaque is our own JSON text: an array of each item's text */
    if (r->opaque.len && format != NULL) {
        rc |= rg_llm_json_lit(&b, ",\"" RG_LLM_EXT "\":{");
        rc |= rg_llm_json_put(&b, format, strlen(format));
        rc |= rg_llm_json_lit(&b, ":");
        rc |= rg_buf_append(&b, r->opaque.data, r->opaque.len);
        rc |= rg_llm_json_lit(&b, "}");
    }

    rc |= rg_llm_json_lit(&b, "}");

    if (rc == RG_OK) {
        rc = rg_llm_json_set(pool, &r->message, b.data, b.len);
    }

    rg_buf_free(&b);

    return rc == RG_OK ? RG_OK : RG_ERROR;
}


/* a 2xx: a completion, or an error a proxy sent after its 200 */
static rg_int_t
rg_llm_openai_completion(rg_pool_t *pool, json_t *root,
    const rg_llm_answer_t *a, rg_llm_response_t *r)
{
    json_t  *e, *choices, *choice, *msg;

    rg_llm_openai_usage(root, r);

    e = json_object_get(root, "error");

    if ((json_is_object(e) && json_object_size(e) > 0)
        || (json_is_string(e) && json_string_length(e) > 0))
    {
        return rg_llm_openai_error(pool, root, a->http_status, a->body,
                                   a->len, a->hints,
                                   r);
    }

    choices = json_object_get(root, "choices");

    if (json_array_size(choices) == 0) {
        return rg_llm_json_bad(pool, r, "response has no choices", NULL);
    }

    choice = rg_llm_openai_choice(choices);
    msg = json_object_get(choice, "message");

    if (!json_is_object(msg)) {
        return rg_llm_json_bad(pool, r, "response has no message", NULL);
    }

    if (rg_llm_json_get(pool, &r->finish_reason,
                        json_object_get(choice, "finish_reason")) != RG_OK
        || rg_llm_openai_texts(pool, msg, r) != RG_OK
        || rg_llm_openai_calls(pool, msg, a->id_prefix, a->max_calls, r)
           != RG_OK)
    {
        return RG_ERROR;
    }

    r->status = RG_LLM_OK;

    return rg_llm_answer_end(pool, NULL, r);
}


rg_int_t
rg_llm_openai_read(rg_pool_t *pool, const rg_llm_answer_t *a,
    rg_llm_response_t *r)
{
    json_t        *root;
    rg_int_t       rc;
    json_error_t   err;

    rg_llm_response_init(r, a->http_status);

    root = rg_llm_json_load(a->body, a->len, &err);

    if (a->http_status < 200 || a->http_status > 299) {
        rc = rg_llm_openai_error(pool, root, a->http_status, a->body, a->len,
                                 a->hints, r);

    } else if (root == NULL) {
        rc = rg_llm_json_bad(pool, r, "malformed response from the model: ",
                             err.text);

    } else if (!json_is_object(root)) {
        rc = rg_llm_json_bad(pool, r, "response has no choices", NULL);

    } else {
        rc = rg_llm_openai_completion(pool, root, a, r);
    }

    json_decref(root);

    return rc;
}


rg_int_t
rg_llm_openai_parse(rg_pool_t *pool, int http_status, const char *body,
    size_t len, const char *id_prefix, rg_uint_t max_calls,
    rg_llm_response_t *r)
{
    rg_llm_answer_t  a;

    memset(&a, 0, sizeof(a));
    a.http_status = http_status;
    a.body = body ? body : "";
    a.len = body ? len : 0;
    a.id_prefix = id_prefix;
    a.max_calls = max_calls;

    return rg_llm_openai_read(pool, &a, r);
}


rg_llm_status_e
rg_llm_openai_classify(int http_status, const rg_str_t *code,
    const rg_str_t *message)
{
    rg_llm_error_t     e;
    rg_llm_response_t  r;

    memset(&e, 0, sizeof(e));
    memset(&r, 0, sizeof(r));

    if (http_status >= 200 && http_status <= 299) {
        return RG_LLM_OK;
    }

    e.http_status = http_status;
    e.code = code;
    e.message = message;

    return rg_llm_classify(&e, &r);
}


/* the text json_dumps(JSON_COMPACT) gives for {role, content}, written
 * without building the object */
rg_int_t
rg_llm_openai_msg(rg_buf_t *out, const char *role, const char *content,
    size_t len)
{
    size_t    at;
    rg_int_t  rc;

    at = out->len;

    rc = rg_llm_json_lit(out, "{\"role\":");
    rc |= rg_llm_json_put(out, role, strlen(role));
    rc |= rg_llm_json_lit(out, ",\"content\":");

    if (content) {
        rc |= rg_llm_json_put(out, content, len);
    } else {
        rc |= rg_llm_json_lit(out, "null");
    }

    rc |= rg_llm_json_lit(out, "}");

    return rg_llm_json_ended(out, at, rc);
}


/* the text json_dumps(JSON_COMPACT) gives for {role, tool_call_id,
 * content}, written without building the object */
rg_int_t
rg_llm_openai_tool_msg(rg_buf_t *out, const char *tool_call_id,
    const char *content, size_t len)
{
    size_t    at;
    rg_int_t  rc;

    at = out->len;

    rc = rg_llm_json_lit(out, "{\"role\":\"tool\",\"tool_call_id\":");
    rc |= rg_llm_json_put(out, tool_call_id, strlen(tool_call_id));
    rc |= rg_llm_json_lit(out, ",\"content\":");
    rc |= rg_llm_json_put(out, content, content ? len : 0);
    rc |= rg_llm_json_lit(out, "}");

    return rg_llm_json_ended(out, at, rc);
}


rg_int_t
rg_llm_openai_prefix(rg_buf_t *out, const char *model, double temperature,
    const char *tools_json, size_t tools_len)
{
    return rg_llm_openai_prefix_ex(out, model, temperature, tools_json,
                                   tools_len, 0);
}


rg_int_t
rg_llm_openai_prefix_ex(rg_buf_t *out, const char *model, double temperature,
    const char *tools_json, size_t tools_len, rg_uint_t stream)
{
    return rg_llm_openai_prefix_llm(out, model, temperature, tools_json,
                                    tools_len, stream, NULL);
}


/* the prefix, with what the llm block adds (NULL: nothing) */
static rg_int_t
rg_llm_openai_prefix_llm(rg_buf_t *out, const char *model,
    double temperature, const char *tools_json, size_t tools_len,
    rg_uint_t stream, const rg_llm_conf_t *llm)
{
    int            err;
    json_t        *req, *tools, *t;
    size_t         len;
    json_error_t   jerr;

    tools = NULL;

    if (tools_json != NULL) {
        tools = json_loadb(tools_json, tools_len, 0, &jerr);

        if (!json_is_array(tools)) {
            json_decref(tools);
            return RG_ERROR;
        }

        if (json_array_size(tools) == 0) {
            json_decref(tools);
            tools = NULL;
        }
    }

    t = rg_llm_json_number(temperature);

    req = json_object();
    if (req == NULL) {
        json_decref(tools);
        json_decref(t);
        return RG_ERROR;
    }

    err = json_object_set_new(req, "model", json_string(model));
    err |= json_object_set_new(req, "temperature", t);

    /* a reasoning model takes max_completion_tokens, not max_tokens */
    if (llm && llm->max_output_tokens > 0) {
        err |= json_object_set_new(req, llm->reasoning_effort.len
                                        ? "max_completion_tokens"
                                        : "max_tokens",
                                   json_integer(llm->max_output_tokens));
    }

    if (llm && llm->reasoning_effort.len) {
        err |= json_object_set_new(req, "reasoning_effort",
                                   json_string(llm->reasoning_effort.data));
    }

    if (tools != NULL) {
        err |= json_object_set_new(req, "tool_choice", json_string("auto"));
        err |= json_object_set_new(req, "tools", tools);
    }

    if (stream) {
        /* usage arrives in a last chunk only when asked for */
        err |= json_object_set_new(req, "stream", json_true());
        err |= json_object_set_new(req, "stream_options",
                                   json_pack("{s:b}", "include_usage", 1));
    }

    len = out->len;

    if (rg_llm_json_dump(out, req, err) != RG_OK) {
        return RG_ERROR;
    }

    /* reopen the object for the messages the caller appends */
    out->len--;

    if (rg_buf_append_lit(out, ",\"messages\":[") != RG_OK) {
        out->len = len;
        out->data[len] = '\0';
        return RG_ERROR;
    }

    return RG_OK;
}


rg_int_t
rg_llm_openai_tool_def(rg_buf_t *out, const char *name,
    const char *description, const char *parameters)
{
    int            err;
    json_t        *def, *fn, *params;
    json_error_t   jerr;

    params = NULL;

    if (parameters != NULL) {
        params = json_loads(parameters, 0, &jerr);

        if (!json_is_object(params)) {
            json_decref(params);
            return RG_ERROR;
        }
    }

    def = json_object();
    fn = json_object();

    err = json_object_set_new(fn, "name", json_string(name));

    if (description != NULL) {
        err |= json_object_set_new(fn, "description",
                                   rg_llm_json_string(description,
                                                        strlen(description)));
    }

    if (params != NULL) {
        err |= json_object_set_new(fn, "parameters", params);
    }

    err |= json_object_set_new(def, "type", json_string("function"));
    err |= json_object_set_new(def, "function", fn);

    return rg_llm_json_dump(out, def, err);
}


rg_int_t
rg_llm_openai_edit(const char *msg, size_t len, size_t min,
    rg_llm_openai_edit_pt edit, void *data, char **out)
{
    json_t    *j, *content;
    rg_int_t   rc;
    rg_buf_t   b;

    *out = NULL;

    j = json_loadb(msg, len, JSON_ALLOW_NUL, NULL);
    if (j == NULL) {
        return RG_ERROR;
    }

    content = json_object_get(j, "content");
    if (!json_is_string(content) || json_string_length(content) <= min) {
        json_decref(j);
        return RG_DECLINED;
    }

    memset(&b, 0, sizeof(b));

    rc = edit(json_string_value(content), json_string_length(content), &b,
              data);

    if (rc == RG_OK
        && json_object_set_new(j, "content", json_stringn(b.data, b.len))
           != 0)
    {
        rc = RG_ERROR;
    }

    rg_buf_free(&b);

    if (rc == RG_OK) {
        *out = json_dumps(j, JSON_COMPACT);
        rc = *out ? RG_OK : RG_ERROR;
    }

    json_decref(j);

    return rc;
}


/* the codec's row (rg_llm_codec.c) */

rg_int_t
rg_llm_openai_tool(rg_buf_t *out, const rg_llm_tool_t *t)
{
    return rg_llm_openai_tool_def(out, t->name,
                                  t->description ? t->description : "",
                                  t->parameters);
}


/* the tools' texts joined into one JSON array, in *tools (malloc'ed) */
rg_int_t
rg_llm_tools_join(const rg_llm_prefix_t *p, rg_buf_t *tools)
{
    rg_int_t   rc;
    rg_uint_t  i;

    memset(tools, 0, sizeof(rg_buf_t));

    rc = rg_buf_append_lit(tools, "[");

    for (i = 0; rc == RG_OK && i < p->ntools; i++) {
        if (i) {
            rc = rg_buf_append_lit(tools, ",");
        }

        if (rc == RG_OK) {
            rc = rg_buf_append(tools, p->tools[i].data, p->tools[i].len);
        }
    }

    if (rc == RG_OK) {
        rc = rg_buf_append_lit(tools, "]");
    }

    return rc;
}


rg_int_t
rg_llm_openai_prefix_p(rg_buf_t *out, const rg_llm_prefix_t *p)
{
    rg_int_t  rc;
    rg_buf_t  tools;

    if (p->ntools == 0) {
        return rg_llm_openai_prefix_llm(out, p->model, p->temperature, NULL,
                                        0, p->stream, p->llm);
    }

    rc = rg_llm_tools_join(p, &tools);

    if (rc == RG_OK) {
        rc = rg_llm_openai_prefix_llm(out, p->model, p->temperature,
                                      tools.data, tools.len, p->stream,
                                      p->llm);
    }

    rg_buf_free(&tools);

    return rc;
}


/* A message goes as it is, unless it keeps what Chat Completions has no
 * field for (x_reagent, always its last member): then without it. Only
 * a message with that key is parsed; a quote inside a string is always
 * escaped, so the key's bytes cannot be found in a text by chance. */
rg_int_t
rg_llm_openai_wire(rg_buf_t *out, uint8_t role, const char *msg, size_t len)
{
    json_t  *j;

    if (memmem(msg, len, "\"" RG_LLM_EXT "\":", sizeof(RG_LLM_EXT) + 2)
        == NULL)
    {
        return RG_DECLINED;
    }

    j = json_loadb(msg, len, JSON_ALLOW_NUL, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        return RG_DECLINED;
    }

    json_object_del(j, RG_LLM_EXT);

    return rg_llm_json_dump(out, j, 0);
}


rg_int_t
rg_llm_openai_body_add(rg_llm_body_t *bd, uint8_t role, const char *piece,
    size_t len)
{
    if (len == 0) {
        return RG_OK;
    }

    if (bd->open && rg_buf_append_lit(bd->b, ",") != RG_OK) {
        return RG_ERROR;
    }

    bd->open = 1;

    return rg_buf_append(bd->b, piece, len);
}


rg_int_t
rg_llm_openai_body_end(rg_llm_body_t *bd)
{
    return rg_buf_append_lit(bd->b, "]}");
}
