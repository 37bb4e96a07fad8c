/* rg_stream_cli.c: the queue's commands. `reagent submit` puts JSONL
 * tasks on the queue (an id is the task's key: a second submit of it is
 * reported, not queued again; its mark is set around its entry as
 * rg_stream.h says), `--wait` follows their results under a progress bar
 * (rg_progress.h) and queues again the tasks a Redis restarted without
 * its data lost; `reagent results [--follow]` prints the results stream;
 * `reagent queue` shows each shard's depth, pending entries per consumer,
 * dead letters and the workers reading. They are short-lived clients,
 * not workers (RG_CLI_CLIENT: no secret of the daemon's, the log on
 * stderr): each waits for its Redis answers on a reactor of its own that
 * runs nothing else. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_queue_conf.h>
#include <rg_store_conf.h>
#include <rg_stream.h>
#include <rg_digest.h>
#include <rg_task.h>
#include <rg_progress.h>
#include <jansson.h>
#include <sys/random.h>


typedef struct {
    const char         *agent;        /* -a */
    const char         *output;       /* -o */
    rg_uint_t           wait;         /* --wait */
    rg_uint_t           follow;       /* --follow */
    rg_uint_t           progress;     /* 0: when stderr is a terminal,
                                         1: --progress, 2: --no-progress */
} rg_stream_cli_opts_t;


/* one command, its answer ---------------------------------------------- */

typedef struct {
    rg_uint_t           done;
    rg_uint_t          *left;         /* a pipeline's count, or NULL */
    redisReply         *reply;        /* moved out of hiredis's */
    char                err[256];
} rg_stream_wait_t;


static void
rg_stream_cli_reply(void *data, redisReply *reply, const char *err)
{
    rg_stream_wait_t  *w;

    w = data;
    w->done = 1;

    if (w->left) {
        (*w->left)--;
    }

    if (err) {
        snprintf(w->err, sizeof(w->err), "%s", err);
        return;
    }

    w->reply = calloc(1, sizeof(redisReply));
    if (w->reply) {
        *w->reply = *reply;
        reply->type = REDIS_REPLY_NIL;
        reply->element = NULL;
        reply->elements = 0;
        reply->str = NULL;
        reply->len = 0;
    }
}


