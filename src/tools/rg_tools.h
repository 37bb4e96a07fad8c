/* rg_tools.h: runs the tool calls of one turn. Every call of the turn
 * starts at once: asynchronous handlers on the reactor, blocking ones in
 * the thread pool, isolated ones in helper processes. The turn ends when
 * each call has answered, failed, timed out or been denied, and its
 * results are kept in the order of the calls. Implements the host table
 * that modules call back into. The tools part's runtime in an engine
 * (rg_tools_ctx_t) holds everything that does: the reactor, the curl
 * multi, the thread pool, each module's host table and helpers, the
 * approval policy and the calls waiting for the terminal. */

#ifndef RG_TOOLS_H
#define RG_TOOLS_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_module.h>
#include <rg_event_curl.h>
#include <rg_thread_pool.h>
#include <rg_isolate.h>
#include <rg_tool_host_io.h>
#include <rg_tools_conf.h>
#include <rg_trace.h>
#include <jansson.h>
#include <event2/event.h>
#include <event2/event_struct.h>

typedef struct rg_tool_run_s   rg_tool_run_t;
typedef struct rg_tool_turn_s  rg_tool_turn_t;
typedef struct rg_tool_http_s  rg_tool_http_t;
typedef struct rg_tool_list_s  rg_tool_list_t;

typedef void (*rg_tool_turn_done_pt)(rg_tool_turn_t *turn);

/* What becomes of a dangerous call: the command line's flags override
 * every agent's `approve`; otherwise an approved call runs, and others
 * are asked on the terminal or refused. */
typedef enum {
    RG_APPROVE_DENY = 0,          /* no terminal, no flag: `approve` only */
    RG_APPROVE_ALL,               /* --approve-all */
    RG_APPROVE_PROMPT,            /* `approve`, else ask on the terminal */
    RG_APPROVE_NONE               /* --deny-dangerous: refused, always */
} rg_approval_e;


/* What a pool thread owns while a blocking call runs there: the thread
 * writes these and nothing else of the run. The reactor reads them once
 * the pool's notification has handed the task back (its lock orders the
 * two), never while the thread runs. */
typedef struct {
    rg_thread_task_t    task;
    char               *result;     /* malloc'ed, NUL-ended */
    size_t              len;
    int                 failed;     /* 1: failed, 2: said nothing */
    int                 ran;        /* the handler was called */
    char                error[256]; /* host->error() in the thread */
} rg_tool_task_t;


struct rg_tool_run_s {
    rg_tool_call_t      call;       /* first: what the module sees */
    rg_tools_ctx_t     *ctx;        /* the engine's tools */
    rg_tool_entry_t    *entry;      /* NULL: the call could not start */
    rg_tool_turn_t     *turn;       /* NULL once orphaned */
    rg_uint_t           index;
    json_t             *args;       /* the parsed arguments */
    char               *args_text;  /* the same, serialized: call.args */
    char               *own;        /* id, session and name, owned */
    const char         *idem;       /* "session:id", in own */
    struct event        timer;
    rg_msec_t           timeout;
    rg_msec_t           started;
    uint64_t            started_us;  /* the same, for the metrics */
    rg_msec_t           ms;

    const char         *name;       /* as the model sent it */
    char               *result;     /* malloc'ed, NUL-ended */
    size_t              result_len;

    /* a blocking call: the pool thread's (see above) */
    rg_tool_task_t      pool;
    /* a call to an isolated module: what its helper is sent */
    rg_isolate_call_t   helper;

    rg_tool_http_t     *http;
    void               *child;      /* the agent runner's: its child
                                       session, while one runs */
    rg_tool_agent_pt    agent_cb;
    void               *agent_data;
    char                error[256]; /* host->error() on the reactor */
    rg_tool_run_t      *next_approval;

    /* its execute_tool span, started by the turn's owner (NULL ids: no
     * trace): its HTTP requests carry the span's traceparent */
    rg_trace_span_t     span;
    char                traceparent[RG_TRACEPARENT_SIZE];

