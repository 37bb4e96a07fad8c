/* rg_chaos_proxy.c: the network nemesis of the chaos suite (tests/chaos/):
 * a TCP proxy from a loopback port to Redis's, which the workers of
 * `reagent serve` reach Redis through, and which cuts them off on
 * command. Owns its listening sockets and the pairs of connections it
 * forwards; knows nothing of Redis (the bytes go through unread) and
 * decides nothing by itself (the nemesis says when).
 *
 *     rg_chaos_proxy --to HOST:PORT [--listen PORT|0] [--port-file FILE]
 *                    [--control PORT|0] [--control-file FILE]
 *     rg_chaos_proxy --ask PORT LINE      one control line, its answer
 *
 * Two kinds of partition:
 *   cut    every connection is reset (both sides, SO_LINGER 0) and a new
 *          one is accepted and reset at once: what a client sees when the
 *          far end's host went away and came back empty;
 *   hold   the connections stay open and nothing is forwarded either way
 *          (what was sent waits in the buffers), a new one is accepted and
 *          not connected onward: packets that vanish, as a switch that
 *          drops them does, until the heal delivers what waited.
 * SIGUSR1 cuts, SIGUSR2 heals; the control port takes one line per
 * connection, "cut [MS]", "hold [MS]", "heal" or "stats" (a partition
 * with MS heals itself after MS ms), and answers one line. Each change
 * is one line on stderr, stamped with the unix time in ms, so that a
 * history can be read beside it. SIGTERM and SIGINT exit, saying the
 * totals. */

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>


/* a side's output past this stops reading the other side until it drains
 * to half of it */
#define RG_PROXY_MAX_OUTPUT  (1024 * 1024)


typedef enum {
    RG_PROXY_UP = 0,
    RG_PROXY_CUT,
    RG_PROXY_HOLD
} rg_proxy_state_e;


typedef struct rg_proxy_conn_s  rg_proxy_conn_t;

struct rg_proxy_conn_s {
    struct bufferevent     *client;
    struct bufferevent     *server;      /* NULL until connected onward */
    rg_proxy_conn_t        *prev;
    rg_proxy_conn_t        *next;
    unsigned                connected:1;
    unsigned                closing:1;   /* one side ended: flush, close */
};


static struct {
    struct event_base      *base;
    struct sockaddr_storage to;
    int                     tolen;
    rg_proxy_conn_t         head;        /* a ring of the live pairs */
    rg_proxy_state_e        state;
    struct event           *heal_ev;
    struct timeval          since;       /* the partition's start */
    uint64_t                accepted;
    uint64_t                refused;     /* reset at once: cut */
    uint64_t                reset;       /* reset by a cut */
    uint64_t                held;        /* accepted while held */
    uint64_t                partitions;
    uint64_t                bytes;
    unsigned                nconns;
} rg_proxy;


static const char  *rg_proxy_state_names[] = { "up", "cut", "hold" };


static void rg_proxy_read_handler(struct bufferevent *bev, void *arg);
static void rg_proxy_write_handler(struct bufferevent *bev, void *arg);
static void rg_proxy_event_handler(struct bufferevent *bev, short what,
    void *arg);


static void
rg_proxy_log(const char *fmt, ...)
{
    va_list         ap;
    struct timeval  tv;

    gettimeofday(&tv, NULL);
    fprintf(stderr, "[%lld.%03d] rg_chaos_proxy: ", (long long) tv.tv_sec,
            (int) (tv.tv_usec / 1000));

    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);

    fputc('\n', stderr);
    fflush(stderr);
}


static double
rg_proxy_since(void)
{
    struct timeval  now;

    gettimeofday(&now, NULL);

    return (now.tv_sec - rg_proxy.since.tv_sec)
           + (now.tv_usec - rg_proxy.since.tv_usec) / 1e6;
}


/* closes a socket with a reset rather than a FIN: the peer's next read or
 * write fails at once, as it does when the far host lost the connection */
