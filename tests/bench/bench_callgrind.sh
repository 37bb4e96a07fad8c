#!/bin/sh
# bench_callgrind.sh: `make bench-callgrind`. User-space instructions per
# model call (valgrind's callgrind: a count that the other builds on a
# shared machine do not move) of reagent and of the floor
# (tests/bench/bench_floor.c) doing the same sessions, R=3 rounds of K=2
# calc calls, 4 model calls each, at 0 ms against the same mock (which
# runs natively). The whole process is counted, its start and end too.
# Every guard is on (budgets, deadline, call caps, context estimate,
# repeat detection, session dedupe, argument checks), bounded so that
# none ends a session.
# BENCH_SIZES="1000 10000" (the default) sets the numbers of sessions.

B=${B:-objs}
Babs=$(cd "$B" && pwd)
SIZES=${BENCH_SIZES:-1000 10000}

if ! command -v valgrind >/dev/null; then
    echo "bench-callgrind: valgrind not found (apt-get install valgrind)"
    exit 1
fi

tmp=$(mktemp -d /tmp/reagent-callgrind-XXXXXX) || exit 1
mock=

cleanup() {
    [ -n "$mock" ] && kill "$mock" 2>/dev/null && wait "$mock" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap "exit 130" INT TERM

"$B/rg_mock" --port 0 --port-file "$tmp/port" --rounds 3 --calls 2 \
    --quiet 2>/dev/null &
mock=$!
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
port=$(cat "$tmp/port")

# counted: Ir of the program's totals
ir() {
    sed -n 's/^==[0-9]*== Collected : \([0-9]*\).*/\1/p' "$1"
}

echo "instructions per model call (callgrind), R=3 K=2, 0 ms, every guard on"
printf "%-9s %14s %14s %7s\n" sessions "reagent Ir" "floor Ir" ratio

first=
for n in $SIZES; do
    i=0
    while [ $i -lt "$n" ]; do
        echo "{\"id\":\"b$i\",\"input\":\"bench task $i\"}"
        i=$((i + 1))
    done > "$tmp/tasks.jsonl"
    # the clocks allow for valgrind's pace
    cat > "$tmp/cg.conf" <<CONF
load_module $Babs/modules/calc.so;
llm mock { base_url http://127.0.0.1:$port/v1; model mock-1; max_connections $n;
           timeout 1h; connect_timeout 10m; idle_timeout 10m; }
agent bench { tools calc; max_rounds 8; max_tokens 100000000; deadline 1h;
              tool_max_calls 1000; context_limit 1000000; }
CONF
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.reagent.$n" \
        "$B/reagent" -q -c "$tmp/cg.conf" batch --concurrency "$n" \
        --no-progress -o /dev/null "$tmp/tasks.jsonl" 2> "$tmp/r.err"
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.floor.$n" \
        "$B/tests/bench_floor" "http://127.0.0.1:$port/v1/chat/completions" \
        "$n" /dev/null 2> "$tmp/f.err"
    rc=$(sed -n 's/.*model calls \([0-9]*\) (retries.*/\1/p' "$tmp/r.err")
    fc=$(sed -n 's/.* \([0-9]*\) model calls,.*/\1/p' "$tmp/f.err")
    rir=$(ir "$tmp/r.err")
    fir=$(ir "$tmp/f.err")
    awk -v n="$n" -v r="$rir" -v rc="$rc" -v f="$fir" -v fc="$fc" 'BEGIN {
        a = rc > 0 ? r / rc : 0; b = fc > 0 ? f / fc : 0
        printf "%-9s %14.0f %14.0f %7.2f", n, a, b, (b > 0 ? a / b : 0) }'
    [ "$rc" = $((4 * n)) ] || printf "  (reagent: %s model calls)" "$rc"
    [ "$fc" = $((4 * n)) ] || printf "  (floor: %s model calls)" "$fc"
    echo
    eval "ir_$n=\$(awk -v r=\"\$rir\" -v c=\"\$rc\" 'BEGIN { print (c > 0 ? r / c : 0) }')"
    [ -z "$first" ] && first=$n
    last=$n
done

if [ "$first" != "$last" ]; then
    eval "a=\$ir_$first; b=\$ir_$last"
    awk -v a="$a" -v b="$b" -v f="$first" -v l="$last" 'BEGIN {
        printf "reagent at N=%s / at N=%s: %.3f\n", l, f, (a > 0 ? b / a : 0) }'
fi

echo "reproduce: $B/rg_mock --port 8088 --rounds 3 --calls 2 &"
echo "  valgrind --tool=callgrind $B/reagent -c bench.conf batch --concurrency 1000 -o /dev/null tasks.jsonl"
echo "  valgrind --tool=callgrind $B/tests/bench_floor http://127.0.0.1:8088/v1/chat/completions 1000 /dev/null"
echo "  (Ir per model call = the 'Collected' count / the model calls; bench.conf as make bench's)"

# each wire format on the same work, whole and streamed: the codec's
# instructions beside chat's (BENCH_FORMAT_SESSIONS, 1000 by default)
fn=${BENCH_FORMAT_SESSIONS:-1000}
i=0
while [ $i -lt "$fn" ]; do
    echo "{\"id\":\"b$i\",\"input\":\"bench task $i\"}"
    i=$((i + 1))
done > "$tmp/tasks.jsonl"

echo
echo "instructions per model call of each wire format, $fn sessions, R=3 K=2, 0 ms"
printf "%-7s %-10s %14s %8s\n" stream format "reagent Ir" "/ chat"
for st in off on; do
    chat=
    for f in chat anthropic responses; do
        cat > "$tmp/fmt.conf" <<CONF
load_module $Babs/modules/calc.so;
llm mock { base_url http://127.0.0.1:$port/v1; model mock-1; max_connections $fn;
           timeout 1h; connect_timeout 10m; idle_timeout 10m;
           format $f; stream $st; }
agent bench { tools calc; }
CONF
        valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.fmt" \
            "$B/reagent" -q -c "$tmp/fmt.conf" batch --concurrency "$fn" \
            --no-progress -o /dev/null "$tmp/tasks.jsonl" 2> "$tmp/fmt.err"
        rc=$(sed -n 's/.*model calls \([0-9]*\) (retries.*/\1/p' \
             "$tmp/fmt.err")
        per=$(awk -v r="$(ir "$tmp/fmt.err")" -v c="$rc" \
              'BEGIN { print (c > 0 ? r / c : 0) }')
        [ -z "$chat" ] && chat=$per
        awk -v st="$st" -v f="$f" -v a="$per" -v b="$chat" 'BEGIN {
            printf "%-7s %-10s %14.0f %8.3f\n", st, f, a, (b > 0 ? a / b : 0) }'
    done
done
echo "reproduce: the same with \"format anthropic;\" (or responses) and \"stream on;\" in the llm block"
