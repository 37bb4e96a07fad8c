/* slow.c: a test plugin whose tools take time: module "slow".
 *
 * `slow_async` answers "waited N ms" from a host timer after `ms`
 * milliseconds (RG_TOOL_AGAIN, cancellable); `slow_blocking` is flagged
 * RG_TOOL_BLOCKING, so the host runs it in its thread pool, where it
 * sleeps `ms` milliseconds and answers "slept N ms"; `slow_host_calls`,
 * blocking too, asks the host for http_get and agent_run from its pool
 * thread (which refuses both) and answers what host->error() said after
 * each, "http_get: …; agent_run: …". The module's exit()
 * aborts the process when a slow_blocking call is still running: the host
 * must never unload a module while a thread runs its code. */

#include <rg_tool_module.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>


#define RG_SLOW_MAX_MS  600000


typedef struct {
    rg_tool_call_t           *call;
    rg_tool_timer_t          *timer;
    long long                 ms;
} rg_slow_ctx_t;


static int rg_slow_get_ms(rg_tool_call_t *call, long long *ms);
static int rg_slow_async(rg_tool_call_t *call);
static void rg_slow_async_handler(void *data);
static void rg_slow_async_cancel(rg_tool_call_t *call);
static int rg_slow_blocking(rg_tool_call_t *call);
static int rg_slow_host_calls(rg_tool_call_t *call);
static void rg_slow_exit(rg_tool_host_t *host, void *conf);


static atomic_int  rg_slow_running;


#define RG_SLOW_SCHEMA                                                       \
    "{\"type\":\"object\","                                                  \
     "\"properties\":{"                                                      \
      "\"ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":600000,"       \
       "\"description\":\"Milliseconds\",\"examples\":[50]}},"               \
     "\"required\":[\"ms\"]}"


static const rg_tool_t  rg_slow_tools[] = {
    { "slow_async", "Answer after the given number of milliseconds.",
      RG_SLOW_SCHEMA, 0, 0, rg_slow_async, rg_slow_async_cancel },

    { "slow_blocking", "Sleep the given number of milliseconds, then answer.",
      RG_SLOW_SCHEMA, RG_TOOL_BLOCKING, 0, rg_slow_blocking, NULL },

    { "slow_host_calls", "Ask the host for what a thread may not have.",
      "{\"type\":\"object\",\"properties\":{}}", RG_TOOL_BLOCKING, 0,
      rg_slow_host_calls, NULL },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


__attribute__((visibility("default")))
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "slow",
    NULL,
    NULL,
    NULL,
    rg_slow_exit,
    rg_slow_tools
};


/* 0, or -1 after failing the call */
static int
rg_slow_get_ms(rg_tool_call_t *call, long long *ms)
{
    if (call->host->arg_int(call, "ms", ms) != 0) {
        call->host->fail(call, "missing argument 'ms' (an integer)");
        return -1;
    }

    if (*ms < 0 || *ms > RG_SLOW_MAX_MS) {
        call->host->fail(call, "argument 'ms' must be from 0 to %d",
                         RG_SLOW_MAX_MS);
        return -1;
    }

    return 0;
}


static int
rg_slow_async(rg_tool_call_t *call)
{
    long long       ms;
    rg_slow_ctx_t  *ctx;

    if (rg_slow_get_ms(call, &ms) != 0) {
        return RG_TOOL_OK;
    }

    ctx = malloc(sizeof(rg_slow_ctx_t));
    if (ctx == NULL) {
        call->host->fail(call, "out of memory");
        return RG_TOOL_OK;
    }

    ctx->call = call;
    ctx->ms = ms;

    ctx->timer = call->host->timer_add(call->host, (uint64_t) ms,
                                       rg_slow_async_handler, ctx);
    if (ctx->timer == NULL) {
        free(ctx);
        call->host->fail(call, "cannot start a timer");
        return RG_TOOL_OK;
    }

    call->ctx = ctx;

    return RG_TOOL_AGAIN;
}


static void
rg_slow_async_handler(void *data)
{
    int              n;
    char             text[64];
    rg_slow_ctx_t   *ctx;
    rg_tool_call_t  *call;

    ctx = data;
    call = ctx->call;

    n = snprintf(text, sizeof(text), "waited %lld ms", ctx->ms);

    call->ctx = NULL;
    free(ctx);

    call->host->done(call, text, (size_t) n);
}


static void
rg_slow_async_cancel(rg_tool_call_t *call)
{
    rg_slow_ctx_t  *ctx;

    ctx = call->ctx;
    if (ctx == NULL) {
        return;
    }

    call->host->timer_del(ctx->timer);

    call->ctx = NULL;
    free(ctx);
}


static int
rg_slow_blocking(rg_tool_call_t *call)
{
    int              n;
    char             text[64];
    long long        ms;
    struct timespec  ts;

    if (rg_slow_get_ms(call, &ms) != 0) {
        return RG_TOOL_OK;
    }

    atomic_fetch_add(&rg_slow_running, 1);

    ts.tv_sec = (time_t) (ms / 1000);
    ts.tv_nsec = (long) (ms % 1000) * 1000000L;

    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
        /* void */
    }

    n = snprintf(text, sizeof(text), "slept %lld ms", ms);

    call->host->done(call, text, (size_t) n);

    atomic_fetch_sub(&rg_slow_running, 1);

    return RG_TOOL_OK;
}


static void
rg_slow_http_cb(rg_tool_call_t *call, const rg_tool_http_result_t *res,
    void *data)
{
    abort();                            /* refused: never called */
}


static void
rg_slow_agent_cb(rg_tool_call_t *call, const char *status,
    const char *answer, size_t len, void *data)
{
    abort();                            /* refused: never called */
}


static int
rg_slow_host_calls(rg_tool_call_t *call)
{
    int   n;
    char  http[128], agent[128], text[300];

    http[0] = '\0';
    agent[0] = '\0';

    if (call->host->http_get(call, "http://127.0.0.1:9/", 16, 100,
                             rg_slow_http_cb, NULL) == -1)
    {
        snprintf(http, sizeof(http), "%s", call->host->error(call));
    }

    if (call->host->agent_run(call, "a", "x", 1, rg_slow_agent_cb, NULL)
        == -1)
    {
        snprintf(agent, sizeof(agent), "%s", call->host->error(call));
    }

    n = snprintf(text, sizeof(text), "http_get: %s; agent_run: %s", http,
                 agent);

    call->host->done(call, text, (size_t) n);

    return RG_TOOL_OK;
}


static void
rg_slow_exit(rg_tool_host_t *host, void *conf)
{
    (void) host;
    (void) conf;

    if (atomic_load(&rg_slow_running) != 0) {
        fprintf(stderr, "slow: exit() while a slow_blocking call runs\n");
        abort();
    }
}