static void
rg_proxy_reset_fd(evutil_socket_t fd)
{
    struct linger  l;

    if (fd < 0) {
        return;
    }

    l.l_onoff = 1;
    l.l_linger = 0;
    (void) setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}


static void
rg_proxy_conn_close(rg_proxy_conn_t *c, int reset)
{
    if (reset) {
        rg_proxy_reset_fd(bufferevent_getfd(c->client));
        if (c->server) {
            rg_proxy_reset_fd(bufferevent_getfd(c->server));
        }
    }

    bufferevent_free(c->client);
    if (c->server) {
        bufferevent_free(c->server);
    }

    c->prev->next = c->next;
    c->next->prev = c->prev;
    rg_proxy.nconns--;

    free(c);
}


static struct bufferevent *
rg_proxy_partner(rg_proxy_conn_t *c, struct bufferevent *bev)
{
    return bev == c->client ? c->server : c->client;
}


/* starts the connection onward, to Redis; the client's bytes wait in its
 * input buffer until it is made */
static int
rg_proxy_connect(rg_proxy_conn_t *c)
{
    c->server = bufferevent_socket_new(rg_proxy.base, -1,
                                       BEV_OPT_CLOSE_ON_FREE);
    if (c->server == NULL) {
        return -1;
    }

    bufferevent_setcb(c->server, rg_proxy_read_handler,
                      rg_proxy_write_handler, rg_proxy_event_handler, c);
    bufferevent_setwatermark(c->server, EV_WRITE, RG_PROXY_MAX_OUTPUT / 2,
                             0);

    if (bufferevent_socket_connect(c->server, (struct sockaddr *) &rg_proxy.to,
                                   rg_proxy.tolen) != 0)
    {
        /* bufferevent_socket_connect fails at once only on a local error;
         * a refused connection comes to the event handler */
        return -1;
    }

    return 0;
}


/* moves what a side read to the other's output */
static void
rg_proxy_forward(rg_proxy_conn_t *c, struct bufferevent *from)
{
    size_t               n;
    struct evbuffer     *in, *out;
    struct bufferevent  *to;

    to = rg_proxy_partner(c, from);

    if (to == NULL || !c->connected || rg_proxy.state != RG_PROXY_UP) {
        return;                        /* it waits in the input buffer */
    }

    in = bufferevent_get_input(from);
    out = bufferevent_get_output(to);
    n = evbuffer_get_length(in);

    if (n == 0) {
        return;
    }

    rg_proxy.bytes += n;
    evbuffer_add_buffer(out, in);

    if (evbuffer_get_length(out) >= RG_PROXY_MAX_OUTPUT) {
        bufferevent_disable(from, EV_READ);
    }
}


static void
rg_proxy_read_handler(struct bufferevent *bev, void *arg)
{
    rg_proxy_forward(arg, bev);
}


/* a side's output drained below half: the other may read again; a pair
 * that is closing closes once the survivor's output is written */
static void
rg_proxy_write_handler(struct bufferevent *bev, void *arg)
{
    rg_proxy_conn_t     *c;
    struct bufferevent  *other;

    c = arg;

    if (c->closing) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
            rg_proxy_conn_close(c, 0);
        }
        return;
    }

    other = rg_proxy_partner(c, bev);

    if (other && rg_proxy.state == RG_PROXY_UP) {
        bufferevent_enable(other, EV_READ);
    }
}


static void
rg_proxy_event_handler(struct bufferevent *bev, short what, void *arg)
{
    rg_proxy_conn_t     *c;
    struct bufferevent  *other;

    c = arg;

    if (what & BEV_EVENT_CONNECTED) {
        c->connected = 1;

        if (rg_proxy.state == RG_PROXY_UP) {
            bufferevent_enable(c->server, EV_READ | EV_WRITE);
            bufferevent_enable(c->client, EV_READ | EV_WRITE);
            rg_proxy_forward(c, c->client);
        }
        return;
    }

    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))) {
        return;
    }

    /* one side ended (or Redis refused the connection onward): what it
     * sent before goes on to the other side, which is then closed */
    other = rg_proxy_partner(c, bev);

    if (c->closing || other == NULL || !c->connected
        || rg_proxy.state != RG_PROXY_UP)
    {
        rg_proxy_conn_close(c, bev == c->server && !c->connected);
        return;
    }

    rg_proxy_forward(c, bev);

    if (evbuffer_get_length(bufferevent_get_output(other)) == 0) {
        rg_proxy_conn_close(c, 0);
        return;
    }

    c->closing = 1;
    bufferevent_disable(bev, EV_READ | EV_WRITE);
    bufferevent_disable(other, EV_READ);
    bufferevent_setwatermark(other, EV_WRITE, 0, 0);
}


