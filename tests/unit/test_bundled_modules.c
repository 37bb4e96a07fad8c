/* test_bundled_modules.c: unit tests of the bundled modules fs, exec, http
 * and agent, loaded as the host loads them.
 *
 * dlopen()s the built .so files from $RG_MODULES_DIR (default
 * objs/modules) with RTLD_NOW|RTLD_LOCAL and drives their tools through a
 * fake rg_tool_host_t: arguments read with jansson, answers captured,
 * sizes and times parsed by the host's rules (written again here);
 * http_get() and agent_run() record what they were asked and return, and
 * the test calls their callbacks by hand. fs and exec work on a temporary
 * tree with symlinks that try to leave it. Uses nothing of the host but
 * rg_tool_module.h. */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rg_tool_module.h>


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


typedef struct {
    void                     *handle;
    const rg_tool_module_t   *module;
} rg_test_so_t;


/* what http_get() and agent_run() were asked last */
typedef struct {
    int                       calls;
    int                       refuse;       /* return -1 */
    int                       cancelled;
    rg_tool_call_t           *call;
    char                      url[2048];
    size_t                    max_bytes;
    uint64_t                  timeout;
    rg_tool_http_pt           http_cb;
    char                      agent[128];
    char                      input[1024];
    size_t                    input_len;
    rg_tool_agent_pt          agent_cb;
    const char               *error;
} rg_test_async_t;


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
static char *rg_test_str(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void *rg_test_exec_conf(const char *timeout, const char *max_output,
    const char *allow1, const char *allow2);
static int rg_test_host_http_get(rg_tool_call_t *call, const char *url,
    size_t max_bytes, uint64_t timeout_ms, rg_tool_http_pt cb, void *data);
static void rg_test_host_http_cancel(rg_tool_call_t *call);
static int rg_test_host_agent_run(rg_tool_call_t *call, const char *agent,
    const char *input, size_t len, rg_tool_agent_pt cb, void *data);
static void rg_test_host_agent_cancel(rg_tool_call_t *call);
static const char *rg_test_host_error(rg_tool_call_t *call);
static int rg_test_host_arg_array_len(rg_tool_call_t *call, const char *key,
    size_t *n);
static int rg_test_host_arg_array_string(rg_tool_call_t *call,
    const char *key, size_t i, const char **s, size_t *len);
static int rg_test_host_parse_size(const char *s, size_t *out);
static int rg_test_host_parse_msec(const char *s, uint64_t *out);


static rg_tool_host_t  rg_test_host = {
    RG_TOOL_ABI_VERSION,
    sizeof(rg_tool_host_t),
    rg_test_host_log,
    rg_test_host_done,
    rg_test_host_fail,
    rg_test_host_arg_string,
    rg_test_host_arg_number,
    rg_test_host_arg_int,
    rg_test_host_arg_bool,
    rg_test_host_timer_add,
    rg_test_host_timer_del,
    NULL,
    rg_test_host_http_get,
    rg_test_host_http_cancel,
    rg_test_host_agent_run,
    rg_test_host_agent_cancel,
    rg_test_host_error,
    rg_test_host_arg_array_len,
    rg_test_host_arg_array_string,
    rg_test_host_parse_size,
    rg_test_host_parse_msec,
    NULL,                          /* io_add: exec waits by itself */
    NULL,
    NULL,
    NULL,
    NULL,                          /* deadline */
    NULL,                          /* http_get_flags */
    NULL,                          /* idempotency_key */
    NULL                           /* traceparent */
};


static int               rg_test_log_level;
static char              rg_test_log_text[1024];
static rg_test_async_t   rg_test_async;

static rg_test_so_t      rg_test_fs;
static rg_test_so_t      rg_test_exec;
static rg_test_so_t      rg_test_http;
static rg_test_so_t      rg_test_agent;

/* the tree: base/root is the fs and exec root; base/outside.txt and
 * base/outdir are what the escapes aim at */
static char              rg_test_base[PATH_MAX];
static char              rg_test_root[PATH_MAX];


/* the fake host */


static void
rg_test_host_log(rg_tool_host_t *host, int level, const char *fmt, ...)
{
    va_list  ap;

    assert_true(host->log == rg_test_host_log);

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

    /* one line, for the model */
    assert_null(strchr(tc->result, '\n'));
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
    (void) host;
    (void) msec;
    (void) handler;
    (void) data;

    fail_msg("these modules use no timer");

    return NULL;
}


static void
rg_test_host_timer_del(rg_tool_timer_t *timer)
{
    (void) timer;

    fail_msg("these modules use no timer");
}


static int
rg_test_host_http_get(rg_tool_call_t *call, const char *url,
    size_t max_bytes, uint64_t timeout_ms, rg_tool_http_pt cb, void *data)
{
    assert_non_null(url);
    assert_non_null(cb);
    assert_null(data);

    rg_test_async.calls++;
    rg_test_async.call = call;
    snprintf(rg_test_async.url, sizeof(rg_test_async.url), "%s", url);
    rg_test_async.max_bytes = max_bytes;
    rg_test_async.timeout = timeout_ms;
    rg_test_async.http_cb = cb;

    return rg_test_async.refuse ? -1 : 0;
}


static void
rg_test_host_http_cancel(rg_tool_call_t *call)
{
    assert_ptr_equal(call, rg_test_async.call);

    rg_test_async.cancelled++;
}


static int
rg_test_host_agent_run(rg_tool_call_t *call, const char *agent,
    const char *input, size_t len, rg_tool_agent_pt cb, void *data)
{
    assert_non_null(agent);
    assert_non_null(cb);
    assert_null(data);
    assert_true(len < sizeof(rg_test_async.input));

    rg_test_async.calls++;
    rg_test_async.call = call;
    snprintf(rg_test_async.agent, sizeof(rg_test_async.agent), "%s", agent);
    memcpy(rg_test_async.input, input, len);
    rg_test_async.input[len] = '\0';
    rg_test_async.input_len = len;
    rg_test_async.agent_cb = cb;

    return rg_test_async.refuse ? -1 : 0;
}


static void
rg_test_host_agent_cancel(rg_tool_call_t *call)
{
    assert_ptr_equal(call, rg_test_async.call);

    rg_test_async.cancelled++;
}


static const char *
rg_test_host_error(rg_tool_call_t *call)
{
    (void) call;

    return rg_test_async.error;
}


static int
rg_test_host_arg_array_len(rg_tool_call_t *call, const char *key,
    size_t *n)
{
    json_t  *v;

    v = json_object_get(((rg_test_call_t *) call)->root, key);
    if (!json_is_array(v)) {
        return -1;
    }

    *n = json_array_size(v);

    return 0;
}


static int
rg_test_host_arg_array_string(rg_tool_call_t *call, const char *key,
    size_t i, const char **s, size_t *len)
{
    json_t  *v;

    v = json_array_get(json_object_get(((rg_test_call_t *) call)->root, key),
                       i);
    if (!json_is_string(v)) {
        return -1;
    }

    *s = json_string_value(v);
    if (len != NULL) {
        *len = json_string_length(v);
    }

    return 0;
}


/* The host's units, as rg_conf_parse_size() reads them: digits, then at
 * most one of k, m, g (either case); up to SIZE_MAX / 2. */
static int
rg_test_host_parse_size(const char *s, size_t *out)
{
    size_t  len, mul, v, i, d;

    len = strlen(s);
    mul = 1;

    if (len > 0) {
        switch (s[len - 1]) {
        case 'k': case 'K': mul = 1024; len--; break;
        case 'm': case 'M': mul = 1024 * 1024; len--; break;
        case 'g': case 'G': mul = 1024 * 1024 * 1024; len--; break;
        }
    }

    if (len == 0) {
        return -1;
    }

    for (v = 0, i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }

        d = (size_t) (s[i] - '0');

        if (v > (SIZE_MAX / mul / 2 - d) / 10) {
            return -1;
        }

        v = v * 10 + d;
    }

    *out = v * mul;

    return 0;
}


