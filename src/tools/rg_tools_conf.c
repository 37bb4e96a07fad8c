/* rg_tools_conf.c: the tools part's configuration: `load_module` and
 * `module NAME { }` (read by rg_module.c), `thread_pool`,
 * `isolated_helpers` and `tool_result_limit`, their defaults, and the
 * modules' init once the whole file is read (not for a client command,
 * which runs no tool). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_tools_conf.h>
#include <rg_tool_module.h>
#include <rg_confine.h>


static char *rg_tools_thread_pool(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static void *rg_tools_create_conf(rg_cycle_t *cycle);
static char *rg_tools_init_conf(rg_cycle_t *cycle, void *conf);
static void rg_tools_version(FILE *f);


static rg_conf_num_bounds_t  rg_tools_helpers_bounds = { 1, 256 };


/* the reference of the directives below (reagent directives) */
static rg_conf_doc_t  rg_tools_docs[] = {

    { "load_module", "load_module FILE [isolated];", "—",
      "loads a tool module: a relative FILE is looked for beside this "
      "file, then in modules/ beside the binary and in the installed "
      "folder; isolated: its calls run in helper processes", NULL },

    { "module", "module NAME { … }", "—",
      "the directives of a loaded module (below, by module)", NULL },

    { "thread_pool", "thread_pool default [threads=N] [max_queue=N];",
      "default threads=4 max_queue=65536",
      "threads for tools flagged blocking; past max_queue calls wait on "
      "the reactor's side, none is dropped", NULL },

    { "isolated_helpers", "isolated_helpers N;", "4",
      "helper processes per module loaded isolated; a crash or a hang "
      "there costs one call an error", NULL },

    { "tool_result_limit", "tool_result_limit SIZE;", "4000",
      "longer tool results are trimmed before the model sees them", NULL },

    /* the bundled modules' (modules/), read by each module */

    { "max_input", "max_input SIZE;", "16k",
      "the longest input run_agent hands another agent", "module agent" },

    { "greeting", "greeting TEXT;", "Hello",
      "what the greet tool says before the name", "module example" },

    { "root", "root DIR;", "—",
      "the working folder and the one tree programs may write to "
      "(required)", "module exec" },

    { "timeout", "timeout TIME;", "10s",
      "then the program and all it started are killed (at most 1h)",
      "module exec" },

    { "max_output", "max_output SIZE;", "16k",
      "of stdout and of stderr each, the rest is cut", "module exec" },

    { "allow", "allow PROGRAM …;", "— (any)",
      "the programs argv[0] may name", "module exec" },

    { "read_only", "read_only DIR …;", "—",
      "folders programs may read and run from, beyond `/usr`, `/lib*`, "
      "`/bin` and `/etc/ld.so.*`", "module exec" },

    { "network", "network on|off;", "on",
      "off: programs run in a network namespace of their own",
      "module exec" },

    { "max_cpu", "max_cpu TIME;", "the timeout",
      "CPU time per process", "module exec" },

    { "max_memory", "max_memory SIZE;", "1g",
      "address space per process", "module exec" },

    { "max_file_size", "max_file_size SIZE;", "64m",
      "the largest file a program may write", "module exec" },

    { "max_processes", "max_processes N;", "256",
      "processes of the user at once (RLIMIT_NPROC)", "module exec" },

    { "root", "root DIR;", "—",
      "the folder the tools read below (required)", "module fs" },

    { "max_read", "max_read SIZE;", "64k",
      "the most bytes read_file returns in one call", "module fs" },

    { "max_results", "max_results N;", "100",
      "the most entries list_dir and grep return in one call",
      "module fs" },

    { "allow_hosts", "allow_hosts HOST …;", "—",
      "the hosts http_get may reach: names or `*.example.org` (required)",
      "module http" },

    { "max_bytes", "max_bytes SIZE;", "1m",
      "longer bodies are cut", "module http" },

    { "timeout", "timeout TIME;", "10s",
      "for one request (at most 10m)", "module http" },

    { "allow_private", "allow_private on|off;", "off",
      "on: loopback, private, link-local and other internal addresses may "
      "be reached", "module http" },

    rg_null_doc
};


