/* rg_mock.c: the mock model, an OpenAI-compatible Chat Completions server
 * that reagent's tests, demo and benchmarks talk to over real HTTP.
 * Owns one libevent loop with an evhttp server, the optional response
 * script, the fault injector and the counters behind /stats. Validates
 * requests as strictly as the real API and answers deterministically: the
 * position in a conversation is derived from each request's messages, so
 * concurrent conversations never disturb each other. A request with
 * "stream": true gets the same completion as text/event-stream
 * chat.completion.chunk events over chunked transfer encoding, paced by
 * --stream-delay (see rg_mock_stream_build() for the layout). With
 * --otlp-log it is also a small OTLP/HTTP collector: each POST
 * /v1/traces body is appended to that file as one line (answered with
 * --otlp-status, 200 by default). GET /page is a page for an http tool,
 * logged in the request log with its traceparent, answered after
 * --page-delay. It starts no threads and never blocks; delays are
 * timers.
 *
 * Build: cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -O2 -o rg_mock rg_mock.c \
 *            $(pkg-config --cflags --libs libevent jansson) */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/util.h>

#include <jansson.h>


typedef intptr_t  rg_int_t;

#define RG_OK                  0
#define RG_ERROR              -1

#define RG_MOCK_BACKLOG        4096
#define RG_MOCK_MAX_TIMES      1000
#define RG_MOCK_ECHO_MAX       200
#define RG_MOCK_MAX_TOOLS      128
#define RG_MOCK_NAME_MAX       64
#define RG_MOCK_STREAM_CHUNK   8

/* fault kinds */
#define RG_MOCK_FAULT_NONE     0
#define RG_MOCK_FAULT_429      1
#define RG_MOCK_FAULT_500      2
#define RG_MOCK_FAULT_HANG     3
#define RG_MOCK_FAULT_BAD      4
#define RG_MOCK_FAULT_400      5
#define RG_MOCK_FAULT_401      6
#define RG_MOCK_FAULT_404      7
#define RG_MOCK_FAULT_CLOSE    8

/* what happens when a reply is due */
#define RG_MOCK_SEND           0
#define RG_MOCK_HANG           1
#define RG_MOCK_CLOSE          2

/* what a reply counts as in /stats */
#define RG_MOCK_COMPLETION     0
#define RG_MOCK_FAULT          1
#define RG_MOCK_REJECTED       2
#define RG_MOCK_PAGE           3        /* GET /page: not a chat reply */


typedef struct rg_mock_pending_s  rg_mock_pending_t;

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

typedef struct {
    json_t                   *root;
    const char               *model;
    size_t                    body_len;
    size_t                    rounds;           /* assistant msgs with calls */
    size_t                    assistants;       /* assistant msgs, any kind */
    json_t                   *last_tool;        /* content of last tool msg */
    json_t                   *last_user;        /* content of last user msg */
    uint64_t                  n;                /* unique response number */
    int                       stream;           /* "stream": true */
    int                       include_usage;    /* stream_options */
    const char               *stream_error;     /* scripted, or NULL */
} rg_mock_conv_t;

typedef struct {
    char                      message[2048];
    char                      param[96];
} rg_mock_err_t;

typedef struct {
    json_t                   *calls;            /* tool_calls still open */
    size_t                    index;            /* their assistant message */
    unsigned char            *answered;
    unsigned char             buf[64];
} rg_mock_open_t;

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


static rg_mock_t  rg_mock;

static const char  *rg_mock_fault_names[] = {
    "", "429", "500", "hang", "malformed", "400", "401", "404", "close"
};


static void rg_mock_log(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static rg_int_t rg_mock_fail(rg_mock_err_t *err, const char *param,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static rg_int_t rg_mock_stream_build(rg_mock_conv_t *c, json_t *completion,
    rg_mock_reply_t *r);


static void
rg_mock_log(const char *fmt, ...)
{
    char     line[512];
    va_list  ap;

    if (rg_mock.conf.quiet) {
        return;
    }

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);

    fprintf(stderr, "rg_mock: %s\n", line);
}


static uint64_t
rg_mock_now_ms(void)
{
    struct timespec  ts;
    int64_t          ms;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    ms = (int64_t) (ts.tv_sec - rg_mock.start.tv_sec) * 1000
         + (ts.tv_nsec - rg_mock.start.tv_nsec) / 1000000;

    return ms < 0 ? 0 : (uint64_t) ms;
}


/* Returns how many of the first len bytes of the valid UTF-8 string s fit
 * in max bytes without splitting a character. */

static size_t
rg_mock_utf8_cut(const char *s, size_t len, size_t max)
{
    size_t  n;

    if (len <= max) {
        return len;
    }

    n = max;
    while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80) {
        n--;
    }

    return n;
}


static void
rg_mock_free_cb(const void *data, size_t len, void *arg)
{
    (void) len;
    (void) arg;

    free((void *) data);
}


/* Serializes compactly into out: small values through a stack buffer, big
 * ones into a heap block the evbuffer takes over; no per-token copies. */

static rg_int_t
rg_mock_dump(struct evbuffer *out, json_t *json)
{
    char    buf[8192], *p;
    size_t  n;

    if (json == NULL) {
        return RG_ERROR;
    }

    n = json_dumpb(json, buf, sizeof(buf), JSON_COMPACT | JSON_ENCODE_ANY);
    if (n == 0) {
        return RG_ERROR;
    }

    if (n <= sizeof(buf)) {
        return evbuffer_add(out, buf, n) == 0 ? RG_OK : RG_ERROR;
    }

    p = malloc(n);
    if (p == NULL) {
        return RG_ERROR;
    }

    if (json_dumpb(json, p, n, JSON_COMPACT | JSON_ENCODE_ANY) != n
        || evbuffer_add_reference(out, p, n, rg_mock_free_cb, NULL) != 0)
    {
        free(p);
        return RG_ERROR;
    }

    return RG_OK;
}


static const char *
rg_mock_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a decimal";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}


/* The OpenAI error envelope. The message must be valid UTF-8. */

static rg_int_t
rg_mock_error_body(struct evbuffer *out, const char *message,
    const char *type, const char *param, const char *code)
{
    rg_int_t   rc;
    json_t    *e;

    e = json_pack("{s:{s:s, s:s, s:s?, s:s?}}", "error",
                  "message", message, "type", type,
                  "param", param, "code", code);

    rc = rg_mock_dump(out, e);
    json_decref(e);

    if (rc != RG_OK) {
        evbuffer_add_printf(out, "{\"error\":{\"message\":\"rg_mock: "
                            "cannot build the error body\",\"type\":"
                            "\"server_error\",\"param\":null,"
                            "\"code\":null}}");
    }

    return rc;
}


/* evhttp 2.1 knows no phrase for 422, 429 and a few others. */

static const char *
rg_mock_reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 413:
        return "Payload Too Large";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return NULL;
    }
}


static void
rg_mock_send_error(struct evhttp_request *req, int status,
    const char *message, const char *type)
{
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "application/json");
    rg_mock_error_body(evhttp_request_get_output_buffer(req), message, type,
                       NULL, NULL);
    evhttp_send_reply(req, status, rg_mock_reason(status), NULL);
}


static void
rg_mock_send_json(struct evhttp_request *req, json_t *json)
{
    struct evbuffer  *out;

    out = evhttp_request_get_output_buffer(req);

    if (rg_mock_dump(out, json) != RG_OK) {
        evbuffer_drain(out, evbuffer_get_length(out));
        rg_mock_send_error(req, 500, "rg_mock: out of memory",
                           "server_error");
        return;
    }

    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "application/json");
    evhttp_send_reply(req, 200, NULL, NULL);
}


/* request validation */

static rg_int_t
rg_mock_fail(rg_mock_err_t *err, const char *param, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);

    snprintf(err->param, sizeof(err->param), "%s", param ? param : "");

    return RG_ERROR;
}


static rg_int_t
rg_mock_missing(rg_mock_err_t *err, const char *param)
{
    return rg_mock_fail(err, param, "Missing required parameter: '%s'.",
                        param);
}


static rg_int_t
rg_mock_bad_type(rg_mock_err_t *err, const char *param, const char *want,
    const json_t *got)
{
    return rg_mock_fail(err, param,
                        "Invalid type for '%s': expected %s, but got %s "
                        "instead.", param, want, rg_mock_type_name(got));
}


static rg_int_t
rg_mock_bad_value(rg_mock_err_t *err, const char *param, const char *value,
    const char *supported)
{
    size_t  len;

    len = rg_mock_utf8_cut(value, strlen(value), 100);

    return rg_mock_fail(err, param,
                        "Invalid value: '%.*s'. Supported values are: %s.",
                        (int) len, value, supported);
}


/* Content of a system, developer, user or tool message: a string or an
 * array of content parts. */

static rg_int_t
rg_mock_validate_content(json_t *m, size_t i, rg_mock_err_t *err)
{
    char     param[96];
    json_t  *c;

    c = json_object_get(m, "content");
    snprintf(param, sizeof(param), "messages[%zu].content", i);

    if (c == NULL) {
        return rg_mock_missing(err, param);
    }

    if (json_is_null(c)) {
        snprintf(param, sizeof(param), "messages.[%zu].content", i);
        return rg_mock_fail(err, param, "Invalid value for 'content': "
                            "expected a string, got null.");
    }

    if (!json_is_string(c) && !json_is_array(c)) {
        return rg_mock_bad_type(err, param,
                                "one of a string or array of objects", c);
    }

    return RG_OK;
}


static rg_int_t
rg_mock_validate_tool_call(json_t *tc, size_t i, size_t k,
    rg_mock_err_t *err)
{
    char     p[96], param[160];
    json_t  *v, *fn;

    snprintf(p, sizeof(p), "messages[%zu].tool_calls[%zu]", i, k);

    if (!json_is_object(tc)) {
        return rg_mock_bad_type(err, p, "an object", tc);
    }

    snprintf(param, sizeof(param), "%s.id", p);
    v = json_object_get(tc, "id");
    if (v == NULL) {
        return rg_mock_missing(err, param);
    }
    if (!json_is_string(v)) {
        return rg_mock_bad_type(err, param, "a string", v);
    }

    snprintf(param, sizeof(param), "%s.type", p);
    v = json_object_get(tc, "type");
    if (v == NULL) {
        return rg_mock_missing(err, param);
    }
    if (!json_is_string(v)) {
        return rg_mock_bad_type(err, param, "a string", v);
    }
    if (strcmp(json_string_value(v), "function") != 0) {
        return rg_mock_bad_value(err, param, json_string_value(v),
                                 "'function'");
    }

    snprintf(param, sizeof(param), "%s.function", p);
    fn = json_object_get(tc, "function");
    if (fn == NULL) {
        return rg_mock_missing(err, param);
    }
    if (!json_is_object(fn)) {
        return rg_mock_bad_type(err, param, "an object", fn);
    }

    snprintf(param, sizeof(param), "%s.function.name", p);
    v = json_object_get(fn, "name");
    if (v == NULL) {
        return rg_mock_missing(err, param);
    }
    if (!json_is_string(v)) {
        return rg_mock_bad_type(err, param, "a string", v);
    }

    snprintf(param, sizeof(param), "%s.function.arguments", p);
    v = json_object_get(fn, "arguments");
    if (v == NULL) {
        return rg_mock_missing(err, param);
    }
    if (!json_is_string(v)) {
        return rg_mock_bad_type(err, param, "a string", v);
    }

    return RG_OK;
}


/* An assistant message; sets *calls to its non-empty tool_calls or NULL. */

static rg_int_t
rg_mock_validate_assistant(json_t *m, size_t i, json_t **calls,
    rg_mock_err_t *err)
{
    char     param[96];
    size_t   k, n;
    json_t  *tc, *c, *refusal;

    *calls = NULL;

    tc = json_object_get(m, "tool_calls");
    if (tc != NULL && !json_is_null(tc)) {
        snprintf(param, sizeof(param), "messages[%zu].tool_calls", i);

        if (!json_is_array(tc)) {
            return rg_mock_bad_type(err, param, "an array of objects", tc);
        }

        n = json_array_size(tc);
        if (n == 0) {
            return rg_mock_fail(err, param, "Invalid '%s': empty array. "
                                "Expected an array with minimum length 1, "
                                "but got an empty array instead.", param);
        }

        for (k = 0; k < n; k++) {
            if (rg_mock_validate_tool_call(json_array_get(tc, k), i, k, err)
                != RG_OK)
            {
                return RG_ERROR;
            }
        }

        *calls = tc;
    }

    c = json_object_get(m, "content");
    refusal = json_object_get(m, "refusal");

    if (c == NULL || json_is_null(c)) {
        if (*calls == NULL && !json_is_string(refusal)
            && json_object_get(m, "function_call") == NULL)
        {
            snprintf(param, sizeof(param), "messages.[%zu].content", i);
            return rg_mock_fail(err, param, "Invalid value for 'content': "
                                "expected a string, got null.");
        }

        return RG_OK;
    }

    if (!json_is_string(c) && !json_is_array(c)) {
        snprintf(param, sizeof(param), "messages[%zu].content", i);
        return rg_mock_bad_type(err, param,
                                "one of a string or array of objects", c);
    }

    return RG_OK;
}


