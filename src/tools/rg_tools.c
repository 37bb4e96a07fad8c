/* rg_tools.c: runs the tool calls of one turn and implements the host
 * table modules call back into; builds the tools part's runtime in each
 * engine (rg_tools_ctx_t). All calls of a turn start together:
 * asynchronous handlers on the reactor, RG_TOOL_BLOCKING ones in the
 * thread pool. A call that ends late (after its timeout, or after its
 * session went away) finds itself orphaned and frees itself, so a module's
 * late answer never touches freed memory. Errors reach the model as one
 * short line that says what to do next.
 *
 * This file owns a turn and its calls, and the part's runtime in an
 * engine; the host table is rg_tools_host.c's, the approval of dangerous
 * calls rg_tools_approval.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json_write.h>
#include <rg_tools.h>
#include <rg_tools_int.h>
#include <rg_metrics.h>
#include <rg_tool_args.h>
#include <rg_secret.h>
#include <rg_event.h>


_Thread_local rg_tool_run_t  *rg_tools_thread_run;


void
rg_tools_set_approval(rg_tools_ctx_t *ctx, rg_approval_e policy)
{
    ctx->approval = policy;
}


void
rg_tools_set_agent_runner(rg_tools_ctx_t *ctx, rg_tools_agent_start_pt start,
    rg_tools_agent_stop_pt stop)
{
    ctx->agent_start = start;
    ctx->agent_stop = stop;
}


void
rg_tools_http_free(rg_tool_http_t *h)
{
    if (h->xfer.active) {
        rg_curl_remove(h->ctx->curl, &h->xfer);
    }

    if (h->xfer.easy) {
        curl_easy_cleanup(h->xfer.easy);
    }

    rg_buf_free(&h->body);
    free(h);
}


/* one buffer for what a run owns of its call: id NUL session NUL name
 * NUL and its idempotency key, "session:key" NUL (the key: the
 * request's, or its id) */
static char *
rg_tools_own3(const char *id, size_t idlen, const char *session,
    const char *name, size_t namelen, const char *key, size_t keylen)
{
    char    *p, *k;
    size_t   slen;

    slen = strlen(session);

    p = malloc(idlen + 1 + slen + 1 + namelen + 1 + slen + 1 + keylen + 1);
    if (p == NULL) {
        return NULL;
    }

    memcpy(p, id, idlen);
    p[idlen] = '\0';
    memcpy(p + idlen + 1, session, slen + 1);
    memcpy(p + idlen + 1 + slen + 1, name, namelen);
    p[idlen + 1 + slen + 1 + namelen] = '\0';

    k = p + idlen + 1 + slen + 1 + namelen + 1;
    memcpy(k, session, slen);
    k[slen] = ':';
    memcpy(k + slen + 1, key, keylen);
    k[slen + 1 + keylen] = '\0';

    return p;
}


void
rg_tools_run_free(rg_tool_run_t *run)
{
    if (run->timer_set) {
        event_del(&run->timer);
    }

    if (run->awaiting) {
        rg_tools_prompt_remove(run);
    }

    if (run->http) {
        rg_tools_http_free(run->http);
    }

    if (run->child && run->ctx->agent_stop) {
        run->ctx->agent_stop(run);
    }

    if (run->args) {
        json_decref(run->args);
    }

    free(run->args_text);
    free(run->own);
    free(run->pool.result);
    free(run->result);
    free(run);
}


void
rg_tools_set_result(rg_tool_run_t *run, int failed, const char *s,
    size_t len)
{
    free(run->result);

    run->result = rg_strdup_len(s, len);
    run->result_len = 0;
    run->failed = failed;

    /* a secret a tool came across never reaches the model */
    if (run->result) {
        run->result_len = rg_secret_scrub(run->result, len);
        run->result[run->result_len] = '\0';
    }
}


void
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


/* turns --------------------------------------------------------------- */


static void
rg_tools_turn_done_handler(evutil_socket_t fd, short what, void *arg)
{
    rg_tool_turn_t  *turn;

    turn = arg;
    turn->done_posted = 0;
    turn->done(turn);
}


