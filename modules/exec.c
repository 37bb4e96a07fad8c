/* exec.c: the "exec" tool module: runs a program, without a shell.
 *
 * Owns the reading of the argv array (through the host's arg_array_*()
 * readers: it parses no JSON, and a host without them is refused at init),
 * the program's lookup in PATH, its spawning in its own process group with
 * stdin from /dev/null and stdout and stderr captured, the timeout that
 * kills the whole group, and the text of the answer:
 *
 *     exit status 0
 *     --- stdout ---
 *     ...
 *     --- stderr ---
 *     ...
 *
 * It is not a sandbox: the program runs as the worker's user with the
 * worker's rights. The root is its default working directory and `cwd` is
 * kept inside it, but the program itself can go anywhere, which is why the
 * tool is RG_TOOL_DANGEROUS. It gets a small environment (PATH, HOME set to
 * the root, LANG), not the worker's, which may hold API keys. Processes it
 * leaves behind in its group are killed when it exits.
 *
 *     module exec { root /srv/work; timeout 10s; max_output 16k;
 *                   allow ls cat grep; }
 *
 * start() blocks (RG_TOOL_BLOCKING: it runs in the host's thread pool), so
 * all here is reentrant and uses no signal handler: the child is watched
 * with poll() on its pipes and waitid(WNOHANG). */

#include <rg_tool_module.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#define RG_EXEC_TIMEOUT       10000       /* ms */
#define RG_EXEC_TIMEOUT_MAX   3600000     /* ms */
#define RG_EXEC_MAX_OUTPUT    16384
#define RG_EXEC_KILL_AFTER    500         /* ms from SIGTERM to SIGKILL */
#define RG_EXEC_DRAIN         500         /* ms to read pipes after exit */
#define RG_EXEC_MAX_ARGS      1024
#define RG_EXEC_SHOWN         200
#define RG_EXEC_PATH          "/usr/local/bin:/usr/bin:/bin"

#define RG_EXEC_EXAMPLE       "such as [\"ls\", \"-l\"]"

/* whether the host table has a member this module was built to use */
#define rg_exec_host_has(host, member)                                       \
    ((host)->size >= offsetof(rg_tool_host_t, member)                        \
                     + sizeof(((rg_tool_host_t *) 0)->member)                \
     && (host)->member != NULL)


typedef struct {
    char                     *root;         /* absolute, no symlinks */
    size_t                    root_len;
    uint64_t                  timeout;      /* ms; 0: not set */
    size_t                    max_output;   /* 0: not set */
    char                    **allow;        /* nallow names, or NULL */
    size_t                    nallow;
    char                     *path;         /* where programs are looked up */
    char                     *env[4];       /* the child's environment */
} rg_exec_conf_t;


typedef struct {
    char                    **argv;         /* NULL-ended, into buf */
    size_t                    argc;
    char                     *buf;
} rg_exec_argv_t;


typedef struct {
    int                       fd;           /* -1 at end of file */
    char                     *data;
    size_t                    len;
    size_t                    dropped;      /* bytes past max_output */
} rg_exec_pipe_t;


typedef struct {
    char                     *data;
    size_t                    len;
    size_t                    size;
    int                       oom;
} rg_exec_buf_t;


