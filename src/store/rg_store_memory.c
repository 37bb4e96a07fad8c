/* rg_store_memory.c: the embedded store: the store interface (rg_store.h)
 * kept in this process, for `run`, `batch` and a single worker. Keys live
 * in a GLib hash table with per-key expiry; a key holds a value or a list
 * (a session's messages, its meta as name/value pairs). Bounded in keys
 * and in bytes: past either, the oldest keys go. Every answer is a copy
 * posted to the next loop turn, so callers see what they see with Redis:
 * never a callback inside the call, and a callback may start new
 * operations. Not durable: it ends with the process. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>
#include <event2/event_struct.h>
#include <glib.h>
#include <math.h>


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


static void
rg_mem_entry_free(gpointer p)
{
    rg_uint_t        i;
    rg_mem_entry_t  *e;

    e = p;

    for (i = 0; i < e->nitems; i++) {
        free(e->items[i].data);
    }

    free(e->items);
    free(e->value.data);
    g_bytes_unref(e->key);
    free(e);
}


static void
rg_mem_unlink(rg_store_memory_t *m, rg_mem_entry_t *e)
{
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

    m->bytes -= e->bytes;

    /* the table's free function frees e */
    g_hash_table_remove(m->keys, e->key);

    m->store.stats.keys = g_hash_table_size(m->keys);
    m->store.stats.bytes = m->bytes;
}


static rg_mem_entry_t *
rg_mem_find(rg_store_memory_t *m, const rg_str_t *key)
{
    GBytes          *k;
    rg_mem_entry_t  *e;

    k = g_bytes_new_static(key->data, key->len);
    e = g_hash_table_lookup(m->keys, k);
    g_bytes_unref(k);

    if (e && e->expires && e->expires <= rg_monotonic_msec()) {
        m->store.stats.expired++;
        rg_mem_unlink(m, e);
        return NULL;
    }

    return e;
}


/* room for more bytes (and one more key when adding): the oldest keys
 * go, never one the operation at hand holds (pinned) */
static rg_int_t
rg_mem_room(rg_store_memory_t *m, size_t more, rg_uint_t adding)
{
    rg_mem_entry_t  *e, *next;

    if (more > m->max_bytes) {
        return RG_ERROR;                     /* would never fit */
    }

    for (e = m->oldest;
         e && (g_hash_table_size(m->keys) + adding > m->max_keys
               || m->bytes > m->max_bytes - more);
         e = next)
    {
        next = e->newer;

        if (!e->pinned) {
            m->store.stats.evicted++;
            rg_mem_unlink(m, e);
        }
    }

    if (m->bytes > m->max_bytes - more) {
        return RG_ERROR;
    }

    return RG_OK;
}


/* written to: the newest, the last to go */
static void
rg_mem_touch(rg_store_memory_t *m, rg_mem_entry_t *e)
{
    if (m->newest == e) {
        return;
    }

    if (e->older) {
        e->older->newer = e->newer;
    } else {
        m->oldest = e->newer;
    }
    e->newer->older = e->older;

    e->older = m->newest;
    e->newer = NULL;
    m->newest->newer = e;
    m->newest = e;
}


static rg_mem_entry_t *
rg_mem_create(rg_store_memory_t *m, const rg_str_t *key, rg_uint_t list)
{
    size_t           size;
    rg_mem_entry_t  *e;

    size = RG_MEM_ENTRY_SIZE + key->len;

    if (rg_mem_room(m, size, 1) != RG_OK) {
        return NULL;
    }

    e = calloc(1, sizeof(rg_mem_entry_t));
    if (e == NULL) {
        return NULL;
    }

    e->key = g_bytes_new(key->data, key->len);
    e->list = list;
    e->bytes = size;

    g_hash_table_insert(m->keys, e->key, e);

    e->older = m->newest;
    if (m->newest) {
        m->newest->newer = e;
    } else {
        m->oldest = e;
    }
    m->newest = e;

    m->bytes += size;
    m->store.stats.keys = g_hash_table_size(m->keys);
    m->store.stats.bytes = m->bytes;

    return e;
}


static rg_int_t
rg_mem_set_value(rg_store_memory_t *m, rg_mem_entry_t *e, const char *p,
    size_t len)
{
    char  *copy;

    rg_mem_touch(m, e);
    e->pinned++;

    if (rg_mem_room(m, len, 0) != RG_OK) {
        e->pinned--;
        return RG_ERROR;
    }

    e->pinned--;

    copy = malloc(len + 1);
    if (copy == NULL) {
        return RG_ERROR;
    }

    memcpy(copy, p, len);
    copy[len] = '\0';

    m->bytes -= e->value.len;
    e->bytes -= e->value.len;
    free(e->value.data);

    e->value.data = copy;
    e->value.len = len;
    e->bytes += len;
    m->bytes += len;
    m->store.stats.bytes = m->bytes;

    return RG_OK;
}


