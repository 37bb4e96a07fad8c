/* test_module_fs.c: the bundled module fs (modules/fs.c): read_file,
 * list_dir and grep, loaded as the host loads it and driven through the
 * fake host of tests/lib/rg_test_host.c, on the tree that
 * rg_test_host.h lists: its ABI fields and directives, reads within the
 * root and their caps, every symlink and path that tries to leave the
 * root refused, listings, grep and its bounds (a pattern that backtracks
 * without end, a deadline already past), and calls from several threads
 * at once on one conf (with exec beside them) giving the answers they
 * give alone. */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rg_tool_module.h>
#include <rg_test_host.h>


static void
rg_test_fs_module(void **state)
{
    char                    *path;
    void                    *conf;
    rg_tool_host_t           old;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_mod_fs.module;

    rg_test_module_valid(m, "fs", 3);

    assert_int_equal(rg_test_tool(m, "read_file")->flags,
                     RG_TOOL_READ_ONLY | RG_TOOL_BLOCKING);
    assert_int_equal(rg_test_tool(m, "list_dir")->flags,
                     RG_TOOL_READ_ONLY | RG_TOOL_BLOCKING);
    assert_int_equal(rg_test_tool(m, "grep")->flags,
                     RG_TOOL_READ_ONLY | RG_TOOL_BLOCKING);

    /* exit() also for a conf that init() never saw, or refused */

    conf = m->create_conf(&rg_test_host);
    assert_non_null(conf);
    m->exit(&rg_test_host, conf);

    conf = m->create_conf(&rg_test_host);
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_ERROR);
    assert_int_equal(rg_test_log_level, RG_TOOL_LOG_ERR);
    assert_string_equal(rg_test_log_text, "fs: the \"root\" directive is "
                        "required: add \"root /path/to/files;\" to "
                        "\"module fs\"");
    m->exit(&rg_test_host, conf);

    conf = m->create_conf(&rg_test_host);
    path = rg_test_strf("%s/a.txt", rg_test_root);
    assert_null(rg_test_set(m, conf, "root", path, NULL));
    assert_string_equal(rg_test_set(m, conf, "root", path, NULL),
                        "is duplicate");
    free(path);
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_ERROR);
    assert_true(strstr(rg_test_log_text, "is not a directory") != NULL);
    m->exit(&rg_test_host, conf);

    conf = m->create_conf(&rg_test_host);
    assert_null(rg_test_set(m, conf, "root", "/nonexistent/rg", NULL));
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_ERROR);
    assert_string_equal(rg_test_log_text, "fs: root \"/nonexistent/rg\": No "
                        "such file or directory");
    m->exit(&rg_test_host, conf);

    conf = m->create_conf(&rg_test_host);
    assert_string_equal(rg_test_set(m, conf, "root", "", NULL),
                        "must not be empty");
    assert_string_equal(rg_test_set(m, conf, "max_read", "0", NULL),
                        "must be a size from 1 to 64m, such as 65536 or 64k");
    assert_string_equal(rg_test_set(m, conf, "max_read", "12q", NULL),
                        "must be a size from 1 to 64m, such as 65536 or 64k");
    assert_string_equal(rg_test_set(m, conf, "max_read", "1g", NULL),
                        "must be a size from 1 to 64m, such as 65536 or 64k");
    assert_string_equal(rg_test_set(m, conf, "max_read", "64kk", NULL),
                        "must be a size from 1 to 64m, such as 65536 or 64k");
    assert_null(rg_test_set(m, conf, "max_read", "64k", NULL));
    assert_string_equal(rg_test_set(m, conf, "max_read", "1k", NULL),
                        "is duplicate");
    assert_string_equal(rg_test_set(m, conf, "max_results", "-1", NULL),
                        "must be a number from 1 to 100000");
    assert_string_equal(rg_test_set(m, conf, "max_results", "5x", NULL),
                        "must be a number from 1 to 100000");
    assert_null(rg_test_set(m, conf, "max_results", "5", NULL));
    m->exit(&rg_test_host, conf);

    /* a host from before parse_size(): max_read cannot be read, the rest
     * works */

    old = rg_test_host;
    old.size = offsetof(rg_tool_host_t, parse_size);

    conf = m->create_conf(&old);
    assert_null(rg_test_set_with(&old, m, conf, "root", rg_test_root, NULL));
    assert_string_equal(rg_test_set_with(&old, m, conf, "max_read", "64k",
                                         NULL),
                        "needs a newer reagent (no parse_size in the host "
                        "table)");
    assert_null(rg_test_set_with(&old, m, conf, "max_results", "5", NULL));
    assert_int_equal(m->init(&old, conf), RG_TOOL_OK);
    m->exit(&old, conf);
}


