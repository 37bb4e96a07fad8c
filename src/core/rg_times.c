/* rg_times.c: clocks, timers counted in ms, and the process's own
 * resource figures. */

#include <rg_config.h>
#include <rg_core.h>
#include <event2/event.h>
#include <sys/resource.h>


static uint64_t
rg_clock_usec(clockid_t clock)
{
    struct timespec  ts;

    clock_gettime(clock, &ts);

    return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}


rg_msec_t
rg_monotonic_msec(void)
{
    return rg_clock_usec(CLOCK_MONOTONIC) / 1000;
}


uint64_t
rg_monotonic_usec(void)
{
    return rg_clock_usec(CLOCK_MONOTONIC);
}


rg_msec_t
rg_wall_msec(void)
{
    return rg_clock_usec(CLOCK_REALTIME) / 1000;
}


uint64_t
rg_cpu_usec(void)
{
    struct rusage  ru;

    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        return 0;
    }

    return (uint64_t) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000
           + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}


long
rg_peak_rss_kb(void)
{
    struct rusage  ru;

    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        return 0;
    }

    return ru.ru_maxrss;
}


long
rg_current_rss_kb(void)
{
    long   pages, rss;
    FILE  *f;

    f = fopen("/proc/self/statm", "r");
    if (f == NULL) {
        return 0;
    }

    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) {
        rss = 0;
    }

    fclose(f);

    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}


int
rg_timer_add(struct event *ev, rg_msec_t ms)
{
    struct timeval  tv;

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;

    return evtimer_add(ev, &tv);
}
