/* rg_metrics_render.c: the zone of a cycle as Prometheus text
 * (exposition format 0.0.4): # HELP and # TYPE before each family, label
 * values escaped, histograms as cumulative _bucket{le}, _sum and _count.
 * Counters are summed over every slot, gauges of sessions over the slots
 * whose worker is alive, the figures of a process shown per worker. A
 * name that two workers appended at once is one label: its entries are
 * summed. Reads the zone only. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_metrics.h>
#include <signal.h>


typedef struct {
    rg_buf_t           *out;
    rg_metrics_zone_t  *zone;
    unsigned char      *alive;         /* by slot */
    rg_int_t            rc;
} rg_metrics_w_t;


/* the entries of one label value of a table */
typedef struct {
    const char         *name;
    rg_uint_t           idx[RG_METRICS_TOOLS];
    rg_uint_t           n;
    unsigned            other_only:1;
} rg_metrics_group_t;


static void
rg_metrics_printf(rg_metrics_w_t *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));


static void
rg_metrics_printf(rg_metrics_w_t *w, const char *fmt, ...)
{
    int      n;
    char     line[1024];
    va_list  args;

    va_start(args, fmt);
    n = vsnprintf(line, sizeof(line), fmt, args);
    va_end(args);

    if (n < 0 || (size_t) n >= sizeof(line)
        || rg_buf_append(w->out, line, (size_t) n) != RG_OK)
    {
        w->rc = RG_ERROR;
    }
}


static void
rg_metrics_family(rg_metrics_w_t *w, const char *name, const char *type,
    const char *help)
{
    rg_metrics_printf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                      type);
}


/* a label value as the format wants it: \ " and newline escaped */
static const char *
rg_metrics_esc(const char *v, char *buf, size_t size)
{
    size_t  i;

    for (i = 0; *v && i + 3 < size; v++) {
        if (*v == '\\' || *v == '"') {
            buf[i++] = '\\';
            buf[i++] = *v;
        } else if (*v == '\n') {
            buf[i++] = '\\';
            buf[i++] = 'n';
        } else {
            buf[i++] = *v;
        }
    }

    buf[i] = '\0';

    return buf;
}


static uint64_t
rg_metrics_load(const rg_metrics_u64_t *p)
{
    return atomic_load_explicit(p, memory_order_relaxed);
}


/* the sum over every slot (alive ones only, for a gauge) of the field
 * that is at p in slot 0 */
static uint64_t
rg_metrics_sum(rg_metrics_w_t *w, const rg_metrics_u64_t *p,
    rg_uint_t alive_only)
{
    size_t      off;
    uint64_t    sum;
    rg_uint_t   i;
    const char *base;

    base = (const char *) &w->zone->slots[0];
    off = (size_t) ((const char *) p - base);
    sum = 0;

    for (i = 0; i < w->zone->nslots; i++) {
        if (alive_only && !w->alive[i]) {
            continue;
        }
        sum += rg_metrics_load((const rg_metrics_u64_t *)
                               ((const char *) &w->zone->slots[i] + off));
    }

    return sum;
}


static uint64_t
rg_metrics_gsum(rg_metrics_w_t *w, const rg_metrics_group_t *g,
    const rg_metrics_u64_t *p0, size_t stride)
{
    rg_uint_t  k;
    uint64_t   sum;

    sum = 0;

    for (k = 0; k < g->n; k++) {
        sum += rg_metrics_sum(w, (const rg_metrics_u64_t *)
                              ((const char *) p0 + g->idx[k] * stride), 0);
    }

    return sum;
}


