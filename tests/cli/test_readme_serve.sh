#!/bin/sh
# test_readme_serve.sh: README.md's quick start of `reagent serve` runs.
# README shows conf/serve-local.conf after its opening comment, word for
# word, and the commands of its serve block; this test checks that both
# are what README says, then does what the block does with that file, on
# free ports instead of 6379, 8088 and 8080 (and the pid file in its own
# folder): a redis-server, the mock model, serve in the background, a
# task through `submit --wait -`, one through POST /v1/tasks and its GET,
# then `-s quit`, after which the master is gone. The block ends within
# README's first 60 lines.
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Prints "ok N - what" or "not ok N - what" per check and exits 1 if any
# check failed.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

C=conf/serve-local.conf

# --- README shows the file and the commands ---------------------------------

# the file after its opening comment (up to the first blank line), as
# README indents it
sed '1,/^$/d' "$C" | sed -e 's/^./    &/' > "$tmp/conf.body"
# README's block: from the line after "`conf/serve-local.conf`, after its
# opening comment:" and its blank line, up to the next heading
awk '/^`conf\/serve-local.conf`, after its opening comment:$/ { seen = 1; next }
     seen && /^#/ { exit }
     seen { print }' README.md | sed '1{/^$/d}' > "$tmp/readme.conf"
# trailing blank lines aside
sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' "$tmp/readme.conf" > "$tmp/r1"
sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' "$tmp/conf.body" > "$tmp/c1"
if [ -s "$tmp/r1" ] && cmp -s "$tmp/r1" "$tmp/c1"; then
    rg_ok "README shows $C as it is"
else
    rg_fail "README shows $C as it is"
    diff -u "$tmp/r1" "$tmp/c1" | sed 's/^/#   /' | head -n 40
fi

# the commands README's serve block gives, each on a line of its own
for cmd in \
    'redis-server --daemonize yes --dir /tmp' \
    'rg_mock --port 8088 &' \
    'reagent -c conf/serve-local.conf serve &' \
    "echo '{\"id\":\"t1\",\"input\":\"What is 17 * 23 + 4?\"}' |" \
    'reagent -c conf/serve-local.conf submit --wait -' \
    "curl -s localhost:8080/v1/tasks -d '{\"id\":\"t2\",\"input\":\"What is 2 + 2?\"}'" \
    'curl -s localhost:8080/v1/tasks/t2' \
    'reagent -c conf/serve-local.conf -s quit'
do
    if grep -qxF "    $cmd" README.md \
       || grep -qF "    $cmd  " README.md \
       || grep -qxF "        $cmd" README.md; then
        rg_ok "README's serve block: $cmd"
    else
        rg_fail "README's serve block: $cmd"
    fi
done

# a person reads from README's first line to a running serve, its task
# answered and stopped, in under 60 lines (the measure)
last=$(grep -n '^    kill %1 ' README.md | head -n 1 | cut -d: -f1)
rg_check "README: from its first line to a served task and back in under 60 lines (${last:-none})" \
    test "${last:-999}" -lt 60

# what the file names: the ports the block starts things on
rg_expect "$C: redis at 127.0.0.1:6379" "$C" \
    '^ +server +127\.0\.0\.1:6379;'
rg_expect "$C: the mock at 127.0.0.1:8088" "$C" \
    '^ +base_url +http://127\.0\.0\.1:8088/v1;'
rg_expect "$C: the API on 127.0.0.1:8080" "$C" '^ +listen +127\.0\.0\.1:8080;'

# --- and it runs -------------------------------------------------------------

# rg_cannot_run WHY: what README shows was checked; the rest cannot run
# here: skipped, unless a check above failed
rg_cannot_run() {
    if [ $failed -gt 0 ]; then
        echo "# the rest not run: $1"
        rg_done
        exit 1
    fi
    rg_skip "$1 (README and $C checked: $n checks)"
}

[ -x "$R" ] || rg_cannot_run "no reagent binary in $B"
command -v redis-server >/dev/null 2>&1 || rg_cannot_run "no redis-server"
command -v curl >/dev/null 2>&1 || rg_cannot_run "no curl"
command -v jq >/dev/null 2>&1 || rg_cannot_run "no jq"

rport=$(rg_free_port)
hport=$(rg_free_port)
rg_redis_tcp "$rport" "$tmp/redis"
rg_mock m
sed -e "s|127\.0\.0\.1:6379|127.0.0.1:$rport|" \
    -e "s|127\.0\.0\.1:8088|127.0.0.1:$port|" \
    -e "s|127\.0\.0\.1:8080|127.0.0.1:$hport|" \
    -e "s|/tmp/reagent-serve-local\.pid|$tmp/serve.pid|" "$C" > "$tmp/serve.conf"
# (the modules are found as the shipped file finds them: by their base
# name in the modules folder beside the binary)

"$R" -t -c "$tmp/serve.conf" > "$tmp/t.out" 2>&1
rg_rc_t=$?
rg_equal "reagent -t passes $C" "$rg_rc_t" 0 || sed 's/^/#   /' "$tmp/t.out"

"$R" -c "$tmp/serve.conf" serve > "$tmp/serve.log" 2>&1 &
spid=$!
pids="$pids $spid"
if rg_wait_for "$tmp/serve.log" 'reading the queue' 2 \
   && rg_wait_for "$tmp/serve.log" 'answers on' 2; then
    rg_ok "serve: 2 workers read the queue and answer the API"
else
    rg_fail "serve: 2 workers read the queue and answer the API"
    sed 's/^/#   /' "$tmp/serve.log" | tail -n 20
fi

echo '{"id":"t1","input":"What is 17 * 23 + 4?"}' |
    "$R" -c "$tmp/serve.conf" submit --wait - > "$tmp/submit.out" 2> "$tmp/submit.err"
rc=$?
rg_equal "submit --wait -: exit code 0" "$rc" 0
rg_expect "submit --wait -: t1's result, done" "$tmp/submit.out" \
    '^\{"id":"t1","status":"done"'

curl -s "127.0.0.1:$hport/v1/tasks" \
    -d '{"id":"t2","input":"What is 2 + 2?"}' > "$tmp/post.out"
rg_expect "POST /v1/tasks: t2 queued" "$tmp/post.out" '"status":"queued"'
U=http://127.0.0.1:$hport
if rg_wait_task t2 done; then
    rg_ok "GET /v1/tasks/t2: done"
else
    rg_fail "GET /v1/tasks/t2: done"
    sed 's/^/#   /' "$tmp/body"
fi

"$R" -c "$tmp/serve.conf" -s quit > "$tmp/quit.out" 2>&1
rg_equal "-s quit: exit code 0" "$?" 0
i=0
while kill -0 "$spid" 2>/dev/null && [ $i -lt 300 ]; do
    sleep 0.05
    i=$((i + 1))
done
if kill -0 "$spid" 2>/dev/null; then
    rg_fail "-s quit: the master exits"
else
    wait "$spid"
    rg_equal "-s quit: the master exits, code 0" "$?" 0
fi

rg_done
