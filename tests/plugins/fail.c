/* fail.c: a test plugin whose tools fail: module "fail", tool
 * `always_fail` answers with an error through host->fail(), tool
 * `error_noanswer` returns RG_TOOL_ERROR without answering (the host must
 * produce the tool message itself). */

#include <rg_tool_module.h>


static int rg_fail_always(rg_tool_call_t *call);
static int rg_fail_noanswer(rg_tool_call_t *call);


static const rg_tool_t  rg_fail_tools[] = {
    { "always_fail", "Always fail, as a tool whose backend is down does.",
      "{\"type\":\"object\",\"properties\":{}}",
      RG_TOOL_READ_ONLY, 0, rg_fail_always, NULL },

    { "error_noanswer", "Fail without giving a reason.",
      "{\"type\":\"object\",\"properties\":{}}",
      RG_TOOL_READ_ONLY, 0, rg_fail_noanswer, NULL },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


__attribute__((visibility("default")))
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "fail",
    NULL,
    NULL,
    NULL,
    NULL,
    rg_fail_tools
};


static int
rg_fail_always(rg_tool_call_t *call)
{
    call->host->fail(call, "backend unavailable: %s", "connection refused");

    return RG_TOOL_OK;
}


static int
rg_fail_noanswer(rg_tool_call_t *call)
{
    (void) call;

    return RG_TOOL_ERROR;
}
