/* rg_tools.c: runs the tool calls of one turn and implements the host
 * table modules call back into; builds the tools part's runtime in each
 * engine (rg_tools_ctx_t). All calls of a turn start together:
 * asynchronous handlers on the reactor, RG_TOOL_BLOCKING ones in the
 * thread pool. A call that ends late (after its timeout, or after its
 * session went away) finds itself orphaned and frees itself, so a module's
 * late answer never touches freed memory. Errors reach the model as one
 * short line that says what to do next. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json_write.h>
#include <rg_cycle.h>
#include <rg_tools.h>
#include <rg_metrics.h>
#include <rg_module.h>
#include <rg_isolate.h>
#include <rg_tool_args.h>
#include <rg_secret.h>
#include <rg_tool_addr.h>
#include <rg_tool_host_io.h>
#include <rg_tool_host_args.h>
#include <rg_event.h>
#include <jansson.h>
#include <arpa/inet.h>
#include <sys/socket.h>


struct rg_tool_timer_s {
    struct event        ev;
    rg_tool_timer_pt    cb;
    void               *data;
};


struct rg_tool_http_s {
    rg_curl_xfer_t      xfer;       /* first */
    rg_tools_ctx_t     *ctx;
    rg_tool_run_t      *run;
    rg_tool_http_pt     cb;
    void               *data;
    rg_buf_t            body;
    size_t              max;
    rg_msec_t           timeout;
    unsigned            truncated:1;
    unsigned            allow_private:1;
    const char         *refused;    /* what the last refused address was */
    char                refused_addr[INET6_ADDRSTRLEN];
    char                errbuf[CURL_ERROR_SIZE];
    struct curl_slist   tp;         /* its one header: traceparent */
    char                tp_header[RG_TRACEPARENT_SIZE + 16];
};


/* the call a pool thread runs, in that thread: what tells the host
 * functions that they were called off the reactor */
static _Thread_local rg_tool_run_t  *rg_tools_thread_run;


/* where a host function's reason goes: in a pool thread, the buffer of
 * the task it runs (the thread writes nothing else of the run) */
#define rg_tools_error(run)                                                  \
    (rg_tools_thread_run ? rg_tools_thread_run->pool.error : (run)->error)

_Static_assert(sizeof(((rg_tool_task_t *) 0)->error)
               == sizeof(((rg_tool_run_t *) 0)->error),
               "a reason fits the thread's buffer as the reactor's");


static void rg_tools_finish(rg_tool_run_t *run);
static const char *rg_tools_traceparent(rg_tool_run_t *run);
static void rg_tools_launch(rg_tool_run_t *run);
static void rg_tools_prompt_next(rg_tools_ctx_t *ctx);
static void rg_tools_ask(rg_tool_run_t *run);
static void rg_tools_http_reset(rg_tools_ctx_t *ctx);
static rg_int_t rg_tools_agent_allowed(rg_tool_run_t *run,
    const char *name);


void
rg_tools_set_approval(rg_tools_ctx_t *ctx, rg_approval_e policy)
{
    ctx->approval = policy;
}


void
rg_tools_set_agent_runner(rg_tools_ctx_t *ctx, rg_tools_agent_start_pt start,
    rg_tools_agent_stop_pt stop)
{
    ctx->agent_start = start;
    ctx->agent_stop = stop;
}


static void
rg_tools_http_free(rg_tool_http_t *h)
{
    if (h->xfer.active) {
        rg_curl_remove(h->ctx->curl, &h->xfer);
    }

    if (h->xfer.easy) {
        curl_easy_cleanup(h->xfer.easy);
    }

    rg_buf_free(&h->body);
    free(h);
}


static void
rg_tools_prompt_remove(rg_tool_run_t *run)
{
    rg_tool_run_t  **pp;
    rg_tools_ctx_t  *ctx;

    ctx = run->ctx;

    for (pp = &ctx->prompt_head; *pp; pp = &(*pp)->next_approval) {
        if (*pp == run) {
            *pp = run->next_approval;
            if (ctx->prompt_tail == &run->next_approval) {
                ctx->prompt_tail = pp;
            }
            break;
        }
    }

    run->awaiting = 0;
}


/* one buffer for what a run owns of its call: id NUL session NUL name
 * NUL and its idempotency key, "session:key" NUL (the key: the
 * request's, or its id) */
static char *
rg_tools_own3(const char *id, size_t idlen, const char *session,
    const char *name, size_t namelen, const char *key, size_t keylen)
{
    char    *p, *k;
    size_t   slen;

    slen = strlen(session);

    p = malloc(idlen + 1 + slen + 1 + namelen + 1 + slen + 1 + keylen + 1);
    if (p == NULL) {
        return NULL;
    }

    memcpy(p, id, idlen);
    p[idlen] = '\0';
    memcpy(p + idlen + 1, session, slen + 1);
    memcpy(p + idlen + 1 + slen + 1, name, namelen);
    p[idlen + 1 + slen + 1 + namelen] = '\0';

    k = p + idlen + 1 + slen + 1 + namelen + 1;
    memcpy(k, session, slen);
    k[slen] = ':';
    memcpy(k + slen + 1, key, keylen);
    k[slen + 1 + keylen] = '\0';

    return p;
}


