#!/bin/sh
# test_mock_stream.sh: tests of the streamed replies of the mock model
# (tests/mock/rg_mock.c, "stream": true): the event layout, the chunked
# transfer, --stream-chunk, --stream-interleave, --stream-crlf,
# --stream-comments, --stream-no-done, --stream-delay, include_usage, a
# scripted stream_error, faults on streams, a client that leaves
# mid-stream, /stats, and a clean exit on SIGTERM.
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Needs curl; python3, when present, also reassembles the deltas.
# Prints "ok N - what" or "not ok N - what" per check (tests/lib/
# rg_test_lib.sh) and exits 1 if any check failed.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

M=$B/rg_mock


# rg_stream_mock NAME ARGS...: starts a mock, sets port and started
rg_stream_mock() {
    pf=$tmp/$1.port
    log=$tmp/$1.log
    shift
    "$M" --port 0 --port-file "$pf" "$@" > /dev/null 2> "$log" &
    started=$!
    pids="$pids $started"
    rg_until 5 '[ -s "$pf" ]'
    port=$(cat "$pf" 2>/dev/null)
}

# rg_post PORT FILE BODY [CURL ARGS...]: POSTs BODY, the headers go to
# FILE.h, the body to FILE; prints curl's exit code and total time
rg_post() {
    post_port=$1
    post_out=$2
    post_body=$3
    shift 3
    curl -sS -N -D "$post_out.h" -o "$post_out" -w '%{time_total}\n' "$@" \
        -H 'Content-Type: application/json' --data-binary "$post_body" \
        "http://127.0.0.1:$post_port/v1/chat/completions" \
        > "$post_out.t" 2> "$post_out.err"
    echo $?
}

# rg_stat PORT KEY: a number from /stats
rg_stat() {
    curl -sS "http://127.0.0.1:$1/stats" \
        | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"
}

# rg_stop NAME PID: SIGTERM, exit status 0, no sanitizer report
rg_stop() {
    kill "$2"
    wait "$2"
    rc=$?
    pids=$(echo "$pids" | sed "s/ $2\$//; s/ $2 / /")
    rg_equal "$1 exits 0 on SIGTERM" "$rc" 0
    if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' \
        "$tmp/$1.log"
    then
        rg_fail "$1: sanitizer report"
        sed 's/^/#   /' "$tmp/$1.log" | head -40
    fi
}


if [ ! -x "$M" ]; then
    echo "not ok 1 - $M is built (run make first)"
    exit 1
fi

if ! command -v curl >/dev/null 2>&1; then
    echo "SKIPPED: mock stream tests: curl is not installed (deploy/deps.sh installs it)"
    exit 0
fi

USER_MSG='"messages":[{"role":"user","content":"stream me please"}]'
TOOLS='"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{"query":{"type":"string","examples":["the long query string"]}},"required":["query"]}}}]'


# generic mode, default layout

rg_stream_mock plain --calls 2 --quiet
plain_pid=$started
plain_port=$port

if [ -z "$plain_port" ]; then
    rg_fail "the mock starts"
    cat "$tmp/plain.log"
    exit 1
fi

rc=$(rg_post "$plain_port" "$tmp/s1" \
     "{\"model\":\"mock-1\",\"stream\":true,$USER_MSG}")
rg_equal "a stream: curl succeeds" "$rc" 0
rg_check "a stream: 200" grep -q '^HTTP/1.1 200' "$tmp/s1.h"
rg_check "a stream: Content-Type: text/event-stream" \
    grep -qi '^content-type: text/event-stream' "$tmp/s1.h"
rg_check "a stream: chunked" \
    grep -qi '^transfer-encoding: chunked' "$tmp/s1.h"
rg_check "a stream: the first event is the role" \
    sh -c "head -1 '$tmp/s1' | grep -q '^data: {\"id\":\"chatcmpl-[0-9]*\",\"object\":\"chat.completion.chunk\",\"created\":[0-9]*,\"model\":\"mock-1\",\"choices\":\\[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},\"logprobs\":null,\"finish_reason\":null}\\]}'"
