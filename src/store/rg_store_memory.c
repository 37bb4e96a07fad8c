/* rg_store_memory.c: the embedded store: a hash table in this process
 * with per-key expiry, for `run`, `batch` and single-process use. Answers
 * are posted to the next loop turn so callers see the same asynchronous
 * behaviour as with Redis. Bounded in keys and in bytes (keys and values
 * together): past either bound the oldest keys go. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>
#include <event2/event_struct.h>


typedef struct rg_store_entry_s  rg_store_entry_t;

struct rg_store_entry_s {
    rg_store_entry_t   *next;         /* in its bucket */
    rg_store_entry_t   *older;        /* insertion order, for eviction */
    rg_store_entry_t   *newer;
    uint64_t            hash;
    rg_msec_t           expires;      /* 0: never */
    size_t              klen;
    size_t              vlen;
    char                data[];       /* key, then value */
};


typedef struct rg_store_op_s  rg_store_op_t;

struct rg_store_op_s {
    rg_store_op_t      *next;
    rg_store_op_t      *prev;
    rg_store_get_pt     get_cb;
    rg_store_done_pt    done_cb;
    void               *data;
    uint64_t            gen;
    char               *value;        /* a copy, for gets */
    size_t              vlen;
    unsigned            found:1;
};


typedef struct {
    rg_store_t          store;        /* first */
    struct event_base  *base;
    struct event        ev;
    rg_store_entry_t  **buckets;
    rg_uint_t           nbuckets;
    rg_uint_t           count;
    rg_uint_t           max_keys;
    size_t              bytes;
    size_t              max_bytes;
    rg_store_entry_t   *oldest;
    rg_store_entry_t   *newest;
    rg_store_op_t       ops;          /* pending answers: a ring */
    uint64_t            gen;
    unsigned            posted:1;
} rg_store_memory_t;


static uint64_t
rg_store_hash(const char *p, size_t len)
{
    uint64_t  h;

    /* FNV-1a */
    h = 14695981039346656037ULL;
    while (len--) {
        h ^= (unsigned char) *p++;
        h *= 1099511628211ULL;
    }

    return h;
}


static void
rg_store_unlink(rg_store_memory_t *m, rg_store_entry_t *e)
{
    rg_store_entry_t  **pp;

    for (pp = &m->buckets[e->hash % m->nbuckets]; *pp; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    }

    if (e->older) {
        e->older->newer = e->newer;
    } else {
        m->oldest = e->newer;
    }

    if (e->newer) {
        e->newer->older = e->older;
    } else {
        m->newest = e->older;
    }

    m->count--;
    m->bytes -= e->klen + e->vlen;
    m->store.stats.keys = m->count;
    m->store.stats.bytes = m->bytes;
    free(e);
}


static rg_store_entry_t *
rg_store_find(rg_store_memory_t *m, const char *key, size_t klen)
{
    uint64_t           h;
    rg_store_entry_t  *e;

    h = rg_store_hash(key, klen);

    for (e = m->buckets[h % m->nbuckets]; e; e = e->next) {
        if (e->hash == h && e->klen == klen
            && memcmp(e->data, key, klen) == 0)
        {
            if (e->expires && e->expires <= rg_monotonic_msec()) {
                m->store.stats.expired++;
                rg_store_unlink(m, e);
                return NULL;
            }
            return e;
        }
    }

    return NULL;
}


static void
rg_store_answer_handler(evutil_socket_t fd, short what, void *arg)
{
    uint64_t            gen;
    rg_store_op_t      *op;
    rg_store_memory_t  *m;

    m = arg;
    m->posted = 0;
    gen = m->gen++;

    /* one at a time from the head: a callback may post new operations
     * (they wait for the next turn) or cancel pending ones */
    while (m->ops.next != &m->ops && m->ops.next->gen <= gen) {
        op = m->ops.next;
        op->prev->next = op->next;
        op->next->prev = op->prev;

        if (op->get_cb) {
            op->get_cb(op->data, op->found ? op->value : NULL, op->vlen);
        } else if (op->done_cb) {
            op->done_cb(op->data, RG_OK);
        }

        free(op->value);
        free(op);
    }

    if (m->ops.next != &m->ops && !m->posted) {
        m->posted = 1;
        event_active(&m->ev, EV_TIMEOUT, 1);
    }
}


static rg_store_op_t *
rg_store_post(rg_store_memory_t *m, void *data)
{
    rg_store_op_t  *op;

    op = calloc(1, sizeof(rg_store_op_t));
    if (op == NULL) {
        return NULL;
    }

    op->data = data;
    op->gen = m->gen;
    op->prev = m->ops.prev;
    op->next = &m->ops;
    m->ops.prev->next = op;
    m->ops.prev = op;

    if (!m->posted) {
        m->posted = 1;
        event_active(&m->ev, EV_TIMEOUT, 1);
    }

    return op;
}


