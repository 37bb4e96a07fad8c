/* good.c: a valid test plugin for the module loader tests.
 *
 * Module "good": one directive, `prefix TEXT;`, kept in a conf that
 * create_conf allocates and exit frees, and one synchronous tool, `echo`,
 * that answers with its raw arguments (the JSON text as received). */

#include <rg_tool_module.h>

#include <stdlib.h>
#include <string.h>


typedef struct {
    char                     *prefix;
} rg_good_conf_t;


static const char *rg_good_set_prefix(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static void *rg_good_create_conf(rg_tool_host_t *host);
static void rg_good_exit(rg_tool_host_t *host, void *conf);
static int rg_good_echo(rg_tool_call_t *call);


static const rg_tool_directive_t  rg_good_directives[] = {
    { "prefix", 1, 1, rg_good_set_prefix },
    { NULL, 0, 0, NULL }
};


static const rg_tool_t  rg_good_tools[] = {
    { "echo",
      "Return the arguments unchanged, as JSON.",
      "{\"type\":\"object\","
       "\"properties\":{"
        "\"text\":{\"type\":\"string\",\"description\":\"Any text\","
         "\"examples\":[\"hello\"]}}}",
      RG_TOOL_READ_ONLY, 0, rg_good_echo, NULL },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


__attribute__((visibility("default")))
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "good",
    rg_good_directives,
    rg_good_create_conf,
    NULL,
    rg_good_exit,
    rg_good_tools
};


static const char *
rg_good_set_prefix(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    rg_good_conf_t  *gcf;

    (void) host;
    (void) argc;

    gcf = conf;

    if (gcf->prefix != NULL) {
        return "is duplicate";
    }

    gcf->prefix = strdup(argv[0]);
    if (gcf->prefix == NULL) {
        return "cannot be stored: out of memory";
    }

    return NULL;
}


static void *
rg_good_create_conf(rg_tool_host_t *host)
{
    (void) host;

    return calloc(1, sizeof(rg_good_conf_t));
}


static void
rg_good_exit(rg_tool_host_t *host, void *conf)
{
    rg_good_conf_t  *gcf;

    (void) host;

    gcf = conf;

    if (gcf != NULL) {
        free(gcf->prefix);
        free(gcf);
    }
}


static int
rg_good_echo(rg_tool_call_t *call)
{
    call->host->done(call, call->args, call->args_len);

    return RG_TOOL_OK;
}
