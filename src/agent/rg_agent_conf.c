/* rg_agent_conf.c: the agent part's configuration: `agent NAME { … }`
 * blocks (their directives and defaults; the llm, the tools and the
 * agents they name, resolved against the whole file; how the model is
 * told of each tool, the request prefix and the system message, built
 * once), `default_agent` and `max_agent_depth`. Tools a provider (an
 * MCP server) brings are known only in an engine: the names and
 * patterns with its prefix are kept, and each engine builds its own
 * view of such an agent (rg_agent.c) with the same rg_agent_tools_build. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_agent_conf.h>
#include <rg_llm_request.h>
#include <rg_llm.h>
#include <fnmatch.h>
#include <math.h>
#include <errno.h>


static char *rg_agent_block(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static char *rg_agent_system_prompt(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static char *rg_agent_tool_limit(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static char *rg_agent_default(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static rg_int_t rg_agent_resolve(rg_cycle_t *cycle, rg_agent_conf_t *agent);
static void *rg_agent_create_conf(rg_cycle_t *cycle);
static char *rg_agent_init_conf(rg_cycle_t *cycle, void *conf);


/* tool_timeout and tool_max_calls: the agent's (tool_timeout 30s;), or,
 * with a tool's name first, that tool's (tool_timeout calc 5s;), kept in
 * an array made on first use whose elements open with the tool's name;
 * one setter, told by its post where each goes */
typedef struct {
    size_t              all;          /* the agent's value in its conf */
    size_t              names;        /* the array of the tools' */
    size_t              size;         /* an element */
    size_t              value;        /* the value in an element */
    unsigned            msec:1;       /* a time; else calls, 1 or more */
} rg_agent_tool_limit_t;


static rg_agent_tool_limit_t  rg_agent_tool_timeout_limit = {
    offsetof(rg_agent_conf_t, toolset.timeout),
    offsetof(rg_agent_conf_t, tool_timeout_names),
    sizeof(rg_agent_tool_timeout_t),
    offsetof(rg_agent_tool_timeout_t, timeout), 1
};


static rg_agent_tool_limit_t  rg_agent_tool_calls_limit = {
    offsetof(rg_agent_conf_t, tool_max_calls),
    offsetof(rg_agent_conf_t, tool_cap_names),
    sizeof(rg_agent_tool_cap_t),
    offsetof(rg_agent_tool_cap_t, calls), 0
};


/* max_cost: dollars */
static rg_conf_num_bounds_t  rg_agent_cost_bounds = { 0, 1000000000 };

static rg_conf_num_bounds_t  rg_agent_rounds_bounds = { 1, 10000 };
static rg_conf_num_bounds_t  rg_agent_temp_bounds = { 0, 2 };
static rg_conf_num_bounds_t  rg_agent_depth_bounds = { 0, 16 };
static rg_conf_num_bounds_t  rg_agent_repeat_bounds = { 0, 1000 };
static rg_conf_num_bounds_t  rg_agent_threshold_bounds = { 0, 1 };
static rg_conf_num_bounds_t  rg_agent_calls_bounds = { 1, RG_LLM_MAX_CALLS };
/* a TTL of 0 would keep the keys forever */
static rg_conf_num_bounds_t  rg_agent_ttl_bounds = { 1, 0 };

static rg_conf_enum_t  rg_agent_dedupe_enum[] = {
    { rg_string("off"), RG_DEDUPE_OFF },
    { rg_string("session"), RG_DEDUPE_SESSION },
    { rg_string("agent"), RG_DEDUPE_AGENT },
    { rg_string("global"), RG_DEDUPE_GLOBAL },
    { rg_null_string, 0 }
};


