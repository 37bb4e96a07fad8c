/* rg_store_redis.c: the store interface (rg_store.h) on Redis, through the
 * asynchronous client (rg_redis.h). Every key carries the configured
 * prefix; a session's keys share its hash tag ("rg:{s-…}:meta"), so one
 * session lives in one cluster slot and a script may touch all of them.
 * Operations of several steps are one Lua script each (checkpoint, load,
 * put, lease, take, cooldown, incr), sent by SHA: one round trip, atomic.
 * Time for the shared buckets is the Redis server's, so processes on
 * machines with different clocks agree. This file owns the store's
 * lifetime, the arguments of a command, the answers and the operations
 * on keys of their own (get, set, del, incr, the shared limits); those
 * on a session's keys are rg_store_redis_session.c's, the epoch
 * rg_store_redis_epoch.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store_redis_int.h>


/* KEYS: the counter. ARGV: by, ttl (set when it has none) */
static rg_redis_script_t  rg_sr_incr_lua = { "incr",
    "local v = redis.call('INCRBY', KEYS[1], ARGV[1])\n"
    "if tonumber(ARGV[2]) > 0 and redis.call('PTTL', KEYS[1]) < 0 then\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "end\n"
    "return v\n", ""
};


static rg_redis_script_t  *rg_sr_scripts[] = {
    &rg_sr_checkpoint_lua, &rg_sr_load_lua, &rg_sr_put_lua, &rg_sr_lease_lua,
    &rg_sr_release_lua, &rg_sr_take_lua, &rg_sr_cooldown_lua,
    &rg_sr_slot_lua, &rg_sr_incr_lua,
    &rg_sr_append_lua, &rg_sr_epoch_lua,
    NULL
};


/* the arguments of a command to the store st: its keys take st's prefix */
void
rg_sr_args_init(rg_sr_args_t *a, rg_store_t *st)
{
    a->r = (rg_store_redis_t *) st;
    a->argc = 0;
    a->nargs = RG_STORE_REDIS_ARGS;
    a->nkeys = 0;
    a->argv = a->argv0;
    a->lens = a->lens0;
    a->used = 0;
    a->overflow = 0;
}


void
rg_sr_arg(rg_sr_args_t *a, const char *p, size_t len)
{
    if (a->argc == a->nargs) {
        a->overflow = 1;
        return;
    }

    a->argv[a->argc] = p;
    a->lens[a->argc] = len;
    a->argc++;
}


void
rg_sr_argf(rg_sr_args_t *a, const char *fmt, ...)
{
    int      n;
    va_list  args;

    va_start(args, fmt);
    n = vsnprintf(a->buf + a->used, sizeof(a->buf) - a->used, fmt, args);
    va_end(args);

    if (n < 0 || (size_t) n >= sizeof(a->buf) - a->used) {
        a->overflow = 1;
        return;
    }

    rg_sr_arg(a, a->buf + a->used, n);
    a->used += n + 1;
}


/* a number, without the printf machinery: a checkpoint has several */
void
rg_sr_num(rg_sr_args_t *a, int64_t v)
{
    size_t  n;

    if (sizeof(a->buf) - a->used < RG_INT64_LEN + 1) {
        a->overflow = 1;
        return;
    }

    n = rg_sprint_int(a->buf + a->used, v);
    a->buf[a->used + n] = '\0';
    rg_sr_arg(a, a->buf + a->used, n);
    a->used += n + 1;
}


/* prefix + "{id}:name" */
void
rg_sr_session_key(rg_sr_args_t *a, const rg_str_t *id, const char *name,
    size_t len)
{
    char                    *p;
    size_t                   n;
    const rg_store_redis_t  *r;

    r = a->r;

    n = r->prefix_len + 1 + id->len + 2 + len;

    if (n >= sizeof(a->buf) - a->used) {
        a->overflow = 1;
        return;
    }

    p = a->buf + a->used;
    memcpy(p, r->prefix, r->prefix_len);
    p += r->prefix_len;
    *p++ = '{';
    memcpy(p, id->data, id->len);
    p += id->len;
    *p++ = '}';
    *p++ = ':';
    memcpy(p, name, len);
    p[len] = '\0';

    rg_sr_arg(a, a->buf + a->used, n);
    a->used += n + 1;
    a->nkeys++;
}


