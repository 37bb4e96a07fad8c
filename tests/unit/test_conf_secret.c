/* test_conf_secret.c: an API key read from the environment (api_key_env,
 * src/llm/rg_llm_conf.c, src/core/rg_secret.c) is a secret: it reaches
 * the Authorization header and nothing else, not an error of a cycle that
 * fails, not a log line at debug, not the output of `reagent -t` on a good
 * or a bad configuration. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_test.h>
#include <rg_test_conf.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/wait.h>


#define RG_TEST_SECRET      "sk-test-SECRET"
#define RG_TEST_KEY_VAR     "RG_TEST_CONF_KEY"
#define RG_TEST_UNSET_VAR   "RG_TEST_CONF_UNSET"


/* An API key is read from the environment; its value is a secret: it
 * reaches the Authorization header and nothing else, not an error, not a
 * log line, not the output of `reagent -t`. */
static void
rg_test_secret(void **state)
{
    int          fd;
    char         err[512], path[256], cmd[1024], out[65536], *conf;
    size_t       n;
    FILE        *f;
    rg_uint_t    i;
    rg_cycle_t  *cycle;

    static const char  *bad[] = {
        "llm a {\n    base_url http://h;\n    model m;\n"
        "    api_key_env " RG_TEST_KEY_VAR ";\n}\n"
        "agent x { llm b; }\n",

        "llm a {\n    base_url http://h;\n    model m;\n"
        "    api_key_env " RG_TEST_KEY_VAR ";\n}\n"
        "llm b {\n    base_url http://h;\n    model m;\n"
        "    api_key_env " RG_TEST_UNSET_VAR ";\n}\n"
        "agent x { }\n",

        "llm a {\n    base_url http://h;\n    model m;\n"
        "    api_key_env " RG_TEST_KEY_VAR ";\n    buffer_size 1;\n}\n"
        "agent x { }\n",

        "llm a {\n    base_url http://h;\n    model m;\n"
        "    api_key_env " RG_TEST_KEY_VAR ";\n}\n"
        "agent x { tools nope; }\n",

        "llm a {\n    base_url http://h;\n    model m;\n"
        "    api_key_env " RG_TEST_KEY_VAR ";\n}\n"
        "agent x { }\ndefault_agent y;\n",

        "llm a {\n    base_url http://h;\n    model m;\n"
        "    api_key_env " RG_TEST_KEY_VAR ";\n}\n",
    };

    setenv(RG_TEST_KEY_VAR, RG_TEST_SECRET, 1);
    unsetenv(RG_TEST_UNSET_VAR);

    /* every log line of the cycles goes to a file, at debug */
    snprintf(path, sizeof(path), "%s/secret.log", rg_test_tmpdir());
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    close(fd);

    cycle = rg_test_logged_cycle(path,
                                 "llm a {\n    base_url http://h;\n"
                                 "    model m;\n    api_key_env "
                                 RG_TEST_KEY_VAR ";\n}\nagent x { }\n",
                                 err, sizeof(err));
    assert_non_null(cycle);
    assert_string_equal(rg_test_llm(cycle, 0)->auth,
                        "Authorization: Bearer " RG_TEST_SECRET);
    assert_null(strstr(rg_test_agent(cycle, 0)->prefix, "SECRET"));
    rg_log_error(RG_LOG_DEBUG, cycle->log, 0, "the cycle's own log");
    rg_test_logged_destroy(cycle);

    for (i = 0; i < rg_nelems(bad); i++) {
        cycle = rg_test_logged_cycle(path, bad[i], err, sizeof(err));
        assert_null(cycle);
        assert_true(err[0] != '\0');
        if (strstr(err, "SECRET") != NULL) {
            print_error("the key is in the error: %s\n", err);
            fail();
        }
    }

    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    n = (size_t) read(fd, out, sizeof(out) - 1);
    assert_true(n > 0 && n < sizeof(out) - 1);
    out[n] = '\0';
    close(fd);
    unlink(path);

    /* what was logged is the errors, and never the key */
    assert_non_null(strstr(out, "[debug] "));
    assert_non_null(strstr(out, "the cycle's own log\n"));
    assert_non_null(strstr(out, "[emerg]"));
    assert_non_null(strstr(out, "names an unknown llm \"b\""));
    assert_null(strstr(out, "SECRET"));

    /* reagent -t, on a good and on a bad configuration */
    for (i = 0; i < 2; i++) {
        conf = rg_test_file("secret.conf", "%s",
                            i ? bad[0]
                              : "llm a {\n    base_url http://h;\n"
                                "    model m;\n    api_key_env "
                                RG_TEST_KEY_VAR ";\n}\nagent x { }\n");

        snprintf(cmd, sizeof(cmd), "%s/reagent -t -c %s 2>&1",
                 rg_test_build_dir(), conf);

        /* the cycles above took the key out of this environment */
        setenv(RG_TEST_KEY_VAR, RG_TEST_SECRET, 1);

        f = popen(cmd, "r");
        assert_non_null(f);
        n = fread(out, 1, sizeof(out) - 1, f);
        out[n] = '\0';

        assert_int_equal(WEXITSTATUS(pclose(f)), i);
        assert_non_null(strstr(out, i ? "test failed"
                                      : "test is successful"));
        if (strstr(out, "SECRET") != NULL) {
            print_error("the key is in the output of %s:\n%s\n", cmd, out);
            fail();
        }

        unlink(conf);
        free(conf);
    }
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_secret),
    };

    return cmocka_run_group_tests(tests, NULL, rg_test_tmpdir_cleanup);
}
