#!/bin/sh
# test_http_limits.sh: the bounds and ids of the HTTP API that
# test_http.sh does not reach: a worker that holds max_tasks tasks (the
# running and the waiting) answers 429 with a JSON error, to a task and
# to a chat completion, and takes tasks again once one has ended; every
# answer carries X-Request-ID, the client's when it is a plain token,
# else one made (never the client's header smuggled back), and the
# access log line has the same id.
#
# Run from the repository root by tests/run.sh; B names the build folder.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need jq curl

# every answer takes 1.5 s: a task holds its place for a while
rg_mock s --rounds 0 --latency 1500
sport=$port

hport=$(rg_free_port)
export RG_TEST_TOKEN="tok-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"

cat > "$tmp/h.conf" <<CONF
worker_processes 1;
concurrency 1;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
drain_timeout 5s;
llm s { base_url http://127.0.0.1:$sport/v1; model mock-1; }
agent a { llm s; }
http {
    listen 127.0.0.1:$hport;
    auth_token_env RG_TEST_TOKEN;
    max_tasks 2;
    access_log $tmp/access.log;
}
CONF

rg_serve "$tmp/h.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "http: worker .* answers"

U=http://127.0.0.1:$hport
A="Authorization: Bearer $RG_TEST_TOKEN"

# --- max_tasks -----------------------------------------------------------

rg_equal "the first task: 202 (it runs)" \
    "$(rg_req POST /v1/tasks -H "$A" -d '{"id":"t1","input":"one"}')" 202
rg_equal "the second: 202 (it waits: concurrency 1)" \
    "$(rg_req POST /v1/tasks -H "$A" -d '{"id":"t2","input":"two"}')" 202
rg_equal "the third, past max_tasks 2: 429" \
    "$(rg_req POST /v1/tasks -H "$A" -d '{"id":"t3","input":"three"}')" 429
rg_check "  a JSON error that says why" \
    jq -e '.error.code == "too_many_tasks" and
           (.error.message | test("max_tasks"))' "$tmp/body"
rg_equal "  the refused task is not kept" \
    "$(rg_req GET /v1/tasks/t3 -H "$A")" 404
rg_equal "a chat completion, past max_tasks: 429" \
    "$(rg_req POST /v1/chat/completions -H "$A" \
        -d '{"model":"a","messages":[{"role":"user","content":"hi"}]}')" 429
rg_check "  a JSON error in the OpenAI shape" \
    jq -e '.error.code == "too_many_tasks" and
           .error.type == "rate_limit_error"' "$tmp/body"

rg_check "the first task ends" rg_wait_task t1 done -H "$A"
rg_equal "a place is free again: 202" \
    "$(rg_req POST /v1/tasks -H "$A" -d '{"id":"t3","input":"three"}')" 202
for t in t2 t3; do
    rg_check "the accepted task $t ends done" rg_wait_task "$t" done -H "$A"
done

# --- X-Request-ID ----------------------------------------------------------

curl -s -D "$tmp/h1" -o /dev/null -H "$A" -H "X-Request-ID: my-req-42" \
    "$U/v1/agents"
rg_expect "the client's X-Request-ID comes back" "$tmp/h1" \
    '^X-Request-ID: my-req-42'
curl -s -D "$tmp/h2" -o /dev/null -H "$A" "$U/v1/agents"
rg_expect "without one, one is made" "$tmp/h2" '^X-Request-ID: [0-9A-Za-z_-]{8,}'
curl -s -D "$tmp/h3" -o /dev/null -H "$A" \
    -H 'X-Request-ID: evil value; injected=1' "$U/v1/agents"
rg_lacks "a request id that is not a plain token is not sent back" \
    "$tmp/h3" 'evil|injected'
rg_expect "  one is made instead" "$tmp/h3" '^X-Request-ID: [0-9A-Za-z_-]{8,}'
curl -s -D "$tmp/h4" -o /dev/null "$U/v1/agents"
rg_expect "an error answer (401) carries one too" "$tmp/h4" \
    '^X-Request-ID: [0-9A-Za-z_-]{8,}'
sleep 0.3
rg_expect "the access log has the client's request id" "$tmp/access.log" \
    '"my-req-42"'

kill -QUIT "$master"
rg_wait_gone "$master" 10
rg_check "serve ends on QUIT" sh -c "! kill -0 $master 2>/dev/null"

rg_done
