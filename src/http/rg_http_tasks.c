/* rg_http_tasks.c: the API's tasks. POST /v1/tasks takes one task (the
 * batch JSONL object), a JSON array of them, or JSONL; GET
 * /v1/tasks/{id} says where a task is (its result once it ended);
 * DELETE cancels it; GET /v1/agents lists the agents.
 *
 * With a queue { } (store redis), a task goes onto the queue that every
 * worker reads (rg_stream_submit) and its state is read from Redis: its
 * result, else its session's meta, else its submit mark (queued). Without
 * one, the task runs in this worker (the only one): at most
 * `concurrency` at once, the others wait in order, at most max_tasks;
 * a result is kept in the store for the session ttl.
 *
 * Idempotency-Key: the first answer to a key is kept (24 h), with the
 * digest of the request's body, and given again to a retry of the same
 * body; a retry while the first is still being answered is a 409, the
 * key with another body a 422 (draft-ietf-httpapi-idempotency-key-header).
 *
 * A task's id names it in /v1/tasks/{id}: one that no path could name is
 * refused. DELETE of a task that ended is a 409 saying how it ended. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_cycle.h>
#include <rg_core_conf.h>
#include <rg_digest.h>
#include <rg_store.h>
#include <rg_store_conf.h>
#include <rg_redis.h>
#include <rg_agent.h>
#include <rg_agent_conf.h>
#include <rg_session.h>
#include <rg_session_trace.h>
#include <rg_run.h>
#include <rg_task.h>
#include <rg_stream.h>
#include <rg_approval.h>
#include <rg_queue_conf.h>
#include <rg_http.h>
#include <rg_http_tasks.h>
#include <sys/random.h>


#define RG_HTTP_IDEM_TTL   (24 * 3600 * 1000)


/* at most max bytes of the UTF-8 text s, not cutting a character: a
 * message that cuts one is no JSON string */
static int
rg_http_cut(const char *s, size_t max)
{
    size_t  n;

    n = strlen(s);
    if (n <= max) {
        return (int) n;
    }

    n = max;
    while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80) {
        n--;
    }

    return (int) n;
}


/* the tasks ------------------------------------------------------------ */

static void rg_http_task_next(rg_http_tasks_t *ts);


static void
rg_http_link(rg_http_task_t *head, rg_http_task_t *t)
{
    t->prev = head->prev;
    t->next = head;
    head->prev->next = t;
    head->prev = t;
}


static void
rg_http_unlink(rg_http_task_t *t)
{
    t->prev->next = t->next;
    t->next->prev = t->prev;
    t->next = t->prev = t;
}


rg_http_task_t *
rg_http_task_find(rg_http_tasks_t *ts, const char *id)
{
    rg_http_task_t  *t;

    for (t = ts->running.next; t != &ts->running; t = t->next) {
        if (t->id && strcmp(t->id, id) == 0) {
            return t;
        }
    }

    for (t = ts->waiting.next; t != &ts->waiting; t = t->next) {
        if (t->id && strcmp(t->id, id) == 0) {
            return t;
        }
    }

    return NULL;
}


static void
rg_http_task_free(rg_http_task_t *t)
{
    json_decref(t->task);
    free(t->id);
    free(t);
}


static void
rg_http_stored(void *data, const rg_store_res_t *res)
{
    /* a result not kept is said by GET: not found */
}


/* where a task's result is kept: "{SID}:result" */
static void
rg_http_result_key(const char *sid, char *buf, size_t size)
{
    snprintf(buf, size, "{%s}:result", sid);
}


static void
rg_http_session_done(rg_session_t *s)
{
    char              key[96];
    char             *text;
    json_t           *r;
    rg_str_t          k, v;
    rg_http_task_t   *t;
    rg_http_tasks_t  *ts;

    t = s->data;
    ts = t->tasks;

    r = rg_session_result(s);

    if (r && t->id) {
        json_object_set_new(r, "id", json_string(t->id));
        json_object_set_new(r, "created", json_integer(t->created));
        json_object_set_new(r, "started", json_integer(t->started));
        json_object_set_new(r, "ended", json_integer(rg_wall_msec()));
    }

    /* a task's result stays; a chat completion's goes to its request */
    if (r && t->id && !t->done) {
        char  sid[48];

        text = json_dumps(r, JSON_COMPACT);
        if (text) {
            rg_stream_session_id(t->id, sid, sizeof(sid));
            rg_http_result_key(sid, key, sizeof(key));
            k.data = key;
            k.len = strlen(key);
            v.data = text;
            v.len = strlen(text);
            ts->store->set(ts->store, &k, &v,
                           rg_store_session_ttl(ts->h->engine),
                           0, rg_http_stored, NULL);
            free(text);
        }
    }

    if (t->done) {
        t->done(t, s, r);
    }

    json_decref(r);

    rg_http_unlink(t);
    ts->nrunning--;
    t->session = NULL;
    rg_session_destroy(s);
    rg_engine_release(ts->h->engine);
    rg_http_task_free(t);

    rg_http_task_next(ts);
}


static rg_int_t
rg_http_task_start(rg_http_tasks_t *ts, rg_http_task_t *t)
{
    char              *text;
    rg_int_t           rc;
    rg_task_t          task;
    rg_session_t      *s;
    rg_agent_conf_t   *agent;
    const char        *name;

    text = json_dumps(t->task, JSON_COMPACT);
    if (text == NULL) {
        return RG_ERROR;
    }

    rc = rg_task_parse(&task, text, strlen(text), 0);
    free(text);

    if (rc != RG_OK) {
        if (rc == RG_DECLINED) {
            rg_task_free(&task);
        }
        return RG_ERROR;
    }

    name = task.agent ? task.agent
                      : rg_agent_main_conf(ts->h->engine->cycle)
                        ->default_agent.data;
    agent = rg_agent_find(ts->h->engine->cycle, name, strlen(name));

    /* a task's session is named after its id, as on the queue: its
     * events and its result are found by it */
    if (t->id) {
        rg_stream_session_id(t->id, t->sid, sizeof(t->sid));
    }

    s = agent ? rg_run_session_id(ts->h->engine, agent, t->id ? t->sid : NULL,
                                  t->id ? t->id : "chat", task.input,
                                  task.input_len, task.messages,
                                  rg_http_session_done, t)
              : NULL;
    if (s == NULL) {
        rg_task_free(&task);
        return RG_ERROR;
    }

    rg_task_apply(&task, s);

    rg_task_free(&task);

    t->session = s;
    t->started = rg_wall_msec();
    snprintf(t->sid, sizeof(t->sid), "%s", s->id);

    rg_http_link(&ts->running, t);
    ts->nrunning++;
    rg_engine_hold(ts->h->engine);

    if (t->started_cb) {
        t->started_cb(t, s);
    }

    if (rg_session_start(s) != RG_OK) {
        /* it ended already: its handler ran */
        return RG_OK;
    }

    return RG_OK;
}


