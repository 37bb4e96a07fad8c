#!/bin/sh
# test_http.sh: the HTTP API of `reagent serve` with store memory in one
# worker, over real HTTP on loopback against the mock model: every
# endpoint, success and error paths (401 without or with a wrong token,
# 400 with a JSON error naming what is wrong, 404, 405 with Allow for
# any method, 409, 413), the Idempotency-Key, one task, an array and
# JSONL, cancel, the chat completions (non-streamed and streamed), the
# access log, a slow client cut by client_timeout while others are
# answered, a drain that answers what it holds, a reload that keeps the
# socket, and secrets out of answers. 1,000 concurrent submits:
# test_http_many.sh; slow and many connections: test_http_conns.sh.
#
# Run from the repository root by tests/run.sh; B names the build folder.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need jq curl

# a round of one tool call, then the answer
rg_mock m --rounds 1 --calls 1 --request-log "$tmp/model.log"
mport=$port
# slow: every answer takes 3 s (for cancel and drain)
rg_mock s --rounds 1 --calls 1 --latency 3000
sport=$port

hport=$(rg_free_port)
mtport=$(rg_free_port)
M=$(cd "$B" && pwd)/modules

export RG_TEST_TOKEN="tok-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
export RG_TEST_KEY="sk-test-secret-key-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"

conf() {
    cat <<CONF
load_module $M/calc.so;
worker_processes 1;
concurrency 50;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
drain_timeout ${1:-10s};
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1;
        api_key_env RG_TEST_KEY; }
llm s { base_url http://127.0.0.1:$sport/v1; model mock-1; }
agent a { llm m; tools calc; }
agent slow { llm s; tools calc; }
http {
    listen 127.0.0.1:$hport;
    metrics_listen 127.0.0.1:$mtport;
    auth_token_env RG_TEST_TOKEN;
    max_body 64k;
    client_timeout 2s;
    access_log $tmp/access.log;
}
CONF
}

conf > "$tmp/h.conf"
"$R" -c "$tmp/h.conf" -t > /dev/null 2>&1
rg_equal "the configuration with http { } is good" "$?" 0

rg_serve "$tmp/h.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "http: worker .* answers"
rg_check "a worker answers on the port" \
    curl -sf "http://127.0.0.1:$hport/healthz" -o /dev/null

U=http://127.0.0.1:$hport
A="Authorization: Bearer $RG_TEST_TOKEN"


# the error body is {"error": {"message", "type", "code"}}
is_error() {
    jq -e '.error | (.message|type) == "string" and (.type|type) ==
           "string" and (.code|type) == "string"' "$tmp/body" >/dev/null
}

# --- probes and auth -----------------------------------------------------

rg_equal "/healthz needs no token" "$(rg_req GET /healthz)" 200
rg_equal "/readyz is ready" "$(rg_req GET /readyz)" 200
rg_expect "/readyz names the store" "$tmp/body" '"store":"memory"'

rg_equal "no token: 401" "$(rg_req GET /v1/agents)" 401
rg_check "  a JSON error" is_error
rg_lacks "  no hint which part was wrong" "$tmp/body" "length|prefix|token was"
rg_equal "a wrong token: 401" \
    "$(rg_req GET /v1/agents -H "Authorization: Bearer x$RG_TEST_TOKEN")" 401
rg_equal "a token of the same length, wrong: 401" \
    "$(rg_req GET /v1/agents -H "Authorization: Bearer $(echo "$RG_TEST_TOKEN" | tr 0-9a-f a-f0-9)")" 401
rg_equal "Basic is not Bearer: 401" \
    "$(rg_req GET /v1/agents -H "Authorization: Basic $RG_TEST_TOKEN")" 401
rg_equal "the right token: 200" "$(rg_req GET /v1/agents -H "$A")" 200
rg_check "  /v1/agents lists the agents and their tools" \
    jq -e '.agents | map(.name) == ["a","slow"] and
           (.[0].tools == ["calc"]) and .[0].default' "$tmp/body"
