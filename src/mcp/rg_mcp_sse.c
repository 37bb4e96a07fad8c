/* rg_mcp_sse.c: Server-Sent Events as the HTML standard reads them:
 * lines end in CRLF, LF or CR; "field: value" (one blank after the colon
 * is dropped), "field" alone, ":" a comment; data lines are joined with
 * a line feed; a blank line dispatches the event; id (without NUL)
 * becomes the last event id, retry (digits only) the reconnection time.
 * An event with no data, MCP's priming event, is not dispatched. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_mcp_sse.h>


static const unsigned char  rg_mcp_sse_bom[3] = { 0xef, 0xbb, 0xbf };


void
rg_mcp_sse_init(rg_mcp_sse_t *p, size_t max)
{
    memset(p, 0, sizeof(rg_mcp_sse_t));
    p->retry = -1;
    p->max = max;
}


static void
rg_mcp_sse_dispatch(rg_mcp_sse_t *p, rg_mcp_sse_pt cb, void *data)
{
    size_t  len;

    if (p->has_data) {
        len = p->data.len;

        /* the last line feed is the joiner's */
        if (len && p->data.data[len - 1] == '\n') {
            len--;
        }

        if (len) {
            cb(data, p->event[0] ? p->event : "message", p->data.data, len);
        }
    }

    rg_buf_reset(&p->data);
    p->has_data = 0;
    p->event[0] = '\0';
}


static rg_int_t
rg_mcp_sse_line(rg_mcp_sse_t *p, const char *s, size_t n, rg_mcp_sse_pt cb,
    void *data)
{
    size_t       flen, vlen, i;
    int64_t      v;
    const char  *colon, *value;

    if (n == 0) {
        rg_mcp_sse_dispatch(p, cb, data);
        return RG_OK;
    }

    if (s[0] == ':') {
        return RG_OK;                  /* a comment: a keepalive */
    }

    colon = memchr(s, ':', n);

    if (colon) {
        flen = colon - s;
        value = colon + 1;
        vlen = n - flen - 1;

        if (vlen && *value == ' ') {
            value++;
            vlen--;
        }

    } else {
        flen = n;
        value = "";
        vlen = 0;
    }

    if (flen == 4 && memcmp(s, "data", 4) == 0) {
        if (p->data.len + vlen + 1 > p->max) {
            return RG_ERROR;
        }

        if (rg_buf_append(&p->data, value, vlen) != RG_OK
            || rg_buf_append_lit(&p->data, "\n") != RG_OK)
        {
            return RG_ERROR;
        }

        p->has_data = 1;
        return RG_OK;
    }

    if (flen == 5 && memcmp(s, "event", 5) == 0) {
        snprintf(p->event, sizeof(p->event), "%.*s", (int) vlen, value);
        return RG_OK;
    }

    if (flen == 2 && memcmp(s, "id", 2) == 0) {
        if (memchr(value, '\0', vlen) == NULL && vlen < sizeof(p->last_id)) {
            memcpy(p->last_id, value, vlen);
            p->last_id[vlen] = '\0';
        }
        return RG_OK;
    }

    if (flen == 5 && memcmp(s, "retry", 5) == 0) {
        v = 0;

        for (i = 0; i < vlen; i++) {
            if (value[i] < '0' || value[i] > '9' || v > 86400000) {
                return RG_OK;          /* not a number: ignored */
            }
            v = v * 10 + (value[i] - '0');
        }

        if (vlen) {
            p->retry = v;
        }
        return RG_OK;
    }

    return RG_OK;                      /* a field it does not know */
}


rg_int_t
rg_mcp_sse_feed(rg_mcp_sse_t *p, const char *buf, size_t len,
    rg_mcp_sse_pt cb, void *data)
{
    const char  *end, *q;

    if (p->failed) {
        return RG_ERROR;
    }

    end = buf + len;

    /* a byte order mark may open the stream, split like anything */
    while (!p->started && buf < end) {
        if ((unsigned char) *buf == rg_mcp_sse_bom[p->bom]) {
            buf++;
            if (++p->bom == 3) {
                p->started = 1;
            }
            continue;
        }

        p->started = 1;

        /* what looked like one was text */
        if (p->bom && rg_buf_append(&p->line, rg_mcp_sse_bom, p->bom)
                      != RG_OK)
        {
            p->failed = 1;
            return RG_ERROR;
        }
    }

    while (buf < end) {
        /* a \n right after a \r ends the same line */
        if (p->cr) {
            p->cr = 0;
            if (*buf == '\n') {
                buf++;
                continue;
            }
        }

        for (q = buf; q < end && *q != '\n' && *q != '\r'; q++) {
            /* void */
        }

        if (p->line.len + (size_t) (q - buf) > p->max + 64) {
            p->failed = 1;
            return RG_ERROR;
        }

        if (q > buf && rg_buf_append(&p->line, buf, q - buf) != RG_OK) {
            p->failed = 1;
            return RG_ERROR;
        }

        if (q == end) {
            break;
        }

        p->cr = *q == '\r';

        if (rg_mcp_sse_line(p, p->line.data ? p->line.data : "",
                            p->line.len, cb, data) != RG_OK)
        {
            p->failed = 1;
            return RG_ERROR;
        }

        rg_buf_reset(&p->line);
        buf = q + 1;
    }

    return RG_OK;
}


void
rg_mcp_sse_end(rg_mcp_sse_t *p)
{
    rg_buf_free(&p->line);
    rg_buf_free(&p->data);
    p->has_data = 0;
    p->cr = 0;
    p->started = 0;
    p->bom = 0;
    p->failed = 0;
    p->event[0] = '\0';
}
