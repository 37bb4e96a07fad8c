/* rg_llm_sse.c: reads a streamed Chat Completions answer. Frames the
 * text/event-stream (LF, CRLF or CR line ends, comments, `event:`,
 * `data:` lines joined until a blank line, `data: [DONE]`) and adds up the
 * chat.completion.chunk deltas per choice index and per tool call index,
 * by the ground rules of shared/fixtures/providers/INDEX.md. At the end it
 * writes the ordinary chat.completion those chunks amount to and hands it
 * to rg_llm_openai_parse(), so that classification, generated ids and the
 * assistant message are the codec's own; then it adds what only a stream
 * can say: an error sent after the 200, a stream cut short.
 *
 * Owns its buffers (malloc'ed, freed by rg_llm_sse_destroy). No jansson
 * value outlives the call that made it, so a caller may wrap any call in
 * a jansson arena (rg_json.h): what is kept between chunks (the last
 * usage, the first error) is kept as JSON text. Does no I/O, knows of
 * HTTP only the status it is given, and writes no JSON by hand: jansson
 * parses every chunk and serializes the result. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json.h>
#include <rg_llm_openai.h>
#include <rg_llm_sse.h>

#include <jansson.h>


/* bytes of the body kept to read it whole when it is not a stream */
#define RG_LLM_SSE_RAW_KEEP    4096

/* how much of an error event that is not JSON becomes the message */
#define RG_LLM_SSE_TEXT_MAX    200

/* what the body turned out to be */
#define RG_LLM_SSE_UNKNOWN     0     /* nothing but blanks yet */
#define RG_LLM_SSE_STREAM      1
#define RG_LLM_SSE_BODY        2     /* a JSON document, not a stream */

#define rg_llm_sse_field(s, n, lit)                                          \
    ((n) == sizeof(lit) - 1 && memcmp(s, lit, sizeof(lit) - 1) == 0)


typedef struct {
    int64_t               index;
    rg_buf_t              id;
    rg_buf_t              name;
    rg_buf_t              arguments;
} rg_llm_sse_call_t;


typedef struct {
    int64_t               index;
    rg_buf_t              content;
    rg_buf_t              reasoning;
    rg_buf_t              refusal;
    rg_buf_t              finish_reason;
    rg_llm_sse_call_t    *calls;       /* by index, then by arrival */
    rg_uint_t             ncalls;
    rg_uint_t             nalloc;
    rg_uint_t             dropped;     /* calls past the cap, counted */
    int64_t               drop_index;  /* of the last one dropped */
    unsigned              drop_id:1;   /* it came with an id */
} rg_llm_sse_choice_t;


struct rg_llm_sse_s {
    rg_buf_t              line;        /* a line not ended yet */
    rg_buf_t              data;        /* the data lines of this event */
    rg_buf_t              raw;         /* the first bytes of the body */
    size_t                total;
    rg_uint_t             max_calls;   /* kept per choice: this + 1 */
    rg_uint_t             ndata;       /* data lines in this event */
    rg_uint_t             nlines;

    rg_llm_sse_choice_t  *choices;     /* by index */
    rg_uint_t             nchoices;
    rg_uint_t             nalloc;

    rg_llm_delta_pt       delta;       /* the answer's text as it comes */
    void                 *delta_data;

    rg_buf_t              usage;       /* the last one sent, as JSON */
    rg_buf_t              error;       /* the first one sent, as JSON */
    char                  bad[JSON_ERROR_TEXT_LENGTH]; /* the first */

    unsigned              mode:2;
    unsigned              cr:1;        /* a line ended with CR: skip a LF */
    unsigned              error_event:1;
    unsigned              stream:1;    /* a line of SSE was seen */
    unsigned              done:1;
    unsigned              ended:1;     /* finish has run */
    unsigned              nomem:1;
    unsigned              too_large:1;
    unsigned              malformed:1;
    unsigned              overflow:1;
};


static void rg_llm_sse_frame(rg_llm_sse_t *p, const char *data, size_t len);
static void rg_llm_sse_line(rg_llm_sse_t *p, const char *s, size_t n);
static void rg_llm_sse_dispatch(rg_llm_sse_t *p);


