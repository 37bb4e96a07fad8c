/* rg_store_redis.h: the Redis backend of the store interface. */

#ifndef RG_STORE_REDIS_H
#define RG_STORE_REDIS_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>
#include <rg_redis.h>

typedef struct {
    rg_redis_conf_t     redis;
    const char         *prefix;       /* "rg:"; never holds "{" */
} rg_store_redis_conf_t;

rg_store_t *rg_store_redis_create(struct event_base *base,
    struct evdns_base *dns, const rg_store_redis_conf_t *conf,
    rg_log_t *log);
/* what the server said of its persistence, once asked (at the first
 * answer; the log warns when it persists nothing) */
#define RG_STORE_PERSIST_ASKED    0    /* no answer yet */
#define RG_STORE_PERSIST_YES      1    /* appendonly, or an RDB save */
#define RG_STORE_PERSIST_NO       2
#define RG_STORE_PERSIST_UNKNOWN  3    /* CONFIG refused */
rg_uint_t rg_store_redis_persists(rg_store_t *st);

/* the client under a redis store (for the queue), NULL for another */
rg_redis_t *rg_store_redis_client(rg_store_t *st);

#endif /* RG_STORE_REDIS_H */
