/* rg_cycle.c: builds a cycle from a configuration: the main, llm and
 * agent directives, their defaults, and the checks that need the whole
 * file (an agent's llm and tools exist, a key variable is set). Module
 * directives (load_module, module) live in src/tools/rg_module.c. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_module.h>
#include <rg_llm_openai.h>
#include <rg_llm_request.h>
#include <rg_secret.h>
#include <math.h>


static char *rg_cycle_error_log(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static char *rg_cycle_llm_block(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static char *rg_cycle_agent_block(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static char *rg_cycle_system_prompt(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static char *rg_cycle_tool_timeout(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static char *rg_cycle_thread_pool(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static char *rg_cycle_store(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static char *rg_cycle_tool_max_calls(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static char *rg_cycle_default_agent(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);


static rg_conf_num_bounds_t  rg_cycle_rounds_bounds = { 1, 10000 };
static rg_conf_num_bounds_t  rg_cycle_conns_bounds = { 1, 1000000 };
static rg_conf_num_bounds_t  rg_cycle_retries_bounds = { 0, 100 };
static rg_conf_num_bounds_t  rg_cycle_workers_bounds = { 1, 1024 };
static rg_conf_num_bounds_t  rg_cycle_temp_bounds = { 0, 2 };
static rg_conf_num_bounds_t  rg_cycle_depth_bounds = { 0, 16 };
static rg_conf_num_bounds_t  rg_cycle_helpers_bounds = { 1, 256 };
static rg_conf_num_bounds_t  rg_cycle_rate_bounds = { 1, 100000000 };
static rg_conf_num_bounds_t  rg_cycle_repeat_bounds = { 0, 1000 };
static rg_conf_num_bounds_t  rg_cycle_threshold_bounds = { 0, 1 };
static rg_conf_num_bounds_t  rg_cycle_calls_bounds = { 1, RG_LLM_MAX_CALLS };
/* a stream that stops sending must end: idle_timeout is never off */
static rg_conf_num_bounds_t  rg_cycle_idle_bounds = { 1, 0 };

static rg_conf_enum_t  rg_cycle_dedupe_enum[] = {
    { rg_string("off"), RG_DEDUPE_OFF },
    { rg_string("session"), RG_DEDUPE_SESSION },
    { rg_string("agent"), RG_DEDUPE_AGENT },
    { rg_string("global"), RG_DEDUPE_GLOBAL },
    { rg_null_string, 0 }
};


