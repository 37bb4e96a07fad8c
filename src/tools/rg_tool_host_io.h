/* rg_tool_host_io.h: the host table's descriptor watchers and child
 * process notifications (io_add, io_del, child_watch, child_unwatch) on
 * the worker's reactor. */

#ifndef RG_TOOL_HOST_IO_H
#define RG_TOOL_HOST_IO_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_module.h>
#include <event2/event.h>

/* the reactor to watch on; NULL when it goes away (children still to be
 * reaped are watched again on the next one) */
void rg_tool_host_io_init(struct event_base *base, rg_log_t *log);

/* fills the io_* and child_* members of a host table */
void rg_tool_host_io_set(rg_tool_host_t *host);

#endif /* RG_TOOL_HOST_IO_H */
