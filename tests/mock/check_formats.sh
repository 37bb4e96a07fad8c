#!/bin/sh
# check_formats.sh: a self-check of the mock model's three wire formats
# (tests/mock/rg_mock*.c): OpenAI Chat Completions, Anthropic Messages and
# OpenAI Responses. For each: a plain answer, a tool-call round trip, a
# streamed answer parsed back, the thinking/reasoning round trip (the mock
# takes its own signature or encrypted content back and refuses a changed
# one), a 429 fault, the prompt-cache counters rising on a repeated
# request; and that chat answers are byte for byte those of the mock
# before the formats came (built from git: the parent of the commit that
# added tests/mock/rg_mock.h, or HEAD before that commit; BASE_REV to
# choose).
#
# Run by hand from the repository root, after make: sh
# tests/mock/check_formats.sh (M=path/to/rg_mock for another build, e.g.
# objs-san/rg_mock). Needs curl and jq; cc and pkg-config for the
# byte-for-byte check. Prints "ok N - what" or "not ok N - what" per
# check and exits 1 if any failed. Not part of make check.

M=${M:-${B:-objs}/rg_mock}

n=0
failed=0
pids=
starts=0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rg-check-formats-XXXXXX") || exit 1

rg_cleanup() {
    for p in $pids; do
        kill "$p" 2>/dev/null
    done
    for p in $pids; do
        wait "$p" 2>/dev/null
    done
    rm -rf "$tmp"
}

trap rg_cleanup EXIT
trap 'exit 1' INT TERM HUP

for tool in curl jq; do
    if ! command -v "$tool" > /dev/null 2>&1; then
        echo "check_formats.sh: $tool is missing" >&2
        exit 1
    fi
done

if [ ! -x "$M" ]; then
    echo "check_formats.sh: no mock at $M (run make first)" >&2
    exit 1
fi


rg_ok() {
    n=$((n + 1))
    echo "ok $n - $1"
}

rg_fail() {
    n=$((n + 1))
    failed=$((failed + 1))
    echo "not ok $n - $1"
}

# rg_check WHAT COMMAND...: the command succeeds
rg_check() {
    what=$1
    shift
    if "$@" > /dev/null 2>&1; then
        rg_ok "$what"
    else
        rg_fail "$what"
        if [ -s "$tmp/body" ]; then
            head -c 600 "$tmp/body" | sed 's/^/#   body: /'
            echo
        fi
    fi
}

# rg_eq WHAT GOT WANT
rg_eq() {
    if [ "$2" = "$3" ]; then
        rg_ok "$1"
    else
        rg_fail "$1"
        echo "#   got:  $2"
        echo "#   want: $3"
    fi
}

# rg_start NAME BINARY ARGS...: a mock on a free port; sets port
rg_start() {
    name=$1
    bin=$2
    shift 2
    rm -f "$tmp/$name.port"
    starts=$((starts + 1))
    "$bin" --port 0 --port-file "$tmp/$name.port" --quiet "$@" \
        2> "$tmp/mock.$starts.log" &
    pids="$pids $!"
    i=0
    while [ ! -s "$tmp/$name.port" ] && [ $i -lt 100 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    port=$(cat "$tmp/$name.port" 2>/dev/null)
    if [ -z "$port" ]; then
        echo "check_formats.sh: mock $name did not start" >&2
        cat "$tmp/mock.$starts.log" >&2
        exit 1
    fi
}

# rg_post PORT PATH FILE [HEADER...]: POSTs FILE; the body goes to
# $tmp/body, the headers to $tmp/hdr; prints the status
rg_post() {
    p=$1
    path=$2
    file=$3
    shift 3
    set -- -H "Content-Type: application/json" "$@"
    curl -sS -N -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' "$@" \
        --data-binary "@$file" "http://127.0.0.1:$p$path"
}

# rg_anthropic PORT FILE: POST /v1/messages as the SDK does
rg_anthropic() {
    rg_post "$1" /v1/messages "$2" -H "anthropic-version: 2023-06-01" \
        -H "x-api-key: sk-mock"
}

rg_stat() {
    curl -sS "http://127.0.0.1:$1/stats" | jq -r "$2"
}

# rg_header NAME: the value of header NAME in $tmp/hdr
rg_header() {
    tr -d '\r' < "$tmp/hdr" | grep -i "^$1:" | head -1 | sed 's/^[^:]*: *//'
}

# rg_events: the event names of the stream in $tmp/body, one a line
rg_events() {
    tr -d '\r' < "$tmp/body" | sed -n 's/^event: //p'
}

# rg_data: the data of the stream in $tmp/body, one JSON a line
rg_data() {
    tr -d '\r' < "$tmp/body" | sed -n 's/^data: //p' | grep -v '^\[DONE\]$'
}


rg_start gen "$M" --rounds 1 --calls 2
gen=$port

rg_start f429 "$M" --fault 429 --fault-count 0 --retry-after 2
f429=$port

rg_start cached "$M" --rounds 1 --cache
cached=$port


# the tools the requests offer
tool_schema='{"type":"object","properties":{"text":{"type":"string"}},'
tool_schema=$tool_schema'"required":["text"]}'


# chat

echo "# chat: POST /v1/chat/completions"

jq -n --argjson s "$tool_schema" '{model: "mock-1", messages:
    [{role: "user", content: "hello"}],
    tools: [{type: "function", function: {name: "echo", parameters: $s}}]}' \
    > "$tmp/chat1.json"

