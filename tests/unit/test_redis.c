/* test_redis.c: the asynchronous Redis client (src/store/rg_redis.c)
 * against a real redis-server started on a free loopback port and a unix
 * socket: replies and binary values, pipelining over several connections,
 * error replies, scripts by SHA with NOSCRIPT after a flush, command and
 * connect deadlines with the late reply ignored (on a connection that
 * goes, and on one that stays), a command sent from the callback of one
 * its dying connection failed, a server that is down at
 * start and one restarted in the middle (whose first connection back
 * wakes the others from their backoff), AUTH and SELECT, name resolution
 * with evdns, the bounded queue, the bounded write buffer (a burst waits
 * in order), cancel and shutdown, the reconnect
 * backoff (growth, cap, jitter). Every command must
 * end with exactly one callback. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_redis.h>
#include <rg_test.h>
#include <rg_test_redis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <event2/event.h>
#include <event2/dns.h>
#include <signal.h>


typedef struct {
    struct event_base  *base;
    struct evdns_base  *dns;
    rg_test_redis_t    *srv;
    rg_redis_t         *r;
    rg_log_t            log;
    int                 logfd[2];
    rg_uint_t           left;          /* callbacks still to come */
    rg_str_t           *tag;           /* commands in order: one tag */
} rg_test_ctx_t;


static rg_str_t  rg_test_tag = { 1, (char *) "t" };


/* what one command answered */
typedef struct {
    rg_test_ctx_t      *ctx;
    rg_uint_t           calls;
    int                 type;
    long long           integer;
    char                text[512];
    size_t              len;
    char                err[512];
    rg_msec_t           at;            /* when it was answered */
} rg_test_ans_t;


static void
rg_test_answer(void *data, redisReply *reply, const char *err)
{
    rg_test_ans_t  *a;

    a = data;
    a->calls++;
    a->at = rg_monotonic_msec();

    if (err) {
        assert_null(reply);
        snprintf(a->err, sizeof(a->err), "%s", err);
    } else {
        assert_non_null(reply);
        a->type = reply->type;
        a->integer = reply->integer;
        if (reply->type == REDIS_REPLY_STRING
            || reply->type == REDIS_REPLY_STATUS)
        {
            a->len = rg_min(reply->len, sizeof(a->text));
            memcpy(a->text, reply->str, a->len);
        }
    }

    if (a->ctx && --a->ctx->left == 0) {
        event_base_loopbreak(a->ctx->base);
    }
}


/* runs the loop until every callback came, or for at most ms */
static void
rg_test_wait(rg_test_ctx_t *ctx, rg_msec_t ms)
{
    struct event   *ev;
    struct timeval  tv;

    ev = evtimer_new(ctx->base, rg_test_break, ctx->base);
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    evtimer_add(ev, &tv);

    if (ctx->left) {
        event_base_dispatch(ctx->base);
    }

    event_free(ev);
}


/* runs the loop for ms whatever happens */
static void
rg_test_spin(rg_test_ctx_t *ctx, rg_msec_t ms)
{
    rg_uint_t  left;

    left = ctx->left;
    ctx->left = (rg_uint_t) -1;
    rg_test_wait(ctx, ms);
    ctx->left = left;
}


static rg_redis_cmd_t *
rg_test_cmd(rg_test_ctx_t *ctx, rg_test_ans_t *a, rg_msec_t timeout,
    const char *c0, ...)
{
    int          n;
    size_t       lens[16];
    va_list      args;
    const char  *argv[16], *s;

    memset(a, 0, sizeof(*a));
    a->ctx = ctx;

    n = 0;
    va_start(args, c0);
    for (s = c0; s && n < 16; s = va_arg(args, const char *)) {
        argv[n] = s;
        lens[n] = strlen(s);
        n++;
    }
    va_end(args);

    ctx->left++;

    return rg_redis_command(ctx->r, ctx->tag, timeout, rg_test_answer, a, n, argv,
                            lens);
}


static rg_redis_conf_t
rg_test_conf(rg_test_ctx_t *ctx, int unix_socket)
{
    rg_redis_conf_t  conf;

    memset(&conf, 0, sizeof(conf));

    if (unix_socket) {
        conf.path = ctx->srv->sock;
    } else {
        conf.host = "127.0.0.1";
        conf.port = ctx->srv->port;
    }

    conf.connections = 2;
    conf.connect_timeout = 1000;
    conf.command_timeout = 2000;
    conf.backoff_base = 20;
    conf.backoff_max = 200;

    return conf;
}


static int
rg_test_setup(void **state)
{
    rg_test_ctx_t  *ctx;

    ctx = calloc(1, sizeof(rg_test_ctx_t));
    assert_non_null(ctx);

    ctx->base = event_base_new();
    assert_non_null(ctx->base);

    ctx->srv = rg_test_redis_start(NULL);
    if (ctx->srv == NULL) {
        fail_msg("cannot start redis-server (is it installed? "
                 "deploy/deps.sh installs it)");
    }

    /* the log goes to a pipe the test reads */
    assert_int_equal(pipe2(ctx->logfd, O_NONBLOCK | O_CLOEXEC), 0);
    ctx->log = *rg_log_stderr();
    ctx->log.fd = ctx->logfd[1];
    ctx->log.log_level = RG_LOG_INFO;
    ctx->tag = &rg_test_tag;

    *state = ctx;

    return 0;
}