/* The host's times, as rg_conf_parse_msec() reads them: numbers each with
 * ms, s, m, h or d, added up ("1m30s"); a number without a unit, last, is
 * seconds; up to UINT64_MAX / 2 ms. */
static int
rg_test_host_parse_msec(const char *s, uint64_t *out)
{
    uint64_t  total, n, mul;

    if (*s == '\0') {
        return -1;
    }

    total = 0;

    while (*s != '\0') {
        if (*s < '0' || *s > '9') {
            return -1;
        }

        for (n = 0; *s >= '0' && *s <= '9'; s++) {
            if (n > UINT64_MAX / 10 - 10) {
                return -1;
            }

            n = n * 10 + (uint64_t) (*s - '0');
        }

        if (*s == '\0') {
            mul = 1000;

        } else if (s[0] == 'm' && s[1] == 's') {
            mul = 1;
            s += 2;

        } else {
            switch (*s++) {
            case 's': mul = 1000; break;
            case 'm': mul = 60 * 1000; break;
            case 'h': mul = 3600 * 1000; break;
            case 'd': mul = 86400 * 1000; break;
            default:
                return -1;
            }
        }

        if (n > (UINT64_MAX / 2 - total) / mul) {
            return -1;
        }

        total += n * mul;
    }

    *out = total;

    return 0;
}


/* calls */


/* args is len bytes, copied to a buffer of exactly that size, without a
 * NUL after it: a module that reads past args_len trips ASan. Text that
 * jansson cannot parse gets an empty object for the arg_*() helpers. */
static void
rg_test_call_init(rg_test_call_t *tc, const rg_tool_t *tool, void *conf,
    const char *args, size_t len)
{
    json_error_t  err;

    memset(tc, 0, sizeof(rg_test_call_t));

    tc->root = json_loadb(args, len, JSON_ALLOW_NUL, &err);
    if (tc->root == NULL) {
        tc->root = json_object();
    }

    tc->args = malloc(len ? len : 1);
    assert_non_null(tc->args);
    memcpy(tc->args, args, len);

    tc->call.tool = tool;
    tc->call.host = &rg_test_host;
    tc->call.conf = conf;
    tc->call.ctx = NULL;
    tc->call.id = "call_1";
    tc->call.session = "s-test";
    tc->call.args = tc->args;
    tc->call.args_len = len;
}


static void
rg_test_call_free(rg_test_call_t *tc)
{
    json_decref(tc->root);
    free(tc->args);
    free(tc->result);
    memset(tc, 0, sizeof(rg_test_call_t));
}


static int
rg_test_call_run(rg_test_call_t *tc, const rg_tool_t *tool, void *conf,
    const char *args)
{
    rg_test_call_init(tc, tool, conf, args, strlen(args));

    return tool->start(&tc->call);
}


#define rg_test_ok(tool, conf, args, expect)                                 \
    rg_test_expect(tool, conf, args, sizeof(args) - 1, 0, expect,            \
                   __FILE__, __LINE__)

#define rg_test_err(tool, conf, args, expect)                                \
    rg_test_expect(tool, conf, args, sizeof(args) - 1, 1, expect,            \
                   __FILE__, __LINE__)


/* runs a synchronous tool on args (len bytes) and checks its one answer;
 * expect ending in "*" is a prefix */
static void
rg_test_expect(const rg_tool_t *tool, void *conf, const char *args,
    size_t len, int failed, const char *expect, const char *file, int line)
{
    int              rc;
    size_t           n;
    rg_test_call_t   tc;

    rg_test_call_init(&tc, tool, conf, args, len);
    rc = tool->start(&tc.call);

    _assert_int_equal(rc, RG_TOOL_OK, file, line);
    _assert_int_equal(tc.answers, 1, file, line);

    if (tc.failed != failed) {
        print_error("args %.*s: expected %s \"%s\", got %s \"%s\"\n",
                    (int) len, args, failed ? "failure" : "result", expect,
                    tc.failed ? "failure" : "result", tc.result);
        _fail(file, line);
    }

    n = strlen(expect);

    if (n > 0 && expect[n - 1] == '*') {
        if (tc.result_len < n - 1 || memcmp(tc.result, expect, n - 1) != 0) {
            print_error("args %.*s: expected a result starting \"%.*s\", got "
                        "\"%s\"\n", (int) len, args, (int) n - 1, expect,
                        tc.result);
            _fail(file, line);
        }

    } else {
        _assert_string_equal(tc.result, expect, file, line);
        _assert_int_equal(tc.result_len, n, file, line);
    }

    rg_test_call_free(&tc);
}


/* loading and configuring */


