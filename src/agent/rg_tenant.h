/* rg_tenant.h: budgets per tenant, across every process on the store
 * (rg_tenant.c). */

#ifndef RG_TENANT_H
#define RG_TENANT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* Before a model call (its tokens' budget, then its cost's): RG_OK, it
 * may go; RG_AGAIN, the store was asked and the driver is woken when it
 * answers, to ask again (rg_phase_ask.c), or the session ends
 * budget_exceeded, naming the tenant, or failed when the store stayed
 * away for store_timeout under shared_limits_fallback wait; RG_ERROR,
 * out of memory */
rg_int_t rg_tenant_check(rg_session_t *s);
/* the provider counted tokens for the tenant's session, which cost
 * `cost` dollars by its llm's price */
void rg_tenant_charge(rg_session_t *s, int64_t tokens, double cost);
/* the session ends: its question is not answered */
void rg_tenant_cancel(rg_session_t *s);

#endif /* RG_TENANT_H */