static void
rg_test_fs_read(void **state)
{
    char             *args;
    void             *conf;
    const rg_tool_t  *read;

    (void) state;

    conf = rg_test_fs_conf(NULL, NULL);
    read = rg_test_tool(rg_test_mod_fs.module, "read_file");

    rg_test_ok(read, conf, "{\"path\":\"a.txt\"}", "hello\nworld\n");
    rg_test_ok(read, conf, "{\"path\":\"./notes//b.txt\"}",
               "alpha\nTODO one\nbeta\nTODO two\n");
    rg_test_ok(read, conf, "{\"path\":\"empty.txt\"}", "(empty file)");

    /* symlinks that stay inside are followed */

    rg_test_ok(read, conf, "{\"path\":\"link-in\"}",
               "alpha\nTODO one\nbeta\nTODO two\n");
    rg_test_ok(read, conf, "{\"path\":\"link-dir/c.md\"}", "TODO three\n");
    rg_test_ok(read, conf, "{\"path\":\"link-abs-in\"}", "hello\nworld\n");
    rg_test_ok(read, conf, "{\"path\":\"sub/up/a.txt\"}", "hello\nworld\n");
    rg_test_ok(read, conf, "{\"path\":\"sub/up/sub/up/link-dir/c.md\"}",
               "TODO three\n");

    /* refused */

    rg_test_err(read, conf, "{\"path\":\"bin.dat\"}",
                "path \"bin.dat\" looks binary (NUL bytes); read_file "
                "returns text only");
    rg_test_err(read, conf, "{\"path\":\"notes\"}",
                "path \"notes\" is a directory; use list_dir to see what it "
                "holds");
    rg_test_err(read, conf, "{\"path\":\"nope.txt\"}",
                "path \"nope.txt\" does not exist; use list_dir to see what "
                "is there");
    rg_test_err(read, conf, "{\"path\":\"a.txt/x\"}",
                "path \"a.txt/x\" goes through a file as if it were a "
                "directory; use list_dir to check it");
    rg_test_err(read, conf, "{}",
                "missing argument 'path' (relative to the fs root, e.g. "
                "\"notes/a.txt\")");
    rg_test_err(read, conf, "{\"path\":\"\"}",
                "missing argument 'path' (relative to the fs root, e.g. "
                "\"notes/a.txt\")");
    rg_test_err(read, conf, "{\"path\":7}",
                "argument 'path' must be a string, e.g. \"notes/a.txt\"");
    rg_test_err(read, conf, "{\"path\":\"a.txt\",\"offset\":\"x\"}",
                "argument 'offset' must be an integer, such as 100");
    rg_test_err(read, conf, "{\"path\":\"a.txt\",\"offset\":-1}",
                "argument 'offset' must be at least 0, not -1");
    rg_test_err(read, conf, "{\"path\":\"a.txt\",\"length\":0}",
                "argument 'length' must be at least 1, not 0");
    rg_test_err(read, conf, "{\"path\":\"a.txt\",\"offset\":12}",
                "offset 12 is past the end of \"a.txt\" (12 bytes); use an "
                "offset below 12");

    rg_test_ok(read, conf, "{\"path\":\"a.txt\",\"offset\":6,\"length\":99}",
               "world\n");

    rg_test_mod_fs.module->exit(&rg_test_host, conf);

    /* a root of "/" holds every absolute symlink target */

    conf = rg_test_mod_fs.module->create_conf(&rg_test_host);
    assert_null(rg_test_set(rg_test_mod_fs.module, conf, "root", "/", NULL));
    assert_int_equal(rg_test_mod_fs.module->init(&rg_test_host, conf),
                     RG_TOOL_OK);

    args = rg_test_strf("{\"path\":\"%s/link-abs-in\"}", rg_test_root + 1);
    rg_test_expect(read, conf, args, strlen(args), 0, "hello\nworld\n",
                   __FILE__, __LINE__);
    free(args);

    rg_test_mod_fs.module->exit(&rg_test_host, conf);
}


