/* test_conf_shipped.c: conf/reagent.conf, the shipped configuration, read
 * as it ships: it builds, its modules are found by their file name, and
 * each commented "#directive value;" line says the default in force
 * (uncommented, it changes nothing). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_module.h>
#include <rg_core_conf.h>
#include <rg_tools_conf.h>
#include <rg_test.h>
#include <rg_test_conf.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <libgen.h>


/* conf/reagent.conf, the shipped configuration, from the repository root.
 *
 * Its load_module paths are relative ("modules/calc.so"), and
 * rg_module.c resolves a relative path against the current folder first,
 * then in modules/ next to the running binary, then in RG_MODULES_PATH; it
 * does not resolve it against the configuration file's folder, as include
 * and error_log do. `reagent` itself finds BUILD/modules/calc.so next to
 * BUILD/reagent, but this test runs as BUILD/tests/test_conf, where no
 * modules/ folder is. So the test reads the file by its absolute path
 * with the build folder (objs or objs-san, from RG_BUILD_DIR) as the
 * current folder, where "modules/calc.so" names the built module. */

static char *
rg_test_read(const char *path)
{
    char     *text;
    long      len;
    FILE     *f;

    f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    len = ftell(f);
    assert_true(len > 0);
    rewind(f);

    text = malloc(len + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, len, f), (size_t) len);
    text[len] = '\0';
    fclose(f);

    return text;
}


/* the commented "#directive value;" lines of the shipped file say the
 * default in force: uncommented, they must change nothing */
static char *
rg_test_uncomment_defaults(const char *text)
{
    char        *out, *p, *q, *eol;
    rg_uint_t    i;

    static const char  *names[] = {
        "error_log ", "concurrency ", "tool_result_limit ",
        "worker_processes ", "default_agent ", "temperature ", "timeout ",
        "connect_timeout ", "idle_timeout ", "max_connections ",
        "max_retries ", "retry_base ", "retry_max ", "buffer_size ",
        "max_rounds ", "tool_timeout ", "max_tool_calls_per_turn ",
        "response_memory ", NULL
    };

    out = strdup(text);
    assert_non_null(out);

    /* "#name " at the start of a line, after blanks */
    for (p = out; *p; p = eol ? eol + 1 : p + strlen(p)) {
        eol = strchr(p, '\n');
        q = p + strspn(p, " ");

        if (*q != '#') {
            continue;
        }

        for (i = 0; names[i]; i++) {
            if (strncmp(q + 1, names[i], strlen(names[i])) == 0) {
                *q = ' ';
                break;
            }
        }
    }

    return out;
}


