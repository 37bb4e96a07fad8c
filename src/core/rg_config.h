/* rg_config.h: the system headers and basic types every reagent file uses.
 * Build-time facts come from objs/rg_auto_config.h, written by configure. */

#ifndef RG_CONFIG_H
#define RG_CONFIG_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <rg_auto_config.h>

#include <sys/types.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>
#include <time.h>
#include <limits.h>
#include <assert.h>


typedef intptr_t   rg_int_t;
typedef uintptr_t  rg_uint_t;
typedef uint64_t   rg_msec_t;

#define RG_OK          0
#define RG_ERROR      -1
#define RG_AGAIN      -2
#define RG_BUSY       -3
#define RG_DONE       -4
#define RG_DECLINED   -5

#define rg_min(a, b)   ((a) < (b) ? (a) : (b))
#define rg_max(a, b)   ((a) > (b) ? (a) : (b))
#define rg_nelems(a)   (sizeof(a) / sizeof((a)[0]))

#define RG_UNUSED(x)   (void) (x)

#endif /* RG_CONFIG_H */
