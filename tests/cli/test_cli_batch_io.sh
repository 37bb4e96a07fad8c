#!/bin/sh
# test_cli_batch_io.sh: what `reagent batch` reads and writes, run as a
# user runs it, with real pipes and signals: an over-long line from a
# pipe is one `invalid` result and the line numbers after it stay right;
# -o refuses the tasks file itself and an existing results file (unless
# --resume, which skips what it holds and appends); SIGTERM leaves a result
# for every task ("not started" for those that were not); `run` ends on
# SIGTERM as on Ctrl-C; a results reader that stalls does not stop the
# reactor (the sessions go on, then backpressure holds new ones) and one
# that closes stops the batch; with `ulimit -n 256`, 2,000 tasks at once
# all end done; -c on a FIFO is an error, not a wait.
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Prints "ok N - what" or "not ok N - what" per check, exits 1 on failure.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

# a reader held until $tmp/release exists lets go when the test ends
trap 'touch "$tmp/release" 2>/dev/null; rg_cleanup' EXIT


# rg_wait_requests PORT N: until that mock has seen N requests (20 s at most)
rg_wait_requests() {
    i=0
    while [ "$(rg_requests "$1")" -lt "$2" ] && [ $i -lt 200 ]; do
        sleep 0.1
        i=$((i + 1))
    done
}

# rg_tasks N FILE [INPUT]: N tasks t0..t{N-1}
rg_tasks() {
    awk -v n="$1" -v input="${3:-task}" 'BEGIN {
        for (i = 0; i < n; i++)
            printf "{\"id\":\"t%d\",\"input\":\"%s %d\"}\n", i, input, i
    }' > "$2"
}


rg_mock fast --rounds 0
fast=$port

