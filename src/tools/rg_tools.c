/* rg_tools.c: runs the tool calls of one turn and implements the host
 * table modules call back into. A call that ends late (after a timeout or
 * after its session went away) finds itself orphaned and frees itself: a
 * module's late answer never touches freed memory. Errors reach the model
 * as one short line that says what to do next. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_tools.h>
#include <jansson.h>


static struct event_base  *rg_tools_base;
static rg_log_t           *rg_tools_log;


struct rg_tool_timer_s {
    struct event        ev;
    rg_tool_timer_pt    cb;
    void               *data;
};


static void rg_tools_finish(rg_tool_run_t *run);


rg_int_t
rg_tools_init(struct event_base *base, rg_log_t *log)
{
    rg_tools_base = base;
    rg_tools_log = log;

    return RG_OK;
}


static void
rg_tools_run_free(rg_tool_run_t *run)
{
    if (run->timer_set) {
        event_del(&run->timer);
    }

    if (run->args) {
        json_decref(run->args);
    }

    free(run->result);
    free(run);
}


static void
rg_tools_set_result(rg_tool_run_t *run, int failed, const char *s,
    size_t len)
{
    free(run->result);

    run->result = rg_strdup_len(s, len);
    run->result_len = run->result ? len : 0;
    run->failed = failed;
}


static void
rg_tools_set_error(rg_tool_run_t *run, const char *fmt, ...)
{
    int      n;
    char     buf[1024];
    va_list  args;

    va_start(args, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);

    if (n < 0) {
        n = 0;
    }

    rg_tools_set_result(run, 1, buf, rg_min((size_t) n, sizeof(buf) - 1));
}


/* host table ---------------------------------------------------------- */

static void
rg_tools_host_log(rg_tool_host_t *host, int level, const char *fmt, ...)
{
    char          buf[RG_LOG_MAX_LINE];
    va_list       args;
    rg_module_t  *m;

    m = host->data;

    if (level < RG_LOG_EMERG || level > RG_LOG_DEBUG) {
        level = RG_LOG_NOTICE;
    }

    va_start(args, fmt);
    vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);

    rg_log_error(level, rg_tools_log, 0, "module \"%s\": %s", m->mod->name,
                 buf);
}


static void
rg_tools_host_done(rg_tool_call_t *call, const char *result, size_t len)
{
    rg_tool_run_t  *run;

    run = (rg_tool_run_t *) call;

    if (run->turn == NULL) {
        rg_tools_run_free(run);        /* orphaned: nobody waits */
        return;
    }

    if (run->answered || run->finished) {
        run->answered = 1;             /* twice, or too late: dropped */
        return;
    }

    run->answered = 1;
    rg_tools_set_result(run, 0, result ? result : "", result ? len : 0);
    rg_tools_finish(run);
}


static void
rg_tools_host_fail(rg_tool_call_t *call, const char *fmt, ...)
{
    int             n;
    char            buf[1024];
    va_list         args;
    rg_tool_run_t  *run;

    run = (rg_tool_run_t *) call;

    if (run->turn == NULL) {
        rg_tools_run_free(run);
        return;
    }

    if (run->answered || run->finished) {
        run->answered = 1;
        return;
    }

    run->answered = 1;

    va_start(args, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);

    rg_tools_set_error(run, "error: %s failed: %.*s", run->name,
                       n < 0 ? 0 : (int) rg_min((size_t) n, sizeof(buf) - 1),
                       buf);
    rg_tools_finish(run);
}


static json_t *
rg_tools_arg(rg_tool_call_t *call, const char *key)
{
    rg_tool_run_t  *run;

    run = (rg_tool_run_t *) call;

    return run->args ? json_object_get(run->args, key) : NULL;
}


static int
rg_tools_host_arg_string(rg_tool_call_t *call, const char *key,
    const char **s, size_t *len)
{
    json_t  *v;

    v = rg_tools_arg(call, key);
    if (!json_is_string(v)) {
        return -1;
    }

    *s = json_string_value(v);
    if (len) {
        *len = json_string_length(v);
    }

    return 0;
}


static int
rg_tools_host_arg_number(rg_tool_call_t *call, const char *key, double *n)
{
    json_t  *v;

    v = rg_tools_arg(call, key);
    if (!json_is_number(v)) {
        return -1;
    }

    *n = json_number_value(v);

    return 0;
}


static int
rg_tools_host_arg_int(rg_tool_call_t *call, const char *key, long long *n)
{
    json_t  *v;
    double   d;

    v = rg_tools_arg(call, key);

    if (json_is_integer(v)) {
        *n = json_integer_value(v);
        return 0;
    }

    if (json_is_real(v)) {
        d = json_real_value(v);
        if (d == (double) (long long) d) {
            *n = (long long) d;
            return 0;
        }
    }

    return -1;
}