static void
rg_proxy_accept_handler(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
    rg_proxy_conn_t  *c;

    rg_proxy.accepted++;

    if (rg_proxy.state == RG_PROXY_CUT) {
        rg_proxy.refused++;
        rg_proxy_reset_fd(fd);
        evutil_closesocket(fd);
        return;
    }

    c = calloc(1, sizeof(rg_proxy_conn_t));
    if (c == NULL) {
        evutil_closesocket(fd);
        return;
    }

    c->client = bufferevent_socket_new(rg_proxy.base, fd,
                                       BEV_OPT_CLOSE_ON_FREE);
    if (c->client == NULL) {
        evutil_closesocket(fd);
        free(c);
        return;
    }

    bufferevent_setcb(c->client, rg_proxy_read_handler,
                      rg_proxy_write_handler, rg_proxy_event_handler, c);
    bufferevent_setwatermark(c->client, EV_WRITE, RG_PROXY_MAX_OUTPUT / 2,
                             0);

    c->next = rg_proxy.head.next;
    c->prev = &rg_proxy.head;
    rg_proxy.head.next->prev = c;
    rg_proxy.head.next = c;
    rg_proxy.nconns++;

    if (rg_proxy.state == RG_PROXY_HOLD) {
        rg_proxy.held++;
        bufferevent_disable(c->client, EV_READ | EV_WRITE);
        return;                        /* connected onward at the heal */
    }

    bufferevent_enable(c->client, EV_READ | EV_WRITE);

    if (rg_proxy_connect(c) != 0) {
        rg_proxy_conn_close(c, 1);
    }
}


/* partitions ------------------------------------------------------------ */

static void
rg_proxy_heal(void)
{
    unsigned          n;
    rg_proxy_conn_t  *c, *next;

    if (rg_proxy.state == RG_PROXY_UP) {
        return;
    }

    evtimer_del(rg_proxy.heal_ev);

    n = 0;

    if (rg_proxy.state == RG_PROXY_HOLD) {
        rg_proxy.state = RG_PROXY_UP;

        for (c = rg_proxy.head.next; c != &rg_proxy.head; c = next) {
            next = c->next;
            n++;

            if (c->server == NULL) {
                bufferevent_enable(c->client, EV_READ | EV_WRITE);
                if (rg_proxy_connect(c) != 0) {
                    rg_proxy_conn_close(c, 1);
                }
                continue;
            }

            bufferevent_enable(c->client, EV_READ | EV_WRITE);
            bufferevent_enable(c->server, EV_READ | EV_WRITE);
            rg_proxy_forward(c, c->client);
            rg_proxy_forward(c, c->server);
        }

        rg_proxy_log("healed after %.1f s of hold: %u connections go on "
                     "(%llu of them opened meanwhile)", rg_proxy_since(), n,
                     (unsigned long long) rg_proxy.held);
        return;
    }

    rg_proxy.state = RG_PROXY_UP;
    rg_proxy_log("healed after %.1f s of cut: %llu connections refused "
                 "meanwhile", rg_proxy_since(),
                 (unsigned long long) rg_proxy.refused);
}


