/* test_module_loader.c: tests of the tool module loader
 * (src/tools/rg_module.c) through configurations: `load_module PATH
 * [isolated];` finds, dlopen()s and checks a module and registers its
 * tools; `module NAME { … }` hands directives to the module's own table.
 *
 * Uses the test plugins built to BUILD/tests/plugins (good, nosym, badabi,
 * badsig, fail) and the bundled BUILD/modules/example.so, where BUILD is
 * RG_BUILD_DIR (objs by default; run from the repository root). Every error
 * is compared whole, " in test.conf:LINE" included. Where the build keeps
 * dlclose() (not under sanitizers), a module must be unloaded again after
 * its cycle is destroyed or after it was refused. A relative path is the
 * configuration file's, never the library search path's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_core_conf.h>
#include <rg_tools_conf.h>
#include <rg_cycle.h>
#include <rg_module.h>
#include <rg_test.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <ftw.h>
#include <jansson.h>
#include <libgen.h>


#define RG_TEST_LLM    "llm a { base_url http://127.0.0.1:1/v1; model m; }\n"
#define RG_TEST_AGENT  "agent x { }\n"


/* the conf of tests/plugins/good.c, as that file declares it */
typedef struct {
    char                     *prefix;
} rg_test_good_conf_t;


static char  rg_test_good[PATH_MAX];
static char  rg_test_nosym[PATH_MAX];
static char  rg_test_badabi[PATH_MAX];
static char  rg_test_badsig[PATH_MAX];
static char  rg_test_fail[PATH_MAX];
static char  rg_test_example[PATH_MAX];


static int
rg_test_setup(void **state)
{
    const char  *b;

    b = rg_test_build_dir();

    snprintf(rg_test_good, PATH_MAX, "%s/tests/plugins/good.so", b);
    snprintf(rg_test_nosym, PATH_MAX, "%s/tests/plugins/nosym.so", b);
    snprintf(rg_test_badabi, PATH_MAX, "%s/tests/plugins/badabi.so", b);
    snprintf(rg_test_badsig, PATH_MAX, "%s/tests/plugins/badsig.so", b);
    snprintf(rg_test_fail, PATH_MAX, "%s/tests/plugins/fail.so", b);
    snprintf(rg_test_example, PATH_MAX, "%s/modules/example.so", b);

    if (access(rg_test_good, R_OK) != 0 || access(rg_test_example, R_OK) != 0)
    {
        print_error("%s or %s is missing: run `make tests` from the "
                    "repository root first\n", rg_test_good, rg_test_example);
        return -1;
    }

    return 0;
}


static int
rg_test_rm(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    return remove(path);
}


static int
rg_test_teardown(void **state)
{
    nftw(rg_test_tmpdir(), rg_test_rm, 16, FTW_DEPTH | FTW_PHYS);

    return 0;
}


/* the module at path is mapped in this process */
static void
rg_test_loaded(const char *path)
{
    void  *h;

    h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    assert_non_null(h);
    dlclose(h);
}


/* the module at path is not mapped in this process */
static void
rg_test_unloaded(const char *path)
{
#ifndef RG_SANITIZERS
    void  *h;

    h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);

    if (h != NULL) {
        dlclose(h);
        print_error("\"%s\" is still loaded\n", path);
        fail();
    }
#else
    (void) path;
#endif
}


static rg_cycle_t *
rg_test_ok(const char *fmt, ...)
{
    char         err[512], *text;
    va_list      args;
    rg_cycle_t  *cycle;

    va_start(args, fmt);
    assert_true(vasprintf(&text, fmt, args) >= 0);
    va_end(args);

    cycle = rg_test_cycle(err, sizeof(err), "%s", text);

    if (cycle == NULL) {
        print_error("configuration\n%s\nfailed: %s\n", text, err);
        free(text);
        fail();
    }

    free(text);

    return cycle;
}


/* the configuration fmt fails with exactly the error expect */
#define rg_test_error(expect, ...)                                           \
    rg_test_error_at(__FILE__, __LINE__, expect, __VA_ARGS__)

static void
rg_test_error_at(const char *file, int line, const char *expect,
    const char *fmt, ...)
{
    char         err[512], *text;
    va_list      args;
    rg_cycle_t  *cycle;

    va_start(args, fmt);
    assert_true(vasprintf(&text, fmt, args) >= 0);
    va_end(args);

    cycle = rg_test_cycle(err, sizeof(err), "%s", text);

    if (cycle != NULL || strcmp(err, expect) != 0) {
        print_error("configuration\n%s\nexpected error: %s\ngot: %s\n", text,
                    expect, cycle ? "(accepted)" : err);
        rg_cycle_destroy(cycle);
        free(text);
        _fail(file, line);
    }

    free(text);
}


