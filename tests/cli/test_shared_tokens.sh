#!/bin/sh
# test_shared_tokens.sh: the shared token budget and the fallback of the
# shared limits while Redis goes away (src/llm/rg_llm_shared.c) with the
# real binary, a redis-server and the mock model's arrival times (/stats):
#   - tokens_per_minute 12000 shared: two processes together stay within
#     200 tokens a second; each request reserves its estimate (a quarter
#     of its bytes) and is corrected from the usage, which here is much
#     larger (a long answer), so the pace follows the usage;
#   - shared_limits_fallback wait, Redis stopped in the middle of a run:
#     one WARN when it goes, one NOTICE when it is back, no model request
#     while it is down, every task done;
#   - shared_limits_fallback local: the same outage says that the process
#     holds the limits alone, once, and when they are shared again; model
#     requests go on meanwhile (what makes the wait check able to fail).
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq curl

# kept on disk, so that a restart keeps the sessions' leases
rg_redis r --appendonly yes --appendfsync always

# an answer of 400 bytes: about 100 completion tokens the estimate
# does not know of
long=$(awk 'BEGIN { for (i = 0; i < 40; i++) printf "ok ok ok. "; }')
echo "[{\"message\":{\"content\":\"$long\"}}]" > "$tmp/script.json"

conf() {
    cat <<CONF
llm m { base_url http://127.0.0.1:$1/v1; model mock-1; $2 }
agent a { llm m; }
store redis { server unix:$redis_sock; }
CONF
}


stats() {
    curl -s "http://127.0.0.1:$1/stats"
}

# two processes, one token budget
rg_mock tpm --script "$tmp/script.json"
tport=$port
conf $tport "tokens_per_minute 12000 shared;" > "$tmp/tpm.conf"
rg_task_lines 8 a > "$tmp/a.jsonl"
rg_task_lines 8 b > "$tmp/b.jsonl"

"$R" -c "$tmp/tpm.conf" batch --no-progress --concurrency 1 \
    -o "$tmp/ta.jsonl" "$tmp/a.jsonl" > /dev/null 2> "$tmp/ta.err" &
p1=$!
pids="$pids $p1"
"$R" -c "$tmp/tpm.conf" batch --no-progress --concurrency 1 \
    -o "$tmp/tb.jsonl" "$tmp/b.jsonl" > /dev/null 2> "$tmp/tb.err"
tb=$?
wait $p1
ta=$?

rg_equal "both batches end, every task done" \
    "$ta $tb $(cat "$tmp/ta.jsonl" "$tmp/tb.jsonl" | grep -c '"done"')" \
    "0 0 16"
total=$(cat "$tmp/ta.jsonl" "$tmp/tb.jsonl" | jq -s 'map(.tokens) | add')
most=$(cat "$tmp/ta.jsonl" "$tmp/tb.jsonl" | jq -s 'map(.tokens) | max')
rg_check "the usage is larger than one request's estimate: $total tokens, \
at most $most a request" test "$most" -ge 120
span=$(stats $tport | jq '.times_ms | (max - min)')
# a bucket of 200 tokens filled at 200 a second: past the first 200,
# each token waits 5 ms; each process may have one request in flight
# whose usage is not charged yet
least=$(( (total - 200 - 2 * most) * 5 ))
rg_check "$total tokens at 200 a second, from both processes, take at \
least $least ms: $span ms" test "$span" -ge "$least"
rg_check "the budget is in the store" test \
    "$(rg_rcli --scan --pattern 'rg:*llm:m*' | wc -l)" -ge 1
rg_ttl_sweep "every key reagent wrote (the buckets)"

# Redis goes away in the middle of a run; each run starts from an empty
# store (the buckets of another configuration would hold it back)
outage() {
    rg_rcli flushall > /dev/null
    rg_mock "$1" --script "$tmp/script.json" --latency 100
    oport=$port
    conf $oport "requests_per_minute 300 shared; shared_limits_fallback $1;" \
        > "$tmp/$1.conf"
    rg_task_lines 30 "$1" > "$tmp/$1.jsonl"
    "$R" -c "$tmp/$1.conf" batch --no-progress --concurrency 4 \
        -o "$tmp/$1.out" "$tmp/$1.jsonl" > /dev/null 2> "$tmp/$1.err" &
    bpid=$!
    pids="$pids $bpid"

    rg_until 10 '[ "$(stats $oport | jq .requests)" -ge 5 ]'
    kill -9 $redis_pid
    wait $redis_pid 2>/dev/null
    down_at=$(stats $oport | jq .requests)
    sleep 3
    down_end=$(stats $oport | jq .requests)
    rg_redis r --appendonly yes --appendfsync always
    wait $bpid
    brc=$?
}

outage wait
rg_equal "wait: the batch ends after Redis is back, every task done" \
    "$brc $(grep -c '"done"' "$tmp/wait.out")" "0 30" ||
    { grep -v '"done"' "$tmp/wait.out"; grep -v '^$' "$tmp/wait.err"; } |
    cut -c1-300 | sed 's/^/#   /'
rg_check "no model request while Redis was down ($down_at, then \
$down_end; one admitted before may arrive)" \
    test "$down_end" -le $((down_at + 1))
rg_equal "one WARN when the shared limits could not be asked" \
    "$(grep -cF 'its shared limits cannot be asked of the store' \
       "$tmp/wait.err")" 1
rg_expect "naming the fallback" "$tmp/wait.err" \
    'its requests wait until it answers again \(shared_limits_fallback wait\)'
rg_equal "one line when it answers again" \
    "$(grep -c 'the store answers again;' \
       "$tmp/wait.err")" 1

outage local
rg_equal "local: the batch ends, every task done" \
    "$brc $(grep -c '"done"' "$tmp/local.out")" "0 30" ||
    { grep -v '"done"' "$tmp/local.out"; grep -v '^$' "$tmp/local.err"; } |
    cut -c1-300 | sed 's/^/#   /'
rg_check "local: model requests went on while Redis was down ($down_at, \
then $down_end)" test "$down_end" -gt $((down_at + 1))
rg_equal "one WARN: the process holds the limits alone" \
    "$(grep -cF 'this process holds them alone until it answers again' \
       "$tmp/local.err")" 1
rg_expect "naming the fallback" "$tmp/local.err" \
    'alone until it answers again \(shared_limits_fallback local\)'
rg_equal "one line when it answers again" \
    "$(grep -c 'the store answers again;' \
       "$tmp/local.err")" 1

rg_ttl_sweep "every key reagent wrote through the outage"

rg_done
