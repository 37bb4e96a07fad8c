/* rg_transcript.c: a session's transcript, for `run --transcript` and
 * `replay`: the events of a session while it is recorded (each model
 * call with the exact request and response, each turn and tool call),
 * and the whole conversation as JSON when it is written. A secret never
 * reaches it. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session.h>
#include <rg_transcript.h>
#include <rg_secret.h>
#include <jansson.h>


rg_int_t
rg_transcript_start(rg_session_t *s)
{
    s->transcript = json_pack("{s:[]}", "events");

    return s->transcript ? RG_OK : RG_ERROR;
}


void
rg_transcript_model_call(rg_session_t *s, rg_llm_response_t *resp)
{
    char     rid[64];
    json_t  *ev, *raw;

    if (s->transcript == NULL) {
        return;
    }

    /* the request id the call carried (rounds count after this) */
    if (s->summarizing) {
        snprintf(rid, sizeof(rid), "%s-summary-%lu", s->id,
                 (unsigned long) s->round);
    } else {
        snprintf(rid, sizeof(rid), "%s-%lu", s->id,
                 (unsigned long) s->round + 1);
    }

    ev = json_pack("{s:s, s:I, s:s, s:I, s:I, s:s, s:I, s:I, s:I, s:s#, "
                   "s:b}",
                   "type", "model_call",
                   "round", (json_int_t) s->round + !s->summarizing,
                   "request_id", rid,
                   "attempts", (json_int_t) s->req.attempt + 1,
                   "ms", (json_int_t) (rg_monotonic_msec() - s->call_started),
                   "status", rg_llm_status_name(resp->status),
                   "http_status", (json_int_t) s->req.http_status,
                   "prompt_tokens", (json_int_t) resp->prompt_tokens,
                   "completion_tokens", (json_int_t) resp->completion_tokens,
                   "finish_reason",
                   resp->finish_reason.data ? resp->finish_reason.data : "",
                   (int) resp->finish_reason.len,
                   "summary", s->summarizing);
    if (ev == NULL) {
        return;
    }

    /* the exact request and response, so `reagent replay` can re-run it */
    if (s->body.data) {
        json_object_set_new(ev, "request",
                            json_loadb(s->body.data, s->body.len,
                                       JSON_ALLOW_NUL, NULL));
    }

    if (s->req.http_status == 0 && resp->error.len) {
        json_object_set_new(ev, "error", json_stringn(resp->error.data,
                                                      resp->error.len));

    } else if (s->req.resp.data && s->req.resp.len) {
        raw = json_loadb(s->req.resp.data, s->req.resp.len, JSON_ALLOW_NUL,
                         NULL);
        json_object_set_new(ev, "response",
                            raw ? raw : json_stringn(s->req.resp.data,
                                                     s->req.resp.len));
    }

    json_array_append_new(json_object_get(s->transcript, "events"), ev);
}


void
rg_transcript_turn(rg_session_t *s, rg_tool_turn_t *turn)
{
    json_t         *ev;
    rg_uint_t       i;
    rg_tool_run_t  *run;

    if (s->transcript == NULL) {
        return;
    }

    /* the turn as a whole: as long as its slowest call, if all ran at once */
    ev = json_pack("{s:s, s:I, s:I, s:I}", "type", "turn",
                   "round", (json_int_t) s->round,
                   "calls", (json_int_t) turn->n,
                   "ms", (json_int_t) (rg_monotonic_msec() - turn->started));
    if (ev) {
        json_array_append_new(json_object_get(s->transcript, "events"), ev);
    }

    for (i = 0; i < turn->n; i++) {
        run = turn->runs[i];

        ev = json_pack("{s:s, s:I, s:s, s:s, s:I, s:b, s:b}",
                       "type", "tool_call",
                       "round", (json_int_t) s->round,
                       "tool_call_id", run->call.id ? run->call.id : "",
                       "name", run->name,
                       "ms", (json_int_t) run->ms,
                       "ok", !run->failed,
                       "cached", s->calls[i].has_preset);
        if (ev) {
            json_array_append_new(json_object_get(s->transcript, "events"),
                                  ev);
        }
    }
}


char *
rg_transcript_text(rg_session_t *s)
{
    char      *out;
    json_t    *t, *msgs, *m;
    rg_msg_t  *msg;

    msgs = json_array();
    if (msgs == NULL) {
        return NULL;
    }

    for (msg = s->msgs.head; msg; msg = msg->next) {
        /* a tool's result may hold NUL bytes: JSON writes \u0000 */
        m = json_loadb(msg->json.data, msg->json.len, JSON_ALLOW_NUL, NULL);
        if (m) {
            json_array_append_new(msgs, m);
        }
    }

    t = json_pack("{s:s, s:s%, s:s%, s:s, s:s?, s:I, s:I, s:I, "
                  "s:{s:I, s:I, s:I}, s:I, s:o, s:O?}",
                  "session", s->id,
                  "agent", s->agent->name.data, s->agent->name.len,
                  "model", s->llm->model.data, s->llm->model.len,
                  "status", rg_session_state_name(s->state),
                  "reason", s->reason,
                  "rounds", (json_int_t) s->round,
                  "tool_calls", (json_int_t) s->tool_calls,
                  "dedupe_hits", (json_int_t) s->dedupe_hits,
                  "tokens",
                  "prompt", (json_int_t) s->prompt_tokens,
                  "completion", (json_int_t) s->completion_tokens,
                  "total", (json_int_t) (s->prompt_tokens
                                         + s->completion_tokens),
                  "ms", (json_int_t) ((s->ended ? s->ended
                                               : rg_monotonic_msec())
                                      - s->started),
                  "messages", msgs,
                  "events", s->transcript
                            ? json_object_get(s->transcript, "events")
                            : NULL);
    if (t == NULL) {
        return NULL;
    }

    out = json_dumps(t, JSON_INDENT(2));
    json_decref(t);

    return rg_secret_scrub_str(out);
}
