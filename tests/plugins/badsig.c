/* badsig.c: a test plugin whose signature says it was built for another
 * platform (4-byte pointers and longs).
 *
 * The right abi_version and size, module "badsig", tool `noop`; the loader
 * must reject it on the signature. */

#include <rg_tool_module.h>


static int rg_badsig_noop(rg_tool_call_t *call);


static const rg_tool_t  rg_badsig_tools[] = {
    { "noop", "Do nothing.", "{\"type\":\"object\",\"properties\":{}}",
      RG_TOOL_READ_ONLY, 0, rg_badsig_noop, NULL },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


__attribute__((visibility("default")))
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_ABI_VERSION,
    sizeof(rg_tool_module_t),
    "rg1:p4:l4",
    "badsig",
    NULL,
    NULL,
    NULL,
    NULL,
    rg_badsig_tools
};


static int
rg_badsig_noop(rg_tool_call_t *call)
{
    call->host->done(call, "ok", 2);

    return RG_TOOL_OK;
}