/* sends argv and runs the loop until it is answered: NULL with err */
static redisReply *
rg_stream_cli_call(rg_engine_t *e, rg_redis_t *r, const char *key,
    char *err, size_t errlen, int argc, const char **argv,
    const size_t *lens0)
{
    int                i;
    size_t             lens[32];
    rg_str_t           tag;
    const char        *a, *b;
    rg_stream_wait_t   w;

    if (argc > (int) rg_nelems(lens)) {
        snprintf(err, errlen, "too many arguments");
        return NULL;
    }

    for (i = 0; i < argc; i++) {
        lens[i] = lens0 ? lens0[i] : strlen(argv[i]);
    }

    a = strchr(key, '{');
    b = a ? strchr(a + 1, '}') : NULL;
    tag.data = (char *) (a && b ? a + 1 : key);
    tag.len = a && b ? (size_t) (b - a - 1) : strlen(key);

    memset(&w, 0, sizeof(w));

    if (rg_redis_command(r, &tag, 0, rg_stream_cli_reply, &w, argc, argv,
                         lens) == NULL)
    {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    while (!w.done && event_base_loop(e->base, EVLOOP_ONCE) == 0) {
        /* the answer comes */
    }

    if (!w.done || w.reply == NULL) {
        snprintf(err, errlen, "%s", w.err[0] ? w.err : "no answer");
        return NULL;
    }

    return w.reply;
}


static void
rg_stream_cli_wake(evutil_socket_t fd, short what, void *arg)
{
    *(rg_uint_t *) arg = 1;
}


/* waits ms on the loop (the only work of this process) */
static void
rg_stream_cli_pause(rg_engine_t *e, rg_msec_t ms)
{
    rg_uint_t       woke;
    struct timeval  tv;

    woke = 0;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;

    if (event_base_once(e->base, -1, EV_TIMEOUT, rg_stream_cli_wake, &woke,
                        &tv) != 0)
    {
        return;
    }

    while (!woke && event_base_loop(e->base, EVLOOP_ONCE) == 0) {
        /* the timer comes */
    }
}


/* a command that may meet a Redis that restarts or a cluster that
 * settles: asked again a few times before it counts as failed */
static redisReply *
rg_stream_cli_retry(rg_engine_t *e, rg_redis_t *r, const char *key,
    char *err, size_t errlen, int argc, const char **argv,
    const size_t *lens)
{
    rg_uint_t    i;
    redisReply  *reply;

    for (i = 0; ; i++) {
        reply = rg_stream_cli_call(e, r, key, err, errlen, argc, argv, lens);
        if (reply || i == 4) {
            return reply;
        }

        rg_stream_cli_pause(e, 300 << i);
    }
}


/* commands sent together, answered in one round trip */
typedef struct {
    const char         *key;          /* the key whose hash tag it has */
    int                 argc;
    const char         *argv[8];
    size_t              lens[8];
    rg_stream_wait_t    w;
} rg_stream_cli_cmd_t;


/* sends every command before waiting for any, then runs the loop until
 * each is answered: its w.reply, or w.err */
static void
rg_stream_cli_pipeline(rg_engine_t *e, rg_redis_t *r,
    rg_stream_cli_cmd_t *cmds, rg_uint_t n)
{
    int        j;
    rg_str_t   tag;
    rg_uint_t  i, left;

    left = n;

    for (i = 0; i < n; i++) {
        memset(&cmds[i].w, 0, sizeof(rg_stream_wait_t));
        cmds[i].w.left = &left;
        tag = rg_stream_key_tag(cmds[i].key);

        for (j = 0; j < cmds[i].argc; j++) {
            cmds[i].lens[j] = strlen(cmds[i].argv[j]);
        }

        if (rg_redis_command(r, &tag, 0, rg_stream_cli_reply, &cmds[i].w,
                             cmds[i].argc, cmds[i].argv, cmds[i].lens)
            == NULL)
        {
            snprintf(cmds[i].w.err, sizeof(cmds[i].w.err), "out of memory");
            cmds[i].w.done = 1;
            left--;
        }
    }

    while (left && event_base_loop(e->base, EVLOOP_ONCE) == 0) {
        /* the answers come */
    }
}


/* the client: an engine for its reactor and the store's address */
typedef struct {
    rg_engine_t        *engine;
    rg_redis_t         *redis;
    rg_queue_conf_t    *qcf;
    const char         *prefix;
    char                results[256];
} rg_stream_client_t;


static rg_int_t
rg_stream_client_open(rg_cycle_t *cycle, rg_stream_client_t *c,
    const char *cmd)
{
    memset(c, 0, sizeof(rg_stream_client_t));

    c->qcf = rg_queue_conf(cycle);

    if (!c->qcf->declared) {
        fprintf(stderr, "reagent: %s needs a \"queue { }\" block and \"store "
                "redis { }\" in %s\n", cmd, cycle->conf_file);
        return RG_ERROR;
    }

    c->engine = rg_engine_create(cycle, cycle->log);
    if (c->engine == NULL) {
        fprintf(stderr, "reagent: %s: %s\n", cmd,
                cycle->errmsg[0] ? cycle->errmsg : "cannot start");
        return RG_ERROR;
    }

    c->redis = rg_store_redis_new(c->engine, 1,
                                  c->qcf->block
                                  + rg_store_conf(cycle)->command_timeout);
    if (c->redis == NULL) {
        rg_engine_destroy(c->engine);
        fprintf(stderr, "reagent: %s: out of memory\n", cmd);
        return RG_ERROR;
    }

    c->prefix = rg_store_prefix(cycle);
    snprintf(c->results, sizeof(c->results), "%s{q:%s}:results", c->prefix,
             c->qcf->stream.data);

    return RG_OK;
}


static void
rg_stream_client_close(rg_stream_client_t *c)
{
    rg_redis_destroy(c->redis);
    rg_engine_destroy(c->engine);
}


static char *
rg_stream_shard_key(rg_stream_client_t *c, rg_uint_t shard, const char *tail,
    char *buf, size_t size)
{
    snprintf(buf, size, "%s{q:%s:%lu}%s", c->prefix, c->qcf->stream.data,
             (unsigned long) shard, tail);
    return buf;
}


/* reads all of a file or stdin: a command line client, before any work */
static char *
rg_stream_slurp(const char *path, size_t *len)
{
    FILE    *f;
    char    *buf, *p;
    size_t   n, cap;

    f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (f == NULL) {
        return NULL;
    }

    cap = 65536;
    n = 0;
    buf = malloc(cap + 1);

    while (buf) {
        if (n == cap) {
            p = realloc(buf, cap * 2 + 1);
            if (p == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }

        size_t k = fread(buf + n, 1, cap - n, f);
        if (k == 0) {
            break;
        }
        n += k;
    }

    if (f != stdin) {
        fclose(f);
    }

    if (buf) {
        buf[n] = '\0';
        *len = n;
    }

    return buf;
}


/* results ---------------------------------------------------------------- */

/* the statuses of the results submit --wait saw, for its summary, and
 * their tokens and cost */
static json_t  *rg_stream_cli_statuses;
static int64_t  rg_stream_cli_tokens;
static double   rg_stream_cli_cost;


static void
rg_stream_cli_count(const char *text, size_t len)
{
    json_t      *r, *n;
    const char  *status;

    if (rg_stream_cli_statuses == NULL) {
        rg_stream_cli_statuses = json_object();
    }

    r = json_loadb(text, len, 0, NULL);
    status = json_string_value(json_object_get(r, "status"));

    if (status && rg_stream_cli_statuses) {
        n = json_object_get(rg_stream_cli_statuses, status);
        json_object_set_new(rg_stream_cli_statuses, status,
                            json_integer(n ? json_integer_value(n) + 1 : 1));
    }

    rg_stream_cli_tokens += json_integer_value(json_object_get(r, "tokens"));
    rg_stream_cli_cost += json_number_value(json_object_get(r, "cost"));

    json_decref(r);
}


static rg_uint_t
rg_stream_cli_status_count(const char *status)
{
    json_t  *n;

    n = json_object_get(rg_stream_cli_statuses, status);

    return n ? (rg_uint_t) json_integer_value(n) : 0;
}


/* "298 done, 0 failed, 2 max_rounds": done and failed always, as batch
 * says them, then the other statuses in the order they came */
static void
rg_stream_cli_summary(FILE *f)
{
    const char  *k;
    json_t      *v;

    fprintf(f, "%lu done, %lu failed",
            (unsigned long) rg_stream_cli_status_count("done"),
            (unsigned long) rg_stream_cli_status_count("failed"));

    json_object_foreach(rg_stream_cli_statuses, k, v) {
        if (strcmp(k, "done") != 0 && strcmp(k, "failed") != 0) {
            fprintf(f, ", %lld %s", (long long) json_integer_value(v), k);
        }
    }
}


/* the bar of submit --wait (NULL: not shown): redrawn as results come,
 * at most ten times a second, and by rg_stream_cli_tick while none does;
 * those not ended are "waiting": queued or running, submit cannot tell
 * which */
static void
rg_stream_cli_progress(rg_progress_t *bar, rg_uint_t got, rg_uint_t total,
    rg_uint_t came, int final)
{
    if (bar == NULL) {
        return;
    }

    bar->done = got;
    bar->total = total;
    bar->failed = got - rg_min(got, rg_stream_cli_status_count("done"));
    bar->running = total - rg_min(got, total);
    bar->running_name = "waiting";
    bar->rated = got;

    if (final || (came && rg_progress_due(bar, 100))) {
        rg_progress_draw(bar, final, STDERR_FILENO);
    }
}


/* every 200 ms of the wait, whatever the loop waits for (a read blocked
 * in XREAD, a Redis away): the bar's time and rate move on */
static void
rg_stream_cli_tick(evutil_socket_t fd, short what, void *arg)
{
    rg_progress_t  *bar;

    bar = arg;

    if (rg_progress_due(bar, 200)) {
        rg_progress_draw(bar, 0, STDERR_FILENO);
    }
}


/* a line said while the bar is shown replaces it; the bar is drawn
 * again under it at once */
static void
rg_stream_cli_say_clear(rg_progress_t *bar)
{
    if (bar && bar->drawn_at) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        bar->drawn_at = 0;
    }
}


/* results for a terminal that shows the bar too: printed over it */
static void
rg_stream_cli_out_clear(rg_progress_t *bar, FILE *out)
{
    if (bar && bar->drawn_at && isatty(fileno(out))) {
        rg_stream_cli_say_clear(bar);
    }
}

/* the entries of an XRANGE or XREAD page: id, result; the last id */
static rg_uint_t
rg_stream_cli_print(redisReply *list, FILE *out, json_t *want,
    rg_uint_t *got, char *last, size_t lastlen)
{
    size_t       i, j;
    rg_uint_t    n;
    redisReply  *x, *f, *id, *res;

    n = 0;

    for (i = 0; list && list->type == REDIS_REPLY_ARRAY && i < list->elements;
         i++)
    {
        x = list->element[i];
        if (x->type != REDIS_REPLY_ARRAY || x->elements < 2) {
            continue;
        }

        snprintf(last, lastlen, "%.*s", (int) x->element[0]->len,
                 x->element[0]->str);

        f = x->element[1];
        id = res = NULL;

        for (j = 0; f->type == REDIS_REPLY_ARRAY && j + 1 < f->elements;
             j += 2)
        {
            if (f->element[j]->len == 2
                && memcmp(f->element[j]->str, "id", 2) == 0)
            {
                id = f->element[j + 1];
            } else if (f->element[j]->len == 6
                       && memcmp(f->element[j]->str, "result", 6) == 0)
            {
                res = f->element[j + 1];
            }
        }

        if (id == NULL || res == NULL) {
            continue;
        }

        if (want) {
            char  key[600];

            snprintf(key, sizeof(key), "%.*s", (int) rg_min(id->len, 512),
                     id->str);
            if (json_object_get(want, key) != json_true()) {
                continue;              /* not one of ours, or seen */
            }
            json_object_set_new(want, key, json_false());
            (*got)++;
        }

        fprintf(out, "%.*s\n", (int) res->len, res->str);
        n++;

        if (want) {
            rg_stream_cli_count(res->str, res->len);
        }
    }

    fflush(out);

    return n;
}


/* tasks lost with Redis's data ------------------------------------------- */

/* submit --wait: a task it waits for, and what it takes to queue it again
 * should Redis lose it */
typedef struct {
    char               *id;
    char               *text;         /* its line, as queued */
    char                entry[64];    /* its entry; "": another queued it */
    rg_uint_t           lineno;
    rg_uint_t           vanished;     /* looks in a row that found none */
} rg_stream_waited_t;


typedef struct {
    rg_stream_waited_t *tasks;
    rg_uint_t           n;
    rg_uint_t           cap;
    rg_uint_t           again;        /* how many were queued again */
    const char         *token;        /* this submit's name, for marks */
    const char         *ttl;          /* session_ttl: a queued task's mark */
    rg_msec_t           next;         /* the next look */
} rg_stream_watch_t;


/* every few seconds of the wait, one round trip */
#define RG_STREAM_CLI_LOOK   5000
/* the tasks queued again that a line names */
#define RG_STREAM_CLI_NAMED  100


/* KEYS: a task's mark, its session's meta, result and lease; ARGV: this
 * submit's "s …" mark and RG_STREAM_SUBMITTING_TTL. The mark is taken (1)
 * only while the task has none of them: one that ran, runs, or was
 * queued again by another meanwhile keeps its one run (0). */
/* KEYS: the task's mark, meta, result, lease. ARGV: the mark, its ttl,
 * this submitter's own marks' start ("s TOKEN "): one of them left
 * alone (a requeue whose answer was lost) is no mark */
static const char  rg_stream_cli_requeue_lua[] =
    "if redis.call('EXISTS', KEYS[2], KEYS[3], KEYS[4]) > 0 then\n"
    "  return 0\n"
    "end\n"
    "local m = redis.call('GET', KEYS[1])\n"
    "if m and string.sub(m, 1, #ARGV[3]) ~= ARGV[3] then\n"
    "  return 0\n"
    "end\n"
    "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "return 1\n";

/* the same keys and ARGV[1] as its third: how many of them are there */
static const char  rg_stream_cli_look_lua[] =
    "local n = redis.call('EXISTS', KEYS[2], KEYS[3], KEYS[4])\n"
    "local m = redis.call('GET', KEYS[1])\n"
    "if m and string.sub(m, 1, #ARGV[1]) ~= ARGV[1] then\n"
    "  n = n + 1\n"
    "end\n"
    "return n\n";


/* takes text (malloc'ed) */
static rg_int_t
rg_stream_watch_add(rg_stream_watch_t *wt, const char *id, char *text,
    const char *entry, rg_uint_t lineno)
{
    rg_uint_t            cap;
    rg_stream_waited_t  *t;

    if (wt->n == wt->cap) {
        cap = wt->cap ? wt->cap * 2 : 64;
        t = realloc(wt->tasks, cap * sizeof(rg_stream_waited_t));
        if (t == NULL) {
            return RG_ERROR;
        }
        wt->tasks = t;
        wt->cap = cap;
    }

    t = &wt->tasks[wt->n];
    t->id = strdup(id);
    if (t->id == NULL) {
        return RG_ERROR;
    }

    t->text = text;
    t->lineno = lineno;
    t->vanished = 0;
    snprintf(t->entry, sizeof(t->entry), "%s", entry);
    wt->n++;

    return RG_OK;
}


static void
rg_stream_watch_free(rg_stream_watch_t *wt)
{
    rg_uint_t  i;

    for (i = 0; i < wt->n; i++) {
        free(wt->tasks[i].id);
        free(wt->tasks[i].text);
    }

    free(wt->tasks);
}


/* "P{SID}NAME" of a task id */
static char *
rg_stream_cli_task_key(rg_stream_client_t *c, const char *id,
    const char *name, char *buf, size_t size)
{
    char  sid[48];

    rg_stream_session_id(id, sid, sizeof(sid));
    snprintf(buf, size, "%s{%s}%s", c->prefix, sid, name);

    return buf;
}


/* The entry of a task whose mark this submit holds ("s TOKEN LINE", set
 * by rg_stream_mark_lua or rg_stream_cli_requeue_lua): added to its
 * shard, then the mark made to last as the session may (lost, it lapses
 * and a later submit looks for the task's session, rg_stream.h); its id
 * into entry. Not added: the mark goes, so that a later submit may queue
 * it, and err says why. */
static rg_int_t
rg_stream_cli_enqueue(rg_stream_client_t *c, const char *id,
    const char *text, const char *mark, const char *ttl, char *entry,
    size_t size, char *err, size_t errlen)
{
    char         key[320], shard_key[320], e2[256];
    size_t       lens[5];
    redisReply  *r;
    const char  *argv[5];

    rg_stream_cli_task_key(c, id, ":task", key, sizeof(key));
    rg_stream_shard_key(c, rg_stream_shard_of((rg_uint_t) c->qcf->shards,
                                              id),
                        "", shard_key, sizeof(shard_key));

    argv[0] = "XADD";
    argv[1] = shard_key;
    argv[2] = "*";
    argv[3] = "task";
    argv[4] = text;
    lens[0] = 4;
    lens[1] = strlen(shard_key);
    lens[2] = 1;
    lens[3] = 4;
    lens[4] = strlen(text);

    r = rg_stream_cli_retry(c->engine, c->redis, shard_key, err, errlen, 5,
                            argv, lens);
    if (r == NULL) {
        argv[0] = "DEL";
        argv[1] = key;
        r = rg_stream_cli_call(c->engine, c->redis, key, e2, sizeof(e2), 2,
                               argv, NULL);
        if (r) {
            freeReplyObject(r);
        }
        return RG_ERROR;
    }

    snprintf(entry, size, "%.*s",
             r->type == REDIS_REPLY_STRING ? (int) rg_min(r->len, 60) : 0,
             r->str ? r->str : "");
    freeReplyObject(r);

    argv[0] = "SET";
    argv[1] = key;
    argv[2] = mark + 2;
    argv[3] = "PX";
    argv[4] = ttl;
    r = rg_stream_cli_retry(c->engine, c->redis, key, e2, sizeof(e2), 5,
                            argv, NULL);
    if (r) {
        freeReplyObject(r);
    }

    return RG_OK;
}


/* the entries of shard, page by page, for the tasks of lost[0..n) that
 * have no entry known: one found is queued still (found), its entry now
 * known; RG_ERROR when Redis did not say */
static rg_int_t
rg_stream_watch_scan(rg_stream_client_t *c, rg_uint_t shard,
    rg_stream_waited_t **lost, rg_uint_t n, char *found)
{
    char         key[320], last[72], err[256];
    size_t       i, j, k;
    json_t      *task;
    rg_uint_t    paged;
    redisReply  *r, *x, *f;
    const char  *argv[6], *id;

    rg_stream_shard_key(c, shard, "", key, sizeof(key));
    snprintf(last, sizeof(last), "-");

    do {
        argv[0] = "XRANGE";
        argv[1] = key;
        argv[2] = last;
        argv[3] = "+";
        argv[4] = "COUNT";
        argv[5] = "1000";

        r = rg_stream_cli_call(c->engine, c->redis, key, err, sizeof(err), 6,
                               argv, NULL);
        if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
            if (r) {
                freeReplyObject(r);
            }
            return RG_ERROR;
        }

        paged = r->elements == 1000;

        for (i = 0; i < r->elements; i++) {
            x = r->element[i];
            if (x->type != REDIS_REPLY_ARRAY || x->elements < 2
                || x->element[1]->type != REDIS_REPLY_ARRAY)
            {
                continue;
            }

            snprintf(last, sizeof(last), "(%.*s",
                     (int) rg_min(x->element[0]->len, 60),
                     x->element[0]->str);
            f = x->element[1];

            for (j = 0; j + 1 < f->elements; j += 2) {
                if (f->element[j]->len != 4
                    || memcmp(f->element[j]->str, "task", 4) != 0)
                {
                    continue;
                }

                task = json_loadb(f->element[j + 1]->str,
                                  f->element[j + 1]->len, 0, NULL);
                id = json_string_value(json_object_get(task, "id"));

                for (k = 0; id && k < n; k++) {
                    if (lost[k]->entry[0] == '\0'
                        && strcmp(lost[k]->id, id) == 0)
                    {
                        snprintf(lost[k]->entry, sizeof(lost[k]->entry),
                                 "%.60s", last + 1);
                        found[k] = 1;
                    }
                }

                json_decref(task);
            }
        }

        freeReplyObject(r);

    } while (paged);

    return RG_OK;
}


