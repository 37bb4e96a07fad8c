/* rg_progress.c: draws the progress bar of rg_progress.h, one line that
 * each draw overwrites:
 *     [#########---------] 120/300 done (2 not done), 40 running, 31.0/s,
 *     ETA 5.8s  3.9s
 * and "120 done (…" while the total is not known. It owns no state but
 * the time it last drew; counting and the timers are the caller's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_progress.h>


#define RG_PROGRESS_WIDTH  30


/* "1m05s", "12s", "0.4s" */
static void
rg_progress_secs_text(char *buf, size_t len, double secs)
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
rg_progress_draw(rg_progress_t *p, int final, int fd)
{
    int        n;
    char       bar[RG_PROGRESS_WIDTH + 3], line[256], eta[32], took[32];
    size_t     len;
    double     secs, rate;
    rg_uint_t  i, filled;

    p->drawn_at = rg_monotonic_msec();

    secs = (double) (p->drawn_at - p->started) / 1000;
    rate = secs > 0 ? p->rated / secs : 0;

    rg_progress_secs_text(took, sizeof(took), secs);

    if (p->total) {
        filled = (rg_uint_t) ((double) RG_PROGRESS_WIDTH
                              * rg_min(p->done, p->total) / p->total);

        bar[0] = '[';
        for (i = 0; i < RG_PROGRESS_WIDTH; i++) {
            bar[i + 1] = i < filled ? '#' : '-';
        }
        bar[RG_PROGRESS_WIDTH + 1] = ']';
        bar[RG_PROGRESS_WIDTH + 2] = '\0';

        n = snprintf(line, sizeof(line), "\r%s %lu/%lu done", bar,
                     (unsigned long) p->done, (unsigned long) p->total);

    } else {
        n = snprintf(line, sizeof(line), "\r%lu done",
                     (unsigned long) p->done);
    }

    len = n > 0 ? (size_t) n : 0;

    n = snprintf(line + len, sizeof(line) - len, " (%lu not done), %lu "
                 "%s, %.1f/s", (unsigned long) p->failed,
                 (unsigned long) p->running,
                 p->running_name ? p->running_name : "running", rate);
    len += n > 0 ? (size_t) n : 0;

    if (p->total && !final && rate > 0 && p->done < p->total
        && len < sizeof(line))
    {
        rg_progress_secs_text(eta, sizeof(eta), (p->total - p->done) / rate);
        n = snprintf(line + len, sizeof(line) - len, ", ETA %s", eta);
        len += n > 0 ? (size_t) n : 0;
    }

    if (len < sizeof(line)) {
        n = snprintf(line + len, sizeof(line) - len, "  %s%s", took,
                     final ? "\n" : "\033[K");
        len += n > 0 ? (size_t) n : 0;
    }

    len = rg_min(len, sizeof(line) - 1);

    if (write(fd, line, len) < 0) {
        /* a progress bar is not worth an error */
    }
}


int
rg_progress_due(rg_progress_t *p, rg_msec_t ms)
{
    return rg_monotonic_msec() - p->drawn_at >= ms;
}