jq -n '{model: "mock-1", messages: [{role: "user", content: "hello"}]}' \
    > "$tmp/chat_plain.json"

rg_eq "chat: a plain answer" \
    "$(rg_post $gen /v1/chat/completions "$tmp/chat_plain.json") $(jq -r \
        '.choices[0].message.content' "$tmp/body")" "200 Final answer: hello"

rg_post $gen /v1/chat/completions "$tmp/chat1.json" > /dev/null
jq '.choices[0].message' "$tmp/body" > "$tmp/chat_turn1.json"
rg_eq "chat: round 1 calls echo twice" \
    "$(jq -r '[.tool_calls[].function.name] | join(",")' \
        "$tmp/chat_turn1.json")" "echo,echo"

jq --slurpfile t "$tmp/chat_turn1.json" '.messages += $t
    + [$t[0].tool_calls[] | {role: "tool", tool_call_id: .id,
       content: "echoed"}]' "$tmp/chat1.json" > "$tmp/chat2.json"
rg_eq "chat: tool results lead to the final answer" \
    "$(rg_post $gen /v1/chat/completions "$tmp/chat2.json") $(jq -r \
        '.choices[0].message.content' "$tmp/body")" \
    "200 Final answer after 1 rounds: echoed"

jq '.stream = true' "$tmp/chat_plain.json" > "$tmp/chat_stream.json"
rg_post $gen /v1/chat/completions "$tmp/chat_stream.json" > /dev/null
rg_eq "chat: a streamed answer reassembles" \
    "$(rg_data | jq -rs 'map(.choices[0].delta.content // "") | join("")')" \
    "Final answer: hello"
rg_check "chat: the stream ends with data: [DONE]" \
    grep -q '^data: \[DONE\]' "$tmp/body"

rg_eq "chat: 429 fault" \
    "$(rg_post $f429 /v1/chat/completions "$tmp/chat_plain.json") $(jq -r \
        '.error.code' "$tmp/body") $(rg_header retry-after)" \
    "429 rate_limit_exceeded 2"

rg_post $cached /v1/chat/completions "$tmp/chat1.json" > /dev/null
first=$(jq '.usage.prompt_tokens_details.cached_tokens' "$tmp/body")
rg_post $cached /v1/chat/completions "$tmp/chat1.json" > /dev/null
second=$(jq '.usage.prompt_tokens_details.cached_tokens' "$tmp/body")
rg_check "chat --cache: cached_tokens 0, then more ($first, $second)" \
    test "$first" -eq 0 -a "$second" -gt 0
rg_check "chat --cache: /stats counts a cache read" \
    test "$(rg_stat $cached .cache.reads)" -ge 1

# byte for byte: the mock before the formats, on the same requests

root=$(git rev-parse --show-toplevel 2>/dev/null)
base=
if [ -n "$root" ] && command -v cc > /dev/null 2>&1 \
   && pkg-config --exists libevent jansson 2>/dev/null
