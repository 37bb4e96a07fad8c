/* rg_llm_anthropic.c: the Anthropic Messages wire format (POST
 * /v1/messages, x-api-key, anthropic-version). Requests: the session's
 * system messages go to "system", every other message to blocks of
 * "messages" (a turn's tool results in one user message of tool_result
 * blocks, an error's with is_error), tools in Anthropic's shape, thinking
 * with its budget, and cache_control breakpoints on the system prompt,
 * the tools and the last user block. Answers: text, tool_use, thinking
 * and redacted_thinking blocks; a block that must go back as it came
 * (thinking, redacted_thinking, a server tool's) is kept in the message
 * (x_reagent.anthropic: each block's JSON text, in order) and sent back
 * byte for byte, the tool_use blocks made again from the calls the
 * session ran. Errors are read by rg_llm_openai_error(), whose
 * {"error":{type, message}} is Anthropic's shape too, and classified
 * there. No I/O. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json.h>
#include <rg_llm.h>
#include <rg_llm_conf.h>
#include <rg_llm_json.h>
#include <rg_llm_openai.h>
#include <rg_llm_anthropic.h>

#include <jansson.h>


/* what the body has open (rg_llm_body_t.section) */
#define RG_LLM_A_NONE       0
#define RG_LLM_A_SYSTEM     1
#define RG_LLM_A_MESSAGES   2

/* without a max_output_tokens: Anthropic asks for one */
#define RG_LLM_A_MAX_TOKENS 8192

static const char  rg_llm_anthropic_cache[] =
    ",\"cache_control\":{\"type\":\"ephemeral\"}";


/* A tool_use id as Anthropic takes them (^[a-zA-Z0-9_-]+$): an id made
 * by another provider has every other byte made '_', the same way in the
 * call and in its result, so that they still match. */
