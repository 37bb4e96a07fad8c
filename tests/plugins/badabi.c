/* badabi.c: a test plugin built for a newer module ABI than the host's.
 *
 * Otherwise valid (module "badabi", tool `noop`); the loader must reject it
 * on abi_version alone, before it reads any other field. */

#include <rg_tool_module.h>


static int rg_badabi_noop(rg_tool_call_t *call);


static const rg_tool_t  rg_badabi_tools[] = {
    { "noop", "Do nothing.", "{\"type\":\"object\",\"properties\":{}}",
      RG_TOOL_READ_ONLY, 0, rg_badabi_noop, NULL },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


__attribute__((visibility("default")))
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_ABI_VERSION + 1,
    sizeof(rg_tool_module_t),
    RG_TOOL_SIGNATURE,
    "badabi",
    NULL,
    NULL,
    NULL,
    NULL,
    rg_badabi_tools
};


static int
rg_badabi_noop(rg_tool_call_t *call)
{
    call->host->done(call, "ok", 2);

    return RG_TOOL_OK;
}
