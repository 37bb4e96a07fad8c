/* rg_llm_json.c: the JSON helpers the codecs share: copies of JSON
 * values into a pool (strings never NULL, "" when absent), token counts
 * however they are sent, bodies read with jansson's quirks handled, the
 * words of a body that is not JSON, generated tool_call ids, arguments as
 * text, and strings and values written at the end of a buffer. Nothing
 * of jansson outlives a call. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json.h>
#include <rg_json_write.h>
#include <rg_llm.h>
#include <rg_llm_json.h>
#include <rg_llm_classify.h>
#include <rg_secret.h>

#include <jansson.h>


/* how much of a body that is not JSON goes into an error message */
#define RG_LLM_JSON_BODY_MAX   200


/* the length of the valid UTF-8 sequence at p, 0 when there is none */
static size_t
rg_llm_json_utf8_len(const unsigned char *p, size_t left)
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
size_t
rg_llm_json_clean(char *dst, const char *src, size_t len, int ctl)
{
    size_t               i, n;
    unsigned char        c;
    unsigned char       *p;
    const unsigned char  *s;

    p = (unsigned char *) dst;
    s = (const unsigned char *) src;

    for (i = 0; i < len; i += n) {
        c = s[i];
        n = rg_llm_json_utf8_len(s + i, len - i);

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
json_t *
rg_llm_json_string(const char *s, size_t len)
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

    n = rg_llm_json_clean(clean, s, len, 0);
    v = json_stringn(clean, n);
    free(clean);

    return v;
}


rg_int_t
rg_llm_json_set(rg_pool_t *pool, rg_str_t *dst, const char *s,
    size_t len)
{
    if (len == 0) {
        rg_llm_json_empty(dst);
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
rg_int_t
rg_llm_json_get(rg_pool_t *pool, rg_str_t *dst, json_t *v)
{
    if (!json_is_string(v)) {
        return RG_OK;
    }

    return rg_llm_json_set(pool, dst, json_string_value(v),
                                 json_string_length(v));
}


/* v serialized, compact, into the pool */
static rg_int_t
rg_llm_json_set_dump(rg_pool_t *pool, rg_str_t *dst, json_t *v)
{
    char      *s;
    rg_int_t   rc;

    s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL) {
        return RG_ERROR;
    }

    rc = rg_llm_json_set(pool, dst, s, strlen(s));
    rg_json_free_dump(s);

    return rc;
}


rg_int_t
rg_llm_json_keep(rg_buf_t *b, json_t *v)
{
    char      *s;
    rg_int_t   rc;

    s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL) {
        return RG_ERROR;
    }

    rg_buf_reset(b);
    rc = rg_buf_append(b, s, strlen(s));
    rg_json_free_dump(s);

    return rc;
}


/* a string as it is, any other value but null serialized (Mistral and
 * FastAPI send objects and arrays as "message" or "detail") */
rg_int_t
rg_llm_json_text(rg_pool_t *pool, rg_str_t *dst, json_t *v)
{
    if (v == NULL || json_is_null(v) || json_is_string(v)) {
        return rg_llm_json_get(pool, dst, v);
    }

    return rg_llm_json_set_dump(pool, dst, v);
}


/* an error code: a string as it is, a number in decimal */
rg_int_t
rg_llm_json_code(rg_pool_t *pool, rg_str_t *dst, json_t *v)
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
        return rg_llm_json_get(pool, dst, v);
    }

    return rg_llm_json_set(pool, dst, buf, (size_t) n);
}


/* a token count: an integer, or a real some providers send */
int64_t
rg_llm_json_int(json_t *v, int *found)
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


json_t *
rg_llm_json_load(const char *body, size_t len, json_error_t *err)
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
rg_int_t
rg_llm_json_raw_error(rg_pool_t *pool, int http_status, const char *body,
    size_t len, rg_llm_response_t *r)
{
    int      n;
    char    *p;
    size_t   cut, size, i;

    cut = rg_min(len, RG_LLM_JSON_BODY_MAX);

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
                   + rg_llm_json_clean(p + n, body, cut, 1);

    while (r->error.len > (size_t) n && p[r->error.len - 1] == ' ') {
        r->error.len--;
    }

    /* the cut may fall inside a key the body quotes */
    r->error.len = rg_secret_scrub(p, r->error.len);
    p[r->error.len] = '\0';

    return RG_OK;
}


