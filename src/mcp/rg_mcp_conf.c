/* rg_mcp_conf.c: the mcp part's configuration: `mcp NAME { … }` blocks,
 * each a Model Context Protocol server whose tools agents may list as
 * NAME__tool (or NAME__*): `command` (a program over stdio, with only
 * the environment `env` and `secret_env` give it) or `url` (Streamable
 * HTTP, with `header` lines whose $VARIABLES are read here, as secrets),
 * and how it is run. Each block registers a tool provider with the tools
 * part; nothing is started here: servers start in each engine
 * (rg_mcp.c), never in `reagent -t`, a master or a client command (whose
 * cycle reads none of their environment). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_mcp_conf.h>
#include <rg_module.h>
#include <rg_secret.h>


static char *rg_mcp_block(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static char *rg_mcp_command(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static char *rg_mcp_env(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static char *rg_mcp_header(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static char *rg_mcp_backoff(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static char *rg_mcp_tool_flags(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static void *rg_mcp_create_conf(rg_cycle_t *cycle);
static char *rg_mcp_init_conf(rg_cycle_t *cycle, void *conf);
static void rg_mcp_version(FILE *f);


static rg_conf_enum_t  rg_mcp_protocols[] = {
    { rg_string("auto"), RG_MCP_PROTO_AUTO },
    { rg_string("session"), RG_MCP_PROTO_SESSION },
    { rg_string("stateless"), RG_MCP_PROTO_STATELESS },
    { rg_null_string, 0 }
};

static rg_conf_num_bounds_t  rg_mcp_positive = { 1, 0 };


/* the reference of the directives below (reagent directives) */
static rg_conf_doc_t  rg_mcp_docs[] = {

    { "mcp", "mcp NAME { … }", "—",
      "a Model Context Protocol server whose tools agents name "
      "`NAME__tool` (`NAME__*`: all); it has either command or url", NULL },

    { "command", "command PROGRAM [ARG …];", "—",
      "the server as a program over stdio, started without a shell, with "
      "a small environment", NULL },

    { "env", "env NAME [VALUE];", "—",
      "a variable passed from reagent's environment, or set to VALUE",
      NULL },

    { "secret_env", "secret_env NAME;", "—",
      "a variable passed from reagent's environment and scrubbed from "
      "what reagent writes", NULL },

    { "url", "url URL;", "—",
      "the server over Streamable HTTP", NULL },

    { "header", "header NAME VALUE;", "—",
      "a request header of a url server; `$VAR` in it is read from the "
      "environment, as a secret", NULL },

    { "protocol", "protocol auto|session|stateless;", "auto",
      "auto asks server/discover first, then initialize; session and "
      "stateless choose one", NULL },

    { "tool_timeout", "tool_timeout TIME;", "the agent's tool_timeout",
      "per call of its tools (an agent's `tool_timeout NAME__x TIME;` "
      "wins)", NULL },

    { "start_timeout", "start_timeout TIME;", "30s",
      "for initialize and tools/list", NULL },

    { "restart_backoff", "restart_backoff MIN [MAX];", "1s 30s",
      "after the server died or failed: the first wait, doubling to MAX; "
      "reset after a minute up", NULL },

    { "max_message", "max_message SIZE;", "4m",
      "the largest message the server may send (1k or more)", NULL },

    { "tool_flags", "tool_flags TOOL FLAG …;", "—",
      "replaces what a tool's annotations say (TOOL a name or a pattern; "
      "read_only, idempotent, side_effect, dangerous or none; the last "
      "match wins)", NULL },

    rg_null_doc
};


