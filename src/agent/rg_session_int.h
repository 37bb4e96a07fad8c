/* rg_session_int.h: what a session is made of, for the agent part alone
 * (the layering test refuses it anywhere else; the rest of reagent has
 * the face, rg_session.h). The struct; the table of a turn's phases that
 * drives it (rg_session_phase.c) and what a phase returns; and what
 * every file of a session may ask of its core:
 *
 *   rg_session.c        its data: messages, state, the round's calls,
 *                       the request's prefix, the face's accessors
 *   rg_session_open.c   made: new, or read back from the store
 *   rg_session_phase.c  the driver: runs the phases, one after another
 *   rg_session_end.c    its end, and what interrupts it from outside a
 *                       phase (another worker, the store losing it)
 *
 * A phase's or a service's callback wakes the driver
 * (rg_session_run_phases), which runs the phase that waited again; a
 * session is ended by rg_session_finish() outside the driver, by a phase
 * returning RG_PHASE_FINISH within it. The state of DESIGN §4 (s->state)
 * is written by rg_session_set_state() alone. */

#ifndef RG_SESSION_INT_H
#define RG_SESSION_INT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_session.h>
#include <rg_agent_conf.h>
#include <rg_agent.h>
#include <rg_llm_client.h>
#include <rg_tools.h>
#include <rg_context.h>
#include <rg_store.h>
#include <rg_metrics.h>
#include <rg_trace.h>

typedef struct rg_replay_s         rg_replay_t;        /* rg_replay.c */
typedef struct rg_events_sink_s    rg_events_sink_t;   /* rg_events.c */
typedef struct rg_dedupe_flight_s  rg_dedupe_flight_t; /* rg_dedupe.c */
typedef struct rg_session_call_s   rg_session_call_t;

/* a session's pool blocks, the first holding the session itself: a size
 * class of mimalloc's, not rounded up */
#define RG_SESSION_POOL_SIZE  5120


/* the phases of a session's turns, in the order of their table
 * (rg_session_phase.c, whose opening comment is the written table) */
typedef enum {
    RG_PHASE_LEASE = 0,
    RG_PHASE_RESUME,
    RG_PHASE_CHECKPOINT,
    RG_PHASE_ASK,
    RG_PHASE_LOOKUP,
    RG_PHASE_PARK,
    RG_PHASE_CLAIM,
    RG_PHASE_RUN,
    RG_PHASE_N
} rg_phase_e;

/* what a phase returns to the driver */
typedef enum {
    RG_PHASE_GO = 0,      /* done: the next phase runs */
    RG_PHASE_WAIT,        /* waiting: its callback wakes the driver */
    RG_PHASE_FINISH       /* the session ends, with the status the phase
                             set (rg_session_status) */
} rg_phase_rc_e;

typedef rg_phase_rc_e (*rg_phase_pt)(rg_session_t *s);


/* a tool call seen in this session, for repeated-call detection */
typedef struct {
    char               *sig;          /* name NUL canonical arguments */
    size_t              len;
    rg_uint_t           round;
    rg_str_t            result;
    rg_uint_t           stored_round; /* what the store holds; 0: none */
} rg_session_sig_t;


/* what only a session of a durable store keeps (rg_durable.c,
 * rg_lease.c, rg_recover.c, rg_phase_park.c): in its pool, allocated
 * with it when the store is durable, so that a session of the memory
 * store does not carry it */
