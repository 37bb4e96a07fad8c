/* rg_run.c: `reagent run "task"`, the agent part's command: one session
 * on this process's engine, its answer on stdout, its status on stderr,
 * its transcript written when asked (--transcript). Also what the
 * commands that run sessions share (run, replay, batch): the options -a,
 * --approve-all and --deny-dangerous, and an engine started with the
 * approval they ask for. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_session_int.h>
#include <rg_transcript.h>
#include <rg_replay.h>
#include <rg_run.h>
#include <rg_tools.h>
#include <rg_core_conf.h>
#include <signal.h>
#include <event2/event.h>


static int rg_run_option_run(void *opts, int argc, char **argv, int i);
static int rg_run_main(rg_cycle_t *cycle, void *opts, const char *arg);


const rg_cli_t  rg_run_cli = {
    "run",
    "  run [-a AGENT] [--transcript FILE] [--approve-all|--deny-dangerous]\n"
    "      [--mock] \"task\"\n"
    "      run one task: the answer goes to stdout, the status to stderr;\n"
    "      the exit code is 0 when the status is done; --mock starts the\n"
    "      bundled mock model for the run and sends every llm's requests\n"
    "      to it (canned answers, no key needed)\n",
    "a task: reagent run \"what is 2+2?\"",
    sizeof(rg_run_opts_t),
    rg_run_option_run,
    rg_run_main,
    0
};


const char  rg_run_help[] =
    "dangerous tools (exec) run only when approved: \"approve TOOL;\" in the\n"
    "agent (and in every agent that delegated to it), or a y/N prompt when\n"
    "stdin is a terminal; --approve-all allows and --deny-dangerous refuses\n"
    "them all, whatever the agents say (the model is told).\n";


int
rg_run_option(rg_run_opts_t *o, int argc, char **argv, int i,
    rg_uint_t which)
{
    const char  *a;

    a = argv[i];

    if ((which & RG_RUN_OPT_AGENT) && strcmp(a, "-a") == 0 && i + 1 < argc) {
        o->agent = argv[i + 1];
        return 2;
    }

    if ((which & RG_RUN_OPT_TRANSCRIPT) && strcmp(a, "--transcript") == 0
        && i + 1 < argc)
    {
        o->transcript = argv[i + 1];
        return 2;
    }

    if (strcmp(a, "--approve-all") == 0) {
        o->approval = RG_APPROVE_ALL;
        o->approval_set = 1;
        return 1;
    }

    if (strcmp(a, "--deny-dangerous") == 0) {
        o->approval = RG_APPROVE_NONE;
        o->approval_set = 1;
        return 1;
    }

    if ((which & RG_RUN_OPT_MOCK) && strcmp(a, "--mock") == 0) {
        o->mock = 1;
        return 1;
    }

    return 0;
}


static int
rg_run_option_run(void *opts, int argc, char **argv, int i)
{
    return rg_run_option(opts, argc, argv, i, RG_RUN_OPT_AGENT
                         | RG_RUN_OPT_TRANSCRIPT | RG_RUN_OPT_MOCK);
}


rg_engine_t *
rg_run_engine(rg_cycle_t *cycle, rg_run_opts_t *o, const char *arg)
{
    rg_engine_t    *e;
    rg_approval_e   approval;

    /* run, batch and replay are one process: workers are serve's */
    if (rg_core_conf(cycle)->worker_processes > 1) {
        rg_log_error(RG_LOG_WARN, cycle->log, 0, "\"worker_processes %ld\" "
                     "is not used: run, batch and replay work in one process "
                     "(worker_processes is for reagent serve)",
                     (long) rg_core_conf(cycle)->worker_processes);
    }

    e = rg_engine_create(cycle, cycle->log);
    if (e == NULL) {
        return NULL;
    }

    if (o->agent == NULL) {
        o->agent = rg_agent_main_conf(cycle)->default_agent.data;
    }

    /* ask on the terminal only when it cannot be the task input */
    if (o->approval_set) {
        approval = o->approval;

    } else {
        approval = isatty(STDIN_FILENO) && strcmp(arg, "-") != 0
                   ? RG_APPROVE_PROMPT : RG_APPROVE_DENY;
    }

    rg_tools_set_approval(rg_tools_ctx(e), approval);

    o->mock_model.pid = -1;

    if (o->mock && rg_run_mock_start(e, &o->mock_model) != RG_OK) {
        rg_engine_destroy(e);
        return NULL;
    }

    return e;
}


void
rg_run_engine_destroy(rg_engine_t *e, rg_run_opts_t *o)
{
    rg_engine_destroy(e);
    rg_run_mock_stop(&o->mock_model);
}


void
rg_run_done(rg_session_t *s)
{
    rg_run_ctx_t  *ctx;

    ctx = s->data;
    ctx->done = 1;
    event_del(ctx->sigint);
    event_del(ctx->sigterm);
    event_base_loopbreak(s->engine->base);
}


static void
rg_run_signal(evutil_socket_t sig, short what, void *arg)
{
    rg_run_ctx_t  *ctx;

    ctx = arg;
    rg_session_cancel(ctx->session, "interrupted by a signal");
}


