/* rg_stream_submit.c: tasks put on the queue (rg_stream.c): a task's
 * mark set in two steps around its entry, so that a submitter dying
 * between them loses nothing and a second submit of its id is reported,
 * not queued again; and a task's cancel. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_stream.h>
#include <rg_stream_int.h>
#include <rg_digest.h>


/* submit -------------------------------------------------------------- */


rg_uint_t
rg_stream_shard_of(rg_uint_t shards, const char *task_id)
{
    char      digest[RG_SHA256_HEX], head[9];
    uint64_t  h;

    if (shards <= 1
        || rg_sha256_hex(digest, task_id, strlen(task_id), NULL, 0) != RG_OK)
    {
        return 0;
    }

    memcpy(head, digest, 8);
    head[8] = '\0';
    h = strtoull(head, NULL, 16);

    return (rg_uint_t) (h % shards);
}


/* the mark v another submit set: a task's (0), or a submit's that may
 * still be adding its task (2); one that gave up goes on below */
#define RG_STREAM_MARK_HELD                                                  \
    "  if string.sub(v, 1, 2) ~= 's ' then\n"                                \
    "    return 0\n"                                                         \
    "  end\n"                                                                \
    "  if redis.call('PTTL', KEYS[1])\n"                                     \
    "     > tonumber(ARGV[2]) - tonumber(ARGV[3]) then\n"                    \
    "    return 2\n"                                                         \
    "  end\n"                                                                \
    "  if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then\n"                 \
    "    return 0\n"                                                         \
    "  end\n"


rg_redis_script_t  rg_stream_mark_lua = { "mark",
    "local v = redis.call('GET', KEYS[1])\n"
    "if v and v ~= ARGV[1] then\n"
    RG_STREAM_MARK_HELD
    "end\n"
    "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "return 1\n", ""
};


rg_redis_script_t  rg_stream_submit_lua = { "submit",
    "local v = redis.call('GET', KEYS[1])\n"
    "local own = string.sub(ARGV[1], 3)\n"
    "if v and v ~= ARGV[1] then\n"
    "  if v == own then\n"
    "    return 1\n"
    "  end\n"
    RG_STREAM_MARK_HELD
    "end\n"
    "local id = redis.call('XADD', KEYS[4], '*', 'task', ARGV[5])\n"
    "redis.call('SET', KEYS[1], own, 'PX', ARGV[4])\n"
    "return id\n", ""
};


typedef struct {
    rg_stream_t          *q;
    rg_uint_t             shard;
    rg_uint_t             again;      /* no mark: the first submit's stays */
    char                 *mark;       /* "P{SID}:task" */
    char                 *text;
    size_t                len;
    rg_stream_submit_pt   cb;
    void                 *data;
} rg_stream_sub_t;


static void
rg_stream_sub_free(rg_stream_sub_t *sb)
{
    free(sb->mark);
    free(sb->text);
    free(sb);
}


static void
rg_stream_sub_end(rg_stream_sub_t *sb, rg_int_t rc, const char *what)
{
    if (sb->cb) {
        sb->cb(sb->data, rc, what);
    }
    rg_stream_sub_free(sb);
}


static void
rg_stream_added(void *data, redisReply *reply, const char *err)
{
    char              id[64], ttl[24];
    rg_str_t          tag;
    rg_stream_sub_t  *sb;
    const char       *argv[5];

    sb = data;
    tag = rg_stream_tag(sb->mark);

    if (err == NULL && reply && reply->type == REDIS_REPLY_STRING) {
        snprintf(id, sizeof(id), "%.*s", (int) rg_min(reply->len, 60),
                 reply->str);

        if (!sb->again) {
            /* queued: the mark now lasts as the session may */
            snprintf(ttl, sizeof(ttl), "%llu",
                     (unsigned long long) sb->q->session_ttl);
            argv[0] = "SET";
            argv[1] = sb->mark;
            argv[2] = sb->q->consumer;
            argv[3] = "PX";
            argv[4] = ttl;
            rg_stream_send(sb->q->redis, &tag, 0, rg_stream_ignore, NULL, 5,
                           argv);
        }

        rg_stream_sub_end(sb, RG_OK, id);
        return;
    }

    /* not queued: its mark goes, so that a retry may queue it; an
     * outcome unknown may have queued it, which its id makes harmless
     * (a task queued again keeps the mark of its first submit) */
    if (sb->again) {
        rg_stream_sub_end(sb, RG_ERROR, err ? err : "the queue refused it");
        return;
    }

    argv[0] = "DEL";
    argv[1] = sb->mark;
    rg_stream_send(sb->q->redis, &tag, 0, rg_stream_ignore, NULL, 2, argv);

    rg_stream_sub_end(sb, RG_ERROR, err ? err : "the queue refused it");
}


