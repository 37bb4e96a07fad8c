#!/bin/sh
# test_layering.sh: the folders of src/ include only the headers of the
# folders beneath them (src/README), and modules/ only the plugin ABI
# (src/tools/rg_tool_module.h) and headers of their own. Reads every
# #include of src/ and modules/ and checks it against the table below;
# a header is found by its name among src/*/. Prints "ok N - what" or
# "not ok N - what" per folder and exits 1 when any include breaks the
# table.
#
# Run from the repository root by tests/run.sh (or by hand: sh
# tests/cli/test_layering.sh [SRC_DIR]); it needs no build.

SRC=${1:-src}
MODULES=${MODULES_DIR:-modules}

# folder: the folders it may include from (itself always)
rg_allowed() {
    case "$1" in
        core)   echo "" ;;
        os)     echo "core" ;;
        event)  echo "core" ;;
        metrics) echo "core event" ;;
        trace)  echo "core event" ;;
        store)  echo "core event metrics" ;;
        llm)    echo "core event store metrics trace" ;;
        tools)  echo "core event store os metrics trace" ;;
        mcp)    echo "core event tools metrics trace" ;;
        agent)  echo "core event llm tools store metrics trace" ;;
        queue)  echo "core event store agent metrics trace" ;;
        serve)  echo "core os event store agent queue metrics trace" ;;
        http)   echo "core event store agent queue metrics trace" ;;
        *)      echo "UNKNOWN" ;;
    esac
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

# the rg_*.h headers a file includes, one per line
rg_includes() {
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\(rg_[A-Za-z0-9_]*\.h\)[>"].*/\1/p' "$1"
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
    for h in $(rg_includes "$f"); do
        [ "$h" = rg_tool_module.h ] && continue
        [ -f "$(dirname "$f")/$h" ] && continue
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

echo "# $n checks, $failed failed"
[ $failed -eq 0 ]
