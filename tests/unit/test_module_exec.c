/* test_module_exec.c: the bundled module exec (modules/exec/): a program
 * run with argv (no shell) in the root or a folder under it, through the
 * fake host of tests/lib/rg_test_host.c: its ABI fields and directives,
 * exit statuses and what is printed, output caps, the timeout that kills
 * the whole process group (orphans included: this process is their
 * subreaper), the allow-list, cwd and what it refuses, an older host
 * table (before arg_array_*() and parse_size()), and argv read with the
 * host's arg_array_*(). */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rg_tool_module.h>
#include <rg_test_host.h>


static uint64_t
rg_test_msec(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}


/* The group is gone once its processes are reaped: orphans are this
 * process's children (a subreaper), reaped here. 0 within 3 s. */
static int
rg_test_group_gone(pid_t pgid)
{
    int  i, status;

    for (i = 0; i < 300; i++) {
        while (waitpid(-1, &status, WNOHANG) > 0) { /* void */ }

        if (kill(-pgid, 0) == -1 && errno == ESRCH) {
            return 0;
        }

        usleep(10000);
    }

    return -1;
}


/* runs exec with args; returns the pid the command printed first (sh's
 * $$, its process group), checks that the answer starts with head */
static pid_t
rg_test_exec_pgid(const rg_tool_t *tool, void *conf, const char *args,
    const char *head, uint64_t *ms)
{
    pid_t            pgid;
    uint64_t         t0;
    const char      *p;
    rg_test_call_t   tc;

    t0 = rg_test_msec();
    assert_int_equal(rg_test_call_run(&tc, tool, conf, args), RG_TOOL_OK);
    *ms = rg_test_msec() - t0;

    assert_int_equal(tc.answers, 1);
    assert_false(tc.failed);

    if (strncmp(tc.result, head, strlen(head)) != 0) {
        fail_msg("expected \"%s...\", got \"%s\"", head, tc.result);
    }

    p = strstr(tc.result, "--- stdout ---\n");
    assert_non_null(p);
    pgid = (pid_t) strtol(p + 15, NULL, 10);
    assert_true(pgid > 1);

    rg_test_call_free(&tc);

    return pgid;
}


static void
rg_test_exec_module(void **state)
{
    void                    *conf;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_mod_exec.module;

    rg_test_module_valid(m, "exec", 1);

    /* not blocking: the program runs beside the reactor, not in a thread */
    assert_int_equal(rg_test_tool(m, "exec")->flags,
                     RG_TOOL_DANGEROUS | RG_TOOL_SIDE_EFFECT);
    assert_non_null(rg_test_tool(m, "exec")->cancel);

    conf = m->create_conf(&rg_test_host);
    m->exit(&rg_test_host, conf);

    conf = m->create_conf(&rg_test_host);
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_ERROR);
    assert_string_equal(rg_test_log_text, "exec: the \"root\" directive is "
                        "required: add \"root /path/to/workdir;\" to "
                        "\"module exec\"");
    m->exit(&rg_test_host, conf);

    conf = m->create_conf(&rg_test_host);
    assert_null(rg_test_set(m, conf, "root", "/nonexistent/rg", NULL));
    assert_string_equal(rg_test_set(m, conf, "timeout", "0", NULL),
                        "must be a time from 1ms to 1h, such as 500ms or 10s "
                        "(a bare number is seconds)");
    assert_string_equal(rg_test_set(m, conf, "timeout", "10000", NULL),
                        "must be a time from 1ms to 1h, such as 500ms or 10s "
                        "(a bare number is seconds)");
    assert_string_equal(rg_test_set(m, conf, "timeout", "5x", NULL),
                        "must be a time from 1ms to 1h, such as 500ms or 10s "
                        "(a bare number is seconds)");
    assert_string_equal(rg_test_set(m, conf, "timeout", "1d", NULL),
                        "must be a time from 1ms to 1h, such as 500ms or 10s "
                        "(a bare number is seconds)");
    assert_string_equal(rg_test_set(m, conf, "timeout", "1m30x", NULL),
                        "must be a time from 1ms to 1h, such as 500ms or 10s "
                        "(a bare number is seconds)");
    assert_null(rg_test_set(m, conf, "timeout", "1m30s", NULL));
    assert_string_equal(rg_test_set(m, conf, "timeout", "5s", NULL),
                        "is duplicate");
    assert_string_equal(rg_test_set(m, conf, "max_output", "0", NULL),
                        "must be a size from 1 to 16m, such as 16384 or 16k");
    assert_string_equal(rg_test_set(m, conf, "max_output", "1g", NULL),
                        "must be a size from 1 to 16m, such as 16384 or 16k");
    assert_null(rg_test_set(m, conf, "max_output", "16k", NULL));
    assert_string_equal(rg_test_set(m, conf, "allow", "ls", "", NULL),
                        "must name programs, such as \"ls\" or "
                        "\"/usr/bin/git\"");
    assert_null(rg_test_set(m, conf, "allow", "ls", "cat", NULL));
    assert_null(rg_test_set(m, conf, "allow", "grep", NULL));
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_ERROR);
    assert_string_equal(rg_test_log_text, "exec: root \"/nonexistent/rg\": "
                        "No such file or directory");
    m->exit(&rg_test_host, conf);
}


