/* rg_tool_repair.c: reads the argument text a model sent for a tool call
 * into one JSON object, repairing only what is safe: blanks, a code fence,
 * a double-encoded object, a one-object array and empty text. Everything
 * else is an error for the model, with the line and column as it sent
 * them. All JSON reading goes through jansson; this file takes apart only
 * blanks and fences. Checking against the schema is rg_tool_schema.c's. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_args.h>
#include <rg_tool_text.h>

#include <strings.h>


#define rg_tool_args_blank(c)                                                \
    ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r')


static const char  *rg_tool_args_repair_names[] = {
    "blanks", "fence", "string", "array", "empty"
};


/* a code fence around all of p..e: ``` or ```json, then the same end */
static rg_uint_t
rg_tool_args_fence(const char **pp, const char **ep)
{
    const char  *p, *e, *tag;

    p = *pp;
    e = *ep;

    if (e - p < 6 || memcmp(p, "```", 3) != 0 || memcmp(e - 3, "```", 3) != 0)
    {
        return 0;
    }

    p += 3;
    e -= 3;

    for (tag = p;
         p < e && (((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')
                   || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-');
         p++)
    {
        /* void */
    }

    if (p != tag && !(p - tag == 4 && strncasecmp(tag, "json", 4) == 0)) {
        return 0;
    }

    while (p < e && rg_tool_args_blank(*p)) {
        p++;
    }

    while (e > p && rg_tool_args_blank(e[-1])) {
        e--;
    }

    *pp = p;
    *ep = e;

    return RG_TOOL_ARGS_REPAIR_FENCE;
}


/* the object inside a JSON string; {} for a blank one; NULL otherwise */
static json_t *
rg_tool_args_unquote(json_t *v, rg_uint_t *fixed)
{
    size_t        len;
    json_t       *o;
    const char   *s;
    json_error_t  jerr;

    s = json_string_value(v);
    len = json_string_length(v);

    while (len && rg_tool_args_blank(*s)) {
        s++;
        len--;
    }

    if (len == 0) {
        *fixed |= RG_TOOL_ARGS_REPAIR_EMPTY;
        return json_object();
    }

    o = json_loadb(s, len, RG_TOOL_ARGS_LOAD, &jerr);

    if (!json_is_object(o)) {
        json_decref(o);
        return NULL;
    }

    return o;
}


json_t *
rg_tool_args_parse(const char *tool, const char *text, size_t len,
    rg_uint_t *repaired, char *err, size_t errlen)
{
    int                 line, col;
    json_t             *v, *o;
    rg_uint_t           fixed;
    const char         *p, *e, *q;
    json_error_t        jerr;
    rg_tool_msg_t  m;

    rg_tool_msg_init(&m, err, errlen);

    if (repaired) {
        *repaired = 0;
    }

    if (tool == NULL) {
        tool = "the tool";
    }

    if (text == NULL) {
        text = "";
        len = 0;
    }

    fixed = 0;
    p = text;
    e = text + len;

    while (p < e && rg_tool_args_blank(*p)) {
        p++;
    }

    while (e > p && rg_tool_args_blank(e[-1])) {
        e--;
    }

    if (p != text || e != text + len) {
        fixed |= RG_TOOL_ARGS_REPAIR_BLANKS;
    }

    fixed |= rg_tool_args_fence(&p, &e);

    if (p == e) {
        fixed |= RG_TOOL_ARGS_REPAIR_EMPTY;
        v = json_object();
        goto done;
    }

    v = json_loadb(p, e - p, JSON_DECODE_ANY | RG_TOOL_ARGS_LOAD, &jerr);

    if (v == NULL) {
        rg_tool_msg_printf(&m, "arguments for %s are not valid JSON: %s",
                                tool, jerr.text);

        if (jerr.line >= 1) {
            /* count where the model sees it: in its text, not in ours */
            line = jerr.line;
            col = jerr.column;

            for (q = text; q < p; q++) {
                if (*q == '\n') {
                    line++;
                    col = jerr.column;

                } else if (jerr.line == 1) {
                    col++;
                }
            }

            rg_tool_msg_printf(&m, " (line %d, column %d)", line, col);
        }

        rg_tool_msg_printf(&m, "; send one JSON object");
        rg_tool_msg_done(&m);

        return NULL;
    }

    if (json_is_string(v)) {
        o = rg_tool_args_unquote(v, &fixed);

        if (o) {
            fixed |= RG_TOOL_ARGS_REPAIR_STRING;
            json_decref(v);
            v = o;
        }

    } else if (json_is_array(v) && json_array_size(v) == 1
               && json_is_object(json_array_get(v, 0)))
    {
        o = json_incref(json_array_get(v, 0));
        json_decref(v);
        v = o;
        fixed |= RG_TOOL_ARGS_REPAIR_ARRAY;
    }

    if (!json_is_object(v)) {
        rg_tool_msg_printf(&m, "arguments for %s must be one JSON "
                                "object, not %s; send one JSON object",
                                tool, rg_tool_json_kind(v));
        rg_tool_msg_done(&m);
        json_decref(v);

        return NULL;
    }

done:

    if (v == NULL) {
        rg_tool_msg_printf(&m, "arguments for %s could not be read: "
                                "out of memory", tool);
        rg_tool_msg_done(&m);

        return NULL;
    }

    if (repaired) {
        *repaired = fixed;
    }

    return v;
}


char *
rg_tool_args_repairs(rg_uint_t repaired, char *buf, size_t size)
{
    rg_uint_t           i;
    rg_tool_msg_t  m;

    rg_tool_msg_init(&m, buf, size);

    for (i = 0; i < rg_nelems(rg_tool_args_repair_names); i++) {
        if (repaired & ((rg_uint_t) 1 << i)) {
            rg_tool_msg_printf(&m, "%s%s", m.len ? "," : "",
                                    rg_tool_args_repair_names[i]);
        }
    }

    rg_tool_msg_done(&m);

    return buf;
}