static void
rg_tools_run_free(rg_tool_run_t *run)
{
    if (run->timer_set) {
        event_del(&run->timer);
    }

    if (run->awaiting) {
        rg_tools_prompt_remove(run);
    }

    if (run->http) {
        rg_tools_http_free(run->http);
    }

    if (run->child && run->ctx->agent_stop) {
        run->ctx->agent_stop(run);
    }

    if (run->args) {
        json_decref(run->args);
    }

    free(run->args_text);
    free(run->own);
    free(run->pool.result);
    free(run->result);
    free(run);
}


static void
rg_tools_set_result(rg_tool_run_t *run, int failed, const char *s,
    size_t len)
{
    free(run->result);

    run->result = rg_strdup_len(s, len);
    run->result_len = 0;
    run->failed = failed;

    /* a secret a tool came across never reaches the model */
    if (run->result) {
        run->result_len = rg_secret_scrub(run->result, len);
        run->result[run->result_len] = '\0';
    }
}


static void
rg_tools_set_error(rg_tool_run_t *run, const char *fmt, ...)
{
    int      n;
    char     buf[1024];
    va_list  args;

    va_start(args, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);

    if (n < 0) {
        n = 0;
    }

    rg_tools_set_result(run, 1, buf, rg_min((size_t) n, sizeof(buf) - 1));
}


/* host table ---------------------------------------------------------- */

static void
rg_tools_host_log(rg_tool_host_t *host, int level, const char *fmt, ...)
{
    char             buf[RG_LOG_MAX_LINE];
    va_list          args;
    rg_module_t     *m;
    rg_tool_bind_t  *bind;

    bind = host->data;
    m = bind->module;

    if (level < RG_LOG_EMERG || level > RG_LOG_DEBUG) {
        level = RG_LOG_NOTICE;
    }

    va_start(args, fmt);
    vsnprintf(buf, sizeof(buf), fmt, args);
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
static void
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
    memset(&b, 0, sizeof(b));

    va_start(args, fmt);

    if (rg_buf_printf(&b, "error: %s failed: ", run->name) != RG_OK
        || rg_buf_vprintf(&b, fmt, args) != RG_OK)
    {
        rg_buf_free(&b);
        rg_buf_printf(&b, "error: %s failed (out of memory for the "
                      "reason)", run->name);
    }

    va_end(args);

    rg_tools_answer(run, 1, b.data ? b.data : "", b.len);
    rg_buf_free(&b);
}


static void
rg_tools_timer_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_tool_timer_t  *t;
    rg_tool_timer_pt  cb;
    void             *data;

    t = arg;
    cb = t->cb;
    data = t->data;
    free(t);

    cb(data);
}


static rg_tool_timer_t *
rg_tools_host_timer_add(rg_tool_host_t *host, uint64_t msec,
    rg_tool_timer_pt cb, void *data)
{
    struct timeval    tv;
    rg_tool_bind_t   *bind;
    rg_tool_timer_t  *t;

    bind = host->data;

    if (rg_tools_thread_run || bind->ctx == NULL) {
        return NULL;                   /* the reactor's timers are its own */
    }

    t = calloc(1, sizeof(rg_tool_timer_t));
    if (t == NULL) {
        return NULL;
    }

    t->cb = cb;
    t->data = data;

    tv.tv_sec = msec / 1000;
    tv.tv_usec = (msec % 1000) * 1000;

    if (evtimer_assign(&t->ev, bind->ctx->base, rg_tools_timer_handler, t)
        != 0
        || evtimer_add(&t->ev, &tv) != 0)
    {
        free(t);
        return NULL;
    }

    return t;
}


static void
rg_tools_host_timer_del(rg_tool_timer_t *t)
{
    if (t) {
        event_del(&t->ev);
        free(t);
    }
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


static void
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

    host->abi_version = RG_TOOL_ABI_VERSION;
    host->size = sizeof(rg_tool_host_t);
    host->log = rg_tools_host_log;
    host->done = rg_tools_host_done;
    host->fail = rg_tools_host_fail;
    rg_tool_host_args_set(host);
    host->timer_add = rg_tools_host_timer_add;
    host->timer_del = rg_tools_host_timer_del;
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


/* turns --------------------------------------------------------------- */

static void
rg_tools_turn_done_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_tool_turn_t  *turn;

    turn = arg;
    turn->done_posted = 0;
    turn->done(turn);
}


