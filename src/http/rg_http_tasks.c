/* rg_http_tasks.c: the API's tasks and the routes of /v1/tasks. Without
 * a queue { } (store redis), a task runs in this worker (the only one):
 * at most `concurrency` at once, the others wait in the order they came,
 * at most max_tasks; a result is kept in the store for the session ttl.
 * With one, a task goes onto the queue that every worker reads. POST
 * /v1/tasks is rg_http_submit.c's; GET and DELETE /v1/tasks/{id} are
 * rg_http_lookup.c's; GET /v1/agents lists the agents. A session is seen
 * through its face (rg_session.h). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_cycle.h>
#include <rg_core_conf.h>
#include <rg_store.h>
#include <rg_store_conf.h>
#include <rg_redis.h>
#include <rg_agent.h>
#include <rg_agent_conf.h>
#include <rg_session.h>
#include <rg_task.h>
#include <rg_stream.h>
#include <rg_approval.h>
#include <rg_queue_conf.h>
#include <rg_http.h>
#include <rg_http_tasks.h>


int
rg_http_cut(const char *s, size_t max)
{
    size_t  n;

    n = strlen(s);
    if (n <= max) {
        return (int) n;
    }

    n = max;
    while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80) {
        n--;
    }

    return (int) n;
}


/* the tasks ------------------------------------------------------------ */

static void rg_http_task_next(rg_http_tasks_t *ts);


static void
rg_http_link(rg_http_task_t *head, rg_http_task_t *t)
{
    t->prev = head->prev;
    t->next = head;
    head->prev->next = t;
    head->prev = t;
}


static void
rg_http_unlink(rg_http_task_t *t)
{
    t->prev->next = t->next;
    t->next->prev = t->prev;
    t->next = t->prev = t;
}


rg_http_task_t *
rg_http_task_find(rg_http_tasks_t *ts, const char *id)
{
    rg_http_task_t  *t;

    for (t = ts->running.next; t != &ts->running; t = t->next) {
        if (t->id && strcmp(t->id, id) == 0) {
            return t;
        }
    }

    for (t = ts->waiting.next; t != &ts->waiting; t = t->next) {
        if (t->id && strcmp(t->id, id) == 0) {
            return t;
        }
    }

    return NULL;
}


static void
rg_http_task_free(rg_http_task_t *t)
{
    json_decref(t->task);
    free(t->id);
    free(t);
}


void
rg_http_stored(void *data, const rg_store_res_t *res)
{
    /* a result not kept is said by GET: not found */
}


void
rg_http_result_key(const char *sid, char *buf, size_t size)
{
    snprintf(buf, size, "{%s}:result", sid);
}


static void
rg_http_session_done(rg_session_t *s)
{
    char              key[96];
    char             *text;
    json_t           *r;
    rg_str_t          k, v;
    rg_http_task_t   *t;
    rg_http_tasks_t  *ts;

    t = rg_session_data(s);
    ts = t->tasks;

    r = rg_session_result(s);

    if (r && t->id) {
        json_object_set_new(r, "id", json_string(t->id));
        json_object_set_new(r, "created", json_integer(t->created));
        json_object_set_new(r, "started", json_integer(t->started));
        json_object_set_new(r, "ended", json_integer(rg_wall_msec()));
    }

    /* a task's result stays; a chat completion's goes to its request */
    if (r && t->id && !t->done) {
        char  sid[48];

        text = json_dumps(r, JSON_COMPACT);
        if (text) {
            rg_stream_session_id(t->id, sid, sizeof(sid));
            rg_http_result_key(sid, key, sizeof(key));
            k.data = key;
            k.len = strlen(key);
            v.data = text;
            v.len = strlen(text);
            ts->store->set(ts->store, &k, &v,
                           rg_store_session_ttl(ts->h->engine),
                           0, rg_http_stored, NULL);
            free(text);
        }
    }

    if (t->done) {
        t->done(t, s, r);
    }

    json_decref(r);

    rg_http_unlink(t);
    ts->nrunning--;
    t->session = NULL;
    rg_session_destroy(s);
    rg_engine_release(ts->h->engine);
    rg_http_task_free(t);

    rg_http_task_next(ts);
}


