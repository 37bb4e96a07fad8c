/* rg_tool_trim.c: what a tool sends back, made fit for the model: a long
 * result cut to its head and tail at UTF-8 boundaries with a note of what
 * was left out, and error objects {"error","hint"} of valid UTF-8. Keeps
 * no state and knows nothing of the conversation. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_args.h>
#include <rg_tool_text.h>


size_t
rg_tool_trim(const char *in, size_t len, size_t limit, rg_buf_t *out)
{
    size_t  head, tail, h, t, i, left;

    if (len <= limit) {
        return rg_buf_append(out, in, len) == RG_OK ? 0 : RG_TOOL_TRIM_ERROR;
    }

    /* 70% and 20% of limit, without limit * 7 overflowing */
    head = limit / 10 * 7 + limit % 10 * 7 / 10;
    tail = limit / 10 * 2 + limit % 10 * 2 / 10;

    /* back off to the start of a character at the head, and forward past
     * the rest of one at the tail; at most 3 bytes either way */
    h = rg_tool_utf8_boundary(in, head);
    t = len - tail;

    for (i = 0; i < 3 && t < len && rg_tool_utf8_cont(in[t]); i++) {
        t++;
    }

    left = t - h;

    if (rg_buf_append(out, in, h) != RG_OK
        || rg_buf_printf(out, "\n[… %zu bytes left out …]\n", left) != RG_OK
        || rg_buf_append(out, in + t, len - t) != RG_OK)
    {
        return RG_TOOL_TRIM_ERROR;
    }

    return left;
}


/* s as valid UTF-8 of at most RG_TOOL_ERROR_MAX bytes, "…" when cut */
static rg_int_t
rg_tool_args_error_text(rg_buf_t *b, const char *s)
{
    size_t  n, used;

    n = strlen(s);
    rg_buf_reset(b);

    if (rg_tool_utf8_copy(b, s, n, RG_TOOL_ERROR_MAX, &used) != RG_OK) {
        return RG_ERROR;
    }

    if (used == n) {
        return rg_buf_append(b, "", 0);     /* a buffer even for "" */
    }

    rg_buf_reset(b);

    if (rg_tool_utf8_copy(b, s, n, RG_TOOL_ERROR_MAX - 3, &used)
        != RG_OK)
    {
        return RG_ERROR;
    }

    return rg_buf_append_lit(b, "…");
}


char *
rg_tool_error_json(const char *error, const char *hint, size_t *len)
{
    char      *s;
    json_t    *o;
    rg_buf_t   b;

    s = NULL;
    memset(&b, 0, sizeof(rg_buf_t));

    o = json_object();
    if (o == NULL) {
        goto done;
    }

    if (rg_tool_args_error_text(&b, error ? error : "") != RG_OK
        || json_object_set_new(o, "error", json_stringn(b.data, b.len)) != 0)
    {
        goto done;
    }

    if (hint) {
        if (rg_tool_args_error_text(&b, hint) != RG_OK
            || json_object_set_new(o, "hint", json_stringn(b.data, b.len)) != 0)
        {
            goto done;
        }
    }

    s = json_dumps(o, JSON_COMPACT);

done:

    json_decref(o);
    rg_buf_free(&b);

    if (len) {
        *len = s ? strlen(s) : 0;
    }

    return s;
}
