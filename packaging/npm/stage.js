#!/usr/bin/env node
// Lays out the npm packages of mcp-budget for `npm pack` (plain Node, no dependencies). Used by
// scripts/package.sh (linux-x64 here) and .github/workflows/release.yml (every platform).
//   node packaging/npm/stage.js launcher <version> <out dir>
//   node packaging/npm/stage.js platform <version> <os> <cpu> <binary> <out dir>
// The launcher `mcp-budget` lists one optionalDependency per platform at the same version; npm
// installs only the one whose `os`/`cpu` match the machine (as Biome and esbuild do).
"use strict";
const fs = require("fs");
const path = require("path");

// [process.platform, process.arch] of every platform release.yml builds.
const PLATFORMS = [
  ["linux", "x64"],
  ["linux", "arm64"],
  ["darwin", "x64"],
  ["darwin", "arm64"],
  ["win32", "x64"],
];
const common = {
  license: "MIT OR Apache-2.0",
  repository: { type: "git", url: "https://example.invalid/mcp-budget" },
  homepage: "https://example.invalid/mcp-budget",
};

function write(dir, file, text, mode) {
  fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  fs.writeFileSync(path.join(dir, file), text, { mode });
}

function launcher(version, out) {
  const here = path.join(__dirname, "mcp-budget");
  const optionalDependencies = {};
  for (const [os, cpu] of PLATFORMS) {
    optionalDependencies[`mcp-budget-${os}-${cpu}`] = version;
  }
  const pkg = {
    name: "mcp-budget",
    version,
    description: "Keep every MCP tool response inside a token budget without losing anything.",
    keywords: ["mcp", "model-context-protocol", "proxy", "tokens"],
    ...common,
    bin: { "mcp-budget": "bin/mcp-budget.js" },
    files: ["bin/mcp-budget.js", "install.js", "README.md"],
    scripts: { postinstall: "node install.js" },
    engines: { node: ">=18" },
    optionalDependencies,
  };
  write(out, "package.json", JSON.stringify(pkg, null, 2) + "\n");
  write(out, "bin/mcp-budget.js", fs.readFileSync(path.join(here, "bin/mcp-budget.js")), 0o755);
  write(out, "install.js", fs.readFileSync(path.join(here, "install.js")));
  write(out, "README.md", fs.readFileSync(path.join(here, "README.md")));
}

function platform(version, os, cpu, binary, out) {
  if (!PLATFORMS.some(([o, c]) => o === os && c === cpu)) {
    throw new Error(`unknown platform ${os}-${cpu}`);
  }
  const name = `mcp-budget-${os}-${cpu}`;
  const exe = os === "win32" ? "mcp-budget.exe" : "mcp-budget";
  const pkg = {
    name,
    version,
    description: `The mcp-budget binary for ${os}-${cpu} (installed by the mcp-budget package).`,
    ...common,
    os: [os],
    cpu: [cpu],
    // The Linux binaries link glibc (manylinux builds); npm >= 10 skips them on musl.
    ...(os === "linux" ? { libc: ["glibc"] } : {}),
    files: [`bin/${exe}`],
  };
  write(out, "package.json", JSON.stringify(pkg, null, 2) + "\n");
  write(out, `bin/${exe}`, fs.readFileSync(binary), 0o755);
  write(out, "README.md", `# ${name}\n\nThe \`mcp-budget\` binary for ${os}-${cpu}. Install \`mcp-budget\` instead.\n`);
}

const [what, version, ...rest] = process.argv.slice(2);
if (what === "launcher" && rest.length === 1) {
  launcher(version, rest[0]);
} else if (what === "platform" && rest.length === 4) {
  platform(version, ...rest);
} else {
  process.stderr.write("usage: stage.js launcher <version> <out> | platform <version> <os> <cpu> <binary> <out>\n");
  process.exit(2);
}
