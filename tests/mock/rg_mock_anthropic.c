/* rg_mock_anthropic.c: the requests of the Anthropic Messages format of
 * the mock model (POST /v1/messages). Validates a request as strictly as
 * the real API, in its wording (a field path and a message: "messages.1.
 * content.0.tool_use.id: String should match pattern ..."), including the
 * pairing of tool_use and tool_result blocks, the rules of extended
 * thinking, the signatures of thinking blocks the mock made, and the
 * limit of 4 cache_control breakpoints. Turning the request into the chat
 * form the shared conversation logic reads, and the answers, are
 * rg_mock_anthropic_reply.c's. */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rg_mock.h"


#define RG_MOCK_A_PATH  160


typedef struct {
    rg_mock_err_t            *err;
    size_t                    ncache;           /* cache_control seen */
    int                       think;            /* thinking enabled */
} rg_mock_a_t;


static const char  *rg_mock_a_top[] = {
    "model", "messages", "max_tokens", "system", "metadata", "stop_sequences",
    "stream", "temperature", "top_k", "top_p", "tools", "tool_choice",
    "thinking", "service_tier", NULL
};


static void rg_mock_a_path(char *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));


/* Writes a field path into p, a buffer of RG_MOCK_A_PATH bytes; a path
 * too long is cut (the API's paths are short). */

static void
rg_mock_a_path(char *p, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(p, RG_MOCK_A_PATH, fmt, ap);
    va_end(ap);
}


/* Fails with "PATH: text" (or "PATH.key: text"), the API's wording. */

static rg_int_t
rg_mock_a_fail(rg_mock_a_t *x, const char *path, const char *key,
    const char *text)
{
    size_t  len;

    if (key == NULL) {
        return rg_mock_fail(x->err, path, "%s: %s", path, text);
    }

    len = rg_mock_utf8_cut(key, strlen(key), 100);

    return rg_mock_fail(x->err, path, "%s%s%.*s: %s", path,
                        path[0] != '\0' ? "." : "", (int) len, key, text);
}


/* Every key of obj must be one of keys. */

static rg_int_t
rg_mock_a_extra(rg_mock_a_t *x, json_t *obj, const char *path,
    const char *const *keys)
{
    size_t       i;
    json_t      *v;
    const char  *key;

    json_object_foreach(obj, key, v) {
        for (i = 0; keys[i] != NULL; i++) {
            if (strcmp(key, keys[i]) == 0) {
                break;
            }
        }

        if (keys[i] == NULL) {
            return rg_mock_a_fail(x, path, key,
                                  "Extra inputs are not permitted");
        }
    }

    return RG_OK;
}


static rg_int_t
rg_mock_a_object(rg_mock_a_t *x, json_t *v, const char *path)
{
    if (json_is_object(v)) {
        return RG_OK;
    }

    return rg_mock_a_fail(x, path, NULL, "Input should be a valid "
                          "dictionary or object to extract fields from");
}


/* A required (or, with optional, a present) string field of obj. */

static rg_int_t
rg_mock_a_string(rg_mock_a_t *x, json_t *obj, const char *path,
    const char *key, int optional, json_t **out)
{
    json_t  *v;

    v = json_object_get(obj, key);
    *out = v;

    if (v == NULL) {
        return optional ? RG_OK
                        : rg_mock_a_fail(x, path, key, "Field required");
    }

    if (!json_is_string(v)) {
        return rg_mock_a_fail(x, path, key, "Input should be a valid string");
    }

    return RG_OK;
}


/* ^[a-zA-Z0-9_-]+$, and at most max characters when max is not 0. */

static int
rg_mock_a_pattern(json_t *s, size_t max)
{
    size_t       i, len;
    const char  *p;

    p = json_string_value(s);
    len = json_string_length(s);

    if (p == NULL || len == 0 || (max > 0 && len > max)) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z')
              || (p[i] >= '0' && p[i] <= '9') || p[i] == '_' || p[i] == '-'))
        {
            return 0;
        }
    }

    return 1;
}


/* cache_control {"type": "ephemeral", "ttl"?: "5m" | "1h"} at path. */

