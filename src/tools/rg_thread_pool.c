/* rg_thread_pool.c: threads for blocking work. Three lists: `queue`
 * (shared with the threads, under the lock, at most max_queue long),
 * `overflow` (reactor only: what did not fit) and `done` (filled by the
 * threads, drained by the reactor after an eventfd wake-up). Threads never
 * touch sessions, nor libevent: a thread only writes the eventfd, and done
 * callbacks run on the reactor. The lock orders a task's handler before
 * its done callback. Threads take no signal but the synchronous faults
 * (nginx's thread pools do the same): signals are the reactor's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_thread_pool.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>


#define RG_THREAD_POOL_EXIT_WAIT  2000     /* ms for running tasks at exit */


struct rg_thread_pool_s {
    pthread_mutex_t         lock;
    pthread_cond_t          cond;
    rg_thread_task_t       *queue_head;
    rg_thread_task_t      **queue_tail;
    rg_uint_t               queued;
    rg_thread_task_t       *done_head;
    rg_thread_task_t      **done_tail;
    rg_uint_t               busy;
    unsigned                stop:1;

    /* reactor side */
    rg_thread_task_t       *overflow_head;
    rg_thread_task_t      **overflow_tail;
    rg_uint_t               max_queue;
    int                     efd;
    struct event           *ev;
    rg_log_t               *log;

    pthread_t              *threads;
    rg_uint_t               nthreads;
    rg_thread_pool_stats_t  stats;
    rg_uint_t               busy_max;     /* under the lock */

    rg_thread_pool_t       *next_left;
};


/* pools whose threads were still busy at exit: kept, with what their
 * threads will still touch, for as long as the process lives */
static rg_thread_pool_t  *rg_thread_pool_left;


static void *
rg_thread_pool_worker(void *arg)
{
    uint64_t           one;
    rg_thread_task_t  *t;
    rg_thread_pool_t  *tp;
    rg_uint_t          wake;

    tp = arg;
    one = 1;

    pthread_mutex_lock(&tp->lock);

    for ( ;; ) {
        while (tp->queue_head == NULL && !tp->stop) {
            pthread_cond_wait(&tp->cond, &tp->lock);
        }

        if (tp->stop) {
            break;
        }

        t = tp->queue_head;
        tp->queue_head = t->next;
        if (tp->queue_head == NULL) {
            tp->queue_tail = &tp->queue_head;
        }
        tp->queued--;
        tp->busy++;
        if (tp->busy > tp->busy_max) {
            tp->busy_max = tp->busy;
        }

        pthread_mutex_unlock(&tp->lock);

        t->handler(t);

        pthread_mutex_lock(&tp->lock);

        tp->busy--;
        t->next = NULL;
        wake = tp->done_head == NULL;
        *tp->done_tail = t;
        tp->done_tail = &t->next;

        if (wake && write(tp->efd, &one, sizeof(one)) < 0) {
            /* the counter cannot overflow in practice; nothing to do */
        }
    }

    pthread_mutex_unlock(&tp->lock);

    return NULL;
}


/* moves overflow into the queue while there is room; called with the
 * lock held */
static void
rg_thread_pool_refill(rg_thread_pool_t *tp)
{
    rg_thread_task_t  *t;

    while (tp->overflow_head && tp->queued < tp->max_queue) {
        t = tp->overflow_head;
        tp->overflow_head = t->next;
        if (tp->overflow_head == NULL) {
            tp->overflow_tail = &tp->overflow_head;
        }

        t->next = NULL;
        *tp->queue_tail = t;
        tp->queue_tail = &t->next;
        tp->queued++;
        pthread_cond_signal(&tp->cond);
    }
}


static void
rg_thread_pool_drain(rg_thread_pool_t *tp)
{
    rg_thread_task_t  *t, *next;

    pthread_mutex_lock(&tp->lock);

    t = tp->done_head;
    tp->done_head = NULL;
    tp->done_tail = &tp->done_head;

    rg_thread_pool_refill(tp);

    pthread_mutex_unlock(&tp->lock);

    for ( ; t; t = next) {
        next = t->next;
        tp->stats.completed++;
        t->done(t);
    }
}


static void
rg_thread_pool_event_handler(evutil_socket_t fd, short what, void *arg)
{
    uint64_t  n;

    if (read(fd, &n, sizeof(n)) < 0) {
        /* EAGAIN: a wake-up raced a drain */
    }

    rg_thread_pool_drain(arg);
}


