/* rg_queue_jsonl.h: the JSONL backend of the queue interface
 * (rg_queue_jsonl.c): tasks are lines of a file or of stdin, results
 * lines appended to a file or written to stdout. */

#ifndef RG_QUEUE_JSONL_H
#define RG_QUEUE_JSONL_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_queue.h>
#include <event2/event.h>

typedef struct {
    const char         *input;        /* a file, or "-" */
    const char         *output;       /* NULL: stdout */
    rg_uint_t           resume;       /* skip the ids output holds */
} rg_queue_jsonl_opts_t;

/* Opens input and output (an error is said on stderr: NULL). An output
 * file that is not empty is refused unless resume: then its ids are
 * skipped and results appended. */
rg_queue_t *rg_queue_jsonl_open(const rg_queue_jsonl_opts_t *opts,
    struct event_base *base, rg_log_t *log, const rg_queue_handler_t *h);

#endif /* RG_QUEUE_JSONL_H */
