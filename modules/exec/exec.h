/* exec.h: what the files of the exec module share (modules/exec/): its
 * configuration, the state of one run on the worker's side, what a
 * forked supervisor is given, and the functions each file offers the
 * others. The module sees the host through rg_tool_module.h alone. The
 * files:
 *
 *     exec.c             the module and its directives, the tool's start:
 *                        arguments, allow-list, working directory, PATH
 *     exec_confine.c     Landlock rules, the network namespace, and the
 *                        program's own process that applies them
 *     exec_run.c         one run on the worker: pipes, status, timers,
 *                        the answer
 *     exec_supervisor.c  the supervisor process and the system calls it
 *                        and the program's start may make after fork()
 *     exec_text.c        the answer's text and small helpers
 */

#ifndef RG_EXEC_H
#define RG_EXEC_H


#include <rg_tool_module.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <linux/securebits.h>
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
#define RG_EXEC_STEP_CAPS     10

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


/* exec.c: the directives (setters, conf) and the tool */
const char *rg_exec_set_root(rg_tool_host_t *host, void *conf, int argc,
    const char **argv);
const char *rg_exec_set_timeout(rg_tool_host_t *host, void *conf, int argc,
    const char **argv);
const char *rg_exec_set_max_output(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
const char *rg_exec_set_allow(rg_tool_host_t *host, void *conf, int argc,
    const char **argv);
const char *rg_exec_set_read_only(rg_tool_host_t *host, void *conf, int argc,
    const char **argv);
const char *rg_exec_set_network(rg_tool_host_t *host, void *conf, int argc,
    const char **argv);
const char *rg_exec_set_max_cpu(rg_tool_host_t *host, void *conf, int argc,
    const char **argv);
const char *rg_exec_set_max_memory(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
const char *rg_exec_set_max_file_size(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
const char *rg_exec_set_max_processes(rg_tool_host_t *host, void *conf,
    int argc, const char **argv);
const char *rg_exec_set_size(rg_tool_host_t *host, uint64_t *field,
    const char *arg);
void *rg_exec_create_conf(rg_tool_host_t *host);
int rg_exec_init(rg_tool_host_t *host, void *conf);
void rg_exec_exit(rg_tool_host_t *host, void *conf);
int rg_exec_start(rg_tool_call_t *call);
void rg_exec_cancel(rg_tool_call_t *call);
int rg_exec_argv(rg_tool_call_t *call, rg_exec_argv_t *a, char *err,
    size_t err_len);
int rg_exec_allowed(rg_tool_call_t *call, const char *name);
char *rg_exec_cwd(rg_tool_call_t *call);
int rg_exec_lookup(rg_tool_call_t *call, const char *name, char *prog,
    size_t size);

/* exec_confine.c */
int rg_exec_landlock_rule(int ruleset, const char *path, uint64_t access,
    uint64_t handled);
int rg_exec_ruleset(const rg_exec_conf_t *ecf, const char **bad);
int rg_exec_landlock_init(rg_tool_host_t *host, rg_exec_conf_t *ecf);
int rg_exec_network_init(rg_tool_host_t *host, rg_exec_conf_t *ecf);
void rg_exec_child(const rg_exec_spawn_t *sp, int errfd)
    __attribute__((noreturn));

/* exec_run.c */
int rg_exec_run(rg_tool_call_t *call, const char *prog, char **argv,
    const char *cwd);
int rg_exec_watch(rg_exec_run_t *r);
void rg_exec_wait(rg_exec_run_t *r);
void rg_exec_pipe_handler(int fd, int events, void *data);
void rg_exec_pipe_read(rg_exec_run_t *r, rg_exec_pipe_t *pp);
void rg_exec_status_handler(int fd, int events, void *data);
void rg_exec_read_status(rg_exec_run_t *r);
void rg_exec_child_handler(int pid, int status, void *data);
void rg_exec_timer_handler(void *data);
void rg_exec_arm(rg_exec_run_t *r, uint64_t ms);
int rg_exec_on_time(rg_exec_run_t *r);
int rg_exec_check(rg_exec_run_t *r);
void rg_exec_answer(rg_exec_run_t *r);
void rg_exec_free(rg_exec_run_t *r);

/* exec_supervisor.c */
int rg_exec_fds_keep(int **fds, int n);
void rg_exec_supervise(const rg_exec_spawn_t *spawn)
    __attribute__((noreturn));
void rg_exec_kill_tree(pid_t main, int sig);
int rg_exec_close_from(int from, int to);
void rg_exec_report(int fd, int kind, int a, int b);
int rg_exec_drain(rg_exec_pipe_t *pp, size_t max);
int rg_exec_pipe(int fds[2]);
int rg_exec_fd_up(int *fd);

/* exec_text.c */
void rg_exec_section(rg_exec_buf_t *b, const char *name,
    const rg_exec_pipe_t *pp);
uint64_t rg_exec_now(void);
void rg_exec_show(const char *s, size_t len, char *buf, size_t size);
const char *rg_exec_strerror(int err, char *buf, size_t len);
void rg_exec_buf_add(rg_exec_buf_t *b, const char *data, size_t len);
void rg_exec_buf_printf(rg_exec_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* RG_EXEC_H */
