/* rg_isolate.c: helper processes for the tool modules loaded `isolated`.
 * Owns, per module, a zygote, the helpers it starts, their socketpairs,
 * the FIFO of calls waiting for a free helper and the helpers that died
 * and are not reaped yet; and, in the helper, its own event loop and host
 * table.
 *
 * The zygote is forked from the worker when the isolate is created, once
 * the module is configured and before the engine starts any thread, so it
 * holds no lock another thread took. It starts every helper: the worker
 * sends it one end of a new socketpair, it clones itself with CLONE_PARENT
 * (the helper is the worker's child, which reaps and signals it as its
 * own) and answers the helper's pid. A helper thus runs the module's code
 * without exec in a copy of a process that never had a thread. Zygote
 * and helpers read /dev/null as stdin and write stdout there; stderr is
 * the worker's (its log). Frames are a 4-byte big-endian length and one
 * msgpack map:
 *
 *     request  {"seq": uint, "tool": str, "id": str, "session": str,
 *               "args": str (JSON text)}
 *     answer   {"seq": uint, "ok": bool, "result": str}
 *
 * A new helper says hello with the answer of seq 0 before it gets a call,
 * then runs one call at a time. A helper that dies fails its call with one
 * line for the model and is respawned (with a backoff when helpers die
 * without a call); a call that is abandoned has its helper killed.
 *
 * Does not time calls out (rg_tools.c does and then calls
 * rg_isolate_abort), never reaps a process it did not fork, and never
 * blocks the worker's reactor: only rg_isolate_destroy waits, for helpers
 * it has just killed. A call is an rg_isolate_call_t its caller embeds:
 * this file knows nothing of turns or runs. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_isolate.h>
#include <rg_tool_host_args.h>
#include <jansson.h>
#include <msgpack.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <event2/event.h>
#include <event2/event_struct.h>


#define RG_ISOLATE_FD            3          /* the helper's socket */
#define RG_ISOLATE_FRAME_MAX     (16 * 1024 * 1024)
#define RG_ISOLATE_RESULT_MAX    (RG_ISOLATE_FRAME_MAX - 64)
#define RG_ISOLATE_READ_CHUNK    65536
#define RG_ISOLATE_KEEP          (256 * 1024) /* larger idle buffers go */

#define RG_ISOLATE_HELLO_TIMEOUT 10000      /* ms from fork to hello */
#define RG_ISOLATE_ZYGOTE_FD     3          /* the zygote's socket */
#define RG_ISOLATE_ZYGOTE_WAIT   5000       /* ms for the zygote's answer */
#define RG_ISOLATE_ZYGOTE_NAME   "rg-zygote"  /* its comm, in ps */
#define RG_ISOLATE_REAP_FIRST    1          /* ms, doubling... */
#define RG_ISOLATE_REAP_MAX      100        /* ...up to this */
#define RG_ISOLATE_KILL_AFTER    2000       /* ms from EOF to SIGKILL */
#define RG_ISOLATE_BACKOFF_MIN   50         /* ms, doubling... */
#define RG_ISOLATE_BACKOFF_MAX   1000       /* ...up to this */
#define RG_ISOLATE_CALM          10000      /* ms that forgive failures */

/* how a helper ends when it cannot go on */
#define RG_ISOLATE_EXIT_SETUP    70
#define RG_ISOLATE_EXIT_PROTOCOL 71


typedef struct rg_isolate_helper_s  rg_isolate_helper_t;
typedef struct rg_isolate_corpse_s  rg_isolate_corpse_t;
typedef struct rg_isolate_child_s   rg_isolate_child_t;


/* a helper that died or was killed, not reaped yet */
struct rg_isolate_corpse_s {
    rg_isolate_corpse_t  *next;
    pid_t                 pid;
    rg_isolate_call_t    *run;       /* answered once reaped, or NULL */
    rg_msec_t             since;
    unsigned              killed:1;  /* by us: nothing left to report */
    unsigned              signalled:1; /* SIGKILL sent */
};


struct rg_isolate_helper_s {
    rg_isolate_t         *iso;
    pid_t                 pid;       /* 0: no process in this slot */
    int                   fd;
    struct event          rev;
    struct event          wev;
    struct event          hello_ev;  /* deadline for the hello */
    rg_buf_t              in;
    rg_buf_t              out;
    size_t                sent;      /* bytes of out written */
    rg_isolate_call_t    *run;       /* the call it runs, or NULL */
    uint64_t              seq;
    rg_isolate_corpse_t  *corpse;    /* allocated ahead: dying never fails */
    unsigned              ready:1;   /* it said hello */
    unsigned              broken:1;  /* a write failed: it was killed */
};


struct rg_isolate_s {
    rg_module_t          *module;
    struct event_base    *base;
    rg_log_t             *log;
    rg_isolate_helper_t  *helpers;
    rg_uint_t             nhelpers;
    uint64_t              seq;

    rg_isolate_call_t    *queue;     /* waiting for a helper, in order */
    rg_isolate_call_t   **queue_tail;
    rg_isolate_call_t    *failed;    /* to fail from answer_ev */
    rg_isolate_corpse_t  *corpses;

    struct event          respawn_ev;
    struct event          reap_ev;
    struct event          answer_ev;
    rg_msec_t             respawn_at;
    rg_msec_t             reap_delay;
    rg_uint_t             failures;  /* helpers lost without a call */
    rg_msec_t             failed_at;

    pid_t                 zygote;    /* 0: none (it died, or never was) */
    int                   zfd;
    char                  comm[16];  /* the worker's name, for helpers */
};


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


