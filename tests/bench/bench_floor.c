/* bench_floor.c: the floor of make bench: a minimal agent loop on the
 * libraries reagent uses (libevent, the curl multi socket interface,
 * jansson), written the plain way, for reagent's figures to be read
 * beside. Each of N sessions, all at once, posts the conversation and the
 * calc tool to the mock model, runs the tool calls of the answer in
 * process (a small calculator), appends the results and posts again, up
 * to the final answer; a result line per session goes to -o. Owns nothing
 * of reagent's: no guards, no budgets, no retries, no transcripts. Every
 * 16 sessions share a connection cache (a curl share): with one cache for
 * all, curl looks for a free connection among every connection to the
 * host, which at 10,000 sessions costs more than the rest of a call.
 *
 *     bench_floor URL N OUT
 *
 * prints "floor: N sessions in S s: D done, F failed, C model calls, cpu
 * U us per model call; peak rss M MiB (K KiB per concurrent task)" on
 * stderr, the figures of reagent's batch summary. */

#include <curl/curl.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <jansson.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>


typedef struct rg_floor_s  rg_floor_t;


typedef struct {
    rg_floor_t               *floor;
    CURL                     *easy;
    char                     *conv;         /* the messages, in JSON */
    size_t                    conv_len;
    size_t                    conv_cap;
    char                     *body;
    size_t                    body_cap;
    char                     *resp;
    size_t                    len;
    size_t                    cap;
    unsigned                  id;
    unsigned                  calls;
    char                      rid[64];
    char                      rid_header[64];
    struct curl_slist         rid_node;
} rg_floor_session_t;


typedef struct {
    struct event              ev;
    short                     kind;
} rg_floor_sock_t;


struct rg_floor_s {
    struct event_base        *base;
    struct event             *timer;
    CURLM                    *multi;
    struct curl_slist        *headers;
    CURLSH                  **shares;       /* a cache per 16 sessions */
    char                     *tools;        /* in JSON, dumped once */
    size_t                    tools_len;
    const char               *url;
    FILE                     *out;
    unsigned                  running;
    unsigned                  done;
    unsigned                  failed;
    unsigned long             calls;
};