static rg_int_t
rg_http_task_start(rg_http_tasks_t *ts, rg_http_task_t *t)
{
    char              *text;
    rg_int_t           rc;
    rg_task_t          task;
    rg_session_t      *s;
    rg_agent_conf_t   *agent;
    const char        *name;
    rg_session_args_t  args;

    text = json_dumps(t->task, JSON_COMPACT);
    if (text == NULL) {
        return RG_ERROR;
    }

    rc = rg_task_parse(&task, text, strlen(text), 0);
    free(text);

    if (rc != RG_OK) {
        if (rc == RG_DECLINED) {
            rg_task_free(&task);
        }
        return RG_ERROR;
    }

    name = task.agent ? task.agent
                      : rg_agent_main_conf(ts->h->engine->cycle)
                        ->default_agent.data;
    agent = rg_agent_find(ts->h->engine->cycle, name, strlen(name));

    /* a task's session is named after its id, as on the queue: its
     * events and its result are found by it */
    if (t->id) {
        rg_stream_session_id(t->id, t->sid, sizeof(t->sid));
    }

    memset(&args, 0, sizeof(args));
    args.agent = agent;
    args.id = t->id ? t->sid : NULL;
    args.task_id = t->id ? t->id : "chat";
    args.input = task.input;
    args.len = task.input_len;
    args.messages = task.messages;
    args.handler = rg_http_session_done;
    args.data = t;

    s = agent ? rg_session_open(ts->h->engine, &args) : NULL;
    if (s == NULL) {
        rg_task_free(&task);
        return RG_ERROR;
    }

    rg_task_apply(&task, s);

    rg_task_free(&task);

    t->session = s;
    t->started = rg_wall_msec();
    snprintf(t->sid, sizeof(t->sid), "%s", rg_session_id(s));

    rg_http_link(&ts->running, t);
    ts->nrunning++;
    rg_engine_hold(ts->h->engine);

    if (t->started_cb) {
        t->started_cb(t, s);
    }

    if (rg_session_start(s) != RG_OK) {
        /* it ended already: its handler ran */
        return RG_OK;
    }

    return RG_OK;
}


/* the next waiting tasks, as slots free up */
static void
rg_http_task_next(rg_http_tasks_t *ts)
{
    rg_http_task_t  *t;

    while (ts->nrunning < ts->concurrency && ts->waiting.next != &ts->waiting)
    {
        t = ts->waiting.next;
        rg_http_unlink(t);
        ts->nwaiting--;

        if (rg_http_task_start(ts, t) != RG_OK) {
            if (t->done) {
                t->done(t, NULL, NULL);
            }
            rg_http_task_free(t);
        }
    }
}


rg_http_task_t *
rg_http_task_run(rg_http_t *h, const char *id, json_t *task)
{
    rg_http_task_t   *t;
    rg_http_tasks_t  *ts;

    ts = h->tasks;

    if (ts->nwaiting + ts->nrunning >= (rg_uint_t) h->conf->max_tasks) {
        return NULL;
    }

    t = calloc(1, sizeof(rg_http_task_t));
    if (t == NULL) {
        return NULL;
    }

    t->tasks = ts;
    t->next = t->prev = t;
    t->created = rg_wall_msec();
    t->task = json_incref(task);

    if (id) {
        t->id = strdup(id);
        if (t->id == NULL) {
            rg_http_task_free(t);
            return NULL;
        }
    }

    rg_http_link(&ts->waiting, t);
    ts->nwaiting++;

    return t;
}


void
rg_http_task_go(rg_http_t *h)
{
    rg_http_task_next(h->tasks);
}


