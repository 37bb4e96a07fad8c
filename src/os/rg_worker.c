/* rg_worker.c: a worker's end of the master⇄worker channel (a
 * SOCK_SEQPACKET socketpair: one message per datagram). The master says
 * "quit MS" (drain within MS), "stop" (stop now) or "reopen" (the logs);
 * the worker reports its state every second ("status {…}"), dropping a
 * report rather than ever blocking on the channel. QUIT and TERM sent by
 * kill() mean the same as the messages, for when the channel is full; a
 * channel that ends (the master died) means quit: no worker outlives its
 * master by more than its drain. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_process.h>
#include <event2/event.h>
#include <signal.h>
#include <sys/socket.h>


#define RG_WORKER_REPORT  4096


static rg_msec_t
rg_worker_drain_timeout(rg_worker_t *w)
{
    rg_master_settings_t  s;

    memset(&s, 0, sizeof(s));
    w->ops->settings(w->cycle, &s);

    return s.drain_timeout;
}


static void
rg_worker_quit(rg_worker_t *w, rg_msec_t timeout)
{
    if (w->draining || w->stopping) {
        return;
    }

    w->draining = 1;

    rg_log_error(RG_LOG_NOTICE, w->log, 0, "worker %d: draining for up to "
                 "%llums", (int) getpid(), (unsigned long long) timeout);

    if (w->drain) {
        w->drain(w, timeout);
    } else {
        event_base_loopbreak(w->base);
    }
}


/* USR1: the logs of the configuration, then the worker's own files */
static void
rg_worker_reopen(rg_worker_t *w)
{
    w->ops->reopen(w->cycle);

    if (w->reopen) {
        w->reopen(w);
    }

    rg_log_error(RG_LOG_NOTICE, w->log, 0, "worker %d: logs reopened",
                 (int) getpid());
}


static void
rg_worker_stop(rg_worker_t *w)
{
    if (w->stopping) {
        return;
    }

    w->stopping = 1;

    rg_log_error(RG_LOG_NOTICE, w->log, 0, "worker %d: stopping",
                 (int) getpid());

    if (w->stop) {
        w->stop(w);
    } else {
        event_base_loopbreak(w->base);
    }
}


static void
rg_worker_channel_handler(evutil_socket_t fd, short what, void *arg)
{
    char          buf[256];
    ssize_t       n;
    rg_worker_t  *w;

    w = arg;

    n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }

    if (n <= 0) {
        /* the master is gone: finish what runs and go */
        event_del(w->channel_ev);
        rg_log_error(RG_LOG_WARN, w->log, 0, "worker %d: the master's "
                     "channel closed", (int) getpid());
        rg_worker_quit(w, rg_worker_drain_timeout(w));
        return;
    }

    buf[n] = '\0';

    if (strncmp(buf, "quit ", 5) == 0) {
        rg_worker_quit(w, strtoull(buf + 5, NULL, 10));

    } else if (strcmp(buf, "stop") == 0) {
        rg_worker_stop(w);

    } else if (strcmp(buf, "reopen") == 0) {
        rg_worker_reopen(w);
    }
}


static void
rg_worker_signal_handler(evutil_socket_t sig, short what, void *arg)
{
    rg_worker_t  *w;

    w = arg;

    switch (sig) {
    case SIGQUIT:
        rg_worker_quit(w, rg_worker_drain_timeout(w));
        break;
    case SIGTERM:
    case SIGINT:
        rg_worker_stop(w);
        break;
    case SIGUSR1:
        rg_worker_reopen(w);
        break;
    }
}


static void
rg_worker_report_handler(evutil_socket_t fd, short what, void *arg)
{
    char          buf[RG_WORKER_REPORT + 8];
    size_t        n;
    rg_worker_t  *w;

    w = arg;

    if (w->status == NULL) {
        return;
    }

    memcpy(buf, "status ", 7);
    n = w->status(w, buf + 7, RG_WORKER_REPORT);

    if (n && n <= RG_WORKER_REPORT) {
        /* a full channel drops this report; the next one follows */
        (void) send(w->channel, buf, n + 7, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
}


rg_int_t
rg_worker_attach(rg_worker_t *w, struct event_base *base)
{
    int              sigs[] = { SIGQUIT, SIGTERM, SIGINT, SIGUSR1 };
    rg_uint_t        i;
    struct timeval   tv = { 1, 0 };

    w->base = base;

    w->channel_ev = event_new(base, w->channel, EV_READ | EV_PERSIST,
                              rg_worker_channel_handler, w);
    w->report_ev = event_new(base, -1, EV_PERSIST, rg_worker_report_handler,
                             w);

    if (w->channel_ev == NULL || w->report_ev == NULL) {
        rg_worker_detach(w);
        return RG_ERROR;
    }

    event_add(w->channel_ev, NULL);
    event_add(w->report_ev, &tv);

    for (i = 0; i < rg_nelems(sigs); i++) {
        w->signal_ev[i] = evsignal_new(base, sigs[i],
                                       rg_worker_signal_handler, w);
        if (w->signal_ev[i] == NULL || event_add(w->signal_ev[i], NULL)) {
            rg_worker_detach(w);
            return RG_ERROR;
        }
    }

    /* the first report at once, so `status` knows a new worker soon */
    event_active(w->report_ev, EV_TIMEOUT, 1);

    return RG_OK;
}


void
rg_worker_detach(rg_worker_t *w)
{
    rg_uint_t  i;

    if (w->channel_ev) {
        event_free(w->channel_ev);
        w->channel_ev = NULL;
    }

    if (w->report_ev) {
        event_free(w->report_ev);
        w->report_ev = NULL;
    }

    for (i = 0; i < rg_nelems(w->signal_ev); i++) {
        if (w->signal_ev[i]) {
            event_free(w->signal_ev[i]);
            w->signal_ev[i] = NULL;
        }
    }

    if (w->channel >= 0) {
        close(w->channel);
        w->channel = -1;
    }
}