/* the groups of a table: each label value once, the last entry "other" */
static rg_uint_t
rg_metrics_groups(rg_metrics_w_t *w, rg_metrics_table_e t,
    rg_metrics_group_t *groups)
{
    uint32_t            used, cap, i, j, k;
    const char         *names[RG_METRICS_TOOLS];
    rg_uint_t           n;
    rg_metrics_name_t  *table;

    switch (t) {
    case RG_METRICS_UPSTREAM:
        table = w->zone->upstreams;
        cap = RG_METRICS_UPSTREAMS;
        break;
    case RG_METRICS_TOOL:
        table = w->zone->tools;
        cap = RG_METRICS_TOOLS;
        break;
    default:
        table = w->zone->routes;
        cap = RG_METRICS_ROUTES;
        break;
    }

    used = atomic_load_explicit(&w->zone->used[t], memory_order_acquire);
    used = rg_min(used, cap - 1);

    for (i = 0; i < cap; i++) {
        names[i] = NULL;
        if (i == cap - 1) {
            names[i] = "other";
        } else if (i < used
                   && atomic_load_explicit(&table[i].ready,
                                           memory_order_acquire))
        {
            names[i] = table[i].name;
        }
    }

    n = 0;

    for (i = 0; i < cap; i++) {
        if (names[i] == NULL) {
            continue;
        }

        for (j = 0; j < i; j++) {
            if (names[j] && strcmp(names[j], names[i]) == 0) {
                break;
            }
        }
        if (j < i) {
            continue;                  /* counted with its first */
        }

        groups[n].name = names[i];
        groups[n].n = 0;
        groups[n].other_only = (i == cap - 1);

        for (k = i; k < cap; k++) {
            if (names[k] && strcmp(names[k], names[i]) == 0) {
                groups[n].idx[groups[n].n++] = k;
            }
        }

        n++;
    }

    return n;
}


/* a histogram of a group (or of the one histogram, g NULL): cumulative
 * buckets, the sum in seconds, the count */
static void
rg_metrics_hist(rg_metrics_w_t *w, const char *name, const char *labels,
    rg_metrics_hist_e kind, const rg_metrics_group_t *g,
    const rg_metrics_hist_t *h0, size_t stride)
{
    char                 le[32];
    uint64_t             cum, sum_us;
    rg_uint_t            b, k, n;
    const uint64_t      *bounds;
    rg_metrics_group_t   one;
    const rg_metrics_hist_t *h;

    if (g == NULL) {
        one.n = 1;
        one.idx[0] = 0;
        g = &one;
    }

    bounds = rg_metrics_bounds[kind];
    cum = 0;

    for (n = 0; bounds[n]; n++) {
        /* void */
    }

    for (b = 0; b <= n; b++) {
        for (k = 0; k < g->n; k++) {
            h = (const rg_metrics_hist_t *) ((const char *) h0
                                             + g->idx[k] * stride);
            cum += rg_metrics_sum(w, &h->bucket[b], 0);
        }

        if (b < n) {
            snprintf(le, sizeof(le), "%g", (double) bounds[b] / 1e6);
        } else {
            snprintf(le, sizeof(le), "+Inf");
        }

        rg_metrics_printf(w, "%s_bucket{%s%sle=\"%s\"} %llu\n", name,
                          labels, labels[0] ? "," : "", le,
                          (unsigned long long) cum);
    }

    sum_us = 0;
    for (k = 0; k < g->n; k++) {
        h = (const rg_metrics_hist_t *) ((const char *) h0
                                         + g->idx[k] * stride);
        sum_us += rg_metrics_sum(w, &h->sum_us, 0);
    }

    rg_metrics_printf(w, "%s_sum%s%s%s %.6f\n", name, labels[0] ? "{" : "",
                      labels, labels[0] ? "}" : "", (double) sum_us / 1e6);
    rg_metrics_printf(w, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "",
                      labels, labels[0] ? "}" : "",
                      (unsigned long long) cum);
}


static uint64_t
rg_metrics_hist_count(rg_metrics_w_t *w, const rg_metrics_group_t *g,
    const rg_metrics_hist_t *h0, size_t stride)
{
    rg_uint_t                 b, k;
    uint64_t                  n;
    const rg_metrics_hist_t  *h;

    n = 0;

    for (k = 0; k < g->n; k++) {
        h = (const rg_metrics_hist_t *) ((const char *) h0
                                         + g->idx[k] * stride);
        for (b = 0; b < RG_METRICS_BUCKETS; b++) {
            n += rg_metrics_sum(w, &h->bucket[b], 0);
        }
    }

    return n;
}


