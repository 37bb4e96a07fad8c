/* rg_core_conf.h: the core part's configuration (rg_core_conf.c). */

#ifndef RG_CORE_CONF_H
#define RG_CORE_CONF_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>

typedef struct {
    rg_int_t            concurrency;      /* sessions at once (batch) */
    rg_int_t            worker_processes;
} rg_core_conf_t;

extern rg_part_t  rg_core_part;

#define rg_core_conf(cycle)                                                  \
    ((rg_core_conf_t *) rg_cycle_conf(cycle, &rg_core_part))

#endif /* RG_CORE_CONF_H */
