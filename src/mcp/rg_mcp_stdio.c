/* rg_mcp_stdio.c: the stdio transport of MCP: the server is a child of
 * the worker (posix_spawn, a session of its own so that what it starts
 * goes with it; only PATH and its `env` lines in its environment), and
 * JSON-RPC messages are lines on its stdin and stdout. Everything is on
 * the reactor: stdout read as it comes, one message per line (a line
 * over max_message is dropped and logged, garbage skipped by the
 * server), stdin written through a buffer without ever blocking, stderr
 * logged line by line (its last lines again when it dies). Its end is
 * watched through the tools part's host (a pidfd); at the engine's end
 * stdin is closed first, then SIGTERM, then SIGKILL. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_mcp.h>
#include <rg_secret.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>


#define RG_MCP_READ_CHUNK    65536
#define RG_MCP_READS         16       /* reads per wakeup, then others */
#define RG_MCP_TAIL          8        /* stderr lines kept */
#define RG_MCP_TAIL_LINE     200
#define RG_MCP_ERR_LINE      2000     /* a longer stderr line is cut */

#define rg_mcp_host(s)                                                       \
    (&(s)->ctx->tools->mods[(s)->conf->provider->index].host)

typedef struct {
    rg_mcp_server_t    *server;
    pid_t               pid;          /* 0: none */
    int                 in;           /* its stdin, our end; -1: closed */
    int                 out;
    int                 err;
    struct event        in_ev;
    struct event        out_ev;
    struct event        err_ev;
    struct event        opened_ev;
    rg_tool_child_t    *child;
    rg_buf_t            wbuf;
    size_t              woff;
    rg_buf_t            line;
    rg_buf_t            eline;
    char                tail[RG_MCP_TAIL][RG_MCP_TAIL_LINE];
    rg_uint_t           ntail;
    rg_uint_t           gen;          /* changes when it is closed */
    unsigned            in_set;       /* the events are added */
    unsigned            out_set;
    unsigned            err_set;
    unsigned            opened_set:1;
    unsigned            discard:1;    /* the rest of a line too long */
    unsigned            ediscard:1;
    unsigned            exited:1;
} rg_mcp_stdio_t;


static void rg_mcp_stdio_close(rg_mcp_server_t *s);


static void
rg_mcp_stdio_close_fd(int *fd, struct event *ev, unsigned *set)
{
    if (*set) {
        event_del(ev);
        *set = 0;
    }

    if (*fd != -1) {
        close(*fd);
        *fd = -1;
    }
}


/* the child's group: what it started too (npx starts node) */
static void
rg_mcp_stdio_kill(rg_mcp_stdio_t *st, int sig)
{
    if (st->pid > 0) {
        (void) kill(-st->pid, sig);
    }
}


/* stdout --------------------------------------------------------------- */

/* the bytes read, split into lines; 0 once the server was closed while
 * one was being handled (st must not be touched for it then) */
static rg_uint_t
rg_mcp_stdio_lines(rg_mcp_stdio_t *st, const char *p, size_t n)
{
    char             *nl;
    size_t            k, len;
    rg_uint_t         gen;
    rg_mcp_server_t  *s;

    s = st->server;
    gen = st->gen;

    while (n) {
        nl = memchr(p, '\n', n);
        k = nl ? (size_t) (nl - p) : n;

        if (!st->discard) {
            if (st->line.len + k > s->conf->max_message) {
                rg_log_error(RG_LOG_ERR, s->log, 0, "mcp \"%.*s\": a "
                             "message longer than max_message (%lu bytes) "
                             "was dropped", (int) s->conf->name.len,
                             s->conf->name.data,
                             (unsigned long) s->conf->max_message);
                st->discard = 1;
                rg_buf_reset(&st->line);

            } else if (rg_buf_append(&st->line, p, k) != RG_OK) {
                st->discard = 1;
                rg_buf_reset(&st->line);
            }
        }

        if (nl == NULL) {
            return 1;
        }

        p += k + 1;
        n -= k + 1;

        if (st->discard) {
            st->discard = 0;
            continue;
        }

        len = st->line.len;
        while (len && (st->line.data[len - 1] == '\r'
                       || st->line.data[len - 1] == ' '
                       || st->line.data[len - 1] == '\t'))
        {
            len--;
        }

        rg_buf_reset(&st->line);

        if (len) {
            rg_mcp_server_receive(s, st->line.data, len);
            if (st->gen != gen) {
                return 0;
            }
        }
    }

    return 1;
}


