/* rg_llm_responses_stream.c: reads a streamed OpenAI Responses answer.
 * The events that matter: response.output_text.delta (the answer's text
 * as it comes), response.output_item.done (each item whole),
 * response.completed / response.incomplete / response.failed (the whole
 * response, read by the same code as a whole answer) and error. A
 * stream cut before its last event is a bad response, its text so far
 * kept. What is kept between events is text, never a jansson value. An
 * event named in its `event:` line is parsed only when it matters (the
 * final one's data, the whole response, is kept as it came and parsed
 * once, at the end): most events repeat what the last one says. No
 * I/O. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json.h>
#include <rg_llm.h>
#include <rg_llm_json.h>
#include <rg_llm_frame.h>
#include <rg_llm_openai.h>
#include <rg_llm_responses.h>

#include <jansson.h>


#define RG_LLM_RS_MAX        (16 * 1024 * 1024)


typedef struct {
    rg_llm_frame_t      frame;

    rg_buf_t            response;   /* the final event's data, as it came */
    rg_buf_t            error;      /* the first error event, JSON */
    rg_buf_t            text;       /* output_text deltas, so far */
    rg_buf_t            reasoning;
    char                bad[JSON_ERROR_TEXT_LENGTH];

    rg_llm_delta_pt     delta;
    void               *delta_data;

    unsigned            ended:1;    /* completed, incomplete or failed */
    unsigned            nomem:1;
    unsigned            malformed:1;
} rg_llm_rs_t;


static void rg_llm_rs_event(void *data, const char *event, size_t elen,
    const char *text, size_t len);


rg_llm_stream_t *
rg_llm_responses_stream_create(rg_uint_t max_calls, rg_llm_delta_pt delta,
    void *data)
{
    rg_llm_rs_t  *p;

    p = calloc(1, sizeof(rg_llm_rs_t));
    if (p == NULL) {
        return NULL;
    }

    rg_llm_frame_init(&p->frame, rg_llm_rs_event, p);
    p->delta = delta;
    p->delta_data = data;

    return (rg_llm_stream_t *) p;
}


void
rg_llm_responses_stream_destroy(rg_llm_stream_t *s)
{
    rg_llm_rs_t  *p;

    p = (rg_llm_rs_t *) s;

    if (p == NULL) {
        return;
    }

    rg_buf_free(&p->response);
    rg_buf_free(&p->error);
    rg_buf_free(&p->text);
    rg_buf_free(&p->reasoning);
    rg_llm_frame_free(&p->frame);
    free(p);
}


rg_int_t
rg_llm_responses_stream_feed(rg_llm_stream_t *s, const char *data,
    size_t len)
{
    rg_llm_rs_t  *p;

    p = (rg_llm_rs_t *) s;

    if (!p->nomem
        && rg_llm_frame_take(&p->frame, data, len, RG_LLM_RS_MAX) == RG_OK)
    {
        return RG_OK;
    }

    p->nomem |= p->frame.nomem;

    return RG_ERROR;
}


static void
rg_llm_rs_keep(rg_llm_rs_t *p, rg_buf_t *b, json_t *v)
{
    if (rg_llm_json_keep(b, v) != RG_OK) {
        p->nomem = 1;
    }
}


static void
rg_llm_rs_append(rg_llm_rs_t *p, rg_buf_t *b, json_t *v)
{
    if (json_is_string(v) && json_string_length(v)
        && rg_buf_append(b, json_string_value(v), json_string_length(v))
           != RG_OK)
    {
        p->nomem = 1;
    }
}


/* the events whose data is never read: the final event holds them all */
static const char  *rg_llm_rs_skip[] = {
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.done",
    "response.refusal.done"
};


static rg_uint_t
rg_llm_rs_named(const char *event, size_t elen, const char *name)
{
    return elen == strlen(name) && memcmp(event, name, elen) == 0;
}


