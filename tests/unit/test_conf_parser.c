/* test_conf_parser.c: the configuration parser (src/core/rg_conf_file.c)
 * driven directly, with a table of test directives that uses every generic
 * setter (str, str array, num, size, msec, flag, double, enum) and every
 * argument count, so that the tokenizer (comments, quotes, escapes, the
 * line each word ends on), the structural errors and the setters are seen
 * without the cycle's rules; then the sizes and times of
 * rg_conf_parse_size() and rg_conf_parse_msec(). Every error is compared
 * whole, " in direct.conf:LINE" included. The cycle's directives are
 * tests/unit/test_conf_cycle.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_test.h>
#include <rg_test_conf.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>


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
                        "unknown directive \"nope\" (did you mean "
                        "\"none\"?) in direct.conf:3");
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
        { "cap a }", "missing \";\" after \"cap a\" before \"}\" "
                     "in direct.conf:1" },
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
        { "nope 1;", "unknown directive \"nope\" (did you mean \"none\"?) "
                     "in direct.conf:1" },
        { "block {\n    nope;\n}",
          "unknown directive \"nope\" (did you mean \"none\"?) "
          "in direct.conf:2" },
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


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_parse_words),
        cmocka_unit_test(rg_test_parse_glued),
        cmocka_unit_test(rg_test_parse_escaped_newline),
        cmocka_unit_test(rg_test_parse_hash_in_word),
        cmocka_unit_test(rg_test_parse_structure),
        cmocka_unit_test(rg_test_parse_slots),
        cmocka_unit_test(rg_test_parse_sizes),
        cmocka_unit_test(rg_test_parse_times),
    };

    return cmocka_run_group_tests(tests, rg_test_parser_setup,
                                  rg_test_parser_teardown);
}
