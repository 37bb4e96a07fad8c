#!/bin/sh
# test_install.sh: `make install DESTDIR=…` installs what a user needs
# after it: reagent, the mock model as reagent-mock, the module ABI under
# include/reagent/ with a pkg-config file, the modules and the
# configuration. The plugin build command of src/tools/README.md (Writing
# a tool module), as written there, builds modules/example.c against the
# installed header; the installed reagent loads the module, and `run
# --mock` finds the installed mock beside it.
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Prints "ok N - what" or "not ok N - what" per check and exits 1 if any
# check failed. Everything it installs lives in one mktemp -d folder.

B=${B:-objs}

n=0
failed=0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rg-install-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP


rg_ok() {
    n=$((n + 1))
    echo "ok $n - $1"
}

rg_fail() {
    n=$((n + 1))
    failed=$((failed + 1))
    echo "not ok $n - $1"
}

# rg_check WHAT COMMAND...: the command succeeds; its output shown when not
rg_check() {
    check_what=$1
    shift
    if check_out=$("$@" 2>&1); then
        rg_ok "$check_what"
    else
        rg_fail "$check_what"
        printf '%s\n' "$check_out" | sed 's/^/#   /'
    fi
}

# rg_has WHAT FILE TEXT: FILE has a line containing TEXT
rg_has() {
    if grep -qF -- "$3" "$2"; then
        rg_ok "$1"
    else
        rg_fail "$1"
        echo "#   no line with: $3"
        sed 's/^/#   got: /' "$2"
    fi
}


# the prefix configure was given
prefix=$(sed -n 's/^PREFIX *= *//p' "$B/Makefile")
root=$tmp/root
D=$root$prefix

# a make of our own, not a part of the one that runs the tests
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
    make -s -f "$B/Makefile" install DESTDIR="$root" > "$tmp/install.out" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
    rg_ok "make install DESTDIR=… succeeds"
else
    rg_fail "make install DESTDIR=…: exit $rc"
    sed 's/^/#   /' "$tmp/install.out"
fi

for f in bin/reagent bin/reagent-mock include/reagent/rg_tool_module.h \
         lib/pkgconfig/reagent.pc lib/reagent/modules/calc.so \
         etc/reagent/reagent.conf
do
    if [ -f "$D/$f" ]; then
        rg_ok "installed: $f"
    else
        rg_fail "installed: $f"
    fi
done

# pkg-config as it reads the installed file; the sysroot puts its
# paths under DESTDIR
PKG_CONFIG_PATH=$D/lib/pkgconfig
PKG_CONFIG_SYSROOT_DIR=$root
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR

want=$(sed -n 's/^#define RG_VERSION *"\(.*\)"/\1/p' "$B/rg_auto_config.h")
got=$(pkg-config --modversion reagent 2>&1)
if [ "$got" = "$want" ]; then
    rg_ok "pkg-config --modversion reagent: $got"
else
    rg_fail "pkg-config --modversion reagent: got '$got', want '$want'"
fi

rg_check "pkg-config --cflags reagent names the installed header's folder" \
    test -f "$(pkg-config --cflags reagent | sed 's/^-I\([^ ]*\).*/\1/')/rg_tool_module.h"

# the guide's command, word for word, from a folder that holds modules/
DOC=src/tools/README.md
cmd=$(sed -n 's/^    \(cc -shared .*\)$/\1/p' "$DOC" | head -n 1)
if [ -z "$cmd" ]; then
    rg_fail "$DOC shows a plugin build command (cc -shared …)"
else
    mkdir -p "$tmp/work/modules"
    cp modules/example.c "$tmp/work/modules/"
    rg_check "$DOC's command builds the example module: $cmd" \
        sh -c "cd '$tmp/work' && $cmd"
fi

# ... and the form with the folder in the include
cat > "$tmp/work/prefixed.c" <<'C'
#include <reagent/rg_tool_module.h>
int rg_test_prefixed(void) { return RG_TOOL_ABI_VERSION > 0; }
C
rg_check "#include <reagent/rg_tool_module.h> builds with the pkg-config flags" \
    sh -c "cc -c $(pkg-config --cflags reagent) -o '$tmp/work/prefixed.o' '$tmp/work/prefixed.c'"

# the installed reagent loads what was built, with the installed modules
so=$(ls "$tmp"/work/*.so 2>/dev/null | head -n 1)
cat > "$tmp/greet.conf" <<CONF
load_module $so;
load_module $D/lib/reagent/modules/calc.so;
module example { greeting "Howdy"; }
llm m { base_url http://127.0.0.1:9/v1; model mock-1; }
agent a { tools greet calc; }
CONF

rg_check "the installed reagent loads the module built by $DOC's command" \
    "$D/bin/reagent" -t -c "$tmp/greet.conf"

"$D/bin/reagent" -c "$tmp/greet.conf" run --mock "greet someone" \
    > "$tmp/run.out" 2> "$tmp/run.err"
rc=$?
if [ $rc -eq 0 ]; then
    rg_ok "the installed reagent: run --mock ends done"
else
    rg_fail "the installed reagent: run --mock exit $rc"
    sed 's/^/#   /' "$tmp/run.err"
fi
rg_has "run --mock uses the installed reagent-mock" "$tmp/run.err" \
    "$D/bin/reagent-mock"
rg_has "the module's tool answered through the loop" "$tmp/run.out" "Howdy"


echo "# $n checks, $failed failed"
[ $failed -eq 0 ]
