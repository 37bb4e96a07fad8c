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
# event, store (shared limits)", remarks in parentheses), but it may not
# relax the floors: core includes nothing of src/, and llm, event and
# store no agent header, whatever the table says. Without
# SRC_DIR it also tests itself: it breaks copies of src/ and modules/ in
# a temporary folder, one way at a time, and each copy must fail.

SRC=${1:-src}
MODULES=${MODULES_DIR:-modules}

# folder: the folders it may include from (itself always), from the
# table of src/README; UNKNOWN when the table has no row for it
rg_allowed() {
    row=$(sed -n "s/^[[:space:]]*$1[[:space:]]*-> \(.*\)/\1/p" \
              "$SRC/README" 2>/dev/null | tr '\n' ',')

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

# read once, then one awk over them (not a process per include): every
# header of src/ with its folder ("rg_session.h agent"), every folder
# with what it may include ("store core event metrics"), and every
# include of src/ ("FILE:LINE:#include <...>")
work=$(mktemp -d "${TMPDIR:-/tmp}/rg-layering-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

ls -d "$SRC"/*/*.h 2>/dev/null | awk -F/ '{ print $NF, $(NF - 1) }' \
    > "$work/homes"
for dir in "$SRC"/*/; do
    part=$(basename "$dir")
    echo "$part $(rg_allowed "$part")"
done > "$work/allowed"
grep -n '^[[:space:]]*#[[:space:]]*include' "$SRC"/*/*.c "$SRC"/*/*.h \
    /dev/null > "$work/includes"

# "PART<TAB>#   what is wrong", per include that breaks the table
awk -v homes="$work/homes" -v allowed="$work/allowed" '
    BEGIN {
        while ((getline l < homes) > 0) { split(l, a, " "); home[a[1]] = a[2] }
        while ((getline l < allowed) > 0) {
            n = split(l, a, " ")
            for (i = 2; i <= n; i++) ok[a[1] " " a[i]] = 1
        }
    }
    {
        i = index($0, ":"); f = substr($0, 1, i - 1); r = substr($0, i + 1)
        i = index(r, ":"); line = substr(r, 1, i - 1); text = substr(r, i + 1)
        n = split(f, p, "/"); part = p[n - 1]
        if (!match(text, /[<"][^>"]*[>"]/)) next
        path = substr(text, RSTART + 1, RLENGTH - 2)
        if (path ~ /\.\.\//) {
            printf "%s\t#   %s:%s includes through \"../\"\n", part, f, line
        }
        n = split(path, q, "/"); h = q[n]
        # a header of the build (rg_auto_config.h) belongs to no part
        if (!(h in home) || home[h] == part || ((part " " home[h]) in ok)) next
        printf "%s\t#   %s includes %s (%s)\n", part, f, h, home[h]
    }' "$work/includes" > "$work/bad"

for dir in "$SRC"/*/; do
    part=$(basename "$dir")
    allowed=$(rg_allowed "$part")

    if [ "$allowed" = UNKNOWN ]; then
        rg_fail "src/$part is a folder of the table in src/README"
        continue
    fi

    bad=$(awk -F '\t' -v p="$part" '$1 == p { print $2 }' "$work/bad")

    if [ -z "$bad" ]; then
        rg_ok "src/$part includes only ${allowed:-nothing of src/ but itself}"
    else
        rg_fail "src/$part includes only ${allowed:-nothing of src/ but itself}"
        echo "$bad"
    fi
done

# what the table itself may not relax: core includes nothing of src/,
# and llm, event and store know no sessions (agent)
bad=
allowed=$(rg_allowed core)
if [ -n "$allowed" ]; then
    bad="$bad
#   src/README lets core include $allowed"
fi
for part in llm event store; do
    case " $(rg_allowed "$part") " in
        *" agent "*) bad="$bad
#   src/README lets $part include agent" ;;
    esac
done

what="the table keeps core the floor, and agent out of llm, event, store"
if [ -z "$bad" ]; then
    rg_ok "$what"
else
    rg_fail "$what"
    echo "$bad" | sed '/^$/d'
fi

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
    self=$work/self
    mkdir "$self" || exit 1

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
a-row-of-core-that-allows-agent src/README core -> agent
a-row-of-event-that-allows-agent src/README event -> core, agent
module"../src/tools/rg_tools.h" modules/time.c #include "../src/tools/rg_tools.h"
EOF_CASES
fi

echo "# $n checks, $failed failed"
[ $failed -eq 0 ]