static rg_int_t
rg_mem_push(rg_store_memory_t *m, rg_mem_entry_t *e, const char *p,
    size_t len)
{
    rg_uint_t   cap;
    rg_str_t   *items;

    rg_mem_touch(m, e);
    e->pinned++;

    if (rg_mem_room(m, len + sizeof(rg_str_t), 0) != RG_OK) {
        e->pinned--;
        return RG_ERROR;
    }

    e->pinned--;

    if (e->nitems == e->cap) {
        cap = e->cap ? e->cap * 2 : 8;
        items = realloc(e->items, cap * sizeof(rg_str_t));
        if (items == NULL) {
            return RG_ERROR;
        }
        e->items = items;
        e->cap = cap;
    }

    e->items[e->nitems].data = rg_strdup_len(p, len);
    if (e->items[e->nitems].data == NULL) {
        return RG_ERROR;
    }

    e->items[e->nitems].len = len;
    e->nitems++;
    e->bytes += len + sizeof(rg_str_t);
    m->bytes += len + sizeof(rg_str_t);
    m->store.stats.bytes = m->bytes;

    return RG_OK;
}


static void
rg_mem_expire(rg_mem_entry_t *e, rg_msec_t ttl)
{
    e->expires = ttl ? rg_monotonic_msec() + ttl : 0;
}


/* answers ---------------------------------------------------------- */

static void
rg_mem_op_free(rg_store_op_t *op)
{
    rg_uint_t  i;

    free((char *) op->res.value.data);
    free(op->err);

    for (i = 0; op->items && i < op->res.nitems; i++) {
        free(op->items[i].data);
    }

    for (i = 0; op->fields && i < 2 * op->res.nfields; i++) {
        free(op->fields[i].data);
    }

    free(op->items);
    free(op->fields);
    free(op->entries);
    free(op->block);
    free(op);
}


static void
rg_mem_answer_handler(evutil_socket_t fd, short what, void *arg)
{
    uint64_t            gen;
    rg_store_op_t      *op;
    rg_store_memory_t  *m;

    m = arg;
    m->posted = 0;
    gen = m->gen++;

    /* one at a time from the head: a callback may start operations (they
     * answer on the next turn) or cancel pending ones */
    while (m->ops.next != &m->ops && m->ops.next->gen <= gen) {
        op = m->ops.next;
        op->prev->next = op->next;
        op->next->prev = op->prev;

        if (op->cb) {
            op->cb(op->data, &op->res);
        }

        rg_mem_op_free(op);
    }

    if (m->ops.next != &m->ops && !m->posted) {
        m->posted = 1;
        event_active(&m->ev, EV_TIMEOUT, 1);
    }
}


