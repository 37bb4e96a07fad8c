/* rg_resume.c: the agent part's commands on stored sessions: `reagent
 * resume ID` continues a session from the store where it stopped (on
 * this process's engine, to its end, like run), and `reagent status ID`
 * prints what the store says of it, from any process. Both need a store
 * that outlives processes (store redis). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_session_int.h>
#include <rg_durable.h>
#include <rg_run.h>
#include <rg_store.h>
#include <rg_store_conf.h>
#include <rg_secret.h>
#include <rg_digest.h>
#include <signal.h>
#include <event2/event.h>


static int rg_resume_option(void *opts, int argc, char **argv, int i);
static int rg_resume_main(rg_cycle_t *cycle, void *opts, const char *arg);
static int rg_status_main(rg_cycle_t *cycle, void *opts, const char *arg);


const rg_cli_t  rg_resume_cli = {
    "resume",
    "  resume [--approve-all|--deny-dangerous] ID\n"
    "      continue a session kept by the store (store redis) where it\n"
    "      stopped: its next model call is the one it was about to make\n",
    "a session id (s-…), or a queue task's id: reagent resume s-…",
    sizeof(rg_run_opts_t),
    rg_resume_option,
    rg_resume_main,
    0
};


const rg_cli_t  rg_status_cli = {
    "status",
    "  status ID\n"
    "      what the store says of a session (or of the session of the\n"
    "      queue task ID): its status, reason, rounds, tokens and answer\n",
    "a session id (s-…), or a queue task's id: reagent status s-…",
    sizeof(rg_run_opts_t),
    NULL,
    rg_status_main,
    RG_CLI_CLIENT
};


static int
rg_resume_option(void *opts, int argc, char **argv, int i)
{
    return rg_run_option(opts, argc, argv, i, 0);
}


typedef struct {
    struct event_base  *base;
    rg_uint_t           done;
    rg_uint_t           quiet;        /* no word of a session not there */
    rg_int_t            rc;
    char                err[512];
    char                agent[256];
    char               *text;         /* status: what to print */
} rg_resume_ctx_t;


static void
rg_resume_peeked(void *data, const rg_store_res_t *res)
{
    rg_resume_ctx_t  *ctx;
    const rg_str_t   *agent;

    ctx = data;
    ctx->done = 1;
    ctx->rc = res->rc;

    if (res->rc == RG_ERROR) {
        snprintf(ctx->err, sizeof(ctx->err), "%s", res->err);

    } else if (res->rc == RG_OK) {
        agent = rg_durable_meta_get(res, "agent");
        if (agent && agent->len < sizeof(ctx->agent)) {
            memcpy(ctx->agent, agent->data, agent->len);
            ctx->agent[agent->len] = '\0';
        }
    }

    event_base_loopbreak(ctx->base);
}


/* what the store holds of a session: its meta and messages, read on
 * e's reactor */
static rg_int_t
rg_resume_peek(rg_engine_t *e, const char *id, rg_store_pt cb,
    rg_resume_ctx_t *ctx)
{
    rg_str_t     sid;
    rg_store_t  *st;

    st = rg_store_ctx(e);

    if (!st->durable) {
        fprintf(stderr, "reagent: sessions are kept only by a store that "
                "outlives the process: set \"store redis { server …; }\"\n");
        return RG_ERROR;
    }

    sid.data = (char *) id;
    sid.len = strlen(id);
    ctx->base = e->base;

    if (st->load(st, &sid, cb, ctx) == NULL) {
        return RG_ERROR;
    }

    while (!ctx->done && event_base_dispatch(e->base) == 0) {
        /* until the store answers */
    }

    if (ctx->rc == RG_ERROR) {
        fprintf(stderr, "reagent: cannot read session \"%s\": %s\n", id,
                ctx->err);
        return RG_ERROR;
    }

    if (ctx->rc == RG_DECLINED) {
        if (!ctx->quiet) {
            fprintf(stderr, "reagent: no session \"%s\" in the store "
                    "(never there, or expired after session_ttl)\n", id);
        }
        return RG_DECLINED;
    }

    return RG_OK;
}


/* the session of ID, into sid: ID itself, or, when it is none and not a
 * session's id, the session of the queue task ID (rg_stream_session_id:
 * "t-" and 128 bits of the SHA-256 of "task", a NUL and the id) */
