/* rg_event.c: the event part. It has no directives; in each engine it
 * makes the curl multi driver on the engine's base, after raising the
 * descriptor limit its connection budget is made from, and libcurl's
 * global state is set up once per process and cleaned up at its end.
 * First among the parts, it is the last to go: everything that holds a
 * transfer or a share is gone before the multi is. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_event.h>
#include <sys/resource.h>


static rg_int_t rg_event_init_worker(rg_engine_t *e);
static void rg_event_exit_worker(rg_engine_t *e);
static void rg_event_exit_process(void);


rg_part_t  rg_event_part = {
    .name = "event",
    .init_worker = rg_event_init_worker,
    .exit_worker = rg_event_exit_worker,
    .exit_process = rg_event_exit_process
};


static int  rg_event_curl_inited;


static rg_int_t
rg_event_init_worker(rg_engine_t *e)
{
    struct rlimit   rl;
    rg_curl_t      *curl;

    if (!rg_event_curl_inited) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            rg_log_error(RG_LOG_EMERG, e->log, 0,
                         "curl_global_init() failed");
            return RG_ERROR;
        }
        rg_event_curl_inited = 1;
    }

    /* thousands of sessions hold thousands of sockets */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    curl = rg_curl_create(e->base, e->log);
    if (curl == NULL) {
        rg_log_error(RG_LOG_EMERG, e->log, 0, "curl multi setup failed");
        return RG_ERROR;
    }

    rg_engine_ctx(e, &rg_event_part) = curl;

    return RG_OK;
}


static void
rg_event_exit_worker(rg_engine_t *e)
{
    rg_curl_destroy(rg_event_ctx(e));
    rg_engine_ctx(e, &rg_event_part) = NULL;
}


static void
rg_event_exit_process(void)
{
    if (rg_event_curl_inited) {
        curl_global_cleanup();
        rg_event_curl_inited = 0;
    }
}
