/* rg_store_redis.c: the store interface (rg_store.h) on Redis, through the
 * asynchronous client (rg_redis.h). Every key carries the configured
 * prefix; a session's keys share its hash tag ("rg:{s-…}:meta"), so one
 * session lives in one cluster slot and a script may touch all of them.
 * Operations of several steps are one Lua script each (checkpoint, load,
 * put, lease, take, cooldown, incr), sent by SHA: one round trip, atomic.
 * Time for the shared buckets is the Redis server's, so processes on
 * machines with different clocks agree. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>
#include <rg_store_redis.h>
#include <rg_redis.h>
#include <rg_digest.h>
#include <event2/event_struct.h>


#define RG_STORE_REDIS_ARGS  64       /* arguments of a small operation */
#define RG_SR_EPOCH_EVERY    5000     /* ms between reads of the epoch */

/* a fenced write that finds neither the session's lease nor its fencing
 * counter: nobody took it over, the store forgot it */
#define RG_SR_LOST  /* in a Lua string: no quote */                       \
    "the store holds neither the lease of the session nor its fencing "    \
    "counter: it lost them (Redis restarted without its data, or was "     \
    "emptied)"

#define RG_STORE_REDIS_ITEMS 512      /* reply items read without malloc */


static uint64_t rg_sr_check(rg_store_t *st);


typedef enum {
    RG_SR_VALUE = 0,          /* a bulk string or nil */
    RG_SR_SETNX,              /* SET … NX GET: nil when set */
    RG_SR_INT,
    RG_SR_CHECKPOINT,
    RG_SR_LOAD,
    RG_SR_PAIR,               /* {1, n} or {0, why, value} */
    RG_SR_STATUS,
    RG_SR_RANGE               /* XRANGE: {id, {field, value, …}}, … */
} rg_store_redis_kind_e;


struct rg_store_op_s {
    rg_store_t             *st;
    rg_redis_cmd_t         *cmd;
    rg_store_pt             cb;
    void                   *data;
    rg_store_redis_kind_e   kind;
    rg_msec_t               issued;
};


typedef struct {
    rg_store_t          store;        /* first */
    rg_redis_t         *redis;
    char               *prefix;
    size_t              prefix_len;
    rg_log_t           *log;
    struct event        epoch_ev;     /* the next read of the epoch */
    rg_redis_cmd_t     *epoch_cmd;    /* a read in flight */
    unsigned            epoch_again:1;  /* asked while one was */
    unsigned            persist:2;    /* RG_STORE_PERSIST_* */
    unsigned            destroying:1;
    unsigned            cluster:1;    /* the epoch's slot is another */
} rg_store_redis_t;


/* KEYS: meta, msgs, lease, fence, kept. ARGV: lease token (0: none),
 * base, ttl, n, release (1: the lease goes too), n messages, then name,
 * value pairs. The values kept as
 * long as the session (put with RG_STORE_KEEP: "{id}:kept" holds their
 * names) get the ttl too: their keys are made here from kept's, so they
 * share its hash tag and its cluster slot */
static rg_redis_script_t  rg_sr_checkpoint_lua = { "checkpoint",
    "local lease = tonumber(ARGV[1])\n"
    "if lease ~= 0 then\n"
    "  local cur = redis.call('GET', KEYS[3])\n"
    "  local fence = redis.call('GET', KEYS[4])\n"
    "  if not cur and not fence then\n"
    "    return redis.error_reply('LOST " RG_SR_LOST "')\n"
    "  end\n"
    "  if (cur and tonumber(string.match(cur, '^%d+')) ~= lease)\n"
    "     or (not cur and tonumber(fence) ~= lease)\n"
    "  then\n"
    "    return redis.error_reply('FENCED the session\\'s lease is held by "
    "another worker')\n"
    "  end\n"
    "end\n"
    "local base = tonumber(ARGV[2])\n"
    "local n = tonumber(ARGV[4])\n"
    "local have = redis.call('LLEN', KEYS[2])\n"
    "if have == base then\n"
    "  for i = 6, 5 + n, 1000 do\n"
    "    redis.call('RPUSH', KEYS[2], unpack(ARGV, i, math.min(i + 999, "
    "5 + n)))\n"
    "  end\n"
    "elseif have ~= base + n then\n"
    "  return redis.error_reply('DIVERGED the store holds ' .. have .. "
    "' messages, not ' .. base)\n"
    "end\n"
    "if #ARGV >= 6 + n then\n"
    "  redis.call('HSET', KEYS[1], unpack(ARGV, 6 + n, #ARGV))\n"
    "end\n"
    "local ttl = tonumber(ARGV[3])\n"
    "if ttl > 0 then\n"
    "  redis.call('PEXPIRE', KEYS[1], ttl)\n"
    "  redis.call('PEXPIRE', KEYS[2], ttl)\n"
    "  redis.call('PEXPIRE', KEYS[4], ttl)\n"
    "  local base = string.sub(KEYS[5], 1, -5)\n"
    "  for _, name in ipairs(redis.call('SMEMBERS', KEYS[5])) do\n"
    "    redis.call('PEXPIRE', base .. name, ttl)\n"
    "  end\n"
    "  redis.call('PEXPIRE', KEYS[5], ttl)\n"
    "end\n"
    "if ARGV[5] == '1' and lease ~= 0 then\n"
    "  local cur = redis.call('GET', KEYS[3])\n"
    "  if cur and tonumber(string.match(cur, '^%d+')) == lease then\n"
    "    redis.call('DEL', KEYS[3])\n"
    "  end\n"
    "end\n"
    "return have\n", ""
};