static void
rg_test_exec_run(void **state)
{
    char             *expect;
    void             *conf;
    rg_test_call_t    tc;
    const rg_tool_t  *exec;

    (void) state;

    conf = rg_test_exec_conf(NULL, NULL, NULL, NULL);
    exec = rg_test_tool(rg_test_mod_exec.module, "exec");

    rg_test_ok(exec, conf, "{\"argv\":[\"echo\",\"hello\"]}",
               "exit status 0\n--- stdout ---\nhello\n--- stderr ---");
    rg_test_ok(exec, conf, "{\"argv\":[\"sh\",\"-c\",\"echo out; echo err "
                           ">&2; exit 3\"]}",
               "exit status 3\n--- stdout ---\nout\n--- stderr ---\nerr");
    rg_test_ok(exec, conf, "{\"argv\":[\"printf\",\"a\\nb\"]}",
               "exit status 0\n--- stdout ---\na\nb\n--- stderr ---");
    rg_test_ok(exec, conf, "{\"argv\":[\"sh\",\"-c\",\"kill -KILL $$\"]}",
               "killed by signal 9*");

    /* no shell: the metacharacters are arguments */

    rg_test_ok(exec, conf, "{\"argv\":[\"echo\",\"$HOME\",\"*\",\"|\","
                           "\";\",\"`id`\"]}",
               "exit status 0\n--- stdout ---\n$HOME * | ; `id`\n"
               "--- stderr ---");

    /* stdin is /dev/null: cat ends at once */

    rg_test_ok(exec, conf, "{\"argv\":[\"cat\"]}",
               "exit status 0\n--- stdout ---\n--- stderr ---");

    /* the child's environment is small: no key of the worker's leaks */

    assert_int_equal(setenv("RG_TEST_SECRET_KEY", "sk-do-not-leak", 1), 0);

    assert_int_equal(rg_test_call_run(&tc, exec, conf,
                                      "{\"argv\":[\"sh\",\"-c\",\"echo "
                                      "$HOME; echo ${RG_TEST_SECRET_KEY:-"
                                      "none}\"]}"),
                     RG_TOOL_OK);
    expect = rg_test_strf("exit status 0\n--- stdout ---\n%s\n"
                         "none\n--- stderr ---", rg_test_root);
    assert_string_equal(tc.result, expect);
    free(expect);
    rg_test_call_free(&tc);

    unsetenv("RG_TEST_SECRET_KEY");

    /* programs that do not run */

    rg_test_err(exec, conf, "{\"argv\":[\"rg-no-such-program\"]}",
                "command not found: \"rg-no-such-program\"; check the name, "
                "or give its path (the PATH is *");
    rg_test_err(exec, conf, "{\"argv\":[\"./nope\"]}",
                "command not found: \"./nope\"; check the name or its path");
    rg_test_err(exec, conf, "{\"argv\":[\"./a.txt\"]}",
                "program \"./a.txt\" is not executable");
    rg_test_err(exec, conf, "{\"argv\":[\"\"]}",
                "argv[0] is empty; it names the program, such as \"ls\"");

    /* SIGCHLD ignored by the worker: its supervisor reaps itself, but
     * the status comes from the supervisor, which reaps the program */

    signal(SIGCHLD, SIG_IGN);
    rg_test_ok(exec, conf, "{\"argv\":[\"echo\",\"hello\"]}",
               "exit status 0\n--- stdout ---\nhello\n--- stderr ---");
    signal(SIGCHLD, SIG_DFL);

    rg_test_mod_exec.module->exit(&rg_test_host, conf);
}


