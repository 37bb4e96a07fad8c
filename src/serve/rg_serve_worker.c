/* rg_serve_worker.c: a worker of `reagent serve`. One engine on one
 * reactor, reading tasks from the queue (rg_stream.c) only as many as it
 * has free session slots (`concurrency` minus running, minus what the
 * read and the reclaim in flight may bring: backpressure), its shards in
 * turn without waiting, and waiting (at most `block`) only once a whole
 * round found nothing. Each task runs in the session named after its id
 * (rg_stream_session_id), opened from the store: a task taken over from
 * a worker that died goes on from its last checkpoint, under this
 * worker's lease. Its entry is acknowledged once its final result is
 * written; a session this worker lost (its lease passed to another, or
 * another holds it) writes and acknowledges nothing: its holder does.
 * Its entries are kept fresh while it runs them; every so often it takes
 * over entries idle past claim_idle; one delivered more than
 * max_deliveries times goes to the dead letters with its task failed. A
 * task that parks for an operator (rg_phase_park.c) is put on the queue's
 * list of parked tasks and its entry acknowledged without a result; the
 * reclaim timer also looks for parked tasks past approval_timeout
 * (rg_approval.c). Drain (QUIT, a reload): no more reads, the sessions
 * finish within the timeout, what is left is handed back to the queue at
 * once. Stop (TERM): it goes now; every session is checkpointed and its
 * entry will be taken over. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json_write.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_core_conf.h>
#include <rg_serve.h>
#include <rg_stream.h>
#include <rg_approval.h>
#include <rg_queue_conf.h>
#include <rg_task.h>
#include <rg_session.h>
#include <rg_agent.h>
#include <rg_agent_conf.h>
#include <rg_metrics.h>
#include <rg_serve_worker.h>
#include <rg_store.h>
#include <rg_store_conf.h>
#include <jansson.h>


static void rg_serve_reclaim(rg_serve_t *sv);


static void
rg_serve_later(rg_serve_t *sv, struct event *ev, rg_msec_t ms)
{
    struct timeval  tv;

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;

    if (ev) {
        evtimer_add(ev, &tv);
    }
}


static void
rg_serve_task_free(rg_serve_task_t *t)
{
    free(t->task_id);
    free(t->line);
    free(t);
}


/* a task off the ring of running ones, and freed (its session is not) */
static void
rg_serve_unlink(rg_serve_task_t *t)
{
    t->prev->next = t->next;
    t->next->prev = t->prev;
    t->sv->running--;

    rg_serve_task_free(t);
}


/* the running sessions stop here, their handlers not called; what they
 * stored stays */
static void
rg_serve_stop_all(rg_serve_t *sv)
{
    rg_serve_task_t  *t, *next;

    for (t = sv->head.next; t != &sv->head; t = next) {
        next = t->next;
        rg_session_destroy(t->session);
        rg_serve_unlink(t);
    }
}


static void
rg_serve_session_done(rg_session_t *s)
{
    rg_serve_t            *sv;
    rg_serve_task_t       *t;
    rg_session_outcome_t   o;

    t = rg_session_data(s);
    sv = t->sv;

    rg_session_outcome(s, &o);

    if (o.parked && !o.fenced) {
        rg_serve_park(sv, t, o.park_deadline);

    } else if (o.taken_unknown) {
        /* taken over, then forgotten by the store: ended, said unknown */
        rg_serve_answer(sv, t, s);

        sv->forgotten++;
        rg_metrics_task(RG_METRICS_TASK_FORGOTTEN, 1);
        rg_log_error(RG_LOG_ERR, sv->engine->log, 0, "queue: task %s ended "
                     "failed: %s", t->task_id, o.reason);

    } else if (o.fenced && o.reason && strncmp(o.reason, "lost:", 5) == 0) {
        /* the store forgot it and did not take it back */
        rg_serve_forget(sv, t->task_id, o.reason);

    } else if (o.fenced) {
        /* another worker holds the session: it writes the result */
        sv->lost++;
        rg_metrics_task(RG_METRICS_TASK_LOST, 1);
        rg_log_error(RG_LOG_NOTICE, sv->engine->log, 0, "queue: task %s "
                     "is not finished here: %s", t->task_id,
                     o.reason ? o.reason : "another worker runs it");

    } else {
        rg_serve_answer(sv, t, s);

        sv->done++;
        rg_metrics_task(RG_METRICS_TASK_DONE, 1);
    }

    t->session = NULL;
    rg_session_destroy(s);
    rg_serve_unlink(t);

    rg_serve_pump(sv);
    rg_serve_check_exit(sv);
}


