/* rg_queue_jsonl.c: the JSONL backend of the queue interface. Tasks are
 * the lines of a file or of stdin (rg_task.c reads each), results one
 * line each, appended to a file or written to stdout. Every line of the
 * input gets one result: a line that is no task is handed out as such,
 * a line over RG_QUEUE_JSONL_MAX_LINE too (and the rest of it skipped).
 *
 * Nothing blocks the reactor. Input from a pipe is read without
 * blocking; a regular file is read in chunks. Results go through an
 * output buffer drained by a write event on a non-blocking descriptor (a
 * regular file is written at once); while the buffer holds more than
 * RG_QUEUE_JSONL_OUT_MAX the queue is full, and a results pipe that
 * closes fails the queue.
 *
 * The results file is never truncated: an existing one that is not
 * empty is refused, or with resume its ids are skipped and results
 * appended (a cancelled one's task runs again). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json_write.h>
#include <rg_queue.h>
#include <rg_queue_jsonl.h>
#include <rg_task.h>
#include <rg_secret.h>
#include <jansson.h>
#include <event2/event.h>
#include <event2/buffer.h>


#define RG_QUEUE_JSONL_MAX_LINE  (1024 * 1024)
#define RG_QUEUE_JSONL_CHUNK     65536
/* results waiting for a slow reader: past this the queue is full */
#define RG_QUEUE_JSONL_OUT_MAX   (1024 * 1024)


typedef struct {
    rg_queue_t             queue;         /* first */
    rg_queue_jsonl_opts_t  opts;
    rg_queue_handler_t     handler;
    struct event_base     *base;
    rg_log_t              *log;

    int                    in_fd;
    int                    in_flags;      /* to restore on a shared stdin */
    unsigned               in_restore:1;
    unsigned               in_regular:1;
    unsigned               in_eof:1;
    unsigned               in_waiting:1;
    unsigned               skipping:1;    /* the rest of an over-long line */
    struct event          *in_ev;

    int                    out_fd;
    int                    out_flags;     /* to restore, when not our own */
    unsigned               out_own:1;     /* out_fd is ours to close */
    unsigned               out_restore:1;
    unsigned               out_regular:1;
    unsigned               out_closed:1;  /* the reader went away */
    unsigned               out_writing:1;
    struct evbuffer       *out;
    struct event          *out_ev;

    rg_buf_t               in;            /* bytes read, not yet a task */
    size_t                 in_pos;
    rg_uint_t              lineno;
    rg_uint_t              lines;         /* not blank, handed out */

    json_t                *done_ids;      /* resume: ids with a result */
} rg_queue_jsonl_t;


/* output --------------------------------------------------------------- */

static void
rg_queue_jsonl_out_failed(rg_queue_jsonl_t *q, int err)
{
    q->out_closed = 1;
    q->queue.stats.write_errors++;
    evbuffer_drain(q->out, evbuffer_get_length(q->out));

    if (q->out_writing) {
        event_del(q->out_ev);
        q->out_writing = 0;
    }

    q->handler.failed(q->handler.data, err);
}


/* writes what the reader takes now; the write event does the rest */
static void
rg_queue_jsonl_flush(rg_queue_jsonl_t *q)
{
    int  n;

    while (!q->out_closed && evbuffer_get_length(q->out) > 0) {
        n = evbuffer_write(q->out, q->out_fd);

        if (n > 0) {
            continue;
        }

        if (n < 0 && errno == EINTR) {
            continue;
        }

        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!q->out_writing) {
                event_add(q->out_ev, NULL);
                q->out_writing = 1;
            }
            return;
        }

        rg_queue_jsonl_out_failed(q, n < 0 ? errno : EIO);
        return;
    }

    if (q->out_writing) {
        event_del(q->out_ev);
        q->out_writing = 0;
    }
}


static rg_uint_t
rg_queue_jsonl_out_full(rg_queue_jsonl_t *q)
{
    return evbuffer_get_length(q->out) > RG_QUEUE_JSONL_OUT_MAX;
}


