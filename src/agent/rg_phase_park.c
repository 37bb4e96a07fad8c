/* rg_phase_park.c: the phase park (rg_session_phase.c): a session
 * parked for an operator's decision. A session run with park set (a
 * serve task with "approval": "park") whose turn has dangerous calls
 * that nothing approves does not run that turn: the answer with its
 * calls is checkpointed (status awaiting_approval), a record of the
 * calls waiting is kept under the session (rg_phase_park.h),
 * its lease is given back, and its owner's handler sees it parked
 * (s->parked), not ended, and lets it go: nothing of it stays in memory.
 * The whole turn waits, the calls that need no approval too, so that a
 * turn's calls still run together, once.
 *
 * When the task runs again (the queue's rg_approval.c queues it once
 * every call is decided, or once approval_timeout passed), the same turn
 * comes back from the checkpoint, the record is read, and its decisions
 * for this round apply: approved calls run (side effects claimed as
 * ever, so never twice), denied ones answer the model with the
 * operator's note; a wait that timed out ends the session
 * approval_timed_out. A record still pending (a stale delivery of the
 * task) parks the session again as it was. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_phase_park.h>
#include <rg_events.h>
#include <rg_durable.h>
#include <rg_lease.h>
#include <rg_store.h>
#include <rg_store_conf.h>
#include <rg_secret.h>
#include <jansson.h>


#define RG_PHASE_PARK_ASKED    1      /* its record asked, or it parks */


static void rg_phase_park_got(void *data, const rg_store_res_t *res);
static rg_int_t rg_phase_park_ask(rg_session_t *s);
static void rg_phase_park_stored(rg_session_t *s);


/* call i would have to be asked for */
static rg_uint_t
rg_phase_park_needs(rg_session_t *s, rg_uint_t i)
{
    rg_int_t  j;

    j = s->extra[i].tool;

    if (j < 0 || s->calls[i].has_preset) {
        return 0;
    }

    return rg_tools_needs_approval(rg_tools_ctx(s->engine),
                                   &s->agent->toolset, s->parent_run,
                                   s->agent->toolset.tools[j]);
}


/* the id its tool message will answer */
static const char *
rg_phase_park_call_id(rg_session_t *s, rg_uint_t i, char *buf, size_t size)
{
    if (s->calls[i].id.len == 0) {
        snprintf(buf, size, "call_%lu", (unsigned long) i);
    } else {
        snprintf(buf, size, "%.*s", (int) rg_min(s->calls[i].id.len,
                                                 size - 1),
                 s->calls[i].id.data);
    }

    return buf;
}


static rg_str_t
rg_phase_park_key(rg_session_t *s, char *buf, size_t size)
{
    rg_str_t  id, key;

    id.data = s->id;
    id.len = strlen(s->id);

    key.data = buf;
    key.len = rg_store_session_key(buf, size, &id, "approval", 8);

    return key;
}


rg_phase_rc_e
rg_phase_park(rg_session_t *s)
{
    rg_uint_t  i, n;

    if (s->phase_step != 0) {
        return RG_PHASE_WAIT;
    }

    if (!s->park || !s->durable || s->depth || s->replay) {
        return RG_PHASE_GO;
    }

    for (n = 0, i = 0; i < s->ncalls; i++) {
        n += rg_phase_park_needs(s, i);
    }

    if (n == 0) {
        return RG_PHASE_GO;
    }

    rg_session_set_state(s, RG_SESSION_AWAITING_APPROVAL);

    if (rg_session_durable(s) != RG_OK) {
        return rg_session_status(s, RG_SESSION_FAILED, "out of memory");
    }

    s->dur->park_since = rg_monotonic_msec();
    s->phase_step = RG_PHASE_PARK_ASKED;

    if (rg_phase_park_ask(s) != RG_OK) {
        return rg_session_status(s, RG_SESSION_FAILED, "out of memory");
    }

    return RG_PHASE_WAIT;
}


