#!/bin/sh
# chaos.sh: the correctness suite of `reagent serve`, in the manner of a
# Jepsen analysis: real processes, real signals, a real redis-server, the
# mock model and a side effect counted apart (tests/chaos/README.md).
#
#     sh tests/chaos/chaos.sh [-n TASKS] [-d SECONDS] [-w SECONDS]
#                             [-s SEED]... [-o DIR] NEMESIS...
#
# For each nemesis and each seed: a master and 3 workers (`reagent serve`)
# reading one queue in a redis-server (appendonly yes, appendfsync always)
# that they reach through a TCP proxy (rg_chaos_proxy); the mock model,
# whose script asks for one `count` call and then answers; count (tests/
# plugins/count.so) INCRs a counter per execution in a Redis of its own,
# keyed by the call's idempotency key (the task's session, named after its
# id, its round and its call id: a key of the task's own). TASKS tasks go
# in chunks over the first 70% of the run (-d, 8 s), each chunk by one
# client: `reagent submit`, `reagent submit --wait` or POST /v1/tasks; the
# nemesis strikes when its seeded schedule says (schedule.py), for the
# whole run; then every fault is healed and the run waits up to -w
# seconds (20) for every task accepted to have its result. Then the
# checker (check.py) reads the history and the counters and prints the
# run's row; under it, what it found and the command that runs it again.
#
# Nemeses (nemesis.sh): kill-worker stop-worker redis-kill redis-wipe
# partition partition-hold storm kill-master kill-master-only all (every
# one at once but kill-master-only), none.
# Seeds: -s, repeatable; without, one from the clock (printed). Every
# run's files stay in DIR/NEMESIS-SEED (-o; by default a folder that is
# removed at the end unless a run failed, then it is printed).
#
# Exits 0 when every run passed, 1 when one did not, 2 when one could not
# run (its servers did not start).
# Run from the repository root with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

CHAOS_TASKS=30
CHAOS_DURATION=8
CHAOS_WAIT=20
CHAOS_LATENCY=${CHAOS_LATENCY:-150}     # ms, each model answer
CHAOS_TOOL_MS=${CHAOS_TOOL_MS:-300}     # ms, each side effect's sleep
seeds=
out=

usage() {
    echo "usage: sh tests/chaos/chaos.sh [-n TASKS] [-d SECONDS]" \
         "[-w SECONDS] [-s SEED]... [-o DIR] NEMESIS..." >&2
    echo "nemeses: kill-worker stop-worker redis-kill redis-wipe" \
         "partition partition-hold storm kill-master kill-master-only" \
         "all none" >&2
    exit 2
}

while getopts n:d:w:s:o:h opt; do
    case $opt in
        n) CHAOS_TASKS=$OPTARG ;;
        d) CHAOS_DURATION=$OPTARG ;;
        w) CHAOS_WAIT=$OPTARG ;;
        s) seeds="$seeds $OPTARG" ;;
        o) out=$OPTARG ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || usage

for t in redis-server redis-cli jq curl python3 setsid pgrep; do
    command -v $t > /dev/null || rg_skip "no $t (deploy/deps.sh)"
done

# the Python of the system when there is one (a version manager's shim
# in front of it costs seconds a call, and a run makes a dozen calls);
# CHAOS_PYTHON chooses another
# no __pycache__ beside the scripts
export PYTHONDONTWRITEBYTECODE=1
PY=${CHAOS_PYTHON:-python3}
[ -z "$CHAOS_PYTHON" ] && [ -x /usr/bin/python3 ] && PY=/usr/bin/python3

CHAOS_PROXY=$B/tests/rg_chaos_proxy
[ -x "$CHAOS_PROXY" ] || { echo "chaos.sh: no $CHAOS_PROXY: make tests" >&2;
                          exit 1; }
[ -f "$B/tests/plugins/count.so" ] || {
    echo "chaos.sh: no $B/tests/plugins/count.so: make tests" >&2; exit 1; }
BB=$(cd "$B" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

[ -n "$seeds" ] || seeds=$(( $(date +%s) % 100000 ))

keep=1
if [ -z "$out" ]; then
    out=$tmp/chaos
    keep=0
fi
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)

. "$here/nemesis.sh"


# the run's clock and its history -----------------------------------------

chaos_now() {
    date +%s%3N
}

chaos_sleep_ms() {
    sleep "$(awk -v ms="$1" 'BEGIN { printf "%.3f", ms / 1000 }')"
}

