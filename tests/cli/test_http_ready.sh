#!/bin/sh
# test_http_ready.sh: GET /readyz over HTTP says 503 when the worker
# should not be sent work. Draining (one worker, store memory): a client
# kept alive across a QUIT, while a chat in flight holds the drain, asks
# /readyz on its open connection and gets 503 "draining". Workers not
# up (two workers, store redis): a worker killed with -9 (again as soon
# as it is back, so the master waits before the next start), the other
# answers 503 "workers_down" until its slot is up again, then 200.
#
# Run from the repository root by tests/run.sh; B names the build folder.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq curl python3

# every answer takes 2 s: a chat of two model calls holds a drain 4 s
rg_mock s --rounds 1 --calls 1 --latency 2000
sport=$port
M=$(cd "$B" && pwd)/modules

# --- draining -------------------------------------------------------------

hport=$(rg_free_port)
cat > "$tmp/d.conf" <<CONF
load_module $M/calc.so;
worker_processes 1;
pid $tmp/d.pid;
error_log $tmp/d.log info;
drain_timeout 30s;
llm s { base_url http://127.0.0.1:$sport/v1; model mock-1; }
agent a { llm s; tools calc; }
http { listen 127.0.0.1:$hport; client_timeout 60s; }
CONF

rg_serve "$tmp/d.conf" "$tmp/d.out"
rg_wait_for "$tmp/d.log" "http: worker .* answers"
U=http://127.0.0.1:$hport
rg_equal "ready before the drain" "$(rg_req GET /readyz)" 200

# a kept-alive connection: /healthz, then (once told) /readyz on it
cat > "$tmp/keep.py" <<'PY'
import os, socket, sys, time
port, go = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(30)
f = s.makefile("rb")

def ask(path):
    s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    status = f.readline().split(b" ")[1].decode()
    n = 0
    while True:
        l = f.readline()
        if l in (b"\r\n", b""):
            break
        k, _, v = l.partition(b":")
        if k.lower() == b"content-length":
            n = int(v)
    return status, f.read(n).decode()

print("healthz %s" % ask(b"/healthz")[0], flush=True)
t = time.time()
while not os.path.exists(go) and time.time() - t < 30:
    time.sleep(0.05)
status, body = ask(b"/readyz")
print("readyz %s %s" % (status, body), flush=True)
PY
python3 "$tmp/keep.py" "$hport" "$tmp/go" > "$tmp/keep.out" 2>&1 &
keep=$!
pids="$pids $keep"
rg_wait_for "$tmp/keep.out" "^healthz"

curl -s -o "$tmp/inflight" -w '%{http_code}' "$U/v1/chat/completions" \
    -d '{"model":"a","messages":[{"role":"user","content":"x"}]}' \
    > "$tmp/inflight.code" &
inflight=$!
sleep 0.5
kill -QUIT $master
rg_wait_for "$tmp/d.log" "draining for up to"
touch "$tmp/go"
wait $keep
rg_expect "draining: /readyz on a kept-alive connection is 503" \
    "$tmp/keep.out" '^readyz 503 '
sed -n 's/^readyz 503 //p' "$tmp/keep.out" > "$tmp/ready.json"
rg_check "  a JSON error: draining" \
    jq -e '.error.code == "draining" and .error.type == "unavailable"' \
    "$tmp/ready.json"
wait $inflight
rg_equal "  the chat it held gets its answer" "$(cat "$tmp/inflight.code")" \
    200

# --- workers not up ------------------------------------------------------

rport=$(rg_free_port)
rg_redis_tcp "$rport" "$tmp/redis"
hport=$(rg_free_port)
U=http://127.0.0.1:$hport
cat > "$tmp/q.conf" <<CONF
load_module $M/calc.so;
worker_processes 2;
pid $tmp/q.pid;
error_log $tmp/q.log info;
llm s { base_url http://127.0.0.1:$sport/v1; model mock-1; }
agent a { llm s; tools calc; }
store redis { server 127.0.0.1:$rport; }
queue { block 500ms; }
http { listen 127.0.0.1:$hport; }
CONF

rg_serve "$tmp/q.conf" "$tmp/q.out"
rg_wait_for "$tmp/q.log" "http: worker .* answers" 2

# ready: each worker answers for itself, so ten in a row
ok=0
i=0
while [ $ok -lt 10 ] && [ $i -lt 200 ]; do
    if [ "$(rg_req GET /readyz)" = 200 ]; then ok=$((ok + 1)); else ok=0; fi
    sleep 0.05
    i=$((i + 1))
done
rg_equal "two workers: ready" "$ok" 10

set -- $(pgrep -P $master)
rg_equal "  two workers" "$#" 2
keep=$1
victim=$2

# kill the other slot's worker, again as soon as it is back: each quick
# death makes the master wait longer (0, 500 ms, 1 s, 2 s) before the
# next start; meanwhile the one left says 503
seen=
kills=0
while [ -z "$seen" ] && [ $kills -lt 4 ]; do
    kill -9 "$victim"
    kills=$((kills + 1))
    # asked until 503, or until the slot's next worker answers
    i=0
    while [ $i -lt 500 ]; do
        if [ "$(rg_req GET /readyz)" = 503 ]; then
            seen=yes
            cp "$tmp/body" "$tmp/down.json"
            break
        fi
        [ "$(grep -c 'http: worker .* answers' "$tmp/q.log")" -ge \
          $((2 + kills)) ] && break
        sleep 0.02
        i=$((i + 1))
    done
    victim=$(pgrep -P $master | grep -vx "$keep" | head -n 1)
done
rg_check "a worker down: /readyz is 503 (after $kills kills)" test -n "$seen"
rg_check "  a JSON error: workers_down, 1 of 2 up" \
    jq -e '.error.code == "workers_down" and
           (.error.message | test("1 of 2 workers"))' "$tmp/down.json"
rg_check "  from the worker left" kill -0 "$keep"

# its slot is started again: ready again, ten in a row
ok=0
i=0
while [ $ok -lt 10 ] && [ $i -lt 400 ]; do
    if [ "$(rg_req GET /readyz)" = 200 ]; then ok=$((ok + 1)); else ok=0; fi
    sleep 0.05
    i=$((i + 1))
done
rg_equal "once it is back, ready again" "$ok" 10

kill -QUIT $master
rg_done