static const char *rg_exec_set_root(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_exec_set_timeout(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_exec_set_max_output(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_exec_set_allow(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static void *rg_exec_create_conf(rg_tool_host_t *host);
static int rg_exec_init(rg_tool_host_t *host, void *conf);
static void rg_exec_exit(rg_tool_host_t *host, void *conf);
static int rg_exec_start(rg_tool_call_t *call);
static int rg_exec_argv(rg_tool_call_t *call, rg_exec_argv_t *a, char *err,
    size_t err_len);
static int rg_exec_allowed(rg_tool_call_t *call, const char *name);
static char *rg_exec_cwd(rg_tool_call_t *call);
static int rg_exec_lookup(rg_tool_call_t *call, const char *name,
    char *prog, size_t size);
static void rg_exec_run(rg_tool_call_t *call, const char *prog, char **argv,
    const char *cwd);
static int rg_exec_spawn(const rg_exec_conf_t *ecf, const char *prog,
    char **argv, const char *cwd, int out, int err, pid_t *pid);
static int rg_exec_wait(const rg_exec_conf_t *ecf, pid_t pid,
    rg_exec_pipe_t *pipes, int *status, int *timed_out);
static void rg_exec_drain(rg_exec_pipe_t *pp, size_t max);
static int rg_exec_pipe(int fds[2]);
static void rg_exec_section(rg_exec_buf_t *b, const char *name,
    const rg_exec_pipe_t *pp);
static uint64_t rg_exec_now(void);
static void rg_exec_show(const char *s, size_t len, char *buf, size_t size);
static const char *rg_exec_strerror(int err, char *buf, size_t len);
static void rg_exec_buf_add(rg_exec_buf_t *b, const char *data, size_t len);
static void rg_exec_buf_printf(rg_exec_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));


static const rg_tool_directive_t  rg_exec_directives[] = {
    { "root", 1, 1, rg_exec_set_root },
    { "timeout", 1, 1, rg_exec_set_timeout },
    { "max_output", 1, 1, rg_exec_set_max_output },
    { "allow", 1, 64, rg_exec_set_allow },
    { NULL, 0, 0, NULL }
};


static const rg_tool_t  rg_exec_tools[] = {
    { "exec",
      "Run a program with arguments, without a shell (no pipes, globs, "
      "redirections or $VARS: run [\"sh\", \"-c\", \"...\"] for those if "
      "sh is allowed). stdin is empty; returns the exit status, then stdout "
      "and stderr, each capped. The program is killed, with its children, "
      "when it runs past the timeout.",
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
      RG_TOOL_DANGEROUS | RG_TOOL_BLOCKING | RG_TOOL_SIDE_EFFECT, 0,
      rg_exec_start, NULL },

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


static const char *
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
static const char *
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
static const char *
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
static const char *
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


static void *
rg_exec_create_conf(rg_tool_host_t *host)
{
    (void) host;

    return calloc(1, sizeof(rg_exec_conf_t));
}


/* Checks the host table, resolves the root, and fixes the PATH and the
 * environment the children get, here on the main thread: start() reads no
 * environment variable. */
static int
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

    path = getenv("PATH");
    if (path == NULL || path[0] == '\0') {
        path = RG_EXEC_PATH;
    }

    ecf->path = strdup(path);

    if (ecf->path == NULL
        || asprintf(&ecf->env[0], "PATH=%s", path) == -1
        || asprintf(&ecf->env[1], "HOME=%s", ecf->root) == -1
        || (ecf->env[2] = strdup("LANG=C.UTF-8")) == NULL)
    {
        host->log(host, RG_TOOL_LOG_ERR, "exec: out of memory");
        return RG_TOOL_ERROR;
    }

    host->log(host, RG_TOOL_LOG_DEBUG, "exec: root \"%s\", timeout %llums, "
              "max_output %zu, %zu allowed programs", ecf->root,
              (unsigned long long) ecf->timeout, ecf->max_output,
              ecf->nallow);

    return RG_TOOL_OK;
}


static void
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

    free(ecf->allow);
    free(ecf->path);
    free(ecf->root);
    free(ecf);
}


/* the tool */


static int
rg_exec_start(rg_tool_call_t *call)
{
    char            err[256], prog[PATH_MAX], *cwd;
    rg_exec_argv_t  a;

    /* init() made sure the host has arg_array_*() */

    if (rg_exec_argv(call, &a, err, sizeof(err)) != 0) {
        call->host->fail(call, "%s", err);
        return RG_TOOL_OK;
    }

    cwd = NULL;

    if (a.argv[0][0] == '\0') {
        call->host->fail(call, "argv[0] is empty; it names the program, "
                         "such as \"ls\"");

    } else if (rg_exec_allowed(call, a.argv[0]) == 0
               && (cwd = rg_exec_cwd(call)) != NULL
               && rg_exec_lookup(call, a.argv[0], prog, sizeof(prog)) == 0)
    {
        rg_exec_run(call, prog, a.argv, cwd);
    }

    free(cwd);
    free(a.argv);
    free(a.buf);

    return RG_TOOL_OK;
}


/* argv through the host's arg_array_*(): the strings are copied into one
 * buffer, each NUL-ended, so that they can be handed to posix_spawn().
 * 0, or -1 with a message in err. */
static int
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
static int
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
 * anywhere once it runs, so this is a convenience with the same rules as
 * the fs module's paths, not a boundary: realpath() and a prefix check.
 * The real path, malloc()ed, or NULL after fail(). */
static char *
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
static int
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


/* running */


static void
rg_exec_run(rg_tool_call_t *call, const char *prog, char **argv,
    const char *cwd)
{
    int              out[2], err[2], status, timed_out, rc, sig, i;
    char             text[128], shown[RG_EXEC_SHOWN + 8];
    pid_t            pid;
    rg_exec_buf_t    b;
    rg_exec_pipe_t   pipes[2];
    rg_exec_conf_t  *ecf;

    ecf = call->conf;

    memset(pipes, 0, sizeof(pipes));
    pipes[0].fd = -1;
    pipes[1].fd = -1;
    out[0] = out[1] = err[0] = err[1] = -1;

    pipes[0].data = malloc(ecf->max_output);
    pipes[1].data = malloc(ecf->max_output);

    if (pipes[0].data == NULL || pipes[1].data == NULL
        || rg_exec_pipe(out) != 0 || rg_exec_pipe(err) != 0)
    {
        call->host->fail(call, "cannot run a program: %s",
                         rg_exec_strerror(errno, text, sizeof(text)));
        goto done;
    }

    rc = rg_exec_spawn(ecf, prog, argv, cwd, out[1], err[1], &pid);

    close(out[1]);
    close(err[1]);
    out[1] = err[1] = -1;

    if (rc != 0) {
        rg_exec_show(argv[0], strlen(argv[0]), shown, sizeof(shown));

        if (rc == ENOENT) {
            call->host->fail(call, "command not found: %s; check the name or "
                             "its path", shown);

        } else if (rc == EACCES) {
            call->host->fail(call, "program %s is not executable", shown);

        } else {
            call->host->fail(call, "cannot run %s: %s", shown,
                             rg_exec_strerror(rc, text, sizeof(text)));
        }

        goto done;
    }

    pipes[0].fd = out[0];
    pipes[1].fd = err[0];
    out[0] = err[0] = -1;

    rc = rg_exec_wait(ecf, pid, pipes, &status, &timed_out);

    memset(&b, 0, sizeof(b));

    if (timed_out) {
        rg_exec_buf_printf(&b, "timed out after %gs (process group killed)",
                           (double) ecf->timeout / 1000);

    } else if (rc != 0) {
        rg_exec_buf_printf(&b, "exit status unknown");

    } else if (WIFEXITED(status)) {
        rg_exec_buf_printf(&b, "exit status %d", WEXITSTATUS(status));

    } else {
        sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;

#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
        rg_exec_buf_printf(&b, "killed by signal %d (SIG%s)", sig,
                           sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
#else
        rg_exec_buf_printf(&b, "killed by signal %d", sig);
#endif
    }

    rg_exec_section(&b, "stdout", &pipes[0]);
    rg_exec_section(&b, "stderr", &pipes[1]);

    if (b.oom) {
        call->host->fail(call, "out of memory");

    } else {
        call->host->done(call, b.data, b.len);
    }

    free(b.data);

done:

    for (i = 0; i < 2; i++) {
        if (out[i] != -1) {
            close(out[i]);
        }

        if (err[i] != -1) {
            close(err[i]);
        }

        if (pipes[i].fd != -1) {
            close(pipes[i].fd);
        }

        free(pipes[i].data);
    }
}


/* posix_spawn(): safe in a threaded process, and it reports a failed exec
 * as its result. The child gets its own process group, default signal
 * dispositions and an empty mask, /dev/null, the two pipes, the working
 * directory and no other descriptor. 0 or an errno. */
static int
rg_exec_spawn(const rg_exec_conf_t *ecf, const char *prog, char **argv,
    const char *cwd, int out, int err, pid_t *pid)
{
    int                          rc;
    sigset_t                     none, all;
    posix_spawnattr_t            attr;
    posix_spawn_file_actions_t   fa;

    if (posix_spawn_file_actions_init(&fa) != 0) {
        return ENOMEM;
    }

    if (posix_spawnattr_init(&attr) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return ENOMEM;
    }

    sigemptyset(&none);
    sigfillset(&all);

    rc = posix_spawn_file_actions_adddup2(&fa, out, 1);
    if (rc == 0) {
        rc = posix_spawn_file_actions_adddup2(&fa, err, 2);
    }
    if (rc == 0) {
        rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY,
                                              0);
    }
    if (rc == 0) {
        rc = posix_spawn_file_actions_addchdir_np(&fa, cwd);
    }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
    if (rc == 0) {
        rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    }
#endif
    if (rc == 0) {
        rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP
                                             | POSIX_SPAWN_SETSIGMASK
                                             | POSIX_SPAWN_SETSIGDEF);
    }
    if (rc == 0) {
        rc = posix_spawnattr_setpgroup(&attr, 0);
    }
    if (rc == 0) {
        rc = posix_spawnattr_setsigmask(&attr, &none);
    }
    if (rc == 0) {
        rc = posix_spawnattr_setsigdefault(&attr, &all);
    }
    if (rc == 0) {
        rc = posix_spawn(pid, prog, &fa, &attr, argv, ecf->env);
    }

    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);

    return rc;
}


