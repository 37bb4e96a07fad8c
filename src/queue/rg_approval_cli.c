/* rg_approval_cli.c: the operator's commands on parked tasks: `reagent
 * approve TASK [CALL]`, `reagent deny TASK [CALL] [--reason TEXT]` and
 * `reagent pending [TASK]`. Short-lived clients of the queue, each
 * waiting for its answer on a reactor of its own; the work is
 * rg_approval.c's, the same the HTTP API calls. What pending prints is
 * that JSON, each time in it (ms since the epoch, for programs) followed
 * by the same in local time with how far it is, for people. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_queue_conf.h>
#include <rg_stream.h>
#include <rg_approval.h>
#include <unistd.h>
#include <jansson.h>


typedef struct {
    const char         *call_id;      /* the second word */
    const char         *reason;       /* --reason */
    rg_uint_t           seen;         /* the first word went by */
} rg_approval_cli_opts_t;


typedef struct {
    struct event_base  *base;
    rg_uint_t           done;
    rg_int_t            rc;
    char               *msg;
    rg_uint_t           readable;     /* times also in local time */
} rg_approval_cli_wait_t;


/* "4m 10s", "2h 5m", "3d 4h": a span in ms, its two largest units */
static void
rg_approval_cli_span(int64_t ms, char *buf, size_t len)
{
    int64_t  s;

    s = ms / 1000;

    if (s >= 86400) {
        snprintf(buf, len, "%lldd %lldh", (long long) (s / 86400),
                 (long long) (s % 86400 / 3600));

    } else if (s >= 3600) {
        snprintf(buf, len, "%lldh %lldm", (long long) (s / 3600),
                 (long long) (s % 3600 / 60));

    } else if (s >= 60) {
        snprintf(buf, len, "%lldm %llds", (long long) (s / 60),
                 (long long) (s % 60));

    } else {
        snprintf(buf, len, "%llds", (long long) s);
    }
}


/* "2026-12-07 13:04:05 (in 4m 10s)" or "… (5m 0s ago)" of a time in ms
 * since the epoch; NULL when it is none */
static json_t *
rg_approval_cli_when(json_t *v, int64_t now)
{
    char       day[32], span[32], text[96];
    time_t     t;
    int64_t    ms;
    struct tm  tm;

    if (!json_is_integer(v) || json_integer_value(v) <= 0) {
        return NULL;
    }

    ms = json_integer_value(v);
    t = (time_t) (ms / 1000);

    if (localtime_r(&t, &tm) == NULL
        || strftime(day, sizeof(day), "%Y-%m-%d %H:%M:%S", &tm) == 0)
    {
        return NULL;
    }

    rg_approval_cli_span(ms >= now ? ms - now : now - ms, span, sizeof(span));
    snprintf(text, sizeof(text), ms >= now ? "%s (in %s)" : "%s (%s ago)",
             day, span);

    return json_string(text);
}


/* an object with "NAME_local" after each time NAME of it */
static json_t *
rg_approval_cli_local(json_t *o, int64_t now)
{
    char         name[64];
    json_t      *out, *v, *when;
    const char  *key;

    out = json_object();
    if (out == NULL) {
        return NULL;
    }

    json_object_foreach(o, key, v) {
        if (json_object_set(out, key, v) != 0) {
            json_decref(out);
            return NULL;
        }

        if (strcmp(key, "deadline") != 0 && strcmp(key, "parked") != 0) {
            continue;
        }

        when = rg_approval_cli_when(v, now);
        snprintf(name, sizeof(name), "%s_local", key);

        if (when && json_object_set_new(out, name, when) != 0) {
            json_decref(out);
            return NULL;
        }
    }

    return out;
}


/* pending's answer (a parked task, or a list of them) with its times
 * readable too; left as it came when it is not JSON */
static void
rg_approval_cli_readable(rg_approval_cli_wait_t *w)
{
    char     *text;
    size_t    i;
    json_t   *v, *out, *o, *e;
    int64_t   now;

    v = json_loads(w->msg, 0, NULL);
    if (v == NULL) {
        return;
    }

    now = (int64_t) rg_wall_msec();
    out = NULL;

    if (json_is_object(v)) {
        out = rg_approval_cli_local(v, now);

    } else if (json_is_array(v)) {
        out = json_array();

        json_array_foreach(v, i, e) {
            o = json_is_object(e) ? rg_approval_cli_local(e, now)
                                  : json_incref(e);
            if (out == NULL || o == NULL || json_array_append_new(out, o)) {
                json_decref(out);
                out = NULL;
                break;
            }
        }
    }

    text = out ? json_dumps(out, JSON_COMPACT) : NULL;

    json_decref(out);
    json_decref(v);

    if (text) {
        free(w->msg);
        w->msg = text;
    }
}


static void
rg_approval_cli_answer(void *data, rg_int_t rc, const char *msg)
{
    rg_approval_cli_wait_t  *w;

    w = data;
    w->done = 1;
    w->rc = rc;
    w->msg = strdup(msg ? msg : "");
}