static void
rg_metrics_sessions(rg_metrics_w_t *w)
{
    rg_uint_t           i;
    rg_metrics_slot_t  *s0;

    s0 = &w->zone->slots[0];

    rg_metrics_family(w, "reagent_sessions", "gauge",
                      "Sessions running now, by state.");
    for (i = 0; i < RG_METRICS_FINAL; i++) {
        rg_metrics_printf(w, "reagent_sessions{state=\"%s\"} %lld\n",
                          rg_metrics_states[i],
                          (long long) rg_metrics_sum(w, &s0->sessions[i], 1));
    }

    rg_metrics_family(w, "reagent_sessions_finished_total", "counter",
                      "Sessions that ended, by final status.");
    for (i = RG_METRICS_FINAL; i < RG_METRICS_STATES; i++) {
        rg_metrics_printf(w, "reagent_sessions_finished_total{status=\"%s\"}"
                          " %llu\n", rg_metrics_states[i],
                          (unsigned long long)
                          rg_metrics_sum(w, &s0->finished[i], 0));
    }
}


/* the groups whose entries' histograms counted nothing lose their name
 * (nothing is said of them): the "other" group alone, or (all) any */
static void
rg_metrics_quiet(rg_metrics_w_t *w, rg_metrics_group_t *groups,
    rg_uint_t n, const rg_metrics_hist_t *h0, rg_uint_t all)
{
    rg_uint_t  i;

    for (i = 0; i < n; i++) {
        if ((all || groups[i].other_only)
            && rg_metrics_hist_count(w, &groups[i], h0,
                                     sizeof(rg_metrics_hist_t)) == 0)
        {
            groups[i].name = NULL;
        }
    }
}


/* a counter family of a table's groups: each group (its value named
 * "label") has one at "offset" of a slot, "stride" apart, or one a kind
 * where kinds are given (the kind o at "kstride" further; "key" names
 * it); micro: the counter holds millionths, said as a fraction */
typedef struct {
    const char          *name;
    const char          *help;
    const char          *label;
    size_t               offset;
    size_t               stride;
    const char          *key;
    const char *const   *kinds;
    rg_uint_t            nkinds;
    size_t               kstride;
    unsigned             micro:1;
} rg_metrics_counter_t;


#define rg_metrics_field(f)                                                   \
    offsetof(rg_metrics_slot_t, f), sizeof(((rg_metrics_slot_t *) 0)->f[0])


static void
rg_metrics_counters(rg_metrics_w_t *w, const rg_metrics_counter_t *c,
    const rg_metrics_group_t *groups, rg_uint_t n)
{
    char                    esc[160], kind[96];
    uint64_t                v;
    rg_uint_t               i, o;
    const rg_metrics_u64_t *p0;

    rg_metrics_family(w, c->name, "counter", c->help);

    p0 = (const rg_metrics_u64_t *) ((const char *) &w->zone->slots[0]
                                     + c->offset);

    for (i = 0; i < n; i++) {
        if (groups[i].name == NULL) {
            continue;
        }
        rg_metrics_esc(groups[i].name, esc, sizeof(esc));

        for (o = 0; o < (c->kinds ? c->nkinds : 1); o++) {
            v = rg_metrics_gsum(w, &groups[i], (const rg_metrics_u64_t *)
                                ((const char *) p0 + o * c->kstride),
                                c->stride);
            kind[0] = '\0';
            if (c->kinds) {
                snprintf(kind, sizeof(kind), ",%s=\"%s\"", c->key,
                         c->kinds[o]);
            }

            if (c->micro) {
                rg_metrics_printf(w, "%s{%s=\"%s\"%s} %.6f\n", c->name,
                                  c->label, esc, kind, (double) v / 1e6);

            } else {
                rg_metrics_printf(w, "%s{%s=\"%s\"%s} %llu\n", c->name,
                                  c->label, esc, kind,
                                  (unsigned long long) v);
            }
        }
    }
}


