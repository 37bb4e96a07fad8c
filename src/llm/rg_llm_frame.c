/* rg_llm_frame.c: text/event-stream framing (the WHATWG rules): LF, CRLF
 * or CR line ends, a byte order mark, comment lines, `event:` and `data:`
 * fields (one space after the colon dropped), data lines joined with LF
 * until a blank line dispatches the event. A body whose first non-blank
 * byte opens a JSON document is not a stream: its first bytes are kept
 * (f->raw) for the codec to read whole, as a 4xx's error is. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_llm_frame.h>


#define rg_llm_frame_field(s, n, lit)                                        \
    ((n) == sizeof(lit) - 1 && memcmp(s, lit, sizeof(lit) - 1) == 0)


static void rg_llm_frame_line(rg_llm_frame_t *f, const char *s, size_t n);


void
rg_llm_frame_init(rg_llm_frame_t *f, rg_llm_frame_pt handler, void *data)
{
    memset(f, 0, sizeof(rg_llm_frame_t));

    f->handler = handler;
    f->handler_data = data;
}


void
rg_llm_frame_free(rg_llm_frame_t *f)
{
    rg_buf_free(&f->line);
    rg_buf_free(&f->event);
    rg_buf_free(&f->data);
    rg_buf_free(&f->raw);
}


static void
rg_llm_frame_append(rg_llm_frame_t *f, rg_buf_t *b, const char *s, size_t n)
{
    if (n && !f->nomem && rg_buf_append(b, s, n) != RG_OK) {
        f->nomem = 1;
    }
}


static void
rg_llm_frame_dispatch(rg_llm_frame_t *f)
{
    if (f->ndata > 0 && !f->nomem) {
        f->handler(f->handler_data, f->event.len ? f->event.data : "",
                   f->event.len, f->data.len ? f->data.data : "",
                   f->data.len);
    }

    f->ndata = 0;
    rg_buf_reset(&f->data);
    rg_buf_reset(&f->event);
}


rg_int_t
rg_llm_frame_cut(rg_buf_t *held, unsigned *cr, const char *data, size_t len,
    rg_llm_line_pt line, void *ctx)
{
    rg_int_t     rc;
    const char  *s, *e, *end;

    s = data;
    end = data + len;

    while (s < end) {

        if (*cr) {
            *cr = 0;

            if (*s == '\n') {
                s++;
                continue;
            }
        }

        for (e = s; e < end && *e != '\n' && *e != '\r'; e++) {
            /* void */
        }

        if (e == end) {
            return rg_buf_append(held, s, (size_t) (end - s));
        }

        if (held->len == 0) {
            rc = line(ctx, s, (size_t) (e - s));

        } else if (rg_buf_append(held, s, (size_t) (e - s)) != RG_OK) {
            return RG_ERROR;

        } else {
            rc = line(ctx, held->data, held->len);
            rg_buf_reset(held);
        }

        *cr = (*e == '\r');
        s = e + 1;

        if (rc != RG_OK) {
            return rc;
        }
    }

    return RG_OK;
}


void
rg_llm_frame_split(const char *s, size_t n, size_t *fn, const char **v,
    size_t *vn)
{
    const char  *colon;

    colon = memchr(s, ':', n);

    if (colon == NULL) {
        *fn = n;
        *v = s + n;
        *vn = 0;
        return;
    }

    *fn = (size_t) (colon - s);
    *v = colon + 1;
    *vn = n - *fn - 1;

    if (*vn > 0 && **v == ' ') {
        (*v)++;
        (*vn)--;
    }
}


static rg_int_t
rg_llm_frame_one(void *data, const char *s, size_t n)
{
    rg_llm_frame_t  *f;

    f = data;
    rg_llm_frame_line(f, s, n);

    return f->nomem ? RG_ERROR : RG_OK;
}


