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
 * (rg_stream.h), so that a submitter dying between them loses nothing. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_stream.h>
#include <rg_queue_conf.h>
#include <rg_store_conf.h>
#include <rg_digest.h>


/* an XAUTOCLAIM cursor: the pending entry its next scan starts at */
typedef struct {
    char                id[48];
} rg_stream_cursor_t;


struct rg_stream_s {
    rg_engine_t        *engine;
    rg_queue_conf_t    *conf;
    rg_redis_t         *reader;       /* blocking reads, one at a time */
    rg_redis_t         *redis;        /* everything else, pipelined */
    char              **keys;         /* per shard: the stream */
    char              **dead;         /* per shard: its dead letters */
    char               *results;
    rg_str_t           *tags;         /* per shard */
    rg_stream_cursor_t *cursors;      /* per shard: where reclaims go on */
    rg_uint_t           one_read;     /* one read names every shard */
    rg_str_t            rtag;
    char               *consumer;
    uint64_t            submits;      /* this worker's, for their marks */
    const char         *prefix;
    rg_msec_t           session_ttl;
};


/* one command's context: a callback and what it needs */
typedef struct {
    rg_stream_t        *q;
    rg_uint_t           shard;
    rg_uint_t           left;         /* prepare: shards still to answer */
    char                err[256];
    rg_stream_read_pt   read;
    rg_stream_done_pt   done;
    void               *data;
    rg_stream_entry_t  *entries;      /* reclaim: waiting for counts */
    rg_uint_t           nentries;
    rg_uint_t           counted;
    redisReply         *held;         /* reclaim: the entries' reply */
} rg_stream_op_t;


/* for a command whose answer nobody waits for */
static void
rg_stream_ignore(void *data, redisReply *reply, const char *err)
{
}


static char *
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
static rg_str_t
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


static rg_stream_op_t *
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


static void
rg_stream_op_free(rg_stream_op_t *op)
{
    if (op->held) {
        freeReplyObject(op->held);
    }
    free(op->entries);
    free(op);
}


/* sends argv (NUL-ended strings) on r with the tag; cb(op, reply, err) */
static rg_int_t
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


/* reads ------------------------------------------------------------------ */

/* [[id, [field, value, ...]], ...] into entries; NULL fields: deleted */
static rg_uint_t
rg_stream_entries(rg_uint_t shard, redisReply *list, rg_stream_entry_t *e,
    rg_uint_t max)
{
    size_t       i, j, n;
    redisReply  *x, *f;

    n = 0;

    for (i = 0; list && list->type == REDIS_REPLY_ARRAY
                && i < list->elements && n < max; i++)
    {
        x = list->element[i];

        if (x->type != REDIS_REPLY_ARRAY || x->elements < 2
            || x->element[0]->type != REDIS_REPLY_STRING
            || x->element[0]->len >= sizeof(e[n].id))
        {
            continue;
        }

        memset(&e[n], 0, sizeof(rg_stream_entry_t));
        e[n].shard = shard;
        e[n].delivered = 1;
        memcpy(e[n].id, x->element[0]->str, x->element[0]->len);
        f = x->element[1];

        for (j = 0; f->type == REDIS_REPLY_ARRAY && j + 1 < f->elements;
             j += 2)
        {
            if (f->element[j]->type == REDIS_REPLY_STRING
                && f->element[j]->len == 4
                && memcmp(f->element[j]->str, "task", 4) == 0
                && f->element[j + 1]->type == REDIS_REPLY_STRING)
            {
                e[n].task = f->element[j + 1]->str;
                e[n].len = f->element[j + 1]->len;
            }
        }

        n++;
    }

    return n;
}


/* the shard whose stream key is k (n bytes) */
static rg_int_t
rg_stream_shard_named(rg_stream_t *q, const char *k, size_t n)
{
    rg_uint_t  i;

    for (i = 0; i < rg_stream_shards(q); i++) {
        if (strlen(q->keys[i]) == n && memcmp(q->keys[i], k, n) == 0) {
            return (rg_int_t) i;
        }
    }

    return -1;
}


