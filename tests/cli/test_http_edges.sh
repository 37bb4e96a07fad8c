#!/bin/sh
# test_http_edges.sh: the edges of the task API, with store memory in one
# worker and then with store redis and the queue: an Idempotency-Key
# reused with another body is a 422 (the same body gets the first answer;
# while the first is answered, a 409); a task id that no path can name
# (empty, a '/', a control character, "." or "..", past 256 bytes, not a
# string) is a 400 saying what an id may be, an integer id is taken as
# batch takes it; a path that is not UTF-8, percent-decoded or raw, is a
# 400, and a message that would cut a character in two is still JSON;
# DELETE of a task that ended is a 409 with its final status and result,
# of one that runs still a 202.
#
# Run from the repository root by tests/run.sh; B names the build folder.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

command -v jq >/dev/null || rg_skip "no jq (deploy/deps.sh)"
command -v curl >/dev/null || rg_skip "no curl (deploy/deps.sh)"
command -v python3 >/dev/null || rg_skip "no python3 (deploy/deps.sh)"

rg_mock m --rounds 1 --calls 1
mport=$port
# every answer takes 3 s: a task that is still running
rg_mock s --rounds 1 --calls 1 --latency 3000
sport=$port

hport=$(rg_free_port)
M=$(cd "$B" && pwd)/modules
U=http://127.0.0.1:$hport

export RG_TEST_TOKEN="tok-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
A="Authorization: Bearer $RG_TEST_TOKEN"

# the error body is {"error": {"message", "type", "code"}}
is_error() {
    jq -e '.error | (.message|type) == "string" and (.type|type) ==
           "string" and (.code|type) == "string"' "$tmp/body" >/dev/null
}

# raw METHOD PATH: a request whose path goes as these bytes (curl would
# send them too, but says nothing of what it does with them); the status
# echoed, the body in $tmp/body
raw() {
    python3 - "$hport" "$1" "$2" "$RG_TEST_TOKEN" "$tmp/body" <<'PY'
import os, socket, sys
port, method, path, token, out = sys.argv[1:6]
s = socket.create_connection(("127.0.0.1", int(port)))
s.sendall(method.encode() + b" " + os.fsencode(path)
          + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
          + b"Authorization: Bearer " + token.encode() + b"\r\n\r\n")
d = b""
while True:
    c = s.recv(65536)
    if not c:
        break
    d += c
head, _, body = d.partition(b"\r\n\r\n")
open(out, "wb").write(body)
print(head.split(b" ")[1].decode() if head else "000")
PY
}

# serve CONF: starts reagent serve on it, sets $master
serve() {
    "$R" -c "$1" serve --foreground > "$tmp/serve.out" 2>&1 &
    master=$!
    pids="$pids $master"
    rg_wait_for "$tmp/error.log" "http: worker .* answers" "$2"
}

# stop: QUIT to the master, until it is gone
stop() {
    kill -QUIT "$master"
    i=0
    while kill -0 "$master" 2>/dev/null && [ $i -lt 100 ]; do
        sleep 0.1
        i=$((i + 1))
    done
}

