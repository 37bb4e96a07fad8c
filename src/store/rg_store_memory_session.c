/* rg_store_memory_session.c: the sessions of the embedded store
 * (rg_store_memory.c): checkpoint, load, put, lease, release, and a
 * session's events (append, range). A session's keys are "{id}:NAME":
 * meta (name/value pairs), msgs (its messages), lease ("TOKEN HOLDER"),
 * fence (the last token handed out), kept (the names of the values kept
 * as long as the session), events, and the values put.
 * A write that carries a lease token is refused when another holds the
 * session, as the Redis scripts refuse it (rg_store_redis_session.c). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>
#include <rg_store_memory_int.h>


/* the key "{id}:name" of a session; made when it is not there and make
 * says as what (RG_MEM_VALUE, RG_MEM_LIST) */
rg_mem_entry_t *
rg_mem_session(rg_store_memory_t *m, const rg_str_t *id, const char *name,
    size_t len, rg_uint_t make)
{
    char             buf[512];
    rg_str_t         key;
    rg_mem_entry_t  *e;

    key.len = rg_store_session_key(buf, sizeof(buf), id, name, len);
    key.data = buf;

    if (key.len == 0) {
        return NULL;
    }

    e = rg_mem_find(m, &key);

    if (e == NULL && make != RG_MEM_FIND) {
        e = rg_mem_create(m, &key, make == RG_MEM_LIST);
    }

    return e;
}


/* the lease token that holds the session now, 0 when none */
static int64_t
rg_mem_lease_token(rg_store_memory_t *m, const rg_str_t *id)
{
    int64_t          t;
    rg_mem_entry_t  *e;

    e = rg_mem_session(m, id, "lease", 5, RG_MEM_FIND);
    if (e == NULL || e->list) {
        return 0;
    }

    t = strtoll(e->value.data, NULL, 10);

    return t;
}


/* the fencing counter of a session is at token: the last lease handed
 * out was token's */
static rg_uint_t
rg_mem_fence_at(rg_store_memory_t *m, const rg_str_t *id, int64_t token)
{
    int64_t          fence;
    rg_mem_entry_t  *f;

    f = rg_mem_session(m, id, "fence", 5, RG_MEM_FIND);
    fence = 0;

    return f && rg_mem_number(f, &fence) == RG_OK && fence == token;
}


/* the lease of a session admits a write: token holds it, or it expired
 * while nobody took another (the fence still at token), as in Redis */
rg_uint_t
rg_mem_lease_admits(rg_store_memory_t *m, const rg_str_t *id, int64_t token)
{
    rg_mem_entry_t  *e;

    if (token == 0) {
        return 1;
    }

    e = rg_mem_session(m, id, "lease", 5, RG_MEM_FIND);
    if (e) {
        return rg_mem_lease_token(m, id) == token;
    }

    return rg_mem_fence_at(m, id, token);
}


/* the lease of a session goes when token holds it; 1 when it went */
static rg_uint_t
rg_mem_lease_drop(rg_store_memory_t *m, const rg_str_t *id, int64_t token)
{
    rg_mem_entry_t  *e;

    if (token == 0 || rg_mem_lease_token(m, id) != token) {
        return 0;
    }

    e = rg_mem_session(m, id, "lease", 5, RG_MEM_FIND);
    rg_mem_unlink(m, e);

    return 1;
}


rg_store_op_t *
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
        rg_mem_refuse(op, RG_DECLINED, RG_MEM_FENCED);
        return op;
    }

    msgs = rg_mem_session(m, &cp->id, "msgs", 4, RG_MEM_FIND);
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
        msgs = rg_mem_session(m, &cp->id, "msgs", 4, RG_MEM_LIST);
        if (msgs == NULL) {
            goto full;
        }
    }

    msgs->pinned++;

    meta = rg_mem_session(m, &cp->id, "meta", 4, RG_MEM_LIST);

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
        rg_mem_trim(m, msgs, before, msgs->nitems - before);
    }

    rg_mem_expire(meta, cp->ttl);
    rg_mem_expire(msgs, cp->ttl);
    meta->pinned--;
    msgs->pinned--;

    /* the values kept as long as the session */
    kept = rg_mem_session(m, &cp->id, "kept", 4, RG_MEM_FIND);

    for (i = 0; kept && kept->list && i < kept->nitems; i++) {
        e = rg_mem_session(m, &cp->id, kept->items[i].data,
                           kept->items[i].len, RG_MEM_FIND);
        if (e) {
            rg_mem_expire(e, cp->ttl);
        }
    }

    if (kept) {
        rg_mem_expire(kept, cp->ttl);
    }

    if (rc == RG_OK) {
        if (cp->release && cp->lease) {
            rg_mem_lease_drop(m, &cp->id, cp->lease);
        }

        return op;
    }

full:

    rg_mem_full(m, op);

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


rg_store_op_t *
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

    meta = rg_mem_session(m, id, "meta", 4, RG_MEM_FIND);
    if (meta == NULL) {
        op->res.rc = RG_DECLINED;
        return op;
    }

    msgs = rg_mem_session(m, id, "msgs", 4, RG_MEM_FIND);

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

    kept = rg_mem_session(m, &p->id, "kept", 4, RG_MEM_LIST);

    if (kept == NULL || !kept->list) {
        goto full;
    }

    for (i = 0; i < kept->nitems; i++) {
        if (rg_str_cmp(&kept->items[i], &p->name) == 0) {
            break;
        }
    }

    if (i == kept->nitems
        && rg_mem_push(m, kept, p->name.data, p->name.len) != RG_OK)
    {
        goto full;
    }

    rg_mem_expire(kept, p->ttl);

    return;