void
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

    /* a tool of the agent's: not a preset answer, not a name the model
     * made up (which would fill the metrics' table) */
    if (run->entry) {
        rg_metrics_tool_call(run->entry->tool->name,
                             run->timed_out ? RG_METRICS_TOOL_TIMEOUT
                             : run->denied ? RG_METRICS_TOOL_DENIED
                             : run->failed ? RG_METRICS_TOOL_ERROR
                             : RG_METRICS_TOOL_OK,
                             rg_monotonic_usec() - run->started_us);
    }

    /* the session may record it (a side effect's result) at once */
    if (turn->call_done) {
        turn->call_done(turn, run);
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

    if (run->turn == NULL) {
        return;                        /* orphaned: its timer is deleted */
    }

    rg_log_error(RG_LOG_WARN, run->turn->log, 0,
                 "tool \"%s\" timed out after %llums", t->name,
                 (unsigned long long) run->timeout);

    run->timed_out = 1;
    rg_tools_set_error(run, "error: %s timed out after %.3gs; try a smaller "
                       "request or another approach", t->name,
                       (double) run->timeout / 1000);
    rg_tools_finish(run);

    if (run->isolated) {
        rg_isolate_abort(run->ctx->mods[run->entry->module->index].isolate,
                         &run->helper);
        run->isolated = 0;
        run->cancelled = 1;
        return;
    }

    /* a pool thread cannot be stopped: its answer is dropped when it
     * comes; an asynchronous call is told to stop */
    if (!run->in_pool && t->cancel) {
        t->cancel(&run->call);
        run->cancelled = 1;
    }

    if (run->http) {
        rg_tools_http_free(run->http);
        run->http = NULL;
    }
}


/* in a pool thread: it reads what the reactor wrote before posting
 * (the arguments, the module's tables) and writes only run->pool */
static void
rg_tools_pool_handler(rg_thread_task_t *task)
{
    int             rc;
    rg_module_t    *m;
    rg_tool_run_t  *run;

    run = task->data;
    m = run->entry->module;

    rg_tools_thread_run = run;
    rc = run->call.tool->start(&run->call);
    rg_tools_thread_run = NULL;

    run->pool.ran = 1;

    if (run->pool.result == NULL) {
        run->pool.result = strdup(rc == RG_TOOL_ERROR
                                  ? "failed without saying why"
                                  : "returned without an answer");
        run->pool.len = run->pool.result ? strlen(run->pool.result) : 0;
        run->pool.failed = 2;
    }

    /* the last touch of the module and its cycle: they may go now */
    atomic_fetch_sub_explicit(&m->cycle->busy, 1, memory_order_release);
}


static void
rg_tools_pool_done(rg_thread_task_t *task)
{
    rg_tool_run_t  *run;

    run = task->data;
    run->in_pool = 0;

    if (!run->pool.ran) {
        /* handed back unrun (the pool is going) */
        atomic_fetch_sub_explicit(&run->entry->module->cycle->busy, 1,
                                  memory_order_release);
    }

    if (run->turn == NULL) {
        rg_tools_run_free(run);        /* its session is gone */
        return;
    }

    run->answered = 1;

    if (run->finished) {
        return;                        /* timed out: the answer is late */
    }

    if (run->pool.result == NULL) {
        rg_tools_set_error(run, "error: %s did not run (shutting down)",
                           run->name);

    } else if (run->pool.failed == 2) {
        rg_tools_set_error(run, "error: %s %s", run->name, run->pool.result);

    } else {
        rg_tools_set_result(run, run->pool.failed, run->pool.result,
                            run->pool.len);
    }

    rg_tools_finish(run);
}


/* calls --------------------------------------------------------------- */


void
rg_tools_launch(rg_tool_run_t *run)
{
    int            rc;
    rg_isolate_t  *isolate;

    run->started = rg_monotonic_msec();
    run->started_us = rg_monotonic_usec();
    run->launched = 1;

    /* what its requests carry, fixed before anything may read it */
    rg_trace_span_header(&run->span, run->traceparent);
    if (run->turn->call_start) {
        run->turn->call_start(run->turn, run);
    }

    if (run->timeout) {
        evtimer_assign(&run->timer, run->ctx->base, rg_tools_timeout_handler,
                       run);
        rg_timer_add(&run->timer, run->timeout);
        run->timer_set = 1;
    }

    isolate = run->ctx->mods[run->entry->module->index].isolate;

    if (isolate) {
        run->isolated = 1;
        run->helper.tool = run->entry->tool->name;
        run->helper.id = run->call.id;
        run->helper.session = run->call.session;
        run->helper.args = run->call.args;
        run->helper.args_len = run->call.args_len;
        run->helper.done = rg_tools_isolated_done;
        rg_isolate_call(isolate, &run->helper);
        return;
    }

    if ((run->entry->tool->flags & RG_TOOL_BLOCKING) && run->ctx->pool) {
        /* a thread's call may outlive the engine: it gets the host table
         * of its module's configuration, which the cycle keeps while the
         * call runs; what a thread may call there (done, fail, log, the
         * argument readers) needs no engine */
        run->call.host = &run->entry->module->host;
        run->in_pool = 1;
        run->pool.task.handler = rg_tools_pool_handler;
        run->pool.task.done = rg_tools_pool_done;
        run->pool.task.data = run;
        atomic_fetch_add_explicit(&run->entry->module->cycle->busy, 1,
                                  memory_order_relaxed);
        rg_thread_pool_post(run->ctx->pool, &run->pool.task);
        return;
    }

    rc = run->entry->tool->start(&run->call);

    if (run->answered || run->finished || rc == RG_TOOL_AGAIN) {
        return;
    }

    run->answered = 1;          /* it will not answer now */

    if (rc == RG_TOOL_OK) {
        rg_tools_set_error(run, "error: %s returned without an answer",
                           run->name);
    } else {
        rg_tools_set_error(run, "error: %s failed without saying why",
                           run->name);
    }

    rg_tools_finish(run);
}


