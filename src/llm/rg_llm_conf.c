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
#include <rg_llm_openai.h>
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

      rg_null_command
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
    rg_llm_conf_t       *llm, **lp;
    rg_llm_main_conf_t  *lmcf;

    lmcf = conf;

    if (rg_llm_find(cf->cycle, cf->args[1].data, cf->args[1].len)) {
        return "is duplicate: an llm of that name exists";
    }

    llm = rg_pcalloc(cf->pool, sizeof(rg_llm_conf_t));
    lp = rg_array_push(&lmcf->llms);
    if (llm == NULL || lp == NULL) {
        return RG_CONF_ERROR;
    }

    *lp = llm;

    llm->name = cf->args[1];
    llm->index = lmcf->llms.nelts - 1;
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
    llm->gzip = RG_CONF_UNSET;
    llm->shared_fallback = RG_CONF_UNSET_UINT;
    llm->file = rg_conf_file_name(cf);
    llm->line = rg_conf_line(cf);

    return rg_conf_block(cf, RG_LLM_CONF, llm);
}


rg_llm_conf_t *
rg_llm_find(rg_cycle_t *cycle, const char *name, size_t len)
{
    rg_uint_t            i;
    rg_llm_conf_t      **l;
    rg_llm_main_conf_t  *lmcf;

    lmcf = rg_llm_main_conf(cycle);
    l = lmcf->llms.elts;

    for (i = 0; i < lmcf->llms.nelts; i++) {
        if (l[i]->name.len == len && memcmp(l[i]->name.data, name, len) == 0)
        {
            return l[i];
        }
    }

    return NULL;
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
    const char  *key;
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
        rg_cycle_error(cycle, llm->file, llm->line,
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
            rg_cycle_error(cycle, llm->file, llm->line,
                           "llm \"%.*s\": the environment variable \"%s\" "
                           "named by \"api_key_env\" is not set",
                           (int) llm->name.len, llm->name.data,
                           llm->api_key_env.data);
            return RG_ERROR;
        }

        /* a line break in a key would smuggle in headers */
        for (n = 0; key[n]; n++) {
            if ((unsigned char) key[n] < 0x20 || key[n] == 0x7f) {
                rg_cycle_error(cycle, llm->file, llm->line,
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

        if (rg_pool_cleanup_add(cycle->pool, rg_llm_wipe_auth, llm)
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
        llm->buffer_size = 4096;
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
    if (llm->gzip == RG_CONF_UNSET) {
        llm->gzip = !rg_llm_local(llm->url);
    }
    if (llm->shared_fallback == RG_CONF_UNSET_UINT) {
        llm->shared_fallback = RG_LLM_FALLBACK_LOCAL;
    }

    /* waiting for a Redis that is not configured would never end */
    if (llm->shared && llm->shared_fallback == RG_LLM_FALLBACK_WAIT
        && rg_store_conf(cycle)->type != RG_STORE_REDIS)
    {
        rg_cycle_error(cycle, llm->file, llm->line,
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
            rg_cycle_error(cycle, llm->file, llm->line,
                           "llm \"%.*s\": \"fallback\" names %s \"%.*s\"",
                           (int) llm->name.len, llm->name.data,
                           llm->fallback ? "itself:" : "an unknown llm",
                           (int) llm->fallback_name.len,
                           llm->fallback_name.data);
            return RG_ERROR;
        }
    }

    if (llm->buffer_size < 1024 || llm->buffer_size > 512 * 1024) {
        rg_cycle_error(cycle, llm->file, llm->line,
                       "llm \"%.*s\": \"buffer_size\" must be from 1k to 512k",
                       (int) llm->name.len, llm->name.data);
        return RG_ERROR;
    }

    return RG_OK;
}


static void *
rg_llm_create_conf(rg_cycle_t *cycle)
{
    rg_llm_main_conf_t  *lmcf;

    lmcf = rg_pcalloc(cycle->pool, sizeof(rg_llm_main_conf_t));
    if (lmcf == NULL
        || rg_array_init(&lmcf->llms, cycle->pool, 4, sizeof(void *))
           != RG_OK)
    {
        return NULL;
    }

    lmcf->response_memory = RG_CONF_UNSET_SIZE;

    return lmcf;
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
        rg_cycle_error(cycle, cycle->conf_file, 0, "\"response_memory\" "
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
