#!/bin/sh
# test_client_commands.sh: the commands that are clients of a running
# `reagent serve` and of its Redis (src/core/reagent.c, rg_cycle.c,
# RG_CLI_CLIENT in rg_part.h, src/queue/rg_stream_cli.c), with the real
# binary, a redis-server on a free loopback port, the mock model and a
# serve whose configuration names secrets (an llm's api_key_env, the
# API's auth_token_env, an mcp block's secret_env and header variable)
# that the serve has and the operator's shell has not:
#   - submit, queue, results, status, pending, workers and -s reload work
#     without those secrets; reagent -t still refuses their absence;
#   - submit --wait while the test empties Redis (FLUSHALL: a Redis
#     restarted without its data): the tasks it still waits for, their
#     mark, session and result gone and no entry of them queued, are
#     queued again and said so on stderr; every task ends with one
#     result; one whose result came before is not queued again, nor one
#     whose result is in Redis (it ran meanwhile). The serve is restarted
#     after the flush: its workers do not survive the loss of their
#     consumer group yet (NOGROUP), which the serve's side is to fix;
#   - Redis down: each client says why on stderr, in the store's words,
#     and exits non-zero; nothing of it goes to the daemon's error_log.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

command -v redis-server >/dev/null || rg_skip "no redis-server (deploy/deps.sh)"
command -v jq >/dev/null || rg_skip "no jq (deploy/deps.sh)"
command -v python3 >/dev/null || rg_skip "no python3 (deploy/deps.sh)"

rport=$(rg_free_port)
hport=$(rg_free_port)
nport=$(rg_free_port)         # nothing listens: an mcp server never ready
rg_redis_tcp "$rport" "$tmp/redis.d"

rg_mock_answer m "ok" --latency 300

cat > "$tmp/s.conf" <<CONF
worker_processes 1;
concurrency 2;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm m { base_url http://127.0.0.1:$port/v1; model mock-1;
        api_key_env RG_TCC_KEY; }
agent a { llm m; }
store redis { server 127.0.0.1:$rport; connect_timeout 500ms; }
queue { block 1s; }
http { listen 127.0.0.1:$hport; auth_token_env RG_TCC_TOKEN; }
mcp side { command /bin/sh -c "exec cat > /dev/null"; secret_env RG_TCC_MCP;
           start_timeout 1s; }
mcp web { url http://127.0.0.1:$nport/mcp; start_timeout 1s;
          header Authorization "Bearer \$RG_TCC_MCP_TOKEN"; }
CONF

# the operator's shell: none of the daemon's secrets
unset RG_TCC_KEY RG_TCC_TOKEN RG_TCC_MCP RG_TCC_MCP_TOKEN

# env $secrets ...: the daemon's environment
secrets="RG_TCC_KEY=sk-test-0123456789abcdef RG_TCC_TOKEN=tok-0123456789
RG_TCC_MCP=mcp-0123456789 RG_TCC_MCP_TOKEN=mcptok-0123456789"

# client ARGS...: reagent ARGS as the operator runs it; $tmp/c.out, c.err
client() {
    "$R" -c "$tmp/s.conf" "$@" > "$tmp/c.out" 2> "$tmp/c.err"
}

serves=0

# start_serve: the daemon, with its secrets
start_serve() {
    # shellcheck disable=SC2086
    env $secrets "$R" -c "$tmp/s.conf" serve --foreground \
        > "$tmp/serve.out" 2>&1 &
    master=$!
    pids="$pids $master"
    serves=$((serves + 1))
    rg_wait_for "$tmp/error.log" "reading the queue" "$serves"
}

start_serve


# reagent -t is the daemon's check: the secrets are still required
"$R" -t -c "$tmp/s.conf" > "$tmp/t.out" 2> "$tmp/t.err"
rg_check "-t without the secrets fails" test $? -ne 0
rg_expect "-t names a missing one" "$tmp/t.err" 'RG_TCC_[A-Z_]*.*not set'
# shellcheck disable=SC2086
env $secrets "$R" -t -c "$tmp/s.conf" > "$tmp/t.out" 2> "$tmp/t2.err"
rg_check "-t with them passes" test $? -eq 0
# each one is required, the mcp ones too
for v in RG_TCC_KEY RG_TCC_TOKEN RG_TCC_MCP RG_TCC_MCP_TOKEN; do
    # shellcheck disable=SC2086
    env $secrets env -u $v "$R" -t -c "$tmp/s.conf" > "$tmp/t.out" \
        2> "$tmp/t3.err"
    rg_check "-t without $v fails" test $? -ne 0
    rg_expect "-t names $v" "$tmp/t3.err" "$v([^A-Z_]|\$)"
done

# the clients, without them
rg_task_lines 3 c 'task %d' '' 1 > "$tmp/c.jsonl"

client submit "$tmp/c.jsonl"
rg_check "submit works without the secrets" test $? -eq 0
rg_equal "submit prints the ids" "$(tr '\n' ' ' < "$tmp/c.out")" "c1 c2 c3 "
rg_lacks "submit says nothing of the secrets" "$tmp/c.err" \
    'RG_TCC|api_key_env|auth_token_env|secret_env|mcp'

# their results
i=0
while [ "$(redis-cli -p "$rport" xlen 'rg:{q:tasks}:results')" -lt 3 ] \
      && [ $i -lt 200 ]; do
    sleep 0.1
    i=$((i + 1))
