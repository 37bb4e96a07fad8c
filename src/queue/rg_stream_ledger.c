/* rg_stream_ledger.c: the tasks a serve worker's process put on the
 * queue (its API) or took from it, remembered (the last
 * RG_STREAM_LEDGER_KEPT, within session_ttl) for the day the store loses
 * its memory. A task queued and not yet taken, or held by a worker that
 * died, was only in the store: nobody runs it again, but the worker that
 * accepted or took it can name it. When this worker finds a loss it
 * hands the ids over to the store and looks itself once the workers had
 * time to write back what they hold (twice lease_ttl, and 2 s); should it
 * stop before (a drain, a master killed), any worker alive a lease later
 * takes the look from the store (rg_stream_lost.c). The look names each
 * task that has nothing left in the store (no record, session nor
 * result: nobody wrote it back nor queued it again) lost: its result says
 * so (status "lost", for GET /v1/tasks/ID), and the log, the metrics and
 * the queue's list of losses, which /readyz and `reagent queue` show. A
 * task named is named once: its result is there for a later look, and
 * this worker forgets it.
 *
 * The ids are written down too, beside the pid file ("PID.ledger.SLOT", a
 * line each, as the access log is: a write of a line), so that the
 * worker that takes the slot of one killed knows what it had accepted
 * or taken, and looks at them: a loss that comes after the kill still
 * names them. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_stream.h>
#include <rg_queue_conf.h>
#include <rg_store.h>
#include <rg_store_conf.h>
#include <rg_agent.h>
#include <rg_metrics.h>
#include <rg_json_write.h>
#include <jansson.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>


#define RG_STREAM_LEDGER_KEPT   4096
#define RG_STREAM_LEDGER_NAMED  50        /* ids a record names */


typedef struct {
    char               *id;
    rg_msec_t           at;           /* wall clock */
} rg_stream_noted_t;


typedef struct rg_stream_ledger_s  rg_stream_ledger_t;

struct rg_stream_ledger_s {
    rg_engine_t        *e;
    rg_stream_t        *q;            /* its own connections */
    rg_store_t         *st;
    rg_stream_noted_t   ring[RG_STREAM_LEDGER_KEPT];
    rg_uint_t           n;
    rg_uint_t           next;         /* the oldest, once full */
    struct event       *ev;           /* the next take (or own look) */
    json_t             *own;          /* this worker's look, when due */
    char               *own_text;     /* as handed over (NULL: not) */
    rg_msec_t           own_due;
    rg_uint_t           own_look:1;   /* the look under way is own */
    rg_uint_t           taking:1;     /* a take asked, not answered */
    rg_uint_t           dropping:1;
    rg_uint_t           exiting:1;    /* stopping: answers do nothing */
    rg_uint_t           journal_read:1;
    int                 journal;      /* the ids written down; -1 */
    rg_uint_t           journal_lines;
    char                journal_path[PATH_MAX];
    rg_uint_t           asking;       /* answers to come */
    rg_uint_t           noting;       /* records written */
    rg_uint_t           handing;      /* looks handed over */
    rg_uint_t           gone;
    json_t             *named;
    char                whose[160];   /* the worker that queued them */
    char                ids[512];
    size_t              off;
};


static void rg_stream_ledger_later(rg_stream_ledger_t *l, rg_msec_t ms);
static void rg_stream_ledger_free(rg_stream_ledger_t *l);
static void rg_stream_ledger_forget(rg_stream_ledger_t *l, const char *id);


/* its stream, closing, calls back what it still holds: nothing more is
 * done (rg_stream_ledger_stop frees it after) */
static rg_uint_t
rg_stream_ledger_gone(rg_stream_ledger_t *l)
{
    return l->exiting;
}


static void
rg_stream_ledger_keep(rg_stream_ledger_t *l, const char *id, rg_msec_t at)
{
    rg_stream_noted_t  *a;

    a = &l->ring[(l->next + l->n) % RG_STREAM_LEDGER_KEPT];

    if (l->n == RG_STREAM_LEDGER_KEPT) {
        a = &l->ring[l->next];
        l->next = (l->next + 1) % RG_STREAM_LEDGER_KEPT;
        l->n--;
    }

    free(a->id);
    a->id = strdup(id);
    a->at = at;

    if (a->id) {
        l->n++;
    }
}


