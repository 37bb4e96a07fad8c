/* rg_batch.c: `reagent batch`. Reads JSONL tasks {"id","agent","input"},
 * keeps up to `concurrency` sessions running on the reactor, writes one
 * JSONL result per task {"id","status","answer","rounds","tokens","ms",
 * "error"} as each ends, and prints a summary. A malformed line becomes an
 * error result for that line, never an abort. Input from a pipe is read
 * without blocking the reactor; a regular file is read in chunks. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_batch.h>
#include <rg_session.h>
#include <rg_secret.h>
#include <jansson.h>
#include <event2/event.h>
#include <signal.h>


#define RG_BATCH_MAX_LINE   (1024 * 1024)
#define RG_BATCH_CHUNK      65536


typedef struct {
    rg_engine_t        *engine;
    rg_batch_opts_t    *opts;

    int                 in_fd;
    int                 out_fd;
    unsigned            in_regular:1;
    unsigned            in_eof:1;
    unsigned            in_waiting:1;
    unsigned            stopping:1;
    unsigned            progress:1;
    struct event       *in_ev;
    struct event       *progress_ev;
    struct event       *sigint_ev;
    struct event       *sigterm_ev;

    rg_buf_t            in;           /* bytes read, not yet a task */
    size_t              in_pos;
    rg_uint_t           lineno;

    rg_uint_t           running;
    rg_uint_t           tasks;
    rg_uint_t           by_state[RG_SESSION_NSTATES];
    rg_uint_t           invalid;
    rg_uint_t           write_errors;

    uint32_t           *times;        /* ms per finished task */
    rg_uint_t           ntimes;
    rg_uint_t           times_cap;

    rg_session_t      **live;         /* for cancellation */
    rg_uint_t           nlive;

    rg_msec_t           started;
    uint64_t            cpu_started;
    long                rss_started;
} rg_batch_t;


static void rg_batch_pump(rg_batch_t *b);


static void
rg_batch_write(rg_batch_t *b, json_t *result)
{
    char    *line;
    size_t   len, off;
    ssize_t  n;

    line = json_dumps(result, JSON_COMPACT);
    if (line == NULL) {
        b->write_errors++;
        return;
    }

    len = rg_secret_scrub(line, strlen(line));
    line[len++] = '\n';       /* json_dumps leaves room for the NUL */

    for (off = 0; off < len; off += n) {
        n = write(b->out_fd, line + off, len - off);
        if (n < 0) {
            if (errno == EINTR) {
                n = 0;
                continue;
            }
            if (b->write_errors++ == 0) {
                rg_log_error(RG_LOG_ERR, b->engine->log, errno,
                             "writing results failed");
            }
            break;
        }
    }

    free(line);
}


static void
rg_batch_invalid(rg_batch_t *b, const char *id, const char *fmt, ...)
{
    char      msg[512], idbuf[32];
    va_list   args;
    json_t   *r;

    va_start(args, fmt);
    vsnprintf(msg, sizeof(msg), fmt, args);
    va_end(args);

    if (id == NULL) {
        snprintf(idbuf, sizeof(idbuf), "line-%lu", (unsigned long) b->lineno);
        id = idbuf;
    }

    r = json_pack("{s:s, s:s, s:n, s:i, s:i, s:i, s:s}",
                  "id", id, "status", "invalid", "answer", "rounds", 0,
                  "tokens", 0, "ms", 0, "error", msg);
    if (r) {
        rg_batch_write(b, r);
        json_decref(r);
    }

    b->invalid++;
    b->tasks++;

    rg_log_error(RG_LOG_WARN, b->engine->log, 0, "task %s: %s", id, msg);
}


static void
rg_batch_time(rg_batch_t *b, rg_msec_t ms)
{
    uint32_t  *t;

    if (b->ntimes == b->times_cap) {
        t = realloc(b->times, (b->times_cap ? b->times_cap * 2 : 1024)
                              * sizeof(uint32_t));
        if (t == NULL) {
            return;
        }
        b->times = t;
        b->times_cap = b->times_cap ? b->times_cap * 2 : 1024;
    }

    b->times[b->ntimes++] = (uint32_t) rg_min(ms, UINT32_MAX);
}


