#!/bin/sh
# test_cli_words.sh: what the command line says, read as a person reads
# it: a count of one takes the singular (batch's summary, submit, queue);
# batch's memory per concurrent task is never negative (it was the
# difference of two counters the kernel reads roughly); `reagent pending`
# says each deadline in local time with how long is left, next to the
# milliseconds programs read; `make demo` builds with a job per core.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

command -v redis-server >/dev/null || rg_skip "no redis-server (deploy/deps.sh)"
command -v jq >/dev/null || rg_skip "no jq (deploy/deps.sh)"

M=$(cd "$B" && pwd)/modules

cat > "$tmp/batch.conf" <<CONF
load_module $M/calc.so;
llm mock { base_url http://127.0.0.1:1/v1; model mock-1; }
agent a { tools calc; }
CONF

# batch: one task, three times (the figure per task was noise, of either
# sign, for so little)
i=0
while [ $i -lt 3 ]; do
    echo '{"id":"one","input":"What is 2 + 2?"}' |
        "$R" -c "$tmp/batch.conf" batch --mock - \
        > "$tmp/batch.out" 2> "$tmp/batch.err.$i"
    i=$((i + 1))
done
cat "$tmp/batch.err.0" "$tmp/batch.err.1" "$tmp/batch.err.2" \
    > "$tmp/batch.err"

rg_expect "batch: \"1 task in\"" "$tmp/batch.err" '^batch: 1 task in '
rg_lacks "never \"1 tasks\"" "$tmp/batch.err" '1 tasks'
rg_expect "the peak memory is said" "$tmp/batch.err" 'peak rss [0-9.]+ MiB'
rg_lacks "and no negative figure per task" "$tmp/batch.err" '\(-[0-9]'
rg_check "a figure per task is positive, or too little to say" \
    test "$(grep -c 'peak rss' "$tmp/batch.err")" -eq \
    "$(grep -Ec '\(([0-9][0-9.]* KiB per concurrent task|under 1 MiB grown: too little to say per task)\)$' "$tmp/batch.err")"

# submit and queue on a Redis queue: one task, one shard, one entry
rg_redis r
cat > "$tmp/q.conf" <<CONF
load_module $M/calc.so;
llm mock { base_url http://127.0.0.1:1/v1; model mock-1; }
agent a { tools calc; }
store redis { server unix:$redis_sock; }
queue { }
CONF

echo '{"id":"w1","input":"What is 2 + 2?"}' |
    "$R" -c "$tmp/q.conf" submit - > "$tmp/submit.out" 2> "$tmp/submit.err"
rg_expect "submit: \"1 task queued\"" "$tmp/submit.err" \
    '^reagent: 1 task queued, 0 submitted before, 0 refused$'

"$R" -c "$tmp/q.conf" queue > "$tmp/queue.out" 2>&1
rg_expect "queue: \"1 shard\"" "$tmp/queue.out" \
    '^queue tasks, group workers, 1 shard$'
rg_expect "queue: \"1 entry\", \"0 dead letters\"" "$tmp/queue.out" \
    '^shard 0: 1 entry, no group yet .*, 0 dead letters$'

# jq_true FILTER FILE: the filter holds of the file
jq_true() {
    jq -e "$1" "$2" > /dev/null
}

# pending: a task parked with 250 s left, another whose time is past
now=$(date +%s)
soon=$(( (now + 250) * 1000 ))
past=$(( (now - 90) * 1000 ))
rg_rcli zadd 'rg:{q:tasks}:parked' "$soon" p1 "$past" p0 > /dev/null
rg_rcli set "rg:{$(rg_task_sid p1)}:approval" \
    "{\"status\":\"pending\",\"round\":1,\"parked\":$past,\"deadline\":$soon,\"calls\":[]}" \
    > /dev/null

"$R" -c "$tmp/q.conf" pending > "$tmp/pending.out" 2>&1
rg_equal "pending: the deadline stays in ms for programs" \
    "$(jq -r '.[] | select(.task == "p1") | .deadline' "$tmp/pending.out")" \
    "$soon"
local_time=$(date -d "@$((soon / 1000))" '+%Y-%m-%d %H:%M:%S')
left=$(jq -r '.[] | select(.task == "p1") | .deadline_local' \
       "$tmp/pending.out")
case "$left" in
    "$local_time (in 4m "[0-9]"s)"|"$local_time (in 4m "[0-9][0-9]"s)")
        rg_ok "and in local time, with how long is left ($left)" ;;
    *)
        rg_fail "and in local time, with how long is left"
        echo "#   got: $left"
        echo "#   want: $local_time (in 4m …s)" ;;
esac
rg_check "a deadline past says how long ago" \
    jq_true '.[] | select(.task == "p0") | .deadline_local
           | test(" \\(1m 3[0-9]s ago\\)$")' "$tmp/pending.out"

"$R" -c "$tmp/q.conf" pending p1 > "$tmp/pending1.out" 2>&1
rg_check "pending TASK: its deadline and when it was parked, readable" \
    jq_true '(.deadline_local | test("\\(in 4m [0-9]+s\\)$"))
           and (.parked_local | test("\\(1m 3[0-9]s ago\\)$"))
           and .deadline == '"$soon" "$tmp/pending1.out"

# make demo builds with a job per core (its build was one file at a time);
# as a user runs it, not as a make that runs this test passes its flags
unset MAKEFLAGS MAKELEVEL MFLAGS
make -n -f "$B/Makefile" demo > "$tmp/demo.out" 2>&1
rg_expect "make demo builds with -j" "$tmp/demo.out" '[-]j[0-9]+ all'
make -n -j3 -f "$B/Makefile" demo > "$tmp/demo3.out" 2>&1
rg_lacks "and keeps a -j given to it" "$tmp/demo3.out" '[-]j[0-9]+ all'

echo "$n checks, $failed failed"
[ "$failed" -eq 0 ]