/* the ring written down anew (the file only grows between): a new file
 * renamed over the old one */
static void
rg_stream_ledger_compact(rg_stream_ledger_t *l)
{
    int                 fd;
    char                tmp[PATH_MAX + 8];
    FILE               *f;
    rg_uint_t           i;
    rg_stream_noted_t  *a;

    snprintf(tmp, sizeof(tmp), "%s.new", l->journal_path);

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return;
    }

    l->journal_lines = 0;
    for (i = 0; i < l->n; i++) {
        a = &l->ring[(l->next + i) % RG_STREAM_LEDGER_KEPT];
        if (a->id) {
            fprintf(f, "%llu %s\n", (unsigned long long) a->at, a->id);
            l->journal_lines++;
        }
    }

    if (fclose(f) == 0 && rename(tmp, l->journal_path) == 0) {
        close(l->journal);
        l->journal = open(l->journal_path,
                          O_WRONLY | O_APPEND | O_CLOEXEC);
    } else {
        unlink(tmp);
    }
}


/* the ids the worker in this slot before this one wrote down (killed:
 * nothing else knows them), then this worker's own: once, when the pid
 * file's place is known */
static void
rg_stream_ledger_journal(rg_stream_ledger_t *l)
{
    char         *line, *sp;
    FILE         *f;
    size_t        cap;
    json_t       *ids;
    ssize_t       len;
    rg_msec_t     now, ttl, at, wait;
    rg_store_t   *st;
    rg_engine_t  *e;

    if (l->journal_read) {
        return;
    }

    e = l->e;
    st = l->st;

    /* "PID.epoch", set by serve once its worker's engine exists */
    len = (ssize_t) strlen(st->epoch.file);
    if (len <= 6 || strcmp(st->epoch.file + len - 6, ".epoch") != 0) {
        return;
    }

    l->journal_read = 1;
    snprintf(l->journal_path, sizeof(l->journal_path), "%.*s.ledger.%lu",
             (int) (len - 6), st->epoch.file, (unsigned long) e->worker);

    now = rg_wall_msec();
    ttl = rg_store_session_ttl(e);
    wait = 2 * rg_store_lease_ttl(e) + 2000;
    ids = json_array();

    f = fopen(l->journal_path, "re");
    if (f) {
        line = NULL;
        cap = 0;

        while ((len = getline(&line, &cap, f)) > 0) {
            if (line[len - 1] == '\n') {
                line[len - 1] = '\0';
            }

            at = strtoull(line, &sp, 10);
            if (*sp != ' ' || sp[1] == '\0' || now - at > ttl) {
                continue;
            }

            rg_stream_ledger_keep(l, sp + 1, at);

            if (ids && now - at + wait + 60000 <= ttl) {
                json_array_append_new(ids, json_string(sp + 1));
            }
        }

        free(line);
        fclose(f);
    }

    /* the one before in this slot may have been killed, and the store may
     * have lost its memory since, told to a sibling first (a loss while
     * no worker ran is said once): what it accepted is looked at, once
     * the holders had their time */
    if (json_array_size(ids) && l->own == NULL) {
        l->own = json_pack("{s:s, s:o}", "worker", rg_agent_ctx(e)->worker,
                           "ids", ids);
        l->own_due = now + wait;
        ids = NULL;
        rg_stream_ledger_later(l, wait);
    }

    json_decref(ids);

    l->journal = open(l->journal_path,
                      O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (l->journal < 0) {
        rg_log_error(RG_LOG_WARN, e->log, errno, "queue: the tasks this "
                     "worker's API accepts cannot be written down in \"%s\" "
                     "(a loss after this worker is killed will not name "
                     "them)", l->journal_path);
        return;
    }

    rg_stream_ledger_compact(l);
}


void
rg_stream_ledger_note(rg_engine_t *e, const char *id)
{
    int                  n;
    char                 line[320];
    rg_msec_t            now;
    rg_stream_ledger_t  *l;

    l = rg_engine_ctx(e, &rg_queue_part);
    if (l == NULL) {
        return;                       /* not a serve worker's */
    }

    rg_stream_ledger_journal(l);

    now = rg_wall_msec();
    rg_stream_ledger_keep(l, id, now);

    if (l->journal < 0) {
        return;
    }

    /* one write of a line, as the access log's */
    n = snprintf(line, sizeof(line), "%llu %s\n", (unsigned long long) now,
                 id);
    if (n > 0 && (size_t) n < sizeof(line)
        && write(l->journal, line, (size_t) n) == n
        && ++l->journal_lines > 2 * RG_STREAM_LEDGER_KEPT)
    {
        rg_stream_ledger_compact(l);
    }
}


static void
rg_stream_ledger_noted(void *data, const char *err)
{
    rg_stream_ledger_t  *l;

    l = data;
    l->noting--;

    if (rg_stream_ledger_gone(l)) {
        return;
    }

    if (err) {
        rg_log_error(RG_LOG_WARN, l->e->log, 0, "queue: the "
                     "record of the tasks lost with the store was not "
                     "written (%s)", err);
    }
}


static void
rg_stream_ledger_dropped(void *data, redisReply *reply, const char *err)
{
    rg_stream_ledger_t  *l;

    l = data;
    l->dropping = 0;

    rg_stream_ledger_gone(l);
}


static void
rg_stream_ledger_said(rg_stream_ledger_t *l)
{
    char         *text;
    json_t       *o;
    rg_uint_t     own;
    rg_engine_t  *e;

    e = l->e;
    own = strcmp(l->whose, rg_agent_ctx(e)->worker) == 0;

    if (l->gone) {
        rg_metrics_task(RG_METRICS_TASK_FORGOTTEN, l->gone);

        rg_log_error(RG_LOG_ERR, e->log, 0, "queue: %lu task%s that %s%s%s "
                     "queued or took %s lost with the store's memory (no "
                     "worker holds %s and nothing of %s is left: if %s ran, "
                     "%s result is gone too; submit %s again): %s%s",
                     (unsigned long) l->gone, l->gone == 1 ? "" : "s",
                     own ? "this" : "worker ", own ? "" : l->whose,
                     own ? " worker" : "",
                     l->gone == 1 ? "was" : "were",
                     l->gone == 1 ? "it" : "them",
                     l->gone == 1 ? "it" : "them",
                     l->gone == 1 ? "it" : "one",
                     "its",
                     l->gone == 1 ? "it" : "them", l->ids,
                     l->gone > RG_STREAM_LEDGER_NAMED ? ", …" : "");

        o = json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:O, s:s}",
                      "at", (json_int_t) rg_wall_msec(),
                      "worker", l->whose,
                      "epoch", l->st->epoch.id,
                      "sessions_written_back", (json_int_t) 0,
                      "results_written_again", (json_int_t) 0,
                      "lost_count", (json_int_t) l->gone,
                      "lost", l->named,
                      "note", "queued or taken by this worker (its API, "
                              "its reads) and held by no worker when the "
                              "store forgot them: submit them again");
        text = o ? rg_json_dumps(o, JSON_COMPACT, NULL) : NULL;
        json_decref(o);

        if (text) {
            l->noting++;
            rg_stream_note_loss(l->q, text, strlen(text),
                                rg_stream_ledger_noted, l);
        }
        free(text);
    }

    json_decref(l->named);
    l->named = NULL;

    /* looked: nobody else need */
    if (l->own_look && l->own_text && !l->dropping) {
        l->dropping = 1;

        if (rg_stream_drop_look(l->q, l->own_text,
                                strlen(l->own_text), rg_stream_ledger_dropped, l)
            == NULL)
        {
            l->dropping = 0;
        }
    }

    /* those it named are written down no more */
    if (l->own_look && l->gone && l->journal >= 0) {
        rg_stream_ledger_compact(l);
    }

    l->own_look = 0;
    free(l->own_text);
    l->own_text = NULL;

    /* another may be due */
    rg_stream_ledger_later(l, 0);
}


