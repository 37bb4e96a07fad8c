/* calc.c: the "calc" tool module: evaluates an arithmetic expression.
 *
 * Owns a small recursive-descent parser over doubles (numbers, + - * / % ^,
 * parentheses, unary signs, a few functions and the constants pi and e) and
 * the formatting of its result. It never evals or spawns anything: it
 * reads the string argument "expression" and answers at once.
 *
 * Grammar (^ is right-associative and binds tighter than a unary sign, so
 * -2^2 is -4 and 2^-1 is 0.5):
 *
 *     expr    = term { ("+" | "-") term }
 *     term    = unary { ("*" | "/" | "%") unary }
 *     unary   = ("+" | "-") unary | power
 *     power   = primary [ "^" unary ]
 *     primary = number | "(" expr ")" | name [ "(" expr { "," expr } ")" ]
 *
 * Positions in error messages count bytes from 1. */

#include <rg_tool_module.h>

#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


#define RG_CALC_MAX_LEN     1024
#define RG_CALC_MAX_DEPTH   64
#define RG_CALC_ERR_LEN     256
#define RG_CALC_NAME_SHOWN  32      /* bytes of a name quoted in errors */


typedef struct {
    const char               *start;
    const char               *p;
    const char               *end;
    int                       depth;
    char                     *err;
    size_t                    err_len;
} rg_calc_parser_t;


typedef struct {
    const char               *name;
    double                  (*fn)(double);
} rg_calc_func_t;


static int rg_calc_eval(const char *s, size_t len, double *result, char *err,
    size_t err_len);
static int rg_calc_expr(rg_calc_parser_t *cp, double *v);
static int rg_calc_term(rg_calc_parser_t *cp, double *v);
static int rg_calc_unary(rg_calc_parser_t *cp, double *v);
static int rg_calc_power(rg_calc_parser_t *cp, double *v);
static int rg_calc_primary(rg_calc_parser_t *cp, double *v);
static int rg_calc_number(rg_calc_parser_t *cp, double *v);
static int rg_calc_name(rg_calc_parser_t *cp, double *v);
static int rg_calc_call(rg_calc_parser_t *cp, const char *name, size_t len,
    double *v);