/* Reads both pipes until the child exits, and a little longer (for what
 * is still in them), or until the timeout, when the group gets SIGTERM,
 * then SIGKILL. When the child has exited, waitid(WNOWAIT) leaves it a
 * zombie, so its pid, the group's id, cannot be reused while the rest of
 * the group is killed; only then is it reaped. 0 with *status, or -1 when
 * the child was reaped by someone else (SIGCHLD ignored). */
static int
rg_exec_wait(const rg_exec_conf_t *ecf, pid_t pid, rg_exec_pipe_t *pipes,
    int *status, int *timed_out)
{
    int            i, n, exited, killed, rc;
    uint64_t       now, deadline, term_at, exited_at, next, wait;
    siginfo_t      si;
    struct pollfd  pfd[2];

    *timed_out = 0;
    *status = 0;
    exited = 0;
    killed = 0;
    rc = 0;
    term_at = 0;
    exited_at = 0;
    deadline = rg_exec_now() + ecf->timeout;

    for ( ;; ) {
        if (!exited) {
            memset(&si, 0, sizeof(si));

            if (waitid(P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT)
                == -1)
            {
                if (errno == EINTR) {
                    continue;
                }

                rc = -1;
                exited = 1;

            } else if (si.si_pid == pid) {
                exited = 1;
            }

            if (exited) {
                (void) kill(-pid, SIGKILL);

                while (rc == 0 && waitpid(pid, status, 0) == -1) {
                    if (errno != EINTR) {
                        rc = -1;
                    }
                }

                exited_at = rg_exec_now();
            }
        }

        now = rg_exec_now();

        if (exited) {
            if ((pipes[0].fd == -1 && pipes[1].fd == -1)
                || now >= exited_at + RG_EXEC_DRAIN)
            {
                return rc;
            }

            next = exited_at + RG_EXEC_DRAIN;

        } else {
            if (!*timed_out && now >= deadline) {
                *timed_out = 1;
                term_at = now;
                (void) kill(-pid, SIGTERM);
            }

            if (*timed_out && !killed && now >= term_at + RG_EXEC_KILL_AFTER)
            {
                killed = 1;
                (void) kill(-pid, SIGKILL);
            }

            next = !*timed_out ? deadline
                   : !killed ? term_at + RG_EXEC_KILL_AFTER : now + 10;
        }

        /* the child's exit is looked for every 100 ms while a pipe is
         * open, every 10 ms once both are closed */

        wait = next > now ? next - now : 0;
        if (!exited) {
            n = (pipes[0].fd == -1 && pipes[1].fd == -1) ? 10 : 100;
            wait = wait < (uint64_t) n ? wait : (uint64_t) n;
        }

        n = 0;

        for (i = 0; i < 2; i++) {
            if (pipes[i].fd != -1) {
                pfd[n].fd = pipes[i].fd;
                pfd[n].events = POLLIN;
                pfd[n].revents = 0;
                n++;
            }
        }

        if (poll(pfd, (nfds_t) n, (int) wait) <= 0) {
            continue;
        }

        for (i = 0; i < 2; i++) {
            if (pipes[i].fd != -1) {
                rg_exec_drain(&pipes[i], ecf->max_output);
            }
        }
    }
}


