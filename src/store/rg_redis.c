/* rg_redis.c: the asynchronous Redis client (see rg_redis.h). hiredis
 * 0.14 does the protocol and the pipelining; this file adds what it lacks:
 * names resolved with evdns before connecting (hiredis would block in
 * getaddrinfo), connect and command deadlines on reactor timers, a reply
 * that arrives after its deadline ignored, reconnection with exponential
 * backoff and jitter, a bounded queue for commands issued while no
 * connection is up, EVALSHA with EVAL on NOSCRIPT, and one log line per
 * outage rather than one per command. The connections belong to nodes:
 * one, or the masters of a Redis Cluster, whose slot map
 * rg_redis_cluster.c keeps.
 *
 * A command lives in one of three places: a connection's wait queue,
 * hiredis (sent, its reply callback still to come: hiredis calls it with
 * NULL when the context dies), or nowhere but its own timer (an error
 * posted to the next loop turn). It is freed only once none of them holds
 * it. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_redis.h>
#include <rg_redis_int.h>
#include <rg_metrics.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/sds.h>
#include <openssl/sha.h>
#include <glib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <netdb.h>


static void rg_redis_connect(rg_redis_conn_t *c);
static rg_int_t rg_redis_send(rg_redis_conn_t *c, rg_redis_cmd_t *cmd);
static void rg_redis_lost(rg_redis_conn_t *c, const char *why);
static void rg_redis_wake_siblings(rg_redis_conn_t *c);
static void rg_redis_flush(rg_redis_conn_t *c);
static void rg_redis_reply_handler(redisAsyncContext *ac, void *reply_,
    void *privdata);


static void
rg_redis_cmd_free(rg_redis_cmd_t *cmd)
{
    rg_redis_t  *r;

    r = cmd->r;

    if (cmd->prev) {
        cmd->prev->next = cmd->next;
    } else {
        r->all = cmd->next;
    }

    if (cmd->next) {
        cmd->next->prev = cmd->prev;
    }

    evtimer_del(&cmd->timer);
    free(cmd);
}


/* out of its connection's wait queue, wherever it is in it: a queue
 * behind a full write buffer can hold thousands */
static void
rg_redis_unqueue(rg_redis_cmd_t *cmd)
{
    rg_redis_conn_t  *c;

    c = cmd->conn;

    *cmd->qpprev = cmd->qnext;
    if (cmd->qnext) {
        cmd->qnext->qpprev = cmd->qpprev;
    } else {
        c->qtail = cmd->qpprev;
    }

    cmd->qnext = NULL;
    cmd->qpprev = NULL;
    cmd->queued = 0;
    c->node->r->stats.queued--;
}


/* the one callback of a command; frees it unless hiredis still holds it */
void
rg_redis_finish(rg_redis_cmd_t *cmd, redisReply *reply, const char *err)
{
    if (!cmd->answered) {
        cmd->answered = 1;
        evtimer_del(&cmd->timer);
        rg_metrics_redis_command(rg_monotonic_usec() - cmd->created);

        if (err && cmd->r->down_since) {
            cmd->r->down_failed++;
        }

        if (cmd->cb) {
            cmd->cb(cmd->data, reply, err);
        }
    }

    if (!cmd->in_hiredis && !cmd->queued) {
        rg_redis_cmd_free(cmd);
    }
}


static void
rg_redis_set_error(rg_redis_t *r, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    vsnprintf(r->last_error, sizeof(r->last_error), fmt, args);
    va_end(args);
}


static void
rg_redis_post(rg_redis_cmd_t *cmd, const char *err)
{
    struct timeval  tv = { 0, 0 };

    cmd->err = err;
    evtimer_add(&cmd->timer, &tv);
}


static size_t
rg_redis_digits(size_t v)
{
    size_t  n;

    for (n = 1; v >= 10; v /= 10) {
        n++;
    }

    return n;
}


/* "$len\r\n": the RESP header of a bulk string of len bytes */
static char *
rg_redis_bulk_head(char *p, size_t len)
{
    *p++ = '$';
    p += rg_sprint_int(p, (int64_t) len);
    *p++ = '\r';
    *p++ = '\n';

    return p;
}


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
static rg_int_t
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


/* a command of a tag always takes the same connection of its node, so
 * that one session's commands keep their order; others take the next
 * ready one */
