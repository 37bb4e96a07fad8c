#!/bin/sh
# test_durable.sh: sessions kept by `store redis` (src/agent/rg_durable.c)
# with the real binary, a real redis-server and the mock model: the store
# holds a finished session with every key under a TTL, its lease let go,
# and `reagent status`
# reads it from another process; a run killed with SIGKILL in the middle
# of round 2 is finished by `reagent resume`, and its model requests are
# byte for byte those of an uninterrupted run (the model call in flight
# at the kill is the only one sent again); a resumed session that had
# ended says so; a turn of 300 calls is checkpointed whole and ends done;
# status prints the reason of a session that did not end done;
# an unknown id, and a store that cannot be reached at start (run and
# -t), are clear errors naming what is wrong.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq

rg_redis r

# two calc calls, then an answer; fixed ids so that two runs send the same
cat > "$tmp/script.json" <<'JSON'
[{"message":{"tool_calls":[{"id":"c1","name":"calc","arguments":{"expression":"2+2"}}]}},
 {"message":{"tool_calls":[{"id":"c2","name":"calc","arguments":{"expression":"3*3"}}]}},
 {"message":{"content":"four and nine"}}]
JSON

rg_mock m --script "$tmp/script.json" --latency 300 \
    --request-log "$tmp/requests.log"

cat > "$tmp/d.conf" <<CONF
load_module $(cd "$B" && pwd)/modules/calc.so;
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { llm m; tools calc; system_prompt "You add."; }
store redis { server unix:$redis_sock; prefix "t:"; }
lease_ttl 1s;
CONF

# an uninterrupted run
"$R" -c "$tmp/d.conf" run -a a "do the sums" > "$tmp/u.out" 2> "$tmp/u.err"
rg_equal "an uninterrupted run ends done" "$?" 0
rg_expect "it prints its session id" "$tmp/u.err" '^session: s-[0-9a-f]{32} '
uid=$(sed -n 's/^session: \(s-[0-9a-f]*\) .*/\1/p' "$tmp/u.err")
cp "$tmp/requests.log" "$tmp/u.requests"

rg_equal "the store holds its status" \
    "$(rg_rcli hget "t:{$uid}:meta" status)" done
rg_equal "and its answer" \
    "$(rg_rcli hget "t:{$uid}:meta" answer)" "four and nine"
# system, task, (answer, result) twice, the answer, and the repeat
# guard's memory of the two calls
rg_equal "and its records, appended" "$(rg_rcli llen "t:{$uid}:msgs")" 9

rg_ttl_sweep "every key has a TTL" 't:*'
# the final checkpoint let the lease go in the same step
rg_equal "its lease is let go" "$(rg_rcli exists "t:{$uid}:lease")" 0
rg_equal "its fencing counter stays" "$(rg_rcli exists "t:{$uid}:fence")" 1

"$R" -c "$tmp/d.conf" status "$uid" > "$tmp/st.out" 2>&1
rg_expect "status reads it from another process" "$tmp/st.out" \
    '^status: done'
rg_expect "with its answer" "$tmp/st.out" '^answer: four and nine'

# killed in the middle of round 2: its second model call is in flight
: > "$tmp/requests.log"
"$R" -c "$tmp/d.conf" run -a a "do the sums" > "$tmp/k.out" 2> "$tmp/k.err" &
kpid=$!
pids="$pids $kpid"
rg_wait_for "$tmp/requests.log" '"n":' 2
sleep 0.1
kill -9 $kpid
wait $kpid 2>/dev/null
kid=$(sed -n 's/^session: \(s-[0-9a-f]*\) .*/\1/p' "$tmp/k.err")

rg_equal "the killed run's status is not final" \
    "$(rg_rcli hget "t:{$kid}:meta" status)" model_wait
rg_equal "it stopped after round 1" \
    "$(rg_rcli hget "t:{$kid}:meta" round)" 1

cp "$tmp/requests.log" "$tmp/k.requests"
: > "$tmp/requests.log"

