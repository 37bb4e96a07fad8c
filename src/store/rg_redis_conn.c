/* rg_redis_conn.c: a connection of the Redis client (rg_redis.c): the
 * name resolved with evdns, the connect and its handshake (AUTH, SELECT,
 * SCRIPT LOAD, PING) under a deadline, commands written and their replies
 * read (EVAL again on NOSCRIPT, a cluster's redirections), the write
 * buffer kept small, and a lost connection given back to its backoff. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_redis.h>
#include <rg_redis_int.h>
#include <rg_metrics.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/sds.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <netdb.h>


static void rg_redis_reply_handler(redisAsyncContext *ac, void *reply_,
    void *privdata);
static void rg_redis_wake_siblings(rg_redis_conn_t *c);
static void rg_redis_flush(rg_redis_conn_t *c);


/* hiredis keeps what it has not written yet in one buffer, and after each
 * partial write moves the rest to its start: thousands of sessions
 * checkpointing in one turn of the loop made it megabytes, moved again
 * for every write the socket took. Past this much, commands wait in the
 * connection's queue (in order) until replies come back. */
#define RG_REDIS_OBUF_MAX  (256 * 1024)


/* a script command again as EVAL with its source: the same arguments
 * after the sha */
static int
rg_redis_send_eval(redisAsyncContext *ac, rg_redis_cmd_t *cmd)
{
    int      rc;
    char    *buf, *p;
    size_t   slen, size;

    slen = strlen(cmd->script->source);
    size = 1 + RG_INT64_LEN + 12 + 1 + RG_INT64_LEN + 2 + slen + 2
           + (cmd->resp_len - cmd->rest) + 1;

    buf = malloc(size);
    if (buf == NULL) {
        return REDIS_ERR;
    }

    p = buf;
    *p++ = '*';
    p += rg_sprint_int(p, cmd->argc);
    memcpy(p, "\r\n$4\r\nEVAL\r\n", 12);
    p += 12;
    p = rg_redis_bulk_head(p, slen);
    memcpy(p, cmd->script->source, slen);
    p += slen;
    *p++ = '\r';
    *p++ = '\n';
    memcpy(p, cmd->resp + cmd->rest, cmd->resp_len - cmd->rest);
    p += cmd->resp_len - cmd->rest;
    *p = '\0';

    rc = redisAsyncFormattedCommand(ac, rg_redis_reply_handler, cmd, buf,
                                    p - buf);
    free(buf);

    return rc;
}


