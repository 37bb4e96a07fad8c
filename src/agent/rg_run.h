/* rg_run.h: the agent part's commands, `run` (rg_run.c) and `replay`
 * (rg_replay.c), and what every command that runs sessions shares. */

#ifndef RG_RUN_H
#define RG_RUN_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_tools.h>

/* the options of run and replay, and the ones batch shares; zeroed
 * means not given */
typedef struct {
    const char         *agent;        /* -a, NULL: the default agent */
    const char         *transcript;   /* --transcript (run, replay) */
    rg_approval_e       approval;     /* --approve-all, --deny-dangerous */
    unsigned            approval_set:1;
} rg_run_opts_t;

extern const rg_cli_t  rg_run_cli;
extern const rg_cli_t  rg_replay_cli;
extern const char      rg_run_help[];

/* argv[i] as one of the shared options: the words it took, or 0 */
int rg_run_option(rg_run_opts_t *o, int argc, char **argv, int i,
    rg_uint_t transcript);

/* The engine a command runs on, its parts started, with the approval
 * asked for (else a prompt on the terminal, unless arg, the command's
 * input, is stdin's "-"); o->agent is the default agent when not given. */
rg_engine_t *rg_run_engine(rg_cycle_t *cycle, rg_run_opts_t *o,
    const char *arg);

struct rg_session_s;

/* a session's answer on stdout and its status line on stderr */
void rg_run_report(struct rg_session_s *s);

extern const rg_cli_t  rg_resume_cli;
extern const rg_cli_t  rg_status_cli;

/* one task on agent_name, to its end; the exit code */
int rg_run_task(rg_engine_t *e, const char *agent_name,
    const char *transcript, const char *task);

#endif /* RG_RUN_H */
