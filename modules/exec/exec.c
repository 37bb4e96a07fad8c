/* exec.c: the "exec" tool module: runs a program, without a shell,
 * confined.
 *
 * Owns the reading of the argv array (through the host's arg_array_*()
 * readers: it parses no JSON, and a host without them is refused at init),
 * the program's lookup in PATH, its confinement, the supervision of
 * everything it starts, and the text of the answer:
 *
 *     exit status 0
 *     --- stdout ---
 *     ...
 *     --- stderr ---
 *     ...
 *
 * Each call forks a supervisor process: a subreaper (PR_SET_CHILD_
 * SUBREAPER), so that every process the program leaves behind, also one
 * that called setsid(), becomes its child; it forks the program, reports
 * its exit status over a pipe, and then kills what is left of the tree
 * (and all of it when the worker closes its control pipe: a timeout, a
 * cancelled call, a worker that died). The worker watches the pipes and
 * the supervisor on the reactor (host->io_add(), child_watch()), so no
 * thread waits for a program; a host without them (an isolated helper)
 * gets the same run waited for with poll(). Between fork() and execve()
 * only system calls run: the worker has threads.
 *
 * The program gets stdin from /dev/null, its stdout and stderr captured,
 * a small environment (PATH, HOME and TMPDIR set to the root, LANG), not
 * the worker's, which may hold API keys, and on Linux:
 *
 *   - no_new_privs, resource limits (CPU time, address space, file size,
 *     processes; no core files);
 *   - Landlock rules: read, write and execute below `root`, read and
 *     execute below the system paths programs need (`read_only`), nothing
 *     else; where the ABI has them, no signals to and no abstract sockets
 *     of processes outside, and no TCP with `network off`;
 *   - with `network off;`, a network namespace of its own (a user
 *     namespace too when the worker is not root); a kernel that allows
 *     neither makes init fail rather than run it connected.
 *
 * A kernel without Landlock is said so at init (a warning): the program
 * then runs with the worker's file rights. The tool is RG_TOOL_DANGEROUS
 * in any case.
 *
 *     module exec { root /srv/work; timeout 10s; max_output 16k;
 *                   allow ls cat grep; network off;
 *                   read_only /opt/tools; max_memory 1g; } */

#include "exec.h"


static const rg_tool_directive_t  rg_exec_directives[] = {
    { "root", 1, 1, rg_exec_set_root },
    { "timeout", 1, 1, rg_exec_set_timeout },
    { "max_output", 1, 1, rg_exec_set_max_output },
    { "allow", 1, 64, rg_exec_set_allow },
    { "read_only", 1, 64, rg_exec_set_read_only },
    { "network", 1, 1, rg_exec_set_network },
    { "max_cpu", 1, 1, rg_exec_set_max_cpu },
    { "max_memory", 1, 1, rg_exec_set_max_memory },
    { "max_file_size", 1, 1, rg_exec_set_max_file_size },
    { "max_processes", 1, 1, rg_exec_set_max_processes },
    { NULL, 0, 0, NULL }
};


static const rg_tool_t  rg_exec_tools[] = {
    { "exec",
      "Run a program with arguments, without a shell (no pipes, globs, "
      "redirections or $VARS: run [\"sh\", \"-c\", \"...\"] for those if "
      "sh is allowed). stdin is empty; returns the exit status, then stdout "
      "and stderr, each capped. The program may read and write only below "
      "its working root (and read the system's programs and libraries), "
      "within CPU, memory and file size limits; it is killed, with every "
      "process it started, when it runs past the timeout.",
      "{\"type\":\"object\","
       "\"properties\":{"
        "\"argv\":{\"type\":\"array\",\"minItems\":1,"
         "\"items\":{\"type\":\"string\"},"
         "\"description\":\"The program and its arguments, one string "
          "each, such as [\\\"grep\\\", \\\"-n\\\", \\\"error\\\", "
          "\\\"main.c\\\"]\","
         "\"examples\":[[\"ls\",\"-l\"]]},"
        "\"cwd\":{\"type\":\"string\","
         "\"description\":\"Working directory relative to the exec root, "
          "default the root\"}},"
       "\"required\":[\"argv\"]}",
      RG_TOOL_DANGEROUS | RG_TOOL_SIDE_EFFECT, 0, rg_exec_start,
      rg_exec_cancel },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


RG_TOOL_EXPORT
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "exec",
    rg_exec_directives,
    rg_exec_create_conf,
    rg_exec_init,
    rg_exec_exit,
    rg_exec_tools
};