then
    rev=${BASE_REV:-}
    if [ -z "$rev" ]; then
        added=$(git -C "$root" log --diff-filter=A --format=%H -- \
                tests/mock/rg_mock.h | tail -1)
        rev=${added:+$added^}
        rev=${rev:-HEAD}
    fi
    mkdir -p "$tmp/base"
    if git -C "$root" archive "$rev" tests/mock | tar -x -C "$tmp/base" \
       && cc -std=c11 -D_GNU_SOURCE -O2 -I"$tmp/base/tests/mock" \
             -o "$tmp/base_mock" "$tmp"/base/tests/mock/*.c \
             $(pkg-config --cflags --libs libevent jansson) 2> "$tmp/cc.log"
    then
        base=$tmp/base_mock
    fi
fi

if [ -n "$base" ]; then
    jq '.stream = true | .stream_options = {include_usage: true}' \
        "$tmp/chat1.json" > "$tmp/chat_stream2.json"
    jq '.messages[0].role = "robot"' "$tmp/chat1.json" > "$tmp/chat_bad.json"

    same=0
    total=0
    for args in "--rounds 1 --calls 2" "--rounds 2 --stream-chunk 3" \
                "--fault 429 --fault-every 2" "--fault 500 --fault-count 0" \
                "--fault malformed --fault-count 0"
    do
        # shellcheck disable=SC2086
        rg_start new "$M" $args
        newp=$port
        # shellcheck disable=SC2086
        rg_start old "$base" $args
        oldp=$port
        for req in chat_plain chat1 chat2 chat_stream chat_stream2 chat_bad
        do
            for k in 1 2; do
                total=$((total + 1))
                s1=$(rg_post $oldp /v1/chat/completions "$tmp/$req.json")
                sed 's/"created":[0-9]*/"created":0/g' "$tmp/body" \
                    > "$tmp/old.out"
                s2=$(rg_post $newp /v1/chat/completions "$tmp/$req.json")
                sed 's/"created":[0-9]*/"created":0/g' "$tmp/body" \
                    > "$tmp/new.out"
                if [ "$s1" = "$s2" ] && cmp -s "$tmp/old.out" "$tmp/new.out"
                then
                    same=$((same + 1))
                else
                    echo "#   differs: $args, $req"
                fi
            done
        done
    done
    rg_eq "chat: $total answers byte for byte those of $rev" "$same" "$total"
else
    rg_ok "chat: byte for byte # SKIP no git, cc or pkg-config"
fi


# Anthropic Messages

echo "# anthropic: POST /v1/messages"

jq -n --argjson s "$tool_schema" '{model: "claude-mock", max_tokens: 4096,
    messages: [{role: "user", content: "hello"}],
    tools: [{name: "echo", input_schema: $s}]}' > "$tmp/a1.json"
jq '{model, max_tokens, messages}' "$tmp/a1.json" > "$tmp/a_plain.json"

st=$(rg_anthropic $gen "$tmp/a_plain.json")
rg_eq "anthropic: a plain answer" \
    "$st $(jq -r '.type, .content[0].text, .stop_reason' "$tmp/body" \
        | tr '\n' ' ')" "200 message Final answer: hello end_turn "
rg_check "anthropic: request-id: req_mock_<n>" \
    sh -c "tr -d '\r' < '$tmp/hdr' | grep -q '^request-id: req_mock_[0-9]*$'"

rg_anthropic $gen "$tmp/a1.json" > /dev/null
jq '{role: "assistant", content: .content}' "$tmp/body" > "$tmp/a_turn1.json"
rg_eq "anthropic: round 1 is two tool_use blocks" \
    "$(jq -r '.stop_reason, ([.content[].type] | join(","))' "$tmp/body" \
        | tr '\n' ' ')" "tool_use tool_use,tool_use "

jq --slurpfile t "$tmp/a_turn1.json" '.messages += $t
    + [{role: "user", content: [$t[0].content[] | {type: "tool_result",
        tool_use_id: .id, content: "echoed"}]}]' "$tmp/a1.json" \
    > "$tmp/a2.json"
st=$(rg_anthropic $gen "$tmp/a2.json")
rg_eq "anthropic: tool results lead to the final answer" \
    "$st $(jq -r '.content[0].text' "$tmp/body")" \
    "200 Final answer after 1 rounds: echoed"

jq '.messages[2].content |= .[1:]' "$tmp/a2.json" > "$tmp/a_bad.json"
st=$(rg_anthropic $gen "$tmp/a_bad.json")
rg_eq "anthropic: a tool_use left without its tool_result is a 400" \
    "$st $(jq -r '.error.type' "$tmp/body")" "400 invalid_request_error"

