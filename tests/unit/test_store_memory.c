/* test_store_memory.c: the embedded store (src/store/rg_store_memory.c)
 * on a reactor of its own: answers come on the next loop turn, never
 * inside the call; the store is bounded in keys and in bytes, the oldest
 * keys going first; a value that can never fit is refused; the counters
 * follow overwrites and expiry. Then the `store` directive that sets the
 * bounds, events_max, events_ttl and session_ttl (none of them 0:
 * nothing the store writes lives forever; src/store/rg_store_conf.c). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store_conf.h>
#include <rg_store.h>
#include <rg_test.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <event2/event.h>


typedef struct {
    struct event_base  *base;
    rg_store_t         *st;
    rg_uint_t           answers;
    char                value[256];
    int                 found;
    rg_int_t            rc;
} rg_test_ctx_t;


static int
rg_test_setup(void **state)
{
    rg_test_ctx_t  *t;

    t = calloc(1, sizeof(rg_test_ctx_t));
    if (t == NULL) {
        return -1;
    }

    t->base = event_base_new();
    *state = t;

    return t->base == NULL ? -1 : 0;
}


static int
rg_test_teardown(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    if (t->st) {
        t->st->destroy(t->st);
    }

    event_base_free(t->base);
    free(t);

    return 0;
}


static void
rg_test_got(void *data, const rg_store_res_t *res)
{
    rg_test_ctx_t  *t;

    t = data;
    t->answers++;
    t->found = res->rc == RG_OK;
    t->rc = res->rc;
    snprintf(t->value, sizeof(t->value), "%.*s", (int) res->value.len,
             res->value.data ? res->value.data : "");
}


/* GET key, answered on the next turn of the loop */
static const char *
rg_test_get(rg_test_ctx_t *t, const char *key)
{
    rg_uint_t  before;
    rg_str_t   k = { strlen(key), (char *) key };

    before = t->answers;

    assert_non_null(t->st->get(t->st, &k, rg_test_got, t));
    assert_int_equal(t->answers, before);      /* never inside the call */

    assert_int_not_equal(event_base_loop(t->base, EVLOOP_NONBLOCK), -1);
    assert_int_equal(t->answers, before + 1);

    return t->found ? t->value : NULL;
}


/* SET key value; its answer's rc */
static rg_int_t
rg_test_set(rg_test_ctx_t *t, const char *key, const char *value,
    size_t vlen, rg_msec_t ttl)
{
    rg_uint_t  before;
    rg_str_t   k = { strlen(key), (char *) key };
    rg_str_t   v = { vlen, (char *) value };

    before = t->answers;

    assert_non_null(t->st->set(t->st, &k, &v, ttl, 0, rg_test_got, t));
    assert_int_not_equal(event_base_loop(t->base, EVLOOP_NONBLOCK), -1);
    assert_int_equal(t->answers, before + 1);

    return t->rc;
}


#define RG_TEST_COST(klen, vlen)  (RG_STORE_MEMORY_KEY_COST + (klen) + (vlen))


static void
rg_test_keys_bound(void **state)
{
    rg_test_ctx_t  *t = *state;
    char            key[16];
    rg_uint_t       i;

    t->st = rg_store_memory_create(t->base, 3, 0);
    assert_non_null(t->st);

    for (i = 0; i < 5; i++) {
        snprintf(key, sizeof(key), "k%lu", (unsigned long) i);
        assert_int_equal(rg_test_set(t, key, "v", 1, 0), RG_OK);
    }

    assert_int_equal(t->st->stats.keys, 3);
    assert_int_equal(t->st->stats.evicted, 2);
    assert_null(rg_test_get(t, "k0"));
    assert_null(rg_test_get(t, "k1"));
    assert_string_equal(rg_test_get(t, "k2"), "v");
    assert_string_equal(rg_test_get(t, "k4"), "v");
}