static rg_module_t *
rg_test_module(rg_cycle_t *cycle, rg_uint_t i)
{
    assert_true(i < rg_tools_conf(cycle)->modules.nelts);

    return ((rg_module_t **) rg_tools_conf(cycle)->modules.elts)[i];
}


static void
rg_test_load_good(void **state)
{
    json_t           *def, *fn, *params;
    rg_cycle_t       *cycle;
    rg_module_t      *m;
    rg_tool_entry_t  *te;
    rg_agent_conf_t  *agent;

    cycle = rg_test_ok("load_module %s;\n" RG_TEST_LLM
                       "agent x {\n    tools echo;\n}\n", rg_test_good);

    assert_int_equal(rg_tools_conf(cycle)->modules.nelts, 1);
    m = rg_test_module(cycle, 0);

    assert_string_equal(m->path, rg_test_good);
    assert_non_null(m->handle);
    assert_non_null(m->mod);
    assert_string_equal(m->mod->name, "good");
    assert_int_equal(m->mod->abi_version, RG_TOOL_ABI_VERSION);
    assert_int_equal(m->mod->size, sizeof(rg_tool_module_t));
    assert_string_equal(m->mod->signature, RG_TOOL_SIGNATURE);
    assert_ptr_equal(m->mod, dlsym(m->handle, "rg_tool_module"));
    assert_non_null(m->conf);               /* its create_conf() ran */
    assert_null(((rg_test_good_conf_t *) m->conf)->prefix);
    assert_int_equal(m->isolated, 0);
    assert_int_equal(m->initialized, 1);

    /* the host table it is handed */
    assert_int_equal(m->host.abi_version, RG_TOOL_ABI_VERSION);
    assert_int_equal(m->host.size, sizeof(rg_tool_host_t));
    assert_non_null(m->host.log);
    assert_non_null(m->host.done);
    assert_non_null(m->host.fail);
    assert_non_null(m->host.arg_string);
    assert_non_null(m->host.timer_add);

    /* its one tool, echo, is registered */
    assert_int_equal(rg_tools_conf(cycle)->tools.nelts, 1);
    te = rg_module_find_tool(cycle, "echo", 4);
    assert_non_null(te);
    assert_ptr_equal(te, rg_tools_conf(cycle)->tools.elts);
    assert_ptr_equal(te->module, m);
    assert_ptr_equal(te->tool, &m->mod->tools[0]);
    assert_string_equal(te->tool->name, "echo");
    assert_int_equal(te->tool->flags, RG_TOOL_READ_ONLY);
    assert_null(rg_module_find_tool(cycle, "ech", 3));
    assert_null(rg_module_find_tool(cycle, "echo2", 5));
    assert_string_equal(rg_module_tool_list(cycle), "echo");

    /* its definition for the model, as the API wants it: the agent's */
    agent = ((rg_agent_conf_t **) rg_agent_main_conf(cycle)->agents.elts)[0];
    assert_int_equal(agent->tool_texts[RG_LLM_CHAT][0].len,
                     strlen(agent->tool_texts[RG_LLM_CHAT][0].data));
    def = json_loads(agent->tool_texts[RG_LLM_CHAT][0].data, 0, NULL);
    assert_non_null(def);
    assert_string_equal(json_string_value(json_object_get(def, "type")),
                        "function");
    fn = json_object_get(def, "function");
    assert_string_equal(json_string_value(json_object_get(fn, "name")),
                        "echo");
    assert_string_equal(json_string_value(json_object_get(fn, "description")),
                        "Return the arguments unchanged, as JSON.");
    params = json_object_get(fn, "parameters");
    assert_string_equal(json_string_value(json_object_get(params, "type")),
                        "object");
    assert_true(json_is_object(json_object_get(
                    json_object_get(params, "properties"), "text")));
    json_decref(def);

    /* the agent that lists it */
    assert_int_equal(agent->toolset.ntools, 1);
    assert_ptr_equal(agent->toolset.tools[0], te);
    assert_string_equal(agent->toolset.tool_list, "echo");
    assert_non_null(strstr(agent->prefix, agent->tool_texts[RG_LLM_CHAT][0].data));

    rg_test_loaded(rg_test_good);
    rg_cycle_destroy(cycle);
    rg_test_unloaded(rg_test_good);

    /* `isolated` is accepted and remembered */
    cycle = rg_test_ok("load_module %s isolated;\n" RG_TEST_LLM RG_TEST_AGENT,
                       rg_test_good);
    assert_int_equal(rg_test_module(cycle, 0)->isolated, 1);
    rg_cycle_destroy(cycle);

    /* several modules: the tools in load order */
    cycle = rg_test_ok("load_module %s;\nload_module %s;\n" RG_TEST_LLM
                       RG_TEST_AGENT, rg_test_fail, rg_test_good);
    assert_int_equal(rg_tools_conf(cycle)->modules.nelts, 2);
    assert_string_equal(rg_module_tool_list(cycle),
                        "always_fail, error_noanswer, echo");
    assert_ptr_equal(rg_module_find_tool(cycle, "echo", 4)->module,
                     rg_test_module(cycle, 1));
    rg_cycle_destroy(cycle);

    /* a tool the agent names that no module brings */
    rg_test_error("agent \"x\" names an unknown tool \"nope\" (loaded tools: "
                  "echo) in test.conf:4",
                  "load_module %s;\n" RG_TEST_LLM
                  "agent x {\n    tools echo nope;\n}\n", rg_test_good);

    /* a cycle that fails after the load unloads the module (and frees its
     * conf through exit(): the sanitizer build checks that) */
    rg_test_unloaded(rg_test_good);
}


