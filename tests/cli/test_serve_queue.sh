#!/bin/sh
# test_serve_queue.sh: how a worker of `reagent serve` reads the queue
# (src/serve/rg_serve_worker.c, src/queue/rg_stream.c, rg_stream_cli.c),
# with the real binary, a redis-server on a unix socket and the mock model:
#   - concurrency 2 is a bound on what a worker holds, also when entries
#     left by a worker that died are taken over while its read waits and
#     new tasks come then;
#   - shards 3 with tasks on one shard only: they are read at once, not
#     after a read of each empty shard waited out `block`;
#   - a dead worker's entry behind more live entries than one XAUTOCLAIM
#     looks at is reached (the scan goes on from its cursor);
#   - a submitter that died between its mark and the entry does not keep
#     the task off the queue; one that is queueing it now does;
#   - a task that runs three times claim_idle on two workers stays with
#     the worker that runs it (kept fresh): delivered once, one model call.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq curl python3

rg_redis r

echo '[{"message":{"content":"slow and done"}}]' > "$tmp/slow.json"
rg_mock w --script "$tmp/slow.json" --latency 2000
wport=$port
echo '[{"message":{"content":"quick"}}]' > "$tmp/fast.json"
rg_mock f --script "$tmp/fast.json" --latency 50
fport=$port
echo '[{"message":{"content":"long"}}]' > "$tmp/long.json"
rg_mock l --script "$tmp/long.json" --latency 6000
lport=$port

