/* rg_llm_classify.c: what a provider's error means, read by structure
 * first and wording second. The order, and why:
 *
 *   1. the error's code and type, as words of a table (exact, any case):
 *      a context overflow, an exhausted quota or balance, a refused key
 *      or a missing model mean the same whatever the status says;
 *   2. the period of the limit a provider's details name (a
 *      QuotaFailure's quotaId: PerMinute waits, PerDay does not);
 *   3. the HTTP status (or the status an error after a 200 carries):
 *      429 waits, 5xx and 529 retry, other 4xx end the task; and for a
 *      429, the numbers "Limit N, … Requested M": M > N can never pass;
 *   4. x-should-retry, which overrides a retry either way;
 *   5. wording, from the phrase tables below (data: a row more extends
 *      them), on the message with every URL blanked out, so that a word
 *      inside a link ("…/settings/billing") never decides.
 *
 * The wait asked for is read here too: retry-after headers first, then a
 * RetryInfo, then "try again in 1.4s" in the text, then the reset of an
 * exhausted limit. No I/O, no JSON. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm.h>
#include <rg_llm_classify.h>

#include <ctype.h>
#include <strings.h>
#include <time.h>


/* what a word of a code or type says */
#define RG_LLM_C_NONE      0
#define RG_LLM_C_CONTEXT   1      /* the conversation does not fit */
#define RG_LLM_C_QUOTA     2      /* no quota, credits or money left */
#define RG_LLM_C_AUTH      3      /* the key is refused */
#define RG_LLM_C_GONE      4      /* no such model or endpoint */
#define RG_LLM_C_RATE      5      /* a limit of the rate: wait */
#define RG_LLM_C_SERVER    6      /* the provider's trouble: retry */
#define RG_LLM_C_INVALID   7      /* the request is wrong */

/* the most of a message the phrases are looked for in */
#define RG_LLM_TEXT_MAX    4096


typedef struct {
    const char         *word;
    int                 cls;
} rg_llm_word_t;


/* codes and types, as OpenAI, Anthropic, Gemini, Groq, DeepSeek,
 * llama.cpp, vLLM and the proxies in front of them send them */
static const rg_llm_word_t  rg_llm_words[] = {
    { "context_length_exceeded",      RG_LLM_C_CONTEXT },
    { "context_window_exceeded",      RG_LLM_C_CONTEXT },
    { "model_context_window_exceeded", RG_LLM_C_CONTEXT },
    { "exceed_context_size_error",    RG_LLM_C_CONTEXT },
    { "request_too_large",            RG_LLM_C_CONTEXT },

    { "insufficient_quota",           RG_LLM_C_QUOTA },
    { "billing_hard_limit_reached",   RG_LLM_C_QUOTA },
    { "billing_not_active",           RG_LLM_C_QUOTA },
    { "billing_error",                RG_LLM_C_QUOTA },
    { "insufficient_balance",         RG_LLM_C_QUOTA },
    { "insufficient_credits",         RG_LLM_C_QUOTA },
    { "insufficient_funds",           RG_LLM_C_QUOTA },
    { "payment_required",             RG_LLM_C_QUOTA },
    { "quota_exhausted",              RG_LLM_C_QUOTA },
    { "spend_limit_exceeded",         RG_LLM_C_QUOTA },

    { "invalid_api_key",              RG_LLM_C_AUTH },
    { "incorrect_api_key",            RG_LLM_C_AUTH },
    { "invalid_key",                  RG_LLM_C_AUTH },
    { "authentication_error",         RG_LLM_C_AUTH },
    { "authentication",               RG_LLM_C_AUTH },
    { "unauthenticated",              RG_LLM_C_AUTH },
    { "unauthorized",                 RG_LLM_C_AUTH },
    { "permission_error",             RG_LLM_C_AUTH },
    { "permission_denied",            RG_LLM_C_AUTH },
    { "account_deactivated",          RG_LLM_C_AUTH },

    { "model_not_found",              RG_LLM_C_GONE },
    { "not_found_error",              RG_LLM_C_GONE },
    { "not_found",                    RG_LLM_C_GONE },

    { "rate_limit_exceeded",          RG_LLM_C_RATE },
    { "rate_limit_error",             RG_LLM_C_RATE },
    { "rate_limited",                 RG_LLM_C_RATE },
    { "too_many_requests",            RG_LLM_C_RATE },
    { "resource_exhausted",           RG_LLM_C_RATE },
    { "tokens",                       RG_LLM_C_RATE },
    { "requests",                     RG_LLM_C_RATE },

    { "overloaded_error",             RG_LLM_C_SERVER },
    { "overloaded",                   RG_LLM_C_SERVER },
    { "engine_overloaded",            RG_LLM_C_SERVER },
    { "server_error",                 RG_LLM_C_SERVER },
    { "api_error",                    RG_LLM_C_SERVER },
    { "internal_error",               RG_LLM_C_SERVER },
    { "internal",                     RG_LLM_C_SERVER },
    { "service_unavailable",          RG_LLM_C_SERVER },
    { "unavailable",                  RG_LLM_C_SERVER },
    { "timeout_error",                RG_LLM_C_SERVER },

    { "invalid_request_error",        RG_LLM_C_INVALID },
    { "invalid_argument",             RG_LLM_C_INVALID },
    { "bad_request",                  RG_LLM_C_INVALID }
};