rg_thread_pool_t *
rg_thread_pool_create(struct event_base *base, rg_uint_t threads,
    rg_uint_t max_queue, rg_log_t *log)
{
    int                err;
    sigset_t           set, old;
    rg_uint_t          i;
    rg_thread_pool_t  *tp;

    tp = calloc(1, sizeof(rg_thread_pool_t));
    if (tp == NULL) {
        return NULL;
    }

    tp->efd = -1;
    tp->queue_tail = &tp->queue_head;
    tp->done_tail = &tp->done_head;
    tp->overflow_tail = &tp->overflow_head;
    tp->max_queue = max_queue ? max_queue : 1;
    tp->log = log;

    pthread_mutex_init(&tp->lock, NULL);
    pthread_cond_init(&tp->cond, NULL);

    tp->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (tp->efd == -1) {
        rg_log_error(RG_LOG_ALERT, log, errno, "eventfd() failed");
        goto failed;
    }

    tp->ev = event_new(base, tp->efd, EV_READ | EV_PERSIST,
                       rg_thread_pool_event_handler, tp);
    if (tp->ev == NULL || event_add(tp->ev, NULL) != 0) {
        goto failed;
    }

    tp->threads = calloc(threads, sizeof(pthread_t));
    if (tp->threads == NULL) {
        goto failed;
    }

    /* threads inherit the mask: all signals blocked but the faults that
     * a thread's own code raises */
    sigfillset(&set);
    sigdelset(&set, SIGILL);
    sigdelset(&set, SIGFPE);
    sigdelset(&set, SIGSEGV);
    sigdelset(&set, SIGBUS);
    sigdelset(&set, SIGTRAP);
    sigdelset(&set, SIGSYS);

    err = pthread_sigmask(SIG_SETMASK, &set, &old);
    if (err) {
        rg_log_error(RG_LOG_ALERT, log, err, "pthread_sigmask() failed");
        goto failed;
    }

    for (i = 0; i < threads; i++) {
        err = pthread_create(&tp->threads[i], NULL, rg_thread_pool_worker,
                             tp);
        if (err) {
            break;
        }
        tp->nthreads++;
    }

    (void) pthread_sigmask(SIG_SETMASK, &old, NULL);

    if (err) {
        rg_log_error(RG_LOG_ALERT, log, err, "pthread_create() failed");
        goto failed;
    }

    return tp;

failed:

    rg_thread_pool_destroy(tp);
    return NULL;
}


void
rg_thread_pool_post(rg_thread_pool_t *tp, rg_thread_task_t *task)
{
    task->next = NULL;
    tp->stats.posted++;

    pthread_mutex_lock(&tp->lock);

    if (tp->queued < tp->max_queue && tp->overflow_head == NULL) {
        *tp->queue_tail = task;
        tp->queue_tail = &task->next;
        tp->queued++;
        pthread_cond_signal(&tp->cond);

    } else {
        /* full: wait here, on the reactor side, in order */
        *tp->overflow_tail = task;
        tp->overflow_tail = &task->next;
        tp->stats.overflowed++;
    }

    pthread_mutex_unlock(&tp->lock);
}


const rg_thread_pool_stats_t *
rg_thread_pool_stats(rg_thread_pool_t *tp)
{
    pthread_mutex_lock(&tp->lock);
    tp->stats.busy_max = tp->busy_max;
    pthread_mutex_unlock(&tp->lock);

    return &tp->stats;
}


void
rg_thread_pool_destroy(rg_thread_pool_t *tp)
{
    rg_uint_t          i, left;
    rg_thread_task_t  *t, *next, *done, *queued;
    struct timespec    ts;

    if (tp == NULL) {
        return;
    }

    pthread_mutex_lock(&tp->lock);
    tp->stop = 1;
    pthread_cond_broadcast(&tp->cond);
    pthread_mutex_unlock(&tp->lock);

    /* one deadline for all: a tool stuck in a blocking call must not
     * hang the exit */
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += RG_THREAD_POOL_EXIT_WAIT / 1000;
    ts.tv_nsec += (RG_THREAD_POOL_EXIT_WAIT % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }

    left = 0;

    for (i = 0; i < tp->nthreads; i++) {
        if (pthread_timedjoin_np(tp->threads[i], NULL, &ts) != 0) {
            pthread_detach(tp->threads[i]);
            left++;
        }
    }

    if (tp->ev) {
        event_free(tp->ev);
        tp->ev = NULL;
    }

    /* finished work is handed back; queued work never ran (the threads
     * left take no more once stop is set) */
    pthread_mutex_lock(&tp->lock);
    done = tp->done_head;
    queued = tp->queue_head;
    tp->done_head = NULL;
    tp->done_tail = &tp->done_head;
    tp->queue_head = NULL;
    tp->queue_tail = &tp->queue_head;
    pthread_mutex_unlock(&tp->lock);

    for (t = done; t; t = next) {
        next = t->next;
        t->done(t);
    }

    for (t = queued; t; t = next) {
        next = t->next;
        t->done(t);
    }

    for (t = tp->overflow_head; t; t = next) {
        next = t->next;
        t->done(t);
    }

    tp->overflow_head = NULL;

    if (left) {
        /* the tasks they run, the lock and the eventfd stay theirs; the
         * owners of those tasks keep what they use (rg_cycle_destroy) */
        rg_log_error(RG_LOG_WARN, tp->log, 0, "%lu thread-pool thread%s "
                     "still busy at exit; leaving %s",
                     (unsigned long) left, left == 1 ? " is" : "s are",
                     left == 1 ? "it" : "them");
        tp->next_left = rg_thread_pool_left;
        rg_thread_pool_left = tp;
        return;
    }

    if (tp->efd != -1) {
        close(tp->efd);
    }

    pthread_mutex_destroy(&tp->lock);
    pthread_cond_destroy(&tp->cond);
    free(tp->threads);
    free(tp);
}
