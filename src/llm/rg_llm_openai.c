/* rg_llm_openai.c: the OpenAI Chat Completions wire format. Reads one
 * response body (a completion or an error) into an rg_llm_response_t,
 * accepting the variants real providers send (shared/fixtures/providers/
 * INDEX.md), classifies errors, and builds the pieces of a request body.
 * All JSON goes through jansson; nothing of jansson outlives a call, what
 * is returned is copied into the caller's pool. No I/O, no headers, no
 * retries: the transport and the agent own those. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json_write.h>
#include <rg_llm_openai.h>
#include <rg_json.h>
#include <rg_secret.h>

#include <ctype.h>
#include <strings.h>
#include <jansson.h>


/* how much of a body that is not JSON goes into an error message */
#define RG_LLM_OPENAI_BODY_MAX   200

/* request pieces: compact, and reals as people write them (0.7, not
 * 0.69999999999999996) */
#define RG_LLM_OPENAI_DUMP       (JSON_COMPACT | JSON_REAL_PRECISION(15))

#define rg_llm_openai_empty(s)   (s)->len = 0; (s)->data = (char *) ""


static const char  *rg_llm_status_names[] = {
    "ok",
    "rate_limited",
    "server_error",
    "timeout",
    "connect_error",
    "bad_response",
    "context_length_exceeded",
    "fatal",
    "response_too_large",
    "request_over_rate_limit"
};


/* phrases of an error that mean the conversation no longer fits: OpenAI
 * and vLLM ("maximum context length is N tokens"), Ollama ("input
 * exceeds context length"), llama.cpp ("exceeds the available context
 * size", type exceed_context_size_error), Anthropic-style proxies
 * ("prompt is too long") */
static const char  *rg_llm_openai_context_phrases[] = {
    "context length",
    "maximum context",
    "context window",
    "context size",
    "exceed_context_size",
    "too many tokens",
    "prompt is too long"
};


/* an error's code or type that says the key was refused */
static const char  *rg_llm_openai_auth_words[] = {
    "invalid_api_key",
    "authentication",
    "unauthorized",
    "permission_denied",
    "permission_error",
    "incorrect_api_key",
    "invalid_key"
};


/* a 429 that waiting cannot cure: the account has no quota or money */
static const char  *rg_llm_openai_quota_phrases[] = {
    "insufficient_quota",
    "exceeded your current quota",
    "insufficient balance",
    "insufficient_balance",
    "no balance",
    "billing",
    "out of credits",
    "insufficient credits"
};


const char *
rg_llm_status_name(rg_llm_status_e status)
{
    if ((size_t) status >= rg_nelems(rg_llm_status_names)) {
        return "unknown";
    }

    return rg_llm_status_names[status];
}