static int
rg_test_load(rg_test_so_t *so, const char *name)
{
    char         path[1024];
    const char  *dir;

    dir = getenv("RG_MODULES_DIR");
    if (dir == NULL || *dir == '\0') {
        dir = "objs/modules";
    }

    snprintf(path, sizeof(path), "%s/%s.so", dir, name);

    so->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (so->handle == NULL) {
        fprintf(stderr, "dlopen(\"%s\") failed: %s (the directory is "
                "$RG_MODULES_DIR)\n", path, dlerror());
        return -1;
    }

    so->module = dlsym(so->handle, "rg_tool_module");
    if (so->module == NULL) {
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


/* applies `name argv...;` (argv NULL-ended) as the host would; returns
 * set()'s phrase */
static const char *
rg_test_vset(rg_tool_host_t *host, const rg_tool_module_t *m, void *conf,
    const char *name, va_list ap)
{
    int                         argc;
    const char                 *argv[16];
    const rg_tool_directive_t  *d;

    for (argc = 0; argc < 16; argc++) {
        argv[argc] = va_arg(ap, const char *);
        if (argv[argc] == NULL) {
            break;
        }
    }

    for (d = m->directives; d && d->name; d++) {
        if (strcmp(d->name, name) == 0) {
            assert_true((uint32_t) argc >= d->min_args);
            assert_true((uint32_t) argc <= d->max_args);
            return d->set(host, conf, argc, argv);
        }
    }

    fail_msg("module \"%s\" has no directive \"%s\"", m->name, name);

    return NULL;
}


static const char *
rg_test_set(const rg_tool_module_t *m, void *conf, const char *name, ...)
{
    va_list      ap;
    const char  *rv;

    va_start(ap, name);
    rv = rg_test_vset(&rg_test_host, m, conf, name, ap);
    va_end(ap);

    return rv;
}


/* the same through another host table, such as an older one */
static const char *
rg_test_set_with(rg_tool_host_t *host, const rg_tool_module_t *m,
    void *conf, const char *name, ...)
{
    va_list      ap;
    const char  *rv;

    va_start(ap, name);
    rv = rg_test_vset(host, m, conf, name, ap);
    va_end(ap);

    return rv;
}


/* The ABI fields, each tool's schema (an object; every required string or
 * array property has examples, which the mock model sends) and flags. */
static void
rg_test_module_valid(const rg_tool_module_t *m, const char *name,
    size_t ntools)
{
    size_t            n, i;
    json_t           *schema, *props, *req, *key_v, *prop, *ex;
    const char       *key, *type;
    json_error_t      err;
    const rg_tool_t  *t;

    assert_non_null(m);
    assert_int_equal(m->abi_version, RG_TOOL_ABI_VERSION);
    assert_int_equal(m->size, sizeof(rg_tool_module_t));
    assert_string_equal(m->signature, RG_TOOL_SIGNATURE);
    assert_string_equal(m->name, name);
    assert_non_null(m->directives);
    assert_non_null(m->create_conf);
    assert_non_null(m->init);
    assert_non_null(m->exit);

    for (n = 0, t = m->tools; t->name; t++, n++) {
        assert_true(strlen(t->description) > 20);
        assert_non_null(t->start);
        assert_int_equal(t->timeout_ms, 0);

        schema = json_loads(t->parameters, 0, &err);
        if (schema == NULL) {
            fail_msg("tool \"%s\": bad schema: %s", t->name, err.text);
        }

        assert_string_equal(json_string_value(json_object_get(schema,
                                                              "type")),
                            "object");
        props = json_object_get(schema, "properties");
        assert_true(json_is_object(props));

        req = json_object_get(schema, "required");

        json_array_foreach(req, i, key_v) {
            key = json_string_value(key_v);
            assert_non_null(key);

            prop = json_object_get(props, key);
            assert_non_null(prop);
            assert_true(json_is_string(json_object_get(prop,
                                                       "description")));

            type = json_string_value(json_object_get(prop, "type"));
            ex = json_object_get(prop, "examples");

            if (strcmp(type, "string") == 0) {
                assert_true(json_is_string(json_array_get(ex, 0)));

            } else if (strcmp(type, "array") == 0) {
                assert_true(json_array_size(json_array_get(ex, 0)) > 0);
            }
        }

        json_decref(schema);
    }

    assert_int_equal(n, ntools);
}


/* a malloc()ed string from a format */
static char *
rg_test_str(const char *fmt, ...)
{
    int       n;
    char     *s;
    va_list   ap;

    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);

    assert_true(n >= 0);

    return s;
}


/* the tree */


static void
rg_test_write(const char *rel, const char *data, size_t len)
{
    int    fd;
    char  *path;

    path = rg_test_str("%s/%s", rg_test_base, rel);

    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd != -1);
    assert_int_equal(write(fd, data, len), (ssize_t) len);
    close(fd);

    free(path);
}


static void
rg_test_mkdir(const char *rel)
{
    char  *path;

    path = rg_test_str("%s/%s", rg_test_base, rel);
    assert_int_equal(mkdir(path, 0755), 0);

    free(path);
}


static void
rg_test_symlink(const char *target, const char *rel)
{
    char  *path;

    path = rg_test_str("%s/%s", rg_test_base, rel);
    assert_int_equal(symlink(target, path), 0);

    free(path);
}


static int
rg_test_rm(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
    (void) st;
    (void) ftw;

    return (flag == FTW_DP) ? rmdir(path) : unlink(path);
}


static int
rg_test_setup_tree(void **state)
{
    int    i;
    char   big[101], utf8[64], wide[301], *target, *real;

    (void) state;

    snprintf(rg_test_base, sizeof(rg_test_base), "/tmp/rg-test-XXXXXX");
    if (mkdtemp(rg_test_base) == NULL) {
        return -1;
    }

    /* the real path: absolute symlinks compare with it */
    real = realpath(rg_test_base, NULL);
    if (real == NULL) {
        return -1;
    }

    snprintf(rg_test_base, sizeof(rg_test_base), "%s", real);
    free(real);

    if (snprintf(rg_test_root, sizeof(rg_test_root), "%s/root",
                 rg_test_base) >= (int) sizeof(rg_test_root))
    {
        return -1;
    }

    rg_test_write("outside.txt", "secret\n", 7);
    rg_test_mkdir("outdir");
    rg_test_write("outdir/f.txt", "secret too\n", 11);

    rg_test_mkdir("root");
    rg_test_write("root/a.txt", "hello\nworld\n", 12);
    rg_test_mkdir("root/notes");
    rg_test_write("root/notes/b.txt", "alpha\nTODO one\nbeta\nTODO two\n", 29);
    rg_test_write("root/notes/c.md", "TODO three\n", 11);
    rg_test_mkdir("root/notes/deep");
    rg_test_write("root/notes/deep/d.txt", "todo lower\r\nTODO four\r\n", 23);
    rg_test_write("root/bin.dat", "TODO bin\0x", 10);
    rg_test_write("root/empty.txt", "", 0);
    rg_test_mkdir("root/emptydir");

    memset(big, 0, sizeof(big));
    for (i = 0; i < 100; i++) {
        big[i] = (char) ('0' + i % 10);
    }
    rg_test_write("root/big.txt", big, 100);

    /* 39 bytes, then "é" across bytes 40 and 41 */
    memset(utf8, 'x', 39);
    memcpy(utf8 + 39, "\xc3\xa9tail", 6);
    rg_test_write("root/utf8.txt", utf8, 45);

    rg_test_mkdir("root/wide");
    memset(wide, 'w', 300);
    memcpy(wide, "TODO ", 5);
    wide[300] = '\n';
    rg_test_write("root/wide/long.txt", wide, 301);

    rg_test_symlink("notes/b.txt", "root/link-in");
    rg_test_symlink("notes", "root/link-dir");
    target = rg_test_str("%s/a.txt", rg_test_root);
    rg_test_symlink(target, "root/link-abs-in");
    free(target);
    rg_test_symlink("../outside.txt", "root/link-out");
    rg_test_symlink("../outdir", "root/link-outdir");
    rg_test_symlink("/etc/passwd", "root/link-abs");
    target = rg_test_str("%s/outside.txt", rg_test_base);
    rg_test_symlink(target, "root/link-abs-out");
    free(target);
    rg_test_symlink("loop2", "root/loop1");
    rg_test_symlink("loop1", "root/loop2");
    rg_test_mkdir("root/sub");
    rg_test_symlink("..", "root/sub/up");
    rg_test_symlink("../..", "root/sub/up2");

    return 0;
}


static int
rg_test_teardown_tree(void **state)
{
    (void) state;

    if (rg_test_base[0] != '\0') {
        nftw(rg_test_base, rg_test_rm, 16, FTW_DEPTH | FTW_PHYS);
    }

    return 0;
}


