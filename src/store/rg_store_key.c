/* rg_store_key.c: the names both stores give what they keep: a
 * session's keys ("{id}:NAME", the id its hash tag) and the ids of its
 * events ("ms-seq"). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>


size_t
rg_store_session_key(char *buf, size_t size, const rg_str_t *id,
    const char *name, size_t len)
{
    int  n;

    n = snprintf(buf, size, "{%.*s}:%.*s", (int) id->len, id->data,
                 (int) len, name);

    return n > 0 && (size_t) n < size ? (size_t) n : 0;
}


rg_int_t
rg_store_event_id(const char *s, size_t len, uint64_t *ms, uint64_t *seq)
{
    size_t     i, k;
    uint64_t   v[2], d;

    v[0] = 0;
    v[1] = 0;
    k = 0;

    for (i = 0; i < len; i++) {
        if (s[i] == '-' && k == 0 && i > 0) {
            k = 1;
            if (i + 1 == len) {
                return RG_ERROR;
            }
            continue;
        }

        if (s[i] < '0' || s[i] > '9') {
            return RG_ERROR;
        }

        d = (uint64_t) (s[i] - '0');

        if (v[k] > (UINT64_MAX - d) / 10) {
            return RG_ERROR;
        }

        v[k] = v[k] * 10 + d;
    }

    if (k == 0) {
        return RG_ERROR;
    }

    *ms = v[0];
    *seq = v[1];

    return RG_OK;
}
