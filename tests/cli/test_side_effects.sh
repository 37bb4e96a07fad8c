#!/bin/sh
# test_side_effects.sh: side effects at most once (src/agent/rg_turn.c,
# the claims) with store redis, the real binary and a counting tool
# (tests/plugins/count.so, flagged RG_TOOL_SIDE_EFFECT, which INCRs a
# counter per execution in a Redis of its own). One answer asks for two
# counts, a fast one and a slow one; the worker is killed with SIGKILL
# while the slow one runs. `reagent resume` runs the turn again: the fast
# call is answered from its stored result, the slow one is not run
# blindly (the model is told its outcome is unknown, with the key), and
# each counter stays at 1, while a read-only call of the same turn (peek,
# not claimed) simply runs again. Modules are given the call's
# idempotency key. The same through `batch --resume` with the task's
# events and transcripts: both say the outcome is unknown.
#
# A claim the store does not take (an ACL refuses the claims' keys) is
# asked again, as a checkpoint is: the call waits and runs once the
# store takes it; past store_timeout the model is told it did not run.
#
# Claims and results live as long as their session: with session_ttl
# 4s, a session resumed (its checkpoint renews its keys), killed again
# after its claim's own TTL would have ended, and resumed once more still
# finds the stored result, and the side effect does not run twice.
#
# A child agent's session is named after its parent's call
# (c-<sha256 of session and call id>): the parent resumed after a kill -9
# while the child's side effect ran finds the same child in the store, and
# the effect is not run again.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq

rg_redis r

cat > "$tmp/script.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"fast","name":"count","arguments":{"key":"kf"}},
   {"id":"look","name":"peek","arguments":{"key":"kp"}},
   {"id":"slow","name":"count","arguments":{"key":"ks","ms":4000}}]}},
 {"message":{"content":"counted"}}]
JSON

rg_mock m --script "$tmp/script.json" --request-log "$tmp/requests.log"