static int
rg_test_setup(void **state)
{
    (void) state;

    if (rg_test_load(&rg_test_fs, "fs") != 0
        || rg_test_load(&rg_test_exec, "exec") != 0
        || rg_test_load(&rg_test_http, "http") != 0
        || rg_test_load(&rg_test_agent, "agent") != 0)
    {
        return -1;
    }

    /* orphans of exec's children come to this process, to be reaped:
     * PID 1 of a container may not reap them */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        return -1;
    }

    return rg_test_setup_tree(state);
}


static int
rg_test_teardown(void **state)
{
    rg_test_teardown_tree(state);

    rg_test_unload(&rg_test_fs);
    rg_test_unload(&rg_test_exec);
    rg_test_unload(&rg_test_http);
    rg_test_unload(&rg_test_agent);

    return 0;
}


static int
rg_test_reset(void **state)
{
    (void) state;

    memset(&rg_test_async, 0, sizeof(rg_test_async));
    rg_test_log_level = 0;
    rg_test_log_text[0] = '\0';

    return 0;
}


/* fs */


static void *
rg_test_fs_conf(const char *max_read, const char *max_results)
{
    void                    *conf;
    const rg_tool_module_t  *m;

    m = rg_test_fs.module;

    conf = m->create_conf(&rg_test_host);
    assert_non_null(conf);

    assert_null(rg_test_set(m, conf, "root", rg_test_root, NULL));

    if (max_read) {
        assert_null(rg_test_set(m, conf, "max_read", max_read, NULL));
    }

    if (max_results) {
        assert_null(rg_test_set(m, conf, "max_results", max_results, NULL));
    }

    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);

    return conf;
}


static void
rg_test_fs_module(void **state)
{
    char                    *path;
    void                    *conf;
    rg_tool_host_t           old;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_fs.module;

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
    path = rg_test_str("%s/a.txt", rg_test_root);
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
    read = rg_test_tool(rg_test_fs.module, "read_file");

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

    rg_test_fs.module->exit(&rg_test_host, conf);

    /* a root of "/" holds every absolute symlink target */

    conf = rg_test_fs.module->create_conf(&rg_test_host);
    assert_null(rg_test_set(rg_test_fs.module, conf, "root", "/", NULL));
    assert_int_equal(rg_test_fs.module->init(&rg_test_host, conf),
                     RG_TOOL_OK);

    args = rg_test_str("{\"path\":\"%s/link-abs-in\"}", rg_test_root + 1);
    rg_test_expect(read, conf, args, strlen(args), 0, "hello\nworld\n",
                   __FILE__, __LINE__);
    free(args);

    rg_test_fs.module->exit(&rg_test_host, conf);
}


static void
rg_test_fs_escapes(void **state)
{
    void             *conf;
    const rg_tool_t  *read, *list, *grep;

    (void) state;

    conf = rg_test_fs_conf(NULL, NULL);
    read = rg_test_tool(rg_test_fs.module, "read_file");
    list = rg_test_tool(rg_test_fs.module, "list_dir");
    grep = rg_test_tool(rg_test_fs.module, "grep");

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

    rg_test_fs.module->exit(&rg_test_host, conf);
}


static void
rg_test_fs_read_cap(void **state)
{
    void             *conf;
    const rg_tool_t  *read;

    (void) state;

    conf = rg_test_fs_conf("40", NULL);
    read = rg_test_tool(rg_test_fs.module, "read_file");

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

    rg_test_fs.module->exit(&rg_test_host, conf);
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
    list = rg_test_tool(rg_test_fs.module, "list_dir");

    rg_test_ok(list, conf, "{\"path\":\"notes\"}",
               "b.txt (29 bytes)\nc.md (11 bytes)\ndeep/");
    rg_test_ok(list, conf, "{\"path\":\"link-dir/\"}",
               "b.txt (29 bytes)\nc.md (11 bytes)\ndeep/");
    rg_test_ok(list, conf, "{\"path\":\"sub\"}", "up -> ..\nup2 -> ../..");
    rg_test_ok(list, conf, "{\"path\":\"emptydir\"}", "(empty directory)");
    rg_test_err(list, conf, "{\"path\":\"a.txt\"}",
                "path \"a.txt\" is a file; use read_file to read it");

    /* the root, sorted, by default */

    expect = rg_test_str("a.txt (12 bytes)\n"
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

    rg_test_fs.module->exit(&rg_test_host, conf);

    /* capped at max_results */

    conf = rg_test_fs_conf(NULL, "3");

    rg_test_ok(list, conf, "{}",
               "a.txt (12 bytes)\nbig.txt (100 bytes)\nbin.dat (10 bytes)\n"
               "(15 more entries not shown; list a subdirectory or use "
               "grep)");
    rg_test_ok(list, conf, "{\"path\":\"notes\"}",
               "b.txt (29 bytes)\nc.md (11 bytes)\ndeep/");

    rg_test_fs.module->exit(&rg_test_host, conf);
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
    grep = rg_test_tool(rg_test_fs.module, "grep");

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

    rg_test_fs.module->exit(&rg_test_host, conf);

    /* the directive caps the argument */

    conf = rg_test_fs_conf(NULL, "3");

    rg_test_ok(grep, conf, "{\"pattern\":\"TODO\",\"max_results\":50}",
               "notes/b.txt:2: TODO one\n"
               "notes/b.txt:4: TODO two\n"
               "notes/c.md:1: TODO three\n"
               "(stopped at 3 matches; narrow the pattern or the path to see "
               "the rest)");

    rg_test_fs.module->exit(&rg_test_host, conf);
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
    grep = rg_test_tool(rg_test_fs.module, "grep");
    list = rg_test_tool(rg_test_fs.module, "list_dir");

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
        path = rg_test_str("root/limits/big/f%zu", i);
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

    path = rg_test_str("%s/limits", rg_test_root);
    nftw(path, rg_test_rm, 16, FTW_DEPTH | FTW_PHYS);
    free(path);

    rg_test_fs.module->exit(&rg_test_host, conf);
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

    read = &rg_test_fs.module->tools[0];
    list = &rg_test_fs.module->tools[1];
    grep = &rg_test_fs.module->tools[2];
    exec = &rg_test_exec.module->tools[0];

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

    assert_string_equal(rg_test_fs.module->tools[0].name, "read_file");
    assert_string_equal(rg_test_fs.module->tools[1].name, "list_dir");
    assert_string_equal(rg_test_fs.module->tools[2].name, "grep");

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

    rg_test_fs.module->exit(&rg_test_host, fs_conf);
    rg_test_exec.module->exit(&rg_test_host, exec_conf);
}


/* exec */


static void *
rg_test_exec_conf(const char *timeout, const char *max_output,
    const char *allow1, const char *allow2)
{
    void                    *conf;
    const rg_tool_module_t  *m;

    m = rg_test_exec.module;

    conf = m->create_conf(&rg_test_host);
    assert_non_null(conf);

    assert_null(rg_test_set(m, conf, "root", rg_test_root, NULL));

    if (timeout) {
        assert_null(rg_test_set(m, conf, "timeout", timeout, NULL));
    }

    if (max_output) {
        assert_null(rg_test_set(m, conf, "max_output", max_output, NULL));
    }

    if (allow1) {
        assert_null(rg_test_set(m, conf, "allow", allow1, allow2, NULL));
    }

    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);

    return conf;
}


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

    m = rg_test_exec.module;

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
    exec = rg_test_tool(rg_test_exec.module, "exec");

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
    expect = rg_test_str("exit status 0\n--- stdout ---\n%s\n"
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

    rg_test_exec.module->exit(&rg_test_host, conf);
}


