/* rg_redis_cluster.c: the slot router of the Redis client, for a Redis
 * Cluster (hiredis has none). The slot map comes from CLUSTER SLOTS, read
 * from the seed when a connection first comes up and again, debounced,
 * whenever a node goes or a MOVED says the map changed; each command goes
 * to the node that serves its tag's slot. MOVED sends it again where the
 * slot now lives (and updates the map); ASK sends it once to the node
 * importing the slot, after ASKING. A redirected command never ran, so
 * sending it again is safe; a command is redirected at most
 * RG_REDIS_REDIRECTS times. Nodes found in the map get connections of
 * their own, like the seed's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_redis.h>
#include <rg_redis_int.h>


/* The key-to-slot function the Redis Cluster specification defines:
 * CRC16-XMODEM (polynomial 0x1021, initial value 0) modulo 16384. No
 * library on the supported systems offers it; the tests check it against
 * the server's own CLUSTER KEYSLOT. */
int
rg_redis_cluster_slot(const char *tag, size_t len)
{
    int       i;
    uint16_t  crc;

    crc = 0;

    while (len--) {
        crc ^= (uint16_t) ((unsigned char) *tag++ << 8);

        for (i = 0; i < 8; i++) {
            crc = (crc & 0x8000) ? (uint16_t) ((crc << 1) ^ 0x1021)
                                 : (uint16_t) (crc << 1);
        }
    }

    return crc & (RG_REDIS_SLOTS - 1);
}


rg_redis_node_t *
rg_redis_cluster_node(rg_redis_t *r, int slot)
{
    uint16_t  i;

    i = r->slots[slot];

    return i ? r->nodes[i - 1] : NULL;
}


static rg_redis_node_t *
rg_redis_cluster_find(rg_redis_t *r, const char *host, size_t hlen, int port)
{
    char              buf[256];
    rg_uint_t         i;
    rg_redis_node_t  *n;

    if (hlen == 0 || hlen >= sizeof(buf)) {
        return NULL;
    }

    memcpy(buf, host, hlen);
    buf[hlen] = '\0';

    for (i = 0; i < r->nnodes; i++) {
        n = r->nodes[i];
        if (n->host && n->port == port && strcmp(n->host, buf) == 0) {
            return n;
        }
    }

    rg_log_error(RG_LOG_INFO, r->log, 0, "redis cluster: node %s:%d",
                 buf, port);

    return rg_redis_node_add(r, buf, port, NULL);
}


static void
rg_redis_cluster_slots_handler(redisAsyncContext *ac, void *reply_,
    void *privdata)
{
    int                port;
    size_t             e, s, from, to, covered;
    redisReply        *reply, *range, *master;
    rg_redis_conn_t   *c;
    rg_redis_node_t   *n;
    rg_redis_t        *r;

    reply = reply_;
    r = privdata;

    if (r->destroying) {
        return;
    }

    r->refresh_pending = 0;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
        /* the next connection that comes up asks again */
        r->refresh_pending = 1;
        if (reply && reply->type == REDIS_REPLY_ERROR) {
            rg_log_error(RG_LOG_ERR, r->log, 0, "redis cluster: CLUSTER "
                         "SLOTS failed: %.*s (is the server a cluster "
                         "node?)", (int) rg_min(reply->len, 200),
                         reply->str);
        }
        return;
    }

    c = ac->data;
    covered = 0;

    for (e = 0; e < reply->elements; e++) {
        range = reply->element[e];

        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3
            || range->element[0]->type != REDIS_REPLY_INTEGER
            || range->element[1]->type != REDIS_REPLY_INTEGER
            || range->element[2]->type != REDIS_REPLY_ARRAY
            || range->element[2]->elements < 2)
        {
            continue;
        }

        from = (size_t) range->element[0]->integer;
        to = (size_t) range->element[1]->integer;
        master = range->element[2];

        if (from > to || to >= RG_REDIS_SLOTS
            || master->element[0]->type != REDIS_REPLY_STRING
            || master->element[1]->type != REDIS_REPLY_INTEGER)
        {
            continue;
        }

        port = (int) master->element[1]->integer;

        /* an empty address is the node that answered */
        if (master->element[0]->len == 0 && c && c->node->host) {
            n = rg_redis_cluster_find(r, c->node->host,
                                      strlen(c->node->host), port);
        } else {
            n = rg_redis_cluster_find(r, master->element[0]->str,
                                      master->element[0]->len, port);
        }

        if (n == NULL) {
            continue;
        }

        for (s = from; s <= to; s++) {
            r->slots[s] = (uint16_t) (n->index + 1);
        }

        covered += to - from + 1;
    }

    r->stats.refreshes++;
    r->refreshed = rg_monotonic_msec();

    rg_log_error(RG_LOG_INFO, r->log, 0, "redis cluster: slot map read, "
                 "%lu of %d slots served by %lu nodes",
                 (unsigned long) covered, RG_REDIS_SLOTS,
                 (unsigned long) r->nnodes);
}