/* KEYS: meta, msgs */
static rg_redis_script_t  rg_sr_load_lua = { "load",
    "if redis.call('EXISTS', KEYS[1]) == 0 then return false end\n"
    "return {redis.call('HGETALL', KEYS[1]), "
    "redis.call('LRANGE', KEYS[2], 0, -1)}\n", ""
};

/* KEYS: the key, lease, fence, kept. ARGV: lease token, value, ttl, nx,
 * the name to keep ("": none). A lease that expired while nobody took
 * another (the fence still at its token) still lets its holder write,
 * as in checkpoint */
static rg_redis_script_t  rg_sr_put_lua = { "put",
    "local lease = tonumber(ARGV[1])\n"
    "if lease ~= 0 then\n"
    "  local cur = redis.call('GET', KEYS[2])\n"
    "  local fence = redis.call('GET', KEYS[3])\n"
    "  if not cur and not fence then\n"
    "    return redis.error_reply('LOST " RG_SR_LOST "')\n"
    "  end\n"
    "  if (cur and tonumber(string.match(cur, '^%d+')) ~= lease)\n"
    "     or (not cur and tonumber(fence) ~= lease)\n"
    "  then\n"
    "    return redis.error_reply('FENCED the session\\'s lease is held by "
    "another worker')\n"
    "  end\n"
    "end\n"
    "if ARGV[4] == '1' then\n"
    "  local cur = redis.call('GET', KEYS[1])\n"
    "  if cur then return {0, 'exists', cur} end\n"
    "end\n"
    "if tonumber(ARGV[3]) > 0 then\n"
    "  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])\n"
    "else\n"
    "  redis.call('SET', KEYS[1], ARGV[2])\n"
    "end\n"
    "if ARGV[5] ~= '' then\n"
    "  redis.call('SADD', KEYS[4], ARGV[5])\n"
    "  if tonumber(ARGV[3]) > 0 then\n"
    "    redis.call('PEXPIRE', KEYS[4], ARGV[3])\n"
    "  end\n"
    "end\n"
    "return {1, 0}\n", ""
};

/* KEYS: lease, fence, and the epoch when the process knows one (not in
 * a cluster: another slot). ARGV: token (0: take), holder, ttl, the epoch
 * the process knows. A take on a store whose epoch is another is refused
 * ('gone'): the task it is for was read from the store that was lost,
 * and the process must know that first (its entry is gone: the task is
 * queued again). A renewal of a
 * lease that expired (the store was away) while nobody took another
 * succeeds: the fence still holds its token. The fencing
 * counter lives as long as the session's other keys (checkpoint sets its
 * expiry with theirs), so a token is never handed out twice; a counter
 * made anew starts from the server's clock (ms × 1000), above every
 * token handed out before it, so that a store that lost its memory never
 * hands out again the token a paused worker still holds */
