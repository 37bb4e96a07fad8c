/* rg_batch.c: the dispatcher of `reagent batch`. Takes tasks from a queue
 * (rg_queue.h; JSONL files today), keeps up to `concurrency` sessions
 * running on the reactor, hands each result {"id","status","answer",
 * "rounds","tokens","ms","error"} back to the queue as the task ends, and
 * says what happened (rg_batch_summary.c, rg_batch_progress.c). Every
 * task the queue hands out gets exactly one result: one that cannot run
 * an `invalid` one, one not started when a signal stopped the batch a
 * `cancelled` one. A first SIGINT or SIGTERM cancels the running tasks
 * and answers the rest; a second one exits at once. How tasks are read
 * and results written is the queue's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_batch.h>
#include <rg_queue.h>
#include <rg_queue_jsonl.h>
#include <rg_session.h>
#include <rg_digest.h>
#include <rg_store_conf.h>
#include <rg_run.h>
#include <rg_core_conf.h>
#include <ctype.h>
#include <sys/stat.h>
#include <jansson.h>
#include <event2/event.h>
#include <signal.h>


static void rg_batch_stop(rg_batch_t *b, const char *reason);
static void rg_batch_pump(rg_batch_t *b);


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
        b->queue->result(b->queue, r);
        json_decref(r);
    }

    b->tasks++;
    rg_batch_progress_task(b);

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


/* transcripts ----------------------------------------------------------- */

/* DIR/ID.json: the id as it is when it is a plain file name, else made
 * one (other bytes become '_') and told apart by its input line
 * (malloc'ed) */
static char *
rg_batch_transcript_file(rg_batch_t *b, const char *id, rg_uint_t line)
{
    char    *path;
    size_t   i, len, dlen, size;
    int      plain;

    len = rg_min(strlen(id), 100);
    dlen = strlen(b->opts->transcripts);
    size = dlen + len + 40;

    path = malloc(size);
    if (path == NULL) {
        return NULL;
    }

    memcpy(path, b->opts->transcripts, dlen);
    path[dlen] = '/';

    plain = len == strlen(id) && id[0] != '.';

    for (i = 0; i < len; i++) {
        if (isalnum((unsigned char) id[i]) || id[i] == '-' || id[i] == '_'
            || id[i] == '.')
        {
            path[dlen + 1 + i] = id[i];
        } else {
            path[dlen + 1 + i] = '_';
            plain = 0;
        }
    }

    if (plain) {
        snprintf(path + dlen + 1 + len, size - dlen - 1 - len, ".json");
    } else {
        snprintf(path + dlen + 1 + len, size - dlen - 1 - len,
                 "-line%lu.json", (unsigned long) line);
    }

    return path;
}


/* A task ended: its transcript, its children's nested, goes to its file.
 * A plain write to a regular file, as the results are written. */
static void
rg_batch_transcript_write(rg_batch_t *b, rg_session_t *s)
{
    int          fd;
    char        *text;
    size_t       len;
    ssize_t      n;
    const char  *file;

    text = rg_session_transcript(s);
    file = rg_session_record_file(s);

    fd = text ? open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC
                           | O_NOFOLLOW, 0644)
              : -1;

    len = text ? strlen(text) : 0;
    n = fd == -1 ? -1 : write(fd, text, len);

    if (fd == -1 || n != (ssize_t) len) {
        b->transcript_errors++;
        rg_log_error(RG_LOG_ERR, b->engine->log, text ? errno : 0,
                     "cannot write the transcript \"%s\"%s",
                     file, text ? "" : " (out of memory)");
    }

    if (fd != -1) {
        close(fd);
    }

    free(text);
}


static void
rg_batch_session_done(rg_session_t *s)
{
    json_t                *r;
    rg_uint_t              i;
    rg_batch_t            *b;
    rg_session_outcome_t   o;

    b = rg_session_data(s);
    rg_session_outcome(s, &o);

    r = rg_session_result(s);
    if (r) {
        b->queue->result(b->queue, r);
        json_decref(r);
    }

    if (rg_session_record_file(s)) {
        rg_batch_transcript_write(b, s);
    }

    b->by_state[o.state]++;
    b->tasks++;
    b->running--;
    rg_batch_time(b, o.run_ms);

    /* O(1): the last one takes its slot */
    i = rg_session_slot(s);
    if (i < b->nlive && b->live[i] == s) {
        b->live[i] = b->live[--b->nlive];
        rg_session_set_slot(b->live[i], i);
    }

    rg_session_destroy(s);

    rg_batch_pump(b);
    rg_batch_progress_task(b);
}


