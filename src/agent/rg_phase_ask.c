/* rg_phase_ask.c: the phase ask (rg_session_phase.c): the next model
 * call and its answer. Before the call, the guards: the token budget
 * (the session's and every session that delegated to it), the money
 * (the call that would pass max_cost is not made), the tenant's budgets
 * in the store (rg_tenant.c: the phase waits for the counters); then the
 * context: compaction when the request would pass context_limit's
 * threshold, and the summary call it may make ready, which goes first
 * (rg_session_context.c). The request body is the prefix followed by
 * each message's piece, made once per message and wire format.
 *
 * The answer: tokens and money counted (the session's, its ancestors',
 * the tenant's, the engine's), the answer appended. A failed call is
 * retried once after compaction (context overflow, a request over the
 * provider's tokens-per-minute limit) or on the fallback llm; else the
 * session ends failed. An answer without calls ends it (done, or filtered
 * or failed by its finish reason); one with calls goes on (-> lookup)
 * unless max_rounds or the budget stop it; a turn the provider paused
 * goes on where it stopped (-> checkpoint). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_phase_ask.h>
#include <rg_tenant.h>
#include <rg_dedupe.h>
#include <rg_session_context.h>
#include <rg_session_trace.h>
#include <rg_transcript.h>
#include <rg_events.h>
#include <rg_replay.h>
#include <rg_llm_request.h>
#include <rg_secret.h>
#include <jansson.h>


/* the phase's steps (s->phase_step) */
#define RG_PHASE_ASK_SEND      0      /* the call is to be made */
#define RG_PHASE_ASK_SENT      1      /* its answer is awaited */
#define RG_PHASE_ASK_AGAIN     2      /* made again: a retry, a summary */
#define RG_PHASE_ASK_ENDED     3      /* the answer ended the session */
#define RG_PHASE_ASK_ANSWERED  RG_PHASE_STEP_DONE   /* its calls taken */

#define RG_PHASE_ASK_NOMEM     (-1)   /* what rg_phase_ask_send() says */


/* finish reasons of an answer that ended as it should */
static const char  *rg_phase_ask_finish_ok[] = {
    "stop", "tool_calls", "function_call", "eos", "end_turn",
    "stop_sequence", "tool_use"
};


/* finish reasons of an answer a content or safety filter stopped (or
 * that the model refused, as Anthropic says it) */
static const char  *rg_phase_ask_finish_filtered[] = {
    "content_filter", "safety", "recitation", "prohibited_content",
    "blocklist", "spii", "image_safety", "refusal"
};


/* finish reasons of an answer cut at the output token limit */
static const char  *rg_phase_ask_finish_cut[] = {
    "length", "max_tokens", "max_output_tokens"
};


static void rg_phase_ask_answered(rg_llm_req_t *r, rg_llm_response_t *resp);


/* the session, s or one that delegated to it, whose max_tokens its
 * tokens (its children's included) have reached; NULL: none */
static rg_session_t *
rg_phase_ask_spent(rg_session_t *s)
{
    rg_session_t  *p;

    for (p = s; p; p = p->parent) {
        if (p->max_tokens
            && p->prompt_tokens + p->completion_tokens >= p->max_tokens)
        {
            return p;
        }
    }

    return NULL;
}


/* the session, s or one that delegated to it, whose max_cost the next
 * call (about `next` dollars) would pass; NULL: none */
static rg_session_t *
rg_phase_ask_costly(rg_session_t *s, double next)
{
    rg_session_t  *p;

    for (p = s; p; p = p->parent) {
        if (p->max_cost > 0 && p->cost + next > p->max_cost) {
            return p;
        }
    }

    return NULL;
}


/* s ends at the budget of p (s or an ancestor); still: what it was
 * about to do */
