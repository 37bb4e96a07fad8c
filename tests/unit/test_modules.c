/* test_modules.c: unit tests of the bundled tool modules and the test
 * plugins, loaded as the host loads them.
 *
 * dlopen()s the built .so files (calc, time, example from $RG_MODULES_DIR,
 * default objs/modules; good, badabi, badsig, nosym, fail, slow, crash from
 * $RG_TEST_PLUGINS_DIR, default objs/tests/plugins) with RTLD_NOW|
 * RTLD_LOCAL, checks their ABI fields and drives their tools through a fake
 * rg_tool_host_t: arguments read with jansson, answers captured, timers
 * kept in a list that the test fires by hand. Uses nothing of the host but
 * rg_tool_module.h, and its thread pool to call time_now from several
 * threads at once. */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rg_tool_module.h>

#include <rg_config.h>
#include <rg_core.h>
#include <rg_thread_pool.h>
#include <event2/event.h>


/* a call as the fake host sees it; `call` first, so that the host's
 * callbacks can cast back */
typedef struct {
    rg_tool_call_t            call;
    json_t                   *root;
    char                     *args;
    int                       answers;
    int                       failed;
    char                     *result;
    size_t                    result_len;
} rg_test_call_t;


/* the fake host's timers: a list the tests fire by hand */
struct rg_tool_timer_s {
    uint64_t                  msec;
    rg_tool_timer_pt          handler;
    void                     *data;
    int                       active;
    struct rg_tool_timer_s   *next;
};


typedef struct {
    void                     *handle;
    const rg_tool_module_t   *module;
} rg_test_so_t;


