/* rg_store_conf.c: the store part: `store memory [max_keys=N]
 * [max_bytes=SIZE];` or `store redis { server …; … }` at the main level,
 * and the store each engine makes from it. A Redis store must be
 * reachable when an engine starts (within connect_timeout) and when
 * `reagent -t` checks the configuration; the message names the address
 * and why. The store interface itself is rg_store.h. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_secret.h>
#include <rg_store.h>
#include <rg_store_redis.h>
#include <rg_store_conf.h>
#include <event2/dns.h>


typedef struct {
    rg_store_t         *store;
    struct evdns_base  *dns;
} rg_store_ctx_t;


static char *rg_store_directive(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static void *rg_store_create_conf(rg_cycle_t *cycle);
static char *rg_store_init_conf(rg_cycle_t *cycle, void *conf);
static rg_int_t rg_store_init_worker(rg_engine_t *e);
static void rg_store_exit_worker(rg_engine_t *e);
static rg_int_t rg_store_check(rg_cycle_t *cycle);


static rg_conf_num_bounds_t  rg_store_db_bounds = { 0, 1000 };
static rg_conf_num_bounds_t  rg_store_conns_bounds = { 1, 64 };
static rg_conf_num_bounds_t  rg_store_events_bounds = { 1, 1000000 };
static rg_conf_num_bounds_t  rg_store_events_ttl_bounds = { 1, 0 };
/* a TTL of 0 would keep the keys forever */
static rg_conf_num_bounds_t  rg_store_ttl_bounds = { 1, 0 };


/* the reference of the directives below (reagent directives) */
static rg_conf_doc_t  rg_store_docs[] = {

    { "store", "store memory [max_keys=N] [max_bytes=SIZE]; or "
      "store redis { … }", "memory max_keys=100000 max_bytes=64m",
      "where sessions, the dedupe cache, side-effect claims and shared "
      "limits are kept: in the process (the least recently written keys "
      "go past a bound) or in Redis, across processes", NULL },

    { "session_ttl", "session_ttl TIME;", "7d",
      "how long the keys of a session are kept after it ended", NULL },

    { "store_timeout", "store_timeout TIME;", "60s",
      "how long a checkpoint may wait for Redis before the session fails",
      NULL },

    { "lease_ttl", "lease_ttl TIME;", "15s",
      "a session's lease, held by its one writer and renewed every third "
      "of it (300ms or more)", NULL },

    { "events_max", "events_max N;", "1000",
      "the events kept of a session (a task with \"events\": true), the "
      "newest", NULL },

    { "events_ttl", "events_ttl TIME;", "1h",
      "a session's events expire this long after the last one", NULL },

    { "server", "server HOST:PORT|unix:PATH;", "—",
      "the Redis server (required); several, with cluster on, are the "
      "seeds of a cluster", NULL },

    { "password_env", "password_env VAR;", "—",
      "the environment variable holding Redis's password", NULL },

    { "database", "database N;", "0",
      "the Redis database (0 in a cluster)", NULL },

    { "prefix", "prefix TEXT;", "rg:",
      "what every key begins with (no { or }: they mark hash tags)",
      NULL },

    { "connections", "connections N;", "4",
      "pipelined connections per worker (1 to 64)", NULL },

    { "connect_timeout", "connect_timeout TIME;", "1s",
      "until connected to Redis", NULL },

    { "command_timeout", "command_timeout TIME;", "2s",
      "for a reply, pipelined behind others", NULL },

    { "cluster", "cluster on|off;", "off",
      "Redis Cluster: keys go by slot, MOVED and ASK are followed", NULL },

    rg_null_doc
};


