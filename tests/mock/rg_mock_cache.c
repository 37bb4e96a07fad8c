/* rg_mock_cache.c: the mock model's prompt cache. Remembers hashes of
 * request prefixes (Anthropic: up to each cache_control breakpoint;
 * Responses and chat with --cache: every prefix of input items) in a
 * bounded table: 4096 entries, the oldest evicted first. Stores no text,
 * only 64-bit FNV-1a hashes of canonical JSON (compact, sorted keys), so a
 * prefix counts as cached when the same bytes were seen before. Counts
 * the reads and writes /stats reports. */

#include <stdlib.h>
#include <string.h>

#include "rg_mock.h"


#define RG_MOCK_CACHE_SIZE     4096
#define RG_MOCK_CACHE_BUCKETS  8192             /* a power of two */


typedef struct {
    uint64_t                  key;
    uint32_t                  next;             /* in the bucket, 1-based */
    uint32_t                  used;
} rg_mock_cache_entry_t;


static rg_mock_cache_entry_t  rg_mock_cache[RG_MOCK_CACHE_SIZE];
static uint32_t               rg_mock_cache_buckets[RG_MOCK_CACHE_BUCKETS];
static size_t                 rg_mock_cache_head;   /* the next to reuse */


/* FNV-1a over len bytes, from h (RG_MOCK_HASH_INIT to start). */

uint64_t
rg_mock_hash(uint64_t h, const void *data, size_t len)
{
    size_t               i;
    const unsigned char  *p;

    p = data;

    for (i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }

    return h;
}


/* Hashes the canonical JSON of json (NULL: nothing) after h, without the
 * key skip of an object, and adds its length to *bytes. A separator ends
 * each value, so that [ab][c] and [a][bc] differ. */

uint64_t
rg_mock_hash_json(uint64_t h, json_t *json, const char *skip, size_t *bytes)
{
    char    *s;
    size_t   len;
    json_t  *copy;

    if (json == NULL) {
        return h;
    }

    copy = NULL;

    if (skip != NULL && json_is_object(json)
        && json_object_get(json, skip) != NULL)
    {
        copy = json_copy(json);
        if (copy != NULL) {
            json_object_del(copy, skip);
            json = copy;
        }
    }

    s = json_dumps(json, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(copy);

    if (s == NULL) {
        return rg_mock_hash(h, "\x1e", 1);
    }

    len = strlen(s);
    h = rg_mock_hash(h, s, len);
    *bytes += len;
    free(s);

    return rg_mock_hash(h, "\x1e", 1);
}


static uint32_t
rg_mock_cache_bucket(uint64_t key)
{
    return (uint32_t) ((key ^ (key >> 32)) & (RG_MOCK_CACHE_BUCKETS - 1));
}


int
rg_mock_cache_has(uint64_t key)
{
    uint32_t  i;

    for (i = rg_mock_cache_buckets[rg_mock_cache_bucket(key)];
         i != 0;
         i = rg_mock_cache[i - 1].next)
    {
        if (rg_mock_cache[i - 1].key == key) {
            return 1;
        }
    }

    return 0;
}


/* Unlinks the entry in slot from its bucket before the slot is reused. */

static void
rg_mock_cache_unlink(size_t slot)
{
    uint32_t  *link;

    link = &rg_mock_cache_buckets[rg_mock_cache_bucket(
                                      rg_mock_cache[slot].key)];

    while (*link != 0) {
        if (*link == slot + 1) {
            *link = rg_mock_cache[slot].next;
            return;
        }

        link = &rg_mock_cache[*link - 1].next;
    }
}


void
rg_mock_cache_add(uint64_t key)
{
    size_t    slot;
    uint32_t  b;

    if (rg_mock_cache_has(key)) {
        return;
    }

    slot = rg_mock_cache_head;
    rg_mock_cache_head = (rg_mock_cache_head + 1) % RG_MOCK_CACHE_SIZE;

    if (rg_mock_cache[slot].used) {
        rg_mock_cache_unlink(slot);
    }

    b = rg_mock_cache_bucket(key);

    rg_mock_cache[slot].key = key;
    rg_mock_cache[slot].used = 1;
    rg_mock_cache[slot].next = rg_mock_cache_buckets[b];
    rg_mock_cache_buckets[b] = (uint32_t) slot + 1;
}


void
rg_mock_cache_reset(void)
{
    memset(rg_mock_cache, 0, sizeof(rg_mock_cache));
    memset(rg_mock_cache_buckets, 0, sizeof(rg_mock_cache_buckets));
    rg_mock_cache_head = 0;
}


/* One answer's cache use, for /stats: tokens read, tokens written. */

void
rg_mock_cache_count(size_t read, size_t written)
{
    if (read > 0) {
        rg_mock.stats.cache_reads++;
        rg_mock.stats.cache_read_tokens += read;
    }

    if (written > 0) {
        rg_mock.stats.cache_writes++;
        rg_mock.stats.cache_write_tokens += written;
    }
}
