/* rg_llm_request.h: a model request in neutral terms, for those who make
 * requests (the agent): the tools an agent offers, its model, temperature
 * and stream, the messages of a conversation and how a body is put
 * together from them. The codec (rg_llm_openai.c) turns them into the
 * wire format; what comes back is text the caller keeps and hands back
 * (a tool's description, a prefix, a message, a body) and never takes
 * apart. */

#ifndef RG_LLM_REQUEST_H
#define RG_LLM_REQUEST_H

#include <rg_config.h>
#include <rg_core.h>


typedef enum {
    RG_LLM_SYSTEM = 0,
    RG_LLM_USER,
    RG_LLM_ASSISTANT              /* a text answer of a given history */
} rg_llm_role_e;


/* a tool, as the model is told of it */
typedef struct {
    const char         *name;
    const char         *description;  /* NULL: none */
    const char         *parameters;   /* JSON Schema text of an object */
} rg_llm_tool_t;


/* what a request says before its messages */
typedef struct {
    const char         *model;
    double              temperature;
    rg_uint_t           stream;       /* ask for Server-Sent Events */
    const rg_str_t     *tools;        /* from rg_llm_tool_text(), or NULL */
    rg_uint_t           ntools;
} rg_llm_prefix_t;


/* what rg_llm_message_edit() asks to make of a message's text */
typedef rg_int_t (*rg_llm_edit_pt)(const char *text, size_t len,
    rg_buf_t *out, void *data);


/* Appends the description of a tool; RG_ERROR when its parameters are
 * not a JSON object or memory ran out. Built once per tool and agent. */
rg_int_t rg_llm_tool_text(rg_buf_t *out, const rg_llm_tool_t *t);

/* Appends the part of a body that comes before the messages; the tools
 * offered are left out when there are none. */
rg_int_t rg_llm_prefix(rg_buf_t *out, const rg_llm_prefix_t *p);

/* Appends one message of a role: text len bytes, NULs included, bytes
 * that are not UTF-8 made U+FFFD. */
rg_int_t rg_llm_message(rg_buf_t *out, rg_llm_role_e role, const char *text,
    size_t len);
/* Appends the message that answers tool call tool_call_id. */
rg_int_t rg_llm_tool_result(rg_buf_t *out, const char *tool_call_id,
    const char *text, size_t len);

/* A body: the prefix (with room for `more` bytes of messages), then each
 * message, the first one first, then its end. */
rg_int_t rg_llm_body_start(rg_buf_t *b, const char *prefix, size_t len,
    size_t more);
rg_int_t rg_llm_body_add(rg_buf_t *b, const char *msg, size_t len,
    rg_uint_t first);
rg_int_t rg_llm_body_end(rg_buf_t *b);

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
