/* rg_batch.h: `reagent batch`: JSONL tasks in, JSONL results out, up to
 * N sessions at once on one reactor, a progress bar and a summary. One
 * result per line of input, always; results are never overwritten. */

#ifndef RG_BATCH_H
#define RG_BATCH_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>

typedef struct {
    const char         *input;        /* a file, or "-" */
    const char         *output;       /* NULL: stdout */
    rg_uint_t           resume;       /* skip the ids output holds */
    const char         *agent;        /* default agent, NULL: the cycle's */
    rg_int_t            concurrency;
    rg_int_t            progress;     /* -1: when stderr is a terminal */
    rg_uint_t           quiet;
} rg_batch_opts_t;

/* runs to completion; returns the process exit code */
int rg_batch_run(rg_engine_t *e, rg_batch_opts_t *opts);

#endif /* RG_BATCH_H */
