/* rg_llm_sse_end.c: the end of a streamed Chat Completions answer
 * (rg_llm_sse.c): the ordinary chat.completion its chunks amount to,
 * read by rg_llm_openai_parse(); then what only a stream can say: an error
 * sent after the 200, a stream cut short, a body that was no stream. And
 * the codec's stream reader (rg_llm_openai.h) over it. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json.h>
#include <rg_llm_sse.h>
#include <rg_llm_sse_int.h>
#include <rg_llm_openai.h>


rg_int_t
rg_llm_sse_choice(rg_llm_sse_t *p, rg_uint_t index, rg_str_t *content,
    rg_str_t *finish_reason)
{
    rg_uint_t             i;
    rg_llm_sse_choice_t  *ch;

    for (i = 0; i < p->nchoices; i++) {
        ch = &p->choices[i];

        if (ch->index < 0 || (uint64_t) ch->index != (uint64_t) index) {
            continue;
        }

        content->len = ch->content.len;
        content->data = ch->content.len ? ch->content.data : (char *) "";
        finish_reason->len = ch->finish_reason.len;
        finish_reason->data = ch->finish_reason.len ? ch->finish_reason.data
                                                    : (char *) "";
        return RG_OK;
    }

    return RG_DECLINED;
}


/* a JSON string of a buffer, NULL when empty */
static json_t *
rg_llm_sse_json_str(rg_buf_t *b)
{
    return b->len ? json_stringn(b->data, b->len) : NULL;
}


/* the choice as a non-streamed response has it */
static json_t *
rg_llm_sse_choice_json(rg_llm_sse_choice_t *ch)
{
    int                 err;
    json_t             *choice, *msg, *calls, *call, *fn, *v;
    rg_uint_t           i;
    rg_llm_sse_call_t  *c;

    msg = json_object();
    err = json_object_set_new(msg, "role", json_string("assistant"));

    v = rg_llm_sse_json_str(&ch->content);
    err |= json_object_set_new(msg, "content", v ? v : json_null());

    if (ch->reasoning.len) {
        err |= json_object_set_new(msg, "reasoning_content",
                                   rg_llm_sse_json_str(&ch->reasoning));
    }

    if (ch->refusal.len) {
        err |= json_object_set_new(msg, "refusal",
                                   rg_llm_sse_json_str(&ch->refusal));
    }

    if (ch->ncalls) {
        calls = json_array();

        for (i = 0; calls != NULL && err == 0 && i < ch->ncalls; i++) {
            c = &ch->calls[i];

            /* no id, no name: the codec makes an id, keeps the name "" */
            fn = json_object();

            if (c->name.len) {
                err |= json_object_set_new(fn, "name",
                                           rg_llm_sse_json_str(&c->name));
            }

            err |= json_object_set_new(fn, "arguments",
                       json_stringn(c->arguments.len ? c->arguments.data : "",
                                    c->arguments.len));

            call = json_object();

            if (c->id.len) {
                err |= json_object_set_new(call, "id",
                                           rg_llm_sse_json_str(&c->id));
            }

            err |= json_object_set_new(call, "type", json_string("function"));
            err |= json_object_set_new(call, "function", fn);
            err |= json_array_append_new(calls, call);
        }

        err |= json_object_set_new(msg, "tool_calls", calls);
    }

    choice = json_object();

    err |= json_object_set_new(choice, "index", json_integer(0));
    err |= json_object_set_new(choice, "message", msg);

    v = rg_llm_sse_json_str(&ch->finish_reason);
    err |= json_object_set_new(choice, "finish_reason", v ? v : json_null());

    if (err) {
        json_decref(choice);
        return NULL;
    }

    return choice;
}


/* The chat.completion the stream adds up to, serialized: the answer
 * (choice 0, or the lowest index sent), the last usage, the first
 * error. Other choices are left out: the codec reads only the answer.
 * The text is freed with rg_json_free_dump(). */