json_t *
rg_tools_args(rg_tool_entry_t *te, const char *text, size_t len, char *err,
    size_t errlen)
{
    int         n;
    json_t     *args;
    rg_uint_t   repaired;

    /* "error: " and what is wrong */
    n = errlen > 7 ? 7 : 0;
    memcpy(err, "error: ", n);
    err[n] = '\0';

    args = rg_tool_args_parse(te->tool->name, text, len, &repaired, err + n,
                              errlen - n);
    if (args == NULL) {
        return NULL;
    }

    if (te->schema
        && rg_tool_args_validate(te->tool->name, args, te->schema, err + n,
                                 errlen - n) != RG_OK)
    {
        json_decref(args);
        return NULL;
    }

    if (repaired) {
        char  names[64];

        rg_tool_args_repairs(repaired, names, sizeof(names));
        rg_log_debug(te->module->log, "arguments for \"%s\" repaired: %s",
                     te->tool->name, names);
    }

    return args;
}


rg_tool_turn_t *
rg_tools_turn_create(rg_tools_ctx_t *ctx, const rg_toolset_t *ts,
    const char *session, rg_tool_request_t *reqs, rg_uint_t n,
    rg_tool_turn_done_pt done, void *data, rg_log_t *log)
{
    rg_int_t          j;
    rg_uint_t         i;
    json_t           *args;
    rg_tool_run_t    *run;
    rg_tool_turn_t   *turn;
    rg_tool_entry_t  *te;
    const char       *text;
    const rg_str_t   *key;
    size_t            len;
    char              errbuf[768];

    turn = calloc(1, sizeof(rg_tool_turn_t) + n * sizeof(rg_tool_run_t *));
    if (turn == NULL) {
        return NULL;
    }

    turn->runs = (rg_tool_run_t **) (turn + 1);
    turn->ctx = ctx;
    turn->done = done;
    turn->data = data;
    turn->log = log;
    turn->toolset = ts;

    event_assign(&turn->done_ev, ctx->base, -1, 0,
                 rg_tools_turn_done_handler, turn);

    for (i = 0; i < n; i++) {
        run = calloc(1, sizeof(rg_tool_run_t));
        if (run == NULL) {
            rg_tools_turn_destroy(turn);
            return NULL;
        }

        turn->runs[i] = run;
        turn->n++;

        run->ctx = ctx;
        run->turn = turn;
        run->index = i;
        run->approved = reqs[i].approved;
        run->name = reqs[i].name.len ? reqs[i].name.data : "(no name)";

        /* the run owns what the module reads: a call still queued in the
         * pool may outlive its session */
        key = reqs[i].key.len ? &reqs[i].key : &reqs[i].id;
        run->own = rg_tools_own3(reqs[i].id.data ? reqs[i].id.data : "",
                                 reqs[i].id.len, session,
                                 reqs[i].name.data ? reqs[i].name.data : "",
                                 reqs[i].name.len,
                                 key->data ? key->data : "", key->len);
        if (run->own == NULL) {
            rg_tools_turn_destroy(turn);
            return NULL;
        }

        run->call.id = run->own;
        run->call.session = run->own + reqs[i].id.len + 1;
        run->idem = run->call.session + strlen(session) + 1
                    + reqs[i].name.len + 1;
        run->name = run->name[0] == '(' ? run->name
                    : run->call.session + strlen(session) + 1;

        /* which tool? only those of the agent's allow-list */
        j = rg_toolset_find(ts, reqs[i].name.data, reqs[i].name.len);
        te = j >= 0 ? ts->tools[j] : NULL;

        if (reqs[i].has_preset) {
            rg_tools_set_result(run, reqs[i].preset_failed,
                                reqs[i].preset.data, reqs[i].preset.len);
            continue;
        }

        if (reqs[i].name.len == 0) {
            rg_tools_set_error(run, "error: the tool call has no function "
                               "name; call one of: %s", ts->tool_list);
            continue;
        }

        if (te == NULL) {
            rg_tools_set_error(run, "error: unknown tool \"%.*s\"; the tools "
                               "you can call are: %s",
                               (int) rg_min(reqs[i].name.len, 64),
                               reqs[i].name.data,
                               ts->ntools ? ts->tool_list : "none");
            continue;
        }

        if (reqs[i].args) {
            /* checked by the caller already; the text is copied, as the
             * caller's memory may go before a queued call runs */
            args = reqs[i].args;
            reqs[i].args = NULL;

            if (reqs[i].args_text.data) {
                len = reqs[i].args_text.len;
                run->args_text = rg_strdup_len(reqs[i].args_text.data, len);

            } else {
                /* not made canonical: no guard compared them */
                len = 0;
                run->args_text = rg_json_dumps(args, 0, &len);
            }

            text = run->args_text;

            if (text == NULL) {
                json_decref(args);
                rg_tools_set_error(run, "error: out of memory");
                continue;
            }

        } else {
            args = rg_tools_args(te, reqs[i].arguments.data,
                                 reqs[i].arguments.len, errbuf,
                                 sizeof(errbuf));
            if (args == NULL) {
                rg_tools_set_result(run, 1, errbuf, strlen(errbuf));
                continue;
            }

            /* the module sees the arguments as checked and coerced */
            text = rg_json_dumps(args, 0, NULL);
            if (text == NULL) {
                json_decref(args);
                rg_tools_set_error(run, "error: out of memory");
                continue;
            }

            len = strlen(text);
            run->args_text = (char *) text;
        }

        run->entry = te;
        run->args = args;
        run->call.host_args = args;
        run->call.tool = te->tool;
        run->call.host = &ctx->mods[te->module->index].host;
        run->call.conf = te->module->conf;
        run->call.args = text;
        run->call.args_len = len;
        run->timeout = ts->timeouts && ts->timeouts[j]
                       ? ts->timeouts[j]
                       : te->tool->timeout_ms ? te->tool->timeout_ms
                                              : ts->timeout;
    }

    return turn;
}


