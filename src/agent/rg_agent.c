/* rg_agent.c: the agent part in an engine: its counters, and the runner
 * of child sessions given to the tools part, which cannot start a session
 * itself (it knows no agent). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_agent.h>
#include <rg_session.h>
#include <rg_child.h>
#include <rg_dedupe.h>
#include <rg_llm.h>
#include <rg_tools.h>


rg_int_t
rg_agent_init_worker(rg_engine_t *e)
{
    rg_agent_ctx_t  *ctx;

    ctx = calloc(1, sizeof(rg_agent_ctx_t));
    if (ctx == NULL) {
        return RG_ERROR;
    }

    rg_engine_ctx(e, &rg_agent_part) = ctx;

    /* who holds a session, as the store shows it */
    if (gethostname(ctx->worker, sizeof(ctx->worker) - 24) != 0) {
        snprintf(ctx->worker, sizeof(ctx->worker), "localhost");
    }
    ctx->worker[sizeof(ctx->worker) - 24] = '\0';
    snprintf(ctx->worker + strlen(ctx->worker), 24, ":%d", (int) getpid());

    rg_tools_set_agent_runner(rg_tools_ctx(e), rg_child_start,
                              rg_child_stop);

    return rg_dedupe_init_worker(e);
}


void
rg_agent_exit_worker(rg_engine_t *e)
{
    rg_dedupe_exit_worker(e);
    free(rg_agent_ctx(e));
    rg_engine_ctx(e, &rg_agent_part) = NULL;
}


void
rg_agent_stats(rg_engine_t *e, rg_agent_stats_t *stats, uint64_t *retries)
{
    *stats = rg_agent_ctx(e)->stats;
    *retries = rg_llm_retries(e);
}