static rg_int_t
rg_mock_open_start(rg_mock_open_t *o, json_t *calls, size_t index)
{
    size_t  n;

    n = json_array_size(calls);

    if (n <= sizeof(o->buf)) {
        o->answered = o->buf;
        memset(o->buf, 0, sizeof(o->buf));

    } else {
        o->answered = calloc(n, 1);
        if (o->answered == NULL) {
            return RG_ERROR;
        }
    }

    o->calls = calls;
    o->index = index;

    return RG_OK;
}


static void
rg_mock_open_end(rg_mock_open_t *o)
{
    if (o->answered != NULL && o->answered != o->buf) {
        free(o->answered);
    }

    o->answered = NULL;
    o->calls = NULL;
}


/* Every tool call of the open assistant message must have been answered by
 * the tool messages that directly follow it. */

static rg_int_t
rg_mock_open_check(rg_mock_open_t *o, rg_mock_err_t *err)
{
    char         ids[1600], param[96];
    size_t       k, n, len, used;
    const char  *id;

    if (o->calls == NULL) {
        return RG_OK;
    }

    used = 0;
    ids[0] = '\0';
    n = json_array_size(o->calls);

    for (k = 0; k < n; k++) {
        if (o->answered[k]) {
            continue;
        }

        id = json_string_value(json_object_get(json_array_get(o->calls, k),
                                               "id"));
        len = rg_mock_utf8_cut(id, strlen(id), 100);

        if (used + len + 8 >= sizeof(ids)) {
            used += snprintf(ids + used, sizeof(ids) - used, ", ...");
            break;
        }

        used += snprintf(ids + used, sizeof(ids) - used, "%s%.*s",
                         used ? ", " : "", (int) len, id);
    }

    if (used == 0) {
        return RG_OK;
    }

    snprintf(param, sizeof(param), "messages.[%zu].role", o->index);

    return rg_mock_fail(err, param,
                        "An assistant message with 'tool_calls' must be "
                        "followed by tool messages responding to each "
                        "'tool_call_id'. The following tool_call_ids did "
                        "not have response messages: %s", ids);
}


static rg_int_t
rg_mock_validate_tool_msg(json_t *m, size_t i, rg_mock_open_t *o,
    rg_mock_err_t *err)
{
    char         param[96];
    size_t       k, n;
    json_t      *id;
    const char  *s, *cid;

    snprintf(param, sizeof(param), "messages[%zu].tool_call_id", i);

    id = json_object_get(m, "tool_call_id");
    if (id == NULL) {
        return rg_mock_missing(err, param);
    }
    if (!json_is_string(id)) {
        return rg_mock_bad_type(err, param, "a string", id);
    }

    if (rg_mock_validate_content(m, i, err) != RG_OK) {
        return RG_ERROR;
    }

    if (o->calls != NULL) {
        s = json_string_value(id);
        n = json_array_size(o->calls);

        for (k = 0; k < n; k++) {
            cid = json_string_value(json_object_get(
                                    json_array_get(o->calls, k), "id"));
            if (!o->answered[k] && strcmp(cid, s) == 0) {
                o->answered[k] = 1;
                return RG_OK;
            }
        }
    }

    snprintf(param, sizeof(param), "messages.[%zu].role", i);

    return rg_mock_fail(err, param, "Invalid parameter: messages with role "
                        "'tool' must be a response to a preceeding message "
                        "with 'tool_calls'.");
}


static rg_int_t
rg_mock_validate_messages(json_t *messages, rg_mock_err_t *err)
{
    char             param[96];
    size_t           i, n;
    json_t          *m, *role, *calls;
    rg_int_t         rc;
    const char      *r;
    rg_mock_open_t   o;

    memset(&o, 0, sizeof(o));
    rc = RG_ERROR;
    n = json_array_size(messages);

    for (i = 0; i < n; i++) {
        m = json_array_get(messages, i);

        if (!json_is_object(m)) {
            snprintf(param, sizeof(param), "messages[%zu]", i);
            rg_mock_bad_type(err, param, "an object", m);
            goto done;
        }

        snprintf(param, sizeof(param), "messages[%zu].role", i);
        role = json_object_get(m, "role");

        if (role == NULL) {
            rg_mock_missing(err, param);
            goto done;
        }

        if (!json_is_string(role)) {
            rg_mock_bad_type(err, param, "a string", role);
            goto done;
        }

        r = json_string_value(role);

        if (strcmp(r, "tool") == 0) {
            if (rg_mock_validate_tool_msg(m, i, &o, err) != RG_OK) {
                goto done;
            }
            continue;
        }

        /* any other message ends the tool answers of the open calls */

        if (rg_mock_open_check(&o, err) != RG_OK) {
            goto done;
        }
        rg_mock_open_end(&o);

        if (strcmp(r, "user") == 0 || strcmp(r, "system") == 0
            || strcmp(r, "developer") == 0)
        {
            if (rg_mock_validate_content(m, i, err) != RG_OK) {
                goto done;
            }

        } else if (strcmp(r, "assistant") == 0) {
            if (rg_mock_validate_assistant(m, i, &calls, err) != RG_OK) {
                goto done;
            }

            if (calls != NULL && rg_mock_open_start(&o, calls, i) != RG_OK) {
                rg_mock_fail(err, NULL, "rg_mock: out of memory");
                goto done;
            }

        } else {
            rg_mock_bad_value(err, param, r, "'system', 'developer', "
                              "'user', 'assistant', and 'tool'");
            goto done;
        }
    }

    if (rg_mock_open_check(&o, err) != RG_OK) {
        goto done;
    }

    rc = RG_OK;

done:

    rg_mock_open_end(&o);

    return rc;
}


static rg_int_t
rg_mock_validate_tools(json_t *tools, rg_mock_err_t *err)
{
    char         p[64], param[128];
    size_t       k, n, len, j;
    json_t      *t, *v, *fn;
    const char  *s;

    if (!json_is_array(tools)) {
        return rg_mock_bad_type(err, "tools", "an array of objects", tools);
    }

    n = json_array_size(tools);

    if (n == 0) {
        return rg_mock_fail(err, "tools", "Invalid 'tools': empty array. "
                            "Expected an array with minimum length 1, but "
                            "got an empty array instead.");
    }

    if (n > RG_MOCK_MAX_TOOLS) {
        return rg_mock_fail(err, "tools", "Invalid 'tools': array too long. "
                            "Expected an array with maximum length %d, but "
                            "got an array with length %zu instead.",
                            RG_MOCK_MAX_TOOLS, n);
    }

    for (k = 0; k < n; k++) {
        t = json_array_get(tools, k);
        snprintf(p, sizeof(p), "tools[%zu]", k);

        if (!json_is_object(t)) {
            return rg_mock_bad_type(err, p, "an object", t);
        }

        snprintf(param, sizeof(param), "%s.type", p);
        v = json_object_get(t, "type");
        if (v == NULL) {
            return rg_mock_missing(err, param);
        }
        if (!json_is_string(v)) {
            return rg_mock_bad_type(err, param, "a string", v);
        }
        if (strcmp(json_string_value(v), "function") != 0) {
            return rg_mock_bad_value(err, param, json_string_value(v),
                                     "'function'");
        }

        snprintf(param, sizeof(param), "%s.function", p);
        fn = json_object_get(t, "function");
        if (fn == NULL) {
            return rg_mock_missing(err, param);
        }
        if (!json_is_object(fn)) {
            return rg_mock_bad_type(err, param, "an object", fn);
        }

        snprintf(param, sizeof(param), "%s.function.name", p);
        v = json_object_get(fn, "name");
        if (v == NULL) {
            return rg_mock_missing(err, param);
        }
        if (!json_is_string(v)) {
            return rg_mock_bad_type(err, param, "a string", v);
        }

        s = json_string_value(v);
        len = json_string_length(v);

        if (len > RG_MOCK_NAME_MAX) {
            return rg_mock_fail(err, param, "Invalid '%s': string too long. "
                                "Expected a string with maximum length %d, "
                                "but got a string with length %zu instead.",
                                param, RG_MOCK_NAME_MAX, len);
        }

        for (j = 0; j < len; j++) {
            if (!((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z')
                  || (s[j] >= '0' && s[j] <= '9') || s[j] == '_'
                  || s[j] == '-'))
            {
                break;
            }
        }

        if (len == 0 || j < len) {
            return rg_mock_fail(err, param, "Invalid '%s': string does not "
                                "match pattern. Expected a string that "
                                "matches the pattern '^[a-zA-Z0-9_-]+$'.",
                                param);
        }

        snprintf(param, sizeof(param), "%s.function.parameters", p);
        v = json_object_get(fn, "parameters");
        if (v != NULL && !json_is_object(v)) {
            return rg_mock_bad_type(err, param, "an object", v);
        }
    }

    return RG_OK;
}


static rg_int_t
rg_mock_validate(json_t *root, rg_mock_err_t *err)
{
    json_t  *model, *messages, *tools, *stream, *options, *v;

    if (root == NULL) {
        return rg_mock_fail(err, NULL,
                            "We could not parse the JSON body of your "
                            "request.");
    }

    if (!json_is_object(root)) {
        return rg_mock_fail(err, NULL, "Invalid type for request body: "
                            "expected an object, but got %s instead.",
                            rg_mock_type_name(root));
    }

    model = json_object_get(root, "model");
    if (model == NULL || json_is_null(model)) {
        return rg_mock_fail(err, NULL, "you must provide a model parameter");
    }
    if (!json_is_string(model)) {
        return rg_mock_bad_type(err, "model", "a string", model);
    }
    if (json_string_length(model) == 0) {
        return rg_mock_fail(err, NULL, "you must provide a model parameter");
    }

    messages = json_object_get(root, "messages");
    if (messages == NULL) {
        return rg_mock_missing(err, "messages");
    }
    if (!json_is_array(messages)) {
        return rg_mock_bad_type(err, "messages", "an array of objects",
                                messages);
    }
    if (json_array_size(messages) == 0) {
        return rg_mock_fail(err, "messages", "Invalid 'messages': empty "
                            "array. Expected an array with minimum length 1, "
                            "but got an empty array instead.");
    }

    if (rg_mock_validate_messages(messages, err) != RG_OK) {
        return RG_ERROR;
    }

    tools = json_object_get(root, "tools");
    if (tools != NULL && !json_is_null(tools)
        && rg_mock_validate_tools(tools, err) != RG_OK)
    {
        return RG_ERROR;
    }

    stream = json_object_get(root, "stream");
    if (stream != NULL && !json_is_null(stream) && !json_is_boolean(stream)) {
        return rg_mock_bad_type(err, "stream", "a boolean", stream);
    }

    options = json_object_get(root, "stream_options");
    if (options != NULL && !json_is_null(options)) {
        if (!json_is_object(options)) {
            return rg_mock_bad_type(err, "stream_options", "an object",
                                    options);
        }

        v = json_object_get(options, "include_usage");
        if (v != NULL && !json_is_null(v) && !json_is_boolean(v)) {
            return rg_mock_bad_type(err, "stream_options.include_usage",
                                    "a boolean", v);
        }

        if (!json_is_true(stream)) {
            return rg_mock_fail(err, "stream_options", "The "
                                "'stream_options' parameter is only allowed "
                                "when 'stream' is enabled.");
        }
    }

    return RG_OK;
}


/* answers */

static void
rg_mock_conv_init(rg_mock_conv_t *c, json_t *root, size_t body_len)
{
    size_t       i, n;
    json_t      *messages, *m;
    const char  *role;

    memset(c, 0, sizeof(rg_mock_conv_t));

    c->root = root;
    c->body_len = body_len;
    c->model = json_string_value(json_object_get(root, "model"));
    c->n = ++rg_mock.seq;
    c->stream = json_is_true(json_object_get(root, "stream"));
    c->include_usage = json_is_true(json_object_get(
                           json_object_get(root, "stream_options"),
                           "include_usage"));

    messages = json_object_get(root, "messages");
    n = json_array_size(messages);

    for (i = 0; i < n; i++) {
        m = json_array_get(messages, i);
        role = json_string_value(json_object_get(m, "role"));

        if (strcmp(role, "assistant") == 0) {
            c->assistants++;
            if (json_array_size(json_object_get(m, "tool_calls")) > 0) {
                c->rounds++;
            }

        } else if (strcmp(role, "tool") == 0) {
            c->last_tool = json_object_get(m, "content");

        } else if (strcmp(role, "user") == 0) {
            c->last_user = json_object_get(m, "content");
        }
    }
}


/* The text of a message content: the string, or the first text part. */

static const char *
rg_mock_content_text(json_t *content, size_t *len)
{
    size_t   i, n;
    json_t  *part, *text;

    if (json_is_string(content)) {
        *len = json_string_length(content);
        return json_string_value(content);
    }

    n = json_array_size(content);

    for (i = 0; i < n; i++) {
        part = json_array_get(content, i);
        text = json_object_get(part, "text");

        if (json_is_string(text)) {
            *len = json_string_length(text);
            return json_string_value(text);
        }
    }

    *len = 0;

    return "";
}


/* A value that satisfies a JSON Schema well enough for a test tool. The
 * n-th call of a conversation takes examples[n % count], so successive
 * rounds differ the way a real model's calls do. */

static json_t *
rg_mock_schema_value(json_t *schema, size_t n)
{
    size_t       i;
    json_t      *v, *type;
    const char  *t;

    v = json_object_get(schema, "examples");
    if (json_array_size(v) > 0) {
        return json_incref(json_array_get(v, n % json_array_size(v)));
    }

    v = json_object_get(schema, "enum");
    if (json_array_size(v) > 0) {
        return json_incref(json_array_get(v, 0));
    }

    v = json_object_get(schema, "const");
    if (v != NULL) {
        return json_incref(v);
    }

    type = json_object_get(schema, "type");
    t = json_string_value(type);

    if (json_is_array(type)) {
        for (i = 0; i < json_array_size(type); i++) {
            t = json_string_value(json_array_get(type, i));
            if (t != NULL && strcmp(t, "null") != 0) {
                break;
            }
        }
    }

    if (t == NULL || strcmp(t, "string") == 0) {
        return json_string("x");
    }

    if (strcmp(t, "number") == 0 || strcmp(t, "integer") == 0) {
        return json_integer(1);
    }

    if (strcmp(t, "boolean") == 0) {
        return json_true();
    }

    if (strcmp(t, "array") == 0) {
        return json_array();
    }

    if (strcmp(t, "object") == 0) {
        return json_object();
    }

    if (strcmp(t, "null") == 0) {
        return json_null();
    }

    return json_string("x");
}


/* The arguments string of a generated tool call: the required properties
 * of the tool's parameters, or all of them when none is required. */

static char *
rg_mock_schema_args(json_t *params, size_t n)
{
    char        *s;
    size_t       i;
    json_t      *args, *props, *required, *name, *schema;
    const char  *key;

    args = json_object();
    if (args == NULL) {
        return NULL;
    }

    props = json_object_get(params, "properties");
    required = json_object_get(params, "required");

    if (json_is_array(required)) {
        json_array_foreach(required, i, name) {
            key = json_string_value(name);
            if (key != NULL) {
                json_object_set_new(args, key, rg_mock_schema_value(
                                    json_object_get(props, key), n));
            }
        }

    } else if (json_is_object(props)) {
        json_object_foreach(props, key, schema) {
            json_object_set_new(args, key, rg_mock_schema_value(schema, n));
        }
    }

    s = json_dumps(args, JSON_COMPACT);
    json_decref(args);

    return s;
}


/* The usage the mock reports for an answer: a quarter of the request's
 * bytes as prompt tokens, 10 per tool call or a quarter of the text. */

static json_t *
rg_mock_tokens(rg_mock_conv_t *c, json_t *message)
{
    size_t  ncalls, prompt, completion, len;

    ncalls = json_array_size(json_object_get(message, "tool_calls"));
    prompt = c->body_len / 4;

    if (ncalls > 0) {
        completion = 10 * ncalls;

    } else {
        (void) rg_mock_content_text(json_object_get(message, "content"),
                                    &len);
        completion = len / 4 + 1;
    }

    return json_pack("{s:I, s:I, s:I}",
                     "prompt_tokens", (json_int_t) prompt,
                     "completion_tokens", (json_int_t) completion,
                     "total_tokens", (json_int_t) (prompt + completion));
}


/* Wraps an assistant message (stolen) in a chat.completion object and
 * writes it to out, or makes it the events of r when c streams. */

static rg_int_t
rg_mock_envelope(rg_mock_conv_t *c, json_t *message, struct evbuffer *out,
    rg_mock_reply_t *r)
{
    char         id[48];
    size_t       ncalls;
    json_t      *root;
    rg_int_t     rc;

    if (message == NULL) {
        return RG_ERROR;
    }

    ncalls = json_array_size(json_object_get(message, "tool_calls"));

    if (ncalls > 0) {
        snprintf(r->note, sizeof(r->note), "%zu tool call%s", ncalls,
                 ncalls == 1 ? "" : "s");

    } else {
        snprintf(r->note, sizeof(r->note), "final answer");
    }

    snprintf(id, sizeof(id), "chatcmpl-%" PRIu64, c->n);

    root = json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:n, s:s}], s:o}",
                     "id", id,
                     "object", "chat.completion",
                     "created", (json_int_t) time(NULL),
                     "model", c->model,
                     "choices",
                         "index", 0,
                         "message", message,
                         "logprobs",
                         "finish_reason", ncalls ? "tool_calls" : "stop",
                     "usage", rg_mock_tokens(c, message));

    if (root == NULL) {
        return RG_ERROR;
    }

    rc = c->stream ? rg_mock_stream_build(c, root, r)
                   : rg_mock_dump(out, root);
    json_decref(root);

    return rc;
}


