/* rg_stream.h: the task queue in Redis Streams (rg_stream.c): what
 * `reagent serve` reads, `reagent submit` writes, `reagent results` and
 * `reagent queue` show. */

#ifndef RG_STREAM_H
#define RG_STREAM_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_redis.h>

typedef struct rg_stream_s  rg_stream_t;

/* one entry read from a shard: its id and its task line; delivered is
 * how often the group handed it out (reclaimed entries: from XPENDING) */
typedef struct {
    rg_uint_t           shard;
    char                id[48];
    const char         *task;
    size_t              len;
    int64_t             delivered;
} rg_stream_entry_t;

/* entries read (n may be 0: nothing came within block), or err */
typedef void (*rg_stream_read_pt)(void *data, rg_stream_entry_t *e,
    rg_uint_t n, const char *err);
/* an operation done: err NULL, or why not */
typedef void (*rg_stream_done_pt)(void *data, const char *err);

/* a queue on the engine's store redis; consumer names this worker */
rg_stream_t *rg_stream_create(rg_engine_t *e, const char *consumer);
void rg_stream_destroy(rg_stream_t *q);

rg_uint_t rg_stream_shards(rg_stream_t *q);

/* the group on every shard (made when absent, from the first entry) */
void rg_stream_prepare(rg_stream_t *q, rg_stream_done_pt cb, void *data);
/* new entries of shard, at most count: at once (wait 0: none may be
 * there), or waiting at most block for the first */
void rg_stream_read(rg_stream_t *q, rg_uint_t shard, rg_uint_t count,
    rg_uint_t wait, rg_stream_read_pt cb, void *data);
/* 1 when one command can name every shard: they are on one server (in
 * a cluster each shard's key is in a slot of its own) */
rg_uint_t rg_stream_one_read(rg_stream_t *q);
/* waits, at most block, until an entry is added to any shard (XREAD:
 * nothing is delivered, the reads that follow take it); cb once it came
 * or block passed. Entries added before it was sent are not seen. */
void rg_stream_wait(rg_stream_t *q, rg_stream_done_pt cb, void *data);
/* entries of shard idle longer than claim_idle, taken over, at most
 * count, with their delivery counts; each shard's scan of the pending
 * entries goes on where the last one stopped (XAUTOCLAIM's cursor) */
void rg_stream_reclaim(rg_stream_t *q, rg_uint_t shard, rg_uint_t count,
    rg_stream_read_pt cb, void *data);
/* the entries this worker runs stay its own: their idle time restarts */
void rg_stream_touch(rg_stream_t *q, rg_uint_t shard, const char **ids,
    rg_uint_t n);
/* entries handed back: idle enough for any worker to take them now;
 * cb once Redis answered (it must be, before the connection goes) */
void rg_stream_hand_back(rg_stream_t *q, rg_uint_t shard, const char **ids,
    rg_uint_t n, rg_stream_done_pt cb, void *data);
/* this worker's consumer out of shard's group, when it holds no entry
 * there (a clean exit: `reagent queue` lists no worker that is gone) */
void rg_stream_leave(rg_stream_t *q, rg_uint_t shard, rg_stream_done_pt cb,
    void *data);
/* a task's final result: kept under its session ({ID}:result), added to
 * the results stream, then the entry acknowledged, each step once the
 * one before succeeded (a failure: cb's err, the entry stays pending);
 * entry "": none to acknowledge (a result written again) */
void rg_stream_result(rg_stream_t *q, rg_uint_t shard, const char *entry,
    const char *task_id, const char *sid, const char *result, size_t len,
    rg_stream_done_pt cb, void *data);
/* an entry given up on: to the shard's dead letters with why; cb once
 * Redis has it (the caller then writes its result, which acknowledges
 * it), or with err: the entry stays pending, to be given up on again */
void rg_stream_dead(rg_stream_t *q, const rg_stream_entry_t *e,
    const char *why, rg_stream_done_pt cb, void *data);

/* A task's mark ("P{SID}:task") says it was queued: a second submit of
 * its id is refused. The mark and the entry live in different slots (a
 * cluster cannot change both in one script), so the mark is set in two
 * steps: "s …" while the entry is being added, for
 * RG_STREAM_SUBMITTING_TTL, then the submitter's own value for the
 * session_ttl once the entry is in. A submitter that died in between
 * leaves the short mark only: once it is older than
 * RG_STREAM_SUBMITTING_STALE, a submit finding no session nor result of
 * the task queues it (at worst a second entry of a task that was queued
 * but not yet read: it runs the same session, once). rg_stream_mark_lua:
 * KEYS the mark, the session's meta and result; ARGV this submit's "s …"
 * value, RG_STREAM_SUBMITTING_TTL, RG_STREAM_SUBMITTING_STALE. It answers
 * 1: the mark is this submit's, add the entry; 0: submitted before; 2:
 * another submit is adding it now. */
#define RG_STREAM_SUBMITTING_TTL    60000
#define RG_STREAM_SUBMITTING_STALE  15000

extern rg_redis_script_t  rg_stream_mark_lua;

/* Where one script may touch both (not a cluster), the mark and the
 * entry are set at once: an answer lost on the way leaves either both or
 * neither, and a submit asked again is told the truth. rg_stream_submit_lua:
 * KEYS as rg_stream_mark_lua's, then the shard's stream; ARGV this
 * submit's "s …" value, RG_STREAM_SUBMITTING_TTL,
 * RG_STREAM_SUBMITTING_STALE, the session_ttl, the task's line. It
 * answers the entry's id: queued; 1: queued before by this same submit
 * (its answer was lost); 0: submitted before; 2: another submit (of a
 * cluster's two steps) is adding it now. */