static const rg_calc_func_t *rg_calc_func(const char *name, size_t len);
static int rg_calc_is(const char *name, size_t len, const char *known);
static int rg_calc_enter(rg_calc_parser_t *cp);
static int rg_calc_finite(rg_calc_parser_t *cp, double v);
static int rg_calc_unexpected(rg_calc_parser_t *cp);
static void rg_calc_skip_space(rg_calc_parser_t *cp);
static int rg_calc_error(rg_calc_parser_t *cp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static size_t rg_calc_format(double v, char *buf, size_t size);
static int rg_calc_start(rg_tool_call_t *call);


static const rg_calc_func_t  rg_calc_funcs[] = {
    { "sqrt",  sqrt },
    { "abs",   fabs },
    { "floor", floor },
    { "ceil",  ceil },
    { "round", round },
    { "ln",    log },
    { "log10", log10 },
    { "sin",   sin },
    { "cos",   cos },
    { "tan",   tan },
    { NULL,    NULL }
};


static const rg_tool_t  rg_calc_tools[] = {
    { "calc",
      "Evaluate an arithmetic expression exactly as written and return the "
      "number. Supports + - * / % ^ (power), parentheses, unary minus, "
      "decimals and exponents (1e3), the functions sqrt, abs, floor, ceil, "
      "round, ln, log10, sin, cos, tan (radians), min(a,b,...), "
      "max(a,b,...) and the constants pi and e.",
      "{\"type\":\"object\","
       "\"properties\":{"
        "\"expression\":{\"type\":\"string\","
         "\"description\":\"The expression to evaluate, at most 1024 bytes, "
          "such as 2*(3+4) or sqrt(2)^2\","
         "\"examples\":[\"2*(3+4)\",\"17*23+4\",\"sqrt(144)/3\","
         "\"2^10-1\",\"(1+2)*(3+4)\",\"100/8\",\"max(3,9,4)\","
         "\"round(pi*1000)\"]}},"
       "\"required\":[\"expression\"]}",
      RG_TOOL_READ_ONLY, 0, rg_calc_start, NULL },

    { NULL, NULL, NULL, 0, 0, NULL, NULL }
};


__attribute__((visibility("default")))
rg_tool_module_t  rg_tool_module = {
    RG_TOOL_MODULE_V1,
    "calc",
    NULL,
    NULL,
    NULL,
    NULL,
    rg_calc_tools
};


/* Numbers are read and printed in the "C" locale whatever the process's
 * locale is; uselocale() affects only the calling thread. */
static int
rg_calc_start(rg_tool_call_t *call)
{
    int          rc;
    char         err[RG_CALC_ERR_LEN], buf[64];
    double       v;
    size_t       len, n;
    locale_t     c_locale, saved;
    const char  *s;

    if (call->host->arg_string(call, "expression", &s, &len) != 0) {
        if (call->host->arg_number(call, "expression", &v) == 0) {
            call->host->fail(call, "argument 'expression' must be a string, "
                             "such as \"2*(3+4)\"");
        } else {
            call->host->fail(call, "missing argument 'expression'");
        }

        return RG_TOOL_OK;
    }

    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t) 0);
    if (c_locale == (locale_t) 0) {
        call->host->fail(call, "out of memory");
        return RG_TOOL_OK;
    }

    saved = uselocale(c_locale);

    rc = rg_calc_eval(s, len, &v, err, sizeof(err));
    n = (rc == 0) ? rg_calc_format(v, buf, sizeof(buf)) : 0;

    uselocale(saved);
    freelocale(c_locale);

    if (rc != 0) {
        call->host->fail(call, "%s", err);
        return RG_TOOL_OK;
    }

    call->host->done(call, buf, n);

    return RG_TOOL_OK;
}


/* The parser: evaluates s[0..len) into *result and returns 0, or returns
 * -1 with a short message in err. */
static int
rg_calc_eval(const char *s, size_t len, double *result, char *err,
    size_t err_len)
{
    double            v;
    rg_calc_parser_t  cp;

    if (len > RG_CALC_MAX_LEN) {
        snprintf(err, err_len, "expression too long (max %d bytes)",
                 RG_CALC_MAX_LEN);
        return -1;
    }

    cp.start = s;
    cp.p = s;
    cp.end = s + len;
    cp.depth = 0;
    cp.err = err;
    cp.err_len = err_len;

    rg_calc_skip_space(&cp);

    if (cp.p == cp.end) {
        snprintf(err, err_len, "expression is empty");
        return -1;
    }

    if (rg_calc_expr(&cp, &v) != 0) {
        return -1;
    }

    if (cp.p != cp.end) {
        if (*cp.p == ')') {
            return rg_calc_error(&cp, "unbalanced parentheses: unexpected "
                                 "')' at position %zu",
                                 (size_t) (cp.p - cp.start) + 1);
        }

        return rg_calc_unexpected(&cp);
    }

    *result = v;

    return 0;
}


static int
rg_calc_expr(rg_calc_parser_t *cp, double *v)
{
    char    op;
    double  rhs;

    if (rg_calc_term(cp, v) != 0) {
        return -1;
    }

    for ( ;; ) {
        rg_calc_skip_space(cp);

        if (cp->p == cp->end || (*cp->p != '+' && *cp->p != '-')) {
            return 0;
        }

        op = *cp->p++;

        if (rg_calc_term(cp, &rhs) != 0) {
            return -1;
        }

        *v = (op == '+') ? *v + rhs : *v - rhs;

        if (rg_calc_finite(cp, *v) != 0) {
            return -1;
        }
    }
}