cat > "$tmp/mem.conf" <<CONF
load_module $M/calc.so;
worker_processes 1;
concurrency 50;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1; }
llm s { base_url http://127.0.0.1:$sport/v1; model mock-1; }
agent a { llm m; tools calc; }
agent slow { llm s; tools calc; }
http {
    listen 127.0.0.1:$hport;
    auth_token_env RG_TEST_TOKEN;
    access_log $tmp/access.log;
}
CONF

serve "$tmp/mem.conf" 1

# --- Idempotency-Key and the body --------------------------------------

rg_equal "a submit with a key: 202" \
    "$(rg_req POST /v1/tasks -H "$A" -H "Idempotency-Key: ik-1" \
       -d '{"id":"ik-a","input":"first"}')" 202
rg_equal "the same key, the same body: the first answer" \
    "$(rg_req POST /v1/tasks -H "$A" -H "Idempotency-Key: ik-1" \
       -d '{"id":"ik-a","input":"first"}'; jq -r '.id + " " + .status' \
       "$tmp/body")" "202ik-a running"
rg_equal "the same key, another body: 422" \
    "$(rg_req POST /v1/tasks -H "$A" -H "Idempotency-Key: ik-1" \
       -d '{"id":"ik-b","input":"second"}')" 422
rg_check "  a JSON error saying the key was used with another request" \
    jq -e '.error.code == "idempotency_key_reused" and
           (.error.message | test("another request")) and
           .error.type == "invalid_request_error"' "$tmp/body"
rg_equal "  and the second task was not taken" \
    "$(rg_req GET /v1/tasks/ik-b -H "$A")" 404
rg_equal "  nor did it replace the first answer" \
    "$(rg_req POST /v1/tasks -H "$A" -H "Idempotency-Key: ik-1" \
       -d '{"id":"ik-a","input":"first"}'; jq -r .id "$tmp/body")" \
    "202ik-a"
rg_equal "a body without an id under a key: its retry, the same id" \
    "$(rg_req POST /v1/tasks -H "$A" -H "Idempotency-Key: ik-2" \
       -d '{"input":"anon"}'; first=$(jq -r .id "$tmp/body");
       rg_req POST /v1/tasks -H "$A" -H "Idempotency-Key: ik-2" \
       -d '{"input":"anon"}' > /dev/null; jq -r ".id == \"$first\"" \
       "$tmp/body")" "202true"
rg_equal "  another input under it: 422" \
    "$(rg_req POST /v1/tasks -H "$A" -H "Idempotency-Key: ik-2" \
       -d '{"input":"other"}')" 422

# --- task ids ------------------------------------------------------------

# bad_id BODY WHAT: a 400 naming the rule
bad_id() {
    rg_equal "$2: 400" "$(rg_req POST /v1/tasks -H "$A" -d "$1")" 400
    rg_check "  saying what an id may be" \
        jq -e '.error.code == "invalid_task" and
               (.error.message | test("\"id\" must be 1 to 256 bytes"))' \
        "$tmp/body"
}

bad_id '{"id":"","input":"x"}' "an empty id"
bad_id '{"id":"a/b","input":"x"}' "an id with a '/'"
bad_id '{"id":"a\u0001b","input":"x"}' "an id with a control character"
rg_equal "an id with a NUL (no JSON to jansson): 400" \
    "$(rg_req POST /v1/tasks -H "$A" -d '{"id":"a\u0000","input":"x"}')" 400
bad_id '{"id":".","input":"x"}' "the id \".\""
bad_id '{"id":"..","input":"x"}' "the id \"..\""
bad_id '{"id":true,"input":"x"}' "an id that is true"
bad_id '{"id":1.5,"input":"x"}' "an id that is a number, not an integer"
long=$(head -c 257 /dev/zero | tr '\0' 'i')
bad_id "{\"id\":\"$long\",\"input\":\"x\"}" "an id of 257 bytes"
rg_lacks "no worker died of an id that is no string" "$tmp/error.log" \
    "exited on signal"

printf '[{"id":"","input":"x"},{"id":"arr-ok","input":"y"}]' > "$tmp/arr.json"
rg_equal "an array with an empty id: 202 for the other" \
    "$(rg_req POST /v1/tasks -H "$A" --data-binary @"$tmp/arr.json")" 202
rg_check "  the empty one refused, the other taken" \
    jq -e '.accepted == 1 and (.tasks[0].error.message | test("\"id\""))
           and .tasks[1].id == "arr-ok"' "$tmp/body"

long=$(head -c 256 /dev/zero | tr '\0' 'i')
rg_equal "an id of 256 bytes: 202" \
    "$(rg_req POST /v1/tasks -H "$A" \
       -d "{\"id\":\"$long\",\"input\":\"x\"}")" 202
