/* reagent.c: main() and the command line. Reads the global options (-c,
 * -t, -V, -q, -h), builds the cycle and runs the chosen command, which
 * one of the parts brings (rg_part.h: `run`, `replay`, `batch`): the
 * command's own options are its, read here one word at a time before the
 * configuration is. A client of serve (RG_CLI_CLIENT: submit, queue, -s…)
 * gets a cycle read for a client; the core's own commands (directives)
 * read no configuration. `reagent -t` tests the configuration, `-V`
 * prints the build. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_secret.h>
#include <rg_directives.h>
#include <signal.h>
#include <event2/event.h>
#include <curl/curl.h>
#include <jansson.h>
#include <hiredis/hiredis.h>
#include <msgpack.h>
#if (RG_MIMALLOC)
#include <mimalloc.h>
#endif


/* the core's commands: they read no configuration, so need no cycle */
static const rg_cli_t *const  rg_core_cli[] = {
    &rg_directives_cli,
    NULL
};


static rg_uint_t
rg_core_command(const rg_cli_t *cmd)
{
    const rg_cli_t *const  *c;

    for (c = rg_core_cli; *c; c++) {
        if (*c == cmd) {
            return 1;
        }
    }

    return 0;
}


static void
rg_usage(FILE *f)
{
    rg_uint_t              i;
    const rg_cli_t *const *c;

    fprintf(f,
"usage: reagent [-c FILE] [-t] [-V] [-q] [-h] [-s SIGNAL] COMMAND [ARGS]\n"
"\n"
"  -c FILE             configuration file (default: the first that exists\n"
"                      of " RG_CONF_PATH " and\n"
"                      conf/reagent.conf; -V and -t say which was used)\n"
"  -t                  test the configuration and exit\n"
"  -V, --version       print the version, build options and the\n"
"                      configuration file in use\n"
"  -q                  log only errors on stderr\n"
"  -s SIGNAL           signal the master of reagent serve: reload, reopen,\n"
"                      stop or quit (through its pid file)\n"
"  -h, --help          print this\n"
"\n"
"commands:\n");

    for (c = rg_core_cli; *c; c++) {
        fputs((*c)->usage, f);
    }

    for (i = 0; rg_parts[i]; i++) {
        for (c = rg_parts[i]->cli; c && *c; c++) {
            fputs((*c)->usage, f);
        }
    }

    for (i = 0; rg_parts[i]; i++) {
        if (rg_parts[i]->help) {
            fprintf(f, "\n%s", rg_parts[i]->help);
        }
    }
}


