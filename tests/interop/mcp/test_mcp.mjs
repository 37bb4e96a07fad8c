// test_mcp.mjs: reagent's MCP client against MCP servers the project did
// not write, through the agent loop: reagent (B/reagent) runs tasks whose
// model is the project's mock (B/rg_mock --script), and the scripted
// answers call the servers' tools. Run by tests/cli/test_mcp_interop.sh,
// from the repository root, on the pinned Node (run.sh); prints "ok N -
// what" or "not ok N - what" per check and exits 1 when one failed.
//
// Servers: @modelcontextprotocol/server-everything over stdio and over
// Streamable HTTP, @modelcontextprotocol/server-filesystem over stdio, a
// v1 SDK server whose tools change (lc_server.mjs), a v2 SDK server of
// the stateless 2026-07-28 revision (v2_server.mjs), and a hand-written
// HTTP server that misbehaves (bad_http.mjs); `reagent mcp --call` of
// server-filesystem's dangerous write_file, which asks as an agent's call
// does (y/N on a terminal, through python3's pty; else --approve-all).
// Then the conformance suite (@modelcontextprotocol/conformance) against
// `reagent mcp`.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const run = path.resolve(here, "../run.sh");
const B = process.env.B ?? "objs";
const reagent = path.resolve(B, "reagent");
const mock = path.resolve(B, "rg_mock");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "rg-mcp-interop-"));
const children = [];

let n = 0;
let failed = 0;

function ok(cond, what, detail) {
    n++;
    if (cond) {
        console.log(`ok ${n} - ${what}`);
        return true;
    }
    failed++;
    console.log(`not ok ${n} - ${what}`);
    if (detail !== undefined) {
        const text = typeof detail === "string" ? detail : JSON.stringify(detail, null, 1);
        for (const line of text.split("\n").slice(0, 40)) {
            console.log(`#   ${line}`);
        }
    }
    return false;
}

function eq(got, want, what) {
    return ok(got === want, what, `got:  ${JSON.stringify(got)}\nwant: ${JSON.stringify(want)}`);
}

function has(got, want, what) {
    return ok(typeof got === "string" && got.includes(want), what,
              `got: ${JSON.stringify(got)}\nwithout: ${JSON.stringify(want)}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.on("error", reject);
        s.listen(0, "127.0.0.1", () => {
            const { port } = s.address();
            s.close(() => resolve(port));
        });
    });
}

// a child kept until the end; its output lines collected
function child(cmd, args, opts = {}) {
    const c = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], ...opts });
    c.lines = [];
    c.err = "";
    let buf = "";
    c.stdout.setEncoding("utf8");
    c.stdout.on("data", (d) => {
        buf += d;
        let i;
        while ((i = buf.indexOf("\n")) >= 0) {
            c.lines.push(buf.slice(0, i));
            buf = buf.slice(i + 1);
        }
    });
    c.stderr.setEncoding("utf8");
    c.stderr.on("data", (d) => { c.err += d; });
    children.push(c);
    return c;
}

async function waitFor(pred, what, ms = 30000) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
        if (await pred()) {
            return;
        }
        await sleep(50);
    }
    throw new Error(`timed out waiting for ${what}`);
}

// a server that says it listens on stderr
async function httpServer(args, env = {}) {
    const c = child(run, args, { env: { ...process.env, ...env } });
    await waitFor(() => /listening on/i.test(c.err) || c.exitCode !== null,
                  `${args.join(" ")} to listen`);
    if (c.exitCode !== null) {
        throw new Error(`${args.join(" ")} exited: ${c.err}`);
    }
    return c;
}

// a proxy in front of an HTTP server on port that keeps, for each request,
// its method, its JSON-RPC messages, when it came, and when its answer
// ended (done) or its client went away first (closed); answers are
// passed on as they come (event streams stay streams)
function recordingProxy(port) {
    const rec = [];
    const srv = http.createServer((req, res) => {
        const chunks = [];
        req.on("data", (d) => chunks.push(d));
        req.on("end", () => {
            const body = Buffer.concat(chunks);
            const entry = { http: req.method, at: performance.now(), done: null, closed: null, msgs: [] };
            try {
                const j = JSON.parse(body.toString("utf8"));
                entry.msgs = Array.isArray(j) ? j : [j];
            } catch {
                // a GET or DELETE has no body
            }
            rec.push(entry);
            const up = http.request({ host: "127.0.0.1", port, path: req.url, method: req.method,
                                      headers: { ...req.headers, host: `127.0.0.1:${port}` } }, (ur) => {
                res.writeHead(ur.statusCode, ur.headers);
                ur.on("data", (d) => res.write(d));
                ur.on("end", () => {
                    entry.done = performance.now();
                    res.end();
                });
                ur.on("error", () => res.destroy());
            });
            up.on("error", () => {
                if (!res.headersSent) {
                    res.writeHead(502);
                }
                res.end();
            });
            res.on("close", () => {
                if (entry.done === null) {
                    entry.closed = performance.now();
                }
                up.destroy();
            });
            up.end(body);
        });
    });
    return new Promise((resolve, reject) => {
        srv.on("error", reject);
        srv.listen(0, "127.0.0.1", () => resolve({ srv, port: srv.address().port, rec }));
    });
}

class Mock {
    static async start(script) {
        const m = new Mock();
        const file = path.join(tmp, `script-${n}-${Date.now()}.json`);
        const pf = path.join(tmp, `port-${n}-${Date.now()}`);
        fs.writeFileSync(file, JSON.stringify(script));
        m.proc = child(mock, ["--port", "0", "--port-file", pf, "--quiet", "--script", file]);
        await waitFor(() => fs.existsSync(pf) && fs.readFileSync(pf, "utf8").trim() !== "",
                      "the mock's port");
        m.port = +fs.readFileSync(pf, "utf8").trim();
        return m;
    }

    async get(p) {
        const r = await fetch(`http://127.0.0.1:${this.port}${p}`);
        return r.json();
    }

    // the tool names the last request offered
    async offered() {
        const r = await this.get("/last_request");
        return (r.body?.tools ?? []).map((t) => t.function.name);
    }

    async lastRequest() {
        return (await this.get("/last_request")).body;
    }

    stop() {
        this.proc.kill("SIGTERM");
    }
}

