/* rg_test_session.h: what the tests that run sessions on a real engine
 * share beyond rg_test.h: the messages of a session as JSON, and the end
 * of an engine with all it ran on. */

#ifndef RG_TEST_SESSION_H
#define RG_TEST_SESSION_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_session.h>
#include <rg_test.h>

#include <jansson.h>

/* a new JSON array of the session's messages, in order, each parsed (a
 * NUL in a string, \u0000, is kept; a cmocka failure when one is not
 * JSON) */
json_t *rg_test_session_msgs(rg_session_t *s);

/* the content of the tool message (of msgs, as rg_test_session_msgs()
 * gives them) that answers the call `id`; none fails the test (cmocka) */
const char *rg_test_tool_answer(json_t *msgs, const char *id);

/* destroys the session, the engine, the cycle and stops the mock, in that
 * order; any of them may be NULL */
void rg_test_engine_end(rg_session_t *s, rg_engine_t *e, rg_cycle_t *cycle,
    rg_test_mock_t *mock);

#endif /* RG_TEST_SESSION_H */
