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

#include <rg_tool_module.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/landlock.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#define RG_EXEC_TIMEOUT       10000       /* ms */
#define RG_EXEC_TIMEOUT_MAX   3600000     /* ms */
#define RG_EXEC_MAX_OUTPUT    16384
#define RG_EXEC_MAX_MEMORY    (1024ULL * 1024 * 1024)
#define RG_EXEC_MAX_FSIZE     (64ULL * 1024 * 1024)
#define RG_EXEC_MAX_PROCS     256
#define RG_EXEC_KILL_AFTER    500         /* ms from SIGTERM to SIGKILL */
#define RG_EXEC_DRAIN         500         /* ms to read pipes after exit */
#define RG_EXEC_BACKSTOP      3000        /* ms for the supervisor to end */
#define RG_EXEC_MAX_ARGS      1024
#define RG_EXEC_MAX_RO        64
#define RG_EXEC_SHOWN         200
#define RG_EXEC_PATH          "/usr/local/bin:/usr/bin:/bin"

#define RG_EXEC_EXAMPLE       "such as [\"ls\", \"-l\"]"

/* what the supervisor tells the worker, one record per write */
#define RG_EXEC_MSG_EXIT      1           /* a: the program's wait status */
#define RG_EXEC_MSG_SETUP     2           /* a: step, b: errno */

/* the steps of a program's start, for a setup failure */
#define RG_EXEC_STEP_FDS      1
#define RG_EXEC_STEP_CHDIR    2
#define RG_EXEC_STEP_RLIMIT   3
#define RG_EXEC_STEP_NETNS    4
#define RG_EXEC_STEP_NNP      5
#define RG_EXEC_STEP_LANDLOCK 6
#define RG_EXEC_STEP_EXEC     7
#define RG_EXEC_STEP_FORK     8
#define RG_EXEC_STEP_SUPER    9

/* Landlock, beyond what older <linux/landlock.h> define */
#define RG_EXEC_LL_TRUNCATE   (1ULL << 14)    /* ABI 3 */
#define RG_EXEC_LL_IOCTL_DEV  (1ULL << 15)    /* ABI 5 */
#define RG_EXEC_LL_NET_BIND   (1ULL << 0)     /* ABI 4 */
#define RG_EXEC_LL_NET_CONN   (1ULL << 1)
#define RG_EXEC_LL_SCOPE_UNIX (1ULL << 0)     /* ABI 6 */
#define RG_EXEC_LL_SCOPE_SIG  (1ULL << 1)

#define RG_EXEC_LL_READ       (LANDLOCK_ACCESS_FS_EXECUTE                    \
                               | LANDLOCK_ACCESS_FS_READ_FILE                \
                               | LANDLOCK_ACCESS_FS_READ_DIR)
#define RG_EXEC_LL_FILE       (LANDLOCK_ACCESS_FS_EXECUTE                    \
                               | LANDLOCK_ACCESS_FS_WRITE_FILE               \
                               | LANDLOCK_ACCESS_FS_READ_FILE                \
                               | RG_EXEC_LL_TRUNCATE | RG_EXEC_LL_IOCTL_DEV)

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
    char                     *env[5];       /* the child's environment */

    char                     *read_only[RG_EXEC_MAX_RO];
    size_t                    nread_only;
    int                       network;      /* -1: not set */
    uint64_t                  max_cpu;      /* s; 0: not set */
    uint64_t                  max_memory;   /* bytes; 0: not set */
    uint64_t                  max_fsize;
    uint64_t                  max_procs;

    int                       landlock;     /* its ABI, 0: none */
    int                       ruleset;      /* -1: no Landlock */
    pid_t                     ruleset_pid;  /* the process it is open in */
    int                       userns;       /* network off needs one */
    char                      uid_map[64];  /* written in a user namespace */
    char                      gid_map[64];
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
    rg_tool_io_t             *io;
    void                     *run;          /* its rg_exec_run_t */
} rg_exec_pipe_t;


typedef struct {
    char                     *data;
    size_t                    len;
    size_t                    size;
    int                       oom;
} rg_exec_buf_t;


typedef struct {
    int32_t                   kind;         /* RG_EXEC_MSG_* */
    int32_t                   a;
    int32_t                   b;
} rg_exec_msg_t;


/* what a forked supervisor needs, all prepared before fork() */
typedef struct {
    const rg_exec_conf_t     *ecf;
    const char               *prog;
    char                    **argv;
    const char               *cwd;
    int                       ctl;          /* read end: EOF means stop */
    int                       status;       /* write end of the reports */
    int                       out;          /* write ends of the output */
    int                       err;
    int                       null;         /* /dev/null, for stdin */
    int                       ruleset;      /* Landlock's, or -1 */
} rg_exec_spawn_t;


/* one running call, on the worker's side */
typedef struct {
    rg_tool_call_t           *call;
    pid_t                     sup;          /* the supervisor */
    int                       ctl;          /* write end; -1 once closed */
    int                       status;       /* read end; -1 at EOF */
    rg_tool_io_t             *status_io;
    rg_tool_child_t          *child;
    rg_tool_timer_t          *timer;
    rg_exec_pipe_t            pipes[2];
    uint64_t                  deadline;     /* the timeout, then others */
    char                      msg[sizeof(rg_exec_msg_t)];
    size_t                    msg_len;
    char                     *prog;         /* its path, for messages */
    char                      shown[RG_EXEC_SHOWN + 8];   /* argv[0] */
    int                       wstatus;      /* the program's */
    int                       step;         /* a setup failure's */
    int                       setup_err;
    unsigned                  exited:1;     /* wstatus is known */
    unsigned                  reaped:1;     /* the supervisor is gone */
    unsigned                  timed_out:1;
    unsigned                  draining:1;
    unsigned                  killed:1;     /* the backstop fired */
    unsigned                  sync:1;       /* waited for with poll() */
} rg_exec_run_t;