static json_t *
rg_llm_anthropic_id(const char *id, size_t len)
{
    char     buf[128], *p;
    size_t   i;
    json_t  *v;

    if (len == 0) {
        return json_string("call");
    }

    p = len < sizeof(buf) ? buf : malloc(len);
    if (p == NULL) {
        return NULL;
    }

    for (i = 0; i < len; i++) {
        p[i] = ((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z')
                || (id[i] >= '0' && id[i] <= '9') || id[i] == '_'
                || id[i] == '-') ? id[i] : '_';
    }

    v = json_stringn(p, len);

    if (p != buf) {
        free(p);
    }

    return v;
}


/* the same id written as a JSON string at the end of out */
static rg_int_t
rg_llm_anthropic_put_id(rg_buf_t *out, const char *id, size_t len)
{
    char      buf[128], *p;
    size_t    i;
    rg_int_t  rc;

    if (len == 0) {
        return rg_llm_json_lit(out, "\"call\"");
    }

    p = len < sizeof(buf) ? buf : malloc(len);
    if (p == NULL) {
        return RG_ERROR;
    }

    for (i = 0; i < len; i++) {
        p[i] = ((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z')
                || (id[i] >= '0' && id[i] <= '9') || id[i] == '_'
                || id[i] == '-') ? id[i] : '_';
    }

    rc = rg_llm_json_put(out, p, len);

    if (p != buf) {
        free(p);
    }

    return rc;
}


/* the bytes before the closing '}' of the object text t get the cache's
 * breakpoint */
static rg_int_t
rg_llm_anthropic_mark(rg_buf_t *b, size_t at)
{
    size_t  n;

    n = sizeof(rg_llm_anthropic_cache) - 1;

    if (at >= b->len || b->data[at] != '}'
        || rg_buf_reserve(b, n) != RG_OK)
    {
        return at < b->len ? RG_ERROR : RG_OK;
    }

    memmove(b->data + at + n, b->data + at, b->len - at + 1);
    memcpy(b->data + at, rg_llm_anthropic_cache, n);
    b->len += n;

    return RG_OK;
}


rg_int_t
rg_llm_anthropic_tool(rg_buf_t *out, const rg_llm_tool_t *t)
{
    return rg_llm_tool_json(out, t, NULL, "input_schema");
}


rg_int_t
rg_llm_anthropic_prefix(rg_buf_t *out, const rg_llm_prefix_t *p)
{
    int        err;
    json_t    *req;
    size_t     at;
    rg_int_t   rc, thinking, max;
    rg_uint_t  i;

    thinking = (p->llm && !p->summary) ? p->llm->thinking : 0;
    max = (p->llm && p->llm->max_output_tokens > 0)
          ? p->llm->max_output_tokens : RG_LLM_A_MAX_TOKENS;

    req = json_object();
    if (req == NULL) {
        return RG_ERROR;
    }

    err = json_object_set_new(req, "model", json_string(p->model));
    err |= json_object_set_new(req, "max_tokens", json_integer(max));

    if (thinking > 0) {
        /* thinking takes no temperature but its own */
        err |= json_object_set_new(req, "thinking",
                                   json_pack("{s:s, s:I}", "type", "enabled",
                                             "budget_tokens",
                                             (json_int_t) thinking));

    } else {
        err |= json_object_set_new(req, "temperature",
                                   rg_llm_json_number(p->temperature));
    }

    at = out->len;

    /* open: the body adds "tools", "system" and "messages" */
    if (rg_llm_json_open(out, req, err, p->stream) != RG_OK) {
        return RG_ERROR;
    }

    if (p->ntools == 0) {
        return RG_OK;
    }

    rc = rg_buf_append_lit(out, ",\"tools\":[");

    for (i = 0; rc == RG_OK && i < p->ntools; i++) {
        if (i) {
            rc = rg_buf_append_lit(out, ",");
        }

        if (rc == RG_OK) {
            rc = rg_buf_append(out, p->tools[i].data, p->tools[i].len);
        }
    }

    /* the tools are the start of the prompt: a breakpoint after them */
    if (rc == RG_OK && p->llm && p->llm->prompt_cache) {
        rc = rg_llm_anthropic_mark(out, out->len - 1);
    }

    if (rc == RG_OK) {
        rc = rg_buf_append_lit(out, "]");
    }

    return rg_llm_json_ended(out, at, rc);
}


/* a text block, none for an empty text */
static rg_int_t
rg_llm_anthropic_blocks(rg_buf_t *out, json_t *content)
{
    size_t   i;
    json_t  *part, *text;

    if (json_is_string(content)) {
        if (json_string_length(content) == 0) {
            return RG_OK;
        }

        if (out->len && rg_buf_append_lit(out, ",") != RG_OK) {
            return RG_ERROR;
        }

        return rg_llm_json_dump(out, json_pack("{s:s, s:O}", "type", "text",
                                               "text", content), 0);
    }

    json_array_foreach(content, i, part) {
        text = json_object_get(part, "text");

        if (rg_llm_anthropic_blocks(out, json_is_string(text) ? text : part)
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* a tool call of the session as a tool_use block */
static rg_int_t
rg_llm_anthropic_use(rg_buf_t *out, json_t *call)
{
    json_t      *fn, *input, *block, *id, *name;
    const char  *args;

    fn = json_object_get(call, "function");
    id = json_object_get(call, "id");
    name = json_object_get(fn, "name");
    args = json_string_value(json_object_get(fn, "arguments"));

    input = args ? json_loads(args, 0, NULL) : NULL;

    /* arguments that were never an object (a model's mistake, answered
     * as such at the time) go back as none */
    if (!json_is_object(input)) {
        json_decref(input);
        input = json_object();
    }

    block = json_pack("{s:s, s:o, s:s, s:o}", "type", "tool_use",
                      "id", rg_llm_anthropic_id(json_is_string(id)
                                                ? json_string_value(id) : "",
                                                json_string_length(id)),
                      "name", json_is_string(name) ? json_string_value(name)
                                                   : "",
                      "input", input);

    if (out->len && rg_buf_append_lit(out, ",") != RG_OK) {
        json_decref(block);
        return RG_ERROR;
    }

    return rg_llm_json_dump(out, block, block == NULL);
}


/* an assistant message: the blocks it came with, byte for byte, its
 * tool_use blocks made from the calls the session kept */
static rg_int_t
rg_llm_anthropic_assistant(rg_buf_t *out, json_t *msg)
{
    size_t       i, k, n;
    json_t      *calls, *kept, *v, *block;
    const char  *type;

    calls = json_object_get(msg, "tool_calls");
    n = json_array_size(calls);
    kept = json_object_get(json_object_get(msg, RG_LLM_EXT), "anthropic");
    k = 0;

    if (!json_is_array(kept)) {
        if (rg_llm_anthropic_blocks(out, json_object_get(msg, "content"))
            != RG_OK)
        {
            return RG_ERROR;
        }

        kept = NULL;
    }

    json_array_foreach(kept, i, v) {
        if (!json_is_string(v)) {
            continue;
        }

        block = json_loadb(json_string_value(v), json_string_length(v), 0,
                           NULL);
        type = json_string_value(json_object_get(block, "type"));

        if (type != NULL && strcmp(type, "tool_use") == 0) {
            json_decref(block);

            if (k < n
                && rg_llm_anthropic_use(out, json_array_get(calls, k++))
                   != RG_OK)
            {
                return RG_ERROR;
            }

            continue;
        }

        json_decref(block);

        if ((out->len && rg_buf_append_lit(out, ",") != RG_OK)
            || rg_buf_append(out, json_string_value(v), json_string_length(v))
               != RG_OK)
        {
            return RG_ERROR;
        }
    }

    for ( /* void */ ; k < n; k++) {
        if (rg_llm_anthropic_use(out, json_array_get(calls, k)) != RG_OK) {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* a message of the session made from its text, written without a
 * jansson value: the bytes rg_llm_anthropic_wire() would make of it */
rg_int_t
rg_llm_anthropic_text(rg_buf_t *out, uint8_t role, const char *tool_id,
    const char *text, size_t len, rg_uint_t is_error)
{
    size_t    at;
    rg_int_t  rc;

    at = out->len;

    if (role != 't') {
        if (len == 0) {
            return RG_OK;
        }

        rc = rg_llm_json_lit(out, "{\"type\":\"text\",\"text\":");
        rc |= rg_llm_json_put(out, text, len);
        rc |= rg_llm_json_lit(out, "}");

        return rg_llm_json_ended(out, at, rc);
    }

    rc = rg_llm_json_lit(out, "{\"type\":\"tool_result\",\"tool_use_id\":");
    rc |= rg_llm_anthropic_put_id(out, tool_id ? tool_id : "",
                                  tool_id ? strlen(tool_id) : 0);

    if (len) {
        rc |= rg_llm_json_lit(out, ",\"content\":");
        rc |= rg_llm_json_put(out, text, len);
    }

    if (is_error) {
        rc |= rg_llm_json_lit(out, ",\"is_error\":true");
    }

    rc |= rg_llm_json_lit(out, "}");

    return rg_llm_json_ended(out, at, rc);
}


/* a tool call of an answer as a tool_use block: its arguments, when they
 * are an object, as they are (a codec's dump of the input) */
static rg_int_t
rg_llm_anthropic_put_use(rg_buf_t *out, const rg_llm_tool_call_t *c)
{
    json_t    *input;
    rg_int_t   rc;

    /* an object's dump is one; other text is read to know */
    input = c->object ? NULL
                      : json_loadb(c->arguments.data, c->arguments.len, 0,
                                   NULL);

    rc = out->len ? rg_llm_json_lit(out, ",") : RG_OK;
    rc |= rg_llm_json_lit(out, "{\"type\":\"tool_use\",\"id\":");
    rc |= rg_llm_anthropic_put_id(out, c->id.data, c->id.len);
    rc |= rg_llm_json_lit(out, ",\"name\":");
    rc |= rg_llm_json_put(out, c->name.data, c->name.len);
    rc |= rg_llm_json_lit(out, ",\"input\":");

    if (c->object || json_is_object(input)) {
        rc |= rg_buf_append(out, c->arguments.data, c->arguments.len);
    } else {
        rc |= rg_llm_json_lit(out, "{}");
    }

    rc |= rg_llm_json_lit(out, "}");
    json_decref(input);

    return rc == RG_OK ? RG_OK : RG_ERROR;
}


/* the answer's piece of the next request, while it is at hand: what
 * rg_llm_anthropic_wire() would make of its message (content: the
 * answer's blocks; kept: their texts, NULL when only text and calls) */
static rg_int_t
rg_llm_anthropic_answer_wire(rg_pool_t *pool, json_t *content, json_t *kept,
    rg_llm_response_t *r)
{
    size_t       i, j;
    json_t      *block, *v;
    rg_int_t     rc;
    rg_buf_t     b;
    rg_uint_t    k;
    const char  *type;

    memset(&b, 0, sizeof(b));
    rc = RG_OK;
    j = 0;
    k = 0;

    json_array_foreach(content, i, block) {
        if (rc != RG_OK) {
            break;
        }

        if (!json_is_object(block)) {
            continue;
        }

        type = json_string_value(json_object_get(block, "type"));
        v = json_array_get(kept, j++);

        if (type != NULL && strcmp(type, "tool_use") == 0) {
            if (k < r->ncalls) {
                rc = rg_llm_anthropic_put_use(&b, &r->calls[k++]);
            }

            continue;
        }

        if (v == NULL) {
            /* a text block, as rg_llm_anthropic_text() makes one */
            v = json_object_get(block, "text");

            if (json_is_string(v) && json_string_length(v)) {
                rc = b.len ? rg_llm_json_lit(&b, ",") : RG_OK;
                rc |= rg_llm_json_lit(&b, "{\"type\":\"text\",\"text\":");
                rc |= rg_llm_json_put(&b, json_string_value(v),
                                      json_string_length(v));
                rc |= rg_llm_json_lit(&b, "}");
            }

            continue;
        }

        rc = b.len ? rg_llm_json_lit(&b, ",") : RG_OK;
        rc |= rg_buf_append(&b, json_string_value(v), json_string_length(v));
    }

    while (rc == RG_OK && k < r->ncalls) {
        rc = rg_llm_anthropic_put_use(&b, &r->calls[k++]);
    }

    if (rc == RG_OK) {
        rc = rg_llm_json_set(pool, &r->wire, b.data, b.len);
        r->has_wire = (rc == RG_OK);
    }

    rg_buf_free(&b);

    return rc == RG_OK ? RG_OK : RG_ERROR;
}


rg_int_t
rg_llm_anthropic_wire(rg_buf_t *out, uint8_t role, const char *msg,
    size_t len)
{
    json_t      *j, *block, *content, *id;
    rg_int_t     rc;

    j = json_loadb(msg, len, JSON_ALLOW_NUL, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        return RG_ERROR;
    }

    content = json_object_get(j, "content");

    switch (role) {

    case 'a':
        rc = rg_llm_anthropic_assistant(out, j);
        break;

    case 't':
        id = json_object_get(j, "tool_call_id");

        block = json_pack("{s:s, s:o}", "type", "tool_result", "tool_use_id",
                          rg_llm_anthropic_id(json_is_string(id)
                                              ? json_string_value(id) : "",
                                              json_string_length(id)));

        /* an empty result is no content at all: an empty text is refused */
        if (block && json_is_string(content)
            && json_string_length(content) > 0)
        {
            json_object_set(block, "content", content);
        }

        if (block
            && json_is_true(json_object_get(json_object_get(j, RG_LLM_EXT),
                                            "is_error")))
        {
            json_object_set_new(block, "is_error", json_true());
        }

        rc = rg_llm_json_dump(out, block, block == NULL);
        break;

    default:
        rc = rg_llm_anthropic_blocks(out, content);
        break;
    }

    json_decref(j);

    return rc;
}


/* the system blocks closed (the last marked for the cache) and the
 * messages opened, once */
static rg_int_t
rg_llm_anthropic_messages(rg_llm_body_t *bd)
{
    rg_int_t   rc;
    rg_buf_t  *b;

    b = bd->b;
    rc = RG_OK;

    if (bd->section == RG_LLM_A_SYSTEM) {
        if (bd->cache) {
            rc = rg_llm_anthropic_mark(b, bd->mark);
        }

        rc |= rg_buf_append_lit(b, "]");
        bd->mark = 0;
    }

    if (bd->section != RG_LLM_A_MESSAGES) {
        rc |= rg_buf_append_lit(b, ",\"messages\":[");
        bd->section = RG_LLM_A_MESSAGES;
        bd->open = 0;
    }

    return rc;
}


/* Pieces join into "system" and into "messages": consecutive pieces of
 * the user's side (a task, a turn's tool results, a summary) into one
 * user message, of the assistant's into one assistant message, as the
 * API itself merges them. bd->mark: where the last user block ends. */
rg_int_t
rg_llm_anthropic_body_add(rg_llm_body_t *bd, uint8_t role,
    const char *piece, size_t len)
{
    rg_int_t   rc;
    uint8_t    want;
    rg_buf_t  *b;

    b = bd->b;

    if (len == 0) {
        return RG_OK;
    }

    if (role == 's' && bd->section != RG_LLM_A_MESSAGES) {
        rc = (bd->section == RG_LLM_A_NONE)
             ? rg_buf_append_lit(b, ",\"system\":[")
             : rg_buf_append_lit(b, ",");

        bd->section = RG_LLM_A_SYSTEM;
        rc |= rg_buf_append(b, piece, len);
        bd->mark = b->len - 1;

        return rc == RG_OK ? RG_OK : RG_ERROR;
    }

    rc = rg_llm_anthropic_messages(bd);

    /* a system message after the conversation began is the user's */
    want = (role == 'a') ? 'a' : 'u';

    if (bd->open == want) {
        rc |= rg_buf_append_lit(b, ",");

    } else {
        if (bd->open) {
            rc |= rg_buf_append_lit(b, "]},");
        }

        rc |= (want == 'a')
              ? rg_buf_append_lit(b, "{\"role\":\"assistant\",\"content\":[")
              : rg_buf_append_lit(b, "{\"role\":\"user\",\"content\":[");
        bd->open = want;
    }

    rc |= rg_buf_append(b, piece, len);

    if (want == 'u') {
        bd->mark = b->len - 1;
    }

    return rc == RG_OK ? RG_OK : RG_ERROR;
}


rg_int_t
rg_llm_anthropic_body_end(rg_llm_body_t *bd)
{
    rg_int_t   rc;
    rg_buf_t  *b;

    b = bd->b;
    rc = rg_llm_anthropic_messages(bd);

    if (bd->open) {
        rc |= rg_buf_append_lit(b, "]}");
    }

    /* the conversation so far is the next request's prefix: it is read
     * from the cache then, and only what follows is new */
    if (bd->cache && bd->mark) {
        rc |= rg_llm_anthropic_mark(b, bd->mark);
    }

    rc |= rg_buf_append_lit(b, "]}");

    return rc == RG_OK ? RG_OK : RG_ERROR;
}


/* Anthropic counts input apart from what it read from or wrote to the
 * cache; the session counts them all as the prompt */
static void
rg_llm_anthropic_usage(json_t *usage, rg_llm_response_t *r)
{
    int      found;
    int64_t  input, read, write;

    input = rg_llm_json_int(json_object_get(usage, "input_tokens"), &found);
    read = rg_llm_json_int(json_object_get(usage, "cache_read_input_tokens"),
                           &found);
    write = rg_llm_json_int(json_object_get(usage,
                                            "cache_creation_input_tokens"),
                            &found);

    r->prompt_tokens = rg_max(input, 0) + rg_max(read, 0)
                       + rg_max(write, 0);
    r->cached_tokens = rg_max(read, 0);
    r->cache_write_tokens = rg_max(write, 0);
    r->completion_tokens = rg_llm_json_int(json_object_get(usage,
                                                           "output_tokens"),
                                           &found);
    r->total_tokens = r->prompt_tokens + r->completion_tokens;
}


rg_int_t
rg_llm_anthropic_message(rg_pool_t *pool, json_t *msg,
    const rg_llm_answer_t *a, rg_llm_response_t *r)
{
    size_t               i, total, keep, special;
    json_t              *content, *block, *kept;
    rg_int_t             rc;
    rg_buf_t             text, reasoning;
    const char          *type;
    rg_llm_tool_call_t  *c;

    content = json_object_get(msg, "content");

    if (!json_is_array(content)) {
        return rg_llm_json_bad(pool, r, "response has no content", NULL);
    }

    rg_llm_anthropic_usage(json_object_get(msg, "usage"), r);

    if (rg_llm_json_get(pool, &r->finish_reason,
                        json_object_get(msg, "stop_reason")) != RG_OK)
    {
        return RG_ERROR;
    }

    rg_llm_json_count(content, "tool_use", "text", &total, &special);

    if (rg_llm_json_calls(pool, total, a->max_calls, &keep, r) != RG_OK) {
        return RG_ERROR;
    }

    memset(&text, 0, sizeof(rg_buf_t));
    memset(&reasoning, 0, sizeof(rg_buf_t));

    /* only text and tool calls: the message says it all, nothing kept */
    kept = special ? json_array() : NULL;
    rc = (kept || !special) ? RG_OK : RG_ERROR;

    json_array_foreach(content, i, block) {
        if (rc != RG_OK) {
            break;
        }

        if (!json_is_object(block)) {
            continue;
        }

        type = json_string_value(json_object_get(block, "type"));
        if (type == NULL) {
            type = "";
        }

        /* every block is kept, in order, to go back as it came */
        if (kept && rg_llm_json_kept_add(kept, block) != RG_OK) {
            rc = RG_ERROR;
            break;
        }

        if (strcmp(type, "text") == 0) {
            rc = rg_llm_json_append(&text, json_object_get(block, "text"));

        } else if (strcmp(type, "tool_use") == 0) {
            if (r->ncalls == keep) {
                continue;
            }

            c = &r->calls[r->ncalls];
            rg_llm_json_empty(&c->id);
            rg_llm_json_empty(&c->name);

            rc = rg_llm_json_get(pool, &c->id, json_object_get(block, "id"));
            rc |= rg_llm_json_get(pool, &c->name,
                                  json_object_get(block, "name"));
            rc |= rg_llm_json_arguments(pool, &c->arguments,
                                        json_object_get(block, "input"));
            c->object = json_is_object(json_object_get(block, "input"));
            r->ncalls++;

        } else if (strcmp(type, "thinking") == 0) {
            rc = rg_llm_json_append(&reasoning,
                                    json_object_get(block, "thinking"));
            r->nopaque++;

        } else {
            /* redacted_thinking, a server tool's use and result */
            r->nopaque += (strcmp(type, "redacted_thinking") == 0);
        }
    }

    if (rc == RG_OK) {
        rc = rg_llm_json_set(pool, &r->content, text.data, text.len);
        rc |= rg_llm_json_set(pool, &r->reasoning, reasoning.data,
                              reasoning.len);
    }

    /* only text and tool calls: the message says it all already */
    if (rc == RG_OK && special) {
        rc = rg_llm_json_kept_set(pool, kept, r);
    }

    rg_buf_free(&text);
    rg_buf_free(&reasoning);

    if (rc != RG_OK) {
        json_decref(kept);
        return RG_ERROR;
    }

    /* a refusal's words: its text, or what stop_details explains */
    if (rg_str_eq(&r->finish_reason, "refusal")) {
        r->refusal = r->content;

        if (r->refusal.len == 0
            && rg_llm_json_get(pool, &r->refusal,
                               json_object_get(json_object_get(msg,
                                                   "stop_details"),
                                               "explanation")) != RG_OK)
        {
            json_decref(kept);
            return RG_ERROR;
        }
    }

    r->has_content = (r->content.len > 0);
    r->status = RG_LLM_OK;

    if (rg_llm_json_ids(pool, a->id_prefix, r) != RG_OK
        || rg_llm_answer_end(pool, "anthropic", r) != RG_OK
        || rg_llm_anthropic_answer_wire(pool, content, kept, r) != RG_OK)
    {
        json_decref(kept);
        return RG_ERROR;
    }

    json_decref(kept);

    return RG_OK;
}


rg_int_t
rg_llm_anthropic_error(rg_pool_t *pool, json_t *root, int http_status,
    const char *body, size_t len, const rg_llm_hints_t *hints,
    rg_llm_response_t *r)
{
    return rg_llm_openai_error(pool, root, http_status, body, len, hints, r);
}


rg_int_t
rg_llm_anthropic_read(rg_pool_t *pool, const rg_llm_answer_t *a,
    rg_llm_response_t *r)
{
    json_t        *root, *e;
    rg_int_t       rc;
    json_error_t   err;

    rg_llm_response_init(r, a->http_status);

    root = rg_llm_json_load(a->body, a->len, &err);

    if (a->http_status < 200 || a->http_status > 299) {
        rc = rg_llm_anthropic_error(pool, root, a->http_status, a->body,
                                    a->len, a->hints, r);

    } else if (root == NULL) {
        rc = rg_llm_json_bad(pool, r, "malformed response from the model: ",
                             err.text);

    } else if (!json_is_object(root)) {
        rc = rg_llm_json_bad(pool, r, "response has no content", NULL);

    } else {
        e = json_object_get(root, "error");

        /* an error after the 200: a proxy's, or the API's own shape */
        if ((json_is_object(e) && json_object_size(e) > 0)
            || (json_is_string(e) && json_string_length(e) > 0))
        {
            rc = rg_llm_anthropic_error(pool, root, a->http_status, a->body,
                                        a->len,
                                        a->hints, r);

        } else {
            rc = rg_llm_anthropic_message(pool, root, a, r);
        }
    }

    json_decref(root);

    return rc;
}
