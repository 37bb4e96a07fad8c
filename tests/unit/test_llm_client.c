/* test_llm_client.c: tests of the LLM client (src/llm/rg_llm_client.c) and
 * the curl driver under it (src/event/rg_event_curl.c), through sessions
 * against the mock model over real HTTP where the behaviour is the loop's:
 *   - Retry-After values that are huge, infinite or not numbers;
 *   - cancelling 20,000 queued requests (O(1) each, so within a second
 *     in all);
 *   - a curl multi handle that breaks: its transfers fail with a reason,
 *     are retried on a new handle, and the sessions end done;
 *   - the connection budget: transfers past it wait, none fails;
 *   - a socket's event changes only when what curl waits for does;
 *   - the clocks of an attempt on reactor timers: connect, total and idle
 *     timeouts (idle_timeout within 300 ms of its value), the idle clock
 *     of a whole answer starting at its first byte, idle_timeout 0
 *     refused;
 *   - a body over the 16m cap is refused once, not downloaded again;
 *   - gzip: off by default for loopback and localhost, on elsewhere;
 *     the headers every request carries;
 *   - response_memory: the bytes of all responses being read stay under
 *     the budget, the attempt holding the most is stopped;
 *   - buffer_size is what curl allocates for its receive buffer;
 *   - a request waiting for its answer holds no response buffer.
 * Times are asserted as lower bounds, and as upper ones only where what
 * is guarded costs seconds: the idle clock's lateness, the cancels. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_event.h>
#include <rg_test.h>
#include <rg_test_session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <event2/event.h>
#include <event2/event_struct.h>


typedef struct {
    rg_test_mock_t     *mock;
    rg_test_mock_t     *mock2;
    rg_cycle_t         *cycle;
    rg_engine_t        *engine;
    rg_session_t       *s;
    int                 fd;           /* a listener that never accepts */
    int                 fd2;
    char               *path;
    char                err[512];
} rg_test_ctx_t;


static int
rg_test_setup(void **state)
{
    rg_test_ctx_t  *t;

    t = calloc(1, sizeof(rg_test_ctx_t));
    if (t == NULL) {
        return -1;
    }

    t->fd = -1;
    t->fd2 = -1;
    *state = t;

    return 0;
}


static int
rg_test_teardown(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_engine_end(t->s, t->engine, t->cycle, t->mock);
    rg_test_mock_stop(t->mock2);

    if (t->fd != -1) {
        close(t->fd);
    }

    if (t->fd2 != -1) {
        close(t->fd2);
    }

    if (t->path) {
        unlink(t->path);
        free(t->path);
    }

    free(t);

    return 0;
}


/* llm "mock" at port with `llm` in its block, agent "a" made of `agent`,
 * and `extra` at the top (more llm blocks and agents) */
static void
rg_test_engine(rg_test_ctx_t *t, int port, const char *llm,
    const char *agent, const char *extra)
{
    const char  *b;

    b = rg_test_build_dir();

    t->cycle = rg_test_cycle(t->err, sizeof(t->err),
        "load_module %s/modules/calc.so;\n"
        "%s\n"
        "llm mock {\n"
        "    base_url http://127.0.0.1:%d/v1;\n"
        "    model mock-1;\n"
        "    retry_base 50ms;\n"
        "    %s\n"
        "}\n"
        "agent a {\n"
        "    llm mock;\n"
        "    %s\n"
        "}\n",
        b, extra ? extra : "", port, llm ? llm : "", agent ? agent : "");

    t->engine = rg_test_engine_of(t->cycle, t->err);
}


static rg_llm_upstream_t *
rg_test_upstream(rg_test_ctx_t *t, const char *name)
{
    rg_llm_conf_t  *llm;

    llm = rg_llm_find(t->cycle, name, strlen(name));
    assert_non_null(llm);

    return rg_llm_upstream(t->engine, llm);
}


static rg_session_t *
rg_test_session(rg_test_ctx_t *t, const char *agent, const char *input)
{
    rg_session_destroy(t->s);

    t->s = rg_test_run(t->engine, agent, input);
    assert_non_null(t->s);
    assert_true(rg_session_final(t->s));

    return t->s;
}


/* a script for the mock, kept in the test's temporary folder */
static char *
rg_test_script(rg_test_ctx_t *t, const char *name, const char *text)
{
    free(t->path);
    t->path = rg_test_write_file(name, text);
    assert_non_null(t->path);

    return t->path;
}


/* 1. Retry-After -------------------------------------------------------- */

