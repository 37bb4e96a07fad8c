/* rg_mock_sse.c: builds the server-sent events of a streamed answer, in
 * any of the mock's formats: "event: NAME" (when the format names its
 * events), "data: JSON", an empty line; CRLF with --stream-crlf and a
 * ": keep-alive" comment between events with --stream-comments. Owns the
 * event buffer until rg_mock_stream_done() hands it to the reply; sending
 * the events is rg_mock_reply.c's. */

#include <stdlib.h>
#include <string.h>

#include "rg_mock.h"


rg_mock_stream_t *
rg_mock_stream_new(void)
{
    rg_mock_stream_t  *s;

    s = calloc(1, sizeof(rg_mock_stream_t));
    if (s == NULL) {
        return NULL;
    }

    s->events = evbuffer_new();
    if (s->events == NULL) {
        free(s);
        return NULL;
    }

    return s;
}


void
rg_mock_stream_free(rg_mock_stream_t *s)
{
    if (s == NULL) {
        return;
    }

    if (s->events != NULL) {
        evbuffer_free(s->events);
    }

    free(s->sizes);
    free(s);
}


/* Appends one event: "event: " name (NULL: none), "data: " and the JSON
 * of data (NULL: [DONE]), led by a comment when it is not the first and
 * --stream-comments is on. */

rg_int_t
rg_mock_stream_event(rg_mock_stream_t *s, const char *name, json_t *data)
{
    size_t            before, *sizes, cap;
    rg_int_t          rc;
    const char       *eol;
    struct evbuffer  *b;

    b = s->events;
    eol = rg_mock.conf.stream_crlf ? "\r\n" : "\n";
    before = evbuffer_get_length(b);

    if (s->nsizes == s->cap) {
        cap = s->cap ? 2 * s->cap : 16;
        sizes = realloc(s->sizes, cap * sizeof(size_t));
        if (sizes == NULL) {
            return RG_ERROR;
        }

        s->sizes = sizes;
        s->cap = cap;
    }

    if (s->nsizes > 0 && rg_mock.conf.stream_comments
        && evbuffer_add_printf(b, ": keep-alive%s%s", eol, eol) < 0)
    {
        return RG_ERROR;
    }

    if (name != NULL
        && evbuffer_add_printf(b, "event: %s%s", name, eol) < 0)
    {
        return RG_ERROR;
    }

    if (evbuffer_add(b, "data: ", 6) != 0) {
        return RG_ERROR;
    }

    if (data != NULL) {
        rc = rg_mock_dump(b, data);

    } else {
        rc = evbuffer_add(b, "[DONE]", 6) == 0 ? RG_OK : RG_ERROR;
    }

    if (rc != RG_OK || evbuffer_add_printf(b, "%s%s", eol, eol) < 0) {
        return RG_ERROR;
    }

    s->sizes[s->nsizes++] = evbuffer_get_length(b) - before;

    return RG_OK;
}


/* Hands the events of s to the reply r (s is r's now, or freed) and says
 * so in the log note; a scripted stream error makes the reply a fault. */

rg_int_t
rg_mock_stream_done(rg_mock_stream_t *s, rg_mock_conv_t *c,
    rg_mock_reply_t *r)
{
    size_t  len;

    if (s->nsizes == 0) {
        rg_mock_stream_free(s);
        return RG_ERROR;
    }

    len = strlen(r->note);
    snprintf(r->note + len, sizeof(r->note) - len, ", %zu events%s",
             s->nsizes, c->stream_error ? ", stream error" : "");

    if (c->stream_error != NULL) {
        r->kind = RG_MOCK_FAULT;
    }

    r->stream = s;

    return RG_OK;
}
