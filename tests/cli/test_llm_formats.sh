#!/bin/sh
# test_llm_formats.sh: the three wire formats (format chat, anthropic,
# responses) end to end with the real binary and the mock model over real
# HTTP: a run of two rounds of two parallel calls, whole and streamed, in
# each; Anthropic thinking blocks and Responses reasoning items sent back
# unchanged (the mock refuses a changed signature or encrypted content,
# and a missing one), also by a session killed with SIGKILL in the middle
# and resumed from Redis; the shared recorded Chat Completions answers
# (../shared/fixtures/providers) re-encoded by the mock in each format,
# read the same in all three; the classes of errors in each format's own
# words (a 429 waited for, 529 retried, 401 fatal, a prompt too long);
# the cost by the llm's price, max_cost stopping the call that would pass
# it, and the batch summary's cost.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need jq redis-server

shared=${RG_FIXTURES_DIR:-../shared/fixtures/providers}
calc=$(cd "$B" && pwd)/modules/calc.so

# conf NAME PORT FORMAT [LLM DIRECTIVES [MORE]]: a configuration of one
# llm and one agent with the calc tool
conf() {
    cat > "$tmp/$1.conf" <<CONF
error_log stderr warn;
load_module $calc;
llm m { base_url http://127.0.0.1:$2/v1; model mock-1; format $3;
        max_retries 3; retry_base 50ms; $4 }
agent a { llm m; tools calc; system_prompt "You add."; }
$5
CONF
}

# jqe FILTER FILE: the filter holds (jq -e, quietly)
jqe() {
    jq -e "$@" > /dev/null
}

# status FILE: the status a run printed on stderr
status() {
    sed -n 's/^status: \([a-z_]*\).*/\1/p' "$1"
}


# 1. each format, whole and streamed

rg_mock g --rounds 2 --calls 2 --stream-chunk 5

for f in chat anthropic responses; do
    for st in off on; do
        conf g "$port" $f "stream $st;"
        "$R" -c "$tmp/g.conf" run "add up" > "$tmp/g.out" 2> "$tmp/g.err"
        rg_equal "$f, stream $st: the run ends done" "$(status "$tmp/g.err")" \
            done
        rg_expect "$f, stream $st: the answer after 2 rounds of 2 calls" \
            "$tmp/g.out" '^Final answer after 2 rounds: 1023$'
        rg_expect "$f, stream $st: 4 tool calls ran" "$tmp/g.err" \
            'tool calls 4,'
    done
done

curl -s "http://127.0.0.1:$port/stats" > "$tmp/stats.json"
rg_equal "the mock was asked in each format" \
    "$(jq -c '.formats' "$tmp/stats.json")" \
    '{"chat":6,"anthropic":6,"responses":6}'


# 1b. how answers end: a paused turn goes on, a refusal is filtered, an
# answer cut at its limit runs none of its calls and says so

# script FORMAT JSON [LLM DIRECTIVES]: a run of agent a on a mock that
# answers JSON (a script), in $tmp/s.out and $tmp/s.err
script() {
    printf '%s\n' "$2" > "$tmp/script.json"
    rg_mock sc$(od -An -N4 -tu4 /dev/urandom | tr -d ' ') \
        --script "$tmp/script.json"
    conf s "$port" "$1" "$3"
    "$R" -c "$tmp/s.conf" run "q" > "$tmp/s.out" 2> "$tmp/s.err"
}

script anthropic '[{"message":{"content":"Searching.","stop_reason":"pause_turn"}},
                   {"message":{"content":"Found it."}}]'
rg_equal "anthropic: a paused turn goes on to its end" \
    "$(cat "$tmp/s.out")" "Found it."
rg_expect "... in a second call, and ends done" "$tmp/s.err" \
    '^status: done \(rounds 2,'

script anthropic '[{"message":{"content":"I cannot help with that.","stop_reason":"refusal"}}]'
rg_expect "anthropic: a refusal is filtered" "$tmp/s.err" \
    '^status: filtered.*finish_reason "refusal"'