static rg_phase_rc_e
rg_phase_ask_budget(rg_session_t *s, rg_session_t *p, const char *still)
{
    if (p == s) {
        return rg_session_status(s, RG_SESSION_BUDGET_EXCEEDED, "used %lld "
                                 "of its %lld tokens (max_tokens) after %lu "
                                 "rounds%s%s",
                                 (long long) (s->prompt_tokens
                                              + s->completion_tokens),
                                 (long long) s->max_tokens,
                                 (unsigned long) s->round,
                                 s->child_tokens
                                 ? ", its child agents' included" : "",
                                 still);
    }

    return rg_session_status(s, RG_SESSION_BUDGET_EXCEEDED, "the task's "
                             "budget is spent: agent \"%.*s\", which "
                             "delegated to this one, used %lld of its %lld "
                             "tokens (max_tokens), this agent's included, "
                             "after %lu rounds here%s",
                             (int) p->agent->name.len, p->agent->name.data,
                             (long long) (p->prompt_tokens
                                          + p->completion_tokens),
                             (long long) p->max_tokens,
                             (unsigned long) s->round, still);
}


/* the last round's answer and calls go: a waiting session holds none */
static void
rg_phase_ask_round_free(rg_session_t *s)
{
    rg_dedupe_cancel(s);
    rg_session_drop_args(s);

    s->calls = NULL;
    s->extra = NULL;
    s->ncalls = 0;

    rg_pool_destroy(s->round_pool);
    s->round_pool = NULL;
}


/* The request body: the prefix, then each message's piece in the
 * llm's format, made once per message and format (a message's own JSON
 * for Chat Completions) */