static rg_redis_script_t  rg_sr_lease_lua = { "lease",
    "local token = tonumber(ARGV[1])\n"
    "local cur = redis.call('GET', KEYS[1])\n"
    "if token ~= 0 then\n"
    "  if cur and tonumber(string.match(cur, '^%d+')) == token then\n"
    "    redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
    "    return {1, token}\n"
    "  end\n"
    "  local fence = redis.call('GET', KEYS[2])\n"
    "  if not cur and tonumber(fence) == token then\n"
    "    redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[2], 'PX', "
    "ARGV[3])\n"
    "    return {1, token}\n"
    "  end\n"
    "  if not cur and not fence then\n"
    "    return {0, 'gone: " RG_SR_LOST "'}\n"
    "  end\n"
    "  return {0, 'lost'}\n"
    "end\n"
    "if cur then\n"
    "  return {0, 'held', string.match(cur, '^%d+ (.*)$') or ''}\n"
    "end\n"
    "if KEYS[3] and redis.call('GET', KEYS[3]) ~= ARGV[4] then\n"
    "  return {0, 'gone: the store lost its memory since this process "
    "last read its epoch'}\n"
    "end\n"
    "if redis.call('EXISTS', KEYS[2]) == 0 then\n"
    "  local now = redis.call('TIME')\n"
    "  redis.call('SET', KEYS[2], now[1] .. string.format('%03d000', "
    "math.floor(tonumber(now[2]) / 1000)))\n"
    "end\n"
    "local t = redis.call('INCR', KEYS[2])\n"
    "if redis.call('PTTL', KEYS[2]) < 0 then\n"
    "  redis.call('PEXPIRE', KEYS[2], 604800000)\n"
    "end\n"
    "redis.call('SET', KEYS[1], string.format('%d ', t) .. ARGV[2], "
    "'PX', ARGV[3])\n"
    "return {1, t}\n", ""
};

/* KEYS: lease. ARGV: token */
static rg_redis_script_t  rg_sr_release_lua = { "release",
    "local cur = redis.call('GET', KEYS[1])\n"
    "if cur and tonumber(string.match(cur, '^%d+')) == tonumber(ARGV[1]) "
    "then\n"
    "  redis.call('DEL', KEYS[1])\n"
    "  return {1, 1}\n"
    "end\n"
    "return {0, 'lost'}\n", ""
};

/* KEYS: the cool-down, then one per bucket. ARGV: n, then rate,
 * capacity, cost, force per bucket. All or nothing; the wait in ms, 0:
 * taken. A forced bucket (a correction) is charged, never waited for. */