static void
rg_redis_reply(redisAsyncContext *ac, void *reply_, void *privdata)
{
    char              buf[1024];
    redisReply       *reply;
    rg_redis_cmd_t   *cmd;
    rg_redis_conn_t  *c;
    rg_redis_t       *r;

    reply = reply_;
    cmd = privdata;
    c = cmd->conn;
    r = cmd->r;

    cmd->in_hiredis = 0;
    c->inflight--;
    r->stats.inflight--;

    if (reply == NULL) {
        if (!cmd->answered) {
            r->stats.lost++;
            rg_metrics_redis_error(RG_METRICS_REDIS_CONNECTION);
            snprintf(buf, sizeof(buf), "connection to %s lost%s%s%s: "
                     "outcome unknown", c->node->addr, ac->err ? " (" : "",
                     ac->err ? ac->errstr : "", ac->err ? ")" : "");
            rg_redis_finish(cmd, NULL, r->destroying
                            ? "the store is shutting down" : buf);
        } else {
            rg_redis_finish(cmd, NULL, NULL);
        }

        return;
    }

    c->last_read = rg_monotonic_msec();
    r->stats.replies++;

    if (cmd->answered) {
        rg_redis_finish(cmd, NULL, NULL);    /* late: harmless */
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {

        /* a cluster that moved the slot: the command did not run there */
        if (r->slots && rg_redis_cluster_redirect(r, cmd, reply->str,
                                                  reply->len))
        {
            return;
        }

        if (cmd->script && !cmd->eval_sent && reply->len >= 8
            && memcmp(reply->str, "NOSCRIPT", 8) == 0)
        {
            /* the server lost its script cache: send the source once */
            r->stats.noscript++;
            cmd->eval_sent = 1;

            if (rg_redis_send_eval(ac, cmd) == REDIS_OK) {
                cmd->in_hiredis = 1;
                c->inflight++;
                r->stats.inflight++;
                return;
            }
        }

        r->stats.errors++;
        rg_metrics_redis_error(RG_METRICS_REDIS_REPLY);
        snprintf(buf, sizeof(buf), "%.*s", (int) rg_min(reply->len, 300),
                 reply->str);
        rg_redis_finish(cmd, NULL, buf);
        return;
    }

    rg_redis_finish(cmd, reply, NULL);
}


/* a reply came: hiredis has written what came before it, and what waited
 * for room in its buffer may follow (rg_redis_obuf_full) */
static void
rg_redis_reply_handler(redisAsyncContext *ac, void *reply, void *privdata)
{
    rg_redis_conn_t  *c;

    c = ((rg_redis_cmd_t *) privdata)->conn;

    rg_redis_reply(ac, reply, privdata);

    if (reply && c->qhead && c->ac == ac) {
        rg_redis_flush(c);
    }
}


/* RG_DECLINED: hiredis is closing the context (this runs in a callback
 * of its last moments) and did not take the command: it never left */
rg_int_t
rg_redis_send(rg_redis_conn_t *c, rg_redis_cmd_t *cmd)
{
    rg_redis_t  *r;

    r = c->node->r;
    cmd->conn = c;
    cmd->sent_at = rg_monotonic_msec();

    /* a slot being migrated: the target serves it after ASKING */
    if (cmd->asking) {
        redisAsyncCommand(c->ac, NULL, NULL, "ASKING");
        cmd->asking = 0;
    }

    if (redisAsyncFormattedCommand(c->ac, rg_redis_reply_handler, cmd,
                                   cmd->resp, cmd->resp_len) != REDIS_OK)
    {
        return RG_DECLINED;
    }

    cmd->in_hiredis = 1;
    c->inflight++;
    r->stats.inflight++;
    r->stats.commands++;

    return RG_OK;
}


int
rg_redis_obuf_full(rg_redis_conn_t *c)
{
    return c->ac && sdslen(c->ac->c.obuf) >= RG_REDIS_OBUF_MAX;
}


/* the connection is up, or took what it had: what waited for it goes
 * out, in order */
static void
rg_redis_flush(rg_redis_conn_t *c)
{
    rg_redis_cmd_t  *cmd;

    while (c->qhead && c->state == RG_REDIS_READY && !rg_redis_obuf_full(c))
    {
        cmd = c->qhead;

        if (rg_redis_send(c, cmd) != RG_OK) {
            break;                    /* it waits for the next context */
        }

        rg_redis_unqueue(cmd);
    }
}


void
rg_redis_backoff_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_redis_connect(arg);
}


void
rg_redis_lost(rg_redis_conn_t *c, const char *why)
{
    rg_msec_t         d;
    rg_redis_t       *r;
    rg_redis_node_t  *n;

    n = c->node;
    r = n->r;

    if (c->state == RG_REDIS_READY) {
        r->ready--;
        n->ready--;
    }

    c->state = RG_REDIS_DOWN;
    c->ac = NULL;
    c->failures++;
    evtimer_del(&c->timer);

    if (why) {
        rg_redis_set_error(r, "%s", why);
    }

    if (r->destroying) {
        return;
    }

    if (r->ready == 0 && r->down_since == 0) {
        r->down_since = rg_monotonic_msec();
        r->down_failed = 0;
        r->down_logged = 0;
    }

    if (r->ready == 0 && !r->down_logged) {
        r->down_logged = 1;
        rg_log_error(RG_LOG_WARN, r->log, 0, "redis %s %s: %s; retrying with "
                     "backoff", n->addr, r->was_up ? "lost" : "not reachable",
                     r->last_error);
    }

    /* a cluster node that went may have handed its slots to another */
    if (r->slots) {
        rg_redis_cluster_refresh(r);
    }

    /* exponential, capped, with jitter: half to all of the step */
    d = r->conf.backoff_base;
    for (rg_uint_t i = 1; i < c->failures && d < r->conf.backoff_max; i++) {
        d *= 2;
    }
    d = rg_min(d, r->conf.backoff_max);
    d = d / 2 + (rg_msec_t) (random() % (long) (d / 2 + 1));

    evtimer_assign(&c->timer, r->base, rg_redis_backoff_handler, c);
    rg_timer_add(&c->timer, d);
}


static void
rg_redis_connect_timeout(evutil_socket_t fd, short what, void *arg)
{
    char                buf[64];
    rg_redis_conn_t    *c;
    redisAsyncContext  *ac;

    c = arg;

    snprintf(buf, sizeof(buf), "connect timed out after %llums",
             (unsigned long long) c->node->r->conf.connect_timeout);

    if (c->state == RG_REDIS_RESOLVING && c->dns) {
        evdns_getaddrinfo_cancel(c->dns);   /* its callback clears c->dns */
        c->dns = NULL;
    }

    ac = c->ac;
    if (ac) {
        ac->data = NULL;
    }

    rg_redis_lost(c, buf);

    if (ac) {
        redisAsyncFree(ac);               /* not inside a hiredis callback */
    }
}


