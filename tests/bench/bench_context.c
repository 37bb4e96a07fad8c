/* bench_context.c: what context compaction costs. Builds a 200-message
 * conversation (system, task, then rounds of an assistant message with
 * two tool calls and their results of a few KB each), compacts it to
 * half its size, and prints the time per compaction, averaged over many
 * runs. A figure, not an assertion. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_context.h>
#include <rg_llm_openai.h>


#define RG_BENCH_RUNS  200


static void
rg_bench_conversation(rg_msgs_t *m, rg_pool_t *pool)
{
    char       id[32], text[4096];
    rg_buf_t   b;
    rg_uint_t  i, k;
    rg_msg_t  *last;

    memset(&b, 0, sizeof(b));
    memset(text, 'x', sizeof(text) - 1);
    text[sizeof(text) - 1] = '\0';

    rg_msgs_init(m);

    rg_llm_openai_msg(&b, "system", "You are terse.", 14);
    rg_msgs_append(m, pool, 's', b.data, b.len, 1);
    b.len = 0;
    rg_llm_openai_msg(&b, "user", "the task", 8);
    rg_msgs_append(m, pool, 'u', b.data, b.len, 1);

    /* 66 rounds of 3 messages: 200 messages in all */
    for (i = 0; i < 66; i++) {
        b.len = 0;
        rg_buf_printf(&b, "{\"role\":\"assistant\",\"content\":null,"
                      "\"tool_calls\":[{\"id\":\"c%lu_0\",\"type\":\"function\","
                      "\"function\":{\"name\":\"calc\",\"arguments\":"
                      "\"{}\"}},{\"id\":\"c%lu_1\",\"type\":\"function\","
                      "\"function\":{\"name\":\"calc\",\"arguments\":"
                      "\"{}\"}}]}", (unsigned long) i, (unsigned long) i);
        rg_msgs_append(m, pool, 'a', b.data, b.len, 1);
        last = rg_msgs_last(m);
        last->ncalls = 2;

        for (k = 0; k < 2; k++) {
            snprintf(id, sizeof(id), "c%lu_%lu", (unsigned long) i,
                     (unsigned long) k);
            b.len = 0;
            rg_llm_openai_tool_msg(&b, id, text, 1000 + 1000 * k);
            rg_msgs_append(m, pool, 't', b.data, b.len, 1);
        }
    }

    rg_buf_free(&b);
}


int
main(void)
{
    size_t               before;
    uint64_t             t0, total;
    rg_uint_t            i, n;
    rg_msgs_t            m;
    rg_pool_t           *pool;
    rg_context_result_t  res;

    total = 0;
    before = 0;
    n = 0;
    memset(&res, 0, sizeof(res));

    for (i = 0; i < RG_BENCH_RUNS; i++) {
        pool = rg_pool_create(65536);
        rg_bench_conversation(&m, pool);
        before = m.bytes;
        n = m.n;

        t0 = rg_monotonic_usec();
        rg_context_compact(&m, pool, before / 2, 2, &res);
        total += rg_monotonic_usec() - t0;

        rg_pool_destroy(pool);
    }

    printf("compaction of a %lu-message conversation (%lu KB to %lu KB): "
           "%.1f us per compaction (%lu tool results shortened, %lu rounds "
           "dropped), mean of %d runs\n", (unsigned long) n,
           (unsigned long) before / 1024, (unsigned long) before / 2048,
           (double) total / RG_BENCH_RUNS, (unsigned long) res.shortened,
           (unsigned long) res.dropped_rounds, RG_BENCH_RUNS);

    return 0;
}