static void
rg_tools_finish(rg_tool_run_t *run)
{
    rg_tool_turn_t  *turn;

    turn = run->turn;

    run->finished = 1;
    run->ms = rg_monotonic_msec() - run->started;

    if (run->timer_set) {
        event_del(&run->timer);
        run->timer_set = 0;
    }

    if (run->failed) {
        turn->failures++;
    }

    /* a tool of the agent's: not a preset answer, not a name the model
     * made up (which would fill the metrics' table) */
    if (run->entry) {
        rg_metrics_tool_call(run->entry->tool->name,
                             run->timed_out ? RG_METRICS_TOOL_TIMEOUT
                             : run->denied ? RG_METRICS_TOOL_DENIED
                             : run->failed ? RG_METRICS_TOOL_ERROR
                             : RG_METRICS_TOOL_OK,
                             rg_monotonic_usec() - run->started_us);
    }

    /* the session may record it (a side effect's result) at once */
    if (turn->call_done) {
        turn->call_done(turn, run);
    }

    if (--turn->pending == 0 && !turn->done_posted) {
        /* never complete a turn inside a handler's own call stack */
        turn->done_posted = 1;
        event_active(&turn->done_ev, EV_TIMEOUT, 1);
    }
}


static void
rg_tools_timeout_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_tool_run_t      *run;
    const rg_tool_t    *t;

    run = arg;
    run->timer_set = 0;
    t = run->entry->tool;

    if (run->turn == NULL) {
        return;                        /* orphaned: its timer is deleted */
    }

    rg_log_error(RG_LOG_WARN, run->turn->log, 0,
                 "tool \"%s\" timed out after %llums", t->name,
                 (unsigned long long) run->timeout);

    run->timed_out = 1;
    rg_tools_set_error(run, "error: %s timed out after %.3gs; try a smaller "
                       "request or another approach", t->name,
                       (double) run->timeout / 1000);
    rg_tools_finish(run);

    if (run->isolated) {
        rg_isolate_abort(run->ctx->mods[run->entry->module->index].isolate,
                         &run->helper);
        run->isolated = 0;
        run->cancelled = 1;
        return;
    }

    /* a pool thread cannot be stopped: its answer is dropped when it
     * comes; an asynchronous call is told to stop */
    if (!run->in_pool && t->cancel) {
        t->cancel(&run->call);
        run->cancelled = 1;
    }

    if (run->http) {
        rg_tools_http_free(run->http);
        run->http = NULL;
    }
}


/* in a pool thread: it reads what the reactor wrote before posting
 * (the arguments, the module's tables) and writes only run->pool */
static void
rg_tools_pool_handler(rg_thread_task_t *task)
{
    int             rc;
    rg_module_t    *m;
    rg_tool_run_t  *run;

    run = task->data;
    m = run->entry->module;

    rg_tools_thread_run = run;
    rc = run->call.tool->start(&run->call);
    rg_tools_thread_run = NULL;

    run->pool.ran = 1;

    if (run->pool.result == NULL) {
        run->pool.result = strdup(rc == RG_TOOL_ERROR
                                  ? "failed without saying why"
                                  : "returned without an answer");
        run->pool.len = run->pool.result ? strlen(run->pool.result) : 0;
        run->pool.failed = 2;
    }

    /* the last touch of the module and its cycle: they may go now */
    atomic_fetch_sub_explicit(&m->cycle->busy, 1, memory_order_release);
}


static void
rg_tools_pool_done(rg_thread_task_t *task)
{
    rg_tool_run_t  *run;

    run = task->data;
    run->in_pool = 0;

    if (!run->pool.ran) {
        /* handed back unrun (the pool is going) */
        atomic_fetch_sub_explicit(&run->entry->module->cycle->busy, 1,
                                  memory_order_release);
    }

    if (run->turn == NULL) {
        rg_tools_run_free(run);        /* its session is gone */
        return;
    }

    run->answered = 1;

    if (run->finished) {
        return;                        /* timed out: the answer is late */
    }

    if (run->pool.result == NULL) {
        rg_tools_set_error(run, "error: %s did not run (shutting down)",
                           run->name);

    } else if (run->pool.failed == 2) {
        rg_tools_set_error(run, "error: %s %s", run->name, run->pool.result);

    } else {
        rg_tools_set_result(run, run->pool.failed, run->pool.result,
                            run->pool.len);
    }

    rg_tools_finish(run);
}


/* approval of dangerous tools ----------------------------------------- */

/* run_agent reaches only the agents the caller's `agents` lists: RG_OK,
 * or RG_ERROR with the reason in run->error */