/* Reads what the pipe has (a bounded number of times, so that a fast
 * writer cannot hold off the timeout): up to max bytes are kept, the rest
 * counted and dropped, so the child never blocks on a full pipe. */
static void
rg_exec_drain(rg_exec_pipe_t *pp, size_t max)
{
    int      i;
    char     junk[16384];
    ssize_t  n;

    for (i = 0; i < 64; i++) {
        if (pp->len < max) {
            n = read(pp->fd, pp->data + pp->len, max - pp->len);

        } else {
            n = read(pp->fd, junk, sizeof(junk));
        }

        if (n > 0) {
            if (pp->len < max) {
                pp->len += (size_t) n;

            } else {
                pp->dropped += (size_t) n;
            }

            continue;
        }

        if (n == -1 && errno == EINTR) {
            continue;
        }

        if (n == 0 || errno != EAGAIN) {
            close(pp->fd);
            pp->fd = -1;
        }

        return;
    }
}


/* a pipe with both ends close-on-exec, neither of them 0, 1 or 2 (the
 * child's dup2()s must not overwrite one with another), the read end
 * non-blocking */
static int
rg_exec_pipe(int fds[2])
{
    int  i, fd;

    if (pipe2(fds, O_CLOEXEC) == -1) {
        return -1;
    }

    for (i = 0; i < 2; i++) {
        if (fds[i] > 2) {
            continue;
        }

        fd = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
        if (fd == -1) {
            return -1;
        }

        close(fds[i]);
        fds[i] = fd;
    }

    return fcntl(fds[0], F_SETFL, O_NONBLOCK) == -1 ? -1 : 0;
}