jq '.stream = true' "$tmp/a1.json" > "$tmp/a_stream.json"
rg_anthropic $gen "$tmp/a_stream.json" > /dev/null
rg_eq "anthropic: stream event order" \
    "$(rg_events | uniq | tr '\n' ' ')" "message_start content_block_start \
ping content_block_delta content_block_stop content_block_start \
content_block_delta content_block_stop message_delta message_stop "
rg_eq "anthropic: every data's type is its event's" \
    "$(rg_data | jq -r .type | tr '\n' ' ')" "$(rg_events | tr '\n' ' ')"
rg_eq "anthropic: input_json_delta fragments make the input" \
    "$(rg_data | jq -rs '[.[] | select(.index == 0 and .delta.type ==
        "input_json_delta") | .delta.partial_json] | join("") | fromjson
        | .text')" "x é"
cat > "$tmp/escape.jq" <<'EOF'
any(.[]; .delta.partial_json // "" | test("[\\\\]u[0-9A-Fa-f]{0,3}$"))
EOF
rg_check "anthropic: a fragment ends inside a \\u escape" \
    sh -c "tr -d '\r' < '$tmp/body' | sed -n 's/^data: //p' \
        | jq -se -f '$tmp/escape.jq'"

jq '. + {thinking: {type: "enabled", budget_tokens: 1024}}' "$tmp/a1.json" \
    > "$tmp/at1.json"
rg_anthropic $gen "$tmp/at1.json" > /dev/null
jq '{role: "assistant", content: .content}' "$tmp/body" > "$tmp/at_turn1.json"
rg_eq "anthropic: thinking first, signed" \
    "$(jq -r '.content[0].type, .content[0].thinking,
        (.content[0].signature | length > 0)' "$tmp/body" | tr '\n' ' ')" \
    "thinking Round 1: I will call echo twice. true "
jq --slurpfile t "$tmp/at_turn1.json" '.messages += $t
    + [{role: "user", content: [$t[0].content[] | select(.type == "tool_use")
       | {type: "tool_result", tool_use_id: .id, content: "echoed"}]}]' \
    "$tmp/at1.json" > "$tmp/at2.json"
st=$(rg_anthropic $gen "$tmp/at2.json")
rg_eq "anthropic: its own signature is taken back" \
    "$st $(jq -r '.content[0].type' "$tmp/body")" "200 thinking"
jq '.messages[1].content[0].signature |= "x" + .' "$tmp/at2.json" \
    > "$tmp/at_bad.json"
st=$(rg_anthropic $gen "$tmp/at_bad.json")
rg_eq "anthropic: a changed signature is a 400" \
    "$st $(jq -r '.error.message' "$tmp/body")" \
    "400 messages.1.content.0: Invalid \`signature\` in \`thinking\` block"
jq '.messages[1].content |= .[1:]' "$tmp/at2.json" > "$tmp/at_bad.json"
st=$(rg_anthropic $gen "$tmp/at_bad.json")
want='messages.1.content.0.type: Expected `thinking` or `redacted_thinking`,'
want="$want but found \`tool_use\`. When \`thinking\` is enabled, a final"
rg_eq "anthropic: thinking dropped from the last turn is a 400" \
    "$st $(jq -r '.error.message' "$tmp/body" | cut -c1-${#want})" "400 $want"

st=$(rg_anthropic $f429 "$tmp/a_plain.json")
rg_eq "anthropic: 429 fault" \
    "$st $(jq -r '.type, .error.type' "$tmp/body" | tr '\n' ' ')$(rg_header \
        anthropic-ratelimit-requests-remaining) $(rg_header retry-after)" \
    "429 error rate_limit_error 0 2"
rg_check "anthropic: 429 says when the limit resets (RFC 3339)" \
    sh -c "echo '$(rg_header anthropic-ratelimit-requests-reset)' \
        | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'"

system_text=$(printf 'You are a careful assistant. %.0s' $(seq 1 60))
jq --arg s "$system_text" '{model, max_tokens, messages: [{role: "user",
    content: [{type: "text", text: "hello", cache_control:
    {type: "ephemeral"}}]}], system: [{type: "text", text: $s,
    cache_control: {type: "ephemeral", ttl: "1h"}}]}' "$tmp/a1.json" \
    > "$tmp/a_cache.json"