/* A durable batch's id: 128 random bits, so that batches of two hosts
 * (or two runs of one) never share a session. With -o FILE (a regular
 * file) it is kept in FILE.rg-batch until every task has its line, and
 * --resume reads it back to go on with the sessions a killed run left;
 * without it, or without the file, the batch is a new one. Read and
 * written before the reactor runs, as the output file is opened. */
static rg_int_t
rg_batch_open_id(rg_batch_t *b, const char *output, rg_uint_t resume)
{
    int          fd;
    char         id[33];
    ssize_t      n;
    size_t       len;
    struct stat  st;

    id[0] = '\0';

    if (output && stat(output, &st) == 0 && S_ISREG(st.st_mode)) {
        len = strlen(output);
        b->id_file = malloc(len + sizeof(".rg-batch"));
        if (b->id_file == NULL) {
            fprintf(stderr, "reagent: out of memory\n");
            return RG_ERROR;
        }
        memcpy(b->id_file, output, len);
        memcpy(b->id_file + len, ".rg-batch", sizeof(".rg-batch"));

        fd = resume ? open(b->id_file, O_RDONLY | O_CLOEXEC) : -1;
        if (fd != -1) {
            n = read(fd, id, 32);
            close(fd);
            id[n == 32 ? 32 : 0] = '\0';
            if (strspn(id, "0123456789abcdef") != 32) {
                id[0] = '\0';
            }
        }
        if (resume && id[0] == '\0') {
            rg_log_error(RG_LOG_NOTICE, b->engine->log, 0, "--resume: no "
                         "batch id in \"%s\": the tasks without a result "
                         "start again", b->id_file);
        }
    }

    if (id[0] == '\0') {
        if (rg_random_hex(id, 16) != RG_OK) {
            fprintf(stderr, "reagent: no random bytes for the batch id\n");
            return RG_ERROR;
        }

        if (b->id_file) {
            fd = open(b->id_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                      0644);
            if (fd == -1 || write(fd, id, 32) != 32) {
                fprintf(stderr, "reagent: cannot write the batch id to "
                        "\"%s\": %s\n", b->id_file, strerror(errno));
                if (fd != -1) {
                    close(fd);
                }
                return RG_ERROR;
            }
            close(fd);
        }
    }

    b->store_key = strdup(id);
    if (b->store_key == NULL) {
        fprintf(stderr, "reagent: out of memory\n");
        return RG_ERROR;
    }

    return RG_OK;
}


/* "b-" and 128 bits of the SHA-256 of the batch id and the task id */
static void
rg_batch_session_id(rg_batch_t *b, const char *id, char *buf, size_t size)
{
    char  digest[RG_SHA256_HEX];

    if (rg_sha256_hex(digest, b->store_key, strlen(b->store_key) + 1, id,
                      strlen(id)) != RG_OK)
    {
        snprintf(buf, size, "b-unknown");
        return;
    }

    snprintf(buf, size, "b-%.32s", digest);
}


/* tasks ----------------------------------------------------------------- */

/* An id seen before in this input: 0 when it is new (and now known);
 * otherwise the line that had it (-1: a line that was no task). */
static json_int_t
rg_batch_seen(rg_batch_t *b, const char *id, rg_uint_t line)
{
    json_t  *v;

    if (b->ids == NULL) {
        return 0;
    }

    v = json_object_get(b->ids, id);
    if (v) {
        return json_integer_value(v) ? json_integer_value(v) : -1;
    }

    /* out of memory: the id is not checked, the task still runs */
    (void) json_object_set_new(b->ids, id, json_integer(line));

    return 0;
}


/* a task the queue handed out: its session starts, unless the batch is
 * stopping or the task cannot run */
