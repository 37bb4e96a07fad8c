/* exec_run.c: one run of the exec tool on the worker's side: forks its
 * supervisor, watches the output pipes, the status pipe and the
 * supervisor on the reactor (or waits with poll() on a host that cannot
 * watch), keeps the timeout and the drain and kill timers, and writes
 * the answer. */

#include "exec.h"


/* Forks the supervisor of one call and watches it on the reactor, or, on
 * a host that cannot watch descriptors, waits for it here. RG_TOOL_AGAIN
 * when the answer follows, RG_TOOL_OK when it was given. */
int
rg_exec_run(rg_tool_call_t *call, const char *prog, char **argv,
    const char *cwd)
{
    int              out[2], err[2], ctl[2], status[2], null, i;
    char             text[128];
    pid_t            pid;
    const char      *bad;
    rg_exec_run_t   *r;
    rg_exec_conf_t  *ecf;
    rg_exec_spawn_t  sp;

    ecf = call->conf;

    out[0] = out[1] = err[0] = err[1] = -1;
    ctl[0] = ctl[1] = status[0] = status[1] = -1;
    null = -1;

    r = calloc(1, sizeof(rg_exec_run_t));
    if (r == NULL) {
        call->host->fail(call, "out of memory");
        return RG_TOOL_OK;
    }

    r->call = call;
    r->ctl = -1;
    r->status = -1;

    for (i = 0; i < 2; i++) {
        r->pipes[i].fd = -1;
        r->pipes[i].data = malloc(ecf->max_output);
        r->pipes[i].run = r;
    }

    if (r->pipes[0].data == NULL || r->pipes[1].data == NULL
        || rg_exec_pipe(out) != 0 || rg_exec_pipe(err) != 0
        || rg_exec_pipe(ctl) != 0 || rg_exec_pipe(status) != 0
        || (null = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1
        || (null < 3 && rg_exec_fd_up(&null) != 0))
    {
        call->host->fail(call, "cannot run a program: %s",
                         rg_exec_strerror(errno, text, sizeof(text)));
        goto failed;
    }

    /* forked since init (an isolated helper): its own ruleset; the number
     * init's had may be another descriptor here */
    if (ecf->landlock && ecf->ruleset_pid != getpid()) {
        ecf->ruleset = rg_exec_ruleset(ecf, &bad);

        if (ecf->ruleset == -1) {
            call->host->fail(call, "cannot confine programs here (%s%s%s): "
                             "%s; none is run unconfined",
                             bad ? "read_only \"" : "Landlock",
                             bad ? bad : "", bad ? "\"" : "",
                             rg_exec_strerror(errno, text, sizeof(text)));
            goto failed;
        }

        ecf->ruleset_pid = getpid();
    }

    sp.ecf = ecf;
    sp.prog = prog;
    sp.argv = argv;
    sp.cwd = cwd;
    sp.ctl = ctl[0];
    sp.status = status[1];
    sp.out = out[1];
    sp.err = err[1];
    sp.null = null;

    pid = fork();

    if (pid == 0) {
        rg_exec_supervise(&sp);
    }

    if (pid == -1) {
        call->host->fail(call, "cannot run a program: fork: %s",
                         rg_exec_strerror(errno, text, sizeof(text)));
        goto failed;
    }

    close(ctl[0]);
    close(status[1]);
    close(out[1]);
    close(err[1]);
    close(null);

    r->sup = pid;
    r->ctl = ctl[1];
    r->status = status[0];
    r->pipes[0].fd = out[0];
    r->pipes[1].fd = err[0];
    r->deadline = rg_exec_now() + ecf->timeout;
    r->prog = strdup(prog);
    rg_exec_show(argv[0], strlen(argv[0]), r->shown, sizeof(r->shown));

    call->ctx = r;

    if (rg_exec_watch(r) == 0) {
        return RG_TOOL_AGAIN;
    }

    r->sync = 1;
    rg_exec_wait(r);

    return RG_TOOL_OK;

failed:

    for (i = 0; i < 2; i++) {
        if (out[i] != -1) {
            close(out[i]);
        }
        if (err[i] != -1) {
            close(err[i]);
        }
        if (ctl[i] != -1) {
            close(ctl[i]);
        }
        if (status[i] != -1) {
            close(status[i]);
        }
    }

    if (null != -1) {
        close(null);
    }

    rg_exec_free(r);

    return RG_TOOL_OK;
}


/* the reactor's watchers: the two output pipes, the reports, the
 * supervisor's end and the timeout; 0, or -1 with none left behind */
int
rg_exec_watch(rg_exec_run_t *r)
{
    int              i;
    rg_tool_host_t  *host;
    rg_exec_conf_t  *ecf;

    host = r->call->host;
    ecf = r->call->conf;

    if (!rg_exec_host_has(host, io_add) || !rg_exec_host_has(host, io_del)
        || !rg_exec_host_has(host, child_watch)
        || !rg_exec_host_has(host, child_unwatch))
    {
        return -1;
    }

    for (i = 0; i < 2; i++) {
        r->pipes[i].io = host->io_add(host, r->pipes[i].fd, RG_TOOL_IO_READ,
                                      rg_exec_pipe_handler, &r->pipes[i]);
    }

    r->status_io = host->io_add(host, r->status, RG_TOOL_IO_READ,
                                rg_exec_status_handler, r);
    r->timer = host->timer_add(host, ecf->timeout, rg_exec_timer_handler, r);

    /* last: a child once watched is the host's to reap */
    if (r->pipes[0].io && r->pipes[1].io && r->status_io && r->timer) {
        r->child = host->child_watch(host, (int) r->sup,
                                     rg_exec_child_handler, r);
        if (r->child) {
            return 0;
        }
    }

    for (i = 0; i < 2; i++) {
        if (r->pipes[i].io) {
            host->io_del(r->pipes[i].io);
            r->pipes[i].io = NULL;
        }
    }

    if (r->status_io) {
        host->io_del(r->status_io);
        r->status_io = NULL;
    }

    if (r->timer) {
        host->timer_del(r->timer);
        r->timer = NULL;
    }

    return -1;
}


/* The same run without a reactor: poll() on the pipes, the timeout as
 * poll's timeout; the supervisor is reaped once its reports end. Answers
 * and frees r. */
void
rg_exec_wait(rg_exec_run_t *r)
{
    int              i, n, status;
    uint64_t         now;
    struct pollfd    pfd[3];
    rg_exec_pipe_t  *pp[3];

    for ( ;; ) {
        n = 0;

        for (i = 0; i < 2; i++) {
            if (r->pipes[i].fd != -1) {
                pfd[n].fd = r->pipes[i].fd;
                pfd[n].events = POLLIN;
                pfd[n].revents = 0;
                pp[n++] = &r->pipes[i];
            }
        }

        if (r->status != -1) {
            pfd[n].fd = r->status;
            pfd[n].events = POLLIN;
            pfd[n].revents = 0;
            pp[n++] = NULL;
        }

        now = rg_exec_now();

        if (now >= r->deadline) {
            if (rg_exec_on_time(r)) {
                return;                  /* answered */
            }
            continue;
        }

        if (poll(pfd, (nfds_t) n, (int) (r->deadline - now)) > 0) {
            for (i = 0; i < n; i++) {
                if (pfd[i].revents == 0) {
                    continue;
                }

                if (pp[i]) {
                    rg_exec_pipe_read(r, pp[i]);
                } else {
                    rg_exec_read_status(r);
                }
            }
        }

        /* the reports end when the supervisor does: it is reaped now */
        if (r->status == -1 && !r->reaped) {
            while (waitpid(r->sup, &status, 0) == -1 && errno == EINTR) {
                /* void */
            }

            r->reaped = 1;
        }

        if (rg_exec_check(r)) {
            return;
        }
    }
}


void
rg_exec_pipe_handler(int fd, int events, void *data)
{
    rg_exec_pipe_t  *pp;
    rg_exec_run_t   *r;

    (void) fd;
    (void) events;

    pp = data;
    r = pp->run;

    rg_exec_pipe_read(r, pp);
    (void) rg_exec_check(r);
}


/* reads what the pipe has; at its end the pipe is closed */
void
rg_exec_pipe_read(rg_exec_run_t *r, rg_exec_pipe_t *pp)
{
    rg_exec_conf_t  *ecf;

    ecf = r->call->conf;

    if (pp->fd == -1 || rg_exec_drain(pp, ecf->max_output) == 0) {
        return;
    }

    if (pp->io) {
        r->call->host->io_del(pp->io);
        pp->io = NULL;
    }

    close(pp->fd);
    pp->fd = -1;
}


void
rg_exec_status_handler(int fd, int events, void *data)
{
    rg_exec_run_t  *r;

    (void) fd;
    (void) events;

    r = data;

    rg_exec_read_status(r);
    (void) rg_exec_check(r);
}


/* the supervisor's reports, whole records of rg_exec_msg_t; its end of
 * the pipe closes when it exits */
void
rg_exec_read_status(rg_exec_run_t *r)
{
    ssize_t        n;
    rg_exec_msg_t  m;

    while (r->status != -1) {
        n = read(r->status, r->msg + r->msg_len, sizeof(r->msg) - r->msg_len);

        if (n > 0) {
            r->msg_len += (size_t) n;

            if (r->msg_len == sizeof(r->msg)) {
                memcpy(&m, r->msg, sizeof(m));
                r->msg_len = 0;

                if (m.kind == RG_EXEC_MSG_EXIT) {
                    r->exited = 1;
                    r->wstatus = m.a;

                } else if (m.kind == RG_EXEC_MSG_SETUP && r->step == 0) {
                    r->step = m.a;
                    r->setup_err = m.b;
                }
            }

            continue;
        }

        if (n == -1 && errno == EINTR) {
            continue;
        }

        if (n == -1 && errno == EAGAIN) {
            return;
        }

        if (r->status_io) {
            r->call->host->io_del(r->status_io);
            r->status_io = NULL;
        }

        close(r->status);
        r->status = -1;
    }
}


void
rg_exec_child_handler(int pid, int status, void *data)
{
    rg_exec_run_t  *r;

    (void) pid;
    (void) status;

    r = data;
    r->child = NULL;                     /* the host's handle is gone */
    r->reaped = 1;

    /* what it wrote before it ended is all there */
    if (r->status != -1) {
        rg_exec_read_status(r);
    }

    (void) rg_exec_check(r);
}


void
rg_exec_timer_handler(void *data)
{
    rg_exec_run_t  *r;

    r = data;
    r->timer = NULL;                     /* fired: the handle is dead */

    (void) rg_exec_on_time(r);
}


/* (re)arms the one timer of a run */
void
rg_exec_arm(rg_exec_run_t *r, uint64_t ms)
{
    rg_tool_host_t  *host;

    r->deadline = rg_exec_now() + ms;

    if (r->sync) {
        return;
    }

    host = r->call->host;

    if (r->timer) {
        host->timer_del(r->timer);
    }

    r->timer = host->timer_add(host, ms, rg_exec_timer_handler, r);
}


/* The run's time is up, for one of three reasons: the timeout (the
 * supervisor is told to kill everything: its control pipe closes), the
 * supervisor not ending in time after that (it is killed), or the output
 * pipes still open after the supervisor ended (the answer goes without
 * the rest). 1 when it answered. */
int
rg_exec_on_time(rg_exec_run_t *r)
{
    if (r->draining) {
        rg_exec_answer(r);
        return 1;
    }

    if (r->ctl != -1) {
        if (!r->exited) {
            r->timed_out = 1;
        }

        close(r->ctl);
        r->ctl = -1;
        rg_exec_arm(r, RG_EXEC_BACKSTOP);
        return 0;
    }

    if (!r->reaped && !r->killed) {
        r->killed = 1;
        (void) kill(r->sup, SIGKILL);
        rg_exec_arm(r, RG_EXEC_BACKSTOP);
        return 0;
    }

    /* nothing more to wait for */
    rg_exec_answer(r);

    return 1;
}


/* Answers once the supervisor is gone and the pipes are read to their
 * end; pipes that stay open (a process out of reach holds them) get
 * RG_EXEC_DRAIN more. 1 when it answered. */
int
rg_exec_check(rg_exec_run_t *r)
{
    int  i;

    if (!r->reaped) {
        return 0;
    }

    for (i = 0; i < 2; i++) {
        rg_exec_pipe_read(r, &r->pipes[i]);
    }

    if (r->pipes[0].fd == -1 && r->pipes[1].fd == -1) {
        rg_exec_answer(r);
        return 1;
    }

    if (!r->draining) {
        r->draining = 1;
        rg_exec_arm(r, RG_EXEC_DRAIN);
    }

    return 0;
}


/* the answer: how the program ended, then its output; frees r */
void
rg_exec_answer(rg_exec_run_t *r)
{
    int              sig, e;
    char             text[128];
    const char      *note;
    struct stat      st;
    rg_exec_buf_t    b;
    rg_tool_call_t  *call;
    rg_exec_conf_t  *ecf;

    call = r->call;
    ecf = call->conf;
    call->ctx = NULL;

    memset(&b, 0, sizeof(b));
    e = r->setup_err;

    switch (r->step) {

    case 0:
        break;

    case RG_EXEC_STEP_EXEC:
        if (e == ENOENT) {
            call->host->fail(call, "command not found: %s; check the name "
                             "or its path", r->shown);

        } else if (e == EACCES && r->prog && stat(r->prog, &st) == 0
                   && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0
                   && ecf->landlock)
        {
            call->host->fail(call, "program %s may not be run: it is "
                             "outside the system's paths, read_only and the "
                             "exec root", r->shown);

        } else if (e == EACCES) {
            call->host->fail(call, "program %s is not executable", r->shown);

        } else {
            call->host->fail(call, "cannot run %s: %s", r->shown,
                             rg_exec_strerror(e, text, sizeof(text)));
        }

        rg_exec_free(r);
        return;

    default:
        call->host->fail(call, "cannot run %s: %s: %s; it was not run",
                         r->shown,
                         r->step == RG_EXEC_STEP_CHDIR ? "cannot enter cwd"
                         : r->step == RG_EXEC_STEP_RLIMIT
                           ? "cannot set its resource limits"
                         : r->step == RG_EXEC_STEP_NETNS
                           ? "cannot cut it off the network (unshare)"
                         : r->step == RG_EXEC_STEP_NNP
                           ? "cannot set no_new_privs"
                         : r->step == RG_EXEC_STEP_CAPS
                           ? "cannot drop its capabilities"
                         : r->step == RG_EXEC_STEP_LANDLOCK
                           ? "cannot confine it (landlock_restrict_self)"
                         : r->step == RG_EXEC_STEP_FORK ? "fork"
                         : r->step == RG_EXEC_STEP_SUPER
                           ? "cannot supervise it"
                         : "cannot set up its descriptors",
                         rg_exec_strerror(e, text, sizeof(text)));
        rg_exec_free(r);
        return;
    }

    if (r->timed_out) {
        rg_exec_buf_printf(&b, "timed out after %gs (it and every process "
                           "it started were killed)",
                           (double) ecf->timeout / 1000);

    } else if (!r->exited) {
        rg_exec_buf_printf(&b, "exit status unknown");

    } else if (WIFEXITED(r->wstatus)) {
        rg_exec_buf_printf(&b, "exit status %d", WEXITSTATUS(r->wstatus));

    } else {
        sig = WIFSIGNALED(r->wstatus) ? WTERMSIG(r->wstatus) : 0;
        note = sig == SIGXCPU ? " (over its CPU time limit, max_cpu)"
               : sig == SIGXFSZ ? " (over its file size limit, "
                                  "max_file_size)"
               : "";

#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
        rg_exec_buf_printf(&b, "killed by signal %d (SIG%s)%s", sig,
                           sigabbrev_np(sig) ? sigabbrev_np(sig) : "?",
                           note);
#else
        rg_exec_buf_printf(&b, "killed by signal %d%s", sig, note);
#endif
    }

    rg_exec_section(&b, "stdout", &r->pipes[0]);
    rg_exec_section(&b, "stderr", &r->pipes[1]);

    rg_exec_free(r);

    if (b.oom) {
        call->host->fail(call, "out of memory");

    } else {
        call->host->done(call, b.data, b.len);
    }

    free(b.data);
}


/* Releases a run. A supervisor still running sees its control pipe close
 * and kills everything; the host reaps it (or, waited for here, it is
 * reaped before). */
void
rg_exec_free(rg_exec_run_t *r)
{
    int              i, status;
    rg_tool_host_t  *host;

    host = r->call->host;

    if (r->ctl != -1) {
        close(r->ctl);
    }

    for (i = 0; i < 2; i++) {
        if (r->pipes[i].io) {
            host->io_del(r->pipes[i].io);
        }

        if (r->pipes[i].fd != -1) {
            close(r->pipes[i].fd);
        }

        free(r->pipes[i].data);
    }

    if (r->status_io) {
        host->io_del(r->status_io);
    }

    if (r->status != -1) {
        close(r->status);
    }

    if (r->timer) {
        host->timer_del(r->timer);
    }

    if (r->child) {
        host->child_unwatch(r->child);

    } else if (r->sup > 0 && !r->reaped) {
        /* it ends within RG_EXEC_KILL_AFTER of the closed pipe */
        while (waitpid(r->sup, &status, 0) == -1 && errno == EINTR) {
            /* void */
        }
    }

    free(r->prog);
    free(r);
}
