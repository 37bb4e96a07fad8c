/* nul.c: a test plugin whose tool answers with bytes JSON can carry but C
 * strings cannot: module "nul", tool `nul_bytes` answers "a", a NUL byte,
 * then "b" (three bytes), to show that a result is kept whole. */

#include <rg_tool_module.h>


static int rg_nul_bytes(rg_tool_call_t *call);


static const rg_tool_t  rg_nul_tools[] = {
    { "nul_bytes", "Answer with three bytes, the middle one NUL.",
      "{\"type\":\"object\",\"properties\":{}}",
      RG_TOOL_READ_ONLY, 0, rg_nul_bytes, NULL },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


__attribute__((visibility("default")))
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "nul",
    NULL,
    NULL,
    NULL,
    NULL,
    rg_nul_tools
};


static int
rg_nul_bytes(rg_tool_call_t *call)
{
    call->host->done(call, "a\0b", 3);

    return RG_TOOL_OK;
}
