/* rg_serve_lost.c: a worker of serve when the store lost its memory
 * (Redis restarted without its data, or was emptied; rg_store_epoch.c
 * tells it). The queue's groups are gone, and its entries, the sessions'
 * records and leases, the results, the claims. What this worker holds
 * it gives back:
 *
 *   - the groups are made again (the first read would answer NOGROUP);
 *   - each session it runs renews its lease at once: one the store
 *     forgot ("gone") is written back whole under a new lease
 *     (rg_recover.c), then its task is queued again under its id, so
 *     that if this worker stops, another goes on from there (a false
 *     alarm costs one renewal);
 *   - the results it wrote lately (RG_SERVE_KEPT of them) are written
 *     again, so that `reagent results`, GET /v1/tasks/ID and a waiting
 *     `submit --wait` find them;
 *   - the tasks it parked for an operator lived only in the store: they
 *     are named lost.
 *
 * Tasks queued and not yet taken by any worker were in the store only:
 * no worker can name them; their submitters can (`submit --wait` queues
 * its own again). All of it is said once per loss on the log, counted
 * in the metrics, and recorded on the queue's list of losses for
 * `reagent queue` and /readyz. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json_write.h>
#include <rg_serve_worker.h>
#include <rg_agent.h>
#include <rg_metrics.h>
#include <rg_store.h>
#include <rg_store_conf.h>
#include <jansson.h>


#define RG_SERVE_NAMED       50        /* task ids a record names */
#define RG_SERVE_REQUEUE_TRIES  30     /* a second apart */


static void
rg_serve_kept_free(rg_serve_kept_t *k)
{
    free(k->task_id);
    free(k->result);
    k->task_id = NULL;
    k->result = NULL;
}


void
rg_serve_keep(rg_serve_t *sv, const char *task_id, const char *sid,
    rg_uint_t shard, const char *result, size_t len)
{
    rg_serve_kept_t  *k;

    if (sv->kept == NULL) {
        return;
    }

    /* the oldest goes, by count or by bytes */
    while (sv->nkept
           && (sv->nkept == RG_SERVE_KEPT
               || sv->kept_bytes + len > RG_SERVE_KEPT_BYTES))
    {
        k = &sv->kept[sv->kept_next];
        sv->kept_bytes -= k->len;
        rg_serve_kept_free(k);
        sv->kept_next = (sv->kept_next + 1) % RG_SERVE_KEPT;
        sv->nkept--;
    }

    if (len > RG_SERVE_KEPT_BYTES) {
        return;
    }

    k = &sv->kept[(sv->kept_next + sv->nkept) % RG_SERVE_KEPT];
    k->task_id = strdup(task_id);
    k->result = result ? malloc(len + 1) : NULL;

    if (k->task_id == NULL || (result && k->result == NULL)) {
        rg_serve_kept_free(k);
        return;
    }

    if (result) {
        memcpy(k->result, result, len);
        k->result[len] = '\0';
    }

    snprintf(k->sid, sizeof(k->sid), "%s", sid);
    k->shard = shard;
    k->len = result ? len : 0;
    k->at = rg_wall_msec();

    sv->kept_bytes += k->len;
    sv->nkept++;
}


/* requeueing a task written back ---------------------------------------- */

typedef struct {
    rg_serve_t         *sv;
    char               *task_id;
    rg_uint_t           tries;
    struct event       *ev;
} rg_serve_requeue_t;


static void rg_serve_requeue_send(rg_serve_requeue_t *r);


static void
rg_serve_requeue_free(rg_serve_requeue_t *r)
{
    if (r->ev) {
        event_free(r->ev);
    }
    free(r->task_id);
    free(r);
}


static rg_serve_task_t *
rg_serve_find(rg_serve_t *sv, const char *task_id)
{
    rg_serve_task_t  *t;

    for (t = sv->head.next; t != &sv->head; t = t->next) {
        if (strcmp(t->task_id, task_id) == 0) {
            return t;
        }
    }

    return NULL;
}


static void
rg_serve_requeue_timer(evutil_socket_t fd, short what, void *arg)
{
    rg_serve_requeue_send(arg);
}


