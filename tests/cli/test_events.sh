#!/bin/sh
# test_events.sh: a session's events (src/agent/rg_events.c, the store's
# stream "{ID}:events", `reagent events`) under `reagent serve` with two
# workers, a redis-server on a unix socket and the mock model:
#   - a task with "events": true and a tool round: model_call_started and
#     _ended (with tokens), tool_call_started and _ended, then the second
#     model call and final, in that order, ids increasing, each naming
#     its task and session; --after ID gives those after it;
#   - a task without "events" records none;
#   - the stream has a TTL, and holds at most events_max (a task of many
#     rounds); a secret of the configuration the model quotes (in a tool
#     call's arguments, in the answer) is masked in it;
#   - a worker killed with SIGKILL in the middle of a task: the task
#     resumed on another worker appends to the same stream, after what
#     the first one wrote; `reagent events --follow` ends at "final".
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq

rg_redis r

RG_TEST_EVENTS_KEY=sk-events-test-0123456789abcdef
export RG_TEST_EVENTS_KEY

cat > "$tmp/tool.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"c1","name":"calc","arguments":{"expression":"6*7"}}]}},
 {"message":{"content":"it is 42"}}]
JSON
rg_mock m --script "$tmp/tool.json"
mport=$port

# the second answer takes long: a worker is killed while it waits
cat > "$tmp/slow.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"c1","name":"calc","arguments":{"expression":"6*7"}}]}},
 {"message":{"content":"slowly 42"},"delay_ms":6000}]
JSON
rg_mock k --script "$tmp/slow.json"
kport=$port

rg_mock g --rounds 10 --calls 1
gport=$port

# a model that quotes the key back, in a tool's arguments and its answer
cat > "$tmp/quote.json" <<JSON
[{"message":{"tool_calls":[
   {"id":"q1","name":"calc","arguments":{"expression":"$RG_TEST_EVENTS_KEY"}}]}},
 {"message":{"content":"the key is $RG_TEST_EVENTS_KEY"}}]
JSON
rg_mock q --script "$tmp/quote.json"
qport=$port

cat > "$tmp/s.conf" <<CONF
load_module $(cd "$B" && pwd)/modules/calc.so;
worker_processes 2;
concurrency 20;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1;
        api_key_env RG_TEST_EVENTS_KEY; }
llm k { base_url http://127.0.0.1:$kport/v1; model mock-k; }
llm g { base_url http://127.0.0.1:$gport/v1; model mock-g;
        api_key_env RG_TEST_EVENTS_KEY; }
agent a { llm m; tools calc; }
agent slow { llm k; tools calc; }
agent many { llm g; tools calc; max_rounds 30; }
llm q { base_url http://127.0.0.1:$qport/v1; model mock-q;
        api_key_env RG_TEST_EVENTS_KEY; }
agent quote { llm q; tools calc; }
store redis { server unix:$redis_sock; }
lease_ttl 1s;
events_max 12;
queue { claim_idle 2s; block 300ms; }
CONF

"$R" -c "$tmp/s.conf" -t > /dev/null 2>&1
rg_equal "the configuration is good" "$?" 0

rg_serve "$tmp/s.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "reading the queue" 2

# ids_grow FILE: the "id" of each line comes after the one before
ids_grow() {
    jq -r .id "$1" | awk -F- '
        NR > 1 && ($1 < ms || ($1 == ms && $2 <= seq)) { bad = 1 }
        { ms = $1 + 0; seq = $2 + 0 }
        END { exit bad }'
}

# a task with events, and one without
cat > "$tmp/e.jsonl" <<'JSONL'
{"id":"e1","agent":"a","input":"compute","events":true}
{"id":"e2","agent":"a","input":"compute"}
JSONL
"$R" -c "$tmp/s.conf" submit --wait "$tmp/e.jsonl" > "$tmp/e.out" \
    2> "$tmp/e.err"
rg_equal "both tasks end done" \
    "$(jq -r .status "$tmp/e.out" | sort | uniq -c | tr -s ' ')" " 2 done"

sid1=$(jq -r 'select(.id == "e1") | .session' "$tmp/e.out")
sid2=$(jq -r 'select(.id == "e2") | .session' "$tmp/e.out")

"$R" -c "$tmp/s.conf" events e1 > "$tmp/e1.jsonl" 2> "$tmp/e1.err"
rg_equal "reagent events e1" "$?" 0
rg_equal "its events, in order" \
    "$(jq -r .type "$tmp/e1.jsonl" | tr '\n' ' ')" \
    "model_call_started model_call_ended tool_call_started tool_call_ended \
model_call_started model_call_ended final "
rg_check "ids increasing" ids_grow "$tmp/e1.jsonl"
rg_equal "each names its task and session, with a time" \
    "$(jq -r '[.data.task, .data.session, (.data.ts > 1700000000000),
               (.type == .data.type)] | join(" ")' "$tmp/e1.jsonl" |
       sort -u)" "e1 $sid1 true true"