static void rg_test_host_log(rg_tool_host_t *host, int level,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void rg_test_host_done(rg_tool_call_t *call, const char *result,
    size_t len);
static void rg_test_host_fail(rg_tool_call_t *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int rg_test_host_arg_string(rg_tool_call_t *call, const char *key,
    const char **s, size_t *len);
static int rg_test_host_arg_number(rg_tool_call_t *call, const char *key,
    double *n);
static int rg_test_host_arg_int(rg_tool_call_t *call, const char *key,
    long long *n);
static int rg_test_host_arg_bool(rg_tool_call_t *call, const char *key,
    int *b);
static rg_tool_timer_t *rg_test_host_timer_add(rg_tool_host_t *host,
    uint64_t msec, rg_tool_timer_pt handler, void *data);
static void rg_test_host_timer_del(rg_tool_timer_t *timer);


static rg_tool_host_t  rg_test_host = {
    .abi_version = RG_TOOL_ABI_VERSION,
    .size = sizeof(rg_tool_host_t),
    .log = rg_test_host_log,
    .done = rg_test_host_done,
    .fail = rg_test_host_fail,
    .arg_string = rg_test_host_arg_string,
    .arg_number = rg_test_host_arg_number,
    .arg_int = rg_test_host_arg_int,
    .arg_bool = rg_test_host_arg_bool,
    .timer_add = rg_test_host_timer_add,
    .timer_del = rg_test_host_timer_del,
    .data = NULL
};


static rg_tool_timer_t  *rg_test_timers;
static int               rg_test_timer_refuse;
static int               rg_test_log_level;
static char              rg_test_log_text[512];

static rg_test_so_t      rg_test_calc;
static rg_test_so_t      rg_test_time;
static rg_test_so_t      rg_test_example;
static rg_test_so_t      rg_test_good;
static rg_test_so_t      rg_test_badabi;
static rg_test_so_t      rg_test_badsig;
static rg_test_so_t      rg_test_nosym;
static rg_test_so_t      rg_test_fail;
static rg_test_so_t      rg_test_slow;
static rg_test_so_t      rg_test_crash;

static const char  *rg_test_weekdays[] = {
    "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
    "Saturday"
};


/* the fake host */


static void
rg_test_host_log(rg_tool_host_t *host, int level, const char *fmt, ...)
{
    va_list  ap;

    assert_ptr_equal(host, &rg_test_host);

    rg_test_log_level = level;

    va_start(ap, fmt);
    vsnprintf(rg_test_log_text, sizeof(rg_test_log_text), fmt, ap);
    va_end(ap);
}


static void
rg_test_host_done(rg_tool_call_t *call, const char *result, size_t len)
{
    rg_test_call_t  *tc;

    tc = (rg_test_call_t *) call;

    tc->answers++;
    free(tc->result);

    tc->result = malloc(len + 1);
    assert_non_null(tc->result);
    memcpy(tc->result, result, len);
    tc->result[len] = '\0';
    tc->result_len = len;
    tc->failed = 0;
}


static void
rg_test_host_fail(rg_tool_call_t *call, const char *fmt, ...)
{
    int              n;
    va_list          ap;
    rg_test_call_t  *tc;

    tc = (rg_test_call_t *) call;

    tc->answers++;
    free(tc->result);

    va_start(ap, fmt);
    n = vasprintf(&tc->result, fmt, ap);
    va_end(ap);

    assert_true(n >= 0);
    tc->result_len = (size_t) n;
    tc->failed = 1;
}


static int
rg_test_host_arg_string(rg_tool_call_t *call, const char *key,
    const char **s, size_t *len)
{
    json_t  *v;

    v = json_object_get(((rg_test_call_t *) call)->root, key);
    if (!json_is_string(v)) {
        return -1;
    }

    *s = json_string_value(v);
    if (len != NULL) {
        *len = json_string_length(v);
    }

    return 0;
}


static int
rg_test_host_arg_number(rg_tool_call_t *call, const char *key, double *n)
{
    json_t  *v;

    v = json_object_get(((rg_test_call_t *) call)->root, key);
    if (!json_is_number(v)) {
        return -1;
    }

    *n = json_number_value(v);

    return 0;
}


static int
rg_test_host_arg_int(rg_tool_call_t *call, const char *key, long long *n)
{
    json_t  *v;

    v = json_object_get(((rg_test_call_t *) call)->root, key);
    if (!json_is_integer(v)) {
        return -1;
    }

    *n = (long long) json_integer_value(v);

    return 0;
}


static int
rg_test_host_arg_bool(rg_tool_call_t *call, const char *key, int *b)
{
    json_t  *v;

    v = json_object_get(((rg_test_call_t *) call)->root, key);
    if (!json_is_boolean(v)) {
        return -1;
    }

    *b = json_is_true(v);

    return 0;
}


static rg_tool_timer_t *
rg_test_host_timer_add(rg_tool_host_t *host, uint64_t msec,
    rg_tool_timer_pt handler, void *data)
{
    rg_tool_timer_t  *t;

    assert_ptr_equal(host, &rg_test_host);

    if (rg_test_timer_refuse) {
        return NULL;
    }

    t = calloc(1, sizeof(rg_tool_timer_t));
    assert_non_null(t);

    t->msec = msec;
    t->handler = handler;
    t->data = data;
    t->active = 1;
    t->next = rg_test_timers;
    rg_test_timers = t;

    return t;
}


static void
rg_test_host_timer_del(rg_tool_timer_t *timer)
{
    assert_non_null(timer);
    assert_true(timer->active);

    timer->active = 0;
}


/* timer helpers */


static int
rg_test_timers_active(void)
{
    int               n;
    rg_tool_timer_t  *t;

    n = 0;

    for (t = rg_test_timers; t; t = t->next) {
        n += t->active;
    }

    return n;
}


/* fires every active timer, the earliest first; returns how many fired */
static int
rg_test_timers_fire(void)
{
    int               n;
    rg_tool_timer_t  *t, *first;

    for (n = 0; /* void */; n++) {
        first = NULL;

        for (t = rg_test_timers; t; t = t->next) {
            if (t->active && (first == NULL || t->msec <= first->msec)) {
                first = t;
            }
        }

        if (first == NULL) {
            return n;
        }

        first->active = 0;
        first->handler(first->data);
    }
}


static void
rg_test_timers_free(void)
{
    rg_tool_timer_t  *t;

    while (rg_test_timers) {
        t = rg_test_timers;
        rg_test_timers = t->next;
        free(t);
    }

    rg_test_timer_refuse = 0;
}


/* calls */


static void
rg_test_call_init(rg_test_call_t *tc, const rg_tool_t *tool, void *conf,
    const char *args)
{
    json_error_t  err;

    memset(tc, 0, sizeof(rg_test_call_t));

    tc->root = json_loads(args, JSON_ALLOW_NUL, &err);
    if (tc->root == NULL) {
        fail_msg("bad test args %s: %s", args, err.text);
    }

    tc->args = strdup(args);
    assert_non_null(tc->args);

    tc->call.tool = tool;
    tc->call.host = &rg_test_host;
    tc->call.conf = conf;
    tc->call.ctx = NULL;
    tc->call.id = "call_1";
    tc->call.session = "s-test";
    tc->call.args = tc->args;
    tc->call.args_len = strlen(args);
}


static void
rg_test_call_free(rg_test_call_t *tc)
{
    json_decref(tc->root);
    free(tc->args);
    free(tc->result);
    memset(tc, 0, sizeof(rg_test_call_t));
}


/* runs tool with args (a JSON object) and returns start()'s result */
static int
rg_test_call_run(rg_test_call_t *tc, const rg_tool_t *tool, void *conf,
    const char *args)
{
    rg_test_call_init(tc, tool, conf, args);

    return tool->start(&tc->call);
}


/* loading */


static int
rg_test_load(rg_test_so_t *so, const char *env, const char *def,
    const char *name, int need_symbol)
{
    char        path[1024];
    const char  *dir;

    dir = getenv(env);
    if (dir == NULL || *dir == '\0') {
        dir = def;
    }

    snprintf(path, sizeof(path), "%s/%s.so", dir, name);

    so->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (so->handle == NULL) {
        fprintf(stderr, "dlopen(\"%s\") failed: %s (the directory is "
                "$%s)\n", path, dlerror(), env);
        return -1;
    }

    so->module = dlsym(so->handle, "rg_tool_module");

    if (need_symbol && so->module == NULL) {
        fprintf(stderr, "%s: no rg_tool_module symbol\n", path);
        return -1;
    }

    return 0;
}


static void
rg_test_unload(rg_test_so_t *so)
{
    if (so->handle != NULL) {
        dlclose(so->handle);
    }

    so->handle = NULL;
    so->module = NULL;
}


/* What the loader checks, in its order: abi_version first, nothing else
 * is read when it differs. NULL, or what is wrong. */
static const char *
rg_test_check(const rg_tool_module_t *m, char *buf, size_t size)
{
    if (m->abi_version != RG_TOOL_ABI_VERSION) {
        snprintf(buf, size, "abi version %u, expected %u",
                 (unsigned) m->abi_version, (unsigned) RG_TOOL_ABI_VERSION);
        return buf;
    }

    if (m->size != sizeof(rg_tool_module_t)) {
        snprintf(buf, size, "size %u, expected %zu", (unsigned) m->size,
                 sizeof(rg_tool_module_t));
        return buf;
    }

    if (m->signature == NULL || strcmp(m->signature, RG_TOOL_SIGNATURE) != 0)
    {
        snprintf(buf, size, "signature \"%s\", expected \"%s\"",
                 m->signature ? m->signature : "(null)", RG_TOOL_SIGNATURE);
        return buf;
    }

    return NULL;
}


static const rg_tool_t *
rg_test_tool(const rg_tool_module_t *m, const char *name)
{
    const rg_tool_t  *t;

    for (t = m->tools; t->name; t++) {
        if (strcmp(t->name, name) == 0) {
            return t;
        }
    }

    fail_msg("module \"%s\" has no tool \"%s\"", m->name, name);

    return NULL;
}


static size_t
rg_test_tool_count(const rg_tool_module_t *m)
{
    size_t  n;

    for (n = 0; m->tools[n].name; n++) { /* void */ }

    return n;
}


/* the tool's JSON Schema, parsed; an object schema with properties */
static json_t *
rg_test_schema(const rg_tool_t *tool)
{
    json_t        *schema;
    json_error_t   err;

    assert_non_null(tool->parameters);

    schema = json_loads(tool->parameters, 0, &err);
    if (schema == NULL) {
        fail_msg("tool \"%s\": bad schema: %s", tool->name, err.text);
    }

    assert_string_equal(json_string_value(json_object_get(schema, "type")),
                        "object");
    assert_true(json_is_object(json_object_get(schema, "properties")));

    return schema;
}


static void
rg_test_module_valid(const rg_tool_module_t *m, const char *name)
{
    char              buf[256];
    const char       *err;
    const rg_tool_t  *t;

    assert_non_null(m);

    err = rg_test_check(m, buf, sizeof(buf));
    if (err != NULL) {
        fail_msg("module \"%s\": %s", name, err);
    }

    assert_string_equal(m->name, name);
    assert_non_null(m->tools);
    assert_non_null(m->tools[0].name);

    for (t = m->tools; t->name; t++) {
        assert_non_null(t->description);
        assert_true(strlen(t->description) > 0);
        assert_non_null(t->start);
        json_decref(rg_test_schema(t));
    }
}


/* group setup and teardown */


static int
rg_test_setup_modules(void **state)
{
    (void) state;

    if (rg_test_load(&rg_test_calc, "RG_MODULES_DIR", "objs/modules", "calc",
                     1) != 0
        || rg_test_load(&rg_test_time, "RG_MODULES_DIR", "objs/modules",
                        "time", 1) != 0
        || rg_test_load(&rg_test_example, "RG_MODULES_DIR", "objs/modules",
                        "example", 1) != 0)
    {
        return -1;
    }

    return 0;
}


static int
rg_test_teardown_modules(void **state)
{
    (void) state;

    rg_test_unload(&rg_test_calc);

    /* the zones it keeps */
    if (rg_test_time.module && rg_test_time.module->exit) {
        rg_test_time.module->exit(NULL, NULL);
    }
    rg_test_unload(&rg_test_time);
    rg_test_unload(&rg_test_example);

    return 0;
}


static int
rg_test_setup_plugins(void **state)
{
    static const char  *dir = "objs/tests/plugins";
    static const char  *env = "RG_TEST_PLUGINS_DIR";

    (void) state;

    if (rg_test_load(&rg_test_good, env, dir, "good", 1) != 0
        || rg_test_load(&rg_test_badabi, env, dir, "badabi", 1) != 0
        || rg_test_load(&rg_test_badsig, env, dir, "badsig", 1) != 0
        || rg_test_load(&rg_test_nosym, env, dir, "nosym", 0) != 0
        || rg_test_load(&rg_test_fail, env, dir, "fail", 1) != 0
        || rg_test_load(&rg_test_slow, env, dir, "slow", 1) != 0
        || rg_test_load(&rg_test_crash, env, dir, "crash", 1) != 0)
    {
        return -1;
    }

    return 0;
}


static int
rg_test_teardown_plugins(void **state)
{
    (void) state;

    rg_test_unload(&rg_test_good);
    rg_test_unload(&rg_test_badabi);
    rg_test_unload(&rg_test_badsig);
    rg_test_unload(&rg_test_nosym);
    rg_test_unload(&rg_test_fail);
    rg_test_unload(&rg_test_slow);
    rg_test_unload(&rg_test_crash);

    return 0;
}


static int
rg_test_teardown(void **state)
{
    (void) state;

    rg_test_timers_free();
    rg_test_log_level = 0;
    rg_test_log_text[0] = '\0';

    return 0;
}


/* calc */


#define rg_test_calc_ok(expr, expect)                                        \
    rg_test_calc_expr(expr, sizeof(expr) - 1, 0, expect, __FILE__, __LINE__)

#define rg_test_calc_err(expr, expect)                                       \
    rg_test_calc_expr(expr, sizeof(expr) - 1, 1, expect, __FILE__, __LINE__)


/* evaluates expr (len bytes, may hold a NUL) and checks the answer */
static void
rg_test_calc_expr(const char *expr, size_t len, int failed,
    const char *expect, const char *file, int line)
{
    int              rc;
    char            *args;
    json_t          *obj;
    rg_test_call_t   tc;

    obj = json_pack("{s:s%}", "expression", expr, len);
    assert_non_null(obj);
    args = json_dumps(obj, 0);
    assert_non_null(args);
    json_decref(obj);

    rc = rg_test_call_run(&tc, rg_test_tool(rg_test_calc.module, "calc"),
                          NULL, args);
    free(args);

    _assert_int_equal(rc, RG_TOOL_OK, file, line);
    _assert_int_equal(tc.answers, 1, file, line);

    if (tc.failed != failed) {
        print_error("expression \"%.*s\": expected %s \"%s\", got %s "
                    "\"%s\"\n", (int) len, expr,
                    failed ? "failure" : "result", expect,
                    tc.failed ? "failure" : "result", tc.result);
        _fail(file, line);
    }

    _assert_string_equal(tc.result, expect, file, line);
    _assert_int_equal(tc.result_len, strlen(expect), file, line);

    rg_test_call_free(&tc);
}


static void
rg_test_calc_fail_args(const char *args, const char *expect)
{
    rg_test_call_t  tc;

    assert_int_equal(rg_test_call_run(&tc,
                                       rg_test_tool(rg_test_calc.module,
                                                    "calc"),
                                       NULL, args),
                     RG_TOOL_OK);
    assert_int_equal(tc.answers, 1);
    assert_true(tc.failed);
    assert_string_equal(tc.result, expect);

    rg_test_call_free(&tc);
}


static void
rg_test_calc_module(void **state)
{
    json_t            *schema, *prop, *req;
    rg_test_call_t     tc;
    const rg_tool_t   *tool;
    const char        *example;

    (void) state;

    rg_test_module_valid(rg_test_calc.module, "calc");

    assert_null(rg_test_calc.module->directives);
    assert_null(rg_test_calc.module->create_conf);
    assert_null(rg_test_calc.module->init);
    assert_null(rg_test_calc.module->exit);
    assert_int_equal(rg_test_tool_count(rg_test_calc.module), 1);

    tool = rg_test_tool(rg_test_calc.module, "calc");
    assert_int_equal(tool->flags, RG_TOOL_READ_ONLY);
    assert_null(tool->cancel);

    schema = rg_test_schema(tool);
    prop = json_object_get(json_object_get(schema, "properties"),
                           "expression");
    assert_string_equal(json_string_value(json_object_get(prop, "type")),
                        "string");
    assert_true(json_is_string(json_object_get(prop, "description")));

    req = json_object_get(schema, "required");
    assert_int_equal(json_array_size(req), 1);
    assert_string_equal(json_string_value(json_array_get(req, 0)),
                        "expression");

    /* the mock model sends examples[0]: it must evaluate */

    example = json_string_value(json_array_get(json_object_get(prop,
                                                               "examples"),
                                               0));
    assert_string_equal(example, "2*(3+4)");

    assert_int_equal(rg_test_call_run(&tc, tool, NULL,
                                      "{\"expression\":\"2*(3+4)\"}"),
                     RG_TOOL_OK);
    assert_int_equal(tc.answers, 1);
    assert_false(tc.failed);
    assert_string_equal(tc.result, "14");
    rg_test_call_free(&tc);

    json_decref(schema);
}


static void
rg_test_calc_precedence(void **state)
{
    (void) state;

    rg_test_calc_ok("2+3*4", "14");
    rg_test_calc_ok("(2+3)*4", "20");
    rg_test_calc_ok("-2^2", "-4");
    rg_test_calc_ok("2^3^2", "512");
    rg_test_calc_ok("10/4", "2.5");
    rg_test_calc_ok("7%3", "1");
    rg_test_calc_ok("--3", "3");
    rg_test_calc_ok("1e3+1", "1001");
    rg_test_calc_ok("sqrt(16)+abs(-2)", "6");
    rg_test_calc_ok("max(1,5,3)", "5");
    rg_test_calc_ok("pi", "3.14159265358979");

    rg_test_calc_ok("10-4-3", "3");
    rg_test_calc_ok("2*3/4", "1.5");
    rg_test_calc_ok("100/10/5", "2");
    rg_test_calc_ok("2^-1", "0.5");
    rg_test_calc_ok("(-2)^2", "4");
    rg_test_calc_ok("2^2^-1", "1.4142135623731");
    rg_test_calc_ok("-(2+3)", "-5");
    rg_test_calc_ok("+4", "4");
    rg_test_calc_ok("3--2", "5");
    rg_test_calc_ok("2*-3", "-6");
    rg_test_calc_ok("-7%3", "-1");
    rg_test_calc_ok("7.5%2", "1.5");
    rg_test_calc_ok(" \t1 +\n2\r ", "3");
    rg_test_calc_ok("0.1+0.2", "0.3");
    rg_test_calc_ok(".5+5.", "5.5");
    rg_test_calc_ok("1.5e-3*2", "0.003");
    rg_test_calc_ok("2E+2", "200");
    rg_test_calc_ok("1/3", "0.333333333333333");
    rg_test_calc_ok("-0", "0");
    rg_test_calc_ok("999999999999999", "999999999999999");
    rg_test_calc_ok("1e15", "1e+15");
    rg_test_calc_ok("-1e15", "-1e+15");
    rg_test_calc_ok("2^0.5", "1.4142135623731");
    rg_test_calc_ok("e", "2.71828182845905");
    rg_test_calc_ok("2*pi", "6.28318530717959");
    rg_test_calc_ok("PI", "3.14159265358979");
}


static void
rg_test_calc_functions(void **state)
{
    (void) state;

    rg_test_calc_ok("floor(2.7)", "2");
    rg_test_calc_ok("floor(-2.5)", "-3");
    rg_test_calc_ok("ceil(2.1)", "3");
    rg_test_calc_ok("round(2.5)", "3");
    rg_test_calc_ok("round(-2.5)", "-3");
    rg_test_calc_ok("ln(e)", "1");
    rg_test_calc_ok("ln(1)", "0");
    rg_test_calc_ok("log10(1000)", "3");
    rg_test_calc_ok("sin(0)+cos(0)", "1");
    rg_test_calc_ok("cos(pi)", "-1");
    rg_test_calc_ok("tan(0)", "0");
    rg_test_calc_ok("abs(-2.25)", "2.25");
    rg_test_calc_ok("min(3, -1, 2)", "-1");
    rg_test_calc_ok("max(-4)", "-4");
    rg_test_calc_ok("max(1, min(7, 8), 2*3)", "7");
    rg_test_calc_ok("sqrt ( 2 ) ^ 2", "2");
    rg_test_calc_ok("SQRT(9)", "3");
    rg_test_calc_ok("-sqrt(4)^2", "-4");
    rg_test_calc_ok("abs(-(-(-3)))", "3");
}


static void
rg_test_calc_errors(void **state)
{
    int   i;
    char  buf[1100];

    (void) state;

    rg_test_calc_err("1/0", "division by zero");
    rg_test_calc_err("1/(2-2)", "division by zero");
    rg_test_calc_err("5%0", "division by zero");
    rg_test_calc_err("0^-1", "division by zero");

    rg_test_calc_err("2 x", "unexpected character 'x' at position 3");
    rg_test_calc_err("2 $ 3", "unexpected character '$' at position 3");
    rg_test_calc_err("2**3", "unexpected character '*' at position 3");
    rg_test_calc_err("()", "unexpected character ')' at position 2");
    rg_test_calc_err("max(1,,2)", "unexpected character ',' at position 7");
    rg_test_calc_err("2(3)", "unexpected character '(' at position 2");
    rg_test_calc_err("1+\xc3\xa9", "unexpected byte 0xc3 at position 3");
    rg_test_calc_err("1+\0", "unexpected byte 0x00 at position 3");
    rg_test_calc_err("1 2", "unexpected character '2' at position 3");

    rg_test_calc_err("(2+3*4",
                     "unbalanced parentheses: missing ')' at position 7");
    rg_test_calc_err("((1)",
                     "unbalanced parentheses: missing ')' at position 5");
    rg_test_calc_err("max(1,2",
                     "unbalanced parentheses: missing ')' at position 8");
    rg_test_calc_err("2+3)",
                     "unbalanced parentheses: unexpected ')' at position 4");

    rg_test_calc_err("foo(1)", "unknown function 'foo'");
    rg_test_calc_err("pi(2)", "unknown function 'pi'");
    rg_test_calc_err("x+1",
                     "unknown name 'x' at position 1; the constants are pi "
                     "and e");
    rg_test_calc_err("sqrt 4",
                     "function 'sqrt' needs its arguments in parentheses, as "
                     "in sqrt(2)");
    rg_test_calc_err("sqrt(1,2)", "function 'sqrt' takes 1 argument, got 2");
    rg_test_calc_err("abs()", "function 'abs' takes 1 argument, got 0");
    rg_test_calc_err("min( )", "function 'min' takes at least 1 argument");

    rg_test_calc_err("", "expression is empty");
    rg_test_calc_err(" \t\n ", "expression is empty");

    rg_test_calc_err("2+", "unexpected end of expression at position 3");
    rg_test_calc_err("-", "unexpected end of expression at position 2");
    rg_test_calc_err("(", "unexpected end of expression at position 2");

    rg_test_calc_err("sqrt(-1)",
                     "result is not a finite number (overflow or a value "
                     "outside a function's domain)");
    rg_test_calc_err("ln(0)",
                     "result is not a finite number (overflow or a value "
                     "outside a function's domain)");
    rg_test_calc_err("max(sqrt(-1), 1)",
                     "result is not a finite number (overflow or a value "
                     "outside a function's domain)");
    rg_test_calc_err("1e308*10",
                     "result is not a finite number (overflow or a value "
                     "outside a function's domain)");
    rg_test_calc_err("10^400",
                     "result is not a finite number (overflow or a value "
                     "outside a function's domain)");
    rg_test_calc_err("(-8)^(1/3)",
                     "result is not a finite number (overflow or a value "
                     "outside a function's domain)");
    rg_test_calc_err("1+1e999", "number '1e999' at position 3 is too large");

    /* 1024 bytes are accepted, 1025 are not */

    memset(buf, ' ', sizeof(buf));
    buf[0] = '7';
    rg_test_calc_expr(buf, 1024, 0, "7", __FILE__, __LINE__);
    rg_test_calc_expr(buf, 1025, 1, "expression too long (max 1024 bytes)",
                      __FILE__, __LINE__);

    /* 64 levels are accepted, 65 are not */

    for (i = 0; i < 64; i++) {
        buf[i] = '(';
        buf[64 + 1 + i] = ')';
    }
    buf[64] = '1';
    rg_test_calc_expr(buf, 129, 0, "1", __FILE__, __LINE__);

    for (i = 0; i < 65; i++) {
        buf[i] = '(';
        buf[65 + 1 + i] = ')';
    }
    buf[65] = '1';
    rg_test_calc_expr(buf, 131, 1, "expression nested too deeply (max 64 "
                      "levels)", __FILE__, __LINE__);

    memset(buf, '-', 64);
    buf[64] = '1';
    rg_test_calc_expr(buf, 65, 0, "1", __FILE__, __LINE__);
    buf[64] = '-';
    buf[65] = '1';
    rg_test_calc_expr(buf, 66, 1, "expression nested too deeply (max 64 "
                      "levels)", __FILE__, __LINE__);

    for (i = 0; i < 65; i++) {
        memcpy(buf + i * 4, "abs(", 4);
        buf[65 * 4 + 1 + i] = ')';
    }
    buf[65 * 4] = '1';
    rg_test_calc_expr(buf, 65 * 5 + 1, 1, "expression nested too deeply "
                      "(max 64 levels)", __FILE__, __LINE__);

    /* the argument itself */

    rg_test_calc_fail_args("{}", "missing argument 'expression'");
    rg_test_calc_fail_args("{\"expression\":null}",
                           "missing argument 'expression'");
    rg_test_calc_fail_args("{\"expr\":\"1+1\"}",
                           "missing argument 'expression'");
    rg_test_calc_fail_args("{\"expression\":5}",
                           "argument 'expression' must be a string, such as "
                           "\"2*(3+4)\"");
}


/* time */


/* the answer for `now` in a zone `off` seconds east of UTC */
static void
rg_test_time_expect(char *buf, size_t size, time_t now, long off,
    const char *name)
{
    time_t     t;
    struct tm  tm;

    t = now + off;
    assert_non_null(gmtime_r(&t, &tm));

    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d%c%02ld:%02ld (%s, %s)",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, off < 0 ? '-' : '+', labs(off) / 3600,
             labs(off) % 3600 / 60, name, rg_test_weekdays[tm.tm_wday]);
}


/* runs time_now with args and checks the answer against every second the
 * call may have read, at offset off or (daylight saving time) off2 */
static void
rg_test_time_check2(const char *args, long off, long off2, const char *name)
{
    int              i, found;
    char             expect[128];
    long             offs[2];
    time_t           before, after, t;
    rg_test_call_t   tc;

    before = time(NULL);
    assert_int_equal(rg_test_call_run(&tc,
                                      rg_test_tool(rg_test_time.module,
                                                   "time_now"),
                                      NULL, args),
                     RG_TOOL_OK);
    after = time(NULL);

    assert_int_equal(tc.answers, 1);
    if (tc.failed) {
        fail_msg("time_now %s failed: %s", args, tc.result);
    }

    offs[0] = off;
    offs[1] = off2;
    found = 0;

    for (i = 0; i < 2 && !found; i++) {
        for (t = before; t <= after && !found; t++) {
            rg_test_time_expect(expect, sizeof(expect), t, offs[i], name);
            found = (strcmp(tc.result, expect) == 0);
        }
    }

    if (!found) {
        fail_msg("time_now %s: \"%s\", expected \"%s\" (or at another "
                 "offset or second)", args, tc.result, expect);
    }

    assert_int_equal(tc.result_len, strlen(expect));

    rg_test_call_free(&tc);
}


static void
rg_test_time_check(const char *args, long off, const char *name)
{
    rg_test_time_check2(args, off, off, name);
}


static void
rg_test_time_fail(const char *args, const char *expect)
{
    rg_test_call_t  tc;

    assert_int_equal(rg_test_call_run(&tc,
                                      rg_test_tool(rg_test_time.module,
                                                   "time_now"),
                                      NULL, args),
                     RG_TOOL_OK);
    assert_int_equal(tc.answers, 1);
    assert_true(tc.failed);
    assert_string_equal(tc.result, expect);

    rg_test_call_free(&tc);
}


static int
rg_test_have_zone(const char *name)
{
    char         path[256];
    struct stat  st;

    snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", name);

    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}


static void
rg_test_time_module(void **state)
{
    json_t           *schema, *prop;
    const rg_tool_t  *tool;

    (void) state;

    rg_test_module_valid(rg_test_time.module, "time");

    assert_null(rg_test_time.module->directives);
    assert_int_equal(rg_test_tool_count(rg_test_time.module), 1);

    /* not idempotent: a cached answer would be a stale time */
    tool = rg_test_tool(rg_test_time.module, "time_now");
    assert_int_equal(tool->flags, 0);
    assert_null(tool->cancel);

    schema = rg_test_schema(tool);
    prop = json_object_get(json_object_get(schema, "properties"), "timezone");
    assert_string_equal(json_string_value(json_object_get(prop, "type")),
                        "string");
    assert_string_equal(json_string_value(json_array_get(
                            json_object_get(prop, "examples"), 0)), "UTC");
    assert_null(json_object_get(schema, "required"));

    json_decref(schema);
}


static void
rg_test_time_utc(void **state)
{
    (void) state;

    rg_test_time_check("{}", 0, "UTC");
    rg_test_time_check("{\"timezone\":\"UTC\"}", 0, "UTC");
    rg_test_time_check("{\"timezone\":\"utc\"}", 0, "UTC");
    rg_test_time_check("{\"timezone\":\"\"}", 0, "UTC");
    rg_test_time_check("{\"timezone\":null}", 0, "UTC");
}


static void
rg_test_time_zone(void **state)
{
    char        *saved;
    const char  *tz;

    (void) state;

    if (!rg_test_have_zone("Asia/Kolkata") || !rg_test_have_zone("Etc/GMT+5")
        || !rg_test_have_zone("Europe/Paris"))
    {
        skip();
    }

    tz = getenv("TZ");
    saved = tz ? strdup(tz) : NULL;

    /* no TZ before: none after */

    assert_int_equal(unsetenv("TZ"), 0);

    rg_test_time_check("{\"timezone\":\"Asia/Kolkata\"}", 5 * 3600 + 1800,
                       "Asia/Kolkata");
    assert_null(getenv("TZ"));

    /* Etc/GMT+5 is five hours west, by POSIX's inverted sign */

    assert_int_equal(setenv("TZ", "Asia/Tokyo", 1), 0);

    rg_test_time_check("{\"timezone\":\"Etc/GMT+5\"}", -5 * 3600,
                       "Etc/GMT+5");
    assert_string_equal(getenv("TZ"), "Asia/Tokyo");

    rg_test_time_check("{\"timezone\":\"Etc/GMT-14\"}", 14 * 3600,
                       "Etc/GMT-14");
    assert_string_equal(getenv("TZ"), "Asia/Tokyo");

    /* Paris is +01:00 or +02:00, depending on the date */

    rg_test_time_check2("{\"timezone\":\"Europe/Paris\"}", 3600, 7200,
                        "Europe/Paris");

    assert_string_equal(getenv("TZ"), "Asia/Tokyo");

    if (saved != NULL) {
        assert_int_equal(setenv("TZ", saved, 1), 0);

    } else {
        assert_int_equal(unsetenv("TZ"), 0);
    }

    tzset();
    free(saved);
}


static void
rg_test_time_bad_zone(void **state)
{
    (void) state;

    rg_test_time_fail("{\"timezone\":\"Mars/Olympus_Mons\"}",
                      "unknown timezone 'Mars/Olympus_Mons'; use an IANA "
                      "name such as Europe/Paris or UTC");
    rg_test_time_fail("{\"timezone\":\"../../etc/passwd\"}",
                      "unknown timezone '../../etc/passwd'; use an IANA "
                      "name such as Europe/Paris or UTC");
    rg_test_time_fail("{\"timezone\":\"Europe/../../../etc/passwd\"}",
                      "unknown timezone 'Europe/../../../etc/passwd'; use an "
                      "IANA name such as Europe/Paris or UTC");
    rg_test_time_fail("{\"timezone\":\"/etc/passwd\"}",
                      "unknown timezone '/etc/passwd'; use an IANA name "
                      "such as Europe/Paris or UTC");
    rg_test_time_fail("{\"timezone\":\"Europe\"}",
                      "unknown timezone 'Europe'; use an IANA name such as "
                      "Europe/Paris or UTC");
    rg_test_time_fail("{\"timezone\":\"zone.tab\"}",
                      "unknown timezone 'zone.tab'; use an IANA name such "
                      "as Europe/Paris or UTC");
    rg_test_time_fail("{\"timezone\":\"leapseconds\"}",
                      "unknown timezone 'leapseconds'; use an IANA name "
                      "such as Europe/Paris or UTC");
    rg_test_time_fail("{\"timezone\":\"Europe/Paris \"}",
                      "unknown timezone 'Europe/Paris '; use an IANA name "
                      "such as Europe/Paris or UTC");
    rg_test_time_fail("{\"timezone\":\"Europe/\\u0001\\u00e9\"}",
                      "unknown timezone 'Europe/??" "?'; use an IANA name "
                      "such as Europe/Paris or UTC");
    rg_test_time_fail("{\"timezone\":\"Europe/Paris\\u0000x\"}",
                      "unknown timezone 'Europe/Paris?x'; use an IANA name "
                      "such as Europe/Paris or UTC");
    rg_test_time_fail("{\"timezone\":\""
                      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB\"}",
                      "unknown timezone '"
                      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA...'; use an IANA name "
                      "such as Europe/Paris or UTC");
}


/* time_now in pool threads at once */

#define RG_TEST_ZONE_CALLS  300


typedef struct {
    rg_thread_task_t    task;
    const char         *zone;       /* NULL: the process's own local time */
    const char         *offs[2];    /* as time_now writes them: "+05:30" */
    rg_uint_t          *left;
    struct event_base  *base;
    int                 bad;
    char                what[256];
} rg_test_zone_task_t;


static void
rg_test_zone_handler(rg_thread_task_t *task)
{
    int                   i;
    char                  args[96], name[96];
    time_t                now;
    struct tm             tm;
    rg_test_call_t        tc;
    rg_test_zone_task_t  *zt;

    zt = task->data;

    snprintf(args, sizeof(args), "{\"timezone\":\"%s\"}",
             zt->zone ? zt->zone : "");
    snprintf(name, sizeof(name), " (%s, ", zt->zone ? zt->zone : "");

    for (i = 0; i < RG_TEST_ZONE_CALLS && !zt->bad; i++) {
        if (zt->zone == NULL) {
            now = time(NULL);
            if (localtime_r(&now, &tm) == NULL || tm.tm_gmtoff != 0) {
                zt->bad = 1;
                snprintf(zt->what, sizeof(zt->what), "the process's own "
                         "local time moved to %+ld s", (long) tm.tm_gmtoff);
            }
            continue;
        }

        rg_test_call_init(&tc, rg_test_tool(rg_test_time.module, "time_now"),
                          NULL, args);
        tc.call.tool->start(&tc.call);

        if (tc.answers != 1 || tc.failed || tc.result_len < 26
            || (strncmp(tc.result + 19, zt->offs[0], 6) != 0
                && strncmp(tc.result + 19, zt->offs[1], 6) != 0)
            || strstr(tc.result, name) == NULL)
        {
            zt->bad = 1;
            snprintf(zt->what, sizeof(zt->what), "%s: \"%s\"", zt->zone,
                     tc.result ? tc.result : "(no answer)");
        }

        rg_test_call_free(&tc);
    }
}


static void
rg_test_zone_done(rg_thread_task_t *task)
{
    rg_test_zone_task_t  *zt;

    zt = task->data;

    if (--*zt->left == 0) {
        event_base_loopbreak(zt->base);
    }
}


/* Calls in different zones run at once in pool threads, while two more
 * threads read the process's own local time (TZ=UTC): every answer is in
 * its own zone, and the process's zone never moves, for no call switches
 * TZ (ThreadSanitizer would also see a switch race with the readers). */
static void
rg_test_time_threads(void **state)
{
    char                 *saved;
    rg_uint_t             i, n, left;
    const char           *tz;
    rg_thread_pool_t     *tp;
    struct event_base    *base;
    rg_test_zone_task_t   zt[8];

    static const char  *zones[][3] = {
        { "Asia/Kolkata", "+05:30", "+05:30" },
        { "Etc/GMT+5", "-05:00", "-05:00" },
        { "Asia/Tokyo", "+09:00", "+09:00" },
        { "Europe/Paris", "+01:00", "+02:00" },
        { "America/New_York", "-05:00", "-04:00" },
        { "Etc/GMT-14", "+14:00", "+14:00" },
    };

    (void) state;

    for (i = 0; i < rg_nelems(zones); i++) {
        if (!rg_test_have_zone(zones[i][0])) {
            skip();
        }
    }

    tz = getenv("TZ");
    saved = tz ? strdup(tz) : NULL;
    assert_int_equal(setenv("TZ", "UTC", 1), 0);
    tzset();

    base = event_base_new();
    assert_non_null(base);
    tp = rg_thread_pool_create(base, 8, 16, rg_log_stderr());
    assert_non_null(tp);

    n = rg_nelems(zt);
    left = n;
    memset(zt, 0, sizeof(zt));

    for (i = 0; i < n; i++) {
        if (i < rg_nelems(zones)) {
            zt[i].zone = zones[i][0];
            zt[i].offs[0] = zones[i][1];
            zt[i].offs[1] = zones[i][2];
        }

        zt[i].left = &left;
        zt[i].base = base;
        zt[i].task.handler = rg_test_zone_handler;
        zt[i].task.done = rg_test_zone_done;
        zt[i].task.data = &zt[i];
        rg_thread_pool_post(tp, &zt[i].task);
    }

    assert_int_equal(event_base_dispatch(base), 0);
    assert_int_equal(left, 0);

    rg_thread_pool_destroy(tp);
    event_base_free(base);

    if (saved != NULL) {
        assert_int_equal(setenv("TZ", saved, 1), 0);
    } else {
        assert_int_equal(unsetenv("TZ"), 0);
    }

    tzset();
    free(saved);

    for (i = 0; i < n; i++) {
        if (zt[i].bad) {
            fail_msg("%s", zt[i].what);
        }
    }
}


/* example */


static void
rg_test_example_module(void **state)
{
    const rg_tool_module_t     *m;
    const rg_tool_directive_t  *d;

    (void) state;

    m = rg_test_example.module;

    rg_test_module_valid(m, "example");

    assert_non_null(m->create_conf);
    assert_non_null(m->init);
    assert_non_null(m->exit);

    d = m->directives;
    assert_non_null(d);
    assert_string_equal(d[0].name, "greeting");
    assert_int_equal(d[0].min_args, 1);
    assert_int_equal(d[0].max_args, 1);
    assert_non_null(d[0].set);
    assert_null(d[1].name);

    assert_int_equal(rg_test_tool_count(m), 2);
    assert_int_equal(rg_test_tool(m, "greet")->flags, RG_TOOL_READ_ONLY);
    assert_null(rg_test_tool(m, "greet")->cancel);
    assert_non_null(rg_test_tool(m, "wait")->cancel);
}


static void
rg_test_example_greet(void **state)
{
    void                    *conf;
    const char              *argv[1];
    rg_test_call_t           tc;
    const rg_tool_t         *greet;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_example.module;
    greet = rg_test_tool(m, "greet");

    /* configured */

    conf = m->create_conf(&rg_test_host);
    assert_non_null(conf);

    argv[0] = "Good morning";
    assert_null(m->directives[0].set(&rg_test_host, conf, 1, argv));
    argv[0] = "Hi";
    assert_string_equal(m->directives[0].set(&rg_test_host, conf, 1, argv),
                        "is duplicate");
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);

    assert_int_equal(rg_test_call_run(&tc, greet, conf, "{\"name\":\"Ada\"}"),
                     RG_TOOL_OK);
    assert_int_equal(tc.answers, 1);
    assert_false(tc.failed);
    assert_string_equal(tc.result, "Good morning, Ada!");
    assert_int_equal(tc.result_len, strlen("Good morning, Ada!"));
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, greet, conf, "{}"), RG_TOOL_OK);
    assert_int_equal(tc.answers, 1);
    assert_true(tc.failed);
    assert_string_equal(tc.result, "missing argument 'name' (a string)");
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, greet, conf, "{\"name\":7}"),
                     RG_TOOL_OK);
    assert_true(tc.failed);
    assert_string_equal(tc.result, "missing argument 'name' (a string)");
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, greet, conf, "{\"name\":\"\"}"),
                     RG_TOOL_OK);
    assert_true(tc.failed);
    assert_string_equal(tc.result, "argument 'name' must not be empty");
    rg_test_call_free(&tc);

    m->exit(&rg_test_host, conf);

    /* the default greeting */

    conf = m->create_conf(&rg_test_host);
    assert_non_null(conf);
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);

    assert_int_equal(rg_test_call_run(&tc, greet, conf,
                                      "{\"name\":\"Grace Hopper\"}"),
                     RG_TOOL_OK);
    assert_int_equal(tc.answers, 1);
    assert_false(tc.failed);
    assert_string_equal(tc.result, "Hello, Grace Hopper!");
    rg_test_call_free(&tc);

    m->exit(&rg_test_host, conf);
}