static rg_int_t
rg_tools_agent_allowed(rg_tool_run_t *run, const char *name)
{
    int                  n;
    size_t               len, off;
    rg_str_t            *names;
    rg_uint_t            i;
    const rg_toolset_t  *ts;

    ts = run->turn->toolset;
    len = strlen(name);
    names = ts->agents ? ts->agents->elts : NULL;

    for (i = 0; names && i < ts->agents->nelts; i++) {
        if (names[i].len == len && memcmp(names[i].data, name, len) == 0) {
            return RG_OK;
        }
    }

    if (names == NULL || ts->agents->nelts == 0) {
        snprintf(run->error, sizeof(run->error), "agent \"%.*s\" may not "
                 "hand work to other agents (its \"agents\" lists none); "
                 "do the task yourself", (int) ts->owner.len,
                 ts->owner.data);
        return RG_ERROR;
    }

    n = snprintf(run->error, sizeof(run->error), "agent \"%.64s\" is not "
                 "one that agent \"%.*s\" may call; it may call: ", name,
                 (int) ts->owner.len, ts->owner.data);
    off = n > 0 ? rg_min((size_t) n, sizeof(run->error) - 1) : 0;

    for (i = 0; i < ts->agents->nelts; i++) {
        n = snprintf(run->error + off, sizeof(run->error) - off, "%s%.*s",
                     i ? ", " : "", (int) names[i].len, names[i].data);
        off += n > 0 ? rg_min((size_t) n, sizeof(run->error) - 1 - off) : 0;
    }

    return RG_ERROR;
}


/* te is in the toolset's `approve` list */
static rg_uint_t
rg_tools_approved(const rg_toolset_t *ts, rg_tool_entry_t *te)
{
    rg_uint_t  i;
    rg_str_t  *names;

    if (ts->approve == NULL) {
        return 0;
    }

    names = ts->approve->elts;

    for (i = 0; i < ts->approve->nelts; i++) {
        if (rg_tool_entry_is(te, names[i].data, names[i].len)) {
            return 1;
        }
    }

    return 0;
}


/* The toolset (agent) that refuses te in the chain of delegation of ts
 * (parent: the run_agent call that started it), or NULL when every one
 * of it approves te: a child session never gets more approval than the
 * session that started it. */
static const rg_toolset_t *
rg_tools_refuser(const rg_toolset_t *ts, rg_tool_run_t *parent,
    rg_tool_entry_t *te)
{
    rg_uint_t        depth;
    rg_tool_turn_t  *turn;

    if (!rg_tools_approved(ts, te)) {
        return ts;
    }

    turn = parent ? parent->turn : NULL;

    for (depth = 0; turn && depth < 64; depth++) {
        if (!rg_tools_approved(turn->toolset, te)) {
            return turn->toolset;
        }

        turn = turn->parent ? turn->parent->turn : NULL;
    }

    return NULL;
}


rg_uint_t
rg_tools_needs_approval(rg_tools_ctx_t *ctx, const rg_toolset_t *ts,
    rg_tool_run_t *parent, rg_tool_entry_t *te)
{
    return (te->tool->flags & RG_TOOL_DANGEROUS)
           && ctx->approval != RG_APPROVE_ALL
           && ctx->approval != RG_APPROVE_NONE
           && rg_tools_refuser(ts, parent, te) != NULL;
}


/* Decides a dangerous call before it starts: RG_OK to launch it, RG_DONE
 * when it was refused (and finished), RG_AGAIN when the terminal was
 * asked. */
static rg_int_t
rg_tools_gate(rg_tool_run_t *run)
{
    rg_tool_turn_t      *turn;
    const rg_toolset_t  *no;

    turn = run->turn;

    /* decided by an operator before the turn (a parked session's) */
    if (run->approved || run->ctx->approval == RG_APPROVE_ALL) {
        return RG_OK;
    }

    if (run->ctx->approval == RG_APPROVE_NONE) {
        run->denied = 1;
        rg_tools_set_error(run, "error: %s is a dangerous tool and was not "
                           "approved (dangerous tools are refused here); do "
                           "without it or ask the user", run->name);
        rg_log_error(RG_LOG_NOTICE, turn->log, 0, "dangerous tool \"%s\" "
                     "refused (--deny-dangerous)", run->name);
        rg_tools_finish(run);
        return RG_DONE;
    }

    no = rg_tools_refuser(turn->toolset, turn->parent, run->entry);
    if (no == NULL) {
        return RG_OK;
    }

    if (run->ctx->approval == RG_APPROVE_PROMPT) {
        rg_tools_ask(run);
        return RG_AGAIN;
    }

    run->denied = 1;

    if (no == turn->toolset) {
        rg_tools_set_error(run, "error: %s is a dangerous tool and was not "
                           "approved; do without it or ask the user",
                           run->name);

    } else {
        rg_tools_set_error(run, "error: %s is a dangerous tool and was not "
                           "approved: agent \"%.*s\", which delegated this "
                           "task, does not approve it; do without it or ask "
                           "the user", run->name, (int) no->owner.len,
                           no->owner.data);
    }

    rg_log_error(RG_LOG_WARN, turn->log, 0, "dangerous tool \"%s\" refused: "
                 "agent \"%.*s\" does not approve it and there is no "
                 "terminal to ask (\"approve %s;\" in the agent, or "
                 "--approve-all, allows it)", run->name, (int) no->owner.len,
                 no->owner.data, run->name);

    rg_tools_finish(run);

    return RG_DONE;
}


