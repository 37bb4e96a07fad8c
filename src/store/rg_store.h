/* rg_store.h: the state store interface, asynchronous from day one: every
 * operation answers through a callback, so a Redis backend can take the
 * place of the in-memory one without touching its callers. Keys and
 * values are bytes. The memory backend answers on the next loop turn,
 * never inside the call. */

#ifndef RG_STORE_H
#define RG_STORE_H

#include <rg_config.h>
#include <rg_core.h>
#include <event2/event.h>

typedef struct rg_store_s  rg_store_t;

/* value is NULL when the key is absent or expired; valid during the
 * callback only */
typedef void (*rg_store_get_pt)(void *data, const char *value, size_t len);
typedef void (*rg_store_done_pt)(void *data, rg_int_t rc);

typedef struct {
    uint64_t            gets;
    uint64_t            hits;
    uint64_t            sets;
    uint64_t            expired;
    uint64_t            evicted;      /* made room for newer keys */
    rg_uint_t           keys;
    size_t              bytes;        /* keys and values held */
} rg_store_stats_t;

struct rg_store_s {
    const char         *name;
    void               *data;

    rg_int_t          (*get)(rg_store_t *st, const char *key, size_t klen,
                             rg_store_get_pt cb, void *data);
    rg_int_t          (*set)(rg_store_t *st, const char *key, size_t klen,
                             const char *value, size_t vlen, rg_msec_t ttl,
                             rg_store_done_pt cb, void *data);
    void              (*cancel)(rg_store_t *st, void *data);
    void              (*destroy)(rg_store_t *st);

    rg_store_stats_t    stats;
};

/* holds at most max_keys keys and max_bytes of keys and values (0: the
 * defaults, 100000 and 64m); past either, the oldest keys go. A value
 * larger than max_bytes alone is refused (set returns RG_ERROR). */
rg_store_t *rg_store_memory_create(struct event_base *base,
    rg_uint_t max_keys, size_t max_bytes);

#endif /* RG_STORE_H */
