/* test_task.c: the task lines of `reagent batch` (src/queue/rg_task.c):
 * a key that is no task's is an error that names it (with the key it was
 * probably meant to be), "input" may be a list of messages as providers'
 * batch APIs take them (text parts joined, the last one the user's), and
 * every way such a list can be wrong is reported with its index. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_task.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


/* the line is no task, and the reason is exactly want */
static void
rg_test_refused(const char *line, const char *want)
{
    rg_int_t   rc;
    rg_task_t  t;

    rc = rg_task_parse(&t, line, strlen(line), 7);

    if (rc != RG_DECLINED || strcmp(t.error, want) != 0) {
        print_error("line: %s\n  rc %ld, error: %s\n  want: %s\n", line,
                    (long) rc, rc == RG_DECLINED ? t.error : "-", want);
    }

    assert_int_equal(rc, RG_DECLINED);
    assert_string_equal(t.error, want);

    rg_task_free(&t);
}


static void
test_unknown_key(void **state)
{
    rg_int_t     rc;
    rg_task_t    t;
    const char  *line;
    const char  *ok = "{\"id\":\"t1\",\"agent\":\"a\",\"input\":\"hi\","
                     "\"max_rounds\":3,\"max_tokens\":10,\"deadline\":\"1s\"}";

    (void) state;

    /* every key a task has */
    rc = rg_task_parse(&t, ok, strlen(ok), 1);
    assert_int_equal(rc, RG_OK);
    assert_int_equal(t.max_rounds, 3);
    assert_null(t.messages);
    rg_task_free(&t);

    rg_test_refused("{\"id\":\"t1\",\"input\":\"hi\",\"max_rouns\":4}",
                    "line 7: unknown key \"max_rouns\"; did you mean "
                    "\"max_rounds\"?");
    rg_test_refused("{\"id\":\"t1\",\"imput\":\"hi\"}",
                    "line 7: unknown key \"imput\"; did you mean \"input\"?");
    rg_test_refused("{\"id\":\"t1\",\"input\":\"hi\",\"priority\":1}",
                    "line 7: unknown key \"priority\" (a task has id, agent, "
                    "input, max_rounds, max_tokens, max_cost, deadline, "
                    "tenant, traceparent, approval and events)");

    /* an id names the task: never empty, a string or an integer */
    rg_test_refused("{\"id\":\"\",\"input\":\"hi\"}",
                    "line 7: \"id\" is empty: it names the task");
    rg_test_refused("{\"id\":true,\"input\":\"hi\"}",
                    "line 7: \"id\" must be a string or an integer");
    rg_test_refused("{\"id\":[1],\"input\":\"hi\"}",
                    "line 7: \"id\" must be a string or an integer");

    /* and a queued one is named in the API's paths too */
    assert_true(rg_task_id_valid("t-1 é", strlen("t-1 é")));
    assert_false(rg_task_id_valid("", 0));
    assert_false(rg_task_id_valid("a/b", 3));
    assert_false(rg_task_id_valid("..", 2));
    assert_false(rg_task_id_valid("a\tb", 3));

    /* approval: park, deny or nothing */
    line = "{\"id\":\"p\",\"input\":\"hi\",\"approval\":\"park\"}";
    rc = rg_task_parse(&t, line, strlen(line), 1);
    assert_int_equal(rc, RG_OK);
    assert_int_equal(t.park, 1);
    rg_task_free(&t);

    line = "{\"id\":\"p\",\"input\":\"hi\",\"approval\":\"deny\"}";
    rc = rg_task_parse(&t, line, strlen(line), 1);
    assert_int_equal(rc, RG_OK);
    assert_int_equal(t.park, 0);
    rg_task_free(&t);

    rg_test_refused("{\"id\":\"t1\",\"input\":\"hi\","
                    "\"approval\":\"yes\"}",
                    "line 7: \"approval\" must be \"park\" (a dangerous "
                    "call waits for an operator's decision) or \"deny\"");

    /* the id is kept for the result, whatever the error */
    line = "{\"id\":\"t9\",\"x\":1}";
    rc = rg_task_parse(&t, line, strlen(line), 2);
    assert_int_equal(rc, RG_DECLINED);
    assert_string_equal(t.id, "t9");
    rg_task_free(&t);
}


/* "events": true asks for the session's events; false by default, and
 * nothing but a boolean */
static void
test_events_field(void **state)
{
    rg_int_t     rc;
    rg_task_t    t;
    const char  *line;

    (void) state;

    line = "{\"id\":\"e1\",\"input\":\"hi\",\"events\":true}";
    rc = rg_task_parse(&t, line, strlen(line), 1);
    assert_int_equal(rc, RG_OK);
    assert_int_equal(t.events, 1);
    rg_task_free(&t);

    line = "{\"id\":\"e2\",\"input\":\"hi\"}";
    rc = rg_task_parse(&t, line, strlen(line), 1);
    assert_int_equal(rc, RG_OK);
    assert_int_equal(t.events, 0);
    rg_task_free(&t);

    line = "{\"id\":\"e3\",\"input\":\"hi\",\"events\":false}";
    rc = rg_task_parse(&t, line, strlen(line), 1);
    assert_int_equal(rc, RG_OK);
    assert_int_equal(t.events, 0);
    rg_task_free(&t);

    rg_test_refused("{\"id\":\"e4\",\"input\":\"hi\",\"events\":1}",
                    "line 7: \"events\" must be true or false");
    rg_test_refused("{\"id\":\"e5\",\"input\":\"hi\",\"events\":\"yes\"}",
                    "line 7: \"events\" must be true or false");
    rg_test_refused("{\"id\":\"e6\",\"input\":\"hi\",\"event\":true}",
                    "line 7: unknown key \"event\"; did you mean "
                    "\"events\"?");
}


