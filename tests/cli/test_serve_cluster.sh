#!/bin/sh
# test_serve_cluster.sh: `reagent serve` on a Redis Cluster
# (src/store/rg_redis_cluster.c under src/queue/rg_stream.c): three
# masters the test starts on free loopback ports, a queue of three shards
# (their own hash tags, spread over the masters), two workers, 300 tasks
# submitted and followed through the cluster: every task ends done, once,
# and the shards live on more than one master; then a shard's slot is
# migrated to another master while 600 more run (a slower model: most
# are still to end when the slot has moved): every one ends, once.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq python3


# a node on a free port; another port if that one was taken meanwhile
start_node() {
    for try in 1 2 3; do
        p=$(rg_free_port)
        mkdir -p "$tmp/n$p"
        redis-server --port "$p" --bind 127.0.0.1 --dir "$tmp/n$p" \
            --cluster-enabled yes --cluster-config-file nodes.conf \
            --cluster-node-timeout 2000 --save "" --appendonly no \
            --logfile "$tmp/n$p.log" &
        pids="$pids $!"
        rg_until 10 'redis-cli -p "$p" ping >/dev/null 2>&1'
        if redis-cli -p "$p" ping >/dev/null 2>&1; then
            nodes="$nodes $p"
            return 0
        fi
    done
    rg_skip "a cluster node did not start: $(tail -n 1 "$tmp/n$p.log")"
}

nodes=
start_node
start_node
start_node

redis-cli --cluster create \
    $(for p in $nodes; do printf '127.0.0.1:%s ' $p; done) \
    --cluster-replicas 0 --cluster-yes > "$tmp/create.out" 2>&1
# formed when every node says so (one that does not yet answers
# CLUSTERDOWN)
formed() {
    for p in $nodes; do
        redis-cli -p "$p" cluster info 2>/dev/null |
            grep -q cluster_state:ok || return 1
    done
}
rg_until 20 'formed'
formed || rg_skip "the cluster did not form: $(tail -n 1 "$tmp/create.out")"

echo '[{"message":{"content":"clustered"}}]' > "$tmp/script.json"
rg_mock s --script "$tmp/script.json" --latency 2000
sport=$port
rg_mock m --script "$tmp/script.json" --latency 20

cat > "$tmp/s.conf" <<CONF
worker_processes 2;
concurrency 100;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
llm s { base_url http://127.0.0.1:$sport/v1; model mock-1; }
agent a { llm m; }
agent slow { llm s; }
store redis {
    cluster on;
$(for p in $nodes; do echo "    server 127.0.0.1:$p;"; done)
}
lease_ttl 2s;
queue { shards 3; claim_idle 5s; block 500ms; }
CONF

rg_serve "$tmp/s.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "reading the queue" 2

rg_task_lines 300 c 'hello %d' > "$tmp/tasks.jsonl"

timeout 120 "$R" -c "$tmp/s.conf" submit --wait "$tmp/tasks.jsonl" \
    > "$tmp/res.jsonl" 2> "$tmp/submit.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/#   /' "$tmp/submit.err"
rg_equal "submit --wait through the cluster ends" "$rc" 0
rg_equal "every task ends done" \
    "$(jq -r .status "$tmp/res.jsonl" | sort | uniq -c | tr -s ' ')" \
    " 300 done"
rg_equal "each once" "$(jq -r .id "$tmp/res.jsonl" | sort -u | wc -l) \
$(grep -c . "$tmp/res.jsonl")" "300 300"

# a shard's slot moves to another master while tasks run: its stream and
# group go with it (MIGRATE), the workers follow ASK and MOVED
key='rg:{q:tasks:0}'
first=$(echo $nodes | cut -d' ' -f1)
slot=$(redis-cli -p "$first" cluster keyslot "$key")
owner=
for p in $nodes; do
    redis-cli -p "$p" exists "$key" | grep -q '^1$' && owner=$p
done
target=
for p in $nodes; do
    [ "$p" != "$owner" ] && [ -z "$target" ] && target=$p
done
oid=$(redis-cli -p "$owner" cluster myid)
tid=$(redis-cli -p "$target" cluster myid)

i=0
while [ $i -lt 600 ]; do
    echo "{\"id\":\"m$i\",\"agent\":\"slow\",\"input\":\"hello $i\"}"
    i=$((i + 1))
done > "$tmp/more.jsonl"
"$R" -c "$tmp/s.conf" submit --wait "$tmp/more.jsonl" > "$tmp/more.out" \
    2> "$tmp/more.err" &
sub=$!
pids="$pids $sub"

i=0
while [ "$(grep -c . "$tmp/more.out" 2>/dev/null)" -lt 100 ] &&
      [ $i -lt 400 ]; do
    sleep 0.05
    i=$((i + 1))
done

at=$(grep -c . "$tmp/more.out")
{
    redis-cli -p "$target" cluster setslot "$slot" importing "$oid"
    redis-cli -p "$owner" cluster setslot "$slot" migrating "$tid"
    for k in $(redis-cli -p "$owner" cluster getkeysinslot "$slot" 1000); do
        redis-cli -p "$owner" migrate 127.0.0.1 "$target" "$k" 0 5000
    done
    for p in $nodes; do
        redis-cli -p "$p" cluster setslot "$slot" node "$tid"
    done
} > "$tmp/migrate.out" 2>&1
moved=$(grep -c . "$tmp/more.out")

rg_wait_gone $sub 120
wait $sub
rc=$?
[ $rc -eq 0 ] || sed 's/^/#   /' "$tmp/more.err"
rg_equal "the slot moved: its stream is on the new master" \
    "$(redis-cli -p "$target" exists "$key")" 1
[ "$(redis-cli -p "$target" exists "$key")" = 1 ] ||
    sed 's/^/#   /' "$tmp/migrate.out"
rg_check "while tasks ran: $at of 600 had ended when it began, $moved \
when the last node was told" test "$at" -gt 0 -a "$moved" -lt 600
rg_equal "the tasks submitted across the migration end" "$rc" 0
rg_equal "all done" \
    "$(jq -r .status "$tmp/more.out" | sort | uniq -c | tr -s ' ')" \
    " 600 done"
rg_equal "each once" "$(jq -r .id "$tmp/more.out" | sort -u | wc -l) \
$(grep -c . "$tmp/more.out")" "600 600"

owners=0
for p in $nodes; do
    held=0
    for s in 0 1 2; do
        k="rg:{q:tasks:$s}"
        if redis-cli -p "$p" exists "$k" 2>/dev/null | grep -q '^1$'; then
            held=$((held + 1))
        fi
    done
    [ $held -gt 0 ] && owners=$((owners + 1))
done
rg_check "the three shards live on more than one master ($owners)" \
    test "$owners" -ge 2

kill -QUIT $master
rg_wait_gone $master 20
rg_check "the master quits" test ! -d /proc/$master

rg_done
