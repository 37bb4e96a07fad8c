/* rg_module.c: loads tool modules. `load_module PATH [isolated];` dlopens
 * the file (a relative PATH from the configuration file's folder, never
 * from the library search path) with RTLD_NOW|RTLD_LOCAL and checks the
 * exported rg_tool_module (ABI version, struct size, signature) before it
 * reads anything else; `module NAME { … }` hands directives to the
 * module's own table. Modules are initialized once the whole file is read
 * and unloaded with the cycle's pool. Keeps the registry of the tools
 * they bring; how a model is told of a tool is the llm part's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_module.h>
#include <rg_tools_conf.h>
#include <dlfcn.h>
#include <jansson.h>
#include <libgen.h>


/* A relative PATH is tried in the folder of the configuration file that
 * names it, then by its base name in modules/ next to the binary
 * (objs/modules/ in a build tree) and in the installed module folder.
 * Every candidate holds a slash, so dlopen() never searches the library
 * path (LD_LIBRARY_PATH, the cache) for it. */
static char *
rg_module_find_file(rg_conf_t *cf, const rg_str_t *name, char *tried,
    size_t tlen)
{
    char         exe[PATH_MAX], *dir, *p, *full;
    ssize_t      n;
    rg_uint_t    i;
    const char  *base, *cands[3];
    char         buf[3][PATH_MAX];

    if (name->data[0] == '/') {
        return rg_pstrdup(cf->pool, name->data, name->len);
    }

    base = strrchr(name->data, '/');
    base = base ? base + 1 : name->data;

    full = rg_conf_full_path(cf, name);
    if (full == NULL) {
        return NULL;
    }

    /* a file in the current folder still needs its "./" */
    snprintf(buf[0], PATH_MAX, "%s%s", strchr(full, '/') ? "" : "./", full);
    cands[0] = buf[0];

    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        dir = dirname(exe);
        snprintf(buf[1], PATH_MAX, "%s/modules/%s", dir, base);
    } else {
        buf[1][0] = '\0';
    }
    cands[1] = buf[1];

    snprintf(buf[2], PATH_MAX, "%s/%s", RG_MODULES_PATH, base);
    cands[2] = buf[2];

    tried[0] = '\0';

    for (i = 0; i < 3; i++) {
        if (cands[i][0] == '\0') {
            continue;
        }

        if (access(cands[i], R_OK) == 0) {
            return rg_pstrdup(cf->pool, cands[i], strlen(cands[i]));
        }

        p = tried + strlen(tried);
        snprintf(p, tlen - (p - tried), "%s\"%s\"", i ? ", " : "", cands[i]);
    }

    return NULL;
}


/* a tool's name must be text a model can be told: UTF-8, as JSON has it
 * (its parameters are checked the same way, by jansson) */
static rg_uint_t
rg_module_name_ok(const char *name)
{
    json_t  *s;

    s = json_string(name);
    json_decref(s);

    return s != NULL;
}


