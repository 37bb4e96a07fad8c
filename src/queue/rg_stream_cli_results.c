/* rg_stream_cli_results.c: results as the queue's commands
 * (rg_stream_cli.c) print them: `reagent results [--follow]`, and the
 * results `submit --wait` follows: printed as JSONL, counted by status for
 * the summary, under a progress bar on a terminal. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_stream_cli_int.h>


/* the statuses of the results submit --wait saw, for its summary, and
 * their tokens and cost */
static json_t  *rg_stream_cli_statuses;
static int64_t  rg_stream_cli_tokens;
static double   rg_stream_cli_cost;


void
rg_stream_cli_count(const char *text, size_t len)
{
    json_t      *r, *n;
    const char  *status;

    if (rg_stream_cli_statuses == NULL) {
        rg_stream_cli_statuses = json_object();
    }

    r = json_loadb(text, len, 0, NULL);
    status = json_string_value(json_object_get(r, "status"));

    if (status && rg_stream_cli_statuses) {
        n = json_object_get(rg_stream_cli_statuses, status);
        json_object_set_new(rg_stream_cli_statuses, status,
                            json_integer(n ? json_integer_value(n) + 1 : 1));
    }

    rg_stream_cli_tokens += json_integer_value(json_object_get(r, "tokens"));
    rg_stream_cli_cost += json_number_value(json_object_get(r, "cost"));

    json_decref(r);
}


static rg_uint_t
rg_stream_cli_status_count(const char *status)
{
    json_t  *n;

    n = json_object_get(rg_stream_cli_statuses, status);

    return n ? (rg_uint_t) json_integer_value(n) : 0;
}


/* "298 done, 0 failed, 2 max_rounds": done and failed always, as batch
 * says them, then the other statuses in the order they came */
void
rg_stream_cli_summary(FILE *f)
{
    const char  *k;
    json_t      *v;

    fprintf(f, "%lu done, %lu failed",
            (unsigned long) rg_stream_cli_status_count("done"),
            (unsigned long) rg_stream_cli_status_count("failed"));

    json_object_foreach(rg_stream_cli_statuses, k, v) {
        if (strcmp(k, "done") != 0 && strcmp(k, "failed") != 0) {
            fprintf(f, ", %lld %s", (long long) json_integer_value(v), k);
        }
    }
}


/* what the tasks seen cost, where their llms have a price; then the
 * counts start again */
void
rg_stream_cli_totals(FILE *f)
{
    if (rg_stream_cli_cost > 0) {
        fprintf(f, "; tokens %lld, cost $%.4f",
                (long long) rg_stream_cli_tokens, rg_stream_cli_cost);
    }

    json_decref(rg_stream_cli_statuses);
    rg_stream_cli_statuses = NULL;
    rg_stream_cli_tokens = 0;
    rg_stream_cli_cost = 0;
}


/* the bar of submit --wait (NULL: not shown): redrawn as results come,
 * at most ten times a second, and by rg_stream_cli_tick while none does;
 * those not ended are "waiting": queued or running, submit cannot tell
 * which */
void
rg_stream_cli_progress(rg_progress_t *bar, rg_uint_t got, rg_uint_t total,
    rg_uint_t came, int final)
{
    if (bar == NULL) {
        return;
    }

    bar->done = got;
    bar->total = total;
    bar->failed = got - rg_min(got, rg_stream_cli_status_count("done"));
    bar->running = total - rg_min(got, total);
    bar->running_name = "waiting";
    bar->rated = got;

    if (final || (came && rg_progress_due(bar, 100))) {
        rg_progress_draw(bar, final, STDERR_FILENO);
    }
}


/* every 200 ms of the wait, whatever the loop waits for (a read blocked
 * in XREAD, a Redis away): the bar's time and rate move on */
void
rg_stream_cli_tick(evutil_socket_t fd, short what, void *arg)
{
    rg_progress_t  *bar;

    bar = arg;

    if (rg_progress_due(bar, 200)) {
        rg_progress_draw(bar, 0, STDERR_FILENO);
    }
}


/* a line said while the bar is shown replaces it; the bar is drawn
 * again under it at once */
void
rg_stream_cli_say_clear(rg_progress_t *bar)
{
    if (bar && bar->drawn_at) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        bar->drawn_at = 0;
    }
}


/* results for a terminal that shows the bar too: printed over it */
void
rg_stream_cli_out_clear(rg_progress_t *bar, FILE *out)
{
    if (bar && bar->drawn_at && isatty(fileno(out))) {
        rg_stream_cli_say_clear(bar);
    }
}


