/* rg_stream_cli.c: the queue's commands. `reagent submit` puts JSONL
 * tasks on the queue (an id is the task's key: a second submit of it is
 * reported, not queued again; its mark is set around its entry as
 * rg_stream.h says), `--wait` follows their results under a progress bar
 * (rg_progress.h); `reagent results [--follow]` prints the results
 * stream; `reagent queue` shows each shard's depth, pending entries per
 * consumer, dead letters and the workers reading. They are short-lived
 * clients, not workers: each waits for one Redis answer at a time on a
 * reactor of its own that runs nothing else. */

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
    redisReply         *reply;        /* moved out of hiredis's */
    char                err[256];
} rg_stream_wait_t;


static void
rg_stream_cli_reply(void *data, redisReply *reply, const char *err)
{
    rg_stream_wait_t  *w;

    w = data;
    w->done = 1;

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


/* follows the results stream from last until want is all seen (want
 * NULL: for ever, --follow), bar (or NULL) counting them */
static int
rg_stream_follow(rg_stream_client_t *c, FILE *out, json_t *want,
    rg_uint_t *got, rg_uint_t total, char *last, size_t lastlen,
    rg_progress_t *bar)
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
    }

    return 0;
}


/* submit ------------------------------------------------------------------- */

static int
rg_submit_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    char                  err[256], sid[48], key[320], shard_key[320];
    char                  ttl[24], last[64], *buf, *line, *end, *text;
    size_t                len;
    int                   rc;
    rg_uint_t             lineno, queued, dup, bad, got, total, before;
    long long             seen;
    json_t               *want, *task;
    redisReply           *r, *kept;
    rg_stream_client_t    c;
    rg_stream_cli_opts_t *o;
    const char           *argv[10], *id;
    size_t                lens[10];
    char                  digest[RG_SHA256_HEX], idbuf[48];
    char                  token[24], mark[48], meta[320], result[320];
    char                  sttl[24], sstale[24];
    double                secs;
    rg_msec_t             started;
    rg_progress_t         bar, *shown;
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

        /* an id is the task's key; one without gets one */
        if (!json_is_string(json_object_get(task, "id"))) {
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

        r = rg_stream_cli_retry(c.engine, c.redis, key, err, sizeof(err), 9,
                                argv, NULL);

        /* 1: the mark is this submit's, queue it; 0: submitted before;
         * 2: another submit is queueing it now */
        seen = r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;

        if (r == NULL) {
            fprintf(stderr, "reagent: submitting %s: %s\n", id, err);
            free(text);
            json_decref(task);
            rc = 1;
            break;
        }

        if (seen == 2) {
            fprintf(stderr, "reagent: task %s is being submitted by another "
                    "submit now: not queued again\n", id);
            dup++;

        } else if (seen != 1) {
            /* its first submit stands */
            fprintf(stderr, "reagent: task %s was submitted before: not "
                    "queued again\n", id);
            dup++;

        } else {
            rg_stream_shard_key(&c, rg_stream_shard_of(
                                    (rg_uint_t) c.qcf->shards, id), "",
                                shard_key, sizeof(shard_key));

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

            freeReplyObject(r);
            r = rg_stream_cli_retry(c.engine, c.redis, shard_key, err,
                                    sizeof(err), 5, argv, lens);
            if (r == NULL) {
                /* not queued: the next submit of it may try again */
                argv[0] = "DEL";
                argv[1] = key;
                r = rg_stream_cli_call(c.engine, c.redis, key, err,
                                       sizeof(err), 2, argv, NULL);
                fprintf(stderr, "reagent: queueing %s failed: %s\n", id,
                        err);
                if (r) {
                    freeReplyObject(r);
                }
                free(text);
                json_decref(task);
                rc = 1;
                break;
            }

            /* queued: the mark now lasts as the session may (lost, it
             * lapses and the next submit looks for the task's session) */
            argv[0] = "SET";
            argv[1] = key;
            argv[2] = mark + 2;
            argv[3] = "PX";
            argv[4] = ttl;
            kept = rg_stream_cli_retry(c.engine, c.redis, key, err,
                                       sizeof(err), 5, argv, NULL);
            if (kept) {
                freeReplyObject(kept);
            }

            if (!o->wait) {
                printf("%s\n", id);
            }
            queued++;
        }

        freeReplyObject(r);

        if (o->wait && json_object_get(want, id) == NULL) {
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
        rc = rg_stream_follow(&c, stdout, want, &got, total, last,
                              sizeof(last), shown);

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
                              NULL);
    }

    if (out != stdout) {
        fclose(out);
    }

    rg_stream_client_close(&c);

    return rc;
}


/* queue ------------------------------------------------------------------- */

static long long
rg_queue_int(rg_stream_client_t *c, const char *key, const char *cmd)
{
    char         err[256];
    long long    v;
    redisReply  *r;
    const char  *argv[2];

    argv[0] = cmd;
    argv[1] = key;

    r = rg_stream_cli_call(c->engine, c->redis, key, err, sizeof(err), 2,
                           argv, NULL);
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

        depth = rg_queue_int(&c, key, "XLEN");
        ndead = rg_queue_int(&c, dead, "XLEN");
        pending = 0;

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
    rg_submit_main
};


const rg_cli_t  rg_results_cli = {
    "results",
    "  results [--follow] [-o FILE]\n"
    "      the results stream as JSONL; --follow waits for more\n",
    NULL,
    sizeof(rg_stream_cli_opts_t),
    rg_stream_cli_option,
    rg_results_main
};


const rg_cli_t  rg_queue_status_cli = {
    "queue",
    "  queue\n"
    "      each shard's depth, entries pending per worker, dead letters\n",
    NULL,
    sizeof(rg_stream_cli_opts_t),
    rg_stream_cli_option,
    rg_queue_main
};
