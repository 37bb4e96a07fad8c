/* rg_test_redis.c: a real redis-server for the tests (see rg_test_redis.h). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test_redis.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/prctl.h>


static int rg_test_probe_port(void);


/* a loopback port free now, at most 55535: a Redis Cluster node also
 * listens on its port + 10000 */
int
rg_test_free_port(void)
{
    int  i, port;

    for (i = 0; i < 100; i++) {
        port = rg_test_probe_port();
        if (port <= 55535) {
            return port;
        }
    }

    return -1;
}


static int
rg_test_probe_port(void)
{
    int                 fd, port;
    socklen_t           len;
    struct sockaddr_in  sin;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd == -1) {
        return -1;
    }

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof(sin);

    if (bind(fd, (struct sockaddr *) &sin, sizeof(sin)) == -1
        || getsockname(fd, (struct sockaddr *) &sin, &len) == -1)
    {
        close(fd);
        return -1;
    }

    port = ntohs(sin.sin_port);
    close(fd);

    return port;
}


static int
rg_test_redis_spawn(rg_test_redis_t *t)
{
    int              i, n;
    char             portbuf[16], extra[256], *p, *save;
    char            *argv[48];
    redisContext    *c;
    redisReply      *reply;
    struct timeval   tv = { 0, 200000 };
    struct timespec  ts = { 0, 20 * 1000 * 1000 };

    snprintf(portbuf, sizeof(portbuf), "%d", t->port);
    snprintf(extra, sizeof(extra), "%s", t->extra);

    n = 0;
    argv[n++] = "redis-server";
    argv[n++] = "--port";
    argv[n++] = portbuf;
    argv[n++] = "--bind";
    argv[n++] = "127.0.0.1";
    argv[n++] = "--unixsocket";
    argv[n++] = t->sock;
    argv[n++] = "--dir";
    argv[n++] = t->dir;
    argv[n++] = "--save";
    argv[n++] = "";
    argv[n++] = "--appendonly";
    argv[n++] = "no";
    argv[n++] = "--loglevel";
    argv[n++] = "warning";
    argv[n++] = "--logfile";
    argv[n++] = "";
    argv[n++] = "--enable-debug-command";
    argv[n++] = "local";

    for (p = strtok_r(extra, " ", &save); p && n < 46;
         p = strtok_r(NULL, " ", &save))
    {
        argv[n++] = p;
    }

    argv[n] = NULL;

    t->pid = fork();
    if (t->pid == 0) {
        int  fd = open("/dev/null", O_WRONLY);

        if (fd != -1) {
            dup2(fd, STDOUT_FILENO);
            close(fd);
        }
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execvp("redis-server", argv);
        _exit(127);
    }

    if (t->pid < 0) {
        return -1;
    }

    /* ready when it answers PING on its socket: up to 5 s */
    for (i = 0; i < 250; i++) {
        if (waitpid(t->pid, NULL, WNOHANG) == t->pid) {
            t->pid = 0;
            return -1;
        }

        c = redisConnectUnixWithTimeout(t->sock, tv);
        if (c && !c->err) {
            reply = redisCommand(c, "PING");
            if (reply && (reply->type == REDIS_REPLY_STATUS
                          || reply->type == REDIS_REPLY_ERROR))
            {
                freeReplyObject(reply);
                redisFree(c);
                return 0;
            }
            if (reply) {
                freeReplyObject(reply);
            }
        }
        if (c) {
            redisFree(c);
        }
        nanosleep(&ts, NULL);
    }

    rg_test_redis_kill(t, 1);
    return -1;
}


rg_test_redis_t *
rg_test_redis_start(const char *extra)
{
    int               i;
    rg_test_redis_t  *t;

    t = calloc(1, sizeof(rg_test_redis_t));
    if (t == NULL) {
        return NULL;
    }

    snprintf(t->dir, sizeof(t->dir), "/tmp/rg-redis-XXXXXX");
    if (mkdtemp(t->dir) == NULL) {
        free(t);
        return NULL;
    }

    snprintf(t->sock, sizeof(t->sock), "%s/redis.sock", t->dir);
    snprintf(t->extra, sizeof(t->extra), "%s", extra ? extra : "");

    /* a free port may be taken between the probe and the bind: try again */
    for (i = 0; i < 5; i++) {
        t->port = rg_test_free_port();
        if (t->port > 0 && rg_test_redis_spawn(t) == 0) {
            return t;
        }
    }

    rmdir(t->dir);
    free(t);

    return NULL;
}


void
rg_test_redis_kill(rg_test_redis_t *t, int hard)
{
    if (t == NULL || t->pid <= 0) {
        return;
    }

    kill(t->pid, hard ? SIGKILL : SIGTERM);
    waitpid(t->pid, NULL, 0);
    t->pid = 0;
}


int
rg_test_redis_restart(rg_test_redis_t *t)
{
    int              i;
    struct timespec  ts = { 0, 50 * 1000 * 1000 };

    rg_test_redis_kill(t, 0);

    /* the old listener may linger a moment */
    for (i = 0; i < 40; i++) {
        if (rg_test_redis_spawn(t) == 0) {
            return 0;
        }
        nanosleep(&ts, NULL);
    }

    return -1;
}


