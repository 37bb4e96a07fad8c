/* rg_stream_cli_queue.c: `reagent queue` (rg_stream_cli.c): each
 * shard's depth, pending entries per consumer, dead letters, the workers
 * reading, and what the store's losses took (rg_stream_lost.c). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_stream_cli_int.h>


/* -1 with err when Redis did not answer */
static long long
rg_queue_int(rg_stream_client_t *c, const char *key, const char *cmd,
    char *err, size_t errlen)
{
    long long    v;
    redisReply  *r;
    const char  *argv[2];

    argv[0] = cmd;
    argv[1] = key;

    r = rg_stream_cli_call(c->engine, c->redis, key, err, errlen, 2, argv,
                           NULL);
    v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r) {
        freeReplyObject(r);
    }

    return v;
}


/* a field of an XINFO map: [name, value, name, value, ...] */
static redisReply *
rg_queue_field(redisReply *map, const char *name)
{
    size_t  i;

    for (i = 0; map && map->type == REDIS_REPLY_ARRAY
                && i + 1 < map->elements; i += 2)
    {
        if (map->element[i]->type == REDIS_REPLY_STRING
            && strlen(name) == map->element[i]->len
            && memcmp(map->element[i]->str, name, map->element[i]->len) == 0)
        {
            return map->element[i + 1];
        }
    }

    return NULL;
}


/* the queue's list of the store's losses (rg_stream_lost.c), newest
 * first: when, which worker, what it wrote back, which tasks are gone */
static void
rg_queue_losses(rg_stream_client_t *c)
{
    char         key[320], err[256], when[32];
    size_t       i, j;
    time_t       t;
    json_t      *o, *lost;
    json_int_t   sessions, results, tasks;
    struct tm    tm;
    redisReply  *r;
    const char  *argv[4];

    snprintf(key, sizeof(key), "%s{q:%s}:losses", c->prefix,
             c->qcf->stream.data);

    argv[0] = "LRANGE";
    argv[1] = key;
    argv[2] = "0";
    argv[3] = "9";
    r = rg_stream_cli_call(c->engine, c->redis, key, err, sizeof(err), 4,
                           argv, NULL);

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements) {
        printf("the store lost its memory (Redis restarted without its "
               "data, or was emptied); the last records, newest first:\n");
    }

    for (i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        if (r->element[i]->type != REDIS_REPLY_STRING) {
            continue;
        }

        o = json_loadb(r->element[i]->str, r->element[i]->len, 0, NULL);
        if (o == NULL) {
            continue;
        }

        t = (time_t) (json_integer_value(json_object_get(o, "at")) / 1000);
        localtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);

        sessions = json_integer_value(json_object_get(o,
                                          "sessions_written_back"));
        results = json_integer_value(json_object_get(o,
                                         "results_written_again"));
        tasks = json_integer_value(json_object_get(o, "lost_count"));

        printf("  %s worker %s: %lld session%s written back, %lld result%s "
               "written again, %lld task%s lost", when,
               json_string_value(json_object_get(o, "worker"))
               ? json_string_value(json_object_get(o, "worker")) : "?",
               (long long) sessions, sessions == 1 ? "" : "s",
               (long long) results, results == 1 ? "" : "s",
               (long long) tasks, tasks == 1 ? "" : "s");

        lost = json_object_get(o, "lost");
        for (j = 0; j < json_array_size(lost); j++) {
            printf("%s%s", j ? ", " : ": ",
                   json_string_value(json_array_get(lost, j))
                   ? json_string_value(json_array_get(lost, j)) : "?");
        }

        if (json_string_value(json_object_get(o, "note"))) {
            printf(" (%s)", json_string_value(json_object_get(o, "note")));
        }

        printf("\n");
        json_decref(o);
    }

    if (r) {
        freeReplyObject(r);
    }
}


