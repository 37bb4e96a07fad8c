/* rg_store.h: the state store interface, asynchronous from day one: every
 * operation answers through its own callback with its own context, never
 * inside the call that started it, so the Redis backend and the embedded
 * memory one are interchangeable. Keys are logical ("{s-…}:meta",
 * "dd:g:…"): a backend adds its prefix. The operations are the ones the
 * sessions, the dedupe cache, the side-effect claims and the admission
 * control need, each atomic where several steps must be (one Lua script
 * in Redis). Values are bytes (msgpack where the caller structures them,
 * see rg_store_codec.h). */

#ifndef RG_STORE_H
#define RG_STORE_H

#include <rg_config.h>
#include <rg_core.h>
#include <event2/event.h>

typedef struct rg_store_s      rg_store_t;
typedef struct rg_store_op_s   rg_store_op_t;
typedef struct rg_store_entry_s  rg_store_entry_t;

/* set() and put() flags */
#define RG_STORE_NX          0x01     /* only when absent */
#define RG_STORE_KEEP        0x02     /* put(): lives as long as the
                                         session: each checkpoint renews
                                         its TTL ("{id}:kept" names it) */

/* The answer of one operation; valid during the callback only.
 * rc is RG_OK, RG_DECLINED (absent, or refused: err says why — "exists",
 * "fenced", "diverged", "lost"), or RG_ERROR (err says what failed; an
 * error after the request may have reached the server says "outcome
 * unknown"). */
typedef struct {
    rg_int_t            rc;
    const char         *err;
    rg_str_t            value;        /* get; the existing value of a
                                         refused NX set or claim */
    int64_t             num;          /* counters, lease tokens, waits */
    const rg_str_t     *items;        /* load: the messages */
    rg_uint_t           nitems;
    const rg_str_t     *fields;       /* load: meta, name and value pairs */
    rg_uint_t           nfields;      /* pairs */
    const rg_store_entry_t *entries;  /* range: the events */
    rg_uint_t           nentries;
    rg_msec_t           issued;       /* when the operation was asked */
} rg_store_res_t;

typedef void (*rg_store_pt)(void *data, const rg_store_res_t *res);


/* The store lost its memory (Redis restarted without its data): told to
 * each watcher once per loss (rg_store_epoch.c). */
typedef void (*rg_store_lost_pt)(void *data, rg_store_t *st);

#define RG_STORE_WATCHERS    8

/* What a store read of its epoch: a random id the first process to use
 * the store writes there ("epoch", with a long TTL) and every process
 * remembers. Another id than the one remembered, or none where there was
 * one, is a store that lost its memory. */
typedef struct {
    char                id[48];       /* the one remembered, "": none yet */
    /* where it is kept across this process's restarts ("": nowhere;
     * rg_store_epoch_remember) */
    char                file[PATH_MAX];
    uint64_t            losses;
    uint64_t            lost_at;      /* wall ms of the last loss, 0 */
    uint64_t            sent;         /* reads asked, */
    uint64_t            answered;     /* and answered (in order) */
    rg_store_lost_pt    cb[RG_STORE_WATCHERS];
    void               *data[RG_STORE_WATCHERS];
    rg_uint_t           n;
} rg_store_epoch_t;


/* After a turn: append msgs to the session's list and set the meta fields,
 * in one step. base is how many messages the store already holds for it;
 * a retry of a checkpoint that was applied is recognised (the list holds
 * base + nmsgs) and not appended twice; any other length is "diverged".
 * With a lease token set, a session whose lease another worker holds now
 * is refused ("fenced"). Every key of the session gets ttl: its meta,
 * messages and fence, and the values put with RG_STORE_KEEP. With
 * release, the lease goes in the same step (a final status: one round
 * trip, and no moment when the session has ended but is still held). */
typedef struct {
    rg_str_t            id;
    int64_t             lease;        /* 0: not fenced */
    rg_uint_t           release;      /* and let the lease go */
    rg_uint_t           base;
    const rg_str_t     *msgs;
    rg_uint_t           nmsgs;
    const rg_str_t     *fields;       /* name, value, name, value… */
    rg_uint_t           nfields;      /* pairs */
    rg_msec_t           ttl;
} rg_store_checkpoint_t;


/* A session-scoped value: "{id}:<name>", set when absent (claim) or
 * always (a claim's result), refused when the lease moved on. */
typedef struct {
    rg_str_t            id;
    rg_str_t            name;         /* "idem:call_1" */
    rg_str_t            value;
    int64_t             lease;        /* 0: not fenced */
    rg_msec_t           ttl;
    rg_uint_t           flags;        /* RG_STORE_NX, RG_STORE_KEEP */
} rg_store_put_t;


