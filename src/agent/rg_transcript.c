/* rg_transcript.c: a session's transcript, for `run --transcript`,
 * `batch --transcripts` and `replay`: the events of a session while it is
 * recorded (each model call with the exact request and response and the
 * provider's own id of the response, each turn and tool call with the
 * result the model saw, each child session's whole transcript, nested
 * where it ended), and the whole conversation as JSON when it is written.
 * A secret never reaches it. Also the face's way to it
 * (rg_session_record, rg_session_transcript). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_transcript.h>
#include <rg_events.h>
#include <rg_secret.h>
#include <rg_tools_conf.h>
#include <rg_tool_args.h>
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
    char       rid[64];
    json_t    *ev, *raw, *ids;
    rg_uint_t  i;

    if (s->transcript == NULL) {
        return;
    }

    ids = NULL;

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

    rg_events_usage(ev, s, resp);

    /* the exact request and response, so `reagent replay` can re-run it */
    if (s->body.data) {
        json_object_set_new(ev, "request",
                            json_loadb(s->body.data, s->body.len,
                                       JSON_ALLOW_NUL, NULL));
    }

    /* the provider's own ids of the response, to find it in their logs */
    for (i = 0; i < RG_LLM_PROVIDER_IDS; i++) {
        if (s->req.provider_id[i] == NULL) {
            continue;
        }

        if (ids == NULL) {
            ids = json_object();
            json_object_set_new(ev, "provider_request_id", ids);
        }

        json_object_set_new(ids, rg_llm_provider_id_headers[i],
                            json_string(s->req.provider_id[i]));
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
    size_t          limit, len;
    json_t         *ev, *res;
    rg_buf_t        b;
    rg_uint_t       i;
    const char     *text;
    rg_tool_run_t  *run;

    if (s->transcript == NULL) {
        return;
    }

    limit = rg_tools_conf(s->engine->cycle)->tool_result_limit;
    memset(&b, 0, sizeof(b));

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

        /* the result as the model saw it: trimmed, as the phase run does */
        rg_session_seen(run, limit, &b, &text, &len);

        ev = json_pack("{s:s, s:I, s:s, s:s, s:I, s:b, s:b, s:b}",
                       "type", "tool_call",
                       "round", (json_int_t) s->round,
                       "tool_call_id", run->call.id ? run->call.id : "",
                       "name", run->name,
                       "ms", (json_int_t) run->ms,
                       "ok", !run->failed,
                       "cached", s->calls[i].has_preset,
                       "denied", run->denied);
        if (ev) {
            /* null when it is no text JSON can hold (bytes that are not
             * UTF-8): replay compares no such one */
            res = json_stringn(text, len);
            json_object_set_new(ev, "result", res ? res : json_null());
            json_array_append_new(json_object_get(s->transcript, "events"),
                                  ev);
        }
    }

    rg_buf_free(&b);
}


void
rg_transcript_child(rg_session_t *parent, rg_session_t *child,
    const char *tool_call_id)
{
    json_t  *ev, *t;

    if (parent->transcript == NULL || child->transcript == NULL) {
        return;
    }

    t = rg_transcript_json(child);
    if (t == NULL) {
        return;
    }

    /* where it ended in the parent's time: its calls happened before */
    ev = json_pack("{s:s, s:I, s:s, s:s%, s:s, s:o}",
                   "type", "child",
                   "round", (json_int_t) parent->round,
                   "tool_call_id", tool_call_id ? tool_call_id : "",
                   "agent", child->agent->name.data, child->agent->name.len,
                   "session", child->id,
                   "transcript", t);
    if (ev) {
        json_array_append_new(json_object_get(parent->transcript, "events"),
                              ev);
    }
}


json_t *
rg_transcript_json(rg_session_t *s)
{
    json_t    *t, *msgs, *m, *u;
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

    t = json_pack("{s:s, s:s%, s:s%, s:s, s:s?, s:I, s:I, s:I, s:I, "
                  "s:{s:I, s:I, s:I, s:I}, s:s%, s:I, s:o, s:O?}",
                  "session", s->id,
                  "agent", s->agent->name.data, s->agent->name.len,
                  "model", s->llm->model.data, s->llm->model.len,
                  "status", rg_session_state_name(s->state),
                  "reason", s->reason,
                  "rounds", (json_int_t) s->round,
                  "model_calls", (json_int_t) s->model_calls,
                  "tool_calls", (json_int_t) s->tool_calls,
                  "dedupe_hits", (json_int_t) s->dedupe_hits,
                  "tokens",
                  "prompt", (json_int_t) s->prompt_tokens,
                  "completion", (json_int_t) s->completion_tokens,
                  "total", (json_int_t) (s->prompt_tokens
                                         + s->completion_tokens),
                  "children", (json_int_t) s->child_tokens,
                  "finish_reason",
                  s->finish_reason.data ? s->finish_reason.data : "",
                  s->finish_reason.len,
                  "ms", (json_int_t) ((s->ended ? s->ended
                                               : rg_monotonic_msec())
                                      - s->started),
                  "messages", msgs,
                  "events", s->transcript
                            ? json_object_get(s->transcript, "events")
                            : NULL);

    if (t != NULL) {
        u = json_object_get(t, "tokens");
        json_object_set_new(u, "cached", json_integer(s->cached_tokens));
        json_object_set_new(u, "cache_write",
                            json_integer(s->cache_write_tokens));

        if (s->llm->priced || s->cost > 0) {
            json_object_set_new(t, "cost", rg_session_dollars(s->cost));
        }
    }

    return t;
}


char *
rg_transcript_text(rg_session_t *s)
{
    char    *out;
    json_t  *t;

    t = rg_transcript_json(s);
    if (t == NULL) {
        return NULL;
    }

    out = json_dumps(t, JSON_INDENT(2));
    json_decref(t);

    return rg_secret_scrub_str(out);
}


/* the face's (rg_session.h) ------------------------------------------- */

rg_int_t
rg_session_record(rg_session_t *s, const char *file)
{
    if (file) {
        s->transcript_file = rg_pstrdup(s->pool, file, strlen(file));
        if (s->transcript_file == NULL) {
            return RG_ERROR;
        }
    }

    if (rg_transcript_start(s) != RG_OK) {
        s->transcript_file = NULL;
        return RG_ERROR;
    }

    return RG_OK;
}


const char *
rg_session_record_file(rg_session_t *s)
{
    return s->transcript_file;
}


char *
rg_session_transcript(rg_session_t *s)
{
    return rg_transcript_text(s);
}
