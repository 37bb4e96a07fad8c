/* rg_phase_lookup.c: the phase lookup (rg_session_phase.c): the guards
 * and caches in front of a turn's calls. Each call's tool is looked up
 * in the agent's toolset, its cap counted (a tool at its cap is refused,
 * and no longer offered), its arguments checked, and made canonical (its
 * signature) when a guard compares them (repeats, dedupe); a repeat
 * within the window is answered from the earlier result with a nudge,
 * and too many of them end the session (loop_detected); the calls past
 * max_tool_calls_per_turn are refused. Then the dedupe cache is asked
 * (the session's own calls, or the store: rg_dedupe.c), and the phase
 * waits until every lookup is answered. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_phase_lookup.h>
#include <rg_dedupe.h>
#include <rg_digest.h>
#include <rg_tool_args.h>
#include <jansson.h>


/* a call's arguments, checked and coerced; NULL with c's preset error
 * when they are unusable */
static json_t *
rg_phase_lookup_args(rg_session_t *s, rg_tool_request_t *c, rg_tool_entry_t *te)
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
rg_phase_lookup_signature(rg_session_t *s, rg_tool_request_t *c,
    rg_tool_entry_t *te, size_t *len)
{
    char      *canon, *sig;
    size_t     clen;
    json_t    *args;

    args = rg_phase_lookup_args(s, c, te);
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
rg_phase_lookup_seen(rg_session_t *s, const char *sig, size_t len,
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


static rg_uint_t
rg_phase_lookup_dedupable(rg_session_t *s, rg_int_t tool)
{
    return tool >= 0 && s->agent->dedupe != RG_DEDUPE_OFF
           && (s->agent->toolset.tools[tool]->tool->flags
               & RG_TOOL_READ_ONLY);
}


/* Past max_tool_calls_per_turn the calls do not run: the last call kept
 * stands for them all and its tool message says so. The other ones were
 * left out of the assistant message, so every id in it is answered. */
static rg_int_t
rg_phase_lookup_over_cap(rg_session_t *s)
{
    rg_uint_t           max, asked;
    rg_tool_request_t  *c;

    max = s->ncalls - 1;
    c = &s->calls[max];
    asked = max + s->calls_over;

    rg_log_error(RG_LOG_WARN, &s->log, 0, "the model asked for %lu tool "
                 "calls in one answer: %lu run, the other %lu are refused "
                 "(max_tool_calls_per_turn)",
                 (unsigned long) asked, (unsigned long) max,
                 (unsigned long) s->calls_over);

    return rg_session_preset(s, c, 1, "error: not run. The answer asked for "
                             "%lu tool calls and at most %lu run per answer "
                             "(max_tool_calls_per_turn): the first %lu ran; "
                             "this call and the %lu after it did not. Ask "
                             "for those again, at most %lu at a time.",
                             (unsigned long) asked,
                             (unsigned long) max, (unsigned long) max,
                             (unsigned long) (s->calls_over - 1),
                             (unsigned long) max);
}


/* the guards and caches in front of the turn's calls (s->calls, taken
 * from the answer): the lookups asked, or the session ended */
static rg_phase_rc_e
rg_phase_lookup_guard(rg_session_t *s)
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
    pool = s->round_pool;

    for (i = 0; i < s->ncalls; i++) {
        c = &s->calls[i];

        if (s->calls_over && i == s->ncalls - 1) {
            if (rg_phase_lookup_over_cap(s) != RG_OK) {
                return rg_session_status(s, RG_SESSION_FAILED,
                                         "out of memory");
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
            rg_session_preset(s, c, 1, "error: %s has reached its limit "
                              "of %ld calls in this task and is no longer "
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
        if (a->repeat_window == 0 && !rg_phase_lookup_dedupable(s, j)) {
            c->args = rg_phase_lookup_args(s, c, a->toolset.tools[j]);
            continue;
        }

        /* repeated calls */
        sig = rg_phase_lookup_signature(s, c, a->toolset.tools[j], &slen);
        if (sig == NULL) {
            continue;
        }

        s->extra[i].sig = sig;
        s->extra[i].sig_len = slen;

        seen = rg_phase_lookup_seen(s, sig, slen, (rg_uint_t) a->repeat_window);
        if (seen) {
            s->repeats++;
            rg_agent_ctx(s->engine)->stats.repeats++;

            if (s->repeats > (rg_uint_t) a->repeat_limit) {
                return rg_session_status(s, RG_SESSION_LOOP_DETECTED,
                                         "the model repeated identical tool "
                                         "calls %lu times (the last: %s "
                                         "with %.200s)",
                                         (unsigned long) s->repeats,
                                         a->toolset.tools[j]->tool->name,
                                         sig + c->name.len + 1);
            }

            rg_session_preset(s, c, 0, "%.*s\n(you already called %s with "
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
        if (rg_phase_lookup_dedupable(s, j) && a->dedupe == RG_DEDUPE_SESSION) {
            seen = rg_phase_lookup_seen(s, sig, slen, (rg_uint_t) -1 / 2);
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

        if (rg_phase_lookup_dedupable(s, j) && a->dedupe == RG_DEDUPE_SESSION) {
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

        } else if (rg_phase_lookup_dedupable(s, j)) {
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
        return rg_session_status(s, RG_SESSION_FAILED, "out of memory");
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

    return RG_PHASE_WAIT;
}


rg_phase_rc_e
rg_phase_lookup(rg_session_t *s)
{
    rg_phase_rc_e  rc;

    if (s->phase_step == 0) {
        /* the lookups' answers wake the driver (rg_dedupe.c) */
        s->phase_step = 1;

        rc = rg_phase_lookup_guard(s);
        if (rc != RG_PHASE_WAIT) {
            return rc;
        }
    }

    return s->lookups == 0 ? RG_PHASE_GO : RG_PHASE_WAIT;
}