static void
rg_stream_xadd(rg_stream_sub_t *sb)
{
    size_t           lens[5];
    rg_stream_t     *q;
    const char      *argv[5];

    q = sb->q;

    argv[0] = "XADD";
    argv[1] = q->keys[sb->shard];
    argv[2] = "*";
    argv[3] = "task";
    argv[4] = sb->text;
    lens[0] = 4;
    lens[1] = strlen(argv[1]);
    lens[2] = 1;
    lens[3] = 4;
    lens[4] = sb->len;

    if (rg_redis_command(q->redis, &q->tags[sb->shard], 0, rg_stream_added,
                         sb, 5, argv, lens) == NULL)
    {
        rg_stream_sub_end(sb, RG_ERROR, "out of memory");
    }
}


static void
rg_stream_marked(void *data, redisReply *reply, const char *err)
{
    rg_stream_sub_t  *sb;

    sb = data;

    if (err) {
        rg_stream_sub_end(sb, RG_ERROR, err);
        return;
    }

    if (reply == NULL || reply->type != REDIS_REPLY_INTEGER
        || reply->integer != 1)
    {
        rg_stream_sub_end(sb, RG_DECLINED,
                          reply && reply->type == REDIS_REPLY_INTEGER
                          && reply->integer == 2 ? "submitting" : "exists");
        return;
    }

    rg_stream_xadd(sb);
}


/* the mark and the entry at once (rg_stream_submit_lua) */
static void
rg_stream_submitted(void *data, redisReply *reply, const char *err)
{
    rg_stream_sub_t  *sb;

    sb = data;

    if (err) {
        /* nothing, or both: a submit asked again tells which */
        rg_stream_sub_end(sb, RG_ERROR, err);
        return;
    }

    if (reply && reply->type == REDIS_REPLY_STRING) {
        char  id[64];

        snprintf(id, sizeof(id), "%.*s", (int) rg_min(reply->len, 60),
                 reply->str);
        rg_stream_sub_end(sb, RG_OK, id);
        return;
    }

    if (reply && reply->type == REDIS_REPLY_INTEGER && reply->integer == 1) {
        rg_stream_sub_end(sb, RG_OK, "");
        return;
    }

    rg_stream_sub_end(sb, RG_DECLINED,
                      reply && reply->type == REDIS_REPLY_INTEGER
                      && reply->integer == 2 ? "submitting" : "exists");
}


