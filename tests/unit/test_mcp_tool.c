/* test_mcp_tool.c: MCP tools as the tools part sees them
 * (src/mcp/rg_mcp_tool.c): the names they are offered under (the
 * server's prefix; what a provider refuses made "_"; a name too long cut
 * to 64 bytes with a suffix from the whole name; collisions made unique
 * the same way), their flags from the server's annotations and from the
 * operator's tool_flags (the last pattern that matches), and their
 * results as the model reads them (text parts, other content described,
 * the structure when there is no text, isError a failure). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>
#include <rg_mcp.h>
#include <rg_mcp_tool.h>
#include <rg_tools.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>


/* unit: names, flags, results ------------------------------------------ */

static void
rg_test_names(void **state)
{
    char      a[RG_MCP_TOOL_NAME_MAX + 1], b[RG_MCP_TOOL_NAME_MAX + 1];
    size_t    i;
    rg_str_t  prefix = rg_string("fs__");

    rg_mcp_tool_name(&prefix, "read_text_file", 0, a);
    assert_string_equal(a, "fs__read_text_file");

    rg_mcp_tool_name(&prefix, "get-sum", 0, a);
    assert_string_equal(a, "fs__get-sum");

    /* what a provider refuses becomes "_" */
    rg_mcp_tool_name(&prefix, "a.b/c d\xc3\xa9", 0, a);
    assert_string_equal(a, "fs__a_b_c_d__");

    /* too long: 64 bytes, a suffix from the whole name, the same each
     * time and another for another name */
    rg_mcp_tool_name(&prefix, "a_tool_name_that_is_far_too_long_for_any_"
                     "provider_to_take_as_it_is_1", 0, a);
    rg_mcp_tool_name(&prefix, "a_tool_name_that_is_far_too_long_for_any_"
                     "provider_to_take_as_it_is_2", 0, b);
    assert_int_equal(strlen(a), 64);
    assert_int_equal(strlen(b), 64);
    assert_string_not_equal(a, b);
    assert_int_equal(memcmp(a, b, 57), 0);
    assert_int_equal(a[57], '_');

    for (i = 0; a[i]; i++) {
        assert_true(strchr("abcdefghijklmnopqrstuvwxyz0123456789_-", a[i])
                    != NULL);
    }

    rg_mcp_tool_name(&prefix, "a_tool_name_that_is_far_too_long_for_any_"
                     "provider_to_take_as_it_is_1", 0, b);
    assert_string_equal(a, b);

    /* a collision is made unique the same way */
    rg_mcp_tool_name(&prefix, "get.sum", 1, a);
    rg_mcp_tool_name(&prefix, "get_sum", 1, b);
    assert_string_not_equal(a, b);
    assert_int_equal(strncmp(a, "fs__get_sum_", 12), 0);
}


static void
rg_test_flags(void **state)
{
    json_t               *an;
    rg_array_t           *ov;
    rg_pool_t            *pool;
    rg_mcp_tool_flags_t  *o;

    /* none: the protocol's defaults, a destructive tool with effects */
    assert_int_equal(rg_mcp_tool_flags(NULL, "x", NULL),
                     RG_TOOL_DANGEROUS | RG_TOOL_SIDE_EFFECT);

    an = json_pack("{s:b}", "readOnlyHint", 1);
    assert_int_equal(rg_mcp_tool_flags(an, "x", NULL),
                     RG_TOOL_READ_ONLY | RG_TOOL_IDEMPOTENT);
    json_decref(an);

    /* read-only wins over destructive */
    an = json_pack("{s:b, s:b}", "readOnlyHint", 1, "destructiveHint", 1);
    assert_int_equal(rg_mcp_tool_flags(an, "x", NULL),
                     RG_TOOL_READ_ONLY | RG_TOOL_IDEMPOTENT);
    json_decref(an);

    /* write_file of server-filesystem */
    an = json_pack("{s:b, s:b, s:b}", "readOnlyHint", 0, "idempotentHint", 1,
                   "destructiveHint", 1);
    assert_int_equal(rg_mcp_tool_flags(an, "x", NULL),
                     RG_TOOL_DANGEROUS | RG_TOOL_IDEMPOTENT);
    json_decref(an);

    an = json_pack("{s:b}", "destructiveHint", 0);
    assert_int_equal(rg_mcp_tool_flags(an, "x", NULL), RG_TOOL_SIDE_EFFECT);

    /* the operator's word, the last that matches */
    pool = rg_pool_create(1024);
    ov = rg_array_create(pool, 2, sizeof(rg_mcp_tool_flags_t));
    o = rg_array_push(ov);
    o->pattern.data = "*";
    o->pattern.len = 1;
    o->flags = RG_TOOL_DANGEROUS;
    o = rg_array_push(ov);
    o->pattern.data = "x*";
    o->pattern.len = 2;
    o->flags = RG_MCP_FLAGS_NONE;

    assert_int_equal(rg_mcp_tool_flags(an, "xy", ov), 0);
    assert_int_equal(rg_mcp_tool_flags(an, "yx", ov), RG_TOOL_DANGEROUS);

    json_decref(an);
    rg_pool_destroy(pool);
}


