/* rg_session.h: one agent loop. The state machine of DESIGN §4 on the
 * reactor: ask the model, run the tool calls it returns, append the
 * results, repeat until an answer or a guard stops it. Every ending has a
 * status and a reason a person can read. */

#ifndef RG_SESSION_H
#define RG_SESSION_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_llm.h>
#include <rg_tools.h>

typedef struct rg_session_s  rg_session_t;
typedef struct rg_msg_s      rg_msg_t;

typedef void (*rg_session_handler_pt)(rg_session_t *s);

typedef enum {
    RG_SESSION_QUEUED = 0,
    RG_SESSION_MODEL_WAIT,
    RG_SESSION_TOOLS_RUNNING,
    RG_SESSION_AWAITING_APPROVAL,
    RG_SESSION_DONE,              /* the final states follow */
    RG_SESSION_FAILED,
    RG_SESSION_MAX_ROUNDS,
    RG_SESSION_CANCELLED
} rg_session_state_e;

#define rg_session_final(s)  ((s)->state >= RG_SESSION_DONE)


/* a message, serialized once when it is appended */
struct rg_msg_s {
    rg_msg_t           *next;
    rg_str_t            json;
    uint8_t             role;         /* 's', 'u', 'a', 't' */
    uint16_t            ncalls;       /* an assistant's tool calls */
};


struct rg_session_s {
    rg_engine_t        *engine;
    rg_agent_conf_t    *agent;
    rg_pool_t          *pool;
    rg_log_t            log;
    char                id[32];
    char               *task_id;      /* the caller's, for logs */

    rg_session_state_e  state;
    char               *reason;

    rg_msg_t           *msgs;
    rg_msg_t          **last;
    rg_uint_t           nmsgs;
    size_t              msgs_bytes;

    rg_buf_t            body;
    rg_llm_req_t        req;
    rg_tool_turn_t     *turn;
    rg_tool_request_t  *calls;        /* of the current turn */
    rg_uint_t           ncalls;

    rg_uint_t           depth;        /* 0, or how deep a child session */
    rg_uint_t           round;        /* model answers so far */
    rg_uint_t           tool_calls;
    rg_uint_t           tool_errors;
    int64_t             prompt_tokens;
    int64_t             completion_tokens;
    rg_str_t            answer;
    rg_str_t            finish_reason;

    rg_msec_t           started;
    rg_msec_t           ended;
    rg_msec_t           call_started;

    rg_session_handler_pt handler;    /* once, when it ends */
    void               *data;

    void               *transcript;   /* json_t *, when recording */
    unsigned            handler_called:1;
};


rg_session_t *rg_session_create(rg_engine_t *e, rg_agent_conf_t *agent,
    const char *task_id, const char *input, size_t len,
    rg_session_handler_pt handler, void *data);
rg_int_t rg_session_start(rg_session_t *s);
void rg_session_cancel(rg_session_t *s, const char *reason);
void rg_session_destroy(rg_session_t *s);

const char *rg_session_state_name(rg_session_state_e state);
void rg_session_init_runner(void);
rg_int_t rg_session_record(rg_session_t *s);
/* the whole conversation as JSON text (malloc'ed), for --transcript */
char *rg_session_transcript(rg_session_t *s);

#endif /* RG_SESSION_H */