static rg_redis_script_t  rg_sr_take_lua = { "take",
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
static rg_redis_script_t  rg_sr_cooldown_lua = { "cooldown",
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
static rg_redis_script_t  rg_sr_slot_lua = { "slot",
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

/* KEYS: the counter. ARGV: by, ttl (set when it has none) */
static rg_redis_script_t  rg_sr_incr_lua = { "incr",
    "local v = redis.call('INCRBY', KEYS[1], ARGV[1])\n"
    "if tonumber(ARGV[2]) > 0 and redis.call('PTTL', KEYS[1]) < 0 then\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "end\n"
    "return v\n", ""
};

/* KEYS: the events, lease, fence. ARGV: lease token (0: none), max, ttl,
 * type, data. The new entry's id; the stream trimmed to max exactly
 * (MAXLEN ~ keeps whole nodes of 100 entries: no bound for small max) */
static rg_redis_script_t  rg_sr_append_lua = { "append",
    "local lease = tonumber(ARGV[1])\n"
    "if lease ~= 0 then\n"
    "  local cur = redis.call('GET', KEYS[2])\n"
    "  local fence = redis.call('GET', KEYS[3])\n"
    "  if not cur and not fence then\n"
    "    return redis.error_reply('LOST " RG_SR_LOST "')\n"
    "  end\n"
    "  if (cur and tonumber(string.match(cur, '^%d+')) ~= lease)\n"
    "     or (not cur and tonumber(fence) ~= lease)\n"
    "  then\n"
    "    return redis.error_reply('FENCED the session\\'s lease is held by "
    "another worker')\n"
    "  end\n"
    "end\n"
    "local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[2], '*', "
    "'type', ARGV[4], 'data', ARGV[5])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
    "return id\n", ""
};

/* KEYS: the epoch. ARGV: a new one. The one there, or the new one
 * written when there was none; 1 when it was written. It has no TTL: it
 * goes only with the store's memory */
static rg_redis_script_t  rg_sr_epoch_lua = { "epoch",
    "local cur = redis.call('GET', KEYS[1])\n"
    "if cur then return {cur, 0} end\n"
    "redis.call('SET', KEYS[1], ARGV[1])\n"
    "return {ARGV[1], 1}\n", ""
};

static rg_redis_script_t  *rg_sr_scripts[] = {
    &rg_sr_checkpoint_lua, &rg_sr_load_lua, &rg_sr_put_lua, &rg_sr_lease_lua,
    &rg_sr_release_lua, &rg_sr_take_lua, &rg_sr_cooldown_lua,
    &rg_sr_slot_lua, &rg_sr_incr_lua,
    &rg_sr_append_lua, &rg_sr_epoch_lua,
    NULL
};


/* arguments of one command, built on the stack of the caller; a
 * checkpoint, whose count grows with its records, sizes its own arrays */
typedef struct {
    int                 argc;
    int                 nargs;        /* room in argv and lens */
    int                 nkeys;
    const char        **argv;
    size_t             *lens;
    const char         *argv0[RG_STORE_REDIS_ARGS];
    size_t              lens0[RG_STORE_REDIS_ARGS];
    char                buf[4096];    /* keys and numbers */
    size_t              used;
    unsigned            overflow:1;
} rg_sr_args_t;


static void
rg_sr_args_init(rg_sr_args_t *a)
{
    a->argc = 0;
    a->nargs = RG_STORE_REDIS_ARGS;
    a->nkeys = 0;
    a->argv = a->argv0;
    a->lens = a->lens0;
    a->used = 0;
    a->overflow = 0;
}


static void
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


static void
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
static void
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
static void
rg_sr_session_key(rg_store_redis_t *r, rg_sr_args_t *a, const rg_str_t *id,
    const char *name, size_t len)
{
    char    *p;
    size_t   n;

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


static void
rg_sr_key(rg_store_redis_t *r, rg_sr_args_t *a, const rg_str_t *key)
{
    rg_sr_argf(a, "%s%.*s", r->prefix, (int) key->len, key->data);
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


static void
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


/* the entries of an XRANGE reply, each {id, {"type", T, "data", D}} */
static void
rg_sr_range_reply(rg_store_op_t *op, redisReply *reply, rg_store_res_t *res)
{
    size_t             i, j;
    redisReply        *en, *kv, *k, *v;
    rg_store_entry_t  *entries;
    rg_store_entry_t   buf[64];

    if (reply->type != REDIS_REPLY_ARRAY) {
        res->rc = RG_ERROR;
        res->err = "unexpected reply";
        rg_sr_answer(op, res);
        return;
    }

    entries = reply->elements <= rg_nelems(buf)
              ? buf : calloc(reply->elements, sizeof(rg_store_entry_t));
    if (entries == NULL) {
        res->rc = RG_ERROR;
        res->err = "out of memory";
        rg_sr_answer(op, res);
        return;
    }

    for (i = 0; i < reply->elements; i++) {
        en = reply->element[i];
        memset(&entries[res->nentries], 0, sizeof(rg_store_entry_t));

        if (en->type != REDIS_REPLY_ARRAY || en->elements != 2
            || en->element[0]->type != REDIS_REPLY_STRING
            || en->element[1]->type != REDIS_REPLY_ARRAY)
        {
            continue;
        }

        entries[res->nentries].id.data = en->element[0]->str;
        entries[res->nentries].id.len = en->element[0]->len;
        kv = en->element[1];

        for (j = 0; j + 1 < kv->elements; j += 2) {
            k = kv->element[j];
            v = kv->element[j + 1];

            if (k->type != REDIS_REPLY_STRING
                || v->type != REDIS_REPLY_STRING)
            {
                continue;
            }

            if (k->len == 4 && memcmp(k->str, "type", 4) == 0) {
                entries[res->nentries].type.data = v->str;
                entries[res->nentries].type.len = v->len;

            } else if (k->len == 4 && memcmp(k->str, "data", 4) == 0) {
                entries[res->nentries].data.data = v->str;
                entries[res->nentries].data.len = v->len;
            }
        }

        if (entries[res->nentries].type.data == NULL) {
            entries[res->nentries].type.data = (char *) "";
        }
        if (entries[res->nentries].data.data == NULL) {
            entries[res->nentries].data.data = (char *) "";
        }

        res->nentries++;
    }

    res->entries = entries;
    rg_sr_answer(op, res);

    if (entries != buf) {
        free(entries);
    }
}


static void
rg_sr_reply_handler(void *data, redisReply *reply, const char *err)
{
    rg_uint_t        i, n;
    rg_str_t         buf[RG_STORE_REDIS_ITEMS];
    rg_str_t        *items;
    redisReply      *f, *l;
    rg_store_op_t   *op;
    rg_store_res_t   res;
    char             why[320];

    op = data;
    memset(&res, 0, sizeof(res));
    res.rc = RG_OK;

    if (err) {
        /* a script's refusal is an answer, not a failure */
        if (strncmp(err, "FENCED ", 7) == 0) {
            res.rc = RG_DECLINED;
            snprintf(why, sizeof(why), "fenced: %s", err + 7);
            res.err = why;
        } else if (strncmp(err, "LOST ", 5) == 0) {
            res.rc = RG_DECLINED;
            snprintf(why, sizeof(why), "lost: %s", err + 5);
            res.err = why;
            rg_sr_check(op->st);
        } else if (strncmp(err, "DIVERGED ", 9) == 0) {
            res.rc = RG_DECLINED;
            snprintf(why, sizeof(why), "diverged: %s", err + 9);
            res.err = why;
        } else {
            res.rc = RG_ERROR;
            res.err = err;
        }

        rg_sr_answer(op, &res);
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
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
            res.rc = RG_DECLINED;
            break;
        }

        f = reply->element[0];
        l = reply->element[1];

        if (f->type != REDIS_REPLY_ARRAY || l->type != REDIS_REPLY_ARRAY) {
            res.rc = RG_ERROR;
            res.err = "unexpected reply";
            break;
        }

        n = f->elements + l->elements;
        items = n <= rg_nelems(buf) ? buf : calloc(n, sizeof(rg_str_t));
        if (items == NULL) {
            res.rc = RG_ERROR;
            res.err = "out of memory";
            break;
        }

        for (i = 0; i < f->elements; i++) {
            items[i].data = f->element[i]->str;
            items[i].len = f->element[i]->len;
        }

        for (i = 0; i < l->elements; i++) {
            items[f->elements + i].data = l->element[i]->str;
            items[f->elements + i].len = l->element[i]->len;
        }

        res.fields = items;
        res.nfields = f->elements / 2;
        res.items = items + f->elements;
        res.nitems = l->elements;

        rg_sr_answer(op, &res);

        if (items != buf) {
            free(items);
        }
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
static rg_store_op_t *
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


static rg_store_op_t *
rg_sr_get(rg_store_t *st, const rg_str_t *key, rg_store_pt cb, void *data)
{
    rg_sr_args_t  a;

    rg_sr_args_init(&a);
    st->stats.gets++;

    rg_str_t      tag;

    rg_sr_arg(&a, "GET", 3);
    rg_sr_key((rg_store_redis_t *) st, &a, key);
    tag = rg_sr_sent_tag(&a, 1);

    return rg_sr_send(st, &tag, &a, NULL, RG_SR_VALUE, cb, data);
}


static rg_store_op_t *
rg_sr_set(rg_store_t *st, const rg_str_t *key, const rg_str_t *value,
    rg_msec_t ttl, rg_uint_t flags, rg_store_pt cb, void *data)
{
    rg_sr_args_t  a;
    rg_str_t      tag;

    rg_sr_args_init(&a);
    st->stats.sets++;

    rg_sr_arg(&a, "SET", 3);
    rg_sr_key((rg_store_redis_t *) st, &a, key);
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
    rg_sr_args_t  a;

    rg_sr_args_init(&a);

    rg_str_t      tag;

    rg_sr_arg(&a, "DEL", 3);
    rg_sr_key((rg_store_redis_t *) st, &a, key);
    tag = rg_sr_sent_tag(&a, 1);

    return rg_sr_send(st, &tag, &a, NULL, RG_SR_INT, cb, data);
}


static rg_store_op_t *
rg_sr_incr(rg_store_t *st, const rg_str_t *key, int64_t by, rg_msec_t ttl,
    rg_store_pt cb, void *data)
{
    rg_sr_args_t  a;

    rg_sr_args_init(&a);

    rg_str_t      tag;

    rg_sr_key((rg_store_redis_t *) st, &a, key);
    rg_sr_argf(&a, "%lld", (long long) by);
    rg_sr_argf(&a, "%llu", (unsigned long long) ttl);
    tag = rg_sr_sent_tag(&a, 0);

    return rg_sr_send(st, &tag, &a, &rg_sr_incr_lua, RG_SR_INT, cb, data);
}


static rg_store_op_t *
rg_sr_checkpoint(rg_store_t *st, const rg_store_checkpoint_t *cp,
    rg_store_pt cb, void *data)
{
    size_t             n;
    rg_uint_t          i;
    rg_sr_args_t      *a;
    rg_store_op_t     *op;
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;

    /* 5 keys and 5 numbers, the records, the meta's pairs */
    if (cp->nmsgs > (rg_uint_t) INT_MAX / 4
        || cp->nfields > (rg_uint_t) INT_MAX / 8)
    {
        return NULL;
    }

    n = 10 + cp->nmsgs + 2 * cp->nfields;

    /* the arguments are large: off the stack */
    a = malloc(sizeof(rg_sr_args_t));
    if (a == NULL) {
        return NULL;
    }

    rg_sr_args_init(a);

    if (n > RG_STORE_REDIS_ARGS) {
        a->argv = malloc(n * sizeof(const char *));
        a->lens = malloc(n * sizeof(size_t));
        a->nargs = (int) n;

        if (a->argv == NULL || a->lens == NULL) {
            free(a->argv);
            free(a->lens);
            free(a);
            return NULL;
        }
    }

    rg_sr_session_key(r, a, &cp->id, "meta", 4);
    rg_sr_session_key(r, a, &cp->id, "msgs", 4);
    rg_sr_session_key(r, a, &cp->id, "lease", 5);
    rg_sr_session_key(r, a, &cp->id, "fence", 5);
    rg_sr_session_key(r, a, &cp->id, "kept", 4);
    rg_sr_num(a, (int64_t) cp->lease);
    rg_sr_num(a, (int64_t) cp->base);
    rg_sr_num(a, (int64_t) cp->ttl);
    rg_sr_num(a, (int64_t) cp->nmsgs);
    rg_sr_num(a, cp->release ? 1 : 0);

    for (i = 0; i < cp->nmsgs; i++) {
        rg_sr_arg(a, cp->msgs[i].data, cp->msgs[i].len);
    }

    for (i = 0; i < 2 * cp->nfields; i++) {
        rg_sr_arg(a, cp->fields[i].data, cp->fields[i].len);
    }

    op = rg_sr_send(st, &cp->id, a, &rg_sr_checkpoint_lua, RG_SR_CHECKPOINT,
                    cb, data);

    if (a->argv != a->argv0) {
        free(a->argv);
        free(a->lens);
    }

    free(a);

    return op;
}


static rg_store_op_t *
rg_sr_load(rg_store_t *st, const rg_str_t *id, rg_store_pt cb, void *data)
{
    rg_sr_args_t       a;
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;
    rg_sr_args_init(&a);

    rg_sr_session_key(r, &a, id, "meta", 4);
    rg_sr_session_key(r, &a, id, "msgs", 4);

    return rg_sr_send(st, id, &a, &rg_sr_load_lua, RG_SR_LOAD, cb, data);
}


static rg_store_op_t *
rg_sr_put(rg_store_t *st, const rg_store_put_t *p, rg_store_pt cb,
    void *data)
{
    rg_sr_args_t       a;
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;
    rg_sr_args_init(&a);

    rg_sr_session_key(r, &a, &p->id, p->name.data, p->name.len);
    rg_sr_session_key(r, &a, &p->id, "lease", 5);
    rg_sr_session_key(r, &a, &p->id, "fence", 5);
    rg_sr_session_key(r, &a, &p->id, "kept", 4);
    rg_sr_argf(&a, "%lld", (long long) p->lease);
    rg_sr_arg(&a, p->value.data, p->value.len);
    rg_sr_argf(&a, "%llu", (unsigned long long) p->ttl);
    rg_sr_arg(&a, (p->flags & RG_STORE_NX) ? "1" : "0", 1);
    rg_sr_arg(&a, p->name.data, (p->flags & RG_STORE_KEEP) ? p->name.len : 0);

    return rg_sr_send(st, &p->id, &a, &rg_sr_put_lua, RG_SR_PAIR, cb, data);
}


static rg_store_op_t *
rg_sr_lease(rg_store_t *st, const rg_str_t *id, const rg_str_t *holder,
    int64_t token, rg_msec_t ttl, rg_store_pt cb, void *data)
{
    rg_sr_args_t       a;
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;
    rg_sr_args_init(&a);

    rg_sr_session_key(r, &a, id, "lease", 5);
    rg_sr_session_key(r, &a, id, "fence", 5);

    if (token == 0 && !r->cluster && st->epoch.id[0] != '\0') {
        rg_sr_argf(&a, "%sepoch", r->prefix);
        a.nkeys++;
    }

    rg_sr_num(&a, (int64_t) token);
    rg_sr_arg(&a, holder->data, holder->len);
    rg_sr_num(&a, (int64_t) ttl);
    rg_sr_arg(&a, st->epoch.id, strlen(st->epoch.id));

    return rg_sr_send(st, id, &a, &rg_sr_lease_lua, RG_SR_PAIR, cb, data);
}


static rg_store_op_t *
rg_sr_release(rg_store_t *st, const rg_str_t *id, int64_t token,
    rg_store_pt cb, void *data)
{
    rg_sr_args_t       a;
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;
    rg_sr_args_init(&a);

    rg_sr_session_key(r, &a, id, "lease", 5);
    rg_sr_num(&a, (int64_t) token);

    return rg_sr_send(st, id, &a, &rg_sr_release_lua, RG_SR_PAIR, cb, data);
}


static rg_store_op_t *
rg_sr_take(rg_store_t *st, const rg_str_t *cool, const rg_store_bucket_t *b,
    rg_uint_t nb, rg_store_pt cb, void *data)
{
    rg_uint_t          i;
    rg_sr_args_t       a;
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;
    rg_sr_args_init(&a);
    a.overflow = nb > 8;

    rg_sr_argf(&a, "%scd:{%.*s}", r->prefix, (int) cool->len, cool->data);
    a.nkeys++;

    for (i = 0; i < nb; i++) {
        rg_sr_argf(&a, "%srl:{%.*s}:%.*s:%lu", r->prefix, (int) cool->len,
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


static rg_store_op_t *
rg_sr_cooldown(rg_store_t *st, const rg_str_t *cool, rg_msec_t ms,
    rg_store_pt cb, void *data)
{
    rg_sr_args_t       a;
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;
    rg_sr_args_init(&a);
    a.overflow = ms == 0;

    rg_sr_argf(&a, "%scd:{%.*s}", r->prefix, (int) cool->len, cool->data);
    a.nkeys++;
    rg_sr_argf(&a, "%llu", (unsigned long long) ms);

    return rg_sr_send(st, cool, &a, &rg_sr_cooldown_lua, RG_SR_INT, cb, data);
}


static rg_store_op_t *
rg_sr_slot(rg_store_t *st, const rg_str_t *cool, const rg_str_t *name,
    const rg_str_t *holder, rg_uint_t max, rg_msec_t ttl, rg_store_pt cb,
    void *data)
{
    rg_sr_args_t       a;
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;
    rg_sr_args_init(&a);

    rg_sr_argf(&a, "%ssl:{%.*s}:%.*s", r->prefix, (int) cool->len,
               cool->data, (int) name->len, name->data);
    a.nkeys++;
    rg_sr_argf(&a, "%scd:{%.*s}", r->prefix, (int) cool->len, cool->data);
    a.nkeys++;
    rg_sr_argf(&a, "%.*s", (int) holder->len, holder->data);
    rg_sr_argf(&a, "%lu", (unsigned long) max);
    rg_sr_argf(&a, "%llu", (unsigned long long) (ttl ? ttl : 1));

    return rg_sr_send(st, cool, &a, &rg_sr_slot_lua, RG_SR_INT, cb, data);
}


static rg_store_op_t *
rg_sr_append(rg_store_t *st, const rg_store_event_t *ev, rg_store_pt cb,
    void *data)
{
    rg_sr_args_t       a;
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;
    rg_sr_args_init(&a);
    a.overflow = ev->max == 0 || ev->ttl == 0;

    rg_sr_session_key(r, &a, &ev->id, "events", 6);
    rg_sr_session_key(r, &a, &ev->id, "lease", 5);
    rg_sr_session_key(r, &a, &ev->id, "fence", 5);
    rg_sr_argf(&a, "%lld", (long long) ev->lease);
    rg_sr_argf(&a, "%lu", (unsigned long) ev->max);
    rg_sr_argf(&a, "%llu", (unsigned long long) ev->ttl);
    rg_sr_arg(&a, ev->type.data, ev->type.len);
    rg_sr_arg(&a, ev->data.data, ev->data.len);

    return rg_sr_send(st, &ev->id, &a, &rg_sr_append_lua, RG_SR_VALUE, cb,
                      data);
}


static rg_store_op_t *
rg_sr_range(rg_store_t *st, const rg_str_t *id, const char *after,
    rg_uint_t count, rg_store_pt cb, void *data)
{
    uint64_t           ms, seq;
    rg_sr_args_t       a;
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;
    rg_sr_args_init(&a);
    a.overflow = count == 0;

    rg_sr_arg(&a, "XRANGE", 6);
    rg_sr_session_key(r, &a, id, "events", 6);

    if (after && after[0]) {
        /* exclusive: the entries after it (Redis 6.2) */
        if (rg_store_event_id(after, strlen(after), &ms, &seq) != RG_OK) {
            return NULL;
        }
        rg_sr_argf(&a, "(%llu-%llu", (unsigned long long) ms,
                   (unsigned long long) seq);
    } else {
        rg_sr_arg(&a, "-", 1);
    }

    rg_sr_arg(&a, "+", 1);
    rg_sr_arg(&a, "COUNT", 5);
    rg_sr_argf(&a, "%lu", (unsigned long) count);

    return rg_sr_send(st, id, &a, NULL, RG_SR_RANGE, cb, data);
}


/* the epoch ------------------------------------------------------------ */

static void rg_sr_epoch_read(rg_store_redis_t *r);


static void
rg_sr_epoch_timer(evutil_socket_t fd, short what, void *arg)
{
    rg_sr_epoch_read(arg);
}


static void
rg_sr_epoch_arm(rg_store_redis_t *r)
{
    struct timeval  tv;

    tv.tv_sec = RG_SR_EPOCH_EVERY / 1000;
    tv.tv_usec = (RG_SR_EPOCH_EVERY % 1000) * 1000;
    evtimer_add(&r->epoch_ev, &tv);
}


/* CONFIG GET appendonly and save: a server that persists neither loses
 * everything when it restarts; said once, at the first answer. A server
 * that refuses CONFIG (renamed, a managed one) is not judged. */
static void
rg_sr_persist_reply(void *data, redisReply *reply, const char *err)
{
    size_t             i;
    rg_uint_t          aof, rdb;
    redisReply        *k, *v;
    rg_store_redis_t  *r;

    r = data;

    if (r->destroying) {
        return;
    }

    if (err || reply->type != REDIS_REPLY_ARRAY) {
        r->persist = RG_STORE_PERSIST_UNKNOWN;
        return;
    }

    aof = 0;
    rdb = 0;

    for (i = 0; i + 1 < reply->elements; i += 2) {
        k = reply->element[i];
        v = reply->element[i + 1];

        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
            continue;
        }

        if (strcmp(k->str, "appendonly") == 0) {
            aof = strcmp(v->str, "yes") == 0;
        } else if (strcmp(k->str, "save") == 0) {
            rdb = v->len > 0;
        }
    }

    r->persist = (aof || rdb) ? RG_STORE_PERSIST_YES : RG_STORE_PERSIST_NO;

    if (aof || rdb) {
        return;
    }

    rg_log_error(RG_LOG_WARN, r->log, 0, "redis %s persists nothing "
                 "(appendonly no, save \"\"): if it restarts, the queue, "
                 "the sessions and the results are gone; the workers write "
                 "back what they hold and name what is lost, but tasks "
                 "queued and not yet taken are lost unless submitted again; "
                 "turn on \"appendonly yes\" with \"appendfsync everysec\"",
                 rg_redis_address(r->redis));
}


static void
rg_sr_epoch_reply(void *data, redisReply *reply, const char *err)
{
    rg_uint_t          first;
    rg_store_redis_t  *r;
    const char        *argv[4];
    size_t             lens[4] = { 6, 3, 10, 4 };

    r = data;
    r->epoch_cmd = NULL;

    if (r->destroying) {
        return;
    }

    if (err == NULL && reply->type == REDIS_REPLY_ARRAY
        && reply->elements == 2
        && reply->element[0]->type == REDIS_REPLY_STRING)
    {
        first = r->store.epoch.id[0] == '\0';

        rg_store_epoch_seen(&r->store, r->log, reply->element[0]->str,
                            reply->element[0]->len,
                            reply->element[1]->type == REDIS_REPLY_INTEGER
                            && reply->element[1]->integer == 1);

        if (first) {
            argv[0] = "CONFIG";
            argv[1] = "GET";
            argv[2] = "appendonly";
            argv[3] = "save";
            rg_redis_command(r->redis, NULL, 0, rg_sr_persist_reply, r, 4,
                             argv, lens);
        }
    }

    /* a loss it found is counted by now */
    r->store.epoch.answered++;

    if (r->epoch_again) {
        r->epoch_again = 0;
        rg_sr_epoch_read(r);
        return;
    }

    if (!evtimer_pending(&r->epoch_ev, NULL)) {
        rg_sr_epoch_arm(r);
    }
}


static void
rg_sr_epoch_read(rg_store_redis_t *r)
{
    char          key[256], id[33];
    const char   *argv[2];
    size_t        lens[2];

    if (r->destroying) {
        return;
    }

    if (r->epoch_cmd) {
        r->epoch_again = 1;
        return;
    }

    evtimer_del(&r->epoch_ev);

    if (rg_random_hex(id, 16) != RG_OK) {
        rg_sr_epoch_arm(r);
        return;
    }

    snprintf(key, sizeof(key), "%sepoch", r->prefix);
    argv[0] = key;
    argv[1] = id;
    lens[0] = strlen(key);
    lens[1] = strlen(id);

    r->epoch_cmd = rg_redis_eval(r->redis, NULL, &rg_sr_epoch_lua,
                                 rg_sr_epoch_reply, r, 1, 2, argv, lens);
    if (r->epoch_cmd == NULL) {
        rg_sr_epoch_arm(r);
        return;
    }

    r->store.epoch.sent++;
}


/* a connection is up after none was: the server may be a new one */
static void
rg_sr_up(void *data)
{
    rg_sr_epoch_read(data);
}


static uint64_t
rg_sr_check(rg_store_t *st)
{
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;
    rg_sr_epoch_read(r);

    /* one under way started before: the one after it tells */
    return r->epoch_again ? st->epoch.sent + 1 : st->epoch.sent;
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
