/* rg_http_approval.c: POST /v1/tasks/{id}/approve and /deny, the
 * operator's decision on the calls a parked session waits for (a task
 * submitted through the API parks on a dangerous call: it holds no
 * memory meanwhile, only its checkpoint). The body may name the call,
 * {"tool_call_id": "call_1"} (else every call still waiting), and a deny
 * its reason, {"reason": "…"}, which the model is told. The decision that
 * completes the record queues the task again; any worker resumes it.
 * Parking needs the queue: without one a dangerous call is refused by
 * the agent's approval policy instead. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_http.h>
#include <rg_http_tasks.h>
#include <rg_approval.h>


/* a decision on its way: the request may go before its answer comes */
typedef struct {
    rg_http_req_t      *r;
    rg_uint_t           approve;
} rg_http_decision_t;


static void
rg_http_decision_gone(rg_http_req_t *r)
{
    rg_http_decision_t  *d;

    d = r->data;
    d->r = NULL;                       /* freed when its answer comes */
}


static void
rg_http_decided(void *data, rg_int_t rc, const char *msg)
{
    int                  status;
    rg_uint_t            approve;
    const char          *code;
    rg_http_req_t       *r;
    rg_http_decision_t  *d;

    d = data;
    r = d->r;
    approve = d->approve;
    free(d);

    if (r == NULL) {
        return;
    }

    if (rc == RG_OK) {
        rg_http_json(r, 200, json_pack("{s:s, s:s, s:s}", "id", r->rest,
                                       "decision",
                                       approve ? "approved" : "denied",
                                       "message", msg));
        return;
    }

    if (rc == RG_DECLINED) {
        if (strncmp(msg, "no such call", 12) == 0) {
            status = 404;
            code = "no_such_call";
        } else if (strncmp(msg, "already decided", 15) == 0) {
            status = 409;
            code = "already_decided";
        } else {
            status = 409;
            code = "not_awaiting_approval";
        }
        rg_http_error(r, status, "invalid_request_error", code, "%s", msg);
        return;
    }

    rg_http_error(r, 503, "server_error", "store_unavailable",
                  "the decision was not recorded: %s", msg);
}


void
rg_http_approval_handler(rg_http_req_t *r, const char *id,
    rg_uint_t approve)
{
    char                *body;
    size_t               len;
    json_t              *j, *call, *reason;
    rg_http_tasks_t     *ts;
    rg_http_decision_t  *d;

    ts = r->http->tasks;

    if (ts->queue == NULL) {
        rg_http_error(r, 409, "invalid_request_error", "no_queue",
                      "approvals need the queue (queue { }, store redis): "
                      "without it no session parks, a dangerous call is "
                      "refused by the agent's policy");
        return;
    }

    body = rg_http_body(r, &len);
    if (body == NULL) {
        return;
    }

    j = NULL;

    if (len && body[strspn(body, " \t\r\n")] != '\0') {
        j = json_loadb(body, len, 0, NULL);
        if (!json_is_object(j)) {
            free(body);
            json_decref(j);
            rg_http_error(r, 400, "invalid_request_error", "invalid_json",
                          "the body is a JSON object: {\"tool_call_id\": …, "
                          "\"reason\": …}, or empty");
            return;
        }
    }

    free(body);

    call = json_object_get(j, "tool_call_id");
    reason = json_object_get(j, "reason");

    if ((call && !json_is_string(call)) || (reason && !json_is_string(reason)))
    {
        json_decref(j);
        rg_http_error(r, 400, "invalid_request_error", "invalid_decision",
                      "\"tool_call_id\" and \"reason\" are strings");
        return;
    }

    d = calloc(1, sizeof(rg_http_decision_t));
    if (d == NULL) {
        json_decref(j);
        rg_http_nomem(r);
        return;
    }

    d->r = r;
    d->approve = approve;

    rg_http_watch(r, rg_http_decision_gone, d);

    rg_approval_decide(ts->queue, id, json_string_value(call), approve,
                       json_string_value(reason), rg_http_decided, d);
    json_decref(j);
}