/* a histogram family: the histogram of each group still named */
static void
rg_metrics_group_hists(rg_metrics_w_t *w, const char *name,
    const char *help, const char *label, rg_metrics_hist_e kind,
    const rg_metrics_group_t *groups, rg_uint_t n, const rg_metrics_hist_t *h0)
{
    char       esc[160], labels[256];
    rg_uint_t  i;

    rg_metrics_family(w, name, "histogram", help);

    for (i = 0; i < n; i++) {
        if (groups[i].name == NULL) {
            continue;
        }
        snprintf(labels, sizeof(labels), "%s=\"%s\"", label,
                 rg_metrics_esc(groups[i].name, esc, sizeof(esc)));
        rg_metrics_hist(w, name, labels, kind, &groups[i], h0,
                        sizeof(rg_metrics_hist_t));
    }
}


static const char  *rg_metrics_tokens[] = { "prompt", "completion" };
static const char  *rg_metrics_cache[] = { "read", "write" };
static const char  *rg_metrics_tool_outcomes[RG_METRICS_TOOL_OUTCOMES] = {
    "ok", "error", "timeout", "denied"
};


/* by upstream: the calls, then (after their histogram) the rest */
static const rg_metrics_counter_t  rg_metrics_model_counters[] = {
    { "reagent_model_calls_total", "Model calls ended (retries included), "
      "by upstream and outcome.", "upstream",
      rg_metrics_field(model_calls), "outcome", rg_metrics_outcomes,
      RG_METRICS_OUTCOMES, sizeof(rg_metrics_u64_t), 0 },
    { "reagent_model_tokens_total", "Tokens the upstreams counted, by kind.",
      "upstream", rg_metrics_field(model_tokens), "kind", rg_metrics_tokens,
      2, sizeof(rg_metrics_u64_t), 0 },
    { "reagent_model_cache_tokens_total", "Prompt tokens read from a prompt "
      "cache, or written to one, by upstream.", "upstream",
      rg_metrics_field(model_cache), "kind", rg_metrics_cache, 2,
      sizeof(rg_metrics_u64_t), 0 },
    { "reagent_model_cost_dollars_total", "What the model calls cost by the "
      "llms' prices, by upstream.", "upstream", rg_metrics_field(model_cost),
      NULL, NULL, 0, 0, 1 },
    { "reagent_model_retries_total", "Model call attempts that were retried, "
      "by upstream.", "upstream", rg_metrics_field(model_retries), NULL,
      NULL, 0, 0, 0 }
};


static const rg_metrics_counter_t  rg_metrics_tool_counter = {
    "reagent_tool_calls_total", "Tool calls ended, by tool and outcome.",
    "tool", rg_metrics_field(tool_calls), "outcome", rg_metrics_tool_outcomes,
    RG_METRICS_TOOL_OUTCOMES, sizeof(rg_metrics_u64_t), 0
};


static void
rg_metrics_models(rg_metrics_w_t *w)
{
    rg_uint_t            i, n;
    rg_metrics_slot_t   *s0;
    rg_metrics_group_t   groups[RG_METRICS_UPSTREAMS];

    s0 = &w->zone->slots[0];
    n = rg_metrics_groups(w, RG_METRICS_UPSTREAM, groups);

    /* nothing under "other" */
    rg_metrics_quiet(w, groups, n, &s0->model_seconds[0], 0);

    rg_metrics_counters(w, &rg_metrics_model_counters[0], groups, n);

    rg_metrics_group_hists(w, "reagent_model_call_duration_seconds",
                           "Time from a model call's first attempt to its "
                           "end, by upstream.", "upstream",
                           RG_METRICS_H_MODEL, groups, n,
                           &s0->model_seconds[0]);

    for (i = 1; i < rg_nelems(rg_metrics_model_counters); i++) {
        rg_metrics_counters(w, &rg_metrics_model_counters[i], groups, n);
    }
}


