/* rg_turn.c: one turn of a session around its tool calls. Before the
 * tools run: each call's tool looked up in the agent's toolset, its cap
 * counted (a tool at its cap is refused, and no longer offered), its
 * arguments checked, and made canonical (its signature) when a guard
 * compares them (repeats, dedupe), repeats within the window answered
 * from the earlier result with a nudge, and too many of them ending the
 * session; the dedupe cache asked (a session's own
 * calls, or the store), the calls past max_tool_calls_per_turn refused.
 * After they ran: each result trimmed to tool_result_limit, cached,
 * remembered for repeats, and appended as the tool message that answers
 * its call, in the order of the calls; then the next model call. The
 * calls themselves are the tools layer's (rg_tools.c). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session.h>
#include <rg_turn.h>
#include <rg_recover.h>
#include <rg_digest.h>
#include <rg_durable.h>
#include <rg_park.h>
#include <rg_dedupe.h>
#include <rg_codec.h>
#include <rg_agent.h>
#include <rg_transcript.h>
#include <rg_session_trace.h>
#include <rg_events.h>
#include <rg_replay.h>
#include <rg_module.h>
#include <rg_tools_conf.h>
#include <rg_store_conf.h>
#include <rg_tool_args.h>
#include <rg_secret.h>
#include <jansson.h>


static void rg_turn_run(rg_session_t *s);
static void rg_turn_call_start(rg_tool_turn_t *turn, rg_tool_run_t *run);
static void rg_turn_call_done(rg_tool_turn_t *turn, rg_tool_run_t *run);
static void rg_turn_done(rg_tool_turn_t *turn);
static void rg_turn_approval_handler(rg_tool_turn_t *turn);


/* a call's arguments, checked and coerced; NULL with c's preset error
 * when they are unusable */
static json_t *
rg_turn_args(rg_session_t *s, rg_tool_request_t *c, rg_tool_entry_t *te)
{
    char    err[768];
    json_t  *args;

    args = rg_tools_args(te, c->arguments.data, c->arguments.len, err,
                         sizeof(err));
    if (args == NULL) {
        c->preset.data = rg_pstrdup(s->pool, err, strlen(err));
        c->preset.len = strlen(err);
        c->has_preset = c->preset.data != NULL;
        c->preset_failed = 1;
    }

    return args;
}


/* a call's signature: its name and its arguments, checked and coerced,
 * in canonical JSON; NULL with c's preset error when they are unusable */
static char *
rg_turn_signature(rg_session_t *s, rg_tool_request_t *c,
    rg_tool_entry_t *te, size_t *len)
{
    char      *canon, *sig;
    size_t     clen;
    json_t    *args;

    args = rg_turn_args(s, c, te);
    if (args == NULL) {
        return NULL;
    }

    canon = rg_tool_args_canonical(args, &clen);

    if (canon == NULL) {
        json_decref(args);
        return NULL;
    }

    *len = c->name.len + 1 + clen;
    sig = rg_palloc(s->pool, *len + 1);

    if (sig) {
        memcpy(sig, c->name.data, c->name.len);
        sig[c->name.len] = '\0';
        memcpy(sig + c->name.len + 1, canon, clen);
        sig[*len] = '\0';

        /* the tools layer takes the checked arguments as they are, and
         * the canonical text is what the module reads */
        c->args = args;
        c->args_text.data = sig + c->name.len + 1;
        c->args_text.len = clen;

    } else {
        json_decref(args);
    }

    free(canon);

    return sig;
}


static rg_session_sig_t *
rg_turn_seen(rg_session_t *s, const char *sig, size_t len,
    rg_uint_t window)
{
    rg_uint_t  i;

    for (i = s->nsigs; i-- > 0; ) {
        if (s->sigs[i].round + window < s->round) {
            break;                     /* older than the window */
        }

        if (s->sigs[i].len == len && memcmp(s->sigs[i].sig, sig, len) == 0) {
            return &s->sigs[i];
        }
    }

    return NULL;
}


static rg_int_t
rg_turn_preset(rg_session_t *s, rg_tool_request_t *c, rg_uint_t failed,
    const char *fmt, ...)
{
    int      n;
    char    *p;
    va_list  args;

    va_start(args, fmt);
    n = vasprintf(&p, fmt, args);
    va_end(args);

    if (n < 0) {
        return RG_ERROR;
    }

    c->preset.data = rg_pstrdup(s->pool, p, n);
    c->preset.len = n;
    c->has_preset = 1;
    c->preset_failed = failed;
    free(p);

    return c->preset.data ? RG_OK : RG_ERROR;
}


