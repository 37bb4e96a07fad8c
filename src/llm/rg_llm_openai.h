/* rg_llm_openai.h: the OpenAI Chat Completions wire format. Builds the
 * pieces of a request body (each message serialized once, when it is
 * appended) and reads a response body into an rg_llm_response_t, accepting
 * the variants real providers send. No I/O here. */

#ifndef RG_LLM_OPENAI_H
#define RG_LLM_OPENAI_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm.h>

#include <jansson.h>


/* Reads a response. Everything it returns lives in pool; its strings are
 * never NULL ("" when absent) and are NUL-ended. r is reset except for
 * r->retry_after, which the client may have set already. A 2xx is a
 * completion (or an error a proxy sent after its 200); anything else is
 * an error, classified by rg_llm_openai_classify(). `id_prefix` (NULL:
 * "call") names generated tool_call ids, "<prefix>_<i>" (or
 * "<prefix>_<i>_<k>" when the provider sent that one), made for a call
 * with no id or with the id of an earlier call of the same response; ids
 * are checked in O(n). At most max_calls + 1 calls are read (0:
 * RG_LLM_MAX_CALLS; see calls_over). Returns RG_OK when the body could
 * be read at all (r->status says what it means), RG_ERROR only when
 * memory ran out. */
rg_int_t rg_llm_openai_parse(rg_pool_t *pool, int http_status,
    const char *body, size_t len, const char *id_prefix, rg_uint_t max_calls,
    rg_llm_response_t *r);

/* Classifies an HTTP status with the error's code and message (either
 * may be NULL): 429 → RATE, but an exhausted quota or balance (code
 * insufficient_quota, "exceeded your current quota", "insufficient
 * balance"…) → FATAL and a request larger than the tokens-per-minute
 * limit ("Request too large", "Requested N, Limit M") → OVER_RATE;
 * 400, 413, 422 and 5xx whose code or message says the conversation
 * does not fit the context (OpenAI's context_length_exceeded, llama.cpp's
 * exceed_context_size_error, vLLM's, Ollama's and Anthropic's wordings)
 * → CONTEXT; 408, 409, 425, other 5xx → SERVER; 2xx → OK; below 100 (no
 * HTTP answer) → CONNECT; any other status → FATAL. */
rg_llm_status_e rg_llm_openai_classify(int http_status, const rg_str_t *code,
    const rg_str_t *message);

/* Appends one message, serialized as JSON, to out (no separator). Content
 * is len bytes, NULs included; bytes that are not UTF-8 become U+FFFD. A
 * NULL content is written as null. On failure out is left as it was. */
rg_int_t rg_llm_openai_msg(rg_buf_t *out, const char *role,
    const char *content, size_t len);
rg_int_t rg_llm_openai_tool_msg(rg_buf_t *out, const char *tool_call_id,
    const char *content, size_t len);

/* Appends the part of a request body that does not change between calls
 * of one agent: `{"model":…,"temperature":…,"tool_choice":"auto",
 * "tools":[…],"messages":[`; the caller appends messages separated by
 * commas, then `]}`. tools_json is a JSON array text (checked: RG_ERROR
 * when it is not one) or NULL; tools and tool_choice are left out when it
 * is NULL or empty. The temperature is written as people write it: 0,
 * 0.7. */
rg_int_t rg_llm_openai_prefix(rg_buf_t *out, const char *model,
    double temperature, const char *tools_json, size_t tools_len);

/* The same, asking for a Server-Sent Events stream when stream is set. */
rg_int_t rg_llm_openai_prefix_ex(rg_buf_t *out, const char *model,
    double temperature, const char *tools_json, size_t tools_len,
    rg_uint_t stream);

/* Appends one entry of "tools": {"type":"function","function":{"name",
 * "description","parameters"}}. parameters is a JSON Schema text: RG_ERROR
 * when it is not a JSON object. A NULL description or parameters is left
 * out. */
rg_int_t rg_llm_openai_tool_def(rg_buf_t *out, const char *name,
    const char *description, const char *parameters);

/* what rg_llm_openai_edit() asks to make of a message's text: append the
 * new text to out; RG_OK, or RG_ERROR */
typedef rg_int_t (*rg_llm_openai_edit_pt)(const char *text, size_t len,
    rg_buf_t *out, void *data);

/* The message msg[0..len) with its string content replaced by what edit
 * makes of it, as a new serialization in *out (malloc'ed, NUL-ended),
 * the other members as they were. RG_DECLINED when the content is not a
 * string of more than min bytes, RG_ERROR when msg is not JSON, edit
 * failed or memory ran out. */
rg_int_t rg_llm_openai_edit(const char *msg, size_t len, size_t min,
    rg_llm_openai_edit_pt edit, void *data, char **out);

/* The codec's reading of an answer (its row's parse): as
 * rg_llm_openai_parse(), with the headers' hints. */
rg_int_t rg_llm_openai_read(rg_pool_t *pool, const rg_llm_answer_t *a,
    rg_llm_response_t *r);

/* The words of an error body root (NULL: not JSON) into r, and its
 * class into r->status; a 2xx http_status: an error sent after it. */
rg_int_t rg_llm_openai_error(rg_pool_t *pool, json_t *root, int http_status,
    const char *body, size_t len, const rg_llm_hints_t *hints,
    rg_llm_response_t *r);

/* usage of a completion (or a chunk) into r */
void rg_llm_openai_usage(json_t *root, rg_llm_response_t *r);

/* the tools of a prefix joined into one JSON array text */
rg_int_t rg_llm_tools_join(const rg_llm_prefix_t *p, rg_buf_t *tools);

/* the codec's row (rg_llm_codec.c) */
rg_int_t rg_llm_openai_tool(rg_buf_t *out, const rg_llm_tool_t *t);
rg_int_t rg_llm_openai_prefix_p(rg_buf_t *out, const rg_llm_prefix_t *p);
rg_int_t rg_llm_openai_wire(rg_buf_t *out, uint8_t role, const char *msg,
    size_t len);
rg_int_t rg_llm_openai_body_add(rg_llm_body_t *bd, uint8_t role,
    const char *piece, size_t len);
rg_int_t rg_llm_openai_body_end(rg_llm_body_t *bd);
rg_llm_stream_t *rg_llm_openai_stream_create(rg_uint_t max_calls,
    rg_llm_delta_pt delta, void *data);
rg_int_t rg_llm_openai_stream_feed(rg_llm_stream_t *s, const char *data,
    size_t len);
rg_int_t rg_llm_openai_stream_finish(rg_llm_stream_t *s, rg_pool_t *pool,
    const rg_llm_answer_t *a, rg_llm_response_t *r);
void rg_llm_openai_stream_destroy(rg_llm_stream_t *s);

#endif /* RG_LLM_OPENAI_H */