static rg_uint_t
rg_redis_cluster_ask(rg_redis_t *r)
{
    rg_uint_t          i, j;
    rg_redis_conn_t   *c;
    rg_redis_node_t   *n;

    for (i = 0; i < r->nnodes; i++) {
        n = r->nodes[i];

        for (j = 0; j < n->nconns; j++) {
            c = &n->conns[j];

            if (c->state == RG_REDIS_READY && c->ac
                && redisAsyncCommand(c->ac, rg_redis_cluster_slots_handler,
                                     r, "CLUSTER SLOTS") == REDIS_OK)
            {
                return 1;
            }
        }
    }

    return 0;
}


static void
rg_redis_cluster_refresh_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_redis_t  *r;

    r = arg;
    r->refresh_armed = 0;

    if (!rg_redis_cluster_ask(r)) {
        r->refresh_pending = 1;     /* when a connection comes up */
    }
}


void
rg_redis_cluster_refresh(rg_redis_t *r)
{
    struct timeval  tv = { 0, 100 * 1000 };

    if (r->refresh_armed || r->destroying) {
        return;
    }

    /* many MOVED in a row read the map once */
    evtimer_assign(&r->refresh_ev, r->base, rg_redis_cluster_refresh_handler,
                   r);
    evtimer_add(&r->refresh_ev, &tv);
    r->refresh_armed = 1;
}


void
rg_redis_cluster_ready(rg_redis_t *r, rg_redis_conn_t *c)
{
    if (r->refreshed == 0 || r->refresh_pending) {
        r->refresh_pending = 0;
        if (redisAsyncCommand(c->ac, rg_redis_cluster_slots_handler, r,
                              "CLUSTER SLOTS") != REDIS_OK)
        {
            r->refresh_pending = 1;
        }
    }
}


rg_uint_t
rg_redis_cluster_redirect(rg_redis_t *r, rg_redis_cmd_t *cmd,
    const char *err, size_t len)
{
    int               ask, slot, port;
    char             *end;
    const char       *p, *addr, *colon;
    rg_redis_node_t  *n;

    if (len > 5 && memcmp(err, "MOVED ", 6) == 0) {
        ask = 0;
        p = err + 6;
    } else if (len > 4 && memcmp(err, "ASK ", 4) == 0) {
        ask = 1;
        p = err + 4;
    } else {
        return 0;
    }

    if (cmd->redirects >= RG_REDIS_REDIRECTS) {
        return 0;                   /* the error reaches the caller */
    }

    slot = (int) strtol(p, &end, 10);
    if (end == p || *end != ' ' || slot < 0 || slot >= RG_REDIS_SLOTS) {
        return 0;
    }

    addr = end + 1;
    colon = memrchr(addr, ':', err + len - addr);
    if (colon == NULL) {
        return 0;
    }

    port = (int) strtol(colon + 1, &end, 10);
    if (port <= 0 || port > 65535) {
        return 0;
    }

    n = rg_redis_cluster_find(r, addr, colon - addr, port);
    if (n == NULL) {
        return 0;
    }

    cmd->redirects++;

    if (ask) {
        /* once, to the node importing the slot; the map stays */
        r->stats.asked++;
        cmd->asking = 1;

    } else {
        r->stats.moved++;
        r->slots[slot] = (uint16_t) (n->index + 1);
        rg_redis_cluster_refresh(r);
    }

    rg_redis_route(r, cmd, rg_redis_node_pick(n, cmd));

    return 1;
}