static void
rg_test_retry_after_values(void **state)
{
    time_t     now;
    char       date[64];
    struct tm  tm;

    now = time(NULL);

    /* seconds, then ms; huge and infinite are clamped, never converted */
    assert_int_equal(rg_llm_retry_after(" 2\r\n", 4, 0, now), 2000);
    assert_int_equal(rg_llm_retry_after(" 1.5", 4, 0, now), 1500);
    assert_int_equal(rg_llm_retry_after(" 1e30", 5, 0, now),
                     RG_LLM_MAX_RETRY_AFTER);
    assert_int_equal(rg_llm_retry_after(" inf", 4, 0, now),
                     RG_LLM_MAX_RETRY_AFTER);
    assert_int_equal(rg_llm_retry_after("infinity", 8, 0, now),
                     RG_LLM_MAX_RETRY_AFTER);
    assert_int_equal(rg_llm_retry_after("1e308", 5, 0, now),
                     RG_LLM_MAX_RETRY_AFTER);
    assert_int_equal(rg_llm_retry_after(" 300", 4, 1, now), 300);
    assert_int_equal(rg_llm_retry_after(" 1e30", 5, 1, now),
                     RG_LLM_MAX_RETRY_AFTER);
    assert_int_equal(rg_llm_retry_after(" inf", 4, 1, now),
                     RG_LLM_MAX_RETRY_AFTER);

    /* nothing usable: 0, and the backoff decides */
    assert_int_equal(rg_llm_retry_after(" -inf", 5, 0, now), 0);
    assert_int_equal(rg_llm_retry_after(" -5", 3, 0, now), 0);
    assert_int_equal(rg_llm_retry_after(" nan", 4, 0, now), 0);
    assert_int_equal(rg_llm_retry_after(" 0", 2, 0, now), 0);
    assert_int_equal(rg_llm_retry_after(" soon", 5, 0, now), 0);
    assert_int_equal(rg_llm_retry_after(" nan", 4, 1, now), 0);
    assert_int_equal(rg_llm_retry_after(" Wed, 21 Oct 2015 07:28:00 GMT",
                                        30, 1, now), 0);

    /* an HTTP date: in the past says nothing, far ahead is clamped */
    assert_int_equal(rg_llm_retry_after(" Wed, 21 Oct 2015 07:28:00 GMT",
                                        30, 0, now), 0);
    assert_int_equal(rg_llm_retry_after(" Fri, 31 Dec 9999 23:59:59 GMT",
                                        30, 0, now), RG_LLM_MAX_RETRY_AFTER);

    gmtime_r(&(time_t) { now + 30 }, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    assert_true(rg_llm_retry_after(date, strlen(date), 0, now) == 30000);

    /* longer than the buffer: cut, never overrun */
    assert_int_equal(rg_llm_retry_after("7                                  "
                                        "                                  "
                                        "                                  ",
                                        105, 0, now), 7000);
}


/* a 429 that asks for 1e30 seconds: the wait is clamped to 10 minutes,
 * past the retry budget, so the call gives up at once */
static void
rg_test_retry_after_huge(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;
    rg_msec_t       start;
    const char     *values[] = { "1e30", "inf" };
    const char     *headers[] = { "Retry-After", "retry-after-ms" };
    char            script[256];
    rg_uint_t       i;

    for (i = 0; i < 4; i++) {
        snprintf(script, sizeof(script), "[{\"status\": 429, \"headers\": "
                 "{\"%s\": \"%s\"}}, {\"message\": {\"content\": \"ok\"}}]",
                 headers[i / 2], values[i % 2]);

        rg_test_script(t, "retry.json", script);
        rg_test_mock(t, "--script", t->path);
        rg_test_engine(t, t->mock->port, "retry_budget 60s;", NULL, NULL);

        start = rg_monotonic_msec();
        s = rg_test_session(t, "a", "rate limited");

        assert_int_equal(s->state, RG_SESSION_FAILED);
        rg_test_contains(s->reason, "rate_limited");
        rg_test_contains(s->reason, "the wait asked for passes retry_budget");
        assert_int_equal(rg_test_upstream(t, "mock")->stats.retries, 0);
        assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 1);

        /* it gave up, it did not wait */
        assert_true(rg_monotonic_msec() - start < 60000);

        rg_session_destroy(t->s);
        t->s = NULL;
        rg_engine_destroy(t->engine);
        t->engine = NULL;
        rg_cycle_destroy(t->cycle);
        t->cycle = NULL;
        rg_test_mock_stop(t->mock);
        t->mock = NULL;
    }
}


/* 2. cancelling queued requests ---------------------------------------- */

static void
rg_test_done_count(rg_session_t *s)
{
    rg_uint_t  *left;

    left = s->data;

    if (left && --*left == 0) {
        event_base_loopbreak(s->engine->base);
    }
}


/* the wait queue walked both ways: its links agree, its length is n */
static void
rg_test_queue_check(rg_llm_upstream_t *up, rg_uint_t n)
{
    rg_uint_t       k;
    rg_llm_req_t   *r, **pp;

    k = 0;
    pp = &up->queue_head;

    for (r = up->queue_head; r; r = r->next) {
        assert_ptr_equal(r->pprev, pp);
        assert_true(r->queued);
        pp = &r->next;
        k++;
    }

    assert_ptr_equal(up->queue_tail, pp);
    assert_int_equal(k, n);
}


/* 20,000 sessions wait for one connection slot; all but 3 are cancelled,
 * from the middle, the tail and the head; the 3 left run in order. The
 * cancels take O(1) each: 20,000 took 47 ms in all under ASan on a loaded
 * 2-core machine, where the walk from the head they once took (O(N^2) in
 * all) took 16 s (and 10,000 from 1.3 to 12 s); RG_TEST_CANCEL_MAX lies
 * far from both. */
#define RG_TEST_CANCEL_MAX  1000