/* The tasks of lost[0..*n) whose entry is on the queue still (the entry
 * this submit added, or one found on its shard) are taken out of lost: a
 * worker will run them. RG_ERROR when Redis did not say: then none is
 * lost. */
static rg_int_t
rg_stream_watch_queued(rg_stream_client_t *c, rg_stream_waited_t **lost,
    rg_uint_t *n)
{
    char                 *found, *keys;
    rg_int_t              rc;
    rg_uint_t             i, m, sent, shard, shards;
    redisReply           *r;
    rg_stream_cli_cmd_t  *cmds;

    shards = (rg_uint_t) c->qcf->shards;
    sent = 0;

    found = calloc(*n, 1);
    cmds = calloc(*n, sizeof(rg_stream_cli_cmd_t));
    keys = malloc(shards * 320);

    rc = found && cmds && keys ? RG_OK : RG_ERROR;

    for (shard = 0; rc == RG_OK && shard < shards; shard++) {
        rg_stream_shard_key(c, shard, "", keys + shard * 320, 320);
    }

    /* the entries this submit added: one XRANGE each, in one round trip */
    for (i = 0, m = 0; rc == RG_OK && i < *n; i++) {
        if (lost[i]->entry[0] != '\0') {
            cmds[m].key = keys + rg_stream_shard_of(shards, lost[i]->id)
                                 * 320;
            cmds[m].argc = 4;
            cmds[m].argv[0] = "XRANGE";
            cmds[m].argv[1] = cmds[m].key;
            cmds[m].argv[2] = lost[i]->entry;
            cmds[m].argv[3] = lost[i]->entry;
            m++;
        }
    }

    if (rc == RG_OK) {
        rg_stream_cli_pipeline(c->engine, c->redis, cmds, m);
        sent = m;
    }

    for (i = 0, m = 0; rc == RG_OK && i < *n; i++) {
        if (lost[i]->entry[0] == '\0') {
            continue;
        }

        r = cmds[m++].w.reply;

        if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
            rc = RG_ERROR;
        } else if (r->elements) {
            found[i] = 1;
        }

        if (r) {
            freeReplyObject(r);
            cmds[m - 1].w.reply = NULL;
        }
    }

    /* the others' entries, another submit's: looked for on their shards
     * (a Redis that lost its data holds few entries) */
    for (shard = 0; rc == RG_OK && shard < shards; shard++) {
        for (i = 0; i < *n; i++) {
            if (lost[i]->entry[0] == '\0'
                && rg_stream_shard_of(shards, lost[i]->id) == shard)
            {
                rc = rg_stream_watch_scan(c, shard, lost, *n, found);
                break;
            }
        }
    }

    for (i = 0, m = 0; rc == RG_OK && i < *n; i++) {
        if (!found[i]) {
            lost[m++] = lost[i];
        }
    }

    if (rc == RG_OK) {
        *n = m;
    }

    /* replies left unread when one failed */
    for (i = 0; i < sent; i++) {
        if (cmds[i].w.reply) {
            freeReplyObject(cmds[i].w.reply);
        }
    }

    free(found);
    free(cmds);
    free(keys);

    return rc;
}


