/* rg_tool_module.h: the one header a reagent tool module includes.
 *
 * A module is a shared object that exports one symbol, `rg_tool_module`
 * (an rg_tool_module_t). The host checks abi_version, size and signature
 * before it reads anything else, then hands the module a table of host
 * functions (rg_tool_host_t), as Redis hands modules their API: modules
 * never link against the reagent binary.
 *
 * A tool handler never blocks the reactor. start() either answers at once
 * (host->done()/host->fail() before it returns RG_TOOL_OK), or returns
 * RG_TOOL_AGAIN and answers later from a timer or another event. A tool
 * flagged RG_TOOL_BLOCKING runs its start() in the host's thread pool. */

#ifndef RG_TOOL_MODULE_H
#define RG_TOOL_MODULE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif


#define RG_TOOL_ABI_VERSION   1

/* Encodes what a module and the host must agree on beyond the version. */
#define RG_TOOL_SIGNATURE_STR(x)  #x
#define RG_TOOL_SIGNATURE_XSTR(x) RG_TOOL_SIGNATURE_STR(x)
#define RG_TOOL_SIGNATURE                                                    \
    "rg" RG_TOOL_SIGNATURE_XSTR(RG_TOOL_ABI_VERSION)                         \
    ":p" RG_TOOL_SIGNATURE_XSTR(__SIZEOF_POINTER__)                          \
    ":l" RG_TOOL_SIGNATURE_XSTR(__SIZEOF_LONG__)

/* start() results */
#define RG_TOOL_OK       0      /* answered (done() or fail() was called) */
#define RG_TOOL_ERROR   -1      /* failed without an answer */
#define RG_TOOL_AGAIN   -2      /* done() or fail() follows later */

/* tool flags */
#define RG_TOOL_READ_ONLY    0x01   /* idempotent: may be deduplicated */
#define RG_TOOL_SIDE_EFFECT  0x02   /* runs at most once per tool_call_id */
#define RG_TOOL_DANGEROUS    0x04   /* needs approval */
#define RG_TOOL_BLOCKING     0x08   /* start() runs in the thread pool */
#define RG_TOOL_IDEMPOTENT   0x10   /* the same call again changes nothing
                                       more: safe to repeat (on resume) */

/* events for host->io_add */
#define RG_TOOL_IO_READ      0x01
#define RG_TOOL_IO_WRITE     0x02

/* flags for host->http_get_flags */
#define RG_TOOL_HTTP_ALLOW_PRIVATE  0x01  /* loopback, private, link-local
                                             addresses may be reached */

/* log levels for host->log */
#define RG_TOOL_LOG_ERR      4
#define RG_TOOL_LOG_WARN     5
#define RG_TOOL_LOG_NOTICE   6
#define RG_TOOL_LOG_INFO     7
#define RG_TOOL_LOG_DEBUG    8

typedef struct rg_tool_host_s    rg_tool_host_t;
typedef struct rg_tool_call_s    rg_tool_call_t;
typedef struct rg_tool_s         rg_tool_t;
typedef struct rg_tool_module_s  rg_tool_module_t;
typedef struct rg_tool_timer_s   rg_tool_timer_t;
typedef struct rg_tool_io_s      rg_tool_io_t;
typedef struct rg_tool_child_s   rg_tool_child_t;

/* put before a module's rg_tool_module so -fvisibility=hidden keeps it */
#define RG_TOOL_EXPORT  __attribute__((visibility("default")))

typedef int  (*rg_tool_start_pt)(rg_tool_call_t *call);
typedef void (*rg_tool_cancel_pt)(rg_tool_call_t *call);
typedef void (*rg_tool_timer_pt)(void *data);
typedef void (*rg_tool_io_pt)(int fd, int events, void *data);
typedef void (*rg_tool_child_pt)(int pid, int status, void *data);


/* One call of a tool. The host owns it; a module reads these fields and
 * may keep its own state in `ctx`. After done(), fail() or cancel() the
 * module must not touch the call again. `host` is the table of the
 * worker running the call, which need not be the one create_conf() and
 * init() were given: use the call's. */
struct rg_tool_call_s {
    const rg_tool_t          *tool;
    rg_tool_host_t           *host;
    void                     *conf;        /* the module's configuration */
    void                     *ctx;         /* the module's per-call state */

    const char               *id;          /* tool_call_id */
    const char               *session;     /* session id, for logs */
    const char               *args;        /* a JSON object, NUL-ended */
    size_t                    args_len;

    void                     *host_args;   /* the host's; do not touch */
};


