/* rg_mock_responses.c: the requests of the OpenAI Responses format of the
 * mock model (POST /v1/responses). Validates a request as strictly as the
 * real API, in its wording ("Missing required parameter: 'tools[0].name'.",
 * "No tool output found for function call call_..."), including the rules
 * of stateless reasoning: with store false a reasoning item must carry its
 * encrypted_content, which must be what the mock made for that item, and
 * a function call the mock made in a turn that reasoned must follow that
 * turn's reasoning item. Turning the input items into the chat form the
 * shared conversation logic reads, and the answers, are
 * rg_mock_responses_reply.c's. */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rg_mock.h"


#define RG_MOCK_R_PARAM  96


static const char  *rg_mock_r_top[] = {
    "model", "input", "instructions", "include", "max_output_tokens",
    "max_tool_calls", "metadata", "parallel_tool_calls",
    "previous_response_id", "prompt", "prompt_cache_key",
    "prompt_cache_retention", "reasoning", "safety_identifier",
    "service_tier", "store", "stream", "stream_options", "temperature",
    "text", "tool_choice", "tools", "top_logprobs", "top_p", "truncation",
    "user", "background", "conversation", NULL
};

static const char  *rg_mock_r_includes[] = {
    "code_interpreter_call.outputs", "computer_call_output.output.image_url",
    "file_search_call.results", "message.input_image.image_url",
    "message.output_text.logprobs", "reasoning.encrypted_content",
    "web_search_call.action.sources", NULL
};


static void rg_mock_r_param(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));


/* Writes a parameter path into buf; one too long is cut (the API's are
 * short). */

static void
rg_mock_r_param(char *buf, size_t size, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}


static int
rg_mock_r_one_of(const char *s, const char *const *set)
{
    size_t  i;

    for (i = 0; s != NULL && set[i] != NULL; i++) {
        if (strcmp(s, set[i]) == 0) {
            return 1;
        }
    }

    return 0;
}


static rg_int_t
rg_mock_r_code(rg_mock_err_t *err, const char *code)
{
    snprintf(err->code, sizeof(err->code), "%s", code);

    return RG_ERROR;
}


/* Every key of obj must be one of keys: "Unknown parameter: 'p.key'." */

static rg_int_t
rg_mock_r_unknown(json_t *obj, const char *p, const char *const *keys,
    rg_mock_err_t *err)
{
    char         param[RG_MOCK_R_PARAM * 2];
    size_t       len;
    json_t      *v;
    const char  *key;

    json_object_foreach(obj, key, v) {
        if (rg_mock_r_one_of(key, keys)) {
            continue;
        }

        len = rg_mock_utf8_cut(key, strlen(key), 64);
        rg_mock_r_param(param, sizeof(param), "%s.%.*s", p, (int) len, key);
        rg_mock_fail(err, param, "Unknown parameter: '%s'.", param);

        return rg_mock_r_code(err, "unknown_parameter");
    }

    return RG_OK;
}


/* A required (or, with optional, a present) string field key of obj. */

static rg_int_t
rg_mock_r_string(json_t *obj, const char *p, const char *key, int optional,
    rg_mock_err_t *err)
{
    char     param[RG_MOCK_R_PARAM * 2];
    json_t  *v;

    rg_mock_r_param(param, sizeof(param), "%s.%s", p, key);
    v = json_object_get(obj, key);

    if (v == NULL || (optional && json_is_null(v))) {
        return optional ? RG_OK : rg_mock_missing(err, param);
    }

    if (!json_is_string(v)) {
        return rg_mock_bad_type(err, param, "a string", v);
    }

    return RG_OK;
}


/* An item's id, when given, begins with prefix. */

static rg_int_t
rg_mock_r_id(json_t *item, const char *p, const char *prefix,
    rg_mock_err_t *err)
{
    char         param[RG_MOCK_R_PARAM * 2];
    size_t       len;
    const char  *id;

    if (rg_mock_r_string(item, p, "id", 1, err) != RG_OK) {
        return RG_ERROR;
    }

    id = json_string_value(json_object_get(item, "id"));

    if (id == NULL || strncmp(id, prefix, strlen(prefix)) == 0) {
        return RG_OK;
    }

    rg_mock_r_param(param, sizeof(param), "%s.id", p);
    len = rg_mock_utf8_cut(id, strlen(id), 64);
    rg_mock_fail(err, param, "Invalid '%s': '%.*s'. Expected an ID that "
                 "begins with '%s'.", param, (int) len, id, prefix);

    return rg_mock_r_code(err, "invalid_value");
}


