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
 * parses every chunk and serializes the result.
 *
 * This file owns the stream's state and its framing; what each event says
 * is rg_llm_sse_chunk.c's, the answer at the end rg_llm_sse_end.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_sse.h>
#include <rg_llm_sse_int.h>
#include <rg_llm_frame.h>


static void rg_llm_sse_frame(rg_llm_sse_t *p, const char *data, size_t len);


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


rg_int_t
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
rg_int_t
rg_llm_sse_append_str(rg_llm_sse_t *p, rg_buf_t *b, json_t *v)
{
    if (!json_is_string(v)) {
        return RG_OK;
    }

    return rg_llm_sse_append(p, b, json_string_value(v),
                             json_string_length(v));
}


/* a non-empty string replaces what b held: ids, names, finish_reason */
void
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


static rg_int_t
rg_llm_sse_one(void *data, const char *s, size_t n)
{
    rg_llm_sse_t  *p;

    p = data;
    rg_llm_sse_line(p, s, n);

    return (p->done || p->nomem) ? RG_DONE : RG_OK;
}


/* the lines of data, the framer's way (rg_llm_frame_cut) */
static void
rg_llm_sse_frame(rg_llm_sse_t *p, const char *data, size_t len)
{
    unsigned  cr;

    if (p->done || p->nomem) {
        return;
    }

    cr = p->cr;

    if (rg_llm_frame_cut(&p->line, &cr, data, len, rg_llm_sse_one, p)
        == RG_ERROR)
    {
        p->nomem = 1;
    }

    p->cr = cr;
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
void
rg_llm_sse_line(rg_llm_sse_t *p, const char *s, size_t n)
{
    size_t       fn, vn;
    const char  *v;

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

    rg_llm_frame_split(s, n, &fn, &v, &vn);

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
