#!/bin/sh
# test_trace.sh: W3C trace context and OpenTelemetry spans (src/trace/,
# src/agent/rg_session_trace.c) with the real binary over loopback HTTP.
# The mock model serves the model and a page for the http tool (GET
# /page) and, in another process, is the OTLP/HTTP collector (POST
# /v1/traces, each body a line of a file). A batch of tasks, one with a
# traceparent, one without, one with an invalid one, asserts: every
# model request and the http tool's request carry a traceparent of their
# task's trace (a fresh valid one where none or an invalid one was
# given), and the collector gets invoke_agent / chat / execute_tool
# spans with the GenAI attributes, linked parent to child, errors as
# error.type and status code 2. With the collector down (nothing
# listening, or answering 503) the batch ends as before and the spans
# are counted dropped, said once. With store redis, a session killed
# while its tool runs and resumed goes on with the same trace. Under
# `reagent serve` (the queue and the HTTP API): a traceparent sent with
# POST /v1/tasks goes through Redis to the worker's model call, the
# worker exports the task's spans, and /metrics counts them in
# reagent_trace_spans_exported_total; with the collector gone, in
# reagent_trace_spans_dropped_total.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need jq

A=4bf92f3577b34da6a3ce929d0e0e4736
P=00f067aa0ba902b7

rg_mock c --otlp-log "$tmp/otlp.log" --request-log "$tmp/page.log"
cport=$port

cat > "$tmp/script.json" <<JSON
[{"message":{"tool_calls":[
   {"id":"call_h","name":"http_get","arguments":{"url":"http://127.0.0.1:$cport/page"}},
   {"id":"call_x","name":"http_get","arguments":{"url":"http://example.com/"}}]}},
 {"message":{"content":"fetched"}}]
JSON

rg_mock m --script "$tmp/script.json" --request-log "$tmp/model.log"
mport=$port
rg_mock f --fault 401 --fault-count 1000
fport=$port

