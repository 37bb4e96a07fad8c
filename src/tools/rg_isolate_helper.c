/* rg_isolate_helper.c: what runs in the processes of an isolated module:
 * the zygote, forked from the worker before its threads, which only
 * clones helpers onto the sockets it is sent; and a helper, which serves
 * one call at a time on a reactor of its own, with a host table of its
 * own, in a copy of the worker where the module is loaded and configured.
 * Answers go back as frames (rg_isolate_frame.c); a helper that cannot
 * go on exits with RG_ISOLATE_EXIT_SETUP or _PROTOCOL, which the worker
 * reports. Nothing here runs in the worker. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_isolate_frame.h>
#include <rg_isolate_helper.h>
#include <rg_tool_host.h>
#include <rg_tool_host_args.h>
#include <jansson.h>
#include <msgpack.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <event2/event.h>
#include <event2/event_struct.h>


typedef struct rg_isolate_child_s   rg_isolate_child_t;


/* the helper's side */

typedef struct {
    rg_tool_call_t        call;      /* first: what the module sees */
    rg_isolate_child_t   *child;
    uint64_t              seq;
    json_t               *args;
    char                  error[128]; /* for host->error() */
    unsigned              answered:1;
    unsigned              in_start:1;
} rg_isolate_ccall_t;


struct rg_isolate_child_s {
    rg_module_t          *module;
    struct event_base    *base;
    struct event          rev;
    struct event          next_ev;   /* serves the next buffered request */
    rg_buf_t              in;
    rg_isolate_ccall_t   *call;      /* the one it runs, or NULL */
    rg_log_t              log;
};


static void rg_isolate_child_serve(rg_isolate_child_t *c);
static void rg_isolate_child_exit(rg_isolate_child_t *c, int status,
    const char *why) __attribute__((noreturn));


/* child: the host table ----------------------------------------------- */

static void
rg_isolate_child_exit(rg_isolate_child_t *c, int status, const char *why)
{
    rg_log_error(RG_LOG_ALERT, &c->log, 0, "isolated module \"%s\": helper "
                 "exits: %s", c->module->mod->name, why);
    _exit(status);
}


/* writes one answer frame; blocking is right here, in the helper */
static void
rg_isolate_child_send(rg_isolate_child_t *c, uint64_t seq, int ok,
    const char *s, size_t len)
{
    char             *p;
    size_t            left;
    ssize_t           n;
    msgpack_packer    pk;
    msgpack_sbuffer   sb;

    if (rg_isolate_frame_start(&sb, &pk, 3) != RG_OK
        || msgpack_pack_str_with_body(&pk, "seq", 3) != 0
        || msgpack_pack_uint64(&pk, seq) != 0
        || msgpack_pack_str_with_body(&pk, "ok", 2) != 0
        || (ok ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk)) != 0
        || rg_isolate_pack_str(&pk, "result", s, len) != 0
        || rg_isolate_frame_end(&sb) != RG_OK)
    {
        msgpack_sbuffer_destroy(&sb);
        rg_isolate_child_exit(c, RG_ISOLATE_EXIT_SETUP,
                              "cannot pack an answer (out of memory)");
    }

    p = sb.data;
    left = sb.size;

    while (left) {
        n = send(RG_ISOLATE_FD, p, left, MSG_NOSIGNAL);

        if (n > 0) {
            p += n;
            left -= n;
            continue;
        }

        if (n == -1 && errno == EINTR) {
            continue;
        }

        _exit(0);                      /* the worker is gone */
    }

    msgpack_sbuffer_destroy(&sb);
}


/* the call is over: free it and serve what waits */
static void
rg_isolate_child_end(rg_isolate_child_t *c)
{
    rg_isolate_ccall_t  *cc;

    cc = c->call;
    c->call = NULL;

    if (cc->args) {
        json_decref(cc->args);
    }

    free(cc);

    if (c->in.len) {
        event_active(&c->next_ev, EV_TIMEOUT, 1);
    }
}


static void
rg_isolate_child_answer(rg_isolate_ccall_t *cc, int ok, const char *s,
    size_t len)
{
    int   n;
    char  msg[256];

    if (cc->answered) {
        return;                        /* twice: dropped */
    }

    cc->answered = 1;

    if (len > RG_ISOLATE_RESULT_MAX) {
        n = snprintf(msg, sizeof(msg), "error: %s answered with more than "
                     "16m; ask for less", cc->call.tool->name);
        s = msg;
        len = rg_min((size_t) rg_max(n, 0), sizeof(msg) - 1);
        ok = 0;
    }

    rg_isolate_child_send(cc->child, cc->seq, ok, s, len);

    if (!cc->in_start) {
        rg_isolate_child_end(cc->child);
    }
}


