/* rg_string.c: counted-string helpers. */

#include <rg_config.h>
#include <rg_core.h>
#include <strings.h>


int
rg_str_cmp(const rg_str_t *a, const rg_str_t *b)
{
    int  r;

    r = memcmp(a->data, b->data, rg_min(a->len, b->len));
    if (r) {
        return r;
    }

    return (a->len > b->len) - (a->len < b->len);
}


/* len bytes of s into p (len + 1 bytes), ended by a NUL: the copy of
 * every strdup here, whatever the memory came from; NULL stays NULL */
char *
rg_strterm(char *p, const char *s, size_t len)
{
    if (p == NULL) {
        return NULL;
    }

    if (len) {
        memcpy(p, s, len);
    }
    p[len] = '\0';

    return p;
}


char *
rg_strdup_len(const char *s, size_t len)
{
    return rg_strterm(malloc(len + 1), s, len);
}


char *
rg_cstr(rg_pool_t *pool, const rg_str_t *s)
{
    return rg_pstrdup(pool, s->data, s->len);
}


/* a non-negative decimal integer; RG_ERROR when it is not one */
rg_int_t
rg_atoi(const char *s, size_t len)
{
    rg_int_t  v;

    if (len == 0) {
        return RG_ERROR;
    }

    for (v = 0; len--; s++) {
        if (*s < '0' || *s > '9') {
            return RG_ERROR;
        }

        if (v > (INTPTR_MAX - (*s - '0')) / 10) {
            return RG_ERROR;
        }

        v = v * 10 + (*s - '0');
    }

    return v;
}


int
rg_str_casecmp_prefix(const char *s, size_t len, const char *prefix)
{
    size_t  n;

    n = strlen(prefix);
    if (len < n) {
        return 1;
    }

    return strncasecmp(s, prefix, n);
}


char *
rg_cpystrn(char *dst, const char *src, size_t size)
{
    size_t  n;

    n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';

    return dst + n;
}


/* the printf family parses its format and is slow for a number alone, which
 * the store writes dozens of per checkpoint */
size_t
rg_sprint_int(char *p, int64_t v)
{
    char      tmp[RG_INT64_LEN];
    size_t    n, len;
    uint64_t  u;

    /* most numbers written are small: RESP lengths, counts */
    if (v >= 0 && v < 100) {
        if (v < 10) {
            p[0] = (char) ('0' + v);
            return 1;
        }

        p[0] = (char) ('0' + v / 10);
        p[1] = (char) ('0' + v % 10);
        return 2;
    }

    len = 0;
    u = (uint64_t) v;

    if (v < 0) {
        p[len++] = '-';
        u = 0 - u;
    }

    n = 0;
    do {
        tmp[n++] = (char) ('0' + u % 10);
        u /= 10;
    } while (u);

    while (n) {
        p[len++] = tmp[--n];
    }

    return len;
}
