/* rg_process.h: `reagent serve` as nginx runs: a master process that
 * loads and tests the configuration, forks the workers, and then only
 * supervises them (signals, respawn, reload, the status socket), and the
 * worker side of the master⇄worker channel. What a worker does (its
 * engine, the queue, the API) is not known here: the caller passes it as
 * operations, so this part needs nothing but core. */

#ifndef RG_PROCESS_H
#define RG_PROCESS_H

#include <rg_config.h>
#include <rg_core.h>
#include <event2/event.h>

typedef struct rg_worker_s  rg_worker_t;


/* what one loaded configuration says about the processes */
typedef struct {
    rg_uint_t           workers;          /* worker_processes */
    rg_msec_t           drain_timeout;
    const char         *pid_file;         /* NULL: none */
    rg_uint_t           daemon;
    rg_log_t           *log;              /* the configuration's */
} rg_master_settings_t;


typedef struct {
    /* in the master: read and test the configuration; NULL with err set
     * ("… in FILE:LINE") when it is wrong */
    rg_cycle_t       *(*load)(const char *conf_file, char *err, size_t len);
    void              (*unload)(rg_cycle_t *cycle);
    void              (*settings)(rg_cycle_t *cycle, rg_master_settings_t *s);
    /* USR1: reopen the cycle's log files, in the master and in a worker */
    void              (*reopen)(rg_cycle_t *cycle);
    /* in a new worker process: its whole life; returns its exit code.
     * It calls rg_worker_attach() on its reactor first. */
    int               (*run)(rg_worker_t *w);
    void               *data;
} rg_master_ops_t;


/* A worker as it sees itself. The run() operation fills the hooks; the
 * channel calls them on the worker's reactor. */
struct rg_worker_s {
    rg_uint_t           slot;             /* 0 … workers - 1 */
    rg_uint_t           generation;       /* configurations loaded so far */
    rg_cycle_t         *cycle;            /* opaque here: the ops' */
    const rg_master_ops_t *ops;
    rg_log_t           *log;

    /* stop taking work, finish or hand back what runs, within timeout;
     * then rg_worker_exit() */
    void              (*drain)(rg_worker_t *w, rg_msec_t timeout);
    /* stop at once (every session is checkpointed) */
    void              (*stop)(rg_worker_t *w);
    /* a JSON object about its state for the master's status, or 0 */
    size_t            (*status)(rg_worker_t *w, char *buf, size_t size);
    /* USR1, after ops->reopen: the files of its own (NULL: none) */
    void              (*reopen)(rg_worker_t *w);
    void               *data;

    /* the channel's, private */
    int                 channel;
    struct event_base  *base;
    struct event       *channel_ev;
    struct event       *report_ev;
    struct event       *signal_ev[4];
    unsigned            draining:1;
    unsigned            stopping:1;
};


/* runs the master until it stops; returns the process exit code */
int rg_master_run(const char *conf_file, const rg_master_ops_t *ops,
    rg_log_t *log);

/* in a worker: listen to the master on base (and to QUIT and TERM sent
 * by kill, as a fallback) and report its status every second */
rg_int_t rg_worker_attach(rg_worker_t *w, struct event_base *base);
void rg_worker_detach(rg_worker_t *w);


/* reagent -s reload|reopen|stop|quit: signals the master whose pid the
 * file holds; 0, or 1 with the reason on stderr */
int rg_process_signal(const char *pid_file, const char *name);
/* the master's status (its workers and their reports) as JSON on fd;
 * 0, or 1 with the reason on stderr */
int rg_process_status(const char *pid_file, int fd);

/* the status socket of a master whose pid file is pid_file */
void rg_process_status_path(const char *pid_file, char *buf, size_t size);

/* systemd's notify protocol (a datagram to NOTIFY_SOCKET); nothing when
 * the variable is not set */
void rg_notify(const char *state);

#endif /* RG_PROCESS_H */
