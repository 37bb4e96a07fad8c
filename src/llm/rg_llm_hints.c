/* rg_llm_hints.c: reads what an answer's headers say of waiting, one
 * line at a time (the client's header callback, a test's recorded
 * response): retry-after-ms wins over Retry-After (seconds or an HTTP
 * date); x-should-retry: true/false; x-ratelimit-remaining-* and
 * x-ratelimit-reset-* ("1.4s", "6m0s", "20ms"), and Anthropic's
 * anthropic-ratelimit-*-remaining and -reset (RFC 3339 times). No I/O. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm.h>
#include <rg_llm_hints.h>
#include <rg_llm_classify.h>

#include <curl/curl.h>
#include <math.h>


void
rg_llm_hints_init(rg_llm_hints_t *h)
{
    memset(h, 0, sizeof(rg_llm_hints_t));

    h->should_retry = -1;
    h->left[0] = -1;
    h->left[1] = -1;
}


/* the limit a rate header names: 0 requests, 1 tokens (input and output
 * tokens count as tokens), -1 neither */
static int
rg_llm_hints_bucket(const char *p, size_t len)
{
    if (rg_llm_contains(p, len, "request")) {
        return 0;
    }

    return rg_llm_contains(p, len, "token") ? 1 : -1;
}


/* x-ratelimit-remaining-tokens: 0, x-ratelimit-reset-tokens: 1.4s;
 * anthropic-ratelimit-tokens-remaining: 0,
 * anthropic-ratelimit-tokens-reset: 2025-01-02T03:04:05Z */
static void
rg_llm_hints_rate(rg_llm_hints_t *h, const char *p, size_t len,
    const char *v, size_t vlen, time_t now)
{
    int        k;
    size_t     i;
    rg_msec_t  ms;

    k = rg_llm_hints_bucket(p, len);
    if (k < 0) {
        return;
    }

    while (vlen && *v == ' ') {
        v++;
        vlen--;
    }

    if (rg_llm_contains(p, len, "remaining")) {
        for (i = 0; i < vlen && v[i] >= '0' && v[i] <= '9'; i++) {
            /* void */
        }

        if (i > 0 && (i == vlen || v[i] == ' ')) {
            /* "0", "00": none left */
            h->left[k] = (strspn(v, "0") >= i) ? 0 : 1;
        }

        return;
    }

    if (!rg_llm_contains(p, len, "reset")) {
        return;
    }

    ms = (vlen > 10 && v[4] == '-') ? rg_llm_reset_time(v, vlen, now)
                                    : rg_llm_duration(v, vlen, NULL);

    if (ms && ms > h->resets[k]) {
        h->resets[k] = ms;
    }
}


rg_uint_t
rg_llm_hints_header(rg_llm_hints_t *h, const char *p, size_t len,
    time_t now)
{
    size_t       nlen;
    rg_msec_t    ms;
    const char  *colon;

    while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == '\n')) {
        len--;
    }

    if (rg_str_casecmp_prefix(p, len, "retry-after-ms:") == 0) {
        ms = rg_llm_retry_after(p + 15, len - 15, 1, now);
        if (ms) {
            h->retry_after = ms;
            h->retry_ms = 1;
        }

        return 1;
    }

    if (rg_str_casecmp_prefix(p, len, "retry-after:") == 0) {
        /* retry-after-ms is the finer: it stands, whichever came first */
        if (h->retry_after == 0 && !h->retry_ms) {
            h->retry_after = rg_llm_retry_after(p + 12, len - 12, 0, now);
        }

        return 1;
    }

    if (rg_str_casecmp_prefix(p, len, "x-should-retry:") == 0) {
        h->should_retry = rg_llm_contains(p + 15, len - 15, "true")
                          ? 1
                          : rg_llm_contains(p + 15, len - 15, "false")
                            ? 0 : -1;
        return 1;
    }

    if (rg_str_casecmp_prefix(p, len, "x-ratelimit-") == 0
        || rg_str_casecmp_prefix(p, len, "anthropic-ratelimit-") == 0)
    {
        colon = memchr(p, ':', len);

        if (colon) {
            nlen = (size_t) (colon - p);
            rg_llm_hints_rate(h, p, nlen, colon + 1, len - nlen - 1, now);
        }

        return 1;
    }

    return 0;
}


void
rg_llm_hints_end(rg_llm_hints_t *h)
{
    int        k;
    rg_msec_t  reset;

    reset = 0;

    for (k = 0; k < 2; k++) {
        if (h->left[k] == 0 && h->resets[k] > reset) {
            reset = h->resets[k];
            h->exhausted = 1;
        }
    }

    for (k = 0; reset == 0 && k < 2; k++) {
        if (h->resets[k] && (reset == 0 || h->resets[k] < reset)) {
            reset = h->resets[k];
        }
    }

    h->reset = reset;
}


rg_msec_t
rg_llm_retry_after(const char *value, size_t len, rg_uint_t ms, time_t now)
{
    char    *end, val[64];
    double   d;
    time_t   t;

    len = rg_min(len, sizeof(val) - 1);
    memcpy(val, value, len);
    val[len] = '\0';

    d = strtod(val, &end);

    if (end != val) {
        /* compared as a double before any conversion: "1e30" and "inf"
         * are only very long waits; NaN and negatives say nothing */
        if (isnan(d) || d <= 0) {
            return 0;
        }

        d = ms ? d : d * 1000;

        return d >= RG_LLM_MAX_RETRY_AFTER ? RG_LLM_MAX_RETRY_AFTER
                                           : (rg_msec_t) d;
    }

    if (ms) {
        return 0;
    }

    /* an HTTP date */
    t = curl_getdate(val, NULL);

    if (t == -1 || t <= now) {
        return 0;
    }

    return (uint64_t) (t - now) >= RG_LLM_MAX_RETRY_AFTER / 1000
           ? RG_LLM_MAX_RETRY_AFTER : (rg_msec_t) (t - now) * 1000;
}


