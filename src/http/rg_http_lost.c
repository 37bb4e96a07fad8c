/* rg_http_lost.c: the tasks this worker's API put on the queue,
 * remembered (the last RG_HTTP_LOST_KEPT, within session_ttl) for the
 * day the store loses its memory. A task queued and not yet taken was
 * only in the store: nobody can run it again, but the API that accepted
 * it can name it. Once the workers had time to write back what they hold
 * (twice lease_ttl, and a little), each remembered task that has nothing
 * left in the store (no mark, no session, no result: nobody wrote it
 * back nor queued it again) is named lost, on the log, in the metrics
 * and on the queue's list of losses (rg_stream_lost.c), which /readyz
 * and `reagent queue` show. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_http.h>
#include <rg_http_tasks.h>
#include <rg_stream.h>
#include <rg_store.h>
#include <rg_store_conf.h>
#include <rg_agent.h>
#include <rg_metrics.h>
#include <rg_json_write.h>
#include <jansson.h>


#define RG_HTTP_LOST_KEPT    4096
#define RG_HTTP_LOST_NAMED   50       /* ids a record names */


typedef struct {
    char               *id;
    rg_msec_t           at;           /* wall clock */
} rg_http_accepted_t;


struct rg_http_lost_s {
    rg_http_tasks_t    *ts;
    rg_http_accepted_t  ring[RG_HTTP_LOST_KEPT];
    rg_uint_t           n;
    rg_uint_t           next;         /* the oldest, once full */
    struct event       *ev;           /* the look, after the holders' time */
    rg_uint_t           asking;       /* answers to come */
    rg_uint_t           gone;
    json_t             *named;
    char                ids[512];
    size_t              off;
};


void
rg_http_lost_accepted(rg_http_tasks_t *ts, const char *id)
{
    rg_http_lost_t      *l;
    rg_http_accepted_t  *a;

    l = ts->lost;
    if (l == NULL) {
        return;
    }

    a = &l->ring[(l->next + l->n) % RG_HTTP_LOST_KEPT];

    if (l->n == RG_HTTP_LOST_KEPT) {
        a = &l->ring[l->next];
        l->next = (l->next + 1) % RG_HTTP_LOST_KEPT;
        l->n--;
    }

    free(a->id);
    a->id = strdup(id);
    a->at = rg_wall_msec();

    if (a->id) {
        l->n++;
    }
}


static void
rg_http_lost_noted(void *data, const char *err)
{
    rg_http_lost_t  *l;

    l = data;

    if (err) {
        rg_log_error(RG_LOG_WARN, l->ts->h->engine->log, 0, "http: the "
                     "record of the tasks lost with the store was not "
                     "written (%s)", err);
    }
}


static void
rg_http_lost_said(rg_http_lost_t *l)
{
    char         *text;
    json_t       *o;
    rg_engine_t  *e;

    e = l->ts->h->engine;

    if (l->gone) {
        rg_metrics_task(RG_METRICS_TASK_FORGOTTEN, l->gone);

        rg_log_error(RG_LOG_ERR, e->log, 0, "http: the store lost its "
                     "memory, and with it %lu task%s this worker's API "
                     "queued that no worker held (nothing of %s is left: "
                     "if %s ran, %s result is gone too; submit %s again): "
                     "%s%s", (unsigned long) l->gone, l->gone == 1 ? "" : "s",
                     l->gone == 1 ? "it" : "them",
                     l->gone == 1 ? "it" : "one",
                     "its", l->gone == 1 ? "it" : "them", l->ids,
                     l->gone > RG_HTTP_LOST_NAMED ? ", …" : "");

        o = json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:O, s:s}",
                      "at", (json_int_t) rg_wall_msec(),
                      "worker", rg_agent_ctx(e)->worker,
                      "epoch", l->ts->store->epoch.id,
                      "sessions_written_back", (json_int_t) 0,
                      "results_written_again", (json_int_t) 0,
                      "lost_count", (json_int_t) l->gone,
                      "lost", l->named,
                      "note", "queued through the API and not taken by a "
                              "worker before the store forgot them: submit "
                              "them again");
        text = o ? rg_json_dumps(o, JSON_COMPACT, NULL) : NULL;
        json_decref(o);

        if (text) {
            rg_stream_note_loss(l->ts->queue, text, strlen(text),
                                rg_http_lost_noted, l);
            free(text);
        }
    }

    json_decref(l->named);
    l->named = NULL;
}


/* one task's look: {the look, its id} */
typedef struct {
    rg_http_lost_t     *l;
    char               *id;
} rg_http_look_t;


