#!/bin/sh
# test_task_messages.sh: a task whose "input" is a conversation (a list
# of messages) keeps all of it wherever it runs, with the real binary, a
# redis-server on a unix socket and the mock model logging each request:
#   - batch with store memory, batch with store redis (a durable session,
#     opened by its id) and reagent serve from the queue: the model gets
#     the agent's system prompt, then every message of the task in order,
#     not only its last user message;
#   - batch --resume with store redis: a finished conversation task is
#     kept, not run again.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

rg_need redis-server jq

rg_redis r

rg_mock_answer m "ok" --request-log "$tmp/requests.log"
mport=$port

cat > "$tmp/task.jsonl" <<'JSON'
{"id":"c1","input":[{"role":"system","content":"be brief"},{"role":"user","content":"first question"},{"role":"assistant","content":"first answer"},{"role":"user","content":"second question"}]}
JSON

# what the model got, one line per message: role and content
sent() {
    jq -r '.body.messages[] | "\(.role): \(.content)"' "$tmp/requests.log"
}

conv="system: the agent's prompt
system: be brief
user: first question
assistant: first answer
user: second question"

conf() {
    cat <<CONF
worker_processes 1;
pid $tmp/reagent.pid;
error_log $tmp/error.log info;
llm m { base_url http://127.0.0.1:$mport/v1; model mock-1; }
agent a { llm m; system_prompt "the agent's prompt"; }
$1
CONF
}

conf "" > "$tmp/mem.conf"
conf "store redis { server unix:$redis_sock; } queue { block 500ms; }" \
    > "$tmp/redis.conf"

for st in mem redis; do
    : > "$tmp/requests.log"
    "$R" -q -c "$tmp/$st.conf" batch -o "$tmp/$st.out" "$tmp/task.jsonl" \
        2> "$tmp/$st.err"
    rg_equal "batch, store $st: the task is done" \
        "$(jq -r .status "$tmp/$st.out")" done
    rg_equal "batch, store $st: the model got the whole conversation" \
        "$(sent)" "$conv"
done

# again with --resume: the kept result, no model call
: > "$tmp/requests.log"
"$R" -q -c "$tmp/redis.conf" batch --resume -o "$tmp/redis.out" \
    "$tmp/task.jsonl" 2> "$tmp/resume.err"
rg_equal "batch --resume keeps the finished conversation task" \
    "$(jq -r .status "$tmp/redis.out" | sort -u)" done
rg_equal "... and calls the model no more" \
    "$(wc -l < "$tmp/requests.log" | tr -d ' ')" 0

# the queue: the same task from reagent serve
rg_rcli flushall > /dev/null
: > "$tmp/requests.log"
rg_serve "$tmp/redis.conf" "$tmp/serve.out"
rg_wait_for "$tmp/error.log" "reading the queue" 1

timeout 30 "$R" -c "$tmp/redis.conf" submit --wait --no-progress \
    "$tmp/task.jsonl" > "$tmp/q.out" 2> "$tmp/q.err"
rg_equal "serve: the task is done" "$(jq -r .status "$tmp/q.out")" done
rg_equal "serve: the model got the whole conversation" "$(sent)" "$conv"

kill -TERM "$master" 2>/dev/null
wait "$master" 2>/dev/null

rg_done