reads=$(rg_stat $gen .cache.reads)
rg_anthropic $gen "$tmp/a_cache.json" > /dev/null
u1=$(jq -c '[.usage.cache_creation_input_tokens,
    .usage.cache_read_input_tokens]' "$tmp/body")
rg_anthropic $gen "$tmp/a_cache.json" > /dev/null
u2=$(jq -c '[.usage.cache_creation_input_tokens,
    .usage.cache_read_input_tokens]' "$tmp/body")
rg_check "anthropic: breakpoints written, then read ($u1, $u2)" \
    sh -c "echo '$u1 $u2' | jq -se '.[0][0] > 0 and .[0][1] == 0
        and .[1][0] == 0 and .[1][1] == .[0][0]'"
rg_check "anthropic: /stats counts the cache read" \
    test "$(rg_stat $gen .cache.reads)" -gt "$reads"


# OpenAI Responses

echo "# responses: POST /v1/responses"

jq -n --argjson s "$tool_schema" '{model: "mock-1", input: "hello",
    tools: [{type: "function", name: "echo", parameters: $s}]}' \
    > "$tmp/r1.json"
jq '{model, input}' "$tmp/r1.json" > "$tmp/r_plain.json"

st=$(rg_post $gen /v1/responses "$tmp/r_plain.json")
rg_eq "responses: a plain answer" \
    "$st $(jq -r '.object, .status, .output[0].content[0].text' "$tmp/body" \
        | tr '\n' ' ')" "200 response completed Final answer: hello "

rg_post $gen /v1/responses "$tmp/r1.json" > /dev/null
jq '.output' "$tmp/body" > "$tmp/r_out1.json"
rg_eq "responses: round 1 is two function calls" \
    "$(jq -r 'map(.type) | join(",")' "$tmp/r_out1.json")" \
    "function_call,function_call"
jq --slurpfile o "$tmp/r_out1.json" '.input = [{role: "user",
    content: "hello"}] + $o[0] + [$o[0][] | {type: "function_call_output",
    call_id, output: "echoed"}]' "$tmp/r1.json" > "$tmp/r2.json"
st=$(rg_post $gen /v1/responses "$tmp/r2.json")
rg_eq "responses: tool outputs lead to the final answer" \
    "$st $(jq -r '.output[0].content[0].text' "$tmp/body")" \
    "200 Final answer after 1 rounds: echoed"
jq 'del(.input[-1])' "$tmp/r2.json" > "$tmp/r_bad.json"
st=$(rg_post $gen /v1/responses "$tmp/r_bad.json")
rg_eq "responses: a call without its output is a 400" \
    "$st $(jq -r '.error.message' "$tmp/body")" "400 No tool output found \
for function call $(jq -r '.[1].call_id' "$tmp/r_out1.json")."

jq '.stream = true' "$tmp/r1.json" > "$tmp/r_stream.json"
rg_post $gen /v1/responses "$tmp/r_stream.json" > /dev/null
rg_eq "responses: stream event order" \
    "$(rg_events | uniq | tr '\n' ' ')" "response.created \
response.in_progress response.output_item.added \
response.function_call_arguments.delta response.function_call_arguments.done \
response.output_item.done response.output_item.added \
response.function_call_arguments.delta response.function_call_arguments.done \
response.output_item.done response.completed "
rg_check "responses: sequence_number counts from 0" \
    sh -c "tr -d '\r' < '$tmp/body' | sed -n 's/^data: //p' | jq -se \
        '[.[].sequence_number] == [range(length)]'"
cat > "$tmp/args.jq" <<'EOF'
[.[] | select(.type == "response.function_call_arguments.delta")] as $d
| (.[-1].response.output | map(.arguments)) as $want
| ($d | group_by(.output_index) | map(map(.delta) | join(""))) == $want
EOF
rg_check "responses: the deltas make each call's arguments" \
    sh -c "tr -d '\r' < '$tmp/body' | sed -n 's/^data: //p' \
        | jq -se -f '$tmp/args.jq'"

jq '. + {store: false, include: ["reasoning.encrypted_content"],
    reasoning: {effort: "low", summary: "auto"}}' "$tmp/r1.json" \
    > "$tmp/rr1.json"