struct rg_tool_s {
    const char               *name;
    const char               *description;
    const char               *parameters;  /* JSON Schema of the arguments */
    uint32_t                  flags;
    uint32_t                  timeout_ms;  /* 0: the agent's tool_timeout */
    rg_tool_start_pt          start;
    rg_tool_cancel_pt         cancel;      /* optional: stop an AGAIN call */
};


/* A directive inside `module NAME { ... }` in the configuration.
 * set() returns NULL or a short phrase ("must be a directory"), which the
 * host turns into a full error with file:line. */
typedef struct {
    const char               *name;
    uint32_t                  min_args;
    uint32_t                  max_args;
    const char             *(*set)(rg_tool_host_t *host, void *conf,
                                   int argc, const char **argv);
} rg_tool_directive_t;


struct rg_tool_module_s {
    uint32_t                  abi_version;  /* RG_TOOL_ABI_VERSION; first */
    uint32_t                  size;         /* sizeof(rg_tool_module_t) */
    const char               *signature;    /* RG_TOOL_SIGNATURE */
    const char               *name;

    const rg_tool_directive_t *directives;  /* {NULL}-ended, or NULL */
    void                   *(*create_conf)(rg_tool_host_t *host);
    int                     (*init)(rg_tool_host_t *host, void *conf);
    void                    (*exit)(rg_tool_host_t *host, void *conf);

    const rg_tool_t          *tools;        /* {NULL}-ended */
};

#define RG_TOOL_MODULE_V1                                                    \
    RG_TOOL_ABI_VERSION, sizeof(rg_tool_module_t), RG_TOOL_SIGNATURE


/* The answer to host->http_get(). error is NULL on success (any HTTP
 * status), else a short reason ("timed out after 10s", "larger than 1m").
 * Valid only during the callback. */
typedef struct {
    long                      status;
    const char               *content_type;  /* "" when none */
    const char               *body;
    size_t                    len;
    int                       truncated;     /* body cut at max_bytes */
    const char               *error;
} rg_tool_http_result_t;

typedef void (*rg_tool_http_pt)(rg_tool_call_t *call,
    const rg_tool_http_result_t *res, void *data);

/* The end of a child session run by host->agent_run(): status is the
 * child's final state ("done", "failed", "max_rounds", …); answer is its
 * final answer or its reason. Valid only during the callback. */
typedef void (*rg_tool_agent_pt)(rg_tool_call_t *call, const char *status,
    const char *answer, size_t len, void *data);


/* What the host offers a module. New members are only ever added at the
 * end; a module checks `size` before it uses one it did not know.
 *
 * Guarantees: done() and fail() copy what they are given. A
 * RG_TOOL_BLOCKING tool's start() runs in a thread-pool thread, where it
 * may call done(), fail(), log() and the arg_* readers; everything else is
 * for the reactor thread only. Strings from arg_string() and
 * arg_array_string() are NUL-ended (compare the length to find an embedded
 * NUL). A blocking call cannot be cancelled: keep its own time limit under
 * the agent's tool_timeout. A timer never
 * fires inside timer_add(), and its handle is dead once it fired. cancel()
 * is never called after the call answered. exit() is called for every
 * conf create_conf() returned, also when configuration failed. init()
 * returns RG_TOOL_OK or RG_TOOL_ERROR. arg_int() accepts integral reals
 * such as 5.0. */
struct rg_tool_host_s {
    uint32_t                  abi_version;
    uint32_t                  size;

    void                    (*log)(rg_tool_host_t *host, int level,
                                   const char *fmt, ...)
                                  __attribute__((format(printf, 3, 4)));

    /* answers: the result text goes to the model as the tool message */
    void                    (*done)(rg_tool_call_t *call, const char *result,
                                    size_t len);
    void                    (*fail)(rg_tool_call_t *call, const char *fmt,
                                    ...)
                                  __attribute__((format(printf, 2, 3)));

    /* arguments; each returns 0, or -1 when the key is absent or of
     * another type. Strings stay valid until the call ends. */
    int                     (*arg_string)(rg_tool_call_t *call,
                                          const char *key, const char **s,
                                          size_t *len);
    int                     (*arg_number)(rg_tool_call_t *call,
                                          const char *key, double *n);
    int                     (*arg_int)(rg_tool_call_t *call, const char *key,
                                       long long *n);
    int                     (*arg_bool)(rg_tool_call_t *call,
                                        const char *key, int *b);

