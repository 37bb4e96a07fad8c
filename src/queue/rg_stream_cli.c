/* rg_stream_cli.c: the queue's commands. `reagent submit` puts JSONL
 * tasks on the queue (an id is the task's key: a second submit of it is
 * reported, not queued again; its mark is set around its entry as
 * rg_stream.h says), `--wait` follows their results under a progress bar
 * (rg_progress.h) and queues again the tasks a Redis restarted without
 * its data lost; `reagent results [--follow]` prints the results stream;
 * `reagent queue` shows each shard's depth, pending entries per consumer,
 * dead letters and the workers reading. They are short-lived clients,
 * not workers (RG_CLI_CLIENT: no secret of the daemon's, the log on
 * stderr): each waits for its Redis answers on a reactor of its own that
 * runs nothing else.
 *
 * This file owns what they share: a command sent and its answer waited
 * for, the client, the options and the commands' table; submit is
 * rg_stream_cli_submit.c's (its watch over tasks Redis lost
 * rg_stream_cli_watch.c's), results rg_stream_cli_results.c's, queue
 * rg_stream_cli_queue.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_stream_cli_int.h>


static void
rg_stream_cli_reply(void *data, redisReply *reply, const char *err)
{
    rg_stream_wait_t  *w;

    w = data;
    w->done = 1;

    if (w->left) {
        (*w->left)--;
    }

    if (err) {
        snprintf(w->err, sizeof(w->err), "%s", err);
        return;
    }

    w->reply = calloc(1, sizeof(redisReply));
    if (w->reply) {
        *w->reply = *reply;
        reply->type = REDIS_REPLY_NIL;
        reply->element = NULL;
        reply->elements = 0;
        reply->str = NULL;
        reply->len = 0;
    }
}


/* sends argv and runs the loop until it is answered: NULL with err */
redisReply *
rg_stream_cli_call(rg_engine_t *e, rg_redis_t *r, const char *key,
    char *err, size_t errlen, int argc, const char **argv,
    const size_t *lens0)
{
    int                i;
    size_t             lens[32];
    rg_str_t           tag;
    const char        *a, *b;
    rg_stream_wait_t   w;

    if (argc > (int) rg_nelems(lens)) {
        snprintf(err, errlen, "too many arguments");
        return NULL;
    }

    for (i = 0; i < argc; i++) {
        lens[i] = lens0 ? lens0[i] : strlen(argv[i]);
    }

    a = strchr(key, '{');
    b = a ? strchr(a + 1, '}') : NULL;
    tag.data = (char *) (a && b ? a + 1 : key);
    tag.len = a && b ? (size_t) (b - a - 1) : strlen(key);

    memset(&w, 0, sizeof(w));

    if (rg_redis_command(r, &tag, 0, rg_stream_cli_reply, &w, argc, argv,
                         lens) == NULL)
    {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    while (!w.done && event_base_loop(e->base, EVLOOP_ONCE) == 0) {
        /* the answer comes */
    }

    if (!w.done || w.reply == NULL) {
        snprintf(err, errlen, "%s", w.err[0] ? w.err : "no answer");
        return NULL;
    }

    return w.reply;
}


static void
rg_stream_cli_wake(evutil_socket_t fd, short what, void *arg)
{
    *(rg_uint_t *) arg = 1;
}


/* waits ms on the loop (the only work of this process) */
void
rg_stream_cli_pause(rg_engine_t *e, rg_msec_t ms)
{
    rg_uint_t       woke;
    struct timeval  tv;

    woke = 0;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;

    if (event_base_once(e->base, -1, EV_TIMEOUT, rg_stream_cli_wake, &woke,
                        &tv) != 0)
    {
        return;
    }

    while (!woke && event_base_loop(e->base, EVLOOP_ONCE) == 0) {
        /* the timer comes */
    }
}


/* a command that may meet a Redis that restarts or a cluster that
 * settles: asked again a few times before it counts as failed */
redisReply *
rg_stream_cli_retry(rg_engine_t *e, rg_redis_t *r, const char *key,
    char *err, size_t errlen, int argc, const char **argv,
    const size_t *lens)
{
    rg_uint_t    i;
    redisReply  *reply;

    for (i = 0; ; i++) {
        reply = rg_stream_cli_call(e, r, key, err, errlen, argc, argv, lens);
        if (reply || i == 4) {
            return reply;
        }

        rg_stream_cli_pause(e, 300 << i);
    }
}


/* sends every command before waiting for any, then runs the loop until
 * each is answered: its w.reply, or w.err */
void
rg_stream_cli_pipeline(rg_engine_t *e, rg_redis_t *r,
    rg_stream_cli_cmd_t *cmds, rg_uint_t n)
{
    int        j;
    rg_str_t   tag;
    rg_uint_t  i, left;

    left = n;

    for (i = 0; i < n; i++) {
        memset(&cmds[i].w, 0, sizeof(rg_stream_wait_t));
        cmds[i].w.left = &left;
        tag = rg_stream_key_tag(cmds[i].key);

        for (j = 0; j < cmds[i].argc; j++) {
            cmds[i].lens[j] = strlen(cmds[i].argv[j]);
        }

        if (rg_redis_command(r, &tag, 0, rg_stream_cli_reply, &cmds[i].w,
                             cmds[i].argc, cmds[i].argv, cmds[i].lens)
            == NULL)
        {
            snprintf(cmds[i].w.err, sizeof(cmds[i].w.err), "out of memory");
            cmds[i].w.done = 1;
            left--;
        }
    }

    while (left && event_base_loop(e->base, EVLOOP_ONCE) == 0) {
        /* the answers come */
    }
}


rg_int_t
rg_stream_client_open(rg_cycle_t *cycle, rg_stream_client_t *c,
    const char *cmd)
{
    memset(c, 0, sizeof(rg_stream_client_t));

    c->qcf = rg_queue_conf(cycle);

    if (!c->qcf->declared) {
        fprintf(stderr, "reagent: %s needs a \"queue { }\" block and \"store "
                "redis { }\" in %s\n", cmd, cycle->conf_file);
        return RG_ERROR;
    }

    c->engine = rg_engine_create(cycle, cycle->log);
    if (c->engine == NULL) {
        fprintf(stderr, "reagent: %s: %s\n", cmd,
                cycle->errmsg[0] ? cycle->errmsg : "cannot start");
        return RG_ERROR;
    }

    c->redis = rg_store_redis_new(c->engine, 1,
                                  c->qcf->block
                                  + rg_store_conf(cycle)->command_timeout);
    if (c->redis == NULL) {
        rg_engine_destroy(c->engine);
        fprintf(stderr, "reagent: %s: out of memory\n", cmd);
        return RG_ERROR;
    }

    c->prefix = rg_store_prefix(cycle);
    snprintf(c->results, sizeof(c->results), "%s{q:%s}:results", c->prefix,
             c->qcf->stream.data);

    return RG_OK;
}


void
rg_stream_client_close(rg_stream_client_t *c)
{
    rg_redis_destroy(c->redis);
    rg_engine_destroy(c->engine);
}


char *
rg_stream_shard_key(rg_stream_client_t *c, rg_uint_t shard, const char *tail,
    char *buf, size_t size)
{
    snprintf(buf, size, "%s{q:%s:%lu}%s", c->prefix, c->qcf->stream.data,
             (unsigned long) shard, tail);
    return buf;
}


/* reads all of a file or stdin: a command line client, before any work */
char *
rg_stream_slurp(const char *path, size_t *len)
{
    FILE    *f;
    char    *buf, *p;
    size_t   n, cap;

    f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (f == NULL) {
        return NULL;
    }

    cap = 65536;
    n = 0;
    buf = malloc(cap + 1);

    while (buf) {
        if (n == cap) {
            p = realloc(buf, cap * 2 + 1);
            if (p == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }

        size_t k = fread(buf + n, 1, cap - n, f);
        if (k == 0) {
            break;
        }
        n += k;
    }

    if (f != stdin) {
        fclose(f);
    }

    if (buf) {
        buf[n] = '\0';
        *len = n;
    }

    return buf;
}


/* the command line ---------------------------------------------------------- */


static int
rg_stream_cli_option(void *opts, int argc, char **argv, int i)
{
    rg_stream_cli_opts_t  *o;

    o = opts;

    if (strcmp(argv[i], "--wait") == 0) {
        o->wait = 1;
        return 1;
    }

    if (strcmp(argv[i], "--follow") == 0) {
        o->follow = 1;
        return 1;
    }

    if (strcmp(argv[i], "--progress") == 0) {
        o->progress = 1;
        return 1;
    }

    if (strcmp(argv[i], "--no-progress") == 0) {
        o->progress = 2;
        return 1;
    }

    if ((strcmp(argv[i], "-a") == 0 || strcmp(argv[i], "-o") == 0)
        && i + 1 < argc)
    {
        if (argv[i][1] == 'a') {
            o->agent = argv[i + 1];
        } else {
            o->output = argv[i + 1];
        }
        return 2;
    }

    return 0;
}


const rg_cli_t  rg_submit_cli = {
    "submit",
    "  submit [-a AGENT] [--wait [--progress|--no-progress]] tasks.jsonl|-\n"
    "      puts the JSONL tasks on the queue (queue { }) and prints their\n"
    "      ids; an id submitted before is not queued again; --wait prints\n"
    "      their results as JSONL as they end, a progress bar on stderr\n"
    "      when it is a terminal (--progress/--no-progress force it) and\n"
    "      a summary by status\n",
    "a tasks file, or - for stdin",
    sizeof(rg_stream_cli_opts_t),
    rg_stream_cli_option,
    rg_submit_main,
    RG_CLI_CLIENT
};


const rg_cli_t  rg_results_cli = {
    "results",
    "  results [--follow] [-o FILE]\n"
    "      the results stream as JSONL; --follow waits for more\n",
    NULL,
    sizeof(rg_stream_cli_opts_t),
    rg_stream_cli_option,
    rg_results_main,
    RG_CLI_CLIENT
};


const rg_cli_t  rg_queue_status_cli = {
    "queue",
    "  queue\n"
    "      each shard's depth, entries pending per worker, dead letters\n",
    NULL,
    sizeof(rg_stream_cli_opts_t),
    rg_stream_cli_option,
    rg_queue_main,
    RG_CLI_CLIENT
};
