/* rg_llm_sse_chunk.c: the events of a streamed Chat Completions answer
 * (rg_llm_sse.c), one at a time: a chat.completion.chunk's deltas added
 * up per choice index and per tool call index (content, reasoning,
 * refusal, a call's id, name and arguments, by the ground rules of
 * shared/fixtures/providers/INDEX.md), its usage kept; an error event's
 * error kept. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json.h>
#include <rg_llm_json.h>
#include <rg_llm_sse.h>
#include <rg_llm_sse_int.h>


static json_t *
rg_llm_sse_load(rg_llm_sse_t *p, const char *s, size_t n, json_error_t *err)
{
    json_t  *root;

    root = json_loadb(s, n, JSON_ALLOW_NUL, err);

    /* integers beyond 64 bits (a "seed"): read them all as reals */
    if (root == NULL && json_error_code(err) == json_error_numeric_overflow) {
        root = json_loadb(s, n, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL,
                          err);
    }

    if (root == NULL && json_error_code(err) == json_error_out_of_memory) {
        p->nomem = 1;
    }

    return root;
}


/* an "index": a non-negative integer (or a real with no fraction) */
static int
rg_llm_sse_index(json_t *v, int64_t *index)
{
    double  d;

    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *index = (int64_t) json_integer_value(v);
        return 1;
    }

    if (json_is_real(v)) {
        d = json_real_value(v);

        if (d >= 0 && d < 9.0e15 && d == (double) (int64_t) d) {
            *index = (int64_t) d;
            return 1;
        }
    }

    return 0;
}


/* keeps v as JSON text in b, in place of what b held */
static void
rg_llm_sse_keep(rg_llm_sse_t *p, rg_buf_t *b, json_t *v)
{
    if (rg_llm_json_keep(b, v) != RG_OK) {
        p->nomem = 1;
    }
}


/* an "error" that says something: a non-empty object or string */
static int
rg_llm_sse_is_error(json_t *e)
{
    return (json_is_object(e) && json_object_size(e) > 0)
           || (json_is_string(e) && json_string_length(e) > 0);
}


/* a value rg_llm_openai_parse takes as the error's words */
static int
rg_llm_sse_has_text(json_t *v)
{
    return v != NULL && !json_is_null(v)
           && !(json_is_string(v) && json_string_length(v) == 0);
}


/* the text of an error event as its message: trimmed, at most
 * RG_LLM_SSE_TEXT_MAX bytes, not cut inside a character */
static json_t *
rg_llm_sse_text(const char *s, size_t n)
{
    json_t  *v;

    while (n > 0 && (*s == ' ' || *s == '\t' || *s == '\n')) {
        s++;
        n--;
    }

    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'
                     || s[n - 1] == '\n'))
    {
        n--;
    }

    if (n > RG_LLM_SSE_TEXT_MAX) {
        n = RG_LLM_SSE_TEXT_MAX;

        while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80) {
            n--;
        }
    }

    v = (n > 0) ? json_stringn(s, n) : NULL;

    return v ? v : json_string("the stream sent an error");
}


/* Keeps the first error of the stream. e is what the provider sent (an
 * object or a string); when it has no words, the payload s is the
 * message. */
static void
rg_llm_sse_error(rg_llm_sse_t *p, json_t *e, const char *s, size_t n)
{
    json_t  *copy;

    if (p->error.len > 0) {
        return;
    }

    if ((json_is_string(e) && json_string_length(e) > 0)
        || (json_is_object(e)
            && (rg_llm_sse_has_text(json_object_get(e, "message"))
                || rg_llm_sse_has_text(json_object_get(e, "detail")))))
    {
        rg_llm_sse_keep(p, &p->error, e);
        return;
    }

    copy = json_is_object(e) ? json_copy(e) : json_object();

    /* json_object_set_new() releases the value when it fails */
    if (json_object_set_new(copy, "message", rg_llm_sse_text(s, n)) != 0) {
        json_decref(copy);
        p->nomem = 1;
        return;
    }

    rg_llm_sse_keep(p, &p->error, copy);
    json_decref(copy);
}