static void
rg_test_example_conf(void **state)
{
    char                     longer[66];
    void                    *conf;
    const char              *argv[1];
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_example.module;

    conf = m->create_conf(&rg_test_host);
    assert_non_null(conf);

    argv[0] = "";
    assert_string_equal(m->directives[0].set(&rg_test_host, conf, 1, argv),
                        "must not be empty");

    memset(longer, 'a', 65);
    longer[65] = '\0';
    argv[0] = longer;
    assert_string_equal(m->directives[0].set(&rg_test_host, conf, 1, argv),
                        "is too long (max 64 bytes)");

    longer[64] = '\0';
    assert_null(m->directives[0].set(&rg_test_host, conf, 1, argv));

    m->exit(&rg_test_host, conf);

    /* init() rejects what set() let through */

    conf = m->create_conf(&rg_test_host);
    assert_non_null(conf);

    argv[0] = "Hi\nthere";
    assert_null(m->directives[0].set(&rg_test_host, conf, 1, argv));
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_ERROR);
    assert_int_equal(rg_test_log_level, RG_TOOL_LOG_ERR);
    assert_string_equal(rg_test_log_text, "example: \"greeting\" must not "
                        "contain control characters");

    m->exit(&rg_test_host, conf);
}


static void
rg_test_example_wait(void **state)
{
    void                    *conf;
    rg_test_call_t           tc, tc2;
    const rg_tool_t         *wait;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_example.module;
    wait = rg_test_tool(m, "wait");

    conf = m->create_conf(&rg_test_host);
    assert_non_null(conf);
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);

    /* answers from the timer, not before */

    assert_int_equal(rg_test_call_run(&tc, wait, conf, "{\"ms\":250}"),
                     RG_TOOL_AGAIN);
    assert_int_equal(tc.answers, 0);
    assert_non_null(tc.call.ctx);
    assert_int_equal(rg_test_timers_active(), 1);
    assert_int_equal(rg_test_timers->msec, 250);

    assert_int_equal(rg_test_call_run(&tc2, wait, conf, "{\"ms\":0}"),
                     RG_TOOL_AGAIN);
    assert_int_equal(rg_test_timers_active(), 2);

    assert_int_equal(rg_test_timers_fire(), 2);

    assert_int_equal(tc.answers, 1);
    assert_false(tc.failed);
    assert_string_equal(tc.result, "waited 250 ms");
    assert_null(tc.call.ctx);

    assert_int_equal(tc2.answers, 1);
    assert_string_equal(tc2.result, "waited 0 ms");

    rg_test_call_free(&tc);
    rg_test_call_free(&tc2);

    assert_int_equal(rg_test_call_run(&tc, wait, conf, "{\"ms\":10000}"),
                     RG_TOOL_AGAIN);
    assert_int_equal(rg_test_timers_fire(), 1);
    assert_string_equal(tc.result, "waited 10000 ms");
    rg_test_call_free(&tc);

    /* bad arguments answer at once */

    assert_int_equal(rg_test_call_run(&tc, wait, conf, "{\"ms\":10001}"),
                     RG_TOOL_OK);
    assert_int_equal(tc.answers, 1);
    assert_true(tc.failed);
    assert_string_equal(tc.result,
                        "argument 'ms' must be from 0 to 10000, not 10001");
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, wait, conf, "{\"ms\":-1}"),
                     RG_TOOL_OK);
    assert_string_equal(tc.result,
                        "argument 'ms' must be from 0 to 10000, not -1");
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, wait, conf, "{\"ms\":\"5\"}"),
                     RG_TOOL_OK);
    assert_true(tc.failed);
    assert_string_equal(tc.result,
                        "missing argument 'ms' (an integer from 0 to 10000)");
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, wait, conf, "{}"), RG_TOOL_OK);
    assert_string_equal(tc.result,
                        "missing argument 'ms' (an integer from 0 to 10000)");
    rg_test_call_free(&tc);

    /* no timer: fails at once */

    rg_test_timer_refuse = 1;
    assert_int_equal(rg_test_call_run(&tc, wait, conf, "{\"ms\":5}"),
                     RG_TOOL_OK);
    assert_int_equal(tc.answers, 1);
    assert_true(tc.failed);
    assert_string_equal(tc.result, "cannot start a timer");
    assert_null(tc.call.ctx);
    rg_test_call_free(&tc);
    rg_test_timer_refuse = 0;

    assert_int_equal(rg_test_timers_active(), 0);

    m->exit(&rg_test_host, conf);
}


