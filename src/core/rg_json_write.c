/* rg_json_write.c: compact JSON text of a jansson value, byte for byte
 * what json_dumps() gives with JSON_COMPACT (and JSON_SORT_KEYS when
 * asked): keys in insertion order or sorted as jansson sorts them, strings
 * escaped as jansson escapes them (\" \\ \b \f \n \r \t, other control
 * characters as \u00XX, everything else as it is), reals through jansson
 * itself. jansson's own dump checks every container for a loop (an
 * address formatted into a key of a hash table); the values written here
 * are trees by construction, so a depth bound is enough. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json_write.h>


#define RG_JSON_WRITE_DEPTH  512
#define RG_JSON_SORT_STACK   16


typedef struct {
    const char    *key;
    size_t         len;
    json_t        *value;
} rg_json_member_t;


static rg_int_t rg_json_write_value(rg_buf_t *b, const json_t *v,
    rg_uint_t flags, rg_uint_t depth);


/* the escape of each byte: 0 as it is, 'u' as \u00XX, else \ and it */
#define rg_json_u4  'u', 'u', 'u', 'u'
#define rg_json_u8  rg_json_u4, rg_json_u4

static const char  rg_json_esc[256] = {
    rg_json_u8, 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
    rg_json_u8, rg_json_u8,
    ['"'] = '"', ['\\'] = '\\'
};


/* a string known to be UTF-8 */
static rg_int_t
rg_json_write_text(rg_buf_t *b, const unsigned char *p, size_t len)
{
    size_t       i, run;
    unsigned char  c;
    char        *o;
    static const char  hex[] = "0123456789ABCDEF";

    if (rg_buf_reserve(b, len + 2) != RG_OK) {
        return RG_ERROR;
    }

    b->data[b->len++] = '"';

    for (i = 0; i < len; /* void */) {
        for (run = i; run < len && rg_json_esc[p[run]] == 0; run++) {
            /* void */
        }

        if (run > i) {
            if (rg_buf_append(b, p + i, run - i) != RG_OK) {
                return RG_ERROR;
            }
            i = run;
            continue;
        }

        c = p[i++];

        if (rg_buf_reserve(b, 6 + (len - i) + 1) != RG_OK) {
            return RG_ERROR;
        }

        o = b->data + b->len;
        o[0] = '\\';

        if (rg_json_esc[c] != 'u') {
            o[1] = rg_json_esc[c];
            b->len += 2;

        } else {
            o[1] = 'u';
            o[2] = '0';
            o[3] = '0';
            o[4] = hex[c >> 4];
            o[5] = hex[c & 0xf];
            b->len += 6;
        }
    }

    if (rg_buf_reserve(b, 1) != RG_OK) {
        return RG_ERROR;
    }

    b->data[b->len++] = '"';
    b->data[b->len] = '\0';

    return RG_OK;
}


rg_int_t
rg_json_write_str(rg_buf_t *b, const char *p, size_t len)
{
    size_t    i;
    json_t   *v;
    rg_int_t  rc;

    if (p == NULL) {
        p = "";
        len = 0;
    }

    for (i = 0; i < len; i++) {
        if ((unsigned char) p[i] >= 0x80) {
            break;
        }
    }

    if (i == len) {
        return rg_json_write_text(b, (const unsigned char *) p, len);
    }

    /* beyond ASCII: jansson says whether it is UTF-8 */
    v = json_stringn(p, len);
    if (v == NULL) {
        return RG_ERROR;
    }

    rc = rg_json_write_text(b, (const unsigned char *) json_string_value(v),
                            json_string_length(v));
    json_decref(v);

    return rc;
}


static rg_int_t
rg_json_write_int(rg_buf_t *b, json_int_t n)
{
    char  tmp[RG_INT64_LEN];

    return rg_buf_append(b, tmp, rg_sprint_int(tmp, (int64_t) n));
}


static int
rg_json_write_cb(const char *p, size_t n, void *data)
{
    return rg_buf_append(data, p, n) == RG_OK ? 0 : -1;
}


static int
rg_json_member_cmp(const void *a, const void *b)
{
    int                      rc;
    size_t                   n;
    const rg_json_member_t  *x, *y;

    /* jansson's order: bytes, then the shorter first */
    x = a;
    y = b;
    n = x->len < y->len ? x->len : y->len;

    rc = memcmp(x->key, y->key, n);
    if (rc) {
        return rc;
    }

    return x->len < y->len ? -1 : x->len > y->len;
}