/* "\n--- NAME ---\n" and the output; one trailing newline is dropped, so
 * that the answer never ends with one and the next header follows */
static void
rg_exec_section(rg_exec_buf_t *b, const char *name, const rg_exec_pipe_t *pp)
{
    rg_exec_buf_printf(b, "\n--- %s ---\n", name);
    rg_exec_buf_add(b, pp->data, pp->len);

    if (pp->dropped > 0) {
        rg_exec_buf_printf(b, "%s(truncated: %zu more bytes)",
                           (pp->len > 0 && pp->data[pp->len - 1] != '\n')
                           ? "\n" : "", pp->dropped);
    }

    if (!b->oom && b->data[b->len - 1] == '\n') {
        b->len--;
        b->data[b->len] = '\0';
    }
}


/* helpers */


static uint64_t
rg_exec_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}


/* s quoted for a message: at most RG_EXEC_SHOWN bytes, control bytes as ? */
static void
rg_exec_show(const char *s, size_t len, char *buf, size_t size)
{
    size_t  i, n;

    n = len < RG_EXEC_SHOWN ? len : RG_EXEC_SHOWN;

    if (n + 6 > size) {
        n = size - 6;
    }

    buf[0] = '"';

    for (i = 0; i < n; i++) {
        buf[i + 1] = ((unsigned char) s[i] < 0x20 || s[i] == 0x7f)
                     ? '?' : s[i];
    }

    if (n < len) {
        memcpy(buf + n + 1, "...", 3);
        n += 3;
    }

    buf[n + 1] = '"';
    buf[n + 2] = '\0';
}


/* strerror_r() of either flavour: GNU returns the text, XSI fills buf */
static const char *
rg_exec_strerror(int err, char *buf, size_t len)
{
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(err, buf, len);
#else
    return (strerror_r(err, buf, len) == 0) ? buf : "unknown error";
#endif
}


static void
rg_exec_buf_add(rg_exec_buf_t *b, const char *data, size_t len)
{
    char    *p;
    size_t   size;

    if (b->oom) {
        return;
    }

    if (b->len + len + 1 > b->size) {
        size = b->size ? b->size : 1024;

        while (size < b->len + len + 1) {
            size *= 2;
        }

        p = realloc(b->data, size);
        if (p == NULL) {
            b->oom = 1;
            return;
        }

        b->data = p;
        b->size = size;
    }

    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}


static void
rg_exec_buf_printf(rg_exec_buf_t *b, const char *fmt, ...)
{
    int      n;
    char     text[512];
    va_list  ap;

    va_start(ap, fmt);
    n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);

    if (n > 0) {
        rg_exec_buf_add(b, text, (size_t) n < sizeof(text)
                                 ? (size_t) n : sizeof(text) - 1);
    }
}

