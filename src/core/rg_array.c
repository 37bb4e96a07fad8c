/* rg_array.c: a growable array of fixed-size elements in a pool. */

#include <rg_config.h>
#include <rg_core.h>


rg_int_t
rg_array_init(rg_array_t *a, rg_pool_t *p, rg_uint_t n, size_t size)
{
    a->nelts = 0;
    a->size = size;
    a->nalloc = n ? n : 1;
    a->pool = p;
    a->elts = rg_palloc(p, a->nalloc * size);

    return a->elts ? RG_OK : RG_ERROR;
}


rg_array_t *
rg_array_create(rg_pool_t *p, rg_uint_t n, size_t size)
{
    rg_array_t  *a;

    a = rg_palloc(p, sizeof(rg_array_t));
    if (a == NULL || rg_array_init(a, p, n, size) != RG_OK) {
        return NULL;
    }

    return a;
}


void *
rg_array_push(rg_array_t *a)
{
    void  *n;

    if (a->nelts == a->nalloc) {
        n = rg_palloc(a->pool, 2 * a->nalloc * a->size);
        if (n == NULL) {
            return NULL;
        }

        memcpy(n, a->elts, a->nelts * a->size);
        rg_pfree(a->pool, a->elts);
        a->elts = n;
        a->nalloc *= 2;
    }

    return (char *) a->elts + a->size * a->nelts++;
}
