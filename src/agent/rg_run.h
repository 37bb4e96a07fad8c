/* rg_run.h: the agent part's commands, `run` (rg_run.c) and `replay`
 * (rg_replay.c), and what every command that runs sessions shares. */

#ifndef RG_RUN_H
#define RG_RUN_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_tools.h>
#include <rg_session.h>
#include <jansson.h>

/* the bundled mock model of --mock (rg_run_mock.c) */
typedef struct {
    pid_t               pid;          /* -1: none */
    int                 port;
} rg_run_mock_t;


/* the options of run and replay, and the ones batch shares; zeroed
 * means not given */
typedef struct {
    const char         *agent;        /* -a, NULL: the default agent */
    const char         *transcript;   /* --transcript (run, replay) */
    rg_approval_e       approval;     /* --approve-all, --deny-dangerous */
    unsigned            approval_set:1;
    unsigned            mock:1;       /* --mock (run, batch) */
    rg_run_mock_t       mock_model;
} rg_run_opts_t;


/* which of the shared options a command takes, beyond approval */
#define RG_RUN_OPT_TRANSCRIPT  0x01
#define RG_RUN_OPT_MOCK        0x02
#define RG_RUN_OPT_AGENT       0x04

extern const rg_cli_t  rg_run_cli;
extern const rg_cli_t  rg_replay_cli;
extern const char      rg_run_help[];

/* argv[i] as one of the shared options (which: RG_RUN_OPT_*): the
 * words it took, or 0 */
int rg_run_option(rg_run_opts_t *o, int argc, char **argv, int i,
    rg_uint_t which);

/* The engine a command runs on, its parts started, with the approval
 * asked for (else a prompt on the terminal, unless arg, the command's
 * input, is stdin's "-"); o->agent is the default agent when not given;
 * with --mock, every llm answered by the bundled mock model. */
rg_engine_t *rg_run_engine(rg_cycle_t *cycle, rg_run_opts_t *o,
    const char *arg);
/* the engine gone, and the mock model with it */
void rg_run_engine_destroy(rg_engine_t *e, rg_run_opts_t *o);

/* rg_run_mock.c: starts the mock and points e's upstreams at it */
rg_int_t rg_run_mock_start(rg_engine_t *e, rg_run_mock_t *m);
void rg_run_mock_stop(rg_run_mock_t *m);

/* A session of agent on its input: text (len bytes), or, when messages
 * is not NULL, a conversation of {"role": system|user|assistant,
 * "content": a string} checked by the caller, after the agent's system
 * prompt. NULL when memory ran out. */
rg_session_t *rg_run_session(rg_engine_t *e, rg_agent_conf_t *agent,
    const char *task_id, const char *text, size_t len, json_t *messages,
    rg_session_handler_pt handler, void *data);
/* the same, named id (NULL: a new one) */
rg_session_t *rg_run_session_id(rg_engine_t *e, rg_agent_conf_t *agent,
    const char *id, const char *task_id, const char *text, size_t len,
    json_t *messages, rg_session_handler_pt handler, void *data);

struct rg_session_s;

/* a session's answer on stdout and its status line on stderr */
void rg_run_report(struct rg_session_s *s);

extern const rg_cli_t  rg_resume_cli;
extern const rg_cli_t  rg_status_cli;

/* one task on agent_name, to its end; the exit code */
int rg_run_task(rg_engine_t *e, const char *agent_name,
    const char *transcript, const char *task);
/* the same, replaying a recording (rg_replay.h) */
int rg_run_task_replay(rg_engine_t *e, const char *agent_name,
    const char *transcript, const char *task, rg_replay_t *replay);

#endif /* RG_RUN_H */
