/* rg_approval.c: the operator's side of parked tasks. A session of a
 * task with "approval": "park" parks itself on a dangerous call
 * (src/agent/rg_park.c): its record "P{SID}:approval" lists the calls
 * waiting, and its worker puts the task on the queue's list of parked
 * tasks ("P{q:NAME}:parked", a sorted set scored by the wait's
 * deadline). Here:
 *
 *   - a decision is one script on the session's slot: only calls that
 *     wait, each once (a second decision is refused, naming the first);
 *     the one that decides the last call is told so, and it alone queues
 *     the task again (rg_stream_submit, again), then takes it off the
 *     list;
 *   - every serve worker, on its reclaim timer, pops the tasks whose
 *     deadline passed (one script: each popped by one worker), marks
 *     their records timed_out (unless decided meanwhile) and queues them
 *     again: the session, resumed, ends approval_timed_out. A task
 *     decided whose queuing was lost (its decider died) is queued again
 *     the same way, once its deadline passed;
 *   - the record can be read (the calls and their decisions) and the
 *     list listed.
 *
 * The record is JSON (rg_park.h), read and written in the scripts with
 * Redis's cjson. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_approval.h>
#include <rg_stream.h>
#include <rg_redis.h>
#include <jansson.h>


/* KEYS: the record. ARGV: call id ("": every call waiting), "1" approve
 * or "0", the note, now (ms). */
static rg_redis_script_t  rg_approval_decide_lua = { "approval_decide",
    "local v = redis.call('GET', KEYS[1])\n"
    "if not v then return {'absent'} end\n"
    "local r = cjson.decode(v)\n"
    "if type(r.decisions) ~= 'table' then r.decisions = {} end\n"
    "if type(r.calls) ~= 'table' then r.calls = {} end\n"
    "local d, id = r.decisions, ARGV[1]\n"
    "if id ~= '' then\n"
    "  local found, ids = false, {}\n"
    "  for _, c in ipairs(r.calls) do\n"
    "    if c.id == id then found = true end\n"
    "    ids[#ids + 1] = tostring(c.id)\n"
    "  end\n"
    "  if not found then\n"
    "    return {'nocall', tostring(r.status), table.concat(ids, ', ')}\n"
    "  end\n"
    "  if type(d[id]) == 'table' then\n"
    "    return {'twice', d[id].approve == true and 'approved' or 'denied',\n"
    "            type(d[id].note) == 'string' and d[id].note or ''}\n"
    "  end\n"
    "end\n"
    "if r.status ~= 'pending' then return {'not', tostring(r.status)} end\n"
    "local n, left = 0, 0\n"
    "for _, c in ipairs(r.calls) do\n"
    "  if (id == '' or c.id == id) and type(d[c.id]) ~= 'table' then\n"
    "    d[c.id] = {approve = (ARGV[2] == '1'), note = ARGV[3],\n"
    "               at = tonumber(ARGV[4])}\n"
    "    n = n + 1\n"
    "  end\n"
    "  if type(d[c.id]) ~= 'table' then left = left + 1 end\n"
    "end\n"
    "if left == 0 then\n"
    "  r.status = 'decided'\n"
    "  r.decided = tonumber(ARGV[4])\n"
    "end\n"
    "redis.call('SET', KEYS[1], cjson.encode(r), 'KEEPTTL')\n"
    "if left == 0 then return {'complete', r.line, n} end\n"
    "return {'recorded', left, n}\n", ""
};


/* KEYS: the list of parked tasks. ARGV: now, how many at most. */
static rg_redis_script_t  rg_approval_pop_lua = { "approval_pop",
    "local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1],\n"
    "                       'LIMIT', 0, tonumber(ARGV[2]))\n"
    "for _, id in ipairs(ids) do redis.call('ZREM', KEYS[1], id) end\n"
    "return ids\n", ""
};


/* KEYS: the record. ARGV: now. A wait that passed is timed_out; a
 * decided one (or timed out before) is queued again, unless it was
 * decided only just now (its decider is queuing it). */