/* the record asked for; RG_ERROR: out of memory */
static rg_int_t
rg_phase_park_ask(rg_session_t *s)
{
    char         buf[128];
    rg_str_t     key;
    rg_store_t  *st;

    st = rg_store_ctx(s->engine);
    key = rg_phase_park_key(s, buf, sizeof(buf));

    s->park_op = key.len ? st->get(st, &key, rg_phase_park_got, s) : NULL;

    return s->park_op ? RG_OK : RG_ERROR;
}


static void
rg_phase_park_again(evutil_socket_t fd, short what, void *arg)
{
    if (rg_phase_park_ask(arg) != RG_OK) {
        rg_session_finish(arg, RG_SESSION_FAILED, "out of memory");
    }
}


void
rg_phase_park_cancel(rg_session_t *s)
{
    rg_session_store_cancel(s, &s->park_op);

    if (s->dur && s->dur->park_ev) {
        event_free(s->dur->park_ev);
        s->dur->park_ev = NULL;
    }

    free(s->park_record);
    s->park_record = NULL;
}


/* a record of the calls that wait: the arguments as an operator sees
 * them, secrets scrubbed */
static char *
rg_phase_park_record(rg_session_t *s, rg_msec_t deadline)
{
    char        id[128], *args, *text;
    size_t      len;
    json_t     *r, *calls, *c;
    rg_uint_t   i;

    calls = json_array();
    r = calls ? json_pack("{s:s, s:s?, s:s, s:s, s:I, s:I, s:I, s:I, s:s%, "
                          "s:o, s:{}}",
                          "status", "pending", "task", s->task_id,
                          "session", s->id, "agent", s->agent->name.data,
                          "round", (json_int_t) s->round,
                          "parked", (json_int_t) rg_wall_msec(),
                          "deadline", (json_int_t) deadline,
                          "timeout", (json_int_t) s->agent->approval_timeout,
                          "line", s->park_task.data ? s->park_task.data : "",
                          s->park_task.len,
                          "calls", calls, "decisions")
              : NULL;

    if (r == NULL) {
        return NULL;
    }

    for (i = 0; i < s->ncalls; i++) {
        if (!rg_phase_park_needs(s, i)) {
            continue;
        }

        len = s->calls[i].arguments.len;
        args = rg_strdup_len(s->calls[i].arguments.data
                             ? s->calls[i].arguments.data : "", len);
        if (args == NULL) {
            json_decref(r);
            return NULL;
        }

        len = rg_secret_scrub(args, len);

        c = json_pack("{s:s, s:s%, s:s%}",
                      "id", rg_phase_park_call_id(s, i, id, sizeof(id)),
                      "name", s->calls[i].name.data ? s->calls[i].name.data
                                                    : "",
                      s->calls[i].name.len, "arguments", args, len);
        free(args);

        if (c == NULL || json_array_append_new(calls, c) != 0) {
            json_decref(r);
            return NULL;
        }
    }

    text = json_dumps(r, JSON_COMPACT);
    json_decref(r);

    return text;
}


/* the operator's answers to this round's calls: RG_OK when each call
 * that waits has one (applied), RG_DECLINED when one has none */