static const char *rg_exec_set_root(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_exec_set_timeout(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_exec_set_max_output(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_exec_set_allow(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_exec_set_read_only(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_exec_set_network(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_exec_set_max_cpu(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_exec_set_max_memory(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
static const char *rg_exec_set_max_file_size(rg_tool_host_t *host,
    void *conf, int argc, const char **argv);
static const char *rg_exec_set_max_processes(rg_tool_host_t *host,
    void *conf, int argc, const char **argv);
static const char *rg_exec_set_size(rg_tool_host_t *host, uint64_t *field,
    const char *arg);
static void *rg_exec_create_conf(rg_tool_host_t *host);
static int rg_exec_init(rg_tool_host_t *host, void *conf);
static void rg_exec_exit(rg_tool_host_t *host, void *conf);
static int rg_exec_landlock_rule(int ruleset, const char *path,
    uint64_t access, uint64_t handled);
static int rg_exec_ruleset(const rg_exec_conf_t *ecf, const char **bad);
static int rg_exec_landlock_init(rg_tool_host_t *host, rg_exec_conf_t *ecf);
static int rg_exec_network_init(rg_tool_host_t *host, rg_exec_conf_t *ecf);
static int rg_exec_start(rg_tool_call_t *call);
static void rg_exec_cancel(rg_tool_call_t *call);
static int rg_exec_argv(rg_tool_call_t *call, rg_exec_argv_t *a, char *err,
    size_t err_len);
static int rg_exec_allowed(rg_tool_call_t *call, const char *name);
static char *rg_exec_cwd(rg_tool_call_t *call);
static int rg_exec_lookup(rg_tool_call_t *call, const char *name,
    char *prog, size_t size);
static int rg_exec_run(rg_tool_call_t *call, const char *prog, char **argv,
    const char *cwd);
static int rg_exec_watch(rg_exec_run_t *r);
static void rg_exec_wait(rg_exec_run_t *r);
static void rg_exec_pipe_handler(int fd, int events, void *data);
static void rg_exec_pipe_read(rg_exec_run_t *r, rg_exec_pipe_t *pp);
static void rg_exec_status_handler(int fd, int events, void *data);
static void rg_exec_read_status(rg_exec_run_t *r);
static void rg_exec_child_handler(int pid, int status, void *data);
static void rg_exec_timer_handler(void *data);
static void rg_exec_arm(rg_exec_run_t *r, uint64_t ms);
static int rg_exec_on_time(rg_exec_run_t *r);
static int rg_exec_check(rg_exec_run_t *r);
static void rg_exec_answer(rg_exec_run_t *r);
static void rg_exec_free(rg_exec_run_t *r);
static int rg_exec_fds_keep(int **fds, int n);
static void rg_exec_supervise(const rg_exec_spawn_t *spawn)
    __attribute__((noreturn));
static void rg_exec_kill_tree(pid_t main, int sig);
static void rg_exec_child(const rg_exec_spawn_t *sp, int errfd)
    __attribute__((noreturn));
static int rg_exec_close_from(int from, int to);
static void rg_exec_report(int fd, int kind, int a, int b);
static int rg_exec_drain(rg_exec_pipe_t *pp, size_t max);
static int rg_exec_pipe(int fds[2]);
static int rg_exec_fd_up(int *fd);
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


/* read_only PATH...; several lines add up: directories (or files) below
 * which programs may read and execute, besides the system's own */
static const char *
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
static const char *
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
static const char *
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


static const char *
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
static const char *
rg_exec_set_max_memory(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    (void) argc;

    return rg_exec_set_size(host, &((rg_exec_conf_t *) conf)->max_memory,
                            argv[0]);
}


/* max_file_size SIZE: the largest file a process may write
 * (RLIMIT_FSIZE) */
static const char *
rg_exec_set_max_file_size(rg_tool_host_t *host, void *conf, int argc,
    const char **argv)
{
    (void) argc;

    return rg_exec_set_size(host, &((rg_exec_conf_t *) conf)->max_fsize,
                            argv[0]);
}


/* max_processes N: RLIMIT_NPROC, which counts every process of the user */
static const char *
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


static void *
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


/* confinement */


/* the ruleset attribute of the newest ABI; older kernels read less of it */
typedef struct {
    uint64_t                  handled_access_fs;
    uint64_t                  handled_access_net;
    uint64_t                  scoped;
} rg_exec_ll_attr_t;


/* one path beneath which the ruleset allows access; 0, 1 when the path
 * does not exist, or -1 with errno */
static int
rg_exec_landlock_rule(int ruleset, const char *path, uint64_t access,
    uint64_t handled)
{
    int                                 fd, rc;
    struct stat                         st;
    struct landlock_path_beneath_attr   pb;

    fd = open(path, O_PATH | O_CLOEXEC);
    if (fd == -1) {
        return errno == ENOENT ? 1 : -1;
    }

    if (fstat(fd, &st) == -1) {
        close(fd);
        return -1;
    }

    /* a file takes only the rights that apply to files */
    if (!S_ISDIR(st.st_mode)) {
        access &= RG_EXEC_LL_FILE;
    }

    memset(&pb, 0, sizeof(pb));
    pb.allowed_access = access & handled;
    pb.parent_fd = fd;

    rc = (int) syscall(SYS_landlock_add_rule, ruleset,
                       LANDLOCK_RULE_PATH_BENEATH, &pb, 0);

    close(fd);

    return rc == 0 ? 0 : -1;
}


/* The ruleset every program is confined by: everything below the root,
 * reading and executing below the system paths and `read_only`, the
 * devices programs open. Its descriptor, or -1 with errno (and *bad, the
 * read_only path that failed). */
static int
rg_exec_ruleset(const rg_exec_conf_t *ecf, const char **bad)
{
    int                 fd, rc, e;
    size_t              i, size;
    uint64_t            all;
    rg_exec_ll_attr_t   attr;
    static const char  *sys[] = {
        "/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin",
        "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
        "/etc/ld.so.preload", "/dev/zero", "/dev/urandom", "/dev/random",
    };

    *bad = NULL;

    all = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;       /* ABI 1 */
    if (ecf->landlock >= 2) {
        all |= LANDLOCK_ACCESS_FS_REFER;
    }
    if (ecf->landlock >= 3) {
        all |= RG_EXEC_LL_TRUNCATE;
    }
    if (ecf->landlock >= 5) {
        all |= RG_EXEC_LL_IOCTL_DEV;
    }

    memset(&attr, 0, sizeof(attr));
    attr.handled_access_fs = all;
    size = sizeof(attr.handled_access_fs);

    if (ecf->landlock >= 4) {
        size += sizeof(attr.handled_access_net);

        /* no TCP at all, besides the namespace of its own */
        if (!ecf->network) {
            attr.handled_access_net = RG_EXEC_LL_NET_BIND
                                      | RG_EXEC_LL_NET_CONN;
        }
    }

    if (ecf->landlock >= 6) {
        size += sizeof(attr.scoped);
        attr.scoped = RG_EXEC_LL_SCOPE_UNIX | RG_EXEC_LL_SCOPE_SIG;
    }

    fd = (int) syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (fd == -1) {
        return -1;
    }

    if (rg_exec_landlock_rule(fd, ecf->root, all, all) != 0) {
        goto failed;
    }

    for (i = 0; i < sizeof(sys) / sizeof(sys[0]); i++) {
        if (rg_exec_landlock_rule(fd, sys[i], RG_EXEC_LL_READ, all) < 0) {
            goto failed;
        }
    }

    if (rg_exec_landlock_rule(fd, "/dev/null", RG_EXEC_LL_FILE, all) < 0) {
        goto failed;
    }

    for (i = 0; i < ecf->nread_only; i++) {
        rc = rg_exec_landlock_rule(fd, ecf->read_only[i], RG_EXEC_LL_READ,
                                   all);
        if (rc != 0) {
            *bad = ecf->read_only[i];
            if (rc == 1) {
                errno = ENOENT;
            }
            goto failed;
        }
    }

    return fd;

failed:

    e = errno;
    close(fd);
    errno = e;

    return -1;
}


/* Probes Landlock and builds the ruleset once; a kernel without Landlock
 * gets a warning. A process forked later that closed the descriptor (an
 * isolated helper) builds its own: see rg_exec_run(). */
static int
rg_exec_landlock_init(rg_tool_host_t *host, rg_exec_conf_t *ecf)
{
    int          abi;
    char         err[128];
    const char  *bad;

    abi = (int) syscall(SYS_landlock_create_ruleset, NULL, 0,
                        LANDLOCK_CREATE_RULESET_VERSION);
    if (abi <= 0) {
        host->log(host, RG_TOOL_LOG_WARN, "exec: this kernel has no Landlock "
                  "(%s): programs are NOT confined to root \"%s\" and can "
                  "read and write wherever the worker's user can",
                  rg_exec_strerror(errno, err, sizeof(err)), ecf->root);
        ecf->landlock = 0;
        return 0;
    }

    ecf->landlock = abi;
    ecf->ruleset = rg_exec_ruleset(ecf, &bad);
    ecf->ruleset_pid = getpid();

    if (ecf->ruleset == -1) {
        if (bad) {
            host->log(host, RG_TOOL_LOG_ERR, "exec: read_only \"%s\": %s",
                      bad, rg_exec_strerror(errno, err, sizeof(err)));
        } else {
            host->log(host, RG_TOOL_LOG_ERR, "exec: cannot build the "
                      "Landlock rules: %s",
                      rg_exec_strerror(errno, err, sizeof(err)));
        }
        return -1;
    }

    return 0;
}


/* With `network off`, whether a child can get a network namespace: alone
 * (root), or inside a user namespace of its own. Tried once here, in a
 * child that exits; never pretended when neither works. */
static int
rg_exec_network_init(rg_tool_host_t *host, rg_exec_conf_t *ecf)
{
    int    status, i;
    char   err[128];
    pid_t  pid;

    if (ecf->network) {
        return 0;
    }

    snprintf(ecf->uid_map, sizeof(ecf->uid_map), "%lu %lu 1\n",
             (unsigned long) getuid(), (unsigned long) getuid());
    snprintf(ecf->gid_map, sizeof(ecf->gid_map), "%lu %lu 1\n",
             (unsigned long) getgid(), (unsigned long) getgid());

    for (i = 0; i < 2; i++) {
        pid = fork();
        if (pid == -1) {
            host->log(host, RG_TOOL_LOG_ERR, "exec: network off: fork() "
                      "failed: %s", rg_exec_strerror(errno, err,
                                                    sizeof(err)));
            return -1;
        }

        if (pid == 0) {
            _exit(unshare(i == 0 ? CLONE_NEWNET
                                 : CLONE_NEWUSER | CLONE_NEWNET) == 0
                  ? 0 : errno);
        }

        while (waitpid(pid, &status, 0) == -1) {
            if (errno != EINTR) {
                status = 1 << 8;
                break;
            }
        }

        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            ecf->userns = i;
            return 0;
        }
    }

    host->log(host, RG_TOOL_LOG_ERR, "exec: \"network off\" needs a network "
              "namespace, and this system gives none (unshare: %s): run "
              "reagent as root, allow unprivileged user namespaces, or "
              "remove \"network off\"",
              rg_exec_strerror(WIFEXITED(status) ? WEXITSTATUS(status) : EPERM,
                               err, sizeof(err)));

    return -1;
}


/* the tool */


static int
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
static void
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
 * outside the root only where Landlock lets it (nowhere but the system's
 * read-only paths), so this is a convenience with the same rules as the
 * fs module's paths: realpath() and a prefix check.
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


/* Forks the supervisor of one call and watches it on the reactor, or, on
 * a host that cannot watch descriptors, waits for it here. RG_TOOL_AGAIN
 * when the answer follows, RG_TOOL_OK when it was given. */
static int
rg_exec_run(rg_tool_call_t *call, const char *prog, char **argv,
    const char *cwd)
{
    int              out[2], err[2], ctl[2], status[2], null, i;
    char             text[128];
    pid_t            pid;
    const char      *bad;
    rg_exec_run_t   *r;
    rg_exec_conf_t  *ecf;
    rg_exec_spawn_t  sp;

    ecf = call->conf;

    out[0] = out[1] = err[0] = err[1] = -1;
    ctl[0] = ctl[1] = status[0] = status[1] = -1;
    null = -1;

    r = calloc(1, sizeof(rg_exec_run_t));
    if (r == NULL) {
        call->host->fail(call, "out of memory");
        return RG_TOOL_OK;
    }

    r->call = call;
    r->ctl = -1;
    r->status = -1;

    for (i = 0; i < 2; i++) {
        r->pipes[i].fd = -1;
        r->pipes[i].data = malloc(ecf->max_output);
        r->pipes[i].run = r;
    }

    if (r->pipes[0].data == NULL || r->pipes[1].data == NULL
        || rg_exec_pipe(out) != 0 || rg_exec_pipe(err) != 0
        || rg_exec_pipe(ctl) != 0 || rg_exec_pipe(status) != 0
        || (null = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1
        || (null < 3 && rg_exec_fd_up(&null) != 0))
    {
        call->host->fail(call, "cannot run a program: %s",
                         rg_exec_strerror(errno, text, sizeof(text)));
        goto failed;
    }

    /* forked since init (an isolated helper): its own ruleset; the number
     * init's had may be another descriptor here */
    if (ecf->landlock && ecf->ruleset_pid != getpid()) {
        ecf->ruleset = rg_exec_ruleset(ecf, &bad);

        if (ecf->ruleset == -1) {
            call->host->fail(call, "cannot confine programs here (%s%s%s): "
                             "%s; none is run unconfined",
                             bad ? "read_only \"" : "Landlock",
                             bad ? bad : "", bad ? "\"" : "",
                             rg_exec_strerror(errno, text, sizeof(text)));
            goto failed;
        }

        ecf->ruleset_pid = getpid();
    }

    sp.ecf = ecf;
    sp.prog = prog;
    sp.argv = argv;
    sp.cwd = cwd;
    sp.ctl = ctl[0];
    sp.status = status[1];
    sp.out = out[1];
    sp.err = err[1];
    sp.null = null;

    pid = fork();

    if (pid == 0) {
        rg_exec_supervise(&sp);
    }

    if (pid == -1) {
        call->host->fail(call, "cannot run a program: fork: %s",
                         rg_exec_strerror(errno, text, sizeof(text)));
        goto failed;
    }

    close(ctl[0]);
    close(status[1]);
    close(out[1]);
    close(err[1]);
    close(null);

    r->sup = pid;
    r->ctl = ctl[1];
    r->status = status[0];
    r->pipes[0].fd = out[0];
    r->pipes[1].fd = err[0];
    r->deadline = rg_exec_now() + ecf->timeout;
    r->prog = strdup(prog);
    rg_exec_show(argv[0], strlen(argv[0]), r->shown, sizeof(r->shown));

    call->ctx = r;

    if (rg_exec_watch(r) == 0) {
        return RG_TOOL_AGAIN;
    }

    r->sync = 1;
    rg_exec_wait(r);

    return RG_TOOL_OK;

failed:

    for (i = 0; i < 2; i++) {
        if (out[i] != -1) {
            close(out[i]);
        }
        if (err[i] != -1) {
            close(err[i]);
        }
        if (ctl[i] != -1) {
            close(ctl[i]);
        }
        if (status[i] != -1) {
            close(status[i]);
        }
    }

    if (null != -1) {
        close(null);
    }

    rg_exec_free(r);

    return RG_TOOL_OK;
}


/* the reactor's watchers: the two output pipes, the reports, the
 * supervisor's end and the timeout; 0, or -1 with none left behind */
static int
rg_exec_watch(rg_exec_run_t *r)
{
    int              i;
    rg_tool_host_t  *host;
    rg_exec_conf_t  *ecf;

    host = r->call->host;
    ecf = r->call->conf;

    if (!rg_exec_host_has(host, io_add) || !rg_exec_host_has(host, io_del)
        || !rg_exec_host_has(host, child_watch)
        || !rg_exec_host_has(host, child_unwatch))
    {
        return -1;
    }

    for (i = 0; i < 2; i++) {
        r->pipes[i].io = host->io_add(host, r->pipes[i].fd, RG_TOOL_IO_READ,
                                      rg_exec_pipe_handler, &r->pipes[i]);
    }

    r->status_io = host->io_add(host, r->status, RG_TOOL_IO_READ,
                                rg_exec_status_handler, r);
    r->timer = host->timer_add(host, ecf->timeout, rg_exec_timer_handler, r);

    /* last: a child once watched is the host's to reap */
    if (r->pipes[0].io && r->pipes[1].io && r->status_io && r->timer) {
        r->child = host->child_watch(host, (int) r->sup,
                                     rg_exec_child_handler, r);
        if (r->child) {
            return 0;
        }
    }

    for (i = 0; i < 2; i++) {
        if (r->pipes[i].io) {
            host->io_del(r->pipes[i].io);
            r->pipes[i].io = NULL;
        }
    }

    if (r->status_io) {
        host->io_del(r->status_io);
        r->status_io = NULL;
    }

    if (r->timer) {
        host->timer_del(r->timer);
        r->timer = NULL;
    }

    return -1;
}


/* The same run without a reactor: poll() on the pipes, the timeout as
 * poll's timeout; the supervisor is reaped once its reports end. Answers
 * and frees r. */
static void
rg_exec_wait(rg_exec_run_t *r)
{
    int              i, n, status;
    uint64_t         now;
    struct pollfd    pfd[3];
    rg_exec_pipe_t  *pp[3];

    for ( ;; ) {
        n = 0;

        for (i = 0; i < 2; i++) {
            if (r->pipes[i].fd != -1) {
                pfd[n].fd = r->pipes[i].fd;
                pfd[n].events = POLLIN;
                pfd[n].revents = 0;
                pp[n++] = &r->pipes[i];
            }
        }

        if (r->status != -1) {
            pfd[n].fd = r->status;
            pfd[n].events = POLLIN;
            pfd[n].revents = 0;
            pp[n++] = NULL;
        }

        now = rg_exec_now();

        if (now >= r->deadline) {
            if (rg_exec_on_time(r)) {
                return;                  /* answered */
            }
            continue;
        }

        if (poll(pfd, (nfds_t) n, (int) (r->deadline - now)) > 0) {
            for (i = 0; i < n; i++) {
                if (pfd[i].revents == 0) {
                    continue;
                }

                if (pp[i]) {
                    rg_exec_pipe_read(r, pp[i]);
                } else {
                    rg_exec_read_status(r);
                }
            }
        }

        /* the reports end when the supervisor does: it is reaped now */
        if (r->status == -1 && !r->reaped) {
            while (waitpid(r->sup, &status, 0) == -1 && errno == EINTR) {
                /* void */
            }

            r->reaped = 1;
        }

        if (rg_exec_check(r)) {
            return;
        }
    }
}


static void
rg_exec_pipe_handler(int fd, int events, void *data)
{
    rg_exec_pipe_t  *pp;
    rg_exec_run_t   *r;

    (void) fd;
    (void) events;

    pp = data;
    r = pp->run;

    rg_exec_pipe_read(r, pp);
    (void) rg_exec_check(r);
}


/* reads what the pipe has; at its end the pipe is closed */
static void
rg_exec_pipe_read(rg_exec_run_t *r, rg_exec_pipe_t *pp)
{
    rg_exec_conf_t  *ecf;

    ecf = r->call->conf;

    if (pp->fd == -1 || rg_exec_drain(pp, ecf->max_output) == 0) {
        return;
    }

    if (pp->io) {
        r->call->host->io_del(pp->io);
        pp->io = NULL;
    }

    close(pp->fd);
    pp->fd = -1;
}


static void
rg_exec_status_handler(int fd, int events, void *data)
{
    rg_exec_run_t  *r;

    (void) fd;
    (void) events;

    r = data;

    rg_exec_read_status(r);
    (void) rg_exec_check(r);
}


/* the supervisor's reports, whole records of rg_exec_msg_t; its end of
 * the pipe closes when it exits */
static void
rg_exec_read_status(rg_exec_run_t *r)
{
    ssize_t        n;
    rg_exec_msg_t  m;

    while (r->status != -1) {
        n = read(r->status, r->msg + r->msg_len, sizeof(r->msg) - r->msg_len);

        if (n > 0) {
            r->msg_len += (size_t) n;

            if (r->msg_len == sizeof(r->msg)) {
                memcpy(&m, r->msg, sizeof(m));
                r->msg_len = 0;

                if (m.kind == RG_EXEC_MSG_EXIT) {
                    r->exited = 1;
                    r->wstatus = m.a;

                } else if (m.kind == RG_EXEC_MSG_SETUP && r->step == 0) {
                    r->step = m.a;
                    r->setup_err = m.b;
                }
            }

            continue;
        }

        if (n == -1 && errno == EINTR) {
            continue;
        }

        if (n == -1 && errno == EAGAIN) {
            return;
        }

        if (r->status_io) {
            r->call->host->io_del(r->status_io);
            r->status_io = NULL;
        }

        close(r->status);
        r->status = -1;
    }
}


static void
rg_exec_child_handler(int pid, int status, void *data)
{
    rg_exec_run_t  *r;

    (void) pid;
    (void) status;

    r = data;
    r->child = NULL;                     /* the host's handle is gone */
    r->reaped = 1;

    /* what it wrote before it ended is all there */
    if (r->status != -1) {
        rg_exec_read_status(r);
    }

    (void) rg_exec_check(r);
}


static void
rg_exec_timer_handler(void *data)
{
    rg_exec_run_t  *r;

    r = data;
    r->timer = NULL;                     /* fired: the handle is dead */

    (void) rg_exec_on_time(r);
}


/* (re)arms the one timer of a run */
static void
rg_exec_arm(rg_exec_run_t *r, uint64_t ms)
{
    rg_tool_host_t  *host;

    r->deadline = rg_exec_now() + ms;

    if (r->sync) {
        return;
    }

    host = r->call->host;

    if (r->timer) {
        host->timer_del(r->timer);
    }

    r->timer = host->timer_add(host, ms, rg_exec_timer_handler, r);
}


/* The run's time is up, for one of three reasons: the timeout (the
 * supervisor is told to kill everything: its control pipe closes), the
 * supervisor not ending in time after that (it is killed), or the output
 * pipes still open after the supervisor ended (the answer goes without
 * the rest). 1 when it answered. */
static int
rg_exec_on_time(rg_exec_run_t *r)
{
    if (r->draining) {
        rg_exec_answer(r);
        return 1;
    }

    if (r->ctl != -1) {
        if (!r->exited) {
            r->timed_out = 1;
        }

        close(r->ctl);
        r->ctl = -1;
        rg_exec_arm(r, RG_EXEC_BACKSTOP);
        return 0;
    }

    if (!r->reaped && !r->killed) {
        r->killed = 1;
        (void) kill(r->sup, SIGKILL);
        rg_exec_arm(r, RG_EXEC_BACKSTOP);
        return 0;
    }

    /* nothing more to wait for */
    rg_exec_answer(r);

    return 1;
}


/* Answers once the supervisor is gone and the pipes are read to their
 * end; pipes that stay open (a process out of reach holds them) get
 * RG_EXEC_DRAIN more. 1 when it answered. */
static int
rg_exec_check(rg_exec_run_t *r)
{
    int  i;

    if (!r->reaped) {
        return 0;
    }

    for (i = 0; i < 2; i++) {
        rg_exec_pipe_read(r, &r->pipes[i]);
    }

    if (r->pipes[0].fd == -1 && r->pipes[1].fd == -1) {
        rg_exec_answer(r);
        return 1;
    }

    if (!r->draining) {
        r->draining = 1;
        rg_exec_arm(r, RG_EXEC_DRAIN);
    }

    return 0;
}


/* the answer: how the program ended, then its output; frees r */
static void
rg_exec_answer(rg_exec_run_t *r)
{
    int              sig, e;
    char             text[128];
    const char      *note;
    struct stat      st;
    rg_exec_buf_t    b;
    rg_tool_call_t  *call;
    rg_exec_conf_t  *ecf;

    call = r->call;
    ecf = call->conf;
    call->ctx = NULL;

    memset(&b, 0, sizeof(b));
    e = r->setup_err;

    switch (r->step) {

    case 0:
        break;

    case RG_EXEC_STEP_EXEC:
        if (e == ENOENT) {
            call->host->fail(call, "command not found: %s; check the name "
                             "or its path", r->shown);

        } else if (e == EACCES && r->prog && stat(r->prog, &st) == 0
                   && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0
                   && ecf->landlock)
        {
            call->host->fail(call, "program %s may not be run: it is "
                             "outside the system's paths, read_only and the "
                             "exec root", r->shown);

        } else if (e == EACCES) {
            call->host->fail(call, "program %s is not executable", r->shown);

        } else {
            call->host->fail(call, "cannot run %s: %s", r->shown,
                             rg_exec_strerror(e, text, sizeof(text)));
        }

        rg_exec_free(r);
        return;

    default:
        call->host->fail(call, "cannot run %s: %s: %s; it was not run",
                         r->shown,
                         r->step == RG_EXEC_STEP_CHDIR ? "cannot enter cwd"
                         : r->step == RG_EXEC_STEP_RLIMIT
                           ? "cannot set its resource limits"
                         : r->step == RG_EXEC_STEP_NETNS
                           ? "cannot cut it off the network (unshare)"
                         : r->step == RG_EXEC_STEP_NNP
                           ? "cannot set no_new_privs"
                         : r->step == RG_EXEC_STEP_LANDLOCK
                           ? "cannot confine it (landlock_restrict_self)"
                         : r->step == RG_EXEC_STEP_FORK ? "fork"
                         : r->step == RG_EXEC_STEP_SUPER
                           ? "cannot supervise it"
                         : "cannot set up its descriptors",
                         rg_exec_strerror(e, text, sizeof(text)));
        rg_exec_free(r);
        return;
    }

    if (r->timed_out) {
        rg_exec_buf_printf(&b, "timed out after %gs (it and every process "
                           "it started were killed)",
                           (double) ecf->timeout / 1000);

    } else if (!r->exited) {
        rg_exec_buf_printf(&b, "exit status unknown");

    } else if (WIFEXITED(r->wstatus)) {
        rg_exec_buf_printf(&b, "exit status %d", WEXITSTATUS(r->wstatus));

    } else {
        sig = WIFSIGNALED(r->wstatus) ? WTERMSIG(r->wstatus) : 0;
        note = sig == SIGXCPU ? " (over its CPU time limit, max_cpu)"
               : sig == SIGXFSZ ? " (over its file size limit, "
                                  "max_file_size)"
               : "";

#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
        rg_exec_buf_printf(&b, "killed by signal %d (SIG%s)%s", sig,
                           sigabbrev_np(sig) ? sigabbrev_np(sig) : "?",
                           note);
#else
        rg_exec_buf_printf(&b, "killed by signal %d%s", sig, note);
#endif
    }

    rg_exec_section(&b, "stdout", &r->pipes[0]);
    rg_exec_section(&b, "stderr", &r->pipes[1]);

    rg_exec_free(r);

    if (b.oom) {
        call->host->fail(call, "out of memory");

    } else {
        call->host->done(call, b.data, b.len);
    }

    free(b.data);
}


/* Releases a run. A supervisor still running sees its control pipe close
 * and kills everything; the host reaps it (or, waited for here, it is
 * reaped before). */
static void
rg_exec_free(rg_exec_run_t *r)
{
    int              i, status;
    rg_tool_host_t  *host;

    host = r->call->host;

    if (r->ctl != -1) {
        close(r->ctl);
    }

    for (i = 0; i < 2; i++) {
        if (r->pipes[i].io) {
            host->io_del(r->pipes[i].io);
        }

        if (r->pipes[i].fd != -1) {
            close(r->pipes[i].fd);
        }

        free(r->pipes[i].data);
    }

    if (r->status_io) {
        host->io_del(r->status_io);
    }

    if (r->status != -1) {
        close(r->status);
    }

    if (r->timer) {
        host->timer_del(r->timer);
    }

    if (r->child) {
        host->child_unwatch(r->child);

    } else if (r->sup > 0 && !r->reaped) {
        /* it ends within RG_EXEC_KILL_AFTER of the closed pipe */
        while (waitpid(r->sup, &status, 0) == -1 && errno == EINTR) {
            /* void */
        }
    }

    free(r->prog);
    free(r);
}


/* the supervisor and the program's start: system calls only, no memory
 * allocated, no lock taken (the worker that forked them has threads) */


/* Moves the descriptors a supervisor keeps to 3, 4, ... (lowest first)
 * and closes every other one (the worker's sockets, its epoll, its
 * log). fds[] are updated. 0 or -1. */
static int
rg_exec_fds_keep(int **fds, int n)
{
    int   i, j, prev, t, *p;

    /* by value; n is small */
    for (i = 1; i < n; i++) {
        for (j = i; j > 0 && *fds[j - 1] > *fds[j]; j--) {
            p = fds[j];
            fds[j] = fds[j - 1];
            fds[j - 1] = p;
        }
    }

    prev = 2;

    for (i = 0; i < n; i++) {
        if (*fds[i] > prev + 1 && rg_exec_close_from(prev + 1, *fds[i] - 1)
                                  != 0)
        {
            return -1;
        }
        prev = *fds[i];
    }

    if (rg_exec_close_from(prev + 1, INT_MAX) != 0) {
        return -1;
    }

    /* each target is below its source and above every kept one before */
    for (i = 0, t = 3; i < n; i++, t++) {
        if (*fds[i] != t) {
            if (dup2(*fds[i], t) == -1) {
                return -1;
            }
            close(*fds[i]);
            *fds[i] = t;
        }
    }

    return 0;
}


/* The supervisor: a subreaper in a process group of its own, with every
 * signal blocked (SIGCHLD read from a signalfd). It forks the program,
 * reports its start failure or its exit status, and kills the tree: all
 * of it once the program has exited, or when the control pipe closes
 * (SIGTERM, then SIGKILL after RG_EXEC_KILL_AFTER). It exits when it has
 * no child left. */
static void
rg_exec_supervise(const rg_exec_spawn_t *spawn)
{
    int               i, sfd, ep[2], *keep[6], nkeep, rc, st, timeout;
    int               main_alive, stopping, killing;
    int32_t           setup[2];
    pid_t             pid;
    ssize_t           n;
    uint64_t          kill_at, now;
    sigset_t          all, chld;
    siginfo_t         si;
    struct pollfd     pfd[2];
    rg_exec_spawn_t   sp;
    struct sigaction  sa;
    struct signalfd_siginfo  buf[8];

    sp = *spawn;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);

    for (i = 1; i < NSIG; i++) {
        if (i != SIGKILL && i != SIGSTOP) {
            (void) sigaction(i, &sa, NULL);    /* EINVAL for libc's own */
        }
    }

    sigfillset(&all);
    (void) sigprocmask(SIG_SETMASK, &all, NULL);

    /* the terminal's ^C is for the worker: it tells this one itself */
    (void) setpgid(0, 0);

    nkeep = 0;
    keep[nkeep++] = &sp.ctl;
    keep[nkeep++] = &sp.status;
    keep[nkeep++] = &sp.out;
    keep[nkeep++] = &sp.err;
    keep[nkeep++] = &sp.null;
    sp.ruleset = sp.ecf->ruleset;
    if (sp.ruleset != -1) {
        keep[nkeep++] = &sp.ruleset;
    }

    if (rg_exec_fds_keep(keep, nkeep) != 0) {
        rg_exec_report(sp.status, RG_EXEC_MSG_SETUP, RG_EXEC_STEP_FDS, errno);
        _exit(0);
    }

    /* the worker's stdout stays the worker's */
    if (dup2(sp.null, 0) == -1 || dup2(sp.null, 1) == -1
        || dup2(sp.null, 2) == -1)
    {
        rg_exec_report(sp.status, RG_EXEC_MSG_SETUP, RG_EXEC_STEP_FDS, errno);
        _exit(0);
    }

    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == -1) {
        rg_exec_report(sp.status, RG_EXEC_MSG_SETUP, RG_EXEC_STEP_SUPER,
                       errno);
        _exit(0);
    }

    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);

    sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);

    if (sfd == -1 || pipe2(ep, O_CLOEXEC) == -1) {
        rg_exec_report(sp.status, RG_EXEC_MSG_SETUP, RG_EXEC_STEP_SUPER,
                       errno);
        _exit(0);
    }

    pid = fork();

    if (pid == 0) {
        close(ep[0]);
        rg_exec_child(&sp, ep[1]);
    }

    close(ep[1]);
    close(sp.out);
    close(sp.err);
    close(sp.null);
    if (sp.ruleset != -1) {
        close(sp.ruleset);
    }

    if (pid == -1) {
        rg_exec_report(sp.status, RG_EXEC_MSG_SETUP, RG_EXEC_STEP_FORK,
                       errno);
        _exit(0);
    }

    /* nothing before execve(): it started; else why it did not */
    do {
        n = read(ep[0], setup, sizeof(setup));
    } while (n == -1 && errno == EINTR);

    close(ep[0]);

    if (n == (ssize_t) sizeof(setup)) {
        rg_exec_report(sp.status, RG_EXEC_MSG_SETUP, setup[0], setup[1]);

        while (waitpid(pid, &st, 0) == -1 && errno == EINTR) {
            /* void */
        }

        _exit(0);
    }

    main_alive = 1;
    stopping = 0;
    killing = 0;
    kill_at = 0;

    for ( ;; ) {
        pfd[0].fd = stopping ? -1 : sp.ctl;
        pfd[0].events = POLLIN;
        pfd[0].revents = 0;
        pfd[1].fd = sfd;
        pfd[1].events = POLLIN;
        pfd[1].revents = 0;

        /* while killing, a look every 100 ms: new orphans arrive */
        now = rg_exec_now();
        timeout = killing ? 100
                  : stopping ? (int) (kill_at > now ? kill_at - now : 0)
                  : -1;

        rc = poll(pfd, 2, timeout);

        if (rc > 0 && pfd[0].revents) {
            stopping = 1;
            kill_at = rg_exec_now() + RG_EXEC_KILL_AFTER;
            rg_exec_kill_tree(main_alive ? pid : 0, SIGTERM);
        }

        if (stopping && !killing && rg_exec_now() >= kill_at) {
            killing = 1;
        }

        while (read(sfd, buf, sizeof(buf)) > 0) {
            /* SIGCHLD is a hint: the waits below tell */
        }

        for ( ;; ) {
            memset(&si, 0, sizeof(si));

            if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == -1) {
                if (errno == EINTR) {
                    continue;
                }

                _exit(0);                /* ECHILD: nobody is left */
            }

            if (si.si_pid == 0) {
                break;
            }

            if (si.si_pid == pid && main_alive) {
                /* its group goes first, while its pid, the group's id,
                 * cannot be reused */
                (void) kill(-pid, SIGKILL);

                while (waitpid(pid, &st, 0) == -1 && errno == EINTR) {
                    /* void */
                }

                main_alive = 0;
                killing = 1;
                rg_exec_report(sp.status, RG_EXEC_MSG_EXIT, st, 0);
                continue;
            }

            while (waitpid(si.si_pid, &st, 0) == -1 && errno == EINTR) {
                /* void */
            }
        }

        if (killing) {
            rg_exec_kill_tree(main_alive ? pid : 0, SIGKILL);
        }
    }
}


/* Signals what is left of the tree: the program's process group while it
 * lives, and each child of this subreaper (the program, and orphans
 * handed to it, also those that left the group with setsid()). */
static void
rg_exec_kill_tree(pid_t main, int sig)
{
    int      fd;
    char     path[64], buf[1024], *p, *q;
    long     v;
    pid_t    self;
    ssize_t  n;

    if (main > 0) {
        (void) kill(-main, sig);
    }

    /* "/proc/self/task/<pid>/children", written without stdio */
    self = getpid();
    memcpy(path, "/proc/self/task/", 16);
    p = path + 16;
    q = buf;

    for (v = self; v > 0; v /= 10) {
        *q++ = (char) ('0' + v % 10);
    }

    while (q > buf) {
        *p++ = *--q;
    }

    memcpy(p, "/children", sizeof("/children"));

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        return;
    }

    v = 0;

    /* "pid pid pid ", in chunks that may split a number */
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        for (p = buf; p < buf + n; p++) {
            if (*p >= '0' && *p <= '9') {
                v = v * 10 + (*p - '0');

            } else if (v > 0) {
                (void) kill((pid_t) v, sig);
                v = 0;
            }
        }
    }

    if (v > 0) {
        (void) kill((pid_t) v, sig);
    }

    close(fd);
}


/* The program's process: its own group, dead with the supervisor, its
 * descriptors, working directory, limits, network, no_new_privs and
 * Landlock, then execve(). A failed step is written to errfd. */
static void
rg_exec_child(const rg_exec_spawn_t *sp, int errfd)
{
    int                    e, step, fd;
    int32_t                rec[2];
    sigset_t               none;
    struct rlimit          rl;
    const rg_exec_conf_t  *ecf;

    ecf = sp->ecf;

    (void) setpgid(0, 0);
    (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);

    step = RG_EXEC_STEP_FDS;

    if (dup2(sp->null, 0) == -1 || dup2(sp->out, 1) == -1
        || dup2(sp->err, 2) == -1)
    {
        goto failed;
    }

    step = RG_EXEC_STEP_CHDIR;

    if (chdir(sp->cwd) == -1) {
        goto failed;
    }

    step = RG_EXEC_STEP_RLIMIT;

    /* SIGXCPU at the soft limit, SIGKILL a second later */
    rl.rlim_cur = ecf->max_cpu;
    rl.rlim_max = ecf->max_cpu + 1;
    if (setrlimit(RLIMIT_CPU, &rl) == -1) {
        goto failed;
    }

    rl.rlim_cur = rl.rlim_max = ecf->max_memory;
    if (setrlimit(RLIMIT_AS, &rl) == -1) {
        goto failed;
    }

    rl.rlim_cur = rl.rlim_max = ecf->max_fsize;
    if (setrlimit(RLIMIT_FSIZE, &rl) == -1) {
        goto failed;
    }

    rl.rlim_cur = rl.rlim_max = ecf->max_procs;
    if (setrlimit(RLIMIT_NPROC, &rl) == -1) {
        goto failed;
    }

    rl.rlim_cur = rl.rlim_max = 0;
    if (setrlimit(RLIMIT_CORE, &rl) == -1) {
        goto failed;
    }

    step = RG_EXEC_STEP_NETNS;

    if (!ecf->network) {
        if (!ecf->userns) {
            if (unshare(CLONE_NEWNET) == -1) {
                goto failed;
            }

        } else {
            if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == -1) {
                goto failed;
            }

            /* the same uid and gid inside, and nothing more */
            fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
            if (fd == -1 || write(fd, "deny", 4) != 4) {
                goto failed;
            }
            close(fd);

            fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC);
            if (fd == -1 || write(fd, ecf->uid_map, strlen(ecf->uid_map))
                            == -1)
            {
                goto failed;
            }
            close(fd);

            fd = open("/proc/self/gid_map", O_WRONLY | O_CLOEXEC);
            if (fd == -1 || write(fd, ecf->gid_map, strlen(ecf->gid_map))
                            == -1)
            {
                goto failed;
            }
            close(fd);
        }
    }

    step = RG_EXEC_STEP_NNP;

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
        goto failed;
    }

    step = RG_EXEC_STEP_LANDLOCK;

    if (sp->ruleset != -1
        && syscall(SYS_landlock_restrict_self, sp->ruleset, 0) == -1)
    {
        goto failed;
    }

    /* 0-2, and the report pipe until execve() */
    step = RG_EXEC_STEP_FDS;

    if ((errfd > 3 && rg_exec_close_from(3, errfd - 1) != 0)
        || rg_exec_close_from(errfd + 1, INT_MAX) != 0)
    {
        goto failed;
    }

    sigemptyset(&none);
    (void) sigprocmask(SIG_SETMASK, &none, NULL);

    step = RG_EXEC_STEP_EXEC;

    execve(sp->prog, sp->argv, ecf->env);