static void
rg_serve_requeued(void *data, rg_int_t rc, const char *entry_or_err)
{
    rg_serve_t          *sv;
    rg_serve_task_t     *t;
    rg_serve_requeue_t  *r;
    struct timeval       tv;

    r = data;
    sv = r->sv;

    if (sv->exiting) {
        rg_serve_requeue_free(r);
        return;
    }

    t = rg_serve_find(sv, r->task_id);

    if (rc == RG_OK) {
        sv->requeued++;
        rg_metrics_task(RG_METRICS_TASK_REQUEUED, 1);

        /* the entry its result acknowledges, kept fresh while it runs */
        if (t) {
            snprintf(t->entry, sizeof(t->entry), "%s", entry_or_err);
            t->shard = rg_stream_shard_of(rg_stream_shards(sv->queue),
                                          t->task_id);
        }

        rg_log_error(RG_LOG_NOTICE, sv->engine->log, 0, "queue: task %s "
                     "queued again (entry %s) after the store lost it",
                     r->task_id, entry_or_err);
        rg_serve_requeue_free(r);
        return;
    }

    /* it ended meanwhile: its result says the rest */
    if (t == NULL || ++r->tries >= RG_SERVE_REQUEUE_TRIES) {
        if (t) {
            rg_log_error(RG_LOG_ERR, sv->engine->log, 0, "queue: task %s "
                         "could not be queued again after the store lost "
                         "it (%s): it runs here; if this worker stops "
                         "before it ends, it is lost", r->task_id,
                         entry_or_err ? entry_or_err : "refused");
        }
        rg_serve_requeue_free(r);
        return;
    }

    if (r->ev == NULL) {
        r->ev = evtimer_new(sv->engine->base, rg_serve_requeue_timer, r);
        if (r->ev == NULL) {
            rg_serve_requeue_free(r);
            return;
        }
    }

    tv.tv_sec = 1;
    tv.tv_usec = 0;
    evtimer_add(r->ev, &tv);
}


static void
rg_serve_requeue_send(rg_serve_requeue_t *r)
{
    rg_serve_task_t  *t;

    t = rg_serve_find(r->sv, r->task_id);

    if (t == NULL || r->sv->exiting) {
        rg_serve_requeue_free(r);
        return;
    }

    /* again: its mark is gone with the rest, or says it was queued */
    rg_stream_submit(r->sv->queue, t->task_id, t->line, t->len, 1,
                     rg_serve_requeued, r);
}


void
rg_serve_recovered(rg_session_t *s)
{
    rg_serve_t          *sv;
    rg_serve_task_t     *t;
    rg_serve_requeue_t  *r;

    t = rg_session_data(s);
    sv = t->sv;

    if (sv->queue == NULL || sv->exiting) {
        return;
    }

    r = calloc(1, sizeof(rg_serve_requeue_t));
    if (r) {
        r->task_id = strdup(t->task_id);
    }
    if (r == NULL || r->task_id == NULL) {
        free(r);
        rg_log_error(RG_LOG_ERR, sv->engine->log, 0, "queue: task %s could "
                     "not be queued again after the store lost it (out of "
                     "memory)", t->task_id);
        return;
    }

    r->sv = sv;
    rg_serve_requeue_send(r);
}


/* the loss -------------------------------------------------------------- */

/* a result written again after a loss: asked again a second apart while
 * Redis comes back (a wipe is a restart), then named lost */
typedef struct rg_serve_rewrite_s  rg_serve_rewrite_t;

struct rg_serve_rewrite_s {
    rg_serve_t          *sv;
    char                *task_id;
    char                *result;
    size_t               len;
    char                 sid[48];
    char                 entry[48];   /* to acknowledge; "": none */
    rg_uint_t            shard;
    rg_uint_t            tries;
    struct event        *ev;
    rg_serve_rewrite_t  *next;
    rg_serve_rewrite_t **pprev;
};


static void rg_serve_rewrite_send(rg_serve_rewrite_t *w);


static void
rg_serve_rewrite_free(rg_serve_rewrite_t *w)
{
    if (w->next) {
        w->next->pprev = w->pprev;
    }
    *w->pprev = w->next;

    if (w->ev) {
        event_free(w->ev);
    }
    free(w->task_id);
    free(w->result);
    free(w);
}


/* a result not written: one with an entry is not lost (the entry, not
 * acknowledged, is taken over and its session gives it again); one
 * without (written again after a loss) is, and is named */
static void
rg_serve_rewrite_lost(rg_serve_t *sv, rg_serve_rewrite_t *w,
    const char *why)
{
    if (w->entry[0] == '\0') {
        rg_serve_forget(sv, w->task_id, why);
    }

    rg_serve_rewrite_free(w);
}


static void
rg_serve_rewrite_timer(evutil_socket_t fd, short what, void *arg)
{
    rg_serve_rewrite_send(arg);
}