/* a response we cannot use; detail (jansson's words, which quote the
 * body) is made printable */
rg_int_t
rg_llm_json_bad(rg_pool_t *pool, rg_llm_response_t *r, const char *text,
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
    n += rg_llm_json_clean(p + n, detail, m, 1);
    p[n] = '\0';

    r->status = RG_LLM_ERR_BAD_RESPONSE;
    r->error.data = p;
    r->error.len = n;

    return RG_OK;
}


rg_int_t
rg_llm_json_append(rg_buf_t *b, json_t *v)
{
    if (!json_is_string(v)) {
        return RG_OK;
    }

    return rg_buf_append(b, json_string_value(v), json_string_length(v));
}


/* arguments as the tools want them: JSON text, "{}" when none was sent */
rg_int_t
rg_llm_json_arguments(rg_pool_t *pool, rg_str_t *dst, json_t *v)
{
    size_t       i, len;
    const char  *p;

    if (json_is_string(v)) {
        p = json_string_value(v);
        len = json_string_length(v);

        for (i = 0; i < len; i++) {
            if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n') {
                return rg_llm_json_set(pool, dst, p, len);
            }
        }

        v = NULL;
    }

    if (v == NULL || json_is_null(v)) {
        return rg_llm_json_set(pool, dst, "{}", 2);
    }

    return rg_llm_json_set_dump(pool, dst, v);
}


rg_int_t
rg_llm_json_open(rg_buf_t *out, json_t *req, int err, rg_uint_t stream)
{
    if (stream) {
        err |= json_object_set_new(req, "stream", json_true());
    }

    if (rg_llm_json_dump(out, req, err) != RG_OK) {
        return RG_ERROR;
    }

    out->len--;
    out->data[out->len] = '\0';

    return RG_OK;
}


/* An event's data as JSON into *root: RG_OK; RG_DONE when it is blank;
 * RG_ERROR without memory; RG_DECLINED when it is no JSON (err says
 * why) */
rg_int_t
rg_llm_json_event(const char *text, size_t len, json_t **root,
    json_error_t *err)
{
    size_t  i;

    for (i = 0; i < len && (text[i] == ' ' || text[i] == '\n'); i++) {
        /* void */
    }

    if (i == len) {
        return RG_DONE;
    }

    *root = rg_llm_json_load(text, len, err);

    if (*root != NULL) {
        return RG_OK;
    }

    return json_error_code(err) == json_error_out_of_memory ? RG_ERROR
                                                            : RG_DECLINED;
}


/* jansson's words quote the text read: printable ASCII only, into
 * bad[size] */
void
rg_llm_json_why(char *bad, size_t size, const json_error_t *err)
{
    size_t  i;

    for (i = 0; err->text[i] && i < size - 1; i++) {
        bad[i] = (err->text[i] >= ' ' && err->text[i] < 0x7f)
                 ? err->text[i] : '?';
    }

    bad[i] = '\0';
}


/* Room for the calls of an answer: past the cap one more is kept, it
 * stands for all those not run, so that the model can be told in the
 * tool message answering it */
rg_int_t
rg_llm_json_calls(rg_pool_t *pool, size_t total, rg_uint_t max_calls,
    size_t *keep, rg_llm_response_t *r)
{
    if (max_calls == 0 || max_calls > RG_LLM_MAX_CALLS) {
        max_calls = RG_LLM_MAX_CALLS;
    }

    *keep = rg_min(total, (size_t) max_calls + 1);
    r->calls_over = total > max_calls ? total - max_calls : 0;

    if (*keep == 0) {
        return RG_OK;
    }

    r->calls = rg_pcalloc(pool, *keep * sizeof(rg_llm_tool_call_t));

    return r->calls ? RG_OK : RG_ERROR;
}


