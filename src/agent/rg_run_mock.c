/* rg_run_mock.c: `run --mock` and `batch --mock`: the bundled mock model
 * (rg_mock beside the binary in a build tree, reagent-mock once
 * installed) started for this run on a free loopback port, and every llm
 * of the engine pointed at it, so that a first run needs no provider and
 * no key. The socket is bound and listening before the mock starts (it
 * is handed over as a descriptor), so its port is known at once and
 * nothing waits for the mock to come up. The mock goes when the run
 * ends, or with this process if that dies first. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_run.h>
#include <rg_llm_client.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>


/* the descriptor the mock is given its socket on */
#define RG_RUN_MOCK_FD  3


/* the mock's binary: beside ours (a build tree's rg_mock, an installed
 * reagent-mock), then the installed one; NULL with tried filled in */
static const char *
rg_run_mock_find(char *path, size_t size, char *tried, size_t tlen)
{
    char         exe[PATH_MAX], *dir;
    size_t       len;
    ssize_t      n;
    rg_uint_t    i;
    const char  *names[] = { "rg_mock", "reagent-mock" };

    tried[0] = '\0';
    len = 0;

    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    if (n > 0) {
        exe[n] = '\0';
        dir = dirname(exe);

        for (i = 0; i < rg_nelems(names); i++) {
            snprintf(path, size, "%s/%s", dir, names[i]);
            if (access(path, X_OK) == 0) {
                return path;
            }

            len += snprintf(tried + len, tlen - rg_min(len, tlen),
                            "%s\"%s\"", len ? ", " : "", path);
            len = rg_min(len, tlen);
        }
    }

    snprintf(path, size, "%s/bin/reagent-mock", RG_PREFIX);
    if (access(path, X_OK) == 0) {
        return path;
    }

    snprintf(tried + len, tlen - len, "%s\"%s\"", len ? ", " : "", path);

    return NULL;
}


/* a socket listening on a free port of 127.0.0.1; its port in *port */
static int
rg_run_mock_socket(int *port)
{
    int                 fd;
    socklen_t           len;
    struct sockaddr_in  sin;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        return -1;
    }

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = 0;
    len = sizeof(sin);

    if (bind(fd, (struct sockaddr *) &sin, sizeof(sin)) != 0
        || listen(fd, 1024) != 0
        || getsockname(fd, (struct sockaddr *) &sin, &len) != 0)
    {
        close(fd);
        return -1;
    }

    *port = ntohs(sin.sin_port);

    return fd;
}


/* In the child, before exec: only calls that are safe after a fork of a
 * process with threads. The mock gets the socket as descriptor 3,
 * /dev/null for its standard streams, a process group of its own (a
 * Ctrl-C at the terminal is ours to handle, not its) and SIGTERM when we
 * die. */
static void
rg_run_mock_child(const char *path, int sock, pid_t parent)
{
    int          null, err;
    char         fdarg[16];
    const char  *argv[] = { path, "--listen-fd", fdarg, "--quiet", NULL };

    snprintf(fdarg, sizeof(fdarg), "%d", RG_RUN_MOCK_FD);

    err = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 10);

    (void) setpgid(0, 0);
    (void) prctl(PR_SET_PDEATHSIG, SIGTERM);

    if (getppid() != parent) {
        _exit(1);                  /* we died already */
    }

    null = open("/dev/null", O_RDWR);
    if (null == -1 || dup2(null, 0) == -1 || dup2(null, 1) == -1
        || dup2(null, 2) == -1)
    {
        _exit(127);
    }

    /* dup2 clears close-on-exec, even when sock is 3 already */
    if (sock == RG_RUN_MOCK_FD) {
        if (fcntl(sock, F_SETFD, 0) == -1) {
            _exit(127);
        }

    } else if (dup2(sock, RG_RUN_MOCK_FD) == -1) {
        _exit(127);
    }

    execv(path, (char **) argv);

    if (err != -1) {
        dprintf(err, "reagent: cannot run the mock model \"%s\": %s\n",
                path, strerror(errno));
    }

    _exit(127);
}


rg_int_t
rg_run_mock_start(rg_engine_t *e, rg_run_mock_t *m)
{
    int          sock, port;
    char         path[PATH_MAX], tried[3 * PATH_MAX + 16], url[64];
    pid_t        pid, self;
    const char  *bin;

    m->pid = -1;

    bin = rg_run_mock_find(path, sizeof(path), tried, sizeof(tried));
    if (bin == NULL) {
        fprintf(stderr, "reagent: --mock needs the bundled mock model, and "
                "none of %s is there (make builds it as rg_mock, make "
                "install installs it as reagent-mock)\n", tried);
        return RG_ERROR;
    }

    sock = rg_run_mock_socket(&port);
    if (sock == -1) {
        fprintf(stderr, "reagent: --mock: cannot listen on 127.0.0.1: %s\n",
                strerror(errno));
        return RG_ERROR;
    }

    self = getpid();

    pid = fork();

    if (pid == -1) {
        fprintf(stderr, "reagent: --mock: cannot start \"%s\": %s\n", bin,
                strerror(errno));
        close(sock);
        return RG_ERROR;
    }

    if (pid == 0) {
        rg_run_mock_child(bin, sock, self);
    }

    /* only the mock listens: if it dies, a request is refused, not kept
     * waiting in a backlog nobody reads */
    close(sock);

    m->pid = pid;
    m->port = port;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);

    if (rg_llm_redirect(e, url) != RG_OK) {
        fprintf(stderr, "reagent: out of memory\n");
        rg_run_mock_stop(m);
        return RG_ERROR;
    }

    rg_log_error(RG_LOG_NOTICE, e->log, 0, "--mock: the bundled mock model "
                 "(%s) answers every llm on %s; its answers are canned, "
                 "not computed: it calls the first tool offered with the "
                 "example arguments of its schema, then echoes that tool's "
                 "result as the answer", bin, url);

    return RG_OK;
}


void
rg_run_mock_stop(rg_run_mock_t *m)
{
    int               i, status;
    pid_t             rc;
    struct timespec   ts;

    if (m->pid <= 0) {
        return;
    }

    (void) kill(m->pid, SIGTERM);

    /* the run is over: a short wait for the mock's exit blocks nobody */
    ts.tv_sec = 0;
    ts.tv_nsec = 10 * 1000 * 1000;

    for (i = 0; i < 300; i++) {
        rc = waitpid(m->pid, &status, WNOHANG);
        if (rc == m->pid || (rc == -1 && errno != EINTR)) {
            m->pid = -1;
            return;
        }
        nanosleep(&ts, NULL);
    }

    (void) kill(m->pid, SIGKILL);
    (void) waitpid(m->pid, &status, 0);
    m->pid = -1;
}