static rg_int_t
rg_phase_park_apply(rg_session_t *s, json_t *rec)
{
    char         id[128], buf[768], *text;
    json_t      *decisions, *d;
    rg_uint_t    i;
    const char  *note, *name;

    decisions = json_object_get(rec, "decisions");

    for (i = 0; i < s->ncalls; i++) {
        if (!rg_phase_park_needs(s, i)) {
            continue;
        }

        d = json_object_get(decisions,
                            rg_phase_park_call_id(s, i, id, sizeof(id)));
        if (!json_is_object(d)) {
            return RG_DECLINED;
        }

        name = s->agent->toolset.tools[s->extra[i].tool]->tool->name;

        if (json_is_true(json_object_get(d, "approve"))) {
            s->calls[i].approved = 1;
            rg_log_error(RG_LOG_NOTICE, &s->log, 0, "%s (call %s) approved "
                         "by an operator", name, id);
            continue;
        }

        note = json_string_value(json_object_get(d, "note"));

        snprintf(buf, sizeof(buf), "error: %s was denied by the operator%s"
                 "%.500s; do without it or ask the user", name,
                 note && note[0] ? ": " : "", note ? note : "");

        text = rg_pstrdup(s->pool, buf, strlen(buf));
        if (text == NULL) {
            return RG_ERROR;
        }

        s->calls[i].preset.data = text;
        s->calls[i].preset.len = strlen(text);
        s->calls[i].has_preset = 1;
        s->calls[i].preset_failed = 1;

        rg_log_error(RG_LOG_NOTICE, &s->log, 0, "%s (call %s) denied by an "
                     "operator", name, id);
    }

    return RG_OK;
}


/* the turn waits: its answer stored, then a new record, when there is
 * none for it yet */
static void
rg_phase_park_now(rg_session_t *s, json_t *old)
{
    rg_msec_t  deadline;

    if (old) {
        deadline = (rg_msec_t) json_integer_value(json_object_get(old,
                                                                  "deadline"));
        s->park_record = NULL;

    } else {
        deadline = rg_wall_msec() + s->agent->approval_timeout;
        s->park_record = rg_phase_park_record(s, deadline);
        if (s->park_record == NULL) {
            rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
            return;
        }
    }

    s->park_deadline = deadline;
    rg_session_set_state(s, RG_SESSION_AWAITING_APPROVAL);
    s->cp_partial = 1;

    rg_durable_checkpoint(s, rg_phase_park_stored);
}


static void
rg_phase_park_got(void *data, const rg_store_res_t *res)
{
    json_t        *rec;
    rg_int_t       rc;
    rg_msec_t      timeout;
    rg_session_t  *s;
    const char    *status;

    s = data;
    s->park_op = NULL;

    if (res->rc == RG_ERROR) {
        /* the store is away: a read is asked again, up to store_timeout */
        if (rg_monotonic_msec() - s->dur->park_since
            < rg_store_timeout(s->engine))
        {
            struct timeval  tv = { 0, 500 * 1000 };

            if (s->dur->park_ev == NULL) {
                s->dur->park_ev = evtimer_new(s->engine->base,
                                              rg_phase_park_again, s);
            }

            if (s->dur->park_ev && evtimer_add(s->dur->park_ev, &tv) == 0) {
                return;
            }
        }

        rg_session_finish(s, RG_SESSION_FAILED, "cannot read the session's "
                          "approval record within store_timeout: %s",
                          res->err);
        return;
    }

    rec = res->rc == RG_OK ? json_loadb(res->value.data, res->value.len, 0,
                                        NULL)
                           : NULL;

    /* a record of another round is an old one: this turn asks anew */
    if (rec && (rg_uint_t) json_integer_value(json_object_get(rec, "round"))
               != s->round)
    {
        json_decref(rec);
        rec = NULL;
    }

    status = rec ? json_string_value(json_object_get(rec, "status")) : NULL;

    if (status && strcmp(status, "timed_out") == 0) {
        timeout = (rg_msec_t) json_integer_value(json_object_get(rec,
                                                                 "timeout"));
        json_decref(rec);
        rg_session_finish(s, RG_SESSION_APPROVAL_TIMED_OUT, "no decision "
                          "within approval_timeout %.3gs on the dangerous "
                          "calls it waited for", (double) timeout / 1000);
        return;
    }

    if (status && strcmp(status, "cancelled") == 0) {
        const char  *why;

        why = json_string_value(json_object_get(rec, "reason"));
        rg_session_finish(s, RG_SESSION_CANCELLED, "%s",
                          why ? why : "cancelled while it waited for an "
                                      "operator's decision");
        json_decref(rec);
        return;
    }

    if (status && strcmp(status, "decided") == 0) {
        rc = rg_phase_park_apply(s, rec);
        json_decref(rec);

        if (rc == RG_ERROR) {
            rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
            return;
        }

        if (rc == RG_OK) {
            rg_session_set_state(s, RG_SESSION_TOOLS_RUNNING);
            rg_session_phase_done(s);
            return;
        }

        rec = NULL;                    /* a call without an answer */
    }

    if (status && strcmp(status, "pending") == 0) {
        rg_phase_park_now(s, rec);           /* still waiting: as it was */
        json_decref(rec);
        return;
    }

    if (rec) {
        json_decref(rec);
    }

    rg_phase_park_now(s, NULL);
}


