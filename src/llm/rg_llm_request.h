/* rg_llm_request.h: a model request in neutral terms, for those who make
 * requests (the agent): the tools an agent offers, its model, temperature
 * and stream, the messages of a conversation in the session's own form
 * (Chat Completions JSON, whatever the wire format) and how a body is put
 * together from them. A codec (rg_llm.h) turns them into its wire format;
 * what comes back is text the caller keeps and hands back (a tool's
 * description, a prefix, a message, a message's wire piece) and never
 * takes apart. */

#ifndef RG_LLM_REQUEST_H
#define RG_LLM_REQUEST_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm.h>


typedef enum {
    RG_LLM_SYSTEM = 0,
    RG_LLM_USER,
    RG_LLM_ASSISTANT              /* a text answer of a given history */
} rg_llm_role_e;


/* what rg_llm_message_edit() asks to make of a message's text */
typedef rg_int_t (*rg_llm_edit_pt)(const char *text, size_t len,
    rg_buf_t *out, void *data);


/* Appends the description of a tool in a codec's form; RG_ERROR when
 * its parameters are not a JSON object or memory ran out. Built once per
 * tool, agent and codec. */
rg_int_t rg_llm_tool_text(const rg_llm_codec_t *codec, rg_buf_t *out,
    const rg_llm_tool_t *t);

/* Appends the part of a body that comes before the messages; the tools
 * offered are left out when there are none. */
rg_int_t rg_llm_prefix(const rg_llm_codec_t *codec, rg_buf_t *out,
    const rg_llm_prefix_t *p);

/* Appends one message of a role, in the session's form: text len bytes,
 * NULs included, bytes that are not UTF-8 made U+FFFD. */
rg_int_t rg_llm_message(rg_buf_t *out, rg_llm_role_e role, const char *text,
    size_t len);
/* Appends the message that answers tool call tool_call_id; is_error: the
 * call failed (a codec that can say so tells the model). */
rg_int_t rg_llm_tool_result(rg_buf_t *out, const char *tool_call_id,
    const char *text, size_t len, rg_uint_t is_error);

/* The wire piece of a message of the session (role 's', 'u', 'a', 't')
 * for codec, in pool: *wire is the message itself when the codec sends
 * it as it is. */
rg_int_t rg_llm_wire(const rg_llm_codec_t *codec, rg_pool_t *pool,
    uint8_t role, const rg_str_t *msg, rg_str_t *wire);

/* The wire piece of a message of the session being made from its text
 * (as rg_llm_message() and rg_llm_tool_result() make it), in out:
 * RG_DECLINED when the codec sends the message as it is. */
rg_int_t rg_llm_wire_text(const rg_llm_codec_t *codec, rg_buf_t *out,
    uint8_t role, const char *tool_id, const char *text, size_t len,
    rg_uint_t is_error);

/* The message msg[0..len) with its text replaced by what edit makes of
 * it, in *out (malloc'ed, NUL-ended). RG_DECLINED when its text is no
 * longer than min bytes (or it has none), RG_ERROR on failure. */
rg_int_t rg_llm_message_edit(const char *msg, size_t len, size_t min,
    rg_llm_edit_pt edit, void *data, char **out);

/* The tool calls of an assistant message this codec made (one kept in the
 * store), read into resp as if a model had just answered with it; the
 * ids are the message's own. RG_ERROR when it is not such a message or
 * memory ran out. */
struct rg_llm_response_s;
rg_int_t rg_llm_message_calls(rg_pool_t *pool, const char *msg, size_t len,
    rg_uint_t max_calls, struct rg_llm_response_s *resp);

#endif /* RG_LLM_REQUEST_H */
