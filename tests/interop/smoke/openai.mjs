// openai.mjs: the pinned openai package loads with the pinned node, as
// CommonJS and as an ES module, and makes one chat completion against a
// throwaway server on 127.0.0.1 (no reagent yet: this proves the client
// side of the interop tests works). Prints the version; exits 1 on any
// failure.

import fs from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import OpenAI from "openai";
import { VERSION } from "openai/version";

const require = createRequire(import.meta.url);
const cjs = require("openai");
const lock = JSON.parse(fs.readFileSync(
    new URL("../package-lock.json", import.meta.url), "utf8"));
const expected = lock.packages["node_modules/openai"].version;

function fail(what) {
    console.log(`# openai: ${what}`);
    process.exit(1);
}

if (VERSION !== expected || cjs.OpenAI === undefined) {
    fail(`import gave version ${VERSION}, package-lock.json pins ${expected}`);
}
console.log(`# openai ${VERSION} on node ${process.version}`);

let seen = null;
const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => { body += d; });
    req.on("end", () => {
        seen = { url: req.url, auth: req.headers.authorization,
                 body: JSON.parse(body) };
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({
            id: "chatcmpl-smoke", object: "chat.completion", created: 0,
            model: seen.body.model,
            choices: [{ index: 0, finish_reason: "stop",
                        message: { role: "assistant", content: "pong" } }],
            usage: { prompt_tokens: 1, completion_tokens: 1,
                     total_tokens: 2 },
        }));
    });
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));

const client = new OpenAI({
    apiKey: "sk-smoke",
    baseURL: `http://127.0.0.1:${server.address().port}/v1`,
    maxRetries: 0,
    timeout: 30000,
});
try {
    const r = await client.chat.completions.create({
        model: "smoke-model",
        messages: [{ role: "user", content: "ping" }],
    });
    if (r.choices[0].message.content !== "pong") {
        fail(`answer ${JSON.stringify(r.choices[0].message)}`);
    }
    if (seen.url !== "/v1/chat/completions" ||
        seen.auth !== "Bearer sk-smoke" ||
        seen.body.messages[0].content !== "ping")
    {
        fail(`request ${JSON.stringify(seen)}`);
    }
} catch (e) {
    fail(`chat.completions.create: ${e}`);
} finally {
    server.close();
}
console.log("# openai: chat.completions.create against 127.0.0.1 answered");