static void
rg_test_cancel_queued_many(void **state)
{
    rg_test_ctx_t     *t = *state;
    char               input[32];
    rg_uint_t          i, n, left, keep[3];
    uint64_t           start, spent;
    rg_session_t     **ss;
    rg_agent_conf_t   *a;
    rg_llm_upstream_t *up;

    n = 20000;

    rg_test_mock(t, "--rounds", "0", "--latency", "300");
    rg_test_engine(t, t->mock->port, "max_connections 1;", NULL, NULL);

    up = rg_test_upstream(t, "mock");
    a = rg_agent_find(t->cycle, "a", 1);
    ss = calloc(n, sizeof(rg_session_t *));
    assert_non_null(ss);

    left = 0;

    for (i = 0; i < n; i++) {
        snprintf(input, sizeof(input), "task %lu", (unsigned long) i);
        ss[i] = rg_session_create(t->engine, a, NULL, input, strlen(input),
                                  rg_test_done_count, &left);
        assert_non_null(ss[i]);
        assert_int_equal(rg_session_start(ss[i]), RG_OK);
    }

    /* one in flight, the rest queued */
    assert_int_equal(up->stats.active, 1);
    rg_test_queue_check(up, n - 1);

    keep[0] = 0;                 /* in flight */
    keep[1] = n / 2;
    keep[2] = n - 1;

    start = rg_monotonic_usec();

    /* every other from the middle outwards, then the rest from the head */
    for (i = n / 2 + 1; i < n - 1; i += 2) {
        rg_session_cancel(ss[i], "cancelled by the test");
    }
    for (i = n / 2 - 1; i > 0; i--) {
        rg_session_cancel(ss[i], "cancelled by the test");
    }
    for (i = n / 2 + 2; i < n - 1; i += 2) {
        rg_session_cancel(ss[i], "cancelled by the test");
    }

    spent = rg_monotonic_usec() - start;

    print_message("cancelling %lu queued requests took %.1f ms\n",
                  (unsigned long) (n - 3), (double) spent / 1000);
    assert_true(spent < RG_TEST_CANCEL_MAX * 1000);

    rg_test_queue_check(up, 2);
    assert_ptr_equal(up->queue_head, &ss[keep[1]]->req);
    assert_ptr_equal(up->queue_head->next, &ss[keep[2]]->req);

    left = 3;
    event_base_dispatch(t->engine->base);

    for (i = 0; i < n; i++) {
        if (i == keep[0] || i == keep[1] || i == keep[2]) {
            assert_int_equal(ss[i]->state, RG_SESSION_DONE);
        } else {
            assert_int_equal(ss[i]->state, RG_SESSION_CANCELLED);
        }
        rg_session_destroy(ss[i]);
    }

    free(ss);

    rg_test_queue_check(up, 0);
    assert_int_equal(up->stats.active, 0);
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 3);
}


/* 3. a broken multi handle --------------------------------------------- */

static void
rg_test_break_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_curl_test_break(arg);
}


typedef struct {
    struct event        ev;
    rg_test_mock_t     *mock;
    rg_curl_t          *curl;
    long                requests;
} rg_test_breaker_t;


/* breaks the multi once the mock has seen that many requests */
static void
rg_test_break_when(evutil_socket_t fd, short what, void *arg)
{
    struct timeval      tv;
    rg_test_breaker_t  *br;

    br = arg;

    if (rg_test_mock_stat(br->mock, "requests") >= br->requests) {
        rg_curl_test_break(br->curl);
        return;
    }

    tv.tv_sec = 0;
    tv.tv_usec = 20000;
    evtimer_add(&br->ev, &tv);
}


/* two sessions wait for slow answers when curl's multi handle fails:
 * both requests fail with the reason, are retried on a new handle, and
 * both sessions end done */
static void
rg_test_multi_broken(void **state)
{
    rg_test_ctx_t      *t = *state;
    rg_uint_t           states[2];
    struct timeval      tv;
    rg_llm_upstream_t  *up;
    rg_test_breaker_t   br;

    rg_test_mock(t, "--rounds", "0", "--latency", "1500");
    rg_test_engine(t, t->mock->port, NULL, NULL, NULL);

    br.mock = t->mock;
    br.curl = rg_event_ctx(t->engine);
    br.requests = 2;
    evtimer_assign(&br.ev, t->engine->base, rg_test_break_when, &br);
    tv.tv_sec = 0;
    tv.tv_usec = 20000;
    evtimer_add(&br.ev, &tv);

    assert_int_equal(rg_test_run_many(t->engine, "a", 2, states), 2);
    event_del(&br.ev);

    assert_int_equal(states[0], RG_SESSION_DONE);
    assert_int_equal(states[1], RG_SESSION_DONE);

    up = rg_test_upstream(t, "mock");
    assert_int_equal(up->stats.retries, 2);
    assert_int_equal(rg_curl_limits(rg_event_ctx(t->engine))->rebuilt, 1);
    assert_int_equal(rg_curl_limits(rg_event_ctx(t->engine))->running, 0);
    assert_int_equal(rg_curl_limits(rg_event_ctx(t->engine))->bounded, 0);

    /* the first two reached the mock before the break, then two more */
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 4);
}


