#!/bin/sh
# test_cli_mock.sh: the first run after set-up, `reagent run --mock`
# (src/agent/rg_run_mock.c) and `make run`: the bundled mock model is
# started for the run on a free loopback port and answers every llm of
# the shipped configuration (whose base_url names a port nothing listens
# on); the run says that the answers are canned; the mock is gone when
# the run ends, and also when reagent is killed; batch takes --mock too;
# without a mock beside the binary the error says what to do.
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Prints "ok N - what" or "not ok N - what" per check (tests/lib/
# rg_test_lib.sh) and exits 1 if any check failed.

B=${B:-objs}
. tests/lib/rg_test_lib.sh


# rg_gone WHAT PID: the process ends within 10 s
rg_gone() {
    if rg_wait_gone "$2"; then
        rg_ok "$1"
    else
        rg_fail "$1 (pid $2 still runs)"
    fi
}


# the shipped configuration points at 127.0.0.1:8088; --mock must not
# depend on what listens there
"$R" -c conf/reagent.conf run --mock "What is 17 * 23 + 4?" \
    > "$tmp/out" 2> "$tmp/err"
rc=$?
rg_rc "run --mock on the shipped configuration" $rc 0
rg_has "run --mock: the mock's answer on stdout" "$tmp/out" \
    "Final answer after 1 rounds: 14"
rg_has "run --mock: status done" "$tmp/err" "status: done (rounds 2, tool calls 1"
rg_has "run --mock: it says the answers are canned" "$tmp/err" \
    "its answers are canned, not computed"

port=$(sed -n 's|.*answers every llm on http://127.0.0.1:\([0-9]*\)/v1.*|\1|p' "$tmp/err")
if [ -n "$port" ] && [ "$port" != 8088 ]; then
    rg_ok "run --mock: a port of its own ($port)"
else
    rg_fail "run --mock: a port of its own (got '$port')"
fi

if command -v curl >/dev/null 2>&1; then
    if curl -s -m 5 "http://127.0.0.1:$port/stats" > /dev/null 2>&1; then
        rg_fail "run --mock: the mock is gone after the run"
    else
        rg_ok "run --mock: the mock is gone after the run"
    fi
else
    n=$((n + 1))
    echo "ok $n - run --mock: the mock is gone after the run # skip no curl"
fi

# make run TASK=…
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
    make -s -f "$B/Makefile" run TASK="What is 2 + 2?" \
    > "$tmp/make.out" 2> "$tmp/make.err"
rc=$?
rg_rc "make run TASK=…" $rc 0
rg_has "make run: the answer" "$tmp/make.out" "Final answer after 1 rounds: 14"
rg_has "make run: the status" "$tmp/make.err" "status: done"

# README's first task, word for word (in this build folder)
cmd=$(sed -n 's/^    \(make run TASK=.*\)$/\1/p' README.md | head -n 1)
if [ -z "$cmd" ]; then
    rg_fail "README.md shows the first task (make run TASK=…)"
else
    args=${cmd#make run }
    eval "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -f \"\$B/Makefile\" run $args" \
        > "$tmp/readme.out" 2> "$tmp/readme.err"
    rc=$?
    rg_rc "README's first task: $cmd" $rc 0
    rg_has "README's first task: an answer" "$tmp/readme.out" "Final answer"
    rg_has "README's first task: status done" "$tmp/readme.err" "status: done"
fi
grep -q 'run --mock' README.md && grep -q 'reagent-mock' README.md
rg_rc "README names run --mock and the installed reagent-mock" $? 0

# batch --mock, reading a FIFO that stays open; then reagent is killed
# hard: the mock goes with it
mkfifo "$tmp/fifo"
"$R" -c conf/reagent.conf batch --mock --no-progress "$tmp/fifo" \
    > "$tmp/bout" 2> "$tmp/berr" &
bpid=$!
pids="$pids $bpid"
exec 7> "$tmp/fifo"
echo '{"id":"t1","input":"hello"}' >&7

i=0
while ! grep -q '"id":"t1"' "$tmp/bout" 2>/dev/null && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done
rg_has "batch --mock: a task answered by the mock" "$tmp/bout" \
    '"id":"t1","status":"done"'

mock=$(ps -o pid= --ppid "$bpid" 2>/dev/null | tr -d ' ' | head -n 1)
if [ -n "$mock" ]; then
    rg_ok "batch --mock: the mock is a child of reagent ($mock)"
    kill -9 "$bpid"
    wait "$bpid" 2>/dev/null
    bpid=
    rg_gone "reagent killed with SIGKILL: its mock goes too" "$mock"
else
    rg_fail "batch --mock: the mock is a child of reagent"
fi
exec 7>&-

# without --mock, a model that is not up: the status, and a hint at
# what works without one (port 9, discard, has no listener here)
cat > "$tmp/down.conf" <<CONF
load_module calc.so;
llm m { base_url http://127.0.0.1:9/v1; model mock-1; max_retries 0; }
agent a { tools calc; }
CONF
"$R" -c "$tmp/down.conf" run "hi" > "$tmp/out" 2> "$tmp/err"
rc=$?
rg_rc "run with no model up" $rc 2
rg_has "... the status says the model cannot be reached" "$tmp/err" \
    "status: failed: model call failed (connect_error): cannot reach the model"
rg_has "... and the hint names run --mock" "$tmp/err" \
    'hint: nothing answers at the llm'"'"'s base_url; "reagent run --mock"'

# no mock beside the binary (nor installed): the error says what to do
prefix=$(sed -n 's/^PREFIX *= *//p' "$B/Makefile")
if [ ! -e "$prefix/bin/reagent-mock" ]; then
    mkdir "$tmp/alone"
    cp "$R" "$tmp/alone/reagent"
    ln -s "$(cd "$B" && pwd)/modules" "$tmp/alone/modules"
    "$tmp/alone/reagent" -c conf/reagent.conf run --mock "hi" \
        > "$tmp/out" 2> "$tmp/err"
    rc=$?
    rg_rc "run --mock without a mock model" $rc 1
    rg_has "... the error names where it looked and how to get one" \
        "$tmp/err" "make builds it as rg_mock, make install installs it as reagent-mock"
else
    n=$((n + 1))
    echo "ok $n - run --mock without a mock model # skip one is installed in $prefix"
fi

# the demo: it says what it ran, keeps its files, says the answers are
# canned, and the command it prints to run it again works
DEMO_TASKS=4 DEMO_DIR=$tmp/demo B=$B sh tests/demo.sh > "$tmp/demo.out" 2>&1
rc=$?
rg_rc "the demo" $rc 0
rg_has "the demo prints the command it ran" "$tmp/demo.out" \
    "demo: running $B/reagent -c $tmp/demo/demo.conf batch --concurrency 240 -o $tmp/demo/results.jsonl $tmp/demo/tasks.jsonl"
c=$(grep -c '"status":"done"' "$tmp/demo/results.jsonl" 2>/dev/null)
if [ "${c:-0}" -eq 4 ]; then
    rg_ok "the demo's results stay where it said (4 done)"
else
    rg_fail "the demo's results stay where it said: ${c:-no file}"
fi
rg_has "the demo says the mock's answers are canned" "$tmp/demo.out" \
    "the mock model's answers are canned, not computed"
again=$(sed -n 's/^demo:   \(.* batch --mock .*\)$/\1/p' "$tmp/demo.out")
if [ -n "$again" ] && sh -c "$again" > /dev/null 2>&1 \
   && [ "$(grep -c '"status":"done"' "$tmp/demo/again.jsonl")" -eq 4 ]
then
    rg_ok "the demo's command to run it again works: $again"
else
    rg_fail "the demo's command to run it again works: '$again'"
fi

# replay takes no --mock: its answers come from the transcript
"$R" -c conf/reagent.conf replay --mock x.json > "$tmp/out" 2> "$tmp/err"
rc=$?
rg_rc "replay --mock is refused" $rc 1


rg_done
