/* rg_dedupe.c: the dedupe cache of read-only tool calls. A call with a
 * key (its name and canonical arguments, SHA-256: "dd:a:<agent>:…" or
 * "dd:g:…") is answered from the store when an earlier identical call's
 * result is there, from every process sharing it. Identical calls in
 * flight at the same time run once:
 *
 *   - in this worker, a table of keys in flight: the first call is its
 *     owner, the later ones wait for its result (a later one in the
 *     owner's own turn takes the owner's result as its own: a twin);
 *   - across workers, with a durable store, the owner first sets a short
 *     pending claim ("<key>:p", absent only, expiring after dedupe_wait);
 *     whoever finds it taken polls the key for the result, takes the
 *     claim over when it goes, and runs the call itself after dedupe_wait.
 *
 * A failed call is not cached, but the calls that waited for it share
 * its error; when the owner's session ends before its call answered,
 * the next waiter becomes the owner and runs it. A session's own scope
 * (dedupe session) uses the table only.
 *
 * A result is kept as a msgpack record (rg_codec), {k: "d", r: the
 * result as the model saw it, t: when}, as the store's other values
 * are; a value that is no record at all is a result an older reagent
 * kept as raw text (a UTF-8 text never parses as a msgpack map), and is
 * read as such until its dedupe_ttl ends. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_dedupe.h>
#include <rg_store_conf.h>
#include <rg_codec.h>
#include <glib.h>


/* in the engine's table of keys in flight (rg_agent.c made it), by its
 * key; one block with its key, which the table frees */
struct rg_dedupe_flight_s {
    char               *key;          /* after it */
    rg_session_call_t  *owner;
    rg_session_call_t  *waiters;
    rg_session_call_t **last;
};


static void rg_dedupe_get_handler(void *data, const rg_store_res_t *res);
static void rg_dedupe_claim_handler(void *data, const rg_store_res_t *res);
static void rg_dedupe_run(rg_session_call_t *x);


#define rg_dedupe_index(x)  ((rg_uint_t) ((x) - (x)->session->extra))

/* a turn of at most so many calls finds its own twins by comparing keys;
 * a larger one (a hostile answer may hold thousands) through the table */
#define RG_DEDUPE_SCAN      16
#define rg_dedupe_store(x)  rg_store_ctx((x)->session->engine)


/* e's table of keys in flight, or NULL (the engine has none) */
static GHashTable *
rg_dedupe_table(rg_engine_t *e)
{
    return rg_agent_ctx(e)->flights;
}


/* the call waits no more: the turn goes on when nothing else waits */
static void
rg_dedupe_done(rg_session_call_t *x)
{
    rg_session_t  *s;

    s = x->session;

    if (x->wait_ev) {
        event_free(x->wait_ev);
        x->wait_ev = NULL;
    }

    if (!x->waiting) {
        return;
    }

    x->waiting = 0;
    x->resolved = 0;

    /* the turn goes on when nothing else waits (rg_phase_lookup.c) */
    if (--s->lookups == 0) {
        rg_session_run_phases(s);
    }
}


static void
rg_dedupe_wake_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_dedupe_done(arg);
}


/* answered from another session's call: later, from the reactor, so
 * that the owner's turn is not re-entered by this one's */
static void
rg_dedupe_wake(rg_session_call_t *x)
{
    struct timeval  tv = { 0, 0 };

    x->resolved = 1;

    if (x->wait_ev) {
        event_free(x->wait_ev);
    }

    x->wait_ev = evtimer_new(x->session->engine->base,
                             rg_dedupe_wake_handler, x);
    if (x->wait_ev == NULL || evtimer_add(x->wait_ev, &tv) != 0) {
        rg_dedupe_done(x);             /* no timer: now, then */
    }
}


static void
rg_dedupe_hit(rg_session_call_t *x, const char *text, size_t len,
    rg_uint_t failed)
{
    rg_session_t       *s;
    rg_tool_request_t  *c;

    s = x->session;
    c = &s->calls[rg_dedupe_index(x)];

    c->preset.data = rg_pstrdup(s->pool, text, len);
    c->preset.len = len;
    c->has_preset = c->preset.data != NULL;
    c->preset_failed = failed;

    if (c->has_preset) {
        x->key = NULL;                 /* a hit is not stored again */
        s->dedupe_hits++;
        rg_agent_ctx(s->engine)->stats.dedupe_hits++;
        rg_metrics_dedupe_hit();
    }
}