rg_equal "model calls with their rounds and tokens" \
    "$(jq -r 'select(.type == "model_call_ended") |
              [.data.round, .data.status, .data.prompt_tokens > 0,
               .data.completion_tokens > 0] | join(" ")' "$tmp/e1.jsonl" |
       tr '\n' ';')" "1 ok true true;2 ok true true;"
rg_equal "the first asks for the tool, the second stops" \
    "$(jq -r 'select(.type == "model_call_ended") |
              [.data.tool_calls, .data.finish_reason] | join(" ")' \
       "$tmp/e1.jsonl" | tr '\n' ';')" "1 tool_calls;0 stop;"
rg_equal "the tool call: its id, name and arguments" \
    "$(jq -r 'select(.type == "tool_call_started") |
              [.data.id, .data.name, .data.round, .data.arguments] |
              join(" ")' "$tmp/e1.jsonl")" 'c1 calc 1 {"expression":"6*7"}'
rg_equal "and its end: ok, with its result" \
    "$(jq -r 'select(.type == "tool_call_ended") |
              [.data.id, .data.ok, .data.result, (.data.ms >= 0)] |
              join(" ")' "$tmp/e1.jsonl")" "c1 true 42 true"
rg_equal "final: status, answer, rounds, tokens" \
    "$(jq -r 'select(.type == "final") |
              [.data.status, .data.answer, .data.rounds,
               (.data.tokens == .data.prompt_tokens
                                + .data.completion_tokens),
               (.data.tokens > 0)] | join(" ")' "$tmp/e1.jsonl")" \
    "done it is 42 2 true true"

ttl=$(rg_rcli pttl "rg:{$sid1}:events")
rg_check "the stream has a TTL ($ttl ms)" \
    test "$ttl" -gt 0 -a "$ttl" -le 3600000
rg_equal "a task without \"events\" records none" \
    "$(rg_rcli exists "rg:{$sid2}:events") \
$("$R" -c "$tmp/s.conf" events e2 | wc -l)" "0 0"

third=$(sed -n 3p "$tmp/e1.jsonl" | jq -r .id)
"$R" -c "$tmp/s.conf" events --after "$third" e1 > "$tmp/after.jsonl"
rg_equal "--after ID: those after it" \
    "$(jq -r .id "$tmp/after.jsonl" | tr '\n' ' ')" \
    "$(sed -n '4,$p' "$tmp/e1.jsonl" | jq -r .id | tr '\n' ' ')"
"$R" -c "$tmp/s.conf" events --session "$sid1" > "$tmp/bysid.jsonl"
rg_equal "--session SID reads the same" \
    "$(cat "$tmp/bysid.jsonl")" "$(cat "$tmp/e1.jsonl")"
"$R" -c "$tmp/s.conf" events --after nonsense e1 > /dev/null \
    2> "$tmp/bad.err"
rg_equal "an --after that is no id is refused" "$?" 1
rg_expect "and says why" "$tmp/bad.err" "after \"nonsense\" is no event id"

# many rounds: the newest events_max stay
echo '{"id":"g1","agent":"many","events":true,"input":"go"}' > "$tmp/g.jsonl"
"$R" -c "$tmp/s.conf" submit --wait "$tmp/g.jsonl" > "$tmp/g.out" 2> /dev/null
sidg=$(jq -r .session "$tmp/g.out")
rg_equal "a task of 10 tool rounds ends done after 11" \
    "$(jq -r '[.status, .rounds] | join(" ")' "$tmp/g.out")" "done 11"
rg_equal "its stream holds events_max (12) of its 43 events" \
    "$(rg_rcli xlen "rg:{$sidg}:events")" 12
"$R" -c "$tmp/s.conf" events g1 > "$tmp/g1.jsonl"
rg_equal "the newest: the end of round 8, rounds 9 to 11, final" \
    "$(jq -r '[.type, .data.round // "-"] | join(":")' "$tmp/g1.jsonl" |
       tr '\n' ' ')" \
    "tool_call_ended:8 model_call_started:9 model_call_ended:9 \
tool_call_started:9 tool_call_ended:9 model_call_started:10 \
model_call_ended:10 tool_call_started:10 tool_call_ended:10 \
model_call_started:11 model_call_ended:11 final:- "
rg_check "ids increasing" ids_grow "$tmp/g1.jsonl"

