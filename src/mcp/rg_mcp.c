/* rg_mcp.c: the mcp part in an engine: each `mcp` block's server started
 * when the engine starts (the engine waits, within each server's
 * start_timeout, until every one is ready or has failed, so that no
 * session sees half a list; one that fails is logged and retried, its
 * tools absent meanwhile, and the worker starts anyway), and stopped
 * when it ends: stdin closed or the session deleted, then SIGTERM, then
 * SIGKILL. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_event.h>
#include <rg_mcp.h>


#define RG_MCP_STOP_WAIT    1000      /* ms for each step of the end */


static void
rg_mcp_wait_handler(evutil_socket_t fd, short what, void *arg)
{
    RG_UNUSED(fd);
    RG_UNUSED(what);

    *(rg_uint_t *) arg = 1;
}


/* runs the loop until done(ctx) or ms passed */
static void
rg_mcp_wait(rg_mcp_ctx_t *ctx, rg_msec_t ms,
    rg_uint_t (*done)(rg_mcp_ctx_t *ctx))
{
    rg_uint_t     expired;
    struct event  ev;

    if (done(ctx)) {
        return;
    }

    expired = 0;

    evtimer_assign(&ev, ctx->base, rg_mcp_wait_handler, &expired);
    rg_timer_add(&ev, ms);

    while (!expired && !done(ctx)) {
        if (event_base_loop(ctx->base, EVLOOP_ONCE) == -1) {
            break;
        }
    }

    event_del(&ev);
}


static rg_uint_t
rg_mcp_started(rg_mcp_ctx_t *ctx)
{
    return ctx->starting == 0;
}


static rg_uint_t
rg_mcp_stopped(rg_mcp_ctx_t *ctx)
{
    rg_uint_t  i;

    for (i = 0; i < ctx->nservers; i++) {
        if (!ctx->servers[i].tp->stopped(&ctx->servers[i])) {
            return 0;
        }
    }

    return 1;
}


rg_int_t
rg_mcp_init_worker(rg_engine_t *e)
{
    rg_uint_t            i;
    rg_msec_t            wait;
    rg_mcp_ctx_t        *ctx;
    rg_mcp_conf_t      **confs;
    rg_mcp_main_conf_t  *mmcf;

    mmcf = rg_mcp_main_conf(e->cycle);

    ctx = calloc(1, sizeof(rg_mcp_ctx_t));
    if (ctx == NULL) {
        return RG_ERROR;
    }

    rg_engine_ctx(e, &rg_mcp_part) = ctx;

    ctx->engine = e;
    ctx->base = e->base;
    ctx->log = e->log;
    ctx->curl = rg_event_ctx(e);
    ctx->tools = rg_tools_ctx(e);

    if (mmcf->servers.nelts == 0) {
        return RG_OK;
    }

    ctx->servers = calloc(mmcf->servers.nelts, sizeof(rg_mcp_server_t));
    if (ctx->servers == NULL) {
        return RG_ERROR;
    }

    confs = mmcf->servers.elts;
    wait = 0;

    for (i = 0; i < mmcf->servers.nelts; i++) {
        rg_mcp_server_init(&ctx->servers[i], ctx, confs[i]);
        ctx->nservers++;
        wait = rg_max(wait, confs[i]->start_timeout);
    }

    for (i = 0; i < ctx->nservers; i++) {
        rg_mcp_server_start(&ctx->servers[i]);
    }

    /* no session may start with half the tools: the servers' first
     * starts end (ready or not) before the engine is */
    rg_mcp_wait(ctx, wait + 500, rg_mcp_started);

    for (i = 0; i < ctx->nservers; i++) {
        if (ctx->servers[i].state == RG_MCP_STARTING) {
            rg_log_error(RG_LOG_WARN, e->log, 0, "mcp \"%.*s\": still "
                         "starting; its tools come when it is ready",
                         (int) confs[i]->name.len, confs[i]->name.data);
        }
    }

    return RG_OK;
}


void
rg_mcp_exit_worker(rg_engine_t *e)
{
    rg_uint_t      i;
    rg_mcp_ctx_t  *ctx;

    ctx = rg_mcp_ctx(e);

    if (ctx == NULL) {
        return;
    }

    for (i = 0; i < ctx->nservers; i++) {
        rg_mcp_server_stop(&ctx->servers[i]);
    }

    /* the end of its input (or of its session) first, then SIGTERM;
     * what is left then is killed */
    rg_mcp_wait(ctx, RG_MCP_STOP_WAIT, rg_mcp_stopped);

    if (!rg_mcp_stopped(ctx)) {
        for (i = 0; i < ctx->nservers; i++) {
            ctx->servers[i].tp->terminate(&ctx->servers[i]);
        }

        rg_mcp_wait(ctx, RG_MCP_STOP_WAIT, rg_mcp_stopped);
    }

    for (i = 0; i < ctx->nservers; i++) {
        rg_mcp_server_free(&ctx->servers[i]);
    }

    free(ctx->servers);
    free(ctx);
    rg_engine_ctx(e, &rg_mcp_part) = NULL;
}


rg_tool_entry_t *
rg_mcp_find_tool(rg_mcp_ctx_t *ctx, const char *name)
{
    size_t            len;
    rg_uint_t         i;
    rg_tool_entry_t  *te;

    len = strlen(name);

    for (i = 0; i < ctx->nservers; i++) {
        te = rg_tool_list_find(ctx->servers[i].list, name, len);
        if (te) {
            return te;
        }
    }

    return NULL;
}
