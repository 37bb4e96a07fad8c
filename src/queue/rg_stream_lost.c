/* rg_stream_lost.c: the queue's record of what the store's losses took.
 * When Redis restarts without its data, each worker writes back what it
 * holds (rg_serve_lost.c) and adds here, under "{q:NAME}:losses", one
 * JSON line: when, which worker, what it wrote back and which tasks it
 * knows are gone for good. The newest RG_STREAM_LOSSES are kept, for
 * RG_STREAM_LOSSES_TTL after the last; `reagent queue` and /readyz show
 * them.
 *
 * It also holds, under "{q:NAME}:looks", the looks the workers hand over
 * when they find a loss (rg_stream_ledger.c): which of the tasks they
 * queued or took are gone, to be asked once the holders had their time,
 * by whichever worker is alive then (the one that knew them may have
 * stopped by that time). */

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


/* KEYS: the looks. ARGV: when it is due, the look, the key's TTL */
static rg_redis_script_t  rg_stream_hand_lua = { "hand",
    "redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])\n"
    "if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
    "end\n"
    "return 1\n", ""
};


/* KEYS: the looks. ARGV: now. The first look due is taken (it is one
 * worker's, once); else when the next is due; else nil */
static rg_redis_script_t  rg_stream_take_lua = { "take",
    "local m = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')\n"
    "if m[1] == nil then return false end\n"
    "if tonumber(m[2]) > tonumber(ARGV[1]) then\n"
    "  return tonumber(m[2])\n"
    "end\n"
    "redis.call('ZREM', KEYS[1], m[1])\n"
    "return m[1]\n", ""
};


static rg_redis_cmd_t *
rg_stream_looks_eval(rg_stream_t *q, rg_redis_script_t *script,
    rg_uint_t argc, const char **args, size_t *arglens,
    rg_redis_reply_pt cb, void *data)
{
    char            *key;
    size_t           lens[4];
    rg_str_t         tag;
    rg_uint_t        i;
    const char      *argv[4];
    rg_redis_cmd_t  *cmd;

    key = rg_stream_queue_key(q, ":looks");

    if (key == NULL
        || (script->sha[0] == '\0' && rg_redis_script_init(script) != RG_OK))
    {
        free(key);
        return NULL;
    }

    argv[0] = key;
    lens[0] = strlen(key);
    for (i = 0; i < argc; i++) {
        argv[i + 1] = args[i];
        lens[i + 1] = arglens[i];
    }

    tag = rg_stream_key_tag(key);
    cmd = rg_redis_eval(rg_stream_redis(q), &tag, script, cb, data, 1,
                        argc + 1, argv, lens);
    free(key);

    return cmd;
}


rg_redis_cmd_t *
rg_stream_hand_look(rg_stream_t *q, const char *look, size_t len,
    rg_msec_t due, rg_msec_t ttl, rg_redis_reply_pt cb, void *data)
{
    char         at[24], keep[24];
    size_t       lens[3];
    const char  *argv[3];

    snprintf(at, sizeof(at), "%llu", (unsigned long long) due);
    snprintf(keep, sizeof(keep), "%llu", (unsigned long long) ttl);

    argv[0] = at;
    argv[1] = look;
    argv[2] = keep;
    lens[0] = strlen(at);
    lens[1] = len;
    lens[2] = strlen(keep);

    return rg_stream_looks_eval(q, &rg_stream_hand_lua, 3, argv, lens, cb,
                                data);
}


rg_redis_cmd_t *
rg_stream_drop_look(rg_stream_t *q, const char *look, size_t len,
    rg_redis_reply_pt cb, void *data)
{
    char            *key;
    size_t           lens[3];
    rg_str_t         tag;
    const char      *argv[3];
    rg_redis_cmd_t  *cmd;

    key = rg_stream_queue_key(q, ":looks");
    if (key == NULL) {
        return NULL;
    }

    argv[0] = "ZREM";
    argv[1] = key;
    argv[2] = look;
    lens[0] = 4;
    lens[1] = strlen(key);
    lens[2] = len;

    tag = rg_stream_key_tag(key);
    cmd = rg_redis_command(rg_stream_redis(q), &tag, 0, cb, data, 3, argv,
                           lens);
    free(key);

    return cmd;
}


rg_redis_cmd_t *
rg_stream_take_look(rg_stream_t *q, rg_msec_t now, rg_redis_reply_pt cb,
    void *data)
{
    char         at[24];
    size_t       len;
    const char  *argv[1];

    snprintf(at, sizeof(at), "%llu", (unsigned long long) now);
    argv[0] = at;
    len = strlen(at);

    return rg_stream_looks_eval(q, &rg_stream_take_lua, 1, argv, &len, cb,
                                data);
}


/* KEYS: a task's record, meta, result (one slot). ARGV: the result that
 * says it lost, its TTL. A task with nothing left is given that result
 * (0), once: a later look finds it and names it no more (1) */
static rg_redis_script_t  rg_stream_lost_task_lua = { "lost_task",
    "if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3]) > 0 then\n"
    "  return 1\n"
    "end\n"
    "redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])\n"
    "return 0\n", ""
};


rg_redis_cmd_t *
rg_stream_lost_task(rg_stream_t *q, const char *task_id, const char *result,
    size_t len, rg_redis_reply_pt cb, void *data)
{
    char            *keys[3], ttl[24];
    size_t           lens[5];
    rg_str_t         tag;
    rg_uint_t        i;
    const char      *argv[5];
    rg_redis_cmd_t  *cmd;

    keys[0] = rg_stream_task_key(q, task_id, ":task");
    keys[1] = rg_stream_task_key(q, task_id, ":meta");
    keys[2] = rg_stream_task_key(q, task_id, ":result");
    cmd = NULL;

    if (keys[0] && keys[1] && keys[2]
        && (rg_stream_lost_task_lua.sha[0] != '\0'
            || rg_redis_script_init(&rg_stream_lost_task_lua) == RG_OK))
    {
        snprintf(ttl, sizeof(ttl), "%llu",
                 (unsigned long long) rg_stream_session_ttl(q));

        for (i = 0; i < 3; i++) {
            argv[i] = keys[i];
            lens[i] = strlen(keys[i]);
        }
        argv[3] = result;
        lens[3] = len;
        argv[4] = ttl;
        lens[4] = strlen(ttl);

        tag = rg_stream_key_tag(keys[0]);
        cmd = rg_redis_eval(rg_stream_redis(q), &tag,
                            &rg_stream_lost_task_lua, cb, data, 3, 5, argv,
                            lens);
    }

    for (i = 0; i < 3; i++) {
        free(keys[i]);
    }

    return cmd;
}