static void
rg_test_exec_output(void **state)
{
    void             *conf;
    const rg_tool_t  *exec;

    (void) state;

    conf = rg_test_exec_conf(NULL, "10", NULL, NULL);
    exec = rg_test_tool(rg_test_exec.module, "exec");

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

    rg_test_exec.module->exit(&rg_test_host, conf);
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
    exec = rg_test_tool(rg_test_exec.module, "exec");

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

    rg_test_exec.module->exit(&rg_test_host, conf);
    conf = rg_test_exec_conf("20s", NULL, NULL, NULL);

    pgid = rg_test_exec_pgid(exec, conf, "{\"argv\":[\"sh\",\"-c\",\"echo $$; "
                                         "sleep 30 &\"]}",
                             "exit status 0\n--- stdout ---\n", &ms);
    assert_true(ms < 3000);
    assert_int_equal(rg_test_group_gone(pgid), 0);

    rg_test_exec.module->exit(&rg_test_host, conf);
}


static void
rg_test_exec_allow(void **state)
{
    void             *conf;
    const rg_tool_t  *exec;

    (void) state;

    conf = rg_test_exec_conf(NULL, NULL, "echo", "printf");
    exec = rg_test_tool(rg_test_exec.module, "exec");

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

    rg_test_exec.module->exit(&rg_test_host, conf);
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
    exec = rg_test_tool(rg_test_exec.module, "exec");

    assert_int_equal(rg_test_call_run(&tc, exec, conf,
                                      "{\"argv\":[\"pwd\"]}"),
                     RG_TOOL_OK);
    expect = rg_test_str("exit status 0\n--- stdout ---\n%s\n"
                         "--- stderr ---", rg_test_root);
    assert_string_equal(tc.result, expect);
    free(expect);
    rg_test_call_free(&tc);

    expect = rg_test_str("exit status 0\n--- stdout ---\n"
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

    rg_test_exec.module->exit(&rg_test_host, conf);
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

    m = rg_test_exec.module;

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
    exec = rg_test_tool(rg_test_exec.module, "exec");

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

    rg_test_exec.module->exit(&rg_test_host, conf);
}


/* http */


static void *
rg_test_http_conf(void)
{
    void                    *conf;
    const rg_tool_module_t  *m;

    m = rg_test_http.module;

    conf = m->create_conf(&rg_test_host);
    assert_non_null(conf);

    assert_null(rg_test_set(m, conf, "allow_hosts", "example.com",
                            "*.Example.org", NULL));
    assert_null(rg_test_set(m, conf, "allow_hosts", "127.0.0.1", "[::1]",
                            NULL));
    assert_null(rg_test_set(m, conf, "max_bytes", "1000", NULL));
    assert_null(rg_test_set(m, conf, "timeout", "2s", NULL));
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);

    return conf;
}


static void
rg_test_http_module(void **state)
{
    void                    *conf;
    rg_tool_host_t           old;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_http.module;

    rg_test_module_valid(m, "http", 1);
    assert_int_equal(rg_test_tool(m, "http_get")->flags, RG_TOOL_READ_ONLY);
    assert_non_null(rg_test_tool(m, "http_get")->cancel);

    conf = m->create_conf(&rg_test_host);
    m->exit(&rg_test_host, conf);

    conf = m->create_conf(&rg_test_host);
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_ERROR);
    assert_string_equal(rg_test_log_text, "http: the \"allow_hosts\" "
                        "directive is required: add \"allow_hosts "
                        "example.com *.example.org;\" to \"module http\"");

    assert_string_equal(rg_test_set(m, conf, "allow_hosts", "*", NULL),
                        "has an invalid host: use names such as example.com, "
                        "suffix patterns such as *.example.com, or "
                        "addresses");
    assert_string_equal(rg_test_set(m, conf, "allow_hosts", "a.*.com", NULL),
                        "has an invalid host: use names such as example.com, "
                        "suffix patterns such as *.example.com, or "
                        "addresses");
    assert_string_equal(rg_test_set(m, conf, "allow_hosts", "ok.com",
                                    "a b.com", NULL),
                        "has an invalid host: use names such as example.com, "
                        "suffix patterns such as *.example.com, or "
                        "addresses");
    assert_string_equal(rg_test_set(m, conf, "allow_hosts", "[zz]", NULL),
                        "has an invalid IPv6 address: write it as in a URL, "
                        "such as [::1]");
    assert_string_equal(rg_test_set(m, conf, "max_bytes", "0", NULL),
                        "must be a size from 1 to 64m, such as 1048576 or "
                        "1m");
    assert_string_equal(rg_test_set(m, conf, "max_bytes", "1g", NULL),
                        "must be a size from 1 to 64m, such as 1048576 or "
                        "1m");
    assert_string_equal(rg_test_set(m, conf, "timeout", "1h", NULL),
                        "must be a time from 1ms to 10m, such as 500ms or "
                        "10s (a bare number is seconds)");
    assert_string_equal(rg_test_set(m, conf, "timeout", "1d", NULL),
                        "must be a time from 1ms to 10m, such as 500ms or "
                        "10s (a bare number is seconds)");
    assert_string_equal(rg_test_set(m, conf, "timeout", "10m1ms", NULL),
                        "must be a time from 1ms to 10m, such as 500ms or "
                        "10s (a bare number is seconds)");
    assert_null(rg_test_set(m, conf, "timeout", "500ms", NULL));
    assert_string_equal(rg_test_set(m, conf, "timeout", "1s", NULL),
                        "is duplicate");
    m->exit(&rg_test_host, conf);

    /* a host from before http_get() */

    old = rg_test_host;
    old.size = offsetof(rg_tool_host_t, http_get);

    conf = m->create_conf(&old);
    assert_null(rg_test_set(m, conf, "allow_hosts", "example.com", NULL));
    assert_int_equal(m->init(&old, conf), RG_TOOL_ERROR);
    assert_string_equal(rg_test_log_text, "http: this reagent has no "
                        "http_get() for modules; upgrade reagent");
    m->exit(&old, conf);

    /* a host with http_get() but from before parse_size() and
     * parse_msec(): max_bytes and timeout cannot be read, the defaults
     * work */

    old = rg_test_host;
    old.size = offsetof(rg_tool_host_t, parse_size);

    conf = m->create_conf(&old);
    assert_null(rg_test_set_with(&old, m, conf, "allow_hosts", "example.com",
                                 NULL));
    assert_string_equal(rg_test_set_with(&old, m, conf, "max_bytes", "1m",
                                         NULL),
                        "needs a newer reagent (no parse_size in the host "
                        "table)");
    assert_string_equal(rg_test_set_with(&old, m, conf, "timeout", "10s",
                                         NULL),
                        "needs a newer reagent (no parse_msec in the host "
                        "table)");
    assert_int_equal(m->init(&old, conf), RG_TOOL_OK);
    m->exit(&old, conf);
}