static void
rg_test_fs_escapes(void **state)
{
    void             *conf;
    const rg_tool_t  *read, *list, *grep;

    (void) state;

    conf = rg_test_fs_conf(NULL, NULL);
    read = rg_test_tool(rg_test_mod_fs.module, "read_file");
    list = rg_test_tool(rg_test_mod_fs.module, "list_dir");
    grep = rg_test_tool(rg_test_mod_fs.module, "grep");

    rg_test_err(read, conf, "{\"path\":\"../x\"}",
                "path \"../x\" contains \"..\"; paths stay inside the fs "
                "root: name the file from the root, e.g. \"notes/a.txt\"");
    rg_test_err(read, conf, "{\"path\":\"a/../../x\"}",
                "path \"a/../../x\" contains \"..\"; paths stay inside the fs "
                "root: name the file from the root, e.g. \"notes/a.txt\"");
    rg_test_err(read, conf, "{\"path\":\"notes/..\"}",
                "path \"notes/..\" contains \"..\"; paths stay inside the fs "
                "root: name the file from the root, e.g. \"notes/a.txt\"");
    rg_test_err(read, conf, "{\"path\":\"/etc/passwd\"}",
                "path must be relative to the fs root, e.g. \"notes/a.txt\", "
                "not \"/etc/passwd\"");
    rg_test_err(read, conf, "{\"path\":\"//etc/passwd\"}",
                "path must be relative to the fs root, e.g. \"notes/a.txt\", "
                "not \"//etc/passwd\"");

    /* a NUL would cut the path short for the C library */

    rg_test_err(read, conf, "{\"path\":\"a.txt\\u0000.png\"}",
                "path \"a.txt?.png\" contains a NUL byte; send the path as "
                "plain text, e.g. \"notes/a.txt\"");

    /* symlinks out, relative, absolute, through a directory, or by ".."
     * in a target */

    rg_test_err(read, conf, "{\"path\":\"link-out\"}",
                "path \"link-out\" leads outside the fs root through a "
                "symlink; use a path inside the root");
    rg_test_err(read, conf, "{\"path\":\"link-abs\"}",
                "path \"link-abs\" leads outside the fs root through a "
                "symlink; use a path inside the root");
    rg_test_err(read, conf, "{\"path\":\"link-abs-out\"}",
                "path \"link-abs-out\" leads outside the fs root through a "
                "symlink; use a path inside the root");
    rg_test_err(read, conf, "{\"path\":\"link-outdir/f.txt\"}",
                "path \"link-outdir/f.txt\" leads outside the fs root "
                "through a symlink; use a path inside the root");
    rg_test_err(read, conf, "{\"path\":\"sub/up2/outside.txt\"}",
                "path \"sub/up2/outside.txt\" leads outside the fs root "
                "through a symlink; use a path inside the root");
    rg_test_err(list, conf, "{\"path\":\"link-outdir\"}",
                "path \"link-outdir\" leads outside the fs root through a "
                "symlink; use a path inside the root");
    rg_test_err(grep, conf, "{\"pattern\":\"secret\","
                            "\"path\":\"sub/up2\"}",
                "path \"sub/up2\" leads outside the fs root through a "
                "symlink; use a path inside the root");

    rg_test_err(read, conf, "{\"path\":\"loop1\"}",
                "path \"loop1\" is a symlink loop; use the file's real path");
    rg_test_err(list, conf, "{\"path\":\"loop2/x\"}",
                "path \"loop2/x\" is a symlink loop; use the file's real "
                "path");

    /* grep never follows a symlink: the secret stays out of reach */

    rg_test_ok(grep, conf, "{\"pattern\":\"secret\"}",
               "no lines match \"secret\" under \".\"");

    rg_test_mod_fs.module->exit(&rg_test_host, conf);
}