/* the next waiting tasks, as slots free up */
static void
rg_http_task_next(rg_http_tasks_t *ts)
{
    rg_http_task_t  *t;

    while (ts->nrunning < ts->concurrency && ts->waiting.next != &ts->waiting)
    {
        t = ts->waiting.next;
        rg_http_unlink(t);
        ts->nwaiting--;

        if (rg_http_task_start(ts, t) != RG_OK) {
            if (t->done) {
                t->done(t, NULL, NULL);
            }
            rg_http_task_free(t);
        }
    }
}


rg_http_task_t *
rg_http_task_run(rg_http_t *h, const char *id, json_t *task)
{
    rg_http_task_t   *t;
    rg_http_tasks_t  *ts;

    ts = h->tasks;

    if (ts->nwaiting + ts->nrunning >= (rg_uint_t) h->conf->max_tasks) {
        return NULL;
    }

    t = calloc(1, sizeof(rg_http_task_t));
    if (t == NULL) {
        return NULL;
    }

    t->tasks = ts;
    t->next = t->prev = t;
    t->created = rg_wall_msec();
    t->task = json_incref(task);

    if (id) {
        t->id = strdup(id);
        if (t->id == NULL) {
            rg_http_task_free(t);
            return NULL;
        }
    }

    rg_http_link(&ts->waiting, t);
    ts->nwaiting++;

    return t;
}


void
rg_http_task_go(rg_http_t *h)
{
    rg_http_task_next(h->tasks);
}


void
rg_http_task_cancel(rg_http_task_t *t, const char *why)
{
    rg_http_tasks_t  *ts;

    ts = t->tasks;

    if (t->session) {
        rg_session_cancel(t->session, why);
        return;
    }

    /* still waiting: it never started; its result says so */
    rg_http_unlink(t);
    ts->nwaiting--;

    if (t->id && t->done == NULL) {
        char      key[96], *text;
        json_t   *r;
        rg_str_t  k, v;

        rg_stream_session_id(t->id, t->sid, sizeof(t->sid));
        r = json_pack("{s:s, s:s, s:n, s:i, s:i, s:i, s:i, s:s, s:I}",
                      "id", t->id, "status", "cancelled", "answer",
                      "rounds", 0, "tokens", 0, "model_calls", 0, "ms", 0,
                      "error", why, "created", (json_int_t) t->created);
        text = r ? json_dumps(r, JSON_COMPACT) : NULL;
        json_decref(r);
        if (text) {
            rg_http_result_key(t->sid, key, sizeof(key));
            k.data = key;
            k.len = strlen(key);
            v.data = text;
            v.len = strlen(text);
            ts->store->set(ts->store, &k, &v,
                           rg_store_session_ttl(ts->h->engine), 0,
                           rg_http_stored, NULL);
            free(text);
        }
    }

    if (t->done) {
        t->done(t, NULL, NULL);
    }

    rg_http_task_free(t);
}


/* POST /v1/tasks -------------------------------------------------------- */

typedef struct {
    rg_http_req_t      *r;
    json_t             *answers;          /* per task, in order */
    rg_uint_t           left;             /* submits still to answer */
    rg_uint_t           many;             /* an array or JSONL */
    rg_uint_t           accepted;
    char               *idem;             /* its key in the store */
    rg_store_op_t      *idem_op;
    char               *body;             /* held while the key is asked */
    size_t              len;
    char                digest[RG_SHA256_HEX];  /* the body's, kept with
                                                   the key's answer */
    rg_http_tasks_t    *ts;
} rg_http_submit_t;


typedef struct {
    rg_http_submit_t   *sub;
    rg_uint_t           index;
    char               *id;
    json_t             *task;             /* to run here */
} rg_http_one_t;


static void
rg_http_submit_free(rg_http_submit_t *sub)
{
    json_decref(sub->answers);
    free(sub->idem);
    free(sub->body);
    free(sub);
}


static void
rg_http_submit_gone(rg_http_req_t *r)
{
    rg_http_submit_t  *sub;

    sub = r->data;

    /* the submits go on, and their answer is kept for the key: a retry
     * gets it; the key's check, when asked, frees sub */
    sub->r = NULL;

    if (sub->left == 0 && sub->idem_op == NULL) {
        rg_http_submit_free(sub);
    }
}


static void
rg_http_submit_answer(rg_http_submit_t *sub)
{
    int                status;
    char              *text;
    json_t            *body, *one;
    rg_str_t           k, v;
    rg_http_tasks_t   *ts;

    ts = sub->ts;

    if (sub->many) {
        size_t   i;
        json_t  *a;

        json_array_foreach(sub->answers, i, a) {
            json_object_del(a, "http_status");
        }
        body = json_pack("{s:O, s:I}", "tasks", sub->answers, "accepted",
                         (json_int_t) sub->accepted);
        status = sub->accepted ? 202 : 400;

    } else {
        one = json_array_get(sub->answers, 0);
        body = json_incref(one);
        status = json_object_get(one, "error") ? json_integer_value(
                     json_object_get(one, "http_status")) : 202;
        if (status == 0) {
            status = 400;
        }
        json_object_del(body, "http_status");
    }

    /* the answer a retry with the same key gets */
    if (sub->idem && body && status < 500) {
        json_t  *kept;

        kept = json_pack("{s:i, s:O, s:s}", "status", status, "body", body,
                         "digest", sub->digest);
        text = kept ? json_dumps(kept, JSON_COMPACT) : NULL;
        json_decref(kept);

        if (text) {
            k.data = sub->idem;
            k.len = strlen(sub->idem);
            v.data = text;
            v.len = strlen(text);
            ts->store->set(ts->store, &k, &v, RG_HTTP_IDEM_TTL, 0,
                           rg_http_stored, NULL);
            free(text);
        }

    } else if (sub->idem) {
        /* failed: a retry may try again */
        k.data = sub->idem;
        k.len = strlen(sub->idem);
        ts->store->del(ts->store, &k, rg_http_stored, NULL);
    }

    if (sub->r) {
        rg_http_json(sub->r, status, body);
        sub->r = NULL;
    } else {
        json_decref(body);              /* its client left: kept only */
    }

    rg_http_submit_free(sub);
}


