/* rg_master.c: the master process of `reagent serve`. It loads and tests
 * the configuration, writes the pid file, forks the workers, and from then
 * on only supervises, on a reactor of its own: HUP reloads (a new
 * configuration is tested first; on success new workers start with it
 * while the old ones drain; on failure the old ones keep running), QUIT
 * drains every worker and exits, TERM and INT stop them fast (TERM again,
 * then KILL), USR1 reopens the logs, a worker that dies is started again
 * (with a growing delay when it keeps dying). Workers report their state
 * over their channel; `reagent status` reads it from the status socket
 * beside the pid file. The master never touches a session. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_process.h>
#include <event2/event.h>
#include <event2/bufferevent.h>
#include <event2/buffer.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>


#define RG_MASTER_PROCS        1024
#define RG_MASTER_REPORT       4096
#define RG_MASTER_QUICK_DEATH  10000     /* ms: a worker that dies sooner */
#define RG_MASTER_RESPAWN_MAX  60000


typedef struct {
    pid_t               pid;
    rg_uint_t           slot;
    rg_uint_t           generation;
    int                 channel;          /* the master's end */
    struct event       *ev;
    rg_msec_t           started;
    char                report[RG_MASTER_REPORT];
    size_t              report_len;
    unsigned            used:1;
    unsigned            exiting:1;        /* told to go: not respawned */
} rg_master_proc_t;


/* a configuration and the workers started with it */
typedef struct {
    rg_cycle_t         *cycle;
    rg_uint_t           generation;
    rg_master_settings_t  set;
} rg_master_gen_t;


typedef struct {
    struct event_base  *base;
    const rg_master_ops_t *ops;
    const char         *conf_file;
    rg_log_t           *log;

    rg_master_gen_t     gens[16];         /* the current one last */
    rg_uint_t           ngens;
    rg_uint_t           generation;

    rg_master_proc_t    procs[RG_MASTER_PROCS];
    rg_uint_t           deaths[RG_MASTER_PROCS]; /* quick ones, per slot */
    struct event       *respawn_ev[RG_MASTER_PROCS];

    struct event       *signals[6];
    struct event       *kill_ev;
    rg_msec_t           kill_delay;
    rg_msec_t           stop_started;

    int                 status_fd;
    struct event       *status_ev;
    char                status_path[108];
    char                pid_path[PATH_MAX];
    rg_msec_t           started;

    unsigned            quitting:1;
    unsigned            terminating:1;
} rg_master_t;


static rg_master_t  *rg_master;


static rg_master_gen_t *
rg_master_current(rg_master_t *m)
{
    return &m->gens[m->ngens - 1];
}


static rg_uint_t
rg_master_alive(rg_master_t *m, rg_int_t generation)
{
    rg_uint_t  i, n;

    n = 0;

    for (i = 0; i < RG_MASTER_PROCS; i++) {
        if (m->procs[i].used
            && (generation < 0
                || m->procs[i].generation == (rg_uint_t) generation))
        {
            n++;
        }
    }

    return n;
}


static void
rg_master_tell(rg_master_t *m, rg_master_proc_t *p, const char *msg,
    int sig)
{
    ssize_t  n;

    n = send(p->channel, msg, strlen(msg), MSG_DONTWAIT | MSG_NOSIGNAL);

    /* a full or broken channel: the signal says the same */
    if (n != (ssize_t) strlen(msg) && sig) {
        kill(p->pid, sig);
    }
}


static void
rg_master_channel_handler(evutil_socket_t fd, short what, void *arg)
{
    char               buf[RG_MASTER_REPORT + 16];
    ssize_t            n;
    rg_master_proc_t  *p;

    p = arg;

    n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

    if (n > 7 && memcmp(buf, "status ", 7) == 0) {
        p->report_len = rg_min((size_t) n - 7, sizeof(p->report));
        memcpy(p->report, buf + 7, p->report_len);
        return;
    }

    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        /* the worker is gone; SIGCHLD reaps it */
        event_del(p->ev);
    }
}