typedef struct {
    struct event          ev;
    rg_tool_timer_pt      cb;
    void                 *data;
} rg_isolate_timer_t;


static rg_int_t rg_isolate_spawn(rg_isolate_t *iso, rg_isolate_helper_t *h);
static void rg_isolate_dispatch(rg_isolate_t *iso);
static void rg_isolate_reap(rg_isolate_t *iso);
static void rg_isolate_child_main(rg_isolate_t *iso, int fd, int other,
    pid_t parent) __attribute__((noreturn));
static void rg_isolate_zygote_main(rg_isolate_t *iso, int fd, pid_t parent)
    __attribute__((noreturn));
static void rg_isolate_child_serve(rg_isolate_child_t *c);
static void rg_isolate_child_exit(rg_isolate_child_t *c, int status,
    const char *why) __attribute__((noreturn));


/* frames -------------------------------------------------------------- */

static rg_int_t
rg_isolate_frame_start(msgpack_sbuffer *sb, msgpack_packer *pk, size_t n)
{
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(pk, sb, msgpack_sbuffer_write);

    /* room for the length, filled in by rg_isolate_frame_end() */
    if (msgpack_sbuffer_write(sb, "\0\0\0\0", 4) != 0
        || msgpack_pack_map(pk, n) != 0)
    {
        return RG_ERROR;
    }

    return RG_OK;
}


static rg_int_t
rg_isolate_frame_end(msgpack_sbuffer *sb)
{
    size_t          len;
    unsigned char  *p;

    len = sb->size - 4;
    if (len > RG_ISOLATE_FRAME_MAX) {
        return RG_ERROR;
    }

    p = (unsigned char *) sb->data;
    p[0] = (unsigned char) (len >> 24);
    p[1] = (unsigned char) (len >> 16);
    p[2] = (unsigned char) (len >> 8);
    p[3] = (unsigned char) len;

    return RG_OK;
}


static size_t
rg_isolate_frame_len(const char *p)
{
    const unsigned char  *u;

    u = (const unsigned char *) p;

    return ((size_t) u[0] << 24) | ((size_t) u[1] << 16)
           | ((size_t) u[2] << 8) | (size_t) u[3];
}


static int
rg_isolate_pack_str(msgpack_packer *pk, const char *key, const char *s,
    size_t len)
{
    if (msgpack_pack_str_with_body(pk, key, strlen(key)) != 0
        || msgpack_pack_str_with_body(pk, s, len) != 0)
    {
        return -1;
    }

    return 0;
}


static int
rg_isolate_key(const msgpack_object *k, const char *name)
{
    size_t  len;

    len = strlen(name);

    return k->type == MSGPACK_OBJECT_STR && k->via.str.size == len
           && memcmp(k->via.str.ptr, name, len) == 0;
}


/* parent: the helpers ------------------------------------------------- */

static void
rg_isolate_signal(pid_t pid)
{
    /* the helper leads its own process group: take what it forked too */
    (void) kill(-pid, SIGKILL);
    (void) kill(pid, SIGKILL);
}


static void
rg_isolate_close(rg_isolate_helper_t *h)
{
    event_del(&h->rev);
    event_del(&h->wev);
    event_del(&h->hello_ev);

    if (h->fd != -1) {
        close(h->fd);
        h->fd = -1;
    }

    rg_buf_free(&h->in);
    rg_buf_free(&h->out);

    h->sent = 0;
    h->pid = 0;
    h->run = NULL;
    h->ready = 0;
    h->broken = 0;
}


/* a helper was lost without a call: the next respawns wait longer */
static void
rg_isolate_failure(rg_isolate_t *iso)
{
    rg_msec_t  now;

    now = rg_monotonic_msec();

    if (now - iso->failed_at > RG_ISOLATE_CALM) {
        iso->failures = 0;
    }

    iso->failures++;
    iso->failed_at = now;
}


static void
rg_isolate_respawn_later(rg_isolate_t *iso)
{
    rg_msec_t       delay, at;
    rg_uint_t       shift;
    struct timeval  tv;

    delay = 0;

    if (iso->failures) {
        shift = rg_min(iso->failures - 1, 5);
        delay = rg_min((rg_msec_t) RG_ISOLATE_BACKOFF_MIN << shift,
                       RG_ISOLATE_BACKOFF_MAX);
    }

    at = rg_monotonic_msec() + delay;

    if (evtimer_pending(&iso->respawn_ev, NULL) && iso->respawn_at <= at) {
        return;                        /* an earlier respawn is due */
    }

    iso->respawn_at = at;

    tv.tv_sec = delay / 1000;
    tv.tv_usec = (delay % 1000) * 1000;

    if (evtimer_add(&iso->respawn_ev, &tv) != 0) {
        rg_log_error(RG_LOG_ALERT, iso->log, 0, "isolated module \"%s\": "
                     "evtimer_add() failed", iso->module->mod->name);
    }
}


static void
rg_isolate_reap_later(rg_isolate_t *iso)
{
    struct timeval  tv;

    tv.tv_sec = iso->reap_delay / 1000;
    tv.tv_usec = (iso->reap_delay % 1000) * 1000;

    if (evtimer_add(&iso->reap_ev, &tv) != 0) {
        rg_log_error(RG_LOG_ALERT, iso->log, 0, "isolated module \"%s\": "
                     "evtimer_add() failed", iso->module->mod->name);
    }

    iso->reap_delay = rg_min(iso->reap_delay * 2, RG_ISOLATE_REAP_MAX);
}


