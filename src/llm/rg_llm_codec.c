/* rg_llm_codec.c: the table of wire formats, one row per codec, in the
 * manner of nginx's module table: the client and the session reach a
 * format only through its row. A new format is its own files and one row
 * here (and its RG_LLM_* index in rg_llm.h). Also what every codec shares
 * around its row: a response reset to nothing, the end of reading an
 * answer (an answer cut at its limit runs no tool call), and the body
 * being put together, whose joins are the codec's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm.h>
#include <rg_llm_json.h>
#include <rg_llm_openai.h>
#include <rg_llm_anthropic.h>
#include <rg_llm_responses.h>


static const char  *rg_llm_anthropic_headers[] = {
    "anthropic-version: " RG_LLM_ANTHROPIC_VERSION,
    NULL
};


const rg_llm_codec_t  rg_llm_codecs[RG_LLM_NCODECS] = {

    /* RG_LLM_CHAT */
    { rg_string("chat"), "/chat/completions", "Authorization: Bearer ",
      NULL, 1, 2,
      rg_llm_openai_tool, rg_llm_openai_prefix_p, rg_llm_openai_wire, NULL,
      rg_llm_openai_body_add, rg_llm_openai_body_end,
      rg_llm_openai_read,
      rg_llm_openai_stream_create, rg_llm_openai_stream_feed,
      rg_llm_openai_stream_finish, rg_llm_openai_stream_destroy },

    /* RG_LLM_ANTHROPIC */
    { rg_string("anthropic"), "/messages", "x-api-key: ",
      rg_llm_anthropic_headers, 40, 256,
      rg_llm_anthropic_tool, rg_llm_anthropic_prefix, rg_llm_anthropic_wire,
      rg_llm_anthropic_text, rg_llm_anthropic_body_add, rg_llm_anthropic_body_end,
      rg_llm_anthropic_read,
      rg_llm_anthropic_stream_create, rg_llm_anthropic_stream_feed,
      rg_llm_anthropic_stream_finish, rg_llm_anthropic_stream_destroy },

    /* RG_LLM_RESPONSES */
    { rg_string("responses"), "/responses", "Authorization: Bearer ",
      NULL, 1, 2,
      rg_llm_responses_tool, rg_llm_responses_prefix, rg_llm_responses_wire,
      rg_llm_responses_text, rg_llm_openai_body_add, rg_llm_openai_body_end,
      rg_llm_responses_read,
      rg_llm_responses_stream_create, rg_llm_responses_stream_feed,
      rg_llm_responses_stream_finish, rg_llm_responses_stream_destroy }
};


static const char  *rg_llm_status_names[] = {
    "ok",
    "rate_limited",
    "server_error",
    "timeout",
    "connect_error",
    "bad_response",
    "context_length_exceeded",
    "fatal",
    "response_too_large",
    "request_over_rate_limit"
};


/* the finish reasons of an answer cut at its output limit */
static const char  *rg_llm_cut_reasons[] = {
    "length", "max_tokens", "max_output_tokens"
};


const rg_llm_codec_t *
rg_llm_codec_find(const char *name, size_t len)
{
    rg_uint_t  i;

    for (i = 0; i < RG_LLM_NCODECS; i++) {
        if (rg_llm_codecs[i].name.len == len
            && memcmp(rg_llm_codecs[i].name.data, name, len) == 0)
        {
            return &rg_llm_codecs[i];
        }
    }

    return NULL;
}


const char *
rg_llm_codec_names(void)
{
    return "chat, anthropic, responses";
}


const char *
rg_llm_status_name(rg_llm_status_e status)
{
    if ((size_t) status >= rg_nelems(rg_llm_status_names)) {
        return "unknown";
    }

    return rg_llm_status_names[status];
}


void
rg_llm_response_init(rg_llm_response_t *r, int http_status)
{
    rg_msec_t  retry_after;

    retry_after = r->retry_after;

    memset(r, 0, sizeof(rg_llm_response_t));

    r->http_status = http_status;
    r->retry_after = retry_after;
    rg_llm_json_empty(&r->content);
    rg_llm_json_empty(&r->reasoning);
    rg_llm_json_empty(&r->refusal);
    rg_llm_json_empty(&r->finish_reason);
    rg_llm_json_empty(&r->message);
    rg_llm_json_empty(&r->wire);
    rg_llm_json_empty(&r->opaque);
    rg_llm_json_empty(&r->error);
    rg_llm_json_empty(&r->error_type);
    rg_llm_json_empty(&r->error_code);
    rg_llm_json_empty(&r->error_param);
}


rg_int_t
rg_llm_answer_end(rg_pool_t *pool, const char *format, rg_llm_response_t *r)
{
    size_t  i;

    if (r->status != RG_LLM_OK) {
        return RG_OK;
    }

    for (i = 0; r->ncalls && i < rg_nelems(rg_llm_cut_reasons); i++) {
        if (r->finish_reason.len == strlen(rg_llm_cut_reasons[i])
            && memcmp(r->finish_reason.data, rg_llm_cut_reasons[i],
                      r->finish_reason.len) == 0)
        {
            /* the last call's arguments stop where the answer did: none
             * of them runs, and the model is not asked about them */
            r->calls_cut = r->ncalls;
            r->ncalls = 0;
            r->calls_over = 0;
            break;
        }
    }

    return rg_llm_message_build(pool, format, r);
}


rg_int_t
rg_llm_body_start(rg_llm_body_t *bd, const rg_llm_codec_t *codec,
    rg_uint_t cache, rg_buf_t *b, const char *prefix, size_t len,
    size_t more)
{
    memset(bd, 0, sizeof(rg_llm_body_t));

    bd->b = b;
    bd->codec = codec;
    bd->cache = cache ? 1 : 0;

    /* the pieces with what joins them (more) and the end; held while
     * the model answers, so no larger */
    if (rg_buf_reserve_exact(b, len + more + codec->tail) != RG_OK) {
        return RG_ERROR;
    }

    return rg_buf_append(b, prefix, len);
}


rg_int_t
rg_llm_body_add(rg_llm_body_t *bd, uint8_t role, const char *piece,
    size_t len)
{
    rg_int_t  rc;

    rc = bd->codec->body_add(bd, role, piece, len);
    bd->n++;

    return rc;
}


rg_int_t
rg_llm_body_end(rg_llm_body_t *bd)
{
    return bd->codec->body_end(bd);
}
