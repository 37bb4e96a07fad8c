/* rg_http_openai.c: the OpenAI-compatible face. POST
 * /v1/chat/completions with "model" an agent's name runs that agent on
 * the messages in this worker and answers as a model would: a
 * chat.completion, or with "stream": true Server-Sent Events of
 * chat.completion.chunk objects (the answer, then its finish_reason, the
 * usage when stream_options.include_usage asks, then [DONE]); the
 * model's text goes out as it streams (when its llm streams), each
 * round's after the last, the final answer not sent twice; what the
 * agent does meanwhile goes as SSE comments, which clients skip. The
 * agent's own tools run; tools in the request are not the agent's and
 * are refused, as is every field that would change the answer's shape
 * (response_format, logprobs, stop, n > 1…: a 400 naming it); fields
 * the agent decides itself (temperature, max_tokens…) are said to be
 * ignored, in the X-Reagent-Ignored header and reagent.ignored. GET
 * /v1/models lists the agents. A client that leaves cancels its
 * session. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_agent_conf.h>
#include <rg_session.h>
#include <rg_http.h>
#include <rg_http_tasks.h>
#include <rg_secret.h>
#include <rg_json.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>


typedef struct {
    rg_http_req_t      *r;
    rg_http_task_t     *task;
    char               *model;
    rg_uint_t           stream;
    rg_uint_t           usage;            /* stream_options.include_usage */
    rg_uint_t           streaming;        /* its headers went out */
    size_t              said;             /* this round's text taken */
    rg_buf_t            held;             /* of it, what may begin a
                                             secret: sent with the next */
    rg_uint_t           rounds_said;      /* rounds whose text went */
    char               *ignored;          /* "temperature, top_p", or NULL */
    struct event       *ping_ev;
    /* a client that reads nothing: each chunk would put off libevent's
     * write timeout, so the stall is timed here (send_timeout) */
    size_t              out_after;        /* unsent, after the last chunk */
    rg_msec_t           stall_since;
    rg_uint_t           cut;              /* the connection goes */
    char                id[64];
    int64_t             created;
} rg_http_chat_t;


static void
rg_http_chat_free(rg_http_chat_t *c)
{
    if (c->ping_ev) {
        event_free(c->ping_ev);
    }
    free(c->model);
    free(c->ignored);
    rg_buf_free(&c->held);
    free(c);
}


/* what the connection has not sent yet */
static struct evbuffer *
rg_http_chat_out(rg_http_chat_t *c)
{
    struct bufferevent        *bev;
    struct evhttp_connection  *evcon;

    evcon = evhttp_request_get_connection(c->r->req);
    bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;

    return bev ? bufferevent_get_output(bev) : NULL;
}


/* one SSE line (data: JSON, or a ": comment") */
static void
rg_http_chat_event(rg_http_chat_t *c, const char *prefix, json_t *j)
{
    char             *text;
    size_t            before;
    rg_msec_t         now;
    struct evbuffer  *b, *out;

    text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);

    /* no secret leaves in a chunk, whatever a model or a tool said */
    if (text) {
        text[rg_secret_scrub(text, strlen(text))] = '\0';
    }

    b = evbuffer_new();
    if (b == NULL) {
        rg_json_free_dump(text);
        return;
    }

    evbuffer_add_printf(b, "%s%s\n\n", prefix, text ? text : "");
    c->r->bytes += evbuffer_get_length(b);

    out = rg_http_chat_out(c);
    before = out ? evbuffer_get_length(out) : 0;
    now = rg_monotonic_msec();

    /* nothing waits, or some went since the last chunk: not stalled */
    if (before == 0 || before < c->out_after || c->stall_since == 0) {
        c->stall_since = now;
    }

    /* send_timeout from now, not from the start of the loop's turn */
    event_base_update_cache_time(c->r->http->engine->base);
    evhttp_send_reply_chunk(c->r->req, b);
    evbuffer_free(b);
    rg_json_free_dump(text);

    c->out_after = out ? evbuffer_get_length(out) : 0;

    if (before && !c->cut && c->ping_ev
        && now - c->stall_since >= c->r->http->conf->send_timeout)
    {
        /* cut from the loop, not from inside the session's callback */
        struct timeval  tv = { 0, 0 };

        c->cut = 1;
        evtimer_add(c->ping_ev, &tv);
    }
}