cat > "$tmp/s.conf" <<CONF
load_module $(cd "$B" && pwd)/tests/plugins/count.so;
module count { redis $redis_sock; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { llm m; tools count peek; tool_timeout 30s; }
store redis { server unix:$redis_sock; }
lease_ttl 1s;
CONF

"$R" -c "$tmp/s.conf" run -a a "count" > "$tmp/k.out" 2> "$tmp/k.err" &
kpid=$!
pids="$pids $kpid"

# both ran: the fast one answered, the slow one sleeps
rg_until 10 '[ "$(rg_rcli get count:ks)" = 1 ]'
sleep 0.3
kill -9 $kpid
wait $kpid 2>/dev/null

sid=$(sed -n 's/^session: \(s-[0-9a-f]*\) .*/\1/p' "$tmp/k.err")
rg_equal "the fast call ran once" "$(rg_rcli get count:kf)" 1
rg_equal "the slow call started once" "$(rg_rcli get count:ks)" 1
rg_equal "the read-only call ran once" "$(rg_rcli get count:kp)" 1
rg_check "and has no claim: it is not a side effect" \
    test -z "$(rg_rcli get "rg:{$sid}:idem:1:look")"
rg_equal "the module had the call's idempotency key" \
    "$(rg_rcli get "count:kf:$sid:1:fast")" 1
rg_check "the store holds the fast call's result" \
    test -n "$(rg_rcli get "rg:{$sid}:idem:1:fast")"

: > "$tmp/requests.log"
"$R" -c "$tmp/s.conf" resume "$sid" > "$tmp/r.out" 2> "$tmp/r.err"
rg_equal "resume ends done" "$?" 0
rg_expect "with the answer" "$tmp/r.out" '^counted$'

rg_equal "the fast call did not run again" "$(rg_rcli get count:kf)" 1
rg_equal "the slow call did not run again" "$(rg_rcli get count:ks)" 1
rg_equal "the read-only call ran again, freely" "$(rg_rcli get count:kp)" 2

sed -n 1p "$tmp/requests.log" | jq -r '.body.messages[] | select(.role == "tool") | .tool_call_id + ": " + .content' \
    > "$tmp/tool.msgs"
rg_expect "the model gets the fast call's stored result" "$tmp/tool.msgs" \
    '^fast: counted 1$'
rg_expect "and the read-only call's new result" "$tmp/tool.msgs" \
    '^look: peeked kp$'
rg_expect "and is told the slow call's outcome is unknown" "$tmp/tool.msgs" \
    "^slow: outcome unknown: count may or may not have completed before a restart \\(idempotency key $sid:1:slow\\); check its effect before calling it again$"
rg_expect "the log says so" "$tmp/r.err" \
    'count \(call slow\) was claimed before a restart and has no result'

# the same through a batch with --resume, its task's events on and
# transcripts written: they say the outcome is unknown too
rg_rcli del count:kf count:ks count:kp > /dev/null
: > "$tmp/requests.log"
echo '{"id":"e1","input":"count","events":true}' > "$tmp/e.jsonl"
"$R" -c "$tmp/s.conf" batch --no-progress -o "$tmp/e.out" "$tmp/e.jsonl" \
    > /dev/null 2> "$tmp/e1.err" &
epid=$!
pids="$pids $epid"
rg_until 10 '[ "$(rg_rcli get count:ks)" = 1 ]'
sleep 0.3
kill -9 $epid
wait $epid 2>/dev/null
mkdir -p "$tmp/tr"
"$R" -c "$tmp/s.conf" batch --no-progress --resume --transcripts "$tmp/tr" \
    -o "$tmp/e.out" "$tmp/e.jsonl" > /dev/null 2> "$tmp/e2.err"
rg_equal "the batch resumed ends" "$?" 0
rg_equal "its task ends done" "$(jq -r .status "$tmp/e.out")" done
rg_equal "its side effects ran once, its read-only call twice" \
    "$(rg_rcli get count:kf),$(rg_rcli get count:ks),$(rg_rcli get count:kp)" \
    "1,1,2"
rg_check "the transcript says the slow call's outcome is unknown" \
    test "$(jq -r '.events[] | select(.type == "tool_call"
        and .tool_call_id == "slow") | .result' "$tmp/tr/e1.json" |
        grep -c '^outcome unknown: count may or may not have completed')" \
        -ge 1
esid=$(sed -n 's/.*session: "\(b-[0-9a-f]*\)".*/\1/p' "$tmp/e2.err" | head -n 1)
"$R" -c "$tmp/s.conf" events --session "$esid" > "$tmp/e.events" \
    2> "$tmp/e.events.err"
rg_equal "the task's events are read from the store" "$?" 0
rg_check "and its tool_call_ended event says so" \
    test "$(jq -r 'select(.type == "tool_call_ended")
        | .data | select(.id == "slow")
        | .result // .error' "$tmp/e.events" |
        grep -c '^outcome unknown: count may or may not have completed')" \
        -ge 1

# a fresh run: both run, once each
rg_rcli del count:kf count:ks > /dev/null
"$R" -c "$tmp/s.conf" run -a a "count" > "$tmp/f.out" 2> "$tmp/f.err"
rg_equal "an uninterrupted run ends done" "$?" 0
rg_equal "and counts each once" "$(rg_rcli get count:kf),$(rg_rcli get count:ks)" "1,1"

# a claim the store does not take waits for it, up to store_timeout
cat > "$tmp/wait.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"w1","name":"count","arguments":{"key":"kw"}}]}},
 {"message":{"content":"counted"}}]
JSON
deny_claims() {
    rg_rcli acl setuser default resetkeys '%R~*' '~rg:[^{]*' \
        '~rg:{*}:[^i]*' '~count:*' > /dev/null
}
allow_all() {
    rg_rcli acl setuser default resetkeys '~*' > /dev/null
}

rg_mock w --script "$tmp/wait.json" --request-log "$tmp/wait.log"
sed "s|127.0.0.1:[0-9]*/v1|127.0.0.1:$port/v1|" "$tmp/s.conf" \
    > "$tmp/wait.conf"
