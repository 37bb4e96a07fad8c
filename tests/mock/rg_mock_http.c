/* rg_mock_http.c: the endpoints of the mock model. Drives one model
 * request of any format (rg_mock_request(): counters, the request log,
 * validation by the format, the fault injector, then scripted or generic
 * answers), and serves /stats, /last_request, /reset, the OTLP collector
 * at /v1/traces and GET /page. Owns the copy of the last request. Knows
 * no wire format: the format of the request path does that part. */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rg_mock.h"


void
rg_mock_send_error(struct evhttp_request *req, int status,
    const char *message, const char *type)
{
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "application/json");
    rg_mock_error_body(evhttp_request_get_output_buffer(req), message, type,
                       NULL, NULL);
    evhttp_send_reply(req, status, rg_mock_reason(status), NULL);
}


static void
rg_mock_send_json(struct evhttp_request *req, json_t *json)
{
    struct evbuffer  *out;

    out = evhttp_request_get_output_buffer(req);

    if (rg_mock_dump(out, json) != RG_OK) {
        evbuffer_drain(out, evbuffer_get_length(out));
        rg_mock_send_error(req, 500, "rg_mock: out of memory",
                           "server_error");
        return;
    }

    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "application/json");
    evhttp_send_reply(req, 200, NULL, NULL);
}


static void
rg_mock_record(struct evhttp_request *req, json_t *body)
{
    char               name[128];
    size_t             i;
    json_t            *headers, *v;
    struct evkeyval   *kv;
    struct evkeyvalq  *in;

    headers = json_object();
    if (headers == NULL) {
        return;
    }

    in = evhttp_request_get_input_headers(req);

    for (kv = in->tqh_first; kv != NULL; kv = kv->next.tqe_next) {
        for (i = 0; kv->key[i] != '\0' && i < sizeof(name) - 1; i++) {
            name[i] = (kv->key[i] >= 'A' && kv->key[i] <= 'Z')
                      ? kv->key[i] - 'A' + 'a' : kv->key[i];
        }
        name[i] = '\0';

        if (strcmp(name, "authorization") == 0
            || strcmp(name, "x-api-key") == 0)
        {
            v = json_string("present");

        } else {
            v = json_string(kv->value);
        }

        if (v != NULL) {
            json_object_set_new(headers, name, v);
        }
    }

    json_decref(rg_mock.last_headers);
    json_decref(rg_mock.last_body);

    rg_mock.last_headers = headers;
    rg_mock.last_body = body ? json_incref(body) : json_null();

    /* every request, for tests that compare two runs: its request id and
     * its body, one JSON line each (a test tool; blocking is fine) */
    if (rg_mock.conf.request_log) {
        FILE    *f;
        char    *line;
        json_t  *rec;

        rec = json_pack("{s:I, s:O?, s:O?, s:O?}", "n",
                        (json_int_t) rg_mock.stats.requests,
                        "request_id", json_object_get(headers, "x-request-id"),
                        "traceparent", json_object_get(headers, "traceparent"),
                        "body", body);
        line = rec ? json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        f = line ? fopen(rg_mock.conf.request_log, "a") : NULL;

        if (f) {
            fprintf(f, "%s\n", line);
            fclose(f);
        }

        free(line);
        json_decref(rec);
    }
}


/* One model request in the given format: counted, logged, validated,
 * perhaps faulted, then answered by the script or the generic mode. */

