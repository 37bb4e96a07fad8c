/* rg_llm.h: a model call in neutral terms, and the table of wire formats.
 * What the session and the client see of an answer (rg_llm_response_t:
 * its status, text, tool calls, usage and the assistant message in the
 * session's own form), what the transport saw in the answer's headers
 * (rg_llm_hints_t), and a codec: one row of rg_llm_codecs[] per wire
 * format (rg_llm_codec.c), each converting at the edge between the
 * session's form (Chat Completions messages, see src/README) and its own.
 * No I/O here: the client (rg_llm_client.h) owns the transport. */

#ifndef RG_LLM_H
#define RG_LLM_H

#include <rg_config.h>
#include <rg_core.h>


/* the most tool calls one answer may have run (max_tool_calls_per_turn) */
#define RG_LLM_MAX_CALLS       1024

/* response_memory when none is configured: all responses being read */
#define RG_LLM_MEMORY_DEFAULT  (256 * 1024 * 1024)

/* the longest wait an answer may ask for */
#define RG_LLM_MAX_RETRY_AFTER  (10 * 60 * 1000)

/* the key under which a message of the session keeps what is not Chat
 * Completions: a tool result's is_error, a provider's opaque blocks */
#define RG_LLM_EXT             "x_reagent"

/* the wire formats, by their place in rg_llm_codecs[] */
#define RG_LLM_CHAT            0
#define RG_LLM_ANTHROPIC       1
#define RG_LLM_RESPONSES       2
#define RG_LLM_NCODECS         3


/* what happened, as far as the session is concerned */
typedef enum {
    RG_LLM_OK = 0,
    RG_LLM_ERR_RATE,          /* 429: retry after a while */
    RG_LLM_ERR_SERVER,        /* 5xx, 408, 409, 425, 529: retry */
    RG_LLM_ERR_TIMEOUT,       /* no answer in time: retry */
    RG_LLM_ERR_CONNECT,       /* could not connect or the peer went away */
    RG_LLM_ERR_BAD_RESPONSE,  /* 200 with a body we cannot use: retry */
    RG_LLM_ERR_CONTEXT,       /* the conversation does not fit: compact */
    RG_LLM_ERR_FATAL,         /* auth, not found, bad request, no quota */
    RG_LLM_ERR_TOO_LARGE,     /* over the size cap: asking again won't help */
    RG_LLM_ERR_OVER_RATE      /* 429 for a request larger than the
                                 tokens-per-minute limit: the same body
                                 can never pass */
} rg_llm_status_e;


/* what the answer's headers say about waiting (rg_llm_client.c reads
 * them; the classifier weighs them) */
typedef struct {
    uint32_t            retry_after;  /* ms: retry-after, retry-after-ms */
    uint32_t            reset;        /* ms until an exhausted limit resets:
                                         x-ratelimit-reset-*,
                                         anthropic-ratelimit-*-reset */
    /* while the headers are read (rg_llm_hints.c): the resets of the
     * requests and the tokens limits, and whether any is left of each
     * (0 none, 1 some, -1 not said) */
    uint32_t            resets[2];
    int8_t              left[2];
    int8_t              should_retry; /* x-should-retry: 1, 0; -1 none */
    uint8_t             exhausted;    /* a *-remaining-* header said 0 */
    uint8_t             retry_ms;     /* retry-after-ms was given */
} rg_llm_hints_t;


typedef struct {
    rg_str_t            id;         /* generated when the provider sent none */
    rg_str_t            name;
    rg_str_t            arguments;  /* JSON text as sent; an object is
                                       serialized; none or "" → "{}" */
    unsigned            object:1;   /* arguments is an object's dump */
} rg_llm_tool_call_t;


