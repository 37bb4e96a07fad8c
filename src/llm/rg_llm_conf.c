/* rg_llm_conf.c: the llm part's configuration: `llm NAME { … }` blocks
 * (their directives, defaults, the URL and the authorization header
 * made from the key's environment variable, the fallback resolved) and
 * `response_memory`, the budget of the responses being read. The part's
 * runtime, one upstream per block, is rg_llm_client.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_llm_conf.h>
#include <rg_llm.h>
#include <rg_secret.h>
#include <rg_store_conf.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <math.h>
#include <strings.h>


static char *rg_llm_block(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static void *rg_llm_create_conf(rg_cycle_t *cycle);
static char *rg_llm_init_conf(rg_cycle_t *cycle, void *conf);


static char *rg_llm_set_limit(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static rg_int_t rg_llm_init_format(rg_cycle_t *cycle, rg_llm_conf_t *llm);
static char *rg_llm_set_format(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static char *rg_llm_set_thinking(rg_conf_t *cf, rg_command_t *cmd,
    void *conf);
static char *rg_llm_set_price(rg_conf_t *cf, rg_command_t *cmd, void *conf);
static char *rg_llm_set_header(rg_conf_t *cf, rg_command_t *cmd, void *conf);

static rg_conf_num_bounds_t  rg_llm_output_bounds = { 1, 10000000 };

static rg_conf_enum_t  rg_llm_effort_enum[] = {
    { rg_string("none"), 1 },
    { rg_string("minimal"), 2 },
    { rg_string("low"), 3 },
    { rg_string("medium"), 4 },
    { rg_string("high"), 5 },
    { rg_null_string, 0 }
};


static rg_conf_num_bounds_t  rg_llm_retries_bounds = { 0, 100 };
static rg_conf_num_bounds_t  rg_llm_temp_bounds = { 0, 2 };
/* "requests_per_minute 600 shared;": the bounds, and the bit of shared */
typedef struct {
    rg_conf_num_bounds_t  bounds;
    rg_uint_t             shared;
} rg_llm_limit_t;

static rg_llm_limit_t  rg_llm_conns_limit = { { 1, 1000000 },
                                              RG_LLM_SHARED_CONNS };
static rg_llm_limit_t  rg_llm_rpm_limit = { { 1, 100000000 },
                                            RG_LLM_SHARED_RPM };
static rg_llm_limit_t  rg_llm_tpm_limit = { { 1, 100000000 },
                                            RG_LLM_SHARED_TPM };

static rg_conf_enum_t  rg_llm_fallback_enum[] = {
    { rg_string("local"), RG_LLM_FALLBACK_LOCAL },
    { rg_string("wait"), RG_LLM_FALLBACK_WAIT },
    { rg_null_string, 0 }
};

/* a stream that stops sending must end: idle_timeout is never off */
static rg_conf_num_bounds_t  rg_llm_idle_bounds = { 1, 0 };


