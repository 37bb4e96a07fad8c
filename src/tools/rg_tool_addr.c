/* rg_tool_addr.c: tells internal addresses from public ones, for the
 * check that every connection of host->http_get() makes when it opens its
 * socket (so a name that resolves to 127.0.0.1 is refused as surely as
 * the address itself). IPv4 carried in IPv6 (mapped, compatible, NAT64,
 * 6to4) is judged by the IPv4 address it carries. */

#include <rg_config.h>
#include <rg_tool_addr.h>
#include <arpa/inet.h>
#include <netinet/in.h>


typedef struct {
    uint32_t            net;
    uint32_t            mask;
    const char         *what;
} rg_tool_addr_v4_t;


static const rg_tool_addr_v4_t  rg_tool_addr_v4[] = {
    { 0x00000000, 0xff000000, "an unspecified (\"this network\") address" },
    { 0x0a000000, 0xff000000, "a private address" },
    { 0x64400000, 0xffc00000, "a shared (CGNAT) address" },
    { 0x7f000000, 0xff000000, "a loopback address" },
    { 0xa9fe0000, 0xffff0000, "a link-local address" },
    { 0xac100000, 0xfff00000, "a private address" },
    { 0xc0000000, 0xffffff00, "a reserved (IETF protocol) address" },
    { 0xc0000200, 0xffffff00, "a documentation address" },
    { 0xc0a80000, 0xffff0000, "a private address" },
    { 0xc6120000, 0xfffe0000, "a benchmarking address" },
    { 0xc6336400, 0xffffff00, "a documentation address" },
    { 0xcb007100, 0xffffff00, "a documentation address" },
    { 0xe0000000, 0xf0000000, "a multicast address" },
    { 0xffffffff, 0xffffffff, "the broadcast address" },
    { 0xf0000000, 0xf0000000, "a reserved address" },
};


static const char *
rg_tool_addr_v4_kind(uint32_t a)
{
    size_t  i;

    for (i = 0; i < rg_nelems(rg_tool_addr_v4); i++) {
        if ((a & rg_tool_addr_v4[i].mask) == rg_tool_addr_v4[i].net) {
            return rg_tool_addr_v4[i].what;
        }
    }

    return NULL;
}


static uint32_t
rg_tool_addr_be32(const uint8_t *p)
{
    return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16
           | (uint32_t) p[2] << 8 | p[3];
}


static const char *
rg_tool_addr_v6_kind(const uint8_t *b)
{
    size_t         i;
    const uint8_t  zero[12] = { 0 };
    const uint8_t  mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    const uint8_t  nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };

    if (memcmp(b, zero, 12) == 0) {
        for (i = 12; i < 16 && b[i] == 0; i++) { /* void */ }

        if (i == 16) {
            return "the unspecified address";
        }

        if (i == 15 && b[15] == 1) {
            return "a loopback address";
        }

        /* ::a.b.c.d, IPv4-compatible (deprecated, still routed by some) */
        return rg_tool_addr_v4_kind(rg_tool_addr_be32(b + 12));
    }

    if (memcmp(b, mapped, 12) == 0 || memcmp(b, nat64, 12) == 0) {
        return rg_tool_addr_v4_kind(rg_tool_addr_be32(b + 12));
    }

    if (b[0] == 0x20 && b[1] == 0x02) {           /* 2002::/16, 6to4 */
        return rg_tool_addr_v4_kind(rg_tool_addr_be32(b + 2));
    }

    if ((b[0] & 0xfe) == 0xfc) {
        return "a unique local (private) address";
    }

    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) {
        return "a link-local address";
    }

    if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) {
        return "a site-local address";
    }

    if (b[0] == 0xff) {
        return "a multicast address";
    }

    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) {
        return "a documentation address";
    }

    if (b[0] == 0x01 && b[1] == 0 && memcmp(b + 2, zero, 6) == 0) {
        return "a discard-only address";
    }

    return NULL;
}


const char *
rg_tool_addr_internal(const struct sockaddr *sa, char *text, size_t size)
{
    const struct sockaddr_in   *in4;
    const struct sockaddr_in6  *in6;

    if (size) {
        text[0] = '\0';
    }

    if (sa->sa_family == AF_INET) {
        in4 = (const struct sockaddr_in *) sa;
        inet_ntop(AF_INET, &in4->sin_addr, text, (socklen_t) size);
        return rg_tool_addr_v4_kind(ntohl(in4->sin_addr.s_addr));
    }

    if (sa->sa_family == AF_INET6) {
        in6 = (const struct sockaddr_in6 *) sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, text, (socklen_t) size);
        return rg_tool_addr_v6_kind(in6->sin6_addr.s6_addr);
    }

    /* a unix socket or anything else is never a tool's to reach */
    snprintf(text, size, "family %d", (int) sa->sa_family);

    return "not an internet address";
}
