#!/bin/sh
# runtime-deps.sh: prints, one a line, the Debian packages that hold the
# shared libraries the given programs and modules load (ldd, dpkg -S),
# so that the image's runtime stage installs those and nothing of the
# build's -dev packages. Fails when a library belongs to no package.
set -eu

[ $# -gt 0 ] || { echo "usage: runtime-deps.sh ELF..." >&2; exit 2; }

libs=$(ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u)
[ -n "$libs" ] || { echo "runtime-deps.sh: ldd found no libraries" >&2; exit 1; }

# whether dpkg's answer names FILE
owned() {
    printf '%s\n' "$2" | awk -v f="$1" '$NF == f { o = 1 } END { exit !o }'
}

# "pkg: file" per file dpkg knows (one dpkg -S: it reads its database
# once); a merged /usr: it may know a file under its other name
# shellcheck disable=SC2086
found=$(dpkg -S $libs 2>/dev/null || true)
rest=
for lib in $libs; do
    owned "$lib" "$found" || rest="$rest $(readlink -f "$lib")"
done
if [ -n "$rest" ]; then
    # shellcheck disable=SC2086
    more=$(dpkg -S $rest 2>/dev/null || true)
    for lib in $rest; do
        owned "$lib" "$more" ||
            { echo "runtime-deps.sh: no package holds $lib" >&2; exit 1; }
    done
    found="$found
$more"
fi

# "a, b: file" when several packages share it; architecture qualifiers go
printf '%s\n' "$found" | sed 's/: .*//' | tr ',' '\n' |
    sed 's/^ *//; s/:.*//; /^$/d' | sort -u