static void
rg_isolate_bury_push(rg_isolate_t *iso, rg_isolate_helper_t *h, int killed)
{
    rg_isolate_corpse_t  *c;

    c = h->corpse;
    h->corpse = NULL;

    c->pid = h->pid;
    c->run = killed ? NULL : h->run;
    c->since = rg_monotonic_msec();
    c->killed = killed;
    c->signalled = killed;

    c->next = iso->corpses;
    iso->corpses = c;

    iso->reap_delay = RG_ISOLATE_REAP_FIRST;
}


/* kills h, forgets its call and respawns it; answers nothing */
static void
rg_isolate_kill(rg_isolate_helper_t *h)
{
    rg_isolate_t  *iso;

    iso = h->iso;

    rg_isolate_signal(h->pid);
    rg_isolate_bury_push(iso, h, 1);
    rg_isolate_close(h);

    rg_isolate_reap_later(iso);
    rg_isolate_respawn_later(iso);
}


/* the helper's socket ended: it died; its call is answered when it is
 * reaped, which says how it died */
static void
rg_isolate_lost(rg_isolate_helper_t *h, int err)
{
    rg_uint_t      idle;
    rg_isolate_t  *iso;

    iso = h->iso;
    idle = h->run == NULL;

    if (err) {
        rg_log_error(RG_LOG_ERR, iso->log, err, "isolated module \"%s\": "
                     "recv() from helper %d failed", iso->module->mod->name,
                     (int) h->pid);
    }

    rg_isolate_bury_push(iso, h, 0);
    rg_isolate_close(h);

    if (idle) {
        rg_isolate_failure(iso);
    }

    rg_isolate_respawn_later(iso);
    rg_isolate_reap(iso);
}


/* the helper sent what it must not: kill it, fail its call */
static void
rg_isolate_malformed(rg_isolate_helper_t *h, const char *why)
{
    int                 n;
    char                text[256];
    rg_isolate_t       *iso;
    rg_isolate_call_t  *run;

    iso = h->iso;
    run = h->run;

    rg_log_error(RG_LOG_ERR, iso->log, 0, "isolated module \"%s\": helper %d "
                 "sent %s, killing it; respawning", iso->module->mod->name,
                 (int) h->pid, why);

    if (!h->ready) {
        rg_isolate_failure(iso);
    }

    rg_isolate_kill(h);

    if (run) {
        n = snprintf(text, sizeof(text), "error: %s sent a malformed answer; "
                     "the call did not complete", run->tool);
        run->done(run, 1, text,
                               rg_min((size_t) rg_max(n, 0),
                                      sizeof(text) - 1));
    }
}


/* reports a reaped helper: st is its wait status, or -1 if unknown */
static void
rg_isolate_bury(rg_isolate_t *iso, rg_isolate_corpse_t *c, int st)
{
    int          n, sig;
    char         text[256];
    const char  *name, *tool;

    name = iso->module->mod->name;
    tool = c->run ? c->run->tool : NULL;

    if (c->killed) {
        rg_log_debug(iso->log, "isolated module \"%s\": helper %d reaped",
                     name, (int) c->pid);
        return;
    }

    if (st != -1 && WIFSIGNALED(st)) {
        sig = WTERMSIG(st);
        rg_log_error(RG_LOG_ERR, iso->log, 0, "isolated module \"%s\": "
                     "helper %d crashed (signal %d), respawning", name,
                     (int) c->pid, sig);
        n = snprintf(text, sizeof(text), "error: %s crashed (signal %d: %s); "
                     "the call did not complete", tool ? tool : "",
                     sig, strsignal(sig));

    } else if (st != -1 && WIFEXITED(st)) {
        rg_log_error(RG_LOG_ERR, iso->log, 0, "isolated module \"%s\": "
                     "helper %d exited with status %d, respawning", name,
                     (int) c->pid, WEXITSTATUS(st));
        n = snprintf(text, sizeof(text), "error: %s exited with status %d; "
                     "the call did not complete", tool ? tool : "",
                     WEXITSTATUS(st));

    } else {
        rg_log_error(RG_LOG_ERR, iso->log, 0, "isolated module \"%s\": "
                     "helper %d ended, respawning", name, (int) c->pid);
        n = snprintf(text, sizeof(text), "error: %s ended unexpectedly; "
                     "the call did not complete", tool ? tool : "");
    }

    if (c->run) {
        c->run->done(c->run, 1, text,
                               rg_min((size_t) rg_max(n, 0),
                                      sizeof(text) - 1));
    }
}


/* reaps the dead helpers that have exited; never waits */
static void
rg_isolate_reap(rg_isolate_t *iso)
{
    int                    st;
    pid_t                  r;
    rg_msec_t              now;
    rg_isolate_corpse_t  **cp, *c;

    now = rg_monotonic_msec();
    cp = &iso->corpses;

    while (*cp) {
        c = *cp;

        r = waitpid(c->pid, &st, WNOHANG);

        if (r == 0 || (r == -1 && errno == EINTR)) {

            /* its socket closed, but it lives on: make sure it ends */
            if (!c->signalled && now - c->since >= RG_ISOLATE_KILL_AFTER) {
                rg_log_error(RG_LOG_WARN, iso->log, 0, "isolated module "
                             "\"%s\": helper %d closed its socket but did "
                             "not exit, killing it", iso->module->mod->name,
                             (int) c->pid);
                rg_isolate_signal(c->pid);
                c->signalled = 1;
            }

            cp = &c->next;
            continue;
        }

        *cp = c->next;

        if (r == -1 && errno != ECHILD) {
            rg_log_error(RG_LOG_ERR, iso->log, errno, "isolated module "
                         "\"%s\": waitpid(%d) failed", iso->module->mod->name,
                         (int) c->pid);
        }

        rg_isolate_bury(iso, c, r == c->pid ? st : -1);
        free(c);
    }

    if (iso->corpses) {
        rg_isolate_reap_later(iso);
    }
}