/* the items of an answer (content blocks, output items): those of type
 * call (total), those neither call nor plain (special) */
void
rg_llm_json_count(json_t *items, const char *call, const char *plain,
    size_t *total, size_t *special)
{
    size_t       i;
    json_t      *item;
    const char  *type;

    *total = 0;
    *special = 0;

    json_array_foreach(items, i, item) {
        type = json_string_value(json_object_get(item, "type"));

        if (type != NULL && strcmp(type, call) == 0) {
            (*total)++;
        } else if (type == NULL || strcmp(type, plain) != 0) {
            (*special)++;
        }
    }
}


/* an item appended to kept as its compact text */
rg_int_t
rg_llm_json_kept_add(json_t *kept, json_t *item)
{
    char      *s;
    rg_int_t   rc;

    s = json_dumps(item, JSON_COMPACT);
    rc = (s != NULL && json_array_append_new(kept, json_string(s)) == 0)
         ? RG_OK : RG_ERROR;
    rg_json_free_dump(s);

    return rc;
}


/* the kept items, as text, the answer's opaque part */
rg_int_t
rg_llm_json_kept_set(rg_pool_t *pool, json_t *kept, rg_llm_response_t *r)
{
    char      *s;
    rg_int_t   rc;

    s = json_dumps(kept, JSON_COMPACT);
    rc = s ? rg_llm_json_set(pool, &r->opaque, s, strlen(s)) : RG_ERROR;
    rg_json_free_dump(s);

    return rc;
}


/* An id is needed to answer a call: one is made, "<prefix>_<i>", for a
 * call that came without one or with the id of an earlier call. Ids seen
 * are kept in a jansson object used as a hash set: O(n) for n calls, and
 * a made id never repeats one the provider sent. */