rg_check "a stream: events are \"data: ...\" and a blank line" \
    awk 'NR % 2 == 1 && !/^data: / { exit 1 } NR % 2 == 0 && $0 != "" { exit 1 }' "$tmp/s1"
rg_check "a stream: every chunk has id, object, created, model" \
    sh -c "grep '^data: {' '$tmp/s1' | grep -cv '\"object\":\"chat.completion.chunk\",\"created\":[0-9]*,\"model\":\"mock-1\"' | grep -qx 0"
content=$(sed -n 's/.*"delta":{"content":"\([^"]*\)"}.*/\1/p' "$tmp/s1" \
          | tr -d '\n')
rg_equal "a stream: the content in pieces" "$content" \
    "Final answer: stream me please"
rg_check "a stream: pieces of at most 8 bytes" \
    sh -c "sed -n 's/.*\"delta\":{\"content\":\"\\([^\"]*\\)\"}.*/\\1/p' '$tmp/s1' | awk 'length > 8 { exit 1 }'"
rg_has "a stream: the finish chunk" "$tmp/s1" \
    '"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}'
rg_equal "a stream: data: [DONE] last" "$(tail -2 "$tmp/s1" | head -1)" \
    "data: [DONE]"
rg_has_not "a stream: no usage without include_usage" "$tmp/s1" '"usage"'

# the framing itself: the first event is a chunk of its own
curl -sS -N --raw -o "$tmp/raw" -H 'Content-Type: application/json' \
    --data-binary "{\"model\":\"mock-1\",\"stream\":true,$USER_MSG}" \
    "http://127.0.0.1:$plain_port/v1/chat/completions"
rg_check "chunked: the first event alone in the first chunk" \
    awk 'NR == 1 && !/^[0-9a-f]+\r$/ { exit 1 }
         NR == 2 && !/"role":"assistant"/ { exit 1 }
         NR == 5 && !/^[0-9a-f]+\r$/ { exit 1 }
         END { if (NR < 6) exit 1 }' "$tmp/raw"

# tool calls and include_usage
body="{\"model\":\"mock-1\",\"stream\":true,\"stream_options\":{\"include_usage\":true},$USER_MSG,$TOOLS}"
rc=$(rg_post "$plain_port" "$tmp/s2" "$body")
rg_equal "tool calls: curl succeeds" "$rc" 0
rg_has "tool calls: the role delta has content null" "$tmp/s2" \
    '"delta":{"role":"assistant","content":null}'
rg_check "tool calls: a head per call" \
    sh -c "grep -c '\"tool_calls\":\\[{\"index\":[01],\"id\":\"call_[0-9_]*\",\"type\":\"function\",\"function\":{\"name\":\"lookup\",\"arguments\":\"\"}}\\]' '$tmp/s2' | grep -qx 2"
rg_has "tool calls: argument fragments" "$tmp/s2" \
    '"tool_calls":[{"index":1,"function":{"arguments":'
rg_has "tool calls: finish_reason tool_calls" "$tmp/s2" \
    '"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}'
rg_check "include_usage: a usage chunk with no choices before [DONE]" \
    sh -c "tail -4 '$tmp/s2' | head -1 | grep -q '\"choices\":\\[\\],\"usage\":{\"prompt_tokens\":[0-9]*,\"completion_tokens\":20,\"total_tokens\":[0-9]*}}$'"
rg_check "include_usage: \"usage\":null on the other chunks" \
    sh -c "grep '^data: {' '$tmp/s2' | grep -c '\"usage\":null}$' | grep -qx $(($(grep -c '^data: {' "$tmp/s2") - 1))"

curl -sS -o "$tmp/last" "http://127.0.0.1:$plain_port/last_request"
rg_has "/last_request shows the streamed request" "$tmp/last" \
    '"stream_options":{"include_usage":true}'

