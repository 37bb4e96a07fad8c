/* rg_core_conf.c: the core part: the main-level directives that belong
 * to no other part (error_log, worker_processes, concurrency) and their
 * defaults; a client command's cycle keeps its log on stderr. The cycle
 * and the engine are the core's too, but know no directive; see
 * rg_cycle.c and rg_engine.c. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_core_conf.h>
#include <sched.h>


static char *rg_core_error_log(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static char *rg_core_worker_processes(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static void *rg_core_create_conf(rg_cycle_t *cycle);
static char *rg_core_init_conf(rg_cycle_t *cycle, void *conf);


static rg_conf_num_bounds_t  rg_core_conns_bounds = { 1, 1000000 };
static rg_conf_num_bounds_t  rg_core_workers_bounds = { 1, 1024 };


/* the reference of the directives below (reagent directives) */
static rg_conf_doc_t  rg_core_docs[] = {

    { "error_log", "error_log stderr|FILE [LEVEL];", "stderr notice",
      "where log lines go and from which level: emerg, alert, crit, "
      "error, warn, notice, info or debug (a client command: stderr)",
      NULL },

    { "concurrency", "concurrency N;", "64",
      "the sessions reagent batch runs at once, unless --concurrency says "
      "otherwise", NULL },

    { "worker_processes", "worker_processes N|auto;", "1",
      "the workers of reagent serve; auto: one per core it may run on",
      NULL },

    rg_null_doc
};


static rg_command_t  rg_core_commands[] = {

    { rg_string("error_log"), RG_MAIN_CONF|RG_CONF_TAKE12,
      rg_core_error_log, 0, NULL },

    { rg_string("concurrency"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_core_conf_t, concurrency),
      &rg_core_conns_bounds },

    { rg_string("worker_processes"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_core_worker_processes, offsetof(rg_core_conf_t, worker_processes),
      &rg_core_workers_bounds },

      rg_null_command_doc(rg_core_docs)
};


rg_part_t  rg_core_part = {
    .name = "core",
    .commands = rg_core_commands,
    .create_conf = rg_core_create_conf,
    .init_conf = rg_core_init_conf
};


/* error_log stderr|FILE [LEVEL]; the cycle's log from then on, but for a
 * client command: the daemon's log is not its */
static char *
rg_core_error_log(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    int          fd;
    char        *path;
    rg_int_t     level;
    rg_cycle_t  *cycle;

    cycle = cf->cycle;
    level = RG_LOG_NOTICE;
    path = NULL;

    if (cf->nargs == 3) {
        level = rg_log_level_parse(cf->args[2].data, cf->args[2].len);
        if (level == RG_ERROR) {
            return "expects a level: emerg, alert, crit, error, warn, "
                   "notice, info or debug";
        }
    }

    /* the operator who runs `reagent queue` reads why it failed on the
     * terminal (and may not write the daemon's file) */
    if (cycle->client) {
        return RG_CONF_OK;
    }

    if (rg_str_eq(&cf->args[1], "stderr")) {
        fd = STDERR_FILENO;

    } else {
        path = rg_conf_full_path(cf, &cf->args[1]);
        if (path == NULL) {
            return RG_CONF_ERROR;
        }

        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd == -1) {
            rg_conf_log_error(RG_LOG_EMERG, cf, errno,
                              "cannot open error log \"%s\"", path);
            return RG_CONF_ERROR;
        }
    }

    if (cycle->log_opened) {
        close(cycle->new_log.fd);
    }

    cycle->new_log.fd = fd;
    cycle->log_opened = fd != STDERR_FILENO;
    cycle->log_path = cycle->log_opened ? path : NULL;   /* for reopen */
    cycle->new_log.log_level = level;

    return RG_CONF_OK;
}


static void *
rg_core_create_conf(rg_cycle_t *cycle)
{
    rg_core_conf_t  *ccf;

    ccf = rg_conf_create(cycle->pool, sizeof(rg_core_conf_t),
                         rg_core_commands, RG_MAIN_CONF);
    if (ccf == NULL) {
        return NULL;
    }

    ccf->worker_processes = RG_CONF_UNSET;    /* rg_core_worker_processes */

    return ccf;
}


static char *
rg_core_init_conf(rg_cycle_t *cycle, void *conf)
{
    rg_core_conf_t  *ccf;

    ccf = conf;

    rg_conf_init_value(ccf->concurrency, 64);

    rg_conf_init_value(ccf->worker_processes, 1);

    return RG_CONF_OK;
}


/* worker_processes N|auto; auto: one per core it may use */
static char *
rg_core_worker_processes(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    long             n;
    cpu_set_t        set;
    rg_core_conf_t  *ccf;

    ccf = conf;

    if (rg_str_eq(&cf->args[1], "auto")) {
        if (ccf->worker_processes != RG_CONF_UNSET) {
            return "is duplicate";
        }

        /* the CPUs this process may run on (a container's cpuset), not
         * every one online */
        n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                         : 0;
        if (n <= 0) {
            n = sysconf(_SC_NPROCESSORS_ONLN);
        }
        ccf->worker_processes = n > 0 ? (rg_int_t) rg_min(n, 1024) : 1;
        return RG_CONF_OK;
    }

    return rg_conf_set_num_slot(cf, cmd, conf);
}
