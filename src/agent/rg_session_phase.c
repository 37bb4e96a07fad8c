/* rg_session_phase.c: a session's turns as a table of phases, and the
 * driver that runs them, in the manner of nginx's HTTP phase engine
 * (ngx_http_core_run_phases). Each phase is a file, rg_phase_NAME.c,
 * whose handler returns
 *
 *   RG_PHASE_GO      done: the next phase runs now
 *   RG_PHASE_WAIT    it waits for the store, the model or the tools; its
 *                    callback wakes the driver: rg_session_run_phases()
 *                    runs the same phase again to see what came,
 *                    rg_session_phase_done() goes on with the next
 *   RG_PHASE_FINISH  the session ends with the status the phase set
 *                    (rg_session_status): rg_session_end.c ends it
 *
 * A phase calls no other phase; what phases share is the session's core
 * (rg_session_int.h), and the services they call (dedupe, durable,
 * lease, recover, tenant, context, events, trace, transcript, replay)
 * call no phase: their answers wake the driver. The state of DESIGN §4
 * (s->state) is changed by rg_session_set_state() alone.
 *
 * The table. A session starts at lease (rg_session_start, or the store's
 * answer to one opened `stored`: rg_session_open.c); after run, the turn
 * comes round to checkpoint again. Each phase: what it does, what it
 * waits for, what ends the session there (the status).
 *
 *  lease       a durable session takes its lease: this worker is its one
 *              writer (rg_lease.c); a session of the memory store has none
 *      waits   the store (for a holder that died: its lease's expiry)
 *      ends    another worker holds it (cancelled, fenced); no answer
 *              within store_timeout (failed)
 *
 *  resume      a session read back from the store arms what is left of its
 *              deadline and goes on where it stood, writing nothing first:
 *              an answer whose calls had not all come back runs its turn
 *              again (-> lookup), else the next model call (-> ask); a new
 *              session has nothing to resume
 *      ends    its deadline passed before (deadline_exceeded); its stored
 *              calls cannot be read (failed)
 *
 *  checkpoint  a durable session's new messages, guards and meta in one
 *              atomic step (rg_durable.c), before every model call
 *      waits   the store (asked again with backoff)
 *      ends    refused: another worker has it (dropped, fenced); no
 *              answer within store_timeout (failed)
 *
 *  ask         the guards before a model call (max_tokens, max_cost, the
 *              tenant's budgets: rg_tenant.c), compaction and its summary
 *              call (rg_session_context.c), the call; its answer: tokens
 *              and money counted, the answer appended; a failed call
 *              retried after compaction or on the fallback llm; a paused
 *              turn goes on (-> checkpoint)
 *      waits   the tenant's counters; the model's answer
 *      ends    budget_exceeded (tokens, cost, the tenant's); failed (the
 *              model: retries and fallback spent; a replay that diverged);
 *              an answer without calls: done, filtered or failed by its
 *              finish reason; max_rounds
 *
 *  lookup      each call of the answer: its tool, its cap, its arguments
 *              checked; a repeat answered from the earlier result; the
 *              calls past max_tool_calls_per_turn refused; the dedupe
 *              cache asked (rg_dedupe.c)
 *      waits   the lookups' answers (an identical call in flight)
 *      ends    loop_detected (repeats past repeat_limit)
 *
 *  park        dangerous calls of a session that parks (serve): the
 *              operator's decisions applied, or the answer checkpointed,
 *              the approval record written, the lease given back and the
 *              owner told it is parked, not ended (rg_phase_park.c)
 *      waits   the record; the checkpoint and the record's write
 *      ends    approval_timed_out; cancelled (while parked); a record
 *              that cannot be read or written (failed)
 *
 *  claim       side effects at most once (rg_claim.c): the answer
 *              checkpointed, then each side-effecting call claimed in the
 *              store, or answered from what a crashed run stored
 *      waits   the checkpoint; the claims (asked again with backoff: a
 *              claim not taken within store_timeout answers its call,
 *              not the session)
 *      ends    another worker has it (cancelled)
 *
 *  run         the turn's calls run together (rg_tools.c), each claimed
 *              one's result stored as it ends; the results trimmed,
 *              cached, remembered for repeats and appended in the order
 *              of the calls (-> checkpoint)
 *      waits   the tools
 *      ends    a replay whose results diverged (failed)
 *
 * Any phase may also end it from outside: its deadline (deadline_exceeded),
 * a cancel (cancelled), another worker (rg_session_drop), the store
 * losing it (written back, rg_recover.c, then the phase goes on). The
 * multi-agent and queue work add their states as rows here: a child's
 * join is a phase that waits for the children of the turn. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_phase_lease.h>
#include <rg_phase_resume.h>
#include <rg_phase_checkpoint.h>
#include <rg_phase_ask.h>
#include <rg_phase_lookup.h>
#include <rg_phase_park.h>
#include <rg_phase_claim.h>
#include <rg_phase_run.h>


typedef struct {
    const char         *name;
    rg_phase_pt         handler;
    rg_phase_e          next;         /* when it goes on */
} rg_session_phase_t;


