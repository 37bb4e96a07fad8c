/* test_isolate.c: integration tests of the helper processes that run the
 * modules loaded `isolated` (src/tools/rg_isolate.c), through the agent
 * loop against the project's mock model (tests/mock/rg_mock.c, one child
 * process per test; scripts in tests/integration/isolate_*.json). Covers a
 * tool that crashes its helper, one that hangs it until the tool timeout,
 * a hundred sessions doing both at once, a well-behaved isolated tool, and
 * what is left once the engine is gone: no helper process, no descriptor.
 * Then, without the model, turns of a module defined here (rg_test_tools)
 * run through rg_tools.c straight into an isolate: the helper's host table
 * (arguments, timers, answers, what is not available), helpers that break
 * the protocol or exit, large answers, the queue and its timeouts, what
 * a helper inherits (no lock a worker thread holds, no stdout), and that
 * helpers die with their worker. Helpers are
 * found as this process's children in /proc. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <rg_tools.h>
#include <rg_isolate.h>

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <jansson.h>
#include <event2/event.h>


#define RG_TEST_SCRIPTS     "tests/integration/"
#define RG_TEST_MAX_PIDS    64
#define RG_TEST_SETTLE_MS   5000
#define RG_TEST_BIG         (3 * 1024 * 1024)
#define RG_TEST_TOO_BIG     (17 * 1024 * 1024)
#define RG_TEST_ZYGOTE      "rg-zygote"     /* its comm */


typedef struct {
    rg_test_mock_t     *mock;
    rg_cycle_t         *cycle;
    rg_engine_t        *engine;
    rg_session_t      **ss;
    rg_uint_t           n;
    char                err[512];

    /* the direct tests: a module, an agent and a reactor of their own */
    struct event_base  *base;
    rg_tools_ctx_t     *runtime;
    rg_module_t         module;
    rg_agent_conf_t    *agent;
    rg_tool_entry_t    *entries;
    rg_tool_entry_t   **tools;
    rg_tool_turn_t     *turn;
    rg_log_t            log;
} rg_test_ctx_t;


static int
rg_test_setup(void **state)
{
    *state = calloc(1, sizeof(rg_test_ctx_t));

    return *state == NULL ? -1 : 0;
}


static int
rg_test_teardown(void **state)
{
    rg_uint_t       i;
    rg_test_ctx_t  *t;

    t = *state;

    for (i = 0; i < t->n; i++) {
        rg_session_destroy(t->ss[i]);
    }
    free(t->ss);

    rg_engine_destroy(t->engine);
    rg_cycle_destroy(t->cycle);
    rg_test_mock_stop(t->mock);

    rg_tools_turn_destroy(t->turn);
    rg_tools_ctx_destroy(t->runtime);

    if (t->base) {
        event_base_free(t->base);
    }

    free(t->agent);
    free(t->entries);
    free(t->tools);
    free(t);

    return 0;
}


/* crash.so and good.so loaded isolated with `helpers` helpers each; agent
 * "a" may call crash_now, hang_now and echo, for 500 ms each */
static void
rg_test_engine(rg_test_ctx_t *t, const char *script, rg_uint_t helpers)
{
    const char  *b;

    t->mock = rg_test_mock_start("--script", script, NULL);
    assert_non_null(t->mock);

    b = rg_test_build_dir();

    t->cycle = rg_test_cycle(t->err, sizeof(t->err),
        "isolated_helpers %lu;\n"
        "load_module %s/tests/plugins/crash.so isolated;\n"
        "load_module %s/tests/plugins/good.so isolated;\n"
        "llm mock {\n"
        "    base_url http://127.0.0.1:%d/v1;\n"
        "    model mock-1;\n"
        "}\n"
        "agent a {\n"
        "    system_prompt \"You are a test.\";\n"
        "    tools crash_now hang_now echo;\n"
        "    tool_timeout 500ms;\n"
        "}\n",
        (unsigned long) helpers, b, b, t->mock->port);

    t->engine = rg_test_engine_of(t->cycle, t->err);
}


/* runs n sessions of agent "a" at once to their ends; keeps them in t->ss */
static void
rg_test_sessions(rg_test_ctx_t *t, rg_uint_t n)
{
    char              input[64];
    rg_uint_t         i, left;
    rg_agent_conf_t  *a;

    a = rg_agent_find(t->cycle, "a", 1);
    assert_non_null(a);

    t->ss = calloc(n, sizeof(rg_session_t *));
    assert_non_null(t->ss);
    t->n = n;

    left = n;

    for (i = 0; i < n; i++) {
        snprintf(input, sizeof(input), "task %lu", (unsigned long) i);
        t->ss[i] = rg_session_create(t->engine, a, NULL, input,
                                     strlen(input), rg_test_countdown, &left);
        assert_non_null(t->ss[i]);
    }

    for (i = 0; i < n; i++) {
        assert_int_equal(rg_session_start(t->ss[i]), RG_OK);
    }

    if (left) {
        event_base_dispatch(t->engine->base);
    }

    assert_int_equal(left, 0);

    for (i = 0; i < n; i++) {
        assert_true(rg_session_final(t->ss[i]));
        t->ss[i]->data = NULL;
    }
}


static void
rg_test_sessions_free(rg_test_ctx_t *t)
{
    rg_uint_t  i;

    for (i = 0; i < t->n; i++) {
        rg_session_destroy(t->ss[i]);
    }

    free(t->ss);
    t->ss = NULL;
    t->n = 0;
}


/* the content of the tool message of s that answers id, malloc'ed */
static char *
rg_test_tool_result(rg_session_t *s, const char *id)
{
    char      *r;
    json_t    *m, *v;
    rg_msg_t  *msg;

    for (msg = s->msgs.head; msg; msg = msg->next) {
        if (msg->role != 't') {
            continue;
        }

        m = json_loadb(msg->json.data, msg->json.len, 0, NULL);
        assert_non_null(m);

        v = json_object_get(m, "tool_call_id");

        if (json_is_string(v) && strcmp(json_string_value(v), id) == 0) {
            v = json_object_get(m, "content");
            assert_true(json_is_string(v));
            r = strdup(json_string_value(v));
            json_decref(m);
            assert_non_null(r);
            return r;
        }

        json_decref(m);
    }

    print_error("session %s: no tool message answers \"%s\"\n", s->id, id);
    fail();

    return NULL;
}


