/* crash.c: a test plugin that misbehaves on purpose, for the isolation
 * tests: module "crash", tool `crash_now` raises SIGSEGV and tool
 * `hang_now` blocks forever. Never load it into a process that matters. */

#include <rg_tool_module.h>

#include <signal.h>
#include <unistd.h>


static int rg_crash_now(rg_tool_call_t *call);
static int rg_crash_hang_now(rg_tool_call_t *call);


static const rg_tool_t  rg_crash_tools[] = {
    { "crash_now", "Crash the process that runs this tool (SIGSEGV).",
      "{\"type\":\"object\",\"properties\":{}}",
      0, 0, rg_crash_now, NULL },

    { "hang_now", "Block the thread that runs this tool forever.",
      "{\"type\":\"object\",\"properties\":{}}",
      0, 0, rg_crash_hang_now, NULL },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


__attribute__((visibility("default")))
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "crash",
    NULL,
    NULL,
    NULL,
    NULL,
    rg_crash_tools
};


static int
rg_crash_now(rg_tool_call_t *call)
{
    raise(SIGSEGV);

    /* only reached when SIGSEGV is ignored, blocked or handled */

    call->host->fail(call, "crash_now: SIGSEGV did not end the process");

    return RG_TOOL_OK;
}


static int
rg_crash_hang_now(rg_tool_call_t *call)
{
    (void) call;

    for ( ;; ) {
        pause();
    }

    return RG_TOOL_ERROR;   /* not reached */
}
