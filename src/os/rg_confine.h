/* rg_confine.h: what this kernel offers to confine the programs the exec
 * module runs (Landlock, network namespaces), for `reagent -V`. The exec
 * module probes the same facts itself: modules link nothing of reagent. */

#ifndef RG_CONFINE_H
#define RG_CONFINE_H

#include <rg_config.h>

/* the Landlock ABI version, or 0 with errno when there is none */
int rg_confine_landlock_abi(void);

/* one line: "landlock ABI 7, no_new_privs, rlimits, network namespaces" or
 * what is missing */
const char *rg_confine_describe(void);

#endif /* RG_CONFINE_H */