"$R" -c "$tmp/d.conf" resume "$kid" > "$tmp/r.out" 2> "$tmp/r.err"
rg_equal "resume finishes it" "$?" 0
rg_expect "with the answer" "$tmp/r.out" '^four and nine$'
rg_expect "and says where it resumed" "$tmp/r.err" 'resumed after round 1'
rg_equal "the store says done" "$(rg_rcli hget "t:{$kid}:meta" status)" done

# the requests: the killed run sent 1 and 2, the resumed one 2 again and 3
body() {
    sed -n "$2p" "$1" | jq -cS .body
}

rg_equal "the killed run sent two requests" \
    "$(wc -l < "$tmp/k.requests" | tr -d ' ')" 2
rg_equal "the resumed run sent two" \
    "$(wc -l < "$tmp/requests.log" | tr -d ' ')" 2
rg_equal "request 1 equals the uninterrupted run's" \
    "$(body "$tmp/k.requests" 1)" "$(body "$tmp/u.requests" 1)"
rg_equal "the one in flight is sent again, the same" \
    "$(body "$tmp/requests.log" 1)" "$(body "$tmp/u.requests" 2)"
rg_equal "and the next is the uninterrupted run's" \
    "$(body "$tmp/requests.log" 2)" "$(body "$tmp/u.requests" 3)"
rg_equal "with the resumed session's request id" \
    "$(sed -n 2p "$tmp/requests.log" | jq -r .request_id)" "$kid-3"
rg_equal "the records are those of an uninterrupted run" \
    "$(rg_rcli llen "t:{$kid}:msgs")" 9

# resuming an ended session gives its end
"$R" -c "$tmp/d.conf" resume "$kid" > "$tmp/r2.out" 2> "$tmp/r2.err"
rg_equal "resuming an ended session exits 0" "$?" 0
rg_expect "and prints its answer" "$tmp/r2.out" '^four and nine$'

"$R" -c "$tmp/d.conf" resume s-00000000000000000000000000000000 \
    > "$tmp/r3.out" 2> "$tmp/r3.err"
rg_equal "an unknown id exits 1" "$?" 1
rg_expect "and says so" "$tmp/r3.err" 'no session "s-0+" in the store'

# a turn of 300 calls: a checkpoint larger than a fixed array of
# arguments holds; the session ends done and the store has all of it
rg_mock big --calls 300
cat > "$tmp/big.conf" <<CONF
load_module $(cd "$B" && pwd)/modules/calc.so;
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { llm m; tools calc; max_tool_calls_per_turn 300; }
store redis { server unix:$redis_sock; prefix "t:"; }
CONF
timeout -k 5 120 "$R" -c "$tmp/big.conf" run -a a "many sums" \
    > "$tmp/big.out" 2> "$tmp/big.err"
rg_equal "a turn of 300 calls ends, done" "$?" 0
bid=$(sed -n 's/^session: \(s-[0-9a-f]*\) .*/\1/p' "$tmp/big.err")
rg_equal "the store says done" "$(rg_rcli hget "t:{$bid}:meta" status)" done
rg_check "and holds the turn's records ($(rg_rcli llen "t:{$bid}:msgs"))" \
    test "$(rg_rcli llen "t:{$bid}:msgs")" -gt 600
rg_lacks "no false out of memory" "$tmp/big.err" 'out of memory'

# a store that cannot be reached
sed "s|unix:$redis_sock|127.0.0.1:1; connect_timeout 300ms|" \
    "$tmp/d.conf" > "$tmp/down.conf"
"$R" -c "$tmp/down.conf" -t > "$tmp/t.out" 2>&1
rg_equal "reagent -t fails when redis is down" "$?" 1
rg_expect "and names the address" "$tmp/t.out" \
    'redis 127.0.0.1:1 is not reachable within 300ms \(connect_timeout\): Connection refused in .*down.conf:4'
"$R" -c "$tmp/d.conf" -t > "$tmp/t2.out" 2>&1
rg_expect "and says it is reachable when it is" "$tmp/t2.out" \
    "redis unix:$redis_sock is reachable"

"$R" -c "$tmp/down.conf" run -a a "x" > "$tmp/dr.out" 2> "$tmp/dr.err"
rg_equal "run exits 1 when redis is down at start" "$?" 1
rg_expect "and says why" "$tmp/dr.err" 'redis 127.0.0.1:1 is not reachable'

