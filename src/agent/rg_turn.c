/* rg_turn.c: one turn of a session around its tool calls. Before the
 * tools run: each call's tool looked up in the agent's toolset, its cap
 * counted (a tool at its cap is refused, and no longer offered), its
 * arguments checked and made canonical (its signature), repeats within
 * the window answered from the earlier result with a nudge, and too many
 * of them ending the session; the dedupe cache asked (a session's own
 * calls, or the store), the calls past max_tool_calls_per_turn refused.
 * After they ran: each result trimmed to tool_result_limit, cached,
 * remembered for repeats, and appended as the tool message that answers
 * its call, in the order of the calls; then the next model call. The
 * calls themselves are the tools layer's (rg_tools.c). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session.h>
#include <rg_turn.h>
#include <rg_transcript.h>
#include <rg_replay.h>
#include <rg_module.h>
#include <rg_tools_conf.h>
#include <rg_store_conf.h>
#include <rg_tool_args.h>
#include <jansson.h>


static void rg_turn_run(rg_session_t *s);
static void rg_turn_done(rg_tool_turn_t *turn);
static void rg_turn_approval_handler(rg_tool_turn_t *turn);


/* a call's signature: its name and its arguments, checked and coerced,
 * in canonical JSON; NULL with c's preset error when they are unusable */