/* RG_OK: all there was read; RG_DONE: its end (or an error); RG_AGAIN:
 * more may be waiting; RG_DECLINED: it was closed meanwhile */
static rg_int_t
rg_mcp_stdio_read(rg_mcp_stdio_t *st)
{
    char       buf[RG_MCP_READ_CHUNK];
    ssize_t    n;
    rg_uint_t  i;

    for (i = 0; i < RG_MCP_READS; i++) {
        n = read(st->out, buf, sizeof(buf));

        if (n > 0) {
            if (!rg_mcp_stdio_lines(st, buf, (size_t) n)) {
                return RG_DECLINED;
            }
            continue;
        }

        if (n < 0 && errno == EINTR) {
            continue;
        }

        if (n < 0 && errno == EAGAIN) {
            return RG_OK;
        }

        return RG_DONE;
    }

    return RG_AGAIN;
}


static void
rg_mcp_stdio_out_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_mcp_stdio_t  *st;

    RG_UNUSED(fd);
    RG_UNUSED(what);

    st = arg;

    if (rg_mcp_stdio_read(st) != RG_DONE) {
        return;
    }

    /* it closed its stdout: a server that says nothing more is no use;
     * its end follows, and with it the lost calls */
    rg_mcp_stdio_close_fd(&st->out, &st->out_ev, &st->out_set);

    if (!st->exited) {
        rg_mcp_stdio_kill(st, SIGTERM);
    }
}


/* stderr --------------------------------------------------------------- */

static void
rg_mcp_stdio_err_line(rg_mcp_stdio_t *st, const char *p, size_t n)
{
    rg_mcp_server_t  *s;

    s = st->server;

    while (n && (p[n - 1] == '\r' || p[n - 1] == ' ')) {
        n--;
    }

    if (n == 0) {
        return;
    }

    snprintf(st->tail[st->ntail % RG_MCP_TAIL], RG_MCP_TAIL_LINE, "%.*s",
             (int) n, p);
    st->ntail++;

    rg_log_error(RG_LOG_INFO, s->log, 0, "mcp \"%.*s\" stderr: %.*s",
                 (int) s->conf->name.len, s->conf->name.data, (int) n, p);
}


static rg_int_t
rg_mcp_stdio_read_err(rg_mcp_stdio_t *st)
{
    char       buf[8192], *nl, *p;
    size_t     k, left;
    ssize_t    n;
    rg_uint_t  i;

    for (i = 0; i < RG_MCP_READS; i++) {
        n = read(st->err, buf, sizeof(buf));

        if (n < 0 && errno == EINTR) {
            continue;
        }

        if (n < 0 && errno == EAGAIN) {
            return RG_OK;
        }

        if (n <= 0) {
            if (st->eline.len) {
                rg_mcp_stdio_err_line(st, st->eline.data, st->eline.len);
                rg_buf_reset(&st->eline);
            }
            return RG_DONE;
        }

        p = buf;
        left = (size_t) n;

        while (left) {
            nl = memchr(p, '\n', left);
            k = nl ? (size_t) (nl - p) : left;

            if (!st->ediscard) {
                if (st->eline.len + k > RG_MCP_ERR_LINE) {
                    k = RG_MCP_ERR_LINE - st->eline.len;
                    rg_buf_append(&st->eline, p, k);
                    rg_mcp_stdio_err_line(st, st->eline.data, st->eline.len);
                    rg_buf_reset(&st->eline);
                    st->ediscard = 1;
                    k = nl ? (size_t) (nl - p) : left;

                } else {
                    rg_buf_append(&st->eline, p, k);
                }
            }

            if (nl == NULL) {
                break;
            }

            if (!st->ediscard) {
                rg_mcp_stdio_err_line(st, st->eline.data, st->eline.len);
            }

            rg_buf_reset(&st->eline);
            st->ediscard = 0;
            p += k + 1;
            left -= k + 1;
        }
    }

    return RG_AGAIN;
}


