/* rg_metrics.c: the metrics part. With the configuration it maps the
 * shared zone (before serve forks, so that every worker of the cycle
 * sees the same pages), one slot per worker_processes; in each engine it
 * says which slot is written: the only one in run and batch, the one a
 * worker of serve attaches. Owns the label tables' appends and the
 * process figures; the text is rg_metrics_render.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_core_conf.h>
#include <rg_metrics.h>
#include <event2/event.h>
#include <sys/mman.h>
#include <dirent.h>
#include <signal.h>


static void *rg_metrics_create_conf(rg_cycle_t *cycle);
static char *rg_metrics_init_conf(rg_cycle_t *cycle, void *conf);
static rg_int_t rg_metrics_init_worker(rg_engine_t *e);
static void rg_metrics_exit_worker(rg_engine_t *e);


rg_part_t  rg_metrics_part = {
    .name = "metrics",
    .create_conf = rg_metrics_create_conf,
    .init_conf = rg_metrics_init_conf,
    .init_worker = rg_metrics_init_worker,
    .exit_worker = rg_metrics_exit_worker
};


rg_metrics_t  *rg_metrics_here;


const char  *rg_metrics_states[RG_METRICS_STATES] = {
    "queued", "model_wait", "tools_running", "awaiting_approval", "done",
    "failed", "max_rounds", "budget_exceeded", "deadline_exceeded",
    "loop_detected", "cancelled", "filtered", "approval_timed_out"
};


const char  *rg_metrics_outcomes[RG_METRICS_OUTCOMES] = {
    "ok", "rate_limited", "server_error", "timeout", "connect_error",
    "bad_response", "context_length_exceeded", "fatal",
    "response_too_large", "request_over_rate_limit"
};


const uint64_t  rg_metrics_bounds[RG_METRICS_NHISTS][RG_METRICS_BUCKETS] = {
    /* model calls: .05 .1 .25 .5 1 2.5 5 10 30 60 */
    { 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
      30000000, 60000000, 0 },
    /* tool calls: .005 … 60 */
    { 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000,
      5000000, 10000000, 30000000, 60000000, 0 },
    /* Redis commands: .0001 … 1 */
    { 100, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000,
      500000, 1000000, 0 },
    /* HTTP requests: .005 … 30 */
    { 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000,
      5000000, 10000000, 30000000, 0 }
};


static void
rg_metrics_unmap(void *data)
{
    rg_metrics_zone_t  *zone;

    zone = data;
    munmap(zone, zone->size);
}


static void *
rg_metrics_create_conf(rg_cycle_t *cycle)
{
    return rg_pcalloc(cycle->pool, sizeof(rg_metrics_conf_t));
}


/* after the core's: worker_processes is known */
static char *
rg_metrics_init_conf(rg_cycle_t *cycle, void *conf)
{
    size_t              size;
    rg_uint_t           n;
    rg_metrics_conf_t  *mcf;
    rg_metrics_zone_t  *zone;

    mcf = conf;
    n = (rg_uint_t) rg_core_conf(cycle)->worker_processes;
    if (n < 1) {
        n = 1;
    }

    /* pages never written are never resident: a slot costs what it
     * counts */
    size = sizeof(rg_metrics_zone_t) + n * sizeof(rg_metrics_slot_t);

    zone = mmap(NULL, size, PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (zone == MAP_FAILED) {
        rg_cycle_error(cycle, NULL, 0, "cannot map the metrics zone of %zu "
                       "bytes (%d: %s)", size, errno, strerror(errno));
        return RG_CONF_ERROR;
    }

    zone->size = size;
    zone->nslots = n;

    if (rg_pool_cleanup_add(cycle->pool, rg_metrics_unmap, zone) == NULL) {
        munmap(zone, size);
        return RG_CONF_ERROR;
    }

    mcf->zone = zone;

    return RG_CONF_OK;
}


static void
rg_metrics_refresh_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_metrics_refresh(arg);
}


static rg_int_t
rg_metrics_init_worker(rg_engine_t *e)
{
    rg_metrics_t  *m;

    m = calloc(1, sizeof(rg_metrics_t));
    if (m == NULL) {
        return RG_ERROR;
    }

    m->zone = rg_metrics_conf(e->cycle)->zone;
    m->engine = e;

    m->refresh_ev = event_new(e->base, -1, EV_PERSIST,
                              rg_metrics_refresh_handler, m);
    if (m->refresh_ev == NULL) {
        free(m);
        return RG_ERROR;
    }

    rg_engine_ctx(e, &rg_metrics_part) = m;

    if (rg_metrics_here == NULL) {
        rg_metrics_here = m;
    }

    /* run and batch: the one slot is this process's; serve attaches */
    if (m->zone->nslots == 1) {
        rg_metrics_attach(e, 0);
        event_del(m->refresh_ev);     /* refreshed when it is rendered */
    }

    return RG_OK;
}