static void
rg_http_one_answer(rg_http_one_t *o, json_t *a)
{
    rg_http_submit_t  *sub;

    sub = o->sub;
    json_array_set_new(sub->answers, o->index, a);

    json_decref(o->task);
    free(o->id);
    free(o);

    if (--sub->left == 0) {
        rg_http_submit_answer(sub);
    }
}


static json_t *
rg_http_task_error(const char *id, int status, const char *code,
    const char *msg)
{
    return json_pack("{s:s?, s:{s:s, s:s, s:s}, s:i}", "id", id,
                     "error", "message", msg, "type",
                     status >= 500 ? "server_error" : "invalid_request_error",
                     "code", code, "http_status", status);
}


static void
rg_http_submitted(void *data, rg_int_t rc, const char *what)
{
    char            msg[320];
    rg_http_one_t  *o;

    o = data;

    if (rc == RG_OK) {
        o->sub->accepted++;
        rg_stream_ledger_note(o->sub->ts->h->engine, o->id);
        rg_http_one_answer(o, json_pack("{s:s, s:s}", "id", o->id, "status",
                                        "queued"));
        return;
    }

    if (rc == RG_DECLINED && strcmp(what, "submitting") == 0) {
        /* a submit that died between its two steps leaves this for
         * RG_STREAM_SUBMITTING_STALE at most */
        snprintf(msg, sizeof(msg), "task %.*s is being queued by another "
                 "submit now; if it is not queued within %d s, submit it "
                 "again", rg_http_cut(o->id, 200), o->id,
                 RG_STREAM_SUBMITTING_STALE / 1000);
        rg_http_one_answer(o, rg_http_task_error(o->id, 409,
                                                 "task_submitting", msg));
        return;
    }

    if (rc == RG_DECLINED) {
        snprintf(msg, sizeof(msg), "task %.*s was submitted before: not "
                 "queued again", rg_http_cut(o->id, 200), o->id);
        rg_http_one_answer(o, rg_http_task_error(o->id, 409, "task_exists",
                                                 msg));
        return;
    }

    snprintf(msg, sizeof(msg), "the queue did not take it: %.*s",
             rg_http_cut(what, 200), what);
    rg_http_one_answer(o, rg_http_task_error(o->id, 503, "queue_unavailable",
                                             msg));
}


/* a local task whose id is taken: by a live one, or by a kept result */
static void
rg_http_local_checked(void *data, const rg_store_res_t *res)
{
    char             msg[320];
    rg_http_one_t   *o;
    rg_http_task_t  *t;
    json_t          *task;

    o = data;
    task = o->task;

    if (res->rc == RG_OK || rg_http_task_find(o->sub->ts, o->id)) {
        snprintf(msg, sizeof(msg), "task %.*s was submitted before: not "
                 "run again", rg_http_cut(o->id, 200), o->id);
        rg_http_one_answer(o, rg_http_task_error(o->id, 409, "task_exists",
                                                 msg));
        return;
    }

    t = rg_http_task_run(o->sub->ts->h, o->id, task);
    if (t == NULL) {
        rg_http_one_answer(o, rg_http_task_error(o->id, 429, "too_many_tasks",
                           "this server holds max_tasks tasks already: ask "
                           "again later"));
        return;
    }

    o->sub->accepted++;
    rg_http_task_go(o->sub->ts->h);
    rg_http_one_answer(o, json_pack("{s:s, s:s}", "id", o->id, "status",
                                    t->session ? "running" : "queued"));
}


