/* rg_stream.c: the task queue in Redis Streams. Tasks are entries
 * {task: <the JSONL line>} of `shards` streams, each with a hash tag of
 * its own ("P{q:tasks:0}", so that a Redis Cluster spreads them), read by
 * one consumer group. A worker reads with XREADGROUP only as many entries
 * as it has free session slots, one shard at a time, on a connection of
 * its own: at once, or waiting at most `block` (and it may wait for an
 * entry on any shard with XREAD, which delivers nothing); which to do
 * when is the worker's (rg_serve_worker.c). It acknowledges and deletes
 * an entry (XACK, XDEL: a shard holds only what waits or runs, and XLEN
 * is its depth) once the task's final result is written: kept under its
 * session ("P{t-…}:result") and announced once on the results stream
 * ("P{q:tasks}:results", trimmed with MAXLEN ~; a mark in its slot makes
 * a second announcement of a task, by a worker that took it over, none).
 * Entries idle longer than `claim_idle` are taken over with XAUTOCLAIM
 * (whose list of entries deleted meanwhile is logged), each shard's scan
 * going on from where the last one stopped; a live worker keeps its
 * entries fresh with XCLAIM … JUSTID, so they are never taken while it
 * works; one delivered more than `max_deliveries` times goes to the
 * shard's dead letters ("P{q:tasks:0}:dead") with the reason. A task is
 * submitted once: its mark is set in two steps around its entry
 * (rg_stream.h), so that a submitter dying between them loses nothing.
 *
 * This file owns the queue's lifetime, its consumer group, its sizes and
 * what the queue's other parts read; a worker's entries are
 * rg_stream_read.c's, the end of a task rg_stream_result.c's, submits and
 * cancels rg_stream_submit.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_stream.h>
#include <rg_stream_int.h>
#include <rg_store_conf.h>
#include <rg_digest.h>


/* for a command whose answer nobody waits for */
void
rg_stream_ignore(void *data, redisReply *reply, const char *err)
{
}


char *
rg_stream_sprintf(const char *fmt, ...)
{
    int       n;
    char     *p;
    va_list   args;

    va_start(args, fmt);
    n = vasprintf(&p, fmt, args);
    va_end(args);

    return n < 0 ? NULL : p;
}


/* the hash tag of a key as the cluster router reads it: inside { } */
rg_str_t
rg_stream_tag(const char *key)
{
    rg_str_t     t;
    const char  *a, *b;

    a = strchr(key, '{');
    b = a ? strchr(a + 1, '}') : NULL;

    t.data = (char *) (a && b ? a + 1 : key);
    t.len = a && b ? (size_t) (b - a - 1) : strlen(key);

    return t;
}


rg_stream_t *
rg_stream_create(rg_engine_t *e, const char *consumer)
{
    rg_uint_t         i, n;
    rg_stream_t      *q;
    rg_queue_conf_t  *qcf;

    qcf = rg_queue_conf(e->cycle);
    n = (rg_uint_t) qcf->shards;

    q = calloc(1, sizeof(rg_stream_t));
    if (q == NULL) {
        return NULL;
    }

    q->engine = e;
    q->conf = qcf;
    q->prefix = rg_store_prefix(e->cycle);
    q->session_ttl = rg_store_session_ttl(e);
    q->keys = calloc(n, sizeof(char *));
    q->dead = calloc(n, sizeof(char *));
    q->tags = calloc(n, sizeof(rg_str_t));
    q->cursors = calloc(n, sizeof(rg_stream_cursor_t));
    q->consumer = strdup(consumer);
    q->results = rg_stream_sprintf("%s{q:%s}:results", q->prefix,
                                   qcf->stream.data);

    if (q->keys == NULL || q->dead == NULL || q->tags == NULL
        || q->cursors == NULL || q->consumer == NULL || q->results == NULL)
    {
        goto failed;
    }

    q->rtag = rg_stream_tag(q->results);
    q->one_read = !rg_store_conf(e->cycle)->cluster;

    for (i = 0; i < n; i++) {
        q->keys[i] = rg_stream_sprintf("%s{q:%s:%lu}", q->prefix,
                                       qcf->stream.data, (unsigned long) i);
        q->dead[i] = rg_stream_sprintf("%s{q:%s:%lu}:dead", q->prefix,
                                       qcf->stream.data, (unsigned long) i);
        if (q->keys[i] == NULL || q->dead[i] == NULL) {
            goto failed;
        }
        q->tags[i] = rg_stream_tag(q->keys[i]);
        memcpy(q->cursors[i].id, "0-0", 4);
    }

    /* a blocking read holds its connection: the reads have their own,
     * with a timeout past the longest block */
    q->reader = rg_store_redis_new(e, 1, qcf->block
                                         + rg_store_conf(e->cycle)
                                           ->command_timeout);
    q->redis = rg_store_redis_new(e, 2, 0);

    if (q->reader == NULL || q->redis == NULL) {
        goto failed;
    }

    return q;

failed:

    rg_stream_destroy(q);
    return NULL;
}


