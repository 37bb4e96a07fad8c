/* rg_traceparent.h: the W3C Trace Context `traceparent` header
 * (rg_traceparent.c): read one a caller sent, write one for a request. Knows nothing of spans or their export. */

#ifndef RG_TRACEPARENT_H
#define RG_TRACEPARENT_H

#include <rg_config.h>
#include <rg_core.h>

#define RG_TRACE_ID_LEN     32            /* hex digits of a trace id */
#define RG_TRACE_SPAN_LEN   16            /* of a span id */
/* "00-" trace "-" span "-" flags, and a NUL */
#define RG_TRACEPARENT_SIZE 56

typedef struct {
    char                trace_id[RG_TRACE_ID_LEN + 1];
    char                parent_id[RG_TRACE_SPAN_LEN + 1];
    uint8_t             flags;
} rg_traceparent_t;


/* Reads a traceparent value: version 00 exactly, a later version by its
 * first four fields (as the W3C spec says a reader of an older version
 * must), never ff; lowercase hex, trace and parent ids not all zero.
 * Blanks around it are allowed. RG_OK, or RG_DECLINED when it is none:
 * the caller then starts a new trace. */
rg_int_t rg_traceparent_parse(rg_traceparent_t *tp, const char *s,
    size_t len);
/* "00-<trace_id>-<span_id>-01": the header value a callee is sent */
void rg_traceparent_format(char out[RG_TRACEPARENT_SIZE],
    const char *trace_id, const char *span_id);

#endif /* RG_TRACEPARENT_H */