static void
rg_proxy_partition(rg_proxy_state_e state, long ms)
{
    char              howlong[32];
    unsigned          n;
    struct timeval    tv;
    rg_proxy_conn_t  *c;

    if (rg_proxy.state != RG_PROXY_UP && rg_proxy.state != state) {
        rg_proxy_heal();               /* hold then cut: one at a time */
    }

    if (rg_proxy.state == RG_PROXY_UP) {
        rg_proxy.partitions++;
        rg_proxy.refused = 0;
        rg_proxy.held = 0;
        gettimeofday(&rg_proxy.since, NULL);
    }

    rg_proxy.state = state;
    n = 0;

    if (state == RG_PROXY_CUT) {
        while (rg_proxy.head.next != &rg_proxy.head) {
            rg_proxy_conn_close(rg_proxy.head.next, 1);
            n++;
        }
        rg_proxy.reset += n;

    } else {
        for (c = rg_proxy.head.next; c != &rg_proxy.head; c = c->next) {
            bufferevent_disable(c->client, EV_READ | EV_WRITE);
            if (c->server) {
                bufferevent_disable(c->server, EV_READ | EV_WRITE);
            }
            n++;
        }
    }

    evtimer_del(rg_proxy.heal_ev);

    if (ms > 0) {
        tv.tv_sec = ms / 1000;
        tv.tv_usec = (ms % 1000) * 1000;
        evtimer_add(rg_proxy.heal_ev, &tv);
    }

    if (ms > 0) {
        snprintf(howlong, sizeof(howlong), "for %ld ms", ms);
    } else {
        snprintf(howlong, sizeof(howlong), "until healed");
    }

    if (state == RG_PROXY_CUT) {
        rg_proxy_log("cut: %u connections reset, new ones refused, %s", n,
                     howlong);
    } else {
        rg_proxy_log("hold: %u connections held, nothing forwarded, %s", n,
                     howlong);
    }
}


static void
rg_proxy_heal_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_proxy_heal();
}


static void
rg_proxy_stats(char *buf, size_t size)
{
    snprintf(buf, size, "%s conns %u accepted %llu partitions %llu "
             "reset %llu refused %llu held %llu bytes %llu",
             rg_proxy_state_names[rg_proxy.state], rg_proxy.nconns,
             (unsigned long long) rg_proxy.accepted,
             (unsigned long long) rg_proxy.partitions,
             (unsigned long long) rg_proxy.reset,
             (unsigned long long) rg_proxy.refused,
             (unsigned long long) rg_proxy.held,
             (unsigned long long) rg_proxy.bytes);
}


static void
rg_proxy_signal_handler(evutil_socket_t sig, short what, void *arg)
{
    char  buf[256];

    switch (sig) {

    case SIGUSR1:
        rg_proxy_partition(RG_PROXY_CUT, 0);
        break;

    case SIGUSR2:
        rg_proxy_heal();
        break;

    default:
        rg_proxy_stats(buf, sizeof(buf));
        rg_proxy_log("exiting: %s", buf);
        event_base_loopbreak(rg_proxy.base);
        break;
    }
}


/* the control port ------------------------------------------------------- */

static void
rg_proxy_ctl_write_handler(struct bufferevent *bev, void *arg)
{
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        bufferevent_free(bev);
    }
}


static void
rg_proxy_ctl_event_handler(struct bufferevent *bev, short what, void *arg)
{
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        bufferevent_free(bev);
    }
}


static void
rg_proxy_ctl_read_handler(struct bufferevent *bev, void *arg)
{
    char   *line, *end, answer[320], stats[256];
    long    ms;
    size_t  len;

    line = evbuffer_readln(bufferevent_get_input(bev), &len,
                           EVBUFFER_EOL_CRLF);
    if (line == NULL) {
        return;
    }

    ms = 0;
    end = strchr(line, ' ');
    if (end) {
        *end++ = '\0';
        ms = strtol(end, NULL, 10);
    }

    if (strcmp(line, "cut") == 0) {
        rg_proxy_partition(RG_PROXY_CUT, ms);

    } else if (strcmp(line, "hold") == 0) {
        rg_proxy_partition(RG_PROXY_HOLD, ms);

    } else if (strcmp(line, "heal") == 0) {
        rg_proxy_heal();

    } else if (strcmp(line, "stats") != 0) {
        snprintf(answer, sizeof(answer), "error: unknown command \"%.64s\" "
                 "(cut [MS], hold [MS], heal, stats)\n", line);
        goto done;
    }

    rg_proxy_stats(stats, sizeof(stats));
    snprintf(answer, sizeof(answer), "%s\n", stats);

done:

    free(line);
    bufferevent_disable(bev, EV_READ);
    bufferevent_setcb(bev, NULL, rg_proxy_ctl_write_handler,
                      rg_proxy_ctl_event_handler, NULL);
    bufferevent_write(bev, answer, strlen(answer));
}