/* The words of a context overflow: OpenAI, DeepSeek and vLLM ("maximum
 * context length is N tokens"), vLLM V1 ("longer than the maximum model
 * length"), Ollama and LM Studio ("context length"), llama.cpp ("exceeds
 * the available context size"), TGI and Together ("`inputs` tokens +
 * `max_new_tokens` must be <="), Gemini's compatible endpoint ("The input
 * token count (N) exceeds the maximum number of tokens allowed"), xAI
 * ("maximum prompt length"), Anthropic ("prompt is too long"), Cohere
 * ("too many tokens"), Bedrock ("input is too long"). */
static const char  *rg_llm_context_phrases[] = {
    "context length",
    "maximum context",
    "context window",
    "context size",
    "exceed_context_size",
    "maximum model length",
    "maximum prompt length",
    "input token count",
    "maximum number of tokens allowed",
    "`inputs` tokens + `max_new_tokens`",
    "inputs` must have less than",
    "prompt is too long",
    "exceed context limit",
    "prompt too long",
    "too many tokens",
    "input is too long",
    "reduce the length of the messages"
};


/* The words of a quota, a balance or credits that are gone: waiting
 * cannot cure these, whatever the status. */
static const char  *rg_llm_quota_phrases[] = {
    "insufficient_quota",
    "exceeded your current quota",
    "quota exceeded",
    "quota has been exhausted",
    "quota exhausted",
    "insufficient balance",
    "insufficient_balance",
    "insufficient credits",
    "insufficient funds",
    "out of credits",
    "no credits",
    "credit balance is too low",
    "used all available credits",
    "purchase more credits",
    "spending limit",
    "billing hard limit",
    "payment required"
};


/* a limit over a long period: a day, a month */
static const char  *rg_llm_long_phrases[] = {
    "per day",
    "per-day",
    "perday",
    "daily",
    "(rpd)",
    "(tpd)",
    "per month",
    "per-month",
    "monthly"
};


/* a limit per minute */
static const char  *rg_llm_minute_phrases[] = {
    "per minute",
    "per min",
    "per-minute",
    "perminute",
    "(tpm)",
    "(rpm)"
};


/* a request the limit can never let through, even with nothing used */
static const char  *rg_llm_over_phrases[] = {
    "request too large"
};


/* where the text names the wait it asks for */
static const char  *rg_llm_wait_phrases[] = {
    "try again in",
    "retry in",
    "retry after",
    "please wait"
};


rg_uint_t
rg_llm_contains(const char *s, size_t len, const char *needle)
{
    size_t  i, k, n;

    n = strlen(needle);

    if (s == NULL) {
        return 0;
    }

    for (i = 0; n <= len && i <= len - n; i++) {
        for (k = 0; k < n; k++) {
            if (tolower((unsigned char) s[i + k]) != needle[k]) {
                break;
            }
        }

        if (k == n) {
            return 1;
        }
    }

    return 0;
}