rg_redis_conn_t *
rg_redis_node_pick(rg_redis_node_t *n, const rg_redis_cmd_t *cmd)
{
    rg_uint_t         i;
    rg_redis_conn_t  *c;

    if (cmd->has_hint) {
        return &n->conns[cmd->hint % n->nconns];
    }

    for (i = 0; i < n->nconns; i++) {
        c = &n->conns[(n->next_conn + i) % n->nconns];
        if (c->state == RG_REDIS_READY) {
            n->next_conn = (n->next_conn + i + 1) % n->nconns;
            return c;
        }
    }

    c = &n->conns[n->next_conn];
    n->next_conn = (n->next_conn + 1) % n->nconns;

    return c;
}


static rg_redis_node_t *
rg_redis_node_of(rg_redis_t *r, const rg_redis_cmd_t *cmd)
{
    rg_uint_t         i;
    rg_redis_node_t  *n;

    if (r->slots && cmd->slot >= 0) {
        n = rg_redis_cluster_node(r, cmd->slot);
        if (n) {
            return n;
        }
    }

    /* no slot, or one not known yet: a node that is up (a cluster
     * redirects it), else the first */
    for (i = 0; r->slots && i < r->nnodes; i++) {
        if (r->nodes[i]->ready) {
            return r->nodes[i];
        }
    }

    return r->nodes[0];
}


/* hiredis keeps what it has not written yet in one buffer, and after each
 * partial write moves the rest to its start: thousands of sessions
 * checkpointing in one turn of the loop made it megabytes, moved again
 * for every write the socket took. Past this much, commands wait in the
 * connection's queue (in order) until replies come back. */
#define RG_REDIS_OBUF_MAX  (256 * 1024)

static int
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

        c->qhead = cmd->qnext;
        if (c->qhead) {
            c->qhead->qpprev = &c->qhead;
        } else {
            c->qtail = &c->qhead;
        }

        cmd->qnext = NULL;
        cmd->qpprev = NULL;
        cmd->queued = 0;
        c->node->r->stats.queued--;
    }
}


/* out now on c, or into its queue: also when its context is closing,
 * so that a command sent from a callback is never answered inside the
 * call that sent it */
void
rg_redis_route(rg_redis_t *r, rg_redis_cmd_t *cmd, rg_redis_conn_t *c)
{
    if (c->state == RG_REDIS_READY && c->qhead == NULL
        && !rg_redis_obuf_full(c) && rg_redis_send(c, cmd) == RG_OK)
    {
        return;
    }

    /* max_queue bounds what waits for Redis to come back, not what waits
     * for its turn on a connection that is up */
    if (r->stats.queued >= r->conf.max_queue
        && !(c->state == RG_REDIS_READY && c->ac))
    {
        r->stats.rejected++;
        rg_metrics_redis_error(RG_METRICS_REDIS_REJECTED);
        rg_redis_post(cmd, "the store queue is full: Redis is not reachable "
                      "fast enough");
        return;
    }

    cmd->conn = c;
    cmd->queued = 1;
    cmd->qnext = NULL;
    cmd->qpprev = c->qtail;
    *c->qtail = cmd;
    c->qtail = &cmd->qnext;
    r->stats.queued++;
}


static void
rg_redis_cmd_timeout(evutil_socket_t fd, short what, void *arg)
{
    char                buf[1024];
    rg_redis_cmd_t     *cmd;
    rg_redis_conn_t    *c;
    rg_redis_t         *r;
    redisAsyncContext  *ac;

    cmd = arg;
    r = cmd->r;

    if (cmd->err) {
        rg_redis_finish(cmd, NULL, cmd->err);
        return;
    }

    r->stats.timeouts++;
    rg_metrics_redis_error(RG_METRICS_REDIS_TIMEOUT);
    c = cmd->conn;

    if (cmd->queued) {
        rg_redis_unqueue(cmd);

        if (c->state == RG_REDIS_READY && c->ac) {
            /* behind a full write buffer: Redis reads too slowly */
            snprintf(buf, sizeof(buf), "timed out after %llums waiting to "
                     "be sent to %s (Redis is reading more slowly than "
                     "commands come)", (unsigned long long) cmd->timeout,
                     c->node->addr);
        } else {
            snprintf(buf, sizeof(buf), "timed out after %llums waiting for "
                     "a connection to %s%s%s",
                     (unsigned long long) cmd->timeout, c->node->addr,
                     r->last_error[0] ? ": " : "", r->last_error);
        }

        rg_redis_finish(cmd, NULL, buf);
        return;
    }

    snprintf(buf, sizeof(buf), "timed out after %llums: no reply from %s",
             (unsigned long long) cmd->timeout,
             c ? c->node->addr : r->addr);
    rg_redis_finish(cmd, NULL, buf);

    /* nothing read since it was sent: the server or the path is stuck, so
     * the connection goes and its other commands fail now, not one by one
     * at their own deadlines */
    if (c && c->ac && c->state == RG_REDIS_READY
        && c->last_read <= cmd->sent_at)
    {
        ac = c->ac;
        snprintf(buf, sizeof(buf), "no reply for %llums",
                 (unsigned long long) cmd->timeout);
        ac->data = NULL;
        rg_redis_lost(c, buf);
        redisAsyncFree(ac);       /* its other commands fail: lost */
    }
}


