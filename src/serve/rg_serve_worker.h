/* rg_serve_worker.h: what a worker of serve keeps (rg_serve_worker.c),
 * shared with what it writes to the queue (rg_serve_result.c) and with
 * the part that writes it back when the store loses its memory
 * (rg_serve_lost.c). Not for other parts. */

#ifndef RG_SERVE_WORKER_H
#define RG_SERVE_WORKER_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_process.h>
#include <rg_stream.h>
#include <rg_queue_conf.h>
#include <rg_session.h>

#define RG_SERVE_KEPT        1024      /* results and parked tasks kept */
#define RG_SERVE_KEPT_BYTES  (16 << 20)

/* a result this worker wrote, or a task it parked (result NULL): what
 * it tells the store again, or names, when the store forgets it */
typedef struct {
    char               *task_id;
    char                sid[48];
    rg_uint_t           shard;
    char               *result;       /* NULL: parked */
    size_t              len;
    rg_msec_t           at;           /* wall clock */
} rg_serve_kept_t;

typedef struct rg_serve_task_s  rg_serve_task_t;
typedef struct rg_serve_s       rg_serve_t;

struct rg_serve_task_s {
    rg_serve_t         *sv;
    rg_session_t       *session;
    rg_uint_t           shard;
    char                entry[48];
    char                sid[48];
    char               *task_id;
    char               *line;         /* its task line, to queue it again */
    size_t              len;
    rg_serve_task_t    *next;
    rg_serve_task_t    *prev;
};


struct rg_serve_s {
    rg_worker_t        *worker;
    rg_engine_t        *engine;
    rg_stream_t        *queue;
    rg_queue_conf_t    *qcf;
    rg_uint_t           concurrency;
    rg_uint_t           running;
    rg_uint_t           writing;      /* results not yet acknowledged */
    rg_uint_t           promised;     /* slots the read and the reclaim in
                                         flight may fill */
    rg_uint_t           read_asked;   /* the read's part of it */
    rg_uint_t           reclaim_asked;
    rg_uint_t           shard;        /* the next to read */
    rg_uint_t           empty;        /* reads in a row that found none */
    rg_serve_task_t     head;         /* the running tasks, a ring */
    struct event       *pump_ev;      /* a read after a failed one */
    struct event       *keep_ev;
    struct event       *reclaim_ev;
    struct event       *drain_ev;
    struct event       *last_ev;      /* the hand-back's wait, bounded */
    struct event       *cancel_ev;    /* the cancel set, every second */
    char              **asked;        /* the ids it was asked about */
    rg_uint_t           nasked;
    struct event       *sizes_ev;     /* the queue's sizes, for metrics */
    rg_uint_t           sizing;       /* shards (and the parked count) not
                                         yet answered */
    uint64_t            reads;        /* XREADGROUP calls answered */
    uint64_t            read;         /* the entries they gave */
    uint64_t            started;
    uint64_t            done;
    uint64_t            lost;
    uint64_t            reclaimed;
    uint64_t            dead;
    uint64_t            parked;
    rg_serve_kept_t    *kept;         /* what it wrote lately, to write
                                         again if the store forgets it */
    rg_uint_t           nkept;
    rg_uint_t           kept_next;    /* the oldest, once full */
    size_t              kept_bytes;
    /* results being written again after a loss, until Redis takes them
     * (rg_serve_lost.c) */
    struct rg_serve_rewrite_s *rewrites;
    uint64_t            losses;       /* times the store lost its memory */
    uint64_t            requeued;     /* its tasks queued again since */
    uint64_t            forgotten;    /* tasks named lost */
    unsigned            ready:1;      /* the group is there */
    unsigned            preparing:1;
    unsigned            reading:1;
    unsigned            waiting:1;    /* the read in flight may block */
    unsigned            reclaiming:1;
    unsigned            reclaim_due:1; /* its timer came; it waits for a
                                          free slot */
    unsigned            expiring:1;   /* parked tasks' waits, asked */
    unsigned            draining:1;
    unsigned            exiting:1;
    unsigned            leaving:1;    /* the consumer is being deleted */
    unsigned            read_failed:1;
    unsigned            asking:1;     /* the cancel set, asked */
};



/* rg_serve_worker.c */
void rg_serve_prepare(rg_serve_t *sv);
void rg_serve_pump(rg_serve_t *sv);
/* a drain ends (the consumer leaves, then the loop) once nothing runs
 * and no write is in flight */
void rg_serve_check_exit(rg_serve_t *sv);

/* rg_serve_result.c */
/* a write to the queue failed: err said at level, unless the worker
 * exits (fmt has one %s, for err) */
void rg_serve_said(rg_serve_t *sv, const char *err, rg_uint_t level,
    const char *fmt);
/* a write of the worker's answered: sv->writing less, err said, and the
 * worker may exit now */
void rg_serve_answered(rg_serve_t *sv, const char *err, rg_uint_t level,
    const char *fmt);
/* a task's session ended: its result written, its entry acknowledged */
void rg_serve_answer(rg_serve_t *sv, rg_serve_task_t *t, rg_session_t *s);
/* an entry that cannot run: its result (status, why) written */
void rg_serve_refuse(rg_serve_t *sv, const rg_stream_entry_t *e,
    const char *task_id, const char *status, const char *why);
/* an entry delivered too often: its dead letter, then its result */
void rg_serve_bury(rg_serve_t *sv, const rg_stream_entry_t *e,
    const char *task_id, const char *why);
/* a task parked for an operator: listed, its entry acknowledged */
void rg_serve_park(rg_serve_t *sv, rg_serve_task_t *t, rg_msec_t deadline);

/* rg_serve_lost.c */
rg_int_t rg_serve_lost_init(rg_serve_t *sv);
void rg_serve_lost_fini(rg_serve_t *sv);
/* a result written (result: its text) or a task parked (NULL) */
void rg_serve_keep(rg_serve_t *sv, const char *task_id, const char *sid,
    rg_uint_t shard, const char *result, size_t len);
/* a task the store lost that could not be written back: named */
void rg_serve_forget(rg_serve_t *sv, const char *task_id, const char *why);
/* the kept result of task_id written again, entry acknowledged with it,
 * until Redis takes it (its write failed: a store that lost its memory
 * has no entry to take over) */
void rg_serve_rewrite_kept(rg_serve_t *sv, const char *task_id,
    const char *entry);
/* a running session was written back: its task is queued again */
void rg_serve_recovered(rg_session_t *s);
/* a read or reclaim answered NOGROUP: the groups are made again and the
 * store's epoch read (did it lose its memory?) */
void rg_serve_nogroup(rg_serve_t *sv);

#endif /* RG_SERVE_WORKER_H */
