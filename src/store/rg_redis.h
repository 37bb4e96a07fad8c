/* rg_redis.h: an asynchronous Redis client on the worker's reactor, built
 * on hiredis's async API (0.14: no timeouts, blocking name resolution).
 * Owns a few pipelined connections to one server, their reconnection with
 * backoff, the queue of commands issued while none is up, every deadline
 * (connect and command, on reactor timers) and Lua scripts sent by SHA.
 * Every command ends with exactly one callback: its reply or an error,
 * never inside the call that issued it. Knows nothing of sessions. */

#ifndef RG_REDIS_H
#define RG_REDIS_H

#include <rg_config.h>
#include <rg_core.h>
#include <event2/event.h>
#include <event2/dns.h>
#include <hiredis/hiredis.h>

typedef struct rg_redis_s         rg_redis_t;
typedef struct rg_redis_cmd_s     rg_redis_cmd_t;
typedef struct rg_redis_script_s  rg_redis_script_t;

/* reply is NULL exactly when err is set ("timed out after 500ms", an
 * error reply such as "WRONGTYPE …"); both are valid during the call
 * only. An error after the command may have reached the server says so
 * ("connection lost: outcome unknown"). */
typedef void (*rg_redis_reply_pt)(void *data, redisReply *reply,
    const char *err);

typedef struct {
    char               *host;          /* a name or an address; or NULL */
    int                 port;
    char               *path;          /* a unix socket, when host is NULL */
    char               *password;      /* a secret: AUTH only */
    rg_int_t            database;
    rg_uint_t           connections;
    rg_msec_t           connect_timeout;
    rg_msec_t           command_timeout;
    rg_uint_t           max_queue;     /* commands waiting for a connection */
    rg_msec_t           backoff_base;
    rg_msec_t           backoff_max;
    /* loaded on every new connection before anything else is sent, so
     * that EVALSHA finds them and commands keep their order; NULL-ended */
    rg_redis_script_t **scripts;
    /* a Redis Cluster: the server is a seed, the slot map is read from
     * it and each command goes to the node of its tag's slot */
    rg_uint_t           cluster;
    /* told each time a connection is ready after none was (the first,
     * and after every outage): the server may be another one now */
    void              (*on_up)(void *data);
    void               *up_data;
} rg_redis_conf_t;

/* A Lua script, sent as EVALSHA and again as EVAL when the server answers
 * NOSCRIPT (a SCRIPT FLUSH on a live connection: then that one command
 * may run after commands issued later). Static, shared by clients. */
struct rg_redis_script_s {
    const char         *name;          /* for errors */
    const char         *source;
    char                sha[41];       /* filled by rg_redis_script_init */
};

typedef struct {
    uint64_t            commands;
    uint64_t            replies;
    uint64_t            errors;        /* error replies */
    uint64_t            timeouts;
    uint64_t            lost;          /* failed by a lost connection */
    uint64_t            rejected;      /* queue full, or shut down */
    uint64_t            connects;
    uint64_t            noscript;
    uint64_t            moved;         /* cluster redirects */
    uint64_t            asked;
    uint64_t            refreshes;     /* slot map reads */
    rg_uint_t           queued;        /* waiting for a connection now */
    rg_uint_t           inflight;      /* sent, no answer yet */
} rg_redis_stats_t;


rg_redis_t *rg_redis_create(struct event_base *base,
    struct evdns_base *dns, const rg_redis_conf_t *conf, rg_log_t *log);
/* fails whatever is pending ("the store is shutting down"), then frees */
void rg_redis_destroy(rg_redis_t *r);

/* argv[i] is lens[i] bytes (binary safe), copied; timeout 0: the
 * configured command_timeout. Commands with the same tag (a session's
 * hash tag) go over one connection, in the order issued; without a tag,
 * over any. Returns NULL only without memory. */
rg_redis_cmd_t *rg_redis_command(rg_redis_t *r, const rg_str_t *tag,
    rg_msec_t timeout, rg_redis_reply_pt cb, void *data, int argc,
    const char **argv, const size_t *lens);
/* EVALSHA script nkeys keys… args…: argv holds the keys, then the args */
rg_redis_cmd_t *rg_redis_eval(rg_redis_t *r, const rg_str_t *tag,
    rg_redis_script_t *script, rg_redis_reply_pt cb, void *data, int nkeys,
    int argc, const char **argv, const size_t *lens);
/* the callback will not be called; safe until it was */
void rg_redis_cancel(rg_redis_cmd_t *cmd);

rg_int_t rg_redis_script_init(rg_redis_script_t *script);

/* another node to reach a cluster through, beside the configured one */
rg_int_t rg_redis_add_seed(rg_redis_t *r, const char *host, int port);

/* 1 while at least one connection is ready */
rg_uint_t rg_redis_connected(rg_redis_t *r);
const char *rg_redis_address(rg_redis_t *r);
const char *rg_redis_last_error(rg_redis_t *r);
const rg_redis_stats_t *rg_redis_stats(rg_redis_t *r);

/* "host:port" or "unix:/path" into conf (host or path malloc'ed) */
const char *rg_redis_parse_server(const char *s, size_t len,
    rg_redis_conf_t *conf);
void rg_redis_conf_free(rg_redis_conf_t *conf);

#endif /* RG_REDIS_H */