static rg_int_t
rg_mock_r_status(json_t *item, const char *p, rg_mock_err_t *err)
{
    char         param[RG_MOCK_R_PARAM * 2];
    json_t      *v;

    static const char  *set[] = {
        "in_progress", "completed", "incomplete", NULL
    };

    v = json_object_get(item, "status");

    if (v == NULL || json_is_null(v)
        || rg_mock_r_one_of(json_string_value(v), set))
    {
        return RG_OK;
    }

    rg_mock_r_param(param, sizeof(param), "%s.status", p);

    if (!json_is_string(v)) {
        return rg_mock_bad_type(err, param, "a string", v);
    }

    return rg_mock_bad_value(err, param, json_string_value(v),
                             "'in_progress', 'completed', and 'incomplete'");
}


/* The content parts of a message item: output_text and refusal for the
 * assistant, input parts for the others. */

static rg_int_t
rg_mock_r_parts(json_t *content, const char *p, int assistant,
    rg_mock_err_t *err)
{
    char         q[RG_MOCK_R_PARAM * 2], param[RG_MOCK_R_PARAM * 3];
    size_t       k;
    json_t      *part, *type;
    const char  *t;

    static const char  *out_text[] = {
        "type", "text", "annotations", "logprobs", NULL
    };
    static const char  *refusal[] = { "type", "refusal", NULL };
    static const char  *in_text[] = { "type", "text", NULL };
    static const char  *in_image[] = {
        "type", "image_url", "file_id", "detail", NULL
    };
    static const char  *in_file[] = {
        "type", "file_id", "file_data", "file_url", "filename", NULL
    };

    json_array_foreach(content, k, part) {
        rg_mock_r_param(q, sizeof(q), "%s.content[%zu]", p, k);

        if (!json_is_object(part)) {
            return rg_mock_bad_type(err, q, "an object", part);
        }

        rg_mock_r_param(param, sizeof(param), "%s.type", q);
        type = json_object_get(part, "type");
        t = json_string_value(type);

        if (type == NULL) {
            return rg_mock_missing(err, param);
        }

        if (assistant && t != NULL && strcmp(t, "output_text") == 0) {
            if (rg_mock_r_unknown(part, q, out_text, err) != RG_OK
                || rg_mock_r_string(part, q, "text", 0, err) != RG_OK)
            {
                return RG_ERROR;
            }

        } else if (assistant && t != NULL && strcmp(t, "refusal") == 0) {
            if (rg_mock_r_unknown(part, q, refusal, err) != RG_OK
                || rg_mock_r_string(part, q, "refusal", 0, err) != RG_OK)
            {
                return RG_ERROR;
            }

        } else if (!assistant && t != NULL && strcmp(t, "input_text") == 0) {
            if (rg_mock_r_unknown(part, q, in_text, err) != RG_OK
                || rg_mock_r_string(part, q, "text", 0, err) != RG_OK)
            {
                return RG_ERROR;
            }

        } else if (!assistant && t != NULL && strcmp(t, "input_image") == 0) {
            if (rg_mock_r_unknown(part, q, in_image, err) != RG_OK) {
                return RG_ERROR;
            }

        } else if (!assistant && t != NULL && strcmp(t, "input_file") == 0) {
            if (rg_mock_r_unknown(part, q, in_file, err) != RG_OK) {
                return RG_ERROR;
            }

        } else if (!json_is_string(type)) {
            return rg_mock_bad_type(err, param, "a string", type);

        } else {
            return rg_mock_bad_value(err, param, t, assistant
                       ? "'output_text' and 'refusal'"
                       : "'input_text', 'input_image', and 'input_file'");
        }
    }

    return RG_OK;
}