static rg_uint_t
rg_llm_any(const char *s, size_t len, const char **phrases, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (rg_llm_contains(s, len, phrases[i])) {
            return 1;
        }
    }

    return 0;
}


/* the class a code or type word names */
static int
rg_llm_word(const rg_str_t *w)
{
    size_t  i;

    if (w == NULL || w->len == 0) {
        return RG_LLM_C_NONE;
    }

    for (i = 0; i < rg_nelems(rg_llm_words); i++) {
        if (strlen(rg_llm_words[i].word) == w->len
            && strncasecmp(rg_llm_words[i].word, w->data, w->len) == 0)
        {
            return rg_llm_words[i].cls;
        }
    }

    return RG_LLM_C_NONE;
}


/* the class the code names, else the type: a code is the finer word
 * (OpenAI: type "tokens", code "rate_limit_exceeded"; type
 * "invalid_request_error", code "context_length_exceeded") */
static int
rg_llm_structure(const rg_llm_error_t *e)
{
    int  c;

    c = rg_llm_word(e->code);

    return c != RG_LLM_C_NONE ? c : rg_llm_word(e->type);
}


/* Copies the message to t, every URL made blanks (a word inside a link
 * says nothing of the error). Returns its length. */
static size_t
rg_llm_text(const rg_str_t *m, char *t, size_t size)
{
    size_t  i, n;

    if (m == NULL || m->data == NULL) {
        return 0;
    }

    n = rg_min(m->len, size);
    memcpy(t, m->data, n);

    for (i = 0; i < n; i++) {
        if ((n - i >= 7 && strncasecmp(t + i, "http://", 7) == 0)
            || (n - i >= 8 && strncasecmp(t + i, "https://", 8) == 0)
            || (n - i >= 4 && strncasecmp(t + i, "www.", 4) == 0
                && (i == 0 || !isalnum((unsigned char) t[i - 1]))))
        {
            while (i < n && !isspace((unsigned char) t[i]) && t[i] != '"'
                   && t[i] != '\'' && t[i] != ')' && t[i] != '>')
            {
                t[i++] = ' ';
            }
        }
    }

    return n;
}


/* the number after the word w ("Limit 30000", "Requested: 45000") */
static int64_t
rg_llm_number_after(const char *t, size_t n, const char *w)
{
    size_t      i, k, wl;
    int64_t     v;

    wl = strlen(w);

    for (i = 0; i + wl <= n; i++) {
        if (strncasecmp(t + i, w, wl) != 0) {
            continue;
        }

        k = i + wl;
        while (k < n && (t[k] == ' ' || t[k] == ':' || t[k] == '=')) {
            k++;
        }

        v = 0;
        if (k == n || !isdigit((unsigned char) t[k])) {
            continue;
        }

        while (k < n && isdigit((unsigned char) t[k])
               && v < INT64_MAX / 10 - 10)
        {
            v = v * 10 + (t[k++] - '0');
        }

        if (v > 0) {
            return v;
        }
    }

    return 0;
}