static void
rg_test_shipped_conf(void **state)
{
    char              cwd[PATH_MAX], path[PATH_MAX + 32], exe[PATH_MAX];
    char              err[512], expect[4 * PATH_MAX + 512], *text, *p;
    char              dir[PATH_MAX], copy[PATH_MAX + 32], mod[PATH_MAX + 64];
    char              target[2 * PATH_MAX + 64];
    char             *defaults;
    FILE             *f;
    ssize_t           n;
    rg_str_t         *names;
    rg_uint_t         i, line;
    rg_cycle_t       *cycle, *dcycle;
    rg_module_t     **mods;
    rg_llm_conf_t    *llm, *dllm;
    rg_agent_conf_t  *agent, *dagent;

    assert_non_null(getcwd(cwd, sizeof(cwd)));
    snprintf(path, sizeof(path), "%s/conf/reagent.conf", cwd);

    text = rg_test_read(path);

    /* the bundled modules are named by their file: looked for next to
     * the configuration (conf/), next to this binary (not reagent's) and
     * in the installed module folder */
    if (access(RG_MODULES_PATH "/calc.so", F_OK) != 0) {
        p = strstr(text, "\nload_module calc.so;");
        assert_non_null(p);

        for (line = 2, i = 0; text + i < p; i++) {
            line += text[i] == '\n';
        }

        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        assert_true(n > 0);
        exe[n] = '\0';

        snprintf(expect, sizeof(expect), "module \"calc.so\" not found "
                 "(looked at \"%s/conf/calc.so\", \"%s/modules/calc.so\", "
                 "\"" RG_MODULES_PATH "/calc.so\") in %s:%lu",
                 cwd, dirname(exe), path, (unsigned long) line);

        cycle = rg_test_file_cycle(path, err, sizeof(err));
        assert_null(cycle);
        assert_string_equal(err, expect);
    }

    /* a copy with the built modules beside it loads them from there */
    snprintf(dir, sizeof(dir), "%s/shipped", rg_test_tmpdir());
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(copy, sizeof(copy), "%s/reagent.conf", dir);

    f = fopen(copy, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);

    for (i = 0; i < 2; i++) {
        snprintf(target, sizeof(target), "%s/%s/modules/%s", cwd,
                 rg_test_build_dir(), i ? "time.so" : "calc.so");
        snprintf(mod, sizeof(mod), "%s/%s", dir, i ? "time.so" : "calc.so");
        assert_int_equal(symlink(target, mod), 0);
    }

    cycle = rg_test_file_cycle(copy, err, sizeof(err));

    defaults = rg_test_uncomment_defaults(text);
    dcycle = rg_cycle_create(copy, defaults, &rg_test_file_log, err,
                             sizeof(err));

    if (cycle == NULL || dcycle == NULL) {
        print_error("%s: %s\n", path, err);
        fail();
    }

    assert_int_equal(rg_tools_conf(cycle)->modules.nelts, 2);
    mods = rg_tools_conf(cycle)->modules.elts;
    snprintf(mod, sizeof(mod), "%s/calc.so", dir);
    assert_string_equal(mods[0]->path, mod);
    assert_string_equal(mods[0]->mod->name, "calc");
    snprintf(mod, sizeof(mod), "%s/time.so", dir);
    assert_string_equal(mods[1]->path, mod);
    assert_string_equal(mods[1]->mod->name, "time");

    assert_int_equal(rg_llm_main_conf(cycle)->llms.nelts, 1);
    llm = rg_test_llm(cycle, 0);
    rg_test_str(&llm->name, "mock");
    rg_test_str(&llm->base_url, "http://127.0.0.1:8088/v1");
    rg_test_str(&llm->model, "mock-1");
    assert_null(llm->api_key_env.data);
    assert_null(llm->auth);
    assert_string_equal(llm->url, "http://127.0.0.1:8088/v1/chat/completions");

    assert_int_equal(rg_agent_main_conf(cycle)->agents.nelts, 1);
    agent = rg_test_agent(cycle, 0);
    rg_test_str(&agent->name, "assistant");
    assert_ptr_equal(agent->llm, llm);
    rg_test_str(&agent->system_prompt, "You are a careful assistant. Use the "
                "tools when they help, then answer briefly.");
    names = agent->tool_names->elts;
    assert_int_equal(agent->tool_names->nelts, 2);
    rg_test_str(&names[0], "calc");
    rg_test_str(&names[1], "time_now");
    assert_string_equal(agent->toolset.tool_list, "calc, time_now");
    rg_test_str(&rg_agent_main_conf(cycle)->default_agent, "assistant");

    /* the commented defaults are the defaults */
    assert_int_equal(rg_core_conf(dcycle)->concurrency,
                     rg_core_conf(cycle)->concurrency);
    assert_int_equal(rg_tools_conf(dcycle)->tool_result_limit,
                     rg_tools_conf(cycle)->tool_result_limit);
    assert_int_equal(rg_core_conf(dcycle)->worker_processes,
                     rg_core_conf(cycle)->worker_processes);
    assert_int_equal(rg_llm_main_conf(dcycle)->response_memory,
                     rg_llm_main_conf(cycle)->response_memory);
    rg_test_str(&rg_agent_main_conf(dcycle)->default_agent, "assistant");
    assert_int_equal(dcycle->new_log.fd, STDERR_FILENO);
    assert_int_equal(dcycle->new_log.log_level, RG_LOG_NOTICE);

    dllm = rg_test_llm(dcycle, 0);
    assert_int_equal(dllm->timeout, llm->timeout);
    assert_int_equal(dllm->connect_timeout, llm->connect_timeout);
    assert_int_equal(dllm->idle_timeout, llm->idle_timeout);
    assert_int_equal(dllm->max_connections, llm->max_connections);
    assert_int_equal(dllm->max_retries, llm->max_retries);
    assert_int_equal(dllm->retry_base, llm->retry_base);
    assert_int_equal(dllm->retry_max, llm->retry_max);
    assert_true(dllm->temperature == llm->temperature);
    assert_int_equal(dllm->buffer_size, llm->buffer_size);

    dagent = rg_test_agent(dcycle, 0);
    assert_int_equal(dagent->max_rounds, agent->max_rounds);
    assert_int_equal(dagent->toolset.timeout, agent->toolset.timeout);
    assert_int_equal(dagent->max_tool_calls, agent->max_tool_calls);
    assert_int_equal(agent->max_tool_calls, 128);
    assert_true(dagent->temperature == agent->temperature);
    assert_string_equal(dagent->prefix, agent->prefix);

    /* and they were read: a default given twice is a duplicate */
    assert_non_null(strstr(defaults, "\n     max_rounds    8;"));
    assert_non_null(strstr(defaults, "\n     buffer_size        4k;"));

    rg_cycle_destroy(cycle);
    rg_cycle_destroy(dcycle);
    free(defaults);
    free(text);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_shipped_conf),
    };

    return cmocka_run_group_tests(tests, NULL, rg_test_tmpdir_cleanup);
}