full:

    rg_mem_full(m, op);
}


rg_store_op_t *
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
        rg_mem_refuse(op, RG_DECLINED, RG_MEM_FENCED);
        return op;
    }

    e = rg_mem_session(m, &p->id, p->name.data, p->name.len, RG_MEM_FIND);

    if (e && (p->flags & RG_STORE_NX)) {
        rg_mem_exists(op, e);
        return op;
    }

    if (e == NULL) {
        e = rg_mem_session(m, &p->id, p->name.data, p->name.len,
                           RG_MEM_VALUE);
    }

    if (e == NULL || rg_mem_set_value(m, e, p->value.data, p->value.len)
                     != RG_OK)
    {
        rg_mem_full(m, op);
        return op;
    }

    rg_mem_expire(e, p->ttl);

    if (p->flags & RG_STORE_KEEP) {
        rg_mem_keep(m, p, op);
    }

    return op;
}


/* the lease "TOKEN HOLDER" of a session written, for ttl ms; the token
 * the answer's number */
static void
rg_mem_lease_write(rg_store_memory_t *m, rg_store_op_t *op,
    const rg_str_t *id, int64_t token, const rg_str_t *holder, rg_msec_t ttl)
{
    char             buf[400];
    rg_mem_entry_t  *e;

    e = rg_mem_session(m, id, "lease", 5, RG_MEM_VALUE);
    snprintf(buf, sizeof(buf), "%lld %.*s", (long long) token,
             (int) rg_min(holder->len, 300), holder->data);

    if (e == NULL || rg_mem_set_value(m, e, buf, strlen(buf)) != RG_OK) {
        rg_mem_refuse(op, RG_ERROR, RG_MEM_FULL);
        return;
    }

    rg_mem_expire(e, ttl);
    op->res.num = token;
}


rg_store_op_t *
rg_mem_lease(rg_store_t *st, const rg_str_t *id, const rg_str_t *holder,
    int64_t token, rg_msec_t ttl, rg_store_pt cb, void *data)
{
    int64_t             now, fence;
    rg_store_op_t      *op;
    rg_mem_entry_t     *e, *f;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    e = rg_mem_session(m, id, "lease", 5, RG_MEM_FIND);
    now = e ? strtoll(e->value.data, NULL, 10) : 0;

    if (token) {
        /* a renewal: while it is still ours, or ran out with nobody
         * taking another (the fence still at its token) */
        if (e == NULL && rg_mem_fence_at(m, id, token)) {
            rg_mem_lease_write(m, op, id, token, holder, ttl);
            return op;
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
    f = rg_mem_session(m, id, "fence", 5, RG_MEM_VALUE);

    fence = 0;
    if (f == NULL || (f->value.len && rg_mem_number(f, &fence) != RG_OK)
        || rg_mem_set_number(m, f, fence + 1) != RG_OK)
    {
        rg_mem_refuse(op, RG_ERROR, RG_MEM_FULL);
        return op;
    }

    rg_mem_expire(f, 7 * 24 * 3600 * 1000ULL);

    rg_mem_lease_write(m, op, id, fence + 1, holder, ttl);

    return op;
}


rg_store_op_t *
rg_mem_release(rg_store_t *st, const rg_str_t *id, int64_t token,
    rg_store_pt cb, void *data)
{
    rg_store_op_t      *op;
    rg_store_memory_t  *m;

    m = (rg_store_memory_t *) st;

    op = rg_mem_post(m, cb, data);
    if (op == NULL) {
        return NULL;
    }

    if (rg_mem_lease_drop(m, id, token)) {
        op->res.num = 1;
    } else {
        op->res.rc = RG_DECLINED;
    }

    return op;
}


/* events --------------------------------------------------------------
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


rg_store_op_t *
rg_mem_append(rg_store_t *st, const rg_store_event_t *ev, rg_store_pt cb,
    void *data)
{
    char                idbuf[48], *item;
    size_t              idlen, len;
    uint64_t            ms, seq, lms, lseq;
    rg_int_t            rc;
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
        rg_mem_refuse(op, RG_DECLINED, RG_MEM_FENCED);
        return op;
    }

    e = rg_mem_session(m, &ev->id, "events", 6, RG_MEM_LIST);
    if (e == NULL) {
        goto full;
    }

    if (!e->list) {
        rg_mem_refuse(op, RG_ERROR, "the events key holds a value");
        return op;
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

    rc = rg_mem_push(m, e, item, len);
    free(item);

    if (rc != RG_OK) {
        goto full;
    }

    /* at most max: the oldest go */
    if (ev->max && e->nitems > ev->max) {
        rg_mem_trim(m, e, 0, e->nitems - ev->max);
    }

    v.data = idbuf;
    v.len = idlen;
    rg_mem_copy_value(op, &v);

    return op;

full:

    rg_mem_full(m, op);

    return op;
}


rg_store_op_t *
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

    e = rg_mem_session(m, id, "events", 6, RG_MEM_FIND);
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
