#!/bin/sh
# test_http_events.sh: GET /v1/tasks/{id}/events, a session's events as
# Server-Sent Events over real HTTP. With the queue (two workers, store
# redis): the events of a task in order (model calls started and ended
# with tokens, tool calls started and ended, final), ids increasing; the
# worker serving the stream killed with -9 mid-task, the client back on
# another worker with Last-Event-ID gets the rest, no gap, nothing twice;
# a bad Last-Event-ID is a 400, an unknown task a 404. Without a queue
# (one worker, store memory): 200 concurrent streams of 200 tasks, each
# ending with its final event; past max_event_streams a 503; a chat
# completion streamed shows the tool calls as comments.
#
# Run from the repository root by tests/run.sh; B names the build folder.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq curl ss

# two rounds of a tool call, then the answer, 400 ms an answer
rg_mock m --rounds 2 --calls 1 --latency 400
mport=$port
rg_mock q --rounds 1 --calls 1 --latency 6000
qport=$port

rport=$(rg_free_port)
rg_redis_tcp "$rport" "$tmp/redis"
hport=$(rg_free_port)
M=$(cd "$B" && pwd)/modules

cat > "$tmp/q.conf" <<CONF
load_module $M/calc.so;
worker_processes 2;
concurrency 300;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1; }
agent a { llm m; tools calc; }
store redis { server 127.0.0.1:$rport; }
lease_ttl 1s;
queue { claim_idle 2s; block 500ms; }
http { listen 127.0.0.1:$hport; }
CONF

rg_serve "$tmp/q.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "http: worker .* answers" 2
rg_wait_for "$tmp/error.log" "reading the queue" 2
U=http://127.0.0.1:$hport

# types FILE: the event types of an SSE capture, one a line
types() {
    sed -n 's/^event: //p' "$1"
}
ids() {
    sed -n 's/^id: //p' "$1"
}

curl -s -o /dev/null "$U/v1/tasks" -d '{"id":"e1","input":"follow me"}'
curl -sN -m 20 "$U/v1/tasks/e1/events" -o "$tmp/e1.sse" -D "$tmp/e1.h"
rg_expect "events: text/event-stream" "$tmp/e1.h" \
    "^Content-Type: text/event-stream"
rg_equal "the events of a task, in order, ending with final" \
    "$(types "$tmp/e1.sse" | tr '\n' ' ')" \
    "model_call_started model_call_ended tool_call_started tool_call_ended model_call_started model_call_ended tool_call_started tool_call_ended model_call_started model_call_ended final "
rg_check "  ids increase" sh -c "ids '$tmp/e1.sse' | sort -t- -k1,1n -k2,2n -c"
sed -n 's/^data: //p' "$tmp/e1.sse" > "$tmp/e1.data"
rg_check "  model calls ended carry their tokens" \
    jq -es 'map(select(.type == "model_call_ended")) | length == 3 and
            all(.prompt_tokens > 0 and .completion_tokens > 0)' "$tmp/e1.data"
rg_check "  tool calls carry their id and name" \
    jq -es 'map(select(.type == "tool_call_started")) | all(.name == "calc"
            and (.id | type) == "string")' "$tmp/e1.data"
rg_check "  final says done, with the answer" \
    jq -es '.[-1].type == "final" and .[-1].status == "done" and
            (.[-1].answer | test("Final answer"))' "$tmp/e1.data"

third=$(ids "$tmp/e1.sse" | sed -n 3p)
curl -sN -m 10 "$U/v1/tasks/e1/events" -H "Last-Event-ID: $third" \
    -o "$tmp/e1b.sse"
rg_equal "Last-Event-ID: what followed it, nothing before" \
    "$(ids "$tmp/e1b.sse" | tr '\n' ' ')" \
    "$(ids "$tmp/e1.sse" | sed -n '4,$p' | tr '\n' ' ')"
curl -sN -m 10 "$U/v1/tasks/e1/events?after=$third" -o "$tmp/e1c.sse"
rg_equal "  ?after= the same" "$(ids "$tmp/e1c.sse" | head -n 1)" \
    "$(ids "$tmp/e1.sse" | sed -n 4p)"

code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$U/v1/tasks/e1/events" \
       -H "Last-Event-ID: nonsense")
rg_equal "a bad Last-Event-ID: 400" "$code" 400
code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$U/v1/tasks/nope/events")
rg_equal "an unknown task: 404" "$code" 404
rg_check "  a JSON error" jq -e '.error.code == "task_not_found"' "$tmp/body"

# --- across a worker restart --------------------------------------------

curl -s -o /dev/null "$U/v1/tasks" \
    -d '{"id":"e2","input":"follow me across","max_rounds":8}'
curl -sN -m 30 "$U/v1/tasks/e2/events" -o "$tmp/e2a.sse" &
follower=$!
pids="$pids $follower"
rg_wait_for "$tmp/e2a.sse" "^event: tool_call_ended"
# the worker that serves this stream
serving=$(ss -tnpH state established "( sport = :$hport )" 2>/dev/null |
          sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1)
rg_check "the worker serving the stream is found ($serving)" \
    test -n "$serving"
kill -9 "$serving"
wait $follower
last=$(ids "$tmp/e2a.sse" | tail -n 1)
rg_check "  the stream broke mid-task" \
    sh -c "! grep -q '^event: final' '$tmp/e2a.sse'"
# back, on whichever worker answers now
i=0
while ! curl -sN -m 30 "$U/v1/tasks/e2/events" -H "Last-Event-ID: $last" \
          -o "$tmp/e2b.sse" 2>/dev/null && [ $i -lt 20 ]; do
    sleep 0.2
    i=$((i + 1))