static rg_command_t  rg_mcp_commands[] = {

    { rg_string("mcp"), RG_MAIN_CONF|RG_CONF_BLOCK|RG_CONF_TAKE1,
      rg_mcp_block, 0, NULL },

    { rg_string("command"), RG_MCP_CONF|RG_CONF_1MORE,
      rg_mcp_command, 0, NULL },

    { rg_string("env"), RG_MCP_CONF|RG_CONF_TAKE12,
      rg_mcp_env, 0, NULL },

    { rg_string("secret_env"), RG_MCP_CONF|RG_CONF_TAKE1,
      rg_mcp_env, 1, NULL },

    { rg_string("url"), RG_MCP_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_mcp_conf_t, url), NULL },

    { rg_string("header"), RG_MCP_CONF|RG_CONF_TAKE2,
      rg_mcp_header, 0, NULL },

    { rg_string("protocol"), RG_MCP_CONF|RG_CONF_TAKE1,
      rg_conf_set_enum_slot, offsetof(rg_mcp_conf_t, protocol),
      rg_mcp_protocols },

    { rg_string("tool_timeout"), RG_MCP_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_mcp_conf_t, tool_timeout),
      &rg_mcp_positive },

    { rg_string("start_timeout"), RG_MCP_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_mcp_conf_t, start_timeout),
      &rg_mcp_positive },

    { rg_string("restart_backoff"), RG_MCP_CONF|RG_CONF_TAKE12,
      rg_mcp_backoff, 0, NULL },

    { rg_string("max_message"), RG_MCP_CONF|RG_CONF_TAKE1,
      rg_conf_set_size_slot, offsetof(rg_mcp_conf_t, max_message), NULL },

    { rg_string("tool_flags"), RG_MCP_CONF|RG_CONF_2MORE,
      rg_mcp_tool_flags, 0, NULL },

      rg_null_command_doc(rg_mcp_docs)
};


static const rg_cli_t  *rg_mcp_cli[] = {
    &rg_mcp_cli_cmd,
    NULL
};


rg_part_t  rg_mcp_part = {
    .name = "mcp",
    .commands = rg_mcp_commands,
    .create_conf = rg_mcp_create_conf,
    .init_conf = rg_mcp_init_conf,
    .init_worker = rg_mcp_init_worker,
    .exit_worker = rg_mcp_exit_worker,
    .cli = rg_mcp_cli,
    .version = rg_mcp_version,
    .conf_ctx = RG_MCP_CONF,
    .conf_block = "mcp NAME { }"
};


rg_mcp_conf_t *
rg_mcp_find(rg_cycle_t *cycle, const char *name, size_t len)
{
    return rg_conf_find_named(&rg_mcp_main_conf(cycle)->servers, name, len);
}


/* a server's name starts its tools' names: what a model accepts, short,
 * and without "__", which ends it */
static const char *
rg_mcp_name_check(const rg_str_t *name)
{
    if (name->len > RG_MCP_NAME_MAX
        || !rg_module_name_valid(name->data, name->len, 0))
    {
        return "expects a name of letters, digits, \"_\" and \"-\", at most "
               "32 long";
    }

    if (memmem(name->data, name->len, "__", 2) != NULL
        || name->data[name->len - 1] == '_')
    {
        return "expects a name without \"__\" and not ending in \"_\" (its "
               "tools are named NAME__tool)";
    }

    return NULL;
}


static char *
rg_mcp_block(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    char                *rv, pname[64];
    const char          *bad;
    rg_mcp_conf_t       *mcf;
    rg_mcp_main_conf_t  *mmcf;

    mmcf = conf;

    bad = rg_mcp_name_check(&cf->args[1]);
    if (bad) {
        return (char *) bad;
    }

    if (rg_mcp_find(cf->cycle, cf->args[1].data, cf->args[1].len)) {
        return "is duplicate: an mcp server of that name exists";
    }

    mcf = rg_conf_add_named(cf, &mmcf->servers, sizeof(rg_mcp_conf_t),
                            rg_mcp_commands, RG_MCP_CONF);
    if (mcf == NULL) {
        return RG_CONF_ERROR;
    }

    mcf->index = mmcf->servers.nelts - 1;
    mcf->restart_min = RG_CONF_UNSET_MSEC;    /* what rg_mcp_backoff sets */
    mcf->restart_max = RG_CONF_UNSET_MSEC;
    mcf->file = rg_conf_file_name(cf);
    mcf->line = rg_conf_line(cf);

    mcf->prefix.len = mcf->name.len + 2;
    mcf->prefix.data = rg_palloc(cf->pool, mcf->prefix.len + 1);
    if (mcf->prefix.data == NULL) {
        return RG_CONF_ERROR;
    }

    snprintf(mcf->prefix.data, mcf->prefix.len + 1, "%.*s__",
             (int) mcf->name.len, mcf->name.data);

    /* agents may name its tools before any engine knows them */
    snprintf(pname, sizeof(pname), "mcp \"%.*s\"", (int) mcf->name.len,
             mcf->name.data);

    mcf->provider = rg_module_provider_add(cf->cycle, pname, &mcf->prefix);
    if (mcf->provider == NULL) {
        return RG_CONF_ERROR;
    }

    rv = rg_conf_block(cf, RG_MCP_CONF, mcf);
    if (rv != RG_CONF_OK) {
        return rv;
    }

    if ((mcf->command == NULL) == (mcf->url.data == NULL)) {
        return "needs either \"command\" (a program over stdio) or \"url\" "
               "(Streamable HTTP), not both";
    }

    if (mcf->url.data
        && rg_str_casecmp_prefix(mcf->url.data, mcf->url.len, "http://") != 0
        && rg_str_casecmp_prefix(mcf->url.data, mcf->url.len, "https://")
           != 0)
    {
        return "has a \"url\" that is neither http:// nor https://";
    }

    if (mcf->url.data && mcf->env) {
        return "has \"env\" lines, which only a \"command\" gets";
    }

    if (mcf->command && mcf->headers) {
        return "has \"header\" lines, which only a \"url\" gets";
    }

    return RG_CONF_OK;
}