static char *
rg_llm_sse_body(rg_llm_sse_t *p)
{
    int      err;
    char    *s;
    json_t  *root, *choices;

    root = json_object();
    err = json_object_set_new(root, "object", json_string("chat.completion"));

    choices = json_array();

    if (p->nchoices) {
        err |= json_array_append_new(choices,
                                     rg_llm_sse_choice_json(&p->choices[0]));
    }

    err |= json_object_set_new(root, "choices", choices);

    if (p->usage.len) {
        err |= json_object_set_new(root, "usage",
                                   json_loadb(p->usage.data, p->usage.len,
                                              JSON_DECODE_ANY
                                              | JSON_ALLOW_NUL, NULL));
    }

    if (p->error.len) {
        err |= json_object_set_new(root, "error",
                                   json_loadb(p->error.data, p->error.len,
                                              JSON_DECODE_ANY
                                              | JSON_ALLOW_NUL, NULL));
    }

    s = err ? NULL : json_dumps(root, JSON_COMPACT);
    json_decref(root);

    return s;
}


static rg_int_t
rg_llm_sse_copy(rg_pool_t *pool, rg_str_t *dst, rg_buf_t *b)
{
    if (b->len == 0) {
        dst->len = 0;
        dst->data = (char *) "";
        return RG_OK;
    }

    dst->data = rg_pstrdup(pool, b->data, b->len);
    if (dst->data == NULL) {
        return RG_ERROR;
    }

    dst->len = b->len;

    return RG_OK;
}


/* a response that failed: what arrived before, nothing to act on */
static rg_int_t
rg_llm_sse_partial(rg_llm_sse_t *p, rg_pool_t *pool, rg_llm_response_t *r)
{
    rg_llm_sse_choice_t  *ch;

    r->message.len = 0;
    r->message.data = (char *) "";
    r->calls = NULL;
    r->ncalls = 0;
    r->calls_over = 0;

    if (p->nchoices == 0) {
        return RG_OK;
    }

    ch = &p->choices[0];

    if (rg_llm_sse_copy(pool, &r->content, &ch->content) != RG_OK
        || rg_llm_sse_copy(pool, &r->reasoning, &ch->reasoning) != RG_OK
        || rg_llm_sse_copy(pool, &r->refusal, &ch->refusal) != RG_OK
        || rg_llm_sse_copy(pool, &r->finish_reason, &ch->finish_reason)
           != RG_OK)
    {
        return RG_ERROR;
    }

    r->has_content = (r->content.len > 0);

    return RG_OK;
}


/* a stream we cannot use: RG_LLM_ERR_BAD_RESPONSE with our words */
static rg_int_t
rg_llm_sse_bad(rg_pool_t *pool, rg_llm_response_t *r, const char *text,
    const char *detail)
{
    size_t   n, m;
    char    *s;

    n = strlen(text);
    m = (detail != NULL) ? strlen(detail) : 0;

    s = rg_palloc(pool, n + m + 1);
    if (s == NULL) {
        return RG_ERROR;
    }

    memcpy(s, text, n);
    if (m) {
        memcpy(s + n, detail, m);
    }
    s[n + m] = '\0';

    r->status = RG_LLM_ERR_BAD_RESPONSE;
    r->error.data = s;
    r->error.len = n + m;
    r->error_type.len = 0;
    r->error_type.data = (char *) "";
    r->error_code.len = 0;
    r->error_code.data = (char *) "";
    r->error_param.len = 0;
    r->error_param.data = (char *) "";

    return RG_OK;
}


rg_int_t
rg_llm_sse_finish(rg_llm_sse_t *p, rg_pool_t *pool, int http_status,
    const char *id_prefix, rg_llm_response_t *r)
{
    rg_llm_answer_t  a;

    memset(&a, 0, sizeof(a));
    a.http_status = http_status;
    a.id_prefix = id_prefix;
    a.max_calls = p->max_calls;

    return rg_llm_sse_end(p, pool, &a, r);
}


