/* rg_batch_progress.c: the progress bar of `reagent batch` on stderr
 * (only when stderr is a terminal, or asked for): the tasks done of the
 * total, those not done, those running, the rate at which tasks end and
 * the time left at that rate, the time so far. Redrawn as tasks end (at
 * most ten times a second), every 200 ms while none does, and once at
 * the end. The total is the queue's: known at the start for a file,
 * once the input ended for a pipe; until then the bar shows no total.
 * This fills the bar from the batch; rg_progress.c draws it. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_batch.h>
#include <rg_queue.h>
#include <rg_session.h>


void
rg_batch_show_progress(rg_batch_t *b, int final)
{
    rg_progress_t  *p;

    p = &b->bar;

    /* a task skipped on --resume is as done as one that ran */
    p->done = b->tasks + b->queue->stats.skipped;
    p->total = b->queue->stats.total;
    p->failed = b->tasks - b->by_state[RG_SESSION_DONE];
    p->running = b->running;
    p->running_name = "running";
    p->rated = b->tasks;
    p->started = b->started;

    rg_progress_draw(p, final, STDERR_FILENO);
}


/* a task ended: redrawn, unless it was less than 100 ms ago */
void
rg_batch_progress_task(rg_batch_t *b)
{
    if (b->progress_ev && rg_progress_due(&b->bar, 100)) {
        rg_batch_show_progress(b, 0);
    }
}


void
rg_batch_progress_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_batch_t  *b;

    b = arg;

    if (rg_progress_due(&b->bar, 200)) {
        rg_batch_show_progress(b, 0);
    }
}