static void
rg_test_module_block(void **state)
{
    rg_cycle_t           *cycle;
    rg_test_good_conf_t  *gcf;

    cycle = rg_test_ok("load_module %s;\n"
                       "module good {\n"
                       "    prefix \">\";\n"
                       "}\n"
                       "concurrency 3;\n" RG_TEST_LLM RG_TEST_AGENT,
                       rg_test_good);

    gcf = rg_test_module(cycle, 0)->conf;
    assert_non_null(gcf);
    assert_string_equal(gcf->prefix, ">");

    /* the main context is back after the block */
    assert_int_equal(rg_core_conf(cycle)->concurrency, 3);
    rg_cycle_destroy(cycle);

    /* quoting and an empty block */
    cycle = rg_test_ok("load_module %s;\nmodule good { prefix 'a \"b\" c'; }\n"
                       "module good { }\n" RG_TEST_LLM RG_TEST_AGENT,
                       rg_test_good);
    gcf = rg_test_module(cycle, 0)->conf;
    assert_string_equal(gcf->prefix, "a \"b\" c");
    rg_cycle_destroy(cycle);

    /* example.so: its directive, checked again by its init() */
    cycle = rg_test_ok("load_module %s;\nmodule example {\n"
                       "    greeting \"Good morning\";\n}\n"
                       RG_TEST_LLM RG_TEST_AGENT, rg_test_example);
    assert_string_equal((char *) rg_test_module(cycle, 0)->conf,
                        "Good morning");
    assert_int_equal(rg_test_module(cycle, 0)->initialized, 1);
    rg_cycle_destroy(cycle);

    cycle = rg_test_ok("load_module %s;\n" RG_TEST_LLM RG_TEST_AGENT,
                       rg_test_example);
    assert_string_equal((char *) rg_test_module(cycle, 0)->conf, "Hello");
    rg_cycle_destroy(cycle);
}


