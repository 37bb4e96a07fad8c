/* rg_claim.h: a turn's side effects, at most once (rg_claim.c): their
 * claims and results in the store. */

#ifndef RG_CLAIM_H
#define RG_CLAIM_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* call i of the turn is a side effect a durable session claims before it
 * runs (it is not answered beforehand) */
rg_uint_t rg_claim_needed(rg_session_t *s, rg_uint_t i);
/* its name under the session, "idem:<round>:<id>" (empty: no memory) */
rg_str_t rg_claim_name(rg_session_t *s, rg_uint_t i);
/* its claim (s->claim_rec), set only if absent: cb answers (NULL:
 * nobody); NULL without memory */
rg_store_op_t *rg_claim_put(rg_session_t *s, rg_uint_t i, rg_store_pt cb,
    void *data);
/* its result, in place of its claim (fire and forget) */
void rg_claim_result(rg_session_t *s, rg_uint_t i, rg_tool_run_t *run);
/* The store forgot the session while this turn's side effects run or
 * ran: under the new lease, each running one's claim is put again and
 * each ended one's result (rg_recover.c) */
void rg_claim_again(rg_session_t *s);

#endif /* RG_CLAIM_H */
