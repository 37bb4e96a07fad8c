/* rg_tool_text.c: the text of what goes back to the model, for the
 * argument and result hygiene of rg_tool_repair.c, rg_tool_schema.c and
 * rg_tool_trim.c: UTF-8 checks and cuts that never split a character, and
 * one-line messages built in the caller's buffer. Keeps no state and
 * allocates nothing but what jansson's quoting needs. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_args.h>
#include <rg_tool_text.h>


/* UTF-8 -------------------------------------------------------------- */

/* the length of the valid UTF-8 character at p (n bytes readable), 0 when
 * the bytes there are not one */
size_t
rg_tool_utf8_len(const unsigned char *p, size_t n)
{
    size_t          len, i;
    unsigned char   c, lo, hi;

    c = p[0];

    if (c < 0x80) {
        return 1;
    }

    if (c < 0xc2) {
        return 0;
    }

    if (c < 0xe0) {
        len = 2;
        lo = 0x80;
        hi = 0xbf;

    } else if (c < 0xf0) {
        len = 3;
        lo = (c == 0xe0) ? 0xa0 : 0x80;
        hi = (c == 0xed) ? 0x9f : 0xbf;

    } else if (c < 0xf5) {
        len = 4;
        lo = (c == 0xf0) ? 0x90 : 0x80;
        hi = (c == 0xf4) ? 0x8f : 0xbf;

    } else {
        return 0;
    }

    if (n < len || p[1] < lo || p[1] > hi) {
        return 0;
    }

    for (i = 2; i < len; i++) {
        if (!rg_tool_utf8_cont(p[i])) {
            return 0;
        }
    }

    return len;
}


/* the largest m <= n such that s[0..m) does not end inside a character
 * that started before n; reads only s[n - 3 .. n - 1] */
size_t
rg_tool_utf8_boundary(const char *s, size_t n)
{
    size_t          i, need;
    unsigned char   c;

    for (i = 1; i <= 3 && i <= n; i++) {
        c = (unsigned char) s[n - i];

        if (rg_tool_utf8_cont(c)) {
            continue;
        }

        if (c >= 0xf0) {
            need = 4;

        } else if (c >= 0xe0) {
            need = 3;

        } else if (c >= 0xc0) {
            need = 2;

        } else {
            need = 1;
        }

        return need > i ? n - i : n;
    }

    return n;
}


/* copies s[0..n) to b, an invalid byte as U+FFFD, while b gets at most
 * max more bytes; *used gets the bytes of s copied */
rg_int_t
rg_tool_utf8_copy(rg_buf_t *b, const char *s, size_t n, size_t max,
    size_t *used)
{
    size_t       i, k, out;
    const char  *rep;

    i = 0;
    out = 0;

    while (i < n) {
        k = rg_tool_utf8_len((const unsigned char *) s + i, n - i);

        if (k) {
            rep = s + i;

        } else {
            rep = "\xef\xbf\xbd";
        }

        if (out + (k ? k : 3) > max) {
            break;
        }

        if (rg_buf_append(b, rep, k ? k : 3) != RG_OK) {
            return RG_ERROR;
        }

        out += k ? k : 3;
        i += k ? k : 1;
    }

    *used = i;

    return RG_OK;
}


/* messages ------------------------------------------------------------ */

void
rg_tool_msg_init(rg_tool_msg_t *m, char *buf, size_t size)
{
    m->data = buf;
    m->len = 0;
    m->size = buf ? size : 0;
    m->cut = 0;

    if (m->size) {
        buf[0] = '\0';
    }
}


void
rg_tool_msg_printf(rg_tool_msg_t *m, const char *fmt, ...)
{
    int      n;
    size_t   room;
    va_list  ap;

    if (m->size == 0 || m->cut) {
        return;
    }

    room = m->size - m->len;

    va_start(ap, fmt);
    n = vsnprintf(m->data + m->len, room, fmt, ap);
    va_end(ap);

    if (n < 0) {
        m->data[m->len] = '\0';
        return;
    }

    if ((size_t) n >= room) {
        m->len = m->size - 1;
        m->cut = 1;
        return;
    }

    m->len += n;
}