static int
rg_tools_host_arg_bool(rg_tool_call_t *call, const char *key, int *b)
{
    json_t  *v;

    v = rg_tools_arg(call, key);
    if (!json_is_boolean(v)) {
        return -1;
    }

    *b = json_is_true(v);

    return 0;
}


static void
rg_tools_timer_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_tool_timer_t  *t;
    rg_tool_timer_pt  cb;
    void             *data;

    t = arg;
    cb = t->cb;
    data = t->data;
    free(t);

    cb(data);
}


static rg_tool_timer_t *
rg_tools_host_timer_add(rg_tool_host_t *host, uint64_t msec,
    rg_tool_timer_pt cb, void *data)
{
    struct timeval    tv;
    rg_tool_timer_t  *t;

    t = calloc(1, sizeof(rg_tool_timer_t));
    if (t == NULL) {
        return NULL;
    }

    t->cb = cb;
    t->data = data;

    tv.tv_sec = msec / 1000;
    tv.tv_usec = (msec % 1000) * 1000;

    if (evtimer_assign(&t->ev, rg_tools_base, rg_tools_timer_handler, t) != 0
        || evtimer_add(&t->ev, &tv) != 0)
    {
        free(t);
        return NULL;
    }

    return t;
}


static void
rg_tools_host_timer_del(rg_tool_timer_t *t)
{
    if (t) {
        event_del(&t->ev);
        free(t);
    }
}


void
rg_tools_host_init(rg_tool_host_t *host, rg_module_t *m)
{
    memset(host, 0, sizeof(rg_tool_host_t));

    host->abi_version = RG_TOOL_ABI_VERSION;
    host->size = sizeof(rg_tool_host_t);
    host->log = rg_tools_host_log;
    host->done = rg_tools_host_done;
    host->fail = rg_tools_host_fail;
    host->arg_string = rg_tools_host_arg_string;
    host->arg_number = rg_tools_host_arg_number;
    host->arg_int = rg_tools_host_arg_int;
    host->arg_bool = rg_tools_host_arg_bool;
    host->timer_add = rg_tools_host_timer_add;
    host->timer_del = rg_tools_host_timer_del;
    host->data = m;
}


/* turns --------------------------------------------------------------- */

static void
rg_tools_turn_done_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_tool_turn_t  *turn;

    turn = arg;
    turn->done_posted = 0;
    turn->done(turn);
}


static void
rg_tools_finish(rg_tool_run_t *run)
{
    rg_tool_turn_t  *turn;

    turn = run->turn;

    run->finished = 1;
    run->ms = rg_monotonic_msec() - run->started;

    if (run->timer_set) {
        event_del(&run->timer);
        run->timer_set = 0;
    }

    if (run->failed) {
        turn->failures++;
    }

    if (--turn->pending == 0 && !turn->done_posted) {
        /* never complete a turn inside a handler's own call stack */
        turn->done_posted = 1;
        event_active(&turn->done_ev, EV_TIMEOUT, 1);
    }
}


static void
rg_tools_timeout_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_tool_run_t      *run;
    const rg_tool_t    *t;

    run = arg;
    run->timer_set = 0;
    t = run->entry->tool;

    rg_log_error(RG_LOG_WARN, run->turn->log, 0,
                 "tool \"%s\" timed out after %llums", t->name,
                 (unsigned long long) run->timeout);

    run->timed_out = 1;
    rg_tools_set_error(run, "error: %s timed out after %.3gs; try a smaller "
                       "request or another approach", t->name,
                       (double) run->timeout / 1000);
    rg_tools_finish(run);

    if (t->cancel) {
        t->cancel(&run->call);
        run->cancelled = 1;
    }
}


