/* rg_child.c: child sessions, for the agent module's run_agent: the
 * runner the agent part gives the tools part, which starts a session of
 * another agent on the same engine, one level deeper (up to
 * max_agent_depth), and hands its answer, or the reason it ended, back
 * to the call that asked. A child is recorded (its transcript nested in
 * its parent's) and replayed (from its own part of the recording) as its
 * parent is; its tokens count toward its parent's (rg_session.c). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_child.h>
#include <rg_transcript.h>
#include <rg_session_trace.h>
#include <rg_replay.h>
#include <rg_digest.h>
#include <rg_store_conf.h>


static void
rg_child_done(rg_session_t *child)
{
    rg_tool_run_t  *run;
    const char     *text;
    size_t          len;

    run = child->data;

    /* nested in the parent's transcript, before the parent goes on */
    if (run->turn) {
        rg_transcript_child(run->turn->data, child, run->call.id);
    }

    if (child->state == RG_SESSION_DONE && child->answer.data) {
        text = child->answer.data;
        len = child->answer.len;
    } else {
        text = child->reason ? child->reason : "";
        len = strlen(text);
    }

    rg_tools_agent_done(run, rg_session_state_name(child->state), text, len);
    rg_session_destroy(child);
}


rg_int_t
rg_child_start(rg_tool_run_t *run, const char *name,
    const char *input, size_t len)
{
    rg_uint_t           opened;
    rg_session_t       *parent, *child;
    rg_agent_conf_t    *agent;
    rg_cycle_t         *cycle;
    rg_session_args_t   args;

    opened = 0;
    parent = run->turn->data;
    cycle = parent->engine->cycle;

    if (parent->depth
        >= (rg_uint_t) rg_agent_main_conf(cycle)->max_agent_depth)
    {
        snprintf(run->error, sizeof(run->error), "delegation is %lu levels "
                 "deep already (max_agent_depth); answer without delegating",
                 (unsigned long) parent->depth);
        return RG_ERROR;
    }

    agent = rg_agent_find(cycle, name, strlen(name));
    if (agent == NULL) {
        snprintf(run->error, sizeof(run->error), "unknown agent \"%.64s\"",
                 name);
        return RG_ERROR;
    }

    if (rg_store_ctx(parent->engine)->durable && run->idem) {
        char  digest[RG_SHA256_HEX], id[40];

        /* the parent's call names its child: a parent resumed after a
         * crash runs the call again and finds the same child in the
         * store, to continue rather than start over */
        if (rg_sha256_hex(digest, run->idem, strlen(run->idem), NULL, 0)
            != RG_OK)
        {
            snprintf(run->error, sizeof(run->error), "out of memory");
            return RG_ERROR;
        }

        snprintf(id, sizeof(id), "c-%.32s", digest);

        memset(&args, 0, sizeof(args));
        args.agent = agent;
        args.id = id;
        args.task_id = parent->task_id;
        args.input = input;
        args.len = len;
        args.handler = rg_child_done;
        args.data = run;
        args.stored = 1;

        child = rg_session_open(parent->engine, &args);
        opened = 1;
    } else {
        child = rg_session_create(parent->engine, agent, parent->task_id,
                                  input, len, rg_child_done, run);
    }

    if (child == NULL) {
        snprintf(run->error, sizeof(run->error), "out of memory");
        return RG_ERROR;
    }

    child->depth = parent->depth + 1;
    child->tenant = parent->tenant;    /* its tokens are the tenant's */
    child->parent_run = run;
    child->parent = parent;
    run->child = child;
    rg_session_trace_child(child, run);   /* a span under the call */

    /* recorded and replayed as its parent is */
    if (parent->transcript && rg_transcript_start(child) != RG_OK) {
        rg_log_error(RG_LOG_WARN, &parent->log, 0, "out of memory: the "
                     "child session is not recorded");
    }

    if (parent->replay) {
        rg_replay_child(parent, child, run->call.id);
    }

    rg_log_error(RG_LOG_INFO, &parent->log, 0, "delegating to agent \"%s\" "
                 "as session \"%s\"", name, child->id);

    if (!opened) {
        rg_session_start(child);       /* an opened one starts from the store */
    }

    return RG_OK;
}


void
rg_child_stop(rg_tool_run_t *run)
{
    rg_session_t  *child;

    child = run->child;
    run->child = NULL;

    if (child) {
        child->handler = NULL;     /* nobody to tell */
        rg_session_destroy(child);
    }
}