static char *rg_agent_tenant_max_cost(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static char *rg_agent_tenant_max_tokens(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);


/* the reference of the directives below (reagent directives) */
static rg_conf_doc_t  rg_agent_docs[] = {

    { "agent", "agent NAME { … }", "—",
      "an agent: its llm, system prompt, tools and guards; at least one",
      NULL },

    { "default_agent", "default_agent NAME;", "the first agent",
      "the agent run and batch use when a task names none", NULL },

    { "max_agent_depth", "max_agent_depth N;", "3",
      "how deep agents may hand work to agents (the agent module's "
      "run_agent), 0 to 16", NULL },

    { "approval_timeout", "approval_timeout TIME;", "1h",
      "how long a parked task waits for an operator's decision on its "
      "dangerous calls, then ends approval_timed_out (in an agent: its "
      "tasks')", NULL },

    { "tenant_max_tokens", "tenant_max_tokens N per TIME;", "—",
      "a task's tenant may spend N tokens (k, m) per window, across every "
      "process on the store; none: no budget", NULL },

    { "tenant_max_cost", "tenant_max_cost DOLLARS per TIME;", "—",
      "the same in dollars, by the llms' prices", NULL },

    { "llm", "llm NAME;", "the only llm",
      "the llm the agent calls (required when there are several)", NULL },

    { "system_prompt", "system_prompt TEXT;", "—",
      "the system message; several words are joined with a blank", NULL },

    { "tools", "tools NAME …;", "—",
      "the tools the agent may call: a module's, or an mcp block's "
      "(`fs__read_text_file`, `fs__*`)", NULL },

    { "max_rounds", "max_rounds N;", "8",
      "the model's answers per task, 1 to 10000", NULL },

    { "tool_timeout", "tool_timeout [TOOL] TIME;", "30s",
      "per tool call; with TOOL, that tool's", NULL },

    { "max_tokens", "max_tokens N;", "0",
      "the tokens a task may spend, its child agents' included (0: no "
      "budget)", NULL },

    { "max_cost", "max_cost DOLLARS;", "0",
      "the dollars a task may spend (0: no budget; needs the llm's price): "
      "the call that would pass it is not made", NULL },

    { "deadline", "deadline TIME;", "0",
      "the wall-clock time a task may take (0: none)", NULL },

    { "tool_max_calls", "tool_max_calls [TOOL] N;", "0",
      "calls per tool per task (0: no cap); with TOOL, that tool's", NULL },

    { "max_tool_calls_per_turn", "max_tool_calls_per_turn N;", "128",
      "the calls of one answer that run (1 to 1024); the model is told "
      "about the rest", NULL },

    { "repeat_window", "repeat_window N;", "2",
      "identical calls within N rounds are answered from before, with a "
      "nudge (0: no repeat detection)", NULL },

    { "repeat_limit", "repeat_limit N;", "3",
      "past so many repeats the task ends loop_detected", NULL },

    { "dedupe", "dedupe off|session|agent|global;", "session",
      "how widely the results of read-only tools are shared", NULL },

    { "dedupe_ttl", "dedupe_ttl TIME;", "10m",
      "how long a shared result is kept", NULL },

    { "dedupe_wait", "dedupe_wait TIME;", "10s",
      "with store redis, how long a call waits for another worker's "
      "identical one before it runs itself (0: never waits)", NULL },

    { "context_limit", "context_limit N;", "0",
      "the model's window in tokens, which requests are kept inside (0: "
      "not managed)", NULL },

    { "context_threshold", "context_threshold N;", "0.8",
      "rounds are compacted past this share of context_limit", NULL },

    { "keep_rounds", "keep_rounds N;", "2",
      "the last rounds, which are never compacted", NULL },

    { "context_summarize", "context_summarize on|off;", "off",
      "on: compacted rounds become a summary", NULL },

    { "approve", "approve TOOL …;", "—",
      "dangerous tools allowed without asking; a child session only gets "
      "what every agent above it approves too", NULL },

    { "agents", "agents NAME …;", "—",
      "the agents run_agent may hand work to", NULL },

    { "temperature", "temperature N;", "the llm's",
      "sent with the agent's requests, 0 to 2", NULL },

    rg_null_doc
};


static rg_command_t  rg_agent_commands[] = {

    { rg_string("agent"), RG_MAIN_CONF|RG_CONF_BLOCK|RG_CONF_TAKE1,
      rg_agent_block, 0, NULL },

    { rg_string("default_agent"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_agent_default, 0, NULL },

    { rg_string("max_agent_depth"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_main_conf_t, max_agent_depth),
      &rg_agent_depth_bounds },

    /* at the top level for every agent, or in one */
    { rg_string("approval_timeout"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_agent_main_conf_t, approval_timeout),
      NULL },

    { rg_string("approval_timeout"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_agent_conf_t, approval_timeout),
      NULL },

    { rg_string("tenant_max_tokens"), RG_MAIN_CONF|RG_CONF_TAKE3,
      rg_agent_tenant_max_tokens, 0, NULL },

    { rg_string("tenant_max_cost"), RG_MAIN_CONF|RG_CONF_TAKE3,
      rg_agent_tenant_max_cost, 0, NULL },

    { rg_string("llm"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_agent_conf_t, llm_name), NULL },

    { rg_string("system_prompt"), RG_AGENT_CONF|RG_CONF_1MORE,
      rg_agent_system_prompt, offsetof(rg_agent_conf_t, system_prompt),
      NULL },

    { rg_string("tools"), RG_AGENT_CONF|RG_CONF_1MORE,
      rg_conf_set_str_array_slot, offsetof(rg_agent_conf_t, tool_names),
      NULL },

    { rg_string("max_rounds"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, max_rounds),
      &rg_agent_rounds_bounds },

    { rg_string("tool_timeout"), RG_AGENT_CONF|RG_CONF_TAKE12,
      rg_agent_tool_limit, 0, &rg_agent_tool_timeout_limit },

    { rg_string("max_tokens"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, max_tokens), NULL },

    { rg_string("max_cost"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_double_slot, offsetof(rg_agent_conf_t, max_cost),
      &rg_agent_cost_bounds },

    { rg_string("deadline"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_agent_conf_t, deadline), NULL },

    { rg_string("tool_max_calls"), RG_AGENT_CONF|RG_CONF_TAKE12,
      rg_agent_tool_limit, 0, &rg_agent_tool_calls_limit },

    { rg_string("max_tool_calls_per_turn"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, max_tool_calls),
      &rg_agent_calls_bounds },

    { rg_string("repeat_window"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, repeat_window),
      &rg_agent_repeat_bounds },

    { rg_string("repeat_limit"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, repeat_limit),
      &rg_agent_repeat_bounds },

    { rg_string("dedupe"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_enum_slot, offsetof(rg_agent_conf_t, dedupe),
      rg_agent_dedupe_enum },

    { rg_string("dedupe_ttl"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_agent_conf_t, dedupe_ttl),
      &rg_agent_ttl_bounds },

    { rg_string("dedupe_wait"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_agent_conf_t, dedupe_wait), NULL },

    { rg_string("context_limit"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, context_limit), NULL },

    { rg_string("context_threshold"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_double_slot, offsetof(rg_agent_conf_t, context_threshold),
      &rg_agent_threshold_bounds },

    { rg_string("keep_rounds"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, keep_rounds),
      &rg_agent_repeat_bounds },

    { rg_string("context_summarize"), RG_AGENT_CONF|RG_CONF_FLAG,
      rg_conf_set_flag_slot, offsetof(rg_agent_conf_t, context_summarize),
      NULL },

    { rg_string("approve"), RG_AGENT_CONF|RG_CONF_1MORE,
      rg_conf_set_str_array_slot, offsetof(rg_agent_conf_t, toolset.approve),
      NULL },

    { rg_string("agents"), RG_AGENT_CONF|RG_CONF_1MORE,
      rg_conf_set_str_array_slot, offsetof(rg_agent_conf_t, toolset.agents),
      NULL },

    { rg_string("temperature"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_double_slot, offsetof(rg_agent_conf_t, temperature),
      &rg_agent_temp_bounds },

      rg_null_command_doc(rg_agent_docs)
};


static const rg_cli_t  *rg_agent_cli[] = {
    &rg_run_cli,
    &rg_replay_cli,
    &rg_resume_cli,
    &rg_status_cli,
    NULL
};


rg_part_t  rg_agent_part = {
    .name = "agent",
    .commands = rg_agent_commands,
    .conf_ctx = RG_AGENT_CONF,
    .conf_block = "agent NAME { }",
    .create_conf = rg_agent_create_conf,
    .init_conf = rg_agent_init_conf,
    .init_worker = rg_agent_init_worker,
    .exit_worker = rg_agent_exit_worker,
    .cli = rg_agent_cli,
    .help = rg_run_help
};


static char *
rg_agent_block(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_agent_conf_t       *agent;
    rg_agent_main_conf_t  *amcf;

    amcf = conf;

    if (rg_agent_find(cf->cycle, cf->args[1].data, cf->args[1].len)) {
        return "is duplicate: an agent of that name exists";
    }

    agent = rg_conf_add_named(cf, &amcf->agents, sizeof(rg_agent_conf_t),
                              rg_agent_commands, RG_AGENT_CONF);
    if (agent == NULL) {
        return RG_CONF_ERROR;
    }

    agent->index = amcf->agents.nelts - 1;
    agent->toolset.owner = agent->name;
    /* what rg_agent_tool_limit sets */
    agent->toolset.timeout = RG_CONF_UNSET_MSEC;
    agent->tool_max_calls = RG_CONF_UNSET;
    agent->file = rg_conf_file_name(cf);
    agent->line = rg_conf_line(cf);

    return rg_conf_block(cf, RG_AGENT_CONF, agent);
}


static char *
rg_agent_system_prompt(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    char      *p;
    size_t     len;
    rg_str_t  *field;
    rg_uint_t  i;

    field = (rg_str_t *) ((char *) conf + cmd->offset);

    if (field->data) {
        return "is duplicate";
    }

    /* several words are joined with one blank, like a shell would */
    for (len = 0, i = 1; i < cf->nargs; i++) {
        len += cf->args[i].len + 1;
    }

    p = rg_palloc(cf->pool, len);
    if (p == NULL) {
        return RG_CONF_ERROR;
    }

    field->data = p;
    for (i = 1; i < cf->nargs; i++) {
        memcpy(p, cf->args[i].data, cf->args[i].len);
        p += cf->args[i].len;
        *p++ = ' ';
    }
    field->len = len - 1;
    field->data[field->len] = '\0';

    return RG_CONF_OK;
}


static char *
rg_agent_tool_limit(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    char                   *target;
    rg_int_t                v;
    rg_str_t               *name;
    rg_msec_t               ms;
    rg_array_t            **names;
    rg_agent_tool_limit_t  *lim;

    lim = cmd->post;
    v = 0;
    ms = 0;

    if (lim->msec) {
        if (rg_conf_parse_msec(&cf->args[cf->nargs - 1], &ms) != RG_OK) {
            return "expects a time such as 500ms, 30s, 5m or 1h";
        }

    } else {
        v = rg_atoi(cf->args[cf->nargs - 1].data,
                    cf->args[cf->nargs - 1].len);
        if (v == RG_ERROR || v < 1) {
            return "expects a number of calls of 1 or more";
        }
    }

    if (cf->nargs == 2) {
        target = (char *) conf + lim->all;

        if (lim->msec ? *(rg_msec_t *) target != RG_CONF_UNSET_MSEC
                      : *(rg_int_t *) target != RG_CONF_UNSET)
        {
            return "is duplicate";
        }

    } else {
        names = (rg_array_t **) ((char *) conf + lim->names);

        if (*names == NULL) {
            *names = rg_array_create(cf->pool, 4, lim->size);
            if (*names == NULL) {
                return RG_CONF_ERROR;
            }
        }

        name = rg_array_push(*names);
        if (name == NULL) {
            return RG_CONF_ERROR;
        }

        *name = cf->args[1];
        target = (char *) name + lim->value;
    }

    if (lim->msec) {
        *(rg_msec_t *) target = ms;
    } else {
        *(rg_int_t *) target = v;
    }

    return RG_CONF_OK;
}


static char *
rg_agent_default(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_agent_main_conf_t  *amcf;

    amcf = conf;

    if (amcf->default_agent.data) {
        return "is duplicate";
    }

    amcf->default_agent = cf->args[1];
    amcf->default_agent_line = rg_conf_line(cf);

    return RG_CONF_OK;
}


rg_agent_conf_t *
rg_agent_find(rg_cycle_t *cycle, const char *name, size_t len)
{
    return rg_conf_find_named(&rg_agent_main_conf(cycle)->agents, name, len);
}


static rg_int_t
rg_agent_init(rg_cycle_t *cycle, rg_agent_conf_t *agent)
{
    rg_buf_t          b;
    rg_str_t         *names;
    rg_uint_t         i;
    rg_toolset_t     *ts;
    rg_llm_conf_t   **llms;

    ts = &agent->toolset;

    if (agent->llm_name.data) {
        agent->llm = rg_llm_find(cycle, agent->llm_name.data,
                                  agent->llm_name.len);
        if (agent->llm == NULL) {
            rg_conf_error(cycle, agent, "llm", agent->llm_name.data,
                          agent->file, agent->line,
                          "agent \"%.*s\" names an unknown llm \"%.*s\"",
                          (int) agent->name.len, agent->name.data,
                          (int) agent->llm_name.len, agent->llm_name.data);
            return RG_ERROR;
        }

    } else if (rg_llm_main_conf(cycle)->llms.nelts == 1) {
        llms = rg_llm_main_conf(cycle)->llms.elts;
        agent->llm = llms[0];

    } else {
        rg_cycle_error(cycle, agent->file, agent->line,
                       "agent \"%.*s\" has no \"llm\" (there are %lu llm "
                       "blocks to choose from)",
                       (int) agent->name.len, agent->name.data,
                       (unsigned long) rg_llm_main_conf(cycle)->llms.nelts);
        return RG_ERROR;
    }

    rg_conf_init_value(agent->max_rounds, 8);
    rg_conf_init_msec_value(ts->timeout, 30000);
    agent->temperature_set = !isnan(agent->temperature)
                             || agent->llm->temperature_set;

    rg_conf_init_double_value(agent->temperature, agent->llm->temperature);
    rg_conf_init_value(agent->max_tokens, 0);
    rg_conf_init_double_value(agent->max_cost, 0);

    /* money is counted by a price: without one, nothing would be */
    if (agent->max_cost > 0 && !agent->llm->priced) {
        rg_conf_error(cycle, agent, "max_cost", NULL,
                      agent->file, agent->line, "agent \"%.*s\": "
                      "\"max_cost\" needs a \"price\" in llm \"%.*s\", "
                      "which has none", (int) agent->name.len,
                      agent->name.data, (int) agent->llm->name.len,
                      agent->llm->name.data);
        return RG_ERROR;
    }
    rg_conf_init_msec_value(agent->deadline, 0);
    rg_conf_init_msec_value(agent->approval_timeout,
                            rg_agent_main_conf(cycle)->approval_timeout);
    rg_conf_init_value(agent->tool_max_calls, 0);
    rg_conf_init_value(agent->max_tool_calls, 128);
    rg_conf_init_value(agent->repeat_window, 2);
    rg_conf_init_value(agent->repeat_limit, 3);
    rg_conf_init_uint_value(agent->dedupe, RG_DEDUPE_SESSION);
    rg_conf_init_msec_value(agent->dedupe_ttl, 600000);
    rg_conf_init_msec_value(agent->dedupe_wait, 10000);
    rg_conf_init_value(agent->context_limit, 0);
    rg_conf_init_double_value(agent->context_threshold, 0.8);
    rg_conf_init_value(agent->keep_rounds, 2);
    rg_conf_init_value(agent->context_summarize, 0);

    if (rg_agent_resolve(cycle, agent) != RG_OK) {
        return RG_ERROR;
    }

    /* the agents run_agent may hand work to */
    if (ts->agents) {
        names = ts->agents->elts;

        for (i = 0; i < ts->agents->nelts; i++) {
            if (rg_agent_find(cycle, names[i].data, names[i].len) == NULL)
            {
                rg_conf_error(cycle, agent, "agents", names[i].data,
                              agent->file, agent->line,
                              "agent \"%.*s\": \"agents\" names an unknown "
                              "agent \"%.*s\"",
                              (int) agent->name.len, agent->name.data,
                              (int) names[i].len, names[i].data);
                return RG_ERROR;
            }
        }
    }

    if (rg_agent_tools_build(cycle, cycle->pool, agent, 1) != RG_OK) {
        return RG_ERROR;
    }

    /* the system message is built once */
    if (agent->system_prompt.data) {
        memset(&b, 0, sizeof(b));

        if (rg_llm_message(&b, RG_LLM_SYSTEM, agent->system_prompt.data,
                           agent->system_prompt.len) != RG_OK)
        {
            rg_buf_free(&b);
            return RG_ERROR;
        }

        agent->system_msg = rg_pstrdup(cycle->pool, b.data, b.len);
        agent->system_msg_len = b.len;
        rg_buf_free(&b);

        if (agent->system_msg == NULL) {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


rg_uint_t
rg_agent_provided_match(rg_agent_conf_t *agent, const char *name,
    size_t len)
{
    char       buf[80];
    rg_str_t  *p;
    rg_uint_t  i;

    if (agent->provided == NULL || len >= sizeof(buf)) {
        return 0;
    }

    memcpy(buf, name, len);
    buf[len] = '\0';

    p = agent->provided->elts;

    for (i = 0; i < agent->provided->nelts; i++) {
        if (fnmatch(p[i].data, buf, 0) == 0) {
            return 1;
        }
    }

    return 0;
}


/* The allow-list: each name is a loaded tool, or a name or pattern
 * (fs__*) with the prefix of a provider, whose tools are known only in
 * an engine; those are kept in agent->provided. */
static rg_int_t
rg_agent_resolve(rg_cycle_t *cycle, rg_agent_conf_t *agent)
{
    rg_str_t         *names, *p;
    rg_uint_t         i, j, n;
    rg_toolset_t     *ts;
    rg_tool_entry_t  *te;

    ts = &agent->toolset;

    if (agent->tool_names == NULL) {
        return RG_OK;
    }

    names = agent->tool_names->elts;
    n = agent->tool_names->nelts;

    ts->tools = rg_pcalloc(cycle->pool, (n + 1) * sizeof(rg_tool_entry_t *));
    if (ts->tools == NULL) {
        return RG_ERROR;
    }

    for (i = 0; i < n; i++) {
        for (j = 0; j < i; j++) {
            if (rg_str_cmp(&names[i], &names[j]) == 0) {
                rg_conf_error(cycle, agent, "tools", names[i].data,
                              agent->file, agent->line,
                              "agent \"%.*s\" lists tool \"%.*s\" twice",
                              (int) agent->name.len, agent->name.data,
                              (int) names[i].len, names[i].data);
                return RG_ERROR;
            }
        }

        te = rg_module_find_tool(cycle, names[i].data, names[i].len);

        if (te) {
            ts->tools[ts->ntools++] = te;
            continue;
        }

        if (rg_module_provider_find(cycle, names[i].data, names[i].len)
            == NULL)
        {
            rg_conf_error(cycle, agent, "tools", names[i].data,
                          agent->file, agent->line,
                          "agent \"%.*s\" names an unknown tool \"%.*s\" "
                          "(loaded tools: %s)",
                          (int) agent->name.len, agent->name.data,
                          (int) names[i].len, names[i].data,
                          rg_module_tool_list(cycle));
            return RG_ERROR;
        }

        if (!rg_module_name_valid(names[i].data, names[i].len, 1)) {
            rg_conf_error(cycle, agent, "tools", names[i].data,
                          agent->file, agent->line,
                          "agent \"%.*s\": \"%.*s\" is not a tool name a "
                          "model accepts (letters, digits, \"_\" and \"-\", "
                          "at most 64, \"*\" in a pattern)",
                          (int) agent->name.len, agent->name.data,
                          (int) rg_min(names[i].len, 80), names[i].data);
            return RG_ERROR;
        }

        if (agent->provided == NULL) {
            agent->provided = rg_array_create(cycle->pool, 4,
                                              sizeof(rg_str_t));
            if (agent->provided == NULL) {
                return RG_ERROR;
            }
        }

        p = rg_array_push(agent->provided);
        if (p == NULL) {
            return RG_ERROR;
        }

        *p = names[i];
    }

    return RG_OK;
}


/* The tool a directive names (tool_timeout NAME, tool_max_calls NAME,
 * approve NAME): RG_OK, its index in the agent's toolset in *k;
 * RG_DECLINED, none of its tools, which a provider may bring (or, not
 * strict, an engine's view leaves out); RG_ERROR, none at all (said) */
static rg_int_t
rg_agent_tool_named(rg_cycle_t *cycle, rg_agent_conf_t *agent,
    rg_uint_t strict, const char *directive, rg_str_t *name, rg_int_t *k)
{
    *k = rg_toolset_find(&agent->toolset, name->data, name->len);

    if (*k >= 0) {
        return RG_OK;
    }

    if (strict && !rg_agent_provided_match(agent, name->data, name->len)) {
        rg_conf_error(cycle, agent, directive, name->data, agent->file,
                      agent->line, "agent \"%.*s\": \"%s\" names \"%.*s\", "
                      "which is not in its \"tools\"",
                      (int) agent->name.len, agent->name.data, directive,
                      (int) name->len, name->data);
        return RG_ERROR;
    }

    return RG_DECLINED;
}


rg_int_t
rg_agent_tools_build(rg_cycle_t *cycle, rg_pool_t *pool,
    rg_agent_conf_t *agent, rg_uint_t strict)
{
    rg_buf_t                  b;
    rg_int_t                  k;
    rg_str_t                 *names;
    rg_uint_t                 i, j, f;
    rg_toolset_t             *ts;
    rg_llm_tool_t             tool;
    rg_llm_prefix_t           prefix;
    rg_agent_tool_cap_t      *tc;
    rg_agent_tool_timeout_t  *tt;

    ts = &agent->toolset;
    ts->timeouts = NULL;

    if (agent->tool_timeout_names) {
        ts->timeouts = rg_pcalloc(pool, (ts->ntools + 1) * sizeof(rg_msec_t));
        if (ts->timeouts == NULL) {
            return RG_ERROR;
        }

        tt = agent->tool_timeout_names->elts;

        for (i = 0; i < agent->tool_timeout_names->nelts; i++) {
            switch (rg_agent_tool_named(cycle, agent, strict, "tool_timeout",
                                        &tt[i].name, &k))
            {
            case RG_OK:
                ts->timeouts[k] = tt[i].timeout;
                break;
            case RG_ERROR:
                return RG_ERROR;
            }
        }
    }

    agent->tool_caps = rg_pcalloc(pool, (ts->ntools + 1) * sizeof(rg_int_t));
    if (agent->tool_caps == NULL) {
        return RG_ERROR;
    }

    for (j = 0; j < ts->ntools; j++) {
        agent->tool_caps[j] = agent->tool_max_calls;
    }

    if (agent->tool_cap_names) {
        tc = agent->tool_cap_names->elts;

        for (i = 0; i < agent->tool_cap_names->nelts; i++) {
            switch (rg_agent_tool_named(cycle, agent, strict,
                                        "tool_max_calls", &tc[i].name, &k))
            {
            case RG_OK:
                agent->tool_caps[k] = tc[i].calls;
                break;
            case RG_ERROR:
                return RG_ERROR;
            }
        }
    }

    if (strict && ts->approve) {
        names = ts->approve->elts;

        for (i = 0; i < ts->approve->nelts; i++) {
            if (rg_agent_tool_named(cycle, agent, strict, "approve",
                                    &names[i], &k)
                == RG_ERROR)
            {
                return RG_ERROR;
            }

            /* harmless, but the author meant something by it */
            if (k >= 0 && !(ts->tools[k]->tool->flags & RG_TOOL_DANGEROUS)) {
                rg_log_error(RG_LOG_WARN, cycle->log, 0, "agent \"%.*s\": "
                             "\"approve %.*s\" changes nothing: %.*s is not "
                             "dangerous, and only dangerous tools wait for "
                             "approval in %s:%lu", (int) agent->name.len,
                             agent->name.data, (int) names[i].len,
                             names[i].data, (int) names[i].len,
                             names[i].data, agent->file,
                             (unsigned long) agent->line);
            }
        }
    }

    /* how the model is told of each tool and the request prefix are
     * built once */
    memset(&b, 0, sizeof(b));

    /* in every format: a fallback llm may speak another */
    for (f = 0; f < RG_LLM_NCODECS; f++) {
        agent->tool_texts[f] = rg_pcalloc(pool,
                                          (ts->ntools + 1) * sizeof(rg_str_t));
        if (agent->tool_texts[f] == NULL) {
            goto nomem;
        }

        for (i = 0; i < ts->ntools; i++) {
            tool.name = ts->tools[i]->tool->name;
            tool.description = ts->tools[i]->tool->description;
            tool.parameters = ts->tools[i]->tool->parameters;

            rg_buf_reset(&b);

            if (rg_llm_tool_text(&rg_llm_codecs[f], &b, &tool) != RG_OK) {
                goto nomem;
            }

            agent->tool_texts[f][i].data = rg_pstrdup(pool, b.data, b.len);
            agent->tool_texts[f][i].len = b.len;

            if (agent->tool_texts[f][i].data == NULL) {
                goto nomem;
            }
        }
    }

    memset(&prefix, 0, sizeof(prefix));
    prefix.model = agent->llm->model.data;
    prefix.temperature = agent->temperature;
    prefix.temperature_set = agent->temperature_set;
    prefix.stream = agent->llm->stream ? 1 : 0;
    prefix.tools = agent->tool_texts[agent->llm->format];
    prefix.ntools = ts->ntools;
    prefix.llm = agent->llm;

    rg_buf_reset(&b);

    if (rg_llm_prefix(agent->llm->codec, &b, &prefix) != RG_OK) {
        goto nomem;
    }

    agent->prefix = rg_pstrdup(pool, b.data, b.len);
    agent->prefix_len = b.len;

    rg_buf_free(&b);

    ts->tool_list = rg_module_tool_names(pool, ts->tools, ts->ntools);

    if (agent->prefix == NULL || ts->tool_list == NULL) {
        return RG_ERROR;
    }

    return RG_OK;

nomem:

    rg_buf_free(&b);
    return RG_ERROR;
}


static void *
rg_agent_create_conf(rg_cycle_t *cycle)
{
    rg_agent_main_conf_t  *amcf;

    amcf = rg_conf_create_named(cycle->pool, sizeof(rg_agent_main_conf_t),
                                rg_agent_commands,
                                offsetof(rg_agent_main_conf_t, agents));
    if (amcf == NULL) {
        return NULL;
    }

    /* what rg_agent_tenant_max_tokens and _cost set */
    amcf->tenant_max_tokens = RG_CONF_UNSET;
    amcf->tenant_max_cost = NAN;

    return amcf;
}


static char *
rg_agent_init_conf(rg_cycle_t *cycle, void *conf)
{
    rg_uint_t              i;
    rg_agent_conf_t      **agents;
    rg_agent_main_conf_t  *amcf;

    amcf = conf;

    rg_conf_init_value(amcf->max_agent_depth, 3);
    rg_conf_init_value(amcf->tenant_max_tokens, 0);
    rg_conf_init_double_value(amcf->tenant_max_cost, 0);
    rg_conf_init_msec_value(amcf->approval_timeout, 3600000);

    agents = amcf->agents.elts;

    if (amcf->agents.nelts == 0) {
        rg_cycle_error(cycle, cycle->conf_file, 0,
                       "no \"agent\" block: at least one agent is needed");
        return RG_CONF_ERROR;
    }

    for (i = 0; i < amcf->agents.nelts; i++) {
        if (rg_agent_init(cycle, agents[i]) != RG_OK) {
            return RG_CONF_ERROR;
        }
    }

    if (amcf->default_agent.data
        && rg_agent_find(cycle, amcf->default_agent.data,
                         amcf->default_agent.len) == NULL)
    {
        rg_cycle_error(cycle, cycle->conf_file, amcf->default_agent_line,
                       "\"default_agent\" names an unknown agent \"%.*s\"",
                       (int) amcf->default_agent.len,
                       amcf->default_agent.data);
        return RG_CONF_ERROR;
    }

    if (amcf->default_agent.data == NULL) {
        amcf->default_agent = agents[0]->name;
    }

    return RG_CONF_OK;
}


/* "N per WINDOW", the form of tenant_max_tokens and tenant_max_cost:
 * the number (thousands and millions written k and m when units), and
 * the window, of at least 1s; RG_ERROR when it is not so */
static rg_int_t
rg_agent_per_window(rg_str_t *a, rg_uint_t units, double *n,
    rg_msec_t *window)
{
    char  *end;

    errno = 0;
    *n = strtod(a[1].data, &end);

    if (units && (*end == 'k' || *end == 'K')) {
        *n *= 1000;
        end++;
    } else if (units && (*end == 'm' || *end == 'M')) {
        *n *= 1000000;
        end++;
    }

    if (errno || end == a[1].data || *end != '\0'
        || a[2].len != 3 || memcmp(a[2].data, "per", 3) != 0
        || rg_conf_parse_msec(&a[3], window) != RG_OK || *window < 1000)
    {
        return RG_ERROR;
    }

    return RG_OK;
}


/* "tenant_max_tokens 1m per 1d;": tokens per window, for each tenant
 * across every process on the store */
static char *
rg_agent_tenant_max_tokens(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    double                 n;
    rg_agent_main_conf_t  *amcf;

    amcf = conf;

    if (amcf->tenant_max_tokens != RG_CONF_UNSET) {
        return "is duplicate";
    }

    if (rg_agent_per_window(cf->args, 1, &n, &amcf->tenant_window) != RG_OK
        || !(n >= 1) || n > 1e15)
    {
        return "expects tokens, \"per\" and a window of at least 1s, "
               "such as \"tenant_max_tokens 1m per 1d;\"";
    }

    amcf->tenant_max_tokens = (rg_int_t) n;

    return RG_CONF_OK;
}


/* "tenant_max_cost 25 per 1d;": dollars per window, for each tenant
 * across every process on the store (by the llms' prices) */
static char *
rg_agent_tenant_max_cost(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    double                 n;
    rg_agent_main_conf_t  *amcf;

    amcf = conf;

    if (!isnan(amcf->tenant_max_cost)) {
        return "is duplicate";
    }

    if (rg_agent_per_window(cf->args, 0, &n, &amcf->tenant_cost_window)
        != RG_OK || !(n > 0) || n > 1e9)
    {
        return "expects dollars, \"per\" and a window of at least 1s, "
               "such as \"tenant_max_cost 25 per 1d;\"";
    }

    amcf->tenant_max_cost = n;

    return RG_CONF_OK;
}
