#!/bin/sh
# bench.sh: `make bench`. Runs reagent against the bundled mock model and
# prints figures, not verdicts: wall time, the reagent process's CPU per
# model call, peak RSS and RSS per concurrent session, for R=3 rounds of
# K=2 tool calls per session (4 model calls each), at 0 ms and 200 ms of
# model latency, with N = 100, 1,000 and 10,000 sessions in one process.
# BENCH_SIZES="1000 10000" and BENCH_LATENCIES="0 200" narrow a run.
# Then: tool turns, streaming, the turn time of other sessions while one
# answer carries 1,000 tool calls, deadlines while the results reader
# stalls, CPU per MCP tool call over stdio, reagent serve on its Redis
# queue (1 and 2 workers, Redis commands per task, the take-over after a
# worker is killed; BENCH_QUEUE_TASKS=4000 sizes it), context compaction,
# and the CPU per model call of each wire format beside chat's.

B=${B:-objs}
# a configuration's relative paths start at its own folder
Babs=$(cd "$B" && pwd)
SIZES=${BENCH_SIZES:-100 1000 10000}
LATENCIES=${BENCH_LATENCIES:-0 200}
RUNS=${BENCH_RUNS:-3}
# the ratios against the floor and of the two stores are of two figures
# that both move by 10-20% a run: medians of more runs
SRUNS=${BENCH_RUNS:-5}
# the agent of the tables against the floor: every guard on, with bounds
# that never end a session (repeat detection and session dedupe are on
# by default)
AGENT="agent bench { tools calc; max_rounds 8; max_tokens 100000000;
              deadline 1h; tool_max_calls 1000; context_limit 1000000; }"

tmp=$(mktemp -d /tmp/reagent-bench-XXXXXX) || exit 1
mock=
mocks=

