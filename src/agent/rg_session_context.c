/* rg_session_context.c: keeps a session inside its model's context
 * window before each call: compaction of the conversation (rg_context.c)
 * when the next request would pass context_limit's threshold, and, with
 * context_summarize, the model call that summarizes the rounds that were
 * dropped, whose answer comes back as a message after the task. */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_session_context.h>
#include <rg_durable.h>
#include <rg_llm_request.h>
#include <rg_secret.h>


static const char  rg_session_context_prompt[] =
    "Summarize the tool calls and results below in a few sentences. Keep "
    "every fact, number and name needed to finish the task; leave out the "
    "rest.";


/* one message of the summary call, in the llm's format */
static rg_int_t
rg_session_context_add(rg_session_t *s, rg_llm_body_t *bd, rg_pool_t *pool,
    uint8_t role, rg_llm_role_e r, const char *text, size_t len)
{
    rg_int_t  rc;
    rg_buf_t  msg;
    rg_str_t  json, wire;

    memset(&msg, 0, sizeof(msg));

    rc = rg_llm_message(&msg, r, text, len);

    if (rc == RG_OK) {
        json.data = msg.data;
        json.len = msg.len;
        rc = rg_llm_wire(s->llm->codec, pool, role, &json, &wire);
    }

    if (rc == RG_OK) {
        rc = rg_llm_body_add(bd, role, wire.data, wire.len);
    }

    rg_buf_free(&msg);

    return rc;
}


/* the body of the call that summarizes the dropped rounds (in), without
 * tools */
static rg_int_t
rg_session_context_body(rg_session_t *s, rg_buf_t *in)
{
    rg_int_t          rc;
    rg_buf_t          p;
    rg_pool_t        *pool;
    rg_llm_body_t     bd;
    rg_llm_prefix_t   prefix;

    memset(&p, 0, sizeof(p));
    memset(&prefix, 0, sizeof(prefix));
    prefix.model = s->llm->model.data;
    prefix.temperature = s->agent->temperature;
    prefix.temperature_set = s->agent->temperature_set;
    prefix.stream = s->llm->stream ? 1 : 0;
    prefix.summary = 1;
    prefix.llm = s->llm;

    pool = rg_pool_create(1024);
    if (pool == NULL) {
        return RG_ERROR;
    }

    rc = rg_llm_prefix(s->llm->codec, &p, &prefix);

    if (rc == RG_OK) {
        rc = rg_llm_body_start(&bd, s->llm->codec, 0, &s->body, p.data,
                               p.len, in->len + 1024);
    }

    if (rc == RG_OK) {
        rc = rg_session_context_add(s, &bd, pool, 's', RG_LLM_SYSTEM,
                                    rg_session_context_prompt,
                                    sizeof(rg_session_context_prompt) - 1);
    }

    if (rc == RG_OK) {
        rc = rg_session_context_add(s, &bd, pool, 'u', RG_LLM_USER, in->data,
                                    in->len);
    }

    /* whole now: the ask phase sends it as it is */
    if (rc == RG_OK) {
        rc = rg_llm_body_end(&bd);
    }

    rg_buf_free(&p);
    rg_pool_destroy(pool);

    return rc;
}


void
rg_session_context_compact(rg_session_t *s, size_t target)
{
    rg_msg_t            *m;
    rg_context_result_t  res;

    if (rg_context_compact(&s->msgs, s->pool, target,
                           (rg_uint_t) s->agent->keep_rounds, &res)
        != RG_OK)
    {
        return;
    }

    /* what the store holds of the dropped messages goes at the next
     * checkpoint */
    for (m = res.dropped; m; m = m->next) {
        if (m->seq) {
            rg_durable_dropped(s, m->seq);
        }
    }

    if (res.shortened || res.dropped_rounds) {
        rg_log_error(RG_LOG_INFO, &s->log, 0, "context compacted: %lu tool "
                     "results shortened, %lu rounds dropped, %lu bytes saved",
                     (unsigned long) res.shortened,
                     (unsigned long) res.dropped_rounds,
                     (unsigned long) res.saved);
    }

    /* one summary per model answer at most: a summary that itself had
     * to go is not summarized again */
    if (res.dropped_rounds && s->agent->context_summarize
        && (s->summaries == 0 || s->summary_round != s->round))
    {
        s->summaries++;
        s->summary_round = s->round;
        rg_buf_t   b;

        /* the dropped rounds become the input of a summary call */
        memset(&b, 0, sizeof(b));

        for (m = res.dropped; m; m = m->next) {
            if (rg_buf_append(&b, m->json.data, m->json.len) != RG_OK
                || rg_buf_append_lit(&b, "\n") != RG_OK)
            {
                break;
            }
        }

        s->summarizing = 1;
        s->body.len = 0;

        if (b.data && rg_session_context_body(s, &b) != RG_OK) {
            s->body.len = 0;
        }

        rg_buf_free(&b);
    }
}


/* the summary of dropped rounds came back: its text goes after the
 * task */
void
rg_session_context_summary(rg_session_t *s, rg_llm_response_t *resp)
{
    rg_buf_t   b;
    rg_msg_t  *m;

    s->summarizing = 0;

    if (resp->status == RG_LLM_OK && resp->has_content) {
        memset(&b, 0, sizeof(b));

        if (rg_buf_append_lit(&b, "Summary of earlier rounds, removed to "
                              "save context: ") == RG_OK
            && rg_buf_append(&b, resp->content.data, resp->content.len)
               == RG_OK)
        {
            m = rg_pcalloc(s->pool, sizeof(rg_msg_t));
            if (m) {
                rg_buf_t  j;

                memset(&j, 0, sizeof(j));
                if (rg_llm_message(&j, RG_LLM_USER, b.data, b.len)
                    == RG_OK)
                {
                    m->role = 'u';
                    m->inserted = 1;
                    m->json.len = rg_secret_scrub(j.data, j.len);
                    m->json.data = rg_pstrdup(s->pool, j.data, m->json.len);
                    if (m->json.data) {
                        rg_context_insert_after_task(&s->msgs, m);
                    }
                }
                rg_buf_free(&j);
            }
        }

        rg_buf_free(&b);

    } else if (resp->status == RG_LLM_OK) {
        rg_log_error(RG_LOG_WARN, &s->log, 0, "the model's summary of the "
                     "rounds dropped to save context came back empty; going "
                     "on without it (those rounds are gone; "
                     "\"context_summarize off\" skips the summary call)");

    } else {
        rg_log_error(RG_LOG_WARN, &s->log, 0, "the call for a summary of the "
                     "rounds dropped to save context failed (%s: %.*s); going "
                     "on without it (those rounds are gone; "
                     "\"context_summarize off\" skips the summary call)",
                     rg_llm_status_name(resp->status),
                     (int) rg_min(resp->error.len, 300),
                     resp->error.data ? resp->error.data : "");
    }

    /* the call it was made for goes next (rg_phase_ask.c) */
}
