#!/bin/sh
# bench.sh: `make bench`. Runs reagent against the bundled mock model and
# prints figures, not verdicts: wall time, the reagent process's CPU per
# model call, peak RSS and RSS per concurrent session, for R=3 rounds of
# K=2 tool calls per session (4 model calls each), at 0 ms and 200 ms of
# model latency, with N = 100, 1,000 and 10,000 sessions in one process.
# BENCH_SIZES="1000 10000" and BENCH_LATENCIES="0 200" narrow a run.
# Then: tool turns, streaming, the turn time of other sessions while one
# answer carries 1,000 tool calls, deadlines while the results reader
# stalls, CPU per MCP tool call over stdio, and context compaction.

B=${B:-objs}
# a configuration's relative paths start at its own folder
Babs=$(cd "$B" && pwd)
SIZES=${BENCH_SIZES:-100 1000 10000}
LATENCIES=${BENCH_LATENCIES:-0 200}

tmp=$(mktemp -d /tmp/reagent-bench-XXXXXX) || exit 1
mock=
mocks=

cleanup() {
    [ -n "$mock" ] && kill "$mock" 2>/dev/null && wait "$mock" 2>/dev/null
    for m in $mocks; do kill "$m" 2>/dev/null; wait "$m" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

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

echo "reagent benchmark: R=3 rounds of K=2 tool calls per session (4 model calls),"
echo "mock model on loopback, one reagent process, $(nproc) cores"
echo
printf "%-8s %-9s %10s %10s %14s %12s %14s\n" latency sessions "wall s" "ideal s" "cpu us/call" "peak MiB" "KiB/session"

for lat in $LATENCIES; do
    start_mock "$lat"
    for n in $SIZES; do
        head -n "$n" "$tmp/all.jsonl" > "$tmp/tasks.jsonl"
        cat > "$tmp/bench.conf" <<CONF
load_module $B/modules/calc.so;
llm mock { base_url http://127.0.0.1:$port/v1; model mock-1; max_connections $n; }
agent bench { tools calc; max_rounds 8; }
CONF
        "$B/reagent" -q -c "$tmp/bench.conf" batch --concurrency "$n" \
            --no-progress -o /dev/null "$tmp/tasks.jsonl" 2> "$tmp/out"
        wall=$(sed -n 's/.* in \([0-9.]*\)s:.*/\1/p' "$tmp/out")
        cpu=$(sed -n 's/.*cpu \([0-9.]*\) us per model call.*/\1/p' "$tmp/out")
        peak=$(sed -n 's/.*peak rss \([0-9.]*\) MiB.*/\1/p' "$tmp/out")
        per=$(sed -n 's/.*(\([0-9.]*\) KiB per concurrent task).*/\1/p' "$tmp/out")
        done=$(sed -n 's/.*: \([0-9]*\) done,.*/\1/p' "$tmp/out")
        ideal=$(awk "BEGIN { printf \"%.2f\", 4 * $lat / 1000 }")
        printf "%-8s %-9s %10s %10s %14s %12s %14s" "${lat}ms" "$n" "$wall" "$ideal" "$cpu" "$peak" "$per"
        [ "$done" = "$n" ] || printf "  (only %s of %s done)" "$done" "$n"
        echo
    done
    stop_mock
done

echo
echo "reproduce one row: $B/rg_mock --port 8088 --rounds 3 --calls 2 --latency 200 &"
echo "  then: $B/reagent -c bench.conf batch --concurrency 1000 -o /dev/null tasks.jsonl"
echo "  with bench.conf: load_module $B/modules/calc.so;"
echo "                   llm mock { base_url http://127.0.0.1:8088/v1; model mock-1; max_connections 1000; }"
echo "                   agent bench { tools calc; }"
echo "  (the batch summary prints the same figures; BENCH_SIZES and BENCH_LATENCIES narrow make bench)"

# --- store redis beside store memory -------------------------------------
# the same batch (R=3 K=2, 0 ms) with sessions checkpointed in a
# redis-server on a unix socket: CPU per model call of both, the Redis
# commands each session sends per model call (each one round trip,
# pipelined with the other sessions' on the same connections; a turn is a
# round of tool calls, 3 per session, and the start and the end add one
# checkpoint each), the commands Redis ran for them (inside the scripts
# too), and the Redis server's own CPU per model call
if command -v redis-server >/dev/null; then
    echo "store: R=3 K=2, 0 ms; memory beside redis (unix socket, appendonly no)"
    printf "%-9s %15s %15s %8s %14s %14s %14s %14s\n" sessions "memory us/call" "redis us/call" ratio "trips/call" "trips/turn" "commands/call" "redis us/call"
    mkdir -p "$tmp/redis.d"
    redis-server --port 0 --unixsocket "$tmp/redis.sock" --dir "$tmp/redis.d" \
        --save "" --appendonly no --logfile "$tmp/redis.log" &
    mocks="$mocks $!"
    i=0
    while ! redis-cli -s "$tmp/redis.sock" ping >/dev/null 2>&1 && [ $i -lt 100 ]; do
        sleep 0.05; i=$((i + 1))
    done
    start_mock 0
    for n in $(echo "$SIZES" | tr ' ' '\n' | awk '$1 >= 1000'); do
        head -n "$n" "$tmp/all.jsonl" > "$tmp/tasks.jsonl"
        for st in memory redis; do
            {
                echo "load_module $B/modules/calc.so;"
                echo "llm mock { base_url http://127.0.0.1:$port/v1; model mock-1; max_connections $n; }"
                echo "agent bench { tools calc; max_rounds 8; }"
                [ $st = redis ] && echo "store redis { server unix:$tmp/redis.sock; connections 4; }"
            } > "$tmp/store.conf"
            redis-cli -s "$tmp/redis.sock" config resetstat > /dev/null
            rcpu0=$(redis-cli -s "$tmp/redis.sock" info cpu |
                    awk -F: '/used_cpu_(sys|user):/ { s += $2 } END { print s }')
            "$B/reagent" -q -c "$tmp/store.conf" batch --concurrency "$n" \
                --no-progress -o /dev/null "$tmp/tasks.jsonl" 2> "$tmp/out"
            rcpu1=$(redis-cli -s "$tmp/redis.sock" info cpu |
                    awk -F: '/used_cpu_(sys|user):/ { s += $2 } END { print s }')
            # sent by reagent: scripts and plain commands; run: those and
            # the commands inside the scripts
            redis-cli -s "$tmp/redis.sock" info commandstats > "$tmp/cs"
            sent=$(awk -F'[=:,]' '/^cmdstat_(evalsha|eval|get|set|del):/ { s += $3 } END { print s + 0 }' "$tmp/cs")
            cmds=$(awk -F'[=:,]' '/^cmdstat_/ && !/cmdstat_(info|config|ping|script)/ { s += $3 } END { print s + 0 }' "$tmp/cs")
            eval "cpu_$st=\$(sed -n 's/.*cpu \([0-9.]*\) us per model call.*/\1/p' \"\$tmp/out\")"
            eval "done_$st=\$(sed -n 's/.*: \([0-9]*\) done,.*/\1/p' \"\$tmp/out\")"
            redis-cli -s "$tmp/redis.sock" flushall > /dev/null
        done
        awk -v n="$n" -v m="$cpu_memory" -v r="$cpu_redis" -v c="$cmds" \
            -v t="$sent" -v a="$rcpu0" -v b="$rcpu1" 'BEGIN {
            printf "%-9s %15s %15s %7.2fx %14.2f %14.2f %14.2f %14.1f\n", n, m, r,
                   (m > 0 ? r / m : 0), t / (4 * n), t / (3 * n), c / (4 * n),
                   (b - a) * 1e6 / (4 * n) }'
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

# --- context compaction ---------------------------------------------------
echo
"$B/tests/bench_context"