static void
rg_test_fs_read_cap(void **state)
{
    void             *conf;
    const rg_tool_t  *read;

    (void) state;

    conf = rg_test_fs_conf("40", NULL);
    read = rg_test_tool(rg_test_mod_fs.module, "read_file");

    rg_test_ok(read, conf, "{\"path\":\"big.txt\"}",
               "0123456789012345678901234567890123456789\n"
               "(truncated: file is 100 bytes; use offset 40 to read more)");
    rg_test_ok(read, conf, "{\"path\":\"big.txt\",\"offset\":40}",
               "0123456789012345678901234567890123456789\n"
               "(truncated: file is 100 bytes; use offset 80 to read more)");
    rg_test_ok(read, conf, "{\"path\":\"big.txt\",\"offset\":80}",
               "01234567890123456789");
    rg_test_ok(read, conf, "{\"path\":\"big.txt\",\"offset\":10,"
                           "\"length\":5}",
               "01234\n"
               "(truncated: file is 100 bytes; use offset 15 to read more)");
    rg_test_ok(read, conf, "{\"path\":\"big.txt\",\"length\":1000}",
               "0123456789012345678901234567890123456789\n"
               "(truncated: file is 100 bytes; use offset 40 to read more)");
    rg_test_err(read, conf, "{\"path\":\"big.txt\",\"offset\":100}",
                "offset 100 is past the end of \"big.txt\" (100 bytes); use "
                "an offset below 100");

    /* the cut does not split "é": the next offset starts it */

    rg_test_ok(read, conf, "{\"path\":\"utf8.txt\"}",
               "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
               "(truncated: file is 45 bytes; use offset 39 to read more)");
    rg_test_ok(read, conf, "{\"path\":\"utf8.txt\",\"offset\":39}",
               "\xc3\xa9tail");

    /* binary is found by the head, whatever the offset */

    rg_test_err(read, conf, "{\"path\":\"bin.dat\",\"offset\":9}",
                "path \"bin.dat\" looks binary (NUL bytes); read_file "
                "returns text only");

    rg_test_mod_fs.module->exit(&rg_test_host, conf);
}


static void
rg_test_fs_list(void **state)
{
    char             *expect;
    void             *conf;
    rg_test_call_t    tc;
    const rg_tool_t  *list;

    (void) state;

    conf = rg_test_fs_conf(NULL, NULL);
    list = rg_test_tool(rg_test_mod_fs.module, "list_dir");

    rg_test_ok(list, conf, "{\"path\":\"notes\"}",
               "b.txt (29 bytes)\nc.md (11 bytes)\ndeep/");
    rg_test_ok(list, conf, "{\"path\":\"link-dir/\"}",
               "b.txt (29 bytes)\nc.md (11 bytes)\ndeep/");
    rg_test_ok(list, conf, "{\"path\":\"sub\"}", "up -> ..\nup2 -> ../..");
    rg_test_ok(list, conf, "{\"path\":\"emptydir\"}", "(empty directory)");
    rg_test_err(list, conf, "{\"path\":\"a.txt\"}",
                "path \"a.txt\" is a file; use read_file to read it");

    /* the root, sorted, by default */

    expect = rg_test_strf("a.txt (12 bytes)\n"
                         "big.txt (100 bytes)\n"
                         "bin.dat (10 bytes)\n"
                         "empty.txt (0 bytes)\n"
                         "emptydir/\n"
                         "link-abs -> /etc/passwd\n"
                         "link-abs-in -> %s/a.txt\n"
                         "link-abs-out -> %s/outside.txt\n"
                         "link-dir -> notes\n"
                         "link-in -> notes/b.txt\n"
                         "link-out -> ../outside.txt\n"
                         "link-outdir -> ../outdir\n"
                         "loop1 -> loop2\n"
                         "loop2 -> loop1\n"
                         "notes/\n"
                         "sub/\n"
                         "utf8.txt (45 bytes)\n"
                         "wide/", rg_test_root, rg_test_base);

    assert_int_equal(rg_test_call_run(&tc, list, conf, "{}"), RG_TOOL_OK);
    assert_false(tc.failed);
    assert_string_equal(tc.result, expect);
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, list, conf, "{\"path\":\".\"}"),
                     RG_TOOL_OK);
    assert_string_equal(tc.result, expect);
    rg_test_call_free(&tc);

    free(expect);

    rg_test_mod_fs.module->exit(&rg_test_host, conf);

    /* capped at max_results */

    conf = rg_test_fs_conf(NULL, "3");

    rg_test_ok(list, conf, "{}",
               "a.txt (12 bytes)\nbig.txt (100 bytes)\nbin.dat (10 bytes)\n"
               "(15 more entries not shown; list a subdirectory or use "
               "grep)");
    rg_test_ok(list, conf, "{\"path\":\"notes\"}",
               "b.txt (29 bytes)\nc.md (11 bytes)\ndeep/");

    rg_test_mod_fs.module->exit(&rg_test_host, conf);
}