static void
rg_batch_task(void *data, rg_task_t *t)
{
    char               *file, sid[48];
    json_int_t          first;
    rg_batch_t         *b;
    rg_session_t       *s;
    rg_agent_conf_t    *agent;
    rg_session_args_t   args;

    b = data;

    /* every result names its task: two tasks with one id cannot both run */
    first = rg_batch_seen(b, t->id, t->line);
    if (first) {
        if (first > 0) {
            rg_batch_result(b, t->id, "invalid", "line %lu: duplicate id "
                            "\"%.64s\": line %lld has it already (ids must "
                            "be unique in one input)", (unsigned long) t->line,
                            t->id, (long long) first);
        } else {
            rg_batch_result(b, t->id, "invalid", "line %lu: duplicate id "
                            "\"%.64s\": an earlier line that was no task "
                            "has it (ids must be unique in one input)",
                            (unsigned long) t->line, t->id);
        }
        b->invalid++;
        b->duplicates++;
        return;
    }

    if (b->stopping) {
        rg_batch_result(b, t->id, "cancelled", "not started: the batch was "
                        "interrupted by a signal");
        b->by_state[RG_SESSION_CANCELLED]++;
        b->not_started++;
        return;
    }

    agent = t->agent ? rg_agent_find(b->engine->cycle, t->agent, t->agent_len)
                     : rg_agent_find(b->engine->cycle, b->opts->agent,
                                     strlen(b->opts->agent));

    if (agent == NULL) {
        rg_batch_result(b, t->id, "invalid", "line %lu: unknown agent "
                        "\"%.64s\"", (unsigned long) t->line,
                        t->agent ? t->agent : b->opts->agent);
        b->invalid++;
        return;
    }

    memset(&args, 0, sizeof(args));
    args.agent = agent;
    args.task_id = t->id;
    args.input = t->input;
    args.len = t->input_len;
    args.messages = t->messages;
    args.handler = rg_batch_session_done;
    args.data = b;

    /* named after its batch and its id: a batch run again with --resume
     * finds the sessions it left, to go on with them */
    if (b->store_key) {
        rg_batch_session_id(b, t->id, sid, sizeof(sid));
        args.id = sid;
        args.stored = 1;
    }

    s = rg_session_open(b->engine, &args);

    if (s == NULL) {
        rg_batch_result(b, t->id, "invalid", "out of memory creating the "
                        "session");
        b->invalid++;
        return;
    }

    /* a task may tighten or loosen its agent's limits */
    rg_task_apply(t, s);

    if (b->opts->transcripts) {
        file = rg_batch_transcript_file(b, t->id, t->line);

        if (file == NULL || rg_session_record(s, file) != RG_OK) {
            b->transcript_errors++;
            rg_log_error(RG_LOG_ERR, b->engine->log, 0, "task %s: out of "
                         "memory: its transcript is not written", t->id);
        }

        free(file);
    }

    rg_session_set_slot(s, b->nlive);
    b->live[b->nlive++] = s;
    b->running++;

    if (!args.stored) {
        rg_session_start(s);           /* a stored one starts from the store */
    }
}


/* input the queue could not read as a task */
static void
rg_batch_invalid(void *data, const char *id, const char *why)
{
    rg_batch_t  *b;

    b = data;

    (void) rg_batch_seen(b, id, 0);

    rg_batch_result(b, id, "invalid", "%s", why);
    b->invalid++;
}


/* the batch is over when nothing runs and the queue has nothing more to
 * hand out and every result written, or cannot write them any more */
static void
rg_batch_check_end(rg_batch_t *b)
{
    if (b->running == 0
        && (b->failed || b->queue->drained(b->queue)))
    {
        b->finished = 1;
        event_base_loopbreak(b->engine->base);
    }
}


/* starts tasks while there is room: sessions up to the concurrency,
 * results not held back; one line of input at a time, so that room is
 * looked at again after each (a stopping batch still reads to the end:
 * every task gets a line) */
static void
rg_batch_pump(rg_batch_t *b)
{
    rg_int_t  rc;

    while (!b->failed && !b->queue->full(b->queue)
           && (b->stopping
               || b->running < (rg_uint_t) b->opts->concurrency))
    {
        rc = b->queue->pull(b->queue, 1);

        if (rc == RG_AGAIN || rc == RG_DONE) {
            break;
        }
    }

    rg_batch_check_end(b);
}


/* the queue has more, or room again */
static void
rg_batch_ready(void *data)
{
    rg_batch_pump(data);
}


