#!/bin/sh
# test_serve_master.sh: the master of `reagent serve` killed with SIGKILL
# (src/os/rg_worker.c, src/serve/): the semantics are drain and exit. A
# worker whose master's channel closes stops reading the queue and
# accepting requests, finishes the sessions it runs within drain_timeout,
# hands the rest back to the queue and exits; a `reagent serve` started
# again (at once, while the old workers still drain: its listener and its
# pid file are free) takes everything up. With two workers, 60 queued
# tasks of three rounds with a side effect each (count, in a Redis of its
# own), a model that answers in 400 ms:
#   - each worker says its master is gone and exits within its drain;
#   - the master dies by a signal, which is what makes systemd's
#     Restart=on-failure start it again (deploy/systemd/reagent.service);
#   - the new serve binds the same HTTP port and answers /readyz;
#   - every task ends done, once, and each side effect ran once;
#   - nothing is left pending on the queue.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

command -v redis-server >/dev/null || rg_skip "no redis-server (deploy/deps.sh)"
command -v jq >/dev/null || rg_skip "no jq (deploy/deps.sh)"
command -v curl >/dev/null || rg_skip "no curl (deploy/deps.sh)"
command -v python3 >/dev/null || rg_skip "no python3 (deploy/deps.sh)"

rg_redis c
csock=$redis_sock

rport=$(rg_free_port)
rg_redis_tcp "$rport" "$tmp/redis.d"

cat > "$tmp/script.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"c1","name":"count","arguments":{"key":"k"}}]}},
 {"message":{"tool_calls":[
   {"id":"c2","name":"calc","arguments":{"expression":"6*7"}}]}},
 {"message":{"content":"42"}}]
JSON
rg_mock m --script "$tmp/script.json" --latency 400

hport=$(rg_free_port)
M=$(cd "$B" && pwd)

cat > "$tmp/s.conf" <<CONF
load_module $M/modules/calc.so;
load_module $M/tests/plugins/count.so;
module count { redis $csock; }
worker_processes 2;
concurrency 20;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
drain_timeout 20s;
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { llm m; tools calc count; }
store redis { server 127.0.0.1:$rport; connect_timeout 500ms; }
lease_ttl 3s;
queue { claim_idle 4s; block 500ms; }
http { listen 127.0.0.1:$hport; }
CONF

"$R" -c "$tmp/s.conf" serve --foreground > "$tmp/serve.out" 2>&1 &
master=$!
pids="$pids $master"
rg_wait_for "$tmp/error.log" "reading the queue" 2

rg_task_lines 60 m compute > "$tmp/tasks.jsonl"

"$R" -c "$tmp/s.conf" submit "$tmp/tasks.jsonl" > /dev/null 2> "$tmp/submit.err"
rg_equal "60 tasks queued" "$?" 0

# both workers run sessions when the master goes
i=0
while [ "$(curl -s "http://127.0.0.1:$port/stats" | jq .requests)" -lt 40 ] \
      && [ $i -lt 400 ]; do
    sleep 0.05
    i=$((i + 1))
done
workers=$(pgrep -P $master | tr '\n' ' ')
kill -9 $master
wait $master 2>/dev/null
rc=$?
rg_equal "the master dies by SIGKILL (exit $rc): systemd's Restart=on-failure \
restarts that" "$rc" 137
rg_expect "  which the unit asks for" deploy/systemd/reagent.service \
    '^Restart=on-failure$'

rg_wait_for "$tmp/error.log" "the master's channel closed" 2
rg_equal "each worker says its master is gone" \
    "$(grep -c "the master's channel closed" "$tmp/error.log")" 2

# started again at once, while the old workers drain
"$R" -c "$tmp/s.conf" serve --foreground > "$tmp/serve2.out" 2>&1 &
master2=$!
pids="$pids $master2"
i=0
while [ "$(curl -s -o /dev/null -w '%{http_code}' \
           "http://127.0.0.1:$hport/readyz")" != 200 ] && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done
rg_equal "a new serve starts at once: its listener is free (the old \
workers closed theirs), /readyz 200" \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$hport/readyz")" \
    200
rg_check "and it runs" kill -0 $master2

# the old workers finish within their drain and exit
i=0
for w in $workers; do
    while kill -0 "$w" 2>/dev/null && [ $i -lt 500 ]; do
        sleep 0.05
        i=$((i + 1))
    done
done
left=0
for w in $workers; do
    kill -0 "$w" 2>/dev/null && left=$((left + 1))
done
rg_equal "the old workers exit once drained" "$left" 0

# every task ends, once
i=0
while [ "$(redis-cli -p "$rport" xlen "rg:{q:tasks}:results")" -lt 60 ] \
      && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
done
"$R" -c "$tmp/s.conf" results > "$tmp/res.jsonl" 2> "$tmp/results.err"
rg_equal "every task ends done" \
    "$(jq -r 'select(.id | startswith("m")) | .status' "$tmp/res.jsonl" \
       | sort | uniq -c | tr -s ' ')" " 60 done"
rg_equal "each once" "$(jq -r .id "$tmp/res.jsonl" | sort -u | wc -l)" 60
rg_equal "each side effect ran once" "$(redis-cli -s "$csock" get count:k)" 60
rg_equal "nothing is left pending on the queue" \
    "$(redis-cli -p "$rport" xpending "rg:{q:tasks:0}" workers | head -n 1)" 0

kill -QUIT $master2
wait $master2 2>/dev/null

rg_done