static void
rg_isolate_reap_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_isolate_reap(arg);
}


static void
rg_isolate_respawn_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_uint_t             i;
    rg_isolate_t         *iso;
    rg_isolate_helper_t  *h;

    iso = arg;

    for (i = 0; i < iso->nhelpers; i++) {
        h = &iso->helpers[i];

        if (h->pid == 0 && rg_isolate_spawn(iso, h) != RG_OK) {
            rg_isolate_failure(iso);
            rg_isolate_respawn_later(iso);
            return;
        }
    }
}


/* answers the calls that could not be sent */
static void
rg_isolate_answer_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_isolate_t       *iso;
    rg_isolate_call_t  *run;

    iso = arg;

    while (iso->failed) {
        run = iso->failed;
        iso->failed = run->next;
        run->next = NULL;

        run->done(run, 1, run->error, strlen(run->error));
    }
}


static void
rg_isolate_hello_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_isolate_helper_t  *h;

    h = arg;

    rg_log_error(RG_LOG_ERR, h->iso->log, 0, "isolated module \"%s\": "
                 "helper %d did not start within %ds, killing it; "
                 "respawning", h->iso->module->mod->name, (int) h->pid,
                 RG_ISOLATE_HELLO_TIMEOUT / 1000);

    rg_isolate_failure(h->iso);
    rg_isolate_kill(h);
}


static void
rg_isolate_flush(rg_isolate_helper_t *h)
{
    ssize_t  n;

    while (h->sent < h->out.len) {
        n = send(h->fd, h->out.data + h->sent, h->out.len - h->sent,
                 MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n > 0) {
            h->sent += n;
            continue;
        }

        if (n == -1 && errno == EINTR) {
            continue;
        }

        if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!event_pending(&h->wev, EV_WRITE, NULL)
                && event_add(&h->wev, NULL) != 0)
            {
                break;
            }
            return;
        }

        break;
    }

    if (h->sent < h->out.len) {
        /* it cannot be written to: end it, and let its socket's end
         * report it (never answer from here: rg_isolate_call may be
         * on the stack) */
        rg_log_error(RG_LOG_ERR, h->iso->log, errno, "isolated module "
                     "\"%s\": send() to helper %d failed, killing it",
                     h->iso->module->mod->name, (int) h->pid);
        rg_isolate_signal(h->pid);
        h->broken = 1;
    }

    if (h->out.cap > RG_ISOLATE_KEEP) {
        rg_buf_free(&h->out);
    }

    rg_buf_reset(&h->out);
    h->sent = 0;
}


static void
rg_isolate_write_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_isolate_flush(arg);
}


/* a call that cannot be sent is failed from answer_ev, with run->error */
static void
rg_isolate_fail_later(rg_isolate_t *iso, rg_isolate_call_t *run)
{
    run->next = iso->failed;
    iso->failed = run;

    event_active(&iso->answer_ev, EV_TIMEOUT, 1);
}


static void
rg_isolate_start(rg_isolate_helper_t *h, rg_isolate_call_t *run)
{
    uint64_t          seq;
    const char       *tool, *id, *session;
    rg_isolate_t     *iso;
    msgpack_packer    pk;
    msgpack_sbuffer   sb;

    iso = h->iso;
    seq = ++iso->seq;

    tool = run->tool;
    id = run->id ? run->id : "";
    session = run->session ? run->session : "";

    if (rg_isolate_frame_start(&sb, &pk, 5) != RG_OK
        || msgpack_pack_str_with_body(&pk, "seq", 3) != 0
        || msgpack_pack_uint64(&pk, seq) != 0
        || rg_isolate_pack_str(&pk, "tool", tool, strlen(tool)) != 0
        || rg_isolate_pack_str(&pk, "id", id, strlen(id)) != 0
        || rg_isolate_pack_str(&pk, "session", session, strlen(session))
           != 0
        || rg_isolate_pack_str(&pk, "args", run->args,
                               run->args_len) != 0)
    {
        snprintf(run->error, sizeof(run->error), "error: %s could not be "
                 "sent to its helper process (out of memory); try again "
                 "later", tool);
        goto failed;
    }

    if (rg_isolate_frame_end(&sb) != RG_OK) {
        snprintf(run->error, sizeof(run->error), "error: arguments for %s "
                 "are larger than an isolated module takes (16m); send "
                 "less", tool);
        goto failed;
    }

    if (rg_buf_append(&h->out, sb.data, sb.size) != RG_OK) {
        snprintf(run->error, sizeof(run->error), "error: %s could not be "
                 "sent to its helper process (out of memory); try again "
                 "later", tool);
        goto failed;
    }

    msgpack_sbuffer_destroy(&sb);

    h->run = run;
    h->seq = seq;

    rg_isolate_flush(h);

    return;

failed:

    msgpack_sbuffer_destroy(&sb);
    rg_isolate_fail_later(iso, run);
}