static rg_command_t  rg_cycle_main_commands[] = {

    { rg_string("error_log"), RG_MAIN_CONF|RG_CONF_TAKE12,
      rg_cycle_error_log, 0, NULL },

    { rg_string("load_module"), RG_MAIN_CONF|RG_CONF_TAKE12,
      rg_module_load_directive, 0, NULL },

    { rg_string("module"), RG_MAIN_CONF|RG_CONF_BLOCK|RG_CONF_TAKE1,
      rg_module_block_directive, 0, NULL },

    { rg_string("llm"), RG_MAIN_CONF|RG_CONF_BLOCK|RG_CONF_TAKE1,
      rg_cycle_llm_block, 0, NULL },

    { rg_string("agent"), RG_MAIN_CONF|RG_CONF_BLOCK|RG_CONF_TAKE1,
      rg_cycle_agent_block, 0, NULL },

    { rg_string("default_agent"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_cycle_default_agent, 0, NULL },

    { rg_string("concurrency"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_cycle_t, concurrency),
      &rg_cycle_conns_bounds },

    { rg_string("worker_processes"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_cycle_t, worker_processes),
      &rg_cycle_workers_bounds },

    { rg_string("thread_pool"), RG_MAIN_CONF|RG_CONF_TAKE123,
      rg_cycle_thread_pool, 0, NULL },

    { rg_string("store"), RG_MAIN_CONF|RG_CONF_TAKE123,
      rg_cycle_store, 0, NULL },

    { rg_string("isolated_helpers"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_cycle_t, isolated_helpers),
      &rg_cycle_helpers_bounds },

    { rg_string("max_agent_depth"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_cycle_t, max_agent_depth),
      &rg_cycle_depth_bounds },

    { rg_string("tool_result_limit"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_size_slot, offsetof(rg_cycle_t, tool_result_limit), NULL },

    { rg_string("response_memory"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_size_slot, offsetof(rg_cycle_t, response_memory), NULL },

      rg_null_command
};


static rg_command_t  rg_cycle_llm_commands[] = {

    { rg_string("base_url"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_llm_conf_t, base_url), NULL },

    { rg_string("api_key_env"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_llm_conf_t, api_key_env), NULL },

    { rg_string("model"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_llm_conf_t, model), NULL },

    { rg_string("timeout"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_llm_conf_t, timeout), NULL },

    { rg_string("connect_timeout"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_llm_conf_t, connect_timeout), NULL },

    { rg_string("idle_timeout"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_llm_conf_t, idle_timeout),
      &rg_cycle_idle_bounds },

    { rg_string("max_connections"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_llm_conf_t, max_connections),
      &rg_cycle_conns_bounds },

    { rg_string("max_retries"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_llm_conf_t, max_retries),
      &rg_cycle_retries_bounds },

    { rg_string("retry_base"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_llm_conf_t, retry_base), NULL },

    { rg_string("retry_max"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_llm_conf_t, retry_max), NULL },

    { rg_string("temperature"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_double_slot, offsetof(rg_llm_conf_t, temperature),
      &rg_cycle_temp_bounds },

    { rg_string("buffer_size"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_size_slot, offsetof(rg_llm_conf_t, buffer_size), NULL },

    { rg_string("fallback"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_llm_conf_t, fallback_name), NULL },

    { rg_string("requests_per_minute"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_llm_conf_t, requests_per_minute),
      &rg_cycle_rate_bounds },

    { rg_string("tokens_per_minute"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_llm_conf_t, tokens_per_minute),
      &rg_cycle_rate_bounds },

    { rg_string("retry_budget"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_llm_conf_t, retry_budget), NULL },

    { rg_string("stream"), RG_LLM_CONF|RG_CONF_FLAG,
      rg_conf_set_flag_slot, offsetof(rg_llm_conf_t, stream), NULL },

      rg_null_command
};


static rg_command_t  rg_cycle_agent_commands[] = {

    { rg_string("llm"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_agent_conf_t, llm_name), NULL },

    { rg_string("system_prompt"), RG_AGENT_CONF|RG_CONF_1MORE,
      rg_cycle_system_prompt, offsetof(rg_agent_conf_t, system_prompt),
      NULL },

    { rg_string("tools"), RG_AGENT_CONF|RG_CONF_1MORE,
      rg_conf_set_str_array_slot, offsetof(rg_agent_conf_t, tool_names),
      NULL },

    { rg_string("max_rounds"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, max_rounds),
      &rg_cycle_rounds_bounds },

    { rg_string("tool_timeout"), RG_AGENT_CONF|RG_CONF_TAKE12,
      rg_cycle_tool_timeout, 0, NULL },

    { rg_string("max_tokens"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, max_tokens), NULL },

    { rg_string("deadline"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_agent_conf_t, deadline), NULL },

    { rg_string("tool_max_calls"), RG_AGENT_CONF|RG_CONF_TAKE12,
      rg_cycle_tool_max_calls, 0, NULL },

    { rg_string("max_tool_calls_per_turn"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, max_tool_calls),
      &rg_cycle_calls_bounds },

    { rg_string("repeat_window"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, repeat_window),
      &rg_cycle_repeat_bounds },

    { rg_string("repeat_limit"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, repeat_limit),
      &rg_cycle_repeat_bounds },

    { rg_string("dedupe"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_enum_slot, offsetof(rg_agent_conf_t, dedupe),
      rg_cycle_dedupe_enum },

    { rg_string("dedupe_ttl"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_agent_conf_t, dedupe_ttl), NULL },

    { rg_string("context_limit"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, context_limit), NULL },

    { rg_string("context_threshold"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_double_slot, offsetof(rg_agent_conf_t, context_threshold),
      &rg_cycle_threshold_bounds },

    { rg_string("keep_rounds"), RG_AGENT_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_agent_conf_t, keep_rounds),
      &rg_cycle_repeat_bounds },

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
      &rg_cycle_temp_bounds },

      rg_null_command
};


static rg_command_t  *rg_cycle_all_commands[] = {
    rg_cycle_main_commands, rg_cycle_llm_commands, rg_cycle_agent_commands,
    NULL
};


static char *
rg_cycle_error_log(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    int         fd;
    char       *path;
    rg_int_t    level;
    rg_cycle_t *cycle;

    cycle = conf;
    level = RG_LOG_NOTICE;

    if (cf->nargs == 3) {
        level = rg_log_level_parse(cf->args[2].data, cf->args[2].len);
        if (level == RG_ERROR) {
            return "expects a level: emerg, alert, crit, error, warn, "
                   "notice, info or debug";
        }
    }

    if (rg_str_eq(&cf->args[1], "stderr")) {
        fd = STDERR_FILENO;

    } else {
        path = rg_conf_full_path(cf, &cf->args[1]);
        if (path == NULL) {
            return RG_CONF_ERROR;
        }

        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd == -1) {
            rg_conf_log_error(RG_LOG_EMERG, cf, errno,
                              "cannot open error log \"%s\"", path);
            return RG_CONF_ERROR;
        }
    }

    if (cycle->log_opened) {
        close(cycle->new_log.fd);
    }

    cycle->new_log.fd = fd;
    cycle->log_opened = fd != STDERR_FILENO;
    cycle->new_log.log_level = level;

    return RG_CONF_OK;
}


static char *
rg_cycle_system_prompt(rg_conf_t *cf, rg_command_t *cmd, void *conf)
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


/* tool_timeout 30s;  or, for one tool, tool_timeout calc 5s; */
static char *
rg_cycle_tool_timeout(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_msec_t                 ms;
    rg_agent_conf_t          *agent;
    rg_agent_tool_timeout_t  *t;

    agent = conf;

    if (rg_conf_parse_msec(&cf->args[cf->nargs - 1], &ms) != RG_OK) {
        return "expects a time such as 500ms, 30s, 5m or 1h";
    }

    if (cf->nargs == 2) {
        if (agent->toolset.timeout != RG_CONF_UNSET_MSEC) {
            return "is duplicate";
        }
        agent->toolset.timeout = ms;
        return RG_CONF_OK;
    }

    if (agent->tool_timeout_names == NULL) {
        agent->tool_timeout_names = rg_array_create(cf->pool, 4,
                                        sizeof(rg_agent_tool_timeout_t));
        if (agent->tool_timeout_names == NULL) {
            return RG_CONF_ERROR;
        }
    }

    t = rg_array_push(agent->tool_timeout_names);
    if (t == NULL) {
        return RG_CONF_ERROR;
    }

    t->name = cf->args[1];
    t->timeout = ms;

    return RG_CONF_OK;
}


static char *
rg_cycle_default_agent(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_cycle_t  *cycle;

    cycle = conf;

    if (cycle->default_agent.data) {
        return "is duplicate";
    }

    cycle->default_agent = cf->args[1];
    cycle->default_agent_line = rg_conf_line(cf);

    return RG_CONF_OK;
}


/* tool_max_calls 5;  or, for one tool, tool_max_calls calc 3; */
static char *
rg_cycle_tool_max_calls(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_int_t              v;
    rg_agent_conf_t      *agent;
    rg_agent_tool_cap_t  *t;

    agent = conf;

    v = rg_atoi(cf->args[cf->nargs - 1].data, cf->args[cf->nargs - 1].len);
    if (v == RG_ERROR || v < 1) {
        return "expects a number of calls of 1 or more";
    }

    if (cf->nargs == 2) {
        if (agent->tool_max_calls != RG_CONF_UNSET) {
            return "is duplicate";
        }
        agent->tool_max_calls = v;
        return RG_CONF_OK;
    }

    if (agent->tool_cap_names == NULL) {
        agent->tool_cap_names = rg_array_create(cf->pool, 4,
                                    sizeof(rg_agent_tool_cap_t));
        if (agent->tool_cap_names == NULL) {
            return RG_CONF_ERROR;
        }
    }

    t = rg_array_push(agent->tool_cap_names);
    if (t == NULL) {
        return RG_CONF_ERROR;
    }

    t->name = cf->args[1];
    t->calls = v;

    return RG_CONF_OK;
}


/* store memory max_keys=100000 max_bytes=64m; */
static char *
rg_cycle_store(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    size_t       n;
    rg_int_t     v;
    rg_str_t    *a, s;
    rg_uint_t    i;
    rg_cycle_t  *cycle;

    cycle = conf;

    if (!rg_str_eq(&cf->args[1], "memory")) {
        return "names a store other than \"memory\": the store of one "
               "process is \"memory\"";
    }

    if (cycle->store_max_keys != RG_CONF_UNSET) {
        return "is duplicate";
    }

    cycle->store_max_keys = 100000;
    cycle->store_max_bytes = 64 * 1024 * 1024;

    for (i = 2; i < cf->nargs; i++) {
        a = &cf->args[i];

        if (a->len > 9 && memcmp(a->data, "max_keys=", 9) == 0) {
            v = rg_atoi(a->data + 9, a->len - 9);
            if (v < 1) {
                return "expects max_keys=N with N of 1 or more";
            }
            cycle->store_max_keys = v;

        } else if (a->len > 10 && memcmp(a->data, "max_bytes=", 10) == 0) {
            s.data = a->data + 10;
            s.len = a->len - 10;
            if (rg_conf_parse_size(&s, &n) != RG_OK || n < 1024) {
                return "expects max_bytes=SIZE of 1k or more, such as 64m";
            }
            cycle->store_max_bytes = n;

        } else {
            return "expects max_keys=N or max_bytes=SIZE";
        }
    }

    return RG_CONF_OK;
}


/* thread_pool default threads=4 max_queue=65536; */
static char *
rg_cycle_thread_pool(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_int_t     v;
    rg_str_t    *a;
    rg_uint_t    i;
    rg_cycle_t  *cycle;

    cycle = conf;

    if (!rg_str_eq(&cf->args[1], "default")) {
        return "names a pool other than \"default\": tools run in the "
               "pool \"default\"";
    }

    if (cycle->pool_threads != RG_CONF_UNSET) {
        return "is duplicate";
    }

    cycle->pool_threads = 4;
    cycle->pool_max_queue = 65536;

    for (i = 2; i < cf->nargs; i++) {
        a = &cf->args[i];

        if (a->len > 8 && memcmp(a->data, "threads=", 8) == 0) {
            v = rg_atoi(a->data + 8, a->len - 8);
            if (v < 1 || v > 512) {
                return "expects threads=N with N from 1 to 512";
            }
            cycle->pool_threads = v;

        } else if (a->len > 10 && memcmp(a->data, "max_queue=", 10) == 0) {
            v = rg_atoi(a->data + 10, a->len - 10);
            if (v < 1) {
                return "expects max_queue=N with N of 1 or more";
            }
            cycle->pool_max_queue = v;

        } else {
            return "expects threads=N or max_queue=N";
        }
    }

    return RG_CONF_OK;
}


static char *
rg_cycle_block(rg_conf_t *cf, rg_uint_t type, rg_command_t *commands,
    void *ctx)
{
    char          *rv;
    void          *pctx;
    rg_uint_t      ptype;
    rg_command_t  *pcommands;

    pctx = cf->ctx;
    ptype = cf->ctx_type;
    pcommands = cf->commands;

    cf->ctx = ctx;
    cf->ctx_type = type;
    cf->commands = commands;

    rv = rg_conf_parse_block(cf);

    cf->ctx = pctx;
    cf->ctx_type = ptype;
    cf->commands = pcommands;

    return rv;
}


static char *
rg_cycle_llm_block(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_cycle_t      *cycle;
    rg_llm_conf_t   *llm, **lp;

    cycle = conf;

    if (rg_cycle_llm(cycle, cf->args[1].data, cf->args[1].len)) {
        return "is duplicate: an llm of that name exists";
    }

    llm = rg_pcalloc(cf->pool, sizeof(rg_llm_conf_t));
    lp = rg_array_push(&cycle->llms);
    if (llm == NULL || lp == NULL) {
        return RG_CONF_ERROR;
    }

    *lp = llm;

    llm->name = cf->args[1];
    llm->timeout = RG_CONF_UNSET_MSEC;
    llm->connect_timeout = RG_CONF_UNSET_MSEC;
    llm->idle_timeout = RG_CONF_UNSET_MSEC;
    llm->max_connections = RG_CONF_UNSET;
    llm->max_retries = RG_CONF_UNSET;
    llm->retry_base = RG_CONF_UNSET_MSEC;
    llm->retry_max = RG_CONF_UNSET_MSEC;
    llm->temperature = NAN;
    llm->buffer_size = RG_CONF_UNSET_SIZE;
    llm->requests_per_minute = RG_CONF_UNSET;
    llm->tokens_per_minute = RG_CONF_UNSET;
    llm->retry_budget = RG_CONF_UNSET_MSEC;
    llm->stream = RG_CONF_UNSET;
    llm->file = rg_conf_file_name(cf);
    llm->line = rg_conf_line(cf);

    return rg_cycle_block(cf, RG_LLM_CONF, rg_cycle_llm_commands, llm);
}


static char *
rg_cycle_agent_block(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_cycle_t       *cycle;
    rg_agent_conf_t  *agent, **ap;

    cycle = conf;

    if (rg_cycle_agent(cycle, cf->args[1].data, cf->args[1].len)) {
        return "is duplicate: an agent of that name exists";
    }

    agent = rg_pcalloc(cf->pool, sizeof(rg_agent_conf_t));
    ap = rg_array_push(&cycle->agents);
    if (agent == NULL || ap == NULL) {
        return RG_CONF_ERROR;
    }

    *ap = agent;

    agent->name = cf->args[1];
    agent->toolset.owner = agent->name;
    agent->max_rounds = RG_CONF_UNSET;
    agent->toolset.timeout = RG_CONF_UNSET_MSEC;
    agent->temperature = NAN;
    agent->max_tokens = RG_CONF_UNSET;
    agent->deadline = RG_CONF_UNSET_MSEC;
    agent->tool_max_calls = RG_CONF_UNSET;
    agent->max_tool_calls = RG_CONF_UNSET;
    agent->repeat_window = RG_CONF_UNSET;
    agent->repeat_limit = RG_CONF_UNSET;
    agent->dedupe = RG_CONF_UNSET_UINT;
    agent->dedupe_ttl = RG_CONF_UNSET_MSEC;
    agent->context_limit = RG_CONF_UNSET;
    agent->context_threshold = NAN;
    agent->keep_rounds = RG_CONF_UNSET;
    agent->context_summarize = RG_CONF_UNSET;
    agent->file = rg_conf_file_name(cf);
    agent->line = rg_conf_line(cf);

    return rg_cycle_block(cf, RG_AGENT_CONF, rg_cycle_agent_commands, agent);
}


rg_agent_conf_t *
rg_cycle_agent(rg_cycle_t *cycle, const char *name, size_t len)
{
    rg_uint_t         i;
    rg_agent_conf_t **a;

    a = cycle->agents.elts;
    for (i = 0; i < cycle->agents.nelts; i++) {
        if (a[i]->name.len == len && memcmp(a[i]->name.data, name, len) == 0)
        {
            return a[i];
        }
    }

    return NULL;
}


rg_llm_conf_t *
rg_cycle_llm(rg_cycle_t *cycle, const char *name, size_t len)
{
    rg_uint_t        i;
    rg_llm_conf_t  **l;

    l = cycle->llms.elts;
    for (i = 0; i < cycle->llms.nelts; i++) {
        if (l[i]->name.len == len && memcmp(l[i]->name.data, name, len) == 0)
        {
            return l[i];
        }
    }

    return NULL;
}


static void
rg_cycle_fail(rg_cycle_t *cycle, const char *file, rg_uint_t line,
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


/* the header holds the key: zeroed before the pool frees it */
static void
rg_cycle_wipe_auth(void *data)
{
    rg_llm_conf_t  *llm;

    llm = data;
    rg_secret_wipe(llm->auth, strlen(llm->auth));
}


static rg_int_t
rg_cycle_init_llm(rg_cycle_t *cycle, rg_llm_conf_t *llm)
{
    const char  *key;
    size_t       n;
    rg_str_t    *u;

    u = &llm->base_url;

    if (u->data == NULL) {
        rg_cycle_fail(cycle, llm->file, llm->line,
                      "llm \"%.*s\" has no \"base_url\"",
                      (int) llm->name.len, llm->name.data);
        return RG_ERROR;
    }

    if (rg_str_casecmp_prefix(u->data, u->len, "http://") != 0
        && rg_str_casecmp_prefix(u->data, u->len, "https://") != 0)
    {
        rg_cycle_fail(cycle, llm->file, llm->line,
                      "llm \"%.*s\": \"base_url\" must start with http:// "
                      "or https://", (int) llm->name.len, llm->name.data);
        return RG_ERROR;
    }

    if (llm->model.data == NULL) {
        rg_cycle_fail(cycle, llm->file, llm->line,
                      "llm \"%.*s\" has no \"model\"",
                      (int) llm->name.len, llm->name.data);
        return RG_ERROR;
    }

    n = u->len;
    while (n > 0 && u->data[n - 1] == '/') {
        n--;
    }

    llm->url = rg_palloc(cycle->pool, n + sizeof("/chat/completions"));
    if (llm->url == NULL) {
        return RG_ERROR;
    }

    memcpy(llm->url, u->data, n);
    memcpy(llm->url + n, "/chat/completions", sizeof("/chat/completions"));

    if (llm->api_key_env.data) {
        /* taken out of the environment, where a program exec runs could
         * read it in /proc/PID/environ; kept for a configuration read
         * later */
        key = rg_secret_env(llm->api_key_env.data);

        if (key == NULL || *key == '\0') {
            rg_cycle_fail(cycle, llm->file, llm->line,
                          "llm \"%.*s\": the environment variable \"%s\" "
                          "named by \"api_key_env\" is not set",
                          (int) llm->name.len, llm->name.data,
                          llm->api_key_env.data);
            return RG_ERROR;
        }

        /* a line break in a key would smuggle in headers */
        for (n = 0; key[n]; n++) {
            if ((unsigned char) key[n] < 0x20 || key[n] == 0x7f) {
                rg_cycle_fail(cycle, llm->file, llm->line,
                              "llm \"%.*s\": the environment variable \"%s\" "
                              "named by \"api_key_env\" holds a control "
                              "character", (int) llm->name.len,
                              llm->name.data, llm->api_key_env.data);
                return RG_ERROR;
            }
        }

        n = sizeof("Authorization: Bearer ") - 1 + strlen(key);
        llm->auth = rg_palloc(cycle->pool, n + 1);
        if (llm->auth == NULL) {
            return RG_ERROR;
        }

        snprintf(llm->auth, n + 1, "Authorization: Bearer %s", key);

        if (rg_pool_cleanup_add(cycle->pool, rg_cycle_wipe_auth, llm)
            == NULL)
        {
            rg_secret_wipe(llm->auth, n);
            return RG_ERROR;
        }
    }

    if (llm->timeout == RG_CONF_UNSET_MSEC) {
        llm->timeout = 120000;
    }
    if (llm->connect_timeout == RG_CONF_UNSET_MSEC) {
        llm->connect_timeout = 10000;
    }
    if (llm->idle_timeout == RG_CONF_UNSET_MSEC) {
        llm->idle_timeout = 60000;
    }
    if (llm->max_connections == RG_CONF_UNSET) {
        llm->max_connections = 1024;
    }
    if (llm->max_retries == RG_CONF_UNSET) {
        llm->max_retries = 4;
    }
    if (llm->retry_base == RG_CONF_UNSET_MSEC) {
        llm->retry_base = 500;
    }
    if (llm->retry_max == RG_CONF_UNSET_MSEC) {
        llm->retry_max = 30000;
    }
    if (isnan(llm->temperature)) {
        llm->temperature = 0;
    }
    if (llm->buffer_size == RG_CONF_UNSET_SIZE) {
        llm->buffer_size = 8192;
    }

    if (llm->requests_per_minute == RG_CONF_UNSET) {
        llm->requests_per_minute = 0;
    }
    if (llm->tokens_per_minute == RG_CONF_UNSET) {
        llm->tokens_per_minute = 0;
    }
    if (llm->retry_budget == RG_CONF_UNSET_MSEC) {
        llm->retry_budget = 120000;
    }
    if (llm->stream == RG_CONF_UNSET) {
        llm->stream = 0;
    }

    if (llm->fallback_name.data) {
        llm->fallback = rg_cycle_llm(cycle, llm->fallback_name.data,
                                     llm->fallback_name.len);
        if (llm->fallback == NULL || llm->fallback == llm) {
            rg_cycle_fail(cycle, llm->file, llm->line,
                          "llm \"%.*s\": \"fallback\" names %s \"%.*s\"",
                          (int) llm->name.len, llm->name.data,
                          llm->fallback ? "itself:" : "an unknown llm",
                          (int) llm->fallback_name.len,
                          llm->fallback_name.data);
            return RG_ERROR;
        }
    }

    if (llm->buffer_size < 1024 || llm->buffer_size > 512 * 1024) {
        rg_cycle_fail(cycle, llm->file, llm->line,
                      "llm \"%.*s\": \"buffer_size\" must be from 1k to 512k",
                      (int) llm->name.len, llm->name.data);
        return RG_ERROR;
    }

    return RG_OK;
}


static rg_int_t
rg_cycle_init_agent(rg_cycle_t *cycle, rg_agent_conf_t *agent)
{
    rg_buf_t                  b;
    rg_int_t                  k;
    rg_str_t                 *names;
    rg_uint_t                 i, j;
    rg_toolset_t             *ts;
    rg_llm_conf_t           **llms;
    rg_llm_tool_t             tool;
    rg_llm_prefix_t           prefix;
    rg_tool_entry_t          *te;
    rg_agent_tool_cap_t      *tc;
    rg_agent_tool_timeout_t  *tt;

    ts = &agent->toolset;

    if (agent->llm_name.data) {
        agent->llm = rg_cycle_llm(cycle, agent->llm_name.data,
                                  agent->llm_name.len);
        if (agent->llm == NULL) {
            rg_cycle_fail(cycle, agent->file, agent->line,
                          "agent \"%.*s\" names an unknown llm \"%.*s\"",
                          (int) agent->name.len, agent->name.data,
                          (int) agent->llm_name.len, agent->llm_name.data);
            return RG_ERROR;
        }

    } else if (cycle->llms.nelts == 1) {
        llms = cycle->llms.elts;
        agent->llm = llms[0];

    } else {
        rg_cycle_fail(cycle, agent->file, agent->line,
                      "agent \"%.*s\" has no \"llm\" (there are %lu llm "
                      "blocks to choose from)",
                      (int) agent->name.len, agent->name.data,
                      (unsigned long) cycle->llms.nelts);
        return RG_ERROR;
    }

    if (agent->max_rounds == RG_CONF_UNSET) {
        agent->max_rounds = 8;
    }
    if (ts->timeout == RG_CONF_UNSET_MSEC) {
        ts->timeout = 30000;
    }
    if (isnan(agent->temperature)) {
        agent->temperature = agent->llm->temperature;
    }
    if (agent->max_tokens == RG_CONF_UNSET) {
        agent->max_tokens = 0;
    }
    if (agent->deadline == RG_CONF_UNSET_MSEC) {
        agent->deadline = 0;
    }
    if (agent->tool_max_calls == RG_CONF_UNSET) {
        agent->tool_max_calls = 0;
    }
    if (agent->max_tool_calls == RG_CONF_UNSET) {
        agent->max_tool_calls = 128;
    }
    if (agent->repeat_window == RG_CONF_UNSET) {
        agent->repeat_window = 2;
    }
    if (agent->repeat_limit == RG_CONF_UNSET) {
        agent->repeat_limit = 3;
    }
    if (agent->dedupe == RG_CONF_UNSET_UINT) {
        agent->dedupe = RG_DEDUPE_SESSION;
    }
    if (agent->dedupe_ttl == RG_CONF_UNSET_MSEC) {
        agent->dedupe_ttl = 600000;
    }
    if (agent->context_limit == RG_CONF_UNSET) {
        agent->context_limit = 0;
    }
    if (isnan(agent->context_threshold)) {
        agent->context_threshold = 0.8;
    }
    if (agent->keep_rounds == RG_CONF_UNSET) {
        agent->keep_rounds = 2;
    }
    if (agent->context_summarize == RG_CONF_UNSET) {
        agent->context_summarize = 0;
    }

    /* resolve the tool allow-list */
    if (agent->tool_names) {
        ts->ntools = agent->tool_names->nelts;
        ts->tools = rg_pcalloc(cycle->pool,
                               ts->ntools * sizeof(rg_tool_entry_t *));
        if (ts->tools == NULL) {
            return RG_ERROR;
        }

        names = agent->tool_names->elts;

        for (i = 0; i < ts->ntools; i++) {
            te = rg_module_find_tool(cycle, names[i].data, names[i].len);

            if (te == NULL) {
                rg_cycle_fail(cycle, agent->file, agent->line,
                              "agent \"%.*s\" names an unknown tool \"%.*s\" "
                              "(loaded tools: %s)",
                              (int) agent->name.len, agent->name.data,
                              (int) names[i].len, names[i].data,
                              rg_module_tool_list(cycle));
                return RG_ERROR;
            }

            for (j = 0; j < i; j++) {
                if (ts->tools[j] == te) {
                    rg_cycle_fail(cycle, agent->file, agent->line,
                                  "agent \"%.*s\" lists tool \"%.*s\" twice",
                                  (int) agent->name.len, agent->name.data,
                                  (int) names[i].len, names[i].data);
                    return RG_ERROR;
                }
            }

            ts->tools[i] = te;
        }
    }

    if (agent->tool_timeout_names) {
        ts->timeouts = rg_pcalloc(cycle->pool,
                                  (ts->ntools + 1) * sizeof(rg_msec_t));
        if (ts->timeouts == NULL) {
            return RG_ERROR;
        }

        tt = agent->tool_timeout_names->elts;

        for (i = 0; i < agent->tool_timeout_names->nelts; i++) {
            k = rg_toolset_find(ts, tt[i].name.data, tt[i].name.len);

            if (k < 0) {
                rg_cycle_fail(cycle, agent->file, agent->line,
                              "agent \"%.*s\": \"tool_timeout\" names "
                              "\"%.*s\", which is not in its \"tools\"",
                              (int) agent->name.len, agent->name.data,
                              (int) tt[i].name.len, tt[i].name.data);
                return RG_ERROR;
            }

            ts->timeouts[k] = tt[i].timeout;
        }
    }

    agent->tool_caps = rg_pcalloc(cycle->pool,
                                  (ts->ntools + 1) * sizeof(rg_int_t));
    if (agent->tool_caps == NULL) {
        return RG_ERROR;
    }

    for (j = 0; j < ts->ntools; j++) {
        agent->tool_caps[j] = agent->tool_max_calls;
    }

    if (agent->tool_cap_names) {
        tc = agent->tool_cap_names->elts;

        for (i = 0; i < agent->tool_cap_names->nelts; i++) {
            k = rg_toolset_find(ts, tc[i].name.data, tc[i].name.len);

            if (k < 0) {
                rg_cycle_fail(cycle, agent->file, agent->line,
                              "agent \"%.*s\": \"tool_max_calls\" names "
                              "\"%.*s\", which is not in its \"tools\"",
                              (int) agent->name.len, agent->name.data,
                              (int) tc[i].name.len, tc[i].name.data);
                return RG_ERROR;
            }

            agent->tool_caps[k] = tc[i].calls;
        }
    }

    if (ts->approve) {
        names = ts->approve->elts;

        for (i = 0; i < ts->approve->nelts; i++) {
            if (rg_toolset_find(ts, names[i].data, names[i].len) < 0) {
                rg_cycle_fail(cycle, agent->file, agent->line,
                              "agent \"%.*s\": \"approve\" names \"%.*s\", "
                              "which is not in its \"tools\"",
                              (int) agent->name.len, agent->name.data,
                              (int) names[i].len, names[i].data);
                return RG_ERROR;
            }
        }
    }

    /* the agents run_agent may hand work to */
    if (ts->agents) {
        names = ts->agents->elts;

        for (i = 0; i < ts->agents->nelts; i++) {
            if (rg_cycle_agent(cycle, names[i].data, names[i].len) == NULL)
            {
                rg_cycle_fail(cycle, agent->file, agent->line,
                              "agent \"%.*s\": \"agents\" names an unknown "
                              "agent \"%.*s\"",
                              (int) agent->name.len, agent->name.data,
                              (int) names[i].len, names[i].data);
                return RG_ERROR;
            }
        }
    }

    /* how the model is told of each tool, the request prefix and the
     * system message are built once */
    memset(&b, 0, sizeof(b));

    agent->tool_texts = rg_pcalloc(cycle->pool,
                                   (ts->ntools + 1) * sizeof(rg_str_t));
    if (agent->tool_texts == NULL) {
        return RG_ERROR;
    }

    for (i = 0; i < ts->ntools; i++) {
        tool.name = ts->tools[i]->tool->name;
        tool.description = ts->tools[i]->tool->description;
        tool.parameters = ts->tools[i]->tool->parameters;

        rg_buf_reset(&b);

        if (rg_llm_tool_text(&b, &tool) != RG_OK) {
            goto nomem;
        }

        agent->tool_texts[i].data = rg_pstrdup(cycle->pool, b.data, b.len);
        agent->tool_texts[i].len = b.len;

        if (agent->tool_texts[i].data == NULL) {
            goto nomem;
        }
    }

    prefix.model = agent->llm->model.data;
    prefix.temperature = agent->temperature;
    prefix.stream = (rg_uint_t) agent->llm->stream;
    prefix.tools = agent->tool_texts;
    prefix.ntools = ts->ntools;

    rg_buf_reset(&b);

    if (rg_llm_prefix(&b, &prefix) != RG_OK) {
        goto nomem;
    }

    agent->prefix = rg_pstrdup(cycle->pool, b.data, b.len);
    agent->prefix_len = b.len;

    if (agent->system_prompt.data) {
        rg_buf_reset(&b);

        if (rg_llm_message(&b, RG_LLM_SYSTEM, agent->system_prompt.data,
                           agent->system_prompt.len) != RG_OK)
        {
            goto nomem;
        }

        agent->system_msg = rg_pstrdup(cycle->pool, b.data, b.len);
        agent->system_msg_len = b.len;
    }

    rg_buf_free(&b);

    ts->tool_list = rg_module_tool_names(cycle, ts->tools, ts->ntools);

    if (agent->prefix == NULL || ts->tool_list == NULL) {
        return RG_ERROR;
    }

    return RG_OK;

nomem:

    rg_buf_free(&b);
    return RG_ERROR;
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


rg_cycle_t *
rg_cycle_create(const char *conf_file, const char *conf_text, rg_log_t *log,
    char *errmsg, size_t errlen)
{
    char              *rv;
    rg_uint_t          i;
    rg_conf_t          cf;
    rg_pool_t         *pool;
    rg_cycle_t        *cycle;
    rg_llm_conf_t    **llms;
    rg_agent_conf_t  **agents;

    pool = rg_pool_create(16384);
    if (pool == NULL) {
        snprintf(errmsg, errlen, "out of memory");
        return NULL;
    }

    cycle = rg_pcalloc(pool, sizeof(rg_cycle_t));
    if (cycle == NULL
        || rg_array_init(&cycle->llms, pool, 4, sizeof(void *)) != RG_OK
        || rg_array_init(&cycle->agents, pool, 4, sizeof(void *)) != RG_OK
        || rg_array_init(&cycle->modules, pool, 8, sizeof(void *)) != RG_OK
        || rg_array_init(&cycle->tools, pool, 16, sizeof(rg_tool_entry_t))
           != RG_OK)
    {
        rg_pool_destroy(pool);
        snprintf(errmsg, errlen, "out of memory");
        return NULL;
    }

    cycle->pool = pool;
    cycle->log = log;
    cycle->new_log = *log;
    cycle->new_log.handler = NULL;
    cycle->concurrency = RG_CONF_UNSET;
    cycle->worker_processes = RG_CONF_UNSET;
    cycle->tool_result_limit = RG_CONF_UNSET_SIZE;
    cycle->response_memory = RG_CONF_UNSET_SIZE;
    cycle->pool_threads = RG_CONF_UNSET;
    cycle->pool_max_queue = RG_CONF_UNSET;
    cycle->store_max_keys = RG_CONF_UNSET;
    cycle->max_agent_depth = RG_CONF_UNSET;
    cycle->isolated_helpers = RG_CONF_UNSET;
    cycle->conf_file = conf_file ? rg_pstrdup(pool, conf_file,
                                              strlen(conf_file)) : NULL;

    /* the log file is closed, and modules are unloaded, with the pool */
    if (rg_pool_cleanup_add(pool, rg_cycle_close_log, cycle)
        == NULL
        || rg_pool_cleanup_add(pool, rg_module_unload_all, cycle) == NULL)
    {
        rg_pool_destroy(pool);
        snprintf(errmsg, errlen, "out of memory");
        return NULL;
    }

    memset(&cf, 0, sizeof(cf));
    cf.pool = pool;
    cf.cycle = cycle;
    cf.log = log;
    cf.ctx = cycle;
    cf.ctx_type = RG_MAIN_CONF;
    cf.commands = rg_cycle_main_commands;
    cf.all = rg_cycle_all_commands;

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

    if (cycle->concurrency == RG_CONF_UNSET) {
        cycle->concurrency = 64;
    }
    if (cycle->worker_processes == RG_CONF_UNSET) {
        cycle->worker_processes = 1;
    }
    if (cycle->tool_result_limit == RG_CONF_UNSET_SIZE) {
        cycle->tool_result_limit = 4000;
    }
    if (cycle->store_max_keys == RG_CONF_UNSET) {
        cycle->store_max_keys = 100000;
        cycle->store_max_bytes = 64 * 1024 * 1024;
    }

    if (cycle->response_memory == RG_CONF_UNSET_SIZE) {
        cycle->response_memory = RG_LLM_MEMORY_DEFAULT;

    } else if (cycle->response_memory < 1024 * 1024) {
        rg_cycle_fail(cycle, conf_file, 0, "\"response_memory\" must be "
                      "1m or more");
        goto failed_cycle;
    }
    if (cycle->pool_threads == RG_CONF_UNSET) {
        cycle->pool_threads = 4;
        cycle->pool_max_queue = 65536;
    }
    if (cycle->max_agent_depth == RG_CONF_UNSET) {
        cycle->max_agent_depth = 3;
    }
    if (cycle->isolated_helpers == RG_CONF_UNSET) {
        cycle->isolated_helpers = 4;
    }

    llms = cycle->llms.elts;
    for (i = 0; i < cycle->llms.nelts; i++) {
        if (rg_cycle_init_llm(cycle, llms[i]) != RG_OK) {
            goto failed_cycle;
        }
    }

    if (rg_module_init_all(cycle) != RG_OK) {
        goto failed_cycle;
    }

    agents = cycle->agents.elts;

    if (cycle->agents.nelts == 0) {
        rg_cycle_fail(cycle, conf_file, 0,
                      "no \"agent\" block: at least one agent is needed");
        goto failed_cycle;
    }

    for (i = 0; i < cycle->agents.nelts; i++) {
        if (rg_cycle_init_agent(cycle, agents[i]) != RG_OK) {
            goto failed_cycle;
        }
    }

    if (cycle->default_agent.data
        && rg_cycle_agent(cycle, cycle->default_agent.data,
                          cycle->default_agent.len) == NULL)
    {
        rg_cycle_fail(cycle, conf_file, cycle->default_agent_line,
                      "\"default_agent\" names an unknown agent \"%.*s\"",
                      (int) cycle->default_agent.len,
                      cycle->default_agent.data);
        goto failed_cycle;
    }

    if (cycle->default_agent.data == NULL) {
        cycle->default_agent = agents[0]->name;
    }

    cycle->log = &cycle->new_log;

    return cycle;

failed_cycle:

    snprintf(errmsg, errlen, "%s", cycle->errmsg);

failed:

    rg_pool_destroy(pool);
    return NULL;
}


static rg_cycle_t  *rg_cycle_kept_head;


/* some module's code may still run in a thread that was left behind */
static rg_uint_t
rg_cycle_busy(rg_cycle_t *cycle)
{
    rg_uint_t      i;
    rg_module_t  **mp;

    mp = cycle->modules.elts;

    for (i = 0; i < cycle->modules.nelts; i++) {
        if (atomic_load_explicit(&mp[i]->busy, memory_order_acquire)) {
            return 1;
        }
    }

    return 0;
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
