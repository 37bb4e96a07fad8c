/* test_module_http.c: the bundled module http (modules/http.c): http_get,
 * through the fake host of tests/lib/rg_test_host.c, whose http_get()
 * records what it was asked and whose callback the test calls by hand:
 * its ABI fields and directives; the URLs it refuses before asking the
 * host (no url, another scheme, not absolute, user info, a backslash in
 * the host, a host not in allow_hosts, an address not listed); what it
 * asks (the URL, max_bytes, the timeout; the fragment stays here) and
 * what it makes of the answer (the host's error, a body cut at
 * max_bytes, binary, empty); cancellation; and allow_private, what it
 * asks of the host's address check. */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rg_tool_module.h>
#include <rg_test_host.h>


static void *
rg_test_http_conf(void)
{
    void                    *conf;
    const rg_tool_module_t  *m;

    m = rg_test_mod_http.module;

    conf = m->create_conf(&rg_test_host);
    assert_non_null(conf);

    assert_null(rg_test_set(m, conf, "allow_hosts", "example.com",
                            "*.Example.org", NULL));
    assert_null(rg_test_set(m, conf, "allow_hosts", "127.0.0.1", "[::1]",
                            NULL));
    assert_null(rg_test_set(m, conf, "max_bytes", "1000", NULL));
    assert_null(rg_test_set(m, conf, "timeout", "2s", NULL));
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);

    return conf;
}


static void
rg_test_http_module(void **state)
{
    void                    *conf;
    rg_tool_host_t           old;
    const rg_tool_module_t  *m;

    (void) state;

    m = rg_test_mod_http.module;

    rg_test_module_valid(m, "http", 1);
    assert_int_equal(rg_test_tool(m, "http_get")->flags, RG_TOOL_READ_ONLY);
    assert_non_null(rg_test_tool(m, "http_get")->cancel);

    conf = m->create_conf(&rg_test_host);
    m->exit(&rg_test_host, conf);

    conf = m->create_conf(&rg_test_host);
    assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_ERROR);
    assert_string_equal(rg_test_log_text, "http: the \"allow_hosts\" "
                        "directive is required: add \"allow_hosts "
                        "example.com *.example.org;\" to \"module http\"");

    assert_string_equal(rg_test_set(m, conf, "allow_hosts", "*", NULL),
                        "has an invalid host: use names such as example.com, "
                        "suffix patterns such as *.example.com, or "
                        "addresses");
    assert_string_equal(rg_test_set(m, conf, "allow_hosts", "a.*.com", NULL),
                        "has an invalid host: use names such as example.com, "
                        "suffix patterns such as *.example.com, or "
                        "addresses");
    assert_string_equal(rg_test_set(m, conf, "allow_hosts", "ok.com",
                                    "a b.com", NULL),
                        "has an invalid host: use names such as example.com, "
                        "suffix patterns such as *.example.com, or "
                        "addresses");
    assert_string_equal(rg_test_set(m, conf, "allow_hosts", "[zz]", NULL),
                        "has an invalid IPv6 address: write it as in a URL, "
                        "such as [::1]");
    assert_string_equal(rg_test_set(m, conf, "max_bytes", "0", NULL),
                        "must be a size from 1 to 64m, such as 1048576 or "
                        "1m");
    assert_string_equal(rg_test_set(m, conf, "max_bytes", "1g", NULL),
                        "must be a size from 1 to 64m, such as 1048576 or "
                        "1m");
    assert_string_equal(rg_test_set(m, conf, "timeout", "1h", NULL),
                        "must be a time from 1ms to 10m, such as 500ms or "
                        "10s (a bare number is seconds)");
    assert_string_equal(rg_test_set(m, conf, "timeout", "1d", NULL),
                        "must be a time from 1ms to 10m, such as 500ms or "
                        "10s (a bare number is seconds)");
    assert_string_equal(rg_test_set(m, conf, "timeout", "10m1ms", NULL),
                        "must be a time from 1ms to 10m, such as 500ms or "
                        "10s (a bare number is seconds)");
    assert_null(rg_test_set(m, conf, "timeout", "500ms", NULL));
    assert_string_equal(rg_test_set(m, conf, "timeout", "1s", NULL),
                        "is duplicate");
    m->exit(&rg_test_host, conf);

    /* a host from before http_get() */

    old = rg_test_host;
    old.size = offsetof(rg_tool_host_t, http_get);

    conf = m->create_conf(&old);
    assert_null(rg_test_set(m, conf, "allow_hosts", "example.com", NULL));
    assert_int_equal(m->init(&old, conf), RG_TOOL_ERROR);
    assert_string_equal(rg_test_log_text, "http: this reagent has no "
                        "http_get() for modules; upgrade reagent");
    m->exit(&old, conf);

    /* a host with http_get() but from before parse_size() and
     * parse_msec(): max_bytes and timeout cannot be read, the defaults
     * work */

    old = rg_test_host;
    old.size = offsetof(rg_tool_host_t, parse_size);

    conf = m->create_conf(&old);
    assert_null(rg_test_set_with(&old, m, conf, "allow_hosts", "example.com",
                                 NULL));
    assert_string_equal(rg_test_set_with(&old, m, conf, "max_bytes", "1m",
                                         NULL),
                        "needs a newer reagent (no parse_size in the host "
                        "table)");
    assert_string_equal(rg_test_set_with(&old, m, conf, "timeout", "10s",
                                         NULL),
                        "needs a newer reagent (no parse_msec in the host "
                        "table)");
    assert_int_equal(m->init(&old, conf), RG_TOOL_OK);
    m->exit(&old, conf);
}


