/* rg_stream_cli_int.h: what the pieces of the queue's commands share
 * (rg_stream_cli.c: a command and its answer, the client, the options;
 * rg_stream_cli_results.c, rg_stream_cli_watch.c, rg_stream_cli_submit.c,
 * rg_stream_cli_queue.c); not for anyone else. */

#ifndef RG_STREAM_CLI_INT_H
#define RG_STREAM_CLI_INT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_queue_conf.h>
#include <rg_store_conf.h>
#include <rg_stream.h>
#include <rg_progress.h>
#include <jansson.h>


typedef struct {
    const char         *agent;        /* -a */
    const char         *output;       /* -o */
    rg_uint_t           wait;         /* --wait */
    rg_uint_t           follow;       /* --follow */
    rg_uint_t           progress;     /* 0: when stderr is a terminal,
                                         1: --progress, 2: --no-progress */
} rg_stream_cli_opts_t;


/* one command, its answer */
typedef struct {
    rg_uint_t           done;
    rg_uint_t          *left;         /* a pipeline's count, or NULL */
    redisReply         *reply;        /* moved out of hiredis's */
    char                err[256];
} rg_stream_wait_t;


/* commands sent together, answered in one round trip */
typedef struct {
    const char         *key;          /* the key whose hash tag it has */
    int                 argc;
    const char         *argv[8];
    size_t              lens[8];
    rg_stream_wait_t    w;
} rg_stream_cli_cmd_t;


/* the client: an engine for its reactor and the store's address */
typedef struct {
    rg_engine_t        *engine;
    rg_redis_t         *redis;
    rg_queue_conf_t    *qcf;
    const char         *prefix;
    char                results[256];
} rg_stream_client_t;


/* submit --wait: a task it waits for, and what it takes to queue it again
 * should Redis lose it */
typedef struct {
    char               *id;
    char               *text;         /* its line, as queued */
    char                entry[64];    /* its entry; "": another queued it */
    rg_uint_t           lineno;
    rg_uint_t           vanished;     /* looks in a row that found none */
} rg_stream_waited_t;


typedef struct {
    rg_stream_waited_t *tasks;
    rg_uint_t           n;
    rg_uint_t           cap;
    rg_uint_t           again;        /* how many were queued again */
    const char         *token;        /* this submit's name, for marks */
    const char         *ttl;          /* session_ttl: a queued task's mark */
    rg_msec_t           next;         /* the next look */
} rg_stream_watch_t;


/* every few seconds of the wait, one round trip */
#define RG_STREAM_CLI_LOOK   5000


/* rg_stream_cli.c: a command and its answer, the client */
redisReply *rg_stream_cli_call(rg_engine_t *e, rg_redis_t *r, const char *key,
    char *err, size_t errlen, int argc, const char **argv,
    const size_t *lens0);
void rg_stream_cli_pause(rg_engine_t *e, rg_msec_t ms);
redisReply *rg_stream_cli_retry(rg_engine_t *e, rg_redis_t *r,
    const char *key, char *err, size_t errlen, int argc, const char **argv,
    const size_t *lens);
void rg_stream_cli_pipeline(rg_engine_t *e, rg_redis_t *r,
    rg_stream_cli_cmd_t *cmds, rg_uint_t n);
rg_int_t rg_stream_client_open(rg_cycle_t *cycle, rg_stream_client_t *c,
    const char *cmd);
void rg_stream_client_close(rg_stream_client_t *c);
char *rg_stream_shard_key(rg_stream_client_t *c, rg_uint_t shard,
    const char *tail, char *buf, size_t size);
char *rg_stream_slurp(const char *path, size_t *len);

/* rg_stream_cli_results.c */
void rg_stream_cli_count(const char *text, size_t len);
void rg_stream_cli_summary(FILE *f);
void rg_stream_cli_totals(FILE *f);
void rg_stream_cli_progress(rg_progress_t *bar, rg_uint_t got,
    rg_uint_t total, rg_uint_t came, int final);
void rg_stream_cli_tick(evutil_socket_t fd, short what, void *arg);
void rg_stream_cli_say_clear(rg_progress_t *bar);
void rg_stream_cli_out_clear(rg_progress_t *bar, FILE *out);
int rg_stream_follow(rg_stream_client_t *c, FILE *out, json_t *want,
    rg_uint_t *got, rg_uint_t total, char *last, size_t lastlen,
    rg_progress_t *bar, rg_stream_watch_t *wt);

/* rg_stream_cli_watch.c */
rg_int_t rg_stream_watch_add(rg_stream_watch_t *wt, const char *id,
    char *text, const char *entry, rg_uint_t lineno);
void rg_stream_watch_free(rg_stream_watch_t *wt);
void rg_stream_watch_look(rg_stream_client_t *c, rg_stream_watch_t *wt,
    json_t *want, rg_progress_t *bar);
rg_int_t rg_stream_cli_enqueue(rg_stream_client_t *c, const char *id,
    const char *text, const char *mark, const char *ttl, char *entry,
    size_t size, char *err, size_t errlen);

/* the commands */
int rg_submit_main(rg_cycle_t *cycle, void *opts, const char *arg);
int rg_results_main(rg_cycle_t *cycle, void *opts, const char *arg);
int rg_queue_main(rg_cycle_t *cycle, void *opts, const char *arg);


#endif /* RG_STREAM_CLI_INT_H */
