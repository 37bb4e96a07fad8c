/* rg_test.c: helpers shared by the tests (see rg_test.h). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>
#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <event2/event.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


const char *
rg_test_build_dir(void)
{
    const char  *b;

    b = getenv("RG_BUILD_DIR");

    return b && *b ? b : "objs";
}


const char *
rg_test_tmpdir(void)
{
    static char  dir[64];

    if (dir[0] == '\0') {
        snprintf(dir, sizeof(dir), "/tmp/rg-test-XXXXXX");
        if (mkdtemp(dir) == NULL) {
            snprintf(dir, sizeof(dir), "/tmp");
        }
    }

    return dir;
}


char *
rg_test_write_file(const char *name, const char *text)
{
    char   *path;
    FILE   *f;
    size_t  len;

    len = strlen(rg_test_tmpdir()) + strlen(name) + 2;
    path = malloc(len);
    if (path == NULL) {
        return NULL;
    }

    snprintf(path, len, "%s/%s", rg_test_tmpdir(), name);

    f = fopen(path, "w");
    if (f == NULL) {
        free(path);
        return NULL;
    }

    fputs(text, f);
    fclose(f);

    return path;
}


rg_test_mock_t *
rg_test_mock_start(const char *arg, ...)
{
    int              i, n;
    char             bin[256], pf[128], buf[32];
    const char      *argv[64];
    FILE            *f;
    va_list          args;
    rg_test_mock_t  *m;
    struct timespec  ts;

    m = calloc(1, sizeof(rg_test_mock_t));
    if (m == NULL) {
        return NULL;
    }

    snprintf(m->dir, sizeof(m->dir), "/tmp/rg-mock-XXXXXX");
    if (mkdtemp(m->dir) == NULL) {
        free(m);
        return NULL;
    }

    snprintf(bin, sizeof(bin), "%s/rg_mock", rg_test_build_dir());
    snprintf(pf, sizeof(pf), "%s/port", m->dir);

    n = 0;
    argv[n++] = bin;
    argv[n++] = "--port";
    argv[n++] = "0";
    argv[n++] = "--port-file";
    argv[n++] = pf;
    argv[n++] = "--quiet";

    va_start(args, arg);
    for (; arg && n < 62; arg = va_arg(args, const char *)) {
        argv[n++] = arg;
    }
    va_end(args);

    argv[n] = NULL;

    m->pid = fork();
    if (m->pid == 0) {
        /* a test that crashes must not leave its mock behind */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        execv(bin, (char **) argv);
        _exit(127);
    }

    if (m->pid < 0) {
        free(m);
        return NULL;
    }

    /* wait for the port file: up to 30 s (a mock that loads a script of
     * megabytes, under a sanitizer, on a loaded machine, took over 10) */
    for (i = 0; i < 3000; i++) {
        f = fopen(pf, "r");
        if (f) {
            if (fgets(buf, sizeof(buf), f)) {
                m->port = atoi(buf);
            }
            fclose(f);
            if (m->port > 0) {
                return m;
            }
        }

        ts.tv_sec = 0;
        ts.tv_nsec = 10 * 1000 * 1000;
        nanosleep(&ts, NULL);
    }

    rg_test_mock_stop(m);

    return NULL;
}


void
rg_test_mock_stop(rg_test_mock_t *m)
{
    int   status;
    char  path[128];

    if (m == NULL) {
        return;
    }

    if (m->pid > 0) {
        kill(m->pid, SIGTERM);
        waitpid(m->pid, &status, 0);
    }

    snprintf(path, sizeof(path), "%s/port", m->dir);
    unlink(path);
    rmdir(m->dir);

    free(m);
}


static size_t
rg_test_write_cb(char *p, size_t size, size_t n, void *data)
{
    return rg_buf_append(data, p, size * n) == RG_OK ? size * n : 0;
}


char *
rg_test_mock_get(rg_test_mock_t *m, const char *path)
{
    CURL      *c;
    char       url[256];
    rg_buf_t   b;
    CURLcode   rc;

    memset(&b, 0, sizeof(b));

    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", m->port, path);

    c = curl_easy_init();
    if (c == NULL) {
        return NULL;
    }

    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, rg_test_write_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);

    if (strcmp(path, "/reset") == 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    }

    rc = curl_easy_perform(c);
    curl_easy_cleanup(c);

    if (rc != CURLE_OK) {
        rg_buf_free(&b);
        return NULL;
    }

    if (b.data == NULL) {
        return strdup("");
    }

    return b.data;
}


