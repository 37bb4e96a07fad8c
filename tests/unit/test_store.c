/* test_store.c: the store interface (src/store/rg_store.h), the same
 * cases against both backends: the memory store and the Redis one on a
 * real redis-server started on a free loopback port. Answers never come
 * inside the call; values are binary safe; NX sets and claims return the
 * value that won; expiry; counters; checkpoints that append exactly once
 * (a retry is recognised, another base is "diverged"), of 1,000 records
 * too; loading a session; leases with fencing tokens that refuse a stale
 * writer; a final checkpoint that lets the lease go in the same step; shared token buckets, all or nothing, with a cool-down; a
 * session's events (ids that grow, a range after an id, the newest max
 * kept, expiry, fencing); cancel and shutdown.
 * Redis only: every key written has a TTL, and the prefix is applied. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>
#include <rg_store_redis.h>
#include <rg_test.h>
#include <rg_test_redis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <event2/event.h>


typedef struct {
    struct event_base  *base;
    rg_store_t         *st;
    rg_test_redis_t    *srv;
    rg_uint_t           redis;
    rg_uint_t           left;
} rg_test_ctx_t;


typedef struct {
    rg_test_ctx_t      *t;
    rg_uint_t           calls;
    rg_int_t            rc;
    char                err[256];
    char                value[1024];
    size_t              len;
    int64_t             num;
    rg_uint_t           nitems;
    rg_uint_t           nfields;
    char                items[16][128];
    char                last[128];    /* the last item */
    char                fields[32][64];
    rg_uint_t           nentries;
    char                ids[16][48];
    char                types[16][32];
    char                datas[16][64];
} rg_test_ans_t;


static void
rg_test_answer(void *data, const rg_store_res_t *res)
{
    rg_uint_t       i;
    rg_test_ans_t  *a;

    a = data;
    a->calls++;
    a->rc = res->rc;
    a->num = res->num;
    snprintf(a->err, sizeof(a->err), "%s", res->err ? res->err : "");
    a->len = rg_min(res->value.len, sizeof(a->value));
    if (res->value.data) {
        memcpy(a->value, res->value.data, a->len);
    }

    a->nitems = res->nitems;
    for (i = 0; i < res->nitems && i < 16; i++) {
        snprintf(a->items[i], sizeof(a->items[i]), "%.*s",
                 (int) res->items[i].len, res->items[i].data);
    }

    if (res->nitems) {
        snprintf(a->last, sizeof(a->last), "%.*s",
                 (int) res->items[res->nitems - 1].len,
                 res->items[res->nitems - 1].data);
    }

    a->nfields = res->nfields;
    for (i = 0; i < 2 * res->nfields && i < 32; i++) {
        snprintf(a->fields[i], sizeof(a->fields[i]), "%.*s",
                 (int) res->fields[i].len, res->fields[i].data);
    }

    a->nentries = res->nentries;
    for (i = 0; i < res->nentries && i < 16; i++) {
        snprintf(a->ids[i], sizeof(a->ids[i]), "%.*s",
                 (int) res->entries[i].id.len, res->entries[i].id.data);
        snprintf(a->types[i], sizeof(a->types[i]), "%.*s",
                 (int) res->entries[i].type.len, res->entries[i].type.data);
        snprintf(a->datas[i], sizeof(a->datas[i]), "%.*s",
                 (int) res->entries[i].data.len, res->entries[i].data.data);
    }

    if (--a->t->left == 0) {
        event_base_loopbreak(a->t->base);
    }
}


static void
rg_test_wait(rg_test_ctx_t *t)
{
    rg_test_dispatch(t->base, &t->left, 10);
}


static void
rg_test_sleep(rg_test_ctx_t *t, rg_msec_t ms)
{
    struct event   *ev;
    struct timeval  tv;

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    ev = evtimer_new(t->base, rg_test_break, t->base);
    evtimer_add(ev, &tv);
    event_base_dispatch(t->base);
    event_free(ev);
}


static rg_test_ans_t *
rg_test_ans(rg_test_ctx_t *t, rg_test_ans_t *a)
{
    memset(a, 0, sizeof(*a));
    a->t = t;
    t->left++;

    return a;
}


/* the op was started; its answer must not have come yet */
#define rg_test_started(t, a, op)                                            \
    do {                                                                     \
        assert_non_null(op);                                                 \
        assert_int_equal((a)->calls, 0);                                     \
    } while (0)


static int
rg_test_setup(void **state, rg_uint_t redis)
{
    rg_test_ctx_t          *t;
    rg_store_redis_conf_t   conf;

    t = calloc(1, sizeof(rg_test_ctx_t));
    assert_non_null(t);

    t->base = event_base_new();
    assert_non_null(t->base);
    t->redis = redis;

    if (redis) {
        t->srv = rg_test_redis_start(NULL);
        if (t->srv == NULL) {
            fail_msg("cannot start redis-server (deploy/deps.sh installs "
                     "it)");
        }

        memset(&conf, 0, sizeof(conf));
        conf.redis.host = "127.0.0.1";
        conf.redis.port = t->srv->port;
        conf.redis.connections = 2;
        conf.redis.command_timeout = 5000;
        conf.prefix = "rgt:";
        t->st = rg_store_redis_create(t->base, NULL, &conf,
                                      rg_log_stderr());
    } else {
        t->st = rg_store_memory_create(t->base, 0, 0);
    }

    assert_non_null(t->st);
    *state = t;

    return 0;
}


static int
rg_test_setup_memory(void **state)
{
    return rg_test_setup(state, 0);
}


static int
rg_test_setup_redis(void **state)
{
    return rg_test_setup(state, 1);
}


static int
rg_test_teardown(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    if (t->st) {
        t->st->destroy(t->st);
    }

    rg_test_redis_stop(t->srv);
    event_base_free(t->base);
    free(t);

    return 0;
}


