/* rg_times.h: clocks. Monotonic time for timeouts and durations, wall
 * time for logs and transcripts. */

#ifndef RG_TIMES_H
#define RG_TIMES_H

rg_msec_t rg_monotonic_msec(void);
uint64_t rg_monotonic_usec(void);
rg_msec_t rg_wall_msec(void);
uint64_t rg_cpu_usec(void);
long rg_peak_rss_kb(void);
long rg_current_rss_kb(void);

#endif /* RG_TIMES_H */