static rg_redis_script_t  rg_approval_timeout_lua = { "approval_timeout",
    "local v = redis.call('GET', KEYS[1])\n"
    "if not v then return {'absent'} end\n"
    "local r = cjson.decode(v)\n"
    "local now = tonumber(ARGV[1])\n"
    "if r.status == 'decided' then\n"
    "  if now - (tonumber(r.decided) or 0) < 30000 then\n"
    "    return {'recent'}\n"
    "  end\n"
    "  return {'requeue', r.line}\n"
    "end\n"
    "if r.status == 'timed_out' then return {'requeue', r.line} end\n"
    "if r.status ~= 'pending' then return {'not', tostring(r.status)} end\n"
    "if (tonumber(r.deadline) or 0) > now then return {'later'} end\n"
    "r.status = 'timed_out'\n"
    "redis.call('SET', KEYS[1], cjson.encode(r), 'KEEPTTL')\n"
    "return {'expired', r.line}\n", ""
};


/* whom an op answers: one of the callbacks, with data */
typedef struct {
    rg_approval_pt          cb;
    rg_approval_expired_pt  expired;
    rg_approval_count_pt    counted;
    rg_stream_done_pt       done;
    void                   *data;
} rg_approval_to_t;


typedef struct {
    rg_stream_t            *q;
    char                   *task_id;
    char                   *key;
    char                   *call_id;
    rg_uint_t               approve;
    rg_approval_to_t        to;
} rg_approval_op_t;





static rg_approval_op_t *
rg_approval_op(rg_stream_t *q, const char *task_id, const char *tail)
{
    rg_approval_op_t  *op;

    op = calloc(1, sizeof(rg_approval_op_t));
    if (op == NULL) {
        return NULL;
    }

    op->q = q;

    if (task_id) {
        op->task_id = strdup(task_id);
        op->key = rg_stream_task_key(q, task_id, tail);

    } else {
        op->key = rg_stream_queue_key(q, tail);
    }

    if ((task_id && op->task_id == NULL) || op->key == NULL) {
        free(op->task_id);
        free(op->key);
        free(op);
        return NULL;
    }

    return op;
}


static void
rg_approval_op_free(rg_approval_op_t *op)
{
    free(op->task_id);
    free(op->key);
    free(op->call_id);
    free(op);
}


/* an answer (msg: the failure, for all but cb) told to whichever
 * callback is set (none: nobody waits for it) */
static void
rg_approval_tell(const rg_approval_to_t *to, rg_int_t rc, const char *msg)
{
    if (to->cb) {
        to->cb(to->data, rc, msg);

    } else if (to->done) {
        to->done(to->data, msg);

    } else if (to->counted) {
        to->counted(to->data, 0, msg);

    } else if (to->expired) {
        to->expired(to->data, 0, msg);
    }
}


/* an op whose answer goes to "to"; NULL when memory ran out, which it
 * was told */
static rg_approval_op_t *
rg_approval_start(rg_stream_t *q, const char *task_id, const char *tail,
    const rg_approval_to_t *to)
{
    rg_approval_op_t  *op;

    op = rg_approval_op(q, task_id, tail);
    if (op == NULL) {
        rg_approval_tell(to, RG_ERROR, "out of memory");
        return NULL;
    }

    op->to = *to;

    return op;
}


static void
rg_approval_end(rg_approval_op_t *op, rg_int_t rc, const char *fmt, ...)
{
    char     msg[768];
    va_list  args;

    va_start(args, fmt);
    vsnprintf(msg, sizeof(msg), fmt, args);
    va_end(args);

    rg_approval_tell(&op->to, rc, msg);
    rg_approval_op_free(op);
}


/* element i of an array reply, as a string (empty when it is none) */
static rg_str_t
rg_approval_elt(redisReply *reply, size_t i)
{
    rg_str_t     s;
    redisReply  *x;

    s.data = (char *) "";
    s.len = 0;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || i >= reply->elements)
    {
        return s;
    }

    x = reply->element[i];

    if (x->type == REDIS_REPLY_STRING || x->type == REDIS_REPLY_STATUS) {
        s.data = x->str;
        s.len = x->len;
    }

    return s;
}


