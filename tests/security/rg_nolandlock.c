/* rg_nolandlock.c: runs a program as if the kernel had no Landlock, for
 * tests/security/test_security.sh: a seccomp filter makes the three
 * landlock_* system calls fail with ENOSYS (what an older kernel
 * answers), then it execs its arguments, which inherit the filter.
 *
 *     rg_nolandlock PROGRAM [ARGS...]
 *
 * Exits 77 with a line on stderr when it cannot install the filter here
 * (an architecture it does not know, a kernel without seccomp), so that
 * the test can skip; 127 when the program cannot be run. */

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>


#if defined(__x86_64__)
#define RG_NL_ARCH  AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define RG_NL_ARCH  AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#define RG_NL_ARCH  AUDIT_ARCH_I386
#endif


int
main(int argc, char **argv)
{
#if defined(RG_NL_ARCH) && defined(__NR_landlock_create_ruleset)
    struct sock_filter  filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RG_NL_ARCH, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_landlock_create_ruleset,
                 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_landlock_add_rule, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_landlock_restrict_self,
                 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & 0xffff)),
    };
    struct sock_fprog   prog;

    if (argc < 2) {
        fprintf(stderr, "usage: rg_nolandlock PROGRAM [ARGS...]\n");
        return 2;
    }

    prog.len = (unsigned short) (sizeof(filter) / sizeof(filter[0]));
    prog.filter = filter;

    /* a filter needs no_new_privs unless the caller is privileged */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1
        || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == -1)
    {
        fprintf(stderr, "rg_nolandlock: cannot install a seccomp filter: "
                "%s\n", strerror(errno));
        return 77;
    }

    execvp(argv[1], argv + 1);

    fprintf(stderr, "rg_nolandlock: %s: %s\n", argv[1], strerror(errno));
    return 127;
#else
    (void) argc;
    (void) argv;

    fprintf(stderr, "rg_nolandlock: no seccomp filter for this "
            "architecture\n");
    return 77;
#endif
}
