/* test_context.c: context management (src/agent/rg_context.c and its use in
 * src/agent/rg_session.c).
 *
 * 1. A property test of rg_context_compact(): random conversations built
 *    with rg_msgs_append() (system prompts, the task, rounds of 0..4 tool
 *    calls with results of random size in 1- to 4-byte UTF-8, plain
 *    assistant and user messages), compacted to random targets with keep_rounds 0..3.
 *    After each compaction rg_context_check() passes, the head (system
 *    prompts and task) and the last keep_rounds rounds are untouched (same
 *    pointers, same bytes), the bytes fit the target or nothing droppable
 *    is left, nothing is dropped that did not have to go, and the dropped
 *    messages come out as whole rounds, oldest first. A failure prints the
 *    seed and the iteration; RG_TEST_SEED=N replays another seed.
 * 2. Through the loop, against the mock model (tests/mock/rg_mock.c, which
 *    rejects a request whose tool messages do not answer the assistant
 *    message before them): compaction before a call, summaries of dropped
 *    rounds, and a provider's context_length_exceeded (compact and retry
 *    once; a second one fails the session with the provider's words).
 *    Scripts: tests/integration/context_*.json. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>
#include <rg_transcript.h>
#include <rg_test_fixtures.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <event2/event.h>


#define RG_TEST_SCRIPTS       "tests/integration/"
#define RG_TEST_SEED_DEFAULT  0x5eed2024u
#define RG_TEST_ITERATIONS    1500
#define RG_TEST_MAX_MSGS      200


/* part 1: the property test ------------------------------------------ */

typedef struct {
    uint64_t            s;
} rg_test_rand_t;


static uint32_t
rg_test_rand(rg_test_rand_t *r)
{
    /* xorshift64*: the same numbers on every platform */
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;

    return (uint32_t) ((r->s * 2685821657736338717ULL) >> 32);
}


static uint32_t
rg_test_below(rg_test_rand_t *r, uint32_t n)
{
    return n ? rg_test_rand(r) % n : 0;
}


/* what a message was before compaction */
typedef struct {
    rg_msg_t           *msg;
    char               *data;         /* its json.data pointer */
    char               *copy;         /* its bytes, malloc'ed */
    size_t              len;
    uint8_t             role;
} rg_test_snap_t;


typedef struct {
    rg_pool_t          *pool;
    rg_msgs_t           m;
    rg_test_snap_t      snap[RG_TEST_MAX_MSGS];
    rg_uint_t           n;
    rg_uint_t           head;         /* system prompts and the task */
    rg_uint_t           tail;         /* index where the kept rounds start */
    size_t              bytes;
    char                err[512];
} rg_test_conv_t;


static void
rg_test_append(rg_test_conv_t *c, uint8_t role, json_t *j, rg_uint_t ncalls)
{
    char      *text;
    rg_msg_t  *msg;

    text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    assert_non_null(text);

    assert_int_equal(rg_msgs_append(&c->m, c->pool, role, text, strlen(text),
                                    1), RG_OK);
    free(text);

    msg = rg_msgs_last(&c->m);
    assert_non_null(msg);
    msg->ncalls = (uint16_t) ncalls;
}


/* random text of about len bytes: ASCII with 2-, 3- and 4-byte UTF-8 */
static json_t *
rg_test_text(rg_test_rand_t *r, size_t len)
{
    static const char  *pieces[] = { "a", "b", "z", " ", "\n", "\"", "\\",
                                     "\xc3\xa9", "\xe2\x82\xac",
                                     "\xf0\x9f\x98\x80", "0", "{" };
    json_t      *j;
    rg_buf_t     b;
    const char  *p;

    memset(&b, 0, sizeof(b));

    while (b.len < len) {
        p = pieces[rg_test_below(r, rg_nelems(pieces))];
        assert_int_equal(rg_buf_append(&b, p, strlen(p)), RG_OK);
    }

    j = json_stringn(b.data ? b.data : "", b.len);
    rg_buf_free(&b);
    assert_non_null(j);

    return j;
}


