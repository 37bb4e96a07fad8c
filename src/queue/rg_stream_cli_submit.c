/* rg_stream_cli_submit.c: `reagent submit` (rg_stream_cli.c): puts
 * JSONL tasks on the queue, an id's mark set around its entry as
 * rg_stream.h says (a second submit of it is reported, not queued again);
 * with --wait, follows their results (rg_stream_cli_results.c) and queues
 * again what Redis lost (rg_stream_cli_watch.c). */

#include <rg_config.h>
#include <rg_core.h>
#include <rg_stream_cli_int.h>
#include <rg_digest.h>
#include <rg_task.h>
#include <sys/random.h>


int
rg_submit_main(rg_cycle_t *cycle, void *opts, const char *arg)
{
    char                  err[256], sid[48], key[320], entry[64];
    char                  ttl[24], last[64], *buf, *line, *end, *text;
    char                  shard[320];
    size_t                len;
    int                   rc, argc;
    rg_uint_t             cluster;
    rg_uint_t             lineno, queued, dup, bad, got, total, before;
    long long             seen;
    json_t               *want, *task;
    redisReply           *r;
    rg_stream_client_t    c;
    rg_stream_cli_opts_t *o;
    const char           *argv[12], *id;
    char                  digest[RG_SHA256_HEX], idbuf[48];
    char                  token[24], mark[48], meta[320], result[320];
    char                  sttl[24], sstale[24];
    double                secs;
    rg_msec_t             started;
    rg_progress_t         bar, *shown;
    rg_stream_watch_t     watch;
    struct event         *tick;

    o = opts;
    started = rg_monotonic_msec();

    memset(&bar, 0, sizeof(bar));
    bar.started = started;
    shown = NULL;
    tick = NULL;

    if (o->wait && (o->progress == 0 ? isatty(STDERR_FILENO)
                                     : o->progress == 1))
    {
        shown = &bar;
    }

    if (rg_stream_client_open(cycle, &c, "submit") != RG_OK) {
        return 1;
    }

    buf = rg_stream_slurp(arg, &len);
    if (buf == NULL) {
        fprintf(stderr, "reagent: cannot read \"%s\": %s\n", arg,
                strerror(errno));
        rg_stream_client_close(&c);
        return 1;
    }

    snprintf(ttl, sizeof(ttl), "%llu",
             (unsigned long long) rg_store_conf(cycle)->session_ttl);
    snprintf(sttl, sizeof(sttl), "%d", RG_STREAM_SUBMITTING_TTL);
    snprintf(sstale, sizeof(sstale), "%d", RG_STREAM_SUBMITTING_STALE);
    cluster = rg_store_conf(cycle)->cluster;

    /* this submit's own name, for its marks */
    {
        unsigned char  rnd[8];
        size_t         k;

        if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
            memset(rnd, 0, sizeof(rnd));
            memcpy(rnd, &(pid_t) { getpid() }, sizeof(pid_t));
        }
        for (k = 0; k < sizeof(rnd); k++) {
            snprintf(token + 2 * k, 3, "%02x", rnd[k]);
        }
    }

    want = json_object();
    queued = dup = bad = got = total = 0;
    rc = 0;
    snprintf(last, sizeof(last), "0-0");

    memset(&watch, 0, sizeof(watch));
    watch.token = token;
    watch.ttl = ttl;

    /* results of these tasks come after the newest one now */
    if (o->wait) {
        argv[0] = "XREVRANGE";
        argv[1] = c.results;
        argv[2] = "+";
        argv[3] = "-";
        argv[4] = "COUNT";
        argv[5] = "1";
        r = rg_stream_cli_call(c.engine, c.redis, c.results, err,
                               sizeof(err), 6, argv, NULL);
        if (r && r->type == REDIS_REPLY_ARRAY && r->elements
            && r->element[0]->type == REDIS_REPLY_ARRAY
            && r->element[0]->elements)
        {
            snprintf(last, sizeof(last), "%.*s",
                     (int) r->element[0]->element[0]->len,
                     r->element[0]->element[0]->str);
        }
        if (r) {
            freeReplyObject(r);
        }
    }

    lineno = 0;

    for (line = buf; line && *line; line = end ? end + 1 : NULL) {
        end = strchr(line, '\n');
        if (end) {
            *end = '\0';
        }
        lineno++;

        if (line[strspn(line, " \t\r")] == '\0') {
            continue;
        }

        task = json_loads(line, 0, NULL);
        if (!json_is_object(task)) {
            fprintf(stderr, "reagent: line %lu is not a JSON object: not "
                    "submitted\n", (unsigned long) lineno);
            json_decref(task);
            bad++;
            continue;
        }

        /* an id is the task's key: an integer is its digits (as batch
         * reads it), one without gets one; another kind is refused below */
        if (json_is_integer(json_object_get(task, "id"))) {
            snprintf(idbuf, sizeof(idbuf), "%lld", (long long)
                     json_integer_value(json_object_get(task, "id")));
            json_object_set_new(task, "id", json_string(idbuf));

        } else if (json_object_get(task, "id") == NULL
                   || json_is_null(json_object_get(task, "id")))
        {
            rg_sha256_hex(digest, line, strlen(line), NULL, 0);
            snprintf(idbuf, sizeof(idbuf), "sub-%.16s-%lu", digest,
                     (unsigned long) rg_wall_msec());
            json_object_set_new(task, "id", json_string(idbuf));
        }

        if (o->agent && json_object_get(task, "agent") == NULL) {
            json_object_set_new(task, "agent", json_string(o->agent));
        }

        id = json_string_value(json_object_get(task, "id"));
        text = json_dumps(task, JSON_COMPACT);

        /* a queued task is named in the API's paths */
        if (text && id && !rg_task_id_valid(id, strlen(id))) {
            fprintf(stderr, "reagent: line %lu: " RG_TASK_ID_RULE ": not "
                    "submitted\n", (unsigned long) lineno);
            free(text);
            json_decref(task);
            bad++;
            continue;
        }

        {
            rg_task_t  t;

            /* what a worker would refuse is refused here */
            if (text && rg_task_parse(&t, text, strlen(text), lineno)
                        == RG_DECLINED)
            {
                fprintf(stderr, "reagent: %s: not submitted\n", t.error);
                rg_task_free(&t);
                free(text);
                json_decref(task);
                bad++;
                continue;
            }
            if (text) {
                rg_task_free(&t);
            }
        }

        if (text == NULL) {
            json_decref(task);
            rc = 1;
            break;
        }

        rg_stream_session_id(id, sid, sizeof(sid));
        snprintf(key, sizeof(key), "%s{%s}:task", c.prefix, sid);
        snprintf(meta, sizeof(meta), "%s{%s}:meta", c.prefix, sid);
        snprintf(result, sizeof(result), "%s{%s}:result", c.prefix, sid);

        /* the mark names this submit: one that was set but whose answer
         * was lost is recognised as ours when it is asked again; "s …"
         * while the entry is added, the rest once it is in (rg_stream.h) */
        snprintf(mark, sizeof(mark), "s %s %lu", token,
                 (unsigned long) lineno);

        argv[0] = "EVAL";
        argv[1] = rg_stream_mark_lua.source;
        argv[2] = "3";
        argv[3] = key;
        argv[4] = meta;
        argv[5] = result;
        argv[6] = mark;
        argv[7] = sttl;
        argv[8] = sstale;
        argc = 9;

        if (!cluster) {
            /* one Redis: the mark and the entry at once; an answer lost
             * and asked again finds this submit's own mark */
            rg_stream_shard_key(&c, rg_stream_shard_of(
                                    (rg_uint_t) c.qcf->shards, id),
                                "", shard, sizeof(shard));
            argv[1] = rg_stream_submit_lua.source;
            argv[2] = "4";
            argv[6] = shard;
            argv[7] = mark;
            argv[8] = sttl;
            argv[9] = sstale;
            argv[10] = ttl;
            argv[11] = text;
            argc = 12;
        }

        r = rg_stream_cli_retry(c.engine, c.redis, key, err, sizeof(err),
                                argc, argv, NULL);

        /* 1: the mark is this submit's, queue it (in one script: queued
         * before by this submit; its entry's id, queued now); 0:
         * submitted before; 2: another submit is queueing it now */
        seen = 0;
        if (r && r->type == REDIS_REPLY_STRING) {
            snprintf(entry, sizeof(entry), "%.*s", (int) rg_min(r->len, 60),
                     r->str);
            seen = 3;
        } else if (r && r->type == REDIS_REPLY_INTEGER) {
            seen = r->integer;
            if (seen == 1 && !cluster) {
                entry[0] = '\0';
                seen = 3;
            }
        }

        if (r == NULL) {
            fprintf(stderr, "reagent: submitting %s: %s\n", id, err);
            free(text);
            json_decref(task);
            rc = 1;
            break;
        }

        freeReplyObject(r);
        if (seen != 3) {
            entry[0] = '\0';
        }

        if (seen == 3) {
            if (!o->wait) {
                printf("%s\n", id);
            }
            queued++;

        } else if (seen == 2) {
            fprintf(stderr, "reagent: task %s is being submitted by another "
                    "submit now: not queued again\n", id);
            dup++;

        } else if (seen != 1) {
            /* its first submit stands */
            fprintf(stderr, "reagent: task %s was submitted before: not "
                    "queued again\n", id);
            dup++;

        } else if (rg_stream_cli_enqueue(&c, id, text, mark, ttl, entry,
                                         sizeof(entry), err, sizeof(err))
                   != RG_OK)
        {
            /* not queued: the next submit of it may try again */
            fprintf(stderr, "reagent: queueing %s failed: %s\n", id, err);
            free(text);
            json_decref(task);
            rc = 1;
            break;

        } else {
            if (!o->wait) {
                printf("%s\n", id);
            }
            queued++;
        }

        if (o->wait && json_object_get(want, id) == NULL) {
            /* what it takes to queue it again (rg_stream_watch_look) */
            if (rg_stream_watch_add(&watch, id, text, entry, lineno)
                != RG_OK)
            {
                fprintf(stderr, "reagent: out of memory\n");
                free(text);
                json_decref(task);
                rc = 1;
                break;
            }

            text = NULL;
            json_object_set_new(want, id, json_true());
            total++;
        }

        free(text);
        json_decref(task);
    }

    free(buf);

    fprintf(stderr, "reagent: %lu task%s queued, %lu submitted before, %lu "
            "refused\n", (unsigned long) queued, queued == 1 ? "" : "s",
            (unsigned long) dup, (unsigned long) bad);

    if (rc == 0 && o->wait && total) {
        const char      *k;
        json_t          *v;
        void            *tmp;
        rg_uint_t        came;
        struct timeval   tv;

        if (shown) {
            rg_stream_cli_progress(shown, got, total, 0, 0);
            rg_progress_draw(shown, 0, STDERR_FILENO);

            tick = event_new(c.engine->base, -1, EV_PERSIST,
                             rg_stream_cli_tick, shown);
            tv.tv_sec = 0;
            tv.tv_usec = 200000;
            if (tick && event_add(tick, &tv) != 0) {
                event_free(tick);
                tick = NULL;          /* drawn as results come only */
            }
        }

        /* those that ended before we looked: their results are kept */
        json_object_foreach_safe(want, tmp, k, v) {
            rg_stream_session_id(k, sid, sizeof(sid));
            snprintf(key, sizeof(key), "%s{%s}:result", c.prefix, sid);
            argv[0] = "GET";
            argv[1] = key;
            r = rg_stream_cli_call(c.engine, c.redis, key, err, sizeof(err),
                                   2, argv, NULL);
            came = r && r->type == REDIS_REPLY_STRING;
            if (came) {
                rg_stream_cli_out_clear(shown, stdout);
                printf("%.*s\n", (int) r->len, r->str);
                rg_stream_cli_count(r->str, r->len);
                json_object_set_new(want, k, json_false());
                got++;
            }
            if (r) {
                freeReplyObject(r);
            }

            if (shown) {
                fflush(stdout);
                rg_stream_cli_progress(shown, got, total, came, 0);
            }
        }

        before = got;

        fflush(stdout);
        watch.next = rg_monotonic_msec() + RG_STREAM_CLI_LOOK;
        rc = rg_stream_follow(&c, stdout, want, &got, total, last,
                              sizeof(last), shown, &watch);

        if (tick) {
            event_free(tick);
        }

        rg_stream_cli_progress(shown, got, total, 0, 1);

        /* batch's line, then how the results came */
        secs = (double) (rg_monotonic_msec() - started) / 1000;
        fprintf(stderr, "reagent: %lu task%s in %.1f s: ",
                (unsigned long) total, total == 1 ? "" : "s", secs);
        rg_stream_cli_summary(stderr);
        fprintf(stderr, " (%lu of %lu result%s, %.1f/s", (unsigned long) got,
                (unsigned long) total, total == 1 ? "" : "s",
                secs > 0 ? got / secs : 0);
        if (before) {
            fprintf(stderr, "; %lu had ended before the wait",
                    (unsigned long) before);
        }
        if (watch.again) {
            fprintf(stderr, "; %lu queued again, lost by Redis",
                    (unsigned long) watch.again);
        }
        fputs(")", stderr);
        rg_stream_cli_totals(stderr);
        fputs("\n", stderr);
    }

    json_decref(want);
    rg_stream_watch_free(&watch);
    rg_stream_client_close(&c);

    return rc ? rc : (bad ? 2 : 0);
}