static void
rg_mcp_stdio_err_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_mcp_stdio_t  *st;

    RG_UNUSED(fd);
    RG_UNUSED(what);

    st = arg;

    if (rg_mcp_stdio_read_err(st) == RG_DONE) {
        rg_mcp_stdio_close_fd(&st->err, &st->err_ev, &st->err_set);
    }
}


/* stdin ---------------------------------------------------------------- */

static rg_int_t
rg_mcp_stdio_flush(rg_mcp_stdio_t *st)
{
    ssize_t  n;

    while (st->woff < st->wbuf.len) {
        n = write(st->in, st->wbuf.data + st->woff, st->wbuf.len - st->woff);

        if (n > 0) {
            st->woff += (size_t) n;
            continue;
        }

        if (n < 0 && errno == EINTR) {
            continue;
        }

        if (n < 0 && errno == EAGAIN) {
            if (!st->in_set) {
                event_add(&st->in_ev, NULL);
                st->in_set = 1;
            }
            return RG_OK;
        }

        /* it closed its stdin (EPIPE): it is going */
        rg_mcp_stdio_close_fd(&st->in, &st->in_ev, &st->in_set);
        return RG_ERROR;
    }

    rg_buf_reset(&st->wbuf);
    st->woff = 0;

    if (st->in_set) {
        event_del(&st->in_ev);
        st->in_set = 0;
    }

    return RG_OK;
}


static void
rg_mcp_stdio_in_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_mcp_stdio_t  *st;

    RG_UNUSED(fd);
    RG_UNUSED(what);

    st = arg;
    st->in_set = 1;                    /* a persistent event: still added */

    (void) rg_mcp_stdio_flush(st);
}


static rg_int_t
rg_mcp_stdio_send(rg_mcp_server_t *s, rg_mcp_req_t *r, const char *method,
    const char *text, size_t len)
{
    size_t           cap;
    rg_mcp_stdio_t  *st;

    RG_UNUSED(r);
    RG_UNUSED(method);

    st = s->tpd;

    if (st == NULL || st->in == -1) {
        snprintf(s->why, sizeof(s->why), "its input is closed");
        return RG_ERROR;
    }

    /* a server that stopped reading must not make reagent hold all it
     * is sent */
    cap = rg_max(16 * 1024 * 1024, 4 * s->conf->max_message);

    if (st->wbuf.len - st->woff + len + 1 > cap) {
        snprintf(s->why, sizeof(s->why), "the server does not read what "
                 "it is sent (%lu bytes wait for it)",
                 (unsigned long) (st->wbuf.len - st->woff));
        return RG_ERROR;
    }

    /* what was written goes before the buffer grows */
    if (st->woff && st->woff == st->wbuf.len) {
        rg_buf_reset(&st->wbuf);
        st->woff = 0;
    }

    if (rg_buf_append(&st->wbuf, text, len) != RG_OK
        || rg_buf_append_lit(&st->wbuf, "\n") != RG_OK)
    {
        snprintf(s->why, sizeof(s->why), "out of memory");
        return RG_ERROR;
    }

    if (!st->in_set && rg_mcp_stdio_flush(st) != RG_OK) {
        snprintf(s->why, sizeof(s->why), "it closed its input");
        return RG_ERROR;
    }

    return RG_OK;
}


/* the child ------------------------------------------------------------ */

