/* rg_batch.c: `reagent batch`. Reads JSONL tasks (rg_task.c), keeps up to
 * `concurrency` sessions running on the reactor, writes one JSONL result
 * per task {"id","status","answer","rounds","tokens","ms","error"} as each
 * ends, and prints a summary. Every line of the input gets exactly one
 * result: a malformed or over-long line an `invalid` one, a task not
 * started when a signal stopped the batch a `cancelled` one.
 *
 * Nothing blocks the reactor. Input from a pipe is read without blocking;
 * a regular file is read in chunks. Results go through an output buffer
 * drained by a write event on a non-blocking descriptor (a regular file
 * is written at once); while the buffer holds more than RG_BATCH_OUT_MAX
 * no task starts, and a results pipe that closes stops the batch.
 *
 * The results file is never truncated: an existing one that is not empty
 * is refused, or with --resume its ids are skipped and results appended. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_batch.h>
#include <rg_task.h>
#include <rg_session.h>
#include <rg_secret.h>
#include <rg_core_conf.h>
#include <rg_agent.h>
#include <jansson.h>
#include <event2/event.h>
#include <event2/buffer.h>
#include <signal.h>


#define RG_BATCH_MAX_LINE   (1024 * 1024)
#define RG_BATCH_CHUNK      65536
/* results waiting for a slow reader: past this no task starts */
#define RG_BATCH_OUT_MAX    (1024 * 1024)


typedef struct {
    rg_engine_t        *engine;
    rg_batch_opts_t    *opts;

    int                 in_fd;
    int                 in_flags;     /* to restore on a shared stdin */
    unsigned            in_restore:1;
    unsigned            in_regular:1;
    unsigned            in_eof:1;
    unsigned            in_waiting:1;
    unsigned            skipping:1;   /* the rest of an over-long line */
    unsigned            stopping:1;
    unsigned            finished:1;
    unsigned            progress:1;
    struct event       *in_ev;
    struct event       *progress_ev;
    struct event       *sigint_ev;
    struct event       *sigterm_ev;

    int                 out_fd;
    int                 out_flags;    /* to restore, when not our own fd */
    unsigned            out_own:1;    /* out_fd is ours to close */
    unsigned            out_restore:1;
    unsigned            out_regular:1;
    unsigned            out_closed:1; /* the reader went away */
    unsigned            out_writing:1;
    struct evbuffer    *out;
    struct event       *out_ev;

    rg_buf_t            in;           /* bytes read, not yet a task */
    size_t              in_pos;
    rg_uint_t           lineno;

    json_t             *done_ids;     /* --resume: ids with a result */
    rg_uint_t           skipped;

    rg_uint_t           running;
    rg_uint_t           tasks;
    rg_uint_t           by_state[RG_SESSION_NSTATES];
    rg_uint_t           invalid;
    rg_uint_t           not_started;
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
static void rg_batch_stop(rg_batch_t *b, const char *reason);


/* output ---------------------------------------------------------------- */

static void
rg_batch_out_failed(rg_batch_t *b, int err)
{
    b->out_closed = 1;
    b->write_errors++;
    evbuffer_drain(b->out, evbuffer_get_length(b->out));

    if (b->out_writing) {
        event_del(b->out_ev);
        b->out_writing = 0;
    }

    if (err == EPIPE) {
        rg_log_error(RG_LOG_ERR, b->engine->log, 0, "the results pipe was "
                     "closed: the batch stops (%lu tasks ended, %lu were "
                     "running)", (unsigned long) b->tasks,
                     (unsigned long) b->running);
    } else {
        rg_log_error(RG_LOG_ERR, b->engine->log, err, "writing results "
                     "failed: the batch stops (%lu tasks ended, %lu were "
                     "running)", (unsigned long) b->tasks,
                     (unsigned long) b->running);
    }

    /* nobody will read what the others would write */
    rg_batch_stop(b, "the results could not be written");
}


/* writes what the reader takes now; the write event does the rest */
static void
rg_batch_flush(rg_batch_t *b)
{
    int  n;

    while (!b->out_closed && evbuffer_get_length(b->out) > 0) {
        n = evbuffer_write(b->out, b->out_fd);

        if (n > 0) {
            continue;
        }

        if (n < 0 && errno == EINTR) {
            continue;
        }

        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!b->out_writing) {
                event_add(b->out_ev, NULL);
                b->out_writing = 1;
            }
            return;
        }

        rg_batch_out_failed(b, n < 0 ? errno : EIO);
        return;
    }

    if (b->out_writing) {
        event_del(b->out_ev);
        b->out_writing = 0;
    }
}


