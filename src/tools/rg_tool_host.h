/* rg_tool_host.h: what the worker's host table (rg_tools_host.c) and an
 * isolated helper's (rg_isolate_helper.c) do the same way
 * (rg_tool_host.c): a module's one-shot timers on a reactor, the level
 * and text of its log lines, the text of a failure. */

#ifndef RG_TOOL_HOST_H
#define RG_TOOL_HOST_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_module.h>
#include <event2/event.h>


/* host->timer_add() on base: NULL when it cannot be armed */
rg_tool_timer_t *rg_tool_timer_add(struct event_base *base, uint64_t msec,
    rg_tool_timer_pt cb, void *data);
/* host->timer_del() */
void rg_tool_timer_del(rg_tool_timer_t *t);

/* a module's log line in buf; the level as the host logs it (one out of
 * range is a notice) */
int rg_tool_log_line(char *buf, size_t size, int level, const char *fmt,
    va_list args);

/* "error: NAME failed: REASON" in b, whole (trimmed with the results,
 * never here); a shorter text when memory runs out for the reason */
void rg_tool_fail_text(rg_buf_t *b, const char *name, const char *fmt,
    va_list args);

#endif /* RG_TOOL_HOST_H */
