/* rg_events.c: a session's events, for those who follow it as it runs
 * (the HTTP API's Server-Sent Events, `reagent events`, an owner in this
 * process). Builds each event (its fields, with "type", "task",
 * "session" and "ts"), scrubs secrets from it, appends it to the store's
 * stream "{ID}:events" when the task asked for events, and shows it to
 * the owner's hook when one is set. Sessions nobody follows pay one test
 * per event point and build nothing. Appends are fire and forget: one of
 * a session is issued in order on its hash tag's connection; a failure
 * never fails the session, and the store's outage is said once, not
 * once per event or per session (rg_store_down). Also reads the stream
 * back. Knows nothing of HTTP. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json_write.h>
#include <rg_session_int.h>
#include <rg_events.h>
#include <rg_store.h>
#include <rg_store_conf.h>
#include <rg_secret.h>
#include <rg_json.h>
#include <rg_tool_args.h>
#include <rg_llm.h>
#include <jansson.h>


/* what a session's appends share with their answers, which may come
 * after it went */
struct rg_events_sink_s {
    rg_uint_t           refs;         /* the session's, and each append's */
    rg_engine_t        *engine;
    unsigned            logged:1;     /* out of memory, said */
};


struct rg_events_read_s {
    rg_store_t         *st;
    rg_store_op_t      *op;
    rg_events_pt        cb;
    void               *data;
};


static void
rg_events_sink_unref(rg_events_sink_t *k)
{
    if (--k->refs == 0) {
        free(k);
    }
}


static void
rg_events_appended(void *data, const rg_store_res_t *res)
{
    rg_engine_t       *e;
    rg_agent_ctx_t    *ctx;
    rg_events_sink_t  *k;

    k = data;
    e = k->engine;
    ctx = rg_agent_ctx(e);

    if (res->rc == RG_OK) {
        rg_store_up(rg_store_ctx(e), e->log, res);

    /* fenced: another worker runs the session now, and records its
     * events; lost: the session is being written back, which says so;
     * shutting down: nobody is left to tell */
    } else if (ctx
               && !(res->rc == RG_DECLINED && res->err
                    && (strncmp(res->err, "fenced", 6) == 0
                        || strncmp(res->err, "lost", 4) == 0))
               && !(res->err && strstr(res->err, "shutting down")))
    {
        rg_store_down(rg_store_ctx(e), e->log, &ctx->events_said, "events "
                      "cannot be recorded in the store (%s): the sessions "
                      "go on, and their events are lost until it answers "
                      "again", res->err ? res->err : "refused");
    }

    rg_events_sink_unref(k);
}


static void
rg_events_append(rg_session_t *s, const char *type, const char *text,
    size_t len)
{
    rg_store_t        *st;
    rg_store_op_t     *op;
    rg_store_event_t   ev;
    rg_events_sink_t  *k;

    st = rg_store_ctx(s->engine);
    if (st == NULL || st->append == NULL) {
        return;
    }

    k = s->events_sink;

    if (k == NULL) {
        k = calloc(1, sizeof(rg_events_sink_t));
        if (k == NULL) {
            return;
        }
        k->refs = 1;
        k->engine = s->engine;
        s->events_sink = k;
    }

    ev.id.data = s->id;
    ev.id.len = strlen(s->id);
    ev.lease = s->lease;
    ev.type.data = (char *) type;
    ev.type.len = strlen(type);
    ev.data.data = (char *) text;
    ev.data.len = len;
    ev.max = rg_store_events_max(s->engine);
    ev.ttl = rg_store_events_ttl(s->engine);

    op = st->append(st, &ev, rg_events_appended, k);

    if (op) {
        k->refs++;

    } else if (!k->logged) {
        k->logged = 1;
        rg_log_error(RG_LOG_WARN, &s->log, 0, "an event was not recorded "
                     "(out of memory); the session goes on, and this is "
                     "said once");
    }
}


void
rg_session_event(rg_session_t *s, const char *type, json_t *fields)
{
    char    *text, *copy;
    size_t   len, n;
    json_t  *ev, *seen;

    /* nothing after the end: a late event would read as a new life */
    if (!rg_session_events_on(s) || s->events_ended) {
        json_decref(fields);
        return;
    }

    ev = json_object();
    if (ev == NULL || (fields && !json_is_object(fields))) {
        json_decref(ev);
        json_decref(fields);
        return;
    }

    json_object_set_new(ev, "type", json_string(type));
    json_object_set_new(ev, "task", s->task_id ? json_string(s->task_id)
                                               : json_null());
    json_object_set_new(ev, "session", json_string(s->id));
    json_object_set_new(ev, "ts", json_integer((json_int_t) rg_wall_msec()));

    if (fields) {
        json_object_update(ev, fields);
        json_decref(fields);
    }

    text = rg_json_dumps(ev, 0, NULL);
    if (text == NULL) {
        json_decref(ev);
        return;
    }

    /* a provider's error or a tool's result may quote a key */
    len = strlen(text);
    copy = rg_strdup_len(text, len);
    n = rg_secret_scrub(text, len);
    text[n] = '\0';

    seen = ev;

    if (copy == NULL || n != len || memcmp(copy, text, len) != 0) {
        seen = json_loadb(text, n, 0, NULL);
    }

    free(copy);

    if (s->events) {
        rg_events_append(s, type, text, n);
    }

    if (s->on_event && seen) {
        s->on_event(s, type, seen, s->on_event_data);
    }

    if (seen != ev) {
        json_decref(seen);
    }

    json_decref(ev);
    rg_json_free_dump(text);
}


