/* rg_phase_checkpoint.c: the phase checkpoint (rg_session_phase.c).
 * Before each model call a durable session writes what changed since its
 * last checkpoint, in one atomic step (rg_durable.c): its start, then
 * each turn whole (the answer and all its results). A store that does
 * not answer is asked again with backoff, up to store_timeout; a store
 * that refuses (another worker has the session) drops it. A session of
 * the memory store writes nothing. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_phase_checkpoint.h>
#include <rg_durable.h>


rg_phase_rc_e
rg_phase_checkpoint(rg_session_t *s)
{
    if (s->phase_step) {
        return RG_PHASE_WAIT;          /* written: rg_session_phase_done */
    }

    if (!s->durable) {
        return RG_PHASE_GO;
    }

    s->phase_step = 1;
    s->cp_partial = 0;
    rg_durable_checkpoint(s, rg_session_phase_done);

    return RG_PHASE_WAIT;
}
