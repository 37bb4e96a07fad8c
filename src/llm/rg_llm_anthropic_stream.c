/* rg_llm_anthropic_stream.c: reads a streamed Anthropic Messages answer:
 * message_start, content_block_start / _delta (text_delta,
 * input_json_delta split anywhere, thinking_delta, signature_delta) /
 * _stop, message_delta, message_stop, ping, and error events inside the
 * 200 (overloaded mid-stream: retried). Each block is added up by its
 * index; at the end the message they amount to is read by the same code
 * as a whole answer (rg_llm_anthropic_message). What is kept between
 * events is text, never a jansson value (a caller may wrap each feed in
 * a jansson arena). No I/O. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json.h>
#include <rg_llm.h>
#include <rg_llm_json.h>
#include <rg_llm_frame.h>
#include <rg_llm_anthropic.h>

#include <jansson.h>


/* the most blocks an answer may have: one per tool call, and some */
#define RG_LLM_AS_BLOCKS     (RG_LLM_MAX_CALLS * 2 + 64)

/* the most a stream may send */
#define RG_LLM_AS_MAX        (16 * 1024 * 1024)


typedef struct {
    int64_t             index;
    rg_buf_t            type;
    rg_buf_t            start;      /* content_block_start's block, JSON */
    rg_buf_t            text;       /* text, thinking */
    rg_buf_t            signature;
    rg_buf_t            json;       /* input_json_delta, joined */
    unsigned            stopped:1;
} rg_llm_as_block_t;


typedef struct {
    rg_llm_frame_t      frame;
    rg_llm_as_block_t  *blocks;     /* by index */
    rg_uint_t           nblocks;
    rg_uint_t           nalloc;
    rg_uint_t           max_calls;

    rg_buf_t            usage;      /* message_start's, JSON */
    rg_buf_t            usage_end;  /* message_delta's, JSON */
    rg_buf_t            stop_reason;
    rg_buf_t            stop_details; /* JSON: a refusal's explanation */
    rg_buf_t            error;      /* the first error event, JSON */
    char                bad[JSON_ERROR_TEXT_LENGTH];

    rg_llm_delta_pt     delta;
    void               *delta_data;
    size_t              said;       /* bytes of text given to delta */

    unsigned            started:1;  /* message_start */
    unsigned            done:1;     /* message_stop */
    unsigned            nomem:1;
    unsigned            malformed:1;
    unsigned            overflow:1;
} rg_llm_as_t;


static void rg_llm_as_event(void *data, const char *event, size_t elen,
    const char *text, size_t len);


rg_llm_stream_t *
rg_llm_anthropic_stream_create(rg_uint_t max_calls, rg_llm_delta_pt delta,
    void *data)
{
    rg_llm_as_t  *p;

    p = calloc(1, sizeof(rg_llm_as_t));
    if (p == NULL) {
        return NULL;
    }

    rg_llm_frame_init(&p->frame, rg_llm_as_event, p);
    p->max_calls = max_calls;
    p->delta = delta;
    p->delta_data = data;

    return (rg_llm_stream_t *) p;
}


void
rg_llm_anthropic_stream_destroy(rg_llm_stream_t *s)
{
    rg_uint_t     i;
    rg_llm_as_t  *p;

    p = (rg_llm_as_t *) s;

    if (p == NULL) {
        return;
    }

    for (i = 0; i < p->nblocks; i++) {
        rg_buf_free(&p->blocks[i].type);
        rg_buf_free(&p->blocks[i].start);
        rg_buf_free(&p->blocks[i].text);
        rg_buf_free(&p->blocks[i].signature);
        rg_buf_free(&p->blocks[i].json);
    }

    free(p->blocks);
    rg_buf_free(&p->usage);
    rg_buf_free(&p->usage_end);
    rg_buf_free(&p->stop_reason);
    rg_buf_free(&p->stop_details);
    rg_buf_free(&p->error);
    rg_llm_frame_free(&p->frame);
    free(p);
}


rg_int_t
rg_llm_anthropic_stream_feed(rg_llm_stream_t *s, const char *data,
    size_t len)
{
    rg_llm_as_t  *p;

    p = (rg_llm_as_t *) s;

    if (!p->nomem
        && rg_llm_frame_take(&p->frame, data, len, RG_LLM_AS_MAX) == RG_OK)
    {
        return RG_OK;
    }

    p->nomem |= p->frame.nomem;

    return RG_ERROR;
}


static void
rg_llm_as_append(rg_llm_as_t *p, rg_buf_t *b, const char *s, size_t n)
{
    if (n && !p->nomem && rg_buf_append(b, s, n) != RG_OK) {
        p->nomem = 1;
    }
}


