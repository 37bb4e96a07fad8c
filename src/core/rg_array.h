/* rg_array.h: a growable array of fixed-size elements in a pool. */

#ifndef RG_ARRAY_H
#define RG_ARRAY_H

typedef struct {
    void        *elts;
    rg_uint_t    nelts;
    size_t       size;
    rg_uint_t    nalloc;
    rg_pool_t   *pool;
} rg_array_t;

rg_array_t *rg_array_create(rg_pool_t *p, rg_uint_t n, size_t size);
rg_int_t rg_array_init(rg_array_t *a, rg_pool_t *p, rg_uint_t n, size_t size);
void *rg_array_push(rg_array_t *a);

#endif /* RG_ARRAY_H */
