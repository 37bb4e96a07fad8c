/* rg_claim.c: side effects at most once, in the store.
 *
 * With a durable store, a call of a tool flagged RG_TOOL_SIDE_EFFECT runs
 * only after the store holds the answer that asked for it and a claim of
 * it ("{ID}:idem:<round>:<tool_call_id>", set only if absent); its result
 * replaces the claim as soon as it ends. A session resumed after a crash
 * runs its last turn again: a call whose result is stored is answered
 * from it, and one that was claimed without a result is not run blindly:
 * the model is told its outcome is unknown. Claims and results live as
 * long as the session (RG_STORE_KEEP: each checkpoint renews their TTL
 * with its own), so that a session resumed twice, long after a claim,
 * still finds it. The phase claim (rg_phase_claim.c) asks for the claims
 * and reads their answers; the phase run stores each result
 * (rg_phase_run.c); a store that lost the session gets them again
 * (rg_recover.c). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_session_int.h>
#include <rg_claim.h>
#include <rg_codec.h>
#include <rg_store_conf.h>
#include <rg_tools_conf.h>
#include <rg_tool_args.h>


rg_uint_t
rg_claim_needed(rg_session_t *s, rg_uint_t i)
{
    rg_int_t  j;

    j = s->extra[i].tool;

    return s->durable && j >= 0 && !s->calls[i].has_preset
           && (s->agent->toolset.tools[j]->tool->flags & RG_TOOL_SIDE_EFFECT);
}


rg_str_t
rg_claim_name(rg_session_t *s, rg_uint_t i)
{
    rg_str_t   name;
    size_t     len;

    len = 5 + s->calls[i].key.len;
    name.data = rg_palloc(s->pool, len + 1);
    name.len = name.data ? len : 0;

    if (name.data) {
        memcpy(name.data, "idem:", 5);
        memcpy(name.data + 5, s->calls[i].key.data, s->calls[i].key.len);
        name.data[len] = '\0';
    }

    return name;
}


/* a record of call i under the session's lease */
static rg_store_op_t *
rg_claim_store(rg_session_t *s, rg_uint_t i, rg_str_t value,
    rg_uint_t flags, rg_store_pt cb, void *data)
{
    rg_store_t      *st;
    rg_store_put_t   p;

    st = rg_store_ctx(s->engine);

    memset(&p, 0, sizeof(p));
    p.id.data = s->id;
    p.id.len = strlen(s->id);
    p.name = rg_claim_name(s, i);
    p.value = value;
    p.lease = s->lease;
    p.ttl = rg_store_session_ttl(s->engine);
    p.flags = flags;

    return p.name.data ? st->put(st, &p, cb, data) : NULL;
}


rg_store_op_t *
rg_claim_put(rg_session_t *s, rg_uint_t i, rg_store_pt cb, void *data)
{
    return rg_claim_store(s, i, s->claim_rec, RG_STORE_NX | RG_STORE_KEEP,
                          cb, data);
}


/* the result of call i, in place of its claim (fire and forget: if it
 * is lost, a resume says "outcome unknown", which is true) */
void
rg_claim_result(rg_session_t *s, rg_uint_t i, rg_tool_run_t *run)
{
    char              *rec;
    size_t             len, limit;
    rg_buf_t           b;
    rg_str_t           v;
    rg_codec_writer_t  w;
    const char        *text;

    /* what the model is shown, trimmed the same way */
    memset(&b, 0, sizeof(b));
    text = run->result ? run->result : "";
    len = run->result ? run->result_len : 0;
    limit = rg_tools_conf(s->engine->cycle)->tool_result_limit;

    if (len > limit && rg_tool_trim(text, len, limit, &b) == RG_OK) {
        text = b.data;
        len = b.len;
    }

    rg_codec_begin(&w, 4);
    rg_codec_str(&w, "k", "r", 1);
    rg_codec_str(&w, "r", text, len);
    rg_codec_int(&w, "f", run->failed);
    rg_codec_int(&w, "t", (int64_t) rg_wall_msec());
    rec = rg_codec_end(&w, &len);
    rg_buf_free(&b);

    if (rec == NULL) {
        return;
    }

    v.data = rec;
    v.len = len;
    rg_claim_store(s, i, v, RG_STORE_KEEP, NULL, NULL);

    free(rec);
}


void
rg_claim_again(rg_session_t *s)
{
    rg_uint_t       i;
    rg_tool_run_t  *run;

    if (s->state != RG_SESSION_TOOLS_RUNNING || s->claim_rec.data == NULL
        || s->extra == NULL)
    {
        return;
    }

    for (i = 0; i < s->ncalls; i++) {
        if (!rg_claim_needed(s, i)) {
            continue;
        }

        run = s->turn && i < s->turn->n ? s->turn->runs[i] : NULL;

        if (s->extra[i].claimed) {
            rg_claim_put(s, i, NULL, NULL);

        } else if (run && run->result) {
            rg_claim_result(s, i, run);
        }
    }
}