/* configuration */


/* configuration */


const char *
rg_exec_set_root(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    rg_exec_conf_t  *ecf;

    (void) host;
    (void) argc;

    ecf = conf;

    if (ecf->root != NULL) {
        return "is duplicate";
    }

    if (argv[0][0] == '\0') {
        return "must not be empty";
    }

    ecf->root = strdup(argv[0]);

    return ecf->root ? NULL : "cannot be stored: out of memory";
}


/* timeout TIME in the host's units: "500ms", "10s", "1m30s"; a bare
 * number is seconds, as everywhere in the configuration */
const char *
rg_exec_set_timeout(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    uint64_t         ms;
    rg_exec_conf_t  *ecf;

    (void) argc;

    ecf = conf;

    if (ecf->timeout != 0) {
        return "is duplicate";
    }

    if (!rg_exec_host_has(host, parse_msec)) {
        return "needs a newer reagent (no parse_msec in the host table)";
    }

    if (host->parse_msec(argv[0], &ms) != 0 || ms == 0
        || ms > RG_EXEC_TIMEOUT_MAX)
    {
        return "must be a time from 1ms to 1h, such as 500ms or 10s (a bare "
               "number is seconds)";
    }

    ecf->timeout = ms;

    return NULL;
}


/* max_output SIZE in the host's units: bytes, or with a k, m or g suffix */
const char *
rg_exec_set_max_output(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    size_t           n;
    rg_exec_conf_t  *ecf;

    (void) argc;

    ecf = conf;

    if (ecf->max_output != 0) {
        return "is duplicate";
    }

    if (!rg_exec_host_has(host, parse_size)) {
        return "needs a newer reagent (no parse_size in the host table)";
    }

    if (host->parse_size(argv[0], &n) != 0 || n == 0
        || n > 16 * 1024 * 1024)
    {
        return "must be a size from 1 to 16m, such as 16384 or 16k";
    }

    ecf->max_output = n;

    return NULL;
}


/* allow NAME...; several lines add up */
const char *
rg_exec_set_allow(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    int              i;
    char           **allow;
    rg_exec_conf_t  *ecf;

    (void) host;

    ecf = conf;

    for (i = 0; i < argc; i++) {
        if (argv[i][0] == '\0') {
            return "must name programs, such as \"ls\" or \"/usr/bin/git\"";
        }
    }

    allow = realloc(ecf->allow, (ecf->nallow + (size_t) argc)
                                * sizeof(char *));
    if (allow == NULL) {
        return "cannot be stored: out of memory";
    }

    ecf->allow = allow;

    for (i = 0; i < argc; i++) {
        allow[ecf->nallow] = strdup(argv[i]);

        if (allow[ecf->nallow] == NULL) {
            return "cannot be stored: out of memory";
        }

        ecf->nallow++;
    }

    return NULL;
}


/* read_only PATH...; several lines add up: directories (or files) below
 * which programs may read and execute, besides the system's own */
const char *
rg_exec_set_read_only(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    int              i;
    rg_exec_conf_t  *ecf;

    (void) host;

    ecf = conf;

    for (i = 0; i < argc; i++) {
        if (argv[i][0] != '/') {
            return "must name absolute paths, such as /opt/tools";
        }

        if (ecf->nread_only == RG_EXEC_MAX_RO) {
            return "names too many paths (at most 64)";
        }

        ecf->read_only[ecf->nread_only] = strdup(argv[i]);
        if (ecf->read_only[ecf->nread_only] == NULL) {
            return "cannot be stored: out of memory";
        }

        ecf->nread_only++;
    }

    return NULL;
}


/* network on|off */
const char *
rg_exec_set_network(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    rg_exec_conf_t  *ecf;

    (void) host;
    (void) argc;

    ecf = conf;

    if (ecf->network != -1) {
        return "is duplicate";
    }

    if (strcmp(argv[0], "on") == 0) {
        ecf->network = 1;

    } else if (strcmp(argv[0], "off") == 0) {
        ecf->network = 0;

    } else {
        return "must be \"on\" or \"off\"";
    }

    return NULL;
}