cat > "$tmp/t.conf" <<CONF
load_module $(cd "$B" && pwd)/modules/http.so;
module http { allow_hosts 127.0.0.1; allow_private on; }
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1; }
llm f { base_url http://127.0.0.1:$fport/v1; model mock-f; }
agent a { llm m; tools http_get; }
agent f { llm f; }
otlp_endpoint http://127.0.0.1:$cport/v1/traces;
otlp_service_name trace-test;
otlp_flush 100ms;
CONF

cat > "$tmp/tasks.jsonl" <<JSON
{"id":"t1","input":"fetch one","traceparent":"00-$A-$P-01"}
{"id":"t2","input":"fetch two"}
{"id":"t3","input":"fetch three","traceparent":"00-00000000000000000000000000000000-$P-01"}
{"id":"t4","agent":"f","input":"fail four","traceparent":"00-$A-$P-01"}
JSON

timeout 60 "$R" -c "$tmp/t.conf" batch -a a --no-progress \
    -o "$tmp/res.jsonl" "$tmp/tasks.jsonl" > "$tmp/b.out" 2> "$tmp/b.err"
rg_equal "the batch ends (one task failed: exit 2)" "$?" 2
rg_equal "the tasks with and without a traceparent end done" \
    "$(jq -r 'select(.id != "t4") | .status' "$tmp/res.jsonl" | sort -u)" done
rg_equal "an invalid traceparent does not make a task invalid" \
    "$(jq -r 'select(.id == "t3") | .status' "$tmp/res.jsonl")" done
rg_lacks "nothing of the collector's answers on stdout" "$tmp/b.out" '\{\}'

# the trace of each task, from its model requests
jq -r '[(.body.messages[] | select(.role == "user") | .content), .traceparent // "none"] | @tsv' \
    "$tmp/model.log" > "$tmp/tp.tsv"
rg_equal "the model got two requests per task" "$(wc -l < "$tmp/tp.tsv")" 6
rg_lacks "every model request carried a traceparent" "$tmp/tp.tsv" 'none$'
if cut -f 2 "$tmp/tp.tsv" | grep -Evq '^00-[0-9a-f]{32}-[0-9a-f]{16}-01$'; then
    rg_fail "each one valid (00, lowercase hex, sampled)"
    sed 's/^/#   /' "$tmp/tp.tsv"
else
    rg_ok "each one valid (00, lowercase hex, sampled)"
fi

trace_of() {
    awk -F'\t' -v t="$1" '$1 == t { split($2, f, "-"); print f[2] }' \
        "$tmp/tp.tsv" | sort -u
}
t1=$(trace_of "fetch one")
t2=$(trace_of "fetch two")
t3=$(trace_of "fetch three")
rg_equal "the task's trace id goes on each of its model calls" "$t1" "$A"
rg_check "a task without one gets a trace of its own" \
    sh -c "[ \$(echo '$t2' | wc -l) -eq 1 ] && [ -n '$t2' ] && [ '$t2' != '$A' ]"
rg_check "an invalid one is replaced by a new valid trace" \
    sh -c "[ -n '$t3' ] && [ '$t3' != '$A' ] && [ '$t3' != '$t2' ] && [ '$t3' != 00000000000000000000000000000000 ]"
rg_check "each model call of a task is a span of its own" \
    test "$(awk -F'\t' '$1 == "fetch one" { split($2, f, "-"); print f[3] }' "$tmp/tp.tsv" | sort -u | wc -l)" -eq 2

# the http tool's request
rg_equal "the http tool fetched the page once per task" \
    "$(jq -r 'select(.path == "/page") | .traceparent' "$tmp/page.log" | grep -c .)" 3
rg_expect "its request carried the task's trace" "$tmp/page.log" \
    "\"traceparent\":\"00-$A-[0-9a-f]{16}-01\""

# the spans the collector got
rg_wait_for "$tmp/otlp.log" . 1
jq -c '.resourceSpans[] | .scopeSpans[].spans[]' "$tmp/otlp.log" > "$tmp/spans.jsonl"
rg_equal "the resource names the service" \
    "$(jq -r '[.resourceSpans[].resource.attributes[] | select(.key == "service.name") | .value.stringValue] | unique | .[]' "$tmp/otlp.log")" \
    trace-test

span() {  # span TRACE NAME: its spans as JSON lines
    jq -c --arg t "$1" --arg n "$2" 'select(.traceId == $t and .name == $n)' \
        "$tmp/spans.jsonl"
}
attr() {  # attr KEY: the value of a span's attribute (stdin)
    jq -r --arg k "$1" '.attributes[] | select(.key == $k) | .value | (.stringValue // .intValue)'
}

inv=$(span "$A" "invoke_agent a")
rg_equal "t1: one invoke_agent span" "$(echo "$inv" | grep -c .)" 1
inv_id=$(echo "$inv" | jq -r .spanId)
rg_equal "it is a child of the caller's span" \
    "$(echo "$inv" | jq -r .parentSpanId)" "$P"
rg_equal "with gen_ai.operation.name invoke_agent" \
    "$(echo "$inv" | attr gen_ai.operation.name)" invoke_agent
rg_equal "and gen_ai.agent.name" "$(echo "$inv" | attr gen_ai.agent.name)" a
rg_check "and its tokens" test "$(echo "$inv" | attr gen_ai.usage.input_tokens)" -gt 0
rg_equal "and no error" "$(echo "$inv" | jq -r '.status.code // 0')" 0

chat=$(span "$A" "chat mock-1")
rg_equal "t1: two chat spans" "$(echo "$chat" | grep -c .)" 2
rg_equal "both children of invoke_agent" \
    "$(echo "$chat" | jq -r .parentSpanId | sort -u)" "$inv_id"
rg_equal "each one's id the traceparent of a model request" \
    "$(echo "$chat" | jq -r .spanId | sort)" \
    "$(awk -F'\t' '$1 == "fetch one" { split($2, f, "-"); print f[3] }' "$tmp/tp.tsv" | sort)"
rg_equal "gen_ai.operation.name chat" \
    "$(echo "$chat" | attr gen_ai.operation.name | sort -u)" chat
rg_equal "gen_ai.request.model" \
    "$(echo "$chat" | attr gen_ai.request.model | sort -u)" mock-1
rg_check "gen_ai.usage.input_tokens and output_tokens" \
    sh -c "[ \$(echo '$chat' | jq -r '.attributes[] | select(.key == \"gen_ai.usage.input_tokens\") | .value.intValue' | awk '\$1 > 0' | wc -l) -eq 2 ] && [ \$(echo '$chat' | jq -r '.attributes[] | select(.key == \"gen_ai.usage.output_tokens\") | .value.intValue' | awk '\$1 > 0' | wc -l) -eq 2 ]"
rg_equal "kind client, times as strings in order" \
    "$(echo "$chat" | jq -r '[.kind, (.startTimeUnixNano | type), ((.endTimeUnixNano | tonumber) >= (.startTimeUnixNano | tonumber))] | @csv' | sort -u)" \
    '3,"string",true'

tool=$(span "$A" "execute_tool http_get")
rg_equal "t1: two execute_tool spans" "$(echo "$tool" | grep -c .)" 2
rg_equal "children of invoke_agent" \
    "$(echo "$tool" | jq -r .parentSpanId | sort -u)" "$inv_id"
ok=$(echo "$tool" | jq -c 'select(.attributes[] | select(.key == "gen_ai.tool.call.id") | .value.stringValue == "call_h")')
bad=$(echo "$tool" | jq -c 'select(.attributes[] | select(.key == "gen_ai.tool.call.id") | .value.stringValue == "call_x")')
rg_equal "gen_ai.operation.name execute_tool, gen_ai.tool.name" \
    "$(echo "$ok" | attr gen_ai.operation.name),$(echo "$ok" | attr gen_ai.tool.name)" \
    execute_tool,http_get
rg_expect "the page request's parent is the call's span" "$tmp/page.log" \
    "\"traceparent\":\"00-$A-$(echo "$ok" | jq -r .spanId)-01\""
rg_equal "a call that failed has error.type and status 2" \
    "$(echo "$bad" | attr error.type),$(echo "$bad" | jq -r .status.code)" \
    tool_error,2
rg_equal "one that did not has neither" \
    "$(echo "$ok" | attr error.type),$(echo "$ok" | jq -r '.status.code // 0')" ,0

rg_equal "t2: its invoke_agent span is a root" \
    "$(span "$t2" "invoke_agent a" | jq -r '.parentSpanId // "root"')" root
rg_equal "t2: with its chat and tool spans" \
    "$(jq -r --arg t "$t2" 'select(.traceId == $t) | .name' "$tmp/spans.jsonl" | sort | uniq -c | awk '{ print $1 }' | tr '\n' ' ')" \
    "2 2 1 "
rg_equal "t3: a new root trace" \
    "$(span "$t3" "invoke_agent a" | jq -r '.parentSpanId // "root"')" root

# a model call that failed
fchat=$(span "$A" "chat mock-f")
rg_equal "a failed model call: error.type, status 2" \
    "$(echo "$fchat" | attr error.type),$(echo "$fchat" | jq -r .status.code)" fatal,2
finv=$(span "$A" "invoke_agent f")
rg_equal "and its session's span says how it ended" \
    "$(echo "$finv" | attr error.type),$(echo "$finv" | jq -r .status.code)" failed,2
rg_expect "with the reason as the status message" "$tmp/spans.jsonl" \
    '"message":"model call failed \(fatal, HTTP 401\)'

rg_lacks "no export failure was logged" "$tmp/b.err" 'cannot export spans'

# the collector down: nothing listens there
dport=$(rg_free_port)
sed "s|^otlp_endpoint .*|otlp_endpoint http://127.0.0.1:$dport/v1/traces;|" \
    "$tmp/t.conf" > "$tmp/d.conf"
head -n 2 "$tmp/tasks.jsonl" > "$tmp/two.jsonl"
: > "$tmp/model.log"
timeout 60 "$R" -c "$tmp/d.conf" batch -a a --no-progress \
    -o "$tmp/d.jsonl" "$tmp/two.jsonl" > "$tmp/d.out" 2> "$tmp/d.err"
rg_equal "collector down: the batch ends as before" "$?" 0
rg_equal "its tasks done" "$(jq -r .status "$tmp/d.jsonl" | sort -u)" done
rg_equal "the model requests still carry the trace" \
    "$(jq -r 'select(.traceparent) | .traceparent' "$tmp/model.log" | cut -d- -f2 | grep -c "^$A$")" 2
rg_equal "the outage is said once, not per batch" \
    "$(grep -c 'cannot export spans to' "$tmp/d.err")" 1
rg_expect "every span is counted dropped" "$tmp/d.err" \
    'spans: 0 exported, 10 dropped'

# the collector answers 503
rg_mock c503 --otlp-log "$tmp/otlp503.log" --otlp-status 503
sed "s|^otlp_endpoint .*|otlp_endpoint http://127.0.0.1:$port/v1/traces;|" \
    "$tmp/t.conf" > "$tmp/e.conf"
timeout 60 "$R" -c "$tmp/e.conf" batch -a a --no-progress \
    -o "$tmp/e.jsonl" "$tmp/two.jsonl" > "$tmp/e.out" 2> "$tmp/e.err"
rg_equal "collector refusing: the batch ends as before" "$?" 0
rg_expect "its status is said" "$tmp/e.err" 'cannot export spans to .*: HTTP 503'
rg_expect "and the spans counted dropped" "$tmp/e.err" \
    'spans: 0 exported, 10 dropped'

# resumed: the same trace goes on
if ! command -v redis-server >/dev/null; then
    rg_ok "a resumed session keeps its trace # skip no redis-server"
    rg_done
    exit $?
fi

rg_redis r
cat > "$tmp/slow.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"slow","name":"count","arguments":{"key":"ks","ms":4000}}]}},
 {"message":{"content":"counted"}}]
