/* rg_durable.h: a session's life in the store (rg_durable.c), when the
 * store outlives the process (Redis): checkpoints after each turn, the
 * final status, and the resume of a session from what was stored. */

#ifndef RG_DURABLE_H
#define RG_DURABLE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session.h>

typedef void (*rg_durable_next_pt)(rg_session_t *s);


/* the session's durable state (s->dur), made once: with the session when
 * the store is durable, else when first needed */
rg_int_t rg_durable_init(rg_session_t *s);

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

/* Opens a session by its id: from the store when it holds it (continued
 * where it stopped: the next model call is the one an uninterrupted run
 * would have sent), else started afresh with input, or with the task's
 * messages (its conversation, input its last user message) when they
 * are given (when input is NULL, a session the store does not hold
 * fails: "no such session"). The handler is called once, when it ends. */
rg_session_t *rg_session_open(rg_engine_t *e, rg_agent_conf_t *agent,
    const char *id, size_t idlen, const char *task_id, const char *input,
    size_t len, json_t *messages, rg_session_handler_pt handler,
    void *data);

#endif /* RG_DURABLE_H */