#define RG_TEST_NOT_LISTED(h)                                                \
    "host \"" h "\" is not in the allow-list: example.com, *.example.org, "  \
    "127.0.0.1, [::1]"


static void
rg_test_http_refused(void **state)
{
    void             *conf;
    const rg_tool_t  *get;

    (void) state;

    conf = rg_test_http_conf();
    get = rg_test_tool(rg_test_http.module, "http_get");

    rg_test_err(get, conf, "{}",
                "missing argument 'url' (an http or https URL, such as "
                "\"https://example.com/\")");
    rg_test_err(get, conf, "{\"url\":\"ftp://example.com/x\"}",
                "url scheme \"ftp\" is not supported; use http:// or "
                "https://");
    rg_test_err(get, conf, "{\"url\":\"file:///etc/passwd\"}",
                "url scheme \"file\" is not supported; use http:// or "
                "https://");
    rg_test_err(get, conf, "{\"url\":\"example.com/x\"}",
                "url \"example.com/x\" is not absolute; write the whole URL, "
                "such as \"https://example.com/\"");
    rg_test_err(get, conf, "{\"url\":\"http://user:pw@example.com/\"}",
                "url \"http://user:pw@example.com/\" has user info "
                "(user@host); remove it, credentials cannot be sent");
    rg_test_err(get, conf, "{\"url\":\"http://example.com@evil.com/\"}",
                "url \"http://example.com@evil.com/\" has user info "
                "(user@host); remove it, credentials cannot be sent");
    rg_test_err(get, conf, "{\"url\":\"http://evil.com\\\\@example.com/\"}",
                "url \"http://evil.com\\@example.com/\" has a backslash in "
                "its host part");
    rg_test_err(get, conf, "{\"url\":\"http://evil.com\\\\.example.com/\"}",
                "url \"http://evil.com\\.example.com/\" has a backslash in "
                "its host part");

    rg_test_err(get, conf, "{\"url\":\"https://evil.com/\"}",
                RG_TEST_NOT_LISTED("evil.com"));
    rg_test_err(get, conf, "{\"url\":\"https://example.org/\"}",
                RG_TEST_NOT_LISTED("example.org"));
    rg_test_err(get, conf, "{\"url\":\"https://example.com.evil.com/\"}",
                RG_TEST_NOT_LISTED("example.com.evil.com"));
    rg_test_err(get, conf, "{\"url\":\"https://notexample.com/\"}",
                RG_TEST_NOT_LISTED("notexample.com"));
    rg_test_err(get, conf, "{\"url\":\"https://evil.com#@example.com\"}",
                RG_TEST_NOT_LISTED("evil.com"));
    rg_test_err(get, conf, "{\"url\":\"https://evil.com?@example.com\"}",
                RG_TEST_NOT_LISTED("evil.com"));

    /* addresses only as listed */

    rg_test_err(get, conf, "{\"url\":\"http://10.0.0.1/\"}",
                RG_TEST_NOT_LISTED("10.0.0.1"));
    rg_test_err(get, conf, "{\"url\":\"http://127.1/\"}",
                RG_TEST_NOT_LISTED("127.1"));
    rg_test_err(get, conf, "{\"url\":\"http://2130706433/\"}",
                RG_TEST_NOT_LISTED("2130706433"));
    rg_test_err(get, conf, "{\"url\":\"http://0x7f000001/\"}",
                RG_TEST_NOT_LISTED("0x7f000001"));
    rg_test_err(get, conf, "{\"url\":\"http://[::2]/\"}",
                RG_TEST_NOT_LISTED("[::2]"));

    /* malformed */

    rg_test_err(get, conf, "{\"url\":\"http://example.com:99999/\"}",
                "url \"http://example.com:99999/\" has an invalid port; use a "
                "number from 1 to 65535, or none");
    rg_test_err(get, conf, "{\"url\":\"http://example.com:/\"}",
                "url \"http://example.com:/\" has an invalid port; use a "
                "number from 1 to 65535, or none");
    rg_test_err(get, conf, "{\"url\":\"http://example.com:80x/\"}",
                "url \"http://example.com:80x/\" has an invalid port; use a "
                "number from 1 to 65535, or none");
    rg_test_err(get, conf, "{\"url\":\"http://exa mple.com/\"}",
                "url \"http://exa mple.com/\" contains spaces, control or "
                "non-ASCII characters; percent-encode them (a space is %20)");
    rg_test_err(get, conf, "{\"url\":\"http:///etc/passwd\"}",
                "url \"http:///etc/passwd\" has no host, such as "
                "\"https://example.com/\"");
    rg_test_err(get, conf, "{\"url\":\"http://ex%61mple.com/\"}",
                "url \"http://ex%61mple.com/\" has an invalid host name; only "
                "letters, digits, \"-\", \"_\" and \".\" are allowed "
                "(percent-encoded or international names are not)");
    rg_test_err(get, conf, "{\"url\":\"http://[::1/\"}",
                "url \"http://[::1/\" has an unclosed [ in its host");
    rg_test_err(get, conf, "{\"url\":\"http://example.com/\\u0000\"}",
                "url \"http://example.com/?\" contains a NUL byte; send the "
                "URL as plain text");

    assert_int_equal(rg_test_async.calls, 0);

    rg_test_http.module->exit(&rg_test_host, conf);
}