/* command PROGRAM ARG…; */
static char *
rg_mcp_command(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_uint_t       i;
    rg_str_t       *s;
    rg_mcp_conf_t  *mcf;

    mcf = conf;

    if (mcf->command) {
        return "is duplicate";
    }

    mcf->command = rg_array_create(cf->pool, cf->nargs, sizeof(rg_str_t));
    mcf->argv = rg_pcalloc(cf->pool, cf->nargs * sizeof(char *));
    if (mcf->command == NULL || mcf->argv == NULL) {
        return RG_CONF_ERROR;
    }

    for (i = 1; i < cf->nargs; i++) {
        s = rg_array_push(mcf->command);
        if (s == NULL) {
            return RG_CONF_ERROR;
        }

        *s = cf->args[i];
        mcf->argv[i - 1] = s->data;
    }

    return RG_CONF_OK;
}


static rg_uint_t
rg_mcp_env_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || c == '_';
}


/* the name of an environment variable: what a shell would take */
static rg_uint_t
rg_mcp_env_name_ok(const char *s, size_t len)
{
    size_t  i;

    if (len == 0 || (s[0] >= '0' && s[0] <= '9')) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if (!rg_mcp_env_char(s[i])) {
            return 0;
        }
    }

    return 1;
}


/* env NAME [VALUE];  secret_env NAME; (cmd->offset 1) */
static char *
rg_mcp_env(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    const char     *v;
    rg_uint_t       i;
    rg_mcp_env_t   *e;
    rg_mcp_conf_t  *mcf;

    mcf = conf;

    if (!rg_mcp_env_name_ok(cf->args[1].data, cf->args[1].len)) {
        return "expects the name of an environment variable";
    }

    if (mcf->env == NULL) {
        mcf->env = rg_array_create(cf->pool, 4, sizeof(rg_mcp_env_t));
        if (mcf->env == NULL) {
            return RG_CONF_ERROR;
        }
    }

    e = mcf->env->elts;
    for (i = 0; i < mcf->env->nelts; i++) {
        if (rg_str_cmp(&e[i].name, &cf->args[1]) == 0) {
            return "names a variable twice";
        }
    }

    e = rg_array_push(mcf->env);
    if (e == NULL) {
        return RG_CONF_ERROR;
    }

    memset(e, 0, sizeof(rg_mcp_env_t));
    e->name = cf->args[1];

    if (cf->cycle->client && cf->nargs == 2) {
        /* a client command (reagent queue…) starts no server: nothing is
         * read of the environment for one, secret or not */
        e->secret = cmd->offset;
        v = "";

    } else if (cmd->offset) {
        /* a token for the server: out of reagent's own environment, and
         * scrubbed from whatever reagent writes */
        v = rg_secret_env(cf->args[1].data);
        if (v == NULL || *v == '\0') {
            rg_conf_log_error(RG_LOG_EMERG, cf, 0, "\"secret_env\" names "
                              "\"%s\", which is not set", cf->args[1].data);
            return RG_CONF_ERROR;
        }
        e->secret = 1;

    } else if (cf->nargs == 3) {
        v = cf->args[2].data;

    } else {
        v = getenv(cf->args[1].data);
        if (v == NULL) {
            rg_conf_log_error(RG_LOG_WARN, cf, 0, "\"env\" names \"%s\", "
                              "which is not set: the server will not get "
                              "it", cf->args[1].data);
            return RG_CONF_OK;
        }
    }

    e->value = rg_pstrdup(cf->pool, v, strlen(v));

    return e->value ? RG_CONF_OK : RG_CONF_ERROR;
}


