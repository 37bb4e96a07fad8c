#!/bin/sh
# test_http_conns.sh: the connections a worker of the HTTP API keeps
# (src/http/rg_http_server.c), against slow and many clients, over real
# HTTP on loopback:
#   - client_timeout bounds a request whole: a client sending a byte of
#     its headers every 0.5 s, with client_timeout 1s, is cut within
#     about a second (libevent alone restarts its timeout at every byte,
#     and would keep it for max_header seconds), and the log says so;
#     another client is answered meanwhile, and a kept-alive connection
#     still serves its next request;
#   - max_connections 3: with three connections open a fourth is closed
#     at once without an answer, said once in the log; once one of the
#     three closes, a new one is answered;
#   - a CONNECT is answered 405 in JSON and its connection closed at
#     once (libevent keeps it open after an answer to CONNECT).
#
# Run from the repository root by tests/run.sh; B names the build folder.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need jq curl python3

# conf PORT CLIENT_TIMEOUT [MAX_CONNECTIONS]
conf() {
    cat <<CONF
worker_processes 1;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm m { base_url http://127.0.0.1:9/v1; model mock-1; }
agent a { llm m; }
http {
    listen 127.0.0.1:$1;
    client_timeout $2;
    max_connections ${3:-4096};
}
CONF
}

# serve CONF: a master for CONF, its worker answering; sets $master
serve() {
    : > "$tmp/error.log"
    "$R" -c "$1" serve --foreground >> "$tmp/serve.out" 2>&1 &
    master=$!
    pids="$pids $master"
    rg_wait_for "$tmp/error.log" "http: worker .* answers"
}

# stop: the master stops (TERM) and is waited for
stop() {
    kill "$master"
    wait "$master" 2>/dev/null
}

# --- client_timeout, whole ------------------------------------------------

hport=$(rg_free_port)
conf "$hport" 1s > "$tmp/a.conf"
serve "$tmp/a.conf"
U=http://127.0.0.1:$hport

# its headers a byte every 0.5 s for up to 10 s; says when it was cut
python3 - "$hport" > "$tmp/trickle.out" 2>&1 <<'PY' &
import select, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t = time.time()
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
try:
    while time.time() - t < 10:
        r, _, _ = select.select([s], [], [], 0.5)
        if r and s.recv(100) == b"":
            break
        s.sendall(b"a")
    else:
        print("not cut after 10 s")
        sys.exit(0)
except OSError:
    pass
print("cut after %.1f s" % (time.time() - t))
PY
trickle=$!
pids="$pids $trickle"
sleep 0.4
rg_equal "while a client trickles its headers, another is answered" \
    "$(rg_req GET /healthz)" 200
wait $trickle
rg_expect "a client trickling a byte every 0.5 s is cut within ~1 s" \
    "$tmp/trickle.out" "^cut after [0-2]\.[0-9] s$"
rg_expect "  the log says why" "$tmp/error.log" \
    "did not send its request whole within client_timeout \(1000ms\)"

rg_equal "a request sent whole is answered" "$(rg_req GET /healthz)" 200
rg_equal "a kept-alive connection serves its next request" \
    "$(curl -s -o /dev/null -o /dev/null -w '%{num_connects}.' \
       "$U/healthz" "$U/healthz")" "1.0."

stop

# --- max_connections --------------------------------------------------------

hport=$(rg_free_port)
conf "$hport" 10s 3 > "$tmp/b.conf"
serve "$tmp/b.conf"
U=http://127.0.0.1:$hport

# three connections held open; a fourth; one of the three closed; a fifth
python3 - "$hport" > "$tmp/cap.out" 2>&1 <<'PY'
import socket, sys, time
port = int(sys.argv[1])
get = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"

def answer(s):
    s.settimeout(5)
    try:
        d = s.recv(100)
    except socket.timeout:
        return "no answer in 5 s"
    except OSError:
        return "closed"
    return "closed" if d == b"" else d.split(b"\r\n")[0].decode()

held = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
time.sleep(0.5)
s = socket.create_connection(("127.0.0.1", port))
try:
    s.sendall(get)
except OSError:
    pass
print("fourth:", answer(s))
s.close()
held[0].close()
time.sleep(0.5)
s = socket.create_connection(("127.0.0.1", port))
s.sendall(get)
print("fifth:", answer(s))
held[1].sendall(get)
print("held:", answer(held[1]))
PY
rg_expect "max_connections 3: a fourth connection is closed, unanswered" \
    "$tmp/cap.out" "^fourth: closed$"
rg_expect "  the log says so" "$tmp/error.log" \
    "has max_connections \(3\) open: new ones are closed"
rg_expect "  once one of the three closed, a new one is answered" \
    "$tmp/cap.out" "^fifth: HTTP/1.1 200 OK$"
rg_expect "  the others held open were kept" \
    "$tmp/cap.out" "^held: HTTP/1.1 200 OK$"

# --- CONNECT ------------------------------------------------------------------

python3 - "$hport" > "$tmp/connect.out" 2>&1 <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t = time.time()
s.sendall(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
s.settimeout(8)
d = b""
try:
    while True:
        b = s.recv(4096)
        if not b:
            break
        d += b
except OSError:
    pass
head, _, body = d.partition(b"\r\n\r\n")
print(head.split(b"\r\n")[0].decode())
print("closed after %.1f s" % (time.time() - t))
print(body.decode())
PY
rg_expect "CONNECT: 405" "$tmp/connect.out" "^HTTP/1.1 405 "
rg_expect "  its connection closed at once, not after client_timeout 10s" \
    "$tmp/connect.out" "^closed after 0\.[0-9] s$"
tail -n 1 "$tmp/connect.out" > "$tmp/body"
rg_check "  a JSON error" \
    jq -e '.error.code == "method_not_allowed"' "$tmp/body"

stop
rg_lacks "no sanitizer report" "$tmp/serve.out" \
    "AddressSanitizer|LeakSanitizer|runtime error"

rg_done