/* the command in RESP, formatted here once beside it in one allocation and
 * handed to hiredis as it is (its own formatting, sdscatfmt per argument,
 * cost more than the rest of a checkpoint); head arguments first: a
 * script's EVALSHA, sha and key count */
static rg_redis_cmd_t *
rg_redis_cmd_create(rg_redis_t *r, rg_msec_t timeout, rg_redis_reply_pt cb,
    void *data, int nhead, const char **head, const size_t *hlens, int argc,
    const char **argv, const size_t *lens)
{
    int              i;
    char            *p;
    size_t           size;
    rg_redis_cmd_t  *cmd;

    size = 1 + rg_redis_digits(nhead + argc) + 2;
    for (i = 0; i < nhead; i++) {
        size += 1 + rg_redis_digits(hlens[i]) + 2 + hlens[i] + 2;
    }
    for (i = 0; i < argc; i++) {
        size += 1 + rg_redis_digits(lens[i]) + 2 + lens[i] + 2;
    }

    /* NUL-ended, as hiredis reads its first argument with strchr */
    cmd = malloc(sizeof(rg_redis_cmd_t) + size + 1);
    if (cmd == NULL) {
        return NULL;
    }

    memset(cmd, 0, sizeof(rg_redis_cmd_t));
    cmd->r = r;
    cmd->cb = cb;
    cmd->data = data;
    cmd->slot = -1;
    cmd->created = rg_monotonic_usec();
    cmd->timeout = timeout ? timeout : r->conf.command_timeout;
    cmd->argc = nhead + argc;
    cmd->resp = (char *) (cmd + 1);

    p = cmd->resp;
    *p++ = '*';
    p += rg_sprint_int(p, cmd->argc);
    *p++ = '\r';
    *p++ = '\n';

    for (i = 0; i < nhead + argc; i++) {
        if (i == 2) {
            cmd->rest = p - cmd->resp;
        }

        if (i < nhead) {
            p = rg_redis_bulk_head(p, hlens[i]);
            memcpy(p, head[i], hlens[i]);
            p += hlens[i];

        } else {
            p = rg_redis_bulk_head(p, lens[i - nhead]);
            memcpy(p, argv[i - nhead], lens[i - nhead]);
            p += lens[i - nhead];
        }

        *p++ = '\r';
        *p++ = '\n';
    }

    *p = '\0';
    cmd->resp_len = p - cmd->resp;

    evtimer_assign(&cmd->timer, r->base, rg_redis_cmd_timeout, cmd);

    cmd->next = r->all;
    if (r->all) {
        r->all->prev = cmd;
    }
    r->all = cmd;

    return cmd;
}


static void
rg_redis_submit(rg_redis_t *r, rg_redis_cmd_t *cmd, const rg_str_t *tag)
{
    GBytes          *b;
    struct timeval   tv;

    if (r->destroying) {
        r->stats.rejected++;
        rg_metrics_redis_error(RG_METRICS_REDIS_REJECTED);
        rg_redis_post(cmd, "the store is shutting down");
        return;
    }

    /* most commands share command_timeout: libevent keeps those in one
     * queue, in order, not in its heap */
    if (cmd->timeout == r->conf.command_timeout && r->cmd_tv) {
        evtimer_add(&cmd->timer, r->cmd_tv);

    } else {
        tv.tv_sec = cmd->timeout / 1000;
        tv.tv_usec = (cmd->timeout % 1000) * 1000;
        evtimer_add(&cmd->timer, &tv);
    }

    if (tag && tag->len) {
        b = g_bytes_new_static(tag->data, tag->len);
        cmd->hint = g_bytes_hash(b);
        cmd->has_hint = 1;
        g_bytes_unref(b);

        if (r->slots) {
            cmd->slot = rg_redis_cluster_slot(tag->data, tag->len);
        }
    }

    rg_redis_route(r, cmd, rg_redis_node_pick(rg_redis_node_of(r, cmd),
                                              cmd));
}


