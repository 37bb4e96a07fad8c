/* rg_phase_claim.c: the phase claim (rg_session_phase.c): side effects
 * at most once (rg_claim.c). When a durable session's turn has calls of
 * tools flagged RG_TOOL_SIDE_EFFECT, the answer that asks for them is
 * stored first (a partial checkpoint: only what the answer changed, so
 * that running the turn again after a resume counts nothing twice),
 * then each such call is claimed in the store, set only if absent. A
 * claim that was there already is a resumed session's: the call is
 * answered from the result the crashed run stored, or told its outcome
 * is unknown; it does not run again. A claim the store does not take (it
 * is away) is asked again with backoff, as a checkpoint is, up to
 * store_timeout; only then is the model told the call did not run. A
 * claim asked again that finds its own record there went in the first
 * time (its answer was lost): the call is ours to run. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_phase_claim.h>
#include <rg_claim.h>
#include <rg_durable.h>
#include <rg_codec.h>
#include <rg_store_conf.h>


#define RG_PHASE_CLAIM_BACKOFF      200    /* ms, the first retry */
#define RG_PHASE_CLAIM_BACKOFF_MAX  5000

/* the phase's steps (s->phase_step) */
#define RG_PHASE_CLAIM_STORING   1    /* the answer is checkpointed */
#define RG_PHASE_CLAIM_STORED    2
#define RG_PHASE_CLAIM_ASKED     3    /* the claims are asked */


static void rg_phase_claim_done(rg_session_t *s);


/* call i, a side effect that may have run before a restart, is not run:
 * the model is told its outcome is unknown, and why is logged */
static void
rg_phase_claim_unknown(rg_session_t *s, rg_uint_t i, const char *why)
{
    rg_str_t     name;
    const char  *tool;

    tool = s->agent->toolset.tools[s->extra[i].tool]->tool->name;
    name = rg_claim_name(s, i);

    rg_session_preset(s, &s->calls[i], 1, "outcome unknown: %s may or may "
                      "not have completed before a restart (idempotency "
                      "key %s:%.*s); check its effect before calling it "
                      "again", tool, s->id, (int) s->calls[i].key.len,
                      s->calls[i].key.data);
    rg_log_error(RG_LOG_WARN, &s->log, 0, "%s (call %.*s) %s: its outcome "
                 "is unknown (%.*s), so it is not run again", tool,
                 (int) s->calls[i].id.len, s->calls[i].id.data, why,
                 (int) name.len, name.data);
}


static void
rg_phase_claim_answered(void *data, const rg_store_res_t *res)
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
        rg_session_lost(s);

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
            rg_session_preset(s, &s->calls[i], failed != 0, "%.*s",
                              (int) r.len, r.data);
            rg_log_error(RG_LOG_NOTICE, &s->log, 0, "%s (call %.*s) ran "
                         "before a restart: answered from its stored "
                         "result", tool, (int) s->calls[i].id.len,
                         s->calls[i].id.data);

        } else {
            rg_phase_claim_unknown(s, i, "was claimed before a restart and "
                                   "has no result");
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
        rg_phase_claim_done(s);
    }
}


/* the claim of call i, sent; RG_ERROR without memory (the call is then
 * answered so) */
static rg_int_t
rg_phase_claim_send(rg_session_t *s, rg_uint_t i)
{
    s->extra[i].claim = rg_claim_put(s, i, rg_phase_claim_answered,
                                     &s->extra[i]);
    if (s->extra[i].claim == NULL) {
        rg_session_preset(s, &s->calls[i], 1, "error: did not run: out of "
                          "memory");
        return RG_ERROR;
    }

    s->claims++;

    return RG_OK;
}


static void
rg_phase_claim_retry(evutil_socket_t fd, short what, void *arg)
{
    rg_uint_t      i;
    rg_session_t  *s;

    s = arg;
    s->claim_set = 0;

    for (i = 0; i < s->ncalls; i++) {
        if (s->extra[i].claim_failed) {
            s->extra[i].claim_failed = 0;
            rg_phase_claim_send(s, i);
        }
    }

    if (s->claims == 0) {
        rg_phase_claim_done(s);
    }
}


/* every claim answered: the calls run, or those the store did not take
 * are asked again, up to store_timeout */
static void
rg_phase_claim_done(rg_session_t *s)
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
        rg_session_phase_done(s);
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
            evtimer_assign(s->claim_ev, s->engine->base,
                           rg_phase_claim_retry, s);
        }
    }

    wait = RG_PHASE_CLAIM_BACKOFF;
    while (wait < RG_PHASE_CLAIM_BACKOFF_MAX
           && wait < ((rg_msec_t) 1 << rg_min(s->claim_tries, 20))
                     * RG_PHASE_CLAIM_BACKOFF)
    {
        wait *= 2;
    }
    wait = rg_min(wait, RG_PHASE_CLAIM_BACKOFF_MAX);
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
        rg_session_preset(s, &s->calls[i], 1, "error: %s did not run: its "
                          "call could not be recorded first (the store, for "
                          "%.3gs: %s); try again later", tool,
                          (double) (now - s->claim_failing) / 1000,
                          s->claim_err ? s->claim_err : "no answer");
    }

    s->claim_failing = 0;
    rg_session_phase_done(s);
}


/* the answer is in the store: its side effects claimed; RG_PHASE_GO
 * when none was sent */
static rg_phase_rc_e
rg_phase_claim_ask(rg_session_t *s)
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
        return rg_session_status(s, RG_SESSION_FAILED, "out of memory");
    }

    n = 0;
    s->claims = 0;
    s->claim_err = NULL;
    s->claim_failing = 0;
    s->phase_step = RG_PHASE_CLAIM_ASKED;

    for (i = 0; i < s->ncalls; i++) {
        if (!rg_claim_needed(s, i)) {
            continue;
        }

        if (s->after_loss) {
            /* its claim, if an earlier run made it, went with the store */
            rg_phase_claim_unknown(s, i, "may have run before Redis lost "
                                   "this task (it was queued again after "
                                   "the loss)");
            continue;
        }

        if (rg_phase_claim_send(s, i) == RG_OK) {
            n++;
        }
    }

    return n == 0 ? RG_PHASE_GO : RG_PHASE_WAIT;
}


static void
rg_phase_claim_stored(rg_session_t *s)
{
    s->phase_step = RG_PHASE_CLAIM_STORED;
    rg_session_run_phases(s);
}


rg_phase_rc_e
rg_phase_claim(rg_session_t *s)
{
    rg_uint_t  i;

    switch (s->phase_step) {

    case 0:
        for (i = 0; i < s->ncalls; i++) {
            if (rg_claim_needed(s, i)) {
                /* the answer that asks for them is stored before any
                 * runs */
                s->phase_step = RG_PHASE_CLAIM_STORING;
                s->cp_partial = 1;
                rg_durable_checkpoint(s, rg_phase_claim_stored);
                return RG_PHASE_WAIT;
            }
        }

        return RG_PHASE_GO;

    case RG_PHASE_CLAIM_STORED:
        return rg_phase_claim_ask(s);

    default:
        return RG_PHASE_WAIT;
    }
}


void
rg_phase_claim_cancel(rg_session_t *s)
{
    rg_uint_t    i;
    rg_store_t  *st;

    st = rg_store_ctx(s->engine);

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