/* tasks ------------------------------------------------------------------ */

static rg_uint_t
rg_serve_running(rg_serve_t *sv, const char *entry, rg_uint_t shard)
{
    rg_serve_task_t  *t;

    for (t = sv->head.next; t != &sv->head; t = t->next) {
        if (t->shard == shard && strcmp(t->entry, entry) == 0) {
            return 1;
        }
    }

    return 0;
}


static void
rg_serve_start(rg_serve_t *sv, const rg_stream_entry_t *e)
{
    char               why[160];
    rg_int_t           rc;
    rg_task_t          task;
    rg_session_t      *s;
    rg_serve_task_t   *t;
    rg_agent_conf_t   *agent;
    const char        *name;
    rg_session_args_t  args;

    if (rg_serve_running(sv, e->id, e->shard)) {
        return;                        /* ours already: it runs here */
    }

    if (e->task == NULL) {
        rg_serve_refuse(sv, e, e->id, "invalid", "the queue entry has no "
                        "\"task\" field");
        return;
    }

    rc = rg_task_parse(&task, e->task, e->len, 0);

    if (rc == RG_ERROR) {
        return;                        /* no memory: taken over later */
    }

    if (e->delivered > sv->qcf->max_deliveries) {
        snprintf(why, sizeof(why), "gave up after %lld deliveries "
                 "(max_deliveries %ld): each worker that ran it stopped "
                 "before it ended", (long long) e->delivered,
                 (long) sv->qcf->max_deliveries);
        rg_serve_bury(sv, e, task.id, why);
        rg_task_free(&task);
        return;
    }

    if (rc == RG_DECLINED) {
        rg_serve_refuse(sv, e, task.id, "invalid", task.error);
        rg_task_free(&task);
        return;
    }

    name = task.agent ? task.agent
                      : rg_agent_main_conf(sv->engine->cycle)
                        ->default_agent.data;
    agent = rg_agent_find(sv->engine->cycle, name, strlen(name));

    if (agent == NULL) {
        snprintf(why, sizeof(why), "unknown agent \"%.64s\"", name);
        rg_serve_refuse(sv, e, task.id, "invalid", why);
        rg_task_free(&task);
        return;
    }

    t = calloc(1, sizeof(rg_serve_task_t));
    if (t) {
        t->task_id = strdup(task.id);
        t->line = malloc(e->len + 1);
    }
    if (t == NULL || t->task_id == NULL || t->line == NULL) {
        if (t) {
            rg_serve_task_free(t);
        }
        rg_task_free(&task);
        return;
    }

    memcpy(t->line, e->task, e->len);
    t->line[e->len] = '\0';
    t->len = e->len;

    t->sv = sv;
    t->shard = e->shard;
    snprintf(t->entry, sizeof(t->entry), "%s", e->id);
    rg_stream_session_id(task.id, t->sid, sizeof(t->sid));

    memset(&args, 0, sizeof(args));
    args.agent = agent;
    args.id = t->sid;
    args.task_id = task.id;
    args.input = task.input;
    args.len = task.input_len;
    args.messages = task.messages;
    args.handler = rg_serve_session_done;
    args.data = t;
    args.stored = 1;

    s = rg_session_open(sv->engine, &args);
    if (s == NULL) {
        rg_serve_task_free(t);
        rg_task_free(&task);
        return;
    }

    /* the store forgot it and it was written back: queued again */
    rg_session_on_recovered(s, rg_serve_recovered);

    /* should this worker be killed and the store forget it, the next in
     * this slot names it */
    rg_stream_ledger_note(sv->engine, task.id);

    /* the losses known when its entry was read (one more by the time
     * its lease is taken, and the entry is gone); another worker's: its
     * record is expected (rg_session_open.c) */
    rg_session_set_read(s, rg_store_ctx(sv->engine)->epoch.losses,
                        e->delivered > 1);

    /* a task may tighten or loosen its agent's limits (a resumed session
     * keeps the ones it started with) */
    rg_task_apply(&task, s);
    /* a dangerous call parks it until an operator decides */
    if (task.park) {
        rg_session_set_park(s, e->task, e->len);
    }

    t->session = s;
    t->next = sv->head.next;
    t->prev = &sv->head;
    sv->head.next->prev = t;
    sv->head.next = t;

    sv->running++;
    sv->started++;

    rg_task_free(&task);
}


