#!/bin/sh
# test_durable_compact.sh: a durable session whose context is compacted
# (src/agent/rg_durable.c records "s" for a shortened tool result and "d"
# for a dropped round; rg_context.c decides) killed with SIGKILL and
# finished by `reagent resume`: every model request the resumed run sends
# is the uninterrupted run's, byte for byte (the call in flight at the
# kill is sent again), and the session's records in the store only grow:
# the history is appended to, never rewritten.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq

rg_redis r

# six files of 2,400 bytes read one a round: past context_limit the
# oldest results are shortened (request 4), then a round is dropped
# (request 6); the mock then answers the shorter conversation again
mkdir "$tmp/root"
for i in 1 2 3 4 5 6; do
    awk -v i=$i 'BEGIN { for (j = 0; j < 120; j++)
                             printf "file %d line of text ", i; print "" }' \
        > "$tmp/root/f$i.txt"
done

{
    echo '['
    for i in 1 2 3 4 5 6; do
        printf '{"message":{"tool_calls":[{"id":"c%d","name":"read_file",' $i
        printf '"arguments":{"path":"f%d.txt"}}]}},\n' $i
    done
    echo '{"message":{"content":"all read"}}]'
} > "$tmp/script.json"

rg_mock m --script "$tmp/script.json" --latency 200 \
    --request-log "$tmp/requests.log"

cat > "$tmp/c.conf" <<CONF
load_module $(cd "$B" && pwd)/modules/fs.so;
module fs { root $tmp/root; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent a { llm m; tools read_file; system_prompt "You read.";
          context_limit 2500; keep_rounds 2; }
store redis { server unix:$redis_sock; prefix "t:"; }
lease_ttl 1s;
CONF

body() {
    sed -n "$2p" "$1" | jq -cS .body
}

# the lengths of the session's record list while $1 runs, into $2
watch_llen() {
    : > "$2"
    while kill -0 "$1" 2>/dev/null; do
        id=$(sed -n 's/^session: \(s-[0-9a-f]*\) .*/\1/p' "$3" 2>/dev/null)
        [ -n "$id" ] && rg_rcli llen "t:{$id}:msgs" >> "$2"
        sleep 0.05
    done
}

grows() {
    awk 'NR > 1 && $1 < last { bad = 1 } { last = $1 } END { exit bad }' "$1"
}

# an uninterrupted run
"$R" -c "$tmp/c.conf" run -a a "read them" > "$tmp/u.out" 2> "$tmp/u.err"
uid=$(sed -n 's/^session: \(s-[0-9a-f]*\) .*/\1/p' "$tmp/u.err")
cp "$tmp/requests.log" "$tmp/u.requests"
nu=$(wc -l < "$tmp/u.requests" | tr -d ' ')
ustatus=$(rg_rcli hget "t:{$uid}:meta" status)
rg_check "the uninterrupted run ends ($ustatus) after $nu requests" \
    test -n "$ustatus" -a "$ustatus" != model_wait -a "$nu" -ge 7
rg_equal "its 4th request has the oldest result shortened" \
    "$(sed -n 4p "$tmp/u.requests" |
       jq -r '[.body.messages[] | select(.role == "tool") | .content |
               test("shortened to save context")] | map(tostring) |
               join(",")')" \
    "true,false,false"
rg_equal "its 6th has the oldest round dropped: as long as the 5th" \
    "$(sed -n 6p "$tmp/u.requests" | jq '.body.messages | length')" \
    "$(sed -n 5p "$tmp/u.requests" | jq '.body.messages | length')"
# msgpack: {"k": "s", ...} and {"k": "d", ...}, fixstr keys and values
rg_check "the store holds a shortening record and a drop record" sh -c \
    "redis-cli -s '$redis_sock' --no-raw lrange 't:{$uid}:msgs' 0 -1 |
     grep -q 'xa1k\\\\xa1s' &&
     redis-cli -s '$redis_sock' --no-raw lrange 't:{$uid}:msgs' 0 -1 |
     grep -q 'xa1k\\\\xa1d'"
ulen=$(rg_rcli llen "t:{$uid}:msgs")

# killed while its 7th request is in flight: the checkpoint of round 6
# holds the drop made for the 6th
: > "$tmp/requests.log"
"$R" -c "$tmp/c.conf" run -a a "read them" > "$tmp/k.out" 2> "$tmp/k.err" &
kpid=$!
pids="$pids $kpid"
watch_llen $kpid "$tmp/k.llen" "$tmp/k.err" &
wpid=$!
pids="$pids $wpid"
rg_wait_for "$tmp/requests.log" '"n":' 7
sleep 0.05
kill -9 $kpid
wait $kpid 2>/dev/null
wait $wpid 2>/dev/null
kid=$(sed -n 's/^session: \(s-[0-9a-f]*\) .*/\1/p' "$tmp/k.err")
rg_equal "the killed run sent seven requests" \
    "$(wc -l < "$tmp/requests.log" | tr -d ' ')" 7
rg_equal "and stopped after round 6" \
    "$(rg_rcli hget "t:{$kid}:meta" round)" 6
rg_check "its records hold the drop" sh -c \
    "redis-cli -s '$redis_sock' --no-raw lrange 't:{$kid}:msgs' 0 -1 |
     grep -q 'xa1k\\\\xa1d'"
klen=$(rg_rcli llen "t:{$kid}:msgs")
cp "$tmp/requests.log" "$tmp/k.requests"
: > "$tmp/requests.log"

"$R" -c "$tmp/c.conf" resume "$kid" > "$tmp/r.out" 2> "$tmp/r.err" &
rpid=$!
pids="$pids $rpid"
watch_llen $rpid "$tmp/r.llen" "$tmp/r.err" &
wpid=$!
pids="$pids $wpid"
wait $rpid
wait $wpid
rg_expect "resume says where it resumed" "$tmp/r.err" 'resumed after round 6'
rg_equal "it ends as the uninterrupted run did" \
    "$(rg_rcli hget "t:{$kid}:meta" status)" "$ustatus"

nr=$(wc -l < "$tmp/requests.log" | tr -d ' ')
rg_equal "the resumed run sent the rest: the one in flight again and after" \
    "$nr" $((nu - 6))
i=1
same=0
while [ $i -le 6 ]; do
    [ "$(body "$tmp/k.requests" $i)" = "$(body "$tmp/u.requests" $i)" ] &&
        same=$((same + 1))
    i=$((i + 1))
done
rg_equal "the killed run's first six are the uninterrupted run's" "$same" 6
i=1
same=0
while [ $i -le "$nr" ]; do
    [ "$(body "$tmp/requests.log" $i)" = \
      "$(body "$tmp/u.requests" $((i + 6)))" ] && same=$((same + 1))
    i=$((i + 1))
done
rg_equal "every resumed request is the uninterrupted run's, compacted alike" \
    "$same" "$nr"

rg_check "the records only grew while it ran ($(tr '\n' ' ' < "$tmp/k.llen"))" \
    grows "$tmp/k.llen"
{ echo "$klen"; cat "$tmp/r.llen"; rg_rcli llen "t:{$kid}:msgs"; } \
    > "$tmp/all.llen"
rg_check "and across the resume ($(tr '\n' ' ' < "$tmp/all.llen"))" \
    grows "$tmp/all.llen"
rg_equal "the records are those of the uninterrupted run" \
    "$(rg_rcli llen "t:{$kid}:msgs")" "$ulen"

rg_done
