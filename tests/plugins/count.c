/* count.c: a test plugin with a side effect that the tests can count:
 * module "count". `count` {key, ms?} is flagged RG_TOOL_SIDE_EFFECT (and
 * RG_TOOL_BLOCKING): each execution INCRs "count:<key>" and
 * "count:<key>:<its idempotency key>" in a Redis server of its own
 * (`module count { redis /path/redis.sock; }`, a blocking hiredis client
 * in the pool thread), then sleeps ms (so that a test can kill the worker
 * while it runs) and answers "counted N". `peek` {key, ms?} does the
 * same but is flagged RG_TOOL_READ_ONLY (a dedupe candidate) and answers
 * "peeked <key>", the same for every execution (or fails, after its
 * sleep, with "fail": 1). `launch` {key} counts like `count` and is
 * also flagged RG_TOOL_DANGEROUS (it needs approval). A test reads the
 * counters to see whether a call ran once, twice or never. */

#include <rg_tool_module.h>

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


typedef struct {
    char            path[256];
} rg_count_conf_t;


static int rg_count_start(rg_tool_call_t *call);
static void *rg_count_create_conf(rg_tool_host_t *host);
static void rg_count_exit(rg_tool_host_t *host, void *conf);
static const char *rg_count_redis(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);


static const rg_tool_directive_t  rg_count_directives[] = {
    { "redis", 1, 1, rg_count_redis },
    { NULL, 0, 0, NULL }
};


static const rg_tool_t  rg_count_tools[] = {
    { "count", "Count one execution of a key (a side effect).",
      "{\"type\":\"object\",\"properties\":{"
        "\"key\":{\"type\":\"string\"},"
        "\"ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":60000}},"
       "\"required\":[\"key\"]}",
      RG_TOOL_SIDE_EFFECT | RG_TOOL_BLOCKING, 0, rg_count_start, NULL },

    { "peek", "Read a key; counts its executions.",
      "{\"type\":\"object\",\"properties\":{"
        "\"key\":{\"type\":\"string\"},"
        "\"fail\":{\"type\":\"integer\"},"
        "\"ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":60000}},"
       "\"required\":[\"key\"]}",
      RG_TOOL_READ_ONLY | RG_TOOL_BLOCKING, 0, rg_count_start, NULL },

    { "launch", "Launch something (counted): dangerous, needs approval.",
      "{\"type\":\"object\",\"properties\":{"
        "\"key\":{\"type\":\"string\"}},"
       "\"required\":[\"key\"]}",
      RG_TOOL_SIDE_EFFECT | RG_TOOL_DANGEROUS | RG_TOOL_BLOCKING, 0,
      rg_count_start, NULL },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


__attribute__((visibility("default")))
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "count",
    rg_count_directives,
    rg_count_create_conf,
    NULL,
    rg_count_exit,
    rg_count_tools
};


static void *
rg_count_create_conf(rg_tool_host_t *host)
{
    return calloc(1, sizeof(rg_count_conf_t));
}


static void
rg_count_exit(rg_tool_host_t *host, void *conf)
{
    free(conf);
}


static const char *
rg_count_redis(rg_tool_host_t *host, void *conf, int argc, const char **argv)
{
    rg_count_conf_t  *c = conf;

    if (strlen(argv[0]) >= sizeof(c->path)) {
        return "is too long";
    }

    strcpy(c->path, argv[0]);

    return NULL;
}


static int
rg_count_start(rg_tool_call_t *call)
{
    char              buf[64];
    size_t            klen;
    long long         ms, n, fail;
    const char       *key, *idem;
    redisReply       *r;
    redisContext     *ctx;
    struct timespec   ts;
    rg_count_conf_t  *c = call->conf;

    if (call->host->arg_string(call, "key", &key, &klen) != 0) {
        call->host->fail(call, "missing argument 'key'");
        return RG_TOOL_OK;
    }

    ms = 0;
    call->host->arg_int(call, "ms", &ms);

    idem = call->host->size >= sizeof(rg_tool_host_t)
           && call->host->idempotency_key
           ? call->host->idempotency_key(call) : "none";

    ctx = redisConnectUnix(c->path);
    if (ctx == NULL || ctx->err) {
        call->host->fail(call, "cannot reach the counter");
        if (ctx) {
            redisFree(ctx);
        }
        return RG_TOOL_OK;
    }

    r = redisCommand(ctx, "INCR count:%s", key);
    n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r) {
        freeReplyObject(r);
    }

    r = redisCommand(ctx, "INCR count:%s:%s", key, idem);
    if (r) {
        freeReplyObject(r);
    }

    redisFree(ctx);

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000;
    nanosleep(&ts, NULL);

    fail = 0;
    call->host->arg_int(call, "fail", &fail);

    if (fail) {
        call->host->fail(call, "peek failed as asked");
        return RG_TOOL_OK;
    }

    if (strcmp(call->tool->name, "peek") == 0) {
        snprintf(buf, sizeof(buf), "peeked %.40s", key);
    } else {
        snprintf(buf, sizeof(buf), "counted %lld", n);
    }
    call->host->done(call, buf, strlen(buf));

    return RG_TOOL_OK;
}