/* a random conversation as a session builds it */
static void
rg_test_conv_build(rg_test_conv_t *c, rg_test_rand_t *r)
{
    char        id[32];
    json_t     *calls, *j;
    rg_uint_t   i, k, nsys, units, ncalls, size;

    rg_msgs_init(&c->m);

    /* mostly one system prompt; sometimes none, sometimes two */
    nsys = rg_test_below(r, 4) == 0 ? 0 : 1 + rg_test_below(r, 4) / 3;

    for (i = 0; i < nsys; i++) {
        rg_test_append(c, 's', json_pack("{s:s, s:s}", "role", "system",
                                         "content", "You are a test."), 0);
    }

    rg_test_append(c, 'u', json_pack("{s:s, s:s}", "role", "user",
                                     "content", "the task"), 0);

    units = rg_test_below(r, 12);

    for (i = 0; i < units && c->m.n < RG_TEST_MAX_MSGS - 8; i++) {
        switch (rg_test_below(r, 10)) {

        case 0:
            size = 1 + rg_test_below(r, 300);
            rg_test_append(c, 'u', json_pack("{s:s, s:o}", "role", "user",
                                             "content", rg_test_text(r, size)),
                           0);
            continue;

        case 1:
            size = 1 + rg_test_below(r, 300);
            rg_test_append(c, 'a', json_pack("{s:s, s:o}", "role",
                                             "assistant", "content",
                                             rg_test_text(r, size)), 0);
            continue;

        default:
            break;
        }

        ncalls = rg_test_below(r, 5);
        calls = json_array();
        assert_non_null(calls);

        for (k = 0; k < ncalls; k++) {
            snprintf(id, sizeof(id), "call_%lu_%lu", (unsigned long) i,
                     (unsigned long) k);
            json_array_append_new(calls,
                json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", id,
                          "type", "function", "function", "name", "echo",
                          "arguments", "{\"text\":\"x\"}"));
        }

        if (ncalls) {
            j = json_pack("{s:s, s:n, s:o}", "role", "assistant",
                          "content", "tool_calls", calls);
        } else {
            json_decref(calls);
            j = json_pack("{s:s, s:s}", "role", "assistant",
                          "content", "no calls");
        }

        rg_test_append(c, 'a', j, ncalls);

        for (k = 0; k < ncalls; k++) {
            snprintf(id, sizeof(id), "call_%lu_%lu", (unsigned long) i,
                     (unsigned long) k);

            /* mostly small, sometimes far beyond what shortening keeps */
            size = rg_test_below(r, 3) == 0 ? rg_test_below(r, 4000)
                                            : rg_test_below(r, 400);

            rg_test_append(c, 't', json_pack("{s:s, s:s, s:o}", "role",
                                             "tool", "tool_call_id", id,
                                             "content",
                                             rg_test_text(r, size)), 0);
        }
    }
}


/* remembers every message; works out the head and the protected tail the
 * way the header promises: a round is a message that is not a tool
 * message, with the tool messages after it */
static void
rg_test_conv_snap(rg_test_conv_t *c, rg_uint_t keep)
{
    rg_uint_t   i, rounds, seen;
    rg_msg_t   *msg;

    c->n = 0;
    c->bytes = c->m.bytes;

    for (msg = c->m.head; msg; msg = msg->next) {
        assert_true(c->n < RG_TEST_MAX_MSGS);

        c->snap[c->n].msg = msg;
        c->snap[c->n].data = msg->json.data;
        c->snap[c->n].len = msg->json.len;
        c->snap[c->n].role = msg->role;
        c->snap[c->n].copy = malloc(msg->json.len + 1);
        assert_non_null(c->snap[c->n].copy);
        memcpy(c->snap[c->n].copy, msg->json.data, msg->json.len);
        c->n++;
    }

    for (i = 0; i < c->n && c->snap[i].role == 's'; i++) {
        /* void */
    }

    if (i < c->n && c->snap[i].role == 'u') {
        i++;
    }

    c->head = i;

    rounds = 0;
    for (i = c->head; i < c->n; i++) {
        rounds += c->snap[i].role != 't';
    }

    c->tail = c->n;

    if (keep && rounds) {
        seen = 0;
        for (i = c->head; i < c->n; i++) {
            if (c->snap[i].role != 't') {
                if (rounds - seen <= keep) {
                    c->tail = i;
                    break;
                }
                seen++;
            }
        }
    }
}


/* the bytes left when the oldest k rounds of the body go whole */
static size_t
rg_test_conv_without(rg_test_conv_t *c, rg_uint_t k)
{
    size_t     bytes;
    rg_uint_t  i;

    bytes = c->bytes;

    for (i = c->head; i < c->tail; i++) {
        if (c->snap[i].role != 't' && k-- == 0) {
            break;
        }
        bytes -= c->snap[i].len;
    }

    return bytes;
}


static void
rg_test_conv_free(rg_test_conv_t *c)
{
    rg_uint_t  i;

    for (i = 0; i < c->n; i++) {
        free(c->snap[i].copy);
    }

    c->n = 0;
}


static rg_uint_t
rg_test_same(rg_test_snap_t *sn)
{
    return sn->msg->json.data == sn->data && sn->msg->json.len == sn->len
           && memcmp(sn->msg->json.data, sn->copy, sn->len) == 0;
}


#define rg_test_prop(c, cond, ...)                                           \
    do {                                                                     \
        if (!(cond)) {                                                       \
            snprintf((c)->err, sizeof((c)->err), __VA_ARGS__);               \
            return RG_ERROR;                                                 \
        }                                                                    \
    } while (0)


/* a shortened tool message: valid JSON, the same id, shorter, marked */
static rg_int_t
rg_test_check_shortened(rg_test_conv_t *c, rg_test_snap_t *sn, rg_uint_t i)
{
    json_t       *now, *before;
    const char   *content;
    rg_int_t      rc;

    now = json_loadb(sn->msg->json.data, sn->msg->json.len, 0, NULL);
    before = json_loadb(sn->copy, sn->len, 0, NULL);

    rc = RG_ERROR;

    if (now == NULL || before == NULL) {
        snprintf(c->err, sizeof(c->err), "message %lu: shortened to text "
                 "that is not JSON", (unsigned long) i);
        goto done;
    }

    content = json_string_value(json_object_get(now, "content"));

    if (!json_equal(json_object_get(now, "tool_call_id"),
                    json_object_get(before, "tool_call_id"))
        || !json_equal(json_object_get(now, "role"),
                       json_object_get(before, "role"))
        || content == NULL
        || strstr(content, "(shortened to save context)") == NULL
        || sn->msg->json.len >= sn->len)
    {
        snprintf(c->err, sizeof(c->err), "message %lu: badly shortened: "
                 "%.200s", (unsigned long) i, sn->msg->json.data);
        goto done;
    }

    rc = RG_OK;

done:

    json_decref(now);
    json_decref(before);

    return rc;
}


