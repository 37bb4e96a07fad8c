#!/bin/sh
# test_submit_progress.sh: `reagent submit --wait` under its progress bar
# (src/queue/rg_stream_cli.c, rg_progress.c), with the real binary: a
# redis-server on a free loopback port, `reagent serve` with one worker,
# the mock model (100 ms a reply) and a second mock that refuses every
# request (400), so 2 of 20 tasks end failed:
#   - --progress: stderr holds the bar (done of total, not done, waiting
#     = total - done, a rate), redrawn as results come, a full last one,
#     and the summary by status; stdout holds exactly one JSON result per
#     task and nothing of the bar;
#   - one task of 1.5 s while a read blocks 2 s: the bar moves on;
#   - the same tasks again: their kept results, the summary says so;
#   - --no-progress, and a stderr that is not a terminal: no bar, the
#     summary still; a terminal (script(1)): the bar by default, and when
#     stdout is that terminal too, each result on a line of its own.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq python3

rport=$(rg_free_port)
rg_redis_tcp "$rport" "$tmp/redis.d"

cat > "$tmp/script.json" <<'JSON'
[{"message":{"content":"ok"}}]
JSON
rg_mock m --script "$tmp/script.json" --latency 100
mport=$port
rg_mock f --fault 400 --fault-count 0
fport=$port
rg_mock s --script "$tmp/script.json" --latency 1500
sport=$port