/* one task of the body: checked as a worker would, then submitted */
static void
rg_http_submit_one(rg_http_submit_t *sub, rg_http_req_t *r, json_t *task,
    rg_uint_t index, rg_uint_t line)
{
    char              idbuf[48], key[96], sid[48], *text;
    unsigned char     rnd[16];
    json_t           *jid;
    rg_int_t          rc;
    rg_uint_t         i;
    rg_str_t          k;
    rg_task_t         t;
    const char       *id, *tp;
    rg_http_one_t    *o;
    rg_http_tasks_t  *ts;
    rg_agent_conf_t  *agent;

    ts = r->http->tasks;
    json_array_append_new(sub->answers, json_null());
    sub->left++;

    o = calloc(1, sizeof(rg_http_one_t));
    if (o == NULL) {
        sub->left--;
        json_array_set_new(sub->answers, index, rg_http_task_error(NULL, 500,
                           "out_of_memory", "out of memory"));
        return;
    }
    o->sub = sub;
    o->index = index;

    if (!json_is_object(task)) {
        rg_http_one_answer(o, rg_http_task_error(NULL, 400, "invalid_task",
                           "a task is a JSON object: {\"input\": …}"));
        return;
    }

    jid = json_object_get(task, "id");

    /* a task without an id gets one: 128 random bits */
    if (jid == NULL || json_is_null(jid)) {
        if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
            rg_http_one_answer(o, rg_http_task_error(NULL, 500, "no_entropy",
                               "no random bits for a task id"));
            return;
        }
        memcpy(idbuf, "task-", 5);
        for (i = 0; i < sizeof(rnd); i++) {
            snprintf(idbuf + 5 + 2 * i, 3, "%02x", rnd[i]);
        }
        json_object_set_new(task, "id", json_string(idbuf));

    } else if (json_is_integer(jid)) {
        /* the id batch reads in it */
        snprintf(idbuf, sizeof(idbuf), "%lld",
                 (long long) json_integer_value(jid));
        json_object_set_new(task, "id", json_string(idbuf));

    } else if (!json_is_string(jid)
               || !rg_task_id_valid(json_string_value(jid),
                                         json_string_length(jid)))
    {
        char  msg[256];

        snprintf(msg, sizeof(msg), "line %lu: " RG_TASK_ID_RULE ": it "
                 "names the task in /v1/tasks/{id}", (unsigned long) line);
        rg_http_one_answer(o, rg_http_task_error(json_string_value(jid), 400,
                                                 "invalid_task", msg));
        return;
    }

    /* its events are recorded, for GET …/events */
    if (json_object_get(task, "events") == NULL) {
        json_object_set_new(task, "events", json_true());
    }

    /* the caller's trace goes on with the task (a traceparent of the
     * task's own comes first) */
    tp = rg_http_header(r, "traceparent");
    if (tp && json_object_get(task, "traceparent") == NULL
        && strlen(tp) < 128)
    {
        json_object_set_new(task, "traceparent", json_string(tp));
    }

    text = json_dumps(task, JSON_COMPACT);
    if (text == NULL) {
        rg_http_one_answer(o, rg_http_task_error(NULL, 500, "out_of_memory",
                                                 "out of memory"));
        return;
    }

    rc = rg_task_parse(&t, text, strlen(text), line);

    if (rc != RG_OK) {
        json_t  *a;

        a = rg_http_task_error(rc == RG_DECLINED ? t.id : NULL,
                               rc == RG_DECLINED ? 400 : 500,
                               rc == RG_DECLINED ? "invalid_task"
                                                 : "out_of_memory",
                               rc == RG_DECLINED ? t.error : "out of memory");
        if (rc == RG_DECLINED) {
            rg_task_free(&t);
        }
        free(text);
        rg_http_one_answer(o, a);
        return;
    }

    agent = rg_agent_find(r->http->engine->cycle,
                          t.agent ? t.agent
                                  : rg_agent_main_conf(r->http->engine->cycle)
                                    ->default_agent.data,
                          t.agent ? t.agent_len
                                  : rg_agent_main_conf(r->http->engine->cycle)
                                    ->default_agent.len);
    id = json_string_value(json_object_get(task, "id"));
    o->id = strdup(id);

    if (agent == NULL || o->id == NULL) {
        char  msg[160];

        snprintf(msg, sizeof(msg), "unknown agent \"%.*s\"",
                 rg_http_cut(t.agent ? t.agent : "", 64),
                 t.agent ? t.agent : "");
        rg_task_free(&t);
        free(text);
        rg_http_one_answer(o, rg_http_task_error(id, agent ? 500 : 400,
                           agent ? "out_of_memory" : "unknown_agent",
                           agent ? "out of memory" : msg));
        return;
    }

    rg_task_free(&t);

    if (ts->queue) {
        /* a dangerous call parks the session until an operator decides
         * (POST …/approve, …/deny), unless the task says "deny" */
        if (json_object_get(task, "approval") == NULL) {
            free(text);
            json_object_set_new(task, "approval", json_string("park"));
            text = json_dumps(task, JSON_COMPACT);
            if (text == NULL) {
                rg_http_one_answer(o, rg_http_task_error(id, 500,
                                   "out_of_memory", "out of memory"));
                return;
            }
        }

        rg_stream_submit(ts->queue, id, text, strlen(text), 0,
                         rg_http_submitted, o);
        free(text);
        return;
    }

    free(text);

    /* here: an id taken by a kept result is not run again */
    o->task = json_incref(task);
    rg_stream_session_id(id, sid, sizeof(sid));
    rg_http_result_key(sid, key, sizeof(key));
    k.data = key;
    k.len = strlen(key);

    if (ts->store->get(ts->store, &k, rg_http_local_checked, o) == NULL) {
        rg_http_one_answer(o, rg_http_task_error(id, 500, "out_of_memory",
                                                 "out of memory"));
    }
}


static void
rg_http_submit_body(rg_http_submit_t *sub, rg_http_req_t *r, char *body,
    size_t len)
{
    char          *line, *end;
    size_t         i;
    json_t        *j, *v;
    rg_uint_t      n;
    json_error_t   jerr;

    sub->left = 1;                        /* held while submitting */

    j = json_loadb(body, len, 0, &jerr);

    if (json_is_array(j)) {
        sub->many = 1;
        json_array_foreach(j, i, v) {
            rg_http_submit_one(sub, r, v, (rg_uint_t) i, (rg_uint_t) i + 1);
        }

    } else if (json_is_object(j)) {
        rg_http_submit_one(sub, r, j, 0, 1);

    } else if (j == NULL && strstr(jerr.text, "end of file expected")) {
        /* JSONL: one task a line */
        sub->many = 1;
        n = 0;
        for (line = body; line && *line; line = end ? end + 1 : NULL) {
            end = strchr(line, '\n');
            if (end) {
                *end = '\0';
            }
            if (line[strspn(line, " \t\r")] == '\0') {
                continue;
            }
            v = json_loads(line, 0, NULL);
            if (v == NULL) {
                json_array_append_new(sub->answers, rg_http_task_error(NULL,
                                      400, "invalid_json", "a line is not "
                                      "JSON"));
                n++;
                continue;
            }
            rg_http_submit_one(sub, r, v, n, n + 1);
            json_decref(v);
            n++;
        }

    } else {
        char  msg[256];

        snprintf(msg, sizeof(msg), "the body is not JSON (a task, an array "
                 "of tasks, or JSONL): %s at line %d, column %d", jerr.text,
                 jerr.line, jerr.column);
        json_array_append_new(sub->answers, rg_http_task_error(NULL, 400,
                              "invalid_json", msg));
    }

    json_decref(j);

    if (json_array_size(sub->answers) == 0) {
        json_array_append_new(sub->answers, rg_http_task_error(NULL, 400,
                              "no_task", "the body holds no task"));
    }

    if (--sub->left == 0) {
        rg_http_submit_answer(sub);
    }
}


