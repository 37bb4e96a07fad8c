/* rg_isolate_helper.h: the processes of an isolated module
 * (rg_isolate_helper.c), as the worker's side (rg_isolate.c) starts them:
 * the descriptors they are handed, how they exit when they cannot go on,
 * and their entry points. */

#ifndef RG_ISOLATE_HELPER_H
#define RG_ISOLATE_HELPER_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_module.h>


#define RG_ISOLATE_FD            3          /* the helper's socket */
#define RG_ISOLATE_ZYGOTE_FD     3          /* the zygote's socket */
#define RG_ISOLATE_ZYGOTE_NAME   "rg-zygote"  /* its comm, in ps */

/* how a helper ends when it cannot go on */
#define RG_ISOLATE_EXIT_SETUP    70
#define RG_ISOLATE_EXIT_PROTOCOL 71


/* The zygote, in the process the worker just forked: serves requests
 * for helpers on fd (SOCK_SEQPACKET, one socket per request), each
 * cloned with CLONE_PARENT and named comm, until the worker closes its
 * end. parent is the worker's pid. */
void rg_isolate_zygote_main(rg_module_t *m, rg_uint_t log_level,
    const char *comm, int fd, pid_t parent) __attribute__((noreturn));

/* A helper of module m on socket fd: says hello, then serves one call at
 * a time until the worker closes its end. other (or -1) is a descriptor
 * to keep off 0-2. */
void rg_isolate_helper_main(rg_module_t *m, rg_uint_t log_level, int fd,
    int other, pid_t parent) __attribute__((noreturn));

#endif /* RG_ISOLATE_HELPER_H */