script anthropic '[{"message":{"content":"I will add","stop_reason":"max_tokens","tool_calls":[{"name":"calc","arguments":{"expression":"1+1"}}]}}]'
rg_expect "anthropic: an answer cut at max_tokens is done, said cut" \
    "$tmp/s.err" '^status: done.*cut off.*"max_tokens".*calls it was writing were cut'
rg_expect "... and its call never ran" "$tmp/s.err" 'tool calls 0,'

script responses '[{"message":{"status":"incomplete","reason":"max_output_tokens","only_reasoning":true}}]' \
    "reasoning_effort low;"
rg_expect "responses: an answer of only reasoning, cut, is no plain done" \
    "$tmp/s.err" '^status: done.*cut off.*"max_output_tokens".*spent them on reasoning'

script responses '[{"message":{"content":"Part","status":"incomplete","reason":"content_filter"}}]'
rg_expect "responses: an answer stopped by the filter is filtered" \
    "$tmp/s.err" '^status: filtered.*content_filter'


# 2. thinking and reasoning go back unchanged, also after a kill -9

rg_redis r

for f in anthropic responses; do
    case $f in
    anthropic) extra="thinking 2048;"; path='.messages[1].content[0]' ;;
    responses) extra="reasoning_effort low;"; path='.input[2]' ;;
    esac

    : > "$tmp/t.log"
    rg_mock t$f --rounds 2 --calls 2 --latency 300 --request-log "$tmp/t.log"
    conf t "$port" $f "$extra stream on;" \
        "store redis { server unix:$redis_sock; prefix \"$f:\"; }
lease_ttl 1s;"

    "$R" -c "$tmp/t.conf" run --transcript "$tmp/t.json" "add up" \
        > "$tmp/t.out" 2> "$tmp/t.err"
    rg_equal "$f: a run that thinks ends done" "$(status "$tmp/t.err")" done

    case $f in
    anthropic)
        rg_equal "$f: its first answer began with a signed thinking block" \
            "$(jq -r '[.events[] | select(.type == "model_call")][0]
                      | .response' "$tmp/t.json" | grep -c signature_delta)" 1
        ;;
    responses)
        jq -r '[.events[] | select(.type == "model_call")][0] | .response' \
            "$tmp/t.json" > "$tmp/t.r1"
        rg_expect "$f: its first answer had a reasoning item" "$tmp/t.r1" \
            '"type":"reasoning".*"encrypted_content"'
        ;;
    esac

    rg_equal "$f: the next request carried it first in the assistant turn" \
        "$(sed -n 2p "$tmp/t.log" | jq -r ".body | $path | .type")" \
        "$( [ $f = anthropic ] && echo thinking || echo reasoning)"

    # killed in the middle of round 2, resumed by another process
    : > "$tmp/t.log"
    "$R" -c "$tmp/t.conf" run "add up" > "$tmp/k.out" 2> "$tmp/k.err" &
    kpid=$!
    pids="$pids $kpid"
    rg_wait_for "$tmp/t.log" '"n":' 2
    sleep 0.1
    kill -9 $kpid
    wait $kpid 2>/dev/null
    kid=$(sed -n 's/^session: \(s-[0-9a-f]*\) .*/\1/p' "$tmp/k.err")
    sed -n 2p "$tmp/t.log" | jq -cS ".body | $path" > "$tmp/k.block"

    : > "$tmp/t.log"
    "$R" -c "$tmp/t.conf" resume "$kid" > "$tmp/r.out" 2> "$tmp/r.err"
    rg_equal "$f: the killed session resumed from Redis ends done" \
        "$(status "$tmp/r.err")" done
    rg_equal "$f: its next request carries the block the killed one sent" \
        "$(sed -n 1p "$tmp/t.log" | jq -cS ".body | $path")" \
        "$(cat "$tmp/k.block")"
    rg_check "$f: ... which is one the mock made (signed or sealed)" \
        grep -Eq '"(signature|encrypted_content)":"[A-Za-z0-9+/=]{16,}"' \
        "$tmp/k.block"