rg_llm_sse_t *
rg_llm_sse_create(rg_uint_t max_calls)
{
    rg_llm_sse_t  *p;

    p = calloc(1, sizeof(rg_llm_sse_t));
    if (p == NULL) {
        return NULL;
    }

    p->max_calls = (max_calls == 0 || max_calls > RG_LLM_MAX_CALLS)
                   ? RG_LLM_MAX_CALLS : max_calls;

    return p;
}


static void
rg_llm_sse_choice_free(rg_llm_sse_choice_t *ch)
{
    rg_uint_t  i;

    for (i = 0; i < ch->ncalls; i++) {
        rg_buf_free(&ch->calls[i].id);
        rg_buf_free(&ch->calls[i].name);
        rg_buf_free(&ch->calls[i].arguments);
    }

    free(ch->calls);
    rg_buf_free(&ch->content);
    rg_buf_free(&ch->reasoning);
    rg_buf_free(&ch->refusal);
    rg_buf_free(&ch->finish_reason);
}


void
rg_llm_sse_destroy(rg_llm_sse_t *p)
{
    rg_uint_t  i;

    if (p == NULL) {
        return;
    }

    for (i = 0; i < p->nchoices; i++) {
        rg_llm_sse_choice_free(&p->choices[i]);
    }

    free(p->choices);
    rg_buf_free(&p->usage);
    rg_buf_free(&p->error);
    rg_buf_free(&p->line);
    rg_buf_free(&p->data);
    rg_buf_free(&p->raw);
    free(p);
}


rg_uint_t
rg_llm_sse_done(rg_llm_sse_t *p)
{
    return p->done;
}


static rg_int_t
rg_llm_sse_append(rg_llm_sse_t *p, rg_buf_t *b, const char *s, size_t n)
{
    if (n == 0 || p->nomem) {
        return p->nomem ? RG_ERROR : RG_OK;
    }

    if (rg_buf_append(b, s, n) != RG_OK) {
        p->nomem = 1;
        return RG_ERROR;
    }

    return RG_OK;
}


/* the text of a JSON string; anything else adds nothing */
static rg_int_t
rg_llm_sse_append_str(rg_llm_sse_t *p, rg_buf_t *b, json_t *v)
{
    if (!json_is_string(v)) {
        return RG_OK;
    }

    return rg_llm_sse_append(p, b, json_string_value(v),
                             json_string_length(v));
}


/* a non-empty string replaces what b held: ids, names, finish_reason */
static void
rg_llm_sse_set_str(rg_llm_sse_t *p, rg_buf_t *b, json_t *v)
{
    if (!json_is_string(v) || json_string_length(v) == 0) {
        return;
    }

    rg_buf_reset(b);
    (void) rg_llm_sse_append_str(p, b, v);
}


rg_int_t
rg_llm_sse_feed(rg_llm_sse_t *p, const char *data, size_t len)
{
    size_t  i, keep;

    if (p->nomem || p->too_large) {
        return RG_ERROR;
    }

    if (len > RG_LLM_SSE_MAX - p->total) {
        p->too_large = 1;
        return RG_ERROR;
    }

    p->total += len;

    if (p->ended || len == 0) {
        return RG_OK;
    }

    if (p->mode == RG_LLM_SSE_UNKNOWN) {
        for (i = 0; i < len; i++) {
            if (data[i] != ' ' && data[i] != '\t' && data[i] != '\r'
                && data[i] != '\n')
            {
                break;
            }
        }

        if (i == len) {
            return rg_llm_sse_append(p, &p->raw, data, len);
        }

        if (data[i] == '{' || data[i] == '[') {
            p->mode = RG_LLM_SSE_BODY;

        } else {
            p->mode = RG_LLM_SSE_STREAM;

            if (p->raw.len > 0) {
                /* the blank lines before it */
                rg_llm_sse_frame(p, p->raw.data, p->raw.len);
            }
        }
    }

    if (p->mode == RG_LLM_SSE_BODY) {
        return rg_llm_sse_append(p, &p->raw, data, len);
    }

    /* the first bytes, however they are split, and after [DONE] too */
    if (p->raw.len < RG_LLM_SSE_RAW_KEEP) {
        keep = rg_min(len, RG_LLM_SSE_RAW_KEEP - p->raw.len);

        if (rg_llm_sse_append(p, &p->raw, data, keep) != RG_OK) {
            return RG_ERROR;
        }
    }

    if (!p->done) {
        rg_llm_sse_frame(p, data, len);
    }

    return p->nomem ? RG_ERROR : RG_OK;
}