static rg_int_t
rg_mock_r_message(json_t *item, const char *p, rg_mock_err_t *err)
{
    char         param[RG_MOCK_R_PARAM * 2];
    json_t      *role, *content;
    const char  *r;

    static const char  *keys[] = {
        "type", "role", "content", "id", "status", "phase", NULL
    };
    static const char  *roles[] = {
        "user", "system", "developer", "assistant", NULL
    };

    rg_mock_r_param(param, sizeof(param), "%s.role", p);
    role = json_object_get(item, "role");
    r = json_string_value(role);

    if (role == NULL) {
        return rg_mock_missing(err, param);
    }

    if (!rg_mock_r_one_of(r, roles)) {
        return json_is_string(role)
               ? rg_mock_bad_value(err, param, r, "'assistant', 'system', "
                                   "'developer', and 'user'")
               : rg_mock_bad_type(err, param, "a string", role);
    }

    if (rg_mock_r_unknown(item, p, keys, err) != RG_OK
        || rg_mock_r_id(item, p, "msg", err) != RG_OK
        || rg_mock_r_status(item, p, err) != RG_OK)
    {
        return RG_ERROR;
    }

    rg_mock_r_param(param, sizeof(param), "%s.content", p);
    content = json_object_get(item, "content");

    if (content == NULL) {
        return rg_mock_missing(err, param);
    }

    if (json_is_string(content)) {
        return RG_OK;
    }

    if (!json_is_array(content)) {
        return rg_mock_bad_type(err, param, "one of a string or array of "
                                "input items", content);
    }

    return rg_mock_r_parts(content, p, strcmp(r, "assistant") == 0, err);
}


