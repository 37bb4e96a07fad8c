/* rg_buf.h: a growable byte buffer, owned by whoever holds it. Used to build
 * request bodies and to collect responses. */

#ifndef RG_BUF_H
#define RG_BUF_H

typedef struct {
    char       *data;
    size_t      len;
    size_t      cap;
} rg_buf_t;

rg_int_t rg_buf_reserve(rg_buf_t *b, size_t more);
rg_int_t rg_buf_reserve_exact(rg_buf_t *b, size_t more);
rg_int_t rg_buf_append(rg_buf_t *b, const void *p, size_t n);
rg_int_t rg_buf_printf(rg_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
rg_int_t rg_buf_vprintf(rg_buf_t *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
void rg_buf_free(rg_buf_t *b);

#define rg_buf_reset(b)          (b)->len = 0
#define rg_buf_append_lit(b, s)  rg_buf_append(b, s, sizeof(s) - 1)

#endif /* RG_BUF_H */