char *
rg_module_load_directive(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    char               *path, tried[3 * PATH_MAX + 16];
    void               *h;
    rg_uint_t           i;
    rg_cycle_t         *cycle;
    rg_module_t        *m, **mp;
    rg_tools_conf_t    *tcf;
    rg_tool_entry_t    *te;
    json_t             *schema;
    rg_tool_module_t   *mod;
    const rg_tool_t    *t;

    tcf = conf;
    cycle = cf->cycle;

    if (cf->nargs == 3 && !rg_str_eq(&cf->args[2], "isolated")) {
        return "expects \"isolated\" as its second argument";
    }

    path = rg_module_find_file(cf, &cf->args[1], tried, sizeof(tried));
    if (path == NULL) {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "module \"%s\" not found (looked at %s)",
                          cf->args[1].data, tried);
        return RG_CONF_ERROR;
    }

    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0, "dlopen() \"%s\" failed: %s",
                          path, dlerror());
        return RG_CONF_ERROR;
    }

    mod = dlsym(h, "rg_tool_module");
    if (mod == NULL) {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "module \"%s\" exports no \"rg_tool_module\" "
                          "symbol: is it a reagent tool module?", path);
        dlclose(h);
        return RG_CONF_ERROR;
    }

    if (mod->abi_version != RG_TOOL_ABI_VERSION) {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "module \"%s\" was built for tool ABI version %u, "
                          "this reagent speaks version %u: rebuild it",
                          path, mod->abi_version, RG_TOOL_ABI_VERSION);
        dlclose(h);
        return RG_CONF_ERROR;
    }

    if (mod->size != sizeof(rg_tool_module_t) || mod->signature == NULL
        || strcmp(mod->signature, RG_TOOL_SIGNATURE) != 0)
    {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "module \"%s\" is not binary compatible "
                          "(signature \"%s\", expected \"%s\"): rebuild it",
                          path, mod->signature ? mod->signature : "",
                          RG_TOOL_SIGNATURE);
        dlclose(h);
        return RG_CONF_ERROR;
    }

    if (mod->name == NULL || mod->tools == NULL) {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "module \"%s\" has no name or no tools table",
                          path);
        dlclose(h);
        return RG_CONF_ERROR;
    }

    mp = tcf->modules.elts;
    for (i = 0; i < tcf->modules.nelts; i++) {
        if (strcmp(mp[i]->mod->name, mod->name) == 0) {
            rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                              "module \"%s\" is already loaded", mod->name);
            dlclose(h);
            return RG_CONF_ERROR;
        }
    }

    m = rg_pcalloc(cf->pool, sizeof(rg_module_t));
    mp = rg_array_push(&tcf->modules);
    if (m == NULL || mp == NULL) {
        dlclose(h);
        return RG_CONF_ERROR;
    }

    *mp = m;
    m->path = path;
    m->handle = h;
    m->mod = mod;
    m->isolated = cf->nargs == 3;
    m->log = &cycle->new_log;
    m->cycle = cycle;
    m->file = rg_conf_file_name(cf);
    m->line = rg_conf_line(cf);
    m->index = tcf->modules.nelts - 1;
    rg_tools_host_init(&m->host, &m->bind, m, NULL);

    if (mod->create_conf) {
        m->conf = mod->create_conf(&m->host);
        if (m->conf == NULL) {
            rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                              "module \"%s\" could not create its "
                              "configuration", mod->name);
            return RG_CONF_ERROR;
        }
    }

    /* register its tools */
    for (t = mod->tools; t->name; t++) {
        if (t->start == NULL || t->parameters == NULL) {
            rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                              "module \"%s\": tool \"%s\" has no handler "
                              "or no parameters", mod->name, t->name);
            return RG_CONF_ERROR;
        }

        if (rg_module_find_tool(cycle, t->name, strlen(t->name))) {
            rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                              "module \"%s\": a tool named \"%s\" is "
                              "already loaded", mod->name, t->name);
            return RG_CONF_ERROR;
        }

        schema = json_loads(t->parameters, 0, NULL);

        if (!json_is_object(schema) || !rg_module_name_ok(t->name)) {
            json_decref(schema);
            rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                              "module \"%s\": tool \"%s\" has parameters "
                              "that are not a JSON object", mod->name,
                              t->name);
            return RG_CONF_ERROR;
        }

        te = rg_array_push(&tcf->tools);
        if (te == NULL) {
            json_decref(schema);
            return RG_CONF_ERROR;
        }

        te->tool = t;
        te->module = m;
        te->schema = schema;
    }

    return RG_CONF_OK;
}


typedef struct {
    rg_module_t        *module;
} rg_module_block_ctx_t;


static char *
rg_module_directive(rg_conf_t *cf, void *data)
{
    rg_uint_t                   i, argc;
    const char                 *argv[RG_CONF_MAX_ARGS], *rv;
    rg_module_t                *m;
    const rg_tool_directive_t  *d;

    m = data;

    for (d = m->mod->directives; d && d->name; d++) {
        if (cf->args[0].len == strlen(d->name)
            && memcmp(cf->args[0].data, d->name, cf->args[0].len) == 0)
        {
            break;
        }
    }

    if (d == NULL || d->name == NULL) {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "unknown directive \"%.*s\" in module \"%s\"",
                          (int) cf->args[0].len, cf->args[0].data,
                          m->mod->name);
        return RG_CONF_ERROR;
    }

    argc = cf->nargs - 1;

    if (argc < d->min_args || argc > d->max_args) {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0,
                          "invalid number of arguments in \"%s\" directive",
                          d->name);
        return RG_CONF_ERROR;
    }

    for (i = 0; i < argc; i++) {
        argv[i] = cf->args[i + 1].data;
    }

    rv = d->set(&m->host, m->conf, (int) argc, argv);

    if (rv) {
        rg_conf_log_error(RG_LOG_EMERG, cf, 0, "\"%s\" directive %s",
                          d->name, rv);
        return RG_CONF_ERROR;
    }

    return RG_CONF_OK;
}