/* this process's children but the mock and the isolates' zygotes, in
 * pids[]; *zombies gets how many of them are dead and not reaped */
static rg_uint_t
rg_test_children(rg_test_ctx_t *t, pid_t *pids, rg_uint_t *zombies)
{
    int             ppid;
    char            path[64], buf[512], *p, state;
    long            pid;
    FILE           *f;
    DIR            *d;
    rg_uint_t       n;
    struct dirent  *de;

    n = 0;
    *zombies = 0;

    d = opendir("/proc");
    assert_non_null(d);

    while ((de = readdir(d)) != NULL) {
        pid = strtol(de->d_name, &p, 10);
        if (*p != '\0' || pid <= 0 || (t->mock && pid == t->mock->pid)) {
            continue;
        }

        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);

        f = fopen(path, "r");
        if (f == NULL) {
            continue;                  /* gone meanwhile */
        }

        p = fgets(buf, sizeof(buf), f);
        fclose(f);

        /* "pid (comm) state ppid ...": comm may hold anything */
        if (p == NULL || (p = strrchr(buf, ')')) == NULL
            || sscanf(p + 1, " %c %d", &state, &ppid) != 2
            || ppid != getpid()
            || strstr(buf, " (" RG_TEST_ZYGOTE ") ") != NULL)
        {
            continue;
        }

        if (n < RG_TEST_MAX_PIDS) {
            pids[n++] = (pid_t) pid;
        }

        *zombies += state == 'Z';
    }

    closedir(d);

    return n;
}


/* runs the reactor until exactly n helpers are alive and every dead one
 * is reaped (reaping is the reactor's job); fills pids[] */
static void
rg_test_settle(rg_test_ctx_t *t, rg_uint_t n, pid_t *pids)
{
    rg_msec_t           end;
    rg_uint_t           k, zombies;
    struct timeval      tv;
    struct event_base  *base;

    base = t->engine ? t->engine->base : t->base;
    end = rg_monotonic_msec() + RG_TEST_SETTLE_MS;

    for ( ;; ) {
        k = rg_test_children(t, pids, &zombies);

        if ((k == n && zombies == 0) || rg_monotonic_msec() > end) {
            break;
        }

        tv.tv_sec = 0;
        tv.tv_usec = 10000;
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }

    if (k != n || zombies) {
        print_error("%lu children (%lu dead), expected %lu alive\n",
                    (unsigned long) k, (unsigned long) zombies,
                    (unsigned long) n);
    }

    assert_int_equal(k, n);
    assert_int_equal(zombies, 0);
}


/* what the descriptors of process pid refer to, from fd `from` up: fills
 * what[] ("socket:[123]", "pipe:[456]", ...), returns how many */
static rg_uint_t
rg_test_fds(pid_t pid, int from, char what[][64], rg_uint_t max)
{
    int             fd;
    char            path[64], *p;
    ssize_t         len;
    rg_uint_t       n;
    DIR            *d;
    struct dirent  *de;

    snprintf(path, sizeof(path), "/proc/%ld/fd", (long) pid);

    d = opendir(path);
    if (d == NULL) {
        return 0;
    }

    n = 0;

    while ((de = readdir(d)) != NULL && n < max) {
        fd = (int) strtol(de->d_name, &p, 10);
        if (*p != '\0' || p == de->d_name || fd < from
            || (pid == getpid() && fd == dirfd(d)))
        {
            continue;
        }

        snprintf(path, sizeof(path), "/proc/%ld/fd/%d", (long) pid, fd);

        len = readlink(path, what[n], 63);
        if (len > 0) {
            what[n++][len] = '\0';
        }
    }

    closedir(d);

    return n;
}


/* A helper keeps 0-2 and nothing else of the worker: one socket (its
 * own end of the socketpair, 3), no socket or pipe the worker has, and
 * one event loop, its own. (Anonymous inodes such as epoll all read the
 * same, so they are counted, not compared.) Polled, because a fresh
 * helper may still be closing what it inherited. */
static void
rg_test_helper_fds(rg_test_ctx_t *t, pid_t pid)
{
    char             (*mine)[64], (*theirs)[64];
    rg_msec_t         end;
    rg_uint_t         i, j, n, m, sockets, shared, loops;

    mine = calloc(4096, 64);
    theirs = calloc(256, 64);
    assert_non_null(mine);
    assert_non_null(theirs);

    end = rg_monotonic_msec() + RG_TEST_SETTLE_MS;

    for ( ;; ) {
        m = rg_test_fds(getpid(), 3, mine, 4096);
        n = rg_test_fds(pid, 3, theirs, 256);

        sockets = 0;
        shared = 0;
        loops = 0;

        for (i = 0; i < n; i++) {
            sockets += strncmp(theirs[i], "socket:", 7) == 0;
            loops += strcmp(theirs[i], "anon_inode:[eventpoll]") == 0;

            if (strncmp(theirs[i], "anon_inode:", 11) == 0) {
                continue;
            }

            for (j = 0; j < m; j++) {
                shared += strcmp(theirs[i], mine[j]) == 0;
            }
        }

        if ((sockets == 1 && shared == 0 && loops <= 1)
            || rg_monotonic_msec() > end)
        {
            break;
        }

        usleep(10000);
    }

    if (sockets != 1 || shared || loops > 1) {
        print_error("helper %ld: %lu sockets, %lu shared with the worker, "
                    "%lu event loops:\n", (long) pid,
                    (unsigned long) sockets, (unsigned long) shared,
                    (unsigned long) loops);
        for (i = 0; i < n; i++) {
            print_error("    %s\n", theirs[i]);
        }
    }

    free(mine);
    free(theirs);

    assert_int_equal(sockets, 1);
    assert_int_equal(shared, 0);
    assert_true(loops <= 1);
}


