/* test_redis_cluster.c: the Redis client's slot router
 * (src/store/rg_redis_cluster.c) against a real three-master Redis
 * Cluster started on loopback ports (redis-server --cluster-enabled,
 * redis-cli --cluster create): the key-to-slot function agrees with the
 * server's CLUSTER KEYSLOT; commands land on the node that serves their
 * tag, with MOVED only until the slot map is read; a slot migrated in the
 * middle of a run of INCRs (IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE)
 * loses none of them, through ASK and then MOVED; the store's session
 * operations work across the nodes. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_redis.h>
#include <rg_redis_int.h>
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


static rg_test_cluster_t  *rg_test_c;


typedef struct {
    struct event_base  *base;
    rg_redis_t         *r;
    rg_uint_t           left;
    rg_uint_t           ok;
    rg_uint_t           failed;
    char                err[512];
} rg_test_ctx_t;


static void
rg_test_answer(void *data, redisReply *reply, const char *err)
{
    rg_test_ctx_t  *t = data;

    if (err) {
        t->failed++;
        snprintf(t->err, sizeof(t->err), "%s", err);
    } else {
        t->ok++;
    }

    if (--t->left == 0) {
        event_base_loopbreak(t->base);
    }
}


static void
rg_test_wait(rg_test_ctx_t *t)
{
    rg_test_dispatch(t->base, &t->left, 20);
}


static void
rg_test_cmd(rg_test_ctx_t *t, const char *tag, const char *c0,
    const char *c1, const char *c2)
{
    int          n;
    size_t       lens[3];
    const char  *argv[3];
    rg_str_t     tg;

    argv[0] = c0;
    argv[1] = c1;
    argv[2] = c2;
    n = c2 ? 3 : 2;
    lens[0] = strlen(c0);
    lens[1] = strlen(c1);
    lens[2] = c2 ? strlen(c2) : 0;

    tg.data = (char *) tag;
    tg.len = strlen(tag);

    t->left++;
    assert_non_null(rg_redis_command(t->r, &tg, 10000, rg_test_answer, t, n,
                                     argv, lens));
}


static int
rg_test_setup(void **state)
{
    rg_test_ctx_t    *t;
    rg_redis_conf_t   conf;

    t = calloc(1, sizeof(rg_test_ctx_t));
    assert_non_null(t);

    t->base = event_base_new();

    memset(&conf, 0, sizeof(conf));
    conf.host = "127.0.0.1";
    conf.port = rg_test_c->nodes[0]->port;
    conf.connections = 2;
    conf.command_timeout = 10000;
    conf.cluster = 1;

    t->r = rg_redis_create(t->base, NULL, &conf, rg_log_stderr());
    assert_non_null(t->r);

    *state = t;

    return 0;
}


static int
rg_test_teardown(void **state)
{
    rg_test_ctx_t  *t = *state;

    rg_redis_destroy(t->r);
    event_base_free(t->base);
    free(t);

    return 0;
}


static void
test_slot_function(void **state)
{
    int        i, mine;
    char       tag[32], *theirs;

    for (i = 0; i < 300; i++) {
        snprintf(tag, sizeof(tag), "s-%08x%d", (unsigned) random(), i);
        mine = rg_redis_cluster_slot(tag, strlen(tag));
        theirs = rg_test_redis_cmd(rg_test_c->nodes[0], "CLUSTER KEYSLOT %s",
                                   tag);
        assert_non_null(theirs);
        assert_int_equal(mine, atoi(theirs));
        free(theirs);
    }

    /* the well-known value of the specification */
    assert_int_equal(rg_redis_cluster_slot("123456789", 9), 0x31c3);

    (void) state;
}


static void
test_routing(void **state)
{
    int              i, owner;
    char             tag[32], key[64], *v;
    uint64_t         moved;
    rg_test_ctx_t   *t = *state;
    rg_uint_t        k, total, per[8];

    for (i = 0; i < 300; i++) {
        snprintf(tag, sizeof(tag), "r-%d", i);
        snprintf(key, sizeof(key), "{%s}:k", tag);
        rg_test_cmd(t, tag, "SET", key, "v");
    }

    rg_test_wait(t);
    assert_int_equal(t->failed, 0);
    assert_int_equal(t->ok, 300);

    /* each key is where the cluster says its slot lives */
    memset(per, 0, sizeof(per));
    for (i = 0; i < 300; i += 17) {
        snprintf(key, sizeof(key), "{r-%d}:k", i);
        owner = rg_test_cluster_owner(rg_test_c,
                    rg_redis_cluster_slot(key + 1, strchr(key, '}') - key - 1));
        assert_true(owner >= 0);
        v = rg_test_redis_cmd(rg_test_c->nodes[owner], "EXISTS %s", key);
        assert_string_equal(v, "1");
        free(v);
    }

    total = 0;
    for (k = 0; k < rg_test_c->n; k++) {
        v = rg_test_redis_cmd(rg_test_c->nodes[k], "DBSIZE");
        per[k] = atoi(v);
        total += per[k];
        free(v);
        assert_true(per[k] > 50);      /* spread over all three */
    }
    assert_int_equal(total, 300);

    /* the map is known now: no more redirects */
    moved = rg_redis_stats(t->r)->moved;
    assert_true(rg_redis_stats(t->r)->refreshes >= 1);

    for (i = 300; i < 600; i++) {
        snprintf(tag, sizeof(tag), "r-%d", i);
        snprintf(key, sizeof(key), "{%s}:k", tag);
        rg_test_cmd(t, tag, "SET", key, "v");
    }

    rg_test_wait(t);
    assert_int_equal(t->failed, 0);
    assert_int_equal(rg_redis_stats(t->r)->moved, moved);
}