static json_t *
rg_http_chunk(rg_http_chat_t *c, json_t *delta, const char *finish)
{
    return json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:o, s:n}]}",
                     "id", c->id, "object", "chat.completion.chunk",
                     "created", (json_int_t) c->created, "model", c->model,
                     "choices", "index", 0, "delta", delta,
                     "finish_reason", finish ? json_string(finish)
                                             : json_null(),
                     "logprobs");
}


static void
rg_http_chat_ping(evutil_socket_t fd, short what, void *arg)
{
    rg_http_chat_t  *c;
    struct timeval   tv = { 15, 0 };

    c = arg;

    if (c->cut && c->r) {
        struct evhttp_connection  *evcon;

        rg_log_error(RG_LOG_INFO, c->r->http->engine->log, 0, "http: a "
                     "streaming client read nothing for send_timeout "
                     "(%llums): its connection is closed",
                     (unsigned long long) c->r->http->conf->send_timeout);

        /* freeing it calls rg_http_chat_gone(), which may free c */
        evcon = evhttp_request_get_connection(c->r->req);
        if (evcon) {
            evhttp_connection_free(evcon);
        }
        return;
    }

    /* proxies drop a quiet stream: a comment keeps it */
    rg_http_chat_event(c, ": ping", NULL);
    evtimer_add(c->ping_ev, &tv);
}


static void
rg_http_chat_gone(rg_http_req_t *r)
{
    rg_http_chat_t  *c;

    c = r->data;
    c->r = NULL;

    if (c->task) {
        rg_http_task_cancel(c->task, "the API's client went away");
        /* its done() frees c */
        return;
    }

    rg_http_chat_free(c);
}


/* text[0..len) as a chunk of content */
static void
rg_http_chat_text(rg_http_chat_t *c, const char *text, size_t len)
{
    if (len) {
        rg_http_chat_event(c, "data: ", rg_http_chunk(c, json_pack("{s:s#}",
                           "content", text, (int) len), NULL));
    }
}


/* what was held back goes: the round's text has ended */
static void
rg_http_chat_flush(rg_http_chat_t *c)
{
    rg_http_chat_text(c, c->held.data, c->held.len);
    rg_buf_reset(&c->held);
}


/* The model's text as it came: what this round took already (a retried
 * attempt gives it again from 0) is not sent twice; a round's text after
 * an earlier round's is set apart by a blank line. An end that may begin
 * a secret waits for the next piece, so that a key split between two
 * pieces is still scrubbed whole. */
static void
rg_http_chat_delta(rg_http_chat_t *c, json_t *event)
{
    size_t       offset, len, skip, tail, n;
    const char  *text;

    offset = (size_t) json_integer_value(json_object_get(event, "offset"));
    text = json_string_value(json_object_get(event, "text"));
    len = json_string_length(json_object_get(event, "text"));

    if (text == NULL || offset + len <= c->said || offset > c->said) {
        return;
    }

    skip = c->said - offset;

    if (c->said == 0 && c->rounds_said) {
        rg_http_chat_text(c, "\n\n", 2);
    }

    c->said = offset + len;

    if (rg_buf_append(&c->held, text + skip, len - skip) != RG_OK) {
        rg_http_chat_flush(c);
        rg_http_chat_text(c, text + skip, len - skip);
        return;
    }

    tail = rg_secret_tail(c->held.data, c->held.len);

    /* a character is not cut: the rest of it waits too */
    n = c->held.len - tail;
    while (n > 0 && n < c->held.len
           && ((unsigned char) c->held.data[n] & 0xc0) == 0x80)
    {
        n--;
    }

    rg_http_chat_text(c, c->held.data, n);

    memmove(c->held.data, c->held.data + n, c->held.len - n);
    c->held.len -= n;
}


/* what the agent does, as SSE comments (clients skip them): ": TYPE
 * {event}" for model and tool calls */
static void
rg_http_chat_on_event(rg_session_t *s, const char *type, json_t *event,
    void *data)
{
    char             prefix[64];
    rg_http_chat_t  *c;

    c = data;

    if (c->r == NULL || !c->streaming || strcmp(type, "final") == 0) {
        return;
    }

    if (strcmp(type, "delta") == 0) {
        rg_http_chat_delta(c, event);
        return;
    }

    /* a new round: its text starts again */
    if (strcmp(type, "model_call_started") == 0) {
        rg_http_chat_flush(c);

        if (c->said) {
            c->rounds_said++;
        }
        c->said = 0;
    }

    snprintf(prefix, sizeof(prefix), ": %.40s ", type);
    rg_http_chat_event(c, prefix, json_incref(event));
}


