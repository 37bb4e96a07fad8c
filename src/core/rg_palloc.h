/* rg_palloc.h: memory pools, freed whole. One pool per lifetime: the cycle
 * (configuration, modules), a session, one request. Cleanups registered on
 * a pool run when it is destroyed, newest first. */

#ifndef RG_PALLOC_H
#define RG_PALLOC_H

typedef void (*rg_pool_cleanup_pt)(void *data);

typedef struct rg_pool_cleanup_s  rg_pool_cleanup_t;

struct rg_pool_cleanup_s {
    rg_pool_cleanup_pt   handler;
    void                *data;
    rg_pool_cleanup_t   *next;
};

typedef struct rg_pool_large_s  rg_pool_large_t;
typedef struct rg_pool_block_s  rg_pool_block_t;

struct rg_pool_s {
    rg_pool_block_t     *current;     /* the block small allocations use */
    rg_pool_large_t     *large;
    rg_pool_cleanup_t   *cleanup;
    size_t               block_size;
    size_t               total;       /* bytes taken from malloc */
    unsigned             inner:1;     /* lives in its first block */
};

rg_pool_t *rg_pool_create(size_t block_size);
/* a pool and its owner (size bytes, zeroed, at *obj) in one first block,
 * which is made large enough to hold them: one malloc, not three */
rg_pool_t *rg_pool_create_with(size_t block_size, size_t size, void **obj);
void rg_pool_destroy(rg_pool_t *pool);
void *rg_palloc(rg_pool_t *pool, size_t size);
void *rg_pcalloc(rg_pool_t *pool, size_t size);
rg_int_t rg_pfree(rg_pool_t *pool, void *p);
char *rg_pstrdup(rg_pool_t *pool, const char *s, size_t len);
char *rg_pvsprintf(rg_pool_t *pool, size_t *len, const char *fmt,
    va_list args);
rg_pool_cleanup_t *rg_pool_cleanup_add(rg_pool_t *pool, rg_pool_cleanup_pt h,
    void *data);

#endif /* RG_PALLOC_H */
