#!/bin/sh
# test_serve.sh: `reagent serve` and its queue (src/serve/, src/queue/
# rg_stream.c), with the real binary: a master and two workers, a
# redis-server on a unix socket, the mock model, a counting side-effect
# tool (tests/plugins/count.so), real signals:
#   - 2,000 tasks submitted, a worker killed with SIGKILL in the middle:
#     every task ends done exactly once, no side effect ran twice, the
#     model calls repeated are at most those in flight, the master starts
#     a new worker;
#   - a task submitted twice is queued once;
#   - SIGHUP under load, with sessions in flight that the old workers
#     drain: nothing lost, later tasks see the new system prompt; a
#     broken reload keeps the old workers and names file:line;
#   - SIGSTOP a worker past its lease while its sessions sit in a tool
#     call, SIGCONT: it says it lost them and writes nothing for them
#     (their messages are those of a run not stopped, no side effect ran
#     twice), they end on the other worker, once;
#   - a task its worker dies on every time lands in the dead letters
#     after max_deliveries, its result failed;
#   - reagent queue, reagent workers; reagent -s reopen, quit (drains:
#     every task read ends with its result, every worker exits cleanly)
#     and stop after quit.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq curl

rg_redis c                          # the counting tool's
csock=$redis_sock
rg_redis r                          # the store and the queue

cat > "$tmp/script.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"k1","name":"count","arguments":{"key":"k","ms":30}}]}},
 {"message":{"content":"counted"}}]
JSON
cat > "$tmp/poison.json" <<'JSON'
[{"message":{"tool_calls":[{"id":"x","name":"crash_now","arguments":{}}]}},
 {"message":{"content":"survived"}}]
JSON

rg_mock m --script "$tmp/script.json" --latency 30 \
    --request-log "$tmp/requests.log"
mport=$port
rg_mock p --script "$tmp/poison.json"
pport=$port
cat > "$tmp/slow.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"w","name":"count","arguments":{"key":"slow","ms":3000}}]}},
 {"message":{"content":"slow"}}]
JSON
rg_mock w --script "$tmp/slow.json"
wport=$port
cat > "$tmp/held.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"f","name":"count","arguments":{"key":"f","ms":2000}}]}},
 {"message":{"content":"held"}}]
JSON
rg_mock h --script "$tmp/held.json"
hport=$port
cat > "$tmp/hup.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"u","name":"count","arguments":{"key":"hup","ms":2000}}]}},
 {"message":{"content":"reloaded"}}]
JSON
rg_mock u --script "$tmp/hup.json"
uport=$port

P=$(cd "$B" && pwd)/tests/plugins