rg_msec_t
rg_llm_duration(const char *s, size_t len, size_t *used)
{
    size_t     i, k, start;
    double     v, f, total, unit;
    rg_uint_t  parts;

    i = 0;
    total = 0;
    parts = 0;

    while (i < len && s[i] == ' ') {
        i++;
    }

    while (i < len
           && (isdigit((unsigned char) s[i])
               || (s[i] == '.' && i + 1 < len
                   && isdigit((unsigned char) s[i + 1]))))
    {
        start = i;
        v = 0;

        while (i < len && isdigit((unsigned char) s[i])) {
            v = v * 10 + (s[i++] - '0');
        }

        if (i < len && s[i] == '.') {
            for (i++, f = 0.1; i < len && isdigit((unsigned char) s[i]);
                 i++, f /= 10)
            {
                v += (s[i] - '0') * f;
            }
        }

        k = i;
        while (k < len && s[k] == ' ') {
            k++;
        }

        /* the unit: ms, s, m, h and their words */
        if (len - k >= 2 && strncasecmp(s + k, "ms", 2) == 0
            && (len - k == 2 || !isalpha((unsigned char) s[k + 2])))
        {
            unit = 1;

        } else if (len - k >= 5 && strncasecmp(s + k, "milli", 5) == 0) {
            unit = 1;

        } else if (k < len && (s[k] == 'h' || s[k] == 'H')) {
            unit = 3600000;

        } else if (k < len && (s[k] == 'm' || s[k] == 'M')) {
            unit = 60000;

        } else if (k < len && (s[k] == 's' || s[k] == 'S')) {
            unit = 1000;

        } else if (parts == 0) {
            total = v * 1000;          /* a bare number: seconds */
            parts++;
            break;

        } else {
            i = start;
            break;
        }

        /* the rest of its word: "seconds", "minutes", "hrs" */
        while (k < len && isalpha((unsigned char) s[k])) {
            k++;
        }

        total += v * unit;
        parts++;
        i = k;
    }

    if (used) {
        *used = i;
    }

    if (parts == 0 || total <= 0) {
        return 0;
    }

    if (total >= RG_LLM_MAX_RETRY_AFTER) {
        return RG_LLM_MAX_RETRY_AFTER;
    }

    /* a fraction of a millisecond is still a wait */
    return (rg_msec_t) total + (total != (double) (rg_msec_t) total);
}


/* two digits at s[i], or -1 */
static int
rg_llm_digits(const char *s, size_t len, size_t i, size_t n)
{
    int     v;
    size_t  k;

    if (i + n > len) {
        return -1;
    }

    v = 0;

    for (k = 0; k < n; k++) {
        if (!isdigit((unsigned char) s[i + k])) {
            return -1;
        }

        v = v * 10 + (s[i + k] - '0');
    }

    return v;
}


rg_msec_t
rg_llm_reset_time(const char *s, size_t len, time_t now)
{
    int         y, mo, d, h, mi, sec, oh, om, sign;
    size_t      i;
    double      frac, f;
    time_t      t;
    struct tm   tm;

    while (len && *s == ' ') {
        s++;
        len--;
    }

    y = rg_llm_digits(s, len, 0, 4);
    mo = rg_llm_digits(s, len, 5, 2);
    d = rg_llm_digits(s, len, 8, 2);
    h = rg_llm_digits(s, len, 11, 2);
    mi = rg_llm_digits(s, len, 14, 2);
    sec = rg_llm_digits(s, len, 17, 2);

    if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23
        || mi < 0 || mi > 59 || sec < 0 || sec > 60
        || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't'
                                          && s[10] != ' ')
        || s[13] != ':' || s[16] != ':')
    {
        return 0;
    }

    i = 19;
    frac = 0;

    if (i < len && s[i] == '.') {
        f = 0.1;

        for (i++; i < len && isdigit((unsigned char) s[i]); i++) {
            frac += (s[i] - '0') * f;
            f /= 10;
        }
    }

    oh = 0;
    om = 0;
    sign = 0;

    if (i < len && (s[i] == '+' || s[i] == '-')) {
        sign = s[i] == '+' ? 1 : -1;
        oh = rg_llm_digits(s, len, i + 1, 2);
        om = rg_llm_digits(s, len, i + 4, 2);

        if (oh < 0 || om < 0) {
            return 0;
        }

    } else if (i >= len || (s[i] != 'Z' && s[i] != 'z')) {
        return 0;
    }

    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;

    t = timegm(&tm);
    if (t == (time_t) -1) {
        return 0;
    }

    t -= sign * (oh * 3600 + om * 60);

    if (t < now || (t == now && frac == 0)) {
        return 0;
    }

    f = ((double) (t - now) + frac) * 1000;

    return f >= RG_LLM_MAX_RETRY_AFTER ? RG_LLM_MAX_RETRY_AFTER
                                       : (rg_msec_t) f + 1;
}


/* "limit: 0": a quota that lets nothing through (a free tier without
 * access to the model) is never cured by waiting */