static void
rg_test_example_cancel(void **state)
{
    void                    *conf;
    rg_test_call_t           tc;
    const rg_tool_t         *wait;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_example.module;
    wait = rg_test_tool(m, "wait");

    conf = m->create_conf(&rg_test_host);
    assert_non_null(conf);
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);

    assert_int_equal(rg_test_call_run(&tc, wait, conf, "{\"ms\":5000}"),
                     RG_TOOL_AGAIN);
    assert_int_equal(rg_test_timers_active(), 1);

    /* the timer goes, the state is freed (ASan would say otherwise), no
     * answer is sent */

    wait->cancel(&tc.call);

    assert_null(tc.call.ctx);
    assert_int_equal(rg_test_timers_active(), 0);
    assert_int_equal(rg_test_timers_fire(), 0);
    assert_int_equal(tc.answers, 0);

    rg_test_call_free(&tc);

    m->exit(&rg_test_host, conf);
}


/* test plugins */


static void
rg_test_plugin_good(void **state)
{
    void                    *conf;
    const char              *argv[1];
    const char              *args;
    rg_test_call_t           tc;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_good.module;

    rg_test_module_valid(m, "good");
    assert_int_equal(rg_test_tool_count(m), 1);
    assert_int_equal(rg_test_tool(m, "echo")->flags, RG_TOOL_READ_ONLY);

    assert_non_null(m->directives);
    assert_string_equal(m->directives[0].name, "prefix");
    assert_int_equal(m->directives[0].min_args, 1);
    assert_int_equal(m->directives[0].max_args, 1);
    assert_null(m->directives[1].name);

    assert_non_null(m->create_conf);
    assert_null(m->init);
    assert_non_null(m->exit);

    conf = m->create_conf(&rg_test_host);
    assert_non_null(conf);

    argv[0] = "> ";
    assert_null(m->directives[0].set(&rg_test_host, conf, 1, argv));
    assert_string_equal(m->directives[0].set(&rg_test_host, conf, 1, argv),
                        "is duplicate");

    /* echo answers with the raw JSON text, spacing and all */

    args = "{ \"text\": \"hi\",  \"n\": [1, 2.5, null] }";

    assert_int_equal(rg_test_call_run(&tc, rg_test_tool(m, "echo"), conf,
                                      args),
                     RG_TOOL_OK);
    assert_int_equal(tc.answers, 1);
    assert_false(tc.failed);
    assert_string_equal(tc.result, args);
    assert_int_equal(tc.result_len, strlen(args));
    rg_test_call_free(&tc);

    m->exit(&rg_test_host, conf);
}