/* the reason a broken handle gives is what the session says at the end */
static void
rg_test_multi_broken_reason(void **state)
{
    rg_test_ctx_t  *t = *state;
    struct event    ev;
    struct timeval  tv;
    rg_session_t   *s;

    rg_test_mock(t, "--rounds", "0", "--latency", "1000");
    rg_test_engine(t, t->mock->port, "max_retries 0;", NULL, NULL);

    evtimer_assign(&ev, t->engine->base, rg_test_break_handler,
                   rg_event_ctx(t->engine));
    tv.tv_sec = 0;
    tv.tv_usec = 200000;
    evtimer_add(&ev, &tv);

    s = rg_test_session(t, "a", "slow");
    event_del(&ev);

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_contains(s->reason, "connect_error");
    rg_test_contains(s->reason, "the HTTP client failed");
    rg_test_contains(s->reason, "and was restarted");

    /* and the new handle works */
    s = rg_test_session(t, "a", "again");
    assert_int_equal(s->state, RG_SESSION_DONE);
}


/* 4. the connection budget --------------------------------------------- */

typedef struct {
    rg_curl_xfer_t      xfer;
    rg_uint_t          *left;
    struct event_base  *base;
    CURLcode            rc;
    unsigned            done:1;
} rg_test_xfer_t;


static void
rg_test_xfer_done(rg_curl_xfer_t *x, CURLcode rc)
{
    rg_test_xfer_t  *tx;

    tx = x->data;
    tx->rc = rc;
    tx->done = 1;

    if (--*tx->left == 0) {
        event_base_loopbreak(tx->base);
    }
}


static size_t
rg_test_discard(char *p, size_t size, size_t n, void *data)
{
    return size * n;
}


/* With RLIMIT_NOFILE at 64, the driver keeps 32 descriptors for files
 * and the like: 32 for connections, 2 idle per cache; 200 transfers at
 * once run at most max_running at a time, the others wait; all succeed. */
static void
rg_test_connection_budget(void **state)
{
    rg_test_ctx_t           *t = *state;
    char                     url[128];
    rg_uint_t                i, n, left;
    rg_curl_t               *c;
    struct rlimit            saved, rl;
    rg_test_xfer_t          *x;
    struct event_base       *base;
    const rg_curl_limits_t  *l;

    n = 200;

    rg_test_mock(t, "--latency", "20");
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/stats", t->mock->port);

    assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
    rl = saved;
    rl.rlim_cur = 64;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);

    base = event_base_new();
    assert_non_null(base);
    c = rg_curl_create(base, rg_log_stderr());
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
    assert_non_null(c);

    l = rg_curl_limits(c);
    assert_int_equal(l->nofile, 64);
    assert_int_equal(l->budget, 32);
    assert_int_equal(l->per_cache, 2);
    assert_true(l->max_running >= 1);
    assert_true(l->max_running + (l->max_caches + 1) * l->per_cache
                <= l->budget);

    x = calloc(n, sizeof(rg_test_xfer_t));
    assert_non_null(x);
    left = n;

    for (i = 0; i < n; i++) {
        x[i].xfer.easy = curl_easy_init();
        assert_non_null(x[i].xfer.easy);
        curl_easy_setopt(x[i].xfer.easy, CURLOPT_URL, url);
        curl_easy_setopt(x[i].xfer.easy, CURLOPT_WRITEFUNCTION,
                         rg_test_discard);
        x[i].xfer.done = rg_test_xfer_done;
        x[i].xfer.data = &x[i];
        x[i].left = &left;
        x[i].base = base;

        assert_int_equal(rg_curl_add(c, &x[i].xfer), RG_OK);
    }

    assert_int_equal(l->running, l->max_running);
    assert_int_equal(l->waiting, n - l->max_running);

    /* one taken back while it waits: it never runs, the others do */
    rg_curl_remove(c, &x[n - 1].xfer);
    left--;
    assert_int_equal(l->waiting, n - 1 - l->max_running);

    event_base_dispatch(base);

    for (i = 0; i < n - 1; i++) {
        assert_true(x[i].done);
        assert_int_equal(x[i].rc, CURLE_OK);
    }
    assert_false(x[n - 1].done);

    assert_int_equal(l->peak_running, l->max_running);
    assert_int_equal(l->waited, n - l->max_running);
    assert_int_equal(l->running, 0);
    assert_int_equal(l->waiting, 0);

    for (i = 0; i < n; i++) {
        curl_easy_cleanup(x[i].xfer.easy);
    }

    free(x);
    rg_curl_destroy(c);
    event_base_free(base);
}


/* 4b. sockets' events ------------------------------------------------- */

/* a session's 9 model calls, one after the other on a kept connection:
 * the socket's event (an epoll_ctl for each change) is added when curl
 * watches it and deleted when it stops (curl stops watching a connection
 * it keeps idle between calls), never deleted and added again for a
 * call to the callback that asks for what the event already waits for */
static void
rg_test_event_changes(void **state)
{
    rg_test_ctx_t           *t = *state;
    uint64_t                 changes;
    rg_llm_upstream_t       *up;
    rg_session_t            *s;
    const rg_curl_limits_t  *l;

    rg_test_mock(t, "--rounds", "8", "--calls", "1");
    rg_test_engine(t, t->mock->port, NULL, "tools calc; max_rounds 10;",
                   NULL);

    l = rg_curl_limits(rg_event_ctx(t->engine));
    changes = l->event_changes;

    s = rg_test_session(t, "a", "what is 2+2?");
    assert_int_equal(s->state, RG_SESSION_DONE);

    up = rg_test_upstream(t, "mock");
    assert_int_equal(up->stats.calls, 9);

    changes = l->event_changes - changes;
    print_message("%llu event changes for 9 model calls\n",
                  (unsigned long long) changes);

    /* the connect (out, then in), then an add and a delete a call */
    assert_true(changes >= 2);
    assert_true(changes <= 2 * 9 + 2);
}