static rg_command_t  rg_store_commands[] = {

    { rg_string("store"),
      RG_MAIN_CONF|RG_CONF_MAYBE_BLOCK|RG_CONF_TAKE123,
      rg_store_directive, 0, NULL },

    { rg_string("session_ttl"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_store_conf_t, session_ttl),
      &rg_store_ttl_bounds },

    { rg_string("store_timeout"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_store_conf_t, store_timeout),
      NULL },

    { rg_string("lease_ttl"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_store_conf_t, lease_ttl),
      NULL },

    { rg_string("events_max"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_store_conf_t, events_max),
      &rg_store_events_bounds },

    { rg_string("events_ttl"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_store_conf_t, events_ttl),
      &rg_store_events_ttl_bounds },

    { rg_string("server"), RG_STORE_REDIS_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_array_slot, offsetof(rg_store_conf_t, servers),
      NULL },

    { rg_string("password_env"), RG_STORE_REDIS_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_store_conf_t, password_env), NULL },

    { rg_string("database"), RG_STORE_REDIS_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_store_conf_t, database),
      &rg_store_db_bounds },

    { rg_string("prefix"), RG_STORE_REDIS_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_store_conf_t, prefix), NULL },

    { rg_string("connections"), RG_STORE_REDIS_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_store_conf_t, connections),
      &rg_store_conns_bounds },

    { rg_string("connect_timeout"), RG_STORE_REDIS_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_store_conf_t, connect_timeout),
      NULL },

    { rg_string("command_timeout"), RG_STORE_REDIS_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_store_conf_t, command_timeout),
      NULL },

    { rg_string("cluster"), RG_STORE_REDIS_CONF|RG_CONF_FLAG,
      rg_conf_set_flag_slot, offsetof(rg_store_conf_t, cluster), NULL },

      rg_null_command_doc(rg_store_docs)
};


rg_part_t  rg_store_part = {
    .name = "store",
    .commands = rg_store_commands,
    .create_conf = rg_store_create_conf,
    .init_conf = rg_store_init_conf,
    .init_worker = rg_store_init_worker,
    .exit_worker = rg_store_exit_worker,
    .check = rg_store_check,
    .client = 1,                      /* submit, queue, status… use it */
    .conf_ctx = RG_STORE_REDIS_CONF,
    .conf_block = "store redis { }"
};