static int
rg_test_teardown(void **state)
{
    rg_test_ctx_t  *ctx;

    ctx = *state;

    rg_redis_destroy(ctx->r);
    if (ctx->dns) {
        /* a cancelled or failed lookup is freed by its callback, which
         * evdns defers to the loop's next turn: give it that turn */
        event_base_loop(ctx->base, EVLOOP_NONBLOCK);
        evdns_base_free(ctx->dns, 1);
        event_base_loop(ctx->base, EVLOOP_NONBLOCK);
    }
    rg_test_redis_stop(ctx->srv);
    event_base_free(ctx->base);
    close(ctx->logfd[0]);
    close(ctx->logfd[1]);
    free(ctx);

    return 0;
}


static char *
rg_test_log_read(rg_test_ctx_t *ctx)
{
    static char  buf[65536];
    ssize_t      n;

    n = read(ctx->logfd[0], buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = '\0';

    return buf;
}


static rg_uint_t
rg_test_count(const char *hay, const char *needle)
{
    rg_uint_t  n;

    for (n = 0; (hay = strstr(hay, needle)) != NULL; hay++) {
        n++;
    }

    return n;
}


static void
rg_test_roundtrip(void **state, int unix_socket)
{
    size_t            lens[3];
    const char       *argv[3];
    rg_test_ans_t     a, b;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;
    static const char bin[] = "a\0b\r\n\xff";

    ctx = *state;
    conf = rg_test_conf(ctx, unix_socket);
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);
    assert_non_null(ctx->r);

    /* binary safe: a NUL, CRLF and a high byte */
    argv[0] = "SET";
    lens[0] = 3;
    argv[1] = "k";
    lens[1] = 1;
    argv[2] = bin;
    lens[2] = sizeof(bin) - 1;

    memset(&a, 0, sizeof(a));
    a.ctx = ctx;
    ctx->left++;
    assert_non_null(rg_redis_command(ctx->r, ctx->tag, 0, rg_test_answer, &a, 3, argv,
                                     lens));

    /* never inside the call */
    assert_int_equal(a.calls, 0);

    rg_test_cmd(ctx, &b, 0, "GET", "k", NULL);
    rg_test_wait(ctx, 5000);

    assert_int_equal(a.calls, 1);
    assert_string_equal(a.err, "");
    assert_int_equal(a.type, REDIS_REPLY_STATUS);
    assert_int_equal(b.calls, 1);
    assert_int_equal(b.type, REDIS_REPLY_STRING);
    assert_int_equal(b.len, sizeof(bin) - 1);
    assert_memory_equal(b.text, bin, sizeof(bin) - 1);
    assert_true(rg_redis_connected(ctx->r));
}


static void
test_roundtrip_tcp(void **state)
{
    rg_test_roundtrip(state, 0);
}


static void
test_roundtrip_unix(void **state)
{
    rg_test_roundtrip(state, 1);
    assert_non_null(strstr(rg_redis_address(((rg_test_ctx_t *) *state)->r),
                           "unix:"));
}


/* 20,000 commands over 4 connections, all pipelined: every one answered
 * once, and INCR saw every one */
static void
test_pipeline(void **state)
{
    rg_uint_t         i, n, bad;
    char             *v;
    rg_test_ans_t    *as;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    conf = rg_test_conf(ctx, 0);
    conf.connections = 4;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    n = 20000;
    ctx->tag = NULL;                   /* any connection */
    as = calloc(n, sizeof(rg_test_ans_t));
    assert_non_null(as);

    for (i = 0; i < n; i++) {
        rg_test_cmd(ctx, &as[i], 10000, "INCR", "counter", NULL);
    }

    rg_test_wait(ctx, 30000);

    bad = 0;
    for (i = 0; i < n; i++) {
        bad += as[i].calls != 1 || as[i].err[0] != '\0';
    }

    assert_int_equal(bad, 0);
    assert_int_equal(ctx->left, 0);

    v = rg_test_redis_cmd(ctx->srv, "GET counter");
    assert_string_equal(v, "20000");
    free(v);

    assert_true(rg_redis_stats(ctx->r)->commands >= n);
    assert_int_equal(rg_redis_stats(ctx->r)->inflight, 0);

    free(as);
}


/* commands of one tag keep their order over 4 connections; scripts named
 * in the configuration are loaded at connect, so EVALSHA never misses */
static rg_redis_script_t  rg_test_script;

static rg_redis_script_t  *rg_test_scripts[] = { &rg_test_script, NULL };

static rg_redis_cmd_t *rg_test_eval(rg_test_ctx_t *ctx, rg_test_ans_t *a,
    const char *key, const char *arg);


static void
test_order(void **state)
{
    char              num[16];
    rg_uint_t         i;
    rg_test_ans_t    *as, a;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    conf = rg_test_conf(ctx, 0);
    conf.connections = 4;
    conf.scripts = rg_test_scripts;
    assert_int_equal(rg_redis_script_init(&rg_test_script), RG_OK);
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    as = calloc(1000, sizeof(rg_test_ans_t));
    assert_non_null(as);

    for (i = 0; i < 1000; i++) {
        snprintf(num, sizeof(num), "%lu", (unsigned long) i);
        rg_test_cmd(ctx, &as[i], 10000, "SET", "ordered", num, NULL);
    }

    rg_test_cmd(ctx, &a, 10000, "GET", "ordered", NULL);
    rg_test_wait(ctx, 20000);

    assert_int_equal(a.len, 3);
    assert_memory_equal(a.text, "999", 3);

    rg_test_eval(ctx, &a, "n", "1");
    rg_test_wait(ctx, 5000);
    assert_int_equal(a.integer, 1);
    assert_int_equal(rg_redis_stats(ctx->r)->noscript, 0);

    free(as);
}