static void
rg_mcp_stdio_status(int status, char *buf, size_t size)
{
    if (status == -1) {
        snprintf(buf, size, "its process ended");
    } else if (WIFEXITED(status)) {
        snprintf(buf, size, "its process exited (exit status %d)",
                 WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        snprintf(buf, size, "its process was killed by signal %d (%s)",
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else {
        snprintf(buf, size, "its process ended (status %d)", status);
    }
}


static void
rg_mcp_stdio_exit_handler(int pid, int status, void *data)
{
    char              why[160];
    rg_uint_t         i, first;
    rg_mcp_stdio_t   *st;
    rg_mcp_server_t  *s;

    RG_UNUSED(pid);

    st = data;
    s = st->server;
    st->child = NULL;
    st->exited = 1;

    /* what it wrote before it went is read first: its last answers */
    if (st->out != -1) {
        while (rg_mcp_stdio_read(st) == RG_AGAIN) {
            /* void */
        }
        if (st->pid == 0 || !st->exited) {
            return;                    /* closed while an answer ran */
        }
    }

    if (st->err != -1) {
        while (rg_mcp_stdio_read_err(st) == RG_AGAIN) {
            /* void */
        }
    }

    rg_mcp_stdio_status(status, why, sizeof(why));

    /* what it left running in its group goes too */
    rg_mcp_stdio_kill(st, SIGKILL);

    if (s->state != RG_MCP_STOPPING && st->ntail) {
        first = st->ntail > RG_MCP_TAIL ? st->ntail - RG_MCP_TAIL : 0;

        for (i = first; i < st->ntail; i++) {
            rg_log_error(RG_LOG_WARN, s->log, 0, "mcp \"%.*s\": %s; its "
                         "stderr said: %s", (int) s->conf->name.len,
                         s->conf->name.data, why,
                         st->tail[i % RG_MCP_TAIL]);
        }
    }

    rg_mcp_stdio_close(s);

    rg_mcp_server_lost(s, why);
}


static void
rg_mcp_stdio_opened_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_mcp_stdio_t  *st;

    RG_UNUSED(fd);
    RG_UNUSED(what);

    st = arg;
    st->opened_set = 0;

    rg_mcp_server_opened(st->server);
}


static rg_int_t
rg_mcp_stdio_nonblock(int fd)
{
    int  flags;

    flags = fcntl(fd, F_GETFL);

    return flags == -1 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1
           ? RG_ERROR : RG_OK;
}


/* PATH (reagent's, or its own `env PATH`), and what `env` and
 * `secret_env` give: nothing else of reagent's environment reaches the
 * server. The strings are in b, which the caller wipes. */
static char **
rg_mcp_stdio_env(rg_mcp_server_t *s, rg_buf_t *b)
{
    char          **envp;
    size_t         *off;
    rg_uint_t       i, k, n, path;
    const char     *p;
    rg_mcp_env_t   *e;

    n = s->conf->env ? s->conf->env->nelts : 0;
    e = s->conf->env ? s->conf->env->elts : NULL;

    off = calloc(n + 2, sizeof(size_t));
    envp = calloc(n + 2, sizeof(char *));
    if (off == NULL || envp == NULL) {
        goto failed;
    }

    k = 0;
    path = 0;

    for (i = 0; i < n; i++) {
        if (e[i].value == NULL) {
            continue;
        }

        path |= rg_str_eq(&e[i].name, "PATH");
        off[k++] = b->len;

        if (rg_buf_printf(b, "%s=%s", e[i].name.data, e[i].value) != RG_OK
            || rg_buf_append(b, "", 1) != RG_OK)
        {
            goto failed;
        }
    }

    if (!path) {
        p = getenv("PATH");
        off[k++] = b->len;

        if (rg_buf_printf(b, "PATH=%s", p ? p : "/usr/local/bin:/usr/bin:/bin")
            != RG_OK
            || rg_buf_append(b, "", 1) != RG_OK)
        {
            goto failed;
        }
    }

    /* b may have moved while it grew: pointers last */
    for (i = 0; i < k; i++) {
        envp[i] = b->data + off[i];
    }

    free(off);

    return envp;

failed:

    free(off);
    free(envp);
    return NULL;
}


static void
rg_mcp_stdio_env_free(char **envp, rg_buf_t *b)
{
    free(envp);

    if (b->data) {
        rg_secret_wipe(b->data, b->len);
    }

    rg_buf_free(b);
}


static rg_int_t
rg_mcp_stdio_open(rg_mcp_server_t *s)
{
    int                          in[2], out[2], err[2], rc;
    char                       **envp;
    pid_t                        pid;
    rg_buf_t                     eb;
    sigset_t                     set;
    rg_mcp_stdio_t              *st;
    rg_tool_host_t              *host;
    posix_spawnattr_t            attr;
    posix_spawn_file_actions_t   fa;

    st = s->tpd;

    if (st == NULL) {
        st = calloc(1, sizeof(rg_mcp_stdio_t));
        if (st == NULL) {
            snprintf(s->why, sizeof(s->why), "out of memory");
            return RG_ERROR;
        }
        st->in = st->out = st->err = -1;
        st->server = s;
        s->tpd = st;
    }

    in[0] = in[1] = out[0] = out[1] = err[0] = err[1] = -1;
    memset(&eb, 0, sizeof(eb));
    envp = NULL;

    if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1
        || pipe2(err, O_CLOEXEC) == -1)
    {
        snprintf(s->why, sizeof(s->why), "pipe2() failed: %s",
                 strerror(errno));
        goto failed;
    }

    envp = rg_mcp_stdio_env(s, &eb);
    if (envp == NULL) {
        snprintf(s->why, sizeof(s->why), "out of memory");
        goto failed;
    }

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
#if defined(__GLIBC__)                                                       \
    && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1);
#endif

    /* a session of its own (a group to signal), no blocked or ignored
     * signal inherited from the worker */
    posix_spawnattr_init(&attr);
    sigemptyset(&set);
    posix_spawnattr_setsigmask(&attr, &set);
    sigfillset(&set);
    sigdelset(&set, SIGKILL);
    sigdelset(&set, SIGSTOP);
    posix_spawnattr_setsigdefault(&attr, &set);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK
                                    | POSIX_SPAWN_SETSIGDEF
#ifdef POSIX_SPAWN_SETSID
                                    | POSIX_SPAWN_SETSID
#else
                                    | POSIX_SPAWN_SETPGROUP
#endif
                             );

    rc = posix_spawnp(&pid, s->conf->argv[0], &fa, &attr, s->conf->argv,
                      envp);

    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    rg_mcp_stdio_env_free(envp, &eb);
    envp = NULL;

    if (rc != 0) {
        snprintf(s->why, sizeof(s->why), "cannot run \"%.100s\": %s",
                 s->conf->argv[0], strerror(rc));
        goto failed;
    }

    close(in[0]);
    close(out[1]);
    close(err[1]);
    in[0] = out[1] = err[1] = -1;

    st->pid = pid;
    st->exited = 0;
    st->in = in[1];
    st->out = out[0];
    st->err = err[0];
    st->ntail = 0;
    st->discard = 0;
    st->ediscard = 0;
    rg_buf_reset(&st->line);
    rg_buf_reset(&st->eline);
    rg_buf_reset(&st->wbuf);
    st->woff = 0;

    host = rg_mcp_host(s);
    st->child = host->child_watch(host, pid, rg_mcp_stdio_exit_handler, st);

    if (rg_mcp_stdio_nonblock(st->in) != RG_OK
        || rg_mcp_stdio_nonblock(st->out) != RG_OK
        || rg_mcp_stdio_nonblock(st->err) != RG_OK
        || st->child == NULL)
    {
        snprintf(s->why, sizeof(s->why), "cannot watch its process");
        rg_mcp_stdio_close(s);
        return RG_ERROR;
    }

    event_assign(&st->in_ev, s->ctx->base, st->in, EV_WRITE | EV_PERSIST,
                 rg_mcp_stdio_in_handler, st);
    event_assign(&st->out_ev, s->ctx->base, st->out, EV_READ | EV_PERSIST,
                 rg_mcp_stdio_out_handler, st);
    event_assign(&st->err_ev, s->ctx->base, st->err, EV_READ | EV_PERSIST,
                 rg_mcp_stdio_err_handler, st);
    event_add(&st->out_ev, NULL);
    event_add(&st->err_ev, NULL);
    st->out_set = 1;
    st->err_set = 1;

    rg_log_debug(s->log, "mcp \"%.*s\": started \"%s\", pid %d",
                 (int) s->conf->name.len, s->conf->name.data,
                 s->conf->argv[0], (int) pid);

    /* the handshake begins from the loop, never inside open() */
    event_assign(&st->opened_ev, s->ctx->base, -1, 0,
                 rg_mcp_stdio_opened_handler, st);
    event_active(&st->opened_ev, EV_TIMEOUT, 1);
    st->opened_set = 1;

    return RG_OK;

