/* rg_events.h: a session's events (rg_events.c): what it does as it runs
 * (a model call started and ended, a tool call started and ended, an
 * approval needed, its end), emitted to the store's per-session stream
 * when its task asks for them and to its owner's hook in this process,
 * and read back from the store by whoever follows them. */

#ifndef RG_EVENTS_H
#define RG_EVENTS_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_session.h>
#include <rg_llm_client.h>
#include <rg_tools.h>
#include <rg_store.h>
#include <jansson.h>

/* the longest arguments and result a tool event carries (trimmed) */
#define RG_EVENTS_ARGS_LIMIT    512
#define RG_EVENTS_RESULT_LIMIT  1024

typedef struct rg_events_read_s  rg_events_read_t;

/* The answer of rg_events_read(): rc RG_OK with n entries (each an id
 * "ms-seq", a type and its JSON text, oldest first; n 0: none after the
 * id, or no such stream), or RG_ERROR with err. Valid during the call. */
typedef void (*rg_events_pt)(void *data, rg_int_t rc,
    const rg_store_entry_t *ev, rg_uint_t n, const char *err);


/* whether anything sees s's events is rg_session_events_on(s)
 * (rg_session_int.h): callers test it before they build the fields of
 * one */

/* Emits an event of s: fields (an object, taken over: freed here, also
 * when nobody sees it; NULL: none) with "type", "task", "session" and
 * "ts" (unix ms) added, secrets scrubbed; appended to the store's stream
 * "{ID}:events" when s->events, then shown to s->on_event when set. A
 * failed append is logged once per session and never fails it. */
void rg_session_event(rg_session_t *s, const char *type, json_t *fields);

/* the events of the state machine: a model call about to be sent and its
 * answer (or failure), a tool call launched and ended (one that never
 * ran has its start emitted with its end); each does nothing when
 * nobody sees s's events */
void rg_events_model_started(rg_session_t *s);
void rg_events_model_ended(rg_session_t *s, rg_llm_response_t *resp);
void rg_events_tool_started(rg_session_t *s, rg_tool_run_t *run);
void rg_events_tool_ended(rg_session_t *s, rg_tool_run_t *run);

/* what a model call used beyond its tokens, into o (its event, its
 * transcript's): cached tokens when there were, its cost when priced */
void rg_events_usage(json_t *o, rg_session_t *s, rg_llm_response_t *resp);

/* "final": its status, reason, answer, rounds and tokens; once, and not
 * for a session another worker took over (fenced) */
void rg_events_final(rg_session_t *s);

/* s goes: its appends still in flight answer to nobody */
void rg_events_stop(rg_session_t *s);

/* Reads the events of session sid from the engine's store: those after
 * after_id (NULL or "": from the first), at most count (0: 100). NULL
 * without memory or when after_id is no event id (rg_events_id_valid).
 * Answers through cb, never inside the call. */
rg_events_read_t *rg_events_read(rg_engine_t *e, const char *sid,
    const char *after_id, rg_uint_t count, rg_events_pt cb, void *data);
/* its callback will not be called */
void rg_events_cancel(rg_events_read_t *r);

/* 1 when id is an event id ("ms-seq"), as Last-Event-ID must be */
rg_uint_t rg_events_id_valid(const char *id);

/* text[0..len) as a JSON string of at most limit bytes (trimmed as tool
 * results are, head and tail kept); null when it is no UTF-8 */
json_t *rg_events_text(const char *text, size_t len, size_t limit);

#endif /* RG_EVENTS_H */
