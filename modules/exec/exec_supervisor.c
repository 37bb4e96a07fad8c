/* exec_supervisor.c: the supervisor of one run, a subreaper that forks
 * the program, reports its exit status over a pipe and kills what is left
 * of its tree; and the system calls it and the program's start use after
 * fork(): no memory allocated, no lock taken (the worker that forked them
 * has threads). */

#include "exec.h"


/* Moves the descriptors a supervisor keeps to 3, 4, ... (lowest first)
 * and closes every other one (the worker's sockets, its epoll, its
 * log). fds[] are updated. 0 or -1. */
int
rg_exec_fds_keep(int **fds, int n)
{
    int   i, j, prev, t, *p;

    /* by value; n is small */
    for (i = 1; i < n; i++) {
        for (j = i; j > 0 && *fds[j - 1] > *fds[j]; j--) {
            p = fds[j];
            fds[j] = fds[j - 1];
            fds[j - 1] = p;
        }
    }

    prev = 2;

    for (i = 0; i < n; i++) {
        if (*fds[i] > prev + 1 && rg_exec_close_from(prev + 1, *fds[i] - 1)
                                  != 0)
        {
            return -1;
        }
        prev = *fds[i];
    }

    if (rg_exec_close_from(prev + 1, INT_MAX) != 0) {
        return -1;
    }

    /* each target is below its source and above every kept one before */
    for (i = 0, t = 3; i < n; i++, t++) {
        if (*fds[i] != t) {
            if (dup2(*fds[i], t) == -1) {
                return -1;
            }
            close(*fds[i]);
            *fds[i] = t;
        }
    }

    return 0;
}


/* The supervisor: a subreaper in a process group of its own, with every
 * signal blocked (SIGCHLD read from a signalfd). It forks the program,
 * reports its start failure or its exit status, and kills the tree: all
 * of it once the program has exited, or when the control pipe closes
 * (SIGTERM, then SIGKILL after RG_EXEC_KILL_AFTER). It exits when it has
 * no child left. */