failed:

    rg_mcp_stdio_env_free(envp, &eb);

    for (rc = 0; rc < 2; rc++) {
        if (in[rc] != -1) {
            close(in[rc]);
        }
        if (out[rc] != -1) {
            close(out[rc]);
        }
        if (err[rc] != -1) {
            close(err[rc]);
        }
    }

    return RG_ERROR;
}


static void
rg_mcp_stdio_detach(rg_mcp_server_t *s, rg_mcp_req_t *r, rg_uint_t abandon)
{
    RG_UNUSED(s);
    RG_UNUSED(r);
    RG_UNUSED(abandon);
}


static void
rg_mcp_stdio_ready(rg_mcp_server_t *s)
{
    RG_UNUSED(s);
}


static rg_uint_t
rg_mcp_stdio_settled(rg_mcp_server_t *s)
{
    RG_UNUSED(s);

    return 1;
}


static void
rg_mcp_stdio_stop(rg_mcp_server_t *s)
{
    rg_mcp_stdio_t  *st;

    st = s->tpd;

    if (st == NULL) {
        return;
    }

    /* what is still buffered is not waited for: the end of its input is
     * what asks it to go */
    rg_buf_reset(&st->wbuf);
    st->woff = 0;
    rg_mcp_stdio_close_fd(&st->in, &st->in_ev, &st->in_set);
}


