/* test_providers.c: providers that behave oddly, through the agent loop
 * against the mock model (tests/mock/rg_mock.c) replaying bodies of our
 * own (tests/integration/provider_*.json, written after what providers
 * send):
 *   - a finish_reason other than stop, tool_calls and length: a
 *     content_filter with null content ends "filtered", an unknown one
 *     "failed"; both say the finish reason;
 *   - a 429 that waiting cannot cure (over the tokens-per-minute limit,
 *     no quota, no balance) fails at once, not retried; with
 *     context_limit, one over the limit is compacted first when that
 *     brings it under (with context_summarize, the summary of what was
 *     dropped is asked for before the retry), and fails at once, saying
 *     so, when it does not;
 *   - context overflows in the words of llama.cpp, vLLM, Ollama and
 *     Anthropic compact and retry like OpenAI's context_length_exceeded,
 *     a summary first with context_summarize;
 *   - an error event in a 200 stream that says the key is invalid (by
 *     its code, its type or a numeric 401) is fatal like a 401.
 * The classification itself is checked in test_llm_openai.c. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_test.h>
#include <rg_context.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <event2/event.h>


#define RG_TEST_SCRIPTS     "tests/integration/"


typedef struct {
    rg_test_mock_t     *mock;
    rg_cycle_t         *cycle;
    rg_engine_t        *engine;
    rg_session_t       *s;
    char                err[512];
} rg_test_ctx_t;


static int
rg_test_setup(void **state)
{
    *state = calloc(1, sizeof(rg_test_ctx_t));

    return *state == NULL ? -1 : 0;
}


static void
rg_test_stop(rg_test_ctx_t *t)
{
    rg_session_destroy(t->s);
    t->s = NULL;

    if (t->engine) {
        rg_engine_destroy(t->engine);
        t->engine = NULL;
    }

    if (t->cycle) {
        rg_cycle_destroy(t->cycle);
        t->cycle = NULL;
    }

    if (t->mock) {
        rg_test_mock_stop(t->mock);
        t->mock = NULL;
    }
}


static int
rg_test_teardown(void **state)
{
    rg_test_stop(*state);
    free(*state);

    return 0;
}


/* the mock on a script, a cycle with one llm (llm: its extra
 * directives) and agent "a" (agent: its directives) */
static void
rg_test_start(rg_test_ctx_t *t, const char *script, const char *llm,
    const char *agent)
{
    const char  *b;

    t->mock = rg_test_mock_start("--script", script, "--rounds", "100",
                                 NULL);
    assert_non_null(t->mock);

    b = rg_test_build_dir();

    t->cycle = rg_test_cycle(t->err, sizeof(t->err),
        "load_module %s/modules/calc.so;\n"
        "llm mock {\n"
        "    base_url http://127.0.0.1:%d/v1;\n"
        "    model mock-1;\n"
        "    retry_base 20ms; retry_max 50ms; max_retries 3;\n"
        "    %s\n"
        "}\n"
        "agent a {\n"
        "    system_prompt \"You are a test.\";\n"
        "    %s\n"
        "}\n", b, t->mock->port, llm, agent);

    t->engine = rg_test_engine_of(t->cycle, t->err);
}


static rg_session_t *
rg_test_session(rg_test_ctx_t *t, const char *input)
{
    rg_session_destroy(t->s);

    t->s = rg_test_run(t->engine, "a", input);
    assert_non_null(t->s);

    return t->s;
}


static void
rg_test_reason_has(rg_session_t *s, const char *text)
{
    if (s->reason == NULL || strstr(s->reason, text) == NULL) {
        fail_msg("reason \"%s\" does not say \"%s\"",
                 s->reason ? s->reason : "(none)", text);
    }
}


/* finish reasons ------------------------------------------------------ */

static void
rg_test_content_filter(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_start(t, RG_TEST_SCRIPTS "provider_content_filter.json", "",
                  "");
    s = rg_test_session(t, "say something bad");

    assert_int_equal(s->state, RG_SESSION_FILTERED);
    assert_string_equal(rg_session_state_name(s->state), "filtered");
    assert_true(rg_str_eq(&s->finish_reason, "content_filter"));
    rg_test_reason_has(s, "content filter");
    rg_test_reason_has(s, "finish_reason \"content_filter\"");
    rg_test_reason_has(s, "no answer came");
    assert_null(s->answer.data);
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 1);
}