#define RG_TEST_NOT_LISTED(h)                                                \
    "host \"" h "\" is not in the allow-list: example.com, *.example.org, "  \
    "127.0.0.1, [::1]"


static void
rg_test_http_refused(void **state)
{
    void             *conf;
    const rg_tool_t  *get;

    (void) state;

    conf = rg_test_http_conf();
    get = rg_test_tool(rg_test_mod_http.module, "http_get");

    rg_test_err(get, conf, "{}",
                "missing argument 'url' (an http or https URL, such as "
                "\"https://example.com/\")");
    rg_test_err(get, conf, "{\"url\":\"ftp://example.com/x\"}",
                "url scheme \"ftp\" is not supported; use http:// or "
                "https://");
    rg_test_err(get, conf, "{\"url\":\"file:///etc/passwd\"}",
                "url scheme \"file\" is not supported; use http:// or "
                "https://");
    rg_test_err(get, conf, "{\"url\":\"example.com/x\"}",
                "url \"example.com/x\" is not absolute; write the whole URL, "
                "such as \"https://example.com/\"");
    rg_test_err(get, conf, "{\"url\":\"http://user:pw@example.com/\"}",
                "url \"http://user:pw@example.com/\" has user info "
                "(user@host); remove it, credentials cannot be sent");
    rg_test_err(get, conf, "{\"url\":\"http://example.com@evil.com/\"}",
                "url \"http://example.com@evil.com/\" has user info "
                "(user@host); remove it, credentials cannot be sent");
    rg_test_err(get, conf, "{\"url\":\"http://evil.com\\\\@example.com/\"}",
                "url \"http://evil.com\\@example.com/\" has a backslash in "
                "its host part");
    rg_test_err(get, conf, "{\"url\":\"http://evil.com\\\\.example.com/\"}",
                "url \"http://evil.com\\.example.com/\" has a backslash in "
                "its host part");

    rg_test_err(get, conf, "{\"url\":\"https://evil.com/\"}",
                RG_TEST_NOT_LISTED("evil.com"));
    rg_test_err(get, conf, "{\"url\":\"https://example.org/\"}",
                RG_TEST_NOT_LISTED("example.org"));
    rg_test_err(get, conf, "{\"url\":\"https://example.com.evil.com/\"}",
                RG_TEST_NOT_LISTED("example.com.evil.com"));
    rg_test_err(get, conf, "{\"url\":\"https://notexample.com/\"}",
                RG_TEST_NOT_LISTED("notexample.com"));
    rg_test_err(get, conf, "{\"url\":\"https://evil.com#@example.com\"}",
                RG_TEST_NOT_LISTED("evil.com"));
    rg_test_err(get, conf, "{\"url\":\"https://evil.com?@example.com\"}",
                RG_TEST_NOT_LISTED("evil.com"));

    /* addresses only as listed */

    rg_test_err(get, conf, "{\"url\":\"http://10.0.0.1/\"}",
                RG_TEST_NOT_LISTED("10.0.0.1"));
    rg_test_err(get, conf, "{\"url\":\"http://127.1/\"}",
                RG_TEST_NOT_LISTED("127.1"));
    rg_test_err(get, conf, "{\"url\":\"http://2130706433/\"}",
                RG_TEST_NOT_LISTED("2130706433"));
    rg_test_err(get, conf, "{\"url\":\"http://0x7f000001/\"}",
                RG_TEST_NOT_LISTED("0x7f000001"));
    rg_test_err(get, conf, "{\"url\":\"http://[::2]/\"}",
                RG_TEST_NOT_LISTED("[::2]"));

    /* malformed */

    rg_test_err(get, conf, "{\"url\":\"http://example.com:99999/\"}",
                "url \"http://example.com:99999/\" has an invalid port; use a "
                "number from 1 to 65535, or none");
    rg_test_err(get, conf, "{\"url\":\"http://example.com:/\"}",
                "url \"http://example.com:/\" has an invalid port; use a "
                "number from 1 to 65535, or none");
    rg_test_err(get, conf, "{\"url\":\"http://example.com:80x/\"}",
                "url \"http://example.com:80x/\" has an invalid port; use a "
                "number from 1 to 65535, or none");
    rg_test_err(get, conf, "{\"url\":\"http://exa mple.com/\"}",
                "url \"http://exa mple.com/\" contains spaces, control or "
                "non-ASCII characters; percent-encode them (a space is %20)");
    rg_test_err(get, conf, "{\"url\":\"http:///etc/passwd\"}",
                "url \"http:///etc/passwd\" has no host, such as "
                "\"https://example.com/\"");
    rg_test_err(get, conf, "{\"url\":\"http://ex%61mple.com/\"}",
                "url \"http://ex%61mple.com/\" has an invalid host name; only "
                "letters, digits, \"-\", \"_\" and \".\" are allowed "
                "(percent-encoded or international names are not)");
    rg_test_err(get, conf, "{\"url\":\"http://[::1/\"}",
                "url \"http://[::1/\" has an unclosed [ in its host");
    rg_test_err(get, conf, "{\"url\":\"http://example.com/\\u0000\"}",
                "url \"http://example.com/?\" contains a NUL byte; send the "
                "URL as plain text");

    assert_int_equal(rg_test_async.calls, 0);

    rg_test_mod_http.module->exit(&rg_test_host, conf);
}


