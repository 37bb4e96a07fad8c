#!/bin/sh
# test_approval.sh: human in the loop through the queue (src/agent/
# rg_park.c, src/queue/rg_approval.c), with the real binary: `reagent
# serve` with two workers, a redis-server, the mock model asking for a
# dangerous side effect (tests/plugins/count.so's `launch`, which counts
# each execution per idempotency key). A task with "approval": "park":
#   - parks: its meta and `reagent status` say awaiting_approval, its
#     entry is acknowledged, it has no result, no worker holds it, and
#     `reagent pending` lists it;
#   - the worker that parked it is killed; `reagent approve` resumes it
#     on another: it ends done, the tool ran once;
#   - `reagent deny --reason`: the model is told, with the reason;
#   - two calls: one approved, one denied; a second decision of a call
#     is refused naming the first; an unknown call and a task that is not
#     parked are refused with the reason;
#   - approval_timeout 2s: the task ends approval_timed_out, announced
#     like any other, and a late decision is refused;
#   - two `reagent approve` at once: one queues it, once.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq sha256sum

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
   {"id":"c1","name":"launch","arguments":{"key":"two"}},
   {"id":"c2","name":"launch","arguments":{"key":"two"}}]}},
 {"message":{"content":"two answered"}}]
JSON

rg_mock one --script "$tmp/one.json" --request-log "$tmp/one.log"
oport=$port
rg_mock two --script "$tmp/two.json" --request-log "$tmp/two.log"
tport=$port

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
agent t { llm one; tools launch; tool_timeout 30s; approval_timeout 2s; }
store redis { server unix:$redis_sock; }
lease_ttl 1s;
queue { claim_idle 2s; block 500ms; }
CONF

"$R" -c "$tmp/s.conf" -t > "$tmp/t.out" 2>&1
rg_equal "the configuration is good" "$?" 0

rg_serve "$tmp/s.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "reading the queue" 2

meta() {
    rg_rcli hget "rg:{$(rg_task_sid "$1")}:meta" "$2"
}