static rg_uint_t
rg_batch_out_full(rg_batch_t *b)
{
    return evbuffer_get_length(b->out) > RG_BATCH_OUT_MAX;
}


static void
rg_batch_write(rg_batch_t *b, json_t *result)
{
    char    *line;
    size_t   len;

    if (b->out_closed) {
        return;
    }

    line = json_dumps(result, JSON_COMPACT);
    if (line == NULL) {
        b->write_errors++;
        return;
    }

    len = rg_secret_scrub(line, strlen(line));
    line[len++] = '\n';       /* json_dumps leaves room for the NUL */

    if (evbuffer_add(b->out, line, len) != 0) {
        b->write_errors++;
    }

    free(line);

    /* a regular file takes it at once; a pipe takes what it can */
    rg_batch_flush(b);
}


/* the batch is over when nothing runs, nothing more will be read and
 * every result is out */
static void
rg_batch_check_end(rg_batch_t *b)
{
    if (b->running == 0
        && (b->out_closed
            || (b->in_eof && b->in_pos >= b->in.len
                && evbuffer_get_length(b->out) == 0)))
    {
        b->finished = 1;
        event_base_loopbreak(b->engine->base);
    }
}


static void
rg_batch_out_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_batch_t  *b;

    b = arg;
    b->out_writing = 0;

    rg_batch_flush(b);

    if (!rg_batch_out_full(b)) {
        rg_batch_pump(b);
    }

    rg_batch_check_end(b);
}


/* results: the same file as the tasks cannot work */
static rg_uint_t
rg_batch_same_file(int a, int b)
{
    struct stat  sa, sb;

    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0
           && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}


/* A pipe or terminal on stdout gets a descriptor of our own in
 * non-blocking mode (a new open of the same pipe), so that the flags of
 * what the shell shares are left alone; where that cannot be, stdout
 * itself is made non-blocking until the batch ends. */
static rg_int_t
rg_batch_out_stdout(rg_batch_t *b)
{
    int          fd, flags;
    struct stat  st;

    b->out_fd = STDOUT_FILENO;

    if (fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode)) {
        b->out_regular = 1;
        return RG_OK;
    }

    fd = open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_CLOEXEC
                                 | O_NOCTTY | O_APPEND);

    if (fd != -1 && rg_batch_same_file(fd, STDOUT_FILENO)) {
        b->out_fd = fd;
        b->out_own = 1;
        return RG_OK;
    }

    if (fd != -1) {
        close(fd);
    }

    flags = fcntl(STDOUT_FILENO, F_GETFL);
    if (flags == -1) {
        return RG_ERROR;
    }

    if (!(flags & O_NONBLOCK)) {
        if (fcntl(STDOUT_FILENO, F_SETFL, flags | O_NONBLOCK) == -1) {
            return RG_ERROR;
        }
        b->out_flags = flags;
        b->out_restore = 1;
    }

    return RG_OK;
}


static void
rg_batch_out_close(rg_batch_t *b)
{
    if (b->out_restore) {
        (void) fcntl(b->out_fd, F_SETFL, b->out_flags);
        b->out_restore = 0;
    }

    if (b->out_own && b->out_fd != -1) {
        if (close(b->out_fd) != 0) {
            b->write_errors++;
        }
        b->out_fd = -1;
    }
}


/* --resume: the ids of FILE's results; a cancelled task runs again. A
 * last line cut short by an interrupted run is removed (it can never be
 * read), and said so. */