void
rg_stream_submit(rg_stream_t *q, const char *task_id, const char *text,
    size_t len, rg_uint_t again, rg_stream_submit_pt cb, void *data)
{
    char              sid[48], value[160], ttl[24], stale[24], sttl[24];
    char             *meta, *result;
    size_t            lens[9];
    rg_uint_t         i, n;
    rg_str_t          tag;
    rg_stream_sub_t  *sb;
    const char       *argv[9];

    rg_stream_session_id(task_id, sid, sizeof(sid));

    sb = calloc(1, sizeof(rg_stream_sub_t));
    if (sb) {
        sb->mark = rg_stream_sprintf("%s{%s}:task", q->prefix, sid);
        sb->text = malloc(len + 1);
    }

    if (sb == NULL || sb->mark == NULL || sb->text == NULL
        || (rg_stream_mark_lua.sha[0] == '\0'
            && rg_redis_script_init(&rg_stream_mark_lua) != RG_OK)
        || (rg_stream_submit_lua.sha[0] == '\0'
            && rg_redis_script_init(&rg_stream_submit_lua) != RG_OK))
    {
        if (sb) {
            rg_stream_sub_free(sb);
        }
        if (cb) {
            cb(data, RG_ERROR, "out of memory");
        }
        return;
    }

    memcpy(sb->text, text, len);
    sb->text[len] = '\0';
    sb->len = len;
    sb->q = q;
    sb->cb = cb;
    sb->data = data;
    sb->shard = rg_stream_shard_of((rg_uint_t) q->conf->shards, task_id);

    if (again) {
        sb->again = 1;
        rg_stream_xadd(sb);
        return;
    }

    /* this submit's own: two of one worker at once differ */
    snprintf(value, sizeof(value), "s %.100s %llu", q->consumer,
             (unsigned long long) ++q->submits);
    snprintf(ttl, sizeof(ttl), "%d", RG_STREAM_SUBMITTING_TTL);
    snprintf(stale, sizeof(stale), "%d", RG_STREAM_SUBMITTING_STALE);
    tag = rg_stream_tag(sb->mark);

    meta = rg_stream_sprintf("%s{%s}:meta", q->prefix, sid);
    result = rg_stream_sprintf("%s{%s}:result", q->prefix, sid);

    argv[0] = sb->mark;
    argv[1] = meta ? meta : "";
    argv[2] = result ? result : "";

    if (q->one_read) {
        /* one Redis: the mark and the entry in one script */
        snprintf(sttl, sizeof(sttl), "%llu",
                 (unsigned long long) q->session_ttl);
        argv[3] = q->keys[sb->shard];
        argv[4] = value;
        argv[5] = ttl;
        argv[6] = stale;
        argv[7] = sttl;
        argv[8] = sb->text;
        n = 9;

    } else {
        argv[3] = value;
        argv[4] = ttl;
        argv[5] = stale;
        n = 6;
    }

    for (i = 0; i < n; i++) {
        lens[i] = i == 8 ? sb->len : strlen(argv[i]);
    }

    if (meta == NULL || result == NULL
        || (q->one_read
            ? rg_redis_eval(q->redis, &tag, &rg_stream_submit_lua,
                            rg_stream_submitted, sb, 4, 9, argv, lens)
            : rg_redis_eval(q->redis, &tag, &rg_stream_mark_lua,
                            rg_stream_marked, sb, 3, 6, argv, lens)) == NULL)
    {
        rg_stream_sub_end(sb, RG_ERROR, "out of memory");
    }

    free(meta);
    free(result);
}


/* cancels ------------------------------------------------------------- */


/* KEYS: the cancel set ({q:NAME}:cancel). ARGV: a task id, the ttl */
static rg_redis_script_t  rg_stream_cancel_lua = { "cancel",
    "redis.call('SADD', KEYS[1], ARGV[1])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "return 1\n", ""
};


rg_redis_cmd_t *
rg_stream_cancel(rg_stream_t *q, const char *task_id, rg_redis_reply_pt cb,
    void *data)
{
    char         ttl[24], *key;
    size_t       lens[3];
    const char  *argv[3];
    rg_redis_cmd_t  *cmd;

    if (rg_stream_cancel_lua.sha[0] == '\0'
        && rg_redis_script_init(&rg_stream_cancel_lua) != RG_OK)
    {
        return NULL;
    }

    key = rg_stream_sprintf("%s{q:%s}:cancel", q->prefix,
                            q->conf->stream.data);
    if (key == NULL) {
        return NULL;
    }

    snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long) q->session_ttl);

    argv[0] = key;
    argv[1] = task_id;
    argv[2] = ttl;
    lens[0] = strlen(key);
    lens[1] = strlen(task_id);
    lens[2] = strlen(ttl);

    cmd = rg_redis_eval(q->redis, &q->rtag, &rg_stream_cancel_lua, cb, data,
                        1, 3, argv, lens);
    free(key);

    return cmd;
}


rg_redis_cmd_t *
rg_stream_cancelled(rg_stream_t *q, const char **task_ids, rg_uint_t n,
    rg_uint_t forget, rg_redis_reply_pt cb, void *data)
{
    char            *key;
    size_t          *lens;
    rg_uint_t        i;
    const char     **argv;
    rg_redis_cmd_t  *cmd;

    key = rg_stream_sprintf("%s{q:%s}:cancel", q->prefix,
                            q->conf->stream.data);
    argv = malloc((n + 2) * sizeof(char *));
    lens = malloc((n + 2) * sizeof(size_t));

    cmd = NULL;

    if (key && argv && lens) {
        argv[0] = forget ? "SREM" : "SMISMEMBER";
        argv[1] = key;
        for (i = 0; i < n; i++) {
            argv[i + 2] = task_ids[i];
        }
        for (i = 0; i < n + 2; i++) {
            lens[i] = strlen(argv[i]);
        }

        cmd = rg_redis_command(q->redis, &q->rtag, 0,
                               cb ? cb : rg_stream_ignore, data,
                               (int) n + 2, argv, lens);
    }

    free(key);
    free(argv);
    free(lens);

    return cmd;
}
