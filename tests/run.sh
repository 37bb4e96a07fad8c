#!/bin/sh
# run.sh: the test runner behind `make check`. Runs every test binary
# given (cmocka unit and integration tests), then the shell tests in
# tests/cli/ and tests/security/, and ends with one line "N passed, N
# failed".
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

passed=0
failed=0
failures=

for t in "$@" tests/cli/*.sh tests/security/*.sh; do
    [ -e "$t" ] || continue
    name=$(basename "$t")
    echo "== $name"
    case "$t" in
        *.sh) sh "$t" ;;
        *)    "$t" ;;
    esac
    rc=$?
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures="$failures $name"
        echo "== $name FAILED (exit $rc)"
    fi
done

echo
[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