static rg_str_t
rg_test_str(const char *s)
{
    rg_str_t  r;

    r.data = (char *) s;
    r.len = strlen(s);

    return r;
}


static void
test_get_set(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_test_ans_t   a, b, c;
    rg_store_op_t  *op;
    rg_str_t        k, v;
    static const char bin[] = "x\0y\r\n\xfe";

    k = rg_test_str("dd:g:abc");
    v.data = (char *) bin;
    v.len = sizeof(bin) - 1;

    op = t->st->get(t->st, &k, rg_test_answer, rg_test_ans(t, &a));
    rg_test_started(t, &a, op);
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_DECLINED);

    op = t->st->set(t->st, &k, &v, 0, 0, rg_test_answer, rg_test_ans(t, &a));
    rg_test_started(t, &a, op);
    op = t->st->get(t->st, &k, rg_test_answer, rg_test_ans(t, &b));
    rg_test_started(t, &b, op);
    rg_test_wait(t);

    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(b.rc, RG_OK);
    assert_int_equal(b.len, v.len);
    assert_memory_equal(b.value, bin, v.len);

    /* NX: the first wins, the second learns its value */
    k = rg_test_str("claim");
    v = rg_test_str("first");
    t->st->set(t->st, &k, &v, 0, RG_STORE_NX, rg_test_answer,
               rg_test_ans(t, &a));
    v = rg_test_str("second");
    t->st->set(t->st, &k, &v, 0, RG_STORE_NX, rg_test_answer,
               rg_test_ans(t, &b));
    t->st->get(t->st, &k, rg_test_answer, rg_test_ans(t, &c));
    rg_test_wait(t);

    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(b.rc, RG_DECLINED);
    assert_string_equal(b.err, "exists");
    assert_memory_equal(b.value, "first", 5);
    assert_memory_equal(c.value, "first", 5);

    /* del */
    t->st->del(t->st, &k, rg_test_answer, rg_test_ans(t, &a));
    t->st->get(t->st, &k, rg_test_answer, rg_test_ans(t, &b));
    rg_test_wait(t);
    assert_int_equal(a.num, 1);
    assert_int_equal(b.rc, RG_DECLINED);
}


static void
test_expiry(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_test_ans_t   a;
    rg_str_t        k, v;

    k = rg_test_str("soon");
    v = rg_test_str("gone");

    t->st->set(t->st, &k, &v, 60, 0, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    t->st->get(t->st, &k, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);

    rg_test_sleep(t, 150);

    t->st->get(t->st, &k, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_DECLINED);
}


static void
test_incr(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_test_ans_t   a, b;
    rg_str_t        k;

    k = rg_test_str("tb:acme:20261201");

    t->st->incr(t->st, &k, 100, 60000, rg_test_answer, rg_test_ans(t, &a));
    t->st->incr(t->st, &k, 23, 60000, rg_test_answer, rg_test_ans(t, &b));
    rg_test_wait(t);
    assert_int_equal(a.num, 100);
    assert_int_equal(b.num, 123);

    if (t->redis) {
        char  *ttl = rg_test_redis_cmd(t->srv, "PTTL rgt:tb:acme:20261201");

        assert_true(atol(ttl) > 50000);
        free(ttl);
    }
}


/* msgs and fields of a checkpoint, from strings */
static rg_store_checkpoint_t
rg_test_cp(const char *id, rg_uint_t base, rg_str_t *msgs, rg_uint_t n,
    rg_str_t *fields, rg_uint_t nf, int64_t lease)
{
    rg_store_checkpoint_t  cp;

    memset(&cp, 0, sizeof(cp));
    cp.id = rg_test_str(id);
    cp.base = base;
    cp.msgs = msgs;
    cp.nmsgs = n;
    cp.fields = fields;
    cp.nfields = nf;
    cp.ttl = 3600 * 1000;
    cp.lease = lease;

    return cp;
}


static const char *
rg_test_field(rg_test_ans_t *a, const char *name)
{
    rg_uint_t  i;

    for (i = 0; i < a->nfields && i < 16; i++) {
        if (strcmp(a->fields[2 * i], name) == 0) {
            return a->fields[2 * i + 1];
        }
    }

    return NULL;
}


static void
test_checkpoint(void **state)
{
    rg_test_ctx_t          *t = *state;
    rg_test_ans_t           a, b;
    rg_str_t                id, msgs[3], fields[4];
    rg_store_checkpoint_t   cp;

    id = rg_test_str("s-1");

    t->st->load(t->st, &id, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_DECLINED);

    msgs[0] = rg_test_str("system");
    msgs[1] = rg_test_str("user: task");
    fields[0] = rg_test_str("status");
    fields[1] = rg_test_str("model_wait");
    fields[2] = rg_test_str("round");
    fields[3] = rg_test_str("0");

    cp = rg_test_cp("s-1", 0, msgs, 2, fields, 2, 0);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);

    /* the next turn */
    msgs[0] = rg_test_str("assistant: calls");
    msgs[1] = rg_test_str("tool: 42");
    fields[1] = rg_test_str("model_wait");
    fields[3] = rg_test_str("1");
    cp = rg_test_cp("s-1", 2, msgs, 2, fields, 2, 0);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));

    /* the same again, as after "outcome unknown": applied once */
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &b));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(b.rc, RG_OK);

    /* another base: the writer's view is wrong */
    cp = rg_test_cp("s-1", 1, msgs, 1, NULL, 0, 0);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_DECLINED);
    assert_non_null(strstr(a.err, "diverged"));
    assert_non_null(strstr(a.err, "4 messages"));

    /* the end: only fields */
    fields[1] = rg_test_str("done");
    fields[3] = rg_test_str("2");
    cp = rg_test_cp("s-1", 4, NULL, 0, fields, 2, 0);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));
    t->st->load(t->st, &id, rg_test_answer, rg_test_ans(t, &b));
    rg_test_wait(t);

    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(b.rc, RG_OK);
    assert_int_equal(b.nitems, 4);
    assert_string_equal(b.items[0], "system");
    assert_string_equal(b.items[1], "user: task");
    assert_string_equal(b.items[2], "assistant: calls");
    assert_string_equal(b.items[3], "tool: 42");
    assert_int_equal(b.nfields, 2);
    assert_string_equal(rg_test_field(&b, "status"), "done");
    assert_string_equal(rg_test_field(&b, "round"), "2");
}