/* reading the queue -------------------------------------------------- */

/* session slots that neither a session nor the read or reclaim in flight
 * holds: what one more read or reclaim may ask for (a read and a reclaim
 * may both be in flight: each fills at most the slots it was promised) */
static rg_uint_t
rg_serve_free(rg_serve_t *sv)
{
    rg_uint_t  used;

    used = sv->running + sv->promised;

    return used < sv->concurrency ? sv->concurrency - used : 0;
}


/* a read's or a reclaim's answer came: the slots it was promised are
 * free again (rg_serve_free); RG_DECLINED when the queue is being taken
 * down and the answer goes nowhere */
static rg_int_t
rg_serve_slots_back(rg_serve_t *sv, rg_uint_t *asked)
{
    sv->promised -= *asked;
    *asked = 0;

    return sv->exiting ? RG_DECLINED : RG_OK;
}


/* a read or a reclaim failed: RG_OK when it was a shard that lost its
 * group (the store forgot it), made again now, which reads again;
 * RG_DECLINED for any other failure, which its caller asks again */
static rg_int_t
rg_serve_regroup(rg_serve_t *sv, const char *err)
{
    if (strncmp(err, "NOGROUP", 7) != 0) {
        return RG_DECLINED;
    }

    rg_serve_nogroup(sv);

    return RG_OK;
}


/* a read or its wait failed: said once in a row, and asked again (at
 * once when it was a shard that lost its group, made again now) */
static void
rg_serve_read_failed(rg_serve_t *sv, const char *what, const char *err)
{
    if (!sv->read_failed) {
        rg_log_error(RG_LOG_WARN, sv->engine->log, 0, "queue: %s failed "
                     "(%s); trying again", what, err);
    }
    sv->read_failed = 1;
    sv->empty = 0;
    sv->waiting = 0;

    if (rg_serve_regroup(sv, err) != RG_OK) {
        rg_serve_later(sv, sv->pump_ev, 1000);
    }
}


/* entries given to this worker, by a read (reclaim 0) or by a take-over
 * of others' idle ones (reclaim 1): each started where a slot is free */
static void
rg_serve_took(rg_serve_t *sv, rg_uint_t reclaim, rg_stream_entry_t *e,
    rg_uint_t n, const char *err)
{
    rg_uint_t  i;

    if (reclaim) {
        sv->reclaiming = 0;
        if (rg_serve_slots_back(sv, &sv->reclaim_asked) != RG_OK) {
            return;
        }

    } else {
        sv->reading = 0;
        if (rg_serve_slots_back(sv, &sv->read_asked) != RG_OK) {
            return;
        }
    }

    if (err && reclaim) {
        rg_log_error(RG_LOG_WARN, sv->engine->log, 0, "queue: taking over "
                     "idle tasks failed (%s); trying again later", err);

        if (rg_serve_regroup(sv, err) != RG_OK) {
            rg_serve_pump(sv);
        }
        return;
    }

    if (err) {
        rg_serve_read_failed(sv, "reading the tasks", err);
        return;
    }

    if (reclaim && n) {
        rg_log_error(RG_LOG_NOTICE, sv->engine->log, 0, "queue: took over "
                     "%lu tasks idle past claim_idle (their worker stopped)",
                     (unsigned long) n);
        sv->reclaimed += n;
        rg_metrics_task(RG_METRICS_TASK_RECLAIMED, n);
    }

    if (!reclaim) {
        if (sv->read_failed) {
            rg_log_error(RG_LOG_NOTICE, sv->engine->log, 0, "queue: "
                         "reading the tasks again");
            sv->read_failed = 0;
        }

        sv->reads++;
        sv->read += n;

        /* a read that waited starts a new round, as one that found some */
        sv->empty = (n || sv->waiting) ? 0 : sv->empty + 1;
        sv->waiting = 0;
    }

    for (i = 0; i < n && !sv->exiting; i++) {
        rg_serve_start(sv, &e[i]);
    }

    /* a read held back for a reclaim goes now */
    rg_serve_pump(sv);

    if (!reclaim) {
        rg_serve_check_exit(sv);
    }
}