static void
rg_batch_session_done(rg_session_t *s)
{
    json_t      *r, *answer;
    rg_uint_t    i;
    rg_batch_t  *b;
    rg_msec_t    ms;

    b = s->data;
    ms = s->ended - s->started;

    answer = s->answer.data ? json_stringn(s->answer.data, s->answer.len)
                            : json_null();

    r = json_pack("{s:s, s:s, s:o, s:I, s:I, s:I, s:s?}",
                  "id", s->task_id ? s->task_id : s->id,
                  "status", rg_session_state_name(s->state),
                  "answer", answer ? answer : json_null(),
                  "rounds", (json_int_t) s->round,
                  "tokens", (json_int_t) (s->prompt_tokens
                                          + s->completion_tokens),
                  "ms", (json_int_t) ms,
                  "error", s->state == RG_SESSION_DONE ? NULL : s->reason);
    if (r) {
        if (s->state == RG_SESSION_DONE && s->reason) {
            json_object_set_new(r, "note", json_string(s->reason));
        }
        rg_batch_write(b, r);
        json_decref(r);
    }

    b->by_state[s->state]++;
    b->tasks++;
    b->running--;
    rg_batch_time(b, ms);

    for (i = 0; i < b->nlive; i++) {
        if (b->live[i] == s) {
            b->live[i] = b->live[--b->nlive];
            break;
        }
    }

    rg_session_destroy(s);

    rg_batch_pump(b);
}


typedef struct {
    rg_uint_t           max_rounds;   /* 0: the agent's */
    int64_t             max_tokens;   /* -1: the agent's */
    rg_msec_t           deadline;     /* unset: the agent's */
} rg_batch_limits_t;


/* "max_rounds": 4, "max_tokens": 20000, "deadline": "30s" or 30000 (ms) */
static rg_int_t
rg_batch_limits(rg_batch_t *b, const char *id, json_t *task,
    rg_batch_limits_t *l)
{
    json_t    *v;
    rg_str_t   str;

    l->max_rounds = 0;
    l->max_tokens = -1;
    l->deadline = RG_CONF_UNSET_MSEC;

    v = json_object_get(task, "max_rounds");
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < 1
            || json_integer_value(v) > 10000)
        {
            rg_batch_invalid(b, id, "line %lu: \"max_rounds\" must be an "
                             "integer from 1 to 10000",
                             (unsigned long) b->lineno);
            return RG_ERROR;
        }
        l->max_rounds = (rg_uint_t) json_integer_value(v);
    }

    v = json_object_get(task, "max_tokens");
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            rg_batch_invalid(b, id, "line %lu: \"max_tokens\" must be a "
                             "non-negative integer (0: no budget)",
                             (unsigned long) b->lineno);
            return RG_ERROR;
        }
        l->max_tokens = json_integer_value(v);
    }

    v = json_object_get(task, "deadline");
    if (v) {
        if (json_is_integer(v) && json_integer_value(v) >= 0) {
            l->deadline = (rg_msec_t) json_integer_value(v);

        } else if (json_is_string(v)) {
            str.data = (char *) json_string_value(v);
            str.len = json_string_length(v);
            if (rg_conf_parse_msec(&str, &l->deadline) != RG_OK) {
                l->deadline = RG_CONF_UNSET_MSEC;
            }
        }

        if (l->deadline == RG_CONF_UNSET_MSEC) {
            rg_batch_invalid(b, id, "line %lu: \"deadline\" must be a time "
                             "such as \"30s\" or a number of milliseconds",
                             (unsigned long) b->lineno);
            return RG_ERROR;
        }
    }

    return RG_OK;
}


