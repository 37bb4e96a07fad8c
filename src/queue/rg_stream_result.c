/* rg_stream_result.c: the end of a task of the queue (rg_stream.c): its
 * final result kept under its session, announced once on the results
 * stream, then its entry acknowledged and deleted; or its entry buried in
 * the dead letters with the reason. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_stream.h>
#include <rg_stream_int.h>


/* KEYS: the shard. ARGV: the group, the entry. An entry done with is
 * acknowledged and deleted, so that a shard holds what waits or runs
 * (XLEN is its depth), not every task it was ever given */
static rg_redis_script_t  rg_stream_done_lua = { "done",
    "local n = redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])\n"
    "redis.call('XDEL', KEYS[1], ARGV[2])\n"
    "return n\n", ""
};


/* acknowledges and deletes an entry; RG_ERROR without memory */
static rg_int_t
rg_stream_done(rg_stream_t *q, rg_uint_t shard, const char *entry,
    rg_redis_reply_pt cb, void *data)
{
    size_t       lens[3];
    const char  *argv[3];

    if (rg_stream_done_lua.sha[0] == '\0'
        && rg_redis_script_init(&rg_stream_done_lua) != RG_OK)
    {
        return RG_ERROR;
    }

    argv[0] = q->keys[shard];
    argv[1] = q->conf->group.data;
    argv[2] = entry;
    lens[0] = strlen(argv[0]);
    lens[1] = strlen(argv[1]);
    lens[2] = strlen(argv[2]);

    return rg_redis_eval(q->redis, &q->tags[shard], &rg_stream_done_lua, cb,
                         data, 1, 3, argv, lens) != NULL ? RG_OK : RG_ERROR;
}


/* results ------------------------------------------------------------- */


/* KEYS: the task's mark, the results stream (one slot: {q:NAME}). ARGV:
 * ttl, maxlen, task id, result. The first to mark a task announces its
 * result; a second (a worker stopped past its lease, or the one that
 * took over a task whose worker died between the two) does not */
static rg_redis_script_t  rg_stream_announce_lua = { "announce",
    "if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then\n"
    "  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', "
    "'id', ARGV[3], 'result', ARGV[4])\n"
    "  return 1\n"
    "end\n"
    "return 0\n", ""
};


/* a result on its way: kept under its session, then announced once,
 * then its entry acknowledged; each step only once the one before it is
 * answered OK (an entry is acknowledged only with its result kept) */
typedef struct {
    rg_stream_t        *q;
    rg_uint_t           shard;
    char               *entry;
    char               *task_id;
    char               *mark;
    char               *result;
    size_t              len;
    rg_stream_done_pt   done;
    void               *data;
} rg_stream_res_t;


static void
rg_stream_res_free(rg_stream_res_t *r)
{
    free(r->entry);
    free(r->task_id);
    free(r->mark);
    free(r->result);
    free(r);
}


/* the end of a result's way: cb with err (NULL: acknowledged) */
static void
rg_stream_res_end(rg_stream_res_t *r, const char *err)
{
    if (r->done) {
        r->done(r->data, err);
    }

    rg_stream_res_free(r);
}


static void
rg_stream_acked(void *data, redisReply *reply, const char *err)
{
    rg_stream_res_end(data, err);
}


static void
rg_stream_announced(void *data, redisReply *reply, const char *err)
{
    rg_stream_t      *q;
    rg_stream_res_t  *r;

    r = data;
    q = r->q;

    if (err) {
        /* not acknowledged: the entry is taken over, its session, ended,
         * gives the result again, and it is announced then */
        rg_stream_res_end(r, err);
        return;
    }

    /* written again after the store lost it: no entry to acknowledge */
    if (r->entry[0] == '\0') {
        rg_stream_res_end(r, NULL);
        return;
    }

    if (rg_stream_done(q, r->shard, r->entry, rg_stream_acked, r) != RG_OK) {
        rg_stream_res_end(r, "out of memory");
    }
}


static void
rg_stream_kept(void *data, redisReply *reply, const char *err)
{
    char              ttl[24], max[24];
    size_t            lens[6];
    rg_stream_t      *q;
    rg_stream_res_t  *r;
    const char       *argv[6];

    r = data;
    q = r->q;

    if (err) {
        /* nothing announced nor acknowledged without the result kept */
        rg_stream_res_end(r, err);
        return;
    }

    snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long) q->session_ttl);
    snprintf(max, sizeof(max), "%ld", (long) q->conf->results_max);

    argv[0] = r->mark;
    argv[1] = q->results;
    argv[2] = ttl;
    argv[3] = max;
    argv[4] = r->task_id;
    argv[5] = r->result;
    lens[0] = strlen(r->mark);
    lens[1] = strlen(q->results);
    lens[2] = strlen(ttl);
    lens[3] = strlen(max);
    lens[4] = strlen(r->task_id);
    lens[5] = r->len;

    if (rg_redis_eval(q->redis, &q->rtag, &rg_stream_announce_lua,
                      rg_stream_announced, r, 2, 6, argv, lens) == NULL)
    {
        rg_stream_res_end(r, "out of memory");
    }
}