    /* one-shot timers on the reactor */
    rg_tool_timer_t        *(*timer_add)(rg_tool_host_t *host,
                                         uint64_t msec, rg_tool_timer_pt cb,
                                         void *data);
    void                    (*timer_del)(rg_tool_timer_t *timer);

    void                     *data;        /* the host's own */

    /* GET a URL through the worker's curl multi; the callback follows
     * (never inside http_get). Returns -1 when it cannot start. At most
     * one per call; http_cancel() drops it without a callback. */
    int                     (*http_get)(rg_tool_call_t *call,
                                        const char *url, size_t max_bytes,
                                        uint64_t timeout_ms,
                                        rg_tool_http_pt cb, void *data);
    void                    (*http_cancel)(rg_tool_call_t *call);

    /* Run another configured agent as a child session on this reactor.
     * Returns -1 (and calls nothing) when the agent is unknown or the
     * depth limit is reached; the reason is in host->error(call). At most
     * one per call; agent_cancel() ends it without a callback. */
    int                     (*agent_run)(rg_tool_call_t *call,
                                         const char *agent,
                                         const char *input, size_t len,
                                         rg_tool_agent_pt cb, void *data);
    void                    (*agent_cancel)(rg_tool_call_t *call);
    const char             *(*error)(rg_tool_call_t *call);

    /* arrays of strings among the arguments: 0, or -1 when the key is
     * absent, not an array, or item i is not a string */
    int                     (*arg_array_len)(rg_tool_call_t *call,
                                             const char *key, size_t *n);
    int                     (*arg_array_string)(rg_tool_call_t *call,
                                                const char *key, size_t i,
                                                const char **s,
                                                size_t *len);

    /* the host's units for directives: sizes "512", "64k", "1m"; times
     * "500ms", "30s", "5m", "1h", a bare number being seconds; 0 or -1 */
    int                     (*parse_size)(const char *s, size_t *out);
    int                     (*parse_msec)(const char *s, uint64_t *out);

    /* Descriptors on the reactor: cb(fd, RG_TOOL_IO_*, data) runs each
     * time fd is ready for what was asked, until io_del(). NULL when the
     * host cannot watch it. */
    rg_tool_io_t           *(*io_add)(rg_tool_host_t *host, int fd,
                                      int events, rg_tool_io_pt cb,
                                      void *data);
    void                    (*io_del)(rg_tool_io_t *io);

    /* The end of a child process of this one: cb(pid, status, data) runs
     * once on the reactor with its wait status, and the host reaps it
     * (never inside child_watch). child_unwatch() drops the callback; the
     * host still reaps the child. NULL when it cannot watch pid. */
    rg_tool_child_t        *(*child_watch)(rg_tool_host_t *host, int pid,
                                           rg_tool_child_pt cb, void *data);
    void                    (*child_unwatch)(rg_tool_child_t *child);

    /* When the host gives up on this call (its timeout), in milliseconds
     * of CLOCK_MONOTONIC; 0 when there is none. Any thread: a blocking
     * tool checks it as it goes and answers before. */
    uint64_t                (*deadline)(rg_tool_call_t *call);

    /* http_get() with RG_TOOL_HTTP_* flags. Without
     * RG_TOOL_HTTP_ALLOW_PRIVATE (and with http_get()) a connection to a
     * loopback, private, link-local, CGNAT, multicast, broadcast or
     * unspecified address, v4 or v6 (also mapped v4), is refused when it
     * is made, whatever name led there; the error says so. */
    int                     (*http_get_flags)(rg_tool_call_t *call,
                                              const char *url,
                                              size_t max_bytes,
                                              uint64_t timeout_ms,
                                              unsigned flags,
                                              rg_tool_http_pt cb,
                                              void *data);

    /* The call's idempotency key, "<session id>:<round>:<tool_call_id>"
     * (the round, since some providers send the same ids each round): the
     * same when a session resumed on another worker after a crash runs this
     * call again, so a module can hand it to an external API that
     * dedupes requests. Any thread; valid until the call ends. NULL in a
     * host that is older or cannot say. */
    const char             *(*idempotency_key)(rg_tool_call_t *call);

    /* The W3C traceparent of the call's execute_tool span,
     * "00-<trace id>-<span id>-01", for a module that makes requests of
     * its own (http_get() sends it by itself). Any thread; valid until
     * the call ends. NULL when the call has none, or in a host that is
     * older or cannot say. */
    const char             *(*traceparent)(rg_tool_call_t *call);
};


#ifdef __cplusplus
}
#endif

#endif /* RG_TOOL_MODULE_H */
