/* rg_context.h: keeps a conversation inside the model's context window.
 * Messages are serialized once when appended; a round (an assistant
 * message with tool_calls and the tool messages answering it) is one unit
 * and is never split. Compaction first shortens the oldest tool results,
 * then drops the oldest whole rounds, always keeping the system prompt,
 * the task and the last rounds. */

#ifndef RG_CONTEXT_H
#define RG_CONTEXT_H

#include <rg_config.h>
#include <rg_core.h>

typedef struct rg_msg_s  rg_msg_t;

struct rg_msg_s {
    rg_msg_t           *next;
    rg_str_t            json;
    char               *wire;         /* its piece of a request body in
                                         the format wire_fmt says (json
                                         itself for Chat Completions) */
    uint32_t            ncalls;       /* an assistant's tool calls */
    uint32_t            seq;          /* its place in the store, + 1; 0:
                                         not stored (rg_durable.c) */
    uint32_t            wire_len;
    uint8_t             role;         /* 's', 'u', 'a', 't' */
    uint8_t             wire_fmt;     /* that format, + 1; 0: none made
                                         (json changed) */
    uint8_t             shortened:1;  /* its content was trimmed */
    uint8_t             inserted:1;   /* a summary, after the task */
    uint8_t             short_stored:1; /* the store has its shortening */
};

typedef struct {
    rg_msg_t           *head;
    rg_msg_t          **last;
    rg_uint_t           n;
    size_t              bytes;        /* sum of json.len */
} rg_msgs_t;

typedef struct {
    rg_uint_t           shortened;    /* tool results trimmed */
    rg_uint_t           dropped_rounds;
    rg_uint_t           dropped_msgs;
    size_t              saved;        /* bytes */
    rg_msg_t           *dropped;      /* the dropped messages, in order */
} rg_context_result_t;

void rg_msgs_init(rg_msgs_t *m);

/* appends a message; a copied one (copy 1) has every secret scrubbed,
 * one kept as is (copy 0) is the configuration's */
rg_int_t rg_msgs_append(rg_msgs_t *m, rg_pool_t *pool, uint8_t role,
    const char *json, size_t len, rg_uint_t copy);
rg_msg_t *rg_msgs_last(rg_msgs_t *m);

/* Compacts until m->bytes <= target or nothing more may go. Messages
 * that are dropped stay in the pool (for a summary). */
rg_int_t rg_context_compact(rg_msgs_t *m, rg_pool_t *pool, size_t target,
    rg_uint_t keep_rounds, rg_context_result_t *res);

/* Inserts msg right after the task (the first user message). */
void rg_context_insert_after_task(rg_msgs_t *m, rg_msg_t *msg);

/* checks the invariants compaction promises; for tests */
rg_int_t rg_context_check(rg_msgs_t *m, char *err, size_t errlen);

#endif /* RG_CONTEXT_H */
