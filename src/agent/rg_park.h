/* rg_park.h: a session parked for an operator's decision on its
 * dangerous calls (rg_park.c), and the record it keeps of them. */

#ifndef RG_PARK_H
#define RG_PARK_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session.h>

/* In front of a turn's calls: RG_OK when they run now; RG_AGAIN when the
 * session parks, goes on later (the record's decisions read), or ends
 * (approval_timed_out): it is no longer the caller's. */
rg_int_t rg_park_check(rg_session_t *s);
/* the record asked for is not waited for */
void rg_park_cancel(rg_session_t *s);

/* "P{SID}:approval", a JSON object:
 *   status     "pending", "decided" (every call) or "timed_out"
 *   task, session, agent, round (the answer's), parked, deadline (wall
 *   clock ms), timeout (ms), line (the task line, to queue it again),
 *   calls      [{"id", "name", "arguments"}] the calls waiting
 *   decisions  {ID: {"approve": true|false, "note", "at"}}
 * The queue's scripts (rg_approval.c) decide and time it out. */

#endif /* RG_PARK_H */