static void
rg_serve_read_handler(void *data, rg_stream_entry_t *e, rg_uint_t n,
    const char *err)
{
    rg_serve_took(data, 0, e, n, err);
}


static void
rg_serve_reclaimed(void *data, rg_stream_entry_t *e, rg_uint_t n,
    const char *err)
{
    rg_serve_took(data, 1, e, n, err);
}


/* the wait for an entry on any shard ended: a new round */
static void
rg_serve_waited(void *data, const char *err)
{
    rg_serve_t  *sv;

    sv = data;
    sv->reading = 0;
    sv->waiting = 0;
    sv->empty = 0;

    if (sv->exiting) {
        return;
    }

    if (err) {
        rg_serve_read_failed(sv, "waiting for tasks", err);
        return;
    }

    rg_serve_pump(sv);
    rg_serve_check_exit(sv);
}


/* The shards are read in turn, each at once (no BLOCK), so that an empty
 * one never holds up a backlog on another. Once a whole round found
 * nothing, the worker waits (at most block) for an entry: on one server,
 * for one on any shard (XREAD, which delivers nothing: the next round
 * reads it); in a cluster, where one command cannot name every shard,
 * the round's last read waits on its own shard (a task on another is
 * read within block). */
void
rg_serve_pump(rg_serve_t *sv)
{
    rg_uint_t  avail, shards, shard, all;

    if (sv->queue == NULL) {
        return;
    }

    if (!sv->ready) {
        rg_serve_prepare(sv);
        return;
    }

    if (sv->draining || sv->exiting) {
        return;
    }

    /* entries of a worker that died go first: they waited longest */
    rg_serve_reclaim(sv);

    if (sv->reading || evtimer_pending(sv->pump_ev, NULL)) {
        return;                        /* after a failure: wait for it */
    }

    avail = rg_serve_free(sv);
    if (avail == 0) {
        return;
    }

    shards = rg_stream_shards(sv->queue);
    shard = sv->shard;
    all = shards > 1 && rg_stream_one_read(sv->queue);

    sv->reading = 1;

    if (all && sv->empty >= shards) {
        sv->waiting = 1;
        rg_stream_wait(sv->queue, rg_serve_waited, sv);
        return;
    }

    sv->waiting = !all && sv->empty + 1 >= shards;
    sv->read_asked = avail;
    sv->promised += avail;
    sv->shard = (shard + 1) % shards;

    rg_stream_read(sv->queue, shard, avail, sv->waiting,
                   rg_serve_read_handler, sv);
}


static void
rg_serve_pump_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_serve_pump(arg);
}


static void
rg_serve_prepared(void *data, const char *err)
{
    rg_serve_t  *sv;

    sv = data;
    sv->preparing = 0;

    if (sv->exiting) {
        return;
    }

    if (err) {
        rg_log_error(RG_LOG_WARN, sv->engine->log, 0, "queue: the consumer "
                     "group cannot be made (%s); trying again", err);
        rg_serve_later(sv, sv->pump_ev, 1000);
        return;
    }

    sv->ready = 1;
    rg_serve_pump(sv);
}


/* the group on every shard, made when absent: at the start, and again
 * after the store lost it (a NOGROUP answer, a new epoch); until then
 * nothing is read */
void
rg_serve_prepare(rg_serve_t *sv)
{
    if (sv->queue == NULL || sv->preparing || sv->exiting || sv->draining
        || evtimer_pending(sv->pump_ev, NULL))
    {
        return;
    }

    sv->ready = 0;
    sv->preparing = 1;
    rg_stream_prepare(sv->queue, rg_serve_prepared, sv);
}


/* keeping entries, taking over others' ---------------------------------- */

typedef void (*rg_serve_entries_pt)(rg_serve_t *sv, rg_uint_t shard,
    const char **ids, rg_uint_t n);


/* the entries of the running tasks, a shard's at a time (one command
 * each): kept fresh, or handed back */
static void
rg_serve_each_shard(rg_serve_t *sv, rg_serve_entries_pt handler)
{
    rg_uint_t         shard, n, cap;
    rg_serve_task_t  *t;
    const char      **ids;

    cap = sv->running;
    ids = cap ? malloc(cap * sizeof(char *)) : NULL;

    for (shard = 0; ids && shard < rg_stream_shards(sv->queue); shard++) {
        n = 0;
        for (t = sv->head.next; t != &sv->head && n < cap; t = t->next) {
            if (t->shard == shard) {
                ids[n++] = t->entry;
            }
        }

        if (n) {
            handler(sv, shard, ids, n);
        }
    }

    free(ids);
}


