/* rg_store.c: what every store shares beyond its operations: an outage
 * as the store's users see it, said once, not once per operation. A
 * user (shared limits, tenant budgets, events) whose operation fails says
 * what it does meanwhile, once per outage; the first answer, to any
 * user, of an operation asked after the last failure says the store is
 * back, how long operations failed and how many. The Redis client says
 * the same of its connections (rg_redis.c); this says what it meant to
 * the users. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>


void
rg_store_down(rg_store_t *st, rg_log_t *log, uint64_t *said,
    const char *fmt, ...)
{
    va_list    args;
    rg_msec_t  now;

    now = rg_max(rg_monotonic_msec(), 1);

    if (st->down.since == 0) {
        st->down.since = now;
        st->down.outage++;
        st->down.failed = 0;
    }

    st->down.last = now;
    st->down.failed++;

    if (*said == st->down.outage) {
        return;
    }

    *said = st->down.outage;

    va_start(args, fmt);
    rg_log_verror(RG_LOG_WARN, log, 0, fmt, args);
    va_end(args);
}


void
rg_store_up(rg_store_t *st, rg_log_t *log, const rg_store_res_t *res)
{
    rg_msec_t  ms;

    if (st->down.since == 0 || res->issued <= st->down.last) {
        return;
    }

    ms = st->down.last - st->down.since;
    st->down.since = 0;

    rg_log_error(RG_LOG_NOTICE, log, 0, "the store answers again; its "
                 "operations failed for %llu.%01llus (%llu of them)",
                 (unsigned long long) ms / 1000,
                 (unsigned long long) (ms % 1000) / 100,
                 (unsigned long long) st->down.failed);
}