static void
rg_serve_rewritten(void *data, const char *err)
{
    char                 why[320];
    rg_serve_t          *sv;
    rg_serve_rewrite_t  *w;
    struct timeval       tv = { 1, 0 };

    w = data;
    sv = w->sv;

    if (err == NULL) {
        rg_serve_rewrite_free(w);
        return;
    }

    /* held while this worker runs: Redis away for long is not a loss */
    if (++w->tries == RG_SERVE_REQUEUE_TRIES) {
        rg_log_error(RG_LOG_WARN, sv->engine->log, 0, "queue: the result of "
                     "task %s is not written yet (%s): asked again every "
                     "5s while this worker runs", w->task_id, err);
    }

    if (w->tries >= RG_SERVE_REQUEUE_TRIES) {
        tv.tv_sec = 5;
    }

    if (w->ev == NULL) {
        w->ev = evtimer_new(sv->engine->base, rg_serve_rewrite_timer, w);
    }

    if (!sv->exiting && w->ev && evtimer_add(w->ev, &tv) == 0) {
        return;
    }

    snprintf(why, sizeof(why), "its result could not be written %s (%s)",
             sv->exiting ? "before this worker stopped" : "again", err);
    rg_serve_rewrite_lost(sv, w, why);
}


static void
rg_serve_rewrite_send(rg_serve_rewrite_t *w)
{
    rg_stream_result(w->sv->queue, w->shard, w->entry, w->task_id, w->sid,
                     w->result, w->len, rg_serve_rewritten, w);
}


/* a kept result, written again (held until Redis takes it) */
static void
rg_serve_rewrite(rg_serve_t *sv, rg_serve_kept_t *k, const char *entry)
{
    rg_serve_rewrite_t  *w;

    w = calloc(1, sizeof(rg_serve_rewrite_t));
    if (w) {
        w->task_id = strdup(k->task_id);
        w->result = malloc(k->len + 1);
    }
    if (w == NULL || w->task_id == NULL || w->result == NULL) {
        if (w) {
            free(w->task_id);
            free(w->result);
            free(w);
        }
        rg_serve_forget(sv, k->task_id, "its result could not be written "
                        "again after the store lost it (out of memory)");
        return;
    }

    memcpy(w->result, k->result, k->len);
    w->result[k->len] = '\0';
    w->len = k->len;
    w->shard = k->shard;
    w->sv = sv;
    snprintf(w->sid, sizeof(w->sid), "%s", k->sid);
    snprintf(w->entry, sizeof(w->entry), "%s", entry);

    w->next = sv->rewrites;
    if (w->next) {
        w->next->pprev = &w->next;
    }
    w->pprev = &sv->rewrites;
    sv->rewrites = w;

    rg_serve_rewrite_send(w);
}


static void
rg_serve_noted(void *data, const char *err)
{
    rg_serve_said(data, err, RG_LOG_WARN, "queue: the record of the "
                  "store's loss was not written (%s)");
}


void
rg_serve_rewrite_kept(rg_serve_t *sv, const char *task_id, const char *entry)
{
    rg_uint_t         i;
    rg_serve_kept_t  *k;

    /* the newest first */
    for (i = sv->nkept; i > 0; i--) {
        k = &sv->kept[(sv->kept_next + i - 1) % RG_SERVE_KEPT];

        if (k->task_id && k->result && strcmp(k->task_id, task_id) == 0) {
            rg_serve_rewrite(sv, k, entry);
            return;
        }
    }
}


/* the record on the queue's list of losses */
static void
rg_serve_note(rg_serve_t *sv, rg_store_t *st, rg_uint_t sessions,
    rg_uint_t results, json_t *lost, rg_uint_t nlost, const char *why)
{
    char    *text;
    json_t  *o;

    o = json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:O, s:s}",
                  "at", (json_int_t) rg_wall_msec(),
                  "worker", rg_agent_ctx(sv->engine)->worker,
                  "epoch", st->epoch.id,
                  "sessions_written_back", (json_int_t) sessions,
                  "results_written_again", (json_int_t) results,
                  "lost_count", (json_int_t) nlost,
                  "lost", lost,
                  "note", why);
    if (o == NULL) {
        return;
    }

    text = rg_json_dumps(o, JSON_COMPACT, NULL);
    json_decref(o);

    if (text) {
        rg_stream_note_loss(sv->queue, text, strlen(text), rg_serve_noted,
                            sv);
        free(text);
    }
}