/* a checkpoint of more records than any fixed array of arguments holds:
 * a turn of hundreds of calls, or a long conversation given as the task */
static void
test_checkpoint_large(void **state)
{
    rg_uint_t               i;
    rg_test_ctx_t          *t = *state;
    rg_test_ans_t           a, b;
    rg_str_t                id, *msgs, fields[64];
    rg_store_checkpoint_t   cp;
    char                  (*text)[32], names[32][16], values[32][16];

    msgs = calloc(1000, sizeof(rg_str_t));
    text = calloc(1000, sizeof(*text));
    assert_non_null(msgs);
    assert_non_null(text);

    for (i = 0; i < 1000; i++) {
        snprintf(text[i], sizeof(text[i]), "record %u", (unsigned) i);
        msgs[i] = rg_test_str(text[i]);
    }

    /* as many meta fields as a session writes, and more */
    for (i = 0; i < 32; i++) {
        snprintf(names[i], sizeof(names[i]), "f%u", (unsigned) i);
        snprintf(values[i], sizeof(values[i]), "v%u", (unsigned) i);
        fields[2 * i] = rg_test_str(names[i]);
        fields[2 * i + 1] = rg_test_str(values[i]);
    }

    id = rg_test_str("s-large");
    cp = rg_test_cp("s-large", 0, msgs, 1000, fields, 32, 0);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);

    /* and 1,000 more after them */
    cp = rg_test_cp("s-large", 1000, msgs, 1000, fields, 32, 0);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));
    t->st->load(t->st, &id, rg_test_answer, rg_test_ans(t, &b));
    rg_test_wait(t);

    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(b.rc, RG_OK);
    assert_int_equal(b.nitems, 2000);
    assert_string_equal(b.items[0], "record 0");
    assert_string_equal(b.items[15], "record 15");
    assert_string_equal(b.last, "record 999");
    assert_int_equal(b.nfields, 32);
    assert_string_equal(rg_test_field(&b, "f0"), "v0");
    assert_string_equal(rg_test_field(&b, "f15"), "v15");

    free(msgs);
    free(text);
}