/* an error reply is an error for that command only */
static void
test_error_reply(void **state)
{
    rg_test_ans_t     a, b, c;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    conf = rg_test_conf(ctx, 1);
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    rg_test_cmd(ctx, &a, 0, "LPUSH", "list", "x", NULL);
    rg_test_cmd(ctx, &b, 0, "GET", "list", NULL);
    rg_test_cmd(ctx, &c, 0, "NOSUCHCOMMAND", NULL);
    rg_test_wait(ctx, 5000);

    assert_string_equal(a.err, "");
    assert_int_equal(a.integer, 1);
    assert_int_equal(b.calls, 1);
    assert_non_null(strstr(b.err, "WRONGTYPE"));
    assert_int_equal(c.calls, 1);
    assert_non_null(strstr(c.err, "unknown command"));

    /* the connection is still good */
    rg_test_cmd(ctx, &a, 0, "PING", NULL);
    rg_test_wait(ctx, 5000);
    assert_string_equal(a.err, "");
    assert_int_equal(rg_redis_stats(ctx->r)->errors, 2);
}


static rg_redis_script_t  rg_test_script = {
    "test", "return redis.call('INCRBY', KEYS[1], ARGV[1])", ""
};


static rg_redis_cmd_t *
rg_test_eval(rg_test_ctx_t *ctx, rg_test_ans_t *a, const char *key,
    const char *arg)
{
    size_t       lens[2];
    const char  *argv[2];

    memset(a, 0, sizeof(*a));
    a->ctx = ctx;
    argv[0] = key;
    lens[0] = strlen(key);
    argv[1] = arg;
    lens[1] = strlen(arg);
    ctx->left++;

    return rg_redis_eval(ctx->r, ctx->tag, &rg_test_script, rg_test_answer, a, 1, 2,
                         argv, lens);
}


/* EVALSHA; the server does not know it: EVAL once; after SCRIPT FLUSH
 * (a restarted server) again */
static void
test_script(void **state)
{
    char             *v;
    rg_test_ans_t     a, b;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    conf = rg_test_conf(ctx, 0);
    conf.connections = 1;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    assert_int_equal(rg_redis_script_init(&rg_test_script), RG_OK);
    assert_int_equal(strlen(rg_test_script.sha), 40);

    rg_test_eval(ctx, &a, "n", "5");
    rg_test_wait(ctx, 5000);
    assert_string_equal(a.err, "");
    assert_int_equal(a.integer, 5);
    assert_int_equal(rg_redis_stats(ctx->r)->noscript, 1);

    /* now cached: EVALSHA alone */
    rg_test_eval(ctx, &a, "n", "2");
    rg_test_wait(ctx, 5000);
    assert_int_equal(a.integer, 7);
    assert_int_equal(rg_redis_stats(ctx->r)->noscript, 1);

    v = rg_test_redis_cmd(ctx->srv, "SCRIPT FLUSH");
    free(v);

    rg_test_eval(ctx, &a, "n", "1");
    rg_test_eval(ctx, &b, "n", "1");
    rg_test_wait(ctx, 5000);
    assert_int_equal(a.integer, 8);
    assert_int_equal(b.integer, 9);
    assert_int_equal(rg_redis_stats(ctx->r)->noscript, 3);

    /* a script's own error is the command's error */
    rg_test_eval(ctx, &a, "n", "not a number");
    rg_test_wait(ctx, 5000);
    assert_int_equal(a.calls, 1);
    assert_non_null(strstr(a.err, "not an integer"));
}


static rg_redis_script_t  rg_test_join_script = {
    "join", "return table.concat(ARGV, ',') .. '|' .. KEYS[1]", ""
};


/* a script of more arguments than the stack holds, some empty or binary,
 * on a server that does not know it (and again after SCRIPT FLUSH): the
 * EVAL sent instead carries every argument as EVALSHA did */
static void
test_script_many_args(void **state)
{
    int               i;
    char             *v, nums[120][8], want[1024], *p;
    size_t            lens[121];
    const char       *argv[121];
    rg_test_ans_t     a;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    conf = rg_test_conf(ctx, 1);
    conf.connections = 1;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);
    assert_int_equal(rg_redis_script_init(&rg_test_join_script), RG_OK);

    argv[0] = "k{t}";
    lens[0] = 4;
    p = want;
    for (i = 0; i < 120; i++) {
        lens[i + 1] = i == 7 ? 0 : (size_t) snprintf(nums[i], 8, "%d", i);
        argv[i + 1] = nums[i];
        p += sprintf(p, "%s%.*s", i ? "," : "", (int) lens[i + 1], nums[i]);
    }
    argv[100] = "a\r\nb";
    lens[100] = 4;
    sprintf(p, "|k{t}");
    p = strstr(want, ",98,") + 4;
    memmove(p + 4, p + 2, strlen(p + 2) + 1);
    memcpy(p, "a\r\nb", 4);

    for (i = 0; i < 3; i++) {
        if (i == 2) {
            v = rg_test_redis_cmd(ctx->srv, "SCRIPT FLUSH");
            free(v);
        }

        memset(&a, 0, sizeof(a));
        a.ctx = ctx;
        ctx->left++;
        assert_non_null(rg_redis_eval(ctx->r, ctx->tag, &rg_test_join_script,
                                      rg_test_answer, &a, 1, 121, argv,
                                      lens));
        rg_test_wait(ctx, 5000);

        assert_int_equal(a.calls, 1);
        assert_string_equal(a.err, "");
        assert_int_equal(a.type, REDIS_REPLY_STRING);
        assert_int_equal(a.len, strlen(want));
        assert_memory_equal(a.text, want, a.len);
    }

    /* EVAL once at first, once after the flush */
    assert_int_equal(rg_redis_stats(ctx->r)->noscript, 2);
}


