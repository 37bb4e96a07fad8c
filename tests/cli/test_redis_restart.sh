#!/bin/sh
# test_redis_restart.sh: Redis going away in the middle of a batch
# (src/store/rg_redis.c, src/agent/rg_durable.c), with the real binary,
# the mock model and a redis-server on a free loopback port (appendonly):
#   - the server is stopped while 300 sessions run and started again on
#     the same port 3 s later: every task ends done, once, and Redis
#     holds each session's final status; each session's side effect
#     (count, tests/plugins/count.so, counting in a Redis of its own) ran
#     once, and the read-only call all of them make (dedupe global) ran
#     once in all;
#   - the log says the outage once, not once per operation nor once per
#     session (a few lines in all, one summing up the sessions that
#     waited), though every task has a tenant with a budget and its
#     events on: the events lost are said once, and the store's return
#     once;
#   - sessions that start while Redis is away (a batch reading its tasks
#     from a pipe is given 56 of them then): their first read waits for
#     it; every task ends done, and the log says so once;
#   - a Redis that is not there, and one that accepts connections and
#     never answers: `reagent -t` and run fail, with the address, within
#     about the connect timeout;
#   - Redis away for longer than store_timeout: a session ends failed
#     saying so, and one whose final status cannot be written still ends
#     (its owner hears of it) with its answer.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq python3 curl


# the side effects are counted in a Redis that stays
rg_redis c
csock=$redis_sock
ccli() {
    redis-cli -s "$csock" "$@"
}

rport=$(rg_free_port)
mkdir -p "$tmp/redis.d"

start_redis() {
    rg_redis_tcp "$rport" "$tmp/redis.d"
}

start_redis

cat > "$tmp/script.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"c1","name":"count","arguments":{"key":"k"}}]}},
 {"message":{"tool_calls":[
   {"id":"c2","name":"peek","arguments":{"key":"p"}}]}},
 {"message":{"content":"42"}}]
JSON

# answers come a second after their request: every session has sent its
# first one, and none has had its answer, when Redis goes
rg_mock m --script "$tmp/script.json" --latency 1000

