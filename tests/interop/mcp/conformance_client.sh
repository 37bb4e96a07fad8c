#!/bin/sh
# conformance_client.sh: reagent's MCP client as the conformance suite
# (@modelcontextprotocol/conformance) runs a client: the server's URL is
# the last argument and MCP_CONFORMANCE_SCENARIO names the scenario. It
# writes a configuration with one mcp block for that URL and runs
# `reagent mcp`: listing the tools (initialize), or calling the tool the
# scenario offers (with --approve-all: its tools say nothing of what they
# do, so they are dangerous, and there is no terminal to ask). REAGENT
# names the binary (default objs/reagent).
#
#   conformance client --command "sh tests/interop/mcp/conformance_client.sh" ...

REAGENT=${REAGENT:-objs/reagent}

for url; do :; done

conf=$(mktemp "${TMPDIR:-/tmp}/rg-conformance-XXXXXX") || exit 1
trap 'rm -f "$conf"' EXIT

cat > "$conf" <<CONF
error_log stderr info;
llm none { base_url http://127.0.0.1:1/v1; model none; }
mcp conf { url "$url"; start_timeout 20s; }
agent a { tools conf__*; }
CONF

case "$MCP_CONFORMANCE_SCENARIO" in
    tools_call)
        "$REAGENT" -c "$conf" mcp --call conf__add_numbers \
            --args '{"a": 5, "b": 3}' --approve-all conf ;;
    sse-retry)
        "$REAGENT" -c "$conf" mcp --call conf__test_reconnection \
            --approve-all conf ;;
    elicitation-sep1034-client-defaults)
        "$REAGENT" -c "$conf" mcp --approve-all \
            --call conf__test_client_elicitation_defaults conf ;;
    *)
        "$REAGENT" -c "$conf" mcp conf ;;
esac
