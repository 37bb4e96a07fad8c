/* rg_test_host.c: the fake tool host of the bundled modules' tests (see
 * rg_test_host.h). */

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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rg_tool_module.h>
#include <rg_test_host.h>


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


rg_tool_host_t  rg_test_host = {
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


int               rg_test_log_level;
char              rg_test_log_text[1024];
rg_test_async_t   rg_test_async;

rg_test_so_t      rg_test_mod_fs;
rg_test_so_t      rg_test_mod_exec;
rg_test_so_t      rg_test_mod_http;
rg_test_so_t      rg_test_mod_agent;

char              rg_test_base[PATH_MAX];
char              rg_test_root[PATH_MAX];


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


int
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
void
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


void
rg_test_call_free(rg_test_call_t *tc)
{
    json_decref(tc->root);
    free(tc->args);
    free(tc->result);
    memset(tc, 0, sizeof(rg_test_call_t));
}


int
rg_test_call_run(rg_test_call_t *tc, const rg_tool_t *tool, void *conf,
    const char *args)
{
    rg_test_call_init(tc, tool, conf, args, strlen(args));

    return tool->start(&tc->call);
}


/* runs a synchronous tool on args (len bytes) and checks its one answer;
 * expect ending in "*" is a prefix */
void
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


int
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


void
rg_test_unload(rg_test_so_t *so)
{
    if (so->handle != NULL) {
        dlclose(so->handle);
    }

    so->handle = NULL;
    so->module = NULL;
}


const rg_tool_t *
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


const char *
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
const char *
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
void
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
char *
rg_test_strf(const char *fmt, ...)
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


void
rg_test_write(const char *rel, const char *data, size_t len)
{
    int    fd;
    char  *path;

    path = rg_test_strf("%s/%s", rg_test_base, rel);

    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd != -1);
    assert_int_equal(write(fd, data, len), (ssize_t) len);
    close(fd);

    free(path);
}


void
rg_test_mkdir(const char *rel)
{
    char  *path;

    path = rg_test_strf("%s/%s", rg_test_base, rel);
    assert_int_equal(mkdir(path, 0755), 0);

    free(path);
}


void
rg_test_symlink(const char *target, const char *rel)
{
    char  *path;

    path = rg_test_strf("%s/%s", rg_test_base, rel);
    assert_int_equal(symlink(target, path), 0);

    free(path);
}


int
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
    target = rg_test_strf("%s/a.txt", rg_test_root);
    rg_test_symlink(target, "root/link-abs-in");
    free(target);
    rg_test_symlink("../outside.txt", "root/link-out");
    rg_test_symlink("../outdir", "root/link-outdir");
    rg_test_symlink("/etc/passwd", "root/link-abs");
    target = rg_test_strf("%s/outside.txt", rg_test_base);
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


int
rg_test_host_setup(void **state)
{
    (void) state;

    if (rg_test_load(&rg_test_mod_fs, "fs") != 0
        || rg_test_load(&rg_test_mod_exec, "exec") != 0
        || rg_test_load(&rg_test_mod_http, "http") != 0
        || rg_test_load(&rg_test_mod_agent, "agent") != 0)
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


int
rg_test_host_teardown(void **state)
{
    rg_test_teardown_tree(state);

    rg_test_unload(&rg_test_mod_fs);
    rg_test_unload(&rg_test_mod_exec);
    rg_test_unload(&rg_test_mod_http);
    rg_test_unload(&rg_test_mod_agent);

    return 0;
}


int
rg_test_host_reset(void **state)
{
    (void) state;

    memset(&rg_test_async, 0, sizeof(rg_test_async));
    rg_test_log_level = 0;
    rg_test_log_text[0] = '\0';

    return 0;
}


/* the modules' confs */


void *
rg_test_fs_conf(const char *max_read, const char *max_results)
{
    void                    *conf;
    const rg_tool_module_t  *m;

    m = rg_test_mod_fs.module;

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


void *
rg_test_exec_conf(const char *timeout, const char *max_output,
    const char *allow1, const char *allow2)
{
    void                    *conf;
    const rg_tool_module_t  *m;

    m = rg_test_mod_exec.module;

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
