/* rg_phase_lookup.h: the phase lookup (rg_phase_lookup.c). */

#ifndef RG_PHASE_LOOKUP_H
#define RG_PHASE_LOOKUP_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* the guards and caches in front of the turn's calls */
rg_phase_rc_e rg_phase_lookup(rg_session_t *s);

#endif /* RG_PHASE_LOOKUP_H */
