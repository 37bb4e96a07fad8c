// check_tree.mjs: checks that tests/interop/node_modules holds exactly the
// versions package-lock.json pins, that this node is the pinned one, and
// that every installed package's "engines" accepts it. Prints one line per
// problem and exits 1 when there is any, so that a stale or partial
// install (package-lock.json changed, npm ci not run again) or a package
// bumped past the pinned Node is caught before a test trips on it.

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(path.join(dir, "package.json"));
const semver = require("semver");

const lock = JSON.parse(fs.readFileSync(path.join(dir, "package-lock.json"),
                                        "utf8"));
const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"),
                                            "utf8"));
const problems = [];

// the Node package for this platform, as package.json pins it
const nodePkg = `node-${process.platform}-${process.arch}`;
const pinned = manifest.optionalDependencies?.[nodePkg];
if (pinned === undefined) {
    problems.push(`package.json pins no ${nodePkg} for this platform`);
} else if (process.version !== `v${pinned}`) {
    problems.push(`running node ${process.version}, package.json pins ` +
                  `${nodePkg}@${pinned}`);
}

function matches(want, have) {
    if (want === undefined) {
        return true;
    }
    const list = Array.isArray(want) ? want : [want];
    return list.includes(have) ||
           list.some((w) => w.startsWith("!")) && !list.includes(`!${have}`);
}

for (const [key, entry] of Object.entries(lock.packages)) {
    if (key === "" || entry.link) {
        continue;
    }
    const name = key.slice(key.lastIndexOf("node_modules/") + 13);
    // an optional package for another platform is not installed
    if (entry.optional && !(matches(entry.os, process.platform) &&
                            matches(entry.cpu, process.arch))) {
        continue;
    }
    let installed;
    try {
        installed = JSON.parse(fs.readFileSync(path.join(dir, key,
                                                         "package.json"),
                                               "utf8"));
    } catch {
        problems.push(`${name}@${entry.version} is not installed (${key})`);
        continue;
    }
    if (installed.version !== entry.version) {
        problems.push(`${name}: installed ${installed.version}, locked ` +
                      `${entry.version}`);
    }
    const range = installed.engines?.node;
    if (range !== undefined &&
        !semver.satisfies(process.version, range, { includePrerelease: true }))
    {
        problems.push(`${name}@${installed.version} wants node ${range}, ` +
                      `this node is ${process.version}`);
    }
}

for (const p of problems) {
    console.log(`check_tree: ${p}`);
}
process.exit(problems.length === 0 ? 0 : 1);
