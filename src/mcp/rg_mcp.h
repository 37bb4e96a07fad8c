/* rg_mcp.h: the mcp part in an engine. Each `mcp` block is a server
 * (rg_mcp_server.c: JSON-RPC, the protocol's lifecycle, tools/list and
 * tools/call) over a transport: a child's pipes (rg_mcp_stdio.c) or
 * Streamable HTTP through the engine's curl multi (rg_mcp_http.c). Its
 * tools go to the tools part as a provider's list (rg_mcp_tool.c), so
 * that agents call them like any other tool. */

#ifndef RG_MCP_H
#define RG_MCP_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_event_curl.h>
#include <rg_tools.h>
#include <rg_mcp_conf.h>
#include <jansson.h>
#include <event2/event.h>
#include <event2/event_struct.h>


/* the revisions the client speaks: RG_MCP_STATELESS, RG_MCP_VERSIONS_TEXT
 * (rg_mcp_conf.h, which -V prints) */

#define RG_MCP_BUCKETS          64    /* requests in flight, by id */
#define RG_MCP_MAX_TOOLS        1024  /* a bigger list is cut there */
#define RG_MCP_MAX_PAGES        64    /* of tools/list */

typedef struct rg_mcp_ctx_s        rg_mcp_ctx_t;
typedef struct rg_mcp_server_s     rg_mcp_server_t;
typedef struct rg_mcp_req_s        rg_mcp_req_t;
typedef struct rg_mcp_transport_s  rg_mcp_transport_t;

/* how a request ended: a result or a JSON-RPC error (the server's), or
 * a failure (ours: it could not be sent, its carrier broke, an HTTP
 * status); status is the HTTP status when there was one */
typedef void (*rg_mcp_req_pt)(rg_mcp_req_t *r, json_t *result,
    json_t *error, const char *failure);


struct rg_mcp_req_s {
    int64_t             id;
    rg_mcp_server_t    *server;
    rg_mcp_req_t       *next;         /* in its bucket, or the queue */
    const char         *method;
    const char         *name;         /* tools/call: the server's name */
    json_t             *params;       /* while it waits to be sent */
    rg_mcp_req_pt       handler;
    void               *data;
    void               *carrier;      /* the transport's (an HTTP POST) */
    long                status;       /* of a failure, when HTTP said */
    unsigned            sent:1;
    unsigned            queued:1;
};


typedef enum {
    RG_MCP_DOWN = 0,                  /* not started, or waiting again */
    RG_MCP_STARTING,                  /* its handshake runs */
    RG_MCP_READY,
    RG_MCP_FAILED,                    /* never started again */
    RG_MCP_STOPPING
} rg_mcp_state_e;


/* A transport carries JSON-RPC messages to and from one server. It
 * tells the server what happens through rg_mcp_server_opened(),
 * _receive(), _lost() and rg_mcp_req_fail(), never from inside a call
 * the server made into it. */
struct rg_mcp_transport_s {
    const char         *name;

    /* start (spawn the child); rg_mcp_server_opened() follows, from the
     * loop; RG_ERROR with s->why set when it cannot */
    rg_int_t          (*open)(rg_mcp_server_t *s);

    /* one message; r is the request it is, NULL for a notification or
     * an answer to the server's request. RG_ERROR with s->why set when
     * it cannot be sent */
    rg_int_t          (*send)(rg_mcp_server_t *s, rg_mcp_req_t *r,
                              const char *method, const char *text,
                              size_t len);

    /* r was answered, or is no longer waited for (abandon: stop what
     * carries it) */
    void              (*detach)(rg_mcp_server_t *s, rg_mcp_req_t *r,
                                rg_uint_t abandon);

    /* the handshake is done (HTTP opens its stream for the server's
     * own messages); settled() says whether that stream is open, or
     * known not to be, else rg_mcp_server_settled() follows */
    void              (*ready)(rg_mcp_server_t *s);
    rg_uint_t         (*settled)(rg_mcp_server_t *s);

    /* at the engine's end: begin to stop gently; stopped() says when
     * it is; close() ends everything at once */
    void              (*stop)(rg_mcp_server_t *s);
    rg_uint_t         (*stopped)(rg_mcp_server_t *s);
    void              (*terminate)(rg_mcp_server_t *s);
    void              (*close)(rg_mcp_server_t *s);