/* a command past its deadline fails then; its late reply is ignored;
 * the stuck connection is replaced and later commands work */
static void
test_command_timeout(void **state)
{
    rg_msec_t         t0, ms;
    rg_test_ans_t     a, b, c;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    conf = rg_test_conf(ctx, 0);
    conf.connections = 1;
    conf.command_timeout = 200;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    rg_test_cmd(ctx, &a, 0, "PING", NULL);
    rg_test_wait(ctx, 5000);
    assert_string_equal(a.err, "");

    t0 = rg_monotonic_msec();
    rg_test_cmd(ctx, &a, 0, "DEBUG", "SLEEP", "1", NULL);
    rg_test_cmd(ctx, &b, 5000, "SET", "after", "1", NULL);
    rg_test_wait(ctx, 5000);
    ms = rg_monotonic_msec() - t0;

    assert_int_equal(a.calls, 1);
    assert_non_null(strstr(a.err, "timed out after 200ms"));
    /* the one behind it on the stuck connection: its outcome is unknown */
    assert_int_equal(b.calls, 1);
    assert_non_null(strstr(b.err, "outcome unknown"));
    assert_true(ms < 900);

    /* the server wakes up and the late replies go nowhere */
    rg_test_spin(ctx, 1200);
    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 1);

    rg_test_cmd(ctx, &c, 0, "PING", NULL);
    rg_test_wait(ctx, 5000);
    assert_int_equal(c.calls, 1);
    assert_string_equal(c.err, "");
    assert_true(rg_redis_stats(ctx->r)->connects >= 2);
}


/* a command timed out on a connection that goes on answering (a reply
 * came after it was sent): the connection stays; the command's late
 * reply goes nowhere and takes no other command's place */
static void
test_late_reply_kept(void **state)
{
    rg_test_ans_t     a, b, c;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    conf = rg_test_conf(ctx, 0);
    conf.connections = 1;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    rg_test_cmd(ctx, &a, 0, "PING", NULL);
    rg_test_wait(ctx, 5000);
    assert_string_equal(a.err, "");
    assert_int_equal(rg_redis_stats(ctx->r)->connects, 1);

    /* blocking commands hold this connection only, in turn (the server
     * answers pipelined DEBUG SLEEPs together): a answers at 100 ms,
     * b at 400 ms, past its deadline of 250 ms */
    rg_test_cmd(ctx, &a, 5000, "BLPOP", "rg_test_a", "0.1", NULL);
    rg_test_cmd(ctx, &b, 250, "BLPOP", "rg_test_b", "0.3", NULL);
    rg_test_wait(ctx, 5000);

    assert_int_equal(a.calls, 1);
    assert_string_equal(a.err, "");
    assert_int_equal(a.type, REDIS_REPLY_NIL);
    assert_int_equal(b.calls, 1);
    assert_non_null(strstr(b.err, "timed out after 250ms"));

    /* c goes out behind b's late reply, on the same connection */
    rg_test_cmd(ctx, &c, 5000, "ECHO", "c", NULL);
    rg_test_wait(ctx, 5000);
    rg_test_spin(ctx, 200);

    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 1);
    assert_int_equal(c.calls, 1);
    assert_string_equal(c.err, "");
    assert_int_equal(c.type, REDIS_REPLY_STRING);
    assert_int_equal(c.len, 1);
    assert_memory_equal(c.text, "c", 1);
    assert_true(rg_redis_connected(ctx->r));
    assert_int_equal(rg_redis_stats(ctx->r)->connects, 1);
    assert_int_equal(rg_redis_stats(ctx->r)->timeouts, 1);
}


/* the callback of a command its lost connection failed sends another:
 * hiredis refuses it on the context it is closing; it is not answered
 * inside the call that sent it, and goes out on the next connection */
typedef struct {
    rg_test_ans_t       own;
    rg_test_ans_t      *next;
    rg_uint_t           at_once;      /* next's answers inside the call */
} rg_test_chain_t;


static void
rg_test_chain_answer(void *data, redisReply *reply, const char *err)
{
    rg_test_chain_t  *ch;

    ch = data;
    rg_test_answer(&ch->own, reply, err);

    rg_test_cmd(ch->own.ctx, ch->next, 0, "SET", "chained", "1", NULL);
    ch->at_once = ch->next->calls;
}


