/* rg_durable.h: a session's life in the store (rg_durable.c), when the
 * store outlives the process (Redis): checkpoints after each turn, the
 * final status, and what a resume reads back. */

#ifndef RG_DURABLE_H
#define RG_DURABLE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

typedef void (*rg_durable_next_pt)(rg_session_t *s);


/* Writes what changed since the last checkpoint (new messages, what
 * compaction did, the repeat guard's memory, the meta fields) in one
 * atomic step, then calls next. A store that does not answer is asked
 * again with backoff for up to store_timeout; after that, or when the
 * session's lease moved to another worker, the session ends here. */
void rg_durable_checkpoint(rg_session_t *s, rg_durable_next_pt next);

/* the session ended: its final status, reason and answer are written,
 * then its owner's handler is called */
void rg_durable_final(rg_session_t *s);

/* a message the store holds was dropped by compaction */
void rg_durable_dropped(rg_session_t *s, uint32_t seq);

/* everything the session holds, written as if the store held nothing
 * (rg_recover.c, after the store lost it); written is called once it
 * is, before the checkpoint that waited (if one did) goes on */
void rg_durable_rewrite(rg_session_t *s, rg_durable_next_pt written);

/* no checkpoint in flight or waiting for a retry any more */
void rg_durable_stop(rg_session_t *s);

/* the meta field name of a session the store answered (res: its load),
 * or NULL */
const rg_str_t *rg_durable_meta_get(const rg_store_res_t *res,
    const char *name);

/* The session as its checkpoints left it: its conversation, the repeat
 * guard's memory, its counters and limits, its trace. RG_ERROR with why
 * in err: a record reagent cannot read, or no memory. */
rg_int_t rg_durable_restore(rg_session_t *s, const rg_store_res_t *res,
    char *err, size_t errlen);

#endif /* RG_DURABLE_H */