cat > "$tmp/fast.conf" <<CONF
llm m { base_url http://127.0.0.1:$fast/v1; model mock-1; }
agent a { }
CONF


# --- an over-long line from a pipe -------------------------------------

{
    echo '{"id":"a","input":"first"}'
    head -c 3000000 /dev/zero | tr '\0' x
    echo
    echo '{"id":"b","input":"after the long line"}'
    echo 'not json'
    head -c 1500000 /dev/zero | tr '\0' y
} > "$tmp/long.jsonl"

cat "$tmp/long.jsonl" | "$R" -c "$tmp/fast.conf" batch --no-progress - \
    > "$tmp/long.out" 2> "$tmp/long.err"

rg_equal "a line over 1m from a pipe: one result per line" \
    "$(wc -l < "$tmp/long.out" | tr -d ' ')" 5
rg_expect "the long line is one invalid result, named by its number" \
    "$tmp/long.out" '^\{"id":"line-2","status":"invalid".*"error":"line 2 is longer than 1m"\}$'
rg_expect "the task after it still runs" "$tmp/long.out" \
    '^\{"id":"b","status":"done"'
rg_expect "the line numbers after it stay right" "$tmp/long.out" \
    '"id":"line-4","status":"invalid".*"line 4 is not valid JSON'
rg_expect "a long last line without its newline: one result" "$tmp/long.out" \
    '"id":"line-5","status":"invalid".*"line 5 is longer than 1m"'

# the same long line, arriving in pieces with pauses between them
{
    echo '{"id":"c","input":"before"}'
    head -c 700000 /dev/zero | tr '\0' x
    sleep 0.3
    head -c 700000 /dev/zero | tr '\0' x
    sleep 0.3
    echo
    echo '{"id":"d","input":"after"}'
} | "$R" -c "$tmp/fast.conf" batch --no-progress - > "$tmp/slow.out" \
    2> "$tmp/slow.err"

rg_equal "a long line in pieces from a slow pipe: 3 results" \
    "$(wc -l < "$tmp/slow.out" | tr -d ' ')" 3
rg_expect "a long line in pieces: line 2 invalid" "$tmp/slow.out" \
    '"id":"line-2","status":"invalid".*longer than 1m'
rg_expect "a long line in pieces: then d" "$tmp/slow.out" \
    '^\{"id":"d","status":"done"'


# --- -o and the files it must not destroy ------------------------------

rg_tasks 4 "$tmp/tasks.jsonl"
cp "$tmp/tasks.jsonl" "$tmp/tasks.copy"

"$R" -c "$tmp/fast.conf" batch -o "$tmp/tasks.jsonl" "$tmp/tasks.jsonl" \
    > "$tmp/out" 2> "$tmp/err"
rg_equal "-o FILE that is the input: exit code" $? 1
rg_expect "-o FILE that is the input: says so" "$tmp/err" \
    'is the tasks file itself'
cmp -s "$tmp/tasks.jsonl" "$tmp/tasks.copy" \
    && rg_ok "-o FILE that is the input: the tasks are intact" \
    || rg_fail "-o FILE that is the input: the tasks were changed"

ln -s "$tmp/tasks.jsonl" "$tmp/link.jsonl"
"$R" -c "$tmp/fast.conf" batch -o "$tmp/link.jsonl" - < "$tmp/tasks.jsonl" \
    > "$tmp/out" 2> "$tmp/err"
rg_equal "-o through a link to stdin's file: exit code" $? 1
cmp -s "$tmp/tasks.jsonl" "$tmp/tasks.copy" \
    && rg_ok "-o through a link: the tasks are intact" \
    || rg_fail "-o through a link: the tasks were changed"

"$R" -c "$tmp/fast.conf" batch "$tmp/tasks.jsonl" >> "$tmp/tasks.jsonl" \
    2> "$tmp/err"
rg_equal "stdout appending to the tasks file: exit code" $? 1
rg_expect "stdout appending to the tasks file: says so" "$tmp/err" \
    'results would go to the tasks file itself'
cmp -s "$tmp/tasks.jsonl" "$tmp/tasks.copy" \
    && rg_ok "stdout appending to the tasks file: the tasks are intact" \
    || rg_fail "stdout appending to the tasks file: the tasks were changed"

echo '{"id":"old","status":"done"}' > "$tmp/results.jsonl"
cp "$tmp/results.jsonl" "$tmp/results.copy"
"$R" -c "$tmp/fast.conf" batch -o "$tmp/results.jsonl" "$tmp/tasks.jsonl" \
    > "$tmp/out" 2> "$tmp/err"
rg_equal "-o an existing results file: exit code" $? 1
rg_expect "-o an existing results file: says how to go on" "$tmp/err" \
    'already holds 29 bytes: pass --resume'
cmp -s "$tmp/results.jsonl" "$tmp/results.copy" \
    && rg_ok "-o an existing results file: it is not truncated" \
    || rg_fail "-o an existing results file: it was changed"

"$R" -c "$tmp/fast.conf" batch --resume "$tmp/tasks.jsonl" > "$tmp/out" \
    2> "$tmp/err"
rg_equal "--resume without -o: exit code" $? 1
rg_expect "--resume without -o: says so" "$tmp/err" '--resume needs -o FILE'

# --resume: t0 has a result, t1 was cancelled, t2's line was cut short
{
    echo '{"id":"t0","status":"done","answer":"kept","rounds":1,"tokens":1,"ms":1,"error":null}'
    echo '{"id":"t1","status":"cancelled","answer":null,"rounds":0,"tokens":0,"ms":0,"error":"not started"}'
    printf '%s' '{"id":"t2","status":"do'
} > "$tmp/resume.jsonl"

"$R" -c "$tmp/fast.conf" batch --no-progress --resume \
    -o "$tmp/resume.jsonl" "$tmp/tasks.jsonl" > "$tmp/out" 2> "$tmp/err"
rg_equal "--resume: exit code" $? 0
rg_equal "--resume: the first results are kept, 3 appended" \
    "$(wc -l < "$tmp/resume.jsonl" | tr -d ' ')" 5
rg_equal "--resume: t0 is not run again" \
    "$(grep -c '"id":"t0"' "$tmp/resume.jsonl")" 1
rg_expect "--resume: t0's result is the old one" "$tmp/resume.jsonl" \
    '"id":"t0","status":"done","answer":"kept"'
rg_equal "--resume: a cancelled t1 runs again" \
    "$(grep -c '"id":"t1","status":"done"' "$tmp/resume.jsonl")" 1
rg_equal "--resume: the cut line is gone, t2 runs again" \
    "$(grep -c '"id":"t2"' "$tmp/resume.jsonl")" 1
rg_expect "--resume: every line is whole" "$tmp/resume.jsonl" \
    '^\{"id":"t3","status":"done".*\}$'
rg_expect "--resume: says the cut line was removed" "$tmp/err" \
    'the last line was cut short'
rg_expect "--resume: the summary counts the skipped" "$tmp/err" \
    '^batch: 3 tasks in .*; 1 skipped'


# --- signals ---------------------------------------------------------

rg_mock slow --rounds 0 --latency 3000
slow=$port

cat > "$tmp/slow.conf" <<CONF
llm m { base_url http://127.0.0.1:$slow/v1; model mock-1; }
agent a { }
CONF

rg_tasks 10 "$tmp/ten.jsonl"

"$R" -c "$tmp/slow.conf" batch --no-progress --concurrency 3 \
    -o "$tmp/term.jsonl" "$tmp/ten.jsonl" 2> "$tmp/term.err" &
bpid=$!
rg_wait_requests "$slow" 3
kill -TERM $bpid
wait $bpid
rg_equal "SIGTERM on a batch: exit code" $? 130
rg_equal "SIGTERM: every task has a result" \
    "$(wc -l < "$tmp/term.jsonl" | tr -d ' ')" 10
rg_equal "SIGTERM: the 3 running ones were cancelled" \
    "$(grep -c '"status":"cancelled".*"error":"interrupted by a signal"' "$tmp/term.jsonl")" 3
rg_equal "SIGTERM: the 7 others say not started" \
    "$(grep -c '"status":"cancelled".*"error":"not started' "$tmp/term.jsonl")" 7

# a batch reading a pipe that stays open: it reads to the end of what
# comes, answering "not started", and ends when the writer does
( cat "$tmp/ten.jsonl"; sleep 2; echo '{"id":"late","input":"x"}' ) \
    | "$R" -c "$tmp/slow.conf" batch --no-progress --concurrency 3 - \
    > "$tmp/pipe-int.jsonl" 2> "$tmp/pipe-int.err" &
bpid=$!
rg_wait_requests "$slow" 6
kill -INT $bpid
wait $bpid
rg_equal "SIGINT, tasks from a pipe: exit code" $? 130
rg_equal "SIGINT, tasks from a pipe: every task has a result" \
    "$(wc -l < "$tmp/pipe-int.jsonl" | tr -d ' ')" 11
rg_expect "SIGINT, tasks from a pipe: the late one too" "$tmp/pipe-int.jsonl" \
    '"id":"late","status":"cancelled".*not started'

"$R" -c "$tmp/slow.conf" run --transcript "$tmp/run.json" "wait" \
    > "$tmp/run.out" 2> "$tmp/run.err" &
rpid=$!
rg_wait_requests "$slow" 7
kill -TERM $rpid
wait $rpid
rg_equal "SIGTERM on run: exit code" $? 2
rg_expect "SIGTERM on run: the status line" "$tmp/run.err" \
    '^status: cancelled: interrupted by a signal \(before any answer from the model, [0-9]+ ms\)$'
rg_expect "SIGTERM on run: the transcript is written" "$tmp/run.json" \
    '"status": "cancelled"'


# --- a results reader that stalls, one that closes --------------------

# answers of 2000 bytes: 1,500 results are about 3m
awk 'BEGIN {
    s = ""; for (i = 0; i < 2000; i++) s = s "z"
    printf "[{\"message\": {\"content\": \"%s\"}}]\n", s
}' > "$tmp/big.json"
rg_mock big --script "$tmp/big.json"
big=$port

cat > "$tmp/big.conf" <<CONF
llm m { base_url http://127.0.0.1:$big/v1; model mock-1; }
agent a { }
CONF

rg_tasks 1500 "$tmp/many.jsonl"

# the reader reads nothing until it is released
"$R" -c "$tmp/big.conf" batch --no-progress --concurrency 50 \
    "$tmp/many.jsonl" 2> "$tmp/stall.err" \
    | { while [ ! -f "$tmp/release" ]; do sleep 0.1; done; cat; } \
    > "$tmp/stall.out" &
spid=$!
pids="$pids $spid"

# While the reader sleeps, sessions go on (a blocking write would stop
# the reactor at the pipe's 64k, about 30 results); then the output
# buffer's bound holds new tasks back, below the 1,500.
rg_until 60 '[ "$(rg_requests "$big")" -ge 400 ]'
got=$(rg_requests "$big")
[ "$got" -ge 400 ] && rg_ok "a stalled reader: the sessions go on ($got)" \
                   || rg_fail "a stalled reader: only $got requests"

last=-1
i=0
while [ "$(rg_requests "$big")" != "$last" ] && [ $i -lt 120 ]; do
    last=$(rg_requests "$big")
    sleep 0.5
    i=$((i + 1))
done
[ "$last" -lt 1500 ] \
    && rg_ok "a stalled reader: backpressure holds new tasks ($last)" \
    || rg_fail "a stalled reader: all $last tasks started, nothing held"

touch "$tmp/release"
wait $spid
rg_equal "a stalled reader, released: every result arrives" \
    "$(wc -l < "$tmp/stall.out" | tr -d ' ')" 1500
rg_equal "a stalled reader: every line whole" \
    "$(grep -c '^{"id":"t[0-9]*","status":"done","answer":"z*",.*}$' "$tmp/stall.out")" 1500

# the reader goes away after one line
{ "$R" -c "$tmp/big.conf" batch --no-progress --concurrency 5 \
      "$tmp/many.jsonl" 2> "$tmp/close.err"; echo $? > "$tmp/close.rc"; } \
    | head -n 1 > "$tmp/close.out"
before=$(rg_requests "$big")
rg_equal "a closed results pipe: exit code" "$(cat "$tmp/close.rc")" 2
rg_expect "a closed results pipe: says so" "$tmp/close.err" \
    'the results pipe was closed: the batch stops'
sleep 1
[ $((before - 1500)) -lt 1000 ] \
    && rg_ok "a closed results pipe: the tasks are not all run" \
    || rg_fail "a closed results pipe: $((before - 1500)) tasks ran"
rg_equal "a closed results pipe: nothing more is asked after" \
    "$(rg_requests "$big")" "$before"


# --- 2,000 tasks with 256 descriptors -----------------------------------

rg_mock many --rounds 1
many=$port

cat > "$tmp/many.conf" <<CONF
load_module $B/modules/calc.so;
llm m { base_url http://127.0.0.1:$many/v1; model mock-1; }
agent a { tools calc; }
CONF

rg_tasks 2000 "$tmp/t2000.jsonl"

( ulimit -n 256 && exec "$R" -c "$tmp/many.conf" batch --no-progress \
      --concurrency 2000 -o "$tmp/t2000.out" "$tmp/t2000.jsonl" ) \
    2> "$tmp/t2000.err"
rg_equal "ulimit -n 256, 2,000 tasks at once: exit code" $? 0
rg_equal "ulimit -n 256: 2,000 done" \
    "$(grep -c '"status":"done"' "$tmp/t2000.out")" 2000
rg_expect "ulimit -n 256: the summary" "$tmp/t2000.err" \
    '^batch: 2000 tasks in .*: 2000 done, 0 failed'

# a soft limit below the hard one is raised to it at start (as nginx's
# worker_rlimit_nofile), seen in /proc/PID/limits of a waiting run
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -le 256 ]; then
    n=$((n + 1))
    echo "ok $n - the soft descriptor limit is raised to the hard one # skip hard limit $hard"
else
    rg_mock lazy --rounds 0 --latency 3000
    cat > "$tmp/lazy.conf" <<CONF
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { }
CONF
    ( ulimit -Sn 256 && exec "$R" -c "$tmp/lazy.conf" run "x" ) \
        > /dev/null 2> "$tmp/lazy.err" &
    lpid=$!
    i=0
    soft=
    while [ $i -lt 100 ]; do
        soft=$(sed -n 's/^Max open files *\([0-9]*\) .*/\1/p' \
               "/proc/$lpid/limits" 2>/dev/null)
        [ "$soft" = "$hard" ] && break
        sleep 0.05
        i=$((i + 1))
    done
    rg_equal "ulimit -Sn 256 under a hard limit of $hard: raised to the hard one" \
        "$soft" "$hard"
    wait "$lpid"
fi

# --- -c on a FIFO --------------------------------------------------------

mkfifo "$tmp/conf.fifo"
timeout 20 "$R" -t -c "$tmp/conf.fifo" > "$tmp/out" 2> "$tmp/err"
rg_equal "-c FIFO: an error, not a wait" $? 1
rg_expect "-c FIFO: says why" "$tmp/err" 'is not a regular file'

timeout 20 "$R" -c "$tmp/conf.fifo" run "x" > "$tmp/out" 2> "$tmp/err"
rg_equal "-c FIFO with run: an error" $? 1

rg_done
