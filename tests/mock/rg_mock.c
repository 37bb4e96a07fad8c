/* rg_mock.c: the mock model that reagent's tests, demo and benchmarks
 * talk to over real HTTP. It answers three wire formats, chosen by the
 * request path: OpenAI Chat Completions (POST /v1/chat/completions,
 * rg_mock_chat.c), Anthropic Messages (POST /v1/messages,
 * rg_mock_anthropic*.c) and OpenAI Responses (POST /v1/responses,
 * rg_mock_responses*.c), each validated as strictly as the real API and
 * answered deterministically, streamed ("stream": true) as that API's
 * server-sent events. The conversation logic is shared by all three
 * (rg_mock_conv.c): generic mode (the position in a conversation is
 * derived from each request's messages, so concurrent conversations never
 * disturb each other), the response script and the fault injector; so
 * are the counters behind /stats and the pacing of replies
 * (rg_mock_reply.c). With --otlp-log it is also a small OTLP/HTTP
 * collector: each POST /v1/traces body is appended to that file as one
 * line (answered with --otlp-status, 200 by default). GET /page is a page
 * for an http tool, logged in the request log with its traceparent,
 * answered after --page-delay.
 *
 * This file owns the process: options, the libevent loop with its evhttp
 * server, signals, and the routing of request paths. It starts no threads
 * and never blocks; delays are timers.
 *
 * Build: cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -O2 -Itests/mock \
 *            -o rg_mock tests/mock/rg_mock*.c \
 *            $(pkg-config --cflags --libs libevent jansson) */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <event2/listener.h>
#include <event2/util.h>

#include "rg_mock.h"


rg_mock_t  rg_mock;


static const char *
rg_mock_method_name(enum evhttp_cmd_type m)
{
    switch (m) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_OPTIONS:
        return "OPTIONS";
    case EVHTTP_REQ_TRACE:
        return "TRACE";
    case EVHTTP_REQ_CONNECT:
        return "CONNECT";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    default:
        return "?";
    }
}


static void
rg_mock_handler(struct evhttp_request *req, void *arg)
{
    char                      message[320];
    size_t                    len;
    const char               *path;
    enum evhttp_cmd_type      m;
    const struct evhttp_uri  *uri;

    (void) arg;

    uri = evhttp_request_get_evhttp_uri(req);
    path = uri ? evhttp_uri_get_path(uri) : NULL;
    path = path ? path : "";
    m = evhttp_request_get_command(req);

    if (strcmp(path, "/v1/chat/completions") == 0
        || strcmp(path, "/chat/completions") == 0)
    {
        if (m == EVHTTP_REQ_POST) {
            rg_mock_request(req, &rg_mock_chat_format);
            return;
        }

    } else if (strcmp(path, "/v1/messages") == 0
               || strcmp(path, "/messages") == 0)
    {
        if (m == EVHTTP_REQ_POST) {
            rg_mock_request(req, &rg_mock_anthropic_format);
            return;
        }

    } else if (strcmp(path, "/v1/responses") == 0
               || strcmp(path, "/responses") == 0)
    {
        if (m == EVHTTP_REQ_POST) {
            rg_mock_request(req, &rg_mock_responses_format);
            return;
        }

    } else if (strcmp(path, "/stats") == 0) {
        if (m == EVHTTP_REQ_GET) {
            rg_mock_stats_reply(req);
            return;
        }

    } else if (strcmp(path, "/last_request") == 0) {
        if (m == EVHTTP_REQ_GET) {
            rg_mock_last_request_reply(req);
            return;
        }

    } else if (strcmp(path, "/reset") == 0) {
        if (m == EVHTTP_REQ_POST) {
            rg_mock_reset_reply(req);
            return;
        }

    } else if (strcmp(path, "/v1/traces") == 0 && rg_mock.conf.otlp_log) {
        if (m == EVHTTP_REQ_POST) {
            rg_mock_traces(req);
            return;
        }

    } else if (strcmp(path, "/page") == 0) {
        if (m == EVHTTP_REQ_GET) {
            rg_mock_page(req);
            return;
        }

    } else {
        len = rg_mock_utf8_cut(path, strlen(path), 200);
        snprintf(message, sizeof(message), "Invalid URL (%s %.*s)",
                 rg_mock_method_name(m), (int) len, path);

        rg_mock_send_error(req, 404, message, "invalid_request_error");
        return;
    }

    len = rg_mock_utf8_cut(path, strlen(path), 200);
    snprintf(message, sizeof(message), "Invalid method for URL (%s %.*s)",
             rg_mock_method_name(m), (int) len, path);
    rg_mock_send_error(req, 405, message, "invalid_request_error");
}


