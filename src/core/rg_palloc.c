/* rg_palloc.c: memory pools. Small allocations are carved from blocks;
 * large ones are malloc'ed one by one and may be given back early with
 * rg_pfree(). Everything goes when the pool is destroyed. */

#include <rg_config.h>
#include <rg_core.h>


#define RG_POOL_ALIGN  16

struct rg_pool_block_s {
    rg_pool_block_t     *next;
    char                *last;
    char                *end;
};

struct rg_pool_large_s {
    rg_pool_large_t     *next;
    rg_pool_large_t    **prev;
};


#define rg_pool_align(n)                                                    \
    (((n) + RG_POOL_ALIGN - 1) & ~(size_t) (RG_POOL_ALIGN - 1))


static rg_pool_block_t *
rg_pool_block_new(rg_pool_t *pool)
{
    rg_pool_block_t  *b;

    b = malloc(pool->block_size);
    if (b == NULL) {
        return NULL;
    }

    pool->total += pool->block_size;
    b->next = pool->current;
    b->last = (char *) b + rg_pool_align(sizeof(*b));
    b->end = (char *) b + pool->block_size;
    pool->current = b;

    return b;
}


rg_pool_t *
rg_pool_create(size_t block_size)
{
    rg_pool_t  *pool;

    pool = calloc(1, sizeof(rg_pool_t));
    if (pool == NULL) {
        return NULL;
    }

    pool->block_size = block_size < 256 ? 256 : block_size;

    return pool;
}


rg_pool_t *
rg_pool_create_with(size_t block_size, size_t size, void **obj)
{
    char             *p;
    size_t            head, first;
    rg_pool_t        *pool;
    rg_pool_block_t  *b;

    head = rg_pool_align(sizeof(rg_pool_block_t))
           + rg_pool_align(sizeof(rg_pool_t));
    block_size = block_size < 256 ? 256 : block_size;
    first = rg_max(block_size, head + rg_pool_align(size));

    b = malloc(first);
    if (b == NULL) {
        return NULL;
    }

    p = (char *) b + rg_pool_align(sizeof(rg_pool_block_t));
    pool = (rg_pool_t *) p;
    memset(pool, 0, sizeof(rg_pool_t));
    pool->block_size = block_size;
    pool->total = first;
    pool->inner = 1;
    pool->current = b;

    b->next = NULL;
    b->end = (char *) b + first;

    p = (char *) b + head;
    memset(p, 0, size);
    b->last = p + rg_pool_align(size);

    *obj = p;

    return pool;
}


void
rg_pool_destroy(rg_pool_t *pool)
{
    rg_pool_cleanup_t  *c;
    rg_pool_large_t    *l, *ln;
    rg_pool_block_t    *b, *bn;
    unsigned            inner;

    if (pool == NULL) {
        return;
    }

    for (c = pool->cleanup; c; c = c->next) {
        if (c->handler) {
            c->handler(c->data);
        }
    }

    for (l = pool->large; l; l = ln) {
        ln = l->next;
        free(l);
    }

    /* an inner pool is in the last block of the list: read nothing of it
     * once that is freed */
    inner = pool->inner;

    for (b = pool->current; b; b = bn) {
        bn = b->next;
        free(b);
    }

    if (!inner) {
        free(pool);
    }
}


static void *
rg_palloc_large(rg_pool_t *pool, size_t size)
{
    rg_pool_large_t  *l;

    l = malloc(RG_POOL_ALIGN + size);
    if (l == NULL) {
        return NULL;
    }

    l->next = pool->large;
    l->prev = &pool->large;
    if (pool->large) {
        pool->large->prev = &l->next;
    }
    pool->large = l;

    return (char *) l + RG_POOL_ALIGN;
}


void *
rg_palloc(rg_pool_t *pool, size_t size)
{
    char             *p;
    size_t            need;
    rg_pool_block_t  *b;

    need = rg_pool_align(size);

    if (need > pool->block_size / 4) {
        return rg_palloc_large(pool, size);
    }

    b = pool->current;

    if (b == NULL || (size_t) (b->end - b->last) < need) {
        b = rg_pool_block_new(pool);
        if (b == NULL) {
            return NULL;
        }
    }

    p = b->last;
    b->last += need;

    return p;
}


void *
rg_pcalloc(rg_pool_t *pool, size_t size)
{
    void  *p;

    p = rg_palloc(pool, size);
    if (p) {
        memset(p, 0, size);
    }

    return p;
}


rg_int_t
rg_pfree(rg_pool_t *pool, void *p)
{
    rg_pool_large_t  *l;

    for (l = pool->large; l; l = l->next) {
        if ((char *) l + RG_POOL_ALIGN == p) {
            *l->prev = l->next;
            if (l->next) {
                l->next->prev = l->prev;
            }
            free(l);
            return RG_OK;
        }
    }

    return RG_DECLINED;
}


char *
rg_pstrdup(rg_pool_t *pool, const char *s, size_t len)
{
    return rg_strterm(rg_palloc(pool, len + 1), s, len);
}


/* fmt formatted into the pool, NUL-ended; its length in *len */
char *
rg_pvsprintf(rg_pool_t *pool, size_t *len, const char *fmt, va_list args)
{
    int       n;
    char     *p;
    va_list   aq;

    va_copy(aq, args);
    n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);

    if (n < 0) {
        return NULL;
    }

    p = rg_palloc(pool, (size_t) n + 1);
    if (p == NULL) {
        return NULL;
    }

    vsnprintf(p, (size_t) n + 1, fmt, args);
    *len = n;

    return p;
}


rg_pool_cleanup_t *
rg_pool_cleanup_add(rg_pool_t *pool, rg_pool_cleanup_pt h, void *data)
{
    rg_pool_cleanup_t  *c;

    c = rg_palloc(pool, sizeof(rg_pool_cleanup_t));
    if (c == NULL) {
        return NULL;
    }

    c->handler = h;
    c->data = data;
    c->next = pool->cleanup;
    pool->cleanup = c;

    return c;
}