typedef struct rg_llm_response_s {
    rg_llm_status_e     status;
    int                 http_status;

    rg_str_t            content;    /* text parts joined; len 0 when none */
    unsigned            has_content:1;  /* content.len > 0 */
    unsigned            has_wire:1;     /* wire is made */
    rg_str_t            reasoning;  /* reasoning_content / reasoning, and
                                       thinking parts and blocks, joined */
    rg_str_t            refusal;
    rg_str_t            finish_reason;  /* the provider's word: "stop",
                                       "tool_calls", "length", "end_turn",
                                       "max_tokens", "pause_turn",
                                       "max_output_tokens"… */

    rg_llm_tool_call_t *calls;
    rg_uint_t           ncalls;
    /* calls asked for beyond max_calls: none of them is to run. The
     * first, calls[max_calls], stands for them all (in calls and in the
     * message) so that one tool message can tell the model; the others
     * are left out. 0: every call is here. */
    rg_uint_t           calls_over;
    /* calls of an answer cut off at its output limit: never run, not in
     * calls nor in the message */
    rg_uint_t           calls_cut;

    /* tokens as a total of the input: cached reads and cache writes are
     * part of prompt_tokens, and counted apart too */
    int64_t             prompt_tokens;
    int64_t             completion_tokens;
    int64_t             total_tokens;
    int64_t             cached_tokens;      /* read from a prompt cache */
    int64_t             cache_write_tokens; /* written to one */
    int64_t             reasoning_tokens;   /* of completion_tokens */
    double              cost;       /* dollars, by the llm's price */

    /* what the provider sent that must go back with this answer, byte
     * for byte (Anthropic content blocks, Responses output items): the
     * JSON text of an array of strings, each an item's JSON text, kept
     * in the message under x_reagent.FORMAT */
    rg_str_t            opaque;
    rg_uint_t           nopaque;    /* thinking blocks, reasoning items */

    /* the assistant message to append to the conversation, in the
     * session's form (rg_llm_message_build()). Empty unless status is
     * OK. */
    rg_str_t            message;
    /* the same as its piece of the next request in the codec's own
     * format, made while the answer is at hand (has_wire), so that it is
     * not made again from message; Chat Completions has none: message
     * is its piece */
    rg_str_t            wire;

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

    /* the wait the answer asks for: its headers first, then its body
     * (a RetryInfo, "try again in 1.4s"), then a limit's reset */
    rg_msec_t           retry_after;
} rg_llm_response_t;


/* what a codec is given to read an answer */
typedef struct {
    int                 http_status;
    const char         *body;
    size_t              len;
    const rg_llm_hints_t *hints;    /* NULL: none */
    const char         *id_prefix;  /* for generated tool_call ids */
    rg_uint_t           max_calls;  /* 0: RG_LLM_MAX_CALLS */
} rg_llm_answer_t;


/* a piece of the answer's text as it streams in: text[0..len) goes at
 * `offset` of this attempt's text (a retry starts again at 0) */
typedef void (*rg_llm_delta_pt)(void *data, size_t offset, const char *text,
    size_t len);

typedef struct rg_llm_stream_s  rg_llm_stream_t;
typedef struct rg_llm_codec_s   rg_llm_codec_t;
typedef struct rg_llm_body_s    rg_llm_body_t;
struct rg_llm_conf_s;


/* a tool, as the model is told of it */
typedef struct rg_llm_tool_s {
    const char         *name;
    const char         *description;  /* NULL: none */
    const char         *parameters;   /* JSON Schema text of an object */
} rg_llm_tool_t;


/* what a request says before its messages */
typedef struct rg_llm_prefix_s {
    const char         *model;
    double              temperature;
    unsigned            temperature_set:1; /* configured, not a default */
    unsigned            stream:1;     /* ask for Server-Sent Events */
    unsigned            summary:1;    /* a call without tools */
    const rg_str_t     *tools;        /* from rg_llm_tool_text(), or NULL */
    rg_uint_t           ntools;
    const struct rg_llm_conf_s *llm;  /* its codec's directives; NULL */
} rg_llm_prefix_t;


/* a request body being put together: the prefix, then each message's
 * wire piece in order, then its end; the codec keeps what is open */
struct rg_llm_body_s {
    rg_buf_t              *b;
    const rg_llm_codec_t  *codec;
    uint8_t                open;      /* the role whose message is open */
    uint8_t                section;   /* the codec's: what list is open */
    unsigned               cache:1;   /* mark the last user block */
    size_t                 mark;      /* where that block's '}' is, 0 */
    rg_uint_t              n;         /* pieces added */
};