static rg_int_t
rg_mock_generic(rg_mock_conv_t *c, struct evbuffer *out, rg_mock_reply_t *r)
{
    char         buf[RG_MOCK_ECHO_MAX + 128], id[96], *args;
    size_t       i, len, n;
    json_t      *tools, *fn, *message, *calls;
    const char  *text;

    tools = json_object_get(c->root, "tools");

    if (json_array_size(tools) > 0 && c->rounds < (size_t) rg_mock.conf.rounds)
    {
        fn = json_object_get(json_array_get(tools, 0), "function");
        calls = json_array();

        for (i = 0; i < (size_t) rg_mock.conf.calls; i++) {
            args = rg_mock_schema_args(json_object_get(fn, "parameters"),
                                       c->rounds * rg_mock.conf.calls + i);
            if (args == NULL) {
                json_decref(calls);
                return RG_ERROR;
            }

            snprintf(id, sizeof(id), "call_%zu_%zu_%" PRIu64,
                     c->rounds, i, c->n);

            json_array_append_new(calls,
                json_pack("{s:s, s:s, s:{s:O, s:s}}",
                          "id", id, "type", "function",
                          "function",
                              "name", json_object_get(fn, "name"),
                              "arguments", args));
            free(args);
        }

        message = json_pack("{s:s, s:n, s:o, s:n}", "role", "assistant",
                            "content", "tool_calls", calls, "refusal");

        return rg_mock_envelope(c, message, out, r);
    }

    if (c->last_tool != NULL) {
        n = snprintf(buf, sizeof(buf), "Final answer after %zu rounds: ",
                     c->rounds);
        text = rg_mock_content_text(c->last_tool, &len);

    } else {
        n = snprintf(buf, sizeof(buf), "Final answer: ");
        text = rg_mock_content_text(c->last_user, &len);
    }

    len = rg_mock_utf8_cut(text, len, RG_MOCK_ECHO_MAX);
    memcpy(buf + n, text, len);
    n += len;

    message = json_pack("{s:s, s:s%, s:n}", "role", "assistant",
                        "content", buf, n, "refusal");

    return rg_mock_envelope(c, message, out, r);
}


/* streamed answers */

/* How many bytes of the valid UTF-8 string s the next piece of a streamed
 * text takes: at most max, never part of a character, at least one. */

static size_t
rg_mock_piece(const char *s, size_t len, size_t max)
{
    size_t  n;

    n = rg_mock_utf8_cut(s, len, max);

    if (n == 0 && len > 0) {
        n = 1;
        while (n < len && ((unsigned char) s[n] & 0xc0) == 0x80) {
            n++;
        }
    }

    return n;
}


static void
rg_mock_stream_free(rg_mock_stream_t *s)
{
    if (s == NULL) {
        return;
    }

    if (s->events != NULL) {
        evbuffer_free(s->events);
    }

    free(s->sizes);
    free(s);
}


/* Appends one event, "data: " and the JSON of data (NULL: [DONE]), led by
 * a comment when it is not the first and --stream-comments is on. */

static rg_int_t
rg_mock_stream_event(rg_mock_stream_t *s, json_t *data)
{
    size_t            before, *sizes, cap;
    rg_int_t          rc;
    const char       *eol;
    struct evbuffer  *b;

    b = s->events;
    eol = rg_mock.conf.stream_crlf ? "\r\n" : "\n";
    before = evbuffer_get_length(b);

    if (s->nsizes == s->cap) {
        cap = s->cap ? 2 * s->cap : 16;
        sizes = realloc(s->sizes, cap * sizeof(size_t));
        if (sizes == NULL) {
            return RG_ERROR;
        }

        s->sizes = sizes;
        s->cap = cap;
    }

    if (s->nsizes > 0 && rg_mock.conf.stream_comments
        && evbuffer_add_printf(b, ": keep-alive%s%s", eol, eol) < 0)
    {
        return RG_ERROR;
    }

    if (evbuffer_add(b, "data: ", 6) != 0) {
        return RG_ERROR;
    }

    if (data != NULL) {
        rc = rg_mock_dump(b, data);

    } else {
        rc = evbuffer_add(b, "[DONE]", 6) == 0 ? RG_OK : RG_ERROR;
    }

    if (rc != RG_OK || evbuffer_add_printf(b, "%s%s", eol, eol) < 0) {
        return RG_ERROR;
    }

    s->sizes[s->nsizes++] = evbuffer_get_length(b) - before;

    return RG_OK;
}


/* Appends the choice of one chunk; steals delta. */

static rg_int_t
rg_mock_stream_add(json_t *items, json_int_t index, json_t *delta,
    const char *finish)
{
    json_t  *choice;

    if (delta == NULL) {
        return RG_ERROR;
    }

    choice = json_pack("{s:I, s:o, s:n, s:s?}", "index", index,
                       "delta", delta, "logprobs", "finish_reason", finish);

    return json_array_append_new(items, choice) == 0 ? RG_OK : RG_ERROR;
}


/* A text (content, refusal) in pieces of --stream-chunk bytes. */

