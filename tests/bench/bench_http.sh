#!/bin/sh
# bench_http.sh: `make bench`'s HTTP API figures: tasks submitted per
# second through POST /v1/tasks (one task per request, 100 requests in
# flight; and one JSONL body of all the tasks, with the events the API
# records by default and without them), the time until they all ended,
# and the worker's CPU per task (user + system, from /proc) beside
# `reagent batch` running the same tasks in the same run, on the bundled
# mock model (R=3 rounds of K=2 tool calls: 4 model calls per task).
# BENCH_HTTP_TASKS=2000 sizes it.

B=${B:-objs}
N=${BENCH_HTTP_TASKS:-2000}
Babs=$(cd "$B" && pwd)

tmp=$(mktemp -d /tmp/reagent-bench-http-XXXXXX) || exit 1
mock=
master=

cleanup() {
    [ -n "$master" ] && kill -9 $(pgrep -P "$master") "$master" 2>/dev/null
    [ -n "$mock" ] && kill "$mock" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

"$B/rg_mock" --port 0 --port-file "$tmp/port" --rounds 3 --calls 2 --quiet \
    2>/dev/null &
mock=$!
while [ ! -s "$tmp/port" ]; do sleep 0.05; done
mport=$(cat "$tmp/port")
hport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

cat > "$tmp/h.conf" <<CONF
load_module $Babs/modules/calc.so;
worker_processes 1;
concurrency 1000;
error_log $tmp/error.log warn;
pid $tmp/r.pid;
llm mock { base_url http://127.0.0.1:$mport/v1; model mock-1;
           max_connections 1000; }
agent bench { tools calc; }
http { listen 127.0.0.1:$hport; max_body 16m; access_log off;
       max_tasks 100000; }
CONF

i=0
while [ $i -lt "$N" ]; do
    echo "{\"id\":\"b$i\",\"input\":\"bench task $i\"}"
    i=$((i + 1))
done > "$tmp/tasks.jsonl"

now() { date +%s.%N; }
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }

# the reference: batch on the same tasks
t0=$(now)
"$B/reagent" -c "$tmp/h.conf" batch --concurrency 1000 --no-progress \
    -o /dev/null "$tmp/tasks.jsonl" 2> "$tmp/batch.out"
t1=$(now)
bcall=$(sed -n 's/.*cpu \([0-9.]*\) us per model call.*/\1/p' "$tmp/batch.out")

"$B/reagent" -c "$tmp/h.conf" serve --foreground > "$tmp/serve.out" 2>&1 &
master=$!
while ! curl -sf "http://127.0.0.1:$hport/healthz" -o /dev/null; do
    sleep 0.05
done
worker=$(pgrep -P "$master")
U=http://127.0.0.1:$hport

# until every session of the worker ended
drained() {
    while [ "$(curl -s "$U/readyz" | jq .sessions)" != 0 ]; do
        sleep 0.02
    done
}

# one task per request
sed 's/"b/"p/' "$tmp/tasks.jsonl" | awk -v u="$U" '{
    gsub(/"/, "\\\"", $0)
    printf "%surl = \"%s/v1/tasks\"\ndata = \"%s\"\noutput = \"/dev/null\"\n",
           (NR > 1 ? "next\n" : ""), u, $0 }' > "$tmp/one.cfg"

c0=$(cpu "$worker")
t2=$(now)
curl -s -Z --parallel-immediate --parallel-max 100 -K "$tmp/one.cfg" 2>/dev/null
t3=$(now)
drained
t4=$(now)
c1=$(cpu "$worker")

# one JSONL body
sed 's/"b/"j/' "$tmp/tasks.jsonl" > "$tmp/j.jsonl"
c2=$(cpu "$worker")
t5=$(now)
curl -s -o /dev/null "$U/v1/tasks" --data-binary @"$tmp/j.jsonl"
t6=$(now)
drained
t7=$(now)
c3=$(cpu "$worker")

# the same, the tasks saying they need no events (the API records them
# by default, for GET …/events)
sed 's/"b\([0-9]*\)","input"/"e\1","events":false,"input"/' "$tmp/tasks.jsonl" > "$tmp/e.jsonl"
c4=$(cpu "$worker")
t8=$(now)
curl -s -o /dev/null "$U/v1/tasks" --data-binary @"$tmp/e.jsonl"
t9=$(now)
drained
t10=$(now)
c5=$(cpu "$worker")

echo
echo "HTTP API: $N tasks (R=3 K=2: 4 model calls each), one worker, store memory"
printf "%-34s %10s %12s %12s %14s %8s\n" how "submit/s" "submit s" "all done s" "cpu us/task" "x batch"
awk -v n="$N" -v bc="$bcall" -v b0="$t0" -v b1="$t1" \
    -v t2="$t2" -v t3="$t3" -v t4="$t4" -v c0="$c0" -v c1="$c1" \
    -v t5="$t5" -v t6="$t6" -v t7="$t7" -v c2="$c2" -v c3="$c3" \
    -v t8="$t8" -v t9="$t9" -v t10="$t10" -v c4="$c4" -v c5="$c5" 'BEGIN {
    bt = bc * 4
    printf "%-34s %10s %12s %12.2f %14.1f %8s\n", "batch (reference)", "-", "-", b1 - b0, bt, "1.00"
    a = (c1 - c0) * 1e6 / n
    printf "%-34s %10.0f %12.2f %12.2f %14.1f %8.2f\n", "POST one task each, 100 in flight", n / (t3 - t2), t3 - t2, t4 - t2, a, a / bt
    j = (c3 - c2) * 1e6 / n
    printf "%-34s %10.0f %12.2f %12.2f %14.1f %8.2f\n", "POST one JSONL body", n / (t6 - t5), t6 - t5, t7 - t5, j, j / bt
    e = (c5 - c4) * 1e6 / n
    printf "%-34s %10.0f %12.2f %12.2f %14.1f %8.2f\n", "  the same, \"events\": false", n / (t9 - t8), t9 - t8, t10 - t8, e, e / bt
}'
echo "  cpu: the worker process (user + system), submits and runs included; batch: its own summary (4 x cpu per model call)"
echo "reproduce: $B/rg_mock --port 8088 --rounds 3 --calls 2 &"
echo "  $B/reagent -c h.conf serve --foreground &   (h.conf: one worker, concurrency 1000, http { listen 127.0.0.1:8080; })"
echo "  curl -s -Z --parallel-immediate --parallel-max 100 -K one.cfg   (a url = \"…/v1/tasks\" and data = \"{task}\" per task)"