static void
rg_mcp_wipe(void *data)
{
    char  *s;

    s = data;
    rg_secret_wipe(s, strlen(s));
}


/* header NAME VALUE;  $VAR and ${VAR} in VALUE are read from the
 * environment here, as secrets (a token, a key) */
static char *
rg_mcp_header(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    char           *line, **hp, var[128];
    size_t          i, j, n;
    rg_buf_t        b;
    rg_str_t       *name, *value;
    const char     *v;
    rg_mcp_conf_t  *mcf;

    mcf = conf;
    name = &cf->args[1];
    value = &cf->args[2];

    for (i = 0; i < name->len; i++) {
        if (name->data[i] <= 0x20 || name->data[i] == ':'
            || name->data[i] == 0x7f)
        {
            return "expects a header name without blanks or \":\"";
        }
    }

    if (rg_str_casecmp_prefix(name->data, name->len, "mcp-") == 0
        && name->len > 4)
    {
        return "may not set the protocol's own headers (Mcp-…)";
    }

    memset(&b, 0, sizeof(b));

    if (rg_buf_printf(&b, "%s: ", name->data) != RG_OK) {
        return RG_CONF_ERROR;
    }

    for (i = 0; i < value->len; i++) {
        if (value->data[i] != '$') {
            if (rg_buf_append(&b, &value->data[i], 1) != RG_OK) {
                goto nomem;
            }
            continue;
        }

        /* $NAME or ${NAME} */
        j = i + 1;
        if (j < value->len && value->data[j] == '{') {
            j++;
        }

        for (n = 0; j + n < value->len && n < sizeof(var) - 1
                    && rg_mcp_env_char(value->data[j + n]); n++)
        {
            var[n] = value->data[j + n];
        }
        var[n] = '\0';

        if (n == 0 || !rg_mcp_env_name_ok(var, n)) {
            rg_secret_wipe(b.data, b.len);
            rg_buf_free(&b);
            return "has a \"$\" that names no environment variable";
        }

        if (value->data[i + 1] == '{') {
            if (j + n >= value->len || value->data[j + n] != '}') {
                rg_secret_wipe(b.data, b.len);
                rg_buf_free(&b);
                return "has a \"${\" without its \"}\"";
            }
            n++;
        }

        /* a client command starts no server: its secrets are not read */
        v = cf->cycle->client ? "" : rg_secret_env(var);
        if (v == NULL) {
            rg_secret_wipe(b.data, b.len);
            rg_buf_free(&b);
            rg_conf_log_error(RG_LOG_EMERG, cf, 0, "\"header\" names the "
                              "environment variable \"%s\", which is not "
                              "set", var);
            return RG_CONF_ERROR;
        }

        if (rg_buf_append(&b, v, strlen(v)) != RG_OK) {
            goto nomem;
        }

        i = j + n - 1;
    }

    /* a line break would smuggle in headers */
    for (i = 0; i < b.len; i++) {
        if (((unsigned char) b.data[i] < 0x20 && b.data[i] != '\t')
            || b.data[i] == 0x7f)
        {
            rg_secret_wipe(b.data, b.len);
            rg_buf_free(&b);
            return "has a control character in its value";
        }
    }

    if (mcf->headers == NULL) {
        mcf->headers = rg_array_create(cf->pool, 4, sizeof(char *));
        if (mcf->headers == NULL) {
            goto nomem;
        }
    }

    line = rg_pstrdup(cf->pool, b.data, b.len);
    hp = rg_array_push(mcf->headers);

    rg_secret_wipe(b.data, b.len);
    rg_buf_free(&b);

    if (line == NULL || hp == NULL
        || rg_pool_cleanup_add(cf->pool, rg_mcp_wipe, line) == NULL)
    {
        return RG_CONF_ERROR;
    }

    *hp = line;

    return RG_CONF_OK;

nomem:

    if (b.data) {
        rg_secret_wipe(b.data, b.len);
    }
    rg_buf_free(&b);
    return RG_CONF_ERROR;
}