void
rg_stream_result(rg_stream_t *q, rg_uint_t shard, const char *entry,
    const char *task_id, const char *sid, const char *result, size_t len,
    rg_stream_done_pt cb, void *data)
{
    char              ttl[24], *key;
    size_t            lens[5];
    rg_str_t          tag;
    rg_stream_res_t  *r;
    const char       *argv[5];

    r = calloc(1, sizeof(rg_stream_res_t));
    key = rg_stream_sprintf("%s{%s}:result", q->prefix, sid);

    if (r) {
        r->entry = strdup(entry);
        r->task_id = strdup(task_id);
        r->mark = rg_stream_sprintf("%s{q:%s}:done:%s", q->prefix,
                                    q->conf->stream.data, sid);
        r->result = malloc(len + 1);
    }

    if (r == NULL || r->entry == NULL || r->task_id == NULL
        || r->mark == NULL || r->result == NULL || key == NULL
        || (rg_stream_announce_lua.sha[0] == '\0'
            && rg_redis_script_init(&rg_stream_announce_lua) != RG_OK))
    {
        if (r) {
            rg_stream_res_free(r);
        }
        free(key);
        if (cb) {
            cb(data, "out of memory");
        }
        return;
    }

    memcpy(r->result, result, len);
    r->result[len] = '\0';
    r->len = len;
    r->q = q;
    r->shard = shard;
    r->done = cb;
    r->data = data;

    snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long) q->session_ttl);

    /* kept with the session: the same value whoever writes it */
    tag = rg_stream_tag(key);
    argv[0] = "SET";
    argv[1] = key;
    argv[2] = result;
    argv[3] = "PX";
    argv[4] = ttl;
    lens[0] = 3;
    lens[1] = strlen(key);
    lens[2] = len;
    lens[3] = 2;
    lens[4] = strlen(ttl);

    if (rg_redis_command(q->redis, &tag, 0, rg_stream_kept, r, 5, argv, lens)
        == NULL)
    {
        rg_stream_res_end(r, "out of memory");
    }

    free(key);
}


static void
rg_stream_buried(void *data, redisReply *reply, const char *err)
{
    rg_stream_op_t  *op;

    op = data;

    if (err == NULL && reply && reply->type == REDIS_REPLY_ERROR) {
        err = reply->str;
    }

    op->done(op->data, err);
    rg_stream_op_free(op);
}


void
rg_stream_dead(rg_stream_t *q, const rg_stream_entry_t *e, const char *why,
    rg_stream_done_pt cb, void *data)
{
    size_t           lens[12];
    const char      *argv[12];
    rg_stream_op_t  *op;

    op = rg_stream_op(q, e->shard, data);
    if (op == NULL) {
        cb(data, "out of memory");
        return;
    }

    op->done = cb;

    argv[0] = "XADD";
    argv[1] = q->dead[e->shard];
    argv[2] = "MAXLEN";
    argv[3] = "~";
    argv[4] = "100000";
    argv[5] = "*";
    argv[6] = "entry";
    argv[7] = e->id;
    argv[8] = "reason";
    argv[9] = why;
    argv[10] = "task";
    argv[11] = e->task ? e->task : "";

    for (int i = 0; i < 12; i++) {
        lens[i] = strlen(argv[i]);
    }
    lens[11] = e->task ? e->len : 0;

    if (rg_redis_command(q->redis, &q->tags[e->shard], 0, rg_stream_buried,
                         op, 12, argv, lens) == NULL)
    {
        rg_stream_op_free(op);
        cb(data, "out of memory");
    }
}


static void
rg_stream_ack_done(void *data, redisReply *reply, const char *err)
{
    rg_stream_res_t  *r;

    r = data;

    if (r->done) {
        r->done(r->data, err);
    }

    rg_stream_res_free(r);
}


void
rg_stream_ack(rg_stream_t *q, rg_uint_t shard, const char *entry,
    rg_stream_done_pt cb, void *data)
{
    rg_stream_res_t  *r;

    r = calloc(1, sizeof(rg_stream_res_t));
    if (r) {
        r->entry = strdup(entry);
    }

    if (r == NULL || r->entry == NULL) {
        free(r);
        if (cb) {
            cb(data, "out of memory");
        }
        return;
    }

    r->q = q;
    r->shard = shard;
    r->done = cb;
    r->data = data;

    if (rg_stream_done(q, shard, r->entry, rg_stream_ack_done, r)
        != RG_OK)
    {
        if (cb) {
            cb(data, "out of memory");
        }
        rg_stream_res_free(r);
    }
}