static void rg_master_reap(rg_master_t *m);


static rg_int_t
rg_master_spawn(rg_master_t *m, rg_uint_t slot, rg_master_gen_t *g)
{
    int                i, sv[2], code;
    pid_t              pid;
    rg_worker_t        w;
    rg_master_proc_t  *p;

    for (i = 0; i < RG_MASTER_PROCS && m->procs[i].used; i++) {
        /* a free entry */
    }

    if (i == RG_MASTER_PROCS) {
        rg_log_error(RG_LOG_ALERT, m->log, 0, "too many worker processes");
        return RG_ERROR;
    }

    p = &m->procs[i];

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
        rg_log_error(RG_LOG_ALERT, m->log, errno, "socketpair() failed");
        return RG_ERROR;
    }

    pid = fork();

    if (pid == -1) {
        rg_log_error(RG_LOG_ALERT, m->log, errno, "fork() failed");
        close(sv[0]);
        close(sv[1]);
        return RG_ERROR;
    }

    if (pid == 0) {
        /* the worker: nothing of the master's loop survives in it. The
         * epoll set is shared with the master until event_reinit(), and
         * freeing the base before would unregister the master's events;
         * its signals go first so that libevent lets the worker's own
         * base take signals */
        event_reinit(m->base);

        for (i = 0; i < (int) rg_nelems(m->signals); i++) {
            if (m->signals[i]) {
                event_del(m->signals[i]);
            }
        }

        event_base_free(m->base);

        for (i = 0; i < RG_MASTER_PROCS; i++) {
            if (m->procs[i].used) {
                close(m->procs[i].channel);
            }
        }

        if (m->status_fd != -1) {
            close(m->status_fd);
        }

        close(sv[0]);

        signal(SIGHUP, SIG_IGN);
        signal(SIGCHLD, SIG_DFL);

        memset(&w, 0, sizeof(w));
        w.slot = slot;
        w.generation = g->generation;
        w.cycle = g->cycle;
        w.ops = m->ops;
        w.log = g->set.log;
        w.channel = sv[1];

        code = m->ops->run(&w);

        /* not exit(): the master's atexit handlers and stdio buffers are
         * not the worker's */
        _exit(code);
    }

    close(sv[1]);

    memset(p, 0, sizeof(*p));
    p->used = 1;
    p->pid = pid;
    p->slot = slot;
    p->generation = g->generation;
    p->channel = sv[0];
    p->started = rg_monotonic_msec();
    p->ev = event_new(m->base, sv[0], EV_READ | EV_PERSIST,
                      rg_master_channel_handler, p);

    if (p->ev) {
        event_add(p->ev, NULL);
    }

    rg_log_error(RG_LOG_NOTICE, m->log, 0, "start worker process %d "
                 "(slot %lu, generation %lu)", (int) pid,
                 (unsigned long) slot, (unsigned long) g->generation);

    return RG_OK;
}


static void
rg_master_respawn_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_uint_t     slot;
    rg_master_t  *m;

    m = rg_master;
    slot = (rg_uint_t) (uintptr_t) arg;

    if (m->quitting || m->terminating) {
        return;
    }

    if (slot < rg_master_current(m)->set.workers) {
        rg_master_spawn(m, slot, rg_master_current(m));
    }
}


/* a configuration whose workers are all gone is freed */
static void
rg_master_retire(rg_master_t *m)
{
    rg_uint_t  i, j;

    for (i = 0; i + 1 < m->ngens; ) {
        if (rg_master_alive(m, (rg_int_t) m->gens[i].generation)) {
            i++;
            continue;
        }

        rg_log_error(RG_LOG_INFO, m->log, 0, "the workers of generation %lu "
                     "are gone; its configuration is freed",
                     (unsigned long) m->gens[i].generation);

        m->ops->unload(m->gens[i].cycle);

        for (j = i; j + 1 < m->ngens; j++) {
            m->gens[j] = m->gens[j + 1];
        }

        m->ngens--;
    }
}