    /* close(), and what it keeps across restarts freed (not s->tpd) */
    void              (*free)(rg_mcp_server_t *s);
};


struct rg_mcp_server_s {
    rg_mcp_conf_t      *conf;
    rg_mcp_ctx_t       *ctx;
    rg_log_t           *log;
    const rg_mcp_transport_t *tp;
    void               *tpd;          /* the transport's state */

    rg_mcp_state_e      state;
    char                version[16];  /* negotiated */
    int64_t             next_id;
    rg_mcp_req_t       *buckets[RG_MCP_BUCKETS];
    rg_uint_t           pending;
    rg_mcp_req_t       *queue;        /* calls waiting for READY */
    rg_mcp_req_t      **queue_tail;

    rg_tool_list_t     *list;         /* what it offers, published */
    json_t             *paging;       /* tools/list pages so far */
    rg_uint_t           pages;
    rg_uint_t           relists;      /* lists read again in a row */

    struct event        start_ev;     /* the handshake's deadline */
    struct event        restart_ev;
    struct event        listen_ev;    /* subscriptions/listen again */
    struct event        settle_ev;    /* the wait for its stream */
    rg_msec_t           listen_wait;
    rg_msec_t           backoff;
    rg_msec_t           ready_at;
    rg_msec_t           restart_at;
    rg_uint_t           skipped;      /* lines that were not JSON-RPC */
    char                why[256];     /* why it is down, or failed */

    unsigned            modern:1;     /* 2026-07-28 */
    unsigned            listen_cap:1; /* it tells when its tools change */
    unsigned            settling:1;   /* listed; its stream not yet open */
    unsigned            listen_set:1;
    unsigned            listing:1;
    unsigned            relist:1;
    unsigned            first:1;      /* its first start still runs */
    unsigned            start_set:1;
    unsigned            restart_set:1;
};


struct rg_mcp_ctx_s {
    rg_engine_t        *engine;
    struct event_base  *base;
    rg_log_t           *log;
    rg_curl_t          *curl;
    rg_tools_ctx_t     *tools;
    rg_mcp_server_t    *servers;
    rg_uint_t           nservers;
    rg_uint_t           starting;     /* first starts not yet ended */
};


#define rg_mcp_ctx(e)                                                        \
    ((rg_mcp_ctx_t *) rg_engine_ctx(e, &rg_mcp_part))

extern const rg_mcp_transport_t  rg_mcp_stdio_transport;
extern const rg_mcp_transport_t  rg_mcp_http_transport;

/* the server (rg_mcp_server.c) */
void rg_mcp_server_init(rg_mcp_server_t *s, rg_mcp_ctx_t *ctx,
    rg_mcp_conf_t *conf);
void rg_mcp_server_start(rg_mcp_server_t *s);
void rg_mcp_server_stop(rg_mcp_server_t *s);
void rg_mcp_server_free(rg_mcp_server_t *s);
const char *rg_mcp_state_name(rg_mcp_state_e state);

/* what transports tell their server */
void rg_mcp_server_opened(rg_mcp_server_t *s);
void rg_mcp_server_receive(rg_mcp_server_t *s, const char *text,
    size_t len);
void rg_mcp_server_lost(rg_mcp_server_t *s, const char *why);
void rg_mcp_server_settled(rg_mcp_server_t *s);
void rg_mcp_req_fail(rg_mcp_req_t *r, long status, const char *why);

/* requests: sent now when READY (or force), queued while STARTING */
rg_mcp_req_t *rg_mcp_req_create(rg_mcp_server_t *s, const char *method,
    json_t *params, rg_mcp_req_pt handler, void *data);
rg_int_t rg_mcp_req_send(rg_mcp_req_t *r, rg_uint_t force);
/* a request that is neither sent nor queued (or ended) */
void rg_mcp_req_free(rg_mcp_req_t *r);
/* no longer waited for: forgotten, a late answer dropped; cancelled
 * tells the server (notifications/cancelled) */
void rg_mcp_req_drop(rg_mcp_req_t *r, const char *cancelled);

/* the engine's MCP tool named name, or NULL (for `reagent mcp`) */
rg_tool_entry_t *rg_mcp_find_tool(rg_mcp_ctx_t *ctx, const char *name);

#endif /* RG_MCP_H */