static rg_int_t
rg_json_write_member(rg_buf_t *b, const char *key, size_t len,
    const json_t *v, rg_uint_t first, rg_uint_t flags, rg_uint_t depth)
{
    if (!first && rg_buf_append_lit(b, ",") != RG_OK) {
        return RG_ERROR;
    }

    if (rg_json_write_text(b, (const unsigned char *) key, len) != RG_OK
        || rg_buf_append_lit(b, ":") != RG_OK)
    {
        return RG_ERROR;
    }

    return rg_json_write_value(b, v, flags, depth);
}


static rg_int_t
rg_json_write_object(rg_buf_t *b, const json_t *v, rg_uint_t flags,
    rg_uint_t depth)
{
    void              *it;
    size_t             i, n;
    rg_int_t           rc;
    rg_json_member_t   stack[RG_JSON_SORT_STACK], *m;

    if (rg_buf_append_lit(b, "{") != RG_OK) {
        return RG_ERROR;
    }

    n = json_object_size(v);
    rc = RG_OK;

    if (!(flags & RG_JSON_SORT_KEYS) || n < 2) {
        i = 0;

        for (it = json_object_iter((json_t *) v); it && rc == RG_OK;
             it = json_object_iter_next((json_t *) v, it))
        {
            rc = rg_json_write_member(b, json_object_iter_key(it),
                                      json_object_iter_key_len(it),
                                      json_object_iter_value(it), i++ == 0,
                                      flags, depth);
        }

    } else {
        m = n <= RG_JSON_SORT_STACK ? stack : malloc(n * sizeof(*m));
        if (m == NULL) {
            return RG_ERROR;
        }

        i = 0;

        for (it = json_object_iter((json_t *) v); it && i < n;
             it = json_object_iter_next((json_t *) v, it))
        {
            m[i].key = json_object_iter_key(it);
            m[i].len = json_object_iter_key_len(it);
            m[i].value = json_object_iter_value(it);
            i++;
        }

        n = i;
        qsort(m, n, sizeof(*m), rg_json_member_cmp);

        for (i = 0; i < n && rc == RG_OK; i++) {
            rc = rg_json_write_member(b, m[i].key, m[i].len, m[i].value,
                                      i == 0, flags, depth);
        }

        if (m != stack) {
            free(m);
        }
    }

    if (rc != RG_OK) {
        return RG_ERROR;
    }

    return rg_buf_append_lit(b, "}");
}


static rg_int_t
rg_json_write_value(rg_buf_t *b, const json_t *v, rg_uint_t flags,
    rg_uint_t depth)
{
    size_t  i, n;

    if (v == NULL || depth >= RG_JSON_WRITE_DEPTH) {
        return RG_ERROR;
    }

    switch (json_typeof(v)) {

    case JSON_OBJECT:
        return rg_json_write_object(b, v, flags, depth + 1);

    case JSON_ARRAY:
        if (rg_buf_append_lit(b, "[") != RG_OK) {
            return RG_ERROR;
        }

        n = json_array_size(v);

        for (i = 0; i < n; i++) {
            if ((i && rg_buf_append_lit(b, ",") != RG_OK)
                || rg_json_write_value(b, json_array_get(v, i), flags,
                                       depth + 1) != RG_OK)
            {
                return RG_ERROR;
            }
        }

        return rg_buf_append_lit(b, "]");

    case JSON_STRING:
        return rg_json_write_text(b, (const unsigned char *) json_string_value(v),
                                  json_string_length(v));

    case JSON_INTEGER:
        return rg_json_write_int(b, json_integer_value(v));

    case JSON_REAL:
        /* jansson's %.17g with its ".0" and exponent rules */
        return json_dump_callback(v, rg_json_write_cb, b,
                                  JSON_COMPACT | JSON_ENCODE_ANY) == 0
               ? RG_OK : RG_ERROR;

    case JSON_TRUE:
        return rg_buf_append_lit(b, "true");

    case JSON_FALSE:
        return rg_buf_append_lit(b, "false");

    case JSON_NULL:
        return rg_buf_append_lit(b, "null");
    }

    return RG_ERROR;
}


rg_int_t
rg_json_write(rg_buf_t *b, const json_t *v, rg_uint_t flags)
{
    size_t  len;

    len = b->len;

    if (rg_json_write_value(b, v, flags, 0) != RG_OK
        || rg_buf_reserve(b, 1) != RG_OK)
    {
        b->len = len;
        if (b->data) {
            b->data[len] = '\0';
        }
        return RG_ERROR;
    }

    b->data[b->len] = '\0';

    return RG_OK;
}


char *
rg_json_dumps(const json_t *v, rg_uint_t flags, size_t *len)
{
    rg_buf_t  b;

    memset(&b, 0, sizeof(rg_buf_t));

    if (rg_json_write(&b, v, flags) != RG_OK) {
        rg_buf_free(&b);
        return NULL;
    }

    if (len) {
        *len = b.len;
    }

    return b.data;
}
