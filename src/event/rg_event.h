/* rg_event.h: the event part (rg_event.c): in each engine, the curl
 * multi driver on the engine's event base (rg_event_curl.h). */

#ifndef RG_EVENT_H
#define RG_EVENT_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_engine.h>
#include <rg_event_curl.h>

extern rg_part_t  rg_event_part;

/* the engine's curl multi driver */
#define rg_event_ctx(e)                                                      \
    ((rg_curl_t *) rg_engine_ctx(e, &rg_event_part))

#endif /* RG_EVENT_H */
