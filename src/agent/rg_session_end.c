/* rg_session_end.c: a session's end, exactly once. A phase sets the
 * status it ends with (rg_session_status) and returns RG_PHASE_FINISH,
 * and the driver ends it (rg_session_end); outside the phases (its
 * deadline, a cancel, a store that refused it, another worker that took
 * it over) rg_session_finish() does both. The end cancels what is in
 * flight (the model call, the turn's tools, lookups, claims, the park's
 * record, the tenant's budget), says how it went in one log line,
 * stores the final status when the store is durable, and then, last,
 * calls its owner's handler, which may destroy it. Also what interrupts
 * a session from outside its phases: another worker owns it
 * (rg_session_drop), the store lost it (rg_session_lost); and its
 * destruction. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_phase_park.h>
#include <rg_phase_claim.h>
#include <rg_dedupe.h>
#include <rg_tenant.h>
#include <rg_durable.h>
#include <rg_lease.h>
#include <rg_recover.h>
#include <rg_events.h>
#include <rg_session_trace.h>
#include <rg_secret.h>


static void
rg_session_vstatus(rg_session_t *s, rg_session_state_e state,
    const char *fmt, va_list args)
{
    char  buf[1024];

    rg_session_set_state(s, state);
    s->ended = rg_monotonic_msec();

    if (fmt) {
        vsnprintf(buf, sizeof(buf), fmt, args);
        rg_secret_scrub_str(buf);      /* a provider may quote the key */
        s->reason = rg_pstrdup(s->pool, buf, strlen(buf));
    }
}


/* what s waits for is let go: the model call, the turn's tools, the
 * lookups, the park's record, the claims, the tenant's budget, its
 * deadline */
static void
rg_session_let_go(rg_session_t *s)
{
    rg_llm_cancel(&s->req);

    if (s->turn) {
        rg_tools_turn_destroy(s->turn);
        s->turn = NULL;
    }

    rg_dedupe_cancel(s);
    rg_phase_park_cancel(s);
    rg_phase_claim_cancel(s);
    rg_tenant_cancel(s);

    rg_session_drop_args(s);

    if (s->deadline_set) {
        event_del(s->deadline_ev);
        s->deadline_set = 0;
    }
}


rg_phase_rc_e
rg_session_status(rg_session_t *s, rg_session_state_e state,
    const char *fmt, ...)
{
    va_list  args;

    if (!rg_session_final(s)) {
        va_start(args, fmt);
        rg_session_vstatus(s, state, fmt, args);
        va_end(args);
    }

    return RG_PHASE_FINISH;
}


void
rg_session_finish(rg_session_t *s, rg_session_state_e state,
    const char *fmt, ...)
{
    va_list  args;

    if (rg_session_final(s)) {
        return;
    }

    va_start(args, fmt);
    rg_session_vstatus(s, state, fmt, args);
    va_end(args);

    rg_session_end(s);           /* may destroy s: nothing after this */
}


void
rg_session_end(rg_session_t *s)
{
    rg_session_state_e  state;

    if (s->ending) {
        return;
    }

    s->ending = 1;
    state = s->state;

    rg_session_trace_end(s);
    rg_session_let_go(s);

    /* the body is not needed any more; give its memory back now */
    rg_buf_free(&s->body);

    if (s->answers == 0) {
        rg_log_error(state == RG_SESSION_DONE ? RG_LOG_INFO : RG_LOG_NOTICE,
                     &s->log, 0, "session %s before any answer from the "
                     "model, %llums%s%s", rg_session_state_name(state),
                     (unsigned long long) (s->ended - s->started),
                     s->reason ? ": " : "", s->reason ? s->reason : "");
    } else {
        rg_log_error(state == RG_SESSION_DONE ? RG_LOG_INFO : RG_LOG_NOTICE,
                     &s->log, 0, "session %s after %lu round%s, %lu tool "
                     "call%s, %llums%s%s", rg_session_state_name(state),
                     (unsigned long) s->round, s->round == 1 ? "" : "s",
                     (unsigned long) s->tool_calls,
                     s->tool_calls == 1 ? "" : "s",
                     (unsigned long long) (s->ended - s->started),
                     s->reason ? ": " : "", s->reason ? s->reason : "");
    }

    /* the final status goes to the store first; the owner hears of the
     * end once it is there */
    if (s->durable && !s->fenced) {
        rg_recover_stop(s);
        rg_durable_final(s);     /* may destroy s: nothing after this */
        return;
    }

    rg_session_handler(s);       /* may destroy s: nothing after this */
}


void
rg_session_handler(rg_session_t *s)
{
    /* the driver is in a phase of s: told once it let go */
    if (s->phase_busy) {
        s->handler_due = 1;
        return;
    }

    /* its end, once the store holds it */
    if (!s->handler_called) {
        rg_events_final(s);
    }

    if (s->handler && !s->handler_called) {
        s->handler_called = 1;
        s->handler(s);           /* may destroy s: nothing after this */
    }
}


/* Another worker owns the session now: nothing more is written for it
 * here. One still running ends cancelled; one that had ended and waited
 * for its last checkpoint is handed to its handler as it is. */
void
rg_session_drop(rg_session_t *s, const char *why)
{
    s->fenced = 1;

    if (!rg_session_final(s)) {
        rg_session_finish(s, RG_SESSION_CANCELLED, "dropped by this worker: "
                          "%s", why);
        return;
    }

    rg_recover_stop(s);
    rg_durable_stop(s);
    rg_lease_stop(s);
    rg_session_handler(s);
}


void
rg_session_lost(rg_session_t *s)
{
    rg_recover_session(s);
}


void
rg_session_cancel(rg_session_t *s, const char *reason)
{
    rg_session_finish(s, RG_SESSION_CANCELLED, "%s",
                      reason ? reason : "cancelled");
}


void
rg_session_destroy(rg_session_t *s)
{
    if (s == NULL) {
        return;
    }

    /* its owner lets it go: it hears nothing more of it */
    s->handler = NULL;

    rg_metrics_session_state((int) s->state, -1);

    rg_session_let_go(s);
    rg_recover_stop(s);
    rg_durable_stop(s);
    rg_lease_stop(s);

    rg_llm_req_free(&s->req);
    rg_llm_lane_release(s->req.up, s->req.lane);
    rg_buf_free(&s->body);

    if (s->transcript) {
        json_decref(s->transcript);
    }

    rg_events_stop(s);

    rg_agent_ctx(s->engine)->live--;

    rg_pool_destroy(s->round_pool);
    rg_pool_destroy(s->pool);
}