/* the first answer to the key, or this request goes on */
static void
rg_http_idem_checked(void *data, const rg_store_res_t *res)
{
    char              *body;
    json_t            *kept;
    const char        *digest;
    rg_http_req_t     *r;
    rg_http_submit_t  *sub;

    sub = data;
    r = sub->r;
    sub->idem_op = NULL;

    if (r == NULL) {
        /* its client left before anything was submitted: the key it
         * took goes, a retry starts afresh */
        if (res->rc == RG_OK) {
            rg_str_t  k;

            k.data = sub->idem;
            k.len = strlen(sub->idem);
            sub->ts->store->del(sub->ts->store, &k, rg_http_stored, NULL);
        }
        rg_http_submit_free(sub);
        return;
    }

    if (res->rc == RG_DECLINED && res->value.len) {
        kept = json_loadb(res->value.data, res->value.len, 0, NULL);
        digest = json_string_value(json_object_get(kept, "digest"));

        sub->r = NULL;

        /* another request under the same key is the client's mistake,
         * not a retry (an answer kept without a digest, from before
         * digests were, is given as it was) */
        if (digest && strcmp(digest, sub->digest) != 0) {
            rg_http_error(r, 422, "invalid_request_error",
                          "idempotency_key_reused", "this Idempotency-Key "
                          "was used with another request (another body): "
                          "a new request takes a new key");

        } else if (json_object_get(kept, "body")) {
            rg_http_json(r, (int) json_integer_value(json_object_get(kept,
                                                     "status")),
                         json_incref(json_object_get(kept, "body")));

        } else {
            rg_http_error(r, 409, "invalid_request_error", "in_progress",
                          "a request with this Idempotency-Key is being "
                          "answered: ask again in a moment");
        }

        rg_http_submit_free(sub);
        json_decref(kept);
        return;
    }

    if (res->rc == RG_ERROR) {
        sub->r = NULL;
        rg_http_submit_free(sub);
        rg_http_error(r, 503, "server_error", "store_unavailable",
                      "the Idempotency-Key cannot be checked: %s", res->err);
        return;
    }

    body = sub->body;
    sub->body = NULL;

    rg_http_submit_body(sub, r, body, sub->len);
    free(body);
}


static void
rg_http_submit(rg_http_req_t *r)
{
    char               *body, digest[RG_SHA256_HEX], pending[96];
    size_t              len;
    rg_str_t            k, v;
    const char         *key;
    rg_http_submit_t   *sub;
    rg_http_tasks_t    *ts;

    ts = r->http->tasks;

    sub = calloc(1, sizeof(rg_http_submit_t));
    if (sub) {
        sub->answers = json_array();
    }
    if (sub == NULL || sub->answers == NULL) {
        free(sub);
        rg_http_error(r, 500, "server_error", "out_of_memory",
                      "out of memory");
        return;
    }

    sub->r = r;
    sub->ts = ts;
    rg_http_watch(r, rg_http_submit_gone, sub);

    /* read first: a key is kept with its body's digest */
    body = rg_http_body(r, &len);
    if (body == NULL) {
        sub->r = NULL;
        rg_http_submit_free(sub);
        return;
    }

    key = rg_http_header(r, "Idempotency-Key");

    if (key == NULL) {
        rg_http_submit_body(sub, r, body, len);
        free(body);
        return;
    }

    sub->body = body;
    sub->len = len;

    if (key[0] == '\0' || strlen(key) > 256) {
        sub->r = NULL;
        rg_http_submit_free(sub);
        rg_http_error(r, 400, "invalid_request_error", "bad_idempotency_"
                      "key", "Idempotency-Key must be 1 to 256 bytes");
        return;
    }

    /* the key of the token's holder: callers with other tokens never
     * meet each other's answers */
    sub->idem = malloc(96);

    if (sub->idem == NULL
        || rg_sha256_hex(digest, key, strlen(key),
                         r->http->conf->token ? r->http->conf->token : "",
                         r->http->conf->token_len) != RG_OK
        || rg_sha256_hex(sub->digest, body, len, "", 0) != RG_OK)
    {
        sub->r = NULL;
        rg_http_submit_free(sub);
        rg_http_error(r, 500, "server_error", "out_of_memory",
                      "out of memory");
        return;
    }

    snprintf(sub->idem, 96, "{api:idem:%.40s}", digest);

    /* taken while it is answered; its body says which request took it */
    k.data = sub->idem;
    k.len = strlen(sub->idem);
    v.data = pending;
    v.len = (size_t) snprintf(pending, sizeof(pending),
                              "{\"digest\":\"%s\"}", sub->digest);

    sub->idem_op = ts->store->set(ts->store, &k, &v, RG_HTTP_IDEM_TTL,
                                  RG_STORE_NX, rg_http_idem_checked, sub);
    if (sub->idem_op == NULL) {
        sub->r = NULL;
        rg_http_submit_free(sub);
        rg_http_error(r, 500, "server_error", "out_of_memory",
                      "out of memory");
    }
}


/* GET /v1/tasks/{id}, and DELETE's look first ------------------------- */

typedef struct {
    rg_http_req_t      *r;
    char               *id;
    char                sid[48];
    rg_uint_t           step;             /* 0 result, 1 meta, 2 mark */
    rg_redis_cmd_t     *cmd;
    rg_store_op_t      *op;
    json_t             *state;            /* parked: its meta, until its
                                             record comes */
    rg_uint_t           asking:1;         /* the record, asked */
    rg_uint_t           gone:1;
    rg_uint_t           cancel:1;         /* DELETE: unless it ended */
} rg_http_lookup_t;


static void rg_http_task_ended(rg_http_req_t *r, const char *id,
    json_t *state);
static void rg_http_cancel_queue(rg_http_req_t *r, const char *id);
static void rg_http_cancel_local(rg_http_req_t *r, const char *id,
    rg_http_task_t *t);


static void
rg_http_lookup_free(rg_http_lookup_t *lk)
{
    json_decref(lk->state);
    free(lk->id);
    free(lk);
}


/* a parked task's record: the calls it waits for */
static void
rg_http_lookup_parked(void *data, rg_int_t rc, const char *msg)
{
    rg_http_lookup_t  *lk;

    lk = data;

    if (lk->gone) {
        rg_http_lookup_free(lk);
        return;
    }

    if (rc == RG_OK) {
        json_object_set_new(lk->state, "approval",
                            json_loads(msg, 0, NULL));
    }

    rg_http_json(lk->r, 200, json_incref(lk->state));
    rg_http_lookup_free(lk);
}


static void
rg_http_lookup_gone(rg_http_req_t *r)
{
    rg_http_lookup_t  *lk;

    lk = r->data;

    if (lk->asking) {
        lk->gone = 1;                  /* freed when the record comes */
        return;
    }

    if (lk->cmd) {
        rg_redis_cancel(lk->cmd);
    }
    if (lk->op) {
        r->http->tasks->store->cancel(r->http->tasks->store, lk->op);
    }

    rg_http_lookup_free(lk);
}