static long long
rg_approval_int(redisReply *reply, size_t i)
{
    if (reply && reply->type == REDIS_REPLY_ARRAY && i < reply->elements
        && reply->element[i]->type == REDIS_REPLY_INTEGER)
    {
        return reply->element[i]->integer;
    }

    return 0;
}


static rg_uint_t
rg_approval_is(rg_str_t s, const char *word)
{
    return s.len == strlen(word) && memcmp(s.data, word, s.len) == 0;
}


static rg_int_t
rg_approval_eval(rg_approval_op_t *op, rg_redis_script_t *script,
    rg_redis_reply_pt cb, int argc, const char **argv, const size_t *lens0)
{
    int        i;
    size_t     lens[8];
    rg_str_t   tag;

    if (script->sha[0] == '\0' && rg_redis_script_init(script) != RG_OK) {
        return RG_ERROR;
    }

    for (i = 0; i < argc && i < (int) rg_nelems(lens); i++) {
        lens[i] = lens0 && lens0[i] != (size_t) -1 ? lens0[i]
                                                   : strlen(argv[i]);
    }

    tag = rg_stream_key_tag(argv[0]);

    return rg_redis_eval(rg_stream_redis(op->q), &tag, script, cb, op, 1,
                         argc, argv, lens)
           ? RG_OK : RG_ERROR;
}


/* a command on the key argv[1], its answer to cb */
static rg_int_t
rg_approval_command(rg_approval_op_t *op, rg_redis_reply_pt cb, int argc,
    const char **argv)
{
    int       i;
    size_t    lens[5];
    rg_str_t  tag;

    for (i = 0; i < argc && i < (int) rg_nelems(lens); i++) {
        lens[i] = strlen(argv[i]);
    }

    tag = rg_stream_key_tag(argv[1]);

    return rg_redis_command(rg_stream_redis(op->q), &tag, 0, cb, op, argc,
                            argv, lens)
           ? RG_OK : RG_ERROR;
}


/* op's script (or, script NULL, its command on the key argv[1]) sent,
 * its answer to handler; out of memory told and op ended */
static void
rg_approval_send(rg_approval_op_t *op, rg_redis_script_t *script,
    rg_redis_reply_pt handler, int argc, const char **argv)
{
    rg_int_t  rc;

    rc = script ? rg_approval_eval(op, script, handler, argc, argv, NULL)
                : rg_approval_command(op, handler, argc, argv);

    if (rc != RG_OK) {
        rg_approval_end(op, RG_ERROR, "out of memory");
    }
}


/* an op on the key of task_id (NULL: of the queue) and tail, answering
 * "to": its script (or command) sent with argv, the key in place of each
 * NULL there */
static void
rg_approval_run(rg_stream_t *q, const char *task_id, const char *tail,
    const rg_approval_to_t *to, rg_redis_script_t *script,
    rg_redis_reply_pt handler, int argc, const char **argv)
{
    int                i;
    rg_approval_op_t  *op;

    op = rg_approval_start(q, task_id, tail, to);
    if (op == NULL) {
        return;
    }

    for (i = 0; i < argc; i++) {
        argv[i] = argv[i] ? argv[i] : op->key;
    }

    rg_approval_send(op, script, handler, argc, argv);
}


/* the answer of a read: v (taken) as JSON text, or out of memory */
static void
rg_approval_answer(rg_approval_op_t *op, json_t *v)
{
    char  *text;

    text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);

    if (text == NULL) {
        rg_approval_end(op, RG_ERROR, "out of memory");
        return;
    }

    rg_approval_tell(&op->to, RG_OK, text);
    free(text);
    rg_approval_op_free(op);
}


/* deciding ------------------------------------------------------------ */

static void
rg_approval_unwatched(void *data, redisReply *reply, const char *err)
{
    rg_approval_end(data, RG_OK, "queued again");
}


/* off the list of parked tasks: it is queued (a list that keeps it only
 * looks at it once more, when its deadline passes) */
