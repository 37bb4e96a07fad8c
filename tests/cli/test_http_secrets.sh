#!/bin/sh
# test_http_secrets.sh: no API key leaves through the HTTP API. A
# provider whose 401 quotes the key, and a model that quotes it in a
# tool call's arguments and in its answer: GET /v1/tasks/{id}, the
# task's events over SSE and POST /v1/chat/completions (plain and
# streamed) show it as "sk-…last4" (so it did reach the answer) and
# never whole.
#
# Run from the repository root by tests/run.sh; B names the build folder.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need jq curl

KEY="sk-http-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')-Q7w3"
MASK="sk-…$(printf '%s' "$KEY" | tail -c 4)"
export RG_TEST_KEY="$KEY"

# a provider that refuses the key, quoting it
cat > "$tmp/k401.json" <<EOF
[{"status":401,"body":{"error":{"message":"Incorrect API key provided: $KEY. You can find your API key at https://example.com.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}]
EOF
rg_mock k401 --script "$tmp/k401.json"
kport=$port

# a model that puts the key in a tool call, then in its answer
cat > "$tmp/quote.json" <<EOF
[{"message":{"content":null,"tool_calls":[{"name":"calc","arguments":{"expression":"$KEY"}}]}},
 {"message":{"content":"the key is $KEY"}}]
EOF
rg_mock quote --script "$tmp/quote.json"
qport=$port

hport=$(rg_free_port)
M=$(cd "$B" && pwd)/modules

cat > "$tmp/s.conf" <<CONF
load_module $M/calc.so;
worker_processes 1;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm k401 { base_url http://127.0.0.1:$kport/v1; model mock-1;
           api_key_env RG_TEST_KEY; max_retries 0; }
llm quote { base_url http://127.0.0.1:$qport/v1; model mock-1;
            api_key_env RG_TEST_KEY; }
agent a401 { llm k401; }
agent quote { llm quote; tools calc; }
http { listen 127.0.0.1:$hport; access_log $tmp/access.log; }
CONF

rg_serve "$tmp/s.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "http: worker .* answers"
U=http://127.0.0.1:$hport

# jqe FILTER FILE: jq -e, quiet
jqe() {
    jq -e "$@" > /dev/null
}

# masked WHAT FILE: FILE shows the key masked, and nowhere whole
masked() {
    rg_expect "$1: masked" "$2" "$MASK"
    rg_lacks "  and not the key" "$2" "$KEY"
}

# --- the provider's 401 ---------------------------------------------------

rg_equal "a task whose provider refuses the key: 202" \
    "$(rg_req POST /v1/tasks -d '{"id":"k1","agent":"a401","input":"x"}')" 202
rg_check "  it ends failed" rg_wait_task k1 failed
cp "$tmp/body" "$tmp/k1.json"
rg_check "  its reason quotes the provider" \
    jqe '.reason | test("Incorrect API key provided: sk-…")' "$tmp/k1.json"
masked "GET /v1/tasks/k1" "$tmp/k1.json"

curl -sN -m 10 -o "$tmp/k1.sse" "$U/v1/tasks/k1/events"
rg_expect "its events end with final" "$tmp/k1.sse" "^event: final"
masked "GET /v1/tasks/k1/events" "$tmp/k1.sse"

rg_equal "a chat completion on it: 502" \
    "$(rg_req POST /v1/chat/completions \
       -d '{"model":"a401","messages":[{"role":"user","content":"x"}]}')" 502
cp "$tmp/body" "$tmp/chat401.json"
rg_check "  an agent_error" jqe '.error.type == "agent_error"' \
    "$tmp/chat401.json"
masked "the chat completion's error" "$tmp/chat401.json"

curl -sN -m 10 -o "$tmp/chat401.sse" "$U/v1/chat/completions" \
    -d '{"model":"a401","stream":true,"messages":[{"role":"user","content":"x"}]}'
rg_equal "  streamed, it ends with [DONE]" \
    "$(grep '^data:' "$tmp/chat401.sse" | tail -n 1)" "data: [DONE]"
masked "the streamed chat's error" "$tmp/chat401.sse"

# --- a model that quotes the key ------------------------------------------

rg_equal "a task whose model quotes the key: 202" \
    "$(rg_req POST /v1/tasks -d '{"id":"q1","agent":"quote","input":"x"}')" 202
rg_check "  it ends done" rg_wait_task q1 done
cp "$tmp/body" "$tmp/q1.json"
rg_check "  its answer quotes the key, masked" \
    jqe '.answer == "the key is '"$MASK"'"' "$tmp/q1.json"
rg_lacks "  and not the key" "$tmp/q1.json" "$KEY"

curl -sN -m 10 -o "$tmp/q1.sse" "$U/v1/tasks/q1/events"
sed -n 's/^data: //p' "$tmp/q1.sse" > "$tmp/q1.data"
rg_check "its events: the tool call's arguments are masked" \
    jqe -s 'map(select(.type == "tool_call_started")) | length == 1 and
            (.[0] | tostring | test("sk-…"))' "$tmp/q1.data"
masked "GET /v1/tasks/q1/events" "$tmp/q1.sse"

rg_equal "a chat completion whose model quotes the key: 200" \
    "$(rg_req POST /v1/chat/completions \
       -d '{"model":"quote","messages":[{"role":"user","content":"x"}]}')" 200
cp "$tmp/body" "$tmp/chatq.json"
rg_check "  the answer, masked" \
    jqe '.choices[0].message.content == "the key is '"$MASK"'"' \
    "$tmp/chatq.json"
rg_lacks "  and not the key" "$tmp/chatq.json" "$KEY"

curl -sN -m 10 -o "$tmp/chatq.sse" "$U/v1/chat/completions" \
    -d '{"model":"quote","stream":true,"messages":[{"role":"user","content":"x"}]}'
rg_expect "streamed: the tool call as a comment, masked" "$tmp/chatq.sse" \
    "^: tool_call_started .*sk-…"
masked "the streamed chat" "$tmp/chatq.sse"

rg_lacks "the key is in no log" "$tmp/error.log" "$KEY"
rg_lacks "  nor in the access log" "$tmp/access.log" "$KEY"

kill -QUIT $master
rg_done
