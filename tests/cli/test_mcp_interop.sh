#!/bin/sh
# test_mcp_interop.sh: reagent's MCP client against MCP servers the
# project did not write (tests/interop/mcp/test_mcp.mjs): server-everything
# over stdio and Streamable HTTP, server-filesystem over stdio, a v1 SDK
# server whose tools change, a v2 SDK server of the stateless revision, a
# hand-written HTTP server that misbehaves, and the conformance suite's
# client scenarios initialize, tools_call and sse-retry (elicitation is
# checked to be declined; auth/* are not run: no OAuth), all through the
# agent loop against the mock model (B/reagent, B/rg_mock).
#
# Run from the repository root by tests/run.sh. Without the interop tree
# (no npm, or npm ci not run) it prints why it SKIPPED as its closing line
# and exits 0; under CI (CI=true), or with RG_INTEROP_REQUIRED=1, a
# missing tree fails instead, since deploy/deps.sh installs it there.
# RG_MCP_INTEROP="stdio http ..." runs only those scenarios.

R=tests/interop/run.sh
B=${RG_BUILD_DIR:-${B:-objs}}
export B

if [ "${CI:-}" = true ]; then
    required=${RG_INTEROP_REQUIRED:-1}
else
    required=${RG_INTEROP_REQUIRED:-0}
fi

if why=$($R --check 2>&1); then
    why=
elif ! command -v npm >/dev/null 2>&1; then
    why="npm is not installed, nor is tests/interop/node_modules"
    why="$why (deploy/deps.sh installs nodejs and npm, then runs npm ci)"
else
    why=$(printf '%s' "$why" | tr '\n' ' ')
fi

if [ -n "$why" ]; then
    if [ "$required" = 1 ]; then
        echo "not ok 1 - the interop tree is installed: $why"
        echo "# 1 checks, 1 failed"
        exit 1
    fi
    echo "SKIPPED: MCP interop test: $why"
    exit 0
fi

# shellcheck disable=SC2086
exec $R tests/interop/mcp/test_mcp.mjs ${RG_MCP_INTEROP:-}