static void
rg_test_exec_output(void **state)
{
    void             *conf;
    const rg_tool_t  *exec;

    (void) state;

    conf = rg_test_exec_conf(NULL, "10", NULL, NULL);
    exec = rg_test_tool(rg_test_mod_exec.module, "exec");

    rg_test_ok(exec, conf, "{\"argv\":[\"printf\",\"0123456789abcdef\"]}",
               "exit status 0\n--- stdout ---\n0123456789\n"
               "(truncated: 6 more bytes)\n--- stderr ---");
    rg_test_ok(exec, conf, "{\"argv\":[\"sh\",\"-c\",\"printf "
                           "0123456789ab >&2\"]}",
               "exit status 0\n--- stdout ---\n--- stderr ---\n0123456789\n"
               "(truncated: 2 more bytes)");

    /* a megabyte: read and dropped, so the writer never blocks */

    rg_test_ok(exec, conf, "{\"argv\":[\"sh\",\"-c\",\"yes | head -c "
                           "1000000\"]}",
               "exit status 0\n--- stdout ---\ny\ny\ny\ny\ny\n"
               "(truncated: 999990 more bytes)\n--- stderr ---");

    rg_test_mod_exec.module->exit(&rg_test_host, conf);
}


static void
rg_test_exec_timeout(void **state)
{
    void             *conf;
    pid_t             pgid;
    uint64_t          ms;
    const rg_tool_t  *exec;

    (void) state;

    conf = rg_test_exec_conf("300ms", NULL, NULL, NULL);
    exec = rg_test_tool(rg_test_mod_exec.module, "exec");

    /* a child and a grandchild: SIGTERM to the group ends both */

    pgid = rg_test_exec_pgid(exec, conf, "{\"argv\":[\"sh\",\"-c\",\"echo $$; "
                                         "sleep 30 & sleep 30\"]}",
                             "timed out after 0.3s (it and every process it "
                             "started were killed)\n"
                             "--- stdout ---\n", &ms);
    assert_true(ms >= 300);
    assert_true(ms < 3000);
    assert_int_equal(rg_test_group_gone(pgid), 0);

    /* SIGTERM ignored by all: SIGKILL 500 ms later */

    pgid = rg_test_exec_pgid(exec, conf, "{\"argv\":[\"sh\",\"-c\",\"trap '' "
                                         "TERM; echo $$; sleep 30 & sleep "
                                         "30\"]}",
                             "timed out after 0.3s (it and every process it "
                             "started were killed)\n"
                             "--- stdout ---\n", &ms);
    assert_true(ms >= 800);
    assert_true(ms < 4000);
    assert_int_equal(rg_test_group_gone(pgid), 0);

    /* the command ends but leaves a child holding its stdout: the child
     * is killed, and the answer does not wait for the timeout */

    rg_test_mod_exec.module->exit(&rg_test_host, conf);
    conf = rg_test_exec_conf("20s", NULL, NULL, NULL);

    pgid = rg_test_exec_pgid(exec, conf, "{\"argv\":[\"sh\",\"-c\",\"echo $$; "
                                         "sleep 30 &\"]}",
                             "exit status 0\n--- stdout ---\n", &ms);
    assert_true(ms < 3000);
    assert_int_equal(rg_test_group_gone(pgid), 0);

    rg_test_mod_exec.module->exit(&rg_test_host, conf);
}