static void
rg_llm_as_append_str(rg_llm_as_t *p, rg_buf_t *b, json_t *v)
{
    if (json_is_string(v)) {
        rg_llm_as_append(p, b, json_string_value(v), json_string_length(v));
    }
}


/* keeps v as JSON text in b, in place of what b held */
static void
rg_llm_as_keep(rg_llm_as_t *p, rg_buf_t *b, json_t *v)
{
    if (v == NULL) {
        return;
    }

    if (rg_llm_json_keep(b, v) != RG_OK) {
        p->nomem = 1;
    }
}


/* the block of index, made when new (NULL past the cap or out of
 * memory) */
static rg_llm_as_block_t *
rg_llm_as_block(rg_llm_as_t *p, json_t *index, rg_uint_t make)
{
    int64_t             i;
    rg_uint_t           lo, hi, mid, n;
    rg_llm_as_block_t  *b;

    if (!json_is_integer(index) || json_integer_value(index) < 0) {
        return NULL;
    }

    i = (int64_t) json_integer_value(index);
    lo = 0;
    hi = p->nblocks;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;

        if (p->blocks[mid].index < i) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }

    if (lo < p->nblocks && p->blocks[lo].index == i) {
        return &p->blocks[lo];
    }

    if (!make) {
        return NULL;
    }

    if (p->nblocks == RG_LLM_AS_BLOCKS) {
        p->overflow = 1;
        return NULL;
    }

    if (p->nblocks == p->nalloc) {
        n = p->nalloc ? 2 * p->nalloc : 4;

        b = realloc(p->blocks, n * sizeof(rg_llm_as_block_t));
        if (b == NULL) {
            p->nomem = 1;
            return NULL;
        }

        p->blocks = b;
        p->nalloc = n;
    }

    b = &p->blocks[lo];
    memmove(b + 1, b, (p->nblocks - lo) * sizeof(rg_llm_as_block_t));
    memset(b, 0, sizeof(rg_llm_as_block_t));
    b->index = i;
    p->nblocks++;

    return b;
}


static void
rg_llm_as_start(rg_llm_as_t *p, json_t *root)
{
    json_t             *cb, *v;
    rg_llm_as_block_t  *b;

    cb = json_object_get(root, "content_block");
    if (!json_is_object(cb)) {
        return;
    }

    b = rg_llm_as_block(p, json_object_get(root, "index"), 1);
    if (b == NULL) {
        return;
    }

    rg_buf_reset(&b->type);
    rg_llm_as_append_str(p, &b->type, json_object_get(cb, "type"));
    rg_llm_as_keep(p, &b->start, cb);

    /* what a start may already carry */
    rg_llm_as_append_str(p, &b->text, json_object_get(cb, "text"));
    rg_llm_as_append_str(p, &b->text, json_object_get(cb, "thinking"));
    rg_llm_as_append_str(p, &b->signature, json_object_get(cb, "signature"));

    v = json_object_get(cb, "text");
    if (p->delta && json_is_string(v) && json_string_length(v)) {
        p->delta(p->delta_data, p->said, json_string_value(v),
                 json_string_length(v));
        p->said += json_string_length(v);
    }
}


static void
rg_llm_as_delta(rg_llm_as_t *p, json_t *root)
{
    json_t             *d, *v;
    const char         *type;
    rg_llm_as_block_t  *b;

    d = json_object_get(root, "delta");
    type = json_string_value(json_object_get(d, "type"));

    /* a delta of a block never started: made, so nothing is lost */
    b = rg_llm_as_block(p, json_object_get(root, "index"), 1);
    if (b == NULL || type == NULL) {
        return;
    }

    if (strcmp(type, "text_delta") == 0) {
        v = json_object_get(d, "text");
        rg_llm_as_append_str(p, &b->text, v);

        if (b->type.len == 0) {
            rg_llm_as_append(p, &b->type, "text", 4);
        }

        if (p->delta && json_is_string(v) && json_string_length(v)) {
            p->delta(p->delta_data, p->said, json_string_value(v),
                     json_string_length(v));
            p->said += json_string_length(v);
        }

    } else if (strcmp(type, "input_json_delta") == 0) {
        rg_llm_as_append_str(p, &b->json, json_object_get(d, "partial_json"));

    } else if (strcmp(type, "thinking_delta") == 0) {
        rg_llm_as_append_str(p, &b->text, json_object_get(d, "thinking"));

    } else if (strcmp(type, "signature_delta") == 0) {
        rg_llm_as_append_str(p, &b->signature,
                             json_object_get(d, "signature"));
    }

    /* citations_delta and others: what they add is not the answer */
}