static void rg_http_lookup_step(rg_http_lookup_t *lk);


static void
rg_http_lookup_redis(void *data, redisReply *reply, const char *err)
{
    size_t             i;
    json_t            *j;
    rg_http_req_t     *r;
    rg_http_lookup_t  *lk;
    json_t            *why;
    const char        *status;
    static const char *fields[] = { "status", "round", "prompt_tokens",
                                    "completion_tokens", "created",
                                    "updated", "agent", "reason" };

    lk = data;
    lk->cmd = NULL;
    r = lk->r;

    if (err) {
        rg_http_error(r, 503, "server_error", "store_unavailable",
                      "the task's state cannot be read: %s", err);
        rg_http_lookup_free(lk);
        return;
    }

    if (lk->step == 1) {
        /* the meta of its session: it runs, or ran and will say */
        if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 8
            && reply->element[0]->type == REDIS_REPLY_STRING)
        {
            j = json_pack("{s:s, s:s}", "id", lk->id, "session", lk->sid);
            for (i = 0; j && i < 8; i++) {
                redisReply  *e = reply->element[i];

                if (e->type != REDIS_REPLY_STRING) {
                    continue;
                }
                if (i == 0 || i >= 6) {
                    json_object_set_new(j, fields[i],
                                        json_stringn(e->str, e->len));
                } else {
                    json_object_set_new(j, fields[i],
                                        json_integer(strtoll(e->str, NULL,
                                                             10)));
                }
            }
            if (j) {
                json_object_set_new(j, "rounds", json_incref(
                                    json_object_get(j, "round")));
                json_object_del(j, "round");
                json_object_set_new(j, "tokens", json_integer(
                    json_integer_value(json_object_get(j, "prompt_tokens"))
                    + json_integer_value(json_object_get(j,
                                                 "completion_tokens"))));

                /* ended, its result not written yet: why, as the result
                 * will say it ("error", or "note" when done) */
                status = json_string_value(json_object_get(j, "status"));
                why = json_object_get(j, "reason");
                if (json_string_length(why) && status
                    && rg_session_final_state(status, strlen(status))
                       != RG_SESSION_QUEUED)
                {
                    json_object_set(j, strcmp(status, "done") == 0
                                       ? "note" : "error", why);
                }
                json_object_del(j, "reason");
            }

            if (lk->cancel) {
                status = json_string_value(json_object_get(j, "status"));

                if (status && rg_session_final_state(status, strlen(status))
                              != RG_SESSION_QUEUED)
                {
                    rg_http_task_ended(r, r->rest, j);
                } else {
                    json_decref(j);
                    rg_http_cancel_queue(r, r->rest);
                }

                rg_http_lookup_free(lk);
                return;
            }

            if (j && r->http->tasks->queue
                && strcmp(json_string_value(json_object_get(j, "status")),
                          "awaiting_approval") == 0)
            {
                lk->state = j;
                lk->asking = 1;
                rg_approval_get(r->http->tasks->queue, lk->id,
                                rg_http_lookup_parked, lk);
                return;
            }

            rg_http_json(r, 200, j);
            rg_http_lookup_free(lk);
            return;
        }

        /* queued, or unknown: its mark says (step 2) */
        lk->step = 2;
        rg_http_lookup_step(lk);
        return;
    }

    /* its submit mark: queued, not yet taken; the cancel set holds a
     * cancel for whoever takes it */
    if (reply->type == REDIS_REPLY_INTEGER && reply->integer == 1
        && lk->cancel)
    {
        rg_http_cancel_queue(r, r->rest);

    } else if (reply->type == REDIS_REPLY_INTEGER && reply->integer == 1) {
        rg_http_json(r, 200, json_pack("{s:s, s:s, s:s}", "id", lk->id,
                                       "status", "queued", "session",
                                       lk->sid));
    } else {
        rg_http_error(r, 404, "invalid_request_error", "task_not_found",
                      "no task %.200s (or it ended longer ago than the "
                      "session ttl)", lk->id);
    }

    rg_http_lookup_free(lk);
}


static void
rg_http_lookup_result(void *data, const rg_store_res_t *res)
{
    json_t            *j;
    rg_http_task_t    *t;
    rg_http_lookup_t  *lk;

    lk = data;
    lk->op = NULL;

    if (res->rc == RG_OK) {
        j = json_loadb(res->value.data, res->value.len, 0, NULL);
        if (j) {
            json_t  *why;

            json_object_set_new(j, "session", json_string(lk->sid));

            /* why it ended as it did: its error, else a remark, else none */
            why = json_object_get(j, "error");
            if (!json_is_string(why)) {
                why = json_object_get(j, "note");
            }
            json_object_set(j, "reason", json_is_string(why) ? why
                                                             : json_null());
        }

        if (j && lk->cancel) {
            rg_http_task_ended(lk->r, lk->r->rest, j);
            rg_http_lookup_free(lk);
            return;
        }

        rg_http_json(lk->r, j ? 200 : 500, j ? j : json_pack("{s:{s:s, s:s, "
                     "s:s}}", "error", "message", "the kept result is not "
                     "JSON", "type", "server_error", "code", "bad_result"));
        rg_http_lookup_free(lk);
        return;
    }

    if (res->rc == RG_ERROR) {
        rg_http_error(lk->r, 503, "server_error", "store_unavailable",
                      "the task's result cannot be read: %s", res->err);
        rg_http_lookup_free(lk);
        return;
    }

    if (lk->r->http->tasks->queue) {
        lk->step = 1;
        rg_http_lookup_step(lk);
        return;
    }

    /* here: running or waiting, or unknown */
    t = rg_http_task_find(lk->r->http->tasks, lk->id);

    if (lk->cancel) {
        rg_http_cancel_local(lk->r, lk->r->rest, t);
        rg_http_lookup_free(lk);
        return;
    }

    if (t == NULL) {
        rg_http_error(lk->r, 404, "invalid_request_error", "task_not_found",
                      "no task %.200s (or it ended longer ago than the "
                      "session ttl)", lk->id);
    } else {
        rg_session_t  *s = t->session;

        rg_http_json(lk->r, 200, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}",
                     "id", t->id,
                     "status", s ? rg_session_state_name(s->state) : "queued",
                     "rounds", (json_int_t) (s ? s->round : 0),
                     "tokens", (json_int_t) (s ? s->prompt_tokens
                                                 + s->completion_tokens : 0),
                     "created", (json_int_t) t->created,
                     "started", (json_int_t) t->started));
    }

    rg_http_lookup_free(lk);
}