/* the flight ends: its key leaves the table */
static void
rg_dedupe_land(rg_dedupe_flight_t *f)
{
    rg_session_call_t  *x;
    GHashTable         *t;

    x = f->owner;
    t = rg_dedupe_table(x->session->engine);

    x->flight = NULL;
    g_hash_table_remove(t, f->key);
}


/* answered: every waiter gets the same answer, an error too (it is not
 * cached: a later call runs again) */
static void
rg_dedupe_answer(rg_dedupe_flight_t *f, const char *text, size_t len,
    rg_uint_t failed)
{
    rg_session_call_t  *w, *next;

    for (w = f->waiters; w; w = next) {
        next = w->wnext;
        w->wnext = NULL;
        w->flight = NULL;
        rg_dedupe_hit(w, text, len, failed);
        rg_dedupe_wake(w);
    }

    f->waiters = NULL;
    f->last = &f->waiters;

    rg_dedupe_land(f);
}


/* the owner goes: the first waiter takes the flight over and runs */
static void
rg_dedupe_hand_over(rg_dedupe_flight_t *f)
{
    rg_session_call_t  *w;

    f->owner->flight = NULL;
    w = f->waiters;

    if (w == NULL) {
        g_hash_table_remove(rg_dedupe_table(f->owner->session->engine),
                            f->key);
        return;
    }

    f->waiters = w->wnext;
    if (f->waiters == NULL) {
        f->last = &f->waiters;
    }

    w->wnext = NULL;
    f->owner = w;

    rg_dedupe_run(w);
}


/* w takes its owner's result as its own: it is not run */
static void
rg_dedupe_twin_mark(rg_session_call_t *x, rg_session_call_t *w)
{
    rg_session_t       *s;
    rg_tool_request_t  *c;

    s = x->session;
    c = &s->calls[rg_dedupe_index(w)];

    w->flight = NULL;
    w->wnext = NULL;
    w->twin = (rg_int_t) rg_dedupe_index(x);
    w->key = NULL;

    c->preset.data = "";
    c->preset.len = 0;
    c->has_preset = 1;

    s->dedupe_hits++;
    rg_agent_ctx(s->engine)->stats.dedupe_hits++;
    rg_metrics_dedupe_hit();
}


/* the same, for a call that waits: its turn goes on from the reactor */
static void
rg_dedupe_twin(rg_session_call_t *x, rg_session_call_t *w)
{
    rg_dedupe_twin_mark(x, w);
    rg_dedupe_wake(w);
}


/* whether s's turn waits for anything but x and its twins */
static rg_uint_t
rg_dedupe_blocked(rg_session_t *s, rg_session_call_t *x)
{
    rg_uint_t  i;

    for (i = 0; i < s->ncalls; i++) {
        if (&s->extra[i] != x && s->extra[i].waiting
            && !s->extra[i].resolved)
        {
            return 1;
        }
    }

    return 0;
}


/* The owner x will run the call. Waiters of its own turn become its
 * twins (the turn cannot start while they wait). If its turn still
 * waits for other calls, possibly in flight in the turns of sessions
 * that wait for x, waiting for x could close a circle: the flight passes
 * to its next waiter, and x runs on its own. */
static void
rg_dedupe_run(rg_session_call_t *x)
{
    rg_session_t        *s;
    rg_session_call_t  **pw, *w;
    rg_dedupe_flight_t  *f;

    s = x->session;
    f = x->flight;
    x->running = 1;

    for (pw = &f->waiters; *pw; ) {
        w = *pw;

        if (w->session == s) {
            *pw = w->wnext;
            rg_dedupe_twin(x, w);
        } else {
            pw = &w->wnext;
        }
    }

    f->last = &f->waiters;
    for (w = f->waiters; w; w = w->wnext) {
        f->last = &w->wnext;
    }

    if (f->waiters && rg_dedupe_blocked(s, x)) {
        rg_dedupe_hand_over(f);        /* x leaves the flight */
    }

    if (x->waiting) {
        rg_dedupe_wake(x);
    }
}


static void
rg_dedupe_poll(rg_session_call_t *x)
{
    rg_str_t     k;
    rg_store_t  *st;

    st = rg_dedupe_store(x);
    k.data = x->key;
    k.len = x->klen;

    x->pending = 0;
    x->claim = st->get(st, &k, rg_dedupe_get_handler, x);
    if (x->claim == NULL) {
        rg_dedupe_run(x);
    }
}


static void
rg_dedupe_poll_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_dedupe_poll(arg);
}


