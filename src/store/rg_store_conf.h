/* rg_store_conf.h: the store part (rg_store_conf.c): its configuration,
 * and the store of each engine. */

#ifndef RG_STORE_CONF_H
#define RG_STORE_CONF_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_redis.h>
#include <rg_store.h>

#define RG_STORE_MEMORY        1      /* the embedded store */
#define RG_STORE_REDIS         2

/* the context of `store redis { }` */
#define RG_STORE_REDIS_CONF    0x0010

typedef struct {
    rg_uint_t           type;         /* RG_STORE_* */

    /* store memory */
    rg_int_t            max_keys;
    size_t              max_bytes;

    /* store redis */
    rg_array_t         *servers;      /* rg_str_t: the first, or seeds */
    rg_str_t            password_env;
    rg_int_t            database;
    rg_str_t            prefix;
    rg_int_t            connections;
    rg_msec_t           connect_timeout;
    rg_msec_t           command_timeout;
    rg_int_t            cluster;
    rg_redis_conf_t     redis;        /* made from the above */
    rg_redis_conf_t    *seeds;        /* the other servers of a cluster */
    rg_uint_t           nseeds;

    /* both */
    rg_msec_t           session_ttl;  /* after a session ends */
    rg_msec_t           store_timeout; /* how long a checkpoint may wait */
    rg_msec_t           lease_ttl;    /* a session's writer, heartbeat 1/3 */
    rg_int_t            events_max;   /* a session's events kept */
    rg_msec_t           events_ttl;   /* after its last event */
    const char         *file;
    rg_uint_t           line;
} rg_store_conf_t;

extern rg_part_t  rg_store_part;

#define rg_store_conf(cycle)                                                 \
    ((rg_store_conf_t *) rg_cycle_conf(cycle, &rg_store_part))

/* the engine's store (rg_store.h) */
#define rg_store_ctx(e)  rg_store_get(e)

rg_store_t *rg_store_get(rg_engine_t *e);
rg_msec_t rg_store_session_ttl(rg_engine_t *e);
rg_msec_t rg_store_timeout(rg_engine_t *e);
rg_msec_t rg_store_lease_ttl(rg_engine_t *e);
rg_uint_t rg_store_events_max(rg_engine_t *e);
rg_msec_t rg_store_events_ttl(rg_engine_t *e);

/* a Redis client of its own on the engine's store redis (the queue's
 * blocking reads need connections of their own); NULL without one */
rg_redis_t *rg_store_redis_new(rg_engine_t *e, rg_uint_t connections,
    rg_msec_t command_timeout);
/* the prefix of every key ("rg:") */
const char *rg_store_prefix(rg_cycle_t *cycle);

#endif /* RG_STORE_CONF_H */