static void
rg_proxy_ctl_accept_handler(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
    struct bufferevent  *bev;

    bev = bufferevent_socket_new(rg_proxy.base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        evutil_closesocket(fd);
        return;
    }

    bufferevent_setcb(bev, rg_proxy_ctl_read_handler, NULL,
                      rg_proxy_ctl_event_handler, NULL);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}


/* --ask PORT LINE: a client of the control port, blocking, for the
 * nemesis scripts */
static int
rg_proxy_ask(const char *port, const char *line)
{
    int                 fd;
    char                buf[512];
    ssize_t             n;
    struct sockaddr_in  sin;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t) atoi(port));
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *) &sin, sizeof(sin)) != 0) {
        fprintf(stderr, "rg_chaos_proxy: control port %s: %s\n", port,
                strerror(errno));
        return 1;
    }

    snprintf(buf, sizeof(buf), "%s\n", line);
    if (write(fd, buf, strlen(buf)) != (ssize_t) strlen(buf)) {
        fprintf(stderr, "rg_chaos_proxy: control port %s: %s\n", port,
                strerror(errno));
        close(fd);
        return 1;
    }

    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        fwrite(buf, 1, (size_t) n, stdout);
    }

    close(fd);

    return strncmp(buf, "error", 5) == 0 ? 1 : 0;
}


/* setup ------------------------------------------------------------------ */

static struct evconnlistener *
rg_proxy_listen(const char *port, const char *file,
    evconnlistener_cb handler, int *bound)
{
    FILE                    *f;
    socklen_t                len;
    struct sockaddr_in       sin;
    struct evconnlistener   *l;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t) atoi(port));
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    l = evconnlistener_new_bind(rg_proxy.base, handler, NULL,
                                LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                511, (struct sockaddr *) &sin, sizeof(sin));
    if (l == NULL) {
        fprintf(stderr, "rg_chaos_proxy: cannot listen on 127.0.0.1:%s: "
                "%s\n", port, strerror(errno));
        return NULL;
    }

    len = sizeof(sin);
    getsockname(evconnlistener_get_fd(l), (struct sockaddr *) &sin, &len);
    *bound = ntohs(sin.sin_port);

    if (file) {
        f = fopen(file, "w");
        if (f == NULL) {
            fprintf(stderr, "rg_chaos_proxy: %s: %s\n", file,
                    strerror(errno));
            evconnlistener_free(l);
            return NULL;
        }
        fprintf(f, "%d\n", ntohs(sin.sin_port));
        fclose(f);
    }

    return l;
}


static int
rg_proxy_resolve(const char *to)
{
    int               rc;
    char              host[256];
    const char       *colon;
    struct addrinfo   hints, *ai;

    colon = strrchr(to, ':');
    if (colon == NULL || (size_t) (colon - to) >= sizeof(host)) {
        fprintf(stderr, "rg_chaos_proxy: --to wants HOST:PORT, not "
                "\"%s\"\n", to);
        return -1;
    }

    memcpy(host, to, (size_t) (colon - to));
    host[colon - to] = '\0';

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;

    rc = getaddrinfo(host, colon + 1, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "rg_chaos_proxy: %s: %s\n", to, gai_strerror(rc));
        return -1;
    }

    memcpy(&rg_proxy.to, ai->ai_addr, ai->ai_addrlen);
    rg_proxy.tolen = (int) ai->ai_addrlen;
    freeaddrinfo(ai);

    return 0;
}


