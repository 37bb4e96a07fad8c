/* rg_batch.h: `reagent batch`: tasks from a queue (rg_queue.h), up to N
 * sessions at once on one reactor, a result for every task, a progress
 * bar (rg_progress.h) and a summary. The dispatcher is rg_batch.c; what
 * it shares with rg_batch_progress.c and rg_batch_summary.c is
 * rg_batch_t. */

#ifndef RG_BATCH_H
#define RG_BATCH_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_queue.h>
#include <rg_session.h>
#include <rg_progress.h>
#include <event2/event.h>
#include <jansson.h>

typedef struct {
    const char         *input;        /* a file, or "-" */
    const char         *output;       /* NULL: stdout */
    rg_uint_t           resume;       /* skip the ids output holds */
    const char         *agent;        /* default agent, NULL: the cycle's */
    rg_int_t            concurrency;
    rg_int_t            progress;     /* -1: when stderr is a terminal */
    rg_uint_t           quiet;
    const char         *transcripts;  /* a folder: one per task, or NULL */
} rg_batch_opts_t;


typedef struct {
    rg_engine_t        *engine;
    rg_batch_opts_t    *opts;
    rg_queue_t         *queue;
    char               *store_key;    /* with store redis: the batch's
                                         random id, which names the
                                         tasks' sessions; NULL: none */
    char               *id_file;      /* where -o FILE's batch id is
                                         kept for --resume, or NULL */

    unsigned            stopping:1;
    unsigned            finished:1;
    unsigned            failed:1;     /* results can no longer be written */
    unsigned            progress:1;
    struct event       *progress_ev;
    rg_progress_t       bar;          /* filled as it is drawn */
    struct event       *sigint_ev;
    struct event       *sigterm_ev;

    rg_uint_t           running;
    rg_uint_t           tasks;
    rg_uint_t           by_state[RG_SESSION_NSTATES];
    rg_uint_t           invalid;
    rg_uint_t           not_started;

    uint32_t           *times;        /* ms per finished task */
    rg_uint_t           ntimes;
    rg_uint_t           times_cap;

    json_t             *ids;          /* id: the line it came on */
    rg_uint_t           duplicates;

    rg_session_t      **live;         /* for cancellation */
    rg_uint_t           nlive;

    rg_uint_t           transcript_errors;

    rg_msec_t           started;
    uint64_t            cpu_started;
    long                rss_started;
} rg_batch_t;


/* runs to completion; returns the process exit code */
int rg_batch_run(rg_engine_t *e, rg_batch_opts_t *opts);

/* rg_batch_progress.c */
void rg_batch_show_progress(rg_batch_t *b, int final);
/* a task ended */
void rg_batch_progress_task(rg_batch_t *b);
void rg_batch_progress_handler(evutil_socket_t fd, short what, void *arg);

/* rg_batch_summary.c */
void rg_batch_summary(rg_batch_t *b);

#endif /* RG_BATCH_H */
