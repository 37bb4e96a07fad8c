/* reagent.c: main() and the command line. `reagent -t` tests a
 * configuration, `-V` prints the build, `run` runs one task and `batch`
 * runs a JSONL file of them, both in this one process on the embedded
 * memory store. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_session.h>
#include <rg_batch.h>
#include <rg_tools.h>
#include <rg_secret.h>
#include <rg_confine.h>
#include <signal.h>
#include <event2/event.h>
#include <jansson.h>
#include <hiredis/hiredis.h>
#include <msgpack.h>


static void
rg_usage(FILE *f)
{
    fprintf(f,
"usage: reagent [-c FILE] [-t] [-V] [-h] COMMAND [ARGS]\n"
"\n"
"  -c FILE             configuration file (default: " RG_CONF_PATH ",\n"
"                      then conf/reagent.conf)\n"
"  -t                  test the configuration and exit\n"
"  -V                  print the version and build options\n"
"  -q                  log only errors on stderr\n"
"\n"
"commands:\n"
"  run [-a AGENT] [--transcript FILE] [--approve-all|--deny-dangerous]\n"
"      \"task\"\n"
"      run one task: the answer goes to stdout, the status to stderr;\n"
"      the exit code is 0 when the status is done\n"
"  replay TRANSCRIPT\n"
"      re-run a session recorded with --transcript: the model's answers\n"
"      come from the file, the tools run again\n"
"  batch [-a AGENT] [--concurrency N] [-o results.jsonl [--resume]]\n"
"        [--progress|--no-progress] [--approve-all|--deny-dangerous]\n"
"        tasks.jsonl|-\n"
"      run JSONL tasks {\"id\",\"agent\",\"input\"}, up to N at once;\n"
"      results {\"id\",\"status\",\"answer\",\"rounds\",\"tokens\",\"ms\","
"\"error\"}\n"
"      appended to -o FILE, which must be empty unless --resume: then\n"
"      the tasks it holds results for are skipped\n"
"\n"
"dangerous tools (exec) run only when approved: \"approve TOOL;\" in the\n"
"agent (and in every agent that delegated to it), or a y/N prompt when\n"
"stdin is a terminal; --approve-all allows and --deny-dangerous refuses\n"
"them all, whatever the agents say (the model is told).\n");
}


static void
rg_show_version(void)
{
    printf("reagent version %s\n", RG_VERSION);
    printf("built with %s\n", RG_CC);
    printf("configure arguments: %s\n", RG_CONFIGURE_ARGS);
    printf("libraries: libevent %s, libcurl %s, jansson %s, msgpack-c %s, "
           "hiredis %d.%d.%d\n", event_get_version(),
           curl_version_info(CURLVERSION_NOW)->version, JANSSON_VERSION,
           msgpack_version(), HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
    printf("tool module ABI: %d (%s)\n", RG_TOOL_ABI_VERSION,
           RG_TOOL_SIGNATURE);
    printf("exec confinement: %s\n", rg_confine_describe());
}


static const char *
rg_default_conf(void)
{
    if (access(RG_CONF_PATH, R_OK) == 0) {
        return RG_CONF_PATH;
    }

    return "conf/reagent.conf";
}


typedef struct {
    rg_session_t       *session;
    struct event       *sigint;
    struct event       *sigterm;
} rg_run_ctx_t;


static void
rg_run_done(rg_session_t *s)
{
    rg_run_ctx_t  *ctx;

    ctx = s->data;
    event_del(ctx->sigint);
    event_del(ctx->sigterm);
    event_base_loopbreak(s->engine->base);
}


static void
rg_run_signal(evutil_socket_t sig, short what, void *arg)
{
    rg_run_ctx_t  *ctx;

    ctx = arg;
    rg_session_cancel(ctx->session, "interrupted by a signal");
}


static int
rg_cmd_run(rg_engine_t *e, const char *agent_name, const char *transcript,
    const char *task)
{
    int               rc, fd;
    char             *text;
    size_t            len;
    rg_run_ctx_t      ctx;
    rg_session_t     *s;
    rg_agent_conf_t  *agent;

    agent = rg_agent_find(e->cycle, agent_name, strlen(agent_name));
    if (agent == NULL) {
        fprintf(stderr, "reagent: unknown agent \"%s\" (agents: ", agent_name);
        for (len = 0; len < rg_agent_main_conf(e->cycle)->agents.nelts; len++)
        {
            fprintf(stderr, "%s%s", len ? ", " : "",
                    ((rg_agent_conf_t **)
                     rg_agent_main_conf(e->cycle)->agents.elts)[len]
                    ->name.data);
        }
        fprintf(stderr, ")\n");
        return 1;
    }

    memset(&ctx, 0, sizeof(ctx));

    s = rg_session_create(e, agent, NULL, task, strlen(task), rg_run_done,
                          &ctx);
    if (s == NULL) {
        fprintf(stderr, "reagent: out of memory\n");
        return 1;
    }

    /* SIGTERM ends a run as Ctrl-C does: a status line, the transcript */
    ctx.session = s;
    ctx.sigint = evsignal_new(e->base, SIGINT, rg_run_signal, &ctx);
    ctx.sigterm = evsignal_new(e->base, SIGTERM, rg_run_signal, &ctx);
    if (ctx.sigint == NULL || ctx.sigterm == NULL) {
        if (ctx.sigint) {
            event_free(ctx.sigint);
        }
        rg_session_destroy(s);
        return 1;
    }

    event_add(ctx.sigint, NULL);
    event_add(ctx.sigterm, NULL);

    if (transcript) {
        rg_session_record(s);
    }

    if (rg_session_start(s) == RG_OK || !rg_session_final(s)) {
        event_base_dispatch(e->base);
    }

    if (s->answer.data) {
        text = rg_strdup_len(s->answer.data, s->answer.len);
        len = text ? rg_secret_scrub(text, s->answer.len) : 0;

        fwrite(text, 1, len, stdout);
        if (len == 0 || text[len - 1] != '\n') {
            fputc('\n', stdout);
        }
        fflush(stdout);
        free(text);
    }

    fprintf(stderr, "status: %s%s%s (rounds %lu, tool calls %lu, "
            "tokens %lld, %llu ms)\n", rg_session_state_name(s->state),
            s->reason ? ": " : "", s->reason ? s->reason : "",
            (unsigned long) s->round, (unsigned long) s->tool_calls,
            (long long) (s->prompt_tokens + s->completion_tokens),
            (unsigned long long) (s->ended - s->started));

    rc = s->state == RG_SESSION_DONE ? 0 : 2;

    if (transcript) {
        text = rg_session_transcript(s);
        fd = open(transcript, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        if (text == NULL || fd == -1
            || write(fd, text, strlen(text)) != (ssize_t) strlen(text))
        {
            fprintf(stderr, "reagent: cannot write transcript \"%s\": %s\n",
                    transcript, strerror(errno));
            rc = rc ? rc : 1;
        }

        if (fd != -1) {
            close(fd);
        }
        free(text);
    }

    event_free(ctx.sigint);
    event_free(ctx.sigterm);
    rg_session_destroy(s);

    return rc;
}