static void
rg_test_http_get(void **state)
{
    void                   *conf;
    rg_test_call_t          tc;
    const rg_tool_t        *get;
    rg_tool_http_result_t   res;

    (void) state;

    conf = rg_test_http_conf();
    get = rg_test_tool(rg_test_http.module, "http_get");

    /* allowed: asked of the host with the caps; the fragment stays here */

    assert_int_equal(rg_test_call_run(&tc, get, conf,
                                      "{\"url\":\"https://example.com/a?b=1"
                                      "#frag\"}"),
                     RG_TOOL_AGAIN);
    assert_int_equal(tc.answers, 0);
    assert_int_equal(rg_test_async.calls, 1);
    assert_ptr_equal(rg_test_async.call, &tc.call);
    assert_string_equal(rg_test_async.url, "https://example.com/a?b=1");
    assert_int_equal(rg_test_async.max_bytes, 1000);
    assert_int_equal(rg_test_async.timeout, 2000);

    memset(&res, 0, sizeof(res));
    res.status = 200;
    res.content_type = "text/html";
    res.body = "<p>hi</p>";
    res.len = 9;

    rg_test_async.http_cb(&tc.call, &res, NULL);

    assert_int_equal(tc.answers, 1);
    assert_false(tc.failed);
    assert_string_equal(tc.result,
                        "status: 200\ncontent-type: text/html\n\n<p>hi</p>");
    assert_null(tc.call.ctx);
    rg_test_call_free(&tc);

    /* the host's error */

    assert_int_equal(rg_test_call_run(&tc, get, conf,
                                      "{\"url\":\"HTTP://A.B.Example.ORG:8443"
                                      "/x\"}"),
                     RG_TOOL_AGAIN);
    assert_string_equal(rg_test_async.url, "HTTP://A.B.Example.ORG:8443/x");

    memset(&res, 0, sizeof(res));
    res.error = "timed out after 2s";
    rg_test_async.http_cb(&tc.call, &res, NULL);

    assert_int_equal(tc.answers, 1);
    assert_true(tc.failed);
    assert_string_equal(tc.result, "the request failed: timed out after 2s");
    rg_test_call_free(&tc);

    /* cut at max_bytes; any status is an answer */

    assert_int_equal(rg_test_call_run(&tc, get, conf,
                                      "{\"url\":\"http://127.0.0.1:8080/\"}"),
                     RG_TOOL_AGAIN);

    memset(&res, 0, sizeof(res));
    res.status = 404;
    res.content_type = "text/plain";
    res.body = "not found, and more";
    res.len = 9;
    res.truncated = 1;
    rg_test_async.http_cb(&tc.call, &res, NULL);

    assert_false(tc.failed);
    assert_string_equal(tc.result, "status: 404\ncontent-type: text/plain\n\n"
                                   "not found\n(truncated at 9 bytes)");
    rg_test_call_free(&tc);

    /* binary */

    assert_int_equal(rg_test_call_run(&tc, get, conf,
                                      "{\"url\":\"http://[::1]/x.png\"}"),
                     RG_TOOL_AGAIN);

    memset(&res, 0, sizeof(res));
    res.status = 200;
    res.content_type = "image/png";
    res.body = "\x89PNG\r\n\x1a\n\0\0";
    res.len = 10;
    rg_test_async.http_cb(&tc.call, &res, NULL);

    assert_true(tc.failed);
    assert_string_equal(tc.result, "the response is binary (content-type "
                        "image/png); http_get returns text only");
    rg_test_call_free(&tc);

    /* an empty body, no content type, a trailing dot */

    assert_int_equal(rg_test_call_run(&tc, get, conf,
                                      "{\"url\":\"http://example.com./\"}"),
                     RG_TOOL_AGAIN);

    memset(&res, 0, sizeof(res));
    res.status = 204;
    res.content_type = "";
    rg_test_async.http_cb(&tc.call, &res, NULL);

    assert_string_equal(tc.result, "status: 204\ncontent-type: \n\n");
    rg_test_call_free(&tc);

    /* the host cannot start it */

    rg_test_async.refuse = 1;
    rg_test_async.error = "too many requests in flight";

    rg_test_err(get, conf, "{\"url\":\"http://example.com/\"}",
                "cannot start the request: too many requests in flight");

    rg_test_async.error = NULL;

    rg_test_err(get, conf, "{\"url\":\"http://example.com/\"}",
                "cannot start the request: try again later");

    rg_test_async.refuse = 0;

    /* cancelled: the host's request goes, the state is freed */

    assert_int_equal(rg_test_call_run(&tc, get, conf,
                                      "{\"url\":\"http://example.com/\"}"),
                     RG_TOOL_AGAIN);
    assert_non_null(tc.call.ctx);

    get->cancel(&tc.call);

    assert_int_equal(rg_test_async.cancelled, 1);
    assert_null(tc.call.ctx);
    assert_int_equal(tc.answers, 0);
    rg_test_call_free(&tc);

    rg_test_http.module->exit(&rg_test_host, conf);
}


/* agent */


static unsigned  rg_test_http_flags;


static int
rg_test_host_http_get_flags(rg_tool_call_t *call, const char *url,
    size_t max_bytes, uint64_t timeout_ms, unsigned flags, rg_tool_http_pt cb,
    void *data)
{
    rg_test_http_flags = flags;

    return rg_test_host_http_get(call, url, max_bytes, timeout_ms, cb, data);
}


/* allow_private: what the module asks of the host's address check */
static void
rg_test_http_private(void **state)
{
    int                     i;
    void                   *conf;
    rg_test_call_t          tc;
    const rg_tool_t        *get;
    const rg_tool_module_t *m;

    (void) state;

    m = rg_test_http.module;
    get = rg_test_tool(m, "http_get");

    conf = m->create_conf(&rg_test_host);
    assert_string_equal(rg_test_set(m, conf, "allow_private", "yes", NULL),
                        "must be \"on\" or \"off\"");
    assert_null(rg_test_set(m, conf, "allow_private", "on", NULL));
    assert_string_equal(rg_test_set(m, conf, "allow_private", "off", NULL),
                        "is duplicate");
    m->exit(&rg_test_host, conf);

    rg_test_host.http_get_flags = rg_test_host_http_get_flags;

    for (i = 0; i < 3; i++) {
        conf = m->create_conf(&rg_test_host);
        assert_null(rg_test_set(m, conf, "allow_hosts", "localhost", NULL));
        if (i > 0) {
            assert_null(rg_test_set(m, conf, "allow_private",
                                    i == 1 ? "off" : "on", NULL));
        }
        assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);

        rg_test_http_flags = 0xff;

        assert_int_equal(rg_test_call_run(&tc, get, conf,
                                          "{\"url\":\"http://localhost/\"}"),
                         RG_TOOL_AGAIN);
        assert_int_equal(rg_test_http_flags,
                         i == 2 ? RG_TOOL_HTTP_ALLOW_PRIVATE : 0);

        get->cancel(&tc.call);
        rg_test_call_free(&tc);
        m->exit(&rg_test_host, conf);
    }

    rg_test_host.http_get_flags = NULL;
}


static void
rg_test_agent_module(void **state)
{
    void                    *conf;
    rg_tool_host_t           old;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_agent.module;

    rg_test_module_valid(m, "agent", 1);
    assert_int_equal(rg_test_tool(m, "run_agent")->flags, 0);
    assert_non_null(rg_test_tool(m, "run_agent")->cancel);

    conf = m->create_conf(&rg_test_host);
    m->exit(&rg_test_host, conf);

    conf = m->create_conf(&rg_test_host);
    assert_string_equal(rg_test_set(m, conf, "max_input", "0", NULL),
                        "must be a size from 1 to 16m, such as 16384 or 16k");
    assert_string_equal(rg_test_set(m, conf, "max_input", "17m", NULL),
                        "must be a size from 1 to 16m, such as 16384 or 16k");
    assert_string_equal(rg_test_set(m, conf, "max_input", "k", NULL),
                        "must be a size from 1 to 16m, such as 16384 or 16k");
    assert_string_equal(rg_test_set(m, conf, "max_input", "1g", NULL),
                        "must be a size from 1 to 16m, such as 16384 or 16k");
    assert_null(rg_test_set(m, conf, "max_input", "16k", NULL));
    assert_string_equal(rg_test_set(m, conf, "max_input", "1k", NULL),
                        "is duplicate");
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);
    m->exit(&rg_test_host, conf);

    old = rg_test_host;
    old.size = offsetof(rg_tool_host_t, agent_run);

    conf = m->create_conf(&old);
    assert_int_equal(m->init(&old, conf), RG_TOOL_ERROR);
    assert_string_equal(rg_test_log_text, "agent: this reagent has no "
                        "agent_run() for modules; upgrade reagent");
    m->exit(&old, conf);

    /* a host with agent_run() but from before parse_size() */

    old = rg_test_host;
    old.size = offsetof(rg_tool_host_t, parse_size);

    conf = m->create_conf(&old);
    assert_string_equal(rg_test_set_with(&old, m, conf, "max_input", "16k",
                                         NULL),
                        "needs a newer reagent (no parse_size in the host "
                        "table)");
    assert_int_equal(m->init(&old, conf), RG_TOOL_OK);
    m->exit(&old, conf);
}