static rg_uint_t
rg_llm_zero_limit(const char *t, size_t n)
{
    size_t  i, k;

    for (i = 0; i + 6 <= n; i++) {
        if (strncasecmp(t + i, "limit", 5) != 0) {
            continue;
        }

        for (k = i + 5; k < n && (t[k] == ' ' || t[k] == ':' || t[k] == '=');
             k++)
        {
            /* void */
        }

        if (k < n && t[k] == '0' && k > i + 5
            && (k + 1 == n || (!isdigit((unsigned char) t[k + 1])
                               && t[k + 1] != '.')))
        {
            return 1;
        }
    }

    return 0;
}


/* the wait the text asks for: "Please try again in 1.4s" */
static rg_msec_t
rg_llm_text_wait(const char *t, size_t n)
{
    size_t     i, k, pl;
    rg_msec_t  ms;

    for (k = 0; k < rg_nelems(rg_llm_wait_phrases); k++) {
        pl = strlen(rg_llm_wait_phrases[k]);

        for (i = 0; i + pl < n; i++) {
            if (strncasecmp(t + i, rg_llm_wait_phrases[k], pl) != 0) {
                continue;
            }

            ms = rg_llm_duration(t + i + pl, n - i - pl, NULL);
            if (ms) {
                return ms;
            }
        }
    }

    return 0;
}


/* the numbers "Limit N, … Requested M" with M > N: the request alone is
 * over a limit of the rate */
static rg_uint_t
rg_llm_over(const char *t, size_t n, rg_llm_response_t *r)
{
    r->rate_limit = rg_llm_number_after(t, n, "limit");
    r->rate_requested = rg_llm_number_after(t, n, "requested");

    if (r->rate_limit > 0 && r->rate_requested > r->rate_limit) {
        return 1;
    }

    r->rate_limit = 0;
    r->rate_requested = 0;

    return 0;
}


/* a 429 (or a rate class): wait, or not */
static rg_llm_status_e
rg_llm_rate(const rg_llm_error_t *e, int cls, const char *t, size_t n,
    rg_msec_t text_wait, rg_llm_response_t *r)
{
    int  period;

    if (cls == RG_LLM_C_QUOTA) {
        return RG_LLM_ERR_FATAL;
    }

    period = e->period;

    if (period == RG_LLM_PERIOD_NONE) {
        if (rg_llm_any(t, n, rg_llm_long_phrases,
                       rg_nelems(rg_llm_long_phrases)))
        {
            period = RG_LLM_PERIOD_LONG;

        } else if (rg_llm_any(t, n, rg_llm_minute_phrases,
                              rg_nelems(rg_llm_minute_phrases)))
        {
            period = RG_LLM_PERIOD_MINUTE;
        }
    }

    if (period == RG_LLM_PERIOD_LONG || rg_llm_zero_limit(t, n)) {
        return RG_LLM_ERR_FATAL;      /* a day's or a month's cap, none */
    }

    /* the numbers decide: a request larger than the limit never passes,
     * one that only finds the window full waits */
    r->rate_limit = rg_llm_number_after(t, n, "limit");
    r->rate_requested = rg_llm_number_after(t, n, "requested");

    if (r->rate_limit > 0 && r->rate_requested > 0) {
        if (r->rate_requested > r->rate_limit) {
            return RG_LLM_ERR_OVER_RATE;
        }

        r->rate_limit = 0;
        r->rate_requested = 0;
        return RG_LLM_ERR_RATE;
    }

    if (rg_llm_any(t, n, rg_llm_over_phrases, rg_nelems(rg_llm_over_phrases)))
    {
        return RG_LLM_ERR_OVER_RATE;
    }

    r->rate_limit = 0;
    r->rate_requested = 0;

    /* a quota in words is gone, unless the limit is a minute's or the
     * text itself names a short wait (Gemini's per-minute free tier:
     * "You exceeded your current quota … Please retry in 38s") */
    if (rg_llm_any(t, n, rg_llm_quota_phrases,
                   rg_nelems(rg_llm_quota_phrases))
        && period != RG_LLM_PERIOD_MINUTE && text_wait == 0
        && e->body_retry == 0)
    {
        return RG_LLM_ERR_FATAL;
    }

    return RG_LLM_ERR_RATE;
}