static void
test_send_while_closing(void **state)
{
    size_t            lens[3];
    const char       *argv[3];
    char             *v;
    rg_test_ans_t     a, x;
    rg_test_ctx_t    *ctx;
    rg_test_chain_t   ch;
    rg_redis_conf_t   conf;

    ctx = *state;
    conf = rg_test_conf(ctx, 0);
    conf.connections = 1;
    conf.command_timeout = 10000;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    rg_test_cmd(ctx, &a, 0, "PING", NULL);
    rg_test_wait(ctx, 5000);
    assert_string_equal(a.err, "");

    memset(&ch, 0, sizeof(ch));
    ch.own.ctx = ctx;
    ch.next = &x;
    argv[0] = "DEBUG";
    argv[1] = "SLEEP";
    argv[2] = "1";
    lens[0] = 5;
    lens[1] = 5;
    lens[2] = 1;
    ctx->left++;
    assert_non_null(rg_redis_command(ctx->r, ctx->tag, 0,
                                     rg_test_chain_answer, &ch, 3, argv,
                                     lens));

    rg_test_spin(ctx, 100);
    rg_test_redis_kill(ctx->srv, 1);
    rg_test_spin(ctx, 200);

    assert_int_equal(ch.own.calls, 1);
    assert_non_null(strstr(ch.own.err, "outcome unknown"));
    assert_int_equal(ch.at_once, 0);

    assert_int_equal(rg_test_redis_restart(ctx->srv), 0);
    rg_test_wait(ctx, 8000);

    assert_int_equal(x.calls, 1);
    assert_string_equal(x.err, "");
    v = rg_test_redis_cmd(ctx->srv, "GET chained");
    assert_string_equal(v, "1");
    free(v);
}


/* a listener that never answers: the handshake times out on our timer */
static void
test_connect_timeout(void **state)
{
    int                 fd;
    rg_test_ans_t       a;
    rg_test_ctx_t      *ctx;
    rg_redis_conf_t     conf;
    struct sockaddr_in  sin;
    socklen_t           len;

    ctx = *state;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *) &sin, sizeof(sin)), 0);
    assert_int_equal(listen(fd, 16), 0);
    len = sizeof(sin);
    getsockname(fd, (struct sockaddr *) &sin, &len);

    memset(&conf, 0, sizeof(conf));
    conf.host = "127.0.0.1";
    conf.port = ntohs(sin.sin_port);
    conf.connections = 1;
    conf.connect_timeout = 150;
    conf.command_timeout = 600;
    conf.backoff_base = 20;
    conf.backoff_max = 50;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    rg_test_cmd(ctx, &a, 0, "PING", NULL);
    rg_test_wait(ctx, 5000);

    assert_int_equal(a.calls, 1);
    assert_non_null(strstr(a.err, "waiting for a connection"));
    assert_non_null(strstr(a.err, "connect timed out after 150ms"));
    assert_false(rg_redis_connected(ctx->r));

    /* one warning for the whole outage, with the address */
    rg_test_spin(ctx, 300);
    assert_int_equal(rg_test_count(rg_test_log_read(ctx), "not reachable"),
                     1);

    close(fd);
}


/* down at start: commands wait in the queue and go out once it is up */
static void
test_down_at_start(void **state)
{
    int               port;
    char             *log, *v;
    rg_test_ans_t     a, b;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    port = ctx->srv->port;
    rg_test_redis_kill(ctx->srv, 1);

    conf = rg_test_conf(ctx, 0);
    conf.port = port;
    conf.command_timeout = 5000;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    rg_test_cmd(ctx, &a, 0, "SET", "early", "1", NULL);
    rg_test_cmd(ctx, &b, 200, "GET", "early", NULL);
    rg_test_wait(ctx, 400);       /* b times out in the queue */

    assert_int_equal(a.calls, 0);
    assert_int_equal(b.calls, 1);
    assert_non_null(strstr(b.err, "waiting for a connection to 127.0.0.1:"));
    assert_non_null(strstr(b.err, "refused"));

    assert_int_equal(rg_test_redis_restart(ctx->srv), 0);
    rg_test_wait(ctx, 5000);

    assert_int_equal(a.calls, 1);
    assert_string_equal(a.err, "");
    v = rg_test_redis_cmd(ctx->srv, "GET early");
    assert_string_equal(v, "1");
    free(v);

    log = rg_test_log_read(ctx);
    assert_int_equal(rg_test_count(log, "not reachable"), 1);
    assert_int_equal(rg_test_count(log, "reachable after"), 1);
}


/* a restart in the middle: in-flight commands say their outcome is
 * unknown, new ones wait, everything ends, one warning per outage */
static void
test_restart(void **state)
{
    rg_uint_t         i, ok, lost, other;
    char             *log;
    rg_test_ans_t    *as, a;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    conf = rg_test_conf(ctx, 0);
    conf.command_timeout = 10000;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    rg_test_cmd(ctx, &a, 0, "PING", NULL);
    rg_test_wait(ctx, 5000);
    assert_string_equal(a.err, "");

    rg_test_redis_kill(ctx->srv, 1);
    rg_test_spin(ctx, 100);
    assert_false(rg_redis_connected(ctx->r));

    as = calloc(100, sizeof(rg_test_ans_t));
    for (i = 0; i < 100; i++) {
        rg_test_cmd(ctx, &as[i], 0, "INCR", "c", NULL);
    }

    rg_test_spin(ctx, 300);
    assert_int_equal(rg_redis_stats(ctx->r)->queued, 100);

    assert_int_equal(rg_test_redis_restart(ctx->srv), 0);
    rg_test_wait(ctx, 8000);

    ok = lost = other = 0;
    for (i = 0; i < 100; i++) {
        assert_int_equal(as[i].calls, 1);
        if (as[i].err[0] == '\0') {
            ok++;
        } else if (strstr(as[i].err, "outcome unknown")) {
            lost++;
        } else {
            other++;
        }
    }

    assert_int_equal(ok, 100);
    assert_int_equal(lost + other, 0);
    log = rg_test_log_read(ctx);
    assert_int_equal(rg_test_count(log, "lost"), 1);
    assert_int_equal(rg_test_count(log, "reachable again"), 1);
    free(as);
}