rg_equal "/v1/models" "$(rg_req GET /v1/models -H "$A")" 200
rg_check "  lists the agents as models" \
    jq -e '.object == "list" and (.data | map(.id)) == ["a","slow"]' \
    "$tmp/body"

# --- routing errors ------------------------------------------------------

rg_equal "an unknown path: 404" "$(rg_req GET /v1/nothing -H "$A")" 404
rg_check "  a JSON error" is_error
rg_equal "a wrong method: 405" "$(rg_req PUT /v1/models -H "$A")" 405
rg_check "  a JSON error" is_error
curl -s -D "$tmp/hdr" -o /dev/null -X DELETE "$U/v1/agents" -H "$A"
rg_expect "  with Allow" "$tmp/hdr" "^Allow: GET"
rg_equal "POST on a task: 405" "$(rg_req POST /v1/tasks/x -H "$A")" 405
rg_check "  a JSON error" is_error
curl -s -D "$tmp/hdr" -o /dev/null -X POST "$U/v1/tasks/x" -H "$A"
rg_expect "  with Allow: GET, DELETE" "$tmp/hdr" "^Allow: GET, DELETE"
curl -s -D "$tmp/hdr" -o /dev/null "$U/v1/tasks/x/approve" -H "$A"
rg_expect "GET on approve: Allow: POST" "$tmp/hdr" "^Allow: POST"
# every method reaches the router, those libevent has no use for (its
# 501 is an HTML page) and one it does not know
for m in TRACE OPTIONS PATCH FOO; do
    rg_equal "$m: 405" "$(rg_req $m /v1/agents -H "$A" -D "$tmp/hdr")" 405
    rg_check "  a JSON error" is_error
    rg_expect "  with Allow" "$tmp/hdr" "^Allow: GET"
done
rg_equal "CONNECT: 405" "$(rg_req CONNECT /v1/agents -H "$A" -m 5)" 405
rg_check "  a JSON error: no proxy here" \
    jq -e '.error.message | test("no proxy")' "$tmp/body"

# --- tasks ---------------------------------------------------------------

rg_equal "one task: 202" \
    "$(rg_req POST /v1/tasks -H "$A" -d '{"id":"t1","input":"one"}')" 202
rg_check "  its id" jq -e '.id == "t1"' "$tmp/body"

i=0
while [ "$(rg_req GET /v1/tasks/t1 -H "$A")" = 200 ] \
      && ! jq -e '.status == "done"' "$tmp/body" >/dev/null \
      && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
done
rg_check "GET /v1/tasks/t1: done, with answer, rounds, tokens, times" \
    jq -e '.status == "done" and (.answer | test("Final answer")) and
           .rounds == 2 and .tokens > 0 and .ms >= 0 and .created > 0
           and .ended >= .created' "$tmp/body"
rg_lacks "  no secret in the answer" "$tmp/body" "$RG_TEST_KEY"

rg_equal "the same id again: 409" \
    "$(rg_req POST /v1/tasks -H "$A" -d '{"id":"t1","input":"one"}')" 409
rg_check "  a JSON error that says so" \
    jq -e '.error.code == "task_exists"' "$tmp/body"

rg_equal "an unknown task: 404" "$(rg_req GET /v1/tasks/nope -H "$A")" 404
rg_check "  a JSON error" is_error

rg_equal "a task without an id gets one" \
    "$(rg_req POST /v1/tasks -H "$A" -d '{"input":"anonymous"}')" 202
rg_check "  128 random bits" jq -e '.id | test("^task-[0-9a-f]{32}$")' \
    "$tmp/body"

rg_equal "not JSON: 400" "$(rg_req POST /v1/tasks -H "$A" -d '{"id":')" 400
rg_check "  the error names where" \
    jq -e '.error.code == "invalid_json" and (.error.message |
           test("line 1"))' "$tmp/body"
rg_equal "an unknown key: 400" \
    "$(rg_req POST /v1/tasks -H "$A" -d '{"id":"k","input":"x","max_rouns":3}')" 400