static rg_uint_t
rg_test_count_fds(void)
{
    rg_uint_t   n;
    char      (*what)[64];

    what = calloc(4096, 64);
    assert_non_null(what);

    n = rg_test_fds(getpid(), 0, what, 4096);
    free(what);

    return n;
}


/* 1. a tool that crashes its helper ----------------------------------- */

static void
rg_test_crash(void **state)
{
    rg_test_ctx_t  *t = *state;
    char           *r;
    rg_session_t   *s;

    rg_test_engine(t, RG_TEST_SCRIPTS "isolate_crash.json", 2);

    rg_test_sessions(t, 1);
    s = t->ss[0];

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_calls, 1);
    assert_int_equal(s->tool_errors, 1);
    assert_int_equal(s->answer.len, strlen("the tool crashed; carrying on"));

    r = rg_test_tool_result(s, "call_crash");
    assert_string_equal(r, "error: crash_now crashed (signal 11: "
                           "Segmentation fault); the call did not complete");
    free(r);
}


/* 2. a tool that hangs until the tool timeout ------------------------- */

static void
rg_test_hang(void **state)
{
    rg_test_ctx_t  *t = *state;
    char           *r;
    pid_t           before[RG_TEST_MAX_PIDS], after[RG_TEST_MAX_PIDS];
    rg_uint_t       i, j, kept;
    rg_session_t   *s;

    /* one helper each: the one of crash.so hangs, is killed and must come
     * back for the call of the next round */
    rg_test_engine(t, RG_TEST_SCRIPTS "isolate_hang.json", 1);
    rg_test_settle(t, 2, before);

    rg_test_sessions(t, 1);
    s = t->ss[0];

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_calls, 3);
    assert_int_equal(s->tool_errors, 2);

    r = rg_test_tool_result(s, "call_hang");
    assert_string_equal(r, "error: hang_now timed out after 0.5s; try a "
                           "smaller request or another approach");
    free(r);

    /* the respawned helper served the next call (and crashed) */
    r = rg_test_tool_result(s, "call_crash");
    rg_test_contains(r, "crash_now crashed (signal 11");
    free(r);

    r = rg_test_tool_result(s, "call_echo");
    rg_test_contains(r, "\"after the hang\"");
    free(r);

    /* good.so's helper is the same one; crash.so's is new */
    rg_test_settle(t, 2, after);

    kept = 0;
    for (i = 0; i < 2; i++) {
        for (j = 0; j < 2; j++) {
            kept += before[i] == after[j];
        }
    }
    assert_int_equal(kept, 1);

    for (i = 0; i < 2; i++) {
        if (before[i] != after[0] && before[i] != after[1]) {
            assert_int_equal(kill(before[i], 0), -1);
            assert_int_equal(errno, ESRCH);
        }

        /* spawned while the session's connection to the model was open */
        rg_test_helper_fds(t, after[i]);
    }
}


/* 3. a hundred sessions crashing and hanging helpers at once ---------- */

static void
rg_test_many(void **state)
{
    rg_test_ctx_t  *t = *state;
    char           *r;
    pid_t           pids[RG_TEST_MAX_PIDS];
    rg_uint_t       i, k, crashed, timed_out;
    rg_session_t   *s;

    static const char  *crashes[] = {
        "call_crash_1", "call_crash_2", "call_crash_3"
    };
    static const char  *hangs[] = { "call_hang_1", "call_hang_2" };

    rg_test_engine(t, RG_TEST_SCRIPTS "isolate_many.json", 4);

    rg_test_sessions(t, 100);

    crashed = 0;
    timed_out = 0;

    for (i = 0; i < t->n; i++) {
        s = t->ss[i];

        if (s->state != RG_SESSION_DONE) {
            print_error("session %lu ended %s: %s\n", (unsigned long) i,
                        rg_session_state_name(s->state),
                        s->reason ? s->reason : "");
        }
        assert_int_equal(s->state, RG_SESSION_DONE);
        assert_int_equal(s->tool_calls, 5);
        assert_int_equal(s->tool_errors, 5);

        /* each crash reached the model as an error: a crash, or a
         * timeout while the call waited for a helper */
        for (k = 0; k < rg_nelems(crashes); k++) {
            r = rg_test_tool_result(s, crashes[k]);

            if (strstr(r, "error: crash_now crashed (signal 11: "
                          "Segmentation fault); the call did not complete"))
            {
                crashed++;

            } else if (strstr(r, "error: crash_now timed out after 0.5s")) {
                timed_out++;

            } else {
                print_error("session %lu, %s: \"%s\"\n", (unsigned long) i,
                            crashes[k], r);
                fail();
            }

            free(r);
        }

        for (k = 0; k < rg_nelems(hangs); k++) {
            r = rg_test_tool_result(s, hangs[k]);
            assert_string_equal(r, "error: hang_now timed out after 0.5s; "
                                   "try a smaller request or another "
                                   "approach");
            free(r);
        }
    }

    assert_true(crashed > 0);
    assert_int_equal(crashed + timed_out, 3 * t->n);

    rg_test_sessions_free(t);

    /* this process lives on with all its helpers, and they still serve */
    assert_int_equal(kill(getpid(), 0), 0);
    rg_test_settle(t, 8, pids);

    for (i = 0; i < 8; i++) {
        rg_test_helper_fds(t, pids[i]);
    }
}


/* 4. a well-behaved isolated tool ------------------------------------- */

static void
rg_test_echo(void **state)
{
    rg_test_ctx_t  *t = *state;
    char           *r;
    json_t         *j;
    rg_session_t   *s;

    rg_test_engine(t, RG_TEST_SCRIPTS "isolate_echo.json", 2);

    rg_test_sessions(t, 1);
    s = t->ss[0];

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_calls, 1);
    assert_int_equal(s->tool_errors, 0);

    /* echo answers with its arguments, as the model sent them */
    r = rg_test_tool_result(s, "call_echo");
    j = json_loads(r, 0, NULL);
    assert_non_null(j);
    assert_true(json_is_string(json_object_get(j, "text")));
    assert_string_equal(json_string_value(json_object_get(j, "text")),
                        "hello from a helper");
    assert_int_equal(json_object_size(j), 1);
    json_decref(j);
    free(r);
}