static rg_int_t
rg_mock_r_reasoning(json_t *item, const char *p, rg_mock_err_t *err)
{
    char     param[RG_MOCK_R_PARAM * 3];
    size_t   k;
    json_t  *summary, *part, *v;

    static const char  *keys[] = {
        "type", "id", "summary", "encrypted_content", "content", "status",
        NULL
    };
    static const char  *part_keys[] = { "type", "text", NULL };

    rg_mock_r_param(param, sizeof(param), "%s.id", p);

    if (json_object_get(item, "id") == NULL) {
        return rg_mock_missing(err, param);
    }

    if (rg_mock_r_unknown(item, p, keys, err) != RG_OK
        || rg_mock_r_id(item, p, "rs", err) != RG_OK
        || rg_mock_r_string(item, p, "encrypted_content", 1, err) != RG_OK)
    {
        return RG_ERROR;
    }

    rg_mock_r_param(param, sizeof(param), "%s.summary", p);
    summary = json_object_get(item, "summary");

    if (summary == NULL) {
        return rg_mock_missing(err, param);
    }

    if (!json_is_array(summary)) {
        return rg_mock_bad_type(err, param, "an array", summary);
    }

    json_array_foreach(summary, k, part) {
        rg_mock_r_param(param, sizeof(param), "%s.summary[%zu]", p, k);

        if (!json_is_object(part)) {
            return rg_mock_bad_type(err, param, "an object", part);
        }

        v = json_object_get(part, "type");

        if (!json_is_string(v)
            || strcmp(json_string_value(v), "summary_text") != 0)
        {
            rg_mock_r_param(param, sizeof(param), "%s.summary[%zu].type", p, k);
            return rg_mock_bad_value(err, param, json_string_value(v)
                                     ? json_string_value(v) : "",
                                     "'summary_text'");
        }

        if (rg_mock_r_unknown(part, param, part_keys, err) != RG_OK
            || rg_mock_r_string(part, param, "text", 0, err) != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* One input item, by its type. */

static rg_int_t
rg_mock_r_item(json_t *item, size_t i, rg_mock_err_t *err)
{
    char         p[RG_MOCK_R_PARAM], param[RG_MOCK_R_PARAM * 2];
    json_t      *type, *v;
    const char  *t;

    static const char  *call[] = {
        "type", "call_id", "name", "arguments", "id", "status", NULL
    };
    static const char  *output[] = {
        "type", "call_id", "output", "id", "status", NULL
    };

    rg_mock_r_param(p, sizeof(p), "input[%zu]", i);

    if (!json_is_object(item)) {
        return rg_mock_bad_type(err, p, "an object", item);
    }

    type = json_object_get(item, "type");
    t = json_string_value(type);

    if (type == NULL || (t != NULL && strcmp(t, "message") == 0)) {
        return rg_mock_r_message(item, p, err);
    }

    rg_mock_r_param(param, sizeof(param), "%s.type", p);

    if (t == NULL) {
        return rg_mock_bad_type(err, param, "a string", type);
    }

    if (strcmp(t, "function_call") == 0) {
        if (rg_mock_r_string(item, p, "call_id", 0, err) != RG_OK
            || rg_mock_r_string(item, p, "name", 0, err) != RG_OK
            || rg_mock_r_string(item, p, "arguments", 0, err) != RG_OK
            || rg_mock_r_unknown(item, p, call, err) != RG_OK
            || rg_mock_r_id(item, p, "fc", err) != RG_OK)
        {
            return RG_ERROR;
        }

        return rg_mock_r_status(item, p, err);
    }

    if (strcmp(t, "function_call_output") == 0) {
        if (rg_mock_r_string(item, p, "call_id", 0, err) != RG_OK
            || rg_mock_r_unknown(item, p, output, err) != RG_OK)
        {
            return RG_ERROR;
        }

        rg_mock_r_param(param, sizeof(param), "%s.output", p);
        v = json_object_get(item, "output");

        if (v == NULL) {
            return rg_mock_missing(err, param);
        }

        if (!json_is_string(v) && !json_is_array(v)) {
            return rg_mock_bad_type(err, param, "one of a string or array "
                                    "of input items", v);
        }

        return RG_OK;
    }

    if (strcmp(t, "reasoning") == 0) {
        return rg_mock_r_reasoning(item, p, err);
    }

    if (strcmp(t, "item_reference") == 0) {
        /* the mock keeps no items */
        v = json_object_get(item, "id");
        return rg_mock_fail(err, "input", "Item with id '%.64s' not found.",
                            json_is_string(v) ? json_string_value(v) : "");
    }

    return rg_mock_bad_value(err, param, t, "'message', 'function_call', "
                             "'function_call_output', 'reasoning', and "
                             "'item_reference'");
}


static const char *
rg_mock_r_type(json_t *item)
{
    const char  *t;

    t = json_string_value(json_object_get(item, "type"));

    return t ? t : "message";
}


/* Whether an item of input, before index end, is a function call (or
 * with reasoning, a reasoning item) whose key is value. */

static int
rg_mock_r_before(json_t *input, size_t end, const char *type,
    const char *key, const char *value)
{
    size_t       i;
    json_t      *item;
    const char  *s;

    for (i = 0; i < end; i++) {
        item = json_array_get(input, i);
        s = json_string_value(json_object_get(item, key));

        if (strcmp(rg_mock_r_type(item), type) == 0 && s != NULL
            && strcmp(s, value) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* A reasoning item: sent back sealed (or, with store, by an id the mock
 * made), and followed by the output it led to. */

static rg_int_t
rg_mock_r_check_reasoning(json_t *input, size_t i, int store,
    rg_mock_err_t *err)
{
    char         label[160];
    size_t       len;
    json_t      *item, *next;
    const char  *id, *sealed, *t;

    item = json_array_get(input, i);
    id = json_string_value(json_object_get(item, "id"));
    sealed = json_string_value(json_object_get(item, "encrypted_content"));
    len = rg_mock_utf8_cut(id, strlen(id), 100);

    if (sealed != NULL) {
        snprintf(label, sizeof(label), "reasoning:%.*s", (int) len, id);

        if (!rg_mock_seal_check(label, sealed)) {
            rg_mock_fail(err, NULL, "The encrypted content for item %.*s "
                         "could not be verified. Reason: Encrypted content "
                         "could not be decrypted or parsed.", (int) len, id);
            return rg_mock_r_code(err, "invalid_encrypted_content");
        }

    } else if (!store) {
        return rg_mock_fail(err, "input", "Item with id '%.*s' not found. "
                            "Items are not persisted when `store` is set to "
                            "false. Try again with `store` set to true, or "
                            "remove this item from your input.",
                            (int) len, id);

    } else if (strncmp(id, "rs_mock_", 8) != 0) {
        return rg_mock_fail(err, "input", "Item with id '%.*s' not found.",
                            (int) len, id);
    }

    next = json_array_get(input, i + 1);
    t = next ? rg_mock_r_type(next) : "";

    if (strcmp(t, "function_call") == 0 || strcmp(t, "reasoning") == 0
        || (strcmp(t, "message") == 0
            && strcmp(json_string_value(json_object_get(next, "role")),
                      "assistant") == 0))
    {
        return RG_OK;
    }

    return rg_mock_fail(err, "input", "Item '%.*s' of type 'reasoning' was "
                        "provided without its required following item.",
                        (int) len, id);
}


/* The pairing of function calls and outputs, and the reasoning items. */

static rg_int_t
rg_mock_r_turns(json_t *input, int store, rg_mock_err_t *err)
{
    char                rs[64];
    size_t              i, k, n, r, j, len;
    json_t             *item;
    uint64_t            resp;
    const char         *t, *cid, *id;
    unsigned long long  nn;
    int                 used;

    n = json_array_size(input);

    for (i = 0; i < n; i++) {
        item = json_array_get(input, i);
        t = rg_mock_r_type(item);
        cid = json_string_value(json_object_get(item, "call_id"));

        if (strcmp(t, "reasoning") == 0) {
            if (rg_mock_r_check_reasoning(input, i, store, err) != RG_OK) {
                return RG_ERROR;
            }

        } else if (strcmp(t, "function_call_output") == 0) {
            if (!rg_mock_r_before(input, i, "function_call", "call_id", cid)) {
                len = rg_mock_utf8_cut(cid, strlen(cid), 100);
                return rg_mock_fail(err, "input", "No tool call found for "
                                    "function call output with call_id "
                                    "%.*s.", (int) len, cid);
            }

        } else if (strcmp(t, "function_call") == 0) {
            /* the mock's calls of a turn that reasoned: call_R_K_N_r */
            used = 0;
            if (sscanf(cid, "call_%zu_%zu_%llu_r%n", &r, &k, &nn, &used) == 3
                && used > 0 && cid[used] == '\0')
            {
                resp = (uint64_t) nn;
                snprintf(rs, sizeof(rs), "rs_mock_%llu",
                         (unsigned long long) resp);

                if (!rg_mock_r_before(input, i, "reasoning", "id", rs)) {
                    id = json_string_value(json_object_get(item, "id"));
                    id = id ? id : cid;
                    len = rg_mock_utf8_cut(id, strlen(id), 100);
                    return rg_mock_fail(err, "input", "Item '%.*s' of type "
                                        "'function_call' was provided "
                                        "without its required 'reasoning' "
                                        "item: '%s'.", (int) len, id, rs);
                }
            }

            for (j = i + 1; j < n; j++) {
                if (strcmp(rg_mock_r_type(json_array_get(input, j)),
                           "function_call_output") == 0
                    && strcmp(json_string_value(json_object_get(
                                  json_array_get(input, j), "call_id")),
                              cid) == 0)
                {
                    break;
                }
            }

            if (j == n) {
                len = rg_mock_utf8_cut(cid, strlen(cid), 100);
                return rg_mock_fail(err, "input", "No tool output found for "
                                    "function call %.*s.", (int) len, cid);
            }
        }
    }

    return RG_OK;
}


static rg_int_t
rg_mock_r_tools(json_t *tools, rg_mock_err_t *err)
{
    char         p[RG_MOCK_R_PARAM], param[RG_MOCK_R_PARAM * 2];
    size_t       k;
    json_t      *t, *v;

    static const char  *keys[] = {
        "type", "name", "description", "parameters", "strict", NULL
    };

    if (!json_is_array(tools)) {
        return rg_mock_bad_type(err, "tools", "an array", tools);
    }

    json_array_foreach(tools, k, t) {
        rg_mock_r_param(p, sizeof(p), "tools[%zu]", k);

        if (!json_is_object(t)) {
            return rg_mock_bad_type(err, p, "an object", t);
        }

        rg_mock_r_param(param, sizeof(param), "%s.type", p);
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

        /* the flat form: {"type", "name", ...}; a "function" object (the
         * chat form) leaves the name missing */
        if (rg_mock_r_string(t, p, "name", 0, err) != RG_OK
            || rg_mock_r_unknown(t, p, keys, err) != RG_OK
            || rg_mock_r_string(t, p, "description", 1, err) != RG_OK)
        {
            return RG_ERROR;
        }

        rg_mock_r_param(param, sizeof(param), "%s.parameters", p);
        v = json_object_get(t, "parameters");

        if (v != NULL && !json_is_null(v) && !json_is_object(v)) {
            return rg_mock_bad_type(err, param, "an object", v);
        }

        rg_mock_r_param(param, sizeof(param), "%s.strict", p);
        v = json_object_get(t, "strict");

        if (v != NULL && !json_is_null(v) && !json_is_boolean(v)) {
            return rg_mock_bad_type(err, param, "a boolean", v);
        }
    }

    return RG_OK;
}


static rg_int_t
rg_mock_r_tool_choice(json_t *tc, rg_mock_err_t *err)
{
    const char  *t;

    static const char  *modes[] = { "none", "auto", "required", NULL };

    if (tc == NULL || json_is_null(tc)) {
        return RG_OK;
    }

    if (json_is_string(tc)) {
        return rg_mock_r_one_of(json_string_value(tc), modes)
               ? RG_OK
               : rg_mock_bad_value(err, "tool_choice", json_string_value(tc),
                                   "'none', 'auto', and 'required'");
    }

    if (!json_is_object(tc)) {
        return rg_mock_bad_type(err, "tool_choice", "one of a string or an "
                                "object", tc);
    }

    t = json_string_value(json_object_get(tc, "type"));

    if (t != NULL && strcmp(t, "function") == 0) {
        return rg_mock_r_string(tc, "tool_choice", "name", 0, err);
    }

    if (t != NULL && strcmp(t, "allowed_tools") == 0) {
        return RG_OK;
    }

    return rg_mock_bad_value(err, "tool_choice.type", t ? t : "",
                             "'function' and 'allowed_tools'");
}


/* The options: types and ranges. */

static rg_int_t
rg_mock_r_options(json_t *root, rg_mock_err_t *err)
{
    size_t       k;
    json_t      *v, *s;
    const char  *key;

    static const char  *flags[] = {
        "store", "stream", "parallel_tool_calls", "background", NULL
    };
    static const char  *efforts[] = {
        "none", "minimal", "low", "medium", "high", "xhigh", NULL
    };
    static const char  *summaries[] = {
        "auto", "concise", "detailed", NULL
    };

    for (k = 0; flags[k] != NULL; k++) {
        v = json_object_get(root, flags[k]);
        if (v != NULL && !json_is_null(v) && !json_is_boolean(v)) {
            return rg_mock_bad_type(err, flags[k], "a boolean", v);
        }
    }

    v = json_object_get(root, "instructions");
    if (v != NULL && !json_is_null(v) && !json_is_string(v)) {
        return rg_mock_bad_type(err, "instructions", "a string", v);
    }

    v = json_object_get(root, "temperature");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_number(v)) {
            return rg_mock_bad_type(err, "temperature", "a decimal", v);
        }

        if (json_number_value(v) < 0 || json_number_value(v) > 2) {
            rg_mock_fail(err, "temperature", "Invalid 'temperature': "
                         "decimal %s value. Expected a value %s, but got %g "
                         "instead.", json_number_value(v) < 0 ? "below "
                         "minimum" : "above maximum", json_number_value(v)
                         < 0 ? ">= 0" : "<= 2", json_number_value(v));
            return rg_mock_r_code(err, json_number_value(v) < 0
                                  ? "decimal_below_min_value"
                                  : "decimal_above_max_value");
        }
    }

    v = json_object_get(root, "max_output_tokens");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_integer(v)) {
            return rg_mock_bad_type(err, "max_output_tokens", "an integer",
                                    v);
        }

        if (json_integer_value(v) < 16) {
            rg_mock_fail(err, "max_output_tokens", "Invalid "
                         "'max_output_tokens': integer below minimum value. "
                         "Expected a value >= 16, but got %" JSON_INTEGER_FORMAT
                         " instead.", json_integer_value(v));
            return rg_mock_r_code(err, "integer_below_min_value");
        }
    }

    v = json_object_get(root, "include");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_array(v)) {
            return rg_mock_bad_type(err, "include", "an array", v);
        }

        json_array_foreach(v, k, s) {
            if (!rg_mock_r_one_of(json_string_value(s), rg_mock_r_includes)) {
                char  param[32];

                rg_mock_r_param(param, sizeof(param), "include[%zu]", k);
                return rg_mock_bad_value(err, param, json_is_string(s)
                           ? json_string_value(s) : "",
                           "'code_interpreter_call.outputs', "
                           "'computer_call_output.output.image_url', "
                           "'file_search_call.results', "
                           "'message.input_image.image_url', "
                           "'message.output_text.logprobs', "
                           "'reasoning.encrypted_content', and "
                           "'web_search_call.action.sources'");
            }
        }
    }

    v = json_object_get(root, "metadata");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_object(v)) {
            return rg_mock_bad_type(err, "metadata", "an object", v);
        }

        json_object_foreach(v, key, s) {
            if (!json_is_string(s)) {
                return rg_mock_bad_type(err, "metadata", "an object of "
                                        "strings", v);
            }
        }
    }

    v = json_object_get(root, "reasoning");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_object(v)) {
            return rg_mock_bad_type(err, "reasoning", "an object", v);
        }

        s = json_object_get(v, "effort");
        if (s != NULL && !json_is_null(s)
            && !rg_mock_r_one_of(json_string_value(s), efforts))
        {
            return rg_mock_bad_value(err, "reasoning.effort",
                       json_is_string(s) ? json_string_value(s) : "",
                       "'none', 'minimal', 'low', 'medium', 'high', and "
                       "'xhigh'");
        }

        s = json_object_get(v, "summary");
        if (s != NULL && !json_is_null(s)
            && !rg_mock_r_one_of(json_string_value(s), summaries))
        {
            return rg_mock_bad_value(err, "reasoning.summary",
                       json_is_string(s) ? json_string_value(s) : "",
                       "'auto', 'concise', and 'detailed'");
        }
    }

    v = json_object_get(root, "previous_response_id");
    if (v != NULL && !json_is_null(v)) {
        rg_mock_fail(err, "previous_response_id", "Previous response with "
                     "id '%.64s' not found.", json_is_string(v)
                     ? json_string_value(v) : "");
        return rg_mock_r_code(err, "previous_response_not_found");
    }

    v = json_object_get(root, "tools");
    if (v != NULL && !json_is_null(v) && rg_mock_r_tools(v, err) != RG_OK) {
        return RG_ERROR;
    }

    return rg_mock_r_tool_choice(json_object_get(root, "tool_choice"), err);
}