/* One row per wire format. The session's messages are Chat Completions
 * JSON (rg_llm_request.h makes them); a codec turns each into its own
 * piece once (wire), joins them (body_*), and reads answers back into
 * rg_llm_response_t, whole or streamed. */
struct rg_llm_codec_s {
    rg_str_t            name;           /* the llm directive "format" */
    const char         *path;           /* after base_url */
    const char         *key_header;     /* "Authorization: Bearer " */
    const char        **headers;        /* fixed extra ones, NULL-ended */
    size_t              join;           /* bytes a piece adds, at most */
    size_t              tail;           /* bytes a body's end adds */

    /* a tool as the model is told of it */
    rg_int_t          (*tool)(rg_buf_t *out, const rg_llm_tool_t *t);
    /* what comes before the messages */
    rg_int_t          (*prefix)(rg_buf_t *out, const rg_llm_prefix_t *p);
    /* a message of the session (role 's', 'u', 'a' or 't') as its piece
     * of a body: RG_DECLINED when it goes as it is */
    rg_int_t          (*wire)(rg_buf_t *out, uint8_t role, const char *msg,
                          size_t len);
    /* the same, of a message being made from its text (a tool's result
     * answering tool_id, is_error when it failed): no parse; NULL when
     * the message goes as it is */
    rg_int_t          (*text)(rg_buf_t *out, uint8_t role,
                          const char *tool_id, const char *text, size_t len,
                          rg_uint_t is_error);
    rg_int_t          (*body_add)(rg_llm_body_t *bd, uint8_t role,
                          const char *piece, size_t len);
    rg_int_t          (*body_end)(rg_llm_body_t *bd);

    /* a whole answer (or an error) */
    rg_int_t          (*parse)(rg_pool_t *pool, const rg_llm_answer_t *a,
                          rg_llm_response_t *r);

    /* a streamed one: bytes in as they come, split anywhere */
    rg_llm_stream_t  *(*stream_create)(rg_uint_t max_calls,
                          rg_llm_delta_pt delta, void *data);
    rg_int_t          (*stream_feed)(rg_llm_stream_t *s, const char *p,
                          size_t n);
    rg_int_t          (*stream_finish)(rg_llm_stream_t *s, rg_pool_t *pool,
                          const rg_llm_answer_t *a, rg_llm_response_t *r);
    void              (*stream_destroy)(rg_llm_stream_t *s);
};


extern const rg_llm_codec_t  rg_llm_codecs[RG_LLM_NCODECS];

/* the codec named name[0..len), NULL when there is none */
const rg_llm_codec_t *rg_llm_codec_find(const char *name, size_t len);
/* "chat, anthropic, responses": for an error that lists them */
const char *rg_llm_codec_names(void);

const char *rg_llm_status_name(rg_llm_status_e status);

/* A response reset to nothing: every string "" (never NULL), the status
 * OK, the http status given; retry_after kept. */
void rg_llm_response_init(rg_llm_response_t *r, int http_status);

/* The assistant message of r (content, calls, and opaque under
 * x_reagent.FORMAT) in the session's form, into r->message. */
rg_int_t rg_llm_message_build(rg_pool_t *pool, const char *format,
    rg_llm_response_t *r);

/* What every codec does after reading an answer: an answer cut at its
 * output limit (finish "length", "max_tokens", "max_output_tokens")
 * loses its tool calls (calls_cut), whose arguments are cut too; its
 * message is made again. */
rg_int_t rg_llm_answer_end(rg_pool_t *pool, const char *format,
    rg_llm_response_t *r);

/* the body of a request: start (the prefix, room for more bytes: the
 * pieces and codec->join for each), add each message's piece, end;
 * cache: mark the prompt cache's breakpoints, where the format has them */
rg_int_t rg_llm_body_start(rg_llm_body_t *bd, const rg_llm_codec_t *codec,
    rg_uint_t cache, rg_buf_t *b, const char *prefix, size_t len,
    size_t more);
rg_int_t rg_llm_body_add(rg_llm_body_t *bd, uint8_t role, const char *piece,
    size_t len);
rg_int_t rg_llm_body_end(rg_llm_body_t *bd);

#endif /* RG_LLM_H */
