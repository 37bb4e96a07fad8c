#!/bin/sh
# test_layering.sh: the folders of src/ include only the headers of the
# folders beneath them (src/README), and modules/ only the plugin ABI
# (src/tools/rg_tool_module.h) and headers of their own. Reads every
# #include of src/ and modules/, quoted or angle, and checks it against
# the table below; a header is found by its file name among src/*/,
# whatever path the include writes, and an include that climbs with
# "../" is refused outright. Then the rules within the folders:
#
#   - no two files of src/ include each other's header both ways: a
#     file is its .c and its .h ("rg_x_int.h", a private header, is
#     rg_x's), and rg_a includes rg_b's header while rg_b includes
#     rg_a's is a circle, each one reported; the core's umbrella,
#     rg_core.h (nginx's ngx_core.h: the floor every file includes, only
#     includes and forward types, no .c of its own), is no file here;
#   - a session's phases (src/agent/rg_phase_NAME.c, the table of
#     rg_session_phase.c): a phase file includes no other phase's header
#     and calls no other phase (no rg_phase_OTHER_ name in it); only the
#     driver (rg_session_phase.c) and the end (rg_session_end.c) include
#     phase headers: the services the phases call call no phase;
#   - what a session is made of (src/agent/rg_session_int.h) is the agent
#     part's alone: no other folder includes it, nor a header of agent
#     that includes it, however deep (the rest has the face,
#     rg_session.h);
#   - a session's state is written by rg_session_set_state() alone: no
#     other "->state =" (or ++, --, op=) in src/agent.
#
# Prints "ok N - what" or "not ok N - what" per check and exits 1 when
# any breaks.
#
# Run from the repository root by tests/run.sh (or by hand: sh
# tests/cli/test_layering.sh [SRC_DIR]); it needs no build. The table
# is the one of SRC_DIR/README, read from it (lines "    llm    -> core,
# event, store (shared limits)", remarks in parentheses), but it may not
# relax the floors: core includes nothing of src/, and llm, event and
# store no agent header, whatever the table says. Without
# SRC_DIR it also tests itself: it breaks copies of src/ and modules/ in
# a temporary folder, one way at a time, and each copy must fail with
# something the unchanged copy does not say.

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
        echo "#   src/$part has no row"
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

# no circles: the stems that include each other's header ("rg_x" for
# rg_x.c, rg_x.h and rg_x_int.h), each pair once, with a line of each
# way ("a includes b.h")
awk -v homes="$work/homes" -v umbrella=rg_core.h '
    function stem(name) {
        sub(/\.[ch]$/, "", name)
        sub(/_int$/, "", name)
        return name
    }
    BEGIN {
        while ((getline l < homes) > 0) { split(l, a, " "); home[a[1]] = a[2] }
    }
    {
        i = index($0, ":"); f = substr($0, 1, i - 1); r = substr($0, i + 1)
        i = index(r, ":"); text = substr(r, i + 1)
        if (!match(text, /[<"][^>"]*[>"]/)) next
        path = substr(text, RSTART + 1, RLENGTH - 2)
        n = split(path, q, "/"); h = q[n]
        if (!(h in home)) next
        n = split(f, p, "/"); from = stem(p[n]); to = stem(h)
        if (from == to || h == umbrella || p[n] == umbrella) next
        key = from " " to
        if (!(key in way)) way[key] = p[n - 1] "/" p[n] " includes " h
    }
    END {
        for (key in way) {
            split(key, a, " ")
            back = a[2] " " a[1]
            if ((back in way) && a[1] < a[2]) {
                printf "#   %s <-> %s: %s; %s\n", a[1], a[2], way[key], way[back]
            }
        }
    }' "$work/includes" | sort > "$work/circles"

if [ ! -s "$work/circles" ]; then
    rg_ok "no two files of src/ include each other's header both ways"
else
    rg_fail "no two files of src/ include each other's header both ways ($(wc -l < "$work/circles") pairs)"
    cat "$work/circles"
fi

# the phases of a session: each its own, calling no other
bad=
phases=$(ls "$SRC"/agent/rg_phase_*.c 2>/dev/null \
         | sed 's|.*/rg_phase_\(.*\)\.c$|\1|')
for f in "$SRC"/agent/rg_phase_*.[ch]; do
    [ -f "$f" ] || continue
    own=$(basename "$f" | sed 's/^rg_phase_\(.*\)\.[ch]$/\1/')
    for h in $(rg_includes "$f"); do
        case "$h" in
            rg_phase_"$own".h) ;;
            rg_phase_*.h) bad="$bad
#   $f includes $h" ;;
        esac
    done
    for other in $phases; do
        [ "$other" = "$own" ] && continue
        grep -n "\\<rg_phase_${other}\\>\\|\\<rg_phase_${other}_" "$f" \
            | sed "s|^|#   $f:|; s|\$| (calls the phase $other)|" \
            > "$work/calls"
        if [ -s "$work/calls" ]; then
            bad="$bad
$(cat "$work/calls")"
        fi
    done
done
for f in "$SRC"/agent/*.[ch]; do
    case "$(basename "$f")" in
        rg_phase_*|rg_session_phase.c|rg_session_end.c) continue ;;
    esac
    for h in $(rg_includes "$f"); do
        case "$h" in
            rg_phase_*.h) bad="$bad
#   $f includes $h (only the driver and the end know the phases)" ;;
        esac
    done
done

what="a phase file includes no other phase's header and calls no other phase"
if [ -z "$phases" ]; then
    rg_fail "$what (src/agent has no rg_phase_*.c)"
elif [ -z "$bad" ]; then
    rg_ok "$what"
else
    rg_fail "$what"
    echo "$bad" | sed '/^$/d'
fi

# the session's private header: agent/ alone, and so is every header of
# agent that includes it, however deep (rg_recover.h brings the struct
# as surely as rg_session_int.h does)
bad=$(awk '
    FNR == 1 { pass++ }
    pass == 1 {
        i = index($0, ":"); f = substr($0, 1, i - 1); r = substr($0, i + 1)
        i = index(r, ":"); text = substr(r, i + 1)
        n = split(f, p, "/")
        if (p[n - 1] != "agent" || p[n] !~ /\.h$/) next
        if (!match(text, /[<"][^>"]*[>"]/)) next
        path = substr(text, RSTART + 1, RLENGTH - 2)
        m = split(path, q, "/")
        inc[p[n]] = inc[p[n]] " " q[m]
        next
    }
    pass == 2 && FNR == 1 {
        priv["rg_session_int.h"] = 1
        do {
            more = 0
            for (h in inc) {
                if (h in priv) continue
                m = split(inc[h], q, " ")
                for (j = 1; j <= m; j++) {
                    if (q[j] in priv) { priv[h] = 1; more = 1; break }
                }
            }
        } while (more)
    }
    pass == 2 {
        i = index($0, ":"); f = substr($0, 1, i - 1); r = substr($0, i + 1)
        i = index(r, ":"); line = substr(r, 1, i - 1); text = substr(r, i + 1)
        n = split(f, p, "/")
        if (p[n - 1] == "agent") next
        if (!match(text, /[<"][^>"]*[>"]/)) next
        path = substr(text, RSTART + 1, RLENGTH - 2)
        m = split(path, q, "/")
        if (q[m] in priv) {
            how = q[m] == "rg_session_int.h" ? "" : \
                  " (it includes rg_session_int.h)"
            print "#   " f ":" line " includes " q[m] how
        }
    }' "$work/includes" "$work/includes")
what="only src/agent includes rg_session_int.h, or a header of agent that does (the rest has rg_session.h)"
if [ -z "$bad" ]; then
    rg_ok "$what"
else
    rg_fail "$what"
    echo "$bad"
fi

# the state: rg_session_set_state() writes it, nothing else
grep -nE -e '->[[:space:]]*state[[:space:]]*(=[^=]|\+\+|--|[-+*/%&|^]=)' \
    "$SRC"/agent/*.c "$SRC"/agent/*.h /dev/null > "$work/state"
