/* rg_tools.h: runs the tool calls of one turn. Every call of the turn
 * starts at once; the turn ends when each has answered, failed or timed
 * out, and its results are kept in the order of the calls. Implements the
 * host table that modules call back into. */

#ifndef RG_TOOLS_H
#define RG_TOOLS_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <event2/event.h>
#include <event2/event_struct.h>

typedef struct rg_tool_run_s   rg_tool_run_t;
typedef struct rg_tool_turn_s  rg_tool_turn_t;

typedef void (*rg_tool_turn_done_pt)(rg_tool_turn_t *turn);


struct rg_tool_run_s {
    rg_tool_call_t      call;       /* first: what the module sees */
    rg_tool_entry_t    *entry;      /* NULL: the call could not start */
    rg_tool_turn_t     *turn;       /* NULL once orphaned */
    void               *args;       /* json_t *, the parsed arguments */
    struct event        timer;
    rg_msec_t           timeout;
    rg_msec_t           started;
    rg_msec_t           ms;

    const char         *name;       /* as the model sent it */
    char               *result;     /* malloc'ed, NUL-ended */
    size_t              result_len;

    unsigned            finished:1;
    unsigned            answered:1;
    unsigned            cancelled:1;
    unsigned            failed:1;
    unsigned            timed_out:1;
    unsigned            timer_set:1;
};


struct rg_tool_turn_s {
    rg_tool_run_t     **runs;
    rg_uint_t           n;
    rg_uint_t           pending;
    rg_tool_turn_done_pt done;
    void               *data;
    rg_log_t           *log;
    struct event        done_ev;
    rg_uint_t           failures;
    unsigned            done_posted:1;
};


/* one tool call the model asked for */
typedef struct {
    rg_str_t            id;
    rg_str_t            name;
    rg_str_t            arguments;
} rg_tool_request_t;


rg_int_t rg_tools_init(struct event_base *base, rg_log_t *log);
void rg_tools_host_init(rg_tool_host_t *host, rg_module_t *m);

rg_tool_turn_t *rg_tools_turn_create(rg_agent_conf_t *agent,
    const char *session, rg_tool_request_t *reqs, rg_uint_t n,
    rg_tool_turn_done_pt done, void *data, rg_log_t *log);
void rg_tools_turn_start(rg_tool_turn_t *turn);
void rg_tools_turn_destroy(rg_tool_turn_t *turn);

#endif /* RG_TOOLS_H */