/* hands queued calls to the helpers that are free */
static void
rg_isolate_dispatch(rg_isolate_t *iso)
{
    rg_uint_t             i;
    rg_isolate_call_t    *run;
    rg_isolate_helper_t  *h;

    while (iso->queue) {
        h = NULL;

        for (i = 0; i < iso->nhelpers; i++) {
            h = &iso->helpers[i];
            if (h->pid && h->ready && h->run == NULL && !h->broken) {
                break;
            }
            h = NULL;
        }

        if (h == NULL) {
            return;
        }

        run = iso->queue;
        iso->queue = run->next;
        if (iso->queue == NULL) {
            iso->queue_tail = &iso->queue;
        }
        run->next = NULL;

        rg_isolate_start(h, run);
    }
}


/* one frame from h: its hello, or the answer to its call. Returns RG_OK,
 * or RG_DONE when h was killed and its buffers are gone. */
static rg_int_t
rg_isolate_frame(rg_isolate_helper_t *h, const char *p, size_t len)
{
    int                 ok;
    size_t              off, rlen;
    uint32_t            i, have;
    uint64_t            seq;
    const char         *result;
    rg_isolate_call_t  *run;
    msgpack_object     *k, *v;
    msgpack_unpacked    u;

    msgpack_unpacked_init(&u);

    off = 0;
    have = 0;
    seq = 0;
    ok = 0;
    result = NULL;
    rlen = 0;

    if (msgpack_unpack_next(&u, p, len, &off) != MSGPACK_UNPACK_SUCCESS
        || off != len || u.data.type != MSGPACK_OBJECT_MAP)
    {
        goto malformed;
    }

    for (i = 0; i < u.data.via.map.size; i++) {
        k = &u.data.via.map.ptr[i].key;
        v = &u.data.via.map.ptr[i].val;

        if (rg_isolate_key(k, "seq")) {
            if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
                goto malformed;
            }
            seq = v->via.u64;
            have |= 1;

        } else if (rg_isolate_key(k, "ok")) {
            if (v->type != MSGPACK_OBJECT_BOOLEAN) {
                goto malformed;
            }
            ok = v->via.boolean;
            have |= 2;

        } else if (rg_isolate_key(k, "result")) {
            if (v->type != MSGPACK_OBJECT_STR) {
                goto malformed;
            }
            result = v->via.str.ptr;
            rlen = v->via.str.size;
            have |= 4;
        }
    }

    if (have != 7) {
        goto malformed;
    }

    if (seq == 0) {
        if (h->ready) {
            goto malformed;
        }

        msgpack_unpacked_destroy(&u);

        h->ready = 1;
        event_del(&h->hello_ev);

        rg_log_debug(h->iso->log, "isolated module \"%s\": helper %d ready",
                     h->iso->module->mod->name, (int) h->pid);

        rg_isolate_dispatch(h->iso);
        return RG_OK;
    }

    if (h->run == NULL || seq != h->seq) {
        goto malformed;
    }

    run = h->run;
    h->run = NULL;
    h->iso->failures = 0;

    /* result points into p: answer before the buffer moves */
    run->done(run, !ok, result, rlen);

    msgpack_unpacked_destroy(&u);

    rg_isolate_dispatch(h->iso);

    return RG_OK;

malformed:

    msgpack_unpacked_destroy(&u);
    rg_isolate_malformed(h, "a malformed frame");

    return RG_DONE;
}


static void
rg_isolate_read_handler(evutil_socket_t fd, short what, void *arg)
{
    char                  why[64];
    size_t                len, pos;
    ssize_t               n;
    rg_isolate_helper_t  *h;

    h = arg;

    if (rg_buf_reserve(&h->in, RG_ISOLATE_READ_CHUNK) != RG_OK) {
        rg_isolate_malformed(h, "more than the worker could hold");
        return;
    }

    n = recv(fd, h->in.data + h->in.len, h->in.cap - h->in.len - 1, 0);

    if (n == 0) {
        rg_isolate_lost(h, 0);
        return;
    }

    if (n == -1) {
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
            return;
        }

        rg_isolate_lost(h, errno == ECONNRESET ? 0 : errno);
        return;
    }

    h->in.len += n;
    pos = 0;

    while (h->in.len - pos >= 4) {
        len = rg_isolate_frame_len(h->in.data + pos);

        if (len == 0 || len > RG_ISOLATE_FRAME_MAX) {
            snprintf(why, sizeof(why), "a frame of %zu bytes", len);
            rg_isolate_malformed(h, why);
            return;
        }

        if (h->in.len - pos - 4 < len) {
            break;                     /* the rest follows */
        }

        if (rg_isolate_frame(h, h->in.data + pos + 4, len) != RG_OK) {
            return;
        }

        pos += 4 + len;
    }

    if (pos) {
        memmove(h->in.data, h->in.data + pos, h->in.len - pos);
        h->in.len -= pos;
    }

    if (h->in.len == 0 && h->in.cap > RG_ISOLATE_KEEP) {
        rg_buf_free(&h->in);
    }
}


/* the zygote ------------------------------------------------------------ */

/* Forks the zygote; in the worker, before any thread of the engine. */
static rg_int_t
rg_isolate_zygote_start(rg_isolate_t *iso)
{
    int    sv[2];
    pid_t  pid, parent;

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
        rg_log_error(RG_LOG_ALERT, iso->log, errno, "isolated module \"%s\": "
                     "socketpair() failed", iso->module->mod->name);
        return RG_ERROR;
    }

    if (prctl(PR_GET_NAME, iso->comm, 0, 0, 0) == -1) {
        iso->comm[0] = '\0';
    }

    parent = getpid();

    pid = fork();

    if (pid == -1) {
        rg_log_error(RG_LOG_ALERT, iso->log, errno, "isolated module \"%s\": "
                     "fork() failed", iso->module->mod->name);
        close(sv[0]);
        close(sv[1]);
        return RG_ERROR;
    }

    if (pid == 0) {
        close(sv[0]);
        rg_isolate_zygote_main(iso, sv[1], parent);
    }

    close(sv[1]);

    iso->zygote = pid;
    iso->zfd = sv[0];

    rg_log_debug(iso->log, "isolated module \"%s\": zygote %d started",
                 iso->module->mod->name, (int) pid);

    return RG_OK;
}


