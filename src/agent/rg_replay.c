/* rg_replay.c: the recordings `reagent replay` replays (rg_replay.h; the
 * command is rg_replay_cli.c). Each session of the replayed run, a child
 * too, is answered from its own recorded model calls, and checked
 * against them as it goes: a model request that no longer matches, a
 * tool result that differs, a call more or fewer than recorded is a
 * divergence, reported with the session, the round and the call. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_session_int.h>
#include <rg_replay.h>
#include <rg_llm_client.h>
#include <rg_tool_args.h>
#include <jansson.h>


/* how much of a differing text a divergence quotes */
#define RG_REPLAY_QUOTE  120


struct rg_replay_s {
    rg_replay_t        *root;
    rg_replay_t        *next;         /* every recording, from the root */
    json_t             *t;            /* the transcript, referenced */
    json_t             *calls;        /* its model_call events */
    json_t             *tools;        /* its tool_call events */
    json_t             *children;     /* its child events, taken once */
    size_t              used;         /* model calls answered */
    char               *missing;      /* no recording: why, malloc'ed */
    unsigned            attached:1;
    unsigned            diverged:1;
    rg_llm_recorded_t   rec;          /* the answer being given */
    char               *divergence;   /* the root's: the first one */
};


/* the recordings ------------------------------------------------------ */

static rg_replay_t *
rg_replay_new(rg_replay_t *root, json_t *t)
{
    size_t        i;
    json_t       *ev, *events;
    const char   *type;
    rg_replay_t  *r;

    r = calloc(1, sizeof(rg_replay_t));
    if (r == NULL) {
        return NULL;
    }

    r->root = root ? root : r;
    r->calls = json_array();
    r->tools = json_array();
    r->children = json_array();

    if (r->calls == NULL || r->tools == NULL || r->children == NULL) {
        json_decref(r->calls);
        json_decref(r->tools);
        json_decref(r->children);
        free(r);
        return NULL;
    }

    if (root) {
        r->next = root->next;
        root->next = r;
    }

    if (t == NULL) {
        return r;
    }

    r->t = json_incref(t);
    events = json_object_get(t, "events");

    json_array_foreach(events, i, ev) {
        type = json_string_value(json_object_get(ev, "type"));

        if (type == NULL) {
            continue;
        }

        if (strcmp(type, "model_call") == 0) {
            json_array_append(r->calls, ev);

        } else if (strcmp(type, "tool_call") == 0) {
            json_array_append(r->tools, ev);

        } else if (strcmp(type, "child") == 0) {
            json_array_append(r->children, ev);
        }
    }

    return r;
}


rg_replay_t *
rg_replay_create(json_t *t)
{
    return rg_replay_new(NULL, t);
}


void
rg_replay_destroy(rg_replay_t *r)
{
    rg_replay_t  *next;

    free(r->divergence);

    for ( /* void */ ; r; r = next) {
        next = r->next;
        json_decref(r->t);
        json_decref(r->calls);
        json_decref(r->tools);
        json_decref(r->children);
        free(r->rec.body);
        free(r->missing);
        free(r);
    }
}


void
rg_replay_attach(rg_session_t *s, rg_replay_t *r)
{
    const char  *id;

    s->replay = r;
    r->attached = 1;

    id = json_string_value(json_object_get(r->t, "session"));

    if (id && strlen(id) < sizeof(s->id)) {
        memcpy(s->id, id, strlen(id) + 1);
    }
}


void
rg_replay_child(rg_session_t *parent, rg_session_t *child,
    const char *tool_call_id)
{
    char         buf[256];
    size_t       i;
    json_t      *ev;
    const char  *id;
    rg_replay_t *r, *pr;

    pr = parent->replay;

    json_array_foreach(pr->children, i, ev) {
        id = json_string_value(json_object_get(ev, "tool_call_id"));

        if (id && tool_call_id && strcmp(id, tool_call_id) == 0) {
            r = rg_replay_new(pr->root, json_object_get(ev, "transcript"));
            if (r) {
                json_array_remove(pr->children, i);
                rg_replay_attach(child, r);
            }
            return;
        }
    }

    /* its first model call will say so */
    r = rg_replay_new(pr->root, NULL);
    if (r == NULL) {
        return;
    }

    snprintf(buf, sizeof(buf), "the recording has no child session for "
             "tool call \"%.64s\" (run_agent of agent \"%.*s\")",
             tool_call_id ? tool_call_id : "", (int) child->agent->name.len,
             child->agent->name.data);
    r->missing = strdup(buf);
    child->replay = r;
    r->attached = 1;
}


/* divergences -------------------------------------------------------- */

