#!/bin/sh
# test_cli.sh: tests of the reagent command line (src/core/reagent.c) and of
# `reagent batch` (src/queue/rg_batch.c), run as a user runs them: -V, -h,
# -t on good and bad configurations, `run` and `batch` against the mock
# model (B/rg_mock on a free loopback port), a provider error, transcripts,
# bad options, and an API key that must never be printed or recorded.
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Prints "ok N - what" or "not ok N - what" per check (tests/lib/
# rg_test_lib.sh) and exits 1 if any check failed.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

SECRET=sk-test-SECRET-cli-7f3a
RG_CLI_TEST_KEY=$SECRET
export RG_CLI_TEST_KEY


# log lines without their time and pid: "[emerg] text"
rg_strip_log() {
    sed 's|^[0-9][0-9][0-9][0-9]/[0-9][0-9]/[0-9][0-9] [0-9:]* \[\([a-z]*\)\] [0-9]*#0: |[\1] |' "$1"
}


rg_built

version=$(sed -n 's/^#define RG_VERSION *"\(.*\)"$/\1/p' "$B/rg_auto_config.h")


# -V, -h

"$R" -V > "$tmp/out" 2> "$tmp/err"
rg_rc "-V" $? 0
rg_has "-V names the version" "$tmp/out" "reagent version $version"
rg_check "-V names the libraries and their versions" \
    grep -Eq '^libraries: libevent [0-9][0-9a-z.-]*, libcurl [0-9][0-9.]*, jansson [0-9][0-9.]*, msgpack-c [0-9][0-9.]*, hiredis [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/out"
rg_check "-V names the tool module ABI" \
    grep -Eq '^tool module ABI: 1 \(rg1:p[0-9]+:l[0-9]+\)$' "$tmp/out"
rg_check "-V names the allocator" \
    grep -Eq "^allocator: (mimalloc [0-9]+\.[0-9]+\.[0-9]+ \(pages given back [0-9]+ ms after they empty\)|the C library's malloc)$" "$tmp/out"
if grep -q '^allocator: mimalloc' "$tmp/out"; then
    rg_has "-V: mimalloc gives pages back a second after they empty" \
        "$tmp/out" "pages given back 1000 ms after"
    MIMALLOC_DECOMMIT_DELAY=25 "$R" -V > "$tmp/out3" 2>/dev/null
    rg_has "MIMALLOC_DECOMMIT_DELAY has the last word" \
        "$tmp/out3" "pages given back 25 ms after"
else
    n=$((n + 1))
    echo "ok $n - mimalloc's decommit delay # skip a build without mimalloc (the sanitizers')"
fi
rg_check "-V writes nothing to stderr" test ! -s "$tmp/err"

"$R" --version > "$tmp/out2" 2>/dev/null
rg_check "--version is -V" cmp -s "$tmp/out" "$tmp/out2"

"$R" -h > "$tmp/out" 2> "$tmp/err"
rg_rc "-h" $? 0
rg_has "-h prints the usage on stdout" "$tmp/out" \
    "usage: reagent [-c FILE] [-t] [-V] [-q] [-h] [-s SIGNAL] COMMAND [ARGS]"


# the mocks

rg_mock_start mock
mock_port=$port

rg_mock_start fault --fault 400 --fault-count 0
fault_port=$port

if [ -z "$mock_port" ] || [ -z "$fault_port" ]; then
    rg_fail "the mock models start"
    cat "$tmp/mock.log"
    exit 1
fi

rg_ok "the mock models listen on ports $mock_port and $fault_port"


# configurations

cat > "$tmp/good.conf" <<EOF
load_module calc.so;

llm mock {
    base_url     http://127.0.0.1:$mock_port/v1;
    model        mock-1;
    api_key_env  RG_CLI_TEST_KEY;
}

agent a { }

agent b {
    tools  calc;
}
EOF

sed "s/:$mock_port\//:$fault_port\//" "$tmp/good.conf" > "$tmp/fault.conf"

# the same, logging everything: nothing of the key may show there either
sed '1i\
error_log stderr debug;' "$tmp/good.conf" > "$tmp/debug.conf"

cat > "$tmp/bad.conf" <<EOF
llm mock {
    base_url  http://127.0.0.1:$mock_port/v1;
    model     mock-1;
    api_key_env  RG_CLI_TEST_KEY;
}
agent a {
    bogus 1;
}
EOF


# -t

"$R" -t -c "$tmp/good.conf" > "$tmp/out" 2> "$tmp/err"
rg_rc "-t on a good configuration" $? 0
rg_same "-t on a good configuration: stderr" "$tmp/err" \
"reagent: the configuration file $tmp/good.conf syntax is ok
reagent: configuration file $tmp/good.conf test is successful"
rg_check "-t on a good configuration: nothing on stdout" test ! -s "$tmp/out"

"$R" -c "$tmp/debug.conf" -t > "$tmp/out" 2> "$tmp/err"
rg_rc "-t after -c, logging at debug" $? 0
rg_has_not "-t: the key is not in the output" "$tmp/err" "SECRET"

"$R" -t -c "$tmp/bad.conf" > "$tmp/out" 2> "$tmp/err"
rg_rc "-t on a bad configuration" $? 1
rg_strip_log "$tmp/err" > "$tmp/err.stripped"
rg_same "-t on a bad configuration: stderr" "$tmp/err.stripped" \
"[emerg] unknown directive \"bogus\" in $tmp/bad.conf:7
reagent: configuration file $tmp/bad.conf test failed"
rg_check "-t on a bad configuration: nothing on stdout" test ! -s "$tmp/out"
rg_has_not "-t on a bad configuration: the key is not in the output" \
    "$tmp/err" "SECRET"

"$R" -t -c "$tmp/missing.conf" > "$tmp/out" 2> "$tmp/err"
rg_rc "-t on a missing file" $? 1
rg_strip_log "$tmp/err" > "$tmp/err.stripped"
rg_same "-t on a missing file: stderr" "$tmp/err.stripped" \
"[emerg] open() \"$tmp/missing.conf\" failed (2: No such file or directory)
reagent: configuration file $tmp/missing.conf test failed"

RG_CLI_TEST_KEY= "$R" -t -c "$tmp/good.conf" > "$tmp/out" 2> "$tmp/err"
rg_rc "-t with the key variable empty" $? 1
rg_strip_log "$tmp/err" > "$tmp/err.stripped"
rg_same "-t with the key variable empty: stderr" "$tmp/err.stripped" \
"[emerg] llm \"mock\": the environment variable \"RG_CLI_TEST_KEY\" named by \"api_key_env\" is not set in $tmp/good.conf:6
reagent: configuration file $tmp/good.conf test failed"

# the shipped configuration, from the repository root: its modules are
# found in modules/ next to the binary
"$R" -t -c conf/reagent.conf > "$tmp/out" 2> "$tmp/err"
rg_rc "-t on conf/reagent.conf" $? 0
rg_same "-t on conf/reagent.conf: stderr" "$tmp/err" \
"reagent: the configuration file conf/reagent.conf syntax is ok
reagent: configuration file conf/reagent.conf test is successful"


# run

"$R" -c "$tmp/good.conf" run "hello there" > "$tmp/out" 2> "$tmp/err"
rg_rc "run" $? 0
rg_same "run: the answer on stdout" "$tmp/out" "Final answer: hello there"
rg_check "run: \"status: done\" on stderr" \
    grep -Eq '^status: done \(rounds 1, tool calls 0, tokens [0-9]+, [0-9]+ ms\)$' "$tmp/err"

"$R" -c "$tmp/debug.conf" run -a b --transcript "$tmp/t.json" "compute" \
    > "$tmp/out" 2> "$tmp/err"
rg_rc "run -a b --transcript, with a tool round" $? 0
rg_same "run with a tool: the answer" "$tmp/out" \
    "Final answer after 1 rounds: 14"
rg_check "run with a tool: \"status: done\" after 2 rounds and 1 tool call" \
    grep -Eq '^status: done \(rounds 2, tool calls 1, tokens [0-9]+, [0-9]+ ms\)$' "$tmp/err"
rg_has_not "run at debug: the key is not in the log" "$tmp/err" "SECRET"
rg_has_not "run: the key is not in the transcript" "$tmp/t.json" "SECRET"

if command -v python3 >/dev/null 2>&1; then
    rg_check "--transcript writes the messages and events as JSON" \
        python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
m, e = t["messages"], t["events"]
assert t["status"] == "done" and t["agent"] == "b", t
assert [x["role"] for x in m] == ["user", "assistant", "tool", "assistant"], m
assert m[0]["content"] == "compute", m
assert m[1]["tool_calls"][0]["function"]["name"] == "calc", m
assert m[2]["content"] == "14", m
assert m[3]["content"] == "Final answer after 1 rounds: 14", m
assert [x["type"] for x in e] == ["model_call", "turn", "tool_call", "model_call"], e
' "$tmp/t.json"
else
    rg_has "--transcript writes the messages" "$tmp/t.json" '"messages"'
    rg_has "--transcript writes the events" "$tmp/t.json" '"events"'
    n=$((n + 1))
    echo "ok $n - --transcript: the messages and events in order # skip python3 is not installed"
fi

# replay: the model's answers come from the transcript, so a model that
# cannot be reached is never asked
sed "s/:$mock_port\//:1\//" "$tmp/good.conf" > "$tmp/dead.conf"
"$R" -c "$tmp/dead.conf" replay "$tmp/t.json" > "$tmp/out" 2> "$tmp/err"
rg_rc "replay of the transcript" $? 0
rg_same "replay: the same answer" "$tmp/out" "Final answer after 1 rounds: 14"
rg_has "replay: every recorded answer used, as recorded" "$tmp/err" \
    "replay: the run matched the recording (2 model calls)"
rg_has_not "replay: the key is not in the output" "$tmp/err" "SECRET"

echo '{"id":"t1","input":"one"}' > "$tmp/task.json"
"$R" -c "$tmp/good.conf" replay "$tmp/task.json" > "$tmp/out" 2> "$tmp/err"
rg_rc "replay of a file that is not a transcript" $? 1
rg_same "replay of a file that is not a transcript: stderr" "$tmp/err" \
    "reagent: \"$tmp/task.json\" is not a reagent transcript (it needs \"agent\", \"messages\" with the task, and \"events\")"

"$R" -c "$tmp/fault.conf" run "hello" > "$tmp/out" 2> "$tmp/err"
rg_rc "run against a provider answering 400" $? 2
rg_has "run against a 400: \"status: failed\" with the provider's message" \
    "$tmp/err" "status: failed: model call failed (fatal, HTTP 400): Invalid request (injected fault). (before any answer from the model, "
rg_check "run against a 400: no answer on stdout" test ! -s "$tmp/out"
rg_has "run against a 400: the log says no answer came" "$tmp/err" \
    "session failed before any answer from the model, "

"$R" -c "$tmp/fault.conf" run --transcript "$tmp/tf.json" "hello" \
    > /dev/null 2> "$tmp/err"
rg_rc "run --transcript against a 400" $? 2
rg_has "the transcript of a failed run says so" "$tmp/tf.json" \
    '"status": "failed"'
rg_has_not "the transcript of a failed run lacks the key" "$tmp/tf.json" \
    "SECRET"

"$R" -c "$tmp/good.conf" run -a nope "hello" > "$tmp/out" 2> "$tmp/err"
rg_rc "run -a with an unknown agent" $? 1
rg_same "run -a with an unknown agent: stderr" "$tmp/err" \
    'reagent: unknown agent "nope" (agents: a, b)'

"$R" -c "$tmp/good.conf" run > "$tmp/out" 2> "$tmp/err"
rg_rc "run without a task" $? 1
rg_same "run without a task: stderr" "$tmp/err" \
    'reagent: run needs a task: reagent run "what is 2+2?"'

"$R" -c "$tmp/good.conf" run two words > "$tmp/out" 2> "$tmp/err"
rg_rc "run with two task words" $? 1
rg_same "run with two task words: stderr" "$tmp/err" \
    'reagent: unexpected argument "words" (quote the task as one argument)'


# batch: 5 tasks, a malformed line, one without "input", a blank line and
# an unknown agent

cat > "$tmp/tasks.jsonl" <<'EOF'
{"id":"t1","input":"one"}
{"id":"t2","input":"two","agent":"b"}
{"id":3,"input":"three"}
{"input":"four"}
{"id":"t5", "input": broken
{"id":"t6"}

{"id":"t8","input":"eight","agent":"nope"}
  {"id":"t9","input":"nine","agent":null}	
EOF

rg_batch_check() {
    batch=$1
    out=$2

    rg_count "$batch: 8 results" "$out" '"id"' 8
    rg_count "$batch: 5 done" "$out" '"status":"done"' 5
    rg_count "$batch: 3 invalid" "$out" '"status":"invalid"' 3
    rg_has "$batch: t1 done" "$out" \
        '{"id":"t1","status":"done","answer":"Final answer: one","rounds":1,'
    rg_has "$batch: t2 done by agent b" "$out" \
        '{"id":"t2","status":"done","answer":"Final answer after 1 rounds: 14","rounds":2,'
    rg_has "$batch: a number id" "$out" \
        '{"id":"3","status":"done","answer":"Final answer: three","rounds":1,'
    rg_has "$batch: no id: line-4" "$out" \
        '{"id":"line-4","status":"done","answer":"Final answer: four","rounds":1,'
    rg_has "$batch: t9 done" "$out" \
        '{"id":"t9","status":"done","answer":"Final answer: nine","rounds":1,'
    rg_check "$batch: the malformed line" grep -Eq \
        '^\{"id":"line-5","status":"invalid","answer":null,"rounds":0,"tokens":0,"ms":0,"error":"line 5 is not valid JSON: [^"]+"\}$' "$out"
    rg_has "$batch: the line without input" "$out" \
        '{"id":"t6","status":"invalid","answer":null,"rounds":0,"tokens":0,"ms":0,"error":"line 6: \"input\" is missing or not a non-empty string (or a list of messages)"}'
    rg_has "$batch: the unknown agent" "$out" \
        '{"id":"t8","status":"invalid","answer":null,"rounds":0,"tokens":0,"ms":0,"error":"line 8: unknown agent \"nope\""}'
    rg_has_not "$batch: the key is not in the results" "$out" "SECRET"
}

"$R" -c "$tmp/good.conf" batch "$tmp/tasks.jsonl" > "$tmp/out" 2> "$tmp/err"
rg_rc "batch FILE, not all done" $? 2
rg_batch_check "batch FILE" "$tmp/out"
rg_check "batch FILE: the summary counts the tasks by status" \
    grep -Eq '^batch: 8 tasks in [0-9.]+s: 5 done, 0 failed, 3 invalid$' \
    "$tmp/err"
rg_check "batch FILE: the summary counts 6 model calls and 1 tool call" \
    grep -Eq '^  model calls 6 \(retries 0\), tool calls 1 ' "$tmp/err"
rg_has_not "batch: the key is not in the log" "$tmp/err" "SECRET"

"$R" -c "$tmp/good.conf" batch - < "$tmp/tasks.jsonl" > "$tmp/out" \
    2> "$tmp/err"
rg_rc "batch - < FILE" $? 2
rg_batch_check "batch - < FILE" "$tmp/out"

cat "$tmp/tasks.jsonl" | "$R" -c "$tmp/good.conf" batch - > "$tmp/out" \
    2> "$tmp/err"
rg_rc "batch - from a pipe" $? 2
rg_batch_check "batch - from a pipe" "$tmp/out"

# a pipe that delivers the lines slowly
(
    head -n 2 "$tmp/tasks.jsonl"
    sleep 0.3
    tail -n +3 "$tmp/tasks.jsonl"
) | "$R" -c "$tmp/good.conf" batch --concurrency 1 - > "$tmp/out" \
    2> "$tmp/err"
rg_rc "batch --concurrency 1 - from a slow pipe" $? 2
rg_batch_check "batch from a slow pipe" "$tmp/out"

"$R" -c "$tmp/debug.conf" batch --concurrency 2 -o "$tmp/results.jsonl" \
    --no-progress "$tmp/tasks.jsonl" > "$tmp/out" 2> "$tmp/err"
rg_rc "batch -o FILE --concurrency 2, logging at debug" $? 2
rg_check "batch -o FILE: nothing on stdout" test ! -s "$tmp/out"
rg_batch_check "batch -o FILE" "$tmp/results.jsonl"
rg_has_not "batch at debug: the key is not in the log" "$tmp/err" "SECRET"

head -n 4 "$tmp/tasks.jsonl" > "$tmp/valid.jsonl"
"$R" -c "$tmp/good.conf" batch "$tmp/valid.jsonl" > "$tmp/out" 2> "$tmp/err"
rg_rc "batch with every task done" $? 0
rg_count "batch with every task done: 4 results" "$tmp/out" \
    '"status":"done"' 4

# CRLF line ends, and a last line without its newline
printf '{"id":"c1","input":"crlf"}\r\n{"id":"c2","input":"last"}' \
    > "$tmp/crlf.jsonl"
"$R" -c "$tmp/good.conf" batch "$tmp/crlf.jsonl" > "$tmp/out" 2> "$tmp/err"
rg_rc "batch with CRLF and no final newline" $? 0
rg_count "batch with CRLF and no final newline: 2 results" "$tmp/out" \
    '"id"' 2
rg_has "batch: a CRLF line" "$tmp/out" \
    '{"id":"c1","status":"done","answer":"Final answer: crlf","rounds":1,'
rg_has "batch: a last line without its newline" "$tmp/out" \
    '{"id":"c2","status":"done","answer":"Final answer: last","rounds":1,'

printf '{"id":"c2","input":"last"}' | "$R" -c "$tmp/good.conf" batch - \
    > "$tmp/out" 2> "$tmp/err"
rg_rc "batch - from a pipe without a final newline" $? 0
rg_has "batch - from a pipe without a final newline: the task" "$tmp/out" \
    '{"id":"c2","status":"done","answer":"Final answer: last","rounds":1,'

"$R" -c "$tmp/good.conf" batch - < /dev/null > "$tmp/out" 2> "$tmp/err"
rg_rc "batch - with no tasks" $? 0
rg_check "batch - with no tasks: no results" test ! -s "$tmp/out"
rg_check "batch - with no tasks: the summary says 0 tasks" \
    grep -Eq '^batch: 0 tasks in [0-9.]+s: 0 done, 0 failed$' "$tmp/err"

"$R" -c "$tmp/fault.conf" batch "$tmp/valid.jsonl" > "$tmp/out" 2> "$tmp/err"
rg_rc "batch against a provider answering 400" $? 2
rg_count "batch against a 400: 4 failed with the provider's message" \
    "$tmp/out" '"status":"failed","answer":null,"rounds":1,' 4
rg_count "batch against a 400: the error" "$tmp/out" \
    '"error":"model call failed (fatal, HTTP 400): Invalid request (injected fault)."}' 4

"$R" -c "$tmp/good.conf" batch "$tmp/none.jsonl" > "$tmp/out" 2> "$tmp/err"
rg_rc "batch on a missing file" $? 1
rg_same "batch on a missing file: stderr" "$tmp/err" \
    "reagent: cannot open tasks \"$tmp/none.jsonl\": No such file or directory"

for c in 0 -5 abc 1000001 2x; do
    "$R" -c "$tmp/good.conf" batch --concurrency "$c" "$tmp/tasks.jsonl" \
        > "$tmp/out" 2> "$tmp/err"
    rg_rc "batch --concurrency $c" $? 1
    rg_same "batch --concurrency $c: stderr" "$tmp/err" \
        "reagent: --concurrency expects a number from 1 to 1000000, not \"$c\""
    rg_check "batch --concurrency $c: nothing run" test ! -s "$tmp/out"
done


# options and commands

"$R" --bogus > "$tmp/out" 2> "$tmp/err"
rg_rc "an unknown option" $? 1
rg_same "an unknown option: stderr" "$tmp/err" \
    'reagent: unknown option "--bogus" (see reagent -h)'

"$R" -c "$tmp/good.conf" run --bogus "hello" > "$tmp/out" 2> "$tmp/err"
rg_rc "an unknown option after run" $? 1
rg_same "an unknown option after run: stderr" "$tmp/err" \
    'reagent: unknown option "--bogus"'

"$R" -c "$tmp/good.conf" run --concurrency 2 "hello" > "$tmp/out" \
    2> "$tmp/err"
rg_rc "a batch option after run" $? 1
rg_same "a batch option after run: stderr" "$tmp/err" \
    'reagent: unknown option "--concurrency"'

"$R" -c "$tmp/good.conf" frob "hello" > "$tmp/out" 2> "$tmp/err"
rg_rc "an unknown command" $? 1
rg_same "an unknown command: stderr" "$tmp/err" \
    'reagent: unknown command "frob" (directives, mcp, run, replay, resume, status, batch, submit, results, queue, approve, deny, pending, events, serve, signal or workers; see reagent -h)'

"$R" -c "$tmp/good.conf" > "$tmp/out" 2> "$tmp/err"
rg_rc "no command" $? 1
rg_has "no command: the usage on stderr" "$tmp/err" \
    "usage: reagent [-c FILE] [-t] [-V] [-q] [-h] [-s SIGNAL] COMMAND [ARGS]"


rg_done
