#!/bin/sh
# test_directives.sh: the reference of the directives (`reagent
# directives`, src/core/rg_directives.c) is whole and is the one checked
# in: the binary finds an entry for every directive of every part's table
# (it exits 1 naming each one without), conf/directives.md is exactly
# what it prints (else the diff, and the command that writes it anew),
# every directive of a bundled module's table (modules/) has its row,
# every directive conf/reagent.conf names is in it; `reagent directives
# NAME` prints the rows of one name and says "did you mean" of an unknown
# one; it reads no configuration; `make directives` writes the file.
#
# Run from the repository root by tests/run.sh with B=<build folder>.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

ref=conf/directives.md

# the reference the binary prints, and whether it found every entry
"$R" directives > "$tmp/ref.md" 2> "$tmp/ref.err"
rg_equal "reagent directives exits 0: every directive has its entry" "$?" 0 \
    || sed 's/^/#   /' "$tmp/ref.err"
rg_equal "and says nothing on stderr" "$(cat "$tmp/ref.err")" ""

if cmp -s "$tmp/ref.md" "$ref"; then
    rg_ok "$ref is what reagent directives prints"
else
    rg_fail "$ref is what reagent directives prints"
    diff -u "$ref" "$tmp/ref.md" | head -n 60 | sed 's/^/#   /'
    echo "#   write it anew: make -f $B/Makefile directives"
fi

# a row of the reference: | `NAME` | … | CONTEXT | … |
rg_row() {
    grep -F "| \`$1\` |" "$tmp/ref.md" | grep -qF "| $2 |"
}

# every part's directive is in a table of the reference: the rows are
# counted against the names of the parts' tables in the sources
missing=
awk 'name != "" { if ($0 ~ /RG_[A-Z_]*CONF/) print name; name = "" }
     /^ *\{ rg_string\("[a-z_]+"\),/ {
         match($0, /"[a-z_]+"/)
         name = substr($0, RSTART + 1, RLENGTH - 2)
         rest = substr($0, RSTART + RLENGTH)
         if (rest ~ /RG_[A-Z_]*CONF/) { print name; name = "" }
     }' src/*/*.c | sort -u > "$tmp/part-names"
while read -r name; do
    grep -qF "| \`$name\` |" "$tmp/ref.md" || missing="$missing $name"
done < "$tmp/part-names"
rg_equal "every directive of a part's table has a row" "${missing# }" ""
rg_check "(the tables were read: $(wc -l < "$tmp/part-names") names)" \
    test "$(wc -l < "$tmp/part-names")" -gt 100

# every directive of a bundled module's table, with its module as context
missing=
count=0
for f in modules/*.c modules/*/*.c; do
    [ -f "$f" ] || continue
    case "$f" in
        modules/*/*.c) mod=$(basename "$(dirname "$f")") ;;
        *)             mod=$(basename "$f" .c) ;;
    esac
    for name in $(awk '/rg_tool_directive_t .*\[\] = \{/ { on = 1; next }
                       on && /\{ NULL/ { on = 0 }
                       on { if (match($0, /"[a-z_]+"/))
                                print substr($0, RSTART + 1, RLENGTH - 2) }' \
                  "$f"); do
        count=$((count + 1))
        rg_row "$name" "module $mod" || missing="$missing $mod:$name"
    done
done
rg_equal "every directive of a module's table has a row (module NAME)" \
    "${missing# }" ""
rg_check "(the modules' tables were read: $count directives)" \
    test "$count" -ge 19

# every directive the shipped configuration names, commented or not
missing=
grep -E '^[[:space:]]*#?([[:space:]]{4,})?[a-z_]+[[:space:]]+[^#]*[;{]' \
    conf/reagent.conf |
    sed -E 's/^[[:space:]]*#?[[:space:]]*([a-z_]+).*/\1/' | sort -u \
    > "$tmp/conf-names"
while read -r name; do
    grep -qF "| \`$name\` |" "$tmp/ref.md" || missing="$missing $name"
done < "$tmp/conf-names"
rg_equal "every directive conf/reagent.conf names is in the reference" \
    "${missing# }" ""
rg_check "(conf/reagent.conf was read: $(wc -l < "$tmp/conf-names") names)" \
    test "$(wc -l < "$tmp/conf-names")" -gt 100

# one name: its rows, in every part and module that has it
"$R" directives timeout > "$tmp/one.md" 2>&1
rg_equal "reagent directives timeout exits 0" "$?" 0
rg_equal "with a row per context (llm, module exec, module http)" \
    "$(grep -c '^| `timeout` |' "$tmp/one.md")" 3
rg_expect "under its part's heading" "$tmp/one.md" '^## llm$'
rg_lacks "and no other directive" "$tmp/one.md" '^\| `(model|root)` \|'

"$R" directives modle > "$tmp/near.out" 2>&1
rg_equal "an unknown name exits 1" "$?" 1
rg_expect "saying what it may have meant" "$tmp/near.out" \
    '^reagent: no directive "modle" \(did you mean "model"\?\)$'

# no configuration is read, not even one that would be refused
mkdir -p "$tmp/empty"
printf 'this is { not a configuration\n' > "$tmp/bad.conf"
bin=$(cd "$B" && pwd)/reagent
(cd "$tmp/empty" && "$bin" -c "$tmp/bad.conf" directives) \
    > "$tmp/noconf.md" 2>&1
rg_equal "reagent directives reads no configuration" "$?" 0
rg_check "and prints the same reference" cmp -s "$tmp/noconf.md" "$tmp/ref.md"

"$R" -h > "$tmp/help.out" 2>&1
rg_expect "reagent -h lists it" "$tmp/help.out" '^  directives \[NAME\]$'

# make directives writes the file from the binary (as a user runs make)
unset MAKEFLAGS MAKELEVEL MFLAGS
make -n -f "$B/Makefile" directives > "$tmp/make.out" 2>&1
rg_expect "make directives writes $ref" "$tmp/make.out" \
    "reagent directives > conf/directives.md.new"

echo "$n checks, $failed failed"
[ "$failed" -eq 0 ]
