/* rg_llm_sse_int.h: what the pieces of the streamed Chat Completions
 * reader share (rg_llm_sse.c: its state and framing; rg_llm_sse_chunk.c:
 * each event; rg_llm_sse_end.c: the answer at the end); not for callers,
 * who use rg_llm_sse.h. */

#ifndef RG_LLM_SSE_INT_H
#define RG_LLM_SSE_INT_H

#include <rg_config.h>
#include <rg_core.h>
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


/* rg_llm_sse.c: buffers and lines */
rg_int_t rg_llm_sse_append(rg_llm_sse_t *p, rg_buf_t *b, const char *s,
    size_t n);
rg_int_t rg_llm_sse_append_str(rg_llm_sse_t *p, rg_buf_t *b, json_t *v);
void rg_llm_sse_set_str(rg_llm_sse_t *p, rg_buf_t *b, json_t *v);
void rg_llm_sse_line(rg_llm_sse_t *p, const char *s, size_t n);

/* rg_llm_sse_chunk.c: an event */
void rg_llm_sse_dispatch(rg_llm_sse_t *p);


#endif /* RG_LLM_SSE_INT_H */
