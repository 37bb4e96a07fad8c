/* rg_tool_host_io.c: descriptor watchers and child exit notifications
 * for modules, on the reactor, so that a module can run a program (pipes
 * and its end) without a thread that waits. A child is watched through a
 * pidfd where the kernel has them, else by a short timer that asks
 * waitpid(WNOHANG) about that one pid: never waitpid(-1), which would
 * reap children of others (the isolated helpers, the tests' mocks). The
 * host reaps every child it was given, also once its module stopped
 * caring. The reactor is that of the engine whose host table is called
 * (rg_tools_ctx_t.io, from rg_tools_ctx_create to rg_tools_ctx_destroy;
 * the table's bind points to it); the children are the process's: one
 * can outlive the engine that was given it, and is then watched on
 * another engine's reactor, or on the next one to start. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_bind.h>
#include <rg_tool_host_io.h>
#include <event2/event_struct.h>
#include <sys/syscall.h>
#include <sys/wait.h>


#define RG_TOOL_CHILD_POLL   10       /* ms, without pidfd */


struct rg_tool_io_s {
    struct event         ev;
    rg_tool_io_pt        cb;
    void                *data;
};


struct rg_tool_child_s {
    struct event         ev;
    int                  pid;
    int                  pidfd;       /* -1: polled */
    rg_tool_child_pt     cb;          /* NULL: unwatched, reaped anyway */
    void                *data;
    rg_tool_child_t     *next;
    rg_tool_child_t    **prev;
    rg_tool_io_ctx_t    *io;          /* whose reactor watches it */
    unsigned             armed:1;
};


/* waitpid is the process's, so are the children and the reactors that
 * may watch them; what each engine watches is its own */
static rg_tool_io_ctx_t   *rg_tool_io_ctxs;
static rg_tool_child_t    *rg_tool_children;


static void rg_tool_child_arm(rg_tool_child_t *c, rg_tool_io_ctx_t *io);


/* the reactor of the engine a host table belongs to; NULL for the
 * configuration's table, which has none */
static rg_tool_io_ctx_t *
rg_tool_host_io_ctx(rg_tool_host_t *host)
{
    rg_tool_bind_t  *bind;

    bind = host->data;

    if (bind == NULL || bind->io == NULL || bind->io->base == NULL) {
        return NULL;
    }

    return bind->io;
}


static void
rg_tool_io_handler(evutil_socket_t fd, short what, void *arg)
{
    int            events;
    rg_tool_io_t  *io;

    io = arg;
    events = ((what & EV_READ) ? RG_TOOL_IO_READ : 0)
             | ((what & EV_WRITE) ? RG_TOOL_IO_WRITE : 0);

    io->cb((int) fd, events, io->data);     /* may io_del(io) */
}


static rg_tool_io_t *
rg_tool_host_io_add(rg_tool_host_t *host, int fd, int events,
    rg_tool_io_pt cb, void *data)
{
    short              what;
    rg_tool_io_t      *io;
    rg_tool_io_ctx_t  *ctx;

    ctx = rg_tool_host_io_ctx(host);

    if (ctx == NULL || fd < 0 || cb == NULL
        || (events & (RG_TOOL_IO_READ | RG_TOOL_IO_WRITE)) == 0)
    {
        return NULL;
    }

    io = calloc(1, sizeof(rg_tool_io_t));
    if (io == NULL) {
        return NULL;
    }

    io->cb = cb;
    io->data = data;

    what = EV_PERSIST | ((events & RG_TOOL_IO_READ) ? EV_READ : 0)
           | ((events & RG_TOOL_IO_WRITE) ? EV_WRITE : 0);

    if (event_assign(&io->ev, ctx->base, fd, what, rg_tool_io_handler, io)
        != 0
        || event_add(&io->ev, NULL) != 0)
    {
        free(io);
        return NULL;
    }

    return io;
}


static void
rg_tool_host_io_del(rg_tool_io_t *io)
{
    if (io) {
        event_del(&io->ev);
        free(io);
    }
}


static void
rg_tool_child_disarm(rg_tool_child_t *c)
{
    if (c->armed) {
        event_del(&c->ev);
        c->armed = 0;
    }

    c->io = NULL;
}


static void
rg_tool_child_free(rg_tool_child_t *c)
{
    rg_tool_child_disarm(c);

    if (c->pidfd != -1) {
        close(c->pidfd);
    }

    *c->prev = c->next;
    if (c->next) {
        c->next->prev = c->prev;
    }

    free(c);
}


