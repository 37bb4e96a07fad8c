/* rg_context.c: compaction of a conversation. The head (system messages
 * and the first user message: the task) and the last keep_rounds rounds
 * are never touched. Tool results in between are shortened first, oldest
 * first; then whole rounds go, oldest first. A round is an assistant
 * message and the tool messages after it; they go together or not at
 * all. Knows nothing about models or sessions. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_context.h>
#include <rg_secret.h>
#include <rg_llm_request.h>
#include <rg_tool_args.h>


#define RG_CONTEXT_SHORT   240      /* bytes a shortened result keeps */


void
rg_msgs_init(rg_msgs_t *m)
{
    m->head = NULL;
    m->last = &m->head;
    m->n = 0;
    m->bytes = 0;
}


rg_int_t
rg_msgs_append(rg_msgs_t *m, rg_pool_t *pool, uint8_t role,
    const char *json, size_t len, rg_uint_t copy)
{
    rg_msg_t  *msg;

    msg = rg_palloc(pool, sizeof(rg_msg_t));
    if (msg == NULL) {
        return RG_ERROR;
    }

    msg->next = NULL;
    msg->role = role;
    msg->shortened = 0;
    msg->inserted = 0;
    msg->short_stored = 0;
    msg->ncalls = 0;
    msg->seq = 0;
    msg->wire_fmt = 0;
    msg->json.data = copy ? rg_pstrdup(pool, json, len) : (char *) json;

    if (msg->json.data == NULL) {
        return RG_ERROR;
    }

    /* what the conversation holds is sent, stored and resumed: never a
     * secret (a provider may quote the key in an answer) */
    if (copy) {
        len = rg_secret_scrub(msg->json.data, len);
        msg->json.data[len] = '\0';
    }

    msg->json.len = len;

    *m->last = msg;
    m->last = &msg->next;
    m->n++;
    m->bytes += len;

    return RG_OK;
}


rg_msg_t *
rg_msgs_last(rg_msgs_t *m)
{
    if (m->head == NULL) {
        return NULL;
    }

    return (rg_msg_t *) ((char *) m->last - offsetof(rg_msg_t, next));
}


/* the first message after the head (system messages and the task) */
static rg_msg_t **
rg_context_body(rg_msgs_t *m)
{
    rg_msg_t  **pp;

    pp = &m->head;

    while (*pp && (*pp)->role == 's') {
        pp = &(*pp)->next;
    }

    if (*pp && (*pp)->role == 'u') {
        pp = &(*pp)->next;
    }

    return pp;
}


/* where the protected tail begins: the start of the keep-th last round */
static rg_msg_t *
rg_context_tail(rg_msg_t *body, rg_uint_t keep)
{
    rg_uint_t   n, rounds, i;
    rg_msg_t   *msg, **starts;

    n = 0;
    for (msg = body; msg; msg = msg->next) {
        if (msg->role != 't') {
            n++;
        }
    }

    if (keep == 0 || n == 0) {
        return NULL;
    }

    starts = malloc(n * sizeof(rg_msg_t *));
    if (starts == NULL) {
        return body;                  /* protect everything */
    }

    rounds = 0;
    for (msg = body; msg; msg = msg->next) {
        if (msg->role != 't') {
            starts[rounds++] = msg;
        }
    }

    i = rounds > keep ? rounds - keep : 0;
    msg = starts[i];
    free(starts);

    return msg;
}


/* the text of a tool result, shortened to its head and tail */
static rg_int_t
rg_context_shorten_text(const char *text, size_t len, rg_buf_t *out,
    void *data)
{
    if (rg_tool_trim(text, len, RG_CONTEXT_SHORT, out) == RG_TOOL_TRIM_ERROR
        || out->data == NULL
        || rg_buf_append_lit(out, " (shortened to save context)") != RG_OK)
    {
        return RG_ERROR;
    }

    return RG_OK;
}