void
rg_tools_turn_start(rg_tool_turn_t *turn)
{
    rg_uint_t        i;
    rg_tool_run_t   *run;

    /* count first: a call may answer before the next one starts */
    turn->pending = turn->n;
    turn->started = rg_monotonic_msec();

    for (i = 0; i < turn->n; i++) {
        run = turn->runs[i];
        run->started = rg_monotonic_msec();
        run->started_us = rg_monotonic_usec();

        if (run->entry == NULL) {
            rg_tools_finish(run);
            continue;
        }

        if ((run->entry->tool->flags & RG_TOOL_DANGEROUS)
            && rg_tools_gate(run) != RG_OK)
        {
            continue;
        }

        rg_tools_launch(run);
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

        if (run->awaiting) {
            rg_tools_prompt_remove(run);
            if (turn->ctx->prompt_head == NULL) {
                rg_tools_prompt_next(turn->ctx);
            }
        }

        if (run->in_pool) {
            /* the pool's done frees it; its timer must not fire first */
            if (run->timer_set) {
                event_del(&run->timer);
                run->timer_set = 0;
            }
            run->turn = NULL;
            continue;
        }

        if (run->isolated && !run->finished) {
            rg_isolate_abort(run->ctx->mods[run->entry->module->index]
                             .isolate, &run->helper);
            rg_tools_run_free(run);
            continue;
        }

        if (run->entry == NULL || run->answered || run->cancelled
            || run->denied || !run->launched)
        {
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


/* the part in an engine ------------------------------------------------ */


rg_tools_ctx_t *
rg_tools_ctx_create(struct event_base *base, rg_curl_t *curl, rg_log_t *log,
    rg_uint_t nmods)
{
    rg_tools_ctx_t  *ctx;

    ctx = calloc(1, sizeof(rg_tools_ctx_t)
                    + nmods * sizeof(rg_tools_module_t)
                    + nmods * sizeof(rg_tool_list_t *));
    if (ctx == NULL) {
        return NULL;
    }

    ctx->base = base;
    ctx->curl = curl;
    ctx->log = log;
    ctx->mods = (rg_tools_module_t *) (ctx + 1);
    ctx->provided = (rg_tool_list_t **) (ctx->mods + nmods);
    ctx->nmods = nmods;
    ctx->prompt_tail = &ctx->prompt_head;

    rg_tool_host_io_start(&ctx->io, base, log);

    return ctx;
}


rg_int_t
rg_tools_ctx_bind(rg_tools_ctx_t *ctx, rg_module_t *m, rg_uint_t helpers)
{
    rg_tools_module_t  *tm;

    tm = &ctx->mods[m->index];

    rg_tools_host_init(&tm->host, &tm->bind, m, ctx);

    if (!m->isolated) {
        return RG_OK;
    }

    tm->isolate = rg_isolate_create(m, ctx->base, helpers, ctx->log);
    if (tm->isolate == NULL) {
        rg_log_error(RG_LOG_EMERG, ctx->log, 0, "cannot start helper "
                     "processes for module \"%s\"", m->mod->name);
        return RG_ERROR;
    }

    return RG_OK;
}


void
rg_tools_ctx_destroy(rg_tools_ctx_t *ctx)
{
    rg_uint_t  i;

    if (ctx == NULL) {
        return;
    }

    for (i = 0; i < ctx->nmods; i++) {
        rg_isolate_destroy(ctx->mods[i].isolate);
        ctx->mods[i].isolate = NULL;
        rg_tool_list_unref(ctx->provided[i]);
        ctx->provided[i] = NULL;
    }

    /* finished pool work may still free orphaned calls */
    rg_thread_pool_destroy(ctx->pool);
    ctx->pool = NULL;

    rg_tools_http_reset(ctx);
    rg_tool_host_io_stop(&ctx->io);

    if (ctx->prompt_ev) {
        event_free(ctx->prompt_ev);
    }

    rg_buf_free(&ctx->prompt_line);
    free(ctx);
}


/* providers ------------------------------------------------------------ */


void
rg_tools_provide(rg_tools_ctx_t *ctx, rg_module_t *m, rg_tool_list_t *list)
{
    rg_tool_list_t  *old;

    old = ctx->provided[m->index];

    if (old == list) {
        return;
    }

    rg_tool_list_ref(list);
    ctx->provided[m->index] = list;
    ctx->generation++;

    rg_tool_list_unref(old);
}


rg_tool_list_t *
rg_tools_provided(rg_tools_ctx_t *ctx, rg_module_t *m)
{
    return m->index < ctx->nmods ? ctx->provided[m->index] : NULL;
}


rg_tool_entry_t *
rg_tool_list_find(rg_tool_list_t *list, const char *name, size_t len)
{
    rg_uint_t  i;

    for (i = 0; list && i < list->n; i++) {
        if (rg_tool_entry_is(&list->tools[i], name, len)) {
            return &list->tools[i];
        }
    }

    return NULL;
}


void
rg_tool_list_ref(rg_tool_list_t *list)
{
    if (list) {
        list->refs++;
    }
}


void
rg_tool_list_unref(rg_tool_list_t *list)
{
    if (list && --list->refs == 0 && list->free) {
        list->free(list);
    }
}


rg_int_t
rg_tools_init_worker(rg_engine_t *e)
{
    rg_uint_t         i;
    rg_module_t     **mods;
    rg_tools_ctx_t   *ctx;
    rg_tools_conf_t  *tcf;

    tcf = rg_tools_conf(e->cycle);

    ctx = rg_tools_ctx_create(e->base, rg_event_ctx(e), e->log,
                              tcf->modules.nelts);
    if (ctx == NULL) {
        return RG_ERROR;
    }

    rg_engine_ctx(e, &rg_tools_part) = ctx;

    /* before any thread: isolated helpers start from a zygote forked
     * here, which must hold no lock a thread took */
    mods = tcf->modules.elts;

    for (i = 0; i < tcf->modules.nelts; i++) {
        if (rg_tools_ctx_bind(ctx, mods[i], (rg_uint_t) tcf->isolated_helpers)
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    ctx->pool = rg_thread_pool_create(e->base,
                                      (rg_uint_t) tcf->pool_threads,
                                      (rg_uint_t) tcf->pool_max_queue,
                                      e->log);
    if (ctx->pool == NULL) {
        rg_log_error(RG_LOG_EMERG, e->log, 0, "thread pool setup failed");
        return RG_ERROR;
    }

    return RG_OK;
}


void
rg_tools_exit_worker(rg_engine_t *e)
{
    rg_tools_ctx_destroy(rg_tools_ctx(e));
    rg_engine_ctx(e, &rg_tools_part) = NULL;
}
