/* rg_store_redis_epoch.c: the epoch of the store on Redis
 * (rg_store_redis.c; rg_store_epoch.c tells what it means): read, or
 * written when there is none, on every reconnection, every
 * RG_SR_EPOCH_EVERY ms and when a script finds a session's keys gone;
 * and, at its first answer, whether the server persists anything. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_digest.h>
#include <rg_store_redis_int.h>


#define RG_SR_EPOCH_EVERY    5000     /* ms between reads of the epoch */


static void rg_sr_epoch_read(rg_store_redis_t *r);


/* KEYS: the epoch. ARGV: a new one. The one there, or the new one
 * written when there was none; 1 when it was written. It has no TTL: it
 * goes only with the store's memory */
rg_redis_script_t  rg_sr_epoch_lua = { "epoch",
    "local cur = redis.call('GET', KEYS[1])\n"
    "if cur then return {cur, 0} end\n"
    "redis.call('SET', KEYS[1], ARGV[1])\n"
    "return {ARGV[1], 1}\n", ""
};


void
rg_sr_epoch_timer(evutil_socket_t fd, short what, void *arg)
{
    rg_sr_epoch_read(arg);
}


static void
rg_sr_epoch_arm(rg_store_redis_t *r)
{
    rg_timer_add(&r->epoch_ev, RG_SR_EPOCH_EVERY);
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
void
rg_sr_up(void *data)
{
    rg_sr_epoch_read(data);
}


uint64_t
rg_sr_check(rg_store_t *st)
{
    rg_store_redis_t  *r;

    r = (rg_store_redis_t *) st;
    rg_sr_epoch_read(r);

    /* one under way started before: the one after it tells */
    return r->epoch_again ? st->epoch.sent + 1 : st->epoch.sent;
}
