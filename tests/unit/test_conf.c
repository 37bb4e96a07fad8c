/* test_conf.c: tests of the configuration parser (src/core/rg_conf_file.c)
 * and of the cycle it builds (src/core/rg_cycle.c).
 *
 * The parser is driven twice: directly, with a table of test directives
 * that uses every generic setter (str, str array, num, size, msec, flag,
 * double, enum) and every argument count, so that the tokenizer, the
 * structural errors and the setters are seen without the cycle's rules;
 * and through rg_cycle_create(), for the main, llm and agent directives,
 * their values and defaults, the whole-file checks, `include` of files
 * and masks, the secrecy of API keys and the shipped conf/reagent.conf.
 * Every error is compared whole, " in FILE:LINE" included. Files go to
 * rg_test_tmpdir(), which is removed at the end. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_module.h>
#include <rg_core_conf.h>
#include <rg_store_conf.h>
#include <rg_tools_conf.h>
#include <rg_queue_conf.h>
#include <rg_test.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sched.h>
#include <cmocka.h>

#include <ftw.h>
#include <libgen.h>
#include <math.h>
#include <sys/wait.h>


#define RG_TEST_SECRET      "sk-test-SECRET"
#define RG_TEST_KEY_VAR     "RG_TEST_CONF_KEY"
#define RG_TEST_UNSET_VAR   "RG_TEST_CONF_UNSET"
#define RG_TEST_EMPTY_VAR   "RG_TEST_CONF_EMPTY"

/* one llm on line 1, one agent on the next line */
#define RG_TEST_LLM    "llm a { base_url http://127.0.0.1:1/v1; model m; }\n"
#define RG_TEST_AGENT  "agent x { }\n"


/* an rg_str_t equals a C string */
#define rg_test_str(s, expect)                                               \
    do {                                                                     \
        assert_non_null((s)->data);                                          \
        assert_int_equal((s)->len, strlen(expect));                          \
        assert_memory_equal((s)->data, (expect), strlen(expect));            \
    } while (0)

#define rg_test_conf_error(text, expect)                                     \
    rg_test_conf_error_at(text, expect, __FILE__, __LINE__)

#define rg_test_conf_ok(text)                                                \
    rg_test_conf_ok_at(text, __FILE__, __LINE__)

#define rg_test_parse_error(text, expect)                                    \
    rg_test_parse_error_at(text, expect, __FILE__, __LINE__)


/* the direct parser tests: a conf struct and a table using every setter */

typedef struct {
    rg_str_t                str;
    rg_array_t             *words;
    rg_int_t                num;
    size_t                  size;
    rg_msec_t               msec;
    rg_int_t                flag;
    double                  dbl;
    rg_uint_t               color;
    rg_uint_t               blocks;
} rg_test_conf_t;


/* what the "capture" setter saw, one entry per directive */
typedef struct {
    rg_uint_t               nargs;
    rg_str_t                args[RG_CONF_MAX_ARGS];
    rg_uint_t               line;
    rg_uint_t               block;
} rg_test_capture_t;


typedef struct {
    const char             *text;
    const char             *error;
} rg_test_case_t;


