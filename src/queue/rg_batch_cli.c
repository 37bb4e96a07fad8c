/* rg_batch_cli.c: the queue part and its command, `reagent batch
 * tasks.jsonl|-`: its options and usage, and the engine it runs the
 * batch on (rg_batch.c). Its directives, queue { }, are
 * rg_queue_conf.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_run.h>
#include <rg_batch.h>
#include <rg_queue_conf.h>
#include <rg_stream.h>
#include <rg_metrics.h>
#include <rg_approval.h>


/* the options of batch; zeroed means not given */
typedef struct {
    rg_run_opts_t       run;          /* -a, --approve-all, ... */
    rg_int_t            concurrency;  /* 0: the configuration's */
    const char         *output;       /* -o, NULL: stdout */
    rg_uint_t           resume;
    rg_uint_t           progress;     /* 0: when stderr is a terminal,
                                         1: --progress, 2: --no-progress */
    const char         *transcripts;  /* --transcripts DIR */
    const char         *metrics;      /* --metrics-out FILE */
} rg_batch_cli_opts_t;


static int rg_batch_cli_option(void *opts, int argc, char **argv, int i);
static int rg_batch_cli_main(rg_cycle_t *cycle, void *opts, const char *arg);


static const rg_cli_t  rg_batch_cli = {
    "batch",
    "  batch [-a AGENT] [--concurrency N] [-o results.jsonl [--resume]]\n"
    "        [--progress|--no-progress] [--approve-all|--deny-dangerous]\n"
    "        [--transcripts DIR] [--metrics-out FILE] [--mock] tasks.jsonl|-\n"
    "      run JSONL tasks {\"id\",\"agent\",\"input\"}, up to N at once;\n"
    "      results {\"id\",\"status\",\"answer\",\"rounds\",\"tokens\",\"ms\","
    "\"error\"}\n"
    "      appended to -o FILE, which must be empty unless --resume: then\n"
    "      the tasks it holds results for are skipped; --transcripts DIR\n"
    "      writes each task's transcript to DIR/ID.json (for replay);\n"
    "      --metrics-out FILE writes the metrics (Prometheus text) at the end\n",
    "a tasks file, or - for stdin",
    sizeof(rg_batch_cli_opts_t),
    rg_batch_cli_option,
    rg_batch_cli_main,
    0
};


static const rg_cli_t  *rg_queue_cli[] = {
    &rg_batch_cli,
    &rg_submit_cli,
    &rg_results_cli,
    &rg_queue_status_cli,
    &rg_approve_cli,
    &rg_deny_cli,
    &rg_pending_cli,
    &rg_events_cli,
    NULL
};


rg_part_t  rg_queue_part = {
    .name = "queue",
    .commands = rg_queue_commands,
    .create_conf = rg_queue_create_conf,
    .init_conf = rg_queue_init_conf,
    .init_master = rg_queue_init_master,
    .cli = rg_queue_cli
};


static int
rg_batch_cli_option(void *opts, int argc, char **argv, int i)
{
    char                 *end;
    const char           *a;
    rg_batch_cli_opts_t  *o;

    o = opts;
    a = argv[i];

    if (strcmp(a, "--concurrency") == 0 && i + 1 < argc) {
        o->concurrency = strtol(argv[i + 1], &end, 10);
        if (*end || o->concurrency <= 0 || o->concurrency > 1000000) {
            fprintf(stderr, "reagent: --concurrency expects a number from 1 "
                    "to 1000000, not \"%s\"\n", argv[i + 1]);
            return -1;
        }
        return 2;
    }

    if (strcmp(a, "-o") == 0 && i + 1 < argc) {
        o->output = argv[i + 1];
        return 2;
    }

    if (strcmp(a, "--transcripts") == 0 && i + 1 < argc) {
        o->transcripts = argv[i + 1];
        return 2;
    }

    /* not in the usage: the tests read the metrics a batch leaves */
    if (strcmp(a, "--metrics-out") == 0 && i + 1 < argc) {
        o->metrics = argv[i + 1];
        return 2;
    }

    if (strcmp(a, "--resume") == 0) {
        o->resume = 1;
        return 1;
    }

    if (strcmp(a, "--progress") == 0) {
        o->progress = 1;
        return 1;
    }

    if (strcmp(a, "--no-progress") == 0) {
        o->progress = 2;
        return 1;
    }

    return rg_run_option(&o->run, argc, argv, i,
                         RG_RUN_OPT_AGENT | RG_RUN_OPT_MOCK);
}


/* the metrics as GET /metrics would show them, once the batch ended */
static rg_int_t
rg_batch_cli_metrics(rg_cycle_t *cycle, const char *path)
{
    FILE      *f;
    rg_int_t   rc;
    rg_buf_t   b = { NULL, 0, 0 };

    rc = rg_metrics_render(cycle, &b);
    if (rc != RG_OK) {
        fprintf(stderr, "reagent: no memory for the metrics\n");
        rg_buf_free(&b);
        return RG_ERROR;
    }

    f = fopen(path, "we");
    if (f == NULL) {
        fprintf(stderr, "reagent: cannot write the metrics to \"%s\": %s\n",
                path, strerror(errno));
        rg_buf_free(&b);
        return RG_ERROR;
    }

    if (fwrite(b.data, 1, b.len, f) != b.len) {
        rc = RG_ERROR;
    }
    if (fclose(f) != 0) {
        rc = RG_ERROR;
    }
    if (rc != RG_OK) {
        fprintf(stderr, "reagent: cannot write the metrics to \"%s\": %s\n",
                path, strerror(errno));
    }

    rg_buf_free(&b);

    return rc;
}


static int
rg_batch_cli_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    int                   rc;
    rg_engine_t          *e;
    rg_batch_opts_t       bopts;
    rg_batch_cli_opts_t  *o;

    o = opts;

    e = rg_run_engine(cycle, &o->run, arg);
    if (e == NULL) {
        return 1;
    }

    memset(&bopts, 0, sizeof(bopts));
    bopts.input = arg;
    bopts.output = o->output;
    bopts.resume = o->resume;
    bopts.agent = o->run.agent;
    bopts.concurrency = o->concurrency;
    bopts.progress = o->progress == 0 ? -1 : o->progress == 1;
    bopts.quiet = 0;
    bopts.transcripts = o->transcripts;

    rc = rg_batch_run(e, &bopts);

    if (o->metrics && rg_batch_cli_metrics(cycle, o->metrics) != RG_OK
        && rc == 0)
    {
        rc = 1;
    }

    rg_run_engine_destroy(e, &o->run);

    return rc;
}