failed:

    e = errno;
    rec[0] = step;
    rec[1] = e;

    while (write(errfd, rec, sizeof(rec)) == -1 && errno == EINTR) {
        /* void */
    }

    _exit(127);
}


/* closes from..to (close_range(2), else one by one up to the limit) */
static int
rg_exec_close_from(int from, int to)
{
    int            fd;
    struct rlimit  rl;

#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned) from, (unsigned) to, 0) == 0) {
        return 0;
    }

    if (errno != ENOSYS) {
        return -1;
    }
#endif

    if (getrlimit(RLIMIT_NOFILE, &rl) == -1) {
        return -1;
    }

    for (fd = from; fd <= to && (rlim_t) fd < rl.rlim_cur; fd++) {
        (void) close(fd);
    }

    return 0;
}


static void
rg_exec_report(int fd, int kind, int a, int b)
{
    rg_exec_msg_t  m;

    m.kind = kind;
    m.a = a;
    m.b = b;

    while (write(fd, &m, sizeof(m)) == -1 && errno == EINTR) {
        /* void */
    }
}


/* output */


/* Reads what the pipe has (a bounded number of times, so that a fast
 * writer cannot hold off the other events): up to max bytes are kept, the
 * rest counted and dropped, so the child never blocks on a full pipe. 1
 * at its end (or an error), else 0. */
static int
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

        return n == 0 || errno != EAGAIN;
    }

    return 0;
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


/* *fd moved to 3 or above, close-on-exec: a worker started without 0-2
 * gets them back from open() */
static int
rg_exec_fd_up(int *fd)
{
    int  up;

    up = fcntl(*fd, F_DUPFD_CLOEXEC, 3);
    if (up == -1) {
        return -1;
    }

    close(*fd);
    *fd = up;

    return 0;
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