/* process */

static void
rg_mock_signal_handler(evutil_socket_t sig, short events, void *arg)
{
    (void) events;
    (void) arg;

    rg_mock_log("signal %d, exiting", (int) sig);

    event_base_loopbreak(rg_mock.base);
}


static void
rg_mock_usage(FILE *f)
{
    fprintf(f,
        "usage: rg_mock [options]\n"
        "  --host ADDR           listen address (127.0.0.1)\n"
        "  --port N              listen port, 0 picks a free one (0)\n"
        "  --port-file FILE      write the bound port + \"\\n\" to FILE\n"
        "  --listen-fd N         accept on the listening socket N it was\n"
        "                        given (instead of --host and --port)\n"
        "  --rounds R            generic mode: tool rounds before the final"
        " answer (1)\n"
        "  --calls K             generic mode: parallel tool calls per round"
        " (1)\n"
        "  --latency MS          delay every model reply by MS ms (0)\n"
        "  --script FILE         scripted mode: JSON array of reply entries\n"
        "  --fault KIND          429|500|hang|malformed|400|401|404|close|\n"
        "                        overloaded|too_long\n"
        "  --fault-count N       fault the first N valid requests, 0: all"
        " (1)\n"
        "  --fault-every M       fault requests M, 2M, 3M, ... instead\n"
        "  --retry-after S       Retry-After on 429 replies (1)\n"
        "  --retry-after-ms MS   send retry-after-ms: MS instead\n"
        "  --no-retry-after      send neither header on 429 replies\n"
        "  --max-body BYTES      request body limit (8388608)\n"
        "  --idle-timeout S      close idle keep-alive connections after S"
        " s, 0: never (0)\n"
        "  --stream-chunk N      streams: bytes of text or arguments per"
        " event (8)\n"
        "  --stream-delay MS     one event per chunk, MS ms apart; 0: the"
        " first event,\n"
        "                        then the rest at once (0)\n"
        "  --stream-interleave   chat: alternate the argument fragments of"
        " parallel calls\n"
        "  --stream-crlf         end the event lines with CRLF\n"
        "  --stream-comments     a \": keep-alive\" comment between"
        " events\n"
        "  --stream-no-done      end streams without data: [DONE] (chat),"
        " message_stop\n"
        "                        (anthropic), or response.completed"
        " (responses)\n"
        "  --cache               chat: report usage.prompt_tokens_details."
        "cached_tokens\n"
        "                        (anthropic and responses always simulate"
        " caching)\n"
        "  --request-log FILE    append each request (id, traceparent, body)"
        " as a JSON line\n"
        "  --otlp-log FILE       take OTLP/HTTP JSON at POST /v1/traces, each"
        " body a line\n"
        "                        of FILE\n"
        "  --otlp-status N       answer those with status N (200)\n"
        "  --page-delay MS       answer GET /page after MS ms (0)\n"
        "  --quiet               log nothing but errors and the listen"
        " line\n"
        "  --request-id NAME     send header NAME: req-mock-<arrival"
        " number> with every\n"
        "                        model reply, as providers send x-request-id,"
        " request-id\n"
        "                        or cf-ray (anthropic replies always carry"
        " request-id:\n"
        "                        req_mock_<arrival number>)\n"
        "  --help\n"
        "paths: POST /v1/chat/completions (OpenAI Chat Completions),"
        " /v1/messages\n"
        "(Anthropic Messages), /v1/responses (OpenAI Responses); GET /stats,"
        " GET\n"
        "/last_request, POST /reset (counters and prompt cache), GET /page\n"
        "script entry keys: status, headers, body, raw, message, delay_ms,"
        " hang, close,\n"
        "stream_error, stream_error_type, stream_error_failed; a message:"
        " content,\n"
        "tool_calls, refusal, thinking, redacted_thinking, stop_reason,"
        " status, reason,\n"
        "only_reasoning\n");
}