/* usage from any chunk that has it (Groq: x_groq.usage); the last wins */
static void
rg_llm_sse_usage(rg_llm_sse_t *p, json_t *root)
{
    json_t  *u;

    u = json_object_get(root, "usage");

    if (!json_is_object(u)) {
        u = json_object_get(json_object_get(root, "x_groq"), "usage");
    }

    if (!json_is_object(u)) {
        return;
    }

    rg_llm_sse_keep(p, &p->usage, u);
}


/* the state of choice `index`, made when it is new */
static rg_llm_sse_choice_t *
rg_llm_sse_choice_get(rg_llm_sse_t *p, int64_t index)
{
    rg_uint_t             lo, hi, mid, n;
    rg_llm_sse_choice_t  *ch;

    lo = 0;
    hi = p->nchoices;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;

        if (p->choices[mid].index < index) {
            lo = mid + 1;

        } else {
            hi = mid;
        }
    }

    if (lo < p->nchoices && p->choices[lo].index == index) {
        return &p->choices[lo];
    }

    if (p->nchoices == RG_LLM_SSE_CHOICES) {
        p->overflow = 1;
        return NULL;
    }

    if (p->nchoices == p->nalloc) {
        n = p->nalloc ? 2 * p->nalloc : 1;

        ch = realloc(p->choices, n * sizeof(rg_llm_sse_choice_t));
        if (ch == NULL) {
            p->nomem = 1;
            return NULL;
        }

        p->choices = ch;
        p->nalloc = n;
    }

    ch = &p->choices[lo];

    memmove(ch + 1, ch, (p->nchoices - lo) * sizeof(rg_llm_sse_choice_t));
    memset(ch, 0, sizeof(rg_llm_sse_choice_t));
    ch->index = index;
    ch->drop_index = -1;
    p->nchoices++;

    return ch;
}


/* The call a tool_calls delta continues: the last one with its index.
 * A delta that brings an id other than the one that call has is a new
 * call with the same index (LiteLLM before Ollama numbers them all 0).
 * Past max_calls + 1 calls a new one is only counted (NULL): it will not
 * run, and keeping it would let one answer grow without bound. */
static rg_llm_sse_call_t *
rg_llm_sse_call_get(rg_llm_sse_t *p, rg_llm_sse_choice_t *ch, int64_t index,
    json_t *id)
{
    int                 has_id;
    rg_uint_t           lo, hi, mid, n;
    rg_llm_sse_call_t  *c;

    lo = 0;
    hi = ch->ncalls;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;

        if (ch->calls[mid].index <= index) {
            lo = mid + 1;

        } else {
            hi = mid;
        }
    }

    if (lo > 0 && ch->calls[lo - 1].index == index) {
        c = &ch->calls[lo - 1];

        if (c->id.len == 0 || !json_is_string(id)
            || json_string_length(id) == 0
            || (json_string_length(id) == c->id.len
                && memcmp(json_string_value(id), c->id.data, c->id.len)
                   == 0))
        {
            return c;
        }
    }

    if (ch->ncalls > p->max_calls) {
        has_id = json_is_string(id) && json_string_length(id) > 0;

        /* a continuation of the last dropped call brings no new id */
        if (index != ch->drop_index || (has_id && ch->drop_id)) {
            ch->dropped++;
            ch->drop_index = index;
            ch->drop_id = 0;
        }

        ch->drop_id |= has_id;

        return NULL;
    }

    if (ch->ncalls == ch->nalloc) {
        n = ch->nalloc ? 2 * ch->nalloc : 2;

        c = realloc(ch->calls, n * sizeof(rg_llm_sse_call_t));
        if (c == NULL) {
            p->nomem = 1;
            return NULL;
        }

        ch->calls = c;
        ch->nalloc = n;
    }

    c = &ch->calls[lo];

    memmove(c + 1, c, (ch->ncalls - lo) * sizeof(rg_llm_sse_call_t));
    memset(c, 0, sizeof(rg_llm_sse_call_t));
    c->index = index;
    ch->ncalls++;

    return c;
}


