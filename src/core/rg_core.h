/* rg_core.h: the umbrella header of reagent's core. Every .c file of src/
 * includes rg_config.h and this, and nothing of the core by itself. */

#ifndef RG_CORE_H
#define RG_CORE_H

#include <rg_config.h>

typedef struct rg_pool_s    rg_pool_t;
typedef struct rg_log_s     rg_log_t;
typedef struct rg_conf_s    rg_conf_t;
typedef struct rg_command_s rg_command_t;
typedef struct rg_cycle_s   rg_cycle_t;
typedef struct rg_engine_s  rg_engine_t;
typedef struct rg_part_s    rg_part_t;

#include <rg_string.h>
#include <rg_buf.h>
#include <rg_palloc.h>
#include <rg_array.h>
#include <rg_log.h>
#include <rg_times.h>
#include <rg_conf_file.h>
#include <rg_conf_block.h>
#include <rg_part.h>

#endif /* RG_CORE_H */
