#!/bin/sh
# test_http_approval.sh: human in the loop through the HTTP API. A task
# submitted through the API parks on a dangerous call (two workers, store
# redis, the queue): GET shows it awaiting_approval with the calls it
# waits for, and its events stream says approval_needed; the worker that
# parked it is killed with -9, and POST
# …/approve resumes it on another worker, where the tool runs once; a
# deny tells the model why; one call approved and the other denied by
# their ids; a second decision, an unknown call and a task not parked are
# refused with JSON errors; a task that says "approval": "deny" does not
# park. /metrics while a task is parked and after the tasks end: no
# session gauge below zero or left up, the parked task counted in
# reagent_tasks_parked. With approval_timeout 2s, GET shows the task
# approval_timed_out and its events stream ends with final.
#
# Run from the repository root by tests/run.sh; B names the build folder.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq curl

rg_redis c                          # the counting tool's
csock=$redis_sock
rg_redis r                          # the store and the queue

cat > "$tmp/one.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"l1","name":"launch","arguments":{"key":"one"}}]}},
 {"message":{"content":"launched"}}]
JSON
cat > "$tmp/two.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"c1","name":"launch","arguments":{"key":"twoa"}},
   {"id":"c2","name":"launch","arguments":{"key":"twob"}}]}},
 {"message":{"content":"two answered"}}]
JSON

rg_mock one --script "$tmp/one.json" --request-log "$tmp/one.log"
oport=$port
rg_mock two --script "$tmp/two.json" --request-log "$tmp/two.log"
tport=$port
hport=$(rg_free_port)

P=$(cd "$B" && pwd)/tests/plugins

cat > "$tmp/s.conf" <<CONF
load_module $P/count.so;
module count { redis $csock; }
worker_processes 2;
concurrency 50;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm one { base_url http://127.0.0.1:$oport/v1; model mock-1; }
llm two { base_url http://127.0.0.1:$tport/v1; model mock-1; }
agent a { llm one; tools launch; tool_timeout 30s; }
agent b { llm two; tools launch; tool_timeout 30s; }
agent c { llm one; tools launch; tool_timeout 30s; approval_timeout 2s; }
store redis { server unix:$redis_sock; }
lease_ttl 1s;
queue { claim_idle 2s; block 500ms; }
http { listen 127.0.0.1:$hport; }
CONF

rg_serve "$tmp/s.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "http: worker .* answers" 2

U=http://127.0.0.1:$hport

# metrics: /metrics into $tmp/metrics; gauge NAME: a sample's value there
metrics() {
    curl -s "$U/metrics" -o "$tmp/metrics"
}
gauge() {
    awk -v k="$1" '$1 == k { print $2 }' "$tmp/metrics"
}
# sessions: the four gauges of reagent_sessions, as "queued model_wait
# tools_running awaiting_approval"
sessions() {
    echo $(for st in queued model_wait tools_running awaiting_approval; do
        gauge "reagent_sessions{state=\"$st\"}"
    done)
}
# wait_gauges PARKED: up to 15 s (the queue is read every 5 s) until
# /metrics counts PARKED tasks parked and no session in a worker
wait_gauges() {
    wg_i=0
    while [ $wg_i -lt 75 ]; do
        metrics
        [ "$(gauge reagent_tasks_parked)" = "$1" ] \
            && [ "$(sessions)" = "0 0 0 0" ] && return 0
        sleep 0.2
        wg_i=$((wg_i + 1))
    done
    return 1
}
NEG='^reagent_[a-z_]+(\{[^}]*\})? -'

rg_equal "a task through the API: 202" \
    "$(rg_req POST /v1/tasks -d '{"id":"p1","agent":"a","input":"launch it"}')" 202
# wait_parked ID: GET says awaiting_approval, with the record of its
# calls (checkpointed a moment after the status); the answer in $tmp/body
wait_parked() {
    rg_wait_task "$1" awaiting_approval || return 1
    wp_i=0
    while ! jq -e '.approval.calls' "$tmp/body" > /dev/null 2>&1; do
        [ $wp_i -lt 50 ] || return 1
        sleep 0.1
        rg_req GET "/v1/tasks/$1" > /dev/null
        wp_i=$((wp_i + 1))
    done
}

rg_check "it parks on its dangerous call" wait_parked p1
rg_check "  GET shows the call it waits for" \
    jq -e '.approval.calls == [{"id":"l1","name":"launch",
           "arguments":"{\"key\":\"one\"}","decision":null}]' "$tmp/body"
