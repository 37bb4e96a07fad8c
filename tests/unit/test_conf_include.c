/* test_conf_include.c: `include` of files and masks
 * (src/core/rg_conf_file.c), with files written to rg_test_tmpdir() and
 * read with -c: a relative path is the including file's, errors name the
 * included file and its line, a mask reads its files sorted (none is no
 * error), an error in the second file of a mask stops there, 16 levels
 * are fine and a 17th is not (nor a file including itself); -c or an
 * include of a FIFO, a device or a folder is an error at once, never a
 * wait. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_test.h>
#include <rg_test_conf.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sys/stat.h>


static void
rg_test_include_file(void **state)
{
    char             err[512], *top, *llm, *body, *bad, *close_, *missing;
    char             sub[256];
    const char      *tmp;
    rg_cycle_t      *cycle;
    rg_agent_conf_t *agent;

    tmp = rg_test_tmpdir();

    llm = rg_test_file("inc-llm.conf",
                       "# an included llm\n"
                       "llm a {\n"
                       "    base_url http://h;\n"
                       "    model included;\n"
                       "}\n");

    body = rg_test_file("inc-body.conf", "max_rounds 5;\ntool_timeout 3s;\n");

    /* relative names are relative to the including file */
    top = rg_test_file("inc-top.conf",
                        "include inc-llm.conf;\n"
                        "agent x {\n"
                        "    include inc-body.conf;\n"
                        "    temperature 1;\n"
                        "}\n");

    cycle = rg_test_file_cycle(top, err, sizeof(err));
    if (cycle == NULL) {
        print_error("%s\n", err);
        fail();
    }

    assert_string_equal(cycle->conf_file, top);
    rg_test_str(&rg_test_llm(cycle, 0)->model, "included");
    assert_int_equal(rg_test_llm(cycle, 0)->line, 2);
    assert_string_equal(rg_test_llm(cycle, 0)->file, llm);

    agent = rg_test_agent(cycle, 0);
    assert_int_equal(agent->max_rounds, 5);
    assert_int_equal(agent->toolset.timeout, 3000);
    assert_true(agent->temperature == 1.0);
    assert_string_equal(agent->file, top);
    assert_int_equal(agent->line, 2);
    rg_cycle_destroy(cycle);
    free(top);

    /* an absolute name, and includes nested in included files, relative to
     * the file that names them */
    snprintf(sub, sizeof(sub), "%s/inc-sub", tmp);
    assert_true(mkdir(sub, 0755) == 0 || errno == EEXIST);

    free(rg_test_file("inc-sub/agent.conf",
                      "agent from_sub {\n    include body.conf;\n}\n"));
    free(rg_test_file("inc-sub/body.conf", "max_rounds 7;\n"));

    top = rg_test_file("inc-abs.conf", "include %s;\ninclude inc-sub/"
                        "agent.conf;\n", llm);

    cycle = rg_test_file_cycle(top, err, sizeof(err));
    if (cycle == NULL) {
        print_error("%s\n", err);
        fail();
    }

    agent = rg_test_agent(cycle, 0);
    rg_test_str(&agent->name, "from_sub");
    assert_int_equal(agent->max_rounds, 7);
    rg_cycle_destroy(cycle);
    free(top);

    /* errors in an included file name that file and its line, and the
     * including file's lines are still counted right afterwards */
    bad = rg_test_file("inc-bad.conf", "\nllm b {\n    bogus;\n}\n");
    top = rg_test_file("inc-top-bad.conf", "include inc-bad.conf;\n");
    rg_test_file_error(top, "unknown directive \"bogus\" in %s:3", bad);
    free(top);

    top = rg_test_file("inc-top-after.conf",
                        "include inc-llm.conf;\n"
                        "agent x {\n"
                        "    include inc-body.conf;\n"
                        "}\n"
                        "bogus;\n");
    rg_test_file_error(top, "unknown directive \"bogus\" in %s:5", top);
    free(top);

    /* an included file cannot close the block it is included in, nor
     * leave one open */
    close_ = rg_test_file("inc-close.conf", "max_rounds 2;\n}\n");
    top = rg_test_file("inc-top-close.conf",
                        "include inc-llm.conf;\n"
                        "agent x {\n"
                        "    include inc-close.conf;\n");
    rg_test_file_error(top, "unexpected \"}\" in %s:2", close_);
    free(top);
    free(close_);

    close_ = rg_test_file("inc-open.conf", "agent y {\n    max_rounds 2;\n");
    top = rg_test_file("inc-top-open.conf",
                        "include inc-llm.conf;\n"
                        "include inc-open.conf;\n"
                        "}\n");
    rg_test_file_error(top, "unexpected end of file, expecting \"}\" "
                       "in %s:3", close_);
    free(top);
    free(close_);

    /* a file that is not there, or is a folder */
    top = rg_test_file("inc-top-missing.conf",
                        "\ninclude inc-missing.conf;\n");
    missing = NULL;
    assert_true(asprintf(&missing, "%s/inc-missing.conf", tmp) > 0);
    rg_test_file_error(top, "open() \"%s\" failed (2: No such file or "
                       "directory) in %s:2", missing, top);
    free(missing);
    free(top);

    top = rg_test_file("inc-top-dir.conf", "include inc-sub;\n");
    rg_test_file_error(top, "\"%s\" is not a regular file of at most 16m "
                       "in %s:1", sub, top);
    free(top);

    /* the top file itself: no "in FILE:LINE" yet */
    rg_test_file_error("/nonexistent-rg-test/reagent.conf",
                       "open() \"/nonexistent-rg-test/reagent.conf\" failed "
                       "(2: No such file or directory)");

    free(llm);
    free(body);
    free(bad);
}


