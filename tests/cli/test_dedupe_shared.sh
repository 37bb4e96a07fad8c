#!/bin/sh
# test_dedupe_shared.sh: identical read-only calls run once
# (src/agent/rg_dedupe.c), with the real binary and a counting read-only
# tool (tests/plugins/count.so's peek, which INCRs count:<key> in a Redis
# of its own at each execution and then sleeps):
#   - ten sessions of one worker calling it at once: it runs once, the
#     other nine wait for that result (the memory store, no Redis);
#   - three identical calls in one answer: it runs once, each call is
#     answered with the result;
#   - two processes on one store redis: the second waits for the first
#     one's pending call (dedupe_wait) and takes its result; a third,
#     later, is answered from the store; the same with dedupe agent,
#     whose results another agent does not share; a key of each scope
#     has its TTL; the result is kept as a msgpack record, and a raw text
#     an older reagent kept there is still read as the result;
#   - a process killed while its call runs: the other one waits at most
#     dedupe_wait, then runs the call itself.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq

rg_redis r
csock=$redis_sock                  # the counters
count() {
    redis-cli -s "$csock" get "count:$1"
}

cat > "$tmp/script.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"p1","name":"peek","arguments":{"key":"k1","ms":800}}]}},
 {"message":{"content":"peeked"}}]
JSON

cat > "$tmp/twins.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"a","name":"peek","arguments":{"key":"k2","ms":300}},
   {"id":"b","name":"peek","arguments":{"ms":300,"key":"k2"}},
   {"id":"c","name":"peek","arguments":{"key":"k2","ms":300}}]}},
 {"message":{"content":"peeked"}}]
JSON

cat > "$tmp/fail.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"f1","name":"peek","arguments":{"key":"kf","ms":500,"fail":1}}]}},
 {"message":{"content":"failed"}}]
JSON

cat > "$tmp/slow.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"h1","name":"peek","arguments":{"key":"kh","ms":1500}}]}},
 {"message":{"content":"peeked"}}]
JSON

rg_mock f --script "$tmp/fail.json" --request-log "$tmp/fail.log"
fport=$port
rg_mock h --script "$tmp/slow.json" --request-log "$tmp/slow.log"
hport=$port
rg_mock m --script "$tmp/script.json" --request-log "$tmp/m.log"
mport=$port
rg_mock t --script "$tmp/twins.json" --request-log "$tmp/twins.log"
tport=$port

plugin=$(cd "$B" && pwd)/tests/plugins/count.so