void
rg_stream_destroy(rg_stream_t *q)
{
    rg_uint_t  i;

    if (q == NULL) {
        return;
    }

    if (q->reader) {
        rg_redis_destroy(q->reader);
    }
    if (q->redis) {
        rg_redis_destroy(q->redis);
    }

    for (i = 0; q->keys && i < (rg_uint_t) q->conf->shards; i++) {
        free(q->keys[i]);
        free(q->dead[i]);
    }

    free(q->keys);
    free(q->dead);
    free(q->tags);
    free(q->cursors);
    free(q->consumer);
    free(q->results);
    free(q);
}


rg_uint_t
rg_stream_shards(rg_stream_t *q)
{
    return (rg_uint_t) q->conf->shards;
}


void
rg_stream_session_id(const char *task_id, char *buf, size_t size)
{
    char  digest[RG_SHA256_HEX];

    if (rg_sha256_hex(digest, "task", 5, task_id, strlen(task_id))
        != RG_OK)
    {
        snprintf(buf, size, "t-unknown");
        return;
    }

    snprintf(buf, size, "t-%.32s", digest);
}


rg_stream_op_t *
rg_stream_op(rg_stream_t *q, rg_uint_t shard, void *data)
{
    rg_stream_op_t  *op;

    op = calloc(1, sizeof(rg_stream_op_t));
    if (op) {
        op->q = q;
        op->shard = shard;
        op->data = data;
    }

    return op;
}


void
rg_stream_op_free(rg_stream_op_t *op)
{
    if (op->held) {
        freeReplyObject(op->held);
    }
    free(op->entries);
    free(op);
}


/* sends argv (NUL-ended strings) on r with the tag; cb(op, reply, err) */
rg_int_t
rg_stream_send(rg_redis_t *r, const rg_str_t *tag, rg_msec_t timeout,
    rg_redis_reply_pt cb, void *data, int argc, const char **argv)
{
    int     i;
    size_t  lens[24];

    if (argc > (int) rg_nelems(lens)) {
        return RG_ERROR;
    }

    for (i = 0; i < argc; i++) {
        lens[i] = strlen(argv[i]);
    }

    return rg_redis_command(r, tag, timeout, cb, data, argc, argv, lens)
           ? RG_OK : RG_ERROR;
}


/* the group ----------------------------------------------------------- */


static void
rg_stream_prepared(void *data, redisReply *reply, const char *err)
{
    rg_stream_op_t  *op;

    op = data;

    /* a group that is there already is what we want */
    if (err && strncmp(err, "BUSYGROUP", 9) != 0 && op->err[0] == '\0') {
        snprintf(op->err, sizeof(op->err), "%s", err);
    }

    if (--op->left) {
        return;
    }

    op->done(op->data, op->err[0] ? op->err : NULL);
    rg_stream_op_free(op);
}


void
rg_stream_prepare(rg_stream_t *q, rg_stream_done_pt cb, void *data)
{
    rg_uint_t        i, n;
    rg_stream_op_t  *op;
    const char      *argv[6];

    n = rg_stream_shards(q);

    op = rg_stream_op(q, 0, data);
    if (op == NULL) {
        cb(data, "out of memory");
        return;
    }

    op->done = cb;
    op->left = n;

    for (i = 0; i < n; i++) {
        argv[0] = "XGROUP";
        argv[1] = "CREATE";
        argv[2] = q->keys[i];
        argv[3] = q->conf->group.data;
        argv[4] = "0";
        argv[5] = "MKSTREAM";

        if (rg_stream_send(q->redis, &q->tags[i], 0, rg_stream_prepared, op,
                           6, argv) != RG_OK)
        {
            snprintf(op->err, sizeof(op->err), "out of memory");
            if (--op->left == 0) {
                cb(data, op->err);
                rg_stream_op_free(op);
                return;
            }
        }
    }
}