static rg_int_t
rg_mock_stream_text(json_t *items, json_int_t index, const char *key,
    json_t *text)
{
    size_t       off, len, n;
    const char  *s;

    s = json_string_value(text);
    len = json_string_length(text);

    for (off = 0; off < len; off += n) {
        n = rg_mock_piece(s + off, len - off,
                          (size_t) rg_mock.conf.stream_chunk);

        if (rg_mock_stream_add(items, index,
                               json_pack("{s:s%}", key, s + off, n), NULL)
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* The first delta of tool call k: its id, type and name, no arguments. */

static rg_int_t
rg_mock_stream_call_head(json_t *items, json_int_t index, size_t k,
    json_t *tc)
{
    json_t      *fn;
    const char  *type;

    fn = json_object_get(tc, "function");
    type = json_string_value(json_object_get(tc, "type"));

    return rg_mock_stream_add(items, index,
        json_pack("{s:[{s:I, s:s?, s:s, s:{s:s?, s:s}}]}",
                  "tool_calls",
                      "index", (json_int_t) k,
                      "id", json_string_value(json_object_get(tc, "id")),
                      "type", type ? type : "function",
                      "function",
                          "name", json_string_value(
                                      json_object_get(fn, "name")),
                          "arguments", ""),
        NULL);
}


/* The fragment of the arguments of tool call k that starts at *off;
 * returns 1 after adding one, 0 when none is left, RG_ERROR. */

static rg_int_t
rg_mock_stream_call_args(json_t *items, json_int_t index, size_t k,
    json_t *tc, size_t *off)
{
    size_t       len, n;
    json_t      *args;
    const char  *s;

    args = json_object_get(json_object_get(tc, "function"), "arguments");
    s = json_string_value(args);
    len = json_string_length(args);

    if (s == NULL || *off >= len) {
        return 0;
    }

    n = rg_mock_piece(s + *off, len - *off,
                      (size_t) rg_mock.conf.stream_chunk);

    if (rg_mock_stream_add(items, index,
            json_pack("{s:[{s:I, s:{s:s%}}]}",
                      "tool_calls",
                          "index", (json_int_t) k,
                          "function",
                              "arguments", s + *off, n),
            NULL)
        != RG_OK)
    {
        return RG_ERROR;
    }

    *off += n;

    return 1;
}


/* Tool calls one after another, or with --stream-interleave all heads
 * first and then one fragment of each call in turn. */

static rg_int_t
rg_mock_stream_calls(json_t *items, json_int_t index, json_t *calls)
{
    size_t    k, n, *off, pos;
    rg_int_t  rc, more;

    n = json_array_size(calls);

    if (!rg_mock.conf.stream_interleave) {
        for (k = 0; k < n; k++) {
            if (rg_mock_stream_call_head(items, index, k,
                                         json_array_get(calls, k))
                != RG_OK)
            {
                return RG_ERROR;
            }

            pos = 0;

            do {
                rc = rg_mock_stream_call_args(items, index, k,
                                              json_array_get(calls, k), &pos);
            } while (rc == 1);

            if (rc != 0) {
                return RG_ERROR;
            }
        }

        return RG_OK;
    }

    for (k = 0; k < n; k++) {
        if (rg_mock_stream_call_head(items, index, k,
                                     json_array_get(calls, k))
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    off = calloc(n, sizeof(size_t));
    if (off == NULL) {
        return RG_ERROR;
    }

    do {
        more = 0;

        for (k = 0; k < n; k++) {
            rc = rg_mock_stream_call_args(items, index, k,
                                          json_array_get(calls, k), &off[k]);
            if (rc == RG_ERROR) {
                free(off);
                return RG_ERROR;
            }

            more |= rc;
        }

    } while (more);

    free(off);

    return RG_OK;
}


/* The choices of the chunks of one choice of the completion: the role,
 * the content, the refusal, the tool calls, the finish_reason. */

static rg_int_t
rg_mock_stream_choice(json_t *items, json_t *choice, size_t i)
{
    json_t      *msg, *v, *calls, *content, *delta;
    json_int_t   index;
    const char  *role, *finish;

    v = json_object_get(choice, "index");
    index = json_is_integer(v) ? json_integer_value(v) : (json_int_t) i;

    msg = json_object_get(choice, "message");
    calls = json_object_get(msg, "tool_calls");
    content = json_object_get(msg, "content");
    role = json_string_value(json_object_get(msg, "role"));
    role = role ? role : "assistant";

    if (json_array_size(calls) > 0 || !json_is_string(content)) {
        delta = json_pack("{s:s, s:n}", "role", role, "content");

    } else {
        delta = json_pack("{s:s, s:s, s:n}", "role", role, "content", "",
                          "refusal");
    }

    if (rg_mock_stream_add(items, index, delta, NULL) != RG_OK) {
        return RG_ERROR;
    }

    if (json_is_string(content)) {
        if (rg_mock_stream_text(items, index, "content", content) != RG_OK) {
            return RG_ERROR;
        }

    } else if (content != NULL && !json_is_null(content)
               && rg_mock_stream_add(items, index,
                                     json_pack("{s:O}", "content", content),
                                     NULL)
                  != RG_OK)
    {
        return RG_ERROR;
    }

    v = json_object_get(msg, "refusal");
    if (json_is_string(v)
        && rg_mock_stream_text(items, index, "refusal", v) != RG_OK)
    {
        return RG_ERROR;
    }

    if (rg_mock_stream_calls(items, index, calls) != RG_OK) {
        return RG_ERROR;
    }

    finish = json_string_value(json_object_get(choice, "finish_reason"));
    if (finish == NULL) {
        finish = json_array_size(calls) > 0 ? "tool_calls" : "stop";
    }

    return rg_mock_stream_add(items, index, json_object(), finish);
}


/* Turns a chat.completion into the events of r->stream. Each event is
 * "data: " JSON EOL EOL (EOL "\r\n" with --stream-crlf; a ": keep-alive"
 * EOL EOL comment before every event but the first with
 * --stream-comments). The events: per choice, a role delta, the content
 * and refusal in --stream-chunk pieces, per tool call a head and argument
 * fragments, an empty delta with the finish_reason; with include_usage a
 * chunk with "choices": [] and the usage (and "usage": null on the
 * others); data: [DONE] unless --stream-no-done. A scripted stream_error
 * keeps the first event and half of those before the first finish, then
 * sends {"error": ...} and nothing more. */

static rg_int_t
rg_mock_stream_build(rg_mock_conv_t *c, json_t *completion,
    rg_mock_reply_t *r)
{
    char               id[48];
    size_t             i, n, keep, first_finish, len;
    json_t            *items, *chunk, *v, *usage, *err;
    rg_int_t           rc;
    const char        *s, *model;
    rg_mock_stream_t  *st;

    rc = RG_ERROR;
    chunk = NULL;
    items = json_array();

    st = calloc(1, sizeof(rg_mock_stream_t));
    if (items == NULL || st == NULL) {
        goto done;
    }

    st->events = evbuffer_new();
    if (st->events == NULL) {
        goto done;
    }

    first_finish = 0;

    json_array_foreach(json_object_get(completion, "choices"), i, v) {
        if (rg_mock_stream_choice(items, v, i) != RG_OK) {
            goto done;
        }

        if (i == 0) {
            first_finish = json_array_size(items) - 1;
        }
    }

    /* what every chunk carries; "choices" and "usage" change */

    snprintf(id, sizeof(id), "chatcmpl-%" PRIu64, c->n);
    s = json_string_value(json_object_get(completion, "id"));
    model = json_string_value(json_object_get(completion, "model"));
    v = json_object_get(completion, "created");

    chunk = json_pack("{s:s, s:s, s:I, s:s}",
                      "id", s ? s : id,
                      "object", "chat.completion.chunk",
                      "created", json_is_integer(v) ? json_integer_value(v)
                                                    : (json_int_t) time(NULL),
                      "model", model ? model : c->model);
    if (chunk == NULL) {
        goto done;
    }

    v = json_object_get(completion, "system_fingerprint");
    if (v != NULL && json_object_set(chunk, "system_fingerprint", v) != 0) {
        goto done;
    }

    n = json_array_size(items);
    keep = c->stream_error ? 1 + first_finish / 2 : n;
    keep = keep < n ? keep : n;

    for (i = 0; i < keep; i++) {
        if (json_object_set_new(chunk, "choices",
                                json_pack("[O]", json_array_get(items, i)))
            != 0
            || (c->include_usage
                && json_object_set_new(chunk, "usage", json_null()) != 0)
            || rg_mock_stream_event(st, chunk) != RG_OK)
        {
            goto done;
        }
    }

    if (c->stream_error != NULL) {
        err = json_pack("{s:{s:s, s:s}}", "error",
                        "message", c->stream_error, "type", "server_error");
        if (err == NULL || rg_mock_stream_event(st, err) != RG_OK) {
            json_decref(err);
            goto done;
        }

        json_decref(err);
        r->kind = RG_MOCK_FAULT;

    } else {
        if (c->include_usage) {
            usage = json_object_get(completion, "usage");
            usage = usage ? json_incref(usage)
                          : rg_mock_tokens(c, json_object_get(json_array_get(
                                json_object_get(completion, "choices"), 0),
                                "message"));

            if (json_object_set_new(chunk, "choices", json_array()) != 0
                || json_object_set_new(chunk, "usage", usage) != 0
                || rg_mock_stream_event(st, chunk) != RG_OK)
            {
                goto done;
            }
        }

        if (!rg_mock.conf.stream_no_done
            && rg_mock_stream_event(st, NULL) != RG_OK)
        {
            goto done;
        }
    }

    if (st->nsizes == 0) {
        goto done;
    }

    len = strlen(r->note);
    snprintf(r->note + len, sizeof(r->note) - len, ", %zu events%s",
             st->nsizes, c->stream_error ? ", stream error" : "");

    r->stream = st;
    st = NULL;
    rc = RG_OK;

done:

    rg_mock_stream_free(st);
    json_decref(chunk);
    json_decref(items);

    return rc;
}


/* A scripted "body" streams when it is a chat.completion: a non-empty
 * "choices" array of objects with a "message" object. */

static int
rg_mock_stream_body(json_t *body)
{
    size_t   i;
    json_t  *choices, *choice;

    choices = json_object_get(body, "choices");
    if (json_array_size(choices) == 0) {
        return 0;
    }

    json_array_foreach(choices, i, choice) {
        if (!json_is_object(json_object_get(choice, "message"))) {
            return 0;
        }
    }

    return 1;
}


/* faults */

static int
rg_mock_fault_pick(void)
{
    uint64_t  n;

    n = ++rg_mock.stats.fault_seq;

    if (rg_mock.conf.fault == RG_MOCK_FAULT_NONE) {
        return RG_MOCK_FAULT_NONE;
    }

    if (rg_mock.conf.fault_every > 0) {
        return n % (uint64_t) rg_mock.conf.fault_every == 0
               ? rg_mock.conf.fault : RG_MOCK_FAULT_NONE;
    }

    if (rg_mock.conf.fault_count == 0
        || n <= (uint64_t) rg_mock.conf.fault_count)
    {
        return rg_mock.conf.fault;
    }

    return RG_MOCK_FAULT_NONE;
}


/* The OpenAI-style error body of an injected (or scripted) status. */

static rg_int_t
rg_mock_status_body(struct evbuffer *out, int status, rg_mock_conv_t *c)
{
    char    message[320];
    size_t  len;

    switch (status) {

    case 429:
        return rg_mock_error_body(out, "Rate limit reached for requests",
                                  "requests", NULL, "rate_limit_exceeded");

    case 500:
        return rg_mock_error_body(out, "The server had an error while "
                                  "processing your request.", "server_error",
                                  NULL, NULL);

    case 400:
        return rg_mock_error_body(out, "Invalid request (injected fault).",
                                  "invalid_request_error", NULL, NULL);

    case 401:
        return rg_mock_error_body(out, "Incorrect API key provided.",
                                  "invalid_request_error", NULL,
                                  "invalid_api_key");

    case 404:
        len = rg_mock_utf8_cut(c->model, strlen(c->model), 256);
        snprintf(message, sizeof(message), "The model `%.*s` does not exist "
                 "or you do not have access to it.", (int) len, c->model);
        return rg_mock_error_body(out, message, "invalid_request_error",
                                  NULL, "model_not_found");

    default:
        snprintf(message, sizeof(message), "rg_mock: scripted status %d",
                 status);
        return rg_mock_error_body(out, message, status < 500
                                  ? "invalid_request_error" : "server_error",
                                  NULL, NULL);
    }
}


static void
rg_mock_fault(struct evhttp_request *req, int fault, rg_mock_conv_t *c,
    rg_mock_reply_t *r)
{
    char               value[32];
    struct evbuffer   *out;
    struct evkeyvalq  *headers;

    out = evhttp_request_get_output_buffer(req);
    headers = evhttp_request_get_output_headers(req);

    r->kind = RG_MOCK_FAULT;
    snprintf(r->note, sizeof(r->note), "fault %s", rg_mock_fault_names[fault]);

    switch (fault) {

    case RG_MOCK_FAULT_429:
        r->status = 429;
        rg_mock_status_body(out, 429, c);

        if (rg_mock.conf.retry_after_ms >= 0) {
            snprintf(value, sizeof(value), "%ld", rg_mock.conf.retry_after_ms);
            evhttp_add_header(headers, "retry-after-ms", value);

        } else if (rg_mock.conf.retry_after >= 0) {
            snprintf(value, sizeof(value), "%ld", rg_mock.conf.retry_after);
            evhttp_add_header(headers, "Retry-After", value);
        }
        break;

    case RG_MOCK_FAULT_500:
        r->status = 500;
        rg_mock_status_body(out, 500, c);
        break;

    case RG_MOCK_FAULT_400:
        r->status = 400;
        rg_mock_status_body(out, 400, c);
        break;

    case RG_MOCK_FAULT_401:
        r->status = 401;
        rg_mock_status_body(out, 401, c);
        break;

    case RG_MOCK_FAULT_404:
        r->status = 404;
        rg_mock_status_body(out, 404, c);
        break;

    case RG_MOCK_FAULT_BAD:
        r->status = 200;
        evbuffer_add_printf(out, "{\"id\":\"chatcmpl-bad\",\"choices\":"
                            "[{\"message\":");
        break;

    case RG_MOCK_FAULT_HANG:
        r->action = RG_MOCK_HANG;
        break;

    default: /* RG_MOCK_FAULT_CLOSE */
        r->action = RG_MOCK_CLOSE;
        break;
    }
}


/* scripted mode */

static json_t *
rg_mock_script_message(json_t *tmpl, rg_mock_conv_t *c)
{
    char         id[96];
    size_t       i;
    json_t      *msg, *calls, *tc, *out, *v;
    const char  *key;

    msg = json_object();
    calls = json_object_get(tmpl, "tool_calls");

    v = json_object_get(tmpl, "content");
    json_object_set_new(msg, "role", json_string("assistant"));
    json_object_set(msg, "content", v ? v : json_null());

    if (json_array_size(calls) > 0) {
        out = json_array();

        json_array_foreach(calls, i, tc) {
            v = json_object_get(tc, "id");

            if (v == NULL) {
                snprintf(id, sizeof(id), "call_%zu_%zu_%" PRIu64,
                         c->assistants, i, c->n);
            }

            json_array_append_new(out,
                json_pack("{s:s, s:O, s:O}",
                          "id", v ? json_string_value(v) : id,
                          "type", json_object_get(tc, "type"),
                          "function", json_object_get(tc, "function")));
        }

        json_object_set_new(msg, "tool_calls", out);
    }

    v = json_object_get(tmpl, "refusal");
    json_object_set(msg, "refusal", v ? v : json_null());

    json_object_foreach(tmpl, key, v) {
        if (json_object_get(msg, key) == NULL
            && strcmp(key, "tool_calls") != 0)
        {
            json_object_set(msg, key, v);
        }
    }

    return msg;
}


static rg_int_t
rg_mock_script(struct evhttp_request *req, rg_mock_conv_t *c,
    rg_mock_reply_t *r)
{
    size_t             n;
    json_t            *entry, *v;
    const char        *key;
    struct evbuffer   *out;
    struct evkeyvalq  *headers;

    n = json_array_size(rg_mock.script);
    entry = json_array_get(rg_mock.script, c->assistants < n
                                           ? c->assistants : n - 1);

    out = evhttp_request_get_output_buffer(req);
    headers = evhttp_request_get_output_headers(req);

    v = json_object_get(entry, "status");
    r->status = v ? (int) json_integer_value(v) : 200;
    r->kind = r->status / 100 == 2 ? RG_MOCK_COMPLETION : RG_MOCK_FAULT;
    r->delay += (long) json_integer_value(json_object_get(entry, "delay_ms"));

    snprintf(r->note, sizeof(r->note), "script entry %zu",
             c->assistants < n ? c->assistants : n - 1);

    if (json_is_true(json_object_get(entry, "hang"))) {
        r->action = RG_MOCK_HANG;
        r->kind = RG_MOCK_FAULT;
        return RG_OK;
    }

    if (json_is_true(json_object_get(entry, "close"))) {
        r->action = RG_MOCK_CLOSE;
        r->kind = RG_MOCK_FAULT;
        return RG_OK;
    }

    json_object_foreach(json_object_get(entry, "headers"), key, v) {
        evhttp_remove_header(headers, key);
        evhttp_add_header(headers, key, json_string_value(v));
    }

    if ((v = json_object_get(entry, "raw")) != NULL) {
        return evbuffer_add(out, json_string_value(v),
                            json_string_length(v)) == 0 ? RG_OK : RG_ERROR;
    }

    /* an error in the middle of a stream; a 500 when not streaming */

    v = json_object_get(entry, "stream_error");

    if (v != NULL && r->status < 400) {
        if (!c->stream) {
            r->status = 500;
            r->kind = RG_MOCK_FAULT;
            return rg_mock_error_body(out, json_string_value(v),
                                      "server_error", NULL, NULL);
        }

        c->stream_error = json_string_value(v);
    }

    if ((v = json_object_get(entry, "body")) != NULL) {
        if (c->stream && r->status / 100 == 2 && rg_mock_stream_body(v)) {
            return rg_mock_stream_build(c, v, r);
        }

        return rg_mock_dump(out, v);
    }

    if ((v = json_object_get(entry, "message")) != NULL) {
        return rg_mock_envelope(c, rg_mock_script_message(v, c), out, r);
    }

    if (r->status >= 400) {
        return rg_mock_status_body(out, r->status, c);
    }

    return rg_mock_generic(c, out, r);
}


/* Checks a script entry's message and turns its tool calls into the wire
 * form: {"id"?, "type", "function": {"name", "arguments": "<string>"}}. */

static rg_int_t
rg_mock_script_message_load(json_t *msg, size_t e)
{
    char    *s;
    size_t   i;
    json_t  *calls, *tc, *fn, *v;

    if (!json_is_object(msg)) {
        fprintf(stderr, "rg_mock: script entry %zu: \"message\" must be an "
                "object\n", e);
        return RG_ERROR;
    }

    calls = json_object_get(msg, "tool_calls");
    if (calls == NULL || json_is_null(calls)) {
        return RG_OK;
    }

    if (!json_is_array(calls)) {
        fprintf(stderr, "rg_mock: script entry %zu: \"tool_calls\" must be "
                "an array\n", e);
        return RG_ERROR;
    }

    json_array_foreach(calls, i, tc) {
        if (!json_is_object(tc)) {
            goto invalid;
        }

        fn = json_object_get(tc, "function");

        if (fn == NULL) {
            fn = json_object();
            if (fn == NULL) {
                return RG_ERROR;
            }

            if ((v = json_object_get(tc, "name")) != NULL) {
                json_object_set(fn, "name", v);
            }
            if ((v = json_object_get(tc, "arguments")) != NULL) {
                json_object_set(fn, "arguments", v);
            }

            json_object_del(tc, "name");
            json_object_del(tc, "arguments");
            json_object_set_new(tc, "function", fn);
        }

        if (!json_is_object(fn) || !json_is_string(json_object_get(fn, "name")))
        {
            goto invalid;
        }

        v = json_object_get(fn, "arguments");

        if (v == NULL) {
            json_object_set_new(fn, "arguments", json_string("{}"));

        } else if (!json_is_string(v)) {
            s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            if (s == NULL) {
                return RG_ERROR;
            }
            json_object_set_new(fn, "arguments", json_string(s));
            free(s);
        }

        v = json_object_get(tc, "type");
        if (v == NULL) {
            json_object_set_new(tc, "type", json_string("function"));

        } else if (!json_is_string(v)) {
            goto invalid;
        }

        v = json_object_get(tc, "id");
        if (v != NULL && !json_is_string(v)) {
            goto invalid;
        }
    }

    return RG_OK;

invalid:

    fprintf(stderr, "rg_mock: script entry %zu: tool call %zu must be "
            "{\"id\"?, \"type\"?, \"function\": {\"name\": STRING, "
            "\"arguments\"?}} or {\"name\": STRING, \"arguments\"?}\n", e, i);

    return RG_ERROR;
}


static rg_int_t
rg_mock_script_load(const char *file)
{
    size_t         e, bodies;
    json_t        *script, *entry, *v, *h;
    const char    *key, *hkey;
    json_error_t   jerr;

    script = json_load_file(file, 0, &jerr);
    if (script == NULL) {
        if (jerr.line > 0) {
            fprintf(stderr, "rg_mock: cannot load script \"%s\": %s in "
                    "%s:%d\n", file, jerr.text, file, jerr.line);

        } else {
            fprintf(stderr, "rg_mock: cannot load script \"%s\": %s\n",
                    file, jerr.text);
        }

        return RG_ERROR;
    }

    rg_mock.script = script;

    if (!json_is_array(script) || json_array_size(script) == 0) {
        fprintf(stderr, "rg_mock: script \"%s\" must be a non-empty JSON "
                "array\n", file);
        return RG_ERROR;
    }

    json_array_foreach(script, e, entry) {
        if (!json_is_object(entry)) {
            fprintf(stderr, "rg_mock: script entry %zu must be an object\n",
                    e);
            return RG_ERROR;
        }

        bodies = 0;

        json_object_foreach(entry, key, v) {
            if (strcmp(key, "status") == 0) {
                if (!json_is_integer(v) || json_integer_value(v) < 100
                    || json_integer_value(v) > 599)
                {
                    goto invalid;
                }

            } else if (strcmp(key, "headers") == 0) {
                if (!json_is_object(v)) {
                    goto invalid;
                }

                json_object_foreach(v, hkey, h) {
                    if (!json_is_string(h) || strpbrk(hkey, "\r\n: ")
                        || strpbrk(json_string_value(h), "\r\n"))
                    {
                        goto invalid;
                    }
                }

            } else if (strcmp(key, "body") == 0) {
                bodies++;

            } else if (strcmp(key, "raw") == 0) {
                bodies++;
                if (!json_is_string(v)) {
                    goto invalid;
                }

            } else if (strcmp(key, "message") == 0) {
                bodies++;
                if (rg_mock_script_message_load(v, e) != RG_OK) {
                    return RG_ERROR;
                }

            } else if (strcmp(key, "delay_ms") == 0) {
                if (!json_is_integer(v) || json_integer_value(v) < 0
                    || json_integer_value(v) > 86400000)
                {
                    goto invalid;
                }

            } else if (strcmp(key, "hang") == 0
                       || strcmp(key, "close") == 0)
            {
                if (!json_is_boolean(v)) {
                    goto invalid;
                }

            } else if (strcmp(key, "stream_error") == 0) {
                if (!json_is_string(v)) {
                    goto invalid;
                }

            } else {
                fprintf(stderr, "rg_mock: script entry %zu: unknown key "
                        "\"%s\"\n", e, key);
                return RG_ERROR;
            }
        }

        if (bodies > 1) {
            fprintf(stderr, "rg_mock: script entry %zu: use only one of "
                    "\"body\", \"raw\" and \"message\"\n", e);
            return RG_ERROR;
        }
    }

    return RG_OK;

invalid:

    fprintf(stderr, "rg_mock: script entry %zu: invalid \"%s\"\n", e, key);

    return RG_ERROR;
}


/* pending replies */

static void
rg_mock_account(rg_mock_reply_t *r)
{
    switch (r->kind) {
    case RG_MOCK_COMPLETION:
        rg_mock.stats.completions++;
        break;
    case RG_MOCK_FAULT:
        rg_mock.stats.faults++;
        break;
    case RG_MOCK_PAGE:
        break;
    default:
        rg_mock.stats.rejected++;
        break;
    }

    if (rg_mock.conf.quiet) {
        return;
    }

    switch (r->action) {
    case RG_MOCK_HANG:
        rg_mock_log("request %" PRIu64 ": hang (%s)", r->number, r->note);
        break;
    case RG_MOCK_CLOSE:
        rg_mock_log("request %" PRIu64 ": close (%s)", r->number, r->note);
        break;
    default:
        rg_mock_log("request %" PRIu64 ": %d (%s)", r->number, r->status,
                    r->note);
        break;
    }
}


static void
rg_mock_pending_free(rg_mock_pending_t *p)
{
    if (p->timer != NULL) {
        event_free(p->timer);
    }

    if (p->watch != NULL) {
        event_free(p->watch);
    }

    if (p->prev != NULL) {
        p->prev->next = p->next;

    } else {
        rg_mock.pending = p->next;
    }

    if (p->next != NULL) {
        p->next->prev = p->prev;
    }

    rg_mock.stats.inflight--;

    rg_mock_stream_free(p->reply.stream);
    free(p);
}


/* The connection of a pending request is going away (client gone, close
 * fault, shutdown). evhttp frees the request itself unless it detached it
 * from the connection first; then the request is ours. */

static void
rg_mock_close_handler(struct evhttp_connection *evcon, void *arg)
{
    rg_mock_pending_t  *p = arg;

    evhttp_connection_set_closecb(evcon, NULL, NULL);

    if (evhttp_request_get_connection(p->req) == NULL) {
        evhttp_request_free(p->req);
    }

    if (p->reply.action != RG_MOCK_CLOSE) {
        rg_mock_log("request %" PRIu64 ": client went away", p->reply.number);
    }

    rg_mock_pending_free(p);
}


/* evhttp stops reading while a request waits for its reply, so it would
 * not notice the client leaving; peek at the socket instead. */

static void
rg_mock_watch_handler(evutil_socket_t fd, short events, void *arg)
{
    char                c;
    ssize_t             rc;
    rg_mock_pending_t  *p = arg;

    (void) events;

    rc = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

    if (rc > 0) {
        /* a pipelined request: evhttp reads it after this reply */
        return;
    }

    if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    {
        event_add(p->watch, NULL);
        return;
    }

    /* runs rg_mock_close_handler(), which frees p */
    evhttp_connection_free(p->evcon);
}


/* Starts a streamed reply: the status line and headers go out now, the
 * events follow as chunks. */

static void
rg_mock_stream_start(rg_mock_pending_t *p)
{
    int                  on;
    evutil_socket_t      fd;
    struct bufferevent  *bev;

    /* while evhttp writes a reply it reads too, and notices a client that
     * leaves mid-stream; the watch would only race with it */

    if (p->watch != NULL) {
        event_free(p->watch);
        p->watch = NULL;
    }

    /* small events must not wait for the client's delayed ACKs */

    bev = evhttp_connection_get_bufferevent(p->evcon);
    fd = bev ? bufferevent_getfd(bev) : -1;

    if (fd >= 0) {
        on = 1;
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    }

    evhttp_send_reply_start(p->req, p->reply.status,
                            rg_mock_reason(p->reply.status));
}


static void rg_mock_stream_send(rg_mock_pending_t *p);


static void
rg_mock_stream_drained(struct evhttp_connection *evcon, void *arg)
{
    (void) evcon;

    rg_mock_stream_send(arg);
}


/* Sends the next chunk of a stream: the first event alone, then with
 * --stream-delay one event per chunk and the delay between them, without
 * it the rest in one chunk as soon as the first is written. After the
 * last chunk the reply ends and p is gone. */

static void
rg_mock_stream_send(rg_mock_pending_t *p)
{
    size_t                  n;
    struct evbuffer        *buf;
    rg_mock_stream_t       *s;
    struct evhttp_request  *req;

    s = p->reply.stream;

    if (s->next == 0) {
        rg_mock_stream_start(p);
    }

    buf = evbuffer_new();
    if (buf == NULL) {
        goto failed;
    }

    if (s->next == 0 || rg_mock.conf.stream_delay > 0) {
        n = s->sizes[s->next++];

    } else {
        n = evbuffer_get_length(s->events);
        s->next = s->nsizes;
    }

    if (evbuffer_remove_buffer(s->events, buf, n) != (int) n) {
        goto failed;
    }

    if (s->next == s->nsizes) {
        req = p->req;

        evhttp_connection_set_closecb(p->evcon, NULL, NULL);
        rg_mock_pending_free(p);

        evhttp_send_reply_chunk(req, buf);
        evhttp_send_reply_end(req);
        evbuffer_free(buf);
        return;
    }

    if (rg_mock.conf.stream_delay == 0) {
        evhttp_send_reply_chunk_with_cb(p->req, buf, rg_mock_stream_drained,
                                        p);
        evbuffer_free(buf);
        return;
    }

    evhttp_send_reply_chunk(p->req, buf);
    evbuffer_free(buf);

    if (evtimer_add(p->timer, rg_mock.stream_tv) == 0) {
        return;
    }

    buf = NULL;

failed:

    /* no memory to go on: end the stream the way a crashed server does */

    fprintf(stderr, "rg_mock: request %" PRIu64 ": cannot stream, out of "
            "memory\n", p->reply.number);

    if (buf != NULL) {
        evbuffer_free(buf);
    }

    /* runs rg_mock_close_handler(), which frees p */
    evhttp_connection_free(p->evcon);
}


static void
rg_mock_timer_handler(evutil_socket_t fd, short events, void *arg)
{
    int                        status;
    rg_mock_pending_t         *p = arg;
    struct evhttp_request     *req;
    struct evhttp_connection  *evcon;

    (void) fd;
    (void) events;

    if (p->reply.stream != NULL && p->reply.stream->next > 0) {
        rg_mock_stream_send(p);
        return;
    }

    rg_mock_account(&p->reply);

    switch (p->reply.action) {

    case RG_MOCK_SEND:
        if (p->reply.stream != NULL) {
            rg_mock_stream_send(p);
            return;
        }

        req = p->req;
        evcon = p->evcon;
        status = p->reply.status;

        evhttp_connection_set_closecb(evcon, NULL, NULL);
        rg_mock_pending_free(p);
        evhttp_send_reply(req, status, rg_mock_reason(status), NULL);
        return;

    case RG_MOCK_CLOSE:
        /* runs rg_mock_close_handler(), which frees p */
        evhttp_connection_free(p->evcon);
        return;

    default: /* RG_MOCK_HANG: wait for the client to leave */
        event_free(p->timer);
        p->timer = NULL;
        return;
    }
}


static void
rg_mock_dispatch(struct evhttp_request *req, rg_mock_reply_t *r)
{
    struct timeval       tv;
    evutil_socket_t      fd;
    rg_mock_pending_t   *p;
    struct bufferevent  *bev;

    if (r->delay == 0 && r->action == RG_MOCK_SEND && r->stream == NULL) {
        rg_mock_account(r);
        rg_mock.stats.inflight--;
        evhttp_send_reply(req, r->status, rg_mock_reason(r->status), NULL);
        return;
    }

    p = calloc(1, sizeof(rg_mock_pending_t));
    if (p == NULL) {
        goto failed;
    }

    p->req = req;
    p->evcon = evhttp_request_get_connection(req);
    p->reply = *r;

    p->next = rg_mock.pending;
    if (p->next != NULL) {
        p->next->prev = p;
    }
    rg_mock.pending = p;

    evhttp_connection_set_closecb(p->evcon, rg_mock_close_handler, p);

    bev = evhttp_connection_get_bufferevent(p->evcon);
    fd = bev ? bufferevent_getfd(bev) : -1;

    if (fd >= 0) {
        p->watch = event_new(rg_mock.base, fd, EV_READ, rg_mock_watch_handler,
                             p);
        if (p->watch == NULL || event_add(p->watch, NULL) != 0) {
            goto failed;
        }
    }

    if (r->delay == 0 && r->action == RG_MOCK_HANG) {
        rg_mock_account(r);
        return;
    }

    p->timer = evtimer_new(rg_mock.base, rg_mock_timer_handler, p);
    if (p->timer == NULL) {
        goto failed;
    }

    if (r->delay == rg_mock.conf.latency && rg_mock.latency_tv != NULL) {
        if (evtimer_add(p->timer, rg_mock.latency_tv) != 0) {
            goto failed;
        }

    } else {
        tv.tv_sec = r->delay / 1000;
        tv.tv_usec = (r->delay % 1000) * 1000;

        if (evtimer_add(p->timer, &tv) != 0) {
            goto failed;
        }
    }

    return;

failed:

    fprintf(stderr, "rg_mock: cannot delay a reply, out of memory\n");

    if (p != NULL) {
        evhttp_connection_set_closecb(p->evcon, NULL, NULL);
        rg_mock_pending_free(p);

    } else {
        rg_mock_stream_free(r->stream);
        rg_mock.stats.inflight--;
    }

    r->stream = NULL;

    evbuffer_drain(evhttp_request_get_output_buffer(req),
                   evbuffer_get_length(evhttp_request_get_output_buffer(req)));
    evhttp_remove_header(evhttp_request_get_output_headers(req),
                         "Content-Type");
    rg_mock_send_error(req, 500, "rg_mock: out of memory", "server_error");
}


/* endpoints */

static void
rg_mock_record(struct evhttp_request *req, json_t *body)
{
    char               name[128];
    size_t             i;
    json_t            *headers, *v;
    struct evkeyval   *kv;
    struct evkeyvalq  *in;

    headers = json_object();
    if (headers == NULL) {
        return;
    }

    in = evhttp_request_get_input_headers(req);

    for (kv = in->tqh_first; kv != NULL; kv = kv->next.tqe_next) {
        for (i = 0; kv->key[i] != '\0' && i < sizeof(name) - 1; i++) {
            name[i] = (kv->key[i] >= 'A' && kv->key[i] <= 'Z')
                      ? kv->key[i] - 'A' + 'a' : kv->key[i];
        }
        name[i] = '\0';

        if (strcmp(name, "authorization") == 0) {
            v = json_string("present");

        } else {
            v = json_string(kv->value);
        }

        if (v != NULL) {
            json_object_set_new(headers, name, v);
        }
    }

    json_decref(rg_mock.last_headers);
    json_decref(rg_mock.last_body);

    rg_mock.last_headers = headers;
    rg_mock.last_body = body ? json_incref(body) : json_null();

    /* every request, for tests that compare two runs: its request id and
     * its body, one JSON line each (a test tool; blocking is fine) */
    if (rg_mock.conf.request_log) {
        FILE    *f;
        char    *line;
        json_t  *rec;

        rec = json_pack("{s:I, s:O?, s:O?, s:O?}", "n",
                        (json_int_t) rg_mock.stats.requests,
                        "request_id", json_object_get(headers, "x-request-id"),
                        "traceparent", json_object_get(headers, "traceparent"),
                        "body", body);
        line = rec ? json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        f = line ? fopen(rg_mock.conf.request_log, "a") : NULL;

        if (f) {
            fprintf(f, "%s\n", line);
            fclose(f);
        }

        free(line);
        json_decref(rec);
    }
}


static void
rg_mock_chat(struct evhttp_request *req)
{
    int                fault;
    size_t             len;
    json_t            *root;
    uint64_t           now;
    const char        *type;
    rg_mock_err_t      err;
    rg_mock_conv_t     conv;
    json_error_t       jerr;
    unsigned char     *data;
    rg_mock_reply_t    r;
    struct evbuffer   *in, *out;
    struct evkeyvalq  *headers;

    now = rg_mock_now_ms();

    rg_mock.stats.requests++;
    if (rg_mock.stats.ntimes < RG_MOCK_MAX_TIMES) {
        rg_mock.stats.times[rg_mock.stats.ntimes++] = now;
    }

    rg_mock.stats.inflight++;
    if (rg_mock.stats.inflight > rg_mock.stats.max_inflight) {
        rg_mock.stats.max_inflight = rg_mock.stats.inflight;
    }

    in = evhttp_request_get_input_buffer(req);
    len = evbuffer_get_length(in);
    data = len ? evbuffer_pullup(in, -1) : NULL;
    /* JSON allows \u0000 in strings, and so does the real API */
    root = data ? json_loadb((const char *) data, len, JSON_ALLOW_NUL, &jerr)
                : NULL;

    rg_mock_record(req, root);

    memset(&r, 0, sizeof(rg_mock_reply_t));
    r.status = 200;
    r.action = RG_MOCK_SEND;
    r.kind = RG_MOCK_COMPLETION;
    r.delay = rg_mock.conf.latency;
    r.number = rg_mock.stats.requests;

    out = evhttp_request_get_output_buffer(req);
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "application/json");

    /* the provider's own id of the response */
    if (rg_mock.conf.request_id != NULL) {
        char  rid[48];

        snprintf(rid, sizeof(rid), "req-mock-%" PRIu64, r.number);
        evhttp_add_header(evhttp_request_get_output_headers(req),
                          rg_mock.conf.request_id, rid);
    }

    if (rg_mock_validate(root, &err) != RG_OK) {
        r.status = 400;
        r.kind = RG_MOCK_REJECTED;
        snprintf(r.note, sizeof(r.note), "rejected: %.120s", err.message);
        rg_mock_error_body(out, err.message, "invalid_request_error",
                           err.param[0] ? err.param : NULL, NULL);
        goto reply;
    }

    rg_mock_conv_init(&conv, root, len);

    fault = rg_mock_fault_pick();
    if (fault != RG_MOCK_FAULT_NONE) {
        rg_mock_fault(req, fault, &conv, &r);
        goto reply;
    }

    if ((rg_mock.script != NULL ? rg_mock_script(req, &conv, &r)
                                : rg_mock_generic(&conv, out, &r))
        != RG_OK)
    {
        rg_mock_stream_free(r.stream);
        r.stream = NULL;
        evbuffer_drain(out, evbuffer_get_length(out));
        r.status = 500;
        r.action = RG_MOCK_SEND;
        r.kind = RG_MOCK_FAULT;
        snprintf(r.note, sizeof(r.note), "out of memory");
        rg_mock_error_body(out, "rg_mock: out of memory", "server_error",
                           NULL, NULL);

    } else if (r.stream != NULL) {
        /* unless a script set a Content-Type of its own */
        headers = evhttp_request_get_output_headers(req);
        type = evhttp_find_header(headers, "Content-Type");

        if (type == NULL || strcmp(type, "application/json") == 0) {
            evhttp_remove_header(headers, "Content-Type");
            evhttp_add_header(headers, "Content-Type", "text/event-stream");
        }

        evhttp_add_header(headers, "Cache-Control", "no-cache");
    }

reply:

    json_decref(root);
    rg_mock_dispatch(req, &r);
}


static void
rg_mock_stats_reply(struct evhttp_request *req)
{
    uint64_t          i;
    struct evbuffer  *out;

    out = evhttp_request_get_output_buffer(req);

    evbuffer_add_printf(out, "{\"requests\":%" PRIu64 ",\"completions\":%"
                        PRIu64 ",\"faults\":%" PRIu64 ",\"inflight\":%" PRIu64
                        ",\"max_inflight\":%" PRIu64 ",\"rejected\":%" PRIu64
                        ",\"times_ms\":[",
                        rg_mock.stats.requests, rg_mock.stats.completions,
                        rg_mock.stats.faults, rg_mock.stats.inflight,
                        rg_mock.stats.max_inflight, rg_mock.stats.rejected);

    for (i = 0; i < rg_mock.stats.ntimes; i++) {
        evbuffer_add_printf(out, i ? ",%" PRIu64 : "%" PRIu64,
                            rg_mock.stats.times[i]);
    }

    evbuffer_add(out, "]}", 2);

    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "application/json");
    evhttp_send_reply(req, 200, NULL, NULL);
}


static void
rg_mock_last_request_reply(struct evhttp_request *req)
{
    json_t  *j;

    j = json_pack("{s:O?, s:O?}", "headers", rg_mock.last_headers,
                  "body", rg_mock.last_body);

    if (j != NULL && rg_mock.last_headers == NULL) {
        json_object_set_new(j, "headers", json_object());
    }

    rg_mock_send_json(req, j);
    json_decref(j);
}


static void
rg_mock_reset_reply(struct evhttp_request *req)
{
    uint64_t  inflight;

    inflight = rg_mock.stats.inflight;

    memset(&rg_mock.stats, 0, sizeof(rg_mock_stats_t));

    /* replies still pending will be answered and counted down */
    rg_mock.stats.inflight = inflight;
    rg_mock.stats.max_inflight = inflight;

    rg_mock_log("counters reset");

    evbuffer_add_printf(evhttp_request_get_output_buffer(req),
                        "{\"reset\":true}");
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "application/json");
    evhttp_send_reply(req, 200, NULL, NULL);
}


/* one line appended to a test's file (a test tool; blocking is fine) */
static void
rg_mock_append(const char *file, const char *line, size_t len)
{
    FILE  *f;

    f = fopen(file, "a");
    if (f == NULL) {
        return;
    }

    fwrite(line, 1, len, f);
    fputc('\n', f);
    fclose(f);
}


/* an OTLP/HTTP collector: the body, made one line, goes to --otlp-log */
static void
rg_mock_traces(struct evhttp_request *req)
{
    char             *line;
    size_t            len;
    json_t           *j;
    json_error_t      err;
    struct evbuffer  *in;
    unsigned char    *data;

    in = evhttp_request_get_input_buffer(req);
    len = evbuffer_get_length(in);
    data = len ? evbuffer_pullup(in, -1) : NULL;

    j = data ? json_loadb((const char *) data, len, 0, &err) : NULL;
    if (j == NULL) {
        rg_mock_send_error(req, 400, "not an OTLP JSON body",
                           "invalid_request_error");
        return;
    }

    line = json_dumps(j, JSON_COMPACT);
    json_decref(j);

    if (line) {
        rg_mock_append(rg_mock.conf.otlp_log, line, strlen(line));
        free(line);
    }

    if (rg_mock.conf.otlp_status != 200) {
        rg_mock_send_error(req, (int) rg_mock.conf.otlp_status,
                           "the collector refuses (--otlp-status)",
                           "server_error");
        return;
    }

    evbuffer_add_printf(evhttp_request_get_output_buffer(req), "{}");
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "application/json");
    evhttp_send_reply(req, 200, NULL, NULL);
}


/* a page for an http tool; the request log says what it carried */
static void
rg_mock_page(struct evhttp_request *req)
{
    char             *line;
    json_t           *rec;
    const char       *tp;
    rg_mock_reply_t   r;

    tp = evhttp_find_header(evhttp_request_get_input_headers(req),
                            "traceparent");

    if (rg_mock.conf.request_log) {
        rec = json_pack("{s:s, s:s?}", "path", "/page", "traceparent", tp);
        line = rec ? json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        if (line) {
            rg_mock_append(rg_mock.conf.request_log, line, strlen(line));
        }
        free(line);
        json_decref(rec);
    }

    evbuffer_add_printf(evhttp_request_get_output_buffer(req),
                        "a page of the mock\n");
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "text/plain");

    if (rg_mock.conf.page_delay == 0) {
        evhttp_send_reply(req, 200, NULL, NULL);
        return;
    }

    /* a slow page: in flight (max_inflight counts it), not a completion */
    memset(&r, 0, sizeof(r));
    r.status = 200;
    r.action = RG_MOCK_SEND;
    r.kind = RG_MOCK_PAGE;
    r.delay = rg_mock.conf.page_delay;
    snprintf(r.note, sizeof(r.note), "GET /page");

    rg_mock.stats.inflight++;
    if (rg_mock.stats.inflight > rg_mock.stats.max_inflight) {
        rg_mock.stats.max_inflight = rg_mock.stats.inflight;
    }

    rg_mock_dispatch(req, &r);
}


