/* rg_http_conf.c: the http part's directives and its listening sockets.
 *
 *     http {
 *         listen 127.0.0.1:8080;        # repeatable; [::1]:8080, *:8080
 *         metrics_listen 127.0.0.1:9090; # /metrics and the probes only
 *         auth_token_env REAGENT_TOKEN; # Bearer token; unset: no auth
 *         max_body 1m;
 *         max_header 16k;
 *         client_timeout 30s;           # a request, whole; and idle
 *         send_timeout 30s;             # an answer's bytes, idle
 *         max_event_streams 1000;
 *         max_connections 4096;         # open per worker; past it: closed
 *         max_tasks 10000;              # kept in the worker, no queue
 *         access_log FILE|off;          # default: the error log's file
 *     }
 *
 * The master of `reagent serve` opens the sockets (init_master) and the
 * workers it forks accept on them, as nginx's do. A reload that keeps an
 * address keeps its socket: the new workers accept on the one the old
 * ones did, so no connection is refused meanwhile. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_core_conf.h>
#include <rg_secret.h>
#include <rg_queue_conf.h>
#include <rg_http.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <fcntl.h>


static void *rg_http_create_conf(rg_cycle_t *cycle);
static char *rg_http_init_conf(rg_cycle_t *cycle, void *conf);
static char *rg_http_block(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static char *rg_http_listen(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static rg_int_t rg_http_init_master(rg_cycle_t *cycle, char *err,
    size_t len);

rg_int_t rg_http_init_worker(rg_engine_t *e);
void rg_http_exit_worker(rg_engine_t *e);
void rg_http_drain_worker(rg_engine_t *e);
void rg_http_reopen_worker(rg_engine_t *e);


static rg_conf_num_bounds_t  rg_http_streams_bounds = { 1, 1000000 };
static rg_conf_num_bounds_t  rg_http_tasks_bounds = { 1, 10000000 };
static rg_conf_num_bounds_t  rg_http_conns_bounds = { 1, 1000000 };


/* the reference of the directives below (reagent directives) */
static rg_conf_doc_t  rg_http_docs[] = {

    { "http", "http { … }", "—",
      "the HTTP API of reagent serve: the master opens the sockets, every "
      "worker accepts", NULL },

    { "listen", "listen ADDRESS:PORT;", "—",
      "where the API is served (required; repeatable): `127.0.0.1:8080`, "
      "`[::1]:8080`, `*:8080`", NULL },

    { "metrics_listen", "metrics_listen ADDRESS:PORT;", "—",
      "where /metrics and the probes alone are served", NULL },

    { "auth_token_env", "auth_token_env VAR;", "—",
      "the variable holding the token callers send as \"Authorization: "
      "Bearer …\"; none: no token asked", NULL },

    { "max_body", "max_body SIZE;", "1m",
      "a larger request body is answered 413", NULL },

    { "max_header", "max_header SIZE;", "16k",
      "the largest request head (1k or more)", NULL },

    { "client_timeout", "client_timeout TIME;", "30s",
      "a request must arrive whole within it", NULL },

    { "send_timeout", "send_timeout TIME;", "30s",
      "an answer left unread this long is cut", NULL },

    { "max_event_streams", "max_event_streams N;", "1000",
      "open /events streams per worker", NULL },

    { "max_connections", "max_connections N;", "4096",
      "open connections per worker; past it new ones are closed", NULL },

    { "max_tasks", "max_tasks N;", "10000",
      "tasks a worker holds without a queue", NULL },

    { "access_log", "access_log FILE|off;", "the error log's file",
      "a JSON line per request", NULL },

    rg_null_doc
};