static void
rg_test_fs_grep(void **state)
{
    char             *wide;
    size_t            n;
    void             *conf;
    const rg_tool_t  *grep;

    (void) state;

    conf = rg_test_fs_conf(NULL, NULL);
    grep = rg_test_tool(rg_test_mod_fs.module, "grep");

    rg_test_ok(grep, conf, "{\"pattern\":\"TODO\",\"path\":\"notes\"}",
               "notes/b.txt:2: TODO one\n"
               "notes/b.txt:4: TODO two\n"
               "notes/c.md:1: TODO three\n"
               "notes/deep/d.txt:2: TODO four");

    /* through a symlink inside the root, named as given */

    rg_test_ok(grep, conf, "{\"pattern\":\"^TODO t\","
                           "\"path\":\"./link-dir/\"}",
               "link-dir/b.txt:4: TODO two\n"
               "link-dir/c.md:1: TODO three");

    rg_test_ok(grep, conf, "{\"pattern\":\"beta|alpha\","
                           "\"path\":\"notes/b.txt\"}",
               "notes/b.txt:1: alpha\nnotes/b.txt:3: beta");

    rg_test_ok(grep, conf, "{\"pattern\":\"[Tt]odo lower$\"}",
               "notes/deep/d.txt:1: todo lower");

    /* everything: bin.dat is binary and skipped, links are not followed,
     * a long line is cut at 200 bytes */

    wide = malloc(512);
    assert_non_null(wide);
    strcpy(wide, "notes/b.txt:2: TODO one\n"
                 "notes/b.txt:4: TODO two\n"
                 "notes/c.md:1: TODO three\n"
                 "notes/deep/d.txt:2: TODO four\n"
                 "wide/long.txt:1: TODO ");
    n = strlen(wide);
    memset(wide + n, 'w', 195);
    memcpy(wide + n + 195, "...", 4);
    rg_test_expect(grep, conf, "{\"pattern\":\"TODO\"}", 18, 0, wide,
                   __FILE__, __LINE__);
    free(wide);

    rg_test_ok(grep, conf, "{\"pattern\":\"TODO\",\"path\":\"notes\","
                           "\"max_results\":2}",
               "notes/b.txt:2: TODO one\n"
               "notes/b.txt:4: TODO two\n"
               "(stopped at 2 matches; narrow the pattern or the path to see "
               "the rest)");

    rg_test_ok(grep, conf, "{\"pattern\":\"TODO bin\"}",
               "no lines match \"TODO bin\" under \".\"");
    rg_test_ok(grep, conf, "{\"pattern\":\"zzz\",\"path\":\"emptydir\"}",
               "no lines match \"zzz\" under \"emptydir\"");

    /* an invalid regex gets PCRE2's own words */

    rg_test_err(grep, conf, "{\"pattern\":\"a(\"}",
                "invalid regular expression \"a(\": missing closing "
                "parenthesis at offset 2; write one such as \"foo|bar\" "
                "(escape ( [ { . * + ? with \\)");

    rg_test_err(grep, conf, "{}",
                "missing argument 'pattern' (a regular expression such as "
                "\"error|warning\")");
    rg_test_err(grep, conf, "{\"pattern\":\"x\",\"max_results\":0}",
                "argument 'max_results' must be at least 1, not 0");
    rg_test_err(grep, conf, "{\"pattern\":\"x\",\"path\":\"../\"}",
                "path \"../\" contains \"..\"; paths stay inside the fs root: "
                "name the file from the root, e.g. \"notes/a.txt\"");
    rg_test_err(grep, conf, "{\"pattern\":\"x\",\"path\":\"/\"}",
                "path must be relative to the fs root, e.g. \"notes/a.txt\", "
                "not \"/\"");

    rg_test_mod_fs.module->exit(&rg_test_host, conf);

    /* the directive caps the argument */

    conf = rg_test_fs_conf(NULL, "3");

    rg_test_ok(grep, conf, "{\"pattern\":\"TODO\",\"max_results\":50}",
               "notes/b.txt:2: TODO one\n"
               "notes/b.txt:4: TODO two\n"
               "notes/c.md:1: TODO three\n"
               "(stopped at 3 matches; narrow the pattern or the path to see "
               "the rest)");

    rg_test_mod_fs.module->exit(&rg_test_host, conf);
}