/* one event of the stream */
static void
rg_llm_as_event(void *data, const char *event, size_t elen,
    const char *text, size_t len)
{
    json_t             *root, *d;
    rg_int_t            rc;
    const char         *type;
    rg_llm_as_t        *p;
    json_error_t        err;
    rg_llm_as_block_t  *blk;

    p = data;

    if (p->nomem) {
        return;
    }

    rc = rg_llm_json_event(text, len, &root, &err);

    if (rc == RG_ERROR) {
        p->nomem = 1;
        return;
    }

    if (rc == RG_DECLINED) {
        /* an error event that is not JSON still says something */
        if (elen == 5 && memcmp(event, "error", 5) == 0) {
            root = json_pack("{s:{s:s, s:s#}}", "error", "type", "api_error",
                             "message", text, (int) rg_min(len, 200));
            rg_llm_as_keep(p, &p->error, root);
            json_decref(root);

        } else if (!p->malformed) {
            p->malformed = 1;
            rg_llm_json_why(p->bad, sizeof(p->bad), &err);
        }
    }

    if (rc != RG_OK) {
        return;
    }

    type = json_string_value(json_object_get(root, "type"));
    if (type == NULL) {
        type = "";
    }

    if (strcmp(type, "content_block_delta") == 0) {
        rg_llm_as_delta(p, root);

    } else if (strcmp(type, "content_block_start") == 0) {
        rg_llm_as_start(p, root);

    } else if (strcmp(type, "content_block_stop") == 0) {
        blk = rg_llm_as_block(p, json_object_get(root, "index"), 0);
        if (blk) {
            blk->stopped = 1;
        }

    } else if (strcmp(type, "message_start") == 0) {
        p->started = 1;
        rg_llm_as_keep(p, &p->usage,
                       json_object_get(json_object_get(root, "message"),
                                       "usage"));

    } else if (strcmp(type, "message_delta") == 0) {
        d = json_object_get(json_object_get(root, "delta"), "stop_reason");

        if (json_is_string(d)) {
            rg_buf_reset(&p->stop_reason);
            rg_llm_as_append_str(p, &p->stop_reason, d);
        }

        d = json_object_get(json_object_get(root, "delta"), "stop_details");

        if (json_is_object(d)) {
            rg_llm_as_keep(p, &p->stop_details, d);
        }

        rg_llm_as_keep(p, &p->usage_end, json_object_get(root, "usage"));

    } else if (strcmp(type, "message_stop") == 0) {
        p->done = 1;

    } else if (strcmp(type, "error") == 0
               || (elen == 5 && memcmp(event, "error", 5) == 0)
               || json_is_object(json_object_get(root, "error")))
    {
        if (p->error.len == 0) {
            rg_llm_as_keep(p, &p->error, root);
        }
    }

    /* ping and events to come are ignored */

    json_decref(root);
}


static json_t *
rg_llm_as_str(rg_buf_t *b)
{
    return json_stringn(b->len ? b->data : "", b->len);
}


/* a block as a whole answer has it */
static json_t *
rg_llm_as_block_json(rg_llm_as_block_t *b)
{
    json_t  *block, *input;

    if (rg_str_eq(&b->type, "text")) {
        return json_pack("{s:s, s:o}", "type", "text", "text",
                         rg_llm_as_str(&b->text));
    }

    if (rg_str_eq(&b->type, "thinking")) {
        return json_pack("{s:s, s:o, s:o}", "type", "thinking",
                         "thinking", rg_llm_as_str(&b->text),
                         "signature", rg_llm_as_str(&b->signature));
    }

    block = b->start.len ? json_loadb(b->start.data, b->start.len, 0, NULL)
                         : json_object();
    if (!json_is_object(block)) {
        json_decref(block);
        return NULL;
    }

    if (b->json.len || rg_str_eq(&b->type, "tool_use")) {
        input = b->json.len ? json_loadb(b->json.data, b->json.len, 0, NULL)
                            : NULL;

        /* cut (max_tokens) or broken: the text as it came, for the
         * arguments' repair; none at all is an empty input */
        if (input == NULL) {
            input = b->json.len ? rg_llm_as_str(&b->json) : NULL;
        }

        if (input != NULL) {
            json_object_set_new(block, "input", input);
        }
    }

    return block;
}


