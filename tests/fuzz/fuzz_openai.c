/* fuzz_openai.c: libFuzzer target for rg_llm_openai_parse(). The first
 * byte picks the HTTP status (200 when even, 400 when odd), the rest is
 * the body. Besides the sanitizers, it checks what the header promises:
 * every string non-NULL and NUL-ended, a message that is JSON exactly
 * when the status is OK, and nothing else than RG_OK (there is memory). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_openai.h>

#include <jansson.h>


#define rg_fuzz_check(cond)                                                  \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);       \
            abort();                                                         \
        }                                                                    \
    } while (0)


/* small, so that inputs reach past the cap */
#define RG_FUZZ_MAX_CALLS  4


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static void
rg_fuzz_str(const rg_str_t *s)
{
    rg_fuzz_check(s->data != NULL);
    rg_fuzz_check(s->data[s->len] == '\0');
}


static void
rg_fuzz_response(rg_llm_response_t *r, int http_status)
{
    json_t        *msg;
    rg_uint_t      i, k;
    json_error_t   err;

    rg_fuzz_check(r->http_status == http_status);
    rg_fuzz_check((size_t) r->status <= RG_LLM_ERR_TOO_LARGE);

    rg_fuzz_str(&r->content);
    rg_fuzz_str(&r->reasoning);
    rg_fuzz_str(&r->refusal);
    rg_fuzz_str(&r->finish_reason);
    rg_fuzz_str(&r->message);
    rg_fuzz_str(&r->error);
    rg_fuzz_str(&r->error_type);
    rg_fuzz_str(&r->error_code);
    rg_fuzz_str(&r->error_param);
    rg_fuzz_check(r->has_content == (r->content.len > 0));

    rg_fuzz_check(r->ncalls == 0 || r->calls != NULL);
    rg_fuzz_check(r->ncalls <= RG_FUZZ_MAX_CALLS + 1);
    rg_fuzz_check(r->calls_over == 0 || r->ncalls == RG_FUZZ_MAX_CALLS + 1);

    for (i = 0; i < r->ncalls; i++) {
        rg_fuzz_str(&r->calls[i].id);
        rg_fuzz_str(&r->calls[i].name);
        rg_fuzz_str(&r->calls[i].arguments);

        /* every id answers one call only */
        for (k = 0; k < i; k++) {
            rg_fuzz_check(rg_str_cmp(&r->calls[k].id, &r->calls[i].id) != 0);
        }
        rg_fuzz_check(r->calls[i].id.len > 0);
        rg_fuzz_check(r->calls[i].arguments.len > 0);
    }

    if (r->status != RG_LLM_OK) {
        rg_fuzz_check(r->message.len == 0);
        rg_fuzz_check(r->error.len > 0);
        return;
    }

    rg_fuzz_check(http_status >= 200 && http_status <= 299);

    msg = json_loadb(r->message.data, r->message.len, JSON_ALLOW_NUL, &err);
    rg_fuzz_check(json_is_object(msg));
    rg_fuzz_check(json_array_size(json_object_get(msg, "tool_calls"))
                  == r->ncalls);
    json_decref(msg);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int                 status;
    rg_pool_t          *pool;
    rg_llm_response_t   r;

    if (size == 0) {
        return 0;
    }

    status = (data[0] & 1) ? 400 : 200;

    pool = rg_pool_create(4096);
    if (pool == NULL) {
        return 0;
    }

    memset(&r, 0, sizeof(r));

    rg_fuzz_check(rg_llm_openai_parse(pool, status, (const char *) data + 1,
                                      size - 1, "f", RG_FUZZ_MAX_CALLS, &r)
                  == RG_OK);
    rg_fuzz_response(&r, status);

    rg_pool_destroy(pool);

    return 0;
}