/* A token bucket shared by every process on the store: capacity tokens
 * refilled at rate per minute; take cost (requests: 1; tokens: an
 * estimate). num is 0 when granted, else the milliseconds to wait before
 * asking again. Buckets and slots are taken under a cool-down's name
 * (an upstream's): a cool-down set by cooldown() holds every one of
 * them until it ends, and their keys share its hash tag. */
typedef struct {
    rg_str_t            name;
    double              rate;         /* per minute */
    double              capacity;
    double              cost;
    rg_uint_t           force;        /* a correction: charged (or given
                                         back), never waited for */
} rg_store_bucket_t;


/* One event of a session, appended to its stream "{id}:events", which
 * holds at most max entries (the oldest go) and expires ttl after the
 * last append. The answer's value is the new entry's id, "ms-seq": ids
 * grow, and compare as Redis stream ids do (ms, then seq). With a lease
 * token set, a session whose lease another worker holds now is refused
 * ("fenced"). */
typedef struct {
    rg_str_t            id;           /* the session */
    int64_t             lease;        /* 0: not fenced */
    rg_str_t            type;
    rg_str_t            data;         /* JSON text */
    rg_uint_t           max;
    rg_msec_t           ttl;
} rg_store_event_t;


/* an entry of a session's events, as range() answers it */
struct rg_store_entry_s {
    rg_str_t            id;           /* "ms-seq" */
    rg_str_t            type;
    rg_str_t            data;
};


/* An outage of the store as its users see it (rg_store.c): the first
 * operation of a user that fails says once what that user does
 * meanwhile; the first answer to an operation asked after the last
 * failure says once that it is over, how long operations failed and how
 * many. (Connections closing one by one still answer what was asked
 * before: that ends nothing.) */
typedef struct {
    rg_msec_t           since;        /* 0: it answers */
    rg_msec_t           last;         /* the last failure */
    uint64_t            outage;       /* outages so far */
    uint64_t            failed;       /* operations failed in this one */
} rg_store_down_t;


typedef struct {
    uint64_t            ops;
    uint64_t            errors;
    uint64_t            gets;
    uint64_t            hits;
    uint64_t            sets;
    uint64_t            expired;
    uint64_t            evicted;      /* made room for newer keys */
    rg_uint_t           keys;
    size_t              bytes;        /* keys and values held */
} rg_store_stats_t;


struct rg_store_s {
    const char         *name;
    rg_uint_t           durable;      /* outlives the process */

    rg_store_op_t    *(*get)(rg_store_t *st, const rg_str_t *key,
                             rg_store_pt cb, void *data);
    rg_store_op_t    *(*set)(rg_store_t *st, const rg_str_t *key,
                             const rg_str_t *value, rg_msec_t ttl,
                             rg_uint_t flags, rg_store_pt cb, void *data);
    rg_store_op_t    *(*del)(rg_store_t *st, const rg_str_t *key,
                             rg_store_pt cb, void *data);
    /* num: the new value; the key gets ttl when it is created */
    rg_store_op_t    *(*incr)(rg_store_t *st, const rg_str_t *key,
                              int64_t by, rg_msec_t ttl, rg_store_pt cb,
                              void *data);

    rg_store_op_t    *(*checkpoint)(rg_store_t *st,
                                    const rg_store_checkpoint_t *cp,
                                    rg_store_pt cb, void *data);
    /* the meta fields and every message; RG_DECLINED: no such session */
    rg_store_op_t    *(*load)(rg_store_t *st, const rg_str_t *id,
                              rg_store_pt cb, void *data);
    rg_store_op_t    *(*put)(rg_store_t *st, const rg_store_put_t *p,
                             rg_store_pt cb, void *data);

    /* the session's lease for ttl: num is the fencing token (a new one
     * when taken, the same when renewed); RG_DECLINED "held" when another
     * token holds it (value: its holder), on a renewal "lost" when
     * another token holds it now, "expired" when none does; "gone…"
     * when the store lost its memory (rg_store_gone) */
    rg_store_op_t    *(*lease)(rg_store_t *st, const rg_str_t *id,
                               const rg_str_t *holder, int64_t token,
                               rg_msec_t ttl, rg_store_pt cb, void *data);
    rg_store_op_t    *(*release)(rg_store_t *st, const rg_str_t *id,
                                 int64_t token, rg_store_pt cb, void *data);

