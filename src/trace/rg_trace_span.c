/* rg_trace_span.c: spans as the OTLP/HTTP JSON encoding writes them
 * (opentelemetry-proto's trace.proto in the protobuf JSON mapping: ids
 * in lowercase hex, times and 64-bit integers as decimal strings), one
 * JSON object per span, written into a buffer when the span ends (every
 * string that is not plain ASCII escaped by jansson) and handed to the
 * engine's exporter. Ids come from the kernel (getrandom). */

#include <rg_config.h>
#include <rg_core.h>
#include <math.h>
#include <rg_digest.h>
#include <rg_engine.h>
#include <rg_trace.h>
#include <jansson.h>


rg_int_t
rg_trace_id_new(char *out, size_t nbytes)
{
    size_t     i;
    rg_uint_t  tries;

    /* all zero is invalid; at 2^-64 a second draw is a formality */
    for (tries = 0; tries < 4; tries++) {
        if (rg_random_hex(out, nbytes) != RG_OK) {
            return RG_ERROR;
        }

        for (i = 0; i < 2 * nbytes; i++) {
            if (out[i] != '0') {
                return RG_OK;
            }
        }
    }

    return RG_ERROR;
}


uint64_t
rg_trace_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_REALTIME, &ts);

    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}


rg_int_t
rg_trace_span_start(rg_trace_span_t *sp, const char *trace_id,
    const char *parent_id)
{
    if (trace_id && trace_id[0]) {
        if (sp->trace_id != trace_id) {
            rg_cpystrn(sp->trace_id, trace_id, sizeof(sp->trace_id));
        }

    } else if (rg_trace_id_new(sp->trace_id, RG_TRACE_ID_LEN / 2) != RG_OK) {
        sp->trace_id[0] = '\0';
        return RG_ERROR;
    }

    if (parent_id && parent_id[0]) {
        if (sp->parent_id != parent_id) {
            rg_cpystrn(sp->parent_id, parent_id, sizeof(sp->parent_id));
        }

    } else {
        sp->parent_id[0] = '\0';
    }

    if (rg_trace_id_new(sp->span_id, RG_TRACE_SPAN_LEN / 2) != RG_OK) {
        sp->span_id[0] = '\0';
        return RG_ERROR;
    }

    sp->start = rg_trace_now();

    return RG_OK;
}


void
rg_trace_span_header(const rg_trace_span_t *sp,
    char out[RG_TRACEPARENT_SIZE])
{
    if (sp->trace_id[0] == '\0' || sp->span_id[0] == '\0') {
        out[0] = '\0';
        return;
    }

    rg_traceparent_format(out, sp->trace_id, sp->span_id);
}


rg_uint_t
rg_trace_enabled(rg_engine_t *e)
{
    return e != NULL && rg_trace_ctx(e) != NULL;
}


#define rg_trace_lit(b, s)  rg_buf_append(b, s, sizeof(s) - 1)


/* a JSON string: plain printable ASCII as it is, anything else through
 * jansson, which escapes it (and refuses what is not UTF-8: then "") */
static int
rg_trace_json_dump(const char *p, size_t n, void *data)
{
    return rg_buf_append(data, p, n) == RG_OK ? 0 : -1;
}


static rg_int_t
rg_trace_str(rg_buf_t *b, const char *s, size_t len)
{
    size_t   i;
    json_t  *v;
    int      rc;

    for (i = 0; i < len; i++) {
        if ((unsigned char) s[i] < 0x20 || (unsigned char) s[i] > 0x7e
            || s[i] == '"' || s[i] == '\\')
        {
            break;
        }
    }

    if (i == len) {
        return rg_buf_reserve(b, len + 2) == RG_OK
               && rg_trace_lit(b, "\"") == RG_OK
               && rg_buf_append(b, s, len) == RG_OK
               && rg_trace_lit(b, "\"") == RG_OK ? RG_OK : RG_ERROR;
    }

    v = json_stringn(s, len);
    if (v == NULL) {
        return rg_trace_lit(b, "\"\"");
    }

    rc = json_dump_callback(v, rg_trace_json_dump, b, JSON_ENCODE_ANY);
    json_decref(v);

    return rc == 0 ? RG_OK : RG_ERROR;
}


