/* fuzz_sse.c: libFuzzer target for the stream reader (rg_llm_sse.c).
 * The first byte picks the HTTP status (bits 0-1: 200, 200, 400, 503),
 * the second seeds the sizes of the pieces the rest is fed in (1 to 16
 * bytes, sometimes all that is left). The same body is also fed whole to
 * a second reader: both must come to the same response. Besides the
 * sanitizers it checks what the header promises: every string non-NULL
 * and NUL-ended, a message that is JSON exactly when the status is OK. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_openai.h>
#include <rg_llm_sse.h>

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


static const int  rg_fuzz_statuses[] = { 200, 200, 400, 503 };


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
    }

    if (r->status != RG_LLM_OK) {
        rg_fuzz_check(r->message.len == 0);
        rg_fuzz_check(r->ncalls == 0);
        return;
    }

    msg = json_loadb(r->message.data, r->message.len, JSON_ALLOW_NUL, &err);
    rg_fuzz_check(json_is_object(msg));
    json_decref(msg);
}


static int
rg_fuzz_same_str(const rg_str_t *a, const rg_str_t *b)
{
    return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}


static void
rg_fuzz_same(rg_llm_response_t *a, rg_llm_response_t *b)
{
    rg_uint_t  i;

    rg_fuzz_check(a->status == b->status);
    rg_fuzz_check(rg_fuzz_same_str(&a->content, &b->content));
    rg_fuzz_check(rg_fuzz_same_str(&a->reasoning, &b->reasoning));
    rg_fuzz_check(rg_fuzz_same_str(&a->refusal, &b->refusal));
    rg_fuzz_check(rg_fuzz_same_str(&a->finish_reason, &b->finish_reason));
    rg_fuzz_check(rg_fuzz_same_str(&a->message, &b->message));
    rg_fuzz_check(rg_fuzz_same_str(&a->error, &b->error));
    rg_fuzz_check(rg_fuzz_same_str(&a->error_code, &b->error_code));
    rg_fuzz_check(a->prompt_tokens == b->prompt_tokens);
    rg_fuzz_check(a->completion_tokens == b->completion_tokens);
    rg_fuzz_check(a->total_tokens == b->total_tokens);
    rg_fuzz_check(a->ncalls == b->ncalls);
    rg_fuzz_check(a->calls_over == b->calls_over);

    for (i = 0; i < a->ncalls; i++) {
        rg_fuzz_check(rg_fuzz_same_str(&a->calls[i].id, &b->calls[i].id));
        rg_fuzz_check(rg_fuzz_same_str(&a->calls[i].name,
                                       &b->calls[i].name));
        rg_fuzz_check(rg_fuzz_same_str(&a->calls[i].arguments,
                                       &b->calls[i].arguments));
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int                 status;
    size_t              off, n, len;
    uint32_t            seed;
    rg_str_t            content, finish;
    rg_uint_t           i;
    rg_pool_t          *pool;
    const char         *body;
    rg_llm_sse_t       *p, *whole;
    rg_llm_response_t   r, rw;

    if (size < 2) {
        return 0;
    }

    status = rg_fuzz_statuses[data[0] & 3];
    seed = data[1] | 0x100;
    body = (const char *) data + 2;
    len = size - 2;

    pool = rg_pool_create(4096);
    p = rg_llm_sse_create(RG_FUZZ_MAX_CALLS);
    whole = rg_llm_sse_create(RG_FUZZ_MAX_CALLS);

    if (pool == NULL || p == NULL || whole == NULL) {
        goto done;
    }

    for (off = 0; off < len; off += n) {
        seed = seed * 1103515245 + 12345;
        n = ((seed >> 16) & 7) == 0 ? len - off : 1 + ((seed >> 20) & 15);
        n = rg_min(n, len - off);

        rg_fuzz_check(rg_llm_sse_feed(p, body + off, n) == RG_OK);
    }

    rg_fuzz_check(rg_llm_sse_feed(whole, body, len) == RG_OK);

    for (i = 0; i < 4; i++) {
        if (rg_llm_sse_choice(p, i, &content, &finish) == RG_OK) {
            rg_fuzz_str(&content);
            rg_fuzz_str(&finish);
        }
    }

    memset(&r, 0, sizeof(r));
    memset(&rw, 0, sizeof(rw));

    rg_fuzz_check(rg_llm_sse_finish(p, pool, status, "f", &r) == RG_OK);
    rg_fuzz_check(rg_llm_sse_finish(whole, pool, status, "f", &rw) == RG_OK);

    rg_fuzz_response(&r, status);
    rg_fuzz_same(&r, &rw);
    rg_fuzz_check(rg_llm_sse_done(p) == rg_llm_sse_done(whole));

done:

    rg_llm_sse_destroy(p);
    rg_llm_sse_destroy(whole);

    if (pool != NULL) {
        rg_pool_destroy(pool);
    }

    return 0;
}