static void
rg_isolate_host_log(rg_tool_host_t *host, int level, const char *fmt, ...)
{
    char                 buf[RG_LOG_MAX_LINE];
    va_list              args;
    rg_isolate_child_t  *c;

    c = host->data;

    va_start(args, fmt);
    level = rg_tool_log_line(buf, sizeof(buf), level, fmt, args);
    va_end(args);

    if (c->call) {
        rg_log_error(level, &c->log, 0, "isolated module \"%s\": %s, "
                     "session: \"%s\"", c->module->mod->name, buf,
                     c->call->call.session);
        return;
    }

    rg_log_error(level, &c->log, 0, "isolated module \"%s\": %s",
                 c->module->mod->name, buf);
}


static void
rg_isolate_host_done(rg_tool_call_t *call, const char *result, size_t len)
{
    rg_isolate_child_answer((rg_isolate_ccall_t *) call, 1,
                            result ? result : "", result ? len : 0);
}


/* as the worker's: the error text whole, trimmed with the results */
static void
rg_isolate_host_fail(rg_tool_call_t *call, const char *fmt, ...)
{
    va_list   args;
    rg_buf_t  b;

    va_start(args, fmt);
    rg_tool_fail_text(&b, call->tool->name, fmt, args);
    va_end(args);

    rg_isolate_child_answer((rg_isolate_ccall_t *) call, 0,
                            b.data ? b.data : "", b.len);
    rg_buf_free(&b);
}


static rg_tool_timer_t *
rg_isolate_host_timer_add(rg_tool_host_t *host, uint64_t msec,
    rg_tool_timer_pt cb, void *data)
{
    rg_isolate_child_t  *c;

    c = host->data;

    return rg_tool_timer_add(c->base, msec, cb, data);
}


/* what needs the engine (HTTP, child agents) is refused in a helper:
 * the call's error says which */
static int
rg_isolate_host_unavailable(rg_tool_call_t *call, const char *what)
{
    rg_isolate_ccall_t  *cc;

    cc = (rg_isolate_ccall_t *) call;

    snprintf(cc->error, sizeof(cc->error),
             "%s is not available in an isolated module", what);

    return -1;
}


static int
rg_isolate_host_http_get(rg_tool_call_t *call, const char *url,
    size_t max_bytes, uint64_t timeout_ms, rg_tool_http_pt cb, void *data)
{
    return rg_isolate_host_unavailable(call, "http_get");
}


static void
rg_isolate_host_http_cancel(rg_tool_call_t *call)
{
}


static int
rg_isolate_host_agent_run(rg_tool_call_t *call, const char *agent,
    const char *input, size_t len, rg_tool_agent_pt cb, void *data)
{
    return rg_isolate_host_unavailable(call, "agent_run");
}


static void
rg_isolate_host_agent_cancel(rg_tool_call_t *call)
{
}


static const char *
rg_isolate_host_error(rg_tool_call_t *call)
{
    return ((rg_isolate_ccall_t *) call)->error;
}


static void
rg_isolate_child_host(rg_tool_host_t *host, rg_isolate_child_t *c)
{
    memset(host, 0, sizeof(rg_tool_host_t));

    host->abi_version = RG_TOOL_ABI_VERSION;
    host->size = sizeof(rg_tool_host_t);
    host->log = rg_isolate_host_log;
    host->done = rg_isolate_host_done;
    host->fail = rg_isolate_host_fail;
    rg_tool_host_args_set(host);
    host->timer_add = rg_isolate_host_timer_add;
    host->timer_del = rg_tool_timer_del;
    host->data = c;
    host->http_get = rg_isolate_host_http_get;
    host->http_cancel = rg_isolate_host_http_cancel;
    host->agent_run = rg_isolate_host_agent_run;
    host->agent_cancel = rg_isolate_host_agent_cancel;
    host->error = rg_isolate_host_error;
}


/* child: serving calls ------------------------------------------------ */

/* reads one request; answers it at once when it cannot run. Returns the
 * call to run, or NULL. */