/* another worker runs the same call: ask again a little later */
static void
rg_dedupe_wait(rg_session_call_t *x)
{
    rg_msec_t       now;
    struct timeval  tv;

    now = rg_monotonic_msec();

    if (now >= x->wait_until) {
        rg_log_error(RG_LOG_NOTICE, &x->session->log, 0, "an identical call "
                     "another worker started has no result after "
                     "dedupe_wait: this one runs (%s)", x->key);
        rg_dedupe_run(x);
        return;
    }

    x->wait_step = x->wait_step ? x->wait_step * 2 : 25;
    if (x->wait_step > 500) {
        x->wait_step = 500;
    }
    if (x->wait_step > x->wait_until - now) {
        x->wait_step = x->wait_until - now;
    }

    if (x->wait_ev == NULL) {
        x->wait_ev = evtimer_new(x->session->engine->base,
                                 rg_dedupe_poll_handler, x);
    }

    tv.tv_sec = x->wait_step / 1000;
    tv.tv_usec = (x->wait_step % 1000) * 1000;

    if (x->wait_ev == NULL || evtimer_add(x->wait_ev, &tv) != 0) {
        rg_dedupe_run(x);
    }
}


/* absent from the store: with other workers on it, claim the call */
static void
rg_dedupe_claim(rg_session_call_t *x)
{
    char         buf[320];
    rg_str_t     k, v;
    rg_store_t  *st;

    st = rg_dedupe_store(x);

    if (!st->durable || x->session->agent->dedupe_wait == 0
        || x->klen + 3 > sizeof(buf))
    {
        rg_dedupe_run(x);
        return;
    }

    k.len = snprintf(buf, sizeof(buf), "%.*s:p", (int) x->klen, x->key);
    k.data = buf;
    v.data = rg_agent_ctx(x->session->engine)->worker;
    v.len = strlen(v.data);

    if (x->wait_until == 0) {
        x->wait_until = rg_monotonic_msec() + x->session->agent->dedupe_wait;
    }

    x->claim = st->set(st, &k, &v, x->session->agent->dedupe_wait,
                       RG_STORE_NX, rg_dedupe_claim_handler, x);
    if (x->claim == NULL) {
        rg_dedupe_run(x);
    }
}


static void
rg_dedupe_claim_handler(void *data, const rg_store_res_t *res)
{
    rg_session_call_t  *x;

    x = data;
    x->claim = NULL;

    if (res->rc == RG_OK) {
        if (x->wait_step) {
            rg_log_error(RG_LOG_NOTICE, &x->session->log, 0, "an identical "
                         "call another worker started ended with no result "
                         "within dedupe_wait: this one runs (%s)", x->key);
        }
        x->pending = 1;
        rg_dedupe_run(x);

    } else if (res->rc == RG_DECLINED) {
        rg_dedupe_wait(x);             /* it is another's to run */

    } else {
        rg_dedupe_run(x);              /* the store's trouble: we run */
    }
}


static void
rg_dedupe_get_handler(void *data, const rg_store_res_t *res)
{
    rg_int_t            rc;
    rg_str_t            r;
    rg_session_call_t  *x;
    rg_codec_reader_t   rd;

    x = data;
    x->claim = NULL;

    if (res->rc == RG_OK) {
        rc = RG_OK;

        if (rg_codec_read(&rd, res->value.data, res->value.len) != RG_OK) {
            r = res->value;            /* raw text: an older reagent's */

        } else {
            rc = rg_codec_get_str(&rd, "r", &r);
        }

        if (rc == RG_OK) {
            rg_dedupe_hit(x, r.data, r.len, 0);
            rg_dedupe_answer(x->flight, r.data, r.len, 0);
        }

        rg_codec_done(&rd);

        if (rc == RG_OK) {
            rg_dedupe_done(x);
            return;
        }

        /* a record, but no result: as if there were none */
    }

    if (res->rc != RG_ERROR) {
        rg_dedupe_claim(x);
        return;
    }

    rg_dedupe_run(x);                  /* a store error: the tool runs */
}