/* Cuts data into lines; a line split between two feeds waits in p->line.
 * A CR at the end of one feed and a LF at the start of the next are one
 * line end. */
static void
rg_llm_sse_frame(rg_llm_sse_t *p, const char *data, size_t len)
{
    const char  *s, *e, *end;

    s = data;
    end = data + len;

    while (s < end && !p->done && !p->nomem) {

        if (p->cr) {
            p->cr = 0;

            if (*s == '\n') {
                s++;
                continue;
            }
        }

        for (e = s; e < end && *e != '\n' && *e != '\r'; e++) {
            /* void */
        }

        if (e == end) {
            (void) rg_llm_sse_append(p, &p->line, s, (size_t) (end - s));
            return;
        }

        if (p->line.len == 0) {
            rg_llm_sse_line(p, s, (size_t) (e - s));

        } else if (rg_llm_sse_append(p, &p->line, s, (size_t) (e - s))
                   == RG_OK)
        {
            rg_llm_sse_line(p, p->line.data, p->line.len);
            rg_buf_reset(&p->line);
        }

        p->cr = (*e == '\r');
        s = e + 1;
    }
}


/* `data: [DONE]`, spaces after it forgiven */
static int
rg_llm_sse_is_done(const char *v, size_t n)
{
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t')) {
        n--;
    }

    return rg_llm_sse_field(v, n, "[DONE]");
}


/* one line, without its end */
static void
rg_llm_sse_line(rg_llm_sse_t *p, const char *s, size_t n)
{
    size_t       fn, vn;
    const char  *colon, *v;

    if (p->nlines++ == 0 && n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
        s += 3;          /* a byte order mark */
        n -= 3;
    }

    if (n == 0) {
        rg_llm_sse_dispatch(p);
        return;
    }

    if (s[0] == ':') {
        p->stream = 1;   /* a comment: keep-alive, "OPENROUTER PROCESSING" */
        return;
    }

    colon = memchr(s, ':', n);

    if (colon != NULL) {
        fn = (size_t) (colon - s);
        v = colon + 1;
        vn = n - fn - 1;

        if (vn > 0 && *v == ' ') {
            v++;
            vn--;
        }

    } else {
        fn = n;
        v = s + n;
        vn = 0;
    }

    if (rg_llm_sse_field(s, fn, "data")) {
        p->stream = 1;

        if (rg_llm_sse_is_done(v, vn)) {
            /* the end, even without the blank line after it */
            rg_llm_sse_dispatch(p);
            p->done = 1;
            return;
        }

    } else if (rg_llm_sse_field(s, fn, "error")) {
        /* llama.cpp: `error: {...}`, an error event in one line */
        p->stream = 1;
        p->error_event = 1;

    } else {
        if (rg_llm_sse_field(s, fn, "event")) {
            p->stream = 1;
            p->error_event = rg_llm_sse_field(v, vn, "error");

        } else if (rg_llm_sse_field(s, fn, "id")
                   || rg_llm_sse_field(s, fn, "retry"))
        {
            p->stream = 1;
        }

        return;          /* other fields are ignored */
    }

    if (p->ndata++ > 0) {
        (void) rg_llm_sse_append(p, &p->data, "\n", 1);
    }

    (void) rg_llm_sse_append(p, &p->data, v, vn);
}


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
    char  *s;

    s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL) {
        p->nomem = 1;
        return;
    }

    rg_buf_reset(b);
    (void) rg_llm_sse_append(p, b, s, strlen(s));
    rg_json_free_dump(s);
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
    char                 *b;
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

            /* jansson's words quote the chunk: printable ASCII only */
            for (b = p->bad, i = 0; err.text[i] && i < sizeof(p->bad) - 1;
                 i++)
            {
                *b++ = (err.text[i] >= ' ' && err.text[i] < 0x7f)
                       ? err.text[i] : '?';
            }

            *b = '\0';
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