static void
rg_queue_jsonl_result(rg_queue_t *queue, json_t *result)
{
    char              *line;
    size_t             len;
    rg_queue_jsonl_t  *q;

    q = (rg_queue_jsonl_t *) queue;

    if (q->out_closed) {
        return;
    }

    line = rg_json_dumps(result, 0, &len);
    if (line == NULL) {
        q->queue.stats.write_errors++;
        return;
    }

    len = rg_secret_scrub(line, len);
    line[len++] = '\n';       /* the text leaves room for its NUL */

    if (evbuffer_add(q->out, line, len) != 0) {
        q->queue.stats.write_errors++;
    }

    free(line);

    /* a regular file takes it at once; a pipe takes what it can */
    rg_queue_jsonl_flush(q);
}


static void
rg_queue_jsonl_out_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_queue_jsonl_t  *q;

    q = arg;
    q->out_writing = 0;

    rg_queue_jsonl_flush(q);

    q->handler.ready(q->handler.data);
}


/* results: the same file as the tasks cannot work */
static rg_uint_t
rg_queue_jsonl_same_file(int a, int b)
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
rg_queue_jsonl_out_stdout(rg_queue_jsonl_t *q)
{
    int          fd, flags;
    struct stat  st;

    q->out_fd = STDOUT_FILENO;

    if (fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode)) {
        q->out_regular = 1;
        return RG_OK;
    }

    fd = open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_CLOEXEC
                                 | O_NOCTTY | O_APPEND);

    if (fd != -1 && rg_queue_jsonl_same_file(fd, STDOUT_FILENO)) {
        q->out_fd = fd;
        q->out_own = 1;
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
        q->out_flags = flags;
        q->out_restore = 1;
    }

    return RG_OK;
}


static void
rg_queue_jsonl_out_close(rg_queue_jsonl_t *q)
{
    if (q->out_restore) {
        (void) fcntl(q->out_fd, F_SETFL, q->out_flags);
        q->out_restore = 0;
    }

    if (q->out_own && q->out_fd != -1) {
        if (close(q->out_fd) != 0) {
            q->queue.stats.write_errors++;
        }
        q->out_fd = -1;
    }
}


/* --resume: the ids of FILE's results; a cancelled task runs again. A
 * last line cut short by an interrupted run is removed (it can never be
 * read), and said so. */
static rg_int_t
rg_queue_jsonl_resume_read(rg_queue_jsonl_t *q, const char *path)
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

    q->done_ids = json_object();
    memset(&buf, 0, sizeof(buf));
    good = 0;
    held = 0;

    for ( ;; ) {
        if (rg_buf_reserve(&buf, RG_QUEUE_JSONL_CHUNK) != RG_OK) {
            goto failed;
        }

        n = read(fd, buf.data + buf.len, RG_QUEUE_JSONL_CHUNK);
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
                json_object_set_new(q->done_ids, ids,
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
        if (ftruncate(q->out_fd, good) != 0) {
            fprintf(stderr, "reagent: results \"%s\" end in a line cut short "
                    "and it cannot be removed: %s\n", path, strerror(errno));
            goto failed;
        }

        rg_log_error(RG_LOG_WARN, q->log, 0, "results \"%s\": the "
                     "last line was cut short (%lu bytes, from an interrupted "
                     "run) and is removed; its task runs again", path,
                     (unsigned long) buf.len);
    }

    rg_buf_free(&buf);
    close(fd);

    rg_log_error(RG_LOG_NOTICE, q->log, 0, "resuming: \"%s\" holds "
                 "%lu results; their tasks are skipped (cancelled ones run "
                 "again)", path, (unsigned long) held);

    return RG_OK;

failed:

    rg_buf_free(&buf);
    close(fd);
    return RG_ERROR;
}