static void
rg_metrics_tools(rg_metrics_w_t *w)
{
    rg_uint_t            n;
    rg_metrics_slot_t   *s0;
    rg_metrics_group_t  *groups;

    groups = malloc(RG_METRICS_TOOLS * sizeof(rg_metrics_group_t));
    if (groups == NULL) {
        w->rc = RG_ERROR;
        return;
    }

    s0 = &w->zone->slots[0];
    n = rg_metrics_groups(w, RG_METRICS_TOOL, groups);

    rg_metrics_quiet(w, groups, n, &s0->tool_seconds[0], 0);

    rg_metrics_counters(w, &rg_metrics_tool_counter, groups, n);

    rg_metrics_group_hists(w, "reagent_tool_call_duration_seconds",
                           "Time a tool call ran, by tool.", "tool",
                           RG_METRICS_H_TOOL, groups, n,
                           &s0->tool_seconds[0]);

    free(groups);
}


/* a gauge of each shard, as the worker that read the queue last saw it */
static void
rg_metrics_shards(rg_metrics_w_t *w, const char *name, const char *help,
    const rg_metrics_u64_t *p, rg_uint_t nshards)
{
    rg_uint_t  shard;

    rg_metrics_family(w, name, "gauge", help);

    for (shard = 0; shard < nshards; shard++) {
        rg_metrics_printf(w, "%s{shard=\"%lu\"} %llu\n", name,
                          (unsigned long) shard, (unsigned long long)
                          rg_metrics_load(&p[shard]));
    }
}


static void
rg_metrics_queue_text(rg_metrics_w_t *w)
{
    uint64_t            at, best_at;
    rg_uint_t           i, nshards;
    rg_metrics_slot_t  *s0, *best;

    static const char  *outcomes[RG_METRICS_TASK_OUTCOMES] = {
        "done", "lost", "reclaimed", "dead", "requeued", "forgotten"
    };

    s0 = &w->zone->slots[0];

    rg_metrics_family(w, "reagent_dedupe_hits_total", "counter",
                      "Tool calls answered from the dedupe cache.");
    rg_metrics_printf(w, "reagent_dedupe_hits_total %llu\n",
                      (unsigned long long)
                      rg_metrics_sum(w, &s0->dedupe_hits, 0));

    rg_metrics_family(w, "reagent_queue_tasks_total", "counter",
                      "Queue tasks of the workers, by outcome.");
    for (i = 0; i < RG_METRICS_TASK_OUTCOMES; i++) {
        rg_metrics_printf(w, "reagent_queue_tasks_total{outcome=\"%s\"} "
                          "%llu\n", outcomes[i], (unsigned long long)
                          rg_metrics_sum(w, &s0->tasks[i], 0));
    }

    rg_metrics_family(w, "reagent_store_losses_total", "counter",
                      "Times a worker found that the store had lost its "
                      "memory (each worker counts each loss it saw).");
    rg_metrics_printf(w, "reagent_store_losses_total %llu\n",
                      (unsigned long long)
                      rg_metrics_sum(w, &s0->store_losses, 0));

    /* the freshest reading of any worker */
    best = NULL;
    best_at = 0;

    for (i = 0; i < w->zone->nslots; i++) {
        at = atomic_load_explicit(&w->zone->slots[i].queue_at,
                                  memory_order_acquire);
        if (at > best_at) {
            best_at = at;
            best = &w->zone->slots[i];
        }
    }

    if (best == NULL) {
        return;                        /* no queue read (run, batch) */
    }

    nshards = rg_min(rg_metrics_load(&best->queue_shards),
                     RG_METRICS_SHARDS);

    rg_metrics_shards(w, "reagent_queue_depth", "Entries in a shard's "
                      "stream (XLEN).", best->queue_depth, nshards);
    rg_metrics_shards(w, "reagent_queue_pending", "Entries delivered and not "
                      "yet acknowledged (XPENDING).", best->queue_pending,
                      nshards);
    rg_metrics_shards(w, "reagent_queue_dead_letters", "Entries in a shard's "
                      "dead-letter stream.", best->queue_dead, nshards);

    rg_metrics_family(w, "reagent_tasks_parked", "gauge",
                      "Tasks parked for an operator's decision on their "
                      "dangerous calls (no worker holds them).");
    rg_metrics_printf(w, "reagent_tasks_parked %llu\n", (unsigned long long)
                      rg_metrics_load(&best->queue_parked));
}