rg_post $gen /v1/responses "$tmp/rr1.json" > /dev/null
jq '.output' "$tmp/body" > "$tmp/rr_out1.json"
rg_eq "responses: a reasoning item first, summarized and sealed" \
    "$(jq -r '.[0].type, .[0].summary[0].text,
        (.[0].encrypted_content | startswith("g"))' "$tmp/rr_out1.json" \
        | tr '\n' ' ')" "reasoning Round 1: I will call echo twice. true "
jq --slurpfile o "$tmp/rr_out1.json" '.input = [{role: "user",
    content: "hello"}] + $o[0] + [$o[0][] | select(.type == "function_call")
    | {type: "function_call_output", call_id, output: "echoed"}]' \
    "$tmp/rr1.json" > "$tmp/rr2.json"
st=$(rg_post $gen /v1/responses "$tmp/rr2.json")
rg_eq "responses: its own encrypted content is taken back" \
    "$st $(jq -r '.output[0].type, .output[1].content[0].text' "$tmp/body" \
        | tr '\n' ' ')" "200 reasoning Final answer after 1 rounds: echoed "
jq '.input[1].encrypted_content |= "gA" + .[2:]' "$tmp/rr2.json" \
    > "$tmp/rr_bad.json"
st=$(rg_post $gen /v1/responses "$tmp/rr_bad.json")
rg_eq "responses: changed encrypted content is a 400" \
    "$st $(jq -r '.error.code' "$tmp/body")" "400 invalid_encrypted_content"
jq 'del(.input[1])' "$tmp/rr2.json" > "$tmp/rr_bad.json"
st=$(rg_post $gen /v1/responses "$tmp/rr_bad.json")
want="Item '$(jq -r '.input[1].id' "$tmp/rr_bad.json")' of type"
want="$want 'function_call' was provided without its required 'reasoning'"
want="$want item: '$(jq -r '.[0].id' "$tmp/rr_out1.json")'."
rg_eq "responses: a call without its reasoning item is a 400" \
    "$st $(jq -r '.error.message' "$tmp/body")" "400 $want"

st=$(rg_post $f429 /v1/responses "$tmp/r_plain.json")
rg_eq "responses: 429 fault" \
    "$st $(jq -r '.error.code, .error.type' "$tmp/body" | tr '\n' ' ')$(\
        rg_header x-ratelimit-remaining-tokens) $(rg_header \
        x-ratelimit-reset-tokens)" "429 rate_limit_exceeded tokens 0 2s"
want="Rate limit reached for mock-1 in organization org-mock on tokens per"
want="$want min (TPM): Limit 200000, Used 199100, Requested 2400. Please try"
want="$want again in 2s. Visit https://platform.openai.com/account/rate-limits"
want="$want to learn more."
rg_eq "responses: 429 in the API's words" \
    "$(jq -r '.error.message' "$tmp/body")" "$want"

reads=$(rg_stat $gen .cache.reads)
rg_post $gen /v1/responses "$tmp/r2.json" > /dev/null
c1=$(jq '.usage.input_tokens_details.cached_tokens' "$tmp/body")
jq '.input += [{role: "user", content: "and again"}]' "$tmp/r2.json" \
    > "$tmp/r3.json"
rg_post $gen /v1/responses "$tmp/r3.json" > /dev/null
c2=$(jq '.usage.input_tokens_details.cached_tokens' "$tmp/body")
rg_check "responses: a longer input reads the cached prefix ($c1, $c2)" \
    test "$c2" -gt 0
rg_check "responses: /stats counts the cache read" \
    test "$(rg_stat $gen .cache.reads)" -gt "$reads"


# scripts and the other faults, in the new formats

echo "# scripts and faults"

cat > "$tmp/script.json" <<'EOF'
[
  {"message": {"content": "Let me check.", "tool_calls": [{"name": "echo",
   "arguments": {"text": "a long argument, cut short"}}],
   "stop_reason": "max_tokens"}},
  {"message": {"only_reasoning": true}},
  {"message": {"content": "done"}, "stream_error": "upstream overloaded",
   "stream_error_type": "overloaded_error"}
]
EOF
rg_start scripted "$M" --script "$tmp/script.json"
scripted=$port