rg_check "  and GET finds it" rg_wait_task "$long" done -H "$A"
rg_equal "an integer id: 202, named as batch names it" \
    "$(rg_req POST /v1/tasks -H "$A" -d '{"id":42,"input":"x"}';
       jq -r .id "$tmp/body")" "20242"
rg_check "  and GET /v1/tasks/42 finds it" rg_wait_task 42 done -H "$A"
rg_equal "an id of UTF-8 text: 202" \
    "$(rg_req POST /v1/tasks -H "$A" -d '{"id":"tâche é","input":"x"}')" 202
rg_check "  and GET finds it, percent-encoded" \
    rg_wait_task "t%C3%A2che%20%C3%A9" done -H "$A"

# --- paths that are not UTF-8 --------------------------------------------

rg_equal "GET /v1/tasks/%FF: 400" "$(rg_req GET /v1/tasks/%FF -H "$A")" 400
rg_check "  a JSON error naming the path" \
    jq -e '.error.code == "bad_path" and (.error.message | test("UTF-8"))' \
    "$tmp/body"
rg_equal "DELETE /v1/tasks/%C3: 400" \
    "$(rg_req DELETE /v1/tasks/%C3 -H "$A")" 400
rg_equal "GET /v1/tasks/%ED%A0%80 (a surrogate): 400" \
    "$(rg_req GET /v1/tasks/%ED%A0%80 -H "$A")" 400
rg_equal "GET /v1/tasks/%FF/events: 400" \
    "$(rg_req GET /v1/tasks/%FF/events -H "$A")" 400
rg_equal "GET /v1/%FF (no such endpoint, not UTF-8): 400" \
    "$(rg_req GET /v1/%FF -H "$A")" 400
rg_equal "a raw byte 0xff in the path: 400" \
    "$(raw GET "/v1/tasks/$(printf '\377')")" 400
rg_check "  a JSON error" is_error
rg_equal "raw bytes that are UTF-8 (é): an unknown task, 404" \
    "$(raw GET "/v1/tasks/$(printf '\303\251')")" 404
a199=$(head -c 199 /dev/zero | tr '\0' 'a')
rg_equal "an unknown id whose message cuts a character in two: 404" \
    "$(rg_req GET "/v1/tasks/${a199}%C3%A9" -H "$A")" 404
rg_check "  a JSON error (not a 500)" is_error
rg_check "the access log has the 400s, each a JSON line" \
    jq -es '[.[] | select(.status == 400)] | length >= 6' "$tmp/access.log"

# --- DELETE of a task that ended -----------------------------------------

rg_req POST /v1/tasks -H "$A" -d '{"id":"d-done","input":"x"}' > /dev/null
rg_check "a task runs to done" rg_wait_task d-done done -H "$A"
cp "$tmp/body" "$tmp/got"
rg_equal "DELETE it: 409" "$(rg_req DELETE /v1/tasks/d-done -H "$A")" 409
rg_check "  its final status, and its result as GET gives it" \
    jq -e --slurpfile got "$tmp/got" '.status == "done" and .id == "d-done"
           and .error.code == "task_ended" and .task == $got[0]' \
    "$tmp/body"
rg_check "  GET still says done" rg_wait_task d-done done -H "$A"

rg_req POST /v1/tasks -H "$A" -d '{"id":"d-run","agent":"slow","input":"x"}' \
    > /dev/null
sleep 0.3
rg_equal "DELETE a running task: 202 cancelling" \
    "$(rg_req DELETE /v1/tasks/d-run -H "$A"; jq -r .status "$tmp/body")" \
    "202cancelling"
rg_check "  it ends cancelled" rg_wait_task d-run cancelled -H "$A"
rg_equal "DELETE it again: 409, cancelled" \
    "$(rg_req DELETE /v1/tasks/d-run -H "$A"; jq -r .status "$tmp/body")" \
    "409cancelled"
rg_equal "DELETE an unknown task: 404" \
    "$(rg_req DELETE /v1/tasks/d-nope -H "$A")" 404

stop

# --- with the queue ------------------------------------------------------

