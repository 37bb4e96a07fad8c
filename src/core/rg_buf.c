/* rg_buf.c: a growable byte buffer. */

#include <rg_config.h>
#include <rg_core.h>


rg_int_t
rg_buf_reserve(rg_buf_t *b, size_t more)
{
    char    *n;
    size_t   cap;

    if (b->cap - b->len > more) {
        return RG_OK;
    }

    cap = b->cap ? b->cap : 256;
    while (cap - b->len <= more) {
        cap *= 2;
    }

    n = realloc(b->data, cap);
    if (n == NULL) {
        return RG_ERROR;
    }

    b->data = n;
    b->cap = cap;

    return RG_OK;
}



/* room for what is known to come and no more: a buffer held while a
 * session waits is not rounded up to a power of two */
rg_int_t
rg_buf_reserve_exact(rg_buf_t *b, size_t more)
{
    char  *n;

    if (b->cap - b->len > more) {
        return RG_OK;
    }

    n = realloc(b->data, b->len + more + 1);
    if (n == NULL) {
        return RG_ERROR;
    }

    b->data = n;
    b->cap = b->len + more + 1;

    return RG_OK;
}

rg_int_t
rg_buf_append(rg_buf_t *b, const void *p, size_t n)
{
    if (rg_buf_reserve(b, n) != RG_OK) {
        return RG_ERROR;
    }

    if (n) {
        memcpy(b->data + b->len, p, n);
    }
    b->len += n;
    b->data[b->len] = '\0';

    return RG_OK;
}


rg_int_t
rg_buf_printf(rg_buf_t *b, const char *fmt, ...)
{
    rg_int_t  rc;
    va_list   ap;

    va_start(ap, fmt);
    rc = rg_buf_vprintf(b, fmt, ap);
    va_end(ap);

    return rc;
}


rg_int_t
rg_buf_vprintf(rg_buf_t *b, const char *fmt, va_list ap)
{
    int      n;
    va_list  aq;

    for ( ;; ) {
        if (rg_buf_reserve(b, 64) != RG_OK) {
            return RG_ERROR;
        }

        va_copy(aq, ap);
        n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, aq);
        va_end(aq);

        if (n < 0) {
            return RG_ERROR;
        }

        if ((size_t) n < b->cap - b->len) {
            b->len += n;
            return RG_OK;
        }

        if (rg_buf_reserve(b, (size_t) n + 1) != RG_OK) {
            return RG_ERROR;
        }
    }
}


void
rg_buf_free(rg_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}