static void
rg_test_finish_unknown(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_start(t, RG_TEST_SCRIPTS "provider_finish_unknown.json", "", "");
    s = rg_test_session(t, "answer");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_reason_has(s, "finish_reason \"abort\"");
    assert_non_null(s->answer.data);
    assert_int_equal(s->answer.len, strlen("half an answ"));
}


/* 429s that cannot pass ---------------------------------------------- */

static void
rg_test_429_not_retried(rg_test_ctx_t *t, const char *script,
    const char *says)
{
    rg_session_t  *s;

    rg_test_start(t, script, "", "");
    s = rg_test_session(t, "the task");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_reason_has(s, says);
    rg_test_reason_has(s, "HTTP 429");

    /* asked once: max_retries 3 would have sent it 4 times */
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 1);
    assert_int_equal(s->req.attempt, 0);
}


static void
rg_test_429_too_large(void **state)
{
    rg_test_ctx_t  *t = *state;

    rg_test_429_not_retried(t, RG_TEST_SCRIPTS "provider_429_too_large.json",
                            "Limit 30000, Requested 45210");
    rg_test_reason_has(t->s, "tokens-per-minute limit");
    rg_test_reason_has(t->s, "not retried");
    rg_test_reason_has(t->s, "context_limit");
}


static void
rg_test_429_quota(void **state)
{
    rg_test_ctx_t  *t = *state;

    rg_test_429_not_retried(t, RG_TEST_SCRIPTS "provider_429_quota.json",
                            "exceeded your current quota");
}


static void
rg_test_429_balance(void **state)
{
    rg_test_ctx_t  *t = *state;

    rg_test_429_not_retried(t, RG_TEST_SCRIPTS "provider_429_balance.json",
                            "Insufficient Balance");
}


/* What the conversation of "compute twice" weighs, from a first run of
 * it on `agent`: the limits of the scripts below are computed from it. */
typedef struct {
    double              bpt;          /* bytes per token, as calibrated */
    size_t              prefix;
    size_t              full;         /* the third request's messages */
    size_t              first;        /* its first round */
} rg_test_weight_t;


static void
rg_test_weigh(rg_test_ctx_t *t, const char *agent, rg_test_weight_t *w)
{
    char          *path;
    rg_msg_t      *m;
    rg_session_t  *s;

    path = rg_test_write_file("probe.json", "[{}, {}, {\"message\": "
                              "{\"content\": \"done\"}}]");
    assert_non_null(path);
    rg_test_start(t, path, "", agent);
    free(path);

    s = rg_test_session(t, "compute twice");
    assert_int_equal(s->state, RG_SESSION_DONE);

    /* the third request carried the system prompt, the task and two
     * rounds: drop the final answer, weigh the first round */
    w->bpt = s->bytes_per_token;
    w->prefix = s->prefix_len;
    w->full = s->msgs.bytes - rg_msgs_last(&s->msgs)->json.len;
    w->first = 0;
    for (m = s->msgs.head->next->next; m && w->first == 0; m = m->next) {
        w->first = m->json.len + m->next->json.len;  /* assistant, tool */
    }
    rg_test_stop(t);
}


/* the same conversation on `agent`, its third request refused with a 429
 * over a tokens-per-minute limit of `limit` */
static rg_session_t *
rg_test_over_tpm(rg_test_ctx_t *t, const char *agent,
    const rg_test_weight_t *w, long long limit)
{
    char  script[1024], *path;

    snprintf(script, sizeof(script),
             "[{}, {}, {\"status\": 429, \"body\": {\"error\": {\"message\": "
             "\"Request too large for mock-1 on tokens per min (TPM): "
             "Limit %lld, Requested %lld.\", \"type\": \"tokens\", "
             "\"code\": \"rate_limit_exceeded\"}}}]", limit,
             (long long) ((double) (w->prefix + w->full) / w->bpt));
    path = rg_test_write_file("too_large.json", script);
    assert_non_null(path);
    rg_test_start(t, path, "", agent);
    free(path);

    return rg_test_session(t, "compute twice");
}


#define RG_TEST_TPM_AGENT                                                    \
    "tools calc; tool_max_calls calc 2; keep_rounds 1; "                     \
    "context_limit 1000000;"
#define RG_TEST_TPM_SUMMARIZE  RG_TEST_TPM_AGENT " context_summarize on;"


/* With context_limit, a request over the provider's tokens-per-minute
 * limit is compacted once when that brings it under: the limit is one
 * the compacted request fits (0.9 of it, as the session aims) and the
 * full one does not. */