/* 5. the clocks of an attempt ------------------------------------------ */

/* a loopback listener whose queue is full: a connect to it never ends */
static int
rg_test_full_listener(rg_test_ctx_t *t)
{
    int                 port;
    socklen_t           len;
    struct sockaddr_in  sin;

    t->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(t->fd >= 0);

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    assert_int_equal(bind(t->fd, (struct sockaddr *) &sin, sizeof(sin)), 0);
    assert_int_equal(listen(t->fd, 0), 0);

    len = sizeof(sin);
    assert_int_equal(getsockname(t->fd, (struct sockaddr *) &sin, &len), 0);
    port = ntohs(sin.sin_port);

    /* this one fills the queue; it is never accepted */
    t->fd2 = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(t->fd2 >= 0);
    assert_int_equal(connect(t->fd2, (struct sockaddr *) &sin, sizeof(sin)),
                     0);

    return port;
}


static void
rg_test_connect_timeout(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_msec_t       start, took;
    rg_session_t   *s;

    rg_test_engine(t, rg_test_full_listener(t),
                   "connect_timeout 300ms; timeout 30s; max_retries 0;",
                   NULL, NULL);

    start = rg_monotonic_msec();
    s = rg_test_session(t, "a", "connect");
    took = rg_monotonic_msec() - start;

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_contains(s->reason, "no connection within 300ms "
                     "(connect_timeout)");
    assert_true(took >= 300 - RG_TEST_CLOCK_SLACK);
    print_message("connect_timeout 300ms ended the call after %llu ms\n",
                  (unsigned long long) took);
}


static void
rg_test_total_timeout(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_msec_t       start, took;
    rg_session_t   *s;

    rg_test_mock(t, "--rounds", "0", "--latency", "3000");
    rg_test_engine(t, t->mock->port,
                   "timeout 700ms; idle_timeout 10s; max_retries 0;",
                   NULL, NULL);

    start = rg_monotonic_msec();
    s = rg_test_session(t, "a", "slow");
    took = rg_monotonic_msec() - start;

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_contains(s->reason, "the model did not answer in time");
    rg_test_contains(s->reason, "no complete answer within 700ms (timeout)");
    assert_true(took >= 700 - RG_TEST_CLOCK_SLACK);
    print_message("timeout 700ms ended the call after %llu ms\n",
                  (unsigned long long) took);
}


/* a whole answer that takes longer than idle_timeout to start is not
 * idle: its clock starts with its first byte, and `timeout` allows it */
static void
rg_test_slow_whole_answer(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--rounds", "0", "--latency", "2500");
    rg_test_engine(t, t->mock->port,
                   "timeout 20s; idle_timeout 1s; max_retries 0;",
                   NULL, NULL);

    s = rg_test_session(t, "a", "think long");

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 1);
    assert_true(rg_monotonic_msec() - s->started >= 2500 - RG_TEST_CLOCK_SLACK);
}


/* a stream that stops after its first event: idle_timeout ends it, in ms
 * (curl's low-speed check counted whole seconds and was seconds late):
 * within RG_TEST_IDLE_LATE of its value after the last byte, which a
 * timer of its own on a loaded machine under ThreadSanitizer keeps */
#define RG_TEST_IDLE_LATE  300

static void
rg_test_idle_stream_gap(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_msec_t       start, took, idle;
    rg_session_t   *s;

    rg_test_mock(t, "--rounds", "0", "--stream-delay", "4000",
                 "--stream-chunk", "4");
    rg_test_engine(t, t->mock->port,
                   "stream on; timeout 30s; idle_timeout 1200ms; "
                   "max_retries 0;", NULL, NULL);

    start = rg_monotonic_msec();
    s = rg_test_session(t, "a", "stream something");
    took = rg_monotonic_msec() - start;

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_contains(s->reason, "no byte for 1.2s (idle_timeout)");
    assert_true(took >= 1200 - RG_TEST_CLOCK_SLACK);

    /* from the last byte (or the connection) to the end of the session */
    assert_true(s->req.last_byte >= start && s->ended >= s->req.last_byte);
    idle = s->ended - s->req.last_byte;

    print_message("idle_timeout 1.2s ended the stream %llu ms after its "
                  "last byte, %llu ms after it started\n",
                  (unsigned long long) idle, (unsigned long long) took);

    assert_true(idle >= 1200 - RG_TEST_CLOCK_SLACK);
    assert_true(idle <= 1200 + RG_TEST_IDLE_LATE);
}


static void
rg_test_idle_zero_refused(void **state)
{
    char         err[512];
    rg_cycle_t  *cycle;

    cycle = rg_test_cycle(err, sizeof(err),
        "llm m {\n    base_url http://127.0.0.1:1/v1;\n    model m;\n"
        "    idle_timeout 0;\n}\nagent a { }\n");

    assert_null(cycle);
    assert_string_equal(err, "\"idle_timeout\" directive must be more than 0 "
                        "in test.conf:4");
}


/* 6. sizes -------------------------------------------------------------- */

/* A 17m body: its Content-Length says so, it is refused before it is
 * read, and it is not asked for again (a retry would bring the same). */
