// mcp_everything.mjs: @modelcontextprotocol/server-everything, started as a
// configuration would start it (tests/interop/run.sh --bin
// mcp-server-everything stdio), answers initialize, tools/list and a
// tools/call of echo over stdio. Exits 1 on any failure.

import { fileURLToPath } from "node:url";
import { mcpSpawn, mcpInitialize } from "../lib/mcp_stdio.mjs";

const run = fileURLToPath(new URL("../run.sh", import.meta.url));

let failed = false;
function check(ok, what, got) {
    if (!ok) {
        console.log(`# server-everything: ${what}: ${JSON.stringify(got)}`);
        throw new Error(what);
    }
}

const s = mcpSpawn(run, ["--bin", "mcp-server-everything", "stdio"],
                   { timeoutMs: 60000 });
try {
    const init = await mcpInitialize(s, { protocolVersion: "2025-06-18" });
    check(init.result?.protocolVersion === "2025-06-18",
          "initialize did not agree on 2025-06-18", init);
    check(init.result.serverInfo?.name === "mcp-servers/everything" &&
          init.result.capabilities?.tools !== undefined,
          "initialize: unexpected serverInfo or capabilities", init.result);

    const list = await s.request("tools/list", {});
    const names = (list.result?.tools ?? []).map((t) => t.name);
    check(names.includes("echo") &&
          names.includes("trigger-long-running-operation"),
          "tools/list lacks echo or trigger-long-running-operation", names);

    const call = await s.request("tools/call", {
        name: "echo", arguments: { message: "smoke" },
    });
    check(call.result?.content?.[0]?.text === "Echo: smoke" &&
          call.result.isError !== true,
          "tools/call echo", call);
    console.log(`# server-everything ${init.result.serverInfo.version}: ` +
                `${names.length} tools, echo answered`);
} catch (e) {
    failed = true;
    console.log(`# server-everything: ${e.message}`);
} finally {
    await s.close();
}
process.exit(failed ? 1 : 0);