/* 5. nothing is left once the engine is gone -------------------------- */

static void
rg_test_nothing_left(void **state)
{
    rg_test_ctx_t  *t = *state;
    pid_t           pids[RG_TEST_MAX_PIDS];
    rg_uint_t       i, fds, zombies;

    fds = rg_test_count_fds();

    rg_test_engine(t, RG_TEST_SCRIPTS "isolate_crash.json", 3);

    rg_test_sessions(t, 10);
    for (i = 0; i < t->n; i++) {
        assert_int_equal(t->ss[i]->state, RG_SESSION_DONE);
    }
    rg_test_sessions_free(t);

    rg_test_settle(t, 6, pids);

    rg_engine_destroy(t->engine);
    t->engine = NULL;

    /* every helper was killed and reaped */
    for (i = 0; i < 6; i++) {
        assert_int_equal(kill(pids[i], 0), -1);
        assert_int_equal(errno, ESRCH);
    }

    assert_int_equal(rg_test_children(t, pids, &zombies), 0);

    /* and every socketpair closed (the cycle and the mock stay) */
    assert_int_equal(rg_test_count_fds(), fds);
}


/* the direct tests: module "direct", defined here ------------------- */

/* (host->fail) below: cmocka has a macro named fail */

static int rg_test_tool_later(rg_tool_call_t *call);
static int rg_test_tool_silent(rg_tool_call_t *call);
static int rg_test_tool_refuse(rg_tool_call_t *call);
static int rg_test_tool_no_http(rg_tool_call_t *call);
static int rg_test_tool_no_agent(rg_tool_call_t *call);
static int rg_test_tool_garble(rg_tool_call_t *call);
static int rg_test_tool_huge_frame(rg_tool_call_t *call);
static int rg_test_tool_leave(rg_tool_call_t *call);
static int rg_test_tool_hang(rg_tool_call_t *call);
static int rg_test_tool_big(rg_tool_call_t *call);
static int rg_test_tool_whoami(rg_tool_call_t *call);
static int rg_test_tool_stdio(rg_tool_call_t *call);
static int rg_test_tool_shared(rg_tool_call_t *call);


/* a lock of this process, as a library keeps one: it lives in memory
 * that helpers inherit (glibc resets its own stdio locks in a fork's
 * child, but no other) */
static pthread_mutex_t  rg_test_shared_lock = PTHREAD_MUTEX_INITIALIZER;


#define RG_TEST_SCHEMA  "{\"type\":\"object\"}"

static const rg_tool_t  rg_test_tools[] = {
    { "later", "", RG_TEST_SCHEMA, 0, 0, rg_test_tool_later, NULL },
    { "silent", "", RG_TEST_SCHEMA, 0, 0, rg_test_tool_silent, NULL },
    { "refuse", "", RG_TEST_SCHEMA, 0, 0, rg_test_tool_refuse, NULL },
    { "no_http", "", RG_TEST_SCHEMA, 0, 0, rg_test_tool_no_http, NULL },
    { "no_agent", "", RG_TEST_SCHEMA, 0, 0, rg_test_tool_no_agent, NULL },
    { "garble", "", RG_TEST_SCHEMA, 0, 0, rg_test_tool_garble, NULL },
    { "huge_frame", "", RG_TEST_SCHEMA, 0, 0, rg_test_tool_huge_frame,
      NULL },
    { "leave", "", RG_TEST_SCHEMA, 0, 0, rg_test_tool_leave, NULL },
    { "hang", "", RG_TEST_SCHEMA, RG_TOOL_BLOCKING, 0, rg_test_tool_hang,
      NULL },
    { "big", "", RG_TEST_SCHEMA, 0, 0, rg_test_tool_big, NULL },
    { "whoami", "", RG_TEST_SCHEMA, 0, 0, rg_test_tool_whoami, NULL },
    { "stdio", "", RG_TEST_SCHEMA, 0, 0, rg_test_tool_stdio, NULL },
    { "shared", "", RG_TEST_SCHEMA, 0, 0, rg_test_tool_shared, NULL },
    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};

static rg_tool_module_t  rg_test_direct_module = {
    RG_TOOL_MODULE_V1, "direct", NULL, NULL, NULL, NULL, rg_test_tools
};


/* answers from a timer of the helper's loop, with what the arguments
 * say: "s=abc n=5 x=2.5 b=1 list=a,b" */
static void
rg_test_later_fire(void *data)
{
    int              b;
    char             out[256];
    size_t           i, n, len, slen;
    double           x;
    long long        k;
    const char      *s, *item;
    rg_tool_call_t  *call;
    rg_tool_host_t  *host;

    call = data;
    host = call->host;

    if (host->arg_string(call, "s", &s, &slen) != 0
        || host->arg_int(call, "n", &k) != 0
        || host->arg_number(call, "x", &x) != 0
        || host->arg_bool(call, "b", &b) != 0
        || host->arg_array_len(call, "list", &n) != 0
        || host->arg_string(call, "missing", &s, &slen) != -1)
    {
        (host->fail)(call, "an argument could not be read");
        return;
    }

    host->arg_string(call, "s", &s, &slen);

    len = snprintf(out, sizeof(out), "s=%.*s n=%lld x=%g b=%d list=",
                   (int) slen, s, k, x, b);

    for (i = 0; i < n && len < sizeof(out) - 16; i++) {
        if (host->arg_array_string(call, "list", i, &item, NULL) != 0) {
            (host->fail)(call, "list[%zu] is not a string", i);
            return;
        }
        len += snprintf(out + len, sizeof(out) - len, "%s%s", i ? "," : "",
                        item);
    }

    host->done(call, out, len);
}