# a batch killed in the middle, run again with --resume: the tasks it
# had started go on from their sessions, none starts over
rg_task_lines 20 b 'do the sums %d' > "$tmp/b.jsonl"
: > "$tmp/requests.log"
: > "$tmp/b.out"
"$R" -c "$tmp/d.conf" batch --no-progress --concurrency 20 -o "$tmp/b.out" \
    "$tmp/b.jsonl" > /dev/null 2> "$tmp/b1.err" &
bpid=$!
pids="$pids $bpid"
rg_wait_for "$tmp/requests.log" '"n":' 30
sleep 0.1
kill -9 $bpid
wait $bpid 2>/dev/null
first=$(grep -c '"n":' "$tmp/requests.log")
rg_check "the batch was killed with rounds still to go ($first model calls)" \
    test "$first" -ge 30 -a "$first" -lt 60
rg_check "the killed batch's id is kept beside its results" \
    grep -Eqx '[0-9a-f]{32}' "$tmp/b.out.rg-batch"
"$R" -c "$tmp/d.conf" batch --no-progress --concurrency 20 --resume \
    -o "$tmp/b.out" "$tmp/b.jsonl" > /dev/null 2> "$tmp/b2.err"
rg_equal "batch --resume ends" "$?" 0
rg_equal "every task has one result, done" \
    "$(jq -r 'select(.status == "done") | .id' "$tmp/b.out" | sort -u |
       wc -l) $(grep -c . "$tmp/b.out")" "20 20"
total=$(grep -c '"n":' "$tmp/requests.log")
rg_check "the resumed tasks went on: $total model calls for 60, at most \
one repeated per task" test "$total" -ge 60 -a "$total" -le 80
rg_expect "they were resumed" "$tmp/b2.err" "resumed (after|in) round"
rg_check "once the resumed batch has every line, its batch id is gone" \
    test ! -e "$tmp/b.out.rg-batch"

# the sessions of a batch are its own (a random batch id, not the name of
# its output file): the same tasks into the same path again, after the
# first results were removed, call the model again
: > "$tmp/requests.log"
: > "$tmp/c.out"
"$R" -c "$tmp/d.conf" batch --no-progress --concurrency 20 -o "$tmp/c.out" \
    "$tmp/b.jsonl" > /dev/null 2> "$tmp/c1.err"
rg_equal "a batch ends" "$?" 0
rg_check "... and leaves no batch id once every task has its line" \
    test ! -e "$tmp/c.out.rg-batch"
rm -f "$tmp/c.out"
: > "$tmp/c.out"
"$R" -c "$tmp/d.conf" batch --no-progress --concurrency 20 -o "$tmp/c.out" \
    "$tmp/b.jsonl" > /dev/null 2> "$tmp/c2.err"
rg_equal "the same batch into the same path again ends" "$?" 0
rg_equal "... every task ran again: 120 model calls for both runs" \
    "$(grep -c '"n":' "$tmp/requests.log")" 120
rg_lacks "... none was resumed" "$tmp/c2.err" "resumed"

# a session that did not end done: status gives its reason, from the
# store, in another process
sed 's/system_prompt "You add.";/max_rounds 1;/' "$tmp/d.conf" \
    > "$tmp/mr.conf"
"$R" -c "$tmp/mr.conf" run -a a "do the sums" > "$tmp/mr.out" 2> "$tmp/mr.err"
rg_check "a run stopped by max_rounds exits non-zero" test "$?" -ne 0
mid=$(sed -n 's/^session: \(s-[0-9a-f]*\) .*/\1/p' "$tmp/mr.err")
"$R" -c "$tmp/d.conf" status "$mid" > "$tmp/mst.out" 2>&1
rg_expect "status prints its status" "$tmp/mst.out" '^status: max_rounds$'
rg_expect "and its reason" "$tmp/mst.out" \
    '^reason: stopped after 1 rounds? \(max_rounds\): the model still asked for 1 tool call, the first to "calc"$'

rg_done