static void
rg_test_429_too_large_compacted(void **state)
{
    rg_test_ctx_t     *t = *state;
    rg_session_t      *s;
    rg_test_weight_t   w;

    rg_test_weigh(t, RG_TEST_TPM_AGENT, &w);
    s = rg_test_over_tpm(t, RG_TEST_TPM_AGENT, &w,
                         (long long) ((double) (w.prefix + w.full
                                                - w.first / 2)
                                      / (0.9 * w.bpt)));

    if (s->state != RG_SESSION_DONE) {
        print_error("ended %s: %s\n", rg_session_state_name(s->state),
                    s->reason ? s->reason : "");
    }
    assert_int_equal(s->state, RG_SESSION_DONE);

    /* 2 rounds, the 429, the compacted retry and what followed: the 429
     * itself was never sent again as it was */
    assert_int_equal(rg_test_mock_stat(t->mock, "faults"), 1);
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 4);
    assert_int_equal(s->req.attempt, 0);
    assert_int_equal(rg_context_check(&s->msgs, t->err, sizeof(t->err)),
                     RG_OK);
}


/* the message right after the task: the summary of dropped rounds */
static void
rg_test_summary_after_task(rg_session_t *s)
{
    rg_msg_t  *m;

    m = s->msgs.head;
    while (m && m->role != 'u') {
        m = m->next;                  /* past the system prompt */
    }
    assert_non_null(m);
    m = m->next;
    assert_non_null(m);

    if (m->role != 'u' || !m->inserted
        || memmem(m->json.data, m->json.len, "Summary of earlier rounds",
                  sizeof("Summary of earlier rounds") - 1) == NULL)
    {
        fail_msg("after the task: \"%.*s\", not the summary",
                 (int) rg_min(m->json.len, 300), m->json.data);
    }
}


/* The same with context_summarize on: the compaction dropped a round, so
 * the summary of it is asked for, then the compacted request is sent. */
static void
rg_test_429_too_large_summarized(void **state)
{
    rg_test_ctx_t     *t = *state;
    rg_session_t      *s;
    rg_test_weight_t   w;

    rg_test_weigh(t, RG_TEST_TPM_SUMMARIZE, &w);
    s = rg_test_over_tpm(t, RG_TEST_TPM_SUMMARIZE, &w,
                         (long long) ((double) (w.prefix + w.full
                                                - w.first / 2)
                                      / (0.9 * w.bpt)));

    if (s->state != RG_SESSION_DONE) {
        print_error("ended %s: %s\n", rg_session_state_name(s->state),
                    s->reason ? s->reason : "");
    }
    assert_int_equal(s->state, RG_SESSION_DONE);

    /* 2 rounds, the 429, the summary, the compacted retry */
    assert_int_equal(rg_test_mock_stat(t->mock, "faults"), 1);
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 5);
    assert_int_equal(s->model_calls, 5);
    assert_int_equal(s->summaries, 1);
    assert_int_equal(s->req.attempt, 0);
    rg_test_summary_after_task(s);
    assert_int_equal(rg_context_check(&s->msgs, t->err, sizeof(t->err)),
                     RG_OK);
}


/* A limit that not even the task and the last round fit: compacting
 * cannot bring the request under, so it fails at once, says so, and asks
 * for no summary of what it would have dropped. */
static void
rg_test_429_too_large_no_fit(void **state)
{
    rg_test_ctx_t     *t = *state;
    char               limit[64];
    long long          l;
    rg_session_t      *s;
    rg_test_weight_t   w;

    rg_test_weigh(t, RG_TEST_TPM_SUMMARIZE, &w);

    /* the prefix and a few bytes: a target above 0, below any round */
    l = (long long) ((double) (w.prefix + 8) / (0.9 * w.bpt)) + 1;
    s = rg_test_over_tpm(t, RG_TEST_TPM_SUMMARIZE, &w, l);

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_reason_has(s, "tokens-per-minute limit");
    rg_test_reason_has(s, "not retried (compacting could not bring it "
                       "under)");
    rg_test_reason_has(s, "HTTP 429");
    snprintf(limit, sizeof(limit), "Limit %lld, Requested", l);
    rg_test_reason_has(s, limit);

    /* the 429 was the last request: no retry, no summary call */
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 3);
    assert_int_equal(rg_test_mock_stat(t->mock, "faults"), 1);
    assert_int_equal(s->model_calls, 3);
    assert_int_equal(s->req.attempt, 0);
    assert_false(s->summarizing);
}