static void
rg_stream_read_handler(void *data, redisReply *reply, const char *err)
{
    size_t              i, n;
    rg_int_t            shard;
    rg_uint_t           got;
    redisReply         *x;
    rg_stream_op_t     *op;
    rg_stream_entry_t  *e;

    op = data;

    if (err) {
        op->read(op->data, NULL, 0, err);
        rg_stream_op_free(op);
        return;
    }

    /* nil: nothing within block; else [[stream, [entries]], ...], one
     * for each stream that had entries */
    n = 0;

    for (i = 0; reply && reply->type == REDIS_REPLY_ARRAY
                && i < reply->elements; i++)
    {
        x = reply->element[i];
        if (x->type == REDIS_REPLY_ARRAY && x->elements == 2
            && x->element[1]->type == REDIS_REPLY_ARRAY)
        {
            n += x->element[1]->elements;
        }
    }

    e = n ? calloc(n, sizeof(rg_stream_entry_t)) : NULL;

    if (n && e == NULL) {
        op->read(op->data, NULL, 0, "out of memory");
        rg_stream_op_free(op);
        return;
    }

    got = 0;

    for (i = 0; n && i < reply->elements; i++) {
        x = reply->element[i];
        if (x->type != REDIS_REPLY_ARRAY || x->elements != 2
            || x->element[0]->type != REDIS_REPLY_STRING)
        {
            continue;
        }

        shard = rg_stream_shard_named(op->q, x->element[0]->str,
                                      x->element[0]->len);
        if (shard < 0) {
            continue;
        }

        got += rg_stream_entries((rg_uint_t) shard, x->element[1], e + got,
                                 (rg_uint_t) n - got);
    }

    op->read(op->data, e, got, NULL);

    free(e);
    rg_stream_op_free(op);
}


/* the wait answered: an entry came (what it was does not matter), or
 * nil: block passed */
static void
rg_stream_waited(void *data, redisReply *reply, const char *err)
{
    rg_stream_op_t  *op;

    op = data;
    op->done(op->data, err);
    rg_stream_op_free(op);
}


/* XREADGROUP … COUNT count [BLOCK block] STREAMS key >, or with xread
 * XREAD COUNT 1 BLOCK block STREAMS every key and as many "$" */
static void
rg_stream_xread(rg_stream_t *q, rg_uint_t shard, rg_uint_t count,
    rg_uint_t wait, rg_uint_t xread, rg_stream_op_t *op)
{
    int                 argc;
    char                c[24], b[24];
    size_t             *lens;
    rg_uint_t           i, first, nkeys;
    const char        **argv;
    rg_redis_cmd_t     *cmd;
    rg_redis_reply_pt   handler;

    first = xread ? 0 : shard;
    nkeys = xread ? rg_stream_shards(q) : 1;
    handler = xread ? rg_stream_waited : rg_stream_read_handler;

    argv = malloc((9 + 2 * nkeys) * sizeof(char *));
    lens = malloc((9 + 2 * nkeys) * sizeof(size_t));
    cmd = NULL;

    if (argv && lens) {
        snprintf(c, sizeof(c), "%lu", (unsigned long) count);
        snprintf(b, sizeof(b), "%llu", (unsigned long long) q->conf->block);

        argc = 0;
        if (xread) {
            argv[argc++] = "XREAD";
        } else {
            argv[argc++] = "XREADGROUP";
            argv[argc++] = "GROUP";
            argv[argc++] = q->conf->group.data;
            argv[argc++] = q->consumer;
        }
        argv[argc++] = "COUNT";
        argv[argc++] = c;
        if (wait) {
            argv[argc++] = "BLOCK";
            argv[argc++] = b;
        }
        argv[argc++] = "STREAMS";
        for (i = 0; i < nkeys; i++) {
            argv[argc++] = q->keys[first + i];
        }
        for (i = 0; i < nkeys; i++) {
            argv[argc++] = xread ? "$" : ">";
        }

        for (i = 0; i < (rg_uint_t) argc; i++) {
            lens[i] = strlen(argv[i]);
        }

        cmd = rg_redis_command(q->reader, &q->tags[first], 0, handler, op,
                               argc, argv, lens);
    }

    free(argv);
    free(lens);

    if (cmd == NULL) {
        handler(op, NULL, "out of memory");
    }
}