static void
rg_serve_touch(rg_serve_t *sv, rg_uint_t shard, const char **ids,
    rg_uint_t n)
{
    rg_stream_touch(sv->queue, shard, ids, n);
}


static void
rg_serve_keep_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_serve_t  *sv;

    sv = arg;
    rg_serve_each_shard(sv, rg_serve_touch);

    rg_serve_later(sv, sv->keep_ev, sv->qcf->claim_idle / 3);
}


/* a reclaim that is due, when a slot is free for it: while a read in
 * flight holds every free slot, it waits for that read's answer (within
 * block, shorter than claim_idle) */
static void
rg_serve_reclaim(rg_serve_t *sv)
{
    rg_uint_t  avail, shard;

    avail = rg_serve_free(sv);

    if (!sv->reclaim_due || sv->reclaiming || avail == 0 || !sv->ready
        || sv->draining || sv->exiting)
    {
        return;
    }

    sv->reclaim_due = 0;
    sv->reclaiming = 1;
    sv->reclaim_asked = avail;
    sv->promised += avail;

    shard = (rg_uint_t) (random() % rg_stream_shards(sv->queue));
    rg_stream_reclaim(sv->queue, shard, avail, rg_serve_reclaimed, sv);
}


static void
rg_serve_expired(void *data, rg_uint_t n, const char *err)
{
    rg_serve_t  *sv;

    sv = data;
    sv->expiring = 0;

    if (err && !sv->exiting) {
        rg_log_error(RG_LOG_WARN, sv->engine->log, 0, "queue: looking for "
                     "parked tasks past approval_timeout failed (%s); "
                     "trying again later", err);
    }
}


static void
rg_serve_reclaim_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_serve_t  *sv;

    sv = arg;

    /* at once, or when a slot is free (rg_serve_reclaim) */
    sv->reclaim_due = 1;
    rg_serve_pump(sv);

    /* parked tasks whose wait passed go back to the queue to end */
    if (sv->ready && !sv->draining && !sv->expiring) {
        sv->expiring = 1;
        rg_approval_expire(sv->queue, 100, rg_serve_expired, sv);
    }

    /* every process asks at its own times */
    rg_serve_later(sv, sv->reclaim_ev,
                   sv->qcf->claim_idle / 4
                   + (rg_msec_t) (random() % (sv->qcf->claim_idle / 4 + 1)));
}


/* the queue's sizes, every few seconds, for the metrics ------------------ */

static void
rg_serve_sized(void *data, rg_uint_t shard, int64_t depth, int64_t pending,
    int64_t dead, const char *err)
{
    rg_serve_t  *sv;

    sv = data;
    sv->sizing--;

    if (err == NULL && !sv->exiting) {
        rg_metrics_queue(rg_metrics_ctx(sv->engine), shard, depth, pending,
                         dead);
    }
}


static void
rg_serve_parked_count(void *data, int64_t n, const char *err)
{
    rg_serve_t  *sv;

    sv = data;
    sv->sizing--;

    if (err == NULL && !sv->exiting) {
        rg_metrics_parked(rg_metrics_ctx(sv->engine), n);
    }
}


static void
rg_serve_sizes_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_uint_t    shard, n;
    rg_serve_t  *sv;

    sv = arg;

    /* one round at a time: a slow Redis is not asked again meanwhile */
    if (sv->sizing == 0 && !sv->exiting) {
        n = rg_min(rg_stream_shards(sv->queue), RG_METRICS_SHARDS);
        sv->sizing = n + 1;
        for (shard = 0; shard < n; shard++) {
            rg_stream_sizes(sv->queue, shard, rg_serve_sized, sv);
        }
        /* and the parked tasks, which no worker holds */
        rg_approval_count(sv->queue, rg_serve_parked_count, sv);
    }

    rg_serve_later(sv, sv->sizes_ev, 5000);
}


/* draining, stopping ------------------------------------------------------ */

static void
rg_serve_left(void *data, const char *err)
{
    rg_serve_answered(data, err, RG_LOG_INFO, "queue: the consumer stays in "
                      "the group (%s)");
}


