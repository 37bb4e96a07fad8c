/* rg_isolate_frame.c: the frames between a worker and its isolated
 * helpers, in both directions: a 4-byte big-endian length and one msgpack
 * map (see rg_isolate.c for what the maps hold). Builds and measures
 * frames; reading and writing them is each side's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_isolate_frame.h>


rg_int_t
rg_isolate_frame_start(msgpack_sbuffer *sb, msgpack_packer *pk, size_t n)
{
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(pk, sb, msgpack_sbuffer_write);

    /* room for the length, filled in by rg_isolate_frame_end() */
    if (msgpack_sbuffer_write(sb, "\0\0\0\0", 4) != 0
        || msgpack_pack_map(pk, n) != 0)
    {
        return RG_ERROR;
    }

    return RG_OK;
}


rg_int_t
rg_isolate_frame_end(msgpack_sbuffer *sb)
{
    size_t          len;
    unsigned char  *p;

    len = sb->size - 4;
    if (len > RG_ISOLATE_FRAME_MAX) {
        return RG_ERROR;
    }

    p = (unsigned char *) sb->data;
    p[0] = (unsigned char) (len >> 24);
    p[1] = (unsigned char) (len >> 16);
    p[2] = (unsigned char) (len >> 8);
    p[3] = (unsigned char) len;

    return RG_OK;
}


size_t
rg_isolate_frame_len(const char *p)
{
    const unsigned char  *u;

    u = (const unsigned char *) p;

    return ((size_t) u[0] << 24) | ((size_t) u[1] << 16)
           | ((size_t) u[2] << 8) | (size_t) u[3];
}


int
rg_isolate_pack_str(msgpack_packer *pk, const char *key, const char *s,
    size_t len)
{
    if (msgpack_pack_str_with_body(pk, key, strlen(key)) != 0
        || msgpack_pack_str_with_body(pk, s, len) != 0)
    {
        return -1;
    }

    return 0;
}


int
rg_isolate_key(const msgpack_object *k, const char *name)
{
    size_t  len;

    len = strlen(name);

    return k->type == MSGPACK_OBJECT_STR && k->via.str.size == len
           && memcmp(k->via.str.ptr, name, len) == 0;
}


rg_int_t
rg_isolate_frame_read(msgpack_unpacked *u, const char *p, size_t len,
    rg_uint_t n, const char *const *names, const msgpack_object_type *types,
    const msgpack_object **vals)
{
    size_t           off;
    uint32_t         i;
    rg_uint_t        j;
    msgpack_object  *k, *v;

    off = 0;

    for (j = 0; j < n; j++) {
        vals[j] = NULL;
    }

    if (msgpack_unpack_next(u, p, len, &off) != MSGPACK_UNPACK_SUCCESS
        || off != len || u->data.type != MSGPACK_OBJECT_MAP)
    {
        return RG_ERROR;
    }

    for (i = 0; i < u->data.via.map.size; i++) {
        k = &u->data.via.map.ptr[i].key;
        v = &u->data.via.map.ptr[i].val;

        for (j = 0; j < n; j++) {
            if (rg_isolate_key(k, names[j])) {
                if (v->type != types[j]) {
                    return RG_ERROR;
                }

                vals[j] = v;
            }
        }
    }

    for (j = 0; j < n; j++) {
        if (vals[j] == NULL) {
            return RG_ERROR;
        }
    }

    return RG_OK;
}
