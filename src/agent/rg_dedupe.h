/* rg_dedupe.h: the dedupe cache of read-only tool calls (rg_dedupe.c):
 * answered from the store, from an identical call in flight in this
 * worker, or after another worker's identical call it waited for. */

#ifndef RG_DEDUPE_H
#define RG_DEDUPE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>

/* Call i of the turn has a key (extra[i].key): it is answered (a preset),
 * left to run, or waits; s->lookups counts those that wait, and the
 * driver is woken (rg_session_run_phases) when the last one is
 * answered. Never answers inside the call. */
void rg_dedupe_ask(rg_session_t *s, rg_uint_t i);

/* Call i ran: its result is cached (unless failed) and handed to the
 * identical calls that waited for it; text NULL: it has none (its turn
 * ended first), and one of them runs instead */
void rg_dedupe_result(rg_session_t *s, rg_uint_t i, const char *text,
    size_t len, rg_uint_t failed);

/* the turn ends without its results: nothing waits for it any more, and
 * it waits for nothing */
void rg_dedupe_cancel(rg_session_t *s);

#endif /* RG_DEDUPE_H */
