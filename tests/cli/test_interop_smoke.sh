#!/bin/sh
# test_interop_smoke.sh: the interop test tree (tests/interop/) is usable:
# the Node pinned from npm runs whatever the system's Node is, the
# installed packages are the ones package-lock.json pins and their engines
# accept that Node, the openai client loads (CommonJS and ES module) and
# completes a chat against a throwaway local server, and the MCP servers
# server-everything (started through run.sh --bin, as a configuration
# would) and server-filesystem answer initialize, tools/list and a
# tools/call over stdio.
#
# Run from the repository root by tests/run.sh. Without the tree (no npm,
# or npm ci not run) it prints why it SKIPPED as its closing line and
# exits 0; under CI (CI=true), or with RG_INTEROP_REQUIRED=1, a missing
# tree fails instead, since deploy/deps.sh installs it there.
# Prints "ok N - what" or "not ok N - what" per check (tests/lib/
# rg_test_lib.sh) and exits 1 if any check failed.

B=${B:-objs}
. tests/lib/rg_test_lib.sh

# the interop tree's runner: node with the pinned packages
R=tests/interop/run.sh


# rg_check WHAT COMMAND...: the command succeeds; its output is shown
# as comments
rg_check() {
    check_what=$1
    shift
    if check_out=$("$@" 2>&1); then
        rg_ok "$check_what"
    else
        rg_fail "$check_what"
    fi
    [ -n "$check_out" ] && printf '%s\n' "$check_out" | sed 's/^#* \{0,1\}/#   /'
}


# is the tree there?
rg_interop_tree

node=$($R --node)
want=$("$node" -p 'require("./tests/interop/package.json")
    .optionalDependencies["node-" + process.platform + "-" + process.arch]')
got=$("$node" --version)
if [ "$got" = "v$want" ]; then
    rg_ok "the pinned node runs: $got (system node: $(node --version 2>/dev/null || echo none))"
else
    rg_fail "the pinned node runs: got '$got', package.json pins '$want'"
fi

# programs that a test's script starts as "node" get the pinned one too
child=$($R -e 'process.stdout.write(require("child_process")
    .execFileSync("node", ["--version"]))' 2>&1)
if [ "$child" = "$got" ]; then
    rg_ok "a script's child \"node\" is the pinned one"
else
    rg_fail "a script's child \"node\" is the pinned one: got '$child'"
fi

# also part of --check above, shown here as a check of its own
rg_check "node_modules matches package-lock.json; engines accept $got" \
    $R tests/interop/lib/check_tree.mjs

rg_check "openai loads and completes a chat against 127.0.0.1" \
    $R tests/interop/smoke/openai.mjs

rg_check "server-everything over stdio: initialize, tools/list, tools/call" \
    $R tests/interop/smoke/mcp_everything.mjs

rg_check "server-filesystem over stdio: initialize, tools/list, tools/call" \
    $R tests/interop/smoke/mcp_filesystem.mjs


rg_done