void
rg_http_task_cancel(rg_http_task_t *t, const char *why)
{
    rg_http_tasks_t  *ts;

    ts = t->tasks;

    if (t->session) {
        rg_session_cancel(t->session, why);
        return;
    }

    /* still waiting: it never started; its result says so */
    rg_http_unlink(t);
    ts->nwaiting--;

    if (t->id && t->done == NULL) {
        char      key[96], *text;
        json_t   *r;
        rg_str_t  k, v;

        rg_stream_session_id(t->id, t->sid, sizeof(t->sid));
        r = json_pack("{s:s, s:s, s:n, s:i, s:i, s:i, s:i, s:s, s:I}",
                      "id", t->id, "status", "cancelled", "answer",
                      "rounds", 0, "tokens", 0, "model_calls", 0, "ms", 0,
                      "error", why, "created", (json_int_t) t->created);
        text = r ? json_dumps(r, JSON_COMPACT) : NULL;
        json_decref(r);
        if (text) {
            rg_http_result_key(t->sid, key, sizeof(key));
            k.data = key;
            k.len = strlen(key);
            v.data = text;
            v.len = strlen(text);
            ts->store->set(ts->store, &k, &v,
                           rg_store_session_ttl(ts->h->engine), 0,
                           rg_http_stored, NULL);
            free(text);
        }
    }

    if (t->done) {
        t->done(t, NULL, NULL);
    }

    rg_http_task_free(t);
}


/* the routes ----------------------------------------------------------- */

/* /v1/tasks/{id}/events, …/approve, …/deny */
static void
rg_http_task_sub(rg_http_req_t *r, const char *id, const char *what, int m)
{
    if (strcmp(what, "events") == 0) {
        if (m != EVHTTP_REQ_GET) {
            rg_http_not_allowed(r, "GET", "events take GET");
            return;
        }
        rg_http_events_handler(r, id);
        return;
    }

    if (strcmp(what, "approve") == 0 || strcmp(what, "deny") == 0) {
        if (m != EVHTTP_REQ_POST) {
            rg_http_not_allowed(r, "POST", "%s takes POST", what);
            return;
        }
        rg_http_approval_handler(r, id, what[0] == 'a');
        return;
    }

    rg_http_error(r, 404, "invalid_request_error", "not_found",
                  "no such endpoint: a task has /events, /approve and /deny");
}


/* /v1/tasks, /v1/tasks/{id}, /v1/tasks/{id}/approve|deny */
void
rg_http_tasks_handler(rg_http_req_t *r)
{
    char        *slash;
    int          m;
    rg_uint_t    n;

    m = evhttp_request_get_command(r->req);

    if (r->rest[0] == '\0') {
        rg_http_submit(r);
        return;
    }

    /* an id is what a task line may hold: no slash, no control bytes */
    n = (rg_uint_t) strlen(r->rest);
    slash = strchr(r->rest, '/');

    if (slash == NULL && m == EVHTTP_REQ_POST) {
        rg_http_not_allowed(r, "GET, DELETE", "a task takes GET and DELETE");
        return;
    }

    if (n > 512) {
        rg_http_error(r, 404, "invalid_request_error", "not_found",
                      "no such endpoint");
        return;
    }

    if (slash) {
        *slash = '\0';
        rg_http_task_sub(r, r->rest, slash + 1, m);
        return;
    }

    rg_http_task_lookup(r, r->rest, m == EVHTTP_REQ_DELETE);
}


json_t *
rg_http_agents(rg_http_t *h, json_t *(*one)(rg_agent_conf_t *a,
    rg_agent_main_conf_t *amcf))
{
    json_t                *list;
    rg_uint_t              i;
    rg_agent_conf_t      **agents;
    rg_agent_main_conf_t  *amcf;

    amcf = rg_agent_main_conf(h->engine->cycle);
    agents = amcf->agents.elts;
    list = json_array();

    for (i = 0; list && i < amcf->agents.nelts; i++) {
        json_array_append_new(list, one(agents[i], amcf));
    }

    return list;
}


