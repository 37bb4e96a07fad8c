/* exec_confine.c: what confines a program the exec tool runs: the
 * Landlock ruleset built at init (and again in a process forked after
 * it), the probe of a network namespace for `network off`, and the
 * program's own process, which applies its limits, namespace,
 * capabilities (none), no_new_privs and ruleset before execve().
 * Between fork() and execve() only system calls run. */

#include "exec.h"


/* the ruleset attribute of the newest ABI; older kernels read less of it */
typedef struct {
    uint64_t                  handled_access_fs;
    uint64_t                  handled_access_net;
    uint64_t                  scoped;
} rg_exec_ll_attr_t;


/* one path beneath which the ruleset allows access; 0, 1 when the path
 * does not exist, or -1 with errno */
int
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
int
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
int
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
int
rg_exec_network_init(rg_tool_host_t *host, rg_exec_conf_t *ecf)
{
    int    status, i;
    char   err[128];
    pid_t  pid;

    if (ecf->network) {
        return 0;
    }

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


/* Leaves the process no capability, for good: the ambient set, and
 * where it may (CAP_SETPCAP, which root has) the bounding set and the
 * securebits that make uid 0 an ordinary user at execve() (else root
 * would get the whole bounding set back, and Landlock does not stop
 * what capabilities allow: modules, mounts, raw sockets, chown). Then
 * the permitted, effective and inheritable sets, all empty. Root that
 * cannot do all of it (no CAP_SETPCAP) is refused. 0 or -1. */
static int
rg_exec_caps_drop(void)
{
    int                               cap, rc;
    struct __user_cap_header_struct   hd;
    struct __user_cap_data_struct     data[2];

    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == -1
        && errno != EINVAL)
    {
        return -1;
    }

    memset(&hd, 0, sizeof(hd));
    memset(data, 0, sizeof(data));
    hd.version = _LINUX_CAPABILITY_VERSION_3;

    if (syscall(SYS_capget, &hd, data) == -1) {
        return -1;
    }

    if (data[0].effective & CAP_TO_MASK(CAP_SETPCAP)) {
        if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED
                  | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED
                  | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE
                  | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED, 0, 0, 0) == -1)
        {
            return -1;
        }

        /* up to the kernel's last capability, which READ says */
        for (cap = 0; cap < 64; cap++) {
            rc = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
            if (rc == -1) {
                break;
            }

            if (rc == 1 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1) {
                return -1;
            }
        }

    } else if (geteuid() == 0) {
        errno = EPERM;
        return -1;
    }

    memset(data, 0, sizeof(data));

    return syscall(SYS_capset, &hd, data) == -1 ? -1 : 0;
}


/* The program's process: its own group, dead with the supervisor, its
 * descriptors, working directory, limits, network, capabilities,
 * no_new_privs and Landlock, then execve(). A failed step is written to
 * errfd. */
void
rg_exec_child(const rg_exec_spawn_t *sp, int errfd)
{
    int                    e, step;
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

            /* no uid or gid map: the child is a copy of the worker,
             * which is not dumpable, so its /proc/self/uid_map is
             * root's and cannot be written; made dumpable for the
             * write, it would open the worker's memory (the key among
             * it) to every process of the user. Unmapped, the program
             * sees itself as the overflow uid (65534) while the kernel
             * checks and owns its files as reagent's user. */
        }
    }

    step = RG_EXEC_STEP_CAPS;

    if (rg_exec_caps_drop() != 0) {
        goto failed;
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