static void
rg_batch_task(rg_batch_t *b, const char *line, size_t len)
{
    rg_batch_limits_t  limits;
    json_t           *task, *jid, *jagent, *jinput;
    json_error_t      err;
    const char       *id;
    char              idbuf[32];
    rg_session_t     *s;
    rg_agent_conf_t  *agent;

    task = json_loadb(line, len, 0, &err);

    if (task == NULL) {
        rg_batch_invalid(b, NULL, "line %lu is not valid JSON: %s",
                         (unsigned long) b->lineno, err.text);
        return;
    }

    if (!json_is_object(task)) {
        rg_batch_invalid(b, NULL, "line %lu is not a JSON object",
                         (unsigned long) b->lineno);
        json_decref(task);
        return;
    }

    jid = json_object_get(task, "id");
    jagent = json_object_get(task, "agent");
    jinput = json_object_get(task, "input");

    if (json_is_string(jid)) {
        id = json_string_value(jid);

    } else if (json_is_integer(jid)) {
        snprintf(idbuf, sizeof(idbuf), "%lld",
                 (long long) json_integer_value(jid));
        id = idbuf;

    } else {
        snprintf(idbuf, sizeof(idbuf), "line-%lu", (unsigned long) b->lineno);
        id = idbuf;
    }

    if (!json_is_string(jinput) || json_string_length(jinput) == 0) {
        rg_batch_invalid(b, id, "line %lu: \"input\" is missing or not a "
                         "non-empty string", (unsigned long) b->lineno);
        json_decref(task);
        return;
    }

    if (jagent && !json_is_null(jagent)) {
        if (!json_is_string(jagent)) {
            rg_batch_invalid(b, id, "line %lu: \"agent\" must be a string",
                             (unsigned long) b->lineno);
            json_decref(task);
            return;
        }

        agent = rg_cycle_agent(b->engine->cycle, json_string_value(jagent),
                               json_string_length(jagent));
    } else {
        agent = rg_cycle_agent(b->engine->cycle, b->opts->agent,
                               strlen(b->opts->agent));
    }

    if (agent == NULL) {
        rg_batch_invalid(b, id, "line %lu: unknown agent \"%.64s\"",
                         (unsigned long) b->lineno,
                         jagent && json_is_string(jagent)
                         ? json_string_value(jagent) : b->opts->agent);
        json_decref(task);
        return;
    }

    if (rg_batch_limits(b, id, task, &limits) != RG_OK) {
        json_decref(task);
        return;
    }

    s = rg_session_create(b->engine, agent, id, json_string_value(jinput),
                          json_string_length(jinput), rg_batch_session_done,
                          b);
    json_decref(task);

    if (s == NULL) {
        rg_batch_invalid(b, id, "out of memory creating the session");
        return;
    }

    /* a task may tighten or loosen its agent's limits */
    if (limits.max_rounds) {
        s->max_rounds = limits.max_rounds;
    }
    if (limits.max_tokens >= 0) {
        s->max_tokens = limits.max_tokens;
    }
    if (limits.deadline != RG_CONF_UNSET_MSEC) {
        s->deadline = limits.deadline;
    }

    b->live[b->nlive++] = s;
    b->running++;

    if (b->stopping) {
        rg_session_cancel(s, "interrupted before it started");
        return;
    }

    rg_session_start(s);
}


/* reads more input; RG_AGAIN when a pipe has nothing yet */
static rg_int_t
rg_batch_read(rg_batch_t *b)
{
    ssize_t  n;

    /* drop what was consumed */
    if (b->in_pos) {
        memmove(b->in.data, b->in.data + b->in_pos, b->in.len - b->in_pos);
        b->in.len -= b->in_pos;
        b->in_pos = 0;
    }

    if (rg_buf_reserve(&b->in, RG_BATCH_CHUNK) != RG_OK) {
        return RG_ERROR;
    }

    n = read(b->in_fd, b->in.data + b->in.len, RG_BATCH_CHUNK);

    if (n > 0) {
        b->in.len += n;
        return RG_OK;
    }

    if (n == 0) {
        b->in_eof = 1;
        return RG_OK;
    }

    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        return RG_AGAIN;
    }

    rg_log_error(RG_LOG_ERR, b->engine->log, errno, "reading tasks failed");
    b->in_eof = 1;

    return RG_ERROR;
}