# until task $1's status is $2 (at most 20 s)
wait_status() {
    i=0
    while [ "$(meta "$1" status)" != "$2" ] && [ $i -lt 400 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    # parked: the record of its calls is written a moment after the status
    while [ "$2" = awaiting_approval ] && [ $i -lt 400 ] \
          && [ "$(rg_rcli exists "rg:{$(rg_task_sid "$1")}:approval")" != 1 ]; do
        sleep 0.05
        i=$((i + 1))
    done
}

# until task $1 has a result (at most 20 s)
wait_result() {
    i=0
    while [ -z "$(rg_rcli get "rg:{$(rg_task_sid "$1")}:result")" ] \
          && [ $i -lt 400 ]; do
        sleep 0.05
        i=$((i + 1))
    done
}

result() {
    rg_rcli get "rg:{$(rg_task_sid "$1")}:result" | jq -r "$2"
}

submit() {
    echo "$1" > "$tmp/task.jsonl"
    "$R" -c "$tmp/s.conf" submit "$tmp/task.jsonl" > /dev/null 2>&1
}

# parks ------------------------------------------------------------------

submit '{"id":"p1","agent":"a","input":"launch it","approval":"park"}'
wait_status p1 awaiting_approval
rg_equal "a dangerous call parks the task" "$(meta p1 status)" \
    awaiting_approval

"$R" -c "$tmp/s.conf" status "$(rg_task_sid p1)" > "$tmp/status.out" 2>&1
rg_expect "reagent status says so" "$tmp/status.out" \
    '^status: awaiting_approval$'

i=0
while [ "$(rg_rcli xpending 'rg:{q:tasks:0}' workers | head -n 1)" != 0 ] \
      && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done
rg_equal "its entry is acknowledged" \
    "$(rg_rcli xpending 'rg:{q:tasks:0}' workers | head -n 1)" 0
rg_equal "it has no result" \
    "$(rg_rcli exists "rg:{$(rg_task_sid p1)}:result")" 0
rg_equal "nor a lease" "$(rg_rcli exists "rg:{$(rg_task_sid p1)}:lease")" 0
rg_equal "the tool did not run" "$(rg_rcli -s "$csock" get count:one)" ""

# the workers report every second
i=0
while [ $i -lt 100 ]; do
    "$R" -c "$tmp/s.conf" workers > "$tmp/workers.json" 2>&1
    [ "$(jq '[.workers[].report.parked] | add' "$tmp/workers.json")" = 1 ] \
        && break
    sleep 0.1
    i=$((i + 1))
done
rg_equal "the worker that parked it counts it" \
    "$(jq '[.workers[].report.parked] | add' "$tmp/workers.json")" 1
rg_equal "and no worker holds a session for it" \
    "$(jq '[.workers[].report.sessions] | add' "$tmp/workers.json")" 0

"$R" -c "$tmp/s.conf" pending > "$tmp/pending.out" 2>&1
rg_equal "reagent pending lists it" "$(jq -r '.[].task' "$tmp/pending.out")" \
    p1
"$R" -c "$tmp/s.conf" pending p1 > "$tmp/pending1.out" 2>&1
rg_equal "with its call waiting" \
    "$(jq -c '[.status, (.calls[] | .id, .name, .arguments, .decision)]' \
       "$tmp/pending1.out")" \
    '["pending","l1","launch","{\"key\":\"one\"}",null]'

# the worker that parked it goes; another one resumes it
parker=$(meta p1 worker | sed 's/.*://')
kill -9 "$parker"
"$R" -c "$tmp/s.conf" approve p1 > "$tmp/approve.out" 2> "$tmp/approve.err"
rg_equal "reagent approve" "$?" 0
rg_expect "queues the task again" "$tmp/approve.out" '^queued again$'
wait_result p1
rg_equal "the task ends done" "$(result p1 .status)" done
rg_equal "with the model's answer" "$(result p1 .answer)" launched
rg_check "on another worker" \
    test "$(meta p1 worker | sed 's/.*://')" != "$parker"
rg_equal "the tool ran once" "$(rg_rcli -s "$csock" get count:one)" 1
rg_equal "under its call's key" \
    "$(rg_rcli -s "$csock" get "count:one:$(rg_task_sid p1):1:l1")" 1
rg_equal "it is no longer listed" \
    "$("$R" -c "$tmp/s.conf" pending 2>&1)" '[]'

"$R" -c "$tmp/s.conf" approve p1 l1 > /dev/null 2> "$tmp/again.err"
rg_equal "a decision on a call decided before is refused" "$?" 1
rg_expect "naming the first" "$tmp/again.err" \
    'already decided: call "l1" was approved'

"$R" -c "$tmp/s.conf" approve nosuch > /dev/null 2> "$tmp/nosuch.err"
rg_equal "a task that is not parked is refused" "$?" 1
rg_expect "with the reason" "$tmp/nosuch.err" \
    'not awaiting approval: task "nosuch" has no parked calls'

# deny ------------------------------------------------------------------

: > "$tmp/one.log"
submit '{"id":"p2","agent":"a","input":"launch it","approval":"park"}'
wait_status p2 awaiting_approval
"$R" -c "$tmp/s.conf" deny p2 --reason "not on a friday" \
    > "$tmp/deny.out" 2>&1
rg_equal "reagent deny" "$?" 0
wait_result p2
rg_equal "a denied task goes on to its answer" "$(result p2 .status)" done
rg_equal "the tool did not run" \
    "$(rg_rcli -s "$csock" get "count:one:$(rg_task_sid p2):1:l1")" ""
jq -r '.body.messages[] | select(.role == "tool") | .tool_call_id + ": " + .content' \
    "$tmp/one.log" > "$tmp/denied.msgs"
rg_expect "the model is told, with the reason" "$tmp/denied.msgs" \
    '^l1: error: launch was denied by the operator: not on a friday; do without it or ask the user$'

# two calls: one approved, one denied -------------------------------------

submit '{"id":"p3","agent":"b","input":"launch two","approval":"park"}'
wait_status p3 awaiting_approval
"$R" -c "$tmp/s.conf" approve p3 c1 > "$tmp/c1.out" 2>&1
rg_expect "one call decided" "$tmp/c1.out" '^recorded; 1 call still waits$'
sleep 0.3
rg_equal "the task still waits" "$(meta p3 status)" awaiting_approval

"$R" -c "$tmp/s.conf" approve p3 zz > /dev/null 2> "$tmp/zz.err"
rg_equal "an unknown call is refused" "$?" 1
rg_expect "naming the calls" "$tmp/zz.err" \
    'no such call "zz" in task "p3" \(its calls: c1, c2\)'

"$R" -c "$tmp/s.conf" deny p3 c1 > /dev/null 2> "$tmp/c1again.err"
rg_equal "a second decision of a call is refused" "$?" 1
rg_expect "naming the first" "$tmp/c1again.err" \
    'already decided: call "c1" was approved'

"$R" -c "$tmp/s.conf" deny p3 c2 > "$tmp/c2.out" 2>&1
rg_expect "the last call decided queues it" "$tmp/c2.out" '^queued again$'
wait_result p3
rg_equal "it ends done" "$(result p3 .status)" done
rg_equal "the approved call ran once" \
    "$(rg_rcli -s "$csock" get "count:two:$(rg_task_sid p3):1:c1")" 1
rg_equal "the denied one did not" \
    "$(rg_rcli -s "$csock" get "count:two:$(rg_task_sid p3):1:c2")" ""
jq -r '.body.messages[] | select(.role == "tool") | .tool_call_id + ": " + .content' \
    "$tmp/two.log" > "$tmp/two.msgs"
rg_expect "the model gets the approved call's result" "$tmp/two.msgs" \
    '^c1: counted 1$'
rg_expect "and the denial" "$tmp/two.msgs" \
    '^c2: error: launch was denied by the operator; do without it'

# approval_timeout ---------------------------------------------------------

submit '{"id":"p4","agent":"t","input":"launch it","approval":"park"}'
wait_status p4 awaiting_approval
wait_result p4
rg_equal "no decision within approval_timeout ends it" \
    "$(result p4 .status)" approval_timed_out
rg_expect "with the reason" "$tmp/error.log" \
    'approval_timed_out .*no decision within approval_timeout 2s'
rg_equal "the reason is in the result" "$(result p4 .error)" \
    "no decision within approval_timeout 2s on the dangerous calls it waited for"
rg_check "announced on the results stream" \
    sh -c "redis-cli -s '$redis_sock' xrange 'rg:{q:tasks}:results' - + | grep -q '^p4$'"
"$R" -c "$tmp/s.conf" approve p4 > /dev/null 2> "$tmp/late.err"
rg_expect "a late decision is refused" "$tmp/late.err" \
    'not awaiting approval: its wait passed approval_timeout'

# two deciders at once ----------------------------------------------------

added=$(rg_added 'rg:{q:tasks:0}')
submit '{"id":"p5","agent":"a","input":"launch it","approval":"park"}'
wait_status p5 awaiting_approval
"$R" -c "$tmp/s.conf" approve p5 l1 > "$tmp/x1.out" 2> "$tmp/x1.err" &
x1=$!
"$R" -c "$tmp/s.conf" approve p5 l1 > "$tmp/x2.out" 2> "$tmp/x2.err" &
x2=$!
wait $x1 $x2
rg_equal "one of two deciders at once queues it" \
    "$(cat "$tmp/x1.out" "$tmp/x2.out")" "queued again"
cat "$tmp/x1.err" "$tmp/x2.err" > "$tmp/x.err"
rg_expect "the other is refused" "$tmp/x.err" \
    'already decided: call "l1" was approved'
wait_result p5
rg_equal "it ends done" "$(result p5 .status)" done
rg_equal "queued twice in all: submitted, and resumed" \
    "$(($(rg_added 'rg:{q:tasks:0}') - added))" 2
rg_equal "the tool ran once" \
    "$(rg_rcli -s "$csock" get "count:one:$(rg_task_sid p5):1:l1")" 1

# without "approval": "park", a dangerous call is refused as before
: > "$tmp/one.log"
submit '{"id":"p6","agent":"a","input":"launch it"}'
wait_result p6
rg_equal "a task that does not park is answered" "$(result p6 .status)" done
rg_expect "its dangerous call refused" "$tmp/one.log" \
    'launch is a dangerous tool and was not approved'

"$R" -c "$tmp/s.conf" -s stop
wait $master 2>/dev/null

rg_done
