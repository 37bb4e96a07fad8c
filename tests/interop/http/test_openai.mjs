// test_openai.mjs: the pinned `openai` npm package as a client of
// reagent's OpenAI-compatible face, and plain fetch as a client of
// /v1/tasks, against a running `reagent serve` (URL and token in
// RG_API_URL, RG_API_TOKEN). Prints "ok N - what" / "not ok N - what";
// exits 1 when a check failed.

import OpenAI from "openai";

const base = process.env.RG_API_URL;
const token = process.env.RG_API_TOKEN;
let n = 0;
let failed = 0;

function check(what, cond, detail) {
    n++;
    if (cond) {
        console.log(`ok ${n} - ${what}`);
    } else {
        failed++;
        console.log(`not ok ${n} - ${what}`);
        if (detail !== undefined) {
            console.log(`#   ${JSON.stringify(detail).slice(0, 400)}`);
        }
    }
}

const client = new OpenAI({ apiKey: token, baseURL: `${base}/v1`,
                            maxRetries: 0, timeout: 30000 });

// the agents are the models
const models = [];
for await (const m of client.models.list()) {
    models.push(m.id);
}
check("models.list() lists the agents", models.includes("a"), models);

// non-streamed
const r = await client.chat.completions.create({
    model: "a",
    messages: [{ role: "system", content: "be brief" },
               { role: "user", content: "what is 6 * 7?" }],
});
check("chat.completions.create(): an answer",
      /Final answer/.test(r.choices[0].message.content), r);
check("  finish_reason stop, role assistant",
      r.choices[0].finish_reason === "stop"
      && r.choices[0].message.role === "assistant", r.choices[0]);
check("  usage adds up", r.usage.total_tokens
      === r.usage.prompt_tokens + r.usage.completion_tokens
      && r.usage.total_tokens > 0, r.usage);

// streamed
const stream = await client.chat.completions.create({
    model: "a", stream: true, stream_options: { include_usage: true },
    messages: [{ role: "user", content: "stream it" }],
});
let text = "";
let finish = null;
let usage = null;
let chunks = 0;
for await (const c of stream) {
    chunks++;
    if (c.choices.length) {
        text += c.choices[0].delta.content || "";
        finish = c.choices[0].finish_reason || finish;
    }
    if (c.usage) {
        usage = c.usage;
    }
}
check("stream: the answer in chunks", /Final answer/.test(text),
      { text, chunks });
check("  finish_reason stop and the usage", finish === "stop"
      && usage && usage.total_tokens > 0, { finish, usage });

// the stream helper of the SDK (runs the same endpoint)
const s2 = client.chat.completions.stream({
    model: "a", messages: [{ role: "user", content: "helper" }],
});
const final = await s2.finalChatCompletion();
check("chat.completions.stream().finalChatCompletion()",
      /Final answer/.test(final.choices[0].message.content), final);

// errors surface as the SDK's errors
try {
    await client.chat.completions.create({
        model: "no-such-agent", messages: [{ role: "user", content: "x" }],
    });
    check("an unknown model throws NotFoundError", false);
} catch (e) {
    check("an unknown model throws NotFoundError",
          e instanceof OpenAI.NotFoundError && e.status === 404
          && e.code === "model_not_found", { status: e.status, code: e.code });
}

try {
    const bad = new OpenAI({ apiKey: "wrong", baseURL: `${base}/v1`,
                             maxRetries: 0 });
    await bad.models.list();
    check("a wrong key throws AuthenticationError", false);
} catch (e) {
    check("a wrong key throws AuthenticationError",
          e instanceof OpenAI.AuthenticationError && e.status === 401,
          { status: e.status });
}

// /v1/tasks through plain fetch
const h = { "content-type": "application/json",
            authorization: `Bearer ${token}` };
const sub = await fetch(`${base}/v1/tasks`, {
    method: "POST", headers: h,
    body: JSON.stringify({ id: "fetch-1", input: "through fetch" }),
});
const sj = await sub.json();
check("fetch POST /v1/tasks: 202", sub.status === 202 && sj.id === "fetch-1",
      { status: sub.status, sj });

let t = null;
for (let i = 0; i < 100; i++) {
    const g = await fetch(`${base}/v1/tasks/fetch-1`, { headers: h });
    t = await g.json();
    if (t.status === "done") {
        break;
    }
    await new Promise((res) => setTimeout(res, 100));
}
check("fetch GET /v1/tasks/fetch-1: done with its answer",
      t && t.status === "done" && /Final answer/.test(t.answer), t);

const bad = await fetch(`${base}/v1/tasks`, {
    method: "POST", headers: h, body: "{not json",
});
const bj = await bad.json();
check("fetch: a bad body gets 400 and a JSON error",
      bad.status === 400 && typeof bj.error.message === "string"
      && bj.error.code === "invalid_json", bj);

console.log(`# ${n} checks, ${failed} failed`);
process.exit(failed ? 1 : 0);
