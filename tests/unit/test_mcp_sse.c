/* test_mcp_sse.c: the event stream reader of the MCP client's Streamable
 * HTTP transport (src/mcp/rg_mcp_sse.c): server-everything's priming
 * event, a comment and messages of several data lines, fed in pieces of
 * every size; CRLF and CR alone ending lines, a BOM, "data" without a
 * colon, another event type; an event not ended by a blank line is not
 * dispatched, a bad retry is ignored; data past the bound fails, and
 * keeps failing. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>
#include <rg_mcp_sse.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


/* unit: the event stream reader ---------------------------------------- */

typedef struct {
    char                got[8][256];
    char                types[8][32];
    int                 n;
} rg_test_events_t;


static void
rg_test_event(void *data, const char *event, const char *text, size_t len)
{
    rg_test_events_t  *ev;

    ev = data;

    if (ev->n < 8) {
        snprintf(ev->got[ev->n], sizeof(ev->got[0]), "%.*s", (int) len, text);
        snprintf(ev->types[ev->n], sizeof(ev->types[0]), "%s", event);
        ev->n++;
    }
}


static void
rg_test_sse_feed(const char *stream, size_t step, rg_test_events_t *ev,
    rg_mcp_sse_t *p)
{
    size_t  i, n;

    memset(ev, 0, sizeof(*ev));
    rg_mcp_sse_init(p, 1024);

    n = strlen(stream);

    for (i = 0; i < n; i += step) {
        assert_int_equal(rg_mcp_sse_feed(p, stream + i, rg_min(step, n - i),
                                         rg_test_event, ev), RG_OK);
    }
}


static void
rg_test_sse(void **state)
{
    size_t             step;
    rg_mcp_sse_t       p;
    rg_test_events_t   ev;
    const char        *stream;
    char               big[2048];

    /* the priming event of server-everything, a comment, two messages,
     * the second of two data lines, split anywhere */
    stream = "id: 62973109\ndata: \n\n"
             ": keepalive\n\n"
             "event: message\nid: c284\ndata: {\"id\":1}\n\n"
             "retry: 500\ndata: {\"a\":\ndata: 2}\n\n";

    for (step = 1; step <= strlen(stream); step++) {
        rg_test_sse_feed(stream, step, &ev, &p);
        assert_int_equal(ev.n, 2);
        assert_string_equal(ev.got[0], "{\"id\":1}");
        assert_string_equal(ev.types[0], "message");
        assert_string_equal(ev.got[1], "{\"a\":\n2}");
        assert_string_equal(p.last_id, "c284");
        assert_int_equal(p.retry, 500);
        rg_mcp_sse_end(&p);
    }

    /* CRLF and CR alone end lines too; a BOM opens it; "data" without a
     * colon is an empty line of data; another event type is told */
    rg_test_sse_feed("\xef\xbb\xbf" "data:x\r\n\r\nevent: ping\rdata: y\r\r"
                     "data\ndata: z\n\n", 1, &ev, &p);
    assert_int_equal(ev.n, 3);
    assert_string_equal(ev.got[0], "x");
    assert_string_equal(ev.types[1], "ping");
    assert_string_equal(ev.got[1], "y");
    assert_string_equal(ev.got[2], "\nz");
    rg_mcp_sse_end(&p);

    /* an event not ended by a blank line is not dispatched; a bad retry
     * is ignored */
    rg_test_sse_feed("retry: 5x\ndata: cut", 3, &ev, &p);
    assert_int_equal(ev.n, 0);
    assert_int_equal(p.retry, -1);
    rg_mcp_sse_end(&p);

    /* data past the bound fails, and keeps failing */
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memset(&ev, 0, sizeof(ev));
    rg_mcp_sse_init(&p, 1024);
    assert_int_equal(rg_mcp_sse_feed(&p, "data: ", 6, rg_test_event, &ev),
                     RG_OK);
    assert_int_equal(rg_mcp_sse_feed(&p, big, strlen(big), rg_test_event,
                                     &ev), RG_ERROR);
    assert_int_equal(rg_mcp_sse_feed(&p, "\n\n", 2, rg_test_event, &ev),
                     RG_ERROR);
    assert_int_equal(ev.n, 0);
    rg_mcp_sse_end(&p);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_sse),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