/* max_cpu TIME: CPU seconds of each process (RLIMIT_CPU), rounded up */
const char *
rg_exec_set_max_cpu(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    uint64_t         ms;
    rg_exec_conf_t  *ecf;

    (void) argc;

    ecf = conf;

    if (ecf->max_cpu != 0) {
        return "is duplicate";
    }

    if (!rg_exec_host_has(host, parse_msec)) {
        return "needs a newer reagent (no parse_msec in the host table)";
    }

    if (host->parse_msec(argv[0], &ms) != 0 || ms == 0
        || ms > RG_EXEC_TIMEOUT_MAX)
    {
        return "must be a time from 1s to 1h, such as 10s";
    }

    ecf->max_cpu = (ms + 999) / 1000;

    return NULL;
}


const char *
rg_exec_set_size(rg_tool_host_t *host, uint64_t *field, const char *arg)
{
    size_t  n;

    if (*field != 0) {
        return "is duplicate";
    }

    if (!rg_exec_host_has(host, parse_size)) {
        return "needs a newer reagent (no parse_size in the host table)";
    }

    if (host->parse_size(arg, &n) != 0 || n < 4096) {
        return "must be a size of 4k or more, such as 64m or 1g";
    }

    *field = n;

    return NULL;
}


/* max_memory SIZE: the address space of each process (RLIMIT_AS) */
const char *
rg_exec_set_max_memory(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    (void) argc;

    return rg_exec_set_size(host, &((rg_exec_conf_t *) conf)->max_memory,
                            argv[0]);
}


/* max_file_size SIZE: the largest file a process may write
 * (RLIMIT_FSIZE) */
const char *
rg_exec_set_max_file_size(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    (void) argc;

    return rg_exec_set_size(host, &((rg_exec_conf_t *) conf)->max_fsize,
                            argv[0]);
}


/* max_processes N: RLIMIT_NPROC, which counts every process of the user */
const char *
rg_exec_set_max_processes(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    char            *end;
    unsigned long    n;
    rg_exec_conf_t  *ecf;

    (void) host;
    (void) argc;

    ecf = conf;

    if (ecf->max_procs != 0) {
        return "is duplicate";
    }

    errno = 0;
    n = strtoul(argv[0], &end, 10);

    if (argv[0][0] < '0' || argv[0][0] > '9' || *end != '\0' || errno != 0
        || n == 0 || n > 1000000)
    {
        return "must be a number from 1 to 1000000";
    }

    ecf->max_procs = n;

    return NULL;
}


void *
rg_exec_create_conf(rg_tool_host_t *host)
{
    rg_exec_conf_t  *ecf;

    (void) host;

    ecf = calloc(1, sizeof(rg_exec_conf_t));
    if (ecf) {
        ecf->network = -1;
        ecf->ruleset = -1;
    }

    return ecf;
}


/* Checks the host table, resolves the root, fixes the PATH and the
 * environment the children get, and builds the confinement (the Landlock
 * ruleset, the network namespace check), here on the main thread: start()
 * reads no environment variable and opens no system path. */