static void
rg_master_exited(rg_master_t *m, rg_master_proc_t *p, int status)
{
    int        quick;
    rg_msec_t  delay, lived;
    rg_uint_t  slot, n;

    lived = rg_monotonic_msec() - p->started;

    if (WIFSIGNALED(status)) {
        /* only the signals a stop sends are expected of an exiting one */
        rg_log_error(p->exiting && (WTERMSIG(status) == SIGTERM
                                    || WTERMSIG(status) == SIGKILL)
                     ? RG_LOG_NOTICE : RG_LOG_ALERT, m->log, 0,
                     "worker process %d exited on signal %d (%s)",
                     (int) p->pid, WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
    } else {
        rg_log_error(p->exiting && WEXITSTATUS(status) == 0
                     ? RG_LOG_NOTICE : RG_LOG_ALERT, m->log, 0,
                     "worker process %d exited with code %d",
                     (int) p->pid, WEXITSTATUS(status));
    }

    if (p->ev) {
        event_free(p->ev);
    }

    close(p->channel);
    p->used = 0;
    slot = p->slot;

    if (m->quitting || m->terminating) {
        if (rg_master_alive(m, -1) == 0) {
            event_base_loopbreak(m->base);
        }
        return;
    }

    if (p->exiting || p->generation != rg_master_current(m)->generation) {
        rg_master_retire(m);
        return;
    }

    /* it died on its own: start another, later when it keeps dying */
    quick = lived < RG_MASTER_QUICK_DEATH;
    m->deaths[slot] = quick ? m->deaths[slot] + 1 : 0;
    n = m->deaths[slot];

    delay = 0;
    if (n > 1) {
        delay = 500;
        while (--n > 1 && delay < RG_MASTER_RESPAWN_MAX) {
            delay *= 2;
        }
        delay = rg_min(delay, RG_MASTER_RESPAWN_MAX);
    }

    if (delay) {
        rg_log_error(RG_LOG_WARN, m->log, 0, "worker slot %lu died %lu "
                     "times in a row soon after starting; the next one "
                     "starts in %llums", (unsigned long) slot,
                     (unsigned long) m->deaths[slot],
                     (unsigned long long) delay);
    }

    if (m->respawn_ev[slot] == NULL) {
        m->respawn_ev[slot] = evtimer_new(m->base, rg_master_respawn_handler,
                                          (void *) (uintptr_t) slot);
    }

    if (m->respawn_ev[slot]) {
        rg_timer_add(m->respawn_ev[slot], delay);
    }
}


static void
rg_master_reap(rg_master_t *m)
{
    int        status;
    pid_t      pid;
    rg_uint_t  i;

    for ( ;; ) {
        pid = waitpid(-1, &status, WNOHANG);

        if (pid == 0 || (pid == -1 && errno == ECHILD)) {
            return;
        }

        if (pid == -1) {
            if (errno == EINTR) {
                continue;
            }
            rg_log_error(RG_LOG_ALERT, m->log, errno, "waitpid() failed");
            return;
        }

        for (i = 0; i < RG_MASTER_PROCS; i++) {
            if (m->procs[i].used && m->procs[i].pid == pid) {
                rg_master_exited(m, &m->procs[i], status);
                break;
            }
        }
    }
}


/* every worker of a generation (or all: -1) is asked to drain */
static void
rg_master_drain(rg_master_t *m, rg_int_t generation, rg_msec_t timeout)
{
    char       msg[64];
    rg_uint_t  i;

    snprintf(msg, sizeof(msg), "quit %llu", (unsigned long long) timeout);

    for (i = 0; i < RG_MASTER_PROCS; i++) {
        if (m->procs[i].used
            && (generation < 0
                || m->procs[i].generation == (rg_uint_t) generation))
        {
            m->procs[i].exiting = 1;
            rg_master_tell(m, &m->procs[i], msg, SIGQUIT);
        }
    }
}


static void
rg_master_kill_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_uint_t     i, hard;
    rg_master_t  *m;

    m = arg;

    if (rg_master_alive(m, -1) == 0) {
        event_base_loopbreak(m->base);
        return;
    }

    /* as nginx: TERM again with a doubling delay, then KILL */
    hard = m->kill_delay > 1000;

    for (i = 0; i < RG_MASTER_PROCS; i++) {
        if (m->procs[i].used) {
            if (hard) {
                rg_log_error(RG_LOG_WARN, m->log, 0, "worker process %d "
                             "did not stop: killing it",
                             (int) m->procs[i].pid);
            }
            kill(m->procs[i].pid, hard ? SIGKILL : SIGTERM);
        }
    }

    m->kill_delay *= 2;
    rg_timer_add(m->kill_ev, m->kill_delay);
}