/* a task lost: its mark taken again (if it has still nothing in Redis),
 * then its entry added as submit adds it; RG_OK when it was queued */
static rg_int_t
rg_stream_watch_requeue(rg_stream_client_t *c, rg_stream_watch_t *wt,
    rg_stream_waited_t *t, rg_progress_t *bar)
{
    char        *text, err[256], mark[48], own[40], sttl[24], keys[4][320];
    redisReply  *r;
    const char  *argv[10];
    long long    taken;

    rg_stream_cli_task_key(c, t->id, ":task", keys[0], sizeof(keys[0]));
    rg_stream_cli_task_key(c, t->id, ":meta", keys[1], sizeof(keys[1]));
    rg_stream_cli_task_key(c, t->id, ":result", keys[2], sizeof(keys[2]));
    rg_stream_cli_task_key(c, t->id, ":lease", keys[3], sizeof(keys[3]));

    snprintf(mark, sizeof(mark), "s %s %lu", wt->token,
             (unsigned long) t->lineno);
    snprintf(sttl, sizeof(sttl), "%d", RG_STREAM_SUBMITTING_TTL);
    snprintf(own, sizeof(own), "s %s ", wt->token);

    argv[0] = "EVAL";
    argv[1] = rg_stream_cli_requeue_lua;
    argv[2] = "4";
    argv[3] = keys[0];
    argv[4] = keys[1];
    argv[5] = keys[2];
    argv[6] = keys[3];
    argv[7] = mark;
    argv[8] = sttl;
    argv[9] = own;

    r = rg_stream_cli_call(c->engine, c->redis, keys[0], err, sizeof(err),
                           10, argv, NULL);
    taken = r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    if (r) {
        freeReplyObject(r);
    }

    if (!taken) {
        return RG_DECLINED;           /* it came back, or Redis is away */
    }

    /* an earlier run may have made its side effects: Redis forgot */
    text = rg_task_after_loss(t->text);

    if (text == NULL
        || rg_stream_cli_enqueue(c, t->id, text, mark, wt->ttl, t->entry,
                                 sizeof(t->entry), err, sizeof(err))
           != RG_OK)
    {
        if (text == NULL) {
            snprintf(err, sizeof(err), "out of memory");
        }

        free(text);
        rg_stream_cli_say_clear(bar);
        fprintf(stderr, "reagent: task %s vanished from Redis, and queueing "
                "it again failed: %s (tried again later)\n", t->id, err);
        return RG_ERROR;
    }

    free(text);
    wt->again++;

    return RG_OK;
}


/* Redis restarted without its data has lost the tasks it held: no
 * worker will run them and their results never come. So, every few
 * seconds of the wait, one round trip asks for each task still waited
 * for whether Redis has its mark (one this submitter left while queueing
 * it again is none), session, result or lease; those with
 * none of them at two looks in a row and no entry queued are queued
 * again (their ids keep a task that ran meanwhile from running twice). */