static rg_command_t  rg_tools_commands[] = {

    { rg_string("load_module"), RG_MAIN_CONF|RG_CONF_TAKE12,
      rg_module_load_directive, 0, NULL },

    { rg_string("module"), RG_MAIN_CONF|RG_CONF_BLOCK|RG_CONF_TAKE1,
      rg_module_block_directive, 0, NULL },

    { rg_string("thread_pool"), RG_MAIN_CONF|RG_CONF_TAKE123,
      rg_tools_thread_pool, 0, NULL },

    { rg_string("isolated_helpers"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_tools_conf_t, isolated_helpers),
      &rg_tools_helpers_bounds },

    { rg_string("tool_result_limit"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_size_slot, offsetof(rg_tools_conf_t, tool_result_limit),
      NULL },

      rg_null_command_doc(rg_tools_docs)
};


rg_part_t  rg_tools_part = {
    .name = "tools",
    .commands = rg_tools_commands,
    .create_conf = rg_tools_create_conf,
    .init_conf = rg_tools_init_conf,
    .init_worker = rg_tools_init_worker,
    .exit_worker = rg_tools_exit_worker,
    .version = rg_tools_version
};


/* thread_pool default threads=4 max_queue=65536; */
static char *
rg_tools_thread_pool(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_int_t          v;
    rg_str_t         *a;
    rg_uint_t         i;
    rg_tools_conf_t  *tcf;

    tcf = conf;

    if (!rg_str_eq(&cf->args[1], "default")) {
        return "names a pool other than \"default\": tools run in the "
               "pool \"default\"";
    }

    if (tcf->pool_threads != RG_CONF_UNSET) {
        return "is duplicate";
    }

    tcf->pool_threads = 4;
    tcf->pool_max_queue = 65536;

    for (i = 2; i < cf->nargs; i++) {
        a = &cf->args[i];

        if (a->len > 8 && memcmp(a->data, "threads=", 8) == 0) {
            v = rg_atoi(a->data + 8, a->len - 8);
            if (v < 1 || v > 512) {
                return "expects threads=N with N from 1 to 512";
            }
            tcf->pool_threads = v;

        } else if (a->len > 10 && memcmp(a->data, "max_queue=", 10) == 0) {
            v = rg_atoi(a->data + 10, a->len - 10);
            if (v < 1) {
                return "expects max_queue=N with N of 1 or more";
            }
            tcf->pool_max_queue = v;

        } else {
            return "expects threads=N or max_queue=N";
        }
    }

    return RG_CONF_OK;
}


static void *
rg_tools_create_conf(rg_cycle_t *cycle)
{
    rg_tools_conf_t  *tcf;

    tcf = rg_pcalloc(cycle->pool, sizeof(rg_tools_conf_t));
    if (tcf == NULL || rg_module_conf_init(tcf, cycle->pool) != RG_OK) {
        return NULL;
    }

    tcf->pool_threads = RG_CONF_UNSET;
    tcf->pool_max_queue = RG_CONF_UNSET;
    tcf->isolated_helpers = RG_CONF_UNSET;
    tcf->tool_result_limit = RG_CONF_UNSET_SIZE;

    return tcf;
}


static char *
rg_tools_init_conf(rg_cycle_t *cycle, void *conf)
{
    rg_tools_conf_t  *tcf;

    tcf = conf;

    if (tcf->tool_result_limit == RG_CONF_UNSET_SIZE) {
        tcf->tool_result_limit = 4000;
    }

    if (tcf->pool_threads == RG_CONF_UNSET) {
        tcf->pool_threads = 4;
        tcf->pool_max_queue = 65536;
    }

    if (tcf->isolated_helpers == RG_CONF_UNSET) {
        tcf->isolated_helpers = 4;
    }

    /* a client command (reagent queue…) runs no tool: the modules are
     * loaded and their directives read, but none is started */
    if (cycle->client) {
        return RG_CONF_OK;
    }

    return rg_module_init_all(cycle) == RG_OK ? RG_CONF_OK : RG_CONF_ERROR;
}


/* -V: what modules are built against, and what exec can confine with */
static void
rg_tools_version(FILE *f)
{
    fprintf(f, "tool module ABI: %d (%s)\n", RG_TOOL_ABI_VERSION,
            RG_TOOL_SIGNATURE);
    fprintf(f, "exec confinement: %s\n", rg_confine_describe());
}