conf() {
    cat <<CONF
load_module $P/count.so;
load_module $P/crash.so;
module count { redis $csock; }
worker_processes 2;
concurrency 100;
thread_pool default threads=32;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
drain_timeout 20s;
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1; }
llm p { base_url http://127.0.0.1:$pport/v1; model mock-1; }
llm w { base_url http://127.0.0.1:$wport/v1; model mock-1; }
llm h { base_url http://127.0.0.1:$hport/v1; model mock-1; }
llm u { base_url http://127.0.0.1:$uport/v1; model mock-1; }
agent a { llm m; tools count; tool_timeout 30s; system_prompt "$1"; }
agent poison { llm p; tools crash_now; }
agent slow { llm w; tools count; tool_timeout 30s; }
agent held { llm h; tools count; tool_timeout 30s; }
agent hup { llm u; tools count; tool_timeout 30s; }
store redis { server unix:$redis_sock; }
lease_ttl 1s;
queue { claim_idle 2s; max_deliveries 2; block 500ms; }
CONF
}


conf "version one" > "$tmp/s.conf"
"$R" -c "$tmp/s.conf" -t > /dev/null 2>&1
rg_equal "the configuration is good" "$?" 0

rg_serve "$tmp/s.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "reading the queue" 2
rg_check "a master and two workers start" \
    test "$(pgrep -P $master | wc -l)" -eq 2

results() {
    rg_rcli xlen 'rg:{q:tasks}:results'
}

# 2,000 tasks; a worker killed in the middle
rg_task_lines 2000 a 'count %s' > "$tmp/a.jsonl"
"$R" -c "$tmp/s.conf" submit --wait "$tmp/a.jsonl" > "$tmp/a.out" \
    2> "$tmp/a.err" &
sub=$!
pids="$pids $sub"

rg_until 30 '[ "$(results)" -ge 500 ]'
victim=$(pgrep -P $master | head -n 1)
before=$(curl -s "http://127.0.0.1:$mport/stats" | jq .requests)
kill -9 "$victim"

rg_wait_gone $sub 180
wait $sub
rg_equal "submit --wait ends when all have ended" "$?" 0
rg_check "the worker died in the middle ($(grep -c . "$tmp/a.out") ended \
by the end, the model had $before requests when it died)" \
    test "$before" -lt 4000
rg_equal "2,000 results, one per task" \
    "$(jq -r .id "$tmp/a.out" | sort -u | wc -l) $(grep -c . "$tmp/a.out")" \
    "2000 2000"
rg_equal "every task is done" \
    "$(jq -r .status "$tmp/a.out" | sort | uniq -c | tr -s ' ')" " 2000 done"
rg_equal "the results stream holds each once" \
    "$(rg_rcli xrange 'rg:{q:tasks}:results' - + | grep -c '^a[0-9]*$' |
       tr -d ' ')" 2000
rg_equal "the shard keeps none of the 2,000 entries it was given" \
    "$(rg_rcli xlen 'rg:{q:tasks:0}') $(rg_added 'rg:{q:tasks:0}')" "0 2000"
twice=0
for k in $(redis-cli -s "$csock" --scan --pattern 'count:k:*'); do
    [ "$(redis-cli -s "$csock" get "$k")" = 1 ] || twice=$((twice + 1))
done
rg_equal "no side effect ran twice" "$twice" 0
reqs=$(curl -s "http://127.0.0.1:$mport/stats" | jq .requests)
rg_check "model calls repeated: at most those in flight ($reqs for 4,000)" \
    test "$reqs" -ge 4000 -a "$reqs" -le 4100
rg_expect "the master saw the worker die" "$tmp/error.log" \
    "worker process $victim exited on signal 9"
rg_wait_for "$tmp/error.log" "reading the queue" 3
rg_check "and started another" test "$(pgrep -P $master | wc -l)" -eq 2
rg_expect "a worker took the dead one's tasks over" "$tmp/error.log" \
    "took over [0-9]+ tasks idle past claim_idle"

"$R" -c "$tmp/s.conf" workers > "$tmp/workers.json" 2>&1
rg_equal "reagent workers: the master and its two workers" \
    "$(jq -r '[.master, (.workers | length)] | join(" ")' \
       "$tmp/workers.json")" \
    "$master 2"
rg_check "with their reports" \
    test "$(jq '[.workers[].report.done] | add' "$tmp/workers.json")" -gt 0
rg_check "their queue reads: each worker reads, and entries came" \
    jq -e '([.workers[].report.reads > 0] | all)
           and ([.workers[].report.read] | add) > 0' "$tmp/workers.json"

# the same id again
echo '{"id":"a1","input":"count again"}' > "$tmp/dup.jsonl"
"$R" -c "$tmp/s.conf" submit "$tmp/dup.jsonl" > /dev/null 2> "$tmp/dup.err"
rg_expect "a task submitted twice is queued once" "$tmp/dup.err" \
    "task a1 was submitted before: not queued again"

"$R" -c "$tmp/s.conf" queue > "$tmp/queue.out" 2>&1
rg_expect "reagent queue: the shard's depth and pending" "$tmp/queue.out" \
    "^shard 0: [0-9]+ entries, 0 not yet read, 0 pending"
rg_expect "and the workers" "$tmp/queue.out" "worker .*: 0 pending"

# a reload under load: ten tasks sit in a 2 s tool call when it comes
i=0
while [ $i -lt 10 ]; do
    echo "{\"id\":\"u$i\",\"agent\":\"hup\",\"input\":\"count u$i\"}"
    i=$((i + 1))
done > "$tmp/h.jsonl"
rg_task_lines 300 h 'count %s' >> "$tmp/h.jsonl"
old=$(pgrep -P $master)
"$R" -c "$tmp/s.conf" submit --wait "$tmp/h.jsonl" > "$tmp/h.out" \
    2> /dev/null &
sub=$!
pids="$pids $sub"
rg_until 10 '[ "$(redis-cli -s "$csock" get count:hup)" = 10 ]'
conf "version two" > "$tmp/s.conf"
"$R" -c "$tmp/s.conf" -s reload
rg_equal "reagent -s reload" "$?" 0
rg_wait_for "$tmp/error.log" "reading the queue" 5
wait $sub
rg_equal "the 310 tasks submitted across the reload all end done" \
    "$(jq -r .status "$tmp/h.out" | sort | uniq -c | tr -s ' ')" " 310 done"
drained=0
for w in $old; do
    d=$(sed -n "s/.* $w#0: queue: no more reads; draining \([0-9]*\) .*/\1/p" \
        "$tmp/error.log")
    drained=$((drained + ${d:-0}))
done
rg_check "the old workers drained the sessions they ran ($drained)" \
    test "$drained" -ge 10

: > "$tmp/requests.log"
rg_task_lines 5 n 'count %s' > "$tmp/n.jsonl"
"$R" -c "$tmp/s.conf" submit --wait "$tmp/n.jsonl" > /dev/null 2>&1
rg_equal "later tasks see the new configuration" \
    "$(jq -r '.body.messages[0].content' "$tmp/requests.log" | sort -u)" \
    "version two"

workers=$(pgrep -P $master | sort | tr '\n' ' ')
echo "this is not a directive;" >> "$tmp/s.conf"
bad=$(wc -l < "$tmp/s.conf")
kill -HUP $master             # reagent -s would refuse the file itself
rg_wait_for "$tmp/error.log" "reload failed" 1
grep "reload" "$tmp/error.log" > "$tmp/reload.log"
rg_expect "a broken reload names file:line" "$tmp/reload.log" \
    "reload failed.*unknown directive \"this\" in .*s.conf:$bad"
rg_equal "and the old workers stay" "$(pgrep -P $master | sort |
    tr '\n' ' ')" "$workers"
conf "version two" > "$tmp/s.conf"

# a worker stopped past its lease: its sessions sit in a 2 s tool call
echo '{"id":"f-ref","agent":"held","input":"count f-ref"}' > "$tmp/f.jsonl"
"$R" -c "$tmp/s.conf" submit --wait "$tmp/f.jsonl" > /dev/null 2>&1
ref=$(rg_rcli llen "rg:{$(rg_task_sid f-ref)}:msgs")
i=0
: > "$tmp/f.jsonl"
while [ $i -lt 24 ]; do
    echo "{\"id\":\"f$i\",\"agent\":\"held\",\"input\":\"count f$i\"}" \
        >> "$tmp/f.jsonl"
    i=$((i + 1))
done
"$R" -c "$tmp/s.conf" submit --wait "$tmp/f.jsonl" > "$tmp/f.out" \
    2> /dev/null &
sub=$!
pids="$pids $sub"
# until all 24 are in their tool call (count:f counts the executions;
# thread_pool has a thread for each)
rg_until 20 '[ "$(redis-cli -s "$csock" get count:f)" = 25 ]'
# the worker that runs f0 (one may have read all 24), stopped before the
# sessions it holds are counted: on a slow machine they would end while
# they are
fname=$(rg_rcli hget "rg:{$(rg_task_sid f0)}:meta" worker)
frozen=${fname##*:}
kill -STOP "$frozen"
held=
for t in $(jq -r .id "$tmp/f.jsonl"); do
    [ "$(rg_rcli hget "rg:{$(rg_task_sid "$t")}:meta" worker)" = "$fname" ] &&
    [ "$(rg_rcli hget "rg:{$(rg_task_sid "$t")}:meta" status)" != done ] &&
        held="$held $t"
done
rg_check "the worker stopped held sessions ($(echo $held | wc -w) of 24)" \
    test -n "$held" -a -n "$(pgrep -P $master | grep -x "$frozen")"
sleep 6
kill -CONT "$frozen"
wait $sub
rg_equal "tasks of a stopped worker end, each once" \
    "$(jq -r .id "$tmp/f.out" | sort -u | wc -l) $(grep -c . "$tmp/f.out")" \
    "24 24"
rg_equal "and are done" \
    "$(jq -r .status "$tmp/f.out" | sort | uniq -c | tr -s ' ')" " 24 done"
rg_equal "the results stream has each once" \
    "$(rg_rcli xrange 'rg:{q:tasks}:results' - + | grep -c '^f[0-9]*$' |
       tr -d ' ')" 24
sleep 1
elsewhere=0
for t in $held; do
    [ "$(rg_rcli hget "rg:{$(rg_task_sid "$t")}:meta" worker)" != "$fname" ] &&
        elsewhere=$((elsewhere + 1))
done
rg_equal "the sessions it held ended on another worker" \
    "$elsewhere" "$(echo $held | wc -w)"
rg_check "it noticed it lost them and said so" test "$(grep -Ec \
    " $frozen#0: .*(the session's lease was lost|is not finished here)" \
    "$tmp/error.log")" -ge "$(echo $held | wc -w)"