cleanup() {
    # a serve master of the queue section, and its workers
    if [ -s "$tmp/q.pid" ]; then
        for p in $(pgrep -P "$(cat "$tmp/q.pid")") "$(cat "$tmp/q.pid")"; do
            kill -9 "$p" 2>/dev/null
        done
    fi
    [ -n "$mock" ] && kill "$mock" 2>/dev/null && wait "$mock" 2>/dev/null
    for m in $mocks; do kill "$m" 2>/dev/null; wait "$m" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap "exit 130" INT TERM

start_mock() {
    rm -f "$tmp/port"
    "$B/rg_mock" --port 0 --port-file "$tmp/port" --rounds 3 --calls 2 \
        --latency "$1" --quiet 2>/dev/null &
    mock=$!
    i=0
    while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do
        sleep 0.05; i=$((i + 1))
    done
    port=$(cat "$tmp/port")
}

stop_mock() {
    kill "$mock" 2>/dev/null; wait "$mock" 2>/dev/null; mock=
}

max=0
for n in $SIZES; do [ "$n" -gt "$max" ] && max=$n; done
i=0
while [ $i -lt "$max" ]; do
    echo "{\"id\":\"b$i\",\"input\":\"bench task $i\"}"
    i=$((i + 1))
done > "$tmp/all.jsonl"

# bench_figures FILE: wall s, cpu us per model call, peak MiB, KiB per
# session, tasks done, of a batch summary (or the floor's, which says the
# same), on one line
bench_figures() {
    printf '%s %s %s %s %s\n' \
        "$(sed -n 's/.* in \([0-9.]*\)s:.*/\1/p' "$1")" \
        "$(sed -n 's/.*cpu \([0-9.]*\) us per model call.*/\1/p' "$1")" \
        "$(sed -n 's/.*peak rss \([0-9.]*\) MiB.*/\1/p' "$1")" \
        "$(sed -n 's/.*(\([0-9.]*\) KiB per concurrent task).*/\1/p' "$1")" \
        "$(sed -n 's/.*: \([0-9]*\) done,.*/\1/p' "$1")"
}

# bench_median FILE COLUMN: the median of a column (the lower middle one)
bench_median() {
    awk -v c="$2" '{ print $c }' "$1" | sort -n |
        awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}

echo "reagent benchmark: R=3 rounds of K=2 tool calls per session (4 model calls),"
echo "every guard on, mock model on loopback, one reagent process, $(nproc) cores;"
echo "beside each row the floor (tests/bench/bench_floor.c: the same sessions by a"
echo "minimal client on libevent, curl multi and jansson, run against the same mock"
echo "just after);"
echo "ratio = reagent / floor; each figure the median of $SRUNS runs (BENCH_RUNS; 9 at"
echo "10,000 sessions or more, whose wall time moves most)"
echo
printf "%-7s %-8s %8s %8s %6s %9s %9s %6s %8s %8s %9s\n" latency sessions "wall s" "floor s" ratio "cpu us" "floor us" ratio "peak MiB" "KiB/sess" "floor KiB"

for lat in $LATENCIES; do
    for n in $SIZES; do
        head -n "$n" "$tmp/all.jsonl" > "$tmp/tasks.jsonl"
        # SRUNS runs of each, alternately: the median of each figure (one
        # run on a shared machine moves by 10-20%). Each run has a mock of
        # its own, on a port of its own: a run leaves its n connections in
        # TIME_WAIT for a minute, which the next run to the same port
        # would find in its way, and the first of a pair would not
        : > "$tmp/runs.r"
        : > "$tmp/runs.f"
        runs=$SRUNS
        [ -z "$BENCH_RUNS" ] && [ "$n" -ge 10000 ] && runs=9
        r=0
        while [ $r -lt "$runs" ]; do
            start_mock "$lat"
            cat > "$tmp/bench.conf" <<CONF
load_module $B/modules/calc.so;
llm mock { base_url http://127.0.0.1:$port/v1; model mock-1; max_connections $n; }
$AGENT
CONF
            "$B/reagent" -q -c "$tmp/bench.conf" batch --concurrency "$n" \
                --no-progress -o /dev/null "$tmp/tasks.jsonl" 2> "$tmp/out"
            bench_figures "$tmp/out" >> "$tmp/runs.r"
            stop_mock
            start_mock "$lat"
            "$B/tests/bench_floor" "http://127.0.0.1:$port/v1/chat/completions" \
                "$n" /dev/null 2> "$tmp/floor"
            bench_figures "$tmp/floor" >> "$tmp/runs.f"
            stop_mock
            r=$((r + 1))
        done
        wall=$(bench_median "$tmp/runs.r" 1)
        cpu=$(bench_median "$tmp/runs.r" 2)
        peak=$(bench_median "$tmp/runs.r" 3)
        per=$(bench_median "$tmp/runs.r" 4)
        done=$(bench_median "$tmp/runs.r" 5)
        fwall=$(bench_median "$tmp/runs.f" 1)
        fcpu=$(bench_median "$tmp/runs.f" 2)
        fper=$(bench_median "$tmp/runs.f" 4)
        fdone=$(bench_median "$tmp/runs.f" 5)
        awk -v l="${lat}ms" -v n="$n" -v w="$wall" -v fw="$fwall" -v c="$cpu" \
            -v fc="$fcpu" -v p="$peak" -v k="$per" -v fk="$fper" 'BEGIN {
            printf "%-7s %-8s %8s %8s %6.2f %9s %9s %6.2f %8s %8s %9s", l, n,
                   w, fw, (fw > 0 ? w / fw : 0), c, fc, (fc > 0 ? c / fc : 0),
                   p, k, fk }'
        [ "$done" = "$n" ] || printf "  (only %s of %s done)" "$done" "$n"
        [ "$fdone" = "$n" ] || printf "  (floor: %s of %s done)" "$fdone" "$n"
        echo
        echo "        (cpu us of the runs, in their order: reagent $(awk '{ printf "%s ", $2 }' "$tmp/runs.r"); floor $(awk '{ printf "%s ", $2 }' "$tmp/runs.f" | sed 's/ $//'))"
    done
done

echo
echo "reproduce one row: $B/rg_mock --port 8088 --rounds 3 --calls 2 --latency 200 &"
echo "  then: $B/reagent -c bench.conf batch --concurrency 1000 -o /dev/null tasks.jsonl"
echo "  with bench.conf: load_module $B/modules/calc.so;"
echo "                   llm mock { base_url http://127.0.0.1:8088/v1; model mock-1; max_connections 1000; }"
echo "                   $AGENT"
echo "  and the floor: $B/tests/bench_floor http://127.0.0.1:8088/v1/chat/completions 1000 /dev/null"
echo "  (the batch summary and the floor print the same figures; BENCH_SIZES and"
echo "  BENCH_LATENCIES narrow make bench; make bench-callgrind counts instructions)"
echo

# --- store redis beside store memory -------------------------------------
# the same batch (R=3 K=2, 0 ms) with sessions checkpointed in a
# redis-server on a unix socket: CPU per model call of both, the Redis
# commands each session sends per turn and in all (each one round trip,
# pipelined with the other sessions' on the same connections, counted by
# MONITOR in one more run; a turn is a model call and its tool calls, 4
# per session; a session also loads, takes and releases its lease and
# checkpoints at its start), the commands Redis
# ran for them (inside the scripts too, from commandstats), and the Redis
# server's own CPU per model call
if command -v redis-server >/dev/null; then
    echo "store: R=3 K=2, 0 ms; memory beside redis (unix socket, appendonly no); median of $SRUNS runs, alternately"
    printf "%-9s %15s %15s %8s %14s %14s %14s %14s\n" sessions "memory us/call" "redis us/call" ratio "trips/turn" "trips/session" "commands/call" "redis us/call"
    mkdir -p "$tmp/redis.d"
    redis-server --port 0 --unixsocket "$tmp/redis.sock" --dir "$tmp/redis.d" \
        --save "" --appendonly no --logfile "$tmp/redis.log" &
    mocks="$mocks $!"
    i=0
    while ! redis-cli -s "$tmp/redis.sock" ping >/dev/null 2>&1 && [ $i -lt 100 ]; do
        sleep 0.05; i=$((i + 1))
    done
    # a mock of its own for each run, as in the table above; the port in
    # the configurations is set for each
    port=0
    for n in $(echo "$SIZES" | tr ' ' '\n' | awk '$1 >= 1000'); do
        head -n "$n" "$tmp/all.jsonl" > "$tmp/tasks.jsonl"
        for st in memory redis; do
            {
                echo "load_module $B/modules/calc.so;"
                echo "llm mock { base_url http://127.0.0.1:$port/v1; model mock-1; max_connections $n; }"
                echo "$AGENT"
                [ $st = redis ] && echo "store redis { server unix:$tmp/redis.sock; connections 4; }"
            } > "$tmp/store-$st.conf"
            : > "$tmp/runs-$st"
        done
        # RUNS runs of each, alternately (as the table above: the machine
        # moves between runs); the median CPU of each, the counts and
        # Redis's CPU of all of the redis runs
        redis-cli -s "$tmp/redis.sock" config resetstat > /dev/null
        rcpu=0
        r=0
        while [ $r -lt "$SRUNS" ]; do
            for st in memory redis; do
                start_mock 0
                sed -i "s#127.0.0.1:[0-9]*/v1#127.0.0.1:$port/v1#" "$tmp/store-$st.conf"
                rcpu0=$(redis-cli -s "$tmp/redis.sock" info cpu |
                        awk -F: '/used_cpu_(sys|user):/ { s += $2 } END { print s }')
                "$B/reagent" -q -c "$tmp/store-$st.conf" batch --concurrency "$n" \
                    --no-progress -o /dev/null "$tmp/tasks.jsonl" 2> "$tmp/out"
                rcpu1=$(redis-cli -s "$tmp/redis.sock" info cpu |
                        awk -F: '/used_cpu_(sys|user):/ { s += $2 } END { print s }')
                stop_mock
                bench_figures "$tmp/out" >> "$tmp/runs-$st"
                [ $st = redis ] && rcpu=$(awk -v s="$rcpu" -v a="$rcpu0" -v b="$rcpu1" 'BEGIN { print s + b - a }')
                redis-cli -s "$tmp/redis.sock" flushall > /dev/null
            done
            r=$((r + 1))
        done
        # run by Redis: reagent's commands and those inside its scripts
        # (commandstats counts both), per run
        redis-cli -s "$tmp/redis.sock" info commandstats > "$tmp/cs"
        cmds=$(awk -F'[=:,]' -v r="$SRUNS" '/^cmdstat_/ && !/cmdstat_(info|config|ping|script|flushall)/ { s += $3 } END { print s / r }' "$tmp/cs")
        # sent by reagent, each one round trip: MONITOR's lines from its
        # connections, not "[0 lua]" ones, in one more run, untimed
        # (SCRIPT LOAD is each connection's handshake, not a turn's)
        # (MONITOR slows Redis down several times: a command_timeout of
        # 10 s keeps its slowness from adding retries to the count, and a
        # lease_ttl of 10 min the heartbeats of sessions it made last
        # longer than lease_ttl/3, 5 s: one more trip per 5 s a session
        # lasts, which the README says apart)
        sed 's/connections 4;/connections 4; command_timeout 10s;/' \
            "$tmp/store-redis.conf" > "$tmp/store-mon.conf"
        echo "lease_ttl 10m;" >> "$tmp/store-mon.conf"
        start_mock 0
        sed -i "s#127.0.0.1:[0-9]*/v1#127.0.0.1:$port/v1#" "$tmp/store-mon.conf"
        redis-cli -s "$tmp/redis.sock" monitor > "$tmp/store.mon" &
        smon=$!
        sleep 0.2
        "$B/reagent" -q -c "$tmp/store-mon.conf" batch \
            --concurrency "$n" --no-progress -o /dev/null \
            "$tmp/tasks.jsonl" 2> /dev/null
        sleep 0.2
        kill "$smon"
        wait "$smon" 2>/dev/null
        stop_mock
        sent=$(awk '$3 != "lua]" && $4 ~ /^"/ {
                        c = toupper($4)
                        if (c !~ /^"(INFO|CONFIG|FLUSHALL|PING|MONITOR|SCRIPT)"$/) s++ }
                    END { print s + 0 }' "$tmp/store.mon")
        rm -f "$tmp/store.mon"
        redis-cli -s "$tmp/redis.sock" flushall > /dev/null
        cpu_memory=$(bench_median "$tmp/runs-memory" 2)
        cpu_redis=$(bench_median "$tmp/runs-redis" 2)
        done_memory=$(bench_median "$tmp/runs-memory" 5)
        done_redis=$(bench_median "$tmp/runs-redis" 5)
        awk -v n="$n" -v m="$cpu_memory" -v r="$cpu_redis" -v c="$cmds" \
            -v t="$sent" -v rc="$rcpu" -v runs="$SRUNS" 'BEGIN {
            printf "%-9s %15s %15s %7.2fx %14.2f %14.2f %14.2f %14.1f\n", n, m, r,
                   (m > 0 ? r / m : 0), t / (4 * n), t / n, c / (4 * n),
                   rc * 1e6 / (4 * n * runs) }'
        echo "  (us/call of the runs, in their order: memory $(awk '{ printf "%s ", $2 }' "$tmp/runs-memory"); redis $(awk '{ printf "%s ", $2 }' "$tmp/runs-redis" | sed 's/ $//'))"
        [ "$done_memory" = "$n" ] && [ "$done_redis" = "$n" ] ||
            echo "  (done: memory $done_memory, redis $done_redis of $n)"
    done
    stop_mock
    echo "reproduce: redis-server --port 0 --unixsocket /tmp/r.sock --save '' &  $B/rg_mock --port 8088 --rounds 3 --calls 2 &"
    echo "  $B/reagent -c store.conf batch --concurrency 1000 -o /dev/null tasks.jsonl   (bench.conf above plus: store redis { server unix:/tmp/r.sock; })"
    echo