void
rg_serve_check_exit(rg_serve_t *sv)
{
    rg_uint_t  shard;

    if (!sv->draining || sv->running || sv->writing
        || sv->engine->holds || sv->exiting)
    {
        return;
    }

    if (sv->queue && !sv->leaving) {
        /* all done here: the consumer goes, so that `reagent queue`
         * shows no worker that is gone (within the bound on the wait) */
        sv->leaving = 1;
        if (!evtimer_pending(sv->last_ev, NULL)) {
            rg_serve_later(sv, sv->last_ev, 1000);
        }

        sv->writing = rg_stream_shards(sv->queue);
        for (shard = 0; shard < rg_stream_shards(sv->queue); shard++) {
            rg_stream_leave(sv->queue, shard, rg_serve_left, sv);
        }
        return;
    }

    sv->exiting = 1;
    event_base_loopbreak(sv->engine->base);
}


/* cancels ------------------------------------------------------------ */

static void
rg_serve_asked_free(rg_serve_t *sv)
{
    rg_uint_t  i;

    for (i = 0; i < sv->nasked; i++) {
        free(sv->asked[i]);
    }
    free(sv->asked);
    sv->asked = NULL;
    sv->nasked = 0;
}


static void
rg_serve_cancels(void *data, redisReply *reply, const char *err)
{
    rg_uint_t         i, n;
    rg_serve_t       *sv;
    rg_serve_task_t  *t;
    const char      **gone;

    sv = data;
    sv->asking = 0;

    if (err || reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements != sv->nasked)
    {
        rg_serve_asked_free(sv);
        return;
    }

    gone = malloc(sv->nasked * sizeof(char *));
    n = 0;

    for (i = 0; i < reply->elements; i++) {
        if (reply->element[i]->type != REDIS_REPLY_INTEGER
            || reply->element[i]->integer != 1)
        {
            continue;
        }

        for (t = sv->head.next; t != &sv->head; t = t->next) {
            if (strcmp(t->task_id, sv->asked[i]) == 0 && t->session
                && !rg_session_state_final(rg_session_state(t->session)))
            {
                rg_log_error(RG_LOG_NOTICE, sv->engine->log, 0, "queue: "
                             "task %s cancelled through the API",
                             t->task_id);
                rg_session_cancel(t->session, "cancelled through the API");
                break;
            }
        }

        if (gone) {
            gone[n++] = sv->asked[i];
        }
    }

    if (gone && n && sv->queue) {
        rg_stream_cancelled(sv->queue, gone, n, 1, NULL, NULL);
    }

    free(gone);
    rg_serve_asked_free(sv);
}


static void
rg_serve_cancel_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_uint_t         n;
    rg_serve_t       *sv;
    rg_serve_task_t  *t;

    sv = arg;

    rg_serve_later(sv, sv->cancel_ev, 1000);

    if (sv->asking || sv->running == 0 || sv->queue == NULL) {
        return;
    }

    sv->asked = calloc(sv->running, sizeof(char *));
    if (sv->asked == NULL) {
        return;
    }

    n = 0;
    for (t = sv->head.next; t != &sv->head && n < sv->running; t = t->next) {
        sv->asked[n] = strdup(t->task_id);
        if (sv->asked[n]) {
            n++;
        }
    }
    sv->nasked = n;

    if (n == 0 || rg_stream_cancelled(sv->queue, (const char **) sv->asked,
                                      n, 0, rg_serve_cancels, sv) == NULL)
    {
        rg_serve_asked_free(sv);
        return;
    }

    sv->asking = 1;
}


/* the API's last request of a drain ended */
static void
rg_serve_released(rg_engine_t *e)
{
    rg_serve_check_exit(e->released_data);
}


/* the hand-back answered: the entries are free for the others now */
static void
rg_serve_handed(void *data, const char *err)
{
    rg_serve_answered(data, err, RG_LOG_WARN, "queue: handing tasks back "
                      "failed (%s): they are taken over after claim_idle");
}


/* what is still unanswered after the bound is given up on */
static void
rg_serve_last_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_serve_t  *sv;

    sv = arg;

    if (!sv->exiting) {
        rg_log_error(RG_LOG_WARN, sv->engine->log, 0, "queue: %lu writes "
                     "unanswered at exit: their tasks are taken over "
                     "after claim_idle", (unsigned long) sv->writing);
        sv->exiting = 1;
        event_base_loopbreak(sv->engine->base);
    }
}


