/* rg_llm_frame.h: the framing of a text/event-stream, for the stream
 * readers of the formats whose events are named (Anthropic Messages,
 * OpenAI Responses): bytes in, split anywhere; events out, each its name
 * and its data lines joined. Knows nothing of what an event means. */

#ifndef RG_LLM_FRAME_H
#define RG_LLM_FRAME_H

#include <rg_config.h>
#include <rg_core.h>


/* what the body turned out to be */
#define RG_LLM_FRAME_UNKNOWN   0     /* nothing but blanks yet */
#define RG_LLM_FRAME_STREAM    1
#define RG_LLM_FRAME_BODY      2     /* a JSON document, not a stream */


/* one event: its name ("" when it had no event: line) and its data */
typedef void (*rg_llm_frame_pt)(void *data, const char *event, size_t elen,
    const char *text, size_t len);


typedef struct {
    rg_buf_t            line;        /* a line not ended yet */
    rg_buf_t            event;       /* this event's name */
    rg_buf_t            data;        /* its data lines */
    rg_buf_t            raw;         /* the first bytes of the body */
    rg_llm_frame_pt     handler;
    void               *handler_data;
    rg_uint_t           ndata;
    rg_uint_t           nlines;
    unsigned            mode:2;
    unsigned            cr:1;        /* a line ended with CR: skip a LF */
    unsigned            seen:1;      /* a field of SSE was seen */
    size_t              total;       /* bytes taken (rg_llm_frame_take) */
    unsigned            nomem:1;
    unsigned            ended:1;
    unsigned            too_large:1; /* past the taker's max */
} rg_llm_frame_t;


/* one line, without its end: RG_OK to go on with the next */
typedef rg_int_t (*rg_llm_line_pt)(void *data, const char *s, size_t n);


/* The lines of data, each to line(): a line split between two feeds
 * waits in held; a CR at the end of one feed and a LF at the start of
 * the next are one line end (*cr: the last line ended with a CR).
 * RG_ERROR when held could not grow; line()'s own when it stops. What
 * the framer here and the chunk reader (rg_llm_sse.c) share. */
rg_int_t rg_llm_frame_cut(rg_buf_t *held, unsigned *cr, const char *data,
    size_t len, rg_llm_line_pt line, void *ctx);

/* a field line split at its colon, one space after it dropped: its name
 * s[0..*fn), its value *v[0..*vn) */
void rg_llm_frame_split(const char *s, size_t n, size_t *fn,
    const char **v, size_t *vn);


void rg_llm_frame_init(rg_llm_frame_t *f, rg_llm_frame_pt handler,
    void *data);
/* RG_ERROR once memory ran out */
rg_int_t rg_llm_frame_feed(rg_llm_frame_t *f, const char *p, size_t len);
/* What a stream reader's feed does: the bytes counted against max (past
 * it, too_large is set) and fed. RG_ERROR once the body is too large or
 * memory ran out (nomem). */
rg_int_t rg_llm_frame_take(rg_llm_frame_t *f, const char *p, size_t len,
    size_t max);
/* the end of the body: a last line and event without their blank line
 * are taken */
rg_int_t rg_llm_frame_end(rg_llm_frame_t *f);
void rg_llm_frame_free(rg_llm_frame_t *f);

#endif /* RG_LLM_FRAME_H */