static void
rg_test_plugin_badabi(void **state)
{
    char                     buf[128], expect[128];
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_badabi.module;
    assert_non_null(m);

    assert_int_equal(m->abi_version, RG_TOOL_ABI_VERSION + 1);

    snprintf(expect, sizeof(expect), "abi version %u, expected %u",
             (unsigned) RG_TOOL_ABI_VERSION + 1,
             (unsigned) RG_TOOL_ABI_VERSION);
    assert_string_equal(rg_test_check(m, buf, sizeof(buf)), expect);
}


static void
rg_test_plugin_badsig(void **state)
{
    char                     buf[128], expect[128];
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_badsig.module;
    assert_non_null(m);

    assert_int_equal(m->abi_version, RG_TOOL_ABI_VERSION);
    assert_int_equal(m->size, sizeof(rg_tool_module_t));
    assert_string_equal(m->signature, "rg1:p4:l4");
    assert_string_not_equal(m->signature, RG_TOOL_SIGNATURE);

    snprintf(expect, sizeof(expect),
             "signature \"rg1:p4:l4\", expected \"%s\"", RG_TOOL_SIGNATURE);
    assert_string_equal(rg_test_check(m, buf, sizeof(buf)), expect);
}


static void
rg_test_plugin_nosym(void **state)
{
    int  (*answer)(void);

    (void) state;

    assert_non_null(rg_test_nosym.handle);
    assert_null(rg_test_nosym.module);
    assert_null(dlsym(rg_test_nosym.handle, "rg_tool_module"));

    *(void **) &answer = dlsym(rg_test_nosym.handle, "rg_nosym_answer");
    assert_non_null(answer);
    assert_int_equal(answer(), 42);
}


