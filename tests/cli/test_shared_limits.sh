#!/bin/sh
# test_shared_limits.sh: admission control across processes
# (src/llm/rg_llm_shared.c, src/agent/rg_tenant.c) with the real binary,
# a redis-server and the mock model's arrival times (/stats):
#   - requests_per_minute 300 shared: two processes together send at most
#     5 a second (each alone would send 5);
#   - max_connections 2 shared: at most 2 requests in flight from both;
#   - a 429 with Retry-After: 2 holds every process for 2 s, not only the
#     one that got it; an llm without shared limits too, and the cool-down
#     is the upstream's (URL, model, key): another process calling the
#     same model through an llm block of another name waits as well;
#   - tenant_max_tokens: a tenant's tokens add up across processes, and
#     past the budget its tasks end budget_exceeded, naming it; another
#     tenant goes on;
#   - a tenant's budget that cannot be read (Redis refuses writes to the
#     counters: an ACL) follows the llm's shared_limits_fallback, said
#     once, not once per call: local lets the calls go; wait holds them
#     until it can be read, then they go, and the return is said; past
#     store_timeout the task ends failed, saying why;
#   - without store redis: shared_limits_fallback wait is a configuration
#     error, local says that each process holds the limits alone.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq curl

rg_redis r

echo '[{"message":{"content":"ok"}}]' > "$tmp/script.json"

conf() {
    cat <<CONF
llm m { base_url http://127.0.0.1:$1/v1; model mock-1; $2 }
agent a { llm m; }
store redis { server unix:$redis_sock; }
$3
CONF
}


# the largest number of arrivals within any window of $2 ms
most_within() {
    curl -s "http://127.0.0.1:$1/stats" | jq --argjson w "$2" '
        .times_ms as $t | [range(0; $t | length) as $i |
          [$t[] | select(. >= $t[$i] and . < $t[$i] + $w)] | length] | max'
}

# two processes, one shared rate
rg_mock rate --script "$tmp/script.json"
conf $port "requests_per_minute 300 shared;" > "$tmp/rate.conf"
rg_task_lines 8 a > "$tmp/a.jsonl"
rg_task_lines 8 b > "$tmp/b.jsonl"

"$R" -c "$tmp/rate.conf" batch --no-progress -o "$tmp/ra.jsonl" \
    "$tmp/a.jsonl" > /dev/null 2> "$tmp/ra.err" &
p1=$!
pids="$pids $p1"
"$R" -c "$tmp/rate.conf" batch --no-progress -o "$tmp/rb.jsonl" \
    "$tmp/b.jsonl" > /dev/null 2> "$tmp/rb.err"
rb=$?
wait $p1
ra=$?

rg_equal "both batches end" "$ra $rb" "0 0"
rg_equal "every task is done" \
    "$(cat "$tmp/ra.jsonl" "$tmp/rb.jsonl" | jq -r .status | sort | uniq -c |
       tr -s ' ')" " 16 done"
got=$(most_within $port 1000)
rg_check "at most 5 requests a second (and the first) reach the model, \
from both processes together: $got" test "$got" -le 6
span=$(curl -s "http://127.0.0.1:$port/stats" |
       jq '.times_ms | (max - min)')
rg_check "16 requests at 5 a second take at least 2.8 s: $span ms" \
    test "$span" -ge 2800

# two processes, two connections between them
rg_mock conn --script "$tmp/script.json" --latency 400
conf $port "max_connections 2 shared;" > "$tmp/conn.conf"
rg_task_lines 4 a > "$tmp/a4.jsonl"
rg_task_lines 4 b > "$tmp/b4.jsonl"

"$R" -c "$tmp/conn.conf" batch --no-progress -o "$tmp/ca.jsonl" \
    "$tmp/a4.jsonl" > /dev/null 2> "$tmp/ca.err" &
p1=$!
pids="$pids $p1"
"$R" -c "$tmp/conn.conf" batch --no-progress -o "$tmp/cb.jsonl" \
    "$tmp/b4.jsonl" > /dev/null 2> "$tmp/cb.err"
cb=$?
wait $p1
rg_equal "both batches end, every task done" \
    "$? $cb $(cat "$tmp/ca.jsonl" "$tmp/cb.jsonl" | grep -c '"done"')" "0 0 8"