int
rg_exec_init(rg_tool_host_t *host, void *conf)
{
    char            *real, err[128];
    const char      *path;
    struct stat      st;
    rg_exec_conf_t  *ecf;

    ecf = conf;

    if (!rg_exec_host_has(host, arg_array_len)
        || !rg_exec_host_has(host, arg_array_string))
    {
        host->log(host, RG_TOOL_LOG_ERR, "exec: this reagent has no "
                  "arg_array_len() and arg_array_string() for modules; "
                  "upgrade reagent");
        return RG_TOOL_ERROR;
    }

    if (!rg_exec_host_has(host, parse_size)
        || !rg_exec_host_has(host, parse_msec))
    {
        host->log(host, RG_TOOL_LOG_ERR, "exec: this reagent has no "
                  "parse_size() and parse_msec() for modules; upgrade "
                  "reagent");
        return RG_TOOL_ERROR;
    }

    if (ecf->root == NULL) {
        host->log(host, RG_TOOL_LOG_ERR, "exec: the \"root\" directive is "
                  "required: add \"root /path/to/workdir;\" to "
                  "\"module exec\"");
        return RG_TOOL_ERROR;
    }

    real = realpath(ecf->root, NULL);

    if (real == NULL || stat(real, &st) == -1) {
        host->log(host, RG_TOOL_LOG_ERR, "exec: root \"%s\": %s", ecf->root,
                  rg_exec_strerror(errno, err, sizeof(err)));
        free(real);
        return RG_TOOL_ERROR;
    }

    if (!S_ISDIR(st.st_mode)) {
        host->log(host, RG_TOOL_LOG_ERR, "exec: root \"%s\" is not a "
                  "directory", ecf->root);
        free(real);
        return RG_TOOL_ERROR;
    }

    free(ecf->root);
    ecf->root = real;
    ecf->root_len = strlen(real);

    if (ecf->timeout == 0) {
        ecf->timeout = RG_EXEC_TIMEOUT;
    }

    if (ecf->max_output == 0) {
        ecf->max_output = RG_EXEC_MAX_OUTPUT;
    }

    if (ecf->network == -1) {
        ecf->network = 1;
    }

    if (ecf->max_cpu == 0) {
        ecf->max_cpu = (ecf->timeout + 999) / 1000;
    }

    if (ecf->max_memory == 0) {
        ecf->max_memory = RG_EXEC_MAX_MEMORY;
    }

    if (ecf->max_fsize == 0) {
        ecf->max_fsize = RG_EXEC_MAX_FSIZE;
    }

    if (ecf->max_procs == 0) {
        ecf->max_procs = RG_EXEC_MAX_PROCS;
    }

    path = getenv("PATH");
    if (path == NULL || path[0] == '\0') {
        path = RG_EXEC_PATH;
    }

    ecf->path = strdup(path);

    if (ecf->path == NULL
        || asprintf(&ecf->env[0], "PATH=%s", path) == -1
        || asprintf(&ecf->env[1], "HOME=%s", ecf->root) == -1
        || asprintf(&ecf->env[2], "TMPDIR=%s", ecf->root) == -1
        || (ecf->env[3] = strdup("LANG=C.UTF-8")) == NULL)
    {
        host->log(host, RG_TOOL_LOG_ERR, "exec: out of memory");
        return RG_TOOL_ERROR;
    }

    if (rg_exec_landlock_init(host, ecf) != 0
        || rg_exec_network_init(host, ecf) != 0)
    {
        return RG_TOOL_ERROR;
    }

    host->log(host, RG_TOOL_LOG_DEBUG, "exec: root \"%s\", timeout %llums, "
              "max_output %zu, %zu allowed programs, landlock ABI %d, "
              "network %s, max_cpu %llus, max_memory %llu, max_file_size "
              "%llu, max_processes %llu", ecf->root,
              (unsigned long long) ecf->timeout, ecf->max_output,
              ecf->nallow, ecf->landlock, ecf->network ? "on" : "off",
              (unsigned long long) ecf->max_cpu,
              (unsigned long long) ecf->max_memory,
              (unsigned long long) ecf->max_fsize,
              (unsigned long long) ecf->max_procs);

    return RG_TOOL_OK;
}


void
rg_exec_exit(rg_tool_host_t *host, void *conf)
{
    size_t           i;
    rg_exec_conf_t  *ecf;

    (void) host;

    ecf = conf;

    if (ecf == NULL) {
        return;
    }

    for (i = 0; i < ecf->nallow; i++) {
        free(ecf->allow[i]);
    }

    for (i = 0; ecf->env[i] != NULL; i++) {
        free(ecf->env[i]);
    }

    for (i = 0; i < ecf->nread_only; i++) {
        free(ecf->read_only[i]);
    }

    if (ecf->ruleset != -1 && ecf->ruleset_pid == getpid()) {
        close(ecf->ruleset);
    }

    free(ecf->allow);
    free(ecf->path);
    free(ecf->root);
    free(ecf);
}


/* the tool */


int
rg_exec_start(rg_tool_call_t *call)
{
    int             rc;
    char            err[256], prog[PATH_MAX], *cwd;
    rg_exec_argv_t  a;

    /* init() made sure the host has arg_array_*() */

    if (rg_exec_argv(call, &a, err, sizeof(err)) != 0) {
        call->host->fail(call, "%s", err);
        return RG_TOOL_OK;
    }

    cwd = NULL;
    rc = RG_TOOL_OK;

    if (a.argv[0][0] == '\0') {
        call->host->fail(call, "argv[0] is empty; it names the program, "
                         "such as \"ls\"");

    } else if (rg_exec_allowed(call, a.argv[0]) == 0
               && (cwd = rg_exec_cwd(call)) != NULL
               && rg_exec_lookup(call, a.argv[0], prog, sizeof(prog)) == 0)
    {
        rc = rg_exec_run(call, prog, a.argv, cwd);
    }

    free(cwd);
    free(a.argv);
    free(a.buf);

    return rc;
}


/* the call ends early (its turn ended): the supervisor kills the program
 * and all it started, and the host reaps the supervisor */