extern rg_redis_script_t  rg_stream_submit_lua;

/* a task line onto the queue from a worker (the HTTP API, a parked
 * session let go): its mark set (above), then the entry added to the
 * shard its id hashes to (in one script where it may). A task submitted
 * before: cb gets RG_DECLINED "exists" (or "submitting": another submit
 * of a cluster's two steps is adding it now) and nothing is queued; again set
 * forces it onto the queue (a parked session's resumption). cb: RG_OK
 * with the entry id, or RG_ERROR with why. */
typedef void (*rg_stream_submit_pt)(void *data, rg_int_t rc,
    const char *entry_or_err);

void rg_stream_submit(rg_stream_t *q, const char *task_id, const char *text,
    size_t len, rg_uint_t again, rg_stream_submit_pt cb, void *data);
/* a task cancelled: its id into the queue's cancel set, which the
 * worker that runs it (or takes it later) reads every second */
rg_redis_cmd_t *rg_stream_cancel(rg_stream_t *q, const char *task_id,
    rg_redis_reply_pt cb, void *data);
/* which of these tasks were cancelled (SMISMEMBER: an array of 0 and 1),
 * or, forget set, out of the set (cb may be NULL) */
rg_redis_cmd_t *rg_stream_cancelled(rg_stream_t *q, const char **task_ids,
    rg_uint_t n, rg_uint_t forget, rg_redis_reply_pt cb, void *data);

/* an entry acknowledged without a result (a parked task: not final) */
void rg_stream_ack(rg_stream_t *q, rg_uint_t shard, const char *entry,
    rg_stream_done_pt cb, void *data);

/* what the queue's other parts (rg_approval.c) build on: its engine, its
 * connection, the session TTL, "P{q:NAME}<tail>" and "P{SID}<tail>" for
 * a task id (malloc'ed, NULL: out of memory), the hash tag of a key */
rg_engine_t *rg_stream_engine(rg_stream_t *q);
rg_redis_t *rg_stream_redis(rg_stream_t *q);
rg_msec_t rg_stream_session_ttl(rg_stream_t *q);
char *rg_stream_queue_key(rg_stream_t *q, const char *tail);
char *rg_stream_task_key(rg_stream_t *q, const char *task_id,
    const char *tail);
rg_str_t rg_stream_key_tag(const char *key);

/* the shard a task id goes to */
rg_uint_t rg_stream_shard_of(rg_uint_t shards, const char *task_id);
/* the sizes of a shard, for the metrics: its entries (XLEN), those
 * delivered and not acknowledged (XPENDING's count) and its dead
 * letters (XLEN); cb once, with err when one of the three failed */
typedef void (*rg_stream_sizes_pt)(void *data, rg_uint_t shard,
    int64_t depth, int64_t pending, int64_t dead, const char *err);
void rg_stream_sizes(rg_stream_t *q, rg_uint_t shard, rg_stream_sizes_pt cb,
    void *data);

/* the session id of a task id: "t-" and 128 bits of its SHA-256, the
 * same in every process, so a task taken over resumes its session */
void rg_stream_session_id(const char *task_id, char *buf, size_t size);

/* The record of the store's losses (rg_stream_lost.c): a JSON line
 * added by a worker that found the store had lost its memory (what it
 * wrote back, which tasks are gone); the newest n, newest first. */
#define RG_STREAM_LOSSES       50
#define RG_STREAM_LOSSES_TTL   (30ULL * 24 * 3600 * 1000)

void rg_stream_note_loss(rg_stream_t *q, const char *line, size_t len,
    rg_stream_done_pt cb, void *data);
rg_redis_cmd_t *rg_stream_losses(rg_stream_t *q, rg_uint_t n,
    rg_redis_reply_pt cb, void *data);

/* A look at which tasks a loss took, handed over to be asked when due by
 * any worker (rg_stream_lost.c); a take answers the look (a string, now
 * this worker's), when the next is due (an integer) or nil; a drop takes
 * one away (made by the worker that handed it). */
rg_redis_cmd_t *rg_stream_hand_look(rg_stream_t *q, const char *look,
    size_t len, rg_msec_t due, rg_msec_t ttl, rg_redis_reply_pt cb,
    void *data);
rg_redis_cmd_t *rg_stream_take_look(rg_stream_t *q, rg_msec_t now,
    rg_redis_reply_pt cb, void *data);
rg_redis_cmd_t *rg_stream_drop_look(rg_stream_t *q, const char *look,
    size_t len, rg_redis_reply_pt cb, void *data);
/* The ledger of a serve worker (rg_stream_ledger.c): the tasks its
 * process queued (its API) or took, remembered and written down beside
 * the pid file, named lost when the store forgets them and no worker
 * holds them. Started by serve's worker once the pid file's place is
 * known; note() does nothing in another process. */
rg_int_t rg_stream_ledger_start(rg_engine_t *e);
void rg_stream_ledger_note(rg_engine_t *e, const char *id);
void rg_stream_ledger_stop(rg_engine_t *e);

/* a task with nothing left in the store (no record, meta nor result) is
 * given result (its status "lost"): 0; 1: something is left */
rg_redis_cmd_t *rg_stream_lost_task(rg_stream_t *q, const char *task_id,
    const char *result, size_t len, rg_redis_reply_pt cb, void *data);

/* the queue's commands (rg_stream_cli.c) */
extern const rg_cli_t  rg_submit_cli;
extern const rg_cli_t  rg_results_cli;
extern const rg_cli_t  rg_queue_status_cli;
/* `reagent events`: a task's session's events (rg_events_cli.c) */
extern const rg_cli_t  rg_events_cli;

#endif /* RG_STREAM_H */
