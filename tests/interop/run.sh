#!/bin/sh
# run.sh: runs a JavaScript file, or an installed package's program, with
# the Node pinned in tests/interop/package.json (from npm, in
# tests/interop/node_modules), whatever Node the system has. The interop
# tests call it to run the openai client and the MCP servers.
#
#   tests/interop/run.sh FILE.mjs [ARGS...]   run a script
#   tests/interop/run.sh --bin NAME [ARGS...] run a package's program, e.g.
#                                             --bin mcp-server-everything stdio
#   tests/interop/run.sh --check              exit 0 when the pinned tree is
#                                             installed, else say why on
#                                             stderr and exit 77
#   tests/interop/run.sh --node               print the pinned node's path
#
# The pinned tree is installed by deploy/deps.sh (npm ci here). The last
# step execs node, so the caller's process id is node's and its signals
# reach node directly.

dir=$(cd "$(dirname "$0")" && pwd) || exit 1

# the package's own binary, not node_modules/.bin/node: both Node packages
# name that link, and npm 9 removes it when it skips the other platform's
case $(uname -m) in
    x86_64|amd64)  arch=x64 ;;
    aarch64|arm64) arch=arm64 ;;
    *)             arch=$(uname -m) ;;
esac
nodedir=$dir/node_modules/node-linux-$arch/bin
node=$nodedir/node

rg_interop_missing() {
    echo "interop: $1; run deploy/deps.sh (or: npm ci in tests/interop)" >&2
    exit 77
}

rg_interop_check() {
    [ -d "$dir/node_modules" ] ||
        rg_interop_missing "tests/interop/node_modules is missing"
    [ -x "$node" ] ||
        rg_interop_missing "the pinned node (node_modules/node-linux-$arch) is missing"
    "$node" --version >/dev/null 2>&1 ||
        rg_interop_missing "the pinned node does not run on this machine"
    # the installed tree is the one package-lock.json names, and every
    # package's engines accept the pinned node
    "$node" "$dir/lib/check_tree.mjs" >&2 ||
        rg_interop_missing "tests/interop/node_modules does not match package-lock.json"
}

# scripts and programs that spawn "node" get the pinned one too
PATH=$nodedir:$dir/node_modules/.bin:$PATH
export PATH

case "$1" in
    --check)
        rg_interop_check
        exit 0
        ;;
    --node)
        [ -x "$node" ] || rg_interop_missing "the pinned node is missing"
        echo "$node"
        exit 0
        ;;
    --bin)
        [ $# -ge 2 ] || { echo "usage: $0 --bin NAME [ARGS...]" >&2; exit 2; }
        [ -x "$node" ] || rg_interop_missing "the pinned node is missing"
        bin=$dir/node_modules/.bin/$2
        [ -e "$bin" ] || rg_interop_missing "no program $2 in node_modules/.bin"
        shift 2
        # the target, not the link: its "#!/usr/bin/env node" would pick
        # the system's node
        exec "$node" "$(readlink -f "$bin")" "$@"
        ;;
    ''|-h|--help)
        sed -n '2,18s/^# \{0,1\}//p' "$0" >&2
        exit 2
        ;;
esac

[ -x "$node" ] || rg_interop_missing "the pinned node is missing"
exec "$node" "$@"