static rg_int_t
rg_mock_a_cache_control(rg_mock_a_t *x, json_t *obj, const char *path)
{
    char         p[RG_MOCK_A_PATH];
    json_t      *cc, *v;
    const char  *s;

    static const char  *keys[] = { "type", "ttl", NULL };

    cc = json_object_get(obj, "cache_control");
    if (cc == NULL || json_is_null(cc)) {
        return RG_OK;
    }

    rg_mock_a_path(p, "%s.cache_control", path);

    if (rg_mock_a_object(x, cc, p) != RG_OK) {
        return RG_ERROR;
    }

    v = json_object_get(cc, "type");
    if (v == NULL) {
        return rg_mock_a_fail(x, p, "type", "Field required");
    }

    if (!json_is_string(v) || strcmp(json_string_value(v), "ephemeral") != 0)
    {
        return rg_mock_a_fail(x, p, "type", "Input should be 'ephemeral'");
    }

    rg_mock_a_path(p, "%s.cache_control.ephemeral", path);

    if (rg_mock_a_extra(x, cc, p, keys) != RG_OK) {
        return RG_ERROR;
    }

    v = json_object_get(cc, "ttl");
    s = json_string_value(v);

    if (v != NULL && (s == NULL || (strcmp(s, "5m") != 0
                                    && strcmp(s, "1h") != 0)))
    {
        return rg_mock_a_fail(x, p, "ttl", "Input should be '5m' or '1h'");
    }

    x->ncache++;

    return RG_OK;
}


/* A text block at path (its type already "text"); root names the list
 * the API's emptiness errors name ("messages", "system"). */

static rg_int_t
rg_mock_a_text(rg_mock_a_t *x, json_t *b, const char *path, const char *root)
{
    char         p[RG_MOCK_A_PATH];
    size_t       i, len;
    json_t      *text;
    const char  *s;

    static const char  *keys[] = {
        "type", "text", "cache_control", "citations", NULL
    };

    rg_mock_a_path(p, "%s.text", path);

    if (rg_mock_a_extra(x, b, p, keys) != RG_OK
        || rg_mock_a_string(x, b, p, "text", 0, &text) != RG_OK)
    {
        return RG_ERROR;
    }

    s = json_string_value(text);
    len = json_string_length(text);

    if (len == 0) {
        return rg_mock_a_fail(x, root, NULL,
                              "text content blocks must be non-empty");
    }

    for (i = 0; i < len; i++) {
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') {
            break;
        }
    }

    if (i == len) {
        return rg_mock_a_fail(x, root, NULL, "text content blocks must "
                              "contain non-whitespace text");
    }

    return rg_mock_a_cache_control(x, b, p);
}


static int
rg_mock_a_media(const char *t)
{
    return t != NULL && (strcmp(t, "image/jpeg") == 0
                         || strcmp(t, "image/png") == 0
                         || strcmp(t, "image/gif") == 0
                         || strcmp(t, "image/webp") == 0);
}


static rg_int_t
rg_mock_a_image(rg_mock_a_t *x, json_t *b, const char *path)
{
    char         p[RG_MOCK_A_PATH];
    json_t      *src, *v;
    const char  *t;

    static const char  *keys[] = { "type", "source", "cache_control", NULL };

    rg_mock_a_path(p, "%s.image", path);

    if (rg_mock_a_extra(x, b, p, keys) != RG_OK) {
        return RG_ERROR;
    }

    src = json_object_get(b, "source");
    if (src == NULL) {
        return rg_mock_a_fail(x, p, "source", "Field required");
    }

    rg_mock_a_path(p, "%s.image.source", path);

    if (rg_mock_a_object(x, src, p) != RG_OK) {
        return RG_ERROR;
    }

    t = json_string_value(json_object_get(src, "type"));
    v = json_object_get(src, "media_type");

    if (t != NULL && strcmp(t, "base64") == 0
        && !rg_mock_a_media(json_string_value(v)))
    {
        return rg_mock_a_fail(x, p, "base64.media_type", "Input should be "
                              "'image/jpeg', 'image/png', 'image/gif' or "
                              "'image/webp'");
    }

    if ((t != NULL && strcmp(t, "base64") == 0
         && rg_mock_a_string(x, src, p, "data", 0, &v) == RG_OK)
        || (t != NULL && strcmp(t, "url") == 0
            && rg_mock_a_string(x, src, p, "url", 0, &v) == RG_OK)
        || (t != NULL && strcmp(t, "file") == 0
            && rg_mock_a_string(x, src, p, "file_id", 0, &v) == RG_OK))
    {
        rg_mock_a_path(p, "%s.image", path);
        return rg_mock_a_cache_control(x, b, p);
    }

    if (t != NULL && (strcmp(t, "base64") == 0 || strcmp(t, "url") == 0
                      || strcmp(t, "file") == 0))
    {
        return RG_ERROR;
    }

    return rg_mock_a_fail(x, p, NULL, "Input tag found using 'type' does not "
                          "match any of the expected tags: 'base64', 'url', "
                          "'file'");
}


