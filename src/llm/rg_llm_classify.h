/* rg_llm_classify.h: what a provider's error means for the session,
 * read by structure first (the HTTP status, the error's code and type,
 * the structured details some providers send, x-should-retry and the
 * wait headers), then by wording, from phrase tables per class. Every
 * codec reads its own error body into an rg_llm_error_t and asks here. */

#ifndef RG_LLM_CLASSIFY_H
#define RG_LLM_CLASSIFY_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm.h>


/* the period of a limit, from structured details (a QuotaFailure's
 * quotaId) or from the words */
#define RG_LLM_PERIOD_NONE     0
#define RG_LLM_PERIOD_MINUTE   1
#define RG_LLM_PERIOD_LONG     2      /* a day, a month: waiting is no cure */


typedef struct {
    int                 http_status;  /* 2xx: an error sent after it */
    int64_t             embedded;     /* a status an error after a 200
                                         carries ("code": 429), 0 */
    const rg_llm_hints_t *hints;      /* NULL: none */
    const rg_str_t     *type;         /* each may be NULL */
    const rg_str_t     *code;
    const rg_str_t     *message;
    rg_msec_t           body_retry;   /* a RetryInfo's retryDelay */
    int                 period;       /* RG_LLM_PERIOD_*, from details */
} rg_llm_error_t;


/* Classifies e, and sets r->retry_after (the wait asked for, headers
 * first, then the body, then a reset), r->rate_requested and
 * r->rate_limit ("Requested N, Limit M"). */
rg_llm_status_e rg_llm_classify(const rg_llm_error_t *e,
    rg_llm_response_t *r);

/* A duration as providers write one: "1.4s", "120ms", "7m12s", "1h2m",
 * "38.5s", "20 seconds", "2 minutes", a bare number of seconds; in ms
 * (at most RG_LLM_MAX_RETRY_AFTER), 0 when it says nothing. *used gets
 * the bytes read (may be NULL). */
rg_msec_t rg_llm_duration(const char *s, size_t len, size_t *used);

/* An RFC 3339 time ("2025-01-02T03:04:05.5Z", "…+02:00") as ms from
 * now (the wall clock `now`, in seconds); 0 when past or unreadable. */
rg_msec_t rg_llm_reset_time(const char *s, size_t len, time_t now);

/* case-insensitive search of a lowercase needle in s[0..len) */
rg_uint_t rg_llm_contains(const char *s, size_t len, const char *needle);

#endif /* RG_LLM_CLASSIFY_H */
