/* rg_tool_addr.h: which addresses a tool's HTTP request must not reach
 * unless its module allows it: everything that is not a public unicast
 * address (loopback, private, link-local, CGNAT, multicast, broadcast,
 * unspecified, reserved), v4 and v6, IPv4 inside IPv6 included. */

#ifndef RG_TOOL_ADDR_H
#define RG_TOOL_ADDR_H

#include <rg_config.h>
#include <sys/socket.h>

/* what sa is ("a loopback address") when it is internal, else NULL;
 * text gets it written out ("127.0.0.1") */
const char *rg_tool_addr_internal(const struct sockaddr *sa, char *text,
    size_t size);

#endif /* RG_TOOL_ADDR_H */