static void
rg_test_plugin_fail(void **state)
{
    rg_test_call_t           tc;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_fail.module;

    rg_test_module_valid(m, "fail");
    assert_int_equal(rg_test_tool_count(m), 2);

    assert_int_equal(rg_test_call_run(&tc, rg_test_tool(m, "always_fail"),
                                      NULL, "{}"),
                     RG_TOOL_OK);
    assert_int_equal(tc.answers, 1);
    assert_true(tc.failed);
    assert_string_equal(tc.result, "backend unavailable: connection refused");
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, rg_test_tool(m, "error_noanswer"),
                                      NULL, "{}"),
                     RG_TOOL_ERROR);
    assert_int_equal(tc.answers, 0);
    assert_null(tc.result);
    rg_test_call_free(&tc);
}


static void
rg_test_plugin_slow(void **state)
{
    double                   ms;
    rg_test_call_t           tc;
    struct timespec          t0, t1;
    const rg_tool_t         *async, *blocking;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_slow.module;

    rg_test_module_valid(m, "slow");
    assert_int_equal(rg_test_tool_count(m), 3);

    async = rg_test_tool(m, "slow_async");
    blocking = rg_test_tool(m, "slow_blocking");

    assert_false(async->flags & RG_TOOL_BLOCKING);
    assert_non_null(async->cancel);
    assert_true(blocking->flags & RG_TOOL_BLOCKING);
    /* run by test_tools_parallel, which has the host it asks */
    assert_true(rg_test_tool(m, "slow_host_calls")->flags & RG_TOOL_BLOCKING);

    assert_int_equal(rg_test_call_run(&tc, async, NULL, "{\"ms\":30}"),
                     RG_TOOL_AGAIN);
    assert_int_equal(tc.answers, 0);
    assert_int_equal(rg_test_timers_active(), 1);
    assert_int_equal(rg_test_timers->msec, 30);
    assert_int_equal(rg_test_timers_fire(), 1);
    assert_int_equal(tc.answers, 1);
    assert_string_equal(tc.result, "waited 30 ms");
    assert_null(tc.call.ctx);
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, async, NULL, "{\"ms\":30}"),
                     RG_TOOL_AGAIN);
    async->cancel(&tc.call);
    assert_null(tc.call.ctx);
    assert_int_equal(rg_test_timers_fire(), 0);
    assert_int_equal(tc.answers, 0);
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, async, NULL, "{\"ms\":-5}"),
                     RG_TOOL_OK);
    assert_true(tc.failed);
    assert_string_equal(tc.result, "argument 'ms' must be from 0 to 600000");
    rg_test_call_free(&tc);

    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(rg_test_call_run(&tc, blocking, NULL, "{\"ms\":20}"),
                     RG_TOOL_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);

    ms = (double) (t1.tv_sec - t0.tv_sec) * 1e3
         + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6;
    assert_true(ms >= 20.0);

    assert_int_equal(tc.answers, 1);
    assert_false(tc.failed);
    assert_string_equal(tc.result, "slept 20 ms");
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, blocking, NULL, "{}"),
                     RG_TOOL_OK);
    assert_true(tc.failed);
    assert_string_equal(tc.result, "missing argument 'ms' (an integer)");
    rg_test_call_free(&tc);
}