/* the keys the fencing of a write reads (RG_SR_FENCE_LUA): the session's
 * lease and its fencing counter */
void
rg_sr_fence_keys(rg_sr_args_t *a, const rg_str_t *id)
{
    rg_sr_session_key(a, id, "lease", 5);
    rg_sr_session_key(a, id, "fence", 5);
}


static void
rg_sr_key(rg_sr_args_t *a, const rg_str_t *key)
{
    rg_sr_argf(a, "%s%.*s", a->r->prefix, (int) key->len, key->data);
    a->nkeys++;
}


/* the hash tag of a key ("rg:{s-1}:meta" → "s-1"), as Redis Cluster
 * reads it; the whole key, prefix and all, when it has none */
static rg_str_t
rg_sr_tag(const rg_str_t *key)
{
    char      *open, *close;
    rg_str_t   tag;

    tag = *key;
    open = memchr(key->data, '{', key->len);

    if (open) {
        close = memchr(open + 1, '}', key->len - (open + 1 - key->data));
        if (close && close > open + 1) {
            tag.data = open + 1;
            tag.len = close - open - 1;
        }
    }

    return tag;
}


/* the tag of the key that argument i of a holds, as it goes out */
static rg_str_t
rg_sr_sent_tag(rg_sr_args_t *a, int i)
{
    rg_str_t  key;

    key.data = (char *) a->argv[i];
    key.len = a->lens[i];

    return rg_sr_tag(&key);
}


void
rg_sr_answer(rg_store_op_t *op, rg_store_res_t *res)
{
    rg_store_pt   cb;
    void         *data;

    cb = op->cb;
    data = op->data;
    res->issued = op->issued;

    if (res->rc == RG_ERROR) {
        op->st->stats.errors++;
    }

    free(op);

    if (cb) {
        cb(data, res);
    }
}


static int64_t
rg_sr_int(redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER) {
        return r->integer;
    }

    if (r->type == REDIS_REPLY_STRING) {
        return strtoll(r->str, NULL, 10);
    }

    return 0;
}


/* a script's refusal is an answer, not a failure: "FENCED why" is
 * declined as "fenced: why"; a store that forgot the session's keys
 * (LOST) has its epoch read again */
static const char  *rg_sr_refusals[][2] = {
    { "FENCED ", "fenced" },
    { "LOST ", "lost" },
    { "DIVERGED ", "diverged" }
};


static void
rg_sr_error(rg_store_op_t *op, const char *err)
{
    char            why[320];
    size_t          n;
    rg_uint_t       i;
    rg_store_res_t  res;

    memset(&res, 0, sizeof(res));
    res.rc = RG_ERROR;
    res.err = err;

    for (i = 0; i < rg_nelems(rg_sr_refusals); i++) {
        n = strlen(rg_sr_refusals[i][0]);

        if (strncmp(err, rg_sr_refusals[i][0], n) == 0) {
            res.rc = RG_DECLINED;
            snprintf(why, sizeof(why), "%s: %s", rg_sr_refusals[i][1],
                     err + n);
            res.err = why;

            if (strcmp(rg_sr_refusals[i][1], "lost") == 0) {
                rg_sr_check(op->st);
            }

            break;
        }
    }

    rg_sr_answer(op, &res);
}


