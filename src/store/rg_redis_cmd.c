/* rg_redis_cmd.c: a command of the Redis client (rg_redis.c): formatted
 * once in RESP, routed to a node by its tag's slot and to a connection by
 * its tag, its deadline, its one answer, its cancellation.
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
#include <openssl/sha.h>
#include <glib.h>


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
void
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
char *
rg_redis_bulk_head(char *p, size_t len)
{
    *p++ = '$';
    p += rg_sprint_int(p, (int64_t) len);
    *p++ = '\r';
    *p++ = '\n';

    return p;
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
    GBytes  *b;

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
        rg_timer_add(&cmd->timer, cmd->timeout);
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
