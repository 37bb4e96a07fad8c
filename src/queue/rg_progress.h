/* rg_progress.h: the progress bar that `reagent batch` and `reagent submit
 * --wait` draw on stderr: the tasks ended of the total, those not done,
 * those still to end, the rate and the time left at it, the time so far.
 * The caller counts and decides when to draw; this only draws. */

#ifndef RG_PROGRESS_H
#define RG_PROGRESS_H

#include <rg_config.h>
#include <rg_core.h>

typedef struct {
    rg_uint_t           done;         /* ended, of total */
    rg_uint_t           total;        /* 0: not known (yet) */
    rg_uint_t           failed;       /* ended, not done */
    rg_uint_t           running;
    const char         *running_name; /* how running is labelled */
    rg_uint_t           rated;        /* those of done ended in this run:
                                         the rate's */
    rg_msec_t           started;
    rg_msec_t           drawn_at;     /* last drawn, set by the draw;
                                         0: not on the line */
} rg_progress_t;


/* one line, "\r"-led; final ends it with "\n" and shows no ETA */
void rg_progress_draw(rg_progress_t *p, int final, int fd);

/* ms have passed since the last draw */
int rg_progress_due(rg_progress_t *p, rg_msec_t ms);

#endif /* RG_PROGRESS_H */
