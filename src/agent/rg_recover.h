/* rg_recover.h: a session written back whole into a store that lost its
 * memory (rg_recover.c). */

#ifndef RG_RECOVER_H
#define RG_RECOVER_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* The store lost the session (a write answered "lost", a renewal
 * "gone"): a new lease is taken, the
 * current turn's side-effect claims are put again, and everything the
 * session holds is written as one checkpoint; then its owner's
 * recovered hook is told (serve queues its task again). A session
 * already recovering, ending or fenced is left alone; one whose
 * checkpoint is in flight recovers when that is answered. */
void rg_recover_session(rg_session_t *s);

/* no recovery step in flight any more (the session ends) */
void rg_recover_stop(rg_session_t *s);

#endif /* RG_RECOVER_H */