static rg_int_t
rg_mock_a_tool_use(rg_mock_a_t *x, json_t *b, const char *path)
{
    char     p[RG_MOCK_A_PATH];
    json_t  *v;

    static const char  *keys[] = {
        "type", "id", "name", "input", "cache_control", NULL
    };

    rg_mock_a_path(p, "%s.tool_use", path);

    if (rg_mock_a_extra(x, b, p, keys) != RG_OK
        || rg_mock_a_string(x, b, p, "id", 0, &v) != RG_OK)
    {
        return RG_ERROR;
    }

    if (!rg_mock_a_pattern(v, 0)) {
        return rg_mock_a_fail(x, p, "id", "String should match pattern "
                              "'^[a-zA-Z0-9_-]+$'");
    }

    if (rg_mock_a_string(x, b, p, "name", 0, &v) != RG_OK) {
        return RG_ERROR;
    }

    v = json_object_get(b, "input");
    if (v == NULL) {
        return rg_mock_a_fail(x, p, "input", "Field required");
    }

    if (!json_is_object(v)) {
        return rg_mock_a_fail(x, p, "input",
                              "Input should be a valid dictionary");
    }

    return rg_mock_a_cache_control(x, b, p);
}


static rg_int_t
rg_mock_a_tool_result(rg_mock_a_t *x, json_t *b, const char *path)
{
    char         p[RG_MOCK_A_PATH], q[RG_MOCK_A_PATH];
    size_t       k;
    json_t      *v, *part;
    const char  *t;

    static const char  *keys[] = {
        "type", "tool_use_id", "content", "is_error", "cache_control", NULL
    };

    rg_mock_a_path(p, "%s.tool_result", path);

    if (rg_mock_a_extra(x, b, p, keys) != RG_OK
        || rg_mock_a_string(x, b, p, "tool_use_id", 0, &v) != RG_OK)
    {
        return RG_ERROR;
    }

    if (!rg_mock_a_pattern(v, 0)) {
        return rg_mock_a_fail(x, p, "tool_use_id", "String should match "
                              "pattern '^[a-zA-Z0-9_-]+$'");
    }

    v = json_object_get(b, "is_error");
    if (v != NULL && !json_is_boolean(v)) {
        return rg_mock_a_fail(x, p, "is_error",
                              "Input should be a valid boolean");
    }

    v = json_object_get(b, "content");

    if (json_is_array(v)) {
        json_array_foreach(v, k, part) {
            rg_mock_a_path(q, "%s.content.%zu", p, k);

            if (rg_mock_a_object(x, part, q) != RG_OK) {
                return RG_ERROR;
            }

            t = json_string_value(json_object_get(part, "type"));

            if (t != NULL && strcmp(t, "text") == 0) {
                if (rg_mock_a_text(x, part, q, "messages") != RG_OK) {
                    return RG_ERROR;
                }

            } else if (t != NULL && strcmp(t, "image") == 0) {
                if (rg_mock_a_image(x, part, q) != RG_OK) {
                    return RG_ERROR;
                }

            } else {
                return rg_mock_a_fail(x, q, NULL, "Input tag found using "
                                      "'type' does not match any of the "
                                      "expected tags: 'text', 'image'");
            }
        }

    } else if (v != NULL && !json_is_string(v)) {
        return rg_mock_a_fail(x, p, "content",
                              "Input should be a valid list");
    }

    return rg_mock_a_cache_control(x, b, p);
}


/* A thinking block must carry the signature the mock gave its text, a
 * redacted_thinking block the data the mock sealed. */

static rg_int_t
rg_mock_a_thinking(rg_mock_a_t *x, json_t *b, const char *path, int redacted)
{
    char     p[RG_MOCK_A_PATH];
    json_t  *text, *sig;

    static const char  *keys[] = { "type", "thinking", "signature", NULL };
    static const char  *rkeys[] = { "type", "data", NULL };

    rg_mock_a_path(p, "%s.%s", path, redacted ? "redacted_thinking"
                                              : "thinking");

    if (redacted) {
        if (rg_mock_a_extra(x, b, p, rkeys) != RG_OK
            || rg_mock_a_string(x, b, p, "data", 0, &text) != RG_OK)
        {
            return RG_ERROR;
        }

        return rg_mock_seal_check("redacted_thinking",
                                  json_string_value(text))
               ? RG_OK
               : rg_mock_a_fail(x, path, NULL, "Invalid `data` in "
                                "`redacted_thinking` block");
    }

    if (rg_mock_a_extra(x, b, p, keys) != RG_OK
        || rg_mock_a_string(x, b, p, "thinking", 0, &text) != RG_OK
        || rg_mock_a_string(x, b, p, "signature", 0, &sig) != RG_OK)
    {
        return RG_ERROR;
    }

    return rg_mock_sign_check("thinking", json_string_value(text),
                              json_string_length(text),
                              json_string_value(sig))
           ? RG_OK
           : rg_mock_a_fail(x, path, NULL,
                            "Invalid `signature` in `thinking` block");
}


/* One content block of a message of role assistant (or user). */

