#!/bin/sh
# run.sh: the test runner behind `make check`. Runs every test binary
# given (cmocka unit and integration tests), then the shell tests in
# tests/cli/ and tests/security/ (RG_SHELL_TESTS overrides that list),
# and ends with one line "N passed, N failed, N skipped".
#
# passed and failed count the tests run; skipped counts what they did
# not run: a shell test whose closing line starts "SKIPPED:" (it is not
# counted as passed), each check a shell test marked "# skip" or
# "# SKIP", and each cmocka case skipped ("[  SKIPPED ] N test(s)"). The
# line before the closing one names each test that skipped something.
# Run from the repository root; B names the build folder.

B=${B:-objs}
export RG_BUILD_DIR="$B"
export RG_FIXTURES_DIR=${RG_FIXTURES_DIR:-../shared/fixtures/providers}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0}
# a race report fails the test that shows it
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$(pwd)/tests/tsan.supp:print_suppressions=0}
# the modules and plugins of this build, whatever its folder
export RG_MODULES_DIR=${RG_MODULES_DIR:-$B/modules}
export RG_TEST_PLUGINS_DIR=${RG_TEST_PLUGINS_DIR:-$B/tests/plugins}

shell_tests=${RG_SHELL_TESTS:-tests/cli/*.sh tests/security/*.sh}

passed=0
failed=0
skipped=0
failures=
skips=

out=$(mktemp "${TMPDIR:-/tmp}/rg-run-XXXXXX") || exit 1
trap 'rm -f "$out" "$out.rc"' EXIT

# shellcheck disable=SC2086
for t in "$@" $shell_tests; do
    [ -e "$t" ] || continue
    name=$(basename "$t")
    echo "== $name"

    # the output is shown as it comes and kept, to read what it skipped
    {
        case "$t" in
            *.sh) sh "$t" ;;
            *)    "$t" ;;
        esac
        echo $? > "$out.rc"
    } 2>&1 | tee "$out"
    rc=$(cat "$out.rc" 2>/dev/null)
    rc=${rc:-1}

    last=$(grep -v '^[[:space:]]*$' "$out" | tail -n 1)
    cases=$(sed -n 's/^\[  SKIPPED \] \([0-9][0-9]*\) test(s), listed below:.*/\1/p' "$out" | awk '{ s += $1 } END { print s + 0 }')
    checks=$(grep -Ec '^ok [0-9]+ .*# (skip|SKIP)' "$out")

    if [ "$rc" -eq 0 ] && [ "${last#SKIPPED:}" != "$last" ]; then
        skipped=$((skipped + 1))
        skips="$skips
  $name: ${last#SKIPPED: }"
        continue
    fi

    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures="$failures $name"
        echo "== $name FAILED (exit $rc)"
    fi

    if [ "$cases" -gt 0 ]; then
        skipped=$((skipped + cases))
        why=$(grep -m 1 ': skipped$' "$out" | sed 's/: skipped$//')
        skips="$skips
  $name: $cases cmocka cases skipped${why:+ ($why)}"
    fi

    if [ "$checks" -gt 0 ]; then
        skipped=$((skipped + checks))
        skips="$skips
  $name: $checks checks skipped"
    fi
done

echo
[ -n "$skips" ] && echo "skipped:$skips"
[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