static void
rg_test_module_block_errors(void **state)
{
    char  expect[PATH_MAX + 512];

    rg_test_error("unknown directive \"suffix\" in module \"good\" "
                  "in test.conf:3",
                  "load_module %s;\nmodule good {\n    suffix x;\n}\n"
                  RG_TEST_LLM RG_TEST_AGENT, rg_test_good);

    rg_test_error("unknown directive \"concurrency\" in module \"good\" "
                  "in test.conf:2",
                  "load_module %s;\nmodule good { concurrency 2; }\n"
                  RG_TEST_LLM RG_TEST_AGENT, rg_test_good);

    rg_test_error("unknown directive \"x\" in module \"fail\" "
                  "in test.conf:3",
                  "load_module %s;\nmodule fail {\n    x 1;\n}\n"
                  RG_TEST_LLM RG_TEST_AGENT, rg_test_fail);

    rg_test_error("invalid number of arguments in \"prefix\" directive "
                  "in test.conf:3",
                  "load_module %s;\nmodule good {\n    prefix;\n}\n"
                  RG_TEST_LLM RG_TEST_AGENT, rg_test_good);

    rg_test_error("invalid number of arguments in \"prefix\" directive "
                  "in test.conf:3",
                  "load_module %s;\nmodule good {\n    prefix a b;\n}\n"
                  RG_TEST_LLM RG_TEST_AGENT, rg_test_good);

    /* a phrase from the module's setter becomes a whole error */
    rg_test_error("\"prefix\" directive is duplicate in test.conf:4",
                  "load_module %s;\nmodule good {\n    prefix a;\n"
                  "    prefix b;\n}\n" RG_TEST_LLM RG_TEST_AGENT,
                  rg_test_good);

    rg_test_error("\"prefix\" directive is duplicate in test.conf:3",
                  "load_module %s;\nmodule good { prefix a; }\n"
                  "module good { prefix b; }\n" RG_TEST_LLM RG_TEST_AGENT,
                  rg_test_good);

    rg_test_error("\"greeting\" directive must not be empty in test.conf:2",
                  "load_module %s;\nmodule example { greeting ''; }\n"
                  RG_TEST_LLM RG_TEST_AGENT, rg_test_example);

    /* the block itself */
    rg_test_error("directive \"module\" has no opening \"{\" in test.conf:2",
                  "load_module %s;\nmodule good;\n" RG_TEST_LLM RG_TEST_AGENT,
                  rg_test_good);

    rg_test_error("invalid number of arguments in \"module\" directive "
                  "in test.conf:2",
                  "load_module %s;\nmodule {\n}\n" RG_TEST_LLM RG_TEST_AGENT,
                  rg_test_good);

    rg_test_error("unexpected end of file, expecting \"}\" in test.conf:3",
                  "load_module %s;\nmodule good {\n    prefix x;",
                  rg_test_good);

    /* before its load_module, or with none */
    rg_test_error("\"module\" directive names a module that is not loaded: "
                  "put its \"load_module\" first in test.conf:1",
                  "module good {\n    prefix x;\n}\nload_module %s;\n"
                  RG_TEST_LLM RG_TEST_AGENT, rg_test_good);

    rg_test_error("\"module\" directive names a module that is not loaded: "
                  "put its \"load_module\" first in test.conf:2",
                  "load_module %s;\nmodule goo { }\n" RG_TEST_LLM
                  RG_TEST_AGENT, rg_test_good);

    /* a module whose init() refuses its configuration */
    snprintf(expect, sizeof(expect), "module \"example\" failed to "
             "initialize (%s): see the lines above, in test.conf:1",
             rg_test_example);
    rg_test_error(expect, "load_module %s;\nmodule example { greeting "
                  "\"a\\tb\"; }\n" RG_TEST_LLM RG_TEST_AGENT,
                  rg_test_example);

    rg_test_unloaded(rg_test_good);
    rg_test_unloaded(rg_test_example);
}


/* A module directive is a directive like any other: it ends with ";".
 * One ended by "{" must be refused, not leave the block open so that a
 * later "}" closes the module block and one "}" is missing unnoticed. */
static void
rg_test_module_directive_terminated(void **state)
{
    rg_test_error("directive \"prefix\" is not terminated by \";\" "
                  "in test.conf:3",
                  "load_module %s;\n"
                  "module good {\n"
                  "    prefix \">\" {\n"
                  "}\n" RG_TEST_LLM RG_TEST_AGENT, rg_test_good);
}