static void
rg_http_chat_started(rg_http_task_t *t, rg_session_t *s)
{
    rg_http_chat_t  *c;
    struct timeval   tv = { 15, 0 };

    c = t->data;

    snprintf(c->id, sizeof(c->id), "chatcmpl-%s", rg_session_id(s));

    if (c->stream && c->r) {
        struct evkeyvalq  *h;

        h = evhttp_request_get_output_headers(c->r->req);
        evhttp_add_header(h, "Content-Type", "text/event-stream");
        evhttp_add_header(h, "Cache-Control", "no-store");
        evhttp_add_header(h, "X-Request-ID", c->r->id);
        if (c->ignored) {
            evhttp_add_header(h, "X-Reagent-Ignored", c->ignored);
        }
        evhttp_send_reply_start(c->r->req, 200, "OK");
        c->streaming = 1;
        c->r->status = 200;

        rg_http_chat_event(c, "data: ", rg_http_chunk(c, json_pack("{s:s, "
                           "s:s}", "role", "assistant", "content", ""),
                           NULL));

        rg_session_on_event(s, rg_http_chat_on_event, c);

        c->ping_ev = evtimer_new(c->r->http->engine->base, rg_http_chat_ping,
                                 c);
        if (c->ping_ev) {
            evtimer_add(c->ping_ev, &tv);
        }
    }
}


static const char *
rg_http_finish(const rg_session_outcome_t *o)
{
    switch (o->state) {
    case RG_SESSION_DONE:
        return "stop";
    case RG_SESSION_FILTERED:
        return "content_filter";
    case RG_SESSION_MAX_ROUNDS:
    case RG_SESSION_BUDGET_EXCEEDED:
        return "length";
    default:
        return NULL;
    }
}


static json_t *
rg_http_usage(const rg_session_outcome_t *o)
{
    return json_pack("{s:I, s:I, s:I, s:{s:I}}",
                     "prompt_tokens", (json_int_t) o->prompt_tokens,
                     "completion_tokens", (json_int_t) o->completion_tokens,
                     "total_tokens", (json_int_t) (o->prompt_tokens
                                                   + o->completion_tokens),
                     "prompt_tokens_details",
                     "cached_tokens", (json_int_t) o->cached_tokens);
}


/* the answer's text, where the stream has not carried it all already */
static void
rg_http_chat_answer(rg_http_chat_t *c, const rg_session_outcome_t *o)
{
    const char  *a;
    size_t       len;

    a = o->answer.data;
    len = o->answer.len;

    rg_http_chat_flush(c);

    if (c->said && c->said >= len) {
        return;                        /* it all went as it came */
    }

    if (c->said == 0) {
        if (c->rounds_said) {
            rg_http_chat_event(c, "data: ", rg_http_chunk(c,
                               json_pack("{s:s}", "content", "\n\n"),
                               NULL));
        }

        rg_http_chat_event(c, "data: ", rg_http_chunk(c, json_pack("{s:s#}",
                           "content", a, (int) len), NULL));
        return;
    }

    /* streamed in part (a filter's cut, a refusal): the rest, or all of
     * it set apart when it is not what was streamed */
    if (c->said < len) {
        rg_http_chat_event(c, "data: ", rg_http_chunk(c, json_pack("{s:s#}",
                           "content", a + c->said, (int) (len - c->said)),
                           NULL));
    }
}