static void
rg_test_too_large_not_retried(void **state)
{
    rg_test_ctx_t  *t = *state;
    size_t          n;
    char           *text, *p;
    rg_session_t   *s;

    n = 17 * 1024 * 1024;
    text = malloc(n + 64);
    assert_non_null(text);

    p = text + sprintf(text, "[{\"raw\": \"");
    memset(p, 'x', n);
    p += n;
    strcpy(p, "\"}]");

    rg_test_script(t, "large.json", text);
    free(text);

    rg_test_mock(t, "--script", t->path);
    rg_test_engine(t, t->mock->port, "max_retries 4;", NULL, NULL);

    s = rg_test_session(t, "a", "large");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_contains(s->reason, "response_too_large");
    rg_test_contains(s->reason, "larger than 16m");
    rg_test_contains(s->reason, "not retried");
    assert_int_equal(rg_test_upstream(t, "mock")->stats.retries, 0);
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 1);
    assert_int_equal(rg_llm_memory(rg_llm_ctx(t->engine))->used, 0);
}


/* a stream has no Content-Length: it is stopped at 16m, and not retried */
static void
rg_test_too_large_stream(void **state)
{
    rg_test_ctx_t  *t = *state;
    size_t          n;
    char           *text, *p;
    rg_session_t   *s;

    n = 17 * 1024 * 1024;
    text = malloc(n + 128);
    assert_non_null(text);

    p = text + sprintf(text, "[{\"message\": {\"content\": \"");
    memset(p, 'y', n);
    p += n;
    strcpy(p, "\"}}]");

    rg_test_script(t, "stream-large.json", text);
    free(text);

    rg_test_mock(t, "--script", t->path, "--stream-chunk", "1048576");
    rg_test_engine(t, t->mock->port, "stream on; max_retries 4;", NULL, NULL);

    s = rg_test_session(t, "a", "large");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_contains(s->reason, "response_too_large");
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 1);
    assert_int_equal(rg_llm_memory(rg_llm_ctx(t->engine))->used, 0);
    assert_true(rg_llm_memory(rg_llm_ctx(t->engine))->peak
                <= RG_LLM_MAX_RESPONSE);
}


/* a stream of about 2m with response_memory 1m: it holds the most, so it
 * is the one stopped, on every attempt; the budget is never passed */
static void
rg_test_memory_self(void **state)
{
    rg_test_ctx_t  *t = *state;
    size_t          n;
    char           *text, *p;
    rg_session_t   *s;

    n = 2 * 1024 * 1024;
    text = malloc(n + 128);
    assert_non_null(text);

    p = text + sprintf(text, "[{\"message\": {\"content\": \"");
    memset(p, 'z', n);
    p += n;
    strcpy(p, "\"}}]");

    rg_test_script(t, "stream-2m.json", text);
    free(text);

    rg_test_mock(t, "--script", t->path, "--stream-chunk", "65536");
    rg_test_engine(t, t->mock->port, "stream on; max_retries 1;", NULL,
                   "response_memory 1m;");

    s = rg_test_session(t, "a", "big");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_contains(s->reason, "passed response_memory 1m");
    rg_test_contains(s->reason, "after 1 retry");
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 2);
    assert_true(rg_llm_memory(rg_llm_ctx(t->engine))->peak <= 1024 * 1024);
    assert_true(rg_llm_memory(rg_llm_ctx(t->engine))->stopped >= 2);
    assert_int_equal(rg_llm_memory(rg_llm_ctx(t->engine))->used, 0);
}


/* Session b's stream sends its role, then 960k of text at 1 s, the rest
 * at 2 s, its end at 3 s; session a's whole answer of 300k comes from
 * another mock at 2.5 s, while b holds the 960k: the budget (1m) would be
 * passed, b holds the most and is stopped, a is read and done. */
static void
rg_test_memory_other(void **state)
{
    rg_test_ctx_t  *t = *state;
    char           *text, *p, extra[512];
    rg_uint_t       left;
    rg_session_t   *a, *b;
    rg_agent_conf_t *ac, *bc;

    text = malloc(970 * 1024 + 128);
    assert_non_null(text);
    p = text + sprintf(text, "[{\"message\": {\"content\": \"");
    memset(p, 'b', 970 * 1024);
    strcpy(p + 970 * 1024, "\"}}]");
    rg_test_script(t, "stream-970k.json", text);

    t->mock2 = rg_test_mock_start("--script", t->path, "--stream-chunk",
                                  "983040", "--stream-delay", "1000", NULL);
    assert_non_null(t->mock2);

    p = text + sprintf(text, "[{\"message\": {\"content\": \"");
    memset(p, 'a', 300 * 1024);
    strcpy(p + 300 * 1024, "\"}}]");
    rg_test_script(t, "whole-300k.json", text);
    free(text);

    rg_test_mock(t, "--script", t->path, "--latency", "2500");

    snprintf(extra, sizeof(extra),
             "response_memory 1m;\n"
             "llm slow { base_url http://127.0.0.1:%d/v1; model mock-1; "
             "stream on; max_retries 0; }\n"
             "agent b { llm slow; }\n", t->mock2->port);
    rg_test_engine(t, t->mock->port, "max_retries 0;", NULL, extra);

    ac = rg_agent_find(t->cycle, "a", 1);
    bc = rg_agent_find(t->cycle, "b", 1);
    left = 2;

    b = rg_session_create(t->engine, bc, NULL, "stream", 6,
                          rg_test_done_count, &left);
    a = rg_session_create(t->engine, ac, NULL, "whole", 5,
                          rg_test_done_count, &left);
    assert_non_null(a);
    assert_non_null(b);
    rg_session_start(b);
    rg_session_start(a);

    event_base_dispatch(t->engine->base);

    if (a->state != RG_SESSION_DONE) {
        print_error("a: %s\n", a->reason);
    }
    assert_int_equal(a->state, RG_SESSION_DONE);
    assert_int_equal(a->answer.len, 300 * 1024);
    assert_int_equal(b->state, RG_SESSION_FAILED);
    rg_test_contains(b->reason, "passed response_memory 1m; this one held "
                     "the most");
    assert_true(rg_llm_memory(rg_llm_ctx(t->engine))->peak <= 1024 * 1024);
    assert_int_equal(rg_llm_memory(rg_llm_ctx(t->engine))->used, 0);

    rg_session_destroy(a);
    rg_session_destroy(b);
}