void
rg_stream_read(rg_stream_t *q, rg_uint_t shard, rg_uint_t count,
    rg_uint_t wait, rg_stream_read_pt cb, void *data)
{
    rg_stream_op_t  *op;

    op = rg_stream_op(q, shard, data);
    if (op == NULL) {
        cb(data, NULL, 0, "out of memory");
        return;
    }

    op->read = cb;
    rg_stream_xread(q, shard, count, wait, 0, op);
}


rg_uint_t
rg_stream_one_read(rg_stream_t *q)
{
    return q->one_read;
}


void
rg_stream_wait(rg_stream_t *q, rg_stream_done_pt cb, void *data)
{
    rg_stream_op_t  *op;

    op = rg_stream_op(q, 0, data);
    if (op == NULL) {
        cb(data, "out of memory");
        return;
    }

    op->done = cb;
    rg_stream_xread(q, 0, 1, 1, 1, op);
}


/* reclaim ------------------------------------------------------------- */

static void
rg_stream_counted(void *data, redisReply *reply, const char *err)
{
    rg_uint_t           i;
    redisReply         *x;
    rg_stream_op_t     *op;

    op = data;

    /* [[id, consumer, idle, deliveries]] */
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements) {
        x = reply->element[0];

        if (x->type == REDIS_REPLY_ARRAY && x->elements >= 4
            && x->element[0]->type == REDIS_REPLY_STRING
            && x->element[3]->type == REDIS_REPLY_INTEGER)
        {
            for (i = 0; i < op->nentries; i++) {
                if (strlen(op->entries[i].id) == x->element[0]->len
                    && memcmp(op->entries[i].id, x->element[0]->str,
                              x->element[0]->len) == 0)
                {
                    op->entries[i].delivered = x->element[3]->integer;
                }
            }
        }
    }

    if (++op->counted < op->nentries) {
        return;
    }

    op->read(op->data, op->entries, op->nentries, NULL);
    rg_stream_op_free(op);
}


static void
rg_stream_reclaimed(void *data, redisReply *reply, const char *err)
{
    size_t           i;
    rg_uint_t        n;
    redisReply      *del, *x;
    rg_stream_op_t  *op;
    rg_stream_t     *q;
    const char      *argv[7];

    op = data;
    q = op->q;
    op->held = reply;                  /* ours now: freed with op */

    if (err || reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements < 2)
    {
        op->read(op->data, NULL, 0, err ? err : "an answer it cannot read");
        rg_stream_op_free(op);
        return;
    }

    /* the next scan of this shard starts where this one stopped (0-0:
     * it reached the end, the next starts again at the beginning), so
     * that idle entries behind more live ones than a scan looks at
     * (COUNT times 10) are reached too */
    x = reply->element[0];
    if (x->type == REDIS_REPLY_STRING
        && x->len < sizeof(q->cursors[op->shard].id))
    {
        memcpy(q->cursors[op->shard].id, x->str, x->len);
        q->cursors[op->shard].id[x->len] = '\0';
    }

    /* entries trimmed or deleted while they were pending: gone, and no
     * longer pending; nothing can be run for them */
    del = reply->elements >= 3 ? reply->element[2] : NULL;

    for (i = 0; del && del->type == REDIS_REPLY_ARRAY && i < del->elements;
         i++)
    {
        if (del->element[i]->type == REDIS_REPLY_STRING) {
            rg_log_error(RG_LOG_WARN, q->engine->log, 0, "queue: entry %.*s "
                         "of %s was deleted from the stream before its task "
                         "ended: it cannot be run again",
                         (int) rg_min(del->element[i]->len, 40),
                         del->element[i]->str, q->keys[op->shard]);
        }
    }

    n = reply->element[1]->type == REDIS_REPLY_ARRAY
        ? reply->element[1]->elements : 0;

    if (n == 0) {
        op->read(op->data, NULL, 0, NULL);
        rg_stream_op_free(op);
        return;
    }

    op->entries = calloc(n, sizeof(rg_stream_entry_t));
    if (op->entries == NULL) {
        op->read(op->data, NULL, 0, "out of memory");
        rg_stream_op_free(op);
        return;
    }

    /* the entries point into the reply, kept until they are used */
    op->nentries = rg_stream_entries(op->shard, reply->element[1],
                                     op->entries, n);

    if (op->nentries == 0) {
        op->read(op->data, NULL, 0, NULL);
        rg_stream_op_free(op);
        return;
    }

    /* how often each was delivered (the claim counted one more) */
    for (i = 0; i < op->nentries; i++) {
        argv[0] = "XPENDING";
        argv[1] = q->keys[op->shard];
        argv[2] = q->conf->group.data;
        argv[3] = op->entries[i].id;
        argv[4] = op->entries[i].id;
        argv[5] = "1";

        if (rg_stream_send(q->redis, &q->tags[op->shard], 0,
                           rg_stream_counted, op, 6, argv) != RG_OK)
        {
            op->counted++;
        }
    }

    if (op->counted == op->nentries) {
        op->read(op->data, op->entries, op->nentries, NULL);
        rg_stream_op_free(op);
    }
}