void
rg_mock_request(struct evhttp_request *req, const rg_mock_format_t *format)
{
    int                fault;
    char               rid[48];
    size_t             len;
    json_t            *body;
    uint64_t           now;
    const char        *type;
    rg_mock_err_t      err;
    rg_mock_conv_t     conv;
    json_error_t       jerr;
    unsigned char     *data;
    rg_mock_reply_t    r;
    struct evbuffer   *in, *out;
    struct evkeyvalq  *headers;

    now = rg_mock_now_ms();

    rg_mock.stats.requests++;
    rg_mock.stats.formats[format->index]++;
    if (rg_mock.stats.ntimes < RG_MOCK_MAX_TIMES) {
        rg_mock.stats.times[rg_mock.stats.ntimes++] = now;
    }

    rg_mock.stats.inflight++;
    if (rg_mock.stats.inflight > rg_mock.stats.max_inflight) {
        rg_mock.stats.max_inflight = rg_mock.stats.inflight;
    }

    in = evhttp_request_get_input_buffer(req);
    len = evbuffer_get_length(in);
    data = len ? evbuffer_pullup(in, -1) : NULL;
    /* JSON allows \u0000 in strings, and so does the real API */
    body = data ? json_loadb((const char *) data, len, JSON_ALLOW_NUL, &jerr)
                : NULL;

    rg_mock_record(req, body);

    memset(&r, 0, sizeof(rg_mock_reply_t));
    r.status = 200;
    r.action = RG_MOCK_SEND;
    r.kind = RG_MOCK_COMPLETION;
    r.delay = rg_mock.conf.latency;
    r.number = rg_mock.stats.requests;

    out = evhttp_request_get_output_buffer(req);
    headers = evhttp_request_get_output_headers(req);
    evhttp_add_header(headers, "Content-Type", "application/json");

    /* the provider's own id of the response */
    if (rg_mock.conf.request_id != NULL) {
        snprintf(rid, sizeof(rid), "req-mock-%" PRIu64, r.number);
        evhttp_add_header(headers, rg_mock.conf.request_id, rid);
    }

    if (format->request_id != NULL) {
        snprintf(rid, sizeof(rid), "req_mock_%" PRIu64, r.number);
        evhttp_add_header(headers, format->request_id, rid);
    }

    memset(&conv, 0, sizeof(rg_mock_conv_t));
    conv.req = body;
    conv.format = format;
    conv.http = req;
    conv.body_len = len;
    conv.number = r.number;

    err.message[0] = '\0';
    err.param[0] = '\0';
    err.code[0] = '\0';

    if (format->parse(&conv, &err) != RG_OK) {
        r.status = 400;
        r.kind = RG_MOCK_REJECTED;
        snprintf(r.note, sizeof(r.note), "rejected: %.120s", err.message);
        format->reject(&conv, &err, out);
        goto reply;
    }

    rg_mock_conv_init(&conv);

    fault = rg_mock_fault_pick();
    if (fault != RG_MOCK_FAULT_NONE) {
        rg_mock_fault(req, fault, &conv, &r);
        goto reply;
    }

    if ((rg_mock.script != NULL ? rg_mock_script(req, &conv, &r)
                                : rg_mock_generic(&conv, out, &r))
        != RG_OK)
    {
        rg_mock_stream_free(r.stream);
        r.stream = NULL;
        evbuffer_drain(out, evbuffer_get_length(out));
        r.status = 500;
        r.action = RG_MOCK_SEND;
        r.kind = RG_MOCK_FAULT;
        snprintf(r.note, sizeof(r.note), "out of memory");
        format->error(&conv, "rg_mock: out of memory", out);

    } else if (r.stream != NULL) {
        /* unless a script set a Content-Type of its own */
        type = evhttp_find_header(headers, "Content-Type");

        if (type == NULL || strcmp(type, "application/json") == 0) {
            evhttp_remove_header(headers, "Content-Type");
            evhttp_add_header(headers, "Content-Type", "text/event-stream");
        }

        evhttp_add_header(headers, "Cache-Control", "no-cache");
    }

reply:

    json_decref(conv.root);
    json_decref(body);
    rg_mock_dispatch(req, &r);
}


void
rg_mock_stats_reply(struct evhttp_request *req)
{
    uint64_t          i;
    struct evbuffer  *out;

    out = evhttp_request_get_output_buffer(req);

    evbuffer_add_printf(out, "{\"requests\":%" PRIu64 ",\"completions\":%"
                        PRIu64 ",\"faults\":%" PRIu64 ",\"inflight\":%" PRIu64
                        ",\"max_inflight\":%" PRIu64 ",\"rejected\":%" PRIu64
                        ",\"times_ms\":[",
                        rg_mock.stats.requests, rg_mock.stats.completions,
                        rg_mock.stats.faults, rg_mock.stats.inflight,
                        rg_mock.stats.max_inflight, rg_mock.stats.rejected);

    for (i = 0; i < rg_mock.stats.ntimes; i++) {
        evbuffer_add_printf(out, i ? ",%" PRIu64 : "%" PRIu64,
                            rg_mock.stats.times[i]);
    }

    evbuffer_add_printf(out, "],\"formats\":{\"chat\":%" PRIu64
                        ",\"anthropic\":%" PRIu64 ",\"responses\":%" PRIu64
                        "},\"cache\":{\"reads\":%" PRIu64 ",\"writes\":%"
                        PRIu64 ",\"read_tokens\":%" PRIu64
                        ",\"write_tokens\":%" PRIu64 "}}",
                        rg_mock.stats.formats[RG_MOCK_FORMAT_CHAT],
                        rg_mock.stats.formats[RG_MOCK_FORMAT_ANTHROPIC],
                        rg_mock.stats.formats[RG_MOCK_FORMAT_RESPONSES],
                        rg_mock.stats.cache_reads, rg_mock.stats.cache_writes,
                        rg_mock.stats.cache_read_tokens,
                        rg_mock.stats.cache_write_tokens);

    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "application/json");
    evhttp_send_reply(req, 200, NULL, NULL);
}


