/* rg_conf_block.c: makes the conf structs of the parts and of their
 * blocks. The directive table already says which field each generic
 * setter writes and of which kind it is, so it also says how each starts
 * out unset: a part lists only what no table sets. Named blocks are kept
 * as an array of pointers in the part's main conf; a block that may
 * appear once says so. Knows nothing of any part; the parsing itself is
 * rg_conf_file.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <math.h>


void
rg_conf_unset(rg_command_t *cmds, rg_uint_t ctx, void *conf)
{
    char          *p;
    rg_command_t  *cmd;

    for (cmd = cmds; cmd->name.len; cmd++) {
        if (!(cmd->type & ctx)) {
            continue;
        }

        p = (char *) conf + cmd->offset;

        if (cmd->set == rg_conf_set_num_slot
            || cmd->set == rg_conf_set_flag_slot)
        {
            *(rg_int_t *) p = RG_CONF_UNSET;

        } else if (cmd->set == rg_conf_set_msec_slot) {
            *(rg_msec_t *) p = RG_CONF_UNSET_MSEC;

        } else if (cmd->set == rg_conf_set_size_slot) {
            *(size_t *) p = RG_CONF_UNSET_SIZE;

        } else if (cmd->set == rg_conf_set_enum_slot) {
            *(rg_uint_t *) p = RG_CONF_UNSET_UINT;

        } else if (cmd->set == rg_conf_set_double_slot) {
            *(double *) p = NAN;
        }

        /* strings and arrays: NULL, as the pool's zeroes left them */
    }
}


void *
rg_conf_create(rg_pool_t *pool, size_t size, rg_command_t *cmds,
    rg_uint_t ctx)
{
    void  *conf;

    conf = rg_pcalloc(pool, size);
    if (conf == NULL) {
        return NULL;
    }

    rg_conf_unset(cmds, ctx, conf);

    return conf;
}


void *
rg_conf_create_named(rg_pool_t *pool, size_t size, rg_command_t *cmds,
    size_t blocks)
{
    void  *conf;

    conf = rg_conf_create(pool, size, cmds, RG_MAIN_CONF);
    if (conf == NULL
        || rg_array_init((rg_array_t *) ((char *) conf + blocks), pool, 4,
                         sizeof(void *))
           != RG_OK)
    {
        return NULL;
    }

    return conf;
}


void *
rg_conf_find_named(const rg_array_t *blocks, const char *name, size_t len)
{
    rg_str_t   **b;
    rg_uint_t    i;

    b = blocks->elts;

    for (i = 0; i < blocks->nelts; i++) {
        if (b[i]->len == len && memcmp(b[i]->data, name, len) == 0) {
            return b[i];
        }
    }

    return NULL;
}


void *
rg_conf_add_named(rg_conf_t *cf, rg_array_t *blocks, size_t size,
    rg_command_t *cmds, rg_uint_t ctx)
{
    void  *conf, **p;

    conf = rg_conf_create(cf->pool, size, cmds, ctx);
    p = rg_array_push(blocks);
    if (conf == NULL || p == NULL) {
        return NULL;
    }

    *p = conf;
    *(rg_str_t *) conf = cf->args[1];

    return conf;
}


char *
rg_conf_block_once(rg_conf_t *cf, rg_uint_t type, void *ctx,
    rg_uint_t *declared, const char **file, rg_uint_t *line)
{
    if (*declared) {
        return "is duplicate";
    }

    *declared = 1;
    *file = rg_conf_file_name(cf);
    *line = rg_conf_line(cf);

    return rg_conf_block(cf, type, ctx);
}
