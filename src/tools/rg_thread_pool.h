/* rg_thread_pool.h: a small pool of threads for work that can only be
 * done blocking (nginx's thread_pool). A task's handler runs in a pool
 * thread; its done callback then runs on the reactor, woken through an
 * eventfd. Posting never fails and never blocks: beyond max_queue, tasks
 * wait on the reactor side until the queue has room. */

#ifndef RG_THREAD_POOL_H
#define RG_THREAD_POOL_H

#include <rg_config.h>
#include <rg_core.h>
#include <event2/event.h>

typedef struct rg_thread_pool_s  rg_thread_pool_t;
typedef struct rg_thread_task_s  rg_thread_task_t;

struct rg_thread_task_s {
    rg_thread_task_t   *next;
    void              (*handler)(rg_thread_task_t *task);  /* in a thread */
    void              (*done)(rg_thread_task_t *task);     /* on the reactor */
    void               *data;
};

typedef struct {
    uint64_t            posted;
    uint64_t            completed;
    uint64_t            overflowed;   /* waited for room in the queue */
    rg_uint_t           busy_max;     /* most threads busy at once */
} rg_thread_pool_stats_t;

rg_thread_pool_t *rg_thread_pool_create(struct event_base *base,
    rg_uint_t threads, rg_uint_t max_queue, rg_log_t *log);
void rg_thread_pool_post(rg_thread_pool_t *tp, rg_thread_task_t *task);
void rg_thread_pool_destroy(rg_thread_pool_t *tp);
const rg_thread_pool_stats_t *rg_thread_pool_stats(rg_thread_pool_t *tp);

#endif /* RG_THREAD_POOL_H */
