/* rg_stream_lost.c: the queue's record of what the store's losses took.
 * When Redis restarts without its data, each worker writes back what it
 * holds (rg_serve_lost.c) and adds here, under "{q:NAME}:losses", one
 * JSON line: when, which worker, what it wrote back and which tasks it
 * knows are gone for good. The newest RG_STREAM_LOSSES are kept, for
 * RG_STREAM_LOSSES_TTL after the last; `reagent queue` and /readyz show
 * them. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_stream.h>


/* KEYS: the list. ARGV: the line, how many kept, their TTL */
static rg_redis_script_t  rg_stream_loss_lua = { "loss",
    "redis.call('LPUSH', KEYS[1], ARGV[1])\n"
    "redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
    "return 1\n", ""
};


typedef struct {
    rg_stream_done_pt   cb;
    void               *data;
} rg_stream_loss_t;


static void
rg_stream_loss_written(void *data, redisReply *reply, const char *err)
{
    rg_stream_loss_t  *l;

    l = data;

    if (l->cb) {
        l->cb(l->data, err);
    }

    free(l);
}


void
rg_stream_note_loss(rg_stream_t *q, const char *line, size_t len,
    rg_stream_done_pt cb, void *data)
{
    char              *key, n[24], ttl[24];
    size_t             lens[4];
    rg_str_t           tag;
    const char        *argv[4];
    rg_stream_loss_t  *l;

    key = rg_stream_queue_key(q, ":losses");
    l = calloc(1, sizeof(rg_stream_loss_t));

    if (key == NULL || l == NULL
        || (rg_stream_loss_lua.sha[0] == '\0'
            && rg_redis_script_init(&rg_stream_loss_lua) != RG_OK))
    {
        free(key);
        free(l);
        if (cb) {
            cb(data, "out of memory");
        }
        return;
    }

    l->cb = cb;
    l->data = data;

    snprintf(n, sizeof(n), "%d", RG_STREAM_LOSSES);
    snprintf(ttl, sizeof(ttl), "%llu",
             (unsigned long long) RG_STREAM_LOSSES_TTL);

    argv[0] = key;
    argv[1] = line;
    argv[2] = n;
    argv[3] = ttl;
    lens[0] = strlen(key);
    lens[1] = len;
    lens[2] = strlen(n);
    lens[3] = strlen(ttl);

    tag = rg_stream_key_tag(key);

    if (rg_redis_eval(rg_stream_redis(q), &tag, &rg_stream_loss_lua,
                      rg_stream_loss_written, l, 1, 4, argv, lens) == NULL)
    {
        free(l);
        if (cb) {
            cb(data, "out of memory");
        }
    }

    free(key);
}


rg_redis_cmd_t *
rg_stream_losses(rg_stream_t *q, rg_uint_t n, rg_redis_reply_pt cb,
    void *data)
{
    char            *key, stop[24];
    size_t           lens[4];
    rg_str_t         tag;
    const char      *argv[4];
    rg_redis_cmd_t  *cmd;

    key = rg_stream_queue_key(q, ":losses");
    if (key == NULL || n == 0) {
        free(key);
        return NULL;
    }

    snprintf(stop, sizeof(stop), "%lu", (unsigned long) n - 1);

    argv[0] = "LRANGE";
    argv[1] = key;
    argv[2] = "0";
    argv[3] = stop;
    lens[0] = 6;
    lens[1] = strlen(key);
    lens[2] = 1;
    lens[3] = strlen(stop);

    tag = rg_stream_key_tag(key);
    cmd = rg_redis_command(rg_stream_redis(q), &tag, 0, cb, data, 4, argv,
                           lens);
    free(key);

    return cmd;
}