static void
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


rg_int_t
rg_llm_sse_choice(rg_llm_sse_t *p, rg_uint_t index, rg_str_t *content,
    rg_str_t *finish_reason)
{
    rg_uint_t             i;
    rg_llm_sse_choice_t  *ch;

    for (i = 0; i < p->nchoices; i++) {
        ch = &p->choices[i];

        if (ch->index < 0 || (uint64_t) ch->index != (uint64_t) index) {
            continue;
        }

        content->len = ch->content.len;
        content->data = ch->content.len ? ch->content.data : (char *) "";
        finish_reason->len = ch->finish_reason.len;
        finish_reason->data = ch->finish_reason.len ? ch->finish_reason.data
                                                    : (char *) "";
        return RG_OK;
    }

    return RG_DECLINED;
}


/* a JSON string of a buffer, NULL when empty */
static json_t *
rg_llm_sse_json_str(rg_buf_t *b)
{
    return b->len ? json_stringn(b->data, b->len) : NULL;
}


/* the choice as a non-streamed response has it */
static json_t *
rg_llm_sse_choice_json(rg_llm_sse_choice_t *ch)
{
    int                 err;
    json_t             *choice, *msg, *calls, *call, *fn, *v;
    rg_uint_t           i;
    rg_llm_sse_call_t  *c;

    msg = json_object();
    err = json_object_set_new(msg, "role", json_string("assistant"));

    v = rg_llm_sse_json_str(&ch->content);
    err |= json_object_set_new(msg, "content", v ? v : json_null());

    if (ch->reasoning.len) {
        err |= json_object_set_new(msg, "reasoning_content",
                                   rg_llm_sse_json_str(&ch->reasoning));
    }

    if (ch->refusal.len) {
        err |= json_object_set_new(msg, "refusal",
                                   rg_llm_sse_json_str(&ch->refusal));
    }

    if (ch->ncalls) {
        calls = json_array();

        for (i = 0; calls != NULL && err == 0 && i < ch->ncalls; i++) {
            c = &ch->calls[i];

            /* no id, no name: the codec makes an id, keeps the name "" */
            fn = json_object();

            if (c->name.len) {
                err |= json_object_set_new(fn, "name",
                                           rg_llm_sse_json_str(&c->name));
            }

            err |= json_object_set_new(fn, "arguments",
                       json_stringn(c->arguments.len ? c->arguments.data : "",
                                    c->arguments.len));

            call = json_object();

            if (c->id.len) {
                err |= json_object_set_new(call, "id",
                                           rg_llm_sse_json_str(&c->id));
            }

            err |= json_object_set_new(call, "type", json_string("function"));
            err |= json_object_set_new(call, "function", fn);
            err |= json_array_append_new(calls, call);
        }

        err |= json_object_set_new(msg, "tool_calls", calls);
    }

    choice = json_object();

    err |= json_object_set_new(choice, "index", json_integer(0));
    err |= json_object_set_new(choice, "message", msg);

    v = rg_llm_sse_json_str(&ch->finish_reason);
    err |= json_object_set_new(choice, "finish_reason", v ? v : json_null());

    if (err) {
        json_decref(choice);
        return NULL;
    }

    return choice;
}


/* The chat.completion the stream adds up to, serialized: the answer
 * (choice 0, or the lowest index sent), the last usage, the first
 * error. Other choices are left out: the codec reads only the answer.
 * The text is freed with rg_json_free_dump(). */
