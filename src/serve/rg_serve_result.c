/* rg_serve_result.c: what a worker of serve writes to the queue about
 * the tasks it took: a task's final result (its entry acknowledged with
 * it, and kept to be written again should the store forget it), the
 * result of an entry that cannot run, the dead letter of one given up
 * on, and a task parked for an operator (listed, its entry acknowledged
 * without a result). Each write counts in sv->writing until it is
 * answered, so that a drain waits for it. Reading the queue and running
 * the sessions is rg_serve_worker.c. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json_write.h>
#include <rg_engine.h>
#include <rg_stream.h>
#include <rg_approval.h>
#include <rg_session.h>
#include <rg_metrics.h>
#include <rg_serve_worker.h>
#include <jansson.h>


void
rg_serve_said(rg_serve_t *sv, const char *err, rg_uint_t level,
    const char *fmt)
{
    if (err && !sv->exiting) {
        rg_log_error(level, sv->engine->log, 0, fmt, err);
    }
}


/* a write of this worker's to the queue answered (sv->writing counts
 * them): its failure said, then whether the worker may exit now */
void
rg_serve_answered(rg_serve_t *sv, const char *err, rg_uint_t level,
    const char *fmt)
{
    sv->writing--;
    rg_serve_said(sv, err, level, fmt);
    rg_serve_check_exit(sv);
}


typedef struct {
    rg_serve_t         *sv;
    char                entry[48];
    char                task_id[];
} rg_serve_wrote_t;


static void
rg_serve_written(void *data, const char *err)
{
    rg_serve_t        *sv;
    rg_serve_wrote_t  *w;

    w = data;
    sv = w->sv;

    /* the entry stays pending: it is taken over, and its session, ended,
     * gives its result again; and should the store have lost the entry,
     * the result is written again until Redis takes it */
    if (err && !sv->exiting) {
        rg_serve_rewrite_kept(sv, w->task_id, w->entry);
    }

    free(w);
    rg_serve_answered(sv, err, RG_LOG_WARN, "queue: a result was not "
                      "acknowledged (%s): its task will be taken over and "
                      "answered again from its session");
}


static void
rg_serve_write(rg_serve_t *sv, rg_uint_t shard, const char *entry,
    const char *task_id, const char *sid, json_t *r)
{
    char              *text;
    rg_serve_wrote_t  *w;

    text = rg_json_dumps(r, 0, NULL);
    if (text == NULL) {
        return;
    }

    rg_serve_keep(sv, task_id, sid, shard, text, strlen(text));

    w = malloc(sizeof(rg_serve_wrote_t) + strlen(task_id) + 1);
    if (w == NULL) {
        free(text);
        return;                        /* taken over: answered again */
    }

    w->sv = sv;
    snprintf(w->entry, sizeof(w->entry), "%s", entry);
    memcpy(w->task_id, task_id, strlen(task_id) + 1);

    sv->writing++;
    rg_stream_result(sv->queue, shard, entry, task_id, sid, text,
                     strlen(text), rg_serve_written, w);
    free(text);
}


/* a task's session ended: its result, named after the task, written */
void
rg_serve_answer(rg_serve_t *sv, rg_serve_task_t *t, rg_session_t *s)
{
    json_t  *r;

    r = rg_session_result(s);
    if (r == NULL) {
        return;
    }

    json_object_set_new(r, "id", json_string(t->task_id));
    json_object_set_new(r, "session", json_string(t->sid));
    rg_serve_write(sv, t->shard, t->entry, t->task_id, t->sid, r);
    json_decref(r);
}


/* an entry that cannot run: its result says why, and it is acknowledged */
void
rg_serve_refuse(rg_serve_t *sv, const rg_stream_entry_t *e,
    const char *task_id, const char *status, const char *why)
{
    char     sid[48];
    json_t  *r;

    rg_stream_session_id(task_id, sid, sizeof(sid));

    r = json_pack("{s:s, s:s, s:n, s:i, s:i, s:i, s:s}",
                  "id", task_id, "status", status, "answer", "rounds", 0,
                  "tokens", 0, "ms", 0, "error", why);
    if (r) {
        rg_serve_write(sv, e->shard, e->id, task_id, sid, r);
        json_decref(r);
    }

    rg_log_error(RG_LOG_WARN, sv->engine->log, 0, "queue: task %s (entry "
                 "%s): %s", task_id, e->id, why);
}