static void
rg_proxy_usage(void)
{
    fprintf(stderr,
        "usage: rg_chaos_proxy --to HOST:PORT [--listen PORT|0] "
        "[--port-file FILE]\n"
        "                      [--control PORT|0] [--control-file FILE]\n"
        "       rg_chaos_proxy --ask PORT \"cut [MS]\"|\"hold [MS]\"|heal|"
        "stats\n"
        "SIGUSR1 cuts (resets every connection, refuses new ones), "
        "SIGUSR2 heals\n");
}


int
main(int argc, char **argv)
{
    int                      i, rc, port, cport;
    char                     buf[256];
    const char              *to, *listen_port, *port_file, *ctl_port,
                            *ctl_file;
    struct event            *sigs[4];
    struct evconnlistener   *l, *ctl;

    static const int  signals[] = { SIGUSR1, SIGUSR2, SIGTERM, SIGINT };

    to = NULL;
    listen_port = "0";
    port_file = NULL;
    ctl_port = NULL;
    ctl_file = NULL;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ask") == 0 && i + 2 < argc) {
            return rg_proxy_ask(argv[i + 1], argv[i + 2]);

        } else if (strcmp(argv[i], "--to") == 0 && i + 1 < argc) {
            to = argv[++i];

        } else if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
            listen_port = argv[++i];

        } else if (strcmp(argv[i], "--port-file") == 0 && i + 1 < argc) {
            port_file = argv[++i];

        } else if (strcmp(argv[i], "--control") == 0 && i + 1 < argc) {
            ctl_port = argv[++i];

        } else if (strcmp(argv[i], "--control-file") == 0 && i + 1 < argc) {
            ctl_file = argv[++i];

        } else {
            rg_proxy_usage();
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }

    if (to == NULL) {
        rg_proxy_usage();
        return 2;
    }

    if (rg_proxy_resolve(to) != 0) {
        return 1;
    }

    signal(SIGPIPE, SIG_IGN);

    rg_proxy.base = event_base_new();
    if (rg_proxy.base == NULL) {
        fprintf(stderr, "rg_chaos_proxy: event_base_new() failed\n");
        return 1;
    }

    rg_proxy.head.next = &rg_proxy.head;
    rg_proxy.head.prev = &rg_proxy.head;
    rg_proxy.heal_ev = evtimer_new(rg_proxy.base, rg_proxy_heal_handler,
                                   NULL);

    l = rg_proxy_listen(listen_port, port_file, rg_proxy_accept_handler,
                        &port);
    if (l == NULL) {
        return 1;
    }

    ctl = NULL;
    cport = 0;
    if (ctl_port || ctl_file) {
        ctl = rg_proxy_listen(ctl_port ? ctl_port : "0", ctl_file,
                              rg_proxy_ctl_accept_handler, &cport);
        if (ctl == NULL) {
            return 1;
        }
    }

    for (i = 0; i < 4; i++) {
        sigs[i] = evsignal_new(rg_proxy.base, signals[i],
                               rg_proxy_signal_handler, NULL);
        if (sigs[i] == NULL || evsignal_add(sigs[i], NULL) != 0) {
            fprintf(stderr, "rg_chaos_proxy: cannot watch signal %d\n",
                    signals[i]);
            return 1;
        }
    }

    if (ctl) {
        rg_proxy_log("forwarding 127.0.0.1:%d to %s; control on "
                     "127.0.0.1:%d", port, to, cport);
    } else {
        rg_proxy_log("forwarding 127.0.0.1:%d to %s", port, to);
    }

    rc = event_base_dispatch(rg_proxy.base);

    rg_proxy_stats(buf, sizeof(buf));

    while (rg_proxy.head.next != &rg_proxy.head) {
        rg_proxy_conn_close(rg_proxy.head.next, 0);
    }

    for (i = 0; i < 4; i++) {
        event_free(sigs[i]);
    }

    if (ctl) {
        evconnlistener_free(ctl);
    }

    evconnlistener_free(l);
    event_free(rg_proxy.heal_ev);
    event_base_free(rg_proxy.base);

    return rc < 0 ? 1 : 0;
}