/* after a restart, the first connection that is up wakes the others
 * of its node from their backoff: a command bound to one of them (a
 * session's go to one connection) is not held for up to backoff_max
 * while the server answers */
static void
test_restart_wakes_all(void **state)
{
    char              tag[16][4];
    rg_str_t          tags[16];
    rg_uint_t         i;
    rg_msec_t         first, last;
    rg_test_ans_t     as[16], a;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    conf = rg_test_conf(ctx, 0);
    conf.connections = 4;
    conf.command_timeout = 15000;
    conf.backoff_base = 100;
    conf.backoff_max = 6000;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    rg_test_cmd(ctx, &a, 0, "PING", NULL);
    rg_test_wait(ctx, 5000);
    assert_string_equal(a.err, "");

    /* the connections fail for 4 s: their next attempts are 1.6 to 6 s
     * away, each at its own time (jitter) */
    rg_test_redis_kill(ctx->srv, 1);
    rg_test_spin(ctx, 4000);
    assert_false(rg_redis_connected(ctx->r));

    for (i = 0; i < 16; i++) {
        snprintf(tag[i], sizeof(tag[i]), "t%u", (unsigned) i);
        tags[i].data = tag[i];
        tags[i].len = strlen(tag[i]);
        ctx->tag = &tags[i];
        rg_test_cmd(ctx, &as[i], 0, "INCR", "c", NULL);
    }
    ctx->tag = &rg_test_tag;

    assert_int_equal(rg_test_redis_restart(ctx->srv), 0);
    rg_test_wait(ctx, 12000);

    first = last = 0;
    for (i = 0; i < 16; i++) {
        assert_int_equal(as[i].calls, 1);
        assert_string_equal(as[i].err, "");
        first = first ? rg_min(first, as[i].at) : as[i].at;
        last = rg_max(last, as[i].at);
    }

    print_message("the 16 answered within %llu ms of the first\n",
                  (unsigned long long) (last - first));
    assert_true(last - first <= 500);
}


static void
test_auth_and_select(void **state)
{
    char             *v, *log;
    rg_test_ans_t     a;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    rg_test_redis_stop(ctx->srv);
    ctx->srv = rg_test_redis_start("--requirepass s3cret-pw");
    assert_non_null(ctx->srv);

    conf = rg_test_conf(ctx, 0);
    conf.password = "s3cret-pw";
    conf.database = 3;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    rg_test_cmd(ctx, &a, 0, "SET", "in3", "yes", NULL);
    rg_test_wait(ctx, 5000);
    assert_string_equal(a.err, "");

    v = rg_test_redis_cmd(ctx->srv, "GET in3");
    assert_non_null(strstr(v, "NOAUTH"));
    free(v);

    rg_redis_destroy(ctx->r);

    /* a wrong password: an error that does not quote any password */
    conf.password = "wrong-pw";
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);
    rg_test_cmd(ctx, &a, 300, "GET", "in3", NULL);
    rg_test_wait(ctx, 5000);
    assert_int_equal(a.calls, 1);
    assert_non_null(strstr(a.err, "WRONGPASS"));
    assert_null(strstr(a.err, "wrong-pw"));

    log = rg_test_log_read(ctx);
    assert_non_null(strstr(log, "WRONGPASS"));
    assert_null(strstr(log, "wrong-pw"));
    assert_null(strstr(log, "s3cret"));
}


/* the key went to database 3, not 0 */
static void
test_select(void **state)
{
    char             *v;
    rg_test_ans_t     a;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    conf = rg_test_conf(ctx, 1);
    conf.database = 3;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    rg_test_cmd(ctx, &a, 0, "SET", "where", "three", NULL);
    rg_test_wait(ctx, 5000);
    assert_string_equal(a.err, "");

    v = rg_test_redis_cmd(ctx->srv, "GET where");
    assert_string_equal(v, "(nil)");
    free(v);

    v = rg_test_redis_cmd(ctx->srv, "EVAL %s 0",
        "redis.call('SELECT', 3); return redis.call('GET', 'where')");
    assert_string_equal(v, "three");
    free(v);
}