static void
rg_http_lookup_step(rg_http_lookup_t *lk)
{
    char              key[128];
    size_t            lens[10];
    rg_str_t          tag;
    const char       *argv[10];
    rg_http_tasks_t  *ts;
    int               i, argc;

    ts = lk->r->http->tasks;
    tag.data = lk->sid;
    tag.len = strlen(lk->sid);

    if (lk->step == 1) {
        snprintf(key, sizeof(key), "%s{%s}:meta", ts->prefix, lk->sid);
        argv[0] = "HMGET";
        argv[1] = key;
        argv[2] = "status";
        argv[3] = "round";
        argv[4] = "prompt_tokens";
        argv[5] = "completion_tokens";
        argv[6] = "created";
        argv[7] = "updated";
        argv[8] = "agent";
        argv[9] = "reason";
        argc = 10;
    } else {
        snprintf(key, sizeof(key), "%s{%s}:task", ts->prefix, lk->sid);
        argv[0] = "EXISTS";
        argv[1] = key;
        argc = 2;
    }

    for (i = 0; i < argc; i++) {
        lens[i] = strlen(argv[i]);
    }

    lk->cmd = rg_redis_command(ts->redis, &tag, 0, rg_http_lookup_redis, lk,
                               argc, argv, lens);
    if (lk->cmd == NULL) {
        rg_http_error(lk->r, 500, "server_error", "out_of_memory",
                      "out of memory");
        rg_http_lookup_free(lk);
    }
}


/* GET, and DELETE (cancel), which answers 409 for a task that ended */
static void
rg_http_task_lookup(rg_http_req_t *r, const char *id, rg_uint_t cancel)
{
    char               key[96];
    rg_str_t           k;
    rg_http_lookup_t  *lk;
    rg_http_tasks_t   *ts;

    ts = r->http->tasks;

    lk = calloc(1, sizeof(rg_http_lookup_t));
    if (lk) {
        lk->id = strdup(id);
    }
    if (lk == NULL || lk->id == NULL) {
        free(lk);
        rg_http_error(r, 500, "server_error", "out_of_memory",
                      "out of memory");
        return;
    }

    lk->r = r;
    lk->cancel = cancel;
    rg_stream_session_id(id, lk->sid, sizeof(lk->sid));

    /* a local task's session is named at random: its result is keyed by
     * its task's id's session id all the same */
    rg_http_result_key(lk->sid, key, sizeof(key));
    k.data = key;
    k.len = strlen(key);

    rg_http_watch(r, rg_http_lookup_gone, lk);

    lk->op = ts->store->get(ts->store, &k, rg_http_lookup_result, lk);
    if (lk->op == NULL) {
        rg_http_error(r, 500, "server_error", "out_of_memory",
                      "out of memory");
        rg_http_lookup_free(lk);
    }
}


/* DELETE /v1/tasks/{id} ---------------------------------------------- */

static void
rg_http_cancelled(void *data, redisReply *reply, const char *err)
{
    rg_http_req_t  *r;

    r = data;
    r->data = NULL;

    if (err) {
        rg_http_error(r, 503, "server_error", "store_unavailable",
                      "the cancel was not recorded: %s", err);
        return;
    }

    rg_http_json(r, 202, json_pack("{s:s, s:s}", "id", r->rest, "status",
                                   "cancelling"));
}


static void
rg_http_parked_cancelled(void *data, rg_int_t rc, const char *msg)
{
    rg_engine_t  *e;

    e = data;

    /* not parked (RG_DECLINED) is the common case: the cancel set does */
    if (rc == RG_ERROR) {
        rg_log_error(RG_LOG_WARN, e->log, 0, "http: a parked task's cancel "
                     "was not recorded: %s", msg);
    }
}


static void
rg_http_cancel_gone(rg_http_req_t *r)
{
    /* the cancel may be recorded all the same; its answer has nobody */
    if (r->data) {
        rg_redis_cancel(r->data);
    }
}


/* a task that ended is not cancelled: how it ended, as GET says it */
static void
rg_http_task_ended(rg_http_req_t *r, const char *id, json_t *state)
{
    char         msg[320];
    const char  *status;

    status = json_string_value(json_object_get(state, "status"));

    snprintf(msg, sizeof(msg), "task %.*s has ended (%s): there is nothing "
             "to cancel", rg_http_cut(id, 200), id, status ? status : "?");

    rg_http_json(r, 409, json_pack("{s:s, s:s?, s:{s:s, s:s, s:s}, s:O}",
                                   "id", id, "status", status,
                                   "error", "message", msg,
                                   "type", "invalid_request_error",
                                   "code", "task_ended", "task", state));
    json_decref(state);
}


/* with a queue: the worker that runs it (or takes it) sees the mark */
static void
rg_http_cancel_queue(rg_http_req_t *r, const char *id)
{
    rg_http_tasks_t  *ts;

    ts = r->http->tasks;

    /* parked: its record says so, and it ends at once */
    rg_approval_cancel(ts->queue, id, "cancelled through the API",
                       rg_http_parked_cancelled, ts->h->engine);

    rg_http_watch(r, rg_http_cancel_gone, NULL);
    r->data = rg_stream_cancel(ts->queue, id, rg_http_cancelled, r);
    if (r->data == NULL) {
        rg_http_error(r, 500, "server_error", "out_of_memory",
                      "out of memory");
    }
}


static void
rg_http_cancel_local(rg_http_req_t *r, const char *id, rg_http_task_t *t)
{
    if (t == NULL) {
        rg_http_error(r, 404, "invalid_request_error", "task_not_found",
                      "no task %.200s (or it ended longer ago than the "
                      "session ttl)", id);
        return;
    }

    if (t->session == NULL) {
        rg_http_task_cancel(t, "cancelled through the API");
        rg_http_json(r, 200, json_pack("{s:s, s:s}", "id", id, "status",
                                       "cancelled"));
        return;
    }

    rg_http_json(r, 202, json_pack("{s:s, s:s}", "id", id, "status",
                                   "cancelling"));
    rg_session_cancel(t->session, "cancelled through the API");
}


/* the routes ----------------------------------------------------------- */

