/* rg_llm_responses.h: the OpenAI Responses wire format
 * (rg_llm_responses.c: requests and whole answers;
 * rg_llm_responses_stream.c: streamed answers). */

#ifndef RG_LLM_RESPONSES_H
#define RG_LLM_RESPONSES_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm.h>

#include <jansson.h>


/* the codec's row (rg_llm_codec.c) */
rg_int_t rg_llm_responses_tool(rg_buf_t *out, const rg_llm_tool_t *t);
rg_int_t rg_llm_responses_prefix(rg_buf_t *out, const rg_llm_prefix_t *p);
rg_int_t rg_llm_responses_wire(rg_buf_t *out, uint8_t role, const char *msg,
    size_t len);
rg_int_t rg_llm_responses_text(rg_buf_t *out, uint8_t role,
    const char *tool_id, const char *text, size_t len, rg_uint_t is_error);
rg_int_t rg_llm_responses_read(rg_pool_t *pool, const rg_llm_answer_t *a,
    rg_llm_response_t *r);

rg_llm_stream_t *rg_llm_responses_stream_create(rg_uint_t max_calls,
    rg_llm_delta_pt delta, void *data);
rg_int_t rg_llm_responses_stream_feed(rg_llm_stream_t *s, const char *p,
    size_t n);
rg_int_t rg_llm_responses_stream_finish(rg_llm_stream_t *s, rg_pool_t *pool,
    const rg_llm_answer_t *a, rg_llm_response_t *r);
void rg_llm_responses_stream_destroy(rg_llm_stream_t *s);

/* A response object's text, of the members the codec reads only (NULL:
 * not one whole object whose members parse) */
json_t *rg_llm_responses_load(const char *body, size_t len);

/* A response object (whole, or the one response.completed carries)
 * into r: what the stream reader shares with the whole one. */
rg_int_t rg_llm_responses_response(rg_pool_t *pool, json_t *resp,
    const rg_llm_answer_t *a, rg_llm_response_t *r);

#endif /* RG_LLM_RESPONSES_H */