static void
rg_tools_decide(rg_tool_run_t *run, rg_uint_t yes)
{
    rg_tool_turn_t  *turn;

    turn = run->turn;
    run->awaiting = 0;
    turn->awaiting--;

    if (turn->approval) {
        turn->approval(turn);
    }

    if (yes) {
        rg_tools_launch(run);
        return;
    }

    run->denied = 1;
    run->answered = 1;
    rg_tools_set_error(run, "error: %s was denied by the operator; do "
                       "without it or ask the user", run->name);
    rg_tools_finish(run);
}


static void
rg_tools_prompt_handler(evutil_socket_t fd, short what, void *arg)
{
    char             buf[256], *nl;
    ssize_t          n;
    rg_buf_t        *line;
    rg_tool_run_t   *run;
    rg_tools_ctx_t  *ctx;

    ctx = arg;
    line = &ctx->prompt_line;

    n = read(fd, buf, sizeof(buf));

    if (n > 0) {
        rg_buf_append(line, buf, n);
    }

    nl = line->data ? memchr(line->data, '\n', line->len) : NULL;

    if (nl == NULL && n > 0) {
        return;                        /* the rest of the line follows */
    }

    run = ctx->prompt_head;
    if (run == NULL) {
        rg_buf_reset(line);
        return;
    }

    ctx->prompt_head = run->next_approval;
    if (ctx->prompt_head == NULL) {
        ctx->prompt_tail = &ctx->prompt_head;
    }

    /* end of input means no */
    rg_tools_decide(run, n > 0 && line->len
                         && (line->data[0] == 'y' || line->data[0] == 'Y'));

    rg_buf_reset(line);

    rg_tools_prompt_next(ctx);
}


static void
rg_tools_prompt_next(rg_tools_ctx_t *ctx)
{
    char            shown[401];
    size_t          n;
    rg_tool_run_t  *run;

    run = ctx->prompt_head;

    if (run == NULL) {
        if (ctx->prompt_ev) {
            event_del(ctx->prompt_ev);
        }
        return;
    }

    if (ctx->prompt_ev == NULL) {
        ctx->prompt_ev = event_new(ctx->base, STDIN_FILENO,
                                   EV_READ | EV_PERSIST,
                                   rg_tools_prompt_handler, ctx);
        if (ctx->prompt_ev == NULL) {
            return;
        }
    }

    n = rg_min(run->call.args_len, sizeof(shown) - 1);
    memcpy(shown, run->call.args, n);
    n = rg_secret_scrub(shown, n);

    fprintf(stderr, "\nreagent: the model of agent \"%.*s\" wants to run "
            "the dangerous tool \"%s\" with %.*s%s\nallow it? [y/N] ",
            (int) run->turn->toolset->owner.len,
            run->turn->toolset->owner.data,
            run->name, (int) n, shown,
            run->call.args_len > sizeof(shown) - 1 ? "…" : "");
    fflush(stderr);

    event_add(ctx->prompt_ev, NULL);
}


static void
rg_tools_ask(rg_tool_run_t *run)
{
    rg_uint_t        first;
    rg_tools_ctx_t  *ctx;

    ctx = run->ctx;
    first = ctx->prompt_head == NULL;

    run->awaiting = 1;
    run->turn->awaiting++;
    run->next_approval = NULL;
    *ctx->prompt_tail = run;
    ctx->prompt_tail = &run->next_approval;

    if (first) {
        rg_tools_prompt_next(ctx);
    }
}


/* calls --------------------------------------------------------------- */

static void
rg_tools_launch(rg_tool_run_t *run)
{
    int              rc;
    struct timeval   tv;
    rg_isolate_t    *isolate;

    run->started = rg_monotonic_msec();
    run->started_us = rg_monotonic_usec();
    run->launched = 1;

    /* what its requests carry, fixed before anything may read it */
    rg_trace_span_header(&run->span, run->traceparent);
    if (run->turn->call_start) {
        run->turn->call_start(run->turn, run);
    }

    if (run->timeout) {
        tv.tv_sec = run->timeout / 1000;
        tv.tv_usec = (run->timeout % 1000) * 1000;
        evtimer_assign(&run->timer, run->ctx->base, rg_tools_timeout_handler,
                       run);
        evtimer_add(&run->timer, &tv);
        run->timer_set = 1;
    }

    isolate = run->ctx->mods[run->entry->module->index].isolate;

    if (isolate) {
        run->isolated = 1;
        run->helper.tool = run->entry->tool->name;
        run->helper.id = run->call.id;
        run->helper.session = run->call.session;
        run->helper.args = run->call.args;
        run->helper.args_len = run->call.args_len;
        run->helper.done = rg_tools_isolated_done;
        rg_isolate_call(isolate, &run->helper);
        return;
    }

    if ((run->entry->tool->flags & RG_TOOL_BLOCKING) && run->ctx->pool) {
        /* a thread's call may outlive the engine: it gets the host table
         * of its module's configuration, which the cycle keeps while the
         * call runs; what a thread may call there (done, fail, log, the
         * argument readers) needs no engine */
        run->call.host = &run->entry->module->host;
        run->in_pool = 1;
        run->pool.task.handler = rg_tools_pool_handler;
        run->pool.task.done = rg_tools_pool_done;
        run->pool.task.data = run;
        atomic_fetch_add_explicit(&run->entry->module->cycle->busy, 1,
                                  memory_order_relaxed);
        rg_thread_pool_post(run->ctx->pool, &run->pool.task);
        return;
    }

    rc = run->entry->tool->start(&run->call);

    if (run->answered || run->finished || rc == RG_TOOL_AGAIN) {
        return;
    }

    run->answered = 1;          /* it will not answer now */

    if (rc == RG_TOOL_OK) {
        rg_tools_set_error(run, "error: %s returned without an answer",
                           run->name);
    } else {
        rg_tools_set_error(run, "error: %s failed without saying why",
                           run->name);
    }

    rg_tools_finish(run);
}