/* the message the stream amounts to */
static json_t *
rg_llm_as_message(rg_llm_as_t *p)
{
    int         err;
    json_t     *msg, *content, *usage, *end, *v;
    rg_uint_t   i;
    const char *key;

    msg = json_object();
    content = json_array();
    err = (msg == NULL || content == NULL);

    for (i = 0; !err && i < p->nblocks; i++) {
        err |= json_array_append_new(content,
                                     rg_llm_as_block_json(&p->blocks[i]));
    }

    err |= json_object_set_new(msg, "content", content);

    if (p->stop_reason.len) {
        err |= json_object_set_new(msg, "stop_reason",
                                   rg_llm_as_str(&p->stop_reason));
    }

    if (p->stop_details.len) {
        err |= json_object_set_new(msg, "stop_details",
                                   json_loadb(p->stop_details.data,
                                              p->stop_details.len, 0, NULL));
    }

    /* message_delta's usage is the latest: it wins where it speaks */
    usage = p->usage.len ? json_loadb(p->usage.data, p->usage.len, 0, NULL)
                         : json_object();
    end = p->usage_end.len ? json_loadb(p->usage_end.data, p->usage_end.len,
                                        0, NULL)
                           : NULL;

    json_object_foreach(end, key, v) {
        if (!json_is_null(v)) {
            json_object_set(usage, key, v);
        }
    }

    json_decref(end);
    err |= json_object_set_new(msg, "usage", usage);

    if (err) {
        json_decref(msg);
        return NULL;
    }

    return msg;
}


/* what arrived before a failure: the text, nothing to act on */
static rg_int_t
rg_llm_as_partial(rg_llm_as_t *p, rg_pool_t *pool, rg_llm_response_t *r)
{
    rg_int_t   rc;
    rg_buf_t   text, thinking;
    rg_uint_t  i;

    memset(&text, 0, sizeof(rg_buf_t));
    memset(&thinking, 0, sizeof(rg_buf_t));
    rc = RG_OK;

    for (i = 0; rc == RG_OK && i < p->nblocks; i++) {
        if (p->blocks[i].text.len == 0) {
            continue;
        }

        rc = rg_buf_append(rg_str_eq(&p->blocks[i].type, "thinking")
                           ? &thinking : &text,
                           p->blocks[i].text.data, p->blocks[i].text.len);
    }

    if (rc == RG_OK) {
        rc = rg_llm_json_set(pool, &r->content, text.data, text.len);
        rc |= rg_llm_json_set(pool, &r->reasoning, thinking.data,
                              thinking.len);
        r->has_content = r->content.len > 0;
    }

    rg_buf_free(&text);
    rg_buf_free(&thinking);

    return rc == RG_OK ? RG_OK : RG_ERROR;
}


rg_int_t
rg_llm_anthropic_stream_finish(rg_llm_stream_t *s, rg_pool_t *pool,
    const rg_llm_answer_t *a, rg_llm_response_t *r)
{
    int              ok;
    json_t          *root;
    rg_int_t         rc;
    rg_llm_as_t     *p;
    rg_llm_answer_t  whole;

    p = (rg_llm_as_t *) s;

    if (rg_llm_frame_end(&p->frame) != RG_OK || p->nomem) {
        return RG_ERROR;
    }

    ok = (a->http_status >= 200 && a->http_status <= 299);

    /* not a stream: an error of a 4xx, a server that ignored "stream" */
    if (p->frame.mode != RG_LLM_FRAME_STREAM || !p->frame.seen
        || (!ok && p->error.len == 0))
    {
        whole = *a;
        whole.body = p->frame.raw.len ? p->frame.raw.data : "";
        whole.len = p->frame.raw.len;

        return rg_llm_anthropic_read(pool, &whole, r);
    }

    rg_llm_response_init(r, a->http_status);

    if (p->error.len) {
        root = json_loadb(p->error.data, p->error.len, 0, NULL);
        rc = rg_llm_anthropic_error(pool, root, a->http_status, p->error.data,
                                    p->error.len, a->hints, r);
        json_decref(root);

        return rc == RG_OK ? rg_llm_as_partial(p, pool, r) : rc;
    }

    if (p->frame.too_large) {
        rc = rg_llm_json_bad(pool, r, "the stream is larger than 16 MiB",
                             NULL);

    } else if (!p->done && p->stop_reason.len == 0) {
        rc = rg_llm_json_bad(pool, r, "the stream ended before the answer "
                             "was complete", NULL);

    } else if (p->malformed) {
        rc = rg_llm_json_bad(pool, r, "malformed event in the stream: ",
                             p->bad);

    } else if (p->overflow) {
        rc = rg_llm_json_bad(pool, r, "too many content blocks in the "
                             "stream", NULL);

    } else {
        root = rg_llm_as_message(p);
        if (root == NULL) {
            return RG_ERROR;
        }

        rc = rg_llm_anthropic_message(pool, root, a, r);
        json_decref(root);

        return rc;
    }

    return rc == RG_OK ? rg_llm_as_partial(p, pool, r) : rc;
}