static rg_isolate_ccall_t *
rg_isolate_child_request(rg_isolate_child_t *c, const char *p, size_t len)
{
    int                    n;
    char                   msg[512], *s;
    size_t                 slen[4];
    uint32_t               j;
    uint64_t               seq;
    json_t                *args;
    const char            *str[4];
    json_error_t           jerr;
    msgpack_unpacked       u;
    const rg_tool_t       *t;
    rg_isolate_ccall_t    *cc;
    const msgpack_object  *v[5];

    static const char                 *names[5] = {
        "seq", "tool", "id", "session", "args"
    };
    static const msgpack_object_type   types[5] = {
        MSGPACK_OBJECT_POSITIVE_INTEGER, MSGPACK_OBJECT_STR,
        MSGPACK_OBJECT_STR, MSGPACK_OBJECT_STR, MSGPACK_OBJECT_STR
    };

    msgpack_unpacked_init(&u);

    if (rg_isolate_frame_read(&u, p, len, 5, names, types, v) != RG_OK
        || v[0]->via.u64 == 0)
    {
        goto malformed;
    }

    seq = v[0]->via.u64;

    for (j = 0; j < 4; j++) {
        str[j] = v[j + 1]->via.str.ptr;
        slen[j] = v[j + 1]->via.str.size;
    }

    for (t = c->module->mod->tools; t->name; t++) {
        if (strlen(t->name) == slen[0]
            && memcmp(t->name, str[0], slen[0]) == 0)
        {
            break;
        }
    }

    if (t->name == NULL) {
        n = snprintf(msg, sizeof(msg), "error: module \"%s\" has no tool "
                     "\"%.*s\"", c->module->mod->name,
                     (int) rg_min(slen[0], 64), str[0]);
        goto answer;
    }

    args = json_loadb(str[3], slen[3], JSON_REJECT_DUPLICATES, &jerr);
    if (args == NULL) {
        n = snprintf(msg, sizeof(msg), "error: arguments for %s are not "
                     "valid JSON: %s; send one JSON object", t->name,
                     jerr.text);
        goto answer;
    }

    cc = calloc(1, sizeof(rg_isolate_ccall_t) + slen[1] + slen[2] + slen[3]
                   + 3);
    if (cc == NULL) {
        json_decref(args);
        n = snprintf(msg, sizeof(msg), "error: %s did not run (out of "
                     "memory); try again later", t->name);
        goto answer;
    }

    /* the module's strings, NUL-ended, after the call */
    s = (char *) (cc + 1);

    memcpy(s, str[1], slen[1]);
    cc->call.id = s;
    s += slen[1] + 1;

    memcpy(s, str[2], slen[2]);
    cc->call.session = s;
    s += slen[2] + 1;

    memcpy(s, str[3], slen[3]);
    cc->call.args = s;
    cc->call.args_len = slen[3];

    cc->call.tool = t;
    cc->call.host = &c->module->host;
    cc->call.conf = c->module->conf;
    cc->child = c;
    cc->seq = seq;
    cc->args = args;
    cc->call.host_args = args;

    msgpack_unpacked_destroy(&u);

    return cc;

answer:

    msgpack_unpacked_destroy(&u);
    rg_isolate_child_send(c, seq, 0, msg,
                          rg_min((size_t) rg_max(n, 0), sizeof(msg) - 1));
    return NULL;

malformed:

    msgpack_unpacked_destroy(&u);
    rg_isolate_child_exit(c, RG_ISOLATE_EXIT_PROTOCOL,
                          "the worker sent a malformed request");
    return NULL;
}


static void
rg_isolate_child_run(rg_isolate_child_t *c, rg_isolate_ccall_t *cc)
{
    int   rc, n;
    char  msg[256];

    c->call = cc;

    /* a RG_TOOL_BLOCKING tool simply blocks this process; while in_start
     * is set, an answer leaves the call to this function to end */
    cc->in_start = 1;

    rc = cc->call.tool->start(&cc->call);

    if (!cc->answered && rc != RG_TOOL_AGAIN) {
        n = snprintf(msg, sizeof(msg), "error: %s %s", cc->call.tool->name,
                     rc == RG_TOOL_OK ? "returned without an answer"
                                      : "failed without saying why");
        rg_isolate_child_answer(cc, 0, msg,
                                rg_min((size_t) rg_max(n, 0),
                                       sizeof(msg) - 1));
    }

    cc->in_start = 0;

    if (cc->answered) {
        rg_isolate_child_end(c);
    }

    /* else done() or fail() follows, from the helper's loop */
}