twice=0
for k in $(redis-cli -s "$csock" --scan --pattern 'count:f:*'); do
    [ "$(redis-cli -s "$csock" get "$k")" = 1 ] || twice=$((twice + 1))
done
rg_equal "none of their side effects ran twice" "$twice" 0
wrong=0
for t in $(jq -r .id "$tmp/f.jsonl"); do
    [ "$(rg_rcli llen "rg:{$(rg_task_sid "$t")}:msgs")" = "$ref" ] ||
        wrong=$((wrong + 1))
done
rg_equal "each session has the messages of a run not stopped ($ref)" \
    "$wrong" 0

# a task that kills its worker every time
echo '{"id":"bad1","agent":"poison","input":"die"}' > "$tmp/p.jsonl"
"$R" -c "$tmp/s.conf" submit --wait "$tmp/p.jsonl" > "$tmp/p.out" \
    2> /dev/null &
sub=$!
pids="$pids $sub"
rg_wait_gone $sub 60
rg_equal "a poison task ends failed" "$(jq -r .status "$tmp/p.out")" failed
rg_expect "after max_deliveries" "$tmp/p.out" "gave up after 3 deliveries"
rg_equal "it is in the dead letters" \
    "$(rg_rcli xlen 'rg:{q:tasks:0}:dead')" 1
