/* rg_phase_resume.c: the phase resume (rg_session_phase.c). A session
 * read back from the store (rg_session_open.c), now leased, goes on
 * where it stood: what is left of its deadline is armed, and the next
 * model call is the one an uninterrupted run would have sent, with
 * nothing written first (the store holds it as it is). An answer whose
 * calls had not all come back runs its turn again, from lookup: side
 * effects answer from their claims, never twice. A new session has
 * nothing to resume. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_phase_resume.h>
#include <rg_llm_request.h>


rg_phase_rc_e
rg_phase_resume(rg_session_t *s)
{
    rg_msg_t           *last;
    rg_llm_response_t   resp;

    if (!s->resumed) {
        return RG_PHASE_GO;
    }

    if (s->deadline) {
        if (s->elapsed >= s->deadline) {
            return rg_session_status(s, RG_SESSION_DEADLINE_EXCEEDED,
                                     "the task ran past its deadline of "
                                     "%.3gs before it was resumed",
                                     (double) s->deadline / 1000);
        }

        if (rg_session_arm_deadline(s, s->deadline - s->elapsed) != RG_OK) {
            return rg_session_status(s, RG_SESSION_FAILED, "could not arm "
                                     "the deadline (out of memory)");
        }
    }

    for (last = s->msgs.head; last && last->next; last = last->next) {
        /* the last message */
    }

    /* an answer whose calls had not all come back: the turn runs again
     * (side effects answer from their claims, never twice) */
    if (last && last->role == 'a' && last->ncalls) {
        memset(&resp, 0, sizeof(resp));

        if (rg_llm_message_calls(s->pool, last->json.data, last->json.len,
                                 (rg_uint_t) s->agent->max_tool_calls,
                                 &resp) != RG_OK)
        {
            return rg_session_status(s, RG_SESSION_FAILED, "the stored "
                                     "answer's tool calls cannot be read "
                                     "again");
        }

        rg_log_error(RG_LOG_NOTICE, &s->log, 0, "resumed in round %lu: its "
                     "%lu tool calls run again", (unsigned long) s->round,
                     (unsigned long) resp.ncalls);

        if (rg_session_take_calls(s, &resp) != RG_OK) {
            return rg_session_status(s, RG_SESSION_FAILED, "out of memory");
        }

        rg_session_phase_jump(s, RG_PHASE_LOOKUP);
        return RG_PHASE_GO;
    }

    rg_log_error(RG_LOG_NOTICE, &s->log, 0, "resumed after round %lu",
                 (unsigned long) s->round);

    rg_session_phase_jump(s, RG_PHASE_ASK);
    return RG_PHASE_GO;
}