/* names (rg_str_t), appended to a */
static void
rg_http_names(json_t *a, rg_array_t *names)
{
    rg_str_t   *n;
    rg_uint_t   i;

    n = names ? names->elts : NULL;

    for (i = 0; a && n && i < names->nelts; i++) {
        json_array_append_new(a, json_stringn(n[i].data, n[i].len));
    }
}


/* an agent as GET /v1/agents shows it: its tools, those a provider
 * brings named as the configuration does */
static json_t *
rg_http_agent(rg_agent_conf_t *a, rg_agent_main_conf_t *amcf)
{
    json_t  *tools;

    tools = json_array();
    rg_http_names(tools, a->tool_names);
    rg_http_names(tools, a->provided);

    return json_pack("{s:s%, s:s%, s:o, s:b, s:I}",
                     "name", a->name.data, a->name.len,
                     "llm", a->llm_name.data ? a->llm_name.data : "",
                     a->llm_name.len,
                     "tools", tools ? tools : json_array(),
                     "default", rg_str_cmp(&a->name, &amcf->default_agent)
                                == 0,
                     "max_rounds", (json_int_t) a->max_rounds);
}


/* GET /v1/agents */
void
rg_http_agents_handler(rg_http_req_t *r)
{
    json_t  *list;

    list = rg_http_agents(r->http, rg_http_agent);

    rg_http_json(r, 200, json_pack("{s:o}", "agents",
                                   list ? list : json_array()));
}


rg_uint_t
rg_http_tasks_running(rg_http_t *h)
{
    return h->tasks->nrunning + h->tasks->nwaiting;
}


rg_int_t
rg_http_tasks_init(rg_http_t *h)
{
    rg_http_tasks_t  *ts;

    ts = calloc(1, sizeof(rg_http_tasks_t));
    if (ts == NULL) {
        return RG_ERROR;
    }

    h->tasks = ts;
    ts->h = h;
    ts->running.next = ts->running.prev = &ts->running;
    ts->waiting.next = ts->waiting.prev = &ts->waiting;
    ts->concurrency = (rg_uint_t) rg_core_conf(h->engine->cycle)->concurrency;
    ts->store = rg_store_ctx(h->engine);
    ts->prefix = rg_store_prefix(h->engine->cycle);

    if (rg_queue_conf(h->engine->cycle)->declared) {
        char  name[160];

        snprintf(name, sizeof(name), "%s-api", rg_agent_ctx(h->engine)
                                                ->worker);
        ts->queue = rg_stream_create(h->engine, name);
        if (ts->queue == NULL) {
            return RG_ERROR;
        }
    }

    /* the API reads the tasks' state on the queue's connections (those
     * its submits go over); without a queue, one of its own asks Redis
     * for readiness; NULL with store memory */
    if (ts->queue) {
        ts->redis = rg_stream_redis(ts->queue);

    } else {
        ts->redis = rg_store_redis_new(h->engine, 1, 0);
        ts->own_redis = ts->redis != NULL;
    }

    return RG_OK;
}


void
rg_http_tasks_exit(rg_http_t *h)
{
    rg_http_task_t   *t;
    rg_http_tasks_t  *ts;

    ts = h->tasks;
    if (ts == NULL) {
        return;
    }

    /* sessions first: their handlers would start the waiting ones */
    while (ts->waiting.next != &ts->waiting) {
        t = ts->waiting.next;
        rg_http_unlink(t);
        if (t->done) {
            t->done(t, NULL, NULL);
        }
        rg_http_task_free(t);
    }
    ts->nwaiting = 0;

    while (ts->running.next != &ts->running) {
        t = ts->running.next;
        rg_http_unlink(t);
        if (t->session) {
            rg_session_destroy(t->session);   /* its handler is not called */
            t->session = NULL;
        }
        if (t->done) {
            t->done(t, NULL, NULL);
        }
        rg_http_task_free(t);
    }
    ts->nrunning = 0;

    if (ts->queue) {
        rg_stream_destroy(ts->queue);
    }
    if (ts->own_redis) {
        rg_redis_destroy(ts->redis);
    }

    free(ts);
    h->tasks = NULL;
}
