/* rg_store_redis_int.h: what the pieces of the store on Redis share
 * (rg_store_redis.c: the arguments, the answers, the operations on keys
 * of their own; rg_store_redis_session.c: those on a session's keys,
 * each with its Lua scripts; rg_store_redis_epoch.c: the epoch); not for
 * callers, who use rg_store_redis.h. */

#ifndef RG_STORE_REDIS_INT_H
#define RG_STORE_REDIS_INT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_store.h>
#include <rg_store_redis.h>
#include <rg_redis.h>
#include <event2/event_struct.h>


#define RG_STORE_REDIS_ARGS  64       /* arguments of a small operation */

/* a fenced write that finds neither the session's lease nor its fencing
 * counter: nobody took it over, the store forgot it */
#define RG_SR_LOST  /* in a Lua string: no quote */                       \
    "the store holds neither the lease of the session nor its fencing "    \
    "counter: it lost them (Redis restarted without its data, or was "     \
    "emptied)"

/* the fencing of a write, the opening of its script: ARGV[1] the lease
 * token (0: none), KEYS[L] the session's lease, KEYS[F] its fencing
 * counter. Refused FENCED when another worker holds the session, LOST
 * when the store holds neither. A lease that expired while nobody took
 * another (the fence still at its token) still lets its holder write. */
#define RG_SR_FENCE_LUA(L, F)                                               \
    "local lease = tonumber(ARGV[1])\n"                                     \
    "if lease ~= 0 then\n"                                                  \
    "  local cur = redis.call('GET', KEYS[" L "])\n"                        \
    "  local fence = redis.call('GET', KEYS[" F "])\n"                      \
    "  if not cur and not fence then\n"                                     \
    "    return redis.error_reply('LOST " RG_SR_LOST "')\n"                \
    "  end\n"                                                               \
    "  if (cur and tonumber(string.match(cur, '^%d+')) ~= lease)\n"         \
    "     or (not cur and tonumber(fence) ~= lease)\n"                      \
    "  then\n"                                                              \
    "    return redis.error_reply('FENCED the session\\'s lease is held by " \
    "another worker')\n"                                                    \
    "  end\n"                                                               \
    "end\n"


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


/* arguments of one command, built on the stack of the caller; a
 * checkpoint, whose count grows with its records, sizes its own arrays */
typedef struct {
    const rg_store_redis_t  *r;       /* whose prefix the keys take */
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


/* arguments and answers (rg_store_redis.c) */
void rg_sr_args_init(rg_sr_args_t *a, rg_store_t *st);
void rg_sr_arg(rg_sr_args_t *a, const char *p, size_t len);
void rg_sr_argf(rg_sr_args_t *a, const char *fmt, ...);
void rg_sr_num(rg_sr_args_t *a, int64_t v);
void rg_sr_session_key(rg_sr_args_t *a, const rg_str_t *id, const char *name,
    size_t len);
void rg_sr_fence_keys(rg_sr_args_t *a, const rg_str_t *id);
rg_store_op_t *rg_sr_send(rg_store_t *st, const rg_str_t *tag,
    rg_sr_args_t *a, rg_redis_script_t *script, rg_store_redis_kind_e kind,
    rg_store_pt cb, void *data);
void rg_sr_answer(rg_store_op_t *op, rg_store_res_t *res);

/* sessions (rg_store_redis_session.c) */
extern rg_redis_script_t  rg_sr_checkpoint_lua;
extern rg_redis_script_t  rg_sr_load_lua;
extern rg_redis_script_t  rg_sr_put_lua;
extern rg_redis_script_t  rg_sr_lease_lua;
extern rg_redis_script_t  rg_sr_release_lua;

rg_store_op_t *rg_sr_checkpoint(rg_store_t *st,
    const rg_store_checkpoint_t *cp, rg_store_pt cb, void *data);
rg_store_op_t *rg_sr_load(rg_store_t *st, const rg_str_t *id,
    rg_store_pt cb, void *data);
rg_store_op_t *rg_sr_put(rg_store_t *st, const rg_store_put_t *p,
    rg_store_pt cb, void *data);
rg_store_op_t *rg_sr_lease(rg_store_t *st, const rg_str_t *id,
    const rg_str_t *holder, int64_t token, rg_msec_t ttl, rg_store_pt cb,
    void *data);
rg_store_op_t *rg_sr_release(rg_store_t *st, const rg_str_t *id,
    int64_t token, rg_store_pt cb, void *data);
void rg_sr_load_reply(rg_store_op_t *op, redisReply *reply,
    rg_store_res_t *res);

/* shared limits (rg_store_redis.c) */
extern rg_redis_script_t  rg_sr_take_lua;
extern rg_redis_script_t  rg_sr_cooldown_lua;
extern rg_redis_script_t  rg_sr_slot_lua;

rg_store_op_t *rg_sr_take(rg_store_t *st, const rg_str_t *cool,
    const rg_store_bucket_t *b, rg_uint_t nb, rg_store_pt cb, void *data);
rg_store_op_t *rg_sr_cooldown(rg_store_t *st, const rg_str_t *cool,
    rg_msec_t ms, rg_store_pt cb, void *data);
rg_store_op_t *rg_sr_slot(rg_store_t *st, const rg_str_t *cool,
    const rg_str_t *name, const rg_str_t *holder, rg_uint_t max,
    rg_msec_t ttl, rg_store_pt cb, void *data);

/* events (rg_store_redis_session.c) */
extern rg_redis_script_t  rg_sr_append_lua;

rg_store_op_t *rg_sr_append(rg_store_t *st, const rg_store_event_t *ev,
    rg_store_pt cb, void *data);
rg_store_op_t *rg_sr_range(rg_store_t *st, const rg_str_t *id,
    const char *after, rg_uint_t count, rg_store_pt cb, void *data);
void rg_sr_range_reply(rg_store_op_t *op, redisReply *reply,
    rg_store_res_t *res);

/* the epoch (rg_store_redis_epoch.c) */
extern rg_redis_script_t  rg_sr_epoch_lua;

void rg_sr_epoch_timer(evutil_socket_t fd, short what, void *arg);
void rg_sr_up(void *data);
uint64_t rg_sr_check(rg_store_t *st);


#endif /* RG_STORE_REDIS_INT_H */
