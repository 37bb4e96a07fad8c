/* rg_redis.c: the asynchronous Redis client (see rg_redis.h). hiredis
 * 0.14 does the protocol and the pipelining; this client adds what it
 * lacks: names resolved with evdns before connecting (hiredis would block
 * in getaddrinfo), connect and command deadlines on reactor timers, a
 * reply that arrives after its deadline ignored, reconnection with
 * exponential backoff and jitter, a bounded queue for commands issued
 * while no connection is up, EVALSHA with EVAL on NOSCRIPT, and one log
 * line per outage rather than one per command. The connections belong to
 * nodes: one, or the masters of a Redis Cluster, whose slot map
 * rg_redis_cluster.c keeps.
 *
 * This file owns the client and its nodes: made, seeded, destroyed, what
 * it says of itself, the server addresses it reads. A command is
 * rg_redis_cmd.c's, a connection rg_redis_conn.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_redis.h>
#include <rg_redis_int.h>
#include <hiredis/adapters/libevent.h>


void
rg_redis_set_error(rg_redis_t *r, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    vsnprintf(r->last_error, sizeof(r->last_error), fmt, args);
    va_end(args);
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
