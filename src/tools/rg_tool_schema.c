/* rg_tool_schema.c: checks a tool call's arguments against the subset of
 * JSON Schema that tool schemas use, coercing types in place where that
 * is unambiguous ("3" to 3), and renders arguments as canonical JSON (the
 * key of dedupe and repeat detection). Messages name the parameter's
 * path and are built in the caller's buffer (rg_tool_text.c). Keeps no
 * state, does not log, knows nothing of dispatch or the conversation. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_json_write.h>
#include <rg_tool_args.h>
#include <rg_tool_text.h>


#define RG_TOOL_ARGS_DEPTH      32    /* deeper values are not checked */
#define RG_TOOL_ARGS_PATH       256   /* bytes of a parameter's path */
#define RG_TOOL_ARGS_NAME       64    /* bytes of an unknown name shown */
#define RG_TOOL_ARGS_LIST       20    /* enum values or names listed */
#define RG_TOOL_ARGS_NUMBER     64    /* longest string read as a number */

/* the types a schema allows */
#define RG_TOOL_ARGS_INTEGER    0x01
#define RG_TOOL_ARGS_NUMBER_T   0x02
#define RG_TOOL_ARGS_STRING_T   0x04
#define RG_TOOL_ARGS_BOOLEAN    0x08
#define RG_TOOL_ARGS_ARRAY_T    0x10
#define RG_TOOL_ARGS_OBJECT     0x20
#define RG_TOOL_ARGS_NULL       0x40

#define rg_tool_args_plural(n)  ((n) == 1 ? "" : "s")


typedef struct {
    const char         *name;
    rg_uint_t           bit;
    const char         *what;
} rg_tool_args_type_t;


/* one side of a number's range: the schema's value, exclusive or not */
typedef struct {
    json_t             *n;
    unsigned            excl:1;
} rg_tool_args_bound_t;


typedef struct {
    const char         *tool;
    rg_tool_msg_t       msg;
    char                path[RG_TOOL_ARGS_PATH];
    size_t              plen;
    rg_uint_t           depth;
} rg_tool_args_ctx_t;


/* in the order messages list them */
static rg_tool_args_type_t  rg_tool_args_types[] = {
    { "integer", RG_TOOL_ARGS_INTEGER,  "an integer" },
    { "number",  RG_TOOL_ARGS_NUMBER_T, "a number" },
    { "string",  RG_TOOL_ARGS_STRING_T, "a string" },
    { "boolean", RG_TOOL_ARGS_BOOLEAN,  "a boolean" },
    { "array",   RG_TOOL_ARGS_ARRAY_T,  "an array" },
    { "object",  RG_TOOL_ARGS_OBJECT,   "an object" },
    { "null",    RG_TOOL_ARGS_NULL,     "null" }
};


static rg_int_t rg_tool_args_check(rg_tool_args_ctx_t *ctx, json_t **vp,
    json_t *schema);


/* validate: paths and messages ---------------------------------------- */

/* appends what fits of p..p+n to the path, cut at a character */
static void
rg_tool_args_path_add(rg_tool_args_ctx_t *ctx, const char *p, size_t n)
{
    size_t  room;

    room = sizeof(ctx->path) - 1 - ctx->plen;

    if (n <= room) {
        memcpy(ctx->path + ctx->plen, p, n);
        ctx->plen += n;

    } else {
        memcpy(ctx->path + ctx->plen, p, room);
        ctx->plen = rg_tool_utf8_boundary(ctx->path, sizeof(ctx->path) - 1);
    }

    ctx->path[ctx->plen] = '\0';
}


/* appends ".key" (or "key" first) or "[index]" to the path; returns what
 * to give rg_tool_args_pop() */
static size_t
rg_tool_args_push(rg_tool_args_ctx_t *ctx, const char *key, size_t len,
    size_t idx)
{
    char    num[RG_INT64_LEN + 2];
    size_t  saved, n;

    saved = ctx->plen;

    if (key) {
        if (ctx->plen) {
            rg_tool_args_path_add(ctx, ".", 1);
        }
        /* a key stops at a NUL, as "%.*s" did */
        rg_tool_args_path_add(ctx, key, strnlen(key, len));

    } else {
        num[0] = '[';
        n = 1 + rg_sprint_int(num + 1, (int64_t) idx);
        num[n++] = ']';
        rg_tool_args_path_add(ctx, num, n);
    }

    return saved;
}


