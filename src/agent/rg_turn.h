/* rg_turn.h: one turn of a session around its tool calls (rg_turn.c). */

#ifndef RG_TURN_H
#define RG_TURN_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session.h>

/* the guards and caches in front of the calls of resp, then the calls;
 * the session goes on from the tools' end, or ends here */
void rg_turn_prepare(rg_session_t *s, rg_llm_response_t *resp);
/* the dedupe answers are in: the calls run (side effects claimed first) */
void rg_turn_go(rg_session_t *s);
/* the same, decided by an operator (rg_park.c): the calls run */
void rg_turn_tools(rg_session_t *s);
/* dedupe answers still to come are not waited for */
void rg_turn_cancel_lookups(rg_session_t *s);
/* checked arguments that no turn took over */
void rg_turn_drop_args(rg_session_t *s);
/* the side effects of the turn in flight, claimed and stored again
 * under a new lease (the store forgot them: rg_recover.c) */
void rg_turn_reclaim(rg_session_t *s);
/* the calls an answer asked for, those past the cap included */
rg_uint_t rg_turn_asked(rg_llm_response_t *resp);

#endif /* RG_TURN_H */