rg_llm_status_e
rg_llm_classify(const rg_llm_error_t *e, rg_llm_response_t *r)
{
    int                    cls, status;
    char                   t[RG_LLM_TEXT_MAX];
    size_t                 n;
    rg_msec_t              text_wait;
    rg_llm_status_e        st;
    const rg_llm_hints_t  *h;

    h = e->hints;
    status = e->http_status;

    r->rate_limit = 0;
    r->rate_requested = 0;

    if (status >= 200 && status <= 299 && e->embedded == 0
        && e->type == NULL && e->code == NULL && e->message == NULL)
    {
        return RG_LLM_OK;
    }

    if (status < 100) {
        return RG_LLM_ERR_CONNECT;     /* no HTTP answer at all */
    }

    /* an error sent after a 200: the status it carries, if any */
    if (status >= 200 && status <= 299) {
        status = (e->embedded >= 400 && e->embedded <= 599)
                 ? (int) e->embedded : 0;
    }

    n = rg_llm_text(e->message, t, sizeof(t));
    text_wait = rg_llm_text_wait(t, n);

    /* the wait: the headers, the details, the words, a reset (what the
     * caller set already stands when none says more) */
    if (h && h->retry_after) {
        r->retry_after = h->retry_after;
    } else if (e->body_retry) {
        r->retry_after = e->body_retry;
    } else if (text_wait) {
        r->retry_after = text_wait;
    } else if (h && h->reset) {
        r->retry_after = h->reset;
    }

    cls = rg_llm_structure(e);

    /* 1. words of the structure that mean the same whatever the status */
    switch (cls) {
    case RG_LLM_C_CONTEXT:
        return RG_LLM_ERR_CONTEXT;
    case RG_LLM_C_AUTH:
    case RG_LLM_C_GONE:
        return RG_LLM_ERR_FATAL;
    case RG_LLM_C_QUOTA:
        return RG_LLM_ERR_FATAL;
    default:
        break;
    }

    /* 2. and 3. the status, weighed with the period and the numbers */
    if (status == 0) {
        /* no status: what the words of the structure say, then the
         * wording; an error in a stream is the server's otherwise */
        if (cls == RG_LLM_C_RATE) {
            status = 429;
        } else if (cls == RG_LLM_C_INVALID) {
            status = 400;
        } else if (rg_llm_any(t, n, rg_llm_context_phrases,
                              rg_nelems(rg_llm_context_phrases)))
        {
            return RG_LLM_ERR_CONTEXT;
        } else if (rg_llm_any(t, n, rg_llm_quota_phrases,
                              rg_nelems(rg_llm_quota_phrases)))
        {
            return RG_LLM_ERR_FATAL;
        } else {
            return RG_LLM_ERR_SERVER;
        }
    }

    if (status == 429) {
        st = rg_llm_rate(e, cls, t, n, text_wait, r);

    } else if (status == 413 && rg_llm_over(t, n, r)) {
        st = RG_LLM_ERR_OVER_RATE;    /* Groq says so with a 413 */

    } else if (rg_llm_any(t, n, rg_llm_context_phrases,
                          rg_nelems(rg_llm_context_phrases))
               && status != 401 && status != 403 && status != 404)
    {
        st = RG_LLM_ERR_CONTEXT;

    } else if (rg_llm_any(t, n, rg_llm_quota_phrases,
                          rg_nelems(rg_llm_quota_phrases)))
    {
        st = RG_LLM_ERR_FATAL;

    } else if (status == 408 || status == 409 || status == 425
               || (status >= 500 && status <= 599))
    {
        st = RG_LLM_ERR_SERVER;

    } else {
        st = RG_LLM_ERR_FATAL;
    }

    /* 4. the provider's own word on retrying */
    if (h && h->should_retry == 1 && st == RG_LLM_ERR_FATAL
        && status != 401 && status != 403 && status != 404
        && status != 402)
    {
        st = RG_LLM_ERR_SERVER;

    } else if (h && h->should_retry == 0
               && (st == RG_LLM_ERR_SERVER || st == RG_LLM_ERR_RATE))
    {
        st = RG_LLM_ERR_FATAL;
    }

    return st;
}