static void
rg_tool_child_handler(evutil_socket_t fd, short what, void *arg)
{
    int                status, pid;
    pid_t              rc;
    void              *data;
    rg_tool_child_t   *c;
    rg_tool_child_pt   cb;
    rg_tool_io_ctx_t  *io;

    c = arg;

    do {
        rc = waitpid(c->pid, &status, WNOHANG);
    } while (rc == -1 && errno == EINTR);

    if (rc == 0) {
        if (c->pidfd == -1) {
            io = c->io;
            c->armed = 0;
            rg_tool_child_arm(c, io);       /* the timer again */
        }
        return;
    }

    if (rc == -1) {
        /* reaped by someone else (SIGCHLD ignored?): the status is lost */
        rg_log_error(RG_LOG_WARN, c->io->log, errno, "waitpid(%d) "
                     "failed", c->pid);
        status = -1;
    }

    pid = c->pid;
    cb = c->cb;
    data = c->data;
    rg_tool_child_free(c);

    if (cb) {
        cb(pid, status, data);
    }
}


/* watched on io's reactor; if that cannot be, it waits unwatched for
 * the next reactor to start */
static void
rg_tool_child_arm(rg_tool_child_t *c, rg_tool_io_ctx_t *io)
{
    struct timeval  tv;

    if (io == NULL || c->armed) {
        return;
    }

    c->io = NULL;

    if (c->pidfd != -1) {
        if (event_assign(&c->ev, io->base, c->pidfd,
                         EV_READ | EV_PERSIST, rg_tool_child_handler, c) != 0
            || event_add(&c->ev, NULL) != 0)
        {
            return;
        }

    } else {
        tv.tv_sec = 0;
        tv.tv_usec = RG_TOOL_CHILD_POLL * 1000;

        if (evtimer_assign(&c->ev, io->base, rg_tool_child_handler, c) != 0
            || evtimer_add(&c->ev, &tv) != 0)
        {
            return;
        }
    }

    c->io = io;
    c->armed = 1;
}


static rg_tool_child_t *
rg_tool_host_child_watch(rg_tool_host_t *host, int pid, rg_tool_child_pt cb,
    void *data)
{
    rg_tool_child_t   *c;
    rg_tool_io_ctx_t  *io;

    io = rg_tool_host_io_ctx(host);

    if (io == NULL || pid <= 0) {
        return NULL;
    }

    c = calloc(1, sizeof(rg_tool_child_t));
    if (c == NULL) {
        return NULL;
    }

    c->pid = pid;
    c->cb = cb;
    c->data = data;
    c->pidfd = -1;

#ifdef SYS_pidfd_open
    c->pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
    if (c->pidfd != -1) {
        (void) fcntl(c->pidfd, F_SETFD, FD_CLOEXEC);
    }
#endif

    c->next = rg_tool_children;
    c->prev = &rg_tool_children;
    if (c->next) {
        c->next->prev = &c->next;
    }
    rg_tool_children = c;

    rg_tool_child_arm(c, io);

    if (!c->armed) {
        rg_tool_child_free(c);
        return NULL;
    }

    return c;
}


static void
rg_tool_host_child_unwatch(rg_tool_child_t *c)
{
    if (c) {
        c->cb = NULL;
        c->data = NULL;
        rg_tool_child_arm(c, rg_tool_io_ctxs);  /* watched on, to be reaped */
    }
}


void
rg_tool_host_io_start(rg_tool_io_ctx_t *io, struct event_base *base,
    rg_log_t *log)
{
    rg_tool_child_t  *c;

    io->base = base;
    io->log = log;

    io->next = rg_tool_io_ctxs;
    io->prev = &rg_tool_io_ctxs;
    if (io->next) {
        io->next->prev = &io->next;
    }
    rg_tool_io_ctxs = io;

    for (c = rg_tool_children; c; c = c->next) {
        if (c->io == NULL) {
            rg_tool_child_arm(c, io);
        }
    }
}


void
rg_tool_host_io_stop(rg_tool_io_ctx_t *io)
{
    rg_tool_child_t  *c;

    if (io->prev == NULL) {
        return;                         /* never started */
    }

    *io->prev = io->next;
    if (io->next) {
        io->next->prev = io->prev;
    }
    io->next = NULL;
    io->prev = NULL;

    for (c = rg_tool_children; c; c = c->next) {
        if (c->io == io) {
            rg_tool_child_disarm(c);
            rg_tool_child_arm(c, rg_tool_io_ctxs);
        }
    }

    io->base = NULL;
}


void
rg_tool_host_io_set(rg_tool_host_t *host)
{
    host->io_add = rg_tool_host_io_add;
    host->io_del = rg_tool_host_io_del;
    host->child_watch = rg_tool_host_child_watch;
    host->child_unwatch = rg_tool_host_child_unwatch;
}