static rg_int_t
rg_queue_jsonl_out_open(rg_queue_jsonl_t *q)
{
    struct stat  st;
    const char  *path;

    path = q->opts.output;

    if (path == NULL) {
        if (q->opts.resume) {
            fprintf(stderr, "reagent: --resume needs -o FILE: the results "
                    "file to read and append to\n");
            return RG_ERROR;
        }

        if (rg_queue_jsonl_same_file(STDOUT_FILENO, q->in_fd)) {
            fprintf(stderr, "reagent: the results would go to the tasks "
                    "file itself: write them elsewhere (-o FILE)\n");
            return RG_ERROR;
        }

        return rg_queue_jsonl_out_stdout(q);
    }

    /* never O_TRUNC; non-blocking, so that a FIFO without a reader is an
     * error rather than a wait */
    q->out_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK
                           | O_CLOEXEC | O_NOCTTY, 0644);
    if (q->out_fd == -1) {
        fprintf(stderr, "reagent: cannot open results \"%s\": %s\n", path,
                strerror(errno));
        return RG_ERROR;
    }

    q->out_own = 1;

    if (rg_queue_jsonl_same_file(q->out_fd, q->in_fd)) {
        fprintf(stderr, "reagent: -o \"%s\" is the tasks file itself: the "
                "results would overwrite the tasks; write them elsewhere\n",
                path);
        return RG_ERROR;
    }

    if (fstat(q->out_fd, &st) != 0) {
        fprintf(stderr, "reagent: cannot open results \"%s\": %s\n", path,
                strerror(errno));
        return RG_ERROR;
    }

    if (!S_ISREG(st.st_mode)) {
        return RG_OK;              /* a pipe, a FIFO, /dev/null */
    }

    q->out_regular = 1;
    (void) fcntl(q->out_fd, F_SETFL, O_APPEND);

    if (st.st_size == 0) {
        return RG_OK;
    }

    if (!q->opts.resume) {
        fprintf(stderr, "reagent: results \"%s\" already holds %lld bytes: "
                "pass --resume to skip the tasks it has results for and "
                "append, or choose another file\n", path,
                (long long) st.st_size);
        return RG_ERROR;
    }

    return rg_queue_jsonl_resume_read(q, path);
}


/* input ---------------------------------------------------------------- */

/* The lines of a tasks file that are not blank, for the progress bar's
 * total: read once at the start, before any session runs (a file on disk
 * is read without waiting on anything else). 0 when it cannot be read. */
static rg_uint_t
rg_queue_jsonl_count(int fd)
{
    char       buf[RG_QUEUE_JSONL_CHUNK];
    off_t      off;
    ssize_t    n, i;
    rg_uint_t  lines, text;

    lines = 0;
    text = 0;

    /* from where the tasks will be read: a shared stdin may be past 0 */
    off = lseek(fd, 0, SEEK_CUR);
    if (off < 0) {
        return 0;
    }

    for ( ;; ) {
        n = pread(fd, buf, sizeof(buf), off);

        if (n < 0 && errno == EINTR) {
            continue;
        }

        if (n < 0) {
            return 0;
        }

        if (n == 0) {
            break;
        }

        for (i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                lines += text;
                text = 0;

            } else if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\r') {
                text = 1;
            }
        }

        off += n;
    }

    return lines + text;
}


/* reads more input; RG_AGAIN when a pipe has nothing yet */
static rg_int_t
rg_queue_jsonl_read(rg_queue_jsonl_t *q)
{
    ssize_t  n;

    /* drop what was consumed */
    if (q->in_pos) {
        memmove(q->in.data, q->in.data + q->in_pos, q->in.len - q->in_pos);
        q->in.len -= q->in_pos;
        q->in_pos = 0;
    }

    if (rg_buf_reserve(&q->in, RG_QUEUE_JSONL_CHUNK) != RG_OK) {
        rg_log_error(RG_LOG_ERR, q->log, 0, "out of memory reading "
                     "tasks: the rest of the input is not read");
        q->in_eof = 1;
        return RG_ERROR;
    }

    n = read(q->in_fd, q->in.data + q->in.len, RG_QUEUE_JSONL_CHUNK);

    if (n > 0) {
        q->in.len += n;
        return RG_OK;
    }

    if (n == 0) {
        q->in_eof = 1;
        return RG_OK;
    }

    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        return RG_AGAIN;
    }

    rg_log_error(RG_LOG_ERR, q->log, errno, "reading tasks failed");
    q->in_eof = 1;

    return RG_ERROR;
}


/* The next line: RG_OK with it (trimmed, never empty), RG_DECLINED when
 * a line was answered here (one over the limit: one `invalid` result, and
 * the rest of it, however it arrives, is skipped), RG_AGAIN when a pipe
 * has no more yet, RG_DONE at the end. */
