/* rg_approval.h: the operator's side of parked tasks (rg_approval.c):
 * deciding their calls, listing them, timing them out. A session parks
 * itself (src/agent/rg_park.c: its record "P{SID}:approval"); these
 * functions run on a worker's reactor (serve, the HTTP API) or in a
 * short-lived command, on the queue's connection. */

#ifndef RG_APPROVAL_H
#define RG_APPROVAL_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_stream.h>

/* rc RG_OK: msg says what was done; RG_DECLINED: msg says why not (it
 * starts "not awaiting approval", "no such call" or "already decided");
 * RG_ERROR: msg says what failed */
typedef void (*rg_approval_pt)(void *data, rg_int_t rc, const char *msg);

/* Decides call_id of task_id (NULL or "": every call still waiting),
 * approve 1 or 0 (deny, with note: why, told to the model), at most once
 * per call (a second decision is refused naming the first), in one
 * script on the session's slot. The decision that completes the record
 * queues the task again, once whoever else decides at the same time:
 * msg "queued again" then; else "recorded; N calls still wait". */
void rg_approval_decide(rg_stream_t *q, const char *task_id,
    const char *call_id, rg_uint_t approve, const char *note,
    rg_approval_pt cb, void *data);

/* A parked task cancelled: its record says so, and it is queued again
 * for its session to end cancelled (why: its reason); RG_DECLINED "not
 * awaiting approval" when it is not parked. */
void rg_approval_cancel(rg_stream_t *q, const char *task_id, const char *why,
    rg_approval_pt cb, void *data);

/* The record of task_id as JSON (msg): {"task", "status", "round",
 * "deadline", "calls": [{"id", "name", "arguments", "decision":
 * {"approve", "note", "at"} or null}]}; RG_DECLINED "not awaiting
 * approval" when it has none. */
void rg_approval_get(rg_stream_t *q, const char *task_id,
    rg_approval_pt cb, void *data);

/* The parked tasks, soonest deadline first, at most max: msg is a JSON
 * array [{"task", "deadline"}] */
void rg_approval_list(rg_stream_t *q, rg_uint_t max, rg_approval_pt cb,
    void *data);

/* a parked task's deadline, on the queue's list of them
 * ("P{q:NAME}:parked", a sorted set) */
void rg_approval_watch(rg_stream_t *q, const char *task_id,
    rg_msec_t deadline, rg_stream_done_pt cb, void *data);

/* how many tasks the list holds now (ZCARD), for the metrics */
typedef void (*rg_approval_count_pt)(void *data, int64_t n, const char *err);

void rg_approval_count(rg_stream_t *q, rg_approval_count_pt cb, void *data);

/* Tasks whose wait passed: taken off the list atomically (one worker
 * each), marked timed_out unless decided meanwhile, and queued again,
 * for their sessions to end approval_timed_out. cb: how many. */
typedef void (*rg_approval_expired_pt)(void *data, rg_uint_t n,
    const char *err);

void rg_approval_expire(rg_stream_t *q, rg_uint_t max,
    rg_approval_expired_pt cb, void *data);

/* `reagent approve`, `deny`, `pending` (rg_approval_cli.c) */
extern const rg_cli_t  rg_approve_cli;
extern const rg_cli_t  rg_deny_cli;
extern const rg_cli_t  rg_pending_cli;

#endif /* RG_APPROVAL_H */