static const rg_session_phase_t  rg_session_phases[RG_PHASE_N] = {
    [RG_PHASE_LEASE] =      { "lease", rg_phase_lease, RG_PHASE_RESUME },
    [RG_PHASE_RESUME] =     { "resume", rg_phase_resume,
                              RG_PHASE_CHECKPOINT },
    [RG_PHASE_CHECKPOINT] = { "checkpoint", rg_phase_checkpoint,
                              RG_PHASE_ASK },
    [RG_PHASE_ASK] =        { "ask", rg_phase_ask, RG_PHASE_LOOKUP },
    [RG_PHASE_LOOKUP] =     { "lookup", rg_phase_lookup, RG_PHASE_PARK },
    [RG_PHASE_PARK] =       { "park", rg_phase_park, RG_PHASE_CLAIM },
    [RG_PHASE_CLAIM] =      { "claim", rg_phase_claim, RG_PHASE_RUN },
    [RG_PHASE_RUN] =        { "run", rg_phase_run, RG_PHASE_CHECKPOINT }
};


rg_int_t
rg_session_start(rg_session_t *s)
{
    s->started = rg_monotonic_msec();

    rg_log_debug(&s->log, "session started");

    if (s->deadline && rg_session_arm_deadline(s, s->deadline) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED,
                          "could not arm the deadline (out of memory)");
        return RG_ERROR;
    }

    s->phase = RG_PHASE_LEASE;
    s->phase_step = 0;

    rg_session_run_phases(s);    /* may destroy s: nothing after this */

    return RG_OK;
}


void
rg_session_phase_done(rg_session_t *s)
{
    s->phase_step = RG_PHASE_STEP_DONE;
    rg_session_run_phases(s);
}


void
rg_session_phase_jump(rg_session_t *s, rg_phase_e phase)
{
    s->phase_next = (uint8_t) phase;
    s->phase_jumped = 1;
}


void
rg_session_run_phases(rg_session_t *s)
{
    rg_phase_rc_e  rc;

    /* an answer within the phase that asked: it runs again once it
     * returned (nothing of a phase runs inside another's call) */
    if (s->phase_busy) {
        s->phase_woken = 1;
        return;
    }

    if (s->ending || s->parked) {
        return;
    }

    s->phase_busy = 1;

    for ( ;; ) {
        s->phase_woken = 0;

        rc = s->phase_step == RG_PHASE_STEP_DONE
             ? RG_PHASE_GO : rg_session_phases[s->phase].handler(s);

        /* ended within it (a store or a replay that refused it) */
        if (s->ending) {
            break;
        }

        if (rc == RG_PHASE_WAIT) {
            if (s->phase_woken) {
                continue;
            }
            break;
        }

        if (rc == RG_PHASE_FINISH) {
            if (!rg_session_final(s)) {
                rg_session_status(s, RG_SESSION_FAILED, "phase \"%s\" "
                                  "ended the session without a status",
                                  rg_session_phases[s->phase].name);
            }

            s->phase_busy = 0;
            rg_session_end(s);   /* may destroy s: nothing after this */
            return;
        }

        s->phase = s->phase_jumped ? s->phase_next
                                   : (uint8_t) rg_session_phases[s->phase].next;
        s->phase_jumped = 0;
        s->phase_step = 0;
    }

    s->phase_busy = 0;

    /* its owner was told within a phase: now, nothing of it runs */
    if (s->handler_due) {
        s->handler_due = 0;
        rg_session_handler(s);   /* may destroy s */
    }
}