static void
rg_stream_watch_look(rg_stream_client_t *c, rg_stream_watch_t *wt,
    json_t *want, rg_progress_t *bar)
{
    char                 *keys, *k, own[40];
    size_t                size;
    rg_buf_t              said;
    rg_uint_t             i, j, n, m, again;
    redisReply           *r;
    rg_stream_waited_t  **lost;
    rg_stream_cli_cmd_t  *cmds;

    static const char  *names[] = { ":task", ":meta", ":result", ":lease" };

    /* a mark of this submitter's left alone is no mark (its requeue's
     * answer was lost): the task is still gone */
    snprintf(own, sizeof(own), "s %s ", wt->token);
    size = strlen(c->prefix) + 64;
    cmds = calloc(wt->n ? wt->n : 1, sizeof(rg_stream_cli_cmd_t));
    lost = calloc(wt->n ? wt->n : 1, sizeof(rg_stream_waited_t *));
    keys = malloc((wt->n ? wt->n : 1) * 4 * size);

    if (cmds == NULL || lost == NULL || keys == NULL) {
        goto done;
    }

    for (i = 0, n = 0; i < wt->n; i++) {
        if (json_object_get(want, wt->tasks[i].id) != json_true()) {
            continue;                 /* its result came */
        }

        cmds[n].argc = 8;
        cmds[n].argv[0] = "EVAL";
        cmds[n].argv[1] = rg_stream_cli_look_lua;
        cmds[n].argv[2] = "4";

        for (j = 0; j < 4; j++) {
            k = keys + (n * 4 + j) * size;
            cmds[n].argv[j + 3] = rg_stream_cli_task_key(c, wt->tasks[i].id,
                                                         names[j], k, size);
        }

        cmds[n].argv[7] = own;
        cmds[n].key = cmds[n].argv[3];
        lost[n] = &wt->tasks[i];
        n++;
    }

    rg_stream_cli_pipeline(c->engine, c->redis, cmds, n);

    for (i = 0, m = 0; i < n; i++) {
        r = cmds[i].w.reply;

        /* twice in a row, a look apart: a worker that ran it writes its
         * result again once Redis is back, and that must not be run
         * twice for want of waiting for it */
        if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 0) {
            if (++lost[i]->vanished >= 2) {
                lost[m++] = lost[i];
            }

        } else if (r && r->type == REDIS_REPLY_INTEGER) {
            lost[i]->vanished = 0;
        }

        if (r) {
            freeReplyObject(r);
        }
    }

    if (m == 0 || rg_stream_watch_queued(c, lost, &m) != RG_OK) {
        goto done;
    }

    /* which, in one line: at most RG_STREAM_CLI_NAMED of them named */
    memset(&said, 0, sizeof(rg_buf_t));
    again = 0;

    for (i = 0; i < m; i++) {
        if (rg_stream_watch_requeue(c, wt, lost[i], bar) != RG_OK) {
            continue;
        }

        if (again++ < RG_STREAM_CLI_NAMED) {
            rg_buf_printf(&said, "%s%s", again > 1 ? ", " : "", lost[i]->id);
        }
    }

    if (again) {
        rg_stream_cli_say_clear(bar);
        fprintf(stderr, "reagent: %lu tasks vanished from Redis (no mark, "
                "session, result or queue entry of them is left: Redis lost "
                "its data): queued again: %.*s", (unsigned long) again,
                (int) said.len, said.data ? said.data : "");

        if (again > RG_STREAM_CLI_NAMED) {
            fprintf(stderr, " and %lu more",
                    (unsigned long) (again - RG_STREAM_CLI_NAMED));
        }

        fputs("\n", stderr);
    }

    rg_buf_free(&said);

done:

    free(cmds);
    free(lost);
    free(keys);
}


/* follows the results stream from last until want is all seen (want
 * NULL: for ever, --follow), bar (or NULL) counting them, wt (or NULL)
 * looking for the tasks Redis lost */
static int
rg_stream_follow(rg_stream_client_t *c, FILE *out, json_t *want,
    rg_uint_t *got, rg_uint_t total, char *last, size_t lastlen,
    rg_progress_t *bar, rg_stream_watch_t *wt)
{
    char         err[256], block[24];
    rg_uint_t    failing, n;
    redisReply  *r, *list;
    const char  *argv[8];

    failing = 0;
    snprintf(block, sizeof(block), "%llu",
             (unsigned long long) c->qcf->block);

    while (want == NULL || *got < total) {
        argv[0] = "XREAD";
        argv[1] = "COUNT";
        argv[2] = "1000";
        argv[3] = "BLOCK";
        argv[4] = block;
        argv[5] = "STREAMS";
        argv[6] = c->results;
        argv[7] = last;

        r = rg_stream_cli_call(c->engine, c->redis, c->results, err,
                               sizeof(err), 8, argv, NULL);
        if (r == NULL) {
            /* Redis away: the tasks go on; so does the wait, said once */
            if (!failing) {
                rg_stream_cli_say_clear(bar);
                fprintf(stderr, "reagent: the results cannot be read (%s): "
                        "waiting for Redis\n", err);
            }
            failing = 1;
            rg_stream_cli_pause(c->engine, 500);
            continue;
        }

        if (failing) {
            rg_stream_cli_say_clear(bar);
            fprintf(stderr, "reagent: reading the results again\n");
            failing = 0;
        }

        list = r->type == REDIS_REPLY_ARRAY && r->elements
               && r->element[0]->type == REDIS_REPLY_ARRAY
               && r->element[0]->elements == 2
               ? r->element[0]->element[1] : NULL;

        if (list && list->elements) {
            rg_stream_cli_out_clear(bar, out);
        }

        n = rg_stream_cli_print(list, out, want, got, last, lastlen);
        freeReplyObject(r);

        if (want) {
            rg_stream_cli_progress(bar, *got, total, n, 0);
        }

        /* Redis answers: has it lost some of the tasks */
        if (wt && *got < total && rg_monotonic_msec() >= wt->next) {
            rg_stream_watch_look(c, wt, want, bar);
            wt->next = rg_monotonic_msec() + RG_STREAM_CLI_LOOK;
        }
    }

    return 0;
}


/* submit ------------------------------------------------------------------- */