static void
rg_sr_reply_handler(void *data, redisReply *reply, const char *err)
{
    rg_store_op_t   *op;
    rg_store_res_t   res;
    char             why[320];

    op = data;
    memset(&res, 0, sizeof(res));
    res.rc = RG_OK;

    if (err) {
        rg_sr_error(op, err);
        return;
    }

    switch (op->kind) {

    case RG_SR_VALUE:
        if (reply->type == REDIS_REPLY_NIL) {
            res.rc = RG_DECLINED;
        } else if (reply->type == REDIS_REPLY_STRING) {
            res.value.data = reply->str;
            res.value.len = reply->len;
        } else {
            res.rc = RG_ERROR;
            res.err = "unexpected reply";
        }
        break;

    case RG_SR_SETNX:
        if (reply->type == REDIS_REPLY_STRING) {
            res.rc = RG_DECLINED;
            res.err = "exists";
            res.value.data = reply->str;
            res.value.len = reply->len;
        }
        break;

    case RG_SR_INT:
    case RG_SR_CHECKPOINT:
        res.num = rg_sr_int(reply);
        break;

    case RG_SR_LOAD:
        rg_sr_load_reply(op, reply, &res);
        return;

    case RG_SR_PAIR:
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 2) {
            res.rc = RG_ERROR;
            res.err = "unexpected reply";
            break;
        }

        if (rg_sr_int(reply->element[0]) == 1) {
            res.num = rg_sr_int(reply->element[1]);
            break;
        }

        res.rc = RG_DECLINED;
        snprintf(why, sizeof(why), "%.*s", (int) reply->element[1]->len,
                 reply->element[1]->str ? reply->element[1]->str : "");
        res.err = why;

        if (strncmp(why, "gone", 4) == 0) {
            rg_sr_check(op->st);
        }

        if (reply->elements > 2) {
            res.value.data = reply->element[2]->str;
            res.value.len = reply->element[2]->len;
        }
        break;

    case RG_SR_STATUS:
        break;

    case RG_SR_RANGE:
        rg_sr_range_reply(op, reply, &res);
        return;
    }

    rg_sr_answer(op, &res);
}


/* sends what a holds; NULL without memory */
rg_store_op_t *
rg_sr_send(rg_store_t *st, const rg_str_t *tag, rg_sr_args_t *a,
    rg_redis_script_t *script, rg_store_redis_kind_e kind, rg_store_pt cb,
    void *data)
{
    rg_store_op_t     *op;
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;
    st->stats.ops++;

    if (a->overflow) {
        return NULL;
    }

    op = calloc(1, sizeof(rg_store_op_t));
    if (op == NULL) {
        return NULL;
    }

    op->st = st;
    op->cb = cb;
    op->data = data;
    op->kind = kind;
    op->issued = rg_monotonic_msec();

    if (script) {
        op->cmd = rg_redis_eval(r->redis, tag, script, rg_sr_reply_handler,
                                op, a->nkeys, a->argc, a->argv, a->lens);
    } else {
        op->cmd = rg_redis_command(r->redis, tag, 0, rg_sr_reply_handler, op,
                                   a->argc, a->argv, a->lens);
    }

    if (op->cmd == NULL) {
        free(op);
        return NULL;
    }

    return op;
}


/* a command of one key: GET, DEL */
static rg_store_op_t *
rg_sr_key_command(rg_store_t *st, const char *name, const rg_str_t *key,
    rg_store_redis_kind_e kind, rg_store_pt cb, void *data)
{
    rg_str_t      tag;
    rg_sr_args_t  a;

    rg_sr_args_init(&a, st);
    rg_sr_arg(&a, name, strlen(name));
    rg_sr_key(&a, key);
    tag = rg_sr_sent_tag(&a, 1);

    return rg_sr_send(st, &tag, &a, NULL, kind, cb, data);
}


static rg_store_op_t *
rg_sr_get(rg_store_t *st, const rg_str_t *key, rg_store_pt cb, void *data)
{
    st->stats.gets++;

    return rg_sr_key_command(st, "GET", key, RG_SR_VALUE, cb, data);
}