/* the entries of an XRANGE or XREAD page: id, result; the last id */
static rg_uint_t
rg_stream_cli_print(redisReply *list, FILE *out, json_t *want,
    rg_uint_t *got, char *last, size_t lastlen)
{
    size_t       i, j;
    rg_uint_t    n;
    redisReply  *x, *f, *id, *res;

    n = 0;

    for (i = 0; list && list->type == REDIS_REPLY_ARRAY && i < list->elements;
         i++)
    {
        x = list->element[i];
        if (x->type != REDIS_REPLY_ARRAY || x->elements < 2) {
            continue;
        }

        snprintf(last, lastlen, "%.*s", (int) x->element[0]->len,
                 x->element[0]->str);

        f = x->element[1];
        id = res = NULL;

        for (j = 0; f->type == REDIS_REPLY_ARRAY && j + 1 < f->elements;
             j += 2)
        {
            if (f->element[j]->len == 2
                && memcmp(f->element[j]->str, "id", 2) == 0)
            {
                id = f->element[j + 1];
            } else if (f->element[j]->len == 6
                       && memcmp(f->element[j]->str, "result", 6) == 0)
            {
                res = f->element[j + 1];
            }
        }

        if (id == NULL || res == NULL) {
            continue;
        }

        if (want) {
            char  key[600];

            snprintf(key, sizeof(key), "%.*s", (int) rg_min(id->len, 512),
                     id->str);
            if (json_object_get(want, key) != json_true()) {
                continue;              /* not one of ours, or seen */
            }
            json_object_set_new(want, key, json_false());
            (*got)++;
        }

        fprintf(out, "%.*s\n", (int) res->len, res->str);
        n++;

        if (want) {
            rg_stream_cli_count(res->str, res->len);
        }
    }

    fflush(out);

    return n;
}


/* follows the results stream from last until want is all seen (want
 * NULL: for ever, --follow), bar (or NULL) counting them, wt (or NULL)
 * looking for the tasks Redis lost */
int
rg_stream_follow(rg_stream_client_t *c, FILE *out, json_t *want,
    rg_uint_t *got, rg_uint_t total, char *last, size_t lastlen,
    rg_progress_t *bar, rg_stream_watch_t *wt)
{
    char         err[256], block[24];
    rg_uint_t    failing, n;
    redisReply  *r, *list;
    const char  *argv[8];

    failing = 0;
    snprintf(block, sizeof(block), "%llu",
             (unsigned long long) c->qcf->block);

    while (want == NULL || *got < total) {
        argv[0] = "XREAD";
        argv[1] = "COUNT";
        argv[2] = "1000";
        argv[3] = "BLOCK";
        argv[4] = block;
        argv[5] = "STREAMS";
        argv[6] = c->results;
        argv[7] = last;

        r = rg_stream_cli_call(c->engine, c->redis, c->results, err,
                               sizeof(err), 8, argv, NULL);
        if (r == NULL) {
            /* Redis away: the tasks go on; so does the wait, said once */
            if (!failing) {
                rg_stream_cli_say_clear(bar);
                fprintf(stderr, "reagent: the results cannot be read (%s): "
                        "waiting for Redis\n", err);
            }
            failing = 1;
            rg_stream_cli_pause(c->engine, 500);
            continue;
        }

        if (failing) {
            rg_stream_cli_say_clear(bar);
            fprintf(stderr, "reagent: reading the results again\n");
            failing = 0;
        }

        list = r->type == REDIS_REPLY_ARRAY && r->elements
               && r->element[0]->type == REDIS_REPLY_ARRAY
               && r->element[0]->elements == 2
               ? r->element[0]->element[1] : NULL;

        if (list && list->elements) {
            rg_stream_cli_out_clear(bar, out);
        }

        n = rg_stream_cli_print(list, out, want, got, last, lastlen);
        freeReplyObject(r);

        if (want) {
            rg_stream_cli_progress(bar, *got, total, n, 0);
        }

        /* Redis answers: has it lost some of the tasks */
        if (wt && *got < total && rg_monotonic_msec() >= wt->next) {
            rg_stream_watch_look(c, wt, want, bar);
            wt->next = rg_monotonic_msec() + RG_STREAM_CLI_LOOK;
        }
    }

    return 0;
}


int
rg_results_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    int                    rc;
    char                   err[256], last[64], start[72];
    FILE                  *out;
    rg_uint_t              n;
    redisReply            *r;
    rg_stream_client_t     c;
    rg_stream_cli_opts_t  *o;
    const char            *argv[6];

    o = opts;

    if (rg_stream_client_open(cycle, &c, "results") != RG_OK) {
        return 1;
    }

    out = o->output ? fopen(o->output, "a") : stdout;
    if (out == NULL) {
        fprintf(stderr, "reagent: cannot open \"%s\": %s\n", o->output,
                strerror(errno));
        rg_stream_client_close(&c);
        return 1;
    }

    rc = 0;
    snprintf(last, sizeof(last), "0-0");

    /* what the stream holds, in pages */
    for ( ;; ) {
        snprintf(start, sizeof(start), "(%s", last);
        argv[0] = "XRANGE";
        argv[1] = c.results;
        argv[2] = strcmp(last, "0-0") == 0 ? "-" : start;
        argv[3] = "+";
        argv[4] = "COUNT";
        argv[5] = "1000";

        r = rg_stream_cli_call(c.engine, c.redis, c.results, err,
                               sizeof(err), 6, argv, NULL);
        if (r == NULL) {
            fprintf(stderr, "reagent: reading the results: %s\n", err);
            rc = 1;
            break;
        }

        n = rg_stream_cli_print(r, out, NULL, NULL, last, sizeof(last));
        freeReplyObject(r);

        if (n < 1000) {
            break;
        }
    }

    if (rc == 0 && o->follow) {
        rc = rg_stream_follow(&c, out, NULL, NULL, 0, last, sizeof(last),
                              NULL, NULL);
    }

    if (out != stdout) {
        fclose(out);
    }

    rg_stream_client_close(&c);

    return rc;
}
