/* rg_session.h: a session, one agent loop (DESIGN §4), as the rest of
 * reagent sees it: opened from an args struct, given its task's settings,
 * started, cancelled and destroyed; what it came to, read as one struct
 * (its outcome); the hooks its owner sets. What a session is made of,
 * and the phases of its turns, are the agent part's alone
 * (rg_session_int.h, rg_session_phase.c): serve, http and queue use this
 * face and nothing else of a session. */

#ifndef RG_SESSION_H
#define RG_SESSION_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_agent_conf.h>
#include <jansson.h>

typedef struct rg_session_s  rg_session_t;

/* its owner's: once, when it ended, or parked (rg_session_parked()) */
typedef void (*rg_session_handler_pt)(rg_session_t *s);

/* An owner's view of its session's events in this process (rg_events.h):
 * event is the whole event (type, task, session, ts and its fields),
 * valid during the call (json_incref() keeps it). It must not end or
 * destroy s. */
typedef void (*rg_session_event_pt)(rg_session_t *s, const char *type,
    json_t *event, void *data);

typedef enum {
    RG_SESSION_QUEUED = 0,
    RG_SESSION_MODEL_WAIT,
    RG_SESSION_TOOLS_RUNNING,
    RG_SESSION_AWAITING_APPROVAL,
    RG_SESSION_DONE,              /* the final states follow */
    RG_SESSION_FAILED,
    RG_SESSION_MAX_ROUNDS,
    RG_SESSION_BUDGET_EXCEEDED,
    RG_SESSION_DEADLINE_EXCEEDED,
    RG_SESSION_LOOP_DETECTED,
    RG_SESSION_CANCELLED,
    RG_SESSION_FILTERED,          /* the provider's filter stopped it */
    RG_SESSION_APPROVAL_TIMED_OUT /* parked, no decision in time */
} rg_session_state_e;

#define RG_SESSION_NSTATES  (RG_SESSION_APPROVAL_TIMED_OUT + 1)

#define rg_session_state_final(st)  ((st) >= RG_SESSION_DONE)


/* what a session is opened with (rg_session_open) */
typedef struct {
    rg_agent_conf_t        *agent;
    const char             *id;       /* NUL-ended; NULL: a new one */
    const char             *task_id;  /* the caller's, for logs and its
                                         result; NULL: none */
    const char             *input;    /* the task */
    size_t                  len;
    json_t                 *messages; /* or its conversation, after the
                                         agent's system prompt: [{"role":
                                         system|user|assistant,
                                         "content": a string}], checked
                                         by the caller; NULL: input */
    rg_session_handler_pt   handler;
    void                   *data;     /* the handler's: rg_session_data */
    unsigned                stored:1; /* read from the store first: one
                                         it holds goes on where it
                                         stopped, one it does not starts
                                         afresh (input NULL: fails, no
                                         such session); either starts
                                         with the store's answer, not
                                         through rg_session_start() */
} rg_session_args_t;


/* a task's own settings over its agent's (rg_session_set_task); a
 * session read back from the store keeps the limits it started with */
typedef struct {
    rg_uint_t               max_rounds;   /* 0: the agent's */
    int64_t                 max_tokens;   /* < 0: the agent's */
    double                  max_cost;     /* < 0: the agent's */
    rg_msec_t               deadline;     /* RG_CONF_UNSET_MSEC: the
                                             agent's */
    const char             *tenant;       /* NULL: none */
    const char             *traceparent;  /* the caller's trace, or NULL */
    size_t                  traceparent_len;
    unsigned                traceparent_invalid:1;  /* said in the log */
    unsigned                events:1;     /* recorded in the store */
    /* queued again after the store lost it: an earlier run may have
     * made its side effects, and their claims are gone: each is said
     * unknown, never run (rg_claim.c) */
    unsigned                after_loss:1;
} rg_session_task_t;


/* what it came to (rg_session_outcome): counters as they stand, the rest
 * once it ended */