rg_redis_cmd_t *
rg_redis_command(rg_redis_t *r, const rg_str_t *tag, rg_msec_t timeout,
    rg_redis_reply_pt cb, void *data, int argc, const char **argv,
    const size_t *lens)
{
    rg_redis_cmd_t  *cmd;

    cmd = rg_redis_cmd_create(r, timeout, cb, data, 0, NULL, NULL, argc,
                              argv, lens);
    if (cmd == NULL) {
        return NULL;
    }

    rg_redis_submit(r, cmd, tag);

    return cmd;
}


rg_redis_cmd_t *
rg_redis_eval(rg_redis_t *r, const rg_str_t *tag, rg_redis_script_t *script,
    rg_redis_reply_pt cb, void *data, int nkeys, int argc,
    const char **argv, const size_t *lens)
{
    char             num[RG_INT64_LEN];
    size_t           hl[3];
    const char      *h[3];
    rg_redis_cmd_t  *cmd;

    h[0] = "EVALSHA";
    hl[0] = 7;
    h[1] = script->sha;
    hl[1] = 40;
    h[2] = num;
    hl[2] = rg_sprint_int(num, nkeys);

    cmd = rg_redis_cmd_create(r, 0, cb, data, 3, h, hl, argc, argv, lens);
    if (cmd == NULL) {
        return NULL;
    }

    cmd->script = script;
    rg_redis_submit(r, cmd, tag);

    return cmd;
}


void
rg_redis_cancel(rg_redis_cmd_t *cmd)
{
    if (cmd->answered) {
        return;
    }

    cmd->answered = 1;
    evtimer_del(&cmd->timer);

    if (cmd->queued) {
        rg_redis_unqueue(cmd);
    }

    if (!cmd->in_hiredis) {
        rg_redis_cmd_free(cmd);
    }
}


rg_int_t
rg_redis_script_init(rg_redis_script_t *script)
{
    int            i;
    unsigned char  md[SHA_DIGEST_LENGTH];

    if (SHA1((const unsigned char *) script->source, strlen(script->source),
             md) == NULL)
    {
        return RG_ERROR;
    }

    for (i = 0; i < SHA_DIGEST_LENGTH; i++) {
        snprintf(script->sha + 2 * i, 3, "%02x", md[i]);
    }

    return RG_OK;
}


/* connections */

static void
rg_redis_backoff_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_redis_connect(arg);
}


