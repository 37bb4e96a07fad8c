#!/bin/sh
# demo.sh: `make demo`. Starts the bundled mock model on a free loopback
# port and runs a batch of demo tasks concurrently through the calc and
# time plugins, then prints the summary. With REAGENT_BASE_URL and
# REAGENT_MODEL set (and the key in the variable REAGENT_API_KEY_ENV names,
# OPENAI_API_KEY by default), the same command runs against that endpoint.
# Its configuration, tasks and results stay in $B/demo/ (DEMO_DIR), to be
# opened or run again with the command it prints.

B=${B:-objs}
N=${DEMO_TASKS:-240}
C=${DEMO_CONCURRENCY:-240}
dir=${DEMO_DIR:-$B/demo}

mkdir -p "$dir" || exit 1
rm -f "$dir/results.jsonl" "$dir/port"
mock=

cleanup() {
    [ -n "$mock" ] && kill "$mock" 2>/dev/null && wait "$mock" 2>/dev/null
    rm -f "$dir/port"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if [ -z "$REAGENT_BASE_URL" ]; then
    "$B/rg_mock" --port 0 --port-file "$dir/port" --rounds 2 --calls 2 \
        --latency 100 --quiet &
    mock=$!
    i=0
    while [ ! -s "$dir/port" ] && [ $i -lt 100 ]; do
        sleep 0.05; i=$((i + 1))
    done
    [ -s "$dir/port" ] || { echo "demo: the mock model did not start" >&2; exit 1; }
    base="http://127.0.0.1:$(cat "$dir/port")/v1"
    model=mock-1
    key=
    echo "demo: mock model on $base (2 rounds of 2 parallel tool calls, 100 ms per answer)"
else
    base=$REAGENT_BASE_URL
    model=${REAGENT_MODEL:?set REAGENT_MODEL too}
    key="api_key_env ${REAGENT_API_KEY_ENV:-OPENAI_API_KEY};"
    echo "demo: model $model at $base"
fi

cat > "$dir/demo.conf" <<CONF
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
done > "$dir/tasks.jsonl"

echo "demo: $N tasks, $C at once"
echo "demo: running $B/reagent -c $dir/demo.conf batch --concurrency $C -o $dir/results.jsonl $dir/tasks.jsonl"
"$B/reagent" -c "$dir/demo.conf" batch --concurrency "$C" \
    -o "$dir/results.jsonl" "$dir/tasks.jsonl"
rc=$?

echo "demo: first results:"
head -n 3 "$dir/results.jsonl"
echo "demo: all $N results are in $dir/results.jsonl"
if [ -z "$REAGENT_BASE_URL" ]; then
    echo "demo: the mock model's answers are canned, not computed: whatever"
    echo "demo: a task asks, it calls the first tool offered with example"
    echo "demo: arguments from the tool's schema and answers with the last"
    echo "demo: result (\"What is 0 * 17 + 4?\" gets 1023): the demo measures"
    echo "demo: reagent running the loops, not a model. For real answers:"
    echo "demo:   REAGENT_BASE_URL=https://api.openai.com/v1 REAGENT_MODEL=gpt-4o-mini make demo"
    echo "demo: to run the tasks again, with a mock started for the run:"
    echo "demo:   $B/reagent -c $dir/demo.conf batch --mock -o $dir/again.jsonl $dir/tasks.jsonl"
fi
exit $rc