static void
rg_serve_hand_back(rg_serve_t *sv, rg_uint_t shard, const char **ids,
    rg_uint_t n)
{
    /* the reactor runs until Redis has them (the connection is not
     * flushed when it is freed) */
    sv->writing++;
    rg_stream_hand_back(sv->queue, shard, ids, n, rg_serve_handed, sv);
}


static void
rg_serve_drain_expired(evutil_socket_t fd, short what, void *arg)
{
    rg_serve_t  *sv;

    sv = arg;

    rg_log_error(RG_LOG_NOTICE, sv->engine->log, 0, "queue: drain_timeout "
                 "passed with %lu tasks running: they go back to the queue "
                 "from their last checkpoint", (unsigned long) sv->running);

    rg_serve_each_shard(sv, rg_serve_hand_back);

    /* their sessions stop here; what they stored stays */
    rg_serve_stop_all(sv);

    /* what the API still holds is cut with the engine */
    sv->engine->holds = 0;
    /* the results and hand-backs in flight have a second to be answered */
    rg_serve_later(sv, sv->last_ev, 1000);
    rg_serve_check_exit(sv);
}


static void
rg_serve_drain(rg_worker_t *w, rg_msec_t timeout)
{
    rg_serve_t  *sv;

    sv = w->data;
    sv->draining = 1;

    if (sv->queue) {
        rg_log_error(RG_LOG_NOTICE, sv->engine->log, 0, "queue: no more "
                     "reads; draining %lu tasks running",
                     (unsigned long) sv->running);
    }

    /* the API takes no new request */
    rg_engine_drain(sv->engine);

    if (sv->running == 0 && sv->engine->holds == 0) {
        rg_serve_check_exit(sv);
        return;
    }

    rg_serve_later(sv, sv->drain_ev, timeout);
    rg_serve_check_exit(sv);
}


static void
rg_serve_stop(rg_worker_t *w)
{
    rg_serve_t  *sv;

    sv = w->data;
    sv->exiting = 1;
    event_base_loopbreak(sv->engine->base);
}


static size_t
rg_serve_status(rg_worker_t *w, char *buf, size_t size)
{
    int          n;
    rg_serve_t  *sv;

    sv = w->data;

    n = snprintf(buf, size, "{\"sessions\":%lu,\"concurrency\":%lu,"
                 "\"reads\":%llu,\"read\":%llu,"
                 "\"started\":%llu,\"done\":%llu,\"lost\":%llu,"
                 "\"reclaimed\":%llu,\"dead\":%llu,\"parked\":%llu,"
                 "\"store_losses\":%llu,\"requeued\":%llu,"
                 "\"forgotten\":%llu,\"draining\":%s}",
                 (unsigned long) sv->running,
                 (unsigned long) sv->concurrency,
                 (unsigned long long) sv->reads,
                 (unsigned long long) sv->read,
                 (unsigned long long) sv->started,
                 (unsigned long long) sv->done,
                 (unsigned long long) sv->lost,
                 (unsigned long long) sv->reclaimed,
                 (unsigned long long) sv->dead,
                 (unsigned long long) sv->parked,
                 (unsigned long long) sv->losses,
                 (unsigned long long) sv->requeued,
                 (unsigned long long) sv->forgotten,
                 sv->draining ? "true" : "false");

    return n > 0 && (size_t) n < size ? (size_t) n : 0;
}


/* USR1: the files the engine's parts write (the access log) */
static void
rg_serve_worker_reopen(rg_worker_t *w)
{
    rg_serve_t  *sv;

    sv = w->data;

    rg_engine_reopen(sv->engine);
}


/* a worker's timers: where each is kept, what it calls */
static const struct rg_serve_timer_s {
    size_t                offset;
    event_callback_fn     handler;
} rg_serve_timers[] = {
    { offsetof(rg_serve_t, pump_ev), rg_serve_pump_handler },
    { offsetof(rg_serve_t, keep_ev), rg_serve_keep_handler },
    { offsetof(rg_serve_t, reclaim_ev), rg_serve_reclaim_handler },
    { offsetof(rg_serve_t, drain_ev), rg_serve_drain_expired },
    { offsetof(rg_serve_t, last_ev), rg_serve_last_handler },
    { offsetof(rg_serve_t, cancel_ev), rg_serve_cancel_handler },
    { offsetof(rg_serve_t, sizes_ev), rg_serve_sizes_handler },
    { 0, NULL }
};