static rg_int_t
rg_mock_a_block(rg_mock_a_t *x, json_t *b, const char *path, int assistant)
{
    char         msg[320];
    json_t      *type;
    const char  *t;

    if (rg_mock_a_object(x, b, path) != RG_OK) {
        return RG_ERROR;
    }

    type = json_object_get(b, "type");
    if (type == NULL) {
        return rg_mock_a_fail(x, path, NULL, "Unable to extract tag using "
                              "discriminator 'type'");
    }

    t = json_string_value(type);

    if (t != NULL && strcmp(t, "text") == 0) {
        return rg_mock_a_text(x, b, path, "messages");
    }

    if (t != NULL && strcmp(t, "image") == 0) {
        return rg_mock_a_image(x, b, path);
    }

    if (t != NULL && assistant) {
        if (strcmp(t, "tool_use") == 0) {
            return rg_mock_a_tool_use(x, b, path);
        }

        if (strcmp(t, "thinking") == 0
            || strcmp(t, "redacted_thinking") == 0)
        {
            return rg_mock_a_thinking(x, b, path, t[0] == 'r');
        }

    } else if (t != NULL && strcmp(t, "tool_result") == 0) {
        return rg_mock_a_tool_result(x, b, path);
    }

    snprintf(msg, sizeof(msg), "Input tag '%.64s' found using 'type' does "
             "not match any of the expected tags: %s", t ? t : "",
             assistant ? "'text', 'image', 'tool_use', 'thinking', "
                         "'redacted_thinking'"
                       : "'text', 'image', 'tool_result'");

    return rg_mock_a_fail(x, path, NULL, msg);
}


static const char *
rg_mock_a_type(json_t *b)
{
    const char  *t;

    t = json_string_value(json_object_get(b, "type"));

    return t ? t : "";
}


/* The ids of the tool_use blocks of content not among the leading
 * tool_result blocks of next (NULL: none), as "id1, id2"; 0: none. */

static size_t
rg_mock_a_unanswered(json_t *content, json_t *next, char *ids, size_t size)
{
    size_t       i, k, used, len;
    json_t      *b, *r;
    const char  *id;

    used = 0;
    ids[0] = '\0';

    json_array_foreach(content, i, b) {
        if (strcmp(rg_mock_a_type(b), "tool_use") != 0) {
            continue;
        }

        id = json_string_value(json_object_get(b, "id"));

        json_array_foreach(next, k, r) {
            if (strcmp(rg_mock_a_type(r), "tool_result") != 0) {
                break;
            }

            if (strcmp(json_string_value(json_object_get(r, "tool_use_id")),
                       id) == 0)
            {
                break;
            }
        }

        if (k < json_array_size(next)
            && strcmp(rg_mock_a_type(json_array_get(next, k)), "tool_result")
               == 0)
        {
            continue;
        }

        len = rg_mock_utf8_cut(id, strlen(id), 100);

        if (used + len + 8 >= size) {
            used += snprintf(ids + used, size - used, ", ...");
            break;
        }

        used += snprintf(ids + used, size - used, "%s%.*s",
                         used ? ", " : "", (int) len, id);
    }

    return used;
}


/* Whether content (an assistant's) has a tool_use block with id. */

static int
rg_mock_a_has_use(json_t *content, const char *id)
{
    size_t   i;
    json_t  *b;

    json_array_foreach(content, i, b) {
        if (strcmp(rg_mock_a_type(b), "tool_use") == 0
            && strcmp(json_string_value(json_object_get(b, "id")), id) == 0)
        {
            return 1;
        }
    }

    return 0;
}


static rg_int_t
rg_mock_a_unpaired(rg_mock_a_t *x, size_t i, const char *ids)
{
    return rg_mock_fail(x->err, "messages", "messages.%zu: `tool_use` ids "
                        "were found without `tool_result` blocks "
                        "immediately after: %s. Each `tool_use` block must "
                        "have a corresponding `tool_result` block in the "
                        "next message.", i, ids);
}


/* The blocks of message i, and the pairing of its tool_result blocks with
 * the tool_use blocks of the message before (open). */

static rg_int_t
rg_mock_a_content(rg_mock_a_t *x, json_t *content, size_t i, int assistant,
    json_t *open)
{
    char         p[RG_MOCK_A_PATH];
    size_t       k, len;
    json_t      *b;
    const char  *id;

    json_array_foreach(content, k, b) {
        rg_mock_a_path(p, "messages.%zu.content.%zu", i, k);

        if (rg_mock_a_block(x, b, p, assistant) != RG_OK) {
            return RG_ERROR;
        }

        if (assistant || strcmp(rg_mock_a_type(b), "tool_result") != 0) {
            continue;
        }

        id = json_string_value(json_object_get(b, "tool_use_id"));

        if (open == NULL || !rg_mock_a_has_use(open, id)) {
            len = rg_mock_utf8_cut(id, strlen(id), 100);
            return rg_mock_fail(x->err, p, "%s: unexpected `tool_use_id` "
                                "found in `tool_result` blocks: %.*s. Each "
                                "`tool_result` block must have a "
                                "corresponding `tool_use` block in the "
                                "previous message.", p, (int) len, id);
        }
    }

    return RG_OK;
}


