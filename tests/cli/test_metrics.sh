#!/bin/sh
# test_metrics.sh: the metrics move as tasks run through the agent loop
# (src/metrics/, counted in the session, the llm client and the tools):
# `reagent batch` against the mock model, its metrics written at the end
# (batch --metrics-out FILE, as GET /metrics would show them), must
# be valid exposition format (tests/lib/rg_prom_check.sh) and count the
# tasks done, their model calls, tool calls and tokens; against a model
# that fails, the calls' errors, the retries and the sessions failed.
# The checker itself refuses broken text.
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Prints "ok N - what" or "not ok N - what" per check and exits 1 if any
# check failed (tests/lib/rg_test_lib.sh: its folder and mocks go at the
# end).

B=${B:-objs}
. tests/lib/rg_test_lib.sh

CHECK=tests/lib/rg_prom_check.sh


# rg_value FILE SERIES: the value of the sample SERIES (name{labels})
rg_value() {
    awk -v s="$2" 'index($0, s " ") == 1 { print $2; exit }' "$1"
}

# rg_is WHAT FILE SERIES OP N: the sample's value compared with N
rg_is() {
    v=$(rg_value "$2" "$3")
    if [ -n "$v" ] && awk -v v="$v" -v n="$5" -v op="$4" 'BEGIN {
            if (op == "eq") exit !(v == n);
            if (op == "gt") exit !(v > n);
            exit 1 }'
    then
        rg_ok "$1"
    else
        rg_fail "$1: $3 is \"$v\", expected $4 $5"
        grep -F "${3%%\{*}" "$2" | sed 's/^/#   got: /'
    fi
}

# rg_valid WHAT FILE: the checker accepts FILE
rg_valid() {
    if sh "$CHECK" "$2" 2> "$tmp/check.err"; then
        rg_ok "$1"
    else
        rg_fail "$1"
        sed 's/^/#   /' "$tmp/check.err"
    fi
}

rg_mock tools --rounds 2
tools=$port
rg_mock down --fault 500 --fault-count 0
down=$port

if [ -z "$tools" ] || [ -z "$down" ]; then
    rg_fail "the mock models start"
    rg_done
    exit 1
fi

cat > "$tmp/ok.conf" <<CONF
load_module $B/modules/calc.so;
llm mock { base_url http://127.0.0.1:$tools/v1; model mock-1; }
agent a { tools calc; }
CONF

cat > "$tmp/down.conf" <<CONF
llm flaky { base_url http://127.0.0.1:$down/v1; model mock-1;
            max_retries 2; retry_base 10ms; }
agent a { }
CONF

rg_task_lines 7 t 'task %d' '' 1 > "$tmp/tasks.jsonl"


# tasks that run: two tool rounds each, then the answer

"$R" -c "$tmp/ok.conf" batch --concurrency 3 --no-progress \
    --metrics-out "$tmp/ok.prom" "$tmp/tasks.jsonl" > "$tmp/ok.out" \
    2> "$tmp/ok.err"
rc=$?

if [ $rc -eq 0 ] && [ -s "$tmp/ok.prom" ]; then
    rg_ok "batch writes its metrics at the end"
else
    rg_fail "batch writes its metrics at the end (exit $rc)"
    sed 's/^/#   /' "$tmp/ok.err"
fi

rg_valid "the text is valid exposition format" "$tmp/ok.prom"
rg_is "every task counted done" "$tmp/ok.prom" \
    'reagent_sessions_finished_total{status="done"}' eq 7
rg_is "no session left in a state" "$tmp/ok.prom" \
    'reagent_sessions{state="model_wait"}' eq 0
rg_is "3 model calls per task, ok" "$tmp/ok.prom" \
    'reagent_model_calls_total{upstream="mock",outcome="ok"}' eq 21
rg_is "their durations: a histogram of as many" "$tmp/ok.prom" \
    'reagent_model_call_duration_seconds_count{upstream="mock"}' eq 21
rg_is "2 tool calls per task" "$tmp/ok.prom" \
    'reagent_tool_calls_total{tool="calc",outcome="ok"}' eq 14
rg_is "the tool calls' durations" "$tmp/ok.prom" \
    'reagent_tool_call_duration_seconds_count{tool="calc"}' eq 14
rg_is "prompt tokens counted" "$tmp/ok.prom" \
    'reagent_model_tokens_total{upstream="mock",kind="prompt"}' gt 0
rg_is "completion tokens counted" "$tmp/ok.prom" \
    'reagent_model_tokens_total{upstream="mock",kind="completion"}' gt 0
rg_is "no retries" "$tmp/ok.prom" \
    'reagent_model_retries_total{upstream="mock"}' eq 0
rg_is "one process" "$tmp/ok.prom" 'reagent_workers' eq 1
rg_is "its descriptors" "$tmp/ok.prom" 'reagent_open_fds{worker="0"}' gt 0
rg_is "its memory" "$tmp/ok.prom" \
    'reagent_resident_memory_bytes{worker="0"}' gt 1000000


# a model that always fails: errors by outcome, retries, failed sessions

"$R" -c "$tmp/down.conf" batch --concurrency 2 --no-progress \
    --metrics-out "$tmp/down.prom" "$tmp/tasks.jsonl" > "$tmp/down.out" \
    2> "$tmp/down.err"

rg_valid "a failing run's text is valid too" "$tmp/down.prom"
rg_is "every task counted failed" "$tmp/down.prom" \
    'reagent_sessions_finished_total{status="failed"}' eq 7
rg_is "none done" "$tmp/down.prom" \
    'reagent_sessions_finished_total{status="done"}' eq 0
rg_is "the calls ended as server errors" "$tmp/down.prom" \
    'reagent_model_calls_total{upstream="flaky",outcome="server_error"}' eq 7
rg_is "none ok" "$tmp/down.prom" \
    'reagent_model_calls_total{upstream="flaky",outcome="ok"}' eq 0
rg_is "each retried twice" "$tmp/down.prom" \
    'reagent_model_retries_total{upstream="flaky"}' eq 14


# the checker refuses what is not the format

sed 's/le="+Inf"} \([0-9]*\)/le="+Inf"} 999\1/' "$tmp/ok.prom" > "$tmp/bad1"
grep -v '^# TYPE reagent_workers' "$tmp/ok.prom" > "$tmp/bad2"
sed 's/outcome="ok"}/outcome=ok}/' "$tmp/ok.prom" > "$tmp/bad3"
sed 's/^reagent_workers 1$/reagent_workers one/' "$tmp/ok.prom" > "$tmp/bad4"

for b in bad1 bad2 bad3 bad4; do
    if sh "$CHECK" "$tmp/$b" 2> "$tmp/$b.err"; then
        rg_fail "the checker refuses $b"
    elif grep -q '^line [0-9]*: \|^histogram ' "$tmp/$b.err"; then
        rg_ok "the checker refuses $b and names the line"
    else
        rg_fail "the checker names the line of $b"
        sed 's/^/#   /' "$tmp/$b.err"
    fi
done


rg_done