static rg_int_t
rg_queue_jsonl_line(rg_queue_jsonl_t *q, char **line, size_t *len)
{
    char    *p, *nl, *end;
    size_t   n;

    for ( ;; ) {
        /* nothing read yet: no buffer to point into */
        n = q->in.len - q->in_pos;
        p = n ? q->in.data + q->in_pos : NULL;
        nl = n ? memchr(p, '\n', n) : NULL;

        if (q->skipping) {
            if (nl) {
                q->in_pos += nl - p + 1;
                q->skipping = 0;
                continue;
            }

            q->in_pos = q->in.len;

            if (q->in_eof) {
                q->skipping = 0;
                if (q->queue.stats.total == 0) {
                    q->queue.stats.total = q->lines;
                }
                return RG_DONE;
            }

        } else if (nl || (q->in_eof && n)) {
            end = nl ? nl : p + n;
            q->in_pos += (end - p) + (nl != NULL);
            q->lineno++;

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
            q->lines++;
            return RG_OK;

        } else if (q->in_eof) {
            /* now the whole input is known */
            if (q->queue.stats.total == 0) {
                q->queue.stats.total = q->lines;
            }
            return RG_DONE;

        } else if (n > RG_QUEUE_JSONL_MAX_LINE) {
            q->lineno++;
            q->lines++;
            q->in_pos = q->in.len;
            q->skipping = 1;
            return RG_DECLINED;
        }

        if (rg_queue_jsonl_read(q) == RG_AGAIN) {
            return RG_AGAIN;
        }
    }
}


static void
rg_queue_jsonl_input_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_queue_jsonl_t  *q;

    q = arg;
    q->in_waiting = 0;

    q->handler.ready(q->handler.data);
}


/* a line over the limit: RG_OK when its result was there already */
static rg_int_t
rg_queue_jsonl_long_line(rg_queue_jsonl_t *q)
{
    char  id[32], why[64];

    snprintf(id, sizeof(id), "line-%lu", (unsigned long) q->lineno);

    if (q->done_ids && json_is_true(json_object_get(q->done_ids, id))) {
        q->queue.stats.skipped++;
        return RG_OK;
    }

    snprintf(why, sizeof(why), "line %lu is longer than 1m",
             (unsigned long) q->lineno);
    q->handler.invalid(q->handler.data, id, why);

    return RG_DECLINED;
}


/* the interface -------------------------------------------------------- */

static rg_int_t
rg_queue_jsonl_pull(rg_queue_t *queue, rg_uint_t max)
{
    char              *line;
    size_t             len;
    rg_int_t           rc;
    rg_uint_t          n;
    rg_task_t          t;
    rg_queue_jsonl_t  *q;

    q = (rg_queue_jsonl_t *) queue;
    rc = RG_OK;

    for (n = 0; n < max && !q->out_closed; /* void */) {
        rc = rg_queue_jsonl_line(q, &line, &len);

        if (rc == RG_AGAIN || rc == RG_DONE) {
            break;
        }

        if (rc == RG_DECLINED || len > RG_QUEUE_JSONL_MAX_LINE) {
            if (rg_queue_jsonl_long_line(q) != RG_OK) {
                n++;
            }
            rc = RG_OK;
            continue;
        }

        rc = rg_task_parse(&t, line, len, q->lineno);

        /* resume: this one has its result already */
        if (q->done_ids && json_is_true(json_object_get(q->done_ids, t.id))) {
            q->queue.stats.skipped++;
            rg_task_free(&t);
            rc = RG_OK;
            continue;
        }

        if (rc != RG_OK) {
            q->handler.invalid(q->handler.data, t.id,
                               rc == RG_ERROR
                               ? "out of memory reading the task" : t.error);
            rg_task_free(&t);
            rc = RG_OK;
            n++;
            continue;
        }

        q->handler.task(q->handler.data, &t);
        rg_task_free(&t);
        n++;
    }

    if (rc == RG_AGAIN && !q->out_closed) {
        if (!q->in_waiting) {
            event_add(q->in_ev, NULL);
            q->in_waiting = 1;
        }

    } else if (q->in_waiting) {
        event_del(q->in_ev);
        q->in_waiting = 0;
    }

    return rc;
}