/* -c on a FIFO, a device or a folder is an error at once, never a wait
 * for a writer; an include of one as well. An alarm turns a hang into a
 * failure. */
static void
rg_test_not_regular(void **state)
{
    char  fifo[256], *top;

    snprintf(fifo, sizeof(fifo), "%s/conf.fifo", rg_test_tmpdir());
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);

    alarm(20);

    rg_test_file_error(fifo, "\"%s\" is not a regular file of at most 16m",
                       fifo);
    rg_test_file_error("/dev/null", "\"/dev/null\" is not a regular file of "
                       "at most 16m");
    rg_test_file_error(rg_test_tmpdir(), "\"%s\" is not a regular file of "
                       "at most 16m", rg_test_tmpdir());

    top = rg_test_file("inc-fifo.conf", "\n\ninclude conf.fifo;\n");
    rg_test_file_error(top, "\"%s\" is not a regular file of at most 16m "
                       "in %s:3", fifo, top);
    free(top);

    alarm(0);
    unlink(fifo);
}


static void
rg_test_include_mask(void **state)
{
    char         err[512], dir[256], *top, *a, *b, *junk;
    rg_cycle_t  *cycle;

    snprintf(dir, sizeof(dir), "%s/inc-mask.d", rg_test_tmpdir());
    assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);

    /* written b first: the mask reads them sorted */
    b = rg_test_file("inc-mask.d/b.conf", "agent b { }\n");
    a = rg_test_file("inc-mask.d/a.conf", "agent a { max_rounds 2; }\n");
    junk = rg_test_file("inc-mask.d/notes.txt", "this is not { a conf\n");

    top = rg_test_file("inc-mask.conf",
                        "llm l { base_url http://h; model m; }\n"
                        "include inc-mask.d/*.conf;\n"
                        "include inc-mask.d/nothing-*.conf;\n"
                        "include inc-none.d/*;\n"
                        "agent c { }\n");

    cycle = rg_test_file_cycle(top, err, sizeof(err));
    if (cycle == NULL) {
        print_error("%s\n", err);
        fail();
    }

    assert_int_equal(rg_agent_main_conf(cycle)->agents.nelts, 3);
    rg_test_str(&rg_test_agent(cycle, 0)->name, "a");
    rg_test_str(&rg_test_agent(cycle, 1)->name, "b");
    rg_test_str(&rg_test_agent(cycle, 2)->name, "c");
    assert_int_equal(rg_test_agent(cycle, 0)->max_rounds, 2);
    assert_string_equal(rg_test_agent(cycle, 0)->file, a);
    rg_test_str(&rg_agent_main_conf(cycle)->default_agent, "a");
    rg_cycle_destroy(cycle);
    free(top);

    /* an empty mask alone is an empty configuration */
    top = rg_test_file("inc-mask-empty.conf",
                        "include inc-mask.d/?-none.conf;\n");
    rg_test_file_error(top, "no \"agent\" block: at least one agent is "
                       "needed in %s", top);
    free(top);

    /* an error in the second file of a mask stops there */
    free(rg_test_file("inc-mask.d/c.conf", "agent c {\n    oops;\n}\n"));
    top = rg_test_file("inc-mask-bad.conf",
                        "llm l { base_url http://h; model m; }\n"
                        "include inc-mask.d/[bc].conf;\n");
    rg_test_file_error(top, "unknown directive \"oops\" in %s/c.conf:2",
                       dir);
    free(top);

    free(a);
    free(b);
    free(junk);
}


/* 16 levels of include are fine, a 17th is not (and a file including
 * itself ends there too) */
static void
rg_test_include_depth(void **state)
{
    int          i;
    char         err[512], name[64], *path, *first, *last;
    rg_cycle_t  *cycle;

    first = NULL;
    last = NULL;

    for (i = 0; i <= 16; i++) {
        snprintf(name, sizeof(name), "inc-depth-%d.conf", i);

        if (i < 16) {
            path = rg_test_file(name, "include inc-depth-%d.conf;\n", i + 1);

        } else {
            path = rg_test_file(name, "llm a { base_url http://h; model m; }"
                                "\nagent deep { }\n");
        }

        if (i == 0) {
            first = path;
        } else if (i == 16) {
            last = path;
        } else {
            free(path);
        }
    }

    cycle = rg_test_file_cycle(first, err, sizeof(err));
    if (cycle == NULL) {
        print_error("%s\n", err);
        fail();
    }

    rg_test_str(&rg_test_agent(cycle, 0)->name, "deep");
    rg_cycle_destroy(cycle);

    free(rg_test_file("inc-depth-16.conf", "include inc-depth-17.conf;\n"));
    free(rg_test_file("inc-depth-17.conf", "agent x { }\n"));
    rg_test_file_error(first, "includes nested deeper than 16 in %s:1", last);

    free(first);
    free(last);

    path = rg_test_file("inc-loop.conf", "# me again\ninclude inc-loop.conf;"
                        "\n");
    rg_test_file_error(path, "includes nested deeper than 16 in %s:2", path);
    free(path);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_include_file),
        cmocka_unit_test(rg_test_not_regular),
        cmocka_unit_test(rg_test_include_mask),
        cmocka_unit_test(rg_test_include_depth),
    };

    return cmocka_run_group_tests(tests, NULL, rg_test_tmpdir_cleanup);
}