static void
rg_test_exec_allow(void **state)
{
    void             *conf;
    const rg_tool_t  *exec;

    (void) state;

    conf = rg_test_exec_conf(NULL, NULL, "echo", "printf");
    exec = rg_test_tool(rg_test_mod_exec.module, "exec");

    rg_test_ok(exec, conf, "{\"argv\":[\"echo\",\"ok\"]}",
               "exit status 0\n--- stdout ---\nok\n--- stderr ---");
    rg_test_err(exec, conf, "{\"argv\":[\"ls\"]}",
                "program \"ls\" is not allowed; the allowed programs are: "
                "echo, printf");
    rg_test_err(exec, conf, "{\"argv\":[\"/bin/echo\",\"x\"]}",
                "program \"/bin/echo\" is not allowed; the allowed programs "
                "are: echo, printf");
    rg_test_err(exec, conf, "{\"argv\":[\"sh\",\"-c\",\"echo\"]}",
                "program \"sh\" is not allowed; the allowed programs are: "
                "echo, printf");

    rg_test_mod_exec.module->exit(&rg_test_host, conf);
}


static void
rg_test_exec_cwd(void **state)
{
    char             *expect;
    void             *conf;
    rg_test_call_t    tc;
    const rg_tool_t  *exec;

    (void) state;

    conf = rg_test_exec_conf(NULL, NULL, NULL, NULL);
    exec = rg_test_tool(rg_test_mod_exec.module, "exec");

    assert_int_equal(rg_test_call_run(&tc, exec, conf,
                                      "{\"argv\":[\"pwd\"]}"),
                     RG_TOOL_OK);
    expect = rg_test_strf("exit status 0\n--- stdout ---\n%s\n"
                         "--- stderr ---", rg_test_root);
    assert_string_equal(tc.result, expect);
    free(expect);
    rg_test_call_free(&tc);

    expect = rg_test_strf("exit status 0\n--- stdout ---\n"
                         "%s/notes\n--- stderr ---", rg_test_root);

    assert_int_equal(rg_test_call_run(&tc, exec, conf,
                                      "{\"argv\":[\"pwd\"],\"cwd\":"
                                      "\"notes\"}"),
                     RG_TOOL_OK);
    assert_string_equal(tc.result, expect);
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, exec, conf,
                                      "{\"cwd\":\"link-dir/\",\"argv\":"
                                      "[\"pwd\"]}"),
                     RG_TOOL_OK);
    assert_string_equal(tc.result, expect);
    rg_test_call_free(&tc);
    free(expect);

    /* a relative program runs from the cwd */

    rg_test_ok(exec, conf, "{\"argv\":[\"cat\",\"c.md\"],\"cwd\":\"notes\"}",
               "exit status 0\n--- stdout ---\nTODO three\n--- stderr ---");

    rg_test_err(exec, conf, "{\"argv\":[\"pwd\"],\"cwd\":\"../\"}",
                "cwd \"../\" contains \"..\"; it stays inside the exec root: "
                "name it from the root, such as \"src\"");
    rg_test_err(exec, conf, "{\"argv\":[\"pwd\"],\"cwd\":\"/tmp\"}",
                "cwd must be relative to the exec root, such as \"src\", not "
                "\"/tmp\"");
    rg_test_err(exec, conf, "{\"argv\":[\"pwd\"],\"cwd\":\"link-outdir\"}",
                "cwd \"link-outdir\" leads outside the exec root through a "
                "symlink; use a directory inside the root");
    rg_test_err(exec, conf, "{\"argv\":[\"pwd\"],\"cwd\":\"sub/up2\"}",
                "cwd \"sub/up2\" leads outside the exec root through a "
                "symlink; use a directory inside the root");
    rg_test_err(exec, conf, "{\"argv\":[\"pwd\"],\"cwd\":\"a.txt\"}",
                "cwd \"a.txt\" is not a directory");
    rg_test_err(exec, conf, "{\"argv\":[\"pwd\"],\"cwd\":\"nope\"}",
                "cwd \"nope\" does not exist; give a directory under the "
                "exec root");
    rg_test_err(exec, conf, "{\"argv\":[\"pwd\"],\"cwd\":\"loop1\"}",
                "cwd \"loop1\" is a symlink loop");
    rg_test_err(exec, conf, "{\"argv\":[\"pwd\"],\"cwd\":\"notes\\u0000\"}",
                "cwd \"notes?\" contains a NUL byte; send a plain relative "
                "path such as \"src\"");
    rg_test_err(exec, conf, "{\"argv\":[\"pwd\"],\"cwd\":5}",
                "argument 'cwd' must be a string, such as \"src\"");

    rg_test_mod_exec.module->exit(&rg_test_host, conf);
}


