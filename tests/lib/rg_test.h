/* rg_test.h: helpers shared by the tests: the mock model as a child
 * process on a free loopback port, configurations from text, and running
 * sessions to their end on a real reactor. Tests may block; the reactor
 * code they test may not. */

#ifndef RG_TEST_H
#define RG_TEST_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_session_int.h>   /* tests see what a session is made of */
#include <event2/event.h>

/* libevent times its timers with CLOCK_MONOTONIC_COARSE (one jiffy, up to
 * 4 ms at HZ=250), so a delay it runs may end that much early as measured
 * by a precise clock (rg_monotonic_msec, the mock's) */
#define RG_TEST_CLOCK_SLACK 10

typedef struct {
    pid_t       pid;
    int         port;
    char        dir[64];
} rg_test_mock_t;

/* starts build/rg_mock with the given extra arguments (NULL-ended) */
rg_test_mock_t *rg_test_mock_start(const char *arg, ...);
/* the same into (t)->mock, any struct with a `mock`; NULL fails the test
 * (cmocka) */
#define rg_test_mock(t, ...)                                                 \
    do {                                                                     \
        (t)->mock = rg_test_mock_start(__VA_ARGS__, NULL);                   \
        assert_non_null((t)->mock);                                          \
    } while (0)
void rg_test_mock_stop(rg_test_mock_t *m);
/* GET path from the mock; returns a malloc'ed body or NULL */
char *rg_test_mock_get(rg_test_mock_t *m, const char *path);
long rg_test_mock_stat(rg_test_mock_t *m, const char *field);

const char *rg_test_build_dir(void);
const char *rg_test_tmpdir(void);
char *rg_test_write_file(const char *name, const char *text);

/* a cycle from configuration text; errmsg gets the error on failure */
rg_cycle_t *rg_test_cycle(char *errmsg, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* the engine of a cycle that rg_test_cycle() built; a cycle that failed
 * (NULL) fails the test with its error `err` */
rg_engine_t *rg_test_engine_of(rg_cycle_t *cycle, const char *err);

/* a session's done handler for sessions run together: s->data points to
 * the rg_uint_t count of those still running; the last one to end breaks
 * the reactor's loop */
void rg_test_countdown(rg_session_t *s);

/* the text hay holds needle (rg_test_contains), or does not
 * (rg_test_lacks); else the test fails, showing both (cmocka) */
#define rg_test_contains(hay, needle)                                        \
    rg_test_contains_at(hay, needle, 1, __FILE__, __LINE__)
#define rg_test_lacks(hay, needle)                                           \
    rg_test_contains_at(hay, needle, 0, __FILE__, __LINE__)
void rg_test_contains_at(const char *hay, const char *needle, int want,
    const char *file, int line);

/* a group's (or a case's) state: a pool of 4k, destroyed by the teardown */
int rg_test_pool_setup(void **state);
int rg_test_pool_teardown(void **state);

/* a timer's handler that breaks the loop of the event_base `arg` */
void rg_test_break(evutil_socket_t fd, short what, void *arg);

/* runs base's loop while *left is not 0, for `seconds` at most; then
 * *left must be 0 (cmocka) */
void rg_test_dispatch(struct event_base *base, rg_uint_t *left,
    int seconds);

/* runs one task to its end; the caller destroys the session */
rg_session_t *rg_test_run(rg_engine_t *e, const char *agent,
    const char *input);

/* runs n tasks at once; fills states[] with each final state */
rg_uint_t rg_test_run_many(rg_engine_t *e, const char *agent, rg_uint_t n,
    rg_uint_t *states);

#endif /* RG_TEST_H */