static void
rg_test_load_errors(void **state)
{
    char         exe[PATH_MAX], expect[3 * PATH_MAX + 512], *dir, *fake;
    ssize_t      n;

    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    dir = dirname(exe);

    /* not there: relative names are tried in the configuration's folder
     * (test.conf is in the current one), then next to the binary and in
     * the module folder, by their base name */
    snprintf(expect, sizeof(expect), "module \"rg-test-missing.so\" not found "
             "(looked at \"./rg-test-missing.so\", \"%s/modules/"
             "rg-test-missing.so\", \"" RG_MODULES_PATH "/rg-test-missing.so"
             "\") in test.conf:1", dir);
    rg_test_error(expect, "load_module rg-test-missing.so;\n" RG_TEST_LLM
                  RG_TEST_AGENT);

    snprintf(expect, sizeof(expect), "module \"nowhere/rg-test-missing.so\" "
             "not found (looked at \"nowhere/rg-test-missing.so\", \"%s/"
             "modules/rg-test-missing.so\", \"" RG_MODULES_PATH
             "/rg-test-missing.so\") in test.conf:3", dir);
    rg_test_error(expect, RG_TEST_LLM RG_TEST_AGENT
                  "load_module nowhere/rg-test-missing.so;\n");

    /* an absolute name is only tried as given */
    rg_test_error("dlopen() \"/nonexistent-rg-test/x.so\" failed: "
                  "/nonexistent-rg-test/x.so: cannot open shared object "
                  "file: No such file or directory in test.conf:1",
                  "load_module /nonexistent-rg-test/x.so;\n");

    /* not a shared object */
    fake = rg_test_write_file("fake.so",
                              "This is a text file named fake.so. It is long "
                              "enough to be read as an ELF header, and it is "
                              "not one.\n");
    assert_non_null(fake);
    snprintf(expect, sizeof(expect), "dlopen() \"%s\" failed: %s: invalid "
             "ELF header in test.conf:2", fake, fake);
    rg_test_error(expect, "\nload_module %s;\n", fake);
    free(fake);

    /* a shared object that is not a module */
    snprintf(expect, sizeof(expect), "module \"%s\" exports no "
             "\"rg_tool_module\" symbol: is it a reagent tool module? "
             "in test.conf:1", rg_test_nosym);
    rg_test_error(expect, "load_module %s;\n", rg_test_nosym);
    rg_test_unloaded(rg_test_nosym);

    /* a module for another ABI or another platform */
    snprintf(expect, sizeof(expect), "module \"%s\" was built for tool ABI "
             "version %d, this reagent speaks version %d: rebuild it "
             "in test.conf:1", rg_test_badabi, RG_TOOL_ABI_VERSION + 1,
             RG_TOOL_ABI_VERSION);
    rg_test_error(expect, "load_module %s;\n", rg_test_badabi);
    assert_int_equal(RG_TOOL_ABI_VERSION + 1, 2);
    rg_test_unloaded(rg_test_badabi);

    snprintf(expect, sizeof(expect), "module \"%s\" is not binary compatible "
             "(signature \"rg1:p4:l4\", expected \"" RG_TOOL_SIGNATURE "\"): "
             "rebuild it in test.conf:1", rg_test_badsig);
    rg_test_error(expect, "load_module %s;\n", rg_test_badsig);
    rg_test_unloaded(rg_test_badsig);

    /* the arguments */
    rg_test_error("\"load_module\" directive expects \"isolated\" as its "
                  "second argument in test.conf:1",
                  "load_module %s bogus;\n", rg_test_good);
    rg_test_error("\"load_module\" directive expects \"isolated\" as its "
                  "second argument in test.conf:1",
                  "load_module x.so bogus;\n");
    rg_test_error("invalid number of arguments in \"load_module\" directive "
                  "in test.conf:1", "load_module;\n");
    rg_test_error("invalid number of arguments in \"load_module\" directive "
                  "in test.conf:1", "load_module %s isolated x;\n",
                  rg_test_good);
    rg_test_error("directive \"load_module\" is not terminated by \";\" "
                  "in test.conf:1", "load_module %s {\n}\n", rg_test_good);

    rg_test_unloaded(rg_test_good);
}


/* a module is known by its name: the same one twice, by the same path or
 * by another, is refused */
static void
rg_test_load_twice(void **state)
{
    int          in, out;
    char         buf[65536], path[PATH_MAX];
    ssize_t      n;

    rg_test_error("module \"good\" is already loaded in test.conf:2",
                  "load_module %s;\nload_module %s;\n" RG_TEST_LLM
                  RG_TEST_AGENT, rg_test_good, rg_test_good);

    snprintf(path, sizeof(path), "%s/good-copy.so", rg_test_tmpdir());

    in = open(rg_test_good, O_RDONLY);
    assert_true(in >= 0);
    out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    assert_true(out >= 0);

    while ((n = read(in, buf, sizeof(buf))) > 0) {
        assert_int_equal(write(out, buf, n), n);
    }

    assert_int_equal(n, 0);
    close(in);
    close(out);

    rg_test_error("module \"good\" is already loaded in test.conf:4",
                  "load_module %s;\n" RG_TEST_LLM RG_TEST_AGENT
                  "load_module %s;\n", rg_test_good, path);

    rg_test_unloaded(rg_test_good);
    rg_test_unloaded(path);
    unlink(path);
}


