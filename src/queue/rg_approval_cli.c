/* rg_approval_cli.c: the operator's commands on parked tasks: `reagent
 * approve TASK [CALL]`, `reagent deny TASK [CALL] [--reason TEXT]` and
 * `reagent pending [TASK]`. Short-lived clients of the queue, each
 * waiting for its answer on a reactor of its own; the work is
 * rg_approval.c's, the same the HTTP API calls. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_queue_conf.h>
#include <rg_stream.h>
#include <rg_approval.h>
#include <unistd.h>


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
} rg_approval_cli_wait_t;


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
    "      the parked tasks and their deadlines as JSON; with an id, its\n"
    "      calls and the decisions so far\n",
    NULL,
    sizeof(rg_approval_cli_opts_t),
    rg_approval_cli_option,
    rg_pending_main,
    RG_CLI_CLIENT
};