static char *
rg_turn_signature(rg_session_t *s, rg_tool_request_t *c,
    rg_tool_entry_t *te, size_t *len)
{
    char      *canon, *sig, err[768];
    size_t     clen;
    json_t    *args;

    args = rg_tools_args(te, c->arguments.data, c->arguments.len, err,
                         sizeof(err));
    if (args == NULL) {
        c->preset.data = rg_pstrdup(s->pool, err, strlen(err));
        c->preset.len = strlen(err);
        c->has_preset = c->preset.data != NULL;
        c->preset_failed = 1;
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


/* a dedupe lookup answered: each carries its own call */
static void
rg_turn_lookup_handler(void *data, const rg_store_res_t *res)
{
    rg_uint_t           i;
    rg_session_t       *s;
    rg_session_call_t  *x;

    x = data;
    s = x->session;
    i = x - s->extra;
    x->lookup = NULL;

    if (res->rc == RG_OK) {
        s->calls[i].preset.data = rg_pstrdup(s->pool, res->value.data,
                                             res->value.len);
        s->calls[i].preset.len = res->value.len;
        s->calls[i].has_preset = s->calls[i].preset.data != NULL;
        x->key = NULL;                  /* a hit is not stored again */
        s->dedupe_hits++;
        rg_agent_ctx(s->engine)->stats.dedupe_hits++;
    }

    /* a miss or a store error: the tool runs */

    if (--s->lookups == 0) {
        rg_turn_run(s);
    }
}


void
rg_turn_cancel_lookups(rg_session_t *s)
{
    rg_uint_t    i;
    rg_store_t  *st;

    st = rg_store_ctx(s->engine);

    for (i = 0; s->lookups && s->extra && i < s->ncalls; i++) {
        if (s->extra[i].lookup) {
            st->cancel(st, s->extra[i].lookup);
            s->extra[i].lookup = NULL;
            s->lookups--;
        }
    }

    s->lookups = 0;
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


/* guards and caches in front of a turn */
void
rg_turn_prepare(rg_session_t *s, rg_llm_response_t *resp)
{
    char               *sig, *key;
    size_t              slen, klen;
    rg_int_t            j, cap;
    rg_uint_t           i, k, rebuild;
    rg_store_t         *st;
    rg_agent_conf_t    *a;
    rg_tool_request_t  *c;
    rg_session_sig_t   *seen;

    a = s->agent;
    st = rg_store_ctx(s->engine);
    rebuild = 0;

    s->calls = rg_pcalloc(s->pool, resp->ncalls * sizeof(rg_tool_request_t));
    s->extra = rg_pcalloc(s->pool, resp->ncalls * sizeof(rg_session_call_t));
    if (s->calls == NULL || s->extra == NULL) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    s->ncalls = resp->ncalls;

    for (i = 0; i < resp->ncalls; i++) {
        c = &s->calls[i];
        c->id = resp->calls[i].id;
        c->name = resp->calls[i].name;
        c->arguments = resp->calls[i].arguments;

        s->extra[i].tool = -1;

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
            }
            continue;
        }

        if (rg_turn_dedupable(s, j)) {
            klen = slen + 64 + a->name.len;
            key = rg_palloc(s->pool, klen);
            if (key == NULL) {
                continue;
            }

            /* the signature holds a NUL between name and arguments */
            k = snprintf(key, klen, "dd:%s:%s:",
                         a->dedupe == RG_DEDUPE_AGENT ? "a" : "g",
                         a->dedupe == RG_DEDUPE_AGENT ? a->name.data : "");
            memcpy(key + k, sig, slen);
            key[k + c->name.len] = ':';
            key[k + slen] = '\0';

            s->extra[i].key = key;
            s->extra[i].klen = k + slen;
        }
    }

    if (rebuild && rg_session_build_prefix(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
        return;
    }

    s->state = RG_SESSION_TOOLS_RUNNING;
    s->lookups = 0;

    for (i = 0; i < s->ncalls; i++) {
        s->extra[i].session = s;
    }

    for (i = 0; i < s->ncalls; i++) {
        if (s->extra[i].key && !s->calls[i].has_preset) {
            rg_str_t  dk = { s->extra[i].klen, s->extra[i].key };

            s->extra[i].lookup = st->get(st, &dk, rg_turn_lookup_handler,
                                         &s->extra[i]);
            if (s->extra[i].lookup) {
                s->lookups++;
            } else {
                s->extra[i].key = NULL;
            }
        }
    }

    if (s->lookups == 0) {
        rg_turn_run(s);
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
        s->state = turn->awaiting ? RG_SESSION_AWAITING_APPROVAL
                                  : RG_SESSION_TOOLS_RUNNING;
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
    s->turn->parent = s->parent_run;   /* its approval caps this one's */
    s->state = RG_SESSION_TOOLS_RUNNING;

    rg_tools_turn_start(s->turn);

    if (s->turn && s->turn->awaiting) {
        s->state = RG_SESSION_AWAITING_APPROVAL;
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

    s->sigs[s->nsigs].sig = s->extra[i].sig;
    s->sigs[s->nsigs].len = s->extra[i].sig_len;
    s->sigs[s->nsigs].round = s->round;
    s->sigs[s->nsigs].result.data = rg_pstrdup(s->pool, text, len);
    s->sigs[s->nsigs].result.len = len;

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
    rg_store_t     *st;
    rg_session_t   *s;
    rg_tool_run_t  *run;
    const char     *text;
    size_t          len;
    char            id[64];

    s = turn->data;
    st = rg_store_ctx(s->engine);

    rg_transcript_turn(s, turn);

    limit = rg_tools_conf(s->engine->cycle)->tool_result_limit;

    /* replayed: each result must be the recorded one */
    if (s->replay && rg_replay_turn(s, turn, limit) != RG_OK) {
        return;                    /* s ended, and may be gone */
    }
    memset(&b, 0, sizeof(b));

    for (i = 0; i < turn->n; i++) {
        run = turn->runs[i];

        text = run->result ? run->result : "";
        len = run->result ? run->result_len : 0;

        rg_buf_reset(&b);

        if (len > limit) {
            rg_tool_trim(text, len, limit, &b);
            text = b.data ? b.data : "";
            len = b.data ? b.len : 0;
        }

        /* what is kept is what the model saw, trimmed: a fresh,
         * successful result of an idempotent tool is cached */
        if (s->extra[i].key && !s->calls[i].has_preset && !run->failed) {
            rg_str_t  k = { s->extra[i].klen, s->extra[i].key };
            rg_str_t  v = { len, (char *) text };

            st->set(st, &k, &v, s->agent->dedupe_ttl, 0, NULL, NULL);
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

        if (rg_session_append_text(s, 't', s->calls[i].id.len
                                           ? s->calls[i].id.data : id,
                                   text ? text : "", len) != RG_OK)
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

    if (rg_session_ask(s) != RG_OK) {
        rg_session_finish(s, RG_SESSION_FAILED,
                          "could not start the model call (out of memory)");
    }
}