static rg_int_t
rg_phase_ask_body(rg_session_t *s)
{
    size_t                 more;
    rg_str_t               wire;
    rg_msg_t              *m;
    rg_llm_body_t          bd;
    rg_llm_conf_t         *llm;
    const rg_llm_codec_t  *codec;

    llm = s->llm;
    codec = llm->codec;
    more = 0;

    for (m = s->msgs.head; m; m = m->next) {
        if (m->wire_fmt != llm->format + 1) {
            if (rg_llm_wire(codec, s->pool, m->role, &m->json, &wire)
                != RG_OK)
            {
                return RG_ERROR;
            }

            m->wire = wire.data;
            m->wire_len = (uint32_t) wire.len;
            m->wire_fmt = (uint8_t) (llm->format + 1);
        }

        more += m->wire_len + codec->join;
    }

    if (rg_llm_body_start(&bd, codec, (rg_uint_t) llm->prompt_cache,
                          &s->body, s->prefix, s->prefix_len, more)
        != RG_OK)
    {
        return RG_ERROR;
    }

    for (m = s->msgs.head; m; m = m->next) {
        if (rg_llm_body_add(&bd, m->role, m->wire, m->wire_len)
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return rg_llm_body_end(&bd);
}


/* a piece of the model's text as it comes: an event "delta" for the
 * session's watcher, {"offset", "text"} (offset within this attempt:
 * a retry starts at 0 again) */
static void
rg_phase_ask_delta(void *data, size_t offset, const char *text, size_t len)
{
    json_t        *j;
    rg_session_t  *s;

    s = data;

    if (s->on_event == NULL) {
        return;
    }

    j = json_pack("{s:I, s:s#}", "offset", (json_int_t) offset, "text", text,
                  (int) len);
    if (j == NULL) {
        return;
    }

    s->on_event(s, "delta", j, s->on_event_data);
    json_decref(j);
}


/* The call, behind its guards: RG_PHASE_WAIT (sent, or its tenant's
 * budget asked), RG_PHASE_FINISH (a guard ended it), or
 * RG_PHASE_ASK_NOMEM when memory ran out */
static rg_int_t
rg_phase_ask_send(rg_session_t *s)
{
    char          *p;
    char           rid[sizeof(s->id) + RG_INT64_LEN + 16];
    size_t         budget, estimate;
    double         next;
    rg_pool_t     *pool;
    rg_session_t  *spent;

    spent = rg_phase_ask_spent(s);
    if (spent) {
        return rg_phase_ask_budget(s, spent, "");
    }

    /* money is stopped before it is spent: the call that would pass
     * max_cost is not made */
    if (s->max_cost > 0 || s->parent) {
        next = rg_session_next_cost(s);
        spent = rg_phase_ask_costly(s, next);

        if (spent) {
            return rg_session_status(s, RG_SESSION_BUDGET_EXCEEDED, "%s "
                                     "spent $%.4f of its $%.4f (max_cost) "
                                     "after %lu rounds, and the next model "
                                     "call (about $%.4f) would pass it",
                                     spent == s ? "the task"
                                     : "the agent that delegated to this "
                                       "one", spent->cost, spent->max_cost,
                                     (unsigned long) s->round, next);
        }
    }

    switch (rg_tenant_check(s)) {
    case RG_OK:
        break;
    case RG_AGAIN:
        rg_session_set_state(s, RG_SESSION_MODEL_WAIT);
        return RG_PHASE_WAIT;          /* asked again with the answer */
    default:
        return RG_PHASE_ASK_NOMEM;
    }

    /* a compaction after the provider refused the last request (its
     * context, its tokens-per-minute) may have made a summary call
     * ready: it goes first, and this is asked again with its answer */
    if (!(s->summarizing && s->body.len)) {
        rg_buf_reset(&s->body);

        /* would the next request overflow the context window? */
        if (s->agent->context_limit) {
            budget = (size_t) (s->agent->context_limit
                               * s->agent->context_threshold
                               * s->bytes_per_token);
            estimate = s->prefix_len + s->msgs.bytes;

            if (estimate > budget) {
                rg_session_context_compact(s, budget > s->prefix_len
                                              ? (budget - s->prefix_len)
                                                * 9 / 10
                                              : 0);
            }
        }
    }

    /* the summary's body is whole already (rg_session_context.c) */
    if (s->summarizing && s->body.len) {
        snprintf(rid, sizeof(rid), "%s-summary-%lu", s->id,
                 (unsigned long) s->round);
        goto send;
    }

    s->summarizing = 0;

    if (rg_phase_ask_body(s) != RG_OK) {
        return RG_PHASE_ASK_NOMEM;
    }

    /* "%s-%lu" */
    p = rg_cpystrn(rid, s->id, sizeof(s->id));
    *p++ = '-';
    p[rg_sprint_int(p, (int64_t) s->round + 1)] = '\0';

send:

    /* one buffer for every round: "call_" and the request id */
    if (s->call_prefix == NULL) {
        s->call_prefix = rg_palloc(s->pool, sizeof(rid) + 5);
        if (s->call_prefix == NULL) {
            return RG_PHASE_ASK_NOMEM;
        }
    }
    rg_cpystrn(rg_cpymem(s->call_prefix, "call_", 5), rid, sizeof(rid));

    rg_phase_ask_round_free(s);

    pool = rg_session_round_pool(s);
    if (pool == NULL) {
        return RG_PHASE_ASK_NOMEM;
    }

    rg_session_set_state(s, RG_SESSION_MODEL_WAIT);
    s->call_started = rg_monotonic_msec();
    s->req.max_calls = (rg_uint_t) s->agent->max_tool_calls;
    s->req.keep_body = s->transcript != NULL;

    rg_session_trace_chat(s);

    /* replayed: the request is checked, the recorded answer given */
    if (s->replay) {
        switch (rg_replay_ask(s)) {
        case RG_OK:
            break;
        case RG_DECLINED:
            return RG_PHASE_WAIT;      /* s ended */
        default:
            return RG_PHASE_ASK_NOMEM;
        }
    }

    rg_events_model_started(s);

    /* the answer's text as it streams, for whoever watches (the
     * OpenAI-compatible face); a summary's is nobody's */
    s->req.delta = (s->on_event && !s->summarizing) ? rg_phase_ask_delta
                                                    : NULL;
    s->req.handler = rg_phase_ask_answered;

    /* an answer may come within the call (a failure at once) */
    s->phase_step = RG_PHASE_ASK_SENT;

    if (rg_llm_send(&s->req, s->body.data, s->body.len, rid, pool,
                    s->call_prefix)
        != RG_OK)
    {
        return RG_PHASE_ASK_NOMEM;
    }

    return RG_PHASE_WAIT;
}


rg_phase_rc_e
rg_phase_ask(rg_session_t *s)
{
    rg_int_t   rc;
    rg_uint_t  step;

    step = s->phase_step;

    switch (step) {

    case RG_PHASE_ASK_SEND:
    case RG_PHASE_ASK_AGAIN:
        rc = rg_phase_ask_send(s);

        if (rc != RG_PHASE_ASK_NOMEM) {
            return (rg_phase_rc_e) rc;
        }

        return rg_session_status(s, RG_SESSION_FAILED, "%s",
                                 step == RG_PHASE_ASK_SEND
                                 ? "could not start the model call (out "
                                   "of memory)"
                                 : "out of memory");

    case RG_PHASE_ASK_ENDED:
        return RG_PHASE_FINISH;

    default:
        return RG_PHASE_WAIT;
    }
}


static rg_uint_t
rg_phase_ask_retryable(rg_llm_status_e st)
{
    return st == RG_LLM_ERR_RATE || st == RG_LLM_ERR_SERVER
           || st == RG_LLM_ERR_TIMEOUT || st == RG_LLM_ERR_CONNECT
           || st == RG_LLM_ERR_BAD_RESPONSE;
}


/* the fallback llm takes over: the call is made again there */
static rg_uint_t
rg_phase_ask_fallback(rg_session_t *s)
{
    rg_llm_conf_t  *fb;

    fb = s->llm->fallback;

    rg_log_error(RG_LOG_WARN, &s->log, 0, "llm \"%.*s\" gave up; falling "
                 "back to llm \"%.*s\"", (int) s->llm->name.len,
                 s->llm->name.data, (int) fb->name.len, fb->name.data);

    rg_session_use_llm(s, fb);
    s->fallback_used = 1;

    if (rg_session_build_prefix(s) != RG_OK) {
        rg_session_status(s, RG_SESSION_FAILED, "out of memory");
        return RG_PHASE_ASK_ENDED;
    }

    return RG_PHASE_ASK_AGAIN;
}


/* A 429 for a request larger than the provider's tokens-per-minute
 * limit: the same body can never pass, so it is not sent again. With
 * context management on (context_limit) it is compacted once first,
 * when that brings the estimate under the limit; with context_summarize
 * the summary of the rounds dropped is asked for before the retry, as
 * after a context overflow. */
static rg_uint_t
rg_phase_ask_over_rate(rg_session_t *s, rg_llm_response_t *resp,
    const char *st)
{
    size_t       target, before;
    const char  *why;

    if (!s->agent->context_limit) {
        why = " (context_limit lets reagent compact it first)";

    } else if (resp->rate_limit <= 0) {
        why = " (the provider did not say its limit, so it was not "
              "compacted to fit)";

    } else {
        why = " (compacting could not bring it under)";
    }

    if (s->agent->context_limit && resp->rate_limit > 0
        && !s->context_retried)
    {
        s->context_retried = 1;
        before = s->msgs.bytes;
        target = (size_t) ((double) resp->rate_limit * 0.9
                           * s->bytes_per_token);
        target = target > s->prefix_len ? target - s->prefix_len : 0;

        if (target > 0 && target < before) {
            rg_session_context_compact(s, target);
        }

        if (target > 0 && s->msgs.bytes <= target && s->msgs.bytes < before) {
            rg_log_error(RG_LOG_NOTICE, &s->log, 0, "the request is over "
                         "the provider's tokens-per-minute limit of %lld: "
                         "compacted from %lu to %lu bytes, retrying once%s",
                         (long long) resp->rate_limit,
                         (unsigned long) before,
                         (unsigned long) s->msgs.bytes,
                         s->summarizing ? " after the summary of the "
                                          "rounds dropped" : "");
            s->round--;
            return RG_PHASE_ASK_AGAIN;
        }

        /* the session ends: no summary of what it dropped is asked for */
        s->summarizing = 0;
        s->body.len = 0;
    }

    rg_session_status(s, RG_SESSION_FAILED, "the request is larger than "
                      "the provider's tokens-per-minute limit, so it cannot "
                      "pass however long it waits; not retried%s (%s%s): "
                      "%.*s", why, rg_llm_status_name(resp->status), st,
                      (int) rg_min(resp->error.len, 600),
                      resp->error.data ? resp->error.data : "");

    return RG_PHASE_ASK_ENDED;
}


/* the call failed: a retry, or the end (the step that follows) */
static rg_uint_t
rg_phase_ask_failed(rg_session_t *s, rg_llm_req_t *r,
    rg_llm_response_t *resp)
{
    char       st[32];
    rg_uint_t  again;

    again = s->context_retried;
    st[0] = '\0';
    if (r->http_status) {
        snprintf(st, sizeof(st), ", HTTP %ld", r->http_status);
    }

    if (resp->status == RG_LLM_ERR_CONTEXT && !s->context_retried) {
        size_t  before;

        /* compact hard and try once more */
        s->context_retried = 1;
        before = s->msgs.bytes;
        rg_session_context_compact(s, s->msgs.bytes / 2);

        if (s->msgs.bytes < before || s->summarizing) {
            rg_log_error(RG_LOG_NOTICE, &s->log, 0, "context_length_exceeded:"
                         " compacted from %lu to %lu bytes, retrying once",
                         (unsigned long) before,
                         (unsigned long) s->msgs.bytes);
            s->round--;
            return RG_PHASE_ASK_AGAIN;
        }
    }

    if (resp->status == RG_LLM_ERR_OVER_RATE) {
        return rg_phase_ask_over_rate(s, resp, st);
    }

    /* nothing more can go: say which knobs decide what stays */
    if (resp->status == RG_LLM_ERR_CONTEXT) {
        rg_session_status(s, RG_SESSION_FAILED, "the conversation does not "
                          "fit the model's context window%s: the system "
                          "prompt, the task and the last %ld rounds "
                          "(keep_rounds) always stay; lower keep_rounds, or "
                          "set context_limit to the model's window so that "
                          "compaction starts before the provider refuses "
                          "(%s%s): %.*s",
                          again ? ", even after compacting once"
                                : ", and nothing more can be dropped",
                          (long) s->agent->keep_rounds,
                          rg_llm_status_name(resp->status), st,
                          (int) rg_min(resp->error.len, 600),
                          resp->error.data ? resp->error.data : "");
        return RG_PHASE_ASK_ENDED;
    }

    if (rg_phase_ask_retryable(resp->status) && s->llm->fallback
        && !s->fallback_used)
    {
        s->round--;
        return rg_phase_ask_fallback(s);
    }

    if (r->attempt) {
        rg_session_status(s, RG_SESSION_FAILED, "model call failed after %lu "
                          "%s over %.1fs%s (%s%s): %.*s",
                          (unsigned long) r->attempt,
                          r->attempt == 1 ? "retry" : "retries",
                          (double) (rg_monotonic_msec() - r->started) / 1000,
                          r->budget_spent ? ", retry_budget spent" : "",
                          rg_llm_status_name(resp->status), st,
                          (int) rg_min(resp->error.len, 600),
                          resp->error.data ? resp->error.data : "");
        return RG_PHASE_ASK_ENDED;
    }

    rg_session_status(s, RG_SESSION_FAILED, "model call failed (%s%s%s): "
                      "%.*s", rg_llm_status_name(resp->status), st,
                      r->budget_spent ? ", the wait asked for passes "
                      "retry_budget" : "",
                      (int) rg_min(resp->error.len, 600),
                      resp->error.data ? resp->error.data : "");

    return RG_PHASE_ASK_ENDED;
}


/* An answer that ended for a reason other than a plain stop, tool calls
 * or its length is no plain done: a filter's is "filtered", any other
 * one "failed"; both say the finish reason. True when it ended s. */
static rg_uint_t
rg_phase_ask_finish_in(const rg_str_t *f, const char **names, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (f->len == strlen(names[i])
            && memcmp(f->data, names[i], f->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


static rg_uint_t
rg_phase_ask_unusual(rg_session_t *s, rg_llm_response_t *resp)
{
    rg_str_t  *f;

    f = &resp->finish_reason;

    if (f->len == 0
        || rg_phase_ask_finish_in(f, rg_phase_ask_finish_cut,
                                  rg_nelems(rg_phase_ask_finish_cut)))
    {
        return 0;
    }

    if (rg_phase_ask_finish_in(f, rg_phase_ask_finish_ok,
                               rg_nelems(rg_phase_ask_finish_ok)))
    {
        return 0;
    }

    if (rg_phase_ask_finish_in(f, rg_phase_ask_finish_filtered,
                               rg_nelems(rg_phase_ask_finish_filtered)))
    {
        rg_session_status(s, RG_SESSION_FILTERED, "the provider's content "
                          "filter stopped the answer (finish_reason "
                          "\"%.*s\")%s", (int) f->len, f->data,
                          resp->has_content
                          ? "; what came before it is the answer"
                          : "; no answer came");
        return 1;
    }

    rg_session_status(s, RG_SESSION_FAILED, "the model's answer ended "
                      "with finish_reason \"%.*s\", not a plain stop%s",
                      (int) rg_min(f->len, 64), f->data,
                      resp->has_content ? "; what came is the answer"
                                        : "; no answer came");
    return 1;
}


/* an answer without calls: the session's answer, and its end */
static void
rg_phase_ask_final(rg_session_t *s, rg_llm_response_t *resp)
{
    if (resp->has_content) {
        s->answer = resp->content;
    } else if (resp->refusal.len) {
        s->answer = resp->refusal;
    }

    /* scrubbed once here: results, the store, events and the API
     * all write this copy */
    if (s->answer.data) {
        s->answer.data = rg_pstrdup(s->pool, s->answer.data, s->answer.len);
        if (s->answer.data) {
            s->answer.len = rg_secret_scrub(s->answer.data, s->answer.len);
            s->answer.data[s->answer.len] = '\0';
        } else {
            s->answer.len = 0;
        }
    }

    if (rg_phase_ask_unusual(s, resp)) {
        return;
    }

    if (rg_phase_ask_finish_in(&resp->finish_reason, rg_phase_ask_finish_cut,
                               rg_nelems(rg_phase_ask_finish_cut)))
    {
        rg_session_status(s, RG_SESSION_DONE, "the answer was cut off: "
                          "the model reached its output token limit "
                          "(finish_reason \"%.*s\")%s%s",
                          (int) resp->finish_reason.len,
                          resp->finish_reason.data,
                          resp->calls_cut
                          ? "; the tool calls it was writing were cut "
                            "too and were not run"
                          : "",
                          !resp->has_content
                          && (resp->reasoning.len || resp->nopaque)
                          ? "; it spent them on reasoning and gave no "
                            "answer (raise max_output_tokens)"
                          : "");
        return;
    }

    if (!resp->has_content && resp->refusal.len) {
        rg_session_status(s, RG_SESSION_DONE, "the model refused");
        return;
    }

    rg_session_status(s, RG_SESSION_DONE, NULL);
}


/* the tokens and money of a call, the session's and its ancestors' */
static void
rg_phase_ask_count(rg_session_t *s, rg_llm_response_t *resp)
{
    rg_session_t    *p;
    rg_agent_ctx_t  *ctx;

    ctx = rg_agent_ctx(s->engine);

    s->model_calls++;
    ctx->stats.model_calls++;
    s->prompt_tokens += resp->prompt_tokens;
    s->completion_tokens += resp->completion_tokens;
    s->cached_tokens += resp->cached_tokens;
    s->cache_write_tokens += resp->cache_write_tokens;
    s->cost += resp->cost;
    rg_tenant_charge(s, resp->prompt_tokens + resp->completion_tokens,
                     resp->cost);

    /* the task's: every session that delegated to this one counts them */
    for (p = s->parent; p; p = p->parent) {
        p->model_calls++;
        p->child_model_calls++;
        p->prompt_tokens += resp->prompt_tokens;
        p->completion_tokens += resp->completion_tokens;
        p->cached_tokens += resp->cached_tokens;
        p->cache_write_tokens += resp->cache_write_tokens;
        p->cost += resp->cost;
        p->child_tokens += resp->prompt_tokens + resp->completion_tokens;
    }

    ctx->stats.prompt_tokens += resp->prompt_tokens;
    ctx->stats.completion_tokens += resp->completion_tokens;
    ctx->stats.cached_tokens += resp->cached_tokens;
    ctx->stats.cache_write_tokens += resp->cache_write_tokens;
    ctx->stats.cost += resp->cost;
}


/* the answer, taken: the step the phase goes on with */
static rg_uint_t
rg_phase_ask_answer(rg_session_t *s, rg_llm_req_t *r,
    rg_llm_response_t *resp)
{
    rg_msg_t      *m;
    rg_session_t  *spent;

    if (s->summarizing) {
        rg_session_context_summary(s, resp);
        return RG_PHASE_ASK_AGAIN;
    }

    s->round++;

    if (resp->status != RG_LLM_OK) {
        return rg_phase_ask_failed(s, r, resp);
    }

    /* a later overflow may compact and retry again */
    s->context_retried = 0;

    /* calibrate the size estimate from what the provider counted */
    if (resp->prompt_tokens > 0 && s->body.len > 0) {
        s->bytes_per_token = (double) s->body.len / resp->prompt_tokens;
    }

    /* the answer's pool goes with the next model call: what the session
     * keeps is copied (finish_reason only when it changes) */
    if (s->finish_reason.len != resp->finish_reason.len
        || (s->finish_reason.len
            && memcmp(s->finish_reason.data, resp->finish_reason.data,
                      s->finish_reason.len) != 0))
    {
        s->finish_reason.data = rg_pstrdup(s->pool,
                                           resp->finish_reason.data
                                           ? resp->finish_reason.data : "",
                                           resp->finish_reason.len);
        s->finish_reason.len = 0;
        if (s->finish_reason.data) {
            s->finish_reason.len = rg_secret_scrub(s->finish_reason.data,
                                                   resp->finish_reason.len);
            s->finish_reason.data[s->finish_reason.len] = '\0';
        }
    }

    if (rg_msgs_append(&s->msgs, s->pool, 'a', resp->message.data,
                       resp->message.len, 1) != RG_OK)
    {
        rg_session_status(s, RG_SESSION_FAILED, "out of memory");
        return RG_PHASE_ASK_ENDED;
    }

    m = rg_msgs_last(&s->msgs);
    m->ncalls = (uint32_t) resp->ncalls;     /* at most RG_LLM_MAX_CALLS + 1 */

    /* the codec made its piece while it had the answer */
    if (resp->has_wire
        && rg_session_wire(s, m, resp->wire.data, resp->wire.len) != RG_OK)
    {
        rg_session_status(s, RG_SESSION_FAILED, "out of memory");
        return RG_PHASE_ASK_ENDED;
    }
    s->answers++;

    /* a long turn the provider paused (Anthropic's pause_turn): sent
     * back as it is, the model goes on where it stopped */
    if (resp->ncalls == 0 && rg_str_eq(&resp->finish_reason, "pause_turn")) {
        if (s->round >= s->max_rounds) {
            rg_session_status(s, RG_SESSION_MAX_ROUNDS, "stopped after %lu "
                              "rounds (max_rounds): the model paused its "
                              "turn (pause_turn) and had not finished",
                              (unsigned long) s->round);
            return RG_PHASE_ASK_ENDED;
        }

        /* the turn is in the store before the next model call */
        rg_session_set_state(s, RG_SESSION_MODEL_WAIT);
        rg_session_phase_jump(s, RG_PHASE_CHECKPOINT);
        return RG_PHASE_ASK_ANSWERED;
    }

    if (resp->ncalls == 0) {
        rg_phase_ask_final(s, resp);
        return RG_PHASE_ASK_ENDED;
    }

    if (s->round >= s->max_rounds) {
        rg_session_status(s, RG_SESSION_MAX_ROUNDS,
                          "stopped after %lu rounds (max_rounds): the model "
                          "still asked for %lu tool call%s, the first to "
                          "\"%.*s\"", (unsigned long) s->round,
                          (unsigned long) rg_session_asked(resp),
                          rg_session_asked(resp) == 1 ? "" : "s",
                          (int) rg_min(resp->calls[0].name.len, 64),
                          resp->calls[0].name.data);
        return RG_PHASE_ASK_ENDED;
    }

    spent = rg_phase_ask_spent(s);
    if (spent) {
        rg_phase_ask_budget(s, spent, "; the model still asked for tools");
        return RG_PHASE_ASK_ENDED;
    }

    /* the calls are the turn's from now on: the answer goes */
    if (rg_session_take_calls(s, resp) != RG_OK) {
        rg_session_status(s, RG_SESSION_FAILED, "out of memory");
        return RG_PHASE_ASK_ENDED;
    }

    return RG_PHASE_ASK_ANSWERED;
}


/* the model answered (the llm client's handler of s->req) */
static void
rg_phase_ask_answered(rg_llm_req_t *r, rg_llm_response_t *resp)
{
    rg_session_t  *s;

    s = r->data;

    rg_session_trace_chat_end(s, r, resp);

    rg_phase_ask_count(s, resp);

    rg_transcript_model_call(s, resp);
    rg_events_model_ended(s, resp);

    s->phase_step = (uint8_t) rg_phase_ask_answer(s, r, resp);

    rg_session_run_phases(s);    /* may destroy s: nothing after this */
}
