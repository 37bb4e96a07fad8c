/* rg_mock_util.c: small helpers every file of the mock model uses: the
 * log line, the clock, UTF-8 cuts, compact JSON into an evbuffer, HTTP
 * reason phrases and the OpenAI error envelope with its validation
 * wording. Owns no state but the log switch it reads. */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rg_mock.h"


void
rg_mock_log(const char *fmt, ...)
{
    char     line[512];
    va_list  ap;

    if (rg_mock.conf.quiet) {
        return;
    }

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);

    fprintf(stderr, "rg_mock: %s\n", line);
}


uint64_t
rg_mock_now_ms(void)
{
    struct timespec  ts;
    int64_t          ms;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    ms = (int64_t) (ts.tv_sec - rg_mock.start.tv_sec) * 1000
         + (ts.tv_nsec - rg_mock.start.tv_nsec) / 1000000;

    return ms < 0 ? 0 : (uint64_t) ms;
}


/* Returns how many of the first len bytes of the valid UTF-8 string s fit
 * in max bytes without splitting a character. */

size_t
rg_mock_utf8_cut(const char *s, size_t len, size_t max)
{
    size_t  n;

    if (len <= max) {
        return len;
    }

    n = max;
    while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80) {
        n--;
    }

    return n;
}


/* How many bytes of the valid UTF-8 string s the next piece of a streamed
 * text takes: at most max, never part of a character, at least one. */

size_t
rg_mock_piece(const char *s, size_t len, size_t max)
{
    size_t  n;

    n = rg_mock_utf8_cut(s, len, max);

    if (n == 0 && len > 0) {
        n = 1;
        while (n < len && ((unsigned char) s[n] & 0xc0) == 0x80) {
            n++;
        }
    }

    return n;
}


static void
rg_mock_free_cb(const void *data, size_t len, void *arg)
{
    (void) len;
    (void) arg;

    free((void *) data);
}


/* Serializes compactly into out: small values through a stack buffer, big
 * ones into a heap block the evbuffer takes over; no per-token copies. */

rg_int_t
rg_mock_dump(struct evbuffer *out, json_t *json)
{
    char    buf[8192], *p;
    size_t  n;

    if (json == NULL) {
        return RG_ERROR;
    }

    n = json_dumpb(json, buf, sizeof(buf), JSON_COMPACT | JSON_ENCODE_ANY);
    if (n == 0) {
        return RG_ERROR;
    }

    if (n <= sizeof(buf)) {
        return evbuffer_add(out, buf, n) == 0 ? RG_OK : RG_ERROR;
    }

    p = malloc(n);
    if (p == NULL) {
        return RG_ERROR;
    }

    if (json_dumpb(json, p, n, JSON_COMPACT | JSON_ENCODE_ANY) != n
        || evbuffer_add_reference(out, p, n, rg_mock_free_cb, NULL) != 0)
    {
        free(p);
        return RG_ERROR;
    }

    return RG_OK;
}


const char *
rg_mock_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a decimal";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}


/* evhttp 2.1 knows no phrase for 422, 429 and a few others. */

const char *
rg_mock_reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 413:
        return "Payload Too Large";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 529:
        return "Site Overloaded";
    default:
        return NULL;
    }
}


/* The OpenAI error envelope. The message must be valid UTF-8. */

rg_int_t
rg_mock_error_body(struct evbuffer *out, const char *message,
    const char *type, const char *param, const char *code)
{
    rg_int_t   rc;
    json_t    *e;

    e = json_pack("{s:{s:s, s:s, s:s?, s:s?}}", "error",
                  "message", message, "type", type,
                  "param", param, "code", code);

    rc = rg_mock_dump(out, e);
    json_decref(e);

    if (rc != RG_OK) {
        evbuffer_add_printf(out, "{\"error\":{\"message\":\"rg_mock: "
                            "cannot build the error body\",\"type\":"
                            "\"server_error\",\"param\":null,"
                            "\"code\":null}}");
    }

    return rc;
}


/* request validation, in OpenAI's wording */

rg_int_t
rg_mock_fail(rg_mock_err_t *err, const char *param, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);

    snprintf(err->param, sizeof(err->param), "%s", param ? param : "");
    err->code[0] = '\0';

    return RG_ERROR;
}


rg_int_t
rg_mock_missing(rg_mock_err_t *err, const char *param)
{
    return rg_mock_fail(err, param, "Missing required parameter: '%s'.",
                        param);
}


rg_int_t
rg_mock_bad_type(rg_mock_err_t *err, const char *param, const char *want,
    const json_t *got)
{
    return rg_mock_fail(err, param,
                        "Invalid type for '%s': expected %s, but got %s "
                        "instead.", param, want, rg_mock_type_name(got));
}


rg_int_t
rg_mock_bad_value(rg_mock_err_t *err, const char *param, const char *value,
    const char *supported)
{
    size_t  len;

    len = rg_mock_utf8_cut(value, strlen(value), 100);

    return rg_mock_fail(err, param,
                        "Invalid value: '%.*s'. Supported values are: %s.",
                        (int) len, value, supported);
}


/* The text of a message content: the string, or the first text part. */

const char *
rg_mock_content_text(json_t *content, size_t *len)
{
    size_t   i, n;
    json_t  *part, *text;

    if (json_is_string(content)) {
        *len = json_string_length(content);
        return json_string_value(content);
    }

    n = json_array_size(content);

    for (i = 0; i < n; i++) {
        part = json_array_get(content, i);
        text = json_object_get(part, "text");

        if (json_is_string(text)) {
            *len = json_string_length(text);
            return json_string_value(text);
        }
    }

    *len = 0;

    return "";
}


/* When a rate-limited client may try again, as OpenAI writes it ("1.4s",
 * "250ms"): from --retry-after-ms or --retry-after, else 1.4 s. */

void
rg_mock_retry_in(char *buf, size_t size)
{
    long    ms;
    size_t  n;

    if (rg_mock.conf.retry_after_ms >= 0) {
        ms = rg_mock.conf.retry_after_ms;

    } else if (rg_mock.conf.retry_after >= 0) {
        ms = rg_mock.conf.retry_after * 1000;

    } else {
        ms = 1400;
    }

    if (ms < 1000) {
        snprintf(buf, size, "%ldms", ms);
        return;
    }

    n = (size_t) snprintf(buf, size, "%ld.%03ld", ms / 1000, ms % 1000);

    /* no trailing zeros, no lone dot */
    while (n > 0 && n < size && buf[n - 1] == '0') {
        buf[--n] = '\0';
    }

    if (n > 0 && n < size && buf[n - 1] == '.') {
        buf[--n] = '\0';
    }

    if (n + 1 < size) {
        buf[n] = 's';
        buf[n + 1] = '\0';
    }
}