"$R" -c "$tmp/s.conf" queue > "$tmp/queue.out" 2>&1
rg_expect "reagent queue counts the dead letter" "$tmp/queue.out" \
    "^shard 0: [0-9]+ entries, [0-9]+ not yet read, [0-9]+ pending, \
1 dead letter\$"
rg_expect "the worker killed long ago is gone" "$tmp/queue.out" \
    "^  worker [^ ]*:$victim: 0 pending, gone \(last seen"
alive=$(sed -n 's/^  worker [^ ]*:\([0-9]*\): .*, alive (.*/\1/p' \
        "$tmp/queue.out")
strays=0
for a in $alive; do
    pgrep -P $master | grep -qx "$a" || strays=$((strays + 1))
done
rg_check "the workers shown alive ($(echo $alive)) are the master's" \
    test -n "$alive" -a $strays -eq 0

# a dead letter Redis refuses (an ACL: no XADD to a key ending in "d"):
# the task's result is not written nor its entry acknowledged without it;
# once Redis takes it, both are
rg_rcli acl setuser default -xadd '(+xadd ~*[^d])' > /dev/null
echo '{"id":"bad2","agent":"poison","input":"die"}' > "$tmp/p2.jsonl"
"$R" -c "$tmp/s.conf" submit --wait "$tmp/p2.jsonl" > "$tmp/p2.out" \
    2> /dev/null &