static rg_int_t
rg_context_shorten(rg_msg_t *msg, rg_pool_t *pool, size_t *saved)
{
    char      *out, *text;
    size_t     n;
    rg_int_t   rc;

    rc = rg_llm_message_edit(msg->json.data, msg->json.len,
                             RG_CONTEXT_SHORT + 64, rg_context_shorten_text,
                             NULL, &text);
    if (rc != RG_OK) {
        return rc;
    }

    n = strlen(text);
    out = rg_pstrdup(pool, text, n);
    free(text);

    if (out == NULL || n >= msg->json.len) {
        return RG_DECLINED;
    }

    *saved = msg->json.len - n;
    msg->json.data = out;
    msg->json.len = n;
    msg->wire_fmt = 0;
    msg->shortened = 1;

    return RG_OK;
}


rg_int_t
rg_context_compact(rg_msgs_t *m, rg_pool_t *pool, size_t target,
    rg_uint_t keep_rounds, rg_context_result_t *res)
{
    size_t      saved, unit;
    rg_msg_t  **body, *tail, *msg, *end, **dlast, **pp;

    memset(res, 0, sizeof(*res));
    dlast = &res->dropped;

    if (m->bytes <= target) {
        return RG_OK;
    }

    body = rg_context_body(m);
    tail = rg_context_tail(*body, keep_rounds);

    /* 1: the oldest tool results get short */
    for (msg = *body; msg && msg != tail && m->bytes > target;
         msg = msg->next)
    {
        if (msg->role != 't' || msg->shortened) {
            continue;
        }

        saved = 0;
        if (rg_context_shorten(msg, pool, &saved) == RG_OK) {
            m->bytes -= saved;
            res->saved += saved;
            res->shortened++;
        }
    }

    /* 2: the oldest whole rounds go */
    while (m->bytes > target && *body && *body != tail) {
        msg = *body;

        /* the unit: this message and the tool messages after it */
        unit = msg->json.len;
        res->dropped_msgs++;
        for (end = msg->next; end && end != tail && end->role == 't';
             end = end->next)
        {
            unit += end->json.len;
            res->dropped_msgs++;
        }

        if (end == NULL && tail != NULL) {
            break;                    /* cannot happen: tail is in list */
        }

        /* unlink [msg, end) */
        *dlast = msg;
        for (pp = &msg->next; *pp != end; pp = &(*pp)->next) {
            m->n--;
        }
        m->n--;
        dlast = pp;
        *dlast = NULL;

        *body = end;
        if (end == NULL) {
            m->last = body;
        }

        m->bytes -= unit;
        res->saved += unit;
        res->dropped_rounds++;
    }

    return RG_OK;
}


void
rg_context_insert_after_task(rg_msgs_t *m, rg_msg_t *msg)
{
    rg_msg_t  **body;

    body = rg_context_body(m);

    msg->next = *body;
    *body = msg;

    if (msg->next == NULL) {
        m->last = &msg->next;
    }

    m->n++;
    m->bytes += msg->json.len;
}


rg_int_t
rg_context_check(rg_msgs_t *m, char *err, size_t errlen)
{
    size_t     bytes;
    rg_uint_t  n, want;
    rg_msg_t  *msg, *prev;

    bytes = 0;
    n = 0;
    want = 0;
    prev = NULL;

    for (msg = m->head; msg; prev = msg, msg = msg->next) {
        bytes += msg->json.len;
        n++;

        if (msg->role == 't') {
            if (want == 0) {
                snprintf(err, errlen, "message %lu: a tool message that "
                         "answers no assistant message", (unsigned long) n);
                return RG_ERROR;
            }
            want--;
            continue;
        }

        if (want) {
            snprintf(err, errlen, "message %lu: an assistant message lost "
                     "%lu of its tool messages", (unsigned long) n,
                     (unsigned long) want);
            return RG_ERROR;
        }

        want = msg->role == 'a' ? msg->ncalls : 0;
    }

    if (want) {
        snprintf(err, errlen, "the last assistant message lost %lu tool "
                 "messages", (unsigned long) want);
        return RG_ERROR;
    }

    if (bytes != m->bytes || n != m->n
        || (prev ? &prev->next : &m->head) != m->last)
    {
        snprintf(err, errlen, "bookkeeping: %lu bytes counted, %lu kept; "
                 "%lu messages counted, %lu kept", (unsigned long) bytes,
                 (unsigned long) m->bytes, (unsigned long) n,
                 (unsigned long) m->n);
        return RG_ERROR;
    }

    return RG_OK;
}