static rg_int_t
rg_test_conv_check(rg_test_conv_t *c, size_t target, rg_uint_t keep,
    rg_context_result_t *res)
{
    char         err[256];
    size_t       unit;
    rg_uint_t    i, j, d, rounds;
    rg_msg_t    *msg, *list[RG_TEST_MAX_MSGS];
    rg_uint_t    nlist;

    rg_test_prop(c, rg_context_check(&c->m, err, sizeof(err)) == RG_OK,
                 "rg_context_check: %s", err);

    nlist = 0;
    for (msg = c->m.head; msg; msg = msg->next) {
        rg_test_prop(c, nlist < RG_TEST_MAX_MSGS, "the list grew");
        list[nlist++] = msg;
    }

    d = res->dropped_msgs;

    rg_test_prop(c, nlist + d == c->n, "%lu messages kept and %lu dropped "
                 "of %lu", (unsigned long) nlist, (unsigned long) d,
                 (unsigned long) c->n);

    /* the head: same messages, same bytes, first */
    for (i = 0; i < c->head; i++) {
        rg_test_prop(c, list[i] == c->snap[i].msg && rg_test_same(&c->snap[i]),
                     "head message %lu changed or moved", (unsigned long) i);
    }

    /* the dropped ones: the oldest of the body, whole rounds, in order */
    rg_test_prop(c, c->head + d <= c->tail, "%lu messages dropped, but only "
                 "%lu may go (keep_rounds %lu)", (unsigned long) d,
                 (unsigned long) (c->tail - c->head), (unsigned long) keep);

    rg_test_prop(c, c->head + d == c->n || c->snap[c->head + d].role != 't',
                 "the drop ends inside a round (message %lu is a tool "
                 "message)", (unsigned long) (c->head + d));

    msg = res->dropped;
    rounds = 0;

    for (i = 0; i < d; i++) {
        rg_test_prop(c, msg == c->snap[c->head + i].msg, "dropped message "
                     "%lu is not message %lu of before", (unsigned long) i,
                     (unsigned long) (c->head + i));
        rounds += msg->role != 't';
        msg = msg->next;
    }

    rg_test_prop(c, msg == NULL, "the dropped list goes on past %lu",
                 (unsigned long) d);
    rg_test_prop(c, rounds == res->dropped_rounds, "dropped_rounds %lu, "
                 "counted %lu", (unsigned long) res->dropped_rounds,
                 (unsigned long) rounds);

    /* what is kept after the head is the rest, in order */
    for (i = c->head; i < nlist; i++) {
        rg_test_prop(c, list[i] == c->snap[i + d].msg, "kept message %lu "
                     "is not message %lu of before", (unsigned long) i,
                     (unsigned long) (i + d));
    }

    /* the last keep_rounds rounds are untouched; in between only tool
     * results may have been shortened */
    for (j = c->head; j < c->n; j++) {
        if (j >= c->tail) {
            rg_test_prop(c, rg_test_same(&c->snap[j])
                            && !c->snap[j].msg->shortened,
                         "message %lu of the last %lu rounds changed",
                         (unsigned long) j, (unsigned long) keep);
            continue;
        }

        if (rg_test_same(&c->snap[j])) {
            continue;
        }

        rg_test_prop(c, c->snap[j].role == 't' && c->snap[j].msg->shortened,
                     "message %lu (role '%c') changed", (unsigned long) j,
                     c->snap[j].role);

        if (rg_test_check_shortened(c, &c->snap[j], j) != RG_OK) {
            return RG_ERROR;
        }
    }

    rg_test_prop(c, c->bytes - c->m.bytes == res->saved, "saved %lu, but "
                 "%lu bytes went", (unsigned long) res->saved,
                 (unsigned long) (c->bytes - c->m.bytes));

    if (c->bytes <= target) {
        rg_test_prop(c, d == 0 && res->shortened == 0 && res->saved == 0,
                     "compacted a conversation that fit");
        return RG_OK;
    }

    /* it fits, or nothing that may go is left */
    rg_test_prop(c, c->m.bytes <= target || c->head + d == c->tail,
                 "%lu bytes for a target of %lu, and %lu messages could "
                 "still go", (unsigned long) c->m.bytes,
                 (unsigned long) target,
                 (unsigned long) (c->tail - c->head - d));

    /* and no round went that did not have to: without the last one
     * dropped it did not fit */
    if (d) {
        for (i = d; i > 0 && c->snap[c->head + i - 1].role == 't'; i--) {
            /* back to the start of the last dropped round */
        }

        unit = 0;
        for (j = c->head + i - 1; j < c->head + d; j++) {
            unit += c->snap[j].msg->json.len;
        }

        rg_test_prop(c, c->m.bytes + unit > target, "dropped one round too "
                     "many: %lu + %lu bytes fit the target of %lu",
                     (unsigned long) c->m.bytes, (unsigned long) unit,
                     (unsigned long) target);
    }

    return RG_OK;
}


static uint64_t
rg_test_seed(void)
{
    const char  *s;

    s = getenv("RG_TEST_SEED");

    return s && *s ? strtoull(s, NULL, 0) : RG_TEST_SEED_DEFAULT;
}


