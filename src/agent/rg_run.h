/* rg_run.h: what the commands that run sessions share: `run` (rg_run.c),
 * `replay` (rg_replay_cli.c), `resume` (rg_resume.c) and the queue's
 * `batch`: their options, an engine started with the approval they ask
 * for, the bundled mock model, a session's report. */

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

/* a command's engine (rg_run_engine), run on it, the engine gone: the
 * exit code run gave (1: no engine) */
int rg_run_command(rg_cycle_t *cycle, rg_run_opts_t *o, const char *arg,
    int (*run)(rg_engine_t *e, rg_run_opts_t *o, const char *arg));

/* a session a command runs to its end: its handler is rg_run_done, its
 * data this */
typedef struct {
    rg_session_t       *session;
    struct event       *sigint;
    struct event       *sigterm;
    rg_uint_t           done;
} rg_run_ctx_t;

void rg_run_done(rg_session_t *s);
/* ctx->session to its end on e's reactor, SIGINT and SIGTERM cancelling
 * it; start: it is started first (one opened `stored` starts with the
 * store's answer). RG_ERROR: no memory (it was destroyed). */
rg_int_t rg_run_wait(rg_engine_t *e, rg_run_ctx_t *ctx, rg_uint_t start);

/* a session's answer on stdout and its status line on stderr */
void rg_run_report(rg_session_t *s);

struct rg_replay_s;

/* one task on agent_name, to its end; the exit code */
int rg_run_task(rg_engine_t *e, const char *agent_name,
    const char *transcript, const char *task);
/* the same, replaying a recording (rg_replay.h) */
int rg_run_task_replay(rg_engine_t *e, const char *agent_name,
    const char *transcript, const char *task, struct rg_replay_s *replay);

#endif /* RG_RUN_H */