static void
test_lease(void **state)
{
    int64_t                 t1, t2;
    rg_test_ctx_t          *t = *state;
    rg_test_ans_t           a, b, c;
    rg_str_t                id, w1, w2, msg;
    rg_store_put_t          p;
    rg_store_checkpoint_t   cp;

    id = rg_test_str("s-2");
    w1 = rg_test_str("host-a:101");
    w2 = rg_test_str("host-b:202");
    msg = rg_test_str("m");

    t->st->lease(t->st, &id, &w1, 0, 5000, rg_test_answer,
                 rg_test_ans(t, &a));
    t->st->lease(t->st, &id, &w2, 0, 5000, rg_test_answer,
                 rg_test_ans(t, &b));
    rg_test_wait(t);

    assert_int_equal(a.rc, RG_OK);
    t1 = a.num;
    assert_true(t1 > 0);
    assert_int_equal(b.rc, RG_DECLINED);
    assert_string_equal(b.err, "held");
    assert_memory_equal(b.value, "host-a:101", 10);

    /* the holder renews and writes */
    t->st->lease(t->st, &id, &w1, t1, 5000, rg_test_answer,
                 rg_test_ans(t, &a));
    cp = rg_test_cp("s-2", 0, &msg, 1, NULL, 0, t1);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &b));
    cp = rg_test_cp("s-2", 1, &msg, 1, NULL, 0, t1 + 99);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &c));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(a.num, t1);
    assert_int_equal(b.rc, RG_OK);
    assert_int_equal(c.rc, RG_DECLINED);
    assert_non_null(strstr(c.err, "fenced"));

    /* it lets go; another takes it with a larger token; the first one's
     * writes and renewals are refused from now on */
    t->st->release(t->st, &id, t1, rg_test_answer, rg_test_ans(t, &a));
    t->st->lease(t->st, &id, &w2, 0, 5000, rg_test_answer,
                 rg_test_ans(t, &b));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(b.rc, RG_OK);
    t2 = b.num;
    assert_true(t2 > t1);

    cp = rg_test_cp("s-2", 1, &msg, 1, NULL, 0, t1);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));
    t->st->lease(t->st, &id, &w1, t1, 5000, rg_test_answer,
                 rg_test_ans(t, &b));

    memset(&p, 0, sizeof(p));
    p.id = id;
    p.name = rg_test_str("idem:call_1");
    p.value = rg_test_str("claimed by a");
    p.lease = t1;
    p.ttl = 60000;
    p.flags = RG_STORE_NX;
    t->st->put(t->st, &p, rg_test_answer, rg_test_ans(t, &c));
    rg_test_wait(t);

    assert_int_equal(a.rc, RG_DECLINED);
    assert_non_null(strstr(a.err, "fenced"));
    assert_int_equal(b.rc, RG_DECLINED);
    assert_string_equal(b.err, "lost");
    assert_int_equal(c.rc, RG_DECLINED);
    assert_non_null(strstr(c.err, "fenced"));

    /* a lease that ran out while nobody took another (the store was
     * away) is still its holder's: renewed, and its writes accepted */
    t->st->lease(t->st, &id, &w2, t2, 80, rg_test_answer,
                 rg_test_ans(t, &a));
    rg_test_wait(t);
    rg_test_sleep(t, 200);
    t->st->lease(t->st, &id, &w2, t2, 80, rg_test_answer,
                 rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(a.num, t2);

    /* once another took it, the old holder's renewal is lost */
    rg_test_sleep(t, 200);
    t->st->lease(t->st, &id, &w1, 0, 5000, rg_test_answer,
                 rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    assert_true(a.num > t2);
    t->st->lease(t->st, &id, &w2, t2, 5000, rg_test_answer,
                 rg_test_ans(t, &b));
    rg_test_wait(t);
    assert_int_equal(b.rc, RG_DECLINED);
    assert_string_equal(b.err, "lost");
}


/* a final checkpoint lets the lease go in the same step: written and
 * let go, or (fenced) neither; a stale token lets nothing go */
static void
test_checkpoint_release(void **state)
{
    int64_t                 t1, t2;
    rg_test_ctx_t          *t = *state;
    rg_test_ans_t           a, b;
    rg_str_t                id, w1, w2, msg, fields[2];
    rg_store_checkpoint_t   cp;

    id = rg_test_str("s-9");
    w1 = rg_test_str("host-a:101");
    w2 = rg_test_str("host-b:202");
    msg = rg_test_str("m");
    fields[0] = rg_test_str("status");
    fields[1] = rg_test_str("done");

    t->st->lease(t->st, &id, &w1, 0, 5000, rg_test_answer,
                 rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    t1 = a.num;

    /* without release the lease stays: another cannot take it */
    cp = rg_test_cp("s-9", 0, &msg, 1, fields, 1, t1);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));
    t->st->lease(t->st, &id, &w2, 0, 5000, rg_test_answer,
                 rg_test_ans(t, &b));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(b.rc, RG_DECLINED);
    assert_string_equal(b.err, "held");

    /* a stale token's final checkpoint is refused and lets nothing go */
    cp = rg_test_cp("s-9", 1, &msg, 1, fields, 1, t1 + 5);
    cp.release = 1;
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));
    t->st->lease(t->st, &id, &w2, 0, 5000, rg_test_answer,
                 rg_test_ans(t, &b));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_DECLINED);
    assert_non_null(strstr(a.err, "fenced"));
    assert_int_equal(b.rc, RG_DECLINED);
    assert_string_equal(b.err, "held");

    /* the holder's final checkpoint: written, and the lease is free */
    cp = rg_test_cp("s-9", 1, &msg, 1, fields, 1, t1);
    cp.release = 1;
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));
    t->st->lease(t->st, &id, &w2, 0, 5000, rg_test_answer,
                 rg_test_ans(t, &b));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(b.rc, RG_OK);
    t2 = b.num;
    assert_true(t2 > t1);

    t->st->load(t->st, &id, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(a.nitems, 2);

    /* the old holder's retry of it now is fenced, and lets go of nothing */
    cp = rg_test_cp("s-9", 1, &msg, 1, fields, 1, t1);
    cp.release = 1;
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));
    t->st->lease(t->st, &id, &w2, t2, 5000, rg_test_answer,
                 rg_test_ans(t, &b));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_DECLINED);
    assert_int_equal(b.rc, RG_OK);
    assert_int_equal(b.num, t2);
}


static void
test_put(void **state)
{
    rg_test_ctx_t   *t = *state;
    rg_test_ans_t    a, b, c;
    rg_store_put_t   p;
    rg_str_t         k;
    char             key[64];

    memset(&p, 0, sizeof(p));
    p.id = rg_test_str("s-3");
    p.name = rg_test_str("idem:call_7");
    p.value = rg_test_str("claim w1");
    p.ttl = 60000;
    p.flags = RG_STORE_NX;

    t->st->put(t->st, &p, rg_test_answer, rg_test_ans(t, &a));
    p.value = rg_test_str("claim w2");
    t->st->put(t->st, &p, rg_test_answer, rg_test_ans(t, &b));
    rg_test_wait(t);

    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(b.rc, RG_DECLINED);
    assert_string_equal(b.err, "exists");
    assert_memory_equal(b.value, "claim w1", 8);

    /* the result replaces the claim */
    p.value = rg_test_str("result: ok");
    p.flags = 0;
    t->st->put(t->st, &p, rg_test_answer, rg_test_ans(t, &a));

    k.len = rg_store_session_key(key, sizeof(key), &p.id, "idem:call_7", 11);
    k.data = key;
    t->st->get(t->st, &k, rg_test_answer, rg_test_ans(t, &c));
    rg_test_wait(t);

    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(c.rc, RG_OK);
    assert_memory_equal(c.value, "result: ok", 10);
}


/* a value put with RG_STORE_KEEP lives as long as its session: each
 * checkpoint renews it with the session's TTL; one put without goes at
 * its own */