static rg_int_t
rg_mock_r_validate(json_t *root, rg_mock_err_t *err)
{
    size_t       i;
    json_t      *v, *input, *item;
    const char  *key;

    if (root == NULL) {
        return rg_mock_fail(err, NULL, "We could not parse the JSON body of "
                            "your request.");
    }

    if (!json_is_object(root)) {
        return rg_mock_fail(err, NULL, "Invalid type for request body: "
                            "expected an object, but got %s instead.",
                            rg_mock_type_name(root));
    }

    json_object_foreach(root, key, v) {
        if (!rg_mock_r_one_of(key, rg_mock_r_top)) {
            return rg_mock_fail(err, NULL, "Unrecognized request argument "
                                "supplied: %.64s", key);
        }
    }

    v = json_object_get(root, "model");
    if (v == NULL || json_is_null(v)) {
        return rg_mock_missing(err, "model");
    }

    if (!json_is_string(v)) {
        return rg_mock_bad_type(err, "model", "a string", v);
    }

    input = json_object_get(root, "input");
    if (input == NULL || json_is_null(input)) {
        return rg_mock_missing(err, "input");
    }

    if (!json_is_string(input) && !json_is_array(input)) {
        return rg_mock_bad_type(err, "input", "one of a string or array of "
                                "input items", input);
    }

    if (rg_mock_r_options(root, err) != RG_OK) {
        return RG_ERROR;
    }

    json_array_foreach(input, i, item) {
        if (rg_mock_r_item(item, i, err) != RG_OK) {
            return RG_ERROR;
        }
    }

    v = json_object_get(root, "store");

    return rg_mock_r_turns(input, !json_is_false(v), err);
}


rg_int_t
rg_mock_responses_parse(rg_mock_conv_t *c, rg_mock_err_t *err)
{
    size_t       i;
    json_t      *reasoning, *v;
    const char  *effort;

    if (rg_mock_r_validate(c->req, err) != RG_OK) {
        return RG_ERROR;
    }

    reasoning = json_object_get(c->req, "reasoning");
    effort = json_string_value(json_object_get(reasoning, "effort"));

    c->think = json_is_object(reasoning)
               && (effort == NULL || strcmp(effort, "none") != 0);

    json_array_foreach(json_object_get(c->req, "include"), i, v) {
        if (strcmp(json_string_value(v), "reasoning.encrypted_content") == 0)
        {
            c->encrypted = 1;
        }
    }

    c->one_call = json_is_false(json_object_get(c->req,
                                                "parallel_tool_calls"));
    c->ascii_args = 1;
    c->call_suffix = c->think ? "_r" : "";

    c->root = rg_mock_responses_chat(c->req);
    if (c->root == NULL) {
        return rg_mock_fail(err, NULL, "rg_mock: out of memory");
    }

    return RG_OK;
}
