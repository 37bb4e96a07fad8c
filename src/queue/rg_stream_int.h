/* rg_stream_int.h: what the pieces of the task queue in Redis Streams
 * share (rg_stream.c: the queue, its group, its sizes;
 * rg_stream_read.c: a worker's entries; rg_stream_result.c: the end of a
 * task; rg_stream_submit.c: submits and cancels); not for callers, who
 * use rg_stream.h. */

#ifndef RG_STREAM_INT_H
#define RG_STREAM_INT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_stream.h>
#include <rg_queue_conf.h>


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


void rg_stream_ignore(void *data, redisReply *reply, const char *err);
char *rg_stream_sprintf(const char *fmt, ...);
rg_str_t rg_stream_tag(const char *key);
rg_stream_op_t *rg_stream_op(rg_stream_t *q, rg_uint_t shard, void *data);
void rg_stream_op_free(rg_stream_op_t *op);
rg_int_t rg_stream_send(rg_redis_t *r, const rg_str_t *tag,
    rg_msec_t timeout, rg_redis_reply_pt cb, void *data, int argc,
    const char **argv);


#endif /* RG_STREAM_INT_H */
