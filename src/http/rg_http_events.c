/* rg_http_events.c: GET /v1/tasks/{id}/events, the session's events as
 * Server-Sent Events. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_http.h>


void
rg_http_events_handler(rg_http_req_t *r, const char *id)
{
    rg_http_error(r, 501, "server_error", "not_implemented",
                  "events are not built yet");
}