/* one entry of delta.tool_calls (or a legacy delta.function_call) */
static void
rg_llm_sse_call(rg_llm_sse_t *p, rg_llm_sse_choice_t *ch, int64_t index,
    json_t *id, json_t *fn)
{
    char               *s;
    json_t             *args;
    rg_llm_sse_call_t  *c;

    c = rg_llm_sse_call_get(p, ch, index, id);
    if (c == NULL) {
        return;
    }

    /* absent, null or "" never overwrite what was received */
    rg_llm_sse_set_str(p, &c->id, id);
    rg_llm_sse_set_str(p, &c->name, json_object_get(fn, "name"));

    args = json_object_get(fn, "arguments");

    if (args == NULL || json_is_null(args)) {
        return;
    }

    if (json_is_string(args)) {
        (void) rg_llm_sse_append_str(p, &c->arguments, args);
        return;
    }

    /* arguments sent as an object: its text */
    s = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL) {
        p->nomem = 1;
        return;
    }

    (void) rg_llm_sse_append(p, &c->arguments, s, strlen(s));
    rg_json_free_dump(s);
}


static void
rg_llm_sse_tool_calls(rg_llm_sse_t *p, rg_llm_sse_choice_t *ch, json_t *calls)
{
    size_t    i;
    json_t   *tc, *fn;
    int64_t   index;

    json_array_foreach(calls, i, tc) {
        if (!json_is_object(tc)) {
            continue;
        }

        /* no index (Mistral): its place in this delta */
        if (!rg_llm_sse_index(json_object_get(tc, "index"), &index)) {
            index = (int64_t) i;
        }

        fn = json_object_get(tc, "function");
        if (!json_is_object(fn)) {
            fn = tc;      /* name and arguments beside the id */
        }

        rg_llm_sse_call(p, ch, index, json_object_get(tc, "id"), fn);

        if (p->nomem || p->overflow) {
            return;
        }
    }
}


/* a "thinking" part: a string, or parts with a "text" (Magistral) */
static void
rg_llm_sse_thinking(rg_llm_sse_t *p, rg_buf_t *b, json_t *v)
{
    size_t   i;
    json_t  *part;

    if (!json_is_array(v)) {
        (void) rg_llm_sse_append_str(p, b, v);
        return;
    }

    json_array_foreach(v, i, part) {
        if (json_is_string(part)) {
            (void) rg_llm_sse_append_str(p, b, part);

        } else {
            (void) rg_llm_sse_append_str(p, b, json_object_get(part, "text"));
        }
    }
}


/* content as an array of parts: text parts to the content, thinking parts
 * to the reasoning, others (images, audio) dropped; as the codec does */
static void
rg_llm_sse_parts(rg_llm_sse_t *p, rg_llm_sse_choice_t *ch, json_t *parts)
{
    size_t       i;
    json_t      *part;
    const char  *type;

    json_array_foreach(parts, i, part) {
        if (json_is_string(part)) {
            (void) rg_llm_sse_append_str(p, &ch->content, part);
            continue;
        }

        type = json_string_value(json_object_get(part, "type"));

        if (type != NULL
            && (strcmp(type, "thinking") == 0
                || strcmp(type, "reasoning") == 0))
        {
            rg_llm_sse_thinking(p, &ch->reasoning,
                                json_object_get(part, type));
            (void) rg_llm_sse_append_str(p, &ch->reasoning,
                                         json_object_get(part, "text"));
            continue;
        }

        (void) rg_llm_sse_append_str(p, &ch->content,
                                     json_object_get(part, "text"));
    }
}