static void
rg_metrics_exit_worker(rg_engine_t *e)
{
    rg_metrics_t  *m;

    m = rg_metrics_ctx(e);
    if (m == NULL) {
        return;
    }

    if (m->slot) {
        atomic_store_explicit(&m->slot->pid, 0, memory_order_relaxed);
    }

    if (rg_metrics_here == m) {
        rg_metrics_here = NULL;
    }

    event_free(m->refresh_ev);
    free(m);
    rg_engine_ctx(e, &rg_metrics_part) = NULL;
}


rg_int_t
rg_metrics_attach(rg_engine_t *e, rg_uint_t slot)
{
    rg_uint_t           i;
    rg_metrics_t       *m;
    rg_metrics_slot_t  *s;
    struct timeval      tv = { 1, 0 };

    m = rg_metrics_ctx(e);
    if (m == NULL || slot >= m->zone->nslots) {
        return RG_ERROR;
    }

    s = &m->zone->slots[slot];

    /* a worker that died in this slot left its gauges; its counters go
     * on from where they were, so that the sums never go down */
    for (i = 0; i < RG_METRICS_STATES; i++) {
        atomic_store_explicit(&s->sessions[i], 0, memory_order_relaxed);
    }
    atomic_store_explicit(&s->queue_at, 0, memory_order_relaxed);
    atomic_store_explicit(&s->pid, (int64_t) getpid(), memory_order_relaxed);

    m->slot = s;
    rg_metrics_refresh(m);
    event_add(m->refresh_ev, &tv);

    return RG_OK;
}


rg_uint_t
rg_metrics_name(rg_metrics_zone_t *zone, rg_metrics_table_e t,
    const char *name, size_t len)
{
    uint32_t            i, used, cap;
    rg_metrics_name_t  *names;

    switch (t) {
    case RG_METRICS_UPSTREAM:
        names = zone->upstreams;
        cap = RG_METRICS_UPSTREAMS;
        break;
    case RG_METRICS_TOOL:
        names = zone->tools;
        cap = RG_METRICS_TOOLS;
        break;
    default:
        names = zone->routes;
        cap = RG_METRICS_ROUTES;
        break;
    }

    len = rg_min(len, RG_METRICS_NAME_LEN - 1);

    for ( ;; ) {
        used = atomic_load_explicit(&zone->used[t], memory_order_acquire);

        for (i = 0; i < used && i < cap - 1; i++) {
            if (atomic_load_explicit(&names[i].ready, memory_order_acquire)
                && strncmp(names[i].name, name, len) == 0
                && names[i].name[len] == '\0')
            {
                return i;
            }
        }

        if (used >= cap - 1) {
            return cap - 1;            /* "other" */
        }

        /* workers append at once: each its own entry; the same name
         * twice is summed by the render */
        if (atomic_compare_exchange_weak_explicit(&zone->used[t], &used,
                                                  used + 1,
                                                  memory_order_acq_rel,
                                                  memory_order_acquire))
        {
            memcpy(names[used].name, name, len);
            names[used].name[len] = '\0';
            atomic_store_explicit(&names[used].ready, 1,
                                  memory_order_release);
            return used;
        }
    }
}


rg_uint_t
rg_metrics_bucket(rg_metrics_hist_e h, uint64_t usec)
{
    rg_uint_t        i;
    const uint64_t  *b;

    b = rg_metrics_bounds[h];

    for (i = 0; b[i] && usec > b[i]; i++) {
        /* void */
    }

    return i;
}


static const char  *rg_metrics_method_names[RG_METRICS_METHODS] = {
    "GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS", "other"
};

static const uint16_t  rg_metrics_code_values[RG_METRICS_CODES - 5] = {
    200, 201, 202, 204, 304, 400, 401, 403, 404, 405, 408, 409, 413, 429,
    500, 503
};


const char *
rg_metrics_method(rg_uint_t i)
{
    return rg_metrics_method_names[rg_min(i, RG_METRICS_METHODS - 1)];
}