char *
rg_module_block_directive(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    char             *rv;
    rg_uint_t         i;
    rg_module_t     **mp, *m;
    rg_conf_t         saved;
    rg_tools_conf_t  *tcf;

    tcf = conf;
    m = NULL;

    mp = tcf->modules.elts;
    for (i = 0; i < tcf->modules.nelts; i++) {
        if (strlen(mp[i]->mod->name) == cf->args[1].len
            && memcmp(mp[i]->mod->name, cf->args[1].data, cf->args[1].len)
               == 0)
        {
            m = mp[i];
        }
    }

    if (m == NULL) {
        return "names a module that is not loaded: put its \"load_module\" "
               "first";
    }

    saved = *cf;

    cf->ctx_type = RG_MODULE_CONF;
    cf->handler = rg_module_directive;
    cf->handler_data = m;

    rv = rg_conf_parse_block(cf);

    cf->ctx_type = saved.ctx_type;
    cf->ctx = saved.ctx;
    cf->handler = saved.handler;
    cf->handler_data = saved.handler_data;

    return rv;
}


rg_int_t
rg_module_init_all(rg_cycle_t *cycle)
{
    rg_uint_t         i;
    rg_module_t     **mp;
    rg_tools_conf_t  *tcf;

    tcf = rg_tools_conf(cycle);
    mp = tcf->modules.elts;

    for (i = 0; i < tcf->modules.nelts; i++) {
        if (mp[i]->mod->init && mp[i]->mod->init(&mp[i]->host, mp[i]->conf)
            != RG_TOOL_OK)
        {
            snprintf(cycle->errmsg, sizeof(cycle->errmsg),
                     "module \"%s\" failed to initialize (%s): see the "
                     "lines above, in %s:%lu", mp[i]->mod->name,
                     mp[i]->path, mp[i]->file, (unsigned long) mp[i]->line);
            rg_log_error(RG_LOG_EMERG, cycle->log, 0, "%s", cycle->errmsg);
            return RG_ERROR;
        }

        mp[i]->initialized = 1;
    }

    return RG_OK;
}


/* a pool cleanup: the modules of a tools conf go */
static void
rg_module_unload_all(void *data)
{
    rg_uint_t         i;
    rg_module_t     **mp;
    rg_tool_entry_t  *te;
    rg_tools_conf_t  *tcf;

    tcf = data;
    mp = tcf->modules.elts;

    te = tcf->tools.elts;
    for (i = 0; i < tcf->tools.nelts; i++) {
        json_decref(te[i].schema);
        te[i].schema = NULL;
    }

    for (i = tcf->modules.nelts; i-- > 0; ) {
        /* exit() frees the conf, whether init ran or not */
        if (mp[i]->mod->exit) {
            mp[i]->mod->exit(&mp[i]->host, mp[i]->conf);
        }

#if !(RG_SANITIZERS)
        /* under ASan, keep the code mapped so leak reports can name it */
        if (mp[i]->handle) {
            dlclose(mp[i]->handle);
        }
#endif
    }
}


rg_int_t
rg_module_conf_init(rg_tools_conf_t *tcf, rg_pool_t *pool)
{
    if (rg_array_init(&tcf->modules, pool, 8, sizeof(void *)) != RG_OK
        || rg_array_init(&tcf->tools, pool, 16, sizeof(rg_tool_entry_t))
           != RG_OK)
    {
        return RG_ERROR;
    }

    /* modules are unloaded with the pool */
    if (rg_pool_cleanup_add(pool, rg_module_unload_all, tcf) == NULL) {
        return RG_ERROR;
    }

    return RG_OK;
}


rg_uint_t
rg_tool_entry_is(const rg_tool_entry_t *te, const char *name, size_t len)
{
    return strlen(te->tool->name) == len
           && memcmp(te->tool->name, name, len) == 0;
}


rg_tool_entry_t *
rg_module_find_tool(rg_cycle_t *cycle, const char *name, size_t len)
{
    rg_uint_t         i;
    rg_tool_entry_t  *te;
    rg_tools_conf_t  *tcf;

    tcf = rg_tools_conf(cycle);
    te = tcf->tools.elts;

    for (i = 0; i < tcf->tools.nelts; i++) {
        if (rg_tool_entry_is(&te[i], name, len)) {
            return &te[i];
        }
    }

    return NULL;
}