/* reagent replay FILE: the agent, the task and every model answer come
 * from a transcript written by --transcript; the tools run again */
static int
rg_cmd_replay(rg_engine_t *e, const char *transcript, const char *file)
{
    int                  rc;
    size_t               i, n, k;
    json_t              *t, *events, *ev, *msgs, *m, *v;
    json_error_t         err;
    const char          *agent, *task;
    rg_uint_t            j;
    rg_llm_conf_t      **llms;
    rg_llm_upstream_t   *up;
    rg_llm_recorded_t   *recs;

    t = json_load_file(file, JSON_ALLOW_NUL, &err);
    if (t == NULL) {
        fprintf(stderr, "reagent: cannot read transcript \"%s\": %s "
                "(line %d)\n", file, err.text, err.line);
        return 1;
    }

    agent = json_string_value(json_object_get(t, "agent"));
    msgs = json_object_get(t, "messages");
    events = json_object_get(t, "events");
    task = NULL;

    json_array_foreach(msgs, i, m) {
        v = json_object_get(m, "role");
        if (json_is_string(v) && strcmp(json_string_value(v), "user") == 0) {
            task = json_string_value(json_object_get(m, "content"));
            break;
        }
    }

    if (agent == NULL || task == NULL || !json_is_array(events)) {
        fprintf(stderr, "reagent: \"%s\" is not a reagent transcript (it "
                "needs \"agent\", \"messages\" with the task, and "
                "\"events\")\n", file);
        json_decref(t);
        return 1;
    }

    n = json_array_size(events);
    recs = calloc(n + 1, sizeof(rg_llm_recorded_t));
    if (recs == NULL) {
        json_decref(t);
        return 1;
    }

    k = 0;
    json_array_foreach(events, i, ev) {
        v = json_object_get(ev, "type");
        if (!json_is_string(v)
            || strcmp(json_string_value(v), "model_call") != 0)
        {
            continue;
        }

        recs[k].status = (long) json_integer_value(json_object_get(ev,
                                                      "http_status"));
        v = json_object_get(ev, recs[k].status ? "response" : "error");

        if (json_is_string(v)) {
            recs[k].len = json_string_length(v);
            recs[k].body = rg_strdup_len(json_string_value(v), recs[k].len);
        } else if (v) {
            recs[k].body = json_dumps(v, JSON_COMPACT);
            recs[k].len = recs[k].body ? strlen(recs[k].body) : 0;
        } else {
            recs[k].body = strdup(recs[k].status ? "" : "no response");
            recs[k].len = recs[k].body ? strlen(recs[k].body) : 0;
        }
        k++;
    }

    llms = rg_llm_main_conf(e->cycle)->llms.elts;
    for (j = 0; j < rg_llm_main_conf(e->cycle)->llms.nelts; j++) {
        rg_llm_upstream_replay(rg_llm_upstream(e, llms[j]), recs, k);
    }

    fprintf(stderr, "replay: agent \"%s\", %lu recorded model answers\n",
            agent, (unsigned long) k);

    rc = rg_cmd_run(e, agent, transcript, task);

    up = rg_agent_find(e->cycle, agent, strlen(agent))
         ? rg_llm_upstream(e, rg_agent_find(e->cycle, agent,
                                            strlen(agent))->llm)
         : NULL;

    if (up) {
        fprintf(stderr, "replay: %lu of %lu recorded answers used%s\n",
                (unsigned long) up->replayed, (unsigned long) k,
                up->replayed < k ? " (the replayed run ended earlier)" : "");
    }

    for (i = 0; i < k; i++) {
        free(recs[i].body);
    }

    free(recs);
    json_decref(t);

    return rc;
}