static rg_uint_t
rg_mcp_stdio_stopped(rg_mcp_server_t *s)
{
    rg_mcp_stdio_t  *st;

    st = s->tpd;

    return st == NULL || st->pid == 0 || st->exited;
}


static void
rg_mcp_stdio_terminate(rg_mcp_server_t *s)
{
    rg_mcp_stdio_t  *st;

    st = s->tpd;

    if (st && !st->exited) {
        rg_mcp_stdio_kill(st, SIGTERM);
    }
}


static void
rg_mcp_stdio_close(rg_mcp_server_t *s)
{
    rg_mcp_stdio_t  *st;
    rg_tool_host_t  *host;

    st = s->tpd;

    if (st == NULL) {
        return;
    }

    st->gen++;

    if (st->pid > 0 && !st->exited) {
        rg_mcp_stdio_kill(st, SIGKILL);
    }

    if (st->child) {
        /* the host reaps it */
        host = rg_mcp_host(s);
        host->child_unwatch(st->child);
        st->child = NULL;
    }

    if (st->opened_set) {
        event_del(&st->opened_ev);
        st->opened_set = 0;
    }

    rg_mcp_stdio_close_fd(&st->in, &st->in_ev, &st->in_set);
    rg_mcp_stdio_close_fd(&st->out, &st->out_ev, &st->out_set);
    rg_mcp_stdio_close_fd(&st->err, &st->err_ev, &st->err_set);

    st->pid = 0;

    /* the memory stays: a line being handled may still point into it */
    rg_buf_reset(&st->wbuf);
    st->woff = 0;
    rg_buf_reset(&st->line);
    rg_buf_reset(&st->eline);
}


static void
rg_mcp_stdio_free(rg_mcp_server_t *s)
{
    rg_mcp_stdio_t  *st;

    st = s->tpd;

    rg_mcp_stdio_close(s);

    if (st) {
        rg_buf_free(&st->wbuf);
        rg_buf_free(&st->line);
        rg_buf_free(&st->eline);
    }
}


const rg_mcp_transport_t  rg_mcp_stdio_transport = {
    "stdio",
    rg_mcp_stdio_open,
    rg_mcp_stdio_send,
    rg_mcp_stdio_detach,
    rg_mcp_stdio_ready,
    rg_mcp_stdio_settled,
    rg_mcp_stdio_stop,
    rg_mcp_stdio_stopped,
    rg_mcp_stdio_terminate,
    rg_mcp_stdio_close,
    rg_mcp_stdio_free
};
