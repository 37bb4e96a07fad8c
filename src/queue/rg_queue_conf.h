/* rg_queue_conf.h: the queue part's configuration (rg_queue_conf.c):
 * `queue { }`, the Redis Streams that `reagent serve` reads tasks from. */

#ifndef RG_QUEUE_CONF_H
#define RG_QUEUE_CONF_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>

/* directives inside queue { } */
#define RG_QUEUE_CONF       0x0020

typedef struct {
    rg_uint_t           declared;         /* a queue { } block was read */
    rg_str_t            stream;           /* "tasks" */
    rg_str_t            group;            /* "workers" */
    rg_int_t            shards;
    rg_msec_t           claim_idle;
    rg_int_t            max_deliveries;
    rg_msec_t           block;            /* one read waits at most */
    rg_int_t            results_max;      /* the results stream, ~ */
    const char         *file;
    rg_uint_t           line;
} rg_queue_conf_t;

extern rg_part_t  rg_queue_part;
extern rg_command_t  rg_queue_commands[];

void *rg_queue_create_conf(rg_cycle_t *cycle);
char *rg_queue_init_conf(rg_cycle_t *cycle, void *conf);
/* serve's workers read the queue when a queue { } block was read */
rg_int_t rg_queue_init_master(rg_cycle_t *cycle, char *err, size_t len);

#define rg_queue_conf(cycle)                                                 \
    ((rg_queue_conf_t *) rg_cycle_conf(cycle, &rg_queue_part))

#endif /* RG_QUEUE_CONF_H */
