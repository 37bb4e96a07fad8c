/* rg_codec.c: msgpack records (see rg_codec.h) with msgpack-c. A reader
 * checks the whole buffer is exactly one map before anything is read, and
 * every value's type before it is used: a record from the store is data
 * another process wrote, possibly another version of reagent, or none.
 * msgpack-c sizes its memory by the counts a buffer claims (a map header
 * may claim four billion pairs in five bytes), so the shape of a record is
 * checked against the buffer's length first: one map of at most
 * RG_CODEC_MAX_PAIRS pairs, string keys, scalar values, nothing nested. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_codec.h>


void
rg_codec_begin(rg_codec_writer_t *w, rg_uint_t n)
{
    msgpack_sbuffer_init(&w->sb);
    msgpack_packer_init(&w->pk, &w->sb, msgpack_sbuffer_write);

    w->n = n;
    w->written = 0;
    w->rc = msgpack_pack_map(&w->pk, n) == 0 ? RG_OK : RG_ERROR;
}


static void
rg_codec_key(rg_codec_writer_t *w, const char *key)
{
    size_t  len;

    len = strlen(key);

    if (w->rc == RG_OK
        && (msgpack_pack_str(&w->pk, len) != 0
            || msgpack_pack_str_body(&w->pk, key, len) != 0))
    {
        w->rc = RG_ERROR;
    }

    w->written++;
}


void
rg_codec_str(rg_codec_writer_t *w, const char *key, const char *s,
    size_t len)
{
    rg_codec_key(w, key);

    if (w->rc == RG_OK
        && (msgpack_pack_str(&w->pk, len) != 0
            || (len && msgpack_pack_str_body(&w->pk, s, len) != 0)))
    {
        w->rc = RG_ERROR;
    }
}


void
rg_codec_int(rg_codec_writer_t *w, const char *key, int64_t v)
{
    rg_codec_key(w, key);

    if (w->rc == RG_OK && msgpack_pack_int64(&w->pk, v) != 0) {
        w->rc = RG_ERROR;
    }
}


void
rg_codec_double(rg_codec_writer_t *w, const char *key, double v)
{
    rg_codec_key(w, key);

    if (w->rc == RG_OK && msgpack_pack_double(&w->pk, v) != 0) {
        w->rc = RG_ERROR;
    }
}


char *
rg_codec_end(rg_codec_writer_t *w, size_t *len)
{
    if (w->rc != RG_OK || w->written != w->n) {
        msgpack_sbuffer_destroy(&w->sb);
        return NULL;
    }

    *len = w->sb.size;

    /* an empty record still needs its map header: sb.data is never NULL
     * here */
    return msgpack_sbuffer_release(&w->sb);
}


#define RG_CODEC_MAX_PAIRS  64


/* the bytes of a length of n bytes at p, big-endian */
static uint64_t
rg_codec_be(const unsigned char *p, size_t n)
{
    uint64_t  v;

    v = 0;
    while (n--) {
        v = (v << 8) | *p++;
    }

    return v;
}


/* the size of the scalar at p (its header and body), 0 when it is not
 * one or does not fit in the len bytes left */
static size_t
rg_codec_scalar(const unsigned char *p, size_t len, rg_uint_t key)
{
    size_t    h;
    uint64_t  n;

    if (len == 0) {
        return 0;
    }

    if ((*p & 0xe0) == 0xa0) {                    /* fixstr */
        h = 1;
        n = *p & 0x1f;

    } else if (*p == 0xd9 || *p == 0xda || *p == 0xdb     /* str */
               || (!key && (*p == 0xc4 || *p == 0xc5 || *p == 0xc6)))
    {
        h = 1 + ((size_t) 1 << ((*p - (*p >= 0xd9 ? 0xd9 : 0xc4)) & 3));
        if (len < h) {
            return 0;
        }
        n = rg_codec_be(p + 1, h - 1);

    } else if (key) {
        return 0;

    } else if (*p <= 0x7f || *p >= 0xe0 || *p == 0xc0 || *p == 0xc2
               || *p == 0xc3)
    {
        return 1;                                 /* fixint, nil, bool */

    } else if (*p == 0xca) {
        return len >= 5 ? 5 : 0;                  /* float32 */

    } else if (*p == 0xcb) {
        return len >= 9 ? 9 : 0;                  /* float64 */

    } else if ((*p >= 0xcc && *p <= 0xcf) || (*p >= 0xd0 && *p <= 0xd3)) {
        h = 1 + ((size_t) 1 << ((*p - 0xcc) & 3)); /* ints */
        return len >= h ? h : 0;

    } else {
        return 0;                                 /* containers, ext */
    }

    return n <= len - h ? h + (size_t) n : 0;
}