/* restart_backoff MIN [MAX]; */
static char *
rg_mcp_backoff(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_msec_t       min, max;
    rg_mcp_conf_t  *mcf;

    mcf = conf;

    if (mcf->restart_min != RG_CONF_UNSET_MSEC) {
        return "is duplicate";
    }

    if (rg_conf_parse_msec(&cf->args[1], &min) != RG_OK
        || (cf->nargs == 3 && rg_conf_parse_msec(&cf->args[2], &max) != RG_OK))
    {
        return "expects times such as 500ms, 30s, 5m or 1h";
    }

    if (cf->nargs == 2) {
        max = rg_max(min, 30000);
    }

    if (min == 0 || max < min) {
        return "expects a first wait of more than 0 and a longest wait no "
               "shorter than it";
    }

    mcf->restart_min = min;
    mcf->restart_max = max;

    return RG_CONF_OK;
}


/* tool_flags TOOL FLAG…; FLAG: read_only, idempotent, side_effect,
 * dangerous, or none */
static char *
rg_mcp_tool_flags(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    uint32_t              flags;
    rg_uint_t             i;
    rg_str_t             *a;
    rg_mcp_conf_t        *mcf;
    rg_mcp_tool_flags_t  *tf;

    mcf = conf;
    flags = 0;

    for (i = 2; i < cf->nargs; i++) {
        a = &cf->args[i];

        if (rg_str_eq(a, "read_only")) {
            flags |= RG_TOOL_READ_ONLY;
        } else if (rg_str_eq(a, "idempotent")) {
            flags |= RG_TOOL_IDEMPOTENT;
        } else if (rg_str_eq(a, "side_effect")) {
            flags |= RG_TOOL_SIDE_EFFECT;
        } else if (rg_str_eq(a, "dangerous")) {
            flags |= RG_TOOL_DANGEROUS;
        } else if (rg_str_eq(a, "none")) {
            flags |= RG_MCP_FLAGS_NONE;
        } else {
            return "expects flags among read_only, idempotent, side_effect, "
                   "dangerous, or none";
        }
    }

    if ((flags & RG_MCP_FLAGS_NONE) && flags != RG_MCP_FLAGS_NONE) {
        return "takes \"none\" alone";
    }

    if ((flags & RG_TOOL_READ_ONLY) && (flags & RG_TOOL_SIDE_EFFECT)) {
        return "cannot make a tool both read_only and side_effect";
    }

    if (mcf->tool_flags == NULL) {
        mcf->tool_flags = rg_array_create(cf->pool, 4,
                                          sizeof(rg_mcp_tool_flags_t));
        if (mcf->tool_flags == NULL) {
            return RG_CONF_ERROR;
        }
    }

    tf = rg_array_push(mcf->tool_flags);
    if (tf == NULL) {
        return RG_CONF_ERROR;
    }

    tf->pattern = cf->args[1];
    tf->flags = flags;

    return RG_CONF_OK;
}


static void *
rg_mcp_create_conf(rg_cycle_t *cycle)
{
    return rg_conf_create_named(cycle->pool, sizeof(rg_mcp_main_conf_t),
                                rg_mcp_commands,
                                offsetof(rg_mcp_main_conf_t, servers));
}


static char *
rg_mcp_init_conf(rg_cycle_t *cycle, void *conf)
{
    rg_uint_t            i;
    rg_mcp_conf_t      **s, *mcf;
    rg_mcp_main_conf_t  *mmcf;

    mmcf = conf;
    s = mmcf->servers.elts;

    for (i = 0; i < mmcf->servers.nelts; i++) {
        mcf = s[i];

        rg_conf_init_uint_value(mcf->protocol, RG_MCP_PROTO_AUTO);
        rg_conf_init_msec_value(mcf->tool_timeout, 0);
        rg_conf_init_msec_value(mcf->start_timeout, 30000);
        if (mcf->restart_min == RG_CONF_UNSET_MSEC) {
            mcf->restart_min = 1000;
            mcf->restart_max = 30000;
        }
        rg_conf_init_size_value(mcf->max_message, 4 * 1024 * 1024);

        if (mcf->max_message < 1024) {
            rg_conf_error(cycle, mcf, "max_message", NULL,
                          mcf->file, mcf->line, "mcp \"%.*s\": "
                          "\"max_message\" must be 1k or more",
                          (int) mcf->name.len, mcf->name.data);
            return RG_CONF_ERROR;
        }
    }

    return RG_CONF_OK;
}


/* -V: the protocol revisions the client speaks */
static void
rg_mcp_version(FILE *f)
{
    fprintf(f, "mcp protocol versions: %s\n", RG_MCP_VERSIONS_TEXT);
}