static rg_int_t
rg_mock_number(const char *name, const char *s, long min, long max, long *n)
{
    char  *end;
    long   v;

    errno = 0;
    v = strtol(s, &end, 10);

    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "rg_mock: invalid %s \"%s\" (%ld..%ld)\n",
                name, s, min, max);
        return RG_ERROR;
    }

    *n = v;

    return RG_OK;
}


static rg_int_t
rg_mock_options(int argc, char **argv)
{
    int              c, i;
    rg_int_t         rc;
    rg_mock_conf_t  *conf;

    static const struct option  options[] = {
        { "host",           required_argument, NULL, 'h' },
        { "port",           required_argument, NULL, 'p' },
        { "port-file",      required_argument, NULL, 'P' },
        { "listen-fd",      required_argument, NULL, 'F' },
        { "rounds",         required_argument, NULL, 'r' },
        { "calls",          required_argument, NULL, 'k' },
        { "latency",        required_argument, NULL, 'l' },
        { "script",         required_argument, NULL, 's' },
        { "fault",          required_argument, NULL, 'f' },
        { "fault-count",    required_argument, NULL, 'n' },
        { "fault-every",    required_argument, NULL, 'e' },
        { "retry-after",    required_argument, NULL, 'a' },
        { "retry-after-ms", required_argument, NULL, 'A' },
        { "no-retry-after", no_argument,       NULL, 'N' },
        { "max-body",       required_argument, NULL, 'b' },
        { "idle-timeout",   required_argument, NULL, 'i' },
        { "stream-chunk",   required_argument, NULL, 'c' },
        { "stream-delay",   required_argument, NULL, 'd' },
        { "stream-interleave", no_argument,    NULL, 'I' },
        { "stream-crlf",    no_argument,       NULL, 'C' },
        { "stream-comments", no_argument,      NULL, 'm' },
        { "stream-no-done", no_argument,       NULL, 'D' },
        { "cache",          no_argument,       NULL, 'K' },
        { "quiet",          no_argument,       NULL, 'q' },
        { "request-log",    required_argument, NULL, 'L' },
        { "request-id",     required_argument, NULL, 'R' },
        { "otlp-log",       required_argument, NULL, 'O' },
        { "otlp-status",    required_argument, NULL, 'S' },
        { "page-delay",     required_argument, NULL, 'g' },
        { "help",           no_argument,       NULL, '?' + 256 },
        { NULL, 0, NULL, 0 }
    };

    conf = &rg_mock.conf;

    conf->host = "127.0.0.1";
    conf->listen_fd = -1;
    conf->rounds = 1;
    conf->calls = 1;
    conf->fault_count = 1;
    conf->retry_after = 1;
    conf->retry_after_ms = -1;
    conf->max_body = 8 * 1024 * 1024;
    conf->stream_chunk = RG_MOCK_STREAM_CHUNK;
    conf->otlp_status = 200;

    for ( ;; ) {
        c = getopt_long(argc, argv, "", options, NULL);
        if (c == -1) {
            break;
        }

        rc = RG_OK;

        switch (c) {
        case 'h':
            conf->host = optarg;
            break;
        case 'p':
            rc = rg_mock_number("port", optarg, 0, 65535, &conf->port);
            break;
        case 'P':
            conf->port_file = optarg;
            break;
        case 'F':
            rc = rg_mock_number("listen-fd", optarg, 0, INT_MAX,
                                &conf->listen_fd);
            break;
        case 'r':
            rc = rg_mock_number("rounds", optarg, 0, 1000000, &conf->rounds);
            break;
        case 'k':
            rc = rg_mock_number("calls", optarg, 1, 1000, &conf->calls);
            break;
        case 'l':
            rc = rg_mock_number("latency", optarg, 0, 86400000,
                                &conf->latency);
            break;
        case 's':
            conf->script_file = optarg;
            break;
        case 'f':
            for (i = 1; i <= RG_MOCK_FAULT_LAST; i++) {
                if (strcmp(optarg, rg_mock_fault_names[i]) == 0) {
                    conf->fault = i;
                    break;
                }
            }
            if (conf->fault == RG_MOCK_FAULT_NONE) {
                fprintf(stderr, "rg_mock: invalid fault \"%s\"\n", optarg);
                rc = RG_ERROR;
            }
            break;
        case 'n':
            rc = rg_mock_number("fault-count", optarg, 0, LONG_MAX,
                                &conf->fault_count);
            break;
        case 'e':
            rc = rg_mock_number("fault-every", optarg, 1, LONG_MAX,
                                &conf->fault_every);
            break;
        case 'a':
            rc = rg_mock_number("retry-after", optarg, 0, 86400,
                                &conf->retry_after);
            break;
        case 'A':
            rc = rg_mock_number("retry-after-ms", optarg, 0, 86400000,
                                &conf->retry_after_ms);
            break;
        case 'N':
            conf->retry_after = -1;
            conf->retry_after_ms = -1;
            break;
        case 'b':
            rc = rg_mock_number("max-body", optarg, 1, LONG_MAX,
                                &conf->max_body);
            break;
        case 'i':
            rc = rg_mock_number("idle-timeout", optarg, 0, 86400,
                                &conf->idle_timeout);
            break;
        case 'c':
            rc = rg_mock_number("stream-chunk", optarg, 1, 1048576,
                                &conf->stream_chunk);
            break;
        case 'd':
            rc = rg_mock_number("stream-delay", optarg, 0, 86400000,
                                &conf->stream_delay);
            break;
        case 'I':
            conf->stream_interleave = 1;
            break;
        case 'C':
            conf->stream_crlf = 1;
            break;
        case 'm':
            conf->stream_comments = 1;
            break;
        case 'D':
            conf->stream_no_done = 1;
            break;
        case 'K':
            conf->cache = 1;
            break;
        case 'L':
            conf->request_log = optarg;
            break;
        case 'O':
            conf->otlp_log = optarg;
            break;
        case 'S':
            rc = rg_mock_number("otlp-status", optarg, 200, 599,
                                &conf->otlp_status);
            break;
        case 'g':
            rc = rg_mock_number("page-delay", optarg, 0, 86400000,
                                &conf->page_delay);
            break;
        case 'q':
            conf->quiet = 1;
            break;
        case 'R':
            if (optarg[0] == '\0' || strpbrk(optarg, "\r\n: ") != NULL) {
                fprintf(stderr, "rg_mock: invalid --request-id header name "
                        "\"%s\"\n", optarg);
                return RG_ERROR;
            }
            conf->request_id = optarg;
            break;
        case '?' + 256:
            rg_mock_usage(stdout);
            exit(0);
        default:
            rg_mock_usage(stderr);
            return RG_ERROR;
        }

        if (rc != RG_OK) {
            return RG_ERROR;
        }
    }

    if (optind < argc) {
        fprintf(stderr, "rg_mock: unexpected argument \"%s\"\n", argv[optind]);
        rg_mock_usage(stderr);
        return RG_ERROR;
    }

    return RG_OK;
}