/* ends the message: cut at a character boundary, every invalid byte made
 * '?' and every control character a blank, so that it is one line of
 * valid UTF-8 */
void
rg_tool_msg_done(rg_tool_msg_t *m)
{
    size_t          i, k;
    unsigned char  *p;

    if (m->size == 0) {
        return;
    }

    if (m->cut) {
        m->len = rg_tool_utf8_boundary(m->data, m->len);
    }

    m->data[m->len] = '\0';
    p = (unsigned char *) m->data;

    for (i = 0; i < m->len; /* void */) {
        if (p[i] < 0x20 || p[i] == 0x7f) {
            p[i++] = ' ';
            continue;
        }

        k = rg_tool_utf8_len(p + i, m->len - i);

        if (k == 0) {
            p[i++] = '?';
            continue;
        }

        i += k;
    }
}


/* a number as JSON writes it, reals in the fewest digits that read back
 * the same (0.1, not 0.10000000000000001), integral reals with ".0" */
void
rg_tool_number_text(json_t *v, char *buf, size_t size)
{
    int      p;
    double   d;

    if (json_is_integer(v)) {
        snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return;
    }

    d = json_number_value(v);

    for (p = 15; p <= 17; p++) {
        snprintf(buf, size, "%.*g", p, d);

        if (strtod(buf, NULL) == d) {
            break;
        }
    }

    if (strpbrk(buf, ".eEni") == NULL) {
        p = (int) strlen(buf);
        snprintf(buf + p, size - p, ".0");
    }
}


/* a string in JSON quotes, cut to max bytes with "…" inside the quotes */
void
rg_tool_msg_quote(rg_tool_msg_t *m, const char *s, size_t len,
    size_t max)
{
    char    *d;
    size_t   n;
    json_t  *j;

    n = len > max ? rg_tool_utf8_boundary(s, max) : len;

    j = json_stringn(s, n);
    d = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);

    if (d == NULL) {
        rg_tool_msg_printf(m, "a string");
        return;
    }

    if (n < len) {
        rg_tool_msg_printf(m, "%.*s…\"", (int) strlen(d) - 1, d);

    } else {
        rg_tool_msg_printf(m, "%s", d);
    }

    free(d);
}


/* a value as the model wrote it, short */
void
rg_tool_msg_value(rg_tool_msg_t *m, json_t *v)
{
    char   buf[64], *d;

    switch (json_typeof(v)) {

    case JSON_STRING:
        rg_tool_msg_quote(m, json_string_value(v), json_string_length(v),
                               RG_TOOL_MSG_SHOW);
        return;

    case JSON_INTEGER:
    case JSON_REAL:
        rg_tool_number_text(v, buf, sizeof(buf));
        rg_tool_msg_printf(m, "%s", buf);
        return;

    case JSON_TRUE:
        rg_tool_msg_printf(m, "true");
        return;

    case JSON_FALSE:
        rg_tool_msg_printf(m, "false");
        return;

    case JSON_NULL:
        rg_tool_msg_printf(m, "null");
        return;

    default:
        d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        rg_tool_msg_printf(m, "%s", d ? d : "?");
        free(d);
        return;
    }
}


/* what a value is, for "got …": containers by their kind only */
void
rg_tool_msg_got(rg_tool_msg_t *m, json_t *v)
{
    if (json_is_object(v)) {
        rg_tool_msg_printf(m, "an object");

    } else if (json_is_array(v)) {
        rg_tool_msg_printf(m, "an array");

    } else {
        rg_tool_msg_value(m, v);
    }
}


const char *
rg_tool_json_kind(json_t *v)
{
    switch (json_typeof(v)) {

    case JSON_OBJECT:
        return "an object";

    case JSON_ARRAY:
        return "an array";

    case JSON_STRING:
        return "a string";

    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";

    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";

    default:
        return "null";
    }
}
