/* rg_queue.h: where the tasks of a batch come from and where their
 * results go, as the dispatcher (rg_batch.c) sees it. A backend hands out
 * parsed tasks, and the lines that are not tasks, to its handler; takes
 * each task's result, writing it and acknowledging the task; holds back
 * while results wait for room; says when its input is exhausted. It works
 * on the engine's reactor and never blocks it, calling ready() when more
 * may be pulled. One backend, JSONL files (rg_queue_jsonl.c), which is
 * what batch reads. The task queue in Redis Streams is not one of them:
 * it has an interface of its own (rg_stream.h), which serve's workers
 * read directly. */

#ifndef RG_QUEUE_H
#define RG_QUEUE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_task.h>
#include <jansson.h>

typedef struct rg_queue_s  rg_queue_t;


/* what a queue calls back, with data */
typedef struct {
    /* a task to run; its strings are the queue's until this returns */
    void              (*task)(void *data, rg_task_t *t);
    /* input that is no task: id and why, for its "invalid" result */
    void              (*invalid)(void *data, const char *id,
                                 const char *why);
    /* more may be pulled now: input came, or results found room */
    void              (*ready)(void *data);
    /* results can no longer be written (err: the errno, EPIPE when the
     * reader went away); nothing more is pulled */
    void              (*failed)(void *data, int err);
    void               *data;
} rg_queue_handler_t;


typedef struct {
    rg_uint_t           skipped;      /* their results were there */
    rg_uint_t           write_errors; /* results that could not be written */
    rg_uint_t           total;        /* tasks and lines that are no task
                                         the input holds, skipped ones
                                         included; 0: not known (yet) */
} rg_queue_stats_t;


struct rg_queue_s {
    const char         *name;

    /* Hands at most max tasks or lines that are no task to the handler:
     * RG_OK, RG_AGAIN when it waits for input (ready() follows), RG_DONE
     * when the input is exhausted. Call it while !full(). */
    rg_int_t          (*pull)(rg_queue_t *q, rg_uint_t max);

    /* writes a task's result {"id",...} and acknowledges the task */
    void              (*result)(rg_queue_t *q, json_t *result);

    /* results wait for room: pull nothing until ready() */
    rg_uint_t         (*full)(rg_queue_t *q);
    /* the input was read to its end */
    rg_uint_t         (*eof)(rg_queue_t *q);
    /* nothing more will be handed out and every result is written */
    rg_uint_t         (*drained)(rg_queue_t *q);

    /* frees the queue; RG_ERROR when a result could not be written */
    rg_int_t          (*close)(rg_queue_t *q);

    rg_queue_stats_t    stats;
};

#endif /* RG_QUEUE_H */