static void
rg_redis_ready_handler(redisAsyncContext *ac, void *reply_, void *privdata)
{
    rg_msec_t         down;
    redisReply       *reply;
    rg_redis_conn_t  *c;
    rg_redis_t       *r;

    reply = reply_;
    c = ac->data;

    if (reply == NULL || c == NULL || c->ac != ac) {
        return;                  /* the context went: handled there */
    }

    r = c->node->r;

    if (reply->type == REDIS_REPLY_ERROR) {
        /* AUTH, SELECT or SCRIPT LOAD refused; the reply never holds the
         * password */
        rg_redis_set_error(r, "%.*s", (int) rg_min(reply->len, 200),
                           reply->str);
        ac->data = NULL;
        rg_redis_lost(c, NULL);
        redisAsyncFree(ac);      /* deferred: we are in its callback */
        return;
    }

    if ((uintptr_t) privdata != 1) {
        return;                  /* the handshake: the PING follows */
    }

    evtimer_del(&c->timer);
    c->state = RG_REDIS_READY;
    c->failures = 0;
    c->last_read = rg_monotonic_msec();
    r->ready++;
    c->node->ready++;
    r->stats.connects++;

    if (r->down_since) {
        down = rg_monotonic_msec() - r->down_since;
        if (r->down_logged) {
            rg_log_error(RG_LOG_NOTICE, r->log, 0, "redis %s %s after "
                         "%llu.%01llus (%llu commands failed meanwhile)",
                         c->node->addr,
                         r->was_up ? "reachable again" : "reachable",
                         (unsigned long long) down / 1000,
                         (unsigned long long) (down % 1000) / 100,
                         (unsigned long long) r->down_failed);
        }
        r->down_since = 0;
    }

    r->was_up = 1;
    r->last_error[0] = '\0';

    rg_redis_wake_siblings(c);

    if (r->slots) {
        rg_redis_cluster_ready(r, c);
    }

    rg_redis_flush(c);

    if (r->ready == 1 && r->conf.on_up) {
        r->conf.on_up(r->conf.up_data);
    }
}


/* the node answers again: its other connections that wait out a backoff
 * connect now, rather than hold the commands queued on them (a session's
 * go to one connection, in order) until their timer */
static void
rg_redis_wake_siblings(rg_redis_conn_t *c)
{
    rg_uint_t         i;
    rg_redis_conn_t  *o;
    struct timeval    now = { 0, 0 };

    for (i = 0; i < c->node->nconns; i++) {
        o = &c->node->conns[i];

        if (o != c && o->state == RG_REDIS_DOWN
            && evtimer_pending(&o->timer, NULL))
        {
            evtimer_del(&o->timer);
            evtimer_add(&o->timer, &now);
        }
    }
}


static void
rg_redis_connect_handler(const redisAsyncContext *ac, int status)
{
    char              buf[256];
    rg_redis_conn_t  *c;

    c = ac->data;
    if (c == NULL || c->ac != ac) {
        return;
    }

    if (status != REDIS_OK) {
        /* hiredis frees the context when this returns: never free it here
         * (0.14 does not defer a free from inside the connect callback) */
        snprintf(buf, sizeof(buf), "%s", ac->errstr[0] ? ac->errstr
                                                        : "cannot connect");
        ((redisAsyncContext *) ac)->data = NULL;
        rg_redis_lost(c, buf);
    }
}


static void
rg_redis_disconnect_handler(const redisAsyncContext *ac, int status)
{
    char              buf[256];
    rg_redis_conn_t  *c;

    c = ac->data;
    if (c == NULL || c->ac != ac) {
        return;
    }

    snprintf(buf, sizeof(buf), "%s", ac->err && ac->errstr[0]
             ? ac->errstr : "connection closed by the server");
    ((redisAsyncContext *) ac)->data = NULL;
    rg_redis_lost(c, buf);
}