static rg_command_t  rg_http_commands[] = {

    { rg_string("http"), RG_MAIN_CONF|RG_CONF_BLOCK|RG_CONF_NOARGS,
      rg_http_block, 0, NULL },

    { rg_string("listen"), RG_HTTP_CONF|RG_CONF_TAKE1,
      rg_http_listen, 0, NULL },

    { rg_string("metrics_listen"), RG_HTTP_CONF|RG_CONF_TAKE1,
      rg_http_listen, 1, NULL },

    { rg_string("auth_token_env"), RG_HTTP_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_http_conf_t, auth_token_env), NULL },

    { rg_string("max_body"), RG_HTTP_CONF|RG_CONF_TAKE1,
      rg_conf_set_size_slot, offsetof(rg_http_conf_t, max_body), NULL },

    { rg_string("max_header"), RG_HTTP_CONF|RG_CONF_TAKE1,
      rg_conf_set_size_slot, offsetof(rg_http_conf_t, max_header), NULL },

    { rg_string("client_timeout"), RG_HTTP_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_http_conf_t, client_timeout),
      NULL },

    { rg_string("send_timeout"), RG_HTTP_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_http_conf_t, send_timeout), NULL },

    { rg_string("max_event_streams"), RG_HTTP_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_http_conf_t, max_event_streams),
      &rg_http_streams_bounds },

    { rg_string("max_connections"), RG_HTTP_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_http_conf_t, max_connections),
      &rg_http_conns_bounds },

    { rg_string("max_tasks"), RG_HTTP_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_http_conf_t, max_tasks),
      &rg_http_tasks_bounds },

    { rg_string("access_log"), RG_HTTP_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_http_conf_t, access_log), NULL },

      rg_null_command_doc(rg_http_docs)
};


rg_part_t  rg_http_part = {
    .name = "http",
    .commands = rg_http_commands,
    .create_conf = rg_http_create_conf,
    .init_conf = rg_http_init_conf,
    .init_master = rg_http_init_master,
    .init_worker = rg_http_init_worker,
    .exit_worker = rg_http_exit_worker,
    .drain_worker = rg_http_drain_worker,
    .reopen_worker = rg_http_reopen_worker,
    .conf_ctx = RG_HTTP_CONF,
    .conf_block = "http { }"
};


static void *
rg_http_create_conf(rg_cycle_t *cycle)
{
    return rg_conf_create(cycle->pool, sizeof(rg_http_conf_t),
                          rg_http_commands, RG_HTTP_CONF);
}


static char *
rg_http_block(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_http_conf_t  *hcf;

    hcf = conf;

    return rg_conf_block_once(cf, RG_HTTP_CONF, hcf, &hcf->declared,
                              &hcf->file, &hcf->line);
}


/* "127.0.0.1:8080", "[::1]:8080", "*:8080", "localhost:8080", "8080":
 * addresses only, so that nothing is resolved */
static rg_int_t
rg_http_parse_addr(const rg_str_t *s, rg_http_listen_t *l)
{
    int                  len, port;
    char                 text[128], *colon, *end;
    struct sockaddr_in  *sin;

    if (s->len == 0 || s->len >= sizeof(text)) {
        return RG_ERROR;
    }

    memcpy(text, s->data, s->len);
    text[s->len] = '\0';

    colon = strrchr(text, ':');

    if (colon == NULL || strncmp(text, "*:", 2) == 0
        || strncmp(text, "localhost:", 10) == 0)
    {
        port = (int) strtol(colon ? colon + 1 : text, &end, 10);
        if (*end != '\0' || port < 1 || port > 65535) {
            return RG_ERROR;
        }

        sin = (struct sockaddr_in *) &l->sa;
        memset(sin, 0, sizeof(*sin));
        sin->sin_family = AF_INET;
        sin->sin_port = htons((uint16_t) port);
        sin->sin_addr.s_addr = htonl(colon && text[0] == 'l'
                                     ? INADDR_LOOPBACK : INADDR_ANY);
        l->salen = sizeof(*sin);
        return RG_OK;
    }

    len = (int) sizeof(l->sa);
    if (evutil_parse_sockaddr_port(text, (struct sockaddr *) &l->sa, &len)
        != 0)
    {
        return RG_ERROR;
    }

    if (((struct sockaddr_in *) &l->sa)->sin_port == 0) {
        return RG_ERROR;
    }

    l->salen = (socklen_t) len;

    return RG_OK;
}