static void
rg_mock_raise_nofile(void)
{
    struct rlimit  rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        return;
    }

    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            fprintf(stderr, "rg_mock: setrlimit(RLIMIT_NOFILE) failed "
                    "(%d: %s)\n", errno, strerror(errno));
        }
    }
}


static rg_int_t
rg_mock_write_port_file(const char *file, int port)
{
    char   tmp[PATH_MAX];
    FILE  *f;

    if ((size_t) snprintf(tmp, sizeof(tmp), "%s.tmp", file) >= sizeof(tmp)) {
        fprintf(stderr, "rg_mock: port file name \"%s\" too long\n", file);
        return RG_ERROR;
    }

    f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "rg_mock: cannot open \"%s\" (%d: %s)\n",
                tmp, errno, strerror(errno));
        return RG_ERROR;
    }

    fprintf(f, "%d\n", port);

    if (fclose(f) != 0) {
        fprintf(stderr, "rg_mock: cannot write \"%s\" (%d: %s)\n",
                tmp, errno, strerror(errno));
        unlink(tmp);
        return RG_ERROR;
    }

    if (rename(tmp, file) != 0) {
        fprintf(stderr, "rg_mock: cannot rename \"%s\" to \"%s\" (%d: %s)\n",
                tmp, file, errno, strerror(errno));
        unlink(tmp);
        return RG_ERROR;
    }

    return RG_OK;
}