rg_equal "at most 2 requests were in flight at once, from both" \
    "$(curl -s "http://127.0.0.1:$port/stats" | jq .max_inflight)" 2
rg_equal "and the slots were given back" \
    "$(rg_rcli zcard "$(rg_rcli --scan --pattern 'rg:sl:{up:*}:llm:m')")" 0

# a 429 holds every process
rg_mock cool --script "$tmp/script.json" --fault 429 --fault-count 1 \
    --retry-after 2
conf $port "requests_per_minute 6000 shared; max_retries 4;" \
    > "$tmp/cool.conf"

"$R" -c "$tmp/cool.conf" run -a a "first" > /dev/null 2> "$tmp/c1.err" &
c1=$!
pids="$pids $c1"

i=0
while [ "$(curl -s "http://127.0.0.1:$port/stats" | jq .faults)" != 1 ] \
      && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done

"$R" -c "$tmp/cool.conf" run -a a "second" > /dev/null 2> "$tmp/c2.err"
rg_equal "the second process ends done" "$?" 0
wait $c1
rg_equal "the one that got the 429 ends done" "$?" 0

gap=$(curl -s "http://127.0.0.1:$port/stats" |
      jq '.times_ms | sort | (.[1] - .[0])')
rg_check "after the 429 no process asked the model for 2 s: $gap ms" \
    test "$gap" -ge 1900

# no shared limit, and the other process's llm block named otherwise
rg_mock cool2 --script "$tmp/script.json" --fault 429 --fault-count 1 \
    --retry-after 2
conf $port "max_retries 4;" > "$tmp/cool2.conf"
sed 's/llm m /llm other /; s/llm m;/llm other;/' "$tmp/cool2.conf" \
    > "$tmp/cool3.conf"

"$R" -c "$tmp/cool2.conf" run -a a "first" > /dev/null 2> "$tmp/c3.err" &
c1=$!
pids="$pids $c1"

i=0
while [ "$(curl -s "http://127.0.0.1:$port/stats" | jq .faults)" != 1 ] \
      && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done

"$R" -c "$tmp/cool3.conf" run -a a "second" > /dev/null 2> "$tmp/c4.err"
rg_equal "without shared limits: the second process ends done" "$?" 0
wait $c1
rg_equal "the one that got the 429 ends done" "$?" 0

gap=$(curl -s "http://127.0.0.1:$port/stats" |
      jq '.times_ms | sort | (.[1] - .[0])')
rg_check "after the 429 neither asked the model for 2 s: $gap ms" \
    test "$gap" -ge 1900

# a tenant's budget across processes
rg_mock tn --script "$tmp/script.json"
conf $port "" "tenant_max_tokens 50 per 1h;" > "$tmp/tn.conf"
rg_task_lines 2 x hi ',"tenant":"acme"' > "$tmp/t1.jsonl"
{ rg_task_lines 2 y hi ',"tenant":"acme"'
  rg_task_lines 1 z hi ',"tenant":"beta"'; } \
    > "$tmp/t2.jsonl"

"$R" -c "$tmp/tn.conf" batch --no-progress --concurrency 1 \
    -o "$tmp/t1.out" "$tmp/t1.jsonl" > /dev/null 2>&1
"$R" -c "$tmp/tn.conf" batch --no-progress --concurrency 1 \
    -o "$tmp/t2.out" "$tmp/t2.jsonl" > /dev/null 2>&1

rg_equal "the first process: the tenant's two tasks are done" \
    "$(jq -r .status "$tmp/t1.out" | tr '\n' ' ')" "done done "
used=$(rg_rcli --scan --pattern 'rg:tn:{acme}:*' | head -n 1)
rg_check "its tokens are counted in the store: $(rg_rcli get "$used")" \
    test "$(rg_rcli get "$used")" -ge 60
rg_check "for its window: TTL $(rg_rcli pttl "$used") ms" \
    test "$(rg_rcli pttl "$used")" -gt 0
rg_equal "the second process: the tenant's budget runs out" \
    "$(jq -r .status "$tmp/t2.out" | tr '\n' ' ')" \
    "done budget_exceeded done "
rg_expect "the task says which tenant and why" "$tmp/t2.out" \
    'tenant \\"acme\\" has used [0-9]+ of its 50 tokens'

rg_ttl_sweep "every key reagent wrote (rate, slot, cool-down, tenant)"

# the tenants' counters cannot be written: the fallback decides
deny_tn() {
    rg_rcli acl setuser default resetkeys '%R~*' '~rg:[^t]*' \
        '~rg:t[^n]*' > /dev/null
}
allow_all() {
    rg_rcli acl setuser default resetkeys '~*' > /dev/null
}

rg_mock tl --script "$tmp/script.json"
conf $port "" "tenant_max_tokens 1m per 1h;" > "$tmp/tl.conf"
rg_task_lines 4 l hi ',"tenant":"gamma"' > "$tmp/tl.jsonl"
deny_tn
"$R" -c "$tmp/tl.conf" batch --no-progress -o "$tmp/tl.out" \
    "$tmp/tl.jsonl" > /dev/null 2> "$tmp/tl.err"
rc=$?
allow_all
rg_equal "local: a tenant's tasks go on while its budget cannot be read" \
    "$rc $(grep -c '"done"' "$tmp/tl.out")" "0 4"
rg_equal "said once, not once per call" \
    "$(grep -c 'tenant budgets cannot be read' "$tmp/tl.err")" 1
rg_expect "naming the fallback" "$tmp/tl.err" \
    'are not counted meanwhile \(shared_limits_fallback local\)'

rg_mock tw --script "$tmp/script.json"
conf $port "shared_limits_fallback wait;" "tenant_max_tokens 1m per 1h;" \
    > "$tmp/tw.conf"
rg_task_lines 3 w hi ',"tenant":"gamma"' > "$tmp/tw.jsonl"
deny_tn
"$R" -c "$tmp/tw.conf" batch --no-progress -o "$tmp/tw.out" \
    "$tmp/tw.jsonl" > /dev/null 2> "$tmp/tw.err" &
tw=$!
pids="$pids $tw"
sleep 1.5
held=$(curl -s "http://127.0.0.1:$port/stats" | jq .requests)
allow_all
wait $tw
rc=$?
rg_equal "wait: no model call while the budget cannot be read" "$held" 0
rg_equal "then the tasks go on, every one done" \
    "$rc $(grep -c '"done"' "$tmp/tw.out")" "0 3"
rg_equal "said once" \
    "$(grep -c 'tenant budgets cannot be read' "$tmp/tw.err")" 1
rg_expect "naming the fallback" "$tmp/tw.err" \
    'wait for it, up to store_timeout \(shared_limits_fallback wait\)'
rg_equal "and its end once" \
    "$(grep -c 'the store answers again;' "$tmp/tw.err")" 1

conf $port "shared_limits_fallback wait;" \
    "tenant_max_tokens 1m per 1h; store_timeout 1s;" > "$tmp/tt.conf"
rg_task_lines 1 t hi ',"tenant":"gamma"' > "$tmp/tt.jsonl"
deny_tn
"$R" -c "$tmp/tt.conf" batch --no-progress -o "$tmp/tt.out" \
    "$tmp/tt.jsonl" > /dev/null 2> "$tmp/tt.err"
allow_all
rg_equal "past store_timeout the task ends failed" \
    "$(jq -r .status "$tmp/tt.out")" failed
rg_expect "saying why" "$tmp/tt.out" \
    'tenant .*gamma.*: its budget could not be read from the store for 1s'

# without store redis
cat > "$tmp/wait.conf" <<CONF
llm m { base_url http://127.0.0.1:$port/v1; model mock-1;
        requests_per_minute 60 shared; shared_limits_fallback wait; }
agent a { llm m; }
CONF
"$R" -c "$tmp/wait.conf" -t > "$tmp/wait.out" 2>&1
rg_equal "fallback wait without store redis is refused" "$?" 1
# the directive's own line (2), not its block's
rg_expect "and says why, with file:line" "$tmp/wait.out" \
    'shared_limits_fallback wait" needs "store redis.*wait.conf:2'

sed 's/shared_limits_fallback wait;//' "$tmp/wait.conf" > "$tmp/local.conf"
"$R" -c "$tmp/local.conf" run -a a "hi" > /dev/null 2> "$tmp/local.err"
rg_equal "fallback local without store redis runs" "$?" 0
rg_expect "and says the limits are this process's alone" "$tmp/local.err" \
    'shared limits are held by this process alone'

rg_done
