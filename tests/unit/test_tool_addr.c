/* test_tool_addr.c: unit tests of the internal-address check that every
 * connection of a tool's HTTP request passes (src/tools/rg_tool_addr.c):
 * each IPv4 and IPv6 range it refuses, IPv4 carried in IPv6, and public
 * addresses that must go through. The check in a real connection, through
 * the agent loop, is in tests/security/. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_tool_addr.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>


static const char *
rg_test_kind(const char *text)
{
    char                  shown[INET6_ADDRSTRLEN];
    const char           *kind;
    struct sockaddr_in    a4;
    struct sockaddr_in6   a6;

    memset(&a4, 0, sizeof(a4));
    memset(&a6, 0, sizeof(a6));

    if (inet_pton(AF_INET, text, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        kind = rg_tool_addr_internal((struct sockaddr *) &a4, shown,
                                     sizeof(shown));
    } else {
        assert_int_equal(inet_pton(AF_INET6, text, &a6.sin6_addr), 1);
        a6.sin6_family = AF_INET6;
        kind = rg_tool_addr_internal((struct sockaddr *) &a6, shown,
                                     sizeof(shown));
    }

    /* the address is written out as inet_ntop() writes it */
    assert_true(shown[0] != '\0');

    return kind;
}


static void
rg_test_internal(void **state)
{
    size_t       i;
    const char  *kind;
    const char  *refused[][2] = {
        { "127.0.0.1", "loopback" }, { "127.255.255.254", "loopback" },
        { "10.1.2.3", "private" }, { "172.16.0.1", "private" },
        { "172.31.255.255", "private" }, { "192.168.1.1", "private" },
        { "169.254.169.254", "link-local" }, { "100.64.0.1", "CGNAT" },
        { "100.127.255.255", "CGNAT" }, { "0.0.0.0", "unspecified" },
        { "0.1.2.3", "unspecified" }, { "224.0.0.1", "multicast" },
        { "239.255.255.250", "multicast" },
        { "255.255.255.255", "broadcast" }, { "240.0.0.1", "reserved" },
        { "::1", "loopback" }, { "::", "unspecified" },
        { "::ffff:127.0.0.1", "loopback" }, { "::ffff:10.0.0.1", "private" },
        { "::ffff:169.254.169.254", "link-local" },
        { "::127.0.0.1", "loopback" }, { "64:ff9b::7f00:1", "loopback" },
        { "2002:7f00:1::", "loopback" }, { "fc00::1", "private" },
        { "fd12:3456::1", "private" }, { "fe80::1", "link-local" },
        { "febf::1", "link-local" }, { "ff02::1", "multicast" },
        { "fec0::1", "site-local" },
    };
    const char  *public[] = {
        "93.184.216.34", "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1",
        "192.169.0.1", "2606:4700:4700::1111", "2a00:1450:4001::200e",
        "::ffff:93.184.216.34", "64:ff9b::808:808", "2002:808:808::",
    };

    for (i = 0; i < rg_nelems(refused); i++) {
        kind = rg_test_kind(refused[i][0]);
        if (kind == NULL || strstr(kind, refused[i][1]) == NULL) {
            print_error("%s: %s, expected %s\n", refused[i][0],
                        kind ? kind : "public", refused[i][1]);
        }
        assert_non_null(kind);
        assert_non_null(strstr(kind, refused[i][1]));
    }

    for (i = 0; i < rg_nelems(public); i++) {
        kind = rg_test_kind(public[i]);
        if (kind != NULL) {
            print_error("%s: %s, expected public\n", public[i], kind);
        }
        assert_null(kind);
    }
}


static void
rg_test_other_family(void **state)
{
    char             shown[64];
    struct sockaddr  sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_family = AF_UNIX;

    assert_non_null(rg_tool_addr_internal(&sa, shown, sizeof(shown)));
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_internal),
        cmocka_unit_test(rg_test_other_family),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