static int
rg_test_tool_later(rg_tool_call_t *call)
{
    long long  ms;

    if (call->host->arg_int(call, "ms", &ms) != 0) {
        ms = 10;
    }

    if (call->host->timer_add(call->host, (uint64_t) ms, rg_test_later_fire,
                              call) == NULL)
    {
        return RG_TOOL_ERROR;
    }

    return RG_TOOL_AGAIN;
}


static int
rg_test_tool_silent(rg_tool_call_t *call)
{
    return RG_TOOL_OK;
}


static int
rg_test_tool_refuse(rg_tool_call_t *call)
{
    return RG_TOOL_ERROR;
}


static void
rg_test_http_cb(rg_tool_call_t *call, const rg_tool_http_result_t *res,
    void *data)
{
}


static int
rg_test_tool_no_http(rg_tool_call_t *call)
{
    if (call->host->http_get(call, "http://127.0.0.1:1/", 0, 0,
                             rg_test_http_cb, NULL) == 0)
    {
        return RG_TOOL_AGAIN;
    }

    (call->host->fail)(call, "%s", call->host->error(call));

    return RG_TOOL_OK;
}


static void
rg_test_agent_cb(rg_tool_call_t *call, const char *status,
    const char *answer, size_t len, void *data)
{
}


static int
rg_test_tool_no_agent(rg_tool_call_t *call)
{
    if (call->host->agent_run(call, "a", "x", 1, rg_test_agent_cb, NULL)
        == 0)
    {
        return RG_TOOL_AGAIN;
    }

    (call->host->fail)(call, "%s", call->host->error(call));

    return RG_TOOL_OK;
}


/* writes a frame that is no answer, then waits to be killed */
static int
rg_test_tool_garble(rg_tool_call_t *call)
{
    if (write(3, "\0\0\0\5hello", 9) != 9) {
        return RG_TOOL_ERROR;
    }

    for ( ;; ) {
        pause();
    }

    return RG_TOOL_ERROR;
}


static int
rg_test_tool_huge_frame(rg_tool_call_t *call)
{
    if (write(3, "\x7f\xff\xff\xff", 4) != 4) {
        return RG_TOOL_ERROR;
    }

    for ( ;; ) {
        pause();
    }

    return RG_TOOL_ERROR;
}


static int
rg_test_tool_leave(rg_tool_call_t *call)
{
    _exit(3);
}


static int
rg_test_tool_hang(rg_tool_call_t *call)
{
    for ( ;; ) {
        pause();
    }

    return RG_TOOL_ERROR;
}


/* answers "size" bytes: 'a' to 'z' over and over */
static int
rg_test_tool_big(rg_tool_call_t *call)
{
    char       *p;
    size_t      i;
    long long   size;

    if (call->host->arg_int(call, "size", &size) != 0 || size <= 0) {
        return RG_TOOL_ERROR;
    }

    p = malloc(size);
    if (p == NULL) {
        return RG_TOOL_ERROR;
    }

    for (i = 0; i < (size_t) size; i++) {
        p[i] = 'a' + i % 26;
    }

    call->host->done(call, p, size);
    free(p);

    return RG_TOOL_OK;
}


/* where the helper lives: "pid ppid pgid usr2-default usr2-blocked" */
static int
rg_test_tool_whoami(rg_tool_call_t *call)
{
    int               n;
    char              out[128];
    sigset_t          set;
    struct sigaction  sa;

    sigaction(SIGUSR2, NULL, &sa);
    sigprocmask(SIG_SETMASK, NULL, &set);

    n = snprintf(out, sizeof(out), "%ld %ld %ld %d %d", (long) getpid(),
                 (long) getppid(), (long) getpgid(0),
                 sa.sa_handler == SIG_DFL, sigismember(&set, SIGUSR2));

    call->host->done(call, out, n);

    return RG_TOOL_OK;
}


/* where the helper's stdin and stdout go: "IN OUT", after it wrote a
 * line to stdout */
static int
rg_test_tool_stdio(rg_tool_call_t *call)
{
    int      fd;
    char     out[256], path[64];
    ssize_t  n;
    size_t   len;

    fputs("a line for nobody\n", stdout);
    fflush(stdout);

    len = 0;

    for (fd = 0; fd < 2; fd++) {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        n = readlink(path, out + len, sizeof(out) - len - 2);
        len += n > 0 ? (size_t) n : 0;
        out[len++] = fd ? '\0' : ' ';
    }

    call->host->done(call, out, strlen(out));

    return RG_TOOL_OK;
}


/* takes the shared lock, as library code in the helper would */
static int
rg_test_tool_shared(rg_tool_call_t *call)
{
    pthread_mutex_lock(&rg_test_shared_lock);
    pthread_mutex_unlock(&rg_test_shared_lock);

    call->host->done(call, "taken", 5);

    return RG_TOOL_OK;
}


/* module "direct" isolated with `helpers` helpers on a reactor of the
 * test's own, and an agent that may call all its tools for timeout ms;
 * asserts nothing (it also runs in a forked worker) */
static rg_int_t
rg_test_direct_make(rg_test_ctx_t *t, rg_uint_t helpers, rg_msec_t timeout)
{
    rg_uint_t  i, n;

    t->base = event_base_new();
    if (t->base == NULL) {
        return RG_ERROR;
    }

    t->log = *rg_log_stderr();
    t->log.log_level = getenv("RG_TEST_LOG") ? RG_LOG_DEBUG : RG_LOG_CRIT;

    t->runtime = rg_tools_ctx_create(t->base, NULL, &t->log, 1);
    if (t->runtime == NULL) {
        return RG_ERROR;
    }

    for (n = 0; rg_test_tools[n].name; n++) { /* count */ }

    t->entries = calloc(n, sizeof(rg_tool_entry_t));
    t->tools = calloc(n, sizeof(rg_tool_entry_t *));
    t->agent = calloc(1, sizeof(rg_agent_conf_t));
    if (t->entries == NULL || t->tools == NULL || t->agent == NULL) {
        return RG_ERROR;
    }

    t->module.mod = &rg_test_direct_module;
    t->module.isolated = 1;
    t->module.index = 0;
    rg_tools_host_init(&t->module.host, &t->module.bind, &t->module, NULL);

    for (i = 0; i < n; i++) {
        t->entries[i].tool = &rg_test_tools[i];
        t->entries[i].module = &t->module;
        t->tools[i] = &t->entries[i];
    }

    t->agent->toolset.tools = t->tools;
    t->agent->toolset.ntools = n;
    t->agent->toolset.timeout = timeout;
    t->agent->toolset.tool_list = "(the direct tools)";

    return rg_tools_ctx_bind(t->runtime, &t->module, helpers);
}