/* Binds with a large backlog (10,000 clients may connect at once) and hands
 * the listener to evhttp; returns the bound port or -1. */

static int
rg_mock_listen(void)
{
    int                       rc, port;
    char                      service[16];
    socklen_t                 len;
    struct addrinfo           hints, *res, *ai;
    struct evconnlistener    *lev;
    struct sockaddr_storage   ss;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;

    snprintf(service, sizeof(service), "%ld", rg_mock.conf.port);

    rc = getaddrinfo(rg_mock.conf.host, service, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "rg_mock: cannot resolve \"%s\": %s\n",
                rg_mock.conf.host, gai_strerror(rc));
        return -1;
    }

    lev = NULL;

    /* a socket its parent bound and listens on: its port is known before
     * the mock runs, and no connection is refused meanwhile */
    if (rg_mock.conf.listen_fd >= 0) {
        freeaddrinfo(res);
        res = NULL;

        if (evutil_make_socket_nonblocking((evutil_socket_t)
                                           rg_mock.conf.listen_fd) == 0
            && evutil_make_socket_closeonexec((evutil_socket_t)
                                              rg_mock.conf.listen_fd) == 0)
        {
            lev = evconnlistener_new(rg_mock.base, NULL, NULL,
                                     LEV_OPT_CLOSE_ON_FREE, 0,
                                     (evutil_socket_t) rg_mock.conf.listen_fd);
        }
    }

    for (ai = res; ai != NULL; ai = ai->ai_next) {
        lev = evconnlistener_new_bind(rg_mock.base, NULL, NULL,
                                      LEV_OPT_CLOSE_ON_FREE
                                      | LEV_OPT_CLOSE_ON_EXEC
                                      | LEV_OPT_REUSEABLE,
                                      RG_MOCK_BACKLOG, ai->ai_addr,
                                      (int) ai->ai_addrlen);
        if (lev != NULL) {
            break;
        }
    }

    if (res != NULL) {
        freeaddrinfo(res);
    }

    if (lev == NULL && rg_mock.conf.listen_fd >= 0) {
        fprintf(stderr, "rg_mock: cannot accept on descriptor %ld (%d: %s)\n",
                rg_mock.conf.listen_fd, errno, strerror(errno));
        return -1;
    }

    if (lev == NULL) {
        fprintf(stderr, "rg_mock: cannot listen on %s:%ld (%d: %s)\n",
                rg_mock.conf.host, rg_mock.conf.port, errno, strerror(errno));
        return -1;
    }

    if (evhttp_bind_listener(rg_mock.http, lev) == NULL) {
        fprintf(stderr, "rg_mock: evhttp_bind_listener() failed\n");
        evconnlistener_free(lev);
        return -1;
    }

    len = sizeof(ss);
    if (getsockname(evconnlistener_get_fd(lev), (struct sockaddr *) &ss,
                    &len) != 0)
    {
        fprintf(stderr, "rg_mock: getsockname() failed (%d: %s)\n",
                errno, strerror(errno));
        return -1;
    }

    if (ss.ss_family == AF_INET6) {
        port = ntohs(((struct sockaddr_in6 *) &ss)->sin6_port);

    } else {
        port = ntohs(((struct sockaddr_in *) &ss)->sin_port);
    }

    return port;
}


