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

B=${RG_BUILD_DIR:-${B:-objs}}
export B
. tests/lib/rg_test_lib.sh

rg_interop_tree

# the scenarios print their own checks and closing line
# shellcheck disable=SC2086
tests/interop/run.sh tests/interop/mcp/test_mcp.mjs ${RG_MCP_INTEROP:-}
