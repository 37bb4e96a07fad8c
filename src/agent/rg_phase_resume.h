/* rg_phase_resume.h: the phase resume (rg_phase_resume.c). */

#ifndef RG_PHASE_RESUME_H
#define RG_PHASE_RESUME_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* a session read back from the store goes on where it stood */
rg_phase_rc_e rg_phase_resume(rg_session_t *s);

#endif /* RG_PHASE_RESUME_H */
