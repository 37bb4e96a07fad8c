// bad_http.mjs: a Streamable HTTP MCP server written by hand (node:http,
// no SDK) that misbehaves on request, for reagent's MCP client tests. It
// speaks the session-based revision (initialize, Mcp-Session-Id) and logs
// every request it gets as one JSON line on stdout ({http, method, id,
// session, lastEventId, params}). Tools, by name:
//   ok          answers with a JSON body
//   sse         answers on an event stream, after a priming event
//   status500   HTTP 500 with a JSON-RPC error
//   cut         an event stream cut in the middle, without event ids
//   resume      an event stream closed before the answer, with ids and
//               retry: 300; the answer comes on the GET that resumes it
//   hang        never answers (its stream stays open)
//   garbage     a 200 JSON body that is not JSON
//   big         a JSON answer of 3 MB
//   expire      forgets the session: this and later requests get 404
//
//   run.sh tests/interop/mcp/bad_http.mjs PORT
import http from "node:http";
import { randomUUID } from "node:crypto";

const sessions = new Set();
const pending = new Map();     // event id of a cut stream -> request id
let nextEvent = 1;

const tools = ["ok", "sse", "status500", "cut", "resume", "hang", "garbage",
    "big", "expire"].map((name) => ({
    name,
    description: `misbehaves: ${name}`,
    inputSchema: { type: "object", properties: {} },
    annotations: { readOnlyHint: true },
}));

function json(res, status, body, headers = {}) {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(typeof body === "string" ? body : JSON.stringify(body));
}

function sse(res, headers = {}) {
    res.writeHead(200, { "content-type": "text/event-stream",
        "cache-control": "no-cache", ...headers });
}

function text(id, t) {
    return { jsonrpc: "2.0", id, result: { content: [{ type: "text", text: t }] } };
}

function call(req, res, msg) {
    const id = msg.id;
    const name = msg.params?.name;
    switch (name) {
    case "ok":
        return json(res, 200, text(id, "ok over JSON"));
    case "sse":
        sse(res);
        res.write(`id: ${nextEvent++}\ndata: \n\n`);
        res.write(`: a comment\n\nevent: message\ndata: ${JSON.stringify(text(id, "ok over SSE"))}\n\n`);
        return res.end();
    case "status500":
        return json(res, 500, { jsonrpc: "2.0", id, error: { code: -32603, message: "internal boom" } });
    case "cut":
        sse(res);
        res.write(`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"half"}}\n\n`);
        res.write(`data: {"jsonrpc":"2.0","id":${id},"res`);
        setTimeout(() => res.socket.destroy(), 50);
        return;
    case "resume": {
        sse(res);
        const e = nextEvent++;
        pending.set(String(e), id);
        res.write(`id: ${e}\nretry: 300\ndata: \n\n`);
        setTimeout(() => res.end(), 50);
        return;
    }
    case "hang":
        sse(res);
        res.write(`id: ${nextEvent++}\ndata: \n\n`);
        return;                // kept open
    case "garbage":
        return json(res, 200, "{this is not json");
    case "big":
        return json(res, 200, text(id, "x".repeat(3 * 1024 * 1024)));
    case "expire":
        sessions.clear();
        return json(res, 404, { jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } });
    default:
        return json(res, 200, { jsonrpc: "2.0", id, error: { code: -32602, message: `no tool ${name}` } });
    }
}

const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
        const body = Buffer.concat(chunks).toString();
        let msg = null;
        try {
            msg = body ? JSON.parse(body) : null;
        } catch {
            // logged as it is
        }
        const session = req.headers["mcp-session-id"] ?? null;
        console.log(JSON.stringify({
            http: req.method, method: msg?.method ?? null, id: msg?.id ?? null,
            session, lastEventId: req.headers["last-event-id"] ?? null,
            version: req.headers["mcp-protocol-version"] ?? null,
            auth: req.headers["authorization"] ?? null,
            params: msg?.params ?? null,
        }));

        if (req.method === "DELETE") {
            sessions.delete(session);
            return json(res, 200, "");
        }
        if (req.method === "GET") {
            const last = req.headers["last-event-id"];
            if (last && pending.has(last)) {
                const id = pending.get(last);
                pending.delete(last);
                sse(res);
                res.write(`id: ${nextEvent++}\ndata: ${JSON.stringify(text(id, "resumed answer"))}\n\n`);
                return res.end();
            }
            res.writeHead(405);
            return res.end();
        }
        if (msg === null) {
            return json(res, 400, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
        }
        if (msg.method === "initialize") {
            const sid = randomUUID();
            sessions.add(sid);
            return json(res, 200, { jsonrpc: "2.0", id: msg.id, result: {
                protocolVersion: msg.params.protocolVersion,
                capabilities: { tools: {} }, serverInfo: { name: "bad", version: "1" } } },
                { "mcp-session-id": sid });
        }
        if (!sessions.has(session)) {
            return json(res, session ? 404 : 400, { jsonrpc: "2.0", id: null,
                error: { code: -32000, message: "Bad Request: No valid session ID provided" } });
        }
        if (msg.id === undefined) {
            res.writeHead(202);
            return res.end();
        }
        if (msg.method === "tools/list") {
            return json(res, 200, { jsonrpc: "2.0", id: msg.id, result: { tools } });
        }
        if (msg.method === "tools/call") {
            return call(req, res, msg);
        }
        return json(res, 200, { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "Method not found" } });
    });
});

server.listen(+process.argv[2], "127.0.0.1", () => {
    console.error(`listening on ${server.address().port}`);
});
