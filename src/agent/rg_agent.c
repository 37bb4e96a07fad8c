/* rg_agent.c: the agent part in an engine: its counters, the runner of
 * child sessions given to the tools part, which cannot start a session
 * itself (it knows no agent), and the engine's views of the agents whose
 * tools providers bring: built from what they offer when the first
 * session needs one and again after it changed, each kept by the
 * sessions started with it. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_agent.h>
#include <rg_child.h>
#include <rg_llm_client.h>
#include <rg_tools.h>
#include <fnmatch.h>
#include <glib.h>


static void rg_agent_view_release(void *data);


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

    ctx->nviews = rg_agent_main_conf(e->cycle)->agents.nelts;
    ctx->views = calloc(ctx->nviews + 1, sizeof(rg_agent_view_t *));
    if (ctx->views == NULL) {
        return RG_ERROR;
    }

    rg_tools_set_agent_runner(rg_tools_ctx(e), rg_child_start,
                              rg_child_stop);

    /* the dedupe keys of calls in flight (rg_dedupe.c): a flight is one
     * block with its key, freed when it leaves */
    ctx->flights = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                         free);

    return ctx->flights ? RG_OK : RG_ERROR;
}


void
rg_agent_exit_worker(rg_engine_t *e)
{
    rg_uint_t        i;
    rg_agent_ctx_t  *ctx;

    ctx = rg_agent_ctx(e);

    if (ctx == NULL) {
        return;
    }

    if (ctx->flights) {
        g_hash_table_destroy(ctx->flights);
    }

    /* a view a session still holds goes with it */
    for (i = 0; ctx->views && i < ctx->nviews; i++) {
        if (ctx->views[i]) {
            rg_agent_view_release(ctx->views[i]);
        }
    }

    free(ctx->views);
    free(ctx);
    rg_engine_ctx(e, &rg_agent_part) = NULL;
}


void
rg_agent_stats(rg_engine_t *e, rg_agent_stats_t *stats, uint64_t *retries)
{
    *stats = rg_agent_ctx(e)->stats;
    *retries = rg_llm_retries(e);
}


/* views of agents ---------------------------------------------------- */

struct rg_agent_view_s {
    rg_agent_conf_t     conf;         /* first: what sessions hold */
    rg_pool_t          *pool;
    rg_uint_t           refs;         /* the engine's, and sessions' */
    uint64_t            generation;   /* of the providers' tools */
    rg_tool_list_t    **lists;        /* held while it lives */
    rg_uint_t           nlists;
};


static void
rg_agent_view_release(void *data)
{
    rg_uint_t         i;
    rg_agent_view_t  *v;

    v = data;

    if (--v->refs) {
        return;
    }

    for (i = 0; i < v->nlists; i++) {
        rg_tool_list_unref(v->lists[i]);
    }

    rg_pool_destroy(v->pool);
}


static rg_uint_t
rg_agent_view_has(rg_toolset_t *ts, const char *name)
{
    return rg_toolset_find(ts, name, strlen(name)) >= 0;
}


/* the tools agent lists, those of providers as they offer them now, in
 * the order of its `tools` */
static rg_agent_view_t *
rg_agent_view_create(rg_engine_t *e, rg_agent_conf_t *agent)
{
    rg_str_t         *names;
    rg_uint_t         i, j, cap, matched;
    rg_pool_t        *pool;
    rg_module_t      *m;
    rg_toolset_t     *ts;
    rg_tools_ctx_t   *tctx;
    rg_tool_list_t   *list;
    rg_tool_entry_t  *te;
    rg_agent_view_t  *v;

    tctx = rg_tools_ctx(e);

    pool = rg_pool_create(4096);
    if (pool == NULL) {
        return NULL;
    }

    v = rg_pcalloc(pool, sizeof(rg_agent_view_t));
    if (v == NULL) {
        goto failed;
    }

    v->conf = *agent;
    v->pool = pool;
    v->refs = 1;
    v->generation = tctx->generation;

    names = agent->tool_names->elts;
    cap = agent->tool_names->nelts;

    for (i = 0; i < tctx->nmods; i++) {
        cap += tctx->provided[i] ? tctx->provided[i]->n : 0;
    }

    ts = &v->conf.toolset;
    ts->ntools = 0;
    ts->tools = rg_pcalloc(pool, (cap + 1) * sizeof(rg_tool_entry_t *));
    v->lists = rg_pcalloc(pool, (agent->tool_names->nelts + 1)
                                * sizeof(rg_tool_list_t *));
    if (ts->tools == NULL || v->lists == NULL) {
        goto failed;
    }

    for (i = 0; i < agent->tool_names->nelts; i++) {
        te = rg_module_find_tool(e->cycle, names[i].data, names[i].len);

        if (te) {
            ts->tools[ts->ntools++] = te;
            continue;
        }

        m = rg_module_provider_find(e->cycle, names[i].data, names[i].len);
        list = m ? rg_tools_provided(tctx, m) : NULL;
        matched = 0;

        for (j = 0; list && j < list->n; j++) {
            te = &list->tools[j];

            if (fnmatch(names[i].data, te->tool->name, 0) != 0) {
                continue;
            }

            matched++;

            /* a name already there (a loaded tool's) keeps its tool */
            if (!rg_agent_view_has(ts, te->tool->name)) {
                ts->tools[ts->ntools++] = te;
            }
        }

        if (list && matched) {
            for (j = 0; j < v->nlists && v->lists[j] != list; j++) {
                /* void */
            }

            if (j == v->nlists) {
                rg_tool_list_ref(list);
                v->lists[v->nlists++] = list;
            }
        }

        if (matched == 0) {
            rg_log_error(RG_LOG_WARN, e->log, 0, "agent \"%.*s\": no tool "
                         "of \"%s\" is offered %s: it is left out",
                         (int) agent->name.len, agent->name.data,
                         names[i].data,
                         list ? "by its server"
                              : "(its server has not started)");
        }
    }

    if (rg_agent_tools_build(e->cycle, pool, &v->conf, 0) != RG_OK) {
        v->refs = 1;
        rg_agent_view_release(v);
        return NULL;
    }

    rg_log_debug(e->log, "agent \"%.*s\": %lu tools (%s)",
                 (int) agent->name.len, agent->name.data,
                 (unsigned long) ts->ntools, ts->tool_list);

    return v;

failed:

    if (v) {
        for (i = 0; i < v->nlists; i++) {
            rg_tool_list_unref(v->lists[i]);
        }
    }

    rg_pool_destroy(pool);
    return NULL;
}


rg_agent_conf_t *
rg_agent_runtime(rg_engine_t *e, rg_agent_conf_t *agent, rg_pool_t *pool)
{
    rg_agent_ctx_t   *ctx;
    rg_agent_view_t  *v, *nv;

    if (agent->provided == NULL) {
        return agent;
    }

    ctx = rg_agent_ctx(e);

    if (agent->index >= ctx->nviews) {
        return NULL;
    }

    v = ctx->views[agent->index];

    /* the providers' tools changed since: sessions from now on get the
     * new ones; those running keep theirs */
    if (v == NULL || v->generation != rg_tools_ctx(e)->generation) {
        nv = rg_agent_view_create(e, agent);

        if (nv) {
            if (v) {
                rg_agent_view_release(v);
            }
            ctx->views[agent->index] = v = nv;
        }

        if (v == NULL) {
            return NULL;
        }
    }

    if (rg_pool_cleanup_add(pool, rg_agent_view_release, v) == NULL) {
        return NULL;
    }

    v->refs++;

    return &v->conf;
}