typedef struct {
    rg_store_op_t      *cp_op;        /* a checkpoint in flight */
    void              (*cp_next)(rg_session_t *s);
    struct event        cp_retry;
    rg_msec_t           cp_failing;   /* the store refuses since, or 0 */
    rg_uint_t           cp_attempts;
    rg_uint_t           stored;       /* items of its list in the store */
    uint32_t           *dropped;      /* stored messages compaction took */
    rg_uint_t           ndropped;
    rg_uint_t           dropped_cap;
    rg_store_op_t      *lease_op;     /* taken or renewed, asked */
    struct event        lease_ev;     /* the next heartbeat */
    rg_msec_t           lease_since;  /* asked first */
    void              (*lease_next)(rg_session_t *s, rg_int_t rc,
                                    const char *why);
    struct event       *park_ev;      /* the approval record, asked again */
    rg_msec_t           park_since;   /* asked first */
    /* written back into a store that lost it (rg_recover.c) */
    rg_store_op_t      *rec_op;       /* the new lease, asked */
    struct event        rec_ev;       /* asked again */
    rg_msec_t           rec_since;
    void              (*cp_after)(rg_session_t *s);  /* a checkpoint
                                         asked for while recovering */
    void              (*rec_done)(rg_session_t *s);  /* the rewrite's */
    unsigned            recovering:1;
    unsigned            rec_set:1;
    unsigned            rec_full:1;   /* the next checkpoint writes every
                                         meta field */
} rg_session_durable_t;


/* what the current turn needs beyond the model's calls */
struct rg_session_call_s {
    rg_session_t       *session;
    char               *key;          /* dedupe key, NULL: not cached */
    size_t              klen;
    rg_store_op_t      *lookup;       /* its answer still to come */
    rg_int_t            tool;         /* index in the agent's tools, -1 */
    char               *sig;
    size_t              sig_len;
    rg_store_op_t      *claim;        /* its side-effect claim, asked */
    rg_dedupe_flight_t *flight;       /* the identical calls in flight */
    rg_session_call_t  *wnext;        /* the flight's next waiter */
    struct event       *wait_ev;      /* its next poll, or its wake-up */
    rg_msec_t           wait_until;   /* for another worker's result */
    rg_msec_t           wait_step;
    rg_int_t            twin;         /* the same call earlier in this
                                         turn, whose result is its own;
                                         -1: none */
    rg_uint_t           waiting:1;    /* counted in lookups */
    rg_uint_t           resolved:1;   /* and answered, its wake-up due */
    rg_uint_t           running:1;    /* the owner of a flight runs it */
    rg_uint_t           local:1;      /* its key is not the store's */
    rg_uint_t           pending:1;    /* holds the store's pending claim */
    rg_uint_t           capped:1;     /* the last call its cap allows */
    rg_uint_t           claimed:1;    /* it may run: the store holds our
                                         claim; its result goes there */
    rg_uint_t           claim_failed:1;  /* the store did not answer:
                                            asked again */
};


struct rg_session_s {
    rg_engine_t        *engine;
    rg_agent_conf_t    *agent;
    rg_llm_conf_t      *llm;          /* the agent's, or its fallback */
    rg_pool_t          *pool;
    rg_log_t            log;
    char                id[48];       /* "s-" and 128 random bits */
    char               *task_id;      /* the caller's, for logs */
    char               *tenant;       /* the task's, NULL: none */
    rg_store_op_t      *tenant_op;    /* its budget, asked */
    struct event       *tenant_ev;    /* asked again (made when first
                                         armed) while the store is away */
    rg_msec_t           tenant_failing;  /* since when, 0: it answers */
    rg_uint_t           tenant_tries;

    rg_session_state_e  state;        /* rg_session_set_state() alone */
    char               *reason;

    /* where it stands in the table of phases (rg_session_phase.c) */
    uint8_t             phase;        /* rg_phase_e: running or waiting */
    uint8_t             phase_next;   /* after it, when it jumped */
    uint8_t             phase_step;   /* the phase's own, 0 on entry */

    rg_msgs_t           msgs;
    const char         *prefix;       /* request body up to the messages */
    size_t              prefix_len;