static const char  rg_floor_tools[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"calc\",\"description\":"
    "\"Evaluate an arithmetic expression exactly as written and return the "
    "number. Supports + - * / % ^ (power), parentheses, unary minus, "
    "decimals and exponents (1e3), the functions sqrt, abs, floor, ceil, "
    "round, ln, log10, sin, cos, tan (radians), min(a,b,...), max(a,b,...) "
    "and the constants pi and e.\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"expression\":{\"type\":\"string\",\"description\":"
    "\"The expression to evaluate, at most 1024 bytes, such as 2*(3+4) or "
    "sqrt(2)^2\",\"examples\":[\"2*(3+4)\",\"17*23+4\",\"sqrt(144)/3\","
    "\"2^10-1\",\"(1+2)*(3+4)\",\"100/8\",\"max(3,9,4)\","
    "\"round(pi*1000)\"]}},\"required\":[\"expression\"]}}}]";


static void rg_floor_post(rg_floor_session_t *s);


/* the tool: + - * / ^, parentheses, unary minus, sqrt, max */

static double rg_floor_expr(const char **p);


static double
rg_floor_primary(const char **p)
{
    double  v, w;
    char   *end;

    if (**p == '(') {
        (*p)++;
        v = rg_floor_expr(p);
        if (**p == ')') {
            (*p)++;
        }
        return v;
    }

    if (**p == '-') {
        (*p)++;
        return -rg_floor_primary(p);
    }

    if (strncmp(*p, "sqrt(", 5) == 0) {
        *p += 4;
        return sqrt(rg_floor_primary(p));
    }

    if (strncmp(*p, "max(", 4) == 0) {
        *p += 4;
        v = rg_floor_expr(p);
        while (**p == ',') {
            (*p)++;
            w = rg_floor_expr(p);
            v = w > v ? w : v;
        }
        if (**p == ')') {
            (*p)++;
        }
        return v;
    }

    v = strtod(*p, &end);
    *p = end;

    return v;
}


static double
rg_floor_power(const char **p)
{
    double  v;

    v = rg_floor_primary(p);

    if (**p == '^') {
        (*p)++;
        return pow(v, rg_floor_power(p));
    }

    return v;
}


static double
rg_floor_term(const char **p)
{
    double  v;
    char    op;

    v = rg_floor_power(p);

    while (**p == '*' || **p == '/') {
        op = *(*p)++;
        v = op == '*' ? v * rg_floor_power(p) : v / rg_floor_power(p);
    }

    return v;
}


static double
rg_floor_expr(const char **p)
{
    double  v;
    char    op;

    v = rg_floor_term(p);

    while (**p == '+' || **p == '-') {
        op = *(*p)++;
        v = op == '+' ? v + rg_floor_term(p) : v - rg_floor_term(p);
    }

    return v;
}


static json_t *
rg_floor_tool(const char *arguments)
{
    char          buf[64];
    json_t       *args;
    const char   *e;

    args = json_loads(arguments, 0, NULL);
    e = json_string_value(json_object_get(args, "expression"));

    if (e == NULL) {
        json_decref(args);
        return json_string("error: no expression");
    }

    snprintf(buf, sizeof(buf), "%.15g", rg_floor_expr(&e));
    json_decref(args);

    return json_string(buf);
}


/* a message joins the conversation: each is dumped once */
static int
rg_floor_append(rg_floor_session_t *s, json_t *msg)
{
    char    *m, *b;
    size_t   n;

    m = json_dumps(msg, JSON_COMPACT);
    if (m == NULL) {
        return -1;
    }

    n = strlen(m);

    if (s->conv_len + n + 1 > s->conv_cap) {
        s->conv_cap = (s->conv_len + n + 1) * 2;
        b = realloc(s->conv, s->conv_cap);
        if (b == NULL) {
            free(m);
            return -1;
        }
        s->conv = b;
    }

    if (s->conv_len) {
        s->conv[s->conv_len++] = ',';
    }

    memcpy(s->conv + s->conv_len, m, n);
    s->conv_len += n;
    free(m);

    return 0;
}


/* a session's answer */

static void
rg_floor_end(rg_floor_session_t *s, const char *status, json_t *answer)
{
    json_t  *r;

    r = json_pack("{s:s, s:s, s:O, s:I}", "id", s->rid, "status", status,
                  "answer", answer ? answer : json_null(),
                  "model_calls", (json_int_t) s->calls);
    if (r) {
        json_dumpf(r, s->floor->out, JSON_COMPACT);
        fputc('\n', s->floor->out);
        json_decref(r);
    }

    if (strcmp(status, "done") == 0) {
        s->floor->done++;
    } else {
        s->floor->failed++;
    }

    if (--s->floor->running == 0) {
        event_base_loopbreak(s->floor->base);
    }
}


static void
rg_floor_answer(rg_floor_session_t *s)
{
    size_t   i;
    json_t  *root, *msg, *calls, *call, *fn, *tool, *m;

    root = json_loadb(s->resp, s->len, 0, NULL);
    msg = json_object_get(json_array_get(json_object_get(root, "choices"),
                                         0), "message");

    if (msg == NULL) {
        rg_floor_end(s, "failed", NULL);
        json_decref(root);
        return;
    }

    calls = json_object_get(msg, "tool_calls");

    if (json_array_size(calls) == 0) {
        rg_floor_end(s, "done", json_object_get(msg, "content"));
        json_decref(root);
        return;
    }

    if (rg_floor_append(s, msg) != 0) {
        rg_floor_end(s, "failed", NULL);
        json_decref(root);
        return;
    }

    json_array_foreach(calls, i, call) {
        fn = json_object_get(call, "function");
        tool = rg_floor_tool(json_string_value(json_object_get(fn,
                                                               "arguments")));
        m = json_pack("{s:s, s:O, s:o}", "role", "tool", "tool_call_id",
                      json_object_get(call, "id"), "content", tool);

        if (m == NULL || rg_floor_append(s, m) != 0) {
            json_decref(m);
            rg_floor_end(s, "failed", NULL);
            json_decref(root);
            return;
        }

        json_decref(m);
    }

    json_decref(root);
    rg_floor_post(s);
}


static void
rg_floor_check(rg_floor_t *f)
{
    int                  left;
    long                 status;
    CURLMsg             *m;
    rg_floor_session_t  *s;

    while ((m = curl_multi_info_read(f->multi, &left))) {
        if (m->msg != CURLMSG_DONE) {
            continue;
        }

        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **) &s);
        curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
        curl_multi_remove_handle(f->multi, m->easy_handle);
        f->calls++;
        s->calls++;

        if (m->data.result != CURLE_OK || status != 200) {
            rg_floor_end(s, "failed", NULL);
            continue;
        }

        rg_floor_answer(s);
    }
}


/* the request */

static size_t
rg_floor_write(char *p, size_t size, size_t n, void *data)
{
    char                *b;
    rg_floor_session_t  *s;

    s = data;
    n *= size;

    if (s->len + n > s->cap) {
        s->cap = (s->len + n) * 2;
        b = realloc(s->resp, s->cap);
        if (b == NULL) {
            return 0;
        }
        s->resp = b;
    }

    memcpy(s->resp + s->len, p, n);
    s->len += n;

    return n;
}


/* sessions per connection cache */
#define RG_FLOOR_SHARE  16


#define RG_FLOOR_HEAD  "{\"model\":\"mock-1\",\"temperature\":0," \
                       "\"tool_choice\":\"auto\",\"tools\":"