/* case-insensitive search of a lowercase needle in a counted string */
static int
rg_llm_openai_contains(const char *s, size_t len, const char *needle)
{
    size_t  i, k, n;

    n = strlen(needle);

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
rg_llm_openai_any(const rg_str_t *s, const char **phrases, size_t n)
{
    size_t  i;

    for (i = 0; s != NULL && s->data != NULL && i < n; i++) {
        if (rg_llm_openai_contains(s->data, s->len, phrases[i])) {
            return 1;
        }
    }

    return 0;
}


/* OpenAI's "Request too large for gpt-4o … on tokens per min (TPM):
 * Limit 30000, Requested 45000": the body alone is over the limit */
static rg_uint_t
rg_llm_openai_over_rate(const rg_str_t *message)
{
    if (message == NULL || message->data == NULL) {
        return 0;
    }

    return rg_llm_openai_contains(message->data, message->len,
                                  "request too large")
           || (rg_llm_openai_contains(message->data, message->len,
                                      "requested")
               && rg_llm_openai_contains(message->data, message->len,
                                         "limit")
               && (rg_llm_openai_contains(message->data, message->len,
                                          "tokens per min")
                   || rg_llm_openai_contains(message->data, message->len,
                                             "tpm")));
}


rg_llm_status_e
rg_llm_openai_classify(int http_status, const rg_str_t *code,
    const rg_str_t *message)
{
    size_t  n;

    if (http_status >= 200 && http_status <= 299) {
        return RG_LLM_OK;
    }

    if (http_status < 100) {
        return RG_LLM_ERR_CONNECT;       /* no HTTP answer at all */
    }

    n = rg_nelems(rg_llm_openai_quota_phrases);

    if (http_status == 429) {
        /* 429 for an exhausted quota too: waiting won't help */
        if (rg_llm_openai_any(code, rg_llm_openai_quota_phrases, n)
            || rg_llm_openai_any(message, rg_llm_openai_quota_phrases, n))
        {
            return RG_LLM_ERR_FATAL;
        }

        if (rg_llm_openai_over_rate(message)) {
            return RG_LLM_ERR_OVER_RATE;
        }

        return RG_LLM_ERR_RATE;
    }

    n = rg_nelems(rg_llm_openai_context_phrases);

    if ((http_status == 400 || http_status == 413 || http_status == 422
         || http_status == 500)
        && (rg_llm_openai_any(code, rg_llm_openai_context_phrases, n)
            || (code != NULL && rg_str_eq(code, "context_length_exceeded"))
            || rg_llm_openai_any(message, rg_llm_openai_context_phrases, n)))
    {
        return RG_LLM_ERR_CONTEXT;
    }

    if (http_status == 408 || http_status == 409 || http_status == 425
        || (http_status >= 500 && http_status <= 599))
    {
        return RG_LLM_ERR_SERVER;
    }

    return RG_LLM_ERR_FATAL;
}


/* the numbers of "Limit 30000, Requested 45000" (either order) */
static void
rg_llm_openai_rate_numbers(rg_llm_response_t *r)
{
    char        *p, *end;
    const char  *word[2] = { "limit", "requested" };
    int64_t     *dst[2];
    size_t       i, k, n;
    long long    v;

    dst[0] = &r->rate_limit;
    dst[1] = &r->rate_requested;

    for (k = 0; k < 2; k++) {
        n = strlen(word[k]);

        for (i = 0; i + n <= r->error.len; i++) {
            if (strncasecmp(r->error.data + i, word[k], n) != 0) {
                continue;
            }

            p = r->error.data + i + n;
            while (*p == ' ' || *p == ':' || *p == '=') {
                p++;
            }

            v = strtoll(p, &end, 10);
            if (end != p && v > 0) {
                *dst[k] = v;
                break;
            }
        }
    }
}


/* the length of the valid UTF-8 sequence at p, 0 when there is none */
static size_t
rg_llm_openai_utf8_len(const unsigned char *p, size_t left)
{
    size_t         n, k;
    unsigned char  c, lo, hi;

    c = p[0];
    lo = 0x80;
    hi = 0xbf;

    if (c < 0x80) {
        return 1;

    } else if (c >= 0xc2 && c <= 0xdf) {
        n = 2;

    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        lo = (c == 0xe0) ? 0xa0 : 0x80;      /* overlong */
        hi = (c == 0xed) ? 0x9f : 0xbf;      /* surrogates */

    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        lo = (c == 0xf0) ? 0x90 : 0x80;      /* overlong */
        hi = (c == 0xf4) ? 0x8f : 0xbf;      /* above U+10FFFF */

    } else {
        return 0;
    }

    if (left < n || p[1] < lo || p[1] > hi) {
        return 0;
    }

    for (k = 2; k < n; k++) {
        if ((p[k] & 0xc0) != 0x80) {
            return 0;
        }
    }

    return n;
}


/* Copies len bytes of src to dst, which has room for 3 * len, replacing
 * every byte that starts no valid UTF-8 sequence by U+FFFD and, when ctl
 * is set, every ASCII control character by a space. Returns the length
 * written. */
static size_t
rg_llm_openai_utf8_clean(char *dst, const char *src, size_t len, int ctl)
{
    size_t               i, n;
    unsigned char        c;
    unsigned char       *p;
    const unsigned char  *s;

    p = (unsigned char *) dst;
    s = (const unsigned char *) src;

    for (i = 0; i < len; i += n) {
        c = s[i];
        n = rg_llm_openai_utf8_len(s + i, len - i);

        if (n == 0) {
            *p++ = 0xef;
            *p++ = 0xbf;
            *p++ = 0xbd;
            n = 1;
            continue;
        }

        if (n == 1) {
            *p++ = (ctl && (c < 0x20 || c == 0x7f)) ? ' ' : c;
            continue;
        }

        memcpy(p, s + i, n);
        p += n;
    }

    return (size_t) (p - (unsigned char *) dst);
}


/* a JSON string of any bytes: invalid UTF-8 becomes U+FFFD */
static json_t *
rg_llm_openai_string(const char *s, size_t len)
{
    char    *clean;
    size_t   n;
    json_t  *v;

    v = json_stringn(s, len);
    if (v != NULL || len > SIZE_MAX / 3) {
        return v;
    }

    clean = malloc(3 * len);
    if (clean == NULL) {
        return NULL;
    }

    n = rg_llm_openai_utf8_clean(clean, s, len, 0);
    v = json_stringn(clean, n);
    free(clean);

    return v;
}


static rg_int_t
rg_llm_openai_set_str(rg_pool_t *pool, rg_str_t *dst, const char *s,
    size_t len)
{
    if (len == 0) {
        rg_llm_openai_empty(dst);
        return RG_OK;
    }

    dst->data = rg_pstrdup(pool, s, len);
    if (dst->data == NULL) {
        return RG_ERROR;
    }

    dst->len = len;

    return RG_OK;
}


/* copies a JSON string; anything else leaves dst empty */
static rg_int_t
rg_llm_openai_get_str(rg_pool_t *pool, rg_str_t *dst, json_t *v)
{
    if (!json_is_string(v)) {
        return RG_OK;
    }

    return rg_llm_openai_set_str(pool, dst, json_string_value(v),
                                 json_string_length(v));
}


/* a string as it is, any other value but null serialized (Mistral and
 * FastAPI send objects and arrays as "message" or "detail") */
static rg_int_t
rg_llm_openai_get_text(rg_pool_t *pool, rg_str_t *dst, json_t *v)
{
    char      *s;
    rg_int_t   rc;

    if (v == NULL || json_is_null(v) || json_is_string(v)) {
        return rg_llm_openai_get_str(pool, dst, v);
    }

    s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL) {
        return RG_ERROR;
    }

    rc = rg_llm_openai_set_str(pool, dst, s, strlen(s));
    rg_json_free_dump(s);

    return rc;
}


/* an error code: a string as it is, a number in decimal */
static rg_int_t
rg_llm_openai_get_code(rg_pool_t *pool, rg_str_t *dst, json_t *v)
{
    int     n;
    char    buf[32];
    double  d;

    if (json_is_integer(v)) {
        n = snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT,
                     json_integer_value(v));

    } else if (json_is_real(v)) {
        d = json_real_value(v);

        if (d > -1e18 && d < 1e18 && d == (double) (long long) d) {
            n = snprintf(buf, sizeof(buf), "%lld", (long long) d);

        } else {
            n = snprintf(buf, sizeof(buf), "%.17g", d);
        }

    } else {
        return rg_llm_openai_get_str(pool, dst, v);
    }

    return rg_llm_openai_set_str(pool, dst, buf, (size_t) n);
}