static void
rg_test_compact_property(void **state)
{
    size_t               target;
    uint64_t             seed;
    rg_uint_t            it, keep, compacted, dropped, shortened, full;
    rg_uint_t            exact;
    rg_test_rand_t       r;
    rg_test_conv_t      *c;
    rg_context_result_t  res;

    seed = rg_test_seed();
    r.s = seed ? seed : 1;

    c = calloc(1, sizeof(rg_test_conv_t));
    assert_non_null(c);

    compacted = dropped = shortened = full = exact = 0;

    for (it = 0; it < RG_TEST_ITERATIONS; it++) {
        c->pool = rg_pool_create(4096);
        assert_non_null(c->pool);

        rg_test_conv_build(c, &r);

        keep = rg_test_below(&r, 4);
        rg_test_conv_snap(c, keep);

        /* anywhere from nothing to a little more than everything, and
         * exactly what is left without the oldest k rounds */
        switch (rg_test_below(&r, 8)) {
        case 0:
            target = 0;
            break;
        case 1:
            target = c->m.bytes + rg_test_below(&r, 100);
            break;
        case 2:
            target = rg_test_conv_without(c, 1 + rg_test_below(&r, 3));
            break;
        default:
            target = rg_test_below(&r, (uint32_t) c->m.bytes + 1);
            break;
        }

        if (rg_context_compact(&c->m, c->pool, target, keep, &res) != RG_OK
            || rg_test_conv_check(c, target, keep, &res) != RG_OK)
        {
            print_error("seed 0x%llx, iteration %lu (%lu messages, %lu bytes,"
                        " target %lu, keep_rounds %lu): %s\n"
                        "replay with RG_TEST_SEED=0x%llx\n",
                        (unsigned long long) seed, (unsigned long) it,
                        (unsigned long) c->n, (unsigned long) c->bytes,
                        (unsigned long) target, (unsigned long) keep,
                        c->err[0] ? c->err : "rg_context_compact failed",
                        (unsigned long long) seed);
            rg_test_conv_free(c);
            rg_pool_destroy(c->pool);
            free(c);
            fail();
        }

        compacted += res.saved > 0;
        exact += c->m.bytes == target;
        dropped += res.dropped_rounds > 0;
        shortened += res.shortened > 0;
        full += c->m.bytes > target;

        rg_test_conv_free(c);
        rg_pool_destroy(c->pool);
        c->err[0] = '\0';
    }

    free(c);

    /* the generator reaches every case that matters */
    assert_true(compacted > RG_TEST_ITERATIONS / 4);
    assert_true(exact > RG_TEST_ITERATIONS / 50);
    assert_true(dropped > RG_TEST_ITERATIONS / 10);
    assert_true(shortened > RG_TEST_ITERATIONS / 20);
    assert_true(full > RG_TEST_ITERATIONS / 20);
}


/* a summary goes right after the task, and is itself a droppable unit */
static void
rg_test_insert_after_task(void **state)
{
    char                 err[256];
    rg_msg_t            *sum, *msg;
    rg_pool_t           *pool;
    rg_msgs_t            m;
    rg_context_result_t  res;
    static const char    sys[] = "{\"role\":\"system\",\"content\":\"s\"}";
    static const char    task[] = "{\"role\":\"user\",\"content\":\"t\"}";
    static const char    text[] = "{\"role\":\"user\",\"content\":"
                                  "\"Summary of earlier rounds\"}";
    static const char    a[] = "{\"role\":\"assistant\",\"content\":null,"
                               "\"tool_calls\":[{\"id\":\"c1\",\"type\":"
                               "\"function\",\"function\":{\"name\":\"e\","
                               "\"arguments\":\"{}\"}}]}";
    static const char    tm[] = "{\"role\":\"tool\",\"tool_call_id\":\"c1\","
                                "\"content\":\"r\"}";

    pool = rg_pool_create(1024);
    assert_non_null(pool);

    /* only the head: the summary becomes the last message */
    rg_msgs_init(&m);
    assert_int_equal(rg_msgs_append(&m, pool, 's', sys, sizeof(sys) - 1, 0),
                     RG_OK);
    assert_int_equal(rg_msgs_append(&m, pool, 'u', task, sizeof(task) - 1,
                                    0), RG_OK);

    sum = rg_pcalloc(pool, sizeof(rg_msg_t));
    assert_non_null(sum);
    sum->role = 'u';
    sum->json.data = (char *) text;
    sum->json.len = sizeof(text) - 1;

    rg_context_insert_after_task(&m, sum);

    assert_int_equal(rg_context_check(&m, err, sizeof(err)), RG_OK);
    assert_ptr_equal(rg_msgs_last(&m), sum);
    assert_ptr_equal(m.head->next->next, sum);

    /* appending after it still works */
    assert_int_equal(rg_msgs_append(&m, pool, 'a', a, sizeof(a) - 1, 0),
                     RG_OK);
    rg_msgs_last(&m)->ncalls = 1;
    assert_int_equal(rg_msgs_append(&m, pool, 't', tm, sizeof(tm) - 1, 0),
                     RG_OK);
    assert_int_equal(rg_context_check(&m, err, sizeof(err)), RG_OK);

    /* the oldest unit of the body now: it goes first, alone */
    assert_int_equal(rg_context_compact(&m, pool, m.bytes - 1, 1, &res),
                     RG_OK);
    assert_int_equal(rg_context_check(&m, err, sizeof(err)), RG_OK);
    assert_int_equal(res.dropped_rounds, 1);
    assert_int_equal(res.dropped_msgs, 1);
    assert_ptr_equal(res.dropped, sum);
    assert_null(sum->next);

    msg = m.head->next->next;
    assert_non_null(msg);
    assert_int_equal(msg->role, 'a');
    assert_int_equal(m.n, 4);

    rg_pool_destroy(pool);
}