static void
rg_tool_args_pop(rg_tool_args_ctx_t *ctx, size_t saved)
{
    ctx->plen = saved;
    ctx->path[saved] = '\0';
}


/* "T: parameter "a.b" " or "T: the arguments " */
static void
rg_tool_args_subject(rg_tool_args_ctx_t *ctx)
{
    if (ctx->plen) {
        rg_tool_msg_printf(&ctx->msg, "%s: parameter \"%s\" ", ctx->tool,
                                ctx->path);

    } else {
        rg_tool_msg_printf(&ctx->msg, "%s: the arguments ", ctx->tool);
    }
}


static rg_int_t
rg_tool_args_fail(rg_tool_args_ctx_t *ctx)
{
    rg_tool_msg_done(&ctx->msg);

    return RG_ERROR;
}


static rg_uint_t
rg_tool_args_type_bit(json_t *name)
{
    rg_uint_t    i;
    const char  *s;

    s = json_string_value(name);
    if (s == NULL) {
        return 0;
    }

    for (i = 0; i < rg_nelems(rg_tool_args_types); i++) {
        if (strcmp(s, rg_tool_args_types[i].name) == 0) {
            return rg_tool_args_types[i].bit;
        }
    }

    return 0;
}


/* the types "type" allows; 0: any */
static rg_uint_t
rg_tool_args_types_of(json_t *type)
{
    size_t      i;
    json_t     *t;
    rg_uint_t   types;

    if (!json_is_array(type)) {
        return rg_tool_args_type_bit(type);
    }

    types = 0;

    json_array_foreach(type, i, t) {
        types |= rg_tool_args_type_bit(t);
    }

    return types;
}


static rg_uint_t
rg_tool_args_fits(json_t *v, rg_uint_t types)
{
    switch (json_typeof(v)) {

    case JSON_OBJECT:
        return types & RG_TOOL_ARGS_OBJECT;

    case JSON_ARRAY:
        return types & RG_TOOL_ARGS_ARRAY_T;

    case JSON_STRING:
        return types & RG_TOOL_ARGS_STRING_T;

    case JSON_INTEGER:
        return types & (RG_TOOL_ARGS_INTEGER | RG_TOOL_ARGS_NUMBER_T);

    case JSON_REAL:
        return types & RG_TOOL_ARGS_NUMBER_T;

    case JSON_TRUE:
    case JSON_FALSE:
        return types & RG_TOOL_ARGS_BOOLEAN;

    default:
        return types & RG_TOOL_ARGS_NULL;
    }
}


/* -1, 0, 1 as a is below, equal to or above b; both numbers */
static int
rg_tool_args_cmp(json_t *a, json_t *b)
{
    double        x, y;
    json_int_t    i, j;

    if (json_is_integer(a) && json_is_integer(b)) {
        i = json_integer_value(a);
        j = json_integer_value(b);

        return (i > j) - (i < j);
    }

    x = json_number_value(a);
    y = json_number_value(b);

    return (x > y) - (x < y);
}


static int
rg_tool_args_equal(json_t *a, json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        return rg_tool_args_cmp(a, b) == 0;
    }

    return json_equal(a, b);
}


/* the stricter of one side's inclusive and exclusive keys (sign: 1 for
 * a lower bound, where the greater is stricter; -1 for an upper one);
 * the draft 4 boolean exclusiveM* makes the inclusive one exclusive */
static void
rg_tool_args_bound(json_t *schema, const char *key, const char *xkey,
    int sign, rg_tool_args_bound_t *b)
{
    json_t  *n, *x;

    b->n = NULL;
    b->excl = 0;

    n = json_object_get(schema, key);
    x = json_object_get(schema, xkey);

    if (json_is_number(n)) {
        b->n = n;
        b->excl = json_is_true(x);
    }

    if (json_is_number(x)
        && (b->n == NULL || sign * rg_tool_args_cmp(x, b->n) >= 0))
    {
        b->n = x;
        b->excl = 1;
    }
}


/* the strictest of minimum/exclusiveMinimum and maximum/exclusiveMaximum */
static void
rg_tool_args_bounds(json_t *schema, rg_tool_args_bound_t *lo,
    rg_tool_args_bound_t *hi)
{
    rg_tool_args_bound(schema, "minimum", "exclusiveMinimum", 1, lo);
    rg_tool_args_bound(schema, "maximum", "exclusiveMaximum", -1, hi);
}


