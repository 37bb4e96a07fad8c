/* rg_http_lookup.c: GET /v1/tasks/{id} says where a task is: with a
 * queue { }, its state is read from Redis (its result, else its
 * session's meta, else its submit mark: queued; a parked one with its
 * approval record); without one, from this worker's tasks
 * (rg_http_tasks.c), else its kept result. DELETE cancels it: a task of
 * the queue through the queue, a parked one through its record, one
 * running here through its session; a task that ended is a 409 saying
 * how it ended. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_cycle.h>
#include <rg_core_conf.h>
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
        rg_session_outcome_t  o;

        memset(&o, 0, sizeof(o));
        o.status = "queued";

        if (t->session) {
            rg_session_outcome(t->session, &o);
        }

        rg_http_json(lk->r, 200, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}",
                     "id", t->id,
                     "status", o.status,
                     "rounds", (json_int_t) o.rounds,
                     "tokens", (json_int_t) (o.prompt_tokens
                                             + o.completion_tokens),
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
        rg_http_nomem(lk->r);
        rg_http_lookup_free(lk);
    }
}


/* GET, and DELETE (cancel), which answers 409 for a task that ended */
void
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
        rg_http_nomem(r);
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
        rg_http_nomem(r);
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
        rg_http_nomem(r);
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