static void
rg_metrics_redis_text(rg_metrics_w_t *w)
{
    rg_uint_t           i;
    rg_metrics_slot_t  *s0;

    static const char  *kinds[RG_METRICS_REDIS_KINDS] = {
        "reply", "timeout", "connection", "rejected"
    };

    s0 = &w->zone->slots[0];

    rg_metrics_family(w, "reagent_redis_command_duration_seconds",
                      "histogram", "Time from a Redis command to its "
                      "answer or failure.");
    rg_metrics_hist(w, "reagent_redis_command_duration_seconds", "",
                    RG_METRICS_H_REDIS, NULL, &s0->redis_seconds, 0);

    rg_metrics_family(w, "reagent_redis_errors_total", "counter",
                      "Redis commands that failed, by kind.");
    for (i = 0; i < RG_METRICS_REDIS_KINDS; i++) {
        rg_metrics_printf(w, "reagent_redis_errors_total{kind=\"%s\"} %llu\n",
                          kinds[i], (unsigned long long)
                          rg_metrics_sum(w, &s0->redis_errors[i], 0));
    }
}


static void
rg_metrics_trace_text(rg_metrics_w_t *w)
{
    rg_metrics_slot_t  *s0;

    s0 = &w->zone->slots[0];

    rg_metrics_family(w, "reagent_trace_spans_exported_total", "counter",
                      "Spans the OTLP collector took.");
    rg_metrics_printf(w, "reagent_trace_spans_exported_total %llu\n",
                      (unsigned long long)
                      rg_metrics_sum(w, &s0->trace_spans[0], 0));

    rg_metrics_family(w, "reagent_trace_spans_dropped_total", "counter",
                      "Spans dropped: the export queue full, or a batch "
                      "the collector did not take.");
    rg_metrics_printf(w, "reagent_trace_spans_dropped_total %llu\n",
                      (unsigned long long)
                      rg_metrics_sum(w, &s0->trace_spans[1], 0));
}


static void
rg_metrics_process_text(rg_metrics_w_t *w)
{
    rg_uint_t  i, n;

    n = 0;
    for (i = 0; i < w->zone->nslots; i++) {
        n += w->alive[i];
    }

    rg_metrics_family(w, "reagent_workers", "gauge",
                      "Worker processes alive.");
    rg_metrics_printf(w, "reagent_workers %lu\n", (unsigned long) n);

    rg_metrics_family(w, "reagent_open_fds", "gauge",
                      "Open file descriptors of a worker.");
    for (i = 0; i < w->zone->nslots; i++) {
        if (w->alive[i]) {
            rg_metrics_printf(w, "reagent_open_fds{worker=\"%lu\"} %llu\n",
                              (unsigned long) i, (unsigned long long)
                              rg_metrics_load(&w->zone->slots[i].open_fds));
        }
    }

    rg_metrics_family(w, "reagent_resident_memory_bytes", "gauge",
                      "Resident memory of a worker.");
    for (i = 0; i < w->zone->nslots; i++) {
        if (w->alive[i]) {
            rg_metrics_printf(w, "reagent_resident_memory_bytes{worker="
                              "\"%lu\"} %llu\n", (unsigned long) i,
                              (unsigned long long)
                              rg_metrics_load(
                                  &w->zone->slots[i].resident_bytes));
        }
    }
}