static rg_uint_t
rg_queue_jsonl_full(rg_queue_t *queue)
{
    return rg_queue_jsonl_out_full((rg_queue_jsonl_t *) queue);
}


static rg_uint_t
rg_queue_jsonl_eof(rg_queue_t *queue)
{
    return ((rg_queue_jsonl_t *) queue)->in_eof;
}


static rg_uint_t
rg_queue_jsonl_drained(rg_queue_t *queue)
{
    rg_queue_jsonl_t  *q;

    q = (rg_queue_jsonl_t *) queue;

    return q->in_eof && q->in_pos >= q->in.len
           && evbuffer_get_length(q->out) == 0;
}


static rg_int_t
rg_queue_jsonl_close(rg_queue_t *queue)
{
    rg_int_t           rc;
    rg_queue_jsonl_t  *q;

    q = (rg_queue_jsonl_t *) queue;

    if (q->in_ev) {
        event_free(q->in_ev);
    }
    if (q->out_ev) {
        event_free(q->out_ev);
    }
    if (q->out) {
        evbuffer_free(q->out);
    }

    rg_queue_jsonl_out_close(q);

    if (q->in_restore) {
        (void) fcntl(q->in_fd, F_SETFL, q->in_flags);
    }

    json_decref(q->done_ids);
    rg_buf_free(&q->in);

    if (q->in_fd != STDIN_FILENO && q->in_fd != -1) {
        close(q->in_fd);
    }

    rc = q->queue.stats.write_errors ? RG_ERROR : RG_OK;

    free(q);

    return rc;
}


rg_queue_t *
rg_queue_jsonl_open(const rg_queue_jsonl_opts_t *opts,
    struct event_base *base, rg_log_t *log, const rg_queue_handler_t *h)
{
    int                flags;
    struct stat        st;
    rg_queue_jsonl_t  *q;

    q = calloc(1, sizeof(rg_queue_jsonl_t));
    if (q == NULL) {
        fprintf(stderr, "reagent: out of memory\n");
        return NULL;
    }

    q->queue.name = "jsonl";
    q->queue.pull = rg_queue_jsonl_pull;
    q->queue.result = rg_queue_jsonl_result;
    q->queue.full = rg_queue_jsonl_full;
    q->queue.eof = rg_queue_jsonl_eof;
    q->queue.drained = rg_queue_jsonl_drained;
    q->queue.close = rg_queue_jsonl_close;

    q->opts = *opts;
    q->handler = *h;
    q->base = base;
    q->log = log;
    q->in_fd = -1;
    q->out_fd = -1;

    if (strcmp(opts->input, "-") == 0) {
        q->in_fd = STDIN_FILENO;

    } else {
        q->in_fd = open(opts->input, O_RDONLY | O_CLOEXEC);
        if (q->in_fd == -1) {
            fprintf(stderr, "reagent: cannot open tasks \"%s\": %s\n",
                    opts->input, strerror(errno));
            free(q);
            return NULL;
        }
    }

    q->out = evbuffer_new();
    if (q->out == NULL) {
        goto failed;
    }

    if (rg_queue_jsonl_out_open(q) != RG_OK) {
        goto failed;
    }

    if (fstat(q->in_fd, &st) == 0 && S_ISREG(st.st_mode)) {
        q->in_regular = 1;
        q->queue.stats.total = rg_queue_jsonl_count(q->in_fd);

    } else {
        flags = fcntl(q->in_fd, F_GETFL);
        if (flags != -1 && !(flags & O_NONBLOCK)
            && fcntl(q->in_fd, F_SETFL, flags | O_NONBLOCK) == 0)
        {
            q->in_flags = flags;
            q->in_restore = 1;
        }
    }

    q->in_ev = event_new(base, q->in_fd, EV_READ,
                         rg_queue_jsonl_input_handler, q);
    q->out_ev = event_new(base, q->out_fd, EV_WRITE,
                          rg_queue_jsonl_out_handler, q);

    if (q->in_ev == NULL || q->out_ev == NULL) {
        fprintf(stderr, "reagent: out of memory\n");
        goto failed;
    }

    return &q->queue;

failed:

    rg_queue_jsonl_close(&q->queue);
    return NULL;
}