/* a token count: an integer, or a real some providers send */
static int64_t
rg_llm_openai_int(json_t *v, int *found)
{
    double  d;

    if (json_is_integer(v)) {
        *found = 1;
        return (int64_t) json_integer_value(v);
    }

    if (json_is_real(v)) {
        d = json_real_value(v);

        if (d > -9.2e18 && d < 9.2e18) {
            *found = 1;
            return (int64_t) d;
        }
    }

    *found = 0;

    return 0;
}


static json_t *
rg_llm_openai_load(const char *body, size_t len, json_error_t *err)
{
    json_t  *root;

    if (body == NULL) {
        body = "";
        len = 0;
    }

    root = json_loadb(body, len, JSON_ALLOW_NUL, err);

    /* jansson refuses integers beyond 64 bits (Together's "seed"); we
     * need no such number, so read them all as reals then */
    if (root == NULL && json_error_code(err) == json_error_numeric_overflow) {
        root = json_loadb(body, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL,
                          err);
    }

    return root;
}


/* "HTTP 502: <the start of the body, printable>" */
static rg_int_t
rg_llm_openai_raw_error(rg_pool_t *pool, int http_status, const char *body,
    size_t len, rg_llm_response_t *r)
{
    int      n;
    char    *p;
    size_t   cut, size, i;

    cut = rg_min(len, RG_LLM_OPENAI_BODY_MAX);

    /* do not cut a character in two */
    for (i = 0; i < 3 && cut > 0 && cut < len
                && (body[cut] & 0xc0) == 0x80; i++)
    {
        cut--;
    }

    while (cut > 0 && (unsigned char) *body <= ' ') {
        body++;
        cut--;
    }

    size = sizeof("HTTP -2147483648: ") + 3 * cut;

    p = rg_palloc(pool, size);
    if (p == NULL) {
        return RG_ERROR;
    }

    n = snprintf(p, size, cut ? "HTTP %d: " : "HTTP %d", http_status);
    r->error.data = p;
    r->error.len = (size_t) n
                   + rg_llm_openai_utf8_clean(p + n, body, cut, 1);

    while (r->error.len > (size_t) n && p[r->error.len - 1] == ' ') {
        r->error.len--;
    }

    /* the cut may fall inside a key the body quotes */
    r->error.len = rg_secret_scrub(p, r->error.len);
    p[r->error.len] = '\0';

    return RG_OK;
}


/* Reads the provider's words from an error body: {"error":{...}},
 * {"error":"..."}, {"message":...} or {"detail":...}, Gemini's
 * [{"error":{...}}]. *status gets a numeric code or status_code found in
 * the error (0 if none), for errors inside a 200. */
static rg_int_t
rg_llm_openai_error(rg_pool_t *pool, json_t *root, int http_status,
    const char *body, size_t len, rg_llm_response_t *r, json_int_t *status)
{
    json_t  *e, *v, *where;

    *status = 0;

    if (json_is_array(root)) {
        root = json_array_get(root, 0);
    }

    e = json_object_get(root, "error");
    where = json_is_object(e) ? e : root;

    if (json_is_string(e)) {
        if (rg_llm_openai_get_str(pool, &r->error, e) != RG_OK) {
            return RG_ERROR;
        }
    }

    if (r->error.len == 0) {
        v = json_object_get(where, "message");
        if (v == NULL || json_is_null(v)) {
            v = json_object_get(where, "detail");
        }

        if (rg_llm_openai_get_text(pool, &r->error, v) != RG_OK) {
            return RG_ERROR;
        }
    }

    if (r->error.len == 0 && where != root) {
        v = json_object_get(root, "message");
        if (v == NULL || json_is_null(v)) {
            v = json_object_get(root, "detail");
        }

        if (rg_llm_openai_get_text(pool, &r->error, v) != RG_OK) {
            return RG_ERROR;
        }
    }

    v = json_object_get(where, "code");
    if (json_is_integer(v)) {
        *status = json_integer_value(v);
    }

    if (*status == 0) {
        v = json_object_get(where, "status_code");    /* Groq, streamed */
        if (json_is_integer(v)) {
            *status = json_integer_value(v);
        }
    }

    if (rg_llm_openai_get_str(pool, &r->error_type,
                              json_object_get(where, "type")) != RG_OK
        || rg_llm_openai_get_code(pool, &r->error_code,
                                  json_object_get(where, "code")) != RG_OK
        || rg_llm_openai_get_str(pool, &r->error_param,
                                 json_object_get(where, "param")) != RG_OK)
    {
        return RG_ERROR;
    }

    if (r->error_type.len == 0) {
        v = json_object_get(where, "status");    /* Gemini: "NOT_FOUND" */

        if (rg_llm_openai_get_str(pool, &r->error_type, v) != RG_OK) {
            return RG_ERROR;
        }
    }

    if (r->error.len == 0) {
        return rg_llm_openai_raw_error(pool, http_status, body, len, r);
    }

    return RG_OK;
}


/* An error inside a 200 (a proxy that had already sent its headers):
 * classified by the code it carries, as a server error otherwise. */
