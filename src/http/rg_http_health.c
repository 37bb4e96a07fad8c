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


void
rg_http_healthz_handler(rg_http_req_t *r)
{
    rg_http_json(r, 200, json_pack("{s:s, s:i}", "status", "ok", "pid",
                                   (int) getpid()));
}


void
rg_http_readyz_handler(rg_http_req_t *r)
{
    rg_http_tasks_t  *ts;

    ts = r->http->tasks;

    if (r->http->draining) {
        rg_http_error(r, 503, "unavailable", "draining", "this worker is "
                      "draining");
        return;
    }

    if (ts->redis && !rg_redis_connected(ts->redis)) {
        rg_http_error(r, 503, "unavailable", "store_unavailable",
                      "Redis is not reachable from this worker");
        return;
    }

    rg_http_json(r, 200, json_pack("{s:s, s:s, s:I}", "status", "ready",
                                   "store", ts->store->name,
                                   "sessions",
                                   (json_int_t) rg_http_tasks_running(
                                       r->http)));
}


void
rg_http_metrics_handler(rg_http_req_t *r)
{
    rg_http_error(r, 501, "server_error", "not_implemented",
                  "metrics are not built yet");
}