else
    echo "store: skipped (no redis-server; deploy/deps.sh installs it)"
    echo
fi

# --- tools: one turn of K parallel calls of 100 ms each -----------------
echo
echo "tools: one turn of K calls taking 100 ms each; turn time / slowest call"
printf "%-10s %-6s %10s %10s\n" kind K "turn ms" ratio

for kind in async blocking; do
    for k in 1 8 64; do
        i=0
        calls=
        while [ $i -lt "$k" ]; do
            [ $i -gt 0 ] && calls="$calls,"
            calls="$calls{\"name\":\"slow_$kind\",\"arguments\":{\"ms\":100}}"
            i=$((i + 1))
        done
        echo "[{\"message\":{\"tool_calls\":[$calls]}},{\"message\":{\"content\":\"done\"}}]" \
            > "$tmp/script.json"
        rm -f "$tmp/port"
        "$B/rg_mock" --port 0 --port-file "$tmp/port" --script "$tmp/script.json" \
            --quiet 2>/dev/null &
        mock=$!
        i=0
        while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
        cat > "$tmp/tools.conf" <<CONF
load_module $Babs/tests/plugins/slow.so;
thread_pool default threads=64;
llm mock { base_url http://127.0.0.1:$(cat "$tmp/port")/v1; model mock-1; }
agent bench { tools slow_async slow_blocking; }
CONF
        "$B/reagent" -q -c "$tmp/tools.conf" run --transcript "$tmp/t.json" \
            "bench" > /dev/null 2>&1
        ms=$(awk '/"type": "turn"/ { t = 1 } t && /"ms":/ { gsub(/[^0-9]/, ""); print; exit }' "$tmp/t.json")
        printf "%-10s %-6s %10s %10s\n" "$kind" "$k" "$ms" \
            "$(awk "BEGIN { printf \"%.3f\", ${ms:-0} / 100 }")"
        stop_mock
    done
done

# CPU per tool call dispatched: 200 sessions, each one turn of 64 calls
# that answer at once (the model calls in the same run are included)
i=0
calls=
while [ $i -lt 64 ]; do
    [ $i -gt 0 ] && calls="$calls,"
    calls="$calls{\"name\":\"slow_async\",\"arguments\":{\"ms\":0}}"
    i=$((i + 1))
done
echo "[{\"message\":{\"tool_calls\":[$calls]}},{\"message\":{\"content\":\"done\"}}]" \
    > "$tmp/script.json"
rm -f "$tmp/port"
"$B/rg_mock" --port 0 --port-file "$tmp/port" --script "$tmp/script.json" --quiet 2>/dev/null &
mock=$!
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
sed "s|http://127.0.0.1:[0-9]*/v1|http://127.0.0.1:$(cat "$tmp/port")/v1|" "$tmp/tools.conf" > "$tmp/tools2.conf"
head -n 200 "$tmp/all.jsonl" > "$tmp/tasks.jsonl"
"$B/reagent" -q -c "$tmp/tools2.conf" batch --concurrency 200 --no-progress \
    -o /dev/null "$tmp/tasks.jsonl" 2> "$tmp/out"
stop_mock
awk '/model calls/ { for (i = 1; i <= NF; i++) { if ($i == "calls" && $(i-1) == "model") mc = $(i+1); if ($i == "tool" && $(i+1) == "calls") tc = $(i+2) } }
     /cpu/ { for (i = 1; i <= NF; i++) if ($i == "cpu") cpu = $(i+1) }
     END { printf "cpu per tool call dispatched: %.1f us (%d tool calls, %d model calls, model calls included)\n", cpu * mc / tc, tc, mc }' "$tmp/out"

# --- streaming: CPU per model call with stream on and off ---------------
echo
echo "streaming: 1000 sessions, R=3 K=2, 0 ms latency"
head -n 1000 "$tmp/all.jsonl" > "$tmp/tasks.jsonl"
start_mock 0
for st in off on; do
    cat > "$tmp/stream.conf" <<CONF
load_module $B/modules/calc.so;
llm mock { base_url http://127.0.0.1:$port/v1; model mock-1; max_connections 1000; stream $st; }
agent bench { tools calc; }
CONF
    "$B/reagent" -q -c "$tmp/stream.conf" batch --concurrency 1000 \
        --no-progress -o /dev/null "$tmp/tasks.jsonl" 2> "$tmp/out"
    printf "stream %-4s cpu %s us per model call\n" "$st" \
        "$(sed -n 's/.*cpu \([0-9.]*\) us per model call.*/\1/p' "$tmp/out")"
done
stop_mock

# --- wire formats: CPU per model call of each codec beside chat ---------
# the same work (1000 sessions, R=3 K=2, 0 ms) through each format, whole
# and streamed; runs alternate between the formats, medians of $SRUNS
echo
echo "wire formats: 1000 sessions, R=3 K=2, 0 ms latency; reagent's cpu per model"
echo "call, median of $SRUNS alternating runs; ratio = the format / chat on the same work"
start_mock 0
for st in off on; do
    : > "$tmp/fmt.chat"
    : > "$tmp/fmt.anthropic"
    : > "$tmp/fmt.responses"
    r=0
    while [ $r -lt "$SRUNS" ]; do
        for f in chat anthropic responses; do
            cat > "$tmp/fmt.conf" <<CONF
load_module $B/modules/calc.so;
llm mock { base_url http://127.0.0.1:$port/v1; model mock-1; max_connections 1000; stream $st; format $f; }
agent bench { tools calc; }
CONF
            "$B/reagent" -q -c "$tmp/fmt.conf" batch --concurrency 1000 \
                --no-progress -o /dev/null "$tmp/tasks.jsonl" 2> "$tmp/out"
            bench_figures "$tmp/out" >> "$tmp/fmt.$f"
        done
        r=$((r + 1))
    done
    chat=$(bench_median "$tmp/fmt.chat" 2)
    for f in chat anthropic responses; do
        cpu=$(bench_median "$tmp/fmt.$f" 2)
        printf "stream %-3s %-9s cpu %6s us per model call  %5sx chat  (runs: %s)\n" \
            "$st" "$f" "$cpu" \
            "$(awk -v a="$cpu" -v b="$chat" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')" \
            "$(awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 }' "$tmp/fmt.$f")"
    done
done
stop_mock
echo "reproduce: $B/rg_mock --port 8088 --rounds 3 --calls 2 &"
echo "  $B/reagent -c fmt.conf batch --concurrency 1000 -o /dev/null tasks.jsonl   (1000 tasks)"
echo "  with fmt.conf: load_module $B/modules/calc.so;"
echo "                 llm mock { base_url http://127.0.0.1:8088/v1; model mock-1; max_connections 1000; format anthropic; }"
echo "                 agent bench { tools calc; }"

# a mock of our own: bench_mock NAME ARGS... sets $port
bench_mock() {
    rm -f "$tmp/$1.port"
    name=$1
    shift
    "$B/rg_mock" --port 0 --port-file "$tmp/$name.port" --quiet "$@" \
        2>/dev/null &
    mocks="$mocks $!"
    i=0
    while [ ! -s "$tmp/$name.port" ] && [ $i -lt 100 ]; do
        sleep 0.05; i=$((i + 1))
    done
    port=$(cat "$tmp/$name.port")
}

# --- other sessions while one answer carries 1,000 tool calls ----------
# 2,000 tasks of one tool round each (2 model calls, 20 ms of model
# latency), 200 at a time; in the second run task 1000 is one whose answer
# asks for 1,000 calc calls at once (max_tool_calls_per_turn runs 128 and
# tells the model about the rest). The figure is the p99 of the other
# tasks' time, which is one tool turn each.
echo
echo "one answer with 1,000 tool calls among 2,000 one-turn sessions (200 at once)"

bench_mock others --rounds 1 --latency 20
others=$port
awk 'BEGIN {
    printf "[{\"message\": {\"tool_calls\": ["
    for (i = 0; i < 1000; i++)
        printf "%s{\"name\": \"calc\", \"arguments\": {\"expression\": \"%d+1\"}}", i ? "," : "", i
    printf "]}}, {\"message\": {\"content\": \"done\"}}]\n"
}' > "$tmp/calls1000.json"
bench_mock big --script "$tmp/calls1000.json"
bigp=$port

cat > "$tmp/calls.conf" <<CONF
load_module $B/modules/calc.so;
llm others { base_url http://127.0.0.1:$others/v1; model mock-1; }
llm big { base_url http://127.0.0.1:$bigp/v1; model mock-1; }
agent others { llm others; tools calc; }
agent big { llm big; tools calc; }
CONF

awk 'BEGIN { for (i = 0; i < 2000; i++) printf "{\"id\":\"o%d\",\"agent\":\"others\",\"input\":\"task %d\"}\n", i, i }' \
    > "$tmp/quiet.jsonl"
awk 'BEGIN { for (i = 0; i < 2000; i++) {
        if (i == 1000) printf "{\"id\":\"big\",\"agent\":\"big\",\"input\":\"many calls\"}\n"
        printf "{\"id\":\"o%d\",\"agent\":\"others\",\"input\":\"task %d\"}\n", i, i } }' \
    > "$tmp/loud.jsonl"

# the p99 of the "ms" of the other sessions' results
others_p99() {
    grep '"id":"o' "$1" | sed -n 's/.*"ms":\([0-9]*\).*/\1/p' | sort -n \
        | awk '{ v[NR] = $1 } END { i = int((NR - 1) * 0.99) + 1; print v[i] }'
}

"$B/reagent" -q -c "$tmp/calls.conf" batch --concurrency 200 --no-progress \
    -o "$tmp/quiet.out" "$tmp/quiet.jsonl" 2> /dev/null
"$B/reagent" -q -c "$tmp/calls.conf" batch --concurrency 200 --no-progress \
    -o "$tmp/loud.out" "$tmp/loud.jsonl" 2> /dev/null
quiet=$(others_p99 "$tmp/quiet.out")
loud=$(others_p99 "$tmp/loud.out")
bigst=$(sed -n 's/.*"id":"big","status":"\([a-z_]*\)".*/\1/p' "$tmp/loud.out")
printf "other sessions' turn p99: quiet %s ms, with the 1,000-call answer %s ms (%sx, within 2x: %s); that task: %s\n" \
    "$quiet" "$loud" \
    "$(awk "BEGIN { printf \"%.2f\", ${loud:-0} / (${quiet:-1} ? ${quiet:-1} : 1) }")" \
    "$(awk "BEGIN { print (${loud:-0} <= 2 * ${quiet:-0}) ? \"yes\" : \"NO\" }")" \
    "${bigst:-none}"
echo "reproduce: $B/rg_mock --port 8088 --rounds 1 --latency 20 &  $B/rg_mock --port 8089 --script calls1000.json &"
echo "  $B/reagent -c calls.conf batch --concurrency 200 -o out.jsonl loud.jsonl   (calls.conf: llm others on 8088, llm big on 8089)"

# --- deadlines while the results reader stalls for 2 s -----------------
# 1,000 quick tasks fill the results pipe (64k) at once; 100 others wait
# for a model that takes 5 s, with a deadline of 500 ms. The reader
# sleeps 2 s before it reads. The deadlines must fire at 500 ms, not when
# the reader wakes up.
echo
echo "deadlines while the results reader stalls for 2 s"

bench_mock quick --rounds 0
quick=$port
bench_mock stuck --rounds 0 --latency 5000
stuck=$port

cat > "$tmp/stall.conf" <<CONF
llm quick { base_url http://127.0.0.1:$quick/v1; model mock-1; }
llm stuck { base_url http://127.0.0.1:$stuck/v1; model mock-1; }
agent quick { llm quick; }
agent stuck { llm stuck; deadline 500ms; }
CONF

awk 'BEGIN {
    for (i = 0; i < 1000; i++) printf "{\"id\":\"q%d\",\"agent\":\"quick\",\"input\":\"quick task number %d, padded to make the results longer than a pipe holds\"}\n", i, i
    for (i = 0; i < 100; i++) printf "{\"id\":\"d%d\",\"agent\":\"stuck\",\"input\":\"wait\"}\n", i
}' > "$tmp/stall.jsonl"

"$B/reagent" -q -c "$tmp/stall.conf" batch --concurrency 1100 --no-progress \
    "$tmp/stall.jsonl" 2> /dev/null | { sleep 2; cat; } > "$tmp/stall.out"
grep '"id":"d' "$tmp/stall.out" | sed -n 's/.*"ms":\([0-9]*\).*/\1/p' | sort -n \
    | awk -v n="$(grep -c '"id":"d.*deadline_exceeded' "$tmp/stall.out")" '
        { v[NR] = $1 }
        END { printf "deadline 500ms with the reader asleep 2 s: %d of 100 fired, after p50 %d ms, max %d ms (on time: %s)\n",
                     n, v[int((NR + 1) / 2)], v[NR], (v[NR] < 1000 && n == 100) ? "yes" : "NO" }'
echo "reproduce: $B/rg_mock --port 8088 --rounds 0 &  $B/rg_mock --port 8089 --rounds 0 --latency 5000 &"
echo "  $B/reagent -c stall.conf batch --concurrency 1100 stall.jsonl | { sleep 2; cat; } > out.jsonl"
echo "  (stall.conf: agent quick on 8088, agent stuck on 8089 with deadline 500ms)"

# --- how late idle_timeout fires ---------------------------------------
# a stream that sends its first event and then nothing for 5 s
echo
bench_mock idle --rounds 0 --stream-delay 5000
cat > "$tmp/idle.conf" <<CONF
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; stream on; idle_timeout 1s; max_retries 0; }
agent a { }
CONF
"$B/reagent" -c "$tmp/idle.conf" run "wait" > /dev/null 2> "$tmp/idle.err"
printf "idle_timeout 1s on a stream that stops: the task ended after %s ms (%s)\n" \
    "$(sed -n 's/^status: .*, \([0-9]*\) ms)$/\1/p' "$tmp/idle.err")" \
    "$(sed -n 's/.*\(no byte for [0-9.a-z]* (idle_timeout)\).*/\1/p' "$tmp/idle.err" | head -n 1)"
echo "reproduce: $B/rg_mock --port 8088 --rounds 0 --stream-delay 5000 &  $B/reagent -c idle.conf run wait"

# --- MCP: CPU per tool call over stdio -----------------------------------
# 200 sessions, each one turn of 64 calls that answer at once, then done
# (2 model calls each), three times per tool: the echo tool of an MCP
# server over stdio (bench_mcp_server, a C server that answers at once;
# then server-everything on the pinned Node when tests/interop is
# installed) and, as the reference, slow_async {"ms":0} of a .so module
# (an asynchronous tool answering from a host timer). The figure is
# reagent's own CPU (getrusage of its process: the servers' CPU is theirs)
# divided by the tool calls, the model calls included in all rows; the
# median of the three runs.
echo
echo "MCP: cpu per tool call over stdio (200 sessions x 64 calls answered at once; median of 3 runs)"
printf "%-46s %8s %8s %14s\n" tool "tools" "model" "cpu us/call"

i=0
mcalls=
rcalls=
while [ $i -lt 64 ]; do
    [ $i -gt 0 ] && mcalls="$mcalls," && rcalls="$rcalls,"
    mcalls="$mcalls{\"name\":\"b__echo\",\"arguments\":{\"message\":\"m$i\"}}"
    rcalls="$rcalls{\"name\":\"slow_async\",\"arguments\":{\"ms\":0}}"
    i=$((i + 1))
done
echo "[{\"message\":{\"tool_calls\":[$mcalls]}},{\"message\":{\"content\":\"done\"}}]" \
    > "$tmp/mcp_script.json"
echo "[{\"message\":{\"tool_calls\":[$rcalls]}},{\"message\":{\"content\":\"done\"}}]" \
    > "$tmp/ref_script.json"
head -n 200 "$tmp/all.jsonl" > "$tmp/tasks.jsonl"

# bench_mcp_row LABEL SCRIPT CONF-LINES KEY: one row, from three runs
bench_mcp_row() {
    label=$1
    script=$2
    lines=$3
    figures=
    for run in 1 2 3; do
        bench_mock "mcp$run" --script "$script"
        cat > "$tmp/mcp.conf" <<CONF
llm mock { base_url http://127.0.0.1:$port/v1; model mock-1; max_connections 200; }
$lines
CONF
        "$B/reagent" -q -c "$tmp/mcp.conf" batch --concurrency 200 \
            --no-progress -o /dev/null "$tmp/tasks.jsonl" 2> "$tmp/out"
        kill "$!" 2>/dev/null; wait "$!" 2>/dev/null
        figures="$figures$(awk '
            /model calls/ { for (i = 1; i <= NF; i++) {
                if ($i == "calls" && $(i-1) == "model") mc = $(i+1)
                if ($i == "tool" && $(i+1) == "calls") tc = $(i+2)
                if ($i == "(errors") { e = $(i+1); sub(/,/, "", e) } } }
            /cpu/ { for (i = 1; i <= NF; i++) if ($i == "cpu") cpu = $(i+1) }
            END { printf "%d %d %d %.2f\n", tc, mc, e, tc ? cpu * mc / tc : 0 }' "$tmp/out")
"
    done
    printf '%s' "$figures" | sort -n -k 4 | sed -n 2p | {
        read -r tc mc e us
        printf "%-46s %8s %8s %14s" "$label" "$tc" "$mc" "$us"
        [ "$e" = 0 ] || printf "  (%s calls failed)" "$e"
        echo
        echo "$us" > "$tmp/mcp_$4.us"
    }
}

bench_mcp_row "slow_async {\"ms\":0} (.so module, reference)" \
    "$tmp/ref_script.json" \
    "load_module $Babs/tests/plugins/slow.so;
agent bench { tools slow_async; dedupe off; repeat_window 0; }" ref
bench_mcp_row "b__echo, MCP over stdio (bench_mcp_server)" \
    "$tmp/mcp_script.json" \
    "mcp b { command $Babs/tests/bench_mcp_server; }
agent bench { tools b__echo; dedupe off; repeat_window 0; }" c
if tests/interop/run.sh --check 2>/dev/null; then
    bench_mcp_row "b__echo, MCP over stdio (server-everything)" \
        "$tmp/mcp_script.json" \
        "mcp b { command $(pwd)/tests/interop/run.sh --bin mcp-server-everything stdio; }
agent bench { tools b__echo; dedupe off; repeat_window 0; }" node
else
    echo "(server-everything: skipped, tests/interop is not installed)"
fi
awk -v r="$(cat "$tmp/mcp_ref.us" 2>/dev/null)" -v c="$(cat "$tmp/mcp_c.us" 2>/dev/null)" \
    'BEGIN { if (r > 0 && c > 0) printf "an MCP call over stdio costs reagent %.1f us more than the .so call (%.2fx)\n", c - r, c / r }'
echo "reproduce: $B/rg_mock --port 8088 --script mcp_script.json &   (64 b__echo calls, then done)"
echo "  $B/reagent -c mcp.conf batch --concurrency 200 -o /dev/null tasks.jsonl   (200 tasks)"
echo "  with mcp.conf: llm mock { base_url http://127.0.0.1:8088/v1; model mock-1; max_connections 200; }"
echo "                 mcp b { command $B/tests/bench_mcp_server; }"
echo "                 agent bench { tools b__echo; dedupe off; repeat_window 0; }"
echo "  cpu per tool call = (cpu us per model call x model calls) / tool calls, from the batch summary"

# --- serve: the queue ------------------------------------------------------
# reagent serve with a redis-server of its own (unix socket). The same
# tasks (R=3 K=2, calc, 0 ms) run three times each way, the ways in turn,
# and each row is the median run by tasks/s: reagent batch at concurrency
# 500 in one process with store memory and with store redis, then the
# tasks queued first with reagent submit and run by reagent serve with 1
# and with 2 workers of concurrency 500 each. serve's wall time: from its
# start to the id (Redis's clock, ms) of the last entry of the results
# stream. serve's CPU: it runs in a subshell, stopped with reagent -s quit
# once every result is in, and the subshell's `times` gives its
# children's CPU: the master's, which waits for its workers before it
# exits, and the rusage of a waited-for child includes the children it
# waited for, so it is the master's and every worker's CPU (not the
# mock's or redis-server's: they are not its children), divided by the
# model calls the mock counted. "cores busy": reagent's, the mock's and
# redis-server's CPU over the wall time; the three share the cores (other
# builds may use them too). "redis cmds/task": the commands Redis ran (INFO commandstats,
# reset once the tasks are queued), those inside scripts included, not the
# bench's INFO, CONFIG, FLUSHALL, XLEN, XRANGE and XREVRANGE. The round
# trips (the commands reagent sent, a script one) are counted apart with
# MONITOR, on untimed runs of 1,000 tasks.
# Then the take-over: 200 tasks of one tool round with 2 s of model
# latency on 2 workers (lease_ttl 1s, claim_idle 2s); once every task is
# in its first model call, the worker holding the most is killed with
# SIGKILL and a marker request is sent to the mock. The figure is the
# time, on the mock's clock, from the marker to the first and to the last
# of the killed worker's tasks calling the model again (a first-round
# call, without a tool message, after the marker). An entry's idle time
# counts from its last touch (every claim_idle/3) and reclaims come every
# claim_idle/4 to /2, so it falls between 2/3 and 1.5 times claim_idle.
echo
if command -v redis-server >/dev/null && command -v jq >/dev/null \
   && command -v curl >/dev/null
then
    QN=${BENCH_QUEUE_TASKS:-4000}
    echo "serve: the queue ($QN tasks, R=3 K=2, 0 ms; redis-server on a unix socket; $(nproc) cores; median of 3 runs)"
    mkdir -p "$tmp/q.d"
    redis-server --port 0 --unixsocket "$tmp/q.sock" --dir "$tmp/q.d" \
        --save "" --appendonly no --logfile "$tmp/q.redis.log" &
    qredis=$!
    mocks="$mocks $qredis"
    i=0
    while ! redis-cli -s "$tmp/q.sock" ping >/dev/null 2>&1 && [ $i -lt 100 ]; do
        sleep 0.05; i=$((i + 1))
    done
    qcli() { redis-cli -s "$tmp/q.sock" "$@"; }
    # the commands Redis ran since the last reset: "name calls" lines
    qcmds() {
        qcli info commandstats | tr -d '\r' | awk -F'[:=,]' '
            /^cmdstat_/ && !/^cmdstat_(info|config|ping|flushall|xlen|xrange|xrevrange)[:|]/ {
                sub(/^cmdstat_/, "", $1); print $1, $3 }'
    }
    # seconds of CPU: redis-server's, a process's from /proc
    qrcpu() {
        qcli info cpu | awk -F: '/used_cpu_(sys|user):/ { s += $2 } END { print s }'
    }
    qpcpu() {
        awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
    }
    qresults() { n=$(qcli xlen 'rg:{q:tasks}:results'); echo "${n:-0}"; }
    # qstop PID WHAT: reagent -s quit, then PID (serve or its subshell) waited
    # for; a master still there 10 s later is killed with its workers, and
    # said so (SIGKILL: a TERM after QUIT can leave the master spinning)
    qstop() {
        qkilled=
        qmaster=$(cat "$tmp/q.pid" 2>/dev/null)
        "$B/reagent" -c "$tmp/q.conf" -s quit
        i=0
        while kill -0 "$1" 2>/dev/null && [ $i -lt 100 ]; do
            sleep 0.1; i=$((i + 1))
        done
        if kill -0 "$1" 2>/dev/null && [ -n "$qmaster" ]; then
            echo "  ($2: serve had not exited 10 s after reagent -s quit: killed)"
            qkilled=1
            for p in $(pgrep -P "$qmaster") "$qmaster"; do kill -9 "$p"; done
        fi
        wait "$1" 2>/dev/null
    }
    qstats() { n=$(curl -s "http://127.0.0.1:$1/stats" | jq .requests); echo "${n:-0}"; }
    qsum() { awk '{ s += $2 } END { print s + 0 }' "$1"; }

    bench_mock queue --rounds 3 --calls 2
    qport=$port
    qmock=$!
    awk -v n="$QN" 'BEGIN { for (i = 0; i < n; i++) printf "{\"id\":\"q%d\",\"input\":\"queue task %d\"}\n", i, i }' \
        > "$tmp/q.jsonl"
    # qconf WORKERS PORT MAIN-LINES QUEUE-LINES
    qconf() {
        cat <<CONF
load_module $Babs/modules/calc.so;
worker_processes $1;
concurrency 500;
pid $tmp/q.pid;
error_log $tmp/q.err notice;
llm mock { base_url http://127.0.0.1:$2/v1; model mock-1; max_connections 500; }
agent bench { tools calc; max_rounds 8; }
store redis { server unix:$tmp/q.sock; }
$3
queue { $4 }
CONF
    }

    # a row: "tasks/s run label figures..." appended to q.rows.KEY
    qrow() {
        awk -v n="$QN" -v key="$1" -v run="$2" -v label="$3" -v s="$4" \
            -v cpu="$5" -v c="$6" -v rc="$7" -v cores="$8" -v d="$9" 'BEGIN {
            printf "%.0f %d %-26s %8.2f %9.0f %12.1f %15.2f %14.1f %11.2f %s\n",
                   (s > 0 ? n / s : 0), run, label, s, (s > 0 ? n / s : 0),
                   cpu, c / n, rc * 1e6 / n, cores, d }' >> "$tmp/q.rows.$1"
    }
    # qbatch STORE RUN: reagent batch, one process, store memory or redis
    qbatch() {
        {
            echo "load_module $Babs/modules/calc.so;"
            echo "llm mock { base_url http://127.0.0.1:$qport/v1; model mock-1; max_connections 500; }"
            echo "agent bench { tools calc; max_rounds 8; }"
            [ "$1" = redis ] && echo "store redis { server unix:$tmp/q.sock; }"
        } > "$tmp/qb.conf"
        qcli flushall > /dev/null
        qcli config resetstat > /dev/null
        rc0=$(qrcpu)
        mc0=$(qpcpu "$qmock")
        "$B/reagent" -q -c "$tmp/qb.conf" batch --concurrency 500 \
            --no-progress -o /dev/null "$tmp/q.jsonl" 2> "$tmp/out"
        rc1=$(qrcpu)
        mc1=$(qpcpu "$qmock")
        qcmds > "$tmp/q.cmds"
        wall=$(sed -n 's/.* in \([0-9.]*\)s:.*/\1/p' "$tmp/out")
        cpu=$(sed -n 's/.*cpu \([0-9.]*\) us per model call.*/\1/p' "$tmp/out")
        calls=$(sed -n 's/.*model calls \([0-9]*\).*/\1/p' "$tmp/out")
        done=$(sed -n 's/.*: \([0-9]*\) done,.*/\1/p' "$tmp/out")
        qrow "$1" "$2" "batch, store $1" "$wall" "$cpu" "$(qsum "$tmp/q.cmds")" \
            "$(awk "BEGIN { print $rc1 - $rc0 }")" \
            "$(awk "BEGIN { w = ${wall:-0}; print (w > 0 ? (${cpu:-0} * ${calls:-0} / 1e6 + $rc1 - $rc0 + $mc1 - $mc0) / w : 0) }")" \
            "$done of $QN"
    }
    # qserve WORKERS RUN: the tasks queued, then reagent serve runs them;
    # the subshell's times: its children's CPU, the master's and workers'
    qserve() {
        qconf "$1" "$qport" "" "" > "$tmp/q.conf"
        qcli flushall > /dev/null
        s0=$(date +%s%3N)
        "$B/reagent" -c "$tmp/q.conf" submit "$tmp/q.jsonl" > /dev/null 2>&1
        s1=$(date +%s%3N)
        echo "$((s1 - s0))" >> "$tmp/q.submit.ms"
        qcli config resetstat > /dev/null
        rc0=$(qrcpu)
        mc0=$(qpcpu "$qmock")
        m0=$(qstats "$qport")
        rm -f "$tmp/q.time"
        t0=$(date +%s%3N)
        ( "$B/reagent" -c "$tmp/q.conf" serve --foreground > /dev/null 2>&1
          times > "$tmp/q.time" ) 2> /dev/null &
        serve=$!
        i=0
        while [ "$(qresults)" -lt "$QN" ] && [ $i -lt 300 ]; do
            sleep 0.2; i=$((i + 1))
        done
        last=$(qcli xrevrange 'rg:{q:tasks}:results' + - count 1 | head -n 1 | cut -d- -f1)
        rc1=$(qrcpu)
        mc1=$(qpcpu "$qmock")
        qcmds > "$tmp/q.cmds.$1.$2"
        m1=$(qstats "$qport")
        done=$(qcli xrange 'rg:{q:tasks}:results' - + | grep -c '"status":"done"')
        qstop "$serve" "$1 worker(s), run $2"
        # "0m1.230000s 0m0.210000s", the second line: the children's
        cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, k, /[ms]/)
                             print u[1] * 60 + u[2] + k[1] * 60 + k[2] }' "$tmp/q.time")
        wall=$(awk "BEGIN { print (${last:-0} - $t0) / 1000 }")
        [ "$((m1 - m0))" = "$((4 * QN))" ] || done="$done, $((m1 - m0)) model calls"
        [ -z "$qkilled" ] || done="$done, killed at the end: no cpu"
        qrow "$1" "$2" "serve, $1 worker$([ "$1" -gt 1 ] && echo s)" "$wall" \
            "$(awk "BEGIN { c = $m1 - $m0; print (c > 0 ? ${cpu:-0} * 1e6 / c : 0) }")" \
            "$(qsum "$tmp/q.cmds.$1.$2")" "$(awk "BEGIN { print $rc1 - $rc0 }")" \
            "$(awk "BEGIN { w = $wall; print (w > 0 ? (${cpu:-0} + $rc1 - $rc0 + $mc1 - $mc0) / w : 0) }")" \
            "$done of $QN"
    }

    printf "%-26s %8s %9s %12s %15s %14s %11s %s\n" run "wall s" "tasks/s" "cpu us/call" \
        "redis cmds/task" "redis us/task" "cores busy" "done"
    rm -f "$tmp"/q.rows.* "$tmp/q.submit.ms"
    for run in 1 2 3; do
        qbatch memory "$run"
        qbatch redis "$run"
        qserve 1 "$run"
        qserve 2 "$run"
    done
    for key in memory redis 1 2; do
        sort -n "$tmp/q.rows.$key" | sed -n 2p > "$tmp/q.median.$key"
        cut -d' ' -f3- "$tmp/q.median.$key"
    done
    awk -v a="$(cut -d' ' -f1 "$tmp/q.median.1")" -v b="$(cut -d' ' -f1 "$tmp/q.median.2")" \
        -v r1="$(sort -n "$tmp/q.rows.1" | cut -d' ' -f1 | paste -sd' ')" \
        -v r2="$(sort -n "$tmp/q.rows.2" | cut -d' ' -f1 | paste -sd' ')" 'BEGIN {
        printf "2 workers / 1 worker: %.2fx the tasks per second (tasks/s of the runs: 1 worker %s; 2 workers %s)\n",
               (a > 0 ? b / a : 0), r1, r2 }'

    # round trips: MONITOR shows the commands reagent sent ("[0 unix:…]")
    # apart from those its scripts ran ("[0 lua]"); untimed runs of 1000
    qmon_start() {
        redis-cli -s "$tmp/q.sock" monitor > "$tmp/q.mon" &
        qmon=$!
        sleep 0.2
    }
    qmon_stop() {
        sleep 0.2
        kill "$qmon"
        wait "$qmon" 2>/dev/null
        awk '$3 != "lua]" && $4 ~ /^"/ {
                gsub(/"/, "", $4)
                $4 = toupper($4)
                if ($4 !~ /^(INFO|CONFIG|FLUSHALL|XLEN|XRANGE|XREVRANGE)$/) c[$4]++ }
             END { for (k in c) print k, c[k] }' "$tmp/q.mon" | sort -k 2nr > "$1"
        rm -f "$tmp/q.mon"
    }
    qtrips() {
        awk -v n="$2" -v what="$1" '
            { t += $2; l = l sep $1 " " sprintf("%.2f", $2 / n); sep = ", " }
            END { printf "  %-22s %6.2f  (%s)\n", what, t / n, l }' "$3"
    }
    head -n 1000 "$tmp/q.jsonl" > "$tmp/q1000.jsonl"
    MN=$(grep -c . "$tmp/q1000.jsonl")
    {
        echo "load_module $Babs/modules/calc.so;"
        echo "llm mock { base_url http://127.0.0.1:$qport/v1; model mock-1; max_connections 500; }"
        echo "agent bench { tools calc; max_rounds 8; }"
        echo "store redis { server unix:$tmp/q.sock; }"
    } > "$tmp/qb.conf"
    qcli flushall > /dev/null
    qmon_start
    "$B/reagent" -q -c "$tmp/qb.conf" batch --concurrency 500 \
        --no-progress -o /dev/null "$tmp/q1000.jsonl" 2> /dev/null
    qmon_stop "$tmp/q.rt.batch"
    qconf 2 "$qport" "" "" > "$tmp/q.conf"
    qcli flushall > /dev/null
    qmon_start
    "$B/reagent" -c "$tmp/q.conf" submit "$tmp/q1000.jsonl" > /dev/null 2>&1
    qmon_stop "$tmp/q.rt.submit"
    qmon_start
    "$B/reagent" -c "$tmp/q.conf" serve --foreground > /dev/null 2>&1 &
    serve=$!
    i=0
    while [ "$(qresults)" -lt "$MN" ] && [ $i -lt 300 ]; do
        sleep 0.2; i=$((i + 1))
    done
    qmon_stop "$tmp/q.rt.serve"
    qstop "$serve" "round trips"
    echo "redis round trips per task (commands sent, not those run inside scripts; MONITOR, $MN tasks, untimed):"
    qtrips "batch, store redis" "$MN" "$tmp/q.rt.batch"
    qtrips "serve, 2 workers" "$MN" "$tmp/q.rt.serve"
    qtrips "submit" "$MN" "$tmp/q.rt.submit"
    awk -v n="$QN" -v ms="$(sort -n "$tmp/q.submit.ms" | sed -n 3p)" 'BEGIN {
        printf "  submit queues one task at a time: %.0f tasks/s (%d tasks in %d ms, median of 6)\n",
               (ms > 0 ? n * 1000 / ms : 0), n, ms }'

    # the take-over after kill -9
    bench_mock take --rounds 1 --latency 2000 --request-log "$tmp/k.log"
    kport=$port
    qconf 2 "$kport" "lease_ttl 1s;" "claim_idle 2s; block 500ms;" > "$tmp/k.conf"
    qcli flushall > /dev/null
    rm -f "$tmp/q.err"
    awk 'BEGIN { for (i = 0; i < 200; i++) printf "{\"id\":\"k%d\",\"input\":\"take-over task %d\"}\n", i, i }' \
        > "$tmp/k.jsonl"
    "$B/reagent" -c "$tmp/k.conf" serve --foreground > /dev/null 2>&1 &
    serve=$!
    i=0
    while [ "$(grep -c 'reading the queue' "$tmp/q.err" 2>/dev/null)" != 2 ] && [ $i -lt 100 ]; do
        sleep 0.05; i=$((i + 1))
    done
    "$B/reagent" -c "$tmp/k.conf" submit "$tmp/k.jsonl" > /dev/null 2>&1
    i=0
    while [ "$(qstats "$kport")" -lt 200 ] && [ $i -lt 100 ]; do
        sleep 0.05; i=$((i + 1))
    done
    sleep 0.3
    # the consumer holding the most entries: "name" and "pending" lines
    qcli xinfo consumers 'rg:{q:tasks:0}' workers | awk '
        p == "name" { n = $0 }
        p == "pending" && $0 + 0 > max { max = $0 + 0; v = n }
        { p = $0 }
        END { print v, max }' > "$tmp/k.victim"
    read -r victim held < "$tmp/k.victim"
    victim=${victim##*:}
    # a worker of this master, or nothing is killed
    pgrep -P "$(cat "$tmp/q.pid")" | grep -qx "$victim" && kill -9 "$victim" ||
        echo "  (no worker of the master held entries: none killed; the figures below mean nothing)"
    curl -s -m 0.2 -H 'Content-Type: application/json' \
        -d '{"model":"mock-1","messages":[{"role":"user","content":"kill marker"}]}' \
        "http://127.0.0.1:$kport/v1/chat/completions" > /dev/null
    i=0
    while [ "$(qresults)" -lt 200 ] && [ $i -lt 300 ]; do
        sleep 0.1; i=$((i + 1))
    done
    curl -s "http://127.0.0.1:$kport/stats" | jq -c .times_ms > "$tmp/k.times"
    qcli xrange 'rg:{q:tasks}:results' - + > "$tmp/k.results"
    qstop "$serve" "take-over"
    # request n: n, the roles of its messages, marker or not, its time
    jq -r --slurpfile t "$tmp/k.times" '[.n,
            (.body.messages | map(.role) | join(",")),
            (any(.body.messages[]; .content == "kill marker") | tostring),
            $t[0][.n - 1]] | @tsv' "$tmp/k.log" > "$tmp/k.tsv"
    awk -F'\t' -v held="$held" -v took="$(sed -n 's/.*took over \([0-9]*\) tasks.*/\1/p' "$tmp/q.err" | paste -sd+)" '
        $3 == "true" { m = $4; mn = $1; next }
        mn && $1 > mn && $2 !~ /tool/ { if (!c) f = $4; l = $4; c++ }
        END {
            printf "kill -9 of a worker holding %d of 200 tasks (1 tool round, 2 s model latency; lease_ttl 1s, claim_idle 2s):\n", held
            printf "  %d taken over (\"took over\" lines: %s); they called the model again %d ms (first) to %d ms (last) after the kill (claim_idle 2000 ms)\n",
                   c, took, f - m, l - m }' "$tmp/k.tsv"
    printf "  results: %s of 200 done, %s distinct ids in %s results; %s model calls (400 + those in flight again + 1 marker)\n" \
        "$(grep -c '"status":"done"' "$tmp/k.results")" \
        "$(grep '^k[0-9]*$' "$tmp/k.results" | sort -u | wc -l)" \
        "$(grep -c '^k[0-9]*$' "$tmp/k.results")" \
        "$(($(wc -l < "$tmp/k.log")))"
    echo "reproduce: redis-server --port 0 --unixsocket /tmp/r.sock --save '' &  $B/rg_mock --port 8088 --rounds 3 --calls 2 &"
    echo "  $B/reagent -c q.conf submit tasks.jsonl; ( $B/reagent -c q.conf serve --foreground; times ) &   (times' 2nd line: its CPU)"
    echo "  then, once redis-cli -s /tmp/r.sock xlen 'rg:{q:tasks}:results' is $QN: $B/reagent -c q.conf -s quit"
    echo "  with q.conf: bench.conf above plus worker_processes 2; concurrency 500; pid /tmp/q.pid;"
    echo "               store redis { server unix:/tmp/r.sock; } queue { }"
    echo "  take-over: $B/rg_mock --port 8089 --rounds 1 --latency 2000 &, q.conf on 8089 plus lease_ttl 1s;"
    echo "  queue { claim_idle 2s; }, submit 200 tasks, kill -9 a worker (pgrep -P \$(cat /tmp/q.pid)) during the first calls,"
    echo "  grep 'took over' in the error_log"
else
    echo "serve: skipped (needs redis-server, jq and curl; deploy/deps.sh installs them)"
fi

# --- context compaction ---------------------------------------------------
echo
"$B/tests/bench_context"
