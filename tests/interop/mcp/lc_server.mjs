// lc_server.mjs: an MCP server on the v1 SDK (@modelcontextprotocol/sdk,
// pinned here) over stdio whose tool list changes on request: add_tool
// registers "late", and the SDK sends notifications/tools/list_changed
// before it answers.
//
//   run.sh tests/interop/mcp/lc_server.mjs
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const s = new McpServer({ name: "reagent-lc-test", version: "1.0.0" });

s.registerTool("add_tool", {
    description: "registers the tool late",
    annotations: { readOnlyHint: false, destructiveHint: false },
}, async () => {
    s.registerTool("late", { description: "added later",
        annotations: { readOnlyHint: true } },
        async () => ({ content: [{ type: "text", text: "late here" }] }));
    return { content: [{ type: "text", text: "added" }] };
});

await s.connect(new StdioServerTransport());
