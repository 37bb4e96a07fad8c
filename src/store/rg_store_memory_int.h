/* rg_store_memory_int.h: what the two halves of the embedded store share
 * (rg_store_memory.c: its keys, answers and the operations on keys of
 * their own; rg_store_memory_session.c: those on a session's keys); not
 * for callers, who use rg_store.h. */

#ifndef RG_STORE_MEMORY_INT_H
#define RG_STORE_MEMORY_INT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>
#include <event2/event_struct.h>
#include <glib.h>


typedef struct rg_mem_entry_s  rg_mem_entry_t;

struct rg_mem_entry_s {
    GBytes             *key;          /* the hash table's key */
    rg_mem_entry_t     *older;        /* insertion order, for eviction */
    rg_mem_entry_t     *newer;
    rg_msec_t           expires;      /* 0: never */
    size_t              bytes;        /* what it counts against the bound */
    rg_str_t            value;        /* a value; unused by a list */
    rg_str_t           *items;        /* a list */
    rg_uint_t           nitems;
    rg_uint_t           cap;
    rg_uint_t           pinned;       /* in use by the operation at hand */
    unsigned            list:1;
};


struct rg_store_op_s {
    rg_store_op_t      *next;
    rg_store_op_t      *prev;
    rg_store_pt         cb;
    void               *data;
    uint64_t            gen;
    rg_store_res_t      res;          /* its strings are owned here */
    char               *err;
    rg_str_t           *items;
    rg_str_t           *fields;
    rg_store_entry_t   *entries;      /* range: into block */
    char               *block;
};


typedef struct {
    rg_store_t          store;        /* first */
    struct event_base  *base;
    struct event        ev;
    GHashTable         *keys;
    rg_uint_t           max_keys;
    size_t              max_bytes;
    size_t              bytes;
    rg_mem_entry_t     *oldest;
    rg_mem_entry_t     *newest;
    rg_store_op_t       ops;          /* answers to post: a ring */
    uint64_t            gen;
    unsigned            posted:1;
} rg_store_memory_t;


#define RG_MEM_ENTRY_SIZE  RG_STORE_MEMORY_KEY_COST

/* what rg_mem_session() does with a key that is not there */
#define RG_MEM_FIND        0          /* nothing: NULL */
#define RG_MEM_VALUE       1          /* makes it, a value */
#define RG_MEM_LIST        2          /* makes it, a list */

#define RG_MEM_FULL        "the memory store is full"
#define RG_MEM_FENCED                                                        \
    "fenced: the session's lease is held by another worker"


/* keys (rg_store_memory.c) */
rg_mem_entry_t *rg_mem_find(rg_store_memory_t *m, const rg_str_t *key);
rg_mem_entry_t *rg_mem_create(rg_store_memory_t *m, const rg_str_t *key,
    rg_uint_t list);
void rg_mem_unlink(rg_store_memory_t *m, rg_mem_entry_t *e);
rg_int_t rg_mem_room(rg_store_memory_t *m, size_t more, rg_uint_t adding);
rg_int_t rg_mem_set_value(rg_store_memory_t *m, rg_mem_entry_t *e,
    const char *p, size_t len);
rg_int_t rg_mem_push(rg_store_memory_t *m, rg_mem_entry_t *e, const char *p,
    size_t len);
void rg_mem_trim(rg_store_memory_t *m, rg_mem_entry_t *e, rg_uint_t first,
    rg_uint_t n);
void rg_mem_expire(rg_mem_entry_t *e, rg_msec_t ttl);
rg_int_t rg_mem_number(rg_mem_entry_t *e, int64_t *n);
rg_int_t rg_mem_set_number(rg_store_memory_t *m, rg_mem_entry_t *e,
    int64_t n);

/* answers (rg_store_memory.c) */
rg_store_op_t *rg_mem_post(rg_store_memory_t *m, rg_store_pt cb,
    void *data);
void rg_mem_refuse(rg_store_op_t *op, rg_int_t rc, const char *err);
void rg_mem_copy_value(rg_store_op_t *op, const rg_str_t *v);
void rg_mem_full(rg_store_memory_t *m, rg_store_op_t *op);
void rg_mem_exists(rg_store_op_t *op, rg_mem_entry_t *e);

/* sessions (rg_store_memory_session.c) */
rg_mem_entry_t *rg_mem_session(rg_store_memory_t *m, const rg_str_t *id,
    const char *name, size_t len, rg_uint_t make);
rg_uint_t rg_mem_lease_admits(rg_store_memory_t *m, const rg_str_t *id,
    int64_t token);
rg_store_op_t *rg_mem_checkpoint(rg_store_t *st,
    const rg_store_checkpoint_t *cp, rg_store_pt cb, void *data);
rg_store_op_t *rg_mem_load(rg_store_t *st, const rg_str_t *id,
    rg_store_pt cb, void *data);
rg_store_op_t *rg_mem_put(rg_store_t *st, const rg_store_put_t *p,
    rg_store_pt cb, void *data);
rg_store_op_t *rg_mem_lease(rg_store_t *st, const rg_str_t *id,
    const rg_str_t *holder, int64_t token, rg_msec_t ttl, rg_store_pt cb,
    void *data);
rg_store_op_t *rg_mem_release(rg_store_t *st, const rg_str_t *id,
    int64_t token, rg_store_pt cb, void *data);

/* shared limits (rg_store_memory.c) */
rg_store_op_t *rg_mem_take(rg_store_t *st, const rg_str_t *cool,
    const rg_store_bucket_t *b, rg_uint_t nb, rg_store_pt cb, void *data);
rg_store_op_t *rg_mem_cooldown(rg_store_t *st, const rg_str_t *cool,
    rg_msec_t ms, rg_store_pt cb, void *data);
rg_store_op_t *rg_mem_slot(rg_store_t *st, const rg_str_t *cool,
    const rg_str_t *name, const rg_str_t *holder, rg_uint_t max,
    rg_msec_t ttl, rg_store_pt cb, void *data);

/* events (rg_store_memory_session.c) */
rg_store_op_t *rg_mem_append(rg_store_t *st, const rg_store_event_t *ev,
    rg_store_pt cb, void *data);
rg_store_op_t *rg_mem_range(rg_store_t *st, const rg_str_t *id,
    const char *after, rg_uint_t count, rg_store_pt cb, void *data);


#endif /* RG_STORE_MEMORY_INT_H */
