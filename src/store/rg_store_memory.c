/* rg_store_memory.c: the embedded store: the store interface (rg_store.h)
 * kept in this process, for `run`, `batch` and a single worker. Keys live
 * in a GLib hash table with per-key expiry; a key holds a value or a list
 * (a session's messages, its meta as name/value pairs). Bounded in keys
 * and in bytes: past either, the oldest keys go. Every answer is a copy
 * posted to the next loop turn, so callers see what they see with Redis:
 * never a callback inside the call, and a callback may start new
 * operations. Not durable: it ends with the process. This file owns the
 * keys, the answers and the operations on keys of their own (get, set,
 * del, incr, the shared limits); those on a session's keys are
 * rg_store_memory_session.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>
#include <rg_store_memory_int.h>
#include <math.h>


/* keys -------------------------------------------------------------- */

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


void
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


rg_mem_entry_t *
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
rg_int_t
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


/* room for more bytes in e, written to (the newest), which the room
 * made never takes */
static rg_int_t
rg_mem_reserve(rg_store_memory_t *m, rg_mem_entry_t *e, size_t more)
{
    rg_int_t  rc;

    rg_mem_touch(m, e);

    e->pinned++;
    rc = rg_mem_room(m, more, 0);
    e->pinned--;

    return rc;
}


rg_mem_entry_t *
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


rg_int_t
rg_mem_set_value(rg_store_memory_t *m, rg_mem_entry_t *e, const char *p,
    size_t len)
{
    char  *copy;

    if (rg_mem_reserve(m, e, len) != RG_OK) {
        return RG_ERROR;
    }

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


rg_int_t
rg_mem_push(rg_store_memory_t *m, rg_mem_entry_t *e, const char *p,
    size_t len)
{
    rg_uint_t   cap;
    rg_str_t   *items;

    if (rg_mem_reserve(m, e, len + sizeof(rg_str_t)) != RG_OK) {
        return RG_ERROR;
    }

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


/* the n items of a list from first on go */
void
rg_mem_trim(rg_store_memory_t *m, rg_mem_entry_t *e, rg_uint_t first,
    rg_uint_t n)
{
    size_t     drop;
    rg_uint_t  i;

    drop = 0;

    for (i = first; i < first + n; i++) {
        drop += e->items[i].len + sizeof(rg_str_t);
        free(e->items[i].data);
    }

    memmove(e->items + first, e->items + first + n,
            (e->nitems - first - n) * sizeof(rg_str_t));
    e->nitems -= n;
    e->bytes -= drop;
    m->bytes -= drop;
    m->store.stats.bytes = m->bytes;
}


void
rg_mem_expire(rg_mem_entry_t *e, rg_msec_t ttl)
{
    e->expires = ttl ? rg_monotonic_msec() + ttl : 0;
}


rg_int_t
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


rg_int_t
rg_mem_set_number(rg_store_memory_t *m, rg_mem_entry_t *e, int64_t n)
{
    char  buf[24];

    snprintf(buf, sizeof(buf), "%lld", (long long) n);

    return rg_mem_set_value(m, e, buf, strlen(buf));
}


/* answers ---------------------------------------------------------- */

static void
rg_mem_op_unlink(rg_store_op_t *op)
{
    op->prev->next = op->next;
    op->next->prev = op->prev;
}


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
        rg_mem_op_unlink(op);

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


rg_store_op_t *
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


void
rg_mem_refuse(rg_store_op_t *op, rg_int_t rc, const char *err)
{
    op->res.rc = rc;
    op->err = strdup(err);
    op->res.err = op->err ? op->err : "out of memory";
}


void
rg_mem_copy_value(rg_store_op_t *op, const rg_str_t *v)
{
    op->res.value.data = rg_strdup_len(v->data, v->len);
    op->res.value.len = op->res.value.data ? v->len : 0;
}


/* a write that found no room: counted, and refused */
void
rg_mem_full(rg_store_memory_t *m, rg_store_op_t *op)
{
    m->store.stats.errors++;
    rg_mem_refuse(op, RG_ERROR, RG_MEM_FULL " (max_bytes)");
}


/* a write "only if not there" (RG_STORE_NX) that found e: refused with
 * what e holds, as SET … NX GET answers */
void
rg_mem_exists(rg_store_op_t *op, rg_mem_entry_t *e)
{
    rg_mem_refuse(op, RG_DECLINED, "exists");

    if (!e->list) {
        rg_mem_copy_value(op, &e->value);
    }
}


/* the plain operations --------------------------------------------- */

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
        rg_mem_exists(op, e);
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
        rg_mem_refuse(op, RG_ERROR, RG_MEM_FULL);
        return op;
    }

    op->res.num = n + by;

    return op;
}


