/* rg_batch_progress.c: the progress bar of `reagent batch` on stderr,
 * redrawn every 200 ms while the batch runs and once at its end (only
 * when stderr is a terminal, or asked for): the tasks done, running and
 * failed, the time so far; the total shows once the input was read to
 * its end. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_batch.h>
#include <rg_queue.h>
#include <rg_session.h>


void
rg_batch_show_progress(rg_batch_t *b, int final)
{
    char       bar[41], line[256];
    int        n;
    rg_uint_t  i, filled, done;
    double     secs;

    done = b->tasks;
    secs = (double) (rg_monotonic_msec() - b->started) / 1000;

    /* the total is unknown while input streams in: show a spinner width */
    filled = b->queue->eof(b->queue) && done + b->running
             ? (rg_uint_t) (40.0 * done / (done + b->running)) : 0;

    for (i = 0; i < 40; i++) {
        bar[i] = i < filled ? '#' : '-';
    }
    bar[40] = '\0';

    n = snprintf(line, sizeof(line), "\r[%s] %lu done, %lu running, "
                 "%lu failed  %.1fs%s", bar, (unsigned long) done,
                 (unsigned long) b->running,
                 (unsigned long) (done - b->by_state[RG_SESSION_DONE]),
                 secs, final ? "\n" : "\033[K");

    if (n > 0 && write(STDERR_FILENO, line, rg_min((size_t) n,
                                                  sizeof(line) - 1)) < 0)
    {
        /* a progress bar is not worth an error */
    }
}


void
rg_batch_progress_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_batch_show_progress(arg, 0);
}
