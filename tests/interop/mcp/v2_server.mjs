// v2_server.mjs: an MCP server of the stateless 2026-07-28 revision, on
// the v2 SDK (@modelcontextprotocol/server, pinned here), over Streamable
// HTTP on 127.0.0.1. Tools: echo (read-only), fail (an isError result),
// add_tool (registers "added", which tools/list_changed announces on
// subscriptions/listen streams). Every request's method and protocol
// headers are logged to stdout as one JSON line, for the test to read.
//
//   run.sh tests/interop/mcp/v2_server.mjs PORT
import http from "node:http";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import * as z from "zod/v4";

let added = false;

function factory() {
    const s = new McpServer({ name: "reagent-v2-test", version: "1.0.0" });
    s.registerTool("echo", {
        description: "echo the message",
        inputSchema: z.object({ message: z.string() }),
        annotations: { readOnlyHint: true },
    }, async ({ message }) => ({ content: [{ type: "text", text: `Echo: ${message}` }] }));
    s.registerTool("fail", { description: "always fails", inputSchema: z.object({}) },
        async () => { throw new Error("deliberate failure"); });
    s.registerTool("add_tool", { description: "adds a tool", inputSchema: z.object({}) },
        async () => {
            // each request gets its own server from this factory: the
            // next ones have the tool; listen streams hear of it
            added = true;
            handler.notify.toolsChanged();
            return { content: [{ type: "text", text: "added" }] };
        });
    if (added) {
        s.registerTool("added", { description: "the added tool", inputSchema: z.object({}) },
            async () => ({ content: [{ type: "text", text: "I was added" }] }));
    }
    return s;
}

const handler = createMcpHandler(factory);

const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) {
        chunks.push(c);
    }
    const body = Buffer.concat(chunks);
    const request = new Request(`http://127.0.0.1:${server.address().port}${req.url}`, {
        method: req.method, headers: req.headers, body: body.length ? body : undefined,
    });
    let method = null;
    try {
        method = JSON.parse(body.toString()).method ?? null;
    } catch {
        // not JSON
    }
    console.log(JSON.stringify({
        http: req.method, method,
        version: req.headers["mcp-protocol-version"] ?? null,
        mcpMethod: req.headers["mcp-method"] ?? null,
        mcpName: req.headers["mcp-name"] ?? null,
    }));
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
    if (response.body) {
        const reader = response.body.getReader();
        for (;;) {
            const { done, value } = await reader.read();
            if (done) {
                break;
            }
            res.write(value);
        }
    }
    res.end();
});

server.listen(+process.argv[2], "127.0.0.1", () => {
    console.error(`listening on ${server.address().port}`);
});