static char *rg_test_capture(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static char *rg_test_block(rg_conf_t *cf, rg_command_t *cmd, void *conf);


static rg_conf_num_bounds_t  rg_test_num_bounds = { 1, 10 };
static rg_conf_num_bounds_t  rg_test_dbl_bounds = { 0, 2 };

static rg_conf_enum_t  rg_test_colors[] = {
    { rg_string("red"), 1 },
    { rg_string("green"), 2 },
    { rg_null_string, 0 }
};


static rg_command_t  rg_test_commands[] = {

    { rg_string("cap"), RG_MAIN_CONF|RG_CONF_1MORE, rg_test_capture, 0,
      NULL },

    { rg_string("none"), RG_MAIN_CONF|RG_CONF_NOARGS, rg_test_capture, 0,
      NULL },

    { rg_string("two"), RG_MAIN_CONF|RG_CONF_TAKE2, rg_test_capture, 0,
      NULL },

    { rg_string("opt"), RG_MAIN_CONF|RG_CONF_TAKE12, rg_test_capture, 0,
      NULL },

    { rg_string("three"), RG_MAIN_CONF|RG_CONF_TAKE123, rg_test_capture, 0,
      NULL },

    { rg_string("many"), RG_MAIN_CONF|RG_CONF_2MORE, rg_test_capture, 0,
      NULL },

    { rg_string("elsewhere"), RG_LLM_CONF|RG_CONF_TAKE1, rg_test_capture, 0,
      NULL },

    { rg_string("block"), RG_MAIN_CONF|RG_CONF_BLOCK|RG_CONF_NOARGS,
      rg_test_block, 0, NULL },

    { rg_string("str"), RG_MAIN_CONF|RG_CONF_TAKE1, rg_conf_set_str_slot,
      offsetof(rg_test_conf_t, str), NULL },

    { rg_string("words"), RG_MAIN_CONF|RG_CONF_1MORE,
      rg_conf_set_str_array_slot, offsetof(rg_test_conf_t, words), NULL },

    { rg_string("num"), RG_MAIN_CONF|RG_CONF_TAKE1, rg_conf_set_num_slot,
      offsetof(rg_test_conf_t, num), &rg_test_num_bounds },

    { rg_string("size"), RG_MAIN_CONF|RG_CONF_TAKE1, rg_conf_set_size_slot,
      offsetof(rg_test_conf_t, size), NULL },

    { rg_string("msec"), RG_MAIN_CONF|RG_CONF_TAKE1, rg_conf_set_msec_slot,
      offsetof(rg_test_conf_t, msec), NULL },

    { rg_string("flag"), RG_MAIN_CONF|RG_CONF_FLAG, rg_conf_set_flag_slot,
      offsetof(rg_test_conf_t, flag), NULL },

    { rg_string("dbl"), RG_MAIN_CONF|RG_CONF_TAKE1, rg_conf_set_double_slot,
      offsetof(rg_test_conf_t, dbl), &rg_test_dbl_bounds },

    { rg_string("color"), RG_MAIN_CONF|RG_CONF_TAKE1, rg_conf_set_enum_slot,
      offsetof(rg_test_conf_t, color), rg_test_colors },

      rg_null_command
};


/* the directives above, as the one part of the parser's world */
static rg_part_t  rg_test_part = {
    .name = "test",
    .commands = rg_test_commands
};

static rg_part_t          *rg_test_parts[] = { &rg_test_part, NULL };

static rg_pool_t          *rg_test_pool;
static rg_conf_t           rg_test_cf;
static rg_test_conf_t      rg_test_conf;
static void               *rg_test_confs[] = { &rg_test_conf };
static rg_log_t            rg_test_silent_log;
static rg_test_capture_t   rg_test_captured[16];
static rg_uint_t           rg_test_ncaptured;


static char *
rg_test_capture(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_uint_t           i;
    rg_test_capture_t  *c;

    if (rg_test_ncaptured == rg_nelems(rg_test_captured)) {
        return "captured too often";
    }

    c = &rg_test_captured[rg_test_ncaptured++];

    c->nargs = cf->nargs;
    c->line = rg_conf_line(cf);
    c->block = cf->block;

    for (i = 0; i < cf->nargs; i++) {
        c->args[i] = cf->args[i];
    }

    return RG_CONF_OK;
}


static char *
rg_test_block(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_test_conf_t  *tc;

    tc = conf;
    tc->blocks++;

    return rg_conf_parse_block(cf);
}


static int
rg_test_parser_setup(void **state)
{
    rg_test_pool = rg_pool_create(4096);

    rg_test_silent_log = *rg_log_stderr();
    rg_test_silent_log.log_level = getenv("RG_TEST_LOG") ? RG_LOG_DEBUG
                                                         : RG_LOG_STDERR;

    return rg_test_pool ? 0 : -1;
}


static int
rg_test_parser_teardown(void **state)
{
    rg_pool_destroy(rg_test_pool);
    rg_test_pool = NULL;

    return 0;
}


/* parses text as "direct.conf" into rg_test_conf */
static char *
rg_test_parse(const char *text)
{
    rg_test_conf.str.len = 0;
    rg_test_conf.str.data = NULL;
    rg_test_conf.words = NULL;
    rg_test_conf.num = RG_CONF_UNSET;
    rg_test_conf.size = RG_CONF_UNSET_SIZE;
    rg_test_conf.msec = RG_CONF_UNSET_MSEC;
    rg_test_conf.flag = RG_CONF_UNSET;
    rg_test_conf.dbl = NAN;
    rg_test_conf.color = RG_CONF_UNSET_UINT;
    rg_test_conf.blocks = 0;

    rg_test_ncaptured = 0;

    memset(&rg_test_cf, 0, sizeof(rg_conf_t));
    rg_test_cf.pool = rg_test_pool;
    rg_test_cf.log = &rg_test_silent_log;
    rg_test_cf.ctx = rg_test_confs;
    rg_test_cf.ctx_type = RG_MAIN_CONF;
    rg_test_cf.parts = rg_test_parts;

    return rg_conf_parse_string(&rg_test_cf, "direct.conf", text);
}


static void
rg_test_parse_ok(const char *text)
{
    if (rg_test_parse(text) != RG_CONF_OK) {
        print_error("configuration\n%s\nfailed: %s\n", text,
                    rg_test_cf.errmsg);
        fail();
    }
}


static void
rg_test_parse_error_at(const char *text, const char *expect,
    const char *file, int line)
{
    if (rg_test_parse(text) == RG_CONF_OK
        || strcmp(rg_test_cf.errmsg, expect) != 0)
    {
        print_error("configuration\n%s\nexpected error: %s\ngot: %s\n",
                    text, expect, rg_test_cf.errmsg[0] ? rg_test_cf.errmsg
                                                       : "(accepted)");
        _fail(file, line);
    }
}


static void
rg_test_captured_is(rg_uint_t n, rg_uint_t line, const char **words)
{
    int                 same;
    rg_uint_t           i;
    rg_test_capture_t  *c;

    assert_true(n < rg_test_ncaptured);

    c = &rg_test_captured[n];
    same = c->line == line;

    for (i = 0; words[i]; i++) {
        same = same && i < c->nargs && c->args[i].len == strlen(words[i])
               && memcmp(c->args[i].data, words[i], c->args[i].len) == 0
               /* NUL-ended: setters hand words to getenv(), strtod() */
               && c->args[i].data[c->args[i].len] == '\0';
    }

    same = same && c->nargs == i;

    if (!same) {
        print_error("directive %lu: expected line %lu:", (unsigned long) n,
                    (unsigned long) line);
        for (i = 0; words[i]; i++) {
            print_error(" [%s]", words[i]);
        }
        print_error("\ngot line %lu:", (unsigned long) c->line);
        for (i = 0; i < c->nargs; i++) {
            print_error(" [%.*s]", (int) c->args[i].len, c->args[i].data);
        }
        print_error("\n");
        fail();
    }
}


/* comments, blanks, quotes and escapes, and the line each word ends on */
static void
rg_test_parse_words(void **state)
{
    static const char  *w0[] = { "cap", "plain", "single quoted",
                                 "double quoted", NULL };
    static const char  *w1[] = { "cap", "a\"b", "c'd", "e\\f",
                                 "g\nh\ti\rj", "\\d", "", "k\"l", NULL };
    static const char  *w2[] = { "cap", "x", NULL };
    static const char  *w3[] = { "cap", "multi\nline", "after", NULL };
    static const char  *w4[] = { "cap", "a;b{c}d#e", NULL };
    static const char  *w5[] = { "cap", "quoted name", NULL };
    static const char  *w6[] = { "cap", "last", NULL };

    rg_test_parse_ok(
        "# a comment line; with \"quotes\" and { braces }\n"
        "cap plain 'single quoted' \"double quoted\";  # trailing\n"
        "cap \"a\\\"b\" 'c\\'d' \"e\\\\f\" \"g\\nh\\ti\\rj\" '\\d' \"\" "
            "'k\"l';\n"
        "\tcap\r\n"
        "   x ;\n"
        "cap \"multi\n"
        "line\" after;\n"
        "cap 'a;b{c}d#e';#comment right after\n"
        "\"cap\" \"quoted name\";\n"
        "\n"
        "   # indented comment\n"
        "cap last;");

    assert_int_equal(rg_test_ncaptured, 7);

    rg_test_captured_is(0, 2, w0);
    rg_test_captured_is(1, 3, w1);
    rg_test_captured_is(2, 5, w2);
    rg_test_captured_is(3, 7, w3);
    rg_test_captured_is(4, 8, w4);
    rg_test_captured_is(5, 9, w5);
    rg_test_captured_is(6, 12, w6);

    /* an empty text and a text of comments are empty configurations */
    rg_test_parse_ok("");
    rg_test_parse_ok("# only\n\n   # comments\n");
    assert_int_equal(rg_test_ncaptured, 0);
}


/* a quoted word must be followed by a blank, ";", "{" or "}" */
static void
rg_test_parse_glued(void **state)
{
    static const char  *w0[] = { "cap", "a", "b", NULL };
    static const char  *w1[] = { "cap", "a", NULL };

    rg_test_parse_error("cap \"a\"b;", "unexpected \"b\" in direct.conf:1");
    rg_test_parse_error("cap\n'a'b;", "unexpected \"b\" in direct.conf:2");
    rg_test_parse_error("cap \"a\"\"b\";",
                        "unexpected \"\"\" in direct.conf:1");
    rg_test_parse_error("cap 'a'\"b\";",
                        "unexpected \"\"\" in direct.conf:1");
    rg_test_parse_error("cap a\"b\";",
                        "unexpected quote inside a word in direct.conf:1");
    rg_test_parse_error("cap a'b';",
                        "unexpected quote inside a word in direct.conf:1");

    /* "a" then a blank, a comment or ";" is fine */
    rg_test_parse_ok("cap \"a\" 'b';");
    rg_test_captured_is(0, 1, w0);
    rg_test_parse_ok("cap \"a\";");
    rg_test_captured_is(0, 1, w1);
    rg_test_parse_ok("cap 'a'\t\n;");
    rg_test_captured_is(0, 2, w1);
}


/* A backslash before a newline inside quotes is not an escape the parser
 * knows, so both are kept; the newline must still count as a line. */
static void
rg_test_parse_escaped_newline(void **state)
{
    static const char  *w0[] = { "cap", "a\\\nb", NULL };

    rg_test_parse_ok("cap \"a\\\nb\";\ncap x;");
    rg_test_captured_is(0, 2, w0);

    rg_test_parse_error("cap \"a\\\nb\";\nnope;",
                        "unknown directive \"nope\" in direct.conf:3");
}


/* nginx ends a word at a blank, ";", "{" or "}", not at "#": a "#" that is
 * not the first character of a word is part of the word */
static void
rg_test_parse_hash_in_word(void **state)
{
    static const char  *w0[] = { "cap", "a#b", "#c", NULL };

    rg_test_parse_ok("cap a#b;\ncap x;\n");
    rg_test_captured_is(0, 1, (const char *[]) { "cap", "a#b", NULL });

    /* and a word that starts with "#" starts a comment */
    rg_test_parse_ok("cap a#b \"#c\" #c;\n;");
    rg_test_captured_is(0, 2, w0);
}


static void
rg_test_parse_structure(void **state)
{
    rg_uint_t           i;
    rg_test_capture_t  *c;

    static const rg_test_case_t  cases[] = {
        { "}", "unexpected \"}\" in direct.conf:1" },
        { "cap a }", "unexpected \"}\" in direct.conf:1" },
        { "cap a;\n;", "unexpected \";\" in direct.conf:2" },
        { "{", "unexpected \"{\" in direct.conf:1" },
        { "block {\n}\n}", "unexpected \"}\" in direct.conf:3" },
        { "block {\n    block {\n    }\n}\n}\n",
          "unexpected \"}\" in direct.conf:5" },
        { "block {\n    cap a;",
          "unexpected end of file, expecting \"}\" in direct.conf:2" },
        { "block {\n    block {\n    }\n",
          "unexpected end of file, expecting \"}\" in direct.conf:4" },
        { "cap a", "unexpected end of file, expecting \";\" or \"}\" "
                   "in direct.conf:1" },
        { "block {\n    cap a\n",
          "unexpected end of file, expecting \";\" or \"}\" "
          "in direct.conf:3" },
        { "cap \"abc", "unexpected end of file in a quoted string, "
                       "expecting '\"' in direct.conf:1" },
        { "cap 'abc\n", "unexpected end of file in a quoted string, "
                        "expecting \"'\" in direct.conf:2" },
        { "str a {", "directive \"str\" is not terminated by \";\" "
                     "in direct.conf:1" },
        { "str a {\n}", "directive \"str\" is not terminated by \";\" "
                        "in direct.conf:1" },
        { "block;", "directive \"block\" has no opening \"{\" "
                    "in direct.conf:1" },
        { "nope 1;", "unknown directive \"nope\" in direct.conf:1" },
        { "block {\n    nope;\n}",
          "unknown directive \"nope\" in direct.conf:2" },
        { "\"\" 1;", "unknown directive \"\" in direct.conf:1" },
        { "elsewhere 1;", "\"elsewhere\" directive is not allowed here "
                          "in direct.conf:1" },
        { "none x;", "invalid number of arguments in \"none\" directive "
                     "in direct.conf:1" },
        { "str;", "invalid number of arguments in \"str\" directive "
                  "in direct.conf:1" },
        { "str a b;", "invalid number of arguments in \"str\" directive "
                      "in direct.conf:1" },
        { "two a;", "invalid number of arguments in \"two\" directive "
                    "in direct.conf:1" },
        { "two a b c;", "invalid number of arguments in \"two\" directive "
                        "in direct.conf:1" },
        { "opt;", "invalid number of arguments in \"opt\" directive "
                  "in direct.conf:1" },
        { "opt a b c;", "invalid number of arguments in \"opt\" directive "
                        "in direct.conf:1" },
        { "three a b c d;", "invalid number of arguments in \"three\" "
                            "directive in direct.conf:1" },
        { "many a;", "invalid number of arguments in \"many\" directive "
                     "in direct.conf:1" },
        { "cap;", "invalid number of arguments in \"cap\" directive "
                  "in direct.conf:1" },
        { "flag;", "invalid number of arguments in \"flag\" directive "
                   "in direct.conf:1" },
        { "flag on off;", "invalid number of arguments in \"flag\" "
                          "directive in direct.conf:1" },
        { "block x {\n}", "invalid number of arguments in \"block\" "
                          "directive in direct.conf:1" },
        { "cap 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16;",
          "too many arguments in direct.conf:1" },
        { "include a b;", "invalid number of arguments in \"include\" "
                          "directive, expecting one file name or mask "
                          "in direct.conf:1" },
        { "include;", "invalid number of arguments in \"include\" "
                      "directive, expecting one file name or mask "
                      "in direct.conf:1" },
        { "include a {\n}", "directive \"include\" is not terminated by "
                            "\";\" in direct.conf:1" },
    };

    for (i = 0; i < rg_nelems(cases); i++) {
        rg_test_parse_error(cases[i].text, cases[i].error);
    }

    /* the argument counts each type accepts */
    rg_test_parse_ok("none;\ntwo a b;\nopt a;\nopt a b;\nthree a;\n"
                     "three a b;\nthree a b c;\nmany a b;\n"
                     "many a b c d e;\ncap 1 2 3 4 5 6 7 8 9 10 11 12 13 14 "
                     "15;\n");
    assert_int_equal(rg_test_ncaptured, 10);
    assert_int_equal(rg_test_captured[0].nargs, 1);
    assert_int_equal(rg_test_captured[8].nargs, 6);
    assert_int_equal(rg_test_captured[9].nargs, RG_CONF_MAX_ARGS);
    rg_test_str(&rg_test_captured[9].args[15], "15");

    /* nested blocks, and a block's directives see its depth */
    rg_test_parse_ok("block {\n    block {\n        cap in;\n    }\n"
                     "    cap mid;\n}\ncap out;\nblock{}");
    assert_int_equal(rg_test_conf.blocks, 3);
    assert_int_equal(rg_test_ncaptured, 3);

    c = rg_test_captured;
    assert_int_equal(c[0].block, 2);
    assert_int_equal(c[0].line, 3);
    assert_int_equal(c[1].block, 1);
    assert_int_equal(c[1].line, 5);
    assert_int_equal(c[2].block, 0);
    assert_int_equal(c[2].line, 7);
    assert_int_equal(rg_test_cf.block, 0);
}


static void
rg_test_parse_slots(void **state)
{
    rg_str_t  *w;

    /* str */
    rg_test_parse_ok("str hello;");
    rg_test_str(&rg_test_conf.str, "hello");
    rg_test_parse_ok("str '';");
    rg_test_str(&rg_test_conf.str, "");
    rg_test_parse_error("str a;\nstr b;",
                        "\"str\" directive is duplicate in direct.conf:2");

    /* str array: every directive appends */
    rg_test_parse_ok("words a b;\nwords 'c d';");
    assert_non_null(rg_test_conf.words);
    assert_int_equal(rg_test_conf.words->nelts, 3);
    w = rg_test_conf.words->elts;
    rg_test_str(&w[0], "a");
    rg_test_str(&w[1], "b");
    rg_test_str(&w[2], "c d");

    /* num with bounds 1..10 */
    rg_test_parse_ok("num 7;");
    assert_int_equal(rg_test_conf.num, 7);
    rg_test_parse_ok("num 1;");
    assert_int_equal(rg_test_conf.num, 1);
    rg_test_parse_ok("num 10;");
    assert_int_equal(rg_test_conf.num, 10);
    rg_test_parse_error("num 0;", "\"num\" directive expects a number from 1 "
                                  "to 10 in direct.conf:1");
    rg_test_parse_error("num 11;", "\"num\" directive expects a number from "
                                   "1 to 10 in direct.conf:1");
    rg_test_parse_error("num -1;", "\"num\" directive expects a non-negative "
                                   "integer in direct.conf:1");
    rg_test_parse_error("num 1x;", "\"num\" directive expects a non-negative "
                                   "integer in direct.conf:1");
    rg_test_parse_error("num '';", "\"num\" directive expects a non-negative "
                                   "integer in direct.conf:1");
    rg_test_parse_error("num 99999999999999999999999;",
                        "\"num\" directive expects a non-negative integer "
                        "in direct.conf:1");
    rg_test_parse_error("num 1;\n\nnum 1;",
                        "\"num\" directive is duplicate in direct.conf:3");

    /* size */
    rg_test_parse_ok("size 64k;");
    assert_int_equal(rg_test_conf.size, 65536);
    rg_test_parse_ok("size 1m;");
    assert_int_equal(rg_test_conf.size, 1048576);
    rg_test_parse_error("size 12x;", "\"size\" directive expects a size "
                                     "such as 512, 64k or 1m "
                                     "in direct.conf:1");
    rg_test_parse_error("size 1k;\nsize 2k;",
                        "\"size\" directive is duplicate in direct.conf:2");

    /* msec */
    rg_test_parse_ok("msec 1m30s;");
    assert_int_equal(rg_test_conf.msec, 90000);
    rg_test_parse_ok("msec 7;");
    assert_int_equal(rg_test_conf.msec, 7000);
    rg_test_parse_error("msec 5y;", "\"msec\" directive expects a time such "
                                    "as 500ms, 30s, 5m or 1h "
                                    "in direct.conf:1");
    rg_test_parse_error("msec 1s;\nmsec 1s;",
                        "\"msec\" directive is duplicate in direct.conf:2");

    /* flag */
    rg_test_parse_ok("flag on;");
    assert_int_equal(rg_test_conf.flag, 1);
    rg_test_parse_ok("flag off;");
    assert_int_equal(rg_test_conf.flag, 0);
    rg_test_parse_error("flag yes;", "\"flag\" directive expects \"on\" or "
                                     "\"off\" in direct.conf:1");
    rg_test_parse_error("flag ON;", "\"flag\" directive expects \"on\" or "
                                    "\"off\" in direct.conf:1");
    rg_test_parse_error("flag on;\nflag off;",
                        "\"flag\" directive is duplicate in direct.conf:2");

    /* double with bounds 0..2 */
    rg_test_parse_ok("dbl 0.7;");
    assert_true(rg_test_conf.dbl == 0.7);
    rg_test_parse_ok("dbl 2;");
    assert_true(rg_test_conf.dbl == 2.0);
    rg_test_parse_ok("dbl 0;");
    assert_true(rg_test_conf.dbl == 0.0);
    rg_test_parse_error("dbl 2.5;", "\"dbl\" directive expects a number from "
                                    "0 to 2 in direct.conf:1");
    rg_test_parse_error("dbl -0.1;", "\"dbl\" directive expects a number "
                                     "from 0 to 2 in direct.conf:1");
    rg_test_parse_error("dbl x;", "\"dbl\" directive expects a number such "
                                  "as 0.7 in direct.conf:1");
    rg_test_parse_error("dbl 0.7x;", "\"dbl\" directive expects a number "
                                     "such as 0.7 in direct.conf:1");
    rg_test_parse_error("dbl '';", "\"dbl\" directive expects a number such "
                                   "as 0.7 in direct.conf:1");
    rg_test_parse_error("dbl nan;", "\"dbl\" directive expects a number such "
                                    "as 0.7 in direct.conf:1");
    rg_test_parse_error("dbl inf;", "\"dbl\" directive expects a number such "
                                    "as 0.7 in direct.conf:1");
    rg_test_parse_error("dbl 1e400;", "\"dbl\" directive expects a number "
                                      "such as 0.7 in direct.conf:1");
    rg_test_parse_error("dbl 1;\ndbl 1;",
                        "\"dbl\" directive is duplicate in direct.conf:2");

    /* enum */
    rg_test_parse_ok("color green;");
    assert_int_equal(rg_test_conf.color, 2);
    rg_test_parse_ok("color red;");
    assert_int_equal(rg_test_conf.color, 1);
    rg_test_parse_error("color blue;", "\"color\" directive expects one of: "
                                       "\"red\" \"green\" in direct.conf:1");
    rg_test_parse_error("color re;", "\"color\" directive expects one of: "
                                     "\"red\" \"green\" in direct.conf:1");
    rg_test_parse_error("color red;\ncolor red;",
                        "\"color\" directive is duplicate in direct.conf:2");
}


static void
rg_test_size_is(const char *text, size_t expect)
{
    size_t    v;
    rg_str_t  s;

    s.data = (char *) text;
    s.len = strlen(text);
    v = 12345;

    if (rg_conf_parse_size(&s, &v) != RG_OK || v != expect) {
        print_error("size \"%s\": expected %zu, got %zu\n", text, expect, v);
        fail();
    }
}


static void
rg_test_size_bad(const char *text)
{
    size_t    v;
    rg_str_t  s;

    s.data = (char *) text;
    s.len = strlen(text);
    v = 12345;

    if (rg_conf_parse_size(&s, &v) != RG_ERROR || v != 12345) {
        print_error("size \"%s\" should be rejected, got %zu\n", text, v);
        fail();
    }
}


static void
rg_test_msec_is(const char *text, rg_msec_t expect)
{
    rg_str_t   s;
    rg_msec_t  v;

    s.data = (char *) text;
    s.len = strlen(text);
    v = 12345;

    if (rg_conf_parse_msec(&s, &v) != RG_OK || v != expect) {
        print_error("time \"%s\": expected %llu ms, got %llu\n", text,
                    (unsigned long long) expect, (unsigned long long) v);
        fail();
    }
}


static void
rg_test_msec_bad(const char *text)
{
    rg_str_t   s;
    rg_msec_t  v;

    s.data = (char *) text;
    s.len = strlen(text);
    v = 12345;

    if (rg_conf_parse_msec(&s, &v) != RG_ERROR || v != 12345) {
        print_error("time \"%s\" should be rejected, got %llu\n", text,
                    (unsigned long long) v);
        fail();
    }
}


static void
rg_test_parse_sizes(void **state)
{
    rg_str_t  s;
    size_t    v;

    rg_test_size_is("0", 0);
    rg_test_size_is("512", 512);
    rg_test_size_is("64k", 64 * 1024);
    rg_test_size_is("64K", 64 * 1024);
    rg_test_size_is("1m", 1024 * 1024);
    rg_test_size_is("1M", 1024 * 1024);
    rg_test_size_is("2g", (size_t) 2 * 1024 * 1024 * 1024);
    rg_test_size_is("4000", 4000);

    rg_test_size_bad("12x");
    rg_test_size_bad("");
    rg_test_size_bad("k");
    rg_test_size_bad("-1");
    rg_test_size_bad("1.5k");
    rg_test_size_bad("1kk");
    rg_test_size_bad(" 1");
    rg_test_size_bad("1 ");
    rg_test_size_bad("0x10");
    rg_test_size_bad("99999999999999999999");
    rg_test_size_bad("9999999999999g");

    /* only len bytes are read */
    s.data = "64kjunk";
    s.len = 3;
    assert_int_equal(rg_conf_parse_size(&s, &v), RG_OK);
    assert_int_equal(v, 65536);
}


static void
rg_test_parse_times(void **state)
{
    rg_str_t   s;
    rg_msec_t  v;

    rg_test_msec_is("0", 0);
    rg_test_msec_is("500ms", 500);
    rg_test_msec_is("30s", 30000);
    rg_test_msec_is("5m", 5 * 60000);
    rg_test_msec_is("1h", 3600000);
    rg_test_msec_is("1d", 86400000);
    rg_test_msec_is("1m30s", 90000);
    rg_test_msec_is("1h30m", 5400000);
    rg_test_msec_is("2s500ms", 2500);
    rg_test_msec_is("1d1h1m1s1ms", 86400000 + 3600000 + 60000 + 1000 + 1);
    rg_test_msec_is("45", 45000);               /* a bare number: seconds */
    rg_test_msec_is("120", 120000);
    rg_test_msec_is("0ms", 0);
    rg_test_msec_is("10000d", (rg_msec_t) 10000 * 86400000);

    rg_test_msec_bad("5y");
    rg_test_msec_bad("");
    rg_test_msec_bad("ms");
    rg_test_msec_bad("s");
    rg_test_msec_bad("1.5s");
    rg_test_msec_bad("-1s");
    rg_test_msec_bad("5 s");
    rg_test_msec_bad(" 5s");
    rg_test_msec_bad("1M");
    rg_test_msec_bad("1S");
    rg_test_msec_bad("30sx");
    rg_test_msec_bad("1m30x");
    rg_test_msec_bad("99999999999999999999");
    rg_test_msec_bad("999999999999999999d");

    /* only len bytes are read */
    s.data = "30s5y";
    s.len = 3;
    assert_int_equal(rg_conf_parse_msec(&s, &v), RG_OK);
    assert_int_equal(v, 30000);
}


/* the cycle's directives, through rg_test_cycle() ("test.conf") */

static rg_cycle_t *
rg_test_conf_ok_at(const char *text, const char *file, int line)
{
    char         err[512];
    rg_cycle_t  *cycle;

    cycle = rg_test_cycle(err, sizeof(err), "%s", text);

    if (cycle == NULL) {
        print_error("configuration\n%s\nfailed: %s\n", text, err);
        _fail(file, line);
    }

    return cycle;
}


static int
rg_test_conf_mismatch(const char *text, const char *expect)
{
    char         err[512];
    rg_cycle_t  *cycle;

    cycle = rg_test_cycle(err, sizeof(err), "%s", text);

    if (cycle == NULL && strcmp(err, expect) == 0) {
        return 0;
    }

    print_error("configuration\n%s\nexpected error: %s\ngot: %s\n\n", text,
                expect, cycle ? "(accepted)" : err);
    rg_cycle_destroy(cycle);

    return 1;
}


static void
rg_test_conf_error_at(const char *text, const char *expect, const char *file,
    int line)
{
    if (rg_test_conf_mismatch(text, expect)) {
        _fail(file, line);
    }
}


static rg_llm_conf_t *
rg_test_llm(rg_cycle_t *cycle, rg_uint_t i)
{
    assert_true(i < rg_llm_main_conf(cycle)->llms.nelts);

    return ((rg_llm_conf_t **) rg_llm_main_conf(cycle)->llms.elts)[i];
}


static rg_agent_conf_t *
rg_test_agent(rg_cycle_t *cycle, rg_uint_t i)
{
    assert_true(i < rg_agent_main_conf(cycle)->agents.nelts);

    return ((rg_agent_conf_t **) rg_agent_main_conf(cycle)->agents.elts)[i];
}


/* worker_processes auto: one per CPU this process may run on (a
 * container's cpuset), here one once the test keeps itself to one */
static void
rg_test_worker_processes_auto(void **state)
{
    cpu_set_t     all, one;
    rg_cycle_t   *cycle;

    assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);

    cycle = rg_test_conf_ok("worker_processes auto;\n"
                            "llm a { base_url http://127.0.0.1:1/v1; "
                            "model m; }\n"
                            "agent a { }\n");
    assert_int_equal(rg_core_conf(cycle)->worker_processes, CPU_COUNT(&all));
    rg_cycle_destroy(cycle);

    CPU_ZERO(&one);
    for (int i = 0; i < CPU_SETSIZE; i++) {
        if (CPU_ISSET(i, &all)) {
            CPU_SET(i, &one);
            break;
        }
    }
    assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);

    cycle = rg_test_conf_ok("worker_processes auto;\n"
                            "llm a { base_url http://127.0.0.1:1/v1; "
                            "model m; }\n"
                            "agent a { }\n");
    assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
    assert_int_equal(rg_core_conf(cycle)->worker_processes, 1);
    rg_cycle_destroy(cycle);
}


