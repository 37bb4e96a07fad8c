/* rg_mcp_tool.c: an MCP server's tools as reagent tools. Names: NAME__tool
 * within ^[a-zA-Z0-9_-]{1,64}$, the server's own name kept for the call.
 * Flags: the annotations (hints of a server reagent does not trust more
 * than its configuration does), the operator's tool_flags over them.
 * Descriptions and schemas as the server sent them, bounded. A call is a
 * tools/call request; the tools part's timeout cancels it (which tells
 * the server, notifications/cancelled). Its result reaches the model as
 * text: text content as it is, other content described in one line. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_mcp.h>
#include <rg_mcp_tool.h>
#include <fnmatch.h>
#include <openssl/evp.h>


typedef struct {
    rg_tool_list_t      list;         /* first */
    rg_mcp_tool_t      *tools;
    char               *canon;        /* what it was built from */
} rg_mcp_list_t;


static int rg_mcp_tool_start(rg_tool_call_t *call);
static void rg_mcp_tool_cancel(rg_tool_call_t *call);


/* names ---------------------------------------------------------------- */

static rg_uint_t
rg_mcp_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || c == '_' || c == '-';
}


void
rg_mcp_tool_name(const rg_str_t *prefix, const char *remote, rg_uint_t salt,
    char *out)
{
    size_t         i, n, rlen;
    unsigned int   mdlen;
    unsigned char  md[EVP_MAX_MD_SIZE], in[8];
    EVP_MD_CTX    *h;

    rlen = strlen(remote);
    n = rg_min(prefix->len, RG_MCP_TOOL_NAME_MAX);
    memcpy(out, prefix->data, n);

    for (i = 0; i < rlen && n < RG_MCP_TOOL_NAME_MAX; i++) {
        out[n++] = rg_mcp_name_char(remote[i]) ? remote[i] : '_';
    }

    out[n] = '\0';

    if (prefix->len + rlen <= RG_MCP_TOOL_NAME_MAX && salt == 0) {
        return;
    }

    /* cut, and made unique by what it was: the same tool gets the same
     * name in every worker and after every restart */
    memset(md, 0, sizeof(md));
    mdlen = 0;

    for (i = 0; i < sizeof(in); i++) {
        in[i] = (unsigned char) (salt >> (8 * i));
    }

    h = EVP_MD_CTX_new();
    if (h) {
        if (EVP_DigestInit_ex(h, EVP_sha256(), NULL) != 1
            || EVP_DigestUpdate(h, remote, rlen) != 1
            || (salt && EVP_DigestUpdate(h, in, sizeof(in)) != 1)
            || EVP_DigestFinal_ex(h, md, &mdlen) != 1)
        {
            mdlen = 0;
        }
        EVP_MD_CTX_free(h);
    }

    n = rg_min(n, RG_MCP_TOOL_NAME_MAX - 7);
    snprintf(out + n, RG_MCP_TOOL_NAME_MAX + 1 - n, "_%02x%02x%02x",
             md[0], md[1], md[2]);
}


/* flags ---------------------------------------------------------------- */

static rg_uint_t
rg_mcp_hint(json_t *annotations, const char *key, rg_uint_t def)
{
    json_t  *v;

    v = json_object_get(annotations, key);

    return json_is_boolean(v) ? json_is_true(v) : def;
}


uint32_t
rg_mcp_tool_flags(json_t *annotations, const char *remote,
    rg_array_t *overrides)
{
    uint32_t              flags;
    rg_uint_t             i, ro, idem, destructive;
    rg_mcp_tool_flags_t  *o;

    ro = rg_mcp_hint(annotations, "readOnlyHint", 0);
    destructive = rg_mcp_hint(annotations, "destructiveHint", 1);
    idem = rg_mcp_hint(annotations, "idempotentHint", 0);

    flags = 0;

    if (ro) {
        flags |= RG_TOOL_READ_ONLY | RG_TOOL_IDEMPOTENT;

    } else {
        if (destructive) {
            flags |= RG_TOOL_DANGEROUS;
        }

        flags |= idem ? RG_TOOL_IDEMPOTENT : RG_TOOL_SIDE_EFFECT;
    }

    o = overrides ? overrides->elts : NULL;

    for (i = 0; o && i < overrides->nelts; i++) {
        if (fnmatch(o[i].pattern.data, remote, 0) == 0) {
            flags = o[i].flags & ~RG_MCP_FLAGS_NONE;
        }
    }

    return flags;
}


