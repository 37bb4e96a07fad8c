/* rg_tool_host.c: what the worker's host table (rg_tools_host.c) and an
 * isolated helper's (rg_isolate_helper.c) do the same way: a module's
 * one-shot timers on the reactor each is given, its log lines, the text
 * of its failures. Owns the timers it arms (freed when they fire or are
 * deleted); knows nothing of runs, calls or helpers. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_host.h>
#include <event2/event_struct.h>


struct rg_tool_timer_s {
    struct event        ev;
    rg_tool_timer_pt    cb;
    void               *data;
};


static void
rg_tool_timer_handler(evutil_socket_t fd, short what, void *arg)
{
    void              *data;
    rg_tool_timer_t   *t;
    rg_tool_timer_pt   cb;

    t = arg;
    cb = t->cb;
    data = t->data;
    free(t);

    cb(data);
}


rg_tool_timer_t *
rg_tool_timer_add(struct event_base *base, uint64_t msec,
    rg_tool_timer_pt cb, void *data)
{
    rg_tool_timer_t  *t;

    t = calloc(1, sizeof(rg_tool_timer_t));
    if (t == NULL) {
        return NULL;
    }

    t->cb = cb;
    t->data = data;

    if (evtimer_assign(&t->ev, base, rg_tool_timer_handler, t) != 0
        || rg_timer_add(&t->ev, msec) != 0)
    {
        free(t);
        return NULL;
    }

    return t;
}


void
rg_tool_timer_del(rg_tool_timer_t *t)
{
    if (t) {
        event_del(&t->ev);
        free(t);
    }
}


int
rg_tool_log_line(char *buf, size_t size, int level, const char *fmt,
    va_list args)
{
    vsnprintf(buf, size, fmt, args);

    return (level < RG_LOG_EMERG || level > RG_LOG_DEBUG) ? RG_LOG_NOTICE
                                                          : level;
}


void
rg_tool_fail_text(rg_buf_t *b, const char *name, const char *fmt,
    va_list args)
{
    memset(b, 0, sizeof(rg_buf_t));

    if (rg_buf_printf(b, "error: %s failed: ", name) != RG_OK
        || rg_buf_vprintf(b, fmt, args) != RG_OK)
    {
        rg_buf_free(b);
        rg_buf_printf(b, "error: %s failed (out of memory for the "
                      "reason)", name);
    }
}