rg_check "  the error names the key" \
    jq -e '.error.message | test("max_rouns")' "$tmp/body"
rg_equal "an unknown agent: 400" \
    "$(rg_req POST /v1/tasks -H "$A" -d '{"id":"g","agent":"ghost","input":"x"}')" 400
rg_check "  the error names it" jq -e '.error.message | test("ghost")' \
    "$tmp/body"
rg_equal "no input: 400" "$(rg_req POST /v1/tasks -H "$A" -d '{"id":"e"}')" 400

printf '[{"id":"arr1","input":"x"},{"id":"arr2","input":"y"},{"id":"arr3"}]' \
    > "$tmp/arr.json"
rg_equal "an array of tasks: 202" \
    "$(rg_req POST /v1/tasks -H "$A" --data-binary @"$tmp/arr.json")" 202
rg_check "  one answer per task, in order, the bad one saying why" \
    jq -e '.accepted == 2 and (.tasks | length) == 3 and
           .tasks[0].id == "arr1" and .tasks[1].id == "arr2" and
           (.tasks[2].error.message | test("input"))' "$tmp/body"

printf '{"id":"l1","input":"x"}\n\n{"id":"l2","input":"y"}\n' > "$tmp/l.jsonl"
rg_equal "JSONL: 202" \
    "$(rg_req POST /v1/tasks -H "$A" --data-binary @"$tmp/l.jsonl")" 202
rg_check "  both taken" \
    jq -e '.accepted == 2 and (.tasks | map(.id)) == ["l1","l2"]' \
    "$tmp/body"

# past max_body (64k): a JSON 413
head -c 70000 /dev/zero | tr '\0' 'a' > "$tmp/big"
rg_equal "a body past max_body: 413" \
    "$(rg_req POST /v1/tasks -H "$A" --data-binary @"$tmp/big")" 413
rg_check "  a JSON error" is_error

# Idempotency-Key: the first answer again, and nothing run twice
rg_equal "a submit with an Idempotency-Key: 202" \
    "$(rg_req POST /v1/tasks -H "$A" -H "Idempotency-Key: k-1" -d '{"input":"idem"}')" 202
first=$(jq -r .id "$tmp/body")
rg_equal "its retry: the same answer" \
    "$(rg_req POST /v1/tasks -H "$A" -H "Idempotency-Key: k-1" -d '{"input":"idem"}'; \
       jq -r .id "$tmp/body")" "202$first"
rg_equal "another key: another task" \
    "$(rg_req POST /v1/tasks -H "$A" -H "Idempotency-Key: k-2" -d '{"input":"idem"}'; \
       jq -r '.id == "'"$first"'"' "$tmp/body")" "202false"

# --- cancel --------------------------------------------------------------

rg_req POST /v1/tasks -H "$A" -d '{"id":"c1","agent":"slow","input":"x"}' \
    > /dev/null
sleep 0.3
rg_equal "DELETE a running task: 202" "$(rg_req DELETE /v1/tasks/c1 -H "$A")" \
    202
i=0
while ! { rg_req GET /v1/tasks/c1 -H "$A" > /dev/null;
          jq -e '.status == "cancelled"' "$tmp/body" > /dev/null; } \
      && [ $i -lt 50 ]; do
    sleep 0.1
    i=$((i + 1))
done
rg_check "  it ends cancelled, saying why (reason)" \
    jq -e '.status == "cancelled" and (.error | test("API")) and (.reason | test("API"))' "$tmp/body"
rg_equal "DELETE an ended one: 409" "$(rg_req DELETE /v1/tasks/c1 -H "$A")" 409

# --- the OpenAI-compatible face -------------------------------------------

rg_equal "a chat completion: 200" \
    "$(rg_req POST /v1/chat/completions -H "$A" \
       -d '{"model":"a","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}')" 200