/* A host table from before arg_array_*(), or from before parse_size()
 * and parse_msec(): exec's init() refuses it (exec reads argv only
 * through the host), and its setters say what is missing. */
static void
rg_test_exec_old_host(void **state)
{
    void                    *conf;
    rg_tool_host_t           old;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_mod_exec.module;

    old = rg_test_host;
    old.size = offsetof(rg_tool_host_t, arg_array_len);

    conf = m->create_conf(&old);
    assert_non_null(conf);
    assert_null(rg_test_set_with(&old, m, conf, "root", rg_test_root, NULL));
    assert_string_equal(rg_test_set_with(&old, m, conf, "timeout", "5s",
                                         NULL),
                        "needs a newer reagent (no parse_msec in the host "
                        "table)");
    assert_string_equal(rg_test_set_with(&old, m, conf, "max_output", "16k",
                                         NULL),
                        "needs a newer reagent (no parse_size in the host "
                        "table)");
    assert_int_equal(m->init(&old, conf), RG_TOOL_ERROR);
    assert_int_equal(rg_test_log_level, RG_TOOL_LOG_ERR);
    assert_string_equal(rg_test_log_text, "exec: this reagent has no "
                        "arg_array_len() and arg_array_string() for modules; "
                        "upgrade reagent");
    m->exit(&old, conf);

    /* the members are there, but empty */

    old = rg_test_host;
    old.arg_array_string = NULL;

    conf = m->create_conf(&old);
    assert_null(rg_test_set_with(&old, m, conf, "root", rg_test_root, NULL));
    assert_int_equal(m->init(&old, conf), RG_TOOL_ERROR);
    assert_string_equal(rg_test_log_text, "exec: this reagent has no "
                        "arg_array_len() and arg_array_string() for modules; "
                        "upgrade reagent");
    m->exit(&old, conf);

    /* arg_array_*(), but no unit parsers */

    old = rg_test_host;
    old.size = offsetof(rg_tool_host_t, parse_size);

    conf = m->create_conf(&old);
    assert_null(rg_test_set_with(&old, m, conf, "root", rg_test_root, NULL));
    assert_int_equal(m->init(&old, conf), RG_TOOL_ERROR);
    assert_string_equal(rg_test_log_text, "exec: this reagent has no "
                        "parse_size() and parse_msec() for modules; upgrade "
                        "reagent");
    m->exit(&old, conf);

    old = rg_test_host;
    old.size = offsetof(rg_tool_host_t, parse_msec);

    conf = m->create_conf(&old);
    assert_null(rg_test_set_with(&old, m, conf, "max_output", "16k", NULL));
    assert_string_equal(rg_test_set_with(&old, m, conf, "timeout", "5s",
                                         NULL),
                        "needs a newer reagent (no parse_msec in the host "
                        "table)");
    assert_null(rg_test_set_with(&old, m, conf, "root", rg_test_root, NULL));
    assert_int_equal(m->init(&old, conf), RG_TOOL_ERROR);
    m->exit(&old, conf);
}


