/* rg_http_health.c: the probes and the metrics. GET /healthz: the worker
 * answers (liveness). GET /readyz: it should be sent work — not
 * draining, and its store reachable when that is Redis (readiness).
 * GET /metrics: the Prometheus text of the whole server. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_store.h>
#include <rg_redis.h>
#include <rg_http.h>
#include <rg_http_tasks.h>
#include <rg_metrics.h>


void
rg_http_healthz_handler(rg_http_req_t *r)
{
    rg_http_json(r, 200, json_pack("{s:s, s:i}", "status", "ok", "pid",
                                   (int) getpid()));
}


static void
rg_http_ready(rg_http_req_t *r)
{
    rg_uint_t  alive, slots;

    /* every worker up: one that died is being started again */
    if (rg_metrics_workers(r->http->engine->cycle, &alive, &slots) == RG_OK
        && alive < slots)
    {
        rg_http_error(r, 503, "unavailable", "workers_down", "%lu of %lu "
                      "workers are up", (unsigned long) alive,
                      (unsigned long) slots);
        return;
    }

    rg_http_json(r, 200, json_pack("{s:s, s:s, s:I, s:I}", "status", "ready",
                                   "store", r->http->tasks->store->name,
                                   "sessions",
                                   (json_int_t) rg_http_tasks_running(
                                       r->http),
                                   "event_streams",
                                   (json_int_t) r->http->streams));
}


static void
rg_http_pong(void *data, redisReply *reply, const char *err)
{
    rg_http_req_t  *r;

    r = data;
    r->data = NULL;

    if (err) {
        rg_http_error(r, 503, "unavailable", "store_unavailable",
                      "Redis is not reachable from this worker: %s", err);
        return;
    }

    rg_http_ready(r);
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
        rg_http_ready(r);
        return;
    }

    /* reachable now, not when last used: a PING of its own */
    rg_http_watch(r, rg_http_ping_gone, NULL);
    r->data = rg_redis_command(ts->redis, NULL, 1000, rg_http_pong, r, 1,
                               argv, lens);
    if (r->data == NULL) {
        rg_http_error(r, 500, "server_error", "out_of_memory",
                      "out of memory");
    }
}


void
rg_http_metrics_handler(rg_http_req_t *r)
{
    rg_buf_t  b;

    memset(&b, 0, sizeof(b));

    if (rg_metrics_render(r->http->engine->cycle, &b) != RG_OK) {
        rg_buf_free(&b);
        rg_http_error(r, 500, "server_error", "out_of_memory",
                      "out of memory");
        return;
    }

    rg_http_send(r, 200, "text/plain; version=0.0.4; charset=utf-8",
                 b.data ? b.data : "", b.len);
    rg_buf_free(&b);
}
