/* rg_replay_cli.c: `reagent replay TRANSCRIPT`, the agent part's other
 * command. The agent, the task and every model answer come from a
 * transcript written by `run --transcript` or `batch --transcripts`; the
 * session runs again on this process's engine, each session (a child
 * too) answered from its own recorded calls (rg_replay.c), and the tools
 * run again: dangerous ones only with --approve-all. A divergence from
 * the recording is reported with the session, the round and the call,
 * and the exit code says so (3). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_session.h>
#include <rg_replay.h>
#include <rg_run.h>
#include <jansson.h>


static int rg_replay_option(void *opts, int argc, char **argv, int i);
static int rg_replay_main(rg_cycle_t *cycle, void *opts, const char *arg);


const rg_cli_t  rg_replay_cli = {
    "replay",
    "  replay [--transcript FILE] [--approve-all] TRANSCRIPT\n"
    "      re-run a session recorded with --transcript: the model's answers\n"
    "      come from the file (each child agent's from its own part), the\n"
    "      tools run again (dangerous ones only with --approve-all); a\n"
    "      request or a tool result that differs from the recording is a\n"
    "      divergence, reported with its round and call (exit code 3)\n",
    "a transcript file",
    sizeof(rg_run_opts_t),
    rg_replay_option,
    rg_replay_main,
    0
};


static int
rg_replay_option(void *opts, int argc, char **argv, int i)
{
    return rg_run_option(opts, argc, argv, i, RG_RUN_OPT_TRANSCRIPT);
}


/* reagent replay FILE: the agent, the task and every model answer come
 * from a transcript; the tools run again */
static int
rg_replay_file(rg_engine_t *e, const char *transcript, const char *file)
{
    int            rc;
    size_t         i, calls, children, used;
    json_t        *t, *events, *msgs, *m, *v;
    json_error_t   err;
    const char    *agent, *task, *div;
    rg_replay_t   *r;

    t = json_load_file(file, JSON_ALLOW_NUL, &err);
    if (t == NULL) {
        fprintf(stderr, "reagent: cannot read transcript \"%s\": %s "
                "(line %d)\n", file, err.text, err.line);
        return 1;
    }

    agent = json_string_value(json_object_get(t, "agent"));
    msgs = json_object_get(t, "messages");
    events = json_object_get(t, "events");
    task = NULL;

    json_array_foreach(msgs, i, m) {
        v = json_object_get(m, "role");
        if (json_is_string(v) && strcmp(json_string_value(v), "user") == 0) {
            task = json_string_value(json_object_get(m, "content"));
            break;
        }
    }

    if (agent == NULL || task == NULL || !json_is_array(events)) {
        fprintf(stderr, "reagent: \"%s\" is not a reagent transcript (it "
                "needs \"agent\", \"messages\" with the task, and "
                "\"events\")\n", file);
        json_decref(t);
        return 1;
    }

    r = rg_replay_create(t);
    if (r == NULL) {
        fprintf(stderr, "reagent: out of memory\n");
        json_decref(t);
        return 1;
    }

    rg_replay_sizes(r, &calls, &children, &used);

    fprintf(stderr, "replay: agent \"%s\", %lu recorded model calls, %lu "
            "child sessions\n", agent, (unsigned long) calls,
            (unsigned long) children);

    rc = rg_run_task_replay(e, agent, transcript, task, r);

    div = rg_replay_divergence(r);

    if (div) {
        fprintf(stderr, "replay: diverged from the recording: %s\n", div);
        rc = 3;

    } else {
        rg_replay_sizes(r, &calls, &children, &used);
        fprintf(stderr, "replay: the run matched the recording (%lu model "
                "calls)\n", (unsigned long) used);
    }

    rg_replay_destroy(r);
    json_decref(t);

    return rc;
}


static int
rg_replay_run(rg_engine_t *e, rg_run_opts_t *o, const char *arg)
{
    return rg_replay_file(e, o->transcript, arg);
}


static int
rg_replay_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    rg_run_opts_t  *o;

    o = opts;

    /* a replay runs no dangerous tool unless told to, whatever the
     * agents approve: the recording may come from anywhere */
    if (!o->approval_set || o->approval != RG_APPROVE_ALL) {
        o->approval = RG_APPROVE_NONE;
        o->approval_set = 1;
    }

    return rg_run_command(cycle, o, arg, rg_replay_run);
}