static rg_int_t
rg_batch_resume_read(rg_batch_t *b, const char *path)
{
    int            fd;
    char          *p, *nl;
    off_t          good;
    size_t         pos;
    ssize_t        n;
    json_t        *r, *id, *st;
    rg_buf_t       buf;
    rg_uint_t      held;
    const char    *ids;
    char           num[32];

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        fprintf(stderr, "reagent: cannot read results \"%s\": %s\n", path,
                strerror(errno));
        return RG_ERROR;
    }

    b->done_ids = json_object();
    memset(&buf, 0, sizeof(buf));
    good = 0;
    held = 0;

    for ( ;; ) {
        if (rg_buf_reserve(&buf, RG_BATCH_CHUNK) != RG_OK) {
            goto failed;
        }

        n = read(fd, buf.data + buf.len, RG_BATCH_CHUNK);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            fprintf(stderr, "reagent: cannot read results \"%s\": %s\n", path,
                    strerror(errno));
            goto failed;
        }

        buf.len += n;

        for (pos = 0; (nl = memchr(buf.data + pos, '\n', buf.len - pos));
             pos = nl - buf.data + 1)
        {
            p = buf.data + pos;
            good += nl - p + 1;

            r = json_loadb(p, nl - p, 0, NULL);
            id = json_object_get(r, "id");
            st = json_object_get(r, "status");
            ids = NULL;

            if (json_is_string(id)) {
                ids = json_string_value(id);

            } else if (json_is_integer(id)) {
                snprintf(num, sizeof(num), "%lld",
                         (long long) json_integer_value(id));
                ids = num;
            }

            if (ids && json_is_string(st)) {
                /* the last line of an id wins: a task run again appends */
                json_object_set_new(b->done_ids, ids,
                    json_boolean(strcmp(json_string_value(st), "cancelled")
                                 != 0));
                held++;
            }

            json_decref(r);
        }

        memmove(buf.data, buf.data + pos, buf.len - pos);
        buf.len -= pos;

        if (n == 0) {
            break;
        }
    }

    if (buf.len > 0) {
        /* the last result was cut short: it cannot be read, and what is
         * appended must start a line of its own */
        if (ftruncate(b->out_fd, good) != 0) {
            fprintf(stderr, "reagent: results \"%s\" end in a line cut short "
                    "and it cannot be removed: %s\n", path, strerror(errno));
            goto failed;
        }

        rg_log_error(RG_LOG_WARN, b->engine->log, 0, "results \"%s\": the "
                     "last line was cut short (%lu bytes, from an interrupted "
                     "run) and is removed; its task runs again", path,
                     (unsigned long) buf.len);
    }

    rg_buf_free(&buf);
    close(fd);

    rg_log_error(RG_LOG_NOTICE, b->engine->log, 0, "resuming: \"%s\" holds "
                 "%lu results; their tasks are skipped (cancelled ones run "
                 "again)", path, (unsigned long) held);

    return RG_OK;

failed:

    rg_buf_free(&buf);
    close(fd);
    return RG_ERROR;
}


static rg_int_t
rg_batch_out_open(rg_batch_t *b)
{
    struct stat  st;
    const char  *path;

    path = b->opts->output;

    if (path == NULL) {
        if (b->opts->resume) {
            fprintf(stderr, "reagent: --resume needs -o FILE: the results "
                    "file to read and append to\n");
            return RG_ERROR;
        }

        if (rg_batch_same_file(STDOUT_FILENO, b->in_fd)) {
            fprintf(stderr, "reagent: the results would go to the tasks "
                    "file itself: write them elsewhere (-o FILE)\n");
            return RG_ERROR;
        }

        return rg_batch_out_stdout(b);
    }

    /* never O_TRUNC; non-blocking, so that a FIFO without a reader is an
     * error rather than a wait */
    b->out_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK
                           | O_CLOEXEC | O_NOCTTY, 0644);
    if (b->out_fd == -1) {
        fprintf(stderr, "reagent: cannot open results \"%s\": %s\n", path,
                strerror(errno));
        return RG_ERROR;
    }

    b->out_own = 1;

    if (rg_batch_same_file(b->out_fd, b->in_fd)) {
        fprintf(stderr, "reagent: -o \"%s\" is the tasks file itself: the "
                "results would overwrite the tasks; write them elsewhere\n",
                path);
        return RG_ERROR;
    }

    if (fstat(b->out_fd, &st) != 0) {
        fprintf(stderr, "reagent: cannot open results \"%s\": %s\n", path,
                strerror(errno));
        return RG_ERROR;
    }

    if (!S_ISREG(st.st_mode)) {
        return RG_OK;              /* a pipe, a FIFO, /dev/null */
    }

    b->out_regular = 1;
    (void) fcntl(b->out_fd, F_SETFL, O_APPEND);

    if (st.st_size == 0) {
        return RG_OK;
    }

    if (!b->opts->resume) {
        fprintf(stderr, "reagent: results \"%s\" already holds %lld bytes: "
                "pass --resume to skip the tasks it has results for and "
                "append, or choose another file\n", path,
                (long long) st.st_size);
        return RG_ERROR;
    }

    return rg_batch_resume_read(b, path);
}