static char *
rg_http_listen(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_uint_t          i;
    rg_http_conf_t    *hcf;
    rg_http_listen_t  *l, *o;

    hcf = conf;

    if (hcf->listens == NULL) {
        hcf->listens = rg_array_create(cf->pool, 2, sizeof(rg_http_listen_t));
        if (hcf->listens == NULL) {
            return RG_CONF_ERROR;
        }
    }

    l = rg_array_push(hcf->listens);
    if (l == NULL) {
        return RG_CONF_ERROR;
    }

    memset(l, 0, sizeof(*l));
    l->text = cf->args[1];
    l->fd = -1;
    l->metrics = cmd->offset;

    if (rg_http_parse_addr(&cf->args[1], l) != RG_OK) {
        return "expects an address and a port: 127.0.0.1:8080, "
               "[::1]:8080, *:8080 or localhost:8080";
    }

    o = hcf->listens->elts;

    for (i = 0; i + 1 < hcf->listens->nelts; i++) {
        if (o[i].salen == l->salen && memcmp(&o[i].sa, &l->sa, l->salen) == 0)
        {
            return "names an address listened on already";
        }
    }

    return RG_CONF_OK;
}


static char *
rg_http_init_conf(rg_cycle_t *cycle, void *conf)
{
    rg_http_conf_t  *hcf;

    hcf = conf;

    rg_conf_init_size_value(hcf->max_body, 1024 * 1024);
    rg_conf_init_size_value(hcf->max_header, 16 * 1024);
    rg_conf_init_msec_value(hcf->client_timeout, 30000);
    rg_conf_init_msec_value(hcf->send_timeout, 30000);
    rg_conf_init_value(hcf->max_connections, 4096);
    rg_conf_init_value(hcf->max_event_streams, 1000);
    rg_conf_init_value(hcf->max_tasks, 10000);

    if (!hcf->declared) {
        return RG_CONF_OK;
    }

    if (hcf->listens == NULL) {
        rg_cycle_error(cycle, hcf->file, hcf->line, "http: \"listen "
                       "ADDRESS:PORT;\" is missing: where the API is served");
        return RG_CONF_ERROR;
    }

    if (hcf->max_header < 1024) {
        rg_conf_error(cycle, hcf, "max_header", NULL,
                      hcf->file, hcf->line, "http: \"max_header\" "
                      "must be at least 1k");
        return RG_CONF_ERROR;
    }

    /* a client command (reagent queue…) serves no API: the token is
     * neither read nor needed */
    if (hcf->auth_token_env.len && !cycle->client) {
        hcf->token = rg_secret_env(hcf->auth_token_env.data);
        if (hcf->token == NULL || hcf->token[0] == '\0') {
            rg_conf_error(cycle, hcf, "auth_token_env", NULL,
                          hcf->file, hcf->line, "http: "
                          "auth_token_env %s: the variable is not set (or "
                          "empty): the API would take any caller",
                          hcf->auth_token_env.data);
            return RG_CONF_ERROR;
        }
        hcf->token_len = strlen(hcf->token);
    }

    /* without a queue, a task lives in the worker that took it: another
     * worker would not know it */
    if (!rg_queue_conf(cycle)->declared
        && rg_core_conf(cycle)->worker_processes > 1)
    {
        rg_cycle_error(cycle, hcf->file, hcf->line, "http: without a "
                       "\"queue { }\" block the API's tasks run in the "
                       "worker that accepted them: \"worker_processes 1;\", "
                       "or a queue (with store redis) that every worker "
                       "shares");
        return RG_CONF_ERROR;
    }

    return RG_CONF_OK;
}


/* the master's sockets ------------------------------------------------ */

/* open in the master across reloads: a configuration that keeps an
 * address keeps its socket */
typedef struct {
    struct sockaddr_storage  sa;
    socklen_t           salen;
    int                 fd;
    rg_uint_t           refs;             /* cycles that use it */
} rg_http_socket_t;

#define RG_HTTP_SOCKETS  64

static rg_http_socket_t  rg_http_sockets[RG_HTTP_SOCKETS];
static rg_uint_t         rg_http_nsockets;


/* a slot stays where it is (cleanups of other cycles point at theirs):
 * a closed one is free for the next address */
static void
rg_http_socket_release(void *data)
{
    rg_http_socket_t  *s;

    s = data;

    if (--s->refs || s->fd == -1) {
        return;
    }

    close(s->fd);
    s->fd = -1;
    s->salen = 0;
}