bad=$(awk -F: '
    FILENAME == ARGV[1] {
        if ($0 ~ /^rg_session_set_state\(/) inside = 1
        else if (inside && $0 ~ /^}/) { last = FNR; inside = 0 }
        else if (inside && !first) first = FNR
        next
    }
    {
        n = split($1, p, "/")
        if (p[n] == "rg_session_int.h" && $2 >= first && $2 <= last) next
        print "#   " $1 ":" $2 " writes the state"
    }' "$SRC/agent/rg_session_int.h" "$work/state")
what="a session's state is written by rg_session_set_state() alone"
if [ ! -f "$SRC/agent/rg_session_int.h" ]; then
    rg_fail "$what (no src/agent/rg_session_int.h)"
elif [ -z "$bad" ]; then
    rg_ok "$what"
else
    rg_fail "$what"
    echo "$bad"
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

    # what the tree says (the self-test's own lines left out): an
    # unchanged copy must say the same
    MODULES_DIR="$MODULES" sh "$0" "$SRC" 2>&1 | sed "s|$SRC/|src/|g" \
        | grep '^#   ' | sort > "$self/said"

    rg_broken "" ""
    sed "s|$self/||g" "$self/out" | grep '^#   ' | sort > "$self/base"
    if cmp -s "$self/said" "$self/base"; then
        rg_ok "self-test: an unchanged copy says what the tree says"
    else
        rg_fail "self-test: an unchanged copy says what the tree says"
        diff "$self/said" "$self/base" | sed 's/^/#   /'
    fi

    # a broken copy fails, saying something the unchanged one does not
    while read -r what file line; do
        rg_broken "$file" "$line"
        rc=$?
        sed "s|$self/||g" "$self/out" | grep '^#   ' | sort > "$self/more"
        if [ $rc -eq 1 ] && grep -q '^not ok' "$self/out" \
           && [ -n "$(comm -13 "$self/base" "$self/more")" ]
        then
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
a-circle-of-two-files src/agent/rg_agent.c #include <rg_session_int.h>
a-phase-including-another src/agent/rg_phase_ask.c #include <rg_phase_run.h>
a-phase-calling-another src/agent/rg_phase_lookup.c static void rg_phase_lookup_x(void) { rg_phase_park_cancel(NULL); }
a-service-including-a-phase src/agent/rg_dedupe.c #include "rg_phase_lookup.h"
http<rg_session_int.h> src/http/rg_http_openai.c #include <rg_session_int.h>
queue"agent/rg_session_int.h" src/queue/rg_task_session.c #include "agent/rg_session_int.h"
serve<rg_recover.h>-which-includes-rg_session_int.h src/serve/rg_serve_worker.c #include <rg_recover.h>
a-circle-in-the-core-beside-its-umbrella src/core/rg_secret.c #include <rg_log.h>
a-state-written-elsewhere src/agent/rg_session.c static void rg_session_x(rg_session_t *s) { s->state = RG_SESSION_DONE; }
a-state-stepped src/agent/rg_phase_run.c static void rg_phase_run_x(rg_session_t *s) { s -> state++; }
EOF_CASES
fi

echo "# $n checks, $failed failed"
[ $failed -eq 0 ]