static rg_store_op_t *
rg_sr_set(rg_store_t *st, const rg_str_t *key, const rg_str_t *value,
    rg_msec_t ttl, rg_uint_t flags, rg_store_pt cb, void *data)
{
    rg_sr_args_t  a;
    rg_str_t      tag;

    rg_sr_args_init(&a, st);
    st->stats.sets++;

    rg_sr_arg(&a, "SET", 3);
    rg_sr_key(&a, key);
    rg_sr_arg(&a, value->data, value->len);

    if (ttl) {
        rg_sr_arg(&a, "PX", 2);
        rg_sr_argf(&a, "%llu", (unsigned long long) ttl);
    }

    if (flags & RG_STORE_NX) {
        /* Redis 7: the old value when it exists (and nothing is set) */
        rg_sr_arg(&a, "NX", 2);
        rg_sr_arg(&a, "GET", 3);
    }

    tag = rg_sr_sent_tag(&a, 1);

    return rg_sr_send(st, &tag, &a, NULL, (flags & RG_STORE_NX)
                                          ? RG_SR_SETNX : RG_SR_STATUS,
                      cb, data);
}


static rg_store_op_t *
rg_sr_del(rg_store_t *st, const rg_str_t *key, rg_store_pt cb, void *data)
{
    return rg_sr_key_command(st, "DEL", key, RG_SR_INT, cb, data);
}


static rg_store_op_t *
rg_sr_incr(rg_store_t *st, const rg_str_t *key, int64_t by, rg_msec_t ttl,
    rg_store_pt cb, void *data)
{
    rg_str_t      tag;
    rg_sr_args_t  a;

    rg_sr_args_init(&a, st);
    rg_sr_key(&a, key);
    rg_sr_argf(&a, "%lld", (long long) by);
    rg_sr_argf(&a, "%llu", (unsigned long long) ttl);
    tag = rg_sr_sent_tag(&a, 0);

    return rg_sr_send(st, &tag, &a, &rg_sr_incr_lua, RG_SR_INT, cb, data);
}


static void
rg_sr_cancel(rg_store_t *st, rg_store_op_t *op)
{
    if (op == NULL) {
        return;
    }

    rg_redis_cancel(op->cmd);
    free(op);
}


static void
rg_sr_destroy(rg_store_t *st)
{
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;
    r->destroying = 1;
    evtimer_del(&r->epoch_ev);

    /* every pending command is answered "shutting down" */
    rg_redis_destroy(r->redis);
    free(r->prefix);
    free(r);
}


rg_store_t *
rg_store_redis_create(struct event_base *base, struct evdns_base *dns,
    const rg_store_redis_conf_t *conf, rg_log_t *log)
{
    rg_uint_t          i;
    rg_redis_conf_t    rc;
    rg_store_redis_t  *r;

    for (i = 0; rg_sr_scripts[i]; i++) {
        if (rg_sr_scripts[i]->sha[0] == '\0'
            && rg_redis_script_init(rg_sr_scripts[i]) != RG_OK)
        {
            return NULL;
        }
    }

    r = calloc(1, sizeof(rg_store_redis_t));
    if (r == NULL) {
        return NULL;
    }

    r->prefix = strdup(conf->prefix ? conf->prefix : "rg:");
    if (r->prefix == NULL) {
        free(r);
        return NULL;
    }

    r->prefix_len = strlen(r->prefix);

    r->log = log;
    r->cluster = conf->redis.cluster ? 1 : 0;
    evtimer_assign(&r->epoch_ev, base, rg_sr_epoch_timer, r);

    rc = conf->redis;
    rc.scripts = rg_sr_scripts;
    rc.on_up = rg_sr_up;
    rc.up_data = r;

    r->redis = rg_redis_create(base, dns, &rc, log);
    if (r->redis == NULL) {
        free(r->prefix);
        free(r);
        return NULL;
    }

    r->store.name = "redis";
    r->store.durable = 1;
    r->store.get = rg_sr_get;
    r->store.set = rg_sr_set;
    r->store.del = rg_sr_del;
    r->store.incr = rg_sr_incr;
    r->store.checkpoint = rg_sr_checkpoint;
    r->store.load = rg_sr_load;
    r->store.put = rg_sr_put;
    r->store.lease = rg_sr_lease;
    r->store.release = rg_sr_release;
    r->store.take = rg_sr_take;
    r->store.cooldown = rg_sr_cooldown;
    r->store.slot = rg_sr_slot;
    r->store.append = rg_sr_append;
    r->store.range = rg_sr_range;
    r->store.cancel = rg_sr_cancel;
    r->store.destroy = rg_sr_destroy;
    r->store.check = rg_sr_check;

    return &r->store;
}