static void
rg_test_bytes_bound(void **state)
{
    rg_test_ctx_t  *t = *state;
    char           *big;
    char            key[16];
    rg_uint_t       i;

    /* room for three keys of 600 bytes, never more than 2400 bytes */
    t->st = rg_store_memory_create(t->base, 1000, 2400);
    assert_non_null(t->st);

    big = malloc(600);
    assert_non_null(big);
    memset(big, 'x', 600);

    for (i = 0; i < 10; i++) {
        snprintf(key, sizeof(key), "k%lu", (unsigned long) i);
        assert_int_equal(rg_test_set(t, key, big, 600, 0), RG_OK);
        assert_true(t->st->stats.bytes <= 2400);
    }

    /* 3 entries fit; the oldest went first */
    assert_int_equal(t->st->stats.keys, 3);
    assert_int_equal(t->st->stats.bytes, 3 * RG_TEST_COST(2, 600));
    assert_int_equal(t->st->stats.evicted, 7);
    assert_null(rg_test_get(t, "k6"));
    assert_non_null(rg_test_get(t, "k7"));
    assert_non_null(rg_test_get(t, "k9"));

    /* an overwrite counts once */
    assert_int_equal(rg_test_set(t, "k9", "small", 5, 0), RG_OK);
    assert_int_equal(t->st->stats.bytes, 2 * RG_TEST_COST(2, 600)
                                         + RG_TEST_COST(2, 5));
    assert_string_equal(rg_test_get(t, "k9"), "small");

    free(big);
}


static void
rg_test_too_big(void **state)
{
    rg_test_ctx_t  *t = *state;
    char           *big;
    size_t          fit;

    t->st = rg_store_memory_create(t->base, 10, 1024);
    assert_non_null(t->st);

    assert_int_equal(rg_test_set(t, "a", "1", 1, 0), RG_OK);
    assert_int_equal(rg_test_set(t, "b", "2", 1, 0), RG_OK);

    big = calloc(1, 1024);
    assert_non_null(big);

    /* refused; its key's old value is gone with it */
    assert_int_equal(rg_test_set(t, "a", big, 1024, 0), RG_ERROR);
    assert_null(rg_test_get(t, "a"));

    /* one that just fits takes the whole store */
    fit = 1024 - RG_TEST_COST(1, 0);
    assert_int_equal(rg_test_set(t, "c", big, fit, 0), RG_OK);
    assert_int_equal(t->st->stats.keys, 1);
    assert_int_equal(t->st->stats.bytes, 1024);

    free(big);
}


static void
rg_test_expired_bytes(void **state)
{
    rg_test_ctx_t  *t = *state;

    t->st = rg_store_memory_create(t->base, 10, 4096);
    assert_non_null(t->st);

    assert_int_equal(rg_test_set(t, "gone", "soon", 4, 1), RG_OK);
    assert_int_equal(t->st->stats.bytes, RG_TEST_COST(4, 4));

    usleep(20 * 1000);

    assert_null(rg_test_get(t, "gone"));
    assert_int_equal(t->st->stats.expired, 1);
    assert_int_equal(t->st->stats.keys, 0);
    assert_int_equal(t->st->stats.bytes, 0);
}