static void
test_put_keep(void **state)
{
    rg_test_ctx_t          *t = *state;
    rg_test_ans_t           a, b, c;
    rg_store_put_t          p;
    rg_store_checkpoint_t   cp;
    rg_str_t                k, msg, fields[2];
    char                    key[64];

    memset(&p, 0, sizeof(p));
    p.id = rg_test_str("s-4");
    p.name = rg_test_str("idem:kept");
    p.value = rg_test_str("result: kept");
    p.ttl = 300;
    p.flags = RG_STORE_NX | RG_STORE_KEEP;
    t->st->put(t->st, &p, rg_test_answer, rg_test_ans(t, &a));

    p.name = rg_test_str("idem:alone");
    p.value = rg_test_str("result: alone");
    p.flags = RG_STORE_NX;
    t->st->put(t->st, &p, rg_test_answer, rg_test_ans(t, &b));

    msg = rg_test_str("m1");
    fields[0] = rg_test_str("status");
    fields[1] = rg_test_str("running");
    cp = rg_test_cp("s-4", 0, &msg, 1, fields, 1, 0);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &c));
    rg_test_wait(t);

    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(b.rc, RG_OK);
    assert_int_equal(c.rc, RG_OK);

    rg_test_sleep(t, 500);

    k.len = rg_store_session_key(key, sizeof(key), &p.id, "idem:kept", 9);
    k.data = key;
    t->st->get(t->st, &k, rg_test_answer, rg_test_ans(t, &a));
    k.len = rg_store_session_key(key, sizeof(key), &p.id, "idem:alone",
                                 10);
    t->st->get(t->st, &k, rg_test_answer, rg_test_ans(t, &b));
    rg_test_wait(t);

    assert_int_equal(a.rc, RG_OK);
    assert_memory_equal(a.value, "result: kept", 12);
    assert_int_equal(b.rc, RG_DECLINED);
}


static void
test_take(void **state)
{
    rg_test_ctx_t      *t = *state;
    rg_test_ans_t       a, b, c;
    rg_store_bucket_t   bk[2];
    rg_str_t            name;

    memset(bk, 0, sizeof(bk));
    bk[0].name = rg_test_str("openai");
    bk[0].rate = 60;               /* one a second */
    bk[0].capacity = 2;
    bk[0].cost = 1;

    t->st->take(t->st, &bk[0].name, bk, 1, rg_test_answer,
                rg_test_ans(t, &a));
    t->st->take(t->st, &bk[0].name, bk, 1, rg_test_answer,
                rg_test_ans(t, &b));
    t->st->take(t->st, &bk[0].name, bk, 1, rg_test_answer,
                rg_test_ans(t, &c));
    rg_test_wait(t);

    assert_int_equal(a.num, 0);
    assert_int_equal(b.num, 0);
    assert_true(c.num > 500 && c.num <= 1000);

    /* a refund (a negative cost) is always granted */
    bk[0].cost = -1;
    t->st->take(t->st, &bk[0].name, bk, 1, rg_test_answer,
                rg_test_ans(t, &a));
    bk[0].cost = 1;
    t->st->take(t->st, &bk[0].name, bk, 1, rg_test_answer,
                rg_test_ans(t, &b));
    rg_test_wait(t);
    assert_int_equal(a.num, 0);
    assert_int_equal(b.num, 0);

    /* two buckets: all or nothing */
    bk[0].name = rg_test_str("groq");
    bk[1].name = rg_test_str("groq");
    bk[1].rate = 6000;
    bk[1].capacity = 100;
    bk[1].cost = 80;

    t->st->take(t->st, &bk[0].name, bk, 2, rg_test_answer,
                rg_test_ans(t, &a));
    t->st->take(t->st, &bk[0].name, bk, 2, rg_test_answer,
                rg_test_ans(t, &b));
    rg_test_wait(t);
    assert_int_equal(a.num, 0);
    assert_true(b.num > 0);       /* the tokens bucket is short */

    bk[1].cost = 10;
    t->st->take(t->st, &bk[0].name, bk, 2, rg_test_answer,
                rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.num, 0);   /* the request bucket was not charged */

    /* a cool-down holds them all */
    name = rg_test_str("groq");
    t->st->cooldown(t->st, &name, 400, rg_test_answer, rg_test_ans(t, &a));
    bk[1].cost = 1;
    t->st->take(t->st, &name, &bk[1], 1, rg_test_answer,
                rg_test_ans(t, &b));
    /* and is read alone, without a bucket */
    t->st->take(t->st, &name, NULL, 0, rg_test_answer, rg_test_ans(t, &c));
    rg_test_wait(t);
    assert_true(b.num >= 300 && b.num <= 400);
    assert_int_equal(c.rc, RG_OK);
    assert_true(c.num >= 300 && c.num <= 400);

    /* another name's is not this one's */
    name = rg_test_str("openai");
    t->st->take(t->st, &name, NULL, 0, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(a.num, 0);
}


static void
test_cancel(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_test_ans_t   a, b;
    rg_store_op_t  *op;
    rg_str_t        k;

    k = rg_test_str("x");

    op = t->st->get(t->st, &k, rg_test_answer, rg_test_ans(t, &a));
    t->st->cancel(t->st, op);
    t->left--;
    t->st->get(t->st, &k, rg_test_answer, rg_test_ans(t, &b));
    rg_test_wait(t);

    assert_int_equal(a.calls, 0);
    assert_int_equal(b.calls, 1);

    /* shut down with one pending: it is answered */
    t->st->get(t->st, &k, rg_test_answer, rg_test_ans(t, &a));
    t->st->destroy(t->st);
    t->st = NULL;
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.rc, RG_ERROR);
    assert_string_equal(a.err, "the store is shutting down");
}


static rg_store_event_t
rg_test_event(const char *id, const char *type, const char *data,
    rg_uint_t max, rg_msec_t ttl, int64_t lease)
{
    rg_store_event_t  ev;

    ev.id = rg_test_str(id);
    ev.type = rg_test_str(type);
    ev.data = rg_test_str(data);
    ev.max = max;
    ev.ttl = ttl;
    ev.lease = lease;

    return ev;
}


/* a's id comes before b's, as stream ids compare */
static int
rg_test_id_before(const char *a, const char *b)
{
    uint64_t  ams, aseq, bms, bseq;

    assert_int_equal(rg_store_event_id(a, strlen(a), &ams, &aseq), RG_OK);
    assert_int_equal(rg_store_event_id(b, strlen(b), &bms, &bseq), RG_OK);

    return ams < bms || (ams == bms && aseq < bseq);
}


/* A session's events: each append answers its id, ids grow; a range
 * gives the entries after an id (exclusive), at most count, in order;
 * the stream keeps the newest max; it expires ttl after the last
 * append; a stale lease's append is refused */