static void
rg_test_cycle_defaults(void **state)
{
    rg_cycle_t       *cycle;
    rg_llm_conf_t    *llm;
    rg_agent_conf_t  *agent;

    cycle = rg_test_conf_ok("llm a {\n"
                            "    base_url http://127.0.0.1:1/v1;\n"
                            "    model m;\n"
                            "}\n"
                            "agent first { }\n"
                            "agent second { }\n");

    assert_int_equal(rg_llm_main_conf(cycle)->llms.nelts, 1);
    assert_int_equal(rg_agent_main_conf(cycle)->agents.nelts, 2);
    assert_int_equal(rg_tools_conf(cycle)->modules.nelts, 0);
    assert_int_equal(rg_tools_conf(cycle)->tools.nelts, 0);
    assert_string_equal(cycle->conf_file, "test.conf");

    assert_int_equal(rg_core_conf(cycle)->concurrency, 64);
    assert_int_equal(rg_core_conf(cycle)->worker_processes, 1);
    assert_int_equal(rg_tools_conf(cycle)->tool_result_limit, 4000);
    assert_int_equal(rg_tools_conf(cycle)->pool_threads, 4);
    assert_int_equal(rg_tools_conf(cycle)->pool_max_queue, 65536);
    assert_int_equal(rg_agent_main_conf(cycle)->max_agent_depth, 3);
    assert_int_equal(rg_tools_conf(cycle)->isolated_helpers, 4);
    rg_test_str(&rg_agent_main_conf(cycle)->default_agent, "first");
    assert_ptr_equal(cycle->log, &cycle->new_log);
    assert_int_equal(cycle->new_log.fd, STDERR_FILENO);

    llm = rg_test_llm(cycle, 0);
    rg_test_str(&llm->name, "a");
    rg_test_str(&llm->base_url, "http://127.0.0.1:1/v1");
    rg_test_str(&llm->model, "m");
    assert_null(llm->api_key_env.data);
    assert_int_equal(llm->timeout, 120000);
    assert_int_equal(llm->connect_timeout, 10000);
    assert_int_equal(llm->idle_timeout, 60000);
    assert_int_equal(llm->max_connections, 1024);
    assert_int_equal(llm->max_retries, 4);
    assert_int_equal(llm->retry_base, 500);
    assert_int_equal(llm->retry_max, 30000);
    assert_true(llm->temperature == 0.0);
    assert_int_equal(llm->buffer_size, 4096);
    assert_null(llm->fallback_name.data);
    assert_null(llm->fallback);
    assert_int_equal(llm->requests_per_minute, 0);
    assert_int_equal(llm->tokens_per_minute, 0);
    assert_int_equal(llm->retry_budget, 120000);
    assert_int_equal(llm->stream, 0);
    assert_string_equal(llm->url, "http://127.0.0.1:1/v1/chat/completions");
    assert_null(llm->auth);
    assert_string_equal(llm->file, "test.conf");
    assert_int_equal(llm->line, 1);
    assert_ptr_equal(rg_llm_find(cycle, "a", 1), llm);
    assert_null(rg_llm_find(cycle, "b", 1));

    agent = rg_test_agent(cycle, 0);
    rg_test_str(&agent->name, "first");
    assert_null(agent->llm_name.data);
    assert_ptr_equal(agent->llm, llm);            /* the only llm */
    assert_null(agent->system_prompt.data);
    assert_null(agent->tool_names);
    assert_int_equal(agent->max_rounds, 8);
    assert_int_equal(agent->toolset.timeout, 30000);
    assert_null(agent->tool_timeout_names);
    assert_null(agent->toolset.timeouts);
    assert_null(agent->toolset.approve);
    assert_true(agent->temperature == 0.0);
    assert_int_equal(agent->max_tokens, 0);
    assert_int_equal(agent->deadline, 0);
    assert_int_equal(agent->tool_max_calls, 0);
    assert_null(agent->tool_cap_names);
    assert_int_equal(agent->repeat_window, 2);
    assert_int_equal(agent->repeat_limit, 3);
    assert_int_equal(agent->dedupe, RG_DEDUPE_SESSION);
    assert_int_equal(agent->dedupe_ttl, 600000);
    assert_int_equal(agent->context_limit, 0);
    assert_true(agent->context_threshold == 0.8);
    assert_int_equal(agent->keep_rounds, 2);
    assert_int_equal(agent->context_summarize, 0);
    assert_int_equal(agent->toolset.ntools, 0);
    assert_string_equal(agent->toolset.tool_list, "");
    assert_null(agent->system_msg);
    assert_string_equal(agent->prefix,
                        "{\"model\":\"m\",\"temperature\":0,"
                        "\"messages\":[");
    assert_int_equal(agent->prefix_len, strlen(agent->prefix));
    assert_string_equal(agent->file, "test.conf");
    assert_int_equal(agent->line, 5);

    assert_ptr_equal(rg_agent_find(cycle, "second", 6),
                     rg_test_agent(cycle, 1));
    assert_int_equal(rg_test_agent(cycle, 1)->line, 6);
    assert_null(rg_agent_find(cycle, "third", 5));
    assert_null(rg_agent_find(cycle, "firs", 4));

    rg_cycle_destroy(cycle);
}


