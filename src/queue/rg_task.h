/* rg_task.h: one task of `reagent batch`, as a line of JSONL reads:
 * {"id", "agent", "input", "max_rounds", "max_tokens", "deadline",
 * "tenant", "traceparent", "approval", "events"}, no other key. "input" is a string, or the messages of a
 * conversation as providers' batch APIs take them: [{"role": "user",
 * "content": …}, …]. The parser checks the line and its fields; it knows
 * no agent and starts nothing. A line that is not a task says why, with
 * its line number. */

#ifndef RG_TASK_H
#define RG_TASK_H

#include <rg_config.h>
#include <rg_core.h>
#include <jansson.h>

typedef struct {
    const char         *id;           /* the task's, or "line-N" */
    const char         *agent;        /* NULL: the default agent */
    size_t              agent_len;
    const char         *input;        /* never empty: the text, or the
                                         last user message's */
    size_t              input_len;
    json_t             *messages;     /* the conversation, or NULL: each
                                         {"role": system|user|assistant,
                                         "content": a string}, the last
                                         one the user's */

    rg_uint_t           max_rounds;   /* 0: the agent's */
    int64_t             max_tokens;   /* -1: the agent's */
    double              max_cost;     /* dollars; -1: the agent's */
    rg_msec_t           deadline;     /* RG_CONF_UNSET_MSEC: the agent's */
    const char         *tenant;       /* whose budget; NULL: none */
    const char         *traceparent;  /* W3C, valid; NULL: none */
    size_t              traceparent_len;
    rg_uint_t           traceparent_invalid;  /* one was given, ignored */
    rg_uint_t           park;         /* "approval": "park": a dangerous
                                         call parks the session until an
                                         operator decides (serve) */
    rg_uint_t           events;       /* record its events (false) */
    rg_uint_t           after_loss;   /* queued again after Redis lost
                                         it: its side effects are said
                                         unknown, never run */

    rg_uint_t           line;         /* which line it was, for messages */

    json_t             *json;         /* owns the strings */
    char                idbuf[32];
    char                error[512];   /* when the line is not a task */
} rg_task_t;

/* Reads one line (no newline, any bytes). RG_OK: a task, freed with
 * rg_task_free(); RG_DECLINED: not one, t->error says why and t->id is
 * still set (the line's own id when it had one); RG_ERROR: out of memory.
 * Strings point into t until it is freed. */
rg_int_t rg_task_parse(rg_task_t *t, const char *line, size_t len,
    rg_uint_t lineno);
void rg_task_free(rg_task_t *t);

/* the task of text (a JSON object) with "after_loss": true, malloc'd
 * (free()); NULL when text is not an object or without memory */
char *rg_task_after_loss(const char *text);

/* an id a queued task may have, as the API's paths name it: 1 to
 * RG_TASK_ID_MAX bytes, no '/' nor control character, not "." nor ".."
 * (a batch's ids need only be non-empty) */
#define RG_TASK_ID_MAX  256
#define RG_TASK_ID_RULE                                                      \
    "\"id\" must be 1 to 256 bytes of text without '/' or control "         \
    "characters, and not \".\" or \"..\" (or an integer)"
rg_uint_t rg_task_id_valid(const char *id, size_t len);

struct rg_session_s;

/* what a task says of its session: its limits (max_rounds, max_tokens,
 * deadline tightened or loosened), its tenant, its trace (an invalid
 * traceparent is logged: a new trace), whether its events are recorded */
void rg_task_apply(const rg_task_t *t, struct rg_session_s *s);

#endif /* RG_TASK_H */