static rg_int_t
rg_approval_unwatch(rg_approval_op_t *op)
{
    char        *key;
    rg_int_t     rc;
    const char  *argv[3];

    key = rg_stream_queue_key(op->q, ":parked");
    if (key == NULL) {
        return RG_ERROR;
    }

    argv[0] = "ZREM";
    argv[1] = key;
    argv[2] = op->task_id;

    rc = rg_approval_command(op, rg_approval_unwatched, 3, argv);
    free(key);

    return rc;
}

static void
rg_approval_queued(void *data, rg_int_t rc, const char *entry_or_err)
{
    rg_approval_op_t  *op;

    op = data;

    if (rc != RG_OK) {
        rg_log_error(RG_LOG_WARN, rg_stream_engine(op->q)->log, 0,
                     "task \"%s\": every call is decided, but the task was "
                     "not queued again (%s): it is once its "
                     "approval_timeout passes", op->task_id, entry_or_err);
        rg_approval_end(op, RG_ERROR, "decided, but not queued again (%s): "
                        "it will be once its approval_timeout passes",
                        entry_or_err);
        return;
    }

    rg_log_error(RG_LOG_NOTICE, rg_stream_engine(op->q)->log, 0, "task "
                 "\"%s\": its wait is over (decided, or cancelled): queued "
                 "again (entry %s)", op->task_id, entry_or_err);

    /* off the list of parked tasks, then the answer (a command that
     * exits on it would take its connection down before) */
    if (rg_approval_unwatch(op) != RG_OK) {
        rg_approval_end(op, RG_OK, "queued again");
    }
}


/* the task's line queued again, under its id: its wait is over */
static void
rg_approval_queue(rg_approval_op_t *op, rg_str_t line)
{
    rg_stream_submit(op->q, op->task_id, line.data, line.len, 1,
                     rg_approval_queued, op);
}


static void
rg_approval_decided(void *data, redisReply *reply, const char *err)
{
    long long          left;
    rg_str_t           what, a, b;
    rg_approval_op_t  *op;

    op = data;

    if (err) {
        rg_approval_end(op, RG_ERROR, "%s", err);
        return;
    }

    what = rg_approval_elt(reply, 0);
    a = rg_approval_elt(reply, 1);
    b = rg_approval_elt(reply, 2);

    if (rg_approval_is(what, "absent")) {
        rg_approval_end(op, RG_DECLINED, "not awaiting approval: task "
                        "\"%.128s\" has no parked calls", op->task_id);
        return;
    }

    if (rg_approval_is(what, "nocall")) {
        rg_approval_end(op, RG_DECLINED, "no such call \"%.128s\" in task "
                        "\"%.128s\" (its calls: %.*s)", op->call_id,
                        op->task_id, (int) rg_min(b.len, 400), b.data);
        return;
    }

    if (rg_approval_is(what, "twice")) {
        rg_approval_end(op, RG_DECLINED, "already decided: call \"%.128s\" "
                        "was %.*s%s%.*s%s", op->call_id, (int) a.len, a.data,
                        b.len ? " (" : "", (int) rg_min(b.len, 400), b.data,
                        b.len ? ")" : "");
        return;
    }

    if (rg_approval_is(what, "not")) {
        rg_approval_end(op, RG_DECLINED, "not awaiting approval: %s",
                        rg_approval_is(a, "timed_out")
                        ? "its wait passed approval_timeout"
                        : rg_approval_is(a, "decided")
                        ? "its calls were decided" : "its record is unknown");
        return;
    }

    if (rg_approval_is(what, "recorded")) {
        left = rg_approval_int(reply, 1);
        rg_approval_end(op, RG_OK, "recorded; %lld call%s still wait%s",
                        left, left == 1 ? "" : "s", left == 1 ? "s" : "");
        return;
    }

    if (rg_approval_is(what, "complete") && a.len) {
        /* this decision completed it: it alone queues the task */
        rg_approval_queue(op, a);
        return;
    }

    rg_approval_end(op, RG_ERROR, "an answer it cannot read");
}