cat > "$tmp/r.conf" <<CONF
load_module $(cd "$B" && pwd)/modules/calc.so;
load_module $(cd "$B" && pwd)/tests/plugins/count.so;
module count { redis $csock; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { llm m; tools calc count peek; dedupe global; }
store redis { server 127.0.0.1:$rport; connect_timeout 500ms; }
store_timeout 30s;
tenant_max_tokens 1m per 1d;
CONF

rg_task_lines 300 t compute ',"tenant":"acme","events":true' \
    > "$tmp/tasks.jsonl"

"$R" -c "$tmp/r.conf" batch --no-progress --concurrency 300 \
    -o "$tmp/res.jsonl" "$tmp/tasks.jsonl" > "$tmp/b.out" 2> "$tmp/b.err" &
bpid=$!
pids="$pids $bpid"

# stop Redis while the sessions are between rounds, 3 s, start it again
i=0
while [ "$(curl -s "http://127.0.0.1:$port/stats" | jq .requests)" -lt 300 ] \
      && [ $i -lt 400 ]; do
    sleep 0.05
    i=$((i + 1))
done
sleep 0.2
redis-cli -p "$rport" shutdown nosave > /dev/null 2>&1
wait $redis_pid 2>/dev/null
down=$(curl -s "http://127.0.0.1:$port/stats" | jq .requests)
sleep 3
start_redis

wait $bpid
rg_equal "the batch ends" "$?" 0
rg_check "Redis went away mid-batch (the model had $down of 900 requests)" \
    test "$down" -gt 0 -a "$down" -lt 900
rg_equal "every task ends done" \
    "$(jq -r .status "$tmp/res.jsonl" | sort | uniq -c | tr -s ' ')" \
    " 300 done"
rg_equal "each once" "$(jq -r .id "$tmp/res.jsonl" | sort -u | wc -l)" 300
rg_equal "no model call was made twice for a round" \
    "$(curl -s "http://127.0.0.1:$port/stats" | jq .requests)" 900

done_in_store=0
for k in $(redis-cli -p "$rport" --scan --pattern 'rg:{[bs]-*}:meta'); do
    [ "$(redis-cli -p "$rport" hget "$k" status)" = done ] &&
        done_in_store=$((done_in_store + 1))
done
rg_equal "Redis holds each session's final status" "$done_in_store" 300

# count:k:<idempotency key> counts each session's call
rg_equal "each session's side effect ran, once in all" "$(ccli get count:k)" 300
rg_equal "once for each session" \
    "$(ccli eval "local n = 0
        for _, k in ipairs(redis.call('KEYS', 'count:k:*')) do
          if redis.call('GET', k) == '1' then n = n + 1 end
        end
        return n" 0)" 300
rg_equal "the read-only call of all 300, made once Redis was back, ran \
once (dedupe global)" "$(ccli get count:p)" 1

# its start and its end; a Redis that answers "loading" for a moment once
# back may add one more of each, on a slow machine; the events and tenant
# budgets that failed say so once each, naming the error (and so the
# address): never one per session
grep "127.0.0.1:$rport" "$tmp/b.err" > "$tmp/outage.log"
lines=$(grep -c . "$tmp/outage.log")
rg_check "the outage is logged once, not per operation ($lines lines for \
300 sessions)" test "$lines" -ge 1 -a "$lines" -le 6
[ "$lines" -le 6 ] || sed 's/^/#   /' "$tmp/outage.log" | head -n 10
rg_expect "and its end" "$tmp/b.err" "redis 127.0.0.1:$rport reachable again"
# and nothing else per session: the sessions that waited are summed up
# in one line when the store takes their checkpoints again; the events
# lost meanwhile (answers came while it was away) and a tenant budget
# that could not be read are said once each, the store's return once
# (the log's lines, not the batch summary's)
grep -E '^[0-9]{4}/[0-9]{2}/[0-9]{2} ' "$tmp/b.err" > "$tmp/nonbatch.log"
lines=$(grep -c . "$tmp/nonbatch.log")
rg_check "the whole log of the outage is a few lines ($lines for 300 \
sessions)" test "$lines" -ge 1 -a "$lines" -le 8
[ "$lines" -le 8 ] || sed 's/^/#   /' "$tmp/nonbatch.log" | head -n 10
rg_expect "one of them sums up the sessions that waited" "$tmp/b.err" \
    'the store took the checkpoints again: [0-9]+ sessions waited for it'
rg_equal "the events lost are said once" \
    "$(grep -c 'events cannot be recorded in the store' "$tmp/b.err")" 1
rg_check "a tenant budget not read is said at most once" \
    test "$(grep -c 'tenant budgets cannot be read' "$tmp/b.err")" -le 1
rg_equal "and the store's return once" \
    "$(grep -c 'the store answers again;' "$tmp/b.err")" 1

# sessions that start while Redis is away: the batch reads its tasks
# from a pipe, runs 4 while Redis is there, and is given 56 more once it
# is gone; their first read waits for it (longer than a command waits
# for a connection, 2 s), as a checkpoint does, and they run once it is
# back
echo '[{"message":{"content":"7"}}]' > "$tmp/late.json"
rg_mock late --script "$tmp/late.json"
cat > "$tmp/late.conf" <<CONF
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { llm m; }
store redis { server 127.0.0.1:$rport; connect_timeout 500ms; }
store_timeout 30s;
CONF
late_tasks() {
    i=$1
    while [ $i -lt "$2" ]; do
        echo "{\"id\":\"late$i\",\"input\":\"hi\"}"
        i=$((i + 1))
    done
}

mkfifo "$tmp/late.fifo"
"$R" -c "$tmp/late.conf" batch --no-progress --concurrency 4 \
    -o "$tmp/late.out" - < "$tmp/late.fifo" > /dev/null 2> "$tmp/late.err" &
bpid=$!
pids="$pids $bpid"
exec 3> "$tmp/late.fifo"
late_tasks 0 4 >&3
rg_wait_for "$tmp/late.out" '"done"' 4
redis-cli -p "$rport" shutdown nosave > /dev/null 2>&1
wait $redis_pid 2>/dev/null
late_tasks 4 60 >&3
sleep 4
start_redis 3>&-      # not a writer of the pipe: the batch sees its end
exec 3>&-
wait $bpid
rg_equal "sessions started while Redis was away wait for it: the batch \
ends, every task done" "$? $(grep -c '"done"' "$tmp/late.out")" "0 60" ||
    grep -v '"done"' "$tmp/late.out" | cut -c1-300 | sed 's/^/#   /'
rg_equal "the reads that waited are said once" \
    "$(grep -c 'sessions cannot be read from the store' "$tmp/late.err")" 1

# a Redis that is not there
dead=$(rg_free_port)
sed "s/127.0.0.1:$rport/127.0.0.1:$dead/" "$tmp/r.conf" > "$tmp/dead.conf"
"$R" -c "$tmp/dead.conf" -t > "$tmp/t.out" 2>&1
rg_equal "reagent -t fails when Redis is unreachable" "$?" 1
rg_expect "naming the address" "$tmp/t.out" "127.0.0.1:$dead"
"$R" -c "$tmp/dead.conf" run -a a "x" > /dev/null 2> "$tmp/run.err"
rg_equal "run does not start without it" "$?" 1
rg_expect "and says so" "$tmp/run.err" "127.0.0.1:$dead"

# one that accepts connections and never answers: the connect timeout
# (500ms) is what ends the wait, and not much later: measured beyond
# what `reagent -t` takes with a Redis that answers (its own start)
t0=$(date +%s%3N)
"$R" -c "$tmp/r.conf" -t > /dev/null 2>&1
start=$(($(date +%s%3N) - t0))
python3 -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1])
sys.stdout.flush()
time.sleep(120)' > "$tmp/mute.port" &
pids="$pids $!"
rg_until 10 '[ -s "$tmp/mute.port" ]'
mute=$(cat "$tmp/mute.port")
sed "s/127.0.0.1:$rport/127.0.0.1:$mute/" "$tmp/r.conf" > "$tmp/mute.conf"