void
rg_turn_cancel_lookups(rg_session_t *s)
{
    rg_uint_t    i;
    rg_store_t  *st;

    st = rg_store_ctx(s->engine);

    rg_dedupe_cancel(s);
    rg_park_cancel(s);

    for (i = 0; s->claims && s->extra && i < s->ncalls; i++) {
        if (s->extra[i].claim) {
            st->cancel(st, s->extra[i].claim);
            s->extra[i].claim = NULL;
            s->claims--;
        }
    }

    s->claims = 0;

    if (s->claim_set) {
        event_del(s->claim_ev);
        s->claim_set = 0;
    }
}


static rg_uint_t
rg_turn_dedupable(rg_session_t *s, rg_int_t tool)
{
    return tool >= 0 && s->agent->dedupe != RG_DEDUPE_OFF
           && (s->agent->toolset.tools[tool]->tool->flags
               & RG_TOOL_READ_ONLY);
}


/* the calls the answer asked for, those past the cap included */
rg_uint_t
rg_turn_asked(rg_llm_response_t *resp)
{
    return resp->calls_over ? resp->ncalls - 1 + resp->calls_over
                            : resp->ncalls;
}


/* Past max_tool_calls_per_turn the calls do not run: the last call kept
 * stands for them all and its tool message says so. The other ones were
 * left out of the assistant message, so every id in it is answered. */
static rg_int_t
rg_turn_over_cap(rg_session_t *s, rg_llm_response_t *resp)
{
    rg_uint_t           max;
    rg_tool_request_t  *c;

    max = resp->ncalls - 1;
    c = &s->calls[max];

    rg_log_error(RG_LOG_WARN, &s->log, 0, "the model asked for %lu tool "
                 "calls in one answer: %lu run, the other %lu are refused "
                 "(max_tool_calls_per_turn)",
                 (unsigned long) rg_turn_asked(resp), (unsigned long) max,
                 (unsigned long) resp->calls_over);

    return rg_turn_preset(s, c, 1, "error: not run. The answer asked for "
                          "%lu tool calls and at most %lu run per answer "
                          "(max_tool_calls_per_turn): the first %lu ran; "
                          "this call and the %lu after it did not. Ask "
                          "for those again, at most %lu at a time.",
                          (unsigned long) rg_turn_asked(resp),
                          (unsigned long) max, (unsigned long) max,
                          (unsigned long) (resp->calls_over - 1),
                          (unsigned long) max);
}


/* A call's key among its session's calls, "<round>:<id>": the provider's
 * ids are unique within an answer (the parser sees to it) but not always
 * across rounds (some send call_0 every time), and a side effect's claim
 * and idempotency key must not be an earlier round's. Empty without
 * memory (the id serves then). */
static rg_str_t
rg_turn_call_key(rg_session_t *s, rg_pool_t *pool, const rg_str_t *id)
{
    char      *p;
    rg_str_t   key;

    key.len = 0;
    key.data = rg_palloc(pool, RG_INT64_LEN + 1 + id->len + 1);

    if (key.data != NULL) {
        p = key.data + rg_sprint_int(key.data, (int64_t) s->round);
        *p++ = ':';
        if (id->len) {
            p = rg_cpymem(p, id->data, id->len);
        }
        *p = '\0';
        key.len = (size_t) (p - key.data);
    }

    return key;
}