int
rg_queue_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    char                err[256], key[320], dead[320];
    size_t              i, j;
    rg_uint_t           shard;
    long long           depth, ndead, pending;
    redisReply         *r, *g, *v, *name, *idle, *p;
    rg_stream_client_t  c;
    const char         *argv[4];

    if (rg_stream_client_open(cycle, &c, "queue") != RG_OK) {
        return 1;
    }

    printf("queue %s, group %s, %ld shard%s\n", c.qcf->stream.data,
           c.qcf->group.data, (long) c.qcf->shards,
           c.qcf->shards == 1 ? "" : "s");

    for (shard = 0; shard < (rg_uint_t) c.qcf->shards; shard++) {
        rg_stream_shard_key(&c, shard, "", key, sizeof(key));
        rg_stream_shard_key(&c, shard, ":dead", dead, sizeof(dead));

        depth = rg_queue_int(&c, key, "XLEN", err, sizeof(err));
        ndead = depth < 0 ? -1 : rg_queue_int(&c, dead, "XLEN", err,
                                              sizeof(err));
        pending = 0;

        /* what it would print is not what the queue holds */
        if (ndead < 0) {
            fprintf(stderr, "reagent: queue: reading shard %lu: %s\n",
                    (unsigned long) shard, err);
            rg_stream_client_close(&c);
            return 1;
        }

        argv[0] = "XINFO";
        argv[1] = "GROUPS";
        argv[2] = key;
        r = rg_stream_cli_call(c.engine, c.redis, key, err, sizeof(err), 3,
                               argv, NULL);

        for (i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements;
             i++)
        {
            g = r->element[i];
            name = rg_queue_field(g, "name");
            if (name && name->len == c.qcf->group.len
                && memcmp(name->str, c.qcf->group.data, name->len) == 0)
            {
                v = rg_queue_field(g, "pending");
                pending = v && v->type == REDIS_REPLY_INTEGER ? v->integer
                                                               : 0;
                v = rg_queue_field(g, "lag");
                printf("shard %lu: %lld entr%s, %lld not yet read, %lld "
                       "pending, %lld dead letter%s\n", (unsigned long) shard,
                       depth, depth == 1 ? "y" : "ies",
                       v && v->type == REDIS_REPLY_INTEGER
                       ? v->integer : -1LL,
                       pending, ndead < 0 ? 0 : ndead,
                       ndead == 1 ? "" : "s");
            }
        }

        if (r == NULL || r->elements == 0) {
            printf("shard %lu: %lld entr%s, no group yet (no worker has "
                   "read it), %lld dead letter%s\n", (unsigned long) shard,
                   depth < 0 ? 0 : depth, depth == 1 ? "y" : "ies",
                   ndead < 0 ? 0 : ndead, ndead == 1 ? "" : "s");
        }

        if (r) {
            freeReplyObject(r);
        }

        argv[0] = "XINFO";
        argv[1] = "CONSUMERS";
        argv[2] = key;
        argv[3] = c.qcf->group.data;
        r = rg_stream_cli_call(c.engine, c.redis, key, err, sizeof(err), 4,
                               argv, NULL);

        for (j = 0; r && r->type == REDIS_REPLY_ARRAY && j < r->elements;
             j++)
        {
            name = rg_queue_field(r->element[j], "name");
            p = rg_queue_field(r->element[j], "pending");
            idle = rg_queue_field(r->element[j], "idle");
            if (name && p && idle) {
                /* a live worker reads or keeps its entries more often
                 * than claim_idle; one that is gone may leave entries,
                 * taken over after it */
                printf("  worker %.*s: %lld pending, %s (last seen %.1fs "
                       "ago)\n", (int) name->len, name->str, p->integer,
                       idle->integer > (long long) c.qcf->claim_idle
                       ? "gone" : "alive",
                       (double) idle->integer / 1000);
            }
        }

        if (r) {
            freeReplyObject(r);
        }
    }

    rg_queue_losses(&c);

    rg_stream_client_close(&c);

    return 0;
}
