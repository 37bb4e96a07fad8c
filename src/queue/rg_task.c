/* rg_task.c: reads one JSONL task line of `reagent batch` (rg_task.h).
 * Everything goes through jansson; the strings returned stay owned by the
 * parsed JSON value until rg_task_free(). Limits a task may set are
 * checked here, so that a bad one is an `invalid` result naming its line,
 * never a session that fails later. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_task.h>
#include <jansson.h>


static rg_int_t
rg_task_invalid(rg_task_t *t, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    vsnprintf(t->error, sizeof(t->error), fmt, args);
    va_end(args);

    return RG_DECLINED;
}


/* "max_rounds": 4, "max_tokens": 20000, "deadline": "30s" or 30000 (ms) */
static rg_int_t
rg_task_limits(rg_task_t *t, json_t *task, rg_uint_t lineno)
{
    json_t    *v;
    rg_str_t   str;

    v = json_object_get(task, "max_rounds");
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < 1
            || json_integer_value(v) > 10000)
        {
            return rg_task_invalid(t, "line %lu: \"max_rounds\" must be an "
                                   "integer from 1 to 10000",
                                   (unsigned long) lineno);
        }
        t->max_rounds = (rg_uint_t) json_integer_value(v);
    }

    v = json_object_get(task, "max_tokens");
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            return rg_task_invalid(t, "line %lu: \"max_tokens\" must be a "
                                   "non-negative integer (0: no budget)",
                                   (unsigned long) lineno);
        }
        t->max_tokens = json_integer_value(v);
    }

    v = json_object_get(task, "deadline");
    if (v) {
        if (json_is_integer(v) && json_integer_value(v) >= 0) {
            t->deadline = (rg_msec_t) json_integer_value(v);

        } else if (json_is_string(v)) {
            str.data = (char *) json_string_value(v);
            str.len = json_string_length(v);
            if (rg_conf_parse_msec(&str, &t->deadline) != RG_OK) {
                t->deadline = RG_CONF_UNSET_MSEC;
            }
        }

        if (t->deadline == RG_CONF_UNSET_MSEC) {
            return rg_task_invalid(t, "line %lu: \"deadline\" must be a time "
                                   "such as \"30s\" or a number of "
                                   "milliseconds", (unsigned long) lineno);
        }
    }

    /* a tenant names a key of the store: a short, plain name */
    v = json_object_get(task, "tenant");
    if (v && !json_is_null(v)) {
        const char  *p;

        p = json_is_string(v) ? json_string_value(v) : NULL;

        if (p == NULL || json_string_length(v) == 0
            || json_string_length(v) > 128
            || strspn(p, "abcdefghijklmnopqrstuvwxyz"
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-@")
               != json_string_length(v))
        {
            return rg_task_invalid(t, "line %lu: \"tenant\" must be a "
                                   "name of 1 to 128 letters, digits and "
                                   "._:-@", (unsigned long) lineno);
        }

        t->tenant = p;
    }

    return RG_OK;
}


rg_int_t
rg_task_parse(rg_task_t *t, const char *line, size_t len, rg_uint_t lineno)
{
    json_t        *task, *jid, *jagent, *jinput;
    rg_int_t       rc;
    json_error_t   err;

    memset(t, 0, sizeof(rg_task_t));
    t->line = lineno;
    t->max_tokens = -1;
    t->deadline = RG_CONF_UNSET_MSEC;

    snprintf(t->idbuf, sizeof(t->idbuf), "line-%lu", (unsigned long) lineno);
    t->id = t->idbuf;

    task = json_loadb(line, len, 0, &err);

    if (task == NULL) {
        if (json_error_code(&err) == json_error_out_of_memory) {
            return RG_ERROR;
        }

        return rg_task_invalid(t, "line %lu is not valid JSON: %s",
                               (unsigned long) lineno, err.text);
    }

    t->json = task;

    if (!json_is_object(task)) {
        return rg_task_invalid(t, "line %lu is not a JSON object",
                               (unsigned long) lineno);
    }

    jid = json_object_get(task, "id");
    jagent = json_object_get(task, "agent");
    jinput = json_object_get(task, "input");

    if (json_is_string(jid)) {
        t->id = json_string_value(jid);

    } else if (json_is_integer(jid)) {
        snprintf(t->idbuf, sizeof(t->idbuf), "%lld",
                 (long long) json_integer_value(jid));
    }

    if (!json_is_string(jinput) || json_string_length(jinput) == 0) {
        return rg_task_invalid(t, "line %lu: \"input\" is missing or not a "
                               "non-empty string", (unsigned long) lineno);
    }

    t->input = json_string_value(jinput);
    t->input_len = json_string_length(jinput);

    if (jagent && !json_is_null(jagent)) {
        if (!json_is_string(jagent)) {
            return rg_task_invalid(t, "line %lu: \"agent\" must be a string",
                                   (unsigned long) lineno);
        }

        t->agent = json_string_value(jagent);
        t->agent_len = json_string_length(jagent);
    }

    rc = rg_task_limits(t, task, lineno);

    return rc;
}


void
rg_task_free(rg_task_t *t)
{
    if (t->json) {
        json_decref(t->json);
        t->json = NULL;
    }
}
