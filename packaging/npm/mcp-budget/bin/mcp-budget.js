#!/usr/bin/env node
// The npm launcher of mcp-budget: runs the native binary of this platform's package
// (mcp-budget-<platform>-<arch>, an optionalDependency npm picks by its os/cpu fields) with
// stdio inherited, so the MCP protocol on stdin/stdout never passes through Node. It forwards
// SIGINT/SIGTERM/SIGHUP to the binary and exits with the binary's code, or re-raises its signal.
// Nothing is written to stdout, ever: in `proxy` mode stdout is the protocol channel.
// On Unix the postinstall (install.js) replaces this file with the binary itself; this launcher
// runs where it cannot (Windows, --ignore-scripts).
"use strict";
const { spawn } = require("child_process");
const os = require("os");
const path = require("path");

const platformPackage = `mcp-budget-${process.platform}-${process.arch}`;
const exe = process.platform === "win32" ? "mcp-budget.exe" : "mcp-budget";

let binary;
try {
  binary = path.join(path.dirname(require.resolve(`${platformPackage}/package.json`)), "bin", exe);
} catch (_) {
  process.stderr.write(
    `mcp-budget: no binary for ${process.platform}-${process.arch}: the package ${platformPackage} ` +
      "is not installed (not published for this platform, or npm skipped optional dependencies: " +
      "reinstall without --omit=optional / --no-optional). Other ways in: " +
      "`uvx mcp-budget`, or `cargo install mcp-budget`.\n",
  );
  process.exit(1);
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit", windowsHide: true });
const forward = (signal) => {
  // The binary may have exited already; a failed kill is no news.
  try {
    child.kill(signal);
  } catch (_) {}
};
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, forward);
}
child.on("error", (err) => {
  process.stderr.write(`mcp-budget: cannot run ${binary}: ${err.message}\n`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so the parent sees what the binary saw.
    for (const s of ["SIGINT", "SIGTERM", "SIGHUP"]) {
      process.removeAllListeners(s);
    }
    // Should the signal not end Node, the shell's convention: 128 + its number.
    process.exitCode = 128 + (os.constants.signals[signal] || 0);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});
