/* rg_http_submit.c: POST /v1/tasks, which takes one task (the batch
 * JSONL object), a JSON array of them, or JSONL. With a queue { } (store
 * redis), each goes onto the queue that every worker reads
 * (rg_stream_submit); without one, it runs in this worker
 * (rg_http_tasks.c).
 *
 * Idempotency-Key: the first answer to a key is kept (24 h), with the
 * digest of the request's body, and given again to a retry of the same
 * body; a retry while the first is still being answered is a 409, the
 * key with another body a 422 (draft-ietf-httpapi-idempotency-key-header).
 *
 * A task's id names it in /v1/tasks/{id}: one that no path could name is
 * refused. */

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
#include <rg_task.h>
#include <rg_stream.h>
#include <rg_approval.h>
#include <rg_queue_conf.h>
#include <rg_http.h>
#include <rg_http_tasks.h>
#include <sys/random.h>



#define RG_HTTP_IDEM_TTL   (24 * 3600 * 1000)


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


void
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
        rg_http_nomem(r);
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
        rg_http_nomem(r);
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
        rg_http_nomem(r);
    }
}