/* queue { }: its defaults, each directive, and what it refuses, each
 * error at the block's line (the rules between directives) or at the
 * directive's (its own bounds) */
static void
rg_test_cycle_queue(void **state)
{
    rg_uint_t         i, failed;
    rg_cycle_t       *cycle;
    rg_queue_conf_t  *qcf;

/* an llm, an agent (lines 1 and 2), the store (line 3) */
#define RG_TEST_REDIS  RG_TEST_LLM RG_TEST_AGENT                              \
                       "store redis { server 127.0.0.1:1; }\n"

    static const struct {
        const char  *text;
        const char  *error;
    } cases[] = {
        { RG_TEST_REDIS "queue {\n    claim_idle 2s;\n    block 2s;\n}\n",
          "queue: \"claim_idle\" must be at least 1s and longer than "
          "\"block\" in test.conf:4" },
        { RG_TEST_REDIS "queue {\n    claim_idle 1s;\n}\n",
          "queue: \"claim_idle\" must be at least 1s and longer than "
          "\"block\" in test.conf:4" },
        { RG_TEST_REDIS "lease_ttl 300ms;\n"
          "queue { claim_idle 999ms; block 10ms; }\n",
          "queue: \"claim_idle\" must be at least 1s and longer than "
          "\"block\" in test.conf:5" },
        { RG_TEST_REDIS "queue { block 9ms; }\n",
          "queue: \"claim_idle\" must be at least 1s and longer than "
          "\"block\" in test.conf:4" },
        { RG_TEST_REDIS "queue { claim_idle 15s; }\n",
          "queue: \"claim_idle\" (15s) must be longer than \"lease_ttl\" "
          "(15s): a task is taken over only once its worker's lease on it "
          "has expired in test.conf:4" },
        { RG_TEST_LLM RG_TEST_AGENT "queue { }\n",
          "\"queue { }\" needs \"store redis { }\": the queue is a Redis "
          "Stream in test.conf:3" },
        { RG_TEST_REDIS "queue { stream a:b; }\n",
          "queue: \"stream\" and \"group\" must be names of 1 to 64 "
          "letters, digits and ._- in test.conf:4" },
        { RG_TEST_REDIS "queue { group \"\"; }\n",
          "queue: \"stream\" and \"group\" must be names of 1 to 64 "
          "letters, digits and ._- in test.conf:4" },
        { RG_TEST_REDIS "queue {\n    shards 0;\n}\n",
          "\"shards\" directive expects a number from 1 to 1024 "
          "in test.conf:5" },
        { RG_TEST_REDIS "queue {\n    shards 1025;\n}\n",
          "\"shards\" directive expects a number from 1 to 1024 "
          "in test.conf:5" },
        { RG_TEST_REDIS "queue {\n    max_deliveries 0;\n}\n",
          "\"max_deliveries\" directive expects a number from 1 to 1000 "
          "in test.conf:5" },
        { RG_TEST_REDIS "queue {\n    results_max 99;\n}\n",
          "\"results_max\" directive expects a number from 100 to "
          "100000000 in test.conf:5" },
        { RG_TEST_REDIS "queue {\n    claim_idle soon;\n}\n",
          "\"claim_idle\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:5" },
        { RG_TEST_REDIS "queue { }\nqueue { }\n",
          "\"queue\" directive is duplicate in test.conf:5" },
        { RG_TEST_REDIS "queue { shards 2; shards 3; }\n",
          "\"shards\" directive is duplicate in test.conf:4" },
        { RG_TEST_REDIS "shards 2;\n",
          "\"shards\" directive is not allowed here in test.conf:4" },
    };

    /* no block: no queue, and the defaults (what submit would use) */
    cycle = rg_test_conf_ok(RG_TEST_LLM RG_TEST_AGENT);
    qcf = rg_queue_conf(cycle);
    assert_int_equal(qcf->declared, 0);
    rg_test_str(&qcf->stream, "tasks");
    rg_test_str(&qcf->group, "workers");
    assert_int_equal(qcf->shards, 1);
    assert_int_equal(qcf->claim_idle, 30000);
    assert_int_equal(qcf->max_deliveries, 5);
    assert_int_equal(qcf->block, 2000);
    assert_int_equal(qcf->results_max, 100000);
    rg_cycle_destroy(cycle);

    /* an empty block: a queue with the same defaults */
    cycle = rg_test_conf_ok(RG_TEST_REDIS "queue { }\n");
    qcf = rg_queue_conf(cycle);
    assert_int_equal(qcf->declared, 1);
    assert_int_equal(qcf->line, 4);
    rg_test_str(&qcf->stream, "tasks");
    rg_test_str(&qcf->group, "workers");
    assert_int_equal(qcf->shards, 1);
    assert_int_equal(qcf->claim_idle, 30000);
    assert_int_equal(qcf->max_deliveries, 5);
    assert_int_equal(qcf->block, 2000);
    assert_int_equal(qcf->results_max, 100000);
    rg_cycle_destroy(cycle);

    /* every directive, at the edges of what is taken */
    cycle = rg_test_conf_ok(RG_TEST_REDIS
                            "lease_ttl 300ms;\n"
                            "queue {\n"
                            "    stream jobs.v-2_x;\n"
                            "    group fleet;\n"
                            "    shards 1024;\n"
                            "    claim_idle 1s;\n"
                            "    max_deliveries 1000;\n"
                            "    block 999ms;\n"
                            "    results_max 100;\n"
                            "}\n");
    qcf = rg_queue_conf(cycle);
    assert_int_equal(qcf->declared, 1);
    rg_test_str(&qcf->stream, "jobs.v-2_x");
    rg_test_str(&qcf->group, "fleet");
    assert_int_equal(qcf->shards, 1024);
    assert_int_equal(qcf->claim_idle, 1000);
    assert_int_equal(qcf->max_deliveries, 1000);
    assert_int_equal(qcf->block, 999);
    assert_int_equal(qcf->results_max, 100);
    rg_cycle_destroy(cycle);

    failed = 0;

    for (i = 0; i < rg_nelems(cases); i++) {
        failed += rg_test_conf_mismatch(cases[i].text, cases[i].error);
    }

    assert_int_equal(failed, 0);

#undef RG_TEST_REDIS
}


/* an agent's request prefix starts with start and ends where the
 * messages begin: after the tools, or after the stream options */
static void
rg_test_prefix_end(const char *prefix, size_t len, const char *start,
    const char *end);

static void
rg_test_prefix(const char *prefix, size_t len, const char *start)
{
    rg_test_prefix_end(prefix, len, start, "}],\"messages\":[");
}


static void
rg_test_prefix_end(const char *prefix, size_t len, const char *start,
    const char *end)
{
    assert_int_equal(strlen(prefix), len);
    assert_true(len > strlen(start) + strlen(end));

    if (strncmp(prefix, start, strlen(start)) != 0
        || strcmp(prefix + len - strlen(end), end) != 0)
    {
        print_error("prefix %s\nshould start with %s\nand end with %s\n",
                    prefix, start, end);
        fail();
    }
}


