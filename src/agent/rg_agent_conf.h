/* rg_agent_conf.h: the agent part's configuration (rg_agent_conf.c):
 * one rg_agent_conf_t per `agent NAME { }` block, and the part's main
 * conf. */

#ifndef RG_AGENT_CONF_H
#define RG_AGENT_CONF_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_llm.h>
#include <rg_llm_conf.h>
#include <rg_module.h>

/* directives inside agent NAME { } */
#define RG_AGENT_CONF       0x0004

typedef struct rg_agent_conf_s  rg_agent_conf_t;

/* tool_timeout NAME TIME; */
typedef struct {
    rg_str_t            name;
    rg_msec_t           timeout;
} rg_agent_tool_timeout_t;

/* tool_max_calls NAME N; */
typedef struct {
    rg_str_t            name;
    rg_int_t            calls;
} rg_agent_tool_cap_t;

#define RG_DEDUPE_OFF      0
#define RG_DEDUPE_SESSION  1
#define RG_DEDUPE_AGENT    2
#define RG_DEDUPE_GLOBAL   3


struct rg_agent_conf_s {
    rg_str_t            name;
    rg_uint_t           index;            /* among the agents */
    rg_str_t            llm_name;
    rg_str_t            system_prompt;
    rg_array_t         *tool_names;       /* rg_str_t */
    rg_array_t         *provided;         /* rg_str_t: the names and
                                             patterns (fs__*) of tools a
                                             provider (an MCP server)
                                             brings at run time; NULL
                                             when none */
    rg_int_t            max_rounds;
    rg_array_t         *tool_timeout_names;  /* rg_agent_tool_timeout_t */
    double              temperature;      /* NAN: the llm's */

    /* guards */
    rg_int_t            max_tokens;       /* 0: no budget */
    double              max_cost;         /* dollars; NAN unset, 0 none */
    rg_msec_t           deadline;         /* 0: none */
    rg_msec_t           approval_timeout; /* a parked session's wait */
    rg_int_t            tool_max_calls;   /* per tool, 0: no cap */
    rg_array_t         *tool_cap_names;   /* rg_agent_tool_cap_t */
    rg_int_t           *tool_caps;        /* per tool index */
    rg_int_t            max_tool_calls;   /* per answer, the rest refused */
    rg_int_t            repeat_window;
    rg_int_t            repeat_limit;
    rg_uint_t           dedupe;           /* RG_DEDUPE_* */
    rg_msec_t           dedupe_ttl;
    rg_msec_t           dedupe_wait;      /* for another worker's call */

    /* context */
    rg_int_t            context_limit;    /* tokens, 0: not managed */
    double              context_threshold;
    rg_int_t            keep_rounds;
    rg_int_t            context_summarize;

    rg_llm_conf_t      *llm;
    rg_toolset_t        toolset;
    rg_str_t           *tool_texts[RG_LLM_NCODECS]; /* each tool, as the
                                             model is told, per format */
    unsigned            temperature_set:1;  /* configured, not default */

    char               *prefix;           /* request body up to messages */
    size_t              prefix_len;
    char               *system_msg;       /* serialized system message */
    size_t              system_msg_len;
    const char         *file;
    rg_uint_t           line;
};


typedef struct {
    rg_array_t          agents;           /* rg_agent_conf_t *, in order */
    rg_str_t            default_agent;
    rg_uint_t           default_agent_line;
    rg_int_t            max_agent_depth;
    rg_msec_t           approval_timeout; /* the agents' default */
    rg_int_t            tenant_max_tokens; /* per window; 0: no budget */
    rg_msec_t           tenant_window;
    double              tenant_max_cost;  /* dollars per window; 0: none */
    rg_msec_t           tenant_cost_window;
} rg_agent_main_conf_t;


extern rg_part_t  rg_agent_part;

/* what the part is made of beyond its configuration: its runtime in an
 * engine (rg_agent.c), its commands (rg_run.c: run and replay;
 * rg_resume.c: resume and status) and the help they share */
rg_int_t rg_agent_init_worker(rg_engine_t *e);
void rg_agent_exit_worker(rg_engine_t *e);

extern const rg_cli_t  rg_run_cli;
extern const rg_cli_t  rg_replay_cli;
extern const rg_cli_t  rg_resume_cli;
extern const rg_cli_t  rg_status_cli;
extern const char      rg_run_help[];

#define rg_agent_main_conf(cycle)                                            \
    ((rg_agent_main_conf_t *) rg_cycle_conf(cycle, &rg_agent_part))

/* the agent block called name[0..len), or NULL */
rg_agent_conf_t *rg_agent_find(rg_cycle_t *cycle, const char *name,
    size_t len);

/* name[0..len) is one of the tools the agent's `provided` names or
 * patterns take */
rg_uint_t rg_agent_provided_match(rg_agent_conf_t *agent, const char *name,
    size_t len);

/* Completes agent's toolset once its tools are known: per-tool timeouts
 * and caps, the approve list checked, how the model is told of each tool,
 * the request prefix and the list named in errors, all in pool. strict
 * (the configuration): a name there that is none of its tools is an
 * error unless a provider may bring it; else (an engine's view of the
 * agent) it is skipped. */
rg_int_t rg_agent_tools_build(rg_cycle_t *cycle, rg_pool_t *pool,
    rg_agent_conf_t *agent, rg_uint_t strict);

#endif /* RG_AGENT_CONF_H */