static rg_int_t
rg_resume_find(rg_engine_t *e, const char *id, rg_store_pt cb,
    rg_resume_ctx_t *ctx, char *sid, size_t size)
{
    char      digest[RG_SHA256_HEX];
    rg_int_t  rc;

    snprintf(sid, size, "%s", id);

    if (strncmp(id, "s-", 2) == 0 || strncmp(id, "t-", 2) == 0) {
        return rg_resume_peek(e, id, cb, ctx);
    }

    ctx->quiet = 1;
    rc = rg_resume_peek(e, id, cb, ctx);
    ctx->quiet = 0;

    if (rc != RG_DECLINED) {
        return rc;
    }

    if (rg_sha256_hex(digest, "task", 5, id, strlen(id)) != RG_OK) {
        return RG_ERROR;
    }

    snprintf(sid, size, "t-%.32s", digest);
    ctx->done = 0;

    rc = rg_resume_peek(e, sid, cb, ctx);
    if (rc == RG_DECLINED) {
        fprintf(stderr, "reagent: no session \"%s\" nor task \"%s\" "
                "(session %s) in the store (never there, or expired after "
                "session_ttl)\n", id, id, sid);
    }

    return rc;
}


static int
rg_resume_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    int                 rc;
    char                sid[64];
    rg_engine_t        *e;
    rg_session_t       *s;
    rg_run_ctx_t        run;
    rg_agent_conf_t    *agent;
    rg_resume_ctx_t     ctx;
    rg_session_args_t   args;

    e = rg_run_engine(cycle, opts, "-");
    if (e == NULL) {
        return 1;
    }

    memset(&ctx, 0, sizeof(ctx));

    if (rg_resume_find(e, arg, rg_resume_peeked, &ctx, sid, sizeof(sid))
        != RG_OK)
    {
        rg_engine_destroy(e);
        return 1;
    }

    agent = rg_agent_find(cycle, ctx.agent, strlen(ctx.agent));
    if (agent == NULL) {
        fprintf(stderr, "reagent: session \"%s\" is of agent \"%s\", which "
                "this configuration does not have\n", sid, ctx.agent);
        rg_engine_destroy(e);
        return 1;
    }

    memset(&run, 0, sizeof(run));
    memset(&args, 0, sizeof(args));
    args.agent = agent;
    args.id = sid;
    args.handler = rg_run_done;
    args.data = &run;
    args.stored = 1;

    s = rg_session_open(e, &args);
    if (s == NULL) {
        fprintf(stderr, "reagent: cannot resume session \"%s\"\n", sid);
        rg_engine_destroy(e);
        return 1;
    }

    run.session = s;

    if (rg_run_wait(e, &run, 0) != RG_OK) {
        rg_engine_destroy(e);
        return 1;
    }

    rg_run_report(s);
    rc = s->state == RG_SESSION_DONE ? 0 : 2;

    rg_session_destroy(s);
    rg_engine_destroy(e);

    return rc;
}


static void
rg_status_print(const rg_store_res_t *res, const char *name,
    const char *label)
{
    char            *text;
    const rg_str_t  *v;

    v = rg_durable_meta_get(res, name);
    if (v == NULL || v->len == 0) {
        return;
    }

    text = rg_strdup_len(v->data, v->len);
    if (text == NULL) {
        return;
    }

    rg_secret_scrub_str(text);
    printf("%s%s\n", label, text);
    free(text);
}


static void
rg_status_got(void *data, const rg_store_res_t *res)
{
    rg_resume_ctx_t  *ctx;

    ctx = data;

    if (res->rc == RG_OK) {
        rg_status_print(res, "status", "status: ");
        rg_status_print(res, "reason", "reason: ");
        rg_status_print(res, "agent", "agent: ");
        rg_status_print(res, "task", "task: ");
        rg_status_print(res, "round", "rounds: ");
        rg_status_print(res, "tool_calls", "tool calls: ");
        rg_status_print(res, "prompt_tokens", "prompt tokens: ");
        rg_status_print(res, "completion_tokens", "completion tokens: ");
        rg_status_print(res, "elapsed", "ms: ");
        rg_status_print(res, "worker", "worker: ");
        printf("messages: %lu\n", (unsigned long) res->nitems);
        rg_status_print(res, "answer", "answer: ");
        fflush(stdout);
    }

    rg_resume_peeked(data, res);
    (void) ctx;
}


static int
rg_status_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    int               rc;
    char              sid[64];
    rg_engine_t      *e;
    rg_resume_ctx_t   ctx;

    e = rg_engine_create(cycle, cycle->log);
    if (e == NULL) {
        return 1;
    }

    memset(&ctx, 0, sizeof(ctx));

    rc = rg_resume_find(e, arg, rg_status_got, &ctx, sid, sizeof(sid))
         == RG_OK ? 0 : 1;

    rg_engine_destroy(e);

    (void) opts;

    return rc;
}