/* results -------------------------------------------------------------- */

/* "1.2 KB" for n bytes */
static void
rg_mcp_size(char *buf, size_t size, double n)
{
    if (n < 1024) {
        snprintf(buf, size, "%.0f bytes", n);
    } else if (n < 1024 * 1024) {
        snprintf(buf, size, "%.1f KB", n / 1024);
    } else {
        snprintf(buf, size, "%.1f MB", n / (1024 * 1024));
    }
}


static const char *
rg_mcp_str(json_t *o, const char *key, const char *def)
{
    const char  *s;

    s = json_string_value(json_object_get(o, key));

    return s ? s : def;
}


/* one content item that is not text, described in a line; an embedded
 * text resource's text follows its line */
static rg_int_t
rg_mcp_content_line(json_t *c, const char *type, rg_buf_t *out)
{
    char         size[32];
    json_t      *res;
    const char  *data, *text;

    if (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0) {
        data = rg_mcp_str(c, "data", "");
        rg_mcp_size(size, sizeof(size), (double) strlen(data) * 3 / 4);
        return rg_buf_printf(out, "[%s %.100s, %s]", type,
                             rg_mcp_str(c, "mimeType", "of unknown type"),
                             size);
    }

    if (strcmp(type, "resource_link") == 0) {
        return rg_buf_printf(out, "[resource link %.500s%s%.100s%s]",
                             rg_mcp_str(c, "uri", "(no uri)"),
                             json_object_get(c, "name") ? " \"" : "",
                             rg_mcp_str(c, "name", ""),
                             json_object_get(c, "name") ? "\"" : "");
    }

    if (strcmp(type, "resource") == 0) {
        res = json_object_get(c, "resource");
        text = rg_mcp_str(res, "text", NULL);

        if (text) {
            return rg_buf_printf(out, "[resource %.500s, %.100s]\n%s",
                                 rg_mcp_str(res, "uri", "(no uri)"),
                                 rg_mcp_str(res, "mimeType", "text"), text);
        }

        rg_mcp_size(size, sizeof(size),
                    (double) strlen(rg_mcp_str(res, "blob", "")) * 3 / 4);
        return rg_buf_printf(out, "[resource %.500s, %.100s, %s]",
                             rg_mcp_str(res, "uri", "(no uri)"),
                             rg_mcp_str(res, "mimeType", "of unknown type"),
                             size);
    }

    return rg_buf_printf(out, "[%.40s content]", type);
}


rg_int_t
rg_mcp_result_text(json_t *result, rg_buf_t *out, rg_uint_t *failed)
{
    char        *js;
    size_t       i, start;
    json_t      *content, *c, *sc;
    rg_uint_t    texts;
    const char  *type, *text;

    *failed = 0;

    if (!json_is_object(result)) {
        return RG_ERROR;
    }

    *failed = json_is_true(json_object_get(result, "isError"));

    content = json_object_get(result, "content");
    start = out->len;
    texts = 0;

    for (i = 0; i < json_array_size(content); i++) {
        c = json_array_get(content, i);
        type = rg_mcp_str(c, "type", "unknown");

        if (out->len > start && rg_buf_append_lit(out, "\n") != RG_OK) {
            return RG_ERROR;
        }

        if (strcmp(type, "text") == 0) {
            text = rg_mcp_str(c, "text", "");
            texts++;
            if (rg_buf_append(out, text, strlen(text)) != RG_OK) {
                return RG_ERROR;
            }
            continue;
        }

        if (rg_mcp_content_line(c, type, out) != RG_OK) {
            return RG_ERROR;
        }
    }

    /* a server's text is, by the protocol, its structured content
     * rendered; without one, the structure itself */
    sc = json_object_get(result, "structuredContent");

    if (sc && texts == 0) {
        js = json_dumps(sc, JSON_COMPACT | JSON_ENCODE_ANY);
        if (js == NULL) {
            return RG_ERROR;
        }

        if ((out->len > start && rg_buf_append_lit(out, "\n") != RG_OK)
            || rg_buf_append(out, js, strlen(js)) != RG_OK)
        {
            free(js);
            return RG_ERROR;
        }

        free(js);
    }

    if (out->len == start) {
        return rg_buf_append_lit(out, "(the tool returned no content)");
    }

    return RG_OK;
}