/* the reference of the directives below (reagent directives) */
static rg_conf_doc_t  rg_llm_docs[] = {

    { "llm", "llm NAME { … }", "—",
      "an upstream model: where it is, its wire format, key, limits and "
      "retries", NULL },

    { "response_memory", "response_memory SIZE;", "256m",
      "the bytes of all model responses read at once in a process (1m or "
      "more); past it the attempt holding most is stopped and retried",
      NULL },

    { "base_url", "base_url URL;", "—",
      "where the API is, http:// or https:// (required); the format's "
      "path, such as /chat/completions, is added", NULL },

    { "api_key_env", "api_key_env VAR;", "—",
      "the environment variable holding the API key, which is never "
      "logged; none: no key is sent", NULL },

    { "model", "model NAME;", "—",
      "the model asked for (required)", NULL },

    { "timeout", "timeout TIME;", "120s",
      "a whole request, from connecting to the last byte", NULL },

    { "connect_timeout", "connect_timeout TIME;", "10s",
      "until connected, TLS included", NULL },

    { "idle_timeout", "idle_timeout TIME;", "60s",
      "no byte for this long once the answer started (a stream: once "
      "connected) ends the attempt; never 0", NULL },

    { "max_connections", "max_connections N [shared];", "1024",
      "requests in flight, more wait in a queue; shared: across every "
      "process on store redis", NULL },

    { "max_retries", "max_retries N;", "4",
      "retries of a 429, a 5xx, a timeout or a connection error (0 to 100)",
      NULL },

    { "retry_base", "retry_base TIME;", "500ms",
      "the first wait before a retry, doubling from there, with jitter",
      NULL },

    { "retry_max", "retry_max TIME;", "30s",
      "the longest wait before a retry (a Retry-After wins)", NULL },

    { "temperature", "temperature N;", "—",
      "sent with every request, 0 to 2; none: not sent", NULL },

    { "buffer_size", "buffer_size SIZE;", "4k",
      "curl's receive buffer per request (1k to 512k)", NULL },

    { "fallback", "fallback NAME;", "—",
      "the llm tried once this one's retries ran out", NULL },

    { "requests_per_minute", "requests_per_minute N [shared];", "—",
      "requests started per minute, more wait; shared: across every "
      "process on store redis; none: no limit", NULL },

    { "tokens_per_minute", "tokens_per_minute N [shared];", "—",
      "tokens per minute, counted from usage, more requests wait; shared: "
      "across every process on store redis; none: no limit", NULL },

    { "shared_limits_fallback", "shared_limits_fallback local|wait;",
      "local", "while Redis is away, shared limits are kept by each process "
      "alone (local) or the requests wait for it (wait)", NULL },

    { "retry_budget", "retry_budget TIME;", "120s",
      "the time one call may spend retrying, in all", NULL },

    { "stream", "stream on|off;", "off",
      "asks for the answer as Server-Sent Events", NULL },

    { "gzip", "gzip on|off;", "on; off on loopback",
      "asks for compressed answers", NULL },

    { "format", "format chat|anthropic|responses;", "chat",
      "the wire format: OpenAI Chat Completions (and compatible servers), "
      "Anthropic Messages, or OpenAI Responses", NULL },

    { "max_output_tokens", "max_output_tokens N;", "— (anthropic: 8192)",
      "the most tokens an answer may have, thinking included; none: not "
      "sent", NULL },

    { "thinking", "thinking off|N;", "off",
      "anthropic: a budget of N tokens (1024 or more) for extended "
      "thinking", NULL },

    { "reasoning_effort", "reasoning_effort none|minimal|low|medium|high;",
      "—", "chat and responses: how hard the model reasons; responses also "
      "asks for the reasoning items' encrypted_content", NULL },

    { "prompt_cache", "prompt_cache on|off;", "on",
      "anthropic: cache_control breakpoints on the system prompt, the tools "
      "and the conversation so far", NULL },

    { "price", "price input=N output=N [cached=N] [cache_write=N];", "—",
      "dollars per million tokens (cached and cache_write: input's when "
      "not given); results, transcripts and metrics then say the cost",
      NULL },

    { "header", "header NAME VALUE;", "—",
      "an extra request header, as many as needed (not the key's: "
      "api_key_env)", NULL },

    rg_null_doc
};