int
rg_serve_worker_run(rg_worker_t *w)
{
    int               rc;
    rg_cycle_t       *cycle;
    rg_serve_t        sv;
    struct event    **ev;
    const struct rg_serve_timer_s  *timer;

    cycle = w->cycle;
    memset(&sv, 0, sizeof(sv));
    sv.head.next = sv.head.prev = &sv.head;
    sv.worker = w;
    sv.qcf = rg_queue_conf(cycle);
    sv.concurrency = (rg_uint_t) rg_core_conf(cycle)->concurrency;

    srandom((unsigned) getpid() ^ (unsigned) rg_wall_msec());

    sv.engine = rg_engine_create(cycle, cycle->log);
    if (sv.engine == NULL) {
        rg_log_error(RG_LOG_EMERG, cycle->log, 0, "worker %d: cannot start "
                     "its engine: %s", (int) getpid(),
                     cycle->errmsg[0] ? cycle->errmsg : "see above");
        return 2;
    }

    rc = 2;

    sv.engine->worker = w->slot;
    sv.engine->released = rg_serve_released;

    /* the store's epoch beside the pid file: a loss while no worker ran
     * is said by the first that starts again (rg_store_epoch.c) */
    if (rg_serve_conf(cycle)->pid.len) {
        char  path[PATH_MAX];

        snprintf(path, sizeof(path), "%s.epoch",
                 rg_serve_conf(cycle)->pid.data);
        rg_store_epoch_remember(rg_store_ctx(sv.engine), path);
    }
    sv.engine->released_data = &sv;

    /* without a queue (the API alone, store memory) nothing is read */
    if (sv.qcf->declared) {
        sv.queue = rg_stream_create(sv.engine,
                                    rg_agent_ctx(sv.engine)->worker);
        if (sv.queue == NULL) {
            goto done;
        }
    }

    for (timer = rg_serve_timers; timer->handler; timer++) {
        ev = (struct event **) ((char *) &sv + timer->offset);
        *ev = evtimer_new(sv.engine->base, timer->handler, &sv);
        if (*ev == NULL) {
            goto done;
        }
    }

    /* the metrics of this worker go to its slot of the shared zone */
    rg_metrics_attach(sv.engine, w->slot);

    w->drain = rg_serve_drain;
    w->stop = rg_serve_stop;
    w->status = rg_serve_status;
    w->reopen = rg_serve_worker_reopen;
    w->data = &sv;

    if (rg_worker_attach(w, sv.engine->base) != RG_OK) {
        goto done;
    }

    if (sv.queue) {
        rg_log_error(RG_LOG_NOTICE, sv.engine->log, 0, "worker %d: reading "
                     "the queue (%lu sessions at most)", (int) getpid(),
                     (unsigned long) sv.concurrency);

        if (rg_serve_lost_init(&sv) != RG_OK
            || rg_stream_ledger_start(sv.engine) != RG_OK)
        {
            goto done;
        }

        rg_serve_prepare(&sv);
        rg_serve_later(&sv, sv.keep_ev, sv.qcf->claim_idle / 3);
        /* tasks left by a worker that died: soon after the start */
        rg_serve_later(&sv, sv.reclaim_ev, 200 + random() % 300);
        rg_serve_later(&sv, sv.cancel_ev, 1000);
        rg_serve_later(&sv, sv.sizes_ev, 1000);

    } else {
        rg_log_error(RG_LOG_NOTICE, sv.engine->log, 0, "worker %d: no "
                     "queue: the API's tasks only", (int) getpid());
    }

    event_base_dispatch(sv.engine->base);

    rc = 0;

    /* stopped: the sessions' checkpoints stay, their entries are taken
     * over after claim_idle */
    rg_serve_stop_all(&sv);

    rg_worker_detach(w);

done:

    /* the queue first: taking its connections down answers what was in
     * flight, and those answers must find the timers still there */
    sv.exiting = 1;
    rg_stream_ledger_stop(sv.engine);
    rg_stream_destroy(sv.queue);
    sv.queue = NULL;

    rg_serve_asked_free(&sv);
    rg_serve_lost_fini(&sv);

    for (timer = rg_serve_timers; timer->handler; timer++) {
        ev = (struct event **) ((char *) &sv + timer->offset);
        if (*ev) {
            event_free(*ev);
        }
    }

    rg_engine_destroy(sv.engine);

    return rc;
}
