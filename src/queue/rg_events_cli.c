/* rg_events_cli.c: `reagent events TASK_ID [--follow] [--after ID]
 * [--session]`, the events a task's session recorded in the store (a
 * task submitted with "events": true), printed as JSONL {"id", "type",
 * "data"}; --follow asks again every so often until the "final" one.
 * The task's session is the one its id names (rg_stream_session_id);
 * --session takes a session id instead. A short-lived client of the
 * store, on a reactor of its own that runs nothing else. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_store.h>
#include <rg_store_conf.h>
#include <rg_stream.h>
#include <rg_events.h>
#include <jansson.h>


#define RG_EVENTS_CLI_PAGE   1000
#define RG_EVENTS_CLI_POLL   250         /* ms between reads, --follow */
#define RG_EVENTS_CLI_TRIES  5           /* reads that may fail in a row */


typedef struct {
    rg_uint_t           follow;       /* --follow */
    rg_uint_t           session;      /* --session: the argument is one */
    const char         *after;        /* --after ID */
} rg_events_cli_opts_t;


typedef struct {
    struct event_base  *base;
    rg_uint_t           done;
    rg_uint_t           n;
    rg_uint_t           final;        /* the "final" event came */
    rg_int_t            rc;
    char                last[64];     /* the last id printed */
    char                err[256];
} rg_events_cli_t;


static void
rg_events_cli_got(void *data, rg_int_t rc, const rg_store_entry_t *ev,
    rg_uint_t n, const char *err)
{
    char             *line;
    json_t           *o, *d;
    rg_uint_t         i;
    rg_events_cli_t  *c;

    c = data;
    c->done = 1;
    c->rc = rc;
    c->n = n;

    if (rc != RG_OK) {
        snprintf(c->err, sizeof(c->err), "%s", err ? err : "refused");
        event_base_loopbreak(c->base);
        return;
    }

    for (i = 0; i < n; i++) {
        d = json_loadb(ev[i].data.data, ev[i].data.len, 0, NULL);
        if (d == NULL) {
            d = json_stringn(ev[i].data.data, ev[i].data.len);
        }

        o = json_pack("{s:s%, s:s%, s:o}",
                      "id", ev[i].id.data, ev[i].id.len,
                      "type", ev[i].type.data, ev[i].type.len,
                      "data", d ? d : json_null());
        line = o ? json_dumps(o, JSON_COMPACT) : NULL;

        if (line) {
            fprintf(stdout, "%s\n", line);
            free(line);
        }

        json_decref(o);

        snprintf(c->last, sizeof(c->last), "%.*s", (int) ev[i].id.len,
                 ev[i].id.data);

        if (ev[i].type.len == 5 && memcmp(ev[i].type.data, "final", 5) == 0) {
            c->final = 1;
        }
    }

    fflush(stdout);
    event_base_loopbreak(c->base);
}


static void
rg_events_cli_wake(evutil_socket_t fd, short what, void *arg)
{
    event_base_loopbreak(arg);
}


static void
rg_events_cli_pause(struct event_base *base, rg_msec_t ms)
{
    struct timeval  tv;

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;

    if (event_base_once(base, -1, EV_TIMEOUT, rg_events_cli_wake, base, &tv)
        == 0)
    {
        event_base_dispatch(base);
    }
}


static int
rg_events_cli_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    int                    rc;
    char                   sid[64];
    rg_uint_t              failures;
    rg_engine_t           *e;
    rg_store_t            *st;
    rg_events_cli_t        c;
    rg_events_read_t      *r;
    rg_events_cli_opts_t  *o;

    o = opts;

    if (o->after && !rg_events_id_valid(o->after)) {
        fprintf(stderr, "reagent: events: --after \"%s\" is no event id "
                "(MS-SEQ, as each event's \"id\")\n", o->after);
        return 1;
    }

    if (o->session) {
        if (strlen(arg) >= sizeof(sid)) {
            fprintf(stderr, "reagent: events: \"%.64s…\" is no session id\n",
                    arg);
            return 1;
        }
        snprintf(sid, sizeof(sid), "%s", arg);

    } else {
        rg_stream_session_id(arg, sid, sizeof(sid));
    }

    e = rg_engine_create(cycle, cycle->log);
    if (e == NULL) {
        fprintf(stderr, "reagent: events: %s\n",
                cycle->errmsg[0] ? cycle->errmsg : "cannot start");
        return 1;
    }

    st = rg_store_ctx(e);

    if (st == NULL || !st->durable) {
        fprintf(stderr, "reagent: events are read from a store that "
                "outlives the process: set \"store redis { server …; }\"\n");
        rg_engine_destroy(e);
        return 1;
    }

    memset(&c, 0, sizeof(c));
    c.base = e->base;
    snprintf(c.last, sizeof(c.last), "%s", o->after ? o->after : "");

    rc = 0;
    failures = 0;

    for ( ;; ) {
        c.done = 0;

        r = rg_events_read(e, sid, c.last, RG_EVENTS_CLI_PAGE,
                           rg_events_cli_got, &c);
        if (r == NULL) {
            fprintf(stderr, "reagent: events: out of memory\n");
            rc = 1;
            break;
        }

        while (!c.done && event_base_dispatch(e->base) == 0) {
            /* until the store answers */
        }

        if (c.rc != RG_OK) {
            /* a Redis that restarts is waited for while following */
            if (o->follow && ++failures < RG_EVENTS_CLI_TRIES) {
                rg_events_cli_pause(e->base, RG_EVENTS_CLI_POLL << failures);
                continue;
            }

            fprintf(stderr, "reagent: events: reading the events of "
                    "session \"%s\": %s\n", sid, c.err);
            rc = 1;
            break;
        }

        failures = 0;

        if (c.n == RG_EVENTS_CLI_PAGE) {
            continue;                    /* more of them, at once */
        }

        if (!o->follow || c.final) {
            break;
        }

        rg_events_cli_pause(e->base, RG_EVENTS_CLI_POLL);
    }

    rg_engine_destroy(e);

    return rc;
}


static int
rg_events_cli_option(void *opts, int argc, char **argv, int i)
{
    rg_events_cli_opts_t  *o;

    o = opts;

    if (strcmp(argv[i], "--follow") == 0) {
        o->follow = 1;
        return 1;
    }

    if (strcmp(argv[i], "--session") == 0) {
        o->session = 1;
        return 1;
    }

    if (strcmp(argv[i], "--after") == 0) {
        if (i + 1 >= argc) {
            fprintf(stderr, "reagent: events: --after needs an event id\n");
            return -1;
        }
        o->after = argv[i + 1];
        return 2;
    }

    return 0;
}


const rg_cli_t  rg_events_cli = {
    "events",
    "  events [--follow] [--after ID] [--session] TASK_ID\n"
    "      the events of a task's session (a task with \"events\": true),\n"
    "      as JSONL {\"id\",\"type\",\"data\"}, from the store (store redis);\n"
    "      --follow waits for more until its \"final\" one; --after ID only\n"
    "      those after it; --session: the argument is a session id\n",
    "a task id: reagent events TASK_ID",
    sizeof(rg_events_cli_opts_t),
    rg_events_cli_option,
    rg_events_cli_main,
    RG_CLI_CLIENT
};
