/* rg_store_redis_session.c: the sessions of the store on Redis
 * (rg_store_redis.c): checkpoint, load, put, lease, release, each a Lua
 * script, and a session's events (append, a fenced script; range,
 * XRANGE). A session's keys are "PREFIX{id}:NAME": meta (a hash), msgs (a
 * list), lease ("TOKEN HOLDER"), fence (the fencing counter), kept (a set:
 * the names of the values kept as long as the session), events (a stream
 * of entries {type, data}). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store_redis_int.h>


#define RG_STORE_REDIS_ITEMS 512      /* reply items read without malloc */


/* KEYS: meta, msgs, lease, fence, kept. ARGV: lease token (0: none),
 * base, ttl, n, release (1: the lease goes too), n messages, then name,
 * value pairs. The values kept as
 * long as the session (put with RG_STORE_KEEP: "{id}:kept" holds their
 * names) get the ttl too: their keys are made here from kept's, so they
 * share its hash tag and its cluster slot */
rg_redis_script_t  rg_sr_checkpoint_lua = { "checkpoint",
    RG_SR_FENCE_LUA("3", "4")
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
rg_redis_script_t  rg_sr_load_lua = { "load",
    "if redis.call('EXISTS', KEYS[1]) == 0 then return false end\n"
    "return {redis.call('HGETALL', KEYS[1]), "
    "redis.call('LRANGE', KEYS[2], 0, -1)}\n", ""
};


/* KEYS: the key, lease, fence, kept. ARGV: lease token, value, ttl, nx,
 * the name to keep ("": none). A lease that expired while nobody took
 * another (the fence still at its token) still lets its holder write,
 * as in checkpoint */
rg_redis_script_t  rg_sr_put_lua = { "put",
    RG_SR_FENCE_LUA("2", "3")
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
rg_redis_script_t  rg_sr_lease_lua = { "lease",
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
rg_redis_script_t  rg_sr_release_lua = { "release",
    "local cur = redis.call('GET', KEYS[1])\n"
    "if cur and tonumber(string.match(cur, '^%d+')) == tonumber(ARGV[1]) "
    "then\n"
    "  redis.call('DEL', KEYS[1])\n"
    "  return {1, 1}\n"
    "end\n"
    "return {0, 'lost'}\n", ""
};


rg_store_op_t *
rg_sr_checkpoint(rg_store_t *st, const rg_store_checkpoint_t *cp,
    rg_store_pt cb, void *data)
{
    size_t             n;
    rg_uint_t          i;
    rg_sr_args_t      *a;
    rg_store_op_t     *op;

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

    rg_sr_args_init(a, st);

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

    rg_sr_session_key(a, &cp->id, "meta", 4);
    rg_sr_session_key(a, &cp->id, "msgs", 4);
    rg_sr_fence_keys(a, &cp->id);
    rg_sr_session_key(a, &cp->id, "kept", 4);
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


rg_store_op_t *
rg_sr_load(rg_store_t *st, const rg_str_t *id, rg_store_pt cb, void *data)
{
    rg_sr_args_t  a;

    rg_sr_args_init(&a, st);

    rg_sr_session_key(&a, id, "meta", 4);
    rg_sr_session_key(&a, id, "msgs", 4);

    return rg_sr_send(st, id, &a, &rg_sr_load_lua, RG_SR_LOAD, cb, data);
}


/* a load's reply: {HGETALL meta, LRANGE msgs}; nil: no such session */
void
rg_sr_load_reply(rg_store_op_t *op, redisReply *reply, rg_store_res_t *res)
{
    rg_uint_t    i, n;
    rg_str_t     buf[RG_STORE_REDIS_ITEMS];
    rg_str_t    *items;
    redisReply  *f, *l;

    items = buf;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
        res->rc = RG_DECLINED;
        goto answer;
    }

    f = reply->element[0];
    l = reply->element[1];

    if (f->type != REDIS_REPLY_ARRAY || l->type != REDIS_REPLY_ARRAY) {
        res->rc = RG_ERROR;
        res->err = "unexpected reply";
        goto answer;
    }

    n = f->elements + l->elements;
    items = n <= rg_nelems(buf) ? buf : calloc(n, sizeof(rg_str_t));
    if (items == NULL) {
        res->rc = RG_ERROR;
        res->err = "out of memory";
        goto answer;
    }

    for (i = 0; i < f->elements; i++) {
        items[i].data = f->element[i]->str;
        items[i].len = f->element[i]->len;
    }

    for (i = 0; i < l->elements; i++) {
        items[f->elements + i].data = l->element[i]->str;
        items[f->elements + i].len = l->element[i]->len;
    }

    res->fields = items;
    res->nfields = f->elements / 2;
    res->items = items + f->elements;
    res->nitems = l->elements;

answer:

    rg_sr_answer(op, res);

    if (items != buf) {
        free(items);
    }
}


rg_store_op_t *
rg_sr_put(rg_store_t *st, const rg_store_put_t *p, rg_store_pt cb,
    void *data)
{
    rg_sr_args_t  a;

    rg_sr_args_init(&a, st);

    rg_sr_session_key(&a, &p->id, p->name.data, p->name.len);
    rg_sr_fence_keys(&a, &p->id);
    rg_sr_session_key(&a, &p->id, "kept", 4);
    rg_sr_argf(&a, "%lld", (long long) p->lease);
    rg_sr_arg(&a, p->value.data, p->value.len);
    rg_sr_argf(&a, "%llu", (unsigned long long) p->ttl);
    rg_sr_arg(&a, (p->flags & RG_STORE_NX) ? "1" : "0", 1);
    rg_sr_arg(&a, p->name.data, (p->flags & RG_STORE_KEEP) ? p->name.len : 0);

    return rg_sr_send(st, &p->id, &a, &rg_sr_put_lua, RG_SR_PAIR, cb, data);
}


rg_store_op_t *
rg_sr_lease(rg_store_t *st, const rg_str_t *id, const rg_str_t *holder,
    int64_t token, rg_msec_t ttl, rg_store_pt cb, void *data)
{
    rg_sr_args_t  a;

    rg_sr_args_init(&a, st);

    rg_sr_fence_keys(&a, id);

    if (token == 0 && !a.r->cluster && st->epoch.id[0] != '\0') {
        rg_sr_argf(&a, "%sepoch", a.r->prefix);
        a.nkeys++;
    }

    rg_sr_num(&a, (int64_t) token);
    rg_sr_arg(&a, holder->data, holder->len);
    rg_sr_num(&a, (int64_t) ttl);
    rg_sr_arg(&a, st->epoch.id, strlen(st->epoch.id));

    return rg_sr_send(st, id, &a, &rg_sr_lease_lua, RG_SR_PAIR, cb, data);
}


rg_store_op_t *
rg_sr_release(rg_store_t *st, const rg_str_t *id, int64_t token,
    rg_store_pt cb, void *data)
{
    rg_sr_args_t  a;

    rg_sr_args_init(&a, st);

    rg_sr_session_key(&a, id, "lease", 5);
    rg_sr_num(&a, (int64_t) token);

    return rg_sr_send(st, id, &a, &rg_sr_release_lua, RG_SR_PAIR, cb, data);
}


/* events ------------------------------------------------------------ */

/* KEYS: the events, lease, fence. ARGV: lease token (0: none), max, ttl,
 * type, data. The new entry's id; the stream trimmed to max exactly
 * (MAXLEN ~ keeps whole nodes of 100 entries: no bound for small max) */
rg_redis_script_t  rg_sr_append_lua = { "append",
    RG_SR_FENCE_LUA("2", "3")
    "local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[2], '*', "
    "'type', ARGV[4], 'data', ARGV[5])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
    "return id\n", ""
};


rg_store_op_t *
rg_sr_append(rg_store_t *st, const rg_store_event_t *ev, rg_store_pt cb,
    void *data)
{
    rg_sr_args_t  a;

    rg_sr_args_init(&a, st);
    a.overflow = ev->max == 0 || ev->ttl == 0;

    rg_sr_session_key(&a, &ev->id, "events", 6);
    rg_sr_fence_keys(&a, &ev->id);
    rg_sr_argf(&a, "%lld", (long long) ev->lease);
    rg_sr_argf(&a, "%lu", (unsigned long) ev->max);
    rg_sr_argf(&a, "%llu", (unsigned long long) ev->ttl);
    rg_sr_arg(&a, ev->type.data, ev->type.len);
    rg_sr_arg(&a, ev->data.data, ev->data.len);

    return rg_sr_send(st, &ev->id, &a, &rg_sr_append_lua, RG_SR_VALUE, cb,
                      data);
}


/* the entries of an XRANGE reply, each {id, {"type", T, "data", D}} */
void
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


rg_store_op_t *
rg_sr_range(rg_store_t *st, const rg_str_t *id, const char *after,
    rg_uint_t count, rg_store_pt cb, void *data)
{
    uint64_t           ms, seq;
    rg_sr_args_t  a;

    rg_sr_args_init(&a, st);
    a.overflow = count == 0;

    rg_sr_arg(&a, "XRANGE", 6);
    rg_sr_session_key(&a, id, "events", 6);

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
