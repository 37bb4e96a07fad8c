/* rg_batch_summary.c: what `reagent batch` says on stderr when it ends:
 * the tasks by their final state, the model and tool calls, retries,
 * dedupe hits and tokens of the engine, the p50 and p99 task times, CPU
 * per model call and the peak memory. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_batch.h>
#include <rg_queue.h>
#include <rg_session.h>
#include <rg_agent.h>


static int
rg_batch_cmp(const void *a, const void *b)
{
    uint32_t  x, y;

    x = *(const uint32_t *) a;
    y = *(const uint32_t *) b;

    return (x > y) - (x < y);
}


/* The memory a task held at the peak, in " (… KiB per concurrent task)":
 * the peak resident size (getrusage) less the size when the tasks started
 * (/proc/self/statm), over the tasks that ran at once. The kernel keeps
 * both counts per CPU and reads them roughly, a few hundred KiB apart
 * from each other: a growth smaller than that is their noise, which was
 * printed as a negative or a meaningless figure. Then it says so. */
#define RG_BATCH_RSS_NOISE  1024        /* KiB */

static void
rg_batch_rss_per_task(rg_batch_t *b, long peak, char *buf, size_t len)
{
    long       grown;
    rg_uint_t  running;

    grown = peak - b->rss_started;
    running = rg_min((rg_uint_t) b->opts->concurrency, b->tasks);

    if (b->rss_started <= 0 || grown < RG_BATCH_RSS_NOISE || running == 0) {
        snprintf(buf, len, "under 1 MiB grown: too little to say per task");
        return;
    }

    snprintf(buf, len, "%.1f KiB per concurrent task",
             (double) grown / running);
}


void
rg_batch_summary(rg_batch_t *b)
{
    int                 n;
    long                peak;
    char                states[512], money[96], per_task[64];
    size_t              len;
    rg_uint_t           i;
    double              secs, cpu_per_call;
    uint64_t            cpu, calls;
    uint32_t            p50, p99;
    uint64_t            retries;
    rg_agent_stats_t    stats, *st;

    st = &stats;
    rg_agent_stats(b->engine, st, &retries);
    secs = (double) (rg_monotonic_msec() - b->started) / 1000;
    cpu = rg_cpu_usec() - b->cpu_started;
    calls = st->model_calls;
    cpu_per_call = calls ? (double) cpu / calls : 0;

    p50 = p99 = 0;
    if (b->ntimes) {
        qsort(b->times, b->ntimes, sizeof(uint32_t), rg_batch_cmp);
        p50 = b->times[(b->ntimes - 1) / 2];
        p99 = b->times[(b->ntimes - 1) * 99 / 100];
    }

    states[0] = '\0';
    len = 0;

    for (i = RG_SESSION_DONE; i < RG_SESSION_NSTATES; i++) {
        if (b->by_state[i] || i == RG_SESSION_DONE
            || i == RG_SESSION_FAILED)
        {
            len += snprintf(states + len, sizeof(states) - len, "%s%lu %s",
                            len ? ", " : "", (unsigned long) b->by_state[i],
                            rg_session_state_name(i));
        }
    }

    if (b->not_started && len < sizeof(states)) {
        len += snprintf(states + len, sizeof(states) - len,
                        " (%lu not started)", (unsigned long) b->not_started);
    }

    if (b->invalid && len < sizeof(states)) {
        len += snprintf(states + len, sizeof(states) - len, ", %lu invalid",
                        (unsigned long) b->invalid);
    }

    if (b->duplicates && len < sizeof(states)) {
        len += snprintf(states + len, sizeof(states) - len, " (%lu with an "
                        "id used before)", (unsigned long) b->duplicates);
    }

    if (b->queue->stats.skipped && len < sizeof(states)) {
        snprintf(states + len, sizeof(states) - len, "; %lu skipped (%s "
                 "there)", (unsigned long) b->queue->stats.skipped,
                 b->queue->stats.skipped == 1 ? "its result was"
                                              : "their results were");
    }

    /* what the prompt caches saved, and what it cost, where known */
    money[0] = '\0';
    n = 0;

    if (st->cached_tokens) {
        n = snprintf(money, sizeof(money), " (%llu read from a prompt cache)",
                     (unsigned long long) st->cached_tokens);
    }

    if (st->cost > 0 && n >= 0 && (size_t) n < sizeof(money)) {
        snprintf(money + n, sizeof(money) - n, ", cost $%.4f", st->cost);
    }

    peak = rg_peak_rss_kb();
    rg_batch_rss_per_task(b, peak, per_task, sizeof(per_task));

    fprintf(stderr,
            "batch: %lu task%s in %.2fs: %s\n"
            "  model calls %llu (retries %llu), tool calls %llu "
            "(errors %llu, dedupe hits %llu, repeats %llu), tokens %llu%s\n"
            "  task time p50 %lu ms, p99 %lu ms; cpu %.1f us per model call; "
            "peak rss %.1f MiB (%s)\n",
            (unsigned long) b->tasks, b->tasks == 1 ? "" : "s", secs, states,
            (unsigned long long) calls,
            (unsigned long long) retries,
            (unsigned long long) st->tool_calls,
            (unsigned long long) st->tool_errors,
            (unsigned long long) st->dedupe_hits,
            (unsigned long long) st->repeats,
            (unsigned long long) (st->prompt_tokens + st->completion_tokens),
            money,
            (unsigned long) p50, (unsigned long) p99, cpu_per_call,
            (double) peak / 1024, per_task);
}