/* hiredis frees a reply after its callback: what a reclaim keeps moves
 * to a copy first (the original is left an empty array) */
static void
rg_stream_reclaim_handler(void *data, redisReply *reply, const char *err)
{
    redisReply  *copy;

    copy = NULL;

    if (reply) {
        copy = calloc(1, sizeof(redisReply));
        if (copy == NULL) {
            rg_stream_reclaimed(data, NULL, "out of memory");
            return;
        }

        *copy = *reply;
        reply->type = REDIS_REPLY_ARRAY;
        reply->element = NULL;
        reply->elements = 0;
        reply->str = NULL;
        reply->len = 0;
    }

    rg_stream_reclaimed(data, copy, err);
}


void
rg_stream_reclaim(rg_stream_t *q, rg_uint_t shard, rg_uint_t count,
    rg_stream_read_pt cb, void *data)
{
    char             idle[24], c[24];
    rg_stream_op_t  *op;
    const char      *argv[8];

    op = rg_stream_op(q, shard, data);
    if (op == NULL) {
        cb(data, NULL, 0, "out of memory");
        return;
    }

    op->read = cb;

    snprintf(idle, sizeof(idle), "%llu",
             (unsigned long long) q->conf->claim_idle);
    snprintf(c, sizeof(c), "%lu", (unsigned long) count);

    argv[0] = "XAUTOCLAIM";
    argv[1] = q->keys[shard];
    argv[2] = q->conf->group.data;
    argv[3] = q->consumer;
    argv[4] = idle;
    argv[5] = q->cursors[shard].id;
    argv[6] = "COUNT";
    argv[7] = c;

    if (rg_stream_send(q->redis, &q->tags[shard], 0,
                       rg_stream_reclaim_handler, op, 8, argv) != RG_OK)
    {
        rg_stream_op_free(op);
        cb(data, NULL, 0, "out of memory");
    }
}


/* keeping entries, handing them back -------------------------------------- */

static void
rg_stream_claimed(void *data, redisReply *reply, const char *err)
{
    rg_stream_op_t  *op;

    op = data;

    if (err && op->err[0] == '\0') {
        snprintf(op->err, sizeof(op->err), "%s", err);
    }

    if (--op->left) {
        return;
    }

    if (op->done) {
        op->done(op->data, op->err[0] ? op->err : NULL);
    }
    rg_stream_op_free(op);
}


