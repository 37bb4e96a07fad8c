/* test_events.c: a session's events (src/agent/rg_events.c) through the
 * agent loop, over real HTTP against the mock model, with the memory
 * store: the owner's hook sees every event in order (each tool call's
 * start before its end, also for a call that never ran), with its task,
 * session and time, and a key the model quotes masked; a session whose
 * task asks for events records the same in the store, read back with
 * rg_events_read() after an id; a failed model call says why; a session
 * nobody follows records nothing. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>
#include <rg_test_session.h>
#include <rg_events.h>
#include <rg_store_conf.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <event2/event.h>


#define RG_TEST_SCRIPTS   "tests/integration/"
#define RG_TEST_KEY_ENV   "RG_TEST_EVENTS_API_KEY"
#define RG_TEST_KEY       "sk-rgevents-5a4b3c2d1e0f9988"


typedef struct {
    rg_test_mock_t     *mock;
    rg_cycle_t         *cycle;
    rg_engine_t        *engine;
    rg_session_t       *s;
    json_t             *seen;         /* the events the hook saw */
    json_t             *read;         /* {id, type, data} read back */
    rg_uint_t           done;
    char                err[512];
} rg_test_ctx_t;


static int
rg_test_setup(void **state)
{
    rg_test_ctx_t  *t;

    t = calloc(1, sizeof(rg_test_ctx_t));
    if (t == NULL) {
        return -1;
    }

    t->seen = json_array();
    t->read = json_array();
    *state = t;

    return t->seen && t->read ? 0 : -1;
}


static int
rg_test_teardown(void **state)
{
    rg_test_ctx_t  *t;

    t = *state;

    rg_test_engine_end(t->s, t->engine, t->cycle, t->mock);
    json_decref(t->seen);
    json_decref(t->read);
    free(t);

    unsetenv(RG_TEST_KEY_ENV);

    return 0;
}


static void
rg_test_engine(rg_test_ctx_t *t, const char *mock_arg, const char *value)
{
    const char  *b;

    t->mock = rg_test_mock_start(mock_arg, value, NULL);
    assert_non_null(t->mock);

    assert_int_equal(setenv(RG_TEST_KEY_ENV, RG_TEST_KEY, 1), 0);

    b = rg_test_build_dir();

    t->cycle = rg_test_cycle(t->err, sizeof(t->err),
        "load_module %s/modules/calc.so;\n"
        "llm mock {\n"
        "    base_url http://127.0.0.1:%d/v1;\n"
        "    model mock-1;\n"
        "    api_key_env " RG_TEST_KEY_ENV ";\n"
        "    retry_base 50ms;\n"
        "}\n"
        "agent a { tools calc; }\n", b, t->mock->port);
    t->engine = rg_test_engine_of(t->cycle, t->err);
}


static void
rg_test_hook(rg_session_t *s, const char *type, json_t *event, void *data)
{
    rg_test_ctx_t  *t;

    t = data;

    assert_string_equal(json_string_value(json_object_get(event, "type")),
                        type);
    json_array_append(t->seen, event);
}


static void
rg_test_done(rg_session_t *s)
{
    rg_test_ctx_t  *t;

    t = s->data;
    t->done = 1;
    event_base_loopbreak(s->engine->base);
}


/* runs task "task-7" to its end; events: recorded in the store; hook:
 * shown to rg_test_hook */
static void
rg_test_run_session(rg_test_ctx_t *t, rg_uint_t events, rg_uint_t hook)
{
    rg_agent_conf_t  *a;

    a = rg_agent_find(t->cycle, "a", 1);
    assert_non_null(a);

    t->s = rg_session_create(t->engine, a, "task-7", "compute", 7,
                             rg_test_done, t);
    assert_non_null(t->s);

    t->s->events = events;
    if (hook) {
        t->s->on_event = rg_test_hook;
        t->s->on_event_data = t;
    }

    assert_int_equal(rg_session_start(t->s), RG_OK);

    while (!t->done && event_base_dispatch(t->engine->base) == 0) {
        /* until it ends */
    }

    assert_true(rg_session_final(t->s));
}