    /* the reactor's alone, even while a pool thread runs the call */
    unsigned            finished:1;
    unsigned            answered:1;
    unsigned            cancelled:1;
    unsigned            failed:1;
    unsigned            timed_out:1;
    unsigned            timer_set:1;
    unsigned            in_pool:1;
    unsigned            awaiting:1; /* approval */
    unsigned            denied:1;
    unsigned            launched:1;
    unsigned            isolated:1; /* running in a helper process */
    unsigned            approved:1; /* by an operator, beforehand */
};


struct rg_tool_turn_s {
    rg_tools_ctx_t     *ctx;
    rg_tool_run_t     **runs;
    rg_uint_t           n;
    rg_uint_t           pending;
    rg_uint_t           awaiting;   /* calls waiting for approval */
    rg_tool_turn_done_pt done;
    rg_tool_turn_done_pt approval;  /* awaiting changed; optional */
    /* a call ran and answered (not a preset one); optional */
    void              (*call_done)(rg_tool_turn_t *turn, rg_tool_run_t *run);
    /* a call is launched (approved, when it had to be); optional */
    void              (*call_start)(rg_tool_turn_t *turn, rg_tool_run_t *run);
    void               *data;
    rg_log_t           *log;
    const rg_toolset_t *toolset;    /* what it may call */
    rg_tool_run_t      *parent;     /* for a child session's turn: the
                                       run_agent call that started it */
    struct event        done_ev;
    rg_uint_t           failures;
    rg_msec_t           started;
    unsigned            done_posted:1;
};


/* one tool call the model asked for; `preset` answers it without
 * running anything (a dedupe hit, a repeat, a capped tool) */
typedef struct {
    rg_str_t            id;
    rg_str_t            key;          /* the call's among its session's, for
                                         its idempotency key: "<round>:<id>"
                                         (some providers send the same ids
                                         every round); none: the id */
    rg_str_t            name;
    rg_str_t            arguments;
    rg_str_t            preset;
    json_t             *args;         /* already checked: the turn takes
                                         it over */
    rg_str_t            args_text;    /* its canonical text; none: args
                                         written compact */
    unsigned            has_preset:1;
    unsigned            preset_failed:1;
    unsigned            approved:1;   /* an operator said yes: a dangerous
                                         call runs whatever the policy */
} rg_tool_request_t;


/* how a child session is started and stopped (the agent layer's) */
typedef rg_int_t (*rg_tools_agent_start_pt)(rg_tool_run_t *run,
    const char *agent, const char *input, size_t len);
typedef void (*rg_tools_agent_stop_pt)(rg_tool_run_t *run);


/* The tools a provider (rg_module_provider_add()) offers in an engine,
 * as it last found them: held by the engine while they are offered and
 * by every toolset built from them, and freed by the provider's free()
 * when the last reference goes. Their entries' module is the provider. */
struct rg_tool_list_s {
    rg_uint_t           refs;
    rg_uint_t           n;
    rg_tool_entry_t    *tools;
    void              (*free)(rg_tool_list_t *list);
    void               *data;       /* the provider's */
};


/* one module in an engine: the host table its calls get, its helpers */
typedef struct {
    rg_tool_bind_t      bind;       /* host.data */
    rg_tool_host_t      host;
    rg_isolate_t       *isolate;    /* when it was loaded isolated */
} rg_tools_module_t;


struct rg_tools_ctx_s {
    struct event_base  *base;
    rg_tool_io_ctx_t    io;         /* the modules' io and children here */
    rg_curl_t          *curl;
    rg_thread_pool_t   *pool;       /* NULL: blocking tools run here */
    rg_log_t           *log;
    rg_tools_module_t  *mods;       /* by the module's index */
    rg_uint_t           nmods;

