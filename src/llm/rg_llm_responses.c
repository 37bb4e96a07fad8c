/* rg_llm_responses.c: the OpenAI Responses wire format (POST
 * /v1/responses), used statelessly: store false and the whole list of
 * items every turn, so that a resumed or replayed session sends what an
 * uninterrupted one would. Requests: the session's messages become
 * message, function_call and function_call_output items; a reasoning
 * item (with encrypted_content, asked for with reasoning_effort) goes
 * back verbatim before the calls it came with. Answers: message,
 * function_call and reasoning items; status incomplete says why
 * (max_output_tokens, content_filter) as the finish reason; failed is an
 * error classified like any other. Every item of an answer that had
 * something other than text and calls is kept in the message
 * (x_reagent.responses: each item's JSON text, in order). No I/O. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json.h>
#include <rg_llm.h>
#include <rg_llm_conf.h>
#include <rg_llm_json.h>
#include <rg_llm_openai.h>
#include <rg_llm_responses.h>

#include <jansson.h>


rg_int_t
rg_llm_responses_tool(rg_buf_t *out, const rg_llm_tool_t *t)
{
    return rg_llm_tool_json(out, t, "function", "parameters");
}


rg_int_t
rg_llm_responses_prefix(rg_buf_t *out, const rg_llm_prefix_t *p)
{
    int                   err;
    json_t               *req;
    size_t                at;
    rg_int_t              rc;
    rg_buf_t              tools;
    const rg_llm_conf_t  *llm;

    llm = p->llm;

    req = json_object();
    if (req == NULL) {
        return RG_ERROR;
    }

    /* stateless: the provider keeps nothing, the session is the record */
    err = json_object_set_new(req, "model", json_string(p->model));
    err |= json_object_set_new(req, "store", json_false());

    if (llm && llm->reasoning_effort.len) {
        err |= json_object_set_new(req, "reasoning",
                                   json_pack("{s:s}", "effort",
                                             llm->reasoning_effort.data));
        /* what a reasoning item needs to go back without a store */
        err |= json_object_set_new(req, "include",
                                   json_pack("[s]",
                                             "reasoning.encrypted_content"));

    } else if (p->temperature_set) {
        /* reasoning models refuse a temperature */
        err |= json_object_set_new(req, "temperature",
                                   rg_llm_json_number(p->temperature));
    }

    if (llm && llm->max_output_tokens > 0) {
        err |= json_object_set_new(req, "max_output_tokens",
                                   json_integer(llm->max_output_tokens));
    }

    at = out->len;

    if (rg_llm_json_open(out, req, err, p->stream) != RG_OK) {
        return RG_ERROR;
    }

    rc = RG_OK;

    if (p->ntools) {
        rc = rg_llm_tools_join(p, &tools);

        if (rc == RG_OK) {
            rc = rg_buf_append_lit(out, ",\"tool_choice\":\"auto\","
                                        "\"tools\":");
            rc |= rg_buf_append(out, tools.data, tools.len);
        }

        rg_buf_free(&tools);
    }

    if (rc == RG_OK) {
        rc = rg_buf_append_lit(out, ",\"input\":[");
    }

    return rg_llm_json_ended(out, at, rc);
}


/* the session's tool call as a function_call item */
static rg_int_t
rg_llm_responses_call(rg_buf_t *out, json_t *call)
{
    json_t  *fn, *item, *id, *name, *args;

    fn = json_object_get(call, "function");
    id = json_object_get(call, "id");
    name = json_object_get(fn, "name");
    args = json_object_get(fn, "arguments");

    item = json_pack("{s:s, s:s, s:s, s:s}", "type", "function_call",
                     "call_id", json_is_string(id) ? json_string_value(id)
                                                   : "",
                     "name", json_is_string(name) ? json_string_value(name)
                                                  : "",
                     "arguments", json_is_string(args)
                                  ? json_string_value(args) : "{}");

    if (out->len && rg_buf_append_lit(out, ",") != RG_OK) {
        json_decref(item);
        return RG_ERROR;
    }

    return rg_llm_json_dump(out, item, item == NULL);
}