static void
rg_test_http_get(void **state)
{
    void                   *conf;
    rg_test_call_t          tc;
    const rg_tool_t        *get;
    rg_tool_http_result_t   res;

    (void) state;

    conf = rg_test_http_conf();
    get = rg_test_tool(rg_test_mod_http.module, "http_get");

    /* allowed: asked of the host with the caps; the fragment stays here */

    assert_int_equal(rg_test_call_run(&tc, get, conf,
                                      "{\"url\":\"https://example.com/a?b=1"
                                      "#frag\"}"),
                     RG_TOOL_AGAIN);
    assert_int_equal(tc.answers, 0);
    assert_int_equal(rg_test_async.calls, 1);
    assert_ptr_equal(rg_test_async.call, &tc.call);
    assert_string_equal(rg_test_async.url, "https://example.com/a?b=1");
    assert_int_equal(rg_test_async.max_bytes, 1000);
    assert_int_equal(rg_test_async.timeout, 2000);

    memset(&res, 0, sizeof(res));
    res.status = 200;
    res.content_type = "text/html";
    res.body = "<p>hi</p>";
    res.len = 9;

    rg_test_async.http_cb(&tc.call, &res, NULL);

    assert_int_equal(tc.answers, 1);
    assert_false(tc.failed);
    assert_string_equal(tc.result,
                        "status: 200\ncontent-type: text/html\n\n<p>hi</p>");
    assert_null(tc.call.ctx);
    rg_test_call_free(&tc);

    /* the host's error */

    assert_int_equal(rg_test_call_run(&tc, get, conf,
                                      "{\"url\":\"HTTP://A.B.Example.ORG:8443"
                                      "/x\"}"),
                     RG_TOOL_AGAIN);
    assert_string_equal(rg_test_async.url, "HTTP://A.B.Example.ORG:8443/x");

    memset(&res, 0, sizeof(res));
    res.error = "timed out after 2s";
    rg_test_async.http_cb(&tc.call, &res, NULL);

    assert_int_equal(tc.answers, 1);
    assert_true(tc.failed);
    assert_string_equal(tc.result, "the request failed: timed out after 2s");
    rg_test_call_free(&tc);

    /* cut at max_bytes; any status is an answer */

    assert_int_equal(rg_test_call_run(&tc, get, conf,
                                      "{\"url\":\"http://127.0.0.1:8080/\"}"),
                     RG_TOOL_AGAIN);

    memset(&res, 0, sizeof(res));
    res.status = 404;
    res.content_type = "text/plain";
    res.body = "not found, and more";
    res.len = 9;
    res.truncated = 1;
    rg_test_async.http_cb(&tc.call, &res, NULL);

    assert_false(tc.failed);
    assert_string_equal(tc.result, "status: 404\ncontent-type: text/plain\n\n"
                                   "not found\n(truncated at 9 bytes)");
    rg_test_call_free(&tc);

    /* binary */

    assert_int_equal(rg_test_call_run(&tc, get, conf,
                                      "{\"url\":\"http://[::1]/x.png\"}"),
                     RG_TOOL_AGAIN);

    memset(&res, 0, sizeof(res));
    res.status = 200;
    res.content_type = "image/png";
    res.body = "\x89PNG\r\n\x1a\n\0\0";
    res.len = 10;
    rg_test_async.http_cb(&tc.call, &res, NULL);

    assert_true(tc.failed);
    assert_string_equal(tc.result, "the response is binary (content-type "
                        "image/png); http_get returns text only");
    rg_test_call_free(&tc);

    /* an empty body, no content type, a trailing dot */

    assert_int_equal(rg_test_call_run(&tc, get, conf,
                                      "{\"url\":\"http://example.com./\"}"),
                     RG_TOOL_AGAIN);

    memset(&res, 0, sizeof(res));
    res.status = 204;
    res.content_type = "";
    rg_test_async.http_cb(&tc.call, &res, NULL);

    assert_string_equal(tc.result, "status: 204\ncontent-type: \n\n");
    rg_test_call_free(&tc);

    /* the host cannot start it */

    rg_test_async.refuse = 1;
    rg_test_async.error = "too many requests in flight";

    rg_test_err(get, conf, "{\"url\":\"http://example.com/\"}",
                "cannot start the request: too many requests in flight");

    rg_test_async.error = NULL;

    rg_test_err(get, conf, "{\"url\":\"http://example.com/\"}",
                "cannot start the request: try again later");

    rg_test_async.refuse = 0;

    /* cancelled: the host's request goes, the state is freed */

    assert_int_equal(rg_test_call_run(&tc, get, conf,
                                      "{\"url\":\"http://example.com/\"}"),
                     RG_TOOL_AGAIN);
    assert_non_null(tc.call.ctx);

    get->cancel(&tc.call);

    assert_int_equal(rg_test_async.cancelled, 1);
    assert_null(tc.call.ctx);
    assert_int_equal(tc.answers, 0);
    rg_test_call_free(&tc);

    rg_test_mod_http.module->exit(&rg_test_host, conf);
}