rg_redis r
: > "$tmp/error.log"
cat > "$tmp/q.conf" <<CONF
load_module $M/calc.so;
worker_processes 2;
concurrency 50;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1; }
llm s { base_url http://127.0.0.1:$sport/v1; model mock-1; }
agent a { llm m; tools calc; }
agent slow { llm s; tools calc; }
store redis { server unix:$redis_sock; }
queue { block 500ms; }
http { listen 127.0.0.1:$hport; }
CONF

serve "$tmp/q.conf" 2
rg_wait_for "$tmp/error.log" "reading the queue" 2

rg_req POST /v1/tasks -d '{"id":"qd","input":"x"}' > /dev/null
rg_check "on the queue, a task runs to done" rg_wait_task qd done
cp "$tmp/body" "$tmp/got"
rg_equal "DELETE it: 409 (not 202 cancelling)" \
    "$(rg_req DELETE /v1/tasks/qd)" 409
rg_check "  its final status, and its result as GET gives it" \
    jq -e --slurpfile got "$tmp/got" '.status == "done" and
           .error.code == "task_ended" and .task == $got[0]' "$tmp/body"
rg_check "  and it stays done" rg_wait_task qd done

# between its last checkpoint and its result, its meta says it ended
rg_rcli del "rg:{$(rg_task_sid qd)}:result" > /dev/null
rg_equal "  read from its meta alone: 409 too" \
    "$(rg_req DELETE /v1/tasks/qd; jq -r .status "$tmp/body")" "409done"

rg_req POST /v1/tasks -d '{"id":"qr","agent":"slow","input":"x"}' > /dev/null
sleep 0.5
rg_equal "DELETE a running task: 202 cancelling" \
    "$(rg_req DELETE /v1/tasks/qr; jq -r .status "$tmp/body")" \
    "202cancelling"
rg_check "  it ends cancelled" rg_wait_task qr cancelled
rg_equal "  DELETE it again: 409, cancelled" \
    "$(rg_req DELETE /v1/tasks/qr; jq -r .status "$tmp/body")" \
    "409cancelled"

rg_equal "  DELETE an unknown task on the queue: 404, as GET" \
    "$(rg_req DELETE /v1/tasks/q-nope)$(rg_req GET /v1/tasks/q-nope)" 404404

rg_equal "an empty id on the queue: 400" \
    "$(rg_req POST /v1/tasks -d '{"id":"","input":"x"}')" 400

# a key whose first request is still answered: its mark, as the first
# request leaves it (the key's digest: no token here)
ik=$(printf %s ik-q | sha256sum | cut -c1-40)
bd=$(printf %s '{"id":"ikq","input":"x"}' | sha256sum | cut -c1-64)
rg_rcli set "rg:{api:idem:$ik}" "{\"digest\":\"$bd\"}" px 60000 > /dev/null
rg_equal "a key still being answered, the same body: 409" \
    "$(rg_req POST /v1/tasks -H "Idempotency-Key: ik-q" \
       -d '{"id":"ikq","input":"x"}'; jq -r .error.code "$tmp/body")" \
    "409in_progress"
rg_equal "  another body: 422" \
    "$(rg_req POST /v1/tasks -H "Idempotency-Key: ik-q" \
       -d '{"id":"ikq2","input":"y"}'; jq -r .error.code "$tmp/body")" \
    "422idempotency_key_reused"
rg_rcli del "rg:{api:idem:$ik}" > /dev/null
rg_equal "  once it is gone, the key is taken afresh: 202" \
    "$(rg_req POST /v1/tasks -H "Idempotency-Key: ik-q" \
       -d '{"id":"ikq","input":"x"}')" 202
rg_equal "  and another body under it now: 422, whichever worker" \
    "$(curl -s -o "$tmp/body" -w '%{http_code}' -H 'Connection: close' \
       -H "Idempotency-Key: ik-q" "$U/v1/tasks" \
       -d '{"id":"ikq3","input":"z"}')" 422

stop

rg_done