void
rg_exec_supervise(const rg_exec_spawn_t *spawn)
{
    int               i, sfd, ep[2], *keep[6], nkeep, rc, st, timeout;
    int               main_alive, stopping, killing;
    int32_t           setup[2];
    pid_t             pid;
    ssize_t           n;
    uint64_t          kill_at, now;
    sigset_t          all, chld;
    siginfo_t         si;
    struct pollfd     pfd[2];
    rg_exec_spawn_t   sp;
    struct sigaction  sa;
    struct signalfd_siginfo  buf[8];

    sp = *spawn;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);

    for (i = 1; i < NSIG; i++) {
        if (i != SIGKILL && i != SIGSTOP) {
            (void) sigaction(i, &sa, NULL);    /* EINVAL for libc's own */
        }
    }

    sigfillset(&all);
    (void) sigprocmask(SIG_SETMASK, &all, NULL);

    /* the terminal's ^C is for the worker: it tells this one itself */
    (void) setpgid(0, 0);

    nkeep = 0;
    keep[nkeep++] = &sp.ctl;
    keep[nkeep++] = &sp.status;
    keep[nkeep++] = &sp.out;
    keep[nkeep++] = &sp.err;
    keep[nkeep++] = &sp.null;
    sp.ruleset = sp.ecf->ruleset;
    if (sp.ruleset != -1) {
        keep[nkeep++] = &sp.ruleset;
    }

    if (rg_exec_fds_keep(keep, nkeep) != 0) {
        rg_exec_report(sp.status, RG_EXEC_MSG_SETUP, RG_EXEC_STEP_FDS, errno);
        _exit(0);
    }

    /* the worker's stdout stays the worker's */
    if (dup2(sp.null, 0) == -1 || dup2(sp.null, 1) == -1
        || dup2(sp.null, 2) == -1)
    {
        rg_exec_report(sp.status, RG_EXEC_MSG_SETUP, RG_EXEC_STEP_FDS, errno);
        _exit(0);
    }

    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == -1) {
        rg_exec_report(sp.status, RG_EXEC_MSG_SETUP, RG_EXEC_STEP_SUPER,
                       errno);
        _exit(0);
    }

    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);

    sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);

    if (sfd == -1 || pipe2(ep, O_CLOEXEC) == -1) {
        rg_exec_report(sp.status, RG_EXEC_MSG_SETUP, RG_EXEC_STEP_SUPER,
                       errno);
        _exit(0);
    }

    pid = fork();

    if (pid == 0) {
        close(ep[0]);
        rg_exec_child(&sp, ep[1]);
    }

    close(ep[1]);
    close(sp.out);
    close(sp.err);
    close(sp.null);
    if (sp.ruleset != -1) {
        close(sp.ruleset);
    }

    if (pid == -1) {
        rg_exec_report(sp.status, RG_EXEC_MSG_SETUP, RG_EXEC_STEP_FORK,
                       errno);
        _exit(0);
    }

    /* nothing before execve(): it started; else why it did not */
    do {
        n = read(ep[0], setup, sizeof(setup));
    } while (n == -1 && errno == EINTR);

    close(ep[0]);

    if (n == (ssize_t) sizeof(setup)) {
        rg_exec_report(sp.status, RG_EXEC_MSG_SETUP, setup[0], setup[1]);

        while (waitpid(pid, &st, 0) == -1 && errno == EINTR) {
            /* void */
        }

        _exit(0);
    }

    main_alive = 1;
    stopping = 0;
    killing = 0;
    kill_at = 0;

    for ( ;; ) {
        pfd[0].fd = stopping ? -1 : sp.ctl;
        pfd[0].events = POLLIN;
        pfd[0].revents = 0;
        pfd[1].fd = sfd;
        pfd[1].events = POLLIN;
        pfd[1].revents = 0;

        /* while killing, a look every 100 ms: new orphans arrive */
        now = rg_exec_now();
        timeout = killing ? 100
                  : stopping ? (int) (kill_at > now ? kill_at - now : 0)
                  : -1;

        rc = poll(pfd, 2, timeout);

        if (rc > 0 && pfd[0].revents) {
            stopping = 1;
            kill_at = rg_exec_now() + RG_EXEC_KILL_AFTER;
            rg_exec_kill_tree(main_alive ? pid : 0, SIGTERM);
        }

        if (stopping && !killing && rg_exec_now() >= kill_at) {
            killing = 1;
        }

        while (read(sfd, buf, sizeof(buf)) > 0) {
            /* SIGCHLD is a hint: the waits below tell */
        }

        for ( ;; ) {
            memset(&si, 0, sizeof(si));

            if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == -1) {
                if (errno == EINTR) {
                    continue;
                }

                _exit(0);                /* ECHILD: nobody is left */
            }

            if (si.si_pid == 0) {
                break;
            }

            if (si.si_pid == pid && main_alive) {
                /* its group goes first, while its pid, the group's id,
                 * cannot be reused */
                (void) kill(-pid, SIGKILL);

                while (waitpid(pid, &st, 0) == -1 && errno == EINTR) {
                    /* void */
                }

                main_alive = 0;
                killing = 1;
                rg_exec_report(sp.status, RG_EXEC_MSG_EXIT, st, 0);
                continue;
            }

            while (waitpid(si.si_pid, &st, 0) == -1 && errno == EINTR) {
                /* void */
            }
        }

        if (killing) {
            rg_exec_kill_tree(main_alive ? pid : 0, SIGKILL);
        }
    }
}


/* Signals what is left of the tree: the program's process group while it
 * lives, and each child of this subreaper (the program, and orphans
 * handed to it, also those that left the group with setsid()). */