static void
rg_serve_store_lost(void *data, rg_store_t *st)
{
    char              ids[512];
    size_t            off;
    json_t           *lost;
    rg_uint_t         i, sessions, results, parked;
    rg_serve_t       *sv;
    rg_serve_task_t  *t, *next;
    rg_serve_kept_t  *k;

    sv = data;

    if (sv->exiting || sv->queue == NULL) {
        return;
    }

    sv->losses++;
    rg_metrics_store_loss();

    /* the groups first: nothing is read until they are there */
    sv->ready = 0;
    rg_serve_prepare(sv);

    sessions = 0;
    for (t = sv->head.next; t != &sv->head; t = next) {
        next = t->next;               /* a recovery may end a session */
        if (t->session) {
            sessions++;
            rg_session_renew(t->session);
        }
    }

    results = 0;
    parked = 0;
    off = 0;
    ids[0] = '\0';
    lost = json_array();

    for (i = 0; i < sv->nkept; i++) {
        k = &sv->kept[(sv->kept_next + i) % RG_SERVE_KEPT];

        if (k->task_id == NULL) {
            continue;                 /* named at an earlier loss */
        }

        if (k->result) {
            rg_serve_rewrite(sv, k, "");
            results++;
            continue;
        }

        /* parked: its session and its approval record were the store's */
        parked++;
        sv->forgotten++;
        rg_metrics_task(RG_METRICS_TASK_FORGOTTEN, 1);

        if (lost && parked <= RG_SERVE_NAMED) {
            json_array_append_new(lost, json_string(k->task_id));
        }

        if (off < sizeof(ids) - 64) {
            off += snprintf(ids + off, sizeof(ids) - off, "%s%s",
                            off ? ", " : "", k->task_id);
        }
    }

    rg_log_error(RG_LOG_ERR, sv->engine->log, 0, "queue: the store lost its "
                 "memory: the consumer groups are made again; %lu "
                 "session%s this worker runs %s written back and %s queued "
                 "again; %lu result%s it wrote lately %s written again; "
                 "lost for good: tasks queued and not yet taken by a worker "
                 "(their submitters must queue them again: `reagent submit "
                 "--wait` does)%s%lu task%s this worker parked for "
                 "approval%s%s%s",
                 (unsigned long) sessions, sessions == 1 ? "" : "s",
                 sessions == 1 ? "is" : "are", sessions == 1 ? "its task"
                                                             : "their tasks",
                 (unsigned long) results, results == 1 ? "" : "s",
                 results == 1 ? "is" : "are",
                 ", and ", (unsigned long) parked, parked == 1 ? "" : "s",
                 parked ? " (" : "", ids, parked ? ")" : "");

    if (lost) {
        rg_serve_note(sv, st, sessions, results, lost, parked,
                      "tasks queued and not yet taken by a worker are lost "
                      "unless their submitters queue them again");
        json_decref(lost);
    }

    for (i = 0; i < sv->nkept; i++) {
        k = &sv->kept[(sv->kept_next + i) % RG_SERVE_KEPT];
        if (k->result == NULL) {
            rg_serve_kept_free(k);   /* named once */
        }
    }
}


/* a session that could not be written back: named on the list too */
void
rg_serve_forget(rg_serve_t *sv, const char *task_id, const char *why)
{
    json_t      *lost;
    rg_store_t  *st;

    sv->forgotten++;
    rg_metrics_task(RG_METRICS_TASK_FORGOTTEN, 1);

    rg_log_error(RG_LOG_ERR, sv->engine->log, 0, "queue: task %s is lost: "
                 "%s", task_id, why);

    lost = json_pack("[s]", task_id);
    st = rg_store_ctx(sv->engine);

    /* said on the log only while the queue goes down */
    if (lost && sv->queue && !sv->exiting) {
        rg_serve_note(sv, st, 0, 0, lost, 1, why);
    }

    json_decref(lost);
}


void
rg_serve_nogroup(rg_serve_t *sv)
{
    rg_store_t  *st;

    st = rg_store_ctx(sv->engine);

    /* did the store lose its memory? its epoch says; the watcher then
     * does the rest */
    if (st->check) {
        st->check(st);
    }

    sv->ready = 0;
    rg_serve_prepare(sv);
}


rg_int_t
rg_serve_lost_init(rg_serve_t *sv)
{
    sv->kept = calloc(RG_SERVE_KEPT, sizeof(rg_serve_kept_t));
    if (sv->kept == NULL) {
        return RG_ERROR;
    }

    return rg_store_watch(rg_store_ctx(sv->engine), rg_serve_store_lost, sv);
}


void
rg_serve_lost_fini(rg_serve_t *sv)
{
    rg_uint_t  i;

    if (sv->kept == NULL) {
        return;
    }

    rg_store_unwatch(rg_store_ctx(sv->engine), rg_serve_store_lost, sv);

    while (sv->rewrites) {
        rg_serve_rewrite_lost(sv, sv->rewrites, "its result could not be "
                              "written before this worker stopped");
    }

    for (i = 0; i < RG_SERVE_KEPT; i++) {
        rg_serve_kept_free(&sv->kept[i]);
    }

    free(sv->kept);
    sv->kept = NULL;
}