static void
rg_llm_sse_delta(rg_llm_sse_t *p, rg_llm_sse_choice_t *ch, json_t *delta)
{
    size_t   before;
    json_t  *v;

    before = ch->content.len;
    v = json_object_get(delta, "content");

    if (json_is_array(v)) {
        rg_llm_sse_parts(p, ch, v);

    } else {
        (void) rg_llm_sse_append_str(p, &ch->content, v);
    }

    /* the answer is the first choice: its text goes on as it comes */
    if (p->delta && ch == &p->choices[0] && ch->content.len > before) {
        p->delta(p->delta_data, before, ch->content.data + before,
                 ch->content.len - before);
    }

    v = json_object_get(delta, "reasoning_content");
    if (!json_is_string(v)) {
        v = json_object_get(delta, "reasoning");
    }

    (void) rg_llm_sse_append_str(p, &ch->reasoning, v);
    (void) rg_llm_sse_append_str(p, &ch->refusal,
                                 json_object_get(delta, "refusal"));

    v = json_object_get(delta, "tool_calls");

    if (json_is_array(v)) {
        rg_llm_sse_tool_calls(p, ch, v);
        return;
    }

    v = json_object_get(delta, "function_call");

    if (json_is_object(v)) {
        rg_llm_sse_call(p, ch, 0, NULL, v);      /* the legacy form */
    }
}


/* one chat.completion.chunk */
static void
rg_llm_sse_chunk(rg_llm_sse_t *p, const char *s, size_t n)
{
    size_t                i;
    json_t               *root, *e, *choices, *c, *delta;
    int64_t               index;
    json_error_t          err;
    rg_llm_sse_choice_t  *ch;

    for (i = 0; i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n'); i++) {
        /* void */
    }

    if (i == n) {
        return;          /* an empty event */
    }

    root = rg_llm_sse_load(p, s, n, &err);

    if (root == NULL) {
        if (!p->malformed && !p->nomem) {
            p->malformed = 1;

            rg_llm_json_why(p->bad, sizeof(p->bad), &err);
        }

        return;
    }

    if (!json_is_object(root)) {
        json_decref(root);
        return;          /* not a chunk; unknown things are ignored */
    }

    e = json_object_get(root, "error");

    if (rg_llm_sse_is_error(e)) {
        rg_llm_sse_error(p, e, s, n);
    }

    rg_llm_sse_usage(p, root);

    choices = json_object_get(root, "choices");

    json_array_foreach(choices, i, c) {
        if (!json_is_object(c)) {
            continue;
        }

        if (!rg_llm_sse_index(json_object_get(c, "index"), &index)) {
            index = (int64_t) i;
        }

        ch = rg_llm_sse_choice_get(p, index);
        if (ch == NULL) {
            break;
        }

        delta = json_object_get(c, "delta");
        if (!json_is_object(delta)) {
            delta = json_object_get(c, "message");
        }

        if (json_is_object(delta)) {
            rg_llm_sse_delta(p, ch, delta);
        }

        /* the last non-empty one: a repeated finish changes nothing */
        rg_llm_sse_set_str(p, &ch->finish_reason,
                           json_object_get(c, "finish_reason"));

        if (p->nomem || p->overflow) {
            break;
        }
    }

    json_decref(root);
}


/* the data of an `event: error` (or an `error:` line): JSON or text */
static void
rg_llm_sse_error_event(rg_llm_sse_t *p, const char *s, size_t n)
{
    json_t        *root, *e;
    json_error_t   err;

    root = rg_llm_sse_load(p, s, n, &err);
    e = NULL;

    if (json_is_object(root)) {
        e = json_object_get(root, "error");

        if (!rg_llm_sse_is_error(e)) {
            e = root;
        }

        rg_llm_sse_usage(p, root);

    } else if (json_is_string(root)) {
        e = root;
    }

    if (!p->nomem) {
        rg_llm_sse_error(p, e, s, n);
    }

    json_decref(root);
}


void
rg_llm_sse_dispatch(rg_llm_sse_t *p)
{
    if (p->ndata > 0 && !p->nomem) {
        if (p->error_event) {
            rg_llm_sse_error_event(p, p->data.data, p->data.len);

        } else {
            rg_llm_sse_chunk(p, p->data.data, p->data.len);
        }
    }

    p->ndata = 0;
    p->error_event = 0;
    rg_buf_reset(&p->data);
}
