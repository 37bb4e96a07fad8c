/* rg_store_conf.h: the store part (rg_store_conf.c): its configuration,
 * and the store of each engine. */

#ifndef RG_STORE_CONF_H
#define RG_STORE_CONF_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>

#define RG_STORE_MEMORY   1           /* the embedded store */

typedef struct {
    rg_uint_t           type;         /* RG_STORE_* */

    /* store memory */
    rg_int_t            max_keys;
    size_t              max_bytes;
} rg_store_conf_t;

extern rg_part_t  rg_store_part;

#define rg_store_conf(cycle)                                                 \
    ((rg_store_conf_t *) rg_cycle_conf(cycle, &rg_store_part))

/* the engine's store (rg_store.h) */
#define rg_store_ctx(e)                                                      \
    ((rg_store_t *) rg_engine_ctx(e, &rg_store_part))

#endif /* RG_STORE_CONF_H */
