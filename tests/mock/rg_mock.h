/* rg_mock.h: what the files of the mock model share. The mock answers
 * three wire formats, chosen by the request path: OpenAI Chat Completions
 * (rg_mock_chat.c), Anthropic Messages (rg_mock_anthropic*.c) and OpenAI
 * Responses (rg_mock_responses*.c). A format validates its requests and
 * turns them into the chat form the shared conversation logic reads
 * (rg_mock_conv.c: generic mode, scripts, faults), then turns the chat
 * message that logic makes into its own body or events. Owns no code. */

#ifndef RG_MOCK_H_INCLUDED_
#define RG_MOCK_H_INCLUDED_

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <jansson.h>


typedef intptr_t  rg_int_t;

#define RG_OK                  0
#define RG_ERROR              -1
#define RG_DECLINED           -5

#define RG_MOCK_BACKLOG        4096
#define RG_MOCK_MAX_TIMES      1000
#define RG_MOCK_ECHO_MAX       200
#define RG_MOCK_MAX_TOOLS      128
#define RG_MOCK_NAME_MAX       64
#define RG_MOCK_STREAM_CHUNK   8

/* fault kinds, in the order of rg_mock_fault_names[] */
#define RG_MOCK_FAULT_NONE     0
#define RG_MOCK_FAULT_429      1
#define RG_MOCK_FAULT_500      2
#define RG_MOCK_FAULT_HANG     3
#define RG_MOCK_FAULT_BAD      4
#define RG_MOCK_FAULT_400      5
#define RG_MOCK_FAULT_401      6
#define RG_MOCK_FAULT_404      7
#define RG_MOCK_FAULT_CLOSE    8
#define RG_MOCK_FAULT_OVERLOAD 9
#define RG_MOCK_FAULT_TOO_LONG 10
#define RG_MOCK_FAULT_LAST     RG_MOCK_FAULT_TOO_LONG

/* what happens when a reply is due */
#define RG_MOCK_SEND           0
#define RG_MOCK_HANG           1
#define RG_MOCK_CLOSE          2

/* what a reply counts as in /stats */
#define RG_MOCK_COMPLETION     0
#define RG_MOCK_FAULT          1
#define RG_MOCK_REJECTED       2
#define RG_MOCK_PAGE           3        /* GET /page: not a chat reply */

/* the wire formats, the index of their /stats counter */
#define RG_MOCK_FORMAT_CHAT       0
#define RG_MOCK_FORMAT_ANTHROPIC  1
#define RG_MOCK_FORMAT_RESPONSES  2
#define RG_MOCK_NFORMATS          3

/* the FNV-1a 64 offset basis: the hash of nothing */
#define RG_MOCK_HASH_INIT      0xcbf29ce484222325ULL

/* tokens the mock counts for a number of bytes: a quarter, at least 1 */
#define rg_mock_tokens_of(bytes)  ((bytes) / 4 > 0 ? (bytes) / 4 : 1)


typedef struct rg_mock_pending_s  rg_mock_pending_t;
typedef struct rg_mock_conv_s     rg_mock_conv_t;
typedef struct rg_mock_format_s   rg_mock_format_t;

typedef struct {
    const char               *host;
    long                      port;
    long                      listen_fd;        /* inherited, -1: none */
    const char               *port_file;
    long                      rounds;
    long                      calls;
    long                      latency;
    const char               *script_file;
    int                       fault;
    long                      fault_count;
    long                      fault_every;
    long                      retry_after;      /* seconds, -1: no header */
    long                      retry_after_ms;   /* -1: send Retry-After */
    long                      max_body;
    long                      idle_timeout;
    long                      stream_chunk;     /* bytes of text per event */
    long                      stream_delay;     /* ms between HTTP chunks */
    int                       stream_crlf;
    int                       stream_comments;
    int                       stream_no_done;
    int                       stream_interleave;
    int                       cache;            /* chat: cached_tokens */
    int                       quiet;
    const char               *request_log;      /* one line per request */
    const char               *request_id;       /* header name, or NULL */
    const char               *otlp_log;         /* POST /v1/traces, a line
                                                   each */
    long                      otlp_status;
    long                      page_delay;       /* ms before GET /page's
                                                   answer */
} rg_mock_conf_t;

typedef struct {
    uint64_t                  requests;
    uint64_t                  completions;
    uint64_t                  faults;
    uint64_t                  rejected;
    uint64_t                  inflight;
    uint64_t                  max_inflight;
    uint64_t                  fault_seq;        /* valid requests seen */
    uint64_t                  formats[RG_MOCK_NFORMATS];
    uint64_t                  cache_reads;      /* answers that read */
    uint64_t                  cache_writes;     /* answers that wrote */
    uint64_t                  cache_read_tokens;
    uint64_t                  cache_write_tokens;
    uint64_t                  ntimes;
    uint64_t                  times[RG_MOCK_MAX_TIMES];
} rg_mock_stats_t;