static char *
rg_llm_sse_body(rg_llm_sse_t *p)
{
    int      err;
    char    *s;
    json_t  *root, *choices;

    root = json_object();
    err = json_object_set_new(root, "object", json_string("chat.completion"));

    choices = json_array();

    if (p->nchoices) {
        err |= json_array_append_new(choices,
                                     rg_llm_sse_choice_json(&p->choices[0]));
    }

    err |= json_object_set_new(root, "choices", choices);

    if (p->usage.len) {
        err |= json_object_set_new(root, "usage",
                                   json_loadb(p->usage.data, p->usage.len,
                                              JSON_DECODE_ANY
                                              | JSON_ALLOW_NUL, NULL));
    }

    if (p->error.len) {
        err |= json_object_set_new(root, "error",
                                   json_loadb(p->error.data, p->error.len,
                                              JSON_DECODE_ANY
                                              | JSON_ALLOW_NUL, NULL));
    }

    s = err ? NULL : json_dumps(root, JSON_COMPACT);
    json_decref(root);

    return s;
}


static rg_int_t
rg_llm_sse_copy(rg_pool_t *pool, rg_str_t *dst, rg_buf_t *b)
{
    if (b->len == 0) {
        dst->len = 0;
        dst->data = (char *) "";
        return RG_OK;
    }

    dst->data = rg_pstrdup(pool, b->data, b->len);
    if (dst->data == NULL) {
        return RG_ERROR;
    }

    dst->len = b->len;

    return RG_OK;
}


/* a response that failed: what arrived before, nothing to act on */
static rg_int_t
rg_llm_sse_partial(rg_llm_sse_t *p, rg_pool_t *pool, rg_llm_response_t *r)
{
    rg_llm_sse_choice_t  *ch;

    r->message.len = 0;
    r->message.data = (char *) "";
    r->calls = NULL;
    r->ncalls = 0;
    r->calls_over = 0;

    if (p->nchoices == 0) {
        return RG_OK;
    }

    ch = &p->choices[0];

    if (rg_llm_sse_copy(pool, &r->content, &ch->content) != RG_OK
        || rg_llm_sse_copy(pool, &r->reasoning, &ch->reasoning) != RG_OK
        || rg_llm_sse_copy(pool, &r->refusal, &ch->refusal) != RG_OK
        || rg_llm_sse_copy(pool, &r->finish_reason, &ch->finish_reason)
           != RG_OK)
    {
        return RG_ERROR;
    }

    r->has_content = (r->content.len > 0);

    return RG_OK;
}


/* a stream we cannot use: RG_LLM_ERR_BAD_RESPONSE with our words */
static rg_int_t
rg_llm_sse_bad(rg_pool_t *pool, rg_llm_response_t *r, const char *text,
    const char *detail)
{
    size_t   n, m;
    char    *s;

    n = strlen(text);
    m = (detail != NULL) ? strlen(detail) : 0;

    s = rg_palloc(pool, n + m + 1);
    if (s == NULL) {
        return RG_ERROR;
    }

    memcpy(s, text, n);
    if (m) {
        memcpy(s + n, detail, m);
    }
    s[n + m] = '\0';

    r->status = RG_LLM_ERR_BAD_RESPONSE;
    r->error.data = s;
    r->error.len = n + m;
    r->error_type.len = 0;
    r->error_type.data = (char *) "";
    r->error_code.len = 0;
    r->error_code.data = (char *) "";
    r->error_param.len = 0;
    r->error_param.data = (char *) "";

    return RG_OK;
}


rg_int_t
rg_llm_sse_finish(rg_llm_sse_t *p, rg_pool_t *pool, int http_status,
    const char *id_prefix, rg_llm_response_t *r)
{
    rg_llm_answer_t  a;

    memset(&a, 0, sizeof(a));
    a.http_status = http_status;
    a.id_prefix = id_prefix;
    a.max_calls = p->max_calls;

    return rg_llm_sse_end(p, pool, &a, r);
}


