/* rg_mcp_cli.c: `reagent mcp`, the mcp part's command: starts the
 * configured MCP servers as a worker would and says what each offers
 * (its state, protocol, and every tool with its reagent name, flags and
 * description), or, with --call, calls one tool with the given
 * arguments through the tools part (argument checks, timeout, result
 * hygiene) and prints its answer: how an operator checks a server
 * before an agent uses it. A dangerous tool is asked for as an agent's
 * call is: y/N on the terminal, else it runs only with --approve-all. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_mcp.h>
#include <rg_mcp_tool.h>
#include <rg_secret.h>


typedef struct {
    const char         *call;
    const char         *args;
    rg_uint_t           approve_all;      /* --approve-all */
} rg_mcp_cli_opts_t;


static int rg_mcp_cli_option(void *opts, int argc, char **argv, int i);
static int rg_mcp_cli_main(rg_cycle_t *cycle, void *opts, const char *arg);


const rg_cli_t  rg_mcp_cli_cmd = {
    "mcp",
    "  mcp [--call TOOL [--args JSON] [--approve-all]] SERVER|all\n"
    "      start the mcp servers as a worker does and list the tools each\n"
    "      offers; --call calls one of them with the JSON arguments and\n"
    "      prints its answer (the exit code is 0 when it succeeded); a\n"
    "      dangerous tool is asked for on the terminal, and without one\n"
    "      runs only with --approve-all (exit code 1 when refused)\n",
    "an mcp server's name, or all: reagent mcp all",
    sizeof(rg_mcp_cli_opts_t),
    rg_mcp_cli_option,
    rg_mcp_cli_main,
    0
};


static int
rg_mcp_cli_option(void *opts, int argc, char **argv, int i)
{
    rg_mcp_cli_opts_t  *o;

    o = opts;

    if (strcmp(argv[i], "--call") == 0 && i + 1 < argc) {
        o->call = argv[i + 1];
        return 2;
    }

    if (strcmp(argv[i], "--args") == 0 && i + 1 < argc) {
        o->args = argv[i + 1];
        return 2;
    }

    if (strcmp(argv[i], "--approve-all") == 0) {
        o->approve_all = 1;
        return 1;
    }

    return 0;
}


static void
rg_mcp_cli_flags(uint32_t flags, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s%s",
             flags & RG_TOOL_READ_ONLY ? " read_only" : "",
             flags & RG_TOOL_IDEMPOTENT ? " idempotent" : "",
             flags & RG_TOOL_SIDE_EFFECT ? " side_effect" : "",
             flags & RG_TOOL_DANGEROUS ? " dangerous" : "");
}


static void
rg_mcp_cli_list(rg_mcp_server_t *s)
{
    char            flags[64];
    size_t          n;
    rg_uint_t       i;
    const char     *d, *nl;
    rg_mcp_tool_t  *mt;

    printf("mcp \"%.*s\": %s (%s%s%s), %lu tools\n",
           (int) s->conf->name.len, s->conf->name.data,
           rg_mcp_state_name(s->state), s->tp->name,
           s->version[0] ? ", protocol " : "", s->version,
           (unsigned long) (s->list ? s->list->n : 0));

    if (s->state != RG_MCP_READY && s->why[0]) {
        printf("  (%s)\n", s->why);
    }

    for (i = 0; s->list && i < s->list->n; i++) {
        mt = (rg_mcp_tool_t *) s->list->tools[i].tool;
        rg_mcp_cli_flags(mt->tool.flags, flags, sizeof(flags));

        d = mt->tool.description;
        nl = strchr(d, '\n');
        n = nl ? (size_t) (nl - d) : strlen(d);

        printf("  %s%s%s [%s ] %.*s%s\n", mt->tool.name,
               strcmp(mt->remote, mt->tool.name + s->conf->prefix.len) == 0
               ? "" : " = ", 
               strcmp(mt->remote, mt->tool.name + s->conf->prefix.len) == 0
               ? "" : mt->remote,
               flags, (int) rg_min(n, 100), d, n > 100 ? "…" : "");
    }
}


typedef struct {
    rg_uint_t           done;
} rg_mcp_cli_turn_t;


static void
rg_mcp_cli_turn_done(rg_tool_turn_t *turn)
{
    ((rg_mcp_cli_turn_t *) turn->data)->done = 1;
}


/* y/N on the terminal, as an agent's dangerous call is asked (the
 * arguments shown scrubbed and cut; the end of input is a no) */
static rg_uint_t
rg_mcp_cli_ask(const char *name, const char *args)
{
    char    shown[401], line[64];
    size_t  n;

    n = rg_min(strlen(args), sizeof(shown) - 1);
    memcpy(shown, args, n);
    n = rg_secret_scrub(shown, n);

    fprintf(stderr, "reagent: \"%s\" is a dangerous tool; it is to run "
            "with %.*s%s\nallow it? [y/N] ", name, (int) n, shown,
            strlen(args) > sizeof(shown) - 1 ? "…" : "");
    fflush(stderr);

    if (fgets(line, sizeof(line), stdin) == NULL) {
        return 0;
    }

    return line[0] == 'y' || line[0] == 'Y';
}


