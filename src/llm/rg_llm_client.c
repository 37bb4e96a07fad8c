/* rg_llm_client.c: sends Chat Completions requests through the worker's
 * curl multi. Owns the per-upstream concurrency cap (requests beyond it
 * wait in a FIFO queue, they are never failed), the retry policy
 * (exponential backoff with jitter, Retry-After honoured), the curl share
 * groups that keep connection reuse cheap, and the clocks of an attempt:
 * connect, total and idle timeouts are reactor timers of our own (curl's
 * per-handle timeouts cost CPU and its low-speed check counts whole
 * seconds), one timer per request, re-armed lazily. Bytes of responses are
 * counted against one budget for the engine (rg_llm_ctx_t). Knows the
 * wire format only through its codec's row (rg_llm.h): its path, its key
 * header, its reading of answers whole or streamed. Reads what the
 * headers say of waiting (retry-after, x-should-retry, the reset of an
 * exhausted limit) for the codec's classifier. Builds the llm part's runtime
 * in each engine: one upstream per llm block.
 *
 * This file owns a request's life: its attempts, their retries and their
 * end; the upstreams, their lanes, queues, limits and the engine's byte
 * budget are rg_llm_upstream.c's, an attempt's transfer (the curl handle,
 * its clocks, what comes back) rg_llm_transfer.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_client.h>
#include <rg_llm_client_int.h>
#include <rg_json.h>
#include <rg_llm_shared.h>


/* the metrics name the outcomes as rg_llm_status_name() (test_metrics) */
_Static_assert(RG_LLM_ERR_OVER_RATE + 1 == RG_METRICS_OUTCOMES,
               "the metrics' model call outcomes");


static void rg_llm_start(rg_llm_req_t *r);
static void rg_llm_done(rg_curl_xfer_t *x, CURLcode rc);


/* a piece of the streamed text, to the caller: what it builds of it
 * outlives the parse, so jansson's arena is closed meanwhile */
static void
rg_llm_delta_out(void *data, size_t offset, const char *text, size_t len)
{
    rg_uint_t      depth;
    rg_llm_req_t  *r;

    r = data;

    depth = rg_json_arena_pause();
    r->delta(r->data, offset, text, len);
    rg_json_arena_resume(depth);
}


void
rg_llm_req_init(rg_llm_req_t *r, rg_llm_upstream_t *up, rg_int_t lane,
    rg_llm_handler_pt handler, void *data, rg_log_t *log)
{
    memset(r, 0, sizeof(rg_llm_req_t));

    r->up = up;
    r->lane = lane;
    r->handler = handler;
    r->data = data;
    r->log = log;
    r->xfer.done = rg_llm_done;
    r->xfer.start = rg_llm_started;
    r->xfer.data = r;

    evtimer_assign(&r->timer, up->base, rg_llm_timer_handler, r);
}


rg_int_t
rg_llm_send(rg_llm_req_t *r, const char *body, size_t len,
    const char *request_id, rg_pool_t *pool, const char *id_prefix)
{
    assert(!r->busy);

    r->body = body;
    r->body_len = len;
    r->pool = pool;
    r->id_prefix = id_prefix;
    r->attempt = 0;
    r->budget_spent = 0;
    r->started = rg_monotonic_msec();
    r->started_us = rg_monotonic_usec();

    /* the last answer's buffer is not held while this one is awaited: a
     * new one comes with its first byte */
    rg_buf_free(&r->resp);
    memset(r->provider_id, 0, sizeof(r->provider_id));

    rg_cpystrn(rg_cpymem(r->rid_header, "X-Request-ID: ", 14), request_id,
               sizeof(r->rid_header) - 14);

    /* the request's own headers, chained in front of the shared ones */
    r->rid.data = r->rid_header;
    r->rid.next = r->up->headers;

    if (r->tp_header[0]) {
        r->tp.data = r->tp_header;
        r->tp.next = r->up->headers;
        r->rid.next = &r->tp;
    }

    if (r->xfer.easy == NULL && rg_llm_easy(r) != RG_OK) {
        return RG_ERROR;
    }

    r->busy = 1;
    r->estimate = len / 4 + 1;

    if (r->up->queue_head || r->up->shared
        || r->up->stats.active >= (rg_uint_t) r->up->conf->max_connections
        || !rg_llm_rate_ok(r->up))
    {
        rg_llm_enqueue(r);
        r->up->stats.queued++;
        rg_llm_next(r->up);
        return RG_OK;
    }

    rg_llm_start(r);

    return RG_OK;
}