rg_equal "  the tool did not run" "$(redis-cli -s "$csock" get count:one)" ""

# its events: the stream stays open while it waits (cut by -m), the last
# event so far approval_needed with the call
curl -sN -m 3 "$U/v1/tasks/p1/events" -o "$tmp/p1.sse"
rg_equal "  its events stream says approval_needed, last" \
    "$(sed -n 's/^event: //p' "$tmp/p1.sse" | tail -n 1)" approval_needed
sed -n 's/^data: //p' "$tmp/p1.sse" | tail -n 1 > "$tmp/p1.need"
rg_check "  naming the call it waits for, with a deadline" \
    jq -e '.type == "approval_needed" and .calls[0].id == "l1" and
           .calls[0].name == "launch" and .deadline > 0' "$tmp/p1.need"

# while it waits: counted parked, and in no worker's gauge
rg_check "/metrics while it is parked: reagent_tasks_parked 1" wait_gauges 1
rg_equal "  no session left in model_wait or any other state" \
    "$(sessions)" "0 0 0 0"
rg_lacks "  no gauge below zero" "$tmp/metrics" "$NEG"

# the worker that parked it goes; another resumes it
holder=$(redis-cli -s "$redis_sock" hget 'rg:{'"$(printf 'task\000p1' | sha256sum | cut -c1-32 | sed 's/^/t-/')"'}:meta' worker | sed 's/.*://')
rg_check "  its worker is known ($holder)" kill -0 "$holder"
kill -9 "$holder"
sleep 0.3

rg_equal "approve through the API: 200" \
    "$(rg_req POST /v1/tasks/p1/approve; jq -r .decision "$tmp/body")" \
    "200approved"
rg_check "  the parked session is resumed on another worker and ends done" \
    rg_wait_task p1 done
rg_check "  with the model's answer" jq -e '.answer == "launched"' "$tmp/body"
curl -sN -m 10 "$U/v1/tasks/p1/events" -o "$tmp/p1.sse"
rg_equal "  its events: approval_needed, then the resumed session to final" \
    "$(sed -n 's/^event: //p' "$tmp/p1.sse" | tr '\n' ' ')" \
    "model_call_started model_call_ended approval_needed tool_call_started tool_call_ended model_call_started model_call_ended final "
rg_equal "  the tool ran once" "$(redis-cli -s "$csock" get count:one)" 1
rg_check "/metrics once it ended: nothing parked, no session counted" \
    wait_gauges 0
rg_lacks "  no gauge below zero" "$tmp/metrics" "$NEG"
now=$(grep -o "worker [0-9]*: reading" "$tmp/error.log" | tail -n 1 | tr -dc 0-9)
rg_check "  not on the worker that was killed" test "$now" != "$holder"

rg_equal "a second decision: 409" "$(rg_req POST /v1/tasks/p1/deny)" 409
rg_check "  a JSON error naming why" \
    jq -e '.error.code == "not_awaiting_approval" or
           .error.code == "already_decided"' "$tmp/body"

# two calls: one approved, one denied with a reason
rg_req POST /v1/tasks -d '{"id":"p2","agent":"b","input":"two"}' > /dev/null
rg_check "two calls park" wait_parked p2
rg_equal "an unknown call: 404" \
    "$(rg_req POST /v1/tasks/p2/approve -d '{"tool_call_id":"nope"}')" 404