/* /v1/tasks/{id}/events, …/approve, …/deny */
static void
rg_http_task_sub(rg_http_req_t *r, const char *id, const char *what, int m)
{
    if (strcmp(what, "events") == 0) {
        if (m != EVHTTP_REQ_GET) {
            rg_http_not_allowed(r, "GET", "events take GET");
            return;
        }
        rg_http_events_handler(r, id);
        return;
    }

    if (strcmp(what, "approve") == 0 || strcmp(what, "deny") == 0) {
        if (m != EVHTTP_REQ_POST) {
            rg_http_not_allowed(r, "POST", "%s takes POST", what);
            return;
        }
        rg_http_approval_handler(r, id, what[0] == 'a');
        return;
    }

    rg_http_error(r, 404, "invalid_request_error", "not_found",
                  "no such endpoint: a task has /events, /approve and /deny");
}


/* /v1/tasks, /v1/tasks/{id}, /v1/tasks/{id}/approve|deny */
void
rg_http_tasks_handler(rg_http_req_t *r)
{
    char        *slash;
    int          m;
    rg_uint_t    n;

    m = evhttp_request_get_command(r->req);

    if (r->rest[0] == '\0') {
        rg_http_submit(r);
        return;
    }

    /* an id is what a task line may hold: no slash, no control bytes */
    n = (rg_uint_t) strlen(r->rest);
    slash = strchr(r->rest, '/');

    if (slash == NULL && m == EVHTTP_REQ_POST) {
        rg_http_not_allowed(r, "GET, DELETE", "a task takes GET and DELETE");
        return;
    }

    if (n > 512) {
        rg_http_error(r, 404, "invalid_request_error", "not_found",
                      "no such endpoint");
        return;
    }

    if (slash) {
        *slash = '\0';
        rg_http_task_sub(r, r->rest, slash + 1, m);
        return;
    }

    rg_http_task_lookup(r, r->rest, m == EVHTTP_REQ_DELETE);
}


/* GET /v1/agents */
void
rg_http_agents_handler(rg_http_req_t *r)
{
    json_t                *list, *a, *tools;
    rg_str_t              *names;
    rg_uint_t              i, j;
    rg_agent_conf_t      **agents;
    rg_agent_main_conf_t  *amcf;

    amcf = rg_agent_main_conf(r->http->engine->cycle);
    agents = amcf->agents.elts;
    list = json_array();

    for (i = 0; list && i < amcf->agents.nelts; i++) {
        tools = json_array();
        names = agents[i]->tool_names ? agents[i]->tool_names->elts : NULL;

        for (j = 0; tools && names && j < agents[i]->tool_names->nelts; j++) {
            json_array_append_new(tools, json_stringn(names[j].data,
                                                      names[j].len));
        }

        names = agents[i]->provided ? agents[i]->provided->elts : NULL;

        for (j = 0; tools && names && j < agents[i]->provided->nelts; j++) {
            json_array_append_new(tools, json_stringn(names[j].data,
                                                      names[j].len));
        }

        a = json_pack("{s:s%, s:s%, s:o, s:b, s:I}",
                      "name", agents[i]->name.data, agents[i]->name.len,
                      "llm", agents[i]->llm_name.data ? agents[i]->llm_name.data
                                                      : "",
                      agents[i]->llm_name.len,
                      "tools", tools ? tools : json_array(),
                      "default", rg_str_cmp(&agents[i]->name,
                                            &amcf->default_agent) == 0,
                      "max_rounds", (json_int_t) agents[i]->max_rounds);
        json_array_append_new(list, a);
    }

    rg_http_json(r, 200, json_pack("{s:o}", "agents",
                                   list ? list : json_array()));
}


rg_uint_t
rg_http_tasks_running(rg_http_t *h)
{
    return h->tasks->nrunning + h->tasks->nwaiting;
}


rg_int_t
rg_http_tasks_init(rg_http_t *h)
{
    rg_http_tasks_t  *ts;

    ts = calloc(1, sizeof(rg_http_tasks_t));
    if (ts == NULL) {
        return RG_ERROR;
    }

    h->tasks = ts;
    ts->h = h;
    ts->running.next = ts->running.prev = &ts->running;
    ts->waiting.next = ts->waiting.prev = &ts->waiting;
    ts->concurrency = (rg_uint_t) rg_core_conf(h->engine->cycle)->concurrency;
    ts->store = rg_store_ctx(h->engine);
    ts->prefix = rg_store_prefix(h->engine->cycle);

    if (rg_queue_conf(h->engine->cycle)->declared) {
        char  name[160];

        snprintf(name, sizeof(name), "%s-api", rg_agent_ctx(h->engine)
                                                ->worker);
        ts->queue = rg_stream_create(h->engine, name);
        if (ts->queue == NULL) {
            return RG_ERROR;
        }
    }

    /* the API reads the tasks' state on the queue's connections (those
     * its submits go over); without a queue, one of its own asks Redis
     * for readiness; NULL with store memory */
    if (ts->queue) {
        ts->redis = rg_stream_redis(ts->queue);

    } else {
        ts->redis = rg_store_redis_new(h->engine, 1, 0);
        ts->own_redis = ts->redis != NULL;
    }

    return RG_OK;
}


void
rg_http_tasks_exit(rg_http_t *h)
{
    rg_http_task_t   *t;
    rg_http_tasks_t  *ts;

    ts = h->tasks;
    if (ts == NULL) {
        return;
    }

    /* sessions first: their handlers would start the waiting ones */
    while (ts->waiting.next != &ts->waiting) {
        t = ts->waiting.next;
        rg_http_unlink(t);
        if (t->done) {
            t->done(t, NULL, NULL);
        }
        rg_http_task_free(t);
    }
    ts->nwaiting = 0;

    while (ts->running.next != &ts->running) {
        t = ts->running.next;
        rg_http_unlink(t);
        if (t->session) {
            t->session->handler = NULL;
            rg_session_destroy(t->session);
            t->session = NULL;
        }
        if (t->done) {
            t->done(t, NULL, NULL);
        }
        rg_http_task_free(t);
    }
    ts->nrunning = 0;

    if (ts->queue) {
        rg_stream_destroy(ts->queue);
    }
    if (ts->own_redis) {
        rg_redis_destroy(ts->redis);
    }

    free(ts);
    h->tasks = NULL;
}