void
rg_mock_last_request_reply(struct evhttp_request *req)
{
    json_t  *j;

    j = json_pack("{s:O?, s:O?}", "headers", rg_mock.last_headers,
                  "body", rg_mock.last_body);

    if (j != NULL && rg_mock.last_headers == NULL) {
        json_object_set_new(j, "headers", json_object());
    }

    rg_mock_send_json(req, j);
    json_decref(j);
}


void
rg_mock_reset_reply(struct evhttp_request *req)
{
    uint64_t  inflight;

    inflight = rg_mock.stats.inflight;

    memset(&rg_mock.stats, 0, sizeof(rg_mock_stats_t));

    /* replies still pending will be answered and counted down */
    rg_mock.stats.inflight = inflight;
    rg_mock.stats.max_inflight = inflight;

    /* and the prompt cache, so that a test starts from nothing */
    rg_mock_cache_reset();

    rg_mock_log("counters and prompt cache reset");

    evbuffer_add_printf(evhttp_request_get_output_buffer(req),
                        "{\"reset\":true}");
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "application/json");
    evhttp_send_reply(req, 200, NULL, NULL);
}


/* one line appended to a test's file (a test tool; blocking is fine) */
static void
rg_mock_append(const char *file, const char *line, size_t len)
{
    FILE  *f;

    f = fopen(file, "a");
    if (f == NULL) {
        return;
    }

    fwrite(line, 1, len, f);
    fputc('\n', f);
    fclose(f);
}


/* an OTLP/HTTP collector: the body, made one line, goes to --otlp-log */
void
rg_mock_traces(struct evhttp_request *req)
{
    char             *line;
    size_t            len;
    json_t           *j;
    json_error_t      err;
    struct evbuffer  *in;
    unsigned char    *data;

    in = evhttp_request_get_input_buffer(req);
    len = evbuffer_get_length(in);
    data = len ? evbuffer_pullup(in, -1) : NULL;

    j = data ? json_loadb((const char *) data, len, 0, &err) : NULL;
    if (j == NULL) {
        rg_mock_send_error(req, 400, "not an OTLP JSON body",
                           "invalid_request_error");
        return;
    }

    line = json_dumps(j, JSON_COMPACT);
    json_decref(j);

    if (line) {
        rg_mock_append(rg_mock.conf.otlp_log, line, strlen(line));
        free(line);
    }

    if (rg_mock.conf.otlp_status != 200) {
        rg_mock_send_error(req, (int) rg_mock.conf.otlp_status,
                           "the collector refuses (--otlp-status)",
                           "server_error");
        return;
    }

    evbuffer_add_printf(evhttp_request_get_output_buffer(req), "{}");
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "application/json");
    evhttp_send_reply(req, 200, NULL, NULL);
}


/* a page for an http tool; the request log says what it carried */
void
rg_mock_page(struct evhttp_request *req)
{
    char             *line;
    json_t           *rec;
    const char       *tp;
    rg_mock_reply_t   r;

    tp = evhttp_find_header(evhttp_request_get_input_headers(req),
                            "traceparent");

    if (rg_mock.conf.request_log) {
        rec = json_pack("{s:s, s:s?}", "path", "/page", "traceparent", tp);
        line = rec ? json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        if (line) {
            rg_mock_append(rg_mock.conf.request_log, line, strlen(line));
        }
        free(line);
        json_decref(rec);
    }

    evbuffer_add_printf(evhttp_request_get_output_buffer(req),
                        "a page of the mock\n");
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "text/plain");

    if (rg_mock.conf.page_delay == 0) {
        evhttp_send_reply(req, 200, NULL, NULL);
        return;
    }

    /* a slow page: in flight (max_inflight counts it), not a completion */
    memset(&r, 0, sizeof(r));
    r.status = 200;
    r.action = RG_MOCK_SEND;
    r.kind = RG_MOCK_PAGE;
    r.delay = rg_mock.conf.page_delay;
    snprintf(r.note, sizeof(r.note), "GET /page");

    rg_mock.stats.inflight++;
    if (rg_mock.stats.inflight > rg_mock.stats.max_inflight) {
        rg_mock.stats.max_inflight = rg_mock.stats.inflight;
    }

    rg_mock_dispatch(req, &r);
}


