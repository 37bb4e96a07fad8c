/* rg_directives.h: `reagent directives [NAME]`, the reference of every
 * directive, printed from the parts' tables (see rg_directives.c). */

#ifndef RG_DIRECTIVES_H
#define RG_DIRECTIVES_H

#include <rg_config.h>
#include <rg_core.h>


/* a command of the core's: it reads no configuration */
extern const rg_cli_t  rg_directives_cli;

#endif /* RG_DIRECTIVES_H */