static void
rg_master_terminate(rg_master_t *m)
{
    rg_uint_t        i;
    struct timeval   tv;

    if (m->terminating) {
        return;
    }

    m->terminating = 1;
    rg_notify("STOPPING=1");
    rg_log_error(RG_LOG_NOTICE, m->log, 0, "stopping fast");

    for (i = 0; i < RG_MASTER_PROCS; i++) {
        if (m->procs[i].used) {
            m->procs[i].exiting = 1;
            rg_master_tell(m, &m->procs[i], "stop", SIGTERM);
        }
    }

    if (rg_master_alive(m, -1) == 0) {
        event_base_loopbreak(m->base);
        return;
    }

    /* a QUIT before may have armed it: evtimer_add moves a pending timer,
     * while assigning one that is pending breaks libevent's heap */
    m->kill_delay = 100;
    tv.tv_sec = 0;
    tv.tv_usec = 100 * 1000;
    evtimer_add(m->kill_ev, &tv);
}


static void
rg_master_quit(rg_master_t *m)
{
    rg_msec_t  t;

    if (m->quitting || m->terminating) {
        return;
    }

    m->quitting = 1;
    rg_notify("STOPPING=1");

    t = rg_master_current(m)->set.drain_timeout;

    rg_log_error(RG_LOG_NOTICE, m->log, 0, "shutting down gracefully: the "
                 "workers drain for up to %llums",
                 (unsigned long long) t);

    rg_master_drain(m, -1, t);

    if (rg_master_alive(m, -1) == 0) {
        event_base_loopbreak(m->base);
        return;
    }

    /* a worker that outlives its drain by far is stopped */
    t += 5000;
    m->kill_delay = 100;
    rg_timer_add(m->kill_ev, t);
}


static void
rg_master_reload(rg_master_t *m)
{
    char              err[1024], state[96];
    rg_cycle_t       *cycle;
    rg_uint_t         i, old;
    rg_master_gen_t  *g;

    if (m->quitting || m->terminating) {
        return;
    }

    snprintf(state, sizeof(state), "RELOADING=1\nMONOTONIC_USEC=%llu",
             (unsigned long long) rg_monotonic_usec());
    rg_notify(state);

    err[0] = '\0';
    cycle = m->ops->load(m->conf_file, err, sizeof(err));

    if (cycle == NULL) {
        rg_log_error(RG_LOG_ERR, m->log, 0, "reload failed, the running "
                     "configuration stays: %s", err[0] ? err : "unknown");
        rg_notify("READY=1");
        return;
    }

    if (m->ngens == rg_nelems(m->gens)) {
        rg_log_error(RG_LOG_ERR, m->log, 0, "reload refused: %lu earlier "
                     "configurations still have draining workers",
                     (unsigned long) m->ngens - 1);
        m->ops->unload(cycle);
        rg_notify("READY=1");
        return;
    }

    old = rg_master_current(m)->generation;

    g = &m->gens[m->ngens++];
    g->cycle = cycle;
    g->generation = ++m->generation;
    m->ops->settings(cycle, &g->set);
    m->log = g->set.log;

    for (i = 0; i < g->set.workers; i++) {
        m->deaths[i] = 0;
        if (m->respawn_ev[i]) {
            evtimer_del(m->respawn_ev[i]);
        }
        rg_master_spawn(m, i, g);
    }

    /* the old ones stop taking work and drain (their own drain_timeout) */
    rg_master_drain(m, (rg_int_t) old, m->gens[m->ngens - 2].set
                                       .drain_timeout);

    rg_log_error(RG_LOG_NOTICE, m->log, 0, "reloaded \"%s\": %lu workers of "
                 "generation %lu started, those of generation %lu drain",
                 m->conf_file, (unsigned long) g->set.workers,
                 (unsigned long) g->generation, (unsigned long) old);

    rg_master_retire(m);
    rg_notify("READY=1");
}


