#!/bin/sh
# test_layering.sh: the folders of src/ include only the headers of the
# folders beneath them (src/README), and modules/ only the plugin ABI
# (src/tools/rg_tool_module.h) and headers of their own. Reads every
# #include of src/ and modules/, quoted or angle, and checks it against
# the table below; a header is found by its file name among src/*/,
# whatever path the include writes, and an include that climbs with
# "../" is refused outright. Prints "ok N - what" or "not ok N - what"
# per folder and exits 1 when any include breaks the table.
#
# Run from the repository root by tests/run.sh (or by hand: sh
# tests/cli/test_layering.sh [SRC_DIR]); it needs no build. The table
# is the one of SRC_DIR/README, read from it (lines "    llm    -> core,
# event, store (shared limits)", remarks in parentheses). Without
# SRC_DIR it also tests itself: it breaks copies of src/ and modules/ in
# a temporary folder, one way at a time, and each copy must fail.

SRC=${1:-src}
MODULES=${MODULES_DIR:-modules}

# folder: the folders it may include from (itself always), from the
# table of src/README; UNKNOWN when the table has no row for it
rg_allowed() {
    row=$(sed -n "s/^    $1 *-> \(.*\)/\1/p" "$SRC/README" 2>/dev/null)

    if [ -z "$row" ]; then
        echo "UNKNOWN"
        return
    fi

    echo "$row" | sed -e 's/([^)]*)//g' -e 's/nothing of src\///' \
                      -e 's/,/ /g' -e 's/  */ /g' -e 's/^ //' -e 's/ $//'
}

n=0
failed=0

rg_ok() {
    n=$((n + 1))
    echo "ok $n - $1"
}

rg_fail() {
    n=$((n + 1))
    failed=$((failed + 1))
    echo "not ok $n - $1"
}

# the folder of src/ that holds header $1, or nothing
rg_home() {
    for d in "$SRC"/*/; do
        if [ -f "$d$1" ]; then
            basename "$d"
            return
        fi
    done
}

# the file names of the headers a file includes, one per line, without
# the path the include writes ("agent/rg_session.h" gives rg_session.h)
rg_includes() {
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\([^>"]*\/\)\{0,1\}\([^>"/]*\)[>"].*/\2/p' "$1"
}

# the includes of a file that climb out of its folder with "../"
rg_climbs() {
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"][^>"]*\.\./' "$1"
}

if [ ! -d "$SRC/core" ]; then
    echo "not ok 1 - $SRC/core exists (run from the repository root)"
    exit 1
fi

for dir in "$SRC"/*/; do
    part=$(basename "$dir")
    allowed=$(rg_allowed "$part")
    bad=

    if [ "$allowed" = UNKNOWN ]; then
        rg_fail "src/$part is a folder of the table in src/README"
        continue
    fi

    for f in "$dir"*.c "$dir"*.h; do
        [ -e "$f" ] || continue

        for c in $(rg_climbs "$f" | cut -d: -f1); do
            bad="$bad
#   $f:$c includes through \"../\""
        done

        for h in $(rg_includes "$f"); do
            home=$(rg_home "$h")

            # a header of the build (rg_auto_config.h) is nobody's
            [ -z "$home" ] && continue
            [ "$home" = "$part" ] && continue

            case " $allowed " in
                *" $home "*) ;;
                *) bad="$bad
#   $f includes $h ($home)" ;;
            esac
        done
    done

    if [ -z "$bad" ]; then
        rg_ok "src/$part includes only ${allowed:-nothing of src/ but itself}"
    else
        rg_fail "src/$part includes only ${allowed:-nothing of src/ but itself}"
        echo "$bad" | sed '/^$/d'
    fi
done

# modules: the ABI header and their own
bad=
for f in $(find "$MODULES" -name '*.[ch]' 2>/dev/null); do
    for c in $(rg_climbs "$f" | cut -d: -f1); do
        bad="$bad
#   $f:$c includes through \"../\""
    done

    for h in $(rg_includes "$f"); do
        [ "$h" = rg_tool_module.h ] && continue
        [ -f "$(dirname "$f")/$h" ] && continue
        # a system header, unless it is named like one of the host's
        case "$h" in
            rg_*) ;;
            *) [ -z "$(rg_home "$h")" ] && continue ;;
        esac
        bad="$bad
#   $f includes $h"
    done
done

if [ -z "$bad" ]; then
    rg_ok "modules include only rg_tool_module.h and their own headers"
else
    rg_fail "modules include only rg_tool_module.h and their own headers"
    echo "$bad" | sed '/^$/d'
fi

# the self-test: each way of breaking the table must make a copy fail
# (WHAT FILE LINE: LINE added to FILE, which must exist unless FILE
# begins with "+", of a fresh copy; the copy's src/agent also holds a
# header not named rg_*.h)
if [ $# -eq 0 ]; then
    self=$(mktemp -d "${TMPDIR:-/tmp}/rg-layering-XXXXXX") || exit 1
    trap 'rm -rf "$self"' EXIT

    rg_broken() {
        rm -rf "$self/src" "$self/modules"
        cp -R "$SRC" "$self/src" && cp -R "$MODULES" "$self/modules" || return 2
        : > "$self/src/agent/session_local.h"
        f=${1#+}
        if [ "$f" != "$1" ]; then
            mkdir -p "$(dirname "$self/$f")" || return 2
        elif [ -n "$f" ] && [ ! -f "$self/$f" ]; then
            return 2
        fi
        [ -n "$f" ] && printf '%s\n' "$2" >> "$self/$f"
        MODULES_DIR="$self/modules" sh "$0" "$self/src" > "$self/out" 2>&1
    }

    if rg_broken "" ""; then
        rg_ok "self-test: an unchanged copy passes"
    else
        rg_fail "self-test: an unchanged copy passes"
        sed 's/^/#   /' "$self/out"
    fi

    while read -r what file line; do
        rg_broken "$file" "$line"
        rc=$?
        if [ $rc -eq 1 ] && grep -q '^not ok' "$self/out"; then
            rg_ok "self-test: fails on $what"
        else
            rg_fail "self-test: fails on $what (exit $rc)"
        fi
    done <<'EOF_CASES'
core<rg_session.h> src/core/rg_cycle.c #include <rg_session.h>
a-folder-without-a-row-in-src/README +src/part/rg_part_new.c #include <rg_core.h>
core"../agent/rg_session.h" src/core/rg_cycle.c #include "../agent/rg_session.h"
core"agent/rg_session.h" src/core/rg_cycle.c #include "agent/rg_session.h"
core"../core/rg_cycle.h" src/core/rg_log.c #include "../core/rg_cycle.h"
core"session_local.h" src/core/rg_cycle.c #include "session_local.h"
store<rg_agent.h> src/store/rg_store_memory.c #include <rg_agent.h>
module<rg_session.h> modules/time.c #include <rg_session.h>
module"../src/tools/rg_tools.h" modules/time.c #include "../src/tools/rg_tools.h"
EOF_CASES
fi

echo "# $n checks, $failed failed"
[ $failed -eq 0 ]