static void
rg_test_direct(rg_test_ctx_t *t, rg_uint_t helpers, rg_msec_t timeout)
{
    assert_int_equal(rg_test_direct_make(t, helpers, timeout), RG_OK);
}


static void
rg_test_turn_done(rg_tool_turn_t *turn)
{
    event_base_loopbreak(turn->data);
}


/* runs one turn of calls "name args" (args may be absent: {}); keeps it
 * in t->turn */
static rg_tool_turn_t *
rg_test_turn(rg_test_ctx_t *t, rg_uint_t n, const char **calls)
{
    char               *sp;
    rg_uint_t           i;
    rg_tool_request_t  *reqs;

    rg_tools_turn_destroy(t->turn);
    t->turn = NULL;

    reqs = calloc(n, sizeof(rg_tool_request_t));
    assert_non_null(reqs);

    for (i = 0; i < n; i++) {
        sp = strchr(calls[i], ' ');

        reqs[i].id.data = (char *) calls[i];
        reqs[i].id.len = strlen(calls[i]);
        reqs[i].name.data = (char *) calls[i];
        reqs[i].name.len = sp ? (size_t) (sp - calls[i]) : strlen(calls[i]);
        reqs[i].arguments.data = sp ? sp + 1 : (char *) "{}";
        reqs[i].arguments.len = strlen(reqs[i].arguments.data);
    }

    t->turn = rg_tools_turn_create(t->runtime, &t->agent->toolset, "s-direct",
                                   reqs, n, rg_test_turn_done, t->base,
                                   &t->log);
    free(reqs);
    assert_non_null(t->turn);

    rg_tools_turn_start(t->turn);

    /* an isolated call is never answered inside rg_isolate_call() */
    for (i = 0; i < n; i++) {
        if (t->turn->runs[i]->launched) {
            assert_false(t->turn->runs[i]->finished);
        }
    }

    if (t->turn->pending) {
        event_base_dispatch(t->base);
    }

    assert_int_equal(t->turn->pending, 0);

    return t->turn;
}


static const char *
rg_test_result(rg_test_ctx_t *t, rg_uint_t i, int failed)
{
    rg_tool_run_t  *run;

    run = t->turn->runs[i];

    if (run->failed != (unsigned) failed) {
        print_error("call %lu: \"%s\" %s\n", (unsigned long) i,
                    run->result ? run->result : "(none)",
                    failed ? "did not fail" : "failed");
    }
    assert_int_equal(run->failed, failed);
    assert_non_null(run->result);

    return run->result;
}


/* 6. the helper's host table ------------------------------------------ */

static void
rg_test_direct_host(void **state)
{
    rg_test_ctx_t  *t = *state;
    pid_t           before[RG_TEST_MAX_PIDS], after[RG_TEST_MAX_PIDS];

    static const char  *calls[] = {
        ("later {\"s\":\"abc\",\"n\":5.0,\"x\":2.5,\"b\":true,"
            "\"list\":[\"a\",\"b\"],\"ms\":30}"),
        "silent",
        "refuse",
        "no_http",
        "no_agent",
        "later {\"s\":\"\",\"n\":-1,\"x\":0,\"b\":false,\"list\":[1]}",
    };

    rg_test_direct(t, 2, 5000);
    rg_test_settle(t, 2, before);

    rg_test_turn(t, rg_nelems(calls), calls);

    assert_string_equal(rg_test_result(t, 0, 0),
                        "s=abc n=5 x=2.5 b=1 list=a,b");
    assert_string_equal(rg_test_result(t, 1, 1),
                        "error: silent returned without an answer");
    assert_string_equal(rg_test_result(t, 2, 1),
                        "error: refuse failed without saying why");
    assert_string_equal(rg_test_result(t, 3, 1),
                        "error: no_http failed: http_get is not available "
                        "in an isolated module");
    assert_string_equal(rg_test_result(t, 4, 1),
                        "error: no_agent failed: agent_run is not "
                        "available in an isolated module");
    assert_string_equal(rg_test_result(t, 5, 1),
                        "error: later failed: list[0] is not a string");

    /* nothing of that cost a helper */
    rg_test_settle(t, 2, after);
    assert_true((before[0] == after[0] && before[1] == after[1])
                || (before[0] == after[1] && before[1] == after[0]));
}


/* 7. helpers that break the protocol, or just leave ------------------- */

static void
rg_test_direct_broken(void **state)
{
    rg_test_ctx_t  *t = *state;
    pid_t           pids[RG_TEST_MAX_PIDS];

    static const char  *calls[] = {
        "garble", "huge_frame", "leave",
        ("later {\"s\":\"x\",\"n\":1,\"x\":1,\"b\":true,\"list\":[]}")
    };
    static const char  *after[] = {
        "later {\"s\":\"y\",\"n\":2,\"x\":1,\"b\":true,\"list\":[]}"
    };

    rg_test_direct(t, 2, 5000);
    rg_test_turn(t, rg_nelems(calls), calls);

    assert_string_equal(rg_test_result(t, 0, 1),
                        "error: garble sent a malformed answer; the call "
                        "did not complete");
    assert_string_equal(rg_test_result(t, 1, 1),
                        "error: huge_frame sent a malformed answer; the "
                        "call did not complete");
    assert_string_equal(rg_test_result(t, 2, 1),
                        "error: leave exited with status 3; the call did "
                        "not complete");
    assert_string_equal(rg_test_result(t, 3, 0),
                        "s=x n=1 x=1 b=1 list=");

    /* both helpers are back and serve; the broken ones are reaped */
    rg_test_turn(t, 1, after);
    assert_string_equal(rg_test_result(t, 0, 0), "s=y n=2 x=1 b=1 list=");

    rg_test_settle(t, 2, pids);
}


