/* rg_tool_host_args.c: the members of a host table that any host shares,
 * in the worker and in an isolated helper alike: the argument readers
 * over call->host_args (a checked JSON object) and the parsers of the
 * configuration's units. They touch nothing but what they are given. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_host_args.h>
#include <jansson.h>


static json_t *
rg_tool_host_arg(rg_tool_call_t *call, const char *key)
{
    return json_is_object((json_t *) call->host_args)
           ? json_object_get(call->host_args, key) : NULL;
}


static int
rg_tool_host_arg_string(rg_tool_call_t *call, const char *key,
    const char **s, size_t *len)
{
    json_t  *v;

    v = rg_tool_host_arg(call, key);
    if (!json_is_string(v)) {
        return -1;
    }

    *s = json_string_value(v);
    if (len) {
        *len = json_string_length(v);
    }

    return 0;
}


static int
rg_tool_host_arg_number(rg_tool_call_t *call, const char *key, double *n)
{
    json_t  *v;

    v = rg_tool_host_arg(call, key);
    if (!json_is_number(v)) {
        return -1;
    }

    *n = json_number_value(v);

    return 0;
}


static int
rg_tool_host_arg_int(rg_tool_call_t *call, const char *key, long long *n)
{
    json_t  *v;
    double   d;

    v = rg_tool_host_arg(call, key);

    if (json_is_integer(v)) {
        *n = json_integer_value(v);
        return 0;
    }

    if (json_is_real(v)) {
        d = json_real_value(v);
        if (d >= -9.2e18 && d <= 9.2e18 && d == (double) (long long) d) {
            *n = (long long) d;
            return 0;
        }
    }

    return -1;
}


static int
rg_tool_host_arg_bool(rg_tool_call_t *call, const char *key, int *b)
{
    json_t  *v;

    v = rg_tool_host_arg(call, key);
    if (!json_is_boolean(v)) {
        return -1;
    }

    *b = json_is_true(v);

    return 0;
}


static int
rg_tool_host_arg_array_len(rg_tool_call_t *call, const char *key, size_t *n)
{
    json_t  *v;

    v = rg_tool_host_arg(call, key);
    if (!json_is_array(v)) {
        return -1;
    }

    *n = json_array_size(v);

    return 0;
}


static int
rg_tool_host_arg_array_string(rg_tool_call_t *call, const char *key,
    size_t i, const char **s, size_t *len)
{
    json_t  *v;

    v = json_array_get(rg_tool_host_arg(call, key), i);
    if (!json_is_string(v)) {
        return -1;
    }

    *s = json_string_value(v);
    if (len) {
        *len = json_string_length(v);
    }

    return 0;
}


static int
rg_tool_host_parse_size(const char *s, size_t *out)
{
    rg_str_t  str;

    str.data = (char *) s;
    str.len = strlen(s);

    return rg_conf_parse_size(&str, out) == RG_OK ? 0 : -1;
}


static int
rg_tool_host_parse_msec(const char *s, uint64_t *out)
{
    rg_str_t   str;
    rg_msec_t  ms;

    str.data = (char *) s;
    str.len = strlen(s);

    if (rg_conf_parse_msec(&str, &ms) != RG_OK) {
        return -1;
    }

    *out = ms;

    return 0;
}


void
rg_tool_host_args_set(rg_tool_host_t *host)
{
    host->arg_string = rg_tool_host_arg_string;
    host->arg_number = rg_tool_host_arg_number;
    host->arg_int = rg_tool_host_arg_int;
    host->arg_bool = rg_tool_host_arg_bool;
    host->arg_array_len = rg_tool_host_arg_array_len;
    host->arg_array_string = rg_tool_host_arg_array_string;
    host->parse_size = rg_tool_host_parse_size;
    host->parse_msec = rg_tool_host_parse_msec;
}
