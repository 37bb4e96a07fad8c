/* rg_http.h: the http part, reagent's HTTP API on libevent's evhttp:
 * `http { listen …; auth_token_env …; max_body …; }`. The master opens
 * the listening sockets (rg_http_conf.c), each worker of `reagent serve`
 * accepts on them (rg_http_server.c): the tasks (rg_http_tasks.c), their
 * events (rg_http_events.c), the OpenAI-compatible face
 * (rg_http_openai.c), health and metrics (rg_http_health.c). What the
 * files share is declared here. */

#ifndef RG_HTTP_H
#define RG_HTTP_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <sys/socket.h>
#include <event2/http.h>
#include <jansson.h>

/* directives inside http { } */
#define RG_HTTP_CONF        0x0080


typedef struct {
    rg_str_t            text;             /* as written: "127.0.0.1:8080" */
    struct sockaddr_storage  sa;
    socklen_t           salen;
    int                 fd;               /* opened by the master, or -1 */
    rg_uint_t           metrics;          /* metrics_listen: /metrics and
                                             the probes only */
} rg_http_listen_t;


typedef struct {
    rg_uint_t           declared;
    const char         *file;
    rg_uint_t           line;
    rg_array_t         *listens;          /* rg_http_listen_t */
    rg_str_t            auth_token_env;
    const char         *token;            /* its value, NULL: no auth */
    size_t              token_len;
    size_t              max_body;
    size_t              max_header;
    rg_msec_t           client_timeout;   /* reading a request, whole */
    rg_msec_t           send_timeout;     /* writing an answer */
    rg_int_t            max_event_streams;
    rg_int_t            max_connections;  /* open, per worker */
    rg_int_t            max_tasks;        /* without a queue: kept here */
    rg_str_t            access_log;       /* a file, "off", or "": the
                                             error log's */
} rg_http_conf_t;


extern rg_part_t  rg_http_part;

#define rg_http_conf(cycle)                                                  \
    ((rg_http_conf_t *) rg_cycle_conf(cycle, &rg_http_part))


typedef struct rg_http_s       rg_http_t;
typedef struct rg_http_req_s   rg_http_req_t;
typedef struct rg_http_tasks_s rg_http_tasks_t;
typedef struct rg_http_follow_s rg_http_follow_t;
typedef struct rg_http_conn_s  rg_http_conn_t;   /* rg_http_server.c */

/* a ring's link, first in what it links */
typedef struct rg_http_link_s  rg_http_link_t;
struct rg_http_link_s {
    rg_http_link_t     *next;
    rg_http_link_t     *prev;
};

/* what one request carries from the router to its handler */
struct rg_http_req_s {
    rg_http_t          *http;
    struct evhttp_request *req;
    rg_http_conn_t     *conn;             /* its connection */
    const char         *path;             /* decoded, no query */
    const char         *rest;             /* after the route's prefix */
    const char         *route;            /* its pattern, for metrics */
    const char         *query;            /* or NULL */
    char                id[72];           /* the request id */
    char               *path_buf;
    void              (*gone)(rg_http_req_t *r);  /* the client left */
    void               *data;             /* the handler's */
    struct event       *peer_ev;          /* did the client leave? */
    rg_msec_t           started;
    size_t              bytes;            /* of the answer's body */
    int                 status;
    rg_uint_t           metrics_only:1;   /* came on metrics_listen */
    rg_uint_t           watched:1;        /* its close is watched */
    rg_uint_t           held:1;           /* a drain waits for it */
};


/* the worker's API: its server, its tasks, its streams */
struct rg_http_s {
    rg_engine_t        *engine;
    rg_http_conf_t     *conf;
    struct evhttp     **servers;          /* per socket */
    struct evhttp_bound_socket **bound;
    rg_uint_t           nbound;
    rg_http_tasks_t    *tasks;
    rg_uint_t           streams;          /* open event streams */
    rg_http_link_t      follows;          /* the open event streams */
    rg_http_link_t      conns;            /* the open connections */
    rg_uint_t           nconns;
    rg_http_conn_t    **byfd;             /* bound ones, by descriptor */
    rg_uint_t           nbyfd;
    rg_msec_t           refused_said;     /* max_connections, logged */
    uint64_t            requests;
    unsigned            draining:1;
};


/* rg_http_server.c: answering */
void rg_http_json(rg_http_req_t *r, int status, json_t *body);
void rg_http_send(rg_http_req_t *r, int status, const char *type,
    const char *body, size_t len);
const char *rg_http_header(rg_http_req_t *r, const char *name);
/* the answer comes later: a drain waits for it, and gone(r) is called
 * (then r freed) if the client leaves first */
void rg_http_watch(rg_http_req_t *r, void (*gone)(rg_http_req_t *r),
    void *data);
/* {"error": {"message", "type", "code"}} */
void rg_http_error(rg_http_req_t *r, int status, const char *type,
    const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* the answer when memory ran out */
#define rg_http_nomem(r)                                                     \
    rg_http_error(r, 500, "server_error", "out_of_memory", "out of memory")
/* 405 with "Allow: ALLOW" (the methods the path takes) */
void rg_http_not_allowed(rg_http_req_t *r, const char *allow,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* the request's body (NUL-ended), or NULL with an error answered */
char *rg_http_body(rg_http_req_t *r, size_t *len);
void rg_http_req_free(rg_http_req_t *r);
/* a streamed answer ends: its last chunk, its log line, r freed */
void rg_http_stream_end(rg_http_req_t *r);

/* rg_http_tasks.c */
/* in a worker: the master's listeners, inherited, closed (its own copies
 * stay, until a drain closes them) */
void rg_http_sockets_inherited_close(void);
rg_int_t rg_http_tasks_init(rg_http_t *h);
void rg_http_tasks_exit(rg_http_t *h);
void rg_http_tasks_handler(rg_http_req_t *r);
void rg_http_agents_handler(rg_http_req_t *r);
/* a session of the API's own (a chat completion, a task without a
 * queue) started and ended */
rg_uint_t rg_http_tasks_running(rg_http_t *h);

/* rg_http_events.c */
void rg_http_events_init(rg_http_t *h);
void rg_http_events_handler(rg_http_req_t *r, const char *id);
/* a drain ends the streams */
void rg_http_events_drain(rg_http_t *h);
/* rg_http_approval.c */
void rg_http_approval_handler(rg_http_req_t *r, const char *id,
    rg_uint_t approve);

/* rg_http_openai.c */
void rg_http_chat_handler(rg_http_req_t *r);
void rg_http_models_handler(rg_http_req_t *r);

/* rg_http_health.c */
void rg_http_healthz_handler(rg_http_req_t *r);
void rg_http_readyz_handler(rg_http_req_t *r);
void rg_http_metrics_handler(rg_http_req_t *r);

#endif /* RG_HTTP_H */