rg_tool_turn_t *
rg_tools_turn_create(rg_agent_conf_t *agent, const char *session,
    rg_tool_request_t *reqs, rg_uint_t n, rg_tool_turn_done_pt done,
    void *data, rg_log_t *log)
{
    rg_uint_t         i, j;
    json_t           *args;
    json_error_t      err;
    rg_tool_run_t    *run;
    rg_tool_turn_t   *turn;
    rg_tool_entry_t  *te;
    const char       *text;
    size_t            len;

    turn = calloc(1, sizeof(rg_tool_turn_t) + n * sizeof(rg_tool_run_t *));
    if (turn == NULL) {
        return NULL;
    }

    turn->runs = (rg_tool_run_t **) (turn + 1);
    turn->done = done;
    turn->data = data;
    turn->log = log;

    event_assign(&turn->done_ev, rg_tools_base, -1, 0,
                 rg_tools_turn_done_handler, turn);

    for (i = 0; i < n; i++) {
        run = calloc(1, sizeof(rg_tool_run_t));
        if (run == NULL) {
            rg_tools_turn_destroy(turn);
            return NULL;
        }

        turn->runs[i] = run;
        turn->n++;

        run->turn = turn;
        run->name = reqs[i].name.len ? reqs[i].name.data : "(no name)";
        run->call.id = reqs[i].id.data;
        run->call.session = session;

        /* which tool? only those of the agent's allow-list */
        te = NULL;
        for (j = 0; j < agent->ntools; j++) {
            if (strlen(agent->tools[j]->tool->name) == reqs[i].name.len
                && memcmp(agent->tools[j]->tool->name, reqs[i].name.data,
                          reqs[i].name.len) == 0)
            {
                te = agent->tools[j];
                break;
            }
        }

        if (reqs[i].name.len == 0) {
            rg_tools_set_error(run, "error: the tool call has no function "
                               "name; call one of: %s", agent->tool_list);
            continue;
        }

        if (te == NULL) {
            rg_tools_set_error(run, "error: unknown tool \"%.*s\"; the tools "
                               "you can call are: %s",
                               (int) rg_min(reqs[i].name.len, 64),
                               reqs[i].name.data,
                               agent->ntools ? agent->tool_list : "none");
            continue;
        }

        text = reqs[i].arguments.data;
        len = reqs[i].arguments.len;

        /* the empty string some providers send means no arguments */
        if (len == 0) {
            text = "{}";
            len = 2;
        }

        args = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);

        if (args == NULL) {
            rg_tools_set_error(run, "error: arguments for %s are not valid "
                               "JSON: %s (at position %d); send one JSON "
                               "object", te->tool->name, err.text,
                               err.position);
            continue;
        }

        if (!json_is_object(args)) {
            json_decref(args);
            rg_tools_set_error(run, "error: arguments for %s must be a JSON "
                               "object, not a %s; send one JSON object",
                               te->tool->name,
                               json_is_array(args) ? "array" : "scalar");
            continue;
        }

        run->entry = te;
        run->args = args;
        run->call.tool = te->tool;
        run->call.host = &te->module->host;
        run->call.conf = te->module->conf;
        run->call.args = text;
        run->call.args_len = len;
        run->timeout = te->tool->timeout_ms ? te->tool->timeout_ms
                                            : agent->tool_timeout;
    }

    return turn;
}


void
rg_tools_turn_start(rg_tool_turn_t *turn)
{
    int              rc;
    rg_uint_t        i;
    rg_msec_t        now;
    struct timeval   tv;
    rg_tool_run_t   *run;

    now = rg_monotonic_msec();

    /* count first: a call may answer before the next one starts */
    turn->pending = turn->n;

    for (i = 0; i < turn->n; i++) {
        run = turn->runs[i];
        run->started = now;

        if (run->entry == NULL) {
            rg_tools_finish(run);
            continue;
        }

        if (run->timeout) {
            tv.tv_sec = run->timeout / 1000;
            tv.tv_usec = (run->timeout % 1000) * 1000;
            evtimer_assign(&run->timer, rg_tools_base,
                           rg_tools_timeout_handler, run);
            evtimer_add(&run->timer, &tv);
            run->timer_set = 1;
        }

        rc = run->entry->tool->start(&run->call);

        if (run->answered || run->finished) {
            continue;
        }

        if (rc == RG_TOOL_AGAIN) {
            continue;
        }

        run->answered = 1;      /* it will not answer now */

        if (rc == RG_TOOL_OK) {
            rg_tools_set_error(run, "error: %s returned without an answer",
                               run->name);
        } else {
            rg_tools_set_error(run, "error: %s failed without saying why",
                               run->name);
        }

        rg_tools_finish(run);
    }

    if (turn->n == 0 && !turn->done_posted) {
        turn->done_posted = 1;
        event_active(&turn->done_ev, EV_TIMEOUT, 1);
    }
}


void
rg_tools_turn_destroy(rg_tool_turn_t *turn)
{
    rg_uint_t       i;
    rg_tool_run_t  *run;

    if (turn == NULL) {
        return;
    }

    if (turn->done_posted) {
        event_del(&turn->done_ev);
    }

    for (i = 0; i < turn->n; i++) {
        run = turn->runs[i];

        if (run->entry == NULL || run->answered || run->cancelled) {
            rg_tools_run_free(run);
            continue;
        }

        /* still running: cancel it, or let its late answer free it */
        if (run->timer_set) {
            event_del(&run->timer);
            run->timer_set = 0;
        }

        if (run->entry->tool->cancel) {
            run->entry->tool->cancel(&run->call);
            rg_tools_run_free(run);
            continue;
        }

        run->turn = NULL;
    }

    free(turn);
}