/* " from 1 to 10", " of at least 1", " greater than 0 and at most 1"… */
static void
rg_tool_msg_range(rg_tool_msg_t *m, json_t *schema)
{
    char                  a[64], b[64];
    rg_tool_args_bound_t  lo, hi;

    rg_tool_args_bounds(schema, &lo, &hi);

    if (lo.n) {
        rg_tool_number_text(lo.n, a, sizeof(a));
    }

    if (hi.n) {
        rg_tool_number_text(hi.n, b, sizeof(b));
    }

    if (lo.n && hi.n && !lo.excl && !hi.excl) {
        rg_tool_msg_printf(m, " from %s to %s", a, b);
        return;
    }

    if (lo.n) {
        rg_tool_msg_printf(m, lo.excl ? " greater than %s"
                                           : " of at least %s", a);
    }

    if (hi.n) {
        rg_tool_msg_printf(m, "%s %s", lo.n ? " and" : "",
                                hi.excl ? "less than"
                                        : (lo.n ? "at most" : "of at most"));
        rg_tool_msg_printf(m, " %s", b);
    }
}


/* "T: parameter "p" must be an integer from 1 to 10 or null, got "x"" */
static rg_int_t
rg_tool_args_expected(rg_tool_args_ctx_t *ctx, json_t *schema,
    rg_uint_t types, json_t *v)
{
    rg_uint_t  i, k, n, bits[rg_nelems(rg_tool_args_types)];

    if (types & RG_TOOL_ARGS_NUMBER_T) {
        types &= ~RG_TOOL_ARGS_INTEGER;    /* a number covers it */
    }

    n = 0;

    for (i = 0; i < rg_nelems(rg_tool_args_types); i++) {
        if (types & rg_tool_args_types[i].bit) {
            bits[n++] = i;
        }
    }

    rg_tool_args_subject(ctx);
    rg_tool_msg_printf(&ctx->msg, "must be ");

    for (k = 0; k < n; k++) {
        i = bits[k];

        rg_tool_msg_printf(&ctx->msg, "%s%s",
                                k == 0 ? "" : (k == n - 1 ? " or " : ", "),
                                rg_tool_args_types[i].what);

        if (rg_tool_args_types[i].bit
            & (RG_TOOL_ARGS_INTEGER | RG_TOOL_ARGS_NUMBER_T))
        {
            rg_tool_msg_range(&ctx->msg, schema);
        }
    }

    rg_tool_msg_printf(&ctx->msg, ", got ");
    rg_tool_msg_got(&ctx->msg, v);

    return rg_tool_args_fail(ctx);
}


/* validate: coercions -------------------------------------------------- */

/* a string that is exactly one JSON number, as a new number; or NULL */
static json_t *
rg_tool_args_read_number(json_t *v)
{
    size_t        len;
    json_t       *n;
    json_error_t  jerr;

    len = json_string_length(v);

    if (len == 0 || len > RG_TOOL_ARGS_NUMBER) {
        return NULL;
    }

    n = json_loadb(json_string_value(v), len, JSON_DECODE_ANY, &jerr);

    if (!json_is_number(n)) {
        json_decref(n);
        return NULL;
    }

    return n;
}


/* an integral real as a new integer; or NULL */
static json_t *
rg_tool_args_integral(json_t *v)
{
    double  d;

    d = json_real_value(v);

    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)
        || (double) (json_int_t) d != d)
    {
        return NULL;
    }

    return json_integer((json_int_t) d);
}


/* v as the first of the schema's types it can be read as unambiguously,
 * a new reference; NULL when it cannot (or memory ran out) */
static json_t *
rg_tool_args_coerce(json_t *v, rg_uint_t types)
{
    char          buf[64];
    size_t        len;
    json_t       *n, *i;
    const char   *s;
    json_error_t  jerr;

    s = json_string_value(v);
    len = json_string_length(v);

    if (types & RG_TOOL_ARGS_INTEGER) {
        if (json_is_real(v)) {
            n = rg_tool_args_integral(v);
            if (n) {
                return n;
            }
        }

        if (s) {
            n = rg_tool_args_read_number(v);

            if (json_is_integer(n)) {
                return n;
            }

            i = n ? rg_tool_args_integral(n) : NULL;
            json_decref(n);

            if (i) {
                return i;
            }
        }
    }

    if ((types & RG_TOOL_ARGS_NUMBER_T) && s) {
        n = rg_tool_args_read_number(v);
        if (n) {
            return n;
        }
    }

    if ((types & RG_TOOL_ARGS_BOOLEAN) && s) {
        if (len == 4 && memcmp(s, "true", 4) == 0) {
            return json_true();
        }

        if (len == 5 && memcmp(s, "false", 5) == 0) {
            return json_false();
        }
    }

    if ((types & (RG_TOOL_ARGS_OBJECT | RG_TOOL_ARGS_ARRAY_T)) && s && len) {
        n = json_loadb(s, len, RG_TOOL_ARGS_LOAD, &jerr);

        if (n && rg_tool_args_fits(n, types)) {
            return n;
        }

        json_decref(n);
    }

    if ((types & RG_TOOL_ARGS_STRING_T) && json_is_number(v)) {
        rg_tool_number_text(v, buf, sizeof(buf));
        return json_string(buf);
    }

    return NULL;
}