if command -v python3 >/dev/null 2>&1; then
    curl -sS -o "$tmp/n2" -H 'Content-Type: application/json' \
        --data-binary "{\"model\":\"mock-1\",$USER_MSG,$TOOLS}" \
        "http://127.0.0.1:$plain_port/v1/chat/completions"
    rg_check "tool calls: the deltas add up to the non-streamed calls" \
        python3 -c '
import json, sys
calls = {}
for line in open(sys.argv[1]):
    if not line.startswith("data: {"):
        continue
    for ch in json.loads(line[6:])["choices"]:
        for tc in ch["delta"].get("tool_calls", []):
            c = calls.setdefault(tc["index"], {"id": None, "args": ""})
            c["id"] = tc.get("id", c["id"])
            c["args"] += tc["function"].get("arguments", "")
want = json.load(open(sys.argv[2]))["choices"][0]["message"]["tool_calls"]
assert len(calls) == len(want) == 2, calls
for i, w in enumerate(want):
    assert json.loads(calls[i]["args"]) == json.loads(w["function"]["arguments"])
' "$tmp/s2" "$tmp/n2"
else
    n=$((n + 1))
    echo "ok $n - tool calls: the deltas add up # skip python3 is not installed"
fi

rg_equal "/stats counts the streams" "$(rg_stat "$plain_port" completions)" \
    "$(rg_stat "$plain_port" requests)"
rg_equal "/stats: nothing in flight" "$(rg_stat "$plain_port" inflight)" 0

rc=$(rg_post "$plain_port" "$tmp/s3" \
     "{\"model\":\"mock-1\",\"stream\":false,\"stream_options\":{\"include_usage\":true},$USER_MSG}")
rg_check "stream_options without stream: 400" \
    grep -q '^HTTP/1.1 400' "$tmp/s3.h"
rg_has "stream_options without stream: the API's message" "$tmp/s3" \
    "The 'stream_options' parameter is only allowed when 'stream' is enabled."

rg_stop plain "$plain_pid"


# --stream-interleave, --stream-crlf, --stream-comments, --stream-no-done

rg_stream_mock framed --calls 2 --stream-interleave --stream-crlf \
    --stream-comments --stream-no-done --stream-chunk 4 --quiet
framed_pid=$started
framed_port=$port

rc=$(rg_post "$framed_port" "$tmp/f1" \
     "{\"model\":\"mock-1\",\"stream\":true,$USER_MSG,$TOOLS}")
rg_equal "options: curl succeeds" "$rc" 0
rg_check "--stream-crlf: every line ends with CRLF" \
    awk '!/\r$/ { exit 1 }' "$tmp/f1"
rg_check "--stream-comments: a comment between every two events" \
    awk '{ sub(/\r$/, "") }
         NR % 4 == 1 && !/^data: / { exit 1 }
         NR % 4 == 3 && $0 != ": keep-alive" { exit 1 }
         NR % 2 == 0 && $0 != "" { exit 1 }' "$tmp/f1"
rg_has_not "--stream-no-done: no [DONE]" "$tmp/f1" "[DONE]"
order=$(sed -n 's/.*"tool_calls":\[{"index":\([01]\),"function".*/\1/p' \
        "$tmp/f1" | head -6 | tr -d '\n')
rg_equal "--stream-interleave: the fragments alternate" "$order" "010101"
rg_check "--stream-chunk 4: fragments of at most 4 bytes" \
    sh -c "sed -n 's/.*\"function\":{\"arguments\":\"\\(.*\\)\"}}\\].*/\\1/p' '$tmp/f1' | sed 's/\\\\\"/\"/g' | awk 'length > 4 { exit 1 }'"

rg_stop framed "$framed_pid"


# scripted: stream_error, a status, pacing and a client that leaves

cat > "$tmp/script.json" <<'EOF'
[
  { "message": { "content": "The answer is about to break off." },
    "stream_error": "The server had an error while processing your request." },
  { "status": 429 }
]
EOF