static void
rg_metrics_http_text(rg_metrics_w_t *w)
{
    char                 esc[160], code[8];
    uint64_t             v;
    rg_uint_t            i, n, mi, ci;
    rg_metrics_slot_t   *s0;
    rg_metrics_group_t   groups[RG_METRICS_ROUTES];

    s0 = &w->zone->slots[0];
    n = rg_metrics_groups(w, RG_METRICS_ROUTE, groups);

    rg_metrics_family(w, "reagent_http_requests_total", "counter",
                      "Requests of the HTTP API, by method, route and "
                      "status code.");
    for (i = 0; i < n; i++) {
        rg_metrics_esc(groups[i].name, esc, sizeof(esc));
        for (mi = 0; mi < RG_METRICS_METHODS; mi++) {
            for (ci = 0; ci < RG_METRICS_CODES; ci++) {
                v = rg_metrics_gsum(w, &groups[i],
                                    &s0->http_requests[0][mi][ci],
                                    sizeof(s0->http_requests[0]));
                if (v == 0) {
                    continue;          /* only what happened */
                }
                rg_metrics_code(ci, code, sizeof(code));
                rg_metrics_printf(w, "reagent_http_requests_total{method="
                                  "\"%s\",route=\"%s\",code=\"%s\"} %llu\n",
                                  rg_metrics_method(mi), esc, code,
                                  (unsigned long long) v);
            }
        }
    }

    rg_metrics_quiet(w, groups, n, &s0->http_seconds[0], 1);
    rg_metrics_group_hists(w, "reagent_http_request_duration_seconds",
                           "Time to answer a request of the HTTP API, by "
                           "route.", "route", RG_METRICS_H_HTTP, groups, n,
                           &s0->http_seconds[0]);
}


/* a slot's worker is there: its pid is set and the process exists */
static rg_uint_t
rg_metrics_alive(rg_metrics_zone_t *zone, rg_uint_t i)
{
    int64_t  pid;

    pid = atomic_load_explicit(&zone->slots[i].pid, memory_order_relaxed);

    return pid > 0 && (pid == getpid() || kill((pid_t) pid, 0) == 0
                       || errno == EPERM);
}


rg_int_t
rg_metrics_workers(rg_cycle_t *cycle, rg_uint_t *alive, rg_uint_t *slots)
{
    rg_uint_t           i;
    rg_metrics_conf_t  *mcf;

    mcf = rg_metrics_conf(cycle);
    if (mcf == NULL || mcf->zone == NULL) {
        return RG_ERROR;
    }

    *slots = mcf->zone->nslots;
    *alive = 0;

    for (i = 0; i < *slots; i++) {
        *alive += rg_metrics_alive(mcf->zone, i);
    }

    return RG_OK;
}


rg_int_t
rg_metrics_render(rg_cycle_t *cycle, rg_buf_t *out)
{
    rg_uint_t           i;
    rg_metrics_w_t      w;
    rg_metrics_conf_t  *mcf;

    mcf = rg_metrics_conf(cycle);
    if (mcf == NULL || mcf->zone == NULL) {
        return RG_ERROR;
    }

    w.out = out;
    w.zone = mcf->zone;
    w.rc = RG_OK;
    w.alive = calloc(w.zone->nslots, 1);
    if (w.alive == NULL) {
        return RG_ERROR;
    }

    /* this process's own figures are fresh; others' are at most a
     * second old */
    if (rg_metrics_here && rg_metrics_here->zone == w.zone) {
        rg_metrics_refresh(rg_metrics_here);
    }

    for (i = 0; i < w.zone->nslots; i++) {
        w.alive[i] = rg_metrics_alive(w.zone, i);
    }

    rg_metrics_process_text(&w);
    rg_metrics_sessions(&w);
    rg_metrics_models(&w);
    rg_metrics_tools(&w);
    rg_metrics_queue_text(&w);
    rg_metrics_redis_text(&w);
    rg_metrics_trace_text(&w);
    rg_metrics_http_text(&w);

    free(w.alive);

    return w.rc;
}
