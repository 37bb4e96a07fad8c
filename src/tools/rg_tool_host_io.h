/* rg_tool_host_io.h: the host table's descriptor watchers and child
 * process notifications (io_add, io_del, child_watch, child_unwatch) on
 * the reactor of the engine the host table belongs to. */

#ifndef RG_TOOL_HOST_IO_H
#define RG_TOOL_HOST_IO_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_module.h>
#include <rg_tool_bind.h>
#include <event2/event.h>

/* The reactor of one engine's tools part, in its rg_tools_ctx_t: io of
 * that engine's host tables (their binds' io) is watched there. */
struct rg_tool_io_ctx_s {
    struct event_base   *base;
    rg_log_t            *log;
    rg_tool_io_ctx_t    *next;      /* the reactors of the process */
    rg_tool_io_ctx_t   **prev;
};

/* the reactor begins: children that no reactor watches are watched on it */
void rg_tool_host_io_start(rg_tool_io_ctx_t *io, struct event_base *base,
    rg_log_t *log);
/* it ends: its children are watched on another, or on the next one */
void rg_tool_host_io_stop(rg_tool_io_ctx_t *io);

/* fills the io_* and child_* members of a host table */
void rg_tool_host_io_set(rg_tool_host_t *host);

#endif /* RG_TOOL_HOST_IO_H */