void
rg_approval_decide(rg_stream_t *q, const char *task_id,
    const char *call_id, rg_uint_t approve, const char *note,
    rg_approval_pt cb, void *data)
{
    char               now[24];
    rg_approval_op_t  *op;
    const char        *argv[5];
    rg_approval_to_t   to = { .cb = cb, .data = data };

    op = rg_approval_start(q, task_id, ":approval", &to);
    if (op == NULL) {
        return;
    }

    op->call_id = strdup(call_id ? call_id : "");
    if (op->call_id == NULL) {
        rg_approval_end(op, RG_ERROR, "out of memory");
        return;
    }

    op->approve = approve;

    snprintf(now, sizeof(now), "%llu", (unsigned long long) rg_wall_msec());

    argv[0] = op->key;
    argv[1] = op->call_id;
    argv[2] = approve ? "1" : "0";
    argv[3] = note ? note : "";
    argv[4] = now;

    rg_approval_send(op, &rg_approval_decide_lua, rg_approval_decided, 5,
                     argv);
}


/* reading ------------------------------------------------------------- */

static void
rg_approval_got(void *data, redisReply *reply, const char *err)
{
    size_t              i;
    json_t             *rec, *out, *calls, *c, *d, *decisions;
    rg_approval_op_t   *op;

    op = data;

    if (err) {
        rg_approval_end(op, RG_ERROR, "%s", err);
        return;
    }

    rec = reply && reply->type == REDIS_REPLY_STRING
          ? json_loadb(reply->str, reply->len, 0, NULL) : NULL;

    if (rec == NULL) {
        rg_approval_end(op, RG_DECLINED, "not awaiting approval: task "
                        "\"%.128s\" has no parked calls", op->task_id);
        return;
    }

    calls = json_array();
    out = calls ? json_pack("{s:s, s:O?, s:O?, s:O?, s:O?, s:o}",
                            "task", op->task_id,
                            "status", json_object_get(rec, "status"),
                            "round", json_object_get(rec, "round"),
                            "parked", json_object_get(rec, "parked"),
                            "deadline", json_object_get(rec, "deadline"),
                            "calls", calls)
                : NULL;

    decisions = json_object_get(rec, "decisions");

    json_array_foreach(json_object_get(rec, "calls"), i, c) {
        if (out == NULL) {
            break;
        }

        d = json_object_get(decisions,
                            json_string_value(json_object_get(c, "id"))
                            ? json_string_value(json_object_get(c, "id"))
                            : "");

        json_array_append_new(calls,
                              json_pack("{s:O?, s:O?, s:O?, s:O?}",
                                        "id", json_object_get(c, "id"),
                                        "name", json_object_get(c, "name"),
                                        "arguments",
                                        json_object_get(c, "arguments"),
                                        "decision", json_is_object(d) ? d
                                                                      : NULL));
    }

    json_decref(rec);
    rg_approval_answer(op, out);
}


void
rg_approval_get(rg_stream_t *q, const char *task_id, rg_approval_pt cb,
    void *data)
{
    const char        *argv[] = { "GET", NULL };
    rg_approval_to_t   to = { .cb = cb, .data = data };

    rg_approval_run(q, task_id, ":approval", &to, NULL, rg_approval_got, 2,
                    argv);
}


static void
rg_approval_listed(void *data, redisReply *reply, const char *err)
{
    char              *id;
    size_t             i;
    json_t            *list;
    rg_str_t           v, score;
    rg_approval_op_t  *op;

    op = data;

    if (err) {
        rg_approval_end(op, RG_ERROR, "%s", err);
        return;
    }

    list = json_array();

    /* [member, score, member, score, …] */
    for (i = 0; list && reply && reply->type == REDIS_REPLY_ARRAY
                && i + 1 < reply->elements; i += 2)
    {
        v = rg_approval_elt(reply, i);
        score = rg_approval_elt(reply, i + 1);
        id = rg_strdup_len(v.data, v.len);

        if (id) {
            json_array_append_new(list, json_pack("{s:s, s:I}", "task", id,
                                  "deadline",
                                  (json_int_t) strtoll(score.len
                                                       ? score.data : "0",
                                                       NULL, 10)));
        }

        free(id);
    }

    rg_approval_answer(op, list);
}