static void
rg_redis_open(rg_redis_conn_t *c, const char *ip)
{
    char                num[24];
    size_t              lens[3];
    rg_uint_t           i;
    const char         *argv[3];
    rg_redis_t         *r;
    rg_redis_node_t    *n;
    redisAsyncContext  *ac;

    n = c->node;
    r = n->r;

    ac = ip ? redisAsyncConnect(ip, n->port)
            : redisAsyncConnectUnix(n->path);

    if (ac == NULL) {
        rg_redis_lost(c, "out of memory");
        return;
    }

    if (ac->err) {
        rg_redis_set_error(r, "%s", ac->errstr);
        redisAsyncFree(ac);
        rg_redis_lost(c, NULL);
        return;
    }

    if (redisLibeventAttach(ac, r->base) != REDIS_OK) {
        redisAsyncFree(ac);
        rg_redis_lost(c, "cannot attach to the event loop");
        return;
    }

    ac->data = c;
    c->ac = ac;
    c->state = RG_REDIS_CONNECTING;

    redisAsyncSetConnectCallback(ac, rg_redis_connect_handler);
    redisAsyncSetDisconnectCallback(ac, rg_redis_disconnect_handler);

    /* the handshake is pipelined behind the connect; PING says ready */
    if (r->conf.password) {
        argv[0] = "AUTH";
        lens[0] = 4;
        argv[1] = r->conf.password;
        lens[1] = strlen(r->conf.password);
        redisAsyncCommandArgv(ac, rg_redis_ready_handler, NULL, 2, argv,
                              lens);
    }

    if (r->conf.database && r->slots == NULL) {
        snprintf(num, sizeof(num), "%ld", (long) r->conf.database);
        argv[0] = "SELECT";
        lens[0] = 6;
        argv[1] = num;
        lens[1] = strlen(num);
        redisAsyncCommandArgv(ac, rg_redis_ready_handler, NULL, 2, argv,
                              lens);
    }

    for (i = 0; r->conf.scripts && r->conf.scripts[i]; i++) {
        argv[0] = "SCRIPT";
        lens[0] = 6;
        argv[1] = "LOAD";
        lens[1] = 4;
        argv[2] = r->conf.scripts[i]->source;
        lens[2] = strlen(argv[2]);
        redisAsyncCommandArgv(ac, rg_redis_ready_handler, NULL, 3, argv,
                              lens);
    }

    redisAsyncCommand(ac, rg_redis_ready_handler, (void *) (uintptr_t) 1,
                      "PING");

    evtimer_assign(&c->timer, r->base, rg_redis_connect_timeout, c);
    rg_timer_add(&c->timer, r->conf.connect_timeout);
}


static void
rg_redis_resolved(int result, struct evutil_addrinfo *res, void *arg)
{
    char              ip[INET6_ADDRSTRLEN];
    void             *a;
    rg_redis_conn_t  *c;

    c = arg;

    if (result == EVUTIL_EAI_CANCEL) {
        return;                      /* c may be gone */
    }

    c->dns = NULL;

    if (result != 0 || res == NULL) {
        if (res) {
            evutil_freeaddrinfo(res);
        }
        rg_redis_set_error(c->node->r, "cannot resolve \"%s\": %s",
                           c->node->host, evutil_gai_strerror(result));
        evtimer_del(&c->timer);
        rg_redis_lost(c, NULL);
        return;
    }

    a = res->ai_family == AF_INET6
        ? (void *) &((struct sockaddr_in6 *) res->ai_addr)->sin6_addr
        : (void *) &((struct sockaddr_in *) res->ai_addr)->sin_addr;
    inet_ntop(res->ai_family, a, ip, sizeof(ip));
    evutil_freeaddrinfo(res);

    evtimer_del(&c->timer);
    rg_redis_open(c, ip);
}


void
rg_redis_connect(rg_redis_conn_t *c)
{
    rg_redis_t             *r;
    rg_redis_node_t        *n;
    struct in6_addr         a6;
    struct evutil_addrinfo  hints;

    n = c->node;
    r = n->r;

    if (n->host == NULL) {
        rg_redis_open(c, NULL);
        return;
    }

    if (inet_pton(AF_INET, n->host, &a6) == 1
        || inet_pton(AF_INET6, n->host, &a6) == 1
        || r->dns == NULL)
    {
        rg_redis_open(c, n->host);
        return;
    }

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;

    c->state = RG_REDIS_RESOLVING;

    evtimer_assign(&c->timer, r->base, rg_redis_connect_timeout, c);
    rg_timer_add(&c->timer, r->conf.connect_timeout);

    /* may answer at once (a cached or local name): c->dns then stays NULL
     * and the state has moved on */
    c->dns = evdns_getaddrinfo(r->dns, n->host, NULL, &hints,
                               rg_redis_resolved, c);
}