static rg_int_t
rg_mock_a_messages(rg_mock_a_t *x, json_t *messages)
{
    char         p[RG_MOCK_A_PATH], ids[1600];
    size_t       i, n, open_at;
    json_t      *m, *role, *content, *open;
    const char  *r;
    int          assistant, last;

    static const char  *keys[] = { "role", "content", NULL };

    n = json_array_size(messages);
    open = NULL;
    open_at = 0;

    for (i = 0; i < n; i++) {
        m = json_array_get(messages, i);
        rg_mock_a_path(p, "messages.%zu", i);

        if (rg_mock_a_object(x, m, p) != RG_OK) {
            return RG_ERROR;
        }

        role = json_object_get(m, "role");
        r = json_string_value(role);

        if (role == NULL) {
            return rg_mock_a_fail(x, p, "role", "Field required");
        }

        if (r != NULL && strcmp(r, "system") == 0) {
            return rg_mock_fail(x->err, "messages", "messages: Unexpected "
                                "role \"system\". The Messages API accepts a "
                                "top-level `system` parameter, not \"system\" "
                                "as an input message role.");
        }

        if (r == NULL || (strcmp(r, "user") != 0
                          && strcmp(r, "assistant") != 0))
        {
            return rg_mock_a_fail(x, p, "role",
                                  "Input should be 'user' or 'assistant'");
        }

        if (rg_mock_a_extra(x, m, p, keys) != RG_OK) {
            return RG_ERROR;
        }

        content = json_object_get(m, "content");
        if (content == NULL) {
            return rg_mock_a_fail(x, p, "content", "Field required");
        }

        assistant = strcmp(r, "assistant") == 0;
        last = i + 1 == n;

        if (i == 0 && assistant) {
            return rg_mock_fail(x->err, "messages", "messages: first "
                                "message must use the \"user\" role");
        }

        if (!json_is_string(content) && !json_is_array(content)) {
            return rg_mock_a_fail(x, p, "content",
                                  "Input should be a valid list");
        }

        if ((json_is_string(content) ? json_string_length(content)
                                     : json_array_size(content)) == 0
            && !(last && assistant))
        {
            return rg_mock_a_fail(x, p, NULL, "all messages must have "
                                  "non-empty content except for the "
                                  "optional final assistant message");
        }

        if (json_is_array(content)
            && rg_mock_a_content(x, content, i, assistant,
                                 assistant ? NULL : open) != RG_OK)
        {
            return RG_ERROR;
        }

        /* the tool_use blocks of the message before must be answered by
         * tool_result blocks leading this one */

        if (open != NULL
            && rg_mock_a_unanswered(open, assistant ? NULL : content, ids,
                                    sizeof(ids)) > 0)
        {
            return rg_mock_a_unpaired(x, open_at, ids);
        }

        open = NULL;

        if (assistant && json_is_array(content)) {
            open = content;
            open_at = i;
        }
    }

    if (open != NULL && rg_mock_a_unanswered(open, NULL, ids, sizeof(ids)) > 0)
    {
        return rg_mock_a_unpaired(x, open_at, ids);
    }

    return RG_OK;
}


/* With thinking on, the last assistant message, when it calls tools, must
 * start with its thinking. */

static rg_int_t
rg_mock_a_final_thinking(rg_mock_a_t *x, json_t *messages)
{
    size_t       i, k;
    json_t      *m, *content, *b;
    const char  *t;

    for (i = json_array_size(messages); i > 0; i--) {
        m = json_array_get(messages, i - 1);

        if (strcmp(json_string_value(json_object_get(m, "role")),
                   "assistant") == 0)
        {
            break;
        }
    }

    if (i == 0) {
        return RG_OK;
    }

    content = json_object_get(m, "content");

    json_array_foreach(content, k, b) {
        if (strcmp(rg_mock_a_type(b), "tool_use") == 0) {
            break;
        }
    }

    if (k == json_array_size(content)) {
        return RG_OK;
    }

    t = rg_mock_a_type(json_array_get(content, 0));

    if (strcmp(t, "thinking") == 0 || strcmp(t, "redacted_thinking") == 0) {
        return RG_OK;
    }

    return rg_mock_fail(x->err, "messages", "messages.%zu.content.0.type: "
                        "Expected `thinking` or `redacted_thinking`, but "
                        "found `%.32s`. When `thinking` is enabled, a final "
                        "`assistant` message must start with a thinking "
                        "block (preceeding the lastmost set of `tool_use` "
                        "and `tool_result` blocks). We recommend you include "
                        "thinking blocks from previous turns. To avoid this "
                        "requirement, disable `thinking`. Please consult our "
                        "documentation at https://docs.claude.com/en/docs/"
                        "build-with-claude/extended-thinking", i - 1, t);
}


