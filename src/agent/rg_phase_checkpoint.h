/* rg_phase_checkpoint.h: the phase checkpoint (rg_phase_checkpoint.c). */

#ifndef RG_PHASE_CHECKPOINT_H
#define RG_PHASE_CHECKPOINT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* a durable session's turn is stored before the next model call */
rg_phase_rc_e rg_phase_checkpoint(rg_session_t *s);

#endif /* RG_PHASE_CHECKPOINT_H */