static void
rg_batch_pump(rg_batch_t *b)
{
    char      *nl, *line;
    size_t     len;
    rg_int_t   rc;

    while (!b->stopping && b->running < (rg_uint_t) b->opts->concurrency) {

        nl = b->in.len > b->in_pos
             ? memchr(b->in.data + b->in_pos, '\n', b->in.len - b->in_pos)
             : NULL;

        if (nl == NULL && !b->in_eof) {
            if (b->in.len - b->in_pos > RG_BATCH_MAX_LINE) {
                b->lineno++;
                rg_batch_invalid(b, NULL, "line %lu is longer than 1m",
                                 (unsigned long) b->lineno);
                /* skip to the end of that line */
                b->in_pos = b->in.len;
                while (!b->in_eof) {
                    rc = rg_batch_read(b);
                    if (rc != RG_OK) {
                        break;
                    }
                    nl = memchr(b->in.data, '\n', b->in.len);
                    if (nl) {
                        b->in_pos = nl - b->in.data + 1;
                        break;
                    }
                    b->in.len = 0;
                }
                continue;
            }

            rc = rg_batch_read(b);

            if (rc == RG_AGAIN) {
                if (!b->in_waiting) {
                    event_add(b->in_ev, NULL);
                    b->in_waiting = 1;
                }
                return;
            }

            if (rc == RG_ERROR && !b->in_eof) {
                return;
            }

            continue;
        }

        if (nl == NULL) {
            /* the last line may lack its newline */
            if (b->in.len == b->in_pos) {
                break;
            }
            nl = b->in.data + b->in.len;
        }

        line = b->in.data + b->in_pos;
        len = nl - line;
        b->in_pos = (nl - b->in.data) + (nl < b->in.data + b->in.len);
        b->lineno++;

        while (len && (line[len - 1] == '\r' || line[len - 1] == ' '
                       || line[len - 1] == '\t'))
        {
            len--;
        }

        while (len && (*line == ' ' || *line == '\t')) {
            line++;
            len--;
        }

        if (len == 0) {
            continue;            /* blank lines are not tasks */
        }

        rg_batch_task(b, line, len);
    }

    if (b->in_waiting && (b->stopping
                          || b->running >= (rg_uint_t) b->opts->concurrency))
    {
        event_del(b->in_ev);
        b->in_waiting = 0;
    }

    if (b->running == 0 && (b->in_eof || b->stopping)
        && (b->in_pos >= b->in.len || b->stopping))
    {
        event_base_loopbreak(b->engine->base);
    }
}


static void
rg_batch_input_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_batch_t  *b;

    b = arg;

    event_del(b->in_ev);
    b->in_waiting = 0;

    rg_batch_pump(b);
}


static void
rg_batch_show_progress(rg_batch_t *b, int final)
{
    char       bar[41], line[256];
    int        n;
    rg_uint_t  i, filled, done;
    double     secs;

    done = b->tasks;
    secs = (double) (rg_monotonic_msec() - b->started) / 1000;

    /* the total is unknown while input streams in: show a spinner width */
    filled = b->in_eof && done + b->running
             ? (rg_uint_t) (40.0 * done / (done + b->running)) : 0;

    for (i = 0; i < 40; i++) {
        bar[i] = i < filled ? '#' : '-';
    }
    bar[40] = '\0';

    n = snprintf(line, sizeof(line), "\r[%s] %lu done, %lu running, "
                 "%lu failed  %.1fs%s", bar, (unsigned long) done,
                 (unsigned long) b->running,
                 (unsigned long) (done - b->by_state[RG_SESSION_DONE]),
                 secs, final ? "\n" : "\033[K");

    if (n > 0 && write(STDERR_FILENO, line, rg_min((size_t) n,
                                                  sizeof(line) - 1)) < 0)
    {
        /* a progress bar is not worth an error */
    }
}


static void
rg_batch_progress_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_batch_show_progress(arg, 0);
}


