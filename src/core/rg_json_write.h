/* rg_json_write.h: compact JSON text of a jansson value, the same bytes
 * as json_dumps(JSON_COMPACT [| JSON_SORT_KEYS] | JSON_ENCODE_ANY), written
 * into a buffer without jansson's per-container loop check (a formatted
 * address and a hash table insert for every object and array). */

#ifndef RG_JSON_WRITE_H
#define RG_JSON_WRITE_H

#include <jansson.h>

#define RG_JSON_SORT_KEYS  0x1

/* appends v's text to b (NUL-terminated, not counted in len) */
rg_int_t rg_json_write(rg_buf_t *b, const json_t *v, rg_uint_t flags);
/* a JSON string of the UTF-8 text p..p+len; RG_ERROR if it is not UTF-8 */
rg_int_t rg_json_write_str(rg_buf_t *b, const char *p, size_t len);
/* the text as a malloc'ed string for free(), or NULL; *len if len */
char *rg_json_dumps(const json_t *v, rg_uint_t flags, size_t *len);

#endif /* RG_JSON_WRITE_H */