/* 8. large answers cross the socket in pieces; too large ones fail ---- */

static void
rg_test_direct_big(void **state)
{
    rg_test_ctx_t  *t = *state;
    char           *huge;
    size_t          i;
    const char     *r;
    char            calls[2][64];
    const char     *cp[3];

    snprintf(calls[0], sizeof(calls[0]), "big {\"size\":%d}", RG_TEST_BIG);
    snprintf(calls[1], sizeof(calls[1]), "big {\"size\":%d}",
             RG_TEST_TOO_BIG);

    /* later {"s":"xxx…"}, too large to send */
    huge = malloc(RG_TEST_TOO_BIG + 32);
    assert_non_null(huge);
    i = snprintf(huge, 32, "later {\"s\":\"");
    memset(huge + i, 'x', RG_TEST_TOO_BIG);
    strcpy(huge + i + RG_TEST_TOO_BIG, "\"}");

    cp[0] = calls[0];
    cp[1] = calls[1];
    cp[2] = huge;

    rg_test_direct(t, 2, 10000);
    rg_test_turn(t, 3, cp);
    free(huge);

    r = rg_test_result(t, 0, 0);
    assert_int_equal(t->turn->runs[0]->result_len, RG_TEST_BIG);
    for (i = 0; i < RG_TEST_BIG; i++) {
        if (r[i] != 'a' + (char) (i % 26)) {
            print_error("byte %zu is '%c'\n", i, r[i]);
            fail();
        }
    }

    assert_string_equal(rg_test_result(t, 1, 1),
                        "error: big answered with more than 16m; ask for "
                        "less");
    assert_string_equal(rg_test_result(t, 2, 1),
                        "error: arguments for later are larger than an "
                        "isolated module takes (16m); send less");
}


/* 9. one helper: calls wait in order; a hang times out those behind it,
 * and the helper comes back ------------------------------------------ */

static void
rg_test_direct_queue(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_uint_t       i;

    static const char  *first[] = {
        "later {\"s\":\"1\",\"n\":1,\"x\":1,\"b\":true,\"list\":[],"
            "\"ms\":20}",
        "later {\"s\":\"2\",\"n\":1,\"x\":1,\"b\":true,\"list\":[],"
            "\"ms\":1}",
        "later {\"s\":\"3\",\"n\":1,\"x\":1,\"b\":true,\"list\":[],"
            "\"ms\":1}",
    };
    static const char  *second[] = {
        "hang",
        "later {\"s\":\"4\",\"n\":1,\"x\":1,\"b\":true,\"list\":[]}",
        "later {\"s\":\"5\",\"n\":1,\"x\":1,\"b\":true,\"list\":[]}",
    };
    static const char  *third[] = {
        "later {\"s\":\"6\",\"n\":1,\"x\":1,\"b\":true,\"list\":[]}",
    };

    rg_test_direct(t, 1, 300);

    /* one at a time, in order: the slow first call ends first */
    rg_test_turn(t, rg_nelems(first), first);
    for (i = 0; i < rg_nelems(first); i++) {
        assert_non_null(strstr(rg_test_result(t, i, 0), "list="));
    }
    assert_true(t->turn->runs[0]->ms <= t->turn->runs[1]->ms);
    assert_true(t->turn->runs[1]->ms <= t->turn->runs[2]->ms);

    rg_test_turn(t, rg_nelems(second), second);
    assert_string_equal(rg_test_result(t, 0, 1), "error: hang timed out "
                        "after 0.3s; try a smaller request or another "
                        "approach");
    assert_string_equal(rg_test_result(t, 1, 1), "error: later timed out "
                        "after 0.3s; try a smaller request or another "
                        "approach");
    assert_string_equal(rg_test_result(t, 2, 1), "error: later timed out "
                        "after 0.3s; try a smaller request or another "
                        "approach");

    rg_test_turn(t, rg_nelems(third), third);
    assert_string_equal(rg_test_result(t, 0, 0), "s=6 n=1 x=1 b=1 list=");
}


/* 10. what a helper inherits ------------------------------------------ */

static void
rg_test_direct_inherits(void **state)
{
    rg_test_ctx_t     *t = *state;
    long               pid, ppid, pgid;
    int                dfl, blocked;
    sigset_t           set, old;
    struct sigaction   sa, olda;

    static const char  *calls[] = { "whoami" };

    /* the worker handles and blocks a signal; its helpers must not */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    assert_int_equal(sigaction(SIGUSR2, &sa, &olda), 0);
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    assert_int_equal(sigprocmask(SIG_BLOCK, &set, &old), 0);

    rg_test_direct(t, 1, 5000);

    assert_int_equal(sigprocmask(SIG_SETMASK, &old, NULL), 0);
    assert_int_equal(sigaction(SIGUSR2, &olda, NULL), 0);

    rg_test_turn(t, 1, calls);

    assert_int_equal(sscanf(rg_test_result(t, 0, 0), "%ld %ld %ld %d %d",
                            &pid, &ppid, &pgid, &dfl, &blocked), 5);
    assert_int_equal(ppid, getpid());
    assert_int_equal(pgid, pid);            /* a group of its own */
    assert_int_equal(dfl, 1);
    assert_int_equal(blocked, 0);

    rg_test_helper_fds(t, (pid_t) pid);
}


/* 11. helpers die with their worker ---------------------------------- */