static void
rg_isolate_zygote_stop(rg_isolate_t *iso)
{
    int  st;

    if (iso->zfd != -1) {
        close(iso->zfd);               /* it exits on end of file */
        iso->zfd = -1;
    }

    if (iso->zygote > 0) {
        (void) kill(iso->zygote, SIGKILL);

        while (waitpid(iso->zygote, &st, 0) == -1 && errno == EINTR) {
            /* again */
        }

        iso->zygote = 0;
    }
}


/* Asks the zygote for a helper on socket fd: its pid, or -1. The answer
 * comes within one clone of a small process; a zygote that does not
 * answer in time is stopped, and helpers can no longer start. */
static pid_t
rg_isolate_zygote_spawn(rg_isolate_t *iso, int fd)
{
    int             rc, ans;
    char            op, cbuf[CMSG_SPACE(sizeof(int))];
    ssize_t         n;
    struct iovec    iov;
    struct msghdr   msg;
    struct pollfd   pfd;
    struct cmsghdr *cm;

    if (iso->zygote <= 0) {
        rg_log_error(RG_LOG_ALERT, iso->log, 0, "isolated module \"%s\": "
                     "its zygote is gone, no helper can start",
                     iso->module->mod->name);
        return -1;
    }

    op = 's';
    iov.iov_base = &op;
    iov.iov_len = 1;

    memset(&msg, 0, sizeof(msg));
    memset(cbuf, 0, sizeof(cbuf));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof(cbuf);

    cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));

    do {
        n = sendmsg(iso->zfd, &msg, MSG_NOSIGNAL);
    } while (n == -1 && errno == EINTR);

    if (n != 1) {
        goto failed;
    }

    pfd.fd = iso->zfd;
    pfd.events = POLLIN;

    do {
        rc = poll(&pfd, 1, RG_ISOLATE_ZYGOTE_WAIT);
    } while (rc == -1 && errno == EINTR);

    if (rc != 1) {
        errno = rc == 0 ? ETIMEDOUT : errno;
        goto failed;
    }

    do {
        n = recv(iso->zfd, &ans, sizeof(ans), 0);
    } while (n == -1 && errno == EINTR);

    if (n != (ssize_t) sizeof(ans)) {
        errno = n == -1 ? errno : EPROTO;
        goto failed;
    }

    if (ans <= 0) {
        rg_log_error(RG_LOG_ALERT, iso->log, -ans, "isolated module \"%s\": "
                     "the zygote could not start a helper",
                     iso->module->mod->name);
        return -1;
    }

    return (pid_t) ans;

failed:

    rg_log_error(RG_LOG_ALERT, iso->log, errno, "isolated module \"%s\": "
                 "zygote %d lost, no helper can start",
                 iso->module->mod->name, (int) iso->zygote);
    rg_isolate_zygote_stop(iso);

    return -1;
}


static rg_int_t
rg_isolate_spawn(rg_isolate_t *iso, rg_isolate_helper_t *h)
{
    int             sv[2], flags;
    pid_t           pid;
    struct timeval  tv;

    if (h->corpse == NULL) {
        h->corpse = calloc(1, sizeof(rg_isolate_corpse_t));
        if (h->corpse == NULL) {
            rg_log_error(RG_LOG_ALERT, iso->log, 0, "isolated module \"%s\": "
                         "out of memory", iso->module->mod->name);
            return RG_ERROR;
        }
    }

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
        rg_log_error(RG_LOG_ALERT, iso->log, errno, "isolated module \"%s\": "
                     "socketpair() failed", iso->module->mod->name);
        return RG_ERROR;
    }

    flags = fcntl(sv[0], F_GETFL);
    if (flags == -1 || fcntl(sv[0], F_SETFL, flags | O_NONBLOCK) == -1) {
        rg_log_error(RG_LOG_ALERT, iso->log, errno, "isolated module \"%s\": "
                     "fcntl(O_NONBLOCK) failed", iso->module->mod->name);
        close(sv[0]);
        close(sv[1]);
        return RG_ERROR;
    }

    pid = rg_isolate_zygote_spawn(iso, sv[1]);
    close(sv[1]);

    if (pid <= 0) {
        close(sv[0]);
        return RG_ERROR;
    }

    /* both sides set the group, so that a kill of -pid never misses it */
    (void) setpgid(pid, pid);

    h->pid = pid;
    h->fd = sv[0];
    h->run = NULL;
    h->ready = 0;
    h->broken = 0;

    tv.tv_sec = RG_ISOLATE_HELLO_TIMEOUT / 1000;
    tv.tv_usec = 0;

    if (event_assign(&h->rev, iso->base, h->fd, EV_READ | EV_PERSIST,
                     rg_isolate_read_handler, h) != 0
        || event_assign(&h->wev, iso->base, h->fd, EV_WRITE,
                        rg_isolate_write_handler, h) != 0
        || event_add(&h->rev, NULL) != 0
        || evtimer_add(&h->hello_ev, &tv) != 0)
    {
        rg_log_error(RG_LOG_ALERT, iso->log, 0, "isolated module \"%s\": "
                     "cannot watch helper %d", iso->module->mod->name,
                     (int) pid);
        rg_isolate_kill(h);
        return RG_ERROR;
    }

    rg_log_debug(iso->log, "isolated module \"%s\": helper %d started",
                 iso->module->mod->name, (int) pid);

    return RG_OK;
}