static void
rg_http_chat_done(rg_http_task_t *t, rg_session_t *s, json_t *result)
{
    json_t                *answer, *body, *info;
    rg_http_req_t         *r;
    rg_http_chat_t        *c;
    const char            *finish;
    rg_session_outcome_t   o;

    c = t->data;
    c->task = NULL;
    r = c->r;

    if (r == NULL) {
        rg_http_chat_free(c);
        return;
    }

    if (s == NULL) {
        if (c->streaming) {
            rg_http_chat_event(c, "data: ", json_pack("{s:{s:s, s:s, s:s}}",
                               "error", "message", "the session was stopped",
                               "type", "server_error", "code", "stopped"));
            rg_http_chat_event(c, "data: [DONE]", NULL);
            rg_http_stream_end(r);
        } else {
            rg_http_error(r, 503, "server_error", "stopped", "the session "
                          "was stopped before it ended");
        }
        rg_http_chat_free(c);
        return;
    }

    rg_session_outcome(s, &o);

    finish = rg_http_finish(&o);
    answer = o.answer.data ? json_stringn(o.answer.data, o.answer.len)
                           : NULL;
    info = json_pack("{s:s, s:s, s:I, s:I, s:s?}",
                     "session", rg_session_id(s),
                     "status", o.status,
                     "rounds", (json_int_t) o.rounds,
                     "tool_calls", (json_int_t) o.tool_calls,
                     "error", o.state == RG_SESSION_DONE ? NULL : o.reason);

    if (info && (o.priced || o.cost > 0)) {
        json_object_set_new(info, "cost", rg_session_dollars(o.cost));
    }

    if (info && c->ignored) {
        json_object_set_new(info, "ignored", json_string(c->ignored));
    }

    if (c->streaming) {
        if (finish && answer) {
            rg_http_chat_answer(c, &o);
            body = rg_http_chunk(c, json_object(), finish);
            if (body) {
                json_object_set(body, "reagent", info);
            }
            rg_http_chat_event(c, "data: ", body);

            if (c->usage) {
                body = json_pack("{s:s, s:s, s:I, s:s, s:[], s:o}",
                                 "id", c->id, "object",
                                 "chat.completion.chunk", "created",
                                 (json_int_t) c->created, "model", c->model,
                                 "choices", "usage", rg_http_usage(&o));
                rg_http_chat_event(c, "data: ", body);
            }

        } else {
            rg_http_chat_event(c, "data: ", json_pack("{s:{s:s?, s:s, s:s, "
                               "s:O}}", "error", "message", o.reason,
                               "type", "agent_error", "code", o.status,
                               "reagent", info));
        }

        rg_http_chat_event(c, "data: [DONE]", NULL);
        rg_http_stream_end(r);

    } else if (finish && answer) {
        body = json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:{s:s, s:O, s:n}, "
                         "s:n, s:s}], s:o, s:O}",
                         "id", c->id, "object", "chat.completion",
                         "created", (json_int_t) c->created,
                         "model", c->model,
                         "choices", "index", 0, "message", "role",
                         "assistant", "content", answer, "refusal",
                         "logprobs", "finish_reason", finish,
                         "usage", rg_http_usage(&o),
                         "reagent", info);
        if (c->ignored) {
            evhttp_add_header(evhttp_request_get_output_headers(r->req),
                              "X-Reagent-Ignored", c->ignored);
        }
        rg_http_json(r, 200, body);

    } else {
        body = json_pack("{s:{s:s, s:s, s:s, s:O}}", "error", "message",
                         o.reason ? o.reason : "the agent gave no answer",
                         "type", "agent_error", "code", o.status,
                         "reagent", info);
        rg_http_json(r, o.state == RG_SESSION_DEADLINE_EXCEEDED ? 504 : 502,
                     body);
    }

    json_decref(answer);
    json_decref(info);
    rg_http_chat_free(c);
    (void) result;
}


/* the messages as a task's input: roles system, user, assistant, with
 * text content (a string, or text parts); the last one the user's */