JSON
rg_mock s --script "$tmp/slow.json" --request-log "$tmp/slow.log"
: > "$tmp/otlp.log"
cat > "$tmp/r.conf" <<CONF
load_module $(cd "$B" && pwd)/tests/plugins/count.so;
module count { redis $redis_sock; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { llm m; tools count; tool_timeout 30s; }
store redis { server unix:$redis_sock; }
lease_ttl 1s;
otlp_endpoint http://127.0.0.1:$cport/v1/traces;
otlp_flush 100ms;
CONF
echo "{\"id\":\"r1\",\"input\":\"count\",\"traceparent\":\"00-$A-$P-01\"}" \
    > "$tmp/r.jsonl"
"$R" -c "$tmp/r.conf" batch -a a --no-progress -o "$tmp/r.out" \
    "$tmp/r.jsonl" > /dev/null 2> "$tmp/r.err" &
kpid=$!
pids="$pids $kpid"
rg_until 10 '[ "$(rg_rcli get count:ks)" = 1 ]'
sleep 0.3
kill -9 $kpid
wait $kpid 2>/dev/null

sid=$(rg_rcli --scan --pattern 'rg:{*}:meta' | sed 's/^rg:{\(.*\)}:meta$/\1/' | head -n 1)
meta=$(rg_rcli hget "rg:{$sid}:meta" trace)
if echo "$meta" | grep -Eq "^$A-$P-[0-9a-f]{16}\$"; then
    rg_ok "the store keeps the session's trace"
else
    rg_fail "the store keeps the session's trace"
    echo "#   meta trace: $meta"
    sed 's/^/#   /' "$tmp/r.err" | head -n 10
fi
first=${meta##*-}
first=${first:-none}

: > "$tmp/slow.log"
timeout 60 "$R" -c "$tmp/r.conf" resume "$sid" > "$tmp/rr.out" 2> "$tmp/rr.err"
rg_equal "the resumed session ends done" "$?" 0
rg_equal "its model call carries the same trace" \
    "$(jq -r '.traceparent' "$tmp/slow.log" | cut -d- -f2 | sort -u)" "$A"
rg_wait_for "$tmp/otlp.log" 'invoke_agent a'
rinv=$(jq -c '.resourceSpans[].scopeSpans[].spans[] | select(.name == "invoke_agent a")' "$tmp/otlp.log" | tail -n 1)
rg_equal "a new invoke_agent span of the same trace, under the same parent" \
    "$(echo "$rinv" | jq -r '[.traceId, .parentSpanId] | join(" ")')" "$A $P"
rg_equal "linked to the span it resumes" \
    "$(echo "$rinv" | jq -r '.links[0].spanId')" "$first"
rg_check "a span of its own" test "$(echo "$rinv" | jq -r .spanId)" != "$first"

# --- serve: the API's task through the queue --------------------------------

if ! command -v curl >/dev/null; then
    rg_ok "serve: the API's task through the queue # skip no curl"
    rg_done
    exit $?
fi

S=0af7651916cd43dd8448eb211c80319c
rg_mock_answer q "served" --request-log "$tmp/q.log"
qport=$port
rg_mock sc --otlp-log "$tmp/sotlp.log"
scport=$port
scpid=${pids##* }
hport=$(rg_free_port)
cat > "$tmp/s.conf" <<CONF
worker_processes 1;
pid $tmp/serve.pid;
error_log $tmp/serve.log info;
llm q { base_url http://127.0.0.1:$qport/v1; model mock-q; }
agent a { llm q; }
store redis { server unix:$redis_sock; }
lease_ttl 1s;
queue { claim_idle 2s; block 500ms; }
http { listen 127.0.0.1:$hport; }
otlp_endpoint http://127.0.0.1:$scport/v1/traces;
otlp_service_name serve-test;
otlp_flush 100ms;
CONF
rg_serve "$tmp/s.conf" "$tmp/serve.out"
rg_wait_for "$tmp/serve.log" "reading the queue"
U=http://127.0.0.1:$hport

# metric NAME: its value in /metrics now
metric() {
    curl -s "$U/metrics" | awk -v k="$1" '$1 == k { print $2 }'
}
# until_metric NAME MIN: up to 10 s until NAME is MIN or more
until_metric() {
    um_i=0
    while [ "$(metric "$1")" -lt "$2" ] 2>/dev/null \
          || [ -z "$(metric "$1")" ]; do
        [ $um_i -lt 100 ] || return 1
        sleep 0.1
        um_i=$((um_i + 1))
    done
}

rg_equal "serve: a task with a traceparent through the API: 202" \
    "$(rg_req POST /v1/tasks -H "traceparent: 00-$S-$P-01" \
       -d '{"id":"s1","input":"serve it"}')" 202
rg_check "  it runs from the queue and ends done" rg_wait_task s1 done
rg_equal "  its model call carries the trace it was given" \
    "$(jq -r '.traceparent' "$tmp/q.log" | cut -d- -f2)" "$S"
qspan=$(jq -r '.traceparent' "$tmp/q.log" | cut -d- -f3)

rg_wait_for "$tmp/sotlp.log" "$S" 2
jq -c '.resourceSpans[] | .scopeSpans[].spans[]' "$tmp/sotlp.log" \
    > "$tmp/sspans.jsonl"
sinv=$(jq -c --arg t "$S" \
       'select(.traceId == $t and .name == "invoke_agent a")' \
       "$tmp/sspans.jsonl")
rg_equal "  the worker exports its invoke_agent span, the caller's child" \
    "$(echo "$sinv" | jq -r .parentSpanId)" "$P"
rg_equal "  and its chat span, the model request's parent" \
    "$(jq -r --arg t "$S" 'select(.traceId == $t and .name == "chat mock-q")
       | .spanId' "$tmp/sspans.jsonl")" "${qspan:-none}"
rg_equal "  as the service it is configured as" \
    "$(jq -r '[.resourceSpans[].resource.attributes[]
       | select(.key == "service.name") | .value.stringValue] | unique
       | .[]' "$tmp/sotlp.log")" serve-test
rg_check "/metrics: reagent_trace_spans_exported_total counts them (2)" \
    until_metric reagent_trace_spans_exported_total 2
rg_equal "  reagent_trace_spans_dropped_total 0" \
    "$(metric reagent_trace_spans_dropped_total)" 0
exported=$(metric reagent_trace_spans_exported_total)

# the collector goes: the next task's spans are dropped, and counted
kill "$scpid"
wait "$scpid" 2>/dev/null
rg_equal "collector gone: a task still runs: 202" \
    "$(rg_req POST /v1/tasks -d '{"id":"s2","input":"serve more"}')" 202
rg_check "  and ends done" rg_wait_task s2 done
rg_check "  reagent_trace_spans_dropped_total counts its spans (2)" \
    until_metric reagent_trace_spans_dropped_total 2
rg_equal "  reagent_trace_spans_exported_total as it was" \
    "$(metric reagent_trace_spans_exported_total)" "$exported"
rg_equal "  the outage said once" \
    "$(grep -c 'cannot export spans to' "$tmp/serve.log")" 1

rg_done