static uint64_t
rg_test_host_deadline_past(rg_tool_call_t *call)
{
    (void) call;

    return 1;                  /* long gone */
}


/* grep's bounds: a pattern that backtracks without end is an error for
 * its call (PCRE2's match limit), and a search or a listing stops at the
 * host's deadline instead of holding its thread */
static void
rg_test_fs_limits(void **state)
{
    char             *path, line[64], *many;
    void             *conf;
    size_t            i;
    const rg_tool_t  *grep, *list;

    (void) state;

    conf = rg_test_fs_conf(NULL, NULL);
    grep = rg_test_tool(rg_test_mod_fs.module, "grep");
    list = rg_test_tool(rg_test_mod_fs.module, "list_dir");

    rg_test_mkdir("root/limits");
    rg_test_mkdir("root/limits/big");

    memset(line, 'a', 40);
    memcpy(line + 40, "!\n", 3);
    rg_test_write("root/limits/a.txt", line, 42);

    rg_test_err(grep, conf, "{\"pattern\":\"^(a+)+$\",\"path\":\"limits\"}",
                "pattern \"^(a+)+$\" is too costly to match: it hit the "
                "backtracking limit on \"limits/a.txt\" line 1 (nested "
                "quantifiers such as (a+)+ and back-references backtrack "
                "without end); simplify it");
    rg_test_err(grep, conf, "{\"pattern\":\"^(a|a?)+$\","
                            "\"path\":\"limits/a.txt\"}",
                "pattern \"^(a|a?)+$\" is too costly to match: *");

    /* an ordinary pattern on the same line is fine */
    rg_test_ok(grep, conf, "{\"pattern\":\"a+!\",\"path\":\"limits\"}",
               "limits/a.txt:1: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!");

    /* past the deadline: what was found so far, and why it stopped */
    many = malloc(600);
    assert_non_null(many);
    for (i = 0; i < 300; i++) {
        memcpy(many + 2 * i, "x\n", 2);
    }
    rg_test_write("root/limits/many.txt", many, 600);
    free(many);

    for (i = 0; i < 1100; i++) {
        path = rg_test_strf("root/limits/big/f%zu", i);
        rg_test_write(path, "", 0);
        free(path);
    }

    rg_test_host.deadline = rg_test_host_deadline_past;

    rg_test_ok(grep, conf, "{\"pattern\":\"x\",\"path\":\"limits/many.txt\"}",
               "limits/many.txt:1: x\n*");
    rg_test_expect(grep, conf, "{\"pattern\":\"x\",\"path\":\"limits\"}",
                   sizeof("{\"pattern\":\"x\",\"path\":\"limits\"}") - 1,
                   0, "(stopped at the time limit after searching 1 files, 0 "
                   "matches so far; give a narrower path or pattern)",
                   __FILE__, __LINE__);
    rg_test_err(list, conf, "{\"path\":\"limits/big\"}",
                "cannot list \"limits/big\": it holds too many entries to "
                "read in the time allowed; use grep on it, or a "
                "subdirectory");

    rg_test_host.deadline = NULL;

    /* with time to spare, all of it */
    rg_test_ok(list, conf, "{\"path\":\"limits/big\"}", "f0 (0 bytes)\n*");

    path = rg_test_strf("%s/limits", rg_test_root);
    nftw(path, rg_test_rm, 16, FTW_DEPTH | FTW_PHYS);
    free(path);

    rg_test_mod_fs.module->exit(&rg_test_host, conf);
}