static int
rg_calc_term(rg_calc_parser_t *cp, double *v)
{
    char    op;
    double  rhs;

    if (rg_calc_unary(cp, v) != 0) {
        return -1;
    }

    for ( ;; ) {
        rg_calc_skip_space(cp);

        if (cp->p == cp->end
            || (*cp->p != '*' && *cp->p != '/' && *cp->p != '%'))
        {
            return 0;
        }

        op = *cp->p++;

        if (rg_calc_unary(cp, &rhs) != 0) {
            return -1;
        }

        if (op == '*') {
            *v *= rhs;

        } else if (rhs == 0.0) {
            return rg_calc_error(cp, "division by zero");

        } else if (op == '/') {
            *v /= rhs;

        } else {
            *v = fmod(*v, rhs);
        }

        if (rg_calc_finite(cp, *v) != 0) {
            return -1;
        }
    }
}


static int
rg_calc_unary(rg_calc_parser_t *cp, double *v)
{
    int   rc;
    char  op;

    rg_calc_skip_space(cp);

    if (cp->p == cp->end || (*cp->p != '-' && *cp->p != '+')) {
        return rg_calc_power(cp, v);
    }

    op = *cp->p++;

    if (rg_calc_enter(cp) != 0) {
        return -1;
    }

    rc = rg_calc_unary(cp, v);
    cp->depth--;

    if (rc == 0 && op == '-') {
        *v = -*v;
    }

    return rc;
}


static int
rg_calc_power(rg_calc_parser_t *cp, double *v)
{
    int     rc;
    double  ex;

    if (rg_calc_primary(cp, v) != 0) {
        return -1;
    }

    rg_calc_skip_space(cp);

    if (cp->p == cp->end || *cp->p != '^') {
        return 0;
    }

    cp->p++;

    /* right-associative: 2^3^2 is 2^(3^2); the exponent may be signed */

    if (rg_calc_enter(cp) != 0) {
        return -1;
    }

    rc = rg_calc_unary(cp, &ex);
    cp->depth--;

    if (rc != 0) {
        return -1;
    }

    if (*v == 0.0 && ex < 0.0) {
        return rg_calc_error(cp, "division by zero");
    }

    *v = pow(*v, ex);

    return rg_calc_finite(cp, *v);
}


static int
rg_calc_primary(rg_calc_parser_t *cp, double *v)
{
    int  rc;

    rg_calc_skip_space(cp);

    if (cp->p == cp->end) {
        return rg_calc_error(cp, "unexpected end of expression at "
                             "position %zu", (size_t) (cp->p - cp->start) + 1);
    }

    if ((*cp->p >= '0' && *cp->p <= '9') || *cp->p == '.') {
        return rg_calc_number(cp, v);
    }

    if ((*cp->p >= 'a' && *cp->p <= 'z') || (*cp->p >= 'A' && *cp->p <= 'Z')
        || *cp->p == '_')
    {
        return rg_calc_name(cp, v);
    }

    if (*cp->p != '(') {
        return rg_calc_unexpected(cp);
    }

    cp->p++;

    if (rg_calc_enter(cp) != 0) {
        return -1;
    }

    rc = rg_calc_expr(cp, v);
    cp->depth--;

    if (rc != 0) {
        return -1;
    }

    if (cp->p == cp->end || *cp->p != ')') {
        return rg_calc_error(cp, "unbalanced parentheses: missing ')' at "
                             "position %zu", (size_t) (cp->p - cp->start) + 1);
    }

    cp->p++;

    return 0;
}


/* digits [ "." digits ] [ ("e" | "E") [ "+" | "-" ] digits ]; a number
 * needs at least one digit, and "2e" is the number 2 followed by "e". */
