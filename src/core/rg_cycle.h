/* rg_cycle.h: everything one configuration builds: each part's
 * configuration, by the part's index, and the log. A reload builds a new
 * cycle and keeps the old one when that fails. The cycle knows no part
 * by name; what waits on the reactor lives in the engine (rg_engine.h),
 * not here, and a cycle is read-only once built. */

#ifndef RG_CYCLE_H
#define RG_CYCLE_H

#include <rg_config.h>
#include <rg_core.h>
#include <stdatomic.h>


struct rg_cycle_s {
    rg_pool_t          *pool;
    rg_log_t           *log;
    rg_log_t            new_log;
    char               *conf_file;
    void              **conf;             /* each part's, by its index */
    char               *log_path;         /* error_log's file, or NULL */
    unsigned            log_opened:1;     /* new_log.fd is ours to close */
    /* read for a client command (RG_CLI_CLIENT): the parts skip what
     * only the daemon needs (its secrets, error_log) */
    unsigned            client:1;

    /* calls of its code still running in threads left behind by an
     * engine (a blocking tool): while any is, the cycle is kept */
    atomic_uint         busy;

    rg_cycle_t         *next_kept;        /* destroyed while busy: kept */
    char                errmsg[512];
};


#define rg_cycle_conf(cycle, part)  ((cycle)->conf[(part)->index])


/* Reads conf_file (or conf_text, named conf_file) and builds a cycle:
 * every part creates its configuration, the file is read with every
 * part's directives, and every part completes its configuration, in the
 * order of the parts. NULL with errmsg set on failure. */
rg_cycle_t *rg_cycle_create(const char *conf_file, const char *conf_text,
    rg_log_t *log, char *errmsg, size_t errlen);
/* The same for a client command (RG_CLI_CLIENT): cycle->client is set
 * while the file is read, and the cycle logs on log, whatever error_log
 * says. Never for what runs sessions: the daemon's secrets are not read. */
rg_cycle_t *rg_cycle_create_client(const char *conf_file, rg_log_t *log,
    char *errmsg, size_t errlen);
/* Frees the cycle, unless some of its code still runs in a thread (a
 * blocking tool that outlived its engine): then the cycle, its modules
 * loaded and configured, is kept until that thread is done and freed by a
 * later call, rg_cycle_destroy(NULL) included. */
void rg_cycle_destroy(rg_cycle_t *cycle);
rg_uint_t rg_cycle_kept(void);

/* In the master of `reagent serve`: every part's init_master. RG_OK
 * when some part gives the workers work, RG_DECLINED when none does,
 * RG_ERROR with err said. */
rg_int_t rg_cycle_init_master(rg_cycle_t *cycle, char *err, size_t len);

/* For a part's init_conf: the error of the configuration, logged and
 * kept in cycle->errmsg, " in FILE:LINE" (or " in FILE") added. */
void rg_cycle_error(rg_cycle_t *cycle, const char *file, rg_uint_t line,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif /* RG_CYCLE_H */