    rg_buf_t            body;
    rg_llm_req_t        req;
    rg_tool_turn_t     *turn;
    rg_pool_t          *round_pool;   /* the last answer parsed, its turn's
                                         calls and keys; freed when the
                                         next model call is sent */
    char               *call_prefix;  /* for generated tool_call ids */
    rg_tool_request_t  *calls;        /* of the current turn */
    rg_session_call_t  *extra;
    rg_uint_t           ncalls;
    rg_uint_t           calls_over;   /* the calls past max_tool_calls
                                         the answer asked for, the one
                                         kept for them included */
    rg_uint_t           lookups;      /* dedupe answers still to come */
    rg_uint_t           claims;       /* side-effect claims to come */
    rg_str_t            claim_rec;    /* their record, in round_pool */
    char               *claim_err;    /* why the store did not take one */
    struct event       *claim_ev;     /* asked again (made when first
                                         armed) while the store is away */
    rg_msec_t           claim_failing;   /* since when, 0: it answers */
    rg_uint_t           claim_tries;

    /* limits, the agent's unless a task overrides them */
    rg_uint_t           max_rounds;
    int64_t             max_tokens;
    rg_msec_t           deadline;
    struct event       *deadline_ev;  /* made when first armed */

    rg_uint_t           depth;        /* 0, or how deep a child session */
    rg_tool_run_t      *parent_run;   /* the run_agent call of a child */
    rg_session_t       *parent;       /* its session, which outlives it */
    rg_uint_t           round;        /* model answers so far */
    rg_uint_t           answers;      /* of them, those that came (a call
                                         that failed counts in round) */
    /* model calls and tokens count those of the child sessions too:
     * they are the task's, and its max_tokens bounds them all */
    rg_uint_t           model_calls;  /* including summaries */
    rg_uint_t           child_model_calls;
    rg_uint_t           tool_calls;
    rg_uint_t           tool_errors;
    rg_uint_t           dedupe_hits;
    rg_uint_t           repeats;
    int64_t             prompt_tokens;
    int64_t             completion_tokens;
    int64_t             cached_tokens;      /* of prompt_tokens, read from
                                               a prompt cache */
    int64_t             cache_write_tokens; /* of them, written to one */
    double              cost;         /* dollars, by the llms' prices */
    double              max_cost;     /* 0: no budget */
    int64_t             child_tokens;   /* of them, the children's */
    rg_str_t            answer;
    rg_str_t            finish_reason;
    double              bytes_per_token;
    rg_uint_t           summaries;
    rg_uint_t           summary_round;

    rg_uint_t          *tool_counts;  /* per agent tool; never wraps */
    rg_session_sig_t   *sigs;
    rg_uint_t           nsigs;
    rg_uint_t           sigs_cap;

    rg_msec_t           started;
    rg_msec_t           ended;
    rg_msec_t           call_started;

    rg_session_handler_pt handler;    /* once, when it ends */
    void               *data;
    /* the store lost it and it was written back (rg_recover.c): its
     * owner queues its task again; NULL: nothing to do */
    rg_session_handler_pt recovered;
    rg_uint_t           slot;         /* the handler's: where it keeps s */

    json_t             *transcript;   /* when recording */

    /* its trace (rg_session_trace.c): the invoke_agent span, the chat
     * span of the model call in flight, the span a resume follows */
    rg_trace_span_t     span;
    rg_trace_span_t     chat;
    char                trace_link[RG_TRACE_SPAN_LEN + 1];
    /* its events (rg_events.c): to the store when the task asks for
     * them (events), to the owner's hook when it set one */
    rg_session_event_pt on_event;
    void               *on_event_data;
    rg_events_sink_t   *events_sink;

    /* in the store, when it outlives the process (rg_durable.c); NULL
     * for a session of the memory store (rg_session_durable makes it) */
    rg_session_durable_t *dur;
    int64_t             lease;        /* fencing token, 0: none */
    rg_msec_t           created;      /* wall clock */
    rg_msec_t           elapsed;      /* run time before a resume */
    /* the store's losses when its task was read (rg_session_set_read:
     * a loss since, and its entry is gone: rg_lease.c); taken over from
     * a worker that ran it: none found after a loss since is a session
     * whose side effects may have run (rg_session_open.c) */
    uint64_t            taken_losses;
    unsigned            taken_over:1;
    unsigned            after_loss:1;  /* rg_session_task_t's */
    unsigned            taken_unknown:1;  /* ended so */