rg_stream_mock paced --script "$tmp/script.json" --stream-delay 100
paced_pid=$started
paced_port=$port

rc=$(rg_post "$paced_port" "$tmp/p1" \
     "{\"model\":\"mock-1\",\"stream\":true,$USER_MSG}")
rg_equal "stream_error: curl succeeds" "$rc" 0
rg_check "stream_error: 200" grep -q '^HTTP/1.1 200' "$tmp/p1.h"
rg_has "stream_error: some content first" "$tmp/p1" \
    '"delta":{"content":"The answ"}'
rg_equal "stream_error: the error event last" \
    "$(tail -2 "$tmp/p1" | head -1)" \
    'data: {"error":{"message":"The server had an error while processing your request.","type":"server_error"}}'
rg_has_not "stream_error: no finish_reason" "$tmp/p1" '"finish_reason":"'
rg_has_not "stream_error: no [DONE]" "$tmp/p1" "[DONE]"
events=$(grep -c '^data: ' "$tmp/p1")
rg_check "--stream-delay 100: $events events take at least $(((events - 1) * 100)) ms" \
    awk -v t="$(cat "$tmp/p1.t")" -v e="$events" \
        'BEGIN { exit !(t >= (e - 1) * 0.1 * 0.9) }'

rc=$(rg_post "$paced_port" "$tmp/p2" \
     "{\"model\":\"mock-1\",\"stream\":false,$USER_MSG}")
rg_check "stream_error, not streamed: 500" \
    grep -q '^HTTP/1.1 500' "$tmp/p2.h"

# a scripted status answers a stream with its plain JSON error
body="{\"model\":\"mock-1\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"},{\"role\":\"user\",\"content\":\"c\"}]}"
rc=$(rg_post "$paced_port" "$tmp/p3" "$body")
rg_check "a scripted 429 on a stream: 429" grep -q '^HTTP/1.1 429' "$tmp/p3.h"
rg_has "a scripted 429 on a stream: a JSON error" "$tmp/p3" \
    '"code":"rate_limit_exceeded"'

# a client that leaves mid-stream
rc=$(rg_post "$paced_port" "$tmp/p4" \
     "{\"model\":\"mock-1\",\"stream\":true,$USER_MSG}" --max-time 0.25)
rg_equal "a client leaves mid-stream (curl times out)" "$rc" 28
rg_check "a client leaves mid-stream: it got the first events" \
    grep -q '"role":"assistant"' "$tmp/p4"
sleep 0.3
rg_equal "a client leaves mid-stream: nothing left in flight" \
    "$(rg_stat "$paced_port" inflight)" 0
rg_has "a client leaves mid-stream: logged" "$tmp/paced.log" \
    "client went away"

# SIGTERM while a stream is under way
rg_post "$paced_port" "$tmp/p5" \
    "{\"model\":\"mock-1\",\"stream\":true,$USER_MSG}" > /dev/null &
curl_pid=$!
sleep 0.25
rg_stop paced "$paced_pid"
wait $curl_pid 2>/dev/null


# faults apply to streams

rg_stream_mock fault --fault 500 --quiet
fault_pid=$started
fault_port=$port

rc=$(rg_post "$fault_port" "$tmp/q1" \
     "{\"model\":\"mock-1\",\"stream\":true,$USER_MSG}")
rg_check "--fault 500 on a stream: 500" grep -q '^HTTP/1.1 500' "$tmp/q1.h"
rg_check "--fault 500 on a stream: application/json" \
    grep -qi '^content-type: application/json' "$tmp/q1.h"
rc=$(rg_post "$fault_port" "$tmp/q2" \
     "{\"model\":\"mock-1\",\"stream\":true,$USER_MSG}")
rg_check "after the fault: a stream" \
    grep -qi '^content-type: text/event-stream' "$tmp/q2.h"

rg_stop fault "$fault_pid"


rg_done