/* parent: the interface ----------------------------------------------- */

rg_isolate_t *
rg_isolate_create(rg_module_t *m, struct event_base *base, rg_uint_t helpers,
    rg_log_t *log)
{
    rg_uint_t             i;
    rg_isolate_t         *iso;
    rg_isolate_helper_t  *h;

    iso = calloc(1, sizeof(rg_isolate_t));
    if (iso == NULL) {
        return NULL;
    }

    iso->nhelpers = helpers ? helpers : 1;
    iso->helpers = calloc(iso->nhelpers, sizeof(rg_isolate_helper_t));
    if (iso->helpers == NULL) {
        free(iso);
        return NULL;
    }

    iso->module = m;
    iso->base = base;
    iso->log = log;
    iso->queue_tail = &iso->queue;
    iso->reap_delay = RG_ISOLATE_REAP_FIRST;
    iso->zfd = -1;

    /* every event is assigned before anything can fail */
    if (evtimer_assign(&iso->respawn_ev, base, rg_isolate_respawn_handler,
                       iso) != 0
        || evtimer_assign(&iso->reap_ev, base, rg_isolate_reap_handler, iso)
           != 0
        || event_assign(&iso->answer_ev, base, -1, 0,
                        rg_isolate_answer_handler, iso) != 0)
    {
        free(iso->helpers);
        free(iso);
        return NULL;
    }

    for (i = 0; i < iso->nhelpers; i++) {
        h = &iso->helpers[i];
        h->iso = iso;
        h->fd = -1;

        if (evtimer_assign(&h->hello_ev, base, rg_isolate_hello_handler, h)
            != 0
            || event_assign(&h->rev, base, -1, 0, rg_isolate_read_handler, h)
               != 0
            || event_assign(&h->wev, base, -1, 0, rg_isolate_write_handler, h)
               != 0)
        {
            iso->nhelpers = i;
            rg_isolate_destroy(iso);
            return NULL;
        }
    }

    if (rg_isolate_zygote_start(iso) != RG_OK) {
        rg_isolate_destroy(iso);
        return NULL;
    }

    for (i = 0; i < iso->nhelpers; i++) {
        if (rg_isolate_spawn(iso, &iso->helpers[i]) != RG_OK) {
            rg_isolate_destroy(iso);
            return NULL;
        }
    }

    return iso;
}


void
rg_isolate_destroy(rg_isolate_t *iso)
{
    int                   st;
    rg_uint_t             i;
    rg_isolate_helper_t  *h;
    rg_isolate_corpse_t  *c;

    if (iso == NULL) {
        return;
    }

    /* at shutdown only: kill everything, then wait for each */
    for (i = 0; i < iso->nhelpers; i++) {
        h = &iso->helpers[i];

        if (h->pid) {
            rg_isolate_signal(h->pid);
            rg_isolate_bury_push(iso, h, 1);
            rg_isolate_close(h);
        }

        free(h->corpse);
    }

    for (c = iso->corpses; c; c = c->next) {
        if (!c->killed) {
            rg_isolate_signal(c->pid);
        }
    }

    while (iso->corpses) {
        c = iso->corpses;
        iso->corpses = c->next;

        while (waitpid(c->pid, &st, 0) == -1 && errno == EINTR) {
            /* again */
        }

        rg_log_debug(iso->log, "isolated module \"%s\": helper %d ended",
                     iso->module->mod->name, (int) c->pid);
        free(c);
    }

    rg_isolate_zygote_stop(iso);

    event_del(&iso->respawn_ev);
    event_del(&iso->reap_ev);
    event_del(&iso->answer_ev);

    free(iso->helpers);
    free(iso);
}


void
rg_isolate_call(rg_isolate_t *iso, rg_isolate_call_t *run)
{
    run->next = NULL;
    *iso->queue_tail = run;
    iso->queue_tail = &run->next;

    rg_isolate_dispatch(iso);
}


void
rg_isolate_abort(rg_isolate_t *iso, rg_isolate_call_t *run)
{
    rg_uint_t             i;
    rg_isolate_call_t   **rp;
    rg_isolate_helper_t  *h;
    rg_isolate_corpse_t  *c;

    if (iso == NULL) {
        return;                        /* destroyed already */
    }

    for (rp = &iso->queue; *rp; rp = &(*rp)->next) {
        if (*rp == run) {
            *rp = run->next;
            if (iso->queue_tail == &run->next) {
                iso->queue_tail = rp;
            }
            run->next = NULL;
            return;
        }
    }

    for (rp = &iso->failed; *rp; rp = &(*rp)->next) {
        if (*rp == run) {
            *rp = run->next;
            run->next = NULL;
            return;
        }
    }

    for (i = 0; i < iso->nhelpers; i++) {
        h = &iso->helpers[i];

        if (h->pid && h->run == run) {
            rg_log_error(RG_LOG_WARN, iso->log, 0, "isolated module \"%s\": "
                         "helper %d killed: its call of \"%s\" was "
                         "abandoned; respawning", iso->module->mod->name,
                         (int) h->pid, run->tool);
            h->run = NULL;
            rg_isolate_kill(h);
            return;
        }
    }

    for (c = iso->corpses; c; c = c->next) {
        if (c->run == run) {
            c->run = NULL;             /* dead already: just forget it */
            return;
        }
    }
}


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

    if (level < RG_LOG_EMERG || level > RG_LOG_DEBUG) {
        level = RG_LOG_NOTICE;
    }

    va_start(args, fmt);
    vsnprintf(buf, sizeof(buf), fmt, args);
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


