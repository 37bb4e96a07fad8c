/* rg_string.h: counted strings (not NUL-ended unless said so) and the few
 * string helpers the rest of reagent needs. */

#ifndef RG_STRING_H
#define RG_STRING_H

typedef struct {
    size_t      len;
    char       *data;
} rg_str_t;

#define rg_string(s)        { sizeof(s) - 1, (char *) (s) }
#define rg_null_string      { 0, NULL }
#define rg_str_set(str, t)  (str)->len = sizeof(t) - 1; (str)->data = (char *) t
#define rg_str_null(str)    (str)->len = 0; (str)->data = NULL

#define rg_str_eq(s, lit)                                                    \
    ((s)->len == sizeof(lit) - 1 && memcmp((s)->data, lit, sizeof(lit) - 1) == 0)

int rg_str_cmp(const rg_str_t *a, const rg_str_t *b);
char *rg_strterm(char *p, const char *s, size_t len);
char *rg_strdup_len(const char *s, size_t len);
char *rg_cstr(rg_pool_t *pool, const rg_str_t *s);
rg_int_t rg_atoi(const char *s, size_t len);
int rg_str_casecmp_prefix(const char *s, size_t len, const char *prefix);
/* memcpy that returns the end of what it wrote */
#define rg_cpymem(dst, src, n)  (((char *) memcpy(dst, src, n)) + (n))
/* at most size - 1 bytes of the NUL-ended src and a NUL (size > 0): the
 * end, at the NUL; snprintf(dst, size, "%s", src) without the format */
char *rg_cpystrn(char *dst, const char *src, size_t size);
/* v in decimal at p (room for RG_INT64_LEN, no NUL): its length */
#define RG_INT64_LEN  20
size_t rg_sprint_int(char *p, int64_t v);

#endif /* RG_STRING_H */