json_t *
rg_tools_args(rg_tool_entry_t *te, const char *text, size_t len, char *err,
    size_t errlen)
{
    int         n;
    json_t     *args;
    rg_uint_t   repaired;

    /* "error: " and what is wrong */
    n = errlen > 7 ? 7 : 0;
    memcpy(err, "error: ", n);
    err[n] = '\0';

    args = rg_tool_args_parse(te->tool->name, text, len, &repaired, err + n,
                              errlen - n);
    if (args == NULL) {
        return NULL;
    }

    if (te->schema
        && rg_tool_args_validate(te->tool->name, args, te->schema, err + n,
                                 errlen - n) != RG_OK)
    {
        json_decref(args);
        return NULL;
    }

    if (repaired) {
        char  names[64];

        rg_tool_args_repairs(repaired, names, sizeof(names));
        rg_log_debug(te->module->log, "arguments for \"%s\" repaired: %s",
                     te->tool->name, names);
    }

    return args;
}


rg_tool_turn_t *
rg_tools_turn_create(rg_tools_ctx_t *ctx, const rg_toolset_t *ts,
    const char *session, rg_tool_request_t *reqs, rg_uint_t n,
    rg_tool_turn_done_pt done, void *data, rg_log_t *log)
{
    rg_int_t          j;
    rg_uint_t         i;
    json_t           *args;
    rg_tool_run_t    *run;
    rg_tool_turn_t   *turn;
    rg_tool_entry_t  *te;
    const char       *text;
    const rg_str_t   *key;
    size_t            len;
    char              errbuf[768];

    turn = calloc(1, sizeof(rg_tool_turn_t) + n * sizeof(rg_tool_run_t *));
    if (turn == NULL) {
        return NULL;
    }

    turn->runs = (rg_tool_run_t **) (turn + 1);
    turn->ctx = ctx;
    turn->done = done;
    turn->data = data;
    turn->log = log;
    turn->toolset = ts;

    event_assign(&turn->done_ev, ctx->base, -1, 0,
                 rg_tools_turn_done_handler, turn);

    for (i = 0; i < n; i++) {
        run = calloc(1, sizeof(rg_tool_run_t));
        if (run == NULL) {
            rg_tools_turn_destroy(turn);
            return NULL;
        }

        turn->runs[i] = run;
        turn->n++;

        run->ctx = ctx;
        run->turn = turn;
        run->index = i;
        run->approved = reqs[i].approved;
        run->name = reqs[i].name.len ? reqs[i].name.data : "(no name)";

        /* the run owns what the module reads: a call still queued in the
         * pool may outlive its session */
        key = reqs[i].key.len ? &reqs[i].key : &reqs[i].id;
        run->own = rg_tools_own3(reqs[i].id.data ? reqs[i].id.data : "",
                                 reqs[i].id.len, session,
                                 reqs[i].name.data ? reqs[i].name.data : "",
                                 reqs[i].name.len,
                                 key->data ? key->data : "", key->len);
        if (run->own == NULL) {
            rg_tools_turn_destroy(turn);
            return NULL;
        }

        run->call.id = run->own;
        run->call.session = run->own + reqs[i].id.len + 1;
        run->idem = run->call.session + strlen(session) + 1
                    + reqs[i].name.len + 1;
        run->name = run->name[0] == '(' ? run->name
                    : run->call.session + strlen(session) + 1;

        /* which tool? only those of the agent's allow-list */
        j = rg_toolset_find(ts, reqs[i].name.data, reqs[i].name.len);
        te = j >= 0 ? ts->tools[j] : NULL;

        if (reqs[i].has_preset) {
            rg_tools_set_result(run, reqs[i].preset_failed,
                                reqs[i].preset.data, reqs[i].preset.len);
            continue;
        }

        if (reqs[i].name.len == 0) {
            rg_tools_set_error(run, "error: the tool call has no function "
                               "name; call one of: %s", ts->tool_list);
            continue;
        }

        if (te == NULL) {
            rg_tools_set_error(run, "error: unknown tool \"%.*s\"; the tools "
                               "you can call are: %s",
                               (int) rg_min(reqs[i].name.len, 64),
                               reqs[i].name.data,
                               ts->ntools ? ts->tool_list : "none");
            continue;
        }

        if (reqs[i].args) {
            /* checked by the caller already; the text is copied, as the
             * caller's memory may go before a queued call runs */
            args = reqs[i].args;
            reqs[i].args = NULL;

            if (reqs[i].args_text.data) {
                len = reqs[i].args_text.len;
                run->args_text = rg_strdup_len(reqs[i].args_text.data, len);

            } else {
                /* not made canonical: no guard compared them */
                len = 0;
                run->args_text = rg_json_dumps(args, 0, &len);
            }

            text = run->args_text;

            if (text == NULL) {
                json_decref(args);
                rg_tools_set_error(run, "error: out of memory");
                continue;
            }

        } else {
            args = rg_tools_args(te, reqs[i].arguments.data,
                                 reqs[i].arguments.len, errbuf,
                                 sizeof(errbuf));
            if (args == NULL) {
                rg_tools_set_result(run, 1, errbuf, strlen(errbuf));
                continue;
            }

            /* the module sees the arguments as checked and coerced */
            text = rg_json_dumps(args, 0, NULL);
            if (text == NULL) {
                json_decref(args);
                rg_tools_set_error(run, "error: out of memory");
                continue;
            }

            len = strlen(text);
            run->args_text = (char *) text;
        }

        run->entry = te;
        run->args = args;
        run->call.host_args = args;
        run->call.tool = te->tool;
        run->call.host = &ctx->mods[te->module->index].host;
        run->call.conf = te->module->conf;
        run->call.args = text;
        run->call.args_len = len;
        run->timeout = ts->timeouts && ts->timeouts[j]
                       ? ts->timeouts[j]
                       : te->tool->timeout_ms ? te->tool->timeout_ms
                                              : ts->timeout;
    }

    return turn;
}