    /* what each provider offers now, by its index (NULL: nothing), and
     * how often that changed: toolsets older than it are rebuilt */
    rg_tool_list_t    **provided;
    uint64_t            generation;

    rg_approval_e       approval;

    /* how a child session is started and stopped (the agent part's) */
    rg_tools_agent_start_pt  agent_start;
    rg_tools_agent_stop_pt   agent_stop;

    /* the http tool's own connection caches, apart from the model
     * calls': one for requests that may reach internal addresses, one
     * for the rest, so that no connection is reused across that line */
    CURLSH             *http_shares[2];

    /* dangerous calls waiting for a yes or no on the terminal, in order */
    rg_tool_run_t      *prompt_head;
    rg_tool_run_t     **prompt_tail;
    struct event       *prompt_ev;
    rg_buf_t            prompt_line;
};


#define rg_tools_ctx(e)                                                      \
    ((rg_tools_ctx_t *) rg_engine_ctx(e, &rg_tools_part))

/* The same, by hand (for a reactor of one's own): a runtime for nmods
 * modules, each then bound with rg_tools_ctx_bind() (an isolated one has
 * its helpers started there); destroy takes down the helpers and the
 * pool it was given. */
rg_tools_ctx_t *rg_tools_ctx_create(struct event_base *base, rg_curl_t *curl,
    rg_log_t *log, rg_uint_t nmods);
rg_int_t rg_tools_ctx_bind(rg_tools_ctx_t *ctx, rg_module_t *m,
    rg_uint_t helpers);
void rg_tools_ctx_destroy(rg_tools_ctx_t *ctx);

void rg_tools_set_approval(rg_tools_ctx_t *ctx, rg_approval_e policy);
/* a call of te in toolset ts (a child session's: parent is its run_agent
 * call) would have to be asked for: dangerous, and neither the policy
 * nor every agent of the chain of delegation approves it */
rg_uint_t rg_tools_needs_approval(rg_tools_ctx_t *ctx,
    const rg_toolset_t *ts, rg_tool_run_t *parent, rg_tool_entry_t *te);
void rg_tools_set_agent_runner(rg_tools_ctx_t *ctx,
    rg_tools_agent_start_pt start, rg_tools_agent_stop_pt stop);
void rg_tools_agent_done(rg_tool_run_t *run, const char *status,
    const char *text, size_t len);

/* From now on provider m offers list in this engine (NULL: nothing); the
 * engine takes a reference and drops the one it held on the last. */
void rg_tools_provide(rg_tools_ctx_t *ctx, rg_module_t *m,
    rg_tool_list_t *list);
/* what provider m offers now, or NULL */
rg_tool_list_t *rg_tools_provided(rg_tools_ctx_t *ctx, rg_module_t *m);
/* the tool of list (NULL: none) named name, of len bytes, or NULL */
rg_tool_entry_t *rg_tool_list_find(rg_tool_list_t *list, const char *name,
    size_t len);
void rg_tool_list_ref(rg_tool_list_t *list);
void rg_tool_list_unref(rg_tool_list_t *list);
/* in a provider's cancel(): whether the call is cancelled because its
 * tool_timeout passed (else its session or turn ended) */
rg_uint_t rg_tools_call_timed_out(const rg_tool_call_t *call);

/* the arguments of a call to te: repaired where that is safe, checked
 * and coerced against its schema; NULL with err ("error: …") otherwise */
json_t *rg_tools_args(rg_tool_entry_t *te, const char *text, size_t len,
    char *err, size_t errlen);

rg_tool_turn_t *rg_tools_turn_create(rg_tools_ctx_t *ctx,
    const rg_toolset_t *ts, const char *session, rg_tool_request_t *reqs,
    rg_uint_t n, rg_tool_turn_done_pt done, void *data, rg_log_t *log);
void rg_tools_turn_start(rg_tool_turn_t *turn);
void rg_tools_turn_destroy(rg_tool_turn_t *turn);

#endif /* RG_TOOLS_H */
