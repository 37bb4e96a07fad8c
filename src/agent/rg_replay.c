/* rg_replay.c: `reagent replay TRANSCRIPT`, the agent part's other
 * command: the agent, the task and every model answer come from a
 * transcript written by `run --transcript`; the session runs again on
 * this process's engine with its upstreams answering from the file, and
 * the tools run again. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_session.h>
#include <rg_run.h>
#include <rg_llm.h>
#include <jansson.h>


static int rg_replay_option(void *opts, int argc, char **argv, int i);
static int rg_replay_main(rg_cycle_t *cycle, void *opts, const char *arg);


const rg_cli_t  rg_replay_cli = {
    "replay",
    "  replay TRANSCRIPT\n"
    "      re-run a session recorded with --transcript: the model's answers\n"
    "      come from the file, the tools run again\n",
    "a transcript file",
    sizeof(rg_run_opts_t),
    rg_replay_option,
    rg_replay_main
};


static int
rg_replay_option(void *opts, int argc, char **argv, int i)
{
    return rg_run_option(opts, argc, argv, i, RG_RUN_OPT_TRANSCRIPT);
}


/* reagent replay FILE: the agent, the task and every model answer come
 * from a transcript written by --transcript; the tools run again */
static int
rg_replay_file(rg_engine_t *e, const char *transcript, const char *file)
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

    rc = rg_run_task(e, agent, transcript, task);

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


static int
rg_replay_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    int             rc;
    rg_engine_t    *e;
    rg_run_opts_t  *o;

    o = opts;

    e = rg_run_engine(cycle, o, arg);
    if (e == NULL) {
        return 1;
    }

    rc = rg_replay_file(e, o->transcript, arg);

    rg_run_engine_destroy(e, o);

    return rc;
}