static void
rg_test_cycle_all_directives(void **state)
{
    char              err[512], path[256];
    rg_str_t         *names;
    rg_cycle_t       *cycle;
    rg_llm_conf_t    *llm_main, *llm_other;
    rg_agent_conf_t  *first, *second;

    setenv(RG_TEST_KEY_VAR, RG_TEST_SECRET, 1);

    snprintf(path, sizeof(path), "%s/all-directives.log", rg_test_tmpdir());
    unlink(path);

    cycle = rg_test_cycle(err, sizeof(err),
        "error_log %s info;\n"                          /* 1 */
        "concurrency 16;\n"
        "worker_processes 3;\n"
        "tool_result_limit 2k;\n"
        "default_agent second;\n"                       /* 5 */
        "load_module %s/modules/calc.so;\n"
        "load_module %s/modules/time.so;\n"
        "thread_pool default threads=8 max_queue=100; isolated_helpers 2; "
            "max_agent_depth 0;\n"
        "llm main {\n"                                  /* 9 */
        "    base_url https://api.example.com/v1//;\n"
        "    api_key_env " RG_TEST_KEY_VAR ";\n"
        "    model gpt-test; fallback other; stream on;\n"
        "    timeout 90s;\n"
        "    connect_timeout 1500ms;\n"
        "    idle_timeout 1m30s;\n"
        "    max_connections 32;\n"
        "    max_retries 0; requests_per_minute 600;\n"
        "    retry_base 250ms; tokens_per_minute 90000;\n"
        "    retry_max 1m; retry_budget 3m;\n"
        "    temperature 0.5;\n"
        "    buffer_size 16k;\n"
        "}\n"
        "\n"
        "llm other {\n"                                 /* 24 */
        "    base_url HTTP://127.0.0.1:9;\n"
        "    model small;\n"
        "    temperature 1.5;\n"
        "}\n"
        "\n"
        "agent first {\n"                               /* 30 */
        "    llm main; max_tokens 5000; deadline 90s;\n"
        "    system_prompt \"Be \\\"brief\\\".\";\n"
        "    tools calc; tool_max_calls 4; tool_max_calls calc 2;\n"
        "    tools time_now; repeat_window 5; repeat_limit 6;\n"
        "    max_rounds 3; approve time_now;\n"
        "    tool_timeout 2s; tool_timeout calc 500ms;\n"
        "    temperature 0.25; dedupe global; dedupe_ttl 1h;\n"
        "    context_limit 32000; context_threshold 0.5; keep_rounds 4; "
            "context_summarize on;\n"
        "}\n"
        "\n"
        "agent second {\n"                              /* 41 */
        "    llm other; dedupe off;\n"
        "    system_prompt one   two\tthree;\n"
        "    tools time_now;\n"
        "}\n",
        path, rg_test_build_dir(), rg_test_build_dir());

    if (cycle == NULL) {
        print_error("%s\n", err);
        fail();
    }

    assert_int_equal(rg_core_conf(cycle)->concurrency, 16);
    assert_int_equal(rg_core_conf(cycle)->worker_processes, 3);
    assert_int_equal(rg_tools_conf(cycle)->tool_result_limit, 2048);
    assert_int_equal(rg_tools_conf(cycle)->pool_threads, 8);
    assert_int_equal(rg_tools_conf(cycle)->pool_max_queue, 100);
    assert_int_equal(rg_tools_conf(cycle)->isolated_helpers, 2);
    assert_int_equal(rg_agent_main_conf(cycle)->max_agent_depth, 0);
    rg_test_str(&rg_agent_main_conf(cycle)->default_agent, "second");
    assert_int_equal(rg_tools_conf(cycle)->modules.nelts, 2);
    assert_int_equal(rg_tools_conf(cycle)->tools.nelts, 2);

    /* error_log: the file, at level info, is the cycle's log */
    assert_ptr_equal(cycle->log, &cycle->new_log);
    assert_int_not_equal(cycle->new_log.fd, STDERR_FILENO);
    assert_true(cycle->new_log.fd >= 0);
    assert_int_equal(cycle->new_log.log_level, RG_LOG_INFO);
    assert_int_equal(access(path, F_OK), 0);

    assert_int_equal(rg_llm_main_conf(cycle)->llms.nelts, 2);
    llm_main = rg_test_llm(cycle, 0);
    llm_other = rg_test_llm(cycle, 1);

    rg_test_str(&llm_main->name, "main");
    rg_test_str(&llm_main->base_url, "https://api.example.com/v1//");
    rg_test_str(&llm_main->api_key_env, RG_TEST_KEY_VAR);
    rg_test_str(&llm_main->model, "gpt-test");
    assert_int_equal(llm_main->timeout, 90000);
    assert_int_equal(llm_main->connect_timeout, 1500);
    assert_int_equal(llm_main->idle_timeout, 90000);
    assert_int_equal(llm_main->max_connections, 32);
    assert_int_equal(llm_main->max_retries, 0);
    assert_int_equal(llm_main->retry_base, 250);
    assert_int_equal(llm_main->retry_max, 60000);
    assert_true(llm_main->temperature == 0.5);
    assert_int_equal(llm_main->buffer_size, 16384);
    rg_test_str(&llm_main->fallback_name, "other");
    assert_int_equal(llm_main->requests_per_minute, 600);
    assert_int_equal(llm_main->tokens_per_minute, 90000);
    assert_int_equal(llm_main->retry_budget, 180000);
    assert_int_equal(llm_main->stream, 1);
    assert_string_equal(llm_main->url,
                        "https://api.example.com/v1/chat/completions");
    assert_string_equal(llm_main->auth,
                        "Authorization: Bearer " RG_TEST_SECRET);

    assert_ptr_equal(llm_main->fallback, llm_other);

    rg_test_str(&llm_other->name, "other");
    assert_null(llm_other->fallback);
    assert_int_equal(llm_other->stream, 0);
    assert_int_equal(llm_other->retry_budget, 120000);
    assert_string_equal(llm_other->url, "HTTP://127.0.0.1:9/chat/completions");
    assert_null(llm_other->auth);
    assert_true(llm_other->temperature == 1.5);
    assert_int_equal(llm_other->timeout, 120000);
    assert_int_equal(llm_other->max_retries, 4);
    assert_int_equal(llm_other->buffer_size, 4096);
    assert_int_equal(llm_other->line, 24);

    assert_int_equal(rg_agent_main_conf(cycle)->agents.nelts, 2);
    first = rg_test_agent(cycle, 0);
    second = rg_test_agent(cycle, 1);

    rg_test_str(&first->name, "first");
    rg_test_str(&first->llm_name, "main");
    assert_ptr_equal(first->llm, llm_main);
    rg_test_str(&first->system_prompt, "Be \"brief\".");
    assert_int_equal(first->tool_names->nelts, 2);
    names = first->tool_names->elts;
    rg_test_str(&names[0], "calc");
    rg_test_str(&names[1], "time_now");
    assert_int_equal(first->max_rounds, 3);
    assert_int_equal(first->toolset.timeout, 2000);
    assert_true(first->temperature == 0.25);
    assert_int_equal(first->max_tokens, 5000);
    assert_int_equal(first->deadline, 90000);
    assert_int_equal(first->tool_max_calls, 4);
    assert_int_equal(first->tool_caps[0], 2);           /* calc */
    assert_int_equal(first->tool_caps[1], 4);           /* the agent's */
    assert_int_equal(first->repeat_window, 5);
    assert_int_equal(first->repeat_limit, 6);
    assert_int_equal(first->dedupe, RG_DEDUPE_GLOBAL);
    assert_int_equal(first->dedupe_ttl, 3600000);
    assert_int_equal(first->context_limit, 32000);
    assert_true(first->context_threshold == 0.5);
    assert_int_equal(first->keep_rounds, 4);
    assert_int_equal(first->context_summarize, 1);
    assert_int_equal(first->toolset.ntools, 2);
    assert_ptr_equal(first->toolset.tools[0],
                     rg_module_find_tool(cycle, "calc", 4));
    assert_ptr_equal(first->toolset.tools[1],
                     rg_module_find_tool(cycle, "time_now", 8));
    assert_string_equal(first->toolset.tool_list, "calc, time_now");
    assert_non_null(first->toolset.timeouts);
    assert_int_equal(first->toolset.timeouts[0], 500);     /* calc */
    assert_int_equal(first->toolset.timeouts[1], 0);       /* the agent's */
    assert_int_equal(first->toolset.approve->nelts, 1);
    rg_test_str((rg_str_t *) first->toolset.approve->elts, "time_now");
    assert_string_equal(first->system_msg,
                        "{\"role\":\"system\",\"content\":"
                        "\"Be \\\"brief\\\".\"}");
    assert_int_equal(first->system_msg_len, strlen(first->system_msg));
    /* its llm streams: the stream options close the prefix */
    rg_test_prefix_end(first->prefix, first->prefix_len,
                       "{\"model\":\"gpt-test\",\"temperature\":0.25,"
                       "\"tool_choice\":\"auto\",\"tools\":[{\"type\":"
                       "\"function\",\"function\":{\"name\":\"calc\",",
                       "}}],\"stream\":true,\"stream_options\":"
                       "{\"include_usage\":true},\"messages\":[");
    assert_non_null(strstr(first->prefix, "},{\"type\":\"function\","
                                          "\"function\":{\"name\":"
                                          "\"time_now\","));
    assert_int_equal(first->line, 30);
    assert_int_equal(llm_main->line, 9);

    rg_test_str(&second->name, "second");
    assert_ptr_equal(second->llm, llm_other);
    rg_test_str(&second->system_prompt, "one two three");
    assert_int_equal(second->max_rounds, 8);
    assert_int_equal(second->toolset.timeout, 30000);
    assert_null(second->toolset.timeouts);
    assert_null(second->toolset.approve);
    assert_int_equal(second->dedupe, RG_DEDUPE_OFF);
    assert_int_equal(second->tool_max_calls, 0);
    assert_int_equal(second->tool_caps[0], 0);
    assert_int_equal(second->repeat_limit, 3);
    assert_true(second->temperature == 1.5);      /* the llm's */
    assert_int_equal(second->toolset.ntools, 1);
    assert_string_equal(second->toolset.tool_list, "time_now");
    assert_string_equal(second->system_msg,
                        "{\"role\":\"system\",\"content\":"
                        "\"one two three\"}");
    rg_test_prefix(second->prefix, second->prefix_len,
                   "{\"model\":\"small\",\"temperature\":1.5,"
                   "\"tool_choice\":\"auto\",\"tools\":[{\"type\":"
                   "\"function\",\"function\":{\"name\":\"time_now\",");
    assert_int_equal(second->line, 41);

    rg_cycle_destroy(cycle);
    unlink(path);
}


/* the sizes and times of the examples, through directives */
static void
rg_test_cycle_units(void **state)
{
    rg_uint_t        i;
    rg_cycle_t      *cycle;
    rg_llm_conf_t   *llm;
    char             text[512];

    static const struct {
        const char  *text;
        rg_msec_t    msec;
    } times[] = {
        { "500ms", 500 }, { "30s", 30000 }, { "5m", 300000 },
        { "1h", 3600000 }, { "1d", 86400000 }, { "1m30s", 90000 },
        { "45", 45000 }, { "'2s'", 2000 }, { "\"1s500ms\"", 1500 }
    };

    static const struct {
        const char  *text;
        size_t       size;
    } sizes[] = {
        { "1024", 1024 }, { "1k", 1024 }, { "64k", 65536 },
        { "512k", 524288 }, { "\"8k\"", 8192 }
    };

    for (i = 0; i < rg_nelems(times); i++) {
        snprintf(text, sizeof(text),
                 "llm a {\n"
                 "    base_url http://h;\n"
                 "    model m;\n"
                 "    timeout %s;\n"
                 "    connect_timeout %s;\n"
                 "    idle_timeout %s;\n"
                 "    retry_base %s;\n"
                 "    retry_max %s;\n"
                 "}\n"
                 "agent x {\n"
                 "    tool_timeout %s;\n"
                 "}\n",
                 times[i].text, times[i].text, times[i].text, times[i].text,
                 times[i].text, times[i].text);

        cycle = rg_test_conf_ok(text);
        llm = rg_test_llm(cycle, 0);
        assert_int_equal(llm->timeout, times[i].msec);
        assert_int_equal(llm->connect_timeout, times[i].msec);
        assert_int_equal(llm->idle_timeout, times[i].msec);
        assert_int_equal(llm->retry_base, times[i].msec);
        assert_int_equal(llm->retry_max, times[i].msec);
        assert_int_equal(rg_test_agent(cycle, 0)->toolset.timeout,
                         times[i].msec);
        rg_cycle_destroy(cycle);
    }

    for (i = 0; i < rg_nelems(sizes); i++) {
        snprintf(text, sizeof(text),
                 "tool_result_limit %s;\n"
                 "llm a { base_url http://h; model m; buffer_size %s; }\n"
                 "agent x { }\n", sizes[i].text, sizes[i].text);

        cycle = rg_test_conf_ok(text);
        assert_int_equal(rg_tools_conf(cycle)->tool_result_limit,
                         sizes[i].size);
        assert_int_equal(rg_test_llm(cycle, 0)->buffer_size, sizes[i].size);
        rg_cycle_destroy(cycle);
    }
}


/* a tenant's budget: tokens with k or m, "per" and a window */
static void
rg_test_cycle_tenant_budget(void **state)
{
    rg_uint_t              i;
    rg_cycle_t            *cycle;
    rg_agent_main_conf_t  *amcf;
    char                   text[512];

    static const struct {
        const char  *text;
        rg_int_t     tokens;
        rg_msec_t    window;
    } budgets[] = {
        { "1m per 1d", 1000000, 86400000 },
        { "500k per 1h", 500000, 3600000 },
        { "1.5M per 12h", 1500000, 43200000 },
        { "2K per 30m", 2000, 1800000 },
        { "2500 per 1s", 2500, 1000 }
    };

    cycle = rg_test_conf_ok(RG_TEST_LLM "agent x { }\n");
    assert_int_equal(rg_agent_main_conf(cycle)->tenant_max_tokens, 0);
    rg_cycle_destroy(cycle);

    for (i = 0; i < rg_nelems(budgets); i++) {
        snprintf(text, sizeof(text), "tenant_max_tokens %s;\n"
                 RG_TEST_LLM "agent x { }\n", budgets[i].text);

        cycle = rg_test_conf_ok(text);
        amcf = rg_agent_main_conf(cycle);
        assert_int_equal(amcf->tenant_max_tokens, budgets[i].tokens);
        assert_int_equal(amcf->tenant_window, budgets[i].window);
        rg_cycle_destroy(cycle);
    }
}