#define RG_FLOOR_MSGS  ",\"messages\":["


/* the body: the constant part, the conversation so far */
static void
rg_floor_post(rg_floor_session_t *s)
{
    char        *b, *p;
    size_t       n;
    rg_floor_t  *f;

    f = s->floor;
    n = sizeof(RG_FLOOR_HEAD) - 1 + f->tools_len + sizeof(RG_FLOOR_MSGS) - 1
        + s->conv_len + 2;

    if (n > s->body_cap) {
        b = realloc(s->body, n * 2);
        if (b == NULL) {
            rg_floor_end(s, "failed", NULL);
            return;
        }
        s->body = b;
        s->body_cap = n * 2;
    }

    p = s->body;
    memcpy(p, RG_FLOOR_HEAD, sizeof(RG_FLOOR_HEAD) - 1);
    p += sizeof(RG_FLOOR_HEAD) - 1;
    memcpy(p, f->tools, f->tools_len);
    p += f->tools_len;
    memcpy(p, RG_FLOOR_MSGS, sizeof(RG_FLOOR_MSGS) - 1);
    p += sizeof(RG_FLOOR_MSGS) - 1;
    memcpy(p, s->conv, s->conv_len);
    p += s->conv_len;
    *p++ = ']';
    *p++ = '}';

    s->len = 0;
    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE, (long) n);
    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, s->body);

    if (curl_multi_add_handle(s->floor->multi, s->easy) != CURLM_OK) {
        rg_floor_end(s, "failed", NULL);
    }
}


static rg_floor_session_t *
rg_floor_session(rg_floor_t *f, unsigned id)
{
    CURL                *e;
    rg_floor_session_t  *s;
    json_t              *m;
    char                 task[64];

    s = calloc(1, sizeof(rg_floor_session_t));
    e = curl_easy_init();
    if (s == NULL || e == NULL) {
        free(s);
        curl_easy_cleanup(e);
        return NULL;
    }

    s->floor = f;
    s->easy = e;
    s->id = id;
    snprintf(s->rid, sizeof(s->rid), "b%u", id);
    snprintf(task, sizeof(task), "bench task %u", id);
    m = json_pack("{s:s, s:s}", "role", "user", "content", task);

    if (m == NULL || rg_floor_append(s, m) != 0) {
        json_decref(m);
        curl_easy_cleanup(e);
        free(s);
        return NULL;
    }

    json_decref(m);

    /* the request id, chained in front of the constant headers */
    snprintf(s->rid_header, sizeof(s->rid_header), "X-Request-ID: floor-%u",
             id);
    s->rid_node.data = s->rid_header;
    s->rid_node.next = f->headers;

    curl_easy_setopt(e, CURLOPT_URL, f->url);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, &s->rid_node);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, rg_floor_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(e, CURLOPT_PRIVATE, s);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_SHARE, f->shares[id / RG_FLOOR_SHARE]);

    return s;
}


/* curl on libevent (as curl's hiperfifo.c, changing an event only when
 * what curl waits for changes) */

static void
rg_floor_event(evutil_socket_t fd, short what, void *arg)
{
    int          running, flags;
    rg_floor_t  *f;

    f = arg;
    flags = (what & EV_READ ? CURL_CSELECT_IN : 0)
            | (what & EV_WRITE ? CURL_CSELECT_OUT : 0);

    curl_multi_socket_action(f->multi, fd, flags, &running);
    rg_floor_check(f);
}


static void
rg_floor_timeout(evutil_socket_t fd, short what, void *arg)
{
    int          running;
    rg_floor_t  *f;

    (void) fd;
    (void) what;
    f = arg;

    curl_multi_socket_action(f->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    rg_floor_check(f);
}


static int
rg_floor_socket_cb(CURL *e, curl_socket_t fd, int what, void *userp,
    void *socketp)
{
    short             kind;
    rg_floor_t       *f;
    rg_floor_sock_t  *s;

    (void) e;
    f = userp;
    s = socketp;

    if (what == CURL_POLL_REMOVE) {
        if (s) {
            event_del(&s->ev);
            free(s);
        }
        return 0;
    }

    kind = EV_PERSIST | (what & CURL_POLL_IN ? EV_READ : 0)
           | (what & CURL_POLL_OUT ? EV_WRITE : 0);

    if (s == NULL) {
        s = calloc(1, sizeof(rg_floor_sock_t));
        if (s == NULL) {
            return -1;
        }
        curl_multi_assign(f->multi, fd, s);

    } else if (s->kind == kind) {
        return 0;

    } else {
        event_del(&s->ev);
    }

    s->kind = kind;
    event_assign(&s->ev, f->base, fd, kind, rg_floor_event, f);

    return event_add(&s->ev, NULL);
}


static int
rg_floor_timer_cb(CURLM *multi, long ms, void *userp)
{
    rg_floor_t      *f;
    struct timeval   tv;

    (void) multi;
    f = userp;

    if (ms < 0) {
        evtimer_del(f->timer);
        return 0;
    }

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;

    return evtimer_add(f->timer, &tv);
}


static double
rg_floor_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


static long
rg_floor_rss_kb(void)
{
    long   pages, rss;
    FILE  *f;

    f = fopen("/proc/self/statm", "r");
    if (f == NULL) {
        return 0;
    }

    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) {
        rss = 0;
    }
    fclose(f);

    return rss * 4;
}