static void
rg_llm_frame_lines(rg_llm_frame_t *f, const char *data, size_t len)
{
    unsigned  cr;

    if (f->nomem) {
        return;
    }

    cr = f->cr;

    if (rg_llm_frame_cut(&f->line, &cr, data, len, rg_llm_frame_one, f)
        != RG_OK)
    {
        f->nomem = 1;
    }

    f->cr = cr;
}


static void
rg_llm_frame_line(rg_llm_frame_t *f, const char *s, size_t n)
{
    size_t       fn, vn;
    const char  *v;

    if (f->nlines++ == 0 && n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
        s += 3;
        n -= 3;
    }

    if (n == 0) {
        rg_llm_frame_dispatch(f);
        return;
    }

    if (s[0] == ':') {
        f->seen = 1;          /* a comment: a keep-alive */
        return;
    }

    rg_llm_frame_split(s, n, &fn, &v, &vn);

    if (rg_llm_frame_field(s, fn, "data")) {
        f->seen = 1;

        if (f->ndata++ > 0) {
            rg_llm_frame_append(f, &f->data, "\n", 1);
        }

        rg_llm_frame_append(f, &f->data, v, vn);
        return;
    }

    if (rg_llm_frame_field(s, fn, "event")) {
        f->seen = 1;
        rg_buf_reset(&f->event);
        rg_llm_frame_append(f, &f->event, v, vn);
        return;
    }

    if (rg_llm_frame_field(s, fn, "id") || rg_llm_frame_field(s, fn, "retry"))
    {
        f->seen = 1;
    }

    /* other fields are ignored */
}


rg_int_t
rg_llm_frame_feed(rg_llm_frame_t *f, const char *data, size_t len)
{
    size_t  i, keep;

    if (f->nomem) {
        return RG_ERROR;
    }

    if (f->ended || len == 0) {
        return RG_OK;
    }

    if (f->mode == RG_LLM_FRAME_UNKNOWN) {
        for (i = 0; i < len; i++) {
            if (data[i] != ' ' && data[i] != '\t' && data[i] != '\r'
                && data[i] != '\n')
            {
                break;
            }
        }

        if (i == len) {
            rg_llm_frame_append(f, &f->raw, data, len);
            return f->nomem ? RG_ERROR : RG_OK;
        }

        f->mode = (data[i] == '{' || data[i] == '[') ? RG_LLM_FRAME_BODY
                                                     : RG_LLM_FRAME_STREAM;

        if (f->mode == RG_LLM_FRAME_STREAM && f->raw.len > 0) {
            rg_llm_frame_lines(f, f->raw.data, f->raw.len);
        }
    }

    if (f->mode == RG_LLM_FRAME_BODY) {
        rg_llm_frame_append(f, &f->raw, data, len);
        return f->nomem ? RG_ERROR : RG_OK;
    }

    /* the first bytes, however they are split: what an error says when
     * the stream turns out to be something else */
    if (f->raw.len < 4096) {
        keep = rg_min(len, 4096 - f->raw.len);
        rg_llm_frame_append(f, &f->raw, data, keep);
    }

    rg_llm_frame_lines(f, data, len);

    return f->nomem ? RG_ERROR : RG_OK;
}


rg_int_t
rg_llm_frame_take(rg_llm_frame_t *f, const char *data, size_t len,
    size_t max)
{
    if (f->nomem || f->too_large) {
        return RG_ERROR;
    }

    if (len > max - f->total) {
        f->too_large = 1;
        return RG_ERROR;
    }

    f->total += len;

    return rg_llm_frame_feed(f, data, len);
}


rg_int_t
rg_llm_frame_end(rg_llm_frame_t *f)
{
    if (f->ended) {
        return f->nomem ? RG_ERROR : RG_OK;
    }

    f->ended = 1;

    if (f->mode == RG_LLM_FRAME_STREAM && !f->nomem) {
        if (f->line.len > 0) {
            rg_llm_frame_line(f, f->line.data, f->line.len);
            rg_buf_reset(&f->line);
        }

        rg_llm_frame_dispatch(f);
    }

    return f->nomem ? RG_ERROR : RG_OK;
}