/* validate: keywords --------------------------------------------------- */

static rg_int_t
rg_tool_args_enum(rg_tool_args_ctx_t *ctx, json_t *v, json_t *schema)
{
    size_t   i, n;
    json_t  *e, *x;

    e = json_object_get(schema, "enum");
    n = json_array_size(e);

    if (n == 0) {
        return RG_OK;
    }

    json_array_foreach(e, i, x) {
        if (rg_tool_args_equal(v, x)) {
            return RG_OK;
        }
    }

    rg_tool_args_subject(ctx);
    rg_tool_msg_printf(&ctx->msg, n == 1 ? "must be " : "must be one of ");

    json_array_foreach(e, i, x) {
        if (i == RG_TOOL_ARGS_LIST) {
            rg_tool_msg_printf(&ctx->msg, ", …");
            break;
        }

        rg_tool_msg_printf(&ctx->msg, "%s", i ? ", " : "");
        rg_tool_msg_value(&ctx->msg, x);
    }

    rg_tool_msg_printf(&ctx->msg, n == 1 ? ", got " : "; got ");
    rg_tool_msg_got(&ctx->msg, v);

    return rg_tool_args_fail(ctx);
}


static rg_int_t
rg_tool_args_number(rg_tool_args_ctx_t *ctx, json_t *v, json_t *schema,
    rg_uint_t types)
{
    int                   c;
    rg_tool_args_bound_t  lo, hi;

    rg_tool_args_bounds(schema, &lo, &hi);

    if (lo.n) {
        c = rg_tool_args_cmp(v, lo.n);

        if (c < 0 || (c == 0 && lo.excl)) {
            goto failed;
        }
    }

    if (hi.n) {
        c = rg_tool_args_cmp(v, hi.n);

        if (c > 0 || (c == 0 && hi.excl)) {
            goto failed;
        }
    }

    return RG_OK;

failed:

    if ((types & (RG_TOOL_ARGS_INTEGER | RG_TOOL_ARGS_NUMBER_T)) == 0) {
        types = RG_TOOL_ARGS_NUMBER_T;
    }

    return rg_tool_args_expected(ctx, schema, types, v);
}


/* a minLength/maxLength/minItems/maxItems value; 0 when there is none */
static int
rg_tool_args_count(json_t *schema, const char *key, size_t *n)
{
    double   d;
    json_t  *v;

    v = json_object_get(schema, key);

    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0) {
            return 0;
        }

        *n = (size_t) json_integer_value(v);
        return 1;
    }

    if (json_is_real(v)) {
        d = json_real_value(v);

        if (!(d >= 0 && d < 1e18)) {
            return 0;
        }

        *n = (size_t) d;
        return 1;
    }

    return 0;
}


static rg_int_t
rg_tool_args_string(rg_tool_args_ctx_t *ctx, json_t *v, json_t *schema)
{
    size_t       i, len, chars, n;
    const char  *s;

    s = json_string_value(v);
    len = json_string_length(v);

    chars = 0;

    for (i = 0; i < len; i++) {
        if (!rg_tool_utf8_cont(s[i])) {
            chars++;
        }
    }

    if (rg_tool_args_count(schema, "maxLength", &n) && chars > n) {
        rg_tool_args_subject(ctx);
        rg_tool_msg_printf(&ctx->msg, "is longer than %zu character%s",
                                n, rg_tool_args_plural(n));
        return rg_tool_args_fail(ctx);
    }

    if (rg_tool_args_count(schema, "minLength", &n) && chars < n) {
        rg_tool_args_subject(ctx);

        if (n == 1) {
            rg_tool_msg_printf(&ctx->msg, "must not be empty");

        } else {
            rg_tool_msg_printf(&ctx->msg, "is shorter than %zu "
                                    "characters", n);
        }

        return rg_tool_args_fail(ctx);
    }

    return RG_OK;
}