# sleeps until T (unix ms)
chaos_sleep_until() {
    d=$(awk -v t="$1" -v now="$(chaos_now)" \
            'BEGIN { d = (t - now) / 1000; printf "%.3f", (d > 0 ? d : 0) }')
    sleep "$d"
}

# chaos_hist FIELDS: one line of the history, FIELDS its JSON members
chaos_hist() {
    printf '{"t":%s,%s}\n' "$(chaos_now)" "$1" >> "$dir/history.jsonl"
}

# chaos_event NAME start|end FIELDS
chaos_event() {
    chaos_hist "\"type\":\"nemesis\",\"f\":\"$1\",\"phase\":\"$2\"${3:+,$3}"
    echo "#   $(date +%T.%3N) nemesis $1 $2 ${3:-}" >> "$dir/nemesis.log"
}

# a process we started, to be stopped at the end: its pid and its name
chaos_track() {
    echo "$1 $2" >> "$dir/pids"
}

# rg_free_port (tests/lib/rg_test_lib.sh) with $PY
chaos_free_port() {
    while :; do
        fp=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        [ "$fp" -le 55535 ] || continue
        grep -qx "$fp" "$tmp/.ports" 2>/dev/null || break
    done
    echo "$fp" >> "$tmp/.ports"
    echo "$fp"
}

# alive and not a zombie (one this shell has not reaped yet)
chaos_alive() {
    [ -n "$1" ] && [ -r "/proc/$1/stat" ] &&
        ! grep -q '^[0-9]* (.*) Z ' "/proc/$1/stat" 2>/dev/null
}


# the servers -------------------------------------------------------------

chaos_redis_start() {
    mkdir -p "$dir/redis.d"
    redis-server --port "$rport" --bind 127.0.0.1 --dir "$dir/redis.d" \
        --appendonly yes --appendfsync always --save "" \
        --logfile "$dir/redis.log" &
    echo $! > "$dir/redis.pid"
    chaos_track $! redis-server
    ri=0
    while [ "$(redis-cli -p "$rport" ping 2>/dev/null)" != PONG ] \
          && [ $ri -lt 400 ]; do
        sleep 0.05
        ri=$((ri + 1))
    done
}

chaos_redis_keys() {
    redis-cli -p "$rport" dbsize 2>/dev/null | grep -E '^[0-9]+$' || echo null
}

chaos_mock_start() {
    "$B/rg_mock" --port "$mport" --quiet --script "$dir/script.json" \
        --latency "$CHAOS_LATENCY" --request-log "$dir/requests.log" "$@" \
        2>> "$dir/mock.err" &
    echo $! > "$dir/mock.pid"
    chaos_track $! rg_mock
    mi=0
    while ! curl -s -o /dev/null "http://127.0.0.1:$mport/stats" \
          && [ $mi -lt 200 ]; do
        sleep 0.05
        mi=$((mi + 1))
    done
}

chaos_mock_stop() {
    mp=$(cat "$dir/mock.pid" 2>/dev/null)
    [ -n "$mp" ] && kill -9 "$mp" 2>/dev/null
    mj=0
    while chaos_alive "$mp" && [ $mj -lt 100 ]; do
        sleep 0.05
        mj=$((mj + 1))
    done
}

# the master's pid, from its own pid file
chaos_master() {
    cat "$dir/reagent.pid" 2>/dev/null | tr -dc 0-9
}

# `reagent serve` in a process group of its own (systemd's cgroup, for
# kill-master); returns once its pid file names a live master
chaos_serve_start() {
    so=$(chaos_master)
    setsid "$R" -c "$dir/serve.conf" serve --foreground \
        >> "$dir/serve.out" 2>&1 &
    si=0
    while [ $si -lt 200 ]; do
        sm=$(chaos_master)
        [ -n "$sm" ] && [ "$sm" != "$so" ] && chaos_alive "$sm" && break
        sleep 0.05
        si=$((si + 1))
    done
    chaos_track "$(chaos_master)" reagent
}

chaos_conf() {
    cat <<CONF
load_module $BB/tests/plugins/count.so;
module count { redis $dir/count.sock; }
worker_processes 3;
concurrency 64;
thread_pool default threads=32;
pid $dir/reagent.pid;
error_log $dir/error.log info;
drain_timeout 5s;
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1; }
agent a { llm m; tools count; tool_timeout 30s; }
store redis { server 127.0.0.1:$1; connect_timeout 500ms; }
store_timeout 60s;
lease_ttl 1s;
queue { claim_idle 2s; block 500ms; }
http { listen 127.0.0.1:$hport; }
CONF
}