/* context overflows in other words ------------------------------------ */

static void
rg_test_context_words(void **state, const char *script)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_start(t, script, "", "tools calc; tool_max_calls calc 2; "
                  "keep_rounds 1;");
    s = rg_test_session(t, "compute twice");

    if (s->state != RG_SESSION_DONE) {
        print_error("%s: ended %s: %s\n", script,
                    rg_session_state_name(s->state),
                    s->reason ? s->reason : "");
    }

    /* 2 rounds, the overflow, the compacted retry: as OpenAI's */
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 4);
    assert_int_equal(rg_test_mock_stat(t->mock, "faults"), 1);
    assert_int_equal(rg_test_mock_stat(t->mock, "rejected"), 0);
    assert_int_equal(s->model_calls, 4);
}


/* An overflow with context_summarize on: the summary of the round the
 * compaction dropped is asked for before the retry, not lost. */
static void
rg_test_context_summarized(void **state)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_start(t, RG_TEST_SCRIPTS "provider_context_llamacpp.json", "",
                  "tools calc; tool_max_calls calc 2; keep_rounds 1; "
                  "context_summarize on;");
    s = rg_test_session(t, "compute twice");

    if (s->state != RG_SESSION_DONE) {
        print_error("ended %s: %s\n", rg_session_state_name(s->state),
                    s->reason ? s->reason : "");
    }

    /* 2 rounds, the overflow, the summary, the compacted retry */
    assert_int_equal(s->state, RG_SESSION_DONE);
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 5);
    assert_int_equal(rg_test_mock_stat(t->mock, "faults"), 1);
    assert_int_equal(rg_test_mock_stat(t->mock, "rejected"), 0);
    assert_int_equal(s->model_calls, 5);
    assert_int_equal(s->summaries, 1);
    rg_test_summary_after_task(s);
    assert_int_equal(rg_context_check(&s->msgs, t->err, sizeof(t->err)),
                     RG_OK);
}


static void
rg_test_context_llamacpp(void **state)
{
    rg_test_context_words(state,
                          RG_TEST_SCRIPTS "provider_context_llamacpp.json");
}


static void
rg_test_context_vllm(void **state)
{
    rg_test_context_words(state, RG_TEST_SCRIPTS "provider_context_vllm.json");
}


static void
rg_test_context_ollama(void **state)
{
    rg_test_context_words(state,
                          RG_TEST_SCRIPTS "provider_context_ollama.json");
}


static void
rg_test_context_anthropic(void **state)
{
    rg_test_context_words(state,
                          RG_TEST_SCRIPTS "provider_context_anthropic.json");
}


/* a refused key inside a 200 stream ------------------------------------ */

static void
rg_test_stream_key(void **state, const char *script, const char *says)
{
    rg_test_ctx_t  *t = *state;
    rg_session_t   *s;

    rg_test_start(t, script, "stream on;", "");
    s = rg_test_session(t, "the task");

    assert_int_equal(s->state, RG_SESSION_FAILED);
    rg_test_reason_has(s, "fatal");
    rg_test_reason_has(s, says);

    /* not retried as a server error would be */
    assert_int_equal(rg_test_mock_stat(t->mock, "requests"), 1);
    assert_int_equal(s->req.attempt, 0);
}


static void
rg_test_stream_invalid_key(void **state)
{
    rg_test_stream_key(state,
                       RG_TEST_SCRIPTS "provider_stream_invalid_key.json",
                       "Incorrect API key");
}


static void
rg_test_stream_auth_type(void **state)
{
    rg_test_stream_key(state,
                       RG_TEST_SCRIPTS "provider_stream_auth_type.json",
                       "invalid x-api-key");
}


/* a numeric code (OpenRouter's) rather than a type or a word */
static void
rg_test_stream_code_401(void **state)
{
    rg_test_stream_key(state,
                       RG_TEST_SCRIPTS "provider_stream_code_401.json",
                       "No auth credentials found");
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test_setup_teardown(rg_test_content_filter,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_finish_unknown,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_429_too_large,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_429_quota,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_429_balance,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_429_too_large_compacted,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_429_too_large_summarized,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_429_too_large_no_fit,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_context_summarized,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_context_llamacpp,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_context_vllm,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_context_ollama,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_context_anthropic,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_stream_invalid_key,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_stream_auth_type,
                                        rg_test_setup, rg_test_teardown),
        cmocka_unit_test_setup_teardown(rg_test_stream_code_401,
                                        rg_test_setup, rg_test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