/* a task named lost by this worker's own look: a later loss would find
 * its result gone and name it again */
static void
rg_stream_ledger_forget(rg_stream_ledger_t *l, const char *id)
{
    rg_uint_t           i;
    rg_stream_noted_t  *a;

    for (i = 0; i < l->n; i++) {
        a = &l->ring[(l->next + i) % RG_STREAM_LEDGER_KEPT];

        if (a->id && strcmp(a->id, id) == 0) {
            free(a->id);
            a->id = NULL;
        }
    }
}


/* one task's look: {the look, its id} */
typedef struct {
    rg_stream_ledger_t *l;
    char               *id;
} rg_stream_look_t;


static void
rg_stream_ledger_exists(void *data, redisReply *reply, const char *err)
{
    rg_stream_look_t    *k;
    rg_stream_ledger_t  *l;

    k = data;
    l = k->l;

    if (l->exiting) {
        free(k->id);
        free(k);
        l->asking--;
        rg_stream_ledger_gone(l);
        return;
    }

    /* nothing of it: its session and its result were gone, and it has
     * one now that says so (an error says nothing: it is not named) */
    if (err == NULL && reply->type == REDIS_REPLY_INTEGER
        && reply->integer == 0)
    {
        l->gone++;

        if (l->own_look) {
            rg_stream_ledger_forget(l, k->id);
        }

        if (l->gone <= RG_STREAM_LEDGER_NAMED) {
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
        rg_stream_ledger_said(l);
    }
}


/* the holders had their time: what is left of each task of a look
 * ({"worker", "ids"}) */
static void
rg_stream_ledger_look(rg_stream_ledger_t *l, json_t *look)
{
    char              *text;
    size_t             i;
    json_t            *id, *o;
    const char        *whose;
    rg_stream_look_t  *k;

    whose = json_string_value(json_object_get(look, "worker"));
    snprintf(l->whose, sizeof(l->whose), "%s", whose ? whose : "a worker");

    l->gone = 0;
    l->off = 0;
    l->ids[0] = '\0';
    l->named = json_array();
    l->asking = 1;                    /* held while asking */

    json_array_foreach(json_object_get(look, "ids"), i, id) {
        if (!json_is_string(id)) {
            continue;
        }

        /* its result says it, to whoever asks for the task */
        o = json_pack("{s:s, s:s, s:n, s:i, s:i, s:i, s:s}",
                      "id", json_string_value(id), "status", "lost",
                      "answer", "rounds", 0, "tokens", 0, "ms", 0,
                      "error", "the store lost its memory while no worker "
                      "held this task: nothing of it is left (if it ran, "
                      "its result is gone too); submit it again");
        text = o ? rg_json_dumps(o, JSON_COMPACT, NULL) : NULL;
        json_decref(o);

        k = calloc(1, sizeof(rg_stream_look_t));
        if (k) {
            k->l = l;
            k->id = strdup(json_string_value(id));
        }

        if (text && k && k->id
            && rg_stream_lost_task(l->q, k->id, text, strlen(text),
                                   rg_stream_ledger_exists, k))
        {
            l->asking++;
            k = NULL;
        }

        if (k) {
            free(k->id);
            free(k);
        }
        free(text);
    }

    if (--l->asking == 0) {
        rg_stream_ledger_said(l);
    }
}


/* a take answered: a look (now this worker's), when the next is due, or
 * none; an error is asked again a lease later */
static void
rg_stream_ledger_taken(void *data, redisReply *reply, const char *err)
{
    json_t              *look;
    rg_msec_t            now;
    rg_stream_ledger_t  *l;

    l = data;
    l->taking = 0;

    if (rg_stream_ledger_gone(l)) {
        return;
    }

    if (err) {
        rg_stream_ledger_later(l, rg_store_lease_ttl(l->e));
        return;
    }

    if (reply->type == REDIS_REPLY_INTEGER) {
        now = rg_wall_msec();
        rg_stream_ledger_later(l, (rg_msec_t) reply->integer > now
                              ? (rg_msec_t) reply->integer - now : 0);
        return;
    }

    if (reply->type != REDIS_REPLY_STRING) {
        return;                       /* none waits */
    }

    look = json_loadb(reply->str, reply->len, 0, NULL);

    if (!json_is_object(look)) {
        rg_log_error(RG_LOG_WARN, l->e->log, 0, "queue: a look "
                     "at the tasks a loss took was not readable: dropped");
        json_decref(look);
        rg_stream_ledger_later(l, 0);
        return;
    }

    rg_stream_ledger_look(l, look);
    json_decref(look);
}


/* the timer: this worker's own look when due, else a take */
static void
rg_stream_ledger_tick(evutil_socket_t fd, short what, void *arg)
{
    rg_msec_t            now;
    rg_stream_ledger_t  *l;

    l = arg;

    rg_stream_ledger_journal(l);

    if (l->asking || l->taking) {
        return;                       /* a look or a take is under way */
    }

    if (l->own) {
        now = rg_wall_msec();

        if (now < l->own_due) {
            rg_stream_ledger_later(l, l->own_due - now);
            return;
        }

        l->own_look = 1;
        rg_stream_ledger_look(l, l->own);
        json_decref(l->own);
        l->own = NULL;
        return;
    }

    l->taking = 1;

    if (rg_stream_take_look(l->q, rg_wall_msec(), rg_stream_ledger_taken,
                            l) == NULL)
    {
        l->taking = 0;
        rg_stream_ledger_later(l, rg_store_lease_ttl(l->e));
    }
}


static void
rg_stream_ledger_later(rg_stream_ledger_t *l, rg_msec_t ms)
{
    struct timeval  tv;

    if (l->exiting) {
        return;
    }

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    evtimer_add(l->ev, &tv);
}


/* a look handed over: any worker takes it when due (this one too) */
typedef struct {
    rg_stream_ledger_t *l;
    json_t             *look;
    char               *text;
    rg_msec_t           due;
} rg_stream_hand_t;


static void
rg_stream_ledger_handed(void *data, redisReply *reply, const char *err)
{
    rg_msec_t            now;
    rg_stream_hand_t    *hd;
    rg_stream_ledger_t  *l;

    hd = data;
    l = hd->l;
    l->handing--;
    rg_engine_release(l->e);

    if (rg_stream_ledger_gone(l)) {
        json_decref(hd->look);
        free(hd->text);
        free(hd);
        return;
    }

    if (err) {
        rg_log_error(RG_LOG_WARN, l->e->log, 0, "queue: the "
                     "look at the tasks the loss took was not handed to "
                     "the store (%s): only this worker can make it", err);
        free(hd->text);
        hd->text = NULL;
    }

    /* the newest loss's look holds every id the one before would */
    json_decref(l->own);
    free(l->own_text);
    l->own = hd->look;
    l->own_text = hd->text;
    l->own_due = hd->due;

    now = rg_wall_msec();
    rg_stream_ledger_later(l, hd->due > now ? hd->due - now : 0);

    free(hd);
}


/* the store lost its memory: the tasks this API queued before, handed
 * over with when to look */
static void
rg_stream_ledger_store_lost(void *data, rg_store_t *st)
{
    json_t              *ids;
    rg_uint_t            i;
    rg_msec_t            now, ttl, wait;
    rg_engine_t         *e;
    rg_stream_hand_t    *hd;
    rg_stream_ledger_t  *l;
    rg_stream_noted_t   *a;

    l = data;
    e = l->e;
    now = rg_wall_msec();
    ttl = rg_store_session_ttl(e);
    wait = 2 * rg_store_lease_ttl(e) + 2000;

    rg_stream_ledger_journal(l);

    ids = json_array();
    for (i = 0; ids && i < l->n; i++) {
        a = &l->ring[(l->next + i) % RG_STREAM_LEDGER_KEPT];

        /* its mark still there when looked at: else nothing left says
         * nothing */
        if (a->id && now - a->at + wait + 60000 <= ttl) {
            json_array_append_new(ids, json_string(a->id));
        }
    }

    if (ids == NULL || json_array_size(ids) == 0) {
        json_decref(ids);
        rg_stream_ledger_later(l, wait);  /* another's look may come */
        return;
    }

    hd = calloc(1, sizeof(rg_stream_hand_t));
    if (hd) {
        hd->l = l;
        hd->due = now + wait;
        hd->look = json_pack("{s:s, s:s, s:o}", "worker",
                             rg_agent_ctx(e)->worker, "epoch", st->epoch.id,
                             "ids", ids);
        ids = NULL;
    }

    json_decref(ids);

    if (hd == NULL || hd->look == NULL) {
        if (hd) {
            json_decref(hd->look);
            free(hd);
        }
        rg_log_error(RG_LOG_WARN, e->log, 0, "queue: no look at the tasks "
                     "the loss took (out of memory)");
        return;
    }

    hd->text = rg_json_dumps(hd->look, JSON_COMPACT, NULL);

    /* a drain waits for it: the look outlives this worker; the others
     * take it a lease after this one would have */
    l->handing++;
    rg_engine_hold(e);

    if (hd->text == NULL
        || rg_stream_hand_look(l->q, hd->text, strlen(hd->text),
                               hd->due + rg_store_lease_ttl(e), ttl + wait,
                               rg_stream_ledger_handed, hd) == NULL)
    {
        rg_stream_ledger_handed(hd, NULL, "out of memory");
    }
}


rg_int_t
rg_stream_ledger_start(rg_engine_t *e)
{
    char                 name[160];
    rg_store_t          *st;
    rg_stream_ledger_t  *l;

    st = rg_store_ctx(e);
    if (st == NULL || !st->durable || rg_engine_ctx(e, &rg_queue_part)) {
        return RG_OK;                 /* nothing queued, nothing to lose */
    }

    l = calloc(1, sizeof(rg_stream_ledger_t));
    if (l == NULL) {
        return RG_ERROR;
    }

    snprintf(name, sizeof(name), "%s-ledger", rg_agent_ctx(e)->worker);

    l->e = e;
    l->st = st;
    l->journal = -1;
    l->q = rg_stream_create(e, name);
    l->ev = evtimer_new(e->base, rg_stream_ledger_tick, l);

    if (l->q == NULL || l->ev == NULL
        || rg_store_watch(st, rg_stream_ledger_store_lost, l) != RG_OK)
    {
        if (l->ev) {
            event_free(l->ev);
        }
        rg_stream_destroy(l->q);
        free(l);
        return RG_ERROR;
    }

    rg_engine_ctx(e, &rg_queue_part) = l;

    /* what this slot's worker before wrote down, and a look handed over
     * by a worker that stopped since */
    rg_stream_ledger_later(l, 0);

    return RG_OK;
}


static void
rg_stream_ledger_free(rg_stream_ledger_t *l)
{
    rg_uint_t  i;

    event_free(l->ev);
    json_decref(l->own);
    free(l->own_text);

    if (l->journal >= 0) {
        close(l->journal);
    }

    for (i = 0; i < RG_STREAM_LEDGER_KEPT; i++) {
        free(l->ring[i].id);
    }

    json_decref(l->named);
    free(l);
}


void
rg_stream_ledger_stop(rg_engine_t *e)
{
    rg_stream_ledger_t  *l;

    l = rg_engine_ctx(e, &rg_queue_part);
    if (l == NULL) {
        return;
    }

    rg_engine_ctx(e, &rg_queue_part) = NULL;
    rg_store_unwatch(l->st, rg_stream_ledger_store_lost, l);
    evtimer_del(l->ev);
    l->exiting = 1;

    /* what is in flight is answered now, and finds it exiting */
    rg_stream_destroy(l->q);
    l->q = NULL;

    rg_stream_ledger_free(l);
}