/* results --------------------------------------------------------------- */

static void
rg_batch_result(rg_batch_t *b, const char *id, const char *status,
    const char *fmt, ...)
{
    char      msg[600];
    va_list   args;
    json_t   *r;

    va_start(args, fmt);
    vsnprintf(msg, sizeof(msg), fmt, args);
    va_end(args);

    r = json_pack("{s:s, s:s, s:n, s:i, s:i, s:i, s:s}",
                  "id", id, "status", status, "answer", "rounds", 0,
                  "tokens", 0, "ms", 0, "error", msg);
    if (r) {
        rg_batch_write(b, r);
        json_decref(r);
    }

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


static void
rg_batch_task(rg_batch_t *b, const char *line, size_t len)
{
    rg_int_t          rc;
    rg_task_t         t;
    rg_session_t     *s;
    rg_agent_conf_t  *agent;

    rc = rg_task_parse(&t, line, len, b->lineno);

    /* --resume: this one has its result already */
    if (b->done_ids && json_is_true(json_object_get(b->done_ids, t.id))) {
        b->skipped++;
        rg_task_free(&t);
        return;
    }

    if (rc != RG_OK) {
        rg_batch_result(b, t.id, "invalid", "%s",
                        rc == RG_ERROR ? "out of memory reading the task"
                                       : t.error);
        b->invalid++;
        rg_task_free(&t);
        return;
    }

    if (b->stopping) {
        rg_batch_result(b, t.id, "cancelled", "not started: the batch was "
                        "interrupted by a signal");
        b->by_state[RG_SESSION_CANCELLED]++;
        b->not_started++;
        rg_task_free(&t);
        return;
    }

    agent = t.agent ? rg_agent_find(b->engine->cycle, t.agent, t.agent_len)
                    : rg_agent_find(b->engine->cycle, b->opts->agent,
                                    strlen(b->opts->agent));

    if (agent == NULL) {
        rg_batch_result(b, t.id, "invalid", "line %lu: unknown agent "
                        "\"%.64s\"", (unsigned long) b->lineno,
                        t.agent ? t.agent : b->opts->agent);
        b->invalid++;
        rg_task_free(&t);
        return;
    }

    s = rg_session_create(b->engine, agent, t.id, t.input, t.input_len,
                          rg_batch_session_done, b);

    if (s == NULL) {
        rg_batch_result(b, t.id, "invalid", "out of memory creating the "
                        "session");
        b->invalid++;
        rg_task_free(&t);
        return;
    }

    /* a task may tighten or loosen its agent's limits */
    if (t.max_rounds) {
        s->max_rounds = t.max_rounds;
    }
    if (t.max_tokens >= 0) {
        s->max_tokens = t.max_tokens;
    }
    if (t.deadline != RG_CONF_UNSET_MSEC) {
        s->deadline = t.deadline;
    }

    rg_task_free(&t);

    b->live[b->nlive++] = s;
    b->running++;

    rg_session_start(s);
}


/* input ----------------------------------------------------------------- */

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
        rg_log_error(RG_LOG_ERR, b->engine->log, 0, "out of memory reading "
                     "tasks: the rest of the input is not read");
        b->in_eof = 1;
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


/* The next line: RG_OK with it (trimmed, never empty), RG_DECLINED when
 * a line was answered here (one over the limit: one `invalid` result, and
 * the rest of it, however it arrives, is skipped), RG_AGAIN when a pipe
 * has no more yet, RG_DONE at the end. */
static rg_int_t
rg_batch_line(rg_batch_t *b, char **line, size_t *len)
{
    char    *p, *nl, *end;
    size_t   n;

    for ( ;; ) {
        /* nothing read yet: no buffer to point into */
        n = b->in.len - b->in_pos;
        p = n ? b->in.data + b->in_pos : NULL;
        nl = n ? memchr(p, '\n', n) : NULL;

        if (b->skipping) {
            if (nl) {
                b->in_pos += nl - p + 1;
                b->skipping = 0;
                continue;
            }

            b->in_pos = b->in.len;

            if (b->in_eof) {
                b->skipping = 0;
                return RG_DONE;
            }

        } else if (nl || (b->in_eof && n)) {
            end = nl ? nl : p + n;
            b->in_pos += (end - p) + (nl != NULL);
            b->lineno++;

            while (end > p && (end[-1] == '\r' || end[-1] == ' '
                               || end[-1] == '\t'))
            {
                end--;
            }

            while (p < end && (*p == ' ' || *p == '\t')) {
                p++;
            }

            if (p == end) {
                continue;          /* blank lines are not tasks */
            }

            *line = p;
            *len = end - p;
            return RG_OK;

        } else if (b->in_eof) {
            return RG_DONE;

        } else if (n > RG_BATCH_MAX_LINE) {
            b->lineno++;
            b->in_pos = b->in.len;
            b->skipping = 1;
            return RG_DECLINED;
        }

        if (rg_batch_read(b) == RG_AGAIN) {
            return RG_AGAIN;
        }
    }
}


static void
rg_batch_long_line(rg_batch_t *b)
{
    char  id[32];

    snprintf(id, sizeof(id), "line-%lu", (unsigned long) b->lineno);

    if (b->done_ids && json_is_true(json_object_get(b->done_ids, id))) {
        b->skipped++;
        return;
    }

    rg_batch_result(b, id, "invalid", "line %lu is longer than 1m",
                    (unsigned long) b->lineno);
    b->invalid++;
}


static void
rg_batch_pump(rg_batch_t *b)
{
    char      *line;
    size_t     len;
    rg_int_t   rc;

    rc = RG_DONE;

    /* a stopping batch still reads to the end: every task gets a line */
    while (!b->out_closed && !rg_batch_out_full(b)
           && (b->stopping
               || b->running < (rg_uint_t) b->opts->concurrency))
    {
        rc = rg_batch_line(b, &line, &len);

        if (rc == RG_AGAIN || rc == RG_DONE) {
            break;
        }

        if (rc == RG_DECLINED) {
            rg_batch_long_line(b);
            continue;
        }

        if (len > RG_BATCH_MAX_LINE) {
            rg_batch_long_line(b);
            continue;
        }

        rg_batch_task(b, line, len);
    }

    if (rc == RG_AGAIN && !b->out_closed) {
        if (!b->in_waiting) {
            event_add(b->in_ev, NULL);
            b->in_waiting = 1;
        }

    } else if (b->in_waiting) {
        event_del(b->in_ev);
        b->in_waiting = 0;
    }

    rg_batch_check_end(b);
}


static void
rg_batch_input_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_batch_t  *b;

    b = arg;
    b->in_waiting = 0;

    rg_batch_pump(b);
}


