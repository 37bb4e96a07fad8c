/* rg_confine.c: probes the kernel's means to confine programs: the
 * Landlock ABI (a raw syscall; glibc has no wrapper) and whether a new
 * network namespace can be made (tried in a short-lived child, so this
 * process keeps its own). Makes no change to this process. */

#include <rg_config.h>
#include <rg_confine.h>
#include <linux/landlock.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>


int
rg_confine_landlock_abi(void)
{
#ifdef SYS_landlock_create_ruleset
    long  v;

    v = syscall(SYS_landlock_create_ruleset, NULL, 0,
                LANDLOCK_CREATE_RULESET_VERSION);

    return v > 0 ? (int) v : 0;
#else
    errno = ENOSYS;
    return 0;
#endif
}


/* 1 when a child can unshare(CLONE_NEWNET), alone or in a new user
 * namespace */
static int
rg_confine_netns(void)
{
    int    status;
    pid_t  pid;

    pid = fork();
    if (pid == -1) {
        return 0;
    }

    if (pid == 0) {
        _exit(unshare(CLONE_NEWNET) == 0
              || unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 ? 0 : 1);
    }

    while (waitpid(pid, &status, 0) == -1) {
        if (errno != EINTR) {
            return 0;
        }
    }

    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}


const char *
rg_confine_describe(void)
{
    int          abi, err, net;
    static char  buf[256];

    abi = rg_confine_landlock_abi();
    err = errno;
    net = rg_confine_netns();

    /* signal scoping came with ABI 6: below it a program may signal
     * every process of reagent's user, its supervisor and reagent too */
    if (abi > 0) {
        snprintf(buf, sizeof(buf), "landlock ABI %d%s, no_new_privs, "
                 "rlimits, %s", abi,
                 abi < 6 ? " (no signal scoping: programs may signal "
                           "every process of reagent's user)" : "",
                 net ? "network namespaces"
                     : "no network namespaces (network off is refused)");
    } else {
        snprintf(buf, sizeof(buf), "no landlock (%s): exec's programs are "
                 "not confined to its root; no_new_privs, rlimits, %s",
                 strerror(err), net ? "network namespaces"
                                    : "no network namespaces");
    }

    return buf;
}
