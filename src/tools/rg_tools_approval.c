/* rg_tools_approval.c: the approval of dangerous calls (rg_tools.c):
 * which agent may call which tool, and what becomes of a dangerous call:
 * approved by the agent's `approve` or the command line, refused, or
 * asked on the terminal, one question at a time in the order the calls
 * came. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tools.h>
#include <rg_tools_int.h>
#include <rg_secret.h>


static void rg_tools_ask(rg_tool_run_t *run);


void
rg_tools_prompt_remove(rg_tool_run_t *run)
{
    rg_tool_run_t  **pp;
    rg_tools_ctx_t  *ctx;

    ctx = run->ctx;

    for (pp = &ctx->prompt_head; *pp; pp = &(*pp)->next_approval) {
        if (*pp == run) {
            *pp = run->next_approval;
            if (ctx->prompt_tail == &run->next_approval) {
                ctx->prompt_tail = pp;
            }
            break;
        }
    }

    run->awaiting = 0;
}


/* run_agent reaches only the agents the caller's `agents` lists: RG_OK,
 * or RG_ERROR with the reason in run->error */
rg_int_t
rg_tools_agent_allowed(rg_tool_run_t *run, const char *name)
{
    int                  n;
    size_t               len, off;
    rg_str_t            *names;
    rg_uint_t            i;
    const rg_toolset_t  *ts;

    ts = run->turn->toolset;
    len = strlen(name);
    names = ts->agents ? ts->agents->elts : NULL;

    for (i = 0; names && i < ts->agents->nelts; i++) {
        if (names[i].len == len && memcmp(names[i].data, name, len) == 0) {
            return RG_OK;
        }
    }

    if (names == NULL || ts->agents->nelts == 0) {
        snprintf(run->error, sizeof(run->error), "agent \"%.*s\" may not "
                 "hand work to other agents (its \"agents\" lists none); "
                 "do the task yourself", (int) ts->owner.len,
                 ts->owner.data);
        return RG_ERROR;
    }

    n = snprintf(run->error, sizeof(run->error), "agent \"%.64s\" is not "
                 "one that agent \"%.*s\" may call; it may call: ", name,
                 (int) ts->owner.len, ts->owner.data);
    off = n > 0 ? rg_min((size_t) n, sizeof(run->error) - 1) : 0;

    for (i = 0; i < ts->agents->nelts; i++) {
        n = snprintf(run->error + off, sizeof(run->error) - off, "%s%.*s",
                     i ? ", " : "", (int) names[i].len, names[i].data);
        off += n > 0 ? rg_min((size_t) n, sizeof(run->error) - 1 - off) : 0;
    }

    return RG_ERROR;
}


/* te is in the toolset's `approve` list */
static rg_uint_t
rg_tools_approved(const rg_toolset_t *ts, rg_tool_entry_t *te)
{
    rg_uint_t  i;
    rg_str_t  *names;

    if (ts->approve == NULL) {
        return 0;
    }

    names = ts->approve->elts;

    for (i = 0; i < ts->approve->nelts; i++) {
        if (rg_tool_entry_is(te, names[i].data, names[i].len)) {
            return 1;
        }
    }

    return 0;
}


/* The toolset (agent) that refuses te in the chain of delegation of ts
 * (parent: the run_agent call that started it), or NULL when every one
 * of it approves te: a child session never gets more approval than the
 * session that started it. */
static const rg_toolset_t *
rg_tools_refuser(const rg_toolset_t *ts, rg_tool_run_t *parent,
    rg_tool_entry_t *te)
{
    rg_uint_t        depth;
    rg_tool_turn_t  *turn;

    if (!rg_tools_approved(ts, te)) {
        return ts;
    }

    turn = parent ? parent->turn : NULL;

    for (depth = 0; turn && depth < 64; depth++) {
        if (!rg_tools_approved(turn->toolset, te)) {
            return turn->toolset;
        }

        turn = turn->parent ? turn->parent->turn : NULL;
    }

    return NULL;
}


rg_uint_t
rg_tools_needs_approval(rg_tools_ctx_t *ctx, const rg_toolset_t *ts,
    rg_tool_run_t *parent, rg_tool_entry_t *te)
{
    return (te->tool->flags & RG_TOOL_DANGEROUS)
           && ctx->approval != RG_APPROVE_ALL
           && ctx->approval != RG_APPROVE_NONE
           && rg_tools_refuser(ts, parent, te) != NULL;
}


/* Decides a dangerous call before it starts: RG_OK to launch it, RG_DONE
 * when it was refused (and finished), RG_AGAIN when the terminal was
 * asked. */