static void
rg_llm_fail_now(rg_llm_req_t *r, rg_llm_status_e status, const char *msg)
{
    rg_llm_response_t  resp;

    memset(&resp, 0, sizeof(resp));
    resp.status = status;
    resp.error.data = (char *) msg;
    resp.error.len = strlen(msg);

    r->busy = 0;
    r->up->stats.failures++;
    r->up->stats.calls++;
    rg_metrics_model_call(r->up->metrics, status,
                          rg_monotonic_usec() - r->started_us, 0, 0);
    r->handler(r, &resp);
}


static void
rg_llm_start(rg_llm_req_t *r)
{
    rg_llm_upstream_t  *up;

    up = r->up;

    rg_buf_reset(&r->resp);
    rg_llm_mem_release(r);
    r->http_status = 0;
    rg_llm_hints_init(&r->hints);
    r->got = 0;
    r->too_large = 0;
    r->over_memory = 0;
    r->nomem = 0;
    r->connected = 0;
    r->idle_on = 0;
    memset(r->provider_id, 0, sizeof(r->provider_id));

    if (up->conf->stream && !r->recorded) {
        if (r->stream) {
            up->conf->codec->stream_destroy(r->stream);
        }

        r->stream = up->conf->codec->stream_create(r->max_calls,
                                                   r->delta ? rg_llm_delta_out
                                                            : NULL, r);
        if (r->stream == NULL) {
            rg_llm_fail_now(r, RG_LLM_ERR_FATAL, "out of memory");
            return;
        }
    }
    r->errbuf[0] = '\0';
    r->attempt_started = rg_monotonic_msec();

    if (r->recorded) {
        /* answered from the loop, like a real response */
        r->waiting = 1;
        event_active(&r->timer, EV_TIMEOUT, 1);
        up->stats.active++;
        return;
    }

    curl_easy_setopt(r->xfer.easy, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(r->xfer.easy, CURLOPT_POSTFIELDSIZE, (long) r->body_len);

    /* a lane of at most per_cache sessions bounds its own connections */
    r->xfer.bounded = r->lane >= 0 && (rg_uint_t) r->lane < up->nlanes
                      && up->lane_users[r->lane] <= rg_llm_lane_size(up);

    if (rg_curl_add(up->curl, &r->xfer) != RG_OK) {
        rg_llm_fail_now(r, RG_LLM_ERR_CONNECT,
                        "cannot start a request to the model");
        return;
    }

    if (rg_llm_rpm(up)) {
        up->rpm_left -= 1;
    }

    if (rg_llm_tpm(up)) {
        up->tpm_left -= (double) r->estimate;
    }

    up->stats.requests++;
    up->stats.active++;
    if (up->stats.active > up->stats.max_active) {
        up->stats.max_active = up->stats.active;
    }
}


/* a slot was freed: the oldest waiting request takes it */
void
rg_llm_next(rg_llm_upstream_t *up)
{
    size_t         taken;
    uint64_t       slot;
    rg_llm_req_t  *r;

    while (up->queue_head
           && up->stats.active < (rg_uint_t) up->conf->max_connections)
    {
        if (!rg_llm_rate_ok(up)) {
            rg_llm_rate_wait(up);
            return;
        }

        taken = 0;
        slot = 0;

        if (up->shared
            && rg_llm_shared_admit(up->shared, up->queue_head->estimate,
                                   up->queue_head->qseq, up->qseq, &taken,
                                   &slot)
               != RG_OK)
        {
            return;                    /* the store answers later */
        }

        r = up->queue_head;
        rg_llm_dequeue(r);
        r->shared_taken = taken;
        r->shared_slot = slot;
        rg_llm_start(r);
    }
}


void
rg_llm_backoff_end(rg_llm_req_t *r)
{
    r->waiting = 0;

    if (r->up->queue_head || r->up->shared
        || r->up->stats.active >= (rg_uint_t) r->up->conf->max_connections
        || !rg_llm_rate_ok(r->up))
    {
        rg_llm_enqueue(r);
        rg_llm_next(r->up);
        return;
    }

    rg_llm_start(r);
}


static rg_msec_t
rg_llm_backoff(rg_llm_req_t *r, rg_llm_response_t *resp)
{
    rg_msec_t       d;
    rg_llm_conf_t  *c;

    c = r->up->conf;

    /* the wait the answer asked for */
    if (resp->retry_after) {
        return resp->retry_after;
    }

    d = c->retry_base;
    d <<= rg_min(r->attempt, 20);
    d = rg_min(d, c->retry_max);

    /* jitter: somewhere in the upper half, so a burst spreads out */
    return d / 2 + (rg_msec_t) (random() % (long) (d / 2 + 1));
}


static rg_uint_t
rg_llm_retryable(rg_llm_status_e s)
{
    switch (s) {
    case RG_LLM_ERR_RATE:
    case RG_LLM_ERR_SERVER:
    case RG_LLM_ERR_TIMEOUT:
    case RG_LLM_ERR_CONNECT:
    case RG_LLM_ERR_BAD_RESPONSE:
        return 1;
    default:
        return 0;
    }
}


void
rg_llm_replay(rg_llm_req_t *r)
{
    rg_llm_recorded_t  *rec;

    r->waiting = 0;
    rec = r->recorded;

    if (rec->status == 0) {
        snprintf(r->errbuf, sizeof(r->errbuf), "%.*s",
                 (int) rg_min(rec->len, sizeof(r->errbuf) - 1), rec->body);
        rg_llm_complete(r, CURLE_COULDNT_CONNECT, 0);
        return;
    }

    rg_buf_reset(&r->resp);
    rg_buf_append(&r->resp, rec->body, rec->len);
    rg_llm_complete(r, CURLE_OK, rec->status);
}


static void
rg_llm_done(rg_curl_xfer_t *x, CURLcode rc)
{
    long           status;
    rg_llm_req_t  *r;

    r = x->data;
    status = 0;

    if (rc == CURLE_OK) {
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    }

    rg_llm_complete(r, rc, status);
}


/* what an answer cost, by the llm's price: cache reads and writes are
 * part of the prompt's tokens, at their own prices */
static void
rg_llm_price(rg_llm_conf_t *c, rg_llm_response_t *resp)
{
    double  plain, cost;

    if (!c->priced || resp->status != RG_LLM_OK) {
        return;
    }

    plain = (double) resp->prompt_tokens - (double) resp->cached_tokens
            - (double) resp->cache_write_tokens;

    cost = rg_max(plain, 0) * c->price[RG_LLM_PRICE_INPUT]
           + (double) resp->cached_tokens * c->price[RG_LLM_PRICE_CACHED]
           + (double) resp->cache_write_tokens * c->price[RG_LLM_PRICE_WRITE]
           + (double) resp->completion_tokens * c->price[RG_LLM_PRICE_OUTPUT];

    resp->cost = cost / 1e6;
}


void
rg_llm_complete(rg_llm_req_t *r, CURLcode code, long status)
{
    rg_int_t               rc;
    rg_llm_answer_t        answer;
    const rg_llm_codec_t  *codec;
    rg_msec_t              delay;
    rg_llm_upstream_t     *up;
    rg_llm_response_t      resp;

    up = r->up;
    codec = up->conf->codec;

    up->stats.active--;
    rg_llm_shared_release(up->shared, r->shared_slot);
    r->shared_slot = 0;
    rg_llm_timer_stop(r);

    memset(&resp, 0, sizeof(resp));

    /* stopped for response_memory even if its last bytes had come */
    if (code != CURLE_OK || r->over_memory) {
        rg_llm_transport_error(r, code, &resp);

    } else {
        r->http_status = status;

        /* nothing jansson allocates here outlives the parse */
        rg_json_arena_begin();

        rg_llm_hints_end(&r->hints);

        answer.http_status = (int) status;
        answer.body = r->resp.data ? r->resp.data : "";
        answer.len = r->resp.len;
        answer.hints = &r->hints;
        answer.id_prefix = r->id_prefix;
        answer.max_calls = r->max_calls;

        if (up->conf->stream && r->stream == NULL) {
            /* a replayed stream: read the recorded body in one go */
            r->stream = codec->stream_create(r->max_calls, NULL, NULL);
            if (r->stream) {
                codec->stream_feed(r->stream, answer.body, answer.len);
            }
        }

        if (r->stream) {
            rc = codec->stream_finish(r->stream, r->pool, &answer, &resp);
            codec->stream_destroy(r->stream);
            r->stream = NULL;

        } else {
            rc = codec->parse(r->pool, &answer, &resp);
        }

        rg_json_arena_end();

        if (rc != RG_OK) {
            resp.status = RG_LLM_ERR_FATAL;
            rg_str_set(&resp.error, "out of memory reading the response");
        }

        rg_llm_price(up->conf, &resp);
    }

    /* the bytes are read: they no longer count against response_memory */
    rg_llm_mem_release(r);

    /* the provider counted the tokens: correct the estimate */
    if (rg_llm_tpm(up) && resp.total_tokens > 0) {
        up->tpm_left -= (double) resp.total_tokens - (double) r->estimate;
    }

    rg_llm_shared_usage(up->shared, r->shared_taken, resp.total_tokens);
    r->shared_taken = 0;

    /* the freed slot goes to the oldest waiting request first */
    rg_llm_next(up);

    delay = rg_llm_retryable(resp.status) ? rg_llm_backoff(r, &resp) : 0;

    /* every process waits, not only this request */
    if (resp.status == RG_LLM_ERR_RATE) {
        rg_llm_shared_cooldown(up->shared, delay);
    }

    if (rg_llm_retryable(resp.status)
        && r->attempt < (rg_uint_t) up->conf->max_retries
        && rg_monotonic_msec() + delay - r->started > up->conf->retry_budget)
    {
        r->budget_spent = 1;
        rg_log_error(RG_LOG_WARN, r->log, 0, "giving up on the model call: "
                     "the next retry would pass retry_budget %.3gs",
                     (double) up->conf->retry_budget / 1000);
    }

    if (rg_llm_retryable(resp.status) && !r->budget_spent && !r->recorded
        && r->attempt < (rg_uint_t) up->conf->max_retries)
    {
        r->attempt++;
        up->stats.retries++;
        rg_metrics_model_retry(up->metrics);

        rg_log_error(RG_LOG_WARN, r->log, 0,
                     "model call failed (%s: %.*s), retry %lu of %ld in %llums",
                     rg_llm_status_name(resp.status), (int) resp.error.len,
                     resp.error.data ? resp.error.data : "",
                     (unsigned long) r->attempt,
                     (long) up->conf->max_retries,
                     (unsigned long long) delay);

        /* the attempt's timer, stopped above, waits out the backoff */
        rg_timer_add(&r->timer, delay);
        r->waiting = 1;

        /* the response buffer is not needed while we wait */
        rg_buf_free(&r->resp);
        return;
    }

    if (resp.status != RG_LLM_OK) {
        up->stats.failures++;
    }

    up->stats.calls++;
    r->busy = 0;
    rg_metrics_model_usage(up->metrics, resp.cached_tokens,
                           resp.cache_write_tokens, resp.cost);
    rg_metrics_model_call(up->metrics, resp.status,
                          rg_monotonic_usec() - r->started_us,
                          resp.prompt_tokens, resp.completion_tokens);

    /* a large body is not kept while the session runs its tools, unless
     * a transcript still reads it in the handler */
    if (!r->keep_body && r->resp.cap > 16384) {
        rg_buf_free(&r->resp);
    }

    r->handler(r, &resp);
}


void
rg_llm_cancel(rg_llm_req_t *r)
{
    if (!r->busy) {
        return;
    }

    if (r->queued) {
        rg_llm_dequeue(r);
    }

    if (r->waiting) {
        event_del(&r->timer);
        r->waiting = 0;

        if (r->recorded) {
            r->up->stats.active--;       /* a replayed answer was due */
        }
    }

    rg_llm_timer_stop(r);
    rg_llm_mem_release(r);

    if (r->xfer.active) {
        rg_curl_remove(r->up->curl, &r->xfer);
        r->up->stats.active--;
        rg_llm_shared_release(r->up->shared, r->shared_slot);
        r->shared_slot = 0;
        rg_llm_next(r->up);
    }

    r->busy = 0;
}


void
rg_llm_req_free(rg_llm_req_t *r)
{
    rg_llm_cancel(r);
    rg_llm_timer_stop(r);
    rg_llm_mem_release(r);

    if (r->xfer.easy) {
        curl_easy_cleanup(r->xfer.easy);
        r->xfer.easy = NULL;
    }

    if (r->stream) {
        r->up->conf->codec->stream_destroy(r->stream);
        r->stream = NULL;
    }

    rg_buf_free(&r->resp);
}
