#!/bin/sh
# test_readme_help.sh: README.md's "Command line" shows what `reagent -h`
# prints, and fails when they differ: the block of README that follows
# the line "$ reagent -h" inside a ``` fence, up to the fence's end, must
# be -h's output line for line. The default configuration path in -h is
# the build's (configure --prefix); README shows the default prefix's,
# /usr/local/etc/reagent/reagent.conf, so the build's is read as that.
# Also: README has one "Command line" section and one such block.
#
# Run from the repository root by tests/run.sh with B=<build folder>.
# Prints "ok N - what" or "not ok N - what" per check and exits 1 if any
# check failed; on a difference, a unified diff of README against -h.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

[ -x "$R" ] || rg_skip "no reagent binary in $B"

n_sections=$(grep -c '^## Command line$' README.md)
rg_equal "README has one Command line section" "$n_sections" 1

n_blocks=$(grep -c '^\$ reagent -h$' README.md)
rg_equal "README shows reagent -h once" "$n_blocks" 1

# the block: the lines after "$ reagent -h" up to the closing fence
awk 'seen && /^```/ { exit }
     seen { print }
     /^\$ reagent -h$/ { seen = 1 }' README.md > "$tmp/readme.h"

# -h as a build with the default prefix prints it
conf_path=$(sed -n 's/^#define RG_CONF_PATH *"\(.*\)"$/\1/p' \
                "$B/rg_auto_config.h" 2>/dev/null)
"$R" -h > "$tmp/h.raw" 2> "$tmp/h.err"
rc=$?
rg_equal "reagent -h: exit code 0" "$rc" 0
rg_check "reagent -h: nothing on stderr" test ! -s "$tmp/h.err"
if [ -n "$conf_path" ] \
   && [ "$conf_path" != /usr/local/etc/reagent/reagent.conf ]; then
    awk -v p="$conf_path" '{
            i = index($0, p)
            if (i) $0 = substr($0, 1, i - 1) \
                "/usr/local/etc/reagent/reagent.conf" \
                substr($0, i + length(p))
            print
        }' "$tmp/h.raw" > "$tmp/h.out"
else
    cp "$tmp/h.raw" "$tmp/h.out"
fi

if [ ! -s "$tmp/readme.h" ]; then
    rg_fail "README shows reagent -h's output (a \"\$ reagent -h\" line in a \`\`\` block)"
elif cmp -s "$tmp/readme.h" "$tmp/h.out"; then
    rg_ok "README's Command line is reagent -h's output ($(wc -l < "$tmp/h.out") lines)"
else
    rg_fail "README's Command line is reagent -h's output"
    diff -u "$tmp/readme.h" "$tmp/h.out" | sed 's/^/#   /' | head -n 60
    echo "#   (copy reagent -h's output into README.md, Command line)"
fi

rg_done