static json_t *
rg_http_chat_messages(json_t *msgs, char *err, size_t len)
{
    size_t       i, j;
    json_t      *out, *m, *content, *part, *text;
    const char  *role;

    if (!json_is_array(msgs) || json_array_size(msgs) == 0) {
        snprintf(err, len, "\"messages\" must be a non-empty array");
        return NULL;
    }

    out = json_array();

    json_array_foreach(msgs, i, m) {
        role = json_string_value(json_object_get(m, "role"));
        content = json_object_get(m, "content");

        if (role && strcmp(role, "developer") == 0) {
            role = "system";
        }

        if (role == NULL || (strcmp(role, "system") != 0
                             && strcmp(role, "user") != 0
                             && strcmp(role, "assistant") != 0))
        {
            snprintf(err, len, "messages[%zu]: role must be system, "
                     "developer, user or assistant (the agent runs its own "
                     "tools)", i);
            json_decref(out);
            return NULL;
        }

        if (json_is_array(content)) {
            rg_buf_t  b;

            memset(&b, 0, sizeof(b));
            json_array_foreach(content, j, part) {
                text = json_object_get(part, "text");
                if (!json_is_string(text)) {
                    snprintf(err, len, "messages[%zu].content[%zu]: only "
                             "text parts are taken", i, j);
                    rg_buf_free(&b);
                    json_decref(out);
                    return NULL;
                }
                rg_buf_append(&b, json_string_value(text),
                              json_string_length(text));
            }
            json_array_append_new(out, json_pack("{s:s, s:s%}", "role", role,
                                                 "content",
                                                 b.data ? b.data : "",
                                                 b.len));
            rg_buf_free(&b);

        } else if (json_is_string(content)) {
            json_array_append_new(out, json_pack("{s:s, s:O}", "role", role,
                                                 "content", content));

        } else {
            snprintf(err, len, "messages[%zu]: content must be a string or "
                     "text parts", i);
            json_decref(out);
            return NULL;
        }
    }

    return out;
}


/* the fields of a request, weighed: a field that would change the
 * answer's shape the agent cannot honour is a 400 naming it; one the
 * agent decides itself is listed in *ignored ("a, b", malloc'ed, NULL
 * when none); an unknown one is a 400 too, as OpenAI answers */
static rg_int_t
rg_http_chat_fields(rg_http_req_t *r, json_t *j, char **ignored)
{
    size_t       i;
    json_t      *v;
    rg_buf_t     b;
    const char  *key, *type;

    static const char  *taken[] = {
        "model", "messages", "stream", "stream_options", "n", "tools",
        "user", "metadata", "store", "service_tier", "safety_identifier",
        "prompt_cache_key"
    };

    /* the agent's own choices: said to be ignored */
    static const char  *decided[] = {
        "temperature", "top_p", "max_tokens", "max_completion_tokens",
        "presence_penalty", "frequency_penalty", "seed", "reasoning_effort",
        "parallel_tool_calls", "tool_choice", "verbosity", "logit_bias",
        "prediction", "modalities", "audio", "web_search_options"
    };

    *ignored = NULL;
    memset(&b, 0, sizeof(b));

    v = json_object_get(j, "response_format");
    type = json_string_value(json_object_get(v, "type"));

    if (v && !json_is_null(v) && (type == NULL || strcmp(type, "text") != 0))
    {
        rg_http_error(r, 400, "invalid_request_error", "unsupported_parameter",
                      "\"response_format\" %s%s%s cannot be honoured: an "
                      "agent answers in text (structured output is not "
                      "there yet); leave it out or use {\"type\": \"text\"}",
                      type ? "\"" : "", type ? type : "", type ? "\"" : "");
        return RG_ERROR;
    }

    json_object_foreach(j, key, v) {
        if (strcmp(key, "response_format") == 0) {
            continue;
        }

        for (i = 0; i < rg_nelems(taken); i++) {
            if (strcmp(key, taken[i]) == 0) {
                break;
            }
        }

        if (i < rg_nelems(taken)) {
            continue;
        }

        for (i = 0; i < rg_nelems(decided); i++) {
            if (strcmp(key, decided[i]) == 0) {
                break;
            }
        }

        if (i < rg_nelems(decided)) {
            if (json_is_null(v)) {
                continue;
            }

            if ((b.len && rg_buf_append_lit(&b, ", ") != RG_OK)
                || rg_buf_append(&b, key, strlen(key)) != RG_OK)
            {
                rg_buf_free(&b);
                rg_http_error(r, 500, "server_error", "no_memory",
                              "out of memory");
                return RG_ERROR;
            }

            continue;
        }

        /* logprobs, stop, functions, …: the answer would not be what was
         * asked for */
        if (json_is_null(v) || json_is_false(v)) {
            continue;
        }

        rg_buf_free(&b);
        rg_http_error(r, 400, "invalid_request_error", "unsupported_parameter",
                      "\"%.64s\" is not supported: an agent decides its "
                      "answer itself (fields it takes: model, messages, "
                      "stream, stream_options; n 1)", key);
        return RG_ERROR;
    }

    *ignored = b.data;

    return RG_OK;
}


