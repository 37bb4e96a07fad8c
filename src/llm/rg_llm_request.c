/* rg_llm_request.c: the neutral request interface (rg_llm_request.h) on
 * the one codec there is, OpenAI Chat Completions (rg_llm_openai.c): the
 * only place that chooses it. Writes no JSON itself beyond the commas and
 * brackets that join pieces the codec made. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_request.h>
#include <rg_llm_openai.h>


rg_int_t
rg_llm_tool_text(rg_buf_t *out, const rg_llm_tool_t *t)
{
    return rg_llm_openai_tool_def(out, t->name,
                                  t->description ? t->description : "",
                                  t->parameters);
}


rg_int_t
rg_llm_prefix(rg_buf_t *out, const rg_llm_prefix_t *p)
{
    rg_int_t   rc;
    rg_buf_t   tools;
    rg_uint_t  i;

    if (p->ntools == 0) {
        return rg_llm_openai_prefix_ex(out, p->model, p->temperature, NULL,
                                       0, p->stream);
    }

    memset(&tools, 0, sizeof(tools));

    rc = rg_buf_append_lit(&tools, "[");

    for (i = 0; rc == RG_OK && i < p->ntools; i++) {
        if (i) {
            rc = rg_buf_append_lit(&tools, ",");
        }

        if (rc == RG_OK) {
            rc = rg_buf_append(&tools, p->tools[i].data, p->tools[i].len);
        }
    }

    if (rc == RG_OK) {
        rc = rg_buf_append_lit(&tools, "]");
    }

    if (rc == RG_OK) {
        rc = rg_llm_openai_prefix_ex(out, p->model, p->temperature,
                                     tools.data, tools.len, p->stream);
    }

    rg_buf_free(&tools);

    return rc;
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
    const char *text, size_t len)
{
    return rg_llm_openai_tool_msg(out, tool_call_id, text, len);
}


rg_int_t
rg_llm_body_start(rg_buf_t *b, const char *prefix, size_t len, size_t more)
{
    /* the messages, a comma between each two, and "]}"; held while the
     * model answers, so no larger */
    if (rg_buf_reserve_exact(b, len + more + 2) != RG_OK) {
        return RG_ERROR;
    }

    return rg_buf_append(b, prefix, len);
}


rg_int_t
rg_llm_body_add(rg_buf_t *b, const char *msg, size_t len, rg_uint_t first)
{
    if (!first && rg_buf_append_lit(b, ",") != RG_OK) {
        return RG_ERROR;
    }

    return rg_buf_append(b, msg, len);
}


rg_int_t
rg_llm_body_end(rg_buf_t *b)
{
    return rg_buf_append_lit(b, "]}");
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
