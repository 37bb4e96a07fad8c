/* rg_times.h: clocks. Monotonic time for timeouts and durations, wall
 * time for logs and transcripts; timers counted in ms. */

#ifndef RG_TIMES_H
#define RG_TIMES_H

struct event;

rg_msec_t rg_monotonic_msec(void);
uint64_t rg_monotonic_usec(void);
rg_msec_t rg_wall_msec(void);
uint64_t rg_cpu_usec(void);
long rg_peak_rss_kb(void);
long rg_current_rss_kb(void);

/* ev, an assigned timer, made pending to fire in ms (a pending one is
 * moved); evtimer_add()'s result */
int rg_timer_add(struct event *ev, rg_msec_t ms);

#endif /* RG_TIMES_H */