void
rg_exec_cancel(rg_tool_call_t *call)
{
    rg_exec_run_t  *r;

    r = call->ctx;
    call->ctx = NULL;

    if (r != NULL) {
        rg_exec_free(r);
    }
}


/* argv through the host's arg_array_*(): the strings are copied into one
 * buffer, each NUL-ended, so that they can be handed to execve().
 * 0, or -1 with a message in err. */
int
rg_exec_argv(rg_tool_call_t *call, rg_exec_argv_t *a, char *err,
    size_t err_len)
{
    int          b;
    char        *p;
    size_t       n, i, len, total;
    double       d;
    const char  *s;

    memset(a, 0, sizeof(rg_exec_argv_t));

    if (call->host->arg_array_len(call, "argv", &n) != 0) {
        if (call->host->arg_string(call, "argv", &s, &len) == 0
            || call->host->arg_number(call, "argv", &d) == 0
            || call->host->arg_bool(call, "argv", &b) == 0)
        {
            snprintf(err, err_len, "argument 'argv' must be an array of "
                     "strings, " RG_EXEC_EXAMPLE);

        } else {
            snprintf(err, err_len, "missing argument 'argv' (an array of "
                     "strings, " RG_EXEC_EXAMPLE ")");
        }

        return -1;
    }

    if (n == 0) {
        snprintf(err, err_len, "argument 'argv' is empty; it needs at least "
                 "the program, " RG_EXEC_EXAMPLE);
        return -1;
    }

    if (n > RG_EXEC_MAX_ARGS) {
        snprintf(err, err_len, "argument 'argv' has more than %d items",
                 RG_EXEC_MAX_ARGS);
        return -1;
    }

    total = 0;

    for (i = 0; i < n; i++) {
        if (call->host->arg_array_string(call, "argv", i, &s, &len) != 0) {
            snprintf(err, err_len, "argv[%zu] is not a string; every item "
                     "of 'argv' is one, " RG_EXEC_EXAMPLE, i);
            return -1;
        }

        if (memchr(s, '\0', len) != NULL) {
            snprintf(err, err_len, "argv[%zu] contains a NUL byte "
                     "(\\u0000), which no program argument can hold", i);
            return -1;
        }

        total += len + 1;
    }

    a->argv = malloc((n + 1) * sizeof(char *));
    a->buf = malloc(total);

    if (a->argv == NULL || a->buf == NULL) {
        free(a->argv);
        free(a->buf);
        memset(a, 0, sizeof(rg_exec_argv_t));
        snprintf(err, err_len, "out of memory");
        return -1;
    }

    p = a->buf;

    for (i = 0; i < n; i++) {
        if (call->host->arg_array_string(call, "argv", i, &s, &len) != 0
            || (size_t) (p - a->buf) + len + 1 > total)
        {
            free(a->argv);
            free(a->buf);
            memset(a, 0, sizeof(rg_exec_argv_t));
            snprintf(err, err_len, "argv[%zu] is not a string", i);
            return -1;
        }

        memcpy(p, s, len);
        p[len] = '\0';
        a->argv[i] = p;
        p += len + 1;
    }

    a->argv[n] = NULL;
    a->argc = n;

    return 0;
}


/* checks */


/* argv[0] against the allow-list, when there is one: the very string */
int
rg_exec_allowed(rg_tool_call_t *call, const char *name)
{
    char             shown[RG_EXEC_SHOWN + 8];
    size_t           i;
    rg_exec_buf_t    list;
    rg_exec_conf_t  *ecf;

    ecf = call->conf;

    if (ecf->nallow == 0) {
        return 0;
    }

    for (i = 0; i < ecf->nallow; i++) {
        if (strcmp(ecf->allow[i], name) == 0) {
            return 0;
        }
    }

    memset(&list, 0, sizeof(list));

    for (i = 0; i < ecf->nallow && i < 32; i++) {
        rg_exec_buf_printf(&list, "%s%s", i ? ", " : "", ecf->allow[i]);
    }

    rg_exec_show(name, strlen(name), shown, sizeof(shown));

    call->host->fail(call, "program %s is not allowed; the allowed programs "
                     "are: %s", shown, list.oom ? "?" : list.data);

    free(list.data);

    return -1;
}


/* The working directory: the root, or `cwd` under it. The program can go
 * outside the root only where Landlock lets it (nowhere but the system's
 * read-only paths), so this is a convenience with the same rules as the
 * fs module's paths: realpath() and a prefix check.
 * The real path, malloc()ed, or NULL after fail(). */