/* the list ------------------------------------------------------------- */

static void
rg_mcp_list_free(rg_tool_list_t *list)
{
    rg_uint_t       i;
    rg_mcp_list_t  *l;

    l = (rg_mcp_list_t *) list;

    for (i = 0; i < list->n; i++) {
        json_decref(list->tools[i].schema);
        free((char *) l->tools[i].tool.name);
        free((char *) l->tools[i].tool.description);
        free((char *) l->tools[i].tool.parameters);
        free(l->tools[i].remote);
    }

    free(list->tools);
    free(l->tools);
    free(l->canon);
    free(l);
}


/* a UTF-8 string cut to at most max bytes, on a character's boundary */
static char *
rg_mcp_cut(const char *s, size_t max)
{
    size_t  n;

    n = strlen(s);

    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80) {
            n--;
        }
    }

    return rg_strdup_len(s, n);
}


/* the schema as a model is told it: an object, without "$schema" (some
 * providers refuse keys they do not know) */
static json_t *
rg_mcp_schema(json_t *in)
{
    json_t  *schema;

    if (!json_is_object(in)) {
        return json_pack("{s:s, s:{}}", "type", "object", "properties");
    }

    schema = json_deep_copy(in);
    if (schema == NULL) {
        return NULL;
    }

    json_object_del(schema, "$schema");

    if (json_object_get(schema, "type") == NULL) {
        json_object_set_new(schema, "type", json_string("object"));
    }

    return schema;
}


rg_tool_list_t *
rg_mcp_tools_build(rg_mcp_server_t *s, json_t *tools)
{
    char             name[RG_MCP_TOOL_NAME_MAX + 1], *params;
    size_t           i, n;
    json_t          *t, *schema, *in;
    rg_uint_t        salt;
    const char      *remote, *desc;
    rg_mcp_tool_t   *mt;
    rg_mcp_list_t   *l;
    rg_tool_entry_t *te;

    n = json_array_size(tools);

    l = calloc(1, sizeof(rg_mcp_list_t));
    if (l == NULL) {
        return NULL;
    }

    l->list.refs = 1;
    l->list.free = rg_mcp_list_free;
    l->list.data = s;
    l->list.tools = calloc(n + 1, sizeof(rg_tool_entry_t));
    l->tools = calloc(n + 1, sizeof(rg_mcp_tool_t));
    l->canon = json_dumps(tools, JSON_COMPACT | JSON_SORT_KEYS);

    if (l->list.tools == NULL || l->tools == NULL || l->canon == NULL) {
        rg_mcp_list_free(&l->list);
        return NULL;
    }

    for (i = 0; i < n; i++) {
        t = json_array_get(tools, i);
        remote = rg_mcp_str(t, "name", NULL);

        if (remote == NULL || *remote == '\0') {
            rg_log_error(RG_LOG_WARN, s->log, 0, "mcp \"%.*s\": a tool "
                         "without a name is left out",
                         (int) s->conf->name.len, s->conf->name.data);
            continue;
        }

        for (salt = 0; salt < 8; salt++) {
            rg_mcp_tool_name(&s->conf->prefix, remote, salt, name);
            if (rg_tool_list_find(&l->list, name, strlen(name)) == NULL) {
                break;
            }
        }

        in = json_object_get(t, "inputSchema");
        schema = rg_mcp_schema(in);
        params = schema ? json_dumps(schema, JSON_COMPACT) : NULL;

        if (salt == 8 || params == NULL
            || strlen(params) > RG_MCP_SCHEMA_MAX)
        {
            rg_log_error(RG_LOG_WARN, s->log, 0, "mcp \"%.*s\": tool "
                         "\"%.64s\" is left out (%s)",
                         (int) s->conf->name.len, s->conf->name.data,
                         remote, salt == 8 ? "its name collides"
                                 : params ? "its inputSchema is over 64k"
                                          : "out of memory");
            json_decref(schema);
            free(params);
            continue;
        }

        desc = rg_mcp_str(t, "description", rg_mcp_str(t, "title", ""));

        mt = &l->tools[l->list.n];
        mt->server = s;
        mt->remote = strdup(remote);
        mt->tool.name = strdup(name);
        mt->tool.description = rg_mcp_cut(desc, RG_MCP_DESCRIPTION_MAX);
        mt->tool.parameters = params;
        mt->tool.flags = rg_mcp_tool_flags(json_object_get(t, "annotations"),
                                           remote, s->conf->tool_flags);
        mt->tool.timeout_ms = (uint32_t) rg_min(s->conf->tool_timeout,
                                                UINT32_MAX);
        mt->tool.start = rg_mcp_tool_start;
        mt->tool.cancel = rg_mcp_tool_cancel;

        te = &l->list.tools[l->list.n];
        te->tool = &mt->tool;
        te->schema = schema;
        te->module = s->conf->provider;

        l->list.n++;

        if (mt->remote == NULL || mt->tool.name == NULL
            || mt->tool.description == NULL)
        {
            rg_mcp_list_free(&l->list);
            return NULL;
        }
    }

    return &l->list;
}