/* an entry given up on: its result is written (and the entry
 * acknowledged) only once its dead letter is, so that neither goes
 * without the other */
typedef struct {
    rg_serve_t         *sv;
    rg_stream_entry_t   e;            /* its task line not kept */
    char               *task_id;
    char                why[160];
} rg_serve_dead_t;


static void
rg_serve_buried(void *data, const char *err)
{
    rg_serve_t       *sv;
    rg_serve_dead_t  *d;

    d = data;
    sv = d->sv;
    sv->writing--;

    if (err) {
        if (!sv->exiting) {
            rg_log_error(RG_LOG_WARN, sv->engine->log, 0, "queue: task %s "
                         "(entry %s): its dead letter was not written (%s): "
                         "it stays pending, to be given up on again",
                         d->task_id, d->e.id, err);
        }

    } else {
        rg_serve_refuse(sv, &d->e, d->task_id, "failed", d->why);
        sv->dead++;
        rg_metrics_task(RG_METRICS_TASK_DEAD, 1);
    }

    free(d->task_id);
    free(d);
    rg_serve_check_exit(sv);
}


void
rg_serve_bury(rg_serve_t *sv, const rg_stream_entry_t *e,
    const char *task_id, const char *why)
{
    rg_serve_dead_t  *d;

    d = calloc(1, sizeof(rg_serve_dead_t));
    if (d) {
        d->task_id = strdup(task_id ? task_id : e->id);
    }
    if (d == NULL || d->task_id == NULL) {
        free(d);
        return;                        /* no memory: given up on later */
    }

    d->sv = sv;
    d->e = *e;
    d->e.task = NULL;
    d->e.len = 0;
    snprintf(d->why, sizeof(d->why), "%s", why);

    sv->writing++;
    rg_stream_dead(sv->queue, e, why, rg_serve_buried, d);
}


/* a parked task: on the list of parked tasks, then its entry
 * acknowledged without a result (it is not final); its session is gone */
typedef struct {
    rg_serve_t         *sv;
    rg_uint_t           shard;
    char                entry[48];
} rg_serve_parked_t;


static void
rg_serve_park_acked(void *data, const char *err)
{
    rg_serve_answered(data, err, RG_LOG_WARN, "queue: a parked task's entry "
                      "was not acknowledged (%s): it parks again where it "
                      "is taken over");
}


static void
rg_serve_park_listed(void *data, const char *err)
{
    rg_serve_t         *sv;
    rg_serve_parked_t  *p;

    p = data;
    sv = p->sv;

    if (err == NULL && !sv->exiting) {
        rg_stream_ack(sv->queue, p->shard, p->entry, rg_serve_park_acked,
                      sv);
        free(p);
        return;
    }

    free(p);
    rg_serve_answered(sv, err, RG_LOG_WARN, "queue: a parked task was not "
                      "listed (%s): its entry stays, and it parks again "
                      "where it is taken over");
}


void
rg_serve_park(rg_serve_t *sv, rg_serve_task_t *t, rg_msec_t deadline)
{
    rg_serve_parked_t  *p;

    sv->parked++;

    p = calloc(1, sizeof(rg_serve_parked_t));
    if (p == NULL) {
        return;                        /* taken over later: parks again */
    }

    p->sv = sv;
    p->shard = t->shard;
    snprintf(p->entry, sizeof(p->entry), "%s", t->entry);

    rg_serve_keep(sv, t->task_id, t->sid, t->shard, NULL, 0);

    sv->writing++;
    rg_approval_watch(sv->queue, t->task_id, deadline,
                      rg_serve_park_listed, p);
}
