/* rg_phase_run.h: the phase run (rg_phase_run.c). */

#ifndef RG_PHASE_RUN_H
#define RG_PHASE_RUN_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* the turn's calls run together; their results are appended */
rg_phase_rc_e rg_phase_run(rg_session_t *s);

#endif /* RG_PHASE_RUN_H */
