/* rg_codec.h: the msgpack records reagent keeps in the store: a map of
 * short keys to strings, integers or doubles (a message, a side-effect
 * claim, a result, a task). Writing builds one record into a buffer;
 * reading unpacks one and finds values by key, copying nothing: what it
 * returns points into the bytes read, which must outlive its use. */

#ifndef RG_CODEC_H
#define RG_CODEC_H

#include <rg_config.h>
#include <rg_core.h>
#include <msgpack.h>

typedef struct {
    msgpack_sbuffer     sb;
    msgpack_packer      pk;
    rg_uint_t           n;            /* pairs promised */
    rg_uint_t           written;
    rg_int_t            rc;           /* RG_ERROR once a write failed */
} rg_codec_writer_t;

typedef struct {
    msgpack_unpacked    u;
    msgpack_object_map *map;
} rg_codec_reader_t;


/* a record of n pairs; the pairs follow, then rg_codec_end() */
void rg_codec_begin(rg_codec_writer_t *w, rg_uint_t n);
void rg_codec_str(rg_codec_writer_t *w, const char *key, const char *s,
    size_t len);
void rg_codec_int(rg_codec_writer_t *w, const char *key, int64_t v);
void rg_codec_double(rg_codec_writer_t *w, const char *key, double v);
/* the record's bytes (malloc'ed, the caller's), or NULL when it failed
 * or the pairs were not as many as promised */
char *rg_codec_end(rg_codec_writer_t *w, size_t *len);

/* RG_ERROR when p is not one whole record */
rg_int_t rg_codec_read(rg_codec_reader_t *r, const char *p, size_t len);
void rg_codec_done(rg_codec_reader_t *r);
/* RG_OK with the value, or RG_DECLINED when the key is absent or of
 * another type */
rg_int_t rg_codec_get_str(rg_codec_reader_t *r, const char *key,
    rg_str_t *s);
rg_int_t rg_codec_get_int(rg_codec_reader_t *r, const char *key,
    int64_t *v);
rg_int_t rg_codec_get_double(rg_codec_reader_t *r, const char *key,
    double *v);

#endif /* RG_CODEC_H */