static void
rg_test_agent_run(void **state)
{
    void                    *conf;
    rg_test_call_t           tc;
    const rg_tool_t         *run;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_agent.module;
    run = rg_test_tool(m, "run_agent");

    conf = m->create_conf(&rg_test_host);
    assert_null(rg_test_set(m, conf, "max_input", "20", NULL));
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);

    /* the host refuses: its reason, as it is */

    rg_test_async.refuse = 1;
    rg_test_async.error = "unknown agent \"nope\"; the agents are: helper";

    rg_test_err(run, conf, "{\"agent\":\"nope\",\"input\":\"x\"}",
                "unknown agent \"nope\"; the agents are: helper");
    assert_string_equal(rg_test_async.agent, "nope");

    rg_test_async.error = NULL;
    rg_test_err(run, conf, "{\"agent\":\"nope\",\"input\":\"x\"}",
                "cannot run agent \"nope\"");

    rg_test_async.refuse = 0;

    /* done */

    assert_int_equal(rg_test_call_run(&tc, run, conf,
                                      "{\"agent\":\"helper\",\"input\":"
                                      "\"sum 2+2\"}"),
                     RG_TOOL_AGAIN);
    assert_int_equal(tc.answers, 0);
    assert_string_equal(rg_test_async.agent, "helper");
    assert_string_equal(rg_test_async.input, "sum 2+2");
    assert_int_equal(rg_test_async.input_len, 7);

    rg_test_async.agent_cb(&tc.call, "done", "4, as asked", 1, NULL);

    assert_int_equal(tc.answers, 1);
    assert_false(tc.failed);
    assert_string_equal(tc.result, "4");
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, run, conf,
                                      "{\"agent\":\"helper\",\"input\":"
                                      "\"x\"}"),
                     RG_TOOL_AGAIN);
    rg_test_async.agent_cb(&tc.call, "done", "", 0, NULL);
    assert_false(tc.failed);
    assert_string_equal(tc.result, "(the agent gave an empty answer)");
    rg_test_call_free(&tc);

    /* any other end fails, with the reason on one line */

    assert_int_equal(rg_test_call_run(&tc, run, conf,
                                      "{\"agent\":\"helper\",\"input\":"
                                      "\"x\"}"),
                     RG_TOOL_AGAIN);
    rg_test_async.agent_cb(&tc.call, "max_rounds", "ran out\nof rounds", 17,
                           NULL);
    assert_int_equal(tc.answers, 1);
    assert_true(tc.failed);
    assert_string_equal(tc.result, "agent \"helper\" ended with max_rounds: "
                        "ran out of rounds");
    rg_test_call_free(&tc);

    assert_int_equal(rg_test_call_run(&tc, run, conf,
                                      "{\"agent\":\"helper\",\"input\":"
                                      "\"x\"}"),
                     RG_TOOL_AGAIN);
    rg_test_async.agent_cb(&tc.call, "failed", NULL, 0, NULL);
    assert_true(tc.failed);
    assert_string_equal(tc.result, "agent \"helper\" ended with failed: no "
                        "answer");
    rg_test_call_free(&tc);

    /* cancelled */

    rg_test_async.cancelled = 0;
    assert_int_equal(rg_test_call_run(&tc, run, conf,
                                      "{\"agent\":\"helper\",\"input\":"
                                      "\"x\"}"),
                     RG_TOOL_AGAIN);
    run->cancel(&tc.call);
    assert_int_equal(rg_test_async.cancelled, 1);
    assert_int_equal(tc.answers, 0);
    rg_test_call_free(&tc);

    /* bad arguments never reach the host */

    rg_test_async.calls = 0;

    rg_test_err(run, conf, "{\"input\":\"x\"}",
                "missing argument 'agent' (the name of a configured agent, "
                "such as \"helper\")");
    rg_test_err(run, conf, "{\"agent\":\"helper\"}",
                "missing argument 'input' (the subtask for the agent, as "
                "text)");
    rg_test_err(run, conf, "{\"agent\":\"helper\",\"input\":\"\"}",
                "missing argument 'input' (the subtask for the agent, as "
                "text)");
    rg_test_err(run, conf, "{\"agent\":\"helper\",\"input\":"
                           "\"123456789012345678901\"}",
                "argument 'input' is 21 bytes, more than the 20 allowed; "
                "shorten the subtask");
    rg_test_err(run, conf, "{\"agent\":\"help\\u0000er\",\"input\":\"x\"}",
                "agent \"help er\" is not a valid name; use the name of a "
                "configured agent, such as \"helper\"");
    rg_test_err(run, conf, "{\"agent\":\"helper\",\"input\":\"a\\u0000\"}",
                "argument 'input' contains a NUL byte; send plain text");

    assert_int_equal(rg_test_async.calls, 0);

    m->exit(&rg_test_host, conf);
}


int
main(void)
{
    const struct CMUnitTest  rg_test_tests[] = {
        cmocka_unit_test_setup(rg_test_fs_module, rg_test_reset),
        cmocka_unit_test_setup(rg_test_fs_read, rg_test_reset),
        cmocka_unit_test_setup(rg_test_fs_escapes, rg_test_reset),
        cmocka_unit_test_setup(rg_test_fs_read_cap, rg_test_reset),
        cmocka_unit_test_setup(rg_test_fs_list, rg_test_reset),
        cmocka_unit_test_setup(rg_test_fs_grep, rg_test_reset),
        cmocka_unit_test_setup(rg_test_fs_limits, rg_test_reset),
        cmocka_unit_test_setup(rg_test_threads, rg_test_reset),
        cmocka_unit_test_setup(rg_test_exec_module, rg_test_reset),
        cmocka_unit_test_setup(rg_test_exec_run, rg_test_reset),
        cmocka_unit_test_setup(rg_test_exec_output, rg_test_reset),
        cmocka_unit_test_setup(rg_test_exec_timeout, rg_test_reset),
        cmocka_unit_test_setup(rg_test_exec_allow, rg_test_reset),
        cmocka_unit_test_setup(rg_test_exec_cwd, rg_test_reset),
        cmocka_unit_test_setup(rg_test_exec_old_host, rg_test_reset),
        cmocka_unit_test_setup(rg_test_exec_argv_host, rg_test_reset),
        cmocka_unit_test_setup(rg_test_http_module, rg_test_reset),
        cmocka_unit_test_setup(rg_test_http_refused, rg_test_reset),
        cmocka_unit_test_setup(rg_test_http_get, rg_test_reset),
        cmocka_unit_test_setup(rg_test_http_private, rg_test_reset),
        cmocka_unit_test_setup(rg_test_agent_module, rg_test_reset),
        cmocka_unit_test_setup(rg_test_agent_run, rg_test_reset),
    };

    return cmocka_run_group_tests_name("bundled modules", rg_test_tests,
                                       rg_test_setup, rg_test_teardown) != 0;
}