rg_uint_t
rg_store_redis_persists(rg_store_t *st)
{
    return ((rg_store_redis_t *) st)->persist;
}


rg_redis_t *
rg_store_redis_client(rg_store_t *st)
{
    return strcmp(st->name, "redis") == 0 ? ((rg_store_redis_t *) st)->redis
                                          : NULL;
}


/* shared limits -------------------------------------------------------
 *
 * Token buckets (a hash "PREFIXrl:{cool}:NAME:I"), cool-downs
 * ("PREFIXcd:{cool}", the end in ms) and slots (a sorted set
 * "PREFIXsl:{cool}:NAME" of holders by expiry), each a Lua script on the
 * Redis server's clock. */

/* KEYS: the cool-down, then one per bucket. ARGV: n, then rate,
 * capacity, cost, force per bucket. All or nothing; the wait in ms, 0:
 * taken. A forced bucket (a correction) is charged, never waited for. */
rg_redis_script_t  rg_sr_take_lua = { "take",
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "local wait = 0\n"
    "local cd = tonumber(redis.call('GET', KEYS[1]))\n"
    "if cd and cd > now then wait = cd - now end\n"
    "local n = tonumber(ARGV[1])\n"
    "local left = {}\n"
    "for i = 1, n do\n"
    "  local rate = tonumber(ARGV[4 * i - 2])\n"
    "  local cap = tonumber(ARGV[4 * i - 1])\n"
    "  local cost = tonumber(ARGV[4 * i])\n"
    "  local force = ARGV[4 * i + 1] == '1'\n"
    "  local b = redis.call('HMGET', KEYS[1 + i], 'tokens', 'at')\n"
    "  local tokens = tonumber(b[1]) or cap\n"
    "  local at = tonumber(b[2]) or now\n"
    "  if now > at then\n"
    "    tokens = math.min(cap, tokens + (now - at) * rate / 60000)\n"
    "  end\n"
    "  left[i] = tokens\n"
    "  if tokens < cost and rate > 0 and not force then\n"
    "    wait = math.max(wait, (cost - tokens) * 60000 / rate)\n"
    "  end\n"
    "end\n"
    "for i = 1, n do\n"
    "  if wait == 0 or ARGV[4 * i + 1] == '1' then\n"
    "    left[i] = math.min(tonumber(ARGV[4 * i - 1]), "
    "left[i] - tonumber(ARGV[4 * i]))\n"
    "  end\n"
    "  redis.call('HSET', KEYS[1 + i], 'tokens', tostring(left[i]), "
    "'at', now)\n"
    "  redis.call('PEXPIRE', KEYS[1 + i], 120000)\n"
    "end\n"
    "return math.ceil(wait)\n", ""
};


/* KEYS: the cool-down. ARGV: ms */
rg_redis_script_t  rg_sr_cooldown_lua = { "cooldown",
    "local t = redis.call('TIME')\n"
    "local untl = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[1])\n"
    "local cur = tonumber(redis.call('GET', KEYS[1]))\n"
    "if not cur or cur < untl then\n"
    "  redis.call('SET', KEYS[1], untl, 'PX', ARGV[1])\n"
    "end\n"
    "return 1\n", ""
};


