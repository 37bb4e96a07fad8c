/* rg_llm_conf.h: the llm part's configuration (rg_llm_conf.c): one
 * rg_llm_conf_t per `llm NAME { }` block, and the part's main conf. */

#ifndef RG_LLM_CONF_H
#define RG_LLM_CONF_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>

/* directives inside llm NAME { } */
#define RG_LLM_CONF         0x0002

typedef struct rg_llm_conf_s  rg_llm_conf_t;

/* price, dollars per million tokens */
#define RG_LLM_PRICE_INPUT      0
#define RG_LLM_PRICE_CACHED     1      /* input read from a prompt cache */
#define RG_LLM_PRICE_WRITE      2      /* input written to one */
#define RG_LLM_PRICE_OUTPUT     3
#define RG_LLM_PRICES           4

/* limits held across every process on the store (rg_llm_shared.c) */
#define RG_LLM_SHARED_RPM       0x01
#define RG_LLM_SHARED_TPM       0x02
#define RG_LLM_SHARED_CONNS     0x04

/* what shared limits do without the store: hold in each process alone,
 * or wait for it */
#define RG_LLM_FALLBACK_LOCAL   1
#define RG_LLM_FALLBACK_WAIT    2


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
    rg_int_t            gzip;             /* ask for compressed answers */
    rg_uint_t           shared;           /* RG_LLM_SHARED_* */
    rg_uint_t           shared_fallback;  /* RG_LLM_FALLBACK_* */

    /* the wire format and what only some formats have */
    const struct rg_llm_codec_s *codec;   /* format; chat by default */
    rg_uint_t           format;           /* RG_LLM_CHAT, … */
    rg_int_t            max_output_tokens;    /* 0: the format's default */
    rg_int_t            thinking;         /* budget_tokens; 0: off */
    rg_str_t            reasoning_effort; /* "": not sent */
    rg_int_t            prompt_cache;     /* cache_control breakpoints */
    double              price[RG_LLM_PRICES];  /* NAN: none */
    rg_array_t         *headers;          /* char *, "Name: value" */
    unsigned            priced:1;
    unsigned            temperature_set:1;

    char               *url;              /* base_url + the format's path */
    char               *auth;             /* the header; a secret */
    const char         *file;             /* where it was declared */
    rg_uint_t           line;
    rg_uint_t           index;            /* in the main conf's llms */
};


typedef struct {
    rg_array_t          llms;             /* rg_llm_conf_t *, in order */
    size_t              response_memory;  /* all responses being read */
} rg_llm_main_conf_t;


extern rg_part_t  rg_llm_part;

#define rg_llm_main_conf(cycle)                                              \
    ((rg_llm_main_conf_t *) rg_cycle_conf(cycle, &rg_llm_part))

/* the llm block called name[0..len), or NULL */
rg_llm_conf_t *rg_llm_find(rg_cycle_t *cycle, const char *name, size_t len);

/* the part's worker hooks, the upstreams' (rg_llm_upstream.c) */
rg_int_t rg_llm_init_worker(rg_engine_t *e);
void rg_llm_exit_worker(rg_engine_t *e);

#endif /* RG_LLM_CONF_H */