void
rg_exec_kill_tree(pid_t main, int sig)
{
    int      fd;
    char     path[64], buf[1024], *p, *q;
    long     v;
    pid_t    self;
    ssize_t  n;

    if (main > 0) {
        (void) kill(-main, sig);
    }

    /* "/proc/self/task/<pid>/children", written without stdio */
    self = getpid();
    memcpy(path, "/proc/self/task/", 16);
    p = path + 16;
    q = buf;

    for (v = self; v > 0; v /= 10) {
        *q++ = (char) ('0' + v % 10);
    }

    while (q > buf) {
        *p++ = *--q;
    }

    memcpy(p, "/children", sizeof("/children"));

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        return;
    }

    v = 0;

    /* "pid pid pid ", in chunks that may split a number */
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        for (p = buf; p < buf + n; p++) {
            if (*p >= '0' && *p <= '9') {
                v = v * 10 + (*p - '0');

            } else if (v > 0) {
                (void) kill((pid_t) v, sig);
                v = 0;
            }
        }
    }

    if (v > 0) {
        (void) kill((pid_t) v, sig);
    }

    close(fd);
}


/* closes from..to (close_range(2), else one by one up to the limit) */
int
rg_exec_close_from(int from, int to)
{
    int            fd;
    struct rlimit  rl;

#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned) from, (unsigned) to, 0) == 0) {
        return 0;
    }

    if (errno != ENOSYS) {
        return -1;
    }
#endif

    if (getrlimit(RLIMIT_NOFILE, &rl) == -1) {
        return -1;
    }

    for (fd = from; fd <= to && (rlim_t) fd < rl.rlim_cur; fd++) {
        (void) close(fd);
    }

    return 0;
}


void
rg_exec_report(int fd, int kind, int a, int b)
{
    rg_exec_msg_t  m;

    m.kind = kind;
    m.a = a;
    m.b = b;

    while (write(fd, &m, sizeof(m)) == -1 && errno == EINTR) {
        /* void */
    }
}


/* output */


/* Reads what the pipe has (a bounded number of times, so that a fast
 * writer cannot hold off the other events): up to max bytes are kept, the
 * rest counted and dropped, so the child never blocks on a full pipe. 1
 * at its end (or an error), else 0. */
int
rg_exec_drain(rg_exec_pipe_t *pp, size_t max)
{
    int      i;
    char     junk[16384];
    ssize_t  n;

    for (i = 0; i < 64; i++) {
        if (pp->len < max) {
            n = read(pp->fd, pp->data + pp->len, max - pp->len);

        } else {
            n = read(pp->fd, junk, sizeof(junk));
        }

        if (n > 0) {
            if (pp->len < max) {
                pp->len += (size_t) n;

            } else {
                pp->dropped += (size_t) n;
            }

            continue;
        }

        if (n == -1 && errno == EINTR) {
            continue;
        }

        return n == 0 || errno != EAGAIN;
    }

    return 0;
}


/* a pipe with both ends close-on-exec, neither of them 0, 1 or 2 (the
 * child's dup2()s must not overwrite one with another), the read end
 * non-blocking */
int
rg_exec_pipe(int fds[2])
{
    int  i, fd;

    if (pipe2(fds, O_CLOEXEC) == -1) {
        return -1;
    }

    for (i = 0; i < 2; i++) {
        if (fds[i] > 2) {
            continue;
        }

        fd = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
        if (fd == -1) {
            return -1;
        }

        close(fds[i]);
        fds[i] = fd;
    }

    return fcntl(fds[0], F_SETFL, O_NONBLOCK) == -1 ? -1 : 0;
}


/* *fd moved to 3 or above, close-on-exec: a worker started without 0-2
 * gets them back from open() */
int
rg_exec_fd_up(int *fd)
{
    int  up;

    up = fcntl(*fd, F_DUPFD_CLOEXEC, 3);
    if (up == -1) {
        return -1;
    }

    close(*fd);
    *fd = up;

    return 0;
}