/* a name, resolved by evdns (never by a blocking getaddrinfo) */
static void
test_resolve(void **state)
{
    rg_test_ans_t     a;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    ctx->dns = evdns_base_new(ctx->base, EVDNS_BASE_INITIALIZE_NAMESERVERS
                              | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    assert_non_null(ctx->dns);

    conf = rg_test_conf(ctx, 0);
    conf.host = "localhost";
    ctx->r = rg_redis_create(ctx->base, ctx->dns, &conf, &ctx->log);

    rg_test_cmd(ctx, &a, 0, "PING", NULL);
    rg_test_wait(ctx, 5000);
    assert_int_equal(a.calls, 1);

    /* localhost may be ::1 first, where this server does not listen */
    if (a.err[0]) {
        assert_non_null(strstr(a.err, "refused"));
    } else {
        assert_int_equal(a.type, REDIS_REPLY_STATUS);
    }

    rg_redis_destroy(ctx->r);

    conf.host = "no-such-host.invalid";
    ctx->r = rg_redis_create(ctx->base, ctx->dns, &conf, &ctx->log);
    rg_test_cmd(ctx, &a, 500, "PING", NULL);
    rg_test_wait(ctx, 5000);
    assert_int_equal(a.calls, 1);
    assert_non_null(strstr(a.err, "no-such-host.invalid"));
}


static void
test_queue_bound(void **state)
{
    rg_uint_t         i;
    rg_test_ans_t     as[11];
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    rg_test_redis_kill(ctx->srv, 1);

    conf = rg_test_conf(ctx, 0);
    conf.max_queue = 10;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    for (i = 0; i < 11; i++) {
        rg_test_cmd(ctx, &as[i], 300, "PING", NULL);
    }

    /* the eleventh is refused, but still not inside the call */
    assert_int_equal(as[10].calls, 0);
    rg_test_wait(ctx, 5000);

    for (i = 0; i < 10; i++) {
        assert_int_equal(as[i].calls, 1);
        assert_non_null(strstr(as[i].err, "timed out"));
    }

    assert_int_equal(as[10].calls, 1);
    assert_non_null(strstr(as[10].err, "queue is full"));
}


/* a burst larger than hiredis's write buffer should hold: past 256 KB
 * unwritten, commands wait in the connection's queue, in order, and go
 * out as replies come; max_queue (for an outage) does not refuse them */
static void
test_buffer_bound(void **state)
{
    char              head[16], *big;
    size_t            size;
    rg_uint_t         i, n;
    rg_test_ans_t    *as, a;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    conf = rg_test_conf(ctx, 0);
    conf.connections = 1;
    conf.max_queue = 10;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    rg_test_cmd(ctx, &a, 5000, "PING", NULL);
    rg_test_wait(ctx, 5000);
    assert_int_equal(a.calls, 1);
    assert_string_equal(a.err, "");

    n = 64;
    size = 64 * 1024;
    big = malloc(size + 1);
    as = calloc(n, sizeof(rg_test_ans_t));
    assert_non_null(big);
    assert_non_null(as);

    for (i = 0; i < n; i++) {
        snprintf(head, sizeof(head), "%06lu", (unsigned long) i);
        memset(big, 'x', size);
        memcpy(big, head, 6);
        big[size] = '\0';
        rg_test_cmd(ctx, &as[i], 10000, "SET", "big", big, NULL);
    }

    /* 4 MB issued in one turn of the loop: hiredis holds a few, the
     * rest wait, none refused */
    assert_in_range(rg_redis_stats(ctx->r)->inflight, 1, 6);
    assert_int_equal(rg_redis_stats(ctx->r)->queued,
                     n - rg_redis_stats(ctx->r)->inflight);
    assert_true(rg_redis_stats(ctx->r)->queued > conf.max_queue);

    rg_test_cmd(ctx, &a, 10000, "GETRANGE", "big", "0", "5", NULL);
    rg_test_wait(ctx, 20000);

    for (i = 0; i < n; i++) {
        assert_int_equal(as[i].calls, 1);
        assert_string_equal(as[i].err, "");
    }

    /* in order: the last SET is the one Redis holds */
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.len, 6);
    assert_memory_equal(a.text, "000063", 6);
    assert_int_equal(rg_redis_stats(ctx->r)->queued, 0);
    assert_int_equal(rg_redis_stats(ctx->r)->inflight, 0);

    free(as);
    free(big);
}


/* cancel: no callback, queued or sent; destroy: every pending command
 * answered once */
static void
test_cancel_and_destroy(void **state)
{
    rg_test_ans_t     a, b, c, d;
    rg_redis_cmd_t   *ca, *cb;
    rg_test_ctx_t    *ctx;
    rg_redis_conf_t   conf;

    ctx = *state;
    conf = rg_test_conf(ctx, 1);
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    /* queued (not connected yet) and cancelled */
    ca = rg_test_cmd(ctx, &a, 0, "PING", NULL);
    rg_redis_cancel(ca);
    ctx->left--;

    rg_test_cmd(ctx, &b, 0, "PING", NULL);
    rg_test_wait(ctx, 5000);
    assert_int_equal(b.calls, 1);

    /* sent and cancelled before the reply */
    cb = rg_test_cmd(ctx, &c, 0, "PING", NULL);
    rg_redis_cancel(cb);
    ctx->left--;
    rg_test_spin(ctx, 200);
    assert_int_equal(a.calls, 0);
    assert_int_equal(c.calls, 0);

    rg_test_cmd(ctx, &a, 0, "DEBUG", "SLEEP", "0.3", NULL);
    rg_test_cmd(ctx, &d, 0, "PING", NULL);
    rg_redis_destroy(ctx->r);
    ctx->r = NULL;

    assert_int_equal(a.calls, 1);
    assert_int_equal(d.calls, 1);
    assert_string_equal(d.err, "the store is shutting down");
}


