#!/bin/sh
# test_metrics_serve.sh: the queue, Redis and dedupe metrics read from a
# running `reagent serve` (two workers, store redis, the queue) by GET
# /metrics, zero before and moved by what the run does: a task running
# long is a stream entry pending (reagent_queue_depth and _pending), a
# task that kills its worker each time goes to the dead letters
# (reagent_queue_dead_letters, reagent_queue_tasks_total{outcome="dead"}),
# two identical read-only calls in one answer run once
# (reagent_dedupe_hits_total), every command is timed
# (reagent_redis_command_duration_seconds), and Redis going away counts
# connection errors (reagent_redis_errors_total{kind="connection"}).
#
# Run from the repository root by tests/run.sh; B names the build folder.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq curl

# one long answer (8 s): its task stays pending a while
rg_mock long --rounds 0 --latency 8000
lport=$port
# two identical calc calls in one answer, then the answer
cat > "$tmp/twins.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"d1","name":"calc","arguments":{"expression":"6*7"}},
   {"id":"d2","name":"calc","arguments":{"expression":"6*7"}}]}},
 {"message":{"content":"42"}}]
JSON
rg_mock twins --script "$tmp/twins.json"
tport=$port
cat > "$tmp/poison.json" <<'JSON'
[{"message":{"tool_calls":[{"id":"x","name":"crash_now","arguments":{}}]}},
 {"message":{"content":"survived"}}]
JSON
rg_mock poison --script "$tmp/poison.json"
pport=$port

rport=$(rg_free_port)
rg_redis_tcp "$rport" "$tmp/redis"
hport=$(rg_free_port)
M=$(cd "$B" && pwd)/modules
P=$(cd "$B" && pwd)/tests/plugins

cat > "$tmp/q.conf" <<CONF
load_module $M/calc.so;
load_module $P/crash.so;
worker_processes 2;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm long { base_url http://127.0.0.1:$lport/v1; model mock-1; }
llm twins { base_url http://127.0.0.1:$tport/v1; model mock-1; }
llm poison { base_url http://127.0.0.1:$pport/v1; model mock-1; }
agent long { llm long; }
agent twins { llm twins; tools calc; dedupe session; }
agent poison { llm poison; tools crash_now; }
store redis { server 127.0.0.1:$rport; connect_timeout 300ms; }
lease_ttl 1s;
queue { claim_idle 2s; max_deliveries 1; block 500ms; }
http { listen 127.0.0.1:$hport; }
CONF

rg_serve "$tmp/q.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "http: worker .* answers" 2
rg_wait_for "$tmp/error.log" "reading the queue" 2
U=http://127.0.0.1:$hport

# metric NAME{LABELS}: its value in the last /metrics read (0: absent)
metric() {
    awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' "$tmp/metrics"
}
# total PREFIX: the sum of the samples whose name and labels start so
total() {
    awk -v k="$1" 'index($1, k) == 1 { v += $2 } END { print v + 0 }' \
        "$tmp/metrics"
}
scrape() {
    curl -s -o "$tmp/metrics" "$U/metrics"
}
# until_sum PREFIX OP N: up to 15 s of scrapes until the total of those
# samples OP N holds (test's -eq, -ge; the queue is sized every 5 s)
until_sum() {
    us_i=0
    while [ $us_i -lt 150 ]; do
        scrape
        [ "$(total "$1")" "$2" "$3" ] && return 0
        sleep 0.1
        us_i=$((us_i + 1))
    done
    return 1
}

# until_has PATTERN...: up to 15 s of scrapes until a line matches each
has_all() {
    for p in "$@"; do
        grep -qE "$p" "$tmp/metrics" || return 1
    done
}
until_has() {
    uh_i=0
    while [ $uh_i -lt 150 ]; do
        scrape
        has_all "$@" && return 0
        sleep 0.1
        uh_i=$((uh_i + 1))
    done
    return 1
}

scrape
rg_check "/metrics parses as Prometheus text" \
    sh tests/lib/rg_prom_check.sh "$tmp/metrics"
rg_equal "before: no dedupe hit" "$(metric reagent_dedupe_hits_total)" 0
rg_equal "  no Redis connection error" \
    "$(metric 'reagent_redis_errors_total{kind="connection"}')" 0
rg_check "  the queue is read: depth, pending and dead letters of shard 0" \
    until_has '^reagent_queue_depth\{shard="0"\} ' \
              '^reagent_queue_pending\{shard="0"\} ' \
              '^reagent_queue_dead_letters\{shard="0"\} '
rg_check "    none pending, no dead letter" \
    test "$(total 'reagent_queue_pending{')" -eq 0 -a \
         "$(total 'reagent_queue_dead_letters{')" -eq 0
rg_check "  Redis commands already timed" \
    test "$(metric reagent_redis_command_duration_seconds_count)" -gt 0

rg_equal "a long task: 202" \
    "$(rg_req POST /v1/tasks -d '{"id":"long1","agent":"long","input":"x"}')" 202
rg_check "while it runs: reagent_queue_pending > 0" \
    until_sum 'reagent_queue_pending{' -ge 1
rg_check "  and reagent_queue_depth > 0" \
    test "$(total 'reagent_queue_depth{')" -ge 1

rg_check "  it ends done" rg_wait_task long1 done
rg_check "  then nothing is pending" until_sum 'reagent_queue_pending{' -eq 0

rg_equal "a task with twin calls: 202" \
    "$(rg_req POST /v1/tasks -d '{"id":"tw1","agent":"twins","input":"x"}')" 202
rg_check "  it ends done" rg_wait_task tw1 done
scrape
rg_equal "  one dedupe hit" "$(metric reagent_dedupe_hits_total)" 1

rg_equal "a task that kills its worker: 202" \
    "$(rg_req POST /v1/tasks -d '{"id":"bad1","agent":"poison","input":"x"}')" 202
rg_check "  it ends failed, given up" rg_wait_task bad1 failed
rg_check "  its reason says max_deliveries" \
    jq -e '.reason | test("max_deliveries")' "$tmp/body"
rg_check "reagent_queue_dead_letters: 1" \
    until_sum 'reagent_queue_dead_letters{' -eq 1
rg_equal "  reagent_queue_tasks_total{outcome=\"dead\"}: 1" \
    "$(metric 'reagent_queue_tasks_total{outcome="dead"}')" 1


scrape
rg_check "Redis commands are timed: a histogram with buckets" \
    grep -q '^reagent_redis_command_duration_seconds_bucket{le="+Inf"} [1-9]' \
    "$tmp/metrics"
rg_equal "  its +Inf bucket is its count" \
    "$(metric 'reagent_redis_command_duration_seconds_bucket{le="+Inf"}')" \
    "$(metric reagent_redis_command_duration_seconds_count)"

redis-cli -p "$rport" shutdown nosave > /dev/null 2>&1
rg_check "Redis away: reagent_redis_errors_total{kind=\"connection\"} > 0" \
    until_sum 'reagent_redis_errors_total{kind="connection"}' -ge 1

kill -QUIT $master
rg_done