/* the code of an index: the usual ones, then a class ("4xx") */
void
rg_metrics_code(rg_uint_t i, char *buf, size_t size)
{
    if (i < rg_nelems(rg_metrics_code_values)) {
        snprintf(buf, size, "%u", (unsigned) rg_metrics_code_values[i]);
    } else {
        snprintf(buf, size, "%uxx",
                 (unsigned) (i - rg_nelems(rg_metrics_code_values) + 1));
    }
}


void
rg_metrics_http(rg_engine_t *e, const char *method, const char *route,
    rg_uint_t status, double seconds)
{
    rg_uint_t           r, mi, ci, cls;
    uint64_t            usec;
    rg_metrics_t       *m;
    rg_metrics_slot_t  *s;

    m = e ? rg_metrics_ctx(e) : NULL;
    if (m == NULL || m->slot == NULL || route == NULL) {
        return;
    }

    s = m->slot;
    r = rg_metrics_name(m->zone, RG_METRICS_ROUTE, route, strlen(route));

    for (mi = 0; mi < RG_METRICS_METHODS - 1; mi++) {
        if (method && strcmp(method, rg_metrics_method_names[mi]) == 0) {
            break;
        }
    }

    for (ci = 0; ci < rg_nelems(rg_metrics_code_values); ci++) {
        if (rg_metrics_code_values[ci] == status) {
            break;
        }
    }

    if (ci == rg_nelems(rg_metrics_code_values)) {
        cls = status / 100;
        cls = cls >= 1 && cls <= 5 ? cls : 5;
        ci += cls - 1;
    }

    usec = seconds > 0 ? (uint64_t) (seconds * 1e6) : 0;

    rg_metrics_add(&s->http_requests[r][mi][ci], 1);
    rg_metrics_observe(&s->http_seconds[r], RG_METRICS_H_HTTP, usec);
}


void
rg_metrics_queue(rg_metrics_t *m, rg_uint_t shard, int64_t depth,
    int64_t pending, int64_t dead)
{
    rg_metrics_slot_t  *s;

    if (m == NULL || m->slot == NULL || shard >= RG_METRICS_SHARDS) {
        return;
    }

    s = m->slot;

    atomic_store_explicit(&s->queue_depth[shard], (uint64_t) rg_max(depth, 0),
                          memory_order_relaxed);
    atomic_store_explicit(&s->queue_pending[shard],
                          (uint64_t) rg_max(pending, 0),
                          memory_order_relaxed);
    atomic_store_explicit(&s->queue_dead[shard], (uint64_t) rg_max(dead, 0),
                          memory_order_relaxed);

    if (shard + 1 > atomic_load_explicit(&s->queue_shards,
                                         memory_order_relaxed))
    {
        atomic_store_explicit(&s->queue_shards, shard + 1,
                              memory_order_relaxed);
    }

    /* last: a reader that sees the time sees the values (release) */
    atomic_store_explicit(&s->queue_at, rg_wall_msec(), memory_order_release);
}


void
rg_metrics_parked(rg_metrics_t *m, int64_t parked)
{
    if (m == NULL || m->slot == NULL) {
        return;
    }

    atomic_store_explicit(&m->slot->queue_parked, (uint64_t) rg_max(parked, 0),
                          memory_order_relaxed);
    atomic_store_explicit(&m->slot->queue_at, rg_wall_msec(),
                          memory_order_release);
}


void
rg_metrics_refresh(rg_metrics_t *m)
{
    long            pages, page;
    uint64_t        fds;
    FILE           *f;
    DIR            *d;
    struct dirent  *de;

    if (m == NULL || m->slot == NULL) {
        return;
    }

    /* /proc is memory, not a disk: reading it does not block */
    fds = 0;
    d = opendir("/proc/self/fd");
    if (d) {
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] != '.') {
                fds++;
            }
        }
        closedir(d);
        fds -= fds ? 1 : 0;            /* the one opendir held */
        atomic_store_explicit(&m->slot->open_fds, fds, memory_order_relaxed);
    }

    f = fopen("/proc/self/statm", "re");
    if (f) {
        page = sysconf(_SC_PAGESIZE);
        if (fscanf(f, "%*s %ld", &pages) == 1 && pages >= 0 && page > 0) {
            atomic_store_explicit(&m->slot->resident_bytes,
                                  (uint64_t) pages * (uint64_t) page,
                                  memory_order_relaxed);
        }
        fclose(f);
    }
}