static void
rg_master_reopen(rg_master_t *m)
{
    rg_uint_t  i;

    rg_log_error(RG_LOG_NOTICE, m->log, 0, "reopening the logs");

    m->ops->reopen(rg_master_current(m)->cycle);

    for (i = 0; i < RG_MASTER_PROCS; i++) {
        if (m->procs[i].used) {
            rg_master_tell(m, &m->procs[i], "reopen", SIGUSR1);
        }
    }
}


static void
rg_master_signal_handler(evutil_socket_t sig, short what, void *arg)
{
    rg_master_t  *m;

    m = arg;

    switch (sig) {
    case SIGHUP:
        rg_master_reload(m);
        break;
    case SIGQUIT:
        rg_master_quit(m);
        break;
    case SIGTERM:
    case SIGINT:
        rg_master_terminate(m);
        break;
    case SIGUSR1:
        rg_master_reopen(m);
        break;
    case SIGCHLD:
        rg_master_reap(m);
        break;
    }
}


/* the status socket ------------------------------------------------- */

static void
rg_master_status_sent(struct bufferevent *bev, void *arg)
{
    bufferevent_free(bev);
}


static void
rg_master_status_error(struct bufferevent *bev, short what, void *arg)
{
    bufferevent_free(bev);
}


static void
rg_master_status_handler(evutil_socket_t fd, short what, void *arg)
{
    int                  c;
    rg_uint_t            i, n;
    rg_master_t         *m;
    struct evbuffer     *out;
    struct bufferevent  *bev;
    rg_master_proc_t    *p;

    m = arg;

    c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c == -1) {
        return;
    }

    bev = bufferevent_socket_new(m->base, c, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        close(c);
        return;
    }

    out = bufferevent_get_output(bev);

    evbuffer_add_printf(out, "{\"master\":%d,\"config\":\"%s\","
                        "\"generation\":%lu,\"uptime_ms\":%llu,"
                        "\"state\":\"%s\",\"workers\":[", (int) getpid(),
                        m->conf_file,
                        (unsigned long) rg_master_current(m)->generation,
                        (unsigned long long) (rg_monotonic_msec()
                                              - m->started),
                        m->terminating ? "stopping" : m->quitting
                        ? "draining" : "running");

    n = 0;
    for (i = 0; i < RG_MASTER_PROCS; i++) {
        p = &m->procs[i];
        if (!p->used) {
            continue;
        }

        evbuffer_add_printf(out, "%s{\"pid\":%d,\"slot\":%lu,"
                            "\"generation\":%lu,\"state\":\"%s\","
                            "\"uptime_ms\":%llu,\"report\":",
                            n++ ? "," : "", (int) p->pid,
                            (unsigned long) p->slot,
                            (unsigned long) p->generation,
                            p->exiting ? "draining" : "running",
                            (unsigned long long) (rg_monotonic_msec()
                                                  - p->started));

        if (p->report_len) {
            evbuffer_add(out, p->report, p->report_len);
        } else {
            evbuffer_add_printf(out, "null");
        }

        evbuffer_add_printf(out, "}");
    }

    evbuffer_add_printf(out, "]}\n");

    bufferevent_setcb(bev, NULL, rg_master_status_sent,
                      rg_master_status_error, m);
    bufferevent_enable(bev, EV_WRITE);
}