/* checks a member of an object or an array and puts a coerced value in
 * its place */
static rg_int_t
rg_tool_args_member(rg_tool_args_ctx_t *ctx, json_t *parent,
    const char *key, size_t idx, json_t *v, json_t *schema)
{
    int        rc;
    size_t     saved;
    json_t    *c;
    rg_int_t   r;

    saved = rg_tool_args_push(ctx, key, key ? strlen(key) : 0, idx);
    ctx->depth++;

    c = v;
    r = rg_tool_args_check(ctx, &c, schema);

    ctx->depth--;
    rg_tool_args_pop(ctx, saved);

    if (c == v) {
        return r;
    }

    /* both steal c, also when they fail */
    rc = key ? json_object_set_new(parent, key, c)
             : json_array_set_new(parent, idx, c);

    if (rc != 0 && r == RG_OK) {
        rg_tool_msg_printf(&ctx->msg, "%s: out of memory", ctx->tool);
        return rg_tool_args_fail(ctx);
    }

    return r;
}


static rg_int_t
rg_tool_args_array(rg_tool_args_ctx_t *ctx, json_t *v, json_t *schema)
{
    size_t   i, n, size;
    json_t  *items;

    size = json_array_size(v);

    if (rg_tool_args_count(schema, "minItems", &n) && size < n) {
        rg_tool_args_subject(ctx);
        rg_tool_msg_printf(&ctx->msg, "must have at least %zu item%s",
                                n, rg_tool_args_plural(n));
        return rg_tool_args_fail(ctx);
    }

    if (rg_tool_args_count(schema, "maxItems", &n) && size > n) {
        rg_tool_args_subject(ctx);
        rg_tool_msg_printf(&ctx->msg, "must have at most %zu item%s",
                                n, rg_tool_args_plural(n));
        return rg_tool_args_fail(ctx);
    }

    items = json_object_get(schema, "items");

    if (!json_is_object(items)) {
        return RG_OK;
    }

    for (i = 0; i < size; i++) {
        if (rg_tool_args_member(ctx, v, NULL, i, json_array_get(v, i), items)
            != RG_OK)
        {
            return RG_ERROR;
        }
    }

    return RG_OK;
}


/* "T: unknown parameter "a.x"; the parameters are: a, b" */
static rg_int_t
rg_tool_args_unknown(rg_tool_args_ctx_t *ctx, const char *key,
    json_t *props)
{
    size_t       saved, n;
    json_t      *sub;
    rg_uint_t    i;
    const char  *name;

    saved = ctx->plen;

    if (ctx->plen) {
        rg_tool_msg_printf(&ctx->msg, "%s: unknown parameter \"%s.",
                                ctx->tool, ctx->path);
    } else {
        rg_tool_msg_printf(&ctx->msg, "%s: unknown parameter \"",
                                ctx->tool);
    }

    n = strlen(key);

    if (n > RG_TOOL_ARGS_NAME) {
        n = rg_tool_utf8_boundary(key, RG_TOOL_ARGS_NAME);
        rg_tool_msg_printf(&ctx->msg, "%.*s…\"; ", (int) n, key);

    } else {
        rg_tool_msg_printf(&ctx->msg, "%s\"; ", key);
    }

    if (json_object_size(props) == 0) {
        if (saved) {
            rg_tool_msg_printf(&ctx->msg, "\"%s\" takes no parameters",
                                    ctx->path);
        } else {
            rg_tool_msg_printf(&ctx->msg, "this tool takes no parameters");
        }

        return rg_tool_args_fail(ctx);
    }

    rg_tool_msg_printf(&ctx->msg, "the parameters are: ");

    i = 0;

    json_object_foreach(props, name, sub) {
        if (i == RG_TOOL_ARGS_LIST) {
            rg_tool_msg_printf(&ctx->msg, ", …");
            break;
        }

        rg_tool_msg_printf(&ctx->msg, "%s%s", i ? ", " : "", name);
        i++;
    }

    return rg_tool_args_fail(ctx);
}