/* starts the next complete request, one at a time */
static void
rg_isolate_child_serve(rg_isolate_child_t *c)
{
    size_t               len;
    rg_isolate_ccall_t  *cc;

    while (c->call == NULL && c->in.len >= 4) {
        len = rg_isolate_frame_len(c->in.data);

        if (len == 0 || len > RG_ISOLATE_FRAME_MAX) {
            rg_isolate_child_exit(c, RG_ISOLATE_EXIT_PROTOCOL,
                                  "the worker sent a frame too large");
        }

        if (c->in.len - 4 < len) {
            return;                    /* the rest follows */
        }

        cc = rg_isolate_child_request(c, c->in.data + 4, len);

        /* the call owns copies: the frame can go */
        memmove(c->in.data, c->in.data + 4 + len, c->in.len - 4 - len);
        c->in.len -= 4 + len;

        if (c->in.len == 0 && c->in.cap > RG_ISOLATE_KEEP) {
            rg_buf_free(&c->in);
        }

        if (cc) {
            rg_isolate_child_run(c, cc);
        }
    }
}


static void
rg_isolate_child_next_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_isolate_child_serve(arg);
}


static void
rg_isolate_child_read_handler(evutil_socket_t fd, short what, void *arg)
{
    ssize_t              n;
    rg_isolate_child_t  *c;

    c = arg;

    if (rg_buf_reserve(&c->in, RG_ISOLATE_READ_CHUNK) != RG_OK) {
        rg_isolate_child_exit(c, RG_ISOLATE_EXIT_SETUP, "out of memory");
    }

    n = recv(fd, c->in.data + c->in.len, c->in.cap - c->in.len - 1,
             MSG_DONTWAIT);

    if (n == 0) {
        _exit(0);                      /* the worker let us go */
    }

    if (n == -1) {
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
            return;
        }
        _exit(0);
    }

    c->in.len += n;

    rg_isolate_child_serve(c);
}


/* The helper: runs in the forked process and never returns. It keeps
 * nothing of the worker but memory: no signal handler, no descriptor
 * besides 0-2 and its socket, no event_base. */
void
rg_isolate_helper_main(rg_module_t *m, rg_uint_t log_level, int fd,
    int other, pid_t parent)
{
    int                  i, null;
    sigset_t             set;
    struct sigaction     sa;
    rg_isolate_child_t   c;

    /* terminal signals are for the worker, not for its helpers */
    (void) setpgid(0, 0);

    if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != parent) {
        _exit(RG_ISOLATE_EXIT_SETUP);  /* the worker is gone already */
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);

    for (i = 1; i < NSIG; i++) {
        if (i != SIGKILL && i != SIGSTOP) {
            (void) sigaction(i, &sa, NULL);    /* EINVAL for libc's own */
        }
    }

    sigemptyset(&set);
    (void) sigprocmask(SIG_SETMASK, &set, NULL);

    if (fd != RG_ISOLATE_FD && dup2(fd, RG_ISOLATE_FD) == -1) {
        _exit(RG_ISOLATE_EXIT_SETUP);
    }

    /* a worker started without 0-2 got its socketpair there */
    null = -1;
    for (i = 0; i < RG_ISOLATE_FD; i++) {
        if (i == fd || i == other) {
            if (null == -1) {
                null = open("/dev/null", O_RDWR);
            }
            if (null == -1 || (null != i && dup2(null, i) == -1)) {
                _exit(RG_ISOLATE_EXIT_SETUP);
            }
        }
    }

    closefrom(RG_ISOLATE_FD + 1);

    memset(&c, 0, sizeof(c));
    c.module = m;
    c.log.log_level = log_level;
    c.log.fd = STDERR_FILENO;

    c.base = event_base_new();
    if (c.base == NULL) {
        rg_isolate_child_exit(&c, RG_ISOLATE_EXIT_SETUP,
                              "event_base_new() failed");
    }

    /* the module keeps pointers to its host table: this process answers
     * them now */
    rg_isolate_child_host(&c.module->host, &c);

    if (event_assign(&c.rev, c.base, RG_ISOLATE_FD, EV_READ | EV_PERSIST,
                     rg_isolate_child_read_handler, &c) != 0
        || event_assign(&c.next_ev, c.base, -1, 0,
                        rg_isolate_child_next_handler, &c) != 0
        || event_add(&c.rev, NULL) != 0)
    {
        rg_isolate_child_exit(&c, RG_ISOLATE_EXIT_SETUP,
                              "cannot watch its socket");
    }

    rg_isolate_child_send(&c, 0, 1, "", 0);     /* hello */

    event_base_dispatch(c.base);

    _exit(0);
}