/* the directive: store memory max_keys=N max_bytes=SIZE; */
static void
rg_test_directive(void **state)
{
    char         err[512];
    rg_cycle_t  *cycle;

    (void) state;

    cycle = rg_test_cycle(err, sizeof(err),
                          "llm m { base_url http://127.0.0.1:9/v1; "
                          "model m; }\nagent a { }\n");
    assert_non_null(cycle);
    assert_int_equal(rg_store_conf(cycle)->max_keys, 100000);
    assert_int_equal(rg_store_conf(cycle)->max_bytes, 64 * 1024 * 1024);
    assert_int_equal(rg_store_conf(cycle)->events_max, 1000);
    assert_int_equal(rg_store_conf(cycle)->events_ttl, 3600 * 1000);
    rg_cycle_destroy(cycle);

    cycle = rg_test_cycle(err, sizeof(err),
                          "events_max 50;\nevents_ttl 10m;\n"
                          "llm m { base_url http://127.0.0.1:9/v1; "
                          "model m; }\nagent a { }\n");
    assert_non_null(cycle);
    assert_int_equal(rg_store_conf(cycle)->events_max, 50);
    assert_int_equal(rg_store_conf(cycle)->events_ttl, 600 * 1000);
    rg_cycle_destroy(cycle);

    assert_null(rg_test_cycle(err, sizeof(err), "\nevents_max 0;\n"));
    assert_string_equal(err, "\"events_max\" directive expects a number "
                             "from 1 to 1000000 in test.conf:2");

    assert_null(rg_test_cycle(err, sizeof(err), "events_ttl 0;\n"));
    assert_string_equal(err, "\"events_ttl\" directive must be more than "
                             "0 in test.conf:1");

    /* nothing the store writes may live forever */
    assert_null(rg_test_cycle(err, sizeof(err), "session_ttl 0;\n"));
    assert_string_equal(err, "\"session_ttl\" directive must be more than "
                             "0 in test.conf:1");

    cycle = rg_test_cycle(err, sizeof(err),
                          "store memory max_bytes=16m max_keys=500;\n"
                          "llm m { base_url http://127.0.0.1:9/v1; "
                          "model m; }\nagent a { }\n");
    assert_non_null(cycle);
    assert_int_equal(rg_store_conf(cycle)->max_keys, 500);
    assert_int_equal(rg_store_conf(cycle)->max_bytes, 16 * 1024 * 1024);
    rg_cycle_destroy(cycle);

    assert_null(rg_test_cycle(err, sizeof(err), "store redis;\n"));
    assert_string_equal(err, "\"store\" directive expects a block: store "
                             "redis { server HOST:PORT; } in test.conf:1");

    assert_null(rg_test_cycle(err, sizeof(err), "store disk;\n"));
    assert_string_equal(err, "\"store\" directive expects \"memory\" or "
                             "\"redis\" in test.conf:1");

    assert_null(rg_test_cycle(err, sizeof(err), "store memory { }\n"));
    assert_string_equal(err, "\"store\" directive takes no block with "
                             "\"memory\": store memory max_keys=N "
                             "max_bytes=SIZE; in test.conf:1");

    assert_null(rg_test_cycle(err, sizeof(err), "store redis { }\n"));
    assert_string_equal(err, "\"store redis\" needs a \"server\" "
                             "(HOST:PORT or unix:/PATH) in test.conf:1");

    assert_null(rg_test_cycle(err, sizeof(err), "\nstore redis {\n"
                              "server 127.0.0.1:70000;\n}\n"));
    assert_string_equal(err, "\"server\" \"127.0.0.1:70000\" has an "
                             "invalid port in test.conf:3");

    assert_null(rg_test_cycle(err, sizeof(err), "store redis { server a:1; "
                              "server b:2; }\n"));
    assert_string_equal(err, "\"store redis\" names 2 servers: more than "
                             "one is for a cluster (\"cluster on;\") in "
                             "test.conf:1");

    assert_null(rg_test_cycle(err, sizeof(err), "store redis { server a:1; "
                              "cluster on; database 2; }\n"));
    assert_string_equal(err, "a cluster has only database 0: \"database "
                             "2\" cannot be used with \"cluster on\" in "
                             "test.conf:1");

    assert_null(rg_test_cycle(err, sizeof(err), "store redis { server a:1; "
                              "password_env RG_TEST_NO_SUCH_VAR; }\n"));
    assert_string_equal(err, "\"password_env\" names RG_TEST_NO_SUCH_VAR, "
                             "which is not set in test.conf:1");

    assert_null(rg_test_cycle(err, sizeof(err), "server a:1;\n"));
    assert_string_equal(err, "\"server\" directive is not allowed here; it "
                             "belongs inside store redis { } in test.conf:1");

    assert_null(rg_test_cycle(err, sizeof(err),
                              "store memory max_bytes=100;\n"));
    assert_string_equal(err, "\"store\" directive expects max_bytes=SIZE "
                             "of 1k or more, such as 64m in test.conf:1");

    assert_null(rg_test_cycle(err, sizeof(err),
                              "store memory max_keys=0;\n"));
    assert_string_equal(err, "\"store\" directive expects max_keys=N with "
                             "N of 1 or more in test.conf:1");

    assert_null(rg_test_cycle(err, sizeof(err), "store memory size=1;\n"));
    assert_string_equal(err, "\"store\" directive expects max_keys=N or "
                             "max_bytes=SIZE in test.conf:1");

    assert_null(rg_test_cycle(err, sizeof(err),
                              "store memory;\nstore memory;\n"));
    assert_string_equal(err, "\"store\" directive is duplicate in "
                             "test.conf:2");
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup_teardown(rg_test_keys_bound,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_bytes_bound,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_too_big,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_expired_bytes,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test(rg_test_directive),
    };

    return cmocka_run_group_tests_name("store_memory", tests, NULL, NULL);
}