void
rg_http_chat_handler(rg_http_req_t *r)
{
    char             *body, err[256], *ignored;
    size_t            len;
    json_t           *j, *msgs, *task, *v;
    json_error_t      jerr;
    const char       *model;
    rg_http_chat_t   *c;
    rg_http_task_t   *t;
    rg_agent_conf_t  *agent;

    body = rg_http_body(r, &len);
    if (body == NULL) {
        return;
    }

    j = json_loadb(body, len, 0, &jerr);
    free(body);

    if (!json_is_object(j)) {
        json_decref(j);
        rg_http_error(r, 400, "invalid_request_error", "invalid_json",
                      "the body is not a JSON object: %s", jerr.text);
        return;
    }

    model = json_string_value(json_object_get(j, "model"));
    if (model == NULL) {
        json_decref(j);
        rg_http_error(r, 400, "invalid_request_error", "missing_model",
                      "\"model\" must name an agent (GET /v1/models)");
        return;
    }

    agent = rg_agent_find(r->http->engine->cycle, model, strlen(model));
    if (agent == NULL) {
        rg_http_error(r, 404, "invalid_request_error", "model_not_found",
                      "the model \"%.100s\" does not exist: a model is one of "
                      "the agents (GET /v1/models)", model);
        json_decref(j);
        return;
    }

    v = json_object_get(j, "tools");
    if (v && json_array_size(v)) {
        json_decref(j);
        rg_http_error(r, 400, "invalid_request_error", "tools_not_supported",
                      "the agent runs its own tools: \"tools\" must be "
                      "absent");
        return;
    }

    v = json_object_get(j, "n");
    if (v && json_integer_value(v) != 1) {
        json_decref(j);
        rg_http_error(r, 400, "invalid_request_error", "n_not_supported",
                      "\"n\" must be 1: an agent gives one answer");
        return;
    }


    msgs = rg_http_chat_messages(json_object_get(j, "messages"), err,
                                 sizeof(err));
    if (msgs == NULL) {
        json_decref(j);
        rg_http_error(r, 400, "invalid_request_error", "invalid_messages",
                      "%s", err);
        return;
    }

    if (rg_http_chat_fields(r, j, &ignored) != RG_OK) {
        json_decref(msgs);
        json_decref(j);
        return;
    }

    task = json_pack("{s:s, s:o}", "agent", model, "input", msgs);

    /* the caller's trace goes on in the agent's session */
    v = json_string(rg_http_header(r, "traceparent"));
    if (task && v && json_string_length(v) < 128) {
        json_object_set(task, "traceparent", v);
    }
    json_decref(v);

    c = calloc(1, sizeof(rg_http_chat_t));
    if (c) {
        c->model = strdup(model);
        c->ignored = ignored;
        ignored = NULL;
    }

    free(ignored);

    t = (c && c->model && task) ? rg_http_task_run(r->http, NULL, task)
                                : NULL;
    json_decref(task);

    if (t == NULL) {
        if (c) {
            rg_http_chat_free(c);
        }
        json_decref(j);
        rg_http_error(r, 429, "rate_limit_error", "too_many_tasks",
                      "this server holds max_tasks sessions already: ask "
                      "again later");
        return;
    }

    c->r = r;
    c->task = t;
    c->created = rg_wall_msec() / 1000;
    c->stream = json_is_true(json_object_get(j, "stream"));
    c->usage = json_is_true(json_object_get(json_object_get(j,
                            "stream_options"), "include_usage"));
    snprintf(c->id, sizeof(c->id), "chatcmpl-waiting");
    json_decref(j);

    t->data = c;
    t->started_cb = rg_http_chat_started;
    t->done = rg_http_chat_done;

    rg_http_watch(r, rg_http_chat_gone, c);
    rg_http_task_go(r->http);
}


/* an agent as a model of GET /v1/models */
static json_t *
rg_http_model(rg_agent_conf_t *a, rg_agent_main_conf_t *amcf)
{
    return json_pack("{s:s%, s:s, s:i, s:s}", "id", a->name.data,
                     a->name.len, "object", "model", "created", 0,
                     "owned_by", "reagent");
}


/* GET /v1/models */
void
rg_http_models_handler(rg_http_req_t *r)
{
    json_t  *list;

    list = rg_http_agents(r->http, rg_http_model);

    rg_http_json(r, 200, json_pack("{s:s, s:o}", "object", "list", "data",
                                   list ? list : json_array()));
}
