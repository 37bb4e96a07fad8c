/* rg_test_mcp.h: what the MCP client's tests (tests/unit/test_mcp_*.c)
 * share: the fake server and the context of a test that runs sessions
 * through the agent loop against the mock model and that server.
 *
 * The fake server (rg_test_mcp_fake.c) is the test binary itself, started
 * by an mcp block as `BINARY --fake-mcp` (rg_test_mcp_main() runs it
 * then); FAKE_MODE says how it behaves: "good" (the default), "mute"
 * (reads all, answers nothing), "silent" (no answer to server/discover),
 * "ignore-input" (closes its input after server/discover), "badversion"
 * (answers initialize with protocol 1999-01-01), "exit" (exits at once,
 * saying so on stderr), "ignore-term" (ignores SIGTERM); with a mode
 * "ignore-*" it outlives the end of its input. Its tools, with their
 * annotations (ro: read-only; rw: neither read-only nor destructive;
 * destroy: none, so destructive): echo, slow {ms} (answers after ms,
 * others meanwhile), fail (an isError text; "long:N" one of N bytes,
 * "BEGIN-"...-END"), crash (exits 3), garbage (lines that are not
 * JSON-RPC, then its answer), big (200 KB), hang (never answers), addtool
 * (adds "extra" and says tools/list_changed), env (its environment),
 * ping (pings the client, answers once ponged), destroy, touch, and a
 * name over 64 bytes. FAKE_LOG gets each line it was sent, and "pid P at
 * MS" at each start. */

#ifndef RG_TEST_MCP_H
#define RG_TEST_MCP_H

#include <rg_config.h>
#include <rg_core.h>
#include <rg_cycle.h>
#include <rg_engine.h>
#include <rg_session.h>
#include <rg_mcp.h>
#include <rg_test.h>

#include <limits.h>
#include <jansson.h>

struct CMUnitTest;


#define RG_TEST_KEY_ENV   "RG_TEST_MCP_KEY"
#define RG_TEST_KEY       "sk-rgtest-mcp-5b4a3928170611"
#define RG_TEST_TOKEN     "tok-rgtest-mcp-secret-9911"


/* a test's context, *state of its cases */
typedef struct {
    rg_test_mock_t     *mock;
    rg_cycle_t         *cycle;
    rg_engine_t        *engine;
    rg_session_t       *s;
    json_t             *msgs;
    char                self[PATH_MAX];
    char                log[PATH_MAX];
    char                errlog[PATH_MAX];  /* reagent's, when logging */
    rg_uint_t           logging;
    char                err[512];
} rg_test_ctx_t;


int rg_test_mcp_setup(void **state);
int rg_test_mcp_teardown(void **state);

/* the fake server's main, for `BINARY --fake-mcp` */
int rg_test_mcp_fake_main(void);

/* main() of an MCP test binary: the fake server when argv says so, else
 * the group of tests, with the llm's key in the environment and SIGPIPE
 * ignored (as reagent's main does: a server that died may still be
 * written to, EPIPE then) */
#define rg_test_mcp_run(argc, argv, tests)                                   \
    rg_test_mcp_main(argc, argv, #tests, tests,                              \
                     sizeof(tests) / sizeof((tests)[0]))

/* a case through the loop, with a context of its own */
#define rg_test_mcp_case(f)                                                  \
    cmocka_unit_test_setup_teardown(f, rg_test_mcp_setup, rg_test_mcp_teardown)

int rg_test_mcp_main(int argc, char **argv, const char *name,
    const struct CMUnitTest *tests, size_t n);

/* the mock model with this script (JSON text) */
void rg_test_mcp_mock(rg_test_ctx_t *t, const char *script);
/* llm at the mock, mcp "fk" the fake server in mode with `mcp` added,
 * agent "a" with `agent` (its tools fk__* unless it names its own);
 * with t->logging, reagent's log at info goes to t->errlog */
void rg_test_mcp_engine(rg_test_ctx_t *t, const char *mode, const char *mcp,
    const char *agent);
/* the one MCP server of the engine */
rg_mcp_server_t *rg_test_mcp_server(rg_test_ctx_t *t);
/* runs a session to its end; its messages as JSON in t->msgs */
rg_session_t *rg_test_mcp_session(rg_test_ctx_t *t, const char *agent,
    const char *input);
/* the content of the tool message that answers the call id */
const char *rg_test_mcp_tool_result(rg_test_ctx_t *t, const char *id);
/* what the fake server was sent, and wrote (its pid); malloc'ed */
char *rg_test_mcp_fake_log(rg_test_ctx_t *t);
/* what reagent logged (t->logging); malloc'ed */
char *rg_test_mcp_errlog(rg_test_ctx_t *t);
/* how many lines of the log hold a, and b unless NULL */
int rg_test_mcp_count_lines(const char *log, const char *a, const char *b);


#endif /* RG_TEST_MCP_H */