json_t *
rg_events_text(const char *text, size_t len, size_t limit)
{
    json_t    *j;
    rg_buf_t   b;

    if (text == NULL) {
        return json_null();
    }

    if (len <= limit) {
        j = json_stringn(text, len);
        return j ? j : json_null();
    }

    memset(&b, 0, sizeof(b));

    if (rg_tool_trim(text, len, limit, &b) == RG_TOOL_TRIM_ERROR) {
        rg_buf_free(&b);
        return json_null();
    }

    j = json_stringn(b.data ? b.data : "", b.len);
    rg_buf_free(&b);

    return j ? j : json_null();
}


/* the events the session emits -------------------------------------- */

void
rg_events_usage(json_t *o, rg_session_t *s, rg_llm_response_t *resp)
{
    if (resp->cached_tokens || resp->cache_write_tokens) {
        json_object_set_new(o, "cached_tokens",
                            json_integer(resp->cached_tokens));
        json_object_set_new(o, "cache_write_tokens",
                            json_integer(resp->cache_write_tokens));
    }

    if (s->llm->priced) {
        json_object_set_new(o, "cost", rg_session_dollars(resp->cost));
    }
}


void
rg_events_model_started(rg_session_t *s)
{
    if (!rg_session_events_on(s)) {
        return;
    }

    rg_session_event(s, "model_call_started",
                     json_pack("{s:I, s:s%, s:s%, s:b}",
                               "round", (json_int_t) s->round
                                        + !s->summarizing,
                               "model", s->llm->model.data,
                               s->llm->model.len,
                               "llm", s->llm->name.data, s->llm->name.len,
                               "summary", s->summarizing));
}


void
rg_events_model_ended(rg_session_t *s, rg_llm_response_t *resp)
{
    json_t  *f;

    if (!rg_session_events_on(s)) {
        return;
    }

    f = json_pack("{s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:b}",
                  "round", (json_int_t) s->round + !s->summarizing,
                  "ms", (json_int_t) (rg_monotonic_msec() - s->call_started),
                  "status", rg_llm_status_name(resp->status),
                  "prompt_tokens", (json_int_t) resp->prompt_tokens,
                  "completion_tokens", (json_int_t) resp->completion_tokens,
                  "tool_calls", (json_int_t) (resp->status == RG_LLM_OK
                                              ? resp->ncalls : 0),
                  "attempts", (json_int_t) s->req.attempt + 1,
                  "summary", s->summarizing);
    if (f == NULL) {
        return;
    }

    rg_events_usage(f, s, resp);

    if (resp->status == RG_LLM_OK) {
        json_object_set_new(f, "finish_reason",
                            rg_events_text(resp->finish_reason.data,
                                           resp->finish_reason.len, 64));
    } else {
        json_object_set_new(f, "error",
                            rg_events_text(resp->error.data
                                           ? resp->error.data : "",
                                           resp->error.len, 600));
        if (s->req.http_status) {
            json_object_set_new(f, "http_status",
                                json_integer(s->req.http_status));
        }
    }

    rg_session_event(s, "model_call_ended", f);
}


/* the request the model made for the run's call: the arguments as the
 * tool got them (checked, canonical), else as the model sent them */
static json_t *
rg_events_call_args(rg_session_t *s, rg_tool_run_t *run)
{
    if (run->call.args) {
        return rg_events_text(run->call.args, run->call.args_len,
                              RG_EVENTS_ARGS_LIMIT);
    }

    if (run->index < s->ncalls && s->calls[run->index].arguments.data) {
        return rg_events_text(s->calls[run->index].arguments.data,
                              s->calls[run->index].arguments.len,
                              RG_EVENTS_ARGS_LIMIT);
    }

    return json_string("");
}


void
rg_events_tool_started(rg_session_t *s, rg_tool_run_t *run)
{
    if (!rg_session_events_on(s)) {
        return;
    }

    rg_session_event(s, "tool_call_started",
                     json_pack("{s:s, s:s, s:I, s:o}",
                               "id", run->call.id ? run->call.id : "",
                               "name", run->name,
                               "round", (json_int_t) s->round,
                               "arguments", rg_events_call_args(s, run)));
}