static rg_store_op_t *
rg_mem_post(rg_store_memory_t *m, rg_store_pt cb, void *data)
{
    rg_store_op_t  *op;

    m->store.stats.ops++;

    op = calloc(1, sizeof(rg_store_op_t));
    if (op == NULL) {
        return NULL;
    }

    op->cb = cb;
    op->data = data;
    op->gen = m->gen;
    op->res.rc = RG_OK;
    op->res.issued = rg_monotonic_msec();
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


static void
rg_mem_refuse(rg_store_op_t *op, rg_int_t rc, const char *err)
{
    op->res.rc = rc;
    op->err = strdup(err);
    op->res.err = op->err ? op->err : "out of memory";
}


static void
rg_mem_copy_value(rg_store_op_t *op, const rg_str_t *v)
{
    op->res.value.data = rg_strdup_len(v->data, v->len);
    op->res.value.len = op->res.value.data ? v->len : 0;
}


/* the operations --------------------------------------------------- */

static rg_store_op_t *
rg_mem_get(rg_store_t *st, const rg_str_t *key, rg_store_pt cb, void *data)
{
    rg_store_op_t      *op;
    rg_mem_entry_t     *e;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;
    st->stats.gets++;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    e = rg_mem_find(m, key);
    if (e == NULL || e->list) {
        op->res.rc = RG_DECLINED;
        return op;
    }

    st->stats.hits++;
    rg_mem_copy_value(op, &e->value);

    return op;
}


static rg_store_op_t *
rg_mem_set(rg_store_t *st, const rg_str_t *key, const rg_str_t *value,
    rg_msec_t ttl, rg_uint_t flags, rg_store_pt cb, void *data)
{
    rg_store_op_t      *op;
    rg_mem_entry_t     *e;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;
    st->stats.sets++;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    e = rg_mem_find(m, key);

    if (e && (flags & RG_STORE_NX)) {
        rg_mem_refuse(op, RG_DECLINED, "exists");
        if (!e->list) {
            rg_mem_copy_value(op, &e->value);
        }
        return op;
    }

    if (e) {
        rg_mem_unlink(m, e);          /* a new key: the newest */
    }

    e = rg_mem_create(m, key, 0);
    if (e == NULL || rg_mem_set_value(m, e, value->data, value->len)
                     != RG_OK)
    {
        if (e) {
            rg_mem_unlink(m, e);
        }
        st->stats.errors++;
        rg_mem_refuse(op, RG_ERROR, "the value does not fit in the memory "
                      "store (max_bytes)");
        return op;
    }

    rg_mem_expire(e, ttl);

    return op;
}


static rg_store_op_t *
rg_mem_del(rg_store_t *st, const rg_str_t *key, rg_store_pt cb, void *data)
{
    rg_store_op_t      *op;
    rg_mem_entry_t     *e;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    e = rg_mem_find(m, key);
    op->res.num = e != NULL;

    if (e) {
        rg_mem_unlink(m, e);
    }

    return op;
}


static rg_int_t
rg_mem_number(rg_mem_entry_t *e, int64_t *n)
{
    char  *end;

    if (e->list || e->value.len == 0 || e->value.len > 20) {
        return RG_ERROR;
    }

    errno = 0;
    *n = strtoll(e->value.data, &end, 10);

    return errno || *end ? RG_ERROR : RG_OK;
}


static rg_int_t
rg_mem_set_number(rg_store_memory_t *m, rg_mem_entry_t *e, int64_t n)
{
    char  buf[24];

    snprintf(buf, sizeof(buf), "%lld", (long long) n);

    return rg_mem_set_value(m, e, buf, strlen(buf));
}


static rg_store_op_t *
rg_mem_incr(rg_store_t *st, const rg_str_t *key, int64_t by, rg_msec_t ttl,
    rg_store_pt cb, void *data)
{
    int64_t             n;
    rg_store_op_t      *op;
    rg_mem_entry_t     *e;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    n = 0;
    e = rg_mem_find(m, key);

    if (e && rg_mem_number(e, &n) != RG_OK) {
        rg_mem_refuse(op, RG_ERROR, "not a number");
        return op;
    }

    if (e == NULL) {
        e = rg_mem_create(m, key, 0);
        if (e) {
            rg_mem_expire(e, ttl);
        }
    }

    if (e == NULL || rg_mem_set_number(m, e, n + by) != RG_OK) {
        rg_mem_refuse(op, RG_ERROR, "the memory store is full");
        return op;
    }

    op->res.num = n + by;

    return op;
}


static rg_mem_entry_t *
rg_mem_session(rg_store_memory_t *m, const rg_str_t *id, const char *name,
    size_t len)
{
    char      buf[512];
    rg_str_t  key;

    key.len = rg_store_session_key(buf, sizeof(buf), id, name, len);
    key.data = buf;

    return key.len ? rg_mem_find(m, &key) : NULL;
}


static rg_mem_entry_t *
rg_mem_session_create(rg_store_memory_t *m, const rg_str_t *id,
    const char *name, size_t len, rg_uint_t list)
{
    char      buf[512];
    rg_str_t  key;

    key.len = rg_store_session_key(buf, sizeof(buf), id, name, len);
    key.data = buf;

    return key.len ? rg_mem_create(m, &key, list) : NULL;
}


/* the lease token that holds the session now, 0 when none */
static int64_t
rg_mem_lease_token(rg_store_memory_t *m, const rg_str_t *id)
{
    int64_t          t;
    rg_mem_entry_t  *e;

    e = rg_mem_session(m, id, "lease", 5);
    if (e == NULL || e->list) {
        return 0;
    }

    t = strtoll(e->value.data, NULL, 10);

    return t;
}


static rg_store_op_t *
rg_mem_checkpoint(rg_store_t *st, const rg_store_checkpoint_t *cp,
    rg_store_pt cb, void *data)
{
    char                buf[96];
    size_t              need;
    rg_int_t            rc;
    rg_uint_t           i, j, have, before;
    rg_store_op_t      *op;
    rg_mem_entry_t     *msgs, *meta, *kept, *e;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    if (cp->lease && rg_mem_lease_token(m, &cp->id) != cp->lease) {
        rg_mem_refuse(op, RG_DECLINED, "fenced: the session's lease is "
                      "held by another worker");
        return op;
    }

    msgs = rg_mem_session(m, &cp->id, "msgs", 4);
    have = msgs ? msgs->nitems : 0;

    if (have != cp->base && have != cp->base + cp->nmsgs) {
        snprintf(buf, sizeof(buf), "diverged: the store holds %lu "
                 "messages, not %lu", (unsigned long) have,
                 (unsigned long) cp->base);
        rg_mem_refuse(op, RG_DECLINED, buf);
        return op;
    }

    /* both keys first, held while room is made for the rest, so that the
     * step is whole or not at all */
    if (msgs == NULL) {
        msgs = rg_mem_session_create(m, &cp->id, "msgs", 4, 1);
        if (msgs == NULL) {
            goto full;
        }
    }

    msgs->pinned++;

    meta = rg_mem_session(m, &cp->id, "meta", 4);
    if (meta == NULL) {
        meta = rg_mem_session_create(m, &cp->id, "meta", 4, 1);
    }

    if (meta == NULL) {
        msgs->pinned--;
        goto full;
    }

    meta->pinned++;

    need = 0;
    if (have == cp->base) {
        for (i = 0; i < cp->nmsgs; i++) {
            need += cp->msgs[i].len + sizeof(rg_str_t);
        }
    }

    for (i = 0; i < 2 * cp->nfields; i++) {
        need += cp->fields[i].len + sizeof(rg_str_t);
    }

    rc = rg_mem_room(m, need, 0);
    before = msgs->nitems;

    if (rc == RG_OK && have == cp->base) {
        for (i = 0; rc == RG_OK && i < cp->nmsgs; i++) {
            rc = rg_mem_push(m, msgs, cp->msgs[i].data, cp->msgs[i].len);
        }
    }

    /* name, value pairs: a name already there takes the new value */
    for (i = 0; rc == RG_OK && i < cp->nfields; i++) {
        const rg_str_t  *name = &cp->fields[2 * i];
        const rg_str_t  *value = &cp->fields[2 * i + 1];

        for (j = 0; j + 1 < meta->nitems; j += 2) {
            if (rg_str_cmp(&meta->items[j], name) == 0) {
                break;
            }
        }

        if (j + 1 < meta->nitems) {
            char  *v = rg_strdup_len(value->data, value->len);

            if (v == NULL) {
                rc = RG_ERROR;
                break;
            }

            m->bytes += value->len;
            m->bytes -= meta->items[j + 1].len;
            meta->bytes += value->len;
            meta->bytes -= meta->items[j + 1].len;
            free(meta->items[j + 1].data);
            meta->items[j + 1].data = v;
            meta->items[j + 1].len = value->len;
            continue;
        }

        rc = rg_mem_push(m, meta, name->data, name->len);
        if (rc == RG_OK) {
            rc = rg_mem_push(m, meta, value->data, value->len);
        }
    }

    if (rc != RG_OK) {
        /* out of memory: the messages go back to what they were */
        while (msgs->nitems > before) {
            msgs->nitems--;
            m->bytes -= msgs->items[msgs->nitems].len + sizeof(rg_str_t);
            msgs->bytes -= msgs->items[msgs->nitems].len + sizeof(rg_str_t);
            free(msgs->items[msgs->nitems].data);
        }
    }

    rg_mem_expire(meta, cp->ttl);
    rg_mem_expire(msgs, cp->ttl);
    meta->pinned--;
    msgs->pinned--;

    /* the values kept as long as the session */
    kept = rg_mem_session(m, &cp->id, "kept", 4);

    for (i = 0; kept && kept->list && i < kept->nitems; i++) {
        e = rg_mem_session(m, &cp->id, kept->items[i].data,
                           kept->items[i].len);
        if (e) {
            rg_mem_expire(e, cp->ttl);
        }
    }

    if (kept) {
        rg_mem_expire(kept, cp->ttl);
    }

    if (rc == RG_OK) {
        if (cp->release && cp->lease) {
            e = rg_mem_session(m, &cp->id, "lease", 5);
            if (e && !e->list && strtoll(e->value.data, NULL, 10) == cp->lease)
            {
                rg_mem_unlink(m, e);
            }
        }

        return op;
    }

full:

    st->stats.errors++;
    rg_mem_refuse(op, RG_ERROR, "the memory store is full (max_bytes)");

    return op;
}


static rg_int_t
rg_mem_copy_list(rg_mem_entry_t *e, rg_str_t **out)
{
    rg_uint_t   i;
    rg_str_t   *a;

    if (e == NULL || e->nitems == 0) {
        *out = NULL;
        return RG_OK;
    }

    a = calloc(e->nitems, sizeof(rg_str_t));
    if (a == NULL) {
        return RG_ERROR;
    }

    for (i = 0; i < e->nitems; i++) {
        a[i].data = rg_strdup_len(e->items[i].data, e->items[i].len);
        if (a[i].data == NULL) {
            while (i-- > 0) {
                free(a[i].data);
            }
            free(a);
            return RG_ERROR;
        }
        a[i].len = e->items[i].len;
    }

    *out = a;

    return RG_OK;
}


static rg_store_op_t *
rg_mem_load(rg_store_t *st, const rg_str_t *id, rg_store_pt cb, void *data)
{
    rg_store_op_t      *op;
    rg_mem_entry_t     *meta, *msgs;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    meta = rg_mem_session(m, id, "meta", 4);
    if (meta == NULL) {
        op->res.rc = RG_DECLINED;
        return op;
    }

    msgs = rg_mem_session(m, id, "msgs", 4);

    if (rg_mem_copy_list(meta, &op->fields) != RG_OK) {
        rg_mem_refuse(op, RG_ERROR, "out of memory");
        return op;
    }

    op->res.fields = op->fields;
    op->res.nfields = meta->nitems / 2;

    if (rg_mem_copy_list(msgs, &op->items) != RG_OK) {
        rg_mem_refuse(op, RG_ERROR, "out of memory");
        return op;
    }

    op->res.items = op->items;
    op->res.nitems = msgs ? msgs->nitems : 0;

    return op;
}


/* a value kept as long as its session: its name in "{id}:kept", whose
 * names each checkpoint renews */
static void
rg_mem_keep(rg_store_memory_t *m, const rg_store_put_t *p, rg_store_op_t *op)
{
    rg_uint_t        i;
    rg_mem_entry_t  *kept;

    kept = rg_mem_session(m, &p->id, "kept", 4);
    if (kept == NULL) {
        kept = rg_mem_session_create(m, &p->id, "kept", 4, 1);
    }

    if (kept == NULL || !kept->list) {
        goto full;
    }

    for (i = 0; i < kept->nitems; i++) {
        if (rg_str_cmp(&kept->items[i], &p->name) == 0) {
            break;
        }
    }

    kept->pinned++;

    if (i == kept->nitems
        && (rg_mem_room(m, p->name.len + sizeof(rg_str_t), 0) != RG_OK
            || rg_mem_push(m, kept, p->name.data, p->name.len) != RG_OK))
    {
        kept->pinned--;
        goto full;
    }

    kept->pinned--;
    rg_mem_expire(kept, p->ttl);

    return;

full:

    m->store.stats.errors++;
    rg_mem_refuse(op, RG_ERROR, "the memory store is full (max_bytes)");
}


static rg_store_op_t *
rg_mem_put(rg_store_t *st, const rg_store_put_t *p, rg_store_pt cb,
    void *data)
{
    rg_store_op_t      *op;
    rg_mem_entry_t     *e;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    if (p->lease && rg_mem_lease_token(m, &p->id) != p->lease) {
        rg_mem_refuse(op, RG_DECLINED, "fenced: the session's lease is "
                      "held by another worker");
        return op;
    }

    e = rg_mem_session(m, &p->id, p->name.data, p->name.len);

    if (e && (p->flags & RG_STORE_NX)) {
        rg_mem_refuse(op, RG_DECLINED, "exists");
        if (!e->list) {
            rg_mem_copy_value(op, &e->value);
        }
        return op;
    }

    if (e == NULL) {
        e = rg_mem_session_create(m, &p->id, p->name.data, p->name.len, 0);
    }

    if (e == NULL || rg_mem_set_value(m, e, p->value.data, p->value.len)
                     != RG_OK)
    {
        st->stats.errors++;
        rg_mem_refuse(op, RG_ERROR, "the memory store is full (max_bytes)");
        return op;
    }

    rg_mem_expire(e, p->ttl);

    if (p->flags & RG_STORE_KEEP) {
        rg_mem_keep(m, p, op);
    }

    return op;
}


static rg_store_op_t *
rg_mem_lease(rg_store_t *st, const rg_str_t *id, const rg_str_t *holder,
    int64_t token, rg_msec_t ttl, rg_store_pt cb, void *data)
{
    char                buf[400];
    int64_t             now, fence;
    rg_store_op_t      *op;
    rg_mem_entry_t     *e, *f;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    e = rg_mem_session(m, id, "lease", 5);
    now = e ? strtoll(e->value.data, NULL, 10) : 0;

    if (token) {
        /* a renewal: while it is still ours, or ran out with nobody
         * taking another (the fence still at its token) */
        if (e == NULL) {
            f = rg_mem_session(m, id, "fence", 5);
            fence = 0;

            if (f && f->value.len && rg_mem_number(f, &fence) == RG_OK
                && fence == token)
            {
                e = rg_mem_session_create(m, id, "lease", 5, 0);
                snprintf(buf, sizeof(buf), "%lld %.*s", (long long) token,
                         (int) rg_min(holder->len, 300), holder->data);

                if (e == NULL
                    || rg_mem_set_value(m, e, buf, strlen(buf)) != RG_OK)
                {
                    rg_mem_refuse(op, RG_ERROR, "the memory store is full");
                    return op;
                }

                rg_mem_expire(e, ttl);
                op->res.num = token;
                return op;
            }
        }

        if (now != token) {
            rg_mem_refuse(op, RG_DECLINED, "lost");
            return op;
        }
        rg_mem_expire(e, ttl);
        op->res.num = token;
        return op;
    }

    if (e) {
        const char  *sp = memchr(e->value.data, ' ', e->value.len);
        rg_str_t     h;

        rg_mem_refuse(op, RG_DECLINED, "held");
        h.data = sp ? (char *) sp + 1 : (char *) "";
        h.len = sp ? e->value.len - (sp + 1 - e->value.data) : 0;
        rg_mem_copy_value(op, &h);
        return op;
    }

    /* the fencing counter lives as long as the session's keys do */
    f = rg_mem_session(m, id, "fence", 5);
    if (f == NULL) {
        f = rg_mem_session_create(m, id, "fence", 5, 0);
    }

    fence = 0;
    if (f == NULL || (f->value.len && rg_mem_number(f, &fence) != RG_OK)
        || rg_mem_set_number(m, f, fence + 1) != RG_OK)
    {
        rg_mem_refuse(op, RG_ERROR, "the memory store is full");
        return op;
    }

    rg_mem_expire(f, 7 * 24 * 3600 * 1000ULL);

    e = rg_mem_session_create(m, id, "lease", 5, 0);
    snprintf(buf, sizeof(buf), "%lld %.*s", (long long) fence + 1,
             (int) rg_min(holder->len, 300), holder->data);

    if (e == NULL || rg_mem_set_value(m, e, buf, strlen(buf)) != RG_OK) {
        rg_mem_refuse(op, RG_ERROR, "the memory store is full");
        return op;
    }

    rg_mem_expire(e, ttl);
    op->res.num = fence + 1;

    return op;
}


static rg_store_op_t *
rg_mem_release(rg_store_t *st, const rg_str_t *id, int64_t token,
    rg_store_pt cb, void *data)
{
    rg_store_op_t      *op;
    rg_mem_entry_t     *e;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    e = rg_mem_session(m, id, "lease", 5);
    if (e && strtoll(e->value.data, NULL, 10) == token) {
        rg_mem_unlink(m, e);
        op->res.num = 1;
    } else {
        op->res.rc = RG_DECLINED;
    }

    return op;
}


/* a bucket as text: "tokens at-msec"; a cool-down: "until-msec" */
static rg_store_op_t *
rg_mem_take(rg_store_t *st, const rg_str_t *cool, const rg_store_bucket_t *b,
    rg_uint_t nb, rg_store_pt cb, void *data)
{
    char                key[320], val[64];
    double              tokens, wait, w;
    rg_msec_t           now, at;
    rg_uint_t           i;
    rg_str_t            k;
    rg_store_op_t      *op;
    rg_mem_entry_t     *e;
    rg_store_memory_t  *m;
    double              left[8];
    rg_mem_entry_t     *ents[8];

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    if (nb > rg_nelems(left)) {
        rg_mem_refuse(op, RG_ERROR, "too many buckets");
        return op;
    }

    now = rg_wall_msec();
    wait = 0;

    /* the cool-down holds every bucket taken under it */
    k.len = snprintf(key, sizeof(key), "cd:{%.*s}", (int) cool->len,
                     cool->data);
    k.data = key;
    e = rg_mem_find(m, &k);
    if (e && !e->list) {
        at = strtoull(e->value.data, NULL, 10);
        if (at > now) {
            wait = (double) (at - now);
        }
    }

    for (i = 0; i < nb; i++) {
        k.len = snprintf(key, sizeof(key), "rl:{%.*s}:%.*s:%lu",
                         (int) cool->len, cool->data, (int) b[i].name.len,
                         b[i].name.data, (unsigned long) i);
        e = rg_mem_find(m, &k);
        if (e == NULL) {
            e = rg_mem_create(m, &k, 0);
            tokens = b[i].capacity;
            at = now;
        } else {
            unsigned long long  a;

            tokens = b[i].capacity;
            a = now;
            sscanf(e->value.data ? e->value.data : "", "%lf %llu", &tokens,
                   &a);
            at = a;
        }

        if (e == NULL) {
            while (i-- > 0) {
                ents[i]->pinned--;
            }
            rg_mem_refuse(op, RG_ERROR, "the memory store is full");
            return op;
        }

        if (now > at) {
            tokens = rg_min(b[i].capacity,
                            tokens + (double) (now - at) * b[i].rate / 60000);
        }

        left[i] = tokens;
        ents[i] = e;
        e->pinned++;

        if (tokens < b[i].cost && b[i].rate > 0 && !b[i].force) {
            w = (b[i].cost - tokens) * 60000 / b[i].rate;
            wait = rg_max(wait, w);
        }
    }

    /* all or nothing: a refused take leaves every bucket as it was, but
     * refilled to now */
    for (i = 0; i < nb; i++) {
        if (wait == 0 || b[i].force) {
            left[i] = rg_min(b[i].capacity, left[i] - b[i].cost);
        }
        snprintf(val, sizeof(val), "%.6f %llu", left[i],
                 (unsigned long long) now);
        rg_mem_set_value(m, ents[i], val, strlen(val));
        rg_mem_expire(ents[i], 120000);
        ents[i]->pinned--;
    }

    op->res.num = (int64_t) ceil(wait);

    return op;
}


static rg_store_op_t *
rg_mem_cooldown(rg_store_t *st, const rg_str_t *cool, rg_msec_t ms,
    rg_store_pt cb, void *data)
{
    char                key[320], val[32];
    rg_str_t            k;
    rg_msec_t           until;
    rg_store_op_t      *op;
    rg_mem_entry_t     *e;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    k.len = snprintf(key, sizeof(key), "cd:{%.*s}", (int) cool->len,
                     cool->data);
    k.data = key;

    until = rg_wall_msec() + ms;

    e = rg_mem_find(m, &k);
    if (e && !e->list && strtoull(e->value.data, NULL, 10) >= until) {
        return op;                       /* a longer one holds */
    }

    if (e == NULL) {
        e = rg_mem_create(m, &k, 0);
    }

    snprintf(val, sizeof(val), "%llu", (unsigned long long) until);

    if (e == NULL || rg_mem_set_value(m, e, val, strlen(val)) != RG_OK) {
        rg_mem_refuse(op, RG_ERROR, "the memory store is full");
        return op;
    }

    rg_mem_expire(e, ms);

    return op;
}


/* one process holds every slot: a count, "n"; the holders are not
 * needed, nobody else can die holding one */
static rg_store_op_t *
rg_mem_slot(rg_store_t *st, const rg_str_t *cool, const rg_str_t *name,
    const rg_str_t *holder, rg_uint_t max, rg_msec_t ttl, rg_store_pt cb,
    void *data)
{
    char                key[320], val[32];
    rg_str_t            k;
    rg_msec_t           now, at;
    unsigned long       n;
    rg_store_op_t      *op;
    rg_mem_entry_t     *e;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    now = rg_wall_msec();

    if (max) {
        k.len = snprintf(key, sizeof(key), "cd:{%.*s}", (int) cool->len,
                         cool->data);
        k.data = key;
        e = rg_mem_find(m, &k);
        if (e && !e->list) {
            at = strtoull(e->value.data, NULL, 10);
            if (at > now) {
                op->res.num = (int64_t) (at - now);
                return op;
            }
        }
    }

    k.len = snprintf(key, sizeof(key), "sl:{%.*s}:%.*s", (int) cool->len,
                     cool->data, (int) name->len, name->data);
    k.data = key;

    e = rg_mem_find(m, &k);
    n = e && !e->list && e->value.data ? strtoul(e->value.data, NULL, 10)
                                       : 0;

    if (max == 0) {
        n = n ? n - 1 : 0;
    } else if (n >= max) {
        op->res.num = 20;
        return op;
    } else {
        n++;
    }

    if (e == NULL) {
        e = rg_mem_create(m, &k, 0);
    }

    snprintf(val, sizeof(val), "%lu", n);

    if (e == NULL || rg_mem_set_value(m, e, val, strlen(val)) != RG_OK) {
        rg_mem_refuse(op, RG_ERROR, "the memory store is full");
        return op;
    }

    rg_mem_expire(e, ttl ? ttl : 1);

    return op;
}


/* events ------------------------------------------------------------
 *
 * A session's events are a list "{id}:events" whose items are
 * "ID\0TYPE\0DATA", ids "ms-seq" as Redis gives them: the wall clock's
 * ms, and a sequence within one ms (or after the clock went back). */

/* the id, type and data of an item */
static void
rg_mem_event_split(const rg_str_t *item, rg_store_entry_t *en)
{
    char  *p, *end, *nul;

    p = item->data;
    end = item->data + item->len;

    nul = memchr(p, '\0', end - p);
    en->id.data = p;
    en->id.len = nul ? (size_t) (nul - p) : item->len;
    p = nul ? nul + 1 : end;

    nul = memchr(p, '\0', end - p);
    en->type.data = p;
    en->type.len = nul ? (size_t) (nul - p) : (size_t) (end - p);
    p = nul ? nul + 1 : end;

    en->data.data = p;
    en->data.len = end - p;
}


static int
rg_mem_event_cmp(uint64_t ams, uint64_t aseq, uint64_t bms, uint64_t bseq)
{
    if (ams != bms) {
        return ams < bms ? -1 : 1;
    }

    return aseq < bseq ? -1 : aseq > bseq;
}


/* the item's id; 0-0 when it has none (never: ids are written here) */
static void
rg_mem_event_id(const rg_str_t *item, uint64_t *ms, uint64_t *seq)
{
    rg_store_entry_t  en;

    rg_mem_event_split(item, &en);

    if (rg_store_event_id(en.id.data, en.id.len, ms, seq) != RG_OK) {
        *ms = 0;
        *seq = 0;
    }
}


/* the lease of a session admits a write: token holds it, or it expired
 * while nobody took another (the fence still at token), as in Redis */
static rg_uint_t
rg_mem_lease_admits(rg_store_memory_t *m, const rg_str_t *id, int64_t token)
{
    int64_t          fence;
    rg_mem_entry_t  *e, *f;

    if (token == 0) {
        return 1;
    }

    e = rg_mem_session(m, id, "lease", 5);
    if (e) {
        return rg_mem_lease_token(m, id) == token;
    }

    f = rg_mem_session(m, id, "fence", 5);
    fence = 0;

    return f && rg_mem_number(f, &fence) == RG_OK && fence == token;
}


static rg_store_op_t *
rg_mem_append(rg_store_t *st, const rg_store_event_t *ev, rg_store_pt cb,
    void *data)
{
    char                idbuf[48], *item;
    size_t              idlen, len, drop;
    uint64_t            ms, seq, lms, lseq;
    rg_uint_t           i, n;
    rg_str_t            v;
    rg_store_op_t      *op;
    rg_mem_entry_t     *e;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    if (!rg_mem_lease_admits(m, &ev->id, ev->lease)) {
        rg_mem_refuse(op, RG_DECLINED, "fenced: the session's lease is "
                      "held by another worker");
        return op;
    }

    e = rg_mem_session(m, &ev->id, "events", 6);

    if (e && !e->list) {
        rg_mem_refuse(op, RG_ERROR, "the events key holds a value");
        return op;
    }

    if (e == NULL) {
        e = rg_mem_session_create(m, &ev->id, "events", 6, 1);
        if (e == NULL) {
            goto full;
        }
    }

    rg_mem_expire(e, ev->ttl);

    /* after the last one, whatever the clock says */
    ms = rg_wall_msec();
    seq = 0;

    if (e->nitems) {
        rg_mem_event_id(&e->items[e->nitems - 1], &lms, &lseq);
        if (ms <= lms) {
            ms = lms;
            seq = lseq + 1;
        }
    }

    idlen = snprintf(idbuf, sizeof(idbuf), "%llu-%llu",
                     (unsigned long long) ms, (unsigned long long) seq);

    len = idlen + 1 + ev->type.len + 1 + ev->data.len;
    item = malloc(len);
    if (item == NULL) {
        goto full;
    }

    memcpy(item, idbuf, idlen + 1);
    memcpy(item + idlen + 1, ev->type.data, ev->type.len);
    item[idlen + 1 + ev->type.len] = '\0';
    memcpy(item + idlen + 2 + ev->type.len, ev->data.data, ev->data.len);

    e->pinned++;

    if (rg_mem_push(m, e, item, len) != RG_OK) {
        e->pinned--;
        free(item);
        goto full;
    }

    e->pinned--;
    free(item);

    /* at most max: the oldest go */
    if (ev->max && e->nitems > ev->max) {
        n = e->nitems - ev->max;
        drop = 0;

        for (i = 0; i < n; i++) {
            drop += e->items[i].len + sizeof(rg_str_t);
            free(e->items[i].data);
        }

        memmove(e->items, e->items + n, (e->nitems - n) * sizeof(rg_str_t));
        e->nitems -= n;
        e->bytes -= drop;
        m->bytes -= drop;
        m->store.stats.bytes = m->bytes;
    }

    v.data = idbuf;
    v.len = idlen;
    rg_mem_copy_value(op, &v);

    return op;

full:

    st->stats.errors++;
    rg_mem_refuse(op, RG_ERROR, "the memory store is full (max_bytes)");

    return op;
}


static rg_store_op_t *
rg_mem_range(rg_store_t *st, const rg_str_t *id, const char *after,
    rg_uint_t count, rg_store_pt cb, void *data)
{
    char               *p;
    size_t              total;
    uint64_t            ams, aseq, ms, seq;
    rg_uint_t           lo, hi, mid, i, n;
    rg_store_op_t      *op;
    rg_mem_entry_t     *e;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;
    ams = 0;
    aseq = 0;

    if (after && after[0]
        && rg_store_event_id(after, strlen(after), &ams, &aseq) != RG_OK)
    {
        return NULL;
    }

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    e = rg_mem_session(m, id, "events", 6);
    if (e == NULL || !e->list || e->nitems == 0 || count == 0) {
        return op;
    }

    /* the first item after the id: ids grow along the list */
    lo = 0;
    hi = e->nitems;

    if (after && after[0]) {
        while (lo < hi) {
            mid = lo + (hi - lo) / 2;
            rg_mem_event_id(&e->items[mid], &ms, &seq);

            if (rg_mem_event_cmp(ms, seq, ams, aseq) <= 0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
    }

    n = rg_min(count, e->nitems - lo);
    if (n == 0) {
        return op;
    }

    total = 0;
    for (i = 0; i < n; i++) {
        total += e->items[lo + i].len;
    }

    op->entries = calloc(n, sizeof(rg_store_entry_t));
    op->block = malloc(total + 1);

    if (op->entries == NULL || op->block == NULL) {
        rg_mem_refuse(op, RG_ERROR, "out of memory");
        return op;
    }

    p = op->block;

    for (i = 0; i < n; i++) {
        rg_str_t  copy;

        copy.data = p;
        copy.len = e->items[lo + i].len;
        memcpy(p, e->items[lo + i].data, copy.len);
        p += copy.len;

        rg_mem_event_split(&copy, &op->entries[i]);
    }

    op->res.entries = op->entries;
    op->res.nentries = n;

    return op;
}


static void
rg_mem_cancel(rg_store_t *st, rg_store_op_t *op)
{
    if (op == NULL) {
        return;
    }

    op->prev->next = op->next;
    op->next->prev = op->prev;
    rg_mem_op_free(op);
}


static void
rg_mem_destroy(rg_store_t *st)
{
    rg_store_op_t      *op;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    while (m->ops.next != &m->ops) {
        op = m->ops.next;
        op->prev->next = op->next;
        op->next->prev = op->prev;

        if (op->cb) {
            rg_store_res_t  res;

            memset(&res, 0, sizeof(res));
            res.rc = RG_ERROR;
            res.err = "the store is shutting down";
            op->cb(op->data, &res);
        }

        rg_mem_op_free(op);
    }

    event_del(&m->ev);
    g_hash_table_destroy(m->keys);
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

    m->keys = g_hash_table_new_full(g_bytes_hash, g_bytes_equal, NULL,
                                    rg_mem_entry_free);
    if (m->keys == NULL) {
        free(m);
        return NULL;
    }

    m->base = base;
    m->max_keys = max_keys ? max_keys : 100000;
    m->max_bytes = max_bytes ? max_bytes : 64 * 1024 * 1024;
    m->ops.next = &m->ops;
    m->ops.prev = &m->ops;

    event_assign(&m->ev, base, -1, 0, rg_mem_answer_handler, m);

    m->store.name = "memory";
    m->store.durable = 0;
    m->store.get = rg_mem_get;
    m->store.set = rg_mem_set;
    m->store.del = rg_mem_del;
    m->store.incr = rg_mem_incr;
    m->store.checkpoint = rg_mem_checkpoint;
    m->store.load = rg_mem_load;
    m->store.put = rg_mem_put;
    m->store.lease = rg_mem_lease;
    m->store.release = rg_mem_release;
    m->store.take = rg_mem_take;
    m->store.cooldown = rg_mem_cooldown;
    m->store.slot = rg_mem_slot;
    m->store.append = rg_mem_append;
    m->store.range = rg_mem_range;
    m->store.cancel = rg_mem_cancel;
    m->store.destroy = rg_mem_destroy;

    return &m->store;
}


size_t
rg_store_session_key(char *buf, size_t size, const rg_str_t *id,
    const char *name, size_t len)
{
    int  n;

    n = snprintf(buf, size, "{%.*s}:%.*s", (int) id->len, id->data,
                 (int) len, name);

    return n > 0 && (size_t) n < size ? (size_t) n : 0;
}


rg_int_t
rg_store_event_id(const char *s, size_t len, uint64_t *ms, uint64_t *seq)
{
    size_t     i, k;
    uint64_t   v[2], d;

    v[0] = 0;
    v[1] = 0;
    k = 0;

    for (i = 0; i < len; i++) {
        if (s[i] == '-' && k == 0 && i > 0) {
            k = 1;
            if (i + 1 == len) {
                return RG_ERROR;
            }
            continue;
        }

        if (s[i] < '0' || s[i] > '9') {
            return RG_ERROR;
        }

        d = (uint64_t) (s[i] - '0');

        if (v[k] > (UINT64_MAX - d) / 10) {
            return RG_ERROR;
        }

        v[k] = v[k] * 10 + d;
    }

    if (k == 0) {
        return RG_ERROR;
    }

    *ms = v[0];
    *seq = v[1];

    return RG_OK;
}