static rg_int_t
rg_master_status_open(rg_master_t *m, const char *pid_file)
{
    int                 fd;
    struct sockaddr_un  sun;

    rg_process_status_path(pid_file, m->status_path,
                           sizeof(m->status_path));

    if (m->status_path[0] == '\0') {
        rg_log_error(RG_LOG_WARN, m->log, 0, "the pid file's path is too "
                     "long for a status socket beside it; `reagent status` "
                     "will not reach this master");
        return RG_OK;
    }

    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        return RG_ERROR;
    }

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", m->status_path);
    unlink(m->status_path);

    if (bind(fd, (struct sockaddr *) &sun, sizeof(sun)) == -1
        || listen(fd, 16) == -1)
    {
        rg_log_error(RG_LOG_WARN, m->log, errno, "cannot open the status "
                     "socket \"%s\"", m->status_path);
        close(fd);
        m->status_path[0] = '\0';
        return RG_OK;
    }

    m->status_fd = fd;
    m->status_ev = event_new(m->base, fd, EV_READ | EV_PERSIST,
                             rg_master_status_handler, m);
    if (m->status_ev) {
        event_add(m->status_ev, NULL);
    }

    return RG_OK;
}


/* the pid file ------------------------------------------------------ */

static pid_t
rg_master_read_pid(const char *path)
{
    int      fd;
    char     buf[32];
    ssize_t  n;

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd == -1) {
        return -1;
    }

    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);

    if (n <= 0) {
        return -1;
    }

    buf[n] = '\0';

    return (pid_t) strtol(buf, NULL, 10);
}


static rg_int_t
rg_master_write_pid(rg_master_t *m, const char *path)
{
    int      fd, n;
    char     buf[32];
    pid_t    old;

    old = rg_master_read_pid(path);
    if (old > 0 && old != getpid() && kill(old, 0) == 0) {
        fprintf(stderr, "reagent: a master is already running with pid %d "
                "(pid file \"%s\")\n", (int) old, path);
        return RG_ERROR;
    }

    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd == -1) {
        fprintf(stderr, "reagent: cannot write the pid file \"%s\": %s\n",
                path, strerror(errno));
        return RG_ERROR;
    }

    n = snprintf(buf, sizeof(buf), "%d\n", (int) getpid());

    if (write(fd, buf, n) != n) {
        fprintf(stderr, "reagent: cannot write the pid file \"%s\": %s\n",
                path, strerror(errno));
        close(fd);
        return RG_ERROR;
    }

    close(fd);

    snprintf(m->pid_path, sizeof(m->pid_path), "%s", path);

    return RG_OK;
}


static rg_int_t
rg_master_daemon(void)
{
    int    fd;
    pid_t  pid;

    pid = fork();

    if (pid == -1) {
        fprintf(stderr, "reagent: fork() failed: %s\n", strerror(errno));
        return RG_ERROR;
    }

    if (pid > 0) {
        _exit(0);
    }

    if (setsid() == -1) {
        return RG_ERROR;
    }

    umask(0022);

    fd = open("/dev/null", O_RDWR);
    if (fd != -1) {
        dup2(fd, STDIN_FILENO);
        dup2(fd, STDOUT_FILENO);
        if (fd > STDERR_FILENO) {
            close(fd);
        }
    }

    return RG_OK;
}


