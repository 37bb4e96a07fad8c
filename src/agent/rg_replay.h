/* rg_replay.h: replaying a transcript (rg_replay.c): each session of the
 * replayed run, its child sessions included, answered from its own
 * recorded model calls, and checked against them: a model request that
 * no longer matches the recorded one, or a tool result that differs,
 * ends the session with a divergence that names the round and the call.
 * What the phases ask and run (rg_phase_ask.c, rg_phase_run.c),
 * rg_child.c and the commands (rg_run.c, rg_replay_cli.c) ask of it. */

#ifndef RG_REPLAY_H
#define RG_REPLAY_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <jansson.h>

/* the recording of transcript t (a reagent transcript object, kept
 * referenced), for its top session; NULL when memory ran out */
rg_replay_t *rg_replay_create(json_t *t);
/* it and the recordings of its child sessions */
void rg_replay_destroy(rg_replay_t *r);

/* s replays r: it takes the recorded session id, so that the ids made
 * from it (tool call ids the provider did not send) are the recorded
 * ones */
void rg_replay_attach(rg_session_t *s, rg_replay_t *r);
/* child, started by parent's call tool_call_id, replays the recording
 * of that child session */
void rg_replay_child(rg_session_t *parent, rg_session_t *child,
    const char *tool_call_id);

/* Before a model call of s: its request (s->body) is compared with the
 * next recorded one, whose answer is set as s->req.recorded. RG_OK, or
 * RG_DECLINED when the run diverged: s ended, and may be gone. */
rg_int_t rg_replay_ask(rg_session_t *s);
/* After a turn of s: each result, trimmed to limit as the model sees
 * it, is compared with the recorded one; RG_DECLINED as above. */
rg_int_t rg_replay_turn(rg_session_t *s, rg_tool_turn_t *turn,
    size_t limit);

/* its recorded model calls and child sessions, and the calls answered */
void rg_replay_sizes(rg_replay_t *r, size_t *calls, size_t *children,
    size_t *used);

/* When the run ended: the first divergence of any session, or, when none
 * diverged, a session that used fewer model answers than it recorded;
 * NULL when the replay matched its recording. Lives as long as r. */
const char *rg_replay_divergence(rg_replay_t *r);

#endif /* RG_REPLAY_H */
