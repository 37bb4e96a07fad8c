#!/bin/sh
# test_runner.sh: the closing line of `make check` (tests/run.sh) counts
# what passed, failed and was skipped: a shell test whose closing line
# says SKIPPED is skipped, not passed; checks marked "# skip" and cmocka
# cases skipped are counted, and the tests that skipped are named. Runs
# tests/run.sh on small fake tests of its own (RG_SHELL_TESTS), never on
# the real ones.
#
# Run from the repository root by tests/run.sh. Prints "ok N - what" or
# "not ok N - what" per check and exits 1 if any check failed.

# run by the runner under test: not again
if [ -n "$RG_RUNNER_TEST" ]; then
    echo "SKIPPED: test_runner.sh: it runs only at the top level"
    exit 0
fi
RG_RUNNER_TEST=1
export RG_RUNNER_TEST

B=${B:-objs}
. tests/lib/rg_test_lib.sh


cat > "$tmp/t_pass.sh" <<'T'
echo "ok 1 - fine"
echo "# 1 checks, 0 failed"
T

cat > "$tmp/t_whole.sh" <<'T'
echo "SKIPPED: widgets: no widget on this machine"
exit 0
T

cat > "$tmp/t_partial.sh" <<'T'
echo "ok 1 - fine"
echo "ok 2 - the other thing # skip no curl"
echo "# 2 checks, 0 failed"
T

cat > "$tmp/t_fail.sh" <<'T'
echo "not ok 1 - broken"
echo "# 1 checks, 1 failed"
exit 1
T

# what a cmocka binary prints when cases skip (its summary on stderr)
cat > "$tmp/t_cmocka" <<'T'
#!/bin/sh
echo "[==========] Running 5 test(s)."
echo "[  SKIPPED ] a.json"
echo "[==========] 5 test(s) run."
echo "[  PASSED  ] 2 test(s)." >&2
echo "[  SKIPPED ] 3 test(s), listed below:" >&2
echo "[  SKIPPED ] a.json" >&2
echo " 3 SKIPPED TEST(S)" >&2
exit 0
T
chmod +x "$tmp/t_cmocka"

RG_SHELL_TESTS="$tmp/t_pass.sh $tmp/t_whole.sh $tmp/t_partial.sh $tmp/t_fail.sh" \
    sh tests/run.sh "$tmp/t_cmocka" > "$tmp/out" 2>&1
rc=$?

last=$(tail -n 1 "$tmp/out")
if [ "$last" = "3 passed, 1 failed, 5 skipped" ]; then
    rg_ok "the closing line: 3 passed, 1 failed, 5 skipped"
else
    rg_fail "the closing line: got \"$last\""
fi

if [ $rc -ne 0 ]; then
    rg_ok "a failed test fails the run (exit $rc)"
else
    rg_fail "a failed test fails the run: exit 0"
fi

rg_has "a whole skip is named with its reason" "$tmp/out" \
    "t_whole.sh: widgets: no widget on this machine"
rg_has "skipped checks are named" "$tmp/out" "t_partial.sh: 1 checks skipped"
rg_has "skipped cmocka cases are named" "$tmp/out" \
    "t_cmocka: 3 cmocka cases skipped"
rg_has "the failure is named" "$tmp/out" "failed: t_fail.sh"

# nothing skipped: the line still says so
RG_SHELL_TESTS="$tmp/t_pass.sh" sh tests/run.sh > "$tmp/out2" 2>&1
rc=$?
last=$(tail -n 1 "$tmp/out2")
if [ "$last" = "1 passed, 0 failed, 0 skipped" ] && [ $rc -eq 0 ]; then
    rg_ok "all passed: 1 passed, 0 failed, 0 skipped, exit 0"
else
    rg_fail "all passed: got \"$last\", exit $rc"
fi


rg_done
