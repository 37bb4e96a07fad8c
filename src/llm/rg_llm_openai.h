/* rg_llm_openai.h: the OpenAI Chat Completions wire format. Builds the
 * pieces of a request body (each message serialized once, when it is
 * appended) and reads a response body into an rg_llm_response_t, accepting
 * the variants real providers send. No I/O here. */

#ifndef RG_LLM_OPENAI_H
#define RG_LLM_OPENAI_H

#include <rg_config.h>
#include <rg_core.h>


/* the most tool calls one answer may have run (max_tool_calls_per_turn) */
#define RG_LLM_MAX_CALLS       1024

/* response_memory when none is configured: all responses being read */
#define RG_LLM_MEMORY_DEFAULT  (256 * 1024 * 1024)


/* what happened, as far as the session is concerned */
typedef enum {
    RG_LLM_OK = 0,
    RG_LLM_ERR_RATE,          /* 429: retry after a while */
    RG_LLM_ERR_SERVER,        /* 5xx, 408, 409, 425: retry */
    RG_LLM_ERR_TIMEOUT,       /* no answer in time: retry */
    RG_LLM_ERR_CONNECT,       /* could not connect or the peer went away */
    RG_LLM_ERR_BAD_RESPONSE,  /* 200 with a body we cannot use: retry */
    RG_LLM_ERR_CONTEXT,       /* context_length_exceeded */
    RG_LLM_ERR_FATAL,         /* 400/401/403/404…: end the session */
    RG_LLM_ERR_TOO_LARGE,     /* over the size cap: asking again won't help */
    RG_LLM_ERR_OVER_RATE      /* 429 for a request larger than the
                                 tokens-per-minute limit: the same body
                                 can never pass */
} rg_llm_status_e;


typedef struct {
    rg_str_t            id;         /* generated when the provider sent none */
    rg_str_t            name;
    rg_str_t            arguments;  /* JSON text as sent; an object is
                                       serialized; none or "" → "{}" */
} rg_llm_tool_call_t;


typedef struct rg_llm_response_s {
    rg_llm_status_e     status;
    int                 http_status;

    rg_str_t            content;    /* text parts joined; len 0 when none */
    unsigned            has_content:1;  /* content.len > 0 */
    rg_str_t            reasoning;  /* reasoning_content / reasoning, and
                                       "thinking" parts of the content */
    rg_str_t            refusal;
    rg_str_t            finish_reason;

    rg_llm_tool_call_t *calls;
    rg_uint_t           ncalls;
    /* calls asked for beyond max_calls: none of them is to run. The
     * first, calls[max_calls], stands for them all (in calls and in the
     * message) so that one tool message can tell the model; the others
     * are left out. 0: every call is here. */
    rg_uint_t           calls_over;

    int64_t             prompt_tokens;
    int64_t             completion_tokens;
    int64_t             total_tokens;

    /* the assistant message to append to the conversation, serialized:
     * role, content (string; null when there is none but tool calls),
     * tool_calls with ids, type "function" and string arguments;
     * reasoning and refusal left out. Empty unless status is OK. */
    rg_str_t            message;

    /* errors: the provider's own words, never a header or a key; when
     * the body was not JSON, "HTTP <status>: " and its first 200 bytes,
     * made printable */
    rg_str_t            error;
    rg_str_t            error_type;
    rg_str_t            error_code;  /* a numeric code is printed */
    rg_str_t            error_param;

    /* RG_LLM_ERR_OVER_RATE: "Requested N, Limit M" when the message
     * says so, 0 otherwise */
    int64_t             rate_requested;
    int64_t             rate_limit;

    rg_msec_t           retry_after; /* from headers, set by the client */
} rg_llm_response_t;


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

const char *rg_llm_status_name(rg_llm_status_e status);

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

#endif /* RG_LLM_OPENAI_H */