rg_int_t
rg_toolset_find(const rg_toolset_t *ts, const char *name, size_t len)
{
    rg_uint_t  i;

    for (i = 0; i < ts->ntools; i++) {
        if (rg_tool_entry_is(ts->tools[i], name, len)) {
            return (rg_int_t) i;
        }
    }

    return -1;
}


const char *
rg_module_tool_list(rg_cycle_t *cycle)
{
    char             *s;
    rg_uint_t         i;
    rg_tool_entry_t  *te, **all;
    rg_tools_conf_t  *tcf;

    tcf = rg_tools_conf(cycle);
    te = tcf->tools.elts;

    all = rg_palloc(cycle->pool, (tcf->tools.nelts + 1) * sizeof(void *));
    if (all == NULL) {
        return "";
    }

    for (i = 0; i < tcf->tools.nelts; i++) {
        all[i] = &te[i];
    }

    s = rg_module_tool_names(cycle->pool, all, tcf->tools.nelts);

    return s ? (*s ? s : "none") : "";
}


char *
rg_module_tool_names(rg_pool_t *pool, rg_tool_entry_t **tools, rg_uint_t n)
{
    char      *s;
    rg_buf_t   b;
    rg_uint_t  i;

    memset(&b, 0, sizeof(b));

    for (i = 0; i < n; i++) {
        if (rg_buf_printf(&b, "%s%s", i ? ", " : "", tools[i]->tool->name)
            != RG_OK)
        {
            rg_buf_free(&b);
            return NULL;
        }
    }

    s = rg_pstrdup(pool, b.data ? b.data : "", b.len);
    rg_buf_free(&b);

    return s;
}


/* providers ------------------------------------------------------------ */

/* a provider has no tools of its own at configuration time */
static const rg_tool_t  rg_module_no_tools[] = {
    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


rg_module_t *
rg_module_provider_add(rg_cycle_t *cycle, const char *name,
    const rg_str_t *prefix)
{
    rg_module_t       *m, **mp;
    rg_tools_conf_t   *tcf;
    rg_tool_module_t  *mod;

    tcf = rg_tools_conf(cycle);

    m = rg_pcalloc(cycle->pool, sizeof(rg_module_t));
    mod = rg_pcalloc(cycle->pool, sizeof(rg_tool_module_t));
    if (m == NULL || mod == NULL) {
        return NULL;
    }

    mod->abi_version = RG_TOOL_ABI_VERSION;
    mod->size = sizeof(rg_tool_module_t);
    mod->signature = RG_TOOL_SIGNATURE;
    mod->name = rg_pstrdup(cycle->pool, name, strlen(name));
    mod->tools = rg_module_no_tools;

    m->path = (char *) mod->name;
    m->mod = mod;
    m->log = &cycle->new_log;
    m->cycle = cycle;
    m->file = "";
    m->prefix.data = rg_pstrdup(cycle->pool, prefix->data, prefix->len);
    m->prefix.len = prefix->len;
    m->provider = 1;

    mp = rg_array_push(&tcf->modules);
    if (mod->name == NULL || m->prefix.data == NULL || mp == NULL) {
        return NULL;
    }

    *mp = m;
    m->index = tcf->modules.nelts - 1;
    rg_tools_host_init(&m->host, &m->bind, m, NULL);

    return m;
}


rg_module_t *
rg_module_provider_find(rg_cycle_t *cycle, const char *name, size_t len)
{
    rg_uint_t         i;
    rg_module_t     **mp;
    rg_tools_conf_t  *tcf;

    tcf = rg_tools_conf(cycle);
    mp = tcf->modules.elts;

    for (i = 0; i < tcf->modules.nelts; i++) {
        if (mp[i]->provider && len > mp[i]->prefix.len
            && memcmp(name, mp[i]->prefix.data, mp[i]->prefix.len) == 0)
        {
            return mp[i];
        }
    }

    return NULL;
}


rg_uint_t
rg_module_name_valid(const char *name, size_t len, rg_uint_t patterns)
{
    size_t  i;
    char    c;

    if (len == 0 || len > 64) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        c = name[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '_' || c == '-'
              || (patterns && c == '*')))
        {
            return 0;
        }
    }

    return 1;
}