/* part 2: through the loop ------------------------------------------- */

typedef struct {
    rg_test_mock_t     *mock;
    rg_cycle_t         *cycle;
    rg_engine_t        *engine;
    rg_session_t       *s;
    json_t             *json;         /* any parsed answer, released */
    json_t             *calls;        /* the transcript's model calls */
    char               *text;
    char                dir[64];      /* the fs root, when there is one */
    char                err[512];
} rg_test_ctx_t;


static int
rg_test_setup(void **state)
{
    *state = calloc(1, sizeof(rg_test_ctx_t));

    return *state == NULL ? -1 : 0;
}


static void
rg_test_rmdir(const char *dir)
{
    char  path[128];

    if (dir[0] == '\0') {
        return;
    }

    snprintf(path, sizeof(path), "%s/README.md", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/small.txt", dir);
    unlink(path);
    rmdir(dir);
}


static void
rg_test_stop(rg_test_ctx_t *t)
{
    rg_session_destroy(t->s);
    rg_engine_destroy(t->engine);
    rg_cycle_destroy(t->cycle);
    rg_test_mock_stop(t->mock);

    t->s = NULL;
    t->engine = NULL;
    t->cycle = NULL;
    t->mock = NULL;
}


static int
rg_test_teardown(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_stop(t);
    rg_test_rmdir(t->dir);

    json_decref(t->json);
    json_decref(t->calls);
    free(t->text);
    free(t);

    return 0;
}


/* an fs root holding README.md of `size` bytes of prose, and small.txt */
static void
rg_test_fs_root(rg_test_ctx_t *t, size_t size)
{
    char    path[128];
    FILE   *f;
    size_t  n;

    snprintf(t->dir, sizeof(t->dir), "/tmp/rg-ctx-XXXXXX");
    assert_non_null(mkdtemp(t->dir));

    snprintf(path, sizeof(path), "%s/README.md", t->dir);
    f = fopen(path, "w");
    assert_non_null(f);

    for (n = 0; n < size; n += 50) {
        fprintf(f, "line %06zu of a long file that fills the context.\n", n);
    }

    fclose(f);

    snprintf(path, sizeof(path), "%s/small.txt", t->dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("small", f);
    fclose(f);
}


/* a cycle and an engine: modules calc and fs (rooted at t->dir), llm
 * "mock" at the mock's port (with `llm` in its block), agent "a" made of
 * `agent`, and `main` at the top */
static void
rg_test_engine_ex(rg_test_ctx_t *t, const char *main, const char *llm,
    const char *agent)
{
    const char  *b;

    b = rg_test_build_dir();

    t->cycle = rg_test_cycle(t->err, sizeof(t->err),
        "%s\n"
        "load_module %s/modules/calc.so;\n"
        "load_module %s/modules/fs.so;\n"
        "module fs { root %s; }\n"
        "llm mock {\n"
        "    base_url http://127.0.0.1:%d/v1;\n"
        "    model mock-1;\n"
        "    retry_base 20ms;\n"
        "    %s\n"
        "}\n"
        "agent a {\n"
        "    system_prompt \"You are a test.\";\n"
        "    %s\n"
        "}\n",
        main, b, b, t->dir[0] ? t->dir : "/tmp", t->mock->port, llm, agent);

    t->engine = rg_test_engine_of(t->cycle, t->err);
}


static void
rg_test_engine(rg_test_ctx_t *t, const char *agent)
{
    rg_test_engine_ex(t, "", "", agent);
}


/* runs one task on agent "a", recorded, to its end */
static rg_session_t *
rg_test_session(rg_test_ctx_t *t, const char *input)
{
    rg_uint_t         left;
    rg_agent_conf_t  *a;

    rg_session_destroy(t->s);

    a = rg_agent_find(t->cycle, "a", 1);
    assert_non_null(a);

    left = 1;
    t->s = rg_session_create(t->engine, a, NULL, input, strlen(input),
                             NULL, &left);
    assert_non_null(t->s);
    assert_int_equal(rg_transcript_start(t->s), RG_OK);

    rg_session_start(t->s);

    while (!rg_session_final(t->s)) {
        assert_int_equal(event_base_loop(t->engine->base, EVLOOP_ONCE), 0);
    }

    return t->s;
}


static json_t *
rg_test_get(rg_test_ctx_t *t, const char *path)
{
    char  *body;

    body = rg_test_mock_get(t->mock, path);
    assert_non_null(body);

    json_decref(t->json);
    t->json = json_loads(body, 0, NULL);
    free(body);

    assert_non_null(t->json);

    return t->json;
}


static long
rg_test_stat(rg_test_ctx_t *t, const char *field)
{
    json_t  *v;

    v = json_object_get(rg_test_get(t, "/stats"), field);
    assert_true(json_is_integer(v));

    return (long) json_integer_value(v);
}


/* the body of the last request the mock saw, compact, malloc'ed */
static char *
rg_test_last_body(rg_test_ctx_t *t)
{
    char  *s;

    s = json_dumps(json_object_get(rg_test_get(t, "/last_request"), "body"),
                   JSON_COMPACT);
    assert_non_null(s);

    return s;
}


/* the transcript's model_call events, in order */
static json_t *
rg_test_model_calls(rg_test_ctx_t *t)
{
    size_t   i;
    json_t  *tr, *ev, *out;

    free(t->text);
    t->text = rg_transcript_text(t->s);
    assert_non_null(t->text);

    tr = json_loads(t->text, 0, NULL);
    assert_non_null(tr);

    out = json_array();
    assert_non_null(out);

    json_array_foreach(json_object_get(tr, "events"), i, ev) {
        if (json_is_string(json_object_get(ev, "type"))
            && strcmp(json_string_value(json_object_get(ev, "type")),
                      "model_call") == 0)
        {
            json_array_append(out, ev);
        }
    }

    json_decref(tr);
    json_decref(t->calls);
    t->calls = out;

    return out;
}


static size_t
rg_test_count_role(json_t *msgs, const char *role)
{
    size_t   i, n;
    json_t  *m;

    n = 0;
    json_array_foreach(msgs, i, m) {
        n += strcmp(json_string_value(json_object_get(m, "role")), role) == 0;
    }

    return n;
}


/* The mock knows where a conversation is only from the messages it is
 * sent, so once rounds are dropped it would call tools forever. Each test
 * therefore caps the tool (tool_max_calls): once it is no longer offered,
 * the mock answers with text. */

static void
rg_test_compact_before_call(void **state)
{
    int             limit;
    rg_test_ctx_t  *t = *state;
    char           *body, agent[256];
    size_t          full, compact;
    json_t         *msgs, *m;
    rg_session_t   *s;

    rg_test_fs_root(t, 2500);

    /* without compaction: the reference */
    rg_test_mock(t, "--rounds", "100");
    rg_test_engine(t, "tools read_file; tool_max_calls read_file 6;"
                      "repeat_limit 1000; dedupe off;");

    s = rg_test_session(t, "read the readme six times");
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 7);
    assert_int_equal(s->tool_calls, 6);

    body = rg_test_last_body(t);
    full = strlen(body);
    free(body);

    assert_int_equal(rg_test_stat(t, "rejected"), 0);

    /* with it: a window of 2000 tokens (about 6.4 KB of body), where
     * shortening the older results is enough; then one of 900 tokens,
     * where the last round barely fits and older rounds must go */
    for (limit = 2000; limit >= 900; limit -= 1100) {
        rg_test_stop(t);
        rg_test_mock(t, "--rounds", "100");
        snprintf(agent, sizeof(agent), "tools read_file;"
                 "tool_max_calls read_file 6; repeat_limit 1000; dedupe off;"
                 "context_limit %d; keep_rounds 1;", limit);
        rg_test_engine(t, agent);

        s = rg_test_session(t, "read the readme six times");
        assert_int_equal(s->state, RG_SESSION_DONE);
        assert_int_equal(s->round, 7);
        assert_int_equal(s->tool_calls, 6);

        /* every request was valid: no round was ever split */
        assert_int_equal(rg_test_stat(t, "rejected"), 0);
        assert_int_equal(rg_test_stat(t, "requests"), 7);

        body = rg_test_last_body(t);
        compact = strlen(body);

        if (compact * 2 >= full) {
            print_error("context_limit %d: the last request has %zu bytes, "
                        "%zu without compaction\n", limit, compact, full);
        }
        assert_true(compact * 2 < full);

        /* older results shortened (or gone), never the last one */
        if (limit == 2000) {
            assert_non_null(strstr(body, "(shortened to save context)"));
        }
        free(body);

        msgs = json_object_get(json_object_get(
                                   rg_test_get(t, "/last_request"), "body"),
                               "messages");

        /* system prompt and task first; as many calls as answers */
        assert_string_equal(json_string_value(json_object_get(
                                json_array_get(msgs, 0), "role")), "system");
        assert_string_equal(json_string_value(json_object_get(
                                json_array_get(msgs, 1), "content")),
                            "read the readme six times");
        assert_int_equal(rg_test_count_role(msgs, "assistant"),
                         rg_test_count_role(msgs, "tool"));

        if (limit < 2000) {
            assert_true(rg_test_count_role(msgs, "assistant") < 6);
        } else {
            assert_int_equal(rg_test_count_role(msgs, "assistant"), 6);
        }

        /* the last round is whole and full length */
        m = json_array_get(msgs, json_array_size(msgs) - 1);
        assert_string_equal(json_string_value(json_object_get(m, "role")),
                            "tool");
        assert_true(json_string_length(json_object_get(m, "content"))
                    > 2500);

        assert_int_equal(rg_context_check(&s->msgs, t->err,
                                          sizeof(t->err)), RG_OK);
    }
}


static void
rg_test_summarize(void **state)
{
    rg_test_ctx_t  *t = *state;
    char           *body;
    size_t          i, summaries, n;
    json_t         *calls, *ev, *req, *msgs, *first;
    rg_session_t   *s;
    const char     *sys;

    /* A window of 800 tokens: about 2.5 KB of body. Each round is about
     * 2.2 KB (the result about 2 KB), the prefix with the tool about
     * 0.8 KB and 0.1 KB without it. The second call does not fit, with
     * nothing it may drop (keep_rounds 1); the third, without tools
     * (tool_max_calls), fits only once round 1 is dropped. Round 1 is
     * summarized, the summary fits, and the third call is the last. */
    rg_test_fs_root(t, 1500);

    rg_test_mock(t, "--rounds", "100");
    rg_test_engine(t, "tools read_file; tool_max_calls read_file 2;"
                      "repeat_limit 1000; dedupe off;"
                      "context_limit 800; keep_rounds 1;"
                      "context_summarize on; deadline 5s;");

    s = rg_test_session(t, "read and summarize");

    if (s->state != RG_SESSION_DONE) {
        print_error("ended %s (%s) after %lu rounds and %lu model calls\n",
                    rg_session_state_name(s->state),
                    s->reason ? s->reason : "", (unsigned long) s->round,
                    (unsigned long) s->model_calls);
    }

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 3);
    assert_int_equal(rg_test_stat(t, "rejected"), 0);

    calls = rg_test_model_calls(t);
    n = json_array_size(calls);

    assert_int_equal(n, s->model_calls);
    assert_int_equal(rg_test_stat(t, "requests"), (long) n);

    summaries = 0;
    json_array_foreach(calls, i, ev) {
        if (!json_is_true(json_object_get(ev, "summary"))) {
            continue;
        }

        summaries++;

        /* it succeeded */
        if (strcmp(json_string_value(json_object_get(ev, "status")), "ok")
            != 0)
        {
            print_error("the summary call: %s\n",
                        json_dumps(ev, JSON_COMPACT));
        }
        assert_string_equal(json_string_value(json_object_get(ev, "status")),
                            "ok");

        /* it asks for a summary, offers no tools, carries the rounds */
        req = json_object_get(ev, "request");
        assert_non_null(req);
        assert_null(json_object_get(req, "tools"));

        msgs = json_object_get(req, "messages");
        assert_int_equal(json_array_size(msgs), 2);
        first = json_array_get(msgs, 0);
        sys = json_string_value(json_object_get(first, "content"));
        assert_non_null(sys);
        assert_string_equal(sys, "Summarize the tool calls and results "
                            "below in a few sentences. Keep every fact, "
                            "number and name needed to finish the task; "
                            "leave out the rest.");
        assert_non_null(strstr(json_string_value(json_object_get(
                                   json_array_get(msgs, 1), "content")),
                               "line 000000"));

        /* the next call carries the summary right after the task */
        assert_true(i + 1 < n);
        req = json_object_get(json_array_get(calls, i + 1), "request");
        msgs = json_object_get(req, "messages");
        assert_non_null(strstr(json_string_value(json_object_get(
                                   json_array_get(msgs, 2), "content")),
                               "Summary of earlier rounds"));
    }

    /* one extra call, and only one */
    assert_int_equal(summaries, 1);
    assert_int_equal(n, s->round + summaries);

    body = rg_test_last_body(t);
    assert_non_null(strstr(body, "Summary of earlier rounds"));
    free(body);
}