static void
rg_test_got(void *data, rg_int_t rc, const rg_store_entry_t *ev,
    rg_uint_t n, const char *err)
{
    rg_uint_t       i;
    rg_test_ctx_t  *t;

    t = data;
    t->done = 1;

    if (rc != RG_OK) {
        print_error("read: %s\n", err);
    }
    assert_int_equal(rc, RG_OK);

    json_array_clear(t->read);

    for (i = 0; i < n; i++) {
        json_array_append_new(t->read,
            json_pack("{s:s%, s:s%, s:o}",
                      "id", ev[i].id.data, ev[i].id.len,
                      "type", ev[i].type.data, ev[i].type.len,
                      "data", json_loadb(ev[i].data.data, ev[i].data.len,
                                         0, NULL)));
    }

    event_base_loopbreak(t->engine->base);
}


/* the session's events from the store, those after `after` */
static void
rg_test_read(rg_test_ctx_t *t, const char *after)
{
    rg_events_read_t  *r;

    t->done = 0;
    r = rg_events_read(t->engine, t->s->id, after, 0, rg_test_got, t);
    assert_non_null(r);
    assert_int_equal(t->done, 0);           /* never inside the call */

    while (!t->done && event_base_dispatch(t->engine->base) == 0) {
        /* until the store answers */
    }
}


static const char *
rg_test_type(json_t *events, size_t i)
{
    return json_string_value(json_object_get(json_array_get(events, i),
                                             "type"));
}


/* the index of the event of type whose data field id is call, -1 */
static int
rg_test_find(json_t *events, const char *type, const char *call)
{
    size_t   i;
    json_t  *ev;

    json_array_foreach(events, i, ev) {
        if (strcmp(json_string_value(json_object_get(ev, "type")), type)
            == 0
            && strcmp(json_string_value(json_object_get(ev, "id")), call)
               == 0)
        {
            return (int) i;
        }
    }

    return -1;
}


static void
test_hook_sees_every_event(void **state)
{
    int             st, en;
    char           *text;
    size_t          i, n;
    json_t         *ev;
    rg_test_ctx_t  *t = *state;
    const char     *calls[] = { "call_ok", "call_err", "call_nosuch" };

    rg_test_engine(t, "--script", RG_TEST_SCRIPTS "events_tools.json");
    rg_test_run_session(t, 0, 1);
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    n = json_array_size(t->seen);
    assert_int_equal(n, 11);

    assert_string_equal(rg_test_type(t->seen, 0), "model_call_started");
    assert_string_equal(rg_test_type(t->seen, 1), "model_call_ended");
    assert_string_equal(rg_test_type(t->seen, 8), "model_call_started");
    assert_string_equal(rg_test_type(t->seen, 9), "model_call_ended");
    assert_string_equal(rg_test_type(t->seen, 10), "final");

    /* each call's start, then its end, between the two model calls */
    for (i = 0; i < 3; i++) {
        st = rg_test_find(t->seen, "tool_call_started", calls[i]);
        en = rg_test_find(t->seen, "tool_call_ended", calls[i]);
        if (st < 2 || en <= st || en > 7) {
            print_error("%s: started at %d, ended at %d\n", calls[i], st,
                        en);
        }
        assert_true(st >= 2 && en > st && en <= 7);
    }

    json_array_foreach(t->seen, i, ev) {
        assert_string_equal(json_string_value(json_object_get(ev, "task")),
                            "task-7");
        assert_string_equal(json_string_value(json_object_get(ev,
                                                              "session")),
                            t->s->id);
        assert_true(json_integer_value(json_object_get(ev, "ts"))
                    > 1700000000000LL);
    }

    ev = json_array_get(t->seen, 1);
    assert_int_equal(json_integer_value(json_object_get(ev, "round")), 1);
    assert_int_equal(json_integer_value(json_object_get(ev, "tool_calls")),
                     3);
    assert_true(json_integer_value(json_object_get(ev, "prompt_tokens"))
                > 0);

    ev = json_array_get(t->seen, rg_test_find(t->seen, "tool_call_ended",
                                              "call_ok"));
    assert_true(json_is_true(json_object_get(ev, "ok")));
    assert_string_equal(json_string_value(json_object_get(ev, "result")),
                        "42");

    ev = json_array_get(t->seen, rg_test_find(t->seen, "tool_call_ended",
                                              "call_err"));
    assert_true(json_is_false(json_object_get(ev, "ok")));
    assert_non_null(json_string_value(json_object_get(ev, "error")));

    ev = json_array_get(t->seen, rg_test_find(t->seen, "tool_call_started",
                                              "call_nosuch"));
    assert_string_equal(json_string_value(json_object_get(ev, "name")),
                        "no_such_tool");
    ev = json_array_get(t->seen, rg_test_find(t->seen, "tool_call_ended",
                                              "call_nosuch"));
    assert_true(json_is_false(json_object_get(ev, "ok")));

    /* the answer quoted the key: masked */
    ev = json_array_get(t->seen, 10);
    assert_string_equal(json_string_value(json_object_get(ev, "status")),
                        "done");
    assert_int_equal(json_integer_value(json_object_get(ev, "rounds")), 2);
    text = json_dumps(t->seen, 0);
    assert_non_null(text);
    assert_null(strstr(text, RG_TEST_KEY));
    assert_non_null(strstr(text, "done, key sk-"));
    free(text);

    /* the hook alone: nothing was recorded */
    rg_test_read(t, NULL);
    assert_int_equal(json_array_size(t->read), 0);
}


