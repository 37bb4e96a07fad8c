#!/bin/sh
# test_http_many.sh: 1,000 concurrent submits on one worker (store
# memory). A python3 client opens 1,000 connections, sends each its POST
# /v1/tasks before it reads any answer, and sees the worker hold all
# 1,000 at once (its sockets on the API port, from /proc); then every
# answer is a 202 naming its own task, and each task runs once (the
# sessions finished and the model calls count exactly 1,000 and 2,000).
# curl cannot do this: it caps --parallel-max at 300.
#
# Run from the repository root by tests/run.sh; B names the build folder.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need jq curl python3
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 2100 ] \
    || ulimit -n 2100 2>/dev/null \
    || rg_skip "fewer than 2,100 file descriptors (ulimit -n)"

# a round of one tool call, then the answer: 2 model calls a task
rg_mock m --rounds 1 --calls 1
mport=$port
hport=$(rg_free_port)
M=$(cd "$B" && pwd)/modules
export RG_TEST_TOKEN="tok-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"

cat > "$tmp/m.conf" <<CONF
load_module $M/calc.so;
worker_processes 1;
concurrency 50;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1; }
agent a { llm m; tools calc; }
http {
    listen 127.0.0.1:$hport;
    auth_token_env RG_TEST_TOKEN;
    # a connection waits its turn for a while under load
    client_timeout 120s;
    access_log off;
}
CONF

rg_serve "$tmp/m.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "http: worker .* answers"
U=http://127.0.0.1:$hport
A="Authorization: Bearer $RG_TEST_TOKEN"
worker=$(pgrep -P $master)

cat > "$tmp/many.py" <<'PY'
import os, socket, sys, time, json
port, token, worker = int(sys.argv[1]), sys.argv[2], sys.argv[3]
N = 1000

def held():
    # the worker's sockets whose local port is the API's: its connections
    inodes = set()
    try:
        for f in os.listdir("/proc/%s/fd" % worker):
            l = os.readlink("/proc/%s/fd/%s" % (worker, f))
            if l.startswith("socket:["):
                inodes.add(l[8:-1])
    except OSError:
        return 0
    # distinct inodes: the file is no snapshot, a line may come twice
    mine = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            c = line.split()
            if int(c[1].split(":")[1], 16) == port and c[3] == "01" \
               and c[9] in inodes:
                mine.add(c[9])
    return len(mine)

socks = []
for i in range(N):
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    socks.append(s)
# every request goes before any answer is read
for i, s in enumerate(socks):
    body = json.dumps({"id": "m%d" % i, "input": "x"}).encode()
    s.sendall(b"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nAuthorization: "
              b"Bearer " + token.encode() + b"\r\nContent-Type: "
              b"application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
              + body)
# the worker holds them all at once (keep-alive: none is closed yet)
peak = 0
t = time.time()
while time.time() - t < 30:
    peak = max(peak, held())
    if peak >= N:
        break
    time.sleep(0.05)
print("held %d" % peak)
for i, s in enumerate(socks):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            break
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    n = 0
    for l in lines[1:]:
        k, _, v = l.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(rest) < n:
        d = s.recv(4096)
        if not d:
            break
        rest += d
    code = lines[0].split(b" ")[1].decode() if lines[0] else "000"
    try:
        tid = json.loads(rest[:n]).get("id")
    except ValueError:
        tid = None
    print("%s %s %s" % (code, "m%d" % i, tid))
for s in socks:
    s.close()
PY

python3 "$tmp/many.py" "$hport" "$RG_TEST_TOKEN" "$worker" > "$tmp/many.out" \
    2> "$tmp/many.err"
rg_equal "1,000 connections, each with its request sent before any answer is read: the worker holds them all at once" \
    "$(sed -n 's/^held //p' "$tmp/many.out")" 1000
rg_equal "  each answered 202" "$(grep -c '^202 ' "$tmp/many.out")" 1000
rg_equal "  each answer names its own task" \
    "$(awk '$1 == 202 && $2 == $3' "$tmp/many.out" | sort -u | wc -l)" 1000
[ -s "$tmp/many.err" ] && sed 's/^/#   /' "$tmp/many.err" | head -n 5

i=0
while [ $i -lt 600 ]; do
    rg_req GET /readyz > /dev/null
    [ "$(jq .sessions "$tmp/body")" = 0 ] && break
    sleep 0.1
    i=$((i + 1))
done
done_n=0
for t in m0 m499 m999; do
    rg_req GET /v1/tasks/$t -H "$A" > /dev/null
    jq -e '.status == "done"' "$tmp/body" > /dev/null && done_n=$((done_n + 1))
done
rg_equal "  they run to their end" "$done_n" 3

curl -s -o "$tmp/metrics" "$U/metrics" -H "$A"
metric() {
    awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' "$tmp/metrics"
}
rg_equal "  each once: 1,000 sessions done" \
    "$(metric 'reagent_sessions_finished_total{status="done"}')" 1000
rg_equal "  and 2,000 model calls" \
    "$(metric 'reagent_model_calls_total{upstream="m",outcome="ok"}')" 2000
rg_equal "the same ids again: each 409" \
    "$(for t in m0 m999; do rg_req POST /v1/tasks -H "$A" \
       -d "{\"id\":\"$t\",\"input\":\"x\"}"; echo; done | tr '\n' ' ')" \
    "409 409 "

kill -QUIT $master
rg_done
