/* rg_http_approval.c: POST /v1/tasks/{id}/approve and /deny. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_http.h>


void
rg_http_approval_handler(rg_http_req_t *r, const char *id,
    rg_uint_t approve)
{
    rg_http_error(r, 501, "server_error", "not_implemented",
                  "approvals are not built yet");
}
