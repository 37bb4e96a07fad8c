/* fuzz_codecs.c: libFuzzer target for the Anthropic Messages and OpenAI
 * Responses codecs (rg_llm_anthropic*.c, rg_llm_responses*.c, with the
 * framing of rg_llm_frame.c). The first byte picks the codec (bit 0) and
 * the HTTP status (bits 1-2: 200, 200, 429, 529); the second seeds the
 * sizes of the pieces the rest is fed in as a stream. The body is also
 * read whole. Besides the sanitizers it checks what rg_llm.h promises:
 * every string non-NULL and NUL-ended, a message that is JSON exactly
 * when the status is OK; and what an answer's message becomes as a
 * piece of the next request, in every format: JSON that a body of that
 * format takes. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm.h>
#include <rg_llm_request.h>

#include <jansson.h>


#define rg_fuzz_check(cond)                                                  \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);       \
            abort();                                                         \
        }                                                                    \
    } while (0)


#define RG_FUZZ_MAX_CALLS  4


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static const int  rg_fuzz_statuses[] = { 200, 200, 429, 529 };


static void
rg_fuzz_str(const rg_str_t *s)
{
    rg_fuzz_check(s->data != NULL);
    rg_fuzz_check(s->data[s->len] == '\0');
}


/* the message as a piece of a body of every format, then the body */
static void
rg_fuzz_wire(rg_pool_t *pool, const rg_llm_response_t *r)
{
    json_t          *j;
    rg_buf_t         body;
    rg_str_t         msg, wire;
    rg_uint_t        f;
    rg_llm_body_t    bd;
    static const char  user[] = "{\"role\":\"user\",\"content\":\"q\"}";

    msg.data = r->message.data;
    msg.len = r->message.len;

    for (f = 0; f < RG_LLM_NCODECS; f++) {
        if (rg_llm_wire(&rg_llm_codecs[f], pool, 'a', &msg, &wire) != RG_OK)
        {
            continue;                  /* out of memory only */
        }

        memset(&body, 0, sizeof(body));

        rg_fuzz_check(rg_llm_body_start(&bd, &rg_llm_codecs[f], 1, &body,
                                        "{\"model\":\"m\"", 12, 64)
                      == RG_OK);

        /* the chat prefix is a messages array's opening */
        if (f == RG_LLM_CHAT) {
            rg_buf_append_lit(&body, ",\"messages\":[");

        } else if (f == RG_LLM_RESPONSES) {
            rg_buf_append_lit(&body, ",\"input\":[");
        }

        rg_llm_body_add(&bd, 'u', user, sizeof(user) - 1);
        rg_llm_body_add(&bd, 'a', wire.data, wire.len);
        rg_fuzz_check(rg_llm_body_end(&bd) == RG_OK);

        j = json_loadb(body.data, body.len, 0, NULL);
        if (j == NULL) {
            fprintf(stderr, "format %lu: %s\n", (unsigned long) f,
                    body.data);
        }
        rg_fuzz_check(j != NULL);
        json_decref(j);

        rg_buf_free(&body);
    }
}


static void
rg_fuzz_response(rg_pool_t *pool, rg_llm_response_t *r, int http_status)
{
    json_t     *msg;
    rg_uint_t   i;

    rg_fuzz_check(r->http_status == http_status);
    rg_fuzz_check((size_t) r->status <= RG_LLM_ERR_OVER_RATE);

    rg_fuzz_str(&r->content);
    rg_fuzz_str(&r->reasoning);
    rg_fuzz_str(&r->refusal);
    rg_fuzz_str(&r->finish_reason);
    rg_fuzz_str(&r->message);
    rg_fuzz_str(&r->opaque);
    rg_fuzz_str(&r->error);
    rg_fuzz_str(&r->error_type);
    rg_fuzz_str(&r->error_code);
    rg_fuzz_check(r->has_content == (r->content.len > 0));
    rg_fuzz_check(r->ncalls <= RG_FUZZ_MAX_CALLS + 1);
    rg_fuzz_check(r->retry_after <= RG_LLM_MAX_RETRY_AFTER);

    for (i = 0; i < r->ncalls; i++) {
        rg_fuzz_str(&r->calls[i].id);
        rg_fuzz_str(&r->calls[i].name);
        rg_fuzz_str(&r->calls[i].arguments);
        rg_fuzz_check(r->calls[i].id.len > 0);
    }

    if (r->status != RG_LLM_OK) {
        rg_fuzz_check(r->message.len == 0);
        rg_fuzz_check(r->ncalls == 0);
        return;
    }

    msg = json_loadb(r->message.data, r->message.len, 0, NULL);
    rg_fuzz_check(json_is_object(msg));
    json_decref(msg);

    rg_fuzz_wire(pool, r);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t                 off, n;
    uint32_t               seed;
    rg_pool_t             *pool;
    rg_llm_answer_t        a;
    rg_llm_stream_t       *s;
    rg_llm_response_t      r;
    const rg_llm_codec_t  *codec;

    if (size < 2) {
        return 0;
    }

    codec = &rg_llm_codecs[(data[0] & 1) ? RG_LLM_RESPONSES
                                         : RG_LLM_ANTHROPIC];

    memset(&a, 0, sizeof(a));
    a.http_status = rg_fuzz_statuses[(data[0] >> 1) & 3];
    a.id_prefix = "f";
    a.max_calls = RG_FUZZ_MAX_CALLS;
    a.body = (const char *) data + 2;
    a.len = size - 2;
    seed = data[1];

    pool = rg_pool_create(4096);
    if (pool == NULL) {
        return 0;
    }

    memset(&r, 0, sizeof(r));
    if (codec->parse(pool, &a, &r) == RG_OK) {
        rg_fuzz_response(pool, &r, a.http_status);
    }

    s = codec->stream_create(RG_FUZZ_MAX_CALLS, NULL, NULL);

    if (s != NULL) {
        for (off = 0; off < a.len; off += n) {
            seed = seed * 1103515245 + 12345;
            n = (seed >> 16) % 17;
            n = (n == 0 || n > a.len - off) ? a.len - off : n;

            if (codec->stream_feed(s, a.body + off, n) != RG_OK) {
                break;
            }
        }

        memset(&r, 0, sizeof(r));
        if (codec->stream_finish(s, pool, &a, &r) == RG_OK) {
            rg_fuzz_response(pool, &r, a.http_status);
        }

        codec->stream_destroy(s);
    }

    rg_pool_destroy(pool);

    return 0;
}
