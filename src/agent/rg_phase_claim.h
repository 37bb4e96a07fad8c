/* rg_phase_claim.h: the phase claim (rg_phase_claim.c). */

#ifndef RG_PHASE_CLAIM_H
#define RG_PHASE_CLAIM_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* the turn's side effects claimed in the store before they run */
rg_phase_rc_e rg_phase_claim(rg_session_t *s);
/* the claims asked for are not waited for (the session ends) */
void rg_phase_claim_cancel(rg_session_t *s);

#endif /* RG_PHASE_CLAIM_H */
