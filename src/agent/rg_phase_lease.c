/* rg_phase_lease.c: the phase lease, the first of a session's table
 * (rg_session_phase.c). A session of a durable store runs only once this
 * worker holds its lease (rg_lease.c): the store holds the task, and
 * every write of the session carries the lease's fencing token. A
 * session another worker holds ends here without writing anything; one
 * whose lease the store did not give within store_timeout ends failed.
 * A session of the memory store has nothing to lease. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_phase_lease.h>
#include <rg_lease.h>
#include <rg_store_conf.h>


static void
rg_phase_lease_taken(rg_session_t *s, rg_int_t rc, const char *why)
{
    if (rc == RG_OK) {
        if (s->taken_over && !s->resumed
            && rg_store_ctx(s->engine)->epoch.losses != s->taken_losses)
        {
            /* read as not in the store before its loss was known (the
             * epoch's answer came after the record's): the take was
             * refused "gone" until it was */
            rg_session_taken_unknown(s);
            return;
        }

        rg_session_phase_done(s);
        return;
    }

    /* another worker runs it: nothing is written here */
    s->fenced = (rc == RG_DECLINED);

    if (s->resumed) {
        rg_session_finish(s, rc == RG_DECLINED ? RG_SESSION_CANCELLED
                                               : RG_SESSION_FAILED,
                          rc == RG_DECLINED
                          ? "not resumed here: its lease is %s"
                          : "its lease could not be taken within "
                            "store_timeout: %s", why);
        return;
    }

    rg_session_finish(s, rc == RG_DECLINED ? RG_SESSION_CANCELLED
                                           : RG_SESSION_FAILED,
                      rc == RG_DECLINED ? "not run here: its lease is %s"
                                        : "its lease could not be taken "
                                          "within store_timeout: %s", why);
}


rg_phase_rc_e
rg_phase_lease(rg_session_t *s)
{
    if (!s->durable) {
        return RG_PHASE_GO;
    }

    if (s->phase_step == 0) {
        s->phase_step = 1;
        rg_lease_take(s, rg_phase_lease_taken);
    }

    return RG_PHASE_WAIT;
}
