/* rg_engine.c: builds and tears down the runtime of one process. Order
 * matters on the way down: sessions first, then upstreams (their curl
 * shares), then the curl multi, then the event base (curl's cleanup still
 * calls the socket callback). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_tools.h>
#include <rg_session.h>
#include <rg_isolate.h>
#include <rg_store.h>
#include <rg_json.h>
#include <rg_store_conf.h>
#include <rg_tools_conf.h>
#include <sys/resource.h>


static int  rg_engine_curl_inited;


rg_engine_t *
rg_engine_create(rg_cycle_t *cycle, rg_log_t *log)
{
    rg_uint_t        i;
    struct rlimit    rl;
    rg_engine_t     *e;
    rg_llm_conf_t  **llms;
    rg_module_t    **mods;

    if (!rg_engine_curl_inited) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            rg_log_error(RG_LOG_EMERG, log, 0, "curl_global_init() failed");
            return NULL;
        }
        rg_engine_curl_inited = 1;
        rg_json_init();
    }

    /* thousands of sessions hold thousands of sockets */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    e = calloc(1, sizeof(rg_engine_t));
    if (e == NULL) {
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
        free(e);
        return NULL;
    }

    e->curl = rg_curl_create(e->base, log);
    if (e->curl == NULL) {
        rg_log_error(RG_LOG_EMERG, log, 0, "curl multi setup failed");
        goto failed;
    }

    rg_llm_memory_limit(rg_llm_main_conf(cycle)->response_memory);

    /* before any thread: isolated helpers start from a zygote forked
     * here, which must hold no lock a thread took */
    mods = rg_tools_conf(cycle)->modules.elts;
    for (i = 0; i < rg_tools_conf(cycle)->modules.nelts; i++) {
        mods[i]->engine = e;

        if (mods[i]->isolated) {
            mods[i]->isolate = rg_isolate_create(mods[i], e->base,
                                                 rg_tools_conf(cycle)
                                                 ->isolated_helpers,
                                                 log);
            if (mods[i]->isolate == NULL) {
                rg_log_error(RG_LOG_EMERG, log, 0, "cannot start helper "
                             "processes for module \"%s\"",
                             mods[i]->mod->name);
                goto failed;
            }
        }
    }

    e->pool = rg_thread_pool_create(e->base,
                                    rg_tools_conf(cycle)->pool_threads,
                                    rg_tools_conf(cycle)->pool_max_queue,
                                    log);
    if (e->pool == NULL) {
        rg_log_error(RG_LOG_EMERG, log, 0, "thread pool setup failed");
        goto failed;
    }

    e->store = rg_store_memory_create(e->base,
                                      (rg_uint_t) rg_store_conf(cycle)
                                                  ->max_keys,
                                      rg_store_conf(cycle)->max_bytes);
    if (e->store == NULL) {
        goto failed;
    }

    rg_tools_init(e->base, e->curl, e->pool, log);
    rg_session_init_runner();

    llms = rg_llm_main_conf(cycle)->llms.elts;
    for (i = 0; i < rg_llm_main_conf(cycle)->llms.nelts; i++) {
        llms[i]->upstream = rg_llm_upstream_create(llms[i], e->curl, e->base,
                                                   log);
        if (llms[i]->upstream == NULL) {
            goto failed;
        }
    }

    return e;

failed:

    rg_engine_destroy(e);
    return NULL;
}


void
rg_engine_destroy(rg_engine_t *e)
{
    rg_uint_t        i;
    rg_llm_conf_t  **llms;
    rg_module_t    **mods;

    if (e == NULL) {
        return;
    }

    mods = rg_tools_conf(e->cycle)->modules.elts;
    for (i = 0; i < rg_tools_conf(e->cycle)->modules.nelts; i++) {
        rg_isolate_destroy(mods[i]->isolate);
        mods[i]->isolate = NULL;
        mods[i]->engine = NULL;
    }

    /* finished pool work may still free orphaned calls */
    rg_thread_pool_destroy(e->pool);
    rg_tools_init(NULL, NULL, NULL, NULL);

    llms = rg_llm_main_conf(e->cycle)->llms.elts;
    for (i = 0; i < rg_llm_main_conf(e->cycle)->llms.nelts; i++) {
        rg_llm_upstream_destroy(llms[i]->upstream);
        llms[i]->upstream = NULL;
    }

    if (e->store) {
        ((rg_store_t *) e->store)->destroy(e->store);
    }

    rg_curl_destroy(e->curl);

    if (e->base) {
        event_base_free(e->base);
    }

    free(e);
}


rg_llm_upstream_t *
rg_engine_upstream(rg_engine_t *e, rg_llm_conf_t *llm)
{
    return llm->upstream;
}


uint64_t
rg_engine_llm_retries(rg_engine_t *e)
{
    uint64_t            n;
    rg_uint_t           i;
    rg_llm_conf_t     **llms;
    rg_llm_upstream_t  *up;

    n = 0;
    llms = rg_llm_main_conf(e->cycle)->llms.elts;

    for (i = 0; i < rg_llm_main_conf(e->cycle)->llms.nelts; i++) {
        up = llms[i]->upstream;
        if (up) {
            n += up->stats.retries;
        }
    }

    return n;
}