/* the answer's text as an assistant message item */
static rg_int_t
rg_llm_responses_said(rg_buf_t *out, json_t *content)
{
    if (!json_is_string(content) || json_string_length(content) == 0) {
        return RG_OK;
    }

    if (out->len && rg_buf_append_lit(out, ",") != RG_OK) {
        return RG_ERROR;
    }

    return rg_llm_json_dump(out, json_pack("{s:s, s:s, s:O}", "type",
                                           "message", "role", "assistant",
                                           "content", content), 0);
}


/* an assistant message: the items it came with in their order; a
 * reasoning item verbatim (one without encrypted_content cannot go back
 * without a store and is left out), the text and the calls made from
 * what the session kept */
static rg_int_t
rg_llm_responses_assistant(rg_buf_t *out, json_t *msg)
{
    size_t       i, k, n;
    json_t      *calls, *kept, *v, *item, *content;
    rg_uint_t    said;
    const char  *type;

    calls = json_object_get(msg, "tool_calls");
    content = json_object_get(msg, "content");
    n = json_array_size(calls);
    kept = json_object_get(json_object_get(msg, RG_LLM_EXT), "responses");
    k = 0;
    said = 0;

    json_array_foreach(kept, i, v) {
        if (!json_is_string(v)) {
            continue;
        }

        item = json_loadb(json_string_value(v), json_string_length(v), 0,
                          NULL);
        type = json_string_value(json_object_get(item, "type"));

        if (type == NULL || strcmp(type, "message") == 0) {
            json_decref(item);

            if (!said && rg_llm_responses_said(out, content) != RG_OK) {
                return RG_ERROR;
            }

            said = 1;
            continue;
        }

        if (strcmp(type, "function_call") == 0) {
            json_decref(item);

            if (k < n
                && rg_llm_responses_call(out, json_array_get(calls, k++))
                   != RG_OK)
            {
                return RG_ERROR;
            }

            continue;
        }

        if (strcmp(type, "reasoning") == 0
            && !json_is_string(json_object_get(item, "encrypted_content")))
        {
            json_decref(item);
            continue;
        }

        json_decref(item);

        if ((out->len && rg_buf_append_lit(out, ",") != RG_OK)
            || rg_buf_append(out, json_string_value(v), json_string_length(v))
               != RG_OK)
        {
            return RG_ERROR;
        }
    }

    if (!said && rg_llm_responses_said(out, content) != RG_OK) {
        return RG_ERROR;
    }

    for ( /* void */ ; k < n; k++) {
        if (rg_llm_responses_call(out, json_array_get(calls, k)) != RG_OK) {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* a message of the session made from its text, written without a
 * jansson value: the bytes rg_llm_responses_wire() would make of it */
rg_int_t
rg_llm_responses_text(rg_buf_t *out, uint8_t role, const char *tool_id,
    const char *text, size_t len, rg_uint_t is_error)
{
    size_t    at;
    rg_int_t  rc;

    at = out->len;

    if (role == 't') {
        rc = rg_llm_json_lit(out, "{\"type\":\"function_call_output\","
                                  "\"call_id\":");
        rc |= rg_llm_json_put(out, tool_id ? tool_id : "",
                              tool_id ? strlen(tool_id) : 0);
        rc |= rg_llm_json_lit(out, ",\"output\":");

    } else if (role == 'a') {
        if (len == 0) {
            return RG_OK;
        }

        rc = rg_llm_json_lit(out, "{\"type\":\"message\",\"role\":"
                                  "\"assistant\",\"content\":");

    } else {
        rc = rg_llm_json_lit(out, "{\"type\":\"message\",\"role\":");
        rc |= (role == 's') ? rg_llm_json_lit(out, "\"system\"")
                            : rg_llm_json_lit(out, "\"user\"");
        rc |= rg_llm_json_lit(out, ",\"content\":");
    }

    rc |= rg_llm_json_put(out, text, len);
    rc |= rg_llm_json_lit(out, "}");

    return rg_llm_json_ended(out, at, rc);
}


/* a function_call item of the next request, after a comma when b holds
 * one already */
static rg_int_t
rg_llm_responses_fc_wire(rg_buf_t *b, rg_llm_tool_call_t *c)
{
    rg_int_t  rc;

    rc = b->len ? rg_llm_json_lit(b, ",") : RG_OK;
    rc |= rg_llm_json_lit(b, "{\"type\":\"function_call\",\"call_id\":");
    rc |= rg_llm_json_put(b, c->id.data, c->id.len);
    rc |= rg_llm_json_lit(b, ",\"name\":");
    rc |= rg_llm_json_put(b, c->name.data, c->name.len);
    rc |= rg_llm_json_lit(b, ",\"arguments\":");
    rc |= rg_llm_json_put(b, c->arguments.data, c->arguments.len);
    rc |= rg_llm_json_lit(b, "}");

    return rc;
}


/* the answer's text as the assistant's message item */
static rg_int_t
rg_llm_responses_text_wire(rg_buf_t *b, rg_llm_response_t *r)
{
    rg_int_t  rc;

    rc = b->len ? rg_llm_json_lit(b, ",") : RG_OK;
    rc |= rg_llm_responses_text(b, 'a', NULL, r->content.data,
                                r->content.len, 0);

    return rc;
}


/* the answer's piece of the next request, while it is at hand: what
 * rg_llm_responses_wire() would make of its message (output: the
 * answer's items; kept: their texts, NULL when only messages and
 * calls) */
static rg_int_t
rg_llm_responses_answer_wire(rg_pool_t *pool, json_t *output, json_t *kept,
    rg_llm_response_t *r)
{
    size_t       i, j;
    json_t      *item, *v;
    rg_int_t     rc;
    rg_buf_t     b;
    rg_uint_t    k, said;
    const char  *type;

    memset(&b, 0, sizeof(b));
    rc = RG_OK;
    j = 0;
    k = 0;
    said = 0;

    json_array_foreach(output, i, item) {
        if (rc != RG_OK) {
            break;
        }

        if (!json_is_object(item)) {
            continue;
        }

        type = json_string_value(json_object_get(item, "type"));
        v = json_array_get(kept, j++);

        if (type == NULL || strcmp(type, "message") == 0) {
            if (!said && r->content.len) {
                rc = rg_llm_responses_text_wire(&b, r);
            }

            said = 1;
            continue;
        }

        if (strcmp(type, "function_call") == 0) {
            if (k == r->ncalls) {
                continue;
            }

            rc = rg_llm_responses_fc_wire(&b, &r->calls[k++]);
            continue;
        }

        if (v == NULL
            || (strcmp(type, "reasoning") == 0
                && !json_is_string(json_object_get(item,
                                                   "encrypted_content"))))
        {
            continue;
        }

        rc = b.len ? rg_llm_json_lit(&b, ",") : RG_OK;
        rc |= rg_buf_append(&b, json_string_value(v), json_string_length(v));
    }

    if (rc == RG_OK && !said && r->content.len) {
        rc = rg_llm_responses_text_wire(&b, r);
    }

    for ( /* void */ ; rc == RG_OK && k < r->ncalls; k++) {
        rc = rg_llm_responses_fc_wire(&b, &r->calls[k]);
    }

    if (rc == RG_OK) {
        rc = rg_llm_json_set(pool, &r->wire, b.data, b.len);
        r->has_wire = (rc == RG_OK);
    }

    rg_buf_free(&b);

    return rc == RG_OK ? RG_OK : RG_ERROR;
}


rg_int_t
rg_llm_responses_wire(rg_buf_t *out, uint8_t role, const char *msg,
    size_t len)
{
    json_t    *j, *content, *id, *item;
    rg_int_t   rc;

    j = json_loadb(msg, len, JSON_ALLOW_NUL, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        return RG_ERROR;
    }

    content = json_object_get(j, "content");
    if (!json_is_string(content)) {
        content = NULL;
    }

    switch (role) {

    case 'a':
        rc = rg_llm_responses_assistant(out, j);
        break;

    case 't':
        id = json_object_get(j, "tool_call_id");

        item = json_pack("{s:s, s:s, s:o}", "type", "function_call_output",
                         "call_id", json_is_string(id)
                                    ? json_string_value(id) : "",
                         "output", content ? json_incref(content)
                                           : json_string(""));

        rc = rg_llm_json_dump(out, item, item == NULL);
        break;

    default:
        item = json_pack("{s:s, s:s, s:o}", "type", "message",
                         "role", role == 's' ? "system" : "user",
                         "content", content ? json_incref(content)
                                            : json_string(""));

        rc = rg_llm_json_dump(out, item, item == NULL);
        break;
    }

    json_decref(j);

    return rc;
}


static void
rg_llm_responses_usage(json_t *usage, rg_llm_response_t *r)
{
    int  found;

    r->prompt_tokens = rg_llm_json_int(json_object_get(usage, "input_tokens"),
                                       &found);
    r->completion_tokens =
        rg_llm_json_int(json_object_get(usage, "output_tokens"), &found);
    r->total_tokens = rg_llm_json_int(json_object_get(usage, "total_tokens"),
                                      &found);

    if (!found) {
        r->total_tokens = r->prompt_tokens + r->completion_tokens;
    }

    r->cached_tokens =
        rg_llm_json_int(json_object_get(json_object_get(usage,
                                            "input_tokens_details"),
                                        "cached_tokens"), &found);
    r->reasoning_tokens =
        rg_llm_json_int(json_object_get(json_object_get(usage,
                                            "output_tokens_details"),
                                        "reasoning_tokens"), &found);

    if (r->cached_tokens < 0 || r->cached_tokens > r->prompt_tokens) {
        r->cached_tokens = 0;
    }
}


/* the texts of a message item: output_text parts, refusal parts */
static rg_int_t
rg_llm_responses_parts(json_t *item, rg_buf_t *text, rg_buf_t *refusal)
{
    size_t       i;
    json_t      *part;
    const char  *type;

    json_array_foreach(json_object_get(item, "content"), i, part) {
        type = json_string_value(json_object_get(part, "type"));

        if (type != NULL && strcmp(type, "refusal") == 0) {
            if (rg_llm_json_append(refusal, json_object_get(part, "refusal"))
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


/* what a reasoning item shows: its summary's texts (and its content's,
 * where a provider sends the reasoning itself) */
static rg_int_t
rg_llm_responses_reasoning(json_t *item, rg_buf_t *b)
{
    size_t   i;
    json_t  *part;

    json_array_foreach(json_object_get(item, "summary"), i, part) {
        if (rg_llm_json_append(b, json_object_get(part, "text")) != RG_OK) {
            return RG_ERROR;
        }
    }

    json_array_foreach(json_object_get(item, "content"), i, part) {
        if (rg_llm_json_append(b, json_object_get(part, "text")) != RG_OK) {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* one function_call item into the next call */
static rg_int_t
rg_llm_responses_fc(rg_pool_t *pool, json_t *item, rg_llm_response_t *r)
{
    json_t              *id;
    rg_int_t             rc;
    rg_llm_tool_call_t  *c;

    c = &r->calls[r->ncalls++];
    rg_llm_json_empty(&c->id);
    rg_llm_json_empty(&c->name);

    id = json_object_get(item, "call_id");
    if (!json_is_string(id) || json_string_length(id) == 0) {
        id = json_object_get(item, "id");
    }

    rc = rg_llm_json_get(pool, &c->id, id);
    rc |= rg_llm_json_get(pool, &c->name, json_object_get(item, "name"));
    rc |= rg_llm_json_arguments(pool, &c->arguments,
                                json_object_get(item, "arguments"));

    return rc == RG_OK ? RG_OK : RG_ERROR;
}


/* an error a response carries: failed, or an error beside it */
static rg_int_t
rg_llm_responses_failed(rg_pool_t *pool, json_t *e, const rg_llm_answer_t *a,
    rg_llm_response_t *r)
{
    json_t   *wrap;
    rg_int_t  rc;

    if (!json_is_object(e) && !json_is_string(e)) {
        e = json_pack("{s:s}", "message", "the response failed without "
                      "saying why");
        wrap = json_pack("{s:o}", "error", e);

    } else {
        wrap = json_pack("{s:O}", "error", e);
    }

    rc = rg_llm_openai_error(pool, wrap, a->http_status, a->body, a->len,
                             a->hints, r);
    json_decref(wrap);

    return rc;
}


rg_int_t
rg_llm_responses_response(rg_pool_t *pool, json_t *resp,
    const rg_llm_answer_t *a, rg_llm_response_t *r)
{
    size_t       i, total, keep, special;
    json_t      *output, *item, *kept, *e, *reason;
    rg_int_t     rc;
    rg_buf_t     text, reasoning, refusal;
    const char  *type, *status;

    rg_llm_responses_usage(json_object_get(resp, "usage"), r);

    status = json_string_value(json_object_get(resp, "status"));
    e = json_object_get(resp, "error");

    if ((status != NULL && strcmp(status, "failed") == 0)
        || (json_is_object(e) && json_object_size(e) > 0))
    {
        return rg_llm_responses_failed(pool, e, a, r);
    }

    output = json_object_get(resp, "output");

    if (!json_is_array(output)) {
        return rg_llm_json_bad(pool, r, "response has no output", NULL);
    }

    rg_llm_json_count(output, "function_call", "message", &total, &special);

    if (rg_llm_json_calls(pool, total, a->max_calls, &keep, r) != RG_OK) {
        return RG_ERROR;
    }

    memset(&text, 0, sizeof(rg_buf_t));
    memset(&reasoning, 0, sizeof(rg_buf_t));
    memset(&refusal, 0, sizeof(rg_buf_t));

    /* only messages and calls: the message says it all, nothing kept */
    kept = special ? json_array() : NULL;
    rc = (kept || !special) ? RG_OK : RG_ERROR;

    json_array_foreach(output, i, item) {
        if (rc != RG_OK) {
            break;
        }

        if (!json_is_object(item)) {
            continue;
        }

        type = json_string_value(json_object_get(item, "type"));
        if (type == NULL) {
            type = "";
        }

        if (kept && rg_llm_json_kept_add(kept, item) != RG_OK) {
            rc = RG_ERROR;
            break;
        }

        if (strcmp(type, "message") == 0) {
            rc = rg_llm_responses_parts(item, &text, &refusal);

        } else if (strcmp(type, "function_call") == 0) {
            if (r->ncalls < keep) {
                rc = rg_llm_responses_fc(pool, item, r);
            }

        } else if (strcmp(type, "reasoning") == 0) {
            rc = rg_llm_responses_reasoning(item, &reasoning);
            r->nopaque += json_is_string(json_object_get(item,
                                                   "encrypted_content"));

        }

        /* a built-in tool's item is only kept */
    }

    if (rc == RG_OK) {
        rc = rg_llm_json_set(pool, &r->content, text.data, text.len);
        rc |= rg_llm_json_set(pool, &r->reasoning, reasoning.data,
                              reasoning.len);
        rc |= rg_llm_json_set(pool, &r->refusal, refusal.data, refusal.len);
    }

    if (rc == RG_OK && special) {
        rc = rg_llm_json_kept_set(pool, kept, r);
    }

    rg_buf_free(&text);
    rg_buf_free(&reasoning);
    rg_buf_free(&refusal);

    if (rc != RG_OK) {
        json_decref(kept);
        return RG_ERROR;
    }

    /* no finish_reason here: completed, or incomplete and why */
    if (status != NULL && strcmp(status, "incomplete") == 0) {
        reason = json_object_get(json_object_get(resp, "incomplete_details"),
                                 "reason");

        if (json_is_string(reason) && json_string_length(reason)) {
            rc = rg_llm_json_get(pool, &r->finish_reason, reason);
        } else {
            rg_str_set(&r->finish_reason, "incomplete");
        }

    } else if (r->ncalls) {
        rg_str_set(&r->finish_reason, "tool_calls");

    } else {
        rg_str_set(&r->finish_reason, "stop");
    }

    r->has_content = (r->content.len > 0);
    r->status = RG_LLM_OK;

    if (rc != RG_OK || rg_llm_json_ids(pool, a->id_prefix, r) != RG_OK
        || rg_llm_answer_end(pool, "responses", r) != RG_OK
        || rg_llm_responses_answer_wire(pool, output, kept, r) != RG_OK)
    {
        json_decref(kept);
        return RG_ERROR;
    }

    json_decref(kept);

    return RG_OK;
}


/* the members of an answer that are read */
static const char  *rg_llm_responses_members[] = {
    "output", "status", "error", "usage", "incomplete_details"
};


/* An answer of 2xx, of the members read only: the rest repeats the
 * request (its tools, instructions, reasoning) and would cost more to
 * parse than the answer. NULL when the body is not one whole object whose
 * members parse: then it is read whole. */
json_t *
rg_llm_responses_load(const char *body, size_t len)
{
    size_t     at[rg_nelems(rg_llm_responses_members)], i;
    json_t    *root, *v;

    if (rg_llm_json_members(body, len, rg_llm_responses_members, at,
                            rg_nelems(rg_llm_responses_members)) != RG_OK
        || at[0] == (size_t) -1)
    {
        return NULL;
    }

    root = json_object();

    for (i = 0; root != NULL && i < rg_nelems(rg_llm_responses_members); i++)
    {
        if (at[i] == (size_t) -1) {
            continue;
        }

        v = json_loadb(body + at[i], len - at[i],
                       JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY
                       | JSON_ALLOW_NUL, NULL);

        if (v == NULL
            || json_object_set_new(root, rg_llm_responses_members[i], v) != 0)
        {
            json_decref(root);
            return NULL;
        }
    }

    return root;
}


rg_int_t
rg_llm_responses_read(rg_pool_t *pool, const rg_llm_answer_t *a,
    rg_llm_response_t *r)
{
    json_t        *root;
    rg_int_t       rc;
    json_error_t   err;

    rg_llm_response_init(r, a->http_status);

    root = NULL;

    if (a->http_status >= 200 && a->http_status <= 299) {
        root = rg_llm_responses_load(a->body, a->len);
    }

    if (root == NULL) {
        root = rg_llm_json_load(a->body, a->len, &err);
    }

    if (a->http_status < 200 || a->http_status > 299) {
        rc = rg_llm_openai_error(pool, root, a->http_status, a->body, a->len,
                                 a->hints, r);

    } else if (root == NULL) {
        rc = rg_llm_json_bad(pool, r, "malformed response from the model: ",
                             err.text);

    } else if (!json_is_object(root)) {
        rc = rg_llm_json_bad(pool, r, "response has no output", NULL);

    } else if (json_object_get(root, "output") == NULL
               && json_object_get(root, "error") != NULL
               && !json_is_null(json_object_get(root, "error")))
    {
        /* a proxy's error after its 200 */
        rc = rg_llm_openai_error(pool, root, a->http_status, a->body, a->len,
                                 a->hints, r);

    } else {
        rc = rg_llm_responses_response(pool, root, a, r);
    }

    json_decref(root);

    return rc;
}
