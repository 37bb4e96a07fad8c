#!/bin/sh
# test_cli_signals.sh: the parts of the command line a user meets at a
# terminal or with a running batch: --approve-all and --deny-dangerous for
# a dangerous tool, the progress bar, and Ctrl-C on a batch (running tasks
# end "cancelled", their results are still written, exit code 130).
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Prints "ok N - what" or "not ok N - what" per check, exits 1 on failure.

B=${B:-objs}
. tests/lib/rg_test_lib.sh


# a dangerous tool, asked for once
cat > "$tmp/danger.json" <<'JSON'
[{"message":{"tool_calls":[{"name":"danger","arguments":{}}]}},
 {"message":{"content":"finished"}}]
JSON

rg_mock danger --script "$tmp/danger.json"

cat > "$tmp/danger.conf" <<CONF
load_module $(cd "$B" && pwd)/tests/plugins/barrier.so;
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { tools danger; }
CONF

"$R" -c "$tmp/danger.conf" run --transcript "$tmp/deny.json" \
    --deny-dangerous "go" < /dev/null > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 0 ] && rg_ok "--deny-dangerous: the task still ends done" \
              || rg_fail "--deny-dangerous: exit code $rc"
rg_expect "--deny-dangerous: the model was told the call was not approved" \
    "$tmp/deny.json" 'danger is a dangerous tool and was not approved'

"$R" -c "$tmp/danger.conf" run --transcript "$tmp/allow.json" \
    --approve-all "go" < /dev/null > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 0 ] && rg_ok "--approve-all: done" \
              || rg_fail "--approve-all: exit code $rc"
rg_expect "--approve-all: the tool ran" "$tmp/allow.json" '"content": "ran"'

# at a terminal, reagent asks; "y" allows, anything else refuses
if command -v script >/dev/null 2>&1; then
    printf 'y\n' | script -qec "$R -c $tmp/danger.conf run --transcript \
        $tmp/ask-yes.json go" /dev/null > "$tmp/ask.out" 2>&1
    rg_expect "at a terminal: the prompt names the tool" "$tmp/ask.out" \
        'wants to run the dangerous tool "danger"'
    rg_expect "at a terminal: y allows it" "$tmp/ask-yes.json" \
        '"content": "ran"'

    printf 'n\n' | script -qec "$R -c $tmp/danger.conf run --transcript \
        $tmp/ask-no.json go" /dev/null > "$tmp/ask.out" 2>&1
    rg_expect "at a terminal: n denies it" "$tmp/ask-no.json" \
        'was denied by the operator'
else
    n=$((n + 1))
    echo "ok $n - at a terminal: the prompt # skip script(1) not found"
fi

# without a terminal and without a flag, dangerous tools are refused
"$R" -c "$tmp/danger.conf" run --transcript "$tmp/default.json" "go" \
    < /dev/null > "$tmp/out" 2> "$tmp/err"
rg_expect "no terminal, no flag: refused" "$tmp/default.json" \
    'was not approved'
rg_expect "no terminal, no flag: one warn line names the tool, the agent, the way to allow it and the session" \
    "$tmp/err" \
    '\[warn\] .*dangerous tool "danger" refused: agent "a" does not approve it and there is no terminal to ask \("approve danger;" in the agent, or --approve-all, allows it\), agent: "a", session: "s-'


# a slow model: 20 tasks, 10 at a time, each answer takes 3 s
rg_mock slow --rounds 0 --latency 3000

cat > "$tmp/slow.conf" <<CONF
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { }
CONF

rg_task_lines 20 t 'task %d' > "$tmp/tasks.jsonl"

# the progress bar, forced on although stderr is a file
"$R" -c "$tmp/slow.conf" batch --progress --concurrency 20 \
    -o "$tmp/progress.jsonl" "$tmp/tasks.jsonl" 2> "$tmp/progress.err"
rg_expect "--progress draws a bar on stderr" "$tmp/progress.err" \
    '\[#+-*\] [0-9]+/20 done \([0-9]+ not done\), [0-9]+ running'
rg_expect "--progress: then the summary" "$tmp/progress.err" \
    '^batch: 20 tasks in .*: 20 done'

# Ctrl-C in the middle of a batch
"$R" -c "$tmp/slow.conf" batch --no-progress --concurrency 10 \
    -o "$tmp/int.jsonl" "$tmp/tasks.jsonl" 2> "$tmp/int.err" &
bpid=$!
sleep 1
kill -INT $bpid
wait $bpid
rc=$?

[ $rc -eq 130 ] && rg_ok "SIGINT: exit code 130" \
                || rg_fail "SIGINT: exit code $rc, expected 130"
lines=$(wc -l < "$tmp/int.jsonl")
[ "$lines" -eq 20 ] && rg_ok "SIGINT: every task of the input has a result" \
                    || rg_fail "SIGINT: $lines results, expected 20"
rg_expect "SIGINT: they say cancelled, with the reason" "$tmp/int.jsonl" \
    '"status":"cancelled".*"error":"interrupted by a signal"'
n_ns=$(grep -c '"status":"cancelled".*"error":"not started: the batch was interrupted by a signal"' "$tmp/int.jsonl")
[ "$n_ns" -eq 10 ] && rg_ok "SIGINT: the 10 not started say so" \
                   || rg_fail "SIGINT: $n_ns say not started, expected 10"
rg_expect "SIGINT: the summary counts them" "$tmp/int.err" \
    '20 cancelled \(10 not started\)'
rg_expect "SIGINT: the log says what happened" "$tmp/int.err" \
    'cancelling 10 running tasks'

rg_done
