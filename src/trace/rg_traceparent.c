/* rg_traceparent.c: the W3C Trace Context `traceparent` header,
 * version-format "-" trace-id "-" parent-id "-" trace-flags, read
 * strictly (an invalid one is ignored and a new trace started, as the
 * spec asks, so nothing here fails a task), written for each request
 * reagent makes on a session's behalf. Pure text: the fuzzed task
 * parser links it alone. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_traceparent.h>


static rg_uint_t
rg_traceparent_hex(const char *p, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) {
            return 0;
        }
    }

    return 1;
}


static rg_uint_t
rg_traceparent_zero(const char *p, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (p[i] != '0') {
            return 0;
        }
    }

    return 1;
}


static uint8_t
rg_traceparent_byte(const char *p)
{
    uint8_t  v;
    int      i;

    v = 0;

    for (i = 0; i < 2; i++) {
        v = (uint8_t) (v << 4);
        v |= (uint8_t) (p[i] <= '9' ? p[i] - '0' : p[i] - 'a' + 10);
    }

    return v;
}


rg_int_t
rg_traceparent_parse(rg_traceparent_t *tp, const char *s, size_t len)
{
    memset(tp, 0, sizeof(rg_traceparent_t));

    if (s == NULL) {
        return RG_DECLINED;
    }

    /* optional whitespace around a header value */
    while (len && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t')) {
        len--;
    }

    /* 00-<32>-<16>-<2> */
    if (len < RG_TRACEPARENT_SIZE - 1
        || !rg_traceparent_hex(s, 2)
        || s[2] != '-' || s[35] != '-' || s[52] != '-'
        || !rg_traceparent_hex(s + 3, RG_TRACE_ID_LEN)
        || !rg_traceparent_hex(s + 36, RG_TRACE_SPAN_LEN)
        || !rg_traceparent_hex(s + 53, 2))
    {
        return RG_DECLINED;
    }

    /* ff is forbidden; 00 has exactly these fields; a later version may
     * add fields after a dash */
    if (s[0] == 'f' && s[1] == 'f') {
        return RG_DECLINED;
    }

    if (s[0] == '0' && s[1] == '0') {
        if (len != RG_TRACEPARENT_SIZE - 1) {
            return RG_DECLINED;
        }

    } else if (len > RG_TRACEPARENT_SIZE - 1
               && s[RG_TRACEPARENT_SIZE - 1] != '-')
    {
        return RG_DECLINED;
    }

    if (rg_traceparent_zero(s + 3, RG_TRACE_ID_LEN)
        || rg_traceparent_zero(s + 36, RG_TRACE_SPAN_LEN))
    {
        return RG_DECLINED;
    }

    memcpy(tp->trace_id, s + 3, RG_TRACE_ID_LEN);
    memcpy(tp->parent_id, s + 36, RG_TRACE_SPAN_LEN);
    tp->flags = rg_traceparent_byte(s + 53);

    return RG_OK;
}


void
rg_traceparent_format(char out[RG_TRACEPARENT_SIZE], const char *trace_id,
    const char *span_id)
{
    char  *p;

    /* "00-%.32s-%.16s-01"; sampled: reagent records every span it makes */
    p = rg_cpymem(out, "00-", 3);
    p = rg_cpymem(p, trace_id, strnlen(trace_id, RG_TRACE_ID_LEN));
    *p++ = '-';
    p = rg_cpymem(p, span_id, strnlen(span_id, RG_TRACE_SPAN_LEN));
    memcpy(p, "-01", sizeof("-01"));
}
