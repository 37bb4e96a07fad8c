#!/bin/sh
# test_http_slow.sh: send_timeout. A client that asks for a large answer
# (an 8 MB task result by GET, the same streamed as a chat completion)
# and reads nothing of it is cut once send_timeout passes with nothing
# written: reading late, it finds part of the answer, then the end of
# the connection. A client that reads gets it whole, and the worker
# answers the others meanwhile.
#
# Run from the repository root by tests/run.sh; B names the build folder.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need jq curl python3
wmem=$(awk '{ print $3 }' /proc/sys/net/ipv4/tcp_wmem 2>/dev/null)
[ "${wmem:-0}" -le 6291456 ] \
    || rg_skip "socket buffers of $wmem bytes would hold the 8 MB answer"

# an answer of 8 MB: more than the socket buffers hold (tcp_wmem's most
# is 4 MB), so the worker has to wait for its client to read
python3 - "$tmp/big.json" <<'PY'
import json, sys
json.dump([{"message": {"content": "A" * (8 << 20)}}], open(sys.argv[1], "w"))
PY
rg_mock big --script "$tmp/big.json"
bport=$port
hport=$(rg_free_port)

cat > "$tmp/s.conf" <<CONF
worker_processes 1;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm big { base_url http://127.0.0.1:$bport/v1; model mock-1; }
agent a { llm big; }
http {
    listen 127.0.0.1:$hport;
    max_body 64k;
    # reading a request is not what is cut here
    client_timeout 60s;
    # not 1s: the clock runs while the worker itself encodes 8 MB, which
    # a ThreadSanitizer build takes over a second to do
    send_timeout 3s;
}
CONF

rg_serve "$tmp/s.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "http: worker .* answers"
U=http://127.0.0.1:$hport

# reader.py PORT REQUEST_FILE WAIT: a client with a small receive buffer
# sends the request, waits for the answer's first byte (peeked, not read:
# a loaded machine may take seconds to make it), reads nothing for WAIT s
# more, then reads to the end;
# prints "length L got N end" (L: the Content-Length, or -1 when
# chunked; N: the body's bytes that came; end: EOF or a reset)
cat > "$tmp/reader.py" <<'PY'
import socket, sys, time
port, req, wait = int(sys.argv[1]), open(sys.argv[2], "rb").read(), \
    float(sys.argv[3])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", port))
s.sendall(req)
s.settimeout(60)
try:
    s.recv(1, socket.MSG_PEEK)
except socket.timeout:
    pass
time.sleep(wait)
data, end = b"", "open"
try:
    while True:
        d = s.recv(1 << 16)
        if not d:
            end = "eof"
            break
        data += d
except ConnectionResetError:
    end = "reset"
except socket.timeout:
    end = "timeout"
head, _, body = data.partition(b"\r\n\r\n")
length = -1
for l in head.split(b"\r\n")[1:]:
    k, _, v = l.partition(b":")
    if k.strip().lower() == b"content-length":
        length = int(v)
print("length %d got %d %s" % (length, len(body), end))
PY

rg_equal "a task with an 8 MB answer: 202" \
    "$(rg_req POST /v1/tasks -d '{"id":"big","input":"x"}')" 202
rg_check "  it ends done" rg_wait_task big done
size=$(wc -c < "$tmp/body")
rg_check "  a client that reads gets it whole ($size bytes)" \
    test "$size" -gt 8388608

printf 'GET /v1/tasks/big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' \
    > "$tmp/get.req"
python3 "$tmp/reader.py" "$hport" "$tmp/get.req" 8 > "$tmp/get.out" 2>&1 &
reader=$!
pids="$pids $reader"
sleep 1
rg_equal "while it does not read, the others are answered" \
    "$(rg_req GET /healthz)" 200
wait $reader
read -r _ length _ got end < "$tmp/get.out"
rg_check "a GET whose client reads nothing is cut by send_timeout ($(cat "$tmp/get.out"))" \
    test "$end" = eof -a "$length" -gt 8388608 -a "$got" -lt "$length"
rg_check "  and a reader in time still gets it whole" \
    test "$(rg_req GET /v1/tasks/big; wc -c < "$tmp/body")" -gt 8388608

body='{"model":"a","stream":true,"messages":[{"role":"user","content":"x"}]}'
printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
    "${#body}" "$body" > "$tmp/chat.req"
# 15 s: a ThreadSanitizer build takes 3 s to make the 8 MB answer, and
# the cut comes send_timeout after the last byte it could write
python3 "$tmp/reader.py" "$hport" "$tmp/chat.req" 15 > "$tmp/chat.out" 2>&1
read -r _ _ _ got end < "$tmp/chat.out"
rg_check "a streamed chat whose client reads nothing is cut too ($(cat "$tmp/chat.out"))" \
    test "$end" = eof -a "$got" -lt 8388608
rg_equal "  the worker still answers" "$(rg_req GET /healthz)" 200

curl -sN -o "$tmp/chat.sse" "$U/v1/chat/completions" -d "$body"
rg_equal "  a streamed chat read in time ends with [DONE]" \
    "$(grep '^data:' "$tmp/chat.sse" | tail -n 1)" "data: [DONE]"

kill -QUIT $master
rg_done