static rg_int_t
rg_mock_a_system(rg_mock_a_t *x, json_t *system)
{
    char     p[RG_MOCK_A_PATH];
    size_t   k;
    json_t  *b, *t;

    if (system == NULL || json_is_string(system)) {
        return RG_OK;
    }

    if (!json_is_array(system)) {
        return rg_mock_a_fail(x, "system", NULL,
                              "Input should be a valid string");
    }

    json_array_foreach(system, k, b) {
        rg_mock_a_path(p, "system.%zu", k);

        if (rg_mock_a_object(x, b, p) != RG_OK) {
            return RG_ERROR;
        }

        t = json_object_get(b, "type");

        if (!json_is_string(t) || strcmp(json_string_value(t), "text") != 0)
        {
            return rg_mock_a_fail(x, p, "type", "Input should be 'text'");
        }

        if (rg_mock_a_text(x, b, p, "system") != RG_OK) {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


static rg_int_t
rg_mock_a_tools(rg_mock_a_t *x, json_t *tools)
{
    char         p[RG_MOCK_A_PATH];
    size_t       k, j;
    json_t      *t, *v, *name, *schema;
    const char  *s;

    static const char  *keys[] = {
        "type", "name", "description", "input_schema", "cache_control", NULL
    };

    if (tools == NULL) {
        return RG_OK;
    }

    if (!json_is_array(tools)) {
        return rg_mock_a_fail(x, "tools", NULL, "Input should be a valid list");
    }

    json_array_foreach(tools, k, t) {
        rg_mock_a_path(p, "tools.%zu", k);

        if (rg_mock_a_object(x, t, p) != RG_OK) {
            return RG_ERROR;
        }

        v = json_object_get(t, "type");
        s = json_string_value(v);

        if (v != NULL && !json_is_null(v)
            && (s == NULL || strcmp(s, "custom") != 0))
        {
            return rg_mock_a_fail(x, p, NULL, "Input tag found using 'type' "
                                  "does not match any of the expected tags: "
                                  "'custom'");
        }

        rg_mock_a_path(p, "tools.%zu.custom", k);

        if (rg_mock_a_extra(x, t, p, keys) != RG_OK
            || rg_mock_a_string(x, t, p, "name", 0, &name) != RG_OK
            || rg_mock_a_string(x, t, p, "description", 1, &v) != RG_OK)
        {
            return RG_ERROR;
        }

        if (!rg_mock_a_pattern(name, RG_MOCK_NAME_MAX)) {
            return rg_mock_a_fail(x, p, "name", "String should match pattern "
                                  "'^[a-zA-Z0-9_-]{1,64}$'");
        }

        schema = json_object_get(t, "input_schema");
        if (schema == NULL) {
            return rg_mock_a_fail(x, p, "input_schema", "Field required");
        }

        rg_mock_a_path(p, "tools.%zu.custom.input_schema", k);

        if (rg_mock_a_object(x, schema, p) != RG_OK) {
            return RG_ERROR;
        }

        v = json_object_get(schema, "type");

        if (!json_is_string(v) || strcmp(json_string_value(v), "object") != 0)
        {
            return rg_mock_a_fail(x, p, "type", "Input should be 'object'");
        }

        rg_mock_a_path(p, "tools.%zu.custom", k);

        if (rg_mock_a_cache_control(x, t, p) != RG_OK) {
            return RG_ERROR;
        }

        for (j = 0; j < k; j++) {
            if (json_equal(json_object_get(json_array_get(tools, j), "name"),
                           name))
            {
                return rg_mock_fail(x->err, "tools",
                                    "tools: Tool names must be unique.");
            }
        }
    }

    return RG_OK;
}


static rg_int_t
rg_mock_a_tool_choice(rg_mock_a_t *x, json_t *tc, const char **type)
{
    json_t      *v;
    const char  *t;

    *type = "auto";

    if (tc == NULL) {
        return RG_OK;
    }

    if (rg_mock_a_object(x, tc, "tool_choice") != RG_OK) {
        return RG_ERROR;
    }

    t = json_string_value(json_object_get(tc, "type"));

    if (t == NULL || (strcmp(t, "auto") != 0 && strcmp(t, "any") != 0
                      && strcmp(t, "tool") != 0 && strcmp(t, "none") != 0))
    {
        return rg_mock_a_fail(x, "tool_choice", NULL, "Input tag found using "
                              "'type' does not match any of the expected "
                              "tags: 'auto', 'any', 'tool', 'none'");
    }

    *type = t;

    v = json_object_get(tc, "disable_parallel_tool_use");
    if (v != NULL && !json_is_boolean(v)) {
        return rg_mock_a_fail(x, "tool_choice", "disable_parallel_tool_use",
                              "Input should be a valid boolean");
    }

    if (strcmp(t, "tool") == 0
        && rg_mock_a_string(x, tc, "tool_choice.tool", "name", 0, &v)
           != RG_OK)
    {
        return RG_ERROR;
    }

    return RG_OK;
}


/* thinking: {"type": "enabled", "budget_tokens": N >= 1024, < max_tokens}
 * or {"type": "disabled"}; sets x->think. */

static rg_int_t
rg_mock_a_thinking_conf(rg_mock_a_t *x, json_t *th, json_int_t max_tokens)
{
    json_t      *v;
    const char  *t;

    static const char  *enabled[] = { "type", "budget_tokens", NULL };
    static const char  *disabled[] = { "type", NULL };

    if (th == NULL) {
        return RG_OK;
    }

    if (rg_mock_a_object(x, th, "thinking") != RG_OK) {
        return RG_ERROR;
    }

    t = json_string_value(json_object_get(th, "type"));

    if (t != NULL && strcmp(t, "disabled") == 0) {
        return rg_mock_a_extra(x, th, "thinking.disabled", disabled);
    }

    if (t == NULL || strcmp(t, "enabled") != 0) {
        return rg_mock_a_fail(x, "thinking", NULL, "Input tag found using "
                              "'type' does not match any of the expected "
                              "tags: 'enabled', 'disabled'");
    }

    if (rg_mock_a_extra(x, th, "thinking.enabled", enabled) != RG_OK) {
        return RG_ERROR;
    }

    v = json_object_get(th, "budget_tokens");

    if (v == NULL) {
        return rg_mock_a_fail(x, "thinking.enabled", "budget_tokens",
                              "Field required");
    }

    if (!json_is_integer(v)) {
        return rg_mock_a_fail(x, "thinking.enabled", "budget_tokens",
                              "Input should be a valid integer");
    }

    if (json_integer_value(v) < 1024) {
        return rg_mock_a_fail(x, "thinking.enabled", "budget_tokens",
                              "Input should be greater than or equal to "
                              "1024");
    }

    if (json_integer_value(v) >= max_tokens) {
        return rg_mock_fail(x->err, "max_tokens", "`max_tokens` must be "
                            "greater than `thinking.budget_tokens`. Please "
                            "consult our documentation at https://docs."
                            "claude.com/en/docs/build-with-claude/extended-"
                            "thinking#max-tokens-and-context-window-size");
    }

    x->think = 1;

    return RG_OK;
}


/* The rest of the top level: types and ranges. */

static rg_int_t
rg_mock_a_options(rg_mock_a_t *x, json_t *root)
{
    size_t   k;
    json_t  *v, *s;

    v = json_object_get(root, "stream");
    if (v != NULL && !json_is_boolean(v)) {
        return rg_mock_a_fail(x, "stream", NULL,
                              "Input should be a valid boolean");
    }

    v = json_object_get(root, "temperature");
    if (v != NULL) {
        if (!json_is_number(v)) {
            return rg_mock_a_fail(x, "temperature", NULL,
                                  "Input should be a valid number");
        }

        if (json_number_value(v) < 0) {
            return rg_mock_a_fail(x, "temperature", NULL, "Input should be "
                                  "greater than or equal to 0");
        }

        if (json_number_value(v) > 1) {
            return rg_mock_a_fail(x, "temperature", NULL, "Input should be "
                                  "less than or equal to 1");
        }
    }

    v = json_object_get(root, "top_p");
    if (v != NULL && !json_is_number(v)) {
        return rg_mock_a_fail(x, "top_p", NULL,
                              "Input should be a valid number");
    }

    v = json_object_get(root, "top_k");
    if (v != NULL && !json_is_integer(v)) {
        return rg_mock_a_fail(x, "top_k", NULL,
                              "Input should be a valid integer");
    }

    v = json_object_get(root, "stop_sequences");
    if (v != NULL) {
        if (!json_is_array(v)) {
            return rg_mock_a_fail(x, "stop_sequences", NULL,
                                  "Input should be a valid list");
        }

        json_array_foreach(v, k, s) {
            if (!json_is_string(s)) {
                return rg_mock_fail(x->err, "stop_sequences",
                                    "stop_sequences.%zu: Input should be a "
                                    "valid string", k);
            }
        }
    }

    v = json_object_get(root, "metadata");
    if (v != NULL && !json_is_null(v)) {
        static const char  *keys[] = { "user_id", NULL };

        if (rg_mock_a_object(x, v, "metadata") != RG_OK
            || rg_mock_a_extra(x, v, "metadata", keys) != RG_OK
            || rg_mock_a_string(x, v, "metadata", "user_id", 1, &s) != RG_OK)
        {
            return RG_ERROR;
        }
    }

    v = json_object_get(root, "service_tier");
    if (v != NULL && (!json_is_string(v)
                      || (strcmp(json_string_value(v), "auto") != 0
                          && strcmp(json_string_value(v), "standard_only")
                             != 0)))
    {
        return rg_mock_a_fail(x, "service_tier", NULL,
                              "Input should be 'auto' or 'standard_only'");
    }

    return RG_OK;
}


static rg_int_t
rg_mock_a_validate(rg_mock_a_t *x, json_t *root)
{
    json_t      *v, *messages;
    json_int_t   max_tokens;
    const char  *choice;

    if (!json_is_object(root)) {
        return rg_mock_fail(x->err, NULL, "Input should be a valid "
                            "dictionary or object to extract fields from");
    }

    v = json_object_get(root, "model");
    if (v == NULL) {
        return rg_mock_a_fail(x, "model", NULL, "Field required");
    }

    if (!json_is_string(v)) {
        return rg_mock_a_fail(x, "model", NULL,
                              "Input should be a valid string");
    }

    messages = json_object_get(root, "messages");
    if (messages == NULL) {
        return rg_mock_a_fail(x, "messages", NULL, "Field required");
    }

    if (!json_is_array(messages)) {
        return rg_mock_a_fail(x, "messages", NULL,
                              "Input should be a valid list");
    }

    v = json_object_get(root, "max_tokens");
    if (v == NULL) {
        return rg_mock_a_fail(x, "max_tokens", NULL, "Field required");
    }

    if (!json_is_integer(v)) {
        return rg_mock_a_fail(x, "max_tokens", NULL,
                              "Input should be a valid integer");
    }

    max_tokens = json_integer_value(v);

    if (max_tokens < 1) {
        return rg_mock_a_fail(x, "max_tokens", NULL, "Input should be "
                              "greater than or equal to 1");
    }

    if (rg_mock_a_extra(x, root, "", rg_mock_a_top) != RG_OK
        || rg_mock_a_options(x, root) != RG_OK
        || rg_mock_a_system(x, json_object_get(root, "system")) != RG_OK
        || rg_mock_a_tools(x, json_object_get(root, "tools")) != RG_OK
        || rg_mock_a_tool_choice(x, json_object_get(root, "tool_choice"),
                                 &choice) != RG_OK
        || rg_mock_a_thinking_conf(x, json_object_get(root, "thinking"),
                                   max_tokens) != RG_OK)
    {
        return RG_ERROR;
    }

    if (x->think) {
        v = json_object_get(root, "temperature");

        if (v != NULL && json_number_value(v) != 1.0) {
            return rg_mock_fail(x->err, "temperature", "`temperature` may "
                                "only be set to 1 when thinking is enabled. "
                                "Please consult our documentation at https://"
                                "docs.claude.com/en/docs/build-with-claude/"
                                "extended-thinking#feature-compatibility");
        }

        if (strcmp(choice, "any") == 0 || strcmp(choice, "tool") == 0) {
            return rg_mock_fail(x->err, "tool_choice", "Thinking may not be "
                                "enabled when tool_choice forces tool use.");
        }
    }

    if (json_array_size(messages) == 0) {
        return rg_mock_fail(x->err, "messages", "messages: at least one "
                            "message is required");
    }

    if (rg_mock_a_messages(x, messages) != RG_OK
        || (x->think && rg_mock_a_final_thinking(x, messages) != RG_OK))
    {
        return RG_ERROR;
    }

    if (x->ncache > 4) {
        return rg_mock_fail(x->err, NULL, "A maximum of 4 blocks with "
                            "cache_control may be provided. Found %zu.",
                            x->ncache);
    }

    return RG_OK;
}


rg_int_t
rg_mock_anthropic_parse(rg_mock_conv_t *c, rg_mock_err_t *err)
{
    rg_mock_a_t  x;

    if (evhttp_find_header(evhttp_request_get_input_headers(c->http),
                           "anthropic-version") == NULL)
    {
        return rg_mock_fail(err, NULL,
                            "anthropic-version: header is required");
    }

    if (c->req == NULL) {
        return rg_mock_fail(err, NULL, "There was an error parsing the body "
                            "of your request: it is not valid JSON.");
    }

    memset(&x, 0, sizeof(rg_mock_a_t));
    x.err = err;

    if (rg_mock_a_validate(&x, c->req) != RG_OK) {
        return RG_ERROR;
    }

    c->think = x.think;
    c->one_call = json_is_true(json_object_get(json_object_get(c->req,
                      "tool_choice"), "disable_parallel_tool_use"));
    c->ascii_args = 1;
    c->call_prefix = "toolu_";

    c->root = rg_mock_anthropic_chat(c->req);
    if (c->root == NULL) {
        return rg_mock_fail(err, NULL, "rg_mock: out of memory");
    }

    return RG_OK;
}