static rg_command_t  rg_llm_commands[] = {

    { rg_string("llm"), RG_MAIN_CONF|RG_CONF_BLOCK|RG_CONF_TAKE1,
      rg_llm_block, 0, NULL },

    { rg_string("response_memory"), RG_MAIN_CONF|RG_CONF_TAKE1,
      rg_conf_set_size_slot, offsetof(rg_llm_main_conf_t, response_memory),
      NULL },

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
      &rg_llm_idle_bounds },

    { rg_string("max_connections"), RG_LLM_CONF|RG_CONF_TAKE12,
      rg_llm_set_limit, offsetof(rg_llm_conf_t, max_connections),
      &rg_llm_conns_limit },

    { rg_string("max_retries"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_llm_conf_t, max_retries),
      &rg_llm_retries_bounds },

    { rg_string("retry_base"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_llm_conf_t, retry_base), NULL },

    { rg_string("retry_max"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_llm_conf_t, retry_max), NULL },

    { rg_string("temperature"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_double_slot, offsetof(rg_llm_conf_t, temperature),
      &rg_llm_temp_bounds },

    { rg_string("buffer_size"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_size_slot, offsetof(rg_llm_conf_t, buffer_size), NULL },

    { rg_string("fallback"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_llm_conf_t, fallback_name), NULL },

    { rg_string("requests_per_minute"), RG_LLM_CONF|RG_CONF_TAKE12,
      rg_llm_set_limit, offsetof(rg_llm_conf_t, requests_per_minute),
      &rg_llm_rpm_limit },

    { rg_string("tokens_per_minute"), RG_LLM_CONF|RG_CONF_TAKE12,
      rg_llm_set_limit, offsetof(rg_llm_conf_t, tokens_per_minute),
      &rg_llm_tpm_limit },

    { rg_string("shared_limits_fallback"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_enum_slot, offsetof(rg_llm_conf_t, shared_fallback),
      rg_llm_fallback_enum },

    { rg_string("retry_budget"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_msec_slot, offsetof(rg_llm_conf_t, retry_budget), NULL },

    { rg_string("stream"), RG_LLM_CONF|RG_CONF_FLAG,
      rg_conf_set_flag_slot, offsetof(rg_llm_conf_t, stream), NULL },

    { rg_string("gzip"), RG_LLM_CONF|RG_CONF_FLAG,
      rg_conf_set_flag_slot, offsetof(rg_llm_conf_t, gzip), NULL },

    { rg_string("format"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_llm_set_format, 0, NULL },

    { rg_string("max_output_tokens"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_num_slot, offsetof(rg_llm_conf_t, max_output_tokens),
      &rg_llm_output_bounds },

    { rg_string("thinking"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_llm_set_thinking, 0, NULL },

    { rg_string("reasoning_effort"), RG_LLM_CONF|RG_CONF_TAKE1,
      rg_conf_set_str_slot, offsetof(rg_llm_conf_t, reasoning_effort),
      NULL },

    { rg_string("prompt_cache"), RG_LLM_CONF|RG_CONF_FLAG,
      rg_conf_set_flag_slot, offsetof(rg_llm_conf_t, prompt_cache), NULL },

    { rg_string("price"), RG_LLM_CONF|RG_CONF_1MORE,
      rg_llm_set_price, 0, NULL },

    { rg_string("header"), RG_LLM_CONF|RG_CONF_TAKE2,
      rg_llm_set_header, 0, NULL },

      rg_null_command_doc(rg_llm_docs)
};


rg_part_t  rg_llm_part = {
    .name = "llm",
    .commands = rg_llm_commands,
    .conf_ctx = RG_LLM_CONF,
    .conf_block = "llm NAME { }",
    .create_conf = rg_llm_create_conf,
    .init_conf = rg_llm_init_conf,
    .init_worker = rg_llm_init_worker,
    .exit_worker = rg_llm_exit_worker
};


static char *
rg_llm_block(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_llm_conf_t       *llm;
    rg_llm_main_conf_t  *lmcf;

    lmcf = conf;

    if (rg_llm_find(cf->cycle, cf->args[1].data, cf->args[1].len)) {
        return "is duplicate: an llm of that name exists";
    }

    llm = rg_conf_add_named(cf, &lmcf->llms, sizeof(rg_llm_conf_t),
                            rg_llm_commands, RG_LLM_CONF);
    if (llm == NULL) {
        return RG_CONF_ERROR;
    }

    llm->index = lmcf->llms.nelts - 1;
    /* what rg_llm_set_limit, _thinking and _price set */
    llm->max_connections = RG_CONF_UNSET;
    llm->requests_per_minute = RG_CONF_UNSET;
    llm->tokens_per_minute = RG_CONF_UNSET;
    llm->thinking = RG_CONF_UNSET;
    llm->price[0] = NAN;
    llm->price[1] = NAN;
    llm->price[2] = NAN;
    llm->price[3] = NAN;
    llm->file = rg_conf_file_name(cf);
    llm->line = rg_conf_line(cf);

    return rg_conf_block(cf, RG_LLM_CONF, llm);
}


rg_llm_conf_t *
rg_llm_find(rg_cycle_t *cycle, const char *name, size_t len)
{
    return rg_conf_find_named(&rg_llm_main_conf(cycle)->llms, name, len);
}


/* a server on this machine: loopback addresses and localhost, where
 * compressing answers costs CPU on both sides and saves nothing */
static rg_uint_t
rg_llm_local(const char *url)
{
    char            *host;
    size_t           n;
    CURLU           *u;
    rg_uint_t        local;
    struct in_addr   a4;
    struct in6_addr  a6;

    u = curl_url();
    if (u == NULL) {
        return 0;
    }

    local = 0;

    if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK
        && curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
    {
        n = strlen(host);

        /* [::1] comes with its brackets */
        if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
            host[n - 1] = '\0';
            local = inet_pton(AF_INET6, host + 1, &a6) == 1
                    && IN6_IS_ADDR_LOOPBACK(&a6);

        } else if (inet_pton(AF_INET, host, &a4) == 1) {
            local = (ntohl(a4.s_addr) >> 24) == 127;

        } else {
            local = strcasecmp(host, "localhost") == 0
                    || (n > 10
                        && strcasecmp(host + n - 10, ".localhost") == 0);
        }

        curl_free(host);
    }

    curl_url_cleanup(u);

    return local;
}


/* the header holds the key: zeroed before the pool frees it */
static void
rg_llm_wipe_auth(void *data)
{
    rg_llm_conf_t  *llm;

    llm = data;
    rg_secret_wipe(llm->auth, strlen(llm->auth));
}


static rg_int_t
rg_llm_init(rg_cycle_t *cycle, rg_llm_conf_t *llm)
{
    const char  *key, *path;
    size_t       n;
    rg_str_t    *u;

    u = &llm->base_url;

    if (u->data == NULL) {
        rg_cycle_error(cycle, llm->file, llm->line,
                       "llm \"%.*s\" has no \"base_url\"",
                       (int) llm->name.len, llm->name.data);
        return RG_ERROR;
    }

    if (rg_str_casecmp_prefix(u->data, u->len, "http://") != 0
        && rg_str_casecmp_prefix(u->data, u->len, "https://") != 0)
    {
        rg_conf_error(cycle, llm, "base_url", NULL,
                      llm->file, llm->line,
                      "llm \"%.*s\": \"base_url\" must start with http:// "
                      "or https://", (int) llm->name.len, llm->name.data);
        return RG_ERROR;
    }

    if (llm->model.data == NULL) {
        rg_cycle_error(cycle, llm->file, llm->line,
                       "llm \"%.*s\" has no \"model\"",
                       (int) llm->name.len, llm->name.data);
        return RG_ERROR;
    }

    n = u->len;
    while (n > 0 && u->data[n - 1] == '/') {
        n--;
    }

    if (llm->codec == NULL) {
        llm->codec = &rg_llm_codecs[RG_LLM_CHAT];
        llm->format = RG_LLM_CHAT;
    }

    path = llm->codec->path;

    llm->url = rg_palloc(cycle->pool, n + strlen(path) + 1);
    if (llm->url == NULL) {
        return RG_ERROR;
    }

    memcpy(llm->url, u->data, n);
    memcpy(llm->url + n, path, strlen(path) + 1);

    /* a client command (reagent queue…) calls no model: the key is neither
     * read nor needed */
    if (llm->api_key_env.data && !cycle->client) {
        /* taken out of the environment, where a program exec runs could
         * read it in /proc/PID/environ; kept for a configuration read
         * later */
        key = rg_secret_env(llm->api_key_env.data);

        if (key == NULL || *key == '\0') {
            rg_conf_error(cycle, llm, "api_key_env", NULL,
                          llm->file, llm->line,
                          "llm \"%.*s\": the environment variable \"%s\" "
                          "named by \"api_key_env\" is not set",
                          (int) llm->name.len, llm->name.data,
                          llm->api_key_env.data);
            return RG_ERROR;
        }

        /* a line break in a key would smuggle in headers */
        for (n = 0; key[n]; n++) {
            if ((unsigned char) key[n] < 0x20 || key[n] == 0x7f) {
                rg_conf_error(cycle, llm, "api_key_env", NULL,
                              llm->file, llm->line,
                              "llm \"%.*s\": the environment variable \"%s\" "
                              "named by \"api_key_env\" holds a control "
                              "character", (int) llm->name.len,
                              llm->name.data, llm->api_key_env.data);
                return RG_ERROR;
            }
        }

        n = strlen(llm->codec->key_header) + strlen(key);
        llm->auth = rg_palloc(cycle->pool, n + 1);
        if (llm->auth == NULL) {
            return RG_ERROR;
        }

        snprintf(llm->auth, n + 1, "%s%s", llm->codec->key_header, key);

        if (rg_pool_cleanup_add(cycle->pool, rg_llm_wipe_auth, llm)
            == NULL)
        {
            rg_secret_wipe(llm->auth, n);
            return RG_ERROR;
        }
    }

    rg_conf_init_msec_value(llm->timeout, 120000);
    rg_conf_init_msec_value(llm->connect_timeout, 10000);
    rg_conf_init_msec_value(llm->idle_timeout, 60000);
    rg_conf_init_value(llm->max_connections, 1024);
    rg_conf_init_value(llm->max_retries, 4);
    rg_conf_init_msec_value(llm->retry_base, 500);
    rg_conf_init_msec_value(llm->retry_max, 30000);
    llm->temperature_set = !isnan(llm->temperature);

    rg_conf_init_double_value(llm->temperature, 0);
    rg_conf_init_size_value(llm->buffer_size, 4096);

    rg_conf_init_value(llm->requests_per_minute, 0);
    rg_conf_init_value(llm->tokens_per_minute, 0);
    rg_conf_init_msec_value(llm->retry_budget, 120000);
    rg_conf_init_value(llm->stream, 0);
    rg_conf_init_value(llm->gzip, !rg_llm_local(llm->url));
    rg_conf_init_uint_value(llm->shared_fallback, RG_LLM_FALLBACK_LOCAL);

    /* waiting for a Redis that is not configured would never end */
    if (llm->shared && llm->shared_fallback == RG_LLM_FALLBACK_WAIT
        && rg_store_conf(cycle)->type != RG_STORE_REDIS)
    {
        rg_conf_error(cycle, llm, "shared_limits_fallback", NULL,
                      llm->file, llm->line,
                      "llm \"%.*s\": \"shared_limits_fallback wait\" needs "
                      "\"store redis { }\": without it nothing is shared "
                      "and the requests would wait for ever",
                      (int) llm->name.len, llm->name.data);
        return RG_ERROR;
    }

    if (llm->fallback_name.data) {
        llm->fallback = rg_llm_find(cycle, llm->fallback_name.data,
                                     llm->fallback_name.len);
        if (llm->fallback == NULL || llm->fallback == llm) {
            rg_conf_error(cycle, llm, "fallback", NULL,
                          llm->file, llm->line,
                          "llm \"%.*s\": \"fallback\" names %s \"%.*s\"",
                          (int) llm->name.len, llm->name.data,
                          llm->fallback ? "itself:" : "an unknown llm",
                          (int) llm->fallback_name.len,
                          llm->fallback_name.data);
            return RG_ERROR;
        }
    }

    if (rg_llm_init_format(cycle, llm) != RG_OK) {
        return RG_ERROR;
    }

    if (llm->buffer_size < 1024 || llm->buffer_size > 512 * 1024) {
        rg_conf_error(cycle, llm, "buffer_size", NULL,
                      llm->file, llm->line,
                      "llm \"%.*s\": \"buffer_size\" must be from 1k to 512k",
                      (int) llm->name.len, llm->name.data);
        return RG_ERROR;
    }

    return RG_OK;
}


static void *
rg_llm_create_conf(rg_cycle_t *cycle)
{
    return rg_conf_create_named(cycle->pool, sizeof(rg_llm_main_conf_t),
                                rg_llm_commands,
                                offsetof(rg_llm_main_conf_t, llms));
}


static char *
rg_llm_init_conf(rg_cycle_t *cycle, void *conf)
{
    rg_uint_t            i;
    rg_llm_conf_t      **llms;
    rg_llm_main_conf_t  *lmcf;

    lmcf = conf;

    if (lmcf->response_memory == RG_CONF_UNSET_SIZE) {
        lmcf->response_memory = RG_LLM_MEMORY_DEFAULT;

    } else if (lmcf->response_memory < 1024 * 1024) {
        rg_conf_error(cycle, lmcf, "response_memory", NULL,
                      cycle->conf_file, 0, "\"response_memory\" "
                      "must be 1m or more");
        return RG_CONF_ERROR;
    }

    llms = lmcf->llms.elts;

    for (i = 0; i < lmcf->llms.nelts; i++) {
        if (rg_llm_init(cycle, llms[i]) != RG_OK) {
            return RG_CONF_ERROR;
        }
    }

    return RG_CONF_OK;
}


/* "requests_per_minute 600;" or "requests_per_minute 600 shared;" */
static char *
rg_llm_set_limit(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    char            *rv;
    rg_command_t     c;
    rg_llm_conf_t   *llm;
    rg_llm_limit_t  *l;

    llm = conf;
    l = cmd->post;

    if (cf->nargs == 3) {
        if (cf->args[2].len != 6 || memcmp(cf->args[2].data, "shared", 6)) {
            return "takes a number and, optionally, \"shared\" (held "
                   "across every process on store redis)";
        }
        llm->shared |= l->shared;
    }

    c = *cmd;
    c.post = &l->bounds;
    rv = rg_conf_set_num_slot(cf, &c, conf);

    return rv;
}


/* "format chat|anthropic|responses;" */
static char *
rg_llm_set_format(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    static char     msg[160];
    rg_llm_conf_t  *llm;

    llm = conf;

    if (llm->codec != NULL) {
        return "is duplicate";
    }

    llm->codec = rg_llm_codec_find(cf->args[1].data, cf->args[1].len);

    if (llm->codec == NULL) {
        snprintf(msg, sizeof(msg), "has an unknown format \"%.*s\": the "
                 "formats are %s", (int) rg_min(cf->args[1].len, 40),
                 cf->args[1].data, rg_llm_codec_names());
        return msg;
    }

    llm->format = (rg_uint_t) (llm->codec - rg_llm_codecs);

    return RG_CONF_OK;
}


/* "thinking off;" or "thinking 4096;" (Anthropic's budget_tokens) */
static char *
rg_llm_set_thinking(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    rg_command_t    c;
    rg_llm_conf_t  *llm;

    static rg_conf_num_bounds_t  bounds = { 1024, 10000000 };

    llm = conf;

    if (llm->thinking != RG_CONF_UNSET) {
        return "is duplicate";
    }

    if (rg_str_eq(&cf->args[1], "off")) {
        llm->thinking = 0;
        return RG_CONF_OK;
    }

    c = *cmd;
    c.offset = offsetof(rg_llm_conf_t, thinking);
    c.post = &bounds;

    if (rg_conf_set_num_slot(cf, &c, conf) != RG_CONF_OK) {
        return "takes \"off\" or a budget of tokens for thinking, 1024 or "
               "more";
    }

    return RG_CONF_OK;
}


/* "price input=2.5 cached=1.25 cache_write=3.75 output=10;": dollars per
 * million tokens; cached and cache_write are input's when not given */
static char *
rg_llm_set_price(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    char           *end, *eq;
    double          v;
    rg_uint_t       i, k;
    rg_llm_conf_t  *llm;

    static const char  *names[RG_LLM_PRICES] = {
        "input", "cached", "cache_write", "output"
    };

    llm = conf;

    if (llm->priced) {
        return "is duplicate";
    }

    for (i = 1; i < cf->nargs; i++) {
        eq = memchr(cf->args[i].data, '=', cf->args[i].len);

        for (k = 0; eq && k < RG_LLM_PRICES; k++) {
            if ((size_t) (eq - cf->args[i].data) == strlen(names[k])
                && memcmp(cf->args[i].data, names[k], strlen(names[k])) == 0)
            {
                break;
            }
        }

        if (eq == NULL || k == RG_LLM_PRICES) {
            return "takes input=N output=N and, optionally, cached=N and "
                   "cache_write=N: dollars per million tokens";
        }

        errno = 0;
        v = strtod(eq + 1, &end);

        if (errno || end == eq + 1
            || end != cf->args[i].data + cf->args[i].len || !isfinite(v)
            || v < 0 || v > 1000000)
        {
            return "takes prices in dollars per million tokens, such as "
                   "input=2.5";
        }

        if (!isnan(llm->price[k])) {
            return "names a price twice";
        }

        llm->price[k] = v;
    }

    if (isnan(llm->price[RG_LLM_PRICE_INPUT])
        || isnan(llm->price[RG_LLM_PRICE_OUTPUT]))
    {
        return "needs input=N and output=N (dollars per million tokens)";
    }

    rg_conf_init_double_value(llm->price[RG_LLM_PRICE_CACHED],
                              llm->price[RG_LLM_PRICE_INPUT]);

    rg_conf_init_double_value(llm->price[RG_LLM_PRICE_WRITE],
                              llm->price[RG_LLM_PRICE_INPUT]);

    llm->priced = 1;

    return RG_CONF_OK;
}


/* "header anthropic-beta interleaved-thinking-2025-05-14;" */
static char *
rg_llm_set_header(rg_conf_t *cf, rg_command_t *cmd, void *conf)
{
    char           *h, **hp;
    size_t          i;
    rg_str_t       *name, *value;
    rg_llm_conf_t  *llm;

    llm = conf;
    name = &cf->args[1];
    value = &cf->args[2];

    for (i = 0; i < name->len; i++) {
        if (name->data[i] <= ' ' || name->data[i] >= 0x7f
            || name->data[i] == ':')
        {
            return "takes a header name of letters, digits and '-', then "
                   "its value";
        }
    }

    for (i = 0; i < value->len; i++) {
        if ((unsigned char) value->data[i] < 0x20 || value->data[i] == 0x7f)
        {
            return "has a control character in its value";
        }
    }

    if (rg_str_casecmp_prefix(name->data, name->len, "authorization") == 0
        || rg_str_casecmp_prefix(name->data, name->len, "x-api-key") == 0)
    {
        return "cannot set the key's header: name the key's variable with "
               "\"api_key_env\"";
    }

    if (llm->headers == NULL) {
        llm->headers = rg_array_create(cf->pool, 2, sizeof(char *));
        if (llm->headers == NULL) {
            return RG_CONF_ERROR;
        }
    }

    h = rg_palloc(cf->pool, name->len + value->len + 3);
    hp = rg_array_push(llm->headers);
    if (h == NULL || hp == NULL) {
        return RG_CONF_ERROR;
    }

    snprintf(h, name->len + value->len + 3, "%.*s: %.*s", (int) name->len,
             name->data, (int) value->len, value->data);
    *hp = h;

    return RG_CONF_OK;
}


/* what only some formats have, checked against the format */
static rg_int_t
rg_llm_init_format(rg_cycle_t *cycle, rg_llm_conf_t *llm)
{
    const char  *f;

    f = llm->codec->name.data;

    if (llm->thinking > 0 && llm->format != RG_LLM_ANTHROPIC) {
        rg_conf_error(cycle, llm, "thinking", NULL,
                      llm->file, llm->line, "llm \"%.*s\": "
                      "\"thinking\" is a budget of format anthropic; format "
                      "%s takes \"reasoning_effort\"",
                      (int) llm->name.len, llm->name.data, f);
        return RG_ERROR;
    }

    if (llm->reasoning_effort.len && llm->format == RG_LLM_ANTHROPIC) {
        rg_conf_error(cycle, llm, "reasoning_effort", NULL,
                      llm->file, llm->line, "llm \"%.*s\": "
                      "\"reasoning_effort\" is not of format anthropic, "
                      "which takes \"thinking BUDGET\"",
                      (int) llm->name.len, llm->name.data);
        return RG_ERROR;
    }

    if (llm->reasoning_effort.len) {
        rg_conf_enum_t  *e;

        for (e = rg_llm_effort_enum; e->name.len; e++) {
            if (e->name.len == llm->reasoning_effort.len
                && memcmp(e->name.data, llm->reasoning_effort.data,
                          e->name.len) == 0)
            {
                break;
            }
        }

        if (e->name.len == 0) {
            rg_conf_error(cycle, llm, "reasoning_effort", NULL,
                          llm->file, llm->line, "llm \"%.*s\": "
                          "\"reasoning_effort\" is none, minimal, low, "
                          "medium or high, not \"%.*s\"",
                          (int) llm->name.len, llm->name.data,
                          (int) rg_min(llm->reasoning_effort.len, 40),
                          llm->reasoning_effort.data);
            return RG_ERROR;
        }
    }

    rg_conf_init_value(llm->thinking, 0);

    rg_conf_init_value(llm->prompt_cache, 1);

    if (llm->max_output_tokens == RG_CONF_UNSET) {
        /* Anthropic asks for one; room for the thinking budget too */
        llm->max_output_tokens = llm->format == RG_LLM_ANTHROPIC
                                 ? 8192 + llm->thinking : 0;

    } else if (llm->thinking && llm->max_output_tokens <= llm->thinking) {
        rg_conf_error(cycle, llm, "max_output_tokens", NULL,
                      llm->file, llm->line, "llm \"%.*s\": "
                      "\"max_output_tokens\" %ld must be more than the "
                      "\"thinking\" budget %ld, which it includes",
                      (int) llm->name.len, llm->name.data,
                      (long) llm->max_output_tokens, (long) llm->thinking);
        return RG_ERROR;
    }

    return RG_OK;
}
