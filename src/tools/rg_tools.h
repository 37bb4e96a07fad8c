/* rg_tools.h: runs the tool calls of one turn. Every call of the turn
 * starts at once: asynchronous handlers on the reactor, blocking ones in
 * the thread pool. The turn ends when each call has answered, failed,
 * timed out or been denied, and its results are kept in the order of the
 * calls. Implements the host table that modules call back into. */

#ifndef RG_TOOLS_H
#define RG_TOOLS_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_module.h>
#include <rg_event_curl.h>
#include <rg_thread_pool.h>
#include <rg_isolate.h>
#include <event2/event.h>
#include <event2/event_struct.h>

typedef struct rg_tool_run_s   rg_tool_run_t;
typedef struct rg_tool_turn_s  rg_tool_turn_t;
typedef struct rg_tool_http_s  rg_tool_http_t;

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
} rg_tool_task_t;


struct rg_tool_run_s {
    rg_tool_call_t      call;       /* first: what the module sees */
    rg_tool_entry_t    *entry;      /* NULL: the call could not start */
    rg_tool_turn_t     *turn;       /* NULL once orphaned */
    rg_uint_t           index;
    void               *args;       /* json_t *, the parsed arguments */
    char               *args_text;  /* the same, serialized: call.args */
    char               *own;        /* id, session and name, owned */
    struct event        timer;
    rg_msec_t           timeout;
    rg_msec_t           started;
    rg_msec_t           ms;

    const char         *name;       /* as the model sent it */
    char               *result;     /* malloc'ed, NUL-ended */
    size_t              result_len;

    /* a blocking call: the pool thread's (see above) */
    rg_tool_task_t      pool;
    /* a call to an isolated module: what its helper is sent */
    rg_isolate_call_t   helper;

    rg_tool_http_t     *http;
    void               *child;      /* a child session (agent_run) */
    rg_tool_agent_pt    agent_cb;
    void               *agent_data;
    char                error[256]; /* for host->error() */
    rg_tool_run_t      *next_approval;

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
};


struct rg_tool_turn_s {
    rg_tool_run_t     **runs;
    rg_uint_t           n;
    rg_uint_t           pending;
    rg_uint_t           awaiting;   /* calls waiting for approval */
    rg_tool_turn_done_pt done;
    rg_tool_turn_done_pt approval;  /* awaiting changed; optional */
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
    rg_str_t            name;
    rg_str_t            arguments;
    rg_str_t            preset;
    void               *args;         /* json_t *, already checked: the
                                         turn takes it over */
    rg_str_t            args_text;    /* its canonical text */
    unsigned            has_preset:1;
    unsigned            preset_failed:1;
} rg_tool_request_t;


/* how a child session is started and stopped (the agent layer's) */
typedef rg_int_t (*rg_tools_agent_start_pt)(rg_tool_run_t *run,
    const char *agent, const char *input, size_t len);
typedef void (*rg_tools_agent_stop_pt)(rg_tool_run_t *run);


rg_int_t rg_tools_init(struct event_base *base, rg_curl_t *curl,
    rg_thread_pool_t *pool, rg_log_t *log);
void rg_tools_set_approval(rg_approval_e policy);
void rg_tools_set_agent_runner(rg_tools_agent_start_pt start,
    rg_tools_agent_stop_pt stop);
void rg_tools_agent_done(rg_tool_run_t *run, const char *status,
    const char *text, size_t len);
void rg_tools_host_init(rg_tool_host_t *host, rg_module_t *m);

/* the arguments of a call to te: repaired where that is safe, checked
 * and coerced against its schema; NULL with err ("error: …") otherwise */
void *rg_tools_args(rg_tool_entry_t *te, const char *text, size_t len,
    char *err, size_t errlen);

rg_tool_turn_t *rg_tools_turn_create(const rg_toolset_t *ts,
    const char *session, rg_tool_request_t *reqs, rg_uint_t n,
    rg_tool_turn_done_pt done, void *data, rg_log_t *log);
void rg_tools_turn_start(rg_tool_turn_t *turn);
void rg_tools_turn_destroy(rg_tool_turn_t *turn);

#endif /* RG_TOOLS_H */