done

client queue
rg_check "queue works without the secrets" test $? -eq 0
rg_expect "queue shows the shard" "$tmp/c.out" '^shard 0: '
rg_expect "queue shows the worker" "$tmp/c.out" '^  worker .*alive'

client results
rg_check "results works without the secrets" test $? -eq 0
rg_equal "results prints the three" \
    "$(jq -r .id "$tmp/c.out" | sort | tr '\n' ' ')" "c1 c2 c3 "

client status c2
rg_check "status works without the secrets" test $? -eq 0
rg_expect "status says done" "$tmp/c.out" '^status: done'

client pending
rg_check "pending works without the secrets" test $? -eq 0

client workers
rg_check "workers works without the secrets" test $? -eq 0
rg_check "workers prints the master's JSON" \
    jq -e '.workers | length == 1' "$tmp/c.out" > /dev/null

client -s reload
rg_check "-s reload works without the secrets" test $? -eq 0
rg_check "the master reloads (it has them)" \
    rg_wait_for "$tmp/error.log" 'reloaded "'
rg_lacks "the reload did not fail" "$tmp/error.log" 'reload (failed|refused)'
# the new worker reads before the next part
rg_wait_for "$tmp/error.log" "reading the queue" 2
serves=2


# submit --wait while Redis loses everything
rg_task_lines 12 w 'wait %d' '' 1 > "$tmp/w.jsonl"

"$R" -c "$tmp/s.conf" submit --wait --no-progress "$tmp/w.jsonl" \
    > "$tmp/w.out" 2> "$tmp/w.err" &
sub=$!
pids="$pids $sub"

# two results came, the rest wait (two at a time, 300 ms each)
rg_wait_for "$tmp/w.out" '"status"' 2
early=$(jq -r .id "$tmp/w.out" | tr '\n' ' ')
redis-cli -p "$rport" flushall > /dev/null
# w12, the last one, "ran meanwhile": its result is in Redis, as a worker
# leaves it, and is announced only after the wait has looked again
sid12=$(rg_task_sid w12)
res12='{"id":"w12","status":"done","answer":"ran meanwhile","rounds":1}'
redis-cli -p "$rport" set "rg:{$sid12}:result" "$res12" px 600000 > /dev/null

# the workers lost their consumer group with the data (NOGROUP): a new
# serve makes it again
kill -TERM "$master"
wait "$master" 2>/dev/null
start_serve

rg_check "submit --wait says it queues the lost tasks again" \
    rg_wait_for "$tmp/w.err" 'vanished from Redis.*queued again'
sleep 6
redis-cli -p "$rport" xadd 'rg:{q:tasks}:results' '*' id w12 result "$res12" \
    > /dev/null

i=0
while kill -0 $sub 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
done
kill $sub 2>/dev/null
wait $sub
rg_equal "submit --wait ends, every result in" "$?" 0
rg_equal "one result per task" \
    "$(jq -r .id "$tmp/w.out" | sort -u | wc -l | tr -d ' ')" 12
rg_equal "each once" "$(wc -l < "$tmp/w.out" | tr -d ' ')" 12
rg_equal "all done" "$(jq -r .status "$tmp/w.out" | sort -u)" done
rg_expect "the line names why" "$tmp/w.err" \
    'no mark, session, result or queue entry of them is left'
rg_expect "the summary counts them" "$tmp/w.err" \
    'queued again, lost by Redis'
grep 'queued again:' "$tmp/w.err" | sed 's/.*queued again: //' \
    | tr ',' '\n' | tr -d ' ' | sort > "$tmp/again.ids"
rg_check "some were queued again" test -s "$tmp/again.ids"
for id in $early; do
    rg_lacks "$id, whose result came before the loss, is not queued again" \
        "$tmp/again.ids" "^$id\$"
done
rg_lacks "w12, whose result is in Redis (it ran meanwhile), is not queued \
again" "$tmp/again.ids" '^w12$'
rg_equal "w12's result is the one Redis had" \
    "$(jq -r 'select(.id == "w12") | .answer' "$tmp/w.out")" "ran meanwhile"


# Redis down: each client says why, on stderr, and nothing in error_log
kill -TERM "$master"
wait "$master" 2>/dev/null
redis-cli -p "$rport" shutdown nosave > /dev/null 2>&1
wait $redis_pid 2>/dev/null
logged=$(wc -l < "$tmp/error.log")

for cmd in queue results status submit pending events; do
    case $cmd in
        status|events) arg=c2 ;;
        submit)        arg=$tmp/c.jsonl ;;
        *)             arg= ;;
    esac
    # shellcheck disable=SC2086
    client $cmd $arg < /dev/null
    rc=$?
    rg_check "$cmd with Redis down exits non-zero" test $rc -ne 0
    rg_expect "$cmd with Redis down says why on stderr" "$tmp/c.err" \
        "redis 127.0.0.1:$rport is not reachable .*connect_timeout"
done

client workers
rg_check "workers without the master exits non-zero" test $? -ne 0
rg_expect "workers says why" "$tmp/c.err" "status socket"
client -s reload
rg_check "-s reload without the master exits non-zero" test $? -ne 0
rg_expect "-s says why" "$tmp/c.err" "pid file"

rg_equal "the clients wrote nothing to error_log" \
    "$(wc -l < "$tmp/error.log")" "$logged"

rg_done
