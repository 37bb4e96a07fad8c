#!/bin/sh
# test_cli_audit.sh: budgets and audit trails of tasks that delegate
# (src/agent/rg_child.c, rg_transcript.c, rg_replay.c, src/queue/
# rg_batch.c), against two mock models, one for the parent agent and one
# for the child it calls with run_agent, each sending its own response
# id header (rg_mock --request-id):
#   - a task's tokens and model calls count its child's, and the batch
#     summary's totals are the sums over the results;
#   - batch --transcripts DIR writes one transcript per task, the child
#     session's nested in its parent's, each model call with the
#     provider's id of its response (x-request-id, cf-ray);
#   - replay, the mocks gone: the child answered from its own recording;
#     a tool result or a request that differs from the recording, and a
#     call more or fewer than recorded, are divergences (exit 3, a
#     message naming the round and the call); a dangerous tool runs only
#     with --approve-all.
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Prints "ok N - what" or "not ok N - what" per check (tests/lib/
# rg_test_lib.sh) and exits 1 if any check failed. Needs python3
# (deploy/deps.sh installs it) to read and edit the JSON.

B=${B:-objs}
. tests/lib/rg_test_lib.sh


# rg_py WHAT SCRIPT ARGS...: a python3 check that prints why it failed
rg_py() {
    what=$1
    shift
    if python3 -c "$@" > "$tmp/py.out" 2>&1; then
        rg_ok "$what"
    else
        rg_fail "$what"
        sed 's/^/#   /' "$tmp/py.out"
    fi
}


rg_built
rg_need python3


# the parent delegates and computes; the child computes and answers
cat > "$tmp/parent.json" <<'EOF'
[{"message": {"tool_calls": [
    {"name": "run_agent", "arguments": {"agent": "helper",
                                        "input": "the subtask"}},
    {"name": "calc", "arguments": {"expression": "2+3"}}]}},
 {"message": {"content": "parent done"}}]
EOF

rg_mock_start parent --script "$tmp/parent.json" --request-id x-request-id
ppid=$started
pport=$port
rg_mock_start child --rounds 1 --request-id cf-ray
cpid=$started
cport=$port

if [ -z "$pport" ] || [ -z "$cport" ]; then
    rg_fail "the mock models start"
    cat "$tmp/mock.log"
    exit 1
fi

mkdir "$tmp/root"

cat > "$tmp/a.conf" <<EOF
load_module agent.so;
load_module calc.so;
load_module exec.so;
module exec { root $tmp/root; timeout 5s; }
llm p { base_url http://127.0.0.1:$pport/v1; model mock-1; }
llm c { base_url http://127.0.0.1:$cport/v1; model mock-1; }
default_agent a;
agent a { llm p; tools run_agent calc; agents helper; }
agent helper { llm c; tools calc; }
EOF

printf '%s\n' '{"id": "t1", "input": "task one"}' \
    '{"id": "t/2", "input": "task two"}' \
    '{"id": "t3", "input": "task three"}' > "$tmp/tasks.jsonl"


# budgets: the results count the child's calls, and add up

"$R" -c "$tmp/a.conf" batch --no-progress --transcripts "$tmp/tr" \
    -o "$tmp/res.jsonl" "$tmp/tasks.jsonl" 2> "$tmp/err"
rg_rc "batch --transcripts" $? 0

rg_py "each result counts its child's model call (2 + 2)" '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["status"] == "done", r
    assert r["model_calls"] == 4, r
' "$tmp/res.jsonl"

rg_py "the summary's tokens and model calls are the sums over the results" '
import json, re, sys
res = [json.loads(l) for l in open(sys.argv[1])]
err = open(sys.argv[2]).read()
calls = int(re.search(r"model calls (\d+)", err).group(1))
tokens = int(re.search(r", tokens (\d+)", err).group(1))
assert calls == sum(r["model_calls"] for r in res), (calls, res)
assert tokens == sum(r["tokens"] for r in res), (tokens, res)
' "$tmp/res.jsonl" "$tmp/err"


# transcripts: one per task, children nested, provider ids

rg_py "one transcript per task, named after its id" '
import os, sys
names = sorted(os.listdir(sys.argv[1]))
assert names == ["t1.json", "t3.json", "t_2-line2.json"], names
' "$tmp/tr"

rg_py "the child session is nested in its parent's transcript" '
import json, sys
t = json.load(open(sys.argv[1]))
kids = [e for e in t["events"] if e["type"] == "child"]
assert len(kids) == 1, kids
k = kids[0]
assert k["agent"] == "helper" and k["tool_call_id"], k
c = k["transcript"]
assert c["agent"] == "helper" and c["session"] == k["session"], c
assert c["session"] != t["session"]
calls = [e for e in c["events"] if e["type"] == "model_call"]
assert len(calls) == 2, calls
assert t["tokens"]["children"] == c["tokens"]["total"], (t["tokens"], c)
assert t["model_calls"] == 4
' "$tmp/tr/t1.json"

rg_py "each model call records the provider's response id" '
import json, sys
t = json.load(open(sys.argv[1]))
def calls(t):
    return [e for e in t["events"] if e["type"] == "model_call"]
child = [e for e in t["events"] if e["type"] == "child"][0]["transcript"]
for e in calls(t):
    assert e["provider_request_id"]["x-request-id"].startswith("req-mock-"), e
for e in calls(child):
    assert list(e["provider_request_id"]) == ["cf-ray"], e
    assert e["provider_request_id"]["cf-ray"].startswith("req-mock-"), e
' "$tmp/tr/t1.json"

rg_py "each tool call records the result the model saw" '
import json, sys
t = json.load(open(sys.argv[1]))
res = {e["name"]: e["result"] for e in t["events"] if e["type"] == "tool_call"}
assert res["calc"] == "5", res
assert res["run_agent"].startswith("Final answer"), res
' "$tmp/tr/t1.json"


# replay, offline: the mocks are gone

kill $ppid $cpid 2>/dev/null
wait $ppid $cpid 2>/dev/null

"$R" -c "$tmp/a.conf" replay "$tmp/tr/t1.json" > "$tmp/out" 2> "$tmp/err"
rg_rc "replay of a task that delegated" $? 0
rg_has "replay: the parent's recorded answer" "$tmp/out" "parent done"
rg_has "replay: it says the run matched" "$tmp/err" \
    "replay: the run matched the recording (2 model calls)"
rg_has "replay: the child was answered from its own recording" "$tmp/err" \
    "status: done (rounds 2, tool calls 2"

# rg_edit NAME SCRIPT: a copy of t1.json edited by a python3 snippet on t
rg_edit() {
    python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))
def calls(t):
    return [e for e in t['events'] if e['type'] == 'model_call']
def child(t):
    return [e for e in t['events'] if e['type'] == 'child'][0]['transcript']
$2
json.dump(t, open(sys.argv[2], 'w'))
" "$tmp/tr/t1.json" "$tmp/$1.json"
}

rg_replay() {
    "$R" -q -c "$tmp/a.conf" replay "$@" > "$tmp/out" 2> "$tmp/err"
}

rg_edit tool "
for e in t['events']:
    if e['type'] == 'tool_call' and e['name'] == 'calc':
        e['result'] = '6'
"
rg_replay "$tmp/tool.json"
rg_rc "a tool result that differs" $? 3
rg_has "... is a divergence naming the round and the call" "$tmp/err" \
    'round 1: the result of tool call "call_0_1_1" (calc) differs from the recording: now "5" (1 bytes), recorded "6" (1 bytes)'
rg_has "... on the line that says it diverged" "$tmp/err" \
    'replay: diverged from the recording: session "'
rg_has_not "... and the status is no longer done" "$tmp/err" "status: done"

rg_edit request "
calls(t)[1]['request']['messages'][0]['content'] = 'another task'
"
rg_replay "$tmp/request.json"
rg_rc "a model request that no longer matches" $? 3
rg_has "... names the call and the message" "$tmp/err" \
    'round 2, model call 2: the request no longer matches the recording: message 1 (user) differs'

rg_edit model "
calls(t)[0]['request']['model'] = 'another-model'
"
rg_replay "$tmp/model.json"
rg_rc "a first request made for another model" $? 3
rg_has "... names what differs" "$tmp/err" \
    'round 1, model call 1: the request no longer matches the recording: "model" differs from the recorded one (the configuration changed?)'

rg_edit fewer "
t['events'].remove(calls(t)[1])
"
rg_replay "$tmp/fewer.json"
rg_rc "a run that goes further than its recording" $? 3
rg_has "... says so" "$tmp/err" \
    'round 2: the run asks the model once more than the recording did (it recorded 1 model call)'

rg_edit more "
t['events'].append(dict(calls(t)[1]))
"
rg_replay "$tmp/more.json"
rg_rc "a run that ends before its recording" $? 3
rg_has "... says so" "$tmp/err" 'ended after 2 of its 3 recorded model calls'

rg_edit childtool "
for e in child(t)['events']:
    if e['type'] == 'tool_call':
        e['result'] = '15'
"
rg_replay "$tmp/childtool.json"
rg_rc "a child's tool result that differs" $? 3
rg_has "... is reported in the child, where it happened" "$tmp/err" \
    '(agent "helper"), round 1: the result of tool call "call_0_0_1" (calc) differs from the recording: now "14" (2 bytes), recorded "15" (2 bytes)'


# dangerous tools: recorded with the agent's approval, replayed only
# with --approve-all

cat > "$tmp/exec.json" <<EOF
[{"message": {"tool_calls": [{"name": "exec", "arguments":
    {"argv": ["touch", "$tmp/root/ran"]}}]}},
 {"message": {"content": "touched"}}]
EOF
rg_mock_start exec --script "$tmp/exec.json"
epid=$started

cat > "$tmp/e.conf" <<EOF
load_module exec.so;
module exec { root $tmp/root; timeout 5s; }
llm m { base_url http://127.0.0.1:$port/v1; model mock-1; }
agent e { llm m; tools exec; approve exec; }
EOF

"$R" -q -c "$tmp/e.conf" run -a e --transcript "$tmp/e.tr" "touch it" \
    > "$tmp/out" 2> "$tmp/err" < /dev/null
rg_rc "run with an approved exec, recorded" $? 0
kill $epid 2>/dev/null
wait $epid 2>/dev/null

if [ -e "$tmp/root/ran" ]; then
    rg_ok "the recorded run ran exec"
else
    rg_fail "the recorded run ran exec"
fi
rm -f "$tmp/root/ran"

"$R" -q -c "$tmp/e.conf" replay "$tmp/e.tr" > "$tmp/out" 2> "$tmp/err" \
    < /dev/null
rg_rc "replay without --approve-all" $? 3
rg_has "... refuses the dangerous tool and says how to allow it" "$tmp/err" \
    '(exec) was not run: it is a dangerous tool, and replay runs those only with --approve-all'
if [ -e "$tmp/root/ran" ]; then
    rg_fail "... and exec did not run"
else
    rg_ok "... and exec did not run"
fi

"$R" -q -c "$tmp/e.conf" replay --approve-all "$tmp/e.tr" > "$tmp/out" \
    2> "$tmp/err" < /dev/null
rg_rc "replay --approve-all" $? 0
if [ -e "$tmp/root/ran" ]; then
    rg_ok "... runs exec again"
else
    rg_fail "... runs exec again"
fi


rg_done