long
rg_test_mock_stat(rg_test_mock_t *m, const char *field)
{
    long     v;
    char    *body;
    json_t  *j;

    body = rg_test_mock_get(m, "/stats");
    if (body == NULL) {
        return -1;
    }

    j = json_loads(body, 0, NULL);
    free(body);

    v = j ? (long) json_integer_value(json_object_get(j, field)) : -1;
    json_decref(j);

    return v;
}


rg_cycle_t *
rg_test_cycle(char *errmsg, size_t errlen, const char *fmt, ...)
{
    char         *text;
    va_list       args;
    rg_cycle_t   *cycle;
    static rg_log_t  log;

    va_start(args, fmt);
    if (vasprintf(&text, fmt, args) < 0) {
        va_end(args);
        return NULL;
    }
    va_end(args);

    log = *rg_log_stderr();
    log.log_level = getenv("RG_TEST_LOG") ? RG_LOG_DEBUG : RG_LOG_CRIT;

    errmsg[0] = '\0';
    cycle = rg_cycle_create("test.conf", text, &log, errmsg, errlen);
    free(text);

    return cycle;
}


void
rg_test_countdown(rg_session_t *s)
{
    rg_uint_t  *left;

    left = s->data;

    if (--*left == 0) {
        event_base_loopbreak(s->engine->base);
    }
}


int
rg_test_pool_setup(void **state)
{
    *state = rg_pool_create(4096);

    return *state == NULL ? -1 : 0;
}


int
rg_test_pool_teardown(void **state)
{
    rg_pool_destroy(*state);

    return 0;
}


void
rg_test_contains_at(const char *hay, const char *needle, int want,
    const char *file, int line)
{
    int  found;

    found = hay != NULL && strstr(hay, needle) != NULL;

    if (found != want) {
        print_error("\"%.2000s\"\n    %s \"%s\"\n", hay ? hay : "(null)",
                    want ? "does not contain" : "contains", needle);
    }

    _assert_true(found == want, want ? "contains" : "lacks", file, line);
}


void
rg_test_break(evutil_socket_t fd, short what, void *arg)
{
    event_base_loopbreak(arg);
}


void
rg_test_dispatch(struct event_base *base, rg_uint_t *left, int seconds)
{
    struct event   *ev;
    struct timeval  tv;

    tv.tv_sec = seconds;
    tv.tv_usec = 0;

    ev = evtimer_new(base, rg_test_break, base);
    assert_non_null(ev);
    evtimer_add(ev, &tv);

    if (*left) {
        event_base_dispatch(base);
    }

    event_free(ev);
    assert_int_equal(*left, 0);
}


rg_engine_t *
rg_test_engine_of(rg_cycle_t *cycle, const char *err)
{
    rg_engine_t  *e;

    if (cycle == NULL) {
        print_error("configuration: %s\n", err);
    }
    assert_non_null(cycle);

    e = rg_engine_create(cycle, cycle->log);
    assert_non_null(e);

    return e;
}


rg_session_t *
rg_test_run(rg_engine_t *e, const char *agent, const char *input)
{
    rg_uint_t         left;
    rg_session_t     *s;
    rg_agent_conf_t  *a;

    a = rg_agent_find(e->cycle, agent, strlen(agent));
    if (a == NULL) {
        return NULL;
    }

    left = 1;

    s = rg_session_create(e, a, NULL, input, strlen(input), rg_test_countdown,
                          &left);
    if (s == NULL) {
        return NULL;
    }

    rg_session_start(s);

    if (left) {
        event_base_dispatch(e->base);
    }

    s->data = NULL;

    return s;
}


rg_uint_t
rg_test_run_many(rg_engine_t *e, const char *agent, rg_uint_t n,
    rg_uint_t *states)
{
    char               input[64];
    rg_uint_t          i, left, ok;
    rg_session_t     **ss;
    rg_agent_conf_t   *a;

    a = rg_agent_find(e->cycle, agent, strlen(agent));
    ss = calloc(n, sizeof(rg_session_t *));
    if (a == NULL || ss == NULL) {
        free(ss);
        return 0;
    }

    left = n;

    for (i = 0; i < n; i++) {
        snprintf(input, sizeof(input), "task %lu", (unsigned long) i);
        ss[i] = rg_session_create(e, a, NULL, input, strlen(input),
                                  rg_test_countdown, &left);
        if (ss[i] == NULL) {
            left--;
        }
    }

    for (i = 0; i < n; i++) {
        if (ss[i]) {
            rg_session_start(ss[i]);
        }
    }

    if (left) {
        event_base_dispatch(e->base);
    }

    ok = 0;
    for (i = 0; i < n; i++) {
        states[i] = ss[i] ? ss[i]->state : RG_SESSION_FAILED;
        ok += states[i] == RG_SESSION_DONE;
        rg_session_destroy(ss[i]);
    }

    free(ss);

    return ok;
}