/* results can no longer be written: the batch stops */
static void
rg_batch_failed(void *data, int err)
{
    rg_batch_t  *b;

    b = data;
    b->failed = 1;

    if (err == EPIPE) {
        rg_log_error(RG_LOG_ERR, b->engine->log, 0, "the results pipe was "
                     "closed: the batch stops (%lu task%s ended, %lu %s "
                     "running)", (unsigned long) b->tasks,
                     b->tasks == 1 ? "" : "s", (unsigned long) b->running,
                     b->running == 1 ? "was" : "were");
    } else {
        rg_log_error(RG_LOG_ERR, b->engine->log, err, "writing results "
                     "failed: the batch stops (%lu task%s ended, %lu %s "
                     "running)", (unsigned long) b->tasks,
                     b->tasks == 1 ? "" : "s", (unsigned long) b->running,
                     b->running == 1 ? "was" : "were");
    }

    /* nobody will read what the others would write */
    rg_batch_stop(b, "the results could not be written");
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
        b->queue->close(b->queue);
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
        b->queue->close(b->queue);
        _exit(130);
    }

    rg_log_error(RG_LOG_NOTICE, b->engine->log, 0,
                 "signal %d: cancelling %lu running task%s; every task gets "
                 "a result, \"cancelled\" (again to exit now)", (int) sig,
                 (unsigned long) b->nlive, b->nlive == 1 ? "" : "s");

    rg_batch_stop(b, "interrupted by a signal");
    rg_batch_pump(b);
}


int
rg_batch_run(rg_engine_t *e, rg_batch_opts_t *opts)
{
    int                    rc;
    rg_batch_t             b;
    struct timeval         tv;
    rg_queue_handler_t     h;
    rg_queue_jsonl_opts_t  qo;

    memset(&b, 0, sizeof(b));
    b.engine = e;
    b.opts = opts;

    if (opts->agent == NULL) {
        opts->agent = rg_agent_main_conf(e->cycle)->default_agent.data;
    }

    if (opts->concurrency <= 0) {
        opts->concurrency = rg_core_conf(e->cycle)->concurrency;
    }

    h.task = rg_batch_task;
    h.invalid = rg_batch_invalid;
    h.ready = rg_batch_ready;
    h.failed = rg_batch_failed;
    h.data = &b;

    qo.input = opts->input;
    qo.output = opts->output;
    qo.resume = opts->resume;

    b.queue = rg_queue_jsonl_open(&qo, e->base, e->log, &h);
    if (b.queue == NULL) {
        return 1;
    }

    if (opts->transcripts
        && mkdir(opts->transcripts, 0755) == -1 && errno != EEXIST)
    {
        fprintf(stderr, "reagent: cannot create the transcripts folder "
                "\"%s\": %s\n", opts->transcripts, strerror(errno));
        b.queue->close(b.queue);
        return 1;
    }

    if (rg_store_ctx(e)->durable
        && rg_batch_open_id(&b, opts->output, opts->resume) != RG_OK)
    {
        free(b.id_file);
        free(b.store_key);
        b.queue->close(b.queue);
        return 1;
    }

    b.ids = json_object();
    b.live = calloc(opts->concurrency, sizeof(rg_session_t *));
    b.sigint_ev = evsignal_new(e->base, SIGINT, rg_batch_signal_handler, &b);
    b.sigterm_ev = evsignal_new(e->base, SIGTERM, rg_batch_signal_handler,
                                &b);

    if (b.live == NULL || b.sigint_ev == NULL || b.sigterm_ev == NULL) {
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

    rc = (b.tasks == b.by_state[RG_SESSION_DONE]
          && b.queue->stats.write_errors == 0
          && b.transcript_errors == 0) ? 0 : 2;

    if (opts->transcripts && !opts->quiet) {
        fprintf(stderr, "  transcripts in %s/%s\n", opts->transcripts,
                b.transcript_errors ? " (some could not be written: see the "
                                      "log)" : "");
    }

    if (b.stopping && !b.failed) {
        rc = 130;
    }

    /* every task has its line: no session is left to resume */
    if (b.id_file && !b.stopping && b.queue->stats.write_errors == 0) {
        (void) unlink(b.id_file);
    }

done:

    free(b.store_key);
    free(b.id_file);

    if (b.progress_ev) {
        event_free(b.progress_ev);
    }
    if (b.sigint_ev) {
        event_free(b.sigint_ev);
    }
    if (b.sigterm_ev) {
        event_free(b.sigterm_ev);
    }

    if (b.queue->close(b.queue) != RG_OK && rc == 0) {
        rc = 2;
    }

    json_decref(b.ids);
    free(b.live);
    free(b.times);

    return rc;
}