static void
rg_mem_cancel(rg_store_t *st, rg_store_op_t *op)
{
    if (op == NULL) {
        return;
    }

    rg_mem_op_unlink(op);
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
        rg_mem_op_unlink(op);

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


/* shared limits -------------------------------------------------------
 *
 * For the one process that holds them all: token buckets
 * ("rl:{cool}:NAME:I", "tokens at-msec"), cool-downs ("cd:{cool}",
 * "until-msec") and slots ("sl:{cool}:NAME", a count), on this machine's
 * wall clock. */

/* the cool-down of cool: its key in k (its text in buf), its end in
 * until (0: none); the key when it is there */
static rg_mem_entry_t *
rg_mem_cool(rg_store_memory_t *m, const rg_str_t *cool, char *buf,
    size_t size, rg_str_t *k, rg_msec_t *until)
{
    rg_mem_entry_t  *e;

    k->len = snprintf(buf, size, "cd:{%.*s}", (int) cool->len, cool->data);
    k->data = buf;

    e = rg_mem_find(m, k);
    *until = e && !e->list && e->value.data
             ? strtoull(e->value.data, NULL, 10) : 0;

    return e;
}


/* val written to e, or to a key made at k when e is NULL, for ttl ms */
static rg_int_t
rg_mem_write(rg_store_memory_t *m, rg_mem_entry_t *e, const rg_str_t *k,
    const char *val, rg_msec_t ttl)
{
    if (e == NULL) {
        e = rg_mem_create(m, k, 0);
    }

    if (e == NULL || rg_mem_set_value(m, e, val, strlen(val)) != RG_OK) {
        return RG_ERROR;
    }

    rg_mem_expire(e, ttl);

    return RG_OK;
}


/* a bucket as text: "tokens at-msec"; a cool-down: "until-msec" */
rg_store_op_t *
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
    rg_mem_cool(m, cool, key, sizeof(key), &k, &at);
    if (at > now) {
        wait = (double) (at - now);
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
            rg_mem_refuse(op, RG_ERROR, RG_MEM_FULL);
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


rg_store_op_t *
rg_mem_cooldown(rg_store_t *st, const rg_str_t *cool, rg_msec_t ms,
    rg_store_pt cb, void *data)
{
    char                key[320], val[32];
    rg_str_t            k;
    rg_msec_t           until, at;
    rg_store_op_t      *op;
    rg_mem_entry_t     *e;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    until = rg_wall_msec() + ms;

    e = rg_mem_cool(m, cool, key, sizeof(key), &k, &at);
    if (at >= until) {
        return op;                       /* a longer one holds */
    }

    snprintf(val, sizeof(val), "%llu", (unsigned long long) until);

    if (rg_mem_write(m, e, &k, val, ms) != RG_OK) {
        rg_mem_refuse(op, RG_ERROR, RG_MEM_FULL);
    }

    return op;
}


/* one process holds every slot: a count, "n"; the holders are not
 * needed, nobody else can die holding one */
rg_store_op_t *
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
        rg_mem_cool(m, cool, key, sizeof(key), &k, &at);
        if (at > now) {
            op->res.num = (int64_t) (at - now);
            return op;
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

    snprintf(val, sizeof(val), "%lu", n);

    if (rg_mem_write(m, e, &k, val, ttl ? ttl : 1) != RG_OK) {
        rg_mem_refuse(op, RG_ERROR, RG_MEM_FULL);
    }

    return op;
}
