/* rg_trace_span.c: spans as the OTLP/HTTP JSON encoding writes them
 * (opentelemetry-proto's trace.proto in the protobuf JSON mapping: ids
 * in lowercase hex, times and 64-bit integers as decimal strings), one
 * JSON object per span, made with jansson when the span ends and handed
 * to the engine's exporter. Ids come from the kernel (getrandom). */

#include <rg_config.h>
#include <rg_core.h>
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
            snprintf(sp->trace_id, sizeof(sp->trace_id), "%s", trace_id);
        }

    } else if (rg_trace_id_new(sp->trace_id, RG_TRACE_ID_LEN / 2) != RG_OK) {
        sp->trace_id[0] = '\0';
        return RG_ERROR;
    }

    if (parent_id && parent_id[0]) {
        if (sp->parent_id != parent_id) {
            snprintf(sp->parent_id, sizeof(sp->parent_id), "%s", parent_id);
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


static json_t *
rg_trace_nanos(uint64_t ns)
{
    char  buf[32];

    snprintf(buf, sizeof(buf), "%llu", (unsigned long long) ns);

    return json_string(buf);
}


static rg_int_t
rg_trace_attr_add(json_t *a, const char *key, const char *str, size_t len,
    int64_t num)
{
    char     buf[32];
    json_t  *v;

    if (str) {
        v = json_pack("{s:s%}", "stringValue", str, len);

    } else {
        snprintf(buf, sizeof(buf), "%lld", (long long) num);
        v = json_pack("{s:s}", "intValue", buf);
    }

    if (v == NULL) {
        return RG_ERROR;
    }

    return json_array_append_new(a, json_pack("{s:s, s:o}", "key", key,
                                              "value", v)) == 0
           ? RG_OK : RG_ERROR;
}


/* a status message: at most 512 bytes, cut on a character; text that
 * is not UTF-8 is not sent, rather than the span lost */
static json_t *
rg_trace_message(const char *s)
{
    size_t   len;
    json_t  *v;

    len = strlen(s);

    if (len > 512) {
        len = 512;
        while (len && ((unsigned char) s[len] & 0xc0) == 0x80) {
            len--;
        }
    }

    v = json_stringn(s, len);

    return v ? v : json_string("");
}


void
rg_trace_span_end(rg_engine_t *e, rg_trace_span_t *sp,
    const rg_trace_end_t *end)
{
    char         *text;
    json_t       *j, *a, *st, *links;
    uint64_t      now;
    rg_uint_t     i;
    rg_trace_t   *t;
    const char   *s;

    t = e ? rg_trace_ctx(e) : NULL;

    if (t == NULL || sp->start == 0 || sp->span_id[0] == '\0') {
        sp->start = 0;
        return;
    }

    now = rg_trace_now();

    a = json_array();
    j = json_object();

    if (a == NULL || j == NULL) {
        goto failed;
    }

    for (i = 0; i < end->nattrs; i++) {
        s = end->attrs[i].str;
        if (rg_trace_attr_add(a, end->attrs[i].key, s,
                              s ? end->attrs[i].len : 0,
                              end->attrs[i].num) != RG_OK)
        {
            goto failed;
        }
    }

    if (end->error
        && rg_trace_attr_add(a, "error.type", end->error,
                             strlen(end->error), 0) != RG_OK)
    {
        goto failed;
    }

    if (json_object_set_new(j, "traceId", json_string(sp->trace_id))
        || json_object_set_new(j, "spanId", json_string(sp->span_id))
        || (sp->parent_id[0]
            && json_object_set_new(j, "parentSpanId",
                                   json_string(sp->parent_id)))
        || json_object_set_new(j, "name", json_string(end->name))
        || json_object_set_new(j, "kind", json_integer((json_int_t)
                                                       end->kind))
        || json_object_set_new(j, "startTimeUnixNano",
                               rg_trace_nanos(sp->start))
        || json_object_set_new(j, "endTimeUnixNano",
                               rg_trace_nanos(now < sp->start ? sp->start
                                                              : now))
        || json_object_set(j, "attributes", a))
    {
        goto failed;
    }

    if (end->error) {
        /* STATUS_CODE_ERROR */
        st = json_pack("{s:i, s:o}", "code", 2, "message",
                       rg_trace_message(end->message ? end->message
                                                     : end->error));
        if (st == NULL || json_object_set_new(j, "status", st)) {
            goto failed;
        }
    }

    if (end->link && end->link[0]) {
        links = json_pack("[{s:s, s:s}]", "traceId", sp->trace_id,
                          "spanId", end->link);
        if (links == NULL || json_object_set_new(j, "links", links)) {
            goto failed;
        }
    }

    text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    json_decref(a);
    sp->start = 0;

    if (text == NULL) {
        rg_trace_push(t, NULL, 0);     /* counted dropped */
        return;
    }

    rg_trace_push(t, text, strlen(text));
    return;

failed:

    json_decref(j);
    json_decref(a);
    sp->start = 0;
    rg_trace_push(t, NULL, 0);
}