/* cb (may be NULL) once every command of it is answered */
static void
rg_stream_claim(rg_stream_t *q, rg_uint_t shard, const char **ids,
    rg_uint_t n, rg_uint_t back, rg_stream_done_pt cb, void *data)
{
    char             idle[24];
    rg_uint_t        i, k;
    const char      *argv[24];
    rg_stream_op_t  *op;

    op = cb ? rg_stream_op(q, shard, data) : NULL;
    if (cb && op == NULL) {
        cb(data, "out of memory");
        return;
    }

    if (op) {
        op->done = cb;
        op->left = 1;                  /* until every command is sent */
    }

    snprintf(idle, sizeof(idle), "%llu",
             (unsigned long long) q->conf->claim_idle + 1000);

    /* in groups that fit a command */
    for (i = 0; i < n; ) {
        argv[0] = "XCLAIM";
        argv[1] = q->keys[shard];
        argv[2] = q->conf->group.data;
        argv[3] = q->consumer;
        argv[4] = "0";
        k = 5;

        while (i < n && k < rg_nelems(argv) - 3) {
            argv[k++] = ids[i++];
        }

        if (back) {
            /* idle long enough that the next reclaim of anyone takes it */
            argv[k++] = "IDLE";
            argv[k++] = idle;
        }

        argv[k++] = "JUSTID";

        if (op == NULL) {
            rg_stream_send(q->redis, &q->tags[shard], 0, rg_stream_ignore,
                           NULL, (int) k, argv);
            continue;
        }

        op->left++;
        if (rg_stream_send(q->redis, &q->tags[shard], 0, rg_stream_claimed,
                           op, (int) k, argv) != RG_OK)
        {
            rg_stream_claimed(op, NULL, "out of memory");
        }
    }

    if (op) {
        rg_stream_claimed(op, NULL, NULL);
    }
}


void
rg_stream_touch(rg_stream_t *q, rg_uint_t shard, const char **ids,
    rg_uint_t n)
{
    rg_stream_claim(q, shard, ids, n, 0, NULL, NULL);
}


void
rg_stream_hand_back(rg_stream_t *q, rg_uint_t shard, const char **ids,
    rg_uint_t n, rg_stream_done_pt cb, void *data)
{
    rg_stream_claim(q, shard, ids, n, 1, cb, data);
}


/* KEYS: the stream. ARGV: the group, the consumer. A consumer deleted
 * with entries would leave them unclaimable: only one that holds none */
static rg_redis_script_t  rg_stream_leave_lua = { "leave",
    "if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])"
    " > 0 then\n"
    "  return -1\n"
    "end\n"
    "return redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], "
    "ARGV[2])\n", ""
};


static void
rg_stream_left(void *data, redisReply *reply, const char *err)
{
    rg_stream_op_t  *op;

    op = data;

    if (err == NULL && reply && reply->type == REDIS_REPLY_INTEGER
        && reply->integer < 0)
    {
        err = "it still holds entries";
    }

    op->done(op->data, err);
    rg_stream_op_free(op);
}


void
rg_stream_leave(rg_stream_t *q, rg_uint_t shard, rg_stream_done_pt cb,
    void *data)
{
    size_t           lens[3];
    rg_stream_op_t  *op;
    const char      *argv[3];

    op = rg_stream_op(q, shard, data);

    if (op == NULL
        || (rg_stream_leave_lua.sha[0] == '\0'
            && rg_redis_script_init(&rg_stream_leave_lua) != RG_OK))
    {
        free(op);
        cb(data, "out of memory");
        return;
    }

    op->done = cb;

    argv[0] = q->keys[shard];
    argv[1] = q->conf->group.data;
    argv[2] = q->consumer;
    lens[0] = strlen(argv[0]);
    lens[1] = strlen(argv[1]);
    lens[2] = strlen(argv[2]);

    if (rg_redis_eval(q->redis, &q->tags[shard], &rg_stream_leave_lua,
                      rg_stream_left, op, 1, 3, argv, lens) == NULL)
    {
        rg_stream_op_free(op);
        cb(data, "out of memory");
    }
}


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


rg_redis_script_t  rg_stream_mark_lua = { "mark",
    "local v = redis.call('GET', KEYS[1])\n"
    "if v and v ~= ARGV[1] then\n"
    "  if string.sub(v, 1, 2) ~= 's ' then\n"
    "    return 0\n"
    "  end\n"
    "  if redis.call('PTTL', KEYS[1])\n"
    "     > tonumber(ARGV[2]) - tonumber(ARGV[3]) then\n"
    "    return 2\n"
    "  end\n"
    "  if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then\n"
    "    return 0\n"
    "  end\n"
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
    "  if string.sub(v, 1, 2) ~= 's ' then\n"
    "    return 0\n"
    "  end\n"
    "  if redis.call('PTTL', KEYS[1])\n"
    "     > tonumber(ARGV[2]) - tonumber(ARGV[3]) then\n"
    "    return 2\n"
    "  end\n"
    "  if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then\n"
    "    return 0\n"
    "  end\n"
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
