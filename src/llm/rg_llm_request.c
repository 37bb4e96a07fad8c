/* rg_llm_request.c: the neutral request interface (rg_llm_request.h): the
 * session's messages in their one form, Chat Completions JSON written by
 * rg_llm_openai.c whatever the wire format, and the codec's row asked
 * for everything that is the wire format's own (tools, the prefix, each
 * message's piece). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_request.h>
#include <rg_llm_openai.h>
#include <rg_llm_json.h>


rg_int_t
rg_llm_tool_text(const rg_llm_codec_t *codec, rg_buf_t *out,
    const rg_llm_tool_t *t)
{
    return codec->tool(out, t);
}


rg_int_t
rg_llm_prefix(const rg_llm_codec_t *codec, rg_buf_t *out,
    const rg_llm_prefix_t *p)
{
    return codec->prefix(out, p);
}


rg_int_t
rg_llm_message(rg_buf_t *out, rg_llm_role_e role, const char *text,
    size_t len)
{
    return rg_llm_openai_msg(out, role == RG_LLM_USER ? "user"
                                  : role == RG_LLM_ASSISTANT ? "assistant"
                                  : "system",
                             text, len);
}


rg_int_t
rg_llm_tool_result(rg_buf_t *out, const char *tool_call_id,
    const char *text, size_t len, rg_uint_t is_error)
{
    size_t  at;

    at = out->len;

    if (rg_llm_openai_tool_msg(out, tool_call_id, text, len) != RG_OK) {
        return RG_ERROR;
    }

    if (!is_error) {
        return RG_OK;
    }

    /* x_reagent last, in place of the closing brace */
    out->len--;

    return rg_llm_json_ended(out, at,
                             rg_buf_append_lit(out, ",\"" RG_LLM_EXT "\":"
                                               "{\"is_error\":true}}"));
}


rg_int_t
rg_llm_wire_text(const rg_llm_codec_t *codec, rg_buf_t *out, uint8_t role,
    const char *tool_id, const char *text, size_t len, rg_uint_t is_error)
{
    if (codec->text == NULL) {
        return RG_DECLINED;
    }

    return codec->text(out, role, tool_id, text, len, is_error);
}


rg_int_t
rg_llm_wire(const rg_llm_codec_t *codec, rg_pool_t *pool, uint8_t role,
    const rg_str_t *msg, rg_str_t *wire)
{
    rg_int_t  rc;
    rg_buf_t  b;

    memset(&b, 0, sizeof(b));

    rc = codec->wire(&b, role, msg->data, msg->len);

    if (rc == RG_DECLINED) {
        *wire = *msg;
        rg_buf_free(&b);
        return RG_OK;
    }

    if (rc == RG_OK) {
        wire->len = b.len;
        wire->data = b.len ? rg_pstrdup(pool, b.data, b.len) : (char *) "";
        rc = wire->data ? RG_OK : RG_ERROR;
    }

    rg_buf_free(&b);

    return rc;
}


rg_int_t
rg_llm_message_edit(const char *msg, size_t len, size_t min,
    rg_llm_edit_pt edit, void *data, char **out)
{
    return rg_llm_openai_edit(msg, len, min, edit, data, out);
}


rg_int_t
rg_llm_message_calls(rg_pool_t *pool, const char *msg, size_t len,
    rg_uint_t max_calls, rg_llm_response_t *resp)
{
    rg_int_t  rc;
    rg_buf_t  b;

    memset(&b, 0, sizeof(b));

    /* a completion that answers with it, read by the same parser */
    if (rg_buf_append_lit(&b, "{\"choices\":[{\"index\":0,\"message\":")
            != RG_OK
        || rg_buf_append(&b, msg, len) != RG_OK
        || rg_buf_append_lit(&b, ",\"finish_reason\":\"tool_calls\"}]}")
           != RG_OK)
    {
        rg_buf_free(&b);
        return RG_ERROR;
    }

    rc = rg_llm_openai_parse(pool, 200, b.data, b.len, NULL, max_calls,
                             resp);
    rg_buf_free(&b);

    if (rc != RG_OK || resp->status != RG_LLM_OK || resp->ncalls == 0) {
        return RG_ERROR;
    }

    return RG_OK;
}