int
main(int argc, char **argv)
{
    int               i, rc, test, quiet;
    char              errmsg[512], *end;
    const char       *conf, *cmd, *agent, *transcript, *task, *output;
    rg_log_t          log;
    rg_cycle_t       *cycle;
    rg_engine_t      *e;
    rg_batch_opts_t   bopts;
    rg_int_t          approval;

    signal(SIGPIPE, SIG_IGN);

    approval = -1;

    conf = NULL;
    cmd = NULL;
    test = 0;
    quiet = 0;
    agent = NULL;
    transcript = NULL;
    task = NULL;
    output = NULL;

    memset(&bopts, 0, sizeof(bopts));
    bopts.progress = -1;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "-c") == 0 && i + 1 < argc) {
            conf = argv[++i];

        } else if (strcmp(a, "-t") == 0) {
            test = 1;

        } else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
            rg_show_version();
            return 0;

        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            rg_usage(stdout);
            return 0;

        } else if (strcmp(a, "-q") == 0) {
            quiet = 1;

        } else if (cmd && strcmp(a, "-a") == 0 && i + 1 < argc) {
            agent = argv[++i];

        } else if (cmd && (strcmp(cmd, "run") == 0
                           || strcmp(cmd, "replay") == 0)
                   && strcmp(a, "--transcript") == 0 && i + 1 < argc)
        {
            transcript = argv[++i];

        } else if (cmd && strcmp(cmd, "batch") == 0
                   && strcmp(a, "--concurrency") == 0 && i + 1 < argc)
        {
            bopts.concurrency = strtol(argv[++i], &end, 10);
            if (*end || bopts.concurrency <= 0 || bopts.concurrency > 1000000)
            {
                fprintf(stderr, "reagent: --concurrency expects a number "
                        "from 1 to 1000000, not \"%s\"\n", argv[i]);
                return 1;
            }

        } else if (cmd && strcmp(cmd, "batch") == 0
                   && strcmp(a, "-o") == 0 && i + 1 < argc)
        {
            output = argv[++i];

        } else if (cmd && strcmp(cmd, "batch") == 0
                   && strcmp(a, "--resume") == 0)
        {
            bopts.resume = 1;

        } else if (cmd && strcmp(cmd, "batch") == 0
                   && strcmp(a, "--progress") == 0)
        {
            bopts.progress = 1;

        } else if (cmd && strcmp(cmd, "batch") == 0
                   && strcmp(a, "--no-progress") == 0)
        {
            bopts.progress = 0;

        } else if (cmd && strcmp(a, "--approve-all") == 0) {
            approval = RG_APPROVE_ALL;

        } else if (cmd && strcmp(a, "--deny-dangerous") == 0) {
            approval = RG_APPROVE_NONE;

        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "reagent: unknown option \"%s\"%s\n", a,
                    cmd ? "" : " (see reagent -h)");
            return 1;

        } else if (cmd == NULL) {
            cmd = a;
            if (strcmp(cmd, "run") != 0 && strcmp(cmd, "batch") != 0
                && strcmp(cmd, "replay") != 0)
            {
                fprintf(stderr, "reagent: unknown command \"%s\" "
                        "(run, batch or replay; see reagent -h)\n", cmd);
                return 1;
            }

        } else if (task == NULL) {
            task = a;

        } else {
            fprintf(stderr, "reagent: unexpected argument \"%s\" (quote the "
                    "task as one argument)\n", a);
            return 1;
        }
    }

    if (conf == NULL) {
        conf = rg_default_conf();
    }

    if (!test && cmd == NULL) {
        rg_usage(stderr);
        return 1;
    }

    if (!test && task == NULL) {
        fprintf(stderr, "reagent: %s needs %s\n", cmd,
                strcmp(cmd, "run") == 0 ? "a task: reagent run \"what is "
                "2+2?\"" : strcmp(cmd, "replay") == 0 ? "a transcript file"
                : "a tasks file, or - for stdin");
        return 1;
    }

    log = *rg_log_stderr();
    if (quiet) {
        log.log_level = RG_LOG_ERR;
    }

    /* the process holds API keys: no core file, no same-user reader of
     * its memory or environment */
    if (rg_secret_protect() != RG_OK) {
        rg_log_error(RG_LOG_WARN, &log, errno, "prctl(PR_SET_DUMPABLE) "
                     "failed");
    }

    cycle = rg_cycle_create(conf, NULL, &log, errmsg, sizeof(errmsg));

    if (cycle == NULL) {
        if (test) {
            fprintf(stderr, "reagent: configuration file %s test failed\n",
                    conf);
        }
        return 1;
    }

    if (test) {
        fprintf(stderr, "reagent: the configuration file %s syntax is ok\n"
                "reagent: configuration file %s test is successful\n",
                conf, conf);
        rg_cycle_destroy(cycle);
        return 0;
    }

    if (quiet && cycle->log->log_level > RG_LOG_ERR) {
        cycle->log->log_level = RG_LOG_ERR;
    }

    e = rg_engine_create(cycle, cycle->log);
    if (e == NULL) {
        rg_cycle_destroy(cycle);
        return 1;
    }

    if (agent == NULL) {
        agent = rg_agent_main_conf(cycle)->default_agent.data;
    }

    /* ask on the terminal only when it cannot be the task input */
    if (approval == -1) {
        approval = isatty(STDIN_FILENO) && strcmp(task, "-") != 0
                   ? RG_APPROVE_PROMPT : RG_APPROVE_DENY;
    }

    rg_tools_set_approval(rg_tools_ctx(e), (rg_approval_e) approval);

    if (strcmp(cmd, "run") == 0) {
        rc = rg_cmd_run(e, agent, transcript, task);

    } else if (strcmp(cmd, "replay") == 0) {
        rc = rg_cmd_replay(e, transcript, task);

    } else {
        bopts.input = task;
        bopts.output = output;
        bopts.agent = agent;
        bopts.quiet = 0;
        rc = rg_batch_run(e, &bopts);
    }

    rg_engine_destroy(e);
    rg_cycle_destroy(cycle);
    for (i = 0; rg_parts[i]; i++) {
        if (rg_parts[i]->exit_process) {
            rg_parts[i]->exit_process();
        }
    }

    rg_secret_reset();

    return rc;
}