static void
rg_batch_signal_handler(evutil_socket_t sig, short what, void *arg)
{
    rg_uint_t      i, n;
    rg_batch_t    *b;
    rg_session_t **copy;

    b = arg;

    if (b->stopping) {
        rg_log_error(RG_LOG_NOTICE, b->engine->log, 0,
                     "second signal %d: exiting now", (int) sig);
        _exit(130);
    }

    rg_log_error(RG_LOG_NOTICE, b->engine->log, 0,
                 "signal %d: cancelling %lu running tasks; results are "
                 "written as \"cancelled\" (again to exit now)", (int) sig,
                 (unsigned long) b->nlive);

    b->stopping = 1;

    /* cancelling ends sessions, which edits live[]: work on a copy */
    n = b->nlive;
    copy = malloc(n * sizeof(rg_session_t *) + 1);
    if (copy == NULL) {
        _exit(130);
    }

    memcpy(copy, b->live, n * sizeof(rg_session_t *));

    for (i = 0; i < n; i++) {
        rg_session_cancel(copy[i], "interrupted by a signal");
    }

    free(copy);

    rg_batch_pump(b);
}


static int
rg_batch_cmp(const void *a, const void *b)
{
    uint32_t  x, y;

    x = *(const uint32_t *) a;
    y = *(const uint32_t *) b;

    return (x > y) - (x < y);
}


static void
rg_batch_summary(rg_batch_t *b)
{
    char                states[512];
    size_t              len;
    rg_uint_t           i;
    double              secs, cpu_per_call;
    uint64_t            cpu, calls;
    uint32_t            p50, p99;
    rg_engine_stats_t  *st;

    st = &b->engine->stats;
    secs = (double) (rg_monotonic_msec() - b->started) / 1000;
    cpu = rg_cpu_usec() - b->cpu_started;
    calls = st->model_calls;
    cpu_per_call = calls ? (double) cpu / calls : 0;

    p50 = p99 = 0;
    if (b->ntimes) {
        qsort(b->times, b->ntimes, sizeof(uint32_t), rg_batch_cmp);
        p50 = b->times[(b->ntimes - 1) / 2];
        p99 = b->times[(b->ntimes - 1) * 99 / 100];
    }

    states[0] = '\0';
    len = 0;

    for (i = RG_SESSION_DONE; i < RG_SESSION_NSTATES; i++) {
        if (b->by_state[i] || i == RG_SESSION_DONE
            || i == RG_SESSION_FAILED)
        {
            len += snprintf(states + len, sizeof(states) - len, "%s%lu %s",
                            len ? ", " : "", (unsigned long) b->by_state[i],
                            rg_session_state_name(i));
        }
    }

    if (b->invalid) {
        snprintf(states + len, sizeof(states) - len, ", %lu invalid",
                 (unsigned long) b->invalid);
    }

    fprintf(stderr,
            "batch: %lu tasks in %.2fs: %s\n"
            "  model calls %llu (retries %llu), tool calls %llu "
            "(errors %llu, dedupe hits %llu, repeats %llu), tokens %llu\n"
            "  task time p50 %lu ms, p99 %lu ms; cpu %.1f us per model call; "
            "peak rss %.1f MiB (%.1f KiB per concurrent task)\n",
            (unsigned long) b->tasks, secs, states,
            (unsigned long long) calls,
            (unsigned long long) rg_engine_llm_retries(b->engine),
            (unsigned long long) st->tool_calls,
            (unsigned long long) st->tool_errors,
            (unsigned long long) st->dedupe_hits,
            (unsigned long long) st->repeats,
            (unsigned long long) (st->prompt_tokens + st->completion_tokens),
            (unsigned long) p50, (unsigned long) p99, cpu_per_call,
            (double) rg_peak_rss_kb() / 1024,
            (double) (rg_peak_rss_kb() - b->rss_started)
            / rg_max(rg_min((rg_uint_t) b->opts->concurrency, b->tasks), 1));
}