static rg_llm_status_e
rg_llm_openai_embedded_status(rg_llm_response_t *r, json_int_t status)
{
    if (status >= 400 && status <= 599) {
        return rg_llm_openai_classify((int) status, &r->error_code,
                                      &r->error);
    }

    /* a key that is refused will be refused again: like a 401 */
    if (rg_llm_openai_any(&r->error_code, rg_llm_openai_auth_words,
                          rg_nelems(rg_llm_openai_auth_words))
        || rg_llm_openai_any(&r->error_type, rg_llm_openai_auth_words,
                             rg_nelems(rg_llm_openai_auth_words)))
    {
        return rg_llm_openai_classify(401, &r->error_code, &r->error);
    }

    if (rg_llm_openai_contains(r->error_code.data, r->error_code.len,
                               "rate_limit")
        || rg_llm_openai_contains(r->error_type.data, r->error_type.len,
                                  "rate_limit"))
    {
        return rg_llm_openai_classify(429, &r->error_code, &r->error);
    }

    if (rg_llm_openai_any(&r->error_code, rg_llm_openai_quota_phrases,
                          rg_nelems(rg_llm_openai_quota_phrases))
        || rg_llm_openai_any(&r->error_type, rg_llm_openai_quota_phrases,
                             rg_nelems(rg_llm_openai_quota_phrases)))
    {
        return RG_LLM_ERR_FATAL;
    }

    if (rg_str_eq(&r->error_code, "context_length_exceeded")
        || rg_str_eq(&r->error_type, "invalid_request_error")
        || rg_llm_openai_any(&r->error_type, rg_llm_openai_context_phrases,
                             rg_nelems(rg_llm_openai_context_phrases)))
    {
        return rg_llm_openai_classify(400, &r->error_code, &r->error);
    }

    return RG_LLM_ERR_SERVER;
}


/* a response we cannot use; detail (jansson's words, which quote the
 * body) is made printable */
static rg_int_t
rg_llm_openai_bad(rg_pool_t *pool, rg_llm_response_t *r, const char *text,
    const char *detail)
{
    size_t   n, m;
    char    *p;

    n = strlen(text);
    m = (detail != NULL) ? strlen(detail) : 0;

    p = rg_palloc(pool, n + 3 * m + 1);
    if (p == NULL) {
        return RG_ERROR;
    }

    memcpy(p, text, n);
    n += rg_llm_openai_utf8_clean(p + n, detail, m, 1);
    p[n] = '\0';

    r->status = RG_LLM_ERR_BAD_RESPONSE;
    r->error.data = p;
    r->error.len = n;

    return RG_OK;
}


/* choices[i] whose "index" is 0, else the first one */
static json_t *
rg_llm_openai_choice(json_t *choices)
{
    size_t   i;
    json_t  *c, *index;

    json_array_foreach(choices, i, c) {
        index = json_object_get(c, "index");

        if (json_is_integer(index) && json_integer_value(index) == 0) {
            return c;
        }
    }

    return json_array_get(choices, 0);
}


static rg_int_t
rg_llm_openai_append(rg_buf_t *b, json_t *v)
{
    if (!json_is_string(v)) {
        return RG_OK;
    }

    return rg_buf_append(b, json_string_value(v), json_string_length(v));
}