static int
rg_mcp_cli_call(rg_engine_t *e, rg_mcp_cli_opts_t *o)
{
    int                 rc;
    char               *text;
    size_t              len;
    rg_str_t            owner = rg_string("reagent mcp");
    rg_toolset_t        ts;
    rg_tool_entry_t    *te;
    rg_tool_turn_t     *turn;
    rg_tool_run_t      *run;
    rg_tool_request_t   req;
    rg_mcp_cli_turn_t   state;

    te = rg_mcp_find_tool(rg_mcp_ctx(e), o->call);
    if (te == NULL) {
        fprintf(stderr, "reagent: no mcp server offers a tool \"%s\" (see "
                "reagent mcp all)\n", o->call);
        return 1;
    }

    memset(&ts, 0, sizeof(ts));
    ts.owner = owner;
    ts.tools = &te;
    ts.ntools = 1;
    ts.tool_list = (char *) te->tool->name;
    ts.timeout = te->tool->timeout_ms ? te->tool->timeout_ms : 60000;

    memset(&req, 0, sizeof(req));
    req.id.data = "call_cli";
    req.id.len = 8;
    req.name.data = (char *) te->tool->name;
    req.name.len = strlen(te->tool->name);
    req.arguments.data = (char *) (o->args ? o->args : "{}");
    req.arguments.len = strlen(req.arguments.data);

    /* a dangerous tool, as the tools part judges it, is the operator's
     * to allow: asked on the terminal, else refused without the flag
     * (a script that runs this must say so) */
    rg_tools_set_approval(rg_tools_ctx(e), RG_APPROVE_PROMPT);

    if (!o->approve_all
        && rg_tools_needs_approval(rg_tools_ctx(e), &ts, NULL, te))
    {
        if (!isatty(STDIN_FILENO)) {
            fprintf(stderr, "reagent: \"%s\" is a dangerous tool and "
                    "there is no terminal to ask: not run (--approve-all "
                    "runs it)\n", te->tool->name);
            return 1;
        }

        if (!rg_mcp_cli_ask(te->tool->name, req.arguments.data)) {
            fprintf(stderr, "reagent: \"%s\" was not allowed: not run\n",
                    te->tool->name);
            return 1;
        }
    }

    /* allowed, or not dangerous: this one call runs */
    rg_tools_set_approval(rg_tools_ctx(e), RG_APPROVE_ALL);

    state.done = 0;

    turn = rg_tools_turn_create(rg_tools_ctx(e), &ts, "mcp-cli", &req, 1,
                                rg_mcp_cli_turn_done, &state, e->log);
    if (turn == NULL) {
        fprintf(stderr, "reagent: out of memory\n");
        return 1;
    }

    rg_tools_turn_start(turn);

    while (!state.done) {
        if (event_base_loop(e->base, EVLOOP_ONCE) == -1) {
            break;
        }
    }

    run = turn->runs[0];
    rc = run->failed || !state.done ? 2 : 0;

    len = run->result ? run->result_len : 0;
    text = rg_strdup_len(run->result ? run->result : "", len);

    if (text) {
        len = rg_secret_scrub(text, len);
        fwrite(text, 1, len, stdout);
        if (len == 0 || text[len - 1] != '\n') {
            fputc('\n', stdout);
        }
        free(text);
    }

    fflush(stdout);
    rg_tools_turn_destroy(turn);

    return rc;
}


static int
rg_mcp_cli_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    int                 rc;
    rg_uint_t           i, all, found;
    rg_engine_t        *e;
    rg_mcp_ctx_t       *ctx;
    rg_mcp_server_t    *s;
    rg_mcp_cli_opts_t  *o;

    o = opts;
    all = strcmp(arg, "all") == 0;

    if (!all && rg_mcp_find(cycle, arg, strlen(arg)) == NULL) {
        fprintf(stderr, "reagent: no mcp server \"%s\" in the "
                "configuration (%lu servers)\n", arg,
                (unsigned long) rg_mcp_main_conf(cycle)->servers.nelts);
        return 1;
    }

    e = rg_engine_create(cycle, cycle->log);
    if (e == NULL) {
        return 1;
    }

    ctx = rg_mcp_ctx(e);

    if (o->call) {
        rc = rg_mcp_cli_call(e, o);
        rg_engine_destroy(e);
        return rc;
    }

    rc = 0;
    found = 0;

    for (i = 0; i < ctx->nservers; i++) {
        s = &ctx->servers[i];

        if (!all && (s->conf->name.len != strlen(arg)
                     || memcmp(s->conf->name.data, arg, s->conf->name.len)
                        != 0))
        {
            continue;
        }

        found++;
        rg_mcp_cli_list(s);

        if (s->state != RG_MCP_READY) {
            rc = 2;
        }
    }

    if (found == 0) {
        printf("no mcp server is configured\n");
    }

    fflush(stdout);
    rg_engine_destroy(e);

    return rc;
}