int
rg_batch_run(rg_engine_t *e, rg_batch_opts_t *opts)
{
    int          rc, flags;
    struct stat  st;
    rg_batch_t   b;
    struct timeval tv;

    memset(&b, 0, sizeof(b));
    b.engine = e;
    b.opts = opts;
    b.out_fd = STDOUT_FILENO;

    if (opts->agent == NULL) {
        opts->agent = e->cycle->default_agent.data;
    }

    if (opts->concurrency <= 0) {
        opts->concurrency = e->cycle->concurrency;
    }

    if (strcmp(opts->input, "-") == 0) {
        b.in_fd = STDIN_FILENO;
    } else {
        b.in_fd = open(opts->input, O_RDONLY | O_CLOEXEC);
        if (b.in_fd == -1) {
            fprintf(stderr, "reagent: cannot open tasks \"%s\": %s\n",
                    opts->input, strerror(errno));
            return 1;
        }
    }

    if (opts->output) {
        b.out_fd = open(opts->output, O_WRONLY | O_CREAT | O_TRUNC
                                      | O_CLOEXEC, 0644);
        if (b.out_fd == -1) {
            fprintf(stderr, "reagent: cannot open results \"%s\": %s\n",
                    opts->output, strerror(errno));
            if (b.in_fd != STDIN_FILENO) {
                close(b.in_fd);
            }
            return 1;
        }
    }

    if (fstat(b.in_fd, &st) == 0 && S_ISREG(st.st_mode)) {
        b.in_regular = 1;

    } else {
        flags = fcntl(b.in_fd, F_GETFL);
        if (flags != -1) {
            fcntl(b.in_fd, F_SETFL, flags | O_NONBLOCK);
        }
    }

    b.live = calloc(opts->concurrency, sizeof(rg_session_t *));
    b.in_ev = event_new(e->base, b.in_fd, EV_READ, rg_batch_input_handler,
                        &b);
    b.sigint_ev = evsignal_new(e->base, SIGINT, rg_batch_signal_handler, &b);
    b.sigterm_ev = evsignal_new(e->base, SIGTERM, rg_batch_signal_handler,
                                &b);

    if (b.live == NULL || b.in_ev == NULL || b.sigint_ev == NULL
        || b.sigterm_ev == NULL)
    {
        fprintf(stderr, "reagent: out of memory\n");
        rc = 1;
        goto done;
    }

    event_add(b.sigint_ev, NULL);
    event_add(b.sigterm_ev, NULL);

    b.progress = opts->progress == -1 ? isatty(STDERR_FILENO)
                                      : opts->progress > 0;

    if (b.progress && !opts->quiet) {
        b.progress_ev = event_new(e->base, -1, EV_PERSIST,
                                  rg_batch_progress_handler, &b);
        if (b.progress_ev) {
            tv.tv_sec = 0;
            tv.tv_usec = 200000;
            event_add(b.progress_ev, &tv);
        }
    }

    b.started = rg_monotonic_msec();
    b.cpu_started = rg_cpu_usec();
    b.rss_started = rg_current_rss_kb();

    rg_batch_pump(&b);

    if (b.running || !(b.in_eof || b.stopping)) {
        event_base_dispatch(e->base);
    }

    if (b.progress_ev) {
        rg_batch_show_progress(&b, 1);
    }

    if (!opts->quiet) {
        rg_batch_summary(&b);
    }

    rc = (b.tasks == b.by_state[RG_SESSION_DONE] && b.write_errors == 0)
         ? 0 : 2;

    if (b.stopping) {
        rc = 130;
    }

done:

    if (b.progress_ev) {
        event_free(b.progress_ev);
    }
    if (b.sigint_ev) {
        event_free(b.sigint_ev);
    }
    if (b.sigterm_ev) {
        event_free(b.sigterm_ev);
    }
    if (b.in_ev) {
        event_free(b.in_ev);
    }

    free(b.live);
    free(b.times);
    rg_buf_free(&b.in);

    if (b.in_fd != STDIN_FILENO) {
        close(b.in_fd);
    }

    if (b.out_fd != STDOUT_FILENO && close(b.out_fd) != 0) {
        rc = rc ? rc : 2;
    }

    return rc;
}