conf() {
    cat <<CONF
load_module $plugin;
module count { redis $csock; }
llm m { base_url http://127.0.0.1:$1/v1; model mock-1; }
agent a { llm m; tools peek; tool_timeout 30s; dedupe $2; dedupe_wait 3s; }
$3
CONF
}

# ten sessions, one worker, the memory store
conf $mport agent "" > "$tmp/mem.conf"
rg_task_lines 10 t peek > "$tmp/tasks.jsonl"

"$R" -c "$tmp/mem.conf" batch --no-progress -o "$tmp/res.jsonl" \
    "$tmp/tasks.jsonl" > "$tmp/batch.out" 2> "$tmp/batch.err"
rg_equal "the batch ends" "$?" 0
rg_equal "ten tasks end done" \
    "$(jq -r 'select(.status == "done") | .id' "$tmp/res.jsonl" | wc -l)" 10
rg_equal "ten identical calls at once ran once" "$(count k1)" 1
rg_expect "nine were answered from the first" "$tmp/batch.err" \
    "dedupe hits 9[^0-9]"

# a failed call is shared by those that waited, not cached
conf $fport agent "" > "$tmp/fail.conf"
head -n 5 "$tmp/tasks.jsonl" > "$tmp/five.jsonl"
"$R" -c "$tmp/fail.conf" batch --no-progress -o "$tmp/fres.jsonl" \
    "$tmp/five.jsonl" > /dev/null 2>&1
rg_equal "five identical failing calls at once ran once" "$(count kf)" 1
rg_equal "and each session was told the error" \
    "$(jq -r '.body.messages[] | select(.role == "tool") | .content' \
        "$tmp/fail.log" | grep -c "peek failed as asked")" 5

# the first session ends (its deadline) while its call runs: the one
# that waited for it runs the call instead, and is answered
cat > "$tmp/two.jsonl" <<'JSON'
{"id":"short","input":"peek","deadline":"500ms"}
{"id":"long","input":"peek"}
JSON
conf $hport agent "" > "$tmp/slow.conf"
"$R" -c "$tmp/slow.conf" batch --no-progress -o "$tmp/hres.jsonl" \
    "$tmp/two.jsonl" > /dev/null 2> "$tmp/hres.err"
rg_equal "the session past its deadline ends so" \
    "$(jq -r 'select(.id == "short") | .status' "$tmp/hres.jsonl")" deadline_exceeded
rg_equal "the other one ends done" \
    "$(jq -r 'select(.id == "long") | .status' "$tmp/hres.jsonl")" done
rg_equal "with the call's result" \
    "$(jq -r '.body.messages[] | select(.role == "tool") | .content' \
        "$tmp/slow.log")" "peeked kh"

echo "# kh ran $(count kh) times"
# three identical calls in one answer (dedupe session: in flight only)
conf $tport session "" > "$tmp/twins.conf"
"$R" -c "$tmp/twins.conf" run -a a "twins" > "$tmp/twins.out" \
    2> "$tmp/twins.err"
rg_equal "the session with twins ends done" "$?" 0
rg_equal "three identical calls in one answer ran once" \
    "$(count k2)" 1
rg_equal "each of them is answered with its result" \
    "$(tail -n 1 "$tmp/twins.log" | jq -r '[.body.messages[] | select(.role == "tool") | "\(.tool_call_id)=\(.content)"] |
        join(" ")')" "a=peeked k2 b=peeked k2 c=peeked k2"

# two processes on one store
rg_redis s
store="store redis { server unix:$redis_sock; }"
conf $mport global "$store" > "$tmp/shared.conf"

"$R" -c "$tmp/shared.conf" run -a a "first" > "$tmp/p1.out" \
    2> "$tmp/p1.err" &
p1=$!
pids="$pids $p1"

rg_until 10 '[ "$(count k1)" = 2 ]'
rg_equal "the first process runs the call" "$(count k1)" 2

"$R" -c "$tmp/shared.conf" run -a a "second" > "$tmp/p2.out" \
    2> "$tmp/p2.err"
rg_equal "the second process ends done" "$?" 0
wait $p1
rg_equal "the first process ends done" "$?" 0
rg_equal "the second one took the first one's result: it ran once" \
    "$(count k1)" 2

"$R" -c "$tmp/shared.conf" run -a a "third" > "$tmp/p3.out" \
    2> "$tmp/p3.err"
rg_equal "a third process, later, ends done" "$?" 0
rg_equal "and is answered from the store" "$(count k1)" 2

key=$(rg_rcli --scan --pattern 'rg:dd:g:*' | grep -v ':p$' | head -n 1)
rg_check "the result is stored under its digest" test -n "$key"
ttl=$(rg_rcli pttl "$key")
rg_check "with the dedupe TTL (10m): $ttl ms" \
    test "$ttl" -gt 500000 -a "$ttl" -le 600000
rg_equal "as a msgpack record: a map of 3 (k, r, t)" \
    "$(rg_rcli get "$key" | od -An -tx1 -N1 | tr -d ' ')" 83
rg_check "holding the result" \
    sh -c "redis-cli -s '$redis_sock' get '$key' | grep -q 'peeked k1'"

# a result an older reagent kept as raw text is read as the result
rg_rcli set "$key" "peeked by an older one" px 600000 > /dev/null
"$R" -c "$tmp/shared.conf" run -a a "fourth" > /dev/null 2> "$tmp/p4.err"
rg_equal "raw text: a fourth process ends done" "$?" 0
rg_equal "answered from the store, not run" "$(count k1)" 2
rg_equal "with that text as the result" \
    "$(tail -n 1 "$tmp/m.log" | jq -r '.body.messages[] |
        select(.role == "tool") | .content')" "peeked by an older one"

rg_ttl_sweep "every key reagent wrote (dedupe results, pending claims)"

# the owner dies: the other one waits at most dedupe_wait, then runs
rg_rcli flushall > /dev/null
"$R" -c "$tmp/shared.conf" run -a a "doomed" > "$tmp/d.out" \
    2> "$tmp/d.err" &
d=$!
pids="$pids $d"

rg_until 10 '[ "$(count k1)" = 3 ]'
kill -9 $d
wait $d 2>/dev/null

rg_check "its pending claim is in the store" \
    test -n "$(rg_rcli --scan --pattern 'rg:dd:g:*:p')"

"$R" -c "$tmp/shared.conf" run -a a "survivor" > "$tmp/v.out" \
    2> "$tmp/v.err"
rg_equal "the other process ends done" "$?" 0
rg_equal "after dedupe_wait it ran the call itself" \
    "$(count k1)" 4
rg_expect "and says why" "$tmp/v.err" "no result (after|within) dedupe_wait"

# dedupe agent across processes: shared by the agent's sessions in every
# process, not with another agent; its key has the agent's dedupe_ttl
cat > "$tmp/ascope.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"s1","name":"peek","arguments":{"key":"ka","ms":300}}]}},
 {"message":{"content":"peeked"}}]
JSON
rg_mock as --script "$tmp/ascope.json"
cat > "$tmp/agent.conf" <<CONF
load_module $plugin;
module count { redis $csock; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { llm m; tools peek; dedupe agent; dedupe_ttl 5m; }
agent b { llm m; tools peek; dedupe agent; dedupe_ttl 5m; }
$store
CONF
"$R" -c "$tmp/agent.conf" run -a a "one" > /dev/null 2> "$tmp/a1.err"
rg_equal "agent scope: a first process ends done" "$?" 0
"$R" -c "$tmp/agent.conf" run -a a "two" > /dev/null 2> "$tmp/a2.err"
rg_equal "a second process of the same agent ends done" "$?" 0
rg_equal "and was answered from the store: the call ran once" \
    "$(count ka)" 1
"$R" -c "$tmp/agent.conf" run -a b "three" > /dev/null 2> "$tmp/a3.err"
rg_equal "another agent ends done" "$?" 0
rg_equal "and ran the call itself: the scope is the agent" "$(count ka)" 2

key=$(rg_rcli --scan --pattern 'rg:dd:a:a:*' | grep -v ':p$' | head -n 1)
rg_check "the agent's result is stored under its scope" test -n "$key"
ttl=$(rg_rcli pttl "$key")
rg_check "with the agent's dedupe_ttl (5m): $ttl ms" \
    test "$ttl" -gt 200000 -a "$ttl" -le 300000
rg_check "and the other agent's under its own" \
    test -n "$(rg_rcli --scan --pattern 'rg:dd:a:b:*' | grep -v ':p$')"

rg_ttl_sweep "every key reagent wrote since"

rg_done