/* the first start waits a little for an address still held: the workers
 * of a master that was killed close theirs as they begin to drain (as
 * nginx, before any reactor runs; never on a reload) */
#define RG_HTTP_BIND_TRIES   10
#define RG_HTTP_BIND_WAIT    300       /* ms */

static int
rg_http_socket_open(rg_http_listen_t *l, char *err, size_t len)
{
    int              fd, on, tries;
    struct timespec  ts;

    fd = socket(l->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                0);
    if (fd == -1) {
        snprintf(err, len, "listen %s: socket(): %s", l->text.data,
                 strerror(errno));
        return -1;
    }

    on = 1;
    (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));

    if (l->sa.ss_family == AF_INET6) {
        (void) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
    }

    tries = rg_http_nsockets == 0 ? RG_HTTP_BIND_TRIES : 1;

    while (bind(fd, (struct sockaddr *) &l->sa, l->salen) == -1) {
        if (errno != EADDRINUSE || --tries == 0) {
            snprintf(err, len, "listen %s: %s", l->text.data,
                     strerror(errno));
            close(fd);
            return -1;
        }

        ts.tv_sec = 0;
        ts.tv_nsec = RG_HTTP_BIND_WAIT * 1000000L;
        nanosleep(&ts, NULL);
    }

    if (listen(fd, 511) == -1) {
        snprintf(err, len, "listen %s: %s", l->text.data, strerror(errno));
        close(fd);
        return -1;
    }

    return fd;
}


/* A worker keeps only its own copies of the listeners: the master's,
 * inherited by fork (of every cycle it still holds), are closed, so that
 * a draining worker whose master died frees the address for the next
 * master as soon as it stops accepting. */
void
rg_http_sockets_inherited_close(void)
{
    rg_uint_t  i;

    for (i = 0; i < rg_http_nsockets; i++) {
        if (rg_http_sockets[i].fd != -1) {
            close(rg_http_sockets[i].fd);
            rg_http_sockets[i].fd = -1;
        }
    }
}


static rg_int_t
rg_http_init_master(rg_cycle_t *cycle, char *err, size_t len)
{
    rg_uint_t           i, j;
    rg_http_conf_t     *hcf;
    rg_http_listen_t   *l;
    rg_http_socket_t   *s;
    rg_pool_cleanup_t  *cln;

    hcf = rg_http_conf(cycle);

    if (!hcf->declared) {
        return RG_DECLINED;
    }

    l = hcf->listens->elts;

    for (i = 0; i < hcf->listens->nelts; i++) {
        s = NULL;

        for (j = 0; j < rg_http_nsockets; j++) {
            if (rg_http_sockets[j].refs
                && rg_http_sockets[j].salen == l[i].salen
                && memcmp(&rg_http_sockets[j].sa, &l[i].sa, l[i].salen) == 0)
            {
                s = &rg_http_sockets[j];
                break;
            }
        }

        if (s == NULL) {
            /* a slot no listen holds any more, else a new one */
            for (j = 0; s == NULL && j < rg_http_nsockets; j++) {
                if (rg_http_sockets[j].refs == 0) {
                    s = &rg_http_sockets[j];
                }
            }

            if (s == NULL) {
                if (rg_http_nsockets == RG_HTTP_SOCKETS) {
                    snprintf(err, len, "listen %s: more than %d addresses",
                             l[i].text.data, RG_HTTP_SOCKETS);
                    return RG_ERROR;
                }

                s = &rg_http_sockets[rg_http_nsockets];
            }

            s->fd = rg_http_socket_open(&l[i], err, len);
            if (s->fd == -1) {
                return RG_ERROR;
            }
            memcpy(&s->sa, &l[i].sa, l[i].salen);
            s->salen = l[i].salen;
            s->refs = 0;

            if (s == &rg_http_sockets[rg_http_nsockets]) {
                rg_http_nsockets++;
            }
        }

        cln = rg_pool_cleanup_add(cycle->pool, rg_http_socket_release, s);
        if (cln == NULL) {
            snprintf(err, len, "out of memory");
            if (s->refs == 0) {
                s->refs = 1;
                rg_http_socket_release(s);
            }
            return RG_ERROR;
        }

        s->refs++;
        l[i].fd = s->fd;
    }

    return RG_OK;
}