rg_int_t
rg_run_wait(rg_engine_t *e, rg_run_ctx_t *ctx, rg_uint_t start)
{
    /* SIGTERM ends a run as Ctrl-C does: a status line, the transcript */
    ctx->sigint = evsignal_new(e->base, SIGINT, rg_run_signal, ctx);
    ctx->sigterm = evsignal_new(e->base, SIGTERM, rg_run_signal, ctx);
    if (ctx->sigint == NULL || ctx->sigterm == NULL) {
        if (ctx->sigint) {
            event_free(ctx->sigint);
        }
        rg_session_destroy(ctx->session);
        return RG_ERROR;
    }

    event_add(ctx->sigint, NULL);
    event_add(ctx->sigterm, NULL);

    if (start) {
        rg_session_start(ctx->session);
    }

    /* the end is heard once its status is stored, when the store keeps
     * sessions (and at once for one that ended within its start) */
    while (!ctx->done && event_base_dispatch(e->base) == 0) {
        /* a loopbreak of another kind: go on */
    }

    event_free(ctx->sigint);
    event_free(ctx->sigterm);

    return RG_OK;
}


/* the answer on stdout, the status on stderr */
void
rg_run_report(rg_session_t *s)
{
    /* the answer was scrubbed when the session kept it */
    if (s->answer.data) {
        fwrite(s->answer.data, 1, s->answer.len, stdout);
        if (s->answer.len == 0
            || s->answer.data[s->answer.len - 1] != '\n')
        {
            fputc('\n', stdout);
        }
        fflush(stdout);
    }

    if (s->answers == 0 && !s->resumed) {
        fprintf(stderr, "status: %s%s%s (before any answer from the model, "
                "%llu ms)\n", rg_session_state_name(s->state),
                s->reason ? ": " : "", s->reason ? s->reason : "",
                (unsigned long long) (s->elapsed + s->ended - s->started));

        /* the first run of a new user, on a configuration whose model
         * is not up: say what works without one */
        if (s->reason && strstr(s->reason, "cannot reach the model")) {
            fprintf(stderr, "hint: nothing answers at the llm's base_url; "
                    "\"reagent run --mock\" (or \"make run\") answers with "
                    "the bundled mock model instead\n");
        }
        return;
    }

    fprintf(stderr, "status: %s%s%s (rounds %lu, tool calls %lu, "
            "tokens %lld, %llu ms)\n", rg_session_state_name(s->state),
            s->reason ? ": " : "", s->reason ? s->reason : "",
            (unsigned long) s->round, (unsigned long) s->tool_calls,
            (long long) (s->prompt_tokens + s->completion_tokens),
            (unsigned long long) (s->elapsed + s->ended - s->started));
}


int
rg_run_task(rg_engine_t *e, const char *agent_name, const char *transcript,
    const char *task)
{
    return rg_run_task_replay(e, agent_name, transcript, task, NULL);
}


int
rg_run_task_replay(rg_engine_t *e, const char *agent_name,
    const char *transcript, const char *task, struct rg_replay_s *replay)
{
    int               rc, fd;
    char             *text;
    size_t            len;
    rg_run_ctx_t      ctx;
    rg_session_t     *s;
    rg_agent_conf_t  *agent;

    agent = rg_agent_find(e->cycle, agent_name, strlen(agent_name));
    if (agent == NULL) {
        fprintf(stderr, "reagent: unknown agent \"%s\" (agents: ", agent_name);
        for (len = 0; len < rg_agent_main_conf(e->cycle)->agents.nelts; len++)
        {
            fprintf(stderr, "%s%s", len ? ", " : "",
                    ((rg_agent_conf_t **)
                     rg_agent_main_conf(e->cycle)->agents.elts)[len]
                    ->name.data);
        }
        fprintf(stderr, ")\n");
        return 1;
    }

    memset(&ctx, 0, sizeof(ctx));

    s = rg_session_create(e, agent, NULL, task, strlen(task), rg_run_done,
                          &ctx);
    if (s == NULL) {
        fprintf(stderr, "reagent: out of memory\n");
        return 1;
    }

    if (s->durable) {
        fprintf(stderr, "session: %s (the store keeps it: reagent resume "
                "%s)\n", s->id, s->id);
    }

    if (transcript) {
        rg_transcript_start(s);
    }

    if (replay) {
        rg_replay_attach(s, replay);
    }

    ctx.session = s;

    if (rg_run_wait(e, &ctx, 1) != RG_OK) {
        return 1;
    }

    rg_run_report(s);

    rc = s->state == RG_SESSION_DONE ? 0 : 2;

    if (transcript) {
        text = rg_transcript_text(s);
        fd = open(transcript, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        if (text == NULL || fd == -1
            || write(fd, text, strlen(text)) != (ssize_t) strlen(text))
        {
            fprintf(stderr, "reagent: cannot write transcript \"%s\": %s\n",
                    transcript, strerror(errno));
            rc = rc ? rc : 1;
        }

        if (fd != -1) {
            close(fd);
        }
        free(text);
    }

    rg_session_destroy(s);

    return rc;
}


int
rg_run_command(rg_cycle_t *cycle, rg_run_opts_t *o, const char *arg,
    int (*run)(rg_engine_t *e, rg_run_opts_t *o, const char *arg))
{
    int           rc;
    rg_engine_t  *e;

    e = rg_run_engine(cycle, o, arg);
    if (e == NULL) {
        return 1;
    }

    rc = run(e, o, arg);

    rg_run_engine_destroy(e, o);

    return rc;
}


static int
rg_run_one(rg_engine_t *e, rg_run_opts_t *o, const char *arg)
{
    return rg_run_task(e, o->agent, o->transcript, arg);
}


static int
rg_run_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    return rg_run_command(cycle, opts, arg, rg_run_one);
}