function conf(name, text, mockPort) {
    const file = path.join(tmp, `${name}.conf`);
    fs.writeFileSync(file, `error_log stderr info;\n` +
        `llm mock { base_url http://127.0.0.1:${mockPort ?? 1}/v1; model mock-1; max_retries 0; }\n` +
        text + "\n");
    return file;
}

// runs reagent to its end: {status, stdout, stderr}; the loop goes on
// meanwhile, so that the servers' output is read as it comes
function reagentRun(args, timeoutMs = 120000) {
    return new Promise((resolve) => {
        const c = spawn(reagent, args, { stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        const timer = setTimeout(() => c.kill("SIGKILL"), timeoutMs);
        c.stdout.on("data", (d) => { stdout += d; });
        c.stderr.on("data", (d) => { stderr += d; });
        c.on("close", (status) => {
            clearTimeout(timer);
            resolve({ status, stdout, stderr });
        });
    });
}

// a child's output lines, once it wrote nothing for a while
async function settled(c) {
    let last = -1;
    while (last !== c.lines.length) {
        last = c.lines.length;
        await sleep(300);
    }
    return c.lines;
}


// the tool messages of a transcript, by tool_call_id
function toolResults(file) {
    const t = JSON.parse(fs.readFileSync(file, "utf8"));
    const out = {};
    for (const m of t.messages) {
        if (m.role === "tool") {
            out[m.tool_call_id] = m.content;
        }
    }
    return out;
}

function call(id, name, args = {}) {
    return { id, name, arguments: args };
}

async function scenario(what, fn) {
    try {
        await fn();
    } catch (e) {
        ok(false, `${what}: ${e.message}`, e.stack);
    }
}


// server-everything over stdio and over Streamable HTTP: the same calls
async function everything(transport) {
    const log = path.join(tmp, `everything-${transport}.in`);
    let mcp;
    let server = null;
    let proxy = null;

    if (transport === "stdio") {
        // what reagent sends it and what it answers are kept (tee, in the
        // order they passed) to check the cancellation and the overlap
        mcp = `mcp ev { command /bin/sh -c "tee -a ${log} | ${run} --bin mcp-server-everything stdio | tee -a ${log}"; }`;
    } else {
        const port = await freePort();
        server = await httpServer(["--bin", "mcp-server-everything", "streamableHttp"],
                                  { PORT: String(port) });
        // what reagent sends it, and when its answers end, are kept by a
        // proxy to check the cancellation and the overlap
        proxy = await recordingProxy(port);
        mcp = `mcp ev { url http://127.0.0.1:${proxy.port}/mcp; }`;
    }

    const m = await Mock.start([
        { message: { tool_calls: [
            call("long", "ev__trigger-long-running-operation", { duration: 30, steps: 30 }),
            call("echo", "ev__echo", { message: "hello" }),
            call("sum", "ev__get-sum", { a: "2", b: 40 }),
            call("image", "ev__get-tiny-image"),
            call("struct", "ev__get-structured-content", { location: "Chicago" }),
            call("links", "ev__get-resource-links", { count: 2 }),
            call("ref", "ev__get-resource-reference", { resourceType: "Text", resourceId: 1 }),
            call("iserror", "ev__gzip-file-as-resource", { name: "y.gz", data: "file:///etc/passwd" }),
            call("badarg", "ev__get-sum", { a: 1, b: "x" }),
        ] } },
        { message: { tool_calls: [call("echo2", "ev__echo", { message: "after the timeout" })] } },
        { message: { content: "done" } },
    ]);

    const c = conf(`everything-${transport}`, `${mcp}\n` +
        `agent a { tools ev__*; tool_timeout ev__trigger-long-running-operation 1500ms; }`, m.port);

    const list = await reagentRun(["-c", c, "mcp", "ev"]);
    eq(list.status, 0, `${transport}: reagent mcp ev lists the server's tools (exit 0)`);
    has(list.stdout, `mcp "ev": ready (${transport === "stdio" ? "stdio" : "Streamable HTTP"}, protocol 2025-11-25), 13 tools`,
        `${transport}: ready, protocol 2025-11-25, 13 tools`);
    has(list.stdout, "  ev__echo [ read_only idempotent ] Echoes back the input string",
        `${transport}: ev__echo is read-only (its readOnlyHint)`);

    if (proxy) {
        proxy.rec.length = 0;            // the run's requests only
    }

    const t = path.join(tmp, `everything-${transport}.json`);
    const started = Date.now();
    const r = await reagentRun(["-c", c, "run", "--transcript", t, "use the tools"]);
    const took = Date.now() - started;
    eq(r.status, 0, `${transport}: the task ends done`) || console.log(`# ${r.stderr}`);

    const got = toolResults(t);
    eq(got.echo, "Echo: hello", `${transport}: a text result`);
    eq(got.sum, "The sum of 2 and 40 is 42.", `${transport}: arguments coerced to the tool's schema ("2" -> 2)`);
    eq(got.image, "Here's the image you requested:\n[image image/png, 3.9 KB]\nThe image above is the MCP logo.",
       `${transport}: an image is described in a line`);
    eq(got.struct, "{\"temperature\":36,\"conditions\":\"Light rain / drizzle\",\"humidity\":82}",
       `${transport}: structured content`);
    has(got.links, "[resource link demo://resource/dynamic/blob/1 \"Blob Resource 1\"]",
        `${transport}: resource links described`);
    has(got.ref, "[resource demo://resource/dynamic/text/1, text/plain]\nResource 1: This is a plaintext resource",
        `${transport}: an embedded text resource: its line, then its text`);
    has(got.iserror, "error: ev__gzip-file-as-resource failed: Error processing file file:///etc/passwd",
        `${transport}: an isError result reaches the model as an error`);
    eq(got.badarg, "error: ev__get-sum: parameter \"b\" must be a number, got \"x\"",
       `${transport}: arguments checked against the inputSchema before the call`);
    eq(got.long, "error: ev__trigger-long-running-operation timed out after 1.5s; try a smaller request or another approach",
       `${transport}: a call past its tool_timeout times out`);
    eq(got.echo2, "Echo: after the timeout", `${transport}: the server serves the next turn`);
    ok(took >= 1500, `${transport}: the turn waited for its slowest call (${took} ms >= 1500)`);

    const req = await m.lastRequest();
    const echoTool = req.tools.find((x) => x.function.name === "ev__echo");
    ok(echoTool && echoTool.function.parameters.properties.message.type === "string" &&
       echoTool.function.parameters.$schema === undefined,
       `${transport}: the model is offered the tool's inputSchema (without $schema)`, echoTool);
    eq(req.tools.length, 13, `${transport}: all 13 tools offered for ev__*`);

    if (transport === "stdio") {
        // both directions in one file; a long line may be cut by the
        // other tee's write, so what does not parse is left out
        const wire = fs.readFileSync(log, "utf8").split("\n").flatMap((l) => {
            try {
                return [JSON.parse(l)];
            } catch {
                return [];
            }
        });
        const at = (pred) => wire.findIndex(pred);
        const long = wire.find((x) => x.method === "tools/call" && x.params.name === "trigger-long-running-operation");
        const cancel = wire.find((x) => x.method === "notifications/cancelled");
        ok(long && cancel && cancel.params.requestId === long.id && cancel.params.reason === "timed out",
           "stdio: the timed-out call was cancelled with its request id", { long, cancel });
        const calls = wire.filter((x) => x.method === "tools/call").map((x) => x.id);
        ok(new Set(calls).size === calls.length && calls.length === 9,
           "stdio: 9 calls, each with an id of its own", calls);
        // the long call went first; had the calls run one after another,
        // echo would have been sent only after its cancellation
        const echo = wire.find((x) => x.method === "tools/call" && x.params.name === "echo");
        const echoAnswer = at((x) => x.id === echo?.id && x.result !== undefined);
        const cancelAt = at((x) => x.method === "notifications/cancelled");
        ok(long && echo && echoAnswer >= 0 && at((x) => x === long) < echoAnswer && echoAnswer < cancelAt,
           "stdio: the calls of a turn overlap (echo answered while the long call ran)",
           { echoAnswer, cancelAt });
    } else {
        // reagent mcp and reagent run: a session each, its stream for
        // the server's own messages, and its end told
        const said = (await settled(server)).join("\n");
        const count = (re) => (said.match(re) ?? []).length;
        eq(count(/Session initialized with ID/g), 2, "http: a session per process (initialize, Mcp-Session-Id)");
        ok(count(/Establishing new SSE stream for session/g) >= 2,
           "http: each opened the GET stream for the server's messages");
        eq(count(/Received session termination request/g), 2, "http: each deleted its session at its end");

        // the run's POSTs as the proxy saw them
        const posts = proxy.rec.filter((x) => x.http === "POST");
        const sent = (pred) => posts.find((x) => x.msgs.some(pred));
        const isCall = (name) => (x) => x.method === "tools/call" && x.params?.name === name;
        const longPost = sent(isCall("trigger-long-running-operation"));
        const long = longPost?.msgs.find(isCall("trigger-long-running-operation"));
        const cancelPost = sent((x) => x.method === "notifications/cancelled");
        const cancel = cancelPost?.msgs.find((x) => x.method === "notifications/cancelled");
        ok(long && cancel && cancel.params.requestId === long.id && cancel.params.reason === "timed out",
           "http: the timed-out call was cancelled with its request id", { long, cancel });
        const calls = posts.flatMap((x) => x.msgs).filter((x) => x.method === "tools/call").map((x) => x.id);
        ok(new Set(calls).size === calls.length && calls.length === 9,
           "http: 9 calls, each with an id of its own", calls);
        // when echo's answer ended, the long call and others were in
        // flight (sent, their answers not ended), each with its own id;
        // had the calls run one after another, echo would have been sent
        // only after the long call's cancellation
        const echoPost = sent(isCall("echo"));
        const end = (x) => x.done ?? x.closed ?? Infinity;
        const inFlight = echoPost?.done == null ? [] :
            posts.filter((x) => x.at <= echoPost.done && end(x) >= echoPost.done)
                 .flatMap((x) => x.msgs).filter((x) => x.method === "tools/call").map((x) => x.id);
        ok(longPost && echoPost && cancelPost && longPost.at < echoPost.done && end(longPost) > echoPost.done &&
           echoPost.done < cancelPost.at && inFlight.includes(long.id) && new Set(inFlight).size >= 2,
           `http: the calls of a turn overlap (${new Set(inFlight).size} ids in flight when echo was answered, the long one among them)`,
           { long: longPost, echo: echoPost, cancel: cancelPost?.at, inFlight });
        proxy.srv.close();
        server.kill("SIGTERM");
    }

    m.stop();
}


// server-filesystem: real file tools, a destructive one needing approval
async function filesystem() {
    const root = path.join(tmp, "fsroot");
    fs.mkdirSync(root, { recursive: true });
    fs.writeFileSync(path.join(root, "a.txt"), "alpha\n");

    const script = [
        { message: { tool_calls: [
            call("list", "fs__list_directory", { path: root }),
            call("read", "fs__read_text_file", { path: path.join(root, "a.txt") }),
            call("outside", "fs__read_text_file", { path: "/etc/passwd" }),
            call("write", "fs__write_file", { path: path.join(root, "b.txt"), content: "beta\n" }),
            call("move", "fs__move_file", { source: path.join(root, "a.txt"), destination: path.join(root, "c.txt") }),
        ] } },
        { message: { content: "done" } },
    ];
    const m = await Mock.start(script);
    const mcp = `mcp fs { command ${run} --bin mcp-server-filesystem ${root}; }`;

    const c1 = conf("fs1", `${mcp}\nagent a { tools fs__read_text_file fs__list_directory fs__write_file fs__move_file; }`, m.port);
    const t1 = path.join(tmp, "fs1.json");
    const r1 = await reagentRun(["-c", c1, "run", "--transcript", t1, "files"]);
    eq(r1.status, 0, "filesystem: the task ends done");
    const g1 = toolResults(t1);
    has(g1.list, "[FILE] a.txt", "filesystem: list_directory");
    eq(g1.read, "alpha\n", "filesystem: read_text_file's text (its structuredContent not repeated)");
    has(g1.outside, "error: fs__read_text_file failed: Access denied - path outside allowed directories",
        "filesystem: a path outside its root is the server's error");
    eq(g1.write, "error: fs__write_file is a dangerous tool and was not approved; do without it or ask the user",
       "filesystem: write_file (destructiveHint) needs approval");
    ok(!fs.existsSync(path.join(root, "b.txt")), "filesystem: ... and nothing was written");
    has(g1.move, "was not approved", "filesystem: move_file needs approval too");

    const c2 = conf("fs2", `${mcp}\nagent a { tools fs__*; approve fs__write_file; }`, m.port);
    const t2 = path.join(tmp, "fs2.json");
    const r2 = await reagentRun(["-c", c2, "run", "--transcript", t2, "files"]);
    eq(r2.status, 0, "filesystem: with approve fs__write_file, the task ends done");
    const g2 = toolResults(t2);
    has(g2.write, "Successfully wrote to", "filesystem: the approved write ran");
    eq(fs.existsSync(path.join(root, "b.txt")) && fs.readFileSync(path.join(root, "b.txt"), "utf8"), "beta\n",
       "filesystem: ... and wrote the file");
    has(g2.move, "was not approved", "filesystem: what is not approved still is not");
    m.stop();
}


// reagent mcp --call of a dangerous tool: the operator is asked, as for
// an agent's call; without a terminal it runs only with --approve-all
async function callApproval() {
    const root = path.join(tmp, "callroot");
    fs.mkdirSync(root, { recursive: true });
    const c = conf("call", `mcp fs { command ${run} --bin mcp-server-filesystem ${root}; }\n` +
        `agent a { tools fs__*; approve fs__write_file; }`);
    const write = (name) => ["-c", c, "mcp", "--call", "fs__write_file", "--args",
        JSON.stringify({ path: path.join(root, name), content: `${name}\n` }), "fs"];
    const wrote = (name) => fs.existsSync(path.join(root, name));

    const r1 = await reagentRun(write("a.txt"));
    eq(r1.status, 1, "mcp --call: a dangerous tool without a terminal is refused (exit 1)");
    has(r1.stderr, "\"fs__write_file\" is a dangerous tool and there is no terminal to ask: not run " +
        "(--approve-all runs it)", "mcp --call: ... saying why and what runs it");
    ok(!wrote("a.txt"), "mcp --call: ... and nothing was written (an agent's approve is not the operator's)");

    const r2 = await reagentRun([...write("a.txt").slice(0, -1), "--approve-all", "fs"]);
    eq(r2.status, 0, "mcp --call --approve-all: the dangerous tool runs");
    has(r2.stdout, "Successfully wrote to", "mcp --call --approve-all: its answer");
    ok(wrote("a.txt"), "mcp --call --approve-all: ... and the file is written");

    const r3 = await reagentRun(["-c", c, "mcp", "--call", "fs__read_text_file", "--args",
        JSON.stringify({ path: path.join(root, "a.txt") }), "fs"]);
    eq(r3.status, 0, "mcp --call: a tool that is not dangerous runs without a question");
    eq(r3.stdout, "a.txt\n", "mcp --call: ... and answers");

    // on a terminal: python3 runs it on a pty and answers the question
    const py = `
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out, answered, end = b"", False, time.time() + 120
while time.time() < end:
    if not select.select([fd], [], [], 1)[0]:
        continue
    try:
        d = os.read(fd, 65536)
    except OSError:
        break
    if not d:
        break
    out += d
    if not answered and b"[y/N]" in out:
        os.write(fd, os.environ["RG_ANSWER"].encode() + b"\\n")
        answered = True
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
`;
    const onTerminal = (args, answer) => spawnSync("python3", ["-c", py, reagent, ...args],
        { encoding: "utf8", timeout: 150000, env: { ...process.env, RG_ANSWER: answer } });
    if (spawnSync("python3", ["-c", "import pty"]).status !== 0) {
        console.log(`ok ${++n} - mcp --call on a terminal # skip no python3 with pty`);
        return;
    }

    const no = onTerminal(write("b.txt"), "n");
    has(no.stdout, "\"fs__write_file\" is a dangerous tool; it is to run with {\"path\":",
        "mcp --call on a terminal: it asks, naming the tool and its arguments");
    has(no.stdout, "allow it? [y/N]", "mcp --call on a terminal: ... y/N, as for an agent's call");
    eq(no.status, 1, "mcp --call on a terminal: no is not run (exit 1)");
    ok(!wrote("b.txt"), "mcp --call on a terminal: ... nothing written");

    const yes = onTerminal(write("b.txt"), "y");
    eq(yes.status, 0, "mcp --call on a terminal: yes runs it") || console.log(`# ${yes.stdout}`);
    has(yes.stdout, "Successfully wrote to", "mcp --call on a terminal: ... its answer");
    ok(wrote("b.txt"), "mcp --call on a terminal: ... and the file is written");
}


// a server that dies between two turns comes back
async function restart() {
    const pidfile = path.join(tmp, "ev.pid");
    const m = await Mock.start([
        { message: { tool_calls: [call("before", "ev__echo", { message: "before" })] } },
        { delay_ms: 4000, message: { tool_calls: [call("after", "ev__echo", { message: "after" })] } },
        { message: { content: "done" } },
    ]);
    const c = conf("restart",
        `mcp ev { command /bin/sh -c "echo $$ > ${pidfile}; exec ${run} --bin mcp-server-everything stdio"; restart_backoff 300ms; }\n` +
        `agent a { tools ev__echo; }`, m.port);
    const t = path.join(tmp, "restart.json");
    const p = reagentRun(["-c", c, "run", "--transcript", t, "twice"]);

    // the second answer is asked for: the first turn is over
    await waitFor(async () => (await m.get("/stats")).requests >= 2, "the second model call", 60000);
    const first = +fs.readFileSync(pidfile, "utf8");
    process.kill(first, "SIGKILL");

    const r = await p;
    eq(r.status, 0, "restart: the task ends done");
    const got = toolResults(t);
    eq(got.before, "Echo: before", "restart: the call before it died");
    eq(got.after, "Echo: after", "restart: the call after it came back");
    const second = +fs.readFileSync(pidfile, "utf8");
    ok(second !== first, `restart: another process serves (${first}, then ${second})`);
    has(r.stderr, "its process was killed by signal 9 (Killed); starting it again in 0.3s",
        "restart: the log says it died and when it starts again");
    // server-everything says it starts on stderr: each process's line is
    // logged as it comes, and the dead one's again with its death
    const banner = r.stderr.split("\n").filter((l) => l.includes("mcp \"ev\" stderr: Starting default (STDIO) server"));
    eq(banner.length, 2, "restart: each process's stderr reaches the log");
    has(r.stderr, "mcp \"ev\": its process was killed by signal 9 (Killed); its stderr said: Starting default (STDIO) server",
        "restart: the dead process's last stderr lines are logged with its death");
    m.stop();
}


// server-everything over HTTP, stopped between two turns and started
// again on the same port: its sessions are gone with it
async function restartHttp() {
    const port = await freePort();
    const env = { PORT: String(port) };
    let server = await httpServer(["--bin", "mcp-server-everything", "streamableHttp"], env);
    const m = await Mock.start([
        { message: { tool_calls: [call("before", "ev__echo", { message: "before" })] } },
        { delay_ms: 5000, message: { tool_calls: [call("after", "ev__echo", { message: "after" })] } },
        { message: { content: "done" } },
    ]);
    const c = conf("restart-http", `mcp ev { url http://127.0.0.1:${port}/mcp; restart_backoff 200ms 1s; }\n` +
        `agent a { tools ev__echo; }`, m.port);
    const t = path.join(tmp, "restart-http.json");
    const p = reagentRun(["-c", c, "run", "--transcript", t, "twice"]);

    await waitFor(async () => (await m.get("/stats")).requests >= 2, "the second model call", 60000);
    server.kill("SIGKILL");
    await new Promise((r) => (server.exitCode !== null ? r() : server.on("exit", r)));
    await sleep(500);
    server = await httpServer(["--bin", "mcp-server-everything", "streamableHttp"], env);

    const r = await p;
    eq(r.status, 0, "restart over HTTP: the task ends done") || console.log(`# ${r.stderr}`);
    const got = toolResults(t);
    eq(got.before, "Echo: before", "restart over HTTP: the call before it died");
    eq(got.after, "Echo: after", "restart over HTTP: the call after it came back (a new session)");
    const said = (await settled(server)).join("\n");
    ok(/Session initialized with ID/.test(said), "restart over HTTP: reagent initialized a session with the new process");
    ok(/mcp "ev": (cannot reach http:\/\/127\.0\.0\.1:\d+\/mcp|the server no longer knows the session)[^\n]*; starting it again in/.test(r.stderr),
       "restart over HTTP: the log says it went away and when it starts again", r.stderr.split("\n").filter((l) => l.includes("mcp")));
    server.kill("SIGTERM");
    m.stop();
}


// tools/list_changed from the v1 SDK: the next session gets the new tool
async function listChanged() {
    const m = await Mock.start([
        { message: { tool_calls: [call("add", "lc__add_tool")] } },
        { delay_ms: 300, message: { content: "done" } },
    ]);
    const c = conf("lc", `mcp lc { command ${run} ${path.join(here, "lc_server.mjs")}; }\nagent a { tools lc__*; }`, m.port);
    const tasks = path.join(tmp, "lc.jsonl");
    fs.writeFileSync(tasks, '{"id":"one","input":"add"}\n{"id":"two","input":"again"}\n');
    const r = await reagentRun(["-c", c, "batch", "--concurrency", "1", tasks]);
    eq(r.status, 0, "list_changed: both tasks end done");
    has(r.stderr, "mcp \"lc\": 2 tools now; sessions that start from now on get them",
        "list_changed: the new list is read");
    const offered = await m.offered();
    ok(offered.includes("lc__late") && offered.includes("lc__add_tool"),
       "list_changed: the second task is offered the new tool", offered);
    m.stop();
}


// the stateless 2026-07-28 revision (v2 SDK): discovered, called, its
// headers, and list_changed through subscriptions/listen
async function stateless() {
    const port = await freePort();
    const server = await httpServer([path.join(here, "v2_server.mjs"), String(port)]);
    const m = await Mock.start([
        { message: { tool_calls: [call("echo", "v2__echo", { message: "modern" }),
                                  call("fail", "v2__fail"), call("add", "v2__add_tool")] } },
        { delay_ms: 500, message: { content: "done" } },
    ]);
    const c = conf("v2", `mcp v2 { url http://127.0.0.1:${port}/mcp; }\n` +
        `agent a { tools v2__*; approve v2__add_tool v2__fail; }`, m.port);
    const tasks = path.join(tmp, "v2.jsonl");
    fs.writeFileSync(tasks, '{"id":"one","input":"a"}\n{"id":"two","input":"b"}\n');
    const t = await reagentRun(["-c", c, "batch", "--concurrency", "1", tasks]);
    eq(t.status, 0, "2026-07-28: both tasks end done");
    has(t.stderr, "mcp \"v2\": ready (Streamable HTTP, protocol 2026-07-28), 3 tools",
        "2026-07-28: negotiated by server/discover");

    const reqs = (await settled(server)).map((l) => JSON.parse(l));
    ok(reqs.length > 0 && reqs.every((x) => x.version === "2026-07-28" && x.mcpMethod === x.method),
       "2026-07-28: every request says its version and method in headers", reqs);
    ok(reqs.filter((x) => x.method === "initialize").length === 0, "2026-07-28: no initialize");
    const echo = reqs.find((x) => x.method === "tools/call");
    eq(echo?.mcpName !== null && ["echo", "fail", "add_tool"].includes(echo.mcpName), true,
       "2026-07-28: tools/call names its tool in Mcp-Name");
    ok(reqs.some((x) => x.method === "subscriptions/listen"), "2026-07-28: subscriptions/listen is open");

    const offered = await m.offered();
    ok(offered.includes("v2__added"), "2026-07-28: the tool added is offered to the next task", offered);

    // no annotations: dangerous, and there is no terminal to ask
    const one = await reagentRun(["-c", c, "mcp", "--call", "v2__fail", "--approve-all", "v2"]);
    eq(one.stdout.trim(), "error: v2__fail failed: deliberate failure", "2026-07-28: an isError result");
    eq(one.status, 2, "2026-07-28: reagent mcp --call of a failing tool exits 2");
    server.kill("SIGTERM");
    m.stop();
}


// a Streamable HTTP server that misbehaves costs its calls an error
async function misbehaving() {
    const port = await freePort();
    const server = await httpServer([path.join(here, "bad_http.mjs"), String(port)]);
    process.env.RG_TEST_MCP_BEARER = "tok-interop-7d1e0c55";
    const m = await Mock.start([
        { message: { tool_calls: ["ok", "sse", "status500", "cut", "resume", "hang", "garbage", "big"]
                                  .map((x) => call(x, `bad__${x}`)) } },
        { message: { tool_calls: [call("expire", "bad__expire")] } },
        { delay_ms: 1500, message: { tool_calls: [call("again", "bad__ok")] } },
        { message: { content: "done" } },
    ]);
    const c = conf("bad", `mcp bad { url http://127.0.0.1:${port}/mcp; max_message 1m; restart_backoff 200ms; ` +
        `header Authorization "Bearer $RG_TEST_MCP_BEARER"; }\n` +
        `agent a { tools bad__*; tool_timeout bad__hang 1s; repeat_window 0; dedupe off; }`, m.port);
    const t = path.join(tmp, "bad.json");
    const r = await reagentRun(["-c", c, "run", "--transcript", t, "misbehave"]);
    eq(r.status, 0, "misbehaving: the task ends done") || console.log(`# ${r.stderr}`);
    const got = toolResults(t);
    eq(got.ok, "ok over JSON", "misbehaving: an answer as a JSON body");
    eq(got.sse, "ok over SSE", "misbehaving: an answer on an event stream, after its priming event");
    eq(got.status500, "error: bad__status500 failed: HTTP 500: internal boom", "misbehaving: a 500");
    has(got.cut, "error: bad__cut failed: the server's stream broke before it answered",
        "misbehaving: a stream cut in the middle");
    eq(got.resume, "resumed answer", "misbehaving: a stream closed early is resumed (GET, Last-Event-ID)");
    has(got.hang, "error: bad__hang timed out after 1s", "misbehaving: a hang times out");
    eq(got.garbage, "error: bad__garbage failed: the server's answer did not answer the request",
       "misbehaving: a body that is not JSON");
    eq(got.big, "error: bad__big failed: its answer is larger than max_message (1048576 bytes)",
       "misbehaving: an answer over max_message");
    has(got.expire, "the server no longer knows the session (HTTP 404); reagent starts a new one",
        "misbehaving: a session the server forgot");
    eq(got.again, "ok over JSON", "misbehaving: ... and the new session serves");

    const reqs = (await settled(server)).map((l) => JSON.parse(l));
    const resumed = reqs.find((x) => x.http === "GET" && x.lastEventId);
    ok(resumed !== undefined, "misbehaving: the resume was a GET with Last-Event-ID", reqs.filter((x) => x.http === "GET"));
    const hang = reqs.find((x) => x.method === "tools/call" && x.params?.name === "hang");
    ok(reqs.some((x) => x.method === "notifications/cancelled" && x.params.requestId === hang?.id),
       "misbehaving: the timed-out call was cancelled with its id");
    ok(reqs.filter((x) => x.method === "initialize").length === 2, "misbehaving: a second initialize after the 404");
    ok(reqs.every((x) => x.auth === "Bearer tok-interop-7d1e0c55"), "misbehaving: every request has the header");
    ok(reqs.filter((x) => !["initialize", "server/discover"].includes(x.method) && x.http === "POST")
           .every((x) => x.session !== null),
       "misbehaving: every request after initialize carries the session id",
       reqs.filter((x) => x.session === null));
    ok(reqs.some((x) => x.http === "DELETE"), "misbehaving: the session is deleted at the end");
    ok(!r.stderr.includes("tok-interop-7d1e0c55") && !fs.readFileSync(t, "utf8").includes("tok-interop-7d1e0c55"),
       "misbehaving: the header's secret is in no log or transcript");
    server.kill("SIGTERM");
    m.stop();
}


// the conformance suite against `reagent mcp`: the client scenarios that
// reagent's client can take part in pass; elicitation is declined (no
// user to ask: the server is told the method is not offered); auth/* are
// not run, as reagent has no OAuth (a url server gets static headers).
// Each scenario's own count of checks is printed for the test's log.
const conformanceRun = ["initialize", "tools_call", "sse-retry"];
const conformanceDeclined = ["elicitation-sep1034-client-defaults"];

function conformanceScenario(scenario) {
    const client = `sh ${path.join(here, "conformance_client.sh")}`;
    const out = path.join(tmp, `conformance-${scenario}`);
    const r = spawnSync(run, ["--bin", "conformance", "client", "--command", client,
                              "--scenario", scenario, "-o", out],
                        { encoding: "utf8", timeout: 120000,
                          env: { ...process.env, REAGENT: reagent } });
    const files = fs.existsSync(out) ? fs.readdirSync(out, { recursive: true }) : [];
    const file = files.find((f) => f.endsWith("checks.json"));
    const checks = file ? JSON.parse(fs.readFileSync(path.join(out, file), "utf8")) : [];
    // eslint-disable-next-line no-control-regex
    const text = `${r.stdout ?? ""}${r.stderr ?? ""}`.replace(/\x1b\[[0-9;]*m/g, "");
    const passed = text.match(/Passed: \d+\/\d+[^\n]*/)?.[0] ?? "no count of checks";
    console.log(`# conformance ${scenario}: ${passed}`);
    return { r, checks, text };
}

async function conformance() {
    for (const scenario of conformanceRun) {
        const { r, checks, text } = conformanceScenario(scenario);
        const want = {
            initialize: ["mcp-client-initialization"],
            tools_call: ["tool-add-numbers"],
            "sse-retry": ["client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id"],
        }[scenario];
        for (const id of want) {
            const c = checks.find((x) => x.id === id);
            eq(c?.status, "SUCCESS", `conformance ${scenario}: ${id}`) ||
                console.log(`#   ${JSON.stringify(c ?? checks)}\n#   ${text.slice(-800)}`);
        }
        ok(checks.every((x) => ["SUCCESS", "INFO"].includes(x.status)),
           `conformance ${scenario}: no check failed or warned`,
           checks.filter((x) => !["SUCCESS", "INFO"].includes(x.status)));
        eq(r.status, 0, `conformance ${scenario}: the suite passes (exit 0)`);
    }

    // elicitation: declined at once with the JSON-RPC "method not found",
    // which fails the scenario's checks, as it must
    for (const scenario of conformanceDeclined) {
        const { r, checks } = conformanceScenario(scenario);
        const general = checks.find((x) => x.id === "client-elicitation-sep1034-general");
        ok(r.status !== 0 && general?.status === "FAILURE" &&
           /-32601: reagent does not offer this method/.test(general.errorMessage ?? ""),
           `conformance ${scenario}: declined (-32601), as reagent does not support elicitation`, general ?? checks);
    }

    // the pinned suite has no client scenario this test does not know of
    const list = spawnSync(run, ["--bin", "conformance", "list"], { encoding: "utf8", timeout: 60000 });
    const clients = (list.stdout ?? "").split(/Client scenarios[^\n]*\n/)[1] ?? "";
    const names = [...clients.matchAll(/^\s*- (\S+)/gm)].map((x) => x[1]);
    const auth = names.filter((x) => x.startsWith("auth/"));
    const unknown = names.filter((x) => !x.startsWith("auth/") && !conformanceRun.includes(x) &&
                                        !conformanceDeclined.includes(x));
    console.log(`# conformance: ${names.length} client scenarios; run ${conformanceRun.length} (pass), ` +
                `${conformanceDeclined.length} declined (elicitation), ${auth.length} auth/* not run (no OAuth)`);
    ok(names.length > 0 && unknown.length === 0,
       `conformance: every client scenario is run or known as not supported (${names.length})`, unknown);
}


const only = process.argv.slice(2);
const all = {
    stdio: () => everything("stdio"),
    http: () => everything("http"),
    filesystem,
    callApproval,
    restart,
    restartHttp,
    listChanged,
    stateless,
    misbehaving,
    conformance,
};

try {
    for (const [name, fn] of Object.entries(all)) {
        if (only.length === 0 || only.includes(name)) {
            await scenario(name, fn);
        }
    }
} finally {
    for (const c of children) {
        if (c.exitCode === null) {
            c.kill("SIGKILL");
        }
    }
    if (!process.env.RG_KEEP_TMP) {
        fs.rmSync(tmp, { recursive: true, force: true });
    }
}

console.log(`# ${n} checks, ${failed} failed`);
process.exit(failed ? 1 : 0);