typedef struct {
    rg_session_state_e      state;
    const char             *status;       /* the state's name */
    const char             *reason;       /* not done: why; done: a
                                             remark; NULL: none */
    rg_str_t                answer;       /* scrubbed; data NULL: none */
    rg_str_t                finish_reason;
    rg_uint_t               rounds;
    rg_uint_t               answers;      /* model answers that came */
    rg_uint_t               model_calls;  /* tokens, calls and cost are
                                             the task's: its child
                                             agents' too */
    rg_uint_t               tool_calls;
    rg_uint_t               tool_errors;
    int64_t                 prompt_tokens;
    int64_t                 completion_tokens;
    int64_t                 cached_tokens;
    int64_t                 cache_write_tokens;
    double                  cost;         /* dollars */
    rg_msec_t               ms;           /* its running time, before a
                                             resume included */
    rg_msec_t               run_ms;       /* of it, in this process */
    rg_msec_t               park_deadline;    /* parked: until (wall
                                                 clock ms) */
    unsigned                priced:1;     /* its llm has a price */
    unsigned                durable:1;    /* the store keeps it */
    unsigned                resumed:1;    /* read back from the store */
    unsigned                parked:1;
    unsigned                fenced:1;     /* another worker has it now */
    unsigned                taken_unknown:1;  /* taken over, forgotten:
                                                 ended, its outcome said
                                                 unknown; its owner
                                                 writes its result */
} rg_session_outcome_t;


/* its life (rg_session_open.c, rg_session_phase.c, rg_session_end.c) */

/* NULL when memory ran out, the id is too long, or a message is not
 * one (args->messages) */
rg_session_t *rg_session_open(rg_engine_t *e, const rg_session_args_t *a);
/* a session not opened `stored` runs; RG_ERROR: its deadline could not
 * be armed (it ended: its handler was called). A session may end within
 * the call: its handler is called then, and may destroy it. */
rg_int_t rg_session_start(rg_session_t *s);
/* ends it cancelled, with reason (NULL: "cancelled"); its handler is
 * called */
void rg_session_cancel(rg_session_t *s, const char *reason);
/* frees it, ended or not; its handler is not called */
void rg_session_destroy(rg_session_t *s);

/* what it is (rg_session.c) */
const char *rg_session_id(rg_session_t *s);
void *rg_session_data(rg_session_t *s);
rg_session_state_e rg_session_state(rg_session_t *s);
rg_uint_t rg_session_parked(rg_session_t *s);
rg_uint_t rg_session_fenced(rg_session_t *s);
void rg_session_outcome(rg_session_t *s, rg_session_outcome_t *o);
/* its result as every command writes it (rg_result.c); NULL: no memory */
json_t *rg_session_result(rg_session_t *s);
const char *rg_session_state_name(rg_session_state_e state);
/* the final state of that name; RG_SESSION_QUEUED for any other name */
rg_session_state_e rg_session_final_state(const char *name, size_t len);
/* dollars as JSON: a real rounded to micro-dollars (0.000123, not
 * 0.00012299999999) */
json_t *rg_session_dollars(double cost);

/* what its owner sets, before it starts */
void rg_session_set_task(rg_session_t *s, const rg_session_task_t *t);
/* its dangerous calls park it for an operator's decision (serve): line
 * is its task, kept for the approval record */
void rg_session_set_park(rg_session_t *s, const char *line, size_t len);
/* the store lost it and it was written back (rg_recover.c): h queues
 * its task again; NULL: nothing to do */
void rg_session_on_recovered(rg_session_t *s, rg_session_handler_pt h);
/* its task was read from the queue when the store's count of losses was
 * losses: one more by the time its lease is taken, and its entry is gone
 * (rg_lease.c: queued again); taken_over, a worker ran it before (an
 * entry delivered again): its record is expected, and none found after a
 * loss since ends it failed, outcome unknown (rg_session_open.c) */
void rg_session_set_read(rg_session_t *s, uint64_t losses,
    rg_uint_t taken_over);
/* its events in this process (NULL: none) */
void rg_session_on_event(rg_session_t *s, rg_session_event_pt h,
    void *data);
/* a number its owner keeps with it (where it keeps s) */
void rg_session_set_slot(rg_session_t *s, rg_uint_t slot);
rg_uint_t rg_session_slot(rg_session_t *s);

/* its transcript (rg_transcript.c): recorded from now on, file (copied)
 * where its owner will write it; RG_ERROR: no memory */
rg_int_t rg_session_record(rg_session_t *s, const char *file);
/* the file given then, NULL: not recorded */
const char *rg_session_record_file(rg_session_t *s);
/* the transcript as text (malloc'ed, secrets scrubbed); NULL: no memory */
char *rg_session_transcript(rg_session_t *s);

/* its lease renewed now, not at its time: the store may have lost it
 * (rg_lease.c; a renewal answered "gone" writes it back) */
void rg_session_renew(rg_session_t *s);

#endif /* RG_SESSION_H */