/* the events of a streamed reply, sent one HTTP chunk at a time */
typedef struct {
    struct evbuffer          *events;           /* the text still to send */
    size_t                   *sizes;            /* of each event, in order */
    size_t                    nsizes;
    size_t                    cap;
    size_t                    next;             /* the next event to send */
} rg_mock_stream_t;

typedef struct {
    int                       status;
    int                       action;           /* RG_MOCK_SEND, ... */
    int                       kind;             /* RG_MOCK_COMPLETION, ... */
    long                      delay;            /* ms */
    uint64_t                  number;           /* arrival number */
    rg_mock_stream_t         *stream;           /* NULL: one JSON body */
    char                      note[160];        /* for the log line */
} rg_mock_reply_t;

struct rg_mock_pending_s {
    struct evhttp_request    *req;
    struct evhttp_connection *evcon;
    struct event             *timer;
    struct event             *watch;            /* notices a vanished client */
    rg_mock_pending_t        *prev;
    rg_mock_pending_t        *next;
    rg_mock_reply_t           reply;
};

/* One request of a conversation: the request as sent (req) and in chat
 * form (root: the messages and tools the shared logic reads). */

struct rg_mock_conv_s {
    json_t                   *req;              /* the body as sent */
    json_t                   *root;             /* chat form, a reference */
    const rg_mock_format_t   *format;
    struct evhttp_request    *http;
    const char               *model;
    size_t                    body_len;
    size_t                    rounds;           /* assistant msgs with calls */
    size_t                    assistants;       /* assistant msgs, any kind */
    json_t                   *last_tool;        /* content of last tool msg */
    json_t                   *last_user;        /* content of last user msg */
    uint64_t                  n;                /* unique response number */
    uint64_t                  number;           /* arrival number */
    int                       stream;           /* "stream": true */
    int                       include_usage;    /* stream_options */
    int                       think;            /* thinking, reasoning */
    int                       encrypted;        /* reasoning.encrypted_content
                                                   included */
    int                       one_call;         /* no parallel calls */
    int                       ascii_args;       /* generated string arguments
                                                   carry an escape */
    const char               *call_prefix;      /* of made tool call ids */
    const char               *call_suffix;
    const char               *stream_error;     /* scripted, or NULL */
    const char               *stream_error_type;
    int                       stream_error_failed;
};

typedef struct {
    char                      message[2048];
    char                      param[96];
    char                      code[48];
} rg_mock_err_t;

/* A wire format, chosen by the request path. */

struct rg_mock_format_s {
    const char               *name;
    unsigned                  index;            /* RG_MOCK_FORMAT_* */
    int                       overloaded;       /* status of that fault */
    const char               *request_id;       /* header req_mock_<n> is
                                                   sent in, or NULL */
    const char               *malformed;        /* the malformed fault body */

    /* validates c->req (NULL: not JSON) and sets c->root */
    rg_int_t                (*parse)(rg_mock_conv_t *c, rg_mock_err_t *err);
    /* the 400 of a request parse() refused */
    rg_int_t                (*reject)(rg_mock_conv_t *c, rg_mock_err_t *err,
                                      struct evbuffer *out);
    /* answers an assistant message in chat form (stolen): a body in out,
     * or the events of r->stream when c streams */
    rg_int_t                (*answer)(rg_mock_conv_t *c, json_t *message,
                                      struct evbuffer *out,
                                      rg_mock_reply_t *r);
    /* streams a scripted body of the format's own shape; RG_DECLINED when
     * it is not */
    rg_int_t                (*stream_body)(rg_mock_conv_t *c, json_t *body,
                                           rg_mock_reply_t *r);
    /* the error body (and headers) of an injected fault or a scripted
     * status */
    rg_int_t                (*status)(rg_mock_conv_t *c, int status,
                                      int fault, struct evbuffer *out,
                                      struct evkeyvalq *headers);
    /* a server error of the mock itself, or a stream_error not streamed */
    rg_int_t                (*error)(rg_mock_conv_t *c, const char *message,
                                     struct evbuffer *out);
};

typedef struct {
    rg_mock_conf_t            conf;
    rg_mock_stats_t           stats;
    uint64_t                  seq;              /* never reset: unique ids */
    struct timespec           start;
    struct event_base        *base;
    struct evhttp            *http;
    struct event             *sigterm;
    struct event             *sigint;
    const struct timeval     *latency_tv;       /* common timeout */
    const struct timeval     *stream_tv;        /* common timeout */
    json_t                   *script;
    json_t                   *last_headers;
    json_t                   *last_body;
    rg_mock_pending_t        *pending;
} rg_mock_t;