/* A relative load_module path is the configuration file's: a bare name
 * next to the file, a path below its folder; in the current folder, the
 * file itself and never a library of the same name found through the
 * library search path (dlopen() is only ever handed a slash). */
static void
rg_test_load_relative(void **state)
{
    int           fd;
    char          dir[PATH_MAX], cwd[PATH_MAX], real[PATH_MAX];
    char          path[PATH_MAX + 64], conf[PATH_MAX + 64], err[512];
    FILE         *f;
    rg_log_t      log;
    rg_cycle_t   *cycle;
    rg_module_t  *m;

    (void) state;

    assert_non_null(realpath(rg_test_good, real));
    assert_non_null(getcwd(cwd, sizeof(cwd)));

    snprintf(dir, sizeof(dir), "%s/rel-XXXXXX", rg_test_tmpdir());
    assert_non_null(mkdtemp(dir));

    snprintf(path, sizeof(path), "%s/sub", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/rg-bare.so", dir);
    assert_int_equal(symlink(real, path), 0);
    snprintf(path, sizeof(path), "%s/sub/rg-below.so", dir);
    assert_int_equal(symlink(real, path), 0);

    log = *rg_log_stderr();
    log.log_level = getenv("RG_TEST_LOG") ? RG_LOG_DEBUG : RG_LOG_CRIT;

    /* a bare name in a file elsewhere: found next to that file */
    snprintf(conf, sizeof(conf), "%s/reagent.conf", dir);
    f = fopen(conf, "w");
    assert_non_null(f);
    fputs("load_module rg-bare.so;\n" RG_TEST_LLM RG_TEST_AGENT, f);
    assert_int_equal(fclose(f), 0);

    err[0] = '\0';
    cycle = rg_cycle_create(conf, NULL, &log, err, sizeof(err));
    if (cycle == NULL) {
        print_error("%s\n", err);
    }
    assert_non_null(cycle);
    m = rg_test_module(cycle, 0);
    snprintf(path, sizeof(path), "%s/rg-bare.so", dir);
    assert_string_equal(m->path, path);
    assert_string_equal(m->mod->name, "good");
    rg_cycle_destroy(cycle);

    /* a path below the file's folder */
    f = fopen(conf, "w");
    assert_non_null(f);
    fputs("load_module sub/rg-below.so;\n" RG_TEST_LLM RG_TEST_AGENT, f);
    assert_int_equal(fclose(f), 0);

    cycle = rg_cycle_create(conf, NULL, &log, err, sizeof(err));
    if (cycle == NULL) {
        print_error("%s\n", err);
    }
    assert_non_null(cycle);
    snprintf(path, sizeof(path), "%s/sub/rg-below.so", dir);
    assert_string_equal(rg_test_module(cycle, 0)->path, path);
    rg_cycle_destroy(cycle);

    /* in the current folder: "./rg-bare.so", not the library path's */
    assert_int_equal(chdir(dir), 0);
    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module rg-bare.so;\n" RG_TEST_LLM
                          RG_TEST_AGENT);
    assert_int_equal(chdir(cwd), 0);
    if (cycle == NULL) {
        print_error("%s\n", err);
    }
    assert_non_null(cycle);
    assert_string_equal(rg_test_module(cycle, 0)->path, "./rg-bare.so");
    rg_cycle_destroy(cycle);

    /* a library the search path knows is not a module found: libc's own
     * name is tried where the configuration says, and nowhere else */
    fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY);
    if (fd != -1) {
        close(fd);
        assert_null(rg_test_cycle(err, sizeof(err),
                                  "load_module libc.so.6;\n" RG_TEST_LLM
                                  RG_TEST_AGENT));
        assert_non_null(strstr(err, "module \"libc.so.6\" not found "
                                    "(looked at \"./libc.so.6\""));
    }
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_load_good),
        cmocka_unit_test(rg_test_module_block),
        cmocka_unit_test(rg_test_module_block_errors),
        cmocka_unit_test(rg_test_module_directive_terminated),
        cmocka_unit_test(rg_test_load_errors),
        cmocka_unit_test(rg_test_load_twice),
        cmocka_unit_test(rg_test_load_relative),
    };

    return cmocka_run_group_tests_name("module_loader", tests, rg_test_setup,
                                       rg_test_teardown) != 0;
}