/* The zygote: forked from the worker before its threads, it only ever
 * waits for a socket and clones a helper onto it. It keeps nothing of
 * the worker but memory and stderr. */
void
rg_isolate_zygote_main(rg_module_t *m, rg_uint_t log_level,
    const char *comm, int fd, pid_t parent)
{
    int                  i, orig, null, onull, hfd, ans;
    char                 op, cbuf[CMSG_SPACE(sizeof(int))];
    long                 pid;
    ssize_t              n;
    sigset_t             set;
    struct iovec         iov;
    struct msghdr        msg;
    struct cmsghdr      *cm;
    struct sigaction     sa;

    /* terminal signals are for the worker; it goes with the worker */
    (void) setpgid(0, 0);

    if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != parent) {
        _exit(RG_ISOLATE_EXIT_SETUP);
    }

    (void) prctl(PR_SET_NAME, RG_ISOLATE_ZYGOTE_NAME, 0, 0, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);

    for (i = 1; i < NSIG; i++) {
        if (i != SIGKILL && i != SIGSTOP) {
            (void) sigaction(i, &sa, NULL);
        }
    }

    sigemptyset(&set);
    (void) sigprocmask(SIG_SETMASK, &set, NULL);

    /* stdin and stdout are /dev/null; stderr stays, unless it is closed
     * or one of these descriptors (a worker started without 0-2) */
    orig = fd;
    fd = fcntl(orig, F_DUPFD_CLOEXEC, RG_ISOLATE_ZYGOTE_FD + 1);
    onull = open("/dev/null", O_RDWR | O_CLOEXEC);
    null = onull == -1 ? -1
                       : fcntl(onull, F_DUPFD_CLOEXEC,
                               RG_ISOLATE_ZYGOTE_FD + 1);

    if (fd == -1 || null == -1
        || dup2(null, STDIN_FILENO) == -1 || dup2(null, STDOUT_FILENO) == -1
        || ((orig == STDERR_FILENO || onull == STDERR_FILENO
             || fcntl(STDERR_FILENO, F_GETFD) == -1)
            && dup2(null, STDERR_FILENO) == -1)
        || dup2(fd, RG_ISOLATE_ZYGOTE_FD) == -1)
    {
        _exit(RG_ISOLATE_EXIT_SETUP);
    }

    closefrom(RG_ISOLATE_ZYGOTE_FD + 1);

    for ( ;; ) {
        iov.iov_base = &op;
        iov.iov_len = 1;

        memset(&msg, 0, sizeof(msg));
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf;
        msg.msg_controllen = sizeof(cbuf);

        n = recvmsg(RG_ISOLATE_ZYGOTE_FD, &msg, MSG_CMSG_CLOEXEC);

        if (n == -1 && errno == EINTR) {
            continue;
        }

        if (n <= 0) {
            _exit(0);                  /* the worker closed its end */
        }

        cm = CMSG_FIRSTHDR(&msg);
        if (op != 's' || cm == NULL || cm->cmsg_level != SOL_SOCKET
            || cm->cmsg_type != SCM_RIGHTS
            || cm->cmsg_len != CMSG_LEN(sizeof(int)))
        {
            _exit(RG_ISOLATE_EXIT_PROTOCOL);
        }

        memcpy(&hfd, CMSG_DATA(cm), sizeof(int));

        /* The helper is the worker's child, so that the worker reaps and
         * kills it as before. A raw clone: this process has one thread
         * and holds no lock, and the child asks the kernel for its pid
         * and tid (getpid, raise) */
        pid = syscall(SYS_clone, (unsigned long) CLONE_PARENT, 0UL, 0UL,
                      0UL, 0UL);

        if (pid == 0) {
            if (comm[0]) {
                (void) prctl(PR_SET_NAME, comm, 0, 0, 0);
            }
            rg_isolate_helper_main(m, log_level, hfd, -1, parent);
        }

        ans = pid > 0 ? (int) pid : -errno;
        close(hfd);

        do {
            n = send(RG_ISOLATE_ZYGOTE_FD, &ans, sizeof(ans), MSG_NOSIGNAL);
        } while (n == -1 && errno == EINTR);

        if (n != (ssize_t) sizeof(ans)) {
            _exit(0);
        }
    }
}
