/* rg_stream_cli_watch.c: what `submit --wait` (rg_stream_cli_submit.c)
 * does about a Redis that lost its data: every few seconds one round trip
 * looks at the tasks it waits for; one of which nothing is left (no mark,
 * session, result or entry) is queued again, once, under a mark that
 * says so. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_stream_cli_int.h>
#include <rg_task.h>


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
rg_int_t
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


void
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
rg_int_t
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
 * it again is none), session, result or lease; those with none of them
 * at two looks in a row and no entry queued are queued again (their ids
 * keep a task that ran meanwhile from running twice). */
void
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
        fprintf(stderr, "reagent: %lu task%s vanished from Redis (no mark, "
                "session, result or queue entry of %s is left: Redis lost "
                "its data): queued again: %.*s", (unsigned long) again,
                again == 1 ? "" : "s", again == 1 ? "it" : "them",
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
