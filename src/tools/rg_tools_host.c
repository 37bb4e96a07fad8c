/* rg_tools_host.c: the host table (rg_tool_module.h) that a call's
 * module calls back into, for the calls of rg_tools.c: its answer, log,
 * timers, HTTP through the engine's curl multi (public addresses only,
 * unless allowed), child agents, deadlines and trace context. A function
 * called from a pool thread, where only some are allowed, says so in the
 * thread's own buffer, never in the run the reactor owns. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tools.h>
#include <rg_tools_int.h>
#include <rg_tool_host.h>
#include <rg_tool_addr.h>
#include <rg_tool_host_args.h>


static const char *rg_tools_traceparent(rg_tool_run_t *run);


static void
rg_tools_host_log(rg_tool_host_t *host, int level, const char *fmt, ...)
{
    char             buf[RG_LOG_MAX_LINE];
    va_list          args;
    rg_module_t     *m;
    rg_tool_bind_t  *bind;

    bind = host->data;
    m = bind->module;

    va_start(args, fmt);
    level = rg_tool_log_line(buf, sizeof(buf), level, fmt, args);
    va_end(args);

    /* the module's cycle's log: modules log before any engine exists */
    rg_log_error(level, m->log, 0, "module \"%s\": %s", m->mod->name, buf);
}


/* done() and fail() from a pool thread only leave the answer in
 * run->pool, which the thread owns; it reads and writes nothing else of
 * the run */
static void
rg_tools_answer(rg_tool_run_t *run, int failed, const char *s, size_t len)
{
    if (rg_tools_thread_run == run) {
        if (run->pool.result == NULL) {
            run->pool.result = rg_strdup_len(s, len);
            run->pool.len = run->pool.result ? len : 0;
            run->pool.failed = failed;
        }
        return;
    }

    if (rg_tools_thread_run != NULL || run->in_pool) {
        return;                        /* not its call, or not from here */
    }

    if (run->turn == NULL) {
        rg_tools_run_free(run);        /* orphaned: nobody waits */
        return;
    }

    if (run->answered || run->finished) {
        run->answered = 1;             /* twice, or too late: dropped */
        return;
    }

    run->answered = 1;
    rg_tools_set_result(run, failed, s, len);
    rg_tools_finish(run);
}


/* the answer of an isolated module's helper */
void
rg_tools_isolated_done(rg_isolate_call_t *c, int failed, const char *text,
    size_t len)
{
    rg_tool_run_t  *run;

    run = (rg_tool_run_t *) ((char *) c - offsetof(rg_tool_run_t, helper));
    run->isolated = 0;
    rg_tools_answer(run, failed, text, len);
}


static void
rg_tools_host_done(rg_tool_call_t *call, const char *result, size_t len)
{
    rg_tools_answer((rg_tool_run_t *) call, 0, result ? result : "",
                    result ? len : 0);
}


/* A tool's error text is often the model's only clue: it goes whole,
 * and is trimmed with the results (tool_result_limit: head and tail, the
 * cut said), never cut here. */
static void
rg_tools_host_fail(rg_tool_call_t *call, const char *fmt, ...)
{
    va_list         args;
    rg_buf_t        b;
    rg_tool_run_t  *run;

    run = (rg_tool_run_t *) call;

    va_start(args, fmt);
    rg_tool_fail_text(&b, run->name, fmt, args);
    va_end(args);

    rg_tools_answer(run, 1, b.data ? b.data : "", b.len);
    rg_buf_free(&b);
}


static rg_tool_timer_t *
rg_tools_host_timer_add(rg_tool_host_t *host, uint64_t msec,
    rg_tool_timer_pt cb, void *data)
{
    rg_tool_bind_t  *bind;

    bind = host->data;

    if (rg_tools_thread_run || bind->ctx == NULL) {
        return NULL;                   /* the reactor's timers are its own */
    }

    return rg_tool_timer_add(bind->ctx->base, msec, cb, data);
}


static size_t
rg_tools_http_write(char *p, size_t size, size_t n, void *data)
{
    size_t           len, room;
    rg_tool_http_t  *h;

    h = data;
    len = size * n;
    room = h->max - h->body.len;

    if (len > room) {
        rg_buf_append(&h->body, p, room);
        h->truncated = 1;
        return 0;                  /* enough: stop the transfer */
    }

    return rg_buf_append(&h->body, p, len) == RG_OK ? len : 0;
}


