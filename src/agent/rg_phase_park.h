/* rg_phase_park.h: the phase park (rg_phase_park.c): a session parked
 * for an operator's decision on its dangerous calls, and the record it
 * keeps of them. */

#ifndef RG_PHASE_PARK_H
#define RG_PHASE_PARK_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* In front of a turn's calls: RG_PHASE_GO when they run now, with the
 * operator's decisions applied; RG_PHASE_WAIT while the record is read,
 * and when the session parks (its owner is told, it is no longer the
 * driver's); RG_PHASE_FINISH (approval_timed_out, cancelled, failed) */
rg_phase_rc_e rg_phase_park(rg_session_t *s);
/* the record asked for is not waited for (the session ends) */
void rg_phase_park_cancel(rg_session_t *s);

/* "P{SID}:approval", a JSON object:
 *   status     "pending", "decided" (every call) or "timed_out"
 *   task, session, agent, round (the answer's), parked, deadline (wall
 *   clock ms), timeout (ms), line (the task line, to queue it again),
 *   calls      [{"id", "name", "arguments"}] the calls waiting
 *   decisions  {ID: {"approve": true|false, "note", "at"}}
 * The queue's scripts (rg_approval.c) decide and time it out. */

#endif /* RG_PHASE_PARK_H */