static void
rg_test_incr_batch(rg_test_ctx_t *t, const char *tag, const char *key,
    rg_uint_t n)
{
    rg_uint_t  i;

    for (i = 0; i < n; i++) {
        rg_test_cmd(t, tag, "INCR", key, NULL);
    }

    rg_test_wait(t);
}


/* the slot of a tag moves from its node to another in the middle */
static void
test_migration(void **state)
{
    int              slot, from, to;
    char            *v, *from_id, *to_id;
    rg_uint_t        k;
    rg_test_ctx_t   *t = *state;
    const char      *tag = "moving", *key = "{moving}:n";
    rg_test_redis_t *a, *b;

    slot = rg_redis_cluster_slot(tag, strlen(tag));
    from = rg_test_cluster_owner(rg_test_c, slot);
    assert_true(from >= 0);
    to = (from + 1) % rg_test_c->n;
    a = rg_test_c->nodes[from];
    b = rg_test_c->nodes[to];
    from_id = rg_test_cluster_id(a);
    to_id = rg_test_cluster_id(b);

    rg_test_incr_batch(t, tag, key, 500);

    /* the migration starts: A still has the key, so it answers */
    v = rg_test_redis_cmd(b, "CLUSTER SETSLOT %d IMPORTING %s", slot,
                          from_id);
    assert_string_equal(v, "OK");
    free(v);
    v = rg_test_redis_cmd(a, "CLUSTER SETSLOT %d MIGRATING %s", slot, to_id);
    assert_string_equal(v, "OK");
    free(v);

    rg_test_incr_batch(t, tag, key, 500);

    /* the key moves: A answers ASK, B serves it after ASKING */
    v = rg_test_redis_cmd(a, "MIGRATE 127.0.0.1 %d %s 0 5000", b->port, key);
    assert_string_equal(v, "OK");
    free(v);

    rg_test_incr_batch(t, tag, key, 500);
    assert_true(rg_redis_stats(t->r)->asked >= 1);

    /* the slot is B's: A answers MOVED */
    for (k = 0; k < rg_test_c->n; k++) {
        v = rg_test_redis_cmd(rg_test_c->nodes[k], "CLUSTER SETSLOT %d NODE "
                              "%s", slot, to_id);
        free(v);
    }

    rg_test_incr_batch(t, tag, key, 500);

    assert_int_equal(t->failed, 0);
    assert_int_equal(t->ok, 2000);
    assert_true(rg_redis_stats(t->r)->moved >= 1);

    v = rg_test_redis_cmd(b, "GET %s", key);
    assert_string_equal(v, "2000");
    free(v);

    /* and back, for the other tests */
    v = rg_test_redis_cmd(a, "CLUSTER SETSLOT %d IMPORTING %s", slot, to_id);
    free(v);
    v = rg_test_redis_cmd(b, "CLUSTER SETSLOT %d MIGRATING %s", slot,
                          from_id);
    free(v);
    v = rg_test_redis_cmd(b, "MIGRATE 127.0.0.1 %d %s 0 5000", a->port, key);
    free(v);
    for (k = 0; k < rg_test_c->n; k++) {
        v = rg_test_redis_cmd(rg_test_c->nodes[k], "CLUSTER SETSLOT %d NODE "
                              "%s", slot, from_id);
        free(v);
    }

    free(from_id);
    free(to_id);
}


typedef struct {
    struct event_base  *base;
    rg_uint_t           left;
    rg_int_t            rc[64];
    rg_uint_t           n;
    rg_uint_t           items;
    rg_uint_t           entries;      /* events read back, all sessions */
} rg_test_sctx_t;


static void
rg_test_store_answer(void *data, const rg_store_res_t *res)
{
    rg_test_sctx_t  *t = data;

    t->rc[t->n++ % 64] = res->rc;
    if (res->nitems) {
        t->items = res->nitems;
    }
    t->entries += res->nentries;

    if (--t->left == 0) {
        event_base_loopbreak(t->base);
    }
}