static void
rg_http_lost_exists(void *data, redisReply *reply, const char *err)
{
    rg_http_look_t  *k;
    rg_http_lost_t  *l;

    k = data;
    l = k->l;

    /* nothing of it: its mark, its session and its result are gone (an
     * error says nothing: it is not named) */
    if (err == NULL && reply->type == REDIS_REPLY_INTEGER
        && reply->integer == 0)
    {
        l->gone++;

        if (l->gone <= RG_HTTP_LOST_NAMED) {
            if (l->named) {
                json_array_append_new(l->named, json_string(k->id));
            }
            if (l->off < sizeof(l->ids) - 80) {
                l->off += snprintf(l->ids + l->off, sizeof(l->ids) - l->off,
                                   "%s%s", l->off ? ", " : "", k->id);
            }
        }
    }

    free(k->id);
    free(k);

    if (--l->asking == 0) {
        rg_http_lost_said(l);
    }
}


/* the holders had their time: what is left of each task */
static void
rg_http_lost_look(evutil_socket_t fd, short what, void *arg)
{
    char             *keys[3];
    size_t            lens[4];
    rg_str_t          tag;
    rg_uint_t         i, j;
    rg_msec_t         now, ttl;
    const char       *argv[4];
    rg_http_look_t   *k;
    rg_http_lost_t   *l;
    rg_http_accepted_t  *a;

    l = arg;

    if (l->asking) {
        return;                       /* a look is under way */
    }

    now = rg_wall_msec();
    ttl = rg_store_session_ttl(l->ts->h->engine);
    l->gone = 0;
    l->off = 0;
    l->ids[0] = '\0';
    l->named = json_array();
    l->asking = 1;                    /* held while asking */

    for (i = 0; i < l->n; i++) {
        a = &l->ring[(l->next + i) % RG_HTTP_LOST_KEPT];

        if (a->id == NULL || now - a->at > ttl) {
            continue;
        }

        keys[0] = rg_stream_task_key(l->ts->queue, a->id, ":task");
        keys[1] = rg_stream_task_key(l->ts->queue, a->id, ":meta");
        keys[2] = rg_stream_task_key(l->ts->queue, a->id, ":result");
        k = calloc(1, sizeof(rg_http_look_t));
        if (k) {
            k->l = l;
            k->id = strdup(a->id);
        }

        if (keys[0] && keys[1] && keys[2] && k && k->id) {
            /* one slot: the three share the session's hash tag */
            argv[0] = "EXISTS";
            lens[0] = 6;
            for (j = 0; j < 3; j++) {
                argv[j + 1] = keys[j];
                lens[j + 1] = strlen(keys[j]);
            }
            tag = rg_stream_key_tag(keys[0]);

            if (rg_redis_command(l->ts->redis, &tag, 0, rg_http_lost_exists,
                                 k, 4, argv, lens))
            {
                l->asking++;
                k = NULL;
            }
        }

        if (k) {
            free(k->id);
            free(k);
        }

        for (j = 0; j < 3; j++) {
            free(keys[j]);
        }
    }

    if (--l->asking == 0) {
        rg_http_lost_said(l);
    }
}


/* the store lost its memory: a look once the holders had their time */
static void
rg_http_store_lost(void *data, rg_store_t *st)
{
    rg_msec_t        wait;
    rg_http_lost_t  *l;
    struct timeval   tv;

    l = data;

    wait = 2 * rg_store_lease_ttl(l->ts->h->engine) + 2000;
    tv.tv_sec = wait / 1000;
    tv.tv_usec = (wait % 1000) * 1000;
    evtimer_add(l->ev, &tv);
}


rg_int_t
rg_http_lost_init(rg_http_tasks_t *ts)
{
    rg_http_lost_t  *l;

    if (ts->queue == NULL || !ts->store->durable) {
        return RG_OK;                 /* nothing queued, nothing to lose */
    }

    l = calloc(1, sizeof(rg_http_lost_t));
    if (l == NULL) {
        return RG_ERROR;
    }

    l->ts = ts;
    l->ev = evtimer_new(ts->h->engine->base, rg_http_lost_look, l);

    if (l->ev == NULL
        || rg_store_watch(ts->store, rg_http_store_lost, l) != RG_OK)
    {
        if (l->ev) {
            event_free(l->ev);
        }
        free(l);
        return RG_ERROR;
    }

    ts->lost = l;

    return RG_OK;
}


void
rg_http_lost_exit(rg_http_tasks_t *ts)
{
    rg_uint_t        i;
    rg_http_lost_t  *l;

    l = ts->lost;
    if (l == NULL) {
        return;
    }

    rg_store_unwatch(ts->store, rg_http_store_lost, l);
    event_free(l->ev);

    for (i = 0; i < RG_HTTP_LOST_KEPT; i++) {
        free(l->ring[i].id);
    }

    json_decref(l->named);
    free(l);
    ts->lost = NULL;
}