sub=$!
pids="$pids $sub"
i=0
while ! grep -q 'task bad2 .*its dead letter was not written' "$tmp/error.log" \
      && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
done
rg_check "a refused dead letter: no result is written" \
    test "$(rg_rcli exists "rg:{$(rg_task_sid bad2)}:result")" = 0
rg_check "  and the entry stays pending" \
    test "$(rg_rcli xpending 'rg:{q:tasks:0}' workers | head -n 1)" -ge 1
rg_equal "  and no dead letter was added" \
    "$(rg_rcli xlen 'rg:{q:tasks:0}:dead')" 1
rg_rcli acl setuser default clearselectors +xadd > /dev/null
rg_wait_gone $sub 60
rg_equal "once Redis takes it, the task ends failed" \
    "$(jq -r .status "$tmp/p2.out")" failed
rg_expect "  saying it was given up on" "$tmp/p2.out" \
    "gave up after [0-9]+ deliveries"
rg_equal "  with its dead letter, once" \
    "$(rg_rcli xrange 'rg:{q:tasks:0}:dead' - + | grep -c '"id":"bad2"')" 1

# signals
"$R" -c "$tmp/s.conf" -s reopen
rg_equal "reagent -s reopen" "$?" 0
rg_task_lines 50 q 'count %s' > "$tmp/q.jsonl"
"$R" -c "$tmp/s.conf" submit "$tmp/q.jsonl" > /dev/null 2>&1
# until the workers have read them all
i=0
while [ $i -lt 100 ]; do
    "$R" -c "$tmp/s.conf" queue > "$tmp/queue.out" 2>&1
    grep -q "^shard 0: .* 0 not yet read" "$tmp/queue.out" && break
    sleep 0.05
    i=$((i + 1))
done
"$R" -c "$tmp/s.conf" -s quit
rg_equal "reagent -s quit" "$?" 0
rg_wait_gone $master 20
rg_check "the master exits after the drain" test ! -d /proc/$master
rg_equal "quit drains: nothing is left half-done" \
    "$(rg_rcli xpending 'rg:{q:tasks:0}' workers | head -n 1)" 0
ended=0
for t in $(jq -r .id "$tmp/q.jsonl"); do
    [ "$(rg_task_status "$t")" = done ] && ended=$((ended + 1))
done
rg_equal "every task it had ends done, with its result" "$ended" 50

rg_lacks "the workers that drained exited cleanly" \
    "$(sed -n "$(grep -n 'shutting down gracefully' "$tmp/error.log" |
       tail -n 1 | cut -d: -f1),\$p" "$tmp/error.log" > "$tmp/quit.log";
       echo "$tmp/quit.log")" \
    "exited on signal|exited with code [1-9]"

# QUIT, then TERM while a slow task drains: the master stops, at once
rg_serve "$tmp/s.conf" /dev/null
rg_wait_for "$tmp/error.log" "reading the queue" 12
echo '{"id":"slow1","agent":"slow","input":"take your time"}' \
    > "$tmp/slow.jsonl"
"$R" -c "$tmp/s.conf" submit "$tmp/slow.jsonl" > /dev/null 2>&1
rg_until 10 '[ "$(redis-cli -s "$csock" get count:slow)" = 1 ]'
"$R" -c "$tmp/s.conf" -s quit
sleep 0.5
"$R" -c "$tmp/s.conf" -s stop
rg_equal "reagent -s stop after quit" "$?" 0
rg_wait_gone $master 10
rg_check "the master stops (it does not spin on)" test ! -d /proc/$master

rg_done
