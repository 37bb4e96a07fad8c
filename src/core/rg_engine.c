/* rg_engine.c: builds and tears down the runtime of one process through
 * the parts (rg_part.h). Their order is what makes the way down safe:
 * sessions go with the agent part, upstreams and their curl shares with
 * the llm part, the helpers and the thread pool with the tools part, the
 * store with the store part, the curl multi with the event part, which
 * comes first and so goes last, and the event base after them all (curl's
 * cleanup still calls the socket callback). A client command's engine
 * (cycle->client) builds only the parts marked client: the store. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_json.h>


static int  rg_engine_json_inited;


/* a client command's engine (RG_CLI_CLIENT) holds only the runtimes it
 * uses: no upstream, tool, MCP server or listener is started for it */
#define rg_engine_builds(e, part)  (!(e)->cycle->client || (part)->client)


rg_engine_t *
rg_engine_create(rg_cycle_t *cycle, rg_log_t *log)
{
    rg_uint_t     i, n;
    rg_part_t    *part;
    rg_engine_t  *e;

    if (!rg_engine_json_inited) {
        rg_json_init();
        rg_engine_json_inited = 1;
    }

    n = rg_parts_count();

    e = calloc(1, sizeof(rg_engine_t));
    if (e == NULL) {
        return NULL;
    }

    e->ctx = calloc(n, sizeof(void *));
    if (e->ctx == NULL) {
        free(e);
        return NULL;
    }

    e->cycle = cycle;
    e->log = log;
    snprintf(e->tag, sizeof(e->tag), "%06x",
             (unsigned) ((getpid() * 2654435761u) ^ rg_wall_msec())
             & 0xffffff);
    srandom((unsigned) rg_monotonic_usec() ^ (unsigned) getpid());

    e->base = event_base_new();
    if (e->base == NULL) {
        rg_log_error(RG_LOG_EMERG, log, 0, "event_base_new() failed");
        free(e->ctx);
        free(e);
        return NULL;
    }

    /* a part that fails takes down what it built with its exit_worker,
     * as every part started before it does */
    for (i = 0; i < n; i++) {
        part = rg_parts[i];
        e->started = i + 1;

        if (part->init_worker && rg_engine_builds(e, part)
            && part->init_worker(e) != RG_OK)
        {
            rg_engine_destroy(e);
            return NULL;
        }
    }

    return e;
}


void
rg_engine_destroy(rg_engine_t *e)
{
    rg_part_t  *part;

    if (e == NULL) {
        return;
    }

    while (e->started > 0) {
        part = rg_parts[--e->started];

        if (part->exit_worker && rg_engine_builds(e, part)) {
            part->exit_worker(e);
        }
    }

    event_base_free(e->base);
    free(e->ctx);
    free(e);
}


void
rg_engine_drain(rg_engine_t *e)
{
    rg_uint_t  i;

    if (e->draining) {
        return;
    }

    e->draining = 1;

    for (i = 0; i < e->started; i++) {
        if (rg_parts[i]->drain_worker && rg_engine_builds(e, rg_parts[i])) {
            rg_parts[i]->drain_worker(e);
        }
    }
}


void
rg_engine_reopen(rg_engine_t *e)
{
    rg_uint_t  i;

    for (i = 0; i < e->started; i++) {
        if (rg_parts[i]->reopen_worker && rg_engine_builds(e, rg_parts[i]))
        {
            rg_parts[i]->reopen_worker(e);
        }
    }
}


void
rg_engine_hold(rg_engine_t *e)
{
    e->holds++;
}


void
rg_engine_release(rg_engine_t *e)
{
    if (e->holds && --e->holds == 0 && e->draining && e->released) {
        e->released(e);
    }
}