deny_claims
"$R" -c "$tmp/wait.conf" run -a a "count" > /dev/null 2> "$tmp/w.err" &
w=$!
pids="$pids $w"
rg_wait_for "$tmp/wait.log" '"n":' 1
sleep 1.5
held=$(rg_rcli get count:kw)
allow_all
wait $w
rc=$?
rg_equal "the store refuses the claim: the call waits, it does not run" \
    "$held" ""
rg_equal "once the store takes its claim the session ends done" "$rc" 0
rg_equal "the call ran once" "$(rg_rcli get count:kw)" 1
rg_equal "and the model got its result" \
    "$(tail -n 1 "$tmp/wait.log" | jq -r '.body.messages[] |
        select(.tool_call_id == "w1") | .content')" "counted 1"

: > "$tmp/wait.log"
printf 'store_timeout 1s;\n' >> "$tmp/wait.conf"
deny_claims
"$R" -c "$tmp/wait.conf" run -a a "count" > /dev/null 2> "$tmp/w2.err"
rc=$?
allow_all
rg_equal "past store_timeout the session goes on" "$rc" 0
rg_equal "the call did not run" "$(rg_rcli get count:kw)" 1
rg_expect "and the model is told so" "$tmp/wait.log" \
    'did not run: its call could not be recorded first \(the store, for 1(\.[0-9]+)?s'

# a session alive past session_ttl keeps its claims: resumed twice
cat > "$tmp/ttl.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"tf","name":"count","arguments":{"key":"tf"}},
   {"id":"tp","name":"peek","arguments":{"key":"tp","ms":3500}}]}},
 {"message":{"content":"counted"}}]
JSON
rg_mock t --script "$tmp/ttl.json" --request-log "$tmp/ttl.log"
sed "s|127.0.0.1:[0-9]*/v1|127.0.0.1:$port/v1|; s/^lease_ttl 1s;/&\
session_ttl 4s;/" "$tmp/s.conf" > "$tmp/ttl.conf"

now_ms() {
    date +%s%3N
}
# sleeps until T (ms)
sleep_until() {
    sleep "$(awk "BEGIN { d = ($1 - $(now_ms)) / 1000;
                          print (d > 0 ? d : 0) }")"
}
killed_run() {
    kill -9 "$1"
    wait "$1" 2>/dev/null
}

"$R" -c "$tmp/ttl.conf" run -a a "count" > /dev/null 2> "$tmp/t1.err" &
t1=$!
pids="$pids $t1"
rg_wait_for "$tmp/t1.err" '^session: s-'
tsid=$(sed -n 's/^session: \(s-[0-9a-f]*\) .*/\1/p' "$tmp/t1.err")
i=0
while ! rg_rcli get "rg:{$tsid}:idem:1:tf" | grep -q 'counted 1' \
      && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done
t0=$(now_ms)
killed_run $t1

# resumed after 2.5 s: its checkpoint renews the keys for 4 s; the claim
# alone would end at 4 s; killed at 4.8 s, resumed again
sleep_until $((t0 + 2500))
"$R" -c "$tmp/ttl.conf" resume "$tsid" > /dev/null 2> "$tmp/t2.err" &
t2=$!
pids="$pids $t2"
sleep_until $((t0 + 4800))
killed_run $t2
rg_check "the claim outlived its own TTL: $(rg_rcli pttl \
"rg:{$tsid}:idem:1:tf") ms left" \
    test "$(rg_rcli pttl "rg:{$tsid}:idem:1:tf")" -gt 0

"$R" -c "$tmp/ttl.conf" resume "$tsid" > "$tmp/t3.out" 2> "$tmp/t3.err"
rg_equal "resumed twice past session_ttl, the session ends done" "$?" 0
rg_equal "its side effect ran once" "$(rg_rcli get count:tf)" 1
rg_equal "the model got its stored result" \
    "$(tail -n 1 "$tmp/ttl.log" | jq -r '.body.messages[] |
        select(.tool_call_id == "tf") | .content')" "counted 1"
rg_check "and the claim lives as long as the session's meta" \
    test "$(rg_rcli pttl "rg:{$tsid}:idem:1:tf")" -ge \
         "$(($(rg_rcli pttl "rg:{$tsid}:meta") - 1000))"

