/* rg_llm_anthropic.h: the Anthropic Messages wire format
 * (rg_llm_anthropic.c: requests and whole answers;
 * rg_llm_anthropic_stream.c: streamed answers). */

#ifndef RG_LLM_ANTHROPIC_H
#define RG_LLM_ANTHROPIC_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm.h>

#include <jansson.h>


#define RG_LLM_ANTHROPIC_VERSION  "2023-06-01"


/* the codec's row (rg_llm_codec.c) */
rg_int_t rg_llm_anthropic_tool(rg_buf_t *out, const rg_llm_tool_t *t);
rg_int_t rg_llm_anthropic_prefix(rg_buf_t *out, const rg_llm_prefix_t *p);
rg_int_t rg_llm_anthropic_wire(rg_buf_t *out, uint8_t role, const char *msg,
    size_t len);
rg_int_t rg_llm_anthropic_text(rg_buf_t *out, uint8_t role,
    const char *tool_id, const char *text, size_t len, rg_uint_t is_error);
rg_int_t rg_llm_anthropic_body_add(rg_llm_body_t *bd, uint8_t role,
    const char *piece, size_t len);
rg_int_t rg_llm_anthropic_body_end(rg_llm_body_t *bd);
rg_int_t rg_llm_anthropic_read(rg_pool_t *pool, const rg_llm_answer_t *a,
    rg_llm_response_t *r);

rg_llm_stream_t *rg_llm_anthropic_stream_create(rg_uint_t max_calls,
    rg_llm_delta_pt delta, void *data);
rg_int_t rg_llm_anthropic_stream_feed(rg_llm_stream_t *s, const char *p,
    size_t n);
rg_int_t rg_llm_anthropic_stream_finish(rg_llm_stream_t *s, rg_pool_t *pool,
    const rg_llm_answer_t *a, rg_llm_response_t *r);
void rg_llm_anthropic_stream_destroy(rg_llm_stream_t *s);

/* A message object ({content, stop_reason, usage}, whole or added up
 * from a stream) into r: what the stream reader shares with the whole
 * one. */
rg_int_t rg_llm_anthropic_message(rg_pool_t *pool, json_t *msg,
    const rg_llm_answer_t *a, rg_llm_response_t *r);

/* An error ({"type":"error","error":{type, message}}) into r, classified;
 * http_status a 2xx: sent after it, inside a stream. */
rg_int_t rg_llm_anthropic_error(rg_pool_t *pool, json_t *root,
    int http_status, const char *body, size_t len,
    const rg_llm_hints_t *hints, rg_llm_response_t *r);

#endif /* RG_LLM_ANTHROPIC_H */
