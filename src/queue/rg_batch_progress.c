/* rg_batch_progress.c: the progress bar of `reagent batch` on stderr
 * (only when stderr is a terminal, or asked for): the tasks done of the
 * total, those not done, those running, the rate at which tasks end and
 * the time left at that rate, the time so far. Redrawn as tasks end (at
 * most ten times a second), every 200 ms while none does, and once at
 * the end. The total is the queue's: known at the start for a file,
 * once the input ended for a pipe; until then the bar shows no total. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_batch.h>
#include <rg_queue.h>
#include <rg_session.h>


#define RG_BATCH_PROGRESS_WIDTH  30


/* "1m05s", "12s", "0.4s" */
static void
rg_batch_secs_text(char *buf, size_t len, double secs)
{
    if (secs >= 3600) {
        snprintf(buf, len, "%luh%02lum", (unsigned long) (secs / 3600),
                 (unsigned long) ((long) secs % 3600 / 60));

    } else if (secs >= 60) {
        snprintf(buf, len, "%lum%02lus", (unsigned long) (secs / 60),
                 (unsigned long) ((long) secs % 60));

    } else if (secs >= 10) {
        snprintf(buf, len, "%.0fs", secs);

    } else {
        snprintf(buf, len, "%.1fs", secs);
    }
}


void
rg_batch_show_progress(rg_batch_t *b, int final)
{
    int        n;
    char       bar[RG_BATCH_PROGRESS_WIDTH + 3], line[256], eta[32],
               took[32];
    size_t     len;
    double     secs, rate;
    rg_uint_t  i, filled, done, total, failed;

    b->progress_at = rg_monotonic_msec();

    /* a task skipped on --resume is as done as one that ran */
    done = b->tasks + b->queue->stats.skipped;
    total = b->queue->stats.total;
    failed = b->tasks - b->by_state[RG_SESSION_DONE];
    secs = (double) (b->progress_at - b->started) / 1000;
    rate = secs > 0 ? b->tasks / secs : 0;

    rg_batch_secs_text(took, sizeof(took), secs);

    len = 0;

    if (total) {
        filled = (rg_uint_t) ((double) RG_BATCH_PROGRESS_WIDTH
                              * rg_min(done, total) / total);

        bar[0] = '[';
        for (i = 0; i < RG_BATCH_PROGRESS_WIDTH; i++) {
            bar[i + 1] = i < filled ? '#' : '-';
        }
        bar[RG_BATCH_PROGRESS_WIDTH + 1] = ']';
        bar[RG_BATCH_PROGRESS_WIDTH + 2] = '\0';

        n = snprintf(line, sizeof(line), "\r%s %lu/%lu done", bar,
                     (unsigned long) done, (unsigned long) total);

    } else {
        n = snprintf(line, sizeof(line), "\r%lu done", (unsigned long) done);
    }

    len = n > 0 ? (size_t) n : 0;

    n = snprintf(line + len, sizeof(line) - len, " (%lu not done), %lu "
                 "running, %.1f/s", (unsigned long) failed,
                 (unsigned long) b->running, rate);
    len += n > 0 ? (size_t) n : 0;

    if (total && !final && rate > 0 && done < total && len < sizeof(line)) {
        rg_batch_secs_text(eta, sizeof(eta), (total - done) / rate);
        n = snprintf(line + len, sizeof(line) - len, ", ETA %s", eta);
        len += n > 0 ? (size_t) n : 0;
    }

    if (len < sizeof(line)) {
        n = snprintf(line + len, sizeof(line) - len, "  %s%s", took,
                     final ? "\n" : "\033[K");
        len += n > 0 ? (size_t) n : 0;
    }

    len = rg_min(len, sizeof(line) - 1);

    if (write(STDERR_FILENO, line, len) < 0) {
        /* a progress bar is not worth an error */
    }
}


/* a task ended: redrawn, unless it was less than 100 ms ago */
void
rg_batch_progress_task(rg_batch_t *b)
{
    if (b->progress_ev && rg_monotonic_msec() - b->progress_at >= 100) {
        rg_batch_show_progress(b, 0);
    }
}


void
rg_batch_progress_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_batch_t  *b;

    b = arg;

    if (rg_monotonic_msec() - b->progress_at >= 200) {
        rg_batch_show_progress(b, 0);
    }
}