/* 7. request headers ---------------------------------------------------- */

/* gzip: off by default for a server on this machine, on for the others */
static void
rg_test_gzip_defaults(void **state)
{
    char          err[512];
    size_t        i;
    rg_cycle_t   *cycle;
    const char   *urls[] = {
        "http://127.0.0.1:1/v1", "0", "http://127.9.9.9/v1", "0",
        "http://localhost:8088/v1", "0", "http://LocalHost/v1", "0",
        "http://a.localhost/v1", "0", "http://[::1]:8088/v1", "0",
        "https://api.openai.com/v1", "1", "http://10.0.0.7:8000/v1", "1",
        "http://128.0.0.1/v1", "1", "http://localhost.example.com/v1", "1",
        "http://[::2]/v1", "1"
    };

    for (i = 0; i < sizeof(urls) / sizeof(urls[0]); i += 2) {
        cycle = rg_test_cycle(err, sizeof(err),
            "llm m {\n    base_url %s;\n    model m;\n}\n"
            "llm on {\n    base_url %s;\n    model m;\n    gzip on;\n}\n"
            "llm off {\n    base_url %s;\n    model m;\n    gzip off;\n}\n"
            "agent a { llm m; }\n", urls[i], urls[i], urls[i]);
        assert_non_null(cycle);

        if (rg_llm_find(cycle, "m", 1)->gzip != (urls[i + 1][0] == '1')) {
            print_error("gzip of %s is not %s\n", urls[i], urls[i + 1]);
            fail();
        }

        assert_int_equal(rg_llm_find(cycle, "on", 2)->gzip, 1);
        assert_int_equal(rg_llm_find(cycle, "off", 3)->gzip, 0);
        rg_cycle_destroy(cycle);
    }
}


/* the headers the mock got: the constant ones of the upstream, the
 * request's id, Accept-Encoding only with gzip on */
static json_t *
rg_test_headers(rg_test_ctx_t *t, const char *gzip)
{
    char          *body;
    json_t        *j;
    rg_session_t  *s;

    rg_test_mock(t, "--rounds", "1");
    rg_test_engine(t, t->mock->port, gzip, "tools calc;", NULL);

    s = rg_test_session(t, "a", "what is 2+2?");
    assert_int_equal(s->state, RG_SESSION_DONE);

    body = rg_test_mock_get(t->mock, "/last_request");
    assert_non_null(body);
    j = json_loads(body, 0, NULL);
    free(body);
    assert_non_null(j);

    return j;
}


static void
rg_test_gzip_loopback(void **state)
{
    rg_test_ctx_t  *t = *state;
    json_t         *j, *h;

    j = rg_test_headers(t, NULL);
    h = json_object_get(j, "headers");

    assert_null(json_object_get(h, "accept-encoding"));
    assert_string_equal(json_string_value(json_object_get(h,
                        "content-type")), "application/json");
    /* no stream asked for: JSON only */
    assert_string_equal(json_string_value(json_object_get(h, "accept")),
                        "application/json");
    assert_non_null(strstr(json_string_value(json_object_get(h,
                    "user-agent")), "reagent/"));
    /* the second call's id: the session's, numbered */
    assert_non_null(strstr(json_string_value(json_object_get(h,
                    "x-request-id")), "-2"));
    json_decref(j);
}


/* stream on: the answer may come as Server-Sent Events */
static void
rg_test_accept_stream(void **state)
{
    rg_test_ctx_t  *t = *state;
    json_t         *j, *h;

    j = rg_test_headers(t, "stream on;");
    h = json_object_get(j, "headers");

    assert_string_equal(json_string_value(json_object_get(h, "accept")),
                        "application/json, text/event-stream");
    json_decref(j);
}


static void
rg_test_gzip_on(void **state)
{
    rg_test_ctx_t  *t = *state;
    json_t         *j, *h;
    const char     *v;

    j = rg_test_headers(t, "gzip on;");
    h = json_object_get(j, "headers");

    v = json_string_value(json_object_get(h, "accept-encoding"));
    assert_non_null(v);
    assert_non_null(strstr(v, "gzip"));
    assert_non_null(json_object_get(h, "x-request-id"));
    json_decref(j);
}


/* 8. buffer_size: curl's allocation ------------------------------------- */

/* libcurl's allocations, counted by size (curl_global_init_mem in main) */
static size_t  rg_test_curl_sizes[2];     /* of 4096 bytes, of 4097 */