rg_uint_t
rg_mcp_tools_same(rg_tool_list_t *a, rg_tool_list_t *b)
{
    return strcmp(((rg_mcp_list_t *) a)->canon,
                  ((rg_mcp_list_t *) b)->canon) == 0;
}


/* calls ---------------------------------------------------------------- */

static void
rg_mcp_call_handler(rg_mcp_req_t *r, json_t *result, json_t *error,
    const char *failure)
{
    rg_buf_t         b;
    rg_uint_t        failed;
    const char      *msg;
    rg_tool_call_t  *call;

    call = r->data;
    call->ctx = NULL;
    rg_mcp_req_free(r);

    if (failure) {
        call->host->fail(call, "%s", failure);
        return;
    }

    if (error) {
        msg = rg_mcp_str(error, "message", "(no message)");
        call->host->fail(call, "the MCP server answered error %lld: %s",
                         (long long) json_integer_value(json_object_get(error,
                                                                 "code")),
                         msg);
        return;
    }

    memset(&b, 0, sizeof(b));

    if (rg_mcp_result_text(result, &b, &failed) != RG_OK) {
        rg_buf_free(&b);
        call->host->fail(call, "the MCP server's answer is not a tool "
                         "result");
        return;
    }

    /* an error text whole, as a result: the tools layer trims both */
    if (failed) {
        call->host->fail(call, "%s", b.data);
    } else {
        call->host->done(call, b.data, b.len);
    }

    rg_buf_free(&b);
}


static int
rg_mcp_tool_start(rg_tool_call_t *call)
{
    rg_int_t          rc;
    json_t           *args, *params;
    rg_mcp_tool_t    *mt;
    rg_mcp_req_t     *r;
    rg_mcp_server_t  *s;

    mt = (rg_mcp_tool_t *) call->tool;
    s = mt->server;

    args = json_loadb(call->args, call->args_len, 0, NULL);
    params = args ? json_pack("{s:s, s:o}", "name", mt->remote, "arguments",
                              args)
                  : NULL;

    r = params ? rg_mcp_req_create(s, "tools/call", params,
                                   rg_mcp_call_handler, call)
               : NULL;
    if (r == NULL) {
        call->host->fail(call, "out of memory");
        return RG_TOOL_OK;
    }

    r->name = mt->remote;
    call->ctx = r;

    rc = rg_mcp_req_send(r, 0);

    if (rc == RG_OK) {
        return RG_TOOL_AGAIN;
    }

    call->ctx = NULL;
    rg_mcp_req_free(r);

    if (rc == RG_DECLINED && s->state == RG_MCP_DOWN) {
        call->host->fail(call, "the MCP server \"%.*s\" is not running (%s); "
                         "it is started again in %.3gs",
                         (int) s->conf->name.len, s->conf->name.data, s->why,
                         s->restart_at > rg_monotonic_msec()
                         ? (double) (s->restart_at - rg_monotonic_msec())
                           / 1000
                         : 0.0);
    } else {
        call->host->fail(call, "the MCP server \"%.*s\" is not available "
                         "(%s)", (int) s->conf->name.len, s->conf->name.data,
                         s->why[0] ? s->why : rg_mcp_state_name(s->state));
    }

    return RG_TOOL_OK;
}


static void
rg_mcp_tool_cancel(rg_tool_call_t *call)
{
    rg_mcp_req_t  *r;

    r = call->ctx;
    call->ctx = NULL;

    if (r == NULL) {
        return;
    }

    rg_mcp_req_drop(r, rg_tools_call_timed_out(call) ? "timed out"
                                                     : "cancelled");
}