/* store memory max_keys=100000 max_bytes=64m;  or  store redis { … } */
static char *
rg_store_directive(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    size_t            n;
    rg_int_t          v;
    rg_str_t         *a, s;
    rg_uint_t         i;
    rg_store_conf_t  *scf;

    scf = conf;

    if (scf->type != RG_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    if (rg_str_eq(&cf->args[1], "redis")) {
        if (!cf->opens_block || cf->nargs != 2) {
            return "expects a block: store redis { server HOST:PORT; }";
        }

        scf->type = RG_STORE_REDIS;
        scf->file = rg_conf_file_name(cf);
        scf->line = rg_conf_line(cf);

        return rg_conf_block(cf, RG_STORE_REDIS_CONF, scf);
    }

    if (!rg_str_eq(&cf->args[1], "memory")) {
        return "expects \"memory\" or \"redis\"";
    }

    if (cf->opens_block) {
        return "takes no block with \"memory\": store memory "
               "max_keys=N max_bytes=SIZE;";
    }

    scf->type = RG_STORE_MEMORY;
    scf->max_keys = 100000;
    scf->max_bytes = 64 * 1024 * 1024;

    for (i = 2; i < cf->nargs; i++) {
        a = &cf->args[i];

        if (a->len > 9 && memcmp(a->data, "max_keys=", 9) == 0) {
            v = rg_atoi(a->data + 9, a->len - 9);
            if (v < 1) {
                return "expects max_keys=N with N of 1 or more";
            }
            scf->max_keys = v;

        } else if (a->len > 10 && memcmp(a->data, "max_bytes=", 10) == 0) {
            s.data = a->data + 10;
            s.len = a->len - 10;
            if (rg_conf_parse_size(&s, &n) != RG_OK || n < 1024) {
                return "expects max_bytes=SIZE of 1k or more, such as 64m";
            }
            scf->max_bytes = n;

        } else {
            return "expects max_keys=N or max_bytes=SIZE";
        }
    }

    return RG_CONF_OK;
}


static void *
rg_store_create_conf(rg_cycle_t *cycle)
{
    rg_store_conf_t  *scf;

    scf = rg_conf_create(cycle->pool, sizeof(rg_store_conf_t),
                         rg_store_commands, RG_MAIN_CONF|RG_STORE_REDIS_CONF);
    if (scf == NULL) {
        return NULL;
    }

    scf->type = RG_CONF_UNSET_UINT;       /* what rg_store_directive sets */

    return scf;
}


static void
rg_store_free_redis_conf(void *data)
{
    rg_uint_t         i;
    rg_store_conf_t  *scf;

    scf = data;

    rg_redis_conf_free(&scf->redis);

    for (i = 0; i < scf->nseeds; i++) {
        rg_redis_conf_free(&scf->seeds[i]);
    }

    free(scf->seeds);
}


static char *
rg_store_init_redis(rg_cycle_t *cycle, rg_store_conf_t *scf)
{
    const char   *err, *pw;
    rg_str_t     *srv;
    rg_uint_t     i;

    if (scf->servers == NULL || scf->servers->nelts == 0) {
        rg_cycle_error(cycle, scf->file, scf->line, "\"store redis\" needs "
                       "a \"server\" (HOST:PORT or unix:/PATH)");
        return RG_CONF_ERROR;
    }

    srv = scf->servers->elts;

    rg_conf_init_value(scf->cluster, 0);

    if (scf->servers->nelts > 1 && !scf->cluster) {
        rg_conf_error(cycle, scf, "server", NULL,
                      scf->file, scf->line, "\"store redis\" names "
                      "%lu servers: more than one is for a cluster "
                      "(\"cluster on;\")",
                      (unsigned long) scf->servers->nelts);
        return RG_CONF_ERROR;
    }

    if (rg_pool_cleanup_add(cycle->pool, rg_store_free_redis_conf, scf)
        == NULL)
    {
        return RG_CONF_ERROR;
    }

    err = rg_redis_parse_server(srv[0].data, srv[0].len, &scf->redis);
    if (err) {
        rg_conf_error(cycle, scf, "server", srv[0].data,
                      scf->file, scf->line, "\"server\" \"%.*s\" %s",
                      (int) srv[0].len, srv[0].data, err);
        return RG_CONF_ERROR;
    }

    if (scf->cluster && scf->redis.path) {
        rg_conf_error(cycle, scf, "server", srv[0].data,
                      scf->file, scf->line, "a cluster is reached "
                      "over TCP: \"server\" must be HOST:PORT, not %.*s",
                      (int) srv[0].len, srv[0].data);
        return RG_CONF_ERROR;
    }

    if (scf->servers->nelts > 1) {
        scf->seeds = calloc(scf->servers->nelts - 1, sizeof(rg_redis_conf_t));
        if (scf->seeds == NULL) {
            return RG_CONF_ERROR;
        }

        for (i = 1; i < scf->servers->nelts; i++) {
            err = rg_redis_parse_server(srv[i].data, srv[i].len,
                                        &scf->seeds[scf->nseeds]);
            if (err || scf->seeds[scf->nseeds].path) {
                rg_conf_error(cycle, scf, "server", srv[i].data,
                              scf->file, scf->line, "\"server\" "
                              "\"%.*s\" %s", (int) srv[i].len, srv[i].data,
                              err ? err : "must be HOST:PORT in a cluster");
                scf->nseeds++;
                return RG_CONF_ERROR;
            }
            scf->nseeds++;
        }
    }

    if (scf->password_env.data) {
        pw = rg_secret_env(scf->password_env.data);
        if (pw == NULL) {
            rg_conf_error(cycle, scf, "password_env", NULL,
                          scf->file, scf->line, "\"password_env\" "
                          "names %s, which is not set",
                          scf->password_env.data);
            return RG_CONF_ERROR;
        }
        scf->redis.password = strdup(pw);
        if (scf->redis.password == NULL) {
            return RG_CONF_ERROR;
        }
    }

    rg_conf_init_value(scf->database, 0);

    if (scf->cluster && scf->database) {
        rg_conf_error(cycle, scf, "database", NULL,
                      scf->file, scf->line, "a cluster has only "
                      "database 0: \"database %ld\" cannot be used with "
                      "\"cluster on\"", (long) scf->database);
        return RG_CONF_ERROR;
    }

    rg_conf_init_str_value(scf->prefix, "rg:");

    if (memchr(scf->prefix.data, '{', scf->prefix.len)
        || memchr(scf->prefix.data, '}', scf->prefix.len))
    {
        rg_conf_error(cycle, scf, "prefix", NULL,
                      scf->file, scf->line, "\"prefix\" \"%s\" may "
                      "not hold \"{\" or \"}\": those mark a session's "
                      "hash tag", scf->prefix.data);
        return RG_CONF_ERROR;
    }

    rg_conf_init_value(scf->connections, 4);
    rg_conf_init_msec_value(scf->connect_timeout, 1000);
    if (scf->command_timeout == RG_CONF_UNSET_MSEC) {
        /* a reply waits behind the others pipelined before it: 10,000
         * checkpoints at once take longer than 500ms in all */
        scf->command_timeout = 2000;
    }

    scf->redis.database = scf->database;
    scf->redis.connections = (rg_uint_t) scf->connections;
    scf->redis.connect_timeout = scf->connect_timeout;
    scf->redis.command_timeout = scf->command_timeout;
    scf->redis.cluster = (rg_uint_t) scf->cluster;

    return RG_CONF_OK;
}


static char *
rg_store_init_conf(rg_cycle_t *cycle, void *conf)
{
    rg_store_conf_t  *scf;

    scf = conf;

    if (scf->type == RG_CONF_UNSET_UINT) {
        scf->type = RG_STORE_MEMORY;
        scf->max_keys = 100000;
        scf->max_bytes = 64 * 1024 * 1024;
    }

    rg_conf_init_msec_value(scf->session_ttl, 7 * 24 * 3600 * 1000ULL);

    rg_conf_init_msec_value(scf->store_timeout, 60 * 1000);

    rg_conf_init_msec_value(scf->lease_ttl, 15 * 1000);

    rg_conf_init_value(scf->events_max, 1000);

    rg_conf_init_msec_value(scf->events_ttl, 3600 * 1000);

    if (scf->lease_ttl < 300) {
        rg_conf_error(cycle, scf, "lease_ttl", NULL,
                      cycle->conf_file, 0, "\"lease_ttl\" must be "
                      "at least 300ms: its heartbeat comes every third");
        return RG_CONF_ERROR;
    }

    if (scf->type == RG_STORE_REDIS) {
        return rg_store_init_redis(cycle, scf);
    }

    return RG_CONF_OK;
}


static void
rg_store_break(evutil_socket_t fd, short what, void *arg)
{
    event_base_loopbreak(arg);
}


/* runs base until the client has a connection or the connect timeout
 * passed: a start that cannot reach Redis says so at once */
static rg_int_t
rg_store_wait_ready(struct event_base *base, rg_redis_t *r, rg_msec_t ms)
{
    rg_msec_t        until;
    struct event    *tick;
    struct timeval   tv = { 0, 10 * 1000 };

    tick = event_new(base, -1, EV_PERSIST, rg_store_break, base);
    if (tick == NULL) {
        return RG_ERROR;
    }

    event_add(tick, &tv);
    until = rg_monotonic_msec() + ms;

    while (!rg_redis_connected(r) && rg_monotonic_msec() < until) {
        event_base_loop(base, EVLOOP_ONCE);
    }

    event_free(tick);

    return rg_redis_connected(r) ? RG_OK : RG_ERROR;
}


static rg_store_t *
rg_store_redis_start(struct event_base *base, struct evdns_base *dns,
    rg_store_conf_t *scf, rg_log_t *log, char *err, size_t errlen)
{
    rg_uint_t               i;
    rg_redis_t             *r;
    rg_store_t             *st;
    rg_store_redis_conf_t   rc;

    memset(&rc, 0, sizeof(rc));
    rc.redis = scf->redis;
    rc.prefix = scf->prefix.data;

    st = rg_store_redis_create(base, dns, &rc, log);
    if (st == NULL) {
        snprintf(err, errlen, "cannot create the Redis store");
        return NULL;
    }

    r = rg_store_redis_client(st);

    for (i = 0; i < scf->nseeds; i++) {
        rg_redis_add_seed(r, scf->seeds[i].host, scf->seeds[i].port);
    }

    if (rg_store_wait_ready(base, r, scf->connect_timeout) != RG_OK) {
        snprintf(err, errlen, "redis %s is not reachable within %llums "
                 "(connect_timeout): %s", rg_redis_address(r),
                 (unsigned long long) scf->connect_timeout,
                 rg_redis_last_error(r)[0] ? rg_redis_last_error(r)
                                           : "no answer");
        st->destroy(st);
        return NULL;
    }

    return st;
}


static rg_int_t
rg_store_init_worker(rg_engine_t *e)
{
    char              err[512];
    rg_store_ctx_t   *ctx;
    rg_store_conf_t  *scf;

    scf = rg_store_conf(e->cycle);

    ctx = calloc(1, sizeof(rg_store_ctx_t));
    if (ctx == NULL) {
        return RG_ERROR;
    }

    rg_engine_ctx(e, &rg_store_part) = ctx;

    if (scf->type == RG_STORE_MEMORY) {
        ctx->store = rg_store_memory_create(e->base,
                                            (rg_uint_t) scf->max_keys,
                                            scf->max_bytes);
        return ctx->store ? RG_OK : RG_ERROR;
    }

    /* names are resolved by evdns, never by a blocking call */
    if (scf->redis.host) {
        ctx->dns = evdns_base_new(e->base, EVDNS_BASE_INITIALIZE_NAMESERVERS
                                  | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
        if (ctx->dns == NULL) {
            rg_log_error(RG_LOG_EMERG, e->log, 0, "cannot start the "
                         "resolver for redis (/etc/resolv.conf)");
            return RG_ERROR;
        }
    }

    ctx->store = rg_store_redis_start(e->base, ctx->dns, scf, e->log, err,
                                      sizeof(err));
    if (ctx->store == NULL) {
        rg_log_error(RG_LOG_EMERG, e->log, 0, "%s", err);
        return RG_ERROR;
    }

    return RG_OK;
}


static void
rg_store_exit_worker(rg_engine_t *e)
{
    rg_store_ctx_t  *ctx;

    ctx = rg_engine_ctx(e, &rg_store_part);
    if (ctx == NULL) {
        return;
    }

    if (ctx->store) {
        ctx->store->destroy(ctx->store);
    }

    if (ctx->dns) {
        evdns_base_free(ctx->dns, 1);
    }

    free(ctx);
    rg_engine_ctx(e, &rg_store_part) = NULL;
}


/* reagent -t: a Redis store must answer now */
static rg_int_t
rg_store_check(rg_cycle_t *cycle)
{
    char                err[512];
    rg_int_t            rc;
    rg_store_t         *st;
    rg_store_conf_t    *scf;
    rg_msec_t           deadline;
    struct timeval      tv;
    struct evdns_base  *dns;
    struct event_base  *base;
    rg_log_t            quiet;

    scf = rg_store_conf(cycle);

    if (scf->type != RG_STORE_REDIS) {
        return RG_OK;
    }

    base = event_base_new();
    if (base == NULL) {
        return RG_ERROR;
    }

    dns = scf->redis.host
          ? evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS
                                 | EVDNS_BASE_DISABLE_WHEN_INACTIVE)
          : NULL;

    /* its own words say what failed, once */
    quiet = *cycle->log;
    quiet.log_level = RG_LOG_CRIT;

    st = rg_store_redis_start(base, dns, scf, &quiet, err, sizeof(err));
    rc = st ? RG_OK : RG_ERROR;

    if (st) {
        fprintf(stderr, "reagent: redis %s is reachable\n",
                rg_redis_address(rg_store_redis_client(st)));

        /* its persistence comes in the answers that follow */
        deadline = rg_monotonic_msec() + scf->connect_timeout;
        while (rg_store_redis_persists(st) == RG_STORE_PERSIST_ASKED
               && rg_monotonic_msec() < deadline)
        {
            tv.tv_sec = 0;
            tv.tv_usec = 20 * 1000;
            event_base_loopexit(base, &tv);
            event_base_dispatch(base);
        }

        if (rg_store_redis_persists(st) == RG_STORE_PERSIST_NO) {
            fprintf(stderr, "reagent: warning: redis %s persists nothing "
                    "(appendonly no, save \"\"): if it restarts, every "
                    "task queued and not yet taken is lost; turn on "
                    "\"appendonly yes\"\n",
                    rg_redis_address(rg_store_redis_client(st)));
        }

        st->destroy(st);
    } else {
        fprintf(stderr, "reagent: %s in %s:%lu\n", err, scf->file,
                (unsigned long) scf->line);
    }

    if (dns) {
        evdns_base_free(dns, 1);
    }

    event_base_free(base);

    return rc;
}


rg_store_t *
rg_store_get(rg_engine_t *e)
{
    rg_store_ctx_t  *ctx;

    ctx = rg_engine_ctx(e, &rg_store_part);

    return ctx ? ctx->store : NULL;
}


rg_msec_t
rg_store_session_ttl(rg_engine_t *e)
{
    return rg_store_conf(e->cycle)->session_ttl;
}


rg_msec_t
rg_store_timeout(rg_engine_t *e)
{
    return rg_store_conf(e->cycle)->store_timeout;
}


rg_msec_t
rg_store_lease_ttl(rg_engine_t *e)
{
    return rg_store_conf(e->cycle)->lease_ttl;
}


rg_uint_t
rg_store_events_max(rg_engine_t *e)
{
    return (rg_uint_t) rg_store_conf(e->cycle)->events_max;
}


rg_msec_t
rg_store_events_ttl(rg_engine_t *e)
{
    return rg_store_conf(e->cycle)->events_ttl;
}


rg_redis_t *
rg_store_redis_new(rg_engine_t *e, rg_uint_t connections,
    rg_msec_t command_timeout)
{
    rg_uint_t         i;
    rg_redis_t       *r;
    rg_redis_conf_t   rc;
    rg_store_ctx_t   *ctx;
    rg_store_conf_t  *scf;

    scf = rg_store_conf(e->cycle);
    ctx = rg_engine_ctx(e, &rg_store_part);

    if (scf->type != RG_STORE_REDIS || ctx == NULL) {
        return NULL;
    }

    rc = scf->redis;
    rc.scripts = NULL;
    rc.connections = connections;
    rc.command_timeout = command_timeout;

    r = rg_redis_create(e->base, ctx->dns, &rc, e->log);
    if (r == NULL) {
        return NULL;
    }

    for (i = 0; i < scf->nseeds; i++) {
        rg_redis_add_seed(r, scf->seeds[i].host, scf->seeds[i].port);
    }

    return r;
}


const char *
rg_store_prefix(rg_cycle_t *cycle)
{
    rg_store_conf_t  *scf;

    scf = rg_store_conf(cycle);

    return scf->prefix.data ? scf->prefix.data : "rg:";
}