static void
rg_test_curl_count(size_t size)
{
    if (size == 4096 || size == 4097) {
        rg_test_curl_sizes[size - 4096]++;
    }
}


static void *
rg_test_curl_malloc(size_t size)
{
    rg_test_curl_count(size);
    return malloc(size);
}


static void *
rg_test_curl_realloc(void *p, size_t size)
{
    rg_test_curl_count(size);
    return realloc(p, size);
}


static void *
rg_test_curl_calloc(size_t n, size_t size)
{
    if (n == 1) {
        rg_test_curl_count(size);
    }
    return calloc(n, size);
}


/* the receive buffer of each transfer is buffer_size bytes in all (a
 * size class of the allocator's), not buffer_size and the byte curl adds
 * to it */
static void
rg_test_buffer_allocation(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_mock(t, "--rounds", "1");
    rg_test_engine(t, t->mock->port, "buffer_size 4k;", "tools calc;", NULL);

    rg_test_curl_sizes[0] = 0;
    rg_test_curl_sizes[1] = 0;

    s = rg_test_session(t, "a", "compute");
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->model_calls, 2);

    if (rg_test_curl_sizes[1] != 0 || rg_test_curl_sizes[0] == 0) {
        print_error("curl allocated %zu buffers of 4096 bytes and %zu of "
                    "4097\n", rg_test_curl_sizes[0], rg_test_curl_sizes[1]);
    }
    assert_int_equal(rg_test_curl_sizes[1], 0);
    assert_true(rg_test_curl_sizes[0] >= 1);
}


/* 9. what a waiting request holds ------------------------------------- */

typedef struct {
    struct event        ev;
    rg_session_t       *s;
    rg_uint_t           left;
    rg_uint_t           seen;         /* the second call was seen waiting */
    size_t              cap;          /* its response buffer then */
    const char         *data;
} rg_test_waiter_t;


static void
rg_test_waiter_done(rg_session_t *s)
{
    event_base_loopbreak(s->engine->base);
}


/* looks at the session while its second model call is awaited */
static void
rg_test_waiter_poll(evutil_socket_t fd, short what, void *arg)
{
    struct timeval     tv;
    rg_test_waiter_t  *w;

    w = arg;

    if (w->s->model_calls == 1 && w->s->req.busy && w->s->req.got == 0) {
        w->seen = 1;
        w->cap = w->s->req.resp.cap;
        w->data = w->s->req.resp.data;
        return;
    }

    tv.tv_sec = 0;
    tv.tv_usec = 5000;
    evtimer_add(&w->ev, &tv);
}


/* the buffer of the last answer is not held while the next one is
 * awaited (with the answer before it, 1 KiB per waiting session): it
 * comes again with the first byte, and the session ends as before */
static void
rg_test_waiting_no_response_buffer(void **state)
{
    rg_test_ctx_t     *t = *state;
    struct timeval     tv;
    rg_agent_conf_t   *a;
    rg_test_waiter_t   w;

    rg_test_mock(t, "--rounds", "1", "--calls", "2", "--latency", "300");
    rg_test_engine(t, t->mock->port, NULL, "tools calc;", NULL);

    a = rg_agent_find(t->cycle, "a", 1);
    assert_non_null(a);

    memset(&w, 0, sizeof(w));
    t->s = rg_session_create(t->engine, a, NULL, "compute", 7,
                             rg_test_waiter_done, &w);
    assert_non_null(t->s);
    w.s = t->s;

    evtimer_assign(&w.ev, t->engine->base, rg_test_waiter_poll, &w);
    tv.tv_sec = 0;
    tv.tv_usec = 5000;
    evtimer_add(&w.ev, &tv);

    assert_int_equal(rg_session_start(t->s), RG_OK);
    event_base_dispatch(t->engine->base);
    event_del(&w.ev);

    assert_int_equal(t->s->state, RG_SESSION_DONE);
    assert_int_equal(t->s->model_calls, 2);
    assert_true(t->s->answer.len > 0);

    assert_true(w.seen);
    if (w.cap != 0) {
        print_error("the second call was awaited with a response buffer of "
                    "%zu bytes\n", w.cap);
    }
    assert_int_equal(w.cap, 0);
    assert_null(w.data);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_retry_after_values),
        cmocka_unit_test_setup_teardown(rg_test_retry_after_huge,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_cancel_queued_many,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_multi_broken,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_multi_broken_reason,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_connection_budget,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_event_changes,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_connect_timeout,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_total_timeout,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_slow_whole_answer,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_idle_stream_gap,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test(rg_test_idle_zero_refused),
        cmocka_unit_test(rg_test_gzip_defaults),
        cmocka_unit_test_setup_teardown(rg_test_gzip_loopback,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_accept_stream,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_gzip_on,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_too_large_not_retried,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_too_large_stream,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_memory_self,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_memory_other,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_buffer_allocation,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_waiting_no_response_buffer,
                                        rg_test_setup, rg_test_teardown),
    };

    /* before the engine's curl_global_init(), which then only counts */
    if (curl_global_init_mem(CURL_GLOBAL_DEFAULT, rg_test_curl_malloc, free,
                             rg_test_curl_realloc, strdup,
                             rg_test_curl_calloc)
        != CURLE_OK)
    {
        return 1;
    }

    return cmocka_run_group_tests(tests, NULL, NULL);
}