static void
rg_isolate_host_fail(rg_tool_call_t *call, const char *fmt, ...)
{
    int      n, m;
    char     buf[1024], msg[1200];
    va_list  args;

    va_start(args, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);

    m = snprintf(msg, sizeof(msg), "error: %s failed: %.*s",
                 call->tool->name,
                 n < 0 ? 0 : (int) rg_min((size_t) n, sizeof(buf) - 1), buf);

    rg_isolate_child_answer((rg_isolate_ccall_t *) call, 0, msg,
                            m < 0 ? 0 : rg_min((size_t) m, sizeof(msg) - 1));
}




static void
rg_isolate_timer_handler(evutil_socket_t fd, short what, void *arg)
{
    void                *data;
    rg_tool_timer_pt     cb;
    rg_isolate_timer_t  *t;

    t = arg;
    cb = t->cb;
    data = t->data;
    free(t);

    cb(data);
}


static rg_tool_timer_t *
rg_isolate_host_timer_add(rg_tool_host_t *host, uint64_t msec,
    rg_tool_timer_pt cb, void *data)
{
    struct timeval       tv;
    rg_isolate_child_t  *c;
    rg_isolate_timer_t  *t;

    c = host->data;

    t = calloc(1, sizeof(rg_isolate_timer_t));
    if (t == NULL) {
        return NULL;
    }

    t->cb = cb;
    t->data = data;

    tv.tv_sec = msec / 1000;
    tv.tv_usec = (msec % 1000) * 1000;

    if (evtimer_assign(&t->ev, c->base, rg_isolate_timer_handler, t) != 0
        || evtimer_add(&t->ev, &tv) != 0)
    {
        free(t);
        return NULL;
    }

    return (rg_tool_timer_t *) t;
}


static void
rg_isolate_host_timer_del(rg_tool_timer_t *timer)
{
    rg_isolate_timer_t  *t;

    t = (rg_isolate_timer_t *) timer;

    if (t) {
        event_del(&t->ev);
        free(t);
    }
}


static int
rg_isolate_host_http_get(rg_tool_call_t *call, const char *url,
    size_t max_bytes, uint64_t timeout_ms, rg_tool_http_pt cb, void *data)
{
    rg_isolate_ccall_t  *cc;

    cc = (rg_isolate_ccall_t *) call;

    snprintf(cc->error, sizeof(cc->error),
             "http_get is not available in an isolated module");

    return -1;
}


static void
rg_isolate_host_http_cancel(rg_tool_call_t *call)
{
}


static int
rg_isolate_host_agent_run(rg_tool_call_t *call, const char *agent,
    const char *input, size_t len, rg_tool_agent_pt cb, void *data)
{
    rg_isolate_ccall_t  *cc;

    cc = (rg_isolate_ccall_t *) call;

    snprintf(cc->error, sizeof(cc->error),
             "agent_run is not available in an isolated module");

    return -1;
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
    host->timer_del = rg_isolate_host_timer_del;
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
    int                  n;
    char                 msg[512], *s;
    size_t               off, slen[4];
    uint32_t             i, j, have;
    uint64_t             seq;
    json_t              *args;
    const char          *str[4];
    json_error_t         jerr;
    msgpack_object      *k, *v;
    msgpack_unpacked     u;
    const rg_tool_t     *t;
    rg_isolate_ccall_t  *cc;

    static const char   *keys[4] = { "tool", "id", "session", "args" };

    msgpack_unpacked_init(&u);

    off = 0;
    have = 0;
    seq = 0;
    memset(str, 0, sizeof(str));
    memset(slen, 0, sizeof(slen));

    if (msgpack_unpack_next(&u, p, len, &off) != MSGPACK_UNPACK_SUCCESS
        || off != len || u.data.type != MSGPACK_OBJECT_MAP)
    {
        goto malformed;
    }

    for (i = 0; i < u.data.via.map.size; i++) {
        k = &u.data.via.map.ptr[i].key;
        v = &u.data.via.map.ptr[i].val;

        if (rg_isolate_key(k, "seq")) {
            if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
                goto malformed;
            }
            seq = v->via.u64;
            have |= 1;
            continue;
        }

        for (j = 0; j < 4; j++) {
            if (rg_isolate_key(k, keys[j])) {
                if (v->type != MSGPACK_OBJECT_STR) {
                    goto malformed;
                }
                str[j] = v->via.str.ptr;
                slen[j] = v->via.str.size;
                have |= 2u << j;
            }
        }
    }

    if (have != 0x1f || seq == 0) {
        goto malformed;
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
static void
rg_isolate_child_main(rg_isolate_t *iso, int fd, int other, pid_t parent)
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
    c.module = iso->module;
    c.log.log_level = iso->log ? iso->log->log_level : RG_LOG_NOTICE;
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
static void
rg_isolate_zygote_main(rg_isolate_t *iso, int fd, pid_t parent)
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
            if (iso->comm[0]) {
                (void) prctl(PR_SET_NAME, iso->comm, 0, 0, 0);
            }
            rg_isolate_child_main(iso, hfd, -1, parent);
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