/* sessions spread over the nodes: checkpoints, loads and events by their
 * tags */
static void
test_store_sessions(void **state)
{
    int                     i;
    char                    id[32];
    rg_str_t                sid, msgs[2], fields[2], holder;
    rg_store_t             *st;
    rg_test_sctx_t          t;
    rg_store_redis_conf_t   conf;
    rg_store_checkpoint_t   cp;
    rg_store_event_t        evt;
    struct event           *ev;
    struct timeval          tv = { 20, 0 };

    memset(&t, 0, sizeof(t));
    t.base = event_base_new();

    memset(&conf, 0, sizeof(conf));
    conf.redis.host = "127.0.0.1";
    conf.redis.port = rg_test_c->nodes[1]->port;
    conf.redis.connections = 2;
    conf.redis.command_timeout = 10000;
    conf.redis.cluster = 1;
    conf.prefix = "rg:";

    st = rg_store_redis_create(t.base, NULL, &conf, rg_log_stderr());
    assert_non_null(st);

    msgs[0].data = "m1";
    msgs[0].len = 2;
    msgs[1].data = "m2";
    msgs[1].len = 2;
    fields[0].data = "status";
    fields[0].len = 6;
    fields[1].data = "done";
    fields[1].len = 4;
    holder.data = "w";
    holder.len = 1;

    for (i = 0; i < 30; i++) {
        snprintf(id, sizeof(id), "s-%d", i);
        sid.data = id;
        sid.len = strlen(id);

        memset(&cp, 0, sizeof(cp));
        cp.id = sid;
        cp.msgs = msgs;
        cp.nmsgs = 2;
        cp.fields = fields;
        cp.nfields = 1;
        cp.ttl = 60000;

        t.left += 3;
        st->lease(st, &sid, &holder, 0, 10000, rg_test_store_answer, &t);
        st->checkpoint(st, &cp, rg_test_store_answer, &t);
        st->load(st, &sid, rg_test_store_answer, &t);

        /* its events: a script of three keys, a range, on its node */
        memset(&evt, 0, sizeof(evt));
        evt.id = sid;
        evt.type.data = "x";
        evt.type.len = 1;
        evt.data.data = "{}";
        evt.data.len = 2;
        evt.max = 10;
        evt.ttl = 60000;

        t.left += 3;
        st->append(st, &evt, rg_test_store_answer, &t);
        st->append(st, &evt, rg_test_store_answer, &t);
        st->range(st, &sid, NULL, 10, rg_test_store_answer, &t);
    }

    ev = evtimer_new(t.base, rg_test_break, t.base);
    evtimer_add(ev, &tv);
    event_base_dispatch(t.base);
    event_free(ev);

    assert_int_equal(t.left, 0);
    for (i = 0; i < 64 && i < (int) t.n; i++) {
        assert_int_equal(t.rc[i], RG_OK);
    }
    assert_int_equal(t.items, 2);
    assert_int_equal(t.entries, 60);

    /* keys without a tag go where their whole name, prefix and all,
     * hashes: no redirects once the map is known */
    {
        uint64_t  moved = rg_redis_stats(rg_store_redis_client(st))->moved;
        char      k[32];
        rg_str_t  key, val = { 1, (char *) "v" };

        t.n = 0;
        for (i = 0; i < 40; i++) {
            snprintf(k, sizeof(k), "dd:g:%d", i);
            key.data = k;
            key.len = strlen(k);
            t.left++;
            st->set(st, &key, &val, 60000, 0, rg_test_store_answer, &t);
        }

        ev = evtimer_new(t.base, rg_test_break, t.base);
        evtimer_add(ev, &tv);
        event_base_dispatch(t.base);
        event_free(ev);

        assert_int_equal(t.left, 0);
        assert_int_equal(rg_redis_stats(rg_store_redis_client(st))->moved,
                         moved);
    }

    st->destroy(st);
    event_base_free(t.base);

    (void) state;
}


int
main(void)
{
    int  rc;

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_function),
        cmocka_unit_test_setup_teardown(test_routing, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_migration, rg_test_setup,
                                        rg_test_teardown),
        cmocka_unit_test(test_store_sessions),
    };

    signal(SIGPIPE, SIG_IGN);
    srandom(getpid());

    rg_test_c = rg_test_cluster_start(3);
    if (rg_test_c == NULL) {
        fprintf(stderr, "test_redis_cluster: cannot start a Redis Cluster "
                "(redis-server and redis-cli from deploy/deps.sh)\n");
        return 1;
    }

    rc = cmocka_run_group_tests(tests, NULL, NULL);

    rg_test_cluster_stop(rg_test_c);

    return rc;
}
