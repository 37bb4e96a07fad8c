// mcp_stdio.mjs: a small JSON-RPC client for an MCP server over stdio (one
// JSON message a line on the child's stdin and stdout), for tests that
// talk to a server directly. It keeps every message the server sent, in
// order, so a test can assert on notifications as well as answers.
//
//   const s = mcpSpawn(cmd, args, { timeoutMs });
//   const init = await s.request("initialize", {...});
//   s.notify("notifications/initialized");
//   await s.waitFor((m) => m.method === "notifications/tools/list_changed");
//   await s.close();

import { spawn } from "node:child_process";

export function mcpSpawn(cmd, args, opts = {}) {
    const timeoutMs = opts.timeoutMs ?? 30000;
    const child = spawn(cmd, args, {
        stdio: ["pipe", "pipe", "pipe"],
        env: opts.env ?? process.env,
        cwd: opts.cwd,
    });
    const messages = [];
    const waiters = [];
    let stderr = "";
    let buf = "";
    let nextId = 1;
    let exited = null;

    function deliver(msg) {
        messages.push(msg);
        for (const w of waiters.slice()) {
            if (w.pred(msg)) {
                waiters.splice(waiters.indexOf(w), 1);
                clearTimeout(w.timer);
                w.resolve(msg);
            }
        }
    }

    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d) => {
        buf += d;
        let i;
        while ((i = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, i).trim();
            buf = buf.slice(i + 1);
            if (line === "") {
                continue;
            }
            let msg;
            try {
                msg = JSON.parse(line);
            } catch {
                deliver({ notJson: line });
                continue;
            }
            deliver(msg);
        }
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d) => { stderr += d; });
    // a write after the child left must not kill the test with EPIPE
    child.stdin.on("error", () => {});
    child.on("exit", (code, signal) => {
        exited = { code, signal };
        for (const w of waiters.splice(0)) {
            clearTimeout(w.timer);
            w.reject(new Error(`server exited (${code ?? signal}) while ` +
                               `waiting for ${w.what}; stderr: ${stderr}`));
        }
    });

    // resolves with the first message, already received or to come, that
    // pred accepts
    function waitFor(pred, what = "a message", ms = timeoutMs) {
        const seen = messages.find(pred);
        if (seen !== undefined) {
            return Promise.resolve(seen);
        }
        if (exited !== null) {
            return Promise.reject(new Error(`server had exited before ${what}`));
        }
        return new Promise((resolve, reject) => {
            const w = { pred, resolve, reject, what };
            w.timer = setTimeout(() => {
                waiters.splice(waiters.indexOf(w), 1);
                reject(new Error(`no ${what} within ${ms} ms; stderr: ` +
                                 stderr));
            }, ms);
            waiters.push(w);
        });
    }

    function send(msg) {
        child.stdin.write(JSON.stringify(msg) + "\n");
    }

    // sends a request and resolves with the whole answer (result or error)
    function request(method, params, ms = timeoutMs) {
        const id = nextId++;
        send({ jsonrpc: "2.0", id, method, ...(params && { params }) });
        return waitFor((m) => m.id === id && m.method === undefined,
                       `the answer to ${method} (id ${id})`, ms);
    }

    function notify(method, params) {
        send({ jsonrpc: "2.0", method, ...(params && { params }) });
    }

    // closes stdin (the stdio way to end a session); SIGTERM if the child
    // has not left after graceMs, SIGKILL after twice that
    function close(graceMs = 2000) {
        if (exited !== null) {
            return Promise.resolve(exited);
        }
        return new Promise((resolve) => {
            const term = setTimeout(() => child.kill("SIGTERM"), graceMs);
            const kill = setTimeout(() => child.kill("SIGKILL"), 2 * graceMs);
            child.on("exit", (code, signal) => {
                clearTimeout(term);
                clearTimeout(kill);
                resolve({ code, signal });
            });
            child.stdin.end();
        });
    }

    return {
        child, messages, request, notify, send, waitFor, close,
        stderr: () => stderr,
    };
}

// the initialize request and notifications/initialized of a plain client
export async function mcpInitialize(s, opts = {}) {
    const init = await s.request("initialize", {
        protocolVersion: opts.protocolVersion ?? "2025-06-18",
        capabilities: opts.capabilities ?? {},
        clientInfo: { name: "reagent-interop-test", version: "0" },
    });
    s.notify("notifications/initialized");
    return init;
}