/* guards and caches in front of a turn */
void
rg_turn_prepare(rg_session_t *s, rg_llm_response_t *resp)
{
    char               *sig, *key, *p;
    size_t              slen, klen;
    rg_int_t            j, cap;
    rg_uint_t           i, k, rebuild;
    rg_pool_t          *pool;
    rg_agent_conf_t    *a;
    rg_tool_request_t  *c;
    rg_session_sig_t   *seen;

    a = s->agent;
    rebuild = 0;

    /* the turn's scratch lives as long as the answer (the round pool) */
    pool = rg_session_round_pool(s);
    if (pool == NULL) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    s->calls = rg_pcalloc(pool, resp->ncalls * sizeof(rg_tool_request_t));
    s->extra = rg_pcalloc(pool, resp->ncalls * sizeof(rg_session_call_t));
    if (s->calls == NULL || s->extra == NULL) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    s->ncalls = resp->ncalls;

    for (i = 0; i < resp->ncalls; i++) {
        c = &s->calls[i];
        c->id = resp->calls[i].id;
        c->key = rg_turn_call_key(s, pool, &c->id);
        c->name = resp->calls[i].name;
        c->arguments = resp->calls[i].arguments;

        s->extra[i].tool = -1;
        s->extra[i].twin = -1;

        if (resp->calls_over && i == resp->ncalls - 1) {
            if (rg_turn_over_cap(s, resp) != RG_OK) {
                rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
                return;
            }
            continue;
        }

        j = rg_toolset_find(&a->toolset, c->name.data, c->name.len);
        s->extra[i].tool = j;
        if (j < 0) {
            continue;                  /* the tools layer explains */
        }

        /* per-tool cap */
        cap = a->tool_caps[j];
        if (cap && s->tool_counts[j] >= (rg_uint_t) cap) {
            rg_turn_preset(s, c, 1, "error: %s has reached its limit of "
                           "%ld calls in this task and is no longer "
                           "available; answer with what you have",
                           a->toolset.tools[j]->tool->name, (long) cap);
            continue;
        }

        s->tool_counts[j]++;

        if (cap && s->tool_counts[j] == (rg_uint_t) cap) {
            s->extra[i].capped = 1;
            rebuild = 1;
        }

        /* no guard compares this tool's calls: checked once, not made
         * canonical (the tools layer writes them compact, as they came) */
        if (a->repeat_window == 0 && !rg_turn_dedupable(s, j)) {
            c->args = rg_turn_args(s, c, a->toolset.tools[j]);
            continue;
        }

        /* repeated calls */
        sig = rg_turn_signature(s, c, a->toolset.tools[j], &slen);
        if (sig == NULL) {
            continue;
        }

        s->extra[i].sig = sig;
        s->extra[i].sig_len = slen;

        seen = rg_turn_seen(s, sig, slen, (rg_uint_t) a->repeat_window);
        if (seen) {
            s->repeats++;
            rg_agent_ctx(s->engine)->stats.repeats++;

            if (s->repeats > (rg_uint_t) a->repeat_limit) {
                rg_session_finish(s, RG_SESSION_LOOP_DETECTED, "the model "
                                  "repeated identical tool calls %lu times "
                                  "(the last: %s with %.200s)",
                                  (unsigned long) s->repeats,
                                  a->toolset.tools[j]->tool->name,
                                  sig + c->name.len + 1);
                return;
            }

            rg_turn_preset(s, c, 0, "%.*s\n(you already called %s with "
                           "these arguments in round %lu; answer from "
                           "this result or change approach)",
                           (int) seen->result.len, seen->result.data,
                           a->toolset.tools[j]->tool->name,
                           (unsigned long) seen->round);

            /* the window slides: the next repeat counts from this one */
            seen->round = s->round;
            s->extra[i].sig = NULL;
            continue;
        }

        /* the dedupe cache, for idempotent tools: a session's own calls
         * are its cache; wider scopes live in the store */
        if (rg_turn_dedupable(s, j) && a->dedupe == RG_DEDUPE_SESSION) {
            seen = rg_turn_seen(s, sig, slen, (rg_uint_t) -1 / 2);
            if (seen) {
                c->preset = seen->result;
                c->has_preset = 1;
                s->extra[i].sig = NULL;
                s->dedupe_hits++;
                rg_agent_ctx(s->engine)->stats.dedupe_hits++;
                rg_metrics_dedupe_hit();
                continue;
            }
        }

        if (rg_turn_dedupable(s, j) && a->dedupe == RG_DEDUPE_SESSION) {
            /* identical calls of one turn, in flight only and never
             * stored: the call itself is the key, no digest needed (a
             * newline for the NUL: canonical JSON has neither raw) */
            klen = sizeof("dd:s::") + strlen(s->id) + slen;
            key = rg_palloc(pool, klen);
            if (key == NULL) {
                continue;
            }

            /* "dd:s:" id ":" name "\n" arguments */
            p = rg_cpymem(key, "dd:s:", 5);
            p = rg_cpymem(p, s->id, strlen(s->id));
            *p++ = ':';
            p = rg_cpymem(p, sig, c->name.len);
            *p++ = '\n';
            p = rg_cpymem(p, sig + c->name.len + 1, slen - c->name.len - 1);
            *p = '\0';
            k = (rg_uint_t) (p - key);
            s->extra[i].local = 1;

            s->extra[i].key = key;
            s->extra[i].klen = k;

        } else if (rg_turn_dedupable(s, j)) {
            char  digest[RG_SHA256_HEX];

            /* the call's digest: its name, a NUL, its arguments in
             * canonical JSON; the same in every process */
            if (rg_sha256_hex(digest, sig, slen, NULL, 0) != RG_OK) {
                continue;
            }

            klen = 112 + a->name.len;
            key = rg_palloc(pool, klen);
            if (key == NULL) {
                continue;
            }

            /* "dd:a:" agent ":" digest, or "dd:g:" digest */
            if (a->dedupe == RG_DEDUPE_AGENT) {
                p = rg_cpymem(key, "dd:a:", 5);
                p = rg_cpymem(p, a->name.data, a->name.len);
                *p++ = ':';
            } else {
                p = rg_cpymem(key, "dd:g:", 5);
            }
            p = rg_cpymem(p, digest, RG_SHA256_HEX - 1);
            *p = '\0';
            k = (rg_uint_t) (p - key);

            s->extra[i].key = key;
            s->extra[i].klen = k;
        }
    }

    if (rebuild && rg_session_build_prefix(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    rg_session_set_state(s, RG_SESSION_TOOLS_RUNNING);
    s->lookups = 0;

    for (i = 0; i < s->ncalls; i++) {
        s->extra[i].session = s;
    }

    for (i = 0; i < s->ncalls; i++) {
        if (s->extra[i].key) {
            rg_dedupe_ask(s, i);
        }
    }

    if (s->lookups == 0) {
        rg_turn_go(s);
    }
}


/* checked arguments that no turn took over */
void
rg_turn_drop_args(rg_session_t *s)
{
    rg_uint_t  i;

    for (i = 0; s->calls && i < s->ncalls; i++) {
        if (s->calls[i].args) {
            json_decref(s->calls[i].args);
            s->calls[i].args = NULL;
        }
    }
}


static void
rg_turn_approval_handler(rg_tool_turn_t *turn)
{
    rg_session_t  *s;

    s = turn->data;

    if (!rg_session_final(s)) {
        rg_session_set_state(s, turn->awaiting
                                ? RG_SESSION_AWAITING_APPROVAL
                                : RG_SESSION_TOOLS_RUNNING);
    }
}


static void
rg_turn_run(rg_session_t *s)
{
    s->turn = rg_tools_turn_create(rg_tools_ctx(s->engine),
                                   &s->agent->toolset, s->id, s->calls,
                                   s->ncalls, rg_turn_done, s,
                                   &s->log);
    rg_turn_drop_args(s);

    if (s->turn == NULL) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    s->turn->approval = rg_turn_approval_handler;
    s->turn->call_done = rg_turn_call_done;
    s->turn->call_start = rg_turn_call_start;
    s->turn->parent = s->parent_run;   /* its approval caps this one's */
    rg_session_set_state(s, RG_SESSION_TOOLS_RUNNING);

    rg_session_trace_tools(s, s->turn);

    rg_tools_turn_start(s->turn);

    if (s->turn && s->turn->awaiting) {
        rg_session_set_state(s, RG_SESSION_AWAITING_APPROVAL);
    }
}


static void
rg_turn_remember(rg_session_t *s, rg_uint_t i, const char *text,
    size_t len)
{
    rg_session_sig_t  *sigs;

    if (s->extra[i].sig == NULL) {
        return;
    }

    if (s->nsigs == s->sigs_cap) {
        s->sigs_cap = s->sigs_cap ? s->sigs_cap * 2 : 8;
        sigs = rg_palloc(s->pool, s->sigs_cap * sizeof(rg_session_sig_t));
        if (sigs == NULL) {
            return;
        }
        if (s->nsigs) {
            memcpy(sigs, s->sigs, s->nsigs * sizeof(rg_session_sig_t));
        }
        s->sigs = sigs;
    }

    /* kept, and stored, without secrets: the call has its own copy of
     * the arguments by now; a repeat that quotes a key is not noticed */
    s->sigs[s->nsigs].sig = s->extra[i].sig;
    s->sigs[s->nsigs].len = rg_secret_scrub(s->extra[i].sig,
                                            s->extra[i].sig_len);
    s->extra[i].sig[s->sigs[s->nsigs].len] = '\0';
    s->sigs[s->nsigs].round = s->round;
    s->sigs[s->nsigs].result.data = rg_pstrdup(s->pool, text, len);
    s->sigs[s->nsigs].result.len = len;
    s->sigs[s->nsigs].stored_round = 0;

    if (s->sigs[s->nsigs].result.data) {
        s->nsigs++;
    }
}


static void
rg_turn_done(rg_tool_turn_t *turn)
{
    size_t          limit;
    rg_uint_t       i;
    rg_buf_t        b;
    rg_session_t   *s;
    rg_tool_run_t  *run;
    const char     *text;
    size_t          len;
    char            id[64];

    s = turn->data;

    rg_transcript_turn(s, turn);

    limit = rg_tools_conf(s->engine->cycle)->tool_result_limit;

    /* replayed: each result must be the recorded one */
    if (s->replay && rg_replay_turn(s, turn, limit) != RG_OK) {
        return;                    /* s ended, and may be gone */
    }
    memset(&b, 0, sizeof(b));

    for (i = 0; i < turn->n; i++) {
        /* a twin has the result of the same call earlier in the turn */
        run = turn->runs[s->extra[i].twin >= 0 ? (rg_uint_t) s->extra[i].twin
                                               : i];

        text = run->result ? run->result : "";
        len = run->result ? run->result_len : 0;

        rg_buf_reset(&b);

        if (len > limit) {
            rg_tool_trim(text, len, limit, &b);
            text = b.data ? b.data : "";
            len = b.data ? b.len : 0;
        }

        /* what is kept is what the model saw, trimmed */
        if (s->extra[i].key && !s->calls[i].has_preset) {
            rg_dedupe_result(s, i, text, len, run->failed);
        }

        rg_turn_remember(s, i, text, len);

        if (s->extra[i].capped) {
            if (text != b.data) {
                rg_buf_append(&b, text, len);
            }
            rg_buf_printf(&b, "\n(note: that was the last %s call allowed "
                          "in this task; it is no longer available)",
                          s->agent->toolset.tools[s->extra[i].tool]
                          ->tool->name);
            text = b.data;
            len = b.len;
        }

        if (s->calls[i].id.len == 0) {
            snprintf(id, sizeof(id), "call_%lu", (unsigned long) i);
        }

        if (rg_session_append_msg(s, 't', s->calls[i].id.len
                                          ? s->calls[i].id.data : id,
                                  text ? text : "", len, run->failed)
            != RG_OK)
        {
            rg_buf_free(&b);
            rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
            return;
        }

        s->tool_calls++;
        rg_agent_ctx(s->engine)->stats.tool_calls++;

        if (run->failed) {
            s->tool_errors++;
            rg_agent_ctx(s->engine)->stats.tool_errors++;
        }
    }

    rg_buf_free(&b);

    rg_tools_turn_destroy(turn);
    s->turn = NULL;

    /* the turn is in the store before the next model call */
    rg_session_continue(s);
}


/* side effects at most once -------------------------------------------
 *
 * With a durable store, a call of a tool flagged RG_TOOL_SIDE_EFFECT runs
 * only after the store holds the answer that asked for it and a claim of
 * it ("{ID}:idem:<tool_call_id>", set only if absent); its result
 * replaces the claim as soon as it ends. A session resumed after a crash
 * runs its last turn again: a call whose result is stored is answered
 * from it, and one that was claimed without a result is not run blindly:
 * the model is told its outcome is unknown. Claims and results live as
 * long as the session (RG_STORE_KEEP: each checkpoint renews their TTL
 * with its own), so that a session resumed twice, long after a claim,
 * still finds it. A claim the store does not take (it is away) is asked
 * again with backoff, as a checkpoint is, up to store_timeout; only then
 * is the model told the call did not run. A claim asked again that
 * finds its own record there went in the first time (its answer was
 * lost): the call is ours to run. */

#define RG_TURN_CLAIM_BACKOFF      200    /* ms, the first retry */
#define RG_TURN_CLAIM_BACKOFF_MAX  5000

static void rg_turn_claims_done(rg_session_t *s);

static rg_uint_t
rg_turn_side_effect(rg_session_t *s, rg_uint_t i)
{
    rg_int_t  j;

    j = s->extra[i].tool;

    return s->durable && j >= 0 && !s->calls[i].has_preset
           && (s->agent->toolset.tools[j]->tool->flags & RG_TOOL_SIDE_EFFECT);
}


static rg_str_t
rg_turn_idem_name(rg_session_t *s, rg_uint_t i)
{
    rg_str_t   name;
    size_t     len;

    len = 5 + s->calls[i].key.len;
    name.data = rg_palloc(s->pool, len + 1);
    name.len = name.data ? len : 0;

    if (name.data) {
        memcpy(name.data, "idem:", 5);
        memcpy(name.data + 5, s->calls[i].key.data, s->calls[i].key.len);
        name.data[len] = '\0';
    }

    return name;
}


/* call i, a side effect that may have run before a restart, is not run:
 * the model is told its outcome is unknown, and why is logged */
static void
rg_turn_unknown(rg_session_t *s, rg_uint_t i, const char *why)
{
    rg_str_t     name;
    const char  *tool;

    tool = s->agent->toolset.tools[s->extra[i].tool]->tool->name;
    name = rg_turn_idem_name(s, i);

    rg_turn_preset(s, &s->calls[i], 1, "outcome unknown: %s may or may not "
                   "have completed before a restart (idempotency key "
                   "%s:%.*s); check its effect before calling it again",
                   tool, s->id, (int) s->calls[i].key.len,
                   s->calls[i].key.data);
    rg_log_error(RG_LOG_WARN, &s->log, 0, "%s (call %.*s) %s: its outcome "
                 "is unknown (%.*s), so it is not run again", tool,
                 (int) s->calls[i].id.len, s->calls[i].id.data, why,
                 (int) name.len, name.data);
}


static void
rg_turn_claimed(void *data, const rg_store_res_t *res)
{
    int64_t              failed;
    rg_uint_t            i;
    rg_str_t             r;
    rg_session_t        *s;
    rg_session_call_t   *x;
    rg_codec_reader_t    rd;
    const char          *tool;

    x = data;
    s = x->session;
    i = x - s->extra;
    x->claim = NULL;
    tool = s->agent->toolset.tools[x->tool]->tool->name;

    if (res->rc == RG_OK) {
        x->claimed = 1;

    } else if (res->rc == RG_DECLINED && res->err
               && strncmp(res->err, "exists", 6) == 0
               && res->value.len == s->claim_rec.len
               && memcmp(res->value.data, s->claim_rec.data,
                         s->claim_rec.len) == 0)
    {
        /* ours, asked again: the first one went in, its answer was lost */
        x->claimed = 1;

    } else if (res->rc == RG_DECLINED && res->err
               && strncmp(res->err, "lost", 4) == 0)
    {
        /* the store forgot the session: asked again once it is written
         * back under a new lease */
        x->claim_failed = 1;
        s->claim_err = rg_pstrdup(rg_session_round_pool(s), res->err,
                                  strlen(res->err));
        rg_recover_session(s);

    } else if (res->rc == RG_DECLINED && res->err
               && strncmp(res->err, "fenced", 6) == 0)
    {
        /* another worker runs this session now */
        s->fenced = 1;
        rg_session_finish(s, RG_SESSION_CANCELLED, "dropped by this "
                          "worker: %s", res->err);
        return;

    } else if (res->rc == RG_DECLINED) {
        /* claimed before: by this session in a process that died */
        if (rg_codec_read(&rd, res->value.data, res->value.len) == RG_OK
            && rg_codec_get_str(&rd, "r", &r) == RG_OK)
        {
            failed = 0;
            rg_codec_get_int(&rd, "f", &failed);
            rg_turn_preset(s, &s->calls[i], failed != 0, "%.*s",
                           (int) r.len, r.data);
            rg_log_error(RG_LOG_NOTICE, &s->log, 0, "%s (call %.*s) ran "
                         "before a restart: answered from its stored "
                         "result", tool, (int) s->calls[i].id.len,
                         s->calls[i].id.data);

        } else {
            rg_turn_unknown(s, i, "was claimed before a restart and has no "
                            "result");
        }

        rg_codec_done(&rd);

    } else {
        /* the store is away: asked again, as a checkpoint is */
        x->claim_failed = 1;

        if (res->err) {
            s->claim_err = rg_pstrdup(rg_session_round_pool(s), res->err,
                                      strlen(res->err));
        }
    }

    if (--s->claims == 0) {
        rg_turn_claims_done(s);
    }
}


/* the claim of call i, sent; RG_ERROR without memory (the call is then
 * answered so) */
static rg_int_t
rg_turn_claim_send(rg_session_t *s, rg_uint_t i)
{
    rg_store_t      *st;
    rg_store_put_t   p;

    st = rg_store_ctx(s->engine);

    memset(&p, 0, sizeof(p));
    p.id.data = s->id;
    p.id.len = strlen(s->id);
    p.name = rg_turn_idem_name(s, i);
    p.value = s->claim_rec;
    p.lease = s->lease;
    p.ttl = rg_store_session_ttl(s->engine);
    p.flags = RG_STORE_NX | RG_STORE_KEEP;

    s->extra[i].claim = p.name.data ? st->put(st, &p, rg_turn_claimed,
                                              &s->extra[i])
                                    : NULL;
    if (s->extra[i].claim == NULL) {
        rg_turn_preset(s, &s->calls[i], 1, "error: did not run: out of "
                       "memory");
        return RG_ERROR;
    }

    s->claims++;

    return RG_OK;
}


static void
rg_turn_claims_retry(evutil_socket_t fd, short what, void *arg)
{
    rg_uint_t      i;
    rg_session_t  *s;

    s = arg;
    s->claim_set = 0;

    for (i = 0; i < s->ncalls; i++) {
        if (s->extra[i].claim_failed) {
            s->extra[i].claim_failed = 0;
            rg_turn_claim_send(s, i);
        }
    }

    if (s->claims == 0) {
        rg_turn_claims_done(s);
    }
}


/* every claim answered: the calls run, or those the store did not take
 * are asked again, up to store_timeout */
static void
rg_turn_claims_done(rg_session_t *s)
{
    rg_uint_t        i, failed;
    rg_msec_t        now, timeout, wait;
    struct timeval   tv;
    const char      *tool;

    failed = 0;

    for (i = 0; i < s->ncalls; i++) {
        failed += s->extra[i].claim_failed;
    }

    if (failed == 0) {
        s->claim_failing = 0;
        rg_turn_run(s);
        return;
    }

    now = rg_monotonic_msec();
    timeout = rg_store_timeout(s->engine);

    if (s->claim_failing == 0) {
        s->claim_failing = now;
        s->claim_tries = 0;
        rg_log_error(RG_LOG_INFO, &s->log, 0, "side-effect claim not "
                     "written (%s); waiting for the store",
                     s->claim_err ? s->claim_err : "no answer");
    }

    if (s->claim_ev == NULL) {
        s->claim_ev = rg_palloc(s->pool, sizeof(struct event));
        if (s->claim_ev) {
            evtimer_assign(s->claim_ev, s->engine->base, rg_turn_claims_retry,
                           s);
        }
    }

    wait = RG_TURN_CLAIM_BACKOFF;
    while (wait < RG_TURN_CLAIM_BACKOFF_MAX
           && wait < ((rg_msec_t) 1 << rg_min(s->claim_tries, 20))
                     * RG_TURN_CLAIM_BACKOFF)
    {
        wait *= 2;
    }
    wait = rg_min(wait, RG_TURN_CLAIM_BACKOFF_MAX);
    s->claim_tries++;

    if (now - s->claim_failing < timeout && s->claim_ev) {
        wait = rg_min(wait, timeout - (now - s->claim_failing));
        tv.tv_sec = wait / 1000;
        tv.tv_usec = (wait % 1000) * 1000;

        if (evtimer_add(s->claim_ev, &tv) == 0) {
            s->claim_set = 1;
            return;
        }
    }

    /* no claim, no run: at most once beats at least once */
    for (i = 0; i < s->ncalls; i++) {
        if (!s->extra[i].claim_failed) {
            continue;
        }

        s->extra[i].claim_failed = 0;
        tool = s->agent->toolset.tools[s->extra[i].tool]->tool->name;
        rg_turn_preset(s, &s->calls[i], 1, "error: %s did not run: its "
                       "call could not be recorded first (the store, for "
                       "%.3gs: %s); try again later", tool,
                       (double) (now - s->claim_failing) / 1000,
                       s->claim_err ? s->claim_err : "no answer");
    }

    s->claim_failing = 0;
    rg_turn_run(s);
}


/* the answer is in the store: claim its side effects */
static void
rg_turn_claim(rg_session_t *s)
{
    char             *rec;
    size_t            len;
    rg_uint_t         i, n;
    rg_codec_writer_t w;

    rg_session_set_state(s, RG_SESSION_TOOLS_RUNNING);

    rg_codec_begin(&w, 4);
    rg_codec_str(&w, "k", "c", 1);
    rg_codec_str(&w, "w", rg_agent_ctx(s->engine)->worker,
                 strlen(rg_agent_ctx(s->engine)->worker));
    rg_codec_int(&w, "t", (int64_t) rg_wall_msec());
    rg_codec_int(&w, "l", s->lease);
    rec = rg_codec_end(&w, &len);

    /* kept for the claims asked again, which know theirs by it */
    s->claim_rec.data = rec ? rg_pstrdup(rg_session_round_pool(s), rec, len)
                            : NULL;
    s->claim_rec.len = len;
    free(rec);

    if (s->claim_rec.data == NULL) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    n = 0;
    s->claims = 0;
    s->claim_err = NULL;
    s->claim_failing = 0;

    for (i = 0; i < s->ncalls; i++) {
        if (!rg_turn_side_effect(s, i)) {
            continue;
        }

        if (s->after_loss) {
            /* its claim, if an earlier run made it, went with the store */
            rg_turn_unknown(s, i, "may have run before Redis lost this "
                            "task (it was queued again after the loss)");
            continue;
        }

        if (rg_turn_claim_send(s, i) == RG_OK) {
            n++;
        }
    }

    if (n == 0) {
        rg_turn_run(s);
    }
}


/* the calls are ready: those that need an operator may park the turn */
void
rg_turn_go(rg_session_t *s)
{
    if (rg_park_check(s) == RG_OK) {
        rg_turn_tools(s);
    }
}


/* the calls run: side effects first reach the store */
void
rg_turn_tools(rg_session_t *s)
{
    rg_uint_t  i;

    for (i = 0; i < s->ncalls; i++) {
        if (rg_turn_side_effect(s, i)) {
            /* the answer that asks for them is stored before any runs */
            s->cp_partial = 1;
            rg_durable_checkpoint(s, rg_turn_claim);
            return;
        }
    }

    rg_turn_run(s);
}


static void
rg_turn_call_start(rg_tool_turn_t *turn, rg_tool_run_t *run)
{
    rg_events_tool_started(turn->data, run);
}


/* the result of call i, in place of its claim (fire and forget: if it
 * is lost, a resume says "outcome unknown", which is true) */
static void
rg_turn_put_result(rg_session_t *s, rg_uint_t i, rg_tool_run_t *run)
{
    char              *rec;
    size_t             len, limit;
    rg_buf_t           b;
    rg_store_t        *st;
    rg_store_put_t     p;
    rg_codec_writer_t  w;
    const char        *text;

    st = rg_store_ctx(s->engine);

    /* what the model is shown, trimmed the same way */
    memset(&b, 0, sizeof(b));
    text = run->result ? run->result : "";
    len = run->result ? run->result_len : 0;
    limit = rg_tools_conf(s->engine->cycle)->tool_result_limit;

    if (len > limit && rg_tool_trim(text, len, limit, &b) == RG_OK) {
        text = b.data;
        len = b.len;
    }

    rg_codec_begin(&w, 4);
    rg_codec_str(&w, "k", "r", 1);
    rg_codec_str(&w, "r", text, len);
    rg_codec_int(&w, "f", run->failed);
    rg_codec_int(&w, "t", (int64_t) rg_wall_msec());
    rec = rg_codec_end(&w, &len);
    rg_buf_free(&b);

    if (rec == NULL) {
        return;
    }

    memset(&p, 0, sizeof(p));
    p.id.data = s->id;
    p.id.len = strlen(s->id);
    p.name = rg_turn_idem_name(s, i);
    p.value.data = rec;
    p.value.len = len;
    p.lease = s->lease;
    p.ttl = rg_store_session_ttl(s->engine);
    p.flags = RG_STORE_KEEP;

    st->put(st, &p, NULL, NULL);
    free(rec);
}


/* a claimed call answered: its result replaces the claim at once */
static void
rg_turn_call_done(rg_tool_turn_t *turn, rg_tool_run_t *run)
{
    rg_uint_t      i;
    rg_session_t  *s;

    s = turn->data;
    i = run->index;

    rg_session_trace_tool_end(s, run);
    rg_events_tool_ended(s, run);

    if (i >= s->ncalls || !s->extra[i].claimed) {
        return;
    }

    rg_turn_put_result(s, i, run);
    s->extra[i].claimed = 0;
}


/* The store forgot the session while this turn's side effects run or
 * ran: under the new lease, each running one's claim is put again and
 * each ended one's result, so that a resume after a crash from here on
 * runs none of them twice. */
void
rg_turn_reclaim(rg_session_t *s)
{
    rg_uint_t        i;
    rg_store_t      *st;
    rg_store_put_t   p;
    rg_tool_run_t   *run;

    if (s->state != RG_SESSION_TOOLS_RUNNING || s->claim_rec.data == NULL
        || s->extra == NULL)
    {
        return;
    }

    st = rg_store_ctx(s->engine);

    for (i = 0; i < s->ncalls; i++) {
        if (!rg_turn_side_effect(s, i)) {
            continue;
        }

        run = s->turn && i < s->turn->n ? s->turn->runs[i] : NULL;

        if (s->extra[i].claimed) {
            memset(&p, 0, sizeof(p));
            p.id.data = s->id;
            p.id.len = strlen(s->id);
            p.name = rg_turn_idem_name(s, i);
            p.value = s->claim_rec;
            p.lease = s->lease;
            p.ttl = rg_store_session_ttl(s->engine);
            p.flags = RG_STORE_NX | RG_STORE_KEEP;

            if (p.name.data) {
                st->put(st, &p, NULL, NULL);
            }

        } else if (run && run->result) {
            rg_turn_put_result(s, i, run);
        }
    }
}