    unsigned            durable:1;
    unsigned            cp_partial:1; /* a turn about to run its tools */
    unsigned            cp_retry_set:1;
    unsigned            lease_set:1;
    unsigned            lease_waited:1;
    unsigned            fenced:1;     /* another worker owns it now */
    unsigned            resumed:1;
    rg_replay_t        *replay;       /* when replaying: its recording */
    const char         *transcript_file;  /* batch --transcripts: where */
    unsigned            handler_called:1;
    unsigned            handler_due:1;    /* once the driver let go */
    unsigned            ending:1;     /* rg_session_end() ran */
    unsigned            phase_busy:1; /* the driver runs a phase */
    unsigned            phase_woken:1;    /* its wait ended within */
    unsigned            phase_jumped:1;   /* phase_next is set */
    unsigned            deadline_set:1;
    unsigned            tenant_ok:1;  /* its budget allows the next call */
    unsigned            tenant_set:1; /* tenant_ev is armed */
    unsigned            tenant_cost:1;    /* its cost's counter asked */
    unsigned            claim_set:1;  /* claim_ev is armed */
    unsigned            context_retried:1;
    unsigned            summarizing:1;
    unsigned            fallback_used:1;

    /* parked for an operator's decision on dangerous calls
     * (rg_phase_park.c) */
    rg_str_t            park_task;    /* its task line, for the record */
    rg_store_op_t      *park_op;      /* the record, asked */
    char               *park_record;  /* to store, when a new one */
    rg_msec_t           park_deadline; /* wall clock */
    unsigned            park:1;       /* such calls park it (serve) */
    unsigned            parked:1;     /* it waits in the store: the
                                         handler sees it not ended */
    unsigned            events:1;     /* recorded in the store */
    unsigned            events_ended:1;   /* "final" was emitted */
};


#define rg_session_final(s)  ((s)->state >= RG_SESSION_DONE)

/* whether anything sees s's events: callers test it before they build
 * the fields of one (rg_events.h) */
#define rg_session_events_on(s)  ((s)->events || (s)->on_event)

/* the letter of a task message's role: 'u', 'a', else 's' */
#define rg_session_role(name)                                                \
    ((name)[0] == 'u' ? 'u' : (name)[0] == 'a' ? 'a' : 's')


/* every change of state goes through here: the metrics count the
 * sessions in each state (the layering test refuses any other write) */
static inline void
rg_session_set_state(rg_session_t *s, rg_session_state_e state)
{
    rg_metrics_session_state((int) s->state, (int) state);
    s->state = state;
}


/* its data (rg_session.c) ------------------------------------------- */

/* appends a message of role 's', 'u', 'a' (an answer given with the
 * task) or 't' (a tool's, answering tool_id) to the conversation */
rg_int_t rg_session_append_text(rg_session_t *s, uint8_t role,
    const char *tool_id, const char *text, size_t len);
/* the same, for a tool's result: failed says the call failed (a format
 * that can tell the model so does) */
rg_int_t rg_session_append_msg(rg_session_t *s, uint8_t role,
    const char *tool_id, const char *text, size_t len, rg_uint_t failed);
/* m's piece of a request in the llm's format, copied and scrubbed as its
 * message is */
rg_int_t rg_session_wire(rg_session_t *s, rg_msg_t *m, const char *p,
    size_t len);
/* the pool of this round's answer and turn (NULL: out of memory) */
rg_pool_t *rg_session_round_pool(rg_session_t *s);
/* the calls of an answer become the turn's (s->calls, s->extra, in the
 * round's pool): RG_ERROR, out of memory */
rg_int_t rg_session_take_calls(rg_session_t *s, rg_llm_response_t *resp);
/* the result of run as the model sees it, trimmed to limit (then in b,
 * which is reset) */
