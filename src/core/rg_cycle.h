/* rg_cycle.h: everything one configuration builds: upstreams (llm blocks),
 * agents, loaded tool modules and the log. A reload builds a new cycle
 * and keeps the old one when that fails. Runtime state that waits on the
 * reactor lives in the engine (src/agent/rg_engine.h), not here. */

#ifndef RG_CYCLE_H
#define RG_CYCLE_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_module.h>
#include <jansson.h>
#include <stdatomic.h>

typedef struct rg_module_s      rg_module_t;
typedef struct rg_tool_entry_s  rg_tool_entry_t;
typedef struct rg_llm_conf_s    rg_llm_conf_t;
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


struct rg_llm_conf_s {
    rg_str_t            name;
    rg_str_t            base_url;
    rg_str_t            api_key_env;
    rg_str_t            model;
    rg_msec_t           timeout;          /* whole request */
    rg_msec_t           connect_timeout;
    rg_msec_t           idle_timeout;     /* no byte for this long: give up */
    rg_int_t            max_connections;  /* requests in flight */
    rg_int_t            max_retries;
    rg_msec_t           retry_base;
    rg_msec_t           retry_max;
    double              temperature;
    size_t              buffer_size;
    rg_str_t            fallback_name;
    rg_llm_conf_t      *fallback;
    rg_int_t            requests_per_minute;  /* 0: no limit */
    rg_int_t            tokens_per_minute;
    rg_msec_t           retry_budget;     /* total time spent retrying */
    rg_int_t            stream;           /* on: Server-Sent Events */

    char               *url;              /* base_url/chat/completions */
    char               *auth;             /* the header; a secret */
    const char         *file;             /* where it was declared */
    rg_uint_t           line;
    void               *upstream;         /* the engine's rg_llm_upstream_t */
};


struct rg_tool_entry_s {
    const rg_tool_t    *tool;
    json_t             *schema;           /* its parameters */
    rg_module_t        *module;
};


/* What a turn may call, and how: an agent's tools as the tools layer
 * sees them, built from its tools, tool_timeout, approve and agents. */
typedef struct {
    rg_str_t            owner;            /* the agent's name, for messages */
    rg_tool_entry_t   **tools;
    rg_uint_t           ntools;
    char               *tool_list;        /* "calc, time_now" for errors */
    rg_msec_t           timeout;          /* tool_timeout */
    rg_msec_t          *timeouts;         /* per tool, 0: the default */
    rg_array_t         *approve;          /* rg_str_t: dangerous, allowed */
    rg_array_t         *agents;           /* rg_str_t: run_agent may call */
} rg_toolset_t;


struct rg_agent_conf_s {
    rg_str_t            name;
    rg_str_t            llm_name;
    rg_str_t            system_prompt;
    rg_array_t         *tool_names;       /* rg_str_t */
    rg_int_t            max_rounds;
    rg_array_t         *tool_timeout_names;  /* rg_agent_tool_timeout_t */
    double              temperature;      /* NAN: the llm's */

    /* guards */
    rg_int_t            max_tokens;       /* 0: no budget */
    rg_msec_t           deadline;         /* 0: none */
    rg_int_t            tool_max_calls;   /* per tool, 0: no cap */
    rg_array_t         *tool_cap_names;   /* rg_agent_tool_cap_t */
    rg_int_t           *tool_caps;        /* per tool index */
    rg_int_t            max_tool_calls;   /* per answer, the rest refused */
    rg_int_t            repeat_window;
    rg_int_t            repeat_limit;
    rg_uint_t           dedupe;           /* RG_DEDUPE_* */
    rg_msec_t           dedupe_ttl;

    /* context */
    rg_int_t            context_limit;    /* tokens, 0: not managed */
    double              context_threshold;
    rg_int_t            keep_rounds;
    rg_int_t            context_summarize;

    rg_llm_conf_t      *llm;
    rg_toolset_t        toolset;
    rg_str_t           *tool_texts;       /* each tool, as the model is told */

    char               *prefix;           /* request body up to messages */
    size_t              prefix_len;
    char               *system_msg;       /* serialized system message */
    size_t              system_msg_len;
    const char         *file;
    rg_uint_t           line;
};


struct rg_module_s {
    char               *path;
    void               *handle;
    rg_tool_module_t   *mod;
    void               *conf;
    rg_tool_host_t      host;
    void               *engine;           /* set when an engine starts */
    void               *isolate;          /* rg_isolate_t *, when isolated */
    rg_log_t           *log;              /* the cycle's */
    const char         *file;             /* its load_module, for errors */
    rg_uint_t           line;
    /* calls posted to a thread pool and not yet done with the module's
     * code: while any is, the cycle is not destroyed (rg_cycle_destroy) */
    atomic_uint         busy;
    unsigned            isolated:1;
    unsigned            initialized:1;
};


struct rg_cycle_s {
    rg_pool_t          *pool;
    rg_log_t           *log;
    rg_log_t            new_log;
    char               *conf_file;

    rg_array_t          llms;             /* rg_llm_conf_t * */
    rg_array_t          agents;           /* rg_agent_conf_t * */
    rg_array_t          modules;          /* rg_module_t * */
    rg_array_t          tools;            /* rg_tool_entry_t */

    rg_str_t            default_agent;
    rg_uint_t           default_agent_line;
    unsigned            log_opened:1;     /* new_log.fd is ours to close */
    rg_int_t            pool_threads;
    rg_int_t            pool_max_queue;
    rg_int_t            store_max_keys;   /* the memory store's bounds */
    size_t              store_max_bytes;
    rg_int_t            max_agent_depth;
    rg_int_t            isolated_helpers;
    rg_int_t            concurrency;
    rg_int_t            worker_processes;
    size_t              tool_result_limit;
    size_t              response_memory;  /* all responses being read */

    rg_cycle_t         *next_kept;        /* destroyed while busy: kept */
    char                errmsg[512];
};


/* Reads conf_file and builds a cycle; NULL with errmsg set on failure. */
rg_cycle_t *rg_cycle_create(const char *conf_file, const char *conf_text,
    rg_log_t *log, char *errmsg, size_t errlen);
/* Frees the cycle, unless a pool thread still runs the code of one of
 * its modules (a blocking tool that outlived its engine): then the cycle,
 * its modules loaded and configured, is kept until that thread is done
 * and freed by a later call, rg_cycle_destroy(NULL) included. */
void rg_cycle_destroy(rg_cycle_t *cycle);
rg_uint_t rg_cycle_kept(void);
rg_agent_conf_t *rg_cycle_agent(rg_cycle_t *cycle, const char *name,
    size_t len);
rg_llm_conf_t *rg_cycle_llm(rg_cycle_t *cycle, const char *name, size_t len);

#endif /* RG_CYCLE_H */
