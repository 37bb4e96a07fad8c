/* rg_task.c: reads one JSONL task line of `reagent batch` (rg_task.h).
 * Everything goes through jansson; the strings returned stay owned by the
 * parsed JSON value until rg_task_free(). Limits a task may set are
 * checked here, so that a bad one is an `invalid` result naming its line,
 * never a session that fails later. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_task.h>
#include <rg_traceparent.h>
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


/* "max_rounds": 4, "max_tokens": 20000, "max_cost": 0.25 (dollars),
 * "deadline": "30s" or 30000 (ms) */
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

    v = json_object_get(task, "max_cost");
    if (v) {
        if (!json_is_number(v) || json_number_value(v) < 0
            || json_number_value(v) > 1e9)
        {
            return rg_task_invalid(t, "line %lu: \"max_cost\" must be a "
                                   "number of dollars, 0 or more (0: no "
                                   "budget)", (unsigned long) lineno);
        }
        t->max_cost = json_number_value(v);
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

    /* W3C Trace Context: one that is not valid is ignored, and the
     * session starts a trace of its own, as the spec says; the task runs */
    v = json_object_get(task, "traceparent");
    if (v && !json_is_null(v)) {
        rg_traceparent_t  tp;

        if (json_is_string(v)
            && rg_traceparent_parse(&tp, json_string_value(v),
                                    json_string_length(v)) == RG_OK)
        {
            t->traceparent = json_string_value(v);
            t->traceparent_len = json_string_length(v);

        } else {
            t->traceparent_invalid = 1;
        }
    }

    /* "park": a dangerous call waits for an operator (serve) */
    v = json_object_get(task, "approval");
    if (v && !json_is_null(v)) {
        if (json_is_string(v) && strcmp(json_string_value(v), "park") == 0) {
            t->park = 1;

        } else if (!json_is_string(v)
                   || strcmp(json_string_value(v), "deny") != 0)
        {
            return rg_task_invalid(t, "line %lu: \"approval\" must be "
                                   "\"park\" (a dangerous call waits for "
                                   "an operator's decision) or \"deny\"",
                                   (unsigned long) lineno);
        }
    }

    /* its events recorded for whoever follows it (the HTTP API) */
    v = json_object_get(task, "events");
    if (v && !json_is_null(v)) {
        if (!json_is_boolean(v)) {
            return rg_task_invalid(t, "line %lu: \"events\" must be true "
                                   "or false", (unsigned long) lineno);
        }
        t->events = json_is_true(v);
    }

    /* queued again by `submit --wait` after Redis lost it: an earlier
     * run may have made its side effects (rg_turn.c) */
    v = json_object_get(task, "after_loss");
    if (v && !json_is_null(v)) {
        if (!json_is_boolean(v)) {
            return rg_task_invalid(t, "line %lu: \"after_loss\" must be "
                                   "true or false", (unsigned long) lineno);
        }
        t->after_loss = json_is_true(v);
    }

    return RG_OK;
}


char *
rg_task_after_loss(const char *text)
{
    char    *out;
    json_t  *task;

    task = json_loads(text, JSON_DISABLE_EOF_CHECK, NULL);
    if (!json_is_object(task)
        || json_object_set_new(task, "after_loss", json_true()) != 0)
    {
        json_decref(task);
        return NULL;
    }

    out = json_dumps(task, JSON_COMPACT);
    json_decref(task);

    return out;
}


/* the keys a task may have */
static const char  *rg_task_keys[] = {
    "id", "agent", "input", "max_rounds", "max_tokens", "max_cost",
    "deadline", "tenant",
    "traceparent", "approval", "events", "after_loss"
};


/* a key that is no task's is a mistake to report, not to run past */
static rg_int_t
rg_task_keys_check(rg_task_t *t, json_t *task, rg_uint_t lineno)
{
    size_t       i, best, d;
    json_t      *v;
    const char  *key, *near;

    json_object_foreach(task, key, v) {
        near = NULL;
        best = 3;

        for (i = 0; i < rg_nelems(rg_task_keys); i++) {
            if (strcmp(key, rg_task_keys[i]) == 0) {
                break;
            }

            d = rg_conf_distance(key, strlen(key), rg_task_keys[i],
                                 strlen(rg_task_keys[i]));
            if (d < best) {
                best = d;
                near = rg_task_keys[i];
            }
        }

        if (i < rg_nelems(rg_task_keys)) {
            continue;
        }

        if (near) {
            return rg_task_invalid(t, "line %lu: unknown key \"%.64s\"; "
                                   "did you mean \"%s\"?",
                                   (unsigned long) lineno, key, near);
        }

        return rg_task_invalid(t, "line %lu: unknown key \"%.64s\" (a task "
                               "has id, agent, input, max_rounds, max_tokens, "
                               "max_cost, deadline, tenant, traceparent, "
                               "approval and events)",
                               (unsigned long) lineno, key);
    }

    return RG_OK;
}


/* "input" as messages: each a system, user or assistant message whose
 * content is a string or text parts (joined into a string in place), the
 * last one the user's */