static int
rg_submit_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    char                  err[256], sid[48], key[320], entry[64];
    char                  ttl[24], last[64], *buf, *line, *end, *text;
    char                  shard[320];
    size_t                len;
    int                   rc, argc;
    rg_uint_t             cluster;
    rg_uint_t             lineno, queued, dup, bad, got, total, before;
    long long             seen;
    json_t               *want, *task;
    redisReply           *r;
    rg_stream_client_t    c;
    rg_stream_cli_opts_t *o;
    const char           *argv[12], *id;
    char                  digest[RG_SHA256_HEX], idbuf[48];
    char                  token[24], mark[48], meta[320], result[320];
    char                  sttl[24], sstale[24];
    double                secs;
    rg_msec_t             started;
    rg_progress_t         bar, *shown;
    rg_stream_watch_t     watch;
    struct event         *tick;

    o = opts;
    started = rg_monotonic_msec();

    memset(&bar, 0, sizeof(bar));
    bar.started = started;
    shown = NULL;
    tick = NULL;

    if (o->wait && (o->progress == 0 ? isatty(STDERR_FILENO)
                                     : o->progress == 1))
    {
        shown = &bar;
    }

    if (rg_stream_client_open(cycle, &c, "submit") != RG_OK) {
        return 1;
    }

    buf = rg_stream_slurp(arg, &len);
    if (buf == NULL) {
        fprintf(stderr, "reagent: cannot read \"%s\": %s\n", arg,
                strerror(errno));
        rg_stream_client_close(&c);
        return 1;
    }

    snprintf(ttl, sizeof(ttl), "%llu",
             (unsigned long long) rg_store_conf(cycle)->session_ttl);
    snprintf(sttl, sizeof(sttl), "%d", RG_STREAM_SUBMITTING_TTL);
    snprintf(sstale, sizeof(sstale), "%d", RG_STREAM_SUBMITTING_STALE);
    cluster = rg_store_conf(cycle)->cluster;

    /* this submit's own name, for its marks */
    {
        unsigned char  rnd[8];
        size_t         k;

        if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
            memset(rnd, 0, sizeof(rnd));
            memcpy(rnd, &(pid_t) { getpid() }, sizeof(pid_t));
        }
        for (k = 0; k < sizeof(rnd); k++) {
            snprintf(token + 2 * k, 3, "%02x", rnd[k]);
        }
    }

    want = json_object();
    queued = dup = bad = got = total = 0;
    rc = 0;
    snprintf(last, sizeof(last), "0-0");

    memset(&watch, 0, sizeof(watch));
    watch.token = token;
    watch.ttl = ttl;

    /* results of these tasks come after the newest one now */
    if (o->wait) {
        argv[0] = "XREVRANGE";
        argv[1] = c.results;
        argv[2] = "+";
        argv[3] = "-";
        argv[4] = "COUNT";
        argv[5] = "1";
        r = rg_stream_cli_call(c.engine, c.redis, c.results, err,
                               sizeof(err), 6, argv, NULL);
        if (r && r->type == REDIS_REPLY_ARRAY && r->elements
            && r->element[0]->type == REDIS_REPLY_ARRAY
            && r->element[0]->elements)
        {
            snprintf(last, sizeof(last), "%.*s",
                     (int) r->element[0]->element[0]->len,
                     r->element[0]->element[0]->str);
        }
        if (r) {
            freeReplyObject(r);
        }
    }

    lineno = 0;

    for (line = buf; line && *line; line = end ? end + 1 : NULL) {
        end = strchr(line, '\n');
        if (end) {
            *end = '\0';
        }
        lineno++;

        if (line[strspn(line, " \t\r")] == '\0') {
            continue;
        }

        task = json_loads(line, 0, NULL);
        if (!json_is_object(task)) {
            fprintf(stderr, "reagent: line %lu is not a JSON object: not "
                    "submitted\n", (unsigned long) lineno);
            json_decref(task);
            bad++;
            continue;
        }

        /* an id is the task's key: an integer is its digits (as batch
         * reads it), one without gets one; another kind is refused below */
        if (json_is_integer(json_object_get(task, "id"))) {
            snprintf(idbuf, sizeof(idbuf), "%lld", (long long)
                     json_integer_value(json_object_get(task, "id")));
            json_object_set_new(task, "id", json_string(idbuf));

        } else if (json_object_get(task, "id") == NULL
                   || json_is_null(json_object_get(task, "id")))
        {
            rg_sha256_hex(digest, line, strlen(line), NULL, 0);
            snprintf(idbuf, sizeof(idbuf), "sub-%.16s-%lu", digest,
                     (unsigned long) rg_wall_msec());
            json_object_set_new(task, "id", json_string(idbuf));
        }

        if (o->agent && json_object_get(task, "agent") == NULL) {
            json_object_set_new(task, "agent", json_string(o->agent));
        }

        id = json_string_value(json_object_get(task, "id"));
        text = json_dumps(task, JSON_COMPACT);

        /* a queued task is named in the API's paths */
        if (text && id && !rg_task_id_valid(id, strlen(id))) {
            fprintf(stderr, "reagent: line %lu: " RG_TASK_ID_RULE ": not "
                    "submitted\n", (unsigned long) lineno);
            free(text);
            json_decref(task);
            bad++;
            continue;
        }

        {
            rg_task_t  t;

            /* what a worker would refuse is refused here */
            if (text && rg_task_parse(&t, text, strlen(text), lineno)
                        == RG_DECLINED)
            {
                fprintf(stderr, "reagent: %s: not submitted\n", t.error);
                rg_task_free(&t);
                free(text);
                json_decref(task);
                bad++;
                continue;
            }
            if (text) {
                rg_task_free(&t);
            }
        }

        if (text == NULL) {
            json_decref(task);
            rc = 1;
            break;
        }

        rg_stream_session_id(id, sid, sizeof(sid));
        snprintf(key, sizeof(key), "%s{%s}:task", c.prefix, sid);
        snprintf(meta, sizeof(meta), "%s{%s}:meta", c.prefix, sid);
        snprintf(result, sizeof(result), "%s{%s}:result", c.prefix, sid);

        /* the mark names this submit: one that was set but whose answer
         * was lost is recognised as ours when it is asked again; "s …"
         * while the entry is added, the rest once it is in (rg_stream.h) */
        snprintf(mark, sizeof(mark), "s %s %lu", token,
                 (unsigned long) lineno);

        argv[0] = "EVAL";
        argv[1] = rg_stream_mark_lua.source;
        argv[2] = "3";
        argv[3] = key;
        argv[4] = meta;
        argv[5] = result;
        argv[6] = mark;
        argv[7] = sttl;
        argv[8] = sstale;
        argc = 9;

        if (!cluster) {
            /* one Redis: the mark and the entry at once; an answer lost
             * and asked again finds this submit's own mark */
            rg_stream_shard_key(&c, rg_stream_shard_of(
                                    (rg_uint_t) c.qcf->shards, id),
                                "", shard, sizeof(shard));
            argv[1] = rg_stream_submit_lua.source;
            argv[2] = "4";
            argv[6] = shard;
            argv[7] = mark;
            argv[8] = sttl;
            argv[9] = sstale;
            argv[10] = ttl;
            argv[11] = text;
            argc = 12;
        }

        r = rg_stream_cli_retry(c.engine, c.redis, key, err, sizeof(err),
                                argc, argv, NULL);

        /* 1: the mark is this submit's, queue it (in one script: queued
         * before by this submit; its entry's id, queued now); 0:
         * submitted before; 2: another submit is queueing it now */
        seen = 0;
        if (r && r->type == REDIS_REPLY_STRING) {
            snprintf(entry, sizeof(entry), "%.*s", (int) rg_min(r->len, 60),
                     r->str);
            seen = 3;
        } else if (r && r->type == REDIS_REPLY_INTEGER) {
            seen = r->integer;
            if (seen == 1 && !cluster) {
                entry[0] = '\0';
                seen = 3;
            }
        }

        if (r == NULL) {
            fprintf(stderr, "reagent: submitting %s: %s\n", id, err);
            free(text);
            json_decref(task);
            rc = 1;
            break;
        }

        freeReplyObject(r);
        if (seen != 3) {
            entry[0] = '\0';
        }

        if (seen == 3) {
            if (!o->wait) {
                printf("%s\n", id);
            }
            queued++;

        } else if (seen == 2) {
            fprintf(stderr, "reagent: task %s is being submitted by another "
                    "submit now: not queued again\n", id);
            dup++;

        } else if (seen != 1) {
            /* its first submit stands */
            fprintf(stderr, "reagent: task %s was submitted before: not "
                    "queued again\n", id);
            dup++;

        } else if (rg_stream_cli_enqueue(&c, id, text, mark, ttl, entry,
                                         sizeof(entry), err, sizeof(err))
                   != RG_OK)
        {
            /* not queued: the next submit of it may try again */
            fprintf(stderr, "reagent: queueing %s failed: %s\n", id, err);
            free(text);
            json_decref(task);
            rc = 1;
            break;

        } else {
            if (!o->wait) {
                printf("%s\n", id);
            }
            queued++;
        }

        if (o->wait && json_object_get(want, id) == NULL) {
            /* what it takes to queue it again (rg_stream_watch_look) */
            if (rg_stream_watch_add(&watch, id, text, entry, lineno)
                != RG_OK)
            {
                fprintf(stderr, "reagent: out of memory\n");
                free(text);
                json_decref(task);
                rc = 1;
                break;
            }

            text = NULL;
            json_object_set_new(want, id, json_true());
            total++;
        }

        free(text);
        json_decref(task);
    }

    free(buf);

    fprintf(stderr, "reagent: %lu tasks queued, %lu submitted before, %lu "
            "refused\n", (unsigned long) queued, (unsigned long) dup,
            (unsigned long) bad);

    if (rc == 0 && o->wait && total) {
        const char      *k;
        json_t          *v;
        void            *tmp;
        rg_uint_t        came;
        struct timeval   tv;

        if (shown) {
            rg_stream_cli_progress(shown, got, total, 0, 0);
            rg_progress_draw(shown, 0, STDERR_FILENO);

            tick = event_new(c.engine->base, -1, EV_PERSIST,
                             rg_stream_cli_tick, shown);
            tv.tv_sec = 0;
            tv.tv_usec = 200000;
            if (tick && event_add(tick, &tv) != 0) {
                event_free(tick);
                tick = NULL;          /* drawn as results come only */
            }
        }

        /* those that ended before we looked: their results are kept */
        json_object_foreach_safe(want, tmp, k, v) {
            rg_stream_session_id(k, sid, sizeof(sid));
            snprintf(key, sizeof(key), "%s{%s}:result", c.prefix, sid);
            argv[0] = "GET";
            argv[1] = key;
            r = rg_stream_cli_call(c.engine, c.redis, key, err, sizeof(err),
                                   2, argv, NULL);
            came = r && r->type == REDIS_REPLY_STRING;
            if (came) {
                rg_stream_cli_out_clear(shown, stdout);
                printf("%.*s\n", (int) r->len, r->str);
                rg_stream_cli_count(r->str, r->len);
                json_object_set_new(want, k, json_false());
                got++;
            }
            if (r) {
                freeReplyObject(r);
            }

            if (shown) {
                fflush(stdout);
                rg_stream_cli_progress(shown, got, total, came, 0);
            }
        }

        before = got;

        fflush(stdout);
        watch.next = rg_monotonic_msec() + RG_STREAM_CLI_LOOK;
        rc = rg_stream_follow(&c, stdout, want, &got, total, last,
                              sizeof(last), shown, &watch);

        if (tick) {
            event_free(tick);
        }

        rg_stream_cli_progress(shown, got, total, 0, 1);

        /* batch's line, then how the results came */
        secs = (double) (rg_monotonic_msec() - started) / 1000;
        fprintf(stderr, "reagent: %lu tasks in %.1f s: ",
                (unsigned long) total, secs);
        rg_stream_cli_summary(stderr);
        fprintf(stderr, " (%lu of %lu results, %.1f/s", (unsigned long) got,
                (unsigned long) total, secs > 0 ? got / secs : 0);
        if (before) {
            fprintf(stderr, "; %lu had ended before the wait",
                    (unsigned long) before);
        }
        if (watch.again) {
            fprintf(stderr, "; %lu queued again, lost by Redis",
                    (unsigned long) watch.again);
        }
        fputs(")", stderr);

        /* what the tasks cost, where their llms have a price */
        if (rg_stream_cli_cost > 0) {
            fprintf(stderr, "; tokens %lld, cost $%.4f",
                    (long long) rg_stream_cli_tokens, rg_stream_cli_cost);
        }

        fputs("\n", stderr);
        json_decref(rg_stream_cli_statuses);
        rg_stream_cli_statuses = NULL;
        rg_stream_cli_tokens = 0;
        rg_stream_cli_cost = 0;
    }

    json_decref(want);
    rg_stream_watch_free(&watch);
    rg_stream_client_close(&c);

    return rc ? rc : (bad ? 2 : 0);
}