static void
rg_show_version(void)
{
    rg_uint_t  i;

    printf("reagent version %s\n", RG_VERSION);
    printf("built with %s\n", RG_CC);
    printf("configure arguments: %s\n", RG_CONFIGURE_ARGS);
    printf("libraries: libevent %s, libcurl %s, jansson %s, msgpack-c %s, "
           "hiredis %d.%d.%d\n", event_get_version(),
           curl_version_info(CURLVERSION_NOW)->version, JANSSON_VERSION,
           msgpack_version(), HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
#if (RG_MIMALLOC)
    printf("allocator: mimalloc %d.%d.%d (pages given back %ld ms after "
           "they empty)\n", mi_version() / 100, mi_version() / 10 % 10,
           mi_version() % 10, mi_option_get(mi_option_decommit_delay));
#else
    printf("allocator: the C library's malloc\n");
#endif

    for (i = 0; rg_parts[i]; i++) {
        if (rg_parts[i]->version) {
            rg_parts[i]->version(stdout);
        }
    }
}


static const char *
rg_default_conf(void)
{
    if (access(RG_CONF_PATH, R_OK) == 0) {
        return RG_CONF_PATH;
    }

    return "conf/reagent.conf";
}


/* which configuration a command would read, for -V */
static void
rg_show_conf(const char *conf)
{
    if (conf) {
        printf("configuration file: %s (-c)\n", conf);
        return;
    }

    conf = rg_default_conf();

    if (access(conf, R_OK) != 0) {
        printf("configuration file: none found (looked for %s, then "
               "conf/reagent.conf; -c FILE names one)\n", RG_CONF_PATH);
        return;
    }

    printf("configuration file: %s (the first found of %s and "
           "conf/reagent.conf)\n", conf, RG_CONF_PATH);
}


/* the command called name, from the parts' tables */
static const rg_cli_t *
rg_command(const char *name)
{
    rg_uint_t              i;
    const rg_cli_t *const *c;

    for (c = rg_core_cli; *c; c++) {
        if (strcmp((*c)->name, name) == 0) {
            return *c;
        }
    }

    for (i = 0; rg_parts[i]; i++) {
        for (c = rg_parts[i]->cli; c && *c; c++) {
            if (strcmp((*c)->name, name) == 0) {
                return *c;
            }
        }
    }

    return NULL;
}


/* "run, replay or batch" */
static void
rg_commands(char *buf, size_t size)
{
    size_t                 len;
    rg_uint_t              i, n, k;
    const rg_cli_t *const *c;

    n = 0;
    for (c = rg_core_cli; *c; c++) {
        n++;
    }

    for (i = 0; rg_parts[i]; i++) {
        for (c = rg_parts[i]->cli; c && *c; c++) {
            n++;
        }
    }

    buf[0] = '\0';
    len = 0;
    k = 0;

    for (c = rg_core_cli; *c && len < size; c++) {
        len += snprintf(buf + len, size - len, "%s%s",
                        k == 0 ? "" : k + 1 == n ? " or " : ", ",
                        (*c)->name);
        k++;
    }

    for (i = 0; rg_parts[i]; i++) {
        for (c = rg_parts[i]->cli; c && *c && len < size; c++) {
            len += snprintf(buf + len, size - len, "%s%s",
                            k == 0 ? "" : k + 1 == n ? " or " : ", ",
                            (*c)->name);
            k++;
        }
    }
}


/* mimalloc gives a page back to the kernel 25 ms after it empties. When
 * thousands of sessions end and start, pages empty and fill again all the
 * time, and each madvise flushes the TLB and the next touch faults the
 * page in again: a fifth of the CPU per model call at 10,000 sessions
 * (make bench). A second still returns the memory after a peak.
 * MIMALLOC_DECOMMIT_DELAY in the environment has the last word. */
static void
rg_malloc_tune(void)
{
#if (RG_MIMALLOC)
    if (getenv("MIMALLOC_DECOMMIT_DELAY") == NULL) {
        mi_option_set(mi_option_decommit_delay, 1000);
    }
#endif
}


int
main(int argc, char **argv)
{
    int              i, n, rc, test, quiet;
    char             errmsg[512], names[256];
    void            *opts;
    const char      *conf, *arg;
    rg_log_t         log;
    rg_cycle_t      *cycle;
    const rg_cli_t  *cmd;

    signal(SIGPIPE, SIG_IGN);

    rg_malloc_tune();
    rg_parts_count();

    conf = NULL;
    cmd = NULL;
    opts = NULL;
    test = 0;
    quiet = 0;
    arg = NULL;
    rc = 1;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "-c") == 0 && i + 1 < argc) {
            conf = argv[++i];

        } else if (strcmp(a, "-t") == 0) {
            test = 1;

        } else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
            /* the file it would read, also when -c comes after -V */
            for (n = i + 1; n + 1 < argc; n++) {
                if (strcmp(argv[n], "-c") == 0) {
                    conf = argv[n + 1];
                    break;
                }
            }

            rg_show_version();
            rg_show_conf(conf);
            rc = 0;
            goto done;

        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            rg_usage(stdout);
            rc = 0;
            goto done;

        } else if (strcmp(a, "-q") == 0) {
            quiet = 1;

        } else if (strcmp(a, "-s") == 0 && i + 1 < argc && cmd == NULL) {
            /* reagent -s reload: the signal command */
            cmd = rg_command("signal");
            if (cmd == NULL) {
                fprintf(stderr, "reagent: -s: this build has no serve\n");
                goto done;
            }
            arg = argv[++i];

        } else if (cmd && cmd->option
                   && (n = cmd->option(opts, argc, argv, i)) != 0)
        {
            if (n < 0) {
                goto done;
            }
            i += n - 1;

        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "reagent: unknown option \"%s\"%s\n", a,
                    cmd ? "" : " (see reagent -h)");
            goto done;

        } else if (cmd == NULL) {
            cmd = rg_command(a);
            if (cmd == NULL) {
                rg_commands(names, sizeof(names));
                fprintf(stderr, "reagent: unknown command \"%s\" "
                        "(%s; see reagent -h)\n", a, names);
                goto done;
            }

            opts = calloc(1, cmd->opts_size ? cmd->opts_size : 1);
            if (opts == NULL) {
                fprintf(stderr, "reagent: out of memory\n");
                goto done;
            }

        } else if (arg == NULL) {
            arg = a;

        } else {
            fprintf(stderr, "reagent: unexpected argument \"%s\" (quote the "
                    "task as one argument)\n", a);
            goto done;
        }
    }

    if (conf == NULL) {
        conf = rg_default_conf();
    }

    if (!test && cmd == NULL) {
        rg_usage(stderr);
        goto done;
    }

    if (!test && arg == NULL && cmd->needs) {
        fprintf(stderr, "reagent: %s needs %s\n", cmd->name, cmd->needs);
        goto done;
    }

    if (!test && rg_core_command(cmd)) {
        rc = cmd->main(NULL, opts, arg);
        goto done;
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

    /* a client of serve reads only what it uses and says its errors on
     * the terminal (the daemon's warnings are for error_log and -t);
     * -t checks everything */
    if (!test && (cmd->flags & RG_CLI_CLIENT)) {
        log.log_level = RG_LOG_ERR;
        cycle = rg_cycle_create_client(conf, &log, errmsg, sizeof(errmsg));

    } else {
        cycle = rg_cycle_create(conf, NULL, &log, errmsg, sizeof(errmsg));
    }

    if (cycle == NULL) {
        if (test) {
            fprintf(stderr, "reagent: configuration file %s test failed\n",
                    conf);
        }
        goto done;
    }

    if (test) {
        fprintf(stderr, "reagent: the configuration file %s syntax is ok\n",
                conf);

        rc = 0;
        for (i = 0; rg_parts[i]; i++) {
            if (rg_parts[i]->check && rg_parts[i]->check(cycle) != RG_OK) {
                rc = 1;
            }
        }

        fprintf(stderr, "reagent: configuration file %s test %s\n", conf,
                rc ? "failed" : "is successful");
        rg_cycle_destroy(cycle);
        goto done;
    }

    if (quiet && cycle->log->log_level > RG_LOG_ERR) {
        cycle->log->log_level = RG_LOG_ERR;
    }

    rc = cmd->main(cycle, opts, arg);

    rg_cycle_destroy(cycle);

    for (i = 0; rg_parts[i]; i++) {
        if (rg_parts[i]->exit_process) {
            rg_parts[i]->exit_process();
        }
    }

    rg_secret_reset();

done:

    free(opts);

    return rc;
}