static rg_int_t
rg_task_messages(rg_task_t *t, json_t *msgs, rg_uint_t lineno)
{
    size_t       i, k;
    json_t      *m, *role, *content, *part, *text;
    rg_buf_t     b;
    const char  *r, *type;

    if (json_array_size(msgs) == 0) {
        return rg_task_invalid(t, "line %lu: \"input\" is an empty list of "
                               "messages", (unsigned long) lineno);
    }

    r = NULL;
    content = NULL;

    json_array_foreach(msgs, i, m) {
        role = json_object_get(m, "role");
        content = json_object_get(m, "content");
        r = json_string_value(role);

        if (!json_is_object(m)) {
            return rg_task_invalid(t, "line %lu: \"input\"[%lu] is not a "
                                   "message {\"role\", \"content\"}",
                                   (unsigned long) lineno, (unsigned long) i);
        }

        if (r == NULL || (strcmp(r, "system") != 0 && strcmp(r, "user") != 0
                          && strcmp(r, "assistant") != 0))
        {
            return rg_task_invalid(t, "line %lu: \"input\"[%lu]: \"role\" "
                                   "must be \"system\", \"user\" or "
                                   "\"assistant\" (a task's messages hold no "
                                   "tool calls)", (unsigned long) lineno,
                                   (unsigned long) i);
        }

        if (json_is_array(content)) {
            memset(&b, 0, sizeof(b));

            json_array_foreach(content, k, part) {
                text = json_object_get(part, "text");
                type = json_string_value(json_object_get(part, "type"));

                if (type == NULL || strcmp(type, "text") != 0
                    || !json_is_string(text))
                {
                    rg_buf_free(&b);
                    return rg_task_invalid(t, "line %lu: \"input\"[%lu]: "
                                           "only text parts "
                                           "{\"type\": \"text\", \"text\"} "
                                           "may make its content",
                                           (unsigned long) lineno,
                                           (unsigned long) i);
                }

                if (rg_buf_append(&b, json_string_value(text),
                                  json_string_length(text)) != RG_OK)
                {
                    rg_buf_free(&b);
                    return RG_ERROR;
                }
            }

            content = json_stringn(b.data ? b.data : "", b.len);
            rg_buf_free(&b);

            if (content == NULL || json_object_set_new(m, "content", content)
                                   != 0)
            {
                return RG_ERROR;
            }
        }

        if (!json_is_string(content)
            || (json_string_length(content) == 0 && strcmp(r, "user") == 0))
        {
            return rg_task_invalid(t, "line %lu: \"input\"[%lu]: "
                                   "\"content\" must be a string%s",
                                   (unsigned long) lineno, (unsigned long) i,
                                   strcmp(r, "user") == 0
                                   ? ", not empty" : "");
        }
    }

    if (r == NULL || strcmp(r, "user") != 0) {
        return rg_task_invalid(t, "line %lu: the last message of \"input\" "
                               "is the %s's: it must be the user's, for the "
                               "model to answer", (unsigned long) lineno,
                               r ? r : "?");
    }

    t->messages = msgs;
    t->input = json_string_value(content);
    t->input_len = json_string_length(content);

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
    t->max_cost = -1;
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

        /* (jansson refuses a NUL in a string) */
        if (json_string_length(jid) == 0) {
            t->id = t->idbuf;
            return rg_task_invalid(t, "line %lu: \"id\" is empty: it names "
                                   "the task", (unsigned long) lineno);
        }

    } else if (json_is_integer(jid)) {
        snprintf(t->idbuf, sizeof(t->idbuf), "%lld",
                 (long long) json_integer_value(jid));

    } else if (jid && !json_is_null(jid)) {
        return rg_task_invalid(t, "line %lu: \"id\" must be a string or "
                               "an integer", (unsigned long) lineno);
    }

    rc = rg_task_keys_check(t, task, lineno);
    if (rc != RG_OK) {
        return rc;
    }

    if (json_is_array(jinput)) {
        rc = rg_task_messages(t, jinput, lineno);
        if (rc != RG_OK) {
            return rc;
        }

    } else if (!json_is_string(jinput) || json_string_length(jinput) == 0) {
        return rg_task_invalid(t, "line %lu: \"input\" is missing or not a "
                               "non-empty string (or a list of messages)",
                               (unsigned long) lineno);

    } else {
        t->input = json_string_value(jinput);
        t->input_len = json_string_length(jinput);
    }

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


rg_uint_t
rg_task_id_valid(const char *id, size_t len)
{
    size_t  i;

    if (len == 0 || len > RG_TASK_ID_MAX
        || (len == 1 && id[0] == '.')
        || (len == 2 && id[0] == '.' && id[1] == '.'))
    {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if ((unsigned char) id[i] < 0x20 || id[i] == 0x7f || id[i] == '/') {
            return 0;
        }
    }

    return 1;
}


void
rg_task_free(rg_task_t *t)
{
    if (t->json) {
        json_decref(t->json);
        t->json = NULL;
    }
}

