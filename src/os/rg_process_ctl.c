/* rg_process_ctl.c: what the command line does to a running master:
 * `reagent -s reload|reopen|stop|quit` (a signal to the pid in its pid
 * file), `reagent status` (its status socket), and the systemd notify
 * datagram the master sends itself. These run in a short-lived command
 * process, so they may block; rg_notify() never does. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_process.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <poll.h>


static const struct {
    const char  *name;
    int          sig;
} rg_process_signals[] = {
    { "reload", SIGHUP },
    { "reopen", SIGUSR1 },
    { "stop",   SIGTERM },
    { "quit",   SIGQUIT },
};


static pid_t
rg_process_read_pid(const char *pid_file)
{
    int      fd;
    char     buf[32], *end;
    long     pid;
    ssize_t  n;

    fd = open(pid_file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd == -1) {
        fprintf(stderr, "reagent: cannot read the pid file \"%s\": %s (is "
                "the master running?)\n", pid_file, strerror(errno));
        return -1;
    }

    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);

    if (n <= 0) {
        fprintf(stderr, "reagent: the pid file \"%s\" is empty\n", pid_file);
        return -1;
    }

    buf[n] = '\0';
    pid = strtol(buf, &end, 10);

    if (pid <= 1 || (*end != '\n' && *end != '\0')) {
        fprintf(stderr, "reagent: the pid file \"%s\" holds no pid\n",
                pid_file);
        return -1;
    }

    return (pid_t) pid;
}


int
rg_process_signal(const char *pid_file, const char *name)
{
    pid_t      pid;
    rg_uint_t  i;

    for (i = 0; i < rg_nelems(rg_process_signals); i++) {
        if (strcmp(name, rg_process_signals[i].name) == 0) {
            break;
        }
    }

    if (i == rg_nelems(rg_process_signals)) {
        fprintf(stderr, "reagent: -s expects reload, reopen, stop or quit, "
                "not \"%s\"\n", name);
        return 1;
    }

    if (pid_file == NULL) {
        fprintf(stderr, "reagent: -s needs a pid file: set \"pid FILE;\" in "
                "the configuration\n");
        return 1;
    }

    pid = rg_process_read_pid(pid_file);
    if (pid == -1) {
        return 1;
    }

    if (kill(pid, rg_process_signals[i].sig) == -1) {
        fprintf(stderr, "reagent: cannot signal the master (pid %d from "
                "\"%s\"): %s%s\n", (int) pid, pid_file, strerror(errno),
                errno == ESRCH ? "; the pid file is stale" : "");
        return 1;
    }

    return 0;
}


void
rg_process_status_path(const char *pid_file, char *buf, size_t size)
{
    int  n;

    n = snprintf(buf, size, "%s.sock", pid_file);

    if (n < 0 || (size_t) n >= size
        || (size_t) n >= sizeof(((struct sockaddr_un *) 0)->sun_path))
    {
        buf[0] = '\0';
    }
}


int
rg_process_status(const char *pid_file, int fd)
{
    int                 s;
    char                path[108], buf[4096];
    ssize_t             n;
    struct pollfd       pfd;
    struct sockaddr_un  sun;

    if (pid_file == NULL) {
        fprintf(stderr, "reagent: status needs a pid file: set \"pid "
                "FILE;\" in the configuration\n");
        return 1;
    }

    rg_process_status_path(pid_file, path, sizeof(path));
    if (path[0] == '\0') {
        fprintf(stderr, "reagent: the pid file's path is too long for a "
                "status socket\n");
        return 1;
    }

    s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s == -1) {
        return 1;
    }

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);

    if (connect(s, (struct sockaddr *) &sun, sizeof(sun)) == -1) {
        fprintf(stderr, "reagent: cannot reach the master's status socket "
                "\"%s\": %s (is the master running?)\n", path,
                strerror(errno));
        close(s);
        return 1;
    }

    /* the master answers at once; never wait for it forever */
    pfd.fd = s;
    pfd.events = POLLIN;

    for ( ;; ) {
        if (poll(&pfd, 1, 5000) <= 0) {
            fprintf(stderr, "reagent: the master did not answer\n");
            close(s);
            return 1;
        }

        n = read(s, buf, sizeof(buf));
        if (n <= 0) {
            break;
        }

        if (write(fd, buf, n) != n) {
            close(s);
            return 1;
        }
    }

    close(s);

    return 0;
}


void
rg_notify(const char *state)
{
    int                 fd;
    size_t              len;
    const char         *path;
    struct sockaddr_un  sun;

    path = getenv("NOTIFY_SOCKET");
    if (path == NULL || path[0] == '\0') {
        return;
    }

    len = strlen(path);
    if (len >= sizeof(sun.sun_path) || (path[0] != '/' && path[0] != '@')) {
        return;
    }

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    memcpy(sun.sun_path, path, len);

    /* an abstract socket: "@name" stands for "\0name" */
    if (sun.sun_path[0] == '@') {
        sun.sun_path[0] = '\0';
    }

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd == -1) {
        return;
    }

    (void) sendto(fd, state, strlen(state), MSG_NOSIGNAL,
                  (struct sockaddr *) &sun,
                  offsetof(struct sockaddr_un, sun_path) + len);
    close(fd);
}