static void
test_store_records_them(void **state)
{
    char           *text;
    size_t          i;
    json_t         *ev;
    rg_test_ctx_t  *t = *state;
    const char     *third;

    rg_test_engine(t, "--script", RG_TEST_SCRIPTS "events_tools.json");
    rg_test_run_session(t, 1, 0);
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    rg_test_read(t, NULL);
    assert_int_equal(json_array_size(t->read), 11);
    assert_string_equal(rg_test_type(t->read, 0), "model_call_started");
    assert_string_equal(rg_test_type(t->read, 10), "final");

    json_array_foreach(t->read, i, ev) {
        assert_string_equal(json_string_value(json_object_get(
                                json_object_get(ev, "data"), "type")),
                            json_string_value(json_object_get(ev, "type")));
        assert_string_equal(json_string_value(json_object_get(
                                json_object_get(ev, "data"), "task")),
                            "task-7");
    }

    text = json_dumps(t->read, 0);
    assert_non_null(text);
    assert_null(strstr(text, RG_TEST_KEY));
    free(text);

    /* after the third: the eight that follow it */
    third = json_string_value(json_object_get(json_array_get(t->read, 2),
                                              "id"));
    text = strdup(third);
    assert_non_null(text);
    rg_test_read(t, text);
    free(text);
    assert_int_equal(json_array_size(t->read), 8);

    /* an id that is none is refused at once */
    assert_false(rg_events_id_valid("x-1"));
    assert_null(rg_events_read(t->engine, t->s->id, "x-1", 10, rg_test_got,
                               t));
}


static void
test_failed_model_call(void **state)
{
    json_t         *ev;
    rg_test_ctx_t  *t = *state;

    rg_test_engine(t, "--fault", "400");
    rg_test_run_session(t, 1, 1);
    assert_int_equal(t->s->state, RG_SESSION_FAILED);

    assert_int_equal(json_array_size(t->seen), 3);
    ev = json_array_get(t->seen, 1);
    assert_string_equal(rg_test_type(t->seen, 1), "model_call_ended");
    assert_string_not_equal(json_string_value(json_object_get(ev, "status")),
                            "ok");
    assert_non_null(json_string_value(json_object_get(ev, "error")));
    assert_int_equal(json_integer_value(json_object_get(ev, "http_status")),
                     400);

    ev = json_array_get(t->seen, 2);
    assert_string_equal(json_string_value(json_object_get(ev, "status")),
                        "failed");
    assert_non_null(json_string_value(json_object_get(ev, "reason")));

    rg_test_read(t, NULL);
    assert_int_equal(json_array_size(t->read), 3);
}


static void
test_nobody_follows(void **state)
{
    rg_test_ctx_t  *t = *state;

    rg_test_engine(t, "--script", RG_TEST_SCRIPTS "events_tools.json");
    rg_test_run_session(t, 0, 0);
    assert_int_equal(t->s->state, RG_SESSION_DONE);

    assert_int_equal(json_array_size(t->seen), 0);
    assert_null(t->s->events_sink);
    rg_test_read(t, NULL);
    assert_int_equal(json_array_size(t->read), 0);
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup_teardown(test_hook_sees_every_event,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_store_records_them,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_failed_model_call,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(test_nobody_follows,
                                        rg_test_setup, rg_test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
