/* rg_times.c: clocks and the process's own resource figures. */

#include <rg_config.h>
#include <rg_core.h>
#include <sys/resource.h>


rg_msec_t
rg_monotonic_msec(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (rg_msec_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


uint64_t
rg_monotonic_usec(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}


rg_msec_t
rg_wall_msec(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_REALTIME, &ts);

    return (rg_msec_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
