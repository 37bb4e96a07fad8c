/* rg_stream_read.c: a worker's entries of the task queue (rg_stream.c):
 * read with XREADGROUP (or waited for with XREAD), taken over with
 * XAUTOCLAIM when idle past claim_idle (delivered too often: to the dead
 * letters), kept fresh with XCLAIM … JUSTID while they run, handed back,
 * and left when the worker goes. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_stream.h>
#include <rg_stream_int.h>


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