static rg_int_t
rg_store_memory_get(rg_store_t *st, const char *key, size_t klen,
    rg_store_get_pt cb, void *data)
{
    rg_store_op_t      *op;
    rg_store_entry_t   *e;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;
    st->stats.gets++;

    op = rg_store_post(m, data);
    if (op == NULL) {
        return RG_ERROR;
    }

    op->get_cb = cb;

    e = rg_store_find(m, key, klen);
    if (e) {
        op->value = rg_strdup_len(e->data + e->klen, e->vlen);
        if (op->value) {
            op->vlen = e->vlen;
            op->found = 1;
            st->stats.hits++;
        }
    }

    return RG_OK;
}


static rg_int_t
rg_store_memory_set(rg_store_t *st, const char *key, size_t klen,
    const char *value, size_t vlen, rg_msec_t ttl, rg_store_done_pt cb,
    void *data)
{
    rg_store_op_t      *op;
    rg_store_entry_t   *e, **bucket;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;
    st->stats.sets++;

    e = rg_store_find(m, key, klen);
    if (e) {
        rg_store_unlink(m, e);
    }

    if (klen > m->max_bytes || vlen > m->max_bytes - klen) {
        return RG_ERROR;               /* would never fit */
    }

    while (m->oldest
           && (m->count >= m->max_keys
               || m->bytes > m->max_bytes - klen - vlen))
    {
        st->stats.evicted++;
        rg_store_unlink(m, m->oldest);
    }

    e = malloc(sizeof(rg_store_entry_t) + klen + vlen + 1);
    if (e == NULL) {
        return RG_ERROR;
    }

    e->hash = rg_store_hash(key, klen);
    e->expires = ttl ? rg_monotonic_msec() + ttl : 0;
    e->klen = klen;
    e->vlen = vlen;
    memcpy(e->data, key, klen);
    memcpy(e->data + klen, value, vlen);
    e->data[klen + vlen] = '\0';

    bucket = &m->buckets[e->hash % m->nbuckets];
    e->next = *bucket;
    *bucket = e;

    e->newer = NULL;
    e->older = m->newest;
    if (m->newest) {
        m->newest->newer = e;
    } else {
        m->oldest = e;
    }
    m->newest = e;

    m->count++;
    m->bytes += klen + vlen;
    st->stats.keys = m->count;
    st->stats.bytes = m->bytes;

    if (cb) {
        op = rg_store_post(m, data);
        if (op == NULL) {
            return RG_ERROR;
        }
        op->done_cb = cb;
    }

    return RG_OK;
}


static void
rg_store_memory_cancel(rg_store_t *st, void *data)
{
    rg_store_op_t      *op, *next;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    for (op = m->ops.next; op != &m->ops; op = next) {
        next = op->next;

        if (op->data == data) {
            op->prev->next = op->next;
            op->next->prev = op->prev;
            free(op->value);
            free(op);
        }
    }
}


static void
rg_store_memory_destroy(rg_store_t *st)
{
    rg_uint_t           i;
    rg_store_op_t      *op, *next;
    rg_store_entry_t   *e, *en;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    for (op = m->ops.next; op != &m->ops; op = next) {
        next = op->next;
        free(op->value);
        free(op);
    }

    for (i = 0; i < m->nbuckets; i++) {
        for (e = m->buckets[i]; e; e = en) {
            en = e->next;
            free(e);
        }
    }

    event_del(&m->ev);
    free(m->buckets);
    free(m);
}


rg_store_t *
rg_store_memory_create(struct event_base *base, rg_uint_t max_keys,
    size_t max_bytes)
{
    rg_store_memory_t  *m;

    m = calloc(1, sizeof(rg_store_memory_t));
    if (m == NULL) {
        return NULL;
    }

    m->nbuckets = 4096;
    m->buckets = calloc(m->nbuckets, sizeof(rg_store_entry_t *));
    if (m->buckets == NULL) {
        free(m);
        return NULL;
    }

    m->base = base;
    m->max_keys = max_keys ? max_keys : 100000;
    m->max_bytes = max_bytes ? max_bytes : 64 * 1024 * 1024;
    m->ops.next = &m->ops;
    m->ops.prev = &m->ops;

    event_assign(&m->ev, base, -1, 0, rg_store_answer_handler, m);

    m->store.name = "memory";
    m->store.data = m;
    m->store.get = rg_store_memory_get;
    m->store.set = rg_store_memory_set;
    m->store.cancel = rg_store_memory_cancel;
    m->store.destroy = rg_store_memory_destroy;

    return &m->store;
}