/* "after_loss": what submit --wait sets on a task Redis lost; the line
 * it queues again is the task's own with it added */
static void
test_after_loss(void **state)
{
    char        *again;
    rg_int_t     rc;
    rg_task_t    t;
    const char  *line;

    (void) state;

    line = "{\"id\":\"a1\",\"input\":\"hi\",\"max_rounds\":3}";
    rc = rg_task_parse(&t, line, strlen(line), 1);
    assert_int_equal(rc, RG_OK);
    assert_int_equal(t.after_loss, 0);
    rg_task_free(&t);

    again = rg_task_after_loss(line);
    assert_non_null(again);
    rc = rg_task_parse(&t, again, strlen(again), 1);
    assert_int_equal(rc, RG_OK);
    assert_int_equal(t.after_loss, 1);
    assert_int_equal(t.max_rounds, 3);
    assert_string_equal(t.id, "a1");
    rg_task_free(&t);
    free(again);

    assert_null(rg_task_after_loss("[1]"));
    assert_null(rg_task_after_loss("not json"));

    rg_test_refused("{\"id\":\"a2\",\"input\":\"hi\",\"after_loss\":1}",
                    "line 7: \"after_loss\" must be true or false");
}


static void
test_messages(void **state)
{
    rg_int_t     rc;
    rg_task_t    t;
    const char  *line;

    (void) state;

    line = "{\"id\":\"m1\",\"input\":[{\"role\":\"system\",\"content\":\"be "
           "brief\"},{\"role\":\"user\",\"content\":\"2+2?\"},{\"role\":"
           "\"assistant\",\"content\":\"4\"},{\"role\":\"user\",\"content\":"
           "[{\"type\":\"text\",\"text\":\"and \"},{\"type\":\"text\","
           "\"text\":\"3+3?\"}]}]}";

    rc = rg_task_parse(&t, line, strlen(line), 1);
    assert_int_equal(rc, RG_OK);
    assert_non_null(t.messages);
    assert_int_equal(json_array_size(t.messages), 4);

    /* the input is the last user message; its parts were joined */
    assert_int_equal(t.input_len, 8);
    assert_memory_equal(t.input, "and 3+3?", 8);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(t.messages, 3), "content")),
                        "and 3+3?");
    rg_task_free(&t);

    /* one message is enough */
    line = "{\"input\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    rc = rg_task_parse(&t, line, strlen(line), 1);
    assert_int_equal(rc, RG_OK);
    assert_memory_equal(t.input, "hi", 2);
    rg_task_free(&t);
}


static void
test_messages_refused(void **state)
{
    (void) state;

    rg_test_refused("{\"input\":[]}",
                    "line 7: \"input\" is an empty list of messages");
    rg_test_refused("{\"input\":[\"hi\"]}",
                    "line 7: \"input\"[0] is not a message {\"role\", "
                    "\"content\"}");
    rg_test_refused("{\"input\":[{\"role\":\"tool\",\"content\":\"x\"}]}",
                    "line 7: \"input\"[0]: \"role\" must be \"system\", "
                    "\"user\" or \"assistant\" (a task's messages hold no "
                    "tool calls)");
    rg_test_refused("{\"input\":[{\"content\":\"x\"}]}",
                    "line 7: \"input\"[0]: \"role\" must be \"system\", "
                    "\"user\" or \"assistant\" (a task's messages hold no "
                    "tool calls)");
    rg_test_refused("{\"input\":[{\"role\":\"user\",\"content\":\"a\"},"
                    "{\"role\":\"user\",\"content\":7}]}",
                    "line 7: \"input\"[1]: \"content\" must be a string, "
                    "not empty");
    rg_test_refused("{\"input\":[{\"role\":\"user\",\"content\":\"\"}]}",
                    "line 7: \"input\"[0]: \"content\" must be a string, "
                    "not empty");
    rg_test_refused("{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":"
                    "\"image_url\",\"image_url\":{}}]}]}",
                    "line 7: \"input\"[0]: only text parts {\"type\": "
                    "\"text\", \"text\"} may make its content");
    rg_test_refused("{\"input\":[{\"role\":\"user\",\"content\":\"q\"},"
                    "{\"role\":\"assistant\",\"content\":\"a\"}]}",
                    "line 7: the last message of \"input\" is the "
                    "assistant's: it must be the user's, for the model to "
                    "answer");
    rg_test_refused("{\"input\":{\"role\":\"user\"}}",
                    "line 7: \"input\" is missing or not a non-empty string "
                    "(or a list of messages)");
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_unknown_key),
        cmocka_unit_test(test_events_field),
        cmocka_unit_test(test_after_loss),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_messages_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