# the clients -------------------------------------------------------------

# chaos_submit cli|wait|http FIRST COUNT: tasks cFIRST.. by one client.
# The history gets each attempt (an "invoke" with its ids), then each
# task's answer: ok (queued), ok with "before" (reagent says it was
# submitted before: it has it), fail (refused: not queued) or info (the
# client cannot tell). A task left unknown is submitted again with the
# same id, as a careful client does (an id is the task's key: reagent
# queues it at most once), up to 3 times, 2, 4 then 8 s later, by
# `reagent submit` (the HTTP API's by POST again).
chaos_submit() {
    via=$1
    f=$dir/tasks-$2
    awk -v a="$2" -v n="$3" 'BEGIN { for (i = a; i < a + n; i++)
        printf "{\"id\":\"c%05d\",\"input\":\"chaos c%05d\"}\n", i, i }' \
        > "$f-0.jsonl"
    try=0
    while :; do
        a=$f-$try
        idl=$(sed 's/^{"id":"\([^"]*\)".*/"\1"/' "$a.jsonl" | paste -sd, -)
        chaos_hist "\"type\":\"invoke\",\"f\":\"submit\",\"via\":\"$via\",\"try\":$try,\"ids\":[$idl]"
        : > "$a.ok"
        : > "$a.before"
        : > "$a.fail"
        chaos_attempt "$via" "$a" "$2"
        chaos_answers "$a" "$via" "$try"
        [ -s "$a.info" ] && [ $try -lt 3 ] || break
        sleep $((2 << try))
        try=$((try + 1))
        grep -F -f "$a.info" "$a.jsonl" > "$f-$try.jsonl"
        [ "$via" = wait ] && via=cli
    done
    # a submit --wait goes on waiting for its results, in the background,
    # until the run stops it
}

# chaos_attempt VIA A FIRST: one attempt of the tasks in A.jsonl; writes
# the ids queued to A.ok, those reagent says it has to A.before, "ID
# WHY" of those refused to A.fail, and why the rest are unknown to A.why
chaos_attempt() {
    a=$2
    case $1 in
    cli)
        "$R" -c "$dir/client.conf" submit "$a.jsonl" > "$a.ok" 2> "$a.err"
        echo "submit exit $?: $(grep -v ' was submitted before' "$a.err" |
            tail -n 1)" > "$a.why"
        chaos_cli_answers "$a"
        ;;
    wait)
        # its results into the history as they come
        mkfifo "$a.fifo"
        "$PY" "$here/stamp.py" wait "$dir/history.jsonl" \
            "$dir/wait-$3.jsonl" < "$a.fifo" &
        echo $! >> "$dir/stampers"
        chaos_track $! stamp.py
        "$R" -c "$dir/client.conf" submit --wait --no-progress "$a.jsonl" \
            > "$a.fifo" 2> "$a.err" &
        wp=$!
        echo "$wp" >> "$dir/waiters"
        chaos_track "$wp" reagent
        # it says how many it queued before it waits for them
        wi=0
        while ! grep -q 'tasks\{0,1\} queued' "$a.err" 2>/dev/null \
              && chaos_alive "$wp" && [ $wi -lt 600 ]; do
            sleep 0.05
            wi=$((wi + 1))
        done
        q=$(sed -n 's/^reagent: \([0-9]*\) tasks\{0,1\} queued, \([0-9]*\) submitted before.*/\1 \2/p' "$a.err" | head -n 1)
        chaos_cli_answers "$a"
        # every line went through (none was cut short): those not said
        # otherwise were queued
        if [ -n "$q" ] &&
           [ $(( ${q% *} + ${q#* } )) -eq "$(wc -l < "$a.jsonl")" ]; then
            sed 's/^{"id":"\([^"]*\)".*/\1/' "$a.jsonl" |
                grep -vxF -f "$a.before" -f "$a.busy" > "$a.ok"
        fi
        echo "submit --wait: ${q:-no count}: $(tail -n 1 "$a.err")" \
            > "$a.why"
        ;;
    http)
        jq -s -c . "$a.jsonl" > "$a.json"
        code=$(curl -s -m 10 -o "$a.body" -w '%{http_code}' \
                    -H 'Content-Type: application/json' \
                    --data-binary "@$a.json" \
                    "http://127.0.0.1:$hport/v1/tasks")
        rc=$?
        echo "curl exit $rc, HTTP $code" > "$a.why"
        if jq -e '.tasks' "$a.body" > /dev/null 2>&1; then
            # each task's own answer: queued, submitted before (409),
            # refused (503: the queue did not take it; 400), unless the
            # answer itself says its outcome is unknown
            jq -r '.tasks[] | select(.status == "queued") | .id' \
                "$a.body" > "$a.ok"
            jq -r '.tasks[] | select(.error.code == "task_exists") | .id' \
                "$a.body" > "$a.before"
            jq -r '.tasks[] | select(.error and .error.code != "task_exists"
                                     and (.error.message
                                          | test("outcome unknown") | not))
                   | .id + " HTTP " + .error.code' "$a.body" > "$a.fail"
            jq -r '[.tasks[] | select(.error.message // ""
                                      | test("outcome unknown"))
                    | .error.message][0] // empty' "$a.body" |
                sed 's/^/HTTP 503: /' >> "$a.why"
        elif [ $rc -eq 7 ]; then
            # no connection: nothing was sent
            sed 's/^{"id":"\([^"]*\)".*/\1 curl: no connection/' \
                "$a.jsonl" > "$a.fail"
        elif [ "$code" != 000 ] && [ "$code" -ge 400 ] &&
             [ "$code" -ne 504 ]; then
            e=$(jq -r '.error.code? // empty' "$a.body" 2>/dev/null)
            sed "s/^{\"id\":\"\\([^\"]*\\)\".*/\\1 HTTP $code $e/" \
                "$a.jsonl" > "$a.fail"
        fi
        ;;
    esac
}