int
main(int argc, char **argv)
{
    long                  rss0;
    double                t0, cpu;
    unsigned              i, n;
    rg_floor_t            f;
    json_t               *tools;
    struct rusage         ru;
    rg_floor_session_t  **s;

    if (argc != 4 || (n = (unsigned) atoi(argv[2])) == 0) {
        fprintf(stderr, "usage: bench_floor URL N OUT\n");
        return 2;
    }

    memset(&f, 0, sizeof(f));
    f.url = argv[1];
    f.out = fopen(argv[3], "w");
    rss0 = rg_floor_rss_kb();

    curl_global_init(CURL_GLOBAL_DEFAULT);
    f.base = event_base_new();
    f.timer = evtimer_new(f.base, rg_floor_timeout, &f);
    f.multi = curl_multi_init();
    tools = json_loads(rg_floor_tools, 0, NULL);
    f.tools = json_dumps(tools, JSON_COMPACT);
    json_decref(tools);
    f.tools_len = f.tools ? strlen(f.tools) : 0;
    f.headers = curl_slist_append(NULL, "Content-Type: application/json");
    f.headers = curl_slist_append(f.headers, "Expect:");
    s = calloc(n, sizeof(rg_floor_session_t *));
    f.shares = calloc(n / RG_FLOOR_SHARE + 1, sizeof(CURLSH *));

    for (i = 0; f.shares && i <= n / RG_FLOOR_SHARE; i++) {
        f.shares[i] = curl_share_init();
        if (f.shares[i] == NULL) {
            fprintf(stderr, "bench_floor: out of memory\n");
            return 1;
        }
        curl_share_setopt(f.shares[i], CURLSHOPT_SHARE,
                          CURL_LOCK_DATA_CONNECT);
    }

    if (f.out == NULL || f.base == NULL || f.timer == NULL || f.multi == NULL
        || f.tools == NULL || f.headers == NULL || s == NULL
        || f.shares == NULL)
    {
        fprintf(stderr, "bench_floor: cannot start\n");
        return 1;
    }

    curl_multi_setopt(f.multi, CURLMOPT_SOCKETFUNCTION, rg_floor_socket_cb);
    curl_multi_setopt(f.multi, CURLMOPT_SOCKETDATA, &f);
    curl_multi_setopt(f.multi, CURLMOPT_TIMERFUNCTION, rg_floor_timer_cb);
    curl_multi_setopt(f.multi, CURLMOPT_TIMERDATA, &f);
    curl_multi_setopt(f.multi, CURLMOPT_MAXCONNECTS, (long) n);

    t0 = rg_floor_now();

    for (i = 0; i < n; i++) {
        s[i] = rg_floor_session(&f, i);
        if (s[i] == NULL) {
            fprintf(stderr, "bench_floor: out of memory\n");
            return 1;
        }
        f.running++;
        rg_floor_post(s[i]);
    }

    event_base_dispatch(f.base);

    getrusage(RUSAGE_SELF, &ru);
    cpu = ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec
          + ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec;

    fprintf(stderr, "floor: %u sessions in %.2fs: %u done, %u failed, %lu "
            "model calls, cpu %.1f us per model call; peak rss %.1f MiB "
            "(%.1f KiB per concurrent task)\n", n, rg_floor_now() - t0,
            f.done, f.failed, f.calls, f.calls ? cpu / f.calls : 0,
            ru.ru_maxrss / 1024.0,
            (double) (ru.ru_maxrss - rss0) / n);

    for (i = 0; i < n; i++) {
        curl_multi_remove_handle(f.multi, s[i]->easy);
        curl_easy_cleanup(s[i]->easy);
        free(s[i]->conv);
        free(s[i]->body);
        free(s[i]->resp);
        free(s[i]);
    }

    free(s);
    curl_multi_cleanup(f.multi);

    for (i = 0; i <= n / RG_FLOOR_SHARE; i++) {
        curl_share_cleanup(f.shares[i]);
    }

    free(f.shares);
    curl_slist_free_all(f.headers);
    free(f.tools);
    event_free(f.timer);
    event_base_free(f.base);
    curl_global_cleanup();
    fclose(f.out);

    return f.done == n ? 0 : 1;
}
