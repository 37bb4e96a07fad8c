/* rg_trace.c: the trace part: its directives (main level, `otlp_…`, see
 * rg_trace.h), their defaults and checks, and in each engine the span
 * exporter when an endpoint is set. It comes right after the event part,
 * so it starts before anything records a span and goes after everything
 * that could, with one last flush through the curl multi, which is still
 * there. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_trace.h>


static void *rg_trace_create_conf(rg_cycle_t *cycle);
static char *rg_trace_init_conf(rg_cycle_t *cycle, void *conf);
static char *rg_trace_set_endpoint(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static rg_int_t rg_trace_init_worker(rg_engine_t *e);
static void rg_trace_exit_worker(rg_engine_t *e);


static rg_conf_num_bounds_t  rg_trace_batch_bounds = { 1, 100000 };
static rg_conf_num_bounds_t  rg_trace_queue_bounds = { 1, 10000000 };


/* the reference of the directives below (reagent directives) */
static rg_conf_doc_t  rg_trace_docs[] = {

    { "otlp_endpoint", "otlp_endpoint URL;", "—",
      "the OTLP/HTTP collector the spans go to as JSON (its /v1/traces); "
      "none: no export, the traceparent headers are sent all the same",
      NULL },

    { "otlp_service_name", "otlp_service_name NAME;", "reagent",
      "the service.name of the spans", NULL },

    { "otlp_batch", "otlp_batch N;", "512",
      "spans per export request at most", NULL },

    { "otlp_flush", "otlp_flush TIME;", "2s",
      "a batch goes at least this often", NULL },

    { "otlp_max_queue", "otlp_max_queue N;", "8192",
      "spans waiting in a process; past it, or while the collector cannot "
      "be reached, spans are dropped and counted", NULL },

    { "otlp_timeout", "otlp_timeout TIME;", "5s",
      "for one export request", NULL },

    rg_null_doc
};


static rg_command_t  rg_trace_commands[] = {

    { rg_string("otlp_endpoint"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_trace_set_endpoint, offsetof(rg_trace_conf_t, endpoint), NULL },

    { rg_string("otlp_service_name"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_trace_conf_t, service_name), NULL },

    { rg_string("otlp_batch"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_trace_conf_t, batch),
      &rg_trace_batch_bounds },

    { rg_string("otlp_flush"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_trace_conf_t, flush), NULL },

    { rg_string("otlp_max_queue"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_trace_conf_t, max_queue),
      &rg_trace_queue_bounds },

    { rg_string("otlp_timeout"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_trace_conf_t, timeout), NULL },

      rg_null_command_doc(rg_trace_docs)
};


rg_part_t  rg_trace_part = {
    .name = "trace",
    .commands = rg_trace_commands,
    .create_conf = rg_trace_create_conf,
    .init_conf = rg_trace_init_conf,
    .init_worker = rg_trace_init_worker,
    .exit_worker = rg_trace_exit_worker
};


static void *
rg_trace_create_conf(rg_cycle_t *cycle)
{
    return rg_conf_create(cycle->pool, sizeof(rg_trace_conf_t),
                          rg_trace_commands, RG_MAIN_CONF);
}


static char *
rg_trace_init_conf(rg_cycle_t *cycle, void *conf)
{
    rg_trace_conf_t  *tcf;

    tcf = conf;

    rg_conf_init_str_value(tcf->service_name, "reagent");
    rg_conf_init_value(tcf->batch, 512);
    rg_conf_init_msec_value(tcf->flush, 2000);
    rg_conf_init_value(tcf->max_queue, 8192);
    rg_conf_init_msec_value(tcf->timeout, 5000);

    if (tcf->flush == 0 || tcf->timeout == 0) {
        rg_conf_error(cycle, tcf, tcf->flush ? "otlp_timeout" : "otlp_flush",
                      NULL, cycle->conf_file, 0, "\"otlp_flush\" and "
                      "\"otlp_timeout\" must be more than 0");
        return RG_CONF_ERROR;
    }

    rg_conf_init_str_value(tcf->endpoint, "");

    return RG_CONF_OK;
}


/* OTLP/HTTP: the collector's full URL, …/v1/traces */
static char *
rg_trace_set_endpoint(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_str_t  *v;

    v = &cf->args[1];

    if (rg_str_casecmp_prefix(v->data, v->len, "http://") != 0
        && rg_str_casecmp_prefix(v->data, v->len, "https://") != 0)
    {
        return "must be an http:// or https:// URL (the collector's "
               "/v1/traces)";
    }

    return rg_conf_set_str_slot(cf, cmd, conf);
}


static rg_int_t
rg_trace_init_worker(rg_engine_t *e)
{
    rg_trace_t       *t;
    rg_trace_conf_t  *tcf;

    tcf = rg_trace_conf(e->cycle);

    if (tcf->endpoint.len == 0) {
        return RG_OK;
    }

    t = rg_trace_create(e, tcf);
    if (t == NULL) {
        rg_log_error(RG_LOG_EMERG, e->log, 0, "span exporter setup failed");
        return RG_ERROR;
    }

    rg_engine_ctx(e, &rg_trace_part) = t;

    return RG_OK;
}


static void
rg_trace_exit_worker(rg_engine_t *e)
{
    rg_trace_destroy(rg_trace_ctx(e));
    rg_engine_ctx(e, &rg_trace_part) = NULL;
}