t0=$(date +%s%3N)
"$R" -c "$tmp/mute.conf" -t > "$tmp/mt.out" 2>&1
rc=$?
ms=$(($(date +%s%3N) - t0 - start))
rg_equal "reagent -t fails when Redis never answers" "$rc" 1
rg_expect "naming the address and the timeout" "$tmp/mt.out" \
    "127.0.0.1:$mute is not reachable within 500ms \\(connect_timeout\\)"
rg_check "after about the connect timeout: $ms ms more than its start" \
    test "$ms" -ge 350 -a "$ms" -le 1500

t0=$(date +%s%3N)
"$R" -c "$tmp/mute.conf" run -a a "x" > /dev/null 2> "$tmp/mr.err"
rc=$?
ms=$(($(date +%s%3N) - t0 - start))
rg_equal "run does not start" "$rc" 1
rg_expect "and says so, with the address" "$tmp/mr.err" \
    "127.0.0.1:$mute is not reachable within 500ms"
rg_check "after about the connect timeout: $ms ms more than -t's start" \
    test "$ms" -ge 350 -a "$ms" -le 1500

# store_timeout: Redis stopped while a model call is in flight and not
# back within 1 s; the session's next checkpoint cannot be written
stop_redis() {
    redis-cli -p "$rport" shutdown nosave > /dev/null 2>&1
    wait $redis_pid 2>/dev/null
}

cat > "$tmp/two.json" <<'JSON'
[{"message":{"tool_calls":[
   {"id":"c1","name":"calc","arguments":{"expression":"6*7"}}]}},
 {"message":{"content":"42"}}]
JSON
echo '[{"message":{"content":"42"}}]' > "$tmp/one.json"

rg_mock two --script "$tmp/two.json" --latency 1500 \
    --request-log "$tmp/two.log"
cat > "$tmp/st.conf" <<CONF
load_module $(cd "$B" && pwd)/modules/calc.so;
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { llm m; tools calc; }
store redis { server 127.0.0.1:$rport; connect_timeout 500ms; }
store_timeout 1s;
CONF
rg_mock one --script "$tmp/one.json" --latency 1500 \
    --request-log "$tmp/one.log"
sed "s|127.0.0.1:[0-9]*/v1|127.0.0.1:$port/v1|" "$tmp/st.conf" \
    > "$tmp/st1.conf"

# in the middle of the session: it ends failed, saying why
timeout -k 5 60 "$R" -c "$tmp/st.conf" run -a a "compute" \
    > "$tmp/f.out" 2> "$tmp/f.err" &
fpid=$!
rg_wait_for "$tmp/two.log" '"n":' 1
stop_redis
wait $fpid
rc=$?
rg_check "a session the store cannot take for store_timeout ends (exit \
$rc)" test "$rc" -ne 0 -a "$rc" -ne 124 -a "$rc" -ne 137
rg_expect "failed, with the reason named" "$tmp/f.err" \
    'session failed .*the store did not take the session.s checkpoint for 1s \(store_timeout\)'

# its final checkpoint: the session had ended (done), it still ends
start_redis
timeout -k 5 60 "$R" -c "$tmp/st1.conf" run -a a "compute" \
    > "$tmp/g.out" 2> "$tmp/g.err" &
gpid=$!
rg_wait_for "$tmp/one.log" '"n":' 1
stop_redis
wait $gpid
rc=$?
rg_check "a session whose final status cannot be written still ends \
(exit $rc)" test "$rc" -ne 124 -a "$rc" -ne 137
rg_expect "with its answer" "$tmp/g.out" '^42$'
rg_expect "and the log says the store lacks its end" "$tmp/g.err" \
    'the session done, but its final status was not written to the store: the store did not take'

rg_done