static unsigned  rg_test_http_flags;


static int
rg_test_host_http_get_flags(rg_tool_call_t *call, const char *url,
    size_t max_bytes, uint64_t timeout_ms, unsigned flags, rg_tool_http_pt cb,
    void *data)
{
    rg_test_http_flags = flags;

    return rg_test_host_http_get(call, url, max_bytes, timeout_ms, cb, data);
}


/* allow_private: what the module asks of the host's address check */
static void
rg_test_http_private(void **state)
{
    int                     i;
    void                   *conf;
    rg_test_call_t          tc;
    const rg_tool_t        *get;
    const rg_tool_module_t *m;

    (void) state;

    m = rg_test_mod_http.module;
    get = rg_test_tool(m, "http_get");

    conf = m->create_conf(&rg_test_host);
    assert_string_equal(rg_test_set(m, conf, "allow_private", "yes", NULL),
                        "must be \"on\" or \"off\"");
    assert_null(rg_test_set(m, conf, "allow_private", "on", NULL));
    assert_string_equal(rg_test_set(m, conf, "allow_private", "off", NULL),
                        "is duplicate");
    m->exit(&rg_test_host, conf);

    rg_test_host.http_get_flags = rg_test_host_http_get_flags;

    for (i = 0; i < 3; i++) {
        conf = m->create_conf(&rg_test_host);
        assert_null(rg_test_set(m, conf, "allow_hosts", "localhost", NULL));
        if (i > 0) {
            assert_null(rg_test_set(m, conf, "allow_private",
                                    i == 1 ? "off" : "on", NULL));
        }
        assert_int_equal(m->init(&rg_test_host, conf), RG_TOOL_OK);

        rg_test_http_flags = 0xff;

        assert_int_equal(rg_test_call_run(&tc, get, conf,
                                          "{\"url\":\"http://localhost/\"}"),
                         RG_TOOL_AGAIN);
        assert_int_equal(rg_test_http_flags,
                         i == 2 ? RG_TOOL_HTTP_ALLOW_PRIVATE : 0);

        get->cancel(&tc.call);
        rg_test_call_free(&tc);
        m->exit(&rg_test_host, conf);
    }

    rg_test_host.http_get_flags = NULL;
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup(rg_test_http_module, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_http_refused, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_http_get, rg_test_host_reset),
        cmocka_unit_test_setup(rg_test_http_private, rg_test_host_reset),
    };

    return rg_test_host_run(tests) != 0;
}
