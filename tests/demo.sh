#!/bin/sh
# demo.sh: `make demo`. Starts the bundled mock model on a free loopback
# port and runs a batch of demo tasks concurrently through the calc and
# time plugins, then prints the summary. With REAGENT_BASE_URL and
# REAGENT_MODEL set (and the key in the variable REAGENT_API_KEY_ENV names,
# OPENAI_API_KEY by default), the same command runs against that endpoint.

B=${B:-objs}
N=${DEMO_TASKS:-240}
C=${DEMO_CONCURRENCY:-240}

tmp=$(mktemp -d /tmp/reagent-demo-XXXXXX) || exit 1
mock=

cleanup() {
    [ -n "$mock" ] && kill "$mock" 2>/dev/null && wait "$mock" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if [ -z "$REAGENT_BASE_URL" ]; then
    "$B/rg_mock" --port 0 --port-file "$tmp/port" --rounds 2 --calls 2 \
        --latency 100 --quiet &
    mock=$!
    i=0
    while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do
        sleep 0.05; i=$((i + 1))
    done
    [ -s "$tmp/port" ] || { echo "demo: the mock model did not start" >&2; exit 1; }
    base="http://127.0.0.1:$(cat "$tmp/port")/v1"
    model=mock-1
    key=
    echo "demo: mock model on $base (2 rounds of 2 parallel tool calls, 100 ms per answer)"
else
    base=$REAGENT_BASE_URL
    model=${REAGENT_MODEL:?set REAGENT_MODEL too}
    key="api_key_env ${REAGENT_API_KEY_ENV:-OPENAI_API_KEY};"
    echo "demo: model $model at $base"
fi

cat > "$tmp/demo.conf" <<CONF
load_module $(cd "$B" && pwd)/modules/calc.so;
load_module $(cd "$B" && pwd)/modules/time.so;

llm demo {
    base_url  $base;
    model     $model;
    $key
    max_connections $C;
}

agent calc {
    system_prompt "Use the calc tool for arithmetic, then answer in one line.";
    tools calc;
}

agent clock {
    system_prompt "Use the time_now tool to answer questions about the time.";
    tools time_now;
}
CONF

i=0
zones="UTC Europe/Paris Asia/Tokyo America/New_York"
while [ $i -lt "$N" ]; do
    if [ $((i % 2)) -eq 0 ]; then
        echo "{\"id\":\"demo-$i\",\"agent\":\"calc\",\"input\":\"What is $i * 17 + 4?\"}"
    else
        z=$(echo $zones | cut -d' ' -f$(( (i / 2) % 4 + 1 )))
        echo "{\"id\":\"demo-$i\",\"agent\":\"clock\",\"input\":\"What time is it in $z?\"}"
    fi
    i=$((i + 1))
done > "$tmp/tasks.jsonl"

echo "demo: $N tasks, $C at once"
echo "demo: $B/reagent -c demo.conf batch --concurrency $C -o results.jsonl tasks.jsonl"
"$B/reagent" -c "$tmp/demo.conf" batch --concurrency "$C" \
    -o "$tmp/results.jsonl" "$tmp/tasks.jsonl"
rc=$?

echo "demo: first results:"
head -n 3 "$tmp/results.jsonl"
exit $rc