static void
rg_test_cycle_error_log(void **state)
{
    int          fd, before;
    char         err[512], path[256], text[512];
    rg_uint_t    i;
    rg_cycle_t  *cycle;

    static const struct {
        const char  *name;
        rg_uint_t    level;
    } levels[] = {
        { "emerg", RG_LOG_EMERG }, { "alert", RG_LOG_ALERT },
        { "crit", RG_LOG_CRIT }, { "error", RG_LOG_ERR },
        { "warn", RG_LOG_WARN }, { "notice", RG_LOG_NOTICE },
        { "info", RG_LOG_INFO }, { "debug", RG_LOG_DEBUG }
    };

    for (i = 0; i < rg_nelems(levels); i++) {
        snprintf(text, sizeof(text), "error_log stderr %s;\n" RG_TEST_LLM
                 RG_TEST_AGENT, levels[i].name);
        cycle = rg_test_conf_ok(text);
        assert_int_equal(cycle->log->fd, STDERR_FILENO);
        assert_int_equal(cycle->log->log_level, levels[i].level);
        rg_cycle_destroy(cycle);
    }

    /* without a level: notice */
    cycle = rg_test_conf_ok("error_log stderr;\n" RG_TEST_LLM RG_TEST_AGENT);
    assert_int_equal(cycle->log->log_level, RG_LOG_NOTICE);
    rg_cycle_destroy(cycle);

    /* a file: opened while parsing, closed with the cycle; the last
     * error_log wins and the one before is closed at once */
    snprintf(path, sizeof(path), "%s/error.log", rg_test_tmpdir());
    unlink(path);

    before = open("/dev/null", O_RDONLY);
    assert_true(before >= 0);
    close(before);

    cycle = rg_test_cycle(err, sizeof(err),
                          "error_log %s debug;\n"
                          "error_log %s warn;\n" RG_TEST_LLM RG_TEST_AGENT,
                          path, path);
    assert_non_null(cycle);
    assert_int_equal(access(path, F_OK), 0);
    fd = cycle->log->fd;
    assert_int_not_equal(fd, STDERR_FILENO);
    assert_int_equal(cycle->log->log_level, RG_LOG_WARN);
    assert_int_equal(fcntl(before, F_GETFD), -1);  /* the first one */
    assert_true(fcntl(fd, F_GETFD) != -1);

    rg_log_error(RG_LOG_WARN, cycle->log, 0, "a line for the file");
    rg_cycle_destroy(cycle);

    assert_int_equal(fcntl(fd, F_GETFD), -1);
    assert_int_equal(errno, EBADF);

    /* a cycle that fails after error_log leaks no descriptor */
    rg_test_conf_error("error_log /dev/null;\nbogus;",
                       "unknown directive \"bogus\" in test.conf:2");
    rg_test_conf_error("error_log /dev/null;\nllm a { model m; }\n"
                       RG_TEST_AGENT,
                       "llm \"a\" has no \"base_url\" in test.conf:2");

    fd = open("/dev/null", O_RDONLY);
    assert_int_equal(fd, before);
    close(fd);

    text[0] = '\0';
    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_true(read(fd, text, sizeof(text) - 1) > 0);
    close(fd);
    assert_non_null(strstr(text, "[warn] "));
    assert_non_null(strstr(text, "a line for the file\n"));

    unlink(path);
}