rg_check "  no_such_call" jq -e '.error.code == "no_such_call"' "$tmp/body"
rg_equal "approve c1: 200, one still waits" \
    "$(rg_req POST /v1/tasks/p2/approve -d '{"tool_call_id":"c1"}'; jq -r '.message | test("still wait")' "$tmp/body")" \
    "200true"
rg_equal "c1 again: 409" \
    "$(rg_req POST /v1/tasks/p2/deny -d '{"tool_call_id":"c1"}'; jq -r .error.code "$tmp/body")" \
    "409already_decided"
rg_equal "deny c2 with a reason: 200" \
    "$(rg_req POST /v1/tasks/p2/deny -d '{"tool_call_id":"c2","reason":"not on fridays"}')" \
    200
rg_check "  it ends done" rg_wait_task p2 done
rg_equal "  c1 ran, c2 did not" \
    "$(redis-cli -s "$csock" get count:twoa)/$(redis-cli -s "$csock" get count:twob)" "1/"
rg_expect "  the model was told the operator's reason" "$tmp/two.log" \
    "denied by the operator: not on fridays"

rg_equal "a bad body: 400" \
    "$(rg_req POST /v1/tasks/p2/approve -d '{"tool_call_id":5}')" 400
rg_equal "a task never parked: 409" \
    "$(rg_req POST /v1/tasks/ghost/approve; jq -r .error.code "$tmp/body")" \
    "409not_awaiting_approval"
rg_equal "GET on approve: 405" "$(rg_req GET /v1/tasks/p2/approve)" 405

# a parked task cancelled ends at once, its call never run
rg_req POST /v1/tasks -d '{"id":"p4","agent":"a","input":"cancel me"}' > /dev/null
rg_check "another parks" wait_parked p4
rg_equal "DELETE a parked task: 202" "$(rg_req DELETE /v1/tasks/p4)" 202
rg_check "  it ends cancelled" rg_wait_task p4 cancelled
rg_check "  saying why" jq -e '.reason | test("API")' "$tmp/body"
rg_equal "  its call never ran" "$(redis-cli -s "$csock" get count:one)" 1
rg_equal "  and it cannot be approved any more: 409" \
    "$(rg_req POST /v1/tasks/p4/approve)" 409

rg_req POST /v1/tasks -d '{"id":"p3","agent":"a","input":"x","approval":"deny"}' \
    > /dev/null
rg_check "a task that says deny does not park: it ends" rg_wait_task p3 done
rg_equal "  and its call was refused, not run" \
    "$(redis-cli -s "$csock" get count:one)" 1

# approval_timeout 2s: nobody decides, the task ends approval_timed_out
rg_req POST /v1/tasks -d '{"id":"p5","agent":"c","input":"wait"}' > /dev/null
rg_check "approval_timeout 2s: a task parks" wait_parked p5
rg_check "  GET shows it approval_timed_out once the wait passed" \
    rg_wait_task p5 approval_timed_out
rg_check "  saying why" jq -e '.reason | test("approval_timeout")' "$tmp/body"
rg_equal "  its call never ran" "$(redis-cli -s "$csock" get count:one)" 1
curl -sN -m 10 "$U/v1/tasks/p5/events" -o "$tmp/p5.sse"
rg_equal "  its events stream ends by itself (not cut by -m)" "$?" 0
rg_equal "  with final, after approval_needed" \
    "$(sed -n 's/^event: //p' "$tmp/p5.sse" | tail -n 2 | tr '\n' ' ')" \
    "approval_needed final "
sed -n 's/^data: //p' "$tmp/p5.sse" | tail -n 1 > "$tmp/p5.final"
rg_check "  final says approval_timed_out" \
    jq -e '.status == "approval_timed_out"' "$tmp/p5.final"

rg_check "/metrics at the end: nothing parked, no session counted" \
    wait_gauges 0
rg_lacks "  no gauge below zero" "$tmp/metrics" "$NEG"

rg_done
