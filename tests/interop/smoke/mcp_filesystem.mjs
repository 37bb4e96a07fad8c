// mcp_filesystem.mjs: @modelcontextprotocol/server-filesystem starts over
// stdio with the pinned node on a temporary folder and lists it through
// tools/call list_directory. Exits 1 on any failure.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { mcpSpawn, mcpInitialize } from "../lib/mcp_stdio.mjs";

const server = fileURLToPath(new URL(
    "../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    import.meta.url));

const root = fs.mkdtempSync(path.join(os.tmpdir(), "rg-interop-fs-"));
fs.writeFileSync(path.join(root, "hello.txt"), "hello\n");

let failed = false;
function check(ok, what, got) {
    if (!ok) {
        console.log(`# server-filesystem: ${what}: ${JSON.stringify(got)}`);
        throw new Error(what);
    }
}

const s = mcpSpawn(process.execPath, [server, root], { timeoutMs: 60000 });
try {
    const init = await mcpInitialize(s);
    check(init.result?.protocolVersion === "2025-06-18" &&
          init.result.capabilities?.tools !== undefined,
          "initialize", init);

    const list = await s.request("tools/list", {});
    const names = (list.result?.tools ?? []).map((t) => t.name);
    check(names.includes("list_directory") && names.includes("read_text_file"),
          "tools/list lacks list_directory or read_text_file", names);

    const call = await s.request("tools/call", {
        name: "list_directory", arguments: { path: root },
    });
    check(call.result?.content?.[0]?.text === "[FILE] hello.txt",
          "tools/call list_directory", call);
    console.log(`# server-filesystem ${init.result.serverInfo?.version}: ` +
                `${names.length} tools, list_directory answered`);
} catch (e) {
    failed = true;
    console.log(`# server-filesystem: ${e.message}`);
} finally {
    await s.close();
    fs.rmSync(root, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