/* every error the cycle reports, whole */
static void
rg_test_cycle_errors(void **state)
{
    rg_uint_t  i, failed;

    static const rg_test_case_t  cases[] = {

        /* structure */
        { "bogus 1;\n", "unknown directive \"bogus\" in test.conf:1" },
        { RG_TEST_LLM "agent x {\n    bogus;\n}\n",
          "unknown directive \"bogus\" in test.conf:3" },
        { RG_TEST_LLM RG_TEST_AGENT "concurrency 1 2;\n",
          "invalid number of arguments in \"concurrency\" directive "
          "in test.conf:3" },
        { RG_TEST_LLM RG_TEST_AGENT "llm { }\n",
          "invalid number of arguments in \"llm\" directive in test.conf:3" },
        { RG_TEST_LLM RG_TEST_AGENT "agent y z { }\n",
          "invalid number of arguments in \"agent\" directive "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    system_prompt;\n}\n",
          "invalid number of arguments in \"system_prompt\" directive "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    tools;\n}\n",
          "invalid number of arguments in \"tools\" directive "
          "in test.conf:3" },
        { "error_log;\n", "invalid number of arguments in \"error_log\" "
                          "directive in test.conf:1" },
        { "error_log stderr info x;\n", "invalid number of arguments in "
                                        "\"error_log\" directive "
                                        "in test.conf:1" },
        { RG_TEST_LLM RG_TEST_AGENT "default_agent x",
          "unexpected end of file, expecting \";\" or \"}\" "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    llm a {\n    }\n}\n",
          "directive \"llm\" is not terminated by \";\" in test.conf:3" },
        { RG_TEST_LLM "agent x;\n",
          "directive \"agent\" has no opening \"{\" in test.conf:2" },
        { "llm a base_url http://h;\n",
          "directive \"llm\" has no opening \"{\" in test.conf:1" },
        { RG_TEST_LLM RG_TEST_AGENT "}\n",
          "unexpected \"}\" in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_rounds 2;",
          "unexpected end of file, expecting \"}\" in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_rounds 2 }\n",
          "unexpected \"}\" in test.conf:3" },
        { RG_TEST_LLM RG_TEST_AGENT ";\n",
          "unexpected \";\" in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    system_prompt \"abc;\n}\n",
          "unexpected end of file in a quoted string, expecting '\"' "
          "in test.conf:5" },
        { RG_TEST_LLM "agent x {\n    system_prompt \"a\"b;\n}\n",
          "unexpected \"b\" in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    system_prompt a\"b\";\n}\n",
          "unexpected quote inside a word in test.conf:3" },

        /* duplicates */
        { RG_TEST_LLM "agent x {\n    max_rounds 2;\n    max_rounds 3;\n}\n",
          "\"max_rounds\" directive is duplicate in test.conf:4" },
        { "llm a {\n    base_url http://h;\n    base_url http://h;\n}\n",
          "\"base_url\" directive is duplicate in test.conf:3" },
        { "llm a {\n    model m;\n    model m;\n}\n",
          "\"model\" directive is duplicate in test.conf:3" },
        { "llm a {\n    api_key_env A;\n    api_key_env B;\n}\n",
          "\"api_key_env\" directive is duplicate in test.conf:3" },
        { "llm a {\n    timeout 1s;\n    timeout 1s;\n}\n",
          "\"timeout\" directive is duplicate in test.conf:3" },
        { "llm a {\n    connect_timeout 1s;\n    connect_timeout 2s;\n}\n",
          "\"connect_timeout\" directive is duplicate in test.conf:3" },
        { "llm a {\n    idle_timeout 1s;\n    idle_timeout 2s;\n}\n",
          "\"idle_timeout\" directive is duplicate in test.conf:3" },
        { "llm a {\n    max_connections 1;\n    max_connections 1;\n}\n",
          "\"max_connections\" directive is duplicate in test.conf:3" },
        { "llm a {\n    max_retries 1;\n    max_retries 1;\n}\n",
          "\"max_retries\" directive is duplicate in test.conf:3" },
        { "llm a {\n    retry_base 1s;\n    retry_base 1s;\n}\n",
          "\"retry_base\" directive is duplicate in test.conf:3" },
        { "llm a {\n    retry_max 1s;\n    retry_max 1s;\n}\n",
          "\"retry_max\" directive is duplicate in test.conf:3" },
        { "llm a {\n    temperature 0;\n    temperature 0;\n}\n",
          "\"temperature\" directive is duplicate in test.conf:3" },
        { "llm a {\n    buffer_size 8k;\n    buffer_size 8k;\n}\n",
          "\"buffer_size\" directive is duplicate in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    llm a;\n    llm a;\n}\n",
          "\"llm\" directive is duplicate in test.conf:4" },
        { RG_TEST_LLM "agent x {\n    system_prompt a;\n"
          "    system_prompt b;\n}\n",
          "\"system_prompt\" directive is duplicate in test.conf:4" },
        { RG_TEST_LLM "agent x {\n    tool_timeout 1s;\n"
          "    tool_timeout 1s;\n}\n",
          "\"tool_timeout\" directive is duplicate in test.conf:4" },
        { RG_TEST_LLM "agent x {\n    temperature 1;\n"
          "    temperature 1;\n}\n",
          "\"temperature\" directive is duplicate in test.conf:4" },
        { "concurrency 1;\nconcurrency 2;\n",
          "\"concurrency\" directive is duplicate in test.conf:2" },
        { "worker_processes 1;\nworker_processes 2;\n",
          "\"worker_processes\" directive is duplicate in test.conf:2" },
        { "tool_result_limit 1k;\ntool_result_limit 2k;\n",
          "\"tool_result_limit\" directive is duplicate in test.conf:2" },
        { "default_agent x;\ndefault_agent x;\n",
          "\"default_agent\" directive is duplicate in test.conf:2" },
        { RG_TEST_LLM "llm a { base_url http://h; model m; }\n",
          "\"llm\" directive is duplicate: an llm of that name exists "
          "in test.conf:2" },
        { RG_TEST_LLM RG_TEST_AGENT "agent x {\n}\n",
          "\"agent\" directive is duplicate: an agent of that name exists "
          "in test.conf:3" },

        /* bounds and values */
        { RG_TEST_LLM "agent x {\n    max_rounds 0;\n}\n",
          "\"max_rounds\" directive expects a number from 1 to 10000 "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_rounds 10001;\n}\n",
          "\"max_rounds\" directive expects a number from 1 to 10000 "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_rounds -1;\n}\n",
          "\"max_rounds\" directive expects a non-negative integer "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_rounds many;\n}\n",
          "\"max_rounds\" directive expects a non-negative integer "
          "in test.conf:3" },
        { "llm a {\n    temperature 3;\n}\n",
          "\"temperature\" directive expects a number from 0 to 2 "
          "in test.conf:2" },
        { "llm a {\n    temperature 2.01;\n}\n",
          "\"temperature\" directive expects a number from 0 to 2 "
          "in test.conf:2" },
        { "llm a {\n    temperature -1;\n}\n",
          "\"temperature\" directive expects a number from 0 to 2 "
          "in test.conf:2" },
        { "llm a {\n    temperature hot;\n}\n",
          "\"temperature\" directive expects a number such as 0.7 "
          "in test.conf:2" },
        { RG_TEST_LLM "agent x {\n    temperature 3;\n}\n",
          "\"temperature\" directive expects a number from 0 to 2 "
          "in test.conf:3" },
        { "llm a {\n    max_retries 101;\n}\n",
          "\"max_retries\" directive expects a number from 0 to 100 "
          "in test.conf:2" },
        { "llm a {\n    max_connections 0;\n}\n",
          "\"max_connections\" directive expects a number from 1 to 1000000 "
          "in test.conf:2" },
        { "concurrency 0;\n",
          "\"concurrency\" directive expects a number from 1 to 1000000 "
          "in test.conf:1" },
        { "concurrency 1000001;\n",
          "\"concurrency\" directive expects a number from 1 to 1000000 "
          "in test.conf:1" },
        { "worker_processes 0;\n",
          "\"worker_processes\" directive expects a number from 1 to 1024 "
          "in test.conf:1" },
        { "max_agent_depth 17;\n",
          "\"max_agent_depth\" directive expects a number from 0 to 16 "
          "in test.conf:1" },
        { "isolated_helpers 0;\n",
          "\"isolated_helpers\" directive expects a number from 1 to 256 "
          "in test.conf:1" },
        { "isolated_helpers 1;\nisolated_helpers 1;\n",
          "\"isolated_helpers\" directive is duplicate in test.conf:2" },
        { "max_agent_depth 1;\nmax_agent_depth 1;\n",
          "\"max_agent_depth\" directive is duplicate in test.conf:2" },
        { "thread_pool other threads=4;\n",
          "\"thread_pool\" directive names a pool other than \"default\": "
          "tools run in the pool \"default\" in test.conf:1" },
        { "thread_pool default threads=0;\n",
          "\"thread_pool\" directive expects threads=N with N from 1 to 512 "
          "in test.conf:1" },
        { "thread_pool default threads=513;\n",
          "\"thread_pool\" directive expects threads=N with N from 1 to 512 "
          "in test.conf:1" },
        { "thread_pool default threads=many;\n",
          "\"thread_pool\" directive expects threads=N with N from 1 to 512 "
          "in test.conf:1" },
        { "thread_pool default max_queue=0;\n",
          "\"thread_pool\" directive expects max_queue=N with N of 1 or "
          "more in test.conf:1" },
        { "thread_pool default size=3;\n",
          "\"thread_pool\" directive expects threads=N or max_queue=N "
          "in test.conf:1" },
        { "thread_pool default threads=;\n",
          "\"thread_pool\" directive expects threads=N or max_queue=N "
          "in test.conf:1" },
        { "thread_pool default;\nthread_pool default threads=2;\n",
          "\"thread_pool\" directive is duplicate in test.conf:2" },
        { "thread_pool;\n",
          "invalid number of arguments in \"thread_pool\" directive "
          "in test.conf:1" },
        { "thread_pool default threads=1 max_queue=1 x;\n",
          "invalid number of arguments in \"thread_pool\" directive "
          "in test.conf:1" },
        { RG_TEST_LLM "agent x {\n    tool_timeout calc soon;\n}\n",
          "\"tool_timeout\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    tool_timeout calc 1s 2s;\n}\n",
          "invalid number of arguments in \"tool_timeout\" directive "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    tool_timeout calc 1s;\n}\n",
          "agent \"x\": \"tool_timeout\" names \"calc\", which is not in "
          "its \"tools\" in test.conf:2" },
        { RG_TEST_LLM "agent x {\n    approve calc;\n}\n",
          "agent \"x\": \"approve\" names \"calc\", which is not in its "
          "\"tools\" in test.conf:2" },
        { RG_TEST_LLM "agent x {\n    approve;\n}\n",
          "invalid number of arguments in \"approve\" directive "
          "in test.conf:3" },
        { "llm a {\n    base_url http://h;\n    model m;\n"
          "    fallback zz;\n}\n" RG_TEST_AGENT,
          "llm \"a\": \"fallback\" names an unknown llm \"zz\" "
          "in test.conf:1" },
        { RG_TEST_LLM "llm b {\n    base_url http://h;\n    model m;\n"
          "    fallback b;\n}\n" RG_TEST_AGENT,
          "llm \"b\": \"fallback\" names itself: \"b\" in test.conf:2" },
        { "llm a {\n    fallback b;\n    fallback c;\n}\n",
          "\"fallback\" directive is duplicate in test.conf:3" },
        { "llm a {\n    requests_per_minute 0;\n}\n",
          "\"requests_per_minute\" directive expects a number from 1 to "
          "100000000 in test.conf:2" },
        { "llm a {\n    tokens_per_minute 100000001;\n}\n",
          "\"tokens_per_minute\" directive expects a number from 1 to "
          "100000000 in test.conf:2" },
        { "llm a {\n    retry_budget 1x;\n}\n",
          "\"retry_budget\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:2" },
        { "llm a {\n    stream yes;\n}\n",
          "\"stream\" directive expects \"on\" or \"off\" in test.conf:2" },
        { "llm a {\n    stream on;\n    stream off;\n}\n",
          "\"stream\" directive is duplicate in test.conf:3" },
        { "llm a {\n    stream;\n}\n",
          "invalid number of arguments in \"stream\" directive "
          "in test.conf:2" },
        { RG_TEST_LLM "agent x {\n    max_tokens -1;\n}\n",
          "\"max_tokens\" directive expects a non-negative integer "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    max_tokens 1;\n    max_tokens 2;\n}\n",
          "\"max_tokens\" directive is duplicate in test.conf:4" },
        { RG_TEST_LLM "agent x {\n    deadline 5y;\n}\n",
          "\"deadline\" directive expects a time such as 500ms, 30s, 5m or 1h "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    tool_max_calls 0;\n}\n",
          "\"tool_max_calls\" directive expects a number of calls of 1 or "
          "more in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    tool_max_calls calc many;\n}\n",
          "\"tool_max_calls\" directive expects a number of calls of 1 or "
          "more in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    tool_max_calls 2;\n"
          "    tool_max_calls 3;\n}\n",
          "\"tool_max_calls\" directive is duplicate in test.conf:4" },
        { RG_TEST_LLM "agent x {\n    tool_max_calls calc 2;\n}\n",
          "agent \"x\": \"tool_max_calls\" names \"calc\", which is not in "
          "its \"tools\" in test.conf:2" },
        { RG_TEST_LLM "agent x {\n    repeat_window 1001;\n}\n",
          "\"repeat_window\" directive expects a number from 0 to 1000 "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    repeat_limit 1001;\n}\n",
          "\"repeat_limit\" directive expects a number from 0 to 1000 "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    keep_rounds 1001;\n}\n",
          "\"keep_rounds\" directive expects a number from 0 to 1000 "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    dedupe always;\n}\n",
          "\"dedupe\" directive expects one of: \"off\" \"session\" "
          "\"agent\" \"global\" in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    dedupe off;\n    dedupe agent;\n}\n",
          "\"dedupe\" directive is duplicate in test.conf:4" },
        { RG_TEST_LLM "agent x {\n    dedupe_ttl forever;\n}\n",
          "\"dedupe_ttl\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    dedupe_ttl 0;\n}\n",
          "\"dedupe_ttl\" directive must be more than 0 in test.conf:3" },
        { "tenant_max_tokens 0 per 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens -5 per 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1g per 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1mm per 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens m per 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1m each 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1m per 500ms;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1m per forever;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1e16 per 1d;\n",
          "\"tenant_max_tokens\" directive expects tokens, \"per\" and a "
          "window of at least 1s, such as \"tenant_max_tokens 1m per "
          "1d;\" in test.conf:1" },
        { "tenant_max_tokens 1m per;\n",
          "invalid number of arguments in \"tenant_max_tokens\" directive "
          "in test.conf:1" },
        { "tenant_max_tokens 1m per 1d;\ntenant_max_tokens 2m per 1d;\n",
          "\"tenant_max_tokens\" directive is duplicate in test.conf:2" },
        { RG_TEST_LLM "agent x {\n    tenant_max_tokens 1m per 1d;\n}\n",
          "\"tenant_max_tokens\" directive is not allowed here; it belongs "
          "at the top level in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    context_limit lots;\n}\n",
          "\"context_limit\" directive expects a non-negative integer "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    context_threshold 1.5;\n}\n",
          "\"context_threshold\" directive expects a number from 0 to 1 "
          "in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    context_summarize maybe;\n}\n",
          "\"context_summarize\" directive expects \"on\" or \"off\" "
          "in test.conf:3" },
        { "worker_processes 1025;\n",
          "\"worker_processes\" directive expects a number from 1 to 1024 "
          "in test.conf:1" },
        { "llm a {\n    buffer_size 12x;\n}\n",
          "\"buffer_size\" directive expects a size such as 512, 64k or 1m "
          "in test.conf:2" },
        { "tool_result_limit 1.5k;\n",
          "\"tool_result_limit\" directive expects a size such as 512, 64k "
          "or 1m in test.conf:1" },
        { "llm a {\n    timeout 5y;\n}\n",
          "\"timeout\" directive expects a time such as 500ms, 30s, 5m or 1h "
          "in test.conf:2" },
        { "llm a {\n    connect_timeout 1.5s;\n}\n",
          "\"connect_timeout\" directive expects a time such as 500ms, 30s, "
          "5m or 1h in test.conf:2" },
        { "llm a {\n    idle_timeout -1;\n}\n",
          "\"idle_timeout\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:2" },
        { "llm a {\n    retry_base ms;\n}\n",
          "\"retry_base\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:2" },
        { "llm a {\n    retry_max 1w;\n}\n",
          "\"retry_max\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:2" },
        { RG_TEST_LLM "agent x {\n    tool_timeout soon;\n}\n",
          "\"tool_timeout\" directive expects a time such as 500ms, 30s, 5m "
          "or 1h in test.conf:3" },
        { "error_log stderr loud;\n",
          "\"error_log\" directive expects a level: emerg, alert, crit, "
          "error, warn, notice, info or debug in test.conf:1" },
        { "\n\nerror_log stderr INFO;\n",
          "\"error_log\" directive expects a level: emerg, alert, crit, "
          "error, warn, notice, info or debug in test.conf:3" },
        { "error_log /nonexistent-rg-test-dir/error.log;\n",
          "cannot open error log \"/nonexistent-rg-test-dir/error.log\" "
          "(2: No such file or directory) in test.conf:1" },

        /* the whole-file checks */
        { "llm a {\n    model m;\n}\n" RG_TEST_AGENT,
          "llm \"a\" has no \"base_url\" in test.conf:1" },
        { "\nllm a {\n    base_url http://h;\n}\n" RG_TEST_AGENT,
          "llm \"a\" has no \"model\" in test.conf:2" },
        { "llm a {\n    base_url ftp://h;\n    model m;\n}\n" RG_TEST_AGENT,
          "llm \"a\": \"base_url\" must start with http:// or https:// "
          "in test.conf:1" },
        { "llm a {\n    base_url 127.0.0.1:8080;\n    model m;\n}\n"
          RG_TEST_AGENT,
          "llm \"a\": \"base_url\" must start with http:// or https:// "
          "in test.conf:1" },
        { "llm a {\n    base_url http:/h;\n    model m;\n}\n" RG_TEST_AGENT,
          "llm \"a\": \"base_url\" must start with http:// or https:// "
          "in test.conf:1" },
        { "llm a {\n    base_url http://h;\n    model m;\n"
          "    buffer_size 1023;\n}\n" RG_TEST_AGENT,
          "llm \"a\": \"buffer_size\" must be from 1k to 512k "
          "in test.conf:1" },
        { "llm a {\n    base_url http://h;\n    model m;\n"
          "    buffer_size 513k;\n}\n" RG_TEST_AGENT,
          "llm \"a\": \"buffer_size\" must be from 1k to 512k "
          "in test.conf:1" },
        { "llm a {\n    base_url http://h;\n    model m;\n"
          "    api_key_env " RG_TEST_UNSET_VAR ";\n}\n" RG_TEST_AGENT,
          "llm \"a\": the environment variable \"" RG_TEST_UNSET_VAR "\" "
          "named by \"api_key_env\" is not set in test.conf:1" },
        { "llm a {\n    base_url http://h;\n    model m;\n"
          "    api_key_env " RG_TEST_EMPTY_VAR ";\n}\n" RG_TEST_AGENT,
          "llm \"a\": the environment variable \"" RG_TEST_EMPTY_VAR "\" "
          "named by \"api_key_env\" is not set in test.conf:1" },
        { "llm a {\n    base_url http://h;\n    model m;\n"
          "    api_key_env RG_TEST_CONF_CTL;\n}\n" RG_TEST_AGENT,
          "llm \"a\": the environment variable \"RG_TEST_CONF_CTL\" "
          "named by \"api_key_env\" holds a control character "
          "in test.conf:1" },
        { RG_TEST_LLM "agent x {\n    llm zz;\n}\n",
          "agent \"x\" names an unknown llm \"zz\" in test.conf:2" },
        { RG_TEST_LLM "llm b { base_url http://h; model m; }\n"
          "agent x { llm b; }\nagent y { }\n",
          "agent \"y\" has no \"llm\" (there are 2 llm blocks to choose from) "
          "in test.conf:4" },
        { "agent x { }\n",
          "agent \"x\" has no \"llm\" (there are 0 llm blocks to choose from) "
          "in test.conf:1" },
        { RG_TEST_LLM "agent x {\n    tools nope;\n}\n",
          "agent \"x\" names an unknown tool \"nope\" (loaded tools: none) "
          "in test.conf:2" },
        { RG_TEST_LLM, "no \"agent\" block: at least one agent is needed "
                       "in test.conf" },
        { "", "no \"agent\" block: at least one agent is needed "
              "in test.conf" },
        { "include a b;\n", "invalid number of arguments in \"include\" "
                            "directive, expecting one file name or mask "
                            "in test.conf:1" },
        { "include a {\n}\n", "directive \"include\" is not terminated by "
                              "\";\" in test.conf:1" },
    };

    unsetenv(RG_TEST_UNSET_VAR);
    setenv(RG_TEST_EMPTY_VAR, "", 1);
    setenv("RG_TEST_CONF_CTL", "sk-1\r\nX-Injected: 1", 1);

    failed = 0;

    for (i = 0; i < rg_nelems(cases); i++) {
        failed += rg_test_conf_mismatch(cases[i].text, cases[i].error);
    }

    assert_int_equal(failed, 0);
}


/* Directives of another context are known directives in the wrong place,
 * as in nginx ("proxy_pass" in the main context): the error must say so,
 * not call them unknown. */