/* The tools run in the host's thread pool: several calls at once, on one
 * conf, give the answers they give alone (ASan and TSan watch the rest).
 * No cmocka assert in the threads: they count what differs. */

typedef struct {
    void                     *fs_conf;
    void                     *exec_conf;
    int                       bad;
} rg_test_thread_t;


static int
rg_test_thread_call(const rg_tool_t *tool, void *conf, const char *args,
    const char *expect)
{
    int             bad;
    rg_test_call_t  tc;

    rg_test_call_init(&tc, tool, conf, args, strlen(args));

    bad = tool->start(&tc.call) != RG_TOOL_OK || tc.answers != 1
          || tc.failed || strcmp(tc.result, expect) != 0;

    rg_test_call_free(&tc);

    return bad;
}


static void *
rg_test_thread(void *data)
{
    int                i;
    const rg_tool_t   *read, *list, *grep, *exec;
    rg_test_thread_t  *t;

    t = data;

    read = &rg_test_mod_fs.module->tools[0];
    list = &rg_test_mod_fs.module->tools[1];
    grep = &rg_test_mod_fs.module->tools[2];
    exec = &rg_test_mod_exec.module->tools[0];

    for (i = 0; i < 30; i++) {
        t->bad += rg_test_thread_call(read, t->fs_conf,
                                      "{\"path\":\"link-dir/c.md\"}",
                                      "TODO three\n");
        t->bad += rg_test_thread_call(list, t->fs_conf,
                                      "{\"path\":\"notes\"}",
                                      "b.txt (29 bytes)\nc.md (11 bytes)\n"
                                      "deep/");
        t->bad += rg_test_thread_call(grep, t->fs_conf,
                                      "{\"pattern\":\"TODO t\","
                                      "\"path\":\"notes\"}",
                                      "notes/b.txt:4: TODO two\n"
                                      "notes/c.md:1: TODO three");

        if (i % 5 == 0) {
            t->bad += rg_test_thread_call(exec, t->exec_conf,
                                          "{\"argv\":[\"echo\",\"hi\"]}",
                                          "exit status 0\n--- stdout ---\n"
                                          "hi\n--- stderr ---");
        }
    }

    return NULL;
}


static void
rg_test_threads(void **state)
{
    int               i;
    void             *fs_conf, *exec_conf;
    pthread_t         tid[4];
    rg_test_thread_t  t[4];

    (void) state;

    assert_string_equal(rg_test_mod_fs.module->tools[0].name, "read_file");
    assert_string_equal(rg_test_mod_fs.module->tools[1].name, "list_dir");
    assert_string_equal(rg_test_mod_fs.module->tools[2].name, "grep");

    fs_conf = rg_test_fs_conf(NULL, NULL);
    exec_conf = rg_test_exec_conf(NULL, NULL, NULL, NULL);

    for (i = 0; i < 4; i++) {
        t[i].fs_conf = fs_conf;
        t[i].exec_conf = exec_conf;
        t[i].bad = 0;
        assert_int_equal(pthread_create(&tid[i], NULL, rg_test_thread,
                                        &t[i]), 0);
    }

    for (i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(tid[i], NULL), 0);
        assert_int_equal(t[i].bad, 0);
    }

    rg_test_mod_fs.module->exit(&rg_test_host, fs_conf);
    rg_test_mod_exec.module->exit(&rg_test_host, exec_conf);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup(rg_test_fs_module, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_fs_read, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_fs_escapes, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_fs_read_cap, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_fs_list, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_fs_grep, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_fs_limits, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_threads, rg_test_host_reset),
    };

    return rg_test_host_run(tests) != 0;
}
