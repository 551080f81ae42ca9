#!/usr/bin/env bash
# Builds the packages of the `mcp-budget` binary from the working tree into target/package/:
#   mcp_budget-<version>-py3-none-manylinux_<glibc>_x86_64.whl   PyPI (maturin, bindings = "bin")
#   mcp-budget-<version>.tgz                                     npm launcher (bin/mcp-budget.js)
#   mcp-budget-linux-x64-<version>.tgz                           npm platform package (the binary)
# for this machine's platform (linux x64 here; .github/workflows/release.yml builds the others).
# The release binary is built once; maturin finds it up to date and packs it. The version is
# Cargo's (the workspace version), the one source of truth. Nothing is published.
# maturin comes from PyPI, pinned in tests/packaging/requirements.txt (target/packaging-tools).
#   scripts/package.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="$root/target/package"
tools="${PACKAGING_TOOLS:-$root/target/packaging-tools}"
reqs="$root/tests/packaging/requirements.txt"

stamp="$tools/.installed-$(sha256sum < "$reqs" | cut -c1-16)"
if [ ! -e "$stamp" ]; then
  echo "package: installing maturin and uv into $tools" >&2
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check -r "$reqs"
  touch "$stamp"
fi

version="$(cargo metadata --format-version 1 --no-deps --locked \
  | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "mcp-budget"))')"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) os=linux cpu=x64 ;;
  Linux-aarch64) os=linux cpu=arm64 ;;
  Darwin-x86_64) os=darwin cpu=x64 ;;
  Darwin-arm64) os=darwin cpu=arm64 ;;
  *) echo "package: no npm platform package for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac

# The binary: the release profile strips it (Cargo.toml). It is self-contained: the jq worker
# is its own hidden `jq-worker` subcommand (mcp-budget-jq-worker is for the proxy crate's tests).
cargo build --release --locked -p mcp-budget
binary="$root/target/release/mcp-budget"

rm -rf "$out"
mkdir -p "$out"
# The wheel. Its platform tag is what the binary needs: maturin reads the glibc symbol versions
# it links (Debian 12 here: manylinux_2_34, i.e. glibc >= 2.34) and refuses a tag it would break.
"$tools/bin/maturin" build --release --locked --quiet -m crates/cli/Cargo.toml --out "$out" >&2

# The npm packages, staged under target/package/npm and packed into target/package.
node packaging/npm/stage.js launcher "$version" "$out/npm/mcp-budget"
node packaging/npm/stage.js platform "$version" "$os" "$cpu" "$binary" "$out/npm/mcp-budget-$os-$cpu"
for pkg in mcp-budget "mcp-budget-$os-$cpu"; do
  (cd "$out" && npm pack --silent --pack-destination "$out" "./npm/$pkg" >/dev/null)
done
rm -rf "$out/npm"

echo "package: mcp-budget $version in $out" >&2
ls -l "$out" >&2