void
rg_events_tool_ended(rg_session_t *s, rg_tool_run_t *run)
{
    json_t             *f, *text;
    rg_tool_request_t  *c;

    if (!rg_session_events_on(s)) {
        return;
    }

    /* a call that never ran (answered beforehand, refused, unknown) has
     * its start here, so that every end has one */
    if (!run->launched) {
        rg_events_tool_started(s, run);
    }

    c = run->index < s->ncalls ? &s->calls[run->index] : NULL;

    f = json_pack("{s:s, s:s, s:I, s:b, s:I}",
                  "id", run->call.id ? run->call.id : "",
                  "name", run->name,
                  "round", (json_int_t) s->round,
                  "ok", !run->failed,
                  "ms", (json_int_t) run->ms);
    if (f == NULL) {
        return;
    }

    if (run->denied) {
        json_object_set_new(f, "denied", json_true());
    }

    if (run->timed_out) {
        json_object_set_new(f, "timed_out", json_true());
    }

    if (c && c->has_preset) {
        json_object_set_new(f, "cached", json_true());
    }

    /* the same call earlier in the turn: its result is this one's */
    if (c && s->extra && s->extra[run->index].twin >= 0
        && (rg_uint_t) s->extra[run->index].twin < s->ncalls)
    {
        json_object_set_new(f, "same_as",
                            json_stringn(s->calls[s->extra[run->index].twin]
                                         .id.data,
                                         s->calls[s->extra[run->index].twin]
                                         .id.len));
    } else {
        text = rg_events_text(run->result ? run->result : "",
                              run->result ? run->result_len : 0,
                              RG_EVENTS_RESULT_LIMIT);
        json_object_set_new(f, run->failed ? "error" : "result", text);
    }

    rg_session_event(s, "tool_call_ended", f);
}


void
rg_events_final(rg_session_t *s)
{
    json_t  *answer, *final;

    if (s->events_ended || s->fenced || !rg_session_final(s)
        || !rg_session_events_on(s))
    {
        return;
    }

    answer = s->answer.data ? json_stringn(s->answer.data, s->answer.len)
                            : json_null();

    final = json_pack("{s:s, s:s?, s:o, s:I, s:I, s:I, s:I, s:I, s:I}",
                      "status", rg_session_state_name(s->state),
                      "reason", s->reason,
                      "answer", answer ? answer : json_null(),
                      "rounds", (json_int_t) s->round,
                      "tokens", (json_int_t) (s->prompt_tokens
                                              + s->completion_tokens),
                      "prompt_tokens", (json_int_t) s->prompt_tokens,
                      "completion_tokens", (json_int_t) s->completion_tokens,
                      "tool_calls", (json_int_t) s->tool_calls,
                      "ms", (json_int_t) (s->elapsed + s->ended
                                          - s->started));

    if (final && s->cached_tokens) {
        json_object_set_new(final, "cached_tokens",
                            json_integer(s->cached_tokens));
    }

    if (final && (s->llm->priced || s->cost > 0)) {
        json_object_set_new(final, "cost", rg_session_dollars(s->cost));
    }

    rg_session_event(s, "final", final);

    s->events_ended = 1;
}


void
rg_events_stop(rg_session_t *s)
{
    if (s->events_sink) {
        rg_events_sink_unref(s->events_sink);
        s->events_sink = NULL;
    }
}


/* reading ------------------------------------------------------------ */

rg_uint_t
rg_events_id_valid(const char *id)
{
    uint64_t  ms, seq;

    return id && rg_store_event_id(id, strlen(id), &ms, &seq) == RG_OK;
}


static void
rg_events_read_done(void *data, const rg_store_res_t *res)
{
    void              *d;
    rg_events_pt       cb;
    rg_events_read_t  *r;

    r = data;
    cb = r->cb;
    d = r->data;
    free(r);

    if (res->rc == RG_OK) {
        cb(d, RG_OK, res->entries, res->nentries, NULL);
        return;
    }

    cb(d, RG_ERROR, NULL, 0, res->err ? res->err : "refused");
}


rg_events_read_t *
rg_events_read(rg_engine_t *e, const char *sid, const char *after_id,
    rg_uint_t count, rg_events_pt cb, void *data)
{
    rg_str_t           id;
    rg_store_t        *st;
    rg_events_read_t  *r;

    st = rg_store_ctx(e);

    if (st == NULL || st->range == NULL || sid == NULL
        || (after_id && after_id[0] && !rg_events_id_valid(after_id)))
    {
        return NULL;
    }

    r = calloc(1, sizeof(rg_events_read_t));
    if (r == NULL) {
        return NULL;
    }

    r->st = st;
    r->cb = cb;
    r->data = data;

    id.data = (char *) sid;
    id.len = strlen(sid);

    r->op = st->range(st, &id, after_id, count ? count : 100,
                      rg_events_read_done, r);
    if (r->op == NULL) {
        free(r);
        return NULL;
    }

    return r;
}


void
rg_events_cancel(rg_events_read_t *r)
{
    if (r == NULL) {
        return;
    }

    r->st->cancel(r->st, r->op);
    free(r);
}
