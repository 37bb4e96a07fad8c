/* rg_trace.h: the trace part. Spans after the OpenTelemetry GenAI
 * conventions (invoke_agent, chat, execute_tool) are recorded by whoever
 * does the work (rg_trace_span.c) and, with `otlp_endpoint URL;`,
 * exported as OTLP/HTTP JSON in batches through the engine's curl multi
 * (rg_trace_export.c), never blocking: past otlp_max_queue, or when the
 * collector cannot be reached, spans are dropped and counted. Without an
 * endpoint nothing is recorded, but ids are still made, so a session's
 * requests carry its traceparent all the same. Directives at main
 * level (rg_trace.c):
 *
 *   otlp_endpoint URL;        none: spans are not exported
 *   otlp_service_name NAME;   reagent
 *   otlp_batch N;             512 spans per request at most
 *   otlp_flush TIME;          2s: a batch goes at least this often
 *   otlp_max_queue N;         8192 spans waiting, beyond: dropped
 *   otlp_timeout TIME;        5s per export request
 */

#ifndef RG_TRACE_H
#define RG_TRACE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_traceparent.h>

/* OTLP's SpanKind */
#define RG_TRACE_INTERNAL   1
#define RG_TRACE_CLIENT     3

typedef struct rg_trace_s  rg_trace_t;

typedef struct {
    rg_str_t            endpoint;         /* "" : no export */
    rg_str_t            service_name;
    rg_int_t            batch;
    rg_msec_t           flush;
    rg_int_t            max_queue;
    rg_msec_t           timeout;
} rg_trace_conf_t;


/* what an engine's exporter did, for metrics */
typedef struct {
    uint64_t            spans;            /* ended and queued */
    uint64_t            exported;         /* accepted by the collector */
    uint64_t            dropped;          /* queue full or export failed */
    uint64_t            batches;          /* export requests sent */
    uint64_t            failed;           /* of them, those that failed */
    rg_uint_t           queued;           /* waiting now */
} rg_trace_stats_t;


/* One span in the making, embedded in what it measures: ids and the
 * start; its name, attributes and end are given when it ends. */
typedef struct {
    char                trace_id[RG_TRACE_ID_LEN + 1];
    char                span_id[RG_TRACE_SPAN_LEN + 1];
    char                parent_id[RG_TRACE_SPAN_LEN + 1];  /* "": root */
    uint64_t            start;            /* unix ns; 0: not started */
} rg_trace_span_t;


/* an attribute: a string (str, len) or, when str is NULL, an integer
 * (num), or a real (dnum) when real is set */
typedef struct {
    const char         *key;
    const char         *str;
    size_t              len;
    int64_t             num;
    double              dnum;
    unsigned            real:1;
} rg_trace_attr_t;


/* how a span ended */
typedef struct {
    const char         *name;             /* "chat gpt-4o" */
    rg_uint_t           kind;             /* RG_TRACE_INTERNAL, ... */
    const rg_trace_attr_t *attrs;
    rg_uint_t           nattrs;
    const char         *error;            /* error.type, NULL: ok */
    const char         *message;          /* the status message, or NULL */
    const char         *link;             /* a span id of the same trace it
                                             follows (a resume), or NULL */
} rg_trace_end_t;


extern rg_part_t  rg_trace_part;

#define rg_trace_conf(cycle)                                                 \
    ((rg_trace_conf_t *) rg_cycle_conf(cycle, &rg_trace_part))
#define rg_trace_ctx(e)                                                      \
    ((rg_trace_t *) rg_engine_ctx(e, &rg_trace_part))


/* A new span under trace_id (NULL or "": a new trace) and parent_id
 * (NULL or "": none), started now. RG_ERROR only when the kernel gives
 * no random bytes. */
rg_int_t rg_trace_span_start(rg_trace_span_t *sp, const char *trace_id,
    const char *parent_id);
/* its traceparent, for a request made within it */
void rg_trace_span_header(const rg_trace_span_t *sp,
    char out[RG_TRACEPARENT_SIZE]);
/* ends it now and hands it to the engine's exporter (e may be NULL, or
 * have none: then it is only forgotten); sp may be started again */
void rg_trace_span_end(rg_engine_t *e, rg_trace_span_t *sp,
    const rg_trace_end_t *end);
/* its OTLP JSON as it would end at now, appended to b */
rg_int_t rg_trace_span_json(rg_buf_t *b, rg_trace_span_t *sp,
    const rg_trace_end_t *end, uint64_t now);
/* whether ended spans go anywhere: callers skip building attributes */
rg_uint_t rg_trace_enabled(rg_engine_t *e);

/* a new id of nbytes random bytes (16: a trace, 8: a span), in hex, not
 * all zero (getrandom) */
rg_int_t rg_trace_id_new(char *out, size_t nbytes);
/* the time now, in nanoseconds since the epoch */
uint64_t rg_trace_now(void);

/* the exporter (rg_trace_export.c) */
rg_trace_t *rg_trace_create(rg_engine_t *e, rg_trace_conf_t *conf);
/* one last flush, bounded by min(otlp_timeout, 1s), then everything
 * freed; what could not go is counted dropped */
void rg_trace_destroy(rg_trace_t *t);
/* takes one span's OTLP JSON (malloc'ed; the exporter frees it) */
void rg_trace_push(rg_trace_t *t, char *json, size_t len);
const rg_trace_stats_t *rg_trace_stats(rg_engine_t *e);

#endif /* RG_TRACE_H */