rg_check "  a chat.completion with the answer and the usage" \
    jq -e '.object == "chat.completion" and .model == "a" and
           .choices[0].message.role == "assistant" and
           (.choices[0].message.content | test("Final answer")) and
           .choices[0].finish_reason == "stop" and
           .usage.total_tokens == .usage.prompt_tokens +
                                  .usage.completion_tokens and
           .reagent.tool_calls == 1' "$tmp/body"

curl -sN "$U/v1/chat/completions" -H "$A" -o "$tmp/sse" -D "$tmp/sse.h" \
    -d '{"model":"a","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}'
rg_expect "streamed: text/event-stream" "$tmp/sse.h" \
    "^Content-Type: text/event-stream"
sed -n 's/^data: //p' "$tmp/sse" | grep -v '^\[DONE\]' > "$tmp/chunks"
rg_check "  chunks: the role, the answer, the finish_reason, the usage" \
    jq -es '.[0].choices[0].delta.role == "assistant" and
            (map(.choices[0].delta.content // "") | add | test("Final")) and
            (map(.choices[0].finish_reason // empty) == ["stop"]) and
            (.[-1].usage.total_tokens > 0) and
            all(.object == "chat.completion.chunk")' "$tmp/chunks"
rg_equal "  and [DONE] last" "$(grep '^data:' "$tmp/sse" | tail -n 1)" \
    "data: [DONE]"

# the caller's trace goes on: its trace id on the agent's model calls
TRACE=4bf92f3577b34da6a3ce929d0e0e4736
curl -s -o "$tmp/body" "$U/v1/chat/completions" -H "$A" \
    -H "traceparent: 00-$TRACE-00f067aa0ba902b7-01" \
    -d '{"model":"a","messages":[{"role":"user","content":"traced chat"}]}'
rg_equal "a chat's traceparent reaches both of its model calls" \
    "$(jq -r 'select(.body.messages[]?.content == "traced chat") | .traceparent' \
       "$tmp/model.log" | grep -c "^00-$TRACE-")" 2
TRACE2=0af7651916cd43dd8448eb211c80319c
rg_req POST /v1/tasks -H "$A" -H "traceparent: 00-$TRACE2-b7ad6b7169203331-01" \
    -d '{"id":"tr1","input":"traced task"}' > /dev/null
rg_until 5 '[ "$(grep -c "00-$TRACE2-" "$tmp/model.log")" -ge 2 ]'
rg_equal "  and a task's too" "$(grep -c "00-$TRACE2-" "$tmp/model.log")" 2

# a stream longer than client_timeout (2 s): the client reads, it does
# not send, and that is not a timeout
curl -sN "$U/v1/chat/completions" -H "$A" -o "$tmp/slow.sse" \
    -d '{"model":"slow","stream":true,"messages":[{"role":"user","content":"x"}]}'
rg_equal "a 6 s stream outlives client_timeout 2s, to [DONE]" \
    "$(grep '^data:' "$tmp/slow.sse" | tail -n 1)" "data: [DONE]"

rg_equal "an unknown model: 404" \
    "$(rg_req POST /v1/chat/completions -H "$A" -d '{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}')" 404
rg_check "  model_not_found" jq -e '.error.code == "model_not_found"' \
    "$tmp/body"
rg_equal "a tool message: 400" \
    "$(rg_req POST /v1/chat/completions -H "$A" -d '{"model":"a","messages":[{"role":"tool","content":"x"}]}')" 400
rg_equal "no messages: 400" \
    "$(rg_req POST /v1/chat/completions -H "$A" -d '{"model":"a","messages":[]}')" 400
rg_equal "request tools: 400" \
    "$(rg_req POST /v1/chat/completions -H "$A" -d '{"model":"a","tools":[{"type":"function"}],"messages":[{"role":"user","content":"x"}]}')" 400

# a client that leaves a slow chat cancels its session
curl -s -m 1 "$U/v1/chat/completions" -H "$A" -o /dev/null \
    -d '{"model":"slow","messages":[{"role":"user","content":"x"}]}'
rg_wait_for "$tmp/error.log" "client went away"
rg_expect "a chat whose client left is cancelled" "$tmp/error.log" \
    "client went away"

# --- slow clients --------------------------------------------------------

# half a request line, then nothing: cut after client_timeout (2 s)
python3 - "$hport" > "$tmp/slow.out" 2>&1 <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
t = time.time()
s.settimeout(10)
try:
    d = s.recv(100)
except Exception as e:
    d = b"timeout"
print("closed after %.1f s: %r" % (time.time() - t, d))
PY
slow=$!
pids="$pids $slow"
sleep 0.5
rg_equal "a slow client does not hold the others" "$(rg_req GET /healthz)" 200
wait $slow
rg_expect "a client that stops sending is cut by client_timeout" \
    "$tmp/slow.out" "closed after [1-4]\.[0-9] s: b''"

# headers past max_header (16k by default): libevent answers them itself,
# before any handler of ours, with its 400 and an HTML page (README says
# so; a change of libevent shows here)
big=$(head -c 20000 /dev/zero | tr '\0' 'x')
rg_equal "a header past max_header: libevent's 400" \
    "$(curl -s -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' "$U/healthz" \
       -H "X-Big: $big")" 400
rg_expect "  its page, not the API's JSON" "$tmp/hdr" "^Content-Type: text/html"
rg_check "  (no JSON error)" sh -c "! jq -e .error '$tmp/body' >/dev/null 2>&1"
i=0
: > "$tmp/many.h"
while [ $i -lt 200 ]; do
    printf 'X-H%d: %0100d\n' $i 0 >> "$tmp/many.h"
    i=$((i + 1))
done
rg_equal "  200 headers of 100 bytes, past it together: 400 too" \
    "$(curl -s -o /dev/null -w '%{http_code}' "$U/healthz" -H @"$tmp/many.h")" \
    400
rg_equal "  a request line past it: 400 too" \
    "$(curl -s -o /dev/null -w '%{http_code}' "$U/healthz?q=$big")" 400
head -n 100 "$tmp/many.h" > "$tmp/some.h"
rg_equal "  100 of them (11k), under it: answered" \
    "$(rg_req GET /healthz -H @"$tmp/some.h")" 200

# --- metrics --------------------------------------------------------------

# metric NAME{LABELS}: its value in $tmp/metrics (0 when absent)
metric() {
    awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' "$tmp/metrics"
}

rg_equal "/metrics needs the token on the API port" "$(rg_req GET /metrics)" 401
rg_equal "/metrics with it: 200" \
    "$(curl -s -o "$tmp/metrics" -w '%{http_code}' "$U/metrics" -H "$A")" 200
rg_check "  the text parses as Prometheus exposition format" \
    sh tests/lib/rg_prom_check.sh "$tmp/metrics"
done1=$(metric 'reagent_sessions_finished_total{status="done"}')
calls1=$(metric 'reagent_model_calls_total{upstream="m",outcome="ok"}')
rg_check "  the tasks so far are counted (done $done1, model calls $calls1)" \
    test "$done1" -ge 8 -a "$calls1" -ge 16
rg_check "  the API's requests by route and code" \
    grep -q 'reagent_http_requests_total{method="POST",route="/v1/tasks",code="202"}' \
    "$tmp/metrics"
rg_check "  tool calls and their latency" \
    grep -q 'reagent_tool_call_duration_seconds_bucket{tool="calc",le="+Inf"}' \
    "$tmp/metrics"
rg_check "  open fds and memory" \
    grep -q '^reagent_resident_memory_bytes{worker="0"} [1-9]' "$tmp/metrics"

rg_req POST /v1/tasks -H "$A" -d '{"id":"mv","input":"x"}' > /dev/null
i=0
while ! { rg_req GET /v1/tasks/mv -H "$A" > /dev/null;
          jq -e '.status == "done"' "$tmp/body" > /dev/null; } \
      && [ $i -lt 50 ]; do
    sleep 0.1
    i=$((i + 1))
done
curl -s -o "$tmp/metrics" "http://127.0.0.1:$mtport/metrics"
rg_check "metrics_listen answers /metrics without a token" \
    grep -q '^reagent_sessions_finished_total' "$tmp/metrics"
rg_equal "  the values moved as a task ran" \
    "$(metric 'reagent_sessions_finished_total{status="done"}')" \
    "$((done1 + 1))"
rg_check "  model calls too" \
    test "$(metric 'reagent_model_calls_total{upstream="m",outcome="ok"}')" \
    -eq "$((calls1 + 2))"
rg_equal "metrics_listen answers nothing of the API" \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mtport/v1/agents" -H "$A")" \
    404
rg_equal "  but the probes" \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mtport/healthz")" 200

# --- the access log -------------------------------------------------------

rg_check "the access log: a JSON line per request" \
    jq -es 'length > 40 and all(.request_id and .method and .path and
            (.status | type) == "number" and (.bytes | type) == "number"
            and (.ms | type) == "number")' "$tmp/access.log"
rg_check "  401s and 404s logged too" \
    jq -es 'map(.status) | (index(401) != null) and (index(404) != null)' \
    "$tmp/access.log"
rg_lacks "no token in any log" "$tmp/access.log" "$RG_TEST_TOKEN"
rg_lacks "  nor in the error log" "$tmp/error.log" "$RG_TEST_TOKEN"

# --- reload and drain -----------------------------------------------------

old=$(pgrep -P $master)
# a request in flight across the reload: its answer comes from the old
# worker, which drains
curl -s -o "$tmp/inflight" -w '%{http_code}' "$U/v1/chat/completions" \
    -H "$A" -d '{"model":"slow","messages":[{"role":"user","content":"x"}]}' \
    > "$tmp/inflight.code" &
inflight=$!
sleep 0.5
kill -HUP $master
rg_wait_for "$tmp/error.log" "http: worker .* answers" 2
rg_equal "after a reload the same port answers" "$(rg_req GET /healthz)" 200
wait $inflight
rg_equal "a chat in flight during the reload gets its answer" \
    "$(cat "$tmp/inflight.code")" 200
rg_wait_gone "$old" 10
rg_check "the old worker is gone once drained" sh -c "! kill -0 $old 2>/dev/null"

kill -QUIT $master
rg_wait_gone $master 10
rg_check "QUIT stops the server" sh -c "! kill -0 $master 2>/dev/null"
code=$(curl -s -o /dev/null -w '%{http_code}' "$U/healthz")
rg_equal "  and the port is closed" "$code" 000

# --- without a queue, one worker ----------------------------------------

sed 's/worker_processes 1;/worker_processes 2;/' "$tmp/h.conf" > "$tmp/two.conf"
"$R" -c "$tmp/two.conf" -t > "$tmp/two.out" 2>&1
rg_equal "two workers without a queue: refused" "$?" 1
rg_expect "  saying why, with file:line" "$tmp/two.out" \
    "worker that accepted them.*two.conf:[0-9]+"

cat > "$tmp/noauth.conf" <<CONF
llm m { base_url http://127.0.0.1:1/v1; model m; } agent a { llm m; }
http { listen 127.0.0.1:$hport; auth_token_env RG_NOT_SET_ANYWHERE; }
CONF
"$R" -c "$tmp/noauth.conf" -t > "$tmp/noauth.out" 2>&1
rg_equal "a token variable that is not set: refused" "$?" 1
rg_expect "  naming it" "$tmp/noauth.out" "RG_NOT_SET_ANYWHERE.*noauth.conf:2"

cat > "$tmp/badlisten.conf" <<CONF
http { listen nowhere; }
CONF
"$R" -c "$tmp/badlisten.conf" -t > "$tmp/bl.out" 2>&1
rg_expect "a bad listen names what it expects" "$tmp/bl.out" \
    "127.0.0.1:8080.*badlisten.conf:1"

rg_done