static void
rg_test_cycle_not_allowed_here(void **state)
{
    rg_uint_t  i, failed;

    static const rg_test_case_t  cases[] = {
        { "model m;\n",
          "\"model\" directive is not allowed here; it belongs inside "
          "llm NAME { } in test.conf:1" },
        { RG_TEST_LLM "agent x {\n    base_url http://h;\n}\n",
          "\"base_url\" directive is not allowed here; it belongs inside "
          "llm NAME { } in test.conf:3" },
        { RG_TEST_LLM "agent x {\n    concurrency 2;\n}\n",
          "\"concurrency\" directive is not allowed here; it belongs at the "
          "top level in test.conf:3" },
        { "llm a {\n    max_rounds 2;\n}\n",
          "\"max_rounds\" directive is not allowed here; it belongs inside "
          "agent NAME { } in test.conf:2" },
        { "llm a {\n    agent x { }\n}\n",
          "\"agent\" directive is not allowed here; it belongs at the top "
          "level in test.conf:2" },
        /* each block its own context bit: an mcp block's directive in
         * store redis { } was taken, and wrote into the wrong struct */
        { "store redis {\n    server 127.0.0.1:1;\n    command npx;\n}\n",
          "\"command\" directive is not allowed here; it belongs inside "
          "mcp NAME { } in test.conf:3" },
        { "mcp fs {\n    command npx;\n    server 127.0.0.1:1;\n}\n",
          "\"server\" directive is not allowed here; it belongs inside "
          "store redis { } in test.conf:3" },
    };

    failed = 0;

    for (i = 0; i < rg_nelems(cases); i++) {
        failed += rg_test_conf_mismatch(cases[i].text, cases[i].error);
    }

    assert_int_equal(failed, 0);
}


/* the file-level checks name the line of the directive when there is one */
static void
rg_test_cycle_default_agent_line(void **state)
{
    rg_test_conf_error(RG_TEST_LLM RG_TEST_AGENT "default_agent zz;\n",
                       "\"default_agent\" names an unknown agent \"zz\" "
                       "in test.conf:3");
}


static void
rg_test_cycle_default_agent(void **state)
{
    rg_cycle_t  *cycle;

    cycle = rg_test_conf_ok("default_agent y;\n" RG_TEST_LLM
                            "agent x { }\nagent y { }\n");
    rg_test_str(&rg_agent_main_conf(cycle)->default_agent, "y");
    rg_cycle_destroy(cycle);

    /* the first agent, in the order of the file */
    cycle = rg_test_conf_ok(RG_TEST_LLM "agent zeta { }\nagent alpha { }\n");
    rg_test_str(&rg_agent_main_conf(cycle)->default_agent, "zeta");
    assert_int_equal(rg_agent_main_conf(cycle)->default_agent.data[4], '\0');
    rg_cycle_destroy(cycle);
}


/* tools: the allow-list against the loaded modules */
static void
rg_test_cycle_tools(void **state)
{
    char         err[512];
    rg_cycle_t  *cycle;

    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/calc.so;\n"
                          "load_module %s/modules/time.so;\n"
                          RG_TEST_LLM
                          "agent x {\n"
                          "    tools calc nope;\n"
                          "}\n", rg_test_build_dir(), rg_test_build_dir());
    assert_null(cycle);
    assert_string_equal(err, "agent \"x\" names an unknown tool \"nope\" "
                             "(loaded tools: calc, time_now) in test.conf:4");

    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/calc.so;\n"
                          RG_TEST_LLM
                          "agent x {\n"
                          "    tools calc;\n"
                          "}\n"
                          "agent y {\n"
                          "    tools calc;\n"
                          "    tools calc;\n"
                          "}\n", rg_test_build_dir());
    assert_null(cycle);
    assert_string_equal(err, "agent \"y\" lists tool \"calc\" twice "
                             "in test.conf:6");

    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/time.so;\n"
                          RG_TEST_LLM
                          "agent x {\n"
                          "    tools time_now time_now;\n"
                          "}\n", rg_test_build_dir());
    assert_null(cycle);
    assert_string_equal(err, "agent \"x\" lists tool \"time_now\" twice "
                             "in test.conf:3");

    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/calc.so;\n"
                          "load_module %s/modules/time.so;\n"
                          RG_TEST_LLM
                          "agent x {\n"
                          "    tools calc;\n"
                          "    tool_timeout time_now 1s;\n"
                          "}\n", rg_test_build_dir(), rg_test_build_dir());
    assert_null(cycle);
    assert_string_equal(err, "agent \"x\": \"tool_timeout\" names "
                             "\"time_now\", which is not in its \"tools\" "
                             "in test.conf:4");

    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/calc.so;\n"
                          "load_module %s/modules/time.so;\n"
                          RG_TEST_LLM
                          "agent x {\n"
                          "    tools time_now;\n"
                          "    approve time_now calc;\n"
                          "}\n", rg_test_build_dir(), rg_test_build_dir());
    assert_null(cycle);
    assert_string_equal(err, "agent \"x\": \"approve\" names \"calc\", "
                             "which is not in its \"tools\" in test.conf:4");

    /* an agent may use a subset; one without tools gets none */
    cycle = rg_test_cycle(err, sizeof(err),
                          "load_module %s/modules/calc.so;\n"
                          "load_module %s/modules/time.so;\n"
                          RG_TEST_LLM
                          "agent x {\n"
                          "    tools time_now;\n"
                          "}\n"
                          "agent y { }\n",
                          rg_test_build_dir(), rg_test_build_dir());
    assert_non_null(cycle);
    assert_int_equal(rg_test_agent(cycle, 0)->toolset.ntools, 1);
    assert_string_equal(rg_test_agent(cycle, 0)->toolset.tool_list, "time_now");
    assert_null(strstr(rg_test_agent(cycle, 0)->prefix, "\"calc\""));
    assert_int_equal(rg_test_agent(cycle, 1)->toolset.ntools, 0);
    assert_null(strstr(rg_test_agent(cycle, 1)->prefix, "\"tools\""));
    rg_cycle_destroy(cycle);
}


/* includes: files written to the temporary folder, read from a file */

static rg_log_t  rg_test_file_log;


static rg_cycle_t *
rg_test_file_cycle(const char *path, char *err, size_t len)
{
    rg_test_file_log = *rg_log_stderr();
    rg_test_file_log.log_level = getenv("RG_TEST_LOG") ? RG_LOG_DEBUG
                                                       : RG_LOG_CRIT;
    err[0] = '\0';

    return rg_cycle_create(path, NULL, &rg_test_file_log, err, len);
}


static char *
rg_test_file(const char *name, const char *fmt, ...)
{
    char     *text, *path;
    va_list   args;

    va_start(args, fmt);
    if (vasprintf(&text, fmt, args) < 0) {
        va_end(args);
        fail();
    }
    va_end(args);

    path = rg_test_write_file(name, text);
    free(text);
    assert_non_null(path);

    return path;
}


static void
rg_test_file_error(const char *path, const char *fmt, ...)
{
    char         err[512], expect[512];
    va_list      args;
    rg_cycle_t  *cycle;

    va_start(args, fmt);
    vsnprintf(expect, sizeof(expect), fmt, args);
    va_end(args);

    cycle = rg_test_file_cycle(path, err, sizeof(err));
    if (cycle != NULL) {
        rg_cycle_destroy(cycle);
        print_error("%s: accepted, expected: %s\n", path, expect);
        fail();
    }

    assert_string_equal(err, expect);
}


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


/* Cycles logging to a file, through a descriptor of their own: a cycle
 * closes its log when it is destroyed, see rg_test_cycle_caller_log. */

static rg_log_t  rg_test_logged_log;
static int       rg_test_logged_fd = -1;


static rg_cycle_t *
rg_test_logged_cycle(const char *path, const char *text, char *err,
    size_t len)
{
    rg_cycle_t  *cycle;

    rg_test_logged_fd = open(path, O_WRONLY | O_APPEND);
    assert_true(rg_test_logged_fd >= 0);

    rg_test_logged_log = *rg_log_stderr();
    rg_test_logged_log.fd = rg_test_logged_fd;
    rg_test_logged_log.log_level = RG_LOG_DEBUG;

    err[0] = '\0';
    cycle = rg_cycle_create("test.conf", text, &rg_test_logged_log, err,
                            len);

    if (cycle == NULL) {
        close(rg_test_logged_fd);         /* if the cycle did not */
        rg_test_logged_fd = -1;
    }

    return cycle;
}


static void
rg_test_logged_destroy(rg_cycle_t *cycle)
{
    rg_cycle_destroy(cycle);
    close(rg_test_logged_fd);             /* if the cycle did not */
    rg_test_logged_fd = -1;
}


/* A cycle is handed the log to report its errors to (the caller's, or on a
 * reload the running cycle's). That log's descriptor belongs to the
 * caller: building, failing or destroying a cycle must leave it open. Only
 * a file the cycle's own error_log opened is the cycle's to close. */
static void
rg_test_cycle_caller_log(void **state)
{
    int          fd;
    char         err[512], path[256];
    rg_uint_t    i;
    rg_log_t     log;
    rg_cycle_t  *cycle;

    static const char  *texts[] = {
        /* a good configuration, destroyed */
        RG_TEST_LLM RG_TEST_AGENT,
        /* one that fails while parsing, and one that fails after */
        RG_TEST_LLM RG_TEST_AGENT "bogus;\n",
        RG_TEST_LLM "agent x { llm b; }\n",
        /* one with its own error_log */
        "error_log stderr;\n" RG_TEST_LLM RG_TEST_AGENT,
        "error_log /dev/null info;\n" RG_TEST_LLM RG_TEST_AGENT,
        "error_log /dev/null;\n" RG_TEST_LLM RG_TEST_AGENT "bogus;\n",
    };

    snprintf(path, sizeof(path), "%s/caller.log", rg_test_tmpdir());
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);

    log = *rg_log_stderr();
    log.fd = fd;
    log.log_level = RG_LOG_CRIT;

    for (i = 0; i < rg_nelems(texts); i++) {
        cycle = rg_cycle_create("test.conf", texts[i], &log, err,
                                sizeof(err));
        rg_cycle_destroy(cycle);

        if (fcntl(fd, F_GETFD) == -1) {
            print_error("the caller's log descriptor was closed by the "
                        "cycle of:\n%s\n", texts[i]);
            fail();
        }
    }

    close(fd);
    unlink(path);
}


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


static int
rg_test_rm(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    return remove(path);
}


static int
rg_test_cleanup(void **state)
{
    nftw(rg_test_tmpdir(), rg_test_rm, 16, FTW_DEPTH | FTW_PHYS);

    return 0;
}


int
main(void)
{
    int  failed;

    const struct CMUnitTest  rg_test_parser_tests[] = {
        cmocka_unit_test(rg_test_parse_words),
        cmocka_unit_test(rg_test_parse_glued),
        cmocka_unit_test(rg_test_parse_escaped_newline),
        cmocka_unit_test(rg_test_parse_hash_in_word),
        cmocka_unit_test(rg_test_parse_structure),
        cmocka_unit_test(rg_test_parse_slots),
        cmocka_unit_test(rg_test_parse_sizes),
        cmocka_unit_test(rg_test_parse_times),
    };

    const struct CMUnitTest  rg_test_cycle_tests[] = {
        cmocka_unit_test(rg_test_cycle_defaults),
        cmocka_unit_test(rg_test_worker_processes_auto),
        cmocka_unit_test(rg_test_cycle_all_directives),
        cmocka_unit_test(rg_test_cycle_units),
        cmocka_unit_test(rg_test_cycle_tenant_budget),
        cmocka_unit_test(rg_test_cycle_error_log),
        cmocka_unit_test(rg_test_cycle_errors),
        cmocka_unit_test(rg_test_cycle_not_allowed_here),
        cmocka_unit_test(rg_test_cycle_default_agent_line),
        cmocka_unit_test(rg_test_cycle_default_agent),
        cmocka_unit_test(rg_test_cycle_tools),
        cmocka_unit_test(rg_test_cycle_queue),
        cmocka_unit_test(rg_test_include_file),
        cmocka_unit_test(rg_test_include_mask),
        cmocka_unit_test(rg_test_not_regular),
        cmocka_unit_test(rg_test_include_depth),
        cmocka_unit_test(rg_test_cycle_caller_log),
        cmocka_unit_test(rg_test_secret),
        cmocka_unit_test(rg_test_shipped_conf),
    };

    failed = cmocka_run_group_tests_name("conf_parser", rg_test_parser_tests,
                                         rg_test_parser_setup,
                                         rg_test_parser_teardown);

    failed += cmocka_run_group_tests_name("conf_cycle", rg_test_cycle_tests,
                                          NULL, rg_test_cleanup);

    return failed != 0;
}