    /* all of b or nothing, under the cool-down cool ("rl:{cool}:<name>:<i>";
     * nb 0: the cool-down alone is read) */
    rg_store_op_t    *(*take)(rg_store_t *st, const rg_str_t *cool,
                              const rg_store_bucket_t *b, rg_uint_t nb,
                              rg_store_pt cb, void *data);
    /* "cd:{cool}": until ms from now, unless a longer one holds */
    rg_store_op_t    *(*cooldown)(rg_store_t *st, const rg_str_t *cool,
                                  rg_msec_t ms, rg_store_pt cb, void *data);
    /* one of at most max slots of name held by every process together
     * (max_connections shared, "sl:{cool}:<name>"): holder takes one for
     * ttl (num 0), or is told the ms to wait before it asks again (the
     * cool-down holds too); max 0 gives it back. The slot of a holder
     * that died frees itself when its ttl ends. */
    rg_store_op_t    *(*slot)(rg_store_t *st, const rg_str_t *cool,
                              const rg_str_t *name, const rg_str_t *holder,
                              rg_uint_t max, rg_msec_t ttl, rg_store_pt cb,
                              void *data);

    /* a session's events: append() one; range() the entries whose id
     * comes after `after` (NULL or "": from the first), at most count,
     * oldest first; none when the stream is not there. NULL without
     * memory, or when after is no "ms-seq" id (rg_store_event_id). */
    rg_store_op_t    *(*append)(rg_store_t *st, const rg_store_event_t *ev,
                                rg_store_pt cb, void *data);
    rg_store_op_t    *(*range)(rg_store_t *st, const rg_str_t *id,
                               const char *after, rg_uint_t count,
                               rg_store_pt cb, void *data);

    /* the callback will not be called */
    void              (*cancel)(rg_store_t *st, rg_store_op_t *op);
    /* pending operations are answered "the store is shutting down" */
    void              (*destroy)(rg_store_t *st);

    /* reads the epoch now (after an answer that says the store may
     * have lost its memory); NULL: a store that cannot lose it. It
     * answers the read that tells: known once epoch.answered reaches it
     * (a read already under way when asked may have come too early) */
    uint64_t          (*check)(rg_store_t *st);

    rg_store_stats_t    stats;
    rg_store_down_t     down;
    rg_store_epoch_t    epoch;
};


/* what a key costs the memory store beyond its name and value: its
 * entry, its slot in the table, its list of items */
#define RG_STORE_MEMORY_KEY_COST  128

/* holds at most max_keys keys and max_bytes (keys, values and
 * RG_STORE_MEMORY_KEY_COST per key; 0: the defaults, 100000 and 64m);
 * past either, the least recently written keys go. A value larger than
 * max_bytes alone is refused (RG_ERROR). */
rg_store_t *rg_store_memory_create(struct event_base *base,
    rg_uint_t max_keys, size_t max_bytes);

/* An operation of a user failed: the user's first failure of this
 * outage (said, the user's own, 0 at first, remembers it) logs fmt, a
 * warning that says what it does meanwhile. */
void rg_store_down(rg_store_t *st, rg_log_t *log, uint64_t *said,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* An operation answered (res): the first one asked after an outage's
 * last failure says it is over. */
void rg_store_up(rg_store_t *st, rg_log_t *log,
    const rg_store_res_t *res);

/* "{id}:name" for a session-scoped key, into buf */
size_t rg_store_session_key(char *buf, size_t size, const rg_str_t *id,
    const char *name, size_t len);

/* reads an event id "ms-seq" (both decimal, no sign): RG_OK, or
 * RG_ERROR when s[0..len) is none */
rg_int_t rg_store_event_id(const char *s, size_t len, uint64_t *ms,
    uint64_t *seq);

/* cb is told when the store loses its memory; RG_ERROR: too many */
rg_int_t rg_store_watch(rg_store_t *st, rg_store_lost_pt cb, void *data);
void rg_store_unwatch(rg_store_t *st, rg_store_lost_pt cb, void *data);

/* an answer that says the store lost its memory (a lease it forgot, or
 * an epoch other than the one this process knows) */
#define rg_store_gone(res)                                                  \
    ((res)->rc == RG_DECLINED && (res)->err                                 \
     && strncmp((res)->err, "gone", 4) == 0)

/* the epoch is kept in the file at path too (serve: beside its pid
 * file), so that a loss while no process of it ran is said when one
 * starts again: by the first that reads the new one */
void rg_store_epoch_remember(rg_store_t *st, const char *path);

/* A backend read the epoch id[0..len) ("" when the store held none and a
 * new one could not be written): the first is remembered; another is a
 * loss, said once on log and told to the watchers. */
void rg_store_epoch_seen(rg_store_t *st, rg_log_t *log, const char *id,
    size_t len, rg_uint_t made);

#endif /* RG_STORE_H */