static const char *
rg_mock_method_name(enum evhttp_cmd_type m)
{
    switch (m) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_OPTIONS:
        return "OPTIONS";
    case EVHTTP_REQ_TRACE:
        return "TRACE";
    case EVHTTP_REQ_CONNECT:
        return "CONNECT";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    default:
        return "?";
    }
}


static void
rg_mock_handler(struct evhttp_request *req, void *arg)
{
    char                      message[320];
    size_t                    len;
    const char               *path;
    enum evhttp_cmd_type      m;
    const struct evhttp_uri  *uri;

    (void) arg;

    uri = evhttp_request_get_evhttp_uri(req);
    path = uri ? evhttp_uri_get_path(uri) : NULL;
    path = path ? path : "";
    m = evhttp_request_get_command(req);

    if (strcmp(path, "/v1/chat/completions") == 0
        || strcmp(path, "/chat/completions") == 0)
    {
        if (m == EVHTTP_REQ_POST) {
            rg_mock_chat(req);
            return;
        }

    } else if (strcmp(path, "/stats") == 0) {
        if (m == EVHTTP_REQ_GET) {
            rg_mock_stats_reply(req);
            return;
        }

    } else if (strcmp(path, "/last_request") == 0) {
        if (m == EVHTTP_REQ_GET) {
            rg_mock_last_request_reply(req);
            return;
        }

    } else if (strcmp(path, "/reset") == 0) {
        if (m == EVHTTP_REQ_POST) {
            rg_mock_reset_reply(req);
            return;
        }

    } else if (strcmp(path, "/v1/traces") == 0 && rg_mock.conf.otlp_log) {
        if (m == EVHTTP_REQ_POST) {
            rg_mock_traces(req);
            return;
        }

    } else if (strcmp(path, "/page") == 0) {
        if (m == EVHTTP_REQ_GET) {
            rg_mock_page(req);
            return;
        }

    } else {
        len = rg_mock_utf8_cut(path, strlen(path), 200);
        snprintf(message, sizeof(message), "Invalid URL (%s %.*s)",
                 rg_mock_method_name(m), (int) len, path);

        rg_mock_send_error(req, 404, message, "invalid_request_error");
        return;
    }

    len = rg_mock_utf8_cut(path, strlen(path), 200);
    snprintf(message, sizeof(message), "Invalid method for URL (%s %.*s)",
             rg_mock_method_name(m), (int) len, path);
    rg_mock_send_error(req, 405, message, "invalid_request_error");
}