# a child agent's side effect: the parent resumed finds the same child
cat > "$tmp/parent.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"d1","name":"run_agent","arguments":{"agent":"c","input":"count"}}]}},
 {"message":{"content":"delegated"}}]
JSON
cat > "$tmp/child.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"k1","name":"count","arguments":{"key":"kc","ms":4000}}]}},
 {"message":{"content":"child counted"}}]
JSON
rg_mock p --script "$tmp/parent.json"
pport=$port
rg_mock c --script "$tmp/child.json" --request-log "$tmp/child.log"
cport=$port

cat > "$tmp/d.conf" <<CONF
load_module $(cd "$B" && pwd)/tests/plugins/count.so;
load_module $(cd "$B" && pwd)/modules/agent.so;
module count { redis $redis_sock; }
llm p { base_url http://127.0.0.1:$pport/v1; model mock-1; }
llm c { base_url http://127.0.0.1:$cport/v1; model mock-1; }
agent a { llm p; tools run_agent; agents c; tool_timeout 30s; }
agent c { llm c; tools count; tool_timeout 30s; }
store redis { server unix:$redis_sock; }
lease_ttl 1s;
CONF

"$R" -c "$tmp/d.conf" run -a a "delegate" > "$tmp/d.out" 2> "$tmp/d.err" &
dpid=$!
pids="$pids $dpid"
rg_until 10 '[ "$(rg_rcli get count:kc)" = 1 ]'
sleep 0.3
kill -9 $dpid
wait $dpid 2>/dev/null

psid=$(sed -n 's/^session: \(s-[0-9a-f]*\) .*/\1/p' "$tmp/d.err")
csid=$(rg_rcli --scan --pattern 'rg:{c-*}:meta' | sed 's/^rg:{\(c-[0-9a-f]*\)}:meta$/\1/')
rg_check "the child session is in the store under its parent's call's name" \
    test -n "$csid"

: > "$tmp/child.log"
"$R" -c "$tmp/d.conf" resume "$psid" > "$tmp/dr.out" 2> "$tmp/dr.err"
rg_equal "the parent resumed ends done" "$?" 0
rg_equal "the child's call did not run again" "$(rg_rcli get count:kc)" 1
rg_expect "its model is told the outcome is unknown" "$tmp/child.log" \
    "outcome unknown: count may or may not have completed .*idempotency key $csid:1:k1"
rg_equal "the child ended done in the store" \
    "$(rg_rcli hget "rg:{$csid}:meta" status)" done

# a provider that sends the same call id every round (call_0): each
# round's call is its own side effect, claimed under its round
cat > "$tmp/same.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"call_0","name":"count","arguments":{"key":"r1"}}]}},
 {"message":{"tool_calls":[
   {"id":"call_0","name":"count","arguments":{"key":"r2"}}]}},
 {"message":{"content":"counted twice"}}]
JSON
rg_mock same --script "$tmp/same.json" --request-log "$tmp/same.log"
sed "s|127.0.0.1:[0-9]*/v1|127.0.0.1:$port/v1|" "$tmp/s.conf" \
    > "$tmp/same.conf"
"$R" -c "$tmp/same.conf" run -a a "count" > "$tmp/same.out" \
    2> "$tmp/same.err"
rg_equal "the same call id in two rounds: the task ends done" "$?" 0
ssid=$(sed -n 's/^session: \(s-[0-9a-f]*\) .*/\1/p' "$tmp/same.err")
rg_equal "the first round's call ran" "$(rg_rcli get count:r1)" 1
rg_equal "and the second's too, not answered from the first's" \
    "$(rg_rcli get count:r2)" 1
rg_check "each has its claim, under its round" \
    test -n "$(rg_rcli get "rg:{$ssid}:idem:1:call_0")" -a \
         -n "$(rg_rcli get "rg:{$ssid}:idem:2:call_0")"
rg_equal "and the module its own idempotency key" \
    "$(rg_rcli get "count:r2:$ssid:2:call_0")" 1

rg_ttl_sweep "every key reagent wrote (claims and results too)"

rg_done