/* "<text>…" of at most RG_REPLAY_QUOTE bytes, printable, in buf */
static const char *
rg_replay_quote(char *buf, size_t size, const char *text, size_t len)
{
    size_t  i, n;

    n = rg_min(len, rg_min(size - 4, RG_REPLAY_QUOTE));

    for (i = 0; i < n; i++) {
        buf[i] = ((unsigned char) text[i] < ' ' || text[i] == 0x7f)
                 ? ' ' : text[i];
    }

    buf[i] = '\0';

    if (n < len) {
        memcpy(buf + i, "...", 4);
    }

    return buf;
}


/* ends s: the replay diverged, as fmt says; the first divergence of the
 * run is the one reported */
static rg_int_t
rg_replay_diverge(rg_session_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static rg_int_t
rg_replay_diverge(rg_session_t *s, const char *fmt, ...)
{
    char          what[768], msg[1024];
    va_list       args;
    rg_replay_t  *r;

    r = s->replay;
    r->diverged = 1;

    va_start(args, fmt);
    vsnprintf(what, sizeof(what), fmt, args);
    va_end(args);

    snprintf(msg, sizeof(msg), "session \"%s\" (agent \"%.*s\"), %s", s->id,
             (int) s->agent->name.len, s->agent->name.data, what);

    if (r->root->divergence == NULL) {
        r->root->divergence = strdup(msg);
    }

    rg_session_finish(s, RG_SESSION_FAILED, "replay diverged: %s", msg);

    return RG_DECLINED;
}


/* what differs between the request sent and the recorded one, in buf */
static void
rg_replay_request_diff(char *buf, size_t size, json_t *now, json_t *then)
{
    char         q1[RG_REPLAY_QUOTE + 8], q2[RG_REPLAY_QUOTE + 8], *a, *b;
    size_t       i, n1, n2;
    json_t      *m1, *m2, *v;
    const char  *key, *role;

    /* the members other than the messages first: the model, the tools */
    json_object_foreach(then, key, v) {
        if (strcmp(key, "messages") != 0
            && !json_equal(v, json_object_get(now, key)))
        {
            snprintf(buf, size, "\"%s\" differs from the recorded one (the "
                     "configuration changed?)", key);
            return;
        }
    }

    json_object_foreach(now, key, v) {
        if (json_object_get(then, key) == NULL) {
            snprintf(buf, size, "it has \"%s\", the recorded one has not",
                     key);
            return;
        }
    }

    m1 = json_object_get(now, "messages");
    m2 = json_object_get(then, "messages");
    n1 = json_array_size(m1);
    n2 = json_array_size(m2);

    for (i = 0; i < n1 && i < n2; i++) {
        if (json_equal(json_array_get(m1, i), json_array_get(m2, i))) {
            continue;
        }

        role = json_string_value(json_object_get(json_array_get(m1, i),
                                                 "role"));
        a = json_dumps(json_array_get(m1, i), JSON_COMPACT);
        b = json_dumps(json_array_get(m2, i), JSON_COMPACT);

        snprintf(buf, size, "message %lu (%s) differs: now %s, recorded %s",
                 (unsigned long) i + 1, role ? role : "?",
                 a ? rg_replay_quote(q1, sizeof(q1), a, strlen(a)) : "?",
                 b ? rg_replay_quote(q2, sizeof(q2), b, strlen(b)) : "?");
        free(a);
        free(b);
        return;
    }

    snprintf(buf, size, "it has %lu messages, the recorded one %lu",
             (unsigned long) n1, (unsigned long) n2);
}


rg_int_t
rg_replay_ask(rg_session_t *s)
{
    char          diff[600];
    json_t       *ev, *req, *v;
    rg_replay_t  *r;
    json_error_t  err;

    r = s->replay;

    if (r->missing) {
        return rg_replay_diverge(s, "its first model call: %s", r->missing);
    }

    if (r->used == json_array_size(r->calls)) {
        return rg_replay_diverge(s, "round %lu: the run asks the model once "
                                 "more than the recording did (it recorded "
                                 "%lu model call%s)",
                                 (unsigned long) s->round + 1,
                                 (unsigned long) r->used,
                                 r->used == 1 ? "" : "s");
    }

    ev = json_array_get(r->calls, r->used++);

    /* the request must be the recorded one: the same conversation */
    v = json_object_get(ev, "request");

    if (v) {
        req = json_loadb(s->body.data, s->body.len, JSON_ALLOW_NUL, &err);

        if (req == NULL || !json_equal(req, v)) {
            if (req) {
                rg_replay_request_diff(diff, sizeof(diff), req, v);
            } else {
                snprintf(diff, sizeof(diff), "it is not JSON");
            }

            json_decref(req);

            return rg_replay_diverge(s, "round %lu, model call %lu: the "
                                     "request no longer matches the "
                                     "recording: %s",
                                     (unsigned long) s->round
                                     + !s->summarizing,
                                     (unsigned long) r->used, diff);
        }

        json_decref(req);
    }

    /* its answer, as it came */
    free(r->rec.body);
    r->rec.status = (long) json_integer_value(json_object_get(ev,
                                                  "http_status"));
    v = json_object_get(ev, r->rec.status ? "response" : "error");

    if (json_is_string(v)) {
        r->rec.len = json_string_length(v);
        r->rec.body = rg_strdup_len(json_string_value(v), r->rec.len);

    } else if (v) {
        r->rec.body = json_dumps(v, JSON_COMPACT);
        r->rec.len = r->rec.body ? strlen(r->rec.body) : 0;

    } else {
        r->rec.body = strdup(r->rec.status ? "" : "no response");
        r->rec.len = r->rec.body ? strlen(r->rec.body) : 0;
    }

    if (r->rec.body == NULL) {
        return RG_ERROR;
    }

    s->req.recorded = &r->rec;

    return RG_OK;
}


/* the recorded tool_call event that answered id */
static json_t *
rg_replay_tool_event(rg_replay_t *r, const char *id)
{
    size_t       i;
    json_t      *ev;
    const char  *v;

    json_array_foreach(r->tools, i, ev) {
        v = json_string_value(json_object_get(ev, "tool_call_id"));

        if (v && strcmp(v, id) == 0) {
            return ev;
        }
    }

    return NULL;
}


rg_int_t
rg_replay_turn(rg_session_t *s, rg_tool_turn_t *turn, size_t limit)
{
    char            q1[RG_REPLAY_QUOTE + 8], q2[RG_REPLAY_QUOTE + 8];
    size_t          len;
    json_t         *ev, *v;
    rg_buf_t        b;
    rg_uint_t       i;
    const char     *text, *id;
    rg_tool_run_t  *run;

    memset(&b, 0, sizeof(b));

    for (i = 0; i < turn->n; i++) {
        run = turn->runs[i];
        id = run->call.id ? run->call.id : "";

        ev = rg_replay_tool_event(s->replay, id);

        if (ev == NULL) {
            rg_buf_free(&b);
            return rg_replay_diverge(s, "round %lu: tool call \"%.64s\" "
                                     "(%s) is not in the recording",
                                     (unsigned long) s->round, id,
                                     run->name);
        }

        if (run->denied
            && !json_is_true(json_object_get(ev, "denied")))
        {
            rg_buf_free(&b);
            return rg_replay_diverge(s, "round %lu: tool call \"%.64s\" "
                                     "(%s) was not run: it is a dangerous "
                                     "tool, and replay runs those only with "
                                     "--approve-all",
                                     (unsigned long) s->round, id,
                                     run->name);
        }

        v = json_object_get(ev, "result");
        if (!json_is_string(v)) {
            continue;              /* not recorded as text */
        }

        rg_session_seen(run, limit, &b, &text, &len);

        if (len != json_string_length(v)
            || memcmp(text, json_string_value(v), len) != 0)
        {
            rg_replay_quote(q1, sizeof(q1), text, len);
            rg_replay_quote(q2, sizeof(q2), json_string_value(v),
                            json_string_length(v));
            rg_buf_free(&b);

            return rg_replay_diverge(s, "round %lu: the result of tool call "
                                     "\"%.64s\" (%s) differs from the "
                                     "recording: now \"%s\" (%lu bytes), "
                                     "recorded \"%s\" (%lu bytes)",
                                     (unsigned long) s->round, id, run->name,
                                     q1, (unsigned long) len, q2,
                                     (unsigned long) json_string_length(v));
        }
    }

    rg_buf_free(&b);

    return RG_OK;
}


const char *
rg_replay_divergence(rg_replay_t *root)
{
    char          buf[512];
    rg_replay_t  *r;

    if (root->divergence) {
        return root->divergence;
    }

    /* a session that ended before its recording did */
    for (r = root; r; r = r->next) {
        if (r->attached && !r->diverged && r->missing == NULL
            && r->used < json_array_size(r->calls))
        {
            snprintf(buf, sizeof(buf), "session \"%s\" (agent \"%s\") "
                     "ended after %lu of its %lu recorded model calls",
                     json_string_value(json_object_get(r->t, "session"))
                     ? json_string_value(json_object_get(r->t, "session"))
                     : "?",
                     json_string_value(json_object_get(r->t, "agent"))
                     ? json_string_value(json_object_get(r->t, "agent"))
                     : "?",
                     (unsigned long) r->used,
                     (unsigned long) json_array_size(r->calls));
            root->divergence = strdup(buf);
            return root->divergence;
        }
    }

    return NULL;
}


void
rg_replay_sizes(rg_replay_t *r, size_t *calls, size_t *children,
    size_t *used)
{
    *calls = json_array_size(r->calls);
    *children = json_array_size(r->children);
    *used = r->used;
}
