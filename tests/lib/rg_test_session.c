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
        m = json_loadb(msg->json.data, msg->json.len, 0, NULL);
        if (m == NULL) {
            print_error("a message is not JSON: %.*s\n", (int) msg->json.len,
                        msg->json.data);
            fail();
        }
        json_array_append_new(msgs, m);
    }

    return msgs;
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
