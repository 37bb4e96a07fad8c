/* rg_queue_conf.c: the queue part's directives, `queue { stream tasks;
 * group workers; shards 1; claim_idle 30s; max_deliveries 5; block 2s;
 * results_max 100000; }` at main level: where `reagent serve` reads its
 * tasks and `reagent submit` puts them. The queue needs store redis. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_queue_conf.h>
#include <rg_store_conf.h>


static char *rg_queue_block(rg_conf_t *cf, rg_command_t *cmd, void *conf);


static rg_conf_num_bounds_t  rg_queue_shards_bounds = { 1, 1024 };
static rg_conf_num_bounds_t  rg_queue_deliveries_bounds = { 1, 1000 };
static rg_conf_num_bounds_t  rg_queue_results_bounds = { 100, 100000000 };


/* the reference of the directives below (reagent directives) */
static rg_conf_doc_t  rg_queue_docs[] = {

    { "queue", "queue { … }", "—",
      "the task queue of reagent serve, in Redis Streams (needs store "
      "redis)", NULL },

    { "stream", "stream NAME;", "tasks",
      "the name the queue's keys are made from", "queue" },

    { "group", "group NAME;", "workers",
      "the consumer group the workers read in", "queue" },

    { "shards", "shards N;", "1",
      "streams, each with a hash tag of its own (1 to 1024)", "queue" },

    { "claim_idle", "claim_idle TIME;", "30s",
      "a task idle this long is taken over by another worker (longer than "
      "lease_ttl)", "queue" },

    { "max_deliveries", "max_deliveries N;", "5",
      "then a task goes to the dead letters, failed", "queue" },

    { "block", "block TIME;", "2s",
      "one read waits at most this long", "queue" },

    { "results_max", "results_max N;", "100000",
      "the results stream is trimmed to about this many (100 or more)",
      "queue" },

    rg_null_doc
};


rg_command_t  rg_queue_commands[] = {

    { rg_string("queue"), RG_MAIN_CONF|RG_CONF_BLOCK|RG_CONF_NOARGS,
      rg_queue_block, 0, NULL },

    { rg_string("stream"), RG_QUEUE_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_queue_conf_t, stream), NULL },

    { rg_string("group"), RG_QUEUE_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_queue_conf_t, group), NULL },

    { rg_string("shards"), RG_QUEUE_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_queue_conf_t, shards),
      &rg_queue_shards_bounds },

    { rg_string("claim_idle"), RG_QUEUE_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_queue_conf_t, claim_idle), NULL },

    { rg_string("max_deliveries"), RG_QUEUE_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_queue_conf_t, max_deliveries),
      &rg_queue_deliveries_bounds },

    { rg_string("block"), RG_QUEUE_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_queue_conf_t, block), NULL },

    { rg_string("results_max"), RG_QUEUE_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_queue_conf_t, results_max),
      &rg_queue_results_bounds },

      rg_null_command_doc(rg_queue_docs)
};


void *
rg_queue_create_conf(rg_cycle_t *cycle)
{
    return rg_conf_create(cycle->pool, sizeof(rg_queue_conf_t),
                          rg_queue_commands, RG_QUEUE_CONF);
}


static char *
rg_queue_block(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_queue_conf_t  *qcf;

    qcf = conf;

    return rg_conf_block_once(cf, RG_QUEUE_CONF, qcf, &qcf->declared,
                              &qcf->file, &qcf->line);
}


/* a name that goes into a key and its hash tag */
static rg_uint_t
rg_queue_name_ok(const rg_str_t *s)
{
    return s->len > 0 && s->len <= 64
           && strspn(s->data, "abcdefghijklmnopqrstuvwxyz"
                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
              == s->len;
}


char *
rg_queue_init_conf(rg_cycle_t *cycle, void *conf)
{
    rg_queue_conf_t  *qcf;

    qcf = conf;

    rg_conf_init_str_value(qcf->stream, "tasks");
    rg_conf_init_str_value(qcf->group, "workers");
    rg_conf_init_value(qcf->shards, 1);
    rg_conf_init_msec_value(qcf->claim_idle, 30000);
    rg_conf_init_value(qcf->max_deliveries, 5);
    rg_conf_init_msec_value(qcf->block, 2000);
    rg_conf_init_value(qcf->results_max, 100000);

    if (!qcf->declared) {
        return RG_CONF_OK;
    }

    if (!rg_queue_name_ok(&qcf->stream) || !rg_queue_name_ok(&qcf->group)) {
        rg_conf_error(cycle, qcf,
                      rg_queue_name_ok(&qcf->stream) ? "group" : "stream",
                      NULL, qcf->file, qcf->line, "queue: \"stream\" and "
                      "\"group\" must be names of 1 to 64 letters, digits "
                      "and ._-");
        return RG_CONF_ERROR;
    }

    if (qcf->claim_idle < 1000 || qcf->block < 10
        || qcf->block >= qcf->claim_idle)
    {
        rg_conf_error(cycle, qcf, "claim_idle", NULL,
                      qcf->file, qcf->line, "queue: \"claim_idle\" "
                      "must be at least 1s and longer than \"block\"");
        return RG_CONF_ERROR;
    }

    if (rg_store_conf(cycle)->type != RG_STORE_REDIS) {
        rg_cycle_error(cycle, qcf->file, qcf->line, "\"queue { }\" needs "
                       "\"store redis { }\": the queue is a Redis Stream");
        return RG_CONF_ERROR;
    }

    if (qcf->claim_idle <= rg_store_conf(cycle)->lease_ttl) {
        rg_conf_error(cycle, qcf, "claim_idle", NULL,
                      qcf->file, qcf->line, "queue: \"claim_idle\" "
                      "(%.3gs) must be longer than \"lease_ttl\" (%.3gs): a "
                      "task is taken over only once its worker's lease on "
                      "it has expired", (double) qcf->claim_idle / 1000,
                      (double) rg_store_conf(cycle)->lease_ttl / 1000);
        return RG_CONF_ERROR;
    }

    return RG_CONF_OK;
}


rg_int_t
rg_queue_init_master(rg_cycle_t *cycle, char *err, size_t len)
{
    return rg_queue_conf(cycle)->declared ? RG_OK : RG_DECLINED;
}