void
rg_approval_list(rg_stream_t *q, rg_uint_t max, rg_approval_pt cb,
    void *data)
{
    char               stop[24];
    const char        *argv[] = { "ZRANGE", NULL, "0", stop, "WITHSCORES" };
    rg_approval_to_t   to = { .cb = cb, .data = data };

    snprintf(stop, sizeof(stop), "%ld", (long) (max ? max : 1) - 1);

    rg_approval_run(q, NULL, ":parked", &to, NULL, rg_approval_listed, 5,
                    argv);
}


/* the list of parked tasks ------------------------------------------- */

static void
rg_approval_watched(void *data, redisReply *reply, const char *err)
{
    rg_approval_op_t  *op;

    op = data;

    rg_approval_tell(&op->to, RG_OK, err);
    rg_approval_op_free(op);
}


void
rg_approval_watch(rg_stream_t *q, const char *task_id, rg_msec_t deadline,
    rg_stream_done_pt cb, void *data)
{
    char               score[24];
    const char        *argv[] = { "ZADD", NULL, score, task_id };
    rg_approval_to_t   to = { .done = cb, .data = data };

    snprintf(score, sizeof(score), "%llu", (unsigned long long) deadline);

    rg_approval_run(q, NULL, ":parked", &to, NULL, rg_approval_watched, 4,
                    argv);
}


static void
rg_approval_counted(void *data, redisReply *reply, const char *err)
{
    rg_approval_op_t  *op;

    op = data;

    if (err == NULL && (reply == NULL || reply->type != REDIS_REPLY_INTEGER)) {
        err = "ZCARD answered no integer";
    }

    op->to.counted(op->to.data, err ? 0 : (int64_t) reply->integer, err);
    rg_approval_op_free(op);
}


void
rg_approval_count(rg_stream_t *q, rg_approval_count_pt cb, void *data)
{
    const char        *argv[] = { "ZCARD", NULL };
    rg_approval_to_t   to = { .counted = cb, .data = data };

    rg_approval_run(q, NULL, ":parked", &to, NULL, rg_approval_counted, 2,
                    argv);
}


/* timing out ---------------------------------------------------------- */

static void
rg_approval_requeued(void *data, rg_int_t rc, const char *entry_or_err)
{
    rg_approval_op_t  *op;

    op = data;

    if (rc != RG_OK) {
        /* on the list again, for the next worker's look */
        rg_log_error(RG_LOG_WARN, rg_stream_engine(op->q)->log, 0, "task "
                     "\"%s\": its approval wait ended but it was not queued "
                     "again (%s); trying again later", op->task_id,
                     entry_or_err);
        rg_approval_watch(op->q, op->task_id, rg_wall_msec(), NULL, NULL);
    }

    rg_approval_op_free(op);
}


static void
rg_approval_timed_out(void *data, redisReply *reply, const char *err)
{
    rg_str_t           what, line;
    rg_approval_op_t  *op;

    op = data;

    if (err) {
        rg_approval_watch(op->q, op->task_id, rg_wall_msec(), NULL, NULL);
        rg_approval_op_free(op);
        return;
    }

    what = rg_approval_elt(reply, 0);
    line = rg_approval_elt(reply, 1);

    if (rg_approval_is(what, "recent")) {
        /* its decider is queuing it: looked at again later */
        rg_approval_watch(op->q, op->task_id, rg_wall_msec() + 30000, NULL,
                          NULL);
        rg_approval_op_free(op);
        return;
    }

    if ((rg_approval_is(what, "expired") || rg_approval_is(what, "requeue"))
        && line.len)
    {
        rg_log_error(RG_LOG_NOTICE, rg_stream_engine(op->q)->log, 0, "task "
                     "\"%s\": %s: queued again", op->task_id,
                     rg_approval_is(what, "expired")
                     ? "no decision within approval_timeout"
                     : "decided, its queuing lost");
        rg_stream_submit(op->q, op->task_id, line.data, line.len, 1,
                         rg_approval_requeued, op);
        return;
    }

    rg_approval_op_free(op);          /* gone, or not waiting any more */
}