# a secret of the configuration quoted by the model
echo '{"id":"q1","agent":"quote","events":true,"input":"go"}' \
    > "$tmp/q.jsonl"
"$R" -c "$tmp/s.conf" submit --wait "$tmp/q.jsonl" > "$tmp/q.out" 2> /dev/null
sidq=$(jq -r .session "$tmp/q.out")
rg_rcli xrange "rg:{$sidq}:events" - + > "$tmp/q.raw"
rg_check "the quoting task recorded its events" \
    test "$(grep -c '^final$' "$tmp/q.raw")" -eq 1
rg_lacks "the configuration's secret is not in its stream" "$tmp/q.raw" \
    "$RG_TEST_EVENTS_KEY"
"$R" -c "$tmp/s.conf" events q1 > "$tmp/q1.jsonl"
rg_expect "the arguments that quoted it are there, masked" "$tmp/q1.jsonl" \
    '"type":"tool_call_started".*"arguments":"\{\\"expression\\":\\"sk-'
rg_expect "and so is the answer" "$tmp/q1.jsonl" \
    '"type":"final".*"answer":"the key is sk-'

# a worker killed while the task waits for its second model call
"$R" -c "$tmp/s.conf" events --follow k1 > "$tmp/follow.jsonl" \
    2> "$tmp/follow.err" &
follow=$!
pids="$pids $follow"

echo '{"id":"k1","agent":"slow","input":"compute","events":true}' \
    > "$tmp/k.jsonl"
"$R" -c "$tmp/s.conf" submit --wait "$tmp/k.jsonl" > "$tmp/k.out" \
    2> "$tmp/k.err" &
sub=$!
pids="$pids $sub"

i=0
started=0
while [ $i -lt 200 ]; do
    "$R" -c "$tmp/s.conf" events k1 > "$tmp/k-before.jsonl" 2>/dev/null
    started=$(jq -r 'select(.type == "model_call_started" and
                            .data.round == 2) | .id' "$tmp/k-before.jsonl" |
              wc -l)
    [ "$started" -ge 1 ] && break
    sleep 0.1
    i=$((i + 1))
done
rg_equal "the task reached its second model call" "$started" 1

sidk=$(jq -r '.data.session' "$tmp/k-before.jsonl" | head -n 1)
holder=$(rg_rcli hget "rg:{$sidk}:meta" worker)
victim=${holder##*:}
rg_check "a worker of this master runs it ($holder)" \
    test -n "$victim" -a "$(ps -o ppid= -p "$victim" 2>/dev/null |
                           tr -d ' ')" = "$master"
kill -9 "$victim"

rg_wait_gone $sub 60
wait $sub
rg_equal "the task ends done, resumed elsewhere" \
    "$(jq -r .status "$tmp/k.out")" done
rg_expect "by another worker" "$tmp/error.log" \
    "took over [0-9]+ tasks idle past claim_idle"

"$R" -c "$tmp/s.conf" events k1 > "$tmp/k1.jsonl"
n_before=$(grep -c . "$tmp/k-before.jsonl")
rg_equal "what the first worker wrote is kept, first" \
    "$(head -n "$n_before" "$tmp/k1.jsonl")" "$(cat "$tmp/k-before.jsonl")"
rg_equal "then the resumed session's, in the same stream" \
    "$(sed -n "$((n_before + 1)),\$p" "$tmp/k1.jsonl" | jq -r .type |
       tr '\n' ' ')" "model_call_started model_call_ended final "
rg_equal "round 2 asked twice: once before the kill, once after" \
    "$(jq -r 'select(.type == "model_call_started") | .data.round' \
       "$tmp/k1.jsonl" | tr '\n' ' ')" "1 2 2 "
rg_check "ids increasing across the workers" ids_grow "$tmp/k1.jsonl"

rg_wait_gone $follow 10
rg_check "events --follow ends at final" test ! -d /proc/$follow
rg_equal "having printed the same events" \
    "$(cat "$tmp/follow.jsonl")" "$(cat "$tmp/k1.jsonl")"

kill -QUIT $master
rg_wait_gone $master 20
rg_check "the master quits" test ! -d /proc/$master
rg_lacks "no event failed to be recorded" "$tmp/error.log" \
    "events cannot be recorded"

# but the queue's shard and results streams, which live as long as the
# queue (the results stream is trimmed to results_max)
rg_ttl_sweep "every key reagent wrote (events, tasks, sessions)" 'rg:*' \
    '^rg:\{q:tasks(:[0-9]+\}|\}:results)$'

rg_done