rg_int_t
rg_llm_sse_end(rg_llm_sse_t *p, rg_pool_t *pool, const rg_llm_answer_t *in,
    rg_llm_response_t *r)
{
    int              ok, http_status;
    char            *body;
    rg_int_t         rc;
    rg_llm_answer_t  a;

    a = *in;
    a.max_calls = p->max_calls;
    http_status = a.http_status;

    if (!p->ended) {
        p->ended = 1;

        /* the end of the body ends the last line and the last event */
        if (p->mode == RG_LLM_SSE_STREAM && !p->done && !p->nomem) {
            if (p->line.len > 0) {
                rg_llm_sse_line(p, p->line.data, p->line.len);
                rg_buf_reset(&p->line);
            }

            rg_llm_sse_dispatch(p);
        }
    }

    if (p->nomem) {
        return RG_ERROR;
    }

    ok = (http_status >= 200 && http_status <= 299);

    /* not a stream: a JSON body (an error of a 4xx, or a server that
     * ignored "stream": true), a page of a proxy, nothing at all */
    if (p->mode != RG_LLM_SSE_STREAM
        || (ok && !p->stream)
        || (!ok && p->error.len == 0))
    {
        a.body = (p->raw.data != NULL) ? p->raw.data : "";
        a.len = p->raw.len;

        rc = rg_llm_openai_read(pool, &a, r);

        if (rc == RG_OK && ok && p->too_large) {
            rc = rg_llm_sse_bad(pool, r, "the response is larger than 16 MiB",
                                NULL);
        }

        return rc;
    }

    body = rg_llm_sse_body(p);
    if (body == NULL) {
        return RG_ERROR;
    }

    a.body = body;
    a.len = strlen(body);

    rc = rg_llm_openai_read(pool, &a, r);
    rg_json_free_dump(body);

    if (rc != RG_OK) {
        return rc;
    }

    /* the calls past the cap that were only counted */
    if (r->ncalls > p->max_calls && p->nchoices) {
        r->calls_over += p->choices[0].dropped;
    }

    if (p->error.len) {
        /* Groq's tool_use_failed: the request has to change */
        if (ok && rg_str_eq(&r->error_code, "tool_use_failed")) {
            r->status = RG_LLM_ERR_FATAL;
        }

    } else if (p->too_large) {
        rc = rg_llm_sse_bad(pool, r, "the stream is larger than 16 MiB",
                            NULL);

    } else if (!p->done
               && (p->nchoices == 0 || p->choices[0].finish_reason.len == 0))
    {
        /* before "malformed": a cut stream often ends in half a chunk */
        rc = rg_llm_sse_bad(pool, r,
                            "the stream ended before the answer was complete",
                            NULL);

    } else if (p->malformed) {
        rc = rg_llm_sse_bad(pool, r, "malformed chunk in the stream: ",
                            p->bad);

    } else if (p->overflow) {
        rc = rg_llm_sse_bad(pool, r,
                            "too many choices in the stream",
                            NULL);
    }

    if (rc != RG_OK) {
        return rc;
    }

    if (r->status != RG_LLM_OK) {
        return rg_llm_sse_partial(p, pool, r);
    }

    return RG_OK;
}


/* the codec's row (rg_llm_codec.c) */

rg_llm_stream_t *
rg_llm_openai_stream_create(rg_uint_t max_calls, rg_llm_delta_pt delta,
    void *data)
{
    rg_llm_sse_t  *p;

    p = rg_llm_sse_create(max_calls);

    if (p != NULL) {
        p->delta = delta;
        p->delta_data = data;
    }

    return (rg_llm_stream_t *) p;
}


rg_int_t
rg_llm_openai_stream_feed(rg_llm_stream_t *s, const char *data, size_t len)
{
    return rg_llm_sse_feed((rg_llm_sse_t *) s, data, len);
}


rg_int_t
rg_llm_openai_stream_finish(rg_llm_stream_t *s, rg_pool_t *pool,
    const rg_llm_answer_t *a, rg_llm_response_t *r)
{
    return rg_llm_sse_end((rg_llm_sse_t *) s, pool, a, r);
}


void
rg_llm_openai_stream_destroy(rg_llm_stream_t *s)
{
    rg_llm_sse_destroy((rg_llm_sse_t *) s);
}