void
rg_test_redis_stop(rg_test_redis_t *t)
{
    char  path[160];

    if (t == NULL) {
        return;
    }

    rg_test_redis_kill(t, 1);

    unlink(t->sock);
    snprintf(path, sizeof(path), "%s/dump.rdb", t->dir);
    unlink(path);
    rmdir(t->dir);
    free(t);
}


static char *
rg_test_redis_text(redisReply *r)
{
    char  *s;

    switch (r->type) {
    case REDIS_REPLY_INTEGER:
        if (asprintf(&s, "%lld", r->integer) < 0) {
            s = NULL;
        }
        return s;
    case REDIS_REPLY_NIL:
        return strdup("(nil)");
    case REDIS_REPLY_ARRAY:
        if (asprintf(&s, "(array %zu)", r->elements) < 0) {
            s = NULL;
        }
        return s;
    default:
        return rg_strdup_len(r->str, r->len);
    }
}


char *
rg_test_redis_cmd(rg_test_redis_t *t, const char *fmt, ...)
{
    char            *s;
    va_list          args;
    redisReply      *reply;
    redisContext    *c;
    struct timeval   tv = { 5, 0 };

    c = redisConnectUnixWithTimeout(t->sock, tv);
    if (c == NULL || c->err) {
        if (c) {
            redisFree(c);
        }
        return NULL;
    }

    va_start(args, fmt);
    reply = redisvCommand(c, fmt, args);
    va_end(args);

    s = reply ? rg_test_redis_text(reply) : NULL;

    if (reply) {
        freeReplyObject(reply);
    }
    redisFree(c);

    return s;
}


rg_test_cluster_t *
rg_test_cluster_start(rg_uint_t n)
{
    int                 i, ok, rc;
    char                cmd[1024], *v;
    size_t              len;
    rg_uint_t           k;
    rg_test_cluster_t  *c;
    struct timespec     ts = { 0, 50 * 1000 * 1000 };

    c = calloc(1, sizeof(rg_test_cluster_t));
    if (c == NULL || n > 8) {
        free(c);
        return NULL;
    }

    for (k = 0; k < n; k++) {
        c->nodes[k] = rg_test_redis_start("--cluster-enabled yes "
                                          "--cluster-config-file nodes.conf "
                                          "--cluster-node-timeout 2000");
        if (c->nodes[k] == NULL) {
            rg_test_cluster_stop(c);
            return NULL;
        }
        c->n++;
    }

    len = snprintf(cmd, sizeof(cmd), "redis-cli --cluster create");
    for (k = 0; k < n; k++) {
        len += snprintf(cmd + len, sizeof(cmd) - len, " 127.0.0.1:%d",
                        c->nodes[k]->port);
    }
    snprintf(cmd + len, sizeof(cmd) - len, " --cluster-replicas 0 "
             "--cluster-yes > /dev/null 2>&1");

    rc = system(cmd);
    if (rc != 0) {
        rg_test_cluster_stop(c);
        return NULL;
    }

    /* every node says ok: up to 10 s */
    for (i = 0; i < 200; i++) {
        ok = 0;
        for (k = 0; k < n; k++) {
            v = rg_test_redis_cmd(c->nodes[k], "CLUSTER INFO");
            ok += v && strstr(v, "cluster_state:ok") != NULL;
            free(v);
        }
        if ((rg_uint_t) ok == n) {
            return c;
        }
        nanosleep(&ts, NULL);
    }

    rg_test_cluster_stop(c);

    return NULL;
}


void
rg_test_cluster_stop(rg_test_cluster_t *c)
{
    char       path[160];
    rg_uint_t  k;

    if (c == NULL) {
        return;
    }

    for (k = 0; k < c->n; k++) {
        if (c->nodes[k]) {
            snprintf(path, sizeof(path), "%s/nodes.conf", c->nodes[k]->dir);
            rg_test_redis_kill(c->nodes[k], 1);
            unlink(path);
            rg_test_redis_stop(c->nodes[k]);
        }
    }

    free(c);
}


char *
rg_test_cluster_id(rg_test_redis_t *t)
{
    return rg_test_redis_cmd(t, "CLUSTER MYID");
}


int
rg_test_cluster_owner(rg_test_cluster_t *c, int slot)
{
    int              owner, port;
    size_t           e;
    rg_uint_t        k;
    redisReply      *reply, *r;
    redisContext    *ctx;
    struct timeval   tv = { 5, 0 };

    ctx = redisConnectUnixWithTimeout(c->nodes[0]->sock, tv);
    if (ctx == NULL || ctx->err) {
        if (ctx) {
            redisFree(ctx);
        }
        return -1;
    }

    owner = -1;
    reply = redisCommand(ctx, "CLUSTER SLOTS");

    for (e = 0; reply && reply->type == REDIS_REPLY_ARRAY
                && e < reply->elements; e++)
    {
        r = reply->element[e];

        if (r->elements < 3 || slot < r->element[0]->integer
            || slot > r->element[1]->integer)
        {
            continue;
        }

        port = (int) r->element[2]->element[1]->integer;

        for (k = 0; k < c->n; k++) {
            if (c->nodes[k]->port == port) {
                owner = (int) k;
            }
        }
    }

    if (reply) {
        freeReplyObject(reply);
    }
    redisFree(ctx);

    return owner;
}