cat > "$tmp/s.conf" <<CONF
worker_processes 1;
concurrency 2;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1; }
llm f { base_url http://127.0.0.1:$fport/v1; model mock-1; }
llm s { base_url http://127.0.0.1:$sport/v1; model mock-1; }
agent a { llm m; }
agent bad { llm f; }
agent slow { llm s; }
store redis { server 127.0.0.1:$rport; }
queue { block 2s; }
CONF

rg_serve "$tmp/s.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "reading the queue" 1

# tasks PREFIX: 18 for agent a, 2 for bad
tasks() {
    i=0
    while [ $i -lt 20 ]; do
        if [ $i -eq 7 ] || [ $i -eq 13 ]; then
            echo "{\"id\":\"$1$i\",\"agent\":\"bad\",\"input\":\"t $i\"}"
        else
            echo "{\"id\":\"$1$i\",\"input\":\"t $i\"}"
        fi
        i=$((i + 1))
    done
}

# submit NAME ARGS...: submit --wait ARGS of tasks NAME, up to 60 s;
# $tmp/NAME.out, .err, .bars (the redraws one a line)
submit() {
    name=$1
    shift
    "$R" -c "$tmp/s.conf" submit --wait "$@" "$tmp/$name.jsonl" \
        > "$tmp/$name.out" 2> "$tmp/$name.err" &
    sub=$!
    pids="$pids $sub"
    rg_wait_gone $sub 60
    wait $sub
    code=$?
    tr '\r' '\n' < "$tmp/$name.err" > "$tmp/$name.bars"
}

# one_each NAME PREFIX: stdout is 20 JSON results, one per task
one_each() {
    rg_equal "$1: 20 lines on stdout" "$(wc -l < "$tmp/$1.out" | tr -d ' ')" 20
    rg_equal "$1: each a JSON result" \
        "$(jq -r .id "$tmp/$1.out" 2>/dev/null | sort -u | wc -l | tr -d ' ')" 20
    rg_equal "$1: by status" \
        "$(jq -r .status "$tmp/$1.out" | sort | uniq -c | tr -s ' ')" \
        " 18 done
 2 failed"
    rg_equal "$1: the failed are those of the refusing model" \
        "$(jq -r 'select(.status == "failed") | .id' "$tmp/$1.out" | sort \
           | tr '\n' ' ')" "${2}13 ${2}7 "
    rg_lacks "$1: no bar on stdout" "$tmp/$1.out" \
        "$(printf '\r')|\[[#-]+\]|waiting,"
}

bar='^\[[#-]{30}\] [0-9]+/20 done \([0-9]+ not done\), [0-9]+ waiting, [0-9.]+/s'

# forced on
tasks p > "$tmp/p.jsonl"
submit p --progress
rg_equal "--progress: submit --wait ends well" "$code" 0
one_each p p
rg_expect "--progress: stderr holds the bar" "$tmp/p.bars" "$bar"
grep -E "$bar" "$tmp/p.bars" > "$tmp/p.only"
rg_check "--progress: waiting is the total less those done, every time" \
    awk '{ split($2, a, "/"); n++; if (a[1] + $7 != 20) bad++ }
         END { exit !(n > 0 && bad == 0) }' "$tmp/p.only"
c=$(grep -Ec "$bar" "$tmp/p.bars")
rg_check "--progress: redrawn as the results come ($c bars)" test "$c" -ge 3
rg_expect "--progress: a bar of some done and some not" "$tmp/p.bars" \
    '^\[#*-+\] ([1-9]|1[0-9])/20 done'
rg_expect "--progress: the last bar is full, none waiting" "$tmp/p.bars" \
    '^\[#{30}\] 20/20 done \(2 not done\), 0 waiting, [0-9.]+/s  [0-9.]+s$'
rg_lacks "--progress: the last bar has no ETA" "$tmp/p.bars" \
    '20/20 done.*ETA'
rg_expect "--progress: the summary by status" "$tmp/p.err" \
    '^reagent: 20 tasks in [0-9.]+ s: 18 done, 2 failed \(20 of 20 results, [0-9.]+/s(; [0-9]+ had ended before the wait)?\)$'
rg_equal "--progress: the summary is the last line" \
    "$(tail -n 1 "$tmp/p.err" | cut -c 1-20)" "reagent: 20 tasks in"

# one task of 1.5 s, reads that block 2 s: the bar moves on meanwhile
echo '{"id":"slow1","agent":"slow","input":"t"}' > "$tmp/slow.jsonl"
submit slow --progress
rg_equal "no result for a while: submit --wait ends well" "$code" 0
c=$(grep -Ec '^\[-{30}\] 0/1 done \(0 not done\), 1 waiting, 0\.0/s  [0-9.]+s' \
    "$tmp/slow.bars")
rg_check "no result for a while: the bar is redrawn ($c times)" \
    test "$c" -ge 3
c=$(grep -E '0/1 done' "$tmp/slow.bars" | awk '{ print $NF }' | sort -u \
    | wc -l)
rg_check "no result for a while: its time moves on ($c times shown)" \
    test "$c" -ge 2
rg_expect "no result for a while: then the full bar" "$tmp/slow.bars" \
    '^\[#{30}\] 1/1 done \(0 not done\), 0 waiting'

# the same tasks again: none queued, their kept results
cp "$tmp/p.jsonl" "$tmp/again.jsonl"
submit again --progress
rg_equal "again: submit --wait ends well" "$code" 0
rg_expect "again: none queued" "$tmp/again.err" \
    '^reagent: 0 tasks queued, 20 submitted before, 0 refused$'
one_each again p
rg_expect "again: the summary says where the results came from" \
    "$tmp/again.err" \
    '^reagent: 20 tasks in [0-9.]+ s: 18 done, 2 failed \(20 of 20 results, [0-9.]+/s; 20 had ended before the wait\)$'
rg_expect "again: a full bar" "$tmp/again.bars" '^\[#{30}\] 20/20 done'

# forced off
tasks n > "$tmp/n.jsonl"
submit n --no-progress
rg_equal "--no-progress: submit --wait ends well" "$code" 0
one_each n n
rg_lacks "--no-progress: no bar" "$tmp/n.err" \
    "$(printf '\r')|\[[#-]+\]|waiting,"
rg_expect "--no-progress: the summary" "$tmp/n.err" \
    '^reagent: 20 tasks in [0-9.]+ s: 18 done, 2 failed \(20 of 20 results'

# the default, stderr a file: no bar
tasks d > "$tmp/d.jsonl"
submit d
rg_equal "stderr a file: submit --wait ends well" "$code" 0
one_each d d
rg_lacks "stderr a file: no bar" "$tmp/d.err" \
    "$(printf '\r')|\[[#-]+\]|waiting,"
rg_expect "stderr a file: the summary" "$tmp/d.err" \
    '^reagent: 20 tasks in [0-9.]+ s: 18 done, 2 failed'

# the default on a terminal: the bar (stdout to a file beside it)
if command -v script >/dev/null 2>&1; then
    tasks t > "$tmp/t.jsonl"
    script -qec "\"$R\" -c \"$tmp/s.conf\" submit --wait \"$tmp/t.jsonl\" \
        > \"$tmp/t.out\"" /dev/null > "$tmp/t.tty" 2>&1 < /dev/null
    rg_equal "a terminal: submit --wait ends well" "$?" 0
    tr '\r' '\n' < "$tmp/t.tty" > "$tmp/t.bars"
    rg_expect "a terminal: the bar by default" "$tmp/t.bars" \
        '^\[#{30}\] 20/20 done \(2 not done\), 0 waiting'
    rg_equal "a terminal: 20 results on stdout" \
        "$(jq -r .id "$tmp/t.out" | sort -u | wc -l | tr -d ' ')" 20

    # stdout the same terminal: each result on a line of its own, the bar
    # drawn again under it
    tasks u > "$tmp/u.jsonl"
    script -qec "\"$R\" -c \"$tmp/s.conf\" submit --wait \"$tmp/u.jsonl\"" \
        /dev/null > "$tmp/u.tty" 2>&1 < /dev/null
    rg_equal "a terminal for both: submit --wait ends well" "$?" 0
    tr '\r' '\n' < "$tmp/u.tty" | sed "s/$(printf '\033')\[K//g" \
        > "$tmp/u.lines"
    rg_equal "a terminal for both: 20 results, each a line" \
        "$(grep -c '^{"id":"u[0-9]*",' "$tmp/u.lines")" 20
    rg_lacks "a terminal for both: no result on the bar's line" \
        "$tmp/u.lines" 'done.*\{"id"'
    rg_expect "a terminal for both: the bar" "$tmp/u.lines" \
        '^\[#{30}\] 20/20 done \(2 not done\), 0 waiting'
else
    n=$((n + 1))
    echo "ok $n - a terminal: the bar by default # skip no script(1)"
fi

# -h names the options
"$R" -h > "$tmp/help" 2>&1
rg_expect "-h: submit's --progress and --no-progress" "$tmp/help" \
    'submit .*--wait \[--progress\|--no-progress\]'

kill -TERM $master
rg_wait_gone $master 20
rg_check "the master stops" test ! -d /proc/$master

rg_done
