#!/bin/sh
# test_http_queue.sh: the HTTP API across workers with store redis and the
# queue: a task submitted to one worker runs on any and is read from any
# (its state while it runs, its result once done), a task id and an
# Idempotency-Key are the same for every worker, DELETE cancels a task
# wherever it runs, a chat completion runs in the worker that took it,
# /readyz says 503 while Redis is away and 200 once it is back.
#
# Run from the repository root by tests/run.sh; B names the build folder.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq curl

rg_mock m --rounds 1 --calls 1
mport=$port
rg_mock s --rounds 1 --calls 1 --latency 2000
sport=$port

rport=$(rg_free_port)
rg_redis_tcp "$rport" "$tmp/redis"

hport=$(rg_free_port)
M=$(cd "$B" && pwd)/modules

cat > "$tmp/q.conf" <<CONF
load_module $M/calc.so;
worker_processes 2;
concurrency 100;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1; }
llm s { base_url http://127.0.0.1:$sport/v1; model mock-1; }
agent a { llm m; tools calc; }
agent slow { llm s; tools calc; }
store redis { server 127.0.0.1:$rport; connect_timeout 300ms; }
lease_ttl 1s;
queue { claim_idle 2s; block 500ms; }
http { listen 127.0.0.1:$hport; }
CONF

rg_serve "$tmp/q.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "http: worker .* answers" 2
rg_wait_for "$tmp/error.log" "reading the queue" 2

U=http://127.0.0.1:$hport



rg_equal "/readyz: ready, on Redis" "$(rg_req GET /readyz)" 200
rg_expect "  the store is redis" "$tmp/body" '"store":"redis"'

rg_equal "a task onto the queue: 202 queued" \
    "$(rg_req POST /v1/tasks -d '{"id":"q1","input":"x"}'; jq -r .status "$tmp/body")" \
    "202queued"
rg_check "it runs on a worker and its result is read back" rg_wait_task q1 done
rg_check "  with the answer, rounds, tokens, the session" \
    jq -e '(.answer | test("Final answer")) and .rounds == 2 and
           .tokens > 0 and (.session | test("^t-"))' "$tmp/body"
rg_equal "  the result is the one on the results stream" \
    "$(redis-cli -p "$rport" xrange 'rg:{q:tasks}:results' - + | grep -c '"id":"q1"')" 1

# every worker answers the same: ask many times (connections spread)
ok=0
for i in 1 2 3 4 5 6 7 8; do
    curl -s -H 'Connection: close' "$U/v1/tasks/q1" | jq -e '.status == "done"' \
        > /dev/null && ok=$((ok + 1))
done
rg_equal "every worker reads the same result" "$ok" 8

rg_equal "the same id again: 409 on any worker" \
    "$(rg_req POST /v1/tasks -d '{"id":"q1","input":"x"}')" 409

# the mark and the entry go in one script: a submit whose answer is lost
# and asked again is told the truth (tests/chaos: partition-hold)
sid1=t-$(printf 'task\000q1' | sha256sum | cut -c1-32)
rg_check "a queued task's mark is whole, not the short one of two steps" \
    sh -c "redis-cli -p $rport get 'rg:{$sid1}:task' | grep -qv '^s '"
sidm=t-$(printf 'task\000mid' | sha256sum | cut -c1-32)
redis-cli -p "$rport" set "rg:{$sidm}:task" "s other 1" px 60000 > /dev/null
rg_equal "a task another submit is queueing now (a cluster's two steps): 409" \
    "$(rg_req POST /v1/tasks -d '{"id":"mid","input":"x"}'; jq -r .error.code "$tmp/body")" \
    "409task_submitting"
rg_expect "  ... saying when to submit it again" "$tmp/body" \
    'if it is not queued within 15 s, submit it again'
redis-cli -p "$rport" set "rg:{$sidm}:task" "s other 1" px 40000 > /dev/null
rg_equal "  ... and once that submit is stale, with nothing of it in Redis, 202" \
    "$(rg_req POST /v1/tasks -d '{"id":"mid","input":"x"}')" 202
rg_check "  ... and it runs" rg_wait_task mid done

rg_equal "a slow task: 202" \
    "$(rg_req POST /v1/tasks -d '{"id":"q2","agent":"slow","input":"x"}')" 202
i=0
while [ $i -lt 50 ]; do
    rg_req GET /v1/tasks/q2 > /dev/null
    jq -e '.status == "model_wait" or .status == "tools_running"' \
        "$tmp/body" > /dev/null && break
    sleep 0.1
    i=$((i + 1))
done
rg_check "while it runs, GET says where it is (from its session)" \
    jq -e '(.status == "model_wait" or .status == "tools_running") and
           .agent == "slow" and (.created | type) == "number"' "$tmp/body"
rg_check "  and then done" rg_wait_task q2 done

# cancel: the worker that runs it sees the mark within a second
rg_req POST /v1/tasks -d '{"id":"q3","agent":"slow","input":"x"}' > /dev/null
sleep 0.5
rg_equal "DELETE on the queue: 202 cancelling" \
    "$(rg_req DELETE /v1/tasks/q3; jq -r .status "$tmp/body")" "202cancelling"
rg_check "  it ends cancelled" rg_wait_task q3 cancelled
rg_check "  saying it was the API" jq -e '.error | test("API")' "$tmp/body" || cat "$tmp/body"

# between the session's last checkpoint and its result, GET reads the
# meta: it says why too (made here by taking the result away)
sid=t-$(printf 'task\000q3' | sha256sum | cut -c1-32)
redis-cli -p "$rport" del "rg:{$sid}:result" > /dev/null
rg_equal "  read from its meta alone, still cancelled" \
    "$(rg_req GET /v1/tasks/q3; jq -r '.status + " " + .session' "$tmp/body")" \
    "200cancelled $sid"
rg_check "  and saying why" jq -e '.error | test("API")' "$tmp/body" || cat "$tmp/body"

# Idempotency-Key in Redis: the first answer, whichever worker answers
k1=$(curl -s -H 'Connection: close' -H 'Idempotency-Key: same' "$U/v1/tasks" \
     -d '{"input":"idem"}' | jq -r .id)
k2=$(curl -s -H 'Connection: close' -H 'Idempotency-Key: same' "$U/v1/tasks" \
     -d '{"input":"idem"}' | jq -r .id)
rg_check "an Idempotency-Key's retry gets the first answer" \
    test -n "$k1" -a "$k1" = "$k2"
rg_equal "  and only one task was queued" \
    "$(redis-cli -p "$rport" --scan --pattern 'rg:{api:idem:*}' | wc -l)" 1

rg_equal "a chat completion on the queue server: 200" \
    "$(rg_req POST /v1/chat/completions -d '{"model":"a","messages":[{"role":"user","content":"hi"}]}')" 200
rg_check "  a chat.completion" \
    jq -e '.object == "chat.completion" and
           (.choices[0].message.content | test("Final"))' "$tmp/body"

# Redis away: not ready; back: ready
redis-cli -p "$rport" shutdown nosave > /dev/null 2>&1
sleep 0.5
rg_equal "/readyz while Redis is away: 503" "$(rg_req GET /readyz)" 503
rg_check "  saying why" jq -e '.error.code == "store_unavailable"' "$tmp/body"
rg_equal "a submit while Redis is away: 503, a JSON error" \
    "$(rg_req POST /v1/tasks -d '{"id":"q9","input":"x"}'; jq -r .error.code "$tmp/body")" \
    "503queue_unavailable"
rg_redis_tcp "$rport" "$tmp/redis"
# its connections come back with their backoff (up to a few seconds), each
# worker's on its own: ready is each worker's answer, so wait for ten in a
# row (a new connection each, taken by any worker)
i=0
ok=0
while [ $ok -lt 10 ] && [ $i -lt 300 ]; do
    if [ "$(rg_req GET /readyz)" = 200 ]; then
        ok=$((ok + 1))
    else
        ok=0
        sleep 0.1
    fi
    i=$((i + 1))
done
code=$(rg_req GET /readyz)
rg_equal "/readyz once Redis is back: 200" "$code" 200
[ "$code" = 200 ] || sed 's/^/#   /' "$tmp/body"
# a 503 is for retrying: the queue's connection may still be in its backoff
i=0
while [ "$(rg_req POST /v1/tasks -d '{"id":"q10","input":"x"}')" = 503 ] \
      && [ $i -lt 50 ]; do
    sleep 0.2
    i=$((i + 1))
done
rg_check "  and a submit goes through (retried while 503)" \
    jq -e '.id == "q10" and .status == "queued"' "$tmp/body"
rg_check "  and runs" rg_wait_task q10 done

kill -QUIT $master
rg_wait_gone $master 10
rg_check "QUIT stops the server" sh -c "! kill -0 $master 2>/dev/null"

rg_done