static void
rg_test_summary_ends(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    /* the last round alone is larger than the window: whatever is
     * summarized, the conversation does not fit. The session must still
     * end, and not by summarizing its own summary again and again. */
    rg_test_fs_root(t, 3000);

    rg_test_mock(t, "--rounds", "100");
    rg_test_engine(t, "tools read_file; tool_max_calls read_file 2;"
                      "repeat_limit 1000; dedupe off;"
                      "context_limit 500; keep_rounds 1;"
                      "context_summarize on; deadline 3s;");

    s = rg_test_session(t, "too big to fit");

    if (s->state != RG_SESSION_DONE) {
        print_error("ended %s (%s) after %lu rounds and %lu model calls\n",
                    rg_session_state_name(s->state),
                    s->reason ? s->reason : "", (unsigned long) s->round,
                    (unsigned long) s->model_calls);
    }

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->round, 3);

    /* at most one summary per model answer */
    assert_true(s->model_calls <= 2 * s->round);
    assert_int_equal(rg_test_stat(t, "rejected"), 0);
}


/* the summary call failed: the log says what failed and what it means
 * (the rounds are gone) and which directive skips the call */
static void
rg_test_summary_failed(void **state)
{
    rg_test_ctx_t  *t = *state;
    char            log[128], main[160], *text;
    size_t          len;
    rg_session_t   *s;

    /* as rg_test_summarize: request 3 is the summary; it fails, and is
     * not retried */
    rg_test_fs_root(t, 1500);

    snprintf(log, sizeof(log), "%s/error.log", t->dir);
    snprintf(main, sizeof(main), "error_log %s warn;", log);

    rg_test_mock(t, "--rounds", "100", "--fault", "500", "--fault-every",
                 "3");
    rg_test_engine_ex(t, main, "max_retries 0;",
                      "tools read_file; tool_max_calls read_file 2;"
                      "repeat_limit 1000; dedupe off;"
                      "context_limit 800; keep_rounds 1;"
                      "context_summarize on; deadline 5s;");

    s = rg_test_session(t, "read and summarize");

    assert_int_equal(s->state, RG_SESSION_DONE);

    text = rg_test_read(log, &len);
    assert_non_null(text);
    text = realloc(text, len + 1);
    assert_non_null(text);
    text[len] = '\0';

    if (strstr(text, "the call for a summary of the rounds dropped to save "
                     "context failed (server_error: ") == NULL
        || strstr(text, "going on without it (those rounds are gone; "
                        "\"context_summarize off\" skips the summary "
                        "call)") == NULL)
    {
        print_error("the log:\n%s\n", text);
        fail();
    }

    unlink(log);
    free(text);
}


