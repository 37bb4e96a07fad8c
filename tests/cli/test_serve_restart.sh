#!/bin/sh
# test_serve_restart.sh: Redis restarted under `reagent serve` (src/serve/,
# src/queue/rg_stream.c, src/store/rg_redis.c): two workers run 300 tasks
# of two rounds; the redis-server (appendonly, a free loopback port) is
# stopped in the middle and started again on the same port 3 s later.
# Every task ends done, once; submit --wait waits through the outage,
# under its bar (--progress).
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq curl python3

rport=$(rg_free_port)
mkdir -p "$tmp/redis.d"

start_redis() {
    rg_redis_tcp "$rport" "$tmp/redis.d"
}

start_redis

cat > "$tmp/script.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"c1","name":"calc","arguments":{"expression":"6*7"}}]}},
 {"message":{"content":"42"}}]
JSON
rg_mock m --script "$tmp/script.json" --latency 300

cat > "$tmp/s.conf" <<CONF
load_module $(cd "$B" && pwd)/modules/calc.so;
worker_processes 2;
concurrency 200;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { llm m; tools calc; }
store redis { server 127.0.0.1:$rport; connect_timeout 500ms; }
store_timeout 30s;
lease_ttl 5s;
queue { claim_idle 10s; block 500ms; }
CONF

rg_serve "$tmp/s.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "reading the queue" 2

rg_task_lines 300 r compute > "$tmp/tasks.jsonl"

"$R" -c "$tmp/s.conf" submit --wait --progress "$tmp/tasks.jsonl" \
    > "$tmp/res.jsonl" 2> "$tmp/submit.err" &
sub=$!
pids="$pids $sub"

i=0
while [ "$(curl -s "http://127.0.0.1:$port/stats" | jq .requests)" -lt 300 ] \
      && [ $i -lt 400 ]; do
    sleep 0.05
    i=$((i + 1))
done
sleep 0.1
redis-cli -p "$rport" shutdown nosave > /dev/null 2>&1
wait $redis_pid 2>/dev/null
down=$(curl -s "http://127.0.0.1:$port/stats" | jq .requests)
sleep 3
start_redis

rg_wait_gone $sub 90
wait $sub
rg_equal "submit --wait ends" "$?" 0
rg_check "Redis went away in the middle ($down of 600 model calls made)" \
    test "$down" -gt 0 -a "$down" -lt 600
rg_equal "every task ends done" \
    "$(jq -r .status "$tmp/res.jsonl" | sort | uniq -c | tr -s ' ')" \
    " 300 done"
rg_equal "each once" "$(jq -r .id "$tmp/res.jsonl" | sort -u | wc -l)" 300
rg_equal "in the results stream too" \
    "$(redis-cli -p "$rport" xlen 'rg:{q:tasks}:results')" 300
# an entry is acknowledged after its result is announced (two slots, two
# scripts), so the last acknowledgement may still be on its way when
# submit --wait has seen every result; one whose answer the outage took is
# acknowledged by its worker a second later, or taken over past claim_idle
i=0
while [ "$(redis-cli -p "$rport" xpending 'rg:{q:tasks:0}' workers \
           | head -n 1)" != 0 ] && [ $i -lt 150 ]; do
    sleep 0.1
    i=$((i + 1))
done
rg_equal "nothing is left pending (after $((i / 10)).$((i % 10)) s)" \
    "$(redis-cli -p "$rport" xpending 'rg:{q:tasks:0}' workers | head -n 1)" 0
rg_expect "submit --wait sums the results up" "$tmp/submit.err" \
    "300 tasks in [0-9.]+ s: 300 done, 0 failed \(300 of 300 results"
tr '\r' '\n' < "$tmp/submit.err" | sed "s/$(printf '\033')\\[K//g" \
    > "$tmp/submit.lines"
# whether the wait meets the outage depends on the machine's pace; what
# it says of it is never on the bar's line
rg_lacks "submit --wait: no line said on the bar's" "$tmp/submit.lines" \
    'done.*reagent: '
rg_expect "its bar goes on to the end" "$tmp/submit.lines" \
    '^\[#{30}\] 300/300 done \(0 not done\), 0 waiting'
rg_expect "the workers said Redis was back" "$tmp/error.log" \
    "redis 127.0.0.1:$rport reachable again"

kill -QUIT $master
rg_wait_gone $master 20
rg_check "the master quits" test ! -d /proc/$master

rg_done