static void
test_events(void **state)
{
    char               ids[12][48], data[32];
    rg_uint_t          i;
    rg_test_ctx_t     *t = *state;
    rg_test_ans_t      a[12], r;
    rg_str_t           id, w;
    rg_store_op_t     *op;
    rg_store_event_t   ev;

    id = rg_test_str("s-ev");

    for (i = 0; i < 6; i++) {
        snprintf(data, sizeof(data), "{\"n\":%lu}", (unsigned long) i);
        ev = rg_test_event("s-ev", i % 2 ? "odd" : "even", data, 1000,
                           60000, 0);
        op = t->st->append(t->st, &ev, rg_test_answer,
                           rg_test_ans(t, &a[i]));
        rg_test_started(t, &a[i], op);
    }
    rg_test_wait(t);

    for (i = 0; i < 6; i++) {
        assert_int_equal(a[i].rc, RG_OK);
        snprintf(ids[i], sizeof(ids[i]), "%.*s", (int) a[i].len,
                 a[i].value);
        if (i > 0 && !rg_test_id_before(ids[i - 1], ids[i])) {
            fail_msg("id %s does not come after %s", ids[i], ids[i - 1]);
        }
    }

    /* all of them, in order */
    op = t->st->range(t->st, &id, NULL, 100, rg_test_answer,
                      rg_test_ans(t, &r));
    rg_test_started(t, &r, op);
    rg_test_wait(t);
    assert_int_equal(r.rc, RG_OK);
    assert_int_equal(r.nentries, 6);
    for (i = 0; i < 6; i++) {
        snprintf(data, sizeof(data), "{\"n\":%lu}", (unsigned long) i);
        assert_string_equal(r.ids[i], ids[i]);
        assert_string_equal(r.types[i], i % 2 ? "odd" : "even");
        assert_string_equal(r.datas[i], data);
    }

    /* after an id: exclusive, at most count */
    t->st->range(t->st, &id, ids[1], 2, rg_test_answer, rg_test_ans(t, &r));
    rg_test_wait(t);
    assert_int_equal(r.rc, RG_OK);
    assert_int_equal(r.nentries, 2);
    assert_string_equal(r.ids[0], ids[2]);
    assert_string_equal(r.ids[1], ids[3]);

    /* after the last one, and of a session that has none: nothing */
    t->st->range(t->st, &id, ids[5], 10, rg_test_answer, rg_test_ans(t, &r));
    rg_test_wait(t);
    assert_int_equal(r.rc, RG_OK);
    assert_int_equal(r.nentries, 0);

    w = rg_test_str("s-none");
    t->st->range(t->st, &w, NULL, 10, rg_test_answer, rg_test_ans(t, &r));
    rg_test_wait(t);
    assert_int_equal(r.rc, RG_OK);
    assert_int_equal(r.nentries, 0);

    /* an id between two (an earlier ms): the next one */
    t->st->range(t->st, &id, "1-0", 1, rg_test_answer, rg_test_ans(t, &r));
    rg_test_wait(t);
    assert_int_equal(r.nentries, 1);
    assert_string_equal(r.ids[0], ids[0]);

    /* what is no id is refused before anything is sent */
    assert_null(t->st->range(t->st, &id, "abc", 10, rg_test_answer, NULL));
    assert_null(t->st->range(t->st, &id, "12-", 10, rg_test_answer, NULL));
    assert_null(t->st->range(t->st, &id, "-1", 10, rg_test_answer, NULL));
    assert_null(t->st->range(t->st, &id, "99999999999999999999999-0", 10,
                             rg_test_answer, NULL));

    /* at most max: the oldest go */
    for (i = 0; i < 12; i++) {
        snprintf(data, sizeof(data), "c%lu", (unsigned long) i);
        ev = rg_test_event("s-cap", "x", data, 5, 60000, 0);
        t->st->append(t->st, &ev, rg_test_answer, rg_test_ans(t, &a[i]));
    }
    rg_test_wait(t);

    w = rg_test_str("s-cap");
    t->st->range(t->st, &w, NULL, 100, rg_test_answer, rg_test_ans(t, &r));
    rg_test_wait(t);
    assert_int_equal(r.nentries, 5);
    assert_string_equal(r.datas[0], "c7");
    assert_string_equal(r.datas[4], "c11");
    snprintf(ids[0], sizeof(ids[0]), "%.*s", (int) a[11].len, a[11].value);
    assert_string_equal(r.ids[4], ids[0]);

    /* it expires ttl after the last append */
    ev = rg_test_event("s-ttl", "x", "{}", 10, 150, 0);
    t->st->append(t->st, &ev, rg_test_answer, rg_test_ans(t, &a[0]));
    rg_test_wait(t);
    assert_int_equal(a[0].rc, RG_OK);

    if (t->redis) {
        char  *ttl = rg_test_redis_cmd(t->srv, "PTTL rgt:{s-ttl}:events");
        assert_true(atol(ttl) > 0 && atol(ttl) <= 150);
        free(ttl);
        ttl = rg_test_redis_cmd(t->srv, "PTTL rgt:{s-ev}:events");
        assert_true(atol(ttl) > 50000);
        free(ttl);
    }

    rg_test_sleep(t, 400);
    w = rg_test_str("s-ttl");
    t->st->range(t->st, &w, NULL, 10, rg_test_answer, rg_test_ans(t, &r));
    rg_test_wait(t);
    assert_int_equal(r.rc, RG_OK);
    assert_int_equal(r.nentries, 0);
}