static void
rg_tools_http_done(rg_curl_xfer_t *x, CURLcode rc)
{
    long                    status;
    char                    err[CURL_ERROR_SIZE + 64];
    char                   *ct;
    rg_tool_run_t          *run;
    rg_tool_http_t         *h;
    rg_tool_http_result_t   res;

    h = x->data;
    run = h->run;

    memset(&res, 0, sizeof(res));

    status = 0;
    ct = NULL;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);

    res.status = status;
    res.content_type = ct ? ct : "";
    res.body = h->body.data ? h->body.data : "";
    res.len = h->body.len;
    res.truncated = h->truncated;

    if (h->refused && rc != CURLE_OK) {
        snprintf(err, sizeof(err), "refused to connect to %s, %s: the tool "
                 "does not reach loopback, private, link-local or other "
                 "internal addresses, whatever name leads there (allow_private "
                 "on; in its module allows them)", h->refused_addr,
                 h->refused);
        res.error = err;

    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        snprintf(err, sizeof(err), "timed out after %.3gs",
                 (double) h->timeout / 1000);
        res.error = err;

    } else if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && h->truncated))
    {
        snprintf(err, sizeof(err), "%s",
                 h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
        res.error = err;
    }

    /* the callback answers the call; the transfer is gone afterwards */
    run->http = NULL;
    h->cb(&run->call, &res, h->data);
    rg_tools_http_free(h);
}


/* every socket the tool's request opens: its address is checked here,
 * after the name was resolved and before anything is sent */
static curl_socket_t
rg_tools_http_open(void *data, curlsocktype purpose,
    struct curl_sockaddr *a)
{
    char             addr[INET6_ADDRSTRLEN];
    const char      *what;
    rg_tool_http_t  *h;

    h = data;

    if (!h->allow_private) {
        what = rg_tool_addr_internal(&a->addr, addr, sizeof(addr));
        if (what) {
            if (h->refused == NULL) {         /* the first one is named */
                h->refused = what;
                memcpy(h->refused_addr, addr, sizeof(addr));
            }
            return CURL_SOCKET_BAD;
        }
    }

    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}


static CURLSH *
rg_tools_http_share(rg_tools_ctx_t *ctx, rg_uint_t allow_private)
{
    CURLSH  *sh;

    sh = ctx->http_shares[allow_private];

    if (sh == NULL) {
        sh = curl_share_init();
        if (sh == NULL) {
            return NULL;
        }

        curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
        curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
        ctx->http_shares[allow_private] = sh;

        /* its idle connections count against the descriptor budget, as
         * the model calls' caches do; it is made whatever the count, as
         * it may share no other cache */
        if (ctx->curl) {
            (void) rg_curl_cache_add(ctx->curl, 1);
        }
    }

    return sh;
}


void
rg_tools_http_reset(rg_tools_ctx_t *ctx)
{
    rg_uint_t  i;

    for (i = 0; i < 2; i++) {
        if (ctx->http_shares[i]
            && curl_share_cleanup(ctx->http_shares[i]) == CURLSHE_OK)
        {
            ctx->http_shares[i] = NULL;
        }
    }
}


static int
rg_tools_host_http_get_flags(rg_tool_call_t *call, const char *url,
    size_t max_bytes, uint64_t timeout_ms, unsigned flags, rg_tool_http_pt cb,
    void *data)
{
    CURL            *e;
    CURLSH          *sh;
    rg_tool_run_t   *run;
    rg_tool_http_t  *h;

    run = (rg_tool_run_t *) call;

    if (rg_tools_thread_run || run->http) {
        snprintf(rg_tools_error(run), sizeof(run->error),
                 "one http_get at a time, from the reactor thread");
        return -1;
    }

    h = calloc(1, sizeof(rg_tool_http_t));
    e = curl_easy_init();
    sh = rg_tools_http_share(run->ctx,
                             flags & RG_TOOL_HTTP_ALLOW_PRIVATE ? 1 : 0);
    if (h == NULL || e == NULL || sh == NULL) {
        free(h);
        if (e) {
            curl_easy_cleanup(e);
        }
        snprintf(run->error, sizeof(run->error), "out of memory");
        return -1;
    }

    h->ctx = run->ctx;
    h->run = run;
    h->cb = cb;
    h->data = data;
    h->max = max_bytes ? max_bytes : 1024 * 1024;
    h->timeout = timeout_ms ? timeout_ms : 10000;
    h->allow_private = (flags & RG_TOOL_HTTP_ALLOW_PRIVATE) ? 1 : 0;
    h->xfer.easy = e;
    h->xfer.done = rg_tools_http_done;
    h->xfer.data = h;

    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, rg_tools_http_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long) h->timeout);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     (long) rg_min(h->timeout, 10000));
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_USERAGENT, "reagent/" RG_VERSION);

    /* the address check sees the real peer: no proxy from the
     * environment, and connections of its own */
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, rg_tools_http_open);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, h);
    curl_easy_setopt(e, CURLOPT_SHARE, sh);

    /* the call's span is the request's parent */
    if (run->traceparent[0]) {
        snprintf(h->tp_header, sizeof(h->tp_header), "traceparent: %s",
                 rg_tools_traceparent(run));
        h->tp.data = h->tp_header;
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, &h->tp);
    }

    if (rg_curl_add(run->ctx->curl, &h->xfer) != RG_OK) {
        rg_tools_http_free(h);
        snprintf(run->error, sizeof(run->error), "cannot start the request");
        return -1;
    }

    run->http = h;

    return 0;
}


