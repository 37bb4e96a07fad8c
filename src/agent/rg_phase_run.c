/* rg_phase_run.c: the phase run (rg_session_phase.c): the turn's calls
 * run together (the tools layer's rg_tools.c: parallel dispatch,
 * timeouts, approval of dangerous calls), each claimed side effect's
 * result stored as soon as it ends (rg_claim.c); when all have ended,
 * each result is trimmed to tool_result_limit, cached (rg_dedupe.c),
 * remembered for repeats, and appended as the tool message that answers
 * its call, in the order of the calls; then the turn goes to the store
 * before the next model call (-> checkpoint). A replayed session's
 * results must be the recorded ones (rg_replay.c). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_phase_run.h>
#include <rg_claim.h>
#include <rg_dedupe.h>
#include <rg_transcript.h>
#include <rg_session_trace.h>
#include <rg_events.h>
#include <rg_replay.h>
#include <rg_tools_conf.h>
#include <rg_tool_args.h>
#include <rg_secret.h>


static void rg_phase_run_done(rg_tool_turn_t *turn);


static void
rg_phase_run_approval(rg_tool_turn_t *turn)
{
    rg_session_t  *s;

    s = turn->data;

    if (!rg_session_final(s)) {
        rg_session_set_state(s, turn->awaiting
                                ? RG_SESSION_AWAITING_APPROVAL
                                : RG_SESSION_TOOLS_RUNNING);
    }
}


static void
rg_phase_run_call_start(rg_tool_turn_t *turn, rg_tool_run_t *run)
{
    rg_events_tool_started(turn->data, run);
}


static void
rg_phase_run_remember(rg_session_t *s, rg_uint_t i, const char *text,
    size_t len)
{
    rg_session_sig_t  *sigs;

    if (s->extra[i].sig == NULL) {
        return;
    }

    if (s->nsigs == s->sigs_cap) {
        s->sigs_cap = s->sigs_cap ? s->sigs_cap * 2 : 8;
        sigs = rg_palloc(s->pool, s->sigs_cap * sizeof(rg_session_sig_t));
        if (sigs == NULL) {
            return;
        }
        if (s->nsigs) {
            memcpy(sigs, s->sigs, s->nsigs * sizeof(rg_session_sig_t));
        }
        s->sigs = sigs;
    }

    /* kept, and stored, without secrets: the call has its own copy of
     * the arguments by now; a repeat that quotes a key is not noticed */
    s->sigs[s->nsigs].sig = s->extra[i].sig;
    s->sigs[s->nsigs].len = rg_secret_scrub(s->extra[i].sig,
                                            s->extra[i].sig_len);
    s->extra[i].sig[s->sigs[s->nsigs].len] = '\0';
    s->sigs[s->nsigs].round = s->round;
    s->sigs[s->nsigs].result.data = rg_pstrdup(s->pool, text, len);
    s->sigs[s->nsigs].result.len = len;
    s->sigs[s->nsigs].stored_round = 0;

    if (s->sigs[s->nsigs].result.data) {
        s->nsigs++;
    }
}


static void
rg_phase_run_done(rg_tool_turn_t *turn)
{
    size_t          limit;
    rg_uint_t       i;
    rg_buf_t        b;
    rg_session_t   *s;
    rg_tool_run_t  *run;
    const char     *text;
    size_t          len;
    char            id[64];

    s = turn->data;

    rg_transcript_turn(s, turn);

    limit = rg_tools_conf(s->engine->cycle)->tool_result_limit;

    /* replayed: each result must be the recorded one */
    if (s->replay && rg_replay_turn(s, turn, limit) != RG_OK) {
        return;                    /* s ended, and may be gone */
    }
    memset(&b, 0, sizeof(b));

    for (i = 0; i < turn->n; i++) {
        /* a twin has the result of the same call earlier in the turn */
        run = turn->runs[s->extra[i].twin >= 0 ? (rg_uint_t) s->extra[i].twin
                                               : i];

        rg_session_seen(run, limit, &b, &text, &len);

        /* what is kept is what the model saw, trimmed */
        if (s->extra[i].key && !s->calls[i].has_preset) {
            rg_dedupe_result(s, i, text, len, run->failed);
        }

        rg_phase_run_remember(s, i, text, len);

        if (s->extra[i].capped) {
            if (text != b.data) {
                rg_buf_append(&b, text, len);
            }
            rg_buf_printf(&b, "\n(note: that was the last %s call allowed "
                          "in this task; it is no longer available)",
                          s->agent->toolset.tools[s->extra[i].tool]
                          ->tool->name);
            text = b.data;
            len = b.len;
        }

        if (s->calls[i].id.len == 0) {
            snprintf(id, sizeof(id), "call_%lu", (unsigned long) i);
        }

        if (rg_session_append_msg(s, 't', s->calls[i].id.len
                                          ? s->calls[i].id.data : id,
                                  text ? text : "", len, run->failed)
            != RG_OK)
        {
            rg_buf_free(&b);
            rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
            return;
        }

        s->tool_calls++;
        rg_agent_ctx(s->engine)->stats.tool_calls++;

        if (run->failed) {
            s->tool_errors++;
            rg_agent_ctx(s->engine)->stats.tool_errors++;
        }
    }

    rg_buf_free(&b);

    rg_tools_turn_destroy(turn);
    s->turn = NULL;

    /* the turn is in the store before the next model call */
    rg_session_set_state(s, RG_SESSION_MODEL_WAIT);
    rg_session_phase_done(s);
}


/* a claimed call answered: its result replaces the claim at once */
static void
rg_phase_run_call_done(rg_tool_turn_t *turn, rg_tool_run_t *run)
{
    rg_uint_t      i;
    rg_session_t  *s;

    s = turn->data;
    i = run->index;

    rg_session_trace_tool_end(s, run);
    rg_events_tool_ended(s, run);

    if (i >= s->ncalls || !s->extra[i].claimed) {
        return;
    }

    rg_claim_result(s, i, run);
    s->extra[i].claimed = 0;
}


rg_phase_rc_e
rg_phase_run(rg_session_t *s)
{
    if (s->phase_step) {
        return RG_PHASE_WAIT;          /* the tools run */
    }

    s->turn = rg_tools_turn_create(rg_tools_ctx(s->engine),
                                   &s->agent->toolset, s->id, s->calls,
                                   s->ncalls, rg_phase_run_done, s,
                                   &s->log);
    rg_session_drop_args(s);

    if (s->turn == NULL) {
        return rg_session_status(s, RG_SESSION_FAILED, "out of memory");
    }

    s->turn->approval = rg_phase_run_approval;
    s->turn->call_done = rg_phase_run_call_done;
    s->turn->call_start = rg_phase_run_call_start;
    s->turn->parent = s->parent_run;   /* its approval caps this one's */
    rg_session_set_state(s, RG_SESSION_TOOLS_RUNNING);

    rg_session_trace_tools(s, s->turn);

    s->phase_step = 1;
    rg_tools_turn_start(s->turn);

    if (s->turn && s->turn->awaiting) {
        rg_session_set_state(s, RG_SESSION_AWAITING_APPROVAL);
    }

    return RG_PHASE_WAIT;
}