jq '.stream = true' "$tmp/a1.json" > "$tmp/s0.json"
rg_anthropic $scripted "$tmp/s0.json" > /dev/null
rg_eq "anthropic: max_tokens cuts the last tool_use midway" \
    "$(rg_data | jq -rs '([.[] | select(.index == 1) | .type] | unique
        | join(",")), (.[] | select(.type == "message_delta")
        | .delta.stop_reason), (last | .type)' | tr '\n' ' ')" \
    "content_block_delta,content_block_start max_tokens message_stop "

jq '.input = [{role: "user", content: "hi"}, {type: "message",
    role: "assistant", content: "hello"}, {role: "user", content: "go"}]' \
    "$tmp/r_plain.json" > "$tmp/s1.json"
rg_post $scripted /v1/responses "$tmp/s1.json" > /dev/null
rg_eq "responses: only_reasoning is an incomplete answer" \
    "$(jq -r '.status, .incomplete_details.reason, (.output | map(.type)
        | join(","))' "$tmp/body" | tr '\n' ' ')" \
    "incomplete max_output_tokens reasoning "

jq '.messages = [{role: "user", content: "1"}, {role: "assistant",
    content: "a"}, {role: "user", content: "2"}, {role: "assistant",
    content: "b"}, {role: "user", content: "3"}] | .stream = true' \
    "$tmp/a_plain.json" > "$tmp/s2.json"
rg_anthropic $scripted "$tmp/s2.json" > /dev/null
rg_eq "anthropic: a stream_error ends the stream with an error event" \
    "$(rg_events | tail -1) $(rg_data | tail -1 | jq -r '.error.type')" \
    "error overloaded_error"

jq '.input = [{role: "user", content: "1"}, {type: "message",
    role: "assistant", content: "a"}, {role: "user", content: "2"},
    {type: "message", role: "assistant", content: "b"},
    {role: "user", content: "3"}] | .stream = true' \
    "$tmp/r_plain.json" > "$tmp/s3.json"
rg_post $scripted /v1/responses "$tmp/s3.json" > /dev/null
rg_eq "responses: a stream_error ends the stream with an error event" \
    "$(rg_events | tail -1) $(rg_data | tail -1 | jq -r '.code')" \
    "error overloaded_error"

rg_start over "$M" --fault overloaded --fault-count 0
st=$(rg_anthropic $port "$tmp/a_plain.json")
rg_eq "anthropic: overloaded fault is a 529" \
    "$st $(jq -r '.error.type' "$tmp/body")" "529 overloaded_error"
st=$(rg_post $port /v1/chat/completions "$tmp/chat_plain.json")
rg_eq "chat: overloaded fault is a 503" \
    "$st $(jq -r '.error.type' "$tmp/body")" "503 server_error"

rg_start long "$M" --fault too_long --fault-count 0
st=$(rg_anthropic $port "$tmp/a_plain.json")
rg_eq "anthropic: too_long fault" "$st $(jq -r '.error.message' \
    "$tmp/body")" "400 prompt is too long: 210000 tokens > 200000 maximum"
st=$(rg_post $port /v1/responses "$tmp/r_plain.json")
rg_eq "responses: too_long fault" "$st $(jq -r '.error.code' \
    "$tmp/body")" "400 context_length_exceeded"


# shared

echo "# shared"

rg_eq "/stats counts each format" \
    "$(rg_stat $gen '[.formats.chat, .formats.anthropic,
        .formats.responses] | map(. > 0) | all')" "true"
rg_check "--help lists the new options" \
    sh -c "'$M' --help | grep -q -- '--cache' && '$M' --help \
        | grep -q 'overloaded|too_long'"

# every mock exits cleanly on SIGTERM, without a sanitizer's report (with
# an ASan/UBSan build) or a leak
stopped=0
for p in $pids; do
    kill "$p" 2>/dev/null
    wait "$p" && stopped=$((stopped + 1))
done
pids=
rg_eq "every mock exits 0 on SIGTERM" "$stopped" "$starts"
if grep -l -E 'Sanitizer|runtime error' "$tmp"/mock.*.log > /dev/null 2>&1
then
    rg_fail "no sanitizer report"
    grep -h -A 12 -E 'Sanitizer|runtime error' "$tmp"/mock.*.log \
        | head -40 | sed 's/^/#   /'
else
    rg_ok "no sanitizer report"
fi

exit_code=0
[ $failed -eq 0 ] || exit_code=1
echo "# $n checks, $failed failed"
exit $exit_code