static void
rg_phase_park_end(rg_session_t *s)
{
    char       when[32];
    rg_uint_t  i, n;
    time_t     t;
    struct tm  tm;

    for (n = 0, i = 0; i < s->ncalls; i++) {
        n += rg_phase_park_needs(s, i);
    }

    rg_session_drop_args(s);

    if (s->deadline_set) {
        event_del(s->deadline_ev);
        s->deadline_set = 0;
    }

    rg_buf_free(&s->body);

    t = (time_t) (s->park_deadline / 1000);
    if (gmtime_r(&t, &tm) == NULL
        || strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    {
        snprintf(when, sizeof(when), "?");
    }

    rg_log_error(RG_LOG_NOTICE, &s->log, 0, "parked in round %lu: %lu "
                 "dangerous call%s await%s an operator's decision (until "
                 "%s)", (unsigned long) s->round, (unsigned long) n,
                 n == 1 ? "" : "s", n == 1 ? "s" : "", when);

    s->parked = 1;
    s->ended = rg_monotonic_msec();

    rg_lease_release(s);
    rg_session_handler(s);       /* may destroy s */
}


static void
rg_phase_park_put_done(void *data, const rg_store_res_t *res)
{
    rg_session_t  *s;

    s = data;
    s->park_op = NULL;

    if (res->rc == RG_OK) {
        rg_phase_park_end(s);
        return;
    }

    if (res->rc == RG_DECLINED && res->err
        && strncmp(res->err, "fenced", 6) == 0)
    {
        rg_session_drop(s, res->err);
        return;
    }

    rg_session_finish(s, RG_SESSION_FAILED, "the approval record could not "
                      "be stored: %s", res->err ? res->err : "refused");
}


/* The session's "approval_needed" event: the calls it waits for and
 * its deadline (the record's, secrets already scrubbed) */
static void
rg_phase_park_event(rg_session_t *s, const char *record)
{
    json_t  *rec;

    if (!rg_session_events_on(s)) {
        return;
    }

    rec = json_loads(record, 0, NULL);

    rg_session_event(s, "approval_needed",
                     json_pack("{s:O?, s:O?, s:O?}",
                               "calls", json_object_get(rec, "calls"),
                               "deadline", json_object_get(rec, "deadline"),
                               "round", json_object_get(rec, "round")));
    json_decref(rec);
}


/* the answer is stored: the record next, when there is a new one */
static void
rg_phase_park_stored(rg_session_t *s)
{
    rg_store_t      *st;
    rg_store_put_t   p;

    if (s->park_record == NULL) {
        rg_phase_park_end(s);
        return;
    }

    st = rg_store_ctx(s->engine);

    memset(&p, 0, sizeof(p));
    p.id.data = s->id;
    p.id.len = strlen(s->id);
    p.name.data = (char *) "approval";
    p.name.len = 8;
    p.value.data = s->park_record;
    p.value.len = strlen(s->park_record);
    p.lease = s->lease;
    p.ttl = rg_store_session_ttl(s->engine);

    s->park_op = st->put(st, &p, rg_phase_park_put_done, s);

    if (s->park_op) {
        rg_phase_park_event(s, s->park_record);
    }

    free(s->park_record);
    s->park_record = NULL;

    if (s->park_op == NULL) {
        rg_session_finish(s, RG_SESSION_FAILED, "out of memory");
    }
}
