/* rg_result.c: a session's result as every command writes it, one JSON
 * object: {"id", "status", "answer", "rounds", "tokens", "model_calls",
 * "ms", "error" (not done: why), "note" (done, with a remark),
 * "finish_reason", "cached_tokens" and "cache_write_tokens" (of tokens,
 * when a prompt cache was used), "cost" (dollars, when the llm has a
 * price)}. batch's JSONL, serve's results stream and the HTTP
 * API's answers are the same object. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>


json_t *
rg_session_result(rg_session_t *s)
{
    json_t  *r, *answer;

    answer = s->answer.data ? json_stringn(s->answer.data, s->answer.len)
                            : json_null();

    /* tokens and model calls are the task's: its child agents' too; the
     * time is its running time, before a resume included */
    r = json_pack("{s:s, s:s, s:o, s:I, s:I, s:I, s:I, s:s?}",
                  "id", s->task_id ? s->task_id : s->id,
                  "status", rg_session_state_name(s->state),
                  "answer", answer ? answer : json_null(),
                  "rounds", (json_int_t) s->round,
                  "tokens", (json_int_t) (s->prompt_tokens
                                          + s->completion_tokens),
                  "model_calls", (json_int_t) s->model_calls,
                  "ms", (json_int_t) (s->elapsed + s->ended - s->started),
                  "error", s->state == RG_SESSION_DONE ? NULL : s->reason);
    if (r == NULL) {
        return NULL;
    }

    if (s->state == RG_SESSION_DONE && s->reason) {
        json_object_set_new(r, "note", json_string(s->reason));
    }

    if (s->finish_reason.len) {
        json_object_set_new(r, "finish_reason",
                            json_stringn(s->finish_reason.data,
                                         s->finish_reason.len));
    }

    if (s->cached_tokens) {
        json_object_set_new(r, "cached_tokens",
                            json_integer(s->cached_tokens));
    }

    if (s->cache_write_tokens) {
        json_object_set_new(r, "cache_write_tokens",
                            json_integer(s->cache_write_tokens));
    }

    if (s->llm->priced || s->cost > 0) {
        json_object_set_new(r, "cost", rg_session_dollars(s->cost));
    }

    return r;
}