int
main(int argc, char **argv)
{
    int             port, rc;
    struct timeval  tv;

    rc = 1;

    if (rg_mock_options(argc, argv) != RG_OK) {
        return 2;
    }

    rg_mock_raise_nofile();
    signal(SIGPIPE, SIG_IGN);
    clock_gettime(CLOCK_MONOTONIC, &rg_mock.start);

    rg_mock.base = event_base_new();
    if (rg_mock.base == NULL) {
        fprintf(stderr, "rg_mock: event_base_new() failed\n");
        return 1;
    }

    if (rg_mock.conf.script_file != NULL
        && rg_mock_script_load(rg_mock.conf.script_file) != RG_OK)
    {
        goto done;
    }

    rg_mock.http = evhttp_new(rg_mock.base);
    if (rg_mock.http == NULL) {
        fprintf(stderr, "rg_mock: evhttp_new() failed\n");
        goto done;
    }

    evhttp_set_max_body_size(rg_mock.http, rg_mock.conf.max_body);
    evhttp_set_gencb(rg_mock.http, rg_mock_handler, NULL);

    if (rg_mock.conf.idle_timeout > 0) {
        evhttp_set_timeout(rg_mock.http, (int) rg_mock.conf.idle_timeout);
    }

    if (rg_mock.conf.latency > 0) {
        tv.tv_sec = rg_mock.conf.latency / 1000;
        tv.tv_usec = (rg_mock.conf.latency % 1000) * 1000;
        rg_mock.latency_tv = event_base_init_common_timeout(rg_mock.base,
                                                            &tv);
    }

    if (rg_mock.conf.stream_delay > 0) {
        tv.tv_sec = rg_mock.conf.stream_delay / 1000;
        tv.tv_usec = (rg_mock.conf.stream_delay % 1000) * 1000;
        rg_mock.stream_tv = event_base_init_common_timeout(rg_mock.base,
                                                           &tv);
        if (rg_mock.stream_tv == NULL) {
            fprintf(stderr, "rg_mock: cannot set up the stream delay\n");
            goto done;
        }
    }

    rg_mock.sigterm = evsignal_new(rg_mock.base, SIGTERM,
                                   rg_mock_signal_handler, NULL);
    rg_mock.sigint = evsignal_new(rg_mock.base, SIGINT,
                                  rg_mock_signal_handler, NULL);

    if (rg_mock.sigterm == NULL || rg_mock.sigint == NULL
        || evsignal_add(rg_mock.sigterm, NULL) != 0
        || evsignal_add(rg_mock.sigint, NULL) != 0)
    {
        fprintf(stderr, "rg_mock: cannot install signal events\n");
        goto done;
    }

    port = rg_mock_listen();
    if (port < 0) {
        goto done;
    }

    if (rg_mock.conf.port_file != NULL
        && rg_mock_write_port_file(rg_mock.conf.port_file, port) != RG_OK)
    {
        goto done;
    }

    fprintf(stderr, strchr(rg_mock.conf.host, ':')
                    ? "rg_mock: listening on [%s]:%d\n"
                    : "rg_mock: listening on %s:%d\n",
            rg_mock.conf.host, port);

    if (rg_mock.script != NULL) {
        rg_mock_log("script \"%s\": %zu entries", rg_mock.conf.script_file,
                    json_array_size(rg_mock.script));
    }

    if (event_base_dispatch(rg_mock.base) != 0) {
        fprintf(stderr, "rg_mock: event_base_dispatch() failed\n");
        goto done;
    }

    rg_mock_log("requests: %" PRIu64 ", completions: %" PRIu64 ", faults: %"
                PRIu64 ", rejected: %" PRIu64 ", max inflight: %" PRIu64,
                rg_mock.stats.requests, rg_mock.stats.completions,
                rg_mock.stats.faults, rg_mock.stats.rejected,
                rg_mock.stats.max_inflight);

    rc = 0;

done:

    /* frees every connection; pending replies go in rg_mock_close_handler */
    if (rg_mock.http != NULL) {
        evhttp_free(rg_mock.http);
    }

    while (rg_mock.pending != NULL) {
        rg_mock_pending_free(rg_mock.pending);
    }

    if (rg_mock.sigterm != NULL) {
        event_free(rg_mock.sigterm);
    }

    if (rg_mock.sigint != NULL) {
        event_free(rg_mock.sigint);
    }

    json_decref(rg_mock.script);
    json_decref(rg_mock.last_headers);
    json_decref(rg_mock.last_body);

    event_base_free(rg_mock.base);
    libevent_global_shutdown();

    return rc;
}