/* an append under a lease another worker holds now is refused */
static void
test_events_fenced(void **state)
{
    int64_t            t1;
    rg_test_ctx_t     *t = *state;
    rg_test_ans_t      a, b, r;
    rg_str_t           id, w;
    rg_store_event_t   ev;

    id = rg_test_str("s-fe");
    w = rg_test_str("host-a:1");

    t->st->lease(t->st, &id, &w, 0, 5000, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    t1 = a.num;

    ev = rg_test_event("s-fe", "ok", "{}", 10, 60000, t1);
    t->st->append(t->st, &ev, rg_test_answer, rg_test_ans(t, &a));
    ev = rg_test_event("s-fe", "stale", "{}", 10, 60000, t1 + 7);
    t->st->append(t->st, &ev, rg_test_answer, rg_test_ans(t, &b));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(b.rc, RG_DECLINED);
    assert_non_null(strstr(b.err, "fenced"));

    /* released with nobody after it: its holder's last words still go */
    t->st->release(t->st, &id, t1, rg_test_answer, rg_test_ans(t, &a));
    ev = rg_test_event("s-fe", "final", "{}", 10, 60000, t1);
    t->st->append(t->st, &ev, rg_test_answer, rg_test_ans(t, &b));
    rg_test_wait(t);
    assert_int_equal(b.rc, RG_OK);

    t->st->range(t->st, &id, NULL, 10, rg_test_answer, rg_test_ans(t, &r));
    rg_test_wait(t);
    assert_int_equal(r.nentries, 2);
    assert_string_equal(r.types[0], "ok");
    assert_string_equal(r.types[1], "final");
}


/* Redis: the prefix is applied, and nothing written lives forever */
static void
test_redis_ttls(void **state)
{
    rg_test_ctx_t          *t = *state;
    rg_test_ans_t           a;
    rg_str_t                id, w, msg, fields[2], name;
    rg_store_bucket_t       bk;
    rg_store_put_t          p;
    rg_store_checkpoint_t   cp;
    char                   *keys, *tok, *save, *ttl;
    rg_uint_t               n;

    id = rg_test_str("s-9");
    w = rg_test_str("w");
    msg = rg_test_str("m");
    fields[0] = rg_test_str("status");
    fields[1] = rg_test_str("done");

    t->st->lease(t->st, &id, &w, 0, 5000, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);

    cp = rg_test_cp("s-9", 0, &msg, 1, fields, 1, a.num);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));

    memset(&p, 0, sizeof(p));
    p.id = id;
    p.name = rg_test_str("idem:c1");
    p.value = msg;
    p.ttl = 60000;
    t->st->put(t->st, &p, rg_test_answer, rg_test_ans(t, &a));

    memset(&bk, 0, sizeof(bk));
    bk.name = rg_test_str("up");
    bk.rate = 60;
    bk.capacity = 10;
    bk.cost = 1;
    t->st->take(t->st, &bk.name, &bk, 1, rg_test_answer, rg_test_ans(t, &a));

    name = rg_test_str("up");
    t->st->cooldown(t->st, &name, 1000, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);

    keys = rg_test_redis_cmd(t->srv, "EVAL %s 0",
        "return table.concat(redis.call('KEYS', '*'), ' ')");
    assert_non_null(keys);

    n = 0;
    for (tok = strtok_r(keys, " ", &save); tok;
         tok = strtok_r(NULL, " ", &save))
    {
        assert_true(strncmp(tok, "rgt:", 4) == 0);

        /* the epoch goes only with the store's memory: that is its use */
        if (strcmp(tok, "rgt:epoch") == 0) {
            ttl = rg_test_redis_cmd(t->srv, "PTTL %s", tok);
            assert_string_equal(ttl, "-1");
            free(ttl);
            continue;
        }

        ttl = rg_test_redis_cmd(t->srv, "PTTL %s", tok);
        if (atol(ttl) <= 0) {
            fail_msg("key %s has no TTL (%s)", tok, ttl);
        }
        free(ttl);
        n++;
    }

    /* meta, msgs, lease, fence, idem, bucket, cool-down */
    assert_int_equal(n, 7);
    free(keys);
}


/* Redis restarted between two operations: the next one still ends */
static void
test_redis_restart(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_test_ans_t   a;
    rg_str_t        k, v;

    k = rg_test_str("k");
    v = rg_test_str("v");

    t->st->set(t->st, &k, &v, 60000, 0, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);

    assert_int_equal(rg_test_redis_restart(t->srv), 0);

    t->st->set(t->st, &k, &v, 60000, 0, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);

    /* either it went out on the dead connection (its outcome unknown) or
     * it waited for the new one */
    if (a.rc != RG_OK) {
        assert_non_null(strstr(a.err, "outcome unknown"));
        t->st->set(t->st, &k, &v, 60000, 0, rg_test_answer,
                   rg_test_ans(t, &a));
        rg_test_wait(t);
    }

    assert_int_equal(a.rc, RG_OK);
}


/* Redis restarted without its data: the store says so once (its epoch
 * changed), a fenced write that finds neither lease nor fencing counter
 * says "lost" (not "fenced"), a renewal says "gone", and a lease taken
 * anew gets a token above the old one, so the old token stays refused */
static void
rg_test_lost(void *data, rg_store_t *st)
{
    (*(rg_uint_t *) data)++;
}


