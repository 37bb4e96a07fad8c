/* rg_cycle.c: builds a cycle from a configuration through the parts
 * (rg_part.h): their configurations are created, the file is read with
 * their directives, and each completes its own; the cycle is kept while
 * code it loaded still runs in a thread. A cycle read for a client
 * command (cycle->client) is built the same way; the parts themselves
 * skip what only the daemon needs. Knows no part and no directive: the
 * main ones that are the core's own live in rg_core_conf.c. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>


static rg_cycle_t  *rg_cycle_kept_head;


void
rg_cycle_error(rg_cycle_t *cycle, const char *file, rg_uint_t line,
    const char *fmt, ...)
{
    int      n;
    size_t   len;
    va_list  args;

    va_start(args, fmt);
    n = vsnprintf(cycle->errmsg, sizeof(cycle->errmsg), fmt, args);
    va_end(args);

    len = n < 0 ? 0 : rg_min((size_t) n, sizeof(cycle->errmsg) - 1);

    if (file && line && len < sizeof(cycle->errmsg) - 1) {
        snprintf(cycle->errmsg + len, sizeof(cycle->errmsg) - len,
                 " in %s:%lu", file, (unsigned long) line);

    } else if (file && len < sizeof(cycle->errmsg) - 1) {
        snprintf(cycle->errmsg + len, sizeof(cycle->errmsg) - len,
                 " in %s", file);
    }

    rg_log_error(RG_LOG_EMERG, cycle->log, 0, "%s", cycle->errmsg);
}


static void
rg_cycle_close_log(void *data)
{
    rg_cycle_t  *cycle;

    cycle = data;

    /* only a file this cycle opened: the caller's log stays open */
    if (cycle->log_opened) {
        close(cycle->new_log.fd);
        cycle->log_opened = 0;
    }
}


static rg_cycle_t *
rg_cycle_read(const char *conf_file, const char *conf_text,
    rg_uint_t client, rg_log_t *log, char *errmsg, size_t errlen)
{
    char        *rv;
    rg_uint_t    i, n;
    rg_conf_t    cf;
    rg_pool_t   *pool;
    rg_part_t   *part;
    rg_cycle_t  *cycle;

    n = rg_parts_count();

    pool = rg_pool_create(16384);
    if (pool == NULL) {
        snprintf(errmsg, errlen, "out of memory");
        return NULL;
    }

    cycle = rg_pcalloc(pool, sizeof(rg_cycle_t));
    if (cycle == NULL
        || (cycle->conf = rg_pcalloc(pool, n * sizeof(void *))) == NULL)
    {
        rg_pool_destroy(pool);
        snprintf(errmsg, errlen, "out of memory");
        return NULL;
    }

    cycle->pool = pool;
    cycle->log = log;
    cycle->client = client;
    cycle->new_log = *log;
    cycle->new_log.handler = NULL;
    cycle->conf_file = conf_file ? rg_pstrdup(pool, conf_file,
                                              strlen(conf_file)) : NULL;

    /* the log file is closed with the pool */
    if (rg_pool_cleanup_add(pool, rg_cycle_close_log, cycle) == NULL) {
        rg_pool_destroy(pool);
        snprintf(errmsg, errlen, "out of memory");
        return NULL;
    }

    for (i = 0; i < n; i++) {
        part = rg_parts[i];

        if (part->create_conf == NULL) {
            continue;
        }

        cycle->conf[i] = part->create_conf(cycle);
        if (cycle->conf[i] == NULL) {
            snprintf(errmsg, errlen, "out of memory");
            goto failed;
        }
    }

    memset(&cf, 0, sizeof(cf));
    cf.pool = pool;
    cf.cycle = cycle;
    cf.log = log;
    cf.ctx = cycle->conf;
    cf.ctx_type = RG_MAIN_CONF;
    cf.parts = rg_parts;

    if (conf_text) {
        rv = rg_conf_parse_string(&cf, conf_file ? conf_file : "(embedded)",
                                  conf_text);
    } else {
        rv = rg_conf_parse_file(&cf, conf_file);
    }

    if (rv != RG_CONF_OK) {
        snprintf(errmsg, errlen, "%s", cf.errmsg);
        goto failed;
    }

    for (i = 0; i < n; i++) {
        part = rg_parts[i];

        if (part->init_conf
            && part->init_conf(cycle, cycle->conf[i]) != RG_CONF_OK)
        {
            snprintf(errmsg, errlen, "%s", cycle->errmsg);
            goto failed;
        }
    }

    cycle->log = &cycle->new_log;

    return cycle;

failed:

    rg_pool_destroy(pool);
    return NULL;
}


rg_cycle_t *
rg_cycle_create(const char *conf_file, const char *conf_text, rg_log_t *log,
    char *errmsg, size_t errlen)
{
    return rg_cycle_read(conf_file, conf_text, 0, log, errmsg, errlen);
}


rg_cycle_t *
rg_cycle_create_client(const char *conf_file, rg_log_t *log, char *errmsg,
    size_t errlen)
{
    return rg_cycle_read(conf_file, NULL, 1, log, errmsg, errlen);
}


/* some of its code may still run in a thread that was left behind */
static rg_uint_t
rg_cycle_busy(rg_cycle_t *cycle)
{
    return atomic_load_explicit(&cycle->busy, memory_order_acquire) != 0;
}


void
rg_cycle_destroy(rg_cycle_t *cycle)
{
    rg_cycle_t  **cp, *c;

    for (cp = &rg_cycle_kept_head; *cp; /* void */) {
        c = *cp;

        if (rg_cycle_busy(c)) {
            cp = &c->next_kept;
            continue;
        }

        *cp = c->next_kept;
        rg_pool_destroy(c->pool);
    }

    if (cycle == NULL) {
        return;
    }

    if (rg_cycle_busy(cycle)) {
        rg_log_error(RG_LOG_WARN, cycle->log, 0, "a blocking tool still "
                     "runs in a thread: its configuration and modules stay "
                     "loaded until it returns");
        cycle->next_kept = rg_cycle_kept_head;
        rg_cycle_kept_head = cycle;
        return;
    }

    rg_pool_destroy(cycle->pool);
}


rg_uint_t
rg_cycle_kept(void)
{
    rg_uint_t    n;
    rg_cycle_t  *c;

    n = 0;
    for (c = rg_cycle_kept_head; c; c = c->next_kept) {
        n++;
    }

    return n;
}


rg_int_t
rg_cycle_init_master(rg_cycle_t *cycle, char *err, size_t len)
{
    rg_int_t    rc, any;
    rg_uint_t   i;

    any = RG_DECLINED;

    for (i = 0; rg_parts[i]; i++) {
        if (rg_parts[i]->init_master == NULL) {
            continue;
        }

        rc = rg_parts[i]->init_master(cycle, err, len);

        if (rc == RG_ERROR) {
            return RG_ERROR;
        }

        if (rc == RG_OK) {
            any = RG_OK;
        }
    }

    return any;
}