/* stopping ------------------------------------------------------------- */

/* Running tasks are cancelled (their results say so); the rest of the
 * input is still read, each task answered "not started". */
static void
rg_batch_stop(rg_batch_t *b, const char *reason)
{
    rg_uint_t      i, n;
    rg_session_t **copy;

    b->stopping = 1;

    /* cancelling ends sessions, which edits live[]: work on a copy */
    n = b->nlive;
    if (n == 0) {
        return;
    }

    copy = malloc(n * sizeof(rg_session_t *));
    if (copy == NULL) {
        rg_batch_out_close(b);
        _exit(130);
    }

    memcpy(copy, b->live, n * sizeof(rg_session_t *));

    for (i = 0; i < n; i++) {
        rg_session_cancel(copy[i], reason);
    }

    free(copy);
}


static void
rg_batch_signal_handler(evutil_socket_t sig, short what, void *arg)
{
    rg_batch_t  *b;

    b = arg;

    if (b->stopping) {
        rg_log_error(RG_LOG_NOTICE, b->engine->log, 0,
                     "second signal %d: exiting now", (int) sig);
        rg_batch_out_close(b);
        _exit(130);
    }

    rg_log_error(RG_LOG_NOTICE, b->engine->log, 0,
                 "signal %d: cancelling %lu running tasks; every task gets "
                 "a result, \"cancelled\" (again to exit now)", (int) sig,
                 (unsigned long) b->nlive);

    rg_batch_stop(b, "interrupted by a signal");
    rg_batch_pump(b);
}