/* results ------------------------------------------------------------------ */

static int
rg_results_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    int                    rc;
    char                   err[256], last[64], start[72];
    FILE                  *out;
    rg_uint_t              n;
    redisReply            *r;
    rg_stream_client_t     c;
    rg_stream_cli_opts_t  *o;
    const char            *argv[6];

    o = opts;

    if (rg_stream_client_open(cycle, &c, "results") != RG_OK) {
        return 1;
    }

    out = o->output ? fopen(o->output, "a") : stdout;
    if (out == NULL) {
        fprintf(stderr, "reagent: cannot open \"%s\": %s\n", o->output,
                strerror(errno));
        rg_stream_client_close(&c);
        return 1;
    }

    rc = 0;
    snprintf(last, sizeof(last), "0-0");

    /* what the stream holds, in pages */
    for ( ;; ) {
        snprintf(start, sizeof(start), "(%s", last);
        argv[0] = "XRANGE";
        argv[1] = c.results;
        argv[2] = strcmp(last, "0-0") == 0 ? "-" : start;
        argv[3] = "+";
        argv[4] = "COUNT";
        argv[5] = "1000";

        r = rg_stream_cli_call(c.engine, c.redis, c.results, err,
                               sizeof(err), 6, argv, NULL);
        if (r == NULL) {
            fprintf(stderr, "reagent: reading the results: %s\n", err);
            rc = 1;
            break;
        }

        n = rg_stream_cli_print(r, out, NULL, NULL, last, sizeof(last));
        freeReplyObject(r);

        if (n < 1000) {
            break;
        }
    }

    if (rc == 0 && o->follow) {
        rc = rg_stream_follow(&c, out, NULL, NULL, 0, last, sizeof(last),
                              NULL, NULL);
    }

    if (out != stdout) {
        fclose(out);
    }

    rg_stream_client_close(&c);

    return rc;
}


/* queue ------------------------------------------------------------------- */

/* -1 with err when Redis did not answer */
static long long
rg_queue_int(rg_stream_client_t *c, const char *key, const char *cmd,
    char *err, size_t errlen)
{
    long long    v;
    redisReply  *r;
    const char  *argv[2];

    argv[0] = cmd;
    argv[1] = key;

    r = rg_stream_cli_call(c->engine, c->redis, key, err, errlen, 2, argv,
                           NULL);
    v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r) {
        freeReplyObject(r);
    }

    return v;
}


/* a field of an XINFO map: [name, value, name, value, ...] */
static redisReply *
rg_queue_field(redisReply *map, const char *name)
{
    size_t  i;

    for (i = 0; map && map->type == REDIS_REPLY_ARRAY
                && i + 1 < map->elements; i += 2)
    {
        if (map->element[i]->type == REDIS_REPLY_STRING
            && strlen(name) == map->element[i]->len
            && memcmp(map->element[i]->str, name, map->element[i]->len) == 0)
        {
            return map->element[i + 1];
        }
    }

    return NULL;
}


/* the queue's list of the store's losses (rg_stream_lost.c), newest
 * first: when, which worker, what it wrote back, which tasks are gone */
