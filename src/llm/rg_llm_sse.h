/* rg_llm_sse.h: a streamed Chat Completions answer (text/event-stream).
 * Bytes go in as they arrive, split anywhere; at the end the answer comes
 * out as the same rg_llm_response_t a non-streamed body gives, read by the
 * same code (rg_llm_openai_parse). No I/O here: the transport feeds it. */

#ifndef RG_LLM_SSE_H
#define RG_LLM_SSE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_openai.h>


/* the most a stream may send; feeding more is an error */
#define RG_LLM_SSE_MAX       (16 * 1024 * 1024)

/* what one stream may open; beyond this it is a bad response */
#define RG_LLM_SSE_CHOICES   128


typedef struct rg_llm_sse_s  rg_llm_sse_t;


/* NULL when memory ran out. A choice keeps at most max_calls + 1 tool
 * calls (0: RG_LLM_MAX_CALLS); later ones are only counted, and the
 * answer says how many through calls_over, as rg_llm_openai_parse()
 * does. */
rg_llm_sse_t *rg_llm_sse_create(rg_uint_t max_calls);

/* Takes the next bytes of the body, split anywhere (one byte at a time
 * too). Returns RG_ERROR only when memory ran out or the stream grew over
 * RG_LLM_SSE_MAX; once it did, every later call returns RG_ERROR. Bytes
 * after `data: [DONE]` are ignored. */
rg_int_t rg_llm_sse_feed(rg_llm_sse_t *p, const char *data, size_t len);

/* 1 once `data: [DONE]` was seen: the transport may stop reading */
rg_uint_t rg_llm_sse_done(rg_llm_sse_t *p);

/* Ends the stream (a last event without its blank line is taken) and
 * reads what it said into r, everything in pool, as rg_llm_openai_parse
 * does for a whole body (http_status 200 for a stream; r->retry_after is
 * kept). Choice 0 is the answer. On top of the body's own errors:
 *   - an error sent in the stream (`data: {"error":…}`, `event: error`,
 *     the `error:` field) is an error, whatever the HTTP status was;
 *   - a stream that ended with neither [DONE] nor a finish_reason,
 *     a chunk that is not JSON, too many choices, or a stream over
 *     RG_LLM_SSE_MAX is RG_LLM_ERR_BAD_RESPONSE.
 * When r->status is not RG_LLM_OK, content, reasoning, refusal and
 * finish_reason hold what arrived before the failure; message is empty
 * and there are no calls. A body that is not an event stream (a JSON
 * error of a 4xx, a server that ignored "stream": true) is read as a
 * whole body. Returns RG_ERROR only when memory ran out. */
rg_int_t rg_llm_sse_finish(rg_llm_sse_t *p, rg_pool_t *pool, int http_status,
    const char *id_prefix, rg_llm_response_t *r);

/* The same, with what the transport saw (headers' hints) in a */
rg_int_t rg_llm_sse_end(rg_llm_sse_t *p, rg_pool_t *pool,
    const rg_llm_answer_t *a, rg_llm_response_t *r);

/* What arrived for choice `index` (n > 1): its text and finish_reason,
 * pointing into p (valid until the next feed or destroy). RG_DECLINED
 * when the stream had no such choice. */
rg_int_t rg_llm_sse_choice(rg_llm_sse_t *p, rg_uint_t index,
    rg_str_t *content, rg_str_t *finish_reason);

void rg_llm_sse_destroy(rg_llm_sse_t *p);

#endif /* RG_LLM_SSE_H */