/* a "thinking" part: a string, or parts with a "text" (Magistral) */
static rg_int_t
rg_llm_openai_thinking(rg_buf_t *b, json_t *v)
{
    size_t   i;
    json_t  *part;

    if (!json_is_array(v)) {
        return rg_llm_openai_append(b, v);
    }

    json_array_foreach(v, i, part) {
        if (json_is_string(part)) {
            if (rg_llm_openai_append(b, part) != RG_OK) {
                return RG_ERROR;
            }

            continue;
        }

        if (rg_llm_openai_append(b, json_object_get(part, "text")) != RG_OK) {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* content given as an array of parts: text parts are joined, thinking
 * parts go to the reasoning, other parts (images, audio) are dropped */
static rg_int_t
rg_llm_openai_parts(json_t *parts, rg_buf_t *text, rg_buf_t *reasoning)
{
    size_t       i;
    json_t      *part;
    const char  *type;

    json_array_foreach(parts, i, part) {
        if (json_is_string(part)) {
            if (rg_llm_openai_append(text, part) != RG_OK) {
                return RG_ERROR;
            }

            continue;
        }

        type = json_string_value(json_object_get(part, "type"));

        if (type != NULL
            && (strcmp(type, "thinking") == 0
                || strcmp(type, "reasoning") == 0))
        {
            if (rg_llm_openai_thinking(reasoning,
                                       json_object_get(part, type)) != RG_OK
                || rg_llm_openai_append(reasoning,
                                        json_object_get(part, "text"))
                   != RG_OK)
            {
                return RG_ERROR;
            }

            continue;
        }

        if (rg_llm_openai_append(text, json_object_get(part, "text"))
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* content, reasoning and refusal of the message */
static rg_int_t
rg_llm_openai_texts(rg_pool_t *pool, json_t *msg, rg_llm_response_t *r)
{
    json_t    *content, *v;
    rg_int_t   rc;
    rg_buf_t   text, reasoning;

    memset(&text, 0, sizeof(rg_buf_t));
    memset(&reasoning, 0, sizeof(rg_buf_t));

    rc = RG_ERROR;

    v = json_object_get(msg, "reasoning_content");
    if (!json_is_string(v)) {
        v = json_object_get(msg, "reasoning");
    }

    if (rg_llm_openai_append(&reasoning, v) != RG_OK) {
        goto done;
    }

    content = json_object_get(msg, "content");

    if (json_is_array(content)) {
        if (rg_llm_openai_parts(content, &text, &reasoning) != RG_OK) {
            goto done;
        }

    } else if (rg_llm_openai_append(&text, content) != RG_OK) {
        goto done;
    }

    if (rg_llm_openai_set_str(pool, &r->content, text.data, text.len)
        != RG_OK
        || rg_llm_openai_set_str(pool, &r->reasoning, reasoning.data,
                                 reasoning.len) != RG_OK
        || rg_llm_openai_get_str(pool, &r->refusal,
                                 json_object_get(msg, "refusal")) != RG_OK)
    {
        goto done;
    }

    r->has_content = (r->content.len > 0);
    rc = RG_OK;

done:

    rg_buf_free(&text);
    rg_buf_free(&reasoning);

    return rc;
}


/* arguments as the tools want them: JSON text, "{}" when none was sent */
static rg_int_t
rg_llm_openai_arguments(rg_pool_t *pool, rg_str_t *dst, json_t *v)
{
    char        *s;
    size_t       i, len;
    rg_int_t     rc;
    const char  *p;

    if (json_is_string(v)) {
        p = json_string_value(v);
        len = json_string_length(v);

        for (i = 0; i < len; i++) {
            if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n') {
                return rg_llm_openai_set_str(pool, dst, p, len);
            }
        }

        v = NULL;
    }

    if (v == NULL || json_is_null(v)) {
        return rg_llm_openai_set_str(pool, dst, "{}", 2);
    }

    s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL) {
        return RG_ERROR;
    }

    rc = rg_llm_openai_set_str(pool, dst, s, strlen(s));
    rg_json_free_dump(s);

    return rc;
}


/* one call; fn is the "function" object (or the legacy function_call) */
static rg_int_t
rg_llm_openai_call(rg_pool_t *pool, json_t *id, json_t *fn,
    rg_llm_response_t *r)
{
    rg_llm_tool_call_t  *call;

    call = &r->calls[r->ncalls];

    rg_llm_openai_empty(&call->id);
    rg_llm_openai_empty(&call->name);

    if (rg_llm_openai_get_str(pool, &call->id, id) != RG_OK
        || rg_llm_openai_get_str(pool, &call->name,
                                 json_object_get(fn, "name")) != RG_OK
        || rg_llm_openai_arguments(pool, &call->arguments,
                                   json_object_get(fn, "arguments")) != RG_OK)
    {
        return RG_ERROR;
    }

    r->ncalls++;

    return RG_OK;
}


/* An id is needed to answer a call: one is made, "<prefix>_<i>", for a
 * call that came without one or with the id of an earlier call. Ids seen
 * are kept in a jansson object used as a hash set: O(n) for n calls, and
 * a made id never repeats one the provider sent. */
static rg_int_t
rg_llm_openai_ids(rg_pool_t *pool, const char *id_prefix,
    rg_llm_response_t *r)
{
    int                  n;
    char                 buf[48];
    size_t               plen;
    json_t              *seen;
    rg_uint_t            i, k;
    rg_llm_tool_call_t  *c;

    seen = json_object();
    if (seen == NULL) {
        return RG_ERROR;
    }

    for (i = 0; i < r->ncalls; i++) {
        c = &r->calls[i];

        if (c->id.len == 0) {
            continue;
        }

        if (json_object_getn(seen, c->id.data, c->id.len) != NULL) {
            c->id.len = 0;             /* the first one keeps it */
            continue;
        }

        if (json_object_setn_nocheck(seen, c->id.data, c->id.len,
                                     json_true()) != 0)
        {
            goto failed;
        }
    }

    plen = strlen(id_prefix);

    for (i = 0; i < r->ncalls; i++) {
        c = &r->calls[i];

        if (c->id.len != 0) {
            continue;
        }

        for (k = 0; ; k++) {
            n = k ? snprintf(buf, sizeof(buf), "_%lu_%lu", (unsigned long) i,
                             (unsigned long) k)
                  : snprintf(buf, sizeof(buf), "_%lu", (unsigned long) i);

            c->id.len = plen + (size_t) n;
            c->id.data = rg_palloc(pool, c->id.len + 1);
            if (c->id.data == NULL) {
                goto failed;
            }

            memcpy(c->id.data, id_prefix, plen);
            memcpy(c->id.data + plen, buf, (size_t) n + 1);

            if (json_object_getn(seen, c->id.data, c->id.len) == NULL) {
                break;
            }
        }

        if (json_object_setn_nocheck(seen, c->id.data, c->id.len,
                                     json_true()) != 0)
        {
            goto failed;
        }
    }

    json_decref(seen);

    return RG_OK;

failed:

    json_decref(seen);

    return RG_ERROR;
}


static rg_int_t
rg_llm_openai_calls(rg_pool_t *pool, json_t *msg, const char *id_prefix,
    rg_uint_t max_calls, rg_llm_response_t *r)
{
    size_t   i, n, total, keep;
    json_t  *calls, *call, *fn;

    if (id_prefix == NULL) {
        id_prefix = "call";
    }

    if (max_calls == 0 || max_calls > RG_LLM_MAX_CALLS) {
        max_calls = RG_LLM_MAX_CALLS;
    }

    calls = json_object_get(msg, "tool_calls");
    n = json_array_size(calls);

    if (n == 0) {
        /* the legacy form: one "function_call" */
        fn = json_object_get(msg, "function_call");
        if (!json_is_object(fn)) {
            return RG_OK;
        }

        r->calls = rg_pcalloc(pool, sizeof(rg_llm_tool_call_t));
        if (r->calls == NULL) {
            return RG_ERROR;
        }

        if (rg_llm_openai_call(pool, NULL, fn, r) != RG_OK) {
            return RG_ERROR;
        }

        return rg_llm_openai_ids(pool, id_prefix, r);
    }

    total = 0;

    json_array_foreach(calls, i, call) {
        total += json_is_object(call);
    }

    /* past the cap one more is kept: it stands for all those not run,
     * so that the model can be told in the tool message answering it */
    keep = rg_min(total, (size_t) max_calls + 1);
    r->calls_over = total > max_calls ? total - max_calls : 0;

    if (keep == 0) {
        return RG_OK;
    }

    r->calls = rg_pcalloc(pool, keep * sizeof(rg_llm_tool_call_t));
    if (r->calls == NULL) {
        return RG_ERROR;
    }

    json_array_foreach(calls, i, call) {
        if (r->ncalls == keep) {
            break;
        }

        if (!json_is_object(call)) {
            continue;
        }

        fn = json_object_get(call, "function");
        if (!json_is_object(fn)) {
            fn = call;      /* name and arguments beside the id */
        }

        if (rg_llm_openai_call(pool, json_object_get(call, "id"), fn, r)
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return rg_llm_openai_ids(pool, id_prefix, r);
}


static void
rg_llm_openai_usage(json_t *root, rg_llm_response_t *r)
{
    int      found;
    json_t  *usage;

    usage = json_object_get(root, "usage");
    if (!json_is_object(usage)) {
        usage = json_object_get(json_object_get(root, "x_groq"), "usage");
    }

    if (!json_is_object(usage)) {
        return;
    }

    r->prompt_tokens = rg_llm_openai_int(json_object_get(usage,
                                                         "prompt_tokens"),
                                         &found);
    r->completion_tokens =
        rg_llm_openai_int(json_object_get(usage, "completion_tokens"),
                          &found);
    r->total_tokens = rg_llm_openai_int(json_object_get(usage,
                                                        "total_tokens"),
                                        &found);

    if (!found) {
        r->total_tokens = r->prompt_tokens + r->completion_tokens;
    }
}


static int rg_llm_openai_writer(const char *buffer, size_t size, void *data);


/* a string at the end of out, escaped as jansson escapes it; bytes that
 * are not UTF-8 become U+FFFD */
static rg_int_t
rg_llm_openai_put_str(rg_buf_t *out, const char *p, size_t len)
{
    rg_int_t   rc;
    json_t    *v;

    if (rg_json_write_str(out, p, len) == RG_OK) {
        return RG_OK;
    }

    v = rg_llm_openai_string(p, len);
    if (v == NULL) {
        return RG_ERROR;
    }

    rc = rg_json_write(out, v, 0);
    json_decref(v);

    return rc;
}


/* lit: a string literal */
#define rg_llm_openai_put(out, lit)  rg_buf_append(out, lit, sizeof(lit) - 1)


/* the assistant message as it goes back into the conversation: the text
 * json_dumps(JSON_COMPACT) gives for {role, content, tool_calls: [{id,
 * type, function: {name, arguments}}]}, written without building the
 * object (jansson's dump of a container costs its loop check) */
static rg_int_t
rg_llm_openai_message(rg_pool_t *pool, rg_llm_response_t *r)
{
    rg_int_t             rc;
    rg_buf_t             b;
    rg_uint_t            i;
    rg_llm_tool_call_t  *c;

    memset(&b, 0, sizeof(rg_buf_t));

    rc = rg_llm_openai_put(&b, "{\"role\":\"assistant\",\"content\":");

    if (r->has_content) {
        rc |= rg_llm_openai_put_str(&b, r->content.data, r->content.len);

    } else {
        /* null beside tool calls; "" alone, as a message needs one */
        if (r->ncalls) {
            rc |= rg_llm_openai_put(&b, "null");
        } else {
            rc |= rg_llm_openai_put(&b, "\"\"");
        }
    }

    if (r->ncalls) {
        rc |= rg_llm_openai_put(&b, ",\"tool_calls\":[");

        for (i = 0; rc == RG_OK && i < r->ncalls; i++) {
            c = &r->calls[i];

            if (i) {
                rc |= rg_llm_openai_put(&b, ",");
            }

            rc |= rg_llm_openai_put(&b, "{\"id\":");
            rc |= rg_llm_openai_put_str(&b, c->id.data, c->id.len);
            rc |= rg_llm_openai_put(&b, ",\"type\":\"function\","
                                        "\"function\":{\"name\":");
            rc |= rg_llm_openai_put_str(&b, c->name.data, c->name.len);
            rc |= rg_llm_openai_put(&b, ",\"arguments\":");
            rc |= rg_llm_openai_put_str(&b, c->arguments.data,
                                        c->arguments.len);
            rc |= rg_llm_openai_put(&b, "}}");
        }

        rc |= rg_llm_openai_put(&b, "]");
    }

    rc |= rg_llm_openai_put(&b, "}");

    if (rc == RG_OK) {
        rc = rg_llm_openai_set_str(pool, &r->message, b.data, b.len);
    }

    rg_buf_free(&b);

    return rc == RG_OK ? RG_OK : RG_ERROR;
}


/* a 2xx: a completion, or an error a proxy sent after its 200 */
static rg_int_t
rg_llm_openai_completion(rg_pool_t *pool, json_t *root, int http_status,
    const char *body, size_t len, const char *id_prefix, rg_uint_t max_calls,
    rg_llm_response_t *r)
{
    json_t      *e, *choices, *choice, *msg;
    json_int_t   status;

    rg_llm_openai_usage(root, r);

    e = json_object_get(root, "error");

    if ((json_is_object(e) && json_object_size(e) > 0)
        || (json_is_string(e) && json_string_length(e) > 0))
    {
        if (rg_llm_openai_error(pool, root, http_status, body, len, r,
                                &status) != RG_OK)
        {
            return RG_ERROR;
        }

        r->status = rg_llm_openai_embedded_status(r, status);

        if (r->status == RG_LLM_ERR_OVER_RATE) {
            rg_llm_openai_rate_numbers(r);
        }

        return RG_OK;
    }

    choices = json_object_get(root, "choices");

    if (json_array_size(choices) == 0) {
        return rg_llm_openai_bad(pool, r, "response has no choices", NULL);
    }

    choice = rg_llm_openai_choice(choices);
    msg = json_object_get(choice, "message");

    if (!json_is_object(msg)) {
        return rg_llm_openai_bad(pool, r, "response has no message", NULL);
    }

    if (rg_llm_openai_get_str(pool, &r->finish_reason,
                              json_object_get(choice, "finish_reason"))
        != RG_OK
        || rg_llm_openai_texts(pool, msg, r) != RG_OK
        || rg_llm_openai_calls(pool, msg, id_prefix, max_calls, r) != RG_OK
        || rg_llm_openai_message(pool, r) != RG_OK)
    {
        return RG_ERROR;
    }

    r->status = RG_LLM_OK;

    return RG_OK;
}


rg_int_t
rg_llm_openai_parse(rg_pool_t *pool, int http_status, const char *body,
    size_t len, const char *id_prefix, rg_uint_t max_calls,
    rg_llm_response_t *r)
{
    json_t        *root;
    rg_int_t       rc;
    rg_msec_t      retry_after;
    json_int_t     status;
    json_error_t   err;

    retry_after = r->retry_after;

    memset(r, 0, sizeof(rg_llm_response_t));

    r->http_status = http_status;
    r->retry_after = retry_after;
    rg_llm_openai_empty(&r->content);
    rg_llm_openai_empty(&r->reasoning);
    rg_llm_openai_empty(&r->refusal);
    rg_llm_openai_empty(&r->finish_reason);
    rg_llm_openai_empty(&r->message);
    rg_llm_openai_empty(&r->error);
    rg_llm_openai_empty(&r->error_type);
    rg_llm_openai_empty(&r->error_code);
    rg_llm_openai_empty(&r->error_param);

    root = rg_llm_openai_load(body, len, &err);

    if (http_status < 200 || http_status > 299) {
        rc = rg_llm_openai_error(pool, root, http_status, body, len, r,
                                 &status);
        r->status = rg_llm_openai_classify(http_status, &r->error_code,
                                           &r->error);

        if (r->status == RG_LLM_ERR_CONTEXT || r->status == RG_LLM_ERR_FATAL) {
            /* llama.cpp names it only in the type */
            if (http_status == 400
                && rg_llm_openai_any(&r->error_type,
                                     rg_llm_openai_context_phrases,
                                     rg_nelems(rg_llm_openai_context_phrases)))
            {
                r->status = RG_LLM_ERR_CONTEXT;
            }
        }

        if (r->status == RG_LLM_ERR_OVER_RATE) {
            rg_llm_openai_rate_numbers(r);
        }

    } else if (root == NULL) {
        rc = rg_llm_openai_bad(pool, r, "malformed response from the model: ",
                               err.text);

    } else if (!json_is_object(root)) {
        rc = rg_llm_openai_bad(pool, r, "response has no choices", NULL);

    } else {
        rc = rg_llm_openai_completion(pool, root, http_status, body, len,
                                      id_prefix, max_calls, r);
    }

    json_decref(root);

    return rc;
}


static int
rg_llm_openai_writer(const char *buffer, size_t size, void *data)
{
    return rg_buf_append(data, buffer, size) == RG_OK ? 0 : -1;
}


/* serializes json at the end of out and releases json; on failure out is
 * left as it was */
static rg_int_t
rg_llm_openai_dump(rg_buf_t *out, json_t *json, int err)
{
    size_t  len;

    len = out->len;

    if (err || json == NULL
        || json_dump_callback(json, rg_llm_openai_writer, out,
                              RG_LLM_OPENAI_DUMP) != 0)
    {
        json_decref(json);

        out->len = len;
        if (out->data != NULL) {
            out->data[len] = '\0';
        }

        return RG_ERROR;
    }

    json_decref(json);

    return RG_OK;
}


/* a message written from at on: on failure, out as it was before */
static rg_int_t
rg_llm_openai_ended(rg_buf_t *out, size_t at, rg_int_t rc)
{
    if (rc == RG_OK) {
        return RG_OK;
    }

    out->len = at;
    if (out->data != NULL) {
        out->data[at] = '\0';
    }

    return RG_ERROR;
}


/* the text json_dumps(JSON_COMPACT) gives for {role, content}, written
 * without building the object */
rg_int_t
rg_llm_openai_msg(rg_buf_t *out, const char *role, const char *content,
    size_t len)
{
    size_t    at;
    rg_int_t  rc;

    at = out->len;

    rc = rg_llm_openai_put(out, "{\"role\":");
    rc |= rg_llm_openai_put_str(out, role, strlen(role));
    rc |= rg_llm_openai_put(out, ",\"content\":");

    if (content) {
        rc |= rg_llm_openai_put_str(out, content, len);
    } else {
        rc |= rg_llm_openai_put(out, "null");
    }

    rc |= rg_llm_openai_put(out, "}");

    return rg_llm_openai_ended(out, at, rc);
}


/* the text json_dumps(JSON_COMPACT) gives for {role, tool_call_id,
 * content}, written without building the object */
rg_int_t
rg_llm_openai_tool_msg(rg_buf_t *out, const char *tool_call_id,
    const char *content, size_t len)
{
    size_t    at;
    rg_int_t  rc;

    at = out->len;

    rc = rg_llm_openai_put(out, "{\"role\":\"tool\",\"tool_call_id\":");
    rc |= rg_llm_openai_put_str(out, tool_call_id, strlen(tool_call_id));
    rc |= rg_llm_openai_put(out, ",\"content\":");
    rc |= rg_llm_openai_put_str(out, content, content ? len : 0);
    rc |= rg_llm_openai_put(out, "}");

    return rg_llm_openai_ended(out, at, rc);
}


rg_int_t
rg_llm_openai_prefix(rg_buf_t *out, const char *model, double temperature,
    const char *tools_json, size_t tools_len)
{
    return rg_llm_openai_prefix_ex(out, model, temperature, tools_json,
                                   tools_len, 0);
}


rg_int_t
rg_llm_openai_prefix_ex(rg_buf_t *out, const char *model, double temperature,
    const char *tools_json, size_t tools_len, rg_uint_t stream)
{
    int            err;
    json_t        *req, *tools, *t;
    size_t         len;
    json_error_t   jerr;

    tools = NULL;

    if (tools_json != NULL) {
        tools = json_loadb(tools_json, tools_len, 0, &jerr);

        if (!json_is_array(tools)) {
            json_decref(tools);
            return RG_ERROR;
        }

        if (json_array_size(tools) == 0) {
            json_decref(tools);
            tools = NULL;
        }
    }

    /* whole values print as integers (0, 1); others with 15 significant
     * digits (RG_LLM_OPENAI_DUMP), so 0.7 stays 0.7 */
    if (temperature > -1e6 && temperature < 1e6
        && temperature == (double) (int) temperature)
    {
        t = json_integer((json_int_t) temperature);

    } else {
        t = json_real(temperature);     /* NULL for NaN and infinities */
    }

    req = json_object();
    if (req == NULL) {
        json_decref(tools);
        json_decref(t);
        return RG_ERROR;
    }

    err = json_object_set_new(req, "model", json_string(model));
    err |= json_object_set_new(req, "temperature", t);

    if (tools != NULL) {
        err |= json_object_set_new(req, "tool_choice", json_string("auto"));
        err |= json_object_set_new(req, "tools", tools);
    }

    if (stream) {
        /* usage arrives in a last chunk only when asked for */
        err |= json_object_set_new(req, "stream", json_true());
        err |= json_object_set_new(req, "stream_options",
                                   json_pack("{s:b}", "include_usage", 1));
    }

    len = out->len;

    if (rg_llm_openai_dump(out, req, err) != RG_OK) {
        return RG_ERROR;
    }

    /* reopen the object for the messages the caller appends */
    out->len--;

    if (rg_buf_append_lit(out, ",\"messages\":[") != RG_OK) {
        out->len = len;
        out->data[len] = '\0';
        return RG_ERROR;
    }

    return RG_OK;
}


rg_int_t
rg_llm_openai_tool_def(rg_buf_t *out, const char *name,
    const char *description, const char *parameters)
{
    int            err;
    json_t        *def, *fn, *params;
    json_error_t   jerr;

    params = NULL;

    if (parameters != NULL) {
        params = json_loads(parameters, 0, &jerr);

        if (!json_is_object(params)) {
            json_decref(params);
            return RG_ERROR;
        }
    }

    def = json_object();
    fn = json_object();

    err = json_object_set_new(fn, "name", json_string(name));

    if (description != NULL) {
        err |= json_object_set_new(fn, "description",
                                   rg_llm_openai_string(description,
                                                        strlen(description)));
    }

    if (params != NULL) {
        err |= json_object_set_new(fn, "parameters", params);
    }

    err |= json_object_set_new(def, "type", json_string("function"));
    err |= json_object_set_new(def, "function", fn);

    return rg_llm_openai_dump(out, def, err);
}


rg_int_t
rg_llm_openai_edit(const char *msg, size_t len, size_t min,
    rg_llm_openai_edit_pt edit, void *data, char **out)
{
    json_t    *j, *content;
    rg_int_t   rc;
    rg_buf_t   b;

    *out = NULL;

    j = json_loadb(msg, len, JSON_ALLOW_NUL, NULL);
    if (j == NULL) {
        return RG_ERROR;
    }

    content = json_object_get(j, "content");
    if (!json_is_string(content) || json_string_length(content) <= min) {
        json_decref(j);
        return RG_DECLINED;
    }

    memset(&b, 0, sizeof(b));

    rc = edit(json_string_value(content), json_string_length(content), &b,
              data);

    if (rc == RG_OK
        && json_object_set_new(j, "content", json_stringn(b.data, b.len))
           != 0)
    {
        rc = RG_ERROR;
    }

    rg_buf_free(&b);

    if (rc == RG_OK) {
        *out = json_dumps(j, JSON_COMPACT);
        rc = *out ? RG_OK : RG_ERROR;
    }

    json_decref(j);

    return rc;
}