static int
rg_calc_number(rg_calc_parser_t *cp, double *v)
{
    char         buf[RG_CALC_MAX_LEN + 1], *end;
    size_t       len, digits;
    const char  *p, *q;

    p = cp->p;
    digits = 0;

    while (p < cp->end && *p >= '0' && *p <= '9') {
        p++;
        digits++;
    }

    if (p < cp->end && *p == '.') {
        p++;

        while (p < cp->end && *p >= '0' && *p <= '9') {
            p++;
            digits++;
        }
    }

    if (digits == 0) {
        return rg_calc_unexpected(cp);
    }

    if (p < cp->end && (*p == 'e' || *p == 'E')) {
        q = p + 1;

        if (q < cp->end && (*q == '+' || *q == '-')) {
            q++;
        }

        if (q < cp->end && *q >= '0' && *q <= '9') {
            p = q;

            while (p < cp->end && *p >= '0' && *p <= '9') {
                p++;
            }
        }
    }

    len = (size_t) (p - cp->p);

    memcpy(buf, cp->p, len);
    buf[len] = '\0';

    *v = strtod(buf, &end);

    if (end != buf + len) {
        return rg_calc_error(cp, "malformed number '%.*s' at position %zu",
                             RG_CALC_NAME_SHOWN, buf,
                             (size_t) (cp->p - cp->start) + 1);
    }

    if (!isfinite(*v)) {
        return rg_calc_error(cp, "number '%.*s' at position %zu is too large",
                             RG_CALC_NAME_SHOWN, buf,
                             (size_t) (cp->p - cp->start) + 1);
    }

    cp->p = p;

    return 0;
}


/* A constant, or a function when "(" follows (spaces allowed between).
 * Names are matched without regard to case. */
static int
rg_calc_name(rg_calc_parser_t *cp, double *v)
{
    size_t       len;
    const char  *name;

    name = cp->p;

    while (cp->p < cp->end
           && ((*cp->p >= 'a' && *cp->p <= 'z')
               || (*cp->p >= 'A' && *cp->p <= 'Z')
               || (*cp->p >= '0' && *cp->p <= '9') || *cp->p == '_'))
    {
        cp->p++;
    }

    len = (size_t) (cp->p - name);

    rg_calc_skip_space(cp);

    if (cp->p < cp->end && *cp->p == '(') {
        return rg_calc_call(cp, name, len, v);
    }

    if (rg_calc_is(name, len, "pi")) {
        *v = M_PI;
        return 0;
    }

    if (rg_calc_is(name, len, "e")) {
        *v = M_E;
        return 0;
    }

    if (rg_calc_is(name, len, "min") || rg_calc_is(name, len, "max")
        || rg_calc_func(name, len) != NULL)
    {
        return rg_calc_error(cp, "function '%.*s' needs its arguments in "
                             "parentheses, as in %.*s(2)",
                             (int) len, name, (int) len, name);
    }

    return rg_calc_error(cp, "unknown name '%.*s' at position %zu; the "
                         "constants are pi and e",
                         (int) (len < RG_CALC_NAME_SHOWN
                                ? len : RG_CALC_NAME_SHOWN),
                         name, (size_t) (name - cp->start) + 1);
}


