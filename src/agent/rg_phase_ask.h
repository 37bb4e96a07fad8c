/* rg_phase_ask.h: the phase ask (rg_phase_ask.c). */

#ifndef RG_PHASE_ASK_H
#define RG_PHASE_ASK_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* the next model call, guarded, and its answer */
rg_phase_rc_e rg_phase_ask(rg_session_t *s);

#endif /* RG_PHASE_ASK_H */
