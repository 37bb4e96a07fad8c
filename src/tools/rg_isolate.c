/* rg_isolate.c: helper processes for the tool modules loaded `isolated`.
 * Owns, per module, a zygote, the helpers it starts, their socketpairs,
 * the FIFO of calls waiting for a free helper and the helpers that died
 * and are not reaped yet, on the worker's reactor. What runs in the
 * zygote and the helpers is rg_isolate_helper.c's; the frames are
 * rg_isolate_frame.c's.
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
#include <rg_isolate_frame.h>
#include <rg_isolate_helper.h>
#include <msgpack.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <event2/event.h>
#include <event2/event_struct.h>


#define RG_ISOLATE_HELLO_TIMEOUT 10000      /* ms from fork to hello */
#define RG_ISOLATE_ZYGOTE_WAIT   5000       /* ms for the zygote's answer */
#define RG_ISOLATE_REAP_FIRST    1          /* ms, doubling... */
#define RG_ISOLATE_REAP_MAX      100        /* ...up to this */
#define RG_ISOLATE_KILL_AFTER    2000       /* ms from EOF to SIGKILL */
#define RG_ISOLATE_BACKOFF_MIN   50         /* ms, doubling... */
#define RG_ISOLATE_BACKOFF_MAX   1000       /* ...up to this */
#define RG_ISOLATE_CALM          10000      /* ms that forgive failures */


typedef struct rg_isolate_helper_s  rg_isolate_helper_t;
typedef struct rg_isolate_corpse_s  rg_isolate_corpse_t;


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


static rg_int_t rg_isolate_spawn(rg_isolate_t *iso, rg_isolate_helper_t *h);
static void rg_isolate_dispatch(rg_isolate_t *iso);
static void rg_isolate_reap(rg_isolate_t *iso);


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
    rg_msec_t  delay, at;
    rg_uint_t  shift;

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

    if (rg_timer_add(&iso->respawn_ev, delay) != 0) {
        rg_log_error(RG_LOG_ALERT, iso->log, 0, "isolated module \"%s\": "
                     "evtimer_add() failed", iso->module->mod->name);
    }
}


static void
rg_isolate_reap_later(rg_isolate_t *iso)
{
    if (rg_timer_add(&iso->reap_ev, iso->reap_delay) != 0) {
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
    int                    ok;
    size_t                 rlen;
    uint64_t               seq;
    const char            *result;
    rg_isolate_call_t     *run;
    msgpack_unpacked       u;
    const msgpack_object  *v[3];

    static const char                 *names[3] = { "seq", "ok", "result" };
    static const msgpack_object_type   types[3] = {
        MSGPACK_OBJECT_POSITIVE_INTEGER, MSGPACK_OBJECT_BOOLEAN,
        MSGPACK_OBJECT_STR
    };

    msgpack_unpacked_init(&u);

    if (rg_isolate_frame_read(&u, p, len, 3, names, types, v) != RG_OK) {
        goto malformed;
    }

    seq = v[0]->via.u64;
    ok = v[1]->via.boolean;
    result = v[2]->via.str.ptr;
    rlen = v[2]->via.str.size;

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
    int        sv[2];
    pid_t      pid, parent;
    rg_uint_t  level;

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
        rg_log_error(RG_LOG_ALERT, iso->log, errno, "isolated module \"%s\": "
                     "socketpair() failed", iso->module->mod->name);
        return RG_ERROR;
    }

    if (prctl(PR_GET_NAME, iso->comm, 0, 0, 0) == -1) {
        iso->comm[0] = '\0';
    }

    parent = getpid();
    level = iso->log ? iso->log->log_level : RG_LOG_NOTICE;

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
        rg_isolate_zygote_main(iso->module, level, iso->comm, sv[1], parent);
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