done

# a block changed on the way is refused by the mock: the check is real
rg_mock v --rounds 1 --calls 1
conf v "$port" anthropic "thinking 2048;"
"$R" -c "$tmp/v.conf" run --transcript "$tmp/v.json" "add up" \
    > /dev/null 2> "$tmp/v.err"
jq -c '[.events[] | select(.type == "model_call")][1].request' "$tmp/v.json" \
    | sed 's/"signature":"[^"]*"/"signature":"AAAAforgedAAAA"/' \
    > "$tmp/forged.json"
rg_equal "a thinking block with another signature is a 400" \
    "$(curl -s -o "$tmp/forged.out" -w '%{http_code}' \
       -H 'anthropic-version: 2023-06-01' -H 'Content-Type: application/json' \
       --data-binary @"$tmp/forged.json" \
       "http://127.0.0.1:$port/v1/messages")" 400
rg_expect "... saying the signature is invalid" "$tmp/forged.out" \
    'Invalid `signature`'


# 3. the shared recorded answers, in each format

if [ -d "$shared" ]; then
    k=0
    for fx in openai_parallel_tool_calls openai_single_tool_call \
              openai_content_with_tool_calls openai_tool_call_complex_args \
              deepseek_parallel_tools_content_reasoning \
              mistral_tool_call_no_type_no_content \
              gemini_openai_compat_empty_tool_call_id \
              cerebras_tool_call_no_content_field
    do
        jq -c '[{message: .choices[0].message}, {message: {content: "done"}}]' \
            "$shared/$fx.json" > "$tmp/fx.json"
        want=$(jq -cS '.choices[0].message
                       | {content: ((.content // "") | if . == "" then null
                                                        else . end),
                          calls: [.tool_calls[] | {n: .function.name,
                                  a: (.function.arguments | fromjson)}]}' \
               "$shared/$fx.json")

        for f in chat anthropic responses; do
            k=$((k + 1))
            rg_mock fx$k --script "$tmp/fx.json"
            conf fx "$port" $f
            "$R" -c "$tmp/fx.conf" run --transcript "$tmp/fx.t" "q" \
                > /dev/null 2> "$tmp/fx.err"
            got=$(jq -cS '.messages[2]
                          | {content: (.content // ""
                                       | if . == "" then null else . end),
                             calls: [.tool_calls[] | {n: .function.name,
                                     a: (.function.arguments | fromjson)}]}' \
                  "$tmp/fx.t")
            rg_equal "$fx in $f: the same calls and text" "$got" "$want"
            rg_equal "$fx in $f: the run ends done" \
                "$(status "$tmp/fx.err")" done
        done
    done
else
    echo "# the shared fixtures are not at $shared: section 3 skipped"
fi


# 4. errors, in each format's words

for f in chat anthropic responses; do
    rg_mock e429$f --rounds 1 --calls 1 --fault 429 --fault-count 1 \
        --retry-after-ms 300
    conf e "$port" $f
    "$R" -c "$tmp/e.conf" run "q" > /dev/null 2> "$tmp/e.err"
    rg_equal "$f: a 429 is waited for, then the run ends done" \
        "$(status "$tmp/e.err")" done
    rg_expect "$f: ... after the wait it asked for" "$tmp/e.err" \
        'rate_limited.*retry 1 of 3 in 300ms'

    rg_mock e529$f --rounds 1 --calls 1 --fault overloaded --fault-count 1
    conf e "$port" $f
    "$R" -c "$tmp/e.conf" run "q" > /dev/null 2> "$tmp/e.err"
    rg_equal "$f: an overloaded server is retried" \
        "$(status "$tmp/e.err")" done

    rg_mock e401$f --fault 401
    conf e "$port" $f
    "$R" -c "$tmp/e.conf" run "q" > /dev/null 2> "$tmp/e.err"
    rg_equal "$f: a refused key ends the run failed" \
        "$(status "$tmp/e.err")" failed
    rg_expect "$f: ... at once, with the provider's words" "$tmp/e.err" \
        'model call failed \(fatal, HTTP 401\)'

    rg_mock elong$f --fault too_long
    conf e "$port" $f
    "$R" -c "$tmp/e.conf" run "q" > /dev/null 2> "$tmp/e.err"
    rg_expect "$f: a prompt too long is a context overflow" "$tmp/e.err" \
        'does not fit the model.s context window.*context_length_exceeded'
done


# 5. money

rg_mock p --rounds 2 --calls 2
conf p "$port" anthropic "price input=3 output=15 cached=0.3 cache_write=3.75;"
"$R" -c "$tmp/p.conf" run --transcript "$tmp/p.json" "add up" \
    > /dev/null 2> "$tmp/p.err"
rg_check "a priced run says its cost" \
    jqe '.cost > 0' "$tmp/p.json"
rg_check "... the sum of its calls' costs" \
    jqe '([.events[] | select(.type == "model_call") | .cost] | add) as $c
           | (.cost - $c) | fabs < 0.000002' "$tmp/p.json"
rg_check "... each by the price of its tokens, cache reads and writes" \
    jqe '[.events[] | select(.type == "model_call")
            | ((.prompt_tokens - (.cached_tokens // 0)
                - (.cache_write_tokens // 0)) * 3
               + (.cached_tokens // 0) * 0.3
               + (.cache_write_tokens // 0) * 3.75
               + .completion_tokens * 15) / 1000000 - .cost | fabs]
           | max < 0.000002' "$tmp/p.json"

cat > "$tmp/tasks.jsonl" <<'JSONL'
{"id":"rich","input":"add up"}
{"id":"poor","input":"add up","max_cost":0.000001}
JSONL
"$R" -c "$tmp/p.conf" batch --no-progress -o "$tmp/res.jsonl" \
    "$tmp/tasks.jsonl" > /dev/null 2> "$tmp/b.err"
rg_equal "a task within its max_cost ends done" \
    "$(jq -r 'select(.id == "rich") | .status' "$tmp/res.jsonl")" done
rg_check "... its result says its cost" \
    jqe 'select(.id == "rich") | .cost > 0' "$tmp/res.jsonl"
rg_equal "a task whose next call would pass max_cost stops before it" \
    "$(jq -r 'select(.id == "poor") | .status' "$tmp/res.jsonl")" \
    budget_exceeded
rg_expect "... saying so" "$tmp/res.jsonl" \
    '"poor".*max_cost.*the next model call \(about \$'
rg_expect "the batch summary says the cost" "$tmp/b.err" 'cost \$0\.[0-9]{4}'

# a tenant's window of money, held in the store: its calls stop before
# the one that would pass it; another tenant goes on
conf q "$port" anthropic "price input=3 output=15;" \
    "tenant_max_cost 0.004 per 1h;"
cat > "$tmp/tenants.jsonl" <<'JSONL'
{"id":"a1","input":"add up","tenant":"acme"}
{"id":"a2","input":"add up","tenant":"acme"}
{"id":"a3","input":"add up","tenant":"acme"}
{"id":"o1","input":"add up","tenant":"other"}
JSONL
"$R" -c "$tmp/q.conf" batch --no-progress --concurrency 1 \
    -o "$tmp/ten.jsonl" "$tmp/tenants.jsonl" > /dev/null 2> "$tmp/ten.err"
rg_equal "a tenant's first task ends done" \
    "$(jq -r 'select(.id == "a1") | .status' "$tmp/ten.jsonl")" done
rg_equal "its later ones stop at its window's money" \
    "$(jq -r 'select(.id == "a3") | .status' "$tmp/ten.jsonl")" \
    budget_exceeded
rg_expect "... naming the tenant and the budget" "$tmp/ten.jsonl" \
    '"a3".*tenant \\"acme\\" has spent \$0\.[0-9]+ of its \$0\.0040.*tenant_max_cost'
rg_equal "another tenant's task ends done" \
    "$(jq -r 'select(.id == "o1") | .status' "$tmp/ten.jsonl")" done

rg_done