static rg_int_t
rg_trace_attr(rg_buf_t *b, rg_uint_t first, const char *key,
    const char *str, size_t len, int64_t num, const double *real)
{
    if (rg_buf_printf(b, "%s{\"key\":", first ? "" : ",") != RG_OK
        || rg_trace_str(b, key, strlen(key)) != RG_OK)
    {
        return RG_ERROR;
    }

    if (real != NULL) {
        return rg_buf_printf(b, ",\"value\":{\"doubleValue\":%.9g}}",
                             isfinite(*real) ? *real : 0.0);
    }

    if (str == NULL) {
        return rg_buf_printf(b, ",\"value\":{\"intValue\":\"%lld\"}}",
                             (long long) num);
    }

    if (rg_trace_lit(b, ",\"value\":{\"stringValue\":") != RG_OK
        || rg_trace_str(b, str, len) != RG_OK)
    {
        return RG_ERROR;
    }

    return rg_trace_lit(b, "}}");
}


/* a status message: at most 512 bytes, cut on a character */
static size_t
rg_trace_message_len(const char *s)
{
    size_t  len;

    len = strlen(s);

    if (len > 512) {
        len = 512;
        while (len && ((unsigned char) s[len] & 0xc0) == 0x80) {
            len--;
        }
    }

    return len;
}


/* One span of trace.proto in the protobuf JSON mapping:
 * {"traceId","spanId","parentSpanId","name","kind","startTimeUnixNano",
 * "endTimeUnixNano","attributes":[{"key","value":{"stringValue"|
 * "intValue"}}],"status":{"code":2,"message"},"links":[…]} */
rg_int_t
rg_trace_span_json(rg_buf_t *b, rg_trace_span_t *sp,
    const rg_trace_end_t *end, uint64_t now)
{
    rg_uint_t           i;
    const char         *s;
    const rg_trace_attr_t  *a;

    if (rg_buf_reserve(b, 512) != RG_OK
        || rg_buf_printf(b, "{\"traceId\":\"%s\",\"spanId\":\"%s\"",
                         sp->trace_id, sp->span_id) != RG_OK
        || (sp->parent_id[0]
            && rg_buf_printf(b, ",\"parentSpanId\":\"%s\"", sp->parent_id)
               != RG_OK)
        || rg_trace_lit(b, ",\"name\":") != RG_OK
        || rg_trace_str(b, end->name, strlen(end->name)) != RG_OK
        || rg_buf_printf(b, ",\"kind\":%lu,\"startTimeUnixNano\":\"%llu\","
                         "\"endTimeUnixNano\":\"%llu\",\"attributes\":[",
                         (unsigned long) end->kind,
                         (unsigned long long) sp->start,
                         (unsigned long long) (now < sp->start ? sp->start
                                                               : now))
           != RG_OK)
    {
        return RG_ERROR;
    }

    for (i = 0; i < end->nattrs; i++) {
        a = &end->attrs[i];
        s = a->str;

        if (rg_trace_attr(b, i == 0, a->key, s, s ? a->len : 0, a->num,
                          a->real ? &a->dnum : NULL)
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    if (end->error
        && rg_trace_attr(b, end->nattrs == 0, "error.type", end->error,
                         strlen(end->error), 0, NULL) != RG_OK)
    {
        return RG_ERROR;
    }

    if (rg_trace_lit(b, "]") != RG_OK) {
        return RG_ERROR;
    }

    if (end->error) {
        /* STATUS_CODE_ERROR */
        s = end->message ? end->message : end->error;

        if (rg_trace_lit(b, ",\"status\":{\"code\":2,\"message\":")
            != RG_OK
            || rg_trace_str(b, s, rg_trace_message_len(s)) != RG_OK
            || rg_trace_lit(b, "}") != RG_OK)
        {
            return RG_ERROR;
        }
    }

    if (end->link && end->link[0]
        && rg_buf_printf(b, ",\"links\":[{\"traceId\":\"%s\",\"spanId\":"
                         "\"%.16s\"}]", sp->trace_id, end->link) != RG_OK)
    {
        return RG_ERROR;
    }

    return rg_trace_lit(b, "}");
}


void
rg_trace_span_end(rg_engine_t *e, rg_trace_span_t *sp,
    const rg_trace_end_t *end)
{
    rg_buf_t     b;
    rg_trace_t  *t;

    t = e ? rg_trace_ctx(e) : NULL;

    if (t == NULL || sp->start == 0 || sp->span_id[0] == '\0') {
        sp->start = 0;
        return;
    }

    memset(&b, 0, sizeof(b));

    if (rg_trace_span_json(&b, sp, end, rg_trace_now()) != RG_OK) {
        rg_buf_free(&b);
        sp->start = 0;
        rg_trace_push(t, NULL, 0);     /* counted dropped */
        return;
    }

    sp->start = 0;
    rg_trace_push(t, b.data, b.len);   /* the exporter owns it now */
}
