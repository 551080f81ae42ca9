// postinstall of the npm package mcp-budget: on Unix, puts this platform's native binary in
// place of the JS launcher bin/mcp-budget.js (a hard link, else a copy), so starting mcp-budget
// starts no Node at all (esbuild does the same). Checked by running it; on any failure, and
// on Windows or with --ignore-scripts, the JS launcher stays and works as well (one Node start
// more). Prints nothing.
"use strict";
const { execFileSync } = require("child_process");
const fs = require("fs");
const path = require("path");

try {
  if (process.platform !== "win32") {
    const pkg = `mcp-budget-${process.platform}-${process.arch}`;
    const native = path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", "mcp-budget");
    const shim = path.join(__dirname, "bin", "mcp-budget.js");
    const tmp = `${shim}.native`;
    fs.rmSync(tmp, { force: true });
    try {
      fs.linkSync(native, tmp);
    } catch (_) {
      fs.copyFileSync(native, tmp);
    }
    fs.chmodSync(tmp, 0o755);
    const version = require("./package.json").version;
    const out = execFileSync(tmp, ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    if (out.trim() !== `mcp-budget ${version}`) {
      throw new Error(`unexpected version ${out}`);
    }
    fs.renameSync(tmp, shim);
  }
} catch (_) {
  // The JS launcher stays.
}
