#!/bin/sh
# test_cli_batch_tasks.sh: what `reagent batch` makes of its task lines
# (src/queue/rg_task.c, rg_batch.c) and how it shows its progress
# (rg_batch_progress.c), against the mock model: a key no task has is an
# invalid result that names it, a second task with an id already used is
# an invalid result that names the first line, "input" as a list of
# messages reaches the model as that conversation; the progress bar
# counts done/total, rate and ETA, and moves as tasks end.
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Prints "ok N - what" or "not ok N - what" per check (tests/lib/
# rg_test_lib.sh) and exits 1 if any check failed.

B=${B:-objs}
. tests/lib/rg_test_lib.sh


rg_mock_start plain
plain=$port
rg_mock_start slow --latency 150
slow=$port

if [ -z "$plain" ] || [ -z "$slow" ]; then
    echo "not ok 1 - the mock models start"
    cat "$tmp/mock.log"
    exit 1
fi

cat > "$tmp/a.conf" <<CONF
llm mock { base_url http://127.0.0.1:$plain/v1; model mock-1; }
agent a { system_prompt "You are terse."; }
CONF

cat > "$tmp/slow.conf" <<CONF
llm mock { base_url http://127.0.0.1:$slow/v1; model mock-1; }
agent a { }
CONF


# task lines

cat > "$tmp/tasks.jsonl" <<'TASKS'
{"id":"a","input":"one"}
{"id":"b","input":"two","max_rouns":3}
{"id":"a","input":"again"}
{"id":"h","input":[{"role":"system","content":"Talk like a pirate."},{"role":"user","content":"hello"},{"role":"assistant","content":"ahoy"},{"role":"user","content":[{"type":"text","text":"what "},{"type":"text","text":"now?"}]}]}
{"id":"bad","input":[{"role":"user","content":"q"},{"role":"tool","content":"x"}]}
TASKS

"$R" -c "$tmp/a.conf" batch --concurrency 1 --no-progress "$tmp/tasks.jsonl" \
    > "$tmp/out" 2> "$tmp/err"

rg_count "5 lines, 5 results" "$tmp/out" '"id"' 5
rg_has "the first a runs" "$tmp/out" \
    '{"id":"a","status":"done","answer":"Final answer: one"'
rg_has "an unknown key is invalid, named, with the key meant" "$tmp/out" \
    '{"id":"b","status":"invalid","answer":null,"rounds":0,"tokens":0,"ms":0,"error":"line 2: unknown key \"max_rouns\"; did you mean \"max_rounds\"?"}'
rg_has "a second id a is invalid and names the line that had it" "$tmp/out" \
    '{"id":"a","status":"invalid","answer":null,"rounds":0,"tokens":0,"ms":0,"error":"line 3: duplicate id \"a\": line 1 has it already (ids must be unique in one input)"}'
rg_has "messages as input: the model answers the last user message" \
    "$tmp/out" '{"id":"h","status":"done","answer":"Final answer: what now?"'
rg_has "messages with a tool message are invalid, with the index" \
    "$tmp/out" '"error":"line 5: \"input\"[1]: \"role\" must be'
rg_has "the summary counts the duplicate" "$tmp/err" \
    "3 invalid (1 with an id used before)"

# the conversation as the model got it: the agent's prompt, then the task's
if command -v curl >/dev/null 2>&1; then
    curl -s "http://127.0.0.1:$plain/last_request" > "$tmp/last"
    rg_has "the model got the agent's prompt, then the task's messages" \
        "$tmp/last" '"messages":[{"role":"system","content":"You are terse."},{"role":"system","content":"Talk like a pirate."},{"role":"user","content":"hello"},{"role":"assistant","content":"ahoy"},{"role":"user","content":"what now?"}]'
else
    n=$((n + 1))
    echo "ok $n - the model got the conversation # skip no curl"
fi


# the progress bar, forced on: 10 tasks one at a time, 150 ms each

rg_task_lines 10 p 'task %d' '' 1 > "$tmp/ten.jsonl"

"$R" -c "$tmp/slow.conf" batch --concurrency 1 --progress -o "$tmp/ten.out" \
    "$tmp/ten.jsonl" 2> "$tmp/progress"
tr '\r' '\n' < "$tmp/progress" > "$tmp/bars"

rg_has "progress: a file's total is known from the start" "$tmp/bars" \
    "] 1/10 done (0 not done), "
if grep -Eq '^\[#+-+\] [1-9]/10 done \(0 not done\), [01] running, [0-9.]+/s, ETA [0-9.]+s  [0-9.]+s' "$tmp/bars"; then
    rg_ok "progress: the bar fills, with the rate and ETA, as tasks end"
else
    rg_fail "progress: the bar fills, with the rate and ETA, as tasks end"
    sed 's/^/#   got: /' "$tmp/bars"
fi
c=$(grep -Ec '^\[[#-]+\] [1-9]/10 done' "$tmp/bars")
if [ "$c" -ge 5 ]; then
    rg_ok "progress: redrawn as tasks end ($c of 9 states shown)"
else
    rg_fail "progress: redrawn as tasks end: $c lines"
    sed 's/^/#   got: /' "$tmp/bars"
fi
rg_has "progress: the last line is full" "$tmp/bars" \
    "[##############################] 10/10 done (0 not done), 0 running,"

# from a pipe: no total until the input ends
cat "$tmp/ten.jsonl" | "$R" -c "$tmp/slow.conf" batch --concurrency 1 \
    --progress -o "$tmp/ten2.out" - 2> "$tmp/progress2"
tr '\r' '\n' < "$tmp/progress2" > "$tmp/bars2"
if grep -Eq '^[1-9] done \(0 not done\), [01] running, [0-9.]+/s  ' "$tmp/bars2"; then
    rg_ok "progress from a pipe: done and rate before the total is known"
else
    rg_fail "progress from a pipe: done and rate before the total is known"
    sed 's/^/#   got: /' "$tmp/bars2"
fi
rg_has "progress from a pipe: the total once the input ended" "$tmp/bars2" \
    "] 10/10 done (0 not done), 0 running,"


# a provider's finish reason ends in the result line: a content filter's
# is filtered, one nobody knows is failed; both quote it
for f in content_filter finish_unknown; do
    rg_mock_start "$f" --script "tests/integration/provider_$f.json"
    cat > "$tmp/$f.conf" <<CONF
llm mock { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { }
CONF
    echo '{"id":"f","input":"hi"}' > "$tmp/$f.jsonl"
    "$R" -c "$tmp/$f.conf" batch --no-progress "$tmp/$f.jsonl" \
        > "$tmp/$f.out" 2> "$tmp/$f.err"
done
rg_has "a content filter's finish: status filtered" "$tmp/content_filter.out" \
    '"status":"filtered"'
rg_has "... with the finish reason in the result" "$tmp/content_filter.out" \
    '"finish_reason":"content_filter"'
rg_has "an unknown finish reason: status failed" "$tmp/finish_unknown.out" \
    '"status":"failed"'
rg_has "... with the finish reason in the result" "$tmp/finish_unknown.out" \
    '"finish_reason":"abort"'
rg_has "... and a readable error that quotes it" "$tmp/finish_unknown.out" \
    '"error":"the model'"'"'s answer ended with finish_reason \"abort\"'

# the provider's request id under the Anthropic-style name request-id
rg_mock_start rid --request-id request-id
cat > "$tmp/rid.conf" <<CONF
llm mock { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { }
CONF
"$R" -c "$tmp/rid.conf" run --transcript "$tmp/rid.json" "hi" \
    > /dev/null 2> "$tmp/rid.err"
if python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
calls = [e for e in t["events"] if e["type"] == "model_call"]
assert calls
for e in calls:
    assert list(e["provider_request_id"]) == ["request-id"], e
    assert e["provider_request_id"]["request-id"].startswith("req-mock-"), e
' "$tmp/rid.json" 2> "$tmp/rid.py"; then
    rg_ok "a request-id header is kept as the provider's request id"
else
    rg_fail "a request-id header is kept as the provider's request id"
    sed 's/^/#   /' "$tmp/rid.py" "$tmp/rid.err"
fi


rg_done
