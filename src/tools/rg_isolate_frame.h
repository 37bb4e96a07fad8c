/* rg_isolate_frame.h: the frame protocol of isolated helpers
 * (rg_isolate_frame.c), shared by the worker's side (rg_isolate.c) and
 * the helper's (rg_isolate_helper.c). */

#ifndef RG_ISOLATE_FRAME_H
#define RG_ISOLATE_FRAME_H

#include <rg_config.h>
#include <rg_core.h>
#include <msgpack.h>


#define RG_ISOLATE_FRAME_MAX     (16 * 1024 * 1024)
#define RG_ISOLATE_RESULT_MAX    (RG_ISOLATE_FRAME_MAX - 64)
#define RG_ISOLATE_READ_CHUNK    65536
#define RG_ISOLATE_KEEP          (256 * 1024) /* larger idle buffers go */


/* starts a frame holding a map of n pairs; room is kept for the length */
rg_int_t rg_isolate_frame_start(msgpack_sbuffer *sb, msgpack_packer *pk,
    size_t n);
/* writes the length; RG_ERROR when the frame is over RG_ISOLATE_FRAME_MAX */
rg_int_t rg_isolate_frame_end(msgpack_sbuffer *sb);
/* the length a frame's first 4 bytes say */
size_t rg_isolate_frame_len(const char *p);
/* one pair of a map: key and string; 0 or -1 */
int rg_isolate_pack_str(msgpack_packer *pk, const char *key, const char *s,
    size_t len);
/* the key k is the string name */
int rg_isolate_key(const msgpack_object *k, const char *name);
/* Reads a frame whole into u (initialized by the caller, who destroys
 * it): a map with each of the n names, its value of types[i] in vals[i]
 * (other keys are passed over). RG_ERROR when it is no map, a name is
 * missing or has another type. */
rg_int_t rg_isolate_frame_read(msgpack_unpacked *u, const char *p,
    size_t len, rg_uint_t n, const char *const *names,
    const msgpack_object_type *types, const msgpack_object **vals);

#endif /* RG_ISOLATE_FRAME_H */