rg_int_t
rg_tools_gate(rg_tool_run_t *run)
{
    rg_tool_turn_t      *turn;
    const rg_toolset_t  *no;

    turn = run->turn;

    /* decided by an operator before the turn (a parked session's) */
    if (run->approved || run->ctx->approval == RG_APPROVE_ALL) {
        return RG_OK;
    }

    if (run->ctx->approval == RG_APPROVE_NONE) {
        run->denied = 1;
        rg_tools_set_error(run, "error: %s is a dangerous tool and was not "
                           "approved (dangerous tools are refused here); do "
                           "without it or ask the user", run->name);
        rg_log_error(RG_LOG_NOTICE, turn->log, 0, "dangerous tool \"%s\" "
                     "refused (--deny-dangerous)", run->name);
        rg_tools_finish(run);
        return RG_DONE;
    }

    no = rg_tools_refuser(turn->toolset, turn->parent, run->entry);
    if (no == NULL) {
        return RG_OK;
    }

    if (run->ctx->approval == RG_APPROVE_PROMPT) {
        rg_tools_ask(run);
        return RG_AGAIN;
    }

    run->denied = 1;

    if (no == turn->toolset) {
        rg_tools_set_error(run, "error: %s is a dangerous tool and was not "
                           "approved; do without it or ask the user",
                           run->name);

    } else {
        rg_tools_set_error(run, "error: %s is a dangerous tool and was not "
                           "approved: agent \"%.*s\", which delegated this "
                           "task, does not approve it; do without it or ask "
                           "the user", run->name, (int) no->owner.len,
                           no->owner.data);
    }

    rg_log_error(RG_LOG_WARN, turn->log, 0, "dangerous tool \"%s\" refused: "
                 "agent \"%.*s\" does not approve it and there is no "
                 "terminal to ask (\"approve %s;\" in the agent, or "
                 "--approve-all, allows it)", run->name, (int) no->owner.len,
                 no->owner.data, run->name);

    rg_tools_finish(run);

    return RG_DONE;
}


static void
rg_tools_decide(rg_tool_run_t *run, rg_uint_t yes)
{
    rg_tool_turn_t  *turn;

    turn = run->turn;
    run->awaiting = 0;
    turn->awaiting--;

    if (turn->approval) {
        turn->approval(turn);
    }

    if (yes) {
        rg_tools_launch(run);
        return;
    }

    run->denied = 1;
    run->answered = 1;
    rg_tools_set_error(run, "error: %s was denied by the operator; do "
                       "without it or ask the user", run->name);
    rg_tools_finish(run);
}


static void
rg_tools_prompt_handler(evutil_socket_t fd, short what, void *arg)
{
    char             buf[256], *nl;
    ssize_t          n;
    rg_buf_t        *line;
    rg_tool_run_t   *run;
    rg_tools_ctx_t  *ctx;

    ctx = arg;
    line = &ctx->prompt_line;

    n = read(fd, buf, sizeof(buf));

    if (n > 0) {
        rg_buf_append(line, buf, n);
    }

    nl = line->data ? memchr(line->data, '\n', line->len) : NULL;

    if (nl == NULL && n > 0) {
        return;                        /* the rest of the line follows */
    }

    run = ctx->prompt_head;
    if (run == NULL) {
        rg_buf_reset(line);
        return;
    }

    ctx->prompt_head = run->next_approval;
    if (ctx->prompt_head == NULL) {
        ctx->prompt_tail = &ctx->prompt_head;
    }

    /* end of input means no */
    rg_tools_decide(run, n > 0 && line->len
                         && (line->data[0] == 'y' || line->data[0] == 'Y'));

    rg_buf_reset(line);

    rg_tools_prompt_next(ctx);
}


void
rg_tools_prompt_next(rg_tools_ctx_t *ctx)
{
    char            shown[401];
    size_t          n;
    rg_tool_run_t  *run;

    run = ctx->prompt_head;

    if (run == NULL) {
        if (ctx->prompt_ev) {
            event_del(ctx->prompt_ev);
        }
        return;
    }

    if (ctx->prompt_ev == NULL) {
        ctx->prompt_ev = event_new(ctx->base, STDIN_FILENO,
                                   EV_READ | EV_PERSIST,
                                   rg_tools_prompt_handler, ctx);
        if (ctx->prompt_ev == NULL) {
            return;
        }
    }

    n = rg_min(run->call.args_len, sizeof(shown) - 1);
    memcpy(shown, run->call.args, n);
    n = rg_secret_scrub(shown, n);

    fprintf(stderr, "\nreagent: the model of agent \"%.*s\" wants to run "
            "the dangerous tool \"%s\" with %.*s%s\nallow it? [y/N] ",
            (int) run->turn->toolset->owner.len,
            run->turn->toolset->owner.data,
            run->name, (int) n, shown,
            run->call.args_len > sizeof(shown) - 1 ? "…" : "");
    fflush(stderr);

    event_add(ctx->prompt_ev, NULL);
}


static void
rg_tools_ask(rg_tool_run_t *run)
{
    rg_uint_t        first;
    rg_tools_ctx_t  *ctx;

    ctx = run->ctx;
    first = ctx->prompt_head == NULL;

    run->awaiting = 1;
    run->turn->awaiting++;
    run->next_approval = NULL;
    *ctx->prompt_tail = run;
    ctx->prompt_tail = &run->next_approval;

    if (first) {
        rg_tools_prompt_next(ctx);
    }
}
