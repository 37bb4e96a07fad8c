/* rg_lease.h: one writer per session (rg_lease.c). */

#ifndef RG_LEASE_H
#define RG_LEASE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* rc: RG_OK, the session's lease is this worker's (s->lease, renewed
 * from now on); RG_DECLINED, another worker holds it (why: its holder);
 * RG_ERROR, the store did not answer within store_timeout */
typedef void (*rg_lease_pt)(rg_session_t *s, rg_int_t rc, const char *why);

void rg_lease_take(rg_session_t *s, rg_lease_pt next);
/* renewed now, not at its time: the store may have lost it (a renewal
 * answered "gone" writes the session back: rg_recover.c); the face's
 * rg_session_renew() */
void rg_lease_check(rg_session_t *s);
/* s->lease was taken anew (rg_recover.c): its heartbeat starts */
void rg_lease_resume(rg_session_t *s);
/* the session ends: no more heartbeats; the lease is given back */
void rg_lease_release(rg_session_t *s);
/* no more heartbeats, the lease is left to expire (a stopping worker) */
void rg_lease_stop(rg_session_t *s);

#endif /* RG_LEASE_H */