static char *
rg_test_result(const char *json, rg_uint_t *failed)
{
    char      *s;
    json_t    *r;
    rg_buf_t   b;

    memset(&b, 0, sizeof(b));
    r = json_loads(json, 0, NULL);
    assert_non_null(r);
    assert_int_equal(rg_mcp_result_text(r, &b, failed), RG_OK);
    json_decref(r);

    s = strdup(b.data);
    rg_buf_free(&b);

    return s;
}


static void
rg_test_results(void **state)
{
    char       *s;
    json_t     *r;
    rg_buf_t    b;
    rg_uint_t   failed;

    s = rg_test_result("{\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                       "{\"type\":\"image\",\"data\":\"" 
                       "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                       "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                       "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                       "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                       "\",\"mimeType\":\"image/png\"},"
                       "{\"type\":\"audio\",\"data\":\"\",\"mimeType\":"
                       "\"audio/wav\"},"
                       "{\"type\":\"resource_link\",\"uri\":\"demo://r/1\","
                       "\"name\":\"R 1\"},"
                       "{\"type\":\"resource\",\"resource\":{\"uri\":\"f:///a\","
                       "\"mimeType\":\"text/plain\",\"text\":\"inside\"}},"
                       "{\"type\":\"resource\",\"resource\":{\"uri\":\"f:///b\","
                       "\"blob\":\"AAAA\"}},"
                       "{\"type\":\"hologram\"}],"
                       "\"structuredContent\":{\"a\":1}}", &failed);
    assert_int_equal(failed, 0);
    assert_string_equal(s, "a\n[image image/png, 156 bytes]\n"
                        "[audio audio/wav, 0 bytes]\n"
                        "[resource link demo://r/1 \"R 1\"]\n"
                        "[resource f:///a, text/plain]\ninside\n"
                        "[resource f:///b, of unknown type, 3 bytes]\n"
                        "[hologram content]");
    free(s);

    /* without text, the structure itself */
    s = rg_test_result("{\"content\":[],\"structuredContent\":"
                       "{\"temperature\":36}}", &failed);
    assert_string_equal(s, "{\"temperature\":36}");
    free(s);

    s = rg_test_result("{\"content\":[{\"type\":\"text\",\"text\":\"no\"}],"
                       "\"isError\":true}", &failed);
    assert_int_equal(failed, 1);
    assert_string_equal(s, "no");
    free(s);

    s = rg_test_result("{}", &failed);
    assert_string_equal(s, "(the tool returned no content)");
    free(s);

    memset(&b, 0, sizeof(b));
    r = json_string("not a result");
    assert_int_equal(rg_mcp_result_text(r, &b, &failed), RG_ERROR);
    json_decref(r);
    rg_buf_free(&b);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(rg_test_names),
        cmocka_unit_test(rg_test_flags),
        cmocka_unit_test(rg_test_results),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