/* argv read with the host's arg_array_*() */
static void
rg_test_exec_argv_host(void **state)
{
    char             *args;
    void             *conf;
    size_t            i, len;
    const rg_tool_t  *exec;

    (void) state;

    conf = rg_test_exec_conf(NULL, NULL, NULL, NULL);
    exec = rg_test_tool(rg_test_mod_exec.module, "exec");

    rg_test_ok(exec, conf, "{\"argv\":[\"printf\",\"%s|\",\"a\\\"b\\\\c\\/d"
                           "\\u00e9\\ud83d\\ude00\"]}",
               "exit status 0\n--- stdout ---\na\"b\\c/d\xc3\xa9"
               "\xf0\x9f\x98\x80|\n--- stderr ---");
    rg_test_ok(exec, conf, "{\"x\":{\"argv\":[\"rm\"]},\"argv\":[\"echo\","
                           "\"ok\"]}",
               "exit status 0\n--- stdout ---\nok\n--- stderr ---");

    rg_test_err(exec, conf, "{\"argv\":[\"echo\",\"a\\u0000b\"]}",
                "argv[1] contains a NUL byte (\\u0000), which no program "
                "argument can hold");
    rg_test_err(exec, conf, "{\"argv\":[\"echo\",1]}",
                "argv[1] is not a string; every item of 'argv' is one, such "
                "as [\"ls\", \"-l\"]");
    rg_test_err(exec, conf, "{\"argv\":\"ls -l\"}",
                "argument 'argv' must be an array of strings, such as "
                "[\"ls\", \"-l\"]");
    rg_test_err(exec, conf, "{\"argv\":[]}",
                "argument 'argv' is empty; it needs at least the program, "
                "such as [\"ls\", \"-l\"]");
    rg_test_err(exec, conf, "{}",
                "missing argument 'argv' (an array of strings, such as "
                "[\"ls\", \"-l\"])");
    rg_test_err(exec, conf, "{\"argv\":[\"\"]}",
                "argv[0] is empty; it names the program, such as \"ls\"");

    /* raw UTF-8 passes as it is */

    rg_test_ok(exec, conf, "{\"argv\":[\"echo\",\"\xc3\xa9t\xc3\xa9\"]}",
               "exit status 0\n--- stdout ---\n\xc3\xa9t\xc3\xa9\n"
               "--- stderr ---");

    rg_test_err(exec, conf, "{\"argv\":[\"\\u0000\"]}",
                "argv[0] contains a NUL byte (\\u0000), which no program "
                "argument can hold");
    rg_test_err(exec, conf, "{\"argv\":[[\"echo\"]]}",
                "argv[0] is not a string; every item of 'argv' is one, such "
                "as [\"ls\", \"-l\"]");
    rg_test_err(exec, conf, "{\"cmd\":\"ls\",\"arg\":[\"ls\"]}",
                "missing argument 'argv' (an array of strings, such as "
                "[\"ls\", \"-l\"])");

    /* 1025 items are too many */

    len = 10 + 1025 * 4 + 2;
    args = malloc(len + 1);
    assert_non_null(args);

    strcpy(args, "{\"argv\":[");
    for (i = 0; i < 1025; i++) {
        strcat(args, i ? ",\"e\"" : "\"e\"");
    }
    strcat(args, "]}");

    rg_test_expect(exec, conf, args, strlen(args), 1,
                   "argument 'argv' has more than 1024 items", __FILE__,
                   __LINE__);
    free(args);

    rg_test_mod_exec.module->exit(&rg_test_host, conf);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup(rg_test_exec_module, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_exec_run, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_exec_output, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_exec_timeout, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_exec_allow, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_exec_cwd, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_exec_old_host, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_exec_argv_host, rg_test_host_reset),
    };

    return rg_test_host_run(tests) != 0;
}
