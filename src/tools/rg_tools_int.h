/* rg_tools_int.h: what the pieces of the tools part's calls share
 * (rg_tools.c: a turn, its calls, the runtime in an engine;
 * rg_tools_host.c: the host table; rg_tools_approval.c: dangerous
 * calls); not for callers, who use rg_tools.h. */

#ifndef RG_TOOLS_INT_H
#define RG_TOOLS_INT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tools.h>
#include <rg_isolate.h>
#include <rg_event_curl.h>
#include <rg_traceparent.h>
#include <arpa/inet.h>


struct rg_tool_http_s {
    rg_curl_xfer_t      xfer;       /* first */
    rg_tools_ctx_t     *ctx;
    rg_tool_run_t      *run;
    rg_tool_http_pt     cb;
    void               *data;
    rg_buf_t            body;
    size_t              max;
    rg_msec_t           timeout;
    unsigned            truncated:1;
    unsigned            allow_private:1;
    const char         *refused;    /* what the last refused address was */
    char                refused_addr[INET6_ADDRSTRLEN];
    char                errbuf[CURL_ERROR_SIZE];
    struct curl_slist   tp;         /* its one header: traceparent */
    char                tp_header[RG_TRACEPARENT_SIZE + 16];
};


/* the call a pool thread runs, in that thread: what tells the host
 * functions that they were called off the reactor */
extern _Thread_local rg_tool_run_t  *rg_tools_thread_run;


/* where a host function's reason goes: in a pool thread, the buffer of
 * the task it runs (the thread writes nothing else of the run) */
#define rg_tools_error(run)                                                  \
    (rg_tools_thread_run ? rg_tools_thread_run->pool.error : (run)->error)

_Static_assert(sizeof(((rg_tool_task_t *) 0)->error)
               == sizeof(((rg_tool_run_t *) 0)->error),
               "a reason fits the thread's buffer as the reactor's");


/* rg_tools.c: runs and calls */
void rg_tools_run_free(rg_tool_run_t *run);
void rg_tools_set_result(rg_tool_run_t *run, int failed, const char *s,
    size_t len);
void rg_tools_set_error(rg_tool_run_t *run, const char *fmt, ...);
void rg_tools_http_free(rg_tool_http_t *h);
void rg_tools_finish(rg_tool_run_t *run);
void rg_tools_launch(rg_tool_run_t *run);

/* rg_tools_host.c: the host table */
void rg_tools_isolated_done(rg_isolate_call_t *c, int failed,
    const char *text, size_t len);
void rg_tools_http_reset(rg_tools_ctx_t *ctx);

/* rg_tools_approval.c: dangerous calls */
rg_int_t rg_tools_agent_allowed(rg_tool_run_t *run, const char *name);
rg_int_t rg_tools_gate(rg_tool_run_t *run);
void rg_tools_prompt_next(rg_tools_ctx_t *ctx);
void rg_tools_prompt_remove(rg_tool_run_t *run);


#endif /* RG_TOOLS_INT_H */