/* progress and summary ------------------------------------------------- */

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
    uint64_t            retries;
    rg_agent_stats_t    stats, *st;

    st = &stats;
    rg_agent_stats(b->engine, st, &retries);
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

    if (b->not_started && len < sizeof(states)) {
        len += snprintf(states + len, sizeof(states) - len,
                        " (%lu not started)", (unsigned long) b->not_started);
    }

    if (b->invalid && len < sizeof(states)) {
        len += snprintf(states + len, sizeof(states) - len, ", %lu invalid",
                        (unsigned long) b->invalid);
    }

    if (b->skipped && len < sizeof(states)) {
        snprintf(states + len, sizeof(states) - len, "; %lu skipped (their "
                 "results were there)", (unsigned long) b->skipped);
    }

    fprintf(stderr,
            "batch: %lu tasks in %.2fs: %s\n"
            "  model calls %llu (retries %llu), tool calls %llu "
            "(errors %llu, dedupe hits %llu, repeats %llu), tokens %llu\n"
            "  task time p50 %lu ms, p99 %lu ms; cpu %.1f us per model call; "
            "peak rss %.1f MiB (%.1f KiB per concurrent task)\n",
            (unsigned long) b->tasks, secs, states,
            (unsigned long long) calls,
            (unsigned long long) retries,
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
    int              rc, flags;
    struct stat      st;
    rg_batch_t       b;
    struct timeval   tv;

    memset(&b, 0, sizeof(b));
    b.engine = e;
    b.opts = opts;
    b.out_fd = -1;

    if (opts->agent == NULL) {
        opts->agent = rg_agent_main_conf(e->cycle)->default_agent.data;
    }

    if (opts->concurrency <= 0) {
        opts->concurrency = rg_core_conf(e->cycle)->concurrency;
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

    b.out = evbuffer_new();
    if (b.out == NULL) {
        rc = 1;
        goto done;
    }

    if (rg_batch_out_open(&b) != RG_OK) {
        rc = 1;
        goto done;
    }

    if (fstat(b.in_fd, &st) == 0 && S_ISREG(st.st_mode)) {
        b.in_regular = 1;

    } else {
        flags = fcntl(b.in_fd, F_GETFL);
        if (flags != -1 && !(flags & O_NONBLOCK)
            && fcntl(b.in_fd, F_SETFL, flags | O_NONBLOCK) == 0)
        {
            b.in_flags = flags;
            b.in_restore = 1;
        }
    }

    b.live = calloc(opts->concurrency, sizeof(rg_session_t *));
    b.in_ev = event_new(e->base, b.in_fd, EV_READ, rg_batch_input_handler,
                        &b);
    b.out_ev = event_new(e->base, b.out_fd, EV_WRITE, rg_batch_out_handler,
                         &b);
    b.sigint_ev = evsignal_new(e->base, SIGINT, rg_batch_signal_handler, &b);
    b.sigterm_ev = evsignal_new(e->base, SIGTERM, rg_batch_signal_handler,
                                &b);

    if (b.live == NULL || b.in_ev == NULL || b.out_ev == NULL
        || b.sigint_ev == NULL || b.sigterm_ev == NULL)
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

    /* a loopbreak before the loop runs would be forgotten */
    if (!b.finished) {
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

    if (b.stopping && !b.out_closed) {
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
    if (b.out_ev) {
        event_free(b.out_ev);
    }
    if (b.out) {
        evbuffer_free(b.out);
    }

    rg_batch_out_close(&b);

    if (b.write_errors && rc == 0) {
        rc = 2;
    }

    if (b.in_restore) {
        (void) fcntl(b.in_fd, F_SETFL, b.in_flags);
    }

    json_decref(b.done_ids);
    free(b.live);
    free(b.times);
    rg_buf_free(&b.in);

    if (b.in_fd != STDIN_FILENO) {
        close(b.in_fd);
    }

    return rc;
}
