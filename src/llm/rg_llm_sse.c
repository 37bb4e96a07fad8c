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
 * Owns its buffers (malloc'ed, freed by rg_llm_sse_destroy) and the two
 * jansson values it keeps between chunks (the last usage, the first
 * error). Does no I/O, knows of HTTP only the status it is given, and
 * writes no JSON by hand: jansson parses every chunk and serializes the
 * result. */

#include <rg_config.h>
#include <rg_core.h>
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
} rg_llm_sse_choice_t;


struct rg_llm_sse_s {
    rg_buf_t              line;        /* a line not ended yet */
    rg_buf_t              data;        /* the data lines of this event */
    rg_buf_t              raw;         /* the first bytes of the body */
    size_t                total;
    rg_uint_t             ndata;       /* data lines in this event */
    rg_uint_t             nlines;

    rg_llm_sse_choice_t  *choices;     /* by index */
    rg_uint_t             nchoices;
    rg_uint_t             nalloc;

    json_t               *usage;       /* the last one sent */
    json_t               *error;       /* the first one sent */
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
rg_llm_sse_create(void)
{
    return calloc(1, sizeof(rg_llm_sse_t));
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
    json_decref(p->usage);
    json_decref(p->error);
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

    if (p->done || p->ended || len == 0) {
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

            /* the blank lines before it */
            rg_llm_sse_frame(p, p->raw.data, p->raw.len);
        }
    }

    if (p->mode == RG_LLM_SSE_BODY) {
        return rg_llm_sse_append(p, &p->raw, data, len);
    }

    if (p->raw.len < RG_LLM_SSE_RAW_KEEP) {
        keep = rg_min(len, RG_LLM_SSE_RAW_KEEP - p->raw.len);

        if (rg_llm_sse_append(p, &p->raw, data, keep) != RG_OK) {
            return RG_ERROR;
        }
    }

    rg_llm_sse_frame(p, data, len);

    return p->nomem ? RG_ERROR : RG_OK;
}
