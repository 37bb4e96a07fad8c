/* rg_llm_json.h: the JSON helpers the codecs share (rg_llm_json.c). */

#ifndef RG_LLM_JSON_H
#define RG_LLM_JSON_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm.h>
#include <rg_llm_classify.h>

#include <jansson.h>


/* request pieces: compact, and reals as people write them (0.7, not
 * 0.69999999999999996) */
#define RG_LLM_JSON_DUMP       (JSON_COMPACT | JSON_REAL_PRECISION(15))

#define rg_llm_json_empty(s)   (s)->len = 0; (s)->data = (char *) ""

/* lit: a string literal, appended as it is */
#define rg_llm_json_lit(out, lit)  rg_buf_append(out, lit, sizeof(lit) - 1)


/* Copies len bytes of src to dst, which has room for 3 * len, every byte
 * that starts no valid UTF-8 sequence made U+FFFD and, when ctl is set,
 * every ASCII control character a space. Returns the length written. */
size_t rg_llm_json_clean(char *dst, const char *src, size_t len, int ctl);

/* a JSON string of any bytes: invalid UTF-8 becomes U+FFFD */
json_t *rg_llm_json_string(const char *s, size_t len);

/* s[0..len) copied into the pool, NUL-ended ("" when empty) */
rg_int_t rg_llm_json_set(rg_pool_t *pool, rg_str_t *dst, const char *s,
    size_t len);
/* a JSON string copied; anything else leaves dst as it was */
rg_int_t rg_llm_json_get(rg_pool_t *pool, rg_str_t *dst, json_t *v);
/* a string as it is, any other value but null serialized */
rg_int_t rg_llm_json_text(rg_pool_t *pool, rg_str_t *dst, json_t *v);
/* v serialized, compact, in b in place of what b held (what a stream
 * keeps between its chunks); RG_ERROR without memory */
rg_int_t rg_llm_json_keep(rg_buf_t *b, json_t *v);
/* an error code: a string as it is, a number in decimal */
rg_int_t rg_llm_json_code(rg_pool_t *pool, rg_str_t *dst, json_t *v);
/* a token count: an integer, or a real some providers send */
int64_t rg_llm_json_int(json_t *v, int *found);

/* a body read (NUL allowed; integers past 64 bits read as reals) */
json_t *rg_llm_json_load(const char *body, size_t len, json_error_t *err);

/* r->error: "HTTP 502: <the start of the body, printable, scrubbed>" */
rg_int_t rg_llm_json_raw_error(rg_pool_t *pool, int http_status,
    const char *body, size_t len, rg_llm_response_t *r);
/* a response we cannot use: RG_LLM_ERR_BAD_RESPONSE with text + detail
 * made printable */
rg_int_t rg_llm_json_bad(rg_pool_t *pool, rg_llm_response_t *r,
    const char *text, const char *detail);

/* a JSON string's text appended to b; anything else adds nothing */
rg_int_t rg_llm_json_append(rg_buf_t *b, json_t *v);
/* arguments as the tools want them: JSON text, "{}" when none */
rg_int_t rg_llm_json_arguments(rg_pool_t *pool, rg_str_t *dst, json_t *v);
/* a request's first members, "stream": true when stream, written open
 * (no closing brace) for the body to add its lists */
rg_int_t rg_llm_json_open(rg_buf_t *out, json_t *req, int err,
    rg_uint_t stream);
/* an event's data as JSON: RG_OK, RG_DONE (blank), RG_ERROR (no memory),
 * RG_DECLINED (no JSON: err says why) */
rg_int_t rg_llm_json_event(const char *text, size_t len, json_t **root,
    json_error_t *err);
/* why a text is no JSON, printable, into bad[size] */
void rg_llm_json_why(char *bad, size_t size, const json_error_t *err);
/* room for the calls of an answer, max_calls + 1 at most (0: the
 * cap); r->calls_over says how many past the cap */
rg_int_t rg_llm_json_calls(rg_pool_t *pool, size_t total,
    rg_uint_t max_calls, size_t *keep, rg_llm_response_t *r);
/* the items of type call (total), of neither call nor plain (special) */
void rg_llm_json_count(json_t *items, const char *call, const char *plain,
    size_t *total, size_t *special);
/* an item kept as its compact text; the kept items as r->opaque */
rg_int_t rg_llm_json_kept_add(json_t *kept, json_t *item);
rg_int_t rg_llm_json_kept_set(rg_pool_t *pool, json_t *kept,
    rg_llm_response_t *r);
/* an id for every call that has none or repeats an earlier one:
 * "<prefix>_<i>" (prefix NULL: "call") */
rg_int_t rg_llm_json_ids(rg_pool_t *pool, const char *id_prefix,
    rg_llm_response_t *r);

/* writing: a string escaped as jansson escapes it (invalid UTF-8 made
 * U+FFFD); a value serialized and released (on failure out as it was);
 * a piece written from at on, undone when rc failed */
rg_int_t rg_llm_json_put(rg_buf_t *out, const char *p, size_t len);
int rg_llm_json_writer(const char *buffer, size_t size, void *data);
rg_int_t rg_llm_json_dump(rg_buf_t *out, json_t *json, int err);
rg_int_t rg_llm_json_ended(rg_buf_t *out, size_t at, rg_int_t rc);

/* a number as people write it: 0, 0.7 */
json_t *rg_llm_json_number(double v);

/* Where each member called names[m] of the object text[0..len) begins
 * its value (at[m], (size_t) -1 when it has none): a scan of strings and
 * brackets only, so that jansson parses the members a codec reads and
 * not those it never does (a Responses answer repeats the request's
 * tools). RG_DECLINED when the text is not one whole object: then it is
 * read whole. */
rg_int_t rg_llm_json_members(const char *text, size_t len,
    const char **names, size_t *at, rg_uint_t n);

/* what google.rpc details say of a limit: the wait, the period */
void rg_llm_json_details(json_t *details, rg_llm_error_t *e);

/* a tool as {"type": type (none when NULL), "name",
 * "description" (when it has one), schema: its parameters}. */
rg_int_t rg_llm_tool_json(rg_buf_t *out, const rg_llm_tool_t *t,
    const char *type, const char *schema);

#endif /* RG_LLM_JSON_H */
