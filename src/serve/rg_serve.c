/* rg_serve.c: the serve part and `reagent serve`: the master reads and
 * tests the configuration, writes the pid file, forks worker_processes
 * workers and supervises them as nginx does (src/os/rg_master.c: HUP
 * reloads, QUIT drains, TERM stops, USR1 reopens the logs, a dead worker
 * is respawned with backoff). Each worker runs the queue's tasks on its
 * own reactor (rg_serve_worker.c) and answers the HTTP API when one is
 * configured. Directives: `pid FILE;`, `daemon on|off;`,
 * `drain_timeout 30s;`; serve needs `queue { }` (with `store redis { }`)
 * or `http { }`. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_core_conf.h>
#include <rg_serve.h>
#include <rg_queue_conf.h>
#include <rg_store_conf.h>
#include <fcntl.h>


static void *rg_serve_create_conf(rg_cycle_t *cycle);
static char *rg_serve_init_conf(rg_cycle_t *cycle, void *conf);
static int rg_serve_main(rg_cycle_t *cycle, void *opts, const char *arg);
static int rg_serve_option(void *opts, int argc, char **argv, int i);
static int rg_signal_main(rg_cycle_t *cycle, void *opts, const char *arg);
static int rg_workers_main(rg_cycle_t *cycle, void *opts, const char *arg);


static rg_uint_t  rg_serve_foreground;    /* --foreground: daemon off */


/* the reference of the directives below (reagent directives) */
static rg_conf_doc_t  rg_serve_docs[] = {

    { "pid", "pid FILE;", "—",
      "the pid file of reagent serve's master, which reagent -s and "
      "reagent workers read", NULL },

    { "daemon", "daemon on|off;", "off",
      "reagent serve detaches from the terminal (off under systemd and in "
      "containers)", NULL },

    { "drain_timeout", "drain_timeout TIME;", "30s",
      "how long a worker lets its sessions finish at QUIT or a reload",
      NULL },

    rg_null_doc
};


static rg_command_t  rg_serve_commands[] = {

    { rg_string("pid"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_serve_conf_t, pid), NULL },

    { rg_string("daemon"), RG_MAIN_CONF|RG_CONF_FLAG,
      rg_conf_set_flag_slot, offsetof(rg_serve_conf_t, daemon), NULL },

    { rg_string("drain_timeout"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_serve_conf_t, drain_timeout),
      NULL },

      rg_null_command_doc(rg_serve_docs)
};


/* serve takes no argument: "-" stands for it */
typedef struct {
    rg_uint_t           foreground;
} rg_serve_opts_t;


static const rg_cli_t  rg_serve_cli = {
    "serve",
    "  serve [--foreground]\n"
    "      the daemon: a master and worker_processes workers that run the\n"
    "      tasks of the queue (queue { }, store redis { }) and answer the\n"
    "      HTTP API (http { }); HUP reloads, QUIT drains, TERM stops, USR1\n"
    "      reopens the logs\n",
    NULL,
    sizeof(rg_serve_opts_t),
    rg_serve_option,
    rg_serve_main,
    0
};


static const rg_cli_t  rg_signal_cli = {
    "signal",
    "  signal reload|reopen|stop|quit   (also: reagent -s SIGNAL)\n"
    "      signals the master of `reagent serve` through its pid file\n",
    "a signal: reload, reopen, stop or quit",
    0,
    NULL,
    rg_signal_main,
    RG_CLI_CLIENT
};


static const rg_cli_t  rg_workers_cli = {
    "workers",
    "  workers\n"
    "      what the master of reagent serve says of itself and of each\n"
    "      worker (its sessions, tasks started, done, taken over, dead),\n"
    "      as JSON, from its status socket (beside the pid file)\n",
    NULL,
    0,
    NULL,
    rg_workers_main,
    RG_CLI_CLIENT
};


static const rg_cli_t  *rg_serve_clis[] = {
    &rg_serve_cli,
    &rg_signal_cli,
    &rg_workers_cli,
    NULL
};


rg_part_t  rg_serve_part = {
    .name = "serve",
    .commands = rg_serve_commands,
    .create_conf = rg_serve_create_conf,
    .init_conf = rg_serve_init_conf,
    .cli = rg_serve_clis
};


static void *
rg_serve_create_conf(rg_cycle_t *cycle)
{
    return rg_conf_create(cycle->pool, sizeof(rg_serve_conf_t),
                          rg_serve_commands, RG_MAIN_CONF);
}