/* the state letter of process pid in /proc, or 0 when it is gone */
static char
rg_test_proc_state(pid_t pid)
{
    char   path[64], buf[512], *p, state;
    FILE  *f;

    snprintf(path, sizeof(path), "/proc/%ld/stat", (long) pid);

    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }

    p = fgets(buf, sizeof(buf), f);
    fclose(f);

    if (p == NULL || (p = strrchr(buf, ')')) == NULL
        || sscanf(p + 1, " %c", &state) != 1)
    {
        return 0;
    }

    return state;
}


static void
rg_test_direct_orphans(void **state)
{
    rg_test_ctx_t       *t = *state;
    int                  fds[2], st;
    char                 c;
    pid_t                worker, pids[RG_TEST_MAX_PIDS];
    ssize_t              n;
    rg_msec_t            end;
    rg_uint_t            i, k, zombies, alive;
    struct timeval       tv;
    rg_tool_request_t    reqs[2];

    memset(reqs, 0, sizeof(reqs));
    assert_int_equal(pipe(fds), 0);

    worker = fork();
    assert_true(worker != -1);

    if (worker == 0) {
        /* a worker that dies while its helpers are busy (and so do not
         * read the end of their sockets) */
        close(fds[0]);

        if (rg_test_direct_make(t, 2, 60000) != RG_OK) {
            _exit(1);
        }

        reqs[0].id.data = (char *) "h1";
        reqs[1].id.data = (char *) "h2";
        for (i = 0; i < 2; i++) {
            reqs[i].id.len = 2;
            reqs[i].name.data = (char *) "hang";
            reqs[i].name.len = 4;
            reqs[i].arguments.data = (char *) "{}";
            reqs[i].arguments.len = 2;
        }

        t->turn = rg_tools_turn_create(t->runtime, &t->agent->toolset,
                                       "s-orphans", reqs, 2,
                                       rg_test_turn_done, t->base, &t->log);
        if (t->turn == NULL) {
            _exit(1);
        }

        rg_tools_turn_start(t->turn);

        tv.tv_sec = 0;
        tv.tv_usec = 300000;
        event_base_loopexit(t->base, &tv);
        event_base_dispatch(t->base);

        k = rg_test_children(t, pids, &zombies);
        n = write(fds[1], pids, k * sizeof(pid_t));

        _exit(n == (ssize_t) (k * sizeof(pid_t)) ? 0 : 1);
    }

    close(fds[1]);

    k = 0;
    while (k < RG_TEST_MAX_PIDS
           && (n = read(fds[0], &pids[k], sizeof(pid_t))) == sizeof(pid_t))
    {
        k++;
    }
    close(fds[0]);

    assert_int_equal(waitpid(worker, &st, 0), worker);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(k, 2);

    /* PR_SET_PDEATHSIG: they are killed (zombies of init, or gone) */
    end = rg_monotonic_msec() + RG_TEST_SETTLE_MS;

    do {
        alive = 0;
        for (i = 0; i < k; i++) {
            c = rg_test_proc_state(pids[i]);
            alive += c != 0 && c != 'Z';
        }

        if (alive) {
            usleep(10000);
        }

    } while (alive && rg_monotonic_msec() < end);

    for (i = 0; alive && i < k; i++) {
        (void) kill(pids[i], SIGKILL);     /* not ours, but left behind */
    }

    assert_int_equal(alive, 0);
}


/* 12. a lock that a worker thread holds ------------------------------ */

typedef struct {
    pthread_mutex_t     lock;
    pthread_cond_t      cond;
    int                 state;      /* 1: holds it, 2: may let it go */
} rg_test_holder_t;


static void *
rg_test_holder(void *arg)
{
    rg_test_holder_t  *h;

    h = arg;

    pthread_mutex_lock(&rg_test_shared_lock);

    pthread_mutex_lock(&h->lock);
    h->state = 1;
    pthread_cond_broadcast(&h->cond);

    while (h->state != 2) {
        pthread_cond_wait(&h->cond, &h->lock);
    }

    pthread_mutex_unlock(&h->lock);

    pthread_mutex_unlock(&rg_test_shared_lock);

    return NULL;
}


/* A helper that starts while another thread of the worker holds a lock
 * does not inherit it held: it is cloned from the
 * zygote, forked before that thread existed, and so can take the lock.
 * (Forked from the worker, it would wait for an owner it does not have,
 * until the call's timeout.) Its stdin and stdout are /dev/null. */
static void
rg_test_direct_held_lock(void **state)
{
    rg_test_ctx_t      *t = *state;
    pthread_t           th;
    rg_test_holder_t    h;
    const char         *shared, *stdio;

    static const char  *leave[] = { "leave" };
    static const char  *calls[] = { "shared", "stdio" };

    rg_test_direct(t, 1, 3000);

    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.cond, NULL);
    h.state = 0;

    assert_int_equal(pthread_create(&th, NULL, rg_test_holder, &h), 0);

    pthread_mutex_lock(&h.lock);
    while (h.state != 1) {
        pthread_cond_wait(&h.cond, &h.lock);
    }
    pthread_mutex_unlock(&h.lock);

    /* the helper leaves; its successor starts while the lock is held */
    rg_test_turn(t, 1, leave);
    rg_test_turn(t, 2, calls);

    shared = t->turn->runs[0]->result;
    stdio = t->turn->runs[1]->result;

    pthread_mutex_lock(&h.lock);
    h.state = 2;
    pthread_cond_broadcast(&h.cond);
    pthread_mutex_unlock(&h.lock);
    assert_int_equal(pthread_join(th, NULL), 0);

    pthread_mutex_destroy(&h.lock);
    pthread_cond_destroy(&h.cond);

    assert_non_null(shared);
    assert_string_equal(shared, "taken");
    assert_non_null(stdio);
    assert_string_equal(stdio, "/dev/null /dev/null");
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup_teardown(rg_test_crash,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_hang,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_many,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_echo,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_nothing_left,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_direct_host,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_direct_broken,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_direct_big,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_direct_queue,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_direct_inherits,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_direct_held_lock,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_direct_orphans,
                                        rg_test_setup, rg_test_teardown),
    };

    return cmocka_run_group_tests_name("isolate", tests, NULL, NULL);
}