rg_int_t
rg_llm_json_ids(rg_pool_t *pool, const char *id_prefix,
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

    if (id_prefix == NULL) {
        id_prefix = "call";
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


/* a string at the end of out, escaped as jansson escapes it; bytes that
 * are not UTF-8 become U+FFFD */
rg_int_t
rg_llm_json_put(rg_buf_t *out, const char *p, size_t len)
{
    rg_int_t   rc;
    json_t    *v;

    if (rg_json_write_str(out, p, len) == RG_OK) {
        return RG_OK;
    }

    v = rg_llm_json_string(p, len);
    if (v == NULL) {
        return RG_ERROR;
    }

    rc = rg_json_write(out, v, 0);
    json_decref(v);

    return rc;
}


int
rg_llm_json_writer(const char *buffer, size_t size, void *data)
{
    return rg_buf_append(data, buffer, size) == RG_OK ? 0 : -1;
}


/* serializes json at the end of out and releases json; on failure out is
 * left as it was */
rg_int_t
rg_llm_json_dump(rg_buf_t *out, json_t *json, int err)
{
    size_t  len;

    len = out->len;

    if (err || json == NULL
        || json_dump_callback(json, rg_llm_json_writer, out,
                              RG_LLM_JSON_DUMP) != 0)
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
rg_int_t
rg_llm_json_ended(rg_buf_t *out, size_t at, rg_int_t rc)
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


/* Gemini's details (google.rpc): a RetryInfo's retryDelay ("38s") is the
 * wait; a QuotaFailure's quotaId says the period ("…PerMinute…",
 * "…PerDay…"), a long one winning */
void
rg_llm_json_details(json_t *details, rg_llm_error_t *e)
{
    size_t       i, k;
    json_t      *d, *v, *viol;
    const char  *type, *id;

    json_array_foreach(details, i, d) {
        type = json_string_value(json_object_get(d, "@type"));
        if (type == NULL) {
            continue;
        }

        if (rg_llm_contains(type, strlen(type), "retryinfo")) {
            v = json_object_get(d, "retryDelay");

            if (json_is_string(v)) {
                e->body_retry = rg_llm_duration(json_string_value(v),
                                                json_string_length(v), NULL);
            }

            continue;
        }

        if (!rg_llm_contains(type, strlen(type), "quotafailure")) {
            continue;
        }

        json_array_foreach(json_object_get(d, "violations"), k, viol) {
            id = json_string_value(json_object_get(viol, "quotaId"));
            if (id == NULL) {
                id = json_string_value(json_object_get(viol, "quotaMetric"));
            }

            if (id == NULL) {
                continue;
            }

            if (rg_llm_contains(id, strlen(id), "perday")
                || rg_llm_contains(id, strlen(id), "permonth")
                || rg_llm_contains(id, strlen(id), "per_day")
                || rg_llm_contains(id, strlen(id), "daily"))
            {
                e->period = RG_LLM_PERIOD_LONG;

            } else if (e->period == RG_LLM_PERIOD_NONE
                       && (rg_llm_contains(id, strlen(id), "perminute")
                           || rg_llm_contains(id, strlen(id), "per_minute")))
            {
                e->period = RG_LLM_PERIOD_MINUTE;
            }
        }
    }
}


json_t *
rg_llm_json_number(double v)
{
    /* whole values print as integers (0, 1); others with 15 significant
     * digits (RG_LLM_JSON_DUMP), so 0.7 stays 0.7 */
    if (v > -1e6 && v < 1e6 && v == (double) (int) v) {
        return json_integer((json_int_t) v);
    }

    return json_real(v);             /* NULL for NaN and infinities */
}


rg_int_t
rg_llm_json_members(const char *text, size_t len, const char **names,
    size_t *at, rg_uint_t n)
{
    size_t      i, k, start, depth;
    rg_uint_t   m;

    for (m = 0; m < n; m++) {
        at[m] = (size_t) -1;
    }

    for (i = 0; i < len && (text[i] == ' ' || text[i] == '\t'
                            || text[i] == '\r' || text[i] == '\n'); i++)
    {
        /* void */
    }

    if (i == len || text[i] != '{') {
        return RG_DECLINED;
    }

    depth = 0;

    for ( /* void */ ; i < len; i++) {
        switch (text[i]) {

        case '{':
        case '[':
            depth++;
            continue;

        case '}':
        case ']':
            if (depth == 0) {
                return RG_DECLINED;
            }

            if (--depth == 0) {
                return RG_OK;          /* the object's end */
            }

            continue;

        case '"':
            break;

        default:
            continue;
        }

        /* a string: to its closing quote, past escapes */
        start = i + 1;

        for (i = start; i < len && text[i] != '"'; i++) {
            if (text[i] == '\\') {
                i++;
            }
        }

        if (i >= len) {
            return RG_DECLINED;
        }

        if (depth != 1) {
            continue;
        }

        /* a key of the object is followed by its colon */
        for (k = i + 1; k < len && (text[k] == ' ' || text[k] == '\t'
                                    || text[k] == '\r' || text[k] == '\n');
             k++)
        {
            /* void */
        }

        if (k == len || text[k] != ':') {
            continue;
        }

        for (m = 0; m < n; m++) {
            if (at[m] == (size_t) -1 && strlen(names[m]) == i - start
                && memcmp(names[m], text + start, i - start) == 0)
            {
                at[m] = k + 1;
            }
        }

        i = k;
    }

    return RG_DECLINED;                /* it never ended */
}


rg_int_t
rg_llm_tool_json(rg_buf_t *out, const rg_llm_tool_t *t, const char *type,
    const char *schema)
{
    int            err;
    json_t        *def, *params;
    json_error_t   jerr;

    if (t->parameters != NULL) {
        params = json_loads(t->parameters, 0, &jerr);

        if (!json_is_object(params)) {
            json_decref(params);
            return RG_ERROR;
        }

    } else {
        params = json_pack("{s:s, s:{}}", "type", "object", "properties");
    }

    def = json_object();

    err = type ? json_object_set_new(def, "type", json_string(type)) : 0;
    err |= json_object_set_new(def, "name", json_string(t->name));

    if (t->description != NULL && t->description[0] != '\0') {
        err |= json_object_set_new(def, "description",
                                   rg_llm_json_string(t->description,
                                                      strlen(t->description)));
    }

    err |= json_object_set_new(def, schema, params);

    return rg_llm_json_dump(out, def, err);
}