static char *
rg_serve_init_conf(rg_cycle_t *cycle, void *conf)
{
    rg_serve_conf_t  *scf;

    scf = conf;

    rg_conf_init_value(scf->daemon, 0);
    rg_conf_init_msec_value(scf->drain_timeout, 30000);

    scf->workers = rg_core_conf(cycle)->worker_processes;

    return RG_CONF_OK;
}


static int
rg_serve_option(void *opts, int argc, char **argv, int i)
{
    rg_serve_opts_t  *o;

    o = opts;

    if (strcmp(argv[i], "--foreground") == 0) {
        o->foreground = 1;
        return 1;
    }

    return 0;
}


/* the master's operations ---------------------------------------------- */

static rg_cycle_t *
rg_serve_load(const char *conf_file, char *err, size_t len)
{
    rg_cycle_t  *cycle;
    rg_log_t     log;

    log = *rg_log_stderr();

    cycle = rg_cycle_create(conf_file, NULL, &log, err, len);
    if (cycle == NULL) {
        return NULL;
    }

    /* the listening sockets are opened here, once, for every worker */
    switch (rg_cycle_init_master(cycle, err, len)) {

    case RG_OK:
        break;

    case RG_DECLINED:
        snprintf(err, len, "serve has nothing to do: it needs a \"queue "
                 "{ }\" block (with \"store redis { }\") or an \"http { }\" "
                 "block, in %s", conf_file);
        /* fall through */

    default:
        rg_cycle_destroy(cycle);
        return NULL;
    }

    return cycle;
}


static void
rg_serve_unload(rg_cycle_t *cycle)
{
    rg_cycle_destroy(cycle);
}


static void
rg_serve_settings(rg_cycle_t *cycle, rg_master_settings_t *s)
{
    rg_serve_conf_t  *scf;

    scf = rg_serve_conf(cycle);

    s->workers = (rg_uint_t) scf->workers;
    s->drain_timeout = scf->drain_timeout;
    s->pid_file = scf->pid.len ? scf->pid.data : NULL;
    s->daemon = rg_serve_foreground ? 0 : (rg_uint_t) scf->daemon;
    s->log = cycle->log;
}


/* USR1: the error log's file again (logrotate moved the old one); a
 * worker then reopens the files of its parts (rg_engine_reopen) */
static void
rg_serve_reopen(rg_cycle_t *cycle)
{
    int  fd;

    if (cycle->log_path == NULL) {
        return;
    }

    fd = open(cycle->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
              0644);
    if (fd == -1) {
        rg_log_error(RG_LOG_ALERT, cycle->log, errno, "cannot reopen the "
                     "error log \"%s\"", cycle->log_path);
        return;
    }

    if (dup3(fd, cycle->log->fd, O_CLOEXEC) == -1) {
        rg_log_error(RG_LOG_ALERT, cycle->log, errno, "cannot reopen the "
                     "error log \"%s\"", cycle->log_path);
    }

    close(fd);
}


static const rg_master_ops_t  rg_serve_ops = {
    rg_serve_load,
    rg_serve_unload,
    rg_serve_settings,
    rg_serve_reopen,
    rg_serve_worker_run,
    NULL
};


static int
rg_serve_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    char  *conf;
    int    rc;

    rg_serve_foreground = ((rg_serve_opts_t *) opts)->foreground;

    /* the master reads the file again itself, and at every reload */
    conf = strdup(cycle->conf_file);
    if (conf == NULL) {
        return 1;
    }

    rc = rg_master_run(conf, &rg_serve_ops, cycle->log);

    free(conf);

    return rc;
}


static int
rg_signal_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    rg_serve_conf_t  *scf;

    scf = rg_serve_conf(cycle);

    if (scf->pid.len == 0) {
        fprintf(stderr, "reagent: -s %s needs \"pid FILE;\" in %s, the "
                "file the master wrote its pid in\n", arg, cycle->conf_file);
        return 1;
    }

    return rg_process_signal(scf->pid.data, arg);
}


static int
rg_workers_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    int               rc;
    rg_serve_conf_t  *scf;

    scf = rg_serve_conf(cycle);

    rc = rg_process_status(scf->pid.len ? scf->pid.data : NULL,
                           STDOUT_FILENO);
    fflush(stdout);

    return rc;
}