static void
rg_test_context_exceeded_retry(void **state)
{
    rg_test_ctx_t  *t = *state;
    char           *body;
    json_t         *msgs;
    rg_session_t   *s;

    /* entries 0 and 1 are the mock's own calls of calc; entry 2 says the
     * context overflowed. Dropping the first round leaves one assistant
     * message, so the retry is answered by entry 1 again, which answers
     * with text as calc is no longer offered (tool_max_calls). */
    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "context_exceeded_once.json",
                 "--rounds", "100");
    rg_test_engine(t, "tools calc; tool_max_calls calc 2; keep_rounds 1;");

    s = rg_test_session(t, "compute twice");

    if (s->state != RG_SESSION_DONE) {
        print_error("ended %s: %s\n", rg_session_state_name(s->state),
                    s->reason ? s->reason : "");
    }

    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(s->tool_calls, 2);

    /* 2 rounds, the 400, the retry: nothing invalid was sent */
    assert_int_equal(rg_test_stat(t, "requests"), 4);
    assert_int_equal(rg_test_stat(t, "faults"), 1);
    assert_int_equal(rg_test_stat(t, "rejected"), 0);
    assert_int_equal(s->model_calls, 4);

    /* the retry went without the first round */
    body = rg_test_last_body(t);
    msgs = json_object_get(json_object_get(rg_test_get(t, "/last_request"),
                                           "body"), "messages");
    assert_int_equal(rg_test_count_role(msgs, "assistant"), 1);
    assert_int_equal(rg_test_count_role(msgs, "tool"), 1);
    assert_null(strstr(body, "2*(3+4)"));
    assert_non_null(strstr(body, "17*23+4"));
    free(body);

    assert_int_equal(rg_context_check(&s->msgs, t->err, sizeof(t->err)),
                     RG_OK);
}