/* crash_now and hang_now run in a child, which is what isolation is for */
static void
rg_test_plugin_crash(void **state)
{
    int                      status, i;
    pid_t                    pid, r;
    rg_test_call_t           tc;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_crash.module;

    rg_test_module_valid(m, "crash");
    assert_int_equal(rg_test_tool_count(m), 2);
    assert_int_equal(rg_test_tool(m, "crash_now")->flags, 0);
    assert_int_equal(rg_test_tool(m, "hang_now")->flags, 0);

    fflush(NULL);

    pid = fork();
    assert_true(pid != -1);

    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        rg_test_call_run(&tc, rg_test_tool(m, "crash_now"), NULL, "{}");
        _exit(3);
    }

    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGSEGV);

    pid = fork();
    assert_true(pid != -1);

    if (pid == 0) {
        rg_test_call_run(&tc, rg_test_tool(m, "hang_now"), NULL, "{}");
        _exit(3);
    }

    /* still there after 200 ms */

    for (i = 0; i < 20; i++) {
        r = waitpid(pid, &status, WNOHANG);
        assert_int_equal(r, 0);
        usleep(10000);
    }

    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
}


int
main(void)
{
    int  failed;

    const struct CMUnitTest  rg_test_module_tests[] = {
        cmocka_unit_test_teardown(rg_test_calc_module, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_calc_precedence, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_calc_functions, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_calc_errors, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_time_module, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_time_utc, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_time_zone, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_time_bad_zone, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_time_threads, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_example_module, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_example_greet, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_example_conf, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_example_wait, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_example_cancel, rg_test_teardown),
    };

    const struct CMUnitTest  rg_test_plugin_tests[] = {
        cmocka_unit_test_teardown(rg_test_plugin_good, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_plugin_badabi, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_plugin_badsig, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_plugin_nosym, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_plugin_fail, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_plugin_slow, rg_test_teardown),
        cmocka_unit_test_teardown(rg_test_plugin_crash, rg_test_teardown),
    };

    failed = cmocka_run_group_tests_name("modules", rg_test_module_tests,
                                         rg_test_setup_modules,
                                         rg_test_teardown_modules);

    failed += cmocka_run_group_tests_name("plugins", rg_test_plugin_tests,
                                          rg_test_setup_plugins,
                                          rg_test_teardown_plugins);

    return failed != 0;
}