void rg_session_seen(rg_tool_run_t *run, size_t limit, rg_buf_t *b,
    const char **text, size_t *len);
/* the calls an answer asked for, those past the cap included */
rg_uint_t rg_session_asked(rg_llm_response_t *resp);
/* call c is answered beforehand with a text (printf-style) */
rg_int_t rg_session_preset(rg_session_t *s, rg_tool_request_t *c,
    rg_uint_t failed, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* checked arguments that no turn took over */
void rg_session_drop_args(rg_session_t *s);
/* the prefix when the session differs from its agent: a fallback llm,
 * or tools that reached their cap and are no longer offered */
rg_int_t rg_session_build_prefix(rg_session_t *s);
/* what the next model call will cost, about: its input as the request
 * stands, its output as the answers so far were; dollars, 0 without a
 * price */
double rg_session_next_cost(rg_session_t *s);
/* model calls from now on go to llm (a fallback) */
void rg_session_use_llm(rg_session_t *s, rg_llm_conf_t *llm);
/* its deadline, ms from now; RG_ERROR: out of memory */
rg_int_t rg_session_arm_deadline(rg_session_t *s, rg_msec_t ms);
/* the store's answer to *op (if asked) is not waited for any more */
void rg_session_store_cancel(rg_session_t *s, rg_store_op_t **op);
/* its durable part (s->dur), made once: with the session when the
 * store is durable, else when first needed; RG_ERROR: no memory */
rg_int_t rg_session_durable(rg_session_t *s);

/* made (rg_session_open.c) ------------------------------------------- */

/* a new session of agent with the system message and input (NULL: the
 * caller appends its conversation); NULL: out of memory */
rg_session_t *rg_session_create(rg_engine_t *e, rg_agent_conf_t *agent,
    const char *task_id, const char *input, size_t len,
    rg_session_handler_pt handler, void *data);

/* the driver (rg_session_phase.c) ------------------------------------ */

/* Runs s's current phase, and the ones after it while they go on: what
 * a phase's callback calls once what it waited for came (the phase runs
 * again and sees it). Called within a phase (an answer that came at
 * once), it only marks the wait over: the driver runs the phase again
 * when it returns. A session that ended is left alone. */
void rg_session_run_phases(rg_session_t *s);
/* What a phase's callback calls when what the phase waited for came and
 * the phase is over: the driver goes on with the next (it does not run
 * the phase again). Called within the phase, as rg_session_run_phases. */
void rg_session_phase_done(rg_session_t *s);
/* the phase to run when the current one goes on, instead of the
 * table's next */
void rg_session_phase_jump(rg_session_t *s, rg_phase_e phase);

/* s->phase_step of a phase that is over (rg_session_phase_done) */
#define RG_PHASE_STEP_DONE  0xff

/* its end (rg_session_end.c) ----------------------------------------- */

/* the status s ends with, and why (printf-style; NULL: no reason); the
 * first one set stands. Returns RG_PHASE_FINISH, what a phase then
 * returns. */
rg_phase_rc_e rg_session_status(rg_session_t *s, rg_session_state_e state,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* ends s, once: what is in flight cancelled, the final status stored
 * (when the store is durable), then its owner's handler, which may
 * destroy it */
void rg_session_end(rg_session_t *s);
/* the two at once, outside a phase: nothing of s may be used after it */
void rg_session_finish(rg_session_t *s, rg_session_state_e state,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* calls the owner's handler, once (within the driver: when it let go) */
void rg_session_handler(rg_session_t *s);
/* another worker owns it: it writes nothing more, its handler is told */
void rg_session_drop(rg_session_t *s, const char *why);
/* the store says it lost the session: it is written back (rg_recover.c) */
void rg_session_lost(rg_session_t *s);
/* taken over, and the store lost its memory since: ended failed, its
 * outcome said unknown, not run (rg_session_open.c) */
void rg_session_taken_unknown(rg_session_t *s);

#endif /* RG_SESSION_INT_H */
