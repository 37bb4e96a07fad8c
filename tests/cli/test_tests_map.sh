#!/bin/sh
# test_tests_map.sh: tests/README.md maps the features of reagent to their
# tests, and this keeps the map whole: every test file of tests/unit
# (test_*.c), tests/cli and tests/security (test_*.sh) and every fuzz
# target of tests/fuzz (fuzz_*.c) is named in it, so
# a new test without a row fails here; and every test file it names
# exists, so a test renamed or removed leaves no row behind. A name
# counts as a whole word: test_http.sh is not named by test_http_edges.sh.
# The check is tried first on broken copies of the tree (a file without
# a row, a row without a file), where it must fail.
#
# Run from the repository root by tests/run.sh (it needs no build).
# Prints "ok N - what" or "not ok N - what" per check and exits 1 if any
# check failed, naming each file without a row and each row without a
# file.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

# the test files of a tree, one name a line
test_files() {
    for f in "$1"/tests/unit/test_*.c "$1"/tests/cli/test_*.sh \
             "$1"/tests/security/test_*.sh "$1"/tests/fuzz/fuzz_*.c; do
        [ -e "$f" ] && basename "$f"
    done
}

# map_check TREE: the names missing from TREE/tests/README.md and the
# names it has of files that TREE lacks, one a line as "no row: NAME" or
# "no file: NAME"; nothing when the map is whole
map_check() {
    mc_readme=$1/tests/README.md
    if [ ! -f "$mc_readme" ]; then
        echo "no file: tests/README.md"
        return
    fi
    test_files "$1" > "$tmp/files"
    for mc_name in $(cat "$tmp/files"); do
        mc_re=$(printf '%s' "$mc_name" | sed 's/\./\\./g')
        grep -Eq "(^|[^A-Za-z0-9_])$mc_re([^A-Za-z0-9_]|$)" "$mc_readme" \
            || echo "no row: $mc_name"
    done
    grep -oE '(^|[^A-Za-z0-9_])(test|fuzz)_[a-z0-9_]+\.(c|sh)([^A-Za-z0-9_]|$)' \
        "$mc_readme" | grep -oE '(test|fuzz)_[a-z0-9_]+\.(c|sh)' | sort -u |
    while read -r mc_name; do
        grep -qx "$mc_name" "$tmp/files" || echo "no file: $mc_name"
    done
}


# the check itself, on broken copies: a tree of three tests and its map
mkdir -p "$tmp/t/tests/unit" "$tmp/t/tests/cli" "$tmp/t/tests/security" \
         "$tmp/t/tests/fuzz"
: > "$tmp/t/tests/unit/test_alpha.c"
: > "$tmp/t/tests/cli/test_beta.sh"
: > "$tmp/t/tests/security/test_gamma.sh"
cat > "$tmp/t/tests/README.md" <<'EOF'
| feature | tests |
|---|---|
| alpha | `test_alpha.c` |
| beta, gamma | `test_beta.sh`; `test_gamma.sh` |
EOF
rg_equal "the check passes a whole map" "$(map_check "$tmp/t")" ""

: > "$tmp/t/tests/cli/test_beta_more.sh"
rg_equal "the check names a shell test without a row (a longer name's \
row is not its row)" "$(map_check "$tmp/t")" "no row: test_beta_more.sh"
rm "$tmp/t/tests/cli/test_beta_more.sh"

: > "$tmp/t/tests/unit/test_delta.c"
rg_equal "the check names a unit test without a row" \
    "$(map_check "$tmp/t")" "no row: test_delta.c"
rm "$tmp/t/tests/unit/test_delta.c"

: > "$tmp/t/tests/fuzz/fuzz_epsilon.c"
rg_equal "the check names a fuzz target without a row" \
    "$(map_check "$tmp/t")" "no row: fuzz_epsilon.c"
rm "$tmp/t/tests/fuzz/fuzz_epsilon.c"

rm "$tmp/t/tests/security/test_gamma.sh"
rg_equal "the check names a row whose file is gone" \
    "$(map_check "$tmp/t")" "no file: test_gamma.sh"


# the real map
map_check . > "$tmp/real"
if [ -s "$tmp/real" ]; then
    rg_fail "tests/README.md maps every test file, and only those that exist"
    sed 's/^/#   /' "$tmp/real"
else
    rg_ok "tests/README.md maps every test file ($(test_files . | wc -l)), and only those that exist"
fi

rg_done