static void
rg_approval_popped(void *data, redisReply *reply, const char *err)
{
    char               now[24], *id;
    size_t             i;
    rg_uint_t          n;
    rg_str_t           v;
    rg_approval_op_t  *op, *t;
    const char        *argv[2];

    op = data;
    n = 0;

    snprintf(now, sizeof(now), "%llu", (unsigned long long) rg_wall_msec());

    for (i = 0; err == NULL && reply && reply->type == REDIS_REPLY_ARRAY
                && i < reply->elements; i++)
    {
        v = rg_approval_elt(reply, i);
        id = v.len ? rg_strdup_len(v.data, v.len) : NULL;
        t = id ? rg_approval_op(op->q, id, ":approval") : NULL;
        free(id);

        if (t == NULL) {
            continue;
        }

        argv[0] = t->key;
        argv[1] = now;

        if (rg_approval_eval(t, &rg_approval_timeout_lua,
                             rg_approval_timed_out, 2, argv, NULL) != RG_OK)
        {
            rg_approval_op_free(t);
            continue;
        }

        n++;
    }

    if (op->to.expired) {
        op->to.expired(op->to.data, n, err);
    }

    rg_approval_op_free(op);
}


void
rg_approval_expire(rg_stream_t *q, rg_uint_t max,
    rg_approval_expired_pt cb, void *data)
{
    char               now[24], count[24];
    const char        *argv[] = { NULL, now, count };
    rg_approval_to_t   to = { .expired = cb, .data = data };

    snprintf(now, sizeof(now), "%llu", (unsigned long long) rg_wall_msec());
    snprintf(count, sizeof(count), "%lu", (unsigned long) (max ? max : 1));

    rg_approval_run(q, NULL, ":parked", &to, &rg_approval_pop_lua,
                    rg_approval_popped, 3, argv);
}


/* cancelling ---------------------------------------------------------- */

/* KEYS: the record. ARGV: why, now. A task still waiting is cancelled
 * (and queued again, for its session to end so); one decided or timed out
 * is queued already, and the worker that runs it sees the cancel set */
static rg_redis_script_t  rg_approval_cancel_lua = { "approval_cancel",
    "local v = redis.call('GET', KEYS[1])\n"
    "if not v then return {'absent'} end\n"
    "local r = cjson.decode(v)\n"
    "if r.status ~= 'pending' then return {'not', tostring(r.status)} end\n"
    "r.status = 'cancelled'\n"
    "r.reason = ARGV[1]\n"
    "r.decided = tonumber(ARGV[2])\n"
    "redis.call('SET', KEYS[1], cjson.encode(r), 'KEEPTTL')\n"
    "return {'cancelled', r.line}\n", ""
};


static void
rg_approval_cancelled(void *data, redisReply *reply, const char *err)
{
    rg_str_t           what, line;
    rg_approval_op_t  *op;

    op = data;

    if (err) {
        rg_approval_end(op, RG_ERROR, "%s", err);
        return;
    }

    what = rg_approval_elt(reply, 0);
    line = rg_approval_elt(reply, 1);

    if (rg_approval_is(what, "cancelled") && line.len) {
        /* its session, resumed, ends cancelled at once */
        rg_approval_queue(op, line);
        return;
    }

    rg_approval_end(op, RG_DECLINED, "not awaiting approval");
}


void
rg_approval_cancel(rg_stream_t *q, const char *task_id, const char *why,
    rg_approval_pt cb, void *data)
{
    char               now[24];
    const char        *argv[] = { NULL, why, now };
    rg_approval_to_t   to = { .cb = cb, .data = data };

    snprintf(now, sizeof(now), "%llu", (unsigned long long) rg_wall_msec());

    rg_approval_run(q, task_id, ":approval", &to, &rg_approval_cancel_lua,
                    rg_approval_cancelled, 3, argv);
}