static void
rg_redis_lost(rg_redis_conn_t *c, const char *why)
{
    rg_msec_t          d;
    rg_redis_t        *r;
    rg_redis_node_t   *n;
    struct timeval     tv;

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

    tv.tv_sec = d / 1000;
    tv.tv_usec = (d % 1000) * 1000;
    evtimer_assign(&c->timer, r->base, rg_redis_backoff_handler, c);
    evtimer_add(&c->timer, &tv);
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
    struct timeval      tv;
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

    tv.tv_sec = r->conf.connect_timeout / 1000;
    tv.tv_usec = (r->conf.connect_timeout % 1000) * 1000;
    evtimer_assign(&c->timer, r->base, rg_redis_connect_timeout, c);
    evtimer_add(&c->timer, &tv);
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


static void
rg_redis_connect(rg_redis_conn_t *c)
{
    rg_redis_t                *r;
    rg_redis_node_t           *n;
    struct timeval             tv;
    struct in6_addr            a6;
    struct evutil_addrinfo     hints;

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

    tv.tv_sec = r->conf.connect_timeout / 1000;
    tv.tv_usec = (r->conf.connect_timeout % 1000) * 1000;
    evtimer_assign(&c->timer, r->base, rg_redis_connect_timeout, c);
    evtimer_add(&c->timer, &tv);

    /* may answer at once (a cached or local name): c->dns then stays NULL
     * and the state has moved on */
    c->dns = evdns_getaddrinfo(r->dns, n->host, NULL, &hints,
                               rg_redis_resolved, c);
}


/* a node and its connections, connecting now */
rg_redis_node_t *
rg_redis_node_add(rg_redis_t *r, const char *host, int port, const char *path)
{
    rg_uint_t         i;
    rg_redis_node_t  *n;

    if (r->nnodes == RG_REDIS_MAX_NODES) {
        return NULL;
    }

    n = calloc(1, sizeof(rg_redis_node_t));
    if (n == NULL) {
        return NULL;
    }

    n->r = r;
    n->index = r->nnodes;
    n->port = port;
    n->nconns = r->conf.connections;
    n->host = host ? strdup(host) : NULL;
    n->path = path ? strdup(path) : NULL;
    n->conns = calloc(n->nconns, sizeof(rg_redis_conn_t));

    if (n->conns == NULL || (host && n->host == NULL)
        || (path && n->path == NULL))
    {
        free(n->host);
        free(n->path);
        free(n->conns);
        free(n);
        return NULL;
    }

    if (n->host) {
        snprintf(n->addr, sizeof(n->addr), strchr(n->host, ':')
                 ? "[%s]:%d" : "%s:%d", n->host, n->port);
    } else {
        snprintf(n->addr, sizeof(n->addr), "unix:%s", n->path ? n->path
                                                              : "");
    }

    for (i = 0; i < n->nconns; i++) {
        n->conns[i].node = n;
        n->conns[i].qtail = &n->conns[i].qhead;
        evtimer_assign(&n->conns[i].timer, r->base, rg_redis_backoff_handler,
                       &n->conns[i]);
    }

    r->nodes[r->nnodes++] = n;

    for (i = 0; i < n->nconns; i++) {
        rg_redis_connect(&n->conns[i]);
    }

    return n;
}


rg_redis_t *
rg_redis_create(struct event_base *base, struct evdns_base *dns,
    const rg_redis_conf_t *conf, rg_log_t *log)
{
    rg_redis_t      *r;
    struct timeval   tv;

    r = calloc(1, sizeof(rg_redis_t));
    if (r == NULL) {
        return NULL;
    }

    r->base = base;
    r->dns = dns;
    r->log = log;
    r->conf = *conf;
    r->conf.host = NULL;
    r->conf.path = NULL;
    r->conf.password = NULL;

    if ((conf->host && (r->conf.host = strdup(conf->host)) == NULL)
        || (conf->path && (r->conf.path = strdup(conf->path)) == NULL)
        || (conf->password
            && (r->conf.password = strdup(conf->password)) == NULL))
    {
        rg_redis_conf_free(&r->conf);
        free(r);
        return NULL;
    }

    if (r->conf.connections == 0) {
        r->conf.connections = 1;
    }
    if (r->conf.connect_timeout == 0) {
        r->conf.connect_timeout = 1000;
    }
    if (r->conf.command_timeout == 0) {
        r->conf.command_timeout = 500;
    }
    if (r->conf.max_queue == 0) {
        r->conf.max_queue = 100000;
    }
    if (r->conf.backoff_base == 0) {
        r->conf.backoff_base = 100;
    }
    if (r->conf.backoff_max == 0) {
        r->conf.backoff_max = 5000;
    }

    if (r->conf.cluster) {
        r->slots = calloc(RG_REDIS_SLOTS, sizeof(uint16_t));
        if (r->slots == NULL) {
            rg_redis_conf_free(&r->conf);
            free(r);
            return NULL;
        }
    }

    r->down_since = rg_monotonic_msec();

    if (rg_redis_node_add(r, r->conf.host, r->conf.port, r->conf.path)
        == NULL)
    {
        free(r->slots);
        rg_redis_conf_free(&r->conf);
        free(r);
        return NULL;
    }

    snprintf(r->addr, sizeof(r->addr), "%s%s", r->nodes[0]->addr,
             r->slots ? " (cluster)" : "");

    tv.tv_sec = r->conf.command_timeout / 1000;
    tv.tv_usec = (r->conf.command_timeout % 1000) * 1000;
    r->cmd_tv = event_base_init_common_timeout(base, &tv);

    return r;
}


void
rg_redis_destroy(rg_redis_t *r)
{
    rg_uint_t           i, j;
    rg_redis_cmd_t     *cmd, *next;
    rg_redis_conn_t    *c;
    rg_redis_node_t    *n;
    redisAsyncContext  *ac;

    if (r == NULL) {
        return;
    }

    r->destroying = 1;

    if (r->refresh_armed) {
        evtimer_del(&r->refresh_ev);
    }

    for (i = 0; i < r->nnodes; i++) {
        n = r->nodes[i];

        for (j = 0; j < n->nconns; j++) {
            c = &n->conns[j];
            evtimer_del(&c->timer);

            if (c->dns) {
                evdns_getaddrinfo_cancel(c->dns);
                c->dns = NULL;
            }

            ac = c->ac;
            if (ac) {
                c->ac = NULL;
                ac->data = NULL;
                redisAsyncFree(ac);   /* sent commands are called back now */
            }
        }
    }

    /* what is left was queued or posted; never called from a callback of
     * this client, so hiredis holds none of it any more */
    for (cmd = r->all; cmd; cmd = next) {
        next = cmd->next;
        assert(!cmd->in_hiredis);
        if (cmd->queued) {
            rg_redis_unqueue(cmd);
        }
        rg_redis_finish(cmd, NULL, "the store is shutting down");
    }

    for (i = 0; i < r->nnodes; i++) {
        free(r->nodes[i]->host);
        free(r->nodes[i]->path);
        free(r->nodes[i]->conns);
        free(r->nodes[i]);
    }

    free(r->slots);
    rg_redis_conf_free(&r->conf);
    free(r);
}


rg_int_t
rg_redis_add_seed(rg_redis_t *r, const char *host, int port)
{
    rg_uint_t  i;

    if (r->slots == NULL) {
        return RG_DECLINED;          /* one server without a cluster */
    }

    for (i = 0; i < r->nnodes; i++) {
        if (r->nodes[i]->host && r->nodes[i]->port == port
            && strcmp(r->nodes[i]->host, host) == 0)
        {
            return RG_OK;
        }
    }

    return rg_redis_node_add(r, host, port, NULL) ? RG_OK : RG_ERROR;
}


rg_uint_t
rg_redis_connected(rg_redis_t *r)
{
    return r->ready > 0;
}


const char *
rg_redis_address(rg_redis_t *r)
{
    return r->addr;
}


const char *
rg_redis_last_error(rg_redis_t *r)
{
    return r->last_error;
}


const rg_redis_stats_t *
rg_redis_stats(rg_redis_t *r)
{
    return &r->stats;
}


const char *
rg_redis_parse_server(const char *s, size_t len, rg_redis_conf_t *conf)
{
    char        *end;
    const char  *colon, *host;
    size_t       hlen;
    long         port;

    if (len > 5 && memcmp(s, "unix:", 5) == 0) {
        conf->path = rg_strdup_len(s + 5, len - 5);
        conf->host = NULL;
        return conf->path ? NULL : "out of memory";
    }

    host = s;
    hlen = len;
    port = 6379;

    if (len && s[0] == '[') {
        colon = memchr(s, ']', len);
        if (colon == NULL) {
            return "has an unclosed \"[\"";
        }
        host = s + 1;
        hlen = colon - s - 1;
        colon = colon + 1 < s + len && colon[1] == ':' ? colon + 1 : NULL;

    } else {
        colon = memrchr(s, ':', len);
        if (colon && memchr(s, ':', colon - s)) {
            colon = NULL;                    /* a bare IPv6 address */
        } else if (colon) {
            hlen = colon - s;
        }
    }

    if (colon) {
        char  num[8];

        if ((size_t) (s + len - colon - 1) >= sizeof(num)) {
            return "has an invalid port";
        }
        memcpy(num, colon + 1, s + len - colon - 1);
        num[s + len - colon - 1] = '\0';
        port = strtol(num, &end, 10);
        if (*end || num[0] == '\0' || port < 1 || port > 65535) {
            return "has an invalid port";
        }
    }

    if (hlen == 0) {
        return "has no host";
    }

    conf->host = rg_strdup_len(host, hlen);
    conf->path = NULL;
    conf->port = (int) port;

    return conf->host ? NULL : "out of memory";
}


void
rg_redis_conf_free(rg_redis_conf_t *conf)
{
    free(conf->host);
    free(conf->path);

    if (conf->password) {
        explicit_bzero(conf->password, strlen(conf->password));
        free(conf->password);
    }

    conf->host = NULL;
    conf->path = NULL;
    conf->password = NULL;
}