char *
rg_exec_cwd(rg_tool_call_t *call)
{
    char            *full, *real, shown[RG_EXEC_SHOWN + 8], text[128];
    size_t           len, i, n;
    double           d;
    struct stat      st;
    const char      *s;
    rg_exec_conf_t  *ecf;

    ecf = call->conf;

    if (call->host->arg_string(call, "cwd", &s, &len) != 0 || len == 0) {
        if (call->host->arg_number(call, "cwd", &d) == 0) {
            call->host->fail(call, "argument 'cwd' must be a string, such as "
                             "\"src\"");
            return NULL;
        }

        real = strdup(ecf->root);
        if (real == NULL) {
            call->host->fail(call, "out of memory");
        }

        return real;
    }

    rg_exec_show(s, len, shown, sizeof(shown));

    if (strlen(s) != len) {
        call->host->fail(call, "cwd %s contains a NUL byte; send a plain "
                         "relative path such as \"src\"", shown);
        return NULL;
    }

    if (s[0] == '/') {
        call->host->fail(call, "cwd must be relative to the exec root, such "
                         "as \"src\", not %s", shown);
        return NULL;
    }

    for (i = 0; i < len; i += n + 1) {
        n = strcspn(s + i, "/");

        if (n == 2 && s[i] == '.' && s[i + 1] == '.') {
            call->host->fail(call, "cwd %s contains \"..\"; it stays inside "
                             "the exec root: name it from the root, such as "
                             "\"src\"", shown);
            return NULL;
        }
    }

    if (asprintf(&full, "%s/%s", ecf->root, s) == -1) {
        call->host->fail(call, "out of memory");
        return NULL;
    }

    real = realpath(full, NULL);
    free(full);

    if (real == NULL) {
        if (errno == ENOENT) {
            call->host->fail(call, "cwd %s does not exist; give a directory "
                             "under the exec root", shown);

        } else if (errno == ELOOP) {
            call->host->fail(call, "cwd %s is a symlink loop", shown);

        } else {
            call->host->fail(call, "cwd %s: %s", shown,
                             rg_exec_strerror(errno, text, sizeof(text)));
        }

        return NULL;
    }

    /* under the root: its path, then "/" or the end ("/" holds all) */

    n = (ecf->root_len == 1) ? 0 : ecf->root_len;

    if (strncmp(real, ecf->root, n) != 0
        || (real[n] != '/' && real[n] != '\0'))
    {
        free(real);
        call->host->fail(call, "cwd %s leads outside the exec root through a "
                         "symlink; use a directory inside the root", shown);
        return NULL;
    }

    if (stat(real, &st) == -1 || !S_ISDIR(st.st_mode)) {
        free(real);
        call->host->fail(call, "cwd %s is not a directory", shown);
        return NULL;
    }

    return real;
}


/* The program's path: name itself when it holds a "/" (then relative to
 * the working directory), else the first executable file named so in a
 * directory of the PATH fixed at init (relative entries are ignored).
 * 0, or -1 after fail(). */
int
rg_exec_lookup(rg_tool_call_t *call, const char *name, char *prog,
    size_t size)
{
    int              n, denied;
    char             shown[RG_EXEC_SHOWN + 8];
    const char      *dir, *end;
    struct stat      st;
    rg_exec_conf_t  *ecf;

    ecf = call->conf;

    if (strchr(name, '/') != NULL) {
        if (strlen(name) >= size) {
            call->host->fail(call, "argv[0] is too long");
            return -1;
        }

        strcpy(prog, name);
        return 0;
    }

    denied = 0;

    for (dir = ecf->path; *dir != '\0'; dir = *end ? end + 1 : end) {
        end = strchr(dir, ':');
        if (end == NULL) {
            end = dir + strlen(dir);
        }

        if (dir[0] != '/') {
            continue;
        }

        n = snprintf(prog, size, "%.*s/%s", (int) (end - dir), dir, name);

        if (n < 0 || (size_t) n >= size || stat(prog, &st) == -1
            || !S_ISREG(st.st_mode))
        {
            continue;
        }

        if (access(prog, X_OK) == 0) {
            return 0;
        }

        denied = 1;
    }

    rg_exec_show(name, strlen(name), shown, sizeof(shown));

    if (denied) {
        call->host->fail(call, "program %s is not executable", shown);

    } else {
        call->host->fail(call, "command not found: %s; check the name, or "
                         "give its path (the PATH is %s)", shown, ecf->path);
    }

    return -1;
}
