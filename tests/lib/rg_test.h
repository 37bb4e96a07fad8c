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

/* runs one task to its end; the caller destroys the session */
rg_session_t *rg_test_run(rg_engine_t *e, const char *agent,
    const char *input);

/* runs n tasks at once; fills states[] with each final state */
rg_uint_t rg_test_run_many(rg_engine_t *e, const char *agent, rg_uint_t n,
    rg_uint_t *states);

#endif /* RG_TEST_H */
