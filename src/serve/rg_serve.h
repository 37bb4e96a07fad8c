/* rg_serve.h: the serve part: `reagent serve`, its directives (pid,
 * daemon, drain_timeout), the master's operations (rg_serve.c) and a
 * worker's dispatcher of queue tasks (rg_serve_worker.c). */

#ifndef RG_SERVE_H
#define RG_SERVE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_process.h>

typedef struct {
    rg_str_t            pid;              /* the pid file, "" : none */
    rg_int_t            daemon;
    rg_msec_t           drain_timeout;
    rg_int_t            workers;          /* worker_processes, resolved */
} rg_serve_conf_t;

extern rg_part_t  rg_serve_part;

#define rg_serve_conf(cycle)                                                 \
    ((rg_serve_conf_t *) rg_cycle_conf(cycle, &rg_serve_part))

/* a worker process's life: the engine, its queue, its sessions */
int rg_serve_worker_run(rg_worker_t *w);

#endif /* RG_SERVE_H */
