/* rg_phase_lease.h: the phase lease (rg_phase_lease.c). */

#ifndef RG_PHASE_LEASE_H
#define RG_PHASE_LEASE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* a durable session takes its lease: this worker is its one writer */
rg_phase_rc_e rg_phase_lease(rg_session_t *s);

#endif /* RG_PHASE_LEASE_H */