void
rg_dedupe_ask(rg_session_t *s, rg_uint_t i)
{
    char                *key;
    rg_str_t             k;
    rg_uint_t            j;
    rg_store_t          *st;
    GHashTable          *t;
    rg_session_call_t   *x, *w;
    rg_dedupe_flight_t  *f;

    x = &s->extra[i];
    t = rg_dedupe_table(s->engine);

    if (s->calls[i].has_preset || t == NULL) {
        x->key = NULL;
        return;
    }

    if (x->local && s->ncalls <= RG_DEDUPE_SCAN) {
        /* the session's own key: its twin can only be an earlier call of
         * this turn, which runs (a twin's key is NULL). No flight, no
         * table and nothing to wait for: nothing of another session ever
         * waits for such a call, and the turn starts when this returns */
        for (j = 0; j < i; j++) {
            w = &s->extra[j];

            if (w->local && w->key && w->klen == x->klen
                && memcmp(w->key, x->key, x->klen) == 0)
            {
                rg_dedupe_twin_mark(w, x);
                return;
            }
        }

        x->running = 1;
        return;
    }

    x->waiting = 1;
    s->lookups++;

    f = g_hash_table_lookup(t, x->key);
    if (f) {
        /* an identical call is in flight: wait for it */
        x->flight = f;
        *f->last = x;
        f->last = &x->wnext;

        if (f->owner->session == s && f->owner->running) {
            f->last = &f->waiters;     /* x was the last one added */
            for (w = f->waiters; w != x; w = w->wnext) {
                f->last = &w->wnext;
            }
            *f->last = NULL;
            rg_dedupe_twin(f->owner, x);
        }

        return;
    }

    f = calloc(1, sizeof(rg_dedupe_flight_t) + x->klen + 1);
    if (f == NULL) {
        x->key = NULL;                 /* no memory: it just runs */
        rg_dedupe_wake(x);
        return;
    }

    key = (char *) (f + 1);
    memcpy(key, x->key, x->klen + 1);
    f->key = key;
    f->owner = x;
    f->last = &f->waiters;
    x->flight = f;
    g_hash_table_insert(t, key, f);

    if (x->local) {
        rg_dedupe_run(x);
        return;
    }

    st = rg_store_ctx(s->engine);
    k.data = x->key;
    k.len = x->klen;

    x->claim = st->get(st, &k, rg_dedupe_get_handler, x);
    if (x->claim == NULL) {
        rg_dedupe_run(x);
    }
}


void
rg_dedupe_result(rg_session_t *s, rg_uint_t i, const char *text,
    size_t len, rg_uint_t failed)
{
    char                 buf[320];
    rg_str_t             k, v;
    rg_store_t          *st;
    rg_session_call_t   *x;
    rg_codec_writer_t    w;
    rg_dedupe_flight_t  *f;

    x = &s->extra[i];
    st = rg_store_ctx(s->engine);

    /* what is kept is what the model saw: a fresh, successful result */
    if (x->key && !x->local && !failed) {
        rg_codec_begin(&w, 3);
        rg_codec_str(&w, "k", "d", 1);
        rg_codec_str(&w, "r", text ? text : "", text ? len : 0);
        rg_codec_int(&w, "t", (int64_t) rg_wall_msec());
        v.data = rg_codec_end(&w, &v.len);

        if (v.data) {
            k.data = x->key;
            k.len = x->klen;
            st->set(st, &k, &v, s->agent->dedupe_ttl, 0, NULL, NULL);
            free(v.data);
        }
    }

    if (x->pending && failed && x->klen + 3 <= sizeof(buf)) {
        /* let another worker take the call over at once */
        k.len = snprintf(buf, sizeof(buf), "%.*s:p", (int) x->klen, x->key);
        k.data = buf;
        st->del(st, &k, NULL, NULL);
    }

    x->pending = 0;
    f = x->flight;

    if (f == NULL || f->owner != x) {
        return;
    }

    if (text == NULL) {
        rg_dedupe_hand_over(f);        /* no result: the next one runs */
    } else {
        rg_dedupe_answer(f, text, len, failed);
    }
}


void
rg_dedupe_cancel(rg_session_t *s)
{
    rg_uint_t            i;
    rg_store_t          *st;
    rg_session_call_t   *x, **pw;
    rg_dedupe_flight_t  *f;

    st = rg_store_ctx(s->engine);

    for (i = 0; s->extra && i < s->ncalls; i++) {
        x = &s->extra[i];

        if (x->claim) {
            st->cancel(st, x->claim);
            x->claim = NULL;
        }

        if (x->wait_ev) {
            event_free(x->wait_ev);
            x->wait_ev = NULL;
        }

        x->waiting = 0;
        f = x->flight;

        if (f == NULL) {
            continue;
        }

        if (f->owner == x) {
            /* unknown whether it ran: the waiters run it themselves */
            rg_dedupe_result(s, i, NULL, 0, 1);
            continue;
        }

        for (pw = &f->waiters; *pw; pw = &(*pw)->wnext) {
            if (*pw == x) {
                *pw = x->wnext;
                break;
            }
        }

        f->last = &f->waiters;
        for (pw = &f->waiters; *pw; pw = &(*pw)->wnext) {
            f->last = &(*pw)->wnext;
        }

        x->wnext = NULL;
        x->flight = NULL;
    }

    s->lookups = 0;
}