static void
rg_test_context_exceeded_twice(void **state)
{
    rg_test_ctx_t  *t = *state;
    json_t         *msgs;
    rg_session_t   *s;

    /* round 1 reads a long file, round 2 a short one: compaction only
     * shortens the first result, so the retry is the same conversation,
     * smaller, and the provider says no again */
    rg_test_fs_root(t, 4000);

    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "context_exceeded_twice.json");
    rg_test_engine(t, "tools read_file; keep_rounds 1;");

    s = rg_test_session(t, "read two files");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    assert_non_null(s->reason);

    /* the provider's words, and what to change */
    if (strstr(s->reason, "maximum context length is 8192 tokens") == NULL
        || strstr(s->reason, "context_length_exceeded") == NULL
        || strstr(s->reason, "does not fit the model's context window, "
                             "even after compacting once") == NULL
        || strstr(s->reason, "the last 1 rounds (keep_rounds) always stay; "
                             "lower keep_rounds, or set context_limit")
           == NULL)
    {
        print_error("reason: %s\n", s->reason);
        fail();
    }

    assert_int_equal(rg_test_stat(t, "requests"), 4);
    assert_int_equal(rg_test_stat(t, "faults"), 2);
    assert_int_equal(rg_test_stat(t, "rejected"), 0);

    /* the retry was smaller: the first result was shortened, the round
     * kept */
    msgs = json_object_get(json_object_get(rg_test_get(t, "/last_request"),
                                           "body"), "messages");
    assert_int_equal(rg_test_count_role(msgs, "assistant"), 2);
    assert_non_null(strstr(json_string_value(json_object_get(
                               json_array_get(msgs, 3), "content")),
                           "(shortened to save context)"));
}


static void
rg_test_context_exceeded_nothing_to_drop(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    /* everything is protected (keep_rounds 2 with 2 rounds): there is
     * nothing to compact, so no retry either */
    rg_test_mock(t, "--script", RG_TEST_SCRIPTS "context_exceeded_twice.json");
    rg_test_engine(t, "tools calc read_file; keep_rounds 2;");

    s = rg_test_session(t, "read two files");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    assert_non_null(strstr(s->reason, "maximum context length"));
    if (strstr(s->reason, "and nothing more can be dropped: the system "
                          "prompt, the task and the last 2 rounds "
                          "(keep_rounds) always stay; lower keep_rounds, or "
                          "set context_limit to the model's window") == NULL)
    {
        print_error("reason: %s\n", s->reason);
        fail();
    }
    assert_int_equal(rg_test_stat(t, "requests"), 3);
    assert_int_equal(rg_test_stat(t, "faults"), 1);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_compact_property),
        cmocka_unit_test(rg_test_insert_after_task),
        cmocka_unit_test_setup_teardown(rg_test_compact_before_call,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_summarize,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_summary_failed,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_summary_ends,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_context_exceeded_retry,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_context_exceeded_twice,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(
            rg_test_context_exceeded_nothing_to_drop,
            rg_test_setup, rg_test_teardown),
    };

    return cmocka_run_group_tests_name("context", tests, NULL, NULL);
}
