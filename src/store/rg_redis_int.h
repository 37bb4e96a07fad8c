/* rg_redis_int.h: what rg_redis.c (the client), rg_redis_cmd.c
 * (commands), rg_redis_conn.c (connections) and rg_redis_cluster.c (the
 * slot router) share; not for callers, who use
 * rg_redis.h. A client talks to one or more nodes (one without cluster
 * mode, the masters of a Redis Cluster with it), each over a few
 * connections; a command is routed to a node by its tag's slot and to a
 * connection by its tag, so that one session's commands keep their
 * order. */

#ifndef RG_REDIS_INT_H
#define RG_REDIS_INT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_redis.h>
#include <event2/event_struct.h>
#include <hiredis/async.h>

#define RG_REDIS_SLOTS        16384
#define RG_REDIS_MAX_NODES    256
#define RG_REDIS_REDIRECTS    5        /* MOVED and ASK, per command */

typedef struct rg_redis_conn_s  rg_redis_conn_t;
typedef struct rg_redis_node_s  rg_redis_node_t;

typedef enum {
    RG_REDIS_DOWN = 0,            /* waiting for its backoff */
    RG_REDIS_RESOLVING,
    RG_REDIS_CONNECTING,          /* connect, AUTH, SELECT, scripts, PING */
    RG_REDIS_READY
} rg_redis_state_e;


struct rg_redis_conn_s {
    rg_redis_node_t    *node;
    redisAsyncContext  *ac;
    rg_redis_state_e    state;
    struct event        timer;        /* connect deadline, or backoff */
    struct evdns_getaddrinfo_request  *dns;
    rg_uint_t           failures;     /* in a row */
    rg_uint_t           inflight;
    rg_msec_t           last_read;    /* the last reply */
    rg_redis_cmd_t     *qhead;        /* waiting for it, in order */
    rg_redis_cmd_t    **qtail;
};


struct rg_redis_node_s {
    rg_redis_t         *r;
    rg_uint_t           index;
    char               *host;         /* or NULL with a unix path */
    int                 port;
    char               *path;
    char                addr[300];    /* for messages */
    rg_redis_conn_t    *conns;
    rg_uint_t           nconns;
    rg_uint_t           next_conn;
    rg_uint_t           ready;
};


struct rg_redis_cmd_s {
    rg_redis_t         *r;
    rg_redis_conn_t    *conn;         /* sent on it, or waiting for it */
    rg_redis_cmd_t     *next;         /* every live command */
    rg_redis_cmd_t     *prev;
    rg_redis_cmd_t     *qnext;        /* its connection's wait queue */
    rg_redis_cmd_t    **qpprev;       /* what points at it there */
    rg_redis_reply_pt   cb;
    void               *data;
    rg_redis_script_t  *script;
    struct event        timer;
    rg_msec_t           timeout;
    rg_msec_t           sent_at;
    uint64_t            created;      /* usec, for the metrics */
    const char         *err;          /* posted: answer with this */
    int                 argc;
    char               *resp;         /* the command as sent, formatted once */
    size_t              resp_len;
    size_t              rest;         /* a script's: its bytes after the sha */
    uint32_t            hint;         /* its tag's hash: the connection */
    int                 slot;         /* its tag's slot, -1: none */
    rg_uint_t           redirects;
    unsigned            answered:1;   /* called back, or cancelled */
    unsigned            queued:1;
    unsigned            in_hiredis:1;
    unsigned            eval_sent:1;  /* NOSCRIPT was answered once */
    unsigned            has_hint:1;
    unsigned            asking:1;     /* send ASKING before it */
};


struct rg_redis_s {
    struct event_base  *base;
    struct evdns_base  *dns;
    rg_log_t           *log;
    rg_redis_conf_t     conf;
    const struct timeval  *cmd_tv;    /* command_timeout, a common timeout */
    char                addr[320];    /* the first node's, for messages */
    char                last_error[256];

    rg_redis_node_t    *nodes[RG_REDIS_MAX_NODES];
    rg_uint_t           nnodes;
    rg_uint_t           ready;        /* ready connections, all nodes */

    /* cluster mode: the slot map, node index + 1 (0: not known) */
    uint16_t           *slots;
    struct event        refresh_ev;
    rg_msec_t           refreshed;
    unsigned            refresh_pending:1;
    unsigned            refresh_armed:1;

    rg_redis_cmd_t     *all;          /* every live command */

    rg_msec_t           down_since;   /* 0: up, or never was down */
    uint64_t            down_failed;  /* commands failed in this outage */
    unsigned            down_logged:1;
    unsigned            was_up:1;
    unsigned            destroying:1;

    rg_redis_stats_t    stats;
};


/* rg_redis.c: the client, its nodes */
rg_redis_node_t *rg_redis_node_add(rg_redis_t *r, const char *host,
    int port, const char *path);
void rg_redis_set_error(rg_redis_t *r, const char *fmt, ...);

/* rg_redis_cmd.c: commands */
rg_redis_conn_t *rg_redis_node_pick(rg_redis_node_t *n,
    const rg_redis_cmd_t *cmd);
void rg_redis_route(rg_redis_t *r, rg_redis_cmd_t *cmd,
    rg_redis_conn_t *c);
void rg_redis_finish(rg_redis_cmd_t *cmd, redisReply *reply,
    const char *err);
void rg_redis_unqueue(rg_redis_cmd_t *cmd);
char *rg_redis_bulk_head(char *p, size_t len);

/* rg_redis_conn.c: connections */
void rg_redis_connect(rg_redis_conn_t *c);
void rg_redis_backoff_handler(evutil_socket_t fd, short what, void *arg);
void rg_redis_lost(rg_redis_conn_t *c, const char *why);
rg_int_t rg_redis_send(rg_redis_conn_t *c, rg_redis_cmd_t *cmd);
int rg_redis_obuf_full(rg_redis_conn_t *c);

/* rg_redis_cluster.c */
int rg_redis_cluster_slot(const char *tag, size_t len);
rg_redis_node_t *rg_redis_cluster_node(rg_redis_t *r, int slot);
/* a MOVED or ASK error for cmd: 1 when it was sent again */
rg_uint_t rg_redis_cluster_redirect(rg_redis_t *r, rg_redis_cmd_t *cmd,
    const char *err, size_t len);
void rg_redis_cluster_ready(rg_redis_t *r, rg_redis_conn_t *c);
void rg_redis_cluster_refresh(rg_redis_t *r);

#endif /* RG_REDIS_INT_H */
