/* rg_test_session.c: a session's messages, an engine's end (see
 * rg_test_session.h). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test_session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>


json_t *
rg_test_session_msgs(rg_session_t *s)
{
    json_t    *msgs, *m;
    rg_msg_t  *msg;

    msgs = json_array();
    assert_non_null(msgs);

    for (msg = s->msgs.head; msg; msg = msg->next) {
        m = json_loadb(msg->json.data, msg->json.len, JSON_ALLOW_NUL,
                     NULL);
        if (m == NULL) {
            print_error("a message is not JSON: %.*s\n", (int) msg->json.len,
                        msg->json.data);
            fail();
        }
        json_array_append_new(msgs, m);
    }

    return msgs;
}


const char *
rg_test_tool_answer(json_t *msgs, const char *id)
{
    size_t       i;
    json_t      *m;
    const char  *cid;

    json_array_foreach(msgs, i, m) {
        cid = json_string_value(json_object_get(m, "tool_call_id"));

        if (cid != NULL && strcmp(cid, id) == 0) {
            return json_string_value(json_object_get(m, "content"));
        }
    }

    print_error("no tool message answers \"%s\"\n", id);
    fail();

    return NULL;
}


void
rg_test_engine_end(rg_session_t *s, rg_engine_t *e, rg_cycle_t *cycle,
    rg_test_mock_t *mock)
{
    rg_session_destroy(s);
    rg_engine_destroy(e);
    rg_cycle_destroy(cycle);
    rg_test_mock_stop(mock);
}