static void
rg_queue_losses(rg_stream_client_t *c)
{
    char         key[320], err[256], when[32];
    size_t       i, j;
    time_t       t;
    json_t      *o, *lost;
    struct tm    tm;
    redisReply  *r;
    const char  *argv[4];

    snprintf(key, sizeof(key), "%s{q:%s}:losses", c->prefix,
             c->qcf->stream.data);

    argv[0] = "LRANGE";
    argv[1] = key;
    argv[2] = "0";
    argv[3] = "9";
    r = rg_stream_cli_call(c->engine, c->redis, key, err, sizeof(err), 4,
                           argv, NULL);

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements) {
        printf("the store lost its memory (Redis restarted without its "
               "data, or was emptied); the last records, newest first:\n");
    }

    for (i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        if (r->element[i]->type != REDIS_REPLY_STRING) {
            continue;
        }

        o = json_loadb(r->element[i]->str, r->element[i]->len, 0, NULL);
        if (o == NULL) {
            continue;
        }

        t = (time_t) (json_integer_value(json_object_get(o, "at")) / 1000);
        localtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);

        printf("  %s worker %s: %lld sessions written back, %lld results "
               "written again, %lld tasks lost", when,
               json_string_value(json_object_get(o, "worker"))
               ? json_string_value(json_object_get(o, "worker")) : "?",
               (long long) json_integer_value(
                   json_object_get(o, "sessions_written_back")),
               (long long) json_integer_value(
                   json_object_get(o, "results_written_again")),
               (long long) json_integer_value(
                   json_object_get(o, "lost_count")));

        lost = json_object_get(o, "lost");
        for (j = 0; j < json_array_size(lost); j++) {
            printf("%s%s", j ? ", " : ": ",
                   json_string_value(json_array_get(lost, j))
                   ? json_string_value(json_array_get(lost, j)) : "?");
        }

        if (json_string_value(json_object_get(o, "note"))) {
            printf(" (%s)", json_string_value(json_object_get(o, "note")));
        }

        printf("\n");
        json_decref(o);
    }

    if (r) {
        freeReplyObject(r);
    }
}


static int
rg_queue_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    char                err[256], key[320], dead[320];
    size_t              i, j;
    rg_uint_t           shard;
    long long           depth, ndead, pending;
    redisReply         *r, *g, *v, *name, *idle, *p;
    rg_stream_client_t  c;
    const char         *argv[4];

    if (rg_stream_client_open(cycle, &c, "queue") != RG_OK) {
        return 1;
    }

    printf("queue %s, group %s, %ld shards\n", c.qcf->stream.data,
           c.qcf->group.data, (long) c.qcf->shards);

    for (shard = 0; shard < (rg_uint_t) c.qcf->shards; shard++) {
        rg_stream_shard_key(&c, shard, "", key, sizeof(key));
        rg_stream_shard_key(&c, shard, ":dead", dead, sizeof(dead));

        depth = rg_queue_int(&c, key, "XLEN", err, sizeof(err));
        ndead = depth < 0 ? -1 : rg_queue_int(&c, dead, "XLEN", err,
                                              sizeof(err));
        pending = 0;

        /* what it would print is not what the queue holds */
        if (ndead < 0) {
            fprintf(stderr, "reagent: queue: reading shard %lu: %s\n",
                    (unsigned long) shard, err);
            rg_stream_client_close(&c);
            return 1;
        }

        argv[0] = "XINFO";
        argv[1] = "GROUPS";
        argv[2] = key;
        r = rg_stream_cli_call(c.engine, c.redis, key, err, sizeof(err), 3,
                               argv, NULL);

        for (i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements;
             i++)
        {
            g = r->element[i];
            name = rg_queue_field(g, "name");
            if (name && name->len == c.qcf->group.len
                && memcmp(name->str, c.qcf->group.data, name->len) == 0)
            {
                v = rg_queue_field(g, "pending");
                pending = v && v->type == REDIS_REPLY_INTEGER ? v->integer
                                                               : 0;
                v = rg_queue_field(g, "lag");
                printf("shard %lu: %lld entries, %lld not yet read, %lld "
                       "pending, %lld dead letters\n", (unsigned long) shard,
                       depth, v && v->type == REDIS_REPLY_INTEGER
                              ? v->integer : -1LL,
                       pending, ndead < 0 ? 0 : ndead);
            }
        }

        if (r == NULL || r->elements == 0) {
            printf("shard %lu: %lld entries, no group yet (no worker has "
                   "read it), %lld dead letters\n", (unsigned long) shard,
                   depth < 0 ? 0 : depth, ndead < 0 ? 0 : ndead);
        }

        if (r) {
            freeReplyObject(r);
        }

        argv[0] = "XINFO";
        argv[1] = "CONSUMERS";
        argv[2] = key;
        argv[3] = c.qcf->group.data;
        r = rg_stream_cli_call(c.engine, c.redis, key, err, sizeof(err), 4,
                               argv, NULL);

        for (j = 0; r && r->type == REDIS_REPLY_ARRAY && j < r->elements;
             j++)
        {
            name = rg_queue_field(r->element[j], "name");
            p = rg_queue_field(r->element[j], "pending");
            idle = rg_queue_field(r->element[j], "idle");
            if (name && p && idle) {
                /* a live worker reads or keeps its entries more often
                 * than claim_idle; one that is gone may leave entries,
                 * taken over after it */
                printf("  worker %.*s: %lld pending, %s (last seen %.1fs "
                       "ago)\n", (int) name->len, name->str, p->integer,
                       idle->integer > (long long) c.qcf->claim_idle
                       ? "gone" : "alive",
                       (double) idle->integer / 1000);
            }
        }

        if (r) {
            freeReplyObject(r);
        }
    }

    rg_queue_losses(&c);

    rg_stream_client_close(&c);

    return 0;
}


/* the command line ---------------------------------------------------------- */

static int
rg_stream_cli_option(void *opts, int argc, char **argv, int i)
{
    rg_stream_cli_opts_t  *o;

    o = opts;

    if (strcmp(argv[i], "--wait") == 0) {
        o->wait = 1;
        return 1;
    }

    if (strcmp(argv[i], "--follow") == 0) {
        o->follow = 1;
        return 1;
    }

    if (strcmp(argv[i], "--progress") == 0) {
        o->progress = 1;
        return 1;
    }

    if (strcmp(argv[i], "--no-progress") == 0) {
        o->progress = 2;
        return 1;
    }

    if ((strcmp(argv[i], "-a") == 0 || strcmp(argv[i], "-o") == 0)
        && i + 1 < argc)
    {
        if (argv[i][1] == 'a') {
            o->agent = argv[i + 1];
        } else {
            o->output = argv[i + 1];
        }
        return 2;
    }

    return 0;
}


const rg_cli_t  rg_submit_cli = {
    "submit",
    "  submit [-a AGENT] [--wait [--progress|--no-progress]] tasks.jsonl|-\n"
    "      puts the JSONL tasks on the queue (queue { }) and prints their\n"
    "      ids; an id submitted before is not queued again; --wait prints\n"
    "      their results as JSONL as they end, a progress bar on stderr\n"
    "      when it is a terminal (--progress/--no-progress force it) and\n"
    "      a summary by status\n",
    "a tasks file, or - for stdin",
    sizeof(rg_stream_cli_opts_t),
    rg_stream_cli_option,
    rg_submit_main,
    RG_CLI_CLIENT
};


const rg_cli_t  rg_results_cli = {
    "results",
    "  results [--follow] [-o FILE]\n"
    "      the results stream as JSONL; --follow waits for more\n",
    NULL,
    sizeof(rg_stream_cli_opts_t),
    rg_stream_cli_option,
    rg_results_main,
    RG_CLI_CLIENT
};


const rg_cli_t  rg_queue_status_cli = {
    "queue",
    "  queue\n"
    "      each shard's depth, entries pending per worker, dead letters\n",
    NULL,
    sizeof(rg_stream_cli_opts_t),
    rg_stream_cli_option,
    rg_queue_main,
    RG_CLI_CLIENT
};
