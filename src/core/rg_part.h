/* rg_part.h: the parts of reagent, as nginx's core modules. A part has
 * a name, its directives, its configuration (created before the file is
 * read, completed and checked once it was), its runtime in each engine
 * (built when a process starts working, torn down when it ends) and the
 * commands it brings to the command line. The one list of parts is
 * rg_parts[], written by configure into the build folder (rg_parts.c) in
 * start order; the cycle and the engine hold each part's configuration
 * and runtime at the part's index and know no part by name. */

#ifndef RG_PART_H
#define RG_PART_H

#include <rg_config.h>


/* A command of the command line: `reagent NAME [options] ARG`. Its
 * options are read before the configuration, one word at a time, into a
 * struct of opts_size bytes that starts zeroed (zero means "not given");
 * main() then runs it on the cycle. */

/* a client of a running `reagent serve` and of its Redis (submit, queue,
 * status, -s…): its cycle is read with cycle->client set, so it needs
 * only what it uses (the store's address and password, the queue, the
 * pid file), none of the daemon's secrets; its engine holds only the
 * parts marked client, and it logs its errors on stderr, never in
 * error_log */
#define RG_CLI_CLIENT  0x01

typedef struct {
    const char         *name;         /* "run", "batch" */
    const char         *usage;        /* its lines for -h */
    const char         *needs;        /* its argument, for "NAME needs …" */
    size_t              opts_size;

    /* argv[i] is a word after the command: how many words of argv it
     * took as one of its options (1 or 2), 0 when it is none of its,
     * -1 when it is wrong (and it said why on stderr) */
    int               (*option)(void *opts, int argc, char **argv, int i);

    /* runs the command with its argument: the process's exit code */
    int               (*main)(rg_cycle_t *cycle, void *opts, const char *arg);

    rg_uint_t           flags;        /* RG_CLI_CLIENT */
} rg_cli_t;


struct rg_part_s {
    rg_uint_t           index;        /* its slot in cycle->conf, e->ctx */
    const char         *name;         /* "core", "llm", "agent", ... */
    rg_command_t       *commands;     /* its directives, any context */

    /* its configuration: created before the file is read (NULL: none),
     * then completed, defaults filled in and checked against the whole
     * file, in the order of the parts; an error is RG_CONF_ERROR with
     * rg_cycle_error() said */
    void             *(*create_conf)(rg_cycle_t *cycle);
    char             *(*init_conf)(rg_cycle_t *cycle, void *conf);

    /* its runtime in an engine, built in the order of the parts and
     * taken down in reverse; exit_worker is called for every part whose
     * init_worker was, also when that failed halfway */
    rg_int_t          (*init_worker)(rg_engine_t *e);
    void              (*exit_worker)(rg_engine_t *e);

    /* in the master of `reagent serve`, once the configuration was read:
     * what its workers inherit (listening sockets); RG_OK when it gives
     * the workers work to do, RG_DECLINED when it has none, RG_ERROR
     * with the reason in err (file:line) */
    rg_int_t          (*init_master)(rg_cycle_t *cycle, char *err,
                                     size_t len);
    /* a worker stops taking work (QUIT, a reload): what runs finishes */
    void              (*drain_worker)(rg_engine_t *e);
    /* USR1 in a worker of serve, after the error log: the files its
     * runtime writes are opened again (logrotate moved them) */
    void              (*reopen_worker)(rg_engine_t *e);

    /* what `reagent -t` checks beyond the file (a server that must be
     * reachable): RG_OK, or RG_ERROR after saying why on stderr */
    rg_int_t          (*check)(rg_cycle_t *cycle);

    /* the context bit of the block it owns (RG_LLM_CONF…), 0: none, and
     * the block as a user writes it ("llm NAME { }"), for errors that
     * say where a directive belongs */
    rg_uint_t           conf_ctx;
    const char         *conf_block;

    /* its runtime is built for a client command too (RG_CLI_CLIENT: the
     * store's); the others serve sessions and are not */
    rg_uint_t           client;

    const rg_cli_t *const *cli;       /* its commands, NULL-ended, or NULL */
    const char         *help;         /* its paragraph of -h, or NULL */
    void              (*version)(FILE *f);  /* its lines for -V, or NULL */
    void              (*exit_process)(void);  /* once, at the very end */
};


/* written by configure (rg_parts.c): every part, in start order */
extern rg_part_t  *rg_parts[];

/* numbers the parts (once) and says how many there are */
rg_uint_t rg_parts_count(void);

#endif /* RG_PART_H */