/* process */

static void
rg_mock_signal_handler(evutil_socket_t sig, short events, void *arg)
{
    (void) events;
    (void) arg;

    rg_mock_log("signal %d, exiting", (int) sig);

    event_base_loopbreak(rg_mock.base);
}


static void
rg_mock_usage(FILE *f)
{
    fprintf(f,
        "usage: rg_mock [options]\n"
        "  --host ADDR           listen address (127.0.0.1)\n"
        "  --port N              listen port, 0 picks a free one (0)\n"
        "  --port-file FILE      write the bound port + \"\\n\" to FILE\n"
        "  --listen-fd N         accept on the listening socket N it was\n"
        "                        given (instead of --host and --port)\n"
        "  --rounds R            generic mode: tool rounds before the final"
        " answer (1)\n"
        "  --calls K             generic mode: parallel tool calls per round"
        " (1)\n"
        "  --latency MS          delay every chat reply by MS ms (0)\n"
        "  --script FILE         scripted mode: JSON array of reply entries\n"
        "  --fault KIND          429|500|hang|malformed|400|401|404|close\n"
        "  --fault-count N       fault the first N valid requests, 0: all"
        " (1)\n"
        "  --fault-every M       fault requests M, 2M, 3M, ... instead\n"
        "  --retry-after S       Retry-After on 429 replies (1)\n"
        "  --retry-after-ms MS   send retry-after-ms: MS instead\n"
        "  --no-retry-after      send neither header on 429 replies\n"
        "  --max-body BYTES      request body limit (8388608)\n"
        "  --idle-timeout S      close idle keep-alive connections after S"
        " s, 0: never (0)\n"
        "  --stream-chunk N      streams: bytes of text or arguments per"
        " event (8)\n"
        "  --stream-delay MS     one event per chunk, MS ms apart; 0: the"
        " first event,\n"
        "                        then the rest at once (0)\n"
        "  --stream-interleave   alternate the argument fragments of"
        " parallel calls\n"
        "  --stream-crlf         end the event lines with CRLF\n"
        "  --stream-comments     a \": keep-alive\" comment between"
        " events\n"
        "  --stream-no-done      do not end streams with data: [DONE]\n"
        "  --request-log FILE    append each request (id, traceparent, body)"
        " as a JSON line\n"
        "  --otlp-log FILE       take OTLP/HTTP JSON at POST /v1/traces, each"
        " body a line\n"
        "                        of FILE\n"
        "  --otlp-status N       answer those with status N (200)\n"
        "  --page-delay MS       answer GET /page after MS ms (0)\n"
        "  --quiet               log nothing but errors and the listen"
        " line\n"
        "  --request-id NAME     send header NAME: req-mock-<arrival"
        " number> with every\n"
        "                        chat reply, as providers send x-request-id,"
        " request-id\n"
        "                        or cf-ray\n"
        "  --help\n");
}


