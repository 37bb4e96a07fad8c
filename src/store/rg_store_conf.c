/* rg_store_conf.c: the store part: `store memory [max_keys=N]
 * [max_bytes=SIZE];` at the main level, and the store each engine makes
 * from it. The Redis store's directives (`store redis { }`) belong here
 * too, beside the memory store's, when they come. The store interface
 * itself is rg_store.h. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_store.h>
#include <rg_store_conf.h>


static char *rg_store_directive(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static void *rg_store_create_conf(rg_cycle_t *cycle);
static char *rg_store_init_conf(rg_cycle_t *cycle, void *conf);
static rg_int_t rg_store_init_worker(rg_engine_t *e);
static void rg_store_exit_worker(rg_engine_t *e);


static rg_command_t  rg_store_commands[] = {

    { rg_string("store"), RG_MAIN_CONF|RG_CONF_TAKE123,
      rg_store_directive, 0, NULL },

      rg_null_command
};


rg_part_t  rg_store_part = {
    .name = "store",
    .commands = rg_store_commands,
    .create_conf = rg_store_create_conf,
    .init_conf = rg_store_init_conf,
    .init_worker = rg_store_init_worker,
    .exit_worker = rg_store_exit_worker
};


/* store memory max_keys=100000 max_bytes=64m; */
static char *
rg_store_directive(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    size_t            n;
    rg_int_t          v;
    rg_str_t         *a, s;
    rg_uint_t         i;
    rg_store_conf_t  *scf;

    scf = conf;

    if (!rg_str_eq(&cf->args[1], "memory")) {
        return "names a store other than \"memory\": the store of one "
               "process is \"memory\"";
    }

    if (scf->type != RG_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    scf->type = RG_STORE_MEMORY;
    scf->max_keys = 100000;
    scf->max_bytes = 64 * 1024 * 1024;

    for (i = 2; i < cf->nargs; i++) {
        a = &cf->args[i];

        if (a->len > 9 && memcmp(a->data, "max_keys=", 9) == 0) {
            v = rg_atoi(a->data + 9, a->len - 9);
            if (v < 1) {
                return "expects max_keys=N with N of 1 or more";
            }
            scf->max_keys = v;

        } else if (a->len > 10 && memcmp(a->data, "max_bytes=", 10) == 0) {
            s.data = a->data + 10;
            s.len = a->len - 10;
            if (rg_conf_parse_size(&s, &n) != RG_OK || n < 1024) {
                return "expects max_bytes=SIZE of 1k or more, such as 64m";
            }
            scf->max_bytes = n;

        } else {
            return "expects max_keys=N or max_bytes=SIZE";
        }
    }

    return RG_CONF_OK;
}


static void *
rg_store_create_conf(rg_cycle_t *cycle)
{
    rg_store_conf_t  *scf;

    scf = rg_pcalloc(cycle->pool, sizeof(rg_store_conf_t));
    if (scf == NULL) {
        return NULL;
    }

    scf->type = RG_CONF_UNSET_UINT;

    return scf;
}


static char *
rg_store_init_conf(rg_cycle_t *cycle, void *conf)
{
    rg_store_conf_t  *scf;

    scf = conf;

    if (scf->type == RG_CONF_UNSET_UINT) {
        scf->type = RG_STORE_MEMORY;
        scf->max_keys = 100000;
        scf->max_bytes = 64 * 1024 * 1024;
    }

    return RG_CONF_OK;
}


static rg_int_t
rg_store_init_worker(rg_engine_t *e)
{
    rg_store_t       *st;
    rg_store_conf_t  *scf;

    scf = rg_store_conf(e->cycle);

    st = rg_store_memory_create(e->base, (rg_uint_t) scf->max_keys,
                                scf->max_bytes);
    if (st == NULL) {
        return RG_ERROR;
    }

    rg_engine_ctx(e, &rg_store_part) = st;

    return RG_OK;
}


static void
rg_store_exit_worker(rg_engine_t *e)
{
    rg_store_t  *st;

    st = rg_store_ctx(e);

    if (st) {
        st->destroy(st);
        rg_engine_ctx(e, &rg_store_part) = NULL;
    }
}