static void
test_redis_forgot(void **state)
{
    rg_test_ctx_t          *t = *state;
    rg_test_ans_t           a;
    rg_str_t                id, w, msg, fields[2];
    rg_store_put_t          p;
    rg_store_checkpoint_t   cp;
    rg_uint_t               told, i;
    int64_t                 old;

    told = 0;
    assert_int_equal(rg_store_watch(t->st, rg_test_lost, &told), RG_OK);

    id = rg_test_str("s-lost");
    w = rg_test_str("w1");
    msg = rg_test_str("m");
    fields[0] = rg_test_str("status");
    fields[1] = rg_test_str("running");

    t->st->lease(t->st, &id, &w, 0, 60000, rg_test_answer,
                 rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    old = a.num;

    /* the first token comes from the server's clock, in ms × 1000 */
    assert_true(old > (int64_t) 1600000000000LL * 1000);

    cp = rg_test_cp("s-lost", 0, &msg, 1, fields, 1, old);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    assert_int_equal(told, 0);
    assert_true(t->st->epoch.id[0] != '\0');

    assert_int_equal(rg_test_redis_restart(t->srv), 0);

    /* the first write after it may meet the dead connection */
    for (i = 0; i < 3; i++) {
        cp = rg_test_cp("s-lost", 1, &msg, 1, fields, 1, old);
        t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));
        rg_test_wait(t);
        if (a.rc != RG_ERROR) {
            break;
        }
    }

    assert_int_equal(a.rc, RG_DECLINED);
    assert_true(strncmp(a.err, "lost: ", 6) == 0);
    assert_non_null(strstr(a.err, "lost them"));
    assert_null(strstr(a.err, "another worker"));

    memset(&p, 0, sizeof(p));
    p.id = id;
    p.name = rg_test_str("idem:c1");
    p.value = msg;
    p.lease = old;
    p.ttl = 60000;
    p.flags = RG_STORE_NX;
    t->st->put(t->st, &p, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_DECLINED);
    assert_true(strncmp(a.err, "lost: ", 6) == 0);

    t->st->lease(t->st, &id, &w, old, 60000, rg_test_answer,
                 rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_DECLINED);
    assert_true(strncmp(a.err, "gone", 4) == 0);

    /* told once, whatever asked (the answers above and the reconnect) */
    for (i = 0; i < 20 && told == 0; i++) {
        rg_test_sleep(t, 50);
    }
    assert_int_equal(told, 1);
    assert_int_equal(t->st->epoch.losses, 1);

    /* taken anew: above the old token, which stays refused */
    w = rg_test_str("w2");
    t->st->lease(t->st, &id, &w, 0, 60000, rg_test_answer,
                 rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);
    assert_true(a.num > old);

    cp = rg_test_cp("s-lost", 0, &msg, 1, fields, 1, old);
    t->st->checkpoint(t->st, &cp, rg_test_answer, rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_DECLINED);
    assert_true(strncmp(a.err, "fenced", 6) == 0);

    /* a check that finds the same epoch tells nobody */
    t->st->check(t->st);
    rg_test_sleep(t, 100);
    assert_int_equal(told, 1);

    rg_store_unwatch(t->st, rg_test_lost, &told);
}


/* a lease taken on a store whose epoch is not the one this process knows
 * is refused, 'gone', and the epoch read at once: the task it is for
 * was read from the store that was lost (its entry is gone), and the
 * process must know that before it runs it; once it knows, it takes it */
static void
test_redis_take_stale(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_test_ans_t   a;
    rg_str_t        id, w;
    rg_uint_t       told, i;
    char            known[48];

    told = 0;
    assert_int_equal(rg_store_watch(t->st, rg_test_lost, &told), RG_OK);

    id = rg_test_str("s-stale");
    w = rg_test_str("w1");

    t->st->lease(t->st, &id, &w, 0, 60000, rg_test_answer,
                 rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);

    /* the epoch is read on connecting: its answer may come after this */
    for (i = 0; i < 20 && t->st->epoch.id[0] == '\0'; i++) {
        rg_test_sleep(t, 50);
    }
    assert_true(t->st->epoch.id[0] != '\0');
    memcpy(known, t->st->epoch.id, sizeof(known));

    /* as if this process had read the epoch of a store since lost */
    snprintf(t->st->epoch.id, sizeof(t->st->epoch.id), "an-older-one");
    id = rg_test_str("s-stale-2");

    t->st->lease(t->st, &id, &w, 0, 60000, rg_test_answer,
                 rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_DECLINED);
    assert_true(strncmp(a.err, "gone", 4) == 0);

    for (i = 0; i < 20 && told == 0; i++) {
        rg_test_sleep(t, 50);
    }
    assert_int_equal(told, 1);
    assert_string_equal(t->st->epoch.id, known);

    t->st->lease(t->st, &id, &w, 0, 60000, rg_test_answer,
                 rg_test_ans(t, &a));
    rg_test_wait(t);
    assert_int_equal(a.rc, RG_OK);

    rg_store_unwatch(t->st, rg_test_lost, &told);
}


#define RG_TEST_BOTH(f)                                                      \
    cmocka_unit_test_setup_teardown(f, rg_test_setup_memory,                 \
                                    rg_test_teardown),                       \
    cmocka_unit_test_setup_teardown(f, rg_test_setup_redis,                  \
                                    rg_test_teardown)


int
main(void)
{
    const struct CMUnitTest tests[] = {
        RG_TEST_BOTH(test_get_set),
        RG_TEST_BOTH(test_expiry),
        RG_TEST_BOTH(test_incr),
        RG_TEST_BOTH(test_checkpoint),
        RG_TEST_BOTH(test_checkpoint_large),
        RG_TEST_BOTH(test_lease),
        RG_TEST_BOTH(test_checkpoint_release),
        RG_TEST_BOTH(test_put),
        RG_TEST_BOTH(test_put_keep),
        RG_TEST_BOTH(test_take),
        RG_TEST_BOTH(test_cancel),
        RG_TEST_BOTH(test_events),
        RG_TEST_BOTH(test_events_fenced),
        cmocka_unit_test_setup_teardown(test_redis_ttls, rg_test_setup_redis,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_redis_restart,
                                        rg_test_setup_redis,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_redis_forgot,
                                        rg_test_setup_redis,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_redis_take_stale,
                                        rg_test_setup_redis,
                                        rg_test_teardown),
    };

    signal(SIGPIPE, SIG_IGN);

    return cmocka_run_group_tests(tests, NULL, NULL);
}