/* the queue of this configuration, or NULL (said why) */
static rg_stream_t *
rg_approval_cli_open(rg_cycle_t *cycle, const char *cmd, rg_engine_t **ep)
{
    char          consumer[64];
    rg_engine_t  *e;
    rg_stream_t  *q;

    if (!rg_queue_conf(cycle)->declared) {
        fprintf(stderr, "reagent: %s needs a \"queue { }\" block and \"store "
                "redis { }\" in %s\n", cmd, cycle->conf_file);
        return NULL;
    }

    e = rg_engine_create(cycle, cycle->log);
    if (e == NULL) {
        fprintf(stderr, "reagent: %s: %s\n", cmd,
                cycle->errmsg[0] ? cycle->errmsg : "cannot start");
        return NULL;
    }

    snprintf(consumer, sizeof(consumer), "%s-%d", cmd, (int) getpid());

    q = rg_stream_create(e, consumer);
    if (q == NULL) {
        fprintf(stderr, "reagent: %s: out of memory\n", cmd);
        rg_engine_destroy(e);
        return NULL;
    }

    *ep = e;

    return q;
}


/* runs the loop until the answer; the exit code: 0, 1 refused, 2 failed */
static int
rg_approval_cli_wait(rg_engine_t *e, rg_stream_t *q, const char *cmd,
    rg_approval_cli_wait_t *w)
{
    int  rc;

    while (!w->done && event_base_loop(e->base, EVLOOP_ONCE) == 0) {
        /* the answer comes */
    }

    if (!w->done) {
        fprintf(stderr, "reagent: %s: no answer\n", cmd);
        rc = 2;

    } else if (w->rc == RG_OK) {
        if (w->readable && w->msg) {
            rg_approval_cli_readable(w);
        }
        printf("%s\n", w->msg ? w->msg : "");
        rc = 0;

    } else {
        fprintf(stderr, "reagent: %s: %s\n", cmd, w->msg ? w->msg : "");
        rc = w->rc == RG_DECLINED ? 1 : 2;
    }

    fflush(stdout);
    free(w->msg);
    rg_stream_destroy(q);
    rg_engine_destroy(e);

    return rc;
}


static int
rg_approval_cli_decide(rg_cycle_t *cycle, void *opts, const char *arg,
    rg_uint_t approve)
{
    const char               *cmd;
    rg_engine_t              *e;
    rg_stream_t              *q;
    rg_approval_cli_opts_t   *o;
    rg_approval_cli_wait_t    w;

    o = opts;
    cmd = approve ? "approve" : "deny";

    if (approve && o->reason) {
        fprintf(stderr, "reagent: approve takes no --reason (a denial's "
                "reason is told to the model)\n");
        return 1;
    }

    q = rg_approval_cli_open(cycle, cmd, &e);
    if (q == NULL) {
        return 2;
    }

    memset(&w, 0, sizeof(w));
    w.base = e->base;

    rg_approval_decide(q, arg, o->call_id, approve, o->reason,
                       rg_approval_cli_answer, &w);

    return rg_approval_cli_wait(e, q, cmd, &w);
}


static int
rg_approve_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    return rg_approval_cli_decide(cycle, opts, arg, 1);
}


static int
rg_deny_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    return rg_approval_cli_decide(cycle, opts, arg, 0);
}


static int
rg_pending_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    rg_engine_t             *e;
    rg_stream_t             *q;
    rg_approval_cli_wait_t   w;

    q = rg_approval_cli_open(cycle, "pending", &e);
    if (q == NULL) {
        return 2;
    }

    memset(&w, 0, sizeof(w));
    w.base = e->base;
    w.readable = 1;

    if (arg) {
        rg_approval_get(q, arg, rg_approval_cli_answer, &w);
    } else {
        rg_approval_list(q, 1000, rg_approval_cli_answer, &w);
    }

    return rg_approval_cli_wait(e, q, "pending", &w);
}


static int
rg_approval_cli_option(void *opts, int argc, char **argv, int i)
{
    rg_approval_cli_opts_t  *o;

    o = opts;

    if (strcmp(argv[i], "--reason") == 0) {
        if (i + 1 >= argc) {
            fprintf(stderr, "reagent: --reason needs a text\n");
            return -1;
        }
        o->reason = argv[i + 1];
        return 2;
    }

    if (argv[i][0] == '-' && argv[i][1] != '\0') {
        return 0;
    }

    /* the task is the command's argument; a second word is the call */
    if (!o->seen) {
        o->seen = 1;
        return 0;
    }

    if (o->call_id == NULL) {
        o->call_id = argv[i];
        return 1;
    }

    return 0;
}


const rg_cli_t  rg_approve_cli = {
    "approve",
    "  approve TASK_ID [CALL_ID]\n"
    "      approves the dangerous calls a parked task waits for (one, or\n"
    "      every one): once each is decided the task is queued again\n",
    "a task id: reagent approve TASK_ID [CALL_ID]",
    sizeof(rg_approval_cli_opts_t),
    rg_approval_cli_option,
    rg_approve_main,
    RG_CLI_CLIENT
};


const rg_cli_t  rg_deny_cli = {
    "deny",
    "  deny TASK_ID [CALL_ID] [--reason TEXT]\n"
    "      denies them: the model is told, with the reason\n",
    "a task id: reagent deny TASK_ID [CALL_ID] [--reason TEXT]",
    sizeof(rg_approval_cli_opts_t),
    rg_approval_cli_option,
    rg_deny_main,
    RG_CLI_CLIENT
};


const rg_cli_t  rg_pending_cli = {
    "pending",
    "  pending [TASK_ID]\n"
    "      the parked tasks and their deadlines as JSON (ms since the\n"
    "      epoch, and deadline_local: local time and how long is left);\n"
    "      with an id, its calls and the decisions so far\n",
    NULL,
    sizeof(rg_approval_cli_opts_t),
    rg_approval_cli_option,
    rg_pending_main,
    RG_CLI_CLIENT
};