done
rg_expect "  back with Last-Event-ID, it runs to final" "$tmp/e2b.sse" \
    "^event: final"
curl -sN -m 10 "$U/v1/tasks/e2/events" -o "$tmp/e2all.sse"
rg_equal "  no gap, nothing twice" \
    "$( (ids "$tmp/e2a.sse"; ids "$tmp/e2b.sse") | tr '\n' ' ')" \
    "$(ids "$tmp/e2all.sse" | tr '\n' ' ')"

# a reload ends the streams of the old workers at once: their clients
# come back with Last-Event-ID to the new ones
curl -s -o /dev/null "$U/v1/tasks" \
    -d '{"id":"e3","input":"follow me across a reload","max_rounds":8}'
curl -sN -m 30 "$U/v1/tasks/e3/events" -o "$tmp/e3a.sse" &
follower=$!
pids="$pids $follower"
rg_wait_for "$tmp/e3a.sse" "^event: model_call_started"
t0=$(date +%s)
kill -HUP $master
wait $follower
t1=$(date +%s)
rg_check "a reload ends an event stream at once ($((t1 - t0)) s)" \
    sh -c "! grep -q '^event: final' '$tmp/e3a.sse' && [ $((t1 - t0)) -lt 5 ]"
rg_wait_for "$tmp/error.log" "http: worker .* answers" 4
last=$(ids "$tmp/e3a.sse" | tail -n 1)
curl -sN -m 30 "$U/v1/tasks/e3/events" -H "Last-Event-ID: $last" \
    -o "$tmp/e3b.sse"
rg_expect "  its client resumes on a new worker, to final" "$tmp/e3b.sse" \
    "^event: final"

kill -QUIT $master
rg_wait_gone $master 10

# --- 200 streams on one worker, store memory -----------------------------

h2=$(rg_free_port)
cat > "$tmp/m.conf" <<CONF
load_module $M/calc.so;
worker_processes 1;
concurrency 300;
pid $tmp/m.pid;
error_log $tmp/m.log info;
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1;
        max_connections 300; }
llm q { base_url http://127.0.0.1:$qport/v1; model mock-1; }
agent a { llm m; tools calc; }
agent q { llm q; tools calc; }
http { listen 127.0.0.1:$h2; max_event_streams 201; access_log off; }
CONF
"$R" -c "$tmp/m.conf" serve --foreground > "$tmp/m.out" 2>&1 &
pids="$pids $!"
rg_wait_for "$tmp/m.log" "http: worker .* answers"
U2=http://127.0.0.1:$h2

rg_task_lines 200 s 'stream %d' > "$tmp/s.jsonl"
curl -s -o "$tmp/body" "$U2/v1/tasks" --data-binary @"$tmp/s.jsonl"
rg_check "200 tasks taken" jq -e '.accepted == 200' "$tmp/body"
mkdir -p "$tmp/s"
i=0
: > "$tmp/s.cfg"
while [ $i -lt 200 ]; do
    [ $i -gt 0 ] && echo next >> "$tmp/s.cfg"
    printf 'url = "%s/v1/tasks/s%d/events"\noutput = "%s/s/%d.sse"\nno-buffer\n' \
        "$U2" "$i" "$tmp" "$i" >> "$tmp/s.cfg"
    i=$((i + 1))
done
curl -s -Z --parallel-immediate --parallel-max 200 -m 60 -K "$tmp/s.cfg" 2>/dev/null
rg_equal "200 concurrent event streams each end with final" \
    "$(grep -l '^event: final' "$tmp"/s/*.sse | wc -l)" 200
rg_equal "  each with its 11 events" \
    "$(cat "$tmp"/s/*.sse | grep -c '^event: ')" 2200

# the cap: 201 open, the next refused
curl -s -o /dev/null "$U2/v1/tasks" -d '{"id":"hold","agent":"q","input":"x"}'
i=0
: > "$tmp/cap.cfg"
while [ $i -lt 201 ]; do
    [ $i -gt 0 ] && echo next >> "$tmp/cap.cfg"
    printf 'url = "%s/v1/tasks/hold/events"\noutput = "/dev/null"\n' \
        "$U2" >> "$tmp/cap.cfg"
    i=$((i + 1))
done
curl -s -Z --parallel-immediate --parallel-max 201 -m 30 -K "$tmp/cap.cfg" 2>/dev/null &
capped=$!
pids="$pids $capped"
i=0
while [ "$(curl -s "$U2/readyz" | jq .event_streams)" != 201 ] \
      && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
done
rg_equal "201 streams follow a task (readyz counts them)" \
    "$(curl -s "$U2/readyz" | jq .event_streams)" 201
code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$U2/v1/tasks/hold/events")
rg_equal "past max_event_streams: 503" "$code" 503
rg_check "  a JSON error" jq -e '.error.code == "too_many_streams"' "$tmp/body"
wait $capped

# a streamed chat shows what the agent does as comments
curl -sN "$U2/v1/chat/completions" -o "$tmp/chat.sse" \
    -d '{"model":"a","stream":true,"messages":[{"role":"user","content":"x"}]}'
rg_expect "a streamed chat shows the tool calls as SSE comments" \
    "$tmp/chat.sse" '^: tool_call_started \{.*"name":"calc"'
rg_equal "  and still ends with [DONE]" \
    "$(grep '^data:' "$tmp/chat.sse" | tail -n 1)" "data: [DONE]"

rg_done