/* sizes ---------------------------------------------------------------- */

typedef struct {
    rg_uint_t           shard;
    rg_uint_t           left;         /* answers still to come */
    int64_t             v[3];         /* depth, pending, dead */
    char                err[256];
    rg_stream_sizes_pt  cb;
    void               *data;
} rg_stream_sizes_t;


typedef struct {
    rg_stream_sizes_t  *sz;
    rg_uint_t           i;
} rg_stream_size_t;


static void
rg_stream_size_handler(void *data, redisReply *reply, const char *err)
{
    rg_stream_size_t   *one;
    rg_stream_sizes_t  *sz;

    one = data;
    sz = one->sz;

    if (err) {
        if (sz->err[0] == '\0') {
            snprintf(sz->err, sizeof(sz->err), "%s", err);
        }

    } else if (reply->type == REDIS_REPLY_INTEGER) {
        sz->v[one->i] = reply->integer;

    } else if (reply->type == REDIS_REPLY_ARRAY && reply->elements > 0
               && reply->element[0]->type == REDIS_REPLY_INTEGER)
    {
        sz->v[one->i] = reply->element[0]->integer;   /* XPENDING */
    }

    free(one);

    if (--sz->left == 0) {
        sz->cb(sz->data, sz->shard, sz->v[0], sz->v[1], sz->v[2],
               sz->err[0] ? sz->err : NULL);
        free(sz);
    }
}


void
rg_stream_sizes(rg_stream_t *q, rg_uint_t shard, rg_stream_sizes_pt cb,
    void *data)
{
    rg_uint_t           i;
    const char         *argv[3][3];
    int                 argc[3];
    rg_stream_size_t   *one;
    rg_stream_sizes_t  *sz;

    sz = calloc(1, sizeof(rg_stream_sizes_t));
    if (sz == NULL) {
        cb(data, shard, 0, 0, 0, "out of memory");
        return;
    }

    sz->shard = shard;
    sz->cb = cb;
    sz->data = data;
    sz->left = 3;

    argv[0][0] = "XLEN";
    argv[0][1] = q->keys[shard];
    argc[0] = 2;
    argv[1][0] = "XPENDING";
    argv[1][1] = q->keys[shard];
    argv[1][2] = q->conf->group.data;
    argc[1] = 3;
    argv[2][0] = "XLEN";
    argv[2][1] = q->dead[shard];
    argc[2] = 2;

    /* each answers once, also when it cannot be sent */
    for (i = 0; i < 3; i++) {
        one = malloc(sizeof(rg_stream_size_t));
        if (one) {
            one->sz = sz;
            one->i = i;
        }

        if (one == NULL
            || rg_stream_send(q->redis, &q->tags[shard], 0,
                              rg_stream_size_handler, one, argc[i],
                              argv[i]) != RG_OK)
        {
            free(one);
            if (sz->err[0] == '\0') {
                snprintf(sz->err, sizeof(sz->err), "out of memory");
            }
            if (--sz->left == 0) {
                cb(data, shard, sz->v[0], sz->v[1], sz->v[2], sz->err);
                free(sz);
                return;
            }
        }
    }
}


/* for the queue's other parts (rg_approval.c) ------------------------------ */


rg_engine_t *
rg_stream_engine(rg_stream_t *q)
{
    return q->engine;
}


rg_redis_t *
rg_stream_redis(rg_stream_t *q)
{
    return q->redis;
}


rg_msec_t
rg_stream_session_ttl(rg_stream_t *q)
{
    return q->session_ttl;
}


char *
rg_stream_queue_key(rg_stream_t *q, const char *tail)
{
    return rg_stream_sprintf("%s{q:%s}%s", q->prefix, q->conf->stream.data,
                             tail);
}


char *
rg_stream_task_key(rg_stream_t *q, const char *task_id, const char *tail)
{
    char  sid[48];

    rg_stream_session_id(task_id, sid, sizeof(sid));

    return rg_stream_sprintf("%s{%s}%s", q->prefix, sid, tail);
}


rg_str_t
rg_stream_key_tag(const char *key)
{
    return rg_stream_tag(key);
}
