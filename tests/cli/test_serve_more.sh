#!/bin/sh
# test_serve_more.sh: parts of `reagent serve` that only a real run shows
# (src/os/rg_master.c, src/serve/rg_serve_worker.c, src/queue/rg_stream.c),
# with the real binary, a redis-server on a unix socket and the mock model:
#   - daemon on: serve returns, the master runs detached in a session of
#     its own, the pid file names it, -s quit stops it;
#   - worker_processes auto: one worker per CPU, as reagent workers shows;
#   - INT stops fast as TERM does (no drain); a task cut by INT or TERM is
#     taken over past claim_idle when serve starts again and ends once;
#   - a task's result has the session_ttl; the results stream is trimmed
#     to about results_max; an entry deleted while pending is dropped by
#     the reclaim, logged, and the worker goes on.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq curl nproc

# small stream nodes: MAXLEN ~ trims whole nodes, so the results stream
# stays within one node (10) of results_max
rg_redis r --stream-node-max-entries 10

rg_mock_answer w "slow and done" --latency 3000
wport=$port
rg_mock_answer f "quick"
fport=$port

# conf DAEMON WORKERS
conf() {
    cat <<CONF
daemon $1;
worker_processes $2;
concurrency 100;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
drain_timeout 30s;
session_ttl 1h;
llm w { base_url http://127.0.0.1:$wport/v1; model mock-1; }
llm f { base_url http://127.0.0.1:$fport/v1; model mock-1; }
agent fast { llm f; }
agent slow { llm w; }
store redis { server unix:$redis_sock; }
lease_ttl 1s;
queue { claim_idle 2s; max_deliveries 5; block 500ms; results_max 100; }
CONF
}

S='rg:{q:tasks:0}'

# gone PID: no such process (or only its zombie)
gone() {
    ! test -d "/proc/$1" || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}

# wait_gone PID: up to 15 s until PID is gone
wait_gone() {
    i=0
    while ! gone "$1" && [ $i -lt 150 ]; do
        sleep 0.1
        i=$((i + 1))
    done
}

# wait_result ID: up to 20 s until the task's result is done
wait_result() {
    i=0
    while [ "$(rg_task_status "$1")" != done ] && [ $i -lt 200 ]; do
        sleep 0.1
        i=$((i + 1))
    done
}

requests() {
    curl -s "http://127.0.0.1:$wport/stats" | jq .requests
}

# wait_requests N: until the slow model was asked N times
wait_requests() {
    i=0
    while [ "$(requests)" != "$1" ] && [ $i -lt 200 ]; do
        sleep 0.05
        i=$((i + 1))
    done
}

pending() {
    rg_rcli xpending "$S" workers | head -n 1
}

# submit ID AGENT
submit() {
    echo "{\"id\":\"$1\",\"agent\":\"$2\",\"input\":\"$1\"}" |
        "$R" -c "$tmp/s.conf" submit - > /dev/null 2>&1
}

# daemon on ---------------------------------------------------------------
conf on 1 > "$tmp/s.conf"
"$R" -c "$tmp/s.conf" serve > "$tmp/daemon.out" 2> "$tmp/daemon.err" &
sp=$!
wait_gone "$sp"
rg_check "serve with daemon on returns" gone "$sp"
wait "$sp"
rg_equal "with 0" "$?" 0
rg_reading=$((rg_reading + 1))
rg_wait_for "$tmp/error.log" "reading the queue" $rg_reading
dm=$(cat "$tmp/reagent.pid" 2>/dev/null)
pids="$pids ${dm:-}"
rg_check "the pid file names a live process (${dm:-none})" \
    test -n "$dm" -a -d "/proc/${dm:-0}"
rg_check "not the one that was started" test "${dm:-0}" != "$sp"
rg_check "it is the master: its worker is its child" \
    test "$(pgrep -P "${dm:-0}" | wc -l)" -eq 1
ppid=$(ps -o ppid= -p "${dm:-0}" | tr -d ' ')
rg_check "the master is not the test's child (parent ${ppid:-none})" \
    test -n "$ppid" -a "$ppid" != "$$" -a "$ppid" != "$sp"
rg_equal "it leads a session of its own" \
    "$(ps -o sid= -p "${dm:-0}" | tr -d ' ')" "$dm"
submit d1 fast
wait_result d1
rg_equal "the detached master's worker runs a task" "$(rg_task_status d1)" done
dw=$(pgrep -P "${dm:-0}")
"$R" -c "$tmp/s.conf" -s quit
rg_equal "reagent -s quit" "$?" 0
wait_gone "${dm:-0}"
rg_check "stops the detached master" gone "${dm:-0}"
rg_check "and its worker" gone "${dw:-0}"
rg_check "and removes the pid file" test ! -e "$tmp/reagent.pid"

# worker_processes auto -------------------------------------------------
cpus=$(nproc)
conf off auto > "$tmp/s.conf"
rg_serve_start "$tmp/s.conf" "$cpus"
"$R" -c "$tmp/s.conf" workers > "$tmp/workers.json" 2>&1
rg_equal "worker_processes auto: reagent workers shows one a CPU ($cpus)" \
    "$(jq -r '[.master, (.workers | length)] | join(" ")' \
       "$tmp/workers.json")" "$master $cpus"
rg_equal "each its own slot" \
    "$(jq -r '[.workers[].slot] | unique | length' "$tmp/workers.json")" \
    "$cpus"
rg_equal "the master's children" "$(pgrep -P "$master" | sort | tr '\n' ' ')" \
    "$(jq -r '.workers[].pid' "$tmp/workers.json" | sort | tr '\n' ' ')"

# INT stops fast, and the task it cut is taken over ----------------------
ws=$(pgrep -P "$master")
submit i1 slow
wait_requests 1
took=$(grep -c "took over 1 tasks idle past claim_idle" "$tmp/error.log")
kill -INT "$master"
wait_gone "$master"
wait "$master" 2>/dev/null
rg_check "INT stops the master" gone "$master"
left=0
for w in $ws; do
    gone "$w" || left=$((left + 1))
done
rg_equal "and its workers" "$left" 0
rg_equal "without a drain: the task in flight has no result" "$(rg_task_status i1)" ""
rg_equal "and its entry stays pending" "$(pending)" 1

rg_serve_start "$tmp/s.conf" "$cpus"
wait_result i1
rg_equal "the task INT cut ends done when serve starts again" \
    "$(rg_task_status i1)" done
rg_equal "taken over past claim_idle" \
    "$(grep -c "took over 1 tasks idle past claim_idle" "$tmp/error.log")" \
    $((took + 1))
rg_equal "announced once" "$(rg_announced i1)" 1
rg_equal "the call in flight was sent again" "$(requests)" 2

# the same for TERM
ws=$(pgrep -P "$master")
submit t1 slow
wait_requests 3
kill -TERM "$master"
wait_gone "$master"
wait "$master" 2>/dev/null
left=0
for w in $ws; do
    gone "$w" || left=$((left + 1))
done
rg_equal "TERM stops the master and its workers" "$(gone "$master" &&
    echo gone) $left" "gone 0"
rg_equal "the task TERM cut has no result" "$(rg_task_status t1)" ""
rg_serve_start "$tmp/s.conf" "$cpus"
wait_result t1
rg_equal "it ends done when serve starts again" "$(rg_task_status t1)" done
rg_equal "taken over past claim_idle too" \
    "$(grep -c "took over 1 tasks idle past claim_idle" "$tmp/error.log")" \
    $((took + 2))
rg_equal "announced once" "$(rg_announced t1)" 1
rg_equal "i1 still once" "$(rg_announced i1)" 1
rg_equal "nothing is left pending" "$(pending)" 0

# the result's TTL, the results stream trimmed ---------------------------
i=0
: > "$tmp/many.jsonl"
while [ $i -lt 300 ]; do
    echo "{\"id\":\"m$i\",\"agent\":\"fast\",\"input\":\"m$i\"}" \
        >> "$tmp/many.jsonl"
    i=$((i + 1))
done
"$R" -c "$tmp/s.conf" submit "$tmp/many.jsonl" > /dev/null 2>&1
i=0
while [ $i -lt 300 ]; do
    "$R" -c "$tmp/s.conf" queue > "$tmp/queue.out" 2>&1
    grep -q "0 not yet read, 0 pending" "$tmp/queue.out" && break
    sleep 0.1
    i=$((i + 1))
done
rg_expect "the 300 tasks were read and acknowledged" "$tmp/queue.out" \
    "^shard 0: [0-9]+ entries, 0 not yet read, 0 pending"
rg_equal "each has its result" \
    "$(rg_rcli --scan --pattern 'rg:{t-*}:result' | wc -l)" 303
rg_equal "the last one done" "$(rg_task_status m299)" done
ttl=$(rg_rcli pttl "rg:{$(rg_task_sid m150)}:result")
rg_check "a result is kept for session_ttl 1h (pttl ${ttl}ms)" \
    test "$ttl" -gt 3000000 -a "$ttl" -le 3600000
ttl=$(rg_rcli pttl "rg:{$(rg_task_sid i1)}:result")
rg_check "that of a task taken over too (pttl ${ttl}ms)" \
    test "$ttl" -gt 3000000 -a "$ttl" -le 3600000
len=$(rg_rcli xlen 'rg:{q:tasks}:results')
rg_check "the results stream is trimmed to about results_max 100 ($len)" \
    test "$len" -ge 100 -a "$len" -le 110
rg_equal "the oldest went first (d1, i1, t1 trimmed)" \
    "$(rg_announced d1) $(rg_announced i1) $(rg_announced t1)" "0 0 0"

# an entry deleted from the stream while pending ------------------------
ws=$(pgrep -P "$master")
submit z1 slow
wait_requests 5
kill -TERM "$master"
wait_gone "$master"
wait "$master" 2>/dev/null
eid=$(rg_rcli xpending "$S" workers - + 10 | sed -n 1p)
rg_equal "the cut task's entry is pending" "$(pending)" 1
rg_equal "XDEL removes it from the stream" "$(rg_rcli xdel "$S" "$eid")" 1
rg_serve_start "$tmp/s.conf" "$cpus"
rg_wait_for "$tmp/error.log" "entry $eid of .* was deleted from the stream"
rg_expect "the reclaim names the deleted entry" "$tmp/error.log" \
    "queue: entry $eid of rg:\{q:tasks:0\} was deleted from the stream before its task ended"
rg_equal "and drops it: nothing pending" "$(pending)" 0
submit a1 fast
wait_result a1
rg_equal "the worker goes on: a later task ends done" "$(rg_task_status a1)" done
rg_lacks "no worker died" "$tmp/error.log" \
    "exited on signal|exited with code [1-9]"
kill -TERM "$master"
wait_gone "$master"
wait "$master" 2>/dev/null
cat "$tmp/daemon.err" >> "$tmp/serve.err"
rg_lacks "nor did a sanitizer speak" "$tmp/serve.err" \
    "AddressSanitizer|LeakSanitizer|runtime error"

rg_done