int
rg_master_run(const char *conf_file, const rg_master_ops_t *ops,
    rg_log_t *log)
{
    int               sigs[] = { SIGHUP, SIGQUIT, SIGTERM, SIGINT, SIGUSR1,
                                 SIGCHLD };
    char              err[1024], ready[128];
    rg_cycle_t       *cycle;
    rg_uint_t         i;
    rg_master_t      *m;
    rg_master_gen_t  *g;

    err[0] = '\0';
    cycle = ops->load(conf_file, err, sizeof(err));
    if (cycle == NULL) {
        fprintf(stderr, "reagent: %s\n", err[0] ? err : "configuration "
                "failed");
        return 1;
    }

    m = calloc(1, sizeof(rg_master_t));
    if (m == NULL) {
        ops->unload(cycle);
        return 1;
    }

    rg_master = m;
    m->ops = ops;
    m->conf_file = conf_file;
    m->status_fd = -1;
    m->started = rg_monotonic_msec();

    g = &m->gens[m->ngens++];
    g->cycle = cycle;
    g->generation = ++m->generation;
    ops->settings(cycle, &g->set);
    m->log = g->set.log ? g->set.log : log;
    g->set.log = m->log;

    if (g->set.daemon && rg_master_daemon() != RG_OK) {
        goto failed;
    }

    if (g->set.pid_file && rg_master_write_pid(m, g->set.pid_file)
                           != RG_OK)
    {
        goto failed;
    }

    signal(SIGPIPE, SIG_IGN);

    m->base = event_base_new();
    if (m->base == NULL) {
        goto failed;
    }

    for (i = 0; i < rg_nelems(sigs); i++) {
        m->signals[i] = evsignal_new(m->base, sigs[i],
                                     rg_master_signal_handler, m);
        if (m->signals[i] == NULL || event_add(m->signals[i], NULL) != 0) {
            goto failed;
        }
    }

    m->kill_ev = evtimer_new(m->base, rg_master_kill_handler, m);
    if (m->kill_ev == NULL) {
        goto failed;
    }

    if (g->set.pid_file) {
        rg_master_status_open(m, g->set.pid_file);
    }

    for (i = 0; i < g->set.workers; i++) {
        rg_master_spawn(m, i, g);
    }

    rg_log_error(RG_LOG_NOTICE, m->log, 0, "master process %d: %lu workers "
                 "with \"%s\"", (int) getpid(),
                 (unsigned long) g->set.workers, conf_file);

    snprintf(ready, sizeof(ready), "READY=1\nMAINPID=%d", (int) getpid());
    rg_notify(ready);

    event_base_dispatch(m->base);

    /* everything is down: reap what is left, then go */
    rg_master_reap(m);

    rg_log_error(RG_LOG_NOTICE, m->log, 0, "master process %d exits",
                 (int) getpid());

    if (m->pid_path[0]) {
        unlink(m->pid_path);
    }

    if (m->status_path[0]) {
        unlink(m->status_path);
    }

    for (i = 0; i < rg_nelems(sigs); i++) {
        if (m->signals[i]) {
            event_free(m->signals[i]);
        }
    }

    for (i = 0; i < RG_MASTER_PROCS; i++) {
        if (m->respawn_ev[i]) {
            event_free(m->respawn_ev[i]);
        }
        if (m->procs[i].used) {
            if (m->procs[i].ev) {
                event_free(m->procs[i].ev);
            }
            close(m->procs[i].channel);
        }
    }

    if (m->status_ev) {
        event_free(m->status_ev);
        close(m->status_fd);
    }

    event_free(m->kill_ev);
    event_base_free(m->base);

    for (i = 0; i < m->ngens; i++) {
        ops->unload(m->gens[i].cycle);
    }

    free(m);
    rg_master = NULL;

    return 0;

failed:

    if (m->pid_path[0]) {
        unlink(m->pid_path);
    }

    for (i = 0; i < rg_nelems(sigs); i++) {
        if (m->signals[i]) {
            event_free(m->signals[i]);
        }
    }

    if (m->kill_ev) {
        event_free(m->kill_ev);
    }

    if (m->base) {
        event_base_free(m->base);
    }

    ops->unload(cycle);
    free(m);
    rg_master = NULL;

    return 1;
}