static rg_int_t
rg_mock_number(const char *name, const char *s, long min, long max, long *n)
{
    char  *end;
    long   v;

    errno = 0;
    v = strtol(s, &end, 10);

    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "rg_mock: invalid %s \"%s\" (%ld..%ld)\n",
                name, s, min, max);
        return RG_ERROR;
    }

    *n = v;

    return RG_OK;
}


static rg_int_t
rg_mock_options(int argc, char **argv)
{
    int              c, i;
    rg_int_t         rc;
    rg_mock_conf_t  *conf;

    static const struct option  options[] = {
        { "host",           required_argument, NULL, 'h' },
        { "port",           required_argument, NULL, 'p' },
        { "port-file",      required_argument, NULL, 'P' },
        { "listen-fd",      required_argument, NULL, 'F' },
        { "rounds",         required_argument, NULL, 'r' },
        { "calls",          required_argument, NULL, 'k' },
        { "latency",        required_argument, NULL, 'l' },
        { "script",         required_argument, NULL, 's' },
        { "fault",          required_argument, NULL, 'f' },
        { "fault-count",    required_argument, NULL, 'n' },
        { "fault-every",    required_argument, NULL, 'e' },
        { "retry-after",    required_argument, NULL, 'a' },
        { "retry-after-ms", required_argument, NULL, 'A' },
        { "no-retry-after", no_argument,       NULL, 'N' },
        { "max-body",       required_argument, NULL, 'b' },
        { "idle-timeout",   required_argument, NULL, 'i' },
        { "stream-chunk",   required_argument, NULL, 'c' },
        { "stream-delay",   required_argument, NULL, 'd' },
        { "stream-interleave", no_argument,    NULL, 'I' },
        { "stream-crlf",    no_argument,       NULL, 'C' },
        { "stream-comments", no_argument,      NULL, 'm' },
        { "stream-no-done", no_argument,       NULL, 'D' },
        { "quiet",          no_argument,       NULL, 'q' },
        { "request-log",    required_argument, NULL, 'L' },
        { "request-id",     required_argument, NULL, 'R' },
        { "otlp-log",       required_argument, NULL, 'O' },
        { "otlp-status",    required_argument, NULL, 'S' },
        { "page-delay",     required_argument, NULL, 'g' },
        { "help",           no_argument,       NULL, '?' + 256 },
        { NULL, 0, NULL, 0 }
    };

    conf = &rg_mock.conf;

    conf->host = "127.0.0.1";
    conf->listen_fd = -1;
    conf->rounds = 1;
    conf->calls = 1;
    conf->fault_count = 1;
    conf->retry_after = 1;
    conf->retry_after_ms = -1;
    conf->max_body = 8 * 1024 * 1024;
    conf->stream_chunk = RG_MOCK_STREAM_CHUNK;
    conf->otlp_status = 200;

    for ( ;; ) {
        c = getopt_long(argc, argv, "", options, NULL);
        if (c == -1) {
            break;
        }

        rc = RG_OK;

        switch (c) {
        case 'h':
            conf->host = optarg;
            break;
        case 'p':
            rc = rg_mock_number("port", optarg, 0, 65535, &conf->port);
            break;
        case 'P':
            conf->port_file = optarg;
            break;
        case 'F':
            rc = rg_mock_number("listen-fd", optarg, 0, INT_MAX,
                                &conf->listen_fd);
            break;
        case 'r':
            rc = rg_mock_number("rounds", optarg, 0, 1000000, &conf->rounds);
            break;
        case 'k':
            rc = rg_mock_number("calls", optarg, 1, 1000, &conf->calls);
            break;
        case 'l':
            rc = rg_mock_number("latency", optarg, 0, 86400000,
                                &conf->latency);
            break;
        case 's':
            conf->script_file = optarg;
            break;
        case 'f':
            for (i = 1; i <= RG_MOCK_FAULT_CLOSE; i++) {
                if (strcmp(optarg, rg_mock_fault_names[i]) == 0) {
                    conf->fault = i;
                    break;
                }
            }
            if (conf->fault == RG_MOCK_FAULT_NONE) {
                fprintf(stderr, "rg_mock: invalid fault \"%s\"\n", optarg);
                rc = RG_ERROR;
            }
            break;
        case 'n':
            rc = rg_mock_number("fault-count", optarg, 0, LONG_MAX,
                                &conf->fault_count);
            break;
        case 'e':
            rc = rg_mock_number("fault-every", optarg, 1, LONG_MAX,
                                &conf->fault_every);
            break;
        case 'a':
            rc = rg_mock_number("retry-after", optarg, 0, 86400,
                                &conf->retry_after);
            break;
        case 'A':
            rc = rg_mock_number("retry-after-ms", optarg, 0, 86400000,
                                &conf->retry_after_ms);
            break;
        case 'N':
            conf->retry_after = -1;
            conf->retry_after_ms = -1;
            break;
        case 'b':
            rc = rg_mock_number("max-body", optarg, 1, LONG_MAX,
                                &conf->max_body);
            break;
        case 'i':
            rc = rg_mock_number("idle-timeout", optarg, 0, 86400,
                                &conf->idle_timeout);
            break;
        case 'c':
            rc = rg_mock_number("stream-chunk", optarg, 1, 1048576,
                                &conf->stream_chunk);
            break;
        case 'd':
            rc = rg_mock_number("stream-delay", optarg, 0, 86400000,
                                &conf->stream_delay);
            break;
        case 'I':
            conf->stream_interleave = 1;
            break;
        case 'C':
            conf->stream_crlf = 1;
            break;
        case 'm':
            conf->stream_comments = 1;
            break;
        case 'D':
            conf->stream_no_done = 1;
            break;
        case 'L':
            conf->request_log = optarg;
            break;
        case 'O':
            conf->otlp_log = optarg;
            break;
        case 'S':
            rc = rg_mock_number("otlp-status", optarg, 200, 599,
                                &conf->otlp_status);
            break;
        case 'g':
            rc = rg_mock_number("page-delay", optarg, 0, 86400000,
                                &conf->page_delay);
            break;
        case 'q':
            conf->quiet = 1;
            break;
        case 'R':
            if (optarg[0] == '\0' || strpbrk(optarg, "\r\n: ") != NULL) {
                fprintf(stderr, "rg_mock: invalid --request-id header name "
                        "\"%s\"\n", optarg);
                return RG_ERROR;
            }
            conf->request_id = optarg;
            break;
        case '?' + 256:
            rg_mock_usage(stdout);
            exit(0);
        default:
            rg_mock_usage(stderr);
            return RG_ERROR;
        }

        if (rc != RG_OK) {
            return RG_ERROR;
        }
    }

    if (optind < argc) {
        fprintf(stderr, "rg_mock: unexpected argument \"%s\"\n", argv[optind]);
        rg_mock_usage(stderr);
        return RG_ERROR;
    }

    return RG_OK;
}