void
rg_tools_turn_start(rg_tool_turn_t *turn)
{
    rg_uint_t        i;
    rg_tool_run_t   *run;

    /* count first: a call may answer before the next one starts */
    turn->pending = turn->n;
    turn->started = rg_monotonic_msec();

    for (i = 0; i < turn->n; i++) {
        run = turn->runs[i];
        run->started = rg_monotonic_msec();
        run->started_us = rg_monotonic_usec();

        if (run->entry == NULL) {
            rg_tools_finish(run);
            continue;
        }

        if ((run->entry->tool->flags & RG_TOOL_DANGEROUS)
            && rg_tools_gate(run) != RG_OK)
        {
            continue;
        }

        rg_tools_launch(run);
    }

    if (turn->n == 0 && !turn->done_posted) {
        turn->done_posted = 1;
        event_active(&turn->done_ev, EV_TIMEOUT, 1);
    }
}


void
rg_tools_turn_destroy(rg_tool_turn_t *turn)
{
    rg_uint_t       i;
    rg_tool_run_t  *run;

    if (turn == NULL) {
        return;
    }

    if (turn->done_posted) {
        event_del(&turn->done_ev);
    }

    for (i = 0; i < turn->n; i++) {
        run = turn->runs[i];

        if (run->awaiting) {
            rg_tools_prompt_remove(run);
            if (turn->ctx->prompt_head == NULL) {
                rg_tools_prompt_next(turn->ctx);
            }
        }

        if (run->in_pool) {
            /* the pool's done frees it; its timer must not fire first */
            if (run->timer_set) {
                event_del(&run->timer);
                run->timer_set = 0;
            }
            run->turn = NULL;
            continue;
        }

        if (run->isolated && !run->finished) {
            rg_isolate_abort(run->ctx->mods[run->entry->module->index]
                             .isolate, &run->helper);
            rg_tools_run_free(run);
            continue;
        }

        if (run->entry == NULL || run->answered || run->cancelled
            || run->denied || !run->launched)
        {
            rg_tools_run_free(run);
            continue;
        }

        /* still running: cancel it, or let its late answer free it */
        if (run->timer_set) {
            event_del(&run->timer);
            run->timer_set = 0;
        }

        if (run->entry->tool->cancel) {
            run->entry->tool->cancel(&run->call);
            rg_tools_run_free(run);
            continue;
        }

        run->turn = NULL;
    }

    free(turn);
}


/* the part in an engine ------------------------------------------------ */