# conf WORKERS CONCURRENCY SHARDS CLAIM_IDLE BLOCK [MORE]
conf() {
    cat <<CONF
worker_processes $1;
concurrency $2;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
drain_timeout 1s;
llm w { base_url http://127.0.0.1:$wport/v1; model mock-1; }
llm f { base_url http://127.0.0.1:$fport/v1; model mock-1; }
llm l { base_url http://127.0.0.1:$lport/v1; model mock-1; }
agent slow { llm w; }
agent fast { llm f; }
agent long { llm l; }
store redis { server unix:$redis_sock; }
lease_ttl 1s;
queue { shards $3; claim_idle $4; max_deliveries 5; block $5; }
${6:-}
CONF
}

S='rg:{q:tasks:0}'

# serve_stop: TERM, until the master is gone
serve_stop() {
    kill -TERM "$master"
    rg_wait_gone "$master" 30
    wait "$master" 2>/dev/null
}

# task ID AGENT: the task line
task() {
    echo "{\"id\":\"$1\",\"agent\":\"$2\",\"input\":\"$1\"}"
}

# wait_done SECONDS ID...: until each task's result is done, at most
# SECONDS; true when they all are
wait_done() {
    wd_left=$(($1 * 10))
    shift
    for wd in "$@"; do
        while [ "$(rg_task_status "$wd")" != done ] && [ $wd_left -gt 0 ]; do
            sleep 0.1
            wd_left=$((wd_left - 1))
        done
        [ "$(rg_task_status "$wd")" = done ] || return 1
    done
}

# held STREAM: the most entries one live consumer holds now (XPENDING's
# summary: count, first, last, then each consumer and its count)
held() {
    rg_rcli xpending "$1" workers | sed -n '4,$p' | paste - - |
        awk '$1 != "gone" && $2 > m { m = $2 } END { print m + 0 }'
}

# shard_of ID N: the shard of N that task ID goes to (rg_stream_shard_of)
shard_of() {
    echo $((0x$(printf '%s' "$1" | sha256sum | cut -c1-8) % $2))
}

# queue SHARD AGENT ID...: the tasks onto the shard at once (XADD, as
# submit does); the id of the last entry, whose first part is when it
# was added (ms)
queue() {
    q_key="rg:{q:tasks:$1}"
    q_agent=$2
    shift 2
    q_lines=
    for q_id in "$@"; do
        q_lines="$q_lines $(task "$q_id" "$q_agent")"
    done
    # shellcheck disable=SC2086
    rg_rcli eval 'local last
        for i = 1, #ARGV do
            last = redis.call("XADD", KEYS[1], "*", "task", ARGV[i])
        end
        return last' 1 "$q_key" $q_lines
}

# pickup ID ENTRY: ms from the entry's XADD to the start of its session
pickup() {
    echo $(($(rg_rcli hget "rg:{$(rg_task_sid "$1")}:meta" created) -
            ${2%-*}))
}

# the concurrency bound while entries are taken over -----------------------
# two entries held by a worker that died (a consumer that read them and
# is gone), then serve with concurrency 2; when it takes them over, four
# new tasks come while its read waits (block 1900ms)
conf 1 2 1 2s 1900ms > "$tmp/s.conf"
rg_rcli xgroup create "$S" workers 0 mkstream > /dev/null
queue 0 slow r0 r1 > /dev/null
rg_rcli xreadgroup group workers gone count 2 streams "$S" '>' > /dev/null
rg_serve_start "$tmp/s.conf" 1
rg_wait_for "$tmp/error.log" "took over 2 tasks" 1
queue 0 slow n0 n1 n2 n3 > /dev/null
most=0
i=0
while [ "$(rg_task_status n3)" != done ] && [ $i -lt 150 ]; do
    h=$(held "$S")
    [ "$h" -gt "$most" ] && most=$h
    sleep 0.1
    i=$((i + 1))
done
rg_expect "the worker took over the dead one's two entries" \
    "$tmp/error.log" "took over 2 tasks idle past claim_idle"
rg_equal "with concurrency 2 it never held more than 2 entries" "$most" 2
rg_check "the six tasks end done" wait_done 10 r0 r1 n0 n1 n2 n3
"$R" -c "$tmp/s.conf" workers > "$tmp/workers.json" 2>&1
rg_equal "it started six sessions" \
    "$(jq '[.workers[].report.started] | add' "$tmp/workers.json")" 6
serve_stop

# shards 3, tasks on one shard only ----------------------------------------
rg_rcli flushall > /dev/null
conf 1 2 3 6s 5s > "$tmp/s.conf"
rg_serve_start "$tmp/s.conf" 1
# eight tasks on shard 1 while shards 0 and 2 stay empty: a backlog
# that a worker with two slots reads as they free, without waiting on
# the empty shards
ids=
i=0
while [ "$(echo $ids | wc -w)" -lt 8 ]; do
    [ "$(shard_of "s$i" 3)" = 1 ] && ids="$ids s$i"
    i=$((i + 1))
done
sleep 0.5
e=$(queue 1 fast $ids)
rg_check "the eight tasks on shard 1 end done" wait_done 40 $ids
most=0
for t in $ids; do
    p=$(pickup "$t" "$e")
    [ "$p" -gt "$most" ] && most=$p
done
rg_check "two at a time, the last started well within block 5s \
(${most} ms)" test "$most" -lt 2500

# an idle worker: a task on each shard is read as it comes (in the order
# opposite to a turn of the shards)
for s in 1 0 2; do
    i=0
    while [ "$(shard_of "p$s-$i" 3)" != "$s" ]; do
        i=$((i + 1))
    done
    sleep 0.5
    e=$(queue "$s" fast "p$s-$i")
    wait_done 10 "p$s-$i"
    rg_check "an idle worker reads a task on shard $s at once \
($(pickup "p$s-$i" "$e") ms)" test "$(pickup "p$s-$i" "$e")" -lt 1000
done
serve_stop

# a dead worker's entry behind live ones -----------------------------------
# 25 entries held by a live consumer that keeps them fresh, as a worker
# does with what it runs, then one of a consumer that died: a reclaim of
# concurrency 2 asks XAUTOCLAIM for 2, which looks at 20 pending entries
rg_rcli flushall > /dev/null
rg_rcli xgroup create "$S" workers 0 mkstream > /dev/null
ids=
i=0
while [ $i -lt 25 ]; do
    ids="$ids l$i"
    i=$((i + 1))
done
queue 0 slow $ids > /dev/null
rg_rcli xreadgroup group workers live count 25 streams "$S" '>' > /dev/null
live=$(rg_rcli xpending "$S" workers - + 25 live | awk 'NR % 4 == 1')
queue 0 fast d1 > /dev/null
rg_rcli xreadgroup group workers gone count 1 streams "$S" '>' > /dev/null
# shellcheck disable=SC2086
while :; do
    rg_rcli xclaim "$S" workers live 0 $live justid > /dev/null
    sleep 0.3
done &
fresh=$!
pids="$pids $fresh"
conf 1 2 1 2s 500ms > "$tmp/s.conf"
rg_serve_start "$tmp/s.conf" 1
rg_check "the dead consumer's task, behind 25 live entries, ends done" \
    wait_done 12 d1
rg_equal "the live entries stay with their consumer, delivered once" \
    "$(rg_rcli xpending "$S" workers - + 30 live | awk 'NR % 4 == 0' |
       sort | uniq -c | tr -s ' ')" " 25 1"
kill "$fresh"
serve_stop

# a submitter that died between its mark and its entry ---------------------
rg_rcli flushall > /dev/null
hport=$(rg_free_port)
conf 1 10 1 2s 500ms "http { listen 127.0.0.1:$hport; }" > "$tmp/s.conf"
rg_serve_start "$tmp/s.conf" 1
rg_wait_for "$tmp/error.log" "http: worker .* answers"
U=http://127.0.0.1:$hport

# mark ID VALUE PTTL: task ID's mark, as a submitter left it
mark() {
    rg_rcli set "rg:{$(rg_task_sid "$1")}:task" "$2" px "$3" > /dev/null
}

# submit ID: submit's report on stderr
submit() {
    task "$1" fast | "$R" -c "$tmp/s.conf" submit - 2>&1 > /dev/null
}

# a submit that died 20 s ago, its mark set and no entry added: its
# short mark (60 s) has 40 s left
mark c1 's 0123456789abcdef 1' 40000
rg_equal "a task whose submitter died before its entry is queued" \
    "$(submit c1)" \
    "reagent: 1 task queued, 0 submitted before, 0 refused"
rg_check "and runs" wait_done 10 c1
ttl=$(rg_rcli pttl "rg:{$(rg_task_sid c1)}:task")
rg_check "its mark is kept as long as its session now (pttl $ttl)" \
    test "$ttl" -gt 600000
mark c2 's vm:1 1' 40000
rg_equal "the same through the API" "$(rg_req POST /v1/tasks \
    -d "$(task c2 fast)")" 202
rg_check "  it runs" wait_done 10 c2

# a submit adding its entry now (its mark is a second old): refused
mark c3 's 0123456789abcdef 1' 59000
rg_equal "a task that another submit is queueing now is not queued again" \
    "$(submit c3)" "reagent: task c3 is being submitted by another submit \
now: not queued again
reagent: 0 tasks queued, 1 submitted before, 0 refused"
rg_equal "  nor through the API" "$(rg_req POST /v1/tasks \
    -d "$(task c3 fast)")" 409

# a submit that died after its entry, whose task ran: refused
mark c1 's 0123456789abcdef 1' 40000
rg_equal "a task that ran is not queued again, its mark stale or not" \
    "$(submit c1)" "reagent: task c1 was submitted before: not queued again
reagent: 0 tasks queued, 1 submitted before, 0 refused"
rg_equal "  nor through the API" "$(rg_req POST /v1/tasks \
    -d "$(task c1 fast)")" 409
rg_equal "two entries were added, once each" \
    "$(rg_added "$S") $(rg_announced c1) $(rg_announced c2)" "2 1 1"
serve_stop

# a task that runs three times claim_idle, on two workers ------------------
rg_rcli flushall > /dev/null
conf 2 10 1 2s 500ms > "$tmp/s.conf"
rg_serve_start "$tmp/s.conf" 2
took=$(grep -c "took over" "$tmp/error.log")
task k1 long | "$R" -c "$tmp/s.conf" submit - > /dev/null 2>&1
sleep 5
rg_equal "5 s in, its entry was delivered once (claim_idle 2s)" \
    "$(rg_rcli xpending "$S" workers - + 10 | sed -n 4p)" 1
rg_check "it ends done" wait_done 10 k1
rg_equal "no worker took it over" "$(grep -c "took over" "$tmp/error.log")" \
    "$took"
rg_equal "the model was asked once" \
    "$(curl -s "http://127.0.0.1:$lport/stats" | jq .requests)" 1
rg_equal "its result was announced once" "$(rg_announced k1)" 1
serve_stop

rg_lacks "no worker died" "$tmp/error.log" \
    "exited on signal|exited with code [1-9]"
rg_lacks "nor did a sanitizer speak" "$tmp/serve.err" \
    "AddressSanitizer|LeakSanitizer|runtime error"

rg_done