static rg_int_t
rg_codec_shape(const char *buf, size_t len)
{
    size_t                i, n, k, v, off;
    const unsigned char  *p;

    p = (const unsigned char *) buf;

    if (len == 0) {
        return RG_ERROR;
    }

    if ((*p & 0xf0) == 0x80) {
        n = *p & 0x0f;
        off = 1;
    } else if (*p == 0xde && len >= 3) {
        n = (size_t) rg_codec_be(p + 1, 2);
        off = 3;
    } else {
        return RG_ERROR;
    }

    if (n > RG_CODEC_MAX_PAIRS) {
        return RG_ERROR;
    }

    for (i = 0; i < n; i++) {
        k = rg_codec_scalar(p + off, len - off, 1);
        if (k == 0) {
            return RG_ERROR;
        }
        off += k;

        v = rg_codec_scalar(p + off, len - off, 0);
        if (v == 0) {
            return RG_ERROR;
        }
        off += v;
    }

    return off == len ? RG_OK : RG_ERROR;
}


rg_int_t
rg_codec_read(rg_codec_reader_t *r, const char *p, size_t len)
{
    size_t                 off;
    msgpack_unpack_return  rc;

    msgpack_unpacked_init(&r->u);
    r->map = NULL;

    if (rg_codec_shape(p, len) != RG_OK) {
        return RG_ERROR;
    }

    off = 0;
    rc = msgpack_unpack_next(&r->u, p, len, &off);

    /* one whole map and nothing after it */
    if (rc != MSGPACK_UNPACK_SUCCESS || off != len
        || r->u.data.type != MSGPACK_OBJECT_MAP)
    {
        msgpack_unpacked_destroy(&r->u);
        msgpack_unpacked_init(&r->u);
        return RG_ERROR;
    }

    r->map = &r->u.data.via.map;

    return RG_OK;
}


void
rg_codec_done(rg_codec_reader_t *r)
{
    msgpack_unpacked_destroy(&r->u);
    r->map = NULL;
}


static msgpack_object *
rg_codec_find(rg_codec_reader_t *r, const char *key)
{
    size_t               len;
    uint32_t             i;
    msgpack_object_kv   *kv;

    if (r->map == NULL) {
        return NULL;
    }

    len = strlen(key);

    for (i = 0; i < r->map->size; i++) {
        kv = &r->map->ptr[i];

        if (kv->key.type == MSGPACK_OBJECT_STR
            && kv->key.via.str.size == len
            && memcmp(kv->key.via.str.ptr, key, len) == 0)
        {
            return &kv->val;
        }
    }

    return NULL;
}


rg_int_t
rg_codec_get_str(rg_codec_reader_t *r, const char *key, rg_str_t *s)
{
    msgpack_object  *o;

    o = rg_codec_find(r, key);

    if (o == NULL
        || (o->type != MSGPACK_OBJECT_STR && o->type != MSGPACK_OBJECT_BIN))
    {
        return RG_DECLINED;
    }

    /* both share the layout of {size, ptr} */
    s->len = o->type == MSGPACK_OBJECT_STR ? o->via.str.size
                                           : o->via.bin.size;
    s->data = (char *) (o->type == MSGPACK_OBJECT_STR ? o->via.str.ptr
                                                      : o->via.bin.ptr);

    return RG_OK;
}


rg_int_t
rg_codec_get_int(rg_codec_reader_t *r, const char *key, int64_t *v)
{
    msgpack_object  *o;

    o = rg_codec_find(r, key);

    if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER
        && o->via.u64 <= INT64_MAX)
    {
        *v = (int64_t) o->via.u64;
        return RG_OK;
    }

    if (o && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *v = o->via.i64;
        return RG_OK;
    }

    return RG_DECLINED;
}


rg_int_t
rg_codec_get_double(rg_codec_reader_t *r, const char *key, double *v)
{
    msgpack_object  *o;

    o = rg_codec_find(r, key);

    if (o && (o->type == MSGPACK_OBJECT_FLOAT64
              || o->type == MSGPACK_OBJECT_FLOAT32))
    {
        *v = o->via.f64;
        return RG_OK;
    }

    if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        *v = (double) o->via.u64;
        return RG_OK;
    }

    return RG_DECLINED;
}
