/* rg_mcp_sse.h: a reader of Server-Sent Events (text/event-stream) for
 * MCP's Streamable HTTP (rg_mcp_sse.c): bytes go in as they arrive, split
 * anywhere; each event with data comes out through a callback. It keeps
 * what a reconnection needs: the last event id and the retry the server
 * asked for. Events without data (a priming event) and comments are
 * skipped. No I/O here. */

#ifndef RG_MCP_SSE_H
#define RG_MCP_SSE_H

#include <rg_config.h>
#include <rg_core.h>

#define RG_MCP_SSE_ID_MAX   256


/* one event: its type ("message" when it named none) and its data */
typedef void (*rg_mcp_sse_pt)(void *data, const char *event,
    const char *text, size_t len);


typedef struct {
    rg_buf_t            line;
    rg_buf_t            data;
    char                event[32];
    char                last_id[RG_MCP_SSE_ID_MAX];  /* "" when none */
    int64_t             retry;        /* ms, -1: not said */
    rg_uint_t           bom;          /* bytes of a byte order mark seen */
    size_t              max;          /* of an event's data */
    unsigned            cr:1;         /* the last byte was a \r */
    unsigned            has_data:1;
    unsigned            failed:1;
    unsigned            started:1;    /* past a byte order mark */
} rg_mcp_sse_t;


/* max: the most data an event may carry */
void rg_mcp_sse_init(rg_mcp_sse_t *p, size_t max);

/* RG_ERROR once an event's data passed max (or memory ran out); every
 * later call then fails too */
rg_int_t rg_mcp_sse_feed(rg_mcp_sse_t *p, const char *buf, size_t len,
    rg_mcp_sse_pt cb, void *data);

/* the end of the stream: an event without its blank line is dropped,
 * as the standard says; the buffers are freed, last_id and retry kept */
void rg_mcp_sse_end(rg_mcp_sse_t *p);

#endif /* RG_MCP_SSE_H */