/* KEYS: the slots (a sorted set of holders by expiry), the cool-down.
 * ARGV: holder, max (0: give it back), ttl. The wait in ms, 0: taken */
rg_redis_script_t  rg_sr_slot_lua = { "slot",
    "if tonumber(ARGV[2]) == 0 then\n"
    "  redis.call('ZREM', KEYS[1], ARGV[1])\n"
    "  return 0\n"
    "end\n"
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "local cd = tonumber(redis.call('GET', KEYS[2]))\n"
    "if cd and cd > now then return cd - now end\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
    "if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false\n"
    "   and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then\n"
    "  return 20\n"
    "end\n"
    "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
    "return 0\n", ""
};


/* the cool-down's key, "PREFIXcd:{cool}" */
static void
rg_sr_cool_key(rg_sr_args_t *a, const rg_str_t *cool)
{
    rg_sr_argf(a, "%scd:{%.*s}", a->r->prefix, (int) cool->len, cool->data);
    a->nkeys++;
}


rg_store_op_t *
rg_sr_take(rg_store_t *st, const rg_str_t *cool, const rg_store_bucket_t *b,
    rg_uint_t nb, rg_store_pt cb, void *data)
{
    rg_uint_t     i;
    rg_sr_args_t  a;

    rg_sr_args_init(&a, st);
    a.overflow = nb > 8;

    rg_sr_cool_key(&a, cool);

    for (i = 0; i < nb; i++) {
        rg_sr_argf(&a, "%srl:{%.*s}:%.*s:%lu", a.r->prefix, (int) cool->len,
                   cool->data, (int) b[i].name.len, b[i].name.data,
                   (unsigned long) i);
        a.nkeys++;
    }

    rg_sr_argf(&a, "%lu", (unsigned long) nb);

    for (i = 0; i < nb; i++) {
        rg_sr_argf(&a, "%.17g", b[i].rate);
        rg_sr_argf(&a, "%.17g", b[i].capacity);
        rg_sr_argf(&a, "%.17g", b[i].cost);
        rg_sr_argf(&a, "%d", b[i].force ? 1 : 0);
    }

    return rg_sr_send(st, cool, &a, &rg_sr_take_lua, RG_SR_INT, cb, data);
}


rg_store_op_t *
rg_sr_cooldown(rg_store_t *st, const rg_str_t *cool, rg_msec_t ms,
    rg_store_pt cb, void *data)
{
    rg_sr_args_t  a;

    rg_sr_args_init(&a, st);
    a.overflow = ms == 0;

    rg_sr_cool_key(&a, cool);
    rg_sr_argf(&a, "%llu", (unsigned long long) ms);

    return rg_sr_send(st, cool, &a, &rg_sr_cooldown_lua, RG_SR_INT, cb, data);
}


rg_store_op_t *
rg_sr_slot(rg_store_t *st, const rg_str_t *cool, const rg_str_t *name,
    const rg_str_t *holder, rg_uint_t max, rg_msec_t ttl, rg_store_pt cb,
    void *data)
{
    rg_sr_args_t  a;

    rg_sr_args_init(&a, st);

    rg_sr_argf(&a, "%ssl:{%.*s}:%.*s", a.r->prefix, (int) cool->len,
               cool->data, (int) name->len, name->data);
    a.nkeys++;
    rg_sr_cool_key(&a, cool);
    rg_sr_argf(&a, "%.*s", (int) holder->len, holder->data);
    rg_sr_argf(&a, "%lu", (unsigned long) max);
    rg_sr_argf(&a, "%llu", (unsigned long long) (ttl ? ttl : 1));

    return rg_sr_send(st, cool, &a, &rg_sr_slot_lua, RG_SR_INT, cb, data);
}