# what `reagent submit` said on stderr of each task
chaos_cli_answers() {
    sed -n 's/^reagent: task \([^ ]*\) was submitted before.*/\1/p' \
        "$1.err" >> "$1.before"
    # another submit of it is queueing it: unknown, asked again later
    sed -n 's/^reagent: task \([^ ]*\) is being submitted by another.*/\1/p' \
        "$1.err" > "$1.busy"
    # not queued, and its mark taken back: refused
    sed -n 's/^reagent: queueing \([^ :]*\) failed: \(.*\)/\1 \2/p' \
        "$1.err" >> "$1.fail"
}

# chaos_answers A VIA TRY: the history's answer of each task of A.jsonl
# (one append), and A.info, the ids left unknown
chaos_answers() {
    awk -v t="$(chaos_now)" -v via="$2" -v try="$3" \
        -v why="$(tr -d '"\\' < "$1.why" 2>/dev/null | tr '\n' ' ' |
                  head -c 200)" \
        -v info="$1.info" '
        FILENAME == ARGV[1] { ok[$1] = 1; next }
        FILENAME == ARGV[2] { before[$1] = 1; next }
        FILENAME == ARGV[3] { w = $0; sub(/^[^ ]* /, "", w); gsub(/["\\]/, "", w)
                              fail[$1] = w; next }
        { if (!match($0, /"id":"[^"]*"/)) next
          id = substr($0, RSTART + 6, RLENGTH - 7)
          if (id in ok)
              printf "{\"t\":%s,\"type\":\"ok\",\"f\":\"submit\",\"via\":\"%s\",\"try\":%s,\"id\":\"%s\"}\n", t, via, try, id
          else if (id in before)
              printf "{\"t\":%s,\"type\":\"ok\",\"f\":\"submit\",\"via\":\"%s\",\"try\":%s,\"id\":\"%s\",\"before\":true}\n", t, via, try, id
          else if (id in fail)
              printf "{\"t\":%s,\"type\":\"fail\",\"f\":\"submit\",\"via\":\"%s\",\"try\":%s,\"id\":\"%s\",\"why\":\"%s\"}\n", t, via, try, id, fail[id]
          else {
              printf "{\"t\":%s,\"type\":\"info\",\"f\":\"submit\",\"via\":\"%s\",\"try\":%s,\"id\":\"%s\",\"why\":\"%s\"}\n", t, via, try, id, why
              print id > info
          }
        }
    ' "$1.ok" "$1.before" "$1.fail" "$1.jsonl" > "$1.hist"
    [ -f "$1.info" ] || : > "$1.info"
    cat "$1.hist" >> "$dir/history.jsonl"
}

# every result as it comes, from the results stream: a follower that is
# started again whenever it stops (Redis went away, or came back empty)
chaos_follow() {
    mkfifo "$dir/follow.fifo"
    while [ ! -f "$dir/stop" ]; do
        "$PY" "$here/stamp.py" follow "$dir/history.jsonl" \
            "$dir/follow.jsonl" < "$dir/follow.fifo" &
        sp=$!
        "$R" -c "$dir/client.conf" results --follow \
            > "$dir/follow.fifo" 2>> "$dir/follow.err" &
        echo $! > "$dir/follow.pid"
        wait $!
        wait $sp
        [ -f "$dir/stop" ] || sleep 0.5
    done
}

# how many tasks that were queued (ok) have no result yet
chaos_missing() {
    jq -R -r 'fromjson? | select(.type == "ok") | .id' \
        "$dir/history.jsonl" 2>/dev/null | sort -u > "$dir/ok.ids"
    { jq -R -r 'fromjson? | select(.type == "result") | .r.id? // empty' \
          "$dir/history.jsonl"
      jq -R -r 'fromjson? | .id? // empty' "$dir/poll.jsonl"; } \
        2>/dev/null | sort -u > "$dir/got.ids"
    comm -23 "$dir/ok.ids" "$dir/got.ids" | wc -l
}


# one run -----------------------------------------------------------------

chaos_stop_all() {
    qm=$(chaos_master)
    if chaos_alive "$qm"; then
        kill -TERM "$qm" 2>/dev/null
        qi=0
        while chaos_alive "$qm" && [ $qi -lt 60 ]; do
            sleep 0.05
            qi=$((qi + 1))
        done
        kill -9 "-$qm" 2>/dev/null
        kill -9 "$qm" 2>/dev/null
    fi
    # each process this run started, by its pid, if it is still the one
    while read -r p name; do
        [ -n "$p" ] && chaos_alive "$p" || continue
        grep -qa "$name" "/proc/$p/cmdline" 2>/dev/null || continue
        kill -9 "$p" 2>/dev/null
    done < "$dir/pids"
}

chaos_run() {
    nem=$1
    seed=$2
    dir=$out/$nem-$seed
    rm -rf "$dir"
    mkdir -p "$dir"
    : > "$dir/pids"
    : > "$dir/history.jsonl"
    : > "$dir/stopped"
    : > "$dir/waiters"
    : > "$dir/stampers"
    : > "$dir/nemesis.log"

    rport=$(chaos_free_port)
    hport=$(chaos_free_port)
    mport=$(chaos_free_port)

    cat > "$dir/script.json" <<JSON
[{"message":{"tool_calls":[
   {"id":"c1","name":"count","arguments":{"key":"chaos","ms":$CHAOS_TOOL_MS}}]}},
 {"message":{"content":"done: counted"}}]
JSON

    # the side effects' own Redis, which no nemesis touches
    redis-server --port 0 --unixsocket "$dir/count.sock" --dir "$dir" \
        --save "" --appendonly no --logfile "$dir/count.log" &
    chaos_track $! redis-server
    chaos_redis_start
    i=0
    while ! redis-cli -s "$dir/count.sock" ping > /dev/null 2>&1 \
          && [ $i -lt 200 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    chaos_mock_start

    "$CHAOS_PROXY" --to "127.0.0.1:$rport" --port-file "$dir/proxy.port" \
        --control-file "$dir/proxy.ctl" 2>> "$dir/proxy.log" &
    chaos_track $! rg_chaos_proxy
    i=0
    while [ ! -s "$dir/proxy.ctl" ] && [ $i -lt 200 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    pport=$(cat "$dir/proxy.port")

    # the workers reach Redis through the proxy; the clients directly,
    # and log apart
    chaos_conf "$pport" > "$dir/serve.conf"
    chaos_conf "$rport" | sed 's|/error[.]log info;|/client.log info;|' \
        > "$dir/client.conf"

    for c in serve client; do
        if ! "$R" -q -t -c "$dir/$c.conf" > "$dir/$c.t" 2>&1; then
            echo "chaos.sh: $nem, seed $seed: $c.conf: $(cat "$dir/$c.t")"
            chaos_stop_all
            return 2
        fi
    done

    chaos_serve_start
    if ! rg_wait_for "$dir/error.log" "reading the queue" 3; then
        echo "chaos.sh: $nem, seed $seed: serve did not start:" \
             "$(tail -n 3 "$dir/serve.out" "$dir/error.log")"
        chaos_stop_all
        return 2
    fi

    chaos_follow 2> /dev/null &
    follower=$!

    "$PY" "$here/schedule.py" "$seed" "$nem" $((CHAOS_DURATION * 1000)) \
        "$CHAOS_TASKS" > "$dir/schedule.txt" || return 2
    repro="B=$B sh tests/chaos/chaos.sh -n $CHAOS_TASKS -d $CHAOS_DURATION -w $CHAOS_WAIT -s $seed $nem"
    echo "# $nem, seed $seed: $(grep -vc ' submit ' "$dir/schedule.txt")" \
         "faults, $CHAOS_TASKS tasks in $(grep -c ' submit ' \
         "$dir/schedule.txt") submissions over ${CHAOS_DURATION}s"

    t0=$(chaos_now)
    jobs_=
    while read -r at action a1 a2 a3; do
        chaos_sleep_until $((t0 + at))
        case $action in
            submit)
                chaos_submit "$a1" "$a2" "$a3" 2>> "$dir/clients.err" &
                jobs_="$jobs_ $!"
                ;;
            *)
                fn=nemesis_$(echo "$action" | tr - _)
                $fn $a1 $a2 $a3 &
                jobs_="$jobs_ $!"
                ;;
        esac
    done < "$dir/schedule.txt"
    chaos_sleep_until $((t0 + CHAOS_DURATION * 1000))

    # every fault ends (and every submission, its retries too), then the
    # tasks accepted have CHAOS_WAIT s to end
    for j in $jobs_; do
        wait "$j"
    done
    chaos_heal
    t1=$(chaos_now)
    while [ $(( $(chaos_now) - t1 )) -lt $((CHAOS_WAIT * 1000)) ]; do
        "$R" -c "$dir/client.conf" results > "$dir/poll.jsonl" 2>/dev/null
        [ "$(chaos_missing)" -eq 0 ] && break
        sleep 1
    done
    settled=$(( ($(chaos_now) - t1) / 1000 ))

    # the clients that wait stop; what they wrote is in the history once
    # their stamps have read it all
    touch "$dir/stop"
    for w in $(cat "$dir/waiters"); do
        kill -TERM "$w" 2>/dev/null
    done
    kill -TERM "$(cat "$dir/follow.pid" 2>/dev/null)" 2>/dev/null
    wait "$follower" 2>/dev/null
    for sp in $(cat "$dir/stampers"); do
        i=0
        while chaos_alive "$sp" && [ $i -lt 100 ]; do
            sleep 0.05
            i=$((i + 1))
        done
    done

    "$PY" "$here/check.py" collect "$dir" --reagent "$R" \
        --conf "$dir/client.conf" --redis "$rport" \
        --counter "$dir/count.sock" --api "http://127.0.0.1:$hport"
    "$R" -c "$dir/client.conf" queue > "$dir/queue.txt" 2>&1
    chaos_stop_all

    "$PY" "$here/check.py" check "$dir" --name "$nem" --seed "$seed" \
        --json "$dir/row.json" > "$dir/row.txt"
    rc=$?
    sed -n 1p "$dir/row.txt"
    sed 1d "$dir/row.txt"
    echo "#   settled ${settled}s after the last fault healed"
    cat "$dir/nemesis.log" | head -n 12
    [ "$(wc -l < "$dir/nemesis.log")" -gt 12 ] &&
        echo "#   … $(wc -l < "$dir/nemesis.log") nemesis lines in all"
    echo "#   again: $repro"
    return $rc
}

chaos_cleanup() {
    for d in "$out"/*/; do
        [ -f "$d/pids" ] || continue
        dir=${d%/}
        chaos_stop_all 2>/dev/null
    done
    rg_cleanup
}
trap chaos_cleanup EXIT

"$PY" "$here/check.py" header
status=0
for nem in "$@"; do
    for seed in $seeds; do
        chaos_run "$nem" "$seed"
        rc=$?
        [ $rc -le $status ] || status=$rc
    done
done

if [ $# -gt 1 ] || [ "$(echo $seeds | wc -w)" -gt 1 ]; then
    echo
    "$PY" "$here/check.py" table "$out"/*/row.json
fi

if [ $status -ne 0 ] && [ $keep -eq 0 ]; then
    kept=${TMPDIR:-/tmp}/rg-chaos-$(date +%Y%m%d-%H%M%S)
    cp -r "$out" "$kept" 2>/dev/null && echo "# the runs' files: $kept"
fi
exit $status