/* cp->p is at the "(" after the name */
static int
rg_calc_call(rg_calc_parser_t *cp, const char *name, size_t len, double *v)
{
    int                    minmax, rc;
    double                 arg;
    size_t                 n;
    const rg_calc_func_t  *fn;

    minmax = 0;
    fn = NULL;

    if (rg_calc_is(name, len, "min")) {
        minmax = -1;

    } else if (rg_calc_is(name, len, "max")) {
        minmax = 1;

    } else {
        fn = rg_calc_func(name, len);

        if (fn == NULL) {
            return rg_calc_error(cp, "unknown function '%.*s'",
                                 (int) (len < RG_CALC_NAME_SHOWN
                                        ? len : RG_CALC_NAME_SHOWN),
                                 name);
        }
    }

    cp->p++;

    rg_calc_skip_space(cp);

    if (cp->p < cp->end && *cp->p == ')') {
        if (minmax) {
            return rg_calc_error(cp, "function '%.*s' takes at least 1 "
                                 "argument", (int) len, name);
        }

        return rg_calc_error(cp, "function '%s' takes 1 argument, got 0",
                             fn->name);
    }

    if (rg_calc_enter(cp) != 0) {
        return -1;
    }

    for (n = 0; /* void */; n++) {
        rc = rg_calc_expr(cp, &arg);
        if (rc != 0) {
            cp->depth--;
            return -1;
        }

        if (n == 0 || (minmax < 0 && arg < *v) || (minmax > 0 && arg > *v)) {
            *v = arg;
        }

        if (cp->p == cp->end || *cp->p != ',') {
            break;
        }

        cp->p++;
    }

    cp->depth--;

    if (cp->p == cp->end || *cp->p != ')') {
        return rg_calc_error(cp, "unbalanced parentheses: missing ')' at "
                             "position %zu", (size_t) (cp->p - cp->start) + 1);
    }

    cp->p++;

    if (minmax) {
        return 0;
    }

    if (n != 0) {
        return rg_calc_error(cp, "function '%s' takes 1 argument, got %zu",
                             fn->name, n + 1);
    }

    *v = fn->fn(*v);

    return rg_calc_finite(cp, *v);
}


static const rg_calc_func_t *
rg_calc_func(const char *name, size_t len)
{
    const rg_calc_func_t  *fn;

    for (fn = rg_calc_funcs; fn->name; fn++) {
        if (rg_calc_is(name, len, fn->name)) {
            return fn;
        }
    }

    return NULL;
}


static int
rg_calc_is(const char *name, size_t len, const char *known)
{
    return strlen(known) == len && strncasecmp(name, known, len) == 0;
}


/* one more level of "(", sign or "^"; bounds the recursion */
static int
rg_calc_enter(rg_calc_parser_t *cp)
{
    if (++cp->depth > RG_CALC_MAX_DEPTH) {
        return rg_calc_error(cp, "expression nested too deeply (max %d "
                             "levels)", RG_CALC_MAX_DEPTH);
    }

    return 0;
}


/* Every intermediate value is checked, so that max(sqrt(-1),1) fails
 * instead of quietly dropping the NaN. */
static int
rg_calc_finite(rg_calc_parser_t *cp, double v)
{
    if (!isfinite(v)) {
        return rg_calc_error(cp, "result is not a finite number (overflow "
                             "or a value outside a function's domain)");
    }

    return 0;
}


static int
rg_calc_unexpected(rg_calc_parser_t *cp)
{
    unsigned char  c;
    size_t         pos;

    c = (unsigned char) *cp->p;
    pos = (size_t) (cp->p - cp->start) + 1;

    if (c > 0x20 && c < 0x7f) {
        return rg_calc_error(cp, "unexpected character '%c' at position %zu",
                             c, pos);
    }

    return rg_calc_error(cp, "unexpected byte 0x%02x at position %zu", c, pos);
}


static void
rg_calc_skip_space(rg_calc_parser_t *cp)
{
    while (cp->p < cp->end
           && (*cp->p == ' ' || *cp->p == '\t' || *cp->p == '\n'
               || *cp->p == '\r'))
    {
        cp->p++;
    }
}


static int
rg_calc_error(rg_calc_parser_t *cp, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(cp->err, cp->err_len, fmt, ap);
    va_end(ap);

    return -1;
}


/* "42" for an integral value below 1e15, else %.15g ("2.5", "1e+20") */
static size_t
rg_calc_format(double v, char *buf, size_t size)
{
    int  n;

    if (v == floor(v) && fabs(v) < 1e15) {
        n = snprintf(buf, size, "%lld", (long long) v);

    } else {
        n = snprintf(buf, size, "%.15g", v);
    }

    return (n > 0 && (size_t) n < size) ? (size_t) n : 0;
}
