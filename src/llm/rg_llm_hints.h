/* rg_llm_hints.h: what an answer's headers say of waiting, read into an
 * rg_llm_hints_t (rg_llm.h) one header line at a time: Retry-After and
 * retry-after-ms, x-should-retry, and the remaining and reset headers of
 * OpenAI-style (x-ratelimit-*) and Anthropic (anthropic-ratelimit-*)
 * limits. The classifier weighs them (rg_llm_classify.c). */

#ifndef RG_LLM_HINTS_H
#define RG_LLM_HINTS_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm.h>
#include <time.h>


void rg_llm_hints_init(rg_llm_hints_t *h);

/* One header line (its CRLF may be there). 1 when it said something of
 * waiting; `now` is the wall clock, for dates. */
rg_uint_t rg_llm_hints_header(rg_llm_hints_t *h, const char *p, size_t len,
    time_t now);

/* the headers are all read: h->reset is the latest reset of an exhausted
 * limit, else the soonest of any */
void rg_llm_hints_end(rg_llm_hints_t *h);

/* A Retry-After (seconds or an HTTP date) or retry-after-ms value, as a
 * wait in ms: at most RG_LLM_MAX_RETRY_AFTER, 0 when it says nothing
 * usable. `now` is the wall clock, for dates. */
rg_msec_t rg_llm_retry_after(const char *value, size_t len, rg_uint_t ms,
    time_t now);

#endif /* RG_LLM_HINTS_H */