/* reconnect attempts to a port that accepts and closes at once (each
 * attempt is an accept the test records): the gaps grow from
 * backoff_base, each at least half its step, stop growing at
 * backoff_max, and are jittered below it */
typedef struct {
    int        fd;
    rg_uint_t  n;
    rg_msec_t  at[64];
} rg_test_accepts_t;


static rg_msec_t
rg_test_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (rg_msec_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


static void
rg_test_accept(evutil_socket_t fd, short what, void *arg)
{
    int                 s;
    rg_test_accepts_t  *ac;

    ac = arg;

    while ((s = accept(fd, NULL, NULL)) >= 0) {
        if (ac->n < 64) {
            ac->at[ac->n++] = rg_test_now();
        }
        close(s);
    }
}


static void
test_backoff(void **state)
{
    rg_uint_t           i, below;
    rg_msec_t           gap, step;
    rg_test_ans_t       a;
    rg_test_ctx_t      *ctx;
    struct event       *ev;
    rg_redis_conf_t     conf;
    struct sockaddr_in  sin;
    socklen_t           len;
    rg_test_accepts_t   ac;

    ctx = *state;
    memset(&ac, 0, sizeof(ac));

    ac.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(ac.fd, (struct sockaddr *) &sin, sizeof(sin)), 0);
    assert_int_equal(listen(ac.fd, 16), 0);
    len = sizeof(sin);
    getsockname(ac.fd, (struct sockaddr *) &sin, &len);

    ev = event_new(ctx->base, ac.fd, EV_READ | EV_PERSIST, rg_test_accept,
                   &ac);
    event_add(ev, NULL);

    memset(&conf, 0, sizeof(conf));
    conf.host = "127.0.0.1";
    conf.port = ntohs(sin.sin_port);
    conf.connections = 1;
    conf.connect_timeout = 1000;
    conf.command_timeout = 500;
    conf.backoff_base = 40;
    conf.backoff_max = 320;
    ctx->r = rg_redis_create(ctx->base, NULL, &conf, &ctx->log);

    rg_test_cmd(ctx, &a, 0, "PING", NULL);
    rg_test_wait(ctx, 5000);
    assert_int_equal(a.calls, 1);
    rg_test_spin(ctx, 3000);

    event_free(ev);
    close(ac.fd);

    /* growth: the gap after failure k is at least half of
     * min(base * 2^(k-1), max); 1 ms for the clock's rounding */
    assert_true(ac.n >= 6);
    below = 0;
    for (i = 1; i < ac.n; i++) {
        gap = ac.at[i] - ac.at[i - 1];
        step = rg_min((rg_msec_t) 40 << rg_min(i - 1, 8), 320);
        print_message("attempt %u: %llu ms after the one before (step %llu)"
                      "\n", (unsigned) i, (unsigned long long) gap,
                      (unsigned long long) step);
        assert_true(gap + 1 >= step / 2);
        if (step == 320 && gap < 288) {
            below++;
        }
    }

    /* the cap: uncapped, the gaps 40..2560 would fit at most 8 attempts
     * in the first 3.5 s; capped at 320 ms there are about 14 */
    assert_true(ac.n >= 10);

    /* jitter: not every capped gap is the full step */
    assert_true(below > 0);
}


static void
test_parse_server(void **state)
{
    rg_redis_conf_t  conf;

    memset(&conf, 0, sizeof(conf));
    assert_null(rg_redis_parse_server("10.0.0.1:7000", 13, &conf));
    assert_string_equal(conf.host, "10.0.0.1");
    assert_int_equal(conf.port, 7000);
    rg_redis_conf_free(&conf);

    assert_null(rg_redis_parse_server("redis.local", 11, &conf));
    assert_string_equal(conf.host, "redis.local");
    assert_int_equal(conf.port, 6379);
    rg_redis_conf_free(&conf);

    assert_null(rg_redis_parse_server("[::1]:6380", 10, &conf));
    assert_string_equal(conf.host, "::1");
    assert_int_equal(conf.port, 6380);
    rg_redis_conf_free(&conf);

    assert_null(rg_redis_parse_server("unix:/run/r.sock", 16, &conf));
    assert_string_equal(conf.path, "/run/r.sock");
    assert_null(conf.host);
    rg_redis_conf_free(&conf);

    assert_non_null(rg_redis_parse_server("h:0", 3, &conf));
    assert_non_null(rg_redis_parse_server("h:99999", 7, &conf));
    assert_non_null(rg_redis_parse_server("h:x", 3, &conf));
    assert_non_null(rg_redis_parse_server(":1", 2, &conf));
    assert_non_null(rg_redis_parse_server("[::1", 4, &conf));
    rg_redis_conf_free(&conf);

    (void) state;
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_server),
        cmocka_unit_test_setup_teardown(test_roundtrip_tcp, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_roundtrip_unix, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_pipeline, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_order, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_buffer_bound, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_error_reply, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_script, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_script_many_args,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_command_timeout, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_late_reply_kept, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_send_while_closing,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_connect_timeout, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_down_at_start, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_restart, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_restart_wakes_all,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_auth_and_select, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_select, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_resolve, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_queue_bound, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_and_destroy,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_backoff, rg_test_setup,
                                        rg_test_teardown),
    };

    signal(SIGPIPE, SIG_IGN);
    srandom(getpid());

    return cmocka_run_group_tests(tests, NULL, NULL);
}