static void
rg_llm_rs_event(void *data, const char *event, size_t elen,
    const char *text, size_t len)
{
    size_t         i;
    json_t        *root, *v;
    rg_int_t       rc;
    const char    *type;
    rg_llm_rs_t   *p;
    json_error_t   err;

    p = data;

    if (p->nomem) {
        return;
    }

    for (i = 0; elen && i < rg_nelems(rg_llm_rs_skip); i++) {
        if (rg_llm_rs_named(event, elen, rg_llm_rs_skip[i])) {
            return;
        }
    }

    /* the whole response: kept as it came, read once at the end */
    if (rg_llm_rs_named(event, elen, "response.completed")
        || rg_llm_rs_named(event, elen, "response.incomplete")
        || rg_llm_rs_named(event, elen, "response.failed"))
    {
        rg_buf_reset(&p->response);

        if (rg_buf_append(&p->response, text, len) != RG_OK) {
            p->nomem = 1;
        }

        p->ended = 1;
        return;
    }

    rc = rg_llm_json_event(text, len, &root, &err);

    if (rc == RG_ERROR) {
        p->nomem = 1;
        return;
    }

    if (rc == RG_DECLINED) {
        if (elen == 5 && memcmp(event, "error", 5) == 0) {
            root = json_pack("{s:s#}", "message", text,
                             (int) rg_min(len, 200));
            rg_llm_rs_keep(p, &p->error, root);
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

    if (strcmp(type, "response.output_text.delta") == 0) {
        v = json_object_get(root, "delta");
        i = p->text.len;
        rg_llm_rs_append(p, &p->text, v);

        if (p->delta && json_is_string(v) && json_string_length(v)) {
            p->delta(p->delta_data, i, json_string_value(v),
                     json_string_length(v));
        }

    } else if (strcmp(type, "response.reasoning_summary_text.delta") == 0
               || strcmp(type, "response.reasoning_text.delta") == 0)
    {
        rg_llm_rs_append(p, &p->reasoning, json_object_get(root, "delta"));

    } else if (strcmp(type, "response.completed") == 0
               || strcmp(type, "response.incomplete") == 0
               || strcmp(type, "response.failed") == 0)
    {
        if (json_is_object(json_object_get(root, "response"))) {
            rg_buf_reset(&p->response);

            if (rg_buf_append(&p->response, text, len) != RG_OK) {
                p->nomem = 1;
            }

            p->ended = 1;
        }

    } else if (strcmp(type, "error") == 0
               || (elen == 5 && memcmp(event, "error", 5) == 0))
    {
        if (p->error.len == 0) {
            v = json_object_get(root, "error");
            rg_llm_rs_keep(p, &p->error, json_is_object(v) ? v : root);
        }
    }

    /* the others (created, in_progress, output_item.*, content_part.*,
     * function_call_arguments.*) are all in the last event's response */

    json_decref(root);
}


static rg_int_t
rg_llm_rs_partial(rg_llm_rs_t *p, rg_pool_t *pool, rg_llm_response_t *r)
{
    if (rg_llm_json_set(pool, &r->content, p->text.data, p->text.len)
        != RG_OK
        || rg_llm_json_set(pool, &r->reasoning, p->reasoning.data,
                           p->reasoning.len) != RG_OK)
    {
        return RG_ERROR;
    }

    r->has_content = r->content.len > 0;

    return RG_OK;
}


rg_int_t
rg_llm_responses_stream_finish(rg_llm_stream_t *s, rg_pool_t *pool,
    const rg_llm_answer_t *a, rg_llm_response_t *r)
{
    int              ok;
    size_t           at;
    json_t          *root, *wrap, *v;
    rg_int_t         rc;
    const char      *name;
    rg_llm_rs_t     *p;
    json_error_t     err;
    rg_llm_answer_t  whole;

    p = (rg_llm_rs_t *) s;

    if (rg_llm_frame_end(&p->frame) != RG_OK || p->nomem) {
        return RG_ERROR;
    }

    ok = (a->http_status >= 200 && a->http_status <= 299);

    if (p->frame.mode != RG_LLM_FRAME_STREAM || !p->frame.seen
        || (!ok && p->error.len == 0))
    {
        whole = *a;
        whole.body = p->frame.raw.len ? p->frame.raw.data : "";
        whole.len = p->frame.raw.len;

        return rg_llm_responses_read(pool, &whole, r);
    }

    rg_llm_response_init(r, a->http_status);

    if (p->error.len) {
        root = json_loadb(p->error.data, p->error.len, 0, NULL);
        wrap = json_pack("{s:o}", "error", root ? root : json_object());
        rc = rg_llm_openai_error(pool, wrap, a->http_status, p->error.data,
                                 p->error.len,
                                 a->hints, r);
        json_decref(wrap);

        return rc == RG_OK ? rg_llm_rs_partial(p, pool, r) : rc;
    }

    if (p->frame.too_large) {
        rc = rg_llm_json_bad(pool, r, "the stream is larger than 16 MiB",
                             NULL);

    } else if (!p->ended) {
        rc = rg_llm_json_bad(pool, r, "the stream ended before the answer "
                             "was complete", NULL);

    } else {
        /* the event's response, of the members that are read */
        name = "response";
        v = NULL;
        root = NULL;

        if (rg_llm_json_members(p->response.data, p->response.len, &name,
                                &at, 1) == RG_OK
            && at != (size_t) -1)
        {
            v = rg_llm_responses_load(p->response.data + at,
                                      p->response.len - at);
            root = v;
        }

        if (v == NULL) {
            root = rg_llm_json_load(p->response.data, p->response.len,
                                    &err);
            v = json_object_get(root, "response");
        }

        if (!json_is_object(v)) {
            json_decref(root);
            rc = rg_llm_json_bad(pool, r, "the stream's last event has no "
                                 "response", NULL);
            return rc == RG_OK ? rg_llm_rs_partial(p, pool, r) : rc;
        }

        rc = rg_llm_responses_response(pool, v, a, r);
        json_decref(root);

        if (rc == RG_OK && r->status != RG_LLM_OK) {
            return rg_llm_rs_partial(p, pool, r);
        }

        return rc;
    }

    return rc == RG_OK ? rg_llm_rs_partial(p, pool, r) : rc;
}