static rg_int_t
rg_tool_args_object(rg_tool_args_ctx_t *ctx, json_t *v, json_t *schema)
{
    size_t       i, saved;
    json_t      *props, *more, *req, *r, *sub, *m;
    const char  *key;

    props = json_object_get(schema, "properties");
    if (!json_is_object(props)) {
        props = NULL;
    }

    more = json_object_get(schema, "additionalProperties");

    if (json_is_false(more)) {
        json_object_foreach(v, key, m) {
            if (props == NULL || json_object_get(props, key) == NULL) {
                return rg_tool_args_unknown(ctx, key, props);
            }
        }
    }

    req = json_object_get(schema, "required");

    json_array_foreach(req, i, r) {
        key = json_string_value(r);

        if (key && json_object_get(v, key) == NULL) {
            saved = rg_tool_args_push(ctx, key, strlen(key), 0);
            rg_tool_args_subject(ctx);
            rg_tool_msg_printf(&ctx->msg, "is required");
            rg_tool_args_pop(ctx, saved);

            return rg_tool_args_fail(ctx);
        }
    }

    if (props) {
        json_object_foreach(props, key, sub) {
            m = json_object_get(v, key);

            if (m && rg_tool_args_member(ctx, v, key, 0, m, sub) != RG_OK) {
                return RG_ERROR;
            }
        }
    }

    if (json_is_object(more)) {
        /* replacing the value of a key keeps the iteration valid */
        json_object_foreach(v, key, m) {
            if (props && json_object_get(props, key)) {
                continue;
            }

            if (rg_tool_args_member(ctx, v, key, 0, m, more) != RG_OK) {
                return RG_ERROR;
            }
        }
    }

    return RG_OK;
}


/* checks *vp against schema; a coerced value replaces *vp as a new
 * reference that the caller puts in the old one's place */
static rg_int_t
rg_tool_args_check(rg_tool_args_ctx_t *ctx, json_t **vp, json_t *schema)
{
    json_t     *v, *c;
    rg_uint_t   types;

    if (!json_is_object(schema) || ctx->depth >= RG_TOOL_ARGS_DEPTH) {
        return RG_OK;
    }

    v = *vp;
    types = rg_tool_args_types_of(json_object_get(schema, "type"));

    if (types && !rg_tool_args_fits(v, types)) {
        c = rg_tool_args_coerce(v, types);

        if (c == NULL) {
            return rg_tool_args_expected(ctx, schema, types, v);
        }

        *vp = c;
        v = c;
    }

    if (rg_tool_args_enum(ctx, v, schema) != RG_OK) {
        return RG_ERROR;
    }

    switch (json_typeof(v)) {

    case JSON_INTEGER:
    case JSON_REAL:
        return rg_tool_args_number(ctx, v, schema, types);

    case JSON_STRING:
        return rg_tool_args_string(ctx, v, schema);

    case JSON_ARRAY:
        return rg_tool_args_array(ctx, v, schema);

    case JSON_OBJECT:
        return rg_tool_args_object(ctx, v, schema);

    default:
        return RG_OK;
    }
}


rg_int_t
rg_tool_args_validate(const char *tool, json_t *args, json_t *schema,
    char *err, size_t errlen)
{
    json_t              *v;
    rg_int_t             rc;
    rg_tool_args_ctx_t   ctx;

    ctx.tool = tool ? tool : "the tool";
    ctx.plen = 0;
    ctx.path[0] = '\0';
    ctx.depth = 0;

    rg_tool_msg_init(&ctx.msg, err, errlen);

    if (!json_is_object(schema)) {
        return RG_OK;
    }

    if (!json_is_object(args)) {
        rg_tool_msg_printf(&ctx.msg, "%s: the arguments must be one JSON "
                                "object, got ", ctx.tool);

        if (args) {
            rg_tool_msg_got(&ctx.msg, args);
        } else {
            rg_tool_msg_printf(&ctx.msg, "nothing");
        }

        return rg_tool_args_fail(&ctx);
    }

    /* an object is never coerced, so args stays in its place */
    v = args;
    rc = rg_tool_args_check(&ctx, &v, schema);

    if (v != args) {
        json_decref(v);
    }

    return rc;
}


/* canonical JSON ------------------------------------------------------- */

char *
rg_tool_args_canonical(json_t *args, size_t *len)
{
    size_t  n;
    char   *s;

    /* json_dumps(JSON_SORT_KEYS | JSON_COMPACT)'s bytes */
    n = 0;
    s = args ? rg_json_dumps(args, RG_JSON_SORT_KEYS, &n) : NULL;

    if (len) {
        *len = n;
    }

    return s;
}
