/* rg_test_redis.h: a real redis-server for the tests, started as a child
 * on a free loopback port and a unix socket in its own folder, killed
 * with the test. Tests may block; the client code they test may not. */

#ifndef RG_TEST_REDIS_H
#define RG_TEST_REDIS_H

#include <rg_config.h>
#include <rg_core.h>

typedef struct {
    pid_t       pid;
    int         port;
    char        dir[64];
    char        sock[96];     /* its unix socket */
    char        extra[256];   /* e.g. "--requirepass x" */
} rg_test_redis_t;

/* NULL when redis-server is missing or does not start; extra: more
 * arguments separated by blanks, or NULL */
rg_test_redis_t *rg_test_redis_start(const char *extra);
/* stops it (SIGKILL when hard), keeping the port for a restart */
void rg_test_redis_kill(rg_test_redis_t *t, int hard);
/* starts it again on the same port and socket */
int rg_test_redis_restart(rg_test_redis_t *t);
void rg_test_redis_stop(rg_test_redis_t *t);
/* runs one command with a blocking client; returns its reply as text
 * (integers in decimal, nil as "(nil)", errors as "ERR…"), malloc'ed */
char *rg_test_redis_cmd(rg_test_redis_t *t, const char *fmt, ...);
/* a free loopback TCP port (bound and released) */
int rg_test_free_port(void);

/* a Redis Cluster of n masters on loopback, slots spread by redis-cli
 * --cluster create; NULL when it cannot be made */
typedef struct {
    rg_uint_t           n;
    rg_test_redis_t    *nodes[8];
} rg_test_cluster_t;

rg_test_cluster_t *rg_test_cluster_start(rg_uint_t n);
void rg_test_cluster_stop(rg_test_cluster_t *c);
/* the node (index) that serves a slot now, -1 when none */
int rg_test_cluster_owner(rg_test_cluster_t *c, int slot);
/* a node's cluster id */
char *rg_test_cluster_id(rg_test_redis_t *t);

#endif /* RG_TEST_REDIS_H */