static void
rg_mock_raise_nofile(void)
{
    struct rlimit  rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        return;
    }

    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            fprintf(stderr, "rg_mock: setrlimit(RLIMIT_NOFILE) failed "
                    "(%d: %s)\n", errno, strerror(errno));
        }
    }
}


static rg_int_t
rg_mock_write_port_file(const char *file, int port)
{
    char   tmp[PATH_MAX];
    FILE  *f;

    if ((size_t) snprintf(tmp, sizeof(tmp), "%s.tmp", file) >= sizeof(tmp)) {
        fprintf(stderr, "rg_mock: port file name \"%s\" too long\n", file);
        return RG_ERROR;
    }

    f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "rg_mock: cannot open \"%s\" (%d: %s)\n",
                tmp, errno, strerror(errno));
        return RG_ERROR;
    }

    fprintf(f, "%d\n", port);

    if (fclose(f) != 0) {
        fprintf(stderr, "rg_mock: cannot write \"%s\" (%d: %s)\n",
                tmp, errno, strerror(errno));
        unlink(tmp);
        return RG_ERROR;
    }

    if (rename(tmp, file) != 0) {
        fprintf(stderr, "rg_mock: cannot rename \"%s\" to \"%s\" (%d: %s)\n",
                tmp, file, errno, strerror(errno));
        unlink(tmp);
        return RG_ERROR;
    }

    return RG_OK;
}


/* Binds with a large backlog (10,000 clients may connect at once) and hands
 * the listener to evhttp; returns the bound port or -1. */

static int
rg_mock_listen(void)
{
    int                       rc, port;
    char                      service[16];
    socklen_t                 len;
    struct addrinfo           hints, *res, *ai;
    struct evconnlistener    *lev;
    struct sockaddr_storage   ss;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;

    snprintf(service, sizeof(service), "%ld", rg_mock.conf.port);

    rc = getaddrinfo(rg_mock.conf.host, service, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "rg_mock: cannot resolve \"%s\": %s\n",
                rg_mock.conf.host, gai_strerror(rc));
        return -1;
    }

    lev = NULL;

    /* a socket its parent bound and listens on: its port is known before
     * the mock runs, and no connection is refused meanwhile */
    if (rg_mock.conf.listen_fd >= 0) {
        freeaddrinfo(res);
        res = NULL;

        if (evutil_make_socket_nonblocking((evutil_socket_t)
                                           rg_mock.conf.listen_fd) == 0
            && evutil_make_socket_closeonexec((evutil_socket_t)
                                              rg_mock.conf.listen_fd) == 0)
        {
            lev = evconnlistener_new(rg_mock.base, NULL, NULL,
                                     LEV_OPT_CLOSE_ON_FREE, 0,
                                     (evutil_socket_t) rg_mock.conf.listen_fd);
        }
    }

    for (ai = res; ai != NULL; ai = ai->ai_next) {
        lev = evconnlistener_new_bind(rg_mock.base, NULL, NULL,
                                      LEV_OPT_CLOSE_ON_FREE
                                      | LEV_OPT_CLOSE_ON_EXEC
                                      | LEV_OPT_REUSEABLE,
                                      RG_MOCK_BACKLOG, ai->ai_addr,
                                      (int) ai->ai_addrlen);
        if (lev != NULL) {
            break;
        }
    }

    if (res != NULL) {
        freeaddrinfo(res);
    }

    if (lev == NULL && rg_mock.conf.listen_fd >= 0) {
        fprintf(stderr, "rg_mock: cannot accept on descriptor %ld (%d: %s)\n",
                rg_mock.conf.listen_fd, errno, strerror(errno));
        return -1;
    }

    if (lev == NULL) {
        fprintf(stderr, "rg_mock: cannot listen on %s:%ld (%d: %s)\n",
                rg_mock.conf.host, rg_mock.conf.port, errno, strerror(errno));
        return -1;
    }

    if (evhttp_bind_listener(rg_mock.http, lev) == NULL) {
        fprintf(stderr, "rg_mock: evhttp_bind_listener() failed\n");
        evconnlistener_free(lev);
        return -1;
    }

    len = sizeof(ss);
    if (getsockname(evconnlistener_get_fd(lev), (struct sockaddr *) &ss,
                    &len) != 0)
    {
        fprintf(stderr, "rg_mock: getsockname() failed (%d: %s)\n",
                errno, strerror(errno));
        return -1;
    }

    if (ss.ss_family == AF_INET6) {
        port = ntohs(((struct sockaddr_in6 *) &ss)->sin6_port);

    } else {
        port = ntohs(((struct sockaddr_in *) &ss)->sin_port);
    }

    return port;
}


int
main(int argc, char **argv)
{
    int             port, rc;
    struct timeval  tv;

    rc = 1;

    if (rg_mock_options(argc, argv) != RG_OK) {
        return 2;
    }

    rg_mock_raise_nofile();
    signal(SIGPIPE, SIG_IGN);
    clock_gettime(CLOCK_MONOTONIC, &rg_mock.start);

    rg_mock.base = event_base_new();
    if (rg_mock.base == NULL) {
        fprintf(stderr, "rg_mock: event_base_new() failed\n");
        return 1;
    }

    if (rg_mock.conf.script_file != NULL
        && rg_mock_script_load(rg_mock.conf.script_file) != RG_OK)
    {
        goto done;
    }

    rg_mock.http = evhttp_new(rg_mock.base);
    if (rg_mock.http == NULL) {
        fprintf(stderr, "rg_mock: evhttp_new() failed\n");
        goto done;
    }

    evhttp_set_max_body_size(rg_mock.http, rg_mock.conf.max_body);
    evhttp_set_gencb(rg_mock.http, rg_mock_handler, NULL);

    if (rg_mock.conf.idle_timeout > 0) {
        evhttp_set_timeout(rg_mock.http, (int) rg_mock.conf.idle_timeout);
    }

    if (rg_mock.conf.latency > 0) {
        tv.tv_sec = rg_mock.conf.latency / 1000;
        tv.tv_usec = (rg_mock.conf.latency % 1000) * 1000;
        rg_mock.latency_tv = event_base_init_common_timeout(rg_mock.base,
                                                            &tv);
    }

    if (rg_mock.conf.stream_delay > 0) {
        tv.tv_sec = rg_mock.conf.stream_delay / 1000;
        tv.tv_usec = (rg_mock.conf.stream_delay % 1000) * 1000;
        rg_mock.stream_tv = event_base_init_common_timeout(rg_mock.base,
                                                           &tv);
        if (rg_mock.stream_tv == NULL) {
            fprintf(stderr, "rg_mock: cannot set up the stream delay\n");
            goto done;
        }
    }

    rg_mock.sigterm = evsignal_new(rg_mock.base, SIGTERM,
                                   rg_mock_signal_handler, NULL);
    rg_mock.sigint = evsignal_new(rg_mock.base, SIGINT,
                                  rg_mock_signal_handler, NULL);

    if (rg_mock.sigterm == NULL || rg_mock.sigint == NULL
        || evsignal_add(rg_mock.sigterm, NULL) != 0
        || evsignal_add(rg_mock.sigint, NULL) != 0)
    {
        fprintf(stderr, "rg_mock: cannot install signal events\n");
        goto done;
    }

    port = rg_mock_listen();
    if (port < 0) {
        goto done;
    }

    if (rg_mock.conf.port_file != NULL
        && rg_mock_write_port_file(rg_mock.conf.port_file, port) != RG_OK)
    {
        goto done;
    }

    fprintf(stderr, strchr(rg_mock.conf.host, ':')
                    ? "rg_mock: listening on [%s]:%d\n"
                    : "rg_mock: listening on %s:%d\n",
            rg_mock.conf.host, port);

    if (rg_mock.script != NULL) {
        rg_mock_log("script \"%s\": %zu entries", rg_mock.conf.script_file,
                    json_array_size(rg_mock.script));
    }

    if (event_base_dispatch(rg_mock.base) != 0) {
        fprintf(stderr, "rg_mock: event_base_dispatch() failed\n");
        goto done;
    }

    rg_mock_log("requests: %" PRIu64 ", completions: %" PRIu64 ", faults: %"
                PRIu64 ", rejected: %" PRIu64 ", max inflight: %" PRIu64,
                rg_mock.stats.requests, rg_mock.stats.completions,
                rg_mock.stats.faults, rg_mock.stats.rejected,
                rg_mock.stats.max_inflight);

    rc = 0;

done:

    /* frees every connection; pending replies go in rg_mock_close_handler */
    if (rg_mock.http != NULL) {
        evhttp_free(rg_mock.http);
    }

    while (rg_mock.pending != NULL) {
        rg_mock_pending_free(rg_mock.pending);
    }

    if (rg_mock.sigterm != NULL) {
        event_free(rg_mock.sigterm);
    }

    if (rg_mock.sigint != NULL) {
        event_free(rg_mock.sigint);
    }

    json_decref(rg_mock.script);
    json_decref(rg_mock.last_headers);
    json_decref(rg_mock.last_body);

    event_base_free(rg_mock.base);
    libevent_global_shutdown();

    return rc;
}