static int
rg_tools_host_http_get(rg_tool_call_t *call, const char *url,
    size_t max_bytes, uint64_t timeout_ms, rg_tool_http_pt cb, void *data)
{
    return rg_tools_host_http_get_flags(call, url, max_bytes, timeout_ms, 0,
                                        cb, data);
}


static void
rg_tools_host_http_cancel(rg_tool_call_t *call)
{
    rg_tool_run_t  *run;

    run = (rg_tool_run_t *) call;

    if (rg_tools_thread_run == NULL && run->http) {
        rg_tools_http_free(run->http);
        run->http = NULL;
    }
}


static int
rg_tools_host_agent_run(rg_tool_call_t *call, const char *agent,
    const char *input, size_t len, rg_tool_agent_pt cb, void *data)
{
    rg_tool_run_t  *run;

    run = (rg_tool_run_t *) call;

    if (rg_tools_thread_run || run->ctx->agent_start == NULL || run->child) {
        snprintf(rg_tools_error(run), sizeof(run->error),
                 "agent_run is not available here");
        return -1;
    }

    if (rg_tools_agent_allowed(run, agent) != RG_OK) {
        return -1;                 /* run->error says why */
    }

    /* first: a child that ends at once answers inside the start */
    run->agent_cb = cb;
    run->agent_data = data;

    if (run->ctx->agent_start(run, agent, input, len) != RG_OK) {
        run->agent_cb = NULL;
        run->agent_data = NULL;
        return -1;                 /* run->error says why */
    }

    return 0;
}


void
rg_tools_agent_done(rg_tool_run_t *run, const char *status, const char *text,
    size_t len)
{
    rg_tool_agent_pt  cb;

    cb = run->agent_cb;
    run->child = NULL;
    run->agent_cb = NULL;

    if (cb) {
        cb(&run->call, status, text, len, run->agent_data);
    }
}


static void
rg_tools_host_agent_cancel(rg_tool_call_t *call)
{
    rg_tool_run_t  *run;

    run = (rg_tool_run_t *) call;

    if (rg_tools_thread_run) {
        return;
    }

    if (run->child && run->ctx->agent_stop) {
        run->ctx->agent_stop(run);
    }

    run->child = NULL;
}


static const char *
rg_tools_host_error(rg_tool_call_t *call)
{
    return rg_tools_error((rg_tool_run_t *) call);
}


/* when the run's timer fires; readable from the pool thread, as nothing
 * it reads changes once the call was launched */
static uint64_t
rg_tools_host_deadline(rg_tool_call_t *call)
{
    rg_tool_run_t  *run;

    run = (rg_tool_run_t *) call;

    return run->timeout ? run->started + run->timeout : 0;
}


static const char *
rg_tools_traceparent(rg_tool_run_t *run)
{
    return run->traceparent[0] ? run->traceparent : NULL;
}


static const char *
rg_tools_host_traceparent(rg_tool_call_t *call)
{
    /* written before the call starts: safe from a pool thread too */
    return rg_tools_traceparent((rg_tool_run_t *) call);
}


static const char *
rg_tools_host_idempotency_key(rg_tool_call_t *call)
{
    /* made with the call: safe from a pool thread too */
    return ((rg_tool_run_t *) call)->idem;
}


rg_uint_t
rg_tools_call_timed_out(const rg_tool_call_t *call)
{
    return ((const rg_tool_run_t *) call)->timed_out;
}


void
rg_tools_host_init(rg_tool_host_t *host, rg_tool_bind_t *bind,
    rg_module_t *m, rg_tools_ctx_t *ctx)
{
    memset(host, 0, sizeof(rg_tool_host_t));

    bind->module = m;
    bind->ctx = ctx;
    bind->io = ctx ? &ctx->io : NULL;

    host->abi_version = RG_TOOL_ABI_VERSION;
    host->size = sizeof(rg_tool_host_t);
    host->log = rg_tools_host_log;
    host->done = rg_tools_host_done;
    host->fail = rg_tools_host_fail;
    rg_tool_host_args_set(host);
    host->timer_add = rg_tools_host_timer_add;
    host->timer_del = rg_tool_timer_del;
    host->data = bind;
    host->http_get = rg_tools_host_http_get;
    host->http_cancel = rg_tools_host_http_cancel;
    host->agent_run = rg_tools_host_agent_run;
    host->agent_cancel = rg_tools_host_agent_cancel;
    host->error = rg_tools_host_error;
    host->deadline = rg_tools_host_deadline;
    host->http_get_flags = rg_tools_host_http_get_flags;
    host->idempotency_key = rg_tools_host_idempotency_key;
    host->traceparent = rg_tools_host_traceparent;
    rg_tool_host_io_set(host);
}