rg_int_t
rg_llm_sse_end(rg_llm_sse_t *p, rg_pool_t *pool, const rg_llm_answer_t *in,
    rg_llm_response_t *r)
{
    int              ok, http_status;
    char            *body;
    rg_int_t         rc;
    rg_llm_answer_t  a;

    a = *in;
    a.max_calls = p->max_calls;
    http_status = a.http_status;

    if (!p->ended) {
        p->ended = 1;

        /* the end of the body ends the last line and the last event */
        if (p->mode == RG_LLM_SSE_STREAM && !p->done && !p->nomem) {
            if (p->line.len > 0) {
                rg_llm_sse_line(p, p->line.data, p->line.len);
                rg_buf_reset(&p->line);
            }

            rg_llm_sse_dispatch(p);
        }
    }

    if (p->nomem) {
        return RG_ERROR;
    }

    ok = (http_status >= 200 && http_status <= 299);

    /* not a stream: a JSON body (an error of a 4xx, or a server that
     * ignored "stream": true), a page of a proxy, nothing at all */
    if (p->mode != RG_LLM_SSE_STREAM
        || (ok && !p->stream)
        || (!ok && p->error.len == 0))
    {
        a.body = (p->raw.data != NULL) ? p->raw.data : "";
        a.len = p->raw.len;

        rc = rg_llm_openai_read(pool, &a, r);

        if (rc == RG_OK && ok && p->too_large) {
            rc = rg_llm_sse_bad(pool, r, "the response is larger than 16 MiB",
                                NULL);
        }

        return rc;
    }

    body = rg_llm_sse_body(p);
    if (body == NULL) {
        return RG_ERROR;
    }

    a.body = body;
    a.len = strlen(body);

    rc = rg_llm_openai_read(pool, &a, r);
    rg_json_free_dump(body);

    if (rc != RG_OK) {
        return rc;
    }

    /* the calls past the cap that were only counted */
    if (r->ncalls > p->max_calls && p->nchoices) {
        r->calls_over += p->choices[0].dropped;
    }

    if (p->error.len) {
        /* Groq's tool_use_failed: the request has to change */
        if (ok && rg_str_eq(&r->error_code, "tool_use_failed")) {
            r->status = RG_LLM_ERR_FATAL;
        }

    } else if (p->too_large) {
        rc = rg_llm_sse_bad(pool, r, "the stream is larger than 16 MiB",
                            NULL);

    } else if (!p->done
               && (p->nchoices == 0 || p->choices[0].finish_reason.len == 0))
    {
        /* before "malformed": a cut stream often ends in half a chunk */
        rc = rg_llm_sse_bad(pool, r,
                            "the stream ended before the answer was complete",
                            NULL);

    } else if (p->malformed) {
        rc = rg_llm_sse_bad(pool, r, "malformed chunk in the stream: ",
                            p->bad);

    } else if (p->overflow) {
        rc = rg_llm_sse_bad(pool, r,
                            "too many choices in the stream",
                            NULL);
    }

    if (rc != RG_OK) {
        return rc;
    }

    if (r->status != RG_LLM_OK) {
        return rg_llm_sse_partial(p, pool, r);
    }

    return RG_OK;
}


/* the codec's row (rg_llm_codec.c) */

rg_llm_stream_t *
rg_llm_openai_stream_create(rg_uint_t max_calls, rg_llm_delta_pt delta,
    void *data)
{
    rg_llm_sse_t  *p;

    p = rg_llm_sse_create(max_calls);

    if (p != NULL) {
        p->delta = delta;
        p->delta_data = data;
    }

    return (rg_llm_stream_t *) p;
}


rg_int_t
rg_llm_openai_stream_feed(rg_llm_stream_t *s, const char *data, size_t len)
{
    return rg_llm_sse_feed((rg_llm_sse_t *) s, data, len);
}


rg_int_t
rg_llm_openai_stream_finish(rg_llm_stream_t *s, rg_pool_t *pool,
    const rg_llm_answer_t *a, rg_llm_response_t *r)
{
    return rg_llm_sse_end((rg_llm_sse_t *) s, pool, a, r);
}


void
rg_llm_openai_stream_destroy(rg_llm_stream_t *s)
{
    rg_llm_sse_destroy((rg_llm_sse_t *) s);
}
