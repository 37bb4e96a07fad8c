/* rg_http_tasks.h: the sessions the API runs in its own worker
 * (rg_http_tasks.c): the tasks of a server without a queue and every
 * chat completion. At most `concurrency` run at once; the others wait in
 * the order they came. */

#ifndef RG_HTTP_TASKS_H
#define RG_HTTP_TASKS_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_http.h>
#include <rg_session.h>
#include <rg_store.h>
#include <rg_redis.h>

typedef struct rg_http_task_s  rg_http_task_t;
struct rg_stream_s;

struct rg_http_task_s {
    rg_http_tasks_t    *tasks;
    char               *id;               /* the task's; NULL: a chat */
    char                sid[48];          /* its session's, once started */
    json_t             *task;             /* the task object */
    rg_session_t       *session;          /* while it runs */
    rg_msec_t           created;
    rg_msec_t           started;
    /* the owner's (a chat completion): started, and ended (s NULL: it
     * never started, or was cancelled while waiting); r is the result */
    void              (*started_cb)(rg_http_task_t *t, rg_session_t *s);
    void              (*done)(rg_http_task_t *t, rg_session_t *s,
                              json_t *r);
    void               *data;
    rg_http_task_t     *next;
    rg_http_task_t     *prev;
};



struct rg_http_tasks_s {
    rg_http_t          *h;
    struct rg_stream_s *queue;            /* with a queue { }, else NULL */
    rg_redis_t         *redis;            /* reads of the tasks' state */
    rg_uint_t           own_redis;        /* not the queue's */
    rg_store_t         *store;
    const char         *prefix;
    rg_http_task_t      running;          /* rings */
    rg_http_task_t      waiting;
    rg_uint_t           nrunning;
    rg_uint_t           nwaiting;
    rg_uint_t           concurrency;
};


/* a task (the object, referenced) to run here once a slot is free;
 * NULL when max_tasks wait already or memory ran out. Started by
 * rg_http_task_go(), after the owner set its callbacks. */
rg_http_task_t *rg_http_task_run(rg_http_t *h, const char *id,
    json_t *task);
void rg_http_task_go(rg_http_t *h);

/* the configuration's agents, each as one makes it: a new array (NULL:
 * no memory) */
json_t *rg_http_agents(rg_http_t *h, json_t *(*one)(rg_agent_conf_t *a,
    rg_agent_main_conf_t *amcf));

/* POST /v1/tasks (rg_http_submit.c) */
void rg_http_submit(rg_http_req_t *r);
/* GET /v1/tasks/{id}, and DELETE when cancel (rg_http_lookup.c) */
void rg_http_task_lookup(rg_http_req_t *r, const char *id, rg_uint_t cancel);

/* at most max bytes of the UTF-8 text s, not cutting a character: a
 * message that cuts one is no JSON string */
int rg_http_cut(const char *s, size_t max);
/* a store's answer nobody waits for: a result not kept is said by GET
 * (not found) */
void rg_http_stored(void *data, const rg_store_res_t *res);
/* where a task's result is kept: "{SID}:result" */
void rg_http_result_key(const char *sid, char *buf, size_t size);

/* a task of this worker, waiting or running, by its id */
rg_http_task_t *rg_http_task_find(rg_http_tasks_t *ts, const char *id);
/* a running one is cancelled (its done() comes), a waiting one goes now
 * (done(t, NULL, NULL) called) */
void rg_http_task_cancel(rg_http_task_t *t, const char *why);

#endif /* RG_HTTP_TASKS_H */