rg_tools_ctx_t *
rg_tools_ctx_create(struct event_base *base, rg_curl_t *curl, rg_log_t *log,
    rg_uint_t nmods)
{
    rg_tools_ctx_t  *ctx;

    ctx = calloc(1, sizeof(rg_tools_ctx_t)
                    + nmods * sizeof(rg_tools_module_t)
                    + nmods * sizeof(rg_tool_list_t *));
    if (ctx == NULL) {
        return NULL;
    }

    ctx->base = base;
    ctx->curl = curl;
    ctx->log = log;
    ctx->mods = (rg_tools_module_t *) (ctx + 1);
    ctx->provided = (rg_tool_list_t **) (ctx->mods + nmods);
    ctx->nmods = nmods;
    ctx->prompt_tail = &ctx->prompt_head;

    rg_tool_host_io_start(&ctx->io, base, log);

    return ctx;
}


rg_int_t
rg_tools_ctx_bind(rg_tools_ctx_t *ctx, rg_module_t *m, rg_uint_t helpers)
{
    rg_tools_module_t  *tm;

    tm = &ctx->mods[m->index];

    rg_tools_host_init(&tm->host, &tm->bind, m, ctx);

    if (!m->isolated) {
        return RG_OK;
    }

    tm->isolate = rg_isolate_create(m, ctx->base, helpers, ctx->log);
    if (tm->isolate == NULL) {
        rg_log_error(RG_LOG_EMERG, ctx->log, 0, "cannot start helper "
                     "processes for module \"%s\"", m->mod->name);
        return RG_ERROR;
    }

    return RG_OK;
}


void
rg_tools_ctx_destroy(rg_tools_ctx_t *ctx)
{
    rg_uint_t  i;

    if (ctx == NULL) {
        return;
    }

    for (i = 0; i < ctx->nmods; i++) {
        rg_isolate_destroy(ctx->mods[i].isolate);
        ctx->mods[i].isolate = NULL;
        rg_tool_list_unref(ctx->provided[i]);
        ctx->provided[i] = NULL;
    }

    /* finished pool work may still free orphaned calls */
    rg_thread_pool_destroy(ctx->pool);
    ctx->pool = NULL;

    rg_tools_http_reset(ctx);
    rg_tool_host_io_stop(&ctx->io);

    if (ctx->prompt_ev) {
        event_free(ctx->prompt_ev);
    }

    rg_buf_free(&ctx->prompt_line);
    free(ctx);
}


/* providers ------------------------------------------------------------ */

void
rg_tools_provide(rg_tools_ctx_t *ctx, rg_module_t *m, rg_tool_list_t *list)
{
    rg_tool_list_t  *old;

    old = ctx->provided[m->index];

    if (old == list) {
        return;
    }

    rg_tool_list_ref(list);
    ctx->provided[m->index] = list;
    ctx->generation++;

    rg_tool_list_unref(old);
}


rg_tool_list_t *
rg_tools_provided(rg_tools_ctx_t *ctx, rg_module_t *m)
{
    return m->index < ctx->nmods ? ctx->provided[m->index] : NULL;
}


rg_tool_entry_t *
rg_tool_list_find(rg_tool_list_t *list, const char *name, size_t len)
{
    rg_uint_t  i;

    for (i = 0; list && i < list->n; i++) {
        if (rg_tool_entry_is(&list->tools[i], name, len)) {
            return &list->tools[i];
        }
    }

    return NULL;
}


void
rg_tool_list_ref(rg_tool_list_t *list)
{
    if (list) {
        list->refs++;
    }
}


void
rg_tool_list_unref(rg_tool_list_t *list)
{
    if (list && --list->refs == 0 && list->free) {
        list->free(list);
    }
}


rg_int_t
rg_tools_init_worker(rg_engine_t *e)
{
    rg_uint_t         i;
    rg_module_t     **mods;
    rg_tools_ctx_t   *ctx;
    rg_tools_conf_t  *tcf;

    tcf = rg_tools_conf(e->cycle);

    ctx = rg_tools_ctx_create(e->base, rg_event_ctx(e), e->log,
                              tcf->modules.nelts);
    if (ctx == NULL) {
        return RG_ERROR;
    }

    rg_engine_ctx(e, &rg_tools_part) = ctx;

    /* before any thread: isolated helpers start from a zygote forked
     * here, which must hold no lock a thread took */
    mods = tcf->modules.elts;

    for (i = 0; i < tcf->modules.nelts; i++) {
        if (rg_tools_ctx_bind(ctx, mods[i], (rg_uint_t) tcf->isolated_helpers)
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    ctx->pool = rg_thread_pool_create(e->base,
                                      (rg_uint_t) tcf->pool_threads,
                                      (rg_uint_t) tcf->pool_max_queue,
                                      e->log);
    if (ctx->pool == NULL) {
        rg_log_error(RG_LOG_EMERG, e->log, 0, "thread pool setup failed");
        return RG_ERROR;
    }

    return RG_OK;
}


void
rg_tools_exit_worker(rg_engine_t *e)
{
    rg_tools_ctx_destroy(rg_tools_ctx(e));
    rg_engine_ctx(e, &rg_tools_part) = NULL;
}