extern rg_mock_t                rg_mock;
extern const char              *rg_mock_fault_names[];
extern const rg_mock_format_t   rg_mock_chat_format;
extern const rg_mock_format_t   rg_mock_anthropic_format;
extern const rg_mock_format_t   rg_mock_responses_format;


/* rg_mock_util.c */
void rg_mock_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t rg_mock_now_ms(void);
size_t rg_mock_utf8_cut(const char *s, size_t len, size_t max);
size_t rg_mock_piece(const char *s, size_t len, size_t max);
rg_int_t rg_mock_dump(struct evbuffer *out, json_t *json);
const char *rg_mock_type_name(const json_t *v);
const char *rg_mock_reason(int status);
rg_int_t rg_mock_error_body(struct evbuffer *out, const char *message,
    const char *type, const char *param, const char *code);
rg_int_t rg_mock_fail(rg_mock_err_t *err, const char *param,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
rg_int_t rg_mock_missing(rg_mock_err_t *err, const char *param);
rg_int_t rg_mock_bad_type(rg_mock_err_t *err, const char *param,
    const char *want, const json_t *got);
rg_int_t rg_mock_bad_value(rg_mock_err_t *err, const char *param,
    const char *value, const char *supported);
const char *rg_mock_content_text(json_t *content, size_t *len);
void rg_mock_retry_in(char *buf, size_t size);

/* rg_mock_sse.c */
rg_mock_stream_t *rg_mock_stream_new(void);
void rg_mock_stream_free(rg_mock_stream_t *s);
rg_int_t rg_mock_stream_event(rg_mock_stream_t *s, const char *name,
    json_t *data);
rg_int_t rg_mock_stream_done(rg_mock_stream_t *s, rg_mock_conv_t *c,
    rg_mock_reply_t *r);

/* rg_mock_reply.c */
void rg_mock_dispatch(struct evhttp_request *req, rg_mock_reply_t *r);
void rg_mock_pending_free(rg_mock_pending_t *p);

/* rg_mock_conv.c */
void rg_mock_conv_init(rg_mock_conv_t *c);
rg_int_t rg_mock_generic(rg_mock_conv_t *c, struct evbuffer *out,
    rg_mock_reply_t *r);
rg_int_t rg_mock_answer(rg_mock_conv_t *c, json_t *message,
    struct evbuffer *out, rg_mock_reply_t *r);
json_t *rg_mock_tokens(rg_mock_conv_t *c, json_t *message);
size_t rg_mock_output_tokens(json_t *message);
json_t *rg_mock_thinking(rg_mock_conv_t *c, json_t *message);
int rg_mock_fault_pick(void);
void rg_mock_fault(struct evhttp_request *req, int fault, rg_mock_conv_t *c,
    rg_mock_reply_t *r);
rg_int_t rg_mock_script(struct evhttp_request *req, rg_mock_conv_t *c,
    rg_mock_reply_t *r);
rg_int_t rg_mock_script_load(const char *file);

/* rg_mock_cache.c */
uint64_t rg_mock_hash(uint64_t h, const void *data, size_t len);
uint64_t rg_mock_hash_json(uint64_t h, json_t *json, const char *skip,
    size_t *bytes);
int rg_mock_cache_has(uint64_t key);
void rg_mock_cache_add(uint64_t key);
void rg_mock_cache_reset(void);
void rg_mock_cache_count(size_t read, size_t written);

/* rg_mock_sign.c */
void rg_mock_sign(const char *label, const char *data, size_t len,
    char *out, size_t size);
int rg_mock_sign_check(const char *label, const char *data, size_t len,
    const char *sig);
char *rg_mock_seal(const char *label, const char *payload, size_t len);
int rg_mock_seal_check(const char *label, const char *sealed);

/* rg_mock_http.c */
void rg_mock_request(struct evhttp_request *req,
    const rg_mock_format_t *format);
void rg_mock_stats_reply(struct evhttp_request *req);
void rg_mock_last_request_reply(struct evhttp_request *req);
void rg_mock_reset_reply(struct evhttp_request *req);
void rg_mock_traces(struct evhttp_request *req);
void rg_mock_page(struct evhttp_request *req);
void rg_mock_send_error(struct evhttp_request *req, int status,
    const char *message, const char *type);

/* rg_mock_anthropic.c, rg_mock_responses.c: the validation of requests;
 * their _reply.c files: the translation to and from chat form */
rg_int_t rg_mock_anthropic_parse(rg_mock_conv_t *c, rg_mock_err_t *err);
json_t *rg_mock_anthropic_chat(json_t *req);
rg_int_t rg_mock_responses_parse(rg_mock_conv_t *c, rg_mock_err_t *err);
json_t *rg_mock_responses_chat(json_t *req);


#endif /* RG_MOCK_H_INCLUDED_ */
