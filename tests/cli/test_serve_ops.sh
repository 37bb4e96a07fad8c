#!/bin/sh
# test_serve_ops.sh: what `reagent serve` does at the edges of a task's
# life (src/serve/rg_serve_worker.c, src/queue/rg_stream.c,
# rg_stream_cli.c), with the real binary, a redis-server on a unix socket
# and the mock model:
#   - QUIT past drain_timeout: the task still running is handed back
#     (idle past claim_idle at once), so the next worker takes it over at
#     its first look, long before claim_idle, and it ends once;
#   - a result that Redis refuses to keep: its entry is neither announced
#     nor acknowledged, it stays pending and ends when it is taken over;
#   - reagent status takes the task id that submit prints;
#   - a worker that exits cleanly holding no entry leaves the group;
#     reagent queue shows one that holds some as gone;
#   - reagent results [-o FILE] [--follow], submit -a AGENT -;
#   - backpressure: a worker holds at most `concurrency` entries.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq curl

rg_redis r

rg_mock_answer w "slow and done" --latency 3000
wport=$port
rg_mock_answer f "quick"
fport=$port

# conf CLAIM_IDLE [CONCURRENCY]: one worker
conf() {
    cat <<CONF
worker_processes 1;
concurrency ${2:-10};
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
drain_timeout 1s;
llm w { base_url http://127.0.0.1:$wport/v1; model mock-1; }
llm f { base_url http://127.0.0.1:$fport/v1; model mock-1; }
agent fast { llm f; }
agent slow { llm w; }
store redis { server unix:$redis_sock; }
lease_ttl 1s;
queue { claim_idle $1; max_deliveries 5; block 500ms; }
CONF
}

S='rg:{q:tasks:0}'


# serve_quit: QUIT, until the master is gone
serve_quit() {
    kill -QUIT "$master"
    rg_wait_gone "$master" 30
    wait "$master" 2>/dev/null
}

# a task still running when drain_timeout passes -----------------------
conf 30s > "$tmp/s.conf"
rg_serve_start "$tmp/s.conf" 1
w1=$(pgrep -P "$master")
echo '{"id":"d1","agent":"slow","input":"take your time"}' > "$tmp/d.jsonl"
"$R" -c "$tmp/s.conf" submit "$tmp/d.jsonl" > /dev/null 2>&1
i=0
while [ "$(curl -s "http://127.0.0.1:$wport/stats" | jq .requests)" != 1 ] \
      && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done
serve_quit
rg_check "the master quit" test ! -d "/proc/$master"
rg_expect "the drain ran out with the task running" "$tmp/error.log" \
    "drain_timeout passed with 1 tasks running"
# XPENDING's detail: id, consumer, idle ms, deliveries
idle=$(rg_rcli xpending "$S" workers - + 10 | sed -n 3p)
rg_check "it was handed back: idle past claim_idle at once (${idle}ms)" \
    test "${idle:-0}" -ge 30000
rg_lacks "the worker did not die" "$tmp/error.log" \
    "exited on signal|exited with code [1-9]"

# the next worker takes it at its first look, not claim_idle later
t0=$(date +%s)
rg_serve_start "$tmp/s.conf" 1
w2=$(pgrep -P "$master")
rg_until 30 '[ "$(rg_task_status d1)" = done ]'
t1=$(date +%s)
rg_equal "the task handed back ends done" "$(rg_task_status d1)" done
rg_check "taken over well before claim_idle 30s ($((t1 - t0))s)" \
    test $((t1 - t0)) -lt 20
rg_equal "it is announced once" "$(rg_announced d1)" 1
rg_equal "and nothing is left pending" \
    "$(rg_rcli xpending "$S" workers | head -n 1)" 0
rg_check "the model was asked again (the call in flight was cut)" \
    test "$(curl -s "http://127.0.0.1:$wport/stats" | jq .requests)" -eq 2
serve_quit

# a result Redis refuses to keep -------------------------------------------
conf 2s > "$tmp/s.conf"
rg_serve_start "$tmp/s.conf" 1
w3=$(pgrep -P "$master")
# SET refused on keys ending in "t" (the task's ":result"), the rest (its
# session, the queue, the results stream, the scripts) allowed
rg_rcli acl setuser default -set '(+set ~*[^t])' > /dev/null
echo '{"id":"r1","agent":"fast","input":"keep me"}' > "$tmp/r.jsonl"
"$R" -c "$tmp/s.conf" submit "$tmp/r.jsonl" > "$tmp/ids.out" 2>/dev/null
rg_wait_for "$tmp/error.log" "a result was not acknowledged \(NOPERM"
rg_expect "the refused result is not acknowledged" "$tmp/error.log" \
    "a result was not acknowledged \(NOPERM"
rg_equal "its entry stays pending" \
    "$(rg_rcli xpending "$S" workers | head -n 1)" 1
rg_equal "and it is not announced" "$(rg_announced r1)" 0
rg_rcli acl setuser default clearselectors +set > /dev/null
rg_until 20 '[ "$(rg_task_status r1)" = done ]'
rg_equal "taken over, it ends done" "$(rg_task_status r1)" done
rg_equal "announced once" "$(rg_announced r1)" 1
i=0
while [ "$(rg_rcli xpending "$S" workers | head -n 1)" != 0 ] \
      && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
done
rg_equal "and acknowledged then" \
    "$(rg_rcli xpending "$S" workers | head -n 1)" 0
serve_quit

# reagent status with the id that submit printed -------------------------
"$R" -c "$tmp/s.conf" status "$(head -n 1 "$tmp/ids.out")" > "$tmp/st.out" \
    2> "$tmp/st.err"
rg_equal "reagent status takes the task id submit printed" "$? $(cat \
    "$tmp/ids.out")" "0 r1"
rg_expect "and says how the task ended" "$tmp/st.out" "^status: done\$"
rg_expect "with its task's answer" "$tmp/st.out" "^answer: quick\$"
"$R" -c "$tmp/s.conf" status "$(rg_task_sid r1)" > "$tmp/st2.out" 2>&1
rg_equal "the same as for its session id" "$(cat "$tmp/st2.out")" \
    "$(cat "$tmp/st.out")"
"$R" -c "$tmp/s.conf" status nosuch > /dev/null 2> "$tmp/st.err"
rg_equal "an id that is neither fails" "$?" 1
rg_expect "naming both" "$tmp/st.err" \
    "no session \"nosuch\" nor task \"nosuch\" \(session $(rg_task_sid nosuch)\)"
"$R" -c "$tmp/s.conf" status s-nosuch > /dev/null 2> "$tmp/st.err"
rg_expect "a session id is not taken for a task's" "$tmp/st.err" \
    "no session \"s-nosuch\" in the store"

# consumers: one that exits holding nothing leaves the group ------------
"$R" -c "$tmp/s.conf" queue > "$tmp/queue.out" 2>&1
rg_expect "the worker that exited holding a handed-back task stays, gone" \
    "$tmp/queue.out" "^  worker [^ ]*:$w1: 0 pending, gone \(last seen"
rg_lacks "those that exited holding nothing left the group" \
    "$tmp/queue.out" "^  worker [^ ]*:($w2|$w3):"
rg_lacks "and no worker left is shown alive" "$tmp/queue.out" "alive"
rg_expect "the shard's line still counts (its 2 ended tasks' entries gone)" \
    "$tmp/queue.out" \
    "^shard 0: 0 entries, 0 not yet read, 0 pending, 0 dead letters\$"

# reagent results, submit -a AGENT - ---------------------------------------
"$R" -c "$tmp/s.conf" results -o "$tmp/res.jsonl" > "$tmp/res.out" 2>&1
rg_equal "results -o writes the results stream, one line each" \
    "$(jq -r .id "$tmp/res.jsonl" | sort | tr '\n' ' ')$(wc -c < \
       "$tmp/res.out")" "d1 r1 0"
rg_equal "as JSON with their status" \
    "$(jq -r .status "$tmp/res.jsonl" | sort -u)" done
"$R" -c "$tmp/s.conf" results > "$tmp/res2.out" 2>&1
rg_equal "and without -o, to stdout" "$(cat "$tmp/res2.out")" \
    "$(cat "$tmp/res.jsonl")"

rg_serve_start "$tmp/s.conf" 1
"$R" -c "$tmp/s.conf" results --follow > "$tmp/follow.out" 2>&1 &
follow=$!
pids="$pids $follow"
echo '{"id":"x1","input":"from stdin"}' |
    "$R" -c "$tmp/s.conf" submit -a slow - > "$tmp/x.out" 2>/dev/null
rg_equal "submit - reads the tasks from stdin" "$?,$(cat "$tmp/x.out")" \
    "0,x1"
i=0
while ! grep -q '"x1"' "$tmp/follow.out" && [ $i -lt 300 ]; do
    sleep 0.1
    i=$((i + 1))
done
rg_check "results --follow prints a result that comes after it started" \
    test "$(jq -r 'select(.id == "x1") | .status' "$tmp/follow.out")" = done
rg_check "and goes on following" kill -0 "$follow"
kill "$follow"
rg_equal "it printed the earlier ones first" \
    "$(jq -r .id "$tmp/follow.out" | tr '\n' ' ')" "d1 r1 x1 "
"$R" -c "$tmp/s.conf" status x1 > "$tmp/x.st" 2>&1
rg_expect "submit -a AGENT runs the tasks on that agent" "$tmp/x.st" \
    "^agent: slow\$"
rg_expect "(the slow one's model)" "$tmp/x.st" "^answer: slow and done\$"
serve_quit

# backpressure: a worker holds at most concurrency entries ---------------
conf 30s 2 > "$tmp/s.conf"
rg_serve_start "$tmp/s.conf" 1
i=0
: > "$tmp/b.jsonl"
while [ $i -lt 8 ]; do
    echo "{\"id\":\"b$i\",\"agent\":\"slow\",\"input\":\"b$i\"}" \
        >> "$tmp/b.jsonl"
    i=$((i + 1))
done
before=$(curl -s "http://127.0.0.1:$wport/stats" | jq .requests)
"$R" -c "$tmp/s.conf" submit "$tmp/b.jsonl" > /dev/null 2>&1
i=0
while [ "$(curl -s "http://127.0.0.1:$wport/stats" | jq .requests)" \
        -lt $((before + 2)) ] && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done
most=0
i=0
while [ $i -lt 10 ]; do
    p=$(rg_rcli xpending "$S" workers | head -n 1)
    [ "$p" -gt "$most" ] && most=$p
    sleep 0.1
    i=$((i + 1))
done
rg_equal "with concurrency 2 the worker holds 2 of 8 entries at most" \
    "$most" 2
"$R" -c "$tmp/s.conf" queue > "$tmp/queue.out" 2>&1
rg_expect "reagent queue: the other 6 not yet read" "$tmp/queue.out" \
    "^shard 0: [0-9]+ entries, 6 not yet read, 2 pending, 0 dead letters\$"
rg_expect "and the worker alive with its 2" "$tmp/queue.out" \
    "^  worker [^ ]*: 2 pending, alive \(last seen"
kill -TERM "$master"

rg_done
