/* rg_http_health.c: the probes and the metrics. GET /healthz: the worker
 * answers (liveness). GET /readyz: it should be sent work — not
 * draining, and its store reachable when that is Redis (readiness); it
 * also says when the store last lost its memory, as this worker saw it,
 * and the queue's last record of such a loss (what was written back and
 * which tasks are gone: rg_stream_lost.c). GET /metrics: the Prometheus
 * text of the whole server. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_store.h>
#include <rg_redis.h>
#include <rg_http.h>
#include <rg_http_tasks.h>
#include <rg_metrics.h>
#include <rg_stream.h>
#include <jansson.h>


void
rg_http_healthz_handler(rg_http_req_t *r)
{
    rg_http_json(r, 200, json_pack("{s:s, s:i}", "status", "ok", "pid",
                                   (int) getpid()));
}


static void
rg_http_ready(rg_http_req_t *r, json_t *loss)
{
    json_t       *o;
    rg_uint_t     alive, slots;
    rg_store_t   *st;

    /* every worker up: one that died is being started again */
    if (rg_metrics_workers(r->http->engine->cycle, &alive, &slots) == RG_OK
        && alive < slots)
    {
        rg_http_error(r, 503, "unavailable", "workers_down", "%lu of %lu "
                      "workers are up", (unsigned long) alive,
                      (unsigned long) slots);
        json_decref(loss);
        return;
    }

    st = r->http->tasks->store;

    o = json_pack("{s:s, s:s, s:I, s:I}", "status", "ready",
                  "store", st->name,
                  "sessions", (json_int_t) rg_http_tasks_running(r->http),
                  "event_streams", (json_int_t) r->http->streams);

    /* a store that forgot everything once is still ready: it is said */
    if (o && st->epoch.losses) {
        json_object_set_new(o, "store_losses",
                            json_integer((json_int_t) st->epoch.losses));
        json_object_set_new(o, "store_lost_at",
                            json_integer((json_int_t) st->epoch.lost_at));
    }

    if (o && loss) {
        json_object_set(o, "last_store_loss", loss);
    }

    json_decref(loss);
    rg_http_json(r, 200, o);
}


static void
rg_http_pong(void *data, redisReply *reply, const char *err)
{
    json_t         *loss;
    rg_http_req_t  *r;

    r = data;
    r->data = NULL;

    if (err) {
        rg_http_error(r, 503, "unavailable", "store_unavailable",
                      "Redis is not reachable from this worker: %s", err);
        return;
    }

    /* the queue's last record of a loss, when asked for it */
    loss = NULL;
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements
        && reply->element[0]->type == REDIS_REPLY_STRING)
    {
        loss = json_loadb(reply->element[0]->str, reply->element[0]->len, 0,
                          NULL);
    }

    rg_http_ready(r, loss);
}


static void
rg_http_ping_gone(rg_http_req_t *r)
{
    if (r->data) {
        rg_redis_cancel(r->data);
    }
}


void
rg_http_readyz_handler(rg_http_req_t *r)
{
    rg_http_tasks_t  *ts;
    const char       *argv[1] = { "PING" };
    size_t            lens[1] = { 4 };

    ts = r->http->tasks;

    if (r->http->draining) {
        rg_http_error(r, 503, "unavailable", "draining", "this worker is "
                      "draining");
        return;
    }

    if (ts->redis == NULL) {
        rg_http_ready(r, NULL);
        return;
    }

    /* reachable now, not when last used: a command of its own (the
     * queue's last record of a loss, else a PING) */
    rg_http_watch(r, rg_http_ping_gone, NULL);
    r->data = ts->queue ? rg_stream_losses(ts->queue, 1, rg_http_pong, r)
                        : rg_redis_command(ts->redis, NULL, 1000,
                                           rg_http_pong, r, 1, argv, lens);
    if (r->data == NULL) {
        rg_http_nomem(r);
    }
}


void
rg_http_metrics_handler(rg_http_req_t *r)
{
    rg_buf_t  b;

    memset(&b, 0, sizeof(b));

    if (rg_metrics_render(r->http->engine->cycle, &b) != RG_OK) {
        rg_buf_free(&b);
        rg_http_nomem(r);
        return;
    }

    rg_http_send(r, 200, "text/plain; version=0.0.4; charset=utf-8",
                 b.data ? b.data : "", b.len);
    rg_buf_free(&b);
}
